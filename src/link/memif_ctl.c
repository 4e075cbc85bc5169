/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link's control channel: the Unix socket, the handshake with its file descriptors, the shared regions, down and up again. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../base/debug.h"
#include "memif_internal.h"

/*
 * Everything here runs on the link's thread, from hp__memif_service(),
 * which the data path calls when the link's epoll descriptor may have
 * something: the listener (server), the control socket, a timer (the
 * client's retries, the handshake's deadline) and the receive eventfds.
 * Nothing blocks: sockets are non-blocking, and a peer that stops in the
 * middle of its handshake is dropped at the deadline.
 *
 * What a peer sends is checked before use: the messages by the pure state
 * machine (memif_proto.c); a region's descriptor must be a regular file at
 * least as large as announced and sealed against shrinking (else the
 * client could truncate it under our mapping and crash us with SIGBUS);
 * a ring's descriptor must be an eventfd, made non-blocking. Every
 * descriptor received that we do not keep is closed at once.
 */

enum { TAG_LISTEN = 1, TAG_CTL = 2, TAG_TIMER = 3, TAG_IRQ = 16 };

#define MAX_RX_FDS 4

uint64_t hp__memif_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void ep_add(struct memif_link *m, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        hp__log(HP_LOG_WARN, "memif", "%s: epoll_ctl: %s", m->what, hp_strerror(-errno));
}

static void ep_del(struct memif_link *m, int fd)
{
    if (fd >= 0)
        (void)epoll_ctl(m->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* The timer fires once, after ms milliseconds (0: disarmed). */
static void timer_set(struct memif_link *m, uint64_t ms)
{
    struct itimerspec it = {{0, 0}, {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000}};
    if (ms == 0)
        it.it_value.tv_nsec = 0;
    (void)timerfd_settime(m->timer_fd, 0, &it, NULL);
}

/* ---- messages ------------------------------------------------------------ */

static int ctl_send(struct memif_link *m, const uint8_t msg[HP__MEMIF_MSG_SIZE], int fd)
{
    struct iovec iov = {(void *)msg, HP__MEMIF_MSG_SIZE};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t r;
    do
        r = sendmsg(m->ctl_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    return r == HP__MEMIF_MSG_SIZE ? 0 : -(r < 0 ? errno : EIO);
}

static int send_simple(struct memif_link *m, int sock, uint16_t type, const char *text)
{
    struct hp__memif_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.type = type;
    if (type == HP__MEMIF_MSG_DISCONNECT)
        snprintf(msg.u.disconnect.reason, sizeof msg.u.disconnect.reason, "%s", text);
    else if (type == HP__MEMIF_MSG_CONNECTED || type == HP__MEMIF_MSG_CONNECT)
        snprintf(msg.u.connect.if_name, sizeof msg.u.connect.if_name, "%s", text);
    uint8_t buf[HP__MEMIF_MSG_SIZE];
    hp__memif_msg_encode(&msg, buf);
    int saved = m->ctl_fd;
    m->ctl_fd = sock;
    int rc = ctl_send(m, buf, -1);
    m->ctl_fd = saved;
    return rc;
}

static void app_name(char *out, size_t len)
{
    snprintf(out, len, "hotpath %s", HP_VERSION_STRING);
}

/*
 * Receive one message: 1 (with *fd the descriptor that came with it, or
 * -1), 0 (nothing waiting), -ECONNRESET (the peer closed or the socket
 * failed), -EBADMSG (truncated, or more than one descriptor: those were
 * closed).
 */
static int ctl_recv(int sock, uint8_t buf[HP__MEMIF_MSG_SIZE], size_t *len, int *fd)
{
    union {
        char buf[CMSG_SPACE(MAX_RX_FDS * sizeof(int)) + CMSG_SPACE(sizeof(struct ucred))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {buf, HP__MEMIF_MSG_SIZE};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf};
    *fd = -1;
    ssize_t r;
    do
        r = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -ECONNRESET;
    if (r == 0)
        return -ECONNRESET;
    int nfd = 0, bad = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < n; k++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + k * sizeof(int), sizeof f);
            if (nfd++ == 0)
                *fd = f;
            else
                close(f);
        }
    }
    *len = (size_t)r;
    if (bad || nfd > 1) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return -EBADMSG;
    }
    return 1;
}

