/* SPDX-License-Identifier: BSD-3-Clause */
/* The txcomp experiment's results, shared by `hotpath bench txcomp` and the demo. */
#ifndef HOTPATH_TOOL_BENCH_TXCOMP_H
#define HOTPATH_TOOL_BENCH_TXCOMP_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"
#include "bench_pool.h"
#include "tool.h"

#define TXCOMP_NPOL 3 /* local, defer, adaptive */

struct txcomp_row {
    const char *link;
    bool ok;
    char why[200];
    double mpps[TXCOMP_NPOL];   /* median rate of the completion thread's timed groups */
    double cpu_ns[TXCOMP_NPOL]; /* CPU ns per packet, both threads (median) */
    double one_core_mpps;       /* mem: txonly without the second thread */
    /* The policies slice by slice, paired within each round. */
    int better; /* 0: local, 1: defer: the faster fixed one */
    struct pool_summary a_l, a_d, d_l, a_best;
    struct pool_pair pairs[POOL_MAX_PAIRS]; /* the last run's */
    int npairs;
    uint64_t tx_dropped; /* frames the link dropped (all runs) */
    double warm_max_s;   /* the longest warm-up ADAPTIVE took */
};

struct txcomp_report {
    int reps, min_reps, max_reps, rounds;
    double warmup_s, warm_max_s, settle_s, slice_s;
    int nrows;
    struct txcomp_row rows[2]; /* afxdp, mem */
};

void txcomp_run(const struct bench_opts *o, struct txcomp_report *rep);
void txcomp_print_header(const struct txcomp_report *rep, FILE *f);
void txcomp_print_table(const struct txcomp_report *rep, FILE *f);
/* Goal lines (markdown list items with md); returns how many were missed. */
int txcomp_goals(const struct txcomp_report *rep, FILE *f, bool md);
/* One line: the goals' numbers, for reports of several runs. */
void txcomp_print_summary(const struct txcomp_report *rep, FILE *f);
void txcomp_print_json(const struct txcomp_report *rep, FILE *f);

#endif
