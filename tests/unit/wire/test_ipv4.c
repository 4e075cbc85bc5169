/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4 header view (RFC 791): scapy datagrams, options walked, lengths, fragments, checksum, sources, truncation, emit and round trips. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>
#include <hotpath/wire/ipv4.h>

#include "hp_test.h"
#include "l2l3_vectors.h"

static bool repr_eq(const struct hp_ipv4_repr *a, const struct hp_ipv4_repr *b, bool with_hdr_len)
{
    return memcmp(a->src, b->src, 4) == 0 && memcmp(a->dst, b->dst, 4) == 0 &&
           a->proto == b->proto && a->ttl == b->ttl && a->dscp_ecn == b->dscp_ecn &&
           a->ident == b->ident && a->df == b->df && a->mf == b->mf && a->frag_off == b->frag_off &&
           a->payload_len == b->payload_len && (!with_hdr_len || a->hdr_len == b->hdr_len);
}

static int check_prefix(const uint8_t *pkt, size_t n)
{
    void *base;
    uint8_t *p = l2l3_tight(pkt, n, 0, &base);
    int rc = hp_ipv4_check(p, n);
    free(base);
    return rc;
}

/* Header with the given options (optlen a multiple of 4, at most 40) and
 * payload bytes of zeros after it, checksum set; returns the total length. */
static size_t build(uint8_t *p, const uint8_t *opts, size_t optlen, size_t payload)
{
    size_t hlen = 20 + optlen;
    memset(p, 0, hlen + payload);
    p[0] = (uint8_t)(0x40 | hlen / 4);
    hp_put_be16(p + 2, (uint16_t)(hlen + payload));
    hp_put_be16(p + 4, 0x1234);
    p[8] = 64;
    p[9] = HP_IPPROTO_UDP;
    const uint8_t src[4] = {198, 18, 0, 1}, dst[4] = {198, 18, 0, 2};
    memcpy(p + 12, src, 4);
    memcpy(p + 16, dst, 4);
    if (optlen)
        memcpy(p + 20, opts, optlen);
    uint16_t c = hp_cksum_ipv4_hdr(p, hlen);
    memcpy(p + 10, &c, 2);
    return hlen + payload;
}

