/* SPDX-License-Identifier: BSD-3-Clause */
/* Multi-threaded stress of the buffer pool: bulk and single allocs and frees, buffers passed between threads so that many frees are alien, the alien policy switched under load, a pool run dry and threads that leave, with every buffer's holder tracked. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/buf.h>
#include <hotpath/pool.h>

#include "buf/internal.h"
#include "hp_test.h"

/*
 * How the test works
 *
 * Worker threads loop over random actions on one pool: allocate 1..64
 * buffers (hp_buf_alloc_bulk, or hp_buf_alloc one at a time), free 1..64 of
 * the buffers they hold (hp_buf_free_bulk, sometimes with a NULL entry, or
 * hp_buf_free one at a time), or send 1..64 of them to another worker through
 * a single-producer single-consumer ring (one per ordered pair of workers).
 * A received buffer is later freed or sent on by its receiver, so a large
 * share of the frees are alien. A controller thread switches the pool's
 * alien policy every 1..4 ms (LOCAL, DEFER, ADAPTIVE, a random one, again)
 * and doubles as a watchdog: a worker that makes no progress for
 * WATCHDOG_S seconds is reported with the state of every worker, and the
 * process aborts rather than hang until the runner's timeout.
 *
 * Who holds what is checked twice over:
 *  - b->tag (and a copy in the first 8 bytes of the data) says
 *    HELD_TAG(holder, sequence) while a worker holds the buffer,
 *    TAG_TRANSIT | dest while it sits in a ring, and 0 while it is free.
 *    A receiver checks "in transit to me", an allocator checks 0. Some
 *    tests also write the tag over the start of the data room, headroom
 *    included ("scribble"): a pool that keeps its own data in a free
 *    buffer's room and reads it after handing the buffer out then picks up
 *    a tag instead (and most likely crashes on it).
 *  - owner[] (one atomic word per buffer, indexed by address) moves
 *    FREE -> HELD(t) on alloc, HELD(t) -> TRANSIT(d) on send,
 *    TRANSIT(d) -> HELD(d) on receipt and HELD(t) -> FREE just before the
 *    free, each with a compare-exchange: a failure means the pool handed one
 *    buffer to two holders (or lost track of a transfer), and the test fails
 *    with the buffer's address.
 * The owner words use relaxed atomics on purpose: they must not add
 * happens-before edges of their own, so that ThreadSanitizer sees exactly
 * the synchronisation the pool provides between a free and the next alloc
 * (a missing one shows up as a race on b->tag or the data room). The rings
 * use acquire/release, as a real application's would.
 *
 * At the end every worker drains its rings, frees everything it holds and
 * calls hp_pool_thread_flush(); then the main thread checks that nothing is
 * in use, no error was counted, allocs == frees, and that all n_bufs
 * buffers can be allocated at once (none stranded in a cache, a staging
 * batch or a deferred list) and are n_bufs distinct buffers of the pool.
 *
 * Size: HP_STRESS_OPS buffer operations (an alloc or a free of one buffer is
 * one operation) for each of the 2-, 3- and 4-thread and dry-pool tests, a
 * quarter of that for the departing-thread test. Default 1e8 (about 15 s
 * for the whole file on 2 cores), or 2e6 under ThreadSanitizer and 1e7
 * under AddressSanitizer.
 */

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STRESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRESS_ASAN 1
#endif
#endif

/* How long the controller leaves ADAPTIVE on in some tests: long enough for
 * explorations (12 or more epochs of 8 alien frees per pair) to finish,
 * which ThreadSanitizer slows down 50-fold. */
#if defined(STRESS_TSAN)
#define ADAPTIVE_MS 100
#else
#define ADAPTIVE_MS 20
#endif

#if defined(STRESS_TSAN)
#define STRESS_DEFAULT_OPS 2e6
#define WATCHDOG_S         120
#elif defined(STRESS_ASAN)
#define STRESS_DEFAULT_OPS 1e7
#define WATCHDOG_S         60
#else
#define STRESS_DEFAULT_OPS 1e8
#define WATCHDOG_S         30
#endif

#define MAX_IDX        8   /* worker indices in one test */
#define RING_SIZE      256 /* slots per ring (a power of two) */
#define BULK_MAX       64  /* largest alloc, free or send */
#define SCRIBBLE_BYTES 320

#define TAG_TRANSIT      0xF000000000000000ull
#define HELD_TAG(t, seq) (((uint64_t)(t) + 1) << 32 | (uint32_t)(seq))
#define OW_FREE          0u
#define OW_HELD(t)       ((uint32_t)(t) + 1)
#define OW_TRANSIT(t)    (0x80000000u | (uint32_t)(t))

enum { ROLE_PLAIN, ROLE_LEAVER, ROLE_STAYER, ROLE_NEWCOMER };
enum { ST_IDLE, ST_RUN, ST_WAIT, ST_DONE };
enum { PH_MAIN, PH_A, PH_B };

struct ring {
    _Alignas(64) _Atomic size_t head; /* written by the consumer */
    _Alignas(64) _Atomic size_t tail; /* written by the producer */
    _Alignas(64) struct hp_buf *slot[RING_SIZE];
};

struct stress;

struct worker {
    struct stress *s;
    pthread_t th;
    int idx, role, tid;
    uint64_t rng;
    uint32_t seq;
    unsigned n_held;
    unsigned cap;      /* soft bound on n_held while running */
    unsigned held_max; /* room in held[]: cap plus every inbound ring */
    struct hp_buf **held;
    struct hp_buf *tmp[BULK_MAX + 1];
    /* counters, read by the main thread after a barrier or join */
    uint64_t n_alloc, n_free, n_sent, n_recv, n_enomem, n_steps;
    uint64_t n_handed, n_fresh, n_orphan_frees;
    int phase;
    /* departing threads: what a stayer received from the leavers, kept
     * until they are gone */
    struct hp_buf **stash;
    unsigned n_stash, stash_max;
    bool stash_freed;
    _Atomic int stash_done;
    /* for the watchdog */
    _Atomic uint64_t progress;
    _Atomic int state;
    _Atomic unsigned held_pub;
};

struct stress_cfg {
    const char *name;
    int nthreads; /* plain workers (ROLE_PLAIN) */
    uint32_t n_bufs;
    uint32_t cache_size, defer_max;
    int policy;           /* initial alien policy, -1 for the default */
    unsigned hold_cap;    /* soft bound of buffers each worker holds */
    double ops_scale;     /* fraction of HP_STRESS_OPS */
    bool expect_dry;      /* the pool must run dry (-ENOMEM seen) */
    bool scribble;        /* tag the first SCRIBBLE_BYTES of the data room too */
    unsigned adaptive_ms; /* the controller leaves ADAPTIVE on this long (0: 1..4 ms like
                           * the others), so that its explorations finish */
};

