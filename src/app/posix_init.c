/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's process-wide stack: made at the first inet socket from HOTPATH_*, driven under one lock, cut off in fork children, drained and checked at exit. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/pool.h>

#include "posix_internal.h"
/* hp__px_flush() hands the stack's transmit bursts to the links. */
#include "../net/internal.h"

struct px_state hp__px = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .loop_cond = PTHREAD_COND_INITIALIZER,
    .link_fd = -1,
    .placeholder = -1,
    .keeper_fd = -1,
};

/* Set when something another thread may sleep on became ready. */
static bool need_wake;

/* This thread called into the layer before (the keeper marks itself). */
static __thread bool seen __attribute__((tls_model("initial-exec")));

void hp__px_reacquire(void)
{
    pthread_mutex_lock(&hp__px.lock);
    /* The program's thread sleeps inside the loop (posix_wait.c): get it
     * out first; the stack is the loop's meanwhile. */
    while (__builtin_expect(hp__px.loop_busy, 0)) {
        hp_loop_wake(hp__px.loop);
        pthread_cond_wait(&hp__px.loop_cond, &hp__px.lock);
    }
    hp__px.calls++;
}

void hp__px_release(void)
{
    /* Threads asleep on the loop's fd armed the links before they slept;
     * a round of the loop since then disarmed them (and may have set an
     * earlier timer): arm again for them, or wake them. */
    if (hp__px.sleepers && hp__px.loop_disarmed && hp__px.loop && hp__px.status == PX_ST_UP) {
        hp__px.loop_disarmed = false;
        if (hp__px_rearm_for_sleepers())
            need_wake = true;
    }
    if (need_wake) {
        need_wake = false;
        hp__px_wake_all();
    }
    pthread_mutex_unlock(&hp__px.lock);
}

/* Under the lock: the thread is in the layer. */
static inline void enter(void)
{
    hp__px_in_layer++;
    if (__builtin_expect(!seen, 0)) {
        seen = true;
        /* A second program thread: a thread asleep on the loop's fd alone
         * (posix_wait.c) must now be woken when this one finds its work. */
        if (++hp__px.app_threads > 1 && hp__px.sleepers)
            need_wake = true;
    }
}

void hp__px_lock(void)
{
    hp__px_reacquire();
    enter();
}

bool hp__px_lock_if_free(void)
{
    pthread_mutex_lock(&hp__px.lock);
    if (hp__px.loop_busy) {
        pthread_mutex_unlock(&hp__px.lock);
        return false;
    }
    hp__px.calls++;
    enter();
    return true;
}

void hp__px_unlock(void)
{
    hp__px_release();
    /* Out of the layer: the program's handlers of signals that came
     * meanwhile run now (posix_signal.c), where they may even longjmp. */
    if (--hp__px_in_layer == 0 && hp__px_signals_deferred())
        hp__px_run_deferred();
}

void hp__px_not_an_app_thread(void)
{
    seen = true;
}

uint64_t hp__px_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t hp__px_next_timer_ns(void)
{
    return hp__px.stack ? hp_stack_next_timer_ns(hp__px.stack) : -1;
}

/* Socket events from one non-blocking round of the loop (which polls the
 * stack): their number. */
static int loop_round(struct hp_loop *l)
{
    struct hp_loop_event ev[64];
    int events = 0, n;
    do {
        n = hp_loop_wait(l, ev, 64, 0);
        for (int i = 0; i < n; i++)
            if (ev[i].kind == HP_LOOP_SOCK && ev[i].user)
                hp__px_sock_notify(ev[i].user, ev[i].events);
        events += n > 0 ? n : 0;
    } while (n == 64);
    return events;
}

int hp__px_drive(void)
{
    struct hp_loop *l = hp__px.loop;
    if (!l)
        return 0;
    int events = loop_round(l);
    /* The test hook's peer; what it sends arrives at our next round. */
    for (int i = 0; hp__px.extra_poll && i < 4 && hp__px.extra_poll(hp__px.extra_ctx) > 0; i++)
        events += loop_round(l) + 1;
    hp__px.last_poll_ns = hp__px_coarse_ns();
    hp__px.polls++;
    hp__px.drive_call = hp__px.calls;
    hp__px.loop_disarmed = true;
    if (events && hp__px.sleepers)
        need_wake = true;
    return events;
}

