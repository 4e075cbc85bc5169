/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet header view: scapy frames, 802.1Q tags, refused frames, truncation at every length, emit and round trips. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/pool.h>
#include <hotpath/wire/eth.h>

#include "hp_test.h"
#include "l2l3_vectors.h"

static const uint8_t MAC_A[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
static const uint8_t MAC_B[6] = {0x02, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE};

static bool repr_eq(const struct hp_eth_repr *a, const struct hp_eth_repr *b)
{
    return memcmp(a->dst, b->dst, 6) == 0 && memcmp(a->src, b->src, 6) == 0 &&
           a->ethertype == b->ethertype && a->has_vlan == b->has_vlan && a->vlan_tci == b->vlan_tci;
}

/* check on a tight copy of the first n bytes of pkt. */
static int check_prefix(const uint8_t *pkt, size_t n)
{
    void *base;
    uint8_t *p = l2l3_tight(pkt, n, 0, &base);
    int rc = hp_eth_check(p, n);
    free(base);
    return rc;
}

HP_TEST(eth_vectors)
{
    struct l2l3_vecs *vs = l2l3_load("eth");
    HP_REQUIRE(vs != NULL);
    int ok = 0, refused = 0, tagged = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct l2l3_vec *v = &vs->v[i];
        for (size_t lead = 0; lead < 4; lead++) {
            void *base;
            uint8_t *p = l2l3_tight(v->data, v->len, lead, &base);
            struct hp_eth_repr r;
            size_t hlen = 0;
            int rc = hp_eth_check(p, v->len);
            int rp = hp_eth_parse(p, v->len, &r, &hlen);
            if (rc != v->expect || rp != v->expect) {
                hp_test_fail(__FILE__, __LINE__, "line %d: check %d (%s), parse %d, want %d (%s)",
                             v->line, rc, hp_wire_reason(rc), rp, v->expect,
                             hp_wire_reason(v->expect));
                free(base);
                break;
            }
            if (rc == 0) {
                uint8_t dst[6], src[6];
                HP_REQUIRE(l2l3_bytes(v, "dst", dst, 6) && l2l3_bytes(v, "src", src, 6));
                long long vlan = l2l3_int(v, "vlan");
                HP_CHECK_MEMEQ(r.dst, dst, 6);
                HP_CHECK_MEMEQ(r.src, src, 6);
                HP_CHECK_EQ(r.ethertype, l2l3_int(v, "type"));
                HP_CHECK_EQ(r.has_vlan, vlan >= 0);
                HP_CHECK_EQ(r.vlan_tci, vlan >= 0 ? vlan : 0);
                HP_CHECK_EQ(hlen, l2l3_int(v, "hlen"));
                /* The accessors agree with the repr. */
                HP_CHECK_EQ(hp_eth_ethertype(p), r.ethertype);
                HP_CHECK_EQ(hp_eth_has_vlan(p), r.has_vlan);
                HP_CHECK_EQ(hp_eth_vlan_tci(p), r.vlan_tci);
                HP_CHECK_EQ(hp_eth_hdr_len(p), hlen);
                HP_CHECK(hp_eth_payload(p) == p + hlen);
                HP_CHECK(hp_eth_dst_ptr(p) == p && hp_eth_src_ptr(p) == p + 6);
                /* Emit writes scapy's header byte for byte; parsing it gives the repr. */
                uint8_t out[HP_ETH_VLAN_HDR_LEN];
                HP_CHECK_EQ(hp_eth_repr_len(&r), hlen);
                HP_REQUIRE_EQ(hp_eth_emit(&r, out, sizeof out), (int)hlen);
                if (l2l3_int(v, "emit"))
                    HP_CHECK_MEMEQ(out, p, hlen);
                struct hp_eth_repr r2;
                size_t h2;
                HP_CHECK_EQ(hp_eth_parse(out, hlen, &r2, &h2), 0);
                HP_CHECK(repr_eq(&r, &r2));
                HP_CHECK_EQ(h2, hlen);
            }
            free(base);
        }
        if (v->expect == 0) {
            ok++;
            tagged += l2l3_int(v, "vlan") >= 0;
        } else {
            refused++;
        }
    }
    HP_CHECK_GE(ok, 5);
    HP_CHECK_GE(tagged, 2);
    HP_CHECK_GE(refused, 5);
    l2l3_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Every prefix shorter than the header is truncated; every longer one is whole. */
HP_TEST(eth_truncated_every_length)
{
    struct l2l3_vecs *vs = l2l3_load("eth");
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l2l3_vec *v = &vs->v[i];
        if (v->expect != 0)
            continue;
        size_t hlen = (size_t)l2l3_int(v, "hlen");
        for (size_t n = 0; n <= v->len; n++) {
            int rc = check_prefix(v->data, n);
            int want = n < hlen ? -HP_WIRE_TRUNCATED : 0;
            if (rc != want) {
                hp_test_fail(__FILE__, __LINE__, "line %d cut at %zu: %d, want %d", v->line, n, rc,
                             want);
                break;
            }
        }
    }
    l2l3_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static size_t build(uint8_t *f, uint16_t type, int tci, uint16_t inner)
{
    memcpy(f, MAC_A, 6);
    memcpy(f + 6, MAC_B, 6);
    hp_put_be16(f + 12, type);
    if (tci < 0)
        return 14;
    hp_put_be16(f + 14, (uint16_t)tci);
    hp_put_be16(f + 16, inner);
    return 18;
}

HP_TEST(eth_ethertype_boundaries)
{
    uint8_t f[64] = {0};
    /* 802.3 lengths (<= 1500) and the undefined 1501..1535 are not EtherTypes. */
    const uint16_t refused[] = {0x0000, 0x002E, 0x05DC, 0x05DD, 0x05FF};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        build(f, refused[i], -1, 0);
        HP_CHECK_EQ(hp_eth_check(f, 60), -HP_WIRE_UNSUPPORTED);
        build(f, HP_ETHERTYPE_VLAN, 5, refused[i]);
        HP_CHECK_EQ(hp_eth_check(f, 60), -HP_WIRE_UNSUPPORTED);
    }
    const uint16_t accepted[] = {
        0x0600, HP_ETHERTYPE_IPV4, HP_ETHERTYPE_ARP, HP_ETHERTYPE_IPV6, 0x88B5, 0xFFFF};
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        struct hp_eth_repr r;
        size_t h;
        build(f, accepted[i], -1, 0);
        HP_CHECK_EQ(hp_eth_parse(f, 14, &r, &h), 0);
        HP_CHECK_EQ(r.ethertype, accepted[i]);
        HP_CHECK_EQ(h, 14);
        build(f, HP_ETHERTYPE_VLAN, 0x2005, accepted[i]);
        HP_CHECK_EQ(hp_eth_parse(f, 18, &r, &h), 0);
        HP_CHECK_EQ(r.ethertype, accepted[i]);
        HP_CHECK_EQ(r.vlan_tci, 0x2005);
        HP_CHECK_EQ(h, 18);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(eth_tags)
{
    uint8_t f[64] = {0};
    struct hp_eth_repr r;
    /* 802.1ad S-tag outside, and two stacked 802.1Q tags: one tag only. */
    build(f, HP_ETHERTYPE_QINQ, 10, HP_ETHERTYPE_VLAN);
    HP_CHECK_EQ(hp_eth_check(f, 60), -HP_WIRE_UNSUPPORTED);
    build(f, HP_ETHERTYPE_VLAN, 10, HP_ETHERTYPE_VLAN);
    HP_CHECK_EQ(hp_eth_check(f, 60), -HP_WIRE_UNSUPPORTED);
    build(f, HP_ETHERTYPE_VLAN, 10, HP_ETHERTYPE_QINQ);
    HP_CHECK_EQ(hp_eth_check(f, 60), -HP_WIRE_UNSUPPORTED);
    /* Every VID but 0xFFF, whatever the PCP and DEI. */
    for (unsigned tci = 0; tci <= 0xFFFF; tci += 0x3FF) {
        build(f, HP_ETHERTYPE_VLAN, (int)tci, HP_ETHERTYPE_IPV4);
        int want = HP_VLAN_VID(tci) == HP_VLAN_VID_RESERVED ? -HP_WIRE_BAD_FIELD : 0;
        HP_CHECK_EQ(hp_eth_parse(f, 18, &r, NULL), want);
        if (want == 0) {
            HP_CHECK_EQ(r.vlan_tci, tci);
            HP_CHECK_EQ(HP_VLAN_PCP(r.vlan_tci), tci >> 13);
        }
    }
    build(f, HP_ETHERTYPE_VLAN, 0xEFFF, HP_ETHERTYPE_IPV4);
    HP_CHECK_EQ(hp_eth_check(f, 18), -HP_WIRE_BAD_FIELD);
    /* A tag cut short. */
    build(f, HP_ETHERTYPE_VLAN, 1, HP_ETHERTYPE_IPV4);
    for (size_t n = 14; n < 18; n++)
        HP_CHECK_EQ(check_prefix(f, n), -HP_WIRE_TRUNCATED);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(eth_group_source_refused)
{
    uint8_t f[64] = {0};
    build(f, HP_ETHERTYPE_IPV4, -1, 0);
    for (int b = 0; b < 256; b++) {
        f[6] = (uint8_t)b;
        HP_CHECK_EQ(hp_eth_check(f, 14), (b & 1) ? -HP_WIRE_BAD_ADDRESS : 0);
    }
    /* A group destination is fine. */
    f[6] = 0x02;
    memset(f, 0xFF, 6);
    HP_CHECK_EQ(hp_eth_check(f, 14), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(eth_emit)
{
    struct hp_eth_repr r = {.ethertype = HP_ETHERTYPE_IPV6, .has_vlan = true, .vlan_tci = 0xA123};
    memcpy(r.dst, MAC_A, 6);
    memcpy(r.src, MAC_B, 6);
    uint8_t out[32];
    /* Too small: refused, nothing written. */
    for (size_t cap = 0; cap < 18; cap++) {
        memset(out, 0x5C, sizeof out);
        HP_CHECK_EQ(hp_eth_emit(&r, out, cap), -HP_WIRE_NO_SPACE);
        for (size_t i = 0; i < sizeof out; i++)
            HP_CHECK_EQ(out[i], 0x5C);
    }
    HP_CHECK_EQ(hp_eth_emit(&r, out, 18), 18);
    const uint8_t want[18] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55, 0x02, 0xAA, 0xBB,
                              0xCC, 0xDD, 0xEE, 0x81, 0x00, 0xA1, 0x23, 0x86, 0xDD};
    HP_CHECK_MEMEQ(out, want, 18);
    r.has_vlan = false;
    r.vlan_tci = 0;
    HP_CHECK_EQ(hp_eth_repr_len(&r), 14);
    HP_CHECK_EQ(hp_eth_emit(&r, out + 1, 14), 14); /* unaligned */
    HP_CHECK_MEMEQ(out + 1, want, 12);
    HP_CHECK_EQ(out[13], 0x86);
    HP_CHECK_EQ(out[14], 0xDD);
    struct hp_eth_repr r2;
    size_t h;
    HP_CHECK_EQ(hp_eth_parse(out + 1, 14, &r2, &h), 0);
    HP_CHECK(repr_eq(&r, &r2));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(eth_address_helpers)
{
    const uint8_t bcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    const uint8_t mcast4[6] = {0x01, 0x00, 0x5E, 0x00, 0x00, 0x01};
    const uint8_t mcast6[6] = {0x33, 0x33, 0xFF, 0x00, 0x00, 0x01};
    const uint8_t almost[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE};
    HP_CHECK(hp_eth_is_broadcast(bcast) && hp_eth_is_multicast(bcast));
    HP_CHECK(hp_eth_is_multicast(mcast4) && !hp_eth_is_broadcast(mcast4));
    HP_CHECK(hp_eth_is_multicast(mcast6) && !hp_eth_is_broadcast(mcast6));
    HP_CHECK(hp_eth_is_multicast(almost) && !hp_eth_is_broadcast(almost));
    HP_CHECK(!hp_eth_is_multicast(MAC_A) && !hp_eth_is_broadcast(MAC_A));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
