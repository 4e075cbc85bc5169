/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffer pools: fixed-size buffers, per-thread caches, and a run-time choice of where alien frees go. */
#ifndef HOTPATH_POOL_H
#define HOTPATH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/buf.h>
#include <hotpath/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A pool holds a fixed number of buffers in one memory region. Each thread
 * that allocates or frees has its own cache in every pool (no atomic
 * operation on the fast path); caches refill from and flush to a shared
 * lock-free ring, half a cache at a time.
 *
 * An "alien" free is the free of a buffer by a thread other than the one
 * that allocated it (its owner). Where it goes is the pool's alien policy:
 * see enum hp_alien_policy and docs/knobs.md.
 *
 * Threads are numbered by hp_thread_id() on first use, at most
 * HP_MAX_THREADS at once; a thread that is done with hotpath calls
 * hp_thread_exit() (or simply exits: a destructor does it).
 */

#define HP_MAX_THREADS 64

/** Where a buffer goes when a thread other than its owner frees it. */
enum hp_alien_policy {
    /** Into the freeing thread's cache, like any free (DPDK, VPP, and Linux
     * with net.core.napi_consume_skb_defer=0). */
    HP_ALIEN_LOCAL = 1,
    /** Back to the owner: queued in batches on the owner's list, which the
     * owner takes back when it next refills its cache (no signal is sent).
     * Bounded by defer_max per owner, like net.core.skb_defer_max: past it,
     * the buffer is freed locally. */
    HP_ALIEN_DEFER = 2,
    /** Chosen per pair of threads (freer, owner) by measurement (the
     * default): each pair tries both policies in short epochs, keeps the one
     * under which it frees the owner's buffers faster, and tries again now
     * and then; pairs that cannot be measured follow a contention signal.
     * hp_pool_pair_stats() shows each pair's choice; docs/knobs.md has the
     * rule. */
    HP_ALIEN_ADAPTIVE = 3,
};

/**
 * The default per-thread cache (hp_pool_config.cache_size 0). A cache holds
 * at most this many buffers and goes back to half of it when it refills or
 * flushes; what a thread frees and allocates again within that swing never
 * leaves it. Buffers that do go through the shared ring come back from its
 * far end, the least recently used, usually cold in every cache: with 256,
 * one bulk TCP flow at 256 KiB windows (some 450 buffers in use, swinging
 * by 200 each round trip) took 60% of its buffers from the ring and ran at
 * 0.6x its speed with 512 (docs/experiments.md). DPDK's largest cache is 512
 * as well (RTE_MEMPOOL_CACHE_MAX_SIZE).
 */
#define HP_POOL_CACHE_DEFAULT 512

struct hp_pool_config {
    const char *name;    /**< for messages and stats (copied); NULL: "pool" */
    uint32_t n_bufs;     /**< number of buffers (> 0); ignored with mem */
    uint32_t data_room;  /**< bytes of data room per buffer, headroom included; 0: 2048 */
    uint32_t headroom;   /**< initial data offset of a new buffer; 0: HP_BUF_HEADROOM */
    uint32_t cache_size; /**< per-thread cache; 0: HP_POOL_CACHE_DEFAULT (512); at most 4096 */
    uint32_t defer_max;  /**< bound of each owner's deferred list; 0: 128 */
    int alien_policy;    /**< enum hp_alien_policy, or 0 (or -1) for the default:
                            * HP_ALIEN_POLICY from the environment, else HP_ALIEN_ADAPTIVE.
                            * A zeroed configuration therefore gets the default. */
    /**
     * Caller-provided memory (for example an AF_XDP UMEM), or NULL for the
     * pool's own (huge pages when available, normal pages otherwise). The
     * memory is cut into mem_len / chunk chunks of `chunk` bytes, each holding
     * a buffer's metadata and data room (data_room = chunk - HP_BUF_META_SIZE).
     * It must be 64-byte aligned and outlive the pool.
     */
    void *mem;
    size_t mem_len;
    uint32_t chunk; /**< chunk size with mem: a multiple of 64, >= 256 */
    unsigned flags; /**< HP_POOL_F_* */
};

#define HP_POOL_F_NO_HUGEPAGES 0x1 /**< never try huge pages */
/**
 * Fault the pool's own memory in at creation (every page written once), so
 * that no buffer's first use takes a page fault. By default the pages come
 * when buffers are first taken: a small RSS for a large pool that is mostly
 * idle, but with transparent huge pages each first touch clears 2 MiB in the
 * data path (hundreds of microseconds), which a server that meets a burst on
 * many flows at once cannot afford (docs/experiments.md, 200,000 flows).
 * Ignored with caller-provided memory.
 */
#define HP_POOL_F_POPULATE 0x2

/**
 * Create a pool.
 * @return the pool, or NULL with errno: EINVAL (a bad field, named by hp_last_error()),
 *         ENOMEM (no memory), ENOSPC (too many pools).
 */
HP_API struct hp_pool *hp_pool_create(const struct hp_pool_config *cfg);

