/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath impair's path engine: rate, queue bound, ECN marks, delay and jitter, MTU, on injected time. */
#include <errno.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "impair_path.h"

#define MS 1000000ull

static struct hp_pool *pool;

static struct hp_pool *get_pool(void)
{
    if (!pool) {
        struct hp_pool_config c = {.name = "impair", .n_bufs = 4096};
        pool = hp_pool_create(&c);
    }
    return pool;
}

static int teardown(void)
{
    int bad = 0;
    if (pool) {
        bad = hp_pool_in_use(pool) != 0;
        hp_pool_destroy(pool);
        pool = NULL;
    }
    return bad;
}

__attribute__((constructor)) static void reg(void)
{
    hp_test_add_teardown("impair pool: every buffer back", teardown);
}

/* An IPv4 frame of len bytes with the given ECN field (0..3). */
static struct hp_buf *frame4(uint32_t len, unsigned ecn)
{
    struct hp_buf *b = hp_buf_alloc(get_pool());
    if (!b)
        return NULL;
    uint8_t *f = hp_buf_append(b, len);
    memset(f, 0, len);
    f[12] = 0x08;
    uint8_t *ip = f + 14;
    ip[0] = 0x45;
    ip[1] = (uint8_t)ecn;
    ip[2] = (uint8_t)((len - 14) >> 8);
    ip[3] = (uint8_t)(len - 14);
    ip[8] = 64;
    ip[9] = 6;
    uint16_t c = hp_cksum_ipv4_hdr(ip, 20);
    memcpy(ip + 10, &c, 2);
    return b;
}

/* Pop everything due at now; returns how many, frees them. */
static unsigned drain_at(struct impair_path *p, uint64_t now)
{
    struct hp_buf *b[64];
    unsigned total = 0, k;
    while ((k = impair_path_peek(p, now, b, 64)) > 0) {
        impair_path_consume(p, k);
        hp_buf_free_bulk(b, k);
        total += k;
    }
    return total;
}

HP_TEST(impair_delay_holds_frames)
{
    struct impair_path p;
    struct impair_cfg c = {.delay_ns = 10 * MS};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    HP_CHECK_EQ(impair_path_push(&p, frame4(100, 0), 1000), 1);
    HP_CHECK_EQ(impair_path_next_ns(&p), 1000 + 10 * MS);
    HP_CHECK_EQ(drain_at(&p, 1000 + 10 * MS - 1), 0);
    HP_CHECK_EQ(drain_at(&p, 1000 + 10 * MS), 1);
    HP_CHECK_EQ(impair_path_count(&p), 0);
    HP_CHECK_EQ(p.st.in, 1);
    HP_CHECK_EQ(p.st.out, 1);
    impair_path_fini(&p);
}

/* 10 Mbit/s: a 1250-byte frame takes 1 ms to leave; frames queue behind it. */
HP_TEST(impair_rate_serialises)
{
    struct impair_path p;
    struct impair_cfg c = {.rate_bps = 10000000, .queue_bytes = 100000};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    for (int i = 0; i < 5; i++)
        HP_CHECK_EQ(impair_path_push(&p, frame4(1250, 0), 0), 1);
    HP_CHECK_EQ(p.queue_bytes, 5 * 1250);
    for (int i = 1; i <= 5; i++) {
        HP_CHECK_EQ(drain_at(&p, (uint64_t)i * MS - 1), 0);
        HP_CHECK_EQ(drain_at(&p, (uint64_t)i * MS), 1);
    }
    HP_CHECK_EQ(p.queue_bytes, 0);
    HP_CHECK_EQ(p.st.queue_max, 5 * 1250);
    impair_path_fini(&p);
}

HP_TEST(impair_queue_tail_drops)
{
    struct impair_path p;
    struct impair_cfg c = {.rate_bps = 1000000, .queue_bytes = 3000};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    HP_CHECK_EQ(impair_path_push(&p, frame4(1000, 0), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(1000, 0), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(1000, 0), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(1000, 0), 0), 0);
    HP_CHECK_EQ(p.st.queue_drops, 1);
    /* 8 ms later the first has left: room for one more. */
    HP_CHECK_EQ(impair_path_push(&p, frame4(1000, 0), 8 * MS), 1);
    HP_CHECK_EQ(drain_at(&p, 1000 * MS), 4);
    impair_path_fini(&p);
}

/* Above the threshold, ECT frames are marked CE with a valid checksum;
 * non-ECT ones pass unmarked. */