/* ---- going down ------------------------------------------------------- */

static void unmap_regions(struct memif_link *m)
{
    for (unsigned k = 0; k < m->n_map; k++) {
        struct memif_region_map *r = &m->map[k];
        /* The zero-copy pool stays mapped: it is the link's pool. */
        if (r->base && r->base != m->pool_mem)
            munmap(r->base, r->size);
        if (r->fd >= 0 && r->fd != m->pool_fd)
            close(r->fd);
        r->base = NULL;
        r->fd = -1;
    }
    m->n_map = 0;
    m->n_reg = 0;
    memset(m->reg, 0, sizeof m->reg);
}

static void close_irqs(struct memif_link *m)
{
    for (unsigned i = 0; i < HP__MEMIF_MAX_QUEUES; i++) {
        if (m->rx[i].irq_fd >= 0)
            close(m->rx[i].irq_fd);
        if (m->tx[i].irq_fd >= 0)
            close(m->tx[i].irq_fd);
        m->rx[i].irq_fd = m->tx[i].irq_fd = -1;
    }
}

void hp__memif_down(struct memif_link *m, const char *reason, bool send_reason)
{
    bool was_up = m->up;
    if (send_reason && m->ctl_fd >= 0)
        (void)send_simple(m, m->ctl_fd, HP__MEMIF_MSG_DISCONNECT, reason);
    if (m->up)
        hp__memif_stop(m);
    close_irqs(m);
    unmap_regions(m);
    m->n_out = m->next_out = 0;
    if (m->ctl_fd >= 0) {
        ep_del(m, m->ctl_fd);
        close(m->ctl_fd);
        m->ctl_fd = -1;
    }
    m->handshake_deadline_ns = 0;
    hp__memif_hs_reset(&m->hs);
    snprintf(m->ms.reason, sizeof m->ms.reason, "%s", reason);
    if (was_up) {
        m->ms.disconnects++;
        hp__log(HP_LOG_INFO, "memif", "%s: down: %s", m->what, reason);
    }
    timer_set(m, m->server ? 0 : m->reconnect_ms);
}

/* Whether to log a refusal: a new reason always; the same again only the
 * first few times, then at powers of two of its counter, so that a peer
 * retrying the same mistake ten times a second stays a few lines. */
static bool log_now(struct memif_link *m, uint64_t count, const char *why)
{
    if (strncmp(m->last_logged, why, sizeof m->last_logged - 1) != 0) {
        size_t n = strnlen(why, sizeof m->last_logged - 1);
        memcpy(m->last_logged, why, n);
        m->last_logged[n] = '\0';
        return true;
    }
    return count <= 3 || (count & (count - 1)) == 0;
}

/* A message refused: counted, logged with what it was, the peer told. */
static void refuse_peer(struct memif_link *m, const struct hp__memif_msg *msg, const char *why)
{
    char tb[16];
    bool before_init = m->server ? m->hs.state == HP__MEMIF_HS_WAIT_INIT : false;
    uint64_t *counter = before_init ? &m->ms.refused : &m->ms.bad_msgs;
    if (!log_now(m, ++*counter, why)) {
        hp__memif_down(m, why, true);
        return;
    }
    const char *peer = m->hs.peer_name[0] ? m->hs.peer_name : "the peer";
    if (msg && msg->type == HP__MEMIF_MSG_INIT && msg->u.init.name[0])
        peer = msg->u.init.name;
    hp__log(HP_LOG_WARN, "memif", "%s: refused %s from %s: %s", m->what,
            msg ? hp__memif_msg_name(msg->type, tb) : "a message", peer, why);
    hp__memif_down(m, why, true);
}

/* ---- the server's side ------------------------------------------------- */

/* A region's descriptor: a regular file at least `size` long that cannot
 * shrink under our mapping. */
static const char *check_region_fd(int fd, uint64_t size)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return "region fd is not a file";
    if ((uint64_t)st.st_size < size)
        return "region smaller than announced";
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK))
        return "region not sealed against shrinking (F_SEAL_SHRINK)";
    return NULL;
}

