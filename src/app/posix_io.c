/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's I/O calls: recvmsg and sendmsg (read, write, recv, send, their v, from, to and mmsg forms go through them), UDP connect, sendfile; blocking, timeouts, MSG_* flags, SIGPIPE as in Linux. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/buf.h>

#include "posix_internal.h"

/* ---- iovecs -------------------------------------------------------------------- */

/* A position in an iovec array. */
struct px_iter {
    const struct iovec *iov;
    int n, i;
    size_t off;
};

static size_t iov_total(const struct iovec *iov, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

/* The next contiguous piece (len 0 at the end). */
static void *iter_piece(struct px_iter *it, size_t *len)
{
    while (it->i < it->n && it->off == it->iov[it->i].iov_len) {
        it->i++;
        it->off = 0;
    }
    if (it->i == it->n) {
        *len = 0;
        return NULL;
    }
    *len = it->iov[it->i].iov_len - it->off;
    return (char *)it->iov[it->i].iov_base + it->off;
}

static void iter_advance(struct px_iter *it, size_t n)
{
    it->off += n;
}

/* Copy [off, off + len) of a buffer chain into the iterator. */
static void copy_chain(const struct hp_buf *b, uint32_t off, size_t len, struct px_iter *it)
{
    while (len) {
        size_t piece;
        void *p = iter_piece(it, &piece);
        if (!p)
            return;
        if (piece > len)
            piece = len;
        hp_buf_copy_out(b, off, (uint32_t)piece, p);
        iter_advance(it, piece);
        off += (uint32_t)piece;
        len -= piece;
    }
}

/* ---- waiting conditions ------------------------------------------------------------ */

static bool readable(void *arg)
{
    struct px_sock *ps = arg;
    if (ps->dead || ps->peek || ps->shut_rd || ps->err)
        return true;
    if (ps->proto == PX_UDP)
        return (hp_udp_poll(ps->u) | hp_udp_poll(ps->u4)) & HP_EV_IN;
    return hp_tcp_poll(ps->t) & (HP_EV_IN | HP_EV_ERR | HP_EV_HUP);
}

static bool writable(void *arg)
{
    struct px_sock *ps = arg;
    if (ps->dead || ps->proto == PX_UDP)
        return true;
    enum hp_tcp_state st = hp_tcp_state(ps->t);
    if (st == HP_TCP_SYN_SENT || st == HP_TCP_SYN_RECEIVED)
        return false;
    return hp_tcp_poll(ps->t) & (HP_EV_OUT | HP_EV_ERR | HP_EV_HUP);
}

/*
 * Block on cond for a call of ps: the socket's timeout (SO_RCVTIMEO for
 * receiving, SO_SNDTIMEO for sending), signals as Linux treats them: a
 * socket call interrupted by a handler restarts with SA_RESTART unless a
 * timeout is set (signal(7)). @return 1 (go on), -EAGAIN (timed out),
 * -EINTR, -EBADFD (the socket died meanwhile).
 */
static int block(struct px_sock *ps, bool (*cond)(void *), int64_t timeo_ns, uint64_t *deadline)
{
    if (timeo_ns && !*deadline)
        *deadline = hp__px_deadline_ns(timeo_ns);
    for (;;) {
        int w = hp__px_wait(cond, ps, NULL, 0, *deadline, NULL, true);
        if (ps->dead)
            return -PX_DEAD_ERRNO;
        if (w == 0)
            return -EAGAIN;
        if (w != -EINTR)
            return 1;
        if (timeo_ns || !hp__px_signal_restarts())
            return -EINTR;
        hp__px_run_deferred_in_call();
        if (ps->dead)
            return -PX_DEAD_ERRNO;
    }
}

/* A non-blocking call that found nothing need not poll the stack: when an
 * epoll set watches the socket (the program waits for its readiness there,
 * and that wait polls), or when the stack was polled a call or two ago. */
static bool fresh_enough(const struct px_sock *ps)
{
    return ps->epis || hp__px_drove_recently();
}

/* ---- TCP ------------------------------------------------------------------------ */

/* MSG_PEEK: take buffers from the stack into ps->peek until it holds want
 * bytes past peek_off (or nothing more is there). */
static long tcp_peek_fill(struct px_sock *ps, size_t want)
{
    for (;;) {
        size_t have = ps->peek ? ps->peek->pkt_len - ps->peek_off : 0;
        if (have >= want)
            return (long)have;
        struct hp_buf *b;
        long r = hp_tcp_recv_buf(ps->t, &b);
        if (r <= 0)
            return have ? (long)have : r;
        if (!ps->peek) {
            ps->peek = b;
        } else if (hp_buf_chain(ps->peek, b) < 0) {
            hp_buf_free(b); /* cannot happen below 65535 segments; never lose silently */
            return -ENOMEM;
        }
    }
}

/* Bytes from ps->peek into it; consumed unless peeking. */
static size_t tcp_from_peek(struct px_sock *ps, struct px_iter *it, size_t want, bool peek)
{
    if (!ps->peek)
        return 0;
    size_t have = ps->peek->pkt_len - ps->peek_off;
    size_t n = have < want ? have : want;
    copy_chain(ps->peek, ps->peek_off, n, it);
    if (!peek) {
        ps->peek_off += (uint32_t)n;
        if (ps->peek_off == ps->peek->pkt_len) {
            hp_buf_free(ps->peek);
            ps->peek = NULL;
            ps->peek_off = 0;
        }
    }
    return n;
}

/* One attempt: bytes (> 0), 0 at the end of the stream, or -errno. */
static long tcp_try_recv(struct px_sock *ps, struct px_iter *it, size_t want, int flags)
{
    if (flags & MSG_PEEK) {
        long r = tcp_peek_fill(ps, want);
        if (r <= 0)
            return r;
        return (long)tcp_from_peek(ps, it, want, true);
    }
    if (!ps->peek && it->n - it->i == 1) {
        /* One piece (read, recv, a one-element readv) and nothing peeked:
         * straight into it, without the walk below (a 64-byte read's
         * layer cost was as much again as the stack's). */
        long r = hp_tcp_recv(ps->t, (char *)it->iov[it->i].iov_base + it->off, want);
        if (r > 0)
            iter_advance(it, (size_t)r);
        return r;
    }
    size_t got = tcp_from_peek(ps, it, want, false);
    while (got < want) {
        size_t piece;
        void *p = iter_piece(it, &piece);
        if (piece > want - got)
            piece = want - got;
        long r = hp_tcp_recv(ps->t, p, piece);
        if (r <= 0)
            return got ? (long)got : r;
        iter_advance(it, (size_t)r);
        got += (size_t)r;
        if ((size_t)r < piece)
            break;
    }
    return (long)got;
}

static ssize_t tcp_recvmsg(struct px_sock *ps, struct msghdr *msg, int flags)
{
    if (flags & MSG_OOB)
        return -EINVAL; /* no urgent data, ever (RFC 6093: it arrives inline) */
    if (!ps->t || ps->listening || !ps->tried)
        return -ENOTCONN;
    if (msg->msg_name)
        msg->msg_namelen = 0;
    struct px_iter it = {.iov = msg->msg_iov, .n = (int)msg->msg_iovlen};
    size_t want = iov_total(msg->msg_iov, (int)msg->msg_iovlen), got = 0;
    bool nonblock = ps->nonblock || (flags & MSG_DONTWAIT);
    uint64_t deadline = 0;
    for (int tries = 0; want > 0;) {
        long r = hp_tcp_state(ps->t) == HP_TCP_SYN_SENT ? -EAGAIN
                                                        : tcp_try_recv(ps, &it, want - got, flags);
        if (r > 0) {
            got += (size_t)r;
            if (!(flags & MSG_WAITALL) || (flags & MSG_PEEK) || got == want)
                break;
            continue;
        }
        if (r == 0 || (r != -EAGAIN && got))
            break;
        if (r != -EAGAIN)
            return r;
        if (tries++ == 0 && !(nonblock && fresh_enough(ps))) {
            hp__px_drive(); /* what arrived since the last poll */
            continue;
        }
        if (nonblock)
            return got ? (ssize_t)got : -EAGAIN;
        int b = block(ps, readable, ps->opt.rcvtimeo_ns, &deadline);
        if (b < 0)
            return got ? (ssize_t)got : b;
    }
    msg->msg_controllen = 0;
    msg->msg_flags = 0;
    return (ssize_t)got;
}

/* A pending error, reported once (Linux's sk_err). */
static int take_error(struct px_sock *ps)
{
    int e = ps->err;
    ps->err = 0;
    return e;
}

#define SEND_GATHER 16 /* pieces handed to hp_tcp_sendv at once */

/* One attempt: bytes taken (>= 0) or -errno. The pieces go to the stack
 * together (hp_tcp_sendv), so that a header and a body written by one
 * writev share a segment, as on Linux. */
static long tcp_try_send(struct px_sock *ps, struct px_iter *it, size_t left)
{
    if (it->n - it->i == 1) {
        /* One piece left (write, send, a one-element writev): no gather. */
        long r = hp_tcp_send(ps->t, (const char *)it->iov[it->i].iov_base + it->off, left);
        if (r > 0)
            iter_advance(it, (size_t)r);
        return r;
    }
    size_t sent = 0;
    while (sent < left) {
        struct iovec v[SEND_GATHER];
        struct px_iter at = *it;
        int n = 0;
        size_t batch = 0;
        while (n < SEND_GATHER && sent + batch < left) {
            size_t piece;
            void *p = iter_piece(&at, &piece);
            if (!p)
                break;
            if (piece > left - sent - batch)
                piece = left - sent - batch;
            v[n++] = (struct iovec){.iov_base = p, .iov_len = piece};
            iter_advance(&at, piece);
            batch += piece;
        }
        if (n == 0)
            break;
        long r = hp_tcp_sendv(ps->t, v, n);
        if (r < 0)
            return sent ? (long)sent : r;
        for (size_t k = (size_t)r; k > 0;) { /* advance it by what was taken */
            size_t piece;
            (void)iter_piece(it, &piece);
            size_t step = piece < k ? piece : k;
            iter_advance(it, step);
            k -= step;
        }
        sent += (size_t)r;
        if ((size_t)r < batch)
            break;
    }
    return (long)sent;
}

static ssize_t tcp_sendmsg(struct px_sock *ps, const struct msghdr *msg, int flags, bool *sigpipe)
{
    if (flags & MSG_OOB)
        return -EOPNOTSUPP;
    int e = take_error(ps);
    if (e)
        return -e;
    enum hp_tcp_state st = hp_tcp_state(ps->t);
    if (!ps->t || ps->listening || ps->shut_wr || (st == HP_TCP_CLOSED && !ps->tried)) {
        *sigpipe = !(flags & MSG_NOSIGNAL);
        return -EPIPE;
    }
    struct px_iter it = {.iov = msg->msg_iov, .n = (int)msg->msg_iovlen};
    size_t want = iov_total(msg->msg_iov, (int)msg->msg_iovlen), sent = 0;
    bool nonblock = ps->nonblock || (flags & MSG_DONTWAIT);
    uint64_t deadline = 0;
    long r = 0;
    while (sent < want) {
        st = hp_tcp_state(ps->t);
        /* Linux sends nothing before the handshake ends. */
        r = st == HP_TCP_SYN_SENT || st == HP_TCP_SYN_RECEIVED ? -EAGAIN
                                                               : tcp_try_send(ps, &it, want - sent);
        if (r > 0)
            sent += (size_t)r;
        if (r < 0 && r != -EAGAIN)
            break;
        if (sent == want)
            break;
        hp__px_drive(); /* send what is queued; take in ACKs */
        if (nonblock)
            break;
        int b = block(ps, writable, ps->opt.sndtimeo_ns, &deadline);
        if (b < 0) {
            r = b;
            break;
        }
    }
    hp__px_flush();
    if (sent)
        return (ssize_t)sent;
    if (r == -ENOTCONN || r == -EPIPE) {
        *sigpipe = !(flags & MSG_NOSIGNAL);
        return -EPIPE;
    }
    return r < 0 ? r : 0;
}

/* ---- UDP ----------------------------------------------------------------------------- */

/* The next datagram: ps->peek, or one from either handle. */
static int udp_take(struct px_sock *ps, struct hp_buf **b, struct hp_sockaddr *from)
{
    if (ps->peek) {
        *b = ps->peek;
        *from = ps->peek_from;
        ps->peek = NULL;
        return (int)ps->peek_len;
    }
    int r = ps->u ? hp_udp_recv_buf(ps->u, b, from) : -EAGAIN;
    if (r == -EAGAIN && ps->u4)
        r = hp_udp_recv_buf(ps->u4, b, from);
    return r;
}

static ssize_t udp_deliver(struct px_sock *ps, struct msghdr *msg, int flags, struct hp_buf *b,
                           int len, const struct hp_sockaddr *from)
{
    size_t cap = iov_total(msg->msg_iov, (int)msg->msg_iovlen);
    size_t n = (size_t)len < cap ? (size_t)len : cap;
    struct px_iter it = {.iov = msg->msg_iov, .n = (int)msg->msg_iovlen};
    copy_chain(b, 0, n, &it);
    if (msg->msg_name)
        hp__px_addr_out(ps->domain, from, msg->msg_name, &msg->msg_namelen);
    msg->msg_controllen = 0;
    msg->msg_flags = (size_t)len > cap ? MSG_TRUNC : 0;
    if (flags & MSG_PEEK) {
        ps->peek = b;
        ps->peek_len = (uint32_t)len;
        ps->peek_from = *from;
    } else {
        hp_buf_free(b);
    }
    return (flags & MSG_TRUNC) ? len : (ssize_t)n;
}

static ssize_t udp_recvmsg(struct px_sock *ps, struct msghdr *msg, int flags)
{
    if (flags & MSG_OOB)
        return -EOPNOTSUPP;
    if (flags & MSG_ERRQUEUE)
        return -EAGAIN; /* nothing is ever queued there */
    int e = take_error(ps);
    if (e)
        return -e;
    bool nonblock = ps->nonblock || (flags & MSG_DONTWAIT);
    uint64_t deadline = 0;
    for (int tries = 0;;) {
        struct hp_buf *b;
        struct hp_sockaddr from;
        int r = udp_take(ps, &b, &from);
        if (r >= 0)
            return udp_deliver(ps, msg, flags, b, r, &from);
        if (ps->shut_rd)
            return 0;
        if (tries++ == 0 && !(nonblock && fresh_enough(ps))) {
            hp__px_drive();
            continue;
        }
        if (nonblock)
            return -EAGAIN;
        int w = block(ps, readable, ps->opt.rcvtimeo_ns, &deadline);
        if (w < 0)
            return w;
    }
}

/* The datagram's bytes in one piece: the iovec itself or a copy in *tmp. */
static const void *gather(const struct msghdr *msg, size_t len, void **tmp)
{
    *tmp = NULL;
    if (msg->msg_iovlen == 1 || len == 0)
        return msg->msg_iovlen ? msg->msg_iov[0].iov_base : "";
    char *p = malloc(len);
    if (!p)
        return NULL;
    size_t at = 0;
    for (size_t i = 0; i < msg->msg_iovlen; i++) {
        memcpy(p + at, msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len);
        at += msg->msg_iov[i].iov_len;
    }
    *tmp = p;
    return p;
}

/* The handle that sends to family f. */
static struct hp_udp_sock *udp_handle(struct px_sock *ps, int f)
{
    if (ps->hfamily == f)
        return ps->u;
    return f == 4 ? ps->u4 : NULL;
}

static int udp_send_once(struct px_sock *ps, const void *p, size_t len,
                         const struct hp_sockaddr *to)
{
    int f = to ? to->family : ps->remote.family;
    int rc = hp__px_autobind(ps, f);
    if (rc < 0)
        return rc;
    struct hp_udp_sock *u = udp_handle(ps, f);
    if (!u)
        return ps->domain == 6 ? -ENETUNREACH : -EAFNOSUPPORT;
    struct hp_sockaddr dst;
    if (to)
        dst = *to;
    rc = hp_udp_sendto(u, p, len, to ? &dst : NULL);
    return rc == -EHOSTUNREACH ? -ENETUNREACH : rc;
}

static ssize_t udp_sendmsg(struct px_sock *ps, const struct msghdr *msg, int flags, bool *sigpipe)
{
    if (flags & MSG_OOB)
        return -EOPNOTSUPP;
    struct hp_sockaddr to;
    bool has_to = msg->msg_name && msg->msg_namelen;
    if (has_to) {
        int rc = hp__px_addr_in(ps->domain, msg->msg_name, msg->msg_namelen, &to);
        if (rc < 0)
            return rc;
    } else if (!ps->udp_connected) {
        return -EDESTADDRREQ;
    }
    if (ps->shut_wr) {
        *sigpipe = !(flags & MSG_NOSIGNAL);
        return -EPIPE;
    }
    int e = take_error(ps);
    if (e)
        return -e;
    size_t len = iov_total(msg->msg_iov, (int)msg->msg_iovlen);
    void *tmp;
    const void *p = gather(msg, len, &tmp);
    if (!p)
        return -ENOBUFS;
    int rc;
    for (int tries = 0;; tries++) {
        rc = udp_send_once(ps, p, len, has_to ? &to : NULL);
        if (rc != -EAGAIN || tries == 8 || ps->nonblock || (flags & MSG_DONTWAIT))
            break;
        hp__px_drive(); /* buffers come back as frames leave */
    }
    free(tmp);
    hp__px_flush();
    return rc == -EAGAIN && !(ps->nonblock || (flags & MSG_DONTWAIT)) ? -ENOBUFS : rc;
}

int hp__px_udp_connect(struct px_sock *ps, const struct hp_sockaddr *r)
{
    int rc = hp__px_autobind(ps, r->family);
    if (rc < 0)
        return rc;
    if (r->family == 4 && ps->hfamily == 6) {
        /* A dual-stack socket talking IPv4 from now on. */
        if (!ps->u4)
            return -ENETUNREACH;
        hp_udp_close(ps->u);
        ps->u = ps->u4;
        ps->u4 = NULL;
        ps->hfamily = 4;
    } else if (ps->u4 && r->family == 6) {
        hp_udp_close(ps->u4);
        ps->u4 = NULL;
    }
    if (ps->hfamily != r->family)
        return ps->domain == 6 ? -ENETUNREACH : -EAFNOSUPPORT;
    struct hp_sockaddr rr = *r;
    rc = hp_udp_connect(ps->u, &rr);
    if (rc == 0) {
        ps->udp_connected = true;
        ps->remote = *r;
        hp_udp_local(ps->u, &ps->local);
    }
    return rc == -EHOSTUNREACH ? -ENETUNREACH : rc;
}

int hp__px_udp_disconnect(struct px_sock *ps)
{
    /* hotpath's UDP cannot forget a peer: a new handle, on the port the
     * program bound (Linux keeps an explicit bind, drops an automatic one). */
    struct hp_sockaddr keep = ps->local;
    bool was_bound = ps->bound;
    if (ps->peek)
        hp_buf_free(ps->peek);
    ps->peek = NULL;
    hp__px_close_handles(ps, false);
    ps->udp_connected = false;
    ps->bound = false;
    return was_bound ? hp__px_rebind(ps, &keep) : 0;
}

int hp__px_readable_bytes(struct px_sock *ps)
{
    if (ps->proto == PX_UDP) {
        if (!ps->peek) {
            struct hp_buf *b;
            struct hp_sockaddr from;
            int r = udp_take(ps, &b, &from);
            if (r < 0)
                return 0;
            ps->peek = b;
            ps->peek_len = (uint32_t)r;
            ps->peek_from = from;
        }
        return (int)ps->peek_len;
    }
    struct hp_tcp_info ti = {0};
    if (ps->t)
        hp_tcp_get_info(ps->t, &ti);
    long n = (long)ti.rcvq + (ps->peek ? (long)(ps->peek->pkt_len - ps->peek_off) : 0);
    return n > 0x7fffffff ? 0x7fffffff : (int)n;
}

/* ---- the calls ---------------------------------------------------------------------- */

ssize_t hp__px_recvmsg(int fd, struct msghdr *msg, int flags)
{
    hp__px_lock();
    struct px_sock *ps;
    ssize_t rc = hp__px_enter(fd, &ps);
    if (rc == 0 && !msg)
        rc = -EFAULT;
    if (rc == 0) {
        hp__px_ref(&ps->o);
        rc = ps->proto == PX_TCP ? tcp_recvmsg(ps, msg, flags) : udp_recvmsg(ps, msg, flags);
        hp__px_unref(&ps->o);
    }
    hp__px_unlock();
    return rc;
}

/* hp__px_recv's and hp__px_send's other ways, out of line: the message
 * header is built only here. ps: entered, or NULL for hp__px_recvmsg /
 * hp__px_sendmsg (flags the direct way does not take). */
static __attribute__((noinline)) ssize_t recv_general(int fd, struct px_sock *ps, void *buf,
                                                      size_t len, int flags)
{
    struct iovec v = {buf, len};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    if (!ps)
        return hp__px_recvmsg(fd, &m, flags);
    hp__px_ref(&ps->o);
    ssize_t rc = ps->proto == PX_TCP ? tcp_recvmsg(ps, &m, flags) : udp_recvmsg(ps, &m, flags);
    hp__px_unref(&ps->o);
    return rc;
}

/* read(2), and recv(2) / recvfrom(2) without an address: a connected TCP
 * socket's bytes (or its end, or its error) go straight from the stack to
 * buf, and so does EAGAIN when tcp_recvmsg would say it at once (a
 * non-blocking socket whose state is fresh); anything else takes
 * hp__px_recvmsg's way (drive the stack, or block). The echo of `hotpath
 * bench apps` spends two reads per request: the general path's walk cost
 * about as much again as the stack's part of a 64-byte read. */
ssize_t hp__px_recv(int fd, void *buf, size_t len, int flags)
{
    if (flags & ~MSG_DONTWAIT)
        return recv_general(fd, NULL, buf, len, flags);
    hp__px_lock();
    struct px_sock *ps;
    ssize_t rc = hp__px_enter(fd, &ps);
    if (rc == 0) {
        bool direct = ps->proto == PX_TCP && ps->t && !ps->listening && ps->tried && !ps->peek &&
                      len && hp_tcp_state(ps->t) != HP_TCP_SYN_SENT;
        long r = direct ? hp_tcp_recv(ps->t, buf, len) : -EAGAIN; /* tcp_try_recv's one piece */
        if (direct && r != -EAGAIN)
            rc = r;
        else if (direct && (ps->nonblock || (flags & MSG_DONTWAIT)) && fresh_enough(ps))
            rc = -EAGAIN; /* tcp_recvmsg's first try, non-blocking, the stack fresh */
        else
            rc = recv_general(fd, ps, buf, len, flags);
    }
    hp__px_unlock();
    return rc;
}

ssize_t hp__px_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    hp__px_lock();
    struct px_sock *ps;
    ssize_t rc = hp__px_enter(fd, &ps);
    bool sigpipe = false;
    if (rc == 0 && !msg)
        rc = -EFAULT;
    if (rc == 0) {
        hp__px_ref(&ps->o);
        rc = ps->proto == PX_TCP ? tcp_sendmsg(ps, msg, flags, &sigpipe)
                                 : udp_sendmsg(ps, msg, flags, &sigpipe);
        hp__px_unref(&ps->o);
    }
    hp__px_unlock();
    /* After the lock: the program's handler may call into the layer. */
    if (sigpipe)
        pthread_kill(pthread_self(), SIGPIPE);
    return rc;
}

