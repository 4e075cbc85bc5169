/* SPDX-License-Identifier: BSD-3-Clause */
/* Packet buffer tests: allocation, editing, chains, linearize, copy-out, clones and references. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/cacheline.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "track.h"

/* ---- layout: checked by the compiler ---------------------------------------- */

_Static_assert(sizeof(struct hp_buf) == HP_BUF_META_SIZE,
               "struct hp_buf is not HP_BUF_META_SIZE bytes");
_Static_assert(_Alignof(struct hp_buf) == HP_CACHELINE_SIZE,
               "struct hp_buf is not cache-line aligned");
#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO) /* the grouped layout only */
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, base);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, next);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, pool);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, ol_flags);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, data_off);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, data_len);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, pkt_len);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, room);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, refcnt);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, nb_segs);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, flags);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, hash);
HP_CACHELINE_ASSERT_GROUP_SIZE(struct hp_buf, hot, HP_CACHELINE_SIZE);
HP_CACHELINE_ASSERT_GROUP_LINES(struct hp_buf, hot, 1);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, cold, direct);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, cold, user);
HP_CACHELINE_ASSERT_GROUP_LINES(struct hp_buf, cold, 1);
_Static_assert(offsetof(struct hp_buf, hp__group_begin_hot) == 0,
               "the hot group does not open the struct");
#endif

/* ---- pools made by these tests, and the teardown check ------------------------ */

/* (track.c keeps them and checks them after every test) */

/* A pool of n buffers of room bytes with the given headroom (0: default),
 * on normal pages, local alien frees. */
static struct hp_pool *pool_new_at(int line, const char *name, uint32_t n, uint32_t room,
                                   uint32_t headroom)
{
    struct hp_pool_config c = {
        .name = name,
        .n_bufs = n,
        .data_room = room,
        .headroom = headroom,
        .alien_policy = HP_ALIEN_LOCAL,
        .flags = HP_POOL_F_NO_HUGEPAGES,
    };
    if (track_full()) {
        hp_test_fail(__FILE__, line, "too many pools in one test");
        return NULL;
    }
    struct hp_pool *p = hp_pool_create(&c);
    if (!p) {
        hp_test_fail(__FILE__, line, "hp_pool_create(\"%s\", %u buffers, room %u): %s", name, n,
                     room, strerror(errno));
        return NULL;
    }
    track_pool(p);
    return p;
}
#define POOL_NEW(name, n, room, headroom) pool_new_at(__LINE__, name, n, room, headroom)

/* Destroy a pool, which must have every buffer back. */
static void pool_done_at(int line, struct hp_pool *p)
{
    if (!p)
        return;
    long out = hp_pool_in_use(p);
    if (out != 0)
        hp_test_fail(__FILE__, line, "pool \"%s\": %ld buffer(s) still in use", hp_pool_name(p),
                     out);
    int rc = hp_pool_destroy(p);
    if (rc != 0) {
        hp_test_fail(__FILE__, line, "hp_pool_destroy(\"%s\") = %d", hp_pool_name(p), rc);
        return;
    }
    untrack_pool(p);
}
#define POOL_DONE(p) pool_done_at(__LINE__, p)

/* ---- packets --------------------------------------------------------------- */

static void fill_random(unsigned char *p, size_t n, uint64_t *rs)
{
    while (n) {
        uint64_t r = hp_test_rand(rs);
        size_t k = n < 8 ? n : 8;
        memcpy(p, &r, k);
        p += k;
        n -= k;
    }
}

/* A one-segment packet of len random bytes (also copied to flat if not NULL),
 * after the headroom, or ending at it when before is set. */
static struct hp_buf *seg_make(struct hp_pool *p, uint32_t len, uint64_t *rs, unsigned char *flat,
                               bool before)
{
    struct hp_buf *b = hp_buf_alloc(p);
    if (!b)
        return NULL;
    unsigned char *d =
        before && len <= hp_buf_headroom(b) ? hp_buf_prepend(b, len) : hp_buf_append(b, len);
    if (!d) {
        hp_buf_free(b);
        return NULL;
    }
    fill_random(d, len, rs);
    if (flat)
        memcpy(flat, d, len);
    return b;
}

static struct hp_buf *seg_new(struct hp_pool *p, uint32_t len, uint64_t *rs, unsigned char *flat)
{
    return seg_make(p, len, rs, flat, false);
}

/* A packet of n segments of lens[i] random bytes; flat receives the packet's
 * bytes in order. Short segments after the first end at the headroom, the
 * others start there, so that segments sit at different offsets. */
static struct hp_buf *pkt_new(struct hp_pool *p, const uint32_t *lens, unsigned n, uint64_t *rs,
                              unsigned char *flat)
{
    struct hp_buf *head = NULL;
    uint32_t at = 0;
    for (unsigned i = 0; i < n; i++) {
        struct hp_buf *s = seg_make(p, lens[i], rs, flat ? flat + at : NULL, i % 2 == 1);
        if (!s || (head && hp_buf_chain(head, s) != 0)) {
            hp_buf_free(s);
            hp_buf_free(head);
            return NULL;
        }
        if (!head)
            head = s;
        at += lens[i];
    }
    return head;
}

static unsigned count_segs(const struct hp_buf *b)
{
    unsigned n = 0;
    for (; b; b = b->next)
        n++;
    return n;
}

/* The packet's bytes, gathered by walking the segments (independent of
 * hp_buf_copy_out); returns the number of bytes, at most cap. */
static uint32_t gather(const struct hp_buf *b, unsigned char *out, uint32_t cap)
{
    uint32_t n = 0;
    for (; b; b = b->next) {
        uint32_t k = b->data_len <= cap - n ? b->data_len : cap - n;
        memcpy(out + n, hp_buf_data(b), k);
        n += k;
    }
    return n;
}

/* ---- snapshots: "nothing changed" means byte for byte ------------------------- */

#define SNAP_SEGS 8

struct seg_snap {
    struct hp_buf *b;
    unsigned char *base;
    struct hp_buf *next;
    uint32_t data_off, data_len, pkt_len, room;
    uint16_t nb_segs, refcnt, flags;
    unsigned char *bytes; /* copy of the whole data room */
};

struct snap {
    unsigned n;
    struct seg_snap s[SNAP_SEGS];
};

static void snap_take(struct snap *sn, struct hp_buf *b)
{
    memset(sn, 0, sizeof *sn);
    for (; b && sn->n < SNAP_SEGS; b = b->next) {
        struct seg_snap *s = &sn->s[sn->n++];
        s->b = b;
        s->base = b->base;
        s->next = b->next;
        s->data_off = b->data_off;
        s->data_len = b->data_len;
        s->pkt_len = b->pkt_len;
        s->room = b->room;
        s->nb_segs = b->nb_segs;
        s->refcnt = hp_buf_refcnt(b);
        s->flags = b->flags;
        s->bytes = malloc(b->room ? b->room : 1);
        if (s->bytes)
            memcpy(s->bytes, b->base, b->room);
    }
}

#define SNAP_FIELD(f)                                                                              \
    do {                                                                                           \
        if (s->b->f != s->f) {                                                                     \
            hp_test_fail(__FILE__, line, "%s: segment %u: " #f " changed from %llu to %llu", what, \
                         i, (unsigned long long)s->f, (unsigned long long)s->b->f);                \
            bad++;                                                                                 \
        }                                                                                          \
    } while (0)

/* Compare the packet with its snapshot and release the snapshot; report
 * every difference at the caller's line. */
