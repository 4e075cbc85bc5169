/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP view (RFC 826, Ethernet/IPv4): scapy packets, refused types, lengths and opcodes, truncation, emit and round trips. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/pool.h>
#include <hotpath/wire/arp.h>

#include "hp_test.h"
#include "l2l3_vectors.h"

static bool repr_eq(const struct hp_arp_repr *a, const struct hp_arp_repr *b)
{
    return a->op == b->op && memcmp(a->sha, b->sha, 6) == 0 && memcmp(a->spa, b->spa, 4) == 0 &&
           memcmp(a->tha, b->tha, 6) == 0 && memcmp(a->tpa, b->tpa, 4) == 0;
}

static int check_prefix(const uint8_t *pkt, size_t n)
{
    void *base;
    uint8_t *p = l2l3_tight(pkt, n, 0, &base);
    int rc = hp_arp_check(p, n);
    free(base);
    return rc;
}

static const struct hp_arp_repr REQUEST = {
    .op = HP_ARP_OP_REQUEST,
    .sha = {0x02, 0x00, 0x5E, 0x10, 0x20, 0x30},
    .spa = {198, 18, 0, 1},
    .tha = {0},
    .tpa = {198, 18, 0, 2},
};

HP_TEST(arp_vectors)
{
    struct l2l3_vecs *vs = l2l3_load("arp");
    HP_REQUIRE(vs != NULL);
    int ok = 0, refused = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct l2l3_vec *v = &vs->v[i];
        for (size_t lead = 0; lead < 4; lead++) {
            void *base;
            uint8_t *p = l2l3_tight(v->data, v->len, lead, &base);
            struct hp_arp_repr r;
            int rc = hp_arp_check(p, v->len), rp = hp_arp_parse(p, v->len, &r);
            if (rc != v->expect || rp != v->expect) {
                hp_test_fail(__FILE__, __LINE__, "line %d: check %d (%s), parse %d, want %d (%s)",
                             v->line, rc, hp_wire_reason(rc), rp, v->expect,
                             hp_wire_reason(v->expect));
                free(base);
                break;
            }
            if (rc == 0) {
                struct hp_arp_repr want = {.op = (uint16_t)l2l3_int(v, "op")};
                HP_REQUIRE(l2l3_bytes(v, "sha", want.sha, 6) && l2l3_bytes(v, "spa", want.spa, 4) &&
                           l2l3_bytes(v, "tha", want.tha, 6) && l2l3_bytes(v, "tpa", want.tpa, 4));
                HP_CHECK(repr_eq(&r, &want));
                HP_CHECK_EQ(hp_arp_op(p), r.op);
                HP_CHECK_MEMEQ(hp_arp_sha_ptr(p), want.sha, 6);
                HP_CHECK_MEMEQ(hp_arp_spa_ptr(p), want.spa, 4);
                HP_CHECK_MEMEQ(hp_arp_tha_ptr(p), want.tha, 6);
                HP_CHECK_MEMEQ(hp_arp_tpa_ptr(p), want.tpa, 4);
                uint8_t out[HP_ARP_LEN];
                HP_CHECK_EQ(hp_arp_repr_len(&r), HP_ARP_LEN);
                HP_REQUIRE_EQ(hp_arp_emit(&r, out, sizeof out), (int)HP_ARP_LEN);
                HP_CHECK_MEMEQ(out, p, HP_ARP_LEN); /* scapy's bytes exactly */
                struct hp_arp_repr r2;
                HP_CHECK_EQ(hp_arp_parse(out, sizeof out, &r2), 0);
                HP_CHECK(repr_eq(&r, &r2));
            }
            free(base);
        }
        ok += v->expect == 0;
        refused += v->expect != 0;
    }
    HP_CHECK_GE(ok, 4);
    HP_CHECK_GE(refused, 8);
    l2l3_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_truncated_every_length)
{
    uint8_t pkt[60] = {0};
    HP_REQUIRE_EQ(hp_arp_emit(&REQUEST, pkt, sizeof pkt), 28);
    for (size_t n = 0; n <= sizeof pkt; n++)
        HP_CHECK_EQ(check_prefix(pkt, n), n < HP_ARP_LEN ? -HP_WIRE_TRUNCATED : 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_types_and_lengths)
{
    uint8_t pkt[28];
    HP_REQUIRE_EQ(hp_arp_emit(&REQUEST, pkt, sizeof pkt), 28);
    uint8_t m[28];
    /* Hardware types other than Ethernet (6 is IEEE 802, RFC 1042) and
     * protocols other than IPv4: well formed, not ours. */
    const uint16_t htypes[] = {0, 2, 6, 0x8000, 0xFFFF};
    for (size_t i = 0; i < sizeof htypes / sizeof htypes[0]; i++) {
        memcpy(m, pkt, 28);
        hp_put_be16(m, htypes[i]);
        HP_CHECK_EQ(hp_arp_check(m, 28), -HP_WIRE_UNSUPPORTED);
    }
    const uint16_t ptypes[] = {0, 0x0806, 0x86DD, 0x0801};
    for (size_t i = 0; i < sizeof ptypes / sizeof ptypes[0]; i++) {
        memcpy(m, pkt, 28);
        hp_put_be16(m + 2, ptypes[i]);
        HP_CHECK_EQ(hp_arp_check(m, 28), -HP_WIRE_UNSUPPORTED);
    }
    /* Address lengths that contradict the types. */
    for (int hl = 0; hl < 256; hl += 3) {
        memcpy(m, pkt, 28);
        m[4] = (uint8_t)hl;
        HP_CHECK_EQ(hp_arp_check(m, 28), hl == 6 ? 0 : -HP_WIRE_BAD_FIELD);
    }
    for (int pl = 0; pl < 256; pl += 2) {
        memcpy(m, pkt, 28);
        m[5] = (uint8_t)pl;
        HP_CHECK_EQ(hp_arp_check(m, 28), pl == 4 ? 0 : -HP_WIRE_BAD_FIELD);
    }
    /* A bad length is reported even when the packet is also short: the
     * lengths decide how long it should be. */
    memcpy(m, pkt, 28);
    m[4] = 8;
    HP_CHECK_EQ(check_prefix(m, 10), -HP_WIRE_BAD_FIELD);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_opcodes)
{
    uint8_t pkt[28];
    HP_REQUIRE_EQ(hp_arp_emit(&REQUEST, pkt, sizeof pkt), 28);
    /* RARP (3, 4), InARP (8, 9), reserved 0 and 65535: only 1 and 2 are ours. */
    const uint16_t ops[] = {0, 1, 2, 3, 4, 8, 9, 25, 0xFFFF};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        hp_put_be16(pkt + 6, ops[i]);
        struct hp_arp_repr r;
        int want = ops[i] == 1 || ops[i] == 2 ? 0 : -HP_WIRE_UNSUPPORTED;
        HP_CHECK_EQ(hp_arp_parse(pkt, 28, &r), want);
        if (want == 0)
            HP_CHECK_EQ(r.op, ops[i]);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_sender_addresses)
{
    uint8_t pkt[28];
    struct hp_arp_repr r = REQUEST;
    /* A group sender hardware address (RFC 1812 section 3.3.2). */
    r.sha[0] = 0x01;
    HP_REQUIRE_EQ(hp_arp_emit(&r, pkt, sizeof pkt), 28);
    HP_CHECK_EQ(hp_arp_check(pkt, 28), -HP_WIRE_BAD_ADDRESS);
    memset(r.sha, 0xFF, 6);
    hp_arp_emit(&r, pkt, sizeof pkt);
    HP_CHECK_EQ(hp_arp_check(pkt, 28), -HP_WIRE_BAD_ADDRESS);
    /* Sender protocol addresses: multicast and limited broadcast refused;
     * 0.0.0.0 (a probe) and the rest accepted. */
    r = REQUEST;
    for (int a = 0; a < 256; a++) {
        r.spa[0] = (uint8_t)a;
        r.spa[1] = r.spa[2] = r.spa[3] = 0xFF;
        hp_arp_emit(&r, pkt, sizeof pkt);
        bool bad = (a >= 224 && a <= 239) || a == 255;
        HP_CHECK_EQ(hp_arp_check(pkt, 28), bad ? -HP_WIRE_BAD_ADDRESS : 0);
    }
    memset(r.spa, 0, 4);
    hp_arp_emit(&r, pkt, sizeof pkt);
    HP_CHECK_EQ(hp_arp_check(pkt, 28), 0);
    /* Target addresses are not checked: a request's tha is anything. */
    r = REQUEST;
    memset(r.tha, 0xFF, 6);
    memset(r.tpa, 0xFF, 4);
    hp_arp_emit(&r, pkt, sizeof pkt);
    HP_CHECK_EQ(hp_arp_check(pkt, 28), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_emit)
{
    uint8_t out[40];
    for (size_t cap = 0; cap < HP_ARP_LEN; cap++) {
        memset(out, 0x5C, sizeof out);
        HP_CHECK_EQ(hp_arp_emit(&REQUEST, out, cap), -HP_WIRE_NO_SPACE);
        for (size_t i = 0; i < sizeof out; i++)
            HP_CHECK_EQ(out[i], 0x5C);
    }
    struct hp_arp_repr reply = {.op = HP_ARP_OP_REPLY,
                                .sha = {0x02, 1, 2, 3, 4, 5},
                                .spa = {198, 18, 0, 2},
                                .tha = {0x02, 0x00, 0x5E, 0x10, 0x20, 0x30},
                                .tpa = {198, 18, 0, 1}};
    HP_CHECK_EQ(hp_arp_emit(&reply, out + 3, sizeof out - 3), 28); /* unaligned */
    const uint8_t want[28] = {0x00, 0x01, 0x08, 0x00, 6,   4,  0x00, 0x02, 0x02, 1,
                              2,    3,    4,    5,    198, 18, 0,    2,    0x02, 0x00,
                              0x5E, 0x10, 0x20, 0x30, 198, 18, 0,    1};
    HP_CHECK_MEMEQ(out + 3, want, 28);
    struct hp_arp_repr r;
    HP_CHECK_EQ(hp_arp_parse(out + 3, 28, &r), 0);
    HP_CHECK(repr_eq(&r, &reply));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
