/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-thread caches: allocation and free fast paths, refills and flushes, deferred alien frees, ADAPTIVE's epochs, debug poisoning. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/pool.h>

#include "../base/debug.h"
#include "internal.h"

/* ---- debug checks: a buffer written after it was freed ------------------- */

/*
 * Under HP_DEBUG a free buffer is poisoned: the packet fields of line 0
 * (which allocation rewrites anyway), the start of its data room (up to
 * POISON_ROOM bytes; not in caller memory, which a NIC or a peer may fill)
 * and a cookie in the library's reserved word. Allocation checks them
 * before handing the buffer out: a difference means someone wrote to the
 * buffer after freeing it. It is logged with the pool's name, the buffer's
 * address and the first byte that changed, and counted (written_after_free
 * and errors). Deferred batches live in free data rooms: whoever consumes a
 * batch poisons its bytes again.
 */
#ifdef HP_DEBUG
#define POISON      0x6b
#define POISON_ROOM 512u
#define COOKIE      0x5ca1ab1efee1f00dull

static uint32_t poison_len(const struct hp_pool *p, const struct hp_buf *b)
{
    if (b->flags & HP_BUF_F_EXTERNAL)
        return 0;
    return p->data_room < POISON_ROOM ? p->data_room : POISON_ROOM;
}

#define POISON_FIELDS(X)                                                                           \
    X(ol_flags) X(data_off) X(data_len) X(pkt_len) X(nb_segs) X(hash) X(port) X(l2_len) X(l3_len)

static void poison(struct hp_pool *p, struct hp_buf *b)
{
#define SET(f) memset(&b->f, POISON, sizeof b->f);
    POISON_FIELDS(SET)
#undef SET
    b->reserved = COOKIE ^ (uint64_t)(uintptr_t)b;
    memset((unsigned char *)b + HP_BUF_META_SIZE, POISON, poison_len(p, b));
}

/* Offset from b of the first byte that is not as poison left it, or -1. */
static long poisoned_diff(const struct hp_pool *p, const struct hp_buf *b)
{
    const unsigned char *m = (const unsigned char *)b;
#define CHK(f)                                                                                     \
    for (size_t i = 0; i < sizeof b->f; i++)                                                       \
        if (((const unsigned char *)&b->f)[i] != POISON)                                           \
            return (long)(offsetof(struct hp_buf, f) + i);
    POISON_FIELDS(CHK)
#undef CHK
    if (b->reserved != (COOKIE ^ (uint64_t)(uintptr_t)b))
        return (long)offsetof(struct hp_buf, reserved);
    uint32_t n = poison_len(p, b);
    for (uint32_t i = 0; i < n; i++)
        if (m[HP_BUF_META_SIZE + i] != POISON)
            return (long)(HP_BUF_META_SIZE + i);
    return -1;
}

static void check_poison(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b)
{
    HP_ASSERT(b->flags & HP_BUF_F_FREE);
    HP_ASSERT(hp_buf_refcnt(b) == 0 && b->next == NULL && b->pool == p);
    long off = poisoned_diff(p, b);
    if (off < 0)
        return;
    hp__log(HP_LOG_ERR, "pool", "'%s': buffer %p was written after it was freed (byte %ld: %s)",
            p->name, (void *)b, off, off < HP_BUF_META_SIZE ? "metadata" : "data room");
    if (c) {
        hp__count(&c->c.written_after_free, 1);
        hp__count(&c->c.errors, 1);
    } else {
        atomic_fetch_add_explicit(&p->nocache_errors, 1, memory_order_relaxed);
    }
}

/* A batch in head's data room was consumed: poison its bytes again. */
static void batch_done(struct hp_pool *p, struct hp_buf *head)
{
    uint32_t n = poison_len(p, head);
    memset((unsigned char *)head + HP_BUF_META_SIZE, POISON,
           n < sizeof(struct hp__batch) ? n : sizeof(struct hp__batch));
}
#define DEBUG_POISON(p, b)        poison(p, b)
#define DEBUG_CHECK(p, c, b)      check_poison(p, c, b)
#define DEBUG_BATCH_DONE(p, head) batch_done(p, head)
#else
#define DEBUG_POISON(p, b)        ((void)0)
#define DEBUG_CHECK(p, c, b)      ((void)0)
#define DEBUG_BATCH_DONE(p, head) ((void)0)
#endif

void hp__buf_init_free(struct hp_pool *p, struct hp_buf *b)
{
    memset(b, 0, sizeof *b);
    b->base = (unsigned char *)b + HP_BUF_META_SIZE;
    b->pool = p;
    b->room = p->data_room;
    b->flags = (uint16_t)(HP_BUF_F_FREE | (p->tmpl.flags & HP_BUF_F_EXTERNAL));
    b->owner = UINT16_MAX;
    DEBUG_POISON(p, b);
}

/* ---- caches -------------------------------------------------------------- */

