/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath serve`: a stack on one link, run by the event loop, answering ARP, NDP, ping, UDP echo and TCP echo / discard / source, with counters each second. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

#include "apploop.h"
#include "cmd.h"
#include "netopts.h"
#include "tcp_app.h"
#include "tool.h"

#define MAX_TCP_PORTS 16
/* With TCP on, the link gets a pool this large (mem, tap, afpacket; afxdp's
 * pool is its UMEM): a thousand connections each holding a window of data
 * would exhaust the links' default 4096 buffers. */
#define TCP_POOL_BUFS 32768
#define NS_PER_S      1000000000ull
#define EV_BATCH      64

struct tcp_port {
    int mode;
    uint16_t port;
};

struct serve_opts {
    struct net_opts n;
    unsigned port; /* UDP echo */
    struct tcp_port tcp[MAX_TCP_PORTS];
    int ntcp;
    bool json;
    double duration; /* 0: until interrupted */
    uint32_t spin_us;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath serve --link afxdp|afpacket|tap|memif|mem [--iface IF] --ip ADDR/LEN\n"
            "                     [OPTIONS]\n\n"
            "Run a stack on one link: it answers ARP, NDP and ping, echoes UDP, and serves TCP.\n"
            "It runs on the event loop: it busy-polls briefly after traffic, then sleeps in the\n"
            "kernel until a frame, a timer or a signal comes (an idle serve uses no CPU).\n\n"
            "  --link KIND       afxdp (copy mode), afpacket, tap, memif (shared memory with\n"
            "                    another process), or mem: a self-test with a client stack on\n"
            "                    its own thread on the other end of a pair\n" NETOPT_HELP
            "  --udp-echo PORT   echo UDP datagrams on PORT, both families (default 7)\n"
            "  --tcp-echo PORT   TCP echo on PORT, both families (repeatable; with mem: 7 unless\n"
            "                    a TCP port is given)\n"
            "  --tcp-discard PORT  TCP discard: read and drop (repeatable)\n"
            "  --tcp-source PORT   TCP source: an endless byte pattern until the peer closes\n"
            "                    (repeatable)\n" APPLOOP_SPIN_HELP
            "  --json-stats      a JSON object of counters each second instead of a line\n"
            "  --duration S      stop after S seconds (default: at SIGINT / SIGTERM)\n");
}

/* ---- the server: its stack, its sockets, its loop --------------------------------- */

struct server {
    const struct serve_opts *o;
    struct hp_link *link, *peer;
    struct hp_pool *pool;
    struct hp_stack *s;
    struct hp_loop *loop;
    struct hp_udp_sock *u[2]; /* IPv4, IPv6 */
    int utag[2];              /* their user pointers: &utag[f] */
    struct tcp_srv *tcp;
    struct hp_loop_timer *tick, *end;
    double t0;
};

static json_t *tcp_json(const struct tcp_srv_stats *ts)
{
    json_t *t = json_object();
    json_object_set_new(t, "open", json_integer((json_int_t)ts->open));
    json_object_set_new(t, "accepted", json_integer((json_int_t)ts->accepted));
    json_object_set_new(t, "closed", json_integer((json_int_t)ts->closed));
    json_object_set_new(t, "failed", json_integer((json_int_t)ts->failed));
    json_object_set_new(t, "bytes_in", json_integer((json_int_t)ts->bytes_in));
    json_object_set_new(t, "bytes_out", json_integer((json_int_t)ts->bytes_out));
    return t;
}

static void print_json(const struct server *v, double t, const char *tag)
{
    json_t *o = json_object(), *c = json_object();
    json_object_set_new(o, "t", json_real((double)(long long)(t * 1000) / 1000));
    json_object_set_new(o, "event", json_string(tag));
    for (int k = 0; k < HP_STACK_NCOUNTERS; k++) {
        uint64_t n = hp_stack_counter(v->s, (enum hp_stack_ctr)k);
        if (n)
            json_object_set_new(c, hp_stack_counter_name((enum hp_stack_ctr)k),
                                json_integer((json_int_t)n));
    }
    json_object_set_new(o, "counters", c);
    if (v->tcp) {
        struct tcp_srv_stats ts;
        tcp_srv_get_stats(v->tcp, &ts);
        json_object_set_new(o, "tcp", tcp_json(&ts));
    }
    json_object_set_new(o, "loop", apploop_stats_json(v->loop));
    /* Buffers handed out and not back, every pool (make soak plots it). */
    json_object_set_new(o, "buffers_in_use", json_integer((json_int_t)hp_pools_in_use()));
    apploop_print_json(o);
}

/* Counters each second: the non-zero ones on one line, or a JSON object. */
static void print_counters(const struct server *v, const char *tag)
{
    double t = tool_now_s() - v->t0;
    if (v->o->json) {
        print_json(v, t, tag);
        return;
    }
    printf("serve %s %.1f s:", tag, t);
    if (v->tcp) {
        struct tcp_srv_stats ts;
        tcp_srv_get_stats(v->tcp, &ts);
        printf(" tcp_open=%llu tcp_accepted=%llu tcp_bytes_in=%llu tcp_bytes_out=%llu",
               (unsigned long long)ts.open, (unsigned long long)ts.accepted,
               (unsigned long long)ts.bytes_in, (unsigned long long)ts.bytes_out);
    }
    for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
        uint64_t n = hp_stack_counter(v->s, (enum hp_stack_ctr)c);
        if (n)
            printf(" %s=%llu", hp_stack_counter_name((enum hp_stack_ctr)c), (unsigned long long)n);
    }
    struct hp_loop_stats ls;
    hp_loop_stats(v->loop, &ls);
    printf(" loop_sleeps=%llu\n", (unsigned long long)ls.sleeps);
    fflush(stdout);
}

/* Echo what is queued: zero-copy, the received buffer goes back. */
static void echo_all(struct hp_udp_sock *u)
{
    struct hp_buf *b;
    struct hp_sockaddr from;
    while (hp_udp_recv_buf(u, &b, &from) >= 0)
        if (hp_udp_send_buf(u, b, &from) < 0)
            hp_buf_free(b);
}

static void server_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct server *v = arg;
    switch (ev->kind) {
    case HP_LOOP_SOCK:
        if (ev->user == &v->utag[0] || ev->user == &v->utag[1])
            echo_all(v->u[ev->user == &v->utag[1]]);
        else
            tcp_app_event(ev->user, ev->events);
        break;
    case HP_LOOP_TIMER:
        if (ev->timer == v->tick)
            print_counters(v, "tick");
        else if (ev->timer == v->end)
            hp_loop_stop(l);
        break;
    default: /* HP_LOOP_WAKE: a stop (a signal, or the self-test's end) */
        break;
    }
}

static int open_udp(struct server *v)
{
    for (int f = 0; f < 2; f++) {
        v->u[f] = hp_udp_open(v->s, f ? 6 : 4, &v->utag[f]);
        struct hp_sockaddr any = {.family = (uint8_t)(f ? 6 : 4), .port = (uint16_t)v->o->port};
        int b = v->u[f] ? hp_udp_bind(v->u[f], &any) : -ENOMEM;
        if (b < 0) {
            fprintf(stderr, "hotpath serve: cannot bind UDP port %u (IPv%d): %s\n", v->o->port,
                    f ? 6 : 4, hp_strerror(b));
            return 1;
        }
    }
    return 0;
}

static int open_tcp(struct server *v)
{
    const struct serve_opts *o = v->o;
    if (!o->ntcp)
        return 0;
    v->tcp = tcp_srv_new(v->s);
    if (!v->tcp) {
        fprintf(stderr, "hotpath serve: out of memory\n");
        return 1;
    }
    for (int p = 0; p < o->ntcp; p++) {
        for (int f = 4; f <= 6; f += 2) {
            int rc = tcp_srv_listen(v->tcp, o->tcp[p].mode, o->tcp[p].port, f, 0);
            if (rc < 0) {
                fprintf(stderr, "hotpath serve: cannot listen on TCP port %u (IPv%d, %s): %s\n",
                        o->tcp[p].port, f, tcp_mode_name(o->tcp[p].mode), hp_strerror(rc));
                return 1;
            }
        }
    }
    return 0;
}

/* The link (with a pool of our own for TCP) and the server's stack. */
static int server_open(struct server *v)
{
    const struct serve_opts *o = v->o;
    struct hp_link_config lc = {0};
    bool mem = strcmp(o->n.link, "mem") == 0;
    if (o->ntcp && strcmp(o->n.link, "afxdp") != 0) {
        struct hp_pool_config pc = {.name = "serve", .n_bufs = TCP_POOL_BUFS};
        v->pool = hp_pool_create(&pc);
        if (!v->pool) {
            fprintf(stderr, "hotpath serve: cannot create a pool of %d buffers: %s\n",
                    TCP_POOL_BUFS, hp_strerror(-errno));
            return 1;
        }
        lc.pool = v->pool;
    }
    if (netopt_open_link("serve", &o->n, &lc, &v->link, &v->peer))
        return 1;
    if (o->n.cpu >= 0)
        tool_pin(o->n.cpu);
    if (netopt_setup_stack("serve", &o->n, o->n.ip, o->n.nip, true, v->link, "serve",
                           mem ? HP_STACK_F_NO_DAD : 0, &v->s))
        return 1;
    if (open_udp(v) || open_tcp(v))
        return 1;
    v->loop = apploop_create("serve", v->s, o->spin_us);
    if (!v->loop)
        return 1;
    v->tick = hp_loop_timer_create(v->loop, NULL);
    v->end = hp_loop_timer_create(v->loop, NULL);
    if (!v->tick || !v->end) {
        fprintf(stderr, "hotpath serve: out of memory\n");
        return 1;
    }
    return 0;
}

/* Everything back, every buffer accounted for. 0, or 1 when buffers are
 * still in use. */
static int server_close(struct server *v)
{
    tcp_srv_free(v->tcp);
    for (int f = 0; f < 2; f++)
        hp_udp_close(v->u[f]);
    hp_loop_destroy(v->loop); /* its timers with it */
    hp_stack_destroy(v->s);
    if (v->link)
        hp_pool_thread_flush(hp_link_pool(v->link));
    int c1 = hp_link_close(v->link), c2 = hp_link_close(v->peer);
    int c3 = v->pool ? hp_pool_destroy(v->pool) : 0;
    long left = hp_pools_in_use();
    if (c1 < 0 || c2 < 0 || c3 < 0 || left != 0) {
        fprintf(stderr, "hotpath serve: %ld buffers still in use at exit\n", left);
        return 1;
    }
    return 0;
}

/* ---- the mem self-test: a client stack on its own thread -------------------------- */

/*
 * The client stack sits on the other end of the pair, one host number above
 * each server address, on a thread of its own with its own loop, so that
 * each side sleeps and is woken by the other's frames as two processes
 * would be. It pings and sends UDP to every server address every 50 ms and
 * checks the echoes; for every TCP service and address, TCP connections send
 * (or read) a pattern and verify every byte. At the end it stops the
 * server's loop.
 */
#define ST_MAX_CLI (NETOPT_MAX_ADDRS * MAX_TCP_PORTS)

struct selftest {
    const struct serve_opts *o;
    struct hp_stack *s;
    struct hp_loop *loop, *server_loop;
    struct hp_udp_sock *u[2]; /* IPv4, IPv6 */
    int utag[2];
    struct cidr peer[NETOPT_MAX_ADDRS];
    int npeer;
    uint64_t sent, echoed, bad, pings;
    uint16_t seq;
    struct tcp_cli *cli[ST_MAX_CLI];
    int ncli;
    double end;
    struct hp_loop_timer *step, *stop;
    pthread_t th;
    bool started;
    int rc;
};

static int selftest_setup(const struct serve_opts *o, struct hp_link *link, struct selftest *t)
{
    struct cidr ips[NETOPT_MAX_ADDRS];
    for (int i = 0; i < o->n.nip; i++) {
        struct cidr c = o->n.ip[i];
        int last = c.family == 4 ? 3 : 15;
        c.addr[last] = (uint8_t)(c.addr[last] + 1); /* the neighbour address */
        ips[i] = c;
        t->peer[t->npeer++] = o->n.ip[i];
    }
    if (netopt_setup_stack("serve", &o->n, ips, o->n.nip, false, link, "selftest",
                           HP_STACK_F_NO_DAD, &t->s))
        return 1;
    for (int f = 0; f < 2; f++)
        t->u[f] = hp_udp_open(t->s, f ? 6 : 4, &t->utag[f]);
    t->loop = apploop_create("serve", t->s, o->spin_us);
    t->step = t->loop ? hp_loop_timer_create(t->loop, NULL) : NULL;
    t->stop = t->loop ? hp_loop_timer_create(t->loop, NULL) : NULL;
    return t->u[0] && t->u[1] && t->step && t->stop ? 0 : 1;
}

/* Per service: echo 2 connections of 300,000 bytes (more than a window),
 * discard and source one of 100,000. */
static int selftest_tcp_start(struct selftest *t, double now)
{
    const struct serve_opts *o = t->o;
    for (int i = 0; i < t->npeer; i++) {
        for (int p = 0; p < o->ntcp; p++) {
            struct tcp_cli_opts co = {.mode = o->tcp[p].mode,
                                      .deadline = t->end - 0.05,
                                      .first_index = (uint32_t)t->ncli * 16};
            co.to.family = (uint8_t)t->peer[i].family;
            co.to.port = o->tcp[p].port;
            memcpy(co.to.addr, t->peer[i].addr, 16);
            co.conns = co.mode == TCP_ECHO ? 2 : 1;
            co.bytes = co.mode == TCP_ECHO ? 300000 : 100000;
            struct tcp_cli *c = tcp_cli_new(t->s, &co);
            if (!c) {
                fprintf(stderr, "hotpath serve: self-test: cannot make a TCP client: %s\n",
                        hp_strerror(-errno));
                return 1;
            }
            t->cli[t->ncli++] = c;
            tcp_cli_step(c, now);
        }
    }
    return 0;
}

static void selftest_send(struct selftest *t)
{
    for (int i = 0; i < t->npeer; i++) {
        struct hp_sockaddr to = {.family = (uint8_t)t->peer[i].family,
                                 .port = (uint16_t)t->o->port};
        memcpy(to.addr, t->peer[i].addr, 16);
        char msg[32];
        int len = snprintf(msg, sizeof msg, "hotpath selftest %u", t->seq);
        if (hp_udp_sendto(t->u[to.family == 6], msg, (size_t)len, &to) == len)
            t->sent++;
        if (hp_stack_ping(t->s, to.family, to.addr, 0x4850, t->seq, 56) == 0)
            t->pings++;
    }
    t->seq++;
}

static void selftest_recv(struct selftest *t, struct hp_udp_sock *u)
{
    char buf[64];
    int n;
    while ((n = hp_udp_recvfrom(u, buf, sizeof buf, NULL)) >= 0) {
        if (n >= 16 && memcmp(buf, "hotpath selftest", 16) == 0)
            t->echoed++;
        else
            t->bad++;
    }
}

static void selftest_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct selftest *t = arg;
    double now = tool_now_s();
    if (ev->kind == HP_LOOP_SOCK && (ev->user == &t->utag[0] || ev->user == &t->utag[1]))
        selftest_recv(t, t->u[ev->user == &t->utag[1]]);
    else if (ev->kind == HP_LOOP_SOCK)
        tcp_app_event(ev->user, ev->events);
    else if (ev->kind == HP_LOOP_TIMER && ev->timer == t->stop)
        hp_loop_stop(l);
    else if (ev->kind == HP_LOOP_TIMER && now < t->end - 0.2)
        selftest_send(t);
    for (int i = 0; i < t->ncli; i++)
        tcp_cli_step(t->cli[i], now);
}

static void *selftest_main(void *arg)
{
    struct selftest *t = arg;
    double now = tool_now_s();
    hp_loop_timer_start(t->step, 50000000ull, 50000000ull);
    hp_loop_timer_start(t->stop, t->end > now ? (uint64_t)((t->end - now) * 1e9) : 0, 0);
    if (t->o->ntcp)
        t->rc = selftest_tcp_start(t, now);
    if (t->rc == 0)
        t->rc = hp_loop_run(t->loop, selftest_event, t) < 0;
    for (int i = 0; i < t->ncli; i++)
        tcp_cli_finish(t->cli[i], tool_now_s(), "the self-test ended");
    hp_loop_stop(t->server_loop);
    hp_thread_exit();
    return NULL;
}

/* The TCP part of the verdict: every connection verified. */
static bool selftest_tcp_report(const struct selftest *t)
{
    unsigned ok = 0, all = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < t->ncli; i++) {
        struct tcp_cli_totals tt;
        tcp_cli_totals(t->cli[i], &tt);
        ok += tt.ok;
        all += tt.ok + tt.failed;
        bytes += tt.sent + tt.received;
        for (unsigned k = 0; tt.failed && k < tt.ok + tt.failed; k++) {
            const struct tcp_cli_conn *r = tcp_cli_conn(t->cli[i], k);
            if (!r->ok)
                fprintf(stderr, "hotpath serve: self-test: TCP connection %d.%u: %s\n", i, k,
                        r->why);
        }
    }
    printf("serve self-test: %u/%u TCP connections verified (%s, %llu bytes): %s\n", ok, all,
           t->o->ntcp ? "echo, discard, source as served" : "none", (unsigned long long)bytes,
           all > 0 && ok == all ? "ok" : "FAILED");
    return all > 0 && ok == all;
}

/* The verdict, after the thread is done. */
static bool selftest_report(const struct selftest *t)
{
    uint64_t reps = hp_stack_counter(t->s, HP_CTR_ICMP_IN_ECHO_REPS) +
                    hp_stack_counter(t->s, HP_CTR_ICMP6_IN_ECHO_REPS);
    bool ok = t->rc == 0 && t->sent > 0 && t->echoed == t->sent && t->bad == 0 && reps == t->pings;
    printf("serve self-test: %llu/%llu UDP echoes, %llu/%llu ping replies: %s\n",
           (unsigned long long)t->echoed, (unsigned long long)t->sent, (unsigned long long)reps,
           (unsigned long long)t->pings, ok ? "ok" : "FAILED");
    if (t->o->ntcp && !selftest_tcp_report(t))
        ok = false;
    return ok;
}

static void selftest_free(struct selftest *t)
{
    for (int i = 0; i < t->ncli; i++)
        tcp_cli_free(t->cli[i]);
    for (int f = 0; f < 2; f++)
        hp_udp_close(t->u[f]);
    hp_loop_destroy(t->loop);
    hp_stack_destroy(t->s);
}

/* ---- running -------------------------------------------------------------------- */

static void print_banner(const struct server *v)
{
    const struct serve_opts *o = v->o;
    if (o->json)
        return;
    printf("serve: %s on %s, UDP echo on port %u", hp_link_kind(v->link), hp_link_name(v->link),
           o->port);
    for (int p = 0; p < o->ntcp; p++)
        printf(", TCP %s on %u", tcp_mode_name(o->tcp[p].mode), o->tcp[p].port);
    if (hp_loop_spin_us(v->loop) == HP_LOOP_SPIN_FOREVER)
        printf(", busy-polling");
    else
        printf(", spin %u us then sleep", hp_loop_spin_us(v->loop));
    printf("%s\n", v->peer ? " (self-test client on the other end)" : "");
    fflush(stdout);
}

/* The loops run until the duration ends (real links), the self-test ends
 * (mem), or a signal. */
static int serve_loop(struct server *v, struct selftest *t)
{
    v->t0 = tool_now_s();
    hp_loop_timer_start(v->tick, NS_PER_S, NS_PER_S);
    if (v->o->duration > 0 && !t)
        hp_loop_timer_start(v->end, (uint64_t)(v->o->duration * 1e9), 0);
    print_banner(v);
    apploop_signals(v->loop);
    if (t) {
        t->server_loop = v->loop;
        t->end = v->t0 + v->o->duration;
        apploop_signals(t->loop);
        if (pthread_create(&t->th, NULL, selftest_main, t) != 0) {
            fprintf(stderr, "hotpath serve: cannot start the self-test thread\n");
            return 1;
        }
        t->started = true;
    }
    int rc = hp_loop_run(v->loop, server_event, v);
    if (t && t->started) {
        hp_loop_stop(t->loop); /* interrupted: end the self-test too */
        pthread_join(t->th, NULL);
    }
    apploop_signals_forget();
    print_counters(v, "exit");
    if (rc < 0) {
        fprintf(stderr, "hotpath serve: the event loop failed: %s\n", hp_strerror(rc));
        return 1;
    }
    return t && !selftest_report(t) ? 1 : 0;
}

static int serve_run(const struct serve_opts *o)
{
    struct server v = {.o = o};
    struct selftest t = {.o = o};
    int rc = server_open(&v);
    if (!rc && v.peer)
        rc = selftest_setup(o, v.peer, &t);
    if (!rc)
        rc = serve_loop(&v, v.peer ? &t : NULL);
    selftest_free(&t);
    if (server_close(&v)) {
        rc = rc ? rc : 1;
    } else if (o->json) {
        apploop_print_json(
            json_pack("{s:s, s:i, s:b}", "event", "buffers", "in_use", 0, "all_back", 1));
    } else {
        printf("serve: every buffer came back (0 in use at exit)\n");
    }
    return rc;
}

/* ---- options -------------------------------------------------------------------- */

/* --tcp-echo / --tcp-discard / --tcp-source PORT */
static int add_tcp_port(struct serve_opts *o, int mode, const char *arg)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end || !*arg || arg[0] == '-' || v < 1 || v > 65535)
        return tool_usage_error("serve", "--tcp-%s wants a port from 1 to 65535, not '%s'",
                                tcp_mode_name(mode), arg);
    for (int p = 0; p < o->ntcp; p++)
        if (o->tcp[p].port == v)
            return tool_usage_error("serve", "TCP port %lu is given twice (--tcp-%s and --tcp-%s)",
                                    v, tcp_mode_name(o->tcp[p].mode), tcp_mode_name(mode));
    if (o->ntcp == MAX_TCP_PORTS)
        return tool_usage_error("serve", "at most %d TCP ports", MAX_TCP_PORTS);
    o->tcp[o->ntcp].mode = mode;
    o->tcp[o->ntcp].port = (uint16_t)v;
    o->ntcp++;
    return 0;
}

/* One option of serve's own (not a netopt). 0, 2 (usage error), or 1 for --help. */
static int parse_one(struct serve_opts *o, int c, const char *arg)
{
    char *end;
    switch (c) {
    case 'u': {
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (errno || *end || !*arg || arg[0] == '-' || v < 1 || v > 65535)
            return tool_usage_error("serve", "--udp-echo wants a port from 1 to 65535, not '%s'",
                                    arg);
        o->port = (unsigned)v;
        return 0;
    }
    case 'E':
    case 'D':
    case 'S':
        return add_tcp_port(o,
                            c == 'E'   ? TCP_ECHO
                            : c == 'D' ? TCP_DISCARD
                                       : TCP_SOURCE,
                            arg)
                   ? 2
                   : 0;
    case 'w':
        return apploop_parse_spin("serve", arg, &o->spin_us);
    case 'j':
        o->json = true;
        return 0;
    case 'd':
        o->duration = strtod(arg, &end);
        if (*end || !(o->duration > 0) || o->duration > 86400 * 365.0)
            return tool_usage_error("serve", "--duration wants seconds (> 0), not '%s'", arg);
        return 0;
    case 'h':
        usage(stdout);
        return 1;
    default:
        return tool_usage_error("serve", "unknown option (hotpath serve --help lists them)");
    }
}

/* The checks and defaults after parsing. 0 or 2. */
static int check_opts(struct serve_opts *o)
{
    if (netopt_check("serve", &o->n))
        return 2;
    bool mem = strcmp(o->n.link, "mem") == 0;
    if (o->n.nip == 0)
        return tool_usage_error("serve", "give at least one address (--ip or --ip6)");
    if (mem && !(o->duration > 0))
        o->duration = 1;
    /* The self-test exercises TCP too: echo on 7 unless TCP ports are given. */
    if (mem && o->ntcp == 0) {
        o->tcp[0].mode = TCP_ECHO;
        o->tcp[0].port = 7;
        o->ntcp = 1;
    }
    for (int i = 0; mem && i < o->n.nip; i++) {
        int last = o->n.ip[i].family == 4 ? 3 : 15;
        if (o->n.ip[i].addr[last] >= 254 || o->n.ip[i].plen > (o->n.ip[i].family == 4 ? 30 : 126))
            return tool_usage_error("serve",
                                    "--link mem: the self-test client takes the next address, "
                                    "so each address must leave room for it on its prefix");
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {.port = 7, .spin_us = HP_LOOP_SPIN_US_DEFAULT};
    netopt_init(&o.n);
    static const struct option longopts[] = {
        NETOPT_LONGOPTS,
        {"udp-echo", required_argument, NULL, 'u'},
        {"tcp-echo", required_argument, NULL, 'E'},
        {"tcp-discard", required_argument, NULL, 'D'},
        {"tcp-source", required_argument, NULL, 'S'},
        {"spin-us", required_argument, NULL, 'w'},
        {"json-stats", no_argument, NULL, 'j'},
        {"duration", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = netopt_parse("serve", &o.n, c, optarg);
        if (r == 1)
            r = parse_one(&o, c, optarg);
        if (r == 1)
            return 0; /* --help */
        if (r == 2)
            return 2;
    }
    if (optind < argc)
        return tool_usage_error("serve", "unexpected argument '%s'", argv[optind]);
    if (check_opts(&o))
        return 2;
    return serve_run(&o);
}
