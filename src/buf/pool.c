/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffer pools: region set-up, the shared ring, per-thread caches, deferred alien frees and the policy. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
/* initial-exec: read with one instruction, also from libhotpath.so (a
 * general-dynamic access would call __tls_get_addr on every free). */
static _Thread_local int my_tid __attribute__((tls_model("initial-exec"))) = -2; /* -2: not asked yet */
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
    struct hp__cache *c = t >= 0 ? atomic_load_explicit(&pool->caches[t], memory_order_relaxed)
                                 : NULL;
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

/* Times this thread's shared-ring operations found another thread in the
 * way (a failed reservation, or waiting for an earlier one to publish):
 * ADAPTIVE's contention signal. Per thread, over all pools. */
static _Thread_local uint64_t ring_retries;

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
static bool ring_put(struct hp__ring *r, struct hp_buf *const *objs, uint32_t n)
{
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
static uint32_t ring_get(struct hp__ring *r, struct hp_buf **objs, uint32_t n)
{
    uint32_t head = atomic_load_explicit(&r->cons_head, memory_order_relaxed), next;
    do {
        uint32_t avail = atomic_load_explicit(&r->prod_tail, memory_order_acquire) - head;
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
        hp__log(HP_LOG_WARN, "pool", "HP_ALIEN_POLICY=%s: not local, defer or adaptive; using adaptive", e);
    }
    return HP_ALIEN_ADAPTIVE;
}

HP_API struct hp_pool *hp_pool_create(const struct hp_pool_config *cfg)
{
    if (!cfg)
        return bad("no configuration");
    uint32_t headroom = cfg->headroom ? cfg->headroom : HP_BUF_HEADROOM;
    uint32_t cache = cfg->cache_size ? cfg->cache_size : 256;
    uint32_t elt, n, room;
    if (cfg->mem) {
        if ((uintptr_t)cfg->mem % HP_CACHELINE_SIZE)
            return bad("mem is not 64-byte aligned");
        if (cfg->chunk < 256 || cfg->chunk % HP_CACHELINE_SIZE)
            return bad("chunk must be a multiple of 64, at least 256");
        if (cfg->mem_len / cfg->chunk == 0 || cfg->mem_len / cfg->chunk > UINT32_MAX / 2)
            return bad("mem_len holds no chunk (or too many)");
        elt = cfg->chunk;
        n = (uint32_t)(cfg->mem_len / cfg->chunk);
        room = elt - HP_BUF_META_SIZE;
    } else {
        room = cfg->data_room ? cfg->data_room : 2048;
        if (room > (1u << 24))
            return bad("data_room larger than 16 MiB");
        if (cfg->n_bufs == 0 || cfg->n_bufs > (1u << 26))
            return bad("n_bufs must be 1 .. 2^26");
        n = cfg->n_bufs;
        elt = (HP_BUF_META_SIZE + room + HP_CACHELINE_SIZE - 1) & ~(uint32_t)(HP_CACHELINE_SIZE - 1);
    }
    if (headroom > room)
        return bad("headroom larger than the data room");
    if (cache > MAX_CACHE)
        return bad("cache_size larger than 4096");
    if (cfg->alien_policy < -1 || cfg->alien_policy > HP_ALIEN_ADAPTIVE)
        return bad("alien_policy is not an enum hp_alien_policy value");

    struct hp_pool *p = aligned_alloc(HP_CACHELINE_SIZE, sizeof *p);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", cfg->name ? cfg->name : "pool");
    p->n = n;
    p->elt_size = elt;
    p->data_room = room;
    p->headroom = headroom;
    p->cache_size = cache;
    p->defer_max = cfg->defer_max ? (int32_t)cfg->defer_max : 128;
    /* A batch lives in its first buffer's room, and never holds more than
     * the bound. */
    p->batch_max = room >= sizeof(struct hp__batch) ? HP__DEFER_BATCH : 0;
    if (p->batch_max > (uint32_t)p->defer_max)
        p->batch_max = (uint32_t)p->defer_max;
    p->elt_recip = ((1ull << 32) + elt - 1) / elt;
    memset(&p->tmpl, 0, sizeof p->tmpl);
    p->tmpl.data_off = headroom;
    p->tmpl.room = room;
    p->tmpl.flags = cfg->mem ? HP_BUF_F_EXTERNAL : 0;
    p->tmpl.nb_segs = 1;
    atomic_init(&p->tmpl.refcnt, 1);
    atomic_init(&p->policy, cfg->alien_policy > 0 ? cfg->alien_policy : default_policy());
    p->region_len = (size_t)n * elt;
    if (cfg->mem) {
        p->region = cfg->mem;
    } else {
        p->region = map_region(p->region_len, cfg->flags, &p->huge);
        p->own_region = true;
    }
    p->ring = p->region ? ring_create(n) : NULL;
    /* Each owner's queue holds at most defer_max buffers: whole batches. */
    uint32_t nbatch = p->batch_max ? (uint32_t)p->defer_max / p->batch_max : 1;
    bool ok = p->ring != NULL;
    for (int t = 0; t < HP_MAX_THREADS && ok; t++)
        ok = (p->owners[t].dq = ring_create(nbatch)) != NULL;
    if (!ok) {
        for (int t = 0; t < HP_MAX_THREADS; t++)
            free(p->owners[t].dq);
        free(p->ring);
        if (p->region && p->own_region)
            munmap(p->region, p->region_len);
        free(p);
        errno = ENOMEM;
        return NULL;
    }
    p->region_end = p->region + p->region_len;

    /* Every buffer starts free, in the ring. */
    struct hp_buf *batch[64];
    uint32_t nb = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct hp_buf *b = (struct hp_buf *)(p->region + (size_t)i * elt);
        memset(b, 0, sizeof *b);
        b->base = (unsigned char *)b + HP_BUF_META_SIZE;
        b->pool = p;
        b->room = room;
        b->flags = HP_BUF_F_FREE | (cfg->mem ? HP_BUF_F_EXTERNAL : 0);
        b->owner = UINT16_MAX;
        batch[nb++] = b;
        if (nb == 64 || i + 1 == n) {
            ring_put(p->ring, batch, nb);
            nb = 0;
        }
    }

    pthread_mutex_lock(&registry_lock);
    int slot = -1;
    for (int i = 0; i < MAX_POOLS && slot < 0; i++)
        if (!atomic_load(&registry[i]))
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&registry_lock);
        for (int t = 0; t < HP_MAX_THREADS; t++)
            free(p->owners[t].dq);
        free(p->ring);
        if (p->own_region)
            munmap(p->region, p->region_len);
        free(p);
        errno = ENOSPC;
        return NULL;
    }
    uint64_t used = atomic_load(&tids_used);
    for (int t = 0; t < HP_MAX_THREADS; t++)
        atomic_init(&p->owners[t].alive, (used >> t) & 1);
    p->slot = slot;
    atomic_store_explicit(&registry[slot], p, memory_order_release);
    if (slot + 1 > atomic_load(&registry_hi))
        atomic_store_explicit(&registry_hi, slot + 1, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
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
        for (uint32_t i = 0; i < p->n; i++) {
            struct hp_buf *b = (struct hp_buf *)(p->region + (size_t)i * p->elt_size);
            if (!(b->flags & HP_BUF_F_FREE) && shown++ < 16)
                hp__log(HP_LOG_ERR, "pool", "'%s': destroyed with buffer %p still in use", p->name,
                        (void *)b);
        }
        hp__log(HP_LOG_ERR, "pool", "'%s': not destroyed: %ld buffer(s) still in use", p->name, out);
        return -EBUSY;
    }
    pthread_mutex_lock(&registry_lock);
    atomic_store_explicit(&registry[p->slot], NULL, memory_order_release);
    pthread_mutex_unlock(&registry_lock);
    for (int t = 0; t < HP_MAX_THREADS; t++) {
        free(atomic_load(&p->caches[t]));
        free(p->owners[t].dq);
    }
    free(p->ring);
    if (p->own_region)
        munmap(p->region, p->huge ? (p->region_len + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1)
                                  : p->region_len);
    free(p);
    return 0;
}

