/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench loop`: what the event loop costs the busy path: UDP request/response between two stacks over mem, each on its own thread, busy-polled by hand as before the loop vs on hp_loop_wait with each spin setting. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <hotpath/link.h>
#include <hotpath/log.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "bench.h"
#include "tool.h"

/*
 * One flow, one transaction outstanding: the client sends a 1-byte datagram,
 * the server echoes it, the client sends the next when the echo is back.
 * Both sides are driven the same way:
 *
 *   busy         hp_stack_poll() then hp_stack_events() in a loop, what
 *                hotpath serve did before the loop (the baseline);
 *   loop-forever hp_loop_wait() with HP_LOOP_SPIN_FOREVER: the loop's own
 *                cost on a path that never sleeps;
 *   loop-50us    the default: the same while traffic flows;
 *   loop-0       never spin: each side sleeps whenever it waits for the
 *                other, and is woken through the mem link's eventfd.
 *
 * Reported per variant: transactions per second, the round trip's median and
 * 99th percentile (the client's clock around each transaction), and both
 * threads' CPU time per transaction; the ratios are against busy, measured
 * in the same run, repetitions interleaved, medians taken.
 */

enum { V_BUSY, V_FOREVER, V_DEFAULT, V_NOSPIN, NV };
static const char *const vname[NV] = {"busy", "loop-forever", "loop-50us", "loop-0"};
static const uint32_t vspin[NV] = {0, HP_LOOP_SPIN_FOREVER, HP_LOOP_SPIN_US_DEFAULT, 0};

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};
#define PORT    7
#define HIST_US 4096 /* round trips up to 4 ms in 1 us buckets; beyond, the last */

struct side {
    struct hp_stack *s;
    struct hp_loop *l;
    struct hp_udp_sock *u;
    int tag;
    double cpu;
};

struct run {
    int variant;
    struct side x[2]; /* client, server */
    double seconds;
    _Atomic int stop;
    uint64_t txns;
    uint32_t hist[HIST_US];
};

struct result {
    double tps, p50_us, p99_us, cpu_ns;
};

/* Wait for the next event of our socket (or nothing, in busy mode: the
 * caller just tries to receive). */
static void side_wait(struct run *r, struct side *d)
{
    if (r->variant == V_BUSY) {
        struct hp_event ev[8];
        hp_stack_poll(d->s);
        hp_stack_events(d->s, ev, 8);
        return;
    }
    struct hp_loop_event ev[8];
    hp_loop_wait(d->l, ev, 8, 100);
}

static void *server_main(void *arg)
{
    struct run *r = arg;
    struct side *d = &r->x[1];
    double c0 = tool_thread_cpu_s();
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        side_wait(r, d);
        struct hp_buf *b;
        struct hp_sockaddr from;
        while (hp_udp_recv_buf(d->u, &b, &from) >= 0)
            if (hp_udp_send_buf(d->u, b, &from) < 0)
                hp_buf_free(b);
    }
    d->cpu = tool_thread_cpu_s() - c0;
    hp_thread_exit();
    return NULL;
}

static void client_run(struct run *r)
{
    struct side *d = &r->x[0];
    struct hp_sockaddr to = {.family = 4, .port = PORT};
    memcpy(to.addr, IP4[1], 4);
    double c0 = tool_thread_cpu_s(), end = tool_now_s() + r->seconds;
    char byte = 'r';
    while (tool_now_s() < end) {
        double tsend = tool_now_s();
        if (hp_udp_sendto(d->u, &byte, 1, &to) != 1) {
            side_wait(r, d);
            continue;
        }
        while (hp_udp_recvfrom(d->u, &byte, 1, NULL) < 0 && tool_now_s() - tsend < 0.5)
            side_wait(r, d);
        double us = (tool_now_s() - tsend) * 1e6;
        r->hist[us < HIST_US - 1 ? (unsigned)us : HIST_US - 1]++;
        r->txns++;
    }
    d->cpu = tool_thread_cpu_s() - c0;
}

static double pct(const struct run *r, double q)
{
    uint64_t want = (uint64_t)((double)r->txns * q), seen = 0;
    for (unsigned i = 0; i < HIST_US; i++) {
        seen += r->hist[i];
        if (seen > want)
            return i + 0.5;
    }
    return HIST_US;
}

static int setup(struct run *r, struct hp_link *e[2])
{
    for (int i = 0; i < 2; i++) {
        struct side *d = &r->x[i];
        struct hp_stack_config sc = {.flags = HP_STACK_F_NO_DAD};
        d->s = hp_stack_create(&sc);
        int ifx = d->s ? hp_stack_add_iface(d->s, e[i]) : -1;
        if (ifx < 0 || hp_stack_add_addr(d->s, ifx, 4, IP4[i], 24) < 0)
            return -1;
        struct hp_loop_config lc = {.spin_us = vspin[r->variant],
                                    .flags = vspin[r->variant] ? 0 : HP_LOOP_F_NO_SPIN};
        d->l = hp_loop_create(d->s, &lc);
        d->u = hp_udp_open(d->s, 4, &d->tag);
        struct hp_sockaddr any = {.family = 4, .port = (uint16_t)(i ? PORT : 0)};
        if (!d->l || !d->u || hp_udp_bind(d->u, &any) < 0)
            return -1;
    }
    return 0;
}

static void teardown(struct run *r)
{
    for (int i = 0; i < 2; i++) {
        hp_udp_close(r->x[i].u);
        hp_loop_destroy(r->x[i].l);
        hp_stack_destroy(r->x[i].s);
    }
}

/* One measurement of one variant. 0, or -1 when the setup failed. */
static int measure(int variant, double seconds, struct result *out)
{
    struct hp_link *e[2];
    if (hp_link_mem_pair(NULL, e) < 0)
        return -1;
    struct run *r = calloc(1, sizeof *r);
    int rc = -1;
    if (!r)
        goto out;
    r->variant = variant;
    r->seconds = seconds;
    pthread_t th;
    if (setup(r, e) < 0 || pthread_create(&th, NULL, server_main, r) != 0)
        goto out;
    client_run(r);
    atomic_store(&r->stop, 1);
    hp_loop_wake(r->x[1].l);
    pthread_join(th, NULL);
    out->tps = (double)r->txns / seconds;
    out->p50_us = pct(r, 0.5);
    out->p99_us = pct(r, 0.99);
    out->cpu_ns = r->txns ? (r->x[0].cpu + r->x[1].cpu) * 1e9 / (double)r->txns : 0;
    rc = r->txns ? 0 : -1;
out:
    if (r)
        teardown(r);
    free(r);
    hp_pool_thread_flush(hp_link_pool(e[0]));
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    return rc;
}

/* ---- one thread: the cost of a turn of the loop on a path that never waits -- */

/* Drive one side once: what a turn costs. busy: the hand loop; else the
 * loop with timeout 0 (the busy path of any spin setting: with events
 * ready, hp_loop_wait neither spins nor sleeps). */
static void side_turn(bool loop, struct side *d)
{
    if (loop) {
        struct hp_loop_event ev[8];
        hp_loop_wait(d->l, ev, 8, 0);
    } else {
        struct hp_event ev[8];
        hp_stack_poll(d->s);
        hp_stack_events(d->s, ev, 8);
    }
}

/* Give each side's loop what serve's has: a periodic timer (1 s) and a
 * registered kernel fd (a pipe that stays quiet). */
static int add_extras(struct run *r, int fds[2], struct hp_loop_timer *t[2])
{
    if (pipe(fds) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        t[i] = hp_loop_timer_create(r->x[i].l, NULL);
        if (!t[i] || hp_loop_timer_start(t[i], 1000000000ull, 1000000000ull) < 0 ||
            hp_loop_fd_add(r->x[i].l, fds[0], HP_EV_IN, NULL) < 0)
            return -1;
    }
    return 0;
}

/* Nanoseconds per transaction with both stacks on this thread, or -1.
 * mode 0: the hand loop; 1: hp_loop_wait; 2: hp_loop_wait with extras. */
static double measure_one_thread(int mode, unsigned txns)
{
    bool loop = mode > 0;
    int fds[2] = {-1, -1};
    struct hp_loop_timer *tm[2];
    struct hp_link *e[2];
    if (hp_link_mem_pair(NULL, e) < 0)
        return -1;
    struct run *r = calloc(1, sizeof *r);
    double ns = -1;
    if (!r || setup(r, e) < 0 || (mode == 2 && add_extras(r, fds, tm) < 0))
        goto out;
    struct hp_sockaddr to = {.family = 4, .port = PORT};
    memcpy(to.addr, IP4[1], 4);
    char byte = 'r';
    unsigned done = 0;
    double t0 = 0;
    for (unsigned i = 0; i < txns + 1000; i++) {
        if (i == 1000)
            t0 = tool_now_s(); /* after the ARP exchange and a warm-up */
        hp_udp_sendto(r->x[0].u, &byte, 1, &to);
        side_turn(loop, &r->x[0]);
        side_turn(loop, &r->x[1]);
        struct hp_buf *b;
        struct hp_sockaddr from;
        while (hp_udp_recv_buf(r->x[1].u, &b, &from) >= 0)
            if (hp_udp_send_buf(r->x[1].u, b, &from) < 0)
                hp_buf_free(b);
        side_turn(loop, &r->x[1]);
        side_turn(loop, &r->x[0]);
        if (hp_udp_recvfrom(r->x[0].u, &byte, 1, NULL) == 1)
            done += i >= 1000;
    }
    if (done > txns / 2)
        ns = (tool_now_s() - t0) * 1e9 / (double)done;
out:
    if (r)
        teardown(r);
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(r);
    hp_pool_thread_flush(hp_link_pool(e[0]));
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    return ns;
}

static double median_of(double *v, int n)
{
    return tool_median(v, n);
}

static json_t *variant_json(int v, const struct result *m, const struct result *base)
{
    json_t *o = json_object();
    json_object_set_new(o, "variant", json_string(vname[v]));
    json_object_set_new(o, "tps", json_real(m->tps));
    json_object_set_new(o, "p50_us", json_real(m->p50_us));
    json_object_set_new(o, "p99_us", json_real(m->p99_us));
    json_object_set_new(o, "cpu_ns_per_txn", json_real(m->cpu_ns));
    json_object_set_new(o, "p50_ratio", json_real(m->p50_us / base->p50_us));
    json_object_set_new(o, "p99_ratio", json_real(m->p99_us / base->p99_us));
    json_object_set_new(o, "tps_ratio", json_real(m->tps / base->tps));
    return o;
}

static void report(const struct bench_opts *o, FILE *table, const struct result *m, int reps,
                   double secs, const double one[3])
{
    json_t *j = json_object(), *a = json_array(), *t = json_object();
    for (int v = 0; v < NV; v++)
        json_array_append_new(a, variant_json(v, &m[v], &m[V_BUSY]));
    json_object_set_new(j, "bench", json_string("loop"));
    json_object_set_new(j, "reps", json_integer(reps));
    json_object_set_new(j, "seconds", json_real(secs));
    json_object_set_new(j, "build", json_string(tool_build_flags()));
    json_object_set_new(t, "busy_ns_per_txn", json_real(one[0]));
    json_object_set_new(t, "loop_ns_per_txn", json_real(one[1]));
    json_object_set_new(t, "ratio", json_real(one[1] / one[0]));
    json_object_set_new(t, "loop_timer_fd_ns_per_txn", json_real(one[2]));
    json_object_set_new(t, "ratio_timer_fd", json_real(one[2] / one[0]));
    json_object_set_new(j, "one_thread", t);
    json_object_set_new(j, "two_threads", a);
    if (o->json || o->json_out) {
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        if (s && o->json)
            printf("%s\n", s);
        if (s && o->json_out)
            fprintf(o->json_out, "%s\n", s);
        free(s);
    }
    json_decref(j);
    if (o->json)
        return;
    fprintf(table,
            "loop: UDP 1-byte request/response between two stacks over mem (medians of %d)\n",
            reps);
    fprintf(table,
            "  one thread, both stacks (the busy path: every turn finds work):\n"
            "    hand-written poll loop %8.0f ns/txn\n    hp_loop_wait           %8.0f ns/txn"
            "   ratio %.3f\n    + a timer and an fd    %8.0f ns/txn   ratio %.3f\n",
            one[0], one[1], one[1] / one[0], one[2], one[2] / one[0]);
    fprintf(table, "  two threads, one stack each, %.1f s per run:\n", secs);
    fprintf(table, "  %-13s %12s %9s %9s %12s %10s %10s\n", "driven by", "txn/s", "p50 us",
            "p99 us", "CPU ns/txn", "p50 ratio", "p99 ratio");
    for (int v = 0; v < NV; v++)
        fprintf(table, "  %-13s %12.0f %9.1f %9.1f %12.0f %10.2f %10.2f\n", vname[v], m[v].tps,
                m[v].p50_us, m[v].p99_us, m[v].cpu_ns, m[v].p50_us / m[V_BUSY].p50_us,
                m[v].p99_us / m[V_BUSY].p99_us);
    fprintf(table,
            "  (ratios: against busy, the hand-written poll loop, in this run; lower is better)\n");
}

int bench_loop(const struct bench_opts *o, FILE *table)
{
    int reps = o->reps ? o->reps : o->quick ? 3 : 7;
    if (reps > 64)
        reps = 64;
    double secs = o->quick ? 0.3 : 1.0;
    double v[NV][4][64];
    for (int i = 0; i < reps; i++) {
        for (int k = 0; k < NV; k++) {
            int var = (k + i) % NV; /* interleaved, each in every position */
            struct result m;
            if (o->progress)
                o->progress(o->progress_ctx, i * NV + k, reps * NV, vname[var]);
            if (measure(var, secs, &m) < 0) {
                fprintf(stderr, "hotpath bench loop: %s: the run failed: %s\n", vname[var],
                        hp_last_error());
                return 1;
            }
            v[var][0][i] = m.tps;
            v[var][1][i] = m.p50_us;
            v[var][2][i] = m.p99_us;
            v[var][3][i] = m.cpu_ns;
        }
    }
    if (o->progress)
        o->progress(o->progress_ctx, reps * NV, reps * NV, "done");
    double w[3][64], one[3];
    for (int i = 0; i < reps; i++) {
        for (int k = 0; k < 3; k++) {
            int mode = (k + i) % 3;
            w[mode][i] = measure_one_thread(mode, o->quick ? 50000 : 200000);
            if (w[mode][i] < 0) {
                fprintf(stderr, "hotpath bench loop: one thread: the run failed\n");
                return 1;
            }
        }
    }
    for (int k = 0; k < 3; k++)
        one[k] = median_of(w[k], reps);
    struct result m[NV];
    for (int k = 0; k < NV; k++)
        m[k] = (struct result){median_of(v[k][0], reps), median_of(v[k][1], reps),
                               median_of(v[k][2], reps), median_of(v[k][3], reps)};
    report(o, table, m, reps, secs, one);
    return 0;
}
