/* SPDX-License-Identifier: BSD-3-Clause */
/* What the command, the benchmarks and the developer tools share: timing, pinning, parsing, namespaces, progress, digests. */
#ifndef HOTPATH_TOOL_H
#define HOTPATH_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- temporary network namespaces (netns.c), root only ---- */
/* Two namespaces "hp-TAG-PID-a" / "-b" joined by a veth pair hpaN / hpbN, up,
 * IPv6 off, 198.18.0.1/24 and 198.18.0.2/24; removed by tool_netns_down, at
 * exit, and on SIGINT / SIGTERM. */
struct tool_netns {
    char ns[2][40];
    char ifname[2][16];
    bool up;
};
/* 0, -EPERM (not root), -ENOENT (no iproute2), -EIO (ip failed). */
int tool_netns_up(struct tool_netns *n, const char *tag);
void tool_netns_down(struct tool_netns *n);
/* Move the calling thread into side 0 or 1; 0 or -errno. */
int tool_netns_enter(const struct tool_netns *n, int side);
/* Back to the initial namespace (that of PID 1); 0 or -errno. */
int tool_netns_leave(void);

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
/* Seconds on CLOCK_MONOTONIC, and of this thread's CPU time. */
double tool_now_s(void);
double tool_thread_cpu_s(void);
/* "12.3", formatted into one of a few rotating static buffers. */
const char *tool_fmt(const char *fmt, double v);
/* An error message naming the command, to stderr. Returns 2 (usage). */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a byte count: "1000000", "64Ki", "1M", "2Gi". 0, or -1 when malformed. */
int tool_parse_bytes(const char *arg, uint64_t *out);

/* Parse a CPU list like "0,2-3" into cpus[0 .. max-1], each online.
 * @return the count (> 0), or -2 after printing a usage error. */
int tool_parse_cpu_list(const char *cmd, const char *arg, int *cpus, int max);

/* Write s as a JSON string (quotes and backslashes escaped). */
void tool_json_str(FILE *f, const char *s);

/* Parse a --cpu argument (-1 or an online CPU); on error prints it and
 * returns 2 (usage). */
int tool_parse_cpu(const char *cmd, const char *arg, int *cpu);

/* SHA-256 through OpenSSL's libcrypto (HP_HAVE_LIBCRYPTO). Without it
 * tool_sha256_new returns NULL, and update / final on NULL do nothing
 * (final writes ""). final frees the context. */
struct tool_sha256;
bool tool_sha256_available(void);
struct tool_sha256 *tool_sha256_new(void);
void tool_sha256_update(struct tool_sha256 *h, const void *p, size_t n);
void tool_sha256_final(struct tool_sha256 *h, char hex[65]);

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