struct stress {
    const struct stress_cfg *cfg;
    struct hp_pool *pool;
    uint32_t n_bufs;
    struct hp_buf **sorted; /* every buffer of the pool, by address */
    uintptr_t base, stride; /* when the buffers are evenly spaced */
    _Atomic uint32_t *owner;
    struct ring *rings; /* [from * nidx + to] */
    int nidx;
    struct worker w[MAX_IDX];
    uint64_t budget;   /* ops before the workers stop (PH_MAIN, PH_A) */
    uint64_t budget_b; /* ops after every newcomer started (PH_B) */
    _Atomic uint64_t ops;
    _Atomic int stop; /* set on the first error */
    _Atomic int errors;
    _Atomic int printed;
    /* departing threads */
    uint32_t mask_a;         /* destinations in phase A */
    _Atomic uint32_t mask_b; /* destinations in phase B */
    int stayers[MAX_IDX], n_stayers, n_newcomers;
    int n_leavers;
    _Atomic int leavers_done; /* left: called hp_thread_exit() */
    _Atomic int newcomers_started, all_started;
    _Atomic uint64_t ops_mark;
    _Atomic uint64_t departed_tids;
    /* barriers: workers only, and workers plus the main thread */
    pthread_barrier_t b_a, b_stop, b_freed, b_main;
    /* controller */
    pthread_t ctl;
    _Atomic int ctl_stop;
    uint64_t switches, per_policy[3];
};

/* ---- errors ------------------------------------------------------------- */

/* Worker threads do not call hp_test_fail (the runner is single-threaded):
 * they print the first problems, count them and stop every worker; the
 * main thread turns the count into a failure after the join. */
__attribute__((format(printf, 2, 3))) static void stress_error(struct stress *s, const char *fmt,
                                                               ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&s->errors, 1);
    atomic_store(&s->stop, 1);
    if (atomic_fetch_add(&s->printed, 1) < 20)
        fprintf(stderr, "    %s: %s\n", s->cfg->name, msg);
}

static const char *owner_str(uint32_t v, char *buf, size_t len)
{
    if (v == OW_FREE)
        snprintf(buf, len, "free");
    else if (v & 0x80000000u)
        snprintf(buf, len, "in transit to thread %u", v & 0x7FFFFFFFu);
    else
        snprintf(buf, len, "held by thread %u", v - 1);
    return buf;
}

/* ---- buffer index ------------------------------------------------------- */

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (struct hp_buf *const *)a;
    uintptr_t y = (uintptr_t) * (struct hp_buf *const *)b;
    return x < y ? -1 : x > y;
}

