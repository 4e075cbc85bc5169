/* SPDX-License-Identifier: BSD-3-Clause */
/* Sequence number and timestamp comparisons modulo 2^32 (RFC 9293 3.4, RFC 7323 5), around zero and across the wrap. */
#include <stdint.h>

#include <hotpath/pool.h>

#include "hp_test.h"
#include "sock/tcp_seq.h"

/* Pairs (a, b) with a before b by d = b - a, placed all around the circle. */
static const uint32_t BASES[] = {0,           1,           0x7fffffffu, 0x80000000u,
                                 0x80000001u, 0xfffffff0u, 0xffffffffu, 12345};
static const uint32_t DISTS[] = {1, 2, 16, 0x1000, 0x7ffffffeu, 0x7fffffffu};

HP_TEST(tcp_seq_order_all_around)
{
    for (size_t i = 0; i < sizeof BASES / sizeof BASES[0]; i++) {
        for (size_t j = 0; j < sizeof DISTS / sizeof DISTS[0]; j++) {
            uint32_t a = BASES[i], b = a + DISTS[j]; /* wraps for the high bases */
            HP_CHECK(hp__seq_lt(a, b));
            HP_CHECK(hp__seq_le(a, b));
            HP_CHECK(!hp__seq_gt(a, b));
            HP_CHECK(!hp__seq_ge(a, b));
            HP_CHECK(hp__seq_gt(b, a));
            HP_CHECK(hp__seq_ge(b, a));
            HP_CHECK(!hp__seq_lt(b, a));
            HP_CHECK(!hp__seq_le(b, a));
            HP_CHECK_EQ(hp__seq_max(a, b), b);
            HP_CHECK_EQ(hp__seq_max(b, a), b);
            HP_CHECK_EQ(hp__seq_min(a, b), a);
            HP_CHECK_EQ(hp__seq_min(b, a), a);
            HP_CHECK_EQ(hp__seq_diff(b, a), (int64_t)DISTS[j]);
            HP_CHECK_EQ(hp__seq_diff(a, b), -(int64_t)DISTS[j]);
            /* Timestamps follow the same arithmetic. */
            HP_CHECK(hp__ts_lt(a, b));
            HP_CHECK(hp__ts_le(a, b));
            HP_CHECK(hp__ts_gt(b, a));
            HP_CHECK(hp__ts_ge(b, a));
            HP_CHECK(!hp__ts_lt(b, a));
            HP_CHECK(!hp__ts_gt(a, b));
            HP_STOP_IF_FAILED();
        }
        /* Equal numbers. */
        uint32_t a = BASES[i];
        HP_CHECK(!hp__seq_lt(a, a));
        HP_CHECK(hp__seq_le(a, a));
        HP_CHECK(!hp__seq_gt(a, a));
        HP_CHECK(hp__seq_ge(a, a));
        HP_CHECK(!hp__ts_lt(a, a));
        HP_CHECK(hp__ts_ge(a, a));
        HP_CHECK_EQ(hp__seq_diff(a, a), 0);
        HP_CHECK_EQ(hp__seq_max(a, a), a);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_seq_wrap_explicit)
{
    /* The cases a plain integer compare gets wrong. */
    HP_CHECK(hp__seq_lt(0xffffffffu, 0));
    HP_CHECK(hp__seq_gt(0, 0xffffffffu));
    HP_CHECK(hp__seq_lt(0xfffffc00u, 0x400u));
    HP_CHECK(hp__seq_ge(5, 0xfffffffbu));
    HP_CHECK(hp__seq_le(0xfffffffbu, 5));
    HP_CHECK_EQ(hp__seq_max(0xfffffff0u, 0x10u), 0x10u);
    HP_CHECK_EQ(hp__seq_min(0xfffffff0u, 0x10u), 0xfffffff0u);
    HP_CHECK_EQ(hp__seq_diff(0x10u, 0xfffffff0u), 0x20);
    HP_CHECK_EQ(hp__seq_diff(0xfffffff0u, 0x10u), -0x20);
    HP_CHECK(hp__ts_lt(0xfffffff0u, 3));
    HP_CHECK(hp__ts_gt(3, 0xfffffff0u));
    /* One past half the circle: the order flips. */
    HP_CHECK(hp__seq_gt(0, 0x80000001u));
    HP_CHECK(hp__seq_lt(0x80000001u, 0));
    HP_CHECK_EQ(hp__seq_diff(1, 0x80000000u), INT32_MIN + 1);
    HP_CHECK_EQ(hp__seq_diff(0x80000000u, 1), INT32_MAX);
    HP_CHECK_EQ(hp__seq_diff(0, 0x7fffffffu), INT32_MIN + 1);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_seq_half_circle_is_documented)
{
    /* Exactly 2^31 apart: undefined by RFC 1982; we say each is before the other. */
    HP_CHECK(hp__seq_lt(0, 0x80000000u));
    HP_CHECK(hp__seq_lt(0x80000000u, 0));
    HP_CHECK(hp__seq_gt(0, 0x80000000u));
    HP_CHECK_EQ(hp__seq_diff(0x80000000u, 0), INT32_MIN);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_seq_between)
{
    for (size_t i = 0; i < sizeof BASES / sizeof BASES[0]; i++) {
        uint32_t lo = BASES[i], hi = lo + 1000;
        HP_CHECK(hp__seq_between(lo, lo, hi));
        HP_CHECK(hp__seq_between(lo, lo + 1, hi));
        HP_CHECK(hp__seq_between(lo, hi, hi));
        HP_CHECK(!hp__seq_between(lo, lo - 1, hi));
        HP_CHECK(!hp__seq_between(lo, hi + 1, hi));
        HP_CHECK(hp__seq_between(lo, lo, lo));
        HP_CHECK(!hp__seq_between(lo, lo + 1, lo));
        /* An arc longer than half the circle still works. */
        uint32_t far = lo + 0xc0000000u;
        HP_CHECK(hp__seq_between(lo, lo + 0xa0000000u, far));
        HP_CHECK(!hp__seq_between(lo, far + 1, far));
        HP_STOP_IF_FAILED();
    }
    /* RFC 9293 3.4: "SND.UNA < SEG.ACK =< SND.NXT" across the wrap. */
    uint32_t una = 0xfffffff0u, nxt = 0x20u;
    HP_CHECK(!hp__seq_between(una + 1, una, nxt));
    HP_CHECK(hp__seq_between(una + 1, 0xffffffffu, nxt));
    HP_CHECK(hp__seq_between(una + 1, 0, nxt));
    HP_CHECK(hp__seq_between(una + 1, nxt, nxt));
    HP_CHECK(!hp__seq_between(una + 1, nxt + 1, nxt));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_seq_in_window)
{
    /* RCV.NXT =< SEG.SEQ < RCV.NXT + RCV.WND, window across the wrap. */
    uint32_t nxt = 0xffffff00u, wnd = 0x200u;
    HP_CHECK(hp__seq_in_window(nxt, nxt, wnd));
    HP_CHECK(hp__seq_in_window(0xffffffffu, nxt, wnd));
    HP_CHECK(hp__seq_in_window(0, nxt, wnd));
    HP_CHECK(hp__seq_in_window(nxt + wnd - 1, nxt, wnd));
    HP_CHECK(!hp__seq_in_window(nxt + wnd, nxt, wnd));
    HP_CHECK(!hp__seq_in_window(nxt - 1, nxt, wnd));
    /* A zero window holds nothing, not even its start. */
    HP_CHECK(!hp__seq_in_window(nxt, nxt, 0));
    /* The largest window: everything but the octet before the start. */
    HP_CHECK(hp__seq_in_window(nxt - 2, nxt, 0xffffffffu));
    HP_CHECK(!hp__seq_in_window(nxt - 1, nxt, 0xffffffffu));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_paws)
{
    /* RFC 7323 5.3 R1: TSval < TS.Recent is an old duplicate. */
    HP_CHECK(hp__tcp_paws_ok(100, 100, 0));
    HP_CHECK(hp__tcp_paws_ok(101, 100, 0));
    HP_CHECK(!hp__tcp_paws_ok(99, 100, 0));
    /* Across the wrap of the peer's clock. */
    HP_CHECK(hp__tcp_paws_ok(2, 0xfffffffeu, 0));
    HP_CHECK(!hp__tcp_paws_ok(0xfffffffeu, 2, 0));
    /* RFC 7323 5.5: after 24 days idle, TS.Recent is no longer trusted. */
    HP_CHECK(!hp__tcp_paws_ok(99, 100, HP__TCP_PAWS_IDLE_NS));
    HP_CHECK(hp__tcp_paws_ok(99, 100, HP__TCP_PAWS_IDLE_NS + 1));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
