/* SPDX-License-Identifier: BSD-3-Clause */
/* The buffer-pool benchmark's results, shared by `hotpath bench pool`, `hotpath bench txcomp` (the paired statistics) and `hotpath demo`. */
#ifndef HOTPATH_BENCH_POOL_H
#define HOTPATH_BENCH_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <hotpath/pool.h>

#include "bench.h"
#include "tool.h"

#define POOL_MAX_REPS  64
#define POOL_MAX_GOALS 24
#define POOL_MAX_PAIRS 4

/* Rows: the three alien policies of one hotpath pool, then the peers. */
enum pool_impl {
    POOL_HP_LOCAL,
    POOL_HP_DEFER,
    POOL_HP_ADAPTIVE,
    POOL_DPDK,      /* raw rte_mempool: objects never touched */
    POOL_DPDK_MBUF, /* DPDK's packet buffers: rte_pktmbuf_alloc/free, metadata reset and checked */
    POOL_MALLOC,
    POOL_NIMPLS
};

/* Scenarios. */
enum pool_scenario {
    POOL_LOCAL_BULK1,  /* one thread: 32 single allocations, then 32 single frees */
    POOL_LOCAL_BULK32, /* one thread: alloc_bulk of 32, free_bulk of 32 */
    POOL_PIPELINE,     /* A allocates and fills, B frees, over an SPSC ring */
    POOL_CROSSED,      /* both allocate and fill, each frees the other's */
    POOL_NSCEN
};

/* A median with its spread: the 95% confidence interval of the median
 * (order statistics; min and max when there are too few samples for 95%). */
struct pool_summary {
    double med, lo, hi;
    int n;
    bool ci; /* lo, hi: a 95% interval; false: min and max */
};

/* Summarise v[0..n) (reordered). */
void pool_summarise(double *v, int n, struct pool_summary *out);
/* "1.023 [1.011, 1.030]" (or "[min 1.01, max 1.03]") into buf. */
const char *pool_summary_str(const struct pool_summary *s, char *buf, size_t len);
json_t *pool_summary_json(const struct pool_summary *s);

/* Which policy ADAPTIVE settled on for one thread pair, at the end of a run. */
struct pool_pair {
    char freer[8], owner[8]; /* the threads' roles ("A", "B", "tx", "compl") */
    int policy;              /* HP_ALIEN_LOCAL or HP_ALIEN_DEFER */
    bool measured;
    uint64_t alien_frees, switches, explorations;
    double defer_gain;
};

/* Keep the pairs of pool (whose threads had numbers tids[0..n) named
 * names[0..n)); returns how many were kept. */
int pool_pairs_of(struct hp_pool *pool, const int *tids, const char *const *names, int n,
                  struct pool_pair *out, int max);
/* One line per pair: "  adaptive settled: B frees A's: local (measured), 2 switches, ..." */
void pool_pairs_print(const struct pool_pair *p, int n, const char *indent, FILE *f);
json_t *pool_pairs_json(const struct pool_pair *p, int n);

/*
 * A meter for a benchmark thread that a main thread cuts into slices: the
 * main thread bumps a shared mark at each slice's ends, and the thread, once
 * per batch, notices (pool_meter_poll) and records its counters there. A
 * freeing thread also times groups of about `group` buffers with the cycle
 * counter (pool_meter_add). On a busy machine a thread (or the one feeding
 * it) loses its CPU for milliseconds now and then; the work around such a
 * stall makes one long group, while the time it runs makes many short ones,
 * so the median group gives the rate at which the threads work when they
 * run. The rates the benchmarks compare are these.
 */
struct pool_mark {
    uint64_t done, delay; /* the thread's count so far; run_delay (ns) */
    double wall, cpu;     /* seconds: CLOCK_MONOTONIC, the thread's CPU time */
    uint64_t ticks;       /* tool_ticks() */
    unsigned ngroups;     /* groups timed so far */
};

struct pool_meter {
    _Atomic unsigned *mark; /* the main thread's */
    unsigned seen, nmarks;  /* the last mark recorded; room */
    struct pool_mark *marks;
    uint32_t *groups; /* per group: ticks per buffer, times 256 */
    unsigned ngroups, max_groups, group, in_group;
    uint64_t group_t0;
};

/* Room for nmarks marks and a group every 0.5 us for secs; 0 or -ENOMEM. */
int pool_meter_init(struct pool_meter *m, _Atomic unsigned *mark, unsigned nmarks, double secs,
                    unsigned group);
void pool_meter_free(struct pool_meter *m);
void pool_meter_take(struct pool_meter *m, unsigned mark, uint64_t done);
void pool_meter_group(struct pool_meter *m);

/* Once per batch: record a new mark, with the count so far. */
static inline void pool_meter_poll(struct pool_meter *m, uint64_t done)
{
    unsigned k = atomic_load_explicit(m->mark, memory_order_acquire);
    if (__builtin_expect(k != m->seen, 0))
        pool_meter_take(m, k, done);
}

/* n more buffers freed (or sent). */
static inline void pool_meter_add(struct pool_meter *m, unsigned n)
{
    m->in_group += n;
    if (__builtin_expect(m->in_group >= m->group, 0))
        pool_meter_group(m);
}