/* Index of b among the pool's buffers, or SIZE_MAX for a foreign pointer. */
static size_t buf_index(const struct stress *s, const struct hp_buf *b)
{
    uintptr_t p = (uintptr_t)b;
    if (s->stride) {
        if (p < s->base || (p - s->base) % s->stride)
            return SIZE_MAX;
        size_t i = (p - s->base) / s->stride;
        return i < s->n_bufs ? i : SIZE_MAX;
    }
    size_t lo = 0, hi = s->n_bufs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t m = (uintptr_t)s->sorted[mid];
        if (m == p)
            return mid;
        if (m < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* Move b's owner word from `from` to `to`; false (and an error) when it was
 * something else: a second holder, or a transfer the pool lost track of. */
static bool own_move(struct worker *w, struct hp_buf *b, uint32_t from, uint32_t to,
                     const char *what)
{
    struct stress *s = w->s;
    size_t i = buf_index(s, b);
    if (i == SIZE_MAX) {
        stress_error(s, "thread %d: %s: %p is not a buffer of pool %s", w->idx, what, (void *)b,
                     hp_pool_name(s->pool));
        return false;
    }
    uint32_t seen = from;
    if (atomic_compare_exchange_strong_explicit(&s->owner[i], &seen, to, memory_order_relaxed,
                                                memory_order_relaxed))
        return true;
    char x[48], y[48];
    stress_error(s, "thread %d: %s: buffer %p (#%zu) is %s, expected %s: two holders", w->idx, what,
                 (void *)b, i, owner_str(seen, x, sizeof x), owner_str(from, y, sizeof y));
    return false;
}

/* ---- tags --------------------------------------------------------------- */

static void set_tag(struct worker *w, struct hp_buf *b, uint64_t tag)
{
    b->tag = tag;
    if (w->s->cfg->scribble) {
        /* the start of the data room too, headroom included: whatever the
         * pool keeps there while a buffer is free must not be read once
         * the buffer is out */
        for (uint32_t off = 0; off + 8 <= SCRIBBLE_BYTES && off + 8 <= b->room; off += 8)
            memcpy(b->base + off, &tag, sizeof tag);
    }
    memcpy(hp_buf_data(b), &tag, sizeof tag);
}

static uint64_t data_stamp(const struct hp_buf *b)
{
    uint64_t v;
    memcpy(&v, hp_buf_data(b), sizeof v);
    return v;
}

static uint64_t rnd(struct worker *w)
{
    return hp_test_rand(&w->rng);
}

static void count_ops(struct worker *w, uint64_t n)
{
    if (n)
        atomic_fetch_add_explicit(&w->s->ops, n, memory_order_relaxed);
}

static void publish(struct worker *w)
{
    atomic_store_explicit(&w->progress, w->n_alloc + w->n_free + w->n_sent + w->n_recv + w->n_steps,
                          memory_order_relaxed);
    atomic_store_explicit(&w->held_pub, w->n_held, memory_order_relaxed);
}

static void set_state(struct worker *w, int st)
{
    atomic_store_explicit(&w->state, st, memory_order_relaxed);
}

static void wait_at(struct worker *w, pthread_barrier_t *b)
{
    publish(w);
    set_state(w, ST_WAIT);
    pthread_barrier_wait(b);
    set_state(w, ST_RUN);
}

/* ---- the actions -------------------------------------------------------- */

/* A buffer just allocated: check what the pool promises and take it. */
static void take_new(struct worker *w, struct hp_buf *b)
{
    struct stress *s = w->s;
    if (!own_move(w, b, OW_FREE, OW_HELD(w->idx), "alloc"))
        return; /* not ours to keep: leave it to its other holder */
    if (b->pool != s->pool || b->next || hp_buf_refcnt(b) != 1 || b->data_len != 0 ||
        b->owner != (uint16_t)w->tid)
        stress_error(s,
                     "thread %d (tid %d): new buffer %p: pool %p (want %p), next %p, "
                     "refcnt %u, data_len %u, owner %u",
                     w->idx, w->tid, (void *)b, (void *)b->pool, (void *)s->pool, (void *)b->next,
                     (unsigned)hp_buf_refcnt(b), (unsigned)b->data_len, (unsigned)b->owner);
    if (b->tag != 0)
        stress_error(s, "thread %d: new buffer %p has tag %#llx, expected 0 (freed)", w->idx,
                     (void *)b, (unsigned long long)b->tag);
    set_tag(w, b, HELD_TAG(w->idx, w->seq++));
    w->held[w->n_held++] = b;
}

static struct hp_buf *take_random(struct worker *w)
{
    unsigned i = (unsigned)(rnd(w) % w->n_held);
    struct hp_buf *b = w->held[i];
    w->held[i] = w->held[--w->n_held];
    return b;
}

/* Check a held buffer still carries this thread's tag. */
static bool check_mine(struct worker *w, struct hp_buf *b, const char *what)
{
    uint64_t tag = b->tag, stamp = data_stamp(b);
    if (tag >> 32 == (uint64_t)w->idx + 1 && stamp == tag)
        return true;
    stress_error(w->s, "thread %d: %s: held buffer %p has tag %#llx, data stamp %#llx", w->idx,
                 what, (void *)b, (unsigned long long)tag, (unsigned long long)stamp);
    return false;
}

/* Give up a held buffer before freeing it: false when it is not ours. */
static bool release_buf(struct worker *w, struct hp_buf *b)
{
    struct stress *s = w->s;
    if (!check_mine(w, b, "free"))
        return false;
    /* a buffer whose owner has left and whose number is not reused yet */
    uint64_t dep = atomic_load_explicit(&s->departed_tids, memory_order_relaxed);
    if (b->owner < 64 && (dep >> b->owner & 1) &&
        !atomic_load_explicit(&s->newcomers_started, memory_order_relaxed))
        w->n_orphan_frees++;
    b->tag = 0;
    return own_move(w, b, OW_HELD(w->idx), OW_FREE, "free");
}

/* Free v[0..k) (released already; v has room for one more entry) one by
 * one, or in bulk, or in bulk with a NULL entry. */
static void free_some(struct worker *w, struct hp_buf **v, unsigned k)
{
    if (!k)
        return;
    unsigned mode = (unsigned)(rnd(w) % 8);
    if (mode < 2) {
        for (unsigned i = 0; i < k; i++)
            hp_buf_free(v[i]);
    } else if (mode == 2) {
        unsigned at = (unsigned)(rnd(w) % (k + 1));
        memmove(&v[at + 1], &v[at], (k - at) * sizeof v[0]);
        v[at] = NULL; /* skipped by hp_buf_free_bulk */
        hp_buf_free_bulk(v, k + 1);
    } else {
        hp_buf_free_bulk(v, k);
    }
    w->n_free += k;
    count_ops(w, k);
}

static void act_free(struct worker *w, unsigned n)
{
    unsigned k = 0;
    while (k < n && w->n_held) {
        struct hp_buf *b = take_random(w);
        if (release_buf(w, b))
            w->tmp[k++] = b;
    }
    free_some(w, w->tmp, k);
}

/* Free about half of what this thread holds (the pool ran dry). */
static void relieve(struct worker *w)
{
    if (!w->n_held) {
        sched_yield();
        return;
    }
    unsigned n = (w->n_held + 1) / 2;
    while (n) {
        unsigned k = n < BULK_MAX ? n : BULK_MAX;
        act_free(w, k);
        n -= k;
    }
}

static void act_alloc(struct worker *w, unsigned n)
{
    struct stress *s = w->s;
    struct hp_buf **v = w->tmp;
    unsigned got = 0;
    if (rnd(w) % 4 == 0) {
        while (got < n) {
            errno = 0;
            struct hp_buf *b = hp_buf_alloc(s->pool);
            if (!b) {
                if (errno != ENOMEM)
                    stress_error(s, "thread %d: hp_buf_alloc: NULL with errno %d, want ENOMEM",
                                 w->idx, errno);
                break;
            }
            v[got++] = b;
        }
    } else {
        int rc = hp_buf_alloc_bulk(s->pool, v, n);
        if (rc == (int)n)
            got = n;
        else if (rc != -ENOMEM)
            stress_error(s, "thread %d: hp_buf_alloc_bulk(%u) returned %d", w->idx, n, rc);
    }
    for (unsigned i = 0; i < got; i++)
        take_new(w, v[i]);
    w->n_alloc += got;
    count_ops(w, got);
    if (got < n) {
        w->n_enomem++;
        relieve(w);
    }
}

static struct ring *ring_of(struct stress *s, int from, int to)
{
    return &s->rings[from * s->nidx + to];
}

/* Push up to n held buffers to dest; returns how many went. */
static unsigned act_send(struct worker *w, int dest, unsigned n)
{
    struct ring *r = ring_of(w->s, w->idx, dest);
    size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    size_t space = RING_SIZE - (t - h);
    if (n > space)
        n = (unsigned)space;
    unsigned k = 0;
    for (unsigned i = 0; i < n && w->n_held; i++) {
        struct hp_buf *b = take_random(w);
        if (!check_mine(w, b, "send"))
            continue;
        set_tag(w, b, TAG_TRANSIT | (uint64_t)dest);
        if (!own_move(w, b, OW_HELD(w->idx), OW_TRANSIT(dest), "send"))
            continue;
        r->slot[(t + k) & (RING_SIZE - 1)] = b;
        k++;
    }
    atomic_store_explicit(&r->tail, t + k, memory_order_release);
    w->n_sent += k;
    return k;
}

/* Take what src sent, as long as this thread holds fewer than limit. */
static unsigned recv_from(struct worker *w, int src, unsigned limit)
{
    struct stress *s = w->s;
    struct ring *r = ring_of(s, src, w->idx);
    size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    size_t n = t - h;
    /* a stayer keeps what the leavers hand over apart, whatever it holds */
    bool to_stash = w->role == ROLE_STAYER && w->phase == PH_B && s->w[src].role == ROLE_LEAVER;
    size_t space = limit > w->n_held ? limit - w->n_held : 0;
    if (to_stash)
        space = w->stash_max - w->n_stash;
    if (n > space)
        n = space;
    const uint64_t want = TAG_TRANSIT | (uint64_t)w->idx;
    for (size_t k = 0; k < n; k++) {
        struct hp_buf *b = r->slot[(h + k) & (RING_SIZE - 1)];
        uint64_t tag = b->tag, stamp = data_stamp(b);
        if (tag != want || stamp != want) {
            stress_error(s,
                         "thread %d: buffer %p from thread %d has tag %#llx, data stamp "
                         "%#llx, expected %#llx (in transit to me)",
                         w->idx, (void *)b, src, (unsigned long long)tag, (unsigned long long)stamp,
                         (unsigned long long)want);
            continue;
        }
        if (!own_move(w, b, OW_TRANSIT(w->idx), OW_HELD(w->idx), "receive"))
            continue;
        set_tag(w, b, HELD_TAG(w->idx, w->seq++));
        if (to_stash && w->n_stash < w->stash_max)
            w->stash[w->n_stash++] = b;
        else
            w->held[w->n_held++] = b;
    }
    atomic_store_explicit(&r->head, h + n, memory_order_release);
    w->n_recv += n;
    return (unsigned)n;
}

static void recv_all(struct worker *w, unsigned limit)
{
    for (int src = 0; src < w->s->nidx; src++)
        if (src != w->idx)
            recv_from(w, src, limit);
}

/* Once every leaver has called hp_thread_exit(): free what they handed
 * over (alien frees to departed owners, some of whose numbers are free). */
static void free_stash(struct worker *w)
{
    struct stress *s = w->s;
    if (w->stash_freed)
        return;
    for (int src = 0; src < s->nidx; src++)
        if (s->w[src].role == ROLE_LEAVER)
            recv_from(w, src, w->held_max);
    while (w->n_stash) {
        unsigned k = 0;
        while (k < BULK_MAX && w->n_stash) {
            struct hp_buf *b = w->stash[--w->n_stash];
            if (release_buf(w, b))
                w->tmp[k++] = b;
        }
        free_some(w, w->tmp, k);
    }
    w->stash_freed = true;
    atomic_store_explicit(&w->stash_done, 1, memory_order_release);
}

/* A random destination among the bits of mask other than this thread. */
static int pick_dest(struct worker *w, uint32_t mask)
{
    mask &= ~(1u << w->idx);
    int n = __builtin_popcount(mask);
    if (!n)
        return -1;
    int k = (int)(rnd(w) % (unsigned)n);
    while (k--)
        mask &= mask - 1;
    return __builtin_ctz(mask);
}

static bool stop_now(struct worker *w, int phase)
{
    struct stress *s = w->s;
    if (atomic_load_explicit(&s->stop, memory_order_relaxed))
        return true;
    uint64_t ops = atomic_load_explicit(&s->ops, memory_order_relaxed);
    if (phase != PH_B)
        return ops >= s->budget;
    if (!atomic_load_explicit(&s->all_started, memory_order_acquire))
        return false;
    return ops - atomic_load_explicit(&s->ops_mark, memory_order_relaxed) >= s->budget_b;
}

static void run_loop(struct worker *w, int phase)
{
    struct stress *s = w->s;
    w->phase = phase;
    set_state(w, ST_RUN);
    while (!stop_now(w, phase)) {
        if (phase == PH_B && w->role == ROLE_STAYER && !w->stash_freed &&
            atomic_load_explicit(&s->leavers_done, memory_order_acquire) == s->n_leavers)
            free_stash(w);
        recv_all(w, w->held_max);
        unsigned n = 1 + (unsigned)(rnd(w) % BULK_MAX);
        uint64_t r = rnd(w);
        /* allocate with probability 1 - held/cap, else free or send half
         * and half: a thread holds about 2/3 of cap on average, and a
         * buffer is sent on about once before it is freed */
        if (w->n_held < w->cap && r % w->cap >= w->n_held) {
            unsigned room = w->cap - w->n_held;
            act_alloc(w, n < room ? n : room);
            publish(w);
            continue;
        }
        int dest = -1;
        if (r >> 63) {
            uint32_t mask =
                phase == PH_B ? atomic_load_explicit(&s->mask_b, memory_order_relaxed) : s->mask_a;
            dest = pick_dest(w, mask);
        }
        if (dest < 0 || !act_send(w, dest, n))
            act_free(w, n);
        publish(w);
    }
}

static bool inbound_empty(struct worker *w)
{
    for (int src = 0; src < w->s->nidx; src++) {
        struct ring *r = ring_of(w->s, src, w->idx);
        if (src != w->idx && atomic_load_explicit(&r->head, memory_order_relaxed) !=
                                 atomic_load_explicit(&r->tail, memory_order_acquire))
            return false;
    }
    return true;
}

/* Receive everything still in flight to this thread (nobody sends any
 * more), then free it all. */
static void drain_and_free(struct worker *w)
{
    if (w->role == ROLE_STAYER)
        free_stash(w);
    for (;;) {
        recv_all(w, w->held_max);
        bool done = inbound_empty(w);
        while (w->n_held)
            act_free(w, BULK_MAX);
        publish(w);
        if (done)
            break;
    }
}

/* ---- the threads -------------------------------------------------------- */

static void *plain_main(void *arg)
{
    struct worker *w = arg;
    struct stress *s = w->s;
    w->tid = hp_thread_id();
    run_loop(w, PH_MAIN);
    wait_at(w, &s->b_stop); /* nobody sends any more */
    drain_and_free(w);
    wait_at(w, &s->b_freed);
    hp_pool_thread_flush(s->pool);
    w->n_steps++;
    wait_at(w, &s->b_main); /* main checks after one round of flushes */
    wait_at(w, &s->b_main);
    hp_pool_thread_flush(s->pool);
    w->n_steps++;
    wait_at(w, &s->b_main); /* main checks after two rounds */
    wait_at(w, &s->b_main);
    set_state(w, ST_DONE);
    return NULL;
}

/* Phase A with everyone, then hand every buffer to the stayers and leave. */
static void *leaver_main(void *arg)
{
    struct worker *w = arg;
    struct stress *s = w->s;
    w->tid = hp_thread_id();
    run_loop(w, PH_A);
    wait_at(w, &s->b_a);
    /* a few fresh buffers of its own, so that the hand-over surely
     * includes buffers this thread owns */
    uint64_t before = w->n_alloc;
    for (int tries = 0; w->n_alloc == before && tries < 10000 && !atomic_load(&s->stop); tries++) {
        if (w->n_held + 32 > w->held_max)
            act_free(w, BULK_MAX);
        act_alloc(w, 32); /* on -ENOMEM: frees half of what it holds, or yields */
    }
    w->n_fresh = w->n_alloc - before;
    /* nobody sends to a leaver any more: pass on all it holds or receives */
    unsigned turn = (unsigned)w->idx;
    for (;;) {
        recv_all(w, w->held_max);
        if (!w->n_held && inbound_empty(w))
            break;
        int dest = s->stayers[turn++ % (unsigned)s->n_stayers];
        unsigned k = act_send(w, dest, BULK_MAX);
        w->n_handed += k;
        if (!k) {
            if (atomic_load(&s->stop))
                drain_and_free(w);
            else
                sched_yield();
        }
        publish(w);
    }
    hp_thread_exit(); /* flushes: its cache goes back while others hold its buffers */
    if (w->tid >= 0 && w->tid < 64)
        atomic_fetch_or(&s->departed_tids, 1ull << w->tid);
    atomic_fetch_add_explicit(&s->leavers_done, 1, memory_order_release);
    set_state(w, ST_DONE);
    return NULL;
}

static void finish_b(struct worker *w)
{
    struct stress *s = w->s;
    run_loop(w, PH_B);
    wait_at(w, &s->b_stop);
    drain_and_free(w);
    wait_at(w, &s->b_freed);
    hp_pool_thread_flush(s->pool);
    w->n_steps++;
    publish(w);
    /* one stayer says goodbye explicitly, the others leave it to the
     * thread-exit destructor */
    if (w->role == ROLE_STAYER && w->idx == s->stayers[0])
        hp_thread_exit();
    set_state(w, ST_DONE);
}

static void *stayer_main(void *arg)
{
    struct worker *w = arg;
    struct stress *s = w->s;
    w->tid = hp_thread_id();
    run_loop(w, PH_A);
    wait_at(w, &s->b_a);
    finish_b(w);
    return NULL;
}

static void *newcomer_main(void *arg)
{
    struct worker *w = arg;
    struct stress *s = w->s;
    w->tid = hp_thread_id();
    atomic_fetch_or(&s->mask_b, 1u << w->idx);
    if (atomic_fetch_add(&s->newcomers_started, 1) + 1 == s->n_newcomers) {
        atomic_store(&s->ops_mark, atomic_load(&s->ops));
        atomic_store_explicit(&s->all_started, 1, memory_order_release);
    }
    finish_b(w);
    return NULL;
}

static const char *state_name(int st)
{
    static const char *const names[] = {"idle", "running", "at a barrier", "done"};
    return st >= 0 && st <= ST_DONE ? names[st] : "?";
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Switch the alien policy every 1..4 ms; abort when a worker is stuck. */
static void *controller_main(void *arg)
{
    struct stress *s = arg;
    uint64_t rng = hp_test_seed() ^ 0xC0FFEEull;
    uint64_t last[MAX_IDX] = {0};
    double since[MAX_IDX], t0 = now_s();
    for (int i = 0; i < MAX_IDX; i++)
        since[i] = t0;
    int pol = (int)hp_pool_alien_policy(s->pool);
    for (unsigned step = 0; !atomic_load(&s->ctl_stop); step++) {
        long ms = pol == HP_ALIEN_ADAPTIVE && s->cfg->adaptive_ms
                      ? (long)s->cfg->adaptive_ms
                      : (long)(1 + hp_test_rand(&rng) % 4);
        struct timespec d = {ms / 1000, ms % 1000 * 1000000L};
        nanosleep(&d, NULL);
        int idx = step % 4 == 3 ? (int)(hp_test_rand(&rng) % 3) : (int)(step % 4);
        pol = HP_ALIEN_LOCAL + idx;
        int rc = hp_pool_set_alien_policy(s->pool, pol);
        if (rc != 0)
            stress_error(s, "hp_pool_set_alien_policy(%d) returned %d", pol, rc);
        else if ((int)hp_pool_alien_policy(s->pool) != pol)
            stress_error(s, "hp_pool_alien_policy() is %d right after setting %d",
                         (int)hp_pool_alien_policy(s->pool), pol);
        s->switches++;
        s->per_policy[idx]++;
        (void)hp_pool_in_use(s->pool); /* allowed while others work; inexact */

        double t = now_s();
        int stuck = -1;
        for (int i = 0; i < s->nidx; i++) {
            struct worker *w = &s->w[i];
            uint64_t p = atomic_load_explicit(&w->progress, memory_order_relaxed);
            int st = atomic_load_explicit(&w->state, memory_order_relaxed);
            if (p != last[i] || st != ST_RUN) {
                last[i] = p;
                since[i] = t;
            } else if (t - since[i] > WATCHDOG_S) {
                stuck = i;
            }
        }
        if (stuck >= 0) {
            fprintf(stderr,
                    "    %s: watchdog: thread %d made no progress for %d s "
                    "(policy %s, %llu ops done, pool in use %ld)\n",
                    s->cfg->name, stuck, WATCHDOG_S,
                    hp_alien_policy_name((int)hp_pool_alien_policy(s->pool)),
                    (unsigned long long)atomic_load(&s->ops), hp_pool_in_use(s->pool));
            for (int i = 0; i < s->nidx; i++) {
                struct worker *w = &s->w[i];
                fprintf(stderr, "      thread %d: %s, holds %u, progress %llu\n", i,
                        state_name(atomic_load(&w->state)), atomic_load(&w->held_pub),
                        (unsigned long long)atomic_load(&w->progress));
            }
            fflush(stderr);
            abort();
        }
    }
    return NULL;
}

/* ---- setup and checks --------------------------------------------------- */

static uint64_t stress_ops(double scale)
{
    double ops = STRESS_DEFAULT_OPS;
    const char *e = getenv("HP_STRESS_OPS");
    if (e && *e) {
        char *end;
        double v = strtod(e, &end);
        if (end != e && v >= 1)
            ops = v;
        else
            fprintf(stderr, "    HP_STRESS_OPS=%s is not a number; using %.0f\n", e, ops);
    }
    ops *= scale;
    return ops < 1000 ? 1000 : (uint64_t)ops;
}

static void stress_free(struct stress *s)
{
    for (int i = 0; i < MAX_IDX; i++) {
        free(s->w[i].held);
        free(s->w[i].stash);
    }
    free(s->rings);
    free(s->owner);
    free(s->sorted);
    free(s);
}

/* Create the pool and learn its buffers by allocating them all. */
static struct stress *stress_setup(const struct stress_cfg *cfg, int nidx)
{
    struct stress *s = calloc(1, sizeof *s);
    HP_CHECK(s != NULL);
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->nidx = nidx;
    s->n_bufs = cfg->n_bufs;
    struct hp_pool_config pc = {
        .name = cfg->name,
        .n_bufs = cfg->n_bufs,
        .data_room = 512,
        .cache_size = cfg->cache_size,
        .defer_max = cfg->defer_max,
        .alien_policy = cfg->policy,
    };
    s->pool = hp_pool_create(&pc);
    HP_CHECK(s->pool != NULL);
    /* Short ADAPTIVE epochs: many explorations, so that its routes switch
     * under load too (and under ThreadSanitizer). */
    if (s->pool)
        hp__pool_set_epoch(s->pool, 8);
    s->sorted = calloc(cfg->n_bufs, sizeof *s->sorted);
    s->owner = calloc(cfg->n_bufs, sizeof *s->owner);
    size_t rings_len = sizeof(struct ring) * (size_t)(nidx * nidx);
    s->rings = aligned_alloc(64, rings_len);
    HP_CHECK(s->sorted && s->owner && s->rings);
    if (!s->pool || !s->sorted || !s->owner || !s->rings) {
        if (s->pool)
            hp_pool_destroy(s->pool);
        stress_free(s);
        return NULL;
    }
    memset(s->rings, 0, rings_len);

    int rc = hp_buf_alloc_bulk(s->pool, s->sorted, cfg->n_bufs);
    HP_CHECK_EQ(rc, (int)cfg->n_bufs);
    if (rc != (int)cfg->n_bufs) {
        hp_pool_destroy(s->pool);
        stress_free(s);
        return NULL;
    }
    for (uint32_t i = 0; i < cfg->n_bufs; i++)
        s->sorted[i]->tag = 0;
    hp_buf_free_bulk(s->sorted, cfg->n_bufs);
    hp_pool_thread_flush(s->pool);
    qsort(s->sorted, cfg->n_bufs, sizeof *s->sorted, cmp_ptr);
    bool distinct = true;
    for (uint32_t i = 1; i < cfg->n_bufs; i++)
        distinct &= s->sorted[i] != s->sorted[i - 1];
    HP_CHECK(distinct);
    HP_CHECK_EQ(hp_pool_in_use(s->pool), 0);
    s->base = (uintptr_t)s->sorted[0];
    if (cfg->n_bufs > 1) {
        uintptr_t stride = (uintptr_t)s->sorted[1] - s->base;
        bool even = stride > 0;
        for (uint32_t i = 2; even && i < cfg->n_bufs; i++)
            even = (uintptr_t)s->sorted[i] == s->base + i * stride;
        if (even)
            s->stride = stride;
    }
    HP_CHECK_EQ(hp_pool_set_alien_policy(s->pool, HP_ALIEN_ADAPTIVE + 1), -EINVAL);
    HP_CHECK_EQ(hp_pool_set_alien_policy(s->pool, 0), -EINVAL);
    HP_CHECK_EQ(hp_pool_set_alien_policy(s->pool, -1), -EINVAL);

    unsigned inbound = (unsigned)(nidx - 1) * RING_SIZE;
    for (int i = 0; i < nidx; i++) {
        struct worker *w = &s->w[i];
        w->s = s;
        w->idx = i;
        w->cap = cfg->hold_cap;
        w->held_max = cfg->hold_cap + inbound;
        w->held = calloc(w->held_max, sizeof *w->held);
        w->stash_max = 2 * (w->held_max + BULK_MAX);
        w->stash = calloc(w->stash_max, sizeof *w->stash);
        w->rng = hp_test_seed() * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xD1B54A32D192ED03ull + 1;
        HP_CHECK(w->held != NULL && w->stash != NULL);
        if (!w->held || !w->stash) {
            hp_pool_destroy(s->pool);
            stress_free(s);
            return NULL;
        }
    }
    return s;
}

/* What allocating every buffer at once gave. */
struct all_back {
    int rc;              /* hp_buf_alloc_bulk(n_bufs) */
    uint32_t one_by_one; /* when that failed: how many hp_buf_alloc found */
    bool distinct;       /* n_bufs distinct buffers, all the pool's */
};

/* Allocate every buffer at once, check them and free them again (and flush
 * this thread's cache, so that it holds none). */
static struct all_back try_alloc_all(struct stress *s)
{
    struct all_back r = {0, 0, false};
    struct hp_buf **v = calloc(s->n_bufs, sizeof *v);
    if (!v)
        return r;
    uint32_t got = 0;
    r.rc = hp_buf_alloc_bulk(s->pool, v, s->n_bufs);
    if (r.rc == (int)s->n_bufs) {
        got = s->n_bufs;
        qsort(v, got, sizeof *v, cmp_ptr);
        r.distinct = true;
        for (uint32_t i = 0; i < got; i++)
            if ((i && v[i] == v[i - 1]) || buf_index(s, v[i]) == SIZE_MAX)
                r.distinct = false;
    } else {
        struct hp_buf *b;
        while (got < s->n_bufs && (b = hp_buf_alloc(s->pool)))
            v[got++] = b;
        r.one_by_one = got;
    }
    hp_buf_free_bulk(v, got);
    hp_pool_thread_flush(s->pool);
    free(v);
    return r;
}

static const char *all_back_str(const struct stress *s, const struct all_back *r, char *buf,
                                size_t len)
{
    if (r->rc == (int)s->n_bufs)
        snprintf(buf, len, "hp_buf_alloc_bulk(%u) succeeded", s->n_bufs);
    else
        snprintf(buf, len, "hp_buf_alloc_bulk(%u) = %d, hp_buf_alloc one at a time found %u",
                 s->n_bufs, r->rc, r->one_by_one);
    return buf;
}

static void check_counters(struct stress *s, const char *when)
{
    struct hp_pool_stats st;
    HP_CHECK_EQ(hp_pool_stats(s->pool, &st), 0);
    long in_use = hp_pool_in_use(s->pool);
    if (in_use != 0 || st.errors != 0 || st.allocs != st.frees)
        hp_test_fail(__FILE__, __LINE__,
                     "%s %s: in use %ld (want 0), errors %llu (want 0), allocs %llu, frees %llu",
                     s->cfg->name, when, in_use, (unsigned long long)st.errors,
                     (unsigned long long)st.allocs, (unsigned long long)st.frees);
}

/* ADAPTIVE's explorations over every pair. */
static uint64_t explorations(struct stress *s)
{
    struct hp_pool_pair_stats ps[HP_MAX_THREADS];
    int n = hp_pool_pair_stats(s->pool, ps, HP_MAX_THREADS);
    uint64_t e = 0;
    for (int i = 0; i < n && i < HP_MAX_THREADS; i++)
        e += ps[i].explorations;
    return e;
}

static void report(struct stress *s, double secs)
{
    struct hp_pool_stats st;
    memset(&st, 0, sizeof st);
    hp_pool_stats(s->pool, &st);
    uint64_t sent = 0, enomem = 0, handed = 0, orphans = 0;
    for (int i = 0; i < s->nidx; i++) {
        sent += s->w[i].n_sent;
        enomem += s->w[i].n_enomem;
        handed += s->w[i].n_handed;
        orphans += s->w[i].n_orphan_frees;
    }
    uint64_t ops = atomic_load(&s->ops);
    printf("    %s: %llu ops in %.2f s (%.1f Mops/s); sent %llu; frees %llu, alien %llu "
           "(%.0f%%), deferred %llu, overflows %llu, taken back %llu; ENOMEM %llu; "
           "policy switches %llu (L %llu, D %llu, A %llu), adaptive: %llu explorations, "
           "%llu pair switches",
           s->cfg->name, (unsigned long long)ops, secs, ops / secs / 1e6, (unsigned long long)sent,
           (unsigned long long)st.frees, (unsigned long long)st.alien_frees,
           st.frees ? 100.0 * (double)st.alien_frees / (double)st.frees : 0.0,
           (unsigned long long)st.deferred, (unsigned long long)st.defer_overflows,
           (unsigned long long)st.defer_taken, (unsigned long long)enomem,
           (unsigned long long)s->switches, (unsigned long long)s->per_policy[0],
           (unsigned long long)s->per_policy[1], (unsigned long long)s->per_policy[2],
           (unsigned long long)explorations(s), (unsigned long long)st.policy_switches);
    if (handed || orphans)
        printf("; handed over by leavers %llu, frees with a departed owner (number not "
               "reused yet) %llu",
               (unsigned long long)handed, (unsigned long long)orphans);
    printf("\n");
}

/* Sanity of the run itself (did it exercise what it is meant to?) and the
 * final check: every buffer allocatable at once, then destroy. */
static void final_checks(struct stress *s, bool multi)
{
    struct hp_pool_stats st;
    memset(&st, 0, sizeof st);
    HP_CHECK_EQ(hp_pool_stats(s->pool, &st), 0);
    if (multi)
        HP_CHECK_GT(st.alien_frees, 0);
    if (multi && s->per_policy[HP_ALIEN_DEFER - HP_ALIEN_LOCAL] >= 3)
        HP_CHECK_GT(st.deferred, 0);
    HP_CHECK_GE(st.frees, atomic_load(&s->ops) / 2);
    /* The pairs account for every alien free and every ADAPTIVE switch. */
    struct hp_pool_pair_stats ps[HP_MAX_THREADS];
    int n = hp_pool_pair_stats(s->pool, ps, HP_MAX_THREADS);
    HP_CHECK_GE(n, 0);
    uint64_t alien = 0, switches = 0;
    for (int i = 0; i < n && i < HP_MAX_THREADS; i++) {
        alien += ps[i].alien_frees;
        switches += ps[i].switches;
        HP_CHECK(ps[i].policy == HP_ALIEN_LOCAL || ps[i].policy == HP_ALIEN_DEFER);
        HP_CHECK_NE(ps[i].freer, ps[i].owner);
    }
    HP_CHECK_EQ(alien, st.alien_frees);
    HP_CHECK_EQ(switches, st.policy_switches);
    /* Long ADAPTIVE stretches: it explored, its routes switching under load. */
    if (multi && s->cfg->adaptive_ms && s->per_policy[HP_ALIEN_ADAPTIVE - HP_ALIEN_LOCAL] >= 3)
        HP_CHECK_GT(explorations(s), 0);
}

static void destroy_pool(struct stress *s)
{
    hp_pool_thread_flush(s->pool);
    HP_CHECK_EQ(hp_pool_destroy(s->pool), 0);
}

static void start_controller(struct stress *s)
{
    int rc = pthread_create(&s->ctl, NULL, controller_main, s);
    if (rc) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        abort();
    }
}

static void start_worker(struct worker *w, void *(*fn)(void *))
{
    int rc = pthread_create(&w->th, NULL, fn, w);
    if (rc) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        abort();
    }
}

static void stop_controller(struct stress *s)
{
    atomic_store(&s->ctl_stop, 1);
    pthread_join(s->ctl, NULL);
}

/* ---- the tests ---------------------------------------------------------- */

static void stress_plain(const struct stress_cfg *cfg)
{
    int n = cfg->nthreads;
    struct stress *s = stress_setup(cfg, n);
    if (!s)
        return;
    s->budget = stress_ops(cfg->ops_scale);
    s->mask_a = (1u << n) - 1;
    pthread_barrier_init(&s->b_stop, NULL, (unsigned)n);
    pthread_barrier_init(&s->b_freed, NULL, (unsigned)n);
    pthread_barrier_init(&s->b_main, NULL, (unsigned)n + 1);

    double t0 = now_s();
    start_controller(s);
    for (int i = 0; i < n; i++)
        start_worker(&s->w[i], plain_main);

    /* round 1: every worker drained, freed and flushed once */
    pthread_barrier_wait(&s->b_main);
    double secs = now_s() - t0;
    stop_controller(s);
    int errors = atomic_load(&s->errors);
    struct all_back r1 = {0, 0, false}, r2 = r1, r3 = r1;
    bool ok1 = false;
    if (!errors) {
        check_counters(s, "after every thread flushed");
        r1 = try_alloc_all(s);
        ok1 = r1.rc == (int)s->n_bufs;
    }
    pthread_barrier_wait(&s->b_main);
    /* round 2: each worker flushed again (diagnosis only) */
    pthread_barrier_wait(&s->b_main);
    if (!errors && !ok1)
        r2 = try_alloc_all(s);
    pthread_barrier_wait(&s->b_main);
    for (int i = 0; i < n; i++)
        pthread_join(s->w[i].th, NULL);
    if (!errors && !ok1)
        r3 = try_alloc_all(s);

    errors = atomic_load(&s->errors);
    HP_CHECK_EQ(errors, 0);
    /* distinct thread numbers: all workers and main were alive together */
    for (int i = 0; i < n; i++) {
        HP_CHECK(s->w[i].tid >= 0 && s->w[i].tid < HP_MAX_THREADS);
        HP_CHECK_NE(s->w[i].tid, hp_thread_id());
        for (int j = 0; j < i; j++)
            HP_CHECK_NE(s->w[i].tid, s->w[j].tid);
    }
    report(s, secs);
    if (!errors) {
        char x[128], y[128], z[128];
        if (!ok1)
            hp_test_fail(__FILE__, __LINE__,
                         "%s: with every thread flushed (and idle), not all buffers could be "
                         "allocated at once: %s; after a second round of flushes: %s; after "
                         "the threads exited: %s",
                         cfg->name, all_back_str(s, &r1, x, sizeof x),
                         all_back_str(s, &r2, y, sizeof y), all_back_str(s, &r3, z, sizeof z));
        else
            HP_CHECK(r1.distinct);
        check_counters(s, "at the end");
        final_checks(s, n > 1);
        if (cfg->expect_dry) {
            uint64_t enomem = 0;
            for (int i = 0; i < n; i++)
                enomem += s->w[i].n_enomem;
            HP_CHECK_GT(enomem, 0);
        }
        destroy_pool(s);
    } else {
        /* a broken pool: destroy reports what is still out */
        hp_pool_destroy(s->pool);
    }
    pthread_barrier_destroy(&s->b_stop);
    pthread_barrier_destroy(&s->b_freed);
    pthread_barrier_destroy(&s->b_main);
    stress_free(s);
}

HP_TEST(pool_stress_2_threads)
{
    static const struct stress_cfg cfg = {
        .name = "stress-2t",
        .nthreads = 2,
        .n_bufs = 8192,
        .cache_size = 0,
        .defer_max = 0,
        .policy = -1,
        .hold_cap = 512,
        .ops_scale = 1.0,
        .adaptive_ms = ADAPTIVE_MS,
    };
    stress_plain(&cfg);
}

HP_TEST(pool_stress_3_threads)
{
    static const struct stress_cfg cfg = {
        .name = "stress-3t",
        .nthreads = 3,
        .n_bufs = 8192,
        .cache_size = 64,
        .defer_max = 256,
        .policy = HP_ALIEN_DEFER,
        .hold_cap = 384,
        .ops_scale = 1.0,
        .adaptive_ms = ADAPTIVE_MS,
    };
    stress_plain(&cfg);
}

HP_TEST(pool_stress_4_threads)
{
    static const struct stress_cfg cfg = {
        .name = "stress-4t",
        .nthreads = 4,
        .n_bufs = 8192,
        .cache_size = 128,
        .defer_max = 32,
        .policy = HP_ALIEN_LOCAL,
        .hold_cap = 384,
        .ops_scale = 1.0,
    };
    stress_plain(&cfg);
}

/* 256 buffers, caches of 32 and four threads that each want up to 192:
 * the pool runs dry all the time and -ENOMEM must be survived (a thread that
 * gets it frees half of what it holds and tries again). */
HP_TEST(pool_stress_dry_pool)
{
    static const struct stress_cfg cfg = {
        .name = "stress-dry",
        .nthreads = 4,
        .n_bufs = 256,
        .cache_size = 32,
        .defer_max = 16,
        .policy = -1,
        .hold_cap = 192,
        .ops_scale = 1.0,
        .expect_dry = true,
        .scribble = true,
    };
    stress_plain(&cfg);
}

/*
 * Threads 0 and 1 work with 2 and 3 for a while, hand everything they hold
 * to 2 and 3 and call hp_thread_exit() while 2 and 3 keep working and hold
 * buffers 0 and 1 allocated (so those get alien frees to a departed owner,
 * under every policy). Then threads 4 and 5 start (likely reusing the
 * departed thread numbers) and work with 2 and 3 until the end. Thread 2
 * calls hp_thread_exit() after its final flush, the others simply exit.
 */
HP_TEST(pool_stress_thread_exit)
{
    static const struct stress_cfg cfg = {
        .name = "stress-exit",
        .nthreads = 4,
        .n_bufs = 4096,
        .cache_size = 64,
        .defer_max = 32,
        .policy = HP_ALIEN_DEFER,
        .hold_cap = 256,
        .ops_scale = 0.25,
        .scribble = true,
    };
    enum { N_ORIG = 4, N_NEW = 2 };
    struct stress *s = stress_setup(&cfg, N_ORIG + N_NEW);
    if (!s)
        return;
    uint64_t total = stress_ops(cfg.ops_scale);
    s->budget = total / 2;
    s->budget_b = total - s->budget;
    s->mask_a = (1u << N_ORIG) - 1;
    s->stayers[0] = 2;
    s->stayers[1] = 3;
    s->n_stayers = 2;
    s->n_leavers = 2;
    s->n_newcomers = N_NEW;
    atomic_store(&s->mask_b, (1u << 2) | (1u << 3));
    pthread_barrier_init(&s->b_a, NULL, N_ORIG);
    pthread_barrier_init(&s->b_stop, NULL, s->n_stayers + N_NEW);
    pthread_barrier_init(&s->b_freed, NULL, s->n_stayers + N_NEW);

    double t0 = now_s();
    start_controller(s);
    /* roles are read across threads: all set before any starts */
    s->w[0].role = s->w[1].role = ROLE_LEAVER;
    s->w[2].role = s->w[3].role = ROLE_STAYER;
    s->w[4].role = s->w[5].role = ROLE_NEWCOMER;
    start_worker(&s->w[0], leaver_main);
    start_worker(&s->w[1], leaver_main);
    start_worker(&s->w[2], stayer_main);
    start_worker(&s->w[3], stayer_main);
    pthread_join(s->w[0].th, NULL);
    pthread_join(s->w[1].th, NULL);
    uint64_t handed = s->w[0].n_handed + s->w[1].n_handed;
    uint64_t fresh = s->w[0].n_fresh + s->w[1].n_fresh;
    /* 2 and 3 work on alone and free what 0 and 1 handed over, while
     * nobody has the departed threads' numbers */
    while (!(atomic_load_explicit(&s->w[2].stash_done, memory_order_acquire) &&
             atomic_load_explicit(&s->w[3].stash_done, memory_order_acquire)) &&
           !atomic_load(&s->stop)) {
        struct timespec d = {0, 1000000L};
        nanosleep(&d, NULL);
    }
    for (int i = N_ORIG; i < N_ORIG + N_NEW; i++)
        start_worker(&s->w[i], newcomer_main);
    for (int i = 2; i < N_ORIG + N_NEW; i++)
        pthread_join(s->w[i].th, NULL);
    double secs = now_s() - t0;
    stop_controller(s);

    int errors = atomic_load(&s->errors);
    HP_CHECK_EQ(errors, 0);
    report(s, secs);
    printf("    %s: thread numbers: leavers %d %d, stayers %d %d, newcomers %d %d\n", cfg.name,
           s->w[0].tid, s->w[1].tid, s->w[2].tid, s->w[3].tid, s->w[4].tid, s->w[5].tid);
    /* threads alive at the same time have distinct numbers */
    for (int i = 2; i < N_ORIG + N_NEW; i++)
        for (int j = 2; j < i; j++)
            HP_CHECK_NE(s->w[i].tid, s->w[j].tid);
    HP_CHECK_NE(s->w[0].tid, s->w[1].tid);
    if (!errors) {
        uint64_t orphans = 0;
        for (int i = 2; i < N_ORIG + N_NEW; i++)
            orphans += s->w[i].n_orphan_frees;
        HP_CHECK_GT(handed, 0);
        HP_CHECK_GT(fresh, 0);
        HP_CHECK_GE(orphans, fresh);
        check_counters(s, "after every thread exited");
        struct all_back r = try_alloc_all(s);
        char x[128];
        if (r.rc != (int)s->n_bufs)
            hp_test_fail(__FILE__, __LINE__,
                         "%s: with every thread flushed and gone, not all buffers could be "
                         "allocated at once: %s",
                         cfg.name, all_back_str(s, &r, x, sizeof x));
        else
            HP_CHECK(r.distinct);
        check_counters(s, "at the end");
        final_checks(s, true);
        destroy_pool(s);
    } else {
        hp_pool_destroy(s->pool);
    }
    pthread_barrier_destroy(&s->b_a);
    pthread_barrier_destroy(&s->b_stop);
    pthread_barrier_destroy(&s->b_freed);
    stress_free(s);
}

/* ---- flushes in an unlucky order ---------------------------------------- */

/*
 * The end of the stress tests, made deterministic: thread A allocates 40
 * buffers and hands them to B; A flushes; only then does B free them
 * (alien frees under DEFER, so they are staged for A) and flush. Every
 * thread has flushed and nothing is in use, so the pool must give all its
 * buffers at once.
 */
struct flush_order {
    struct hp_pool *pool;
    struct hp_buf *v[40];
    int rc;
    pthread_barrier_t bar;
};

static void *flush_order_a(void *arg)
{
    struct flush_order *f = arg;
    f->rc = hp_buf_alloc_bulk(f->pool, f->v, 40);
    pthread_barrier_wait(&f->bar); /* 1: handed to B */
    hp_pool_thread_flush(f->pool);
    pthread_barrier_wait(&f->bar); /* 2: A flushed */
    pthread_barrier_wait(&f->bar); /* 3: B freed and flushed */
    pthread_barrier_wait(&f->bar); /* 4: main checked */
    return NULL;
}

static void *flush_order_b(void *arg)
{
    struct flush_order *f = arg;
    pthread_barrier_wait(&f->bar);
    pthread_barrier_wait(&f->bar);
    if (f->rc == 40)
        hp_buf_free_bulk(f->v, 40);
    hp_pool_thread_flush(f->pool);
    pthread_barrier_wait(&f->bar);
    pthread_barrier_wait(&f->bar);
    return NULL;
}

HP_TEST(pool_thread_flush_order)
{
    enum { N = 1024 };
    struct hp_pool_config pc = {
        .name = "flush-order",
        .n_bufs = N,
        .data_room = 512,
        .cache_size = 64,
        .alien_policy = HP_ALIEN_DEFER,
    };
    struct flush_order f = {.pool = hp_pool_create(&pc)};
    HP_REQUIRE(f.pool != NULL);
    pthread_barrier_init(&f.bar, NULL, 3);
    pthread_t a, b;
    HP_REQUIRE_EQ(pthread_create(&a, NULL, flush_order_a, &f), 0);
    HP_REQUIRE_EQ(pthread_create(&b, NULL, flush_order_b, &f), 0);
    for (int i = 0; i < 3; i++)
        pthread_barrier_wait(&f.bar);
    HP_CHECK_EQ(f.rc, 40);
    struct hp_pool_stats st;
    HP_CHECK_EQ(hp_pool_stats(f.pool, &st), 0);
    long in_use = hp_pool_in_use(f.pool);
    HP_CHECK_EQ(in_use, 0);
    HP_CHECK_EQ(st.errors, 0);
    HP_CHECK_EQ(st.alien_frees, 40);
    static struct hp_buf *all[N];
    int rc = hp_buf_alloc_bulk(f.pool, all, N);
    uint32_t got = 0;
    if (rc == N) {
        got = N;
    } else {
        struct hp_buf *x;
        while (got < N && (x = hp_buf_alloc(f.pool)))
            all[got++] = x;
        hp_test_fail(__FILE__, __LINE__,
                     "A flushed, then B freed A's 40 buffers (DEFER, %llu deferred) and "
                     "flushed: in use %ld, but hp_buf_alloc_bulk(%d) = %d (one at a time: %u)",
                     (unsigned long long)st.deferred, in_use, N, rc, got);
    }
    hp_buf_free_bulk(all, got);
    hp_pool_thread_flush(f.pool);
    pthread_barrier_wait(&f.bar);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&f.bar);
    HP_CHECK_EQ(hp_pool_destroy(f.pool), 0);
}