/* A ring's descriptor: an eventfd (when /proc tells), made non-blocking so
 * that writing it can never stop us. */
static const char *check_irq_fd(int fd)
{
    char path[64], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0) {
        target[n] = '\0';
        if (strcmp(target, "anon_inode:[eventfd]") != 0)
            return "interrupt fd is not an eventfd";
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return "interrupt fd unusable";
    return NULL;
}

/* Keep the descriptor of an acknowledged ADD_REGION or ADD_RING. */
static const char *server_keep_fd(struct memif_link *m, const struct hp__memif_msg *msg, int fd)
{
    if (msg->type == HP__MEMIF_MSG_ADD_REGION) {
        const char *why = check_region_fd(fd, msg->u.add_region.size);
        if (why)
            return why;
        m->map[m->n_map++] = (struct memif_region_map){fd, NULL, msg->u.add_region.size};
        return NULL;
    }
    const char *why = check_irq_fd(fd);
    if (why)
        return why;
    bool c2s = msg->u.add_ring.flags & HP__MEMIF_RING_FLAG_C2S;
    /* C2S rings are what we receive, S2C what we send. */
    struct memif_queue *q = c2s ? &m->rx[msg->u.add_ring.index] : &m->tx[msg->u.add_ring.index];
    q->irq_fd = fd;
    return NULL;
}

/* CONNECT: map every region, check every ring's cookie, up. */
static const char *server_connect(struct memif_link *m)
{
    for (unsigned k = 0; k < m->n_map; k++) {
        void *p = mmap(NULL, m->map[k].size, PROT_READ | PROT_WRITE, MAP_SHARED, m->map[k].fd, 0);
        if (p == MAP_FAILED)
            return "cannot map a region";
        m->map[k].base = p;
        m->reg[k] = (struct hp__memif_region){p, m->map[k].size};
    }
    m->n_reg = m->n_map;
    const struct hp__memif_ring_def *sets[2] = {m->hs.c2s, m->hs.s2c};
    unsigned counts[2] = {m->hs.n_c2s, m->hs.n_s2c};
    for (int d = 0; d < 2; d++) {
        for (unsigned i = 0; i < counts[d]; i++) {
            const struct hp__memif_ring_def *r = &sets[d][i];
            if (hp__memif_check_ring(m->reg, m->n_reg, r->region, r->offset, r->log2) < 0)
                return "ring outside its region";
            const struct hp__memif_ring *ring =
                (const struct hp__memif_ring *)(m->reg[r->region].base + r->offset);
            if (__atomic_load_n(&ring->cookie, __ATOMIC_RELAXED) != HP__MEMIF_COOKIE)
                return "wrong ring cookie";
        }
    }
    return hp__memif_start(m) < 0 ? "out of memory" : NULL;
}

static void server_accept(struct memif_link *m)
{
    for (;;) {
        int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (m->ctl_fd >= 0) {
            /* One peer per interface: DPDK says the same to a second one. */
            if (log_now(m, ++m->ms.refused, "already connected"))
                hp__log(HP_LOG_WARN, "memif", "%s: refused a second client: already connected",
                        m->what);
            (void)send_simple(m, fd, HP__MEMIF_MSG_DISCONNECT, "Already connected");
            close(fd);
            continue;
        }
        m->ctl_fd = fd;
        ep_add(m, fd, TAG_CTL);
        hp__memif_hs_reset(&m->hs);
        struct hp__memif_msg h;
        memset(&h, 0, sizeof h);
        h.type = HP__MEMIF_MSG_HELLO;
        app_name(h.u.hello.name, sizeof h.u.hello.name);
        h.u.hello.min_version = h.u.hello.max_version = HP__MEMIF_VERSION;
        h.u.hello.max_region = HP__MEMIF_MAX_REGIONS - 1;
        h.u.hello.max_c2s_ring = h.u.hello.max_s2c_ring = (uint16_t)(m->hs.queues - 1);
        h.u.hello.max_log2_ring_size = m->hs.log2;
        uint8_t buf[HP__MEMIF_MSG_SIZE];
        hp__memif_msg_encode(&h, buf);
        if (ctl_send(m, buf, -1) < 0) {
            hp__memif_down(m, "cannot send HELLO", false);
            continue;
        }
        m->handshake_deadline_ns = hp__memif_now_ns() + (uint64_t)MEMIF_HANDSHAKE_MS * 1000000u;
        timer_set(m, MEMIF_HANDSHAKE_MS);
    }
}

