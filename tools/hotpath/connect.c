/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath connect`: TCP connections to an echo / discard / source server that send a pattern and verify every byte, with SHA-256 digests. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "netopts.h"
#include "tcp_app.h"
#include "cmd.h"
#include "tool.h"

#define MAX_CONNS 16384   /* one client address's ephemeral ports (RFC 6056: 49152-65535) */
/* --link mem: the pair's pool. Socket buffers are sized so that every
 * connection's four queues fit in it. */
#define MEM_POOL_BUFS 65536
/* --link mem: ring entries per direction, enough for one turn of a
 * thousand connections' windows (a frame the ring cannot take is dropped,
 * as a switch would). */
#define MEM_RING 16384

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

struct connect_opts {
    struct net_opts n;
    struct hp_sockaddr to;
    bool has_to;
    int mode;
    uint64_t bytes;      /* per connection; 0: timed */
    unsigned conns;
    double duration;     /* timed mode's length, or the time limit with --bytes; 0: none */
    double loss;         /* mem: drop rate of the fault decorator on our end, both ways */
    bool json;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath connect --link KIND [--iface IF] --ip ADDR/LEN --to ADDR:PORT --bytes N\n"
            "                       [--conns C] [--mode echo|discard|source] [--duration S] [--json]\n\n"
            "Open C TCP connections to a server and check every byte: echo (send N bytes of a\n"
            "pseudo-random pattern per connection, verify that they all come back, in order),\n"
            "discard (send N bytes, then the server's orderly close) or source (read N bytes of\n"
            "the pattern 'hotpath serve --tcp-source' sends). Exit status 0 only when every\n"
            "connection verified.\n\n"
            "  --link KIND       afxdp (copy mode), afpacket, tap, memif (shared memory with\n"
            "                    another process), or mem: an echo (discard, source) server\n"
            "                    stack of our own on the other end of an in-process pair\n"
            NETOPT_HELP
            "                    (mem: default 198.18.0.1/24 and 2001:2::1/64)\n"
            "  --to ADDR:PORT    the server, [v6]:PORT for IPv6 (mem: default 198.18.0.2:7)\n"
            "  --bytes N         bytes per connection: to send (echo, discard) or to read\n"
            "                    (source); suffixes k M G (x1000) or Ki Mi Gi (x1024)\n"
            "  --conns C         connections, all at once (default 1, at most %d)\n"
            "  --mode M          what the server does: echo (default), discard, source\n"
            "  --duration S      without --bytes: send (read) for S seconds; with it: fail the\n"
            "                    connections not done after S seconds\n"
            "  --loss P          mem: drop each frame with probability P (0..0.5) on the way in\n"
            "                    and out of our end (seeded fault injection)\n"
            "  --json            a JSON summary on stdout instead of a table\n",
            MAX_CONNS);
}

/* The combined digest: SHA-256 over each connection's hex digest, in order. */
static void combined(const struct tcp_cli *c, unsigned n, bool sent, char hex[65])
{
    struct tool_sha256 *h = tool_sha256_new();
    for (unsigned i = 0; h && i < n; i++) {
        const struct tcp_cli_conn *r = tcp_cli_conn(c, i);
        const char *d = sent ? r->sha_sent : r->sha_received;
        tool_sha256_update(h, d, strlen(d));
    }
    tool_sha256_final(h, hex);
}

static void json_sha(FILE *f, const char *hex)
{
    if (hex[0])
        fprintf(f, "\"%s\"", hex);
    else
        fprintf(f, "null");
}

/* TCP counters of interest, as a JSON object. */
static void json_tcp(FILE *f, const struct hp_stack *s)
{
    static const enum hp_stack_ctr ctrs[] = {
        HP_CTR_TCP_ACTIVE_OPENS, HP_CTR_TCP_ATTEMPT_FAILS, HP_CTR_TCP_ESTAB_RESETS, HP_CTR_TCP_OUT_SEGS,
        HP_CTR_TCP_IN_SEGS, HP_CTR_TCP_RETRANS_SEGS, HP_CTR_TCP_FAST_RETRANS, HP_CTR_TCP_TIMEOUTS,
        HP_CTR_TCP_SYN_RETRANS, HP_CTR_TCP_DUP_ACKS, HP_CTR_TCP_OFO_QUEUED, HP_CTR_TCP_OFO_DROPS,
        HP_CTR_TCP_RCVQ_DROPS, HP_CTR_TCP_NO_BUFFERS, HP_CTR_TCP_IN_RSTS, HP_CTR_TCP_OUT_RSTS,
        HP_CTR_TCP_ZERO_WINDOW_PROBES, HP_CTR_TCP_IN_OUT_OF_WINDOW, HP_CTR_TCP_PAWS_DROPS,
    };
    fputc('{', f);
    for (size_t i = 0; i < sizeof ctrs / sizeof ctrs[0]; i++) {
        const char *name = hp_stack_counter_name(ctrs[i]);
        fprintf(f, "%s\"", i ? ", " : "");
        for (const char *p = name + 4; *p; p++) /* "TCP_RETRANS_SEGS" -> "retrans_segs" */
            fputc(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p, f);
        fprintf(f, "\": %llu", (unsigned long long)hp_stack_counter(s, ctrs[i]));
    }
    fputc('}', f);
}

struct run {
    struct hp_link *link, *peer;
    struct hp_pool *pool;
    struct hp_stack *cs, *ss;   /* client, and (mem) server stacks */
    struct tcp_srv *srv;
    struct tcp_cli *cli;
    uint32_t sockbuf;
};

static int setup(const struct connect_opts *o, struct run *r)
{
    bool mem = strcmp(o->n.link, "mem") == 0;
    struct hp_link_config lc = {0};
    if (mem) {
        struct hp_pool_config pc = {.name = "connect", .n_bufs = MEM_POOL_BUFS};
        r->pool = hp_pool_create(&pc);
        if (!r->pool) {
            fprintf(stderr, "hotpath connect: cannot create a pool of %d buffers: %s\n", MEM_POOL_BUFS,
                    hp_strerror(-errno));
            return 1;
        }
        lc.pool = r->pool;
        lc.ring_size = MEM_RING;
    }
    if (netopt_open_link("connect", &o->n, &lc, &r->link, &r->peer))
        return 1;
    if (!memifopt_wait_up("connect", r->link, 10, &interrupted)) {
        fprintf(stderr, "hotpath connect: the memif peer did not come in 10 s\n");
        return 1;
    }
    if (o->loss > 0) {
        struct hp_fault_config fc = {.seed = 1, .drop = o->loss};
        struct hp_link *f = hp_link_fault(r->link, &fc);
        if (!f) {
            fprintf(stderr, "hotpath connect: --loss: %s\n", hp_link_error());
            return 1;
        }
        r->link = f;
    }
    if (o->n.cpu >= 0)
        tool_pin(o->n.cpu);
    /* Each connection holds up to four queues (our send and receive, the
     * server's): with many connections, smaller buffers keep them all in
     * the pool instead of running it dry. */
    uint64_t per = (uint64_t)hp_pool_size(hp_link_pool(r->link)) * 1400 / (5 * (uint64_t)o->conns);
    if (per < 262144)
        r->sockbuf = per < 16384 ? 16384 : (uint32_t)per;
    struct cidr ips[NETOPT_MAX_ADDRS];
    int nip = o->n.nip;
    memcpy(ips, o->n.ip, sizeof ips);
    if (mem && nip == 0) {
        netopt_parse_cidr("connect", "--ip", "198.18.0.1/24", 4, &ips[nip++]);
        netopt_parse_cidr("connect", "--ip6", "2001:2::1/64", 6, &ips[nip++]);
    }
    if (netopt_setup_stack("connect", &o->n, ips, nip, true, r->link, "connect", mem ? HP_STACK_F_NO_DAD : 0,
                           &r->cs))
        return 1;
    struct hp_tcp_config tc = {.sndbuf = r->sockbuf, .rcvbuf = r->sockbuf};
    int rc = hp_tcp_configure(r->cs, &tc);
    if (rc < 0) {
        fprintf(stderr, "hotpath connect: cannot configure TCP: %s\n", hp_strerror(rc));
        return 1;
    }
    if (mem) {
        /* The server: the --to address, on the prefix of our address of its family. */
        struct cidr srv = {.family = o->to.family};
        memcpy(srv.addr, o->to.addr, 16);
        for (int i = 0; i < nip; i++)
            if (ips[i].family == o->to.family)
                srv.plen = ips[i].plen;
        if (netopt_setup_stack("connect", &o->n, &srv, 1, false, r->peer, "server", HP_STACK_F_NO_DAD, &r->ss))
            return 1;
        if ((rc = hp_tcp_configure(r->ss, &tc)) < 0) {
            fprintf(stderr, "hotpath connect: cannot configure the mem server's TCP: %s\n", hp_strerror(rc));
            return 1;
        }
        r->srv = tcp_srv_new(r->ss);
        if (!r->srv) {
            fprintf(stderr, "hotpath connect: out of memory\n");
            return 1;
        }
        rc = tcp_srv_listen(r->srv, o->mode, o->to.port, o->to.family, 0);
        if (rc < 0) {
            fprintf(stderr, "hotpath connect: the mem server cannot listen on port %u: %s\n", o->to.port,
                    hp_strerror(rc));
            return 1;
        }
    }
    return 0;
}

static void teardown(struct run *r)
{
    tcp_cli_free(r->cli);
    tcp_srv_free(r->srv);
    hp_stack_destroy(r->cs);
    hp_stack_destroy(r->ss);
    if (r->link)
        hp_pool_thread_flush(hp_link_pool(r->link));
    hp_link_close(r->link);
    hp_link_close(r->peer);
    if (r->pool && hp_pool_destroy(r->pool) < 0)
        fprintf(stderr, "hotpath connect: buffers still in use at exit\n");
}

static void progress(const struct connect_opts *o, const struct tcp_cli *c, double el, bool final)
{
    struct tcp_cli_totals t;
    tcp_cli_totals(c, &t);
    uint64_t moved = t.sent + t.received;
    double gbps = el > 0 ? (double)moved * 8 / el / 1e9 : 0;
    if (final) {
        fprintf(stderr, "\r\033[K");
        return;
    }
    if (o->bytes) {
        uint64_t per = o->mode == TCP_ECHO ? 2 * o->bytes : o->bytes;
        double total = (double)per * o->conns;
        fprintf(stderr, "\r\033[K  connect  %.1f / %.1f MB  %u/%u connections done (%u failed)  %.2f Gbit/s  %.1f s",
                (double)moved / 1e6, total / 1e6, t.done, o->conns, t.failed, gbps, el);
    } else {
        fprintf(stderr, "\r\033[K  connect  %.1f MB  %u/%u connections done (%u failed)  %.2f Gbit/s  %.1f / %.1f s",
                (double)moved / 1e6, t.done, o->conns, t.failed, gbps, el, o->duration);
    }
    fflush(stderr);
}

static void report(const struct connect_opts *o, const struct run *r, double secs)
{
    struct tcp_cli_totals t;
    tcp_cli_totals(r->cli, &t);
    bool verified = t.ok == o->conns;
    char to[64], hs[65], hr[65];
    hp_sockaddr_format(&o->to, to, sizeof to);
    combined(r->cli, o->conns, true, hs);
    combined(r->cli, o->conns, false, hr);
    double gbps = secs > 0 ? (double)(t.sent + t.received) * 8 / secs / 1e9 : 0;
    if (o->json) {
        printf("{\"mode\": \"%s\", \"link\": ", tcp_mode_name(o->mode));
        tool_json_str(stdout, o->n.link);
        printf(", \"to\": ");
        tool_json_str(stdout, to);
        printf(", \"loss\": %g, \"conns\": %u, \"bytes_per_conn\": %llu, \"duration_s\": %g, \"bytes_sent\": %llu, "
               "\"bytes_received\": %llu, \"conns_ok\": %u, \"conns_failed\": %u, \"seconds\": %.6f, "
               "\"gbps\": %.4f, \"sha256\": %s, \"sha256_sent\": ",
               o->loss, o->conns, (unsigned long long)o->bytes, o->duration, (unsigned long long)t.sent,
               (unsigned long long)t.received, t.ok, t.failed, secs, gbps,
               tool_sha256_available() ? "\"combined: SHA-256 of each connection's hex digest, in order\""
                                       : "\"unavailable: built without libcrypto\"");
        json_sha(stdout, hs);
        printf(", \"sha256_received\": ");
        json_sha(stdout, hr);
        printf(", \"verified\": %s, \"tcp\": ", verified ? "true" : "false");
        json_tcp(stdout, r->cs);
        if (r->ss) {
            struct tcp_srv_stats ss;
            tcp_srv_get_stats(r->srv, &ss);
            printf(", \"server\": {\"accepted\": %llu, \"closed\": %llu, \"failed\": %llu, \"bytes_in\": %llu, "
                   "\"bytes_out\": %llu, \"tcp\": ",
                   (unsigned long long)ss.accepted, (unsigned long long)ss.closed, (unsigned long long)ss.failed,
                   (unsigned long long)ss.bytes_in, (unsigned long long)ss.bytes_out);
            json_tcp(stdout, r->ss);
            printf("}");
        }
        printf(", \"connections\": [");
        for (unsigned i = 0; i < o->conns; i++) {
            const struct tcp_cli_conn *k = tcp_cli_conn(r->cli, i);
            printf("%s\n  {\"i\": %u, \"local_port\": %u, \"sent\": %llu, \"received\": %llu, \"seconds\": %.6f, "
                   "\"ok\": %s, \"sha256_sent\": ",
                   i ? "," : "", i, k->local_port, (unsigned long long)k->sent, (unsigned long long)k->received,
                   k->seconds, k->ok ? "true" : "false");
            json_sha(stdout, k->sha_sent);
            printf(", \"sha256_received\": ");
            json_sha(stdout, k->sha_received);
            if (!k->ok) {
                printf(", \"error\": ");
                tool_json_str(stdout, k->why);
            }
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("connect: %s to %s over %s, %u connection%s", tcp_mode_name(o->mode), to, o->n.link, o->conns,
               o->conns == 1 ? "" : "s");
        if (o->bytes)
            printf(" of %llu bytes\n", (unsigned long long)o->bytes);
        else
            printf(" for %g s\n", o->duration);
        printf("  %-12s %llu bytes\n  %-12s %llu bytes\n", "sent", (unsigned long long)t.sent, "received",
               (unsigned long long)t.received);
        printf("  %-12s %u ok, %u failed\n", "connections", t.ok, t.failed);
        printf("  %-12s %.3f s, %.3f Gbit/s (both directions)\n", "time", secs, gbps);
        if (hs[0])
            printf("  %-12s sent %.16s..., received %.16s... (combined over connections)\n", "sha256", hs, hr);
        else
            printf("  %-12s unavailable (built without libcrypto)\n", "sha256");
        printf("  %-12s %llu segments (fast %llu, timeouts %llu)\n", "retransmits",
               (unsigned long long)hp_stack_counter(r->cs, HP_CTR_TCP_RETRANS_SEGS),
               (unsigned long long)hp_stack_counter(r->cs, HP_CTR_TCP_FAST_RETRANS),
               (unsigned long long)hp_stack_counter(r->cs, HP_CTR_TCP_TIMEOUTS));
        printf("  %-12s %s\n", "verified", verified ? "yes" : "NO");
    }
    unsigned shown = 0;
    for (unsigned i = 0; i < o->conns && shown < 10; i++) {
        const struct tcp_cli_conn *k = tcp_cli_conn(r->cli, i);
        if (!k->ok) {
            fprintf(stderr, "hotpath connect: connection %u: %s\n", i, k->why);
            shown++;
        }
    }
    if (t.failed > shown)
        fprintf(stderr, "hotpath connect: ... and %u more failed\n", t.failed - shown);
}

/* One turn of a stack. With --link mem both stacks share this thread: a
 * stack is polled until its receive ring is drained (a few rounds at
 * most), so that one side's bursts (a thousand connections' worth) do not
 * overflow the other's ring between two turns. */
static void poll_stack(struct hp_stack *s, bool drain)
{
    for (int k = 0; k < 1024; k++) {
        int n = hp_stack_poll(s);
        tcp_app_events(s);
        if (!drain || n == 0)
            break;
    }
}

static int connect_run(const struct connect_opts *o)
{
    struct run r;
    memset(&r, 0, sizeof r);
    int rc = setup(o, &r);
    if (rc) {
        teardown(&r);
        return rc;
    }
    bool tty = isatty(STDERR_FILENO) && getenv("CI") == NULL;
    double t0 = tool_now_s(), next_progress = t0 + 0.2, now = t0;
    /* Timed: stop sending (reading) at the deadline; with --bytes: a time limit. */
    struct tcp_cli_opts co = {.to = o->to, .mode = o->mode, .bytes = o->bytes, .conns = o->conns,
                              .hash = true, .deadline = o->duration > 0 ? t0 + o->duration : 0};
    r.cli = tcp_cli_new(r.cs, &co);
    if (!r.cli) {
        fprintf(stderr, "hotpath connect: %s\n", hp_strerror(-errno));
        teardown(&r);
        return 1;
    }
    while (!tcp_cli_done(r.cli)) {
        tcp_cli_step(r.cli, now);
        poll_stack(r.cs, r.ss != NULL);
        if (r.ss)
            poll_stack(r.ss, true);
        now = tool_now_s();
        if (interrupted) {
            tcp_cli_finish(r.cli, now, "interrupted");
            break;
        }
        if (tty && now >= next_progress) {
            progress(o, r.cli, now - t0, false);
            next_progress = now + 0.2;
        }
    }
    double secs = now - t0;
    if (tty)
        progress(o, r.cli, secs, true);
    /* Let the last ACKs and FINs cross (mem), so that the server's
     * counters are final. */
    for (double until = tool_now_s() + 0.2; r.ss && tool_now_s() < until;) {
        hp_stack_poll(r.cs);
        tcp_app_events(r.cs);
        hp_stack_poll(r.ss);
        tcp_app_events(r.ss);
        struct tcp_srv_stats ss;
        tcp_srv_get_stats(r.srv, &ss);
        if (ss.open == 0)
            break;
    }
    report(o, &r, secs);
    struct tcp_cli_totals t;
    tcp_cli_totals(r.cli, &t);
    rc = t.ok == o->conns ? 0 : 1;
    teardown(&r);
    return rc;
}

int cmd_connect(int argc, char **argv)
{
    struct connect_opts o = {.mode = TCP_ECHO, .conns = 1};
    netopt_init(&o.n);
    bool has_bytes = false;
    static const struct option longopts[] = {
        NETOPT_LONGOPTS,
        {"to", required_argument, NULL, 'T'}, {"bytes", required_argument, NULL, 'b'},
        {"conns", required_argument, NULL, 'n'}, {"mode", required_argument, NULL, 'm'},
        {"duration", required_argument, NULL, 'd'}, {"json", no_argument, NULL, 'j'},
        {"loss", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end;
        int r = netopt_parse("connect", &o.n, c, optarg);
        if (r == 0)
            continue;
        if (r == 2)
            return 2;
        switch (c) {
        case 'T':
            if (hp_sockaddr_parse(optarg, &o.to) < 0 || o.to.port == 0)
                return tool_usage_error("connect", "--to '%s': wants ADDRESS:PORT, [IPv6-ADDRESS]:PORT for "
                                                   "IPv6, with a port from 1 to 65535", optarg);
            o.has_to = true;
            break;
        case 'b':
            if (tool_parse_bytes(optarg, &o.bytes) < 0 || o.bytes == 0)
                return tool_usage_error("connect", "--bytes wants a number of bytes above 0 (suffixes k M G, "
                                                   "Ki Mi Gi), not '%s'", optarg);
            has_bytes = true;
            break;
        case 'n': {
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || *end || !*optarg || optarg[0] == '-' || v < 1 || v > MAX_CONNS)
                return tool_usage_error("connect", "--conns wants a number from 1 to %d, not '%s'", MAX_CONNS,
                                        optarg);
            o.conns = (unsigned)v;
            break;
        }
        case 'm':
            o.mode = tcp_mode_parse(optarg);
            if (o.mode < 0)
                return tool_usage_error("connect", "--mode '%s': not echo, discard or source", optarg);
            break;
        case 'd':
            o.duration = strtod(optarg, &end);
            if (*end || !*optarg || !(o.duration > 0) || o.duration > 86400)
                return tool_usage_error("connect", "--duration wants seconds (0 < S <= 86400), not '%s'", optarg);
            break;
        case 'j':
            o.json = true;
            break;
        case 'L':
            o.loss = strtod(optarg, &end);
            if (*end || !*optarg || !(o.loss >= 0) || o.loss > 0.5)
                return tool_usage_error("connect", "--loss wants a probability from 0 to 0.5, not '%s'", optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return tool_usage_error("connect", "unknown option (hotpath connect --help lists them)");
        }
    }
    if (optind < argc)
        return tool_usage_error("connect", "unexpected argument '%s'", argv[optind]);
    if (netopt_check("connect", &o.n))
        return 2;
    bool mem = strcmp(o.n.link, "mem") == 0;
    if (!o.has_to && !mem)
        return tool_usage_error("connect", "--to ADDRESS:PORT is required (the server)");
    if (!o.has_to)
        hp_sockaddr_parse("198.18.0.2:7", &o.to);
    if (!has_bytes && !(o.duration > 0))
        return tool_usage_error("connect", "give --bytes N (per connection) or --duration S");
    if (!mem && o.loss > 0)
        return tool_usage_error("connect", "--loss is for --link mem");
    if (!mem && o.n.nip == 0)
        return tool_usage_error("connect", "give at least one address (--ip or --ip6)");
    if (mem) {
        /* The server stack takes --to's address, on our prefix of that family. */
        struct cidr ips[NETOPT_MAX_ADDRS];
        int nip = o.n.nip;
        memcpy(ips, o.n.ip, sizeof ips);
        if (nip == 0) {
            netopt_parse_cidr("connect", "--ip", "198.18.0.1/24", 4, &ips[nip++]);
            netopt_parse_cidr("connect", "--ip6", "2001:2::1/64", 6, &ips[nip++]);
        }
        bool on = false;
        for (int i = 0; i < nip; i++) {
            if (ips[i].family != o.to.family)
                continue;
            if (memcmp(ips[i].addr, o.to.addr, o.to.family == 4 ? 4 : 16) == 0)
                return tool_usage_error("connect", "--to: with --link mem the server needs an address of its "
                                                   "own, not one of --ip / --ip6");
            if (netopt_same_prefix(o.to.family, ips[i].addr, o.to.addr, ips[i].plen))
                on = true;
        }
        if (!on)
            return tool_usage_error("connect", "--to: with --link mem the server's address must be on the prefix "
                                               "of one of ours (--ip%s)", o.to.family == 6 ? "6" : "");
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return connect_run(&o);
}