HP_TEST(ipv4_vectors)
{
    struct l2l3_vecs *vs = l2l3_load("ipv4");
    HP_REQUIRE(vs != NULL);
    int ok = 0, refused = 0, options = 0, frags = 0, emitted = 0, bad_cksum = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct l2l3_vec *v = &vs->v[i];
        const char *vname = l2l3_get(v, "verify");
        int want_verify = vname ? l2l3_reason(vname) : v->expect;
        for (size_t lead = 0; lead < 4; lead++) {
            void *base;
            uint8_t *p = l2l3_tight(v->data, v->len, lead, &base);
            struct hp_ipv4_repr r, rv;
            int rc = hp_ipv4_check(p, v->len), rp = hp_ipv4_parse(p, v->len, &r, 0);
            int rpv = hp_ipv4_parse(p, v->len, &rv, HP_WIRE_VERIFY_CKSUM);
            if (rc != v->expect || rp != v->expect || rpv != want_verify) {
                hp_test_fail(__FILE__, __LINE__,
                             "line %d: check %d (%s), parse %d, verified %d; want %d (%s), "
                             "verified %d",
                             v->line, rc, hp_wire_reason(rc), rp, rpv, v->expect,
                             hp_wire_reason(v->expect), want_verify);
                free(base);
                break;
            }
            if (rc == 0) {
                struct hp_ipv4_repr want = {
                    .proto = (uint8_t)l2l3_int(v, "proto"),
                    .ttl = (uint8_t)l2l3_int(v, "ttl"),
                    .dscp_ecn = (uint8_t)l2l3_int(v, "tos"),
                    .ident = (uint16_t)l2l3_int(v, "id"),
                    .df = l2l3_int(v, "df") != 0,
                    .mf = l2l3_int(v, "mf") != 0,
                    .frag_off = (uint16_t)l2l3_int(v, "frag"),
                    .payload_len = (uint16_t)l2l3_int(v, "plen"),
                    .hdr_len = (uint8_t)l2l3_int(v, "hlen"),
                };
                HP_REQUIRE(l2l3_bytes(v, "src", want.src, 4) && l2l3_bytes(v, "dst", want.dst, 4));
                if (!repr_eq(&r, &want, true))
                    hp_test_fail(__FILE__, __LINE__, "line %d: parsed fields differ from scapy's",
                                 v->line);
                /* Accessors agree. */
                HP_CHECK_EQ(hp_ipv4_hdr_len(p), r.hdr_len);
                HP_CHECK_EQ(hp_ipv4_ihl(p) * 4, r.hdr_len);
                HP_CHECK_EQ(hp_ipv4_total_len(p), r.hdr_len + r.payload_len);
                HP_CHECK_EQ(hp_ipv4_payload_len(p), r.payload_len);
                HP_CHECK_EQ(hp_ipv4_proto(p), r.proto);
                HP_CHECK_EQ(hp_ipv4_ttl(p), r.ttl);
                HP_CHECK_EQ(hp_ipv4_dscp_ecn(p), r.dscp_ecn);
                HP_CHECK_EQ(hp_ipv4_ident(p), r.ident);
                HP_CHECK_EQ(hp_ipv4_df(p), r.df);
                HP_CHECK_EQ(hp_ipv4_mf(p), r.mf);
                HP_CHECK_EQ(hp_ipv4_frag_off(p), r.frag_off);
                HP_CHECK_EQ(hp_ipv4_is_fragment(p), r.mf || r.frag_off);
                HP_CHECK(hp_ipv4_src_ptr(p) == p + 12 && hp_ipv4_dst_ptr(p) == p + 16);
                HP_CHECK(hp_ipv4_payload(p) == p + r.hdr_len);
                /* Emit: scapy's bytes when scapy wrote no options; always a
                 * header that parses back to the same fields, with hdr_len 20. */
                static uint8_t out[20 + 65535];
                HP_REQUIRE_EQ(hp_ipv4_emit(&r, out, 20), 20);
                if (l2l3_int(v, "emit")) {
                    HP_CHECK_MEMEQ(out, p, 20);
                    emitted++;
                }
                HP_CHECK(hp_cksum_ipv4_hdr_ok(out, 20));
                struct hp_ipv4_repr r2;
                HP_CHECK_EQ(
                    hp_ipv4_parse(out, 20 + (size_t)r.payload_len, &r2, HP_WIRE_VERIFY_CKSUM), 0);
                HP_CHECK(repr_eq(&r, &r2, false));
                HP_CHECK_EQ(r2.hdr_len, 20);
            }
            free(base);
        }
        if (v->expect == 0) {
            ok++;
            options += l2l3_int(v, "hlen") > 20;
            frags += l2l3_int(v, "mf") || l2l3_int(v, "frag");
        } else {
            refused++;
        }
        bad_cksum += want_verify == -HP_WIRE_BAD_CHECKSUM;
    }
    HP_CHECK_GE(ok, 15);
    HP_CHECK_GE(options, 4);
    HP_CHECK_GE(frags, 4);
    HP_CHECK_GE(emitted, 10);
    HP_CHECK_GE(refused, 15);
    HP_CHECK_GE(bad_cksum, 1);
    l2l3_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Every prefix shorter than Total Length is truncated; longer ones (padding) are fine. */
