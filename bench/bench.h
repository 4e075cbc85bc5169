/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath bench: the benchmarks, each a table entry of bench.c, and the peers they run beside hotpath. */
#ifndef HOTPATH_BENCH_H
#define HOTPATH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct bench_opts {
    bool json;      /* JSON on stdout instead of a table */
    bool quick;     /* fewer repetitions (demo, smoke tests) */
    int reps;       /* repetitions per measurement, 0 = default */
    int cpu;        /* CPU to pin to, -1 = leave */
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
int bench_paths(const struct bench_opts *o, FILE *table);
int bench_peers(const struct bench_opts *o, FILE *table);
int bench_loop(const struct bench_opts *o, FILE *table);
int bench_memif(const struct bench_opts *o, FILE *table);
int bench_apps(const struct bench_opts *o, FILE *table);

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
void *hp_peer_dpdk_mbuf_pool_create(const char *name, unsigned n, unsigned data_room,
                                    unsigned cache);
unsigned hp_peer_dpdk_pool_elt_size(void *mp);
unsigned hp_peer_dpdk_mbuf_data_room(void *mp);
unsigned hp_peer_dpdk_mbuf_headroom(void);
void *hp_peer_dpdk_mbuf_alloc(void *mp);
int hp_peer_dpdk_mbuf_alloc_bulk(void *mp, void **mbufs, unsigned n);
void hp_peer_dpdk_mbuf_free(void *m);
void hp_peer_dpdk_mbuf_free_bulk(void **mbufs, unsigned n);
void *hp_peer_dpdk_mbuf_append(void *m, unsigned len);
#endif

#endif
