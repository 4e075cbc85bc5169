/* SPDX-License-Identifier: BSD-3-Clause */
/* The checksum benchmark's results, shared by `hotpath bench cksum` and `hotpath demo`. */
#ifndef HOTPATH_BENCH_CKSUM_H
#define HOTPATH_BENCH_CKSUM_H

#include <stdarg.h>

#include "base/internal.h"
#include "bench.h"
#include "harness.h"
#include "tool.h"

#define CKSUM_MAX_IMPLS 12
#define CKSUM_MAX_REPS  HB_MAX_REPS

struct cksum_impl {
    const char *name, *symbol, *note;
    hp__cksum_fn fn;
    long code_bytes; /* -1: unknown */
    bool wrong;      /* disagreed with the reference */
};

struct cksum_cell {
    size_t size;
    int offset;
    double cpb[CKSUM_MAX_IMPLS]; /* ticks per byte, per impl */
};

/* The copy and the sum (hp_cksum_copy) against the sum, then memcpy. */
#define CKSUM_COPY_CELLS 8
struct cksum_copy_cell {
    size_t size;
    bool cold;     /* source and destination out of the caches */
    double cpb[2]; /* ticks per byte: the sum then memcpy, hp_cksum_copy */
    bool wrong;    /* a sum or a copy differed */
};

struct cksum_report {
    const char *dispatched;
    struct cksum_impl impls[CKSUM_MAX_IMPLS];
    int nimpls;
    const char *skipped[CKSUM_MAX_IMPLS]; /* variants this CPU cannot run */
    int nskipped;
    bool no_dpdk;
    long entry_bytes; /* size of hp_cksum_partial */
    int reps, cpu_pinned;
    struct cksum_cell cells[8][2]; /* [size][offset] */
    struct cksum_copy_cell copy[CKSUM_COPY_CELLS];
    int ncopy;
    struct hb_goals goals;
    uint32_t sink;
};

int cksum_report_run(struct cksum_report *r, const struct bench_opts *o);
void cksum_report_goals(struct cksum_report *r);
int cksum_report_find(const struct cksum_report *r, const char *name);
void cksum_report_print_header(const struct cksum_report *r, FILE *f);
void cksum_report_print_table(const struct cksum_report *r, FILE *f);
/* The report as JSON (the demo writes it to cksum.json). */
json_t *cksum_report_json(const struct cksum_report *r);

#endif
