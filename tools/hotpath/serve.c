/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath serve`: a stack on one link answering ARP, NDP, ping, UDP echo and TCP echo / discard / source, with counters each second. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

#include "netopts.h"
#include "tcp_app.h"
#include "cmd.h"
#include "tool.h"

#define MAX_TCP_PORTS 16
/* With TCP on, the link gets a pool this large (mem, tap, afpacket; afxdp's
 * pool is its UMEM): a thousand connections each holding a window of data
 * would exhaust the links' default 4096 buffers. */
#define TCP_POOL_BUFS 32768

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

struct tcp_port {
    int mode;
    uint16_t port;
};

struct serve_opts {
    struct net_opts n;
    unsigned port;       /* UDP echo */
    struct tcp_port tcp[MAX_TCP_PORTS];
    int ntcp;
    bool json;
    double duration;     /* 0: until interrupted */
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath serve --link afxdp|afpacket|tap|mem --iface IF --ip ADDR/LEN [OPTIONS]\n\n"
            "Run a stack on one link: it answers ARP, NDP and ping, echoes UDP, and serves TCP.\n\n"
            "  --link KIND       afxdp (copy mode), afpacket, tap, or mem: a self-test with a\n"
            "                    built-in client stack on the other end of an in-process pair\n"
            NETOPT_HELP
            "  --udp-echo PORT   echo UDP datagrams on PORT, both families (default 7)\n"
            "  --tcp-echo PORT   TCP echo on PORT, both families (repeatable; with mem: 7 unless\n"
            "                    a TCP port is given)\n"
            "  --tcp-discard PORT  TCP discard: read and drop (repeatable)\n"
            "  --tcp-source PORT   TCP source: an endless byte pattern until the peer closes\n"
            "                    (repeatable)\n"
            "  --json-stats      a JSON object of counters each second instead of a line\n"
            "  --duration S      stop after S seconds (default: at SIGINT / SIGTERM)\n");
}

/* Counters each second: the non-zero ones on one line, or a JSON object. */
static void print_counters(const struct serve_opts *o, struct hp_stack *s, const struct tcp_srv *tcp, double t,
                           const char *tag)
{
    struct tcp_srv_stats ts;
    tcp_srv_get_stats(tcp, &ts);
    if (o->json) {
        printf("{\"t\": %.3f, \"event\": \"%s\", \"counters\": {", t, tag);
        bool first = true;
        for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
            uint64_t v = hp_stack_counter(s, (enum hp_stack_ctr)c);
            if (!v)
                continue;
            printf("%s\"%s\": %llu", first ? "" : ", ", hp_stack_counter_name((enum hp_stack_ctr)c),
                   (unsigned long long)v);
            first = false;
        }
        printf("}");
        if (tcp)
            printf(", \"tcp\": {\"open\": %llu, \"accepted\": %llu, \"closed\": %llu, \"failed\": %llu, "
                   "\"bytes_in\": %llu, \"bytes_out\": %llu}",
                   (unsigned long long)ts.open, (unsigned long long)ts.accepted, (unsigned long long)ts.closed,
                   (unsigned long long)ts.failed, (unsigned long long)ts.bytes_in,
                   (unsigned long long)ts.bytes_out);
        /* Buffers handed out and not back, every pool (make soak plots it). */
        printf(", \"buffers_in_use\": %ld}\n", hp_pools_in_use());
    } else {
        printf("serve %s %.1f s:", tag, t);
        if (tcp)
            printf(" tcp_open=%llu tcp_accepted=%llu tcp_bytes_in=%llu tcp_bytes_out=%llu",
                   (unsigned long long)ts.open, (unsigned long long)ts.accepted, (unsigned long long)ts.bytes_in,
                   (unsigned long long)ts.bytes_out);
        for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
            uint64_t v = hp_stack_counter(s, (enum hp_stack_ctr)c);
            if (v)
                printf(" %s=%llu", hp_stack_counter_name((enum hp_stack_ctr)c), (unsigned long long)v);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* Echo what is queued: zero-copy, the received buffer goes back. */
static uint64_t echo_all(struct hp_udp_sock *u)
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

/*
 * The mem self-test: a client stack on the other end of the pair, one host
 * number above each server address, pings and sends UDP to every server
 * address and checks the echoes; for every TCP service and address, TCP
 * connections that send (or read) a pattern and verify every byte.
 */
#define ST_MAX_CLI (NETOPT_MAX_ADDRS * MAX_TCP_PORTS)

struct selftest {
    struct hp_stack *s;
    struct hp_udp_sock *u[2]; /* IPv4, IPv6 */
    struct cidr peer[NETOPT_MAX_ADDRS];
    int npeer;
    uint64_t sent, echoed, bad, pings;
    uint16_t seq;
    struct tcp_cli *cli[ST_MAX_CLI];
    int ncli;
    bool tcp_started;
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
    int rc = netopt_setup_stack("serve", &o->n, ips, o->n.nip, false, link, "selftest", HP_STACK_F_NO_DAD, &t->s);
    if (rc)
        return rc;
    for (int f = 0; f < 2; f++)
        t->u[f] = hp_udp_open(t->s, f ? 6 : 4, NULL);
    return t->u[0] && t->u[1] ? 0 : 1;
}

/* Per service: echo 2 connections of 300,000 bytes (more than a window),
 * discard and source one of 100,000. */
static int selftest_tcp_start(const struct serve_opts *o, struct selftest *t, double now, double end)
{
    for (int i = 0; i < t->npeer; i++) {
        for (int p = 0; p < o->ntcp; p++) {
            struct tcp_cli_opts co = {.mode = o->tcp[p].mode, .deadline = end, .hash = false,
                                      .first_index = (uint32_t)t->ncli * 16};
            co.to.family = (uint8_t)t->peer[i].family;
            co.to.port = o->tcp[p].port;
            memcpy(co.to.addr, t->peer[i].addr, 16);
            co.conns = co.mode == TCP_ECHO ? 2 : 1;
            co.bytes = co.mode == TCP_ECHO ? 300000 : 100000;
            struct tcp_cli *c = tcp_cli_new(t->s, &co);
            if (!c) {
                fprintf(stderr, "hotpath serve: self-test: cannot make a TCP client: %s\n", hp_strerror(-errno));
                return 1;
            }
            t->cli[t->ncli++] = c;
            tcp_cli_step(c, now);
        }
    }
    t->tcp_started = true;
    return 0;
}

static void selftest_send(struct selftest *t, unsigned port)
{
    for (int i = 0; i < t->npeer; i++) {
        struct hp_sockaddr to = {.family = (uint8_t)t->peer[i].family, .port = (uint16_t)port};
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

static void selftest_recv(struct selftest *t, double now)
{
    for (int f = 0; f < 2; f++) {
        char buf[64];
        int n;
        while ((n = hp_udp_recvfrom(t->u[f], buf, sizeof buf, NULL)) >= 0) {
            if (n >= 16 && memcmp(buf, "hotpath selftest", 16) == 0)
                t->echoed++;
            else
                t->bad++;
        }
    }
    tcp_app_events(t->s);
    for (int i = 0; i < t->ncli; i++)
        tcp_cli_step(t->cli[i], now);
}

/* The TCP part of the verdict: every connection verified. */
static bool selftest_tcp_report(const struct serve_opts *o, struct selftest *t, double now)
{
    unsigned ok = 0, all = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < t->ncli; i++) {
        tcp_cli_finish(t->cli[i], now, "the self-test ended");
        struct tcp_cli_totals tt;
        tcp_cli_totals(t->cli[i], &tt);
        ok += tt.ok;
        all += tt.ok + tt.failed;
        bytes += tt.sent + tt.received;
        for (unsigned k = 0; tt.failed && k < tt.ok + tt.failed; k++) {
            const struct tcp_cli_conn *r = tcp_cli_conn(t->cli[i], k);
            if (!r->ok)
                fprintf(stderr, "hotpath serve: self-test: TCP connection %d.%u: %s\n", i, k, r->why);
        }
    }
    printf("serve self-test: %u/%u TCP connections verified (%s, %llu bytes): %s\n", ok, all,
           o->ntcp ? "echo, discard, source as served" : "none", (unsigned long long)bytes,
           all > 0 && ok == all ? "ok" : "FAILED");
    return all > 0 && ok == all;
}

static int open_tcp(const struct serve_opts *o, struct hp_stack *s, struct tcp_srv **out)
{
    if (!o->ntcp)
        return 0;
    struct tcp_srv *v = tcp_srv_new(s);
    if (!v) {
        fprintf(stderr, "hotpath serve: out of memory\n");
        return 1;
    }
    *out = v;
    for (int p = 0; p < o->ntcp; p++) {
        for (int f = 4; f <= 6; f += 2) {
            int rc = tcp_srv_listen(v, o->tcp[p].mode, o->tcp[p].port, f, 0);
            if (rc < 0) {
                fprintf(stderr, "hotpath serve: cannot listen on TCP port %u (IPv%d, %s): %s\n", o->tcp[p].port, f,
                        tcp_mode_name(o->tcp[p].mode), hp_strerror(rc));
                return 1;
            }
        }
    }
    return 0;
}

static int serve_run(const struct serve_opts *o)
{
    struct hp_link *link = NULL, *peer = NULL;
    struct hp_pool *pool = NULL;
    struct hp_link_config lc = {0};
    bool mem = strcmp(o->n.link, "mem") == 0;
    if (o->ntcp && strcmp(o->n.link, "afxdp") != 0) {
        struct hp_pool_config pc = {.name = "serve", .n_bufs = TCP_POOL_BUFS};
        pool = hp_pool_create(&pc);
        if (!pool) {
            fprintf(stderr, "hotpath serve: cannot create a pool of %d buffers: %s\n", TCP_POOL_BUFS,
                    hp_strerror(-errno));
            return 1;
        }
        lc.pool = pool;
    }
    if (netopt_open_link("serve", &o->n, &lc, &link, &peer)) {
        hp_pool_destroy(pool);
        return 1;
    }
    if (o->n.cpu >= 0)
        tool_pin(o->n.cpu);

    int rc = 0;
    struct hp_stack *s = NULL;
    struct hp_udp_sock *u[2] = {NULL, NULL};
    struct tcp_srv *tcp = NULL;
    struct selftest t;
    memset(&t, 0, sizeof t);
    if ((rc = netopt_setup_stack("serve", &o->n, o->n.ip, o->n.nip, true, link, "serve",
                                 mem ? HP_STACK_F_NO_DAD : 0, &s)) != 0)
        goto out;
    for (int f = 0; f < 2; f++) {
        u[f] = hp_udp_open(s, f ? 6 : 4, NULL);
        struct hp_sockaddr any = {.family = (uint8_t)(f ? 6 : 4), .port = (uint16_t)o->port};
        int b = u[f] ? hp_udp_bind(u[f], &any) : -ENOMEM;
        if (b < 0) {
            fprintf(stderr, "hotpath serve: cannot bind UDP port %u (IPv%d): %s\n", o->port, f ? 6 : 4,
                    hp_strerror(b));
            rc = 1;
            goto out;
        }
    }
    if ((rc = open_tcp(o, s, &tcp)) != 0)
        goto out;
    if (peer && (rc = selftest_setup(o, peer, &t)) != 0)
        goto out;

    double t0 = tool_now_s(), next = t0 + 1, next_send = t0 + 0.05;
    double end = o->duration > 0 ? t0 + o->duration : 0;
    if (!o->json) {
        printf("serve: %s on %s, UDP echo on port %u", hp_link_kind(link), hp_link_name(link), o->port);
        for (int p = 0; p < o->ntcp; p++)
            printf(", TCP %s on %u", tcp_mode_name(o->tcp[p].mode), o->tcp[p].port);
        printf("%s\n", peer ? " (self-test client on the other end)" : "");
    }
    struct hp_event ev[16];
    while (!interrupted) {
        hp_stack_poll(s);
        if (tcp) {
            tcp_app_events(s);
        } else {
            /* Echo whatever is queued each round, so the events only need
             * draining (they would say which socket to look at). */
            while (hp_stack_events(s, ev, 16) == 16)
                ;
        }
        echo_all(u[0]);
        echo_all(u[1]);
        double now = tool_now_s();
        if (peer) {
            hp_stack_poll(t.s);
            if (!t.tcp_started && o->ntcp && (rc = selftest_tcp_start(o, &t, now, end - 0.05)) != 0)
                goto out;
            selftest_recv(&t, now);
        }
        if (peer && now >= next_send && (!end || now < end - 0.2)) {
            selftest_send(&t, o->port);
            next_send = now + 0.05;
        }
        if (now >= next) {
            print_counters(o, s, tcp, now - t0, "tick");
            next += 1;
        }
        if (end && now >= end)
            break;
    }
    print_counters(o, s, tcp, tool_now_s() - t0, "exit");
    if (peer) {
        uint64_t reps = hp_stack_counter(t.s, HP_CTR_ICMP_IN_ECHO_REPS) +
                        hp_stack_counter(t.s, HP_CTR_ICMP6_IN_ECHO_REPS);
        bool ok = t.sent > 0 && t.echoed == t.sent && t.bad == 0 && reps == t.pings;
        printf("serve self-test: %llu/%llu UDP echoes, %llu/%llu ping replies: %s\n",
               (unsigned long long)t.echoed, (unsigned long long)t.sent, (unsigned long long)reps,
               (unsigned long long)t.pings, ok ? "ok" : "FAILED");
        if (o->ntcp && !selftest_tcp_report(o, &t, tool_now_s()))
            ok = false;
        if (!ok)
            rc = 1;
    }
out:
    for (int i = 0; i < t.ncli; i++)
        tcp_cli_free(t.cli[i]);
    tcp_srv_free(tcp);
    for (int f = 0; f < 2; f++) {
        hp_udp_close(u[f]);
        hp_udp_close(t.u[f]);
    }
    hp_stack_destroy(s);
    hp_stack_destroy(t.s);
    hp_pool_thread_flush(hp_link_pool(link));
    int c1 = hp_link_close(link), c2 = hp_link_close(peer);
    int c3 = pool ? hp_pool_destroy(pool) : 0;
    long left = hp_pools_in_use();
    if (c1 < 0 || c2 < 0 || c3 < 0 || left != 0) {
        fprintf(stderr, "hotpath serve: %ld buffers still in use at exit\n", left);
        rc = rc ? rc : 1;
    } else if (o->json) {
        printf("{\"event\": \"buffers\", \"in_use\": 0, \"all_back\": true}\n");
    } else {
        printf("serve: every buffer came back (0 in use at exit)\n");
    }
    return rc;
}

/* --tcp-echo / --tcp-discard / --tcp-source PORT */
static int add_tcp_port(struct serve_opts *o, int mode, const char *arg)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end || !*arg || arg[0] == '-' || v < 1 || v > 65535)
        return tool_usage_error("serve", "--tcp-%s wants a port from 1 to 65535, not '%s'", tcp_mode_name(mode), arg);
    for (int p = 0; p < o->ntcp; p++)
        if (o->tcp[p].port == v)
            return tool_usage_error("serve", "TCP port %lu is given twice (--tcp-%s and --tcp-%s)", v,
                                    tcp_mode_name(o->tcp[p].mode), tcp_mode_name(mode));
    if (o->ntcp == MAX_TCP_PORTS)
        return tool_usage_error("serve", "at most %d TCP ports", MAX_TCP_PORTS);
    o->tcp[o->ntcp].mode = mode;
    o->tcp[o->ntcp].port = (uint16_t)v;
    o->ntcp++;
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {.port = 7};
    netopt_init(&o.n);
    static const struct option longopts[] = {
        NETOPT_LONGOPTS,
        {"udp-echo", required_argument, NULL, 'u'}, {"tcp-echo", required_argument, NULL, 'E'},
        {"tcp-discard", required_argument, NULL, 'D'}, {"tcp-source", required_argument, NULL, 'S'},
        {"json-stats", no_argument, NULL, 'j'}, {"duration", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end;
        int r = netopt_parse("serve", &o.n, c, optarg);
        if (r == 0)
            continue;
        if (r == 2)
            return 2;
        switch (c) {
        case 'u': {
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || *end || !*optarg || optarg[0] == '-' || v < 1 || v > 65535)
                return tool_usage_error("serve", "--udp-echo wants a port from 1 to 65535, not '%s'", optarg);
            o.port = (unsigned)v;
            break;
        }
        case 'E':
        case 'D':
        case 'S':
            if (add_tcp_port(&o, c == 'E' ? TCP_ECHO : c == 'D' ? TCP_DISCARD : TCP_SOURCE, optarg))
                return 2;
            break;
        case 'j':
            o.json = true;
            break;
        case 'd':
            o.duration = strtod(optarg, &end);
            if (*end || !(o.duration > 0) || o.duration > 86400 * 365.0)
                return tool_usage_error("serve", "--duration wants seconds (> 0), not '%s'", optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return tool_usage_error("serve", "unknown option (hotpath serve --help lists them)");
        }
    }
    if (optind < argc)
        return tool_usage_error("serve", "unexpected argument '%s'", argv[optind]);
    if (netopt_check("serve", &o.n))
        return 2;
    bool mem = strcmp(o.n.link, "mem") == 0;
    if (o.n.nip == 0)
        return tool_usage_error("serve", "give at least one address (--ip or --ip6)");
    if (mem && !(o.duration > 0))
        o.duration = 1;
    /* The self-test exercises TCP too: echo on 7 unless TCP ports are given. */
    if (mem && o.ntcp == 0) {
        o.tcp[0].mode = TCP_ECHO;
        o.tcp[0].port = 7;
        o.ntcp = 1;
    }
    for (int i = 0; mem && i < o.n.nip; i++) {
        int last = o.n.ip[i].family == 4 ? 3 : 15;
        if (o.n.ip[i].addr[last] >= 254 || o.n.ip[i].plen > (o.n.ip[i].family == 4 ? 30 : 126))
            return tool_usage_error("serve", "--link mem: the self-test client takes the next address, "
                                             "so each address must leave room for it on its prefix");
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return serve_run(&o);
}
