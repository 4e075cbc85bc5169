/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection blocks (tcp_block.c): aligned, disjoint, over several 2 MiB chunks, reused last-freed first, all returned at fini, walked live ones only; a stack's blocks follow its connections. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "hp_test.h"
#include "sock/tcp_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN_ON 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_ON 1
#endif
#endif
#ifdef ASAN_ON
#include <sanitizer/asan_interface.h>
#endif

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

HP_TEST(tcp_blocks_aligned_disjoint_reused)
{
    struct hp__tcp_blocks b;
    hp__tcp_blocks_init(&b, sizeof(struct hp_tcp_sock));
    HP_CHECK_EQ(b.size % 64, 0u);
    HP_CHECK_EQ((b.size / 64) % 2, 1u); /* an odd stride of lines: no set aliasing */
    HP_CHECK_GE(b.size, sizeof(struct hp_tcp_sock));
    enum { N = 10000 }; /* about three chunks of 640-byte blocks */
    void **p = calloc(N, sizeof *p);
    uintptr_t *sorted = calloc(N, sizeof *sorted);
    HP_REQUIRE(p && sorted);
    for (int i = 0; i < N; i++) {
        p[i] = hp__tcp_block_alloc(&b);
        HP_REQUIRE(p[i] != NULL);
        HP_CHECK_EQ((uintptr_t)p[i] % 64, 0u);
        memset(p[i], i & 0xff, b.size); /* writable, all of it */
        sorted[i] = (uintptr_t)p[i];
    }
    HP_CHECK_EQ(b.nlive, (uint32_t)N);
    HP_CHECK_GE(b.nchunks, 2u);
    qsort(sorted, N, sizeof *sorted, cmp_ptr);
    for (int i = 1; i < N; i++)
        HP_CHECK_GE(sorted[i] - sorted[i - 1], b.size); /* no overlap */
    for (int i = 0; i < N; i++) {
        /* Nothing wrote over another block. */
        const uint8_t *q = p[i];
        HP_CHECK(q[0] == (uint8_t)(i & 0xff) && q[b.size - 1] == (uint8_t)(i & 0xff));
    }
    HP_STOP_IF_FAILED();
    /* Freed blocks come back last-freed first, before any fresh memory. */
    uint32_t chunks = b.nchunks;
    for (int i = 0; i < N; i += 2)
        hp__tcp_block_free(&b, p[i]);
    HP_CHECK_EQ(b.nlive, (uint32_t)(N / 2));
#ifdef ASAN_ON
    /* A use after free of a block is reported. */
    HP_CHECK(__asan_address_is_poisoned(p[0]));
    HP_CHECK(__asan_address_is_poisoned((uint8_t *)p[0] + b.size - 1));
    HP_CHECK(!__asan_address_is_poisoned(p[1]));
#endif
    HP_CHECK(hp__tcp_block_alloc(&b) == p[N - 2]);
    HP_CHECK(hp__tcp_block_alloc(&b) == p[N - 4]);
    for (int i = 0; i < N / 2 - 2; i++)
        HP_CHECK(hp__tcp_block_alloc(&b) != NULL);
    HP_CHECK_EQ(b.nchunks, chunks);
    HP_CHECK_EQ(b.nlive, (uint32_t)N);
    hp__tcp_block_free(&b, NULL); /* no-op */
    hp__tcp_blocks_fini(&b);
    HP_CHECK_EQ(b.nchunks, 0u);
    HP_CHECK(b.chunks == NULL);
    free(p);
    free(sorted);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_blocks_follow_the_stacks_sockets)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    struct hp__tcp_state *st = hp__tcp(s);
    enum { N = 5000 };
    static struct hp_tcp_sock *t[N];
    for (int i = 0; i < N; i++) {
        t[i] = hp_tcp_open(s, i % 2 ? 6 : 4, NULL);
        HP_REQUIRE(t[i] != NULL);
        HP_CHECK_EQ((uintptr_t)t[i] % 64, 0u);
    }
    HP_CHECK_EQ(st->blocks.nlive, st->nconns);
    HP_CHECK_EQ(st->nconns, (uint32_t)N);
    for (int i = 0; i < N; i += 3)
        HP_CHECK_EQ(hp_tcp_close(t[i]), 0);
    HP_CHECK_EQ(st->blocks.nlive, st->nconns);
    /* Reopened sockets take the freed blocks: no new chunk. */
    uint32_t chunks = st->blocks.nchunks;
    for (int i = 0; i < N; i += 3) {
        t[i] = hp_tcp_open(s, 4, NULL);
        HP_REQUIRE(t[i] != NULL);
    }
    HP_CHECK_EQ(st->blocks.nchunks, chunks);
    HP_CHECK_EQ(st->blocks.nlive, (uint32_t)N);
    hp_stack_destroy(s); /* frees the sockets left open, then the chunks */
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The walk over live blocks (teardown, bind's port checks): every block
 * handed out and not freed, once, chunk by chunk; a block freed during
 * the walk, behind or ahead of it, is skipped. */
HP_TEST(tcp_blocks_walk_visits_the_live_ones)
{
    struct hp__tcp_blocks b;
    hp__tcp_blocks_init(&b, sizeof(struct hp_tcp_sock));
    enum { N = 12000 }; /* past two chunks */
    void **p = calloc(N, sizeof *p);
    bool *live = calloc(N, sizeof *live);
    HP_REQUIRE(p && live);
    for (int i = 0; i < N; i++) {
        p[i] = hp__tcp_block_alloc(&b);
        HP_REQUIRE(p[i] != NULL);
        live[i] = true;
    }
    HP_CHECK_GE(b.nchunks, 2u);
    uint64_t rng = hp_test_seed();
    for (int i = 0; i < N; i++)
        if (hp_test_rand(&rng) % 3 == 0) {
            hp__tcp_block_free(&b, p[i]);
            live[i] = false;
        }
    /* Each live block once, no other. */
    uint32_t seen = 0;
    uintptr_t *got = calloc(N, sizeof *got), *want = calloc(N, sizeof *want);
    HP_REQUIRE(got && want);
    for (void *q = hp__tcp_block_next(&b, NULL); q && seen < N; q = hp__tcp_block_next(&b, q))
        got[seen++] = (uintptr_t)q;
    HP_CHECK_EQ(seen, b.nlive);
    uint32_t nw = 0;
    for (int i = 0; i < N; i++)
        if (live[i])
            want[nw++] = (uintptr_t)p[i];
    qsort(got, seen, sizeof *got, cmp_ptr);
    qsort(want, nw, sizeof *want, cmp_ptr);
    HP_CHECK_EQ(seen, nw);
    HP_CHECK(seen == nw && memcmp(got, want, nw * sizeof *got) == 0);
    free(got);
    free(want);
    /* Freeing while walking: the one just visited, and one further on. */
    uint32_t visited = 0, freed_ahead = 0;
    for (void *q = hp__tcp_block_next(&b, NULL); q; q = hp__tcp_block_next(&b, q)) {
        visited++;
        int i = 0;
        while (p[i] != q)
            i++;
        HP_REQUIRE(live[i]);
        hp__tcp_block_free(&b, q);
        live[i] = false;
        for (int j = i + 1; j < N && j < i + 50; j++)
            if (live[j] && hp_test_rand(&rng) % 4 == 0) {
                hp__tcp_block_free(&b, p[j]);
                live[j] = false;
                freed_ahead++;
                break;
            }
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(visited + freed_ahead, seen);
    HP_CHECK_EQ(b.nlive, 0u);
    HP_CHECK(hp__tcp_block_next(&b, NULL) == NULL);
    /* A block handed out again is live again. */
    void *again = hp__tcp_block_alloc(&b);
    HP_CHECK(hp__tcp_block_next(&b, NULL) == again);
    hp__tcp_blocks_fini(&b);
    free(p);
    free(live);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