/* ---- caches -------------------------------------------------------------- */

static struct hp__cache *cache_create(struct hp_pool *p, int t)
{
    size_t sz = sizeof(struct hp__cache) + 2 * (size_t)p->cache_size * sizeof(struct hp_buf *);
    struct hp__cache *c = aligned_alloc(HP_CACHELINE_SIZE, (sz + 63) & ~(size_t)63);
    if (!c)
        return NULL;
    memset(c, 0, sz);
    c->size = p->cache_size;
    c->tid = (uint16_t)t;
    c->net_freer = 1; /* ADAPTIVE: until seen; local until contention, see adapt() */
    atomic_store_explicit(&p->owners[t].alive, 1, memory_order_relaxed);
    atomic_store_explicit(&p->caches[t], c, memory_order_release);
    return c;
}

/* This thread's cache in p, made on first use; NULL for a thread without a
 * number (or out of memory): it then uses the ring directly. */
static inline struct hp__cache *my_cache(struct hp_pool *p)
{
    int t = hp__tid();
    if (__builtin_expect(t < 0, 0))
        return NULL;
    struct hp__cache *c = atomic_load_explicit(&p->caches[t], memory_order_relaxed);
    if (__builtin_expect(c != NULL, 1))
        return c;
    return cache_create(p, t);
}