static __attribute__((noinline)) ssize_t send_general(int fd, struct px_sock *ps, const void *buf,
                                                      size_t len, int flags, bool *sigpipe)
{
    struct iovec v = {(void *)buf, len};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    if (!ps)
        return hp__px_sendmsg(fd, &m, flags);
    hp__px_ref(&ps->o);
    ssize_t rc = ps->proto == PX_TCP ? tcp_sendmsg(ps, &m, flags, sigpipe)
                                     : udp_sendmsg(ps, &m, flags, sigpipe);
    hp__px_unref(&ps->o);
    return rc;
}

/* write(2), and send(2) / sendto(2) without an address: on an established
 * TCP socket with no error to report, the bytes go straight to the stack;
 * what it does not take, and anything else, goes tcp_sendmsg's way (drive
 * the stack, block, EPIPE and SIGPIPE), and the bytes taken first count
 * (no SIGPIPE then, as for any call that sent something). */
ssize_t hp__px_send(int fd, const void *buf, size_t len, int flags)
{
    bool sigpipe = false;
    if (flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL))
        return send_general(fd, NULL, buf, len, flags, &sigpipe);
    hp__px_lock();
    struct px_sock *ps;
    ssize_t rc = hp__px_enter(fd, &ps);
    if (rc == 0) {
        bool direct = false;
        if (ps->proto == PX_TCP && ps->t && !ps->listening && !ps->shut_wr && !ps->err && len) {
            enum hp_tcp_state st = hp_tcp_state(ps->t);
            direct = st == HP_TCP_ESTABLISHED || st == HP_TCP_CLOSE_WAIT;
        }
        long r = direct ? hp_tcp_send(ps->t, buf, len) : 0; /* tcp_try_send's one piece */
        if (direct && r == (long)len) {
            hp__px_flush();
            rc = r;
        } else {
            size_t head = r > 0 ? (size_t)r : 0;
            rc = send_general(fd, ps, (const char *)buf + head, len - head, flags, &sigpipe);
            if (head) {
                rc = rc > 0 ? rc + (ssize_t)head : (ssize_t)head;
                sigpipe = false;
            }
        }
    }
    hp__px_unlock();
    if (sigpipe) /* after the lock, as hp__px_sendmsg */
        pthread_kill(pthread_self(), SIGPIPE);
    return rc;
}

