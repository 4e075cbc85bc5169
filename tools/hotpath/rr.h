/* SPDX-License-Identifier: BSD-3-Clause */
/* What the parts of `hotpath rr` share: options, the latency histogram, per-thread results, phases and the real links. */
#ifndef HOTPATH_TOOL_RR_H
#define HOTPATH_TOOL_RR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "memifopt.h"
#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "harness.h"

#define RR_MAX_THREADS 64
#define RR_MAX_CPUS    256

struct rr_opts {
    bool udp; /* --proto udp */
    bool ipv6;
    bool json;
    const char *link;           /* "mem", "memif", "afxdp", "afpacket", "tap" or "kernel" */
    struct memif_opts memif;    /* memif: --memif-socket (a base path), --memif-id */
    const char *iface;          /* --iface: the client stack's existing interface (real links) */
    const char *peer_iface;     /* --peer-iface: the server stack's */
    unsigned flows;             /* --flows */
    unsigned threads;           /* --threads */
    uint32_t request, response; /* bytes per message */
    double duration;            /* measured seconds */
    double warm;                /* unmeasured seconds after every flow is up */
    uint32_t sockbuf;           /* hotpath TCP: sndbuf and rcvbuf of every connection */
    uint32_t
        early_demux; /* hotpath TCP: hp_tcp_config.early_demux_conns (0: default, UINT32_MAX: off) */
    uint32_t rto_min_ms; /* hotpath TCP: hp_tcp_config.rto_min_ms (0: the library's) */
    int cc;              /* hotpath TCP: --cc, enum hp_tcp_cc (0: the library's) */
    int cpus[RR_MAX_CPUS];
    int ncpus; /* 0: no pinning */
};

/* Whether the run uses hotpath stacks (every link but kernel). */
static inline bool rr_hotpath_link(const struct rr_opts *o)
{
    return o->link[0] != 'k';
}

/* Whether both stacks' link lives in this process (mem, memif): no
 * namespace, no interface. */
static inline bool rr_in_process(const struct rr_opts *o)
{
    return strcmp(o->link, "mem") == 0 || strcmp(o->link, "memif") == 0;
}

/* The CPU of client thread k (server: client = false), or -1. Client and
 * server threads alternate over the list: c0 s0 c1 s1 ... */
int rr_cpu_of(const struct rr_opts *o, unsigned k, bool client);

/* Flow i of n over t threads: thread i % t; flows of thread k. */
static inline unsigned rr_flows_of(unsigned n, unsigned t, unsigned k)
{
    return n / t + (k < n % t);
}

/* Latency in ticks (tool_ticks), log-linear: 16 linear buckets per power of
 * two (about 6% resolution). One per thread, no allocation per sample. */
#define RR_HIST_SUB 16
#define RR_HIST_N   ((64 - 3) * RR_HIST_SUB)
struct rr_hist {
    uint64_t n[RR_HIST_N];
};

static inline void rr_hist_add(struct rr_hist *h, uint64_t v)
{
    unsigned i;
    if (v < RR_HIST_SUB) {
        i = (unsigned)v;
    } else {
        unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
        i = (e - 3) * RR_HIST_SUB + (unsigned)((v >> (e - 4)) & (RR_HIST_SUB - 1));
    }
    h->n[i]++;
}
void rr_hist_merge(struct rr_hist *into, const struct rr_hist *h);
/* The q-quantile (0..1) in ticks (the middle of its bucket); 0 when empty. */
double rr_hist_quantile(const struct rr_hist *h, double q);

/* Phases: HB_SETUP, HB_WARM, HB_MEASURE, HB_STOP (harness.h), set by the
 * coordinating thread (a shared mapping for the kernel's two processes);
 * each worker thread takes its window with hb_window_watch, counting its
 * transactions (n[0]) and UDP requests resent after 1 s without an answer
 * (n[1]). */
enum { RR_TXNS, RR_TIMEOUTS };

