/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the IPv6 view and its extension header walk must agree between check and parse, stay in bounds, and round-trip through emit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/ipv6.h>

/* The input is a packet from the first byte of the IPv6 header, in an
 * allocation of exactly its size. */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "ipv6_fuzz: %s\n", what);
    abort();
}

static volatile uint32_t sink;

static bool same(const struct hp_ipv6_repr *a, const struct hp_ipv6_repr *b)
{
    return !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16) &&
           a->next_header == b->next_header && a->hop_limit == b->hop_limit &&
           a->traffic_class == b->traffic_class && a->flow_label == b->flow_label &&
           a->payload_len == b->payload_len && a->l4_off == b->l4_off &&
           a->has_frag == b->has_frag && a->frag_off == b->frag_off && a->mf == b->mf &&
           a->frag_id == b->frag_id && a->unfrag_len == b->unfrag_len &&
           a->frag_next == b->frag_next && a->has_hbh == b->has_hbh;
}

static uint8_t out[40 + 65535 + 8];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hp_ipv6_repr r;
    int rc = hp_ipv6_check(data, size);
    int rp = hp_ipv6_parse(data, size, &r);
    if (rc != rp)
        fail("check and parse disagree");
    if (rc < 0) {
        if (!hp_wire_is_reason(rc) || rc == -HP_WIRE_NO_SPACE || rc == -HP_WIRE_BAD_CHECKSUM)
            fail("not a reason check gives");
        return 0;
    }
    /* What the walk reports lies within the packet. */
    size_t end = 40 + (size_t)r.payload_len;
    if (end > size || r.l4_off < 40 || r.l4_off > end)
        fail("l4_off");
    if (r.has_frag && (r.unfrag_len < 40 || (size_t)r.unfrag_len + 8 > r.l4_off))
        fail("fragment header position");
    if (!r.has_frag && (r.frag_off || r.mf || r.frag_id || r.unfrag_len || r.frag_next))
        fail("fragment fields without a fragment");
    if ((r.next_header == HP_IPPROTO_FRAGMENT) != (r.has_frag && (r.frag_off || r.mf)))
        fail("a non-atomic fragment must stop the walk, and only it");
    if (r.has_frag && r.next_header == HP_IPPROTO_FRAGMENT && r.l4_off != r.unfrag_len + 8u)
        fail("fragment data offset");
    sink = hp_ipv6_hop_limit(data) + hp_ipv6_src_ptr(data)[15] + hp_ipv6_dst_ptr(data)[15] +
           data[end - 1] + (r.l4_off < end ? data[r.l4_off] : 0);
    if (hp_ipv6_payload_len(data) != r.payload_len || hp_ipv6_flow_label(data) != r.flow_label ||
        hp_ipv6_traffic_class(data) != r.traffic_class || hp_ipv6_is_multicast(r.src))
        fail("accessors");

    /* Re-emit without the other extension headers (a fixed header, or a
     * fixed and a Fragment header), followed by what came after the walk;
     * parsing that must give the same packet minus those headers. */
    struct hp_ipv6_repr want = r, r2;
    size_t n;
    if (r.has_frag) {
        size_t from = r.unfrag_len + 8u;
        want.payload_len = (uint16_t)(8 + end - from);
        want.unfrag_len = 40;
        want.l4_off = (uint16_t)(48 + r.l4_off - from);
        want.has_hbh = false;
        if (hp_ipv6_emit_frag(&want, out, 47) != -HP_WIRE_NO_SPACE)
            fail("emit_frag into too little room");
        if (hp_ipv6_emit_frag(&want, out, sizeof out) != 48)
            fail("emit_frag refused a parsed repr");
        memcpy(out + 48, data + from, end - from);
        n = 48 + end - from;
        /* Fragment header at 40 with nothing before: the same bytes, but
         * for the reserved fields. */
        if (r.unfrag_len == 40 &&
            (memcmp(out, data, 41) != 0 || memcmp(out + 44, data + 44, 4) != 0 ||
             out[42] != data[42] || (out[43] & 0xF9) != (data[43] & 0xF9)))
            fail("emitted fragment header differs from the parsed one");
    } else {
        want.payload_len = (uint16_t)(end - r.l4_off);
        want.l4_off = 40;
        want.has_hbh = false;
        if (hp_ipv6_emit(&want, out, 39) != -HP_WIRE_NO_SPACE)
            fail("emit into too little room");
        if (hp_ipv6_emit(&want, out, sizeof out) != 40)
            fail("emit refused a parsed repr");
        memcpy(out + 40, data + r.l4_off, end - r.l4_off);
        n = 40 + end - r.l4_off;
        if (r.l4_off == 40 && memcmp(out, data, 40) != 0)
            fail("emitted header differs from the parsed one");
    }
    if (hp_ipv6_parse(out, n, &r2) != 0)
        fail("re-emitted packet does not parse");
    if (!same(&r2, &want))
        fail("round trip changed the repr");
    return 0;
}