struct hp__cache *hp__cache_make(struct hp_pool *p, int t)
{
    size_t sz = sizeof(struct hp__cache) + 2 * (size_t)p->cache_size * sizeof(struct hp_buf *);
    struct hp__cache *c = aligned_alloc(HP_CACHELINE_SIZE, (sz + 63) & ~(size_t)63);
    if (!c)
        return NULL;
    memset(c, 0, sz);
    c->size = p->cache_size;
    c->tid = (uint16_t)t;
#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO)
    struct hp_buf fresh = p->tmpl;
    fresh.owner = (uint16_t)t;
    memcpy(c->tmpl, (unsigned char *)&fresh + HP__TMPL_OFF, HP__TMPL_LEN);
#endif
    hp__cache_forget(c);
    atomic_store_explicit(&p->owners[t].alive, 1, memory_order_relaxed);
    atomic_store_explicit(&p->caches[t], c, memory_order_release);
    return c;
}

void hp__cache_forget(struct hp__cache *c)
{
    c->net_freer = 1; /* ADAPTIVE: until seen; local until contention, see adapt() */
    c->contended = 0;
    memset(c->route, 0, sizeof c->route);
    for (int o = 0; o < HP_MAX_THREADS; o++) {
        struct hp__pair *pr = &c->pair[o];
        hp__adapt_init(&pr->a, HP_ALIEN_LOCAL);
        pr->t0 = 0;
        pr->nsub = pr->spoilt = 0;
        pr->shown_switches = pr->shown_explorations = 0;
        c->pair_mark[o] = atomic_load_explicit(&c->pair_frees[o], memory_order_relaxed) + 1;
    }
    c->pair_seen = 0;
    c->win_allocs = atomic_load_explicit(&c->c.allocs, memory_order_relaxed);
    c->win_frees = atomic_load_explicit(&c->c.frees, memory_order_relaxed);
}

/* This thread's cache in p, made on first use; NULL for a thread without a
 * number (or out of memory): it then uses the ring directly. */
static inline struct hp__cache *my_cache(struct hp_pool *p)
{
    int t = hp__my_tid;
    if (__builtin_expect(t < 0, 0) && (t = hp__tid()) < 0)
        return NULL;
    struct hp__cache *c = atomic_load_explicit(&p->caches[t], memory_order_relaxed);
    if (__builtin_expect(c != NULL, 1))
        return c;
    return hp__cache_make(p, t);
}

static inline struct hp__batch *batch_of(struct hp_buf *first)
{
    return (struct hp__batch *)((unsigned char *)first + HP_BUF_META_SIZE);
}

/* Put the buffers of batch bt (in head's room) into the shared ring. The
 * batch is gone once they are there: another thread may take head. */
static void batch_to_ring(struct hp_pool *p, struct hp_buf *head)
{
    struct hp__batch *bt = batch_of(head);
    struct hp_buf *objs[HP__DEFER_BATCH];
    uint32_t n = bt->n;
    HP_ASSERT(n >= 1 && n <= HP__DEFER_BATCH && bt->objs[0] == head);
    memcpy(objs, bt->objs, n * sizeof objs[0]);
    DEBUG_BATCH_DONE(p, head);
    bool ok = hp__ring_put(p->ring, objs, n);
    HP_ASSERT(ok); /* the ring holds every buffer of the pool */
    (void)ok;
}

uint32_t hp__drain_owner(struct hp_pool *p, struct hp__cache *c, int owner)
{
    struct hp_buf *heads[16];
    uint32_t total = 0, n;
    while ((n = hp__ring_get(p->owners[owner].dq, heads, 16)) > 0) {
        for (uint32_t i = 0; i < n; i++) {
            total += batch_of(heads[i])->n;
            batch_to_ring(p, heads[i]);
        }
        if (c)
            hp__count(&c->c.ring_ops, n + 1);
    }
    return total;
}

/* ---- ADAPTIVE ------------------------------------------------------------ */

/*
 * Two signals. The measured one, per (freer, owner) pair: pair_epoch() runs
 * every p->sub_epoch alien frees of one owner's buffers and gives each
 * epoch's length to the rule in adapt.c, which explores, exploits and returns the
 * pair's route. The fallback, the contention signal, for pairs that cannot
 * be measured (adapt() below).
 *
 * The contention signal: deferring an alien free to its owner exists to
 * keep many freers off one shared structure (the kernel's case: many CPUs
 * completing transmissions into one slab node). So a thread defers only
 * when all of these hold: it frees clearly more than it allocates (a "net
 * freer": its surplus would only travel through the shared ring), the
 * owner is not itself a net freer (it would have no use for them), and its
 * own shared-ring operations are contended (more than one in 16 had to
 * retry or wait for another thread). It is looked at on every refill, flush
 * and deferred batch, so the fast path pays nothing.
 */
static bool fallback_defers(struct hp_pool *p, struct hp__cache *c, int owner)
{
    return c->net_freer && c->contended &&
           !atomic_load_explicit(&p->owners[owner].freer, memory_order_relaxed);
}

