/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP byte queues: push, small-segment coalescing, append from a pool that runs out, drop, copy (cursor included), read, pop, purge, against a reference byte array; the send queue's inline bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "sock/tcp_internal.h"

#define ROOM     512u /* data room of the test pool's buffers */
#define HEADROOM 64u  /* a pushed buffer's data starts here */

static struct hp_pool *pool_new(uint32_t n)
{
    struct hp_pool_config pc = {.name = "bufq",
                                .n_bufs = n,
                                .data_room = ROOM,
                                .headroom = HEADROOM};
    return hp_pool_create(&pc);
}

static void pool_done(struct hp_pool *p)
{
    hp_pool_thread_flush(p);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A one-segment buffer holding len bytes of data (at most ROOM - HEADROOM). */
static struct hp_buf *mkbuf(struct hp_pool *p, const uint8_t *data, uint32_t len)
{
    struct hp_buf *b = hp_buf_alloc(p);
    if (!b)
        return NULL;
    if (len)
        memcpy(hp_buf_append(b, len), data, len);
    return b;
}

static void pattern(uint8_t *a, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        a[i] = (uint8_t)((i + seed) * 2654435761u >> 13);
}

/* Drop the test's extra reference to a queued buffer: hp_buf_free frees
 * a whole chain, so the buffer is cut out of the queue's chain for it. */
static void unref(struct hp_buf *b)
{
    struct hp_buf *next = b->next;
    b->next = NULL;
    hp_buf_free(b);
    b->next = next;
}

/* Every invariant of tcp_bufq.c, walked from the head; 0 when all hold. */
static int invariants(const struct hp__tcp_bufq *q)
{
    uint32_t n = 0, bytes = 0;
    const struct hp_buf *last = NULL;
    for (const struct hp_buf *b = q->head; b; b = b->next) {
        if (b->data_len == 0)
            return 1;
        n++;
        bytes += b->data_len;
        last = b;
        if (n > 1000000)
            return 3;
    }
    if (last != q->tail || n != q->nbufs || bytes != q->bytes)
        return 4;
    if ((q->head == NULL) != (q->bytes == 0))
        return 5;
    return 0;
}

/* A cursor at or past the queue's start names a queued buffer beginning at
 * its offset (a stale one, before start, is never followed). */
static int cursor_ok(const struct hp__tcp_bufq *q, const struct hp__tcp_bufq_cur *cur)
{
    if (!cur->b || cur->off < q->start)
        return 0;
    uint64_t pos = q->start;
    for (const struct hp_buf *b = q->head; b; b = b->next) {
        if (b == cur->b)
            return pos == cur->off ? 0 : 11;
        pos += b->data_len;
    }
    return 10;
}

/* Compare the queue's whole content with ref (q->bytes bytes), copying
 * without the cursor's help (from offset start). */
static bool same_as(struct hp__tcp_bufq *q, const uint8_t *ref)
{
    uint8_t *tmp = malloc(q->bytes + 1);
    hp__tcp_bufq_copy(q, NULL, q->start, q->bytes, tmp);
    bool ok = memcmp(tmp, ref, q->bytes) == 0;
    free(tmp);
    return ok;
}

HP_TEST(tcp_bufq_push_read_pop_purge)
{
    struct hp_pool *p = pool_new(64);
    HP_REQUIRE(p != NULL);
    uint8_t src[1200], dst[1200];
    pattern(src, sizeof src, 1);
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);
    HP_CHECK_EQ(q.bytes, 0);
    HP_CHECK(hp__tcp_bufq_pop(&q) == NULL);

    /* A chain of three segments with an empty one in the middle: the empty
     * one is freed, the others are queued as they are (zero copy). */
    struct hp_buf *a = mkbuf(p, src, 300), *e = mkbuf(p, NULL, 0), *b = mkbuf(p, src + 300, 400);
    HP_REQUIRE(a && e && b);
    HP_REQUIRE_EQ(hp_buf_chain(a, e), 0);
    HP_REQUIRE_EQ(hp_buf_chain(a, b), 0);
    hp__tcp_bufq_push(&q, a);
    HP_CHECK_EQ(q.bytes, 700);
    HP_CHECK_EQ(q.nbufs, 2);
    HP_CHECK(q.head == a && q.tail == b && a->next == b);
    HP_CHECK_EQ(hp_pool_in_use(p), 2);
    HP_CHECK_EQ(invariants(&q), 0);
    hp__tcp_bufq_push(&q, mkbuf(p, src + 700, 5));
    HP_CHECK_EQ(q.bytes, 705);

    /* Read across the first boundary: 350 bytes, the first buffer goes. */
    hp__tcp_bufq_read(&q, dst, 350);
    HP_CHECK_MEMEQ(dst, src, 350);
    HP_CHECK_EQ(q.start, 350);
    HP_CHECK_EQ(q.bytes, 355);
    HP_CHECK_EQ(q.nbufs, 2);
    HP_CHECK_EQ(hp_pool_in_use(p), 2);
    HP_CHECK_EQ(invariants(&q), 0);

    /* Pop: the head (partly read) as a one-segment packet. */
    struct hp_buf *h = hp__tcp_bufq_pop(&q);
    HP_REQUIRE(h == b);
    HP_CHECK(h->next == NULL);
    HP_CHECK_EQ(h->pkt_len, 350);
    HP_CHECK_EQ(h->nb_segs, 1);
    HP_CHECK_MEMEQ(hp_buf_data(h), src + 350, 350);
    HP_CHECK_EQ(q.start, 700);
    HP_CHECK_EQ(q.bytes, 5);
    HP_CHECK_EQ(invariants(&q), 0);
    hp_buf_free(h);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);

    /* Purge: everything back, and the stream offset moves past it. */
    hp__tcp_bufq_push(&q, mkbuf(p, src, 100));
    hp__tcp_bufq_purge(&q);
    HP_CHECK_EQ(q.bytes, 0);
    HP_CHECK_EQ(q.nbufs, 0);
    HP_CHECK_EQ(q.start, 805);
    HP_CHECK(q.head == NULL && q.tail == NULL);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    hp__tcp_bufq_purge(&q); /* purging an empty queue is fine */
    HP_CHECK_EQ(invariants(&q), 0);
    pool_done(p);
}