/* Buffers per second in the median group between marks m0 and m1 (hz:
 * ticks per second); 0 without groups. scratch: room for max_groups. */
double pool_meter_rate(const struct pool_meter *m, unsigned m0, unsigned m1, double hz,
                       uint32_t *scratch);
/* Warm up while ADAPTIVE learns: at least min_s, then until every pair of
 * pool has settled (two explorations that kept its choice, two more for
 * each switch: its next exploration is then a long hold away), or max_s.
 * Returns the seconds. */
double pool_warm_adaptive(struct hp_pool *pool, double min_s, double max_s);
/* Ticks per second between marks m0 and m1. */
double pool_meter_hz(const struct pool_meter *m, unsigned m0, unsigned m1);

struct pool_cell {
    bool ran;          /* measured (the row exists and did not fail) */
    double mops;       /* millions of buffers per second of wall time (median) */
    double ns_per_obj; /* CPU ns per buffer, all of the scenario's threads (median) */
    /* This row's rate over a peer's, one ratio per repetition. */
    struct pool_summary vs[POOL_NIMPLS];
};

/* The three policies compared slice by slice within each repetition. */
struct pool_policies {
    bool ran;
    int better; /* POOL_HP_LOCAL or POOL_HP_DEFER: the faster fixed one */
    struct pool_summary a_l, a_d, d_l, a_best; /* rate ratios per round: adaptive/local... */
    struct pool_pair pairs[POOL_MAX_PAIRS];    /* the last run's, for the adaptive row */
    int npairs;
    /* What the pool did under each policy (all repetitions): hp_pool_stats
     * deltas over the measured slices, and the buffers freed in them. */
    struct hp_pool_stats st[3];
    uint64_t freed[3];
    double warm_max_s; /* the longest warm-up ADAPTIVE took (two threads) */
};

struct pool_report {
    struct pool_cell cells[POOL_NSCEN][POOL_NIMPLS];
    struct pool_policies pol[POOL_NSCEN];
    bool have[POOL_NIMPLS];        /* row measured at all */
    char failed[POOL_NIMPLS][220]; /* why a row stopped, "" if it did not */
    bool two_threads;              /* pipeline and crossed ran (2 CPUs) */
    /* the setup */
    int reps, min_reps, max_reps, rounds[2]; /* [0] one thread, [1] two */
    double warmup_s, warm_max_s, settle_s[2], slice_s[2];
    unsigned n_bufs, data_room, cache_size, bulk, fill, ring;
    int cpu_a, cpu_b; /* CPUs of the threads (-1: unpinned); local runs on cpu_a */
    bool pin_failed;
    bool hugepages;  /* a hotpath pool got huge pages (asked not to) */
    double cpu_wait; /* median share of a slice the busiest worker waited for its CPU */
    int retried;     /* runs measured again: a row had no valid slice */
    /* DPDK */
    char dpdk_version[64];
    char dpdk_note[300]; /* why the dpdk row is skipped, "" when it ran */
    char dpdk_ops[32];
    int dpdk_cache;     /* cache size every DPDK worker saw (-1: some had none) */
    int dpdk_lcores[2]; /* lcore ids given to the last DPDK workers (-1: none) */
    /* DPDK's packet buffers (the dpdk-mbuf row) */
    char mbuf_note[300]; /* why the dpdk-mbuf row is skipped, "" when it ran */
    char mbuf_ops[32];
    int mbuf_cache;          /* cache size every dpdk-mbuf worker saw (-1: some had none) */
    int mbuf_lcores[2];      /* lcore ids given to the last dpdk-mbuf workers (-1: none) */
    unsigned mbuf_elt_size;  /* bytes per mempool element: struct rte_mbuf + data room */
    unsigned mbuf_data_room; /* data room of each mbuf, headroom included */
    unsigned mbuf_headroom;  /* RTE_PKTMBUF_HEADROOM */
    uint64_t alloc_failures[POOL_NSCEN][POOL_NIMPLS]; /* retried allocations (pool empty) */
    struct {
        char text[300];
        bool met;
    } goals[POOL_MAX_GOALS];
    int ngoals;
};

const char *pool_impl_name(int impl);
const char *pool_scenario_name(int scenario);
int pool_report_run(struct pool_report *r, const struct bench_opts *o);
void pool_report_goals(struct pool_report *r);
void pool_report_print_header(const struct pool_report *r, FILE *f);
void pool_report_print_table(const struct pool_report *r, FILE *f);
/* The policy comparison and the pairs ADAPTIVE settled on. */
void pool_report_print_policies(const struct pool_report *r, FILE *f);
/* Two table rows (markdown with md): the policy ADAPTIVE settled on per
 * scenario ("*": the contention signal's choice, nothing measured), and
 * adaptive/better with its interval. */
void pool_report_print_settled(const struct pool_report *r, FILE *f, bool md);
/* One line: the goals' numbers, for reports of several runs. */
void pool_report_print_summary(const struct pool_report *r, FILE *f);
void pool_report_print_json(const struct pool_report *r, FILE *f);

#endif
