/* SPDX-License-Identifier: BSD-3-Clause */
/* The pool's debug checks (HP_DEBUG builds): a buffer written after it was freed is reported with the pool's name and the address, and counted; deferred batches and clones raise no false alarm. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/log.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "track.h"

#ifdef HP_DEBUG

/* What the log hook saw. */
static struct {
    int n;
    char last[256];
} logged;

static void log_hook(void *ctx, enum hp_log_level level, const char *subsys, const char *msg)
{
    (void)ctx;
    if (level != HP_LOG_ERR || strcmp(subsys, "pool") != 0)
        return;
    logged.n++;
    snprintf(logged.last, sizeof logged.last, "%s", msg);
}

static void log_begin(void)
{
    memset(&logged, 0, sizeof logged);
    hp_set_log_fn(log_hook, NULL);
}

static void log_end(void)
{
    hp_set_log_fn(NULL, NULL);
}

static struct hp_pool *make_pool(const char *name, uint32_t n, int policy)
{
    struct hp_pool_config c = {.name = name,
                               .n_bufs = n,
                               .data_room = 1024,
                               .cache_size = 32,
                               .alien_policy = policy,
                               .flags = HP_POOL_F_NO_HUGEPAGES};
    struct hp_pool *p = hp_pool_create(&c);
    if (!p)
        hp_test_fail(__FILE__, __LINE__, "hp_pool_create(%s): %s", name, strerror(errno));
    return track_pool(p);
}

static void destroy_pool(struct hp_pool *p)
{
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
    untrack_pool(p);
}

static uint64_t written_after_free(const struct hp_pool *p)
{
    struct hp_pool_stats st;
    if (hp_pool_stats(p, &st) != 0)
        return UINT64_MAX;
    return st.written_after_free;
}

/* The log line names the pool and the buffer. */
static void check_line_at(int line, const char *name, const void *b, const char *where)
{
    char addr[32];
    snprintf(addr, sizeof addr, "%p", b);
    if (!strstr(logged.last, name) || !strstr(logged.last, addr) || !strstr(logged.last, where))
        hp_test_fail(__FILE__, line, "report \"%s\" does not name pool %s, buffer %s, %s",
                     logged.last, name, addr, where);
}
#define CHECK_LINE(name, b, where) check_line_at(__LINE__, name, b, where)

/* Write into the data of a freed buffer; the next allocation (the same
 * buffer: the cache is last in, first out) reports it, once. */
HP_TEST(pool_debug_data_written_after_free)
{
    struct hp_pool *p = make_pool("waf-data", 64, HP_ALIEN_LOCAL);
    HP_REQUIRE(p);
    log_begin();
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    unsigned char *d = hp_buf_append(b, 10);
    HP_REQUIRE(d);
    hp_buf_free(b);
    d[3] = 0x42; /* the bug */
    struct hp_buf *again = hp_buf_alloc(p);
    HP_CHECK(again == b);
    HP_CHECK_EQ(logged.n, 1);
    CHECK_LINE("waf-data", b, "data room");
    HP_CHECK_EQ(written_after_free(p), 1);
    /* Allocation rewrote it: freeing and allocating again is quiet. */
    hp_buf_free(again);
    again = hp_buf_alloc(p);
    HP_CHECK_EQ(logged.n, 1);
    hp_buf_free(again);
    log_end();
    struct hp_pool_stats st;
    HP_CHECK_EQ(hp_pool_stats(p, &st), 0);
    HP_CHECK_EQ(st.errors, 1);
    destroy_pool(p);
}

/* Write into the metadata of a freed buffer (a stale pointer setting
 * data_len), found by the bulk allocation. */
HP_TEST(pool_debug_metadata_written_after_free)
{
    struct hp_pool *p = make_pool("waf-meta", 64, HP_ALIEN_LOCAL);
    HP_REQUIRE(p);
    log_begin();
    struct hp_buf *a[8];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, 8), 8);
    struct hp_buf *stale = a[7];
    hp_buf_free_bulk(a, 8);
    stale->data_len = 99; /* the bug */
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, 8), 8);
    HP_CHECK_EQ(logged.n, 1);
    CHECK_LINE("waf-meta", stale, "metadata");
    HP_CHECK_EQ(written_after_free(p), 1);
    int found = 0;
    for (int i = 0; i < 8; i++)
        found += a[i] == stale;
    HP_CHECK_EQ(found, 1);
    HP_CHECK_EQ(stale->data_len, 0); /* handed out fresh all the same */
    hp_buf_free_bulk(a, 8);
    log_end();
    destroy_pool(p);
}

