/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench udp-echo`: UDP echo, two stacks over the mem link, and over veth hotpath serve against the kernel's own echo server. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "bench_udp.h"
#include "bench.h"
#include "tool.h"
#include "udp_kernel.h"

#define ECHO_PORT 7

static const uint8_t CLI4[4] = {198, 18, 0, 1}, SRV4[4] = {198, 18, 0, 2};

enum { PH_WARM = 0, PH_MEASURE = 1, PH_STOP = 2 };

struct server {
    struct hp_stack *s;
    struct hp_udp_sock *u;
    struct hp_pool *pool;
    int cpu;
    _Atomic int phase;
    double cpu_s;        /* CPU time of the measured interval */
    uint64_t echoed;
};

/* Echo whatever is queued: the received buffer goes straight back. */
static uint64_t echo_all(struct hp_udp_sock *u)
{
    uint64_t n = 0;
    struct hp_buf *b;
    struct hp_sockaddr from;
    while (hp_udp_recv_buf(u, &b, &from) >= 0) {
        if (hp_udp_send_buf(u, b, &from) < 0)
            hp_buf_free(b);
        n++;
    }
    return n;
}

static void *server_main(void *arg)
{
    struct server *sv = arg;
    if (sv->cpu >= 0)
        tool_pin(sv->cpu);
    double c0 = 0;
    int seen = PH_WARM;
    for (;;) {
        int ph = atomic_load_explicit(&sv->phase, memory_order_acquire);
        if (ph != seen) {
            if (ph == PH_MEASURE)
                c0 = tool_thread_cpu_s();
            if (ph == PH_STOP) {
                sv->cpu_s = seen == PH_MEASURE ? tool_thread_cpu_s() - c0 : 0;
                break;
            }
            seen = ph;
        }
        hp_stack_poll(sv->s);
        sv->echoed += echo_all(sv->u);
    }
    /* Give this thread's cached buffers back before the pool is checked. */
    hp_pool_thread_flush(sv->pool);
    hp_thread_exit();
    return NULL;
}

struct client {
    struct hp_stack *s;
    struct hp_udp_sock *u;
    struct hp_sockaddr to;
    const struct udp_echo_opts *o;
    unsigned window;
    unsigned in_flight;
    uint64_t echoes, lost;
    double last_echo;
    uint8_t payload[9000];
};

/* Top the window up, poll, count echoes. */
static void client_step(struct client *c, double t)
{
    while (c->in_flight < c->window) {
        int rc = hp_udp_sendto(c->u, c->payload, c->o->payload, &c->to);
        if (rc < 0)
            break;
        c->in_flight++;
    }
    hp_stack_poll(c->s);
    struct hp_buf *b;
    while (hp_udp_recv_buf(c->u, &b, NULL) >= 0) {
        hp_buf_free(b);
        c->echoes++;
        if (c->in_flight)
            c->in_flight--;
        c->last_echo = t;
    }
    /* A datagram lost on the way (a full ring, a neighbour queue during
     * resolution) would shrink the window for good: after a stall, start
     * the window again. */
    if (c->in_flight && t - c->last_echo > 0.02) {
        c->lost += c->in_flight;
        c->in_flight = 0;
        c->last_echo = t;
    }
}

int udp_echo_run(const struct udp_echo_opts *o, struct udp_echo_result *r)
{
    memset(r, 0, sizeof *r);
    struct hp_link *e[2] = {NULL, NULL};
    struct hp_stack *st[2] = {NULL, NULL};
    struct hp_link_config lc = {.ring_size = 1024};
    if (o->window < 1 || o->window > 1024 || o->payload > 1472) {
        snprintf(r->why, sizeof r->why, "window 1..1024 and payload 0..1472 bytes");
        return -1;
    }
    if (hp_link_mem_pair(&lc, e) < 0) {
        snprintf(r->why, sizeof r->why, "mem pair: %s", hp_link_error());
        return -1;
    }
    struct client *c = calloc(1, sizeof *c);
    struct server sv = {.cpu = o->one_thread ? -1 : o->cpu_server};
    atomic_init(&sv.phase, PH_WARM);
    int rc = -1;
    if (!c) {
        snprintf(r->why, sizeof r->why, "out of memory");
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config sc = {.name = i ? "server" : "client", .flags = HP_STACK_F_NO_DAD};
        st[i] = hp_stack_create(&sc);
        int ifx = st[i] ? hp_stack_add_iface(st[i], e[i]) : -ENOMEM;
        if (ifx < 0 || hp_stack_add_addr(st[i], ifx, 4, i ? SRV4 : CLI4, 24) < 0) {
            snprintf(r->why, sizeof r->why, "cannot set up the %s stack", i ? "server" : "client");
            goto out;
        }
    }
    c->s = st[0];
    c->o = o;
    c->u = hp_udp_open(st[0], 4, NULL);
    sv.s = st[1];
    sv.u = hp_udp_open(st[1], 4, NULL);
    sv.pool = hp_link_pool(e[1]);
    struct hp_sockaddr any = {.family = 4, .port = ECHO_PORT};
    if (!c->u || !sv.u || hp_udp_bind(sv.u, &any) < 0) {
        snprintf(r->why, sizeof r->why, "cannot open the sockets");
        goto out;
    }
    c->to.family = 4;
    c->to.port = ECHO_PORT;
    memcpy(c->to.addr, SRV4, 4);
    for (unsigned i = 0; i < sizeof c->payload; i++)
        c->payload[i] = (uint8_t)i;

    pthread_t th;
    bool threaded = !o->one_thread;
    if (threaded && pthread_create(&th, NULL, server_main, &sv) != 0) {
        snprintf(r->why, sizeof r->why, "cannot start the server thread");
        goto out;
    }
    if (threaded && o->cpu_client >= 0)
        tool_pin(o->cpu_client);

    /* Warm-up: resolve the neighbour with one datagram, then run the
     * window for a short while unmeasured. */
    double t = tool_now_s(), warm_end = t + 0.1 + (o->seconds > 1 ? 0.1 : 0), deadline = t + 5;
    c->window = 1;
    c->last_echo = t;
    while (c->echoes == 0 && t < deadline) {
        client_step(c, t);
        if (!threaded) {
            hp_stack_poll(sv.s);
            echo_all(sv.u);
        }
        t = tool_now_s();
    }
    if (c->echoes == 0) {
        snprintf(r->why, sizeof r->why, "no echo within 5 s");
        if (threaded) {
            atomic_store(&sv.phase, PH_STOP);
            pthread_join(th, NULL);
        }
        goto out;
    }
    c->window = o->window;
    double start = 0, c0 = 0, end = 0;
    bool measuring = false;
    unsigned iter = 0;
    for (;;) {
        if ((++iter & 63) == 0) {
            t = tool_now_s();
            if (!measuring && t >= warm_end) {
                measuring = true;
                start = t;
                c0 = tool_thread_cpu_s();
                c->echoes = c->lost = 0;
                atomic_store_explicit(&sv.phase, PH_MEASURE, memory_order_release);
                end = t + o->seconds;
            } else if (measuring && t >= end) {
                break;
            }
        }
        client_step(c, t);
        if (!threaded) {
            hp_stack_poll(sv.s);
            echo_all(sv.u);
        }
    }
    end = tool_now_s();
    r->echoes = c->echoes;
    r->lost = c->lost;
    double cpu = tool_thread_cpu_s() - c0;
    atomic_store_explicit(&sv.phase, PH_STOP, memory_order_release);
    if (threaded) {
        pthread_join(th, NULL);
        cpu += sv.cpu_s;
    }
    r->seconds = end - start;
    r->echoes_per_s = r->seconds > 0 ? (double)r->echoes / r->seconds : 0;
    r->cpu_ns = r->echoes ? cpu * 1e9 / (double)r->echoes : 0;
    rc = 0;
out:
    if (c && c->u)
        hp_udp_close(c->u);
    if (sv.u)
        hp_udp_close(sv.u);
    hp_stack_destroy(st[0]);
    hp_stack_destroy(st[1]);
    free(c);
    hp_pool_thread_flush(hp_link_pool(e[0]));
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    return rc;
}

static int run_rounds(const struct bench_opts *o, bool one_thread, double *eps, double *ns, char *why,
                      size_t whylen)
{
    int reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    double v[64], w[64];
    int n = tool_ncpus();
    for (int i = 0; i < reps; i++) {
        struct udp_echo_opts u = {.payload = 64, .window = 256, .seconds = o->quick ? 0.3 : 1.0,
                                  .one_thread = one_thread};
        /* Client and server each on a CPU of their own: CPUs 0 and 1, or
         * --cpu and the one before it. */
        u.cpu_client = o->cpu >= 0 ? o->cpu : (n > 1 ? 0 : -1);
        u.cpu_server = n > 1 ? (u.cpu_client + n - 1) % n : -1;
        if (o->cpu < 0 && n > 1)
            u.cpu_server = 1;
        if (one_thread)
            u.cpu_server = -1;
        if (o->progress)
            o->progress(o->progress_ctx, i, reps, one_thread ? "udp-echo, one thread" : "udp-echo");
        struct udp_echo_result r;
        if (udp_echo_run(&u, &r) < 0) {
            snprintf(why, whylen, "%s", r.why);
            return -1;
        }
        v[i] = r.echoes_per_s;
        w[i] = r.cpu_ns;
    }
    *eps = tool_median(v, reps);
    *ns = tool_median(w, reps);
    return 0;
}

/* ---- over veth: the kernel's UDP echo against hotpath serve ----------------
 *
 * A veth pair in two namespaces of our own: the client's end (side 0,
 * 198.18.0.1, CPU Y) and the server's (side 1, 198.18.0.2, CPU X). The same
 * kernel client (udp_kernel.c) talks to each server in turn, rounds
 * alternating:
 *
 *   kernel              a recvmmsg/sendmmsg thread on a socket bound to
 *                       198.18.0.2:7, the address on the veth end;
 *   hotpath-afxdp       hotpath serve's loop (hp_link_open("afxdp") in copy
 *                       mode, one hp_stack, UDP echo with recv_buf/send_buf,
 *                       busy-polling), the kernel holding no address on the
 *                       veth end (and IPv6 off: it answers no ARP or NDP);
 *   hotpath-afxdp-wait  the same loop sleeping in poll(2) on the link when a
 *                       round finds nothing, as the kernel server sleeps in
 *                       recvmmsg;
 *   hotpath-afpacket    serve's loop on the afpacket link.
 *
 * Where the CPU goes. veth has no interrupts: a frame sent on one end is
 * received on the sending CPU (veth_xmit -> netif_rx, or veth's NAPI when
 * XDP is attached natively; both run on the sender). So the server's CPU
 * does the server, its transmit path and the client's receive of the
 * echoes, while the server's own receive (IP/UDP up to its socket, or XDP
 * and the copy into the UMEM) runs on the client's CPU, in the client's
 * sendmmsg. Every row has the same split, so "srv" compares like with like;
 * "both", the busy time of the two CPUs per echo, counts everything. Both
 * are read from /proc/stat (busy = user + nice + system + irq + softirq):
 * much of the work is softirq, which a thread's clock charges to whichever
 * thread it interrupted, not to the side it serves.
 *
 * Steering each end's receive to its own side's CPU with RPS (and XDP in
 * generic mode, after RPS) would give a cleaner split, but costs an
 * inter-processor interrupt per burst each way; in a VM (this machine's
 * kind) those cost microseconds each and then dominate every row.
 */

#define V_MAX_REPS 64
#define V_WINDOW 256
#define V_PAYLOAD 64
#define V_GOAL 0.5
/* A round in which other processes took more than this share of the two
 * CPUs is run again, up to V_ATTEMPTS times; the least disturbed is kept. */
#define V_MAX_FOREIGN 0.05
#define V_ATTEMPTS 3

enum { V_KERNEL, V_AFXDP, V_AFXDP_WAIT, V_AFPACKET, NV };
static const char *const vrow_names[NV] = {"kernel", "hotpath-afxdp", "hotpath-afxdp-wait", "hotpath-afpacket"};

struct vrow {
    bool ok;
    char why[200];          /* skipped or failed: why */
    double eps, srv_ns, both_ns, thread_ns, cli_ns; /* medians */
    uint64_t lost, refused; /* over the rounds kept */
};

struct veth_report {
    char skipped[240];      /* nothing measured: why */
    char failed[240];       /* the kernel row failed: why */
    struct tool_netns ns;
    int cpu_srv, cpu_cli;
    bool csum_off;          /* the client's end computes UDP checksums */
    int reps;
    double round_s, warm_s;
    int retried;
    double worst_foreign;   /* share of the two CPUs, in the rounds kept */
    double worst_steal;     /* share of the two CPUs the hypervisor took */
    struct vrow row[NV];
    double ratio_srv, ratio_both, ratio_wait; /* hotpath-afxdp(-wait) / kernel */
    bool met;
};

/* hotpath serve's loop on a real link, on a thread of its own in the
 * server's namespace. */
struct hp_server {
    const struct tool_netns *ns;
    int side, cpu;
    const char *kind;
    unsigned link_flags;
    bool wait;              /* sleep in poll(2) on the link when a round finds nothing */
    pthread_t th;
    bool started;
    _Atomic int state;      /* 0 starting, 1 serving, -1 failed */
    _Atomic int stop;
    uint64_t echoed;
    long leaked;            /* buffers still in use after closing */
    char why[200];
};

/* serve.c's echo_all: zero-copy, the received buffer goes back. */
static uint64_t serve_echo(struct hp_udp_sock *u)
{
    uint64_t n = 0;
    struct hp_buf *b;
    struct hp_sockaddr from;
    while (u && hp_udp_recv_buf(u, &b, &from) >= 0) {
        if (hp_udp_send_buf(u, b, &from) < 0)
            hp_buf_free(b);
        else
            n++;
    }
    return n;
}

static void *hp_server_main(void *arg)
{
    struct hp_server *sv = arg;
    struct hp_link *link = NULL;
    struct hp_stack *s = NULL;
    struct hp_udp_sock *u[2] = {NULL, NULL};
    int rc = tool_netns_enter(sv->ns, sv->side);
    if (rc < 0) {
        snprintf(sv->why, sizeof sv->why, "cannot enter %s: %s", sv->ns->ns[sv->side], hp_strerror(rc));
        goto out;
    }
    tool_pin(sv->cpu);
    struct hp_link_config lc = {.iface = sv->ns->ifname[sv->side], .flags = sv->link_flags};
    link = hp_link_open(sv->kind, &lc);
    if (!link) {
        snprintf(sv->why, sizeof sv->why, "%s", hp_link_error());
        goto out;
    }
    /* As `hotpath serve --link KIND --iface IF --ip 198.18.0.2/24`. */
    struct hp_stack_config sc = {.name = "serve"};
    s = hp_stack_create(&sc);
    int ifx = s ? hp_stack_add_iface(s, link) : -ENOMEM;
    if (ifx < 0 || hp_stack_add_addr(s, ifx, 4, SRV4, 24) < 0) {
        snprintf(sv->why, sizeof sv->why, "cannot set up the stack on %s", hp_link_name(link));
        goto out;
    }
    for (int f = 0; f < 2; f++) {
        u[f] = hp_udp_open(s, f ? 6 : 4, NULL);
        struct hp_sockaddr any = {.family = (uint8_t)(f ? 6 : 4), .port = ECHO_PORT};
        if (!u[f] || hp_udp_bind(u[f], &any) < 0) {
            snprintf(sv->why, sizeof sv->why, "cannot bind UDP port %d", ECHO_PORT);
            goto out;
        }
    }
    atomic_store(&sv->state, 1);
    struct hp_event ev[16];
    uint64_t echoed = 0;
    int fd = sv->wait ? hp_link_fd(link) : -1;
    while (!atomic_load_explicit(&sv->stop, memory_order_relaxed)) {
        int n = hp_stack_poll(s);
        hp_stack_events(s, ev, 16);
        uint64_t e = serve_echo(u[0]) + serve_echo(u[1]);
        echoed += e;
        if (fd >= 0 && n == 0 && e == 0) {
            /* Nothing came in (and what the last round queued went out in
             * this poll): sleep until a frame or the next timer, as the
             * kernel server sleeps in recvmmsg. 10 ms at most, for stop. */
            int64_t t = hp_stack_next_timer_ns(s);
            int ms = t < 0 || t >= 10000000 ? 10 : (int)((t + 999999) / 1000000);
            struct pollfd p = {.fd = fd, .events = POLLIN};
            (void)poll(&p, 1, ms);
        }
    }
    sv->echoed = echoed;
out:
    for (int f = 0; f < 2; f++)
        hp_udp_close(u[f]);
    hp_stack_destroy(s);
    if (link) {
        hp_pool_thread_flush(hp_link_pool(link));
        hp_link_close(link);
    }
    hp_thread_exit();
    sv->leaked = hp_pools_in_use();
    if (atomic_load(&sv->state) != 1)
        atomic_store(&sv->state, -1);
    return NULL;
}

static void hp_server_stop(struct hp_server *sv)
{
    if (!sv->started)
        return;
    atomic_store(&sv->stop, 1);
    pthread_join(sv->th, NULL);
    sv->started = false;
}

static int hp_server_start(struct hp_server *sv)
{
    atomic_init(&sv->state, 0);
    atomic_init(&sv->stop, 0);
    if (pthread_create(&sv->th, NULL, hp_server_main, sv) != 0) {
        snprintf(sv->why, sizeof sv->why, "cannot start the server thread");
        return -1;
    }
    sv->started = true;
    /* Opening an AF_XDP socket attaches an XDP program: allow it time. */
    double deadline = tool_now_s() + 10;
    while (atomic_load(&sv->state) == 0 && tool_now_s() < deadline)
        usleep(1000);
    if (atomic_load(&sv->state) == 1)
        return 0;
    if (!sv->why[0])
        snprintf(sv->why, sizeof sv->why, "the server was not ready within 10 s");
    hp_server_stop(sv);
    return -1;
}

struct client_job {
    struct udpk_client_opts o;
    struct udpk_client_result r;
    int rc;
};

static void *client_main(void *arg)
{
    struct client_job *j = arg;
    j->rc = udpk_client_run(&j->o, &j->r);
    return NULL;
}

/* The server's veth end holds 198.18.0.2 for the kernel row only. */
static int srv_addr(struct veth_report *v, bool want, bool *have)
{
    if (want == *have)
        return 0;
    int rc = udpk_sh("ip -n %s addr %s 198.18.0.2/24 dev %s", v->ns.ns[1], want ? "add" : "del", v->ns.ifname[1]);
    if (rc != 0)
        return -1;
    *have = want;
    return 0;
}

struct vsample {
    double eps, srv_ns, both_ns, thread_ns, cli_ns, foreign, steal;
    uint64_t lost, refused;
};

/* One round of one row. 0; 1 with why when the row cannot run (skip it);
 * -1 with why on a failure. */
static int veth_round(struct veth_report *v, int row, bool *have_addr, struct vsample *out, char *why,
                      size_t whylen)
{
    if (srv_addr(v, row == V_KERNEL, have_addr) < 0) {
        snprintf(why, whylen, "cannot %s 198.18.0.2 on %s", row == V_KERNEL ? "add" : "remove", v->ns.ifname[1]);
        return -1;
    }
    struct udpk_server ks = {.ns = &v->ns, .side = 1, .cpu = v->cpu_srv, .port = ECHO_PORT};
    memcpy(ks.addr, SRV4, 4);
    struct hp_server hs = {.ns = &v->ns, .side = 1, .cpu = v->cpu_srv};
    pthread_t sth;
    if (row == V_KERNEL) {
        if (udpk_server_start(&ks) < 0) {
            snprintf(why, whylen, "%s", ks.why);
            return -1;
        }
        sth = ks.th;
    } else {
        bool xdp = row == V_AFXDP || row == V_AFXDP_WAIT;
        hs.kind = xdp ? "afxdp" : "afpacket";
        hs.link_flags = xdp ? HP_LINK_F_COPY : 0; /* as `hotpath serve --link afxdp` */
        hs.wait = row == V_AFXDP_WAIT;
        if (hp_server_start(&hs) < 0) {
            snprintf(why, whylen, "%s", hs.why);
            return 1;
        }
        sth = hs.th;
    }
    struct client_job j = {.o = {.ns = &v->ns, .side = 0, .cpu = v->cpu_cli, .port = ECHO_PORT,
                                 .window = V_WINDOW, .payload = V_PAYLOAD, .warm_s = v->warm_s,
                                 .seconds = v->round_s, .cpu_server = v->cpu_srv}};
    memcpy(j.o.src, CLI4, 4);
    memcpy(j.o.dst, SRV4, 4);
    j.o.has_server_clock = pthread_getcpuclockid(sth, &j.o.server_clock) == 0;
    pthread_t cth;
    int rc = -1;
    if (pthread_create(&cth, NULL, client_main, &j) != 0) {
        snprintf(why, whylen, "cannot start the client thread");
    } else {
        pthread_join(cth, NULL);
        rc = j.rc;
        if (rc < 0)
            snprintf(why, whylen, "%s: %.160s%s", vrow_names[row], j.r.why,
                     row != V_KERNEL && !v->csum_off ? " (ethtool could not turn off transmit checksum offload "
                                                       "on the client's end: the server sees bad checksums)" : "");
    }
    if (row == V_KERNEL) {
        udpk_server_stop(&ks);
    } else {
        hp_server_stop(&hs);
        if (rc == 0 && hs.leaked != 0) {
            snprintf(why, whylen, "%s: %ld buffers still in use after the round", vrow_names[row], hs.leaked);
            rc = -1;
        }
    }
    if (rc < 0)
        return row == V_KERNEL ? -1 : 1;
    const struct udpk_client_result *r = &j.r;
    if (r->echoes == 0) {
        snprintf(why, whylen, "%s: no echoes in the measured interval", vrow_names[row]);
        return row == V_KERNEL ? -1 : 1;
    }
    double e = (double)r->echoes;
    out->eps = e / r->seconds;
    out->srv_ns = r->server_busy_s * 1e9 / e;
    out->both_ns = (r->server_busy_s + r->client_busy_s) * 1e9 / e;
    out->thread_ns = r->server_thread_s * 1e9 / e;
    out->cli_ns = r->client_busy_s * 1e9 / e;
    out->foreign = r->seconds > 0 ? r->foreign_s / (2 * r->seconds) : 0;
    out->steal = r->seconds > 0 ? r->steal_s / (2 * r->seconds) : 0;
    out->lost = r->lost;
    out->refused = r->refused;
    return 0;
}

static void summarise(struct veth_report *v, struct vsample smp[NV][V_MAX_REPS], const int got[NV])
{
    for (int row = 0; row < NV; row++) {
        struct vrow *r = &v->row[row];
        if (r->why[0] || got[row] == 0) {
            if (!r->why[0])
                snprintf(r->why, sizeof r->why, "not measured");
            continue;
        }
        double a[5][V_MAX_REPS];
        for (int k = 0; k < got[row]; k++) {
            const struct vsample *s = &smp[row][k];
            a[0][k] = s->eps;
            a[1][k] = s->srv_ns;
            a[2][k] = s->both_ns;
            a[3][k] = s->thread_ns;
            a[4][k] = s->cli_ns;
            r->lost += s->lost;
            r->refused += s->refused;
        }
        r->eps = tool_median(a[0], got[row]);
        r->srv_ns = tool_median(a[1], got[row]);
        r->both_ns = tool_median(a[2], got[row]);
        r->thread_ns = tool_median(a[3], got[row]);
        r->cli_ns = tool_median(a[4], got[row]);
        r->ok = true;
    }
    const struct vrow *k = &v->row[V_KERNEL], *h = &v->row[V_AFXDP], *w = &v->row[V_AFXDP_WAIT];
    if (k->ok && h->ok && k->srv_ns > 0 && k->both_ns > 0) {
        v->ratio_srv = h->srv_ns / k->srv_ns;
        v->ratio_both = h->both_ns / k->both_ns;
        v->met = v->ratio_srv <= V_GOAL;
    }
    if (k->ok && w->ok && k->srv_ns > 0)
        v->ratio_wait = w->srv_ns / k->srv_ns;
}

/* Every round: rows alternating, the first one rotating. */
static void run_rows(struct veth_report *v, const struct bench_opts *o)
{
    static struct vsample smp[NV][V_MAX_REPS]; /* one benchmark runs at a time */
    int got[NV] = {0};
    bool have_addr = true; /* tool_netns_up gave side 1 198.18.0.2 */
    int total = v->reps * NV, done = 0;
    for (int rep = 0; rep < v->reps && !v->failed[0]; rep++) {
        for (int i = 0; i < NV && !v->failed[0]; i++) {
            int row = (i + rep) % NV;
            if (o->progress)
                o->progress(o->progress_ctx, done++, total, vrow_names[row]);
            if (v->row[row].why[0])
                continue;
            struct vsample best = {.foreign = 2};
            for (int a = 0; a < V_ATTEMPTS; a++) {
                struct vsample s;
                char why[400] = "";
                int rc = veth_round(v, row, &have_addr, &s, why, sizeof why);
                if (rc != 0) {
                    /* A hotpath row may be unable to run here (afxdp not
                     * built in): it is skipped and the rest goes on. */
                    if (rc > 0)
                        snprintf(v->row[row].why, sizeof v->row[row].why, "%.*s", (int)sizeof v->row[row].why - 1, why);
                    else
                        snprintf(v->failed, sizeof v->failed, "%.*s", (int)sizeof v->failed - 1, why);
                    break;
                }
                if (s.foreign < best.foreign)
                    best = s;
                if (s.foreign <= V_MAX_FOREIGN)
                    break;
                if (a + 1 < V_ATTEMPTS) {
                    v->retried++;
                    usleep(300000); /* let a passing job pass */
                }
            }
            if (v->row[row].why[0] || v->failed[0])
                continue;
            smp[row][got[row]++] = best;
            if (best.foreign > v->worst_foreign)
                v->worst_foreign = best.foreign;
            if (best.steal > v->worst_steal)
                v->worst_steal = best.steal;
        }
    }
    if (o->progress)
        o->progress(o->progress_ctx, total, total, "done");
    if (!v->failed[0])
        summarise(v, smp, got);
}

static void veth_run(struct veth_report *v, const struct bench_opts *o)
{
    memset(v, 0, sizeof *v);
    v->reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    if (v->reps > V_MAX_REPS)
        v->reps = V_MAX_REPS;
    v->round_s = o->quick ? 0.5 : 1.0;
    v->warm_s = 0.2;
    int n = tool_ncpus();
    /* As the mem rows: the client on --cpu (default: the last CPU), the
     * server on the CPU before it. */
    v->cpu_cli = o->cpu >= 0 ? o->cpu : n - 1;
    v->cpu_srv = (v->cpu_cli + n - 1) % n;
    if (geteuid() != 0) {
        snprintf(v->skipped, sizeof v->skipped, "needs root (network namespaces, AF_XDP)");
        return;
    }
    if (n < 2) {
        snprintf(v->skipped, sizeof v->skipped, "needs two CPUs (server and client each on its own)");
        return;
    }
    if (o->iface) {
        snprintf(v->skipped, sizeof v->skipped, "makes a veth pair of its own: --iface is not for this benchmark");
        return;
    }
    int rc = tool_netns_up(&v->ns, "udp");
    if (rc < 0) {
        snprintf(v->skipped, sizeof v->skipped, "cannot make a veth pair in namespaces: %s", hp_strerror(rc));
        return;
    }
    /* The kernel leaves UDP checksums to the device when it sends on veth
     * (CHECKSUM_PARTIAL, which no device ever fills in): frames taken by
     * AF_XDP or AF_PACKET would arrive with a wrong one. So the client's end
     * computes them (for every row: the client stays the same); the
     * server's end keeps its offload, as a NIC's would be for the kernel. */
    v->csum_off = udpk_sh("ip netns exec %s ethtool -K %s tx off >/dev/null 2>&1", v->ns.ns[0], v->ns.ifname[0]) == 0;
    run_rows(v, o);
    tool_netns_down(&v->ns);
}

static void veth_goal(const struct veth_report *v, int row, char *buf, size_t len)
{
    const struct vrow *k = &v->row[V_KERNEL], *h = &v->row[row];
    const char *why = v->skipped[0] ? v->skipped : v->failed[0] ? v->failed : !k->ok ? k->why : h->why;
    if (v->skipped[0] || v->failed[0] || !k->ok || !h->ok)
        snprintf(buf, len, "hotpath server CPU per echo <= %.1fx the kernel's (not measured: %s)", V_GOAL, why);
    else
        snprintf(buf, len, "hotpath server CPU per echo <= %.1fx the kernel's (%.0f ns vs %.0f ns: %.2f)", V_GOAL,
                 h->srv_ns, k->srv_ns, h->srv_ns / k->srv_ns);
}

static void veth_print_table(const struct veth_report *v, FILE *f)
{
    fprintf(f, "\n== udp-echo over veth: the kernel's UDP echo vs hotpath serve, the same kernel client\n");
    if (v->skipped[0]) {
        fprintf(f, "skipped: %s\n", v->skipped);
        return;
    }
    fprintf(f, "setup:      a veth pair in namespaces of our own: client %s, 198.18.0.1, on CPU %d; server\n"
               "            %s, 198.18.0.2, on CPU %d; IPv6 off; the client's end computes UDP checksums%s\n",
            v->ns.ifname[0], v->cpu_cli, v->ns.ifname[1], v->cpu_srv, v->csum_off ? "" : " (NOT: ethtool failed)");
    fprintf(f, "client:     one kernel UDP socket, connected; %d datagrams of %d B in flight: sendmmsg to top\n"
               "            them up, then a blocking recvmmsg (%d at most); the same for every row\n",
            V_WINDOW, V_PAYLOAD, UDPK_BATCH);
    fprintf(f, "kernel:     one thread: recvmmsg(%d, MSG_WAITFORONE), sendmmsg back, on a socket bound to\n"
               "            198.18.0.2:7, the address on the veth end\n", UDPK_BATCH);
    fprintf(f, "hotpath-*:  hotpath serve's loop (hp_stack_poll, events, recv_buf/send_buf echo) on\n"
               "            hp_link_open(\"afxdp\", copy mode; XDP native on veth) or (\"afpacket\"); the kernel has\n"
               "            no address on the veth end. It busy-polls; -wait sleeps in poll(2) on the link when\n"
               "            a round finds nothing, as the kernel server sleeps in recvmmsg (not serve's loop)\n");
    fprintf(f, "method:     %d rounds of %.2g s (after %.2g s unmeasured) per row, rows alternating; medians\n",
            v->reps, v->round_s, v->warm_s);
    fprintf(f, "columns:    srv = busy time of the server's CPU per echo (/proc/stat: user+nice+system+irq+\n"
               "            softirq); both = of both CPUs: everything, the client (the same in every row)\n"
               "            included, the fairest single number; thread = the server thread's own CPU time\n"
               "            (softirq work done in its system calls included); client = the client's CPU.\n"
               "            A busy-polling server keeps its CPU 100%% busy: its srv is 1 s / (echoes/s),\n"
               "            however little of it is work.\n");
    fprintf(f, "counted:    veth receives on the sending CPU. srv counts the server, its transmit path, and\n"
               "            the client's receive of the echoes (run by the server's send); not the server's own\n"
               "            receive (IP/UDP up to its socket, or XDP and the copy into the UMEM), which runs on\n"
               "            the client's CPU in the client's sendmmsg. Every row has the same split.\n");
    if (v->retried)
        fprintf(f, "note:       %d rounds run again: other processes used over %.0f%% of the two CPUs\n", v->retried,
                100 * V_MAX_FOREIGN);
    if (v->worst_foreign > V_MAX_FOREIGN)
        fprintf(f, "note:       in the worst round kept, other processes used %.0f%% of the two CPUs: this machine\n"
                   "            is busy, compare with care\n", 100 * v->worst_foreign);
    if (v->worst_steal > V_MAX_FOREIGN)
        fprintf(f, "note:       the hypervisor took up to %.0f%% of the two CPUs (steal time) in a round kept\n",
                100 * v->worst_steal);
    for (int row = 0; row < NV; row++)
        if (v->row[row].ok && (v->row[row].lost || v->row[row].refused))
            fprintf(f, "note:       %s: %llu datagrams lost (a window stalled for 20 ms), %llu refused\n",
                    vrow_names[row], (unsigned long long)v->row[row].lost, (unsigned long long)v->row[row].refused);
    if (v->failed[0]) {
        fprintf(f, "\nfailed:     %s\n", v->failed);
        return;
    }
    const struct vrow *k = &v->row[V_KERNEL];
    fprintf(f, "\n  %-19s %9s %8s %8s %9s %9s   %s\n", "row", "echoes/s", "srv ns", "both ns", "thread ns",
            "client ns", "vs kernel: srv, both");
    for (int row = 0; row < NV; row++) {
        const struct vrow *r = &v->row[row];
        if (!r->ok) {
            fprintf(f, "  %-19s skipped: %s\n", vrow_names[row], r->why);
            continue;
        }
        fprintf(f, "  %-19s %9.0f %8.0f %8.0f %9.0f %9.0f", vrow_names[row], r->eps, r->srv_ns, r->both_ns,
                r->thread_ns, r->cli_ns);
        if (row != V_KERNEL && k->ok)
            fprintf(f, "   %.2fx, %.2fx", r->srv_ns / k->srv_ns, r->both_ns / k->both_ns);
        fprintf(f, "\n");
    }
}

static void veth_print_json(const struct veth_report *v, FILE *f)
{
    fprintf(f, "\"veth\": {");
    if (v->skipped[0]) {
        fprintf(f, "\"skipped\": ");
        tool_json_str(f, v->skipped);
        fprintf(f, "}");
        return;
    }
    fprintf(f, "\"cpu_server\": %d, \"cpu_client\": %d, \"copy\": true, \"client_csum_off\": %s, \"window\": %d, "
               "\"payload\": %d, \"reps\": %d, \"round_s\": %g, \"warmup_s\": %g, \"retried\": %d, "
               "\"max_foreign\": %.4f, \"max_steal\": %.4f",
            v->cpu_srv, v->cpu_cli, v->csum_off ? "true" : "false", V_WINDOW, V_PAYLOAD, v->reps, v->round_s,
            v->warm_s, v->retried, v->worst_foreign, v->worst_steal);
    if (v->failed[0]) {
        fprintf(f, ", \"failed\": ");
        tool_json_str(f, v->failed);
        fprintf(f, "}");
        return;
    }
    fprintf(f, ", \"rows\": [");
    for (int row = 0; row < NV; row++) {
        const struct vrow *r = &v->row[row];
        fprintf(f, "%s\n  {\"mode\": \"%s\"", row ? "," : "", vrow_names[row]);
        if (!r->ok) {
            fprintf(f, ", \"skipped\": ");
            tool_json_str(f, r->why);
            fprintf(f, "}");
            continue;
        }
        fprintf(f, ", \"echoes_per_s\": %.0f, \"server_cpu_ns_per_echo\": %.1f, \"both_cpus_ns_per_echo\": %.1f, "
                   "\"server_thread_ns_per_echo\": %.1f, \"client_cpu_ns_per_echo\": %.1f, \"lost\": %llu}",
                r->eps, r->srv_ns, r->both_ns, r->thread_ns, r->cli_ns, (unsigned long long)r->lost);
    }
    fprintf(f, "],\n  \"ratio_server_cpu\": %.4f, \"ratio_both_cpus\": %.4f, \"ratio_server_cpu_wait\": %.4f}",
            v->ratio_srv, v->ratio_both, v->ratio_wait);
}

int bench_udp(const struct bench_opts *o, FILE *table)
{
    int reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    double eps2 = 0, ns2 = 0, eps1 = 0, ns1 = 0;
    char why2[200] = "", why1[200] = "";
    int rc2 = tool_ncpus() >= 2 ? run_rounds(o, false, &eps2, &ns2, why2, sizeof why2) : -1;
    if (tool_ncpus() < 2)
        snprintf(why2, sizeof why2, "needs two CPUs");
    int rc1 = run_rounds(o, true, &eps1, &ns1, why1, sizeof why1);
    bool met = rc2 == 0 && eps2 >= 5e6;
    struct veth_report *v = calloc(1, sizeof *v);
    if (!v)
        return 1;
    veth_run(v, o);
    char vgoal[600], vwait[600];
    veth_goal(v, V_AFXDP, vgoal, sizeof vgoal);
    veth_goal(v, V_AFXDP_WAIT, vwait, sizeof vwait);
    char vfull[700];
    snprintf(vfull, sizeof vfull, "UDP echo over veth: %s", vgoal);
    char memgoal[200];
    snprintf(memgoal, sizeof memgoal, "UDP echo over the mem link, 64 B: >= 5 M echoes/s per core pair (%.2f M)",
             eps2 / 1e6);
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    FILE *jf[2] = {o->json ? stdout : NULL, o->json_out};
    for (int k = 0; k < 2; k++) {
        FILE *f = jf[k];
        if (!f)
            continue;
        fprintf(f, "{\"bench\": \"udp-echo\", \"cpu\": ");
        tool_json_str(f, cpu);
        fprintf(f, ", \"compiler\": ");
        tool_json_str(f, tool_compiler());
        fprintf(f, ", \"flags\": ");
        tool_json_str(f, tool_build_flags());
        fprintf(f, ", \"reps\": %d, \"payload\": 64, \"window\": 256, \"rows\": [", reps);
        fprintf(f, "{\"mode\": \"two-threads\"");
        if (rc2 == 0)
            fprintf(f, ", \"echoes_per_s\": %.0f, \"cpu_ns_per_echo\": %.1f}", eps2, ns2);
        else {
            fprintf(f, ", \"skipped\": ");
            tool_json_str(f, why2);
            fprintf(f, "}");
        }
        fprintf(f, ", {\"mode\": \"one-thread\"");
        if (rc1 == 0)
            fprintf(f, ", \"echoes_per_s\": %.0f, \"cpu_ns_per_echo\": %.1f}", eps1, ns1);
        else {
            fprintf(f, ", \"skipped\": ");
            tool_json_str(f, why1);
            fprintf(f, "}");
        }
        fprintf(f, "],\n ");
        veth_print_json(v, f);
        /* goal_met: the mem goal, as before; goals: each goal line. */
        fprintf(f, ",\n \"goal_met\": %s, \"goals\": [{\"goal\": ", met ? "true" : "false");
        tool_json_str(f, memgoal);
        fprintf(f, ", \"met\": %s}, {\"goal\": ", met ? "true" : "false");
        tool_json_str(f, vfull);
        fprintf(f, ", \"met\": %s}]}\n", v->met ? "true" : "false");
    }
    if (!o->json) {
        fprintf(table, "\n== udp-echo: UDP echo between two stacks over the mem link\n");
        fprintf(table, "64 B payload, 256 datagrams in flight, IPv4; median of %d rounds;\n"
                       "CPU ns per echo counts both stacks' threads\n", reps);
        fprintf(table, "cpu:        %s\ncompiler:   %s\nflags:      %s\n\n", cpu, tool_compiler(),
                tool_build_flags());
        fprintf(table, "  %-22s %14s %14s\n", "mode", "echoes/s", "CPU ns/echo");
        if (rc2 == 0)
            fprintf(table, "  %-22s %14.0f %14.1f\n", "two threads (2 CPUs)", eps2, ns2);
        else
            fprintf(table, "  %-22s skipped: %s\n", "two threads (2 CPUs)", why2);
        if (rc1 == 0)
            fprintf(table, "  %-22s %14.0f %14.1f\n", "one thread (1 CPU)", eps1, ns1);
        else
            fprintf(table, "  %-22s skipped: %s\n", "one thread (1 CPU)", why1);
        veth_print_table(v, table);
        fprintf(table, "\ngoals\n  [%s] %s\n", met ? " met " : "MISSED", memgoal);
        fprintf(table, "  [%s] %s\n", v->met ? " met " : "MISSED", vfull);
        if (v->row[V_AFXDP_WAIT].ok)
            fprintf(table, "  [info] the same with hotpath-afxdp-wait: %s\n", vwait);
    }
    /* Skipped (not root) is no failure; a failed row is. */
    int rc = (rc1 == 0 || rc2 == 0) && !v->failed[0] ? 0 : 1;
    free(v);
    return rc;
}
