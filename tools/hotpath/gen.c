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
#include <hotpath/cksum.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "gen.h"
#include "cmd.h"
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

/* The frame txonly sends: Ethernet, IPv4 198.18.0.1 -> 198.18.0.2, UDP 9 -> 9
 * (discard), a counting payload; both checksums right, so that a receiving
 * kernel or tshark sees a valid packet. */
static void build_frame(uint8_t *f, unsigned size, const uint8_t dst[6], const uint8_t src[6])
{
    memset(f, 0, size);
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    uint8_t *ip = f + 14;
    unsigned ip_len = size - 14;
    ip[0] = 0x45;
    ip[2] = (uint8_t)(ip_len >> 8);
    ip[3] = (uint8_t)ip_len;
    ip[6] = 0x40; /* don't fragment */
    ip[8] = 64;
    ip[9] = 17;
    const uint8_t saddr[4] = {198, 18, 0, 1}, daddr[4] = {198, 18, 0, 2};
    memcpy(ip + 12, saddr, 4);
    memcpy(ip + 16, daddr, 4);
    uint16_t c = hp_cksum_ipv4_hdr(ip, 20);
    memcpy(ip + 10, &c, 2);
    uint8_t *udp = ip + 20;
    unsigned udp_len = ip_len - 20;
    udp[1] = 9;
    udp[3] = 9;
    udp[4] = (uint8_t)(udp_len >> 8);
    udp[5] = (uint8_t)udp_len;
    for (unsigned i = 8; i < udp_len; i++)
        udp[i] = (uint8_t)i;
    c = hp_cksum_udp4(saddr, daddr, udp, udp_len);
    memcpy(udp + 6, &c, 2);
}

/* What the second thread does: drain the mem peer (the frames the data
 * thread sent: freeing them here is the cross-thread free), collect
 * completions, or feed the mem peer for rxdrop and l2fwd. */