/* The receive queue's read: a read of exactly the first buffer takes it
 * whole (tcp_bufq.c's short path); reads across and within buffers, and
 * the last one, leave the queue as the general walk does. */
HP_TEST(tcp_rcvq_read_whole_and_partial)
{
    struct hp_pool *p = pool_new(16);
    HP_REQUIRE(p != NULL);
    uint8_t src[900], dst[900];
    pattern(src, sizeof src, 7);
    struct hp__tcp_rcvq rq = {0};
    hp__tcp_rcvq_push_small(&rq, mkbuf(p, src, 100), 0);
    hp__tcp_rcvq_push_small(&rq, mkbuf(p, src + 100, 300), 0);
    hp__tcp_rcvq_push_small(&rq, mkbuf(p, src + 400, 200), 0);
    HP_REQUIRE_EQ(rq.bytes, 600);
    HP_REQUIRE_EQ(rq.nbufs, 3);
    hp__tcp_rcvq_read(&rq, dst, 100); /* the first buffer, exactly */
    HP_CHECK_MEMEQ(dst, src, 100);
    HP_CHECK_EQ(rq.bytes, 500);
    HP_CHECK_EQ(rq.nbufs, 2);
    HP_CHECK_EQ(hp_pool_in_use(p), 2);
    hp__tcp_rcvq_read(&rq, dst, 50); /* within the next */
    HP_CHECK_MEMEQ(dst, src + 100, 50);
    HP_CHECK_EQ(rq.nbufs, 2);
    hp__tcp_rcvq_read(&rq, dst, 250); /* the rest of it: whole again */
    HP_CHECK_MEMEQ(dst, src + 150, 250);
    HP_CHECK_EQ(rq.bytes, 200);
    HP_CHECK_EQ(rq.nbufs, 1);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    hp__tcp_rcvq_read(&rq, dst, 200); /* the last buffer: the queue empties */
    HP_CHECK_MEMEQ(dst, src + 400, 200);
    HP_CHECK_EQ(rq.bytes, 0);
    HP_CHECK_EQ(rq.nbufs, 0);
    HP_CHECK(rq.head == NULL && rq.tail == NULL);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    /* Pushed again after emptying: head and tail are both set again. */
    hp__tcp_rcvq_push_small(&rq, mkbuf(p, src, 10), 0);
    HP_CHECK(rq.head != NULL && rq.head == rq.tail);
    hp__tcp_rcvq_purge(&rq);
    pool_done(p);
}

