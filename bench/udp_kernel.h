/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's side of `hotpath bench udp-echo` over veth: a recvmmsg/sendmmsg echo server, a windowed client, CPU accounting. */
#ifndef HOTPATH_TOOL_UDP_KERNEL_H
#define HOTPATH_TOOL_UDP_KERNEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "harness.h"
#include "tool.h"

#define UDPK_BATCH 32 /* datagrams per recvmmsg / sendmmsg */

/* ---- CPU accounting ---- */

/* One CPU's line of /proc/stat, in clock ticks (USER_HZ). */
struct udpk_cpustat {
    uint64_t busy;  /* user + nice + system + irq + softirq */
    uint64_t steal; /* time the hypervisor ran something else */
    uint64_t total; /* busy + idle + iowait + steal */
};
/* 0, or -errno (-ENOENT: no such CPU line). */
int udpk_cpustat_read(int cpu, struct udpk_cpustat *out);
/* Seconds of one tick of /proc/stat. */
double udpk_tick_s(void);
/* CPU time (user + system) used so far by the user-space threads of every
 * other process, in seconds: what another job on this machine took from the
 * CPUs we measure. Kernel threads are left out (softirq threads may be
 * working for us). */
double udpk_foreign_cpu_s(void);

/* ---- the kernel's UDP echo server ---- */

/* A thread in network namespace ns->ns[side], pinned to cpu, echoing every
 * datagram to port `port` of addr (IPv4): recvmmsg of up to UDPK_BATCH
 * (blocking for one, then whatever is queued), sendmmsg of them back. */
struct udpk_server {
    const struct tool_netns *ns;
    int side, cpu;
    uint8_t addr[4];
    uint16_t port;
    /* filled in */
    struct hb_server srv;
    uint64_t echoed; /* by the time it stopped */
    char why[200];
};
/* Start and wait (up to 5 s) until it is bound. 0, or -1 with s->why. */
int udpk_server_start(struct udpk_server *s);
/* Stop (it wakes within 50 ms) and join. */
void udpk_server_stop(struct udpk_server *s);

/* ---- the client ---- */

/* A kernel UDP socket in ns->ns[side], on cpu, bound to `src`, connected to
 * dst:port, keeping `window` datagrams of `payload` bytes in flight:
 * sendmmsg to top the window up, then a blocking recvmmsg (so that the
 * client sleeps rather than spins when the server is slower). A window
 * that stalls for 20 ms is counted lost and started again. */
struct udpk_client_opts {
    const struct tool_netns *ns;
    int side, cpu;
    uint8_t src[4], dst[4];
    uint16_t port;
    unsigned window, payload;
    double warm_s, seconds;
    /* What to account over the measured interval: the CPUs of the server
     * and the client (/proc/stat), and the server thread's own CPU time
     * (a clock of pthread_getcpuclockid; has_server_clock false: none). */
    int cpu_server;
    clockid_t server_clock;
    bool has_server_clock;
};

struct udpk_client_result {
    uint64_t echoes, lost, refused;
    double seconds;         /* wall time of the measured interval */
    double server_busy_s;   /* busy time of the server's CPU (/proc/stat) */
    double client_busy_s;   /* of the client's CPU */
    double server_thread_s; /* the server thread's own CPU time */
    double client_thread_s; /* the client thread's own CPU time */
    double foreign_s;       /* other processes' CPU time meanwhile */
    double steal_s;         /* steal time of the two CPUs */
    char why[200];
};

/* Run the client on the calling thread (it enters the namespace and pins
 * itself: call it on a thread of its own). 0, or -1 with r->why. */
int udpk_client_run(const struct udpk_client_opts *o, struct udpk_client_result *r);

#endif