struct side {
    struct hp_link *link;     /* the data link */
    struct hp_link *peer;     /* mem: the other end; NULL otherwise */
    const struct gen_opts *o;
    const uint8_t *frame;
    _Atomic int stop;
    _Atomic uint64_t done;    /* frames handled */
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
        struct hp_link_config cfg = {.iface = o->iface, .queue = o->queue,
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

int gen_run(const struct gen_opts *o, struct gen_result *r)
{
    memset(r, 0, sizeof *r);
    bool txonly = strcmp(o->mode, "txonly") == 0;
    bool rxdrop = strcmp(o->mode, "rxdrop") == 0;
    bool l2fwd = strcmp(o->mode, "l2fwd") == 0;
    if (!txonly && !rxdrop && !l2fwd)
        return tool_usage_error("gen", "mode '%s': not txonly, rxdrop or l2fwd", o->mode);
    if (o->batch < 1 || o->batch > MAX_BATCH)
        return tool_usage_error("gen", "--batch %u: wants 1 to %d", o->batch, MAX_BATCH);
    if (o->size < 60 || o->size > 9014)
        return tool_usage_error("gen", "--size %u: wants 60 to 9014 bytes (a frame without FCS)", o->size);
    if (!(o->duration > 0) || o->duration > 86400)
        return tool_usage_error("gen", "--duration: wants 0 < seconds <= 86400");

    struct hp_link *link, *peer;
    int rc = open_link(o, &link, &peer);
    if (rc)
        return rc;
    if (!memifopt_wait_up("gen", link, 60, &interrupted)) {
        fprintf(stderr, "hotpath gen: no memif peer came in 60 s\n");
        hp_link_close(link);
        return 1;
    }
    if (o->size > hp_link_mtu(link) + 14) {
        fprintf(stderr, "hotpath gen: --size %u is larger than %s's MTU %u + 14\n", o->size,
                hp_link_name(link), hp_link_mtu(link));
        hp_link_close(link);
        hp_link_close(peer);
        return 2;
    }
    uint8_t frame[9014], src[6], dst[6] = {0x02, 0, 0, 0, 0, 0x02};
    hp_link_mac(link, src);
    if (peer)
        hp_link_mac(peer, dst);
    build_frame(frame, o->size, dst, src);

    if (o->cpu >= 0)
        tool_pin(o->cpu);
    /* A second thread: completions (--completion-thread), or the mem peer's
     * side for rxdrop / l2fwd, which needs someone sending. */
    bool two = (txonly && o->completion_thread) || (!txonly && peer);
    struct side s = {.link = link, .peer = peer, .o = o, .frame = frame};
    atomic_init(&s.stop, 0);
    atomic_init(&s.done, 0);
    pthread_t th;
    if (two && pthread_create(&th, NULL, second_thread, &s) != 0) {
        fprintf(stderr, "hotpath gen: cannot start the second thread\n");
        hp_link_close(link);
        hp_link_close(peer);
        return 1;
    }

    struct hp_pool *pool = hp_link_pool(link);
    struct hp_buf *b[MAX_BATCH];
    uint64_t packets = 0, bytes = 0, last_packets = 0;
    /* A short warm-up (caches, rings, the kernel's first allocations) is
     * not measured. */
    double t0 = tool_now_s(), warm_end = t0 + (o->duration > 1 ? 0.2 : o->duration * 0.1);
    double start = 0, c0 = 0, next_line = 0, end = 0;
    bool measuring = false;
    unsigned iter = 0;
    for (;;) {
        if ((++iter & 15) == 0 || !measuring) {
            double t = tool_now_s();
            if (!measuring && t >= warm_end) {
                measuring = true;
                start = t;
                c0 = tool_thread_cpu_s();
                next_line = t + 1;
                end = t + o->duration;
                packets = bytes = last_packets = 0;
            }
            if (measuring && (t >= end || interrupted)) {
                end = t;
                break;
            }
            if (measuring && t >= next_line && o->rate_out) {
                double pps = (double)(packets - last_packets) / (t - next_line + 1);
                fprintf(o->rate_out, "gen %s %s: %6.1f s  %10.3f Mpps  %8.3f Gbit/s\n", o->mode,
                        hp_link_name(link), t - start, pps / 1e6, pps * o->size * 8 / 1e9);
                fflush(o->rate_out);
                last_packets = packets;
                next_line = t + 1;
            }
        }
        if (txonly && !hp_link_up(link)) {
            /* A memif peer gone: wait for the next (an empty receive
             * drives the link's control channel) rather than count frames
             * the link would drop. */
            (void)hp_link_rx_burst(link, b, 0);
            continue;
        }
        if (txonly) {
            unsigned n = fill(pool, b, o->batch, frame, o->size);
            if (n) {
                int t = hp_link_tx_burst(link, b, n);
                if (t < 0) {
                    fprintf(stderr, "hotpath gen: transmit on %s failed: %s\n", hp_link_name(link),
                            hp_strerror(t));
                    hp_buf_free_bulk(b, n);
                    break;
                }
                if ((unsigned)t < n)
                    hp_buf_free_bulk(b + t, n - (unsigned)t);
                packets += (unsigned)t;
                bytes += (uint64_t)(unsigned)t * o->size;
            }
            /* One core: the data thread also takes the peer's side. */
            if (peer && !two)
                drain_peer(peer, b, MAX_BATCH);
        } else {
            int k = hp_link_rx_burst(link, b, o->batch);
            if (k < 0) {
                fprintf(stderr, "hotpath gen: receive on %s failed: %s\n", hp_link_name(link),
                        hp_strerror(k));
                break;
            }
            if (k == 0)
                continue;
            uint64_t by = 0;
            for (int i = 0; i < k; i++)
                by += b[i]->pkt_len;
            if (rxdrop) {
                hp_buf_free_bulk(b, (unsigned)k);
                packets += (unsigned)k;
                bytes += by;
            } else {
                /* l2fwd: swap the MAC addresses and send the frame back. */
                for (int i = 0; i < k; i++) {
                    uint8_t *f = hp_buf_data(b[i]), t6[6];
                    if (b[i]->data_len < 12)
                        continue;
                    memcpy(t6, f, 6);
                    memcpy(f, f + 6, 6);
                    memcpy(f + 6, t6, 6);
                }
                int t = hp_link_tx_burst(link, b, (unsigned)k);
                if (t < 0)
                    t = 0;
                if (t < k)
                    hp_buf_free_bulk(b + t, (unsigned)(k - t));
                packets += (unsigned)t;
                bytes += by;
            }
        }
    }
    r->cpu_s = tool_thread_cpu_s() - c0;
    if (two) {
        atomic_store(&s.stop, 1);
        pthread_join(th, NULL);
        r->cpu_s += s.cpu_s;
    }
    if (peer && txonly)
        while (drain_peer(peer, b, MAX_BATCH))
            ;
    r->packets = packets;
    r->bytes = bytes;
    r->seconds = end - start;
    r->pps = r->seconds > 0 ? (double)packets / r->seconds : 0;
    r->gbps = r->seconds > 0 ? (double)bytes * 8 / r->seconds / 1e9 : 0;
    struct hp_link_stats st;
    hp_link_stats(link, &st);
    r->dropped = st.tx_dropped + st.rx_dropped;
    struct hp_memif_stats ms;
    if (hp_link_memif_stats(link, &ms) == 0)
        fprintf(stderr, "hotpath gen: memif %s: up %llu times, down %llu; dropped while down %llu, left unread "
                "%llu; refused %llu descriptors, %llu messages, %llu ring indices\n", hp_link_name(link),
                (unsigned long long)ms.connects, (unsigned long long)ms.disconnects,
                (unsigned long long)ms.tx_down, (unsigned long long)ms.tx_unread,
                (unsigned long long)ms.bad_descs, (unsigned long long)ms.bad_msgs,
                (unsigned long long)ms.ring_errors);
    hp_pool_thread_flush(pool);
    int c1 = hp_link_close(link), c2 = hp_link_close(peer);
    if (c1 < 0 || c2 < 0) {
        fprintf(stderr, "hotpath gen: closing the link: %s (buffers still out)\n",
                hp_strerror(c1 < 0 ? c1 : c2));
        return 1;
    }
    return 0;
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
            "  --iface IF            the interface (all links but mem and memif)\n"
            MEMIFOPT_HELP
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
        return tool_usage_error("gen", "%s wants a number from %u to %u, not '%s'", what, lo, hi, arg);
    *out = (unsigned)v;
    return 0;
}

int cmd_gen(int argc, char **argv)
{
    struct gen_opts o;
    gen_defaults(&o);
    o.rate_out = stdout;
    bool json = false;
    static const struct option longopts[] = {
        {"link", required_argument, NULL, 'l'}, {"iface", required_argument, NULL, 'i'},
        {"queue", required_argument, NULL, 'q'}, {"size", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'}, {"duration", required_argument, NULL, 'd'},
        {"completion-thread", no_argument, NULL, 'C'}, {"copy", no_argument, NULL, 'c'},
        {"zero-copy", no_argument, NULL, 'z'}, {"skb", no_argument, NULL, 'S'},
        {"pcap", required_argument, NULL, 'p'}, {"cpu", required_argument, NULL, 'u'},
        {"cpu2", required_argument, NULL, 'U'}, {"json", no_argument, NULL, 'j'},
        {"mode", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'},
        MEMIFOPT_LONGOPTS, {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:i:q:s:b:d:m:h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'l':
            o.link = optarg;
            break;
        case 'i':
            o.iface = optarg;
            break;
        case 'q':
            if (parse_uint("--queue", optarg, 0, 1023, &o.queue))
                return 2;
            break;
        case 's':
            if (parse_uint("--size", optarg, 60, 9014, &o.size))
                return 2;
            break;
        case 'b':
            if (parse_uint("--batch", optarg, 1, MAX_BATCH, &o.batch))
                return 2;
            break;
        case 'd':
            o.duration = strtod(optarg, &end);
            if (*end || !(o.duration > 0) || o.duration > 86400)
                return tool_usage_error("gen", "--duration wants seconds (0 < s <= 86400), not '%s'", optarg);
            break;
        case 'm':
            o.mode = optarg;
            break;
        case 'C':
            o.completion_thread = true;
            break;
        case 'c':
            o.link_flags |= HP_LINK_F_COPY;
            break;
        case 'z':
            o.link_flags |= HP_LINK_F_ZEROCOPY;
            break;
        case 'S':
            o.link_flags |= HP_LINK_F_XDP_SKB;
            break;
        case 'p':
            o.pcap = optarg;
            break;
        case 'u':
            if (tool_parse_cpu("gen", optarg, &o.cpu))
                return 2;
            break;
        case 'U':
            if (tool_parse_cpu("gen", optarg, &o.cpu2))
                return 2;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default: {
            int r = memifopt_parse("gen", &o.memif, c, optarg);
            if (r == 0)
                break;
            return r == 2 ? 2 : tool_usage_error("gen", "unknown option (hotpath gen --help lists them)");
        }
        }
    }
    if (optind < argc)
        o.mode = argv[optind++];
    if (optind < argc)
        return tool_usage_error("gen", "unexpected argument '%s'", argv[optind]);
    if ((o.link_flags & HP_LINK_F_COPY) && (o.link_flags & HP_LINK_F_ZEROCOPY))
        return tool_usage_error("gen", "--copy and --zero-copy exclude each other");
    if (strcmp(o.link, "mem") && strcmp(o.link, "tap") && strcmp(o.link, "afpacket") &&
        strcmp(o.link, "afxdp") && strcmp(o.link, "memif"))
        return tool_usage_error("gen", "--link '%s': not mem, tap, afpacket, afxdp or memif", o.link);
    if ((strcmp(o.link, "mem") == 0 || strcmp(o.link, "memif") == 0) && o.iface)
        return tool_usage_error("gen", "--iface is for real links, not %s", o.link);
    if (memifopt_check("gen", o.link, &o.memif))
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
    if (json) {
        printf("{\"mode\": ");
        tool_json_str(stdout, o.mode);
        printf(", \"link\": ");
        tool_json_str(stdout, o.link);
        printf(", \"pps\": %.0f, \"packets\": %llu, \"seconds\": %.6f, \"gbps\": %.4f, "
               "\"size\": %u, \"batch\": %u, \"completion_thread\": %s, \"alien_policy\": ",
               r.pps, (unsigned long long)r.packets, r.seconds, r.gbps, o.size, o.batch,
               o.completion_thread ? "true" : "false");
        tool_json_str(stdout, o.alien_policy > 0 ? hp_alien_policy_name(o.alien_policy) : "default");
        printf(", \"cpu_s\": %.6f, \"dropped\": %llu}\n", r.cpu_s, (unsigned long long)r.dropped);
    } else {
        printf("gen %s %s: %llu packets in %.3f s: %.3f Mpps, %.3f Gbit/s, %.1f ns CPU/packet%s\n",
               o.mode, o.link, (unsigned long long)r.packets, r.seconds, r.pps / 1e6, r.gbps,
               r.packets ? r.cpu_s * 1e9 / (double)r.packets : 0.0, interrupted ? " (interrupted)" : "");
    }
    return 0;
}