HP_TEST(tcp_bufq_push_small_coalesces)
{
    struct hp_pool *p = pool_new(64);
    HP_REQUIRE(p != NULL);
    uint8_t src[2000];
    pattern(src, sizeof src, 2);
    uint8_t ref[2000];
    uint32_t n = 0;
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);

    /* Into an empty queue: nothing to coalesce with. */
    hp__tcp_bufq_push_small(&q, mkbuf(p, src, 10), 64);
    memcpy(ref + n, src, 10);
    n += 10;
    HP_CHECK_EQ(q.nbufs, 1);
    /* Small ones land in the tail's tailroom and their buffers go back. */
    for (int i = 0; i < 20; i++) {
        hp__tcp_bufq_push_small(&q, mkbuf(p, src + 10 + i * 7, 7), 64);
        memcpy(ref + n, src + 10 + i * 7, 7);
        n += 7;
    }
    HP_CHECK_EQ(q.nbufs, 1);
    HP_CHECK_EQ(q.bytes, n);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    HP_CHECK(same_as(&q, ref));
    /* Larger than `small`: queued as is. */
    hp__tcp_bufq_push_small(&q, mkbuf(p, src + 200, 100), 64);
    memcpy(ref + n, src + 200, 100);
    n += 100;
    HP_CHECK_EQ(q.nbufs, 2);
    /* No room left in the tail: queued as is. */
    uint32_t fill = hp_buf_tailroom(q.tail);
    hp__tcp_bufq_push_small(&q, mkbuf(p, src + 300, fill), ROOM);
    memcpy(ref + n, src + 300, fill);
    n += fill;
    HP_CHECK_EQ(q.nbufs, 2);
    HP_CHECK_EQ(hp_buf_tailroom(q.tail), 0);
    hp__tcp_bufq_push_small(&q, mkbuf(p, src + 900, 3), 64);
    memcpy(ref + n, src + 900, 3);
    n += 3;
    HP_CHECK_EQ(q.nbufs, 3);
    /* An empty segment is simply freed. */
    hp__tcp_bufq_push_small(&q, mkbuf(p, NULL, 0), 64);
    HP_CHECK_EQ(q.nbufs, 3);
    HP_CHECK_EQ(q.bytes, n);
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    HP_CHECK(same_as(&q, ref));
    HP_CHECK_EQ(invariants(&q), 0);

    /* A shared tail (another reference to its data) is never written. */
    struct hp_buf *tail = q.tail;
    HP_REQUIRE_EQ(hp_buf_ref(tail), 2);
    uint8_t before[ROOM];
    memcpy(before, tail->base, ROOM);
    hp__tcp_bufq_push_small(&q, mkbuf(p, src + 1000, 5), 64);
    memcpy(ref + n, src + 1000, 5);
    n += 5;
    HP_CHECK_EQ(q.nbufs, 4);
    HP_CHECK_MEMEQ(before, tail->base, ROOM);
    unref(tail);

    /* A clone tail is never written either (its data room is another's). */
    struct hp_buf *orig = mkbuf(p, src + 1100, 20);
    struct hp_buf *cl = hp_buf_clone(orig, p);
    HP_REQUIRE(cl != NULL);
    hp__tcp_bufq_push(&q, cl);
    memcpy(ref + n, src + 1100, 20);
    n += 20;
    memcpy(before, orig->base, ROOM);
    hp__tcp_bufq_push_small(&q, mkbuf(p, src + 1200, 5), 64);
    memcpy(ref + n, src + 1200, 5);
    n += 5;
    HP_CHECK_EQ(q.nbufs, 6);
    HP_CHECK_MEMEQ(before, orig->base, ROOM);
    HP_CHECK(same_as(&q, ref));
    HP_CHECK_EQ(invariants(&q), 0);
    hp_buf_free(orig);
    hp__tcp_bufq_purge(&q);
    pool_done(p);
}

