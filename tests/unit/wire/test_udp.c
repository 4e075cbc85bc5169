/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP view: scapy datagrams over IPv4 and IPv6, round trips, length and checksum rules, emit in place. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>
#include <hotpath/wire/udp.h>

#include "hp_test.h"
#include "l4_vectors.h"

static const uint8_t src4[4] = {198, 18, 0, 1}, dst4[4] = {198, 19, 255, 254};
static const uint8_t src6[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t dst6[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x12, 0x34};

static struct hp_l4_addrs addrs(int family)
{
    struct hp_l4_addrs a = {(uint8_t)family, family == 4 ? src4 : src6, family == 4 ? dst4 : dst6};
    return a;
}

/* A datagram emitted for family with n payload bytes of pattern. */
static size_t build(int family, uint8_t *out, size_t cap, size_t n)
{
    uint8_t pl[1500];
    for (size_t i = 0; i < n; i++)
        pl[i] = (uint8_t)(i * 7 + 3);
    struct hp_udp_repr r = {.src_port = 40000, .dst_port = 53, .payload = pl, .payload_len = n};
    struct hp_l4_addrs a = addrs(family);
    int rc = hp_udp_emit(&r, &a, out, cap);
    return rc > 0 ? (size_t)rc : 0;
}

HP_TEST(udp_vectors)
{
    struct l4v_set *vs = l4v_load("udp4", "udp6");
    HP_REQUIRE(vs != NULL);
    int ok = 0, same = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        uint8_t *seg = l4v_tight(v->l4, v->len);
        struct hp_udp_repr r;
        int rc = hp_udp_parse(seg, v->len, &v->a, &r, HP_WIRE_VERIFY_CKSUM);
        if (!l4v_expect(v, rc)) {
            hp_test_fail(__FILE__, __LINE__, "line %d: parse gave %d (%s), want %s", v->line, rc,
                         hp_wire_reason(rc), l4v_str(v, "expect"));
            free(seg);
            break;
        }
        if (rc == 0) {
            ok++;
            HP_CHECK_EQ(r.src_port, l4v_u64(v, "sport"));
            HP_CHECK_EQ(r.dst_port, l4v_u64(v, "dport"));
            HP_CHECK_EQ(r.len, l4v_u64(v, "len"));
            HP_CHECK_EQ(r.payload_len, l4v_u64(v, "plen"));
            HP_CHECK(r.payload == seg + 8);
            /* The accessors agree after check. */
            HP_CHECK_EQ(hp_udp_check(seg, v->len), 0);
            HP_CHECK_EQ(hp_udp_src_port(seg), r.src_port);
            HP_CHECK_EQ(hp_udp_dst_port(seg), r.dst_port);
            HP_CHECK_EQ(hp_udp_len(seg), r.len);
            HP_CHECK_EQ(hp_udp_payload_len(seg), r.payload_len);
            HP_CHECK(hp_udp_payload(seg) == r.payload);
            if (l4v_u64(v, "zero_sum"))
                HP_CHECK_EQ(hp_udp_cksum(seg), 0xFFFF);

            /* Round trip: emit, then parse again. */
            uint8_t out[2048];
            HP_CHECK_EQ(hp_udp_repr_len(&r), r.len);
            int n = hp_udp_emit(&r, &v->a, out, sizeof out);
            HP_REQUIRE_EQ(n, r.len);
            if (l4v_u64(v, "same")) {
                same++;
                HP_CHECK_MEMEQ(out, seg, (size_t)n);
            }
            struct hp_udp_repr r2;
            HP_CHECK_EQ(hp_udp_parse(out, (size_t)n, &v->a, &r2, HP_WIRE_VERIFY_CKSUM), 0);
            HP_CHECK_EQ(r2.src_port, r.src_port);
            HP_CHECK_EQ(r2.dst_port, r.dst_port);
            HP_CHECK_EQ(r2.payload_len, r.payload_len);
            HP_CHECK_MEMEQ(r2.payload, r.payload, r.payload_len);

            /* The same datagram built in place: payload first, header after. */
            uint8_t in_place[2048];
            memcpy(in_place + 8, r.payload, r.payload_len);
            HP_CHECK_EQ(hp_udp_emit_header(&r, &v->a, in_place, 8 + r.payload_len), n);
            HP_CHECK_MEMEQ(in_place, out, (size_t)n);
        }
        free(seg);
    }
    HP_CHECK_GE(ok, 16);
    HP_CHECK_GE(same, 16);
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_truncated_at_every_length)
{
    struct l4v_set *vs = l4v_load("udp4", "udp6");
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        if (!l4v_is(v, "expect", "ok") || v->len > 200)
            continue;
        for (size_t l = 0; l < v->len; l++) {
            uint8_t *seg = l4v_tight(v->l4, l);
            struct hp_udp_repr r;
            HP_CHECK_EQ(hp_udp_check(seg, l), -HP_WIRE_TRUNCATED);
            HP_CHECK_EQ(hp_udp_parse(seg, l, &v->a, &r, 0), -HP_WIRE_TRUNCATED);
            HP_CHECK_EQ(hp_udp_parse(seg, l, &v->a, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_TRUNCATED);
            free(seg);
        }
    }
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_length_field)
{
    for (int fam = 4; fam <= 6; fam += 2) {
        struct hp_l4_addrs a = addrs(fam);
        uint8_t d[64];
        size_t n = build(fam, d, sizeof d, 20);
        HP_REQUIRE_EQ(n, 28);
        struct hp_udp_repr r;
        /* Below the header's own 8 bytes (0: a jumbogram, RFC 2675). */
        for (uint16_t bad = 0; bad < 8; bad++) {
            hp_put_be16(d + 4, bad);
            HP_CHECK_EQ(hp_udp_check(d, n), -HP_WIRE_BAD_LENGTH);
            HP_CHECK_EQ(hp_udp_parse(d, n, &a, &r, 0), -HP_WIRE_BAD_LENGTH);
        }
        /* Beyond the bytes the IP layer gave. */
        hp_put_be16(d + 4, (uint16_t)(n + 1));
        HP_CHECK_EQ(hp_udp_check(d, n), -HP_WIRE_TRUNCATED);
        hp_put_be16(d + 4, 0xFFFF);
        HP_CHECK_EQ(hp_udp_parse(d, n, &a, &r, 0), -HP_WIRE_TRUNCATED);
        /* Exactly the header. */
        n = build(fam, d, sizeof d, 0);
        HP_CHECK_EQ(hp_udp_parse(d, n, &a, &r, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(r.payload_len, 0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 768: octets past the length field (link padding) are not payload, and
 * the checksum covers the length field's octets only. */
HP_TEST(udp_trailing_bytes_ignored)
{
    for (int fam = 4; fam <= 6; fam += 2) {
        struct hp_l4_addrs a = addrs(fam);
        uint8_t d[64];
        size_t n = build(fam, d, sizeof d, 5);
        memset(d + n, 0xEE, 18);
        uint8_t *t = l4v_tight(d, n + 18);
        struct hp_udp_repr r;
        HP_CHECK_EQ(hp_udp_check(t, n + 18), 0);
        HP_CHECK_EQ(hp_udp_parse(t, n + 18, &a, &r, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(r.len, 13);
        HP_CHECK_EQ(r.payload_len, 5);
        HP_CHECK_EQ(hp_udp_payload_len(t), 5);
        free(t);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_zero_checksum)
{
    struct hp_udp_repr r;
    uint8_t d[64];
    /* IPv4: none was sent; accepted with and without verification. */
    struct hp_l4_addrs a4 = addrs(4);
    size_t n = build(4, d, sizeof d, 11);
    hp_put_be16(d + 6, 0);
    HP_CHECK_EQ(hp_udp_parse(d, n, &a4, &r, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(hp_udp_parse(d, n, &a4, &r, 0), 0);
    d[9] ^= 0x55; /* whatever the data */
    HP_CHECK_EQ(hp_udp_parse(d, n, &a4, &r, HP_WIRE_VERIFY_CKSUM), 0);
    /* IPv6: invalid (RFC 8200 8.1), whether or not we verify. */
    struct hp_l4_addrs a6 = addrs(6);
    n = build(6, d, sizeof d, 11);
    hp_put_be16(d + 6, 0);
    HP_CHECK_EQ(hp_udp_parse(d, n, &a6, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
    HP_CHECK_EQ(hp_udp_parse(d, n, &a6, &r, 0), -HP_WIRE_BAD_CHECKSUM);
    /* Without addresses the family is unknown: nothing to say. */
    HP_CHECK_EQ(hp_udp_parse(d, n, NULL, &r, 0), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_bad_checksum)
{
    for (int fam = 4; fam <= 6; fam += 2) {
        struct hp_l4_addrs a = addrs(fam);
        uint8_t d[64];
        size_t n = build(fam, d, sizeof d, 31);
        struct hp_udp_repr r;
        HP_REQUIRE_EQ(hp_udp_parse(d, n, &a, &r, HP_WIRE_VERIFY_CKSUM), 0);
        /* Every byte but the length field (whose change is a length error
         * first) and the destination port's high byte (port 0). */
        for (size_t i = 0; i < n; i++) {
            if (i == 4 || i == 5)
                continue;
            for (int bit = 0; bit < 8; bit += 3) {
                d[i] ^= (uint8_t)(1u << bit);
                int rc = hp_udp_parse(d, n, &a, &r, HP_WIRE_VERIFY_CKSUM);
                bool zero6 = fam == 6 && hp_udp_cksum(d) == 0;
                bool zero4 = fam == 4 && hp_udp_cksum(d) == 0;
                if (!zero4)
                    HP_CHECK_EQ(rc, -HP_WIRE_BAD_CHECKSUM);
                int rc0 = hp_udp_parse(d, n, &a, &r, 0);
                HP_CHECK_EQ(rc0, zero6                     ? -HP_WIRE_BAD_CHECKSUM
                                 : hp_udp_dst_port(d) == 0 ? -HP_WIRE_BAD_FIELD
                                                           : 0);
                d[i] ^= (uint8_t)(1u << bit);
            }
        }
        /* Another source or destination address: the pseudo-header. */
        uint8_t other[16];
        memcpy(other, a.src, fam == 4 ? 4 : 16);
        other[1] ^= 1;
        struct hp_l4_addrs b = {a.family, other, a.dst}, c = {a.family, a.src, other};
        HP_CHECK_EQ(hp_udp_parse(d, n, &b, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
        HP_CHECK_EQ(hp_udp_parse(d, n, &c, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_dst_port_zero)
{
    struct hp_l4_addrs a = addrs(4);
    struct hp_udp_repr r = {.src_port = 1, .dst_port = 0}, p;
    uint8_t d[16];
    HP_REQUIRE_EQ(hp_udp_emit(&r, &a, d, sizeof d), 8);
    HP_CHECK_EQ(hp_udp_parse(d, 8, &a, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_FIELD);
    HP_CHECK_EQ(hp_udp_check(d, 8), 0); /* well formed: the accessors still work */
    /* A source port of 0 is allowed (RFC 768: "optional"). */
    r.src_port = 0;
    r.dst_port = 7;
    HP_REQUIRE_EQ(hp_udp_emit(&r, &a, d, sizeof d), 8);
    HP_CHECK_EQ(hp_udp_parse(d, 8, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(p.src_port, 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_emit_errors)
{
    struct hp_l4_addrs a = addrs(6);
    static uint8_t pl[100], d[200];
    struct hp_udp_repr r = {.src_port = 9, .dst_port = 9, .payload = pl, .payload_len = 100}, p;
    HP_CHECK_EQ(hp_udp_repr_len(&r), 108);
    HP_CHECK_EQ(hp_udp_emit(&r, &a, d, 107), -HP_WIRE_NO_SPACE);
    HP_CHECK_EQ(hp_udp_emit_header(&r, &a, d, 107), -HP_WIRE_NO_SPACE);
    HP_CHECK_EQ(hp_udp_emit(&r, &a, d, 108), 108);
    HP_CHECK_EQ(hp_udp_emit(&r, NULL, d, sizeof d), -HP_WIRE_BAD_ADDRESS);
    struct hp_l4_addrs bad = {5, src6, dst6};
    HP_CHECK_EQ(hp_udp_emit(&r, &bad, d, sizeof d), -HP_WIRE_BAD_ADDRESS);
    HP_CHECK_EQ(hp_udp_parse(d, 108, NULL, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_ADDRESS);
    HP_CHECK_EQ(hp_udp_parse(d, 108, NULL, &p, 0), 0);
    /* The length field is 16 bits. */
    r.payload_len = 65528;
    HP_CHECK_EQ(hp_udp_emit(&r, &a, d, (size_t)1 << 20), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* emit moves the payload, so a payload already sitting after the header
 * (or anywhere overlapping the output) survives. */
HP_TEST(udp_emit_overlapping_payload)
{
    struct hp_l4_addrs a = addrs(4);
    uint8_t d[64], want[64];
    for (int i = 0; i < 40; i++)
        d[8 + i] = want[8 + i] = (uint8_t)(0x30 + i);
    struct hp_udp_repr r = {.src_port = 1234,
                            .dst_port = 4321,
                            .payload = want + 8,
                            .payload_len = 40},
                       p;
    HP_REQUIRE_EQ(hp_udp_emit(&r, &a, want, sizeof want), 48);
    r.payload = d + 8; /* in place */
    HP_REQUIRE_EQ(hp_udp_emit(&r, &a, d, sizeof d), 48);
    HP_CHECK_MEMEQ(d, want, 48);
    /* Shifted: the payload starts 4 bytes into where the header goes. */
    memmove(d + 4, d + 8, 40);
    r.payload = d + 4;
    HP_REQUIRE_EQ(hp_udp_emit(&r, &a, d, sizeof d), 48);
    HP_CHECK_MEMEQ(d, want, 48);
    HP_CHECK_EQ(hp_udp_parse(d, 48, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