static bool snap_check_at(int line, struct snap *sn, const char *what)
{
    int bad = 0;
    for (unsigned i = 0; i < sn->n; i++) {
        struct seg_snap *s = &sn->s[i];
        SNAP_FIELD(data_off);
        SNAP_FIELD(data_len);
        SNAP_FIELD(pkt_len);
        SNAP_FIELD(nb_segs);
        SNAP_FIELD(room);
        SNAP_FIELD(flags);
        if (s->b->base != s->base || s->b->next != s->next) {
            hp_test_fail(__FILE__, line, "%s: segment %u: base or next changed", what, i);
            bad++;
        }
        if (hp_buf_refcnt(s->b) != s->refcnt) {
            hp_test_fail(__FILE__, line, "%s: segment %u: refcnt changed from %u to %u", what, i,
                         s->refcnt, hp_buf_refcnt(s->b));
            bad++;
        }
        if (s->bytes && s->b->base == s->base && memcmp(s->bytes, s->base, s->room) != 0) {
            uint32_t k = 0;
            while (s->bytes[k] == s->base[k])
                k++;
            hp_test_fail(__FILE__, line,
                         "%s: segment %u: data room changed (first at byte %u: 0x%02x -> 0x%02x)",
                         what, i, k, s->bytes[k], s->base[k]);
            bad++;
        }
        free(s->bytes);
        s->bytes = NULL;
    }
    return bad == 0;
}
#define SNAP_CHECK(sn, what) snap_check_at(__LINE__, sn, what)

/* ---- allocation ------------------------------------------------------------ */

/* Every field a fresh buffer promises. */
static void check_fresh_at(int line, const struct hp_buf *b, struct hp_pool *p, uint32_t headroom)
{
#define FRESH(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            hp_test_fail(__FILE__, line, "fresh buffer %p: %s", (const void *)b, #cond);           \
    } while (0)
    FRESH(b != NULL);
    if (!b)
        return;
    FRESH(((uintptr_t)b % HP_CACHELINE_SIZE) == 0);
    FRESH(b->data_len == 0);
    FRESH(b->pkt_len == 0);
    FRESH(b->nb_segs == 1);
    FRESH(hp_buf_refcnt(b) == 1);
    FRESH(b->data_off == headroom);
    FRESH(hp_buf_headroom(b) == headroom);
    FRESH(b->room == hp_pool_data_room(p));
    FRESH(hp_buf_tailroom(b) == hp_pool_data_room(p) - headroom);
    FRESH(b->owner == (uint16_t)hp_thread_id());
    FRESH((b->flags & HP_BUF_F_FREE) == 0);
    FRESH((b->flags & HP_BUF_F_INDIRECT) == 0);
    FRESH(b->next == NULL);
    FRESH(b->direct == NULL);
    FRESH(b->pool == p);
    FRESH(b->base == (const unsigned char *)b + HP_BUF_META_SIZE);
    FRESH(hp_buf_data(b) == b->base + headroom);
    FRESH(hp_buf_last((struct hp_buf *)b) == b);
#undef FRESH
}
#define CHECK_FRESH(b, p, h) check_fresh_at(__LINE__, b, p, h)

HP_TEST(buf_layout)
{
    /* The compile-time checks above are the test; these repeat the sizes
     * where a failure message can show them. */
    HP_CHECK_EQ(sizeof(struct hp_buf), HP_BUF_META_SIZE);
    HP_CHECK_EQ(_Alignof(struct hp_buf), HP_CACHELINE_SIZE);
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    /* Logical order: the annotations the fast paths read are in line 1. */
    HP_CHECK_GE(offsetof(struct hp_buf, ol_flags), HP_CACHELINE_SIZE);
    HP_CHECK_GE(offsetof(struct hp_buf, hash), HP_CACHELINE_SIZE);
#else
    HP_CHECK_EQ(offsetof(struct hp_buf, hp__group_end_hot), HP_CACHELINE_SIZE);
    HP_CHECK_EQ(offsetof(struct hp_buf, hp__group_begin_cold), HP_CACHELINE_SIZE);
    HP_CHECK_LE(offsetof(struct hp_buf, hp__group_end_cold), HP_BUF_META_SIZE);
#endif
}

HP_TEST(buf_alloc_fresh_fields)
{
    struct hp_pool *p = POOL_NEW("buf-fresh", 8, 1024, 64);
    HP_REQUIRE(p);
    struct hp_buf *b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = hp_buf_alloc(p);
        CHECK_FRESH(b[i], p, 64);
        HP_REQUIRE(b[i]);
        HP_CHECK((b[i]->flags & HP_BUF_F_EXTERNAL) == 0);
        for (int j = 0; j < i; j++)
            HP_CHECK(b[i] != b[j]);
        /* The metadata and data room of one buffer never overlap another's. */
        for (int j = 0; j < i; j++) {
            const unsigned char *lo = (const unsigned char *)b[j], *hi = b[j]->base + b[j]->room;
            HP_CHECK((const unsigned char *)b[i] >= hi || b[i]->base + b[i]->room <= lo);
        }
    }
    HP_CHECK_EQ(hp_pool_in_use(p), 8);
    hp_buf_free_bulk(b, 8);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

/* A used buffer comes back fresh: no leftover lengths, offsets, links or refs. */
HP_TEST(buf_alloc_reuse_is_fresh)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-reuse", 2, 512, 0);
    HP_REQUIRE(p);
    for (int round = 0; round < 4; round++) {
        struct hp_buf *a = hp_buf_alloc(p), *b = hp_buf_alloc(p);
        CHECK_FRESH(a, p, HP_BUF_HEADROOM);
        CHECK_FRESH(b, p, HP_BUF_HEADROOM);
        HP_REQUIRE(a && b);
        HP_REQUIRE(hp_buf_append(a, 100));
        HP_REQUIRE(hp_buf_adj(a, 10));
        HP_REQUIRE(hp_buf_prepend(a, 50));
        HP_REQUIRE(hp_buf_append(b, 200));
        fill_random(hp_buf_data(b), 200, &rs);
        a->hash = 0x12345678;
        a->port = 3;
        a->l2_len = 14;
        a->l3_len = 20;
        HP_REQUIRE(hp_buf_ref(b) == 2);
        HP_REQUIRE_EQ(hp_buf_chain(a, b), 0);
        hp_buf_free(a); /* b's data is shared: only a's reference of it goes */
        HP_CHECK_EQ(hp_pool_in_use(p), 1);
        HP_CHECK_EQ(hp_buf_refcnt(b), 1);
        HP_CHECK((b->flags & HP_BUF_F_FREE) == 0);
        hp_buf_free(b);
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        HP_STOP_IF_FAILED();
    }
    POOL_DONE(p);
}

HP_TEST(buf_alloc_null)
{
    struct hp_buf *arr[2] = {NULL, NULL};
    errno = 0;
    HP_CHECK(hp_buf_alloc(NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK_EQ(hp_buf_alloc_bulk(NULL, arr, 2), -EINVAL);
    struct hp_pool *p = POOL_NEW("buf-null", 4, 512, 0);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, NULL, 2), -EINVAL);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    hp_buf_free(NULL);
    hp_buf_free_bulk(NULL, 0);
    POOL_DONE(p);
}

HP_TEST(buf_alloc_empty_pool)
{
    struct hp_pool *p = POOL_NEW("buf-empty", 4, 512, 0);
    HP_REQUIRE(p);
    struct hp_buf *b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = hp_buf_alloc(p);
        HP_REQUIRE(b[i]);
    }
    for (int k = 0; k < 3; k++) {
        errno = 0;
        HP_CHECK(hp_buf_alloc(p) == NULL);
        HP_CHECK_EQ(errno, ENOMEM);
    }
    HP_CHECK_EQ(hp_pool_in_use(p), 4);
    /* One back: exactly one can be taken again, and it is that one. */
    struct hp_buf *back = b[2];
    hp_buf_free(b[2]);
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    b[2] = hp_buf_alloc(p);
    HP_CHECK(b[2] == back);
    errno = 0;
    HP_CHECK(hp_buf_alloc(p) == NULL);
    HP_CHECK_EQ(errno, ENOMEM);
    hp_buf_free_bulk(b, 4);
    POOL_DONE(p);
}