ssize_t hp__px_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *sa,
                        socklen_t *salen)
{
    if (!sa)
        return hp__px_recv(fd, buf, len, flags);
    struct iovec v = {buf, len};
    struct msghdr m = {.msg_name = sa,
                       .msg_namelen = sa && salen ? *salen : 0,
                       .msg_iov = &v,
                       .msg_iovlen = 1};
    ssize_t r = hp__px_recvmsg(fd, &m, flags);
    if (r >= 0 && sa && salen)
        *salen = m.msg_namelen;
    return r;
}

ssize_t hp__px_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *sa,
                      socklen_t salen)
{
    if (!sa)
        return hp__px_send(fd, buf, len, flags);
    struct iovec v = {(void *)buf, len};
    struct msghdr m = {.msg_name = (void *)sa,
                       .msg_namelen = sa ? salen : 0,
                       .msg_iov = &v,
                       .msg_iovlen = 1};
    return hp__px_sendmsg(fd, &m, flags);
}

ssize_t hp__px_readv(int fd, const struct iovec *iov, int iovcnt)
{
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return -EINVAL;
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
    return hp__px_recvmsg(fd, &m, 0);
}

ssize_t hp__px_writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (iovcnt < 0 || iovcnt > IOV_MAX)
        return -EINVAL;
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
    return hp__px_sendmsg(fd, &m, 0);
}

