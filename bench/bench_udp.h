/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench udp-echo`: UDP echo over the mem link (udp_echo_run, reusable; bench_udp.c) and over veth (bench_udp_veth.c, udp_kernel.c). */
#ifndef HOTPATH_TOOL_BENCH_UDP_H
#define HOTPATH_TOOL_BENCH_UDP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"
#include "harness.h"
#include "tool.h"

#define UDP_ECHO_PORT 7
/* The client's and the server's addresses, on mem and on veth. */
extern const uint8_t UDP_CLI4[4], UDP_SRV4[4];

struct udp_echo_opts {
    unsigned payload; /* bytes of UDP payload (default 64) */
    unsigned window;  /* datagrams in flight (default 256) */
    double seconds;   /* measured time per round */
    bool one_thread;  /* both stacks polled alternately by the calling thread */
    int cpu_client;   /* CPUs of the client and server threads; -1: leave */
    int cpu_server;
};

struct udp_echo_result {
    uint64_t echoes; /* echoes the client received in the measured interval */
    uint64_t lost;   /* datagrams given up as lost (window reset after a stall) */
    double seconds;
    double echoes_per_s;
    double cpu_ns; /* CPU ns per echo, both threads (or the one) */
    char why[200]; /* on failure */
};

/* One round: two stacks over a mem pair, the client keeping `window`
 * datagrams in flight to the server's echo socket. 0, or -1 with r->why. */
int udp_echo_run(const struct udp_echo_opts *o, struct udp_echo_result *r);

int bench_udp(const struct bench_opts *o, FILE *table);

/* ---- over veth (bench_udp_veth.c) ---- */

#define UDP_VETH_WINDOW  256
#define UDP_VETH_PAYLOAD 64

/* The rows, and the values of a round of each. */
enum { V_KERNEL, V_AFXDP, V_AFXDP_WAIT, V_AFPACKET, UDP_VETH_NROWS };
enum { V_EPS, V_SRV_NS, V_BOTH_NS, V_THREAD_NS, V_CLI_NS, V_STEAL, V_LOST, V_REFUSED, V_NVALUES };
extern const char *const udp_veth_rows[UDP_VETH_NROWS];

struct udp_veth_report {
    char skipped[240]; /* nothing measured: why */
    char failed[240];  /* the kernel row failed: why */
    struct tool_netns ns;
    int cpu_srv, cpu_cli;
    bool csum_off;  /* the client's end computes UDP checksums */
    bool have_addr; /* the server's end holds 198.18.0.2 (the kernel row's) */
    int reps;
    double round_s, warm_s;
    struct hb_rounds h; /* retried, worst_disturbed: other processes' share of the two CPUs */
    struct hb_row rows[UDP_VETH_NROWS];
    double worst_steal; /* share of the two CPUs the hypervisor took, in the rounds kept */
    double ratio_srv, ratio_both, ratio_wait; /* hotpath-afxdp(-wait) / kernel */
    bool met;
};

/* Measure every row (root; skipped, with why, otherwise). */
void udp_veth_run(struct udp_veth_report *v, const struct bench_opts *o);
/* The goal of row (V_AFXDP or V_AFXDP_WAIT) against the kernel, as text. */
void udp_veth_goal(const struct udp_veth_report *v, int row, char *buf, size_t len);
void udp_veth_table(const struct udp_veth_report *v, FILE *f);
/* The "veth" object of the benchmark's JSON. */
json_t *udp_veth_json(const struct udp_veth_report *v);

#endif