HP_TEST(buf_alloc_bulk)
{
    enum { N = 16 };
    struct hp_pool *p = POOL_NEW("buf-bulk", N, 512, 0);
    HP_REQUIRE(p);
    struct hp_buf *a[N], *c[N + 1];
    memset(a, 0, sizeof a);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, 10), 10);
    for (int i = 0; i < 10; i++) {
        CHECK_FRESH(a[i], p, HP_BUF_HEADROOM);
        for (int j = 0; j < i; j++)
            HP_CHECK(a[i] != a[j]);
    }
    HP_CHECK_EQ(hp_pool_in_use(p), 10);

    /* More than is left: -ENOMEM, nothing taken. */
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, c, 7), -ENOMEM);
    HP_CHECK_EQ(hp_pool_in_use(p), 10);
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, c, N + 1), -ENOMEM);
    HP_CHECK_EQ(hp_pool_in_use(p), 10);

    /* Exactly what is left. */
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a + 10, 6), 6);
    HP_CHECK_EQ(hp_pool_in_use(p), N);
    for (int i = 10; i < N; i++) {
        CHECK_FRESH(a[i], p, HP_BUF_HEADROOM);
        for (int j = 0; j < i; j++)
            HP_CHECK(a[i] != a[j]);
    }
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, c, 1), -ENOMEM);
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, c, 0), 0);
    HP_CHECK_EQ(hp_pool_in_use(p), N);
    hp_buf_free_bulk(a, N);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);

    /* The whole pool at once, twice (from the shared ring, then from caches). */
    for (int k = 0; k < 2; k++) {
        HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, N), N);
        HP_CHECK_EQ(hp_pool_in_use(p), N);
        hp_buf_free_bulk(a, N);
    }
    POOL_DONE(p);
}

/* Bulk requests larger than a per-thread cache. */
HP_TEST(buf_alloc_bulk_beyond_cache)
{
    enum { N = 600 };
    struct hp_pool_config c = {
        .name = "buf-bulk-big",
        .n_bufs = N,
        .data_room = 256,
        .cache_size = 64,
        .alien_policy = HP_ALIEN_LOCAL,
        .flags = HP_POOL_F_NO_HUGEPAGES,
    };
    struct hp_pool *p = hp_pool_create(&c);
    HP_REQUIRE(p);
    track_pool(p);
    struct hp_buf **a = calloc(N + 1, sizeof *a);
    HP_REQUIRE(a);
    /* Round 0 takes from the shared ring; later rounds find part of the
     * pool in this thread's cache (where hp_buf_free_bulk put it). */
    for (int k = 0; k < 3; k++) {
        HP_CHECK_EQ(hp_buf_alloc_bulk(p, a, N + 1), -ENOMEM);
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        int rc = hp_buf_alloc_bulk(p, a, N);
        if (rc != N) {
            hp_test_fail(__FILE__, __LINE__,
                         "round %d: hp_buf_alloc_bulk(%d) on a pool of %d with none in use, "
                         "cache_size 64 = %d",
                         k, N, N, rc);
            break;
        }
        HP_CHECK_EQ(hp_pool_in_use(p), N);
        /* distinct: mark each, then look for a mark seen twice */
        for (int i = 0; i < N; i++)
            a[i]->tag = 0;
        int dup = 0;
        for (int i = 0; i < N; i++)
            dup += a[i]->tag++ != 0;
        HP_CHECK_EQ(dup, 0);
        hp_buf_free_bulk(a, N);
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
    }
    free(a);
    POOL_DONE(p);
}

/* A bulk request served partly from this thread's cache and partly from the
 * shared ring: buffers freed one by one sit in both places. */
HP_TEST(buf_alloc_bulk_cache_and_ring)
{
    enum { N = 64 };
    static const uint32_t cache_sizes[] = {16, 24, 32, 48};
    struct hp_buf *a[N];
    for (size_t k = 0; k < sizeof cache_sizes / sizeof cache_sizes[0]; k++) {
        struct hp_pool_config c = {
            .name = "buf-bulk-mixed",
            .n_bufs = N,
            .data_room = 256,
            .cache_size = cache_sizes[k],
            .alien_policy = HP_ALIEN_LOCAL,
            .flags = HP_POOL_F_NO_HUGEPAGES,
        };
        struct hp_pool *p = hp_pool_create(&c);
        HP_REQUIRE(p);
        track_pool(p);
        for (int i = 0; i < N; i++)
            HP_REQUIRE((a[i] = hp_buf_alloc(p)) != NULL);
        for (int i = 0; i < N; i++)
            hp_buf_free(a[i]);
        int rc = hp_buf_alloc_bulk(p, a, N);
        if (rc != N)
            hp_test_fail(__FILE__, __LINE__,
                         "cache_size %u: hp_buf_alloc_bulk(%d) after %d single allocs and "
                         "frees = %d, in_use %ld",
                         cache_sizes[k], N, N, rc, hp_pool_in_use(p));
        else
            hp_buf_free_bulk(a, N);
        /* and a partial one: half the pool */
        for (int i = 0; i < N; i++)
            HP_REQUIRE((a[i] = hp_buf_alloc(p)) != NULL);
        for (int i = 0; i < N; i++)
            hp_buf_free(a[i]);
        rc = hp_buf_alloc_bulk(p, a, N / 2 + 3);
        HP_CHECK_EQ(rc, N / 2 + 3);
        if (rc > 0)
            hp_buf_free_bulk(a, (unsigned)rc);
        POOL_DONE(p);
        HP_STOP_IF_FAILED();
    }
}

HP_TEST(buf_free_bulk_skips_null)
{
    struct hp_pool *p = POOL_NEW("buf-freebulk", 8, 512, 0);
    HP_REQUIRE(p);
    struct hp_buf *a[10] = {NULL};
    for (int i = 1; i < 10; i += 2)
        a[i] = hp_buf_alloc(p);
    a[8] = hp_buf_alloc(p);
    for (int i = 1; i < 10; i += 2)
        HP_REQUIRE(a[i]);
    HP_REQUIRE(a[8]);
    HP_CHECK_EQ(hp_pool_in_use(p), 6);
    hp_buf_free_bulk(a, 0);
    HP_CHECK_EQ(hp_pool_in_use(p), 6);
    hp_buf_free_bulk(a, 3); /* NULL, a[1], NULL */
    HP_CHECK_EQ(hp_pool_in_use(p), 5);
    hp_buf_free_bulk(a + 3, 7);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    hp_buf_free(NULL);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    /* A chain in the array frees every segment. */
    uint64_t rs = 1;
    static const uint32_t lens[] = {10, 20, 30};
    struct hp_buf *b[3] = {NULL, pkt_new(p, lens, 3, &rs, NULL), NULL};
    HP_REQUIRE(b[1]);
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    hp_buf_free_bulk(b, 3);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

/* ---- editing ----------------------------------------------------------------- */

HP_TEST(buf_prepend)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-prepend", 8, 512, 64);
    HP_REQUIRE(p);
    unsigned char payload[100];
    struct hp_buf *b = seg_new(p, 100, &rs, payload);
    HP_REQUIRE(b);
    unsigned char *old = hp_buf_data(b);

    unsigned char *h = hp_buf_prepend(b, 14);
    HP_CHECK(h == old - 14);
    HP_CHECK(h == hp_buf_data(b));
    HP_CHECK_EQ(b->data_off, 64 - 14);
    HP_CHECK_EQ(b->data_len, 114);
    HP_CHECK_EQ(b->pkt_len, 114);
    HP_CHECK_EQ(b->nb_segs, 1);
    HP_CHECK_EQ(hp_buf_headroom(b), 50);
    HP_CHECK_MEMEQ(old, payload, 100);

    /* Zero bytes: a no-op that still succeeds. */
    HP_CHECK(hp_buf_prepend(b, 0) == hp_buf_data(b));
    HP_CHECK_EQ(b->data_len, 114);

    /* Failure: one byte more than the headroom, and absurd lengths. */
    static const uint32_t too_big[] = {51, 52, 512, UINT32_MAX, UINT32_MAX - 49, 0x80000000u};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK(hp_buf_prepend(b, too_big[i]) == NULL);
        if (!SNAP_CHECK(&s, "prepend beyond the headroom"))
            hp_test_fail(__FILE__, __LINE__, "  (prepend of %u bytes, headroom 50)", too_big[i]);
    }

    /* Exactly the headroom. */
    h = hp_buf_prepend(b, 50);
    HP_CHECK(h == b->base);
    HP_CHECK_EQ(b->data_off, 0);
    HP_CHECK_EQ(b->data_len, 164);
    HP_CHECK_EQ(b->pkt_len, 164);
    {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK(hp_buf_prepend(b, 1) == NULL);
        SNAP_CHECK(&s, "prepend with no headroom left");
    }

    /* On a chain: the first segment grows, the packet length with it. */
    struct hp_buf *t = seg_new(p, 30, &rs, NULL);
    HP_REQUIRE(t);
    struct hp_buf *c = seg_new(p, 20, &rs, NULL);
    HP_REQUIRE(c);
    HP_REQUIRE_EQ(hp_buf_chain(c, t), 0);
    h = hp_buf_prepend(c, 8);
    HP_CHECK(h != NULL);
    HP_CHECK_EQ(c->data_len, 28);
    HP_CHECK_EQ(c->pkt_len, 58);
    HP_CHECK_EQ(c->nb_segs, 2);
    HP_CHECK_EQ(t->data_len, 30);
    HP_CHECK_EQ(t->data_off, 64);
    hp_buf_free(c);
    hp_buf_free(b);
    POOL_DONE(p);
}

