/* SPDX-License-Identifier: BSD-3-Clause */
/* The UDP echo benchmark over the mem link (udp_echo_run, reusable) and `hotpath bench udp-echo`, whose veth part is in bench_udp.c and udp_kernel.c. */
#ifndef HOTPATH_TOOL_BENCH_UDP_H
#define HOTPATH_TOOL_BENCH_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"
#include "tool.h"

struct udp_echo_opts {
    unsigned payload;    /* bytes of UDP payload (default 64) */
    unsigned window;     /* datagrams in flight (default 256) */
    double seconds;      /* measured time per round */
    bool one_thread;     /* both stacks polled alternately by the calling thread */
    int cpu_client;      /* CPUs of the client and server threads; -1: leave */
    int cpu_server;
};

struct udp_echo_result {
    uint64_t echoes;     /* echoes the client received in the measured interval */
    uint64_t lost;       /* datagrams given up as lost (window reset after a stall) */
    double seconds;
    double echoes_per_s;
    double cpu_ns;       /* CPU ns per echo, both threads (or the one) */
    char why[200];       /* on failure */
};

/* One round: two stacks over a mem pair, the client keeping `window`
 * datagrams in flight to the server's echo socket. 0, or -1 with r->why. */
int udp_echo_run(const struct udp_echo_opts *o, struct udp_echo_result *r);

int bench_udp(const struct bench_opts *o, FILE *table);

#endif
