/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench pool`: hotpath's pool under each alien policy, the policies interleaved slice by slice and compared in pairs, against DPDK's raw rte_mempool, DPDK's packet buffers (rte_mbuf) and malloc. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/buf.h>
#include <hotpath/cpu.h>
#include <hotpath/pool.h>

#include "bench.h"
#include "bench_pool.h"
#include "tool.h"

/* The setup, equal for every row. */
#define N_BUFS     8192
#define DATA_ROOM  2048
#define CACHE_SIZE 256
#define BULK       32
#define FILL       64
#define RING_SIZE  1024 /* slots of each inter-thread ring, a power of 2 */
/* Peers' objects are as large as a hotpath buffer (metadata and data room),
 * and are written where a hotpath buffer's data starts. */
#define ELT_SIZE (HP_BUF_META_SIZE + DATA_ROOM)
#define DATA_OFF (HP_BUF_META_SIZE + HP_BUF_HEADROOM)
/* DPDK's packet buffers (the dpdk-mbuf row): rte_pktmbuf_pool_create's
 * data_room_size counts the headroom (RTE_PKTMBUF_HEADROOM, 128 B) as
 * hotpath's data_room does, so both are DATA_ROOM: 128 B of headroom, then
 * 1920 B of tailroom; with a 128 B struct rte_mbuf and no private area an
 * mbuf is as large as a hotpath buffer. */
#define MBUF_DATA_ROOM DATA_ROOM
/* Rounds of slices per run: one slice per policy in each (peers: one). */
#define MAX_ROUNDS 32

#define AI static inline __attribute__((always_inline))

static const char *const impl_names[POOL_NIMPLS] = {
    "hotpath-local", "hotpath-defer", "hotpath-adaptive", "dpdk", "dpdk-mbuf", "malloc"};
static const char *const scen_names[POOL_NSCEN] = {"local-bulk1", "local-bulk32", "pipeline",
                                                   "crossed"};
static const int hp_policy[3] = {HP_ALIEN_LOCAL, HP_ALIEN_DEFER, HP_ALIEN_ADAPTIVE};

const char *pool_impl_name(int impl)
{
    return impl >= 0 && impl < POOL_NIMPLS ? impl_names[impl] : "?";
}

const char *pool_scenario_name(int scenario)
{
    return scenario >= 0 && scenario < POOL_NSCEN ? scen_names[scenario] : "?";
}

static bool is_hp(int impl)
{
    return impl <= POOL_HP_ADAPTIVE;
}

static bool is_dpdk(int impl)
{
    return impl == POOL_DPDK || impl == POOL_DPDK_MBUF;
}

/* ---- small helpers -------------------------------------------------------- */

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

AI void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* ---- the inter-thread ring: single producer, single consumer ------------- */

/* The same ring for every row, so that only the allocator differs. Each
 * side keeps its index on its own cache line with a cached copy of the
 * other's, and reads the other's only when the copy says full or empty. */
struct spsc {
    _Alignas(64) _Atomic size_t head; /* written by the producer */
    size_t tail_cache;
    _Alignas(64) _Atomic size_t tail; /* written by the consumer */
    size_t head_cache;
    _Alignas(64) void *slot[RING_SIZE];
};

/* Push all n or nothing. */
AI bool spsc_push(struct spsc *q, void *const *objs, unsigned n)
{
    size_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (RING_SIZE - (h - q->tail_cache) < n) {
        q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
        if (RING_SIZE - (h - q->tail_cache) < n)
            return false;
    }
    for (unsigned i = 0; i < n; i++)
        q->slot[(h + i) & (RING_SIZE - 1)] = objs[i];
    atomic_store_explicit(&q->head, h + n, memory_order_release);
    return true;
}

/* Pop exactly n or nothing (every push is of BULK). */
AI bool spsc_pop(struct spsc *q, void **objs, unsigned n)
{
    size_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (q->head_cache - t < n) {
        q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
        if (q->head_cache - t < n)
            return false;
    }
    for (unsigned i = 0; i < n; i++)
        objs[i] = q->slot[(t + i) & (RING_SIZE - 1)];
    atomic_store_explicit(&q->tail, t + n, memory_order_release);
    return true;
}

/* ---- one run: threads and the main thread's marks ------------------------ */

enum { PH_INIT, PH_RUN, PH_STOP };
enum { K_HP, K_DPDK, K_DPDK_MBUF, K_MALLOC };

/* Buffers per timed group: a microsecond or more of work. */
static const unsigned group_of[POOL_NSCEN] = {8 * BULK, 16 * BULK, 4 * BULK, 4 * BULK};

struct run;

struct worker {
    _Alignas(64) struct run *run;
    struct worker *peer;
    int idx, cpu, tid;
    pthread_t th;
    struct pool_meter meter;
    uint64_t freed_total;
    uint64_t alloc_fail, fill_fail;
    int pin_rc;
    int dpdk_lcore, dpdk_cache;
    _Alignas(64) _Atomic int done_push; /* read by the peer while draining */
};

struct run {
    _Alignas(64) _Atomic unsigned mark; /* read by the workers once per batch */
    _Atomic int phase;
    _Alignas(64) _Atomic int ready;
    _Atomic int barrier[2];
    int kind, scenario, nthreads;
    unsigned nmarks;
    void *pool;
    struct spsc *ring[2]; /* ring[i] is pushed by worker i */
    struct worker w[2];
};

/* Once per batch: a new mark? Returns true at the stop. */
AI bool poll_marks(struct worker *w, uint64_t freed)
{
    unsigned k = atomic_load_explicit(&w->run->mark, memory_order_acquire);
    if (__builtin_expect(k == w->meter.seen, 1))
        return false;
    pool_meter_take(&w->meter, k, freed);
    return atomic_load_explicit(&w->run->phase, memory_order_acquire) == PH_STOP;
}

AI void group_tick(struct worker *w, unsigned n)
{
    pool_meter_add(&w->meter, n);
}

/* The allocator calls: kind is a constant in each specialised loop. */
AI int get_bulk(int kind, void *pool, void **o, unsigned n)
{
    switch (kind) {
    case K_HP:
        return hp_buf_alloc_bulk(pool, (struct hp_buf **)o, n) == (int)n ? 0 : -1;
#ifdef HP_HAVE_DPDK
    case K_DPDK:
        return hp_peer_dpdk_get_bulk(pool, o, n);
    case K_DPDK_MBUF:
        return hp_peer_dpdk_mbuf_alloc_bulk(pool, o, n);
#endif
    case K_MALLOC:
        for (unsigned i = 0; i < n; i++)
            if (!(o[i] = malloc(ELT_SIZE))) {
                while (i--)
                    free(o[i]);
                return -1;
            }
        return 0;
    }
    return -1;
}

AI void put_bulk(int kind, void *pool, void **o, unsigned n)
{
    switch (kind) {
    case K_HP:
        hp_buf_free_bulk((struct hp_buf **)o, n);
        return;
#ifdef HP_HAVE_DPDK
    case K_DPDK:
        hp_peer_dpdk_put_bulk(pool, o, n);
        return;
    case K_DPDK_MBUF:
        hp_peer_dpdk_mbuf_free_bulk(o, n);
        return;
#endif
    case K_MALLOC:
        for (unsigned i = 0; i < n; i++)
            free(o[i]);
        return;
    }
    (void)pool;
}

AI int get_one(int kind, void *pool, void **o)
{
    switch (kind) {
    case K_HP:
        return (*o = hp_buf_alloc(pool)) ? 0 : -1;
#ifdef HP_HAVE_DPDK
    case K_DPDK:
        return hp_peer_dpdk_get(pool, o);
    case K_DPDK_MBUF:
        return (*o = hp_peer_dpdk_mbuf_alloc(pool)) ? 0 : -1;
#endif
    case K_MALLOC:
        return (*o = malloc(ELT_SIZE)) ? 0 : -1;
    }
    return -1;
}

AI void put_one(int kind, void *pool, void *o)
{
    switch (kind) {
    case K_HP:
        hp_buf_free(o);
        return;
#ifdef HP_HAVE_DPDK
    case K_DPDK:
        hp_peer_dpdk_put(pool, o);
        return;
    case K_DPDK_MBUF:
        hp_peer_dpdk_mbuf_free(o);
        return;
#endif
    case K_MALLOC:
        free(o);
        return;
    }
    (void)pool;
}

/* Write FILL bytes of packet data: through hp_buf_append for hotpath,
 * rte_pktmbuf_append for DPDK's packet buffers, at the same offset from the
 * object's start for the other peers. */
AI void fill(int kind, struct worker *w, void *o, unsigned char v)
{
    unsigned char *p;
    if (kind == K_HP || kind == K_DPDK_MBUF) {
#ifdef HP_HAVE_DPDK
        p = kind == K_HP ? hp_buf_append(o, FILL) : hp_peer_dpdk_mbuf_append(o, FILL);
#else
        p = hp_buf_append(o, FILL);
#endif
        if (!p) {
            w->fill_fail++;
            return;
        }
    } else {
        p = (unsigned char *)o + DATA_OFF;
    }
    memset(p, v, FILL);
}

AI void loop_local(struct worker *w, int kind, void *pool, unsigned bulk)
{
    void *objs[BULK];
    uint64_t freed = 0;
    while (!poll_marks(w, freed)) {
        if (bulk == 1) {
            unsigned i, j;
            for (i = 0; i < BULK; i++)
                if (get_one(kind, pool, &objs[i]))
                    break;
            for (j = 0; j < i; j++)
                put_one(kind, pool, objs[j]);
            if (i < BULK)
                w->alloc_fail++;
            freed += i;
            group_tick(w, i);
        } else {
            if (get_bulk(kind, pool, objs, BULK)) {
                w->alloc_fail++;
                continue;
            }
            put_bulk(kind, pool, objs, BULK);
            freed += BULK;
            group_tick(w, BULK);
        }
    }
    w->freed_total = freed;
}

/* Free what the peer pushed until it has stopped pushing and the ring is
 * empty. */
AI void drain(struct worker *w, int kind, void *pool, struct spsc *in)
{
    void *objs[BULK];
    for (;;) {
        bool done = atomic_load_explicit(&w->peer->done_push, memory_order_acquire);
        while (spsc_pop(in, objs, BULK))
            put_bulk(kind, pool, objs, BULK);
        if (done)
            return;
        cpu_relax();
    }
}

/* Pipeline, thread A: allocate, fill, push. */
AI void loop_producer(struct worker *w, int kind, void *pool, struct spsc *out)
{
    void *objs[BULK];
    bool have = false;
    unsigned char v = 0;
    while (!poll_marks(w, 0)) {
        if (!have) {
            if (get_bulk(kind, pool, objs, BULK)) {
                w->alloc_fail++;
                cpu_relax();
                continue;
            }
            for (unsigned i = 0; i < BULK; i++)
                fill(kind, w, objs[i], v);
            v++;
            have = true;
        }
        if (spsc_push(out, objs, BULK))
            have = false;
        else
            cpu_relax();
    }
    if (have)
        put_bulk(kind, pool, objs, BULK);
    atomic_store_explicit(&w->done_push, 1, memory_order_release);
}

/* Pipeline, thread B: pop, free. */
AI void loop_consumer(struct worker *w, int kind, void *pool, struct spsc *in)
{
    void *objs[BULK];
    uint64_t freed = 0;
    while (!poll_marks(w, freed)) {
        if (spsc_pop(in, objs, BULK)) {
            put_bulk(kind, pool, objs, BULK);
            freed += BULK;
            group_tick(w, BULK);
        } else {
            cpu_relax();
        }
    }
    w->freed_total = freed;
    drain(w, kind, pool, in);
}

/* Crossed: each thread allocates, fills and pushes to the other, and frees
 * what the other pushed. Neither side blocks, so neither can deadlock. */
AI void loop_crossed(struct worker *w, int kind, void *pool, struct spsc *out, struct spsc *in)
{
    void *objs[BULK], *got[BULK];
    bool have = false;
    uint64_t freed = 0;
    unsigned char v = 0;
    while (!poll_marks(w, freed)) {
        bool busy = false;
        if (!have) {
            if (get_bulk(kind, pool, objs, BULK) == 0) {
                for (unsigned i = 0; i < BULK; i++)
                    fill(kind, w, objs[i], v);
                v++;
                have = true;
            } else {
                w->alloc_fail++;
            }
        }
        if (have && spsc_push(out, objs, BULK)) {
            have = false;
            busy = true;
        }
        if (spsc_pop(in, got, BULK)) {
            put_bulk(kind, pool, got, BULK);
            freed += BULK;
            group_tick(w, BULK);
            busy = true;
        }
        if (!busy)
            cpu_relax();
    }
    if (have)
        put_bulk(kind, pool, objs, BULK);
    w->freed_total = freed;
    atomic_store_explicit(&w->done_push, 1, memory_order_release);
    drain(w, kind, pool, in);
}

AI void work(struct worker *w, int kind)
{
    struct run *run = w->run;
    switch (run->scenario) {
    case POOL_LOCAL_BULK1:
        loop_local(w, kind, run->pool, 1);
        break;
    case POOL_LOCAL_BULK32:
        loop_local(w, kind, run->pool, BULK);
        break;
    case POOL_PIPELINE:
        if (w->idx == 0)
            loop_producer(w, kind, run->pool, run->ring[0]);
        else
            loop_consumer(w, kind, run->pool, run->ring[0]);
        break;
    case POOL_CROSSED:
        loop_crossed(w, kind, run->pool, run->ring[w->idx], run->ring[1 - w->idx]);
        break;
    }
}

/* One specialised copy per allocator, each starting on a 64-byte boundary
 * so that code placement favours no row. */
__attribute__((noinline, aligned(64))) static void work_hp(struct worker *w)
{
    work(w, K_HP);
}

#ifdef HP_HAVE_DPDK
__attribute__((noinline, aligned(64))) static void work_dpdk(struct worker *w)
{
    work(w, K_DPDK);
}

__attribute__((noinline, aligned(64))) static void work_dpdk_mbuf(struct worker *w)
{
    work(w, K_DPDK_MBUF);
}
#endif

__attribute__((noinline, aligned(64))) static void work_malloc(struct worker *w)
{
    work(w, K_MALLOC);
}

/* Every thread of the run waits for the others at step i (outside the
 * measurement: yielding the CPU to whoever else wants it). */
static void barrier_wait(struct run *run, int i)
{
    atomic_fetch_add_explicit(&run->barrier[i], 1, memory_order_acq_rel);
    while (atomic_load_explicit(&run->barrier[i], memory_order_acquire) < run->nthreads)
        sched_yield();
}

static void worker_setup(struct worker *w)
{
    struct run *run = w->run;
    w->dpdk_lcore = -1;
    w->dpdk_cache = -1;
    w->tid = run->kind == K_HP ? hp_thread_id() : -1;
    if (w->cpu >= 0)
        w->pin_rc = tool_pin(w->cpu);
#ifdef HP_HAVE_DPDK
    if (run->kind == K_DPDK || run->kind == K_DPDK_MBUF) {
        /* A non-EAL thread has no mempool cache until it registers. */
        w->dpdk_lcore = hp_peer_dpdk_thread_register();
        w->dpdk_cache = hp_peer_dpdk_cache_size(run->pool);
    }
#endif
}

/* Every free is done before any thread flushes, and every flush before
 * any thread gives up its number. */
static void worker_teardown(struct worker *w)
{
    struct run *run = w->run;
    barrier_wait(run, 0);
    if (run->kind == K_HP)
        hp_pool_thread_flush(run->pool);
#ifdef HP_HAVE_DPDK
    if (run->kind == K_DPDK || run->kind == K_DPDK_MBUF)
        hp_peer_dpdk_cache_flush(run->pool);
#endif
    barrier_wait(run, 1);
    if (run->kind == K_HP)
        hp_thread_exit();
#ifdef HP_HAVE_DPDK
    if ((run->kind == K_DPDK || run->kind == K_DPDK_MBUF) && w->dpdk_lcore >= 0)
        hp_peer_dpdk_thread_unregister();
#endif
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *run = w->run;
    worker_setup(w);
    atomic_fetch_add_explicit(&run->ready, 1, memory_order_release);
    while (atomic_load_explicit(&run->phase, memory_order_acquire) == PH_INIT)
        sched_yield();
    switch (run->kind) {
    case K_HP:
        work_hp(w);
        break;
#ifdef HP_HAVE_DPDK
    case K_DPDK:
        work_dpdk(w);
        break;
    case K_DPDK_MBUF:
        work_dpdk_mbuf(w);
        break;
#endif
    case K_MALLOC:
        work_malloc(w);
        break;
    }
    worker_teardown(w);
    return NULL;
}

/* ---- measuring one run: a pool, its threads, slices ------------------------ */

/* [0]: one thread, [1]: two, whose slices must be longer on a busy
 * machine: both threads must get their CPUs in the same slice. */
struct setup {
    double warmup_s, warm_max_s, settle_s[2], slice_s[2];
    int rounds[2];
    int cpu[2];
};

/* One measured slice of a run. */
struct slot {
    bool ok;
    uint64_t freed;   /* buffers freed by the threads in the slice */
    double mops;      /* Mbuf/s at which the threads free in their median group, summed */
    double mops_wall; /* Mbuf/s over the slice's wall time, stalls included */
    double cpu_ns;    /* CPU time of the threads per buffer */
    double speed;     /* what the ratios compare: mops */
    double wait;      /* largest share of the slice a thread waited for its CPU */
};

/* What one run measured. */
struct run_result {
    int nslots;
    struct slot slots[3 * MAX_ROUNDS];
    int policy[3 * MAX_ROUNDS]; /* hotpath runs: the slice's policy, 0..2 (impl) */
    struct hp_pool_stats st[3]; /* hotpath runs: pool counters over each policy's slices */
    uint64_t freed[3];
    struct pool_pair pairs[POOL_MAX_PAIRS];
    int npairs;
    double warm_s; /* hotpath, two threads: the warm-up ADAPTIVE took */
};

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int kind_of(int impl)
{
    return is_hp(impl)              ? K_HP
           : impl == POOL_DPDK      ? K_DPDK
           : impl == POOL_DPDK_MBUF ? K_DPDK_MBUF
                                    : K_MALLOC;
}

static int make_hp_pool(struct pool_report *r, struct run *run, const char *name, char *err,
                        size_t errlen)
{
    /* One pool for the three policies: it starts (and warms up) ADAPTIVE,
     * and the slices switch it. */
    struct hp_pool_config cfg = {.name = name,
                                 .n_bufs = N_BUFS,
                                 .data_room = DATA_ROOM,
                                 .cache_size = CACHE_SIZE,
                                 .alien_policy = HP_ALIEN_ADAPTIVE,
                                 .flags = HP_POOL_F_NO_HUGEPAGES};
    run->pool = hp_pool_create(&cfg);
    if (!run->pool)
        return fail(err, errlen, "hp_pool_create: %s", strerror(errno));
    if (hp_pool_hugepages(run->pool))
        r->hugepages = true;
    return 0;
}

static int make_pool(struct pool_report *r, struct run *run, int impl, char *err, size_t errlen)
{
    static int seq;
    char name[32];
    snprintf(name, sizeof name, "bench-%d", seq++);
    if (run->kind == K_HP)
        return make_hp_pool(r, run, name, err, errlen);
#ifdef HP_HAVE_DPDK
    if (run->kind == K_DPDK) {
        run->pool = hp_peer_dpdk_pool_create(name, N_BUFS, ELT_SIZE, CACHE_SIZE);
        if (!run->pool)
            return fail(err, errlen, "rte_mempool_create: %s", strerror(errno));
        snprintf(r->dpdk_ops, sizeof r->dpdk_ops, "%s", hp_peer_dpdk_pool_ops(run->pool));
    }
    if (run->kind == K_DPDK_MBUF) {
        run->pool = hp_peer_dpdk_mbuf_pool_create(name, N_BUFS, MBUF_DATA_ROOM, CACHE_SIZE);
        if (!run->pool)
            return fail(err, errlen, "rte_pktmbuf_pool_create: %s", strerror(errno));
        snprintf(r->mbuf_ops, sizeof r->mbuf_ops, "%s", hp_peer_dpdk_pool_ops(run->pool));
        r->mbuf_elt_size = hp_peer_dpdk_pool_elt_size(run->pool);
        r->mbuf_data_room = hp_peer_dpdk_mbuf_data_room(run->pool);
        r->mbuf_headroom = hp_peer_dpdk_mbuf_headroom();
    }
#endif
    (void)impl;
    return 0;
}

/* Every buffer back, then the pool gone; rc becomes -1 (with err) on a leak. */
static void drop_pool(struct run *run, int *rc, char *err, size_t errlen)
{
    if (run->kind == K_HP && run->pool) {
        long used = hp_pool_in_use(run->pool);
        if (used != 0 && *rc == 0)
            *rc = fail(err, errlen, "%ld buffers still in use after every thread freed and flushed",
                       used);
        if (used == 0) {
            int d = hp_pool_destroy(run->pool);
            if (d && *rc == 0)
                *rc = fail(err, errlen, "hp_pool_destroy: %s", strerror(-d));
        }
        /* else leaked on purpose: destroying would fail with -EBUSY */
    }
#ifdef HP_HAVE_DPDK
    if ((run->kind == K_DPDK || run->kind == K_DPDK_MBUF) && run->pool) {
        unsigned avail = hp_peer_dpdk_pool_avail(run->pool);
        if (avail != N_BUFS && *rc == 0)
            *rc =
                fail(err, errlen, "%u of %d objects back in the mempool at the end", avail, N_BUFS);
        hp_peer_dpdk_pool_free(run->pool);
    }
#endif
}

static void run_free(struct run *run)
{
    for (int i = 0; i < 2; i++) {
        pool_meter_free(&run->w[i].meter);
        free(run->ring[i]);
    }
    free(run);
}

static struct run *run_new(int sc, int impl, unsigned nmarks, double secs)
{
    struct run *run = aligned_alloc(64, sizeof *run);
    if (!run)
        return NULL;
    memset(run, 0, sizeof *run);
    run->scenario = sc;
    run->nthreads = sc >= POOL_PIPELINE ? 2 : 1;
    run->kind = kind_of(impl);
    run->nmarks = nmarks;
    bool ok = true;
    for (int i = 0; i < run->nthreads; i++) {
        ok &= pool_meter_init(&run->w[i].meter, &run->mark, nmarks, secs, group_of[sc]) == 0;
        if (run->nthreads == 2) {
            run->ring[i] = aligned_alloc(64, sizeof(struct spsc));
            ok &= run->ring[i] != NULL;
            if (run->ring[i])
                memset(run->ring[i], 0, sizeof(struct spsc));
        }
    }
    if (!ok) {
        run_free(run);
        return NULL;
    }
    return run;
}

/* Start the threads; returns how many started (err says why not all). */
static int start_workers(struct run *run, const struct setup *su, char *err, size_t errlen)
{
    int started = 0;
    for (int i = 0; i < run->nthreads; i++) {
        struct worker *w = &run->w[i];
        w->run = run;
        w->peer = &run->w[1 - i];
        w->idx = i;
        w->cpu = su->cpu[i];
        int e = pthread_create(&w->th, NULL, worker_main, w);
        if (e) {
            fail(err, errlen, "pthread_create: %s", strerror(e));
            break;
        }
        started++;
    }
    while (atomic_load_explicit(&run->ready, memory_order_acquire) < started)
        sleep_s(0.0002);
    return started;
}

/* Stop threads that started when others did not: nobody waits for those. */
static void abort_workers(struct run *run, int started)
{
    for (int i = started; i < run->nthreads; i++)
        atomic_store_explicit(&run->w[i].done_push, 1, memory_order_relaxed);
    run->nthreads = started;
    atomic_store_explicit(&run->phase, PH_STOP, memory_order_release);
    atomic_fetch_add_explicit(&run->mark, 1, memory_order_release);
    for (int i = 0; i < started; i++)
        pthread_join(run->w[i].th, NULL);
}

static void stats_sub(struct hp_pool_stats *acc, const struct hp_pool_stats *a,
                      const struct hp_pool_stats *b)
{
    acc->alien_frees += b->alien_frees - a->alien_frees;
    acc->deferred += b->deferred - a->deferred;
    acc->defer_overflows += b->defer_overflows - a->defer_overflows;
    acc->defer_taken += b->defer_taken - a->defer_taken;
    acc->refills += b->refills - a->refills;
    acc->flushes += b->flushes - a->flushes;
    acc->ring_ops += b->ring_ops - a->ring_ops;
}

/* The main thread's side of a run: warm up, then the slices, each behind
 * a settling pause (a policy switch leaves deferred batches and caches to
 * settle), bracketed by two marks; hotpath runs rotate the policy. */
static void drive(struct run *run, const struct setup *su, int rep, struct run_result *res)
{
    bool hp = run->kind == K_HP;
    int per = hp ? 3 : 1, two = run->nthreads > 1;
    unsigned m = 0;
    atomic_store_explicit(&run->phase, PH_RUN, memory_order_release);
    /* Two threads under hotpath: until ADAPTIVE has settled every pair
     * (its learning is not what the slices compare). */
    if (hp && two)
        res->warm_s = pool_warm_adaptive(run->pool, su->warmup_s, su->warm_max_s);
    else
        sleep_s(su->warmup_s);
    for (int rd = 0; rd < su->rounds[two]; rd++)
        for (int i = 0; i < per; i++) {
            int k = (i + rd + rep) % per;
            struct hp_pool_stats s0, s1;
            res->policy[res->nslots++] = k;
            if (hp)
                hp_pool_set_alien_policy(run->pool, hp_policy[k]);
            sleep_s(su->settle_s[two]);
            if (hp)
                hp_pool_stats(run->pool, &s0);
            atomic_store_explicit(&run->mark, ++m, memory_order_release);
            sleep_s(su->slice_s[two]);
            atomic_store_explicit(&run->mark, ++m, memory_order_release);
            if (hp) {
                hp_pool_stats(run->pool, &s1);
                stats_sub(&res->st[k], &s0, &s1);
            }
        }
    atomic_store_explicit(&run->phase, PH_STOP, memory_order_release);
    atomic_store_explicit(&run->mark, ++m, memory_order_release);
}

/* Slice j's numbers, from the marks 2j+1 and 2j+2 each thread recorded. */
static struct slot slot_of(const struct run *run, int j, double hz, uint32_t *scratch)
{
    struct slot s = {.ok = true};
    uint64_t freed = 0;
    double cpu = 0;
    unsigned m0 = 2 * (unsigned)j + 1, m1 = m0 + 1;
    for (int i = 0; i < run->nthreads; i++) {
        const struct pool_meter *m = &run->w[i].meter;
        const struct pool_mark *a = &m->marks[m0], *b = &m->marks[m1];
        double wall = b->wall - a->wall;
        if (wall <= 0) {
            s.ok = false; /* the thread saw neither mark in time */
            continue;
        }
        s.mops_wall += (double)(b->done - a->done) / wall / 1e6;
        freed += b->done - a->done;
        double g = b->done > a->done ? pool_meter_rate(m, m0, m1, hz, scratch) : 0;
        s.mops += (g > 0 ? g : (double)(b->done - a->done) / wall) / 1e6;
        cpu += b->cpu - a->cpu;
        double wt = (double)(b->delay - a->delay) / 1e9 / wall;
        s.wait = wt > s.wait ? wt : s.wait;
    }
    s.ok &= freed > 0;
    s.freed = freed;
    s.cpu_ns = freed ? cpu * 1e9 / (double)freed : 0;
    s.speed = s.mops;
    return s;
}

/* After the threads joined: the slices, and what the run says about itself. */
static int finish_run(struct pool_report *r, struct run *run, int impl, struct run_result *res,
                      char *err, size_t errlen)
{
    uint64_t afail = 0, ffail = 0;
    for (int i = 0; i < run->nthreads; i++) {
        const struct worker *w = &run->w[i];
        afail += w->alloc_fail;
        ffail += w->fill_fail;
        if (w->pin_rc)
            r->pin_failed = true;
        if (run->kind == K_DPDK) {
            r->dpdk_lcores[i] = w->dpdk_lcore;
            if (w->dpdk_cache < 0)
                r->dpdk_cache = -1;
        }
        if (run->kind == K_DPDK_MBUF) {
            r->mbuf_lcores[i] = w->dpdk_lcore;
            if (w->dpdk_cache < 0)
                r->mbuf_cache = -1;
        }
    }
    r->alloc_failures[run->scenario][impl] += afail;
    double hz = pool_meter_hz(&run->w[0].meter, 1, 2 * (unsigned)res->nslots);
    uint32_t *scratch = malloc((size_t)run->w[0].meter.max_groups * sizeof(uint32_t));
    for (int j = 0; j < res->nslots && scratch; j++) {
        res->slots[j] = slot_of(run, j, hz, scratch);
        if (run->kind == K_HP)
            res->freed[res->policy[j]] += res->slots[j].freed;
    }
    free(scratch);
    if (run->kind == K_HP) {
        static const char *const names[2] = {"A", "B"};
        int tids[2] = {run->w[0].tid, run->nthreads > 1 ? run->w[1].tid : -1};
        res->npairs =
            pool_pairs_of(run->pool, tids, names, run->nthreads, res->pairs, POOL_MAX_PAIRS);
    }
    if (ffail)
        return fail(err, errlen, "%s(%d) failed %llu times on a new buffer",
                    run->kind == K_DPDK_MBUF ? "rte_pktmbuf_append" : "hp_buf_append", FILL,
                    (unsigned long long)ffail);
    return 0;
}

/* Measure one row (a hotpath run measures its three) in one scenario, with
 * a fresh pool. Returns 0, or -1 with a message in err. */
static int measure_run(struct pool_report *r, const struct setup *su, int sc, int impl, int rep,
                       struct run_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    int per = is_hp(impl) ? 3 : 1;
    int two = sc >= POOL_PIPELINE;
    double secs =
        su->warmup_s + per * su->rounds[two] * (su->settle_s[two] + su->slice_s[two]) + 0.5;
    struct run *run = run_new(sc, impl, 2 * (unsigned)(per * su->rounds[two]) + 2, secs);
    if (!run)
        return fail(err, errlen, "out of memory");
    int rc = make_pool(r, run, impl, err, errlen);
    if (rc == 0) {
        int started = start_workers(run, su, err, errlen);
        if (started < run->nthreads) {
            abort_workers(run, started);
            rc = -1;
        } else {
            drive(run, su, rep, res);
            for (int i = 0; i < run->nthreads; i++)
                pthread_join(run->w[i].th, NULL);
            rc = finish_run(r, run, impl, res, err, errlen);
        }
    }
    drop_pool(run, &rc, err, errlen);
    run_free(run);
    return rc;
}

/* ---- the repetitions --------------------------------------------------------- */

/* Everything measured, over all repetitions. */
struct acc {
    /* per row and repetition: the median of its slices */
    double speed[POOL_NSCEN][POOL_NIMPLS][POOL_MAX_REPS];
    double mops[POOL_NSCEN][POOL_NIMPLS][POOL_MAX_REPS];
    double ns[POOL_NSCEN][POOL_NIMPLS][POOL_MAX_REPS];
    int got[POOL_NSCEN][POOL_NIMPLS];
    /* per round of a hotpath run: adaptive/local, adaptive/defer, defer/local */
    double pr[POOL_NSCEN][3][POOL_MAX_REPS * MAX_ROUNDS];
    int npr[POOL_NSCEN];
    double wait[POOL_NSCEN * POOL_NIMPLS * POOL_MAX_REPS];
    int nwait;
};

/* Median of v[0..n) (reordered); 0 for none. */
static double median(double *v, int n)
{
    return n ? tool_median(v, n) : 0;
}

/* Fold one run into the accumulators: per row its slices' medians, per
 * round of a hotpath run the paired ratios. */
static void fold_run(struct pool_report *r, struct acc *a, int sc, int impl,
                     const struct run_result *res)
{
    int per = is_hp(impl) ? 3 : 1;
    double sp[3][MAX_ROUNDS], mo[3][MAX_ROUNDS], ns[3][MAX_ROUNDS], wt[3 * MAX_ROUNDS];
    int n[3] = {0}, nw = 0;
    for (int j = 0; j < res->nslots; j++) {
        const struct slot *s = &res->slots[j];
        int k = per == 3 ? res->policy[j] : 0;
        if (!s->ok)
            continue;
        sp[k][n[k]] = s->speed;
        mo[k][n[k]] = s->mops;
        ns[k][n[k]++] = s->cpu_ns;
        wt[nw++] = s->wait;
    }
    for (int k = 0; k < per; k++) {
        int row = per == 3 ? k : impl, g = a->got[sc][row]++;
        a->speed[sc][row][g] = median(sp[k], n[k]);
        a->mops[sc][row][g] = median(mo[k], n[k]);
        a->ns[sc][row][g] = median(ns[k], n[k]);
    }
    if (nw && a->nwait < POOL_NSCEN * POOL_NIMPLS * POOL_MAX_REPS)
        a->wait[a->nwait++] = median(wt, nw);
    if (per == 3) {
        struct pool_policies *pol = &r->pol[sc];
        for (int k = 0; k < 3; k++) {
            stats_sub(&pol->st[k], &(struct hp_pool_stats){0}, &res->st[k]);
            pol->freed[k] += res->freed[k];
        }
        memcpy(pol->pairs, res->pairs, sizeof pol->pairs);
        pol->npairs = res->npairs;
        pol->warm_max_s = res->warm_s > pol->warm_max_s ? res->warm_s : pol->warm_max_s;
    }
}

/* The paired ratios of each round of a hotpath run (slices 3i..3i+2). */
static void fold_rounds(struct acc *a, int sc, const struct run_result *res)
{
    for (int j = 0; j + 2 < res->nslots; j += 3) {
        double v[3] = {0};
        bool ok = true;
        for (int i = 0; i < 3; i++) {
            ok &= res->slots[j + i].ok && res->slots[j + i].speed > 0;
            v[res->policy[j + i]] = res->slots[j + i].speed;
        }
        if (!ok || a->npr[sc] >= POOL_MAX_REPS * MAX_ROUNDS)
            continue;
        int i = a->npr[sc]++;
        a->pr[sc][0][i] = v[POOL_HP_ADAPTIVE] / v[POOL_HP_LOCAL];
        a->pr[sc][1][i] = v[POOL_HP_ADAPTIVE] / v[POOL_HP_DEFER];
        a->pr[sc][2][i] = v[POOL_HP_DEFER] / v[POOL_HP_LOCAL];
    }
}

/* The policy comparison of scenario sc from the rounds so far. */
static void compare_policies(struct pool_report *r, struct acc *a, int sc)
{
    struct pool_policies *pol = &r->pol[sc];
    int n = a->npr[sc];
    double v[POOL_MAX_REPS * MAX_ROUNDS];
    pol->ran = n > 0;
    memcpy(v, a->pr[sc][0], n * sizeof v[0]);
    pool_summarise(v, n, &pol->a_l);
    memcpy(v, a->pr[sc][1], n * sizeof v[0]);
    pool_summarise(v, n, &pol->a_d);
    memcpy(v, a->pr[sc][2], n * sizeof v[0]);
    pool_summarise(v, n, &pol->d_l);
    pol->better = pol->d_l.med > 1 ? POOL_HP_DEFER : POOL_HP_LOCAL;
    memcpy(v, a->pr[sc][pol->better == POOL_HP_DEFER ? 1 : 0], n * sizeof v[0]);
    pool_summarise(v, n, &pol->a_best);
}

/* The rows' cells from the repetitions: medians, and each row's rate over
 * each peer's, paired by repetition. */
static void make_cells(struct pool_report *r, struct acc *a, int reps)
{
    for (int sc = 0; sc < POOL_NSCEN; sc++)
        for (int k = 0; k < POOL_NIMPLS; k++) {
            struct pool_cell *c = &r->cells[sc][k];
            /* A repetition whose run had no valid slice for the row (its
             * threads never ran together) is left out: 0. */
            double mo[POOL_MAX_REPS], ns[POOL_MAX_REPS];
            int g = 0;
            for (int i = 0; i < a->got[sc][k]; i++)
                if (a->speed[sc][k][i] > 0) {
                    mo[g] = a->mops[sc][k][i];
                    ns[g++] = a->ns[sc][k][i];
                }
            c->ran = g > 0 && a->got[sc][k] == reps && !r->failed[k][0];
            if (!c->ran)
                continue;
            c->mops = median(mo, g);
            c->ns_per_obj = median(ns, g);
        }
    for (int sc = 0; sc < POOL_NSCEN; sc++)
        for (int k = 0; k < POOL_NIMPLS; k++)
            for (int q = POOL_DPDK; q < POOL_NIMPLS; q++) {
                if (!r->cells[sc][k].ran || !r->cells[sc][q].ran || q == k)
                    continue;
                double v[POOL_MAX_REPS];
                int n = 0;
                for (int i = 0; i < reps; i++)
                    if (a->speed[sc][k][i] > 0 && a->speed[sc][q][i] > 0)
                        v[n++] = a->speed[sc][k][i] / a->speed[sc][q][i];
                pool_summarise(v, n, &r->cells[sc][k].vs[q]);
            }
}

/* Enough repetitions: every scenario's adaptive/better ratio is known
 * within +-1% (its 95% interval at most 2% wide). */
static bool resolved(const struct pool_report *r, int nsc)
{
    for (int sc = 0; sc < nsc; sc++) {
        const struct pool_summary *s = &r->pol[sc].a_best;
        if (!s->ci || s->hi - s->lo > 0.02)
            return false;
    }
    return true;
}

static bool every_row_sliced(const struct run_result *res, int impl)
{
    int per = is_hp(impl) ? 3 : 1, n[3] = {0};
    for (int j = 0; j < res->nslots; j++)
        n[per == 3 ? res->policy[j] : 0] += res->slots[j].ok;
    return n[0] && (per == 1 || (n[1] && n[2]));
}

/* One scenario of one repetition: the hotpath run and each peer's, in an
 * order rotated by repetition. */
static void run_scenario(struct pool_report *r, struct acc *a, const struct setup *su, int sc,
                         int rep, const struct bench_opts *o, int *done, int total)
{
    static const int rows[] = {POOL_HP_ADAPTIVE, POOL_DPDK, POOL_DPDK_MBUF, POOL_MALLOC};
    struct run_result *res = malloc(sizeof *res);
    if (!res)
        return;
    for (int i = 0; i < 4; i++) {
        int impl = rows[(i + rep) % 4];
        int fk = is_hp(impl) ? POOL_HP_LOCAL : impl; /* where a failure is told */
        if (!r->have[impl] || r->failed[fk][0])
            continue;
        char err[200];
        int rc = measure_run(r, su, sc, impl, rep, res, err, sizeof err);
        /* A row without a valid slice (its threads never ran together, on
         * a busy machine): again, twice at most. */
        for (int again = 0; rc == 0 && again < 2 && !every_row_sliced(res, impl); again++) {
            r->retried++;
            rc = measure_run(r, su, sc, impl, rep, res, err, sizeof err);
        }
        if (rc == 0) {
            fold_run(r, a, sc, impl, res);
            if (is_hp(impl))
                fold_rounds(a, sc, res);
        } else {
            for (int k = is_hp(impl) ? 0 : impl; k <= (is_hp(impl) ? 2 : impl); k++)
                snprintf(r->failed[k], sizeof r->failed[k], "%s, %s: %s", impl_names[k],
                         scen_names[sc], err);
            fprintf(stderr, "hotpath bench pool: %s (row dropped)\n", r->failed[fk]);
        }
        if (o->progress) {
            char what[64];
            snprintf(what, sizeof what, "%s, %s, repetition %d", scen_names[sc],
                     is_hp(impl) ? "hotpath" : impl_names[impl], rep + 1);
            o->progress(o->progress_ctx, ++*done, total, what);
        }
    }
    free(res);
}

static void setup_report(struct pool_report *r, struct setup *su, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    r->min_reps = o->reps > 0 ? o->reps : (o->quick ? 3 : 6);
    r->max_reps = o->reps > 0 ? o->reps : (o->quick ? 4 : 16);
    if (r->max_reps > POOL_MAX_REPS)
        r->max_reps = r->min_reps = POOL_MAX_REPS;
    *su = (struct setup){.warmup_s = o->quick ? 0.05 : 0.1,
                         .warm_max_s = o->quick ? 0.5 : 1.5,
                         .settle_s = {0.003, 0.005},
                         .slice_s = {o->quick ? 0.008 : 0.012, o->quick ? 0.025 : 0.04},
                         .rounds = {o->quick ? 8 : 16, o->quick ? 4 : 8}};
    memcpy(r->rounds, su->rounds, sizeof r->rounds);
    r->warmup_s = su->warmup_s;
    r->warm_max_s = su->warm_max_s;
    memcpy(r->settle_s, su->settle_s, sizeof r->settle_s);
    memcpy(r->slice_s, su->slice_s, sizeof r->slice_s);
    r->n_bufs = N_BUFS;
    r->data_room = DATA_ROOM;
    r->cache_size = CACHE_SIZE;
    r->bulk = BULK;
    r->fill = FILL;
    r->ring = RING_SIZE;
    int ncpus = tool_ncpus();
    su->cpu[0] = o->cpu;
    su->cpu[1] = o->cpu >= 0 ? (o->cpu + 1) % ncpus : -1;
    r->cpu_a = su->cpu[0];
    r->cpu_b = su->cpu[1];
    r->two_threads = ncpus >= 2;
    r->dpdk_cache = r->mbuf_cache = CACHE_SIZE;
    r->dpdk_lcores[0] = r->dpdk_lcores[1] = r->mbuf_lcores[0] = r->mbuf_lcores[1] = -1;
}

/* Which peers run: DPDK's when EAL starts. */
static void setup_peers(struct pool_report *r)
{
    for (int k = 0; k < POOL_NIMPLS; k++)
        r->have[k] = !is_dpdk(k);
#ifdef HP_HAVE_DPDK
    const char *why = NULL;
    if (hp_peer_dpdk_init(&why) == 0) {
        r->have[POOL_DPDK] = true;
        r->have[POOL_DPDK_MBUF] = true;
        snprintf(r->dpdk_version, sizeof r->dpdk_version, "%s", hp_peer_dpdk_version());
    } else {
        snprintf(r->dpdk_note, sizeof r->dpdk_note, "dpdk row skipped: %s",
                 why ? why : "EAL init failed");
        snprintf(r->mbuf_note, sizeof r->mbuf_note, "dpdk-mbuf row skipped: %s",
                 why ? why : "EAL init failed");
    }
#else
    snprintf(r->dpdk_note, sizeof r->dpdk_note,
             "dpdk row skipped: libdpdk-dev was not installed at build time");
    snprintf(r->mbuf_note, sizeof r->mbuf_note,
             "dpdk-mbuf row skipped: libdpdk-dev was not installed at build time");
#endif
}

int pool_report_run(struct pool_report *r, const struct bench_opts *o)
{
    struct setup su;
    setup_report(r, &su, o);
    setup_peers(r);
    struct acc *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    int nsc = r->two_threads ? POOL_NSCEN : POOL_PIPELINE, nruns = 0, done = 0;
    for (int k = POOL_HP_ADAPTIVE; k < POOL_NIMPLS; k++)
        nruns += r->have[k];
    int total = r->max_reps * nsc * nruns;
    /* Repetitions until the ratios are resolved (or max_reps); the rows
     * of each interleave, in an order rotated at every repetition, so that
     * drift hits every row alike. */
    for (int rep = 0; rep < r->max_reps; rep++) {
        for (int sc = 0; sc < nsc; sc++)
            run_scenario(r, a, &su, sc, rep, o, &done, total);
        r->reps = rep + 1;
        for (int sc = 0; sc < nsc; sc++)
            compare_policies(r, a, sc);
        if (r->reps >= r->min_reps && resolved(r, nsc))
            break;
    }
    make_cells(r, a, r->reps);
    r->cpu_wait = median(a->wait, a->nwait);
    free(a);
    return 0;
}