static inline struct hp__batch *batch_of(struct hp_buf *first)
{
    return (struct hp__batch *)((unsigned char *)first + HP_BUF_META_SIZE);
}

/* Move every batch queued for owner into the shared ring (its owner is
 * gone, or is leaving); returns how many buffers. */
static uint32_t drain_to_ring(struct hp_pool *p, struct hp__cache *c, int owner)
{
    struct hp_buf *heads[16];
    uint32_t total = 0, n;
    while ((n = ring_get(p->owners[owner].dq, heads, 16)) > 0) {
        for (uint32_t i = 0; i < n; i++) {
            struct hp__batch *bt = batch_of(heads[i]);
            uint32_t k = bt->n; /* the batch is gone once in the ring */
            ring_put(p->ring, bt->objs, k);
            total += k;
        }
        if (c)
            hp__count(&c->c.ring_ops, n + 1);
    }
    return total;
}

/* ADAPTIVE: look at what this thread did since the last look (called on
 * every refill, flush and deferred batch, so the fast path pays nothing).
 *
 * Deferring an alien free to its owner exists to keep many freers off one
 * shared structure (the kernel's case: many CPUs completing transmissions
 * into one slab node). It has a price even uncontended: the freer writes a
 * batch into a buffer the owner then reads, one more cross-core transfer
 * than handing the buffers to the shared ring. Measured on 2 cores: a
 * transmit-completion pipeline ran 81 Mpps with LOCAL and 63 with DEFER
 * (bench txcomp, mem), and the pool benchmark's pipeline 84 against 80.5;
 * the seed saw the same on AF_XDP (the single-flow xdpsock regression).
 *
 * So a thread defers only when all of these hold: it frees clearly more
 * than it allocates (a "net freer": its surplus would only travel through
 * the shared ring), the owner is not itself a net freer (it would have no
 * use for them), and its own shared-ring operations are contended (more
 * than one in 16 had to retry or wait for another thread). A thread that
 * reuses what it frees, or meets nobody on the ring, keeps alien frees
 * local. */