/**
 * Destroy a pool. Every buffer must be back (hp_pool_in_use() == 0), and no
 * other thread may use the pool during the call.
 * @return 0, or -EBUSY (nothing freed) when buffers are still out: each one (up
 *         to 16) is logged (log.h) with its address and the pool's name.
 */
HP_API int hp_pool_destroy(struct hp_pool *pool);

/** The pool's name. */
HP_API const char *hp_pool_name(const struct hp_pool *pool);

/** Buffers allocated and not yet freed, over all threads (exact when no
 * thread is allocating or freeing at the same time). */
HP_API long hp_pool_in_use(const struct hp_pool *pool);

/** hp_pool_in_use() summed over every live pool (for leak checks). */
HP_API long hp_pools_in_use(void);

/** Number of buffers in the pool, and the size of each one's data room. */
HP_API uint32_t hp_pool_size(const struct hp_pool *pool);
HP_API uint32_t hp_pool_data_room(const struct hp_pool *pool);

/** Whether the pool's region is backed by huge pages. */
HP_API bool hp_pool_hugepages(const struct hp_pool *pool);

/**
 * Switch the alien policy. Safe at any time, while other threads allocate and
 * free: each free follows the policy it reads, and buffers already deferred
 * are still taken back by their owners.
 * @return 0, or -EINVAL for a value outside enum hp_alien_policy.
 */
HP_API int hp_pool_set_alien_policy(struct hp_pool *pool, int policy);
HP_API enum hp_alien_policy hp_pool_alien_policy(const struct hp_pool *pool);

/** "local", "defer", "adaptive"; "(invalid)" for anything else. */
HP_API const char *hp_alien_policy_name(int policy);
/** Parse a name as above; @return the policy or -EINVAL. */
HP_API int hp_alien_policy_parse(const char *name);

/**
 * Return this thread's cached buffers, and the alien frees it has staged for
 * other owners, to the pool. Call before a thread stops using a pool for
 * good, or to measure exactly.
 */
HP_API void hp_pool_thread_flush(struct hp_pool *pool);

/** This thread's number (0 .. HP_MAX_THREADS-1), given on first use; -1 when
 * HP_MAX_THREADS threads already have one (such threads skip the caches). */
HP_API int hp_thread_id(void);

/** Flush this thread's caches in every pool and give up its number. */
HP_API void hp_thread_exit(void);

struct hp_pool_stats {
    uint64_t allocs;             /**< buffers allocated */
    uint64_t frees;              /**< buffers freed */
    uint64_t alien_frees;        /**< frees of buffers another thread allocated */
    uint64_t deferred;           /**< alien frees queued back to their owner */
    uint64_t defer_overflows;    /**< alien frees kept local because the owner's list was full */
    uint64_t defer_taken;        /**< deferred buffers an owner took back */
    uint64_t refills;            /**< cache refills */
    uint64_t flushes;            /**< cache flushes */
    uint64_t ring_ops;           /**< operations on the shared ring */
    uint64_t errors;             /**< double frees, foreign pointers, refcount underflows,
                               *   writes after free */
    uint64_t policy_switches;    /**< times ADAPTIVE moved a thread pair to the other policy */
    uint64_t written_after_free; /**< buffers found written after they were freed (checked
                                  *   only in HP_DEBUG builds: see docs/knobs.md) */
};

/** Counters summed over all threads (pool == NULL: nothing, -EINVAL). */
HP_API int hp_pool_stats(const struct hp_pool *pool, struct hp_pool_stats *out);
/** Counters of thread number tid; -EINVAL for a bad tid. */
HP_API int hp_pool_thread_stats(const struct hp_pool *pool, int tid, struct hp_pool_stats *out);

/** Where one thread's alien frees of another thread's buffers go. */
struct hp_pool_pair_stats {
    int freer;             /**< thread number of the thread that frees */
    int owner;             /**< thread number of the thread that allocated the buffers */
    int policy;            /**< HP_ALIEN_LOCAL or HP_ALIEN_DEFER: where the pair's alien frees go
                            *   (under ADAPTIVE: the policy it settled on; it may be trying
                            *   the other one for a few epochs) */
    bool measured;         /**< ADAPTIVE: chosen by measurement; false: by the contention
                            *   signal (nothing measured yet, or nothing measurable) */
    uint64_t alien_frees;  /**< buffers of owner that freer freed, under every policy */
    uint64_t switches;     /**< times ADAPTIVE moved the pair to the other policy */
    uint64_t explorations; /**< times ADAPTIVE measured both policies for the pair */
    double defer_gain;     /**< the last exploration: DEFER's rate over LOCAL's, minus 1
                            *   (0.05: DEFER 5% faster); 0 before the first */
};

/**
 * The thread pairs with alien frees in pool, freer-major order.
 * @param out room for max entries (NULL when max is 0: just count)
 * @return the number of pairs (may exceed max: only max are filled), or
 *         -EINVAL for a NULL pool (or out with max > 0). Exact when no thread
 *         frees at the same time.
 */
HP_API int hp_pool_pair_stats(const struct hp_pool *pool, struct hp_pool_pair_stats *out,
                              unsigned max);

#ifdef __cplusplus
}
#endif
#endif