/* A buffer another thread frees, deferred to its owner in a batch (the
 * batch lives in a free buffer's data room): no false alarm when the owner
 * takes the batch back and hands the buffers out again; a write after the
 * alien free is still caught. */
struct alien {
    struct hp_buf **bufs;
    unsigned n;
    struct hp_pool *p;
};

static void *alien_free_main(void *arg)
{
    struct alien *x = arg;
    hp_buf_free_bulk(x->bufs, x->n);
    hp_pool_thread_flush(x->p);
    hp_thread_exit();
    return NULL;
}

static void free_on_other_thread(struct hp_pool *p, struct hp_buf **bufs, unsigned n)
{
    struct alien x = {bufs, n, p};
    pthread_t th;
    if (pthread_create(&th, NULL, alien_free_main, &x) != 0) {
        hp_test_fail(__FILE__, __LINE__, "pthread_create failed");
        return;
    }
    pthread_join(th, NULL);
}

HP_TEST(pool_debug_deferred_batches_quiet)
{
    enum { N = 256, K = 64 };
    struct hp_pool *p = make_pool("waf-defer", N, HP_ALIEN_DEFER);
    HP_REQUIRE(p);
    log_begin();
    struct hp_buf *a[K];
    for (int round = 0; round < 20; round++) {
        HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, K), K);
        for (int i = 0; i < K; i++)
            memset(hp_buf_append(a[i], 200), round, 200);
        free_on_other_thread(p, a, K);
    }
    struct hp_pool_stats st;
    HP_CHECK_EQ(hp_pool_stats(p, &st), 0);
    HP_CHECK_GT(st.deferred, 0);
    HP_CHECK_EQ(logged.n, 0);
    HP_CHECK_EQ(st.written_after_free, 0);
    /* A write after the alien free is caught when the owner reuses it. */
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, K), K);
    struct hp_buf *stale = a[5];
    unsigned char *d = hp_buf_data(stale); /* after the free, data_off is poison */
    free_on_other_thread(p, a, K);
    d[0] = 1;
    struct hp_buf *all[N];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, all, N), N);
    HP_CHECK_EQ(logged.n, 1);
    CHECK_LINE("waf-defer", stale, "data room");
    hp_buf_free_bulk(all, N);
    log_end();
    destroy_pool(p);
}

/* Clones and chains go through the general free path: poisoned too, and
 * quiet when nobody misbehaves. */
HP_TEST(pool_debug_clones_and_chains_quiet)
{
    struct hp_pool *p = make_pool("waf-clone", 64, HP_ALIEN_ADAPTIVE);
    HP_REQUIRE(p);
    log_begin();
    for (int i = 0; i < 50; i++) {
        struct hp_buf *b = hp_buf_alloc(p), *t = hp_buf_alloc(p);
        HP_REQUIRE(b && t);
        memset(hp_buf_append(b, 100), 1, 100);
        memset(hp_buf_append(t, 100), 2, 100);
        HP_REQUIRE_EQ(hp_buf_chain(b, t), 0);
        struct hp_buf *c = hp_buf_clone(b, p);
        HP_REQUIRE(c);
        hp_buf_free(b);
        hp_buf_free(c);
    }
    struct hp_buf *a[64];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, 64), 64);
    hp_buf_free_bulk(a, 64);
    HP_CHECK_EQ(logged.n, 0);
    HP_CHECK_EQ(written_after_free(p), 0);
    log_end();
    destroy_pool(p);
}

#else

HP_TEST(pool_debug_checks)
{
    HP_SKIP("HP_DEBUG is off (a Release build): free buffers are not poisoned; the Debug "
            "build (make check's sanitizer run) has these tests");
}

#endif
