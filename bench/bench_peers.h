/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench peers`: hotpath, lwIP and smoltcp on the same workloads and the same harness, in one run (the report, reusable by the demo). */
#ifndef HOTPATH_BENCH_PEERS_H
#define HOTPATH_BENCH_PEERS_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"

struct peers_report;

/* Run every selected stack and workload, reps times, rounds interleaved.
 * Stacks that are not built are skipped with the reason. NULL when out of
 * memory. Environment (for profiling one cell, scripts/peers_profile.py):
 * HP_PEERS_STACKS=hotpath,lwip,smoltcp  HP_PEERS_WORKLOADS=tcp_rr_1,...
 * HP_PEERS_SECONDS=S (the measured window of each run). */
struct peers_report *peers_report_run(const struct bench_opts *o);
void peers_report_free(struct peers_report *r);

/* The machine, the build and each stack's version and set-up. */
void peers_print_header(const struct peers_report *r, FILE *f);
/* The table: one row per workload, a column per stack, and hotpath against
 * the better peer. md: a Markdown table. */
void peers_print_table(const struct peers_report *r, FILE *f, bool md);
/* The goals, met or missed; returns how many were missed. */
int peers_print_goals(const struct peers_report *r, FILE *f, bool md);
/* {"results": [{"stack", "workload", "value", "unit", ...}], "goals": [...], ...} */
void peers_print_json(const struct peers_report *r, FILE *f);
/* Run argv (argv[0] a path) with its stdout into *out (malloc'd, NUL-ended),
 * pinned to cpu (-1: not), killed after 10 minutes. 0 when it exited 0, or
 * -1 with why. */
int peers_child_output(char *const argv[], int cpu, char **out, char *why, size_t len);

/* Whether every hotpath row was measured. */
bool peers_report_ok(const struct peers_report *r);

#endif