bool hp__px_drove_recently(void)
{
    /* A program on an event loop reads until EAGAIN right after its wait
     * polled: polling again for that EAGAIN costs more than it finds. A
     * program that spins on a non-blocking call still polls every third
     * call. Counted in calls, not time: no clock read on this path. */
    return hp__px.calls - hp__px.drive_call <= PX_FRESH_CALLS;
}

uint64_t hp__px_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void flush_now(void)
{
    /* Only the transmit bursts (a whole poll would look at the receive
     * rings and the timers too, which the program's next wait does). */
    __atomic_store_n(&hp__px.tx_held, false, __ATOMIC_RELAXED);
    struct hp_stack *s = hp__px.stack;
    for (int i = 0; s && i < s->nifaces; i++)
        hp__eth_flush(s->ifaces[i]);
    if (hp__px.extra_poll)
        hp__px_drive();
}

void hp__px_flush(void)
{
    if (hp__px.tx_defer) {
        hp__px.tx_defer--;
        __atomic_store_n(&hp__px.tx_held, true, __ATOMIC_RELAXED);
        return;
    }
    flush_now();
}

void hp__px_tx_settle(void)
{
    hp__px.tx_defer = 0;
    if (!__atomic_load_n(&hp__px.tx_held, __ATOMIC_RELAXED))
        return;
    if (hp__px.status == PX_ST_UP)
        flush_now();
    else
        __atomic_store_n(&hp__px.tx_held, false, __ATOMIC_RELAXED);
}

void hp__px_tx_batch(int n)
{
    hp__px.tx_defer = n > 1 && hp__px.cfg.tx_batch ? (uint32_t)n - 1 : 0;
}

void hp__px_tx_settle_unlocked(void)
{
    /* The layer's own waits (the loop's epoll set) hold the lock already. */
    if (hp__px_in_layer || !__atomic_load_n(&hp__px.tx_held, __ATOMIC_RELAXED))
        return;
    hp__px_lock();
    hp__px_tx_settle();
    hp__px_unlock();
}

void hp__px_sock_changed(void)
{
    if (hp__px.sleepers)
        need_wake = true;
}

/* ---- making the stack ----------------------------------------------------- */

/* A stack exists in another live process of this process's ancestry: the
 * first one to make a stack exports its pid, and a program it runs (a
 * shell's child, system()) would otherwise open a second stack on the same
 * interface and address. */
static int check_owner(void)
{
    const char *v = getenv("HOTPATH_OWNER_PID");
    if (!v || !*v)
        return 0;
    long pid = strtol(v, NULL, 10);
    if (pid <= 0 || pid == (long)getpid())
        return 0;
    if (kill((pid_t)pid, 0) == 0 || errno == EPERM) {
        hp__px_say(
            "the stack on this interface belongs to process %ld (HOTPATH_OWNER_PID): a program it "
            "started cannot open a second one; its inet sockets fail with EBUSY",
            pid);
        return -EBUSY;
    }
    return 0;
}

/* The kernel must not own one of our addresses in this namespace: both
 * would answer for it. */