/* prepend and append refuse to write into data that someone else also sees. */
HP_TEST(buf_edit_shared_refused)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-shared", 8, 512, 0);
    HP_REQUIRE(p);
    struct hp_buf *b = seg_new(p, 40, &rs, NULL);
    HP_REQUIRE(b);

    /* Shared through a second reference. */
    HP_REQUIRE_EQ(hp_buf_ref(b), 2);
    struct snap s;
    snap_take(&s, b);
    HP_CHECK(hp_buf_prepend(b, 4) == NULL);
    HP_CHECK(hp_buf_append(b, 4) == NULL);
    SNAP_CHECK(&s, "prepend/append on a buffer with refcnt 2");
    hp_buf_free(b);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);
    /* Back to one holder: writable again. */
    HP_CHECK(hp_buf_prepend(b, 4) != NULL);
    HP_CHECK(hp_buf_append(b, 4) != NULL);
    HP_CHECK_EQ(b->data_len, 48);

    /* Shared through a clone: neither the clone nor the original may write. */
    struct hp_buf *c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    struct snap sb, sc;
    snap_take(&sb, b);
    snap_take(&sc, c);
    HP_CHECK(hp_buf_prepend(c, 4) == NULL);
    HP_CHECK(hp_buf_append(c, 4) == NULL);
    HP_CHECK(hp_buf_prepend(b, 4) == NULL);
    HP_CHECK(hp_buf_append(b, 4) == NULL);
    SNAP_CHECK(&sb, "prepend/append on a cloned original");
    SNAP_CHECK(&sc, "prepend/append on a clone");

    /* A clone stays read only even when the original is gone. */
    hp_buf_free(b);
    snap_take(&sc, c);
    HP_CHECK(hp_buf_prepend(c, 4) == NULL);
    HP_CHECK(hp_buf_append(c, 4) == NULL);
    SNAP_CHECK(&sc, "prepend/append on a clone whose original was freed");
    hp_buf_free(c);

    /* append looks at the last segment: a shared tail refuses it even when
     * the head is private. */
    struct hp_buf *h = seg_new(p, 10, &rs, NULL), *t = seg_new(p, 10, &rs, NULL);
    HP_REQUIRE(h && t);
    HP_REQUIRE_EQ(hp_buf_ref(t), 2);
    HP_REQUIRE_EQ(hp_buf_chain(h, t), 0);
    snap_take(&s, h);
    HP_CHECK(hp_buf_append(h, 1) == NULL);
    SNAP_CHECK(&s, "append to a chain whose last segment is shared");
    HP_CHECK(hp_buf_prepend(h, 1) != NULL); /* the head is not shared */
    HP_CHECK_EQ(h->pkt_len, 21);
    hp_buf_free(h);
    HP_CHECK_EQ(hp_buf_refcnt(t), 1);
    HP_CHECK(t->next == NULL);
    hp_buf_free(t);
    POOL_DONE(p);
}

HP_TEST(buf_append)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-append", 8, 512, 100);
    HP_REQUIRE(p);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    unsigned char *d = hp_buf_append(b, 0);
    HP_CHECK(d == hp_buf_data(b));
    HP_CHECK_EQ(b->data_len, 0);
    d = hp_buf_append(b, 30);
    HP_CHECK(d == b->base + 100);
    HP_CHECK_EQ(b->data_len, 30);
    HP_CHECK_EQ(b->pkt_len, 30);
    HP_CHECK_EQ(b->data_off, 100);
    fill_random(d, 30, &rs);
    d = hp_buf_append(b, 12);
    HP_CHECK(d == b->base + 130);
    HP_CHECK_EQ(b->data_len, 42);
    HP_CHECK_EQ(b->pkt_len, 42);
    HP_CHECK_EQ(hp_buf_tailroom(b), 512 - 142);

    /* Failures: one more than the tailroom; lengths that wrap 32 bits when
     * added to data_off + data_len. */
    uint32_t used = b->data_off + b->data_len;
    const uint32_t too_big[] = {512 - 142 + 1,
                                512,
                                UINT32_MAX,
                                UINT32_MAX - used + 1,
                                UINT32_MAX - used + 2,
                                UINT32_MAX - b->data_len + 1};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK(hp_buf_append(b, too_big[i]) == NULL);
        if (!SNAP_CHECK(&s, "append beyond the tailroom"))
            hp_test_fail(__FILE__, __LINE__, "  (append of %u bytes, tailroom %u)", too_big[i],
                         512 - 142);
    }
    /* Exactly the tailroom. */
    d = hp_buf_append(b, 512 - 142);
    HP_CHECK(d == b->base + 142);
    HP_CHECK_EQ(hp_buf_tailroom(b), 0);
    HP_CHECK_EQ(b->pkt_len, 412);
    {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK(hp_buf_append(b, 1) == NULL);
        SNAP_CHECK(&s, "append with no tailroom");
    }
    /* On a chain: the last segment grows, the head's packet length too. */
    struct hp_buf *h = seg_new(p, 10, &rs, NULL), *t = seg_new(p, 20, &rs, NULL);
    HP_REQUIRE(h && t);
    HP_REQUIRE_EQ(hp_buf_chain(h, t), 0);
    d = hp_buf_append(h, 5);
    HP_CHECK(d == (unsigned char *)hp_buf_data(t) + 20);
    HP_CHECK_EQ(t->data_len, 25);
    HP_CHECK_EQ(h->data_len, 10);
    HP_CHECK_EQ(h->pkt_len, 35);
    /* The last segment full, the head not: still refused. */
    HP_REQUIRE(hp_buf_append(h, hp_buf_tailroom(t)) != NULL);
    struct snap s;
    snap_take(&s, h);
    HP_CHECK(hp_buf_append(h, 1) == NULL);
    SNAP_CHECK(&s, "append to a chain whose last segment is full");
    hp_buf_free(h);
    hp_buf_free(b);
    POOL_DONE(p);
}