HP_TEST(tcp_bufq_append_pool_runs_out)
{
    /* Eight buffers of ROOM bytes in all. */
    struct hp_pool *p = pool_new(8);
    HP_REQUIRE(p != NULL);
    static uint8_t src[8192], ref[8192];
    pattern(src, sizeof src, 3);
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);

    /* Fresh buffers are filled from data offset 0: the whole room. */
    HP_CHECK_EQ(hp__tcp_bufq_append(&q, p, src, 1000), 1000);
    HP_CHECK_EQ(q.nbufs, 2);
    HP_CHECK_EQ(q.head->data_off, 0);
    HP_CHECK_EQ(q.head->data_len, ROOM);
    /* The tail's tailroom is used before a new buffer. */
    HP_CHECK_EQ(hp__tcp_bufq_append(&q, p, src + 1000, 24), 24);
    HP_CHECK_EQ(q.nbufs, 2);
    HP_CHECK_EQ(q.tail->data_len, ROOM);
    /* Much more than the pool holds: the rest of it, then short. */
    uint32_t got = hp__tcp_bufq_append(&q, p, src + 1024, 7000);
    HP_CHECK_EQ(got, 8 * ROOM - 1024);
    HP_CHECK_EQ(q.nbufs, 8);
    HP_CHECK_EQ(q.bytes, 8 * ROOM);
    HP_CHECK_EQ(hp_pool_in_use(p), 8);
    /* Nothing at all when the pool is empty and the tail is full. */
    HP_CHECK_EQ(hp__tcp_bufq_append(&q, p, src, 10), 0);
    HP_CHECK_EQ(hp__tcp_bufq_append(&q, p, src, 0), 0);
    HP_CHECK(same_as(&q, src));
    HP_CHECK_EQ(invariants(&q), 0);

    /* Acknowledging frees buffers, and appending goes on from there. */
    hp__tcp_bufq_drop(&q, 3 * ROOM + 10);
    HP_CHECK_EQ(hp_pool_in_use(p), 5);
    got = hp__tcp_bufq_append(&q, p, src + 8 * ROOM, 4000);
    HP_CHECK_EQ(got, 3 * ROOM);
    HP_CHECK_EQ(q.start, 3 * ROOM + 10);
    HP_CHECK_EQ(q.bytes, 8 * ROOM - 10);
    HP_CHECK(same_as(&q, src + 3 * ROOM + 10));
    HP_CHECK_EQ(invariants(&q), 0);
    hp__tcp_bufq_purge(&q);

    /* A clone or shared tail's tailroom is never used. */
    struct hp_buf *orig = mkbuf(p, src, 100);
    struct hp_buf *cl = hp_buf_clone(orig, p);
    HP_REQUIRE(cl != NULL);
    hp__tcp_bufq_push(&q, cl);
    uint8_t before[ROOM];
    memcpy(before, orig->base, ROOM);
    HP_CHECK_EQ(hp__tcp_bufq_append(&q, p, src + 100, 50), 50);
    HP_CHECK_EQ(q.nbufs, 2);
    HP_CHECK_EQ(cl->data_len, 100);
    HP_CHECK_MEMEQ(before, orig->base, ROOM);
    hp_buf_free(orig);
    struct hp_buf *sh = mkbuf(p, src + 150, 10);
    HP_REQUIRE_EQ(hp_buf_ref(sh), 2);
    hp__tcp_bufq_push(&q, sh);
    HP_CHECK_EQ(hp__tcp_bufq_append(&q, p, src + 160, 40), 40);
    HP_CHECK_EQ(q.nbufs, 4);
    HP_CHECK_EQ(sh->data_len, 10);
    unref(sh);
    memcpy(ref, src, 200);
    HP_CHECK(same_as(&q, ref));
    HP_CHECK_EQ(invariants(&q), 0);
    hp__tcp_bufq_purge(&q);
    pool_done(p);
}

/* Buffers of assorted sizes (1 .. 448 bytes) holding src[0, total). */
static uint32_t fill_assorted(struct hp__tcp_bufq *q, struct hp_pool *p, const uint8_t *src,
                              uint32_t total, uint64_t *rng)
{
    uint32_t n = 0;
    while (n < total) {
        uint32_t len = 1 + (uint32_t)(hp_test_rand(rng) % (ROOM - HEADROOM));
        if (len > total - n)
            len = total - n;
        struct hp_buf *b = mkbuf(p, src + n, len);
        if (!b)
            break;
        hp__tcp_bufq_push(q, b);
        n += len;
    }
    return n;
}

HP_TEST(tcp_bufq_drop_across_boundaries)
{
    struct hp_pool *p = pool_new(256);
    HP_REQUIRE(p != NULL);
    static uint8_t src[40000];
    pattern(src, sizeof src, 4);
    uint64_t rng = hp_test_seed() ^ 0xD00D;
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);
    uint32_t total = fill_assorted(&q, p, src, sizeof src, &rng);
    HP_REQUIRE_EQ(total, sizeof src);
    uint32_t dropped = 0;
    hp__tcp_bufq_drop(&q, 0);
    HP_CHECK_EQ(q.start, 0);
    /* Exactly the first buffer, then one byte, then random amounts. */
    uint32_t first = q.head->data_len;
    hp__tcp_bufq_drop(&q, first);
    dropped += first;
    hp__tcp_bufq_drop(&q, 1);
    dropped += 1;
    HP_CHECK_EQ(invariants(&q), 0);
    while (q.bytes) {
        uint32_t n = (uint32_t)(hp_test_rand(&rng) % 1500);
        if (n > q.bytes)
            n = q.bytes;
        hp__tcp_bufq_drop(&q, n);
        dropped += n;
        HP_CHECK_EQ(q.start, dropped);
        HP_CHECK_EQ(q.bytes, total - dropped);
        HP_CHECK_EQ(invariants(&q), 0);
        if (q.bytes)
            HP_CHECK_EQ(*(uint8_t *)hp_buf_data(q.head), src[dropped]);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    /* Dropping more than is queued drops what there is. */
    hp__tcp_bufq_push(&q, mkbuf(p, src, 10));
    hp__tcp_bufq_drop(&q, 100);
    HP_CHECK_EQ(q.bytes, 0);
    HP_CHECK_EQ(q.start, total + 10);
    HP_CHECK_EQ(invariants(&q), 0);
    pool_done(p);
}

