/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench tcp-stream` and `tcp-rr`: one TCP flow between two stacks over the mem link, beside the kernel's TCP over loopback in the same run. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "tcp_kernel.h"
#include "bench.h"
#include "tool.h"

#define PORT 5201
#define CHUNK (128 * 1024)     /* bytes per write and read, both peers (iperf3's default) */
#define POOL_BUFS 16384
#define MAX_REPS 64
#define STREAM_GOAL_GBPS 20.0
#define RR_GOAL 0.1            /* hotpath CPU per transaction <= this x the kernel's */

static const uint8_t A4[4] = {198, 18, 0, 1}, B4[4] = {198, 18, 0, 2};

enum { PH_WARM = 0, PH_MEASURE = 1, PH_STOP = 2 };

/* ---- two stacks over a mem pair, one connection between them ------------------------ */

struct pair {
    struct hp_pool *pool;
    struct hp_link *e[2];
    struct hp_stack *st[2];     /* 0: sender / client, 1: receiver / server */
    struct hp_tcp_sock *l, *t[2];
    int tag[2];                 /* the user pointers of t[0] and t[1] */
};

static void pair_close(struct pair *p)
{
    hp_tcp_abort(p->t[0]);
    hp_tcp_abort(p->t[1]);
    hp_tcp_close(p->l);
    hp_stack_destroy(p->st[0]);
    hp_stack_destroy(p->st[1]);
    if (p->pool)
        hp_pool_thread_flush(p->pool);
    hp_link_close(p->e[0]);
    hp_link_close(p->e[1]);
    if (p->pool)
        hp_pool_destroy(p->pool);
    memset(p, 0, sizeof *p);
}

/* Make the pair and connect (polling both stacks on this thread). */
static int pair_open(struct pair *p, bool nodelay, char *why, size_t len)
{
    memset(p, 0, sizeof *p);
    struct hp_pool_config pc = {.name = "bench-tcp", .n_bufs = POOL_BUFS};
    p->pool = hp_pool_create(&pc);
    struct hp_link_config lc = {.pool = p->pool, .ring_size = 1024};
    if (!p->pool || hp_link_mem_pair(&lc, p->e) < 0) {
        snprintf(why, len, "mem pair: %s", p->pool ? hp_link_error() : "no pool");
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config sc = {.name = i ? "receiver" : "sender", .flags = HP_STACK_F_NO_DAD};
        p->st[i] = hp_stack_create(&sc);
        int ifx = p->st[i] ? hp_stack_add_iface(p->st[i], p->e[i]) : -ENOMEM;
        if (ifx < 0 || hp_stack_add_addr(p->st[i], ifx, 4, i ? B4 : A4, 24) < 0) {
            snprintf(why, len, "cannot set up the %s stack", i ? "receiving" : "sending");
            return -1;
        }
    }
    p->l = hp_tcp_open(p->st[1], 4, NULL);
    struct hp_sockaddr any = {.family = 4, .port = PORT}, to = {.family = 4, .port = PORT};
    memcpy(to.addr, B4, 4);
    int rc = p->l ? hp_tcp_bind(p->l, &any) : -errno;
    if (rc == 0)
        rc = hp_tcp_listen(p->l, 16);
    p->t[0] = rc == 0 ? hp_tcp_open(p->st[0], 4, &p->tag[0]) : NULL;
    if (rc == 0 && !p->t[0])
        rc = -errno;
    if (rc == 0 && nodelay)
        hp_tcp_setopt(p->t[0], HP_TCP_OPT_NODELAY, 1);
    if (rc == 0 && (rc = hp_tcp_connect(p->t[0], &to)) == -EINPROGRESS)
        rc = 0;
    if (rc < 0) {
        snprintf(why, len, "hotpath TCP: cannot listen and connect: %s", hp_strerror(rc));
        return -1;
    }
    double deadline = tool_now_s() + 3;
    struct hp_event ev[16];
    while (tool_now_s() < deadline && (!p->t[1] || hp_tcp_state(p->t[0]) != HP_TCP_ESTABLISHED)) {
        for (int i = 0; i < 2; i++) {
            hp_stack_poll(p->st[i]);
            while (hp_stack_events(p->st[i], ev, 16) == 16)
                ;
        }
        if (!p->t[1])
            p->t[1] = hp_tcp_accept(p->l, &p->tag[1], NULL);
    }
    if (!p->t[1] || hp_tcp_state(p->t[0]) != HP_TCP_ESTABLISHED) {
        snprintf(why, len, "hotpath TCP: no connection within 3 s (client %s, %s)", hp_tcp_state_name(hp_tcp_state(p->t[0])),
                 p->t[1] ? "accepted" : "nothing to accept");
        return -1;
    }
    if (nodelay)
        hp_tcp_setopt(p->t[1], HP_TCP_OPT_NODELAY, 1);
    return 0;
}

/* Whether an event for socket tag carries one of the bits. Events are
 * edge-triggered: the loops keep a ready flag, set here, cleared at EAGAIN. */
static bool events_for(struct hp_stack *s, const void *tag, uint32_t bits)
{
    struct hp_event ev[16];
    bool hit = false;
    int n;
    do {
        n = hp_stack_events(s, ev, 16);
        for (int i = 0; i < n; i++)
            if (ev[i].user == tag && (ev[i].events & (bits | HP_EV_ERR | HP_EV_HUP)))
                hit = true;
    } while (n == 16);
    return hit;
}

/* ---- tcp-stream, hotpath: a sender thread and a receiver thread -------------------- */

struct sside {
    struct pair *p;
    int i;                 /* 0 sender, 1 receiver */
    int cpu;
    _Atomic int *phase;
    uint8_t *buf;
    uint64_t bytes;
    uint64_t m_bytes;      /* over the measured interval */
    double m_s, m_cpu;
    int err;
};

static void *stream_thread(void *arg)
{
    struct sside *s = arg;
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    struct hp_stack *st = s->p->st[s->i];
    struct hp_tcp_sock *t = s->p->t[s->i];
    const void *tag = &s->p->tag[s->i];
    bool tx = s->i == 0, ready = true;
    uint32_t bits = tx ? HP_EV_OUT : HP_EV_IN;
    int seen = PH_WARM;
    double t0 = 0, c0 = 0;
    uint64_t b0 = 0;
    for (;;) {
        int ph = atomic_load_explicit(s->phase, memory_order_acquire);
        if (ph != seen) {
            if (ph == PH_MEASURE) {
                t0 = tool_now_s();
                c0 = tool_thread_cpu_s();
                b0 = s->bytes;
            } else if (ph == PH_STOP) {
                s->m_s = tool_now_s() - t0;
                s->m_cpu = tool_thread_cpu_s() - c0;
                s->m_bytes = s->bytes - b0;
                break;
            }
            seen = ph;
        }
        hp_stack_poll(st);
        if (events_for(st, tag, bits))
            ready = true;
        while (ready && !s->err) {
            long r = tx ? hp_tcp_send(t, s->buf, CHUNK) : hp_tcp_recv(t, s->buf, CHUNK);
            if (r > 0) {
                s->bytes += (uint64_t)r;
                continue;
            }
            ready = false;
            if (r != -EAGAIN)
                s->err = r ? (int)-r : EPIPE;
        }
    }
    hp_pool_thread_flush(s->p->pool);
    hp_thread_exit();
    return NULL;
}

struct stream_res {
    double gbps, ns_per_byte, cpu_tx_s, cpu_rx_s;
    uint64_t retrans;
};

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int hp_stream_round(int cpu_tx, int cpu_rx, double warm, double secs, struct stream_res *r, char *why,
                           size_t len)
{
    memset(r, 0, sizeof *r);
    struct pair p;
    if (pair_open(&p, false, why, len) < 0) {
        pair_close(&p);
        return -1;
    }
    _Atomic int phase;
    atomic_init(&phase, PH_WARM);
    uint8_t *buf[2] = {malloc(CHUNK), malloc(CHUNK)};
    struct sside s[2] = {{.p = &p, .i = 0, .cpu = cpu_tx, .phase = &phase, .buf = buf[0]},
                         {.p = &p, .i = 1, .cpu = cpu_rx, .phase = &phase, .buf = buf[1]}};
    pthread_t th[2];
    int started = 0, rc = -1;
    if (!buf[0] || !buf[1]) {
        snprintf(why, len, "out of memory");
        goto out;
    }
    for (size_t k = 0; k < CHUNK; k++)
        buf[0][k] = (uint8_t)(k * 7);
    for (; started < 2; started++)
        if (pthread_create(&th[started], NULL, stream_thread, &s[1 - started]) != 0)
            break;
    if (started == 2) {
        sleep_s(warm);
        atomic_store_explicit(&phase, PH_MEASURE, memory_order_release);
        sleep_s(secs);
    }
    atomic_store_explicit(&phase, PH_STOP, memory_order_release);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    if (started < 2) {
        snprintf(why, len, "cannot start the threads");
        goto out;
    }
    if (s[0].err || s[1].err) {
        snprintf(why, len, "hotpath: the %s failed: %s", s[0].err ? "sender" : "receiver",
                 hp_strerror(-(s[0].err ? s[0].err : s[1].err)));
        goto out;
    }
    if (!s[1].m_bytes || !(s[1].m_s > 0)) {
        snprintf(why, len, "hotpath: no byte arrived in the measured interval");
        goto out;
    }
    r->gbps = (double)s[1].m_bytes * 8 / s[1].m_s / 1e9;
    r->cpu_tx_s = s[0].m_cpu;
    r->cpu_rx_s = s[1].m_cpu;
    r->ns_per_byte = (s[0].m_cpu + s[1].m_cpu) * 1e9 / (double)s[1].m_bytes;
    r->retrans = hp_stack_counter(p.st[0], HP_CTR_TCP_RETRANS_SEGS);
    rc = 0;
out:
    free(buf[0]);
    free(buf[1]);
    pair_close(&p);
    return rc;
}

/* The same flow with both stacks on this thread, polled in turn: no
 * partner to wait for, so its CPU per byte is the work alone. */
static int hp_stream_round_1t(int cpu, double warm, double secs, struct stream_res *r, char *why, size_t len)
{
    memset(r, 0, sizeof *r);
    struct pair p;
    if (pair_open(&p, false, why, len) < 0) {
        pair_close(&p);
        return -1;
    }
    cpu_set_t saved;
    bool restore = cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (cpu >= 0)
        tool_pin(cpu);
    uint8_t *buf = malloc(CHUNK);
    int rc = -1, err = 0;
    if (!buf) {
        snprintf(why, len, "out of memory");
        goto out;
    }
    memset(buf, 0x5a, CHUNK);
    bool tx_ready = true, rx_ready = true, measuring = false;
    uint64_t bytes = 0, b0 = 0;
    double now = tool_now_s(), warm_end = now + warm, end = 0, t0 = 0, c0 = 0;
    for (unsigned iter = 0; !err; iter++) {
        if ((iter & 63) == 0) {
            now = tool_now_s();
            if (!measuring && now >= warm_end) {
                measuring = true;
                t0 = now;
                c0 = tool_thread_cpu_s();
                b0 = bytes;
                end = now + secs;
            } else if (measuring && now >= end) {
                break;
            }
        }
        while (tx_ready) {
            long n = hp_tcp_send(p.t[0], buf, CHUNK);
            if (n <= 0) {
                tx_ready = false;
                if (n != -EAGAIN)
                    err = n ? (int)-n : EPIPE;
            }
        }
        hp_stack_poll(p.st[0]);
        if (events_for(p.st[0], &p.tag[0], HP_EV_OUT))
            tx_ready = true;
        hp_stack_poll(p.st[1]);
        if (events_for(p.st[1], &p.tag[1], HP_EV_IN))
            rx_ready = true;
        while (rx_ready) {
            long n = hp_tcp_recv(p.t[1], buf, CHUNK);
            if (n > 0) {
                bytes += (uint64_t)n;
                continue;
            }
            rx_ready = false;
            if (n != -EAGAIN)
                err = n ? (int)-n : EPIPE;
        }
    }
    double used = tool_thread_cpu_s() - c0, el = tool_now_s() - t0;
    if (err) {
        snprintf(why, len, "hotpath (one thread): %s", hp_strerror(-err));
    } else if (bytes == b0 || !(el > 0)) {
        snprintf(why, len, "hotpath (one thread): no byte arrived in the measured interval");
    } else {
        r->gbps = (double)(bytes - b0) * 8 / el / 1e9;
        r->cpu_tx_s = used;
        r->ns_per_byte = used * 1e9 / (double)(bytes - b0);
        r->retrans = hp_stack_counter(p.st[0], HP_CTR_TCP_RETRANS_SEGS);
        rc = 0;
    }
out:
    free(buf);
    pair_close(&p);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
    return rc;
}

/* ---- CPUs and rounds ----------------------------------------------------------------- */

/* As udp-echo: the sender / client on --cpu (default: the last CPU), the
 * receiver / server on the CPU before it; both on 0 and 1 with --cpu -1. */
static void pick_cpus(const struct bench_opts *o, int *a, int *b)
{
    int n = tool_ncpus();
    *a = o->cpu >= 0 ? o->cpu : (n > 1 ? 0 : -1);
    *b = n > 1 ? (*a + n - 1) % n : -1;
    if (o->cpu < 0 && n > 1)
        *b = 1;
}

static void json_head(FILE *f, const char *name, int reps, double secs, double warm, int a, int b)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "{\"bench\": \"%s\", \"cpu\": ", name);
    tool_json_str(f, cpu);
    fprintf(f, ", \"compiler\": ");
    tool_json_str(f, tool_compiler());
    fprintf(f, ", \"flags\": ");
    tool_json_str(f, tool_build_flags());
    fprintf(f, ", \"reps\": %d, \"round_s\": %g, \"warmup_s\": %g, \"cpus\": [%d, %d]", reps, secs, warm, a, b);
}

static void json_num(FILE *f, const char *key, bool ok, double v)
{
    if (ok)
        fprintf(f, ", \"%s\": %.6g", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

static void table_head(FILE *f, const char *title)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "\n== %s\n", title);
    fprintf(f, "cpu:        %s\ncompiler:   %s\nflags:      %s\n", cpu, tool_compiler(), tool_build_flags());
}

/* ---- tcp-stream ------------------------------------------------------------------------- */

/* One row of the stream table: per-round samples and their medians. */
struct srow {
    const char *name, *link;
    double g[MAX_REPS], c[MAX_REPS], tx[MAX_REPS], rx[MAX_REPS];
    int n;
    uint64_t retrans;
    char why[200];
    double G, C, T, R;      /* medians */
};

static void srow_add(struct srow *w, double g, double c, double tx, double rx, uint64_t retrans)
{
    w->g[w->n] = g;
    w->c[w->n] = c;
    w->tx[w->n] = tx;
    w->rx[w->n++] = rx;
    w->retrans += retrans;
}

static void srow_sum(struct srow *w)
{
    w->G = tool_median(w->g, w->n);
    w->C = tool_median(w->c, w->n);
    w->T = tool_median(w->tx, w->n);
    w->R = tool_median(w->rx, w->n);
}

static void srow_json(FILE *f, const struct srow *w, bool first)
{
    fprintf(f, "%s{\"impl\": \"%s\", \"link\": \"%s\"", first ? "" : ", ", w->name, w->link);
    if (w->n)
        fprintf(f, ", \"gbps\": %.4f, \"cpu_ns_per_byte\": %.5f, \"cpu_sender_s\": %.4f, \"cpu_receiver_s\": %.4f, "
                   "\"retrans_segs\": %llu}", w->G, w->C, w->T, w->R, (unsigned long long)w->retrans);
    else {
        fprintf(f, ", \"failed\": ");
        tool_json_str(f, w->why);
        fprintf(f, "}");
    }
}

static void srow_table(FILE *f, const struct srow *w)
{
    if (w->n)
        fprintf(f, "  %-14s %8.2f %12.4f %14.3f %16.3f %8llu\n", w->name, w->G, w->C, w->T, w->R,
                (unsigned long long)w->retrans);
    else
        fprintf(f, "  %-14s failed: %s\n", w->name, w->why);
}

int bench_tcp_stream(const struct bench_opts *o, FILE *table)
{
    int reps = o->reps ? o->reps : (o->quick ? 1 : 3);
    double secs = o->quick ? 0.3 : 1.0, warm = o->quick ? 0.1 : 0.2;
    int a, b;
    pick_cpus(o, &a, &b);
    static struct srow rows[3]; /* one benchmark runs at a time */
    memset(rows, 0, sizeof rows);
    struct srow *h = &rows[0], *h1 = &rows[1], *k = &rows[2];
    h->name = "hotpath";
    h1->name = "hotpath-1cpu";
    h->link = h1->link = "mem";
    k->name = "kernel";
    k->link = "loopback";
    for (int i = 0; i < reps; i++) {
        if (o->progress)
            o->progress(o->progress_ctx, 3 * i, 3 * reps, "tcp-stream, hotpath");
        struct stream_res r;
        if (!h->why[0] && hp_stream_round(a, b, warm, secs, &r, h->why, sizeof h->why) == 0)
            srow_add(h, r.gbps, r.ns_per_byte, r.cpu_tx_s, r.cpu_rx_s, r.retrans);
        if (o->progress)
            o->progress(o->progress_ctx, 3 * i + 1, 3 * reps, "tcp-stream, kernel");
        struct tcpk_opts ko = {.cpu_a = a, .cpu_b = b, .chunk = CHUNK, .warm_s = warm, .seconds = secs};
        struct tcpk_result kr;
        if (!k->why[0] && tcpk_stream_run(&ko, &kr) == 0)
            srow_add(k, (double)kr.count * 8 / kr.seconds / 1e9, (kr.cpu_a_s + kr.cpu_b_s) * 1e9 / (double)kr.count,
                     kr.cpu_a_s, kr.cpu_b_s, kr.retrans);
        else if (!k->why[0])
            snprintf(k->why, sizeof k->why, "%s", kr.why);
        if (o->progress)
            o->progress(o->progress_ctx, 3 * i + 2, 3 * reps, "tcp-stream, hotpath on one CPU");
        if (!h1->why[0] && hp_stream_round_1t(a, warm, secs, &r, h1->why, sizeof h1->why) == 0)
            srow_add(h1, r.gbps, r.ns_per_byte, r.cpu_tx_s, 0, r.retrans);
    }
    if (o->progress)
        o->progress(o->progress_ctx, 3 * reps, 3 * reps, "done");
    for (int i = 0; i < 3; i++)
        srow_sum(&rows[i]);
    bool both = h->n && k->n && k->G > 0 && k->C > 0;
    double ratio_g = both ? h->G / k->G : 0, ratio_c = both ? h->C / k->C : 0;
    bool both1 = h1->n && k->n && k->C > 0;
    double ratio_c1 = both1 ? h1->C / k->C : 0;
    bool met = h->n && h->G >= STREAM_GOAL_GBPS;
    char goal[200];
    snprintf(goal, sizeof goal, "one hotpath TCP flow over the mem link (MTU 1500) >= %.0f Gbit/s (%s)", STREAM_GOAL_GBPS,
             h->n ? tool_fmt("%.2f Gbit/s", h->G) : "not measured");
    FILE *jf[2] = {o->json ? stdout : NULL, o->json_out};
    for (int j = 0; j < 2; j++) {
        FILE *f = jf[j];
        if (!f)
            continue;
        json_head(f, "tcp-stream", reps, secs, warm, a, b);
        fprintf(f, ", \"mtu\": 1500, \"write_bytes\": %d, \"rows\": [", CHUNK);
        for (int i = 0; i < 3; i++)
            srow_json(f, &rows[i], i == 0);
        fprintf(f, "]");
        json_num(f, "ratio_gbps", both, ratio_g);
        json_num(f, "ratio_cpu_per_byte", both, ratio_c);
        json_num(f, "ratio_cpu_per_byte_one_cpu", both1, ratio_c1);
        fprintf(f, ", \"goal_met\": %s, \"goals\": [{\"goal\": ", met ? "true" : "false");
        tool_json_str(f, goal);
        fprintf(f, ", \"met\": %s}]}\n", met ? "true" : "false");
    }
    if (!o->json) {
        table_head(table, "tcp-stream: one TCP flow, hotpath over the mem link vs the kernel over loopback");
        fprintf(table,
                "setup:      sender thread on CPU %d, receiver thread on CPU %d; %d KiB writes and reads (copies),\n"
                "            %d round%s of %.2g s after %.2g s unmeasured, rows alternating; medians\n"
                "hotpath:    two stacks over a mem pair (MTU 1500), each on its thread, busy-polling:\n"
                "            hp_stack_poll, events, hp_tcp_send / hp_tcp_recv until EAGAIN\n"
                "hotpath-1cpu: the same flow, both stacks polled in turn by one thread on CPU %d (no\n"
                "            partner to spin for: its CPU per byte is the work alone; info only)\n"
                "kernel:     one AF_INET connection over 127.0.0.1 (lo: MTU 65536, GSO/GRO), blocking\n"
                "            write / read, default buffers (autotuning), like iperf3\n"
                "CPU/byte:   thread CPU time (CLOCK_THREAD_CPUTIME_ID) of both threads over the bytes\n"
                "            received; a busy-polling thread's CPU time is its wall time\n\n",
                a, b, CHUNK / 1024, reps, reps == 1 ? "" : "s", secs, warm, a);
        fprintf(table, "  %-14s %8s %12s %14s %16s %8s\n", "impl", "Gbit/s", "CPU ns/byte", "sender CPU s",
                "receiver CPU s", "retrans");
        for (int i = 0; i < 3; i++)
            srow_table(table, &rows[i]);
        if (both)
            fprintf(table, "\n  hotpath / kernel: %.2fx Gbit/s, %.2fx CPU per byte", ratio_g, ratio_c);
        if (both1)
            fprintf(table, " (hotpath-1cpu: %.2fx CPU per byte)", ratio_c1);
        if (both || both1)
            fprintf(table, "\n");
        fprintf(table, "\ngoals\n  [%s] %s\n", met ? " met " : "MISSED", goal);
    }
    return h->n && k->n ? 0 : 1;
}

/* ---- tcp-rr, hotpath: one thread polls both stacks ------------------------------------ */

struct rr_res {
    double tps, ns_per_tx;
    uint64_t transactions;
};

static int hp_rr_round(int cpu, double warm, double secs, struct rr_res *r, char *why, size_t len)
{
    memset(r, 0, sizeof *r);
    struct pair p;
    if (pair_open(&p, true, why, len) < 0) {
        pair_close(&p);
        return -1;
    }
    cpu_set_t saved;
    bool restore = cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (cpu >= 0)
        tool_pin(cpu);
    struct hp_stack *cs = p.st[0], *ss = p.st[1];
    struct hp_tcp_sock *ct = p.t[0], *st = p.t[1];
    bool outstanding = false, c_ready = true, s_ready = true, measuring = false;
    uint64_t tx = 0, tx0 = 0;
    double now = tool_now_s(), warm_end = now + warm, end = 0, t0 = 0, c0 = 0;
    unsigned iter = 0;
    int err = 0;
    uint8_t buf[64] = {'x'};
    while (!err) {
        if ((++iter & 63) == 0) {
            now = tool_now_s();
            if (!measuring && now >= warm_end) {
                measuring = true;
                t0 = now;
                c0 = tool_thread_cpu_s();
                tx0 = tx;
                end = now + secs;
            } else if (measuring && now >= end) {
                break;
            }
        }
        /* The client: one byte out when the last answer is in. */
        if (!outstanding) {
            long n = hp_tcp_send(ct, buf, 1);
            if (n == 1)
                outstanding = true;
            else if (n != -EAGAIN)
                err = n ? (int)-n : EPIPE;
        }
        hp_stack_poll(cs);
        if (events_for(cs, &p.tag[0], HP_EV_IN))
            c_ready = true;
        while (c_ready) {
            long n = hp_tcp_recv(ct, buf, sizeof buf);
            if (n > 0) {
                tx += (uint64_t)n;
                outstanding = false;
                continue;
            }
            c_ready = false;
            if (n != -EAGAIN)
                err = n ? (int)-n : EPIPE;
        }
        /* The server: echo what came. */
        hp_stack_poll(ss);
        if (events_for(ss, &p.tag[1], HP_EV_IN))
            s_ready = true;
        while (s_ready) {
            long n = hp_tcp_recv(st, buf, sizeof buf);
            if (n > 0) {
                if (hp_tcp_send(st, buf, (size_t)n) != n)
                    err = EIO;
                continue;
            }
            s_ready = false;
            if (n != -EAGAIN)
                err = n ? (int)-n : EPIPE;
        }
    }
    double used = tool_thread_cpu_s() - c0;
    double el = tool_now_s() - t0;
    int rc = -1;
    if (err) {
        snprintf(why, len, "hotpath: the ping-pong failed: %s", hp_strerror(-err));
    } else if (tx == tx0 || !(el > 0)) {
        snprintf(why, len, "hotpath: no transaction completed");
    } else {
        r->transactions = tx - tx0;
        r->tps = (double)r->transactions / el;
        r->ns_per_tx = used * 1e9 / (double)r->transactions;
        rc = 0;
    }
    pair_close(&p);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
    return rc;
}

int bench_tcp_rr(const struct bench_opts *o, FILE *table)
{
    int reps = o->reps ? o->reps : (o->quick ? 1 : 3);
    double secs = o->quick ? 0.3 : 1.0, warm = o->quick ? 0.1 : 0.2;
    int a, b;
    pick_cpus(o, &a, &b);
    double ht[MAX_REPS], hc[MAX_REPS], kt[MAX_REPS], kc[MAX_REPS];
    char hwhy[200] = "", kwhy[200] = "";
    int hn = 0, kn = 0;
    for (int i = 0; i < reps; i++) {
        if (o->progress)
            o->progress(o->progress_ctx, 2 * i, 2 * reps, "tcp-rr, hotpath");
        struct rr_res r;
        if (!hwhy[0] && hp_rr_round(a, warm, secs, &r, hwhy, sizeof hwhy) == 0) {
            ht[hn] = r.tps;
            hc[hn++] = r.ns_per_tx;
        }
        if (o->progress)
            o->progress(o->progress_ctx, 2 * i + 1, 2 * reps, "tcp-rr, kernel");
        struct tcpk_opts ko = {.cpu_a = a, .cpu_b = b, .chunk = 1, .warm_s = warm, .seconds = secs};
        struct tcpk_result kr;
        if (!kwhy[0] && tcpk_rr_run(&ko, &kr) == 0) {
            kt[kn] = (double)kr.count / kr.seconds;
            kc[kn++] = (kr.cpu_a_s + kr.cpu_b_s) * 1e9 / (double)kr.count;
        } else if (!kwhy[0]) {
            snprintf(kwhy, sizeof kwhy, "%s", kr.why);
        }
    }
    if (o->progress)
        o->progress(o->progress_ctx, 2 * reps, 2 * reps, "done");
    bool hok = hn > 0, kok = kn > 0;
    double hT = tool_median(ht, hn), hC = tool_median(hc, hn), kT = tool_median(kt, kn), kC = tool_median(kc, kn);
    bool both = hok && kok && kC > 0 && kT > 0;
    double ratio_c = both ? hC / kC : 0, ratio_t = both ? hT / kT : 0;
    bool met = both && ratio_c <= RR_GOAL;
    char goal[240];
    if (both)
        snprintf(goal, sizeof goal, "hotpath CPU per 1-byte transaction <= %.1fx the kernel's (%.0f ns vs %.0f ns: %.3fx)",
                 RR_GOAL, hC, kC, ratio_c);
    else
        snprintf(goal, sizeof goal, "hotpath CPU per 1-byte transaction <= %.1fx the kernel's (not measured)", RR_GOAL);
    FILE *jf[2] = {o->json ? stdout : NULL, o->json_out};
    for (int k = 0; k < 2; k++) {
        FILE *f = jf[k];
        if (!f)
            continue;
        json_head(f, "tcp-rr", reps, secs, warm, a, b);
        fprintf(f, ", \"message_bytes\": 1, \"rows\": [{\"impl\": \"hotpath\", \"link\": \"mem\", \"threads\": "
                   "\"one thread polls both stacks\"");
        if (hok)
            fprintf(f, ", \"transactions_per_s\": %.0f, \"cpu_ns_per_transaction\": %.2f}", hT, hC);
        else {
            fprintf(f, ", \"failed\": ");
            tool_json_str(f, hwhy);
            fprintf(f, "}");
        }
        fprintf(f, ", {\"impl\": \"kernel\", \"link\": \"loopback\", \"threads\": \"client and server threads, "
                   "blocking, TCP_NODELAY\"");
        if (kok)
            fprintf(f, ", \"transactions_per_s\": %.0f, \"cpu_ns_per_transaction\": %.2f}", kT, kC);
        else {
            fprintf(f, ", \"failed\": ");
            tool_json_str(f, kwhy);
            fprintf(f, "}");
        }
        fprintf(f, "]");
        json_num(f, "ratio_cpu_per_transaction", both, ratio_c);
        json_num(f, "ratio_transactions_per_s", both, ratio_t);
        fprintf(f, ", \"goal_met\": %s, \"goals\": [{\"goal\": ", met ? "true" : "false");
        tool_json_str(f, goal);
        fprintf(f, ", \"met\": %s}]}\n", met ? "true" : "false");
    }
    if (!o->json) {
        table_head(table, "tcp-rr: 1-byte request / response on one TCP flow, hotpath over mem vs the kernel over loopback");
        fprintf(table,
                "setup:      %d round%s of %.2g s after %.2g s unmeasured, rows alternating; medians\n"
                "hotpath:    ONE thread (CPU %d) polls both stacks in turn: client send, poll, recv;\n"
                "            server poll, recv, send back; TCP_NODELAY. Its CPU time is all the work of\n"
                "            both ends (two busy-polling threads would count their spinning instead)\n"
                "kernel:     a client thread (CPU %d) and a server thread (CPU %d), blocking write /\n"
                "            read of 1 byte over 127.0.0.1, TCP_NODELAY, like netperf TCP_RR\n"
                "CPU/trans:  thread CPU time (CLOCK_THREAD_CPUTIME_ID) of every thread involved over\n"
                "            the transactions completed\n\n",
                reps, reps == 1 ? "" : "s", secs, warm, a, a, b);
        fprintf(table, "  %-8s %14s %18s\n", "impl", "transactions/s", "CPU ns/transaction");
        if (hok)
            fprintf(table, "  %-8s %14.0f %18.1f\n", "hotpath", hT, hC);
        else
            fprintf(table, "  %-8s failed: %s\n", "hotpath", hwhy);
        if (kok)
            fprintf(table, "  %-8s %14.0f %18.1f\n", "kernel", kT, kC);
        else
            fprintf(table, "  %-8s failed: %s\n", "kernel", kwhy);
        if (both)
            fprintf(table, "\n  hotpath / kernel: %.3fx CPU per transaction, %.2fx transactions/s\n", ratio_c, ratio_t);
        fprintf(table, "\ngoals\n  [%s] %s\n", met ? " met " : "MISSED", goal);
    }
    return hok && kok ? 0 : 1;
}