HP_TEST(buf_adj)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-adj", 8, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[100];
    struct hp_buf *b = seg_new(p, 100, &rs, flat);
    HP_REQUIRE(b);
    unsigned char *d = hp_buf_adj(b, 14);
    HP_CHECK(d == b->base + HP_BUF_HEADROOM + 14);
    HP_CHECK(d == hp_buf_data(b));
    HP_CHECK_EQ(b->data_off, HP_BUF_HEADROOM + 14);
    HP_CHECK_EQ(b->data_len, 86);
    HP_CHECK_EQ(b->pkt_len, 86);
    HP_CHECK_MEMEQ(d, flat + 14, 86);
    HP_CHECK(hp_buf_adj(b, 0) == hp_buf_data(b));
    HP_CHECK_EQ(b->data_len, 86);

    static const uint32_t too_big[] = {87, 100, UINT32_MAX, 0x80000000u};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK(hp_buf_adj(b, too_big[i]) == NULL);
        if (!SNAP_CHECK(&s, "adj beyond data_len"))
            hp_test_fail(__FILE__, __LINE__, "  (adj of %u bytes, data_len 86)", too_big[i]);
    }
    /* All of it. */
    d = hp_buf_adj(b, 86);
    HP_CHECK(d != NULL);
    HP_CHECK_EQ(b->data_len, 0);
    HP_CHECK_EQ(b->pkt_len, 0);
    HP_CHECK_EQ(b->data_off, HP_BUF_HEADROOM + 100);
    {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK(hp_buf_adj(b, 1) == NULL);
        SNAP_CHECK(&s, "adj on an empty buffer");
    }
    hp_buf_free(b);

    /* On a chain: only the first segment; asking for more than it holds
     * fails even though the packet is long enough. */
    static const uint32_t lens[] = {20, 50};
    struct hp_buf *c = pkt_new(p, lens, 2, &rs, NULL);
    HP_REQUIRE(c);
    struct snap s;
    snap_take(&s, c);
    HP_CHECK(hp_buf_adj(c, 21) == NULL);
    SNAP_CHECK(&s, "adj beyond the first segment of a chain");
    HP_CHECK(hp_buf_adj(c, 20) != NULL);
    HP_CHECK_EQ(c->data_len, 0);
    HP_CHECK_EQ(c->pkt_len, 50);
    HP_CHECK_EQ(c->nb_segs, 2);
    HP_CHECK_EQ(c->next->data_len, 50);
    hp_buf_free(c);
    POOL_DONE(p);
}

HP_TEST(buf_trim)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-trim", 8, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[100];
    struct hp_buf *b = seg_new(p, 100, &rs, flat);
    HP_REQUIRE(b);
    HP_CHECK_EQ(hp_buf_trim(b, 4), 0);
    HP_CHECK_EQ(b->data_len, 96);
    HP_CHECK_EQ(b->pkt_len, 96);
    HP_CHECK_EQ(b->data_off, HP_BUF_HEADROOM);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 96);
    HP_CHECK_EQ(hp_buf_trim(b, 0), 0);
    HP_CHECK_EQ(b->data_len, 96);

    static const uint32_t too_big[] = {97, 200, UINT32_MAX, 0x80000000u};
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        struct snap s;
        snap_take(&s, b);
        HP_CHECK_EQ(hp_buf_trim(b, too_big[i]), -EINVAL);
        if (!SNAP_CHECK(&s, "trim beyond data_len"))
            hp_test_fail(__FILE__, __LINE__, "  (trim of %u bytes, data_len 96)", too_big[i]);
    }
    HP_CHECK_EQ(hp_buf_trim(b, 96), 0);
    HP_CHECK_EQ(b->data_len, 0);
    HP_CHECK_EQ(b->pkt_len, 0);
    hp_buf_free(b);

    /* On a chain: only the last segment. */
    static const uint32_t lens[] = {50, 20};
    struct hp_buf *c = pkt_new(p, lens, 2, &rs, NULL);
    HP_REQUIRE(c);
    struct snap s;
    snap_take(&s, c);
    HP_CHECK_EQ(hp_buf_trim(c, 21), -EINVAL);
    SNAP_CHECK(&s, "trim beyond the last segment of a chain");
    HP_CHECK_EQ(hp_buf_trim(c, 20), 0);
    HP_CHECK_EQ(c->next->data_len, 0);
    HP_CHECK_EQ(c->data_len, 50);
    HP_CHECK_EQ(c->pkt_len, 50);
    hp_buf_free(c);
    POOL_DONE(p);
}

/* adj and trim change only the clone's own view: they are allowed on a
 * clone, and the original does not move. */
HP_TEST(buf_adj_trim_on_clone)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-adjclone", 8, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[80];
    struct hp_buf *b = seg_new(p, 80, &rs, flat);
    HP_REQUIRE(b);
    struct hp_buf *c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    struct snap s;
    snap_take(&s, b);
    unsigned char *d = hp_buf_adj(c, 14);
    HP_CHECK(d != NULL);
    HP_CHECK_EQ(hp_buf_trim(c, 6), 0);
    HP_CHECK_EQ(c->data_len, 60);
    HP_CHECK_EQ(c->pkt_len, 60);
    if (d)
        HP_CHECK_MEMEQ(d, flat + 14, 60);
    SNAP_CHECK(&s, "the original after adj and trim on its clone");
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 80);
    hp_buf_free(c);
    hp_buf_free(b);
    POOL_DONE(p);
}

/* ---- chains ------------------------------------------------------------------ */

HP_TEST(buf_chain)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-chain", 16, 512, 0);
    HP_REQUIRE(p);
    unsigned char fh[300], ft[300], got[600];
    static const uint32_t hl[] = {100, 40}, tl[] = {30, 60, 70};
    struct hp_buf *h = pkt_new(p, hl, 2, &rs, fh), *t = pkt_new(p, tl, 3, &rs, ft);
    HP_REQUIRE(h && t);
    struct hp_buf *tlast = hp_buf_last(t), *tfirst = t;
    HP_CHECK_EQ(h->pkt_len, 140);
    HP_CHECK_EQ(h->nb_segs, 2);
    HP_CHECK_EQ(t->pkt_len, 160);
    HP_CHECK_EQ(t->nb_segs, 3);

    HP_REQUIRE_EQ(hp_buf_chain(h, t), 0);
    HP_CHECK_EQ(h->pkt_len, 300);
    HP_CHECK_EQ(h->nb_segs, 5);
    HP_CHECK_EQ(count_segs(h), 5);
    HP_CHECK(h->next->next == tfirst);
    HP_CHECK(hp_buf_last(h) == tlast);
    HP_CHECK(tlast->next == NULL);
    uint32_t sum = 0;
    for (struct hp_buf *s = h; s; s = s->next)
        sum += s->data_len;
    HP_CHECK_EQ(sum, 300);
    HP_CHECK_EQ(gather(h, got, sizeof got), 300);
    HP_CHECK_MEMEQ(got, fh, 140);
    HP_CHECK_MEMEQ(got + 140, ft, 160);
    HP_CHECK_EQ(hp_pool_in_use(p), 5);

    /* Bad arguments change nothing. */
    struct hp_buf *x = seg_new(p, 10, &rs, NULL);
    HP_REQUIRE(x);
    struct snap sh, sx;
    snap_take(&sh, h);
    snap_take(&sx, x);
    HP_CHECK_EQ(hp_buf_chain(h, NULL), -EINVAL);
    HP_CHECK_EQ(hp_buf_chain(NULL, x), -EINVAL);
    HP_CHECK_EQ(hp_buf_chain(NULL, NULL), -EINVAL);
    HP_CHECK_EQ(hp_buf_chain(h, h), -EINVAL);
    HP_CHECK_EQ(hp_buf_chain(x, x), -EINVAL);
    SNAP_CHECK(&sh, "chain with bad arguments (head)");
    SNAP_CHECK(&sx, "chain with bad arguments (single)");

    /* Freeing the head frees every segment, tail's included. */
    hp_buf_free(h);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    hp_buf_free(x);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);

    /* Segments from different pools: each goes back to its own. */
    struct hp_pool *q = POOL_NEW("buf-chain-2", 4, 256, 0);
    HP_REQUIRE(q);
    h = seg_new(p, 10, &rs, NULL);
    t = seg_new(q, 20, &rs, NULL);
    x = seg_new(p, 30, &rs, NULL);
    HP_REQUIRE(h && t && x);
    HP_REQUIRE_EQ(hp_buf_chain(t, x), 0);
    HP_REQUIRE_EQ(hp_buf_chain(h, t), 0);
    HP_CHECK_EQ(h->pkt_len, 60);
    HP_CHECK_EQ(h->nb_segs, 3);
    HP_CHECK_EQ(hp_pool_in_use(p), 2);
    HP_CHECK_EQ(hp_pool_in_use(q), 1);
    hp_buf_free(h);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_in_use(q), 0);
    POOL_DONE(q);
    POOL_DONE(p);
}

