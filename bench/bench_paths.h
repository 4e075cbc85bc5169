/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench paths`: TCP senders through a lossy, reordering, marking bridge and a narrow routed path; the report shared with `hotpath demo`, and the pieces its files share. */
#ifndef HOTPATH_BENCH_PATHS_H
#define HOTPATH_BENCH_PATHS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"
#include "harness.h"
#include "tool.h"

/*
 * Every sender runs on the client namespace's end of a bridged line
 * (tool_line_bridged): client -- `hotpath impair` (a child of this
 * process, in the bridge's namespace, on its own CPU) -- server, where a
 * kernel receiver thread (the sink) reads everything. impair shapes only
 * the data direction (--a2b): 100 Mbit/s, a one-way delay of 20 ms (the
 * round trip's: the ACKs come back at once), a queue of one bandwidth-delay
 * product, and the condition's loss, reordering or ECN marks.
 */

enum paths_sender {
    PS_KERNEL_CUBIC,  /* the kernel's defaults: CUBIC, SACK */
    PS_KERNEL_RENO,   /* tcp_congestion_control=reno, tcp_sack=0 */
    PS_HOTPATH_CUBIC, /* CUBIC + SACK + RACK-TLP */
    PS_HOTPATH_RENO,  /* NewReno, no SACK */
    PS_N
};

#define PATHS_RATE_MBIT   100
#define PATHS_DELAY_MS    20
#define PATHS_QUEUE_BYTES 250000 /* one bandwidth-delay product: 100 Mbit/s x 20 ms */
#define PATHS_ECN_ABOVE   30000
#define PATHS_FLOW_BYTES  100000 /* a short flow */
#define PATHS_PORT        5201
#define PATHS_MAX_FLOWS   300
#define PATHS_MAX_TRIALS  200
#define PATHS_RT_PRIO                                                                              \
    40 /* SCHED_FIFO: hotpath impair and hotpath's sender (they sleep when idle) */

/* ---- the sink: the kernel receiver in the server's namespace ---- */

struct paths_sink {
    struct hb_server srv;
    const char *ns;
    int cpu;
    int lfd;
    /* The bulk measurement: the coordinator arms it with its phase; the
     * sink takes its window (bytes read) until it sees HB_STOP. */
    _Atomic(_Atomic int *) armed;
    _Atomic unsigned gen; /* one more each time it is armed */
    struct hb_window win; /* valid once win_done */
    _Atomic int win_done;
    _Atomic uint64_t total;   /* bytes read since the start */
    _Atomic uint64_t last_ns; /* when the last of them were read (CLOCK_MONOTONIC) */
    _Atomic uint64_t conns;   /* connections read to their end */
};

/* Listen on 198.18.0.2:PATHS_PORT in namespace ns and read every
 * connection to its end, one at a time, on a thread pinned to cpu. 0, or
 * -errno with why. */
int paths_sink_start(struct paths_sink *s, const char *ns, int cpu, char *why, size_t len);
void paths_sink_stop(struct paths_sink *s);
/* Take the bulk window on phase from now on; paths_sink_window waits (up
 * to timeout_s) until the sink closed it. */
void paths_sink_arm(struct paths_sink *s, _Atomic int *phase);
bool paths_sink_window(struct paths_sink *s, double timeout_s, struct hb_window *out);
/* Wait (up to 3 s) until the sink has read `target` bytes in all: when it
 * read the last of them (paths_now_ns), or 0. */
uint64_t paths_sink_until(struct paths_sink *s, uint64_t target);
uint64_t paths_now_ns(void);

/* ---- a sender's work in one cell ---- */

struct paths_job {
    /* in */
    int sender; /* enum paths_sender */
    const char *ns, *iface;
    int cpu;
    bool ecn;
    struct paths_sink *sink;
    _Atomic int *phase; /* the bulk run's (NULL: no bulk run) */
    _Atomic int ready;  /* set by the sender once its bulk connection is up */
    int flows;          /* short flows after the bulk run */
    int trials;         /* tail-loss trials (instead of the rest) */
    const char *link;   /* hotpath: the link it ran on */
    bool rt;            /* hotpath: its thread ran at real-time priority */
    /* out: the bulk run */
    bool bulk_ok;
    bool sack, ecn_ok; /* what the bulk connection negotiated */
    uint64_t retrans, rto;
    /* the short flows, in ms; failed ones are not in fct */
    double fct[PATHS_MAX_FLOWS];
    int nfct, failed;
    uint64_t short_retrans, short_rto;
    /* the tail trials: ms from the write until the sink had every byte */
    double repair[PATHS_MAX_TRIALS];
    bool trial_rto[PATHS_MAX_TRIALS];
    int ntrials;
    uint64_t probes;     /* tail loss probes over the trials */
    uint64_t burst_segs; /* segments written over the trials */
    char why[200];
};

/* The sender's thread: the kernel's TCP (paths_kernel.c) or a hotpath
 * stack over afpacket on the client's interface (paths_hotpath.c). */
void *paths_kernel_sender(void *job);
void *paths_hotpath_sender(void *job);

/* ---- the bridge: hotpath impair as a child ---- */

struct paths_bridge_stats {
    uint64_t in, out, queue_drops, ce_marked, tail_drops, lost, reordered;
    uint64_t late_mean_us, late_max_us; /* how late frames left the delay line */
};

struct paths_bridge {
    int pid;
    FILE *out, *err; /* its standard output (JSON lines) and error */
};

/* Start `hotpath impair ARGS...` (this binary) in namespace ns between
 * interfaces a and b, pinned to cpu, with --json-stats; return once its
 * first line says both interfaces are open. args ends with NULL. 0, or -1
 * with why. */
int paths_bridge_start(struct paths_bridge *b, const char *ns, const char *ifa, const char *ifb,
                       int cpu, const char *const *args, char *why, size_t len);
/* The same, with *rt: at real-time priority (--rt PATHS_RT_PRIO) first,
 * and without it (*rt cleared) when that is refused. */
int paths_bridge_start_rt(struct paths_bridge *b, const char *ns, const char *ifa, const char *ifb,
                          int cpu, const char *const *args, bool *rt, char *why, size_t len);
/* SIGINT, wait, and its final counters of direction a2b. 0, or -1 with why. */
int paths_bridge_stop(struct paths_bridge *b, struct paths_bridge_stats *a2b, char *why,
                      size_t len);

/* Run this binary with argv (argv[0] "hotpath", argv[1] the command) in
 * namespace ns for up to timeout_s (then it is killed): its standard output
 * in *out (to free). 0 when it exited 0, else -1 with why (the first line
 * of its standard error). */
int paths_child_run(const char *ns, char *const *argv, double timeout_s, char **out, char *why,
                    size_t len);

/* ---- counters of the namespace the calling thread is in ---- */

/* /proc/thread-self/net/{snmp,netstat}: the field `name` of the line
 * group `group` ("Tcp", "TcpExt"); -1 when absent. */
long long paths_ns_counter(const char *group, const char *name);

/* ---- path MTU: two kernel routers joined by a 1280-byte link ---- */

enum { PM_V4, PM_V6, PM_V4_NOICMP, PM_V6_NOICMP, PM_N };

struct paths_pmtu_cell {
    bool ran[2]; /* [0] kernel client, [1] hotpath connect */
    double secs[2];
    bool verified[2];
    uint64_t retrans[2], rto[2];
    char why[2][200];
};

struct paths_pmtu {
    bool ran;
    char why[200];
    uint64_t bytes;
    int reps;
    struct paths_pmtu_cell c[PM_N];
};

/* Run the four cases (IPv4 with DF, IPv6; then both with every ICMP error
 * dropped on the routers): a kernel echo server, `bytes` echoed by the
 * kernel's client and by `hotpath connect`, reps times each (medians).
 * Fills p (p->why when it could not run at all). */
void paths_pmtu_run(struct paths_pmtu *p, const struct bench_opts *o, int cpu_a, int cpu_b,
                    uint64_t bytes, int reps);

/* ---- the report ---- */

enum { PC_LOSS0, PC_LOSS05, PC_LOSS2, PC_LOSS5, PC_REORDER, PC_ECN, PC_N };

struct paths_cell {
    bool ran;
    char why[200];
    bool sack, ecn; /* negotiated by the bulk connection */
    double goodput_mbps;
    uint64_t retrans, rto;
    bool has_fct;
    double fct_p50_ms, fct_p99_ms;
    int flows, flows_failed;
    uint64_t short_retrans, short_rto;
    struct paths_bridge_stats bridge;
};

struct paths_tail {
    bool ran;
    char why[200];
    int trials, ok, rtos;
    double p50_ms, p95_ms;
    uint64_t probes, tail_drops;
    double burst_segs; /* segments per write, on average */
};

struct paths_report {
    bool quick;
    int cpu_bridge, cpu_ends;
    double bulk_s, warm_s;
    int flows, trials;
    char why[240]; /* why nothing ran ("" when it did) */
    /* the bridge unloaded: frames per second it forwards */
    double bridge_fps_1514, bridge_fps_64;         /* forwarded (-1: not measured) */
    double bridge_offered_1514, bridge_offered_64; /* what the flooding sender managed */
    bool bridge_rt;                                /* impair ran at real-time priority */
    const char *hp_link;                           /* the link hotpath's senders ran on */
    bool hp_rt;                                    /* ... at real-time priority */
    struct paths_cell cells[PC_N][PS_N];
    struct paths_tail tail[PS_N]; /* PS_KERNEL_CUBIC and PS_HOTPATH_CUBIC */
    struct paths_pmtu pmtu;
    struct hb_goals goals;
};

extern const char *const paths_sender_names[PS_N];
extern const char *const paths_cond_names[PC_N];
extern const double paths_cond_loss[PC_N], paths_cond_reorder[PC_N];

/* Run everything. 0 (also when it cannot run here, not root: r->why says
 * so), or 1 when the namespaces or the receiver could not be set up (r->why). */
int paths_report_run(struct paths_report *r, const struct bench_opts *o);
/* The rows, trials and path MTU runs that were asked for and failed to
 * measure (not goals missed: measurements missing). */
int paths_report_failures(const struct paths_report *r);
void paths_report_goals(struct paths_report *r);
void paths_report_table(const struct paths_report *r, FILE *f);
json_t *paths_report_json(const struct paths_report *r);

#endif