int hp__px_recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *timeout)
{
    (void)timeout; /* Linux checks it only between datagrams; so do we, never */
    unsigned i = 0;
    for (; i < n; i++) {
        int f = flags & ~MSG_WAITFORONE;
        if (i > 0 && (flags & MSG_WAITFORONE))
            f |= MSG_DONTWAIT;
        ssize_t r = hp__px_recvmsg(fd, &v[i].msg_hdr, f);
        if (r < 0) {
            if (i == 0)
                return (int)r;
            break;
        }
        v[i].msg_len = (unsigned)r;
    }
    return (int)i;
}

int hp__px_sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    unsigned i = 0;
    for (; i < n; i++) {
        ssize_t r = hp__px_sendmsg(fd, &v[i].msg_hdr, flags);
        if (r < 0) {
            if (i == 0)
                return (int)r;
            break;
        }
        v[i].msg_len = (unsigned)r;
    }
    return (int)i;
}

/* ---- sendfile -------------------------------------------------------------------- */

#define PX_SENDFILE_CHUNK 65536

/* Free room in ps's send buffer: what may be read from the file now. */
static long send_room(struct px_sock *ps)
{
    long sndbuf = 0;
    struct hp_tcp_info ti;
    if (hp_tcp_getopt(ps->t, HP_TCP_OPT_SNDBUF, &sndbuf) < 0 || hp_tcp_get_info(ps->t, &ti) < 0)
        return PX_SENDFILE_CHUNK;
    return sndbuf > (long)ti.sndq ? sndbuf - (long)ti.sndq : 0;
}

