/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath gen`: an xdpsock-style traffic generator (txonly, rxdrop, l2fwd) over any link. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/buf.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "cmd.h"
#include "gen.h"
#include "harness.h"
#include "tool.h"

#define MAX_BATCH 256

/* Set by SIGINT/SIGTERM while `hotpath gen` runs: end the run cleanly. */
static volatile sig_atomic_t interrupted;

void gen_defaults(struct gen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = "txonly";
    o->link = "mem";
    o->size = 64;
    o->batch = 32;
    o->duration = 10;
    o->cpu = -1;
    o->cpu2 = -1;
    memifopt_init(&o->memif);
}

/* What the second thread does: drain the mem peer (the frames the data
 * thread sent: freeing them here is the cross-thread free), collect
 * completions, or feed the mem peer for rxdrop and l2fwd. */
struct side {
    struct hp_link *link; /* the data link */
    struct hp_link *peer; /* mem: the other end; NULL otherwise */
    const struct gen_opts *o;
    const uint8_t *frame;
    _Atomic int stop;
    _Atomic uint64_t done; /* frames handled */
    double cpu_s;
    int err;
};

/* Free what the peer received. */
static unsigned drain_peer(struct hp_link *peer, struct hp_buf **b, unsigned max)
{
    int k = hp_link_rx_burst(peer, b, max);
    if (k > 0)
        hp_buf_free_bulk(b, (unsigned)k);
    return k > 0 ? (unsigned)k : 0;
}

static unsigned fill(struct hp_pool *pool, struct hp_buf **b, unsigned n, const uint8_t *frame,
                     unsigned size)
{
    if (hp_buf_alloc_bulk(pool, b, n) < 0)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        memcpy(hp_buf_data(b[i]), frame, size);
        b[i]->data_len = size;
        b[i]->pkt_len = size;
    }
    return n;
}

static void *second_thread(void *arg)
{
    struct side *s = arg;
    const struct gen_opts *o = s->o;
    if (o->cpu2 >= 0)
        tool_pin(o->cpu2);
    struct hp_buf *b[MAX_BATCH];
    bool tx = strcmp(o->mode, "txonly") == 0;
    double c0 = tool_thread_cpu_s();
    uint64_t n = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        unsigned k = 0;
        if (tx && s->peer) {
            k = drain_peer(s->peer, b, o->batch);
        } else if (tx) {
            int r = hp_link_completions(s->link, b, o->batch);
            if (r > 0) {
                hp_buf_free_bulk(b, (unsigned)r);
                k = (unsigned)r;
            }
        } else {
            /* Feed the mem peer; l2fwd: also take back what comes home. */
            if (strcmp(o->mode, "l2fwd") == 0)
                drain_peer(s->peer, b, o->batch);
            unsigned m = fill(hp_link_pool(s->peer), b, o->batch, s->frame, o->size);
            if (m) {
                int t = hp_link_tx_burst(s->peer, b, m);
                if (t < 0)
                    t = 0;
                if ((unsigned)t < m)
                    hp_buf_free_bulk(b + t, m - (unsigned)t);
                k = (unsigned)t;
            }
        }
        n += k;
        atomic_store_explicit(&s->done, n, memory_order_relaxed);
    }
    /* After the data thread stopped: take what is still in flight. */
    if (tx) {
        for (int idle = 0; idle < 1000; idle++) {
            unsigned k;
            if (s->peer) {
                k = drain_peer(s->peer, b, MAX_BATCH);
            } else {
                int r = hp_link_completions(s->link, b, MAX_BATCH);
                k = r > 0 ? (unsigned)r : 0;
                if (k)
                    hp_buf_free_bulk(b, k);
            }
            if (k)
                idle = 0;
        }
    }
    s->cpu_s = tool_thread_cpu_s() - c0;
    hp_thread_exit();
    return NULL;
}

static int open_link(const struct gen_opts *o, struct hp_link **link, struct hp_link **peer)
{
    *link = *peer = NULL;
    bool txc = o->completion_thread && strcmp(o->mode, "txonly") == 0;
    if (strcmp(o->link, "mem") == 0) {
        struct hp_link *ends[2];
        /* Deep enough rings that a second thread rarely waits. */
        struct hp_link_config cfg = {.ring_size = 1024};
        if (hp_link_mem_pair(&cfg, ends) < 0) {
            fprintf(stderr, "hotpath gen: %s\n", hp_link_error());
            return 1;
        }
        *link = ends[0];
        *peer = ends[1];
    } else {
        bool memif = strcmp(o->link, "memif") == 0;
        if (!o->iface && !memif)
            return tool_usage_error("gen", "--link %s needs --iface", o->link);
        struct hp_link_config cfg = {.iface = o->iface,
                                     .queue = o->queue,
                                     .flags = o->link_flags | (txc ? HP_LINK_F_TX_COMPLETIONS : 0)};
        if (memif)
            memifopt_apply(&o->memif, &cfg);
        *link = hp_link_open(o->link, &cfg);
        if (!*link) {
            fprintf(stderr, "hotpath gen: %s\n", hp_link_error());
            return 1;
        }
    }
    if (o->pcap) {
        struct hp_link *p = hp_link_pcap(*link, o->pcap);
        if (!p) {
            fprintf(stderr, "hotpath gen: %s\n", hp_link_error());
            hp_link_close(*link);
            hp_link_close(*peer);
            return 1;
        }
        *link = p;
    }
    if (o->alien_policy > 0)
        hp_pool_set_alien_policy(hp_link_pool(*link), o->alien_policy);
    return 0;
}

static int gen_check(const struct gen_opts *o)
{
    bool txonly = strcmp(o->mode, "txonly") == 0;
    if (!txonly && strcmp(o->mode, "rxdrop") != 0 && strcmp(o->mode, "l2fwd") != 0)
        return tool_usage_error("gen", "mode '%s': not txonly, rxdrop or l2fwd", o->mode);
    if (o->batch < 1 || o->batch > MAX_BATCH)
        return tool_usage_error("gen", "--batch %u: wants 1 to %d", o->batch, MAX_BATCH);
    if (o->size < 60 || o->size > 9014)
        return tool_usage_error("gen", "--size %u: wants 60 to 9014 bytes (a frame without FCS)",
                                o->size);
    if (!(o->duration > 0) || o->duration > 86400)
        return tool_usage_error("gen", "--duration: wants 0 < seconds <= 86400");
    return 0;
}

/* A run in progress: the links, the frame, the second thread, the counts. */
struct gen_state {
    const struct gen_opts *o;
    struct hp_link *link, *peer;
    struct hp_pool *pool;
    bool txonly, rxdrop, two;
    struct side s;
    pthread_t th;
    uint64_t packets, bytes;
    struct hp_buf *b[MAX_BATCH];
    uint8_t frame[9014];
};

/* txonly: a burst of frames out; false after a failure (printed). */
static bool tx_step(struct gen_state *g)
{
    const struct gen_opts *o = g->o;
    if (!hp_link_up(g->link)) {
        /* A memif peer gone: wait for the next (an empty receive drives the
         * link's control channel) rather than count frames the link would
         * drop. */
        (void)hp_link_rx_burst(g->link, g->b, 0);
        return true;
    }
    unsigned n = fill(g->pool, g->b, o->batch, g->frame, o->size);
    if (n) {
        int t = hp_link_tx_burst(g->link, g->b, n);
        if (t < 0) {
            fprintf(stderr, "hotpath gen: transmit on %s failed: %s\n", hp_link_name(g->link),
                    hp_strerror(t));
            hp_buf_free_bulk(g->b, n);
            return false;
        }
        if ((unsigned)t < n)
            hp_buf_free_bulk(g->b + t, n - (unsigned)t);
        g->packets += (unsigned)t;
        g->bytes += (uint64_t)(unsigned)t * o->size;
    }
    /* One core: the data thread also takes the peer's side. */
    if (g->peer && !g->two)
        drain_peer(g->peer, g->b, MAX_BATCH);
    return true;
}

/* rxdrop and l2fwd: a burst in, freed or sent back; false after a failure. */
static bool rx_step(struct gen_state *g)
{
    struct hp_buf **b = g->b;
    int k = hp_link_rx_burst(g->link, b, g->o->batch);
    if (k < 0) {
        fprintf(stderr, "hotpath gen: receive on %s failed: %s\n", hp_link_name(g->link),
                hp_strerror(k));
        return false;
    }
    uint64_t by = 0;
    for (int i = 0; i < k; i++)
        by += b[i]->pkt_len;
    if (k == 0 || g->rxdrop) {
        hp_buf_free_bulk(b, (unsigned)k);
        g->packets += (unsigned)k;
        g->bytes += by;
        return true;
    }
    /* l2fwd: swap the MAC addresses and send the frame back. */
    for (int i = 0; i < k; i++) {
        uint8_t *f = hp_buf_data(b[i]), t6[6];
        if (b[i]->data_len < 12)
            continue;
        memcpy(t6, f, 6);
        memcpy(f, f + 6, 6);
        memcpy(f + 6, t6, 6);
    }
    int t = hp_link_tx_burst(g->link, b, (unsigned)k);
    if (t < 0)
        t = 0;
    if (t < k)
        hp_buf_free_bulk(b + t, (unsigned)(k - t));
    g->packets += (unsigned)t;
    g->bytes += by;
    return true;
}

/* A memif link's life, on stderr: how often it came up and what it refused. */
static void memif_report(const struct hp_link *link)
{
    struct hp_memif_stats ms;
    if (hp_link_memif_stats(link, &ms) != 0)
        return;
    fprintf(stderr,
            "hotpath gen: memif %s: up %llu times, down %llu; dropped while down %llu, left unread "
            "%llu; refused %llu connections, %llu descriptors, %llu messages, %llu ring "
            "indices\n",
            hp_link_name(link), (unsigned long long)ms.connects, (unsigned long long)ms.disconnects,
            (unsigned long long)ms.tx_down, (unsigned long long)ms.tx_unread,
            (unsigned long long)ms.refused, (unsigned long long)ms.bad_descs,
            (unsigned long long)ms.bad_msgs, (unsigned long long)ms.ring_errors);
}

/* The measured loop: a short warm-up (caches, rings, the kernel's first
 * allocations) is not counted; a rate line every second when asked. */
static void gen_loop(struct gen_state *g, struct hb_clock *c)
{
    const struct gen_opts *o = g->o;
    uint64_t last_packets = 0;
    double next_line = 0;
    hb_clock_start(c, o->duration > 1 ? 0.2 : o->duration * 0.1, o->duration, 16);
    for (;;) {
        int tick = hb_clock_tick(c);
        if (tick == HB_TICK_CLOSE)
            break;
        if (tick == HB_TICK_OPEN) {
            g->packets = g->bytes = last_packets = 0;
            next_line = c->now + 1;
        }
        if (interrupted && c->measuring) {
            hb_clock_close(c);
            break;
        }
        if (c->measuring && o->rate_out && c->now >= next_line) {
            double pps = (double)(g->packets - last_packets) / (c->now - next_line + 1);
            fprintf(o->rate_out, "gen %s %s: %6.1f s  %10.3f Mpps  %8.3f Gbit/s\n", o->mode,
                    hp_link_name(g->link), c->now - c->t0, pps / 1e6, pps * o->size * 8 / 1e9);
            fflush(o->rate_out);
            last_packets = g->packets;
            next_line = c->now + 1;
        }
        if (!(g->txonly ? tx_step(g) : rx_step(g))) {
            hb_clock_close(c);
            break;
        }
    }
}

/* Links open, the frame built, the second thread started. 0 or an exit status. */
static int gen_start(struct gen_state *g)
{
    const struct gen_opts *o = g->o;
    int rc = open_link(o, &g->link, &g->peer);
    if (rc)
        return rc;
    double wait = memifopt_wait_s(&o->memif, 60);
    if (!memifopt_wait_up("gen", g->link, wait, &interrupted)) {
        fprintf(stderr, "hotpath gen: no memif peer came in %g s\n", wait);
        return 1;
    }
    if (o->size > hp_link_mtu(g->link) + 14) {
        fprintf(stderr, "hotpath gen: --size %u is larger than %s's MTU %u + 14\n", o->size,
                hp_link_name(g->link), hp_link_mtu(g->link));
        return 2;
    }
    uint8_t src[6], dst[6] = {0x02, 0, 0, 0, 0, 0x02};
    hp_link_mac(g->link, src);
    if (g->peer)
        hp_link_mac(g->peer, dst);
    tool_udp_frame(g->frame, o->size, dst, src);
    g->pool = hp_link_pool(g->link);
    if (o->cpu >= 0)
        tool_pin(o->cpu);
    /* A second thread: completions (--completion-thread), or the mem peer's
     * side for rxdrop / l2fwd, which needs someone sending. */
    g->two = (g->txonly && o->completion_thread) || (!g->txonly && g->peer);
    g->s = (struct side){.link = g->link, .peer = g->peer, .o = o, .frame = g->frame};
    atomic_init(&g->s.stop, 0);
    atomic_init(&g->s.done, 0);
    if (g->two && pthread_create(&g->th, NULL, second_thread, &g->s) != 0) {
        fprintf(stderr, "hotpath gen: cannot start the second thread\n");
        g->two = false;
        return 1;
    }
    return 0;
}

int gen_run(const struct gen_opts *o, struct gen_result *r)
{
    memset(r, 0, sizeof *r);
    int rc = gen_check(o);
    if (rc)
        return rc;
    struct gen_state *g = calloc(1, sizeof *g);
    if (!g) {
        fprintf(stderr, "hotpath gen: out of memory\n");
        return 1;
    }
    g->o = o;
    g->txonly = strcmp(o->mode, "txonly") == 0;
    g->rxdrop = strcmp(o->mode, "rxdrop") == 0;
    struct hb_clock c;
    rc = gen_start(g);
    if (rc == 0) {
        gen_loop(g, &c);
        r->cpu_s = c.cpu_s;
        r->seconds = c.secs;
    }
    if (g->two) {
        atomic_store(&g->s.stop, 1);
        pthread_join(g->th, NULL);
        r->cpu_s += g->s.cpu_s;
    }
    if (g->peer && g->txonly)
        while (drain_peer(g->peer, g->b, MAX_BATCH))
            ;
    r->packets = g->packets;
    r->bytes = g->bytes;
    r->pps = r->seconds > 0 ? (double)r->packets / r->seconds : 0;
    r->gbps = r->seconds > 0 ? (double)r->bytes * 8 / r->seconds / 1e9 : 0;
    if (g->link) {
        struct hp_link_stats st;
        hp_link_stats(g->link, &st);
        r->dropped = st.tx_dropped + st.rx_dropped;
        memif_report(g->link);
        hp_pool_thread_flush(hp_link_pool(g->link));
    }
    int c1 = hp_link_close(g->link), c2 = hp_link_close(g->peer);
    free(g);
    if (rc == 0 && (c1 < 0 || c2 < 0)) {
        fprintf(stderr, "hotpath gen: closing the link: %s (buffers still out)\n",
                hp_strerror(c1 < 0 ? c1 : c2));
        return 1;
    }
    return rc;
}

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath gen [txonly|rxdrop|l2fwd] [OPTIONS]\n\n"
            "Send, receive or forward frames as fast as the link allows, like xdpsock.\n\n"
            "  --link KIND           mem (default; an in-process pair), tap, afpacket, afxdp,\n"
            "                        memif (shared memory with another process)\n"
            "  --iface IF            the interface (all links but mem and memif)\n" MEMIFOPT_HELP
            "  --memif-wait S       memif: give up when no peer is up after S seconds (default\n"
            "                       60)\n"
            "  --queue N             afxdp: the queue to bind (default 0)\n"
            "  --size BYTES          frame size without FCS (default 64)\n"
            "  --batch N             frames per burst (default 32, at most %d)\n"
            "  --duration SECONDS    how long to run (default 10)\n"
            "  --completion-thread   txonly: free transmitted buffers on a second thread\n"
            "  --alien-policy P      local, defer or adaptive: where those frees go\n"
            "  --copy | --zero-copy  afxdp: force the copy or the zero-copy mode; memif client:\n"
            "                        zero-copy (the pool is shared with the server)\n"
            "  --skb                 afxdp: attach XDP in generic (SKB) mode\n"
            "  --pcap FILE           also write every frame to FILE (pcap)\n"
            "  --cpu N, --cpu2 N     pin the data thread / the second thread\n"
            "  --json                a JSON summary on stdout instead of the rate lines\n",
            MAX_BATCH);
}

static int parse_uint(const char *what, const char *arg, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end || !*arg || arg[0] == '-' || v < lo || v > hi)
        return tool_usage_error("gen", "%s wants a number from %u to %u, not '%s'", what, lo, hi,
                                arg);
    *out = (unsigned)v;
    return 0;
}

/* One option of cmd_gen's table into o (and *json). 0, or 2 after a usage error. */
static int gen_option(int c, const char *arg, struct gen_opts *o, bool *json)
{
    char *end;
    switch (c) {
    case 'l':
        o->link = arg;
        return 0;
    case 'i':
        o->iface = arg;
        return 0;
    case 'q':
        return parse_uint("--queue", arg, 0, 1023, &o->queue);
    case 's':
        return parse_uint("--size", arg, 60, 9014, &o->size);
    case 'b':
        return parse_uint("--batch", arg, 1, MAX_BATCH, &o->batch);
    case 'd':
        o->duration = strtod(arg, &end);
        if (*end || !(o->duration > 0) || o->duration > 86400)
            return tool_usage_error("gen", "--duration wants seconds (0 < s <= 86400), not '%s'",
                                    arg);
        return 0;
    case 'm':
        o->mode = arg;
        return 0;
    case 'C':
        o->completion_thread = true;
        return 0;
    case 'c':
        o->link_flags |= HP_LINK_F_COPY;
        return 0;
    case 'z':
        o->link_flags |= HP_LINK_F_ZEROCOPY;
        return 0;
    case 'S':
        o->link_flags |= HP_LINK_F_XDP_SKB;
        return 0;
    case 'p':
        o->pcap = arg;
        return 0;
    case 'u':
        return tool_parse_cpu("gen", arg, &o->cpu) ? 2 : 0;
    case 'U':
        return tool_parse_cpu("gen", arg, &o->cpu2) ? 2 : 0;
    case 'j':
        *json = true;
        return 0;
    default: {
        int r = memifopt_parse("gen", &o->memif, c, arg);
        if (r == 0)
            return 0;
        return r == 2 ? 2
                      : tool_usage_error("gen", "unknown option (hotpath gen --help lists them)");
    }
    }
}

/* The checks once every option is in. 0, or 2 after a usage error. */
static int gen_check_opts(struct gen_opts *o)
{
    if ((o->link_flags & HP_LINK_F_COPY) && (o->link_flags & HP_LINK_F_ZEROCOPY))
        return tool_usage_error("gen", "--copy and --zero-copy exclude each other");
    if (strcmp(o->link, "mem") && strcmp(o->link, "tap") && strcmp(o->link, "afpacket") &&
        strcmp(o->link, "afxdp") && strcmp(o->link, "memif"))
        return tool_usage_error("gen", "--link '%s': not mem, tap, afpacket, afxdp or memif",
                                o->link);
    if ((strcmp(o->link, "mem") == 0 || strcmp(o->link, "memif") == 0) && o->iface)
        return tool_usage_error("gen", "--iface is for real links, not %s", o->link);
    return memifopt_check("gen", o->link, &o->memif) ? 2 : 0;
}

static void print_result(const struct gen_opts *o, const struct gen_result *r, bool json)
{
    if (!json) {
        printf("gen %s %s: %llu packets in %.3f s: %.3f Mpps, %.3f Gbit/s, %.1f ns CPU/packet%s\n",
               o->mode, o->link, (unsigned long long)r->packets, r->seconds, r->pps / 1e6, r->gbps,
               r->packets ? r->cpu_s * 1e9 / (double)r->packets : 0.0,
               interrupted ? " (interrupted)" : "");
        return;
    }
    json_t *j = json_object();
    json_object_set_new(j, "mode", json_string(o->mode));
    json_object_set_new(j, "link", json_string(o->link));
    json_object_set_new(j, "pps", tool_json_num(r->pps, 0));
    json_object_set_new(j, "packets", json_integer((json_int_t)r->packets));
    json_object_set_new(j, "seconds", tool_json_num(r->seconds, 6));
    json_object_set_new(j, "gbps", tool_json_num(r->gbps, 4));
    json_object_set_new(j, "size", json_integer(o->size));
    json_object_set_new(j, "batch", json_integer(o->batch));
    json_object_set_new(j, "completion_thread", json_boolean(o->completion_thread));
    json_object_set_new(
        j, "alien_policy",
        json_string(o->alien_policy > 0 ? hp_alien_policy_name(o->alien_policy) : "default"));
    json_object_set_new(j, "cpu_s", tool_json_num(r->cpu_s, 6));
    json_object_set_new(j, "dropped", json_integer((json_int_t)r->dropped));
    tool_json_write(j, stdout, false);
    json_decref(j);
}

int cmd_gen(int argc, char **argv)
{
    struct gen_opts o;
    gen_defaults(&o);
    o.rate_out = stdout;
    bool json = false;
    static const struct option longopts[] = {
        {"link", required_argument, NULL, 'l'},
        {"iface", required_argument, NULL, 'i'},
        {"queue", required_argument, NULL, 'q'},
        {"size", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},
        {"duration", required_argument, NULL, 'd'},
        {"completion-thread", no_argument, NULL, 'C'},
        {"copy", no_argument, NULL, 'c'},
        {"zero-copy", no_argument, NULL, 'z'},
        {"skb", no_argument, NULL, 'S'},
        {"pcap", required_argument, NULL, 'p'},
        {"cpu", required_argument, NULL, 'u'},
        {"cpu2", required_argument, NULL, 'U'},
        {"json", no_argument, NULL, 'j'},
        {"mode", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        MEMIFOPT_LONGOPTS,
        MEMIFOPT_WAIT_LONGOPT,
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:i:q:s:b:d:m:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 0;
        }
        if (gen_option(c, optarg, &o, &json))
            return 2;
    }
    if (optind < argc)
        o.mode = argv[optind++];
    if (optind < argc)
        return tool_usage_error("gen", "unexpected argument '%s'", argv[optind]);
    if (gen_check_opts(&o))
        return 2;
    if (json)
        o.rate_out = NULL;
    const char *pol = getenv("HP_ALIEN_POLICY");
    if (pol)
        o.alien_policy = hp_alien_policy_parse(pol);
    if (o.alien_policy < 0)
        o.alien_policy = 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct gen_result r;
    int rc = gen_run(&o, &r);
    if (rc)
        return rc;
    print_result(&o, &r, json);
    return 0;
}
