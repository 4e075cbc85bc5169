/* SPDX-License-Identifier: BSD-3-Clause */
/* What the two halves of `hotpath rr` share: options, the latency histogram, per-thread results and phases. */
#ifndef HOTPATH_TOOL_RR_H
#define HOTPATH_TOOL_RR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RR_MAX_THREADS 64
#define RR_MAX_CPUS 256

struct rr_opts {
    bool udp;             /* --proto udp */
    bool ipv6;
    bool json;
    const char *link;     /* "mem" or "kernel" */
    unsigned flows;       /* --flows */
    unsigned threads;     /* --threads */
    uint32_t request, response; /* bytes per message */
    double duration;      /* measured seconds */
    double warm;          /* unmeasured seconds after every flow is up */
    uint32_t sockbuf;     /* hotpath TCP: sndbuf and rcvbuf of every connection */
    int cpus[RR_MAX_CPUS];
    int ncpus;            /* 0: no pinning */
};

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
#define RR_HIST_N ((64 - 3) * RR_HIST_SUB)
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

/* Phases, set by the coordinating thread (a shared mapping for the kernel's
 * two processes). */
enum { RR_SETUP = 0, RR_WARM, RR_MEASURE, RR_STOP };

/* What one worker thread measured over the window. */
struct rr_thr_result {
    uint64_t txns;        /* transactions completed (client) / served (server) in the window */
    uint64_t timeouts;    /* UDP requests resent after 1 s without an answer */
    double cpu_s;         /* CLOCK_THREAD_CPUTIME_ID over the window */
    double win_s;         /* the thread's own window */
};

/* The outcome of a run, either link. */
struct rr_result {
    unsigned flows_reached;
    uint64_t txns, served, timeouts;
    double seconds;       /* measured window */
    double cpu_client_s, cpu_server_s;
    double setup_s;       /* to establish every flow */
    double ticks_per_us;
    struct rr_hist hist;
    char note[400];       /* why fewer flows, or a failure */
    /* configuration reported (mem) */
    uint32_t pool_bufs, ring_size, listen_ports, max_conns;
    /* kernel: processes (client and server) and threads in all */
    unsigned processes, threads_used;
};

/* Ticks of tool_ticks() per microsecond, measured over ~20 ms. */
double rr_ticks_per_us(void);

/* The phase watcher of a worker: snapshot CPU and counters at the start and
 * end of the window. Returns true when the thread should stop. */
struct rr_window {
    int seen;
    double t0, c0;
    uint64_t n0, to0;
};
bool rr_window_step(struct rr_window *w, int phase, uint64_t txns, uint64_t timeouts, struct rr_thr_result *out);

int rr_mem_run(const struct rr_opts *o, struct rr_result *r);
int rr_kernel_run(const struct rr_opts *o, struct rr_result *r);

/* Sleep for s seconds. */
void rr_sleep(double s);

#endif
