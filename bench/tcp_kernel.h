/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's side of `hotpath bench tcp-stream` and `tcp-rr`: TCP over loopback with two pinned threads, like iperf3 and netperf TCP_RR. */
#ifndef HOTPATH_TOOL_TCP_KERNEL_H
#define HOTPATH_TOOL_TCP_KERNEL_H

#include <stddef.h>
#include <stdint.h>

struct tcpk_opts {
    int cpu_a, cpu_b; /* sender / client, receiver / server; -1: leave */
    size_t chunk;     /* stream: bytes per write and read (128 KiB) */
    double warm_s;    /* unmeasured start */
    double seconds;   /* measured interval */
};

struct tcpk_result {
    uint64_t count; /* stream: bytes received; rr: transactions completed */
    double seconds; /* the measuring side's interval */
    double cpu_a_s; /* thread CPU time (CLOCK_THREAD_CPUTIME_ID) over the interval */
    double cpu_b_s;
    uint64_t retrans; /* the connection's retransmitted segments (tcp_info), sender / client */
    char why[200];
};

/* One flow over 127.0.0.1: a sender thread writing `chunk` bytes at a time
 * (blocking), a receiver thread reading as much. 0, or -1 with r->why. */
int tcpk_stream_run(const struct tcpk_opts *o, struct tcpk_result *r);

/* 1-byte request / response over 127.0.0.1 with TCP_NODELAY: the client
 * writes one byte and reads one back, the server reads and writes it back,
 * each a thread, blocking. 0, or -1 with r->why. */
int tcpk_rr_run(const struct tcpk_opts *o, struct tcpk_result *r);

#endif