/* Read up to n bytes of in_fd at pos (without the lock: a file may be slow)
 * and queue what the socket takes. Bytes taken, or -errno. */
static ssize_t sendfile_chunk(struct px_sock *ps, int in_fd, off_t pos, char *buf, size_t n,
                              bool *sigpipe)
{
    hp__px_release();
    ssize_t got = pread(in_fd, buf, n, pos);
    int e = errno;
    hp__px_reacquire();
    if (got <= 0)
        return got < 0 ? -(e == ESPIPE ? EINVAL : e) : 0;
    if (ps->dead)
        return -PX_DEAD_ERRNO;
    struct iovec v = {buf, (size_t)got};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    return tcp_sendmsg(ps, &m, MSG_DONTWAIT, sigpipe);
}

static ssize_t sendfile_loop(struct px_sock *ps, int in_fd, off_t pos, size_t count, bool *sigpipe)
{
    char *buf = malloc(PX_SENDFILE_CHUNK);
    if (!buf)
        return -ENOMEM;
    size_t done = 0;
    ssize_t rc = 0;
    uint64_t deadline = 0;
    while (done < count) {
        /* Read no more than the socket takes now; with no room, one byte:
         * the stack refuses it and so knows to report room when it is
         * back (an edge-triggered EPOLLOUT waits for that). */
        long room = ps->shut_wr || !ps->t ? 1 : send_room(ps);
        size_t n = count - done < PX_SENDFILE_CHUNK ? count - done : PX_SENDFILE_CHUNK;
        if ((size_t)(room > 0 ? room : 1) < n)
            n = (size_t)(room > 0 ? room : 1);
        rc = sendfile_chunk(ps, in_fd, pos + (off_t)done, buf, n, sigpipe);
        if (rc > 0) {
            done += (size_t)rc;
            rc = 0;
            continue;
        }
        if (rc != -EAGAIN || done || ps->nonblock)
            break;
        if ((rc = block(ps, writable, ps->opt.sndtimeo_ns, &deadline)) < 0)
            break;
    }
    free(buf);
    return done ? (ssize_t)done : rc;
}

ssize_t hp__px_sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
    hp__px_lock();
    struct px_sock *ps;
    ssize_t rc = hp__px_enter(out_fd, &ps);
    if (rc == 0 && ps->proto != PX_TCP)
        rc = -EINVAL; /* datagrams from a file: not supported (docs/apps.md) */
    off_t pos = 0;
    if (rc == 0 && (pos = offset ? *offset : lseek(in_fd, 0, SEEK_CUR)) < 0)
        rc = errno == ESPIPE ? -EINVAL : -errno;
    bool sigpipe = false;
    if (rc == 0) {
        hp__px_ref(&ps->o);
        rc = sendfile_loop(ps, in_fd, pos, count, &sigpipe);
        hp__px_unref(&ps->o);
        hp__px_drive();
    }
    hp__px_unlock();
    if (rc > 0) {
        if (offset)
            *offset = pos + rc;
        else
            lseek(in_fd, pos + rc, SEEK_SET);
    }
    if (sigpipe)
        pthread_kill(pthread_self(), SIGPIPE);
    return rc;
}