/* nb_segs is 16 bits: the 65536th segment is refused. */
HP_TEST(buf_chain_segment_overflow)
{
    enum { N = 65536 };
    struct hp_pool_config c = {
        .name = "buf-manysegs",
        .n_bufs = N,
        .data_room = 256,
        .alien_policy = HP_ALIEN_LOCAL,
        .flags = HP_POOL_F_NO_HUGEPAGES,
    };
    struct hp_pool *p = hp_pool_create(&c);
    if (!p && errno == ENOMEM)
        HP_SKIP("no memory for a pool of %d buffers", N);
    HP_REQUIRE(p);
    track_pool(p);
    struct hp_buf **a = malloc(N * sizeof *a);
    HP_REQUIRE(a);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, N), N);
    for (int i = 0; i < N; i++)
        HP_REQUIRE(hp_buf_append(a[i], 1));
    /* Build 65535 segments from the back, so each chain call is O(1). */
    int rc = 0;
    for (int i = N - 3; i >= 0 && rc == 0; i--)
        rc = hp_buf_chain(a[i], a[i + 1]);
    HP_CHECK_EQ(rc, 0);
    HP_CHECK_EQ(a[0]->nb_segs, 65535);
    HP_CHECK_EQ(a[0]->pkt_len, 65535);
    struct hp_buf *extra = a[N - 1];
    HP_CHECK_EQ(hp_buf_chain(a[0], extra), -EOVERFLOW);
    HP_CHECK_EQ(a[0]->nb_segs, 65535);
    HP_CHECK_EQ(a[0]->pkt_len, 65535);
    HP_CHECK(a[N - 2]->next == NULL);
    HP_CHECK_EQ(extra->nb_segs, 1);
    HP_CHECK_EQ(hp_pool_in_use(p), N);
    hp_buf_free(a[0]);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    hp_buf_free(extra);
    free(a);
    POOL_DONE(p);
}

/* ---- linearize --------------------------------------------------------------- */

HP_TEST(buf_linearize)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-linear", 16, 2048, 0);
    HP_REQUIRE(p);
    unsigned char flat[600];
    static const uint32_t lens[] = {100, 200, 300};
    struct hp_buf *b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);
    HP_REQUIRE(hp_buf_adj(b, 3)); /* the first segment starts off the headroom */
    uint32_t off = b->data_off;
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    HP_REQUIRE_EQ(hp_buf_linearize(b), 0);
    HP_CHECK_EQ(b->nb_segs, 1);
    HP_CHECK(b->next == NULL);
    HP_CHECK_EQ(b->pkt_len, 597);
    HP_CHECK_EQ(b->data_len, 597);
    HP_CHECK_EQ(b->data_off, off);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat + 3, 597);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    /* A single segment: 0, nothing changes. */
    struct snap s;
    snap_take(&s, b);
    HP_CHECK_EQ(hp_buf_linearize(b), 0);
    SNAP_CHECK(&s, "linearize of one segment");
    hp_buf_free(b);

    /* Empty segments in the middle are dropped too. */
    static const uint32_t lens2[] = {10, 0, 20, 0};
    b = pkt_new(p, lens2, 4, &rs, flat);
    HP_REQUIRE(b);
    HP_REQUIRE_EQ(hp_buf_linearize(b), 0);
    HP_CHECK_EQ(b->nb_segs, 1);
    HP_CHECK(b->next == NULL);
    HP_CHECK_EQ(b->data_len, 30);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 30);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);

    /* Later segments from another pool go back to it. */
    struct hp_pool *q = POOL_NEW("buf-linear-2", 4, 256, 0);
    HP_REQUIRE(q);
    b = seg_new(p, 40, &rs, flat);
    struct hp_buf *t = seg_new(q, 50, &rs, flat + 40);
    HP_REQUIRE(b && t);
    HP_REQUIRE_EQ(hp_buf_chain(b, t), 0);
    HP_CHECK_EQ(hp_buf_linearize(b), 0);
    HP_CHECK_EQ(b->data_len, 90);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 90);
    HP_CHECK_EQ(hp_pool_in_use(q), 0);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    hp_buf_free(b);
    POOL_DONE(q);
    POOL_DONE(p);
}

HP_TEST(buf_linearize_no_space)
{
    uint64_t rs = hp_test_seed();
    /* room 512, headroom 128: 384 bytes fit in the first segment. */
    struct hp_pool *p = POOL_NEW("buf-linear-nospc", 8, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[400];
    static const uint32_t fit[] = {100, 200, 84}, nofit[] = {100, 200, 85};
    struct hp_buf *b = pkt_new(p, nofit, 3, &rs, flat);
    HP_REQUIRE(b);
    struct snap s;
    snap_take(&s, b);
    HP_CHECK_EQ(hp_buf_linearize(b), -ENOSPC);
    SNAP_CHECK(&s, "linearize without room");
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    /* One byte less and it fits. */
    HP_REQUIRE_EQ(hp_buf_trim(b, 1), 0);
    HP_CHECK_EQ(hp_buf_linearize(b), 0);
    HP_CHECK_EQ(b->data_len, 384);
    HP_CHECK_EQ(b->data_off, HP_BUF_HEADROOM);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 384);
    hp_buf_free(b);

    /* The room counts from data_off: 10 bytes stripped from the front of the
     * first segment leave room for 10 bytes less. */
    b = pkt_new(p, fit, 3, &rs, flat);
    HP_REQUIRE(b);
    HP_REQUIRE(hp_buf_adj(b, 10));
    HP_REQUIRE(hp_buf_append(b, 10)); /* pkt_len 384 again, data_off 138 */
    snap_take(&s, b);
    HP_CHECK_EQ(hp_buf_linearize(b), -ENOSPC);
    SNAP_CHECK(&s, "linearize with room only before data_off");
    hp_buf_free(b);

    b = pkt_new(p, fit, 3, &rs, flat);
    HP_REQUIRE(b);
    HP_CHECK_EQ(hp_buf_linearize(b), 0);
    HP_CHECK_EQ(b->data_len, 384);
    HP_CHECK_EQ(hp_buf_tailroom(b), 0);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 384);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    hp_buf_free(b);
    POOL_DONE(p);
}

HP_TEST(buf_linearize_shared)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-linear-shared", 16, 2048, 0);
    HP_REQUIRE(p);
    unsigned char flat[200];
    static const uint32_t lens[] = {50, 60, 70};

    /* First segment shared by a reference: -EPERM, nothing changed. */
    struct hp_buf *b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);
    HP_REQUIRE_EQ(hp_buf_ref(b), 2);
    struct snap s;
    snap_take(&s, b);
    HP_CHECK_EQ(hp_buf_linearize(b), -EPERM);
    SNAP_CHECK(&s, "linearize with a shared first segment");
    hp_buf_free(b); /* drops the extra reference only */
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);

    /* The first segment a clone: -EPERM as well. */
    struct hp_buf *c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    snap_take(&s, c);
    HP_CHECK_EQ(hp_buf_linearize(c), -EPERM);
    SNAP_CHECK(&s, "linearize of a clone");
    hp_buf_free(c);
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);

    /* Later segments shared: allowed; their references are dropped. */
    struct hp_buf *h = seg_new(p, 5, &rs, NULL);
    HP_REQUIRE(h);
    c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    unsigned char want[185];
    memcpy(want, hp_buf_data(h), 5);
    memcpy(want + 5, flat, 180);
    HP_REQUIRE_EQ(hp_buf_chain(h, c), 0);
    HP_CHECK_EQ(hp_buf_linearize(h), 0);
    HP_CHECK_EQ(h->data_len, 185);
    HP_CHECK(h->next == NULL);
    HP_CHECK_MEMEQ(hp_buf_data(h), want, 185);
    for (struct hp_buf *x = b; x; x = x->next)
        HP_CHECK_EQ(hp_buf_refcnt(x), 1);
    HP_CHECK_EQ(hp_pool_in_use(p), 4);
    hp_buf_free(h);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