static void adapt(struct hp_pool *p, struct hp__cache *c)
{
    uint64_t na = atomic_load_explicit(&c->c.allocs, memory_order_relaxed);
    uint64_t nf = atomic_load_explicit(&c->c.frees, memory_order_relaxed);
    uint64_t a = na - c->win_allocs, f = nf - c->win_frees;
    if (a + f < c->size)
        return; /* not enough seen yet */
    c->net_freer = f > 2 * a;
    uint64_t ops = atomic_load_explicit(&c->c.ring_ops, memory_order_relaxed);
    uint64_t dops = ops - c->win_ring_ops, dret = ring_retries - c->win_retries;
    /* Judge contention only over enough ring operations. */
    if (dops >= 16) {
        c->contended = dret * 16 > dops;
        c->win_ring_ops = ops;
        c->win_retries = ring_retries;
    }
    struct hp__owner *me = &p->owners[c->tid];
    if (atomic_load_explicit(&me->freer, memory_order_relaxed) != c->net_freer)
        atomic_store_explicit(&me->freer, c->net_freer, memory_order_relaxed);
    bool defer = c->net_freer && c->contended;
    for (int o = 0; o < HP_MAX_THREADS; o++)
        c->route[o] = defer && !atomic_load_explicit(&p->owners[o].freer, memory_order_relaxed);
    c->win_allocs = na;
    c->win_frees = nf;
}

/* Queue a staged batch on its owner's queue. If the queue is full (the
 * bound, like net.core.skb_defer_max), the batch is freed locally instead.
 * If the owner has gone meanwhile, drain its queue to the ring: nobody else
 * would. The seq_cst order of the enqueue and of the owner's "alive" store
 * pairs with hp_thread_exit(), which clears alive and then drains. */
static void local_put(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b);

static void defer_push(struct hp_pool *p, struct hp__cache *c, int owner)
{
    struct hp__stage *s = &c->stage[owner];
    struct hp__owner *o = &p->owners[owner];
    struct hp__batch *bt = batch_of(s->head);
    uint32_t n = s->n;
    bt->n = n;
    s->head = NULL;
    s->n = 0;
    c->stage_mask &= ~(1ull << owner);
    if (ring_put(o->dq, &bt->objs[0], 1)) {
        hp__count(&c->c.deferred, n);
        atomic_thread_fence(memory_order_seq_cst);
        if (!atomic_load_explicit(&o->alive, memory_order_seq_cst))
            drain_to_ring(p, c, owner);
    } else {
        /* The queue is full: free the batch here. Copy it out first, since
         * the buffer holding it may be given away by a flush on the way. */
        struct hp_buf *objs[HP__DEFER_BATCH];
        memcpy(objs, bt->objs, n * sizeof objs[0]);
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
    uint32_t k = ring_get(q, heads, 16), n = 0, rest = 0, cap = 2 * c->size;
    for (uint32_t i = 0; i < k; i++) {
        struct hp__batch *bt = batch_of(heads[i]);
        if (c->len + bt->n <= cap) {
            memcpy(c->objs + c->len, bt->objs, bt->n * sizeof(struct hp_buf *));
            c->len += bt->n;
            n += bt->n;
        } else {
            uint32_t m = bt->n; /* the batch is gone once in the ring */
            ring_put(p->ring, bt->objs, m);
            hp__count(&c->c.ring_ops, 1);
            rest += m;
        }
    }
    hp__count(&c->c.defer_taken, n + rest);
    return n;
}

/* Make at least `need` buffers available in the cache: deferred buffers
 * first, then the ring, then (the pool looks empty) other owners' deferred
 * lists. Returns false if the pool really has fewer. */
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
        c->len += ring_get(p->ring, c->objs + c->len, want);
        hp__count(&c->c.ring_ops, 1);
    }
    for (int o = 0; o < HP_MAX_THREADS && c->len < need; o++)
        if (o != c->tid)
            take_deferred(p, c, o);
    return c->len >= need;
}

static void flush(struct hp_pool *p, struct hp__cache *c, uint32_t keep)
{
    hp__count(&c->c.flushes, 1);
    adapt(p, c);
    push_all_stages(p, c);
    if (c->len > keep) {
        ring_put(p->ring, c->objs + keep, c->len - keep);
        hp__count(&c->c.ring_ops, 1);
        c->len = keep;
    }
}

/* ---- allocation and freeing ---------------------------------------------- */

/* Reset the fields a fresh buffer promises. A free buffer already has
 * next == NULL, direct == NULL and base/room pointing home (the free path
 * restores a clone's), so only the packet fields of line 0 are written: the
 * second line is not touched. */
