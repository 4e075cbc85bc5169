/* SPDX-License-Identifier: BSD-3-Clause */
/* The txcomp experiment's results, shared by `hotpath bench txcomp` and the demo. */
#ifndef HOTPATH_TOOL_BENCH_TXCOMP_H
#define HOTPATH_TOOL_BENCH_TXCOMP_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"
#include "tool.h"

#define TXCOMP_NPOL 3 /* local, defer, adaptive */

struct txcomp_row {
    const char *link;
    bool ok;
    char why[200];
    double mpps[TXCOMP_NPOL];   /* median */
    double cpu_ns[TXCOMP_NPOL]; /* CPU ns per packet, both threads */
    double one_core_mpps;       /* mem: txonly without the second thread */
};

struct txcomp_report {
    int reps;
    int nrows;
    struct txcomp_row rows[2]; /* afxdp, mem */
};

void txcomp_run(const struct bench_opts *o, struct txcomp_report *rep);
void txcomp_print_header(const struct txcomp_report *rep, FILE *f);
void txcomp_print_table(const struct txcomp_report *rep, FILE *f);
/* Goal lines (markdown list items with md); returns how many were missed. */
int txcomp_goals(const struct txcomp_report *rep, FILE *f, bool md);
void txcomp_print_json(const struct txcomp_report *rep, FILE *f);

#endif
