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
int cmd_gen(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_connect(int argc, char **argv);
int cmd_rr(int argc, char **argv);
int cmd_layout(int argc, char **argv);

/* ---- benchmarks: each is a table entry of bench.c ---- */
struct bench_opts {
    bool json;    /* JSON on stdout instead of a table */
    bool quick;   /* fewer repetitions (demo, smoke tests) */
    int reps;     /* repetitions per measurement, 0 = default */
    int cpu;      /* CPU to pin to, -1 = leave */
    FILE *json_out; /* also write JSON here when set (demo report) */
    void (*progress)(void *ctx, int done, int total, const char *what);
    void *progress_ctx;
    const char *iface; /* benchmarks on a real interface; NULL: make a veth pair */
};
int bench_cksum(const struct bench_opts *o, FILE *table);
int bench_pool(const struct bench_opts *o, FILE *table);
int bench_txcomp(const struct bench_opts *o, FILE *table);
int bench_afxdp(const struct bench_opts *o, FILE *table);
int bench_udp(const struct bench_opts *o, FILE *table);
int bench_tcp_stream(const struct bench_opts *o, FILE *table);
int bench_tcp_rr(const struct bench_opts *o, FILE *table);

/* Peers of the checksum benchmark. */
uint32_t hp_peer_naive(const void *buf, size_t len, uint32_t sum);
uint32_t hp_peer_unroll64(const void *buf, size_t len, uint32_t sum);
#ifdef HP_HAVE_DPDK
uint32_t hp_peer_dpdk_cksum_baseline(const void *buf, size_t len, uint32_t sum);
uint32_t hp_peer_dpdk_cksum_native(const void *buf, size_t len, uint32_t sum);
#endif

/* Peers of the pool benchmark: DPDK's rte_mempool and rte_mbuf (peers/dpdk_mempool.c).
 * init starts EAL once per process; it returns 0, or -errno with *why set. */
#ifdef HP_HAVE_DPDK
int hp_peer_dpdk_init(const char **why);
const char *hp_peer_dpdk_version(void);
void *hp_peer_dpdk_pool_create(const char *name, unsigned n, unsigned elt_size, unsigned cache);
void hp_peer_dpdk_pool_free(void *mp);
const char *hp_peer_dpdk_pool_ops(void *mp);
unsigned hp_peer_dpdk_pool_avail(void *mp);
int hp_peer_dpdk_thread_register(void);
void hp_peer_dpdk_thread_unregister(void);
int hp_peer_dpdk_cache_size(void *mp);
void hp_peer_dpdk_cache_flush(void *mp);
int hp_peer_dpdk_get(void *mp, void **obj);
void hp_peer_dpdk_put(void *mp, void *obj);
int hp_peer_dpdk_get_bulk(void *mp, void **objs, unsigned n);
void hp_peer_dpdk_put_bulk(void *mp, void *const *objs, unsigned n);
/* DPDK's packet buffers (rte_mbuf) in an rte_pktmbuf_pool_create pool; the
 * pool calls above (free, ops, avail, cache_size, cache_flush) apply too. */
void *hp_peer_dpdk_mbuf_pool_create(const char *name, unsigned n, unsigned data_room, unsigned cache);
unsigned hp_peer_dpdk_pool_elt_size(void *mp);
unsigned hp_peer_dpdk_mbuf_data_room(void *mp);
unsigned hp_peer_dpdk_mbuf_headroom(void);
void *hp_peer_dpdk_mbuf_alloc(void *mp);
int hp_peer_dpdk_mbuf_alloc_bulk(void *mp, void **mbufs, unsigned n);
void hp_peer_dpdk_mbuf_free(void *m);
void hp_peer_dpdk_mbuf_free_bulk(void **mbufs, unsigned n);
void *hp_peer_dpdk_mbuf_append(void *m, unsigned len);
#endif

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