/* The outcome of a run, either link. */
struct rr_result {
    unsigned flows_reached;
    uint64_t txns, served, timeouts;
    double seconds; /* measured window */
    double cpu_client_s, cpu_server_s;
    double setup_s; /* to establish every flow */
    double ticks_per_us;
    struct rr_hist hist;
    char note[400];   /* why fewer flows, or a failure */
    bool unavailable; /* the failure is that the link cannot be used here (no root,
                           * not built in, unsupported): exit code 2 */
    /* configuration reported (hotpath stacks) */
    uint32_t pool_bufs, ring_size, listen_ports, max_conns;
    uint32_t early_demux; /* hotpath TCP: early_demux_conns in force (UINT32_MAX: off) */
    uint32_t rto_min_ms;  /* hotpath TCP: rto_min_ms in force */
    /* real links: the interfaces of the first pair, the namespace made for
     * the run ("" with --iface), and what the links and stacks dropped */
    char iface[16], peer_iface[16], netns[48];
    uint64_t link_rx_dropped, link_tx_dropped, eth_out_drops;
    /* hotpath TCP, both stacks over the whole run (set-up and warm-up too):
     * retransmitted segments, retransmission timeouts, tail loss probes,
     * and buffers the stacks could not allocate. A clean run has none; a
     * queue deeper than the RTO shows here first. */
    uint64_t retrans_segs, rto_timeouts, tlp_probes, no_buffers;
    /* kernel: processes (client and server) and threads in all */
    unsigned processes, threads_used;
};

/* Ticks of tool_ticks() per microsecond, measured over ~20 ms. */
double rr_ticks_per_us(void);

/* Runs the hotpath stacks over mem or a real link (rr.c). */
int rr_mem_run(const struct rr_opts *o, struct rr_result *r);
int rr_kernel_run(const struct rr_opts *o, struct rr_result *r);

/* ---- real links (rr_link.c): where the stacks' afxdp, afpacket or tap links live ---- */

/*
 * Without --iface: a network namespace of the run's own, "hp-rr-PID", with
 * one veth pair rrcK / rrsK per stack pair (afxdp, afpacket), or two tap
 * devices rrcK / rrsK enslaved to a bridge rrbrK (tap); kernel IPv6 off and
 * no kernel address, so the kernel neither answers nor sends anything
 * there. Removed by rr_net_down, at exit, and on SIGINT / SIGTERM. With
 * --iface A --peer-iface B: those interfaces, in the current namespace.
 */
struct rr_net {
    bool own; /* a namespace of ours */
    char ns[48];
    int ns_fd, home_fd; /* ours and the one to come back to; -1 */
    unsigned pairs;
    char ifname[RR_MAX_THREADS][2][16]; /* [pair][0: client, 1: server] */
};

/* Make the namespace and its interfaces for o->threads pairs of up to
 * max_flows flows each (or take --iface / --peer-iface). 0, or -1 with the
 * reason in r->note (r->unavailable when it cannot work here). */
int rr_net_up(const struct rr_opts *o, unsigned max_flows, struct rr_net *n, struct rr_result *r);
/* Open pair k's two links (e[0] the client's) for n flows, inside the
 * namespace. afpacket and tap receive into *pool, made here and shared by
 * both; afxdp links have their UMEM pools (*pool stays NULL). 0, or -1 with
 * r->note (and r->unavailable) set; what was opened is in e and *pool. */
int rr_net_open(const struct rr_opts *o, struct rr_net *net, unsigned k, unsigned n,
                struct hp_link *e[2], struct hp_pool **pool, struct rr_result *r);
/* Close links opened by rr_net_open (inside the namespace: closing an
 * afxdp link detaches its XDP program by interface index). */
void rr_net_close(struct rr_net *net, struct hp_link *e[2]);
/* Remove the namespace (if ours). Safe to call twice. */
void rr_net_down(struct rr_net *n);

#endif
