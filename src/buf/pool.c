/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffer pools: thread numbers, the registry, the shared ring, creation and destruction, the policy, stats. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hotpath/pool.h>

#include "../base/debug.h"
#include "internal.h"

#define MAX_POOLS HP__MAX_POOLS
#define MAX_CACHE 4096

/* ---- the registry of pools and of thread numbers ------------------------ */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
struct hp_pool *_Atomic hp__registry[MAX_POOLS];
_Thread_local int hp__last_slot __attribute__((tls_model("initial-exec"))) = -1;
#define registry hp__registry
static _Atomic int registry_hi; /* slots in use are below this */
static _Atomic uint64_t tids_used;
_Thread_local int hp__my_tid __attribute__((tls_model("initial-exec"))) = -2;
#define my_tid hp__my_tid
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void thread_destructor(void *arg)
{
    (void)arg;
    hp_thread_exit();
}

static void make_key(void)
{
    (void)pthread_key_create(&exit_key, thread_destructor);
}

int hp__tid(void)
{
    if (__builtin_expect(my_tid >= 0, 1))
        return my_tid;
    if (my_tid == -1)
        return -1;
    uint64_t used = atomic_load_explicit(&tids_used, memory_order_relaxed);
    for (;;) {
        if (used == UINT64_MAX) {
            my_tid = -1;
            return -1;
        }
        int t = __builtin_ctzll(~used);
        if (atomic_compare_exchange_weak_explicit(&tids_used, &used, used | (1ull << t),
                                                  memory_order_acq_rel, memory_order_relaxed)) {
            my_tid = t;
            break;
        }
    }
    /* Mark the number alive in every pool, and have hp_thread_exit() run
     * when the thread ends. */
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < atomic_load(&registry_hi); i++) {
        struct hp_pool *p = atomic_load(&registry[i]);
        if (p)
            atomic_store(&p->owners[my_tid].alive, 1);
    }
    pthread_mutex_unlock(&registry_lock);
    pthread_once(&exit_once, make_key);
    pthread_setspecific(exit_key, (void *)1);
    return my_tid;
}

HP_API int hp_thread_id(void)
{
    return hp__tid();
}

struct hp_pool *hp__pool_lookup(const void *b)
{
    const unsigned char *p = b;
    int hi = atomic_load_explicit(&registry_hi, memory_order_acquire);
    for (int i = 0; i < hi; i++) {
        struct hp_pool *pool = atomic_load_explicit(&registry[i], memory_order_acquire);
        if (pool && p >= pool->region && p + sizeof(struct hp_buf) <= pool->region_end) {
            hp__last_slot = i;
            return pool;
        }
    }
    return NULL;
}

void hp__pool_report(struct hp_pool *pool, const void *b, const char *what)
{
    hp__log(HP_LOG_ERR, "pool", "'%s': %s: buffer %p", pool ? pool->name : "(none)", what, b);
    if (!pool)
        return;
    int t = hp__tid();
    struct hp__cache *c =
        t >= 0 ? atomic_load_explicit(&pool->caches[t], memory_order_relaxed) : NULL;
    if (c)
        hp__count(&c->c.errors, 1);
    else
        atomic_fetch_add_explicit(&pool->nocache_errors, 1, memory_order_relaxed);
}

/* ---- the shared ring ----------------------------------------------------- */