/* ---- the client's side ------------------------------------------------- */

static void client_connect(struct memif_link *m)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&m->addr, m->addr_len) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        if (m->ms.reason[0] == '\0' || strncmp(m->ms.reason, "no server", 9) != 0)
            hp__log(HP_LOG_INFO, "memif", "%s: no server yet (%s): trying again every %u ms",
                    m->what, hp_strerror(-e), m->reconnect_ms);
        snprintf(m->ms.reason, sizeof m->ms.reason, "no server: %s", hp_strerror(-e));
        timer_set(m, m->reconnect_ms);
        return;
    }
    m->ctl_fd = fd;
    ep_add(m, fd, TAG_CTL);
    hp__memif_hs_reset(&m->hs);
    m->handshake_deadline_ns = hp__memif_now_ns() + (uint64_t)MEMIF_HANDSHAKE_MS * 1000000u;
    timer_set(m, MEMIF_HANDSHAKE_MS);
}

/* A sealed memfd of len bytes, mapped: its descriptor, or -1. */
static int make_region(struct memif_link *m, uint64_t len, void **base)
{
    int fd = memfd_create("hotpath-memif", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)len) < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return -1;
    }
    *base = p;
    (void)m;
    return fd;
}

/* Lay the rings out in region 0 as DPDK does (the C2S rings, then the S2C
 * rings; in copy mode the buffers after them, one per slot) and write
 * their headers and descriptors. */
static void init_rings(struct memif_link *m, unsigned char *base)
{
    unsigned log2 = m->hs.run_log2, nc = m->hs.n_c2s, ns = m->hs.n_s2c;
    uint64_t rb = hp__memif_ring_bytes(log2);
    uint32_t size = 1u << log2, bufs = (uint32_t)((nc + ns) * rb);
    for (unsigned r = 0; r < nc + ns; r++) {
        bool c2s = r < nc;
        unsigned i = c2s ? r : r - nc;
        struct hp__memif_ring_def *def = c2s ? &m->hs.c2s[i] : &m->hs.s2c[i];
        *def = (struct hp__memif_ring_def){true, 0, (uint32_t)(r * rb), (uint8_t)log2};
        struct hp__memif_ring *ring = (struct hp__memif_ring *)(base + r * rb);
        memset(ring, 0, HP__MEMIF_RING_HDR);
        ring->cookie = HP__MEMIF_COOKIE;
        struct memif_queue *q = c2s ? &m->tx[i] : &m->rx[i];
        q->buf0 = bufs + r * size * m->bsize;
        struct hp__memif_desc *d = (struct hp__memif_desc *)(ring + 1);
        for (uint32_t s = 0; s < size; s++)
            d[s] = (struct hp__memif_desc){0, 0, m->zc ? 0 : m->bsize,
                                           m->zc ? 0 : q->buf0 + s * m->bsize, 0};
    }
}

static void queue_msg(struct memif_link *m, const struct hp__memif_msg *msg, int fd)
{
    hp__memif_msg_encode(msg, m->out[m->n_out].msg);
    m->out[m->n_out++].fd = fd;
}

/* HELLO taken: make the regions, the rings and their eventfds, and queue
 * INIT, ADD_REGION..., ADD_RING..., CONNECT. NULL, or why not. */
