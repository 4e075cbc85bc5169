/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench udp-echo`: UDP echo, two stacks over the mem link, and over veth hotpath serve against the kernel's own echo server (bench_udp_veth.c). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "bench.h"
#include "bench_udp.h"
#include "harness.h"
#include "tool.h"

const uint8_t UDP_CLI4[4] = {198, 18, 0, 1}, UDP_SRV4[4] = {198, 18, 0, 2};

struct server {
    struct hp_stack *s;
    struct hp_udp_sock *u;
    struct hp_pool *pool;
    int cpu;
    _Atomic int phase;
    struct hb_window win; /* its CPU time over the measured interval */
};

static void *server_main(void *arg)
{
    struct server *sv = arg;
    if (sv->cpu >= 0)
        tool_pin(sv->cpu);
    hb_window_init(&sv->win);
    while (!hb_window_poll(&sv->win, &sv->phase, NULL, 0)) {
        hp_stack_poll(sv->s);
        tool_udp_echo(sv->u);
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

/* Two stacks over a mem pair; their sockets, the server's bound. */
struct echo_pair {
    struct hp_link *e[2];
    struct hp_stack *st[2];
    struct client *c;
    struct server sv;
};

static int pair_up(struct echo_pair *p, const struct udp_echo_opts *o, char *why, size_t len)
{
    struct hp_link_config lc = {.ring_size = 1024};
    if (hp_link_mem_pair(&lc, p->e) < 0) {
        snprintf(why, len, "mem pair: %s", hp_link_error());
        return -1;
    }
    if (!(p->c = calloc(1, sizeof *p->c))) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config sc = {.name = i ? "server" : "client", .flags = HP_STACK_F_NO_DAD};
        p->st[i] = hp_stack_create(&sc);
        int ifx = p->st[i] ? hp_stack_add_iface(p->st[i], p->e[i]) : -ENOMEM;
        if (ifx < 0 ||
            hp_stack_add_addr(p->st[i], ifx, HP_AF_INET4, i ? UDP_SRV4 : UDP_CLI4, 24) < 0) {
            snprintf(why, len, "cannot set up the %s stack", i ? "server" : "client");
            return -1;
        }
    }
    struct client *c = p->c;
    c->s = p->st[0];
    c->o = o;
    c->u = hp_udp_open(p->st[0], HP_AF_INET4, NULL);
    p->sv.s = p->st[1];
    p->sv.u = hp_udp_open(p->st[1], HP_AF_INET4, NULL);
    p->sv.pool = hp_link_pool(p->e[1]);
    p->sv.cpu = o->one_thread ? -1 : o->cpu_server;
    struct hp_sockaddr any = {.family = HP_AF_INET4, .port = UDP_ECHO_PORT};
    if (!c->u || !p->sv.u || hp_udp_bind(p->sv.u, &any) < 0) {
        snprintf(why, len, "cannot open the sockets");
        return -1;
    }
    c->to = (struct hp_sockaddr){.family = HP_AF_INET4, .port = UDP_ECHO_PORT};
    memcpy(c->to.addr, UDP_SRV4, 4);
    for (unsigned i = 0; i < sizeof c->payload; i++)
        c->payload[i] = (uint8_t)i;
    return 0;
}

static void pair_down(struct echo_pair *p)
{
    if (p->c && p->c->u)
        hp_udp_close(p->c->u);
    if (p->sv.u)
        hp_udp_close(p->sv.u);
    hp_stack_destroy(p->st[0]);
    hp_stack_destroy(p->st[1]);
    free(p->c);
    hp_pool_thread_flush(hp_link_pool(p->e[0]));
    hp_link_close(p->e[0]);
    hp_link_close(p->e[1]);
}

/* One step of the client, and of the server too when one thread does both. */
static void step(struct echo_pair *p, bool threaded, double t)
{
    client_step(p->c, t);
    if (!threaded) {
        hp_stack_poll(p->sv.s);
        tool_udp_echo(p->sv.u);
    }
}

/* Resolve the neighbour with one datagram in flight. false after 5 s. */
static bool first_echo(struct echo_pair *p, bool threaded)
{
    double t = tool_now_s(), deadline = t + 5;
    p->c->window = 1;
    p->c->last_echo = t;
    while (p->c->echoes == 0 && t < deadline) {
        step(p, threaded, t);
        t = tool_now_s();
    }
    return p->c->echoes > 0;
}

/* The window, unmeasured for a short while, then measured. */
static void measure(struct echo_pair *p, const struct udp_echo_opts *o, bool threaded,
                    struct udp_echo_result *r)
{
    struct client *c = p->c;
    c->window = o->window;
    struct hb_clock clk;
    hb_clock_start(&clk, 0.1 + (o->seconds > 1 ? 0.1 : 0), o->seconds, 64);
    for (int tick = HB_TICK_WARM; tick != HB_TICK_CLOSE;) {
        tick = hb_clock_tick(&clk);
        if (tick == HB_TICK_OPEN) {
            c->echoes = c->lost = 0;
            atomic_store_explicit(&p->sv.phase, HB_MEASURE, memory_order_release);
        }
        step(p, threaded, clk.now);
    }
    atomic_store_explicit(&p->sv.phase, HB_STOP, memory_order_release);
    r->echoes = c->echoes;
    r->lost = c->lost;
    r->seconds = clk.secs;
    r->echoes_per_s = r->seconds > 0 ? (double)r->echoes / r->seconds : 0;
    r->cpu_ns = clk.cpu_s;
}

int udp_echo_run(const struct udp_echo_opts *o, struct udp_echo_result *r)
{
    memset(r, 0, sizeof *r);
    if (o->window < 1 || o->window > 1024 || o->payload > 1472) {
        snprintf(r->why, sizeof r->why, "window 1..1024 and payload 0..1472 bytes");
        return -1;
    }
    struct echo_pair p = {.c = NULL};
    atomic_init(&p.sv.phase, HB_WARM);
    int rc = pair_up(&p, o, r->why, sizeof r->why);
    bool threaded = !o->one_thread, started = false;
    pthread_t th;
    if (rc == 0 && threaded) {
        started = pthread_create(&th, NULL, server_main, &p.sv) == 0;
        if (!started) {
            snprintf(r->why, sizeof r->why, "cannot start the server thread");
            rc = -1;
        } else if (o->cpu_client >= 0) {
            tool_pin(o->cpu_client);
        }
    }
    if (rc == 0 && !first_echo(&p, threaded)) {
        snprintf(r->why, sizeof r->why, "no echo within 5 s");
        rc = -1;
    }
    if (rc == 0)
        measure(&p, o, threaded, r); /* r->cpu_ns: the client's CPU seconds */
    atomic_store_explicit(&p.sv.phase, HB_STOP, memory_order_release);
    if (started) {
        pthread_join(th, NULL);
        r->cpu_ns += p.sv.win.cpu_s;
    }
    /* CPU ns per echo: both threads (or the one). */
    r->cpu_ns = rc == 0 && r->echoes ? r->cpu_ns * 1e9 / (double)r->echoes : 0;
    pair_down(&p);
    return rc;
}

/* ---- rounds, report --------------------------------------------------------------- */

enum { M_TWO, M_ONE, M_NROWS };

static int mem_round(void *ctx, int row, double *v, double *disturbed, char *why, size_t len)
{
    (void)disturbed;
    const struct bench_opts *o = ctx;
    int n = tool_ncpus();
    if (row == M_TWO && n < 2) {
        snprintf(why, len, "needs two CPUs");
        return 1;
    }
    struct udp_echo_opts u = {.payload = 64,
                              .window = 256,
                              .seconds = o->quick ? 0.3 : 1.0,
                              .one_thread = row == M_ONE};
    /* Client and server each on a CPU of their own: CPUs 0 and 1, or --cpu
     * and the one before it. */
    u.cpu_client = o->cpu >= 0 ? o->cpu : (n > 1 ? 0 : -1);
    u.cpu_server = row == M_ONE || n < 2 ? -1 : o->cpu < 0 ? 1 : (u.cpu_client + n - 1) % n;
    struct udp_echo_result r;
    if (udp_echo_run(&u, &r) < 0) {
        snprintf(why, len, "%s", r.why);
        return 1;
    }
    v[0] = r.echoes_per_s;
    v[1] = r.cpu_ns;
    return 0;
}

struct udp_report {
    int reps;
    struct hb_row rows[M_NROWS]; /* values: echoes/s, CPU ns per echo */
    struct udp_veth_report veth;
    struct hb_goals goals;
    char wait_goal[300];
};

static json_t *udp_json(const struct udp_report *u)
{
    json_t *j = hb_json_head("udp-echo");
    json_object_set_new(j, "reps", json_integer(u->reps));
    json_object_set_new(j, "payload", json_integer(64));
    json_object_set_new(j, "window", json_integer(256));
    json_t *rows = json_array();
    for (int i = 0; i < M_NROWS; i++) {
        const struct hb_row *w = &u->rows[i];
        json_t *r = json_pack("{s:s}", "mode", w->name);
        if (w->n) {
            json_object_set_new(r, "echoes_per_s", tool_json_num(w->median[0], 0));
            json_object_set_new(r, "cpu_ns_per_echo", tool_json_num(w->median[1], 1));
        } else {
            json_object_set_new(r, "skipped", json_string(w->why));
        }
        json_array_append_new(rows, r);
    }
    json_object_set_new(j, "rows", rows);
    json_object_set_new(j, "veth", udp_veth_json(&u->veth));
    /* goal_met: the mem goal, as before; goals: each goal line. */
    hb_json_goals(j, &u->goals);
    return j;
}

static void udp_table(const struct udp_report *u, FILE *f)
{
    hb_table_head(f, "udp-echo: UDP echo between two stacks over the mem link");
    fprintf(f,
            "64 B payload, 256 datagrams in flight, IPv4; median of %d rounds;\n"
            "CPU ns per echo counts both stacks' threads\n\n",
            u->reps);
    static const char *const label[M_NROWS] = {"two threads (2 CPUs)", "one thread (1 CPU)"};
    static const struct hb_col cols[] = {{"echoes/s", 14, 0, NULL}, {"CPU ns/echo", 14, 1, NULL}};
    hb_table_cols(f, 22, "mode", cols, 2);
    for (int i = 0; i < M_NROWS; i++) {
        if (u->rows[i].n)
            hb_table_row(f, 22, label[i], cols, 2, u->rows[i].median);
        else
            hb_table_skip(f, 22, label[i], "skipped", u->rows[i].why);
    }
    udp_veth_table(&u->veth, f);
    hb_goals_table(&u->goals, f);
    if (u->veth.rows[V_AFXDP_WAIT].n)
        fprintf(f, "  [info] the same with hotpath-afxdp-wait: %s\n", u->wait_goal);
}

int bench_udp(const struct bench_opts *o, FILE *table)
{
    struct udp_report *u = calloc(1, sizeof *u);
    if (!u)
        return 1;
    u->reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    u->rows[M_TWO].name = "two-threads";
    u->rows[M_ONE].name = "one-thread";
    struct hb_rounds h = {.reps = u->reps,
                          .nrows = M_NROWS,
                          .nvalues = 2,
                          .progress = o->progress,
                          .progress_ctx = o->progress_ctx};
    hb_rounds_run(&h, u->rows, mem_round, (void *)o);
    udp_veth_run(&u->veth, o);
    const struct hb_row *two = &u->rows[M_TWO];
    hb_goal(&u->goals, two->n && two->median[0] >= 5e6,
            "UDP echo over the mem link, 64 B: >= 5 M echoes/s per core pair (%.2f M)",
            two->median[0] / 1e6);
    char vgoal[600];
    udp_veth_goal(&u->veth, V_AFXDP, vgoal, sizeof vgoal);
    hb_goal(&u->goals, u->veth.met, "UDP echo over veth: %s", vgoal);
    udp_veth_goal(&u->veth, V_AFXDP_WAIT, u->wait_goal, sizeof u->wait_goal);
    if (o->json || o->json_out)
        hb_json_emit(udp_json(u), o->json, o->json_out);
    if (!o->json)
        udp_table(u, table);
    /* Skipped (not root) is no failure; a failed row is. */
    int rc = (u->rows[M_ONE].n || two->n) && !u->veth.failed[0] ? 0 : 1;
    free(u);
    return rc;
}
