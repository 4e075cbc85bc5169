/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the buf layer: pool internals shared by pool.c, cache.c, adapt.c and buf.c. */
#ifndef HOTPATH_BUF_INTERNAL_H
#define HOTPATH_BUF_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <hotpath/buf.h>
#include <hotpath/cacheline.h>
#include <hotpath/pool.h>

/* Alien frees staged for one owner are pushed to it this many at a time. */
#define HP__DEFER_BATCH 32

/* ---- ADAPTIVE's rule for one (freer, owner) pair (adapt.c) -------------- */

/* Alien frees of one owner's buffers per epoch (tests shorten it with
 * hp__pool_set_epoch). At 80 Mbuf/s an epoch lasts 25 us. An epoch's
 * length is the median of its HP__SUBEPOCHS parts, times their number: a
 * part the freer (or the thread feeding it) was preempted in is an outlier
 * that does not count. */
#define HP__EPOCH         2048
#define HP__SUBEPOCHS     8
#define HP__AD_ROUNDS     2     /* paired LOCAL/DEFER epochs per block of an exploration */
#define HP__AD_BLOCKS     6     /* blocks at most, while the median leans but the rounds differ */
#define HP__AD_MARGIN_PPM 20000 /* the other policy must be 2% faster... */
#define HP__AD_HOLD_MIN   16    /* epochs on the choice after a switch or a doubt */
#define HP__AD_HOLD_MAX   2048  /* ...and at most, when explorations keep confirming it */
#define HP__AD_STALE_MAX  8     /* unmeasurable epochs in a row before falling back */

enum { HP__AD_FALLBACK, HP__AD_EXPLORE, HP__AD_EXPLOIT };

struct hp__adapt {
    uint8_t cur;     /* the chosen policy: HP_ALIEN_LOCAL or HP_ALIEN_DEFER */
    uint8_t route;   /* the policy of the current epoch (cur, or exploring) */
    uint8_t mode;    /* HP__AD_* */
    uint8_t step;    /* exploring: the epoch of the schedule */
    uint8_t pending; /* the last exploration favoured the other policy */
    uint8_t stale;   /* unmeasurable epochs in a row */
    uint8_t block;   /* exploring: the block of rounds */
    uint32_t hold;   /* exploiting: epochs left before the next exploration */
    uint32_t next_hold;
    int32_t gain_ppm; /* last exploration: DEFER's rate / LOCAL's - 1, in ppm (median) */
    uint32_t switches, explorations;
    uint32_t ticks[2][HP__AD_ROUNDS * HP__AD_BLOCKS]; /* measured epochs: [0] LOCAL, [1] DEFER */
};

/* A pair starts on the contention signal's choice (fallback). */
void hp__adapt_init(struct hp__adapt *a, int fallback);
/* The pair's epoch ended after `ticks` ticks (0: not measurable). Returns
 * the policy of the next epoch (HP_ALIEN_LOCAL or HP_ALIEN_DEFER); fallback
 * is the contention signal's choice, used where nothing can be measured. */
int hp__adapt_epoch(struct hp__adapt *a, uint64_t ticks, int fallback);

/* A cheap clock for epochs: the time-stamp counter where there is one. */
static inline uint64_t hp__ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* An epoch longer than this (about 25-100 ms; its typical part 1/8 of it)
 * measured a trickle or a stall, not a policy. */
#define HP__STALE_TICKS 100000000ull

/* ---- per-thread caches --------------------------------------------------- */

/* A thread's counters in one pool. Only the thread writes them, with plain
 * relaxed load+store (no locked instruction); anyone may read them. */