static const char *client_setup(struct memif_link *m)
{
    unsigned nc = m->hs.n_c2s, ns = m->hs.n_s2c, log2 = m->hs.run_log2;
    uint64_t len = (nc + ns) * hp__memif_ring_bytes(log2);
    if (!m->zc)
        len += (uint64_t)(nc + ns) * (1u << log2) * m->bsize;
    if (len > UINT32_MAX)
        return "rings and buffers do not fit 4 GiB (offsets are 32 bits)";
    void *base;
    int fd = make_region(m, len, &base);
    if (fd < 0)
        return "cannot make the shared memory (memfd)";
    m->map[0] = (struct memif_region_map){fd, base, len};
    m->reg[0] = (struct hp__memif_region){base, len};
    m->n_map = m->n_reg = 1;
    if (m->zc) {
        m->map[1] = (struct memif_region_map){m->pool_fd, m->pool_mem, m->pool_len};
        m->reg[1] = (struct hp__memif_region){m->pool_mem, m->pool_len};
        m->n_map = m->n_reg = 2;
    }
    init_rings(m, base);
    struct hp__memif_msg msg;
    memset(&msg, 0, sizeof msg);
    msg.type = HP__MEMIF_MSG_INIT;
    msg.u.init.version = HP__MEMIF_VERSION;
    msg.u.init.id = m->hs.id;
    msg.u.init.mode = HP__MEMIF_MODE_ETHERNET;
    memcpy(msg.u.init.secret, m->hs.secret, HP__MEMIF_SECRET_LEN);
    app_name(msg.u.init.name, sizeof msg.u.init.name);
    m->n_out = m->next_out = 0;
    queue_msg(m, &msg, -1);
    for (unsigned k = 0; k < m->n_map; k++) {
        memset(&msg, 0, sizeof msg);
        msg.type = HP__MEMIF_MSG_ADD_REGION;
        msg.u.add_region.index = (uint16_t)k;
        msg.u.add_region.size = m->map[k].size;
        queue_msg(m, &msg, m->map[k].fd);
    }
    for (unsigned r = 0; r < nc + ns; r++) {
        bool c2s = r < nc;
        unsigned i = c2s ? r : r - nc;
        struct memif_queue *q = c2s ? &m->tx[i] : &m->rx[i];
        q->irq_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (q->irq_fd < 0)
            return "cannot make an eventfd";
        const struct hp__memif_ring_def *def = c2s ? &m->hs.c2s[i] : &m->hs.s2c[i];
        memset(&msg, 0, sizeof msg);
        msg.type = HP__MEMIF_MSG_ADD_RING;
        msg.u.add_ring.flags = c2s ? HP__MEMIF_RING_FLAG_C2S : 0;
        msg.u.add_ring.index = (uint16_t)i;
        msg.u.add_ring.region = def->region;
        msg.u.add_ring.offset = def->offset;
        msg.u.add_ring.log2_ring_size = def->log2;
        queue_msg(m, &msg, q->irq_fd);
    }
    memset(&msg, 0, sizeof msg);
    msg.type = HP__MEMIF_MSG_CONNECT;
    snprintf(msg.u.connect.if_name, sizeof msg.u.connect.if_name, "%s", m->l.name);
    queue_msg(m, &msg, -1);
    return NULL;
}

static const char *client_send_next(struct memif_link *m)
{
    if (m->next_out >= m->n_out)
        return "protocol state: nothing left to send";
    struct memif_out *o = &m->out[m->next_out++];
    return ctl_send(m, o->msg, o->fd) < 0 ? "cannot send on the control socket" : NULL;
}

/* ---- one message --------------------------------------------------------- */

static void peer_gone(struct memif_link *m, const struct hp__memif_msg *msg)
{
    char why[HP__MEMIF_REASON_LEN + 16];
    snprintf(why, sizeof why, "peer: %s",
             msg->u.disconnect.reason[0] ? msg->u.disconnect.reason : "disconnect");
    if (!m->up && log_now(m, ++m->ms.refused, why))
        hp__log(HP_LOG_WARN, "memif", "%s: the peer refused the connection: %s (%llu times)",
                m->what, msg->u.disconnect.reason, (unsigned long long)m->ms.refused);
    hp__memif_down(m, why, false);
}

/* After the state machine's verdict: what the verdict asks for, with the
 * descriptor that came with the message (kept or closed here). */