static int check_addresses(const struct px_config *c)
{
    struct ifaddrs *all;
    if (getifaddrs(&all) < 0)
        return 0;
    int rc = 0;
    for (struct ifaddrs *a = all; a && !rc; a = a->ifa_next) {
        if (!a->ifa_addr ||
            (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
            continue;
        int f = a->ifa_addr->sa_family == AF_INET ? 4 : 6;
        const void *ka = f == 4 ? (const void *)&((struct sockaddr_in *)a->ifa_addr)->sin_addr
                                : (const void *)&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
        for (int i = 0; i < c->nip; i++) {
            if (c->ip[i].family != f || memcmp(ka, c->ip[i].addr, f == 4 ? 4 : 16) != 0)
                continue;
            char t[64];
            inet_ntop(f == 4 ? AF_INET : AF_INET6, c->ip[i].addr, t, sizeof t);
            hp__px_say(
                "%s is already the kernel's address on %s: remove it there (ip addr del) or give "
                "hotpath another one",
                t, a->ifa_name);
            rc = -EADDRINUSE;
            break;
        }
    }
    freeifaddrs(all);
    return rc;
}

/* A memif client's first frames would be dropped while the link is down
 * (link.h): the stack is made once the server took the handshake, or not
 * at all when none answers in HOTPATH_MEMIF_WAIT_MS. A server waits for
 * nobody: its client comes when it comes. */
static int memif_wait_up(const struct px_config *c)
{
    uint64_t end = hp__px_now_ns() + (uint64_t)c->memif_wait_ms * 1000000u;
    struct hp_buf *b[32];
    while (!hp_link_up(hp__px.link)) {
        if (hp__px_now_ns() >= end) {
            struct hp_memif_stats ms;
            hp_link_memif_stats(hp__px.link, &ms);
            struct stat st;
            const char *why = ms.reason[0] ? ms.reason : "nobody listens there";
            if (c->memif_socket[0] != '@' && stat(c->memif_socket, &st) < 0)
                why = "there is no such socket file";
            hp__px_say("memif: no server took the connection on %s in %u ms "
                       "(HOTPATH_MEMIF_WAIT_MS): %s",
                       c->memif_socket, c->memif_wait_ms, why);
            return -ECONNREFUSED;
        }
        int n = hp_link_rx_burst(hp__px.link, b, 32);
        if (n > 0)
            hp_buf_free_bulk(b, (unsigned)n);
        else
            nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    return 0;
}

static void memif_config(const struct px_config *c, struct hp_link_config *lc)
{
    lc->iface = NULL;
    lc->memif.socket = c->memif_socket;
    lc->memif.role = c->memif_role;
    lc->memif.id = c->memif_id;
    lc->memif.secret = c->memif_secret[0] ? c->memif_secret : NULL;
}

static int open_link(const struct px_config *c)
{
    struct hp_link_config lc = {.iface = c->iface, .queue = c->queue};
    bool memif = strcmp(c->link, "memif") == 0;
    if (memif)
        memif_config(c, &lc);
    if (strcmp(c->link, "afxdp") == 0) {
        lc.n_frames = c->pool_bufs;
        lc.frame_size = 2048;
        lc.flags |= c->afxdp_flags;
    } else {
        struct hp_pool_config pc = {.name = "posix", .n_bufs = c->pool_bufs};
        hp__px.pool = hp_pool_create(&pc);
        if (!hp__px.pool) {
            int e = errno;
            hp__px_say("cannot make a pool of %u buffers (HOTPATH_BUFS): %s", c->pool_bufs,
                       hp_strerror(-e));
            return -e;
        }
        lc.pool = hp__px.pool;
        if (strcmp(c->link, "tap") == 0)
            lc.flags |= HP_LINK_F_TAP_ATTACH;
    }
    hp__px.link = hp_link_open(c->link, &lc);
    if (!hp__px.link) {
        int e = errno ? errno : EIO;
        if (memif)
            hp__px_say("%s (HOTPATH_LINK=memif HOTPATH_MEMIF_SOCKET=%s HOTPATH_MEMIF_ROLE=%s)",
                       hp_link_error(), c->memif_socket,
                       c->memif_role == HP_MEMIF_SERVER ? "server" : "client");
        else if (c->afxdp_flags && strcmp(c->link, "afxdp") == 0)
            hp__px_say("%s (HOTPATH_LINK=%s HOTPATH_IFACE=%s HOTPATH_AFXDP_MODE=%s)",
                       hp_link_error(), c->link, c->iface, c->afxdp_mode);
        else
            hp__px_say("%s (HOTPATH_LINK=%s HOTPATH_IFACE=%s)", hp_link_error(), c->link, c->iface);
        return -e;
    }
    if (memif && c->memif_role == HP_MEMIF_CLIENT) {
        int rc = memif_wait_up(c);
        if (rc < 0)
            return rc;
    }
    if (c->pcap[0]) {
        struct hp_link *p = hp_link_pcap(hp__px.link, c->pcap);
        if (!p) {
            int e = errno ? errno : EIO;
            hp__px_say("HOTPATH_PCAP=%s: %s", c->pcap, hp_link_error());
            return -e;
        }
        hp__px.link = p;
    }
    return 0;
}

/* IPv6 addresses are tentative until duplicate address detection ends
 * (RFC 4862 5.4); sockets bound to them would fail until then. */
static int wait_dad(const struct px_config *c, int ifx)
{
    uint64_t end = hp__px_now_ns() + 10ull * 1000000000u;
    for (int i = 0; i < c->nip; i++) {
        if (c->ip[i].family != 6)
            continue;
        enum hp_addr_state st;
        while ((st = hp_stack_addr_state(hp__px.stack, ifx, 6, c->ip[i].addr)) ==
                   HP_ADDR_TENTATIVE &&
               hp__px_now_ns() < end) {
            if (hp_stack_poll(hp__px.stack) == 0) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
        }
        if (st != HP_ADDR_PREFERRED) {
            char t[64];
            inet_ntop(AF_INET6, c->ip[i].addr, t, sizeof t);
            hp__px_say("%s: %s", t,
                       st == HP_ADDR_DUPLICATE ? "another host on the link has this address"
                                               : "duplicate address detection did not end in 10 s");
            return -EADDRINUSE;
        }
    }
    return 0;
}

static int setup_stack(const struct px_config *c)
{
    struct hp_stack_config sc = {.name = "posix", .flags = c->no_dad ? HP_STACK_F_NO_DAD : 0};
    hp__px.stack = hp_stack_create(&sc);
    if (!hp__px.stack)
        return -errno;
    int ifx = hp_stack_add_iface(hp__px.stack, hp__px.link);
    if (ifx < 0) {
        hp__px_say("cannot add %s to the stack: %s", c->iface, hp_strerror(ifx));
        return ifx;
    }
    for (int i = 0; i < c->nip; i++) {
        int rc =
            hp_stack_add_addr(hp__px.stack, ifx, c->ip[i].family, c->ip[i].addr, c->ip[i].plen);
        if (rc < 0) {
            char t[64];
            inet_ntop(c->ip[i].family == 4 ? AF_INET : AF_INET6, c->ip[i].addr, t, sizeof t);
            hp__px_say("cannot add %s/%u: %s", t, c->ip[i].plen, hp_strerror(rc));
            return rc == -EEXIST ? -EADDRINUSE : rc;
        }
    }
    if ((c->has_gw4 && hp_stack_set_gateway(hp__px.stack, 4, c->gw4) < 0) ||
        (c->has_gw6 && hp_stack_set_gateway(hp__px.stack, 6, c->gw6) < 0)) {
        hp__px_say("HOTPATH_GW / HOTPATH_GW6: the gateway is not on one of our prefixes");
        return -EINVAL;
    }
    return c->no_dad ? 0 : wait_dad(c, ifx);
}

/* The event loop on the stack: the layer polls it (hp_loop_wait with no
 * timeout) and sleeps on its fd after hp_loop_prepare() (loop.h,
 * "embedding"): the loop arms every link its own way. */
static int make_loop(void)
{
    struct hp_loop_config lc = {.flags = HP_LOOP_F_NO_SPIN};
    hp__px.loop = hp_loop_create(hp__px.stack, &lc);
    if (!hp__px.loop) {
        int e = errno ? errno : ENOMEM;
        hp__px_say("cannot make the event loop: %s", strerror(e));
        return -e;
    }
    hp__px_fd_internal(hp_loop_fd(hp__px.loop));
    return 0;
}

void hp__px_unmake_loop(void)
{
    if (!hp__px.loop)
        return;
    hp__px_fd_set(hp_loop_fd(hp__px.loop), NULL);
    hp_loop_destroy(hp__px.loop);
    hp__px.loop = NULL;
}

/* Undo a half-made stack. */
static void unmake(void)
{
    hp__px_unmake_loop();
    hp_stack_destroy(hp__px.stack);
    hp__px.stack = NULL;
    hp_link_close(hp__px.link);
    hp__px.link = NULL;
    if (hp__px.pool && hp_pool_destroy(hp__px.pool) == 0)
        hp__px.pool = NULL;
}

/* The fd floor's worth of placeholders, at most (posix_fd.c). */
#define PX_LOW_HELD 512

static int make_stack(void)
{
    struct px_config *c = &hp__px.cfg;
    int rc = hp__px_config_parse(c);
    if (rc == 0)
        rc = check_owner();
    if (rc == 0)
        rc = check_addresses(c);
    if (rc < 0)
        return rc;
    /* The fds the link (libxdp, libbpf) and the loop make land high, out
     * of the program's way: the low ones are held meanwhile. */
    static int held[PX_LOW_HELD];
    int nheld = hp__px_fill_low(held, PX_LOW_HELD);
    rc = open_link(c);
    if (rc == 0)
        rc = setup_stack(c);
    if (rc == 0)
        rc = make_loop();
    hp__px_release_low(held, nheld);
    if (rc < 0) {
        unmake();
        return rc;
    }
    hp__px.link_fd = hp_link_fd(hp__px.link);
    if (hp__px.link_fd >= 0) {
        /* A program this one executes must not inherit the link. */
        PX_REAL(fcntl)(hp__px.link_fd, F_SETFD, FD_CLOEXEC);
        hp__px_fd_internal(hp__px.link_fd);
    }
    char pid[24];
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    setenv("HOTPATH_OWNER_PID", pid, 1);
    hp__px.pid = getpid();
    return 0;
}

int hp__px_ensure_stack(void)
{
    switch (hp__px.status) {
    case PX_ST_UP:
        return 0;
    case PX_ST_NONE:
        break;
    case PX_ST_FAILED:
        return hp__px.cfg.fallback_kernel ? 1 : -hp__px.init_err;
    case PX_ST_FORKED:
        return hp__px.cfg.fallback_kernel ? 1 : -EAFNOSUPPORT;
    default:
        return -EAFNOSUPPORT;
    }
    int rc = make_stack();
    if (rc < 0) {
        hp__px.status = PX_ST_FAILED;
        hp__px.init_err = -rc;
        if (hp__px.cfg.fallback_kernel) {
            hp__px_say("HOTPATH_FALLBACK=kernel: inet sockets go to the kernel instead");
            return 1;
        }
        hp__px_say("inet sockets fail with %s (%s)", strerror(-rc),
                   "no silent fall-back to the kernel; "
                   "HOTPATH_FALLBACK=kernel asks for one");
        return rc;
    }
    hp__px.status = PX_ST_UP;
    hp__px_keeper_start();
    return 0;
}

void hp__px_test_attach(struct hp_stack *s, struct hp_link *link, int (*extra_poll)(void *),
                        void *ctx)
{
    hp__px_lock();
    if (s) {
        memset(&hp__px.cfg, 0, sizeof hp__px.cfg);
        hp__px.cfg.busy_poll_us = 20;
        hp__px.cfg.exit_linger_ms = 1000;
        hp__px.cfg.tx_batch = 1;
        hp__px.stack = s;
        hp__px.link = link;
        hp__px.link_fd = -1;
        hp__px.extra_poll = extra_poll;
        hp__px.extra_ctx = ctx;
        hp__px.status = make_loop() == 0 ? PX_ST_UP : PX_ST_FAILED;
        hp__px.pid = getpid();
    } else {
        hp__px_sock_kill_all();
        hp__px_unmake_loop();
        hp__px.stack = NULL;
        hp__px.link = NULL;
        hp__px.extra_poll = NULL;
        hp__px.tx_defer = 0;
        __atomic_store_n(&hp__px.tx_held, false, __ATOMIC_RELAXED);
        hp__px.status = PX_ST_NONE;
    }
    hp__px_unlock();
}