HP_TEST(tcp_bufq_copy_arbitrary_offsets)
{
    struct hp_pool *p = pool_new(256);
    HP_REQUIRE(p != NULL);
    static uint8_t src[30000], dst[30000];
    pattern(src, sizeof src, 5);
    uint64_t rng = hp_test_seed() ^ 0xC0FFEE;
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);
    uint32_t total = fill_assorted(&q, p, src, sizeof src, &rng);
    HP_REQUIRE_EQ(total, sizeof src);
    struct hp__tcp_bufq_cur cur = {0};
    /* Random ranges, forwards and backwards of the cursor. */
    for (int i = 0; i < 2000; i++) {
        uint64_t off = hp_test_rand(&rng) % total;
        uint32_t len = (uint32_t)(hp_test_rand(&rng) % 3000);
        if (off + len > total)
            len = (uint32_t)(total - off);
        memset(dst, 0xEE, len + 1);
        uint32_t sum = hp__tcp_bufq_copy(&q, &cur, off, len, dst);
        if (memcmp(dst, src + off, len) != 0)
            hp_test_fail(__FILE__, __LINE__, "copy of [%llu, +%u) differs", (unsigned long long)off,
                         len);
        /* Its checksum, summed piece by piece from the queue's buffers
         * (odd lengths among them), is the copy's. */
        if (hp_cksum_fold(sum) != hp_cksum(dst, len))
            hp_test_fail(__FILE__, __LINE__, "sum of [%llu, +%u): %04x, not %04x",
                         (unsigned long long)off, len, hp_cksum_fold(sum), hp_cksum(dst, len));
        HP_CHECK_EQ(dst[len], 0xEE); /* nothing past the range */
        HP_CHECK_EQ(invariants(&q), 0);
        HP_STOP_IF_FAILED();
    }
    /* The whole queue, the last byte, nothing. */
    uint32_t all = hp__tcp_bufq_copy(&q, &cur, 0, total, dst);
    HP_CHECK_MEMEQ(dst, src, total);
    HP_CHECK_EQ(hp_cksum_fold(all), hp_cksum(src, total));
    hp__tcp_bufq_copy(&q, &cur, total - 1, 1, dst);
    HP_CHECK_EQ(dst[0], src[total - 1]);
    HP_CHECK_EQ(hp__tcp_bufq_copy(&q, &cur, 5, 0, dst), 0);
    HP_CHECK_EQ(invariants(&q), 0);
    hp__tcp_bufq_purge(&q);
    pool_done(p);
}

/* The transmit path: segment after segment from where the last one ended,
 * with acknowledgements dropping the front and new data appended at the
 * back in between. The cursor must hold the byte after each copy, so the
 * next copy starts there without walking from the head. */