static void act(struct memif_link *m, const struct hp__memif_msg *msg, enum hp__memif_verdict v,
                int fd, const char *why)
{
    uint8_t buf[HP__MEMIF_MSG_SIZE];
    switch (v) {
    case HP__MEMIF_V_ACK:
        if (fd >= 0) {
            why = server_keep_fd(m, msg, fd);
            if (why)
                break;
            fd = -1;
        }
        hp__memif_msg_encode(&(struct hp__memif_msg){.type = HP__MEMIF_MSG_ACK}, buf);
        why = ctl_send(m, buf, -1) < 0 ? "cannot send ACK" : NULL;
        break;
    case HP__MEMIF_V_CONNECT:
        why = server_connect(m);
        if (!why && send_simple(m, m->ctl_fd, HP__MEMIF_MSG_CONNECTED, m->l.name) < 0)
            why = "cannot send CONNECTED";
        break;
    case HP__MEMIF_V_SETUP:
        why = client_setup(m);
        if (!why)
            why = client_send_next(m);
        break;
    case HP__MEMIF_V_NEXT:
        why = client_send_next(m);
        break;
    case HP__MEMIF_V_UP:
        why = hp__memif_start(m) < 0 ? "out of memory" : NULL;
        break;
    case HP__MEMIF_V_PEER_GONE:
        if (fd >= 0)
            close(fd);
        peer_gone(m, msg);
        return;
    case HP__MEMIF_V_REFUSE:
        break;
    }
    if (fd >= 0)
        close(fd);
    if (why) {
        refuse_peer(m, msg, why);
        return;
    }
    if (m->up) {
        m->handshake_deadline_ns = 0;
        timer_set(m, 0);
    }
}

static void handle_msg(struct memif_link *m, const uint8_t *buf, size_t len, int fd)
{
    struct hp__memif_msg msg;
    int rc = hp__memif_msg_decode(buf, len, &msg);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        refuse_peer(m, NULL, rc == -EBADMSG ? "invalid message size" : "unknown message type");
        return;
    }
    const char *why;
    enum hp__memif_verdict v = hp__memif_hs_step(&m->hs, &msg, fd >= 0, &why);
    act(m, &msg, v, fd, why);
}

static void read_ctl(struct memif_link *m)
{
    while (m->ctl_fd >= 0) {
        uint8_t buf[HP__MEMIF_MSG_SIZE];
        size_t len = 0;
        int fd;
        int rc = ctl_recv(m->ctl_fd, buf, &len, &fd);
        if (rc == 0)
            return;
        if (rc == -ECONNRESET) {
            /* A server that hangs up on our handshake refused us. */
            if (!m->server && !m->up)
                m->ms.refused++;
            hp__memif_down(m, "peer closed the control channel", false);
            return;
        }
        if (rc == -EBADMSG) {
            refuse_peer(m, NULL, "truncated message or extra descriptors");
            return;
        }
        handle_msg(m, buf, len, fd);
    }
}

static void on_timer(struct memif_link *m)
{
    uint64_t n;
    while (read(m->timer_fd, &n, sizeof n) > 0)
        ;
    if (m->handshake_deadline_ns && hp__memif_now_ns() >= m->handshake_deadline_ns) {
        if (log_now(m, ++m->ms.refused, "handshake timeout"))
            hp__log(HP_LOG_WARN, "memif", "%s: handshake not finished in %u ms: dropped", m->what,
                    MEMIF_HANDSHAKE_MS);
        hp__memif_down(m, "handshake timeout", true);
        return;
    }
    if (!m->server && m->ctl_fd < 0)
        client_connect(m);
}

void hp__memif_service(struct memif_link *m)
{
    struct epoll_event ev[8];
    int n = epoll_wait(m->epfd, ev, 8, 0);
    bool ctl = false, lis = false, tim = false;
    for (int i = 0; i < n; i++) {
        uint64_t tag = ev[i].data.u64;
        if (tag == TAG_CTL)
            ctl = true;
        else if (tag == TAG_LISTEN)
            lis = true;
        else if (tag == TAG_TIMER)
            tim = true;
        else if (tag >= TAG_IRQ && tag < TAG_IRQ + HP__MEMIF_MAX_QUEUES &&
                 m->rx[tag - TAG_IRQ].irq_fd >= 0) {
            uint64_t c;
            (void)!read(m->rx[tag - TAG_IRQ].irq_fd, &c, sizeof c);
        }
    }
    /* The channel first: a peer that died is noticed before its successor
     * knocks at the listener. */
    if (ctl)
        read_ctl(m);
    if (lis)
        server_accept(m);
    if (tim)
        on_timer(m);
    m->next_service_ns = hp__memif_now_ns() + MEMIF_SERVICE_NS;
}

