/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared declarations of the hotpath command: subcommands, timing, progress display, reports. */
#ifndef HOTPATH_TOOL_H
#define HOTPATH_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- subcommands (one file each) ---- */
int cmd_bench(int argc, char **argv);
int cmd_demo(int argc, char **argv);

/* ---- benchmarks: each is a table entry of bench.c ---- */
struct bench_opts {
    bool json;    /* JSON on stdout instead of a table */
    bool quick;   /* fewer repetitions (demo, smoke tests) */
    int reps;     /* repetitions per measurement, 0 = default */
    int cpu;      /* CPU to pin to, -1 = leave */
    FILE *json_out; /* also write JSON here when set (demo report) */
    void (*progress)(void *ctx, int done, int total, const char *what);
    void *progress_ctx;
};
int bench_cksum(const struct bench_opts *o, FILE *table);

/* Peers of the checksum benchmark. */
uint32_t hp_peer_naive(const void *buf, size_t len, uint32_t sum);
uint32_t hp_peer_unroll64(const void *buf, size_t len, uint32_t sum);
#ifdef HP_HAVE_DPDK
uint32_t hp_peer_dpdk_cksum_baseline(const void *buf, size_t len, uint32_t sum);
uint32_t hp_peer_dpdk_cksum_native(const void *buf, size_t len, uint32_t sum);
#endif

/* ---- utilities (util.c) ---- */
/* Cycle counter: the TSC on x86 (what DPDK's perf tests report), the
 * virtual counter elsewhere. */
uint64_t tool_ticks(void);
const char *tool_ticks_unit(void);
/* Pin the calling thread to cpu; returns 0 or -errno. */
int tool_pin(int cpu);
int tool_ncpus(void);
/* Size in bytes of a function symbol of this executable, from its symbol
 * table; -1 when unknown (stripped binary or no libelf). */
long tool_symbol_size(const char *name);
/* How this binary was compiled, for reports. */
const char *tool_build_flags(void);
const char *tool_compiler(void);
double tool_median(double *v, int n);
/* "12.3", formatted into one of a few rotating static buffers. */
const char *tool_fmt(const char *fmt, double v);
/* An error message naming the command, to stderr. Returns 2 (usage). */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a --cpu argument (-1 or an online CPU); on error prints it and
 * returns 2 (usage). */
int tool_parse_cpu(const char *cmd, const char *arg, int *cpu);

/* Progress display: a bar redrawn in place on a terminal, a line every 10%
 * otherwise. */
struct progress {
    const char *label;
    bool tty;
    int last_decile;
    double t0;
};
void progress_init(struct progress *p, const char *label);
void progress_update(void *p, int done, int total, const char *what);
void progress_done(struct progress *p);

#endif
