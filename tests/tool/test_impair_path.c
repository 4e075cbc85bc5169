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

/* An IPv4 TCP segment (20-byte headers) of flow `port` with sequence
 * number seq and `data` bytes of payload. */
static struct hp_buf *segment4(uint16_t port, uint32_t seq, uint32_t data)
{
    struct hp_buf *b = frame4(14 + 40 + data, 0);
    if (!b)
        return NULL;
    uint8_t *tcp = (uint8_t *)hp_buf_data(b) + 34;
    tcp[0] = (uint8_t)(port >> 8);
    tcp[1] = (uint8_t)port;
    tcp[3] = 80;
    for (int i = 0; i < 4; i++)
        tcp[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
    tcp[12] = 5 << 4;
    return b;
}

HP_TEST(impair_tcp_data_parses_segments)
{
    struct hp_buf *b = segment4(1000, 0x01020304, 100);
    uint32_t flow = 0, seq = 0, flow2 = 0;
    HP_REQUIRE(b != NULL);
    uint8_t *f = hp_buf_data(b);
    HP_CHECK_EQ(impair_tcp_data(f, b->data_len, &flow, &seq), 100);
    HP_CHECK_EQ(seq, 0x01020304);
    f[34 + 1] ^= 1; /* another source port: another flow */
    HP_CHECK_EQ(impair_tcp_data(f, b->data_len, &flow2, &seq), 100);
    HP_CHECK(flow2 != flow);
    f[14 + 6] = 0x20; /* more fragments: no whole TCP header to trust */
    HP_CHECK_EQ(impair_tcp_data(f, b->data_len, &flow, &seq), 0);
    f[14 + 6] = 0;
    f[14 + 9] = 17; /* UDP */
    HP_CHECK_EQ(impair_tcp_data(f, b->data_len, &flow, &seq), 0);
    HP_CHECK_EQ(impair_tcp_data(f, 40, &flow, &seq), 0); /* truncated */
    hp_buf_free(b);
    b = segment4(1000, 1, 30);
    HP_REQUIRE(b != NULL);
    ((uint8_t *)hp_buf_data(b))[34 + 12] = 15 << 4; /* a TCP header longer than the packet */
    HP_CHECK_EQ(impair_tcp_data(hp_buf_data(b), b->data_len, &flow, &seq), 0);
    hp_buf_free(b);
    struct hp_buf *ack = segment4(1000, 1, 0);
    HP_REQUIRE(ack != NULL);
    HP_CHECK_EQ(impair_tcp_data(hp_buf_data(ack), ack->data_len, &flow, &seq), 0);
    hp_buf_free(ack);
}

/* A burst of four segments 0.1 ms apart, then 5.7 ms of quiet: the fourth
 * is lost, once; its retransmission passes; pure ACKs and the burst's
 * other segments are never lost. */
HP_TEST(impair_drop_tail_loses_the_last_segment_once)
{
    struct impair_path p;
    struct impair_cfg c = {.delay_ns = 20 * MS, .tail_gap_ns = 5 * MS};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    for (uint32_t i = 0; i < 4; i++)
        HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 1000 * i, 1000), i * MS / 10), 1);
    HP_CHECK_EQ(impair_path_push(&p, segment4(2000, 7, 0), 6 * MS), 1); /* another flow's ACK */
    HP_CHECK_EQ(drain_at(&p, 30 * MS), 4); /* the ACK and segments 0-2 */
    HP_CHECK_EQ(p.st.tail_drops, 1);
    /* The retransmission of segment 3, alone: it passes. */
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 3000, 1000), 250 * MS), 1);
    HP_CHECK_EQ(drain_at(&p, 300 * MS), 1);
    /* A new burst's last segment is lost again. */
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 4000, 1000), 400 * MS), 1);
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 5000, 1000), 401 * MS), 1);
    HP_CHECK_EQ(drain_at(&p, 500 * MS), 1);
    HP_CHECK_EQ(p.st.tail_drops, 2);
    HP_CHECK_EQ(p.st.out, 6);
    HP_CHECK_EQ(p.st.in, 8);
    impair_path_fini(&p);
}

/* A tail decided while frames before it are due goes only once they went:
 * the frames returned stop before it. */
HP_TEST(impair_drop_tail_keeps_order)
{
    struct impair_path p;
    struct impair_cfg c = {.delay_ns = 10 * MS, .tail_gap_ns = 2 * MS};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 0, 100), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 100, 100), 3 * MS), 1);
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 200, 100), 8 * MS), 1);
    /* At 20 ms all three are due: the first (followed after 3 ms) and the
     * second (5 ms) are tails; the third too (nothing after it). */
    struct hp_buf *out[8];
    HP_CHECK_EQ(impair_path_peek(&p, 20 * MS, out, 8), 0);
    HP_CHECK_EQ(p.st.tail_drops, 3);
    HP_CHECK_EQ(impair_path_count(&p), 0);
    /* Without a gap they all pass, in order. */
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 300, 100), 30 * MS), 1);
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 400, 100), 31 * MS), 1);
    HP_CHECK_EQ(impair_path_push(&p, segment4(1000, 500, 100), 32 * MS), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(64, 0), 32 * MS), 1); /* not TCP: ends the burst */
    HP_CHECK_EQ(drain_at(&p, 100 * MS), 4);
    HP_CHECK_EQ(p.st.tail_drops, 3);
    impair_path_fini(&p);
}

/* Frames handed out after they were due count as late, by how much. */
HP_TEST(impair_counts_lateness)
{
    struct impair_path p;
    struct impair_cfg c = {.delay_ns = 10 * MS};
    HP_REQUIRE_EQ(impair_path_init(&p, &c, 64), 0);
    HP_CHECK_EQ(impair_path_push(&p, frame4(100, 0), 0), 1);
    HP_CHECK_EQ(impair_path_push(&p, frame4(100, 0), 0), 1);
    HP_CHECK_EQ(drain_at(&p, 10 * MS), 2); /* on time */
    HP_CHECK_EQ(p.st.late_max_ns, 0);
    HP_CHECK_EQ(impair_path_push(&p, frame4(100, 0), 20 * MS), 1);
    HP_CHECK_EQ(drain_at(&p, 33 * MS), 1); /* due at 30 ms */
    HP_CHECK_EQ(p.st.late_max_ns, 3 * MS);
    HP_CHECK_EQ(p.st.late_sum_ns, 3 * MS);
    impair_path_fini(&p);
}