/* ---- opening and closing ------------------------------------------------- */

static int socket_addr(struct memif_link *m, const char *path)
{
    size_t max = sizeof m->addr.sun_path;
    memset(&m->addr, 0, sizeof m->addr);
    m->addr.sun_family = AF_UNIX;
    m->abstract = path[0] == '@';
    const char *name = m->abstract ? path + 1 : path;
    size_t n = strlen(name);
    if (n == 0 || n + 1 > max)
        return hp__link_fail(EINVAL, "memif: socket '%s': empty or longer than %zu bytes", path,
                             max - 2);
    /* Abstract: a NUL, then the name, the length counting exactly that
     * (as DPDK's socket-abstract=yes and libmemif do). */
    memcpy(m->addr.sun_path + (m->abstract ? 1 : 0), name, n);
    m->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    snprintf(m->sock_name, sizeof m->sock_name, "%s", path);
    return 0;
}

/* Bind, replacing a stale socket file (one that refuses connections). */
static int server_listen(struct memif_link *m)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return hp__link_fail(errno, "%s: socket: %s", m->what, hp_strerror(-errno));
        if (bind(fd, (struct sockaddr *)&m->addr, m->addr_len) == 0 && listen(fd, 8) == 0) {
            m->listen_fd = fd;
            ep_add(m, fd, TAG_LISTEN);
            return 0;
        }
        int e = errno;
        close(fd);
        if (e != EADDRINUSE || m->abstract || attempt > 0)
            return hp__link_fail(e, "%s: cannot listen: %s%s", m->what, hp_strerror(-e),
                                 e == EADDRINUSE ? " (another server listens there)" : "");
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        bool live = probe >= 0 && connect(probe, (struct sockaddr *)&m->addr, m->addr_len) == 0;
        if (probe >= 0)
            close(probe);
        if (live)
            return hp__link_fail(EADDRINUSE, "%s: another server listens there", m->what);
        struct stat st;
        if (lstat(m->sock_name, &st) == 0 && S_ISSOCK(st.st_mode))
            unlink(m->sock_name);
    }
    return hp__link_fail(EADDRINUSE, "%s: cannot listen", m->what);
}

int hp__memif_ctl_open(struct memif_link *m, const struct hp_link_config *cfg)
{
    const struct hp_memif_config *mc = &cfg->memif;
    int rc = socket_addr(m, mc->socket ? mc->socket : MEMIF_DEFAULT_SOCKET);
    if (rc < 0)
        return rc;
    snprintf(m->what, sizeof m->what, "memif %s %.40s id %u", m->server ? "server" : "client",
             m->sock_name, mc->id);
    m->epfd = epoll_create1(EPOLL_CLOEXEC);
    m->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (m->epfd < 0 || m->timer_fd < 0)
        return hp__link_fail(errno, "%s: epoll or timerfd: %s", m->what, hp_strerror(-errno));
    ep_add(m, m->timer_fd, TAG_TIMER);
    m->l.fd = m->epfd;
    hp__memif_hs_reset(&m->hs);
    if (m->server)
        return server_listen(m);
    client_connect(m);
    return 0;
}

void hp__memif_ctl_close(struct memif_link *m)
{
    if (m->ctl_fd >= 0 || m->up)
        hp__memif_down(m, "interface closed", true);
    close_irqs(m);
    unmap_regions(m);
    if (m->listen_fd >= 0) {
        close(m->listen_fd);
        /* Our socket file goes with us, so that the next server binds. */
        if (!m->abstract)
            unlink(m->sock_name);
    }
    if (m->timer_fd >= 0)
        close(m->timer_fd);
    if (m->epfd >= 0)
        close(m->epfd);
    m->listen_fd = m->timer_fd = m->epfd = m->l.fd = -1;
}

void hp__memif_watch_irqs(struct memif_link *m, bool on)
{
    for (unsigned i = 0; i < m->n_rx; i++) {
        if (m->rx[i].irq_fd < 0)
            continue;
        if (on)
            ep_add(m, m->rx[i].irq_fd, TAG_IRQ + i);
        else
            ep_del(m, m->rx[i].irq_fd);
    }
}
