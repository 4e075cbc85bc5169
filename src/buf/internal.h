/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the buf layer: pool internals shared by pool.c and buf.c. */
#ifndef HOTPATH_BUF_INTERNAL_H
#define HOTPATH_BUF_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <hotpath/buf.h>
#include <hotpath/cacheline.h>
#include <hotpath/pool.h>

/* Alien frees staged for one owner are pushed to it this many at a time. */
#define HP__DEFER_BATCH 32

/* A thread's counters in one pool. Only the thread writes them, with plain
 * relaxed load+store (no locked instruction); anyone may read them. */
struct hp__counters {
    _Atomic uint64_t allocs, frees, alien_frees, deferred, defer_overflows, defer_taken, refills,
        flushes, ring_ops, errors;
};

static inline void hp__count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* A batch of alien frees for one owner. It lives in the data room of its
 * first buffer (which is free): the owner reads the pointers from a few
 * contiguous lines, instead of chasing a list through every buffer's
 * metadata, one dependent cache miss per buffer. The owner's queue holds
 * the batches' first buffers. */
struct hp__batch {
    uint32_t n;
    uint32_t pad;
    struct hp_buf *objs[HP__DEFER_BATCH];
};

/* The batch a thread is filling for one owner. */
struct hp__stage {
    struct hp_buf *head; /* first buffer: holds the batch */
    uint32_t n;
};

/* One thread's cache in one pool: touched by that thread only (but for the
 * counters, which others read). */
struct hp__cache {
    HP_CACHELINE_GROUP_BEGIN(cache_hot)
    uint32_t len;       /* buffers in objs */
    uint32_t size;      /* the pool's cache_size: flush above it */
    uint16_t tid;
    uint8_t net_freer;  /* ADAPTIVE: this thread frees more than it allocates (1 until seen) */
    uint8_t contended;  /* ADAPTIVE: this thread's shared-ring operations had to retry */
    uint64_t win_allocs, win_frees; /* ADAPTIVE: the counters at the last look */
    uint64_t stage_mask;            /* owners with staged alien frees */
    uint8_t route[HP_MAX_THREADS];  /* ADAPTIVE: 1 = defer to that owner */
    HP_CACHELINE_GROUP_END(cache_hot)
    struct hp__counters c;
    uint64_t win_ring_ops, win_retries; /* ADAPTIVE: shared-ring use at the last look */
    struct hp__stage stage[HP_MAX_THREADS];
    struct hp_buf *objs[]; /* 2 * size slots */
};

/* For tests: count n more contended shared-ring operations on this thread
 * (ADAPTIVE's signal; see adapt() in pool.c). */
void hp__ring_retries_add(uint64_t n);

/* Bounded multi-producer multi-consumer ring of buffer pointers, after the
 * classic head/tail scheme: reserve with a CAS on head, copy, then publish
 * by moving tail in order. */
struct hp__ring {
    uint32_t size, mask;
    uint32_t cap; /* most entries held at once (<= size - 1) */
    _Alignas(HP_CACHELINE_SIZE) _Atomic uint32_t prod_head;
    _Atomic uint32_t prod_tail;
    _Alignas(HP_CACHELINE_SIZE) _Atomic uint32_t cons_head;
    _Atomic uint32_t cons_tail;
    _Alignas(HP_CACHELINE_SIZE) struct hp_buf *slots[];
};

/* What other threads share about each owner. */
struct hp__owner {
    struct hp__ring *dq;    /* batches deferred to this owner (its capacity is the bound) */
    _Atomic uint8_t alive;  /* the thread holding this number uses hotpath */
    _Atomic uint8_t freer;  /* ADAPTIVE: it frees clearly more than it allocates */
} __attribute__((aligned(HP_CACHELINE_SIZE)));

struct hp_pool {
    HP_CACHELINE_GROUP_BEGIN(pool_hot)
    unsigned char *region;   /* the buffers */
    unsigned char *region_end;
    uint32_t elt_size;       /* metadata + data room */
    uint32_t data_room, headroom;
    uint32_t cache_size;
    int32_t defer_max;
    uint32_t batch_max;      /* buffers per deferred batch: 0 if rooms are too small */
    uint64_t elt_recip;      /* ceil(2^32 / elt_size): exact chunk check without a division */
    struct hp_buf tmpl;      /* line 0 of a fresh buffer, but owner */
    _Atomic int policy;      /* enum hp_alien_policy */
    struct hp__ring *ring;
    HP_CACHELINE_GROUP_END(pool_hot)
    struct hp__cache *_Atomic caches[HP_MAX_THREADS];
    struct hp__owner owners[HP_MAX_THREADS];
    /* Threads without a number (more than HP_MAX_THREADS) use the ring
     * directly; their counts are shared. */
    _Atomic uint64_t nocache_allocs, nocache_frees, nocache_errors;
    uint32_t n;
    size_t region_len;
    bool own_region, huge;
    int slot; /* in the registry */
    char name[32];
};

/* Give one buffer (a single segment, refcnt already dropped to zero) back
 * to its pool; called by buf.c. */
void hp__pool_put(struct hp_buf *b);
/* The same for n buffers of pool p, or for one buffer of pool p. */
void hp__pool_put_bulk(struct hp_pool *p, struct hp_buf *const *bufs, unsigned n);
void hp__pool_put_one(struct hp_pool *p, struct hp_buf *b);
#define HP__MAX_POOLS 64
extern struct hp_pool *_Atomic hp__registry[HP__MAX_POOLS];
/* The registry slot of the pool this thread freed into last: a hint. */
extern _Thread_local int hp__last_slot __attribute__((tls_model("initial-exec")));

/* Scan the registry for the pool whose region holds b (and remember it). */
struct hp_pool *hp__pool_lookup(const void *b);

/* Find the pool whose region holds b's metadata; NULL for a foreign
 * pointer. Reports nothing. Most frees hit the pool of the previous one: the
 * remembered slot is only a hint, and the pool is whatever the registry holds
 * there now (it may have been destroyed), read before it is dereferenced. */
static inline struct hp_pool *hp__pool_of(const void *b)
{
    const unsigned char *p = b;
    int s = hp__last_slot;
    if (__builtin_expect(s >= 0, 1)) {
        struct hp_pool *l = atomic_load_explicit(&hp__registry[s], memory_order_acquire);
        if (__builtin_expect(l && p >= l->region && p + sizeof(struct hp_buf) <= l->region_end, 1))
            return l;
    }
    return hp__pool_lookup(b);
}
/* Report a bad free (double free, foreign pointer, refcount underflow) and
 * count it. */
void hp__pool_report(struct hp_pool *pool, const void *b, const char *what);
/* The calling thread's number, assigned on first use; -1 if none left. */
int hp__tid(void);

#endif
