/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench apps`: unmodified redis, nginx/wrk and iperf3 on the kernel, with the server on hotpath, and with both ends on hotpath, in one run; the report the demo shows. */
#ifndef HOTPATH_BENCH_APPS_H
#define HOTPATH_BENCH_APPS_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"

/* The first three over the veth pair; then redis GET alone on one host,
 * no namespace: both ends on the kernel over loopback, and both on hotpath
 * over memif (shared memory between the two processes). */
enum {
    APPS_KERNEL,
    APPS_SERVER_HP,
    APPS_BOTH_HP,
    APPS_NVETH,
    APPS_KERNEL_LO = APPS_NVETH,
    APPS_BOTH_MEMIF,
    APPS_NCFG
};

/* Rounds of the alternated measurements (redis, wrk, the echo): at most. */
#define APPS_ROUNDS_MAX 7

/* One round's values of a result (missing: < 0). */
struct apps_sample {
    bool ok;
    double rps, p50_us, p99_us, cpu_s_per_req, proc_cpu_s_per_req;
    double busy[2];
};

/* One measurement: a workload in a configuration. Missing values are < 0.
 * redis and wrk run in rounds, every configuration once per round (a shared
 * machine drifts over minutes: alternating keeps the drift out of the
 * ratios); their values are the medians of the rounds, samp[] each round's. */
struct apps_result {
    const char *
        workload; /* "redis GET", "redis SET", "wrk 1 KiB", "iperf3", "echo native", "echo posix" */
    int cfg;      /* APPS_* */
    bool ok;
    double rps, gbps, p50_us, p99_us;
    double cpu_s_per_req;      /* the whole machine's busy CPU time (/proc/stat) per request */
    double proc_cpu_s_per_req; /* the server's and the client's processes only */
    double busy[2];            /* how busy the client's and the server's CPUs were, 0-1 */
    int nrounds;               /* rounds run (0: one plain run) */
    struct apps_sample samp[APPS_ROUNDS_MAX];
    char note[200];
};

#define APPS_MAX_RESULTS 24
#define APPS_MAX_GOALS   12

/* A goal of the issue, measured as a ratio in this run: of two alternated
 * results, the median of the rounds' ratios (each round's pair measured
 * minutes apart at most); otherwise the ratio of the two values. */
struct apps_goal {
    char text[160];
    double ratio, want;
    bool met, measured;
};

struct apps_report {
    char link[16];  /* the link kind the hotpath ends used */
    char note[256]; /* why something was skipped or changed */
    double secs;    /* per measurement */
    int server_cpu, client_cpu;
    bool nginx_file_cache; /* nginx's open_file_cache on (HP_BENCH_NGINX_FILE_CACHE=0: off) */
    struct apps_result res[APPS_MAX_RESULTS];
    int nres;
    struct apps_goal goals[APPS_MAX_GOALS];
    int ngoals;
};

/* Run everything (root: namespaces of its own). 0, 2 when it cannot run
 * here (r->note says why), or 1 on a failure. */
int apps_report_run(struct apps_report *r, const struct bench_opts *o);
void apps_report_print(const struct apps_report *r, FILE *f);
void apps_report_json(const struct apps_report *r, FILE *f);
const char *apps_cfg_name(int cfg);

#endif