/* A ring that holds at most n entries. */
static struct hp__ring *ring_create(uint32_t n)
{
    uint32_t size = 2;
    while (size < n + 1)
        size <<= 1;
    size_t bytes = sizeof(struct hp__ring) + (size_t)size * sizeof(void *);
    /* aligned_alloc wants a multiple of the alignment. */
    bytes = (bytes + HP_CACHELINE_SIZE - 1) & ~(size_t)(HP_CACHELINE_SIZE - 1);
    struct hp__ring *r = aligned_alloc(HP_CACHELINE_SIZE, bytes);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->size = size;
    r->mask = size - 1;
    r->cap = n;
    return r;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* A failed reservation, or waiting for an earlier one to publish. */
_Thread_local uint64_t hp__ring_retries __attribute__((tls_model("initial-exec")));
#define ring_retries hp__ring_retries

void hp__ring_retries_add(uint64_t n)
{
    ring_retries += n;
}

static void ring_wait_tail(_Atomic uint32_t *tail, uint32_t head)
{
    if (atomic_load_explicit(tail, memory_order_relaxed) != head)
        ring_retries++;
    /* Earlier reservations publish first, in order. A thread preempted
     * between its reservation and its publication holds the others up; yield
     * so it can run when cores are oversubscribed. */
    /* Acquire: the earlier reservation's slot writes must be visible before
     * our release store publishes them along with ours (a plain store does
     * not extend its release sequence). */
    for (unsigned spins = 0; atomic_load_explicit(tail, memory_order_acquire) != head; spins++) {
        if (spins > 64)
            sched_yield();
        else
            cpu_relax();
    }
}

/* Enqueue all n or none. The ring holds every buffer of the pool, so it
 * never runs out of room in practice. */
bool hp__ring_put(struct hp__ring *r, struct hp_buf *const *objs, uint32_t n)
{
    HP_ASSERT(n <= r->cap && r->cap < r->size); /* a put never exceeds the ring */
    uint32_t head = atomic_load_explicit(&r->prod_head, memory_order_relaxed), next;
    do {
        uint32_t cons = atomic_load_explicit(&r->cons_tail, memory_order_acquire);
        if (r->cap - (head - cons) < n)
            return false;
        next = head + n;
    } while (!atomic_compare_exchange_weak_explicit(&r->prod_head, &head, next,
                                                    memory_order_relaxed, memory_order_relaxed) &&
             ++ring_retries);
    for (uint32_t i = 0; i < n; i++)
        r->slots[(head + i) & r->mask] = objs[i];
    ring_wait_tail(&r->prod_tail, head);
    atomic_store_explicit(&r->prod_tail, next, memory_order_release);
    return true;
}

/* Dequeue up to n; returns how many. */
uint32_t hp__ring_get(struct hp__ring *r, struct hp_buf **objs, uint32_t n)
{
    uint32_t head = atomic_load_explicit(&r->cons_head, memory_order_relaxed), next;
    do {
        uint32_t avail = atomic_load_explicit(&r->prod_tail, memory_order_acquire) - head;
        /* What was published and not yet taken fits the ring (head may be
         * stale, and then the exchange below fails). */
        HP_ASSERT(avail <= r->size || head != atomic_load(&r->cons_head));
        if (n > avail)
            n = avail;
        if (n == 0)
            return 0;
        next = head + n;
    } while (!atomic_compare_exchange_weak_explicit(&r->cons_head, &head, next,
                                                    memory_order_relaxed, memory_order_relaxed) &&
             ++ring_retries);
    for (uint32_t i = 0; i < n; i++)
        objs[i] = r->slots[(head + i) & r->mask];
    ring_wait_tail(&r->cons_tail, head);
    atomic_store_explicit(&r->cons_tail, next, memory_order_release);
    return n;
}

/* ---- creating and destroying pools --------------------------------------- */

static struct hp_pool *bad(const char *what)
{
    return hp__fail_null(EINVAL, "pool", "hp_pool_create: %s", what);
}

static void *map_region(size_t len, unsigned flags, bool *huge)
{
    *huge = false;
#ifdef MAP_HUGETLB
    if (!(flags & HP_POOL_F_NO_HUGEPAGES)) {
        size_t hl = (len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
        void *m = mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
                       -1, 0);
        if (m != MAP_FAILED) {
            *huge = true;
            return m;
        }
    }
#endif
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* No reserved huge pages: let transparent huge pages back it if they can. */
    if (!(flags & HP_POOL_F_NO_HUGEPAGES))
        (void)madvise(m, len, MADV_HUGEPAGE);
#endif
    return m;
}

static int default_policy(void)
{
    const char *e = getenv("HP_ALIEN_POLICY");
    if (e && *e) {
        int p = hp_alien_policy_parse(e);
        if (p >= 0)
            return p;
        hp__log(HP_LOG_WARN, "pool",
                "HP_ALIEN_POLICY=%s: not local, defer or adaptive; using adaptive", e);
    }
    return HP_ALIEN_ADAPTIVE;
}

/* The geometry a configuration asks for; NULL, or the reason it is wrong. */
struct geometry {
    uint32_t elt, n, room, headroom, cache;
};

static const char *check_config(const struct hp_pool_config *cfg, struct geometry *g)
{
    g->headroom = cfg->headroom ? cfg->headroom : HP_BUF_HEADROOM;
    g->cache = cfg->cache_size ? cfg->cache_size : HP_POOL_CACHE_DEFAULT;
    if (cfg->mem) {
        if ((uintptr_t)cfg->mem % HP_CACHELINE_SIZE)
            return "mem is not 64-byte aligned";
        if (cfg->chunk < 256 || cfg->chunk % HP_CACHELINE_SIZE)
            return "chunk must be a multiple of 64, at least 256";
        if (cfg->mem_len / cfg->chunk == 0 || cfg->mem_len / cfg->chunk > UINT32_MAX / 2)
            return "mem_len holds no chunk (or too many)";
        g->elt = cfg->chunk;
        g->n = (uint32_t)(cfg->mem_len / cfg->chunk);
        g->room = g->elt - HP_BUF_META_SIZE;
    } else {
        g->room = cfg->data_room ? cfg->data_room : 2048;
        if (g->room > (1u << 24))
            return "data_room larger than 16 MiB";
        if (cfg->n_bufs == 0 || cfg->n_bufs > (1u << 26))
            return "n_bufs must be 1 .. 2^26";
        g->n = cfg->n_bufs;
        g->elt = (HP_BUF_META_SIZE + g->room + HP_CACHELINE_SIZE - 1) &
                 ~(uint32_t)(HP_CACHELINE_SIZE - 1);
    }
    if (g->headroom > g->room)
        return "headroom larger than the data room";
    if (g->cache > MAX_CACHE)
        return "cache_size larger than 4096";
    if (cfg->alien_policy < -1 || cfg->alien_policy > HP_ALIEN_ADAPTIVE)
        return "alien_policy is not an enum hp_alien_policy value";
    return NULL;
}

/* The fields of a new pool that follow from its geometry. */
static void set_fields(struct hp_pool *p, const struct hp_pool_config *cfg,
                       const struct geometry *g)
{
    snprintf(p->name, sizeof p->name, "%s", cfg->name ? cfg->name : "pool");
    p->n = g->n;
    p->elt_size = g->elt;
    p->data_room = g->room;
    p->headroom = g->headroom;
    p->cache_size = g->cache;
    p->defer_max = cfg->defer_max ? (int32_t)cfg->defer_max : 128;
    /* A batch lives in its first buffer's room, and never holds more than
     * the bound. */
    p->batch_max = g->room >= sizeof(struct hp__batch) ? HP__DEFER_BATCH : 0;
    if (p->batch_max > (uint32_t)p->defer_max)
        p->batch_max = (uint32_t)p->defer_max;
    /* The chunk check's constants (hp__at_chunk). */
    p->elt_shift = (uint32_t)__builtin_ctz(g->elt);
    uint64_t d = g->elt >> p->elt_shift, inv = d; /* d * d == 1 mod 8: 3 bits */
    for (int i = 0; i < 5; i++)
        inv *= 2 - d * inv; /* Newton: each step doubles the bits */
    p->elt_inv = inv;
    p->elt_lim = UINT64_MAX / g->elt;
    p->sub_epoch = HP__EPOCH / HP__SUBEPOCHS;
    memset(&p->tmpl, 0, sizeof p->tmpl);
    p->tmpl.data_off = g->headroom;
    p->tmpl.room = g->room;
    p->tmpl.flags = cfg->mem ? HP_BUF_F_EXTERNAL : 0;
    p->tmpl.nb_segs = 1;
    atomic_init(&p->tmpl.refcnt, 1);
    atomic_init(&p->policy, cfg->alien_policy > 0 ? cfg->alien_policy : default_policy());
    p->region_len = (size_t)g->n * g->elt;
}

static void free_parts(struct hp_pool *p)
{
    for (int t = 0; t < HP_MAX_THREADS; t++) {
        free(atomic_load(&p->caches[t]));
        free(p->owners[t].dq);
    }
    free(p->ring);
    if (p->region && p->own_region)
        munmap(p->region, p->huge ? (p->region_len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1)
                                  : p->region_len);
    free(p);
}

/* Every page of [m, m + len) written once (HP_POOL_F_POPULATE): the kernel's
 * prefault where it has one (Linux 5.14: whole huge pages at a time, no fault
 * per page), then a store per page, which finds them present and costs a few
 * milliseconds per gigabyte. The stores are not only the fallback: an
 * emulator may take the advice and do nothing (qemu-user answers 0), and the
 * flag promises pages that are there. Fresh anonymous memory reads as zero,
 * so the stores change nothing. */
static void populate(uint8_t *m, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    (void)madvise(m, len, MADV_POPULATE_WRITE);
#endif
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < len; off += pg)
        ((volatile uint8_t *)m)[off] = 0;
}

