/* SPDX-License-Identifier: BSD-3-Clause */
/* What `hotpath demo` and its experiments share: the report being written, the layout experiment's options, running a child. */
#ifndef HOTPATH_TOOL_DEMO_H
#define HOTPATH_TOOL_DEMO_H

#include <stdbool.h>
#include <stdio.h>

#define LAYOUT_MAX_FLOWS 16
#define LAYOUT_MAX_REPS  15

/* Options of the layout experiment; 0 / NULL: the sweep's default. */
struct layout_opts {
    bool full;              /* --full: the whole sweep of the seed */
    const char *chrono_bin; /* --chrono-binary PATH, or "none" */
    unsigned flows[LAYOUT_MAX_FLOWS];
    int nflows;              /* --flows LIST */
    int families;            /* --family: bit 0 IPv4, bit 1 IPv6 */
    double duration;         /* --duration S */
    int reps;                /* --reps N */
    const char *early_demux; /* --early-demux N|off for the hotpath runs, NULL: rr's default */
    double sim_duration;     /* --sim-duration: > 0 seconds, < 0 off, 0 the sweep's default */
};

struct demo_ctx {
    const char *dir; /* report directory */
    FILE *md;        /* report.md, open for appending sections */
    bool quick;
    int cpu;
    int missed; /* goals missed, over all experiments */
    struct layout_opts layout;
};

/* Open DIR/NAME for writing (an error printed when it cannot be). */
FILE *report_file(struct demo_ctx *d, const char *name);

/* Run argv[0] with argv; its standard output (up to 64 KiB) into *out (to
 * free), standard error into a temporary file whose first line explains a
 * failure. The child is killed after timeout_s seconds. 0 when it exited 0,
 * else -1 with err set. */
int run_child(char *const argv[], double timeout_s, char **out, char *err, size_t errlen);

/* A script of scripts/ by NAME: in the source tree, else where `make
 * install` put it. NULL when neither has it. A static buffer: the next call
 * reuses it. */
const char *find_data_script(const char *name);

/* The experiments (demo_layout.c: hot structures by cache line; demo_paths.c:
 * TCP through loss, reordering, ECN and a narrow link). 0 or -errno. */
int exp_layout(struct demo_ctx *d);
int exp_paths(struct demo_ctx *d);

#endif