/* ---- copy_out ---------------------------------------------------------------- */

/* Every (off, len) inside a packet against its flat bytes; every copy lands
 * exactly in dst[0..len) and leaves the guard bytes after it alone. */
static void copy_all_ranges(const struct hp_buf *b, const unsigned char *flat, uint32_t n)
{
    unsigned char dst[256 + 16];
    HP_REQUIRE(n <= 256);
    for (uint32_t off = 0; off <= n; off++)
        for (uint32_t len = 0; off + len <= n; len++) {
            memset(dst, 0xEE, sizeof dst);
            int rc = hp_buf_copy_out(b, off, len, dst);
            bool ok = rc == 0 && memcmp(dst, flat + off, len) == 0;
            for (uint32_t k = len; ok && k < len + 16; k++)
                ok = dst[k] == 0xEE;
            if (!ok) {
                hp_test_fail(__FILE__, __LINE__,
                             "hp_buf_copy_out(off %u, len %u) of a %u-byte packet: rc %d, %s", off,
                             len, n, rc, rc ? "want 0" : "wrong bytes or wrote past len");
                return;
            }
        }
}

HP_TEST(buf_copy_out_all_ranges)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-copyout", 16, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[256];

    /* Three segments at different data offsets. */
    static const uint32_t lens[] = {7, 1, 13};
    struct hp_buf *b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);
    HP_REQUIRE_EQ(b->pkt_len, 21);
    copy_all_ranges(b, flat, 21);
    hp_buf_free(b);

    /* Longer segments, and an empty one in the middle. */
    static const uint32_t lens2[] = {64, 0, 100, 36};
    b = pkt_new(p, lens2, 4, &rs, flat);
    HP_REQUIRE(b);
    copy_all_ranges(b, flat, 200);

    /* Out of range: -EINVAL and dst untouched. */
    static const struct {
        uint32_t off, len;
    } bad[] = {{0, 201},
               {200, 1},
               {201, 0},
               {1, 200},
               {199, 2},
               {1, UINT32_MAX},
               {UINT32_MAX, 1},
               {UINT32_MAX, 0},
               {100, UINT32_MAX - 99},
               {0x80000000u, 0x80000000u}};
    unsigned char dst[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(dst, 0xEE, sizeof dst);
        int rc = hp_buf_copy_out(b, bad[i].off, bad[i].len, dst);
        bool untouched = true;
        for (size_t k = 0; k < sizeof dst; k++)
            untouched &= dst[k] == 0xEE;
        if (rc != -EINVAL || !untouched)
            hp_test_fail(__FILE__, __LINE__,
                         "hp_buf_copy_out(off %u, len %u) of a 200-byte packet: rc %d (want %d), "
                         "dst %s",
                         bad[i].off, bad[i].len, rc, -EINVAL, untouched ? "untouched" : "WRITTEN");
    }
    hp_buf_free(b);
    POOL_DONE(p);
}

HP_TEST(buf_copy_out_random)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-copyout-rand", 16, 2048, 0);
    HP_REQUIRE(p);
    static const uint32_t lens[] = {300, 1000, 700};
    unsigned char flat[2000], dst[2000];
    struct hp_buf *b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);
    for (int i = 0; i < 5000; i++) {
        uint32_t off = (uint32_t)(hp_test_rand(&rs) % 2001);
        uint32_t len = (uint32_t)(hp_test_rand(&rs) % (2001 - off));
        if (hp_buf_copy_out(b, off, len, dst) != 0 || memcmp(dst, flat + off, len) != 0) {
            hp_test_fail(__FILE__, __LINE__, "hp_buf_copy_out(off %u, len %u) of 2000 bytes", off,
                         len);
            break;
        }
    }
    hp_buf_free(b);
    POOL_DONE(p);
}

/* ---- clones ------------------------------------------------------------------ */

/* Take every free buffer of p and overwrite its whole data room, so that a
 * data room freed too early shows up as changed bytes. */
static unsigned stomp(struct hp_pool *p, struct hp_buf **out, unsigned cap)
{
    unsigned n = 0;
    struct hp_buf *b;
    while (n < cap && (b = hp_buf_alloc(p)) != NULL) {
        memset(b->base, 0xEE, b->room);
        out[n++] = b;
    }
    return n;
}

HP_TEST(buf_clone)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-clone", 16, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[200], got[200];
    static const uint32_t lens[] = {50, 60, 70};
    struct hp_buf *b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);
    b->ol_flags = HP_BUF_OL_L4_CKSUM_GOOD;
    b->hash = 0xABCD1234;
    struct snap s;
    snap_take(&s, b);

    struct hp_buf *c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    HP_CHECK(c != b);
    HP_CHECK_EQ(hp_pool_in_use(p), 6);
    HP_CHECK_EQ(c->pkt_len, 180);
    HP_CHECK_EQ(c->nb_segs, 3);
    HP_CHECK_EQ(c->ol_flags, HP_BUF_OL_L4_CKSUM_GOOD);
    HP_CHECK_EQ(c->hash, 0xABCD1234);
    HP_CHECK_EQ(count_segs(c), 3);
    /* Each segment: new metadata, the same data, one more reference. */
    struct hp_buf *x = b, *y = c;
    for (int i = 0; x && y; i++, x = x->next, y = y->next) {
        HP_CHECK(y != x);
        HP_CHECK(y->pool == p);
        HP_CHECK(y->flags & HP_BUF_F_INDIRECT);
        HP_CHECK((y->flags & HP_BUF_F_FREE) == 0);
        HP_CHECK(y->direct == x);
        HP_CHECK_EQ(y->data_len, x->data_len);
        HP_CHECK(hp_buf_data(y) == hp_buf_data(x));
        HP_CHECK_EQ(hp_buf_refcnt(x), 2);
    }
    HP_CHECK_EQ(gather(c, got, sizeof got), 180);
    HP_CHECK_MEMEQ(got, flat, 180);
    /* The original is unchanged but for its references. */
    for (unsigned i = 0; i < s.n; i++)
        s.s[i].refcnt = 2;
    SNAP_CHECK(&s, "the original after hp_buf_clone");

    /* Free the original first: the clone's data must survive it. */
    hp_buf_free(b);
    struct hp_buf *junk[16];
    unsigned nj = stomp(p, junk, 16);
    HP_CHECK_EQ(gather(c, got, sizeof got), 180);
    HP_CHECK_MEMEQ(got, flat, 180);
    memset(got, 0, sizeof got);
    HP_CHECK_EQ(hp_buf_copy_out(c, 0, 180, got), 0);
    HP_CHECK_MEMEQ(got, flat, 180);
    hp_buf_free_bulk(junk, nj);
    hp_buf_free(c);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);

    /* Free the clone first: the original is private (and writable) again. */
    b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);
    c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    hp_buf_free(c);
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    for (x = b; x; x = x->next) {
        HP_CHECK_EQ(hp_buf_refcnt(x), 1);
        HP_CHECK((x->flags & HP_BUF_F_FREE) == 0);
    }
    HP_CHECK(hp_buf_prepend(b, 1) != NULL);
    HP_CHECK(hp_buf_append(b, 1) != NULL);
    HP_CHECK_EQ(b->pkt_len, 182);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