HP_TEST(tcp_bufq_copy_cursor_path)
{
    struct hp_pool *p = pool_new(1024);
    HP_REQUIRE(p != NULL);
    static uint8_t src[300000], seg[2000];
    pattern(src, sizeof src, 6);
    uint64_t rng = hp_test_seed() ^ 0xBEEF;
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);
    uint32_t appended = hp__tcp_bufq_append(&q, p, src, 262144);
    HP_REQUIRE_EQ(appended, 262144);
    struct hp__tcp_bufq_cur cur = {0};
    uint64_t nxt = 0; /* stream offset of the next byte to send */
    const uint32_t mss = 1448;
    int rounds = 0;
    while (nxt < q.start + q.bytes && rounds < 100000) {
        rounds++;
        uint32_t len = mss;
        if (nxt + len > q.start + q.bytes)
            len = (uint32_t)(q.start + q.bytes - nxt);
        hp__tcp_bufq_copy(&q, &cur, nxt, len, seg);
        if (memcmp(seg, src + nxt, len) != 0)
            hp_test_fail(__FILE__, __LINE__, "segment at %llu differs", (unsigned long long)nxt);
        nxt += len;
        /* The cursor is on the buffer holding the next byte (or the last
         * buffer, at the end of the queue). */
        HP_REQUIRE(cur.b != NULL);
        if (nxt < q.start + q.bytes) {
            HP_CHECK_LE(cur.off, nxt);
            HP_CHECK_LT(nxt, cur.off + cur.b->data_len);
        } else {
            HP_CHECK(cur.b == q.tail);
        }
        HP_CHECK_EQ(cursor_ok(&q, &cur), 0);
        HP_CHECK_EQ(invariants(&q), 0);
        /* Now and then the peer acknowledges part of what was sent (the
         * buffer under the cursor included, sometimes), and the user
         * appends more. */
        if (hp_test_rand(&rng) % 4 == 0) {
            uint64_t sent = nxt - q.start;
            uint32_t ack = (uint32_t)(hp_test_rand(&rng) % (sent + 1));
            hp__tcp_bufq_drop(&q, ack);
            HP_CHECK_EQ(invariants(&q), 0);
        }
        if (appended < sizeof src && hp_test_rand(&rng) % 3 == 0) {
            uint32_t more = (uint32_t)(hp_test_rand(&rng) % 5000);
            if (more > sizeof src - appended)
                more = (uint32_t)(sizeof src - appended);
            appended += hp__tcp_bufq_append(&q, p, src + appended, more);
        }
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(nxt, appended);
    /* A retransmission from the front after all that. */
    if (q.bytes) {
        uint32_t len = q.bytes < mss ? q.bytes : mss;
        hp__tcp_bufq_copy(&q, &cur, q.start, len, seg);
        HP_CHECK_MEMEQ(seg, src + q.start, len);
    }
    hp__tcp_bufq_purge(&q);
    pool_done(p);
}

/* Every operation in random order against a reference array. */
HP_TEST(tcp_bufq_random_model)
{
    struct hp_pool *p = pool_new(128);
    HP_REQUIRE(p != NULL);
    static uint8_t src[1 << 20], out[4096];
    pattern(src, sizeof src, 7);
    uint64_t rng = hp_test_seed() ^ 0x5EED;
    struct hp__tcp_bufq q;
    hp__tcp_bufq_init(&q);
    struct hp__tcp_bufq_cur cur = {0};
    uint64_t end = 0; /* stream offset one past the last byte queued: src[off % size] is byte off */
    for (int i = 0; i < 20000; i++) {
        uint32_t op = (uint32_t)(hp_test_rand(&rng) % 7);
        uint64_t r = hp_test_rand(&rng);
        switch (op) {
        case 0: { /* append */
            uint32_t n = (uint32_t)(r % 1500);
            if (end + n > sizeof src)
                break;
            end += hp__tcp_bufq_append(&q, p, src + end, n);
            break;
        }
        case 1: { /* push one segment, or push_small */
            uint32_t n = (uint32_t)(r % 200);
            if (end + n > sizeof src)
                break;
            struct hp_buf *b = mkbuf(p, src + end, n);
            if (!b)
                break;
            if (r & (1u << 20))
                hp__tcp_bufq_push_small(&q, b, 100);
            else
                hp__tcp_bufq_push(&q, b);
            end += n;
            break;
        }
        case 2: /* drop */
            hp__tcp_bufq_drop(&q, (uint32_t)(r % (q.bytes + 1)));
            break;
        case 3:
        case 4: { /* copy */
            if (!q.bytes)
                break;
            uint64_t off = q.start + r % q.bytes;
            uint32_t len = (uint32_t)((r >> 32) % sizeof out);
            if (off + len > end)
                len = (uint32_t)(end - off);
            hp__tcp_bufq_copy(&q, &cur, off, len, out);
            if (memcmp(out, src + off, len) != 0)
                hp_test_fail(__FILE__, __LINE__, "op %d: copy differs", i);
            break;
        }
        case 5: { /* read */
            uint32_t len = (uint32_t)(r % sizeof out);
            if (len > q.bytes)
                len = q.bytes;
            uint64_t at = q.start;
            hp__tcp_bufq_read(&q, out, len);
            if (memcmp(out, src + at, len) != 0)
                hp_test_fail(__FILE__, __LINE__, "op %d: read differs", i);
            break;
        }
        case 6: { /* pop */
            uint64_t at = q.start;
            struct hp_buf *b = hp__tcp_bufq_pop(&q);
            if (b) {
                HP_CHECK_EQ(q.start, at + b->data_len);
                HP_CHECK(b->next == NULL);
                if (memcmp(hp_buf_data(b), src + at, b->data_len) != 0)
                    hp_test_fail(__FILE__, __LINE__, "op %d: pop differs", i);
                hp_buf_free(b);
            }
            break;
        }
        }
        HP_CHECK_EQ(q.start + q.bytes, end);
        int inv = invariants(&q);
        if (!inv)
            inv = cursor_ok(&q, &cur);
        if (inv)
            hp_test_fail(__FILE__, __LINE__, "op %d (%u): invariant %d broken", i, op, inv);
        HP_STOP_IF_FAILED();
        if (end > sizeof src - 4096) {
            hp__tcp_bufq_purge(&q);
            hp__tcp_bufq_init(&q); /* start back to 0: the cursor starts again with its queue */
            cur = (struct hp__tcp_bufq_cur){0};
            end = 0;
        }
    }
    hp__tcp_bufq_purge(&q);
    pool_done(p);
}