/* The region, the ring and the owners' queues; false: out of memory. */
static bool make_parts(struct hp_pool *p, const struct hp_pool_config *cfg)
{
    if (cfg->mem) {
        p->region = cfg->mem;
    } else {
        p->region = map_region(p->region_len, cfg->flags, &p->huge);
        p->own_region = true;
        if (p->region && (cfg->flags & HP_POOL_F_POPULATE))
            populate(p->region, p->region_len);
    }
    p->ring = p->region ? ring_create(p->n) : NULL;
    /* Each owner's queue holds at most defer_max buffers: whole batches. */
    uint32_t nbatch = p->batch_max ? (uint32_t)p->defer_max / p->batch_max : 1;
    bool ok = p->ring != NULL;
    for (int t = 0; t < HP_MAX_THREADS && ok; t++)
        ok = (p->owners[t].dq = ring_create(nbatch)) != NULL;
    if (p->region)
        p->region_end = p->region + p->region_len;
    return ok;
}

/*
 * Every buffer starts free, untouched in the region: the ring holds the ones
 * that have come back, and a cache the ring cannot fill takes the next
 * buffers of the region in address order. Filling the ring at creation wrote
 * a line in every buffer, so every page of the region was faulted in and
 * zeroed by the kernel (32 MiB for 16,384 buffers) whether the program ever
 * used them or not: 12% of the CPU time of bench peers' connection rate,
 * which creates a pair of stacks every 12,000 connections.
 */
