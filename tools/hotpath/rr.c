/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath rr`: request/response transactions over many TCP or UDP flows (neper tcp_rr / udp_rr), hotpath stacks over the mem link or a real one; options and report. */
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

#include "cmd.h"
#include "rr.h"
#include "tool.h"

/* Under callgrind (scripts/rr_cachesim.py), the counters are zeroed as the measured
 * window opens and dumped as it closes, so that a simulated cache's misses divide by
 * the window's transactions with set-up and warm-up left out. Outside valgrind the
 * client requests are a few no-op instructions, run twice. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define RR_CG_WINDOW_OPEN()  CALLGRIND_ZERO_STATS
#define RR_CG_WINDOW_CLOSE() CALLGRIND_DUMP_STATS_AT("hotpath rr: measured window")
#endif
#endif
#ifndef RR_CG_WINDOW_OPEN
#define RR_CG_WINDOW_OPEN()  ((void)0)
#define RR_CG_WINDOW_CLOSE() ((void)0)
#endif

#define CMD         "rr"
#define MAX_FLOWS   200000u
#define MAX_MSG     (1u << 20)
#define TCP_PORT0   5001 /* listeners: 5001, 5002, ... */
#define UDP_PORT0   1024 /* UDP flow i: port 1024 + i on both sides */
#define SETUP_BATCH 512  /* handshakes in flight per stack pair */
#define RAMP_STEP   256  /* first requests per turn of the client's loop */
#define EV_BATCH    256
#define SCRATCH     (64 * 1024)

static const uint8_t CLI4[4] = {198, 18, 0, 1}, SRV4[4] = {198, 18, 0, 2};
static const uint8_t CLI6[16] = {0x20, 0x01, 0, 2, [15] = 1},
                     SRV6[16] = {0x20, 0x01, 0, 2, [15] = 2};

/* ---- shared helpers (rr.h) ------------------------------------------------------ */

int rr_cpu_of(const struct rr_opts *o, unsigned k, bool client)
{
    if (o->ncpus == 0)
        return -1;
    return o->cpus[(2 * k + (client ? 0 : 1)) % (unsigned)o->ncpus];
}

void rr_hist_merge(struct rr_hist *into, const struct rr_hist *h)
{
    for (unsigned i = 0; i < RR_HIST_N; i++)
        into->n[i] += h->n[i];
}

double rr_hist_quantile(const struct rr_hist *h, double q)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < RR_HIST_N; i++)
        total += h->n[i];
    if (!total)
        return 0;
    uint64_t want = (uint64_t)(q * (double)total), acc = 0;
    if (want >= total)
        want = total - 1;
    for (unsigned i = 0; i < RR_HIST_N; i++) {
        acc += h->n[i];
        if (acc > want) {
            if (i < RR_HIST_SUB)
                return (double)i + 0.5;
            unsigned e = i / RR_HIST_SUB + 3, sub = i % RR_HIST_SUB;
            double width = (double)(1ull << (e - 4));
            return (double)(1ull << e) + width * ((double)sub + 0.5);
        }
    }
    return 0;
}

double rr_ticks_per_us(void)
{
    double t0 = tool_now_s();
    uint64_t k0 = tool_ticks();
    hb_sleep(0.02);
    double t1 = tool_now_s();
    uint64_t k1 = tool_ticks();
    double v = (double)(k1 - k0) / ((t1 - t0) * 1e6);
    return v > 0 ? v : 1;
}

/* ---- hotpath: stack pairs over mem or real links ------------------------------------ */

enum { F_CLI = 1, F_SRV, F_LIS };

struct mflow {
    uint8_t kind;
    bool up, dead;
    uint32_t got;    /* bytes of the message being received */
    uint32_t tosend; /* bytes of the current message not yet taken by the stack */
    uint64_t t0;     /* ticks at the request's send (client) */
    union {
        struct hp_tcp_sock *t;
        struct hp_udp_sock *u;
    };
};

#define MAX_LISTEN 64

struct mpair {
    struct hp_pool *pool; /* mem, afpacket, tap: both links'; afxdp: NULL (UMEMs) */
    struct rr_net *net;   /* real links: where they live; mem: NULL */
    struct hp_link *e[2];
    struct hp_stack *st[2]; /* 0: client, 1: server */
    struct hp_tcp_sock *lis[MAX_LISTEN];
    unsigned nlis;
    struct mflow listag;
    struct mflow *cli, *srv;
    unsigned n, accepted;
};

struct mworker {
    const struct rr_opts *o;
    struct mpair *p;
    bool client;
    int cpu;
    _Atomic int *phase;
    uint64_t txns, timeouts, errors;
    uint64_t timeout_ticks;
    unsigned ramped; /* client: flows whose first request has gone */
    uint8_t *buf;
    struct hb_window win; /* the measured window: n[RR_TXNS], n[RR_TIMEOUTS] */
    struct rr_hist hist;
};

static unsigned pow2_at_least(unsigned v)
{
    unsigned p = 1;
    while (p < v && p < (1u << 30))
        p <<= 1;
    return p;
}

static void pair_free(struct mpair *p)
{
    for (int i = 0; i < 2; i++)
        hp_stack_destroy(p->st[i]);
    for (int i = 0; i < 2; i++)
        if (p->e[i])
            hp_pool_thread_flush(hp_link_pool(p->e[i]));
    if (p->pool)
        hp_pool_thread_flush(p->pool);
    if (p->net) {
        rr_net_close(p->net, p->e);
    } else {
        hp_link_close(p->e[0]);
        hp_link_close(p->e[1]);
    }
    if (p->pool)
        hp_pool_destroy(p->pool);
    free(p->cli);
    free(p->srv);
    memset(p, 0, sizeof *p);
}

static void drain_events(struct hp_stack *s)
{
    struct hp_event ev[EV_BATCH];
    while (hp_stack_events(s, ev, EV_BATCH) == EV_BATCH)
        ;
}

/* Resolve each side's neighbour before the flows start, so that thousands of
 * first packets do not wait in (and overflow) the neighbour queue. */
static int pair_resolve(struct mpair *p, int fam, char *why, size_t len)
{
    enum hp_stack_ctr reps =
        fam == HP_AF_INET6 ? HP_CTR_ICMP6_IN_ECHO_REPS : HP_CTR_ICMP_IN_ECHO_REPS;
    double deadline = tool_now_s() + 5;
    uint16_t seq = 0;
    double next = 0;
    while (hp_stack_counter(p->st[0], reps) == 0 || hp_stack_counter(p->st[1], reps) == 0) {
        double now = tool_now_s();
        if (now > deadline) {
            snprintf(why, len, "the two stacks cannot reach each other (no echo reply in 5 s)");
            return -1;
        }
        if (now >= next) {
            hp_stack_ping(p->st[0], fam, fam == HP_AF_INET6 ? SRV6 : SRV4, 1, seq, 8);
            hp_stack_ping(p->st[1], fam, fam == HP_AF_INET6 ? CLI6 : CLI4, 1, seq, 8);
            seq++;
            next = now + 0.2;
        }
        for (int i = 0; i < 2; i++) {
            hp_stack_poll(p->st[i]);
            drain_events(p->st[i]);
        }
    }
    return 0;
}

/* IPv6 addresses on the user's interfaces go through duplicate address
 * detection first (RFC 4862 5.4): a connection from a tentative address
 * fails. Poll both stacks until both addresses are preferred. */
static int pair_wait_dad(struct mpair *p, const int ifx[2], char *why, size_t len)
{
    double deadline = tool_now_s() + 10;
    for (;;) {
        enum hp_addr_state st[2];
        for (int i = 0; i < 2; i++)
            st[i] = hp_stack_addr_state(p->st[i], ifx[i], HP_AF_INET6, i ? SRV6 : CLI6);
        if (st[0] == HP_ADDR_PREFERRED && st[1] == HP_ADDR_PREFERRED)
            return 0;
        for (int i = 0; i < 2; i++)
            if (st[i] == HP_ADDR_DUPLICATE) {
                snprintf(why, len, "%s is already in use on %s (duplicate address detection)",
                         i ? "2001:2::2" : "2001:2::1", hp_link_name(p->e[i]));
                return -1;
            }
        if (tool_now_s() > deadline) {
            snprintf(why, len,
                     "duplicate address detection of 2001:2::1 and 2001:2::2 did not end in 10 s");
            return -1;
        }
        int work = 0;
        for (int i = 0; i < 2; i++) {
            work += hp_stack_poll(p->st[i]);
            drain_events(p->st[i]);
        }
        if (!work)
            hb_sleep(0.001);
    }
}

/* Pair k of n flows: its two links (mem: a pair; real: from net), two
 * stacks with an address each, neighbours resolved. */
static int pair_open(const struct rr_opts *o, struct rr_net *net, unsigned k, struct mpair *p,
                     unsigned n, struct rr_result *r, char *why, size_t len)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->net = net;
    int fam = o->ipv6 ? HP_AF_INET6 : HP_AF_INET4;
    p->cli = calloc(n, sizeof *p->cli);
    p->srv = calloc(n, sizeof *p->srv);
    if (!p->cli || !p->srv) {
        snprintf(why, len, "cannot allocate %u flows", n);
        return -1;
    }
    if (net) {
        if (rr_net_open(o, net, k, n, p->e, &p->pool, r) < 0)
            return -1;
    } else {
        uint32_t nbufs = 4 * n + 8192;
        uint32_t ring = pow2_at_least(2 * n + 1024);
        if (ring < 1024)
            ring = 1024;
        r->pool_bufs = nbufs;
        r->ring_size = ring;
        /* Faulted in now: with transparent huge pages, a buffer's first use
         * in the run cleared 2 MiB, and at 150,000 flows and more the first
         * requests' burst then outlasted the RTO (docs/experiments.md). */
        struct hp_pool_config pc = {.name = "rr", .n_bufs = nbufs, .flags = HP_POOL_F_POPULATE};
        p->pool = hp_pool_create(&pc);
        if (!p->pool) {
            snprintf(why, len, "cannot allocate %u buffers and %u flows", nbufs, n);
            return -1;
        }
        struct hp_link_config lc = {.pool = p->pool, .ring_size = ring};
        if (strcmp(o->link, "memif") == 0) {
            /* memif rings hold at most 16384 entries. */
            lc.ring_size = r->ring_size = ring > 16384 ? 16384 : ring;
            if (memifopt_pair(&o->memif, k, &lc, p->e, why, len) < 0)
                return -1;
        } else if (hp_link_mem_pair(&lc, p->e) < 0) {
            snprintf(why, len, "mem pair: %s", hp_link_error());
            return -1;
        }
    }
    /* DAD is skipped where nobody else can be: on the mem pair, and in the
     * namespace made for the run. */
    bool dad = net && !net->own && fam == HP_AF_INET6;
    struct hp_tcp_config tc = {.max_conns = n + 1024,
                               .sndbuf = o->sockbuf,
                               .rcvbuf = o->sockbuf,
                               .syn_backlog_max = n + 1024 > 65535 ? 65535 : n + 1024,
                               .early_demux_conns = o->early_demux,
                               .rto_min_ms = o->rto_min_ms,
                               .cc = (uint8_t)o->cc};
    int ifx[2];
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config sc = {.name = i ? "rr-server" : "rr-client",
                                     .flags = dad ? 0 : HP_STACK_F_NO_DAD,
                                     .neigh_queue = 4096,
                                     .neigh_reachable_ms = 3600u * 1000u};
        p->st[i] = hp_stack_create(&sc);
        ifx[i] = p->st[i] ? hp_stack_add_iface(p->st[i], p->e[i]) : -ENOMEM;
        const uint8_t *a = fam == HP_AF_INET6 ? (i ? SRV6 : CLI6) : (i ? SRV4 : CLI4);
        int rc = ifx[i] < 0
                     ? ifx[i]
                     : hp_stack_add_addr(p->st[i], ifx[i], fam, a, fam == HP_AF_INET6 ? 64 : 24);
        if (rc == 0) /* UDP too: early_demux_conns also counts bound UDP sockets */
            rc = hp_tcp_configure(p->st[i], &tc);
        if (rc < 0) {
            snprintf(why, len, "cannot set up the %s stack: %s", i ? "server" : "client",
                     hp_strerror(rc));
            return -1;
        }
    }
    if (dad && pair_wait_dad(p, ifx, why, len) < 0)
        return -1;
    return pair_resolve(p, fam, why, len);
}

static void set_addr(struct hp_sockaddr *a, int fam, bool server, uint16_t port)
{
    memset(a, 0, sizeof *a);
    a->family = (uint8_t)fam;
    a->port = port;
    if (fam == HP_AF_INET6)
        memcpy(a->addr, server ? SRV6 : CLI6, 16);
    else
        memcpy(a->addr, server ? SRV4 : CLI4, 4);
}

static void pair_accept(struct mpair *p)
{
    for (unsigned l = 0; l < p->nlis; l++) {
        while (p->accepted < p->n) {
            struct mflow *f = &p->srv[p->accepted];
            f->kind = F_SRV;
            f->t = hp_tcp_accept(p->lis[l], f, NULL);
            if (!f->t)
                break;
            hp_tcp_setopt(f->t, HP_TCP_OPT_NODELAY, 1);
            f->up = true;
            p->accepted++;
        }
    }
}

/* Listen on several ports and connect every flow, SETUP_BATCH handshakes at
 * a time, polling both stacks on this thread. */
static int pair_connect_tcp(const struct rr_opts *o, struct mpair *p, struct rr_result *r,
                            char *why, size_t len)
{
    int fam = o->ipv6 ? HP_AF_INET6 : HP_AF_INET4;
    /* Ephemeral ports are 49152-65535 per destination: keep well under
     * 16384 connections per listening port. */
    p->nlis = 4 + p->n / 8000;
    if (p->nlis > MAX_LISTEN)
        p->nlis = MAX_LISTEN;
    r->listen_ports = p->nlis;
    p->listag.kind = F_LIS;
    int backlog = (int)(p->n + 1024 > 65535 ? 65535 : p->n + 1024);
    for (unsigned l = 0; l < p->nlis; l++) {
        struct hp_sockaddr a;
        set_addr(&a, fam, true, (uint16_t)(TCP_PORT0 + l));
        p->lis[l] = hp_tcp_open(p->st[1], fam, &p->listag);
        int rc = p->lis[l] ? hp_tcp_bind(p->lis[l], &a) : -errno;
        if (rc == 0)
            rc = hp_tcp_listen(p->lis[l], backlog);
        if (rc < 0) {
            snprintf(why, len, "listen on port %u: %s", TCP_PORT0 + l, hp_strerror(rc));
            return -1;
        }
    }
    unsigned started = 0, estab = 0;
    double deadline = tool_now_s() + 60;
    struct hp_event ev[EV_BATCH];
    while (estab < p->n || p->accepted < p->n) {
        if (tool_now_s() > deadline) {
            snprintf(why, len, "only %u of %u flows established (%u accepted) within 60 s", estab,
                     p->n, p->accepted);
            return -1;
        }
        while (started < p->n && started - estab < SETUP_BATCH) {
            struct mflow *f = &p->cli[started];
            f->kind = F_CLI;
            f->t = hp_tcp_open(p->st[0], fam, f);
            if (!f->t) {
                snprintf(why, len, "flow %u: hp_tcp_open: %s", started, hp_strerror(-errno));
                return -1;
            }
            hp_tcp_setopt(f->t, HP_TCP_OPT_NODELAY, 1);
            struct hp_sockaddr to;
            set_addr(&to, fam, true, (uint16_t)(TCP_PORT0 + started % p->nlis));
            int rc = hp_tcp_connect(f->t, &to);
            if (rc != -EINPROGRESS && rc != 0) {
                snprintf(why, len, "flow %u: connect: %s", started, hp_strerror(rc));
                return -1;
            }
            started++;
        }
        hp_stack_poll(p->st[0]);
        int n;
        do {
            n = hp_stack_events(p->st[0], ev, EV_BATCH);
            for (int i = 0; i < n; i++) {
                struct mflow *f = ev[i].user;
                if (!f || f->kind != F_CLI || f->up)
                    continue;
                if (ev[i].events & (HP_EV_ERR | HP_EV_HUP)) {
                    snprintf(why, len, "flow %u: connect failed: %s", (unsigned)(f - p->cli),
                             hp_strerror(hp_tcp_error(f->t)));
                    return -1;
                }
                if (hp_tcp_state(f->t) == HP_TCP_ESTABLISHED) {
                    f->up = true;
                    estab++;
                }
            }
        } while (n == EV_BATCH);
        hp_stack_poll(p->st[1]);
        drain_events(p->st[1]);
        pair_accept(p);
    }
    return 0;
}

static int pair_open_udp(const struct rr_opts *o, struct mpair *p, char *why, size_t len)
{
    int fam = o->ipv6 ? HP_AF_INET6 : HP_AF_INET4;
    if (UDP_PORT0 + p->n > 65535) {
        snprintf(why, len,
                 "UDP: %u flows on one stack pair need more than 64511 ports: add --threads", p->n);
        return -1;
    }
    for (unsigned i = 0; i < p->n; i++) {
        uint16_t port = (uint16_t)(UDP_PORT0 + i);
        struct hp_sockaddr ca, sa;
        set_addr(&ca, fam, false, port);
        set_addr(&sa, fam, true, port);
        struct mflow *c = &p->cli[i], *s = &p->srv[i];
        c->kind = F_CLI;
        s->kind = F_SRV;
        c->u = hp_udp_open(p->st[0], fam, c);
        s->u = hp_udp_open(p->st[1], fam, s);
        int rc = c->u && s->u ? 0 : -errno;
        if (rc == 0)
            rc = hp_udp_bind(c->u, &ca);
        if (rc == 0)
            rc = hp_udp_bind(s->u, &sa);
        if (rc == 0)
            rc = hp_udp_connect(c->u, &sa);
        if (rc == 0)
            rc = hp_udp_connect(s->u, &ca);
        if (rc < 0) {
            snprintf(why, len, "UDP flow %u: %s", i, hp_strerror(rc));
            return -1;
        }
        c->up = s->up = true;
    }
    p->accepted = p->n;
    return 0;
}

/* ---- the workers ---------------------------------------------------------------------- */

static void m_push(struct mworker *w, struct mflow *f)
{
    while (f->tosend) {
        long n = hp_tcp_send(f->t, w->buf, f->tosend);
        if (n > 0) {
            f->tosend -= (uint32_t)n;
        } else {
            if (n != -EAGAIN) {
                f->dead = true;
                f->tosend = 0;
                w->errors++;
            }
            return;
        }
    }
}

static void m_request(struct mworker *w, struct mflow *f)
{
    f->got = 0;
    f->t0 = tool_ticks();
    if (w->o->udp) {
        if (hp_udp_sendto(f->u, w->buf, w->o->request, NULL) < 0)
            w->errors++; /* resent by the timeout */
        return;
    }
    f->tosend = w->o->request;
    m_push(w, f);
}

static void m_done(struct mworker *w, struct mflow *f, bool measuring)
{
    if (measuring)
        rr_hist_add(&w->hist, tool_ticks() - f->t0);
    w->txns++;
    m_request(w, f);
}

static void m_tcp_in(struct mworker *w, struct mflow *f, bool measuring)
{
    for (;;) {
        long n = hp_tcp_recv(f->t, w->buf, SCRATCH);
        if (n == -EAGAIN)
            return;
        if (n <= 0) {
            f->dead = true;
            w->errors++;
            return;
        }
        f->got += (uint32_t)n;
        if (w->client) {
            if (f->got >= w->o->response)
                m_done(w, f, measuring);
        } else {
            while (f->got >= w->o->request) {
                f->got -= w->o->request;
                f->tosend += w->o->response;
                w->txns++;
            }
            m_push(w, f);
        }
    }
}

static void m_udp_in(struct mworker *w, struct mflow *f, bool measuring)
{
    for (;;) {
        int n = hp_udp_recvfrom(f->u, w->buf, SCRATCH, NULL);
        if (n < 0)
            return;
        if (w->client) {
            m_done(w, f, measuring);
        } else {
            w->txns++;
            if (hp_udp_sendto(f->u, w->buf, w->o->response, NULL) < 0)
                w->errors++;
        }
    }
}

/* UDP: a request unanswered for a second is sent again (counted). */
static void m_udp_timeouts(struct mworker *w)
{
    uint64_t now = tool_ticks();
    for (unsigned i = 0; i < w->ramped; i++) {
        struct mflow *f = &w->p->cli[i];
        if (now - f->t0 > w->timeout_ticks) {
            w->timeouts++;
            m_request(w, f);
        }
    }
}

static void *m_worker(void *arg)
{
    struct mworker *w = arg;
    if (w->cpu >= 0)
        tool_pin(w->cpu);
    struct hp_stack *st = w->p->st[w->client ? 0 : 1];
    hb_window_init(&w->win);
    struct hp_event ev[EV_BATCH];
    uint64_t next_scan = tool_ticks() + w->timeout_ticks / 10;
    unsigned idle = 0;
    for (unsigned iter = 0;; iter++) {
        if ((iter & 63) == 0) {
            int ph = atomic_load_explicit(w->phase, memory_order_acquire);
            uint64_t counts[2] = {[RR_TXNS] = w->txns, [RR_TIMEOUTS] = w->timeouts};
            if (hb_window_watch(&w->win, ph, counts, 2))
                break;
            if (w->o->udp && w->client && tool_ticks() > next_scan) {
                m_udp_timeouts(w);
                next_scan = tool_ticks() + w->timeout_ticks / 10;
            }
        }
        bool measuring = w->win.seen == HB_MEASURE;
        /* The first requests RAMP_STEP at a time between polls: all at once,
         * 200,000 sends kept this thread from its answers for longer than
         * the server's tail loss probe waits (200 ms), and every flow's
         * answer went twice. */
        if (w->client)
            for (unsigned k = 0; k < RAMP_STEP && w->ramped < w->p->n; k++)
                m_request(w, &w->p->cli[w->ramped++]);
        /* Idle for a while: let a partner sharing this CPU (or anything else
         * there) run, rather than spin out a whole time slice. */
        if (hp_stack_poll(st) == 0 && ++idle >= 256) {
            idle = 0;
            sched_yield();
        }
        int n;
        do {
            n = hp_stack_events(st, ev, EV_BATCH);
            for (int i = 0; i < n; i++) {
                struct mflow *f = ev[i].user;
                if (!f || f->kind == F_LIS || f->dead)
                    continue;
                if (w->o->udp) {
                    if (ev[i].events & HP_EV_IN)
                        m_udp_in(w, f, measuring);
                    continue;
                }
                if (ev[i].events & (HP_EV_IN | HP_EV_ERR | HP_EV_HUP))
                    m_tcp_in(w, f, measuring);
                if ((ev[i].events & HP_EV_OUT) && f->tosend && !f->dead)
                    m_push(w, f);
            }
        } while (n == EV_BATCH);
    }
    hp_pool_thread_flush(w->p->pool);
    hp_thread_exit();
    return NULL;
}

/* Every stack pair opened and its flows up; *opened counts the pairs to
 * free. 0, or -1 with r->note. */
static int open_pairs(const struct rr_opts *o, struct rr_net *net, struct mpair *pairs,
                      unsigned *opened, struct rr_result *r)
{
    for (unsigned k = 0; k < o->threads; k++) {
        struct mpair *p = &pairs[k];
        unsigned n = rr_flows_of(o->flows, o->threads, k);
        *opened = k + 1;
        if (pair_open(o, net, k, p, n, r, r->note, sizeof r->note) < 0 ||
            (o->udp ? pair_open_udp(o, p, r->note, sizeof r->note)
                    : pair_connect_tcp(o, p, r, r->note, sizeof r->note)) < 0)
            return -1;
        r->flows_reached += p->accepted;
        r->max_conns = o->udp ? 0 : n + 1024;
        struct hp_tcp_config tc;
        hp_tcp_get_config(p->st[0], &tc);
        r->early_demux = tc.early_demux_conns;
        r->rto_min_ms = tc.rto_min_ms;
    }
    return 0;
}

static void cg_open(void)
{
    RR_CG_WINDOW_OPEN();
}

static void cg_close(void)
{
    RR_CG_WINDOW_CLOSE();
}

/* A client and a server thread per pair, through warm-up and the window.
 * 0, or -1 with r->note when the threads could not all start. */
static int run_workers(const struct rr_opts *o, struct mpair *pairs, struct mworker *w,
                       uint8_t *bufs, struct rr_result *r)
{
    unsigned T = o->threads, started = 0;
    pthread_t *th = calloc(2 * (size_t)T, sizeof *th);
    _Atomic int phase;
    atomic_init(&phase, HB_SETUP);
    for (unsigned k = 0; k < 2 * T; k++) {
        struct mworker *x = &w[k];
        x->o = o;
        x->p = &pairs[k / 2];
        x->client = (k % 2) == 1; /* servers start first */
        x->cpu = rr_cpu_of(o, k / 2, x->client);
        x->phase = &phase;
        x->buf = bufs + (size_t)k * SCRATCH;
        x->timeout_ticks = (uint64_t)(r->ticks_per_us * 1e6);
    }
    for (; th && started < 2 * T; started++)
        if (pthread_create(&th[started], NULL, m_worker, &w[started]) != 0)
            break;
    if (started == 2 * T)
        r->seconds = hb_phases_run(&phase, o->warm, o->duration, cg_open, cg_close);
    else
        snprintf(r->note, sizeof r->note, "cannot start the threads");
    atomic_store_explicit(&phase, HB_STOP, memory_order_release);
    for (unsigned k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    free(th);
    return started == 2 * T ? 0 : -1;
}

/* The workers' windows and the links' drops into r (the workers are done
 * with the links: this thread may read them). */
static void collect(const struct rr_opts *o, const struct mpair *pairs, const struct mworker *w,
                    struct rr_result *r)
{
    uint64_t errors = 0;
    for (unsigned k = 0; k < 2 * o->threads; k++) {
        if (w[k].client) {
            r->txns += w[k].win.n[RR_TXNS];
            r->timeouts += w[k].win.n[RR_TIMEOUTS];
            r->cpu_client_s += w[k].win.cpu_s;
            rr_hist_merge(&r->hist, &w[k].hist);
        } else {
            r->served += w[k].win.n[RR_TXNS];
            r->cpu_server_s += w[k].win.cpu_s;
        }
        errors += w[k].errors;
    }
    for (unsigned k = 0; k < o->threads; k++)
        for (int i = 0; i < 2; i++) {
            struct hp_link_stats ls;
            hp_link_stats(pairs[k].e[i], &ls);
            r->link_rx_dropped += ls.rx_dropped;
            r->link_tx_dropped += ls.tx_dropped;
            r->eth_out_drops += hp_stack_counter(pairs[k].st[i], HP_CTR_ETH_OUT_DROPS);
            r->retrans_segs += hp_stack_counter(pairs[k].st[i], HP_CTR_TCP_RETRANS_SEGS);
            r->rto_timeouts += hp_stack_counter(pairs[k].st[i], HP_CTR_TCP_TIMEOUTS);
            r->tlp_probes += hp_stack_counter(pairs[k].st[i], HP_CTR_TCP_TLP_PROBES);
            r->no_buffers += hp_stack_counter(pairs[k].st[i], HP_CTR_NO_BUFFERS);
        }
    if (errors && !o->udp)
        snprintf(r->note, sizeof r->note, "%llu socket errors during the run",
                 (unsigned long long)errors);
}

int rr_mem_run(const struct rr_opts *o, struct rr_result *r)
{
    unsigned T = o->threads, opened = 0;
    struct mpair *pairs = calloc(T, sizeof *pairs);
    struct mworker *w = calloc(2 * (size_t)T, sizeof *w);
    uint8_t *bufs = malloc(2 * (size_t)T * SCRATCH);
    struct rr_net netb, *net = NULL;
    int rc = -1;
    if (!pairs || !w || !bufs) {
        snprintf(r->note, sizeof r->note, "out of memory");
        goto out;
    }
    memset(bufs, 'r', 2 * (size_t)T * SCRATCH);
    double t_setup = tool_now_s();
    if (!rr_in_process(o)) {
        if (rr_net_up(o, rr_flows_of(o->flows, T, 0), &netb, r) < 0)
            goto out;
        net = &netb;
    }
    if (open_pairs(o, net, pairs, &opened, r) < 0)
        goto out;
    r->setup_s = tool_now_s() - t_setup;
    r->ticks_per_us = rr_ticks_per_us();
    if (run_workers(o, pairs, w, bufs, r) == 0) {
        collect(o, pairs, w, r);
        rc = 0;
    }
out:
    for (unsigned k = 0; k < opened; k++)
        pair_free(&pairs[k]);
    if (net)
        rr_net_down(net);
    free(bufs);
    free(w);
    free(pairs);
    return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

static void usage_head(FILE *f)
{
    fprintf(f, "usage: hotpath rr [OPTIONS]\n"
               "\n"
               "Request/response transactions over many flows, like neper's tcp_rr and udp_rr.\n"
               "Each flow keeps exactly one transaction outstanding: the client sends a request,\n"
               "the server answers once it has the whole request, the client sends the next\n"
               "request once it has the whole response. Every flow is established before a\n"
               "warm-up; transactions are counted over the measured window that follows.\n"
               "\n");
}

static void usage(FILE *f)
{
    usage_head(f);
    fprintf(f,
            "  --proto tcp|udp   protocol (default tcp)\n"
            "  --link KIND       mem (default): a client and a server hotpath stack over an\n"
            "                    in-memory link pair, each busy-polled by its own thread;\n"
            "                    memif: the same over a memif link (shared memory; both\n"
            "                    ends in this process, on abstract sockets unless\n"
            "                    --memif-socket PATH gives a base path, --memif-id N the\n"
            "                    id, --memif-secret S a secret both ends use);\n"
            "                    afxdp, afpacket, tap: the same two stacks and threads over a\n"
            "                    real link through the kernel: a veth pair (afxdp in copy\n"
            "                    mode, afpacket), or two tap devices on a Linux bridge (tap);\n"
            "                    kernel: Linux sockets over loopback with epoll, the client\n"
            "                    and the server in separate processes\n"
            "  --iface A         afxdp, afpacket, tap: the client stack's interface, and\n"
            "  --peer-iface B    the server stack's, which must exist and be joined (a veth\n"
            "                    pair; taps made with `ip tuntap add` on one bridge); the\n"
            "                    kernel must not own 198.18.0.1-2 or 2001:2::1-2 there.\n"
            "                    Without them rr makes a network namespace hp-rr-PID with a\n"
            "                    veth pair rrcK/rrsK (or a bridge rrbrK with taps rrcK/rrsK)\n"
            "                    per thread pair, kernel IPv6 off and no kernel address, and\n"
            "                    removes it at exit and on SIGINT/SIGTERM (needs root)\n"
            "  --flows N         flows (default 1, up to %u)\n"
            "  --threads T       hotpath: T client/server stack pairs (with --iface: 1);\n"
            "                    kernel: T client and T server threads; flows are sharded\n"
            "                    over them (default 1)\n"
            "  --request B       request bytes (default 1; 64Ki style suffixes work)\n"
            "  --response B      response bytes (default 1)\n"
            "  --duration S      measured seconds (default 5), after a warm-up of\n"
            "                    min(1, S/5) seconds\n"
            "  --ipv6            IPv6 (hotpath: 2001:2::1 -> 2001:2::2, IPv4 198.18.0.1 ->\n"
            "                    198.18.0.2; kernel: ::1). Duplicate address detection is\n"
            "                    skipped on mem and in rr's namespace, run with --iface\n"
            "  --sockbuf B       hotpath TCP: send and receive buffer of every connection\n"
            "                    (default 16Ki: bounds the memory of 30,000 flows)\n"
            "  --early-demux N   hotpath: demultiplex receive bursts early (prefetching the\n"
            "                    connections or sockets) from N TCP connections, or N\n"
            "                    bound UDP sockets, per stack on, or 'off' (default: the\n"
            "                    library's, 16384)\n"
            "  --cc ALGO         hotpath TCP: cubic (default) or newreno\n"
            "  --rto-min MS      hotpath TCP: the retransmission timeout's lower bound\n"
            "                    (default the library's, 200 ms; at most 60000). Under\n"
            "                    valgrind, where a transaction takes a hundred times longer,\n"
            "                    a larger bound keeps the timer firing as rarely per\n"
            "                    transaction as in a native run (scripts/rr_cachesim.py)\n"
            "  --cpu LIST        pin the threads, client and server alternating over LIST\n"
            "                    (e.g. 0,1 or 0-3): client 0, server 0, client 1, ...\n"
            "  --json            one JSON object: proto, link, flows, tps, cpu_s_per_txn,\n"
            "                    p50_us, p99_us and more\n"
            "\n"
            "Reports transactions per second, CPU seconds per transaction (the thread CPU\n"
            "time of every client and server thread over the window, divided by the\n"
            "transactions) and the latency of a transaction (request sent to whole\n"
            "response) at the 50th and 99th percentiles, from per-thread histograms.\n"
            "\n"
            "Ports: one client address reaches one server port from at most 16,384\n"
            "ephemeral ports (hotpath: 49152-65535; Linux: 32768-60999), so TCP servers\n"
            "listen on several ports (hotpath: 4 + flows/8000 per stack pair from %d; kernel:\n"
            "8 per server thread, kernel-chosen) and the flows are spread over them; the\n"
            "kernel's IPv4 clients also bind to 127.0.0.2-127.0.0.17. UDP uses one socket\n"
            "per flow on each side (hotpath: ports %d + i; kernel: ephemeral ports on\n"
            "127.0.1.x / 127.0.2.x). A UDP request without an answer for 1 s is sent\n"
            "again and counted in timeouts. The kernel processes raise RLIMIT_NOFILE (as\n"
            "root, the hard limit too); flows_reached says how many flows were set up.\n"
            "\n"
            "Real links: both stacks compute every checksum in software (AF_XDP carries no\n"
            "checksum status), as on mem. Pools and rings are sized to the flows (afxdp:\n"
            "a UMEM of 2 KiB frames per link); the report names the link and interfaces\n"
            "and counts frames the links and the stacks' transmit rings dropped.\n"
            "\n"
            "Exit status: 0 when transactions completed, 1 on a failure, 2 on a usage\n"
            "error or when the link cannot be used here (not root, AF_XDP not built in or\n"
            "not supported by the kernel).\n",
            MAX_FLOWS, TCP_PORT0, UDP_PORT0);
}

/* What the report computes from a run. */
struct rr_summary {
    double tps, cpt, p50, p99;
    bool real; /* a hotpath run over a real link */
};

static void summarise(const struct rr_opts *o, const struct rr_result *r, struct rr_summary *s)
{
    s->tps = r->seconds > 0 ? (double)r->txns / r->seconds : 0;
    s->cpt = r->txns ? (r->cpu_client_s + r->cpu_server_s) / (double)r->txns : 0;
    s->p50 = rr_hist_quantile(&r->hist, 0.5) / r->ticks_per_us;
    s->p99 = rr_hist_quantile(&r->hist, 0.99) / r->ticks_per_us;
    s->real = rr_hotpath_link(o) && !rr_in_process(o);
}

/* The hotpath stacks' configuration and the real links' interfaces and drops. */
static void json_config(json_t *j, const struct rr_opts *o, const struct rr_result *r, bool real)
{
    if (rr_hotpath_link(o)) {
        json_object_set_new(j, "pool_bufs_per_pair", json_integer(r->pool_bufs));
        if (r->ring_size)
            json_object_set_new(j, "ring_size", json_integer(r->ring_size));
        if (!o->udp) {
            json_object_set_new(j, "sockbuf", json_integer(o->sockbuf));
            json_object_set_new(j, "listen_ports_per_pair", json_integer(r->listen_ports));
            json_object_set_new(j, "max_conns", json_integer(r->max_conns));
        }
        json_object_set_new(j, "early_demux_conns", json_integer(r->early_demux));
        if (!o->udp) {
            json_object_set_new(j, "rto_min_ms", json_integer(r->rto_min_ms));
            json_object_set_new(j, "retrans_segs", json_integer((json_int_t)r->retrans_segs));
            json_object_set_new(j, "rto_timeouts", json_integer((json_int_t)r->rto_timeouts));
            json_object_set_new(j, "tlp_probes", json_integer((json_int_t)r->tlp_probes));
        }
        json_object_set_new(j, "no_buffers", json_integer((json_int_t)r->no_buffers));
    }
    if (real) {
        json_object_set_new(j, "iface", json_string(r->iface));
        json_object_set_new(j, "peer_iface", json_string(r->peer_iface));
        json_object_set_new(j, "netns", json_string(r->netns));
        json_object_set_new(j, "link_rx_dropped", json_integer((json_int_t)r->link_rx_dropped));
        json_object_set_new(j, "link_tx_dropped", json_integer((json_int_t)r->link_tx_dropped));
        json_object_set_new(j, "eth_out_drops", json_integer((json_int_t)r->eth_out_drops));
    }
    if (r->processes) {
        json_object_set_new(j, "processes", json_integer(r->processes));
        json_object_set_new(j, "threads_used", json_integer(r->threads_used));
    }
}

static void print_json(const struct rr_opts *o, const struct rr_result *r,
                       const struct rr_summary *s)
{
    json_t *j = json_pack("{s:s, s:s, s:i, s:o, s:o, s:o, s:o}", "proto", o->udp ? "udp" : "tcp",
                          "link", o->link, "flows", (int)o->flows, "tps", tool_json_num(s->tps, 1),
                          "cpu_s_per_txn", tool_json_sig(s->cpt, 4), "p50_us",
                          tool_json_num(s->p50, 2), "p99_us", tool_json_num(s->p99, 2));
    json_object_set_new(j, "flows_reached", json_integer(r->flows_reached));
    json_object_set_new(j, "threads", json_integer(o->threads));
    json_object_set_new(j, "ipv6", json_boolean(o->ipv6));
    json_object_set_new(j, "request", json_integer(o->request));
    json_object_set_new(j, "response", json_integer(o->response));
    json_object_set_new(j, "transactions", json_integer((json_int_t)r->txns));
    json_object_set_new(j, "served", json_integer((json_int_t)r->served));
    json_object_set_new(j, "timeouts", json_integer((json_int_t)r->timeouts));
    json_object_set_new(j, "seconds", tool_json_num(r->seconds, 3));
    json_object_set_new(j, "warmup_s", tool_json_num(o->warm, 3));
    json_object_set_new(j, "setup_s", tool_json_num(r->setup_s, 3));
    json_object_set_new(j, "cpu_client_s", tool_json_num(r->cpu_client_s, 4));
    json_object_set_new(j, "cpu_server_s", tool_json_num(r->cpu_server_s, 4));
    json_config(j, o, r, s->real);
    json_t *cpus = json_array();
    for (int i = 0; i < o->ncpus; i++)
        json_array_append_new(cpus, json_integer(o->cpus[i]));
    json_object_set_new(j, "cpus", cpus);
    json_object_set_new(j, "layout", json_string(hp_layout_name()));
    json_object_set_new(j, "compiler", json_string(tool_compiler()));
    json_object_set_new(j, "build_flags", json_string(tool_build_flags()));
    json_object_set_new(j, "note", json_string(r->note));
    tool_json_write(j, stdout, false);
    json_decref(j);
}

static void print_config(const struct rr_opts *o, const struct rr_result *r, bool real)
{
    if (real)
        printf("  link             %s: %s <-> %s%s%s%s; drops: link rx %llu, link tx %llu, "
               "transmit ring full "
               "%llu\n",
               o->link, r->iface, r->peer_iface, r->netns[0] ? " in namespace " : "", r->netns,
               r->netns[0] ? (strcmp(o->link, "tap") == 0 ? " (taps on a bridge)" : " (veth)") : "",
               (unsigned long long)r->link_rx_dropped, (unsigned long long)r->link_tx_dropped,
               (unsigned long long)r->eth_out_drops);
    if (rr_hotpath_link(o)) {
        printf("  config           pool %u buffers", r->pool_bufs);
        if (r->ring_size)
            printf(" and rings of %u", r->ring_size);
        printf(" per pair");
        if (!o->udp)
            printf(", sockbuf %u B, %u listening ports, max_conns %u", o->sockbuf, r->listen_ports,
                   r->max_conns);
        printf(", early demux %s", r->early_demux == UINT32_MAX ? "off" : "");
        if (r->early_demux != UINT32_MAX)
            printf("from %u %s", r->early_demux, o->udp ? "bound sockets" : "connections");
        if (!o->udp)
            printf(", rto_min %u ms", r->rto_min_ms);
        printf("\n");
    }
    if (r->processes)
        printf("  processes        %u (client and server; %u threads in all: one process holds at "
               "most\n"
               "                   RLIMIT_NOFILE sockets)\n",
               r->processes, 2 * r->threads_used);
}

static void print_report(const struct rr_opts *o, const struct rr_result *r)
{
    struct rr_summary s;
    summarise(o, r, &s);
    if (o->json) {
        print_json(o, r, &s);
        return;
    }
    printf("hotpath rr: %s over %s, %s, %u flow%s on %u thread%s%s, request %u B, response %u B\n",
           o->udp ? "udp" : "tcp", o->link, o->ipv6 ? "IPv6" : "IPv4", o->flows,
           o->flows == 1 ? "" : "s", o->threads, o->threads == 1 ? "" : "s",
           rr_hotpath_link(o) ? " pair(s)" : " per side", o->request, o->response);
    printf("  flows reached    %u of %u (set up in %.2f s)\n", r->flows_reached, o->flows,
           r->setup_s);
    printf("  transactions     %llu in %.2f s (after %.2f s of warm-up)\n",
           (unsigned long long)r->txns, r->seconds, o->warm);
    printf("  tps              %.0f\n", s.tps);
    printf("  cpu per txn      %.3f us (client %.2f s + server %.2f s of thread CPU time)\n",
           s.cpt * 1e6, r->cpu_client_s, r->cpu_server_s);
    printf("  latency          p50 %.1f us, p99 %.1f us\n", s.p50, s.p99);
    if (o->udp)
        printf("  timeouts         %llu (requests resent after 1 s)\n",
               (unsigned long long)r->timeouts);
    if (r->retrans_segs || r->rto_timeouts || r->tlp_probes || r->no_buffers)
        printf(
            "  recovery         %llu segments retransmitted, %llu timeouts, %llu tail loss "
            "probes,\n                   %llu buffers not allocated (both stacks, the whole run)\n",
            (unsigned long long)r->retrans_segs, (unsigned long long)r->rto_timeouts,
            (unsigned long long)r->tlp_probes, (unsigned long long)r->no_buffers);
    print_config(o, r, s.real);
    printf("  build            %s, %s, layout %s\n", tool_compiler(), tool_build_flags(),
           hp_layout_name());
    if (r->note[0])
        printf("  note             %s\n", r->note);
}

static int parse_uint(const char *opt, const char *arg, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (!*arg || *end || errno || arg[0] == '-' || v < lo || v > hi)
        return tool_usage_error(CMD, "%s wants a number from %u to %u, not '%s'", opt, lo, hi, arg);
    *out = (unsigned)v;
    return 0;
}

static int parse_size(const char *opt, const char *arg, uint32_t lo, uint32_t *out)
{
    uint64_t v;
    if (tool_parse_bytes(arg, &v) < 0 || v < lo || v > MAX_MSG)
        return tool_usage_error(CMD, "%s wants a size from %u to %u bytes, not '%s'", opt, lo,
                                MAX_MSG, arg);
    *out = (uint32_t)v;
    return 0;
}

/* One option of cmd_rr's table into o. 0, or 2 after a usage error. */
static int rr_option(int c, const char *arg, const char *opt, struct rr_opts *o)
{
    static const char *const links[] = {"mem", "memif", "afxdp", "afpacket", "tap", "kernel"};
    char *end;
    switch (c) {
    case 'P':
        if (strcmp(arg, "tcp") != 0 && strcmp(arg, "udp") != 0)
            return tool_usage_error(CMD, "--proto '%s': not tcp or udp", arg);
        o->udp = arg[0] == 'u';
        return 0;
    case 'C':
        if ((o->cc = hp_tcp_cc_by_name(arg)) < 0)
            return tool_usage_error(CMD, "--cc '%s': not cubic or newreno", arg);
        return 0;
    case 'l':
        for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
            if (strcmp(arg, links[i]) == 0) {
                o->link = links[i];
                return 0;
            }
        return tool_usage_error(CMD, "--link '%s': not mem, memif, afxdp, afpacket, tap or kernel",
                                arg);
    case 'i':
    case 'I':
        if (!*arg || strlen(arg) >= IF_NAMESIZE || strchr(arg, '/') || strchr(arg, ' '))
            return tool_usage_error(CMD, "%s '%s' is not an interface name",
                                    c == 'i' ? "--iface" : "--peer-iface", arg);
        *(c == 'i' ? &o->iface : &o->peer_iface) = arg;
        return 0;
    case 'f':
        return parse_uint("--flows", arg, 1, MAX_FLOWS, &o->flows);
    case 't':
        return parse_uint("--threads", arg, 1, RR_MAX_THREADS, &o->threads);
    case 'q':
        return parse_size("--request", arg, 1, &o->request);
    case 'r':
        return parse_size("--response", arg, 1, &o->response);
    case 'b':
        return parse_size("--sockbuf", arg, 2048, &o->sockbuf);
    case 'e':
        if (strcmp(arg, "off") == 0) {
            o->early_demux = UINT32_MAX;
            return 0;
        }
        return parse_uint("--early-demux", arg, 1, 1u << 30, &o->early_demux);
    case 'R':
        return parse_uint("--rto-min", arg, 1, 60000, &o->rto_min_ms);
    case 'd':
        errno = 0;
        o->duration = strtod(arg, &end);
        if (!*arg || *end || errno || !(o->duration >= 0.1 && o->duration <= 3600))
            return tool_usage_error(CMD, "--duration wants seconds from 0.1 to 3600, not '%s'",
                                    arg);
        return 0;
    case '6':
        o->ipv6 = true;
        return 0;
    case 'c': {
        int n = tool_parse_cpu_list(CMD, arg, o->cpus, RR_MAX_CPUS);
        if (n < 0)
            return 2;
        o->ncpus = n;
        return 0;
    }
    case 'j':
        o->json = true;
        return 0;
    default: {
        int rc = memifopt_parse(CMD, &o->memif, c, arg);
        return rc == 1 ? tool_usage_error(CMD, "unknown option '%s'", opt) : rc;
    }
    }
}

/* --iface and --peer-iface: both or neither, for real links, existing. */
static int rr_check_ifaces(const struct rr_opts *o)
{
    bool real = rr_hotpath_link(o) && !rr_in_process(o);
    if ((o->iface || o->peer_iface) && !real)
        return tool_usage_error(
            CMD, "--iface and --peer-iface are for --link afxdp, afpacket or tap, not %s", o->link);
    if (o->iface && !o->peer_iface)
        return tool_usage_error(
            CMD,
            "--iface %s needs --peer-iface: the server stack's interface, joined to it "
            "(the other end of a veth pair, or a tap on the same bridge)",
            o->iface);
    if (o->peer_iface && !o->iface)
        return tool_usage_error(CMD, "--peer-iface %s needs --iface: the client stack's interface",
                                o->peer_iface);
    if (o->iface && strcmp(o->iface, o->peer_iface) == 0)
        return tool_usage_error(
            CMD, "--iface and --peer-iface are both %s: each stack needs its own", o->iface);
    if (o->iface && o->threads > 1)
        return tool_usage_error(
            CMD, "--iface and --peer-iface carry one stack pair: --threads 1, or let rr make "
                 "a veth pair or bridge per thread (no --iface)");
    for (int i = 0; o->iface && i < 2; i++) {
        const char *name = i ? o->peer_iface : o->iface;
        if (if_nametoindex(name) == 0)
            return tool_usage_error(CMD, "%s %s: no such interface in this network namespace%s",
                                    i ? "--peer-iface" : "--iface", name,
                                    strcmp(o->link, "tap") == 0
                                        ? " (make both taps first, on one bridge: "
                                          "ip tuntap add dev NAME mode tap; "
                                          "ip link set NAME master BRIDGE up)"
                                        : "");
    }
    return 0;
}

/* The checks once every option is in. 0, or 2 after a usage error. */
static int rr_check(const struct rr_opts *o)
{
    if (o->memif.role != HP_MEMIF_CLIENT)
        return tool_usage_error(CMD, "--memif-role: rr runs both ends of the memif link itself");
    if (o->memif.given && strcmp(o->link, "memif") != 0)
        return tool_usage_error(
            CMD, "--memif-socket, --memif-id and --memif-secret are for --link memif");
    if (o->threads > o->flows)
        return tool_usage_error(CMD, "--threads %u is more than --flows %u", o->threads, o->flows);
    if (rr_check_ifaces(o))
        return 2;
    if (o->rto_min_ms && (o->udp || !rr_hotpath_link(o)))
        return tool_usage_error(CMD, "--rto-min is for hotpath's TCP, not %s",
                                o->udp ? "UDP" : "the kernel's");
    unsigned max_udp = o->ipv6 ? 65487u : 65507u;
    if (o->udp && (o->request > max_udp || o->response > max_udp))
        return tool_usage_error(CMD, "UDP messages are at most %u bytes", max_udp);
    return 0;
}

int cmd_rr(int argc, char **argv)
{
    struct rr_opts o = {.link = "mem",
                        .flows = 1,
                        .threads = 1,
                        .request = 1,
                        .response = 1,
                        .duration = 5,
                        .sockbuf = 16384};
    static const struct option lo[] = {
        {"proto", required_argument, NULL, 'P'},
        {"link", required_argument, NULL, 'l'},
        {"flows", required_argument, NULL, 'f'},
        {"threads", required_argument, NULL, 't'},
        {"request", required_argument, NULL, 'q'},
        {"response", required_argument, NULL, 'r'},
        {"duration", required_argument, NULL, 'd'},
        {"ipv6", no_argument, NULL, '6'},
        {"cpu", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"sockbuf", required_argument, NULL, 'b'},
        {"help", no_argument, NULL, 'h'},
        {"early-demux", required_argument, NULL, 'e'},
        {"rto-min", required_argument, NULL, 'R'},
        {"iface", required_argument, NULL, 'i'},
        {"peer-iface", required_argument, NULL, 'I'},
        {"cc", required_argument, NULL, 'C'},
        MEMIFOPT_LONGOPTS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (rr_option(c, optarg, argv[optind - 1], &o))
            return 2;
    }
    if (optind < argc)
        return tool_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (rr_check(&o))
        return 2;
    o.warm = o.duration / 5 < 1 ? o.duration / 5 : 1;
    struct rr_result *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "hotpath rr: out of memory\n");
        return 1;
    }
    int rc = rr_hotpath_link(&o) ? rr_mem_run(&o, r) : rr_kernel_run(&o, r);
    if (rc < 0) {
        fprintf(stderr, "hotpath rr: %s\n", r->note[0] ? r->note : "failed");
        int ret = r->unavailable ? 2 : 1;
        free(r);
        return ret;
    }
    print_report(&o, r);
    int ret = r->txns > 0 ? 0 : 1;
    if (ret)
        fprintf(stderr, "hotpath rr: no transaction completed%s%s\n", r->note[0] ? ": " : "",
                r->note);
    free(r);
    return ret;
}