struct hp__counters {
    _Atomic uint64_t allocs, frees, deferred, defer_overflows, defer_taken, refills, flushes,
        ring_ops, errors, written_after_free;
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

/* ADAPTIVE's state for one owner, in the freeing thread's cache. */
struct hp__pair {
    struct hp__adapt a;
    uint64_t t0;                 /* ticks at the start of the part of the epoch */
    uint32_t gen;                /* the pool's policy generation then */
    uint32_t sub[HP__SUBEPOCHS]; /* the epoch's parts so far, in ticks */
    uint8_t nsub;
    uint8_t spoilt;                              /* the policy was switched during the epoch */
    uint32_t shown_switches, shown_explorations; /* of a's counts, added to pub_ already */
    /* What hp_pool_pair_stats() shows (others read it): the last state,
     * and counts over the pool's life (a departed thread's included). */
    _Atomic uint8_t pub_policy, pub_measured;
    _Atomic uint32_t pub_switches, pub_explorations;
    _Atomic int32_t pub_gain_ppm;
};

/* Bytes of line 0 that a fresh buffer takes from the template: the packet
 * fields, ol_flags .. l3_len (owner included), contiguous in the grouped
 * layout. */
#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO)
#define HP__TMPL_OFF offsetof(struct hp_buf, ol_flags)
#define HP__TMPL_LEN (offsetof(struct hp_buf, hp__group_end_hot) - HP__TMPL_OFF)
#else
#define HP__TMPL_OFF 0
#define HP__TMPL_LEN 40
#endif

/* One thread's cache in one pool: touched by that thread only (but for the
 * counters and the pairs' pub_ fields, which others read). */
struct hp__cache {
    HP_CACHELINE_GROUP_BEGIN(cache_hot)
    uint32_t len;  /* buffers in objs */
    uint32_t size; /* the pool's cache_size: flush above it */
    uint16_t tid;
    uint8_t net_freer; /* ADAPTIVE: this thread frees more than it allocates (1 until seen) */
    uint8_t contended; /* ADAPTIVE: this thread's shared-ring operations had to retry */
    uint32_t pad;
    uint64_t stage_mask; /* owners with staged alien frees */
    /* Line 0 of a fresh buffer from this thread: the pool's template with
     * owner = tid, copied in three wide stores. */
    _Alignas(8) unsigned char tmpl[HP__TMPL_LEN];
    HP_CACHELINE_GROUP_END(cache_hot)
    uint8_t route[HP_MAX_THREADS];               /* ADAPTIVE: 1 = defer this owner's buffers */
    _Atomic uint64_t pair_frees[HP_MAX_THREADS]; /* alien frees of each owner's buffers */
    uint64_t pair_mark[HP_MAX_THREADS];          /* ADAPTIVE: pair_frees ending the epoch */
    uint64_t pair_seen;                          /* owners whose buffers it freed under ADAPTIVE */
    struct hp__counters c;
    uint64_t win_allocs, win_frees;     /* ADAPTIVE: the counters at the last look */
    uint64_t win_ring_ops, win_retries; /* ADAPTIVE: shared-ring use at the last look */
    struct hp__stage stage[HP_MAX_THREADS];
    struct hp__pair pair[HP_MAX_THREADS];
    struct hp_buf *objs[]; /* 2 * size slots */
};

/* ---- the shared ring (pool.c) -------------------------------------------- */

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

/* Enqueue all n or none; dequeue up to n (returns how many). */
bool hp__ring_put(struct hp__ring *r, struct hp_buf *const *objs, uint32_t n);
uint32_t hp__ring_get(struct hp__ring *r, struct hp_buf **objs, uint32_t n);

/* Times this thread's shared-ring operations found another thread in the
 * way: ADAPTIVE's contention signal. Per thread, over all pools. */
extern _Thread_local uint64_t hp__ring_retries __attribute__((tls_model("initial-exec")));

/* For tests: count n more contended shared-ring operations on this thread. */
void hp__ring_retries_add(uint64_t n);

/* ---- the pool ------------------------------------------------------------ */

/* What other threads share about each owner. */
struct hp__owner {
    struct hp__ring *dq;   /* batches deferred to this owner (its capacity is the bound) */
    _Atomic uint8_t alive; /* the thread holding this number uses hotpath */
    _Atomic uint8_t freer; /* ADAPTIVE: it frees clearly more than it allocates */
} __attribute__((aligned(HP_CACHELINE_SIZE)));

struct hp_pool {
    HP_CACHELINE_GROUP_BEGIN(pool_hot)
    unsigned char *region; /* the buffers */
    unsigned char *region_end;
    uint64_t elt_inv;   /* chunk check (hp__at_chunk): inverse of elt_size's odd part */
    uint64_t elt_lim;   /* ... UINT64_MAX / elt_size */
    uint32_t elt_shift; /* ... trailing zero bits of elt_size */
    uint32_t elt_size;  /* metadata + data room */
    uint32_t data_room, headroom;
    uint32_t cache_size;
    int32_t defer_max;
    uint32_t batch_max; /* buffers per deferred batch: 0 if rooms are too small */
    _Atomic int policy; /* enum hp_alien_policy */
    uint32_t sub_epoch; /* ADAPTIVE: alien frees per part of an epoch */
    struct hp__ring *ring;
    HP_CACHELINE_GROUP_END(pool_hot)
    _Atomic uint32_t policy_gen; /* bumped by every policy switch: epochs across one are void */
    struct hp_buf tmpl;          /* line 0 of a fresh buffer, but owner */
    struct hp__cache *_Atomic caches[HP_MAX_THREADS];
    struct hp__owner owners[HP_MAX_THREADS];
    /* Threads without a number (more than HP_MAX_THREADS) use the ring
     * directly; their counts are shared. */
    _Atomic uint64_t nocache_allocs, nocache_frees, nocache_errors;
    /* Buffers taken out of the region so far, in address order, when the ring ran dry
     * (hp__pool_take_fresh): the rest of the region is untouched, no page of it faulted in. */
    _Atomic uint32_t fresh;
    uint32_t n;
    size_t region_len;
    bool own_region, huge;
    int slot; /* in the registry */
    char name[32];
};

#define HP__MAX_POOLS 64
extern struct hp_pool *_Atomic hp__registry[HP__MAX_POOLS];
/* The registry slot of the pool this thread freed into last: a hint. */
extern _Thread_local int hp__last_slot __attribute__((tls_model("initial-exec")));
/* This thread's number; -1: none left, -2: not asked yet. initial-exec: read
 * with one instruction, also from libhotpath.so (a general-dynamic access
 * would call __tls_get_addr on every free). */
extern _Thread_local int hp__my_tid __attribute__((tls_model("initial-exec")));

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

/* Whether off (bytes from the region's start) is a multiple of elt_size,
 * without a division: with e = 2^s d, d odd, and i the inverse of d modulo
 * 2^64, off is a multiple of e exactly when rotating off * i right by s
 * gives at most (2^64 - 1) / e (the divisibility test of Granlund and
 * Montgomery, rotated for even divisors; exact for every 64-bit off). */
static inline bool hp__at_chunk(uint64_t off, uint64_t inv, uint32_t shift, uint64_t lim)
{
    uint64_t x = off * inv;
    x = shift ? x >> shift | x << (64 - shift) : x;
    return x <= lim;
}

/* Report a bad free (double free, foreign pointer, refcount underflow) and
 * count it. */
void hp__pool_report(struct hp_pool *pool, const void *b, const char *what);
/* The calling thread's number, assigned on first use; -1 if none left. */
int hp__tid(void);

/* ---- cache.c ------------------------------------------------------------- */

/* This thread's cache in p, made on first use; NULL for a thread without a
 * number (or out of memory). */
struct hp__cache *hp__cache_make(struct hp_pool *p, int t);
/* Give one buffer (a single segment, refcnt already dropped to zero) back
 * to its pool; called by buf.c. */
void hp__pool_put(struct hp_buf *b);
/* Return c's buffers and staged batches to the pool, and the batches
 * queued for c's thread (hp_pool_thread_flush). */
void hp__cache_flush_all(struct hp_pool *p, struct hp__cache *c);
/* Forget what c's thread learnt (it is leaving; the number may be reused). */
void hp__cache_forget(struct hp__cache *c);
/* Move every batch queued for owner into the shared ring; returns how many
 * buffers (c, if any, is charged the ring operations). */
uint32_t hp__drain_owner(struct hp_pool *p, struct hp__cache *c, int owner);
/* Set up a buffer as free, when first taken from the region (poisoned in debug builds). */
void hp__buf_init_free(struct hp_pool *p, struct hp_buf *b);

/* Up to n buffers never used before, initialised free (hp__buf_init_free), into objs;
 * returns how many (0: every buffer of the region has been out once). Any thread. */
uint32_t hp__pool_take_fresh(struct hp_pool *p, struct hp_buf **objs, uint32_t n);

/* ---- buf.c --------------------------------------------------------------- */

/* hp_buf_free for everything but the common case: chains, clones, shared
 * data, and the reporting of bad frees. */
void hp__buf_free_general(struct hp_buf *b);

/* For tests: alien frees per ADAPTIVE epoch in p (0: the default). */
void hp__pool_set_epoch(struct hp_pool *p, uint32_t epoch);

#endif