uint32_t hp__pool_take_fresh(struct hp_pool *p, struct hp_buf **objs, uint32_t n)
{
    uint32_t at = atomic_load_explicit(&p->fresh, memory_order_relaxed), k;
    do {
        if (at >= p->n)
            return 0;
        k = p->n - at < n ? p->n - at : n;
    } while (!atomic_compare_exchange_weak_explicit(&p->fresh, &at, at + k, memory_order_relaxed,
                                                    memory_order_relaxed));
    for (uint32_t i = 0; i < k; i++) {
        struct hp_buf *b = (struct hp_buf *)(p->region + (size_t)(at + i) * p->elt_size);
        hp__buf_init_free(p, b);
        objs[i] = b;
    }
    return k;
}

/* Enter p in the registry; false when it is full. */
static bool register_pool(struct hp_pool *p)
{
    pthread_mutex_lock(&registry_lock);
    int slot = -1;
    for (int i = 0; i < MAX_POOLS && slot < 0; i++)
        if (!atomic_load(&registry[i]))
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&registry_lock);
        return false;
    }
    uint64_t used = atomic_load(&tids_used);
    for (int t = 0; t < HP_MAX_THREADS; t++)
        atomic_init(&p->owners[t].alive, (used >> t) & 1);
    p->slot = slot;
    atomic_store_explicit(&registry[slot], p, memory_order_release);
    if (slot + 1 > atomic_load(&registry_hi))
        atomic_store_explicit(&registry_hi, slot + 1, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
    return true;
}

HP_API struct hp_pool *hp_pool_create(const struct hp_pool_config *cfg)
{
    if (!cfg)
        return bad("no configuration");
    struct geometry g;
    const char *why = check_config(cfg, &g);
    if (why)
        return bad(why);
    struct hp_pool *p = aligned_alloc(HP_CACHELINE_SIZE, sizeof *p);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    memset(p, 0, sizeof *p);
    set_fields(p, cfg, &g);
    if (!make_parts(p, cfg)) {
        free_parts(p);
        errno = ENOMEM;
        return NULL;
    }
    if (!register_pool(p)) {
        free_parts(p);
        errno = ENOSPC;
        return NULL;
    }
    return p;
}