static inline void count32(_Atomic uint32_t *c, uint32_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static void adapt(struct hp_pool *p, struct hp__cache *c)
{
    uint64_t na = atomic_load_explicit(&c->c.allocs, memory_order_relaxed);
    uint64_t nf = atomic_load_explicit(&c->c.frees, memory_order_relaxed);
    uint64_t a = na - c->win_allocs, f = nf - c->win_frees;
    if (a + f < c->size)
        return; /* not enough seen yet */
    c->net_freer = f > 2 * a;
    uint64_t ops = atomic_load_explicit(&c->c.ring_ops, memory_order_relaxed);
    uint64_t dops = ops - c->win_ring_ops, dret = hp__ring_retries - c->win_retries;
    /* Judge contention only over enough ring operations. */
    if (dops >= 16) {
        c->contended = dret * 16 > dops;
        c->win_ring_ops = ops;
        c->win_retries = hp__ring_retries;
    }
    struct hp__owner *me = &p->owners[c->tid];
    if (atomic_load_explicit(&me->freer, memory_order_relaxed) != c->net_freer)
        atomic_store_explicit(&me->freer, c->net_freer, memory_order_relaxed);
    /* Pairs without measurements follow the signal. */
    for (uint64_t m = c->pair_seen; m; m &= m - 1) {
        int o = __builtin_ctzll(m);
        if (c->pair[o].a.mode == HP__AD_FALLBACK) {
            c->route[o] = fallback_defers(p, c, o);
            atomic_store_explicit(&c->pair[o].pub_policy,
                                  c->route[o] ? HP_ALIEN_DEFER : HP_ALIEN_LOCAL,
                                  memory_order_relaxed);
        }
    }
    c->win_allocs = na;
    c->win_frees = nf;
}

/* The median of an epoch's parts, times their number; 0 when it is not a
 * measurement. */
static uint64_t epoch_ticks(const struct hp__pair *pr)
{
    if (pr->spoilt)
        return 0;
    uint32_t v[HP__SUBEPOCHS];
    memcpy(v, pr->sub, sizeof v);
    for (unsigned i = 1; i < HP__SUBEPOCHS; i++)
        for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
            uint32_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    uint64_t med = ((uint64_t)v[HP__SUBEPOCHS / 2 - 1] + v[HP__SUBEPOCHS / 2]) / 2;
    return med > 0 && med < HP__STALE_TICKS / HP__SUBEPOCHS ? med * HP__SUBEPOCHS : 0;
}

static void pair_publish(struct hp__pair *pr)
{
    atomic_store_explicit(&pr->pub_policy, pr->a.cur, memory_order_relaxed);
    /* Chosen by measurement: at least one exploration decided it. */
    atomic_store_explicit(&pr->pub_measured,
                          pr->a.mode != HP__AD_FALLBACK && pr->a.explorations > 0,
                          memory_order_relaxed);
    count32(&pr->pub_switches, pr->a.switches - pr->shown_switches);
    count32(&pr->pub_explorations, pr->a.explorations - pr->shown_explorations);
    pr->shown_switches = pr->a.switches;
    pr->shown_explorations = pr->a.explorations;
    atomic_store_explicit(&pr->pub_gain_ppm, pr->a.gain_ppm, memory_order_relaxed);
}

/* A part of an epoch of pair (this thread, owner) ended at the k-th alien
 * free; at the last part, the epoch goes to the rule. The pair's first
 * alien free ends an unmeasured epoch at once, so that it starts on the
 * contention signal's choice. */
static __attribute__((noinline)) void pair_epoch(struct hp_pool *p, struct hp__cache *c, int owner,
                                                 uint64_t k)
{
    struct hp__pair *pr = &c->pair[owner];
    uint64_t now = hp__ticks();
    uint32_t gen = atomic_load_explicit(&p->policy_gen, memory_order_relaxed);
    bool first = pr->t0 == 0;
    c->pair_mark[owner] = k + p->sub_epoch;
    if (!first) {
        uint64_t dt = now - pr->t0;
        HP_ASSERT(pr->nsub < HP__SUBEPOCHS);
        pr->sub[pr->nsub++] = dt < UINT32_MAX ? (uint32_t)dt : UINT32_MAX;
        pr->spoilt |= gen != pr->gen;
    }
    pr->t0 = now ? now : 1;
    pr->gen = gen;
    if (!first && pr->nsub < HP__SUBEPOCHS)
        return;
    uint64_t ticks = first ? 0 : epoch_ticks(pr);
    pr->nsub = 0;
    pr->spoilt = 0;
    int fb = fallback_defers(p, c, owner) ? HP_ALIEN_DEFER : HP_ALIEN_LOCAL;
    int route = hp__adapt_epoch(&pr->a, ticks, fb);
    c->route[owner] = route == HP_ALIEN_DEFER;
    c->pair_seen |= 1ull << owner;
    pair_publish(pr);
}

/* ---- refills, flushes, deferred batches ---------------------------------- */

static void flush(struct hp_pool *p, struct hp__cache *c, uint32_t keep);

/* Free one buffer into cache c (the caller counted it). */
static inline void local_put(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b)
{
    HP_ASSERT(c->len < 2 * c->size);
    c->objs[c->len++] = b;
    if (__builtin_expect(c->len > c->size, 0))
        flush(p, c, c->size / 2);
}

/* Queue a staged batch on its owner's queue. If the queue is full (the
 * bound, like net.core.skb_defer_max), the batch is freed locally instead.
 * If the owner has gone meanwhile, drain its queue to the ring: nobody else
 * would. The seq_cst order of the enqueue and of the owner's "alive" store
 * pairs with hp_thread_exit(), which clears alive and then drains. */
static void defer_push(struct hp_pool *p, struct hp__cache *c, int owner)
{
    struct hp__stage *s = &c->stage[owner];
    struct hp__owner *o = &p->owners[owner];
    struct hp_buf *head = s->head;
    struct hp__batch *bt = batch_of(head);
    uint32_t n = s->n;
    HP_ASSERT(n >= 1 && n <= p->batch_max && bt->objs[0] == head);
    bt->n = n;
    s->head = NULL;
    s->n = 0;
    c->stage_mask &= ~(1ull << owner);
    if (hp__ring_put(o->dq, &head, 1)) {
        hp__count(&c->c.deferred, n);
        atomic_thread_fence(memory_order_seq_cst);
        if (!atomic_load_explicit(&o->alive, memory_order_seq_cst))
            hp__drain_owner(p, c, owner);
    } else {
        /* The queue is full: free the batch here. Copy it out first, since
         * the buffer holding it may be given away by a flush on the way. */
        struct hp_buf *objs[HP__DEFER_BATCH];
        memcpy(objs, bt->objs, n * sizeof objs[0]);
        DEBUG_BATCH_DONE(p, head);
        hp__count(&c->c.defer_overflows, n);
        for (uint32_t i = 0; i < n; i++)
            local_put(p, c, objs[i]);
    }
    adapt(p, c);
}

static void push_all_stages(struct hp_pool *p, struct hp__cache *c)
{
    while (c->stage_mask)
        defer_push(p, c, __builtin_ctzll(c->stage_mask));
}

/* Take the batches queued for owner into cache c as far as they fit, the
 * rest into the ring. Returns how many buffers went into the cache. */
static uint32_t take_deferred(struct hp_pool *p, struct hp__cache *c, int owner)
{
    struct hp__ring *q = p->owners[owner].dq;
    if (atomic_load_explicit(&q->prod_tail, memory_order_relaxed) ==
        atomic_load_explicit(&q->cons_head, memory_order_relaxed))
        return 0; /* empty: one shared read, no write */
    struct hp_buf *heads[16];
    uint32_t k = hp__ring_get(q, heads, 16), n = 0, rest = 0, cap = 2 * c->size;
    for (uint32_t i = 0; i < k; i++) {
        struct hp__batch *bt = batch_of(heads[i]);
        uint32_t m = bt->n;
        HP_ASSERT(m >= 1 && m <= HP__DEFER_BATCH);
        if (c->len + m <= cap) {
            memcpy(c->objs + c->len, bt->objs, m * sizeof(struct hp_buf *));
            DEBUG_BATCH_DONE(p, heads[i]);
            c->len += m;
            n += m;
        } else {
            batch_to_ring(p, heads[i]);
            hp__count(&c->c.ring_ops, 1);
            rest += m;
        }
    }
    hp__count(&c->c.defer_taken, n + rest);
    return n;
}

/* Make at least `need` buffers available in the cache: deferred buffers
 * first, then the ring, the region's untouched buffers when the ring runs
 * dry, then (the pool looks empty) other owners' deferred lists. Returns
 * false if the pool really has fewer. */
static bool refill(struct hp_pool *p, struct hp__cache *c, uint32_t need)
{
    hp__count(&c->c.refills, 1);
    adapt(p, c);
    push_all_stages(p, c);
    take_deferred(p, c, c->tid);
    if (c->len < need) {
        uint32_t want = need - c->len + c->size / 2;
        if (want > 2 * c->size - c->len)
            want = 2 * c->size - c->len;
        uint32_t got = hp__ring_get(p->ring, c->objs + c->len, want);
        if (got < want)
            got += hp__pool_take_fresh(p, c->objs + c->len + got, want - got);
        c->len += got;
        hp__count(&c->c.ring_ops, 1);
    }
    for (int o = 0; o < HP_MAX_THREADS && c->len < need; o++)
        if (o != c->tid)
            take_deferred(p, c, o);
    HP_ASSERT(c->len <= 2 * c->size);
    return c->len >= need;
}

/* Move all but `keep` cached buffers to the ring, then push the staged
 * batches: in that order, since an owner's full queue gives a batch back
 * into the cache (through local_put, which makes room again if needed). */
static void flush(struct hp_pool *p, struct hp__cache *c, uint32_t keep)
{
    hp__count(&c->c.flushes, 1);
    adapt(p, c);
    HP_ASSERT(c->len <= 2 * c->size);
    if (c->len > keep) {
        bool ok = hp__ring_put(p->ring, c->objs + keep, c->len - keep);
        HP_ASSERT(ok); /* the ring holds every buffer of the pool */
        (void)ok;
        hp__count(&c->c.ring_ops, 1);
        c->len = keep;
    }
    push_all_stages(p, c);
}

void hp__cache_flush_all(struct hp_pool *p, struct hp__cache *c)
{
    push_all_stages(p, c);
    flush(p, c, 0);
    hp__count(&c->c.defer_taken, hp__drain_owner(p, c, c->tid));
}

/* ---- allocation ---------------------------------------------------------- */

/* Make b a fresh buffer of cache c's thread (tid UINT16_MAX: none). A free
 * buffer already has next == NULL, direct == NULL and base pointing home
 * (the free path restores a clone's), so only the packet fields of line 0
 * are written: the second line is not touched. */
static inline void init_buf(struct hp_pool *p, const unsigned char *tmpl, struct hp_buf *b,
                            uint16_t tid)
{
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    /* Logical order: the same fields one by one, over both lines. */
    (void)tmpl;
    const struct hp_buf *t = &p->tmpl;
    b->ol_flags = t->ol_flags;
    b->data_off = t->data_off;
    b->data_len = t->data_len;
    b->pkt_len = t->pkt_len;
    b->room = t->room;
    atomic_store_explicit(&b->refcnt, 1, memory_order_relaxed);
    b->nb_segs = t->nb_segs;
    b->flags = t->flags;
    b->hash = t->hash;
    b->port = t->port;
    b->l2_len = t->l2_len;
    b->l3_len = t->l3_len;
    b->owner = tid;
#else
    /* The packet fields of line 0 (ol_flags .. l3_len, owner included) from
     * the thread's template in three wide stores. */
    (void)p;
    (void)tid;
    memcpy((unsigned char *)b + HP__TMPL_OFF, tmpl, HP__TMPL_LEN);
#endif
}

/* A thread without a number: straight from the ring. */
static int alloc_nocache(struct hp_pool *p, struct hp_buf **bufs, unsigned n)
{
    uint32_t got = hp__ring_get(p->ring, bufs, n);
    if (got < n)
        got += hp__pool_take_fresh(p, bufs + got, n - got);
    if (got < n) {
        if (got)
            hp__ring_put(p->ring, bufs, got);
        return -ENOMEM;
    }
    struct hp_buf fresh = p->tmpl;
    fresh.owner = UINT16_MAX;
    for (unsigned i = 0; i < n; i++) {
        DEBUG_CHECK(p, NULL, bufs[i]);
        init_buf(p, (unsigned char *)&fresh + HP__TMPL_OFF, bufs[i], UINT16_MAX);
    }
    atomic_fetch_add_explicit(&p->nocache_allocs, n, memory_order_relaxed);
    return (int)n;
}

/* More than a cache holds: take the cache's worth repeatedly. */
static int alloc_large(struct hp_pool *p, struct hp__cache *c, struct hp_buf **bufs, unsigned n)
{
    if (n > p->n)
        return -ENOMEM;
    unsigned got = 0;
    while (got < n) {
        if (c->len == 0 && !refill(p, c, 1))
            break;
        uint32_t k = c->len < n - got ? c->len : n - got;
        memcpy(bufs + got, c->objs + c->len - k, k * sizeof(struct hp_buf *));
        c->len -= k;
        got += k;
    }
    if (got < n) {
        for (unsigned i = 0; i < got; i++)
            local_put(p, c, bufs[i]); /* still marked free: just give back */
        return -ENOMEM;
    }
    for (unsigned i = 0; i < n; i++) {
        DEBUG_CHECK(p, c, bufs[i]);
        init_buf(p, c->tmpl, bufs[i], c->tid);
    }
    hp__count(&c->c.allocs, n);
    return (int)n;
}

#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO)
/* The template in registers: two 16-byte vectors and a word, stored with
 * three instructions per buffer. */
typedef unsigned char v16 __attribute__((vector_size(16), aligned(1), may_alias));
_Static_assert(HP__TMPL_LEN == 40, "the template is 16 + 16 + 8 bytes");

static void init_bulk(struct hp_buf *const *src, struct hp_buf **bufs, unsigned n,
                      const unsigned char *tmpl)
{
    const v16 a = *(const v16 *)tmpl, b = *(const v16 *)(tmpl + 16);
    uint64_t w;
    memcpy(&w, tmpl + 32, sizeof w);
    for (unsigned i = 0; i < n; i++) {
        unsigned char *m = (unsigned char *)src[i] + HP__TMPL_OFF;
        bufs[i] = src[i];
        *(v16 *)m = a;
        *(v16 *)(m + 16) = b;
        memcpy(m + 32, &w, sizeof w);
    }
}
#endif

HP_API int hp_buf_alloc_bulk(struct hp_pool *p, struct hp_buf **bufs, unsigned n)
{
    if (!p || (!bufs && n))
        return -EINVAL;
    if (n == 0)
        return 0;
    struct hp__cache *c = my_cache(p);
    if (__builtin_expect(!c, 0))
        return alloc_nocache(p, bufs, n);
    if (__builtin_expect(n > c->size, 0))
        return alloc_large(p, c, bufs, n);
    if (__builtin_expect(c->len < n, 0) && !refill(p, c, n))
        return -ENOMEM;
    uint32_t len = c->len - n;
    struct hp_buf **src = c->objs + len;
#ifdef HP_DEBUG
    for (unsigned i = 0; i < n; i++)
        check_poison(p, c, src[i]);
#endif
#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO)
    init_bulk(src, bufs, n, c->tmpl);
#else
    for (unsigned i = 0; i < n; i++) {
        bufs[i] = src[i];
        init_buf(p, c->tmpl, bufs[i], c->tid);
    }
#endif
    c->len = len;
    hp__count(&c->c.allocs, n);
    return (int)n;
}

HP_API struct hp_buf *hp_buf_alloc(struct hp_pool *p)
{
    /* The common case, straight from this thread's cache. */
    int t = hp__my_tid;
    if (__builtin_expect(p && t >= 0, 1)) {
        struct hp__cache *c = atomic_load_explicit(&p->caches[t], memory_order_relaxed);
        if (__builtin_expect(c && c->len, 1)) {
            struct hp_buf *b = c->objs[--c->len];
            DEBUG_CHECK(p, c, b);
            init_buf(p, c->tmpl, b, c->tid);
            hp__count(&c->c.allocs, 1);
            return b;
        }
    }
    struct hp_buf *b;
    int rc = hp_buf_alloc_bulk(p, &b, 1);
    if (rc == 1)
        return b;
    errno = -rc;
    return NULL;
}

/* ---- freeing ------------------------------------------------------------- */

/* Alien frees: where the policy sends owner's buffers now (true: defer
 * them to it). */
static inline bool alien_defers(const struct hp_pool *p, const struct hp__cache *c, unsigned owner)
{
    if (__builtin_expect(owner >= HP_MAX_THREADS, 0) || !p->batch_max)
        return false; /* from a thread without a number, or rooms too small for a batch */
    int policy = atomic_load_explicit(&((struct hp_pool *)p)->policy, memory_order_relaxed);
    return policy == HP_ALIEN_DEFER || (policy == HP_ALIEN_ADAPTIVE && c->route[owner]);
}

/* n alien frees of owner's buffers: count them (the pair's counter), and
 * under ADAPTIVE end a part of its epoch when one is due. A bulk free counts
 * a run of one owner's buffers at once, so the epochs end a few buffers
 * late at most. */
static inline void alien_count(struct hp_pool *p, struct hp__cache *c, unsigned owner, unsigned n)
{
    if (__builtin_expect(owner >= HP_MAX_THREADS, 0))
        return;
    uint64_t k = atomic_load_explicit(&c->pair_frees[owner], memory_order_relaxed) + n;
    atomic_store_explicit(&c->pair_frees[owner], k, memory_order_relaxed);
    if (__builtin_expect(k >= c->pair_mark[owner], 0) &&
        atomic_load_explicit(&p->policy, memory_order_relaxed) == HP_ALIEN_ADAPTIVE)
        pair_epoch(p, c, (int)owner, k);
}

/* Add b to the batch staged for its owner, pushing the batch when full. */
static inline void stage(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b, unsigned owner)
{
    struct hp__stage *s = &c->stage[owner];
    if (s->n == 0) {
        s->head = b;
        c->stage_mask |= 1ull << owner;
    }
    batch_of(s->head)->objs[s->n] = b;
    if (++s->n == p->batch_max)
        defer_push(p, c, (int)owner);
}

/* One alien free (b's owner is not this thread): where the policy says. */
static inline void alien_put(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b,
                             uint16_t owner)
{
    alien_count(p, c, owner, 1);
    if (alien_defers(p, c, owner))
        stage(p, c, b, owner);
    else
        local_put(p, c, b);
}

/* Where p's buffers are, for the checks below: loaded once per run, since
 * the stores to the buffers could otherwise (no strict aliasing) make the
 * compiler read p again for each one. */
struct span {
    uintptr_t region;
    uint64_t len, inv, lim;
    uint32_t shift;
};

static inline struct span span_of(const struct hp_pool *p)
{
    return (struct span){(uintptr_t)p->region, p->region_len, p->elt_inv, p->elt_lim, p->elt_shift};
}

/* Whether b is the start of one of the buffers in sp (a pointer into the
 * middle of a buffer is not at a chunk boundary). NULL is not. */
static inline bool in_span(struct span sp, const struct hp_buf *b)
{
    uint64_t off = (uint64_t)((uintptr_t)b - sp.region);
    return __builtin_expect(off < sp.len, 1) &&
           __builtin_expect(hp__at_chunk(off, sp.inv, sp.shift, sp.lim), 1);
}

/*
 * A buffer's state, for the free path: refcnt, nb_segs, owner and flags are
 * one 64-bit word in the grouped layout (refcnt in bits 0-15, owner 32-47,
 * flags 48-63), read and written at once: the caller is the buffer's only
 * holder, so nobody else touches the count. Other layouts build the same
 * word from the fields.
 */
#define W_FLAGS(f) ((uint64_t)(f) << 48)
#define W_OWNER(t) ((uint64_t)(t) << 32)
/* The common case: refcnt 1, not a clone, not free already... */
#define W_SIMPLE_MASK (0xffffull | W_FLAGS(HP_BUF_F_FREE | HP_BUF_F_INDIRECT))
/* ...and allocated by this thread. */
#define W_LOCAL_MASK (W_SIMPLE_MASK | W_OWNER(0xffff))

#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WORD_OFF offsetof(struct hp_buf, refcnt)
_Static_assert(offsetof(struct hp_buf, nb_segs) == WORD_OFF + 2 &&
                   offsetof(struct hp_buf, owner) == WORD_OFF + 4 &&
                   offsetof(struct hp_buf, flags) == WORD_OFF + 6,
               "refcnt, nb_segs, owner, flags: one word");

static inline uint64_t state_of(const struct hp_buf *b)
{
    uint64_t w;
    memcpy(&w, (const unsigned char *)b + WORD_OFF, sizeof w);
    return w;
}

/* Free a buffer in the common case (w & W_SIMPLE_MASK == 1): refcnt 1 -> 0
 * and FREE set, in one store. */
static inline void state_release(struct hp_buf *b, uint64_t w)
{
    w += W_FLAGS(HP_BUF_F_FREE) - 1;
    memcpy((unsigned char *)b + WORD_OFF, &w, sizeof w);
}
#else
static inline uint64_t state_of(const struct hp_buf *b)
{
    return (uint64_t)hp_buf_refcnt(b) | W_OWNER(b->owner) | W_FLAGS(b->flags);
}

static inline void state_release(struct hp_buf *b, uint64_t w)
{
    atomic_store_explicit(&b->refcnt, 0, memory_order_relaxed);
    b->flags = (uint16_t)((w >> 48) | HP_BUF_F_FREE);
}
#endif

static inline uint16_t state_owner(uint64_t w)
{
    return (uint16_t)(w >> 32);
}

/* Free bufs[i..n) into c while they are buffers of p in the common case
 * (a single segment, its only reference, not a clone), at most as many as
 * the cache has room for; returns the index of the first one not taken. */
static unsigned free_run(struct hp_pool *p, struct hp__cache *c, struct hp_buf *const *bufs,
                         unsigned i, unsigned n)
{
    const uint32_t cap = 2 * c->size;
    if (__builtin_expect(c->len >= cap, 0))
        flush(p, c, c->size / 2);
    /* At most as many as fit: the paths below add at most one each. */
    struct hp_buf *const *q = bufs + i, *const *last = bufs + n;
    struct hp_buf *const *end = cap - c->len < n - i ? q + (cap - c->len) : last;
    uint32_t len = c->len;
    const uint64_t local = 1 | W_OWNER(c->tid);
    const struct span sp = span_of(p);
    unsigned owner = UINT16_MAX, nown = 0; /* the last alien owner, its frees not counted */
    bool defer = false;                    /* where that owner's buffers go */
    for (; q < end; q++) {
        struct hp_buf *b = *q;
        if (!in_span(sp, b))
            break;
        uint64_t w = state_of(b);
        if (__builtin_expect((w & W_LOCAL_MASK) == local && !b->next, 1)) {
            state_release(b, w);
            DEBUG_POISON(p, b);
            c->objs[len++] = b;
            continue;
        }
        if ((w & W_SIMPLE_MASK) != 1 || b->next)
            break; /* not the common case */
        state_release(b, w);
        DEBUG_POISON(p, b);
        if (state_owner(w) != owner) {
            c->len = len;
            if (nown)
                alien_count(p, c, owner, nown);
            owner = state_owner(w);
            nown = 0;
            defer = alien_defers(p, c, owner);
        }
        nown++;
        if (!defer) {
            c->objs[len++] = b;
            continue;
        }
        c->len = len;
        stage(p, c, b, owner);
        len = c->len;
        /* A full owner's queue gives a batch back into the cache (or the
         * cache flushed meanwhile): what fits now. */
        HP_ASSERT(len <= cap);
        end = cap - len < (size_t)(last - q - 1) ? q + 1 + (cap - len) : last;
    }
    c->len = len;
    if (nown)
        alien_count(p, c, owner, nown);
    unsigned j = (unsigned)(q - bufs);
    hp__count(&c->c.frees, j - i);
    if (c->len > c->size)
        flush(p, c, c->size / 2);
    return j;
}

/* hp_buf_free_bulk past its one-buffer fast path. */
static void free_bulk(struct hp_buf **bufs, unsigned n)
{
    unsigned i = 0;
    while (i < n) {
        struct hp_buf *b = bufs[i];
        if (!b) {
            i++;
            continue;
        }
        struct hp_pool *p = hp__pool_of(b);
        struct hp__cache *c = p ? my_cache(p) : NULL;
        unsigned j = c ? free_run(p, c, bufs, i, n) : i;
        if (j == i) {
            /* Not the common case (or no cache): the full path. */
            hp__buf_free_general(b);
            j = i + 1;
        }
        i = j;
    }
}

/* A buffer the fast path below does not take. */
static __attribute__((noinline)) void free_one(struct hp_buf *b)
{
    if (b)
        free_bulk(&b, 1);
}

/* The fast path's other case: a buffer of another thread (or not simple).
 * Out of line, so that the local case saves no registers for pair_epoch's
 * call. Kept here when the policy keeps that owner's buffers (counted as
 * free_run counts them); otherwise the bulk path, which may defer it. */
static __attribute__((noinline)) void free_alien_one(struct hp_pool *p, struct hp__cache *c,
                                                     struct hp_buf *b, uint64_t w)
{
    if ((w & W_SIMPLE_MASK) != 1 || b->next != NULL || alien_defers(p, c, state_owner(w))) {
        free_bulk(&b, 1);
        return;
    }
    alien_count(p, c, state_owner(w), 1);
    state_release(b, w);
    DEBUG_POISON(p, b);
    c->objs[c->len++] = b;
    hp__count(&c->c.frees, 1);
}

/*
 * Free one buffer, without free_run's set-up in the common case (a received
 * segment read, an acknowledged one: most frees are single): a buffer of
 * the pool freed into last, allocated by this thread, one segment, its only
 * reference, the cache not full. Anything else goes out of line.
 */
static inline void free_single(struct hp_buf *b)
{
    int s = hp__last_slot, t = hp__my_tid;
    struct hp_pool *p = __builtin_expect((s | t) >= 0, 1)
                            ? atomic_load_explicit(&hp__registry[s], memory_order_acquire)
                            : NULL;
    struct hp__cache *c = p ? atomic_load_explicit(&p->caches[t], memory_order_relaxed) : NULL;
    if (__builtin_expect(!c || c->len >= c->size || !in_span(span_of(p), b), 0)) {
        free_one(b);
        return;
    }
    uint64_t w = state_of(b);
    if (__builtin_expect((w & W_LOCAL_MASK) != (1 | W_OWNER(t)) || b->next != NULL, 0)) {
        free_alien_one(p, c, b, w);
        return;
    }
    state_release(b, w);
    DEBUG_POISON(p, b);
    c->objs[c->len++] = b;
    hp__count(&c->c.frees, 1);
}

/* These two are not inlined into the library's callers (link-time
 * optimisation would): a copy of the fast path at each of the ~40 call
 * sites on the receive path made those functions too large for their own
 * callees to be inlined (callgrind: +150 instructions per tcp_rr
 * transaction), and hp_buf_free_bulk's in hp__eth_flush kept that out of
 * hp_stack_poll. */
HP_API __attribute__((noinline)) void hp_buf_free(struct hp_buf *b)
{
    free_single(b);
}

HP_API __attribute__((noinline)) void hp_buf_free_bulk(struct hp_buf **bufs, unsigned n)
{
    if (!bufs)
        return;
    if (n == 1 && bufs[0])
        hp_buf_free(bufs[0]);
    else
        free_bulk(bufs, n);
}

/* One buffer of the general path (refcnt already dropped to zero). */
void hp__pool_put(struct hp_buf *b)
{
    struct hp_pool *p = b->pool;
    /* Allocation relies on a free buffer's next being NULL. */
    b->next = NULL;
    uint16_t owner = b->owner;
    b->flags = (uint16_t)((b->flags & HP_BUF_F_EXTERNAL) | HP_BUF_F_FREE);
    DEBUG_POISON(p, b);
    struct hp__cache *c = my_cache(p);
    if (__builtin_expect(!c, 0)) {
        bool ok = hp__ring_put(p->ring, &b, 1);
        HP_ASSERT(ok);
        (void)ok;
        atomic_fetch_add_explicit(&p->nocache_frees, 1, memory_order_relaxed);
        return;
    }
    hp__count(&c->c.frees, 1);
    if (owner != c->tid)
        alien_put(p, c, b, owner);
    else
        local_put(p, c, b);
}
