/* SPDX-License-Identifier: BSD-3-Clause */
/* IP identifications per destination from a keyed hash (RFC 7739 5.3, RFC 6864 4): what one destination sees says nothing of what goes to another. */
#include "ip_test.h"

#define NDST 8

/* The destinations: the peer and seven more neighbours on our /24, all
 * with a known MAC so that nothing waits for ARP. */
static void dst4(int i, uint8_t out[4])
{
    memcpy(out, CT_PEER4, 4);
    out[3] = (uint8_t)(2 + 10 * i);
}

static void learn_all(struct ct_env *e)
{
    for (int i = 0; i < NDST; i++) {
        uint8_t d[4];
        dst4(i, d);
        hp__neigh_learn(e->ifc, 4, d, CT_PEER_MAC, HP__LEARN_CREATE);
        hp__neigh_learn(e->ifc, 4, d, CT_PEER_MAC, HP__LEARN_CONFIRM);
    }
    ct_step(e);
    ct_drain(e);
}

/* Each ping the stack sent, by destination index, in order. */
static int collect(struct ct_env *e, uint16_t ids[NDST][8], int nper[NDST])
{
    int got = 0;
    uint8_t pl[64];
    struct hp_ipv4_repr ip;
    while (it_recv4(e, &ip, pl, sizeof pl) >= 0) {
        for (int i = 0; i < NDST; i++) {
            uint8_t d[4];
            dst4(i, d);
            if (memcmp(ip.dst, d, 4) == 0 && nper[i] < 8) {
                ids[i][nper[i]++] = ip.ident;
                got++;
            }
        }
    }
    return got;
}

/* Pings to eight destinations in turn, four rounds, at one instant: each
 * destination's IDs count up by one, and the destinations do not share a
 * sequence (a global counter would give the next destination the next
 * ID, and count up by eight per destination). Two destinations in one of
 * the 4096 buckets share a counter: one such pair is allowed. */
HP_TEST(ipid_destinations_are_not_one_sequence)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    learn_all(&e);
    for (int round = 0; round < 4; round++)
        for (int i = 0; i < NDST; i++) {
            uint8_t d[4];
            dst4(i, d);
            HP_REQUIRE_EQ(hp_stack_ping(e.s, 4, d, 1, (uint16_t)round, 8), 0);
        }
    ct_step(&e);
    uint16_t ids[NDST][8];
    int nper[NDST] = {0};
    HP_REQUIRE_EQ(collect(&e, ids, nper), 4 * NDST);
    int shared = 0, equal_first = 0, not_unit = 0;
    for (int i = 0; i < NDST; i++) {
        HP_REQUIRE_EQ(nper[i], 4);
        bool unit = true;
        for (int k = 1; k < 4; k++)
            unit = unit && (uint16_t)(ids[i][k] - ids[i][k - 1]) == 1;
        not_unit += !unit;
        if (i > 0 && (uint16_t)(ids[i][0] - ids[i - 1][0]) == 1)
            shared++;
        for (int j = 0; j < i; j++)
            equal_first += ids[i][0] == ids[j][0];
    }
    /* A pair sharing a bucket (28 / 4096) counts by two: allowed once. */
    HP_CHECK(not_unit <= 2);
    HP_CHECK(shared <= 1);
    HP_CHECK(equal_first <= 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Two stacks (two secrets) give the same destination unrelated IDs. */
HP_TEST(ipid_keyed_per_stack)
{
    struct ct_env a, b;
    HP_REQUIRE(it_open(&a, NULL) == 0);
    HP_REQUIRE(it_open(&b, NULL) == 0);
    uint16_t ia = hp__ip4_ident(a.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    uint16_t ib = hp__ip4_ident(b.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    uint16_t ja = hp__ip4_ident(a.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    uint16_t jb = hp__ip4_ident(b.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    HP_CHECK_EQ((uint16_t)(ja - ia), 1);
    HP_CHECK_EQ((uint16_t)(jb - ib), 1);
    /* 1 / 65536 to be equal by chance; a second pair of stacks then. */
    if (ia == ib) {
        struct ct_env c;
        HP_REQUIRE(it_open(&c, NULL) == 0);
        HP_CHECK_NE(hp__ip4_ident(c.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false), ja + 1);
        ct_close(&c);
    }
    ct_close(&a);
    ct_close(&b);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Atomic datagrams (DF, unfragmented: RFC 6864 4.1) count apart from the
 * fragmentable ones to the same destination, and each protocol apart:
 * a burst of one does not move the other's counter. */
HP_TEST(ipid_atomic_and_protocols_apart)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint16_t f0 = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    uint16_t t0 = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_TCP, false);
    for (int i = 0; i < 1000; i++)
        (void)hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, true);
    uint16_t f1 = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    uint16_t t1 = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_TCP, false);
    /* Unless the flows share a bucket (1 / 4096 each). */
    int moved = ((uint16_t)(f1 - f0) != 1) + ((uint16_t)(t1 - t0) != 1);
    HP_CHECK(moved <= 1);
    /* IPv6 fragment IDs: 32 bits, per destination too. */
    uint32_t a0 = hp__ip6_frag_ident(e.s, CT_OUR6, CT_PEER6, HP_IPPROTO_UDP);
    uint32_t a1 = hp__ip6_frag_ident(e.s, CT_OUR6, CT_PEER6, HP_IPPROTO_UDP);
    HP_CHECK_EQ(a1 - a0, 1u);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A flow idle for t ms moves on by a random step below t before its next
 * ID (as Linux does): an observer sharing its bucket cannot count what
 * was sent in between. Back to back, the step is exactly one. */
HP_TEST(ipid_idle_bucket_moves_randomly)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint16_t prev = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
    int not_one = 0;
    for (int i = 0; i < 50; i++) {
        e.s->now += 1000ull * 1000000ull; /* 1 s idle */
        uint16_t id = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
        uint16_t step = (uint16_t)(id - prev);
        HP_CHECK(step >= 1 && step <= 1000);
        not_one += step != 1;
        prev = id;
        uint16_t next = hp__ip4_ident(e.s, CT_OUR4, CT_PEER4, HP_IPPROTO_UDP, false);
        HP_CHECK_EQ((uint16_t)(next - id), 1);
        prev = next;
    }
    /* 50 draws below 1000: all equal to 0 by chance once in 10^150. */
    HP_CHECK(not_one > 40);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