/* ---- the send queue: inline bytes, then buffers ----------------------------------- */

/* Small messages stay inline (no buffer: a request/response connection
 * never takes one for them); more than HP__TCP_SNDQ_INLINE bytes move
 * into a buffer, and an emptied queue is inline again. start counts what
 * was dropped (the bytes acknowledged); a purge leaves it. */
HP_TEST(tcp_sndq_inline_then_buffers)
{
    struct hp_pool *p = pool_new(64);
    HP_REQUIRE(p != NULL);
    uint8_t src[2000], dst[2000];
    pattern(src, sizeof src, 7);
    struct hp__tcp_sndq sq;
    hp__tcp_sndq_init(&sq);
    HP_CHECK_EQ(hp__tcp_sndq_append(&sq, p, src, 1), 1);
    HP_CHECK_EQ(hp__tcp_sndq_append(&sq, p, src + 1, HP__TCP_SNDQ_INLINE - 1),
                HP__TCP_SNDQ_INLINE - 1);
    HP_CHECK_EQ(sq.nbufs, 0);
    HP_CHECK_EQ(sq.bytes, HP__TCP_SNDQ_INLINE);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    hp__tcp_sndq_copy(&sq, NULL, 3, 5, dst);
    HP_CHECK_MEMEQ(dst, src + 3, 5);
    /* Dropping from the front of inline bytes. */
    hp__tcp_sndq_drop(&sq, 4);
    HP_CHECK_EQ(sq.start, 4);
    HP_CHECK_EQ(sq.bytes, HP__TCP_SNDQ_INLINE - 4);
    hp__tcp_sndq_copy(&sq, NULL, 4, HP__TCP_SNDQ_INLINE - 4, dst);
    HP_CHECK_MEMEQ(dst, src + 4, HP__TCP_SNDQ_INLINE - 4);
    /* More than fits: the inline bytes go into a buffer first, in order. */
    uint32_t more = 1500;
    HP_CHECK_EQ(hp__tcp_sndq_append(&sq, p, src + HP__TCP_SNDQ_INLINE, more), more);
    HP_CHECK_GE(sq.nbufs, 1);
    HP_CHECK_EQ(sq.bytes, HP__TCP_SNDQ_INLINE - 4 + more);
    struct hp__tcp_bufq_cur cur = {0};
    hp__tcp_sndq_copy(&sq, &cur, 4, sq.bytes, dst);
    HP_CHECK_MEMEQ(dst, src + 4, sq.bytes);
    /* All acknowledged: empty, inline again, no buffer held. */
    uint32_t n = sq.bytes;
    hp__tcp_sndq_drop(&sq, n);
    HP_CHECK_EQ(sq.nbufs, 0);
    HP_CHECK_EQ(sq.bytes, 0);
    HP_CHECK_EQ(sq.start, 4 + n);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp__tcp_sndq_append(&sq, p, src, 3), 3);
    HP_CHECK_EQ(sq.nbufs, 0);
    /* A pushed buffer after inline bytes: they go first, in a buffer. */
    struct hp_buf *b = mkbuf(p, src + 3, 100);
    HP_REQUIRE(b != NULL);
    HP_CHECK_EQ(hp__tcp_sndq_push(&sq, p, b), 0);
    HP_CHECK_EQ(sq.nbufs, 2);
    HP_CHECK_EQ(sq.bytes, 103);
    hp__tcp_sndq_copy(&sq, NULL, sq.start, 103, dst);
    HP_CHECK_MEMEQ(dst, src, 103);
    uint64_t start = sq.start;
    hp__tcp_sndq_purge(&sq);
    HP_CHECK_EQ(sq.bytes, 0);
    HP_CHECK_EQ(sq.nbufs, 0);
    HP_CHECK_EQ(sq.start, start);
    pool_done(p);
}