HP_API int hp_pool_destroy(struct hp_pool *p)
{
    if (!p)
        return -EINVAL;
    long out = hp_pool_in_use(p);
    if (out != 0) {
        /* Name the buffers that are out: every one not marked free. */
        int shown = 0;
        uint32_t touched = atomic_load_explicit(&p->fresh, memory_order_relaxed);
        for (uint32_t i = 0; i < touched; i++) {
            struct hp_buf *b = (struct hp_buf *)(p->region + (size_t)i * p->elt_size);
            if (!(b->flags & HP_BUF_F_FREE) && shown++ < 16)
                hp__log(HP_LOG_ERR, "pool", "'%s': destroyed with buffer %p still in use", p->name,
                        (void *)b);
        }
        hp__log(HP_LOG_ERR, "pool", "'%s': not destroyed: %ld buffer(s) still in use", p->name,
                out);
        return -EBUSY;
    }
    pthread_mutex_lock(&registry_lock);
    atomic_store_explicit(&registry[p->slot], NULL, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
    free_parts(p);
    return 0;
}

/* ---- thread departure, flushes, stats ------------------------------------ */

HP_API void hp_pool_thread_flush(struct hp_pool *p)
{
    if (!p)
        return;
    int t = hp__tid();
    struct hp__cache *c = t >= 0 ? atomic_load_explicit(&p->caches[t], memory_order_relaxed) : NULL;
    if (c)
        hp__cache_flush_all(p, c);
}

HP_API void hp_thread_exit(void)
{
    if (my_tid < 0)
        return;
    int t = my_tid;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < atomic_load(&registry_hi); i++) {
        struct hp_pool *p = atomic_load(&registry[i]);
        if (!p)
            continue;
        struct hp__cache *c = atomic_load_explicit(&p->caches[t], memory_order_relaxed);
        /* No longer alive: from now on alien frees stay with their freer. */
        atomic_store_explicit(&p->owners[t].alive, 0, memory_order_seq_cst);
        /* Pairs with the fence in defer_push: either the pusher sees alive
         * cleared and drains, or this drain sees its batch. */
        atomic_thread_fence(memory_order_seq_cst);
        atomic_store_explicit(&p->owners[t].freer, 0, memory_order_relaxed);
        if (c) {
            hp__cache_flush_all(p, c);
            /* The next thread with this number starts afresh. */
            hp__cache_forget(c);
        } else {
            hp__drain_owner(p, NULL, t);
        }
    }
    pthread_mutex_unlock(&registry_lock);
    /* The cache itself stays (its counters keep the pool's accounting
     * exact) and is reused by the next thread given this number. */
    atomic_fetch_and_explicit(&tids_used, ~(1ull << t), memory_order_acq_rel);
    my_tid = -2;
    if (pthread_getspecific(exit_key))
        pthread_setspecific(exit_key, NULL);
}

static void add_counters(struct hp_pool_stats *s, const struct hp__cache *cache)
{
    const struct hp__counters *c = &cache->c;
    s->allocs += atomic_load_explicit(&c->allocs, memory_order_relaxed);
    s->frees += atomic_load_explicit(&c->frees, memory_order_relaxed);
    s->deferred += atomic_load_explicit(&c->deferred, memory_order_relaxed);
    s->defer_overflows += atomic_load_explicit(&c->defer_overflows, memory_order_relaxed);
    s->defer_taken += atomic_load_explicit(&c->defer_taken, memory_order_relaxed);
    s->refills += atomic_load_explicit(&c->refills, memory_order_relaxed);
    s->flushes += atomic_load_explicit(&c->flushes, memory_order_relaxed);
    s->ring_ops += atomic_load_explicit(&c->ring_ops, memory_order_relaxed);
    s->errors += atomic_load_explicit(&c->errors, memory_order_relaxed);
    s->written_after_free += atomic_load_explicit(&c->written_after_free, memory_order_relaxed);
    for (int o = 0; o < HP_MAX_THREADS; o++) {
        s->alien_frees += atomic_load_explicit(&cache->pair_frees[o], memory_order_relaxed);
        s->policy_switches +=
            atomic_load_explicit(&cache->pair[o].pub_switches, memory_order_relaxed);
    }
}

