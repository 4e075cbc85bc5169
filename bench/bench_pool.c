/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench pool`: buffers per second and CPU ns per buffer of hotpath's pool under each alien policy, against DPDK's raw rte_mempool, DPDK's packet buffers (rte_mbuf) and malloc. */
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

#include "bench_pool.h"
#include "bench.h"
#include "tool.h"

/* The setup, equal for every row. */
#define N_BUFS 8192
#define DATA_ROOM 2048
#define CACHE_SIZE 256
#define BULK 32
#define FILL 64
#define RING_SIZE 1024 /* slots of each inter-thread ring, a power of 2 */
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
/* A measurement in which a worker waited for its CPU (another process had
 * it) for more than this share of the window is repeated, up to ATTEMPTS
 * times in all; the least disturbed one is kept. */
#define MAX_DISTURBED 0.02
#define ATTEMPTS 4

#define AI static inline __attribute__((always_inline))

static const char *const impl_names[POOL_NIMPLS] = {"hotpath-local", "hotpath-defer", "hotpath-adaptive",
                                                    "dpdk", "dpdk-mbuf", "malloc"};
static const char *const scen_names[POOL_NSCEN] = {"local-bulk1", "local-bulk32", "pipeline", "crossed"};
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

/* Nanoseconds the calling thread has spent runnable but waiting for a CPU
 * (the kernel's schedstat run_delay); 0 when the kernel does not say. */
static uint64_t thread_run_delay_ns(void)
{
    char buf[96];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long long run, delay;
    return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? delay : 0;
}

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

/* ---- one measurement: threads, phases ------------------------------------ */

enum { PH_INIT, PH_WARM, PH_MEASURE, PH_STOP };
enum { K_HP, K_DPDK, K_DPDK_MBUF, K_MALLOC };

struct run;

struct worker {
    _Alignas(64) struct run *run;
    struct worker *peer;
    int idx, cpu;
    pthread_t th;
    bool started;
    uint64_t freed_start, freed_end; /* buffers this thread freed, at the window's ends */
    uint64_t freed_total;
    double cpu_start, cpu_end;
    uint64_t delay_start, delay_end; /* run_delay at the window's ends */
    uint64_t alloc_fail, fill_fail;
    int pin_rc;
    int dpdk_lcore, dpdk_cache;
    _Alignas(64) _Atomic int done_push; /* read by the peer while draining */
};

struct run {
    _Alignas(64) _Atomic int phase; /* read by the workers once per batch */
    _Alignas(64) _Atomic int ready;
    _Atomic int barrier[2];
    int kind, scenario, nthreads;
    void *pool;
    struct spsc *ring[2]; /* ring[i] is pushed by worker i */
    struct worker w[2];
};

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

/* Once per batch: follow the main thread's phase; snapshot the counters at
 * the measurement window's ends. Returns true at the stop. */
AI bool phase_check(struct worker *w, int *seen, uint64_t freed)
{
    int ph = atomic_load_explicit(&w->run->phase, memory_order_relaxed);
    if (__builtin_expect(ph == *seen, 1))
        return false;
    double c = tool_thread_cpu_s();
    if (ph >= PH_MEASURE && !w->started) {
        w->started = true;
        w->freed_start = freed;
        w->cpu_start = c;
        w->delay_start = thread_run_delay_ns();
    }
    if (ph == PH_STOP) {
        w->freed_end = freed;
        w->cpu_end = c;
        w->delay_end = thread_run_delay_ns();
    }
    *seen = ph;
    return ph == PH_STOP;
}

AI void loop_local(struct worker *w, int kind, void *pool, unsigned bulk)
{
    void *objs[BULK];
    uint64_t freed = 0;
    int seen = PH_WARM;
    for (;;) {
        if (phase_check(w, &seen, freed))
            break;
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
        } else {
            if (get_bulk(kind, pool, objs, BULK)) {
                w->alloc_fail++;
                continue;
            }
            put_bulk(kind, pool, objs, BULK);
            freed += BULK;
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
    int seen = PH_WARM;
    unsigned char v = 0;
    for (;;) {
        if (phase_check(w, &seen, 0))
            break;
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
    int seen = PH_WARM;
    for (;;) {
        if (phase_check(w, &seen, freed))
            break;
        if (spsc_pop(in, objs, BULK)) {
            put_bulk(kind, pool, objs, BULK);
            freed += BULK;
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
    int seen = PH_WARM;
    unsigned char v = 0;
    for (;;) {
        if (phase_check(w, &seen, freed))
            break;
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

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *run = w->run;
    w->dpdk_lcore = -1;
    w->dpdk_cache = -1;
    if (w->cpu >= 0)
        w->pin_rc = tool_pin(w->cpu);
#ifdef HP_HAVE_DPDK
    if (run->kind == K_DPDK || run->kind == K_DPDK_MBUF) {
        /* A non-EAL thread has no mempool cache until it registers. */
        w->dpdk_lcore = hp_peer_dpdk_thread_register();
        w->dpdk_cache = hp_peer_dpdk_cache_size(run->pool);
    }
#endif
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
    /* Every free is done before any thread flushes, and every flush before
     * any thread gives up its number. */
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
    return NULL;
}

struct sample {
    uint64_t n; /* buffers freed in the window */
    double mops, ns_per_obj;
    double disturbed; /* largest share of the window a worker waited for its CPU */
};

struct setup {
    double warmup_s, measure_s;
    int cpu[2];
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

/* Measure one row in one scenario, with a fresh pool. Returns 0, or -1 with
 * a message in err. */
static int measure(struct pool_report *r, const struct setup *su, int sc, int impl, struct sample *out,
                   char *err, size_t errlen)
{
    static int seq;
    int rc = 0;
    struct run *run = aligned_alloc(64, sizeof *run);
    if (!run)
        return fail(err, errlen, "out of memory");
    memset(run, 0, sizeof *run);
    run->scenario = sc;
    run->nthreads = sc >= POOL_PIPELINE ? 2 : 1;
    run->kind = is_hp(impl) ? K_HP : impl == POOL_DPDK ? K_DPDK : impl == POOL_DPDK_MBUF ? K_DPDK_MBUF : K_MALLOC;
    char name[32];
    snprintf(name, sizeof name, "bench-%d", seq++);

    if (run->kind == K_HP) {
        struct hp_pool_config cfg = {.name = name, .n_bufs = N_BUFS, .data_room = DATA_ROOM,
                                     .cache_size = CACHE_SIZE, .alien_policy = hp_policy[impl],
                                     .flags = HP_POOL_F_NO_HUGEPAGES};
        run->pool = hp_pool_create(&cfg);
        if (!run->pool) {
            rc = fail(err, errlen, "hp_pool_create: %s", strerror(errno));
            goto out;
        }
        int prc = hp_pool_set_alien_policy(run->pool, hp_policy[impl]);
        if (prc || (int)hp_pool_alien_policy(run->pool) != hp_policy[impl]) {
            rc = fail(err, errlen, "hp_pool_set_alien_policy(%s): %s",
                      hp_alien_policy_name(hp_policy[impl]), prc ? strerror(-prc) : "not applied");
            goto out;
        }
        if (hp_pool_hugepages(run->pool))
            r->hugepages = true;
    }
#ifdef HP_HAVE_DPDK
    if (run->kind == K_DPDK) {
        run->pool = hp_peer_dpdk_pool_create(name, N_BUFS, ELT_SIZE, CACHE_SIZE);
        if (!run->pool) {
            rc = fail(err, errlen, "rte_mempool_create: %s", strerror(errno));
            goto out;
        }
        snprintf(r->dpdk_ops, sizeof r->dpdk_ops, "%s", hp_peer_dpdk_pool_ops(run->pool));
    }
    if (run->kind == K_DPDK_MBUF) {
        run->pool = hp_peer_dpdk_mbuf_pool_create(name, N_BUFS, MBUF_DATA_ROOM, CACHE_SIZE);
        if (!run->pool) {
            rc = fail(err, errlen, "rte_pktmbuf_pool_create: %s", strerror(errno));
            goto out;
        }
        snprintf(r->mbuf_ops, sizeof r->mbuf_ops, "%s", hp_peer_dpdk_pool_ops(run->pool));
        r->mbuf_elt_size = hp_peer_dpdk_pool_elt_size(run->pool);
        r->mbuf_data_room = hp_peer_dpdk_mbuf_data_room(run->pool);
        r->mbuf_headroom = hp_peer_dpdk_mbuf_headroom();
    }
#endif
    for (int i = 0; i < run->nthreads; i++) {
        run->ring[i] = NULL;
        if (run->nthreads == 2) {
            run->ring[i] = aligned_alloc(64, sizeof(struct spsc));
            if (!run->ring[i]) {
                rc = fail(err, errlen, "out of memory");
                goto out;
            }
            memset(run->ring[i], 0, sizeof(struct spsc));
        }
    }

    int started = 0;
    for (int i = 0; i < run->nthreads; i++) {
        struct worker *w = &run->w[i];
        w->run = run;
        w->peer = &run->w[1 - i];
        w->idx = i;
        w->cpu = su->cpu[i];
        int e = pthread_create(&w->th, NULL, worker_main, w);
        if (e) {
            rc = fail(err, errlen, "pthread_create: %s", strerror(e));
            break;
        }
        started++;
    }
    if (started == run->nthreads) {
        while (atomic_load_explicit(&run->ready, memory_order_acquire) < run->nthreads)
            sleep_s(0.0002);
        atomic_store_explicit(&run->phase, PH_WARM, memory_order_release);
        sleep_s(su->warmup_s);
        atomic_store_explicit(&run->phase, PH_MEASURE, memory_order_release);
        double t0 = tool_now_s();
        sleep_s(su->measure_s);
        double t1 = tool_now_s();
        atomic_store_explicit(&run->phase, PH_STOP, memory_order_release);
        for (int i = 0; i < started; i++)
            pthread_join(run->w[i].th, NULL);

        uint64_t n = 0, total = 0, afail = 0, ffail = 0;
        double cpu = 0, disturbed = 0;
        for (int i = 0; i < run->nthreads; i++) {
            const struct worker *w = &run->w[i];
            n += w->freed_end - w->freed_start;
            total += w->freed_total;
            cpu += w->cpu_end - w->cpu_start;
            afail += w->alloc_fail;
            double d = (double)(w->delay_end - w->delay_start) / 1e9 / (t1 - t0);
            disturbed = d > disturbed ? d : disturbed;
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
        r->alloc_failures[sc][impl] += afail;
        out->n = n;
        out->mops = (double)n / (t1 - t0) / 1e6;
        out->ns_per_obj = n ? cpu * 1e9 / (double)n : 0;
        out->disturbed = disturbed;
        if (ffail)
            rc = fail(err, errlen, "%s(%d) failed %llu times on a new buffer",
                      run->kind == K_DPDK_MBUF ? "rte_pktmbuf_append" : "hp_buf_append", FILL,
                      (unsigned long long)ffail);
        /* n == 0 is left to the caller: it may be another process's doing. */
        if (run->kind == K_HP) {
            struct pool_counters *pc = &r->counters[sc][impl];
            pc->valid = hp_pool_stats(run->pool, &pc->st) == 0;
            pc->buffers = total;
        }
    } else {
        /* Let the threads that did start finish at once: nobody waits for
         * the ones that did not. */
        for (int i = started; i < run->nthreads; i++)
            atomic_store_explicit(&run->w[i].done_push, 1, memory_order_relaxed);
        run->nthreads = started;
        atomic_store_explicit(&run->phase, PH_STOP, memory_order_release);
        for (int i = 0; i < started; i++)
            pthread_join(run->w[i].th, NULL);
    }

out:
    if (run->kind == K_HP && run->pool) {
        long used = hp_pool_in_use(run->pool);
        if (used != 0 && rc == 0)
            rc = fail(err, errlen, "%ld buffers still in use after every thread freed and flushed", used);
        if (used == 0) {
            int d = hp_pool_destroy(run->pool);
            if (d && rc == 0)
                rc = fail(err, errlen, "hp_pool_destroy: %s", strerror(-d));
        }
        /* else leaked on purpose: destroying would fail with -EBUSY */
    }
#ifdef HP_HAVE_DPDK
    if ((run->kind == K_DPDK || run->kind == K_DPDK_MBUF) && run->pool) {
        unsigned avail = hp_peer_dpdk_pool_avail(run->pool);
        if (avail != N_BUFS && rc == 0)
            rc = fail(err, errlen, "%u of %d objects back in the mempool at the end", avail, N_BUFS);
        hp_peer_dpdk_pool_free(run->pool);
    }
#endif
    free(run->ring[0]);
    free(run->ring[1]);
    free(run);
    return rc;
}

/* ---- the run ------------------------------------------------------------- */

int pool_report_run(struct pool_report *r, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    int reps = o->reps > 0 ? o->reps : (o->quick ? 3 : 5);
    if (reps > POOL_MAX_REPS)
        reps = POOL_MAX_REPS;
    r->reps = reps;
    struct setup su = {.warmup_s = o->quick ? 0.05 : 0.1, .measure_s = o->quick ? 0.2 : 0.5};
    r->warmup_s = su.warmup_s;
    r->measure_s = su.measure_s;
    r->n_bufs = N_BUFS;
    r->data_room = DATA_ROOM;
    r->cache_size = CACHE_SIZE;
    r->bulk = BULK;
    r->fill = FILL;
    r->ring = RING_SIZE;
    int ncpus = tool_ncpus();
    su.cpu[0] = o->cpu;
    su.cpu[1] = o->cpu >= 0 ? (o->cpu + 1) % ncpus : -1;
    r->cpu_a = su.cpu[0];
    r->cpu_b = su.cpu[1];
    r->two_threads = ncpus >= 2;
    r->dpdk_cache = CACHE_SIZE;
    r->dpdk_lcores[0] = r->dpdk_lcores[1] = -1;
    r->mbuf_cache = CACHE_SIZE;
    r->mbuf_lcores[0] = r->mbuf_lcores[1] = -1;

    for (int k = 0; k < POOL_NIMPLS; k++)
        r->have[k] = !is_dpdk(k);
#ifdef HP_HAVE_DPDK
    const char *why = NULL;
    if (hp_peer_dpdk_init(&why) == 0) {
        r->have[POOL_DPDK] = true;
        r->have[POOL_DPDK_MBUF] = true;
        snprintf(r->dpdk_version, sizeof r->dpdk_version, "%s", hp_peer_dpdk_version());
    } else {
        snprintf(r->dpdk_note, sizeof r->dpdk_note, "dpdk row skipped: %s", why ? why : "EAL init failed");
        snprintf(r->mbuf_note, sizeof r->mbuf_note, "dpdk-mbuf row skipped: %s", why ? why : "EAL init failed");
    }
#else
    snprintf(r->dpdk_note, sizeof r->dpdk_note,
             "dpdk row skipped: libdpdk-dev was not installed at build time");
    snprintf(r->mbuf_note, sizeof r->mbuf_note,
             "dpdk-mbuf row skipped: libdpdk-dev was not installed at build time");
#endif

    double mops[POOL_NSCEN][POOL_NIMPLS][POOL_MAX_REPS];
    double nspo[POOL_NSCEN][POOL_NIMPLS][POOL_MAX_REPS];
    int got[POOL_NSCEN][POOL_NIMPLS] = {{0}};
    int nsc = r->two_threads ? POOL_NSCEN : POOL_PIPELINE, nrows = 0;
    for (int k = 0; k < POOL_NIMPLS; k++)
        nrows += r->have[k];
    int total = reps * nsc * nrows, done = 0;

    /* Rows interleave within each repetition, in an order rotated at every
     * repetition, so that drift hits every row alike. */
    for (int rep = 0; rep < reps; rep++)
        for (int sc = 0; sc < nsc; sc++)
            for (int i = 0; i < POOL_NIMPLS; i++) {
                int k = (i + rep) % POOL_NIMPLS;
                if (!r->have[k])
                    continue;
                if (!r->failed[k][0]) {
                    struct sample s, best = {0, 0, 0, 2};
                    char err[160];
                    int rc = 0;
                    for (int a = 0; a < ATTEMPTS; a++) {
                        memset(&s, 0, sizeof s);
                        rc = measure(r, &su, sc, k, &s, err, sizeof err);
                        if (rc)
                            break;
                        if (s.n && s.disturbed < best.disturbed)
                            best = s;
                        /* Starved by another process, or stalled: again. */
                        if ((s.n == 0 || s.disturbed > MAX_DISTURBED) && a + 1 < ATTEMPTS) {
                            r->retried++;
                            continue;
                        }
                        break;
                    }
                    if (rc == 0 && best.n == 0) {
                        rc = -1;
                        snprintf(err, sizeof err, "no buffer went through in %d attempts of %.2g s "
                                 "(%llu allocations failed; in the last, a worker waited for its CPU "
                                 "%.0f%% of the time)", ATTEMPTS, su.measure_s,
                                 (unsigned long long)r->alloc_failures[sc][k], 100 * s.disturbed);
                    }
                    if (rc == 0) {
                        if (best.disturbed > r->max_disturbed)
                            r->max_disturbed = best.disturbed;
                        mops[sc][k][got[sc][k]] = best.mops;
                        nspo[sc][k][got[sc][k]++] = best.ns_per_obj;
                    } else {
                        snprintf(r->failed[k], sizeof r->failed[k], "%s, %s: %s", impl_names[k],
                                 scen_names[sc], err);
                        fprintf(stderr, "hotpath bench pool: %s (row dropped)\n", r->failed[k]);
                    }
                }
                if (o->progress) {
                    char what[64];
                    snprintf(what, sizeof what, "%s, %s", scen_names[sc], impl_names[k]);
                    o->progress(o->progress_ctx, ++done, total, what);
                }
            }
    for (int sc = 0; sc < POOL_NSCEN; sc++)
        for (int k = 0; k < POOL_NIMPLS; k++) {
            struct pool_cell *c = &r->cells[sc][k];
            c->ran = got[sc][k] == reps;
            if (c->ran) {
                c->mops = tool_median(mops[sc][k], reps);
                c->ns_per_obj = tool_median(nspo[sc][k], reps);
            }
        }
    return 0;
}

/* ---- goals -------------------------------------------------------------- */

static void goal(struct pool_report *r, bool met, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void goal(struct pool_report *r, bool met, const char *fmt, ...)
{
    if (r->ngoals == POOL_MAX_GOALS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->goals[r->ngoals].text, sizeof r->goals[0].text, fmt, ap);
    va_end(ap);
    r->goals[r->ngoals++].met = met;
}

static bool hp_ran(const struct pool_report *r, int sc)
{
    return r->cells[sc][POOL_HP_LOCAL].ran && r->cells[sc][POOL_HP_DEFER].ran &&
           r->cells[sc][POOL_HP_ADAPTIVE].ran;
}

static const char *dpdk_missing(const struct pool_report *r)
{
    return r->dpdk_note[0] ? r->dpdk_note : r->failed[POOL_DPDK][0] ? r->failed[POOL_DPDK] : "dpdk row missing";
}

static const char *mbuf_missing(const struct pool_report *r)
{
    return r->mbuf_note[0]                ? r->mbuf_note
           : r->failed[POOL_DPDK_MBUF][0] ? r->failed[POOL_DPDK_MBUF]
                                          : "dpdk-mbuf row missing";
}

/* What makes dpdk-mbuf the like-for-like peer, for the goals' text. */
#define LIKE_FOR_LIKE "the like-for-like comparison: DPDK's packet buffers, metadata reset and checked like hotpath's"

void pool_report_goals(struct pool_report *r)
{
    struct pool_cell(*c)[POOL_NIMPLS] = r->cells;
    r->ngoals = 0;
    for (int k = 0; k < POOL_NIMPLS; k++)
        if (!is_dpdk(k) && r->failed[k][0])
            goal(r, false, "%s failed: %s", impl_names[k], r->failed[k]);

    /* local bulk 32 */
    int s = POOL_LOCAL_BULK32;
    if (hp_ran(r, s) && c[s][POOL_DPDK].ran) {
        double worst = 1e9;
        int who = 0;
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++)
            if (c[s][k].mops / c[s][POOL_DPDK].mops < worst) {
                worst = c[s][k].mops / c[s][POOL_DPDK].mops;
                who = k;
            }
        goal(r, worst >= 1.0, "local-bulk32: every hotpath row >= dpdk's rate (worst %s %.1f vs %.1f Mbuf/s, %.2fx)",
             impl_names[who], c[s][who].mops, c[s][POOL_DPDK].mops, worst);
    } else if (hp_ran(r, s)) {
        goal(r, false, "local-bulk32: hotpath >= dpdk not measured (%s)", dpdk_missing(r));
    }
    if (hp_ran(r, s) && c[s][POOL_DPDK_MBUF].ran) {
        double worst = 1e9;
        int who = 0;
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++)
            if (c[s][k].mops / c[s][POOL_DPDK_MBUF].mops < worst) {
                worst = c[s][k].mops / c[s][POOL_DPDK_MBUF].mops;
                who = k;
            }
        goal(r, worst >= 1.0,
             "local-bulk32: every hotpath row >= dpdk-mbuf's rate (worst %s %.1f vs %.1f Mbuf/s, %.2fx), "
             LIKE_FOR_LIKE, impl_names[who], c[s][who].mops, c[s][POOL_DPDK_MBUF].mops, worst);
    } else if (hp_ran(r, s)) {
        goal(r, false, "local-bulk32: hotpath >= dpdk-mbuf (" LIKE_FOR_LIKE ") not measured (%s)",
             mbuf_missing(r));
    }
    if (hp_ran(r, s)) {
        double lo = 1e18, hi = 0;
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++) {
            lo = c[s][k].mops < lo ? c[s][k].mops : lo;
            hi = c[s][k].mops > hi ? c[s][k].mops : hi;
        }
        double spread = lo > 0 ? (hi - lo) / lo : 1e9;
        goal(r, spread <= 0.02,
             "local-bulk32: the alien-policy check costs nothing measurable: LOCAL %.1f, DEFER %.1f, "
             "ADAPTIVE %.1f Mbuf/s within 2%% (spread %.1f%%)",
             c[s][POOL_HP_LOCAL].mops, c[s][POOL_HP_DEFER].mops, c[s][POOL_HP_ADAPTIVE].mops, 100 * spread);
    }

    /* pipeline and crossed */
    for (s = POOL_PIPELINE; s <= POOL_CROSSED; s++) {
        if (!r->two_threads) {
            goal(r, false, "%s: not measured (needs 2 CPUs)", scen_names[s]);
            continue;
        }
        if (!hp_ran(r, s))
            continue;
        int better = c[s][POOL_HP_LOCAL].mops >= c[s][POOL_HP_DEFER].mops ? POOL_HP_LOCAL : POOL_HP_DEFER;
        double a = c[s][POOL_HP_ADAPTIVE].mops / c[s][better].mops;
        goal(r, a >= 0.97,
             "%s: ADAPTIVE within 3%% of the better of LOCAL and DEFER (%.1f vs %s %.1f Mbuf/s: %+.1f%%)",
             scen_names[s], c[s][POOL_HP_ADAPTIVE].mops, better == POOL_HP_LOCAL ? "LOCAL" : "DEFER",
             c[s][better].mops, 100 * (a - 1));
        int best = POOL_HP_LOCAL;
        for (int k = 1; k <= POOL_HP_ADAPTIVE; k++)
            if (c[s][k].mops > c[s][best].mops)
                best = k;
        if (c[s][POOL_DPDK].ran) {
            double b = c[s][best].mops / c[s][POOL_DPDK].mops;
            goal(r, b >= 1.2, "%s: the best hotpath row >= 1.2x dpdk (%s %.1f vs %.1f Mbuf/s: %.2fx)",
                 scen_names[s], impl_names[best], c[s][best].mops, c[s][POOL_DPDK].mops, b);
        } else {
            goal(r, false, "%s: best hotpath >= 1.2x dpdk not measured (%s)", scen_names[s], dpdk_missing(r));
        }
        if (c[s][POOL_DPDK_MBUF].ran) {
            double b = c[s][best].mops / c[s][POOL_DPDK_MBUF].mops;
            goal(r, b >= 1.2,
                 "%s: the best hotpath row >= 1.2x dpdk-mbuf (%s %.1f vs %.1f Mbuf/s: %.2fx), " LIKE_FOR_LIKE,
                 scen_names[s], impl_names[best], c[s][best].mops, c[s][POOL_DPDK_MBUF].mops, b);
        } else {
            goal(r, false, "%s: best hotpath >= 1.2x dpdk-mbuf (" LIKE_FOR_LIKE ") not measured (%s)",
                 scen_names[s], mbuf_missing(r));
        }
    }

    /* every hotpath row against malloc */
    double worst = 1e9;
    int wk = -1, ws = -1;
    for (s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++)
            if (c[s][k].ran && c[s][POOL_MALLOC].ran && c[s][k].mops / c[s][POOL_MALLOC].mops < worst) {
                worst = c[s][k].mops / c[s][POOL_MALLOC].mops;
                wk = k;
                ws = s;
            }
    if (wk >= 0)
        goal(r, worst >= 3.0, "every hotpath row >= 3x malloc (worst %s in %s: %.1f vs %.1f Mbuf/s, %.2fx)",
             impl_names[wk], scen_names[ws], c[ws][wk].mops, c[ws][POOL_MALLOC].mops, worst);
    else
        goal(r, false, "every hotpath row >= 3x malloc: not measured");
}

/* ---- output ------------------------------------------------------------- */

static void print_dpdk_cache(FILE *f, int cache, const int lcores[2])
{
    if (cache < 0) {
        fprintf(f, "NOT used by some workers (rte_thread_register failed: every get/put hit the ring)");
        return;
    }
    fprintf(f, "in use in every worker (non-EAL threads registered with rte_thread_register: lcore");
    for (int i = 0; i < 2; i++)
        if (lcores[i] >= 0)
            fprintf(f, " %d", lcores[i]);
    fprintf(f, ")");
}

void pool_report_print_header(const struct pool_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "cpu:        %s\n", cpu);
    fprintf(f, "compiler:   %s\n", tool_compiler());
    fprintf(f, "flags:      %s\n", tool_build_flags());
    fprintf(f, "pool:       %u buffers of %u B data room, %d B headroom included (+%d B metadata; dpdk and "
               "malloc objects: %d B; dpdk-mbuf: see below),\n            per-thread cache %u, hotpath "
               "defer_max 128 (default), normal pages for every row\n",
            r->n_bufs, r->data_room, HP_BUF_HEADROOM, HP_BUF_META_SIZE, ELT_SIZE, r->cache_size);
    fprintf(f, "method:     Mbuf/s = buffers freed per second of wall time; ns/buf = CPU time of the "
               "scenario's threads\n            (CLOCK_THREAD_CPUTIME_ID, summed, spinning on the ring "
               "included) per buffer; %.2g s warm-up then %.2g s,\n            median of %d repetitions, "
               "rows interleaved (order rotated each repetition), a fresh pool per measurement\n",
            r->warmup_s, r->measure_s, r->reps);
    if (r->cpu_a >= 0)
        fprintf(f, "threads:    local on CPU %d; pipeline and crossed on CPUs %d (A) and %d (B)%s\n", r->cpu_a,
                r->cpu_a, r->cpu_b, r->pin_failed ? " (pinning FAILED for some: unpinned)" : "");
    else
        fprintf(f, "threads:    unpinned (--cpu -1)\n");
    fprintf(f, "scenarios:  local-bulk1: %u single allocations, then %u single frees; local-bulk32: "
               "alloc %u in bulk, free them in bulk;\n            pipeline: A allocates %u, writes %u B "
               "of data into each, pushes them onto a %u-slot SPSC ring; B pops %u and frees them;\n"
               "            crossed: each thread does A's part towards the other and B's part for what "
               "the other pushes\n",
            r->bulk, r->bulk, r->bulk, r->bulk, r->fill, r->ring, r->bulk);
    if (r->have[POOL_DPDK]) {
        fprintf(f, "dpdk:       %s raw rte_mempool (rte_mempool_get/put[_bulk]: objects never touched, no "
                   "mbuf init or check: NOT like for like), ops %s, cache %u:\n            ", r->dpdk_version,
                r->dpdk_ops[0] ? r->dpdk_ops : "?", r->cache_size);
        print_dpdk_cache(f, r->dpdk_cache, r->dpdk_lcores);
        fprintf(f, ";\n            EAL --no-huge --no-pci --no-shconf; one call into the peer per get/put "
                   "like hotpath's\n");
    }
    if (r->have[POOL_DPDK_MBUF]) {
        fprintf(f, "dpdk-mbuf:  %s packet buffers, the like-for-like peer: rte_pktmbuf_pool_create(%u mbufs, "
                   "cache %u, priv 0, data room %u B, %u B headroom included, as hotpath's),\n            "
                   "%u B per mbuf, ops %s, cache %u: ", r->dpdk_version, r->n_bufs, r->cache_size,
                r->mbuf_data_room, r->mbuf_headroom, r->mbuf_elt_size, r->mbuf_ops[0] ? r->mbuf_ops : "?",
                r->cache_size);
        print_dpdk_cache(f, r->mbuf_cache, r->mbuf_lcores);
        fprintf(f, ";\n            rte_pktmbuf_alloc[_bulk] reset each mbuf's metadata, "
                   "rte_pktmbuf_free[_bulk] check refcnt, chain, indirect/external before the put (as hotpath "
                   "does);\n            data written with rte_pktmbuf_append + memset (as hp_buf_append + "
                   "memset); one call into the peer per alloc/free/append like hotpath's\n");
    }
    if (r->dpdk_note[0])
        fprintf(f, "note:       %s\n", r->dpdk_note);
    if (r->mbuf_note[0])
        fprintf(f, "note:       %s\n", r->mbuf_note);
    if (!r->two_threads)
        fprintf(f, "note:       pipeline and crossed skipped: they need 2 CPUs\n");
    if (r->hugepages)
        fprintf(f, "note:       a hotpath pool got huge pages although asked not to\n");
    if (r->retried)
        fprintf(f, "note:       %d measurements repeated: another process held a worker's CPU for over %.0f%% "
                   "of the window\n", r->retried, 100 * MAX_DISTURBED);
    if (r->max_disturbed > MAX_DISTURBED)
        fprintf(f, "note:       in the worst measurement kept, a worker waited %.0f%% of the window for its "
                   "CPU: this machine is busy, compare with care\n", 100 * r->max_disturbed);
    for (int s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k < POOL_NIMPLS; k++)
            if (r->alloc_failures[s][k])
                fprintf(f, "note:       %s, %s: %llu allocations failed (pool empty) and were retried\n",
                        scen_names[s], impl_names[k], (unsigned long long)r->alloc_failures[s][k]);
}

void pool_report_print_table(const struct pool_report *r, FILE *f)
{
    pool_report_print_header(r, f);
    fprintf(f, "\n%-14s %-17s %9s %9s %9s %9s %10s\n", "scenario", "impl", "Mbuf/s", "ns/buf", "vs dpdk",
            "vs mbuf", "vs malloc");
    for (int s = 0; s < POOL_NSCEN; s++) {
        if (s >= POOL_PIPELINE && !r->two_threads)
            continue;
        const struct pool_cell *c = r->cells[s];
        for (int k = 0; k < POOL_NIMPLS; k++) {
            fprintf(f, "%-14s %-17s", k == 0 ? scen_names[s] : "", impl_names[k]);
            if (!c[k].ran) {
                bool skipped = (k == POOL_DPDK && r->dpdk_note[0]) || (k == POOL_DPDK_MBUF && r->mbuf_note[0]);
                fprintf(f, " %9s\n", skipped ? "skipped" : "failed");
                continue;
            }
            fprintf(f, " %9.2f %9.2f", c[k].mops, c[k].ns_per_obj);
            if (k != POOL_DPDK && c[POOL_DPDK].ran)
                fprintf(f, " %8.2fx", c[k].mops / c[POOL_DPDK].mops);
            else
                fprintf(f, " %9s", "");
            if (k != POOL_DPDK_MBUF && c[POOL_DPDK_MBUF].ran)
                fprintf(f, " %8.2fx", c[k].mops / c[POOL_DPDK_MBUF].mops);
            else
                fprintf(f, " %9s", "");
            if (k != POOL_MALLOC && c[POOL_MALLOC].ran)
                fprintf(f, " %9.2fx", c[k].mops / c[POOL_MALLOC].mops);
            fputc('\n', f);
        }
    }

    /* What the pool did, from its counters: explains LOCAL vs DEFER. */
    bool any = false;
    for (int s = POOL_PIPELINE; s < POOL_NSCEN; s++)
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++)
            any |= r->counters[s][k].valid && r->counters[s][k].buffers > 0;
    if (any) {
        fprintf(f, "\nhotpath counters, last repetition (warm-up included), per 1000 buffers freed\n"
                   "%-14s %-17s %7s %8s %9s %7s %8s %8s %9s\n",
                "scenario", "impl", "alien", "deferred", "overflows", "taken", "refills", "flushes",
                "ring ops");
        for (int s = POOL_PIPELINE; s < POOL_NSCEN; s++)
            for (int k = 0; k <= POOL_HP_ADAPTIVE; k++) {
                const struct pool_counters *pc = &r->counters[s][k];
                if (!pc->valid || !pc->buffers)
                    continue;
                double d = (double)pc->buffers / 1000;
                fprintf(f, "%-14s %-17s %7.1f %8.1f %9.1f %7.1f %8.2f %8.2f %9.2f\n", k == 0 ? scen_names[s] : "",
                        impl_names[k], (double)pc->st.alien_frees / d, (double)pc->st.deferred / d,
                        (double)pc->st.defer_overflows / d, (double)pc->st.defer_taken / d,
                        (double)pc->st.refills / d, (double)pc->st.flushes / d, (double)pc->st.ring_ops / d);
            }
    }

    fprintf(f, "\ngoals\n");
    for (int i = 0; i < r->ngoals; i++)
        fprintf(f, "  [%s] %s\n", r->goals[i].met ? " met " : "MISSED", r->goals[i].text);
}

void pool_report_print_json(const struct pool_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "{\"bench\": \"pool\", \"cpu\": ");
    tool_json_str(f, cpu);
    fprintf(f, ", \"compiler\": ");
    tool_json_str(f, tool_compiler());
    fprintf(f, ", \"flags\": ");
    tool_json_str(f, tool_build_flags());
    fprintf(f, ",\n \"reps\": %d, \"warmup_s\": %g, \"measure_s\": %g, \"n_bufs\": %u, \"data_room\": %u, "
               "\"cache_size\": %u, \"bulk\": %u, \"fill_bytes\": %u, \"ring\": %u, \"cpus\": [%d, %d],\n"
               " \"dpdk\": ",
            r->reps, r->warmup_s, r->measure_s, r->n_bufs, r->data_room, r->cache_size, r->bulk, r->fill, r->ring,
            r->cpu_a, r->cpu_b);
    if (r->have[POOL_DPDK]) {
        fprintf(f, "{\"version\": ");
        tool_json_str(f, r->dpdk_version);
        fprintf(f, ", \"ops\": ");
        tool_json_str(f, r->dpdk_ops);
        fprintf(f, ", \"cache_in_use\": %s}", r->dpdk_cache >= 0 ? "true" : "false");
    } else {
        fprintf(f, "null");
    }
    fprintf(f, ",\n \"dpdk_mbuf\": ");
    if (r->have[POOL_DPDK_MBUF]) {
        fprintf(f, "{\"version\": ");
        tool_json_str(f, r->dpdk_version);
        fprintf(f, ", \"ops\": ");
        tool_json_str(f, r->mbuf_ops);
        fprintf(f, ", \"cache_in_use\": %s, \"data_room\": %u, \"headroom\": %u, \"elt_size\": %u}",
                r->mbuf_cache >= 0 ? "true" : "false", r->mbuf_data_room, r->mbuf_headroom, r->mbuf_elt_size);
    } else {
        fprintf(f, "null");
    }
    fprintf(f, ", \"notes\": [");
    bool first = true;
    if (r->dpdk_note[0]) {
        tool_json_str(f, r->dpdk_note);
        first = false;
    }
    if (r->mbuf_note[0]) {
        fprintf(f, "%s", first ? "" : ", ");
        tool_json_str(f, r->mbuf_note);
        first = false;
    }
    for (int k = 0; k < POOL_NIMPLS; k++)
        if (r->failed[k][0]) {
            fprintf(f, "%s", first ? "" : ", ");
            tool_json_str(f, r->failed[k]);
            first = false;
        }
    fprintf(f, "],\n \"retried\": %d, \"max_cpu_wait\": %.4f,\n \"results\": [", r->retried,
            r->max_disturbed);
    first = true;
    for (int s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k < POOL_NIMPLS; k++) {
            const struct pool_cell *c = &r->cells[s][k];
            if (!c->ran)
                continue;
            fprintf(f, "%s\n  {\"scenario\": \"%s\", \"impl\": \"%s\", \"mops\": %.3f, \"ns_per_obj\": %.3f}",
                    first ? "" : ",", scen_names[s], impl_names[k], c->mops, c->ns_per_obj);
            first = false;
        }
    fprintf(f, "],\n \"goals\": [");
    for (int i = 0; i < r->ngoals; i++) {
        fprintf(f, "%s\n  {\"goal\": ", i ? "," : "");
        tool_json_str(f, r->goals[i].text);
        fprintf(f, ", \"met\": %s}", r->goals[i].met ? "true" : "false");
    }
    fprintf(f, "]}\n");
}

int bench_pool(const struct bench_opts *o, FILE *table)
{
    struct pool_report *r = malloc(sizeof *r);
    if (!r)
        return 1;
    int rc = pool_report_run(r, o);
    if (rc) {
        fprintf(stderr, "hotpath bench pool: %s\n", strerror(-rc));
        free(r);
        return 1;
    }
    pool_report_goals(r);
    if (o->json)
        pool_report_print_json(r, stdout);
    else
        pool_report_print_table(r, table);
    if (o->json_out)
        pool_report_print_json(r, o->json_out);
    bool failed = false;
    for (int k = 0; k < POOL_NIMPLS; k++)
        failed |= r->failed[k][0] != 0;
    free(r);
    return failed ? 1 : 0;
}