/* A pool with nothing left: what fits inline is taken, the rest not; a
 * push that would need a buffer for the inline bytes is refused, b kept. */
HP_TEST(tcp_sndq_pool_runs_out)
{
    struct hp_pool *p = pool_new(2);
    HP_REQUIRE(p != NULL);
    struct hp_buf *hold[2];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, hold, 2), 2);
    uint8_t src[64];
    pattern(src, sizeof src, 3);
    struct hp__tcp_sndq sq;
    hp__tcp_sndq_init(&sq);
    HP_CHECK_EQ(hp__tcp_sndq_append(&sq, p, src, 10), 10);
    HP_CHECK_EQ(hp__tcp_sndq_append(&sq, p, src + 10, 40), HP__TCP_SNDQ_INLINE - 10);
    HP_CHECK_EQ(sq.nbufs, 0);
    hp_buf_free(hold[0]);
    struct hp_buf *b = hold[1];
    HP_CHECK_EQ(hp_buf_append(b, 1) != NULL, 1);
    struct hp_buf *fill = hp_buf_alloc(p); /* the pool is empty again */
    HP_REQUIRE(fill != NULL);
    HP_CHECK_EQ(hp__tcp_sndq_push(&sq, p, b), -ENOBUFS);
    HP_CHECK_EQ(sq.bytes, HP__TCP_SNDQ_INLINE);
    hp_buf_free(fill);
    HP_CHECK_EQ(hp__tcp_sndq_push(&sq, p, b), 0); /* b taken now */
    HP_CHECK_EQ(sq.bytes, HP__TCP_SNDQ_INLINE + 1);
    hp__tcp_sndq_purge(&sq);
    pool_done(p);
}

/* The send queue against a reference stream: appends of every size,
 * drops, copies from anywhere with the cursor, across inline and
 * buffered phases. */
HP_TEST(tcp_sndq_random_model)
{
    struct hp_pool *p = pool_new(512);
    HP_REQUIRE(p != NULL);
    enum { SZ = 8192 };
    uint8_t *src = malloc(SZ), *dst = malloc(SZ);
    HP_REQUIRE(src && dst);
    pattern(src, SZ, 11);
    struct hp__tcp_sndq sq;
    hp__tcp_sndq_init(&sq);
    struct hp__tcp_bufq_cur cur = {0};
    uint64_t rng = hp_test_seed(), end = 0; /* stream offset one past the last byte queued */
    for (int op = 0; op < 20000; op++) {
        unsigned what = (unsigned)(hp_test_rand(&rng) % 8);
        if (what < 3 && end - sq.start < 4000) {
            uint32_t len = (uint32_t)(hp_test_rand(&rng) % (what == 0 ? 1500 : 12)) + 1;
            uint8_t tmp[1500];
            for (uint32_t i = 0; i < len; i++)
                tmp[i] = src[(end + i) % SZ];
            uint32_t took = hp__tcp_sndq_append(&sq, p, tmp, len);
            HP_CHECK_EQ(took, len);
            end += took;
        } else if (what < 5 && sq.bytes) {
            uint32_t n = (uint32_t)(hp_test_rand(&rng) % sq.bytes) + 1;
            hp__tcp_sndq_drop(&sq, n);
        } else if (sq.bytes) {
            uint64_t off = sq.start + hp_test_rand(&rng) % sq.bytes;
            uint32_t len = (uint32_t)(hp_test_rand(&rng) % (end - off)) + 1;
            hp__tcp_sndq_copy(&sq, (what & 1) ? &cur : NULL, off, len, dst);
            for (uint32_t i = 0; i < len; i++)
                if (dst[i] != src[(off + i) % SZ]) {
                    HP_CHECK_EQ(dst[i], src[(off + i) % SZ]);
                    break;
                }
        }
        HP_CHECK_EQ(sq.start + sq.bytes, end);
        HP_CHECK(sq.nbufs > 0 || sq.bytes <= HP__TCP_SNDQ_INLINE);
        HP_STOP_IF_FAILED();
    }
    hp__tcp_sndq_purge(&sq);
    free(src);
    free(dst);
    pool_done(p);
}