HP_TEST(ipv4_truncated_every_length)
{
    struct l2l3_vecs *vs = l2l3_load("ipv4");
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l2l3_vec *v = &vs->v[i];
        if (v->expect != 0)
            continue;
        size_t total = (size_t)(l2l3_int(v, "hlen") + l2l3_int(v, "plen"));
        for (size_t n = 0; n <= v->len; n++) {
            int rc = check_prefix(v->data, n), want = n < total ? -HP_WIRE_TRUNCATED : 0;
            if (rc != want) {
                hp_test_fail(__FILE__, __LINE__, "line %d cut at %zu of %zu: %d, want %d", v->line,
                             n, total, rc, want);
                break;
            }
        }
    }
    l2l3_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_version_and_ihl)
{
    uint8_t p[80] = {0};
    size_t n = build(p, NULL, 0, 20);
    for (int ver = 0; ver < 16; ver++) {
        p[0] = (uint8_t)(ver << 4 | 5);
        HP_CHECK_EQ(hp_ipv4_check(p, n), ver == 4 ? 0 : -HP_WIRE_BAD_VERSION);
    }
    /* IHL below 5 is impossible; above, the header must fit the bytes and
     * Total Length (here 40). The 20 bytes after the fixed header are zeros:
     * EOL, so as options they are fine. */
    for (int ihl = 0; ihl < 16; ihl++) {
        p[0] = (uint8_t)(0x40 | ihl);
        int want = ihl < 5 ? -HP_WIRE_BAD_LENGTH : ihl * 4 > 40 ? -HP_WIRE_TRUNCATED : 0;
        HP_CHECK_EQ(check_prefix(p, n), want);
        /* With more bytes available than Total Length, a header longer than
         * the datagram is a bad length, not truncation. */
        want = ihl < 5 ? -HP_WIRE_BAD_LENGTH : ihl * 4 > 40 ? -HP_WIRE_BAD_LENGTH : 0;
        HP_CHECK_EQ(hp_ipv4_check(p, sizeof p), want);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_total_length)
{
    uint8_t p[64] = {0};
    build(p, NULL, 0, 20);
    for (unsigned total = 0; total <= 64; total++) {
        hp_put_be16(p + 2, (uint16_t)total);
        int want = total < 20 ? -HP_WIRE_BAD_LENGTH : total > 40 ? -HP_WIRE_TRUNCATED : 0;
        HP_CHECK_EQ(check_prefix(p, 40), want);
        struct hp_ipv4_repr r;
        if (want == 0) {
            HP_CHECK_EQ(hp_ipv4_parse(p, 40, &r, 0), 0);
            HP_CHECK_EQ(r.payload_len, total - 20); /* from Total Length, not len */
        }
    }
    hp_put_be16(p + 2, 0xFFFF);
    HP_CHECK_EQ(hp_ipv4_check(p, 64), -HP_WIRE_TRUNCATED);
    /* With options: Total Length below the header is impossible. */
    const uint8_t opts[4] = {1, 1, 1, 0};
    build(p, opts, 4, 0);
    hp_put_be16(p + 2, 23);
    HP_CHECK_EQ(hp_ipv4_check(p, 24), -HP_WIRE_BAD_LENGTH);
    hp_put_be16(p + 2, 24);
    HP_CHECK_EQ(hp_ipv4_check(p, 24), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* One option of type 0x44 (timestamp) and every length octet, in every
 * header size: lengths 2..room fit; 0, 1 and beyond the header do not. */
HP_TEST(ipv4_options_walk)
{
    uint8_t p[80], opts[40];
    for (size_t optlen = 4; optlen <= 40; optlen += 4) {
        for (size_t at = 0; at < optlen; at++) { /* NOPs first, then the option */
            for (unsigned olen = 0; olen < 256; olen++) {
                memset(opts, 0, sizeof opts);
                memset(opts, 1, at);
                opts[at] = 0x44;
                if (at + 1 < optlen)
                    opts[at + 1] = (uint8_t)olen;
                size_t n = build(p, opts, optlen, 0);
                size_t room = optlen - at;
                int want;
                if (at + 1 >= optlen)
                    want = -HP_WIRE_BAD_OPTION; /* no room for the length octet */
                else if (olen < 2 || olen > room)
                    want = -HP_WIRE_BAD_OPTION;
                else
                    want = 0; /* rest: zeros = EOL */
                int rc = check_prefix(p, n);
                if (rc != want) {
                    hp_test_fail(__FILE__, __LINE__,
                                 "options of %zu, option at %zu with length %u: %d, want %d",
                                 optlen, at, olen, rc, want);
                    return;
                }
            }
        }
    }
    /* After EOL anything goes; NOP runs to the end are fine. */
    const uint8_t eol[8] = {0, 0xFF, 0xFF, 0xFF, 0x44, 0x00, 0xFF, 0x01};
    HP_CHECK_EQ(hp_ipv4_check(p, build(p, eol, 8, 0)), 0);
    const uint8_t nops[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    HP_CHECK_EQ(hp_ipv4_check(p, build(p, nops, 8, 0)), 0);
    /* Two options back to back, the second overrunning by one. */
    const uint8_t two[12] = {0x07, 7, 4, 0, 0, 0, 0, 0x44, 6, 5, 0, 0};
    HP_CHECK_EQ(hp_ipv4_check(p, build(p, two, 12, 0)), -HP_WIRE_BAD_OPTION);
    const uint8_t two_ok[12] = {0x07, 7, 4, 0, 0, 0, 0, 0x44, 5, 5, 0, 0};
    HP_CHECK_EQ(hp_ipv4_check(p, build(p, two_ok, 12, 0)), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_checksum_verify)
{
    uint8_t p[60];
    const uint8_t opts[4] = {0x94, 0x04, 0, 0}; /* Router Alert */
    size_t n = build(p, opts, 4, 8);
    struct hp_ipv4_repr r;
    HP_CHECK_EQ(hp_ipv4_parse(p, n, &r, HP_WIRE_VERIFY_CKSUM), 0);
    /* Every bit of the checksum field, and of fields no other check looks
     * at (ToS, identification, TTL, protocol, destination, the option's
     * value): caught only with the flag. */
    const size_t pos[] = {1, 4, 5, 8, 9, 10, 11, 16, 19, 22, 23};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        for (int bit = 0; bit < 8; bit++) {
            p[pos[i]] ^= (uint8_t)(1u << bit);
            HP_CHECK_EQ(hp_ipv4_parse(p, n, &r, 0), 0);
            HP_CHECK_EQ(hp_ipv4_parse(p, n, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
            p[pos[i]] ^= (uint8_t)(1u << bit);
        }
    }
    /* Structural errors come first: a bad checksum and a bad version report the version. */
    p[10] ^= 1;
    p[0] = 0x66;
    HP_CHECK_EQ(hp_ipv4_parse(p, n, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_VERSION);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_source_addresses)
{
    uint8_t p[40];
    size_t n = build(p, NULL, 0, 0);
    struct hp_ipv4_repr r;
    for (int a = 0; a < 256; a++) {
        p[12] = (uint8_t)a;
        p[13] = p[14] = p[15] = 0xFF;
        /* 224/4 and 255.255.255.255 refused; 240/4 (reserved, not multicast) is not ours to refuse. */
        int want = (a >= 224 && a <= 239) || a == 255 ? -HP_WIRE_BAD_ADDRESS : 0;
        HP_CHECK_EQ(hp_ipv4_parse(p, n, &r, 0), want);
    }
    const uint8_t zero[4] = {0}, bc_subnet[4] = {198, 18, 255, 255};
    memcpy(p + 12, zero, 4); /* 0.0.0.0: DHCP discover */
    HP_CHECK_EQ(hp_ipv4_check(p, n), 0);
    memcpy(p + 12, bc_subnet, 4); /* cannot tell a directed broadcast here */
    HP_CHECK_EQ(hp_ipv4_check(p, n), 0);
    /* Destinations are not checked. */
    memset(p + 12, 10, 4);
    memset(p + 16, 0xFF, 4);
    HP_CHECK_EQ(hp_ipv4_check(p, n), 0);
    p[16] = 224;
    HP_CHECK_EQ(hp_ipv4_check(p, n), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static int check_frag(uint16_t flags_off, size_t payload)
{
    static uint8_t p[20 + 65535];
    size_t n = build(p, NULL, 0, payload);
    hp_put_be16(p + 6, flags_off);
    return hp_ipv4_check(p, n);
}

HP_TEST(ipv4_fragments)
{
    /* More Fragments: data a multiple of 8 (RFC 791 section 3.1). */
    for (size_t len = 0; len <= 40; len++) {
        HP_CHECK_EQ(check_frag(0x2000, len), len % 8 ? -HP_WIRE_BAD_LENGTH : 0);
        HP_CHECK_EQ(check_frag(0x2000 | 7, len), len % 8 ? -HP_WIRE_BAD_LENGTH : 0);
        HP_CHECK_EQ(check_frag(7, len), 0); /* a last fragment may end anywhere */
    }
    /* Reassembled datagram: offset + data + header <= 65535. */
    HP_CHECK_EQ(check_frag(8189, 3), 0); /* 65512 + 3 + 20 = 65535 */
    HP_CHECK_EQ(check_frag(8189, 4), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(check_frag(0x1FFF, 0), -HP_WIRE_BAD_LENGTH);        /* 65528 + 20 */
    HP_CHECK_EQ(check_frag(0x2000 | 8188, 8), 0);                   /* 65504 + 8 + 20 */
    HP_CHECK_EQ(check_frag(0x2000 | 8189, 8), -HP_WIRE_BAD_LENGTH); /* 65512 + 8 + 20 */
    HP_CHECK_EQ(check_frag(0x1000, 65535 - 20), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(check_frag(0, 65535 - 20), 0); /* the largest whole datagram */
    /* DF with MF, and the reserved bit: accepted. */
    HP_CHECK_EQ(check_frag(0x4000 | 0x2000 | 1, 8), 0);
    HP_CHECK_EQ(check_frag(0x8000, 5), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_emit)
{
    struct hp_ipv4_repr r = {
        .src = {198, 18, 1, 2},
        .dst = {198, 19, 3, 4},
        .proto = HP_IPPROTO_TCP,
        .ttl = 63,
        .dscp_ecn = 0xB9,
        .ident = 0xBEEF,
        .df = true,
        .mf = true,
        .frag_off = 1480,
        .payload_len = 1480,
        .hdr_len = 60, /* ignored */
    };
    static uint8_t out[20 + 1480];
    for (size_t cap = 0; cap < 20; cap++) {
        memset(out, 0x5C, 24);
        HP_CHECK_EQ(hp_ipv4_emit(&r, out, cap), -HP_WIRE_NO_SPACE);
        for (size_t i = 0; i < 24; i++)
            HP_CHECK_EQ(out[i], 0x5C);
    }
    HP_CHECK_EQ(hp_ipv4_repr_len(&r), 20);
    HP_REQUIRE_EQ(hp_ipv4_emit(&r, out, 20), 20);
    const uint8_t want[12] = {0x45, 0xB9, 0x05, 0xDC, 0xBE, 0xEF, 0x60, 0xB9, 63, 6};
    HP_CHECK_MEMEQ(out, want, 10);
    HP_CHECK(hp_cksum_ipv4_hdr_ok(out, 20));
    struct hp_ipv4_repr r2;
    HP_CHECK_EQ(hp_ipv4_parse(out, sizeof out, &r2, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(repr_eq(&r, &r2, false));
    HP_CHECK_EQ(r2.hdr_len, 20);
    /* Fields that cannot be encoded. */
    struct hp_ipv4_repr bad = r;
    bad.payload_len = 65535 - 19;
    HP_CHECK_EQ(hp_ipv4_emit(&bad, out, 20), -HP_WIRE_BAD_LENGTH);
    bad.payload_len = 65535 - 20;
    HP_CHECK_EQ(hp_ipv4_emit(&bad, out, 20), 20);
    bad = r;
    bad.frag_off = 1481;
    HP_CHECK_EQ(hp_ipv4_emit(&bad, out, 20), -HP_WIRE_BAD_FIELD);
    bad.frag_off = 65528;
    HP_CHECK_EQ(hp_ipv4_emit(&bad, out, 20), 20);
    HP_CHECK_EQ(hp_ipv4_frag_off(out), 65528);
    /* Unaligned output, and an all-zero repr. */
    struct hp_ipv4_repr z = {0};
    HP_CHECK_EQ(hp_ipv4_emit(&z, out + 1, 20), 20);
    HP_CHECK(hp_cksum_ipv4_hdr_ok(out + 1, 20));
    HP_CHECK_EQ(hp_ipv4_parse(out + 1, 20, &r2, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(repr_eq(&z, &r2, false));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_address_helpers)
{
    const uint8_t mc_lo[4] = {224, 0, 0, 0}, mc_hi[4] = {239, 255, 255, 255};
    const uint8_t below[4] = {223, 255, 255, 255}, above[4] = {240, 0, 0, 0};
    const uint8_t bcast[4] = {255, 255, 255, 255}, nearly[4] = {255, 255, 255, 254};
    const uint8_t lo[4] = {127, 0, 0, 1}, lo2[4] = {127, 255, 0, 9}, zero[4] = {0, 0, 0, 0};
    const uint8_t one[4] = {0, 0, 0, 1};
    HP_CHECK(hp_ipv4_is_multicast(mc_lo) && hp_ipv4_is_multicast(mc_hi));
    HP_CHECK(!hp_ipv4_is_multicast(below) && !hp_ipv4_is_multicast(above));
    HP_CHECK(hp_ipv4_is_broadcast(bcast) && !hp_ipv4_is_broadcast(nearly));
    HP_CHECK(!hp_ipv4_is_multicast(bcast));
    HP_CHECK(hp_ipv4_is_loopback(lo) && hp_ipv4_is_loopback(lo2) && !hp_ipv4_is_loopback(zero));
    HP_CHECK(hp_ipv4_is_unspecified(zero) && !hp_ipv4_is_unspecified(one));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