HP_TEST(buf_clone_of_clone)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-clone2", 16, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[100], got[100];
    static const uint32_t lens[] = {40, 60};
    struct hp_buf *b = pkt_new(p, lens, 2, &rs, flat);
    HP_REQUIRE(b);
    struct hp_buf *c = hp_buf_clone(b, p);
    HP_REQUIRE(c);
    struct hp_buf *d = hp_buf_clone(c, p);
    HP_REQUIRE(d);
    HP_CHECK(hp_buf_data(d) == hp_buf_data(b));
    HP_CHECK(d->flags & HP_BUF_F_INDIRECT);
    HP_CHECK(hp_buf_prepend(d, 1) == NULL);
    /* Free in the order original, first clone: the second still reads. */
    hp_buf_free(b);
    hp_buf_free(c);
    struct hp_buf *junk[16];
    unsigned nj = stomp(p, junk, 16);
    HP_CHECK_EQ(hp_buf_copy_out(d, 0, 100, got), 0);
    HP_CHECK_MEMEQ(got, flat, 100);
    hp_buf_free_bulk(junk, nj);
    hp_buf_free(d);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

HP_TEST(buf_clone_other_pool)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-clone-src", 8, 512, 0);
    struct hp_pool *small = POOL_NEW("buf-clone-small", 2, 512, 0);
    struct hp_pool *q = POOL_NEW("buf-clone-dst", 4, 512, 0);
    HP_REQUIRE(p && small && q);
    unsigned char flat[200];
    static const uint32_t lens[] = {50, 60, 70};
    struct hp_buf *b = pkt_new(p, lens, 3, &rs, flat);
    HP_REQUIRE(b);

    /* Not enough metadata in the target pool: NULL, ENOMEM, nothing changed
     * (the references taken on the first segments are given back). */
    struct snap s;
    snap_take(&s, b);
    errno = 0;
    HP_CHECK(hp_buf_clone(b, small) == NULL);
    HP_CHECK_EQ(errno, ENOMEM);
    HP_CHECK_EQ(hp_pool_in_use(small), 0);
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    SNAP_CHECK(&s, "the original after a clone that ran out of memory");

    struct hp_buf *c = hp_buf_clone(b, q);
    HP_REQUIRE(c);
    HP_CHECK_EQ(hp_pool_in_use(q), 3);
    for (struct hp_buf *y = c; y; y = y->next)
        HP_CHECK(y->pool == q);
    hp_buf_free(b);
    unsigned char got[200];
    HP_CHECK_EQ(hp_buf_copy_out(c, 0, 180, got), 0);
    HP_CHECK_MEMEQ(got, flat, 180);
    hp_buf_free(c);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_in_use(q), 0);
    POOL_DONE(q);
    POOL_DONE(small);
    POOL_DONE(p);
}

/* A data room's count stops at 65535: hp_buf_ref and hp_buf_clone refuse
 * beyond it and change nothing. */
HP_TEST(buf_refcnt_overflow)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-refmax", 8, 512, 0);
    HP_REQUIRE(p);
    static const uint32_t lens[] = {10, 20};
    struct hp_buf *b = pkt_new(p, lens, 2, &rs, NULL);
    HP_REQUIRE(b);
    struct hp_buf *t = b->next;
    int rc = 0;
    for (int i = 2; i <= 65535; i++) {
        rc = hp_buf_ref(t);
        if (rc != i) {
            HP_CHECK_EQ(rc, i);
            break;
        }
    }
    HP_CHECK_EQ(hp_buf_refcnt(t), 65535);
    HP_CHECK_EQ(hp_buf_ref(t), -EOVERFLOW);
    HP_CHECK_EQ(hp_buf_refcnt(t), 65535);

    /* Cloning the chain fails on its second segment: the first one's
     * reference is given back and no metadata is kept. */
    struct snap s;
    snap_take(&s, b);
    errno = 0;
    HP_CHECK(hp_buf_clone(b, p) == NULL);
    HP_CHECK_EQ(errno, EOVERFLOW);
    SNAP_CHECK(&s, "a packet after a clone that overflowed a count");
    HP_CHECK_EQ(hp_pool_in_use(p), 2);

    for (int i = 65535; i > 1; i--)
        hp_buf_free(t);
    HP_CHECK_EQ(hp_buf_refcnt(t), 1);
    HP_CHECK_EQ(hp_pool_in_use(p), 2);
    HP_CHECK((t->flags & HP_BUF_F_FREE) == 0);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

HP_TEST(buf_ref)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-ref", 4, 512, 0);
    HP_REQUIRE(p);
    unsigned char flat[64];
    struct hp_buf *b = seg_new(p, 64, &rs, flat);
    HP_REQUIRE(b);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);
    HP_CHECK_EQ(hp_buf_ref(b), 2);
    HP_CHECK_EQ(hp_buf_ref(b), 3);
    HP_CHECK_EQ(hp_buf_refcnt(b), 3);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    /* Each holder frees once; the buffer stays whole until the last. */
    hp_buf_free(b);
    HP_CHECK_EQ(hp_buf_refcnt(b), 2);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    HP_CHECK((b->flags & HP_BUF_F_FREE) == 0);
    HP_CHECK_EQ(b->data_len, 64);
    HP_CHECK_MEMEQ(hp_buf_data(b), flat, 64);
    /* Meanwhile the pool does not hand it out again. */
    struct hp_buf *o[3];
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, o, 3), 3);
    for (int i = 0; i < 3; i++)
        HP_CHECK(o[i] != b);
    hp_buf_free_bulk(o, 3);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    POOL_DONE(p);
}

/* ---- accessors --------------------------------------------------------------- */

HP_TEST(buf_accessors)
{
    uint64_t rs = hp_test_seed();
    struct hp_pool *p = POOL_NEW("buf-access", 8, 1000, 200);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_data_room(p), 1000);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_CHECK_EQ(b->room, 1000);
    HP_CHECK_EQ(hp_buf_headroom(b), 200);
    HP_CHECK_EQ(hp_buf_tailroom(b), 800);
    HP_CHECK(hp_buf_data(b) == b->base + 200);
    HP_REQUIRE(hp_buf_append(b, 300));
    HP_CHECK_EQ(hp_buf_headroom(b), 200);
    HP_CHECK_EQ(hp_buf_tailroom(b), 500);
    HP_REQUIRE(hp_buf_prepend(b, 42));
    HP_CHECK_EQ(hp_buf_headroom(b), 158);
    HP_CHECK_EQ(hp_buf_tailroom(b), 500);
    HP_CHECK(hp_buf_data(b) == b->base + 158);
    HP_REQUIRE(hp_buf_adj(b, 100));
    HP_CHECK_EQ(hp_buf_headroom(b), 258);
    HP_CHECK_EQ(hp_buf_tailroom(b), 500);
    HP_REQUIRE_EQ(hp_buf_trim(b, 42), 0);
    HP_CHECK_EQ(hp_buf_headroom(b), 258);
    HP_CHECK_EQ(hp_buf_tailroom(b), 542);
    HP_CHECK_EQ(hp_buf_headroom(b) + b->data_len + hp_buf_tailroom(b), b->room);
    HP_CHECK(hp_buf_last(b) == b);

    static const uint32_t lens[] = {1, 2, 3};
    struct hp_buf *t = pkt_new(p, lens, 3, &rs, NULL);
    HP_REQUIRE(t);
    struct hp_buf *tl = t->next->next;
    HP_REQUIRE_EQ(hp_buf_chain(b, t), 0);
    HP_CHECK(hp_buf_last(b) == tl);
    HP_CHECK(hp_buf_last(t) == tl);
    HP_CHECK(hp_buf_last(tl) == tl);
    hp_buf_free(b);
    POOL_DONE(p);
}
