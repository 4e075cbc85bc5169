/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench udp-echo`: two stacks over the mem link, a client keeping a window of datagrams in flight to an echo server. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "bench_udp.h"
#include "tool.h"

#define ECHO_PORT 7

static const uint8_t CLI4[4] = {198, 18, 0, 1}, SRV4[4] = {198, 18, 0, 2};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
                c0 = thread_cpu_s();
            if (ph == PH_STOP) {
                sv->cpu_s = seen == PH_MEASURE ? thread_cpu_s() - c0 : 0;
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
    double t = now_s(), warm_end = t + 0.1 + (o->seconds > 1 ? 0.1 : 0), deadline = t + 5;
    c->window = 1;
    c->last_echo = t;
    while (c->echoes == 0 && t < deadline) {
        client_step(c, t);
        if (!threaded) {
            hp_stack_poll(sv.s);
            echo_all(sv.u);
        }
        t = now_s();
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
            t = now_s();
            if (!measuring && t >= warm_end) {
                measuring = true;
                start = t;
                c0 = thread_cpu_s();
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
    end = now_s();
    r->echoes = c->echoes;
    r->lost = c->lost;
    double cpu = thread_cpu_s() - c0;
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
        fprintf(f, "], \"goal_met\": %s}\n", met ? "true" : "false");
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
        fprintf(table, "\n  [%s] UDP echo over the mem link, 64 B: >= 5 M echoes/s per core pair (%.2f M)\n",
                met ? " met " : "MISSED", eps2 / 1e6);
    }
    return rc1 == 0 || rc2 == 0 ? 0 : 1;
}
