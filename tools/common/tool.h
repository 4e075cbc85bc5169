/* SPDX-License-Identifier: BSD-3-Clause */
/* What the command, the benchmarks and the developer tools share: timing, pinning, parsing, namespaces, progress, digests. */
#ifndef HOTPATH_TOOL_H
#define HOTPATH_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "netns.h"

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
/* Room for element n of the array *pv (of elt-byte elements, *cap of
 * them): grown to twice its capacity (first, the first time) when full.
 * 0, or -ENOMEM (the array as it was). */
int tool_grow(void *pv, size_t *cap, size_t n, size_t elt, size_t first);
/* The median of v[0..n-1] (the harness's hb_median; v is left as it was). */
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

/* ---- what the command and the benchmarks both send and echo ---- */
/* The UDP test frame (frame.c): Ethernet dst <- src, IPv4 198.18.0.1 ->
 * 198.18.0.2, UDP 9 -> 9 (discard), a counting payload; both checksums
 * right, so that a receiving kernel or tshark sees a valid packet. size is
 * the frame without FCS, 42 .. 9014. */
void tool_udp_frame(uint8_t *f, unsigned size, const uint8_t dst[6], const uint8_t src[6]);
/* Echo every datagram queued on u (echo.c): each received buffer goes back
 * to its sender. Returns how many went back. */
struct hp_udp_sock;
uint64_t tool_udp_echo(struct hp_udp_sock *u);

/* ---- JSON through jansson (json.c) ---- */
/* v rounded to `decimals` places, as a JSON number; null when not finite. */
json_t *tool_json_num(double v, int decimals);
/* v with `digits` significant digits, as a JSON number; null when not finite. */
json_t *tool_json_sig(double v, int digits);
/* s as a JSON string; null when s is NULL or empty. */
json_t *tool_json_str_or_null(const char *s);
/* Add "cpu", "compiler" and "flags": where and how this binary measured. */
void tool_json_build(json_t *obj);
/* Write v and a newline to f the way the tool writes all its JSON (keys in
 * insertion order; indented by 2 when pretty, else on one line). 0 or -1. */
int tool_json_write(const json_t *v, FILE *f, bool pretty);
/* The first JSON object in text (from its first '{'; what follows it is
 * ignored). NULL when there is none or it is malformed. */
json_t *tool_json_find(const char *text);
/* s as a JSON string, written to f. Only for the files that still write
 * JSON with printf (bench_pool.c, bench_txcomp.c, connect.c, serve.c, the
 * pool experiment of demo.c): new code builds a json_t. */
void tool_json_str(FILE *f, const char *s);
/* The number under key in obj (integer or real) into *v; false when absent. */
bool tool_json_get_num(const json_t *obj, const char *key, double *v);

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
