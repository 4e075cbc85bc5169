/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath connect`: TCP connections to an echo / discard / source server that send a pattern and verify every byte, with SHA-256 digests, run by the event loop. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "apploop.h"
#include "cmd.h"
#include "netopts.h"
#include "tcp_app.h"
#include "tool.h"

#define MAX_CONNS 16384 /* one client address's ephemeral ports (RFC 6056: 49152-65535) */
/* --link mem: the pair's pool. Socket buffers are sized so that every
 * connection's four queues fit in it. */
#define MEM_POOL_BUFS 65536
/* --link mem: ring entries per direction, enough for one turn of a
 * thousand connections' windows (a frame the ring cannot take is dropped,
 * as a switch would). */
#define MEM_RING 16384
#define STEP_NS  50000000ull /* the client's deadlines and stalls are looked at this often */
#define LINGER_S 0.3         /* mem: for the last ACKs and FINs to cross after the end */

struct connect_opts {
    struct net_opts n;
    struct hp_sockaddr to;
    bool has_to;
    int mode;
    uint64_t bytes; /* per connection; 0: timed */
    unsigned conns;
    double duration; /* timed mode's length, or the time limit with --bytes; 0: none */
    double loss;     /* mem: drop rate of the fault decorator on our end, both ways */
    bool json;
    uint32_t spin_us;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath connect --link KIND [--iface IF] --ip ADDR/LEN --to ADDR:PORT\n"
            "                       --bytes N [--conns C] [--mode echo|discard|source]\n"
            "                       [--duration S] [--json]\n\n"
            "Open C TCP connections to a server and check every byte: echo (send N bytes of a\n"
            "pseudo-random pattern per connection, verify that they all come back, in order),\n"
            "discard (send N bytes, then the server's orderly close) or source (read N bytes of\n"
            "the pattern 'hotpath serve --tcp-source' sends). Exit status 0 only when every\n"
            "connection verified. Runs on the event loop (busy-polls briefly, then sleeps).\n\n"
            "  --link KIND       afxdp (copy mode), afpacket, tap, memif (shared memory with\n"
            "                    another process), or mem: an echo (discard, source) server\n"
            "                    stack of our own, on its own thread, on the other end of an\n"
            "                    in-process pair\n" NETOPT_HELP
            "  --memif-wait S       memif: give up when no peer is up after S seconds (default\n"
            "                       10)\n"
            "                    (mem: default 198.18.0.1/24 and 2001:2::1/64)\n"
            "  --to ADDR:PORT    the server, [v6]:PORT for IPv6 (mem: default 198.18.0.2:7)\n"
            "  --bytes N         bytes per connection: to send (echo, discard) or to read\n"
            "                    (source); suffixes k M G (x1000) or Ki Mi Gi (x1024)\n"
            "  --conns C         connections, all at once (default 1, at most %d)\n"
            "  --mode M          what the server does: echo (default), discard, source\n"
            "  --duration S      without --bytes: send (read) for S seconds; with it: fail the\n"
            "                    connections not done after S seconds\n"
            "  --loss P          mem: drop each frame with probability P (0..0.5) on the way in\n"
            "                    and out of our end (seeded fault injection)\n" APPLOOP_SPIN_HELP
            "  --json            a JSON summary on stdout instead of a table\n",
            MAX_CONNS);
}

struct run {
    const struct connect_opts *o;
    struct hp_link *link, *peer;
    struct hp_pool *pool;
    struct hp_stack *cs, *ss; /* client, and (mem) server stacks */
    struct hp_loop *cl, *sl;  /* their loops */
    struct hp_loop_timer *step;
    struct tcp_srv *srv;
    struct tcp_cli *cli;
    uint32_t sockbuf;
    pthread_t th;
    bool th_started, tty;
    _Atomic int srv_done; /* the server thread has left */
    double t0, now, next_progress;
};

/* ---- JSON ------------------------------------------------------------------------ */

static json_t *sha_json(const char *hex)
{
    return hex[0] ? json_string(hex) : json_null();
}

/* TCP counters of interest: "TCP_RETRANS_SEGS" as "retrans_segs". */
static json_t *tcp_json(const struct hp_stack *s)
{
    static const enum hp_stack_ctr ctrs[] = {
        HP_CTR_TCP_ACTIVE_OPENS,
        HP_CTR_TCP_ATTEMPT_FAILS,
        HP_CTR_TCP_ESTAB_RESETS,
        HP_CTR_TCP_OUT_SEGS,
        HP_CTR_TCP_IN_SEGS,
        HP_CTR_TCP_RETRANS_SEGS,
        HP_CTR_TCP_FAST_RETRANS,
        HP_CTR_TCP_TIMEOUTS,
        HP_CTR_TCP_SYN_RETRANS,
        HP_CTR_TCP_DUP_ACKS,
        HP_CTR_TCP_OFO_QUEUED,
        HP_CTR_TCP_OFO_DROPS,
        HP_CTR_TCP_RCVQ_DROPS,
        HP_CTR_TCP_NO_BUFFERS,
        HP_CTR_TCP_IN_RSTS,
        HP_CTR_TCP_OUT_RSTS,
        HP_CTR_TCP_ZERO_WINDOW_PROBES,
        HP_CTR_TCP_IN_OUT_OF_WINDOW,
        HP_CTR_TCP_PAWS_DROPS,
    };
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof ctrs / sizeof ctrs[0]; i++) {
        char key[48];
        const char *name = hp_stack_counter_name(ctrs[i]) + 4;
        size_t k = 0;
        for (; name[k] && k + 1 < sizeof key; k++)
            key[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] - 'A' + 'a' : name[k]);
        key[k] = 0;
        json_object_set_new(o, key, json_integer((json_int_t)hp_stack_counter(s, ctrs[i])));
    }
    return o;
}

static json_t *server_json(const struct run *r)
{
    struct tcp_srv_stats ss;
    tcp_srv_get_stats(r->srv, &ss);
    json_t *o = json_object();
    json_object_set_new(o, "accepted", json_integer((json_int_t)ss.accepted));
    json_object_set_new(o, "closed", json_integer((json_int_t)ss.closed));
    json_object_set_new(o, "failed", json_integer((json_int_t)ss.failed));
    json_object_set_new(o, "bytes_in", json_integer((json_int_t)ss.bytes_in));
    json_object_set_new(o, "bytes_out", json_integer((json_int_t)ss.bytes_out));
    json_object_set_new(o, "tcp", tcp_json(r->ss));
    return o;
}

static json_t *conns_json(const struct run *r)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < r->o->conns; i++) {
        const struct tcp_cli_conn *k = tcp_cli_conn(r->cli, i);
        json_t *c = json_object();
        json_object_set_new(c, "i", json_integer(i));
        json_object_set_new(c, "local_port", json_integer(k->local_port));
        json_object_set_new(c, "sent", json_integer((json_int_t)k->sent));
        json_object_set_new(c, "received", json_integer((json_int_t)k->received));
        json_object_set_new(c, "seconds", json_real(k->seconds));
        json_object_set_new(c, "ok", json_boolean(k->ok));
        json_object_set_new(c, "sha256_sent", sha_json(k->sha_sent));
        json_object_set_new(c, "sha256_received", sha_json(k->sha_received));
        if (!k->ok)
            json_object_set_new(c, "error", json_string(k->why));
        json_array_append_new(a, c);
    }
    return a;
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

static void report_json(const struct run *r, double secs, const char *to)
{
    const struct connect_opts *o = r->o;
    struct tcp_cli_totals t;
    tcp_cli_totals(r->cli, &t);
    char hs[65], hr[65];
    combined(r->cli, o->conns, true, hs);
    combined(r->cli, o->conns, false, hr);
    json_t *j = json_object();
    json_object_set_new(j, "mode", json_string(tcp_mode_name(o->mode)));
    json_object_set_new(j, "link", json_string(o->n.link));
    json_object_set_new(j, "to", json_string(to));
    json_object_set_new(j, "loss", json_real(o->loss));
    json_object_set_new(j, "conns", json_integer(o->conns));
    json_object_set_new(j, "bytes_per_conn", json_integer((json_int_t)o->bytes));
    json_object_set_new(j, "duration_s", json_real(o->duration));
    json_object_set_new(j, "bytes_sent", json_integer((json_int_t)t.sent));
    json_object_set_new(j, "bytes_received", json_integer((json_int_t)t.received));
    json_object_set_new(j, "conns_ok", json_integer(t.ok));
    json_object_set_new(j, "conns_failed", json_integer(t.failed));
    json_object_set_new(j, "seconds", json_real(secs));
    json_object_set_new(j, "gbps",
                        json_real(secs > 0 ? (double)(t.sent + t.received) * 8 / secs / 1e9 : 0));
    json_object_set_new(
        j, "sha256",
        json_string(tool_sha256_available()
                        ? "combined: SHA-256 of each connection's hex digest, in order"
                        : "unavailable: built without libcrypto"));
    json_object_set_new(j, "sha256_sent", sha_json(hs));
    json_object_set_new(j, "sha256_received", sha_json(hr));
    json_object_set_new(j, "verified", json_boolean(t.ok == o->conns));
    json_object_set_new(j, "tcp", tcp_json(r->cs));
    if (r->ss)
        json_object_set_new(j, "server", server_json(r));
    json_object_set_new(j, "loop", apploop_stats_json(r->cl));
    json_object_set_new(j, "connections", conns_json(r));
    apploop_print_json(j);
}

/* ---- the table ---------------------------------------------------------------------- */

static void report_text(const struct run *r, double secs, const char *to)
{
    const struct connect_opts *o = r->o;
    struct tcp_cli_totals t;
    tcp_cli_totals(r->cli, &t);
    char hs[65], hr[65];
    combined(r->cli, o->conns, true, hs);
    combined(r->cli, o->conns, false, hr);
    double gbps = secs > 0 ? (double)(t.sent + t.received) * 8 / secs / 1e9 : 0;
    printf("connect: %s to %s over %s, %u connection%s", tcp_mode_name(o->mode), to, o->n.link,
           o->conns, o->conns == 1 ? "" : "s");
    if (o->bytes)
        printf(" of %llu bytes\n", (unsigned long long)o->bytes);
    else
        printf(" for %g s\n", o->duration);
    printf("  %-12s %llu bytes\n  %-12s %llu bytes\n", "sent", (unsigned long long)t.sent,
           "received", (unsigned long long)t.received);
    printf("  %-12s %u ok, %u failed\n", "connections", t.ok, t.failed);
    printf("  %-12s %.3f s, %.3f Gbit/s (both directions)\n", "time", secs, gbps);
    if (hs[0])
        printf("  %-12s sent %.16s..., received %.16s... (combined over connections)\n", "sha256",
               hs, hr);
    else
        printf("  %-12s unavailable (built without libcrypto)\n", "sha256");
    printf("  %-12s %llu segments (fast %llu, timeouts %llu)\n", "retransmits",
           (unsigned long long)hp_stack_counter(r->cs, HP_CTR_TCP_RETRANS_SEGS),
           (unsigned long long)hp_stack_counter(r->cs, HP_CTR_TCP_FAST_RETRANS),
           (unsigned long long)hp_stack_counter(r->cs, HP_CTR_TCP_TIMEOUTS));
    printf("  %-12s %s\n", "verified", t.ok == o->conns ? "yes" : "NO");
}

static void report(const struct run *r, double secs)
{
    const struct connect_opts *o = r->o;
    char to[64];
    hp_sockaddr_format(&o->to, to, sizeof to);
    if (o->json)
        report_json(r, secs, to);
    else
        report_text(r, secs, to);
    unsigned shown = 0, failed = 0;
    for (unsigned i = 0; i < o->conns; i++) {
        const struct tcp_cli_conn *k = tcp_cli_conn(r->cli, i);
        if (k->ok)
            continue;
        failed++;
        if (shown++ < 10)
            fprintf(stderr, "hotpath connect: connection %u: %s\n", i, k->why);
    }
    if (failed > 10)
        fprintf(stderr, "hotpath connect: ... and %u more failed\n", failed - 10);
}

static void progress(const struct run *r, double el, bool final)
{
    const struct connect_opts *o = r->o;
    struct tcp_cli_totals t;
    tcp_cli_totals(r->cli, &t);
    uint64_t moved = t.sent + t.received;
    double gbps = el > 0 ? (double)moved * 8 / el / 1e9 : 0;
    if (final) {
        fprintf(stderr, "\r\033[K");
        return;
    }
    if (o->bytes) {
        uint64_t per = o->mode == TCP_ECHO ? 2 * o->bytes : o->bytes;
        double total = (double)per * o->conns;
        fprintf(stderr,
                "\r\033[K  connect  %.1f / %.1f MB  %u/%u connections done (%u failed)  %.2f "
                "Gbit/s  %.1f s",
                (double)moved / 1e6, total / 1e6, t.done, o->conns, t.failed, gbps, el);
    } else {
        fprintf(stderr,
                "\r\033[K  connect  %.1f MB  %u/%u connections done (%u failed)  %.2f Gbit/s  %.1f "
                "/ %.1f s",
                (double)moved / 1e6, t.done, o->conns, t.failed, gbps, el, o->duration);
    }
    fflush(stderr);
}

/* ---- setting up --------------------------------------------------------------------- */

/* The link, with the fault decorator for --loss. 0 or 1. */
static int setup_link(const struct connect_opts *o, struct run *r)
{
    struct hp_link_config lc = {0};
    if (strcmp(o->n.link, "mem") == 0) {
        struct hp_pool_config pc = {.name = "connect", .n_bufs = MEM_POOL_BUFS};
        r->pool = hp_pool_create(&pc);
        if (!r->pool) {
            fprintf(stderr, "hotpath connect: cannot create a pool of %d buffers: %s\n",
                    MEM_POOL_BUFS, hp_strerror(-errno));
            return 1;
        }
        lc.pool = r->pool;
        lc.ring_size = MEM_RING;
    }
    if (netopt_open_link("connect", &o->n, &lc, &r->link, &r->peer))
        return 1;
    double wait = memifopt_wait_s(&o->n.memif, 10);
    if (!memifopt_wait_up("connect", r->link, wait, apploop_interrupt_flag())) {
        fprintf(stderr, "hotpath connect: the memif peer did not come in %g s\n", wait);
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
    return 0;
}

/* Our addresses: --ip / --ip6, or with mem and none given, the defaults. */
static int our_addrs(const struct connect_opts *o, struct cidr *ips)
{
    int nip = o->n.nip;
    memcpy(ips, o->n.ip, sizeof o->n.ip);
    if (strcmp(o->n.link, "mem") == 0 && nip == 0) {
        netopt_parse_cidr("connect", "--ip", "198.18.0.1/24", 4, &ips[nip++]);
        netopt_parse_cidr("connect", "--ip6", "2001:2::1/64", 6, &ips[nip++]);
    }
    return nip;
}

static int configure_tcp(const struct net_opts *n, struct hp_stack *s, uint32_t sockbuf,
                         const char *what)
{
    struct hp_tcp_config tc = {.sndbuf = sockbuf, .rcvbuf = sockbuf};
    netopt_tcp(n, &tc); /* --cc */
    int rc = hp_tcp_configure(s, &tc);
    if (rc < 0)
        fprintf(stderr, "hotpath connect: cannot configure %s TCP: %s\n", what, hp_strerror(rc));
    return rc < 0;
}

/* mem: the server stack on the other end, with --to's address on our
 * prefix of its family, and its loop. */
static int setup_server(const struct connect_opts *o, struct run *r, const struct cidr *ips,
                        int nip)
{
    struct cidr srv = {.family = o->to.family};
    memcpy(srv.addr, o->to.addr, 16);
    for (int i = 0; i < nip; i++)
        if (ips[i].family == o->to.family)
            srv.plen = ips[i].plen;
    if (netopt_setup_stack("connect", &o->n, &srv, 1, false, r->peer, "server", HP_STACK_F_NO_DAD,
                           &r->ss))
        return 1;
    if (configure_tcp(&o->n, r->ss, r->sockbuf, "the mem server's"))
        return 1;
    r->srv = tcp_srv_new(r->ss);
    if (!r->srv) {
        fprintf(stderr, "hotpath connect: out of memory\n");
        return 1;
    }
    int rc = tcp_srv_listen(r->srv, o->mode, o->to.port, o->to.family, 0);
    if (rc < 0) {
        fprintf(stderr, "hotpath connect: the mem server cannot listen on port %u: %s\n",
                o->to.port, hp_strerror(rc));
        return 1;
    }
    r->sl = apploop_create("connect", r->ss, o->spin_us);
    return r->sl ? 0 : 1;
}

static int setup(const struct connect_opts *o, struct run *r)
{
    if (setup_link(o, r))
        return 1;
    struct cidr ips[NETOPT_MAX_ADDRS];
    int nip = our_addrs(o, ips);
    bool mem = r->peer != NULL;
    if (netopt_setup_stack("connect", &o->n, ips, nip, true, r->link, "connect",
                           mem ? HP_STACK_F_NO_DAD : 0, &r->cs))
        return 1;
    if (configure_tcp(&o->n, r->cs, r->sockbuf, "the client's"))
        return 1;
    r->cl = apploop_create("connect", r->cs, o->spin_us);
    r->step = r->cl ? hp_loop_timer_create(r->cl, NULL) : NULL;
    if (!r->step)
        return 1;
    return mem ? setup_server(o, r, ips, nip) : 0;
}

static void teardown(struct run *r)
{
    tcp_cli_free(r->cli);
    tcp_srv_free(r->srv);
    hp_loop_destroy(r->cl);
    hp_loop_destroy(r->sl);
    hp_stack_destroy(r->cs);
    hp_stack_destroy(r->ss);
    if (r->link)
        hp_pool_thread_flush(hp_link_pool(r->link));
    hp_link_close(r->link);
    hp_link_close(r->peer);
    if (r->pool && hp_pool_destroy(r->pool) < 0)
        fprintf(stderr, "hotpath connect: buffers still in use at exit\n");
}

/* ---- running ----------------------------------------------------------------------- */

static void server_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    (void)l;
    (void)arg;
    if (ev->kind == HP_LOOP_SOCK)
        tcp_app_event(ev->user, ev->events);
}

/* mem: the server's thread. After the stop, it lingers (at most LINGER_S)
 * until its connections are closed, so that its counters are final. */
static void *server_main(void *arg)
{
    struct run *r = arg;
    hp_loop_run(r->sl, server_event, r);
    struct hp_loop_event ev[64];
    for (double until = tool_now_s() + LINGER_S; tool_now_s() < until;) {
        struct tcp_srv_stats ss;
        tcp_srv_get_stats(r->srv, &ss);
        if (ss.open == 0)
            break;
        int n = hp_loop_wait(r->sl, ev, 64, 10);
        for (int i = 0; i < n; i++)
            server_event(r->sl, &ev[i], r);
    }
    atomic_store(&r->srv_done, 1);
    hp_thread_exit();
    return NULL;
}

static void client_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct run *r = arg;
    if (ev->kind == HP_LOOP_SOCK)
        tcp_app_event(ev->user, ev->events);
    r->now = tool_now_s();
    tcp_cli_step(r->cli, r->now);
    if (apploop_interrupted())
        tcp_cli_finish(r->cli, r->now, "interrupted");
    if (r->tty && r->now >= r->next_progress) {
        progress(r, r->now - r->t0, false);
        r->next_progress = r->now + 0.2;
    }
    if (tcp_cli_done(r->cli))
        hp_loop_stop(l);
}

/* mem: stop the server's thread, answering its last segments meanwhile. */
static void stop_server(struct run *r)
{
    if (!r->th_started)
        return;
    hp_loop_stop(r->sl);
    struct hp_loop_event ev[64];
    for (double until = tool_now_s() + LINGER_S + 0.1;
         !atomic_load(&r->srv_done) && tool_now_s() < until;) {
        int n = hp_loop_wait(r->cl, ev, 64, 10);
        for (int i = 0; i < n; i++)
            if (ev[i].kind == HP_LOOP_SOCK)
                tcp_app_event(ev[i].user, ev[i].events);
    }
    pthread_join(r->th, NULL);
}

static int connect_loop(struct run *r)
{
    const struct connect_opts *o = r->o;
    r->tty = isatty(STDERR_FILENO) && getenv("CI") == NULL;
    r->t0 = r->now = tool_now_s();
    r->next_progress = r->t0 + 0.2;
    /* Timed: stop sending (reading) at the deadline; with --bytes: a time limit. */
    struct tcp_cli_opts co = {.to = o->to,
                              .mode = o->mode,
                              .bytes = o->bytes,
                              .conns = o->conns,
                              .hash = true,
                              .deadline = o->duration > 0 ? r->t0 + o->duration : 0};
    r->cli = tcp_cli_new(r->cs, &co);
    if (!r->cli) {
        fprintf(stderr, "hotpath connect: %s\n", hp_strerror(-errno));
        return 1;
    }
    apploop_signals(r->cl);
    if (r->sl) {
        apploop_signals(r->sl);
        if (pthread_create(&r->th, NULL, server_main, r) != 0) {
            fprintf(stderr, "hotpath connect: cannot start the server thread\n");
            return 1;
        }
        r->th_started = true;
    }
    hp_loop_timer_start(r->step, 0, STEP_NS);
    int rc = hp_loop_run(r->cl, client_event, r);
    double secs = tool_now_s() - r->t0;
    if (!tcp_cli_done(r->cli))
        tcp_cli_finish(r->cli, tool_now_s(), "interrupted");
    if (r->tty)
        progress(r, secs, true);
    stop_server(r);
    apploop_signals_forget();
    if (rc < 0)
        fprintf(stderr, "hotpath connect: the event loop failed: %s\n", hp_strerror(rc));
    report(r, secs);
    struct tcp_cli_totals t;
    tcp_cli_totals(r->cli, &t);
    return t.ok == o->conns && rc == 0 ? 0 : 1;
}

static int connect_run(const struct connect_opts *o)
{
    struct run r;
    memset(&r, 0, sizeof r);
    r.o = o;
    atomic_init(&r.srv_done, 0);
    int rc = setup(o, &r);
    if (!rc)
        rc = connect_loop(&r);
    teardown(&r);
    return rc;
}

/* ---- options ------------------------------------------------------------------------ */

/* One option of connect's own. 0, 2 (usage error), or 1 for --help. */
static int parse_one(struct connect_opts *o, int c, const char *arg, bool *has_bytes)
{
    char *end;
    switch (c) {
    case 'T':
        if (hp_sockaddr_parse(arg, &o->to) < 0 || o->to.port == 0)
            return tool_usage_error("connect",
                                    "--to '%s': wants ADDRESS:PORT, [IPv6-ADDRESS]:PORT for "
                                    "IPv6, with a port from 1 to 65535",
                                    arg);
        o->has_to = true;
        return 0;
    case 'b':
        if (tool_parse_bytes(arg, &o->bytes) < 0 || o->bytes == 0)
            return tool_usage_error("connect",
                                    "--bytes wants a number of bytes above 0 (suffixes k M G, "
                                    "Ki Mi Gi), not '%s'",
                                    arg);
        *has_bytes = true;
        return 0;
    case 'n': {
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (errno || *end || !*arg || arg[0] == '-' || v < 1 || v > MAX_CONNS)
            return tool_usage_error("connect", "--conns wants a number from 1 to %d, not '%s'",
                                    MAX_CONNS, arg);
        o->conns = (unsigned)v;
        return 0;
    }
    case 'm':
        o->mode = tcp_mode_parse(arg);
        return o->mode < 0
                   ? tool_usage_error("connect", "--mode '%s': not echo, discard or source", arg)
                   : 0;
    case 'd':
        o->duration = strtod(arg, &end);
        if (*end || !*arg || !(o->duration > 0) || o->duration > 86400)
            return tool_usage_error("connect",
                                    "--duration wants seconds (0 < S <= 86400), not '%s'", arg);
        return 0;
    case 'j':
        o->json = true;
        return 0;
    case 'L':
        o->loss = strtod(arg, &end);
        if (*end || !*arg || !(o->loss >= 0) || o->loss > 0.5)
            return tool_usage_error("connect", "--loss wants a probability from 0 to 0.5, not '%s'",
                                    arg);
        return 0;
    case 'w':
        return apploop_parse_spin("connect", arg, &o->spin_us);
    case 'h':
        usage(stdout);
        return 1;
    default:
        return tool_usage_error("connect", "unknown option (hotpath connect --help lists them)");
    }
}

/* mem: the server stack takes --to's address, on our prefix of that family. 0 or 2. */
static int check_mem_to(const struct connect_opts *o)
{
    struct cidr ips[NETOPT_MAX_ADDRS];
    int nip = our_addrs(o, ips);
    bool on = false;
    for (int i = 0; i < nip; i++) {
        if (ips[i].family != o->to.family)
            continue;
        if (memcmp(ips[i].addr, o->to.addr, o->to.family == 4 ? 4 : 16) == 0)
            return tool_usage_error("connect",
                                    "--to: with --link mem the server needs an address of its "
                                    "own, not one of --ip / --ip6");
        if (netopt_same_prefix(o->to.family, ips[i].addr, o->to.addr, ips[i].plen))
            on = true;
    }
    if (!on)
        return tool_usage_error("connect",
                                "--to: with --link mem the server's address must be on the prefix "
                                "of one of ours (--ip%s)",
                                o->to.family == 6 ? "6" : "");
    return 0;
}

/* The checks and defaults after parsing. 0 or 2. */
static int check_opts(struct connect_opts *o, bool has_bytes)
{
    if (netopt_check("connect", &o->n))
        return 2;
    bool mem = strcmp(o->n.link, "mem") == 0;
    if (!o->has_to && !mem)
        return tool_usage_error("connect", "--to ADDRESS:PORT is required (the server)");
    if (!o->has_to)
        hp_sockaddr_parse("198.18.0.2:7", &o->to);
    if (!has_bytes && !(o->duration > 0))
        return tool_usage_error("connect", "give --bytes N (per connection) or --duration S");
    if (!mem && o->loss > 0)
        return tool_usage_error("connect", "--loss is for --link mem");
    if (!mem && o->n.nip == 0)
        return tool_usage_error("connect", "give at least one address (--ip or --ip6)");
    return mem ? check_mem_to(o) : 0;
}

int cmd_connect(int argc, char **argv)
{
    struct connect_opts o = {.mode = TCP_ECHO, .conns = 1, .spin_us = HP_LOOP_SPIN_US_DEFAULT};
    netopt_init(&o.n);
    bool has_bytes = false;
    static const struct option longopts[] = {
        NETOPT_LONGOPTS,
        MEMIFOPT_WAIT_LONGOPT,
        {"to", required_argument, NULL, 'T'},
        {"bytes", required_argument, NULL, 'b'},
        {"conns", required_argument, NULL, 'n'},
        {"mode", required_argument, NULL, 'm'},
        {"duration", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"loss", required_argument, NULL, 'L'},
        {"spin-us", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        int r = netopt_parse("connect", &o.n, c, optarg);
        if (r == 1)
            r = parse_one(&o, c, optarg, &has_bytes);
        if (r == 1)
            return 0; /* --help */
        if (r == 2)
            return 2;
    }
    if (optind < argc)
        return tool_usage_error("connect", "unexpected argument '%s'", argv[optind]);
    if (check_opts(&o, has_bytes))
        return 2;
    return connect_run(&o);
}