static inline void init_buf(struct hp_pool *p, struct hp_buf *b, uint16_t tid)
{
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    /* Logical order: the same fields one by one, over both lines. */
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
#else
    /* The packet fields of line 0 (ol_flags .. l3_len) from the pool's
     * template in three wide stores, then the two that vary. */
    memcpy(&b->ol_flags, &p->tmpl.ol_flags,
           offsetof(struct hp_buf, hp__group_end_hot) - offsetof(struct hp_buf, ol_flags));
#endif
    b->owner = tid; /* flags come from the template: the pool's EXTERNAL bit */
}

HP_API int hp_buf_alloc_bulk(struct hp_pool *p, struct hp_buf **bufs, unsigned n)
{
    if (!p || (!bufs && n))
        return -EINVAL;
    if (n == 0)
        return 0;
    struct hp__cache *c = my_cache(p);
    if (!c) {
        /* A thread without a number: straight from the ring. */
        uint32_t got = ring_get(p->ring, bufs, n);
        if (got < n) {
            if (got)
                ring_put(p->ring, bufs, got);
            return -ENOMEM;
        }
        for (unsigned i = 0; i < n; i++)
            init_buf(p, bufs[i], UINT16_MAX);
        atomic_fetch_add_explicit(&p->nocache_allocs, n, memory_order_relaxed);
        return (int)n;
    }
    if (n > c->size) {
        /* More than a cache holds: take the cache's worth repeatedly. */
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
        for (unsigned i = 0; i < n; i++)
            init_buf(p, bufs[i], c->tid);
        hp__count(&c->c.allocs, n);
        return (int)n;
    }
    if (__builtin_expect(c->len < n, 0) && !refill(p, c, n))
        return -ENOMEM;
    uint32_t len = c->len - n;
    for (unsigned i = 0; i < n; i++) {
        struct hp_buf *b = c->objs[len + i];
        bufs[i] = b;
        init_buf(p, b, c->tid);
    }
    c->len = len;
    hp__count(&c->c.allocs, n);
    return (int)n;
}