/* ---- leak check after every test ---------------------------------------- */

static int pools_leak_check(void)
{
    long n = hp_pools_in_use();
    if (n != 0)
        fprintf(stderr, "    %ld buffer(s) still in use in live pools\n", n);
    return n > 0 ? (int)(n < 1000000 ? n : 1000000) : n != 0;
}

__attribute__((constructor)) static void register_teardown(void)
{
    hp_test_add_teardown("hp_pools_in_use() == 0", pools_leak_check);
}

/* ---- pair stats of pairs that never freed under ADAPTIVE ------------------ */

struct one_free {
    struct hp_buf *b;
};

static void *free_it(void *arg)
{
    hp_buf_free(((struct one_free *)arg)->b);
    hp_thread_exit();
    return NULL;
}

/* Alien frees under a fixed policy, then the pool switched to ADAPTIVE: the
 * pair's stats say LOCAL or DEFER (a stress run once found an unset 0 here:
 * the pair had published nothing, having freed nothing under ADAPTIVE). */
HP_TEST(pool_pair_stats_after_switch_to_adaptive)
{
    struct hp_pool_config pc = {.name = "pair-stats",
                                .n_bufs = 64,
                                .cache_size = 8,
                                .alien_policy = HP_ALIEN_LOCAL};
    struct hp_pool *p = hp_pool_create(&pc);
    HP_REQUIRE(p != NULL);
    struct one_free f = {.b = hp_buf_alloc(p)};
    HP_REQUIRE(f.b != NULL);
    pthread_t th;
    HP_REQUIRE_EQ(pthread_create(&th, NULL, free_it, &f), 0);
    pthread_join(th, NULL);
    HP_REQUIRE_EQ(hp_pool_set_alien_policy(p, HP_ALIEN_ADAPTIVE), 0);
    struct hp_pool_pair_stats ps[HP_MAX_THREADS];
    int n = hp_pool_pair_stats(p, ps, HP_MAX_THREADS);
    HP_CHECK_GE(n, 1);
    for (int i = 0; i < n && i < HP_MAX_THREADS; i++) {
        HP_CHECK(ps[i].policy == HP_ALIEN_LOCAL || ps[i].policy == HP_ALIEN_DEFER);
        HP_CHECK_EQ(ps[i].alien_frees, 1);
    }
    hp_pool_thread_flush(p);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
}
