/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath rr --link kernel`: the Linux TCP / UDP sockets baseline over loopback with epoll, the server in a forked process. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rr.h"
#include "tool.h"

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define KPORTS  8    /* TCP listening ports per server thread */
#define NADDR   16   /* IPv4 client (and UDP server) addresses */
#define BATCH   1000 /* handshakes in flight per client thread */
#define EVN     512
#define SCRATCH (64 * 1024)

/* Shared by every process of the run (an anonymous MAP_SHARED mapping):
 * the phase, then one struct kshared per shard. */
struct kglobal {
    _Atomic int phase;
    _Atomic int clients_ready; /* client processes done with their setup */
    _Atomic unsigned flows_up;
};

/* One shard: a server process and a client process. */
struct kshared {
    struct kglobal *g;
    _Atomic int server_state; /* 0 starting, 1 ready, -1 failed */
    unsigned flows_ok;        /* UDP: server sockets opened */
    uint16_t lport[RR_MAX_THREADS][KPORTS];
    char why[200];
    uint16_t uport[]; /* UDP: the server port of flow i */
};

/* What each process sends back over its pipe. */
struct kreport {
    double cpu_s;
    uint64_t txns, timeouts; /* client: completed; server: served */
    struct rr_hist hist;     /* client */
};

enum { K_LIS = 1, K_CONN };

struct kconn {
    uint8_t kind;
    bool up;
    int fd;
    uint32_t got, tosend;
    uint64_t t0;
};

struct kthr {
    const struct rr_opts *o;
    struct kshared *sh;
    unsigned k;
    bool client;
    int ep;
    int cpu;
    struct kconn *c; /* client: flows of this thread; server (UDP): its sockets */
    unsigned n, up;
    struct kconn lis[KPORTS];
    uint64_t txns, timeouts, errors;
    uint64_t timeout_ticks;
    uint8_t *buf;
    _Atomic int *setup_done;
    struct hb_window win; /* the measured window: n[RR_TXNS], n[RR_TIMEOUTS] */
    struct rr_hist hist;
};

static void raise_nofile(unsigned need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        struct rlimit up = {need, need};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) /* root: the hard limit too (up to fs.nr_open) */
            return;
    }
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}

static socklen_t mk_addr(struct sockaddr_storage *ss, bool v6, uint32_t a4, uint16_t port)
{
    memset(ss, 0, sizeof *ss);
    if (v6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
        s->sin6_family = AF_INET6;
        s->sin6_addr = in6addr_loopback;
        s->sin6_port = htons(port);
        return sizeof *s;
    }
    struct sockaddr_in *s = (struct sockaddr_in *)ss;
    s->sin_family = AF_INET;
    s->sin_addr.s_addr = htonl(a4);
    s->sin_port = htons(port);
    return sizeof *s;
}

static uint16_t local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &l) < 0)
        return 0;
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
}

static int ep_add(int ep, int fd, uint32_t events, void *p)
{
    struct epoll_event e = {.events = events, .data.ptr = p};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static void ep_mod(int ep, int fd, uint32_t events, void *p)
{
    struct epoll_event e = {.events = events, .data.ptr = p};
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
}

static void k_close(struct kthr *t, struct kconn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->up = false;
}

static void k_push(struct kthr *t, struct kconn *c)
{
    while (c->tosend) {
        ssize_t n = write(c->fd, t->buf, c->tosend);
        if (n > 0) {
            c->tosend -= (uint32_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ep_mod(t->ep, c->fd, EPOLLIN | EPOLLOUT, c);
            return;
        }
        t->errors++;
        k_close(t, c);
        return;
    }
}

static void k_request(struct kthr *t, struct kconn *c)
{
    c->got = 0;
    c->t0 = tool_ticks();
    if (t->o->udp) {
        if (send(c->fd, t->buf, t->o->request, 0) < 0)
            t->errors++; /* resent by the timeout */
        return;
    }
    c->tosend = t->o->request;
    k_push(t, c);
}

static void k_in(struct kthr *t, struct kconn *c, bool measuring)
{
    const struct rr_opts *o = t->o;
    if (o->udp) {
        for (;;) {
            struct sockaddr_storage from;
            socklen_t fl = sizeof from;
            ssize_t n =
                recvfrom(c->fd, t->buf, SCRATCH, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
            if (n < 0)
                return;
            if (t->client) {
                if (measuring)
                    rr_hist_add(&t->hist, tool_ticks() - c->t0);
                t->txns++;
                k_request(t, c);
            } else {
                t->txns++;
                if (sendto(c->fd, t->buf, o->response, 0, (struct sockaddr *)&from, fl) < 0)
                    t->errors++;
            }
        }
    }
    ssize_t n = read(c->fd, t->buf, SCRATCH);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0) {
        t->errors++;
        k_close(t, c);
        return;
    }
    c->got += (uint32_t)n;
    if (t->client) {
        if (c->got >= o->response) {
            if (measuring)
                rr_hist_add(&t->hist, tool_ticks() - c->t0);
            t->txns++;
            k_request(t, c);
        }
        return;
    }
    while (c->got >= o->request) {
        c->got -= o->request;
        c->tosend += o->response;
        t->txns++;
    }
    k_push(t, c);
}

static void k_accept(struct kthr *t, struct kconn *l)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0)
            return;
        struct kconn *c = calloc(1, sizeof *c); /* at setup only, not per transaction */
        if (!c) {
            close(fd);
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->kind = K_CONN;
        c->fd = fd;
        c->up = true;
        if (ep_add(t->ep, fd, EPOLLIN, c) < 0) {
            close(fd);
            free(c);
        }
    }
}

/* The event loop of every thread, both processes, from WARM (client: after
 * the first requests) to STOP. */
static void k_loop(struct kthr *t)
{
    struct epoll_event ev[EVN];
    hb_window_init(&t->win);
    uint64_t next_scan = tool_ticks() + t->timeout_ticks / 10;
    bool started = !t->client;
    for (;;) {
        int ph = atomic_load_explicit(&t->sh->g->phase, memory_order_acquire);
        if (!started && ph >= HB_WARM) {
            for (unsigned i = 0; i < t->n; i++)
                if (t->c[i].up)
                    k_request(t, &t->c[i]);
            started = true;
        }
        uint64_t counts[2] = {[RR_TXNS] = t->txns, [RR_TIMEOUTS] = t->timeouts};
        if (hb_window_watch(&t->win, ph, counts, 2))
            break;
        if (t->o->udp && t->client && started && tool_ticks() > next_scan) {
            uint64_t now = tool_ticks();
            for (unsigned i = 0; i < t->n; i++)
                if (t->c[i].up && now - t->c[i].t0 > t->timeout_ticks) {
                    t->timeouts++;
                    k_request(t, &t->c[i]);
                }
            next_scan = now + t->timeout_ticks / 10;
        }
        bool measuring = t->win.seen == HB_MEASURE;
        int n = epoll_wait(t->ep, ev, EVN, 10);
        for (int i = 0; i < n; i++) {
            struct kconn *c = ev[i].data.ptr;
            if (c->kind == K_LIS) {
                k_accept(t, c);
                continue;
            }
            if (c->fd < 0)
                continue;
            if (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                k_in(t, c, measuring);
            if ((ev[i].events & EPOLLOUT) && c->fd >= 0) {
                k_push(t, c);
                if (!c->tosend && c->fd >= 0)
                    ep_mod(t->ep, c->fd, EPOLLIN, c);
            }
        }
    }
}

/* ---- client threads: connect their flows, then run ---------------------------------- */

/* Handshakes that ended (EPOLLOUT on a connecting socket): up, or closed.
 * Returns how many ended. */
static unsigned k_connected(struct kthr *t, int timeout_ms)
{
    struct epoll_event ev[EVN];
    int n = epoll_wait(t->ep, ev, EVN, timeout_ms);
    for (int i = 0; i < n; i++) {
        struct kconn *c = ev[i].data.ptr;
        int err = 0;
        socklen_t el = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err) {
            k_close(t, c);
            continue;
        }
        c->up = true;
        t->up++;
        ep_mod(t->ep, c->fd, EPOLLIN, c);
    }
    return n > 0 ? (unsigned)n : 0;
}

/* Start flow i's handshake. false when no more can start (EMFILE,
 * ENFILE, ENOBUFS: flows_reached says it). */
static bool k_connect_one(struct kthr *t, unsigned i)
{
    const struct rr_opts *o = t->o;
    struct kconn *c = &t->c[i];
    c->kind = K_CONN;
    c->fd = socket(o->ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (c->fd < 0)
        return false;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_storage ss;
    if (!o->ipv6) {
        /* Several client addresses, the port chosen at connect() by the
         * whole 4-tuple (IP_BIND_ADDRESS_NO_PORT). */
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        socklen_t l = mk_addr(&ss, false, 0x7f000002u + (i % NADDR), 0);
        bind(c->fd, (struct sockaddr *)&ss, l);
    }
    unsigned flow = t->k + i * o->threads;
    socklen_t l =
        mk_addr(&ss, o->ipv6, 0x7f000001u, t->sh->lport[t->k][(flow / o->threads) % KPORTS]);
    if (connect(c->fd, (struct sockaddr *)&ss, l) < 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return false;
    }
    ep_add(t->ep, c->fd, EPOLLOUT, c);
    return true;
}

static void k_client_setup_tcp(struct kthr *t)
{
    unsigned started = 0, done = 0;
    bool more = true;
    double deadline = tool_now_s() + 60;
    while ((done < started || (more && started < t->n)) && tool_now_s() <= deadline) {
        while (more && started < t->n && started - done < BATCH)
            if ((more = k_connect_one(t, started)))
                started++;
        done += k_connected(t, 100);
    }
}

static void k_client_setup_udp(struct kthr *t)
{
    const struct rr_opts *o = t->o;
    for (unsigned i = 0; i < t->n; i++) {
        unsigned flow = t->k + i * o->threads;
        struct kconn *c = &t->c[i];
        c->kind = K_CONN;
        c->fd = -1;
        if (flow >= t->sh->flows_ok)
            continue;
        c->fd = socket(o->ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        if (c->fd < 0)
            return;
        struct sockaddr_storage ss;
        socklen_t l = mk_addr(&ss, o->ipv6, 0x7f000201u + (flow % NADDR), 0);
        if (bind(c->fd, (struct sockaddr *)&ss, l) < 0) {
            close(c->fd);
            c->fd = -1;
            return;
        }
        l = mk_addr(&ss, o->ipv6, 0x7f000101u + (flow % NADDR), t->sh->uport[flow]);
        if (connect(c->fd, (struct sockaddr *)&ss, l) < 0 || ep_add(t->ep, c->fd, EPOLLIN, c) < 0) {
            close(c->fd);
            c->fd = -1;
            return;
        }
        c->up = true;
        t->up++;
    }
}

static void *k_client(void *arg)
{
    struct kthr *t = arg;
    if (t->cpu >= 0)
        tool_pin(t->cpu);
    if (t->o->udp)
        k_client_setup_udp(t);
    else
        k_client_setup_tcp(t);
    atomic_fetch_add(t->setup_done, 1);
    k_loop(t);
    return NULL;
}

static void *k_server(void *arg)
{
    struct kthr *t = arg;
    if (t->cpu >= 0)
        tool_pin(t->cpu);
    k_loop(t);
    return NULL;
}

/* ---- the server process ------------------------------------------------------------------- */

static int server_setup(const struct rr_opts *o, struct kshared *sh, struct kthr *th)
{
    unsigned T = o->threads;
    for (unsigned k = 0; k < T; k++) {
        th[k].ep = epoll_create1(0);
        if (th[k].ep < 0) {
            snprintf(sh->why, sizeof sh->why, "epoll_create1: %s", strerror(errno));
            return -1;
        }
        if (o->udp)
            continue;
        for (unsigned j = 0; j < KPORTS; j++) {
            struct kconn *l = &th[k].lis[j];
            l->kind = K_LIS;
            l->fd = socket(o->ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            struct sockaddr_storage ss;
            socklen_t len = mk_addr(&ss, o->ipv6, 0x7f000001u, 0);
            if (l->fd < 0 || bind(l->fd, (struct sockaddr *)&ss, len) < 0 ||
                listen(l->fd, 65535) < 0 || ep_add(th[k].ep, l->fd, EPOLLIN, l) < 0) {
                snprintf(sh->why, sizeof sh->why, "server: listen on loopback: %s",
                         strerror(errno));
                return -1;
            }
            sh->lport[k][j] = local_port(l->fd);
        }
    }
    if (!o->udp)
        return 0;
    for (unsigned k = 0; k < T; k++) {
        th[k].c = calloc(rr_flows_of(o->flows, T, k), sizeof *th[k].c);
        if (!th[k].c) {
            snprintf(sh->why, sizeof sh->why, "server: out of memory");
            return -1;
        }
    }
    unsigned i = 0;
    for (; i < o->flows; i++) {
        struct kthr *t = &th[i % T];
        struct kconn *c = &t->c[t->n];
        c->kind = K_CONN;
        c->fd = socket(o->ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        if (c->fd < 0)
            break;
        struct sockaddr_storage ss;
        socklen_t len = mk_addr(&ss, o->ipv6, 0x7f000101u + (i % NADDR), 0);
        if (bind(c->fd, (struct sockaddr *)&ss, len) < 0 || ep_add(t->ep, c->fd, EPOLLIN, c) < 0) {
            close(c->fd);
            break;
        }
        sh->uport[i] = local_port(c->fd);
        c->up = true;
        t->n++;
    }
    sh->flows_ok = i;
    if (i < o->flows)
        snprintf(sh->why, sizeof sh->why, "the server opened %u UDP sockets of %u: %s", i, o->flows,
                 strerror(errno));
    return 0;
}

/* Write all of p, or give up. */
static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        c += w;
        n -= (size_t)w;
    }
}

static bool read_all(int fd, void *p, size_t n, double timeout_s)
{
    char *c = p;
    double end = tool_now_s() + timeout_s;
    while (n) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int ms = (int)((end - tool_now_s()) * 1000);
        if (ms <= 0 || poll(&pf, 1, ms) != 1)
            return false;
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        c += r;
        n -= (size_t)r;
    }
    return true;
}

/* A shard's process: its threads (k0: the first global thread index, for
 * --cpu), then its report on wfd. Never returns. */
static void shard_main(const struct rr_opts *all, const struct rr_opts *o, struct kshared *sh,
                       unsigned k0, bool client, int wfd)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    unsigned T = o->threads;
    struct kthr *th = calloc(T, sizeof *th);
    uint8_t *bufs = malloc((size_t)T * SCRATCH);
    struct kreport *rep = calloc(1, sizeof *rep);
    pthread_t tid[RR_MAX_THREADS];
    unsigned started = 0;
    _Atomic int setup_done;
    atomic_init(&setup_done, 0);
    if (!th || !bufs || !rep) {
        snprintf(sh->why, sizeof sh->why, "out of memory");
        atomic_store(&sh->server_state, -1);
        _exit(1);
    }
    if (!client && server_setup(o, sh, th) < 0) {
        atomic_store(&sh->server_state, -1);
        _exit(1);
    }
    memset(bufs, client ? 'c' : 's', (size_t)T * SCRATCH);
    double tpu = client ? rr_ticks_per_us() : 1;
    for (unsigned k = 0; k < T; k++) {
        struct kthr *t = &th[k];
        t->o = o;
        t->sh = sh;
        t->k = k;
        t->client = client;
        t->cpu = rr_cpu_of(all, k0 + k, client);
        t->buf = bufs + (size_t)k * SCRATCH;
        t->setup_done = &setup_done;
        t->timeout_ticks = (uint64_t)(tpu * 1e6);
        if (client) {
            t->n = rr_flows_of(o->flows, T, k);
            t->c = calloc(t->n ? t->n : 1, sizeof *t->c);
            t->ep = epoll_create1(0);
            if (!t->c || t->ep < 0)
                _exit(1);
            for (unsigned i = 0; i < t->n; i++)
                t->c[i].fd = -1;
        }
    }
    for (; started < T; started++)
        if (pthread_create(&tid[started], NULL, client ? k_client : k_server, &th[started]) != 0)
            break;
    if (started < T)
        atomic_store(&sh->g->phase, HB_STOP);
    if (client) {
        while (atomic_load(&setup_done) < (int)started)
            hb_sleep(0.001);
        unsigned up = 0;
        for (unsigned k = 0; k < started; k++)
            up += th[k].up;
        atomic_fetch_add(&sh->g->flows_up, up);
        atomic_fetch_add(&sh->g->clients_ready, 1);
    } else {
        atomic_store(&sh->server_state, started == T ? 1 : -1);
    }
    for (unsigned k = 0; k < started; k++) {
        pthread_join(tid[k], NULL);
        rep->cpu_s += th[k].win.cpu_s;
        rep->txns += th[k].win.n[RR_TXNS];
        rep->timeouts += th[k].win.n[RR_TIMEOUTS];
        rr_hist_merge(&rep->hist, &th[k].hist);
    }
    write_all(wfd, rep, sizeof *rep);
    _exit(0);
}

/* ---- the coordinator ------------------------------------------------------------------------ */

/* The file descriptors one process may have: the hard limit, raised when we may. */
static unsigned fd_budget(unsigned need)
{
    raise_nofile(need);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30) ? (1u << 30)
                                                                    : (unsigned)rl.rlim_cur;
}

static pid_t spawn(const struct rr_opts *all, const struct rr_opts *o, struct kshared *sh,
                   unsigned k0, bool client, int *rfd)
{
    int pfd[2];
    if (pipe(pfd) < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        shard_main(all, o, sh, k0, client, pfd[1]);
    }
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return -1;
    }
    *rfd = pfd[0];
    return pid;
}

/* The run's processes: S shards of a server and a client process, with
 * the shared mapping they watch. */
struct kproc {
    unsigned S, Tp, budget;
    size_t one, shlen;
    char *map;
    struct kglobal *g;
    struct rr_opts so[RR_MAX_THREADS];
    pid_t pid[2 * RR_MAX_THREADS];
    int rfd[2 * RR_MAX_THREADS];
    unsigned np;
};

static struct kshared *shard(const struct kproc *k, unsigned s)
{
    return (struct kshared *)(k->map + 64 + s * k->one);
}

/* Shards: as many client / server process pairs as the descriptor limit
 * needs (each process holds its flows' sockets, the epoll and listening
 * sockets, and a margin). */
static int plan(const struct rr_opts *o, struct kproc *k, struct rr_result *r)
{
    k->budget = fd_budget(o->flows + 1024 + 16 * o->threads);
    unsigned per = k->budget > 1024 + 16 * o->threads ? k->budget - 512 - 16 * o->threads : 256;
    unsigned S = (o->flows + per - 1) / per;
    k->S = S < 1 ? 1 : S > RR_MAX_THREADS ? RR_MAX_THREADS : S;
    k->Tp = (o->threads + k->S - 1) / k->S; /* threads per process */
    unsigned maxf = o->flows / k->S + 1;
    k->one = (sizeof(struct kshared) + (size_t)maxf * sizeof(uint16_t) + 63) & ~(size_t)63;
    k->shlen = 64 + (size_t)k->S * k->one;
    k->map = mmap(NULL, k->shlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (k->map == MAP_FAILED) {
        snprintf(r->note, sizeof r->note, "mmap: %s", strerror(errno));
        return -1;
    }
    k->g = (struct kglobal *)k->map;
    r->processes = 2 * k->S;
    r->threads_used = k->S * k->Tp;
    return 0;
}

/* Servers first, each ready before the next: the clients need their ports. */
static int start_servers(const struct rr_opts *o, struct kproc *k, struct rr_result *r)
{
    for (unsigned s = 0; s < k->S; s++) {
        struct kshared *sh = shard(k, s);
        sh->g = k->g;
        k->so[s] = *o;
        k->so[s].flows = rr_flows_of(o->flows, k->S, s);
        k->so[s].threads = k->Tp < k->so[s].flows ? k->Tp : k->so[s].flows;
        if ((k->pid[k->np] = spawn(o, &k->so[s], sh, s * k->Tp, false, &k->rfd[k->np])) < 0) {
            snprintf(r->note, sizeof r->note, "fork: %s", strerror(errno));
            return -1;
        }
        pid_t pid = k->pid[k->np++];
        double deadline = tool_now_s() + 60;
        while (atomic_load(&sh->server_state) == 0 && tool_now_s() < deadline &&
               waitpid(pid, NULL, WNOHANG) == 0)
            hb_sleep(0.001);
        if (atomic_load(&sh->server_state) != 1) {
            snprintf(r->note, sizeof r->note, "the server process failed: %.200s",
                     sh->why[0] ? sh->why : "no reason given");
            return -1;
        }
    }
    return 0;
}

/* The clients, and their flows up (within 120 s). */
static int start_clients(const struct rr_opts *o, struct kproc *k, struct rr_result *r)
{
    for (unsigned s = 0; s < k->S; s++) {
        if ((k->pid[k->np] = spawn(o, &k->so[s], shard(k, s), s * k->Tp, true, &k->rfd[k->np])) <
            0) {
            snprintf(r->note, sizeof r->note, "fork: %s", strerror(errno));
            return -1;
        }
        k->np++;
    }
    double deadline = tool_now_s() + 120;
    while (atomic_load(&k->g->clients_ready) < (int)k->S && atomic_load(&k->g->phase) != HB_STOP) {
        if (tool_now_s() > deadline) {
            snprintf(r->note, sizeof r->note, "the flows were not set up within 120 s");
            return -1;
        }
        for (unsigned i = 0; i < k->np; i++)
            if (waitpid(k->pid[i], NULL, WNOHANG) == k->pid[i]) {
                k->pid[i] = -1;
                snprintf(r->note, sizeof r->note, "a %s process died during setup",
                         i >= k->S ? "client" : "server");
                return -1;
            }
        hb_sleep(0.001);
    }
    return 0;
}

/* Every process's report into r. 0, or -1 when one reported nothing. */
static int collect(struct kproc *k, struct rr_result *r)
{
    struct kreport *rep = malloc(sizeof *rep);
    int rc = rep ? 0 : -1;
    for (unsigned i = 0; i < k->np && rep; i++) {
        bool client = i >= k->S;
        if (!read_all(k->rfd[i], rep, sizeof *rep, 15)) {
            snprintf(r->note, sizeof r->note, "a %s process reported nothing",
                     client ? "client" : "server");
            rc = -1;
            continue;
        }
        if (client) {
            r->txns += rep->txns;
            r->timeouts += rep->timeouts;
            r->cpu_client_s += rep->cpu_s;
            rr_hist_merge(&r->hist, &rep->hist);
        } else {
            r->served += rep->txns;
            r->cpu_server_s += rep->cpu_s;
        }
    }
    free(rep);
    return rc;
}

/* Stop every process (SIGKILL after 10 s) and unmap. */
static void reap(struct kproc *k)
{
    atomic_store(&k->g->phase, HB_STOP);
    for (unsigned i = 0; i < k->np; i++) {
        int st;
        double end = tool_now_s() + 10;
        while (k->pid[i] >= 0 && waitpid(k->pid[i], &st, WNOHANG) == 0) {
            if (tool_now_s() > end) {
                kill(k->pid[i], SIGKILL);
                waitpid(k->pid[i], &st, 0);
                break;
            }
            hb_sleep(0.005);
        }
        close(k->rfd[i]);
    }
    munmap(k->map, k->shlen);
}

int rr_kernel_run(const struct rr_opts *o, struct rr_result *r)
{
    struct kproc *k = calloc(1, sizeof *k);
    if (!k || plan(o, k, r) < 0) {
        if (!k)
            snprintf(r->note, sizeof r->note, "out of memory");
        free(k);
        return -1;
    }
    int rc = -1;
    double t_setup = tool_now_s();
    if (start_servers(o, k, r) == 0 && start_clients(o, k, r) == 0) {
        r->setup_s = tool_now_s() - t_setup;
        r->flows_reached = atomic_load(&k->g->flows_up);
        if (r->flows_reached < o->flows) {
            const char *why = shard(k, 0)->why;
            snprintf(r->note, sizeof r->note,
                     "only %u of %u flows could be set up (RLIMIT_NOFILE %u per process, %u "
                     "processes)%s%.200s",
                     r->flows_reached, o->flows, k->budget, 2 * k->S, why[0] ? "; " : "", why);
        }
        r->ticks_per_us = rr_ticks_per_us();
        r->seconds = hb_phases_run(&k->g->phase, o->warm, o->duration, NULL, NULL);
        rc = collect(k, r);
    }
    reap(k);
    free(k);
    return rc;
}
