/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 view (RFC 8200): scapy packets, the extension header walk and its limits, options, fragments, sources, truncation, emit and address helpers. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/pool.h>
#include <hotpath/wire/ipv6.h>

#include "hp_test.h"
#include "l2l3_vectors.h"

#define UDP 17

static const uint8_t SRC[16] = {0x20, 0x01, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
static const uint8_t DST[16] = {0x20, 0x01, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};

/* Big enough for the largest packet (40 + 65535) plus slack. */
static uint8_t buf[70000];

static bool repr_eq(const struct hp_ipv6_repr *a, const struct hp_ipv6_repr *b)
{
    return memcmp(a->src, b->src, 16) == 0 && memcmp(a->dst, b->dst, 16) == 0 &&
           a->next_header == b->next_header && a->hop_limit == b->hop_limit &&
           a->traffic_class == b->traffic_class && a->flow_label == b->flow_label &&
           a->payload_len == b->payload_len && a->l4_off == b->l4_off &&
           a->has_frag == b->has_frag && a->frag_off == b->frag_off && a->mf == b->mf &&
           a->frag_id == b->frag_id && a->unfrag_len == b->unfrag_len &&
           a->frag_next == b->frag_next && a->has_hbh == b->has_hbh;
}

static int check_prefix(const uint8_t *pkt, size_t n)
{
    void *base;
    uint8_t *p = l2l3_tight(pkt, n, 0, &base);
    int rc = hp_ipv6_check(p, n);
    free(base);
    return rc;
}

/* The fixed header, Next Header nh, Payload Length set by finish(). */
static size_t start(uint8_t *p, uint8_t nh)
{
    memset(p, 0, 40);
    hp_put_be32(p, 0x6ABCDEF1u); /* traffic class 0xAB, flow label 0xCDEF1 */
    p[6] = nh;
    p[7] = 64;
    memcpy(p + 8, SRC, 16);
    memcpy(p + 24, DST, 16);
    return 40;
}

static size_t finish(uint8_t *p, size_t len)
{
    hp_put_be16(p + 4, (uint16_t)(len - 40));
    return len;
}

/* An options header (Hop-by-Hop or Destination) of 8 * units bytes, filled
 * with one PadN. */
static size_t opt_hdr(uint8_t *p, size_t off, uint8_t next, unsigned units)
{
    size_t hlen = (size_t)units * 8;
    p[off] = next;
    p[off + 1] = (uint8_t)(units - 1);
    p[off + 2] = 1;
    p[off + 3] = (uint8_t)(hlen - 4);
    memset(p + off + 4, 0, hlen - 4);
    return off + hlen;
}

/* An 8-byte header of the given type with the given next header: options
 * headers padded, Routing type 4 with Segments Left 0, an atomic Fragment,
 * or (16 bytes) an AH with a 4-byte ICV. */
static size_t ext(uint8_t *p, size_t off, uint8_t type, uint8_t next)
{
    switch (type) {
    case HP_IPPROTO_HOPOPTS:
    case HP_IPPROTO_DSTOPTS:
        return opt_hdr(p, off, next, 1);
    case HP_IPPROTO_ROUTING:
        memset(p + off, 0, 8);
        p[off] = next;
        p[off + 2] = 4;
        return off + 8;
    case HP_IPPROTO_FRAGMENT:
        memset(p + off, 0, 8);
        p[off] = next;
        hp_put_be32(p + off + 4, 0xF00DF00Du);
        return off + 8;
    default: /* AH */
        memset(p + off, 0, 16);
        p[off] = next;
        p[off + 1] = 2;
        return off + 16;
    }
}

/* A packet with the given chain of extension headers, then l4len bytes of
 * an upper layer with protocol upper. Returns its length. */
static size_t chain(uint8_t *p, const uint8_t *types, size_t n, uint8_t upper, size_t l4len)
{
    size_t off = start(p, n ? types[0] : upper);
    for (size_t i = 0; i < n; i++)
        off = ext(p, off, types[i], i + 1 < n ? types[i + 1] : upper);
    memset(p + off, 0xEE, l4len);
    return finish(p, off + l4len);
}

/* Re-emit a parsed packet without its extension headers (a fixed header, or
 * a fixed and a Fragment header), followed by what came after the walk, and
 * return what parsing that must give. */
static size_t reemit(const uint8_t *p, const struct hp_ipv6_repr *r, uint8_t *out,
                     struct hp_ipv6_repr *want)
{
    *want = *r;
    size_t end = 40 + (size_t)r->payload_len;
    if (r->has_frag) {
        size_t data = r->unfrag_len + 8u;
        want->payload_len = (uint16_t)(8 + end - data);
        want->unfrag_len = 40;
        want->l4_off = (uint16_t)(48 + r->l4_off - data);
        want->has_hbh = false;
        if (hp_ipv6_emit_frag(want, out, 48) != 48)
            return 0;
        memcpy(out + 48, p + data, end - data);
        return 48 + end - data;
    }
    want->payload_len = (uint16_t)(end - r->l4_off);
    want->l4_off = 40;
    want->has_hbh = false;
    if (hp_ipv6_emit(want, out, 40) != 40)
        return 0;
    memcpy(out + 40, p + r->l4_off, end - r->l4_off);
    return 40 + end - r->l4_off;
}

HP_TEST(ipv6_vectors)
{
    struct l2l3_vecs *vs = l2l3_load("ipv6");
    HP_REQUIRE(vs != NULL);
    int ok = 0, refused = 0, ext = 0, frags = 0, emitted = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct l2l3_vec *v = &vs->v[i];
        for (size_t lead = 0; lead < 4; lead++) {
            void *base;
            uint8_t *p = l2l3_tight(v->data, v->len, lead, &base);
            struct hp_ipv6_repr r;
            int rc = hp_ipv6_check(p, v->len), rp = hp_ipv6_parse(p, v->len, &r);
            if (rc != v->expect || rp != v->expect) {
                hp_test_fail(__FILE__, __LINE__, "line %d: check %d (%s), parse %d, want %d (%s)",
                             v->line, rc, hp_wire_reason(rc), rp, v->expect,
                             hp_wire_reason(v->expect));
                free(base);
                break;
            }
            if (rc == 0) {
                struct hp_ipv6_repr want = {
                    .next_header = (uint8_t)l2l3_int(v, "nh"),
                    .hop_limit = (uint8_t)l2l3_int(v, "hlim"),
                    .traffic_class = (uint8_t)l2l3_int(v, "tc"),
                    .flow_label = (uint32_t)l2l3_int(v, "fl"),
                    .payload_len = (uint16_t)l2l3_int(v, "plen"),
                    .l4_off = (uint16_t)l2l3_int(v, "l4off"),
                    .has_frag = l2l3_int(v, "frag") != 0,
                    .has_hbh = l2l3_int(v, "hbh") != 0,
                };
                if (want.has_frag) {
                    want.frag_off = (uint16_t)l2l3_int(v, "fragoff");
                    want.mf = l2l3_int(v, "mf") != 0;
                    want.frag_id = (uint32_t)l2l3_int(v, "fragid");
                    want.unfrag_len = (uint16_t)l2l3_int(v, "unfrag");
                    want.frag_next = (uint8_t)l2l3_int(v, "fragnext");
                }
                HP_REQUIRE(l2l3_bytes(v, "src", want.src, 16) &&
                           l2l3_bytes(v, "dst", want.dst, 16));
                if (!repr_eq(&r, &want))
                    hp_test_fail(__FILE__, __LINE__,
                                 "line %d: parsed fields differ from scapy's (nh %u/%u, l4_off "
                                 "%u/%u, frag %d/%d)",
                                 v->line, r.next_header, want.next_header, r.l4_off, want.l4_off,
                                 r.has_frag, want.has_frag);
                HP_CHECK_EQ(hp_ipv6_traffic_class(p), r.traffic_class);
                HP_CHECK_EQ(hp_ipv6_flow_label(p), r.flow_label);
                HP_CHECK_EQ(hp_ipv6_payload_len(p), r.payload_len);
                HP_CHECK_EQ(hp_ipv6_hop_limit(p), r.hop_limit);
                HP_CHECK(hp_ipv6_src_ptr(p) == p + 8 && hp_ipv6_dst_ptr(p) == p + 24);
                HP_CHECK_EQ(hp_ipv6_next_header(p), p[6]);
                HP_CHECK_LE(r.l4_off, 40 + r.payload_len);
                /* Emit: scapy's bytes for a packet without extension headers
                 * (or with just a Fragment header). */
                uint8_t hdr[48];
                if (l2l3_int(v, "emit")) {
                    if (r.has_frag) {
                        HP_CHECK_EQ(r.unfrag_len, 40);
                        HP_REQUIRE_EQ(hp_ipv6_emit_frag(&r, hdr, sizeof hdr), 48);
                        HP_CHECK_MEMEQ(hdr, p, 48);
                    } else {
                        HP_CHECK_EQ(r.l4_off, 40);
                        HP_CHECK_EQ(hp_ipv6_repr_len(&r), 40);
                        HP_REQUIRE_EQ(hp_ipv6_emit(&r, hdr, sizeof hdr), 40);
                        HP_CHECK_MEMEQ(hdr, p, 40);
                    }
                    emitted++;
                }
                /* Round trip without the other extension headers. */
                struct hp_ipv6_repr want2, r2;
                size_t n2 = reemit(p, &r, buf, &want2);
                HP_REQUIRE(n2 > 0);
                HP_CHECK_EQ(hp_ipv6_parse(buf, n2, &r2), 0);
                HP_CHECK(repr_eq(&r2, &want2));
            }
            free(base);
        }
        if (v->expect == 0) {
            ok++;
            ext += l2l3_int(v, "l4off") > 40 && !l2l3_int(v, "frag");
            frags += (int)l2l3_int(v, "frag");
        } else {
            refused++;
        }
    }
    HP_CHECK_GE(ok, 15);
    HP_CHECK_GE(ext, 5);
    HP_CHECK_GE(frags, 4);
    HP_CHECK_GE(emitted, 8);
    HP_CHECK_GE(refused, 15);
    l2l3_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Every prefix shorter than 40 + Payload Length is truncated. */
HP_TEST(ipv6_truncated_every_length)
{
    struct l2l3_vecs *vs = l2l3_load("ipv6");
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l2l3_vec *v = &vs->v[i];
        if (v->expect != 0)
            continue;
        size_t total = 40 + (size_t)l2l3_int(v, "plen");
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

HP_TEST(ipv6_fixed_header)
{
    uint8_t p[64];
    size_t n = chain(p, NULL, 0, UDP, 8);
    for (int ver = 0; ver < 16; ver++) {
        p[0] = (uint8_t)(ver << 4 | (p[0] & 15));
        HP_CHECK_EQ(hp_ipv6_check(p, n), ver == 6 ? 0 : -HP_WIRE_BAD_VERSION);
    }
    p[0] = (uint8_t)(6 << 4 | (p[0] & 15));
    /* Payload Length against the bytes present; bytes after it are padding. */
    for (unsigned plen = 0; plen < 20; plen++) {
        hp_put_be16(p + 4, (uint16_t)plen);
        struct hp_ipv6_repr r;
        int want = plen > 8 ? -HP_WIRE_TRUNCATED : 0;
        HP_CHECK_EQ(check_prefix(p, n), want);
        if (want == 0) {
            HP_CHECK_EQ(hp_ipv6_parse(p, n, &r), 0);
            HP_CHECK_EQ(r.payload_len, plen);
            HP_CHECK_EQ(r.l4_off, 40);
            HP_CHECK_EQ(r.next_header, UDP);
            HP_CHECK_EQ(r.traffic_class, 0xAB);
            HP_CHECK_EQ(r.flow_label, 0xCDEF1);
            HP_CHECK(!r.has_frag && !r.has_hbh);
        }
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_each_extension_header)
{
    const uint8_t types[] = {HP_IPPROTO_HOPOPTS, HP_IPPROTO_DSTOPTS, HP_IPPROTO_ROUTING,
                             HP_IPPROTO_FRAGMENT, HP_IPPROTO_AH};
    const size_t sizes[] = {8, 8, 8, 8, 16};
    for (size_t i = 0; i < sizeof types; i++) {
        size_t n = chain(buf, &types[i], 1, UDP, 12);
        struct hp_ipv6_repr r;
        HP_CHECK_EQ(hp_ipv6_parse(buf, n, &r), 0);
        HP_CHECK_EQ(r.next_header, UDP);
        HP_CHECK_EQ(r.l4_off, 40 + sizes[i]);
        HP_CHECK_EQ(r.has_hbh, types[i] == HP_IPPROTO_HOPOPTS);
        HP_CHECK_EQ(r.has_frag, types[i] == HP_IPPROTO_FRAGMENT);
        if (r.has_frag) { /* atomic */
            HP_CHECK(!r.mf);
            HP_CHECK_EQ(r.frag_off, 0);
            HP_CHECK_EQ(r.frag_id, 0xF00DF00Du);
            HP_CHECK_EQ(r.unfrag_len, 40);
            HP_CHECK_EQ(r.frag_next, UDP);
        }
    }
    /* Everything at once, in the order RFC 8200 section 4.1 recommends. */
    const uint8_t all[] = {HP_IPPROTO_HOPOPTS,  HP_IPPROTO_DSTOPTS, HP_IPPROTO_ROUTING,
                           HP_IPPROTO_FRAGMENT, HP_IPPROTO_AH,      HP_IPPROTO_DSTOPTS};
    size_t n = chain(buf, all, sizeof all, HP_IPPROTO_ICMPV6, 8);
    struct hp_ipv6_repr r;
    HP_CHECK_EQ(hp_ipv6_parse(buf, n, &r), 0);
    HP_CHECK_EQ(r.next_header, HP_IPPROTO_ICMPV6);
    HP_CHECK_EQ(r.l4_off, 40 + 8 + 8 + 8 + 8 + 16 + 8);
    HP_CHECK(r.has_hbh && r.has_frag);
    HP_CHECK_EQ(r.unfrag_len, 64);
    HP_CHECK_EQ(r.frag_next, HP_IPPROTO_AH);
    /* No Next Header: whatever follows is ignored (RFC 8200 section 4.7). */
    const uint8_t dst[] = {HP_IPPROTO_DSTOPTS};
    n = chain(buf, dst, 1, HP_IPPROTO_NONE, 5);
    buf[48] = HP_IPPROTO_HOPOPTS; /* looks like a header; is not one */
    HP_CHECK_EQ(hp_ipv6_parse(buf, n, &r), 0);
    HP_CHECK_EQ(r.next_header, HP_IPPROTO_NONE);
    HP_CHECK_EQ(r.l4_off, 48);
    /* ESP: encrypted from here on. */
    n = chain(buf, dst, 1, HP_IPPROTO_ESP, 24);
    HP_CHECK_EQ(hp_ipv6_check(buf, n), -HP_WIRE_UNSUPPORTED);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_hop_by_hop_only_first)
{
    const uint8_t second[] = {HP_IPPROTO_DSTOPTS, HP_IPPROTO_HOPOPTS};
    HP_CHECK_EQ(hp_ipv6_check(buf, chain(buf, second, 2, UDP, 8)), -HP_WIRE_BAD_FIELD);
    const uint8_t twice[] = {HP_IPPROTO_HOPOPTS, HP_IPPROTO_HOPOPTS};
    HP_CHECK_EQ(hp_ipv6_check(buf, chain(buf, twice, 2, UDP, 8)), -HP_WIRE_BAD_FIELD);
    const uint8_t after_frag[] = {HP_IPPROTO_FRAGMENT, HP_IPPROTO_HOPOPTS};
    HP_CHECK_EQ(hp_ipv6_check(buf, chain(buf, after_frag, 2, UDP, 8)), -HP_WIRE_BAD_FIELD);
    /* Destination options may repeat (RFC 8200 section 4.1). */
    const uint8_t dst2[] = {HP_IPPROTO_HOPOPTS, HP_IPPROTO_DSTOPTS, HP_IPPROTO_DSTOPTS};
    HP_CHECK_EQ(hp_ipv6_check(buf, chain(buf, dst2, 3, UDP, 8)), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_chain_limit)
{
    uint8_t types[HP_IPV6_MAX_EXT_HDRS + 2];
    const uint8_t mix[] = {HP_IPPROTO_DSTOPTS, HP_IPPROTO_ROUTING, HP_IPPROTO_AH};
    for (size_t n = 1; n <= HP_IPV6_MAX_EXT_HDRS + 1; n++) {
        for (size_t i = 0; i < n; i++)
            types[i] = mix[i % 3];
        size_t len = chain(buf, types, n, UDP, 8);
        int want = n <= HP_IPV6_MAX_EXT_HDRS ? 0 : -HP_WIRE_UNSUPPORTED;
        HP_CHECK_EQ(hp_ipv6_check(buf, len), want);
    }
    /* The longest chain the limit allows: 16 headers of 2048 bytes, so
     * l4_off is still exact in 16 bits. */
    size_t off = start(buf, HP_IPPROTO_DSTOPTS);
    for (unsigned i = 0; i < HP_IPV6_MAX_EXT_HDRS; i++)
        off = opt_hdr(buf, off, i + 1 < HP_IPV6_MAX_EXT_HDRS ? HP_IPPROTO_DSTOPTS : UDP, 256);
    memset(buf + off, 0, 8);
    size_t n = finish(buf, off + 8);
    struct hp_ipv6_repr r;
    HP_CHECK_EQ(hp_ipv6_parse(buf, n, &r), 0);
    HP_CHECK_EQ(r.l4_off, 40 + 16 * 2048);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A Destination Options header of 16 bytes then 8 bytes of UDP; Payload
 * Length from 0 up: every length cutting into the header is an overrun. */
HP_TEST(ipv6_header_overrunning_payload)
{
    const uint8_t types[] = {HP_IPPROTO_DSTOPTS, HP_IPPROTO_ROUTING, HP_IPPROTO_FRAGMENT,
                             HP_IPPROTO_AH, HP_IPPROTO_HOPOPTS};
    for (size_t t = 0; t < sizeof types; t++) {
        size_t off = start(buf, types[t]);
        size_t hend;
        if (types[t] == HP_IPPROTO_DSTOPTS || types[t] == HP_IPPROTO_HOPOPTS) {
            hend = opt_hdr(buf, off, UDP, 2);
        } else {
            hend = ext(buf, off, types[t], UDP);
            if (types[t] == HP_IPPROTO_ROUTING) { /* make it 24 bytes */
                buf[off + 1] = 2;
                memset(buf + hend, 0, 16);
                hend += 16;
            }
        }
        memset(buf + hend, 0, 8);
        for (size_t plen = 0; plen <= hend - 40 + 8; plen++) {
            hp_put_be16(buf + 4, (uint16_t)plen);
            int rc = hp_ipv6_check(buf, hend + 8);
            int want = plen < hend - 40 ? -HP_WIRE_BAD_OPTION : 0;
            /* An atomic fragment header cut short is still an overrun; an
             * AH cut short too. */
            if (rc != want) {
                hp_test_fail(__FILE__, __LINE__, "header %u, Payload Length %zu: %d, want %d",
                             types[t], plen, rc, want);
                break;
            }
        }
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The options of an options header, n bytes after the two-byte header
 * fields, in an 8 * units header. */
static int check_options(uint8_t type, const uint8_t *opts, size_t n)
{
    size_t units = (n + 2 + 7) / 8;
    size_t off = start(buf, type);
    buf[off] = UDP;
    buf[off + 1] = (uint8_t)(units - 1);
    memset(buf + off + 2, 0, units * 8 - 2); /* the rest: Pad1s */
    memcpy(buf + off + 2, opts, n);
    off += units * 8;
    memset(buf + off, 0, 8);
    return hp_ipv6_check(buf, finish(buf, off + 8));
}

HP_TEST(ipv6_options)
{
    const uint8_t hdrs[] = {HP_IPPROTO_HOPOPTS, HP_IPPROTO_DSTOPTS};
    for (size_t h = 0; h < 2; h++) {
        uint8_t t = hdrs[h];
        const uint8_t pad1s[6] = {0};
        HP_CHECK_EQ(check_options(t, pad1s, 6), 0);
        const uint8_t padn[6] = {1, 4, 0, 0, 0, 0};
        HP_CHECK_EQ(check_options(t, padn, 6), 0);
        const uint8_t padn_over[6] = {1, 5, 0, 0, 0, 0};
        HP_CHECK_EQ(check_options(t, padn_over, 6), -HP_WIRE_BAD_OPTION);
        const uint8_t padn_nolen[6] = {0, 0, 0, 0, 0, 1};
        HP_CHECK_EQ(check_options(t, padn_nolen, 6), -HP_WIRE_BAD_OPTION);
        const uint8_t ra[6] = {5, 2, 0, 0, 1, 0}; /* Router Alert, then PadN of 0 */
        HP_CHECK_EQ(check_options(t, ra, 6), 0);
        /* Unknown option types: the two high-order bits decide (RFC 8200 4.2). */
        for (unsigned otype = 2; otype < 256; otype++) {
            if (otype == 5)
                continue;
            const uint8_t o[6] = {(uint8_t)otype, 4, 1, 2, 3, 4};
            int want = otype >> 6 == 0 ? 0 : -HP_WIRE_BAD_OPTION;
            int rc = check_options(t, o, 6);
            if (rc != want) {
                hp_test_fail(__FILE__, __LINE__, "header %u, option type 0x%02x: %d, want %d", t,
                             otype, rc, want);
                break;
            }
        }
        /* Data length against the header's end, at every length. */
        for (unsigned dlen = 0; dlen < 256; dlen++) {
            const uint8_t o[14] = {0x1E, (uint8_t)dlen};
            HP_CHECK_EQ(check_options(t, o, 14), dlen <= 12 ? 0 : -HP_WIRE_BAD_OPTION);
        }
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_jumbogram)
{
    /* Payload Length 0 and a Jumbo Payload option (RFC 2675): unsupported. */
    const uint8_t jumbo[6] = {0xC2, 4, 0x00, 0x01, 0x11, 0x70};
    check_options(HP_IPPROTO_HOPOPTS, jumbo, 6);
    size_t n = 40 + 8 + 8;
    hp_put_be16(buf + 4, 0);
    HP_CHECK_EQ(hp_ipv6_check(buf, n), -HP_WIRE_UNSUPPORTED);
    /* The same header with a real Payload Length: an error (RFC 2675 section 3). */
    hp_put_be16(buf + 4, 16);
    HP_CHECK_EQ(hp_ipv6_check(buf, n), -HP_WIRE_BAD_OPTION);
    /* Payload Length 0, a Hop-by-Hop header without the option: overrun. */
    const uint8_t ra[6] = {5, 2, 0, 0, 1, 0};
    check_options(HP_IPPROTO_HOPOPTS, ra, 6);
    hp_put_be16(buf + 4, 0);
    HP_CHECK_EQ(hp_ipv6_check(buf, n), -HP_WIRE_BAD_OPTION);
    /* Payload Length 0 and the header not there at all. */
    HP_CHECK_EQ(hp_ipv6_check(buf, 40), -HP_WIRE_BAD_OPTION);
    HP_CHECK_EQ(hp_ipv6_check(buf, 47), -HP_WIRE_BAD_OPTION);
    /* A Jumbo option in a Destination Options header is never valid. */
    check_options(HP_IPPROTO_DSTOPTS, jumbo, 6);
    HP_CHECK_EQ(hp_ipv6_check(buf, n), -HP_WIRE_BAD_OPTION);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_routing)
{
    const uint8_t rt[] = {HP_IPPROTO_ROUTING};
    const uint8_t rtypes[] = {0, 2, 3, 4, 253, 255};
    for (size_t i = 0; i < sizeof rtypes; i++) {
        size_t n = chain(buf, rt, 1, UDP, 8);
        buf[42] = rtypes[i];
        /* Segments Left 0: ignored whatever the type (RFC 8200 4.4, RFC 5095 3). */
        HP_CHECK_EQ(hp_ipv6_check(buf, n), 0);
        for (unsigned sl = 1; sl < 256; sl += 50) {
            buf[43] = (uint8_t)sl;
            HP_CHECK_EQ(hp_ipv6_check(buf, n),
                        rtypes[i] == 0 ? -HP_WIRE_BAD_FIELD : -HP_WIRE_UNSUPPORTED);
        }
        buf[43] = 0;
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A fixed header, optionally a Hop-by-Hop header, a Fragment header, data. */
static size_t frag_pkt(bool hbh, uint16_t off_bytes, bool mf, size_t data)
{
    size_t off = start(buf, hbh ? HP_IPPROTO_HOPOPTS : HP_IPPROTO_FRAGMENT);
    if (hbh)
        off = opt_hdr(buf, off, HP_IPPROTO_FRAGMENT, 1);
    buf[off] = UDP;
    buf[off + 1] = 0;
    hp_put_be16(buf + off + 2, (uint16_t)(off_bytes | (mf ? 1 : 0)));
    hp_put_be32(buf + off + 4, 0xCAFE0001u);
    memset(buf + off + 8, 0x77, data);
    return finish(buf, off + 8 + data);
}

HP_TEST(ipv6_fragments)
{
    struct hp_ipv6_repr r;
    /* First, middle and last: the walk stops at the Fragment header. */
    const struct {
        uint16_t off;
        bool mf;
    } kinds[] = {{0, true}, {1448, true}, {2896, false}};
    for (size_t k = 0; k < 3; k++) {
        size_t n = frag_pkt(false, kinds[k].off, kinds[k].mf, 64);
        HP_REQUIRE_EQ(hp_ipv6_parse(buf, n, &r), 0);
        HP_CHECK_EQ(r.next_header, HP_IPPROTO_FRAGMENT);
        HP_CHECK_EQ(r.l4_off, 48);
        HP_CHECK(r.has_frag);
        HP_CHECK_EQ(r.frag_off, kinds[k].off);
        HP_CHECK_EQ(r.mf, kinds[k].mf);
        HP_CHECK_EQ(r.frag_id, 0xCAFE0001u);
        HP_CHECK_EQ(r.unfrag_len, 40);
        HP_CHECK_EQ(r.frag_next, UDP);
    }
    /* Behind a Hop-by-Hop header. */
    HP_REQUIRE_EQ(hp_ipv6_parse(buf, frag_pkt(true, 8, true, 16), &r), 0);
    HP_CHECK_EQ(r.unfrag_len, 48);
    HP_CHECK_EQ(r.l4_off, 56);
    HP_CHECK(r.has_hbh);
    /* Reserved fields are ignored on reception (RFC 8200 section 4.5). */
    size_t n = frag_pkt(false, 16, true, 8);
    buf[41] = 0xFF;
    buf[43] |= 0x06;
    HP_REQUIRE_EQ(hp_ipv6_parse(buf, n, &r), 0);
    HP_CHECK_EQ(r.frag_off, 16);
    HP_CHECK(r.mf);
    /* M set: data a multiple of 8. The last fragment: any length. */
    for (size_t data = 0; data <= 24; data++) {
        HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(false, 8, true, data)),
                    data % 8 ? -HP_WIRE_BAD_LENGTH : 0);
        HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(false, 8, false, data)), 0);
    }
    /* Reassembled Payload Length at most 65535: per-fragment headers after
     * the fixed header + offset + data. */
    HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(false, 65512, false, 23)), 0);
    HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(false, 65512, false, 24)), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(true, 65512, false, 15)), 0);
    HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(true, 65512, false, 16)), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(hp_ipv6_check(buf, frag_pkt(false, 65528, true, 8)), -HP_WIRE_BAD_LENGTH);
    /* A second Fragment header after an atomic one. */
    const uint8_t two[] = {HP_IPPROTO_FRAGMENT, HP_IPPROTO_FRAGMENT};
    HP_CHECK_EQ(hp_ipv6_check(buf, chain(buf, two, 2, UDP, 8)), -HP_WIRE_UNSUPPORTED);
    /* After a non-atomic one, what follows is data, even if it looks like headers. */
    n = frag_pkt(false, 0, true, 16);
    buf[40] = HP_IPPROTO_HOPOPTS;
    buf[48] = 0xFF;
    buf[49] = 0xFF;
    HP_CHECK_EQ(hp_ipv6_parse(buf, n, &r), 0);
    HP_CHECK_EQ(r.frag_next, HP_IPPROTO_HOPOPTS);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_authentication_header)
{
    const uint8_t ah[] = {HP_IPPROTO_AH};
    for (unsigned pl = 0; pl < 12; pl++) {
        size_t n = chain(buf, ah, 1, UDP, 64);
        buf[41] = (uint8_t)pl;
        size_t hlen = (pl + 2) * 4;
        int want = hlen < 12 || hlen % 8 ? -HP_WIRE_BAD_LENGTH : 0;
        struct hp_ipv6_repr r;
        int rc = hp_ipv6_parse(buf, n, &r);
        HP_CHECK_EQ(rc, want);
        if (rc == 0)
            HP_CHECK_EQ(r.l4_off, 40 + hlen);
    }
    /* Longer than the payload. */
    size_t n = chain(buf, ah, 1, UDP, 8);
    buf[41] = 6; /* 32 bytes, 24 present */
    HP_CHECK_EQ(hp_ipv6_check(buf, n), -HP_WIRE_BAD_OPTION);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_source_addresses)
{
    uint8_t p[48];
    size_t n = chain(p, NULL, 0, UDP, 8);
    for (int b = 0; b < 256; b++) {
        p[8] = (uint8_t)b;
        HP_CHECK_EQ(hp_ipv6_check(p, n), b == 0xFF ? -HP_WIRE_BAD_ADDRESS : 0);
    }
    memset(p + 8, 0, 16); /* :: (duplicate address detection) */
    HP_CHECK_EQ(hp_ipv6_check(p, n), 0);
    memset(p + 24, 0xFF, 16); /* destinations are not checked */
    HP_CHECK_EQ(hp_ipv6_check(p, n), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_emit)
{
    struct hp_ipv6_repr r = {.next_header = UDP,
                             .hop_limit = 255,
                             .traffic_class = 0xE3,
                             .flow_label = 0x12345,
                             .payload_len = 1232};
    memcpy(r.src, SRC, 16);
    memcpy(r.dst, DST, 16);
    uint8_t out[64];
    for (size_t cap = 0; cap < 40; cap++) {
        memset(out, 0x5C, sizeof out);
        HP_CHECK_EQ(hp_ipv6_emit(&r, out, cap), -HP_WIRE_NO_SPACE);
        HP_CHECK_EQ(out[0], 0x5C);
    }
    HP_CHECK_EQ(hp_ipv6_repr_len(&r), 40);
    HP_REQUIRE_EQ(hp_ipv6_emit(&r, out + 1, 40), 40);
    const uint8_t want[8] = {0x6E, 0x31, 0x23, 0x45, 0x04, 0xD0, UDP, 255};
    HP_CHECK_MEMEQ(out + 1, want, 8);
    HP_CHECK_MEMEQ(out + 9, SRC, 16);
    HP_CHECK_MEMEQ(out + 25, DST, 16);
    r.flow_label = 0x100000;
    HP_CHECK_EQ(hp_ipv6_emit(&r, out, 40), -HP_WIRE_BAD_FIELD);
    r.flow_label = 0xFFFFF;
    HP_CHECK_EQ(hp_ipv6_emit(&r, out, 40), 40);

    /* With a Fragment header. */
    r.frag_next = HP_IPPROTO_ICMPV6;
    r.frag_off = 1448;
    r.mf = true;
    r.frag_id = 0x01020304;
    r.payload_len = 8 + 16;
    for (size_t cap = 0; cap < 48; cap++)
        HP_CHECK_EQ(hp_ipv6_emit_frag(&r, out, cap), -HP_WIRE_NO_SPACE);
    memset(out, 0, sizeof out);
    HP_REQUIRE_EQ(hp_ipv6_emit_frag(&r, out, 64), 48);
    const uint8_t fh[8] = {HP_IPPROTO_ICMPV6, 0, 0x05, 0xA9, 1, 2, 3, 4};
    HP_CHECK_EQ(out[6], HP_IPPROTO_FRAGMENT);
    HP_CHECK_MEMEQ(out + 40, fh, 8);
    struct hp_ipv6_repr r2;
    HP_REQUIRE_EQ(hp_ipv6_parse(out, 64, &r2), 0);
    HP_CHECK(r2.has_frag && r2.mf);
    HP_CHECK_EQ(r2.frag_off, 1448);
    HP_CHECK_EQ(r2.frag_id, 0x01020304u);
    HP_CHECK_EQ(r2.frag_next, HP_IPPROTO_ICMPV6);
    HP_CHECK_EQ(r2.next_header, HP_IPPROTO_FRAGMENT);
    HP_CHECK_EQ(r2.l4_off, 48);
    HP_CHECK_EQ(r2.payload_len, 24);
    struct hp_ipv6_repr bad = r;
    bad.frag_off = 1449;
    HP_CHECK_EQ(hp_ipv6_emit_frag(&bad, out, 64), -HP_WIRE_BAD_FIELD);
    bad = r;
    bad.payload_len = 7;
    HP_CHECK_EQ(hp_ipv6_emit_frag(&bad, out, 64), -HP_WIRE_BAD_LENGTH);
    bad = r;
    bad.flow_label = 1u << 20;
    HP_CHECK_EQ(hp_ipv6_emit_frag(&bad, out, 64), -HP_WIRE_BAD_FIELD);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_address_helpers)
{
    /* RFC 4291 section 2.7.1: 4037::01:800:200E:8C6C -> FF02::1:FF0E:8C6C. */
    const uint8_t a[16] = {0x40, 0x37, 0,    0,    0,    0,    0,    0,
                           0,    0x01, 0x08, 0x00, 0x20, 0x0E, 0x8C, 0x6C};
    const uint8_t sn[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF, 0x0E, 0x8C, 0x6C};
    uint8_t out[16];
    hp_ipv6_solicited_node(a, out);
    HP_CHECK_MEMEQ(out, sn, 16);
    memcpy(out, a, 16);
    hp_ipv6_solicited_node(out, out); /* in place */
    HP_CHECK_MEMEQ(out, sn, 16);
    /* RFC 2464 section 7: 33-33 and the last four bytes. */
    uint8_t mac[6];
    hp_ipv6_mcast_mac(sn, mac);
    const uint8_t want_mac[6] = {0x33, 0x33, 0xFF, 0x0E, 0x8C, 0x6C};
    HP_CHECK_MEMEQ(mac, want_mac, 6);
    /* Modified EUI-64 (RFC 4291 appendix A): 00:1b:21:3c:4d:5e ->
     * fe80::21b:21ff:fe3c:4d5e; a locally administered MAC flips back to 0. */
    const uint8_t m1[6] = {0x00, 0x1B, 0x21, 0x3C, 0x4D, 0x5E};
    const uint8_t ll1[16] = {0xFE, 0x80, 0,    0,    0,    0,    0,    0,
                             0x02, 0x1B, 0x21, 0xFF, 0xFE, 0x3C, 0x4D, 0x5E};
    hp_ipv6_eui64_link_local(m1, out);
    HP_CHECK_MEMEQ(out, ll1, 16);
    const uint8_t m2[6] = {0x02, 0, 0, 0, 0, 1};
    hp_ipv6_eui64_link_local(m2, out);
    HP_CHECK_EQ(out[8], 0x00);
    HP_CHECK(hp_ipv6_is_link_local(out));
    /* Predicates. */
    const uint8_t zero[16] = {0}, one[16] = {[15] = 1}, two[16] = {[15] = 2};
    const uint8_t fe80[16] = {0xFE, 0x80}, febf[16] = {0xFE, 0xBF}, fec0[16] = {0xFE, 0xC0};
    HP_CHECK(hp_ipv6_is_unspecified(zero) && !hp_ipv6_is_unspecified(one));
    HP_CHECK(hp_ipv6_is_loopback(one) && !hp_ipv6_is_loopback(two) && !hp_ipv6_is_loopback(zero));
    HP_CHECK(hp_ipv6_is_link_local(fe80) && hp_ipv6_is_link_local(febf));
    HP_CHECK(!hp_ipv6_is_link_local(fec0) && !hp_ipv6_is_link_local(SRC));
    HP_CHECK(hp_ipv6_is_multicast(sn) && !hp_ipv6_is_multicast(fe80));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