HP_API int hp_pool_stats(const struct hp_pool *p, struct hp_pool_stats *out)
{
    if (!p || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    for (int t = 0; t < HP_MAX_THREADS; t++) {
        struct hp__cache *c =
            atomic_load_explicit(&((struct hp_pool *)p)->caches[t], memory_order_acquire);
        if (c)
            add_counters(out, c);
    }
    out->allocs += atomic_load_explicit(&p->nocache_allocs, memory_order_relaxed);
    out->frees += atomic_load_explicit(&p->nocache_frees, memory_order_relaxed);
    out->errors += atomic_load_explicit(&p->nocache_errors, memory_order_relaxed);
    return 0;
}

HP_API int hp_pool_thread_stats(const struct hp_pool *p, int tid, struct hp_pool_stats *out)
{
    if (!p || !out || tid < 0 || tid >= HP_MAX_THREADS)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    struct hp__cache *c =
        atomic_load_explicit(&((struct hp_pool *)p)->caches[tid], memory_order_acquire);
    if (c)
        add_counters(out, c);
    return 0;
}

HP_API int hp_pool_pair_stats(const struct hp_pool *p, struct hp_pool_pair_stats *out, unsigned max)
{
    if (!p || (!out && max))
        return -EINVAL;
    int fixed = atomic_load_explicit(&((struct hp_pool *)p)->policy, memory_order_relaxed);
    unsigned k = 0;
    for (int f = 0; f < HP_MAX_THREADS; f++) {
        struct hp__cache *c =
            atomic_load_explicit(&((struct hp_pool *)p)->caches[f], memory_order_acquire);
        for (int o = 0; c && o < HP_MAX_THREADS; o++) {
            uint64_t n = atomic_load_explicit(&c->pair_frees[o], memory_order_relaxed);
            if (n == 0)
                continue;
            if (k < max) {
                const struct hp__pair *pr = &c->pair[o];
                struct hp_pool_pair_stats *s = &out[k];
                memset(s, 0, sizeof *s);
                s->freer = f;
                s->owner = o;
                s->alien_frees = n;
                s->policy = fixed != HP_ALIEN_ADAPTIVE
                                ? fixed
                                : atomic_load_explicit(&pr->pub_policy, memory_order_relaxed);
                /* A pair that has freed nothing under ADAPTIVE yet (its frees
                 * so far went by a fixed policy) has published nothing: its
                 * route is still the initial one, local. */
                if (s->policy != HP_ALIEN_LOCAL && s->policy != HP_ALIEN_DEFER)
                    s->policy = HP_ALIEN_LOCAL;
                s->measured = atomic_load_explicit(&pr->pub_measured, memory_order_relaxed);
                s->switches = atomic_load_explicit(&pr->pub_switches, memory_order_relaxed);
                s->explorations = atomic_load_explicit(&pr->pub_explorations, memory_order_relaxed);
                s->defer_gain =
                    s->explorations
                        ? atomic_load_explicit(&pr->pub_gain_ppm, memory_order_relaxed) / 1e6
                        : 0;
            }
            k++;
        }
    }
    return (int)k;
}

HP_API long hp_pool_in_use(const struct hp_pool *p)
{
    struct hp_pool_stats s;
    if (hp_pool_stats(p, &s))
        return 0;
    return (long)(s.allocs - s.frees);
}

HP_API long hp_pools_in_use(void)
{
    long n = 0;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < atomic_load(&registry_hi); i++) {
        struct hp_pool *p = atomic_load(&registry[i]);
        if (p)
            n += hp_pool_in_use(p);
    }
    pthread_mutex_unlock(&registry_lock);
    return n;
}

HP_API const char *hp_pool_name(const struct hp_pool *p)
{
    return p ? p->name : "(null)";
}

HP_API uint32_t hp_pool_size(const struct hp_pool *p)
{
    return p ? p->n : 0;
}

HP_API uint32_t hp_pool_data_room(const struct hp_pool *p)
{
    return p ? p->data_room : 0;
}

HP_API bool hp_pool_hugepages(const struct hp_pool *p)
{
    return p && p->huge;
}

HP_API int hp_pool_set_alien_policy(struct hp_pool *p, int policy)
{
    if (!p || policy < HP_ALIEN_LOCAL || policy > HP_ALIEN_ADAPTIVE)
        return -EINVAL;
    atomic_store_explicit(&p->policy, policy, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->policy_gen, 1, memory_order_relaxed);
    return 0;
}

HP_API enum hp_alien_policy hp_pool_alien_policy(const struct hp_pool *p)
{
    return (enum hp_alien_policy)atomic_load_explicit(&((struct hp_pool *)p)->policy,
                                                      memory_order_relaxed);
}

static const char *const policy_names[] =
    {[HP_ALIEN_LOCAL] = "local", [HP_ALIEN_DEFER] = "defer", [HP_ALIEN_ADAPTIVE] = "adaptive"};

HP_API const char *hp_alien_policy_name(int policy)
{
    return policy >= HP_ALIEN_LOCAL && policy <= HP_ALIEN_ADAPTIVE ? policy_names[policy]
                                                                   : "(invalid)";
}

HP_API int hp_alien_policy_parse(const char *name)
{
    for (int i = HP_ALIEN_LOCAL; name && i <= HP_ALIEN_ADAPTIVE; i++)
        if (strcmp(name, policy_names[i]) == 0)
            return i;
    return -EINVAL;
}

void hp__pool_set_epoch(struct hp_pool *p, uint32_t epoch)
{
    epoch = epoch ? epoch : HP__EPOCH;
    p->sub_epoch = epoch / HP__SUBEPOCHS ? epoch / HP__SUBEPOCHS : 1;
}
