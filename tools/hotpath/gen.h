/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath gen`: the traffic generator's loop, shared by the command, the benchmarks and the demo. */
#ifndef HOTPATH_TOOL_GEN_H
#define HOTPATH_TOOL_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "memifopt.h"

struct gen_opts {
    const char *mode;        /* "txonly", "rxdrop" or "l2fwd" */
    const char *link;        /* "mem", "tap", "afpacket", "afxdp" or "memif" */
    struct memif_opts memif; /* memif: --memif-socket, --memif-role, --memif-id */
    const char *iface;       /* required but for mem */
    unsigned queue;          /* afxdp queue */
    unsigned size;           /* frame size in bytes, without FCS (xdpsock -s); 60..MTU+14 */
    unsigned batch;          /* frames per burst */
    double duration;         /* seconds */
    bool completion_thread;  /* free transmitted buffers on a second thread */
    int cpu, cpu2;           /* CPUs of the data thread and the second thread; -1: leave */
    unsigned link_flags;     /* extra HP_LINK_F_* (copy, zero-copy, skb mode) */
    const char *pcap;        /* wrap the link in the pcap decorator, or NULL */
    int alien_policy;        /* HP_ALIEN_*, or 0: the pool's default */
    FILE *rate_out;          /* a rate line each second here, or NULL */
};

struct gen_result {
    uint64_t packets; /* transmitted (txonly), received (rxdrop), forwarded (l2fwd) */
    uint64_t bytes;
    double seconds;   /* wall time of the measured interval */
    double pps, gbps; /* packets/s; Gbit/s of frames (no preamble, FCS or gap) */
    double cpu_s;     /* CPU time of the data thread (and the second thread) */
    uint64_t dropped; /* the link's tx_dropped + rx_dropped */
};

/* Run the generator. 0, or an exit status after printing the reason to
 * stderr (2: a usage error; 1: the link could not be opened). */
int gen_run(const struct gen_opts *o, struct gen_result *r);

/* The default options: txonly, mem, 64 B, batch 32, 10 s, CPUs -1. */
void gen_defaults(struct gen_opts *o);

#endif
