/* SPDX-License-Identifier: BSD-3-Clause */
/* The bulk free path: runs of buffers broken by every kind of entry (NULL, chains, clones, another pool, bad pointers), and a full owner's batch given back in the middle of a run. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/log.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "track.h"

static struct hp_pool *make_pool(const char *name, uint32_t n, int policy, uint32_t cache,
                                 uint32_t defer_max)
{
    struct hp_pool_config c = {.name = name,
                               .n_bufs = n,
                               .data_room = 512,
                               .cache_size = cache,
                               .defer_max = defer_max,
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

/* Every buffer of p can be allocated at once, each once; then back. */
static void check_whole(struct hp_pool *p, uint32_t n)
{
    struct hp_buf **a = calloc(n, sizeof *a);
    if (!a)
        return;
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, a, n), (int)n);
    for (uint32_t i = 0; i < n; i++)
        a[i]->tag = 0;
    uint32_t dups = 0;
    for (uint32_t i = 0; i < n; i++)
        dups += a[i]->tag++ != 0;
    HP_CHECK_EQ(dups, 0);
    hp_buf_free_bulk(a, n);
    free(a);
}

static void quiet(void *ctx, enum hp_log_level level, const char *subsys, const char *msg)
{
    (void)level;
    (void)subsys;
    (void)msg;
    (*(int *)ctx)++;
}

/* One bulk free with everything mixed in: the common case runs around
 * NULLs, a chain, a clone, a shared buffer, buffers of another pool, a
 * double free, an interior pointer and a foreign one. The good ones are
 * freed, the bad ones reported and counted, nothing lost. */
HP_TEST(pool_bulk_free_mixed)
{
    struct hp_pool *p = make_pool("bulk-a", 256, HP_ALIEN_ADAPTIVE, 16, 0);
    struct hp_pool *q = make_pool("bulk-b", 256, HP_ALIEN_ADAPTIVE, 16, 0);
    HP_REQUIRE(p && q);
    int logged = 0;
    hp_set_log_fn(quiet, &logged);
    struct hp_buf *a[40], *b[8];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, 40), 40);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(q, b, 8), 8);
    HP_REQUIRE_EQ(hp_buf_chain(a[10], a[11]), 0);  /* a 2-segment chain */
    struct hp_buf *clone = hp_buf_clone(a[12], q); /* a clone, from q */
    HP_REQUIRE(clone);
    HP_REQUIRE(hp_buf_ref(a[13]) == 2); /* shared: freed twice */
    hp_buf_free(a[14]);                 /* freed already */
    static int foreign;
    struct hp_buf *v[] = {a[0],  a[1],
                          NULL,  a[2],
                          b[0],  b[1],
                          a[3],  a[10],
                          a[4],  clone,
                          a[5],  a[13],
                          a[13], a[6],
                          a[14], (struct hp_buf *)((char *)a[7] + 64),
                          a[7],  (struct hp_buf *)(void *)&foreign,
                          b[2],  b[3],
                          b[4],  b[5],
                          b[6],  b[7],
                          a[8],  a[9],
                          a[12]};
    hp_buf_free_bulk(v, sizeof v / sizeof v[0]);
    hp_set_log_fn(NULL, NULL);
    HP_CHECK_EQ(logged, 3); /* the double free, the interior and the foreign pointer */
    hp_buf_free_bulk(a + 15, 25);
    struct hp_pool_stats st;
    HP_REQUIRE_EQ(hp_pool_stats(p, &st), 0);
    HP_CHECK_EQ(st.errors, 2);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_in_use(q), 0);
    check_whole(p, 256);
    check_whole(q, 256);
    destroy_pool(p);
    destroy_pool(q);
}

/* One hp_buf_free_bulk call in which an alien free fills a batch for an
 * owner whose queue is full: the batch comes back into the freeing cache
 * (32 buffers at once) while the same call still frees its own buffers
 * there. The cache must make room instead of running past its end. */
struct overflow_freer {
    struct hp_pool *p;
    struct hp_buf **theirs; /* 95 of main's */
    int errors;
};

static void *overflow_freer_main(void *arg)
{
    struct overflow_freer *x = arg;
    struct hp_buf *arr[12];
    if (hp_buf_alloc_bulk(x->p, arr + 1, 11) != 11) {
        x->errors++;
        return NULL;
    }
    hp_buf_free_bulk(x->theirs, 32);      /* a batch: main's queue is now full */
    hp_buf_free_bulk(x->theirs + 32, 31); /* 31 staged */
    arr[0] = x->theirs[63];               /* the 32nd: pushed, refused, freed here */
    hp_buf_free_bulk(arr, 12);
    /* Again, the batch completed by the flush at the end of a bulk free that
     * filled the cache with the thread's own buffers. */
    struct hp_buf *own[16];
    if (hp_buf_alloc_bulk(x->p, own, 16) != 16) {
        x->errors++;
        return NULL;
    }
    hp_buf_free_bulk(x->theirs + 64, 31); /* 31 staged; the queue is still full */
    hp_buf_free_bulk(own, 16);
    struct hp_pool_stats st;
    hp_pool_thread_stats(x->p, hp_thread_id(), &st);
    x->errors += st.errors != 0 || st.defer_overflows != 32 + 31;
    hp_pool_thread_flush(x->p);
    hp_thread_exit();
    return NULL;
}

HP_TEST(pool_defer_overflow_in_a_bulk_free)
{
    enum { N = 256 };
    struct hp_pool *p = make_pool("overflow-bulk", N, HP_ALIEN_DEFER, 8, 32);
    HP_REQUIRE(p);
    struct hp_buf *theirs[95];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, theirs, 32), 32);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, theirs + 32, 32), 32);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, theirs + 64, 31), 31);
    struct overflow_freer x = {.p = p, .theirs = theirs};
    pthread_t th;
    HP_REQUIRE_EQ(pthread_create(&th, NULL, overflow_freer_main, &x), 0);
    pthread_join(th, NULL);
    HP_CHECK_EQ(x.errors, 0);
    hp_pool_thread_flush(p);
    check_whole(p, N);
    destroy_pool(p);
}
