/* SPDX-License-Identifier: BSD-3-Clause */
/* The buffer-pool benchmark's results, shared by `hotpath bench pool` and `hotpath demo`. */
#ifndef HOTPATH_BENCH_POOL_H
#define HOTPATH_BENCH_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <hotpath/pool.h>

#include "bench.h"
#include "tool.h"

#define POOL_MAX_REPS 64
#define POOL_MAX_GOALS 16

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

struct pool_cell {
    bool ran;          /* measured (the row exists and did not fail) */
    double mops;       /* millions of buffers per second of wall time (median) */
    double ns_per_obj; /* CPU ns per buffer, all of the scenario's threads (median) */
};

/* Pool counters of a hotpath row's last repetition, per scenario. */
struct pool_counters {
    bool valid;
    uint64_t buffers; /* buffers freed over the whole run, warm-up included */
    struct hp_pool_stats st;
};

struct pool_report {
    struct pool_cell cells[POOL_NSCEN][POOL_NIMPLS];
    struct pool_counters counters[POOL_NSCEN][POOL_NIMPLS];
    bool have[POOL_NIMPLS];       /* row measured at all */
    char failed[POOL_NIMPLS][220]; /* why a row stopped, "" if it did not */
    bool two_threads;             /* pipeline and crossed ran (2 CPUs) */
    /* the setup */
    int reps;
    double warmup_s, measure_s;
    unsigned n_bufs, data_room, cache_size, bulk, fill, ring;
    int cpu_a, cpu_b; /* CPUs of the threads (-1: unpinned); local runs on cpu_a */
    bool pin_failed;
    bool hugepages;   /* a hotpath pool got huge pages (asked not to) */
    /* DPDK */
    char dpdk_version[64];
    char dpdk_note[300]; /* why the dpdk row is skipped, "" when it ran */
    char dpdk_ops[32];
    int dpdk_cache;      /* cache size every DPDK worker saw (-1: some had none) */
    int dpdk_lcores[2];  /* lcore ids given to the last DPDK workers (-1: none) */
    /* DPDK's packet buffers (the dpdk-mbuf row) */
    char mbuf_note[300]; /* why the dpdk-mbuf row is skipped, "" when it ran */
    char mbuf_ops[32];
    int mbuf_cache;      /* cache size every dpdk-mbuf worker saw (-1: some had none) */
    int mbuf_lcores[2];  /* lcore ids given to the last dpdk-mbuf workers (-1: none) */
    unsigned mbuf_elt_size;  /* bytes per mempool element: struct rte_mbuf + data room */
    unsigned mbuf_data_room; /* data room of each mbuf, headroom included */
    unsigned mbuf_headroom;  /* RTE_PKTMBUF_HEADROOM */
    uint64_t alloc_failures[POOL_NSCEN][POOL_NIMPLS]; /* retried allocations (pool empty) */
    int retried;          /* measurements repeated: a worker waited for its CPU */
    double max_disturbed; /* largest such share of a window among the kept ones */
    struct {
        char text[260];
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
void pool_report_print_json(const struct pool_report *r, FILE *f);

#endif