HP_TEST(impair_ecn_marks_above_threshold)
{
    struct impair_path p;
    struct impair_cfg c = {.rate_bps = 1000000, .queue_bytes = 100000, .ecn_mark_above = 1500};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    struct hp_buf *b[4] = {frame4(1000, 2), frame4(1000, 2), frame4(1000, 1), frame4(1000, 0)};
    for (int i = 0; i < 4; i++)
        HP_CHECK_EQ(impair_path_push(&p, b[i], 0), 1);
    HP_CHECK_EQ(p.st.ce_marked, 1); /* 0 and 1000 bytes waiting: no; 2000: yes; non-ECT: no */
    const uint8_t *ip0 = (uint8_t *)hp_buf_data(b[0]) + 14,
                  *ip2 = (uint8_t *)hp_buf_data(b[2]) + 14;
    const uint8_t *ip3 = (uint8_t *)hp_buf_data(b[3]) + 14;
    HP_CHECK_EQ(ip0[1] & 3, 2);
    HP_CHECK_EQ(ip2[1] & 3, 3);
    HP_CHECK_EQ(ip3[1] & 3, 0);
    HP_CHECK(hp_cksum_ipv4_hdr_ok(ip2, 20));
    drain_at(&p, UINT64_MAX / 2);
    impair_path_fini(&p);
}

HP_TEST(impair_mark_ce_ipv6)
{
    uint8_t f[74] = {0};
    f[12] = 0x86;
    f[13] = 0xDD;
    f[14] = 0x60;
    f[15] = 0x20; /* traffic class 0x02: ECT(0) */
    HP_CHECK(impair_mark_ce(f, sizeof f));
    HP_CHECK_EQ((f[15] >> 4) & 3, 3);
    HP_CHECK(!impair_mark_ce(f, sizeof f)); /* already CE */
    f[15] = 0;
    HP_CHECK(!impair_mark_ce(f, sizeof f)); /* not ECT */
    HP_CHECK(!impair_mark_ce(f, 20));       /* truncated */
    f[12] = 0x08;
    f[13] = 0x06; /* ARP */
    HP_CHECK(!impair_mark_ce(f, sizeof f));
}

/* Jitter stays within its bounds and never reorders. */
HP_TEST(impair_jitter_keeps_order)
{
    struct impair_path p;
    struct impair_cfg c = {.delay_ns = 10 * MS, .jitter_ns = 5 * MS, .seed = 7};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 1024), 0);
    uint64_t last = 0;
    bool varied = false;
    for (int i = 0; i < 500; i++) {
        uint64_t now = (uint64_t)i * 100000;
        HP_REQUIRE_EQ(impair_path_push(&p, frame4(64, 0), now), 1);
        uint64_t d = p.ring[(p.tail - 1) & p.mask].deliver_ns;
        HP_CHECK(d >= last);
        HP_CHECK(d >= now + 5 * MS);
        HP_CHECK(d <= now + 15 * MS || d == last);
        varied |= d != now + 10 * MS;
        last = d;
    }
    HP_CHECK(varied);
    HP_CHECK_EQ(drain_at(&p, UINT64_MAX / 2), 500);
    impair_path_fini(&p);
}

HP_TEST(impair_mtu_drops_larger_packets)
{
    struct impair_path p;
    struct impair_cfg c = {.mtu = 1280};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    HP_CHECK_EQ(impair_path_push(&p, frame4(14 + 1280, 0), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(14 + 1281, 0), 0), 0);
    HP_CHECK_EQ(p.st.mtu_drops, 1);
    HP_CHECK_EQ(drain_at(&p, 0), 1);
    impair_path_fini(&p);
}

/* A full ring refuses; what is inside is freed by fini. */
HP_TEST(impair_ring_full_and_fini)
{
    struct impair_path p;
    struct impair_cfg c = {.delay_ns = MS};
    HP_CHECK_EQ(impair_path_init(&p, &c, 3), -EINVAL);
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 4), 0);
    for (int i = 0; i < 4; i++)
        HP_CHECK_EQ(impair_path_push(&p, frame4(64, 0), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(64, 0), 0), 0);
    HP_CHECK_EQ(p.st.queue_drops, 1);
    impair_path_fini(&p);
    HP_CHECK_EQ(hp_pool_in_use(get_pool()), 0);
}

/* Peeked frames the output refused stay first in line. */
HP_TEST(impair_partial_consume)
{
    struct impair_path p;
    struct impair_cfg c = {0};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 16), 0);
    struct hp_buf *in[3] = {frame4(64, 0), frame4(65, 0), frame4(66, 0)};
    for (int i = 0; i < 3; i++)
        impair_path_push(&p, in[i], 5);
    struct hp_buf *out[8];
    HP_CHECK_EQ(impair_path_peek(&p, 5, out, 8), 3);
    impair_path_consume(&p, 1);
    hp_buf_free(out[0]);
    HP_CHECK_EQ(impair_path_peek(&p, 5, out, 8), 2);
    HP_CHECK(out[0] == in[1]);
    HP_CHECK_EQ(drain_at(&p, 5), 2);
    impair_path_fini(&p);
}
