/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench tcp-stream` and `tcp-rr`: one TCP flow between two stacks over the mem link, beside the kernel's TCP over loopback in the same run. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "bench.h"
#include "harness.h"
#include "tcp_kernel.h"
#include "tool.h"

#define PORT             5201
#define CHUNK            (128 * 1024) /* bytes per write and read, both peers (iperf3's default) */
#define POOL_BUFS        16384
#define STREAM_GOAL_GBPS 20.0
#define RR_GOAL          0.1 /* hotpath CPU per transaction <= this x the kernel's */

static const uint8_t A4[4] = {198, 18, 0, 1}, B4[4] = {198, 18, 0, 2};

/* ---- two stacks over a mem pair, one connection between them ------------------------ */

struct pair {
    struct hp_pool *pool;
    struct hp_link *e[2];
    struct hp_stack *st[2]; /* 0: sender / client, 1: receiver / server */
    struct hp_tcp_sock *l, *t[2];
    int tag[2]; /* the user pointers of t[0] and t[1] */
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
        if (ifx < 0 || hp_stack_add_addr(p->st[i], ifx, HP_AF_INET4, i ? B4 : A4, 24) < 0) {
            snprintf(why, len, "cannot set up the %s stack", i ? "receiving" : "sending");
            return -1;
        }
    }
    p->l = hp_tcp_open(p->st[1], HP_AF_INET4, NULL);
    struct hp_sockaddr any = {.family = HP_AF_INET4, .port = PORT},
                       to = {.family = HP_AF_INET4, .port = PORT};
    memcpy(to.addr, B4, 4);
    int rc = p->l ? hp_tcp_bind(p->l, &any) : -errno;
    if (rc == 0)
        rc = hp_tcp_listen(p->l, 16);
    p->t[0] = rc == 0 ? hp_tcp_open(p->st[0], HP_AF_INET4, &p->tag[0]) : NULL;
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
        snprintf(why, len, "hotpath TCP: no connection within 3 s (client %s, %s)",
                 hp_tcp_state_name(hp_tcp_state(p->t[0])),
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

/* One send (tx) or receive of up to cap bytes while *ready: the bytes
 * moved (> 0); 0 when the socket has no more (EAGAIN: *ready cleared until
 * its next event); -errno on a failure (*ready cleared). */
static long io_ready(struct hp_tcp_sock *t, bool tx, uint8_t *buf, size_t cap, bool *ready)
{
    if (!*ready)
        return 0;
    long n = tx ? hp_tcp_send(t, buf, cap) : hp_tcp_recv(t, buf, cap);
    if (n > 0)
        return n;
    *ready = false;
    return n == -EAGAIN ? 0 : n ? n : -EPIPE;
}

/* ---- tcp-stream, hotpath: a sender thread and a receiver thread -------------------- */

struct sside {
    struct pair *p;
    int i; /* 0 sender, 1 receiver */
    int cpu;
    _Atomic int *phase;
    uint8_t *buf;
    uint64_t bytes;
    struct hb_window win; /* the measured interval */
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
    hb_window_init(&s->win);
    while (!hb_window_poll(&s->win, s->phase, &s->bytes, 1)) {
        hp_stack_poll(st);
        if (events_for(st, tag, bits))
            ready = true;
        long n;
        while (!s->err && (n = io_ready(t, tx, s->buf, CHUNK, &ready)) != 0) {
            if (n < 0)
                s->err = (int)-n;
            else
                s->bytes += (uint64_t)n;
        }
    }
    hp_pool_thread_flush(s->p->pool);
    hp_thread_exit();
    return NULL;
}

/* A round's values, as every row of the stream table has them. */
enum { S_GBPS, S_NS_PER_BYTE, S_CPU_TX, S_CPU_RX, S_RETRANS, S_NVALUES };

static int hp_stream_round(int cpu_tx, int cpu_rx, double warm, double secs, double *v, char *why,
                           size_t len)
{
    struct pair p;
    if (pair_open(&p, false, why, len) < 0) {
        pair_close(&p);
        return -1;
    }
    _Atomic int phase;
    atomic_init(&phase, HB_SETUP);
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
    if (started == 2)
        hb_phases_run(&phase, warm, secs, NULL, NULL);
    atomic_store_explicit(&phase, HB_STOP, memory_order_release);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    if (started < 2) {
        snprintf(why, len, "cannot start the threads");
    } else if (s[0].err || s[1].err) {
        snprintf(why, len, "hotpath: the %s failed: %s", s[0].err ? "sender" : "receiver",
                 hp_strerror(-(s[0].err ? s[0].err : s[1].err)));
    } else if (!s[1].win.n[0] || !(s[1].win.secs > 0)) {
        snprintf(why, len, "hotpath: no byte arrived in the measured interval");
    } else {
        double bytes = (double)s[1].win.n[0];
        v[S_GBPS] = bytes * 8 / s[1].win.secs / 1e9;
        v[S_CPU_TX] = s[0].win.cpu_s;
        v[S_CPU_RX] = s[1].win.cpu_s;
        v[S_NS_PER_BYTE] = (s[0].win.cpu_s + s[1].win.cpu_s) * 1e9 / bytes;
        v[S_RETRANS] = (double)hp_stack_counter(p.st[0], HP_CTR_TCP_RETRANS_SEGS);
        rc = 0;
    }
out:
    free(buf[0]);
    free(buf[1]);
    pair_close(&p);
    return rc;
}

/* Pin the calling thread to cpu for a round; *saved to restore after. */
static bool pin_for_round(int cpu, cpu_set_t *saved)
{
    bool restore = cpu >= 0 && sched_getaffinity(0, sizeof *saved, saved) == 0;
    if (cpu >= 0)
        tool_pin(cpu);
    return restore;
}

/* Send until the stack takes no more, then receive what arrived (both
 * stacks polled in turn); *bytes counts what was received. -errno of a
 * failure, 0. */
static int stream_step_1t(struct pair *p, uint8_t *buf, bool *tx_ready, bool *rx_ready,
                          uint64_t *bytes)
{
    long n;
    while ((n = io_ready(p->t[0], true, buf, CHUNK, tx_ready)) > 0)
        ;
    if (n < 0)
        return (int)n;
    hp_stack_poll(p->st[0]);
    if (events_for(p->st[0], &p->tag[0], HP_EV_OUT))
        *tx_ready = true;
    hp_stack_poll(p->st[1]);
    if (events_for(p->st[1], &p->tag[1], HP_EV_IN))
        *rx_ready = true;
    while ((n = io_ready(p->t[1], false, buf, CHUNK, rx_ready)) > 0)
        *bytes += (uint64_t)n;
    return (int)n;
}

/* The same flow with both stacks on this thread, polled in turn: no
 * partner to wait for, so its CPU per byte is the work alone. */
static int hp_stream_round_1t(int cpu, double warm, double secs, double *v, char *why, size_t len)
{
    struct pair p;
    if (pair_open(&p, false, why, len) < 0) {
        pair_close(&p);
        return -1;
    }
    cpu_set_t saved;
    bool restore = pin_for_round(cpu, &saved);
    uint8_t *buf = malloc(CHUNK);
    int rc = -1, err = 0;
    bool tx_ready = true, rx_ready = true;
    uint64_t bytes = 0;
    struct hb_clock c;
    hb_clock_start(&c, warm, secs, 64);
    for (int tick = HB_TICK_WARM; buf && !err && tick != HB_TICK_CLOSE;) {
        if ((tick = hb_clock_tick(&c)) == HB_TICK_OPEN)
            bytes = 0;
        err = stream_step_1t(&p, buf, &tx_ready, &rx_ready, &bytes);
    }
    hb_clock_close(&c);
    if (!buf) {
        snprintf(why, len, "out of memory");
    } else if (err) {
        snprintf(why, len, "hotpath (one thread): %s", hp_strerror(err));
    } else if (!bytes || !(c.secs > 0)) {
        snprintf(why, len, "hotpath (one thread): no byte arrived in the measured interval");
    } else {
        v[S_GBPS] = (double)bytes * 8 / c.secs / 1e9;
        v[S_CPU_TX] = c.cpu_s;
        v[S_NS_PER_BYTE] = c.cpu_s * 1e9 / (double)bytes;
        v[S_RETRANS] = (double)hp_stack_counter(p.st[0], HP_CTR_TCP_RETRANS_SEGS);
        rc = 0;
    }
    free(buf);
    pair_close(&p);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
    return rc;
}

/* ---- CPUs, rounds and reports ----------------------------------------------------------- */

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

/* What both benchmarks' rounds share. */
struct tcp_run {
    int reps, a, b;
    double secs, warm;
};

static void tcp_run_init(struct tcp_run *t, const struct bench_opts *o)
{
    t->reps = o->reps ? o->reps : (o->quick ? 1 : 3);
    t->secs = o->quick ? 0.3 : 1.0;
    t->warm = o->quick ? 0.1 : 0.2;
    pick_cpus(o, &t->a, &t->b);
}

static json_t *tcp_json_head(const char *name, const struct tcp_run *t)
{
    json_t *j = hb_json_head(name);
    json_object_set_new(j, "reps", json_integer(t->reps));
    json_object_set_new(j, "round_s", json_real(t->secs));
    json_object_set_new(j, "warmup_s", json_real(t->warm));
    json_object_set_new(j, "cpus", json_pack("[i, i]", t->a, t->b));
    return j;
}

/* A row of a report: {"impl", "link", extra keys...} then its numbers, or
 * "failed" with why. */
static json_t *tcp_json_row(const struct hb_row *w, const char *link, const char *const *keys,
                            const int *decimals, int nkeys)
{
    json_t *r = json_pack("{s:s, s:s}", "impl", w->name, "link", link);
    if (!w->n) {
        json_object_set_new(r, "failed", json_string(w->why));
        return r;
    }
    for (int i = 0; i < nkeys; i++)
        json_object_set_new(r, keys[i], tool_json_num(w->median[i], decimals[i]));
    return r;
}

static json_t *ratio_or_null(bool ok, double v)
{
    return ok ? tool_json_num(v, 6) : json_null();
}

/* ---- tcp-stream ------------------------------------------------------------------------- */

enum { SR_HOTPATH, SR_ONE_CPU, SR_KERNEL, SR_N };

static int stream_round(void *ctx, int row, double *v, double *disturbed, char *why, size_t len)
{
    (void)disturbed;
    const struct tcp_run *t = ctx;
    if (row == SR_HOTPATH)
        return hp_stream_round(t->a, t->b, t->warm, t->secs, v, why, len) < 0 ? 1 : 0;
    if (row == SR_ONE_CPU)
        return hp_stream_round_1t(t->a, t->warm, t->secs, v, why, len) < 0 ? 1 : 0;
    struct tcpk_opts ko = {.cpu_a = t->a,
                           .cpu_b = t->b,
                           .chunk = CHUNK,
                           .warm_s = t->warm,
                           .seconds = t->secs};
    struct tcpk_result kr;
    if (tcpk_stream_run(&ko, &kr) < 0) {
        snprintf(why, len, "%s", kr.why);
        return 1;
    }
    v[S_GBPS] = (double)kr.count * 8 / kr.seconds / 1e9;
    v[S_NS_PER_BYTE] = (kr.cpu_a_s + kr.cpu_b_s) * 1e9 / (double)kr.count;
    v[S_CPU_TX] = kr.cpu_a_s;
    v[S_CPU_RX] = kr.cpu_b_s;
    v[S_RETRANS] = (double)kr.retrans;
    return 0;
}

struct stream_report {
    struct tcp_run t;
    struct hb_row rows[SR_N];
    bool both, both1;
    double ratio_g, ratio_c, ratio_c1;
    struct hb_goals goals;
};

static json_t *stream_json(const struct stream_report *s)
{
    static const char *const keys[] = {"gbps", "cpu_ns_per_byte", "cpu_sender_s", "cpu_receiver_s"};
    static const int dec[] = {4, 5, 4, 4};
    json_t *j = tcp_json_head("tcp-stream", &s->t);
    json_object_set_new(j, "mtu", json_integer(1500));
    json_object_set_new(j, "write_bytes", json_integer(CHUNK));
    json_t *rows = json_array();
    for (int i = 0; i < SR_N; i++) {
        json_t *r = tcp_json_row(&s->rows[i], i == SR_KERNEL ? "loopback" : "mem", keys, dec, 4);
        if (s->rows[i].n)
            json_object_set_new(r, "retrans_segs",
                                json_integer((json_int_t)s->rows[i].sum[S_RETRANS]));
        json_array_append_new(rows, r);
    }
    json_object_set_new(j, "rows", rows);
    json_object_set_new(j, "ratio_gbps", ratio_or_null(s->both, s->ratio_g));
    json_object_set_new(j, "ratio_cpu_per_byte", ratio_or_null(s->both, s->ratio_c));
    json_object_set_new(j, "ratio_cpu_per_byte_one_cpu", ratio_or_null(s->both1, s->ratio_c1));
    hb_json_goals(j, &s->goals);
    return j;
}

static void stream_table(const struct stream_report *s, FILE *f)
{
    const struct tcp_run *t = &s->t;
    hb_table_head(
        f, "tcp-stream: one TCP flow, hotpath over the mem link vs the kernel over loopback");
    fprintf(f,
            "setup:      sender thread on CPU %d, receiver thread on CPU %d; %d KiB writes and "
            "reads (copies),\n"
            "            %d round%s of %.2g s after %.2g s unmeasured, rows alternating; medians\n"
            "hotpath:    two stacks over a mem pair (MTU 1500), each on its thread, busy-polling:\n"
            "            hp_stack_poll, events, hp_tcp_send / hp_tcp_recv until EAGAIN\n"
            "hotpath-1cpu: the same flow, both stacks polled in turn by one thread on CPU %d (no\n"
            "            partner to spin for: its CPU per byte is the work alone; info only)\n"
            "kernel:     one AF_INET connection over 127.0.0.1 (lo: MTU 65536, GSO/GRO), blocking\n"
            "            write / read, default buffers (autotuning), like iperf3\n"
            "CPU/byte:   thread CPU time (CLOCK_THREAD_CPUTIME_ID) of both threads over the bytes\n"
            "            received; a busy-polling thread's CPU time is its wall time\n\n",
            t->a, t->b, CHUNK / 1024, t->reps, t->reps == 1 ? "" : "s", t->secs, t->warm, t->a);
    static const struct hb_col cols[] = {{"Gbit/s", 8, 2, NULL},
                                         {"CPU ns/byte", 12, 4, NULL},
                                         {"sender CPU s", 14, 3, NULL},
                                         {"receiver CPU s", 16, 3, NULL},
                                         {"retrans", 8, 0, NULL}};
    hb_table_cols(f, 14, "impl", cols, 5);
    for (int i = 0; i < SR_N; i++) {
        const struct hb_row *w = &s->rows[i];
        double v[5] = {w->median[0], w->median[1], w->median[2], w->median[3], w->sum[S_RETRANS]};
        if (w->n)
            hb_table_row(f, 14, w->name, cols, 5, v);
        else
            hb_table_skip(f, 14, w->name, "failed", w->why);
    }
    if (s->both)
        fprintf(f, "\n  hotpath / kernel: %.2fx Gbit/s, %.2fx CPU per byte", s->ratio_g,
                s->ratio_c);
    if (s->both1)
        fprintf(f, " (hotpath-1cpu: %.2fx CPU per byte)", s->ratio_c1);
    if (s->both || s->both1)
        fprintf(f, "\n");
    hb_goals_table(&s->goals, f);
}

int bench_tcp_stream(const struct bench_opts *o, FILE *table)
{
    static struct stream_report s; /* one benchmark runs at a time */
    memset(&s, 0, sizeof s);
    tcp_run_init(&s.t, o);
    static const char *const names[SR_N] = {"hotpath", "hotpath-1cpu", "kernel"};
    for (int i = 0; i < SR_N; i++)
        s.rows[i].name = names[i];
    struct hb_rounds h = {.reps = s.t.reps,
                          .nrows = SR_N,
                          .nvalues = S_NVALUES,
                          .progress = o->progress,
                          .progress_ctx = o->progress_ctx};
    hb_rounds_run(&h, s.rows, stream_round, &s.t);
    const struct hb_row *hp = &s.rows[SR_HOTPATH], *h1 = &s.rows[SR_ONE_CPU],
                        *k = &s.rows[SR_KERNEL];
    s.both = hp->n && k->n && k->median[S_GBPS] > 0 && k->median[S_NS_PER_BYTE] > 0;
    s.ratio_g = s.both ? hp->median[S_GBPS] / k->median[S_GBPS] : 0;
    s.ratio_c = s.both ? hp->median[S_NS_PER_BYTE] / k->median[S_NS_PER_BYTE] : 0;
    s.both1 = h1->n && k->n && k->median[S_NS_PER_BYTE] > 0;
    s.ratio_c1 = s.both1 ? h1->median[S_NS_PER_BYTE] / k->median[S_NS_PER_BYTE] : 0;
    hb_goal(&s.goals, hp->n && hp->median[S_GBPS] >= STREAM_GOAL_GBPS,
            "one hotpath TCP flow over the mem link (MTU 1500) >= %.0f Gbit/s (%s)",
            STREAM_GOAL_GBPS, hp->n ? tool_fmt("%.2f Gbit/s", hp->median[S_GBPS]) : "not measured");
    if (o->json || o->json_out)
        hb_json_emit(stream_json(&s), o->json, o->json_out);
    if (!o->json)
        stream_table(&s, table);
    return hp->n && k->n ? 0 : 1;
}

/* ---- tcp-rr, hotpath: one thread polls both stacks ------------------------------------ */

/* The client: one byte out when the last answer is in; *tx counts answers. */
static int rr_client_step(struct pair *p, uint8_t *buf, size_t cap, bool *outstanding, bool *ready,
                          uint64_t *tx)
{
    if (!*outstanding) {
        long n = hp_tcp_send(p->t[0], buf, 1);
        if (n == 1)
            *outstanding = true;
        else if (n != -EAGAIN)
            return n ? (int)n : -EPIPE;
    }
    hp_stack_poll(p->st[0]);
    if (events_for(p->st[0], &p->tag[0], HP_EV_IN))
        *ready = true;
    long n;
    while ((n = io_ready(p->t[0], false, buf, cap, ready)) > 0) {
        *tx += (uint64_t)n;
        *outstanding = false;
    }
    return (int)n;
}

/* The server: echo what came. */
static int rr_server_step(struct pair *p, uint8_t *buf, size_t cap, bool *ready)
{
    hp_stack_poll(p->st[1]);
    if (events_for(p->st[1], &p->tag[1], HP_EV_IN))
        *ready = true;
    long n;
    while ((n = io_ready(p->t[1], false, buf, cap, ready)) > 0)
        if (hp_tcp_send(p->t[1], buf, (size_t)n) != n)
            return -EIO;
    return (int)n;
}

/* A round's values in the rr table. */
enum { R_TPS, R_NS, R_NVALUES };

static int hp_rr_round(int cpu, double warm, double secs, double *v, char *why, size_t len)
{
    struct pair p;
    if (pair_open(&p, true, why, len) < 0) {
        pair_close(&p);
        return -1;
    }
    cpu_set_t saved;
    bool restore = pin_for_round(cpu, &saved);
    bool outstanding = false, c_ready = true, s_ready = true;
    uint64_t tx = 0;
    int err = 0, rc = -1;
    uint8_t buf[64] = {'x'};
    struct hb_clock c;
    hb_clock_start(&c, warm, secs, 64);
    for (int tick = HB_TICK_WARM; !err && tick != HB_TICK_CLOSE;) {
        if ((tick = hb_clock_tick(&c)) == HB_TICK_OPEN)
            tx = 0;
        err = rr_client_step(&p, buf, sizeof buf, &outstanding, &c_ready, &tx);
        if (!err)
            err = rr_server_step(&p, buf, sizeof buf, &s_ready);
    }
    hb_clock_close(&c);
    if (err) {
        snprintf(why, len, "hotpath: the ping-pong failed: %s", hp_strerror(err));
    } else if (!tx || !(c.secs > 0)) {
        snprintf(why, len, "hotpath: no transaction completed");
    } else {
        v[R_TPS] = (double)tx / c.secs;
        v[R_NS] = c.cpu_s * 1e9 / (double)tx;
        rc = 0;
    }
    pair_close(&p);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
    return rc;
}

enum { RR_HOTPATH, RR_KERNEL, RR_N };

static int rr_round(void *ctx, int row, double *v, double *disturbed, char *why, size_t len)
{
    (void)disturbed;
    const struct tcp_run *t = ctx;
    if (row == RR_HOTPATH)
        return hp_rr_round(t->a, t->warm, t->secs, v, why, len) < 0 ? 1 : 0;
    struct tcpk_opts ko = {.cpu_a = t->a,
                           .cpu_b = t->b,
                           .chunk = 1,
                           .warm_s = t->warm,
                           .seconds = t->secs};
    struct tcpk_result kr;
    if (tcpk_rr_run(&ko, &kr) < 0) {
        snprintf(why, len, "%s", kr.why);
        return 1;
    }
    v[R_TPS] = (double)kr.count / kr.seconds;
    v[R_NS] = (kr.cpu_a_s + kr.cpu_b_s) * 1e9 / (double)kr.count;
    return 0;
}

struct rr_report {
    struct tcp_run t;
    struct hb_row rows[RR_N];
    bool both;
    double ratio_c, ratio_t;
    struct hb_goals goals;
};

static json_t *rr_json(const struct rr_report *s)
{
    static const char *const keys[] = {"transactions_per_s", "cpu_ns_per_transaction"};
    static const int dec[] = {0, 2};
    static const char *const threads[RR_N] = {"one thread polls both stacks",
                                              "client and server threads, blocking, TCP_NODELAY"};
    json_t *j = tcp_json_head("tcp-rr", &s->t);
    json_object_set_new(j, "message_bytes", json_integer(1));
    json_t *rows = json_array();
    for (int i = 0; i < RR_N; i++) {
        json_t *r = tcp_json_row(&s->rows[i], i == RR_KERNEL ? "loopback" : "mem", keys, dec, 2);
        json_object_set_new(r, "threads", json_string(threads[i]));
        json_array_append_new(rows, r);
    }
    json_object_set_new(j, "rows", rows);
    json_object_set_new(j, "ratio_cpu_per_transaction", ratio_or_null(s->both, s->ratio_c));
    json_object_set_new(j, "ratio_transactions_per_s", ratio_or_null(s->both, s->ratio_t));
    hb_json_goals(j, &s->goals);
    return j;
}

static void rr_table(const struct rr_report *s, FILE *f)
{
    const struct tcp_run *t = &s->t;
    hb_table_head(f, "tcp-rr: 1-byte request / response on one TCP flow, hotpath over mem vs the "
                     "kernel over loopback");
    fprintf(
        f,
        "setup:      %d round%s of %.2g s after %.2g s unmeasured, rows alternating; medians\n"
        "hotpath:    ONE thread (CPU %d) polls both stacks in turn: client send, poll, recv;\n"
        "            server poll, recv, send back; TCP_NODELAY. Its CPU time is all the work of\n"
        "            both ends (two busy-polling threads would count their spinning instead)\n"
        "kernel:     a client thread (CPU %d) and a server thread (CPU %d), blocking write /\n"
        "            read of 1 byte over 127.0.0.1, TCP_NODELAY, like netperf TCP_RR\n"
        "CPU/trans:  thread CPU time (CLOCK_THREAD_CPUTIME_ID) of every thread involved over\n"
        "            the transactions completed\n\n",
        t->reps, t->reps == 1 ? "" : "s", t->secs, t->warm, t->a, t->a, t->b);
    static const struct hb_col cols[] = {{"transactions/s", 14, 0, NULL},
                                         {"CPU ns/transaction", 18, 1, NULL}};
    hb_table_cols(f, 8, "impl", cols, 2);
    for (int i = 0; i < RR_N; i++) {
        if (s->rows[i].n)
            hb_table_row(f, 8, s->rows[i].name, cols, 2, s->rows[i].median);
        else
            hb_table_skip(f, 8, s->rows[i].name, "failed", s->rows[i].why);
    }
    if (s->both)
        fprintf(f, "\n  hotpath / kernel: %.3fx CPU per transaction, %.2fx transactions/s\n",
                s->ratio_c, s->ratio_t);
    hb_goals_table(&s->goals, f);
}

int bench_tcp_rr(const struct bench_opts *o, FILE *table)
{
    static struct rr_report s; /* one benchmark runs at a time */
    memset(&s, 0, sizeof s);
    tcp_run_init(&s.t, o);
    s.rows[RR_HOTPATH].name = "hotpath";
    s.rows[RR_KERNEL].name = "kernel";
    struct hb_rounds h = {.reps = s.t.reps,
                          .nrows = RR_N,
                          .nvalues = R_NVALUES,
                          .progress = o->progress,
                          .progress_ctx = o->progress_ctx};
    hb_rounds_run(&h, s.rows, rr_round, &s.t);
    const struct hb_row *hp = &s.rows[RR_HOTPATH], *k = &s.rows[RR_KERNEL];
    s.both = hp->n && k->n && k->median[R_NS] > 0 && k->median[R_TPS] > 0;
    s.ratio_c = s.both ? hp->median[R_NS] / k->median[R_NS] : 0;
    s.ratio_t = s.both ? hp->median[R_TPS] / k->median[R_TPS] : 0;
    if (s.both)
        hb_goal(
            &s.goals, s.ratio_c <= RR_GOAL,
            "hotpath CPU per 1-byte transaction <= %.1fx the kernel's (%.0f ns vs %.0f ns: %.3fx)",
            RR_GOAL, hp->median[R_NS], k->median[R_NS], s.ratio_c);
    else
        hb_goal(&s.goals, false,
                "hotpath CPU per 1-byte transaction <= %.1fx the kernel's (not measured)", RR_GOAL);
    if (o->json || o->json_out)
        hb_json_emit(rr_json(&s), o->json, o->json_out);
    if (!o->json)
        rr_table(&s, table);
    return hp->n && k->n ? 0 : 1;
}