HP_API struct hp_buf *hp_buf_alloc(struct hp_pool *p)
{
    /* The common case, straight from this thread's cache. */
    int t = my_tid;
    if (__builtin_expect(p && t >= 0, 1)) {
        struct hp__cache *c = atomic_load_explicit(&p->caches[t], memory_order_relaxed);
        if (__builtin_expect(c && c->len, 1)) {
            struct hp_buf *b = c->objs[--c->len];
            init_buf(p, b, c->tid);
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

/* Free one buffer into cache c (the caller counted it). */
static inline void put_one(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b)
{
    /* Allocation relies on a free buffer's next being NULL. */
    b->next = NULL;
    b->flags = (uint16_t)((b->flags & HP_BUF_F_EXTERNAL) | HP_BUF_F_FREE);
    uint16_t owner = b->owner;
    if (__builtin_expect(owner != c->tid, 0) && owner < HP_MAX_THREADS) {
        hp__count(&c->c.alien_frees, 1);
        int policy = atomic_load_explicit(&p->policy, memory_order_relaxed);
        bool defer = policy == HP_ALIEN_DEFER || (policy == HP_ALIEN_ADAPTIVE && c->route[owner]);
        if (defer && p->batch_max) {
            struct hp__stage *s = &c->stage[owner];
            if (s->n == 0) {
                s->head = b;
                c->stage_mask |= 1ull << owner;
            }
            batch_of(s->head)->objs[s->n] = b;
            if (++s->n == p->batch_max)
                defer_push(p, c, owner);
            return;
        }
    }
    local_put(p, c, b);
}

void hp__pool_put_bulk(struct hp_pool *p, struct hp_buf *const *bufs, unsigned n)
{
    struct hp__cache *c = my_cache(p);
    if (__builtin_expect(!c, 0)) {
        for (unsigned i = 0; i < n; i++) {
            bufs[i]->next = NULL;
            bufs[i]->flags = (uint16_t)((bufs[i]->flags & HP_BUF_F_EXTERNAL) | HP_BUF_F_FREE);
            ring_put(p->ring, &bufs[i], 1);
        }
        atomic_fetch_add_explicit(&p->nocache_frees, n, memory_order_relaxed);
        return;
    }
    hp__count(&c->c.frees, n);
    for (unsigned i = 0; i < n; i++)
        put_one(p, c, bufs[i]);
}

void hp__pool_put_one(struct hp_pool *p, struct hp_buf *b)
{
    struct hp__cache *c = my_cache(p);
    if (__builtin_expect(!c, 0)) {
        hp__pool_put_bulk(p, &b, 1);
        return;
    }
    hp__count(&c->c.frees, 1);
    put_one(p, c, b);
}

void hp__pool_put(struct hp_buf *b)
{
    hp__pool_put_one(b->pool, b);
}

static void local_put(struct hp_pool *p, struct hp__cache *c, struct hp_buf *b)
{
    c->objs[c->len++] = b;
    if (__builtin_expect(c->len > c->size, 0))
        flush(p, c, c->size / 2);
}

/* ---- thread departure, flushes, stats ------------------------------------ */

static void thread_flush(struct hp_pool *p, struct hp__cache *c)
{
    push_all_stages(p, c);
    flush(p, c, 0);
    hp__count(&c->c.defer_taken, drain_to_ring(p, c, c->tid));
}

HP_API void hp_pool_thread_flush(struct hp_pool *p)
{
    if (!p)
        return;
    int t = hp__tid();
    struct hp__cache *c = t >= 0 ? atomic_load_explicit(&p->caches[t], memory_order_relaxed) : NULL;
    if (c)
        thread_flush(p, c);
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
            thread_flush(p, c);
            /* The next thread with this number starts afresh. */
            c->net_freer = 1;
            c->contended = 0;
            memset(c->route, 0, sizeof c->route);
            c->win_allocs = atomic_load(&c->c.allocs);
            c->win_frees = atomic_load(&c->c.frees);
        } else {
            drain_to_ring(p, NULL, t);
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

static void add_counters(struct hp_pool_stats *s, const struct hp__counters *c)
{
    s->allocs += atomic_load_explicit(&c->allocs, memory_order_relaxed);
    s->frees += atomic_load_explicit(&c->frees, memory_order_relaxed);
    s->alien_frees += atomic_load_explicit(&c->alien_frees, memory_order_relaxed);
    s->deferred += atomic_load_explicit(&c->deferred, memory_order_relaxed);
    s->defer_overflows += atomic_load_explicit(&c->defer_overflows, memory_order_relaxed);
    s->defer_taken += atomic_load_explicit(&c->defer_taken, memory_order_relaxed);
    s->refills += atomic_load_explicit(&c->refills, memory_order_relaxed);
    s->flushes += atomic_load_explicit(&c->flushes, memory_order_relaxed);
    s->ring_ops += atomic_load_explicit(&c->ring_ops, memory_order_relaxed);
    s->errors += atomic_load_explicit(&c->errors, memory_order_relaxed);
}

HP_API int hp_pool_stats(const struct hp_pool *p, struct hp_pool_stats *out)
{
    if (!p || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    for (int t = 0; t < HP_MAX_THREADS; t++) {
        struct hp__cache *c = atomic_load_explicit(&((struct hp_pool *)p)->caches[t],
                                                   memory_order_acquire);
        if (c)
            add_counters(out, &c->c);
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
    struct hp__cache *c = atomic_load_explicit(&((struct hp_pool *)p)->caches[tid],
                                               memory_order_acquire);
    if (c)
        add_counters(out, &c->c);
    return 0;
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
    return 0;
}

HP_API enum hp_alien_policy hp_pool_alien_policy(const struct hp_pool *p)
{
    return (enum hp_alien_policy)atomic_load_explicit(&((struct hp_pool *)p)->policy,
                                                      memory_order_relaxed);
}

static const char *const policy_names[] = {
    [HP_ALIEN_LOCAL] = "local", [HP_ALIEN_DEFER] = "defer", [HP_ALIEN_ADAPTIVE] = "adaptive"};

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
