/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 (RFC 8200): validation of the fixed header and a bounded walk of the extension headers, parsing and emission. */
#include <hotpath/wire/ipv6.h>

#define OPT_PAD1  0x00
#define OPT_PADN  0x01
#define OPT_JUMBO 0xC2 /* Jumbo Payload (RFC 2675 section 2) */

/* Every extension header walked here is a multiple of 8 bytes and at least
 * 8 (RFC 8200 section 4; AH is at least 12 and, over IPv6, a multiple of 8). */
#define EXT_MIN 8u

/* With at most HP_IPV6_MAX_EXT_HDRS headers of at most 2048 bytes each
 * (Hdr Ext Len 255), the upper layer starts within 40 + 16 * 2048 bytes,
 * so l4_off and unfrag_len fit their 16 bits. */
_Static_assert(HP_IPV6_HDR_LEN + HP_IPV6_MAX_EXT_HDRS * 2048u <= 65535u, "l4_off must fit 16 bits");

/*
 * The options of a Hop-by-Hop or Destination Options header (RFC 8200
 * section 4.2), n bytes from opt: Pad1 is one byte; every other option is
 * type, data length, data. An option we do not know is skipped only when the
 * two high-order bits of its type are 00; 01 says discard, 10 and 11 discard
 * and report a Parameter Problem, which is the stack's to send. A Jumbo
 * Payload option is -HP_WIRE_UNSUPPORTED when jumbo_ok (the Payload Length
 * was 0) and an error otherwise (RFC 2675 section 3).
 */
static int walk_tlv(const uint8_t *opt, size_t n, bool jumbo_ok)
{
    size_t i = 0;
    while (i < n) {
        uint8_t type = opt[i];
        if (type == OPT_PAD1) {
            i++;
            continue;
        }
        if (n - i < 2)
            return -HP_WIRE_BAD_OPTION;
        size_t dlen = opt[i + 1];
        if (dlen > n - i - 2)
            return -HP_WIRE_BAD_OPTION;
        if (type == OPT_JUMBO)
            return jumbo_ok ? -HP_WIRE_UNSUPPORTED : -HP_WIRE_BAD_OPTION;
        if (type != OPT_PADN && (type >> 6) != 0)
            return -HP_WIRE_BAD_OPTION;
        i += 2 + dlen;
    }
    return 0;
}

/* Length of the Hop-by-Hop, Destination Options or Routing header at h:
 * Hdr Ext Len counts 8-octet units after the first. */
static size_t ext_len(const uint8_t *h)
{
    return ((size_t)h[1] + 1) * 8;
}

/* A Payload Length of 0 with a Hop-by-Hop header first announces a
 * jumbogram (RFC 2675 section 3), whose real length is in the Jumbo Payload
 * option: report it as unsupported rather than as a header overrunning the
 * (zero) payload, if the bytes present show the option. */
static bool is_jumbogram(const uint8_t *p, size_t len)
{
    if (len < HP_IPV6_HDR_LEN + EXT_MIN)
        return false;
    const uint8_t *h = p + HP_IPV6_HDR_LEN;
    size_t hlen = ext_len(h);
    return hlen <= len - HP_IPV6_HDR_LEN && walk_tlv(h + 2, hlen - 2, true) == -HP_WIRE_UNSUPPORTED;
}

/* The walk behind check and parse: fills the walk's fields of r. */
static int walk(const uint8_t *p, size_t len, struct hp_ipv6_repr *r)
{
    if (len < HP_IPV6_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    if (p[0] >> 4 != 6)
        return -HP_WIRE_BAD_VERSION;
    size_t plen = hp_get_be16(p + 4);
    if (plen > len - HP_IPV6_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    uint8_t nh = p[6];
    if (plen == 0 && nh == HP_IPPROTO_HOPOPTS && is_jumbogram(p, len))
        return -HP_WIRE_UNSUPPORTED;

    const size_t end = HP_IPV6_HDR_LEN + plen;
    size_t off = HP_IPV6_HDR_LEN;
    unsigned count = 0;
    r->has_frag = false;
    r->frag_off = 0;
    r->mf = false;
    r->frag_id = 0;
    r->unfrag_len = 0;
    r->frag_next = 0;
    r->has_hbh = false;
    for (;;) {
        switch (nh) {
        case HP_IPPROTO_HOPOPTS:
        case HP_IPPROTO_DSTOPTS:
        case HP_IPPROTO_ROUTING:
        case HP_IPPROTO_FRAGMENT:
        case HP_IPPROTO_AH:
            break;
        case HP_IPPROTO_ESP:
            /* Everything after the ESP header is encrypted (RFC 4303). */
            return -HP_WIRE_UNSUPPORTED;
        default:
            /* An upper layer, or No Next Header (RFC 8200 section 4.7). */
            r->next_header = nh;
            r->l4_off = (uint16_t)off;
            return 0;
        }
        if (++count > HP_IPV6_MAX_EXT_HDRS)
            return -HP_WIRE_UNSUPPORTED;
        if (end - off < EXT_MIN)
            return -HP_WIRE_BAD_OPTION;
        const uint8_t *h = p + off;
        size_t hlen;
        int rc;
        switch (nh) {
        case HP_IPPROTO_HOPOPTS:
        case HP_IPPROTO_DSTOPTS:
            /* RFC 8200 section 4.1: Hop-by-Hop Options only immediately
             * after the IPv6 header. */
            if (nh == HP_IPPROTO_HOPOPTS) {
                if (off != HP_IPV6_HDR_LEN)
                    return -HP_WIRE_BAD_FIELD;
                r->has_hbh = true;
            }
            hlen = ext_len(h);
            if (hlen > end - off)
                return -HP_WIRE_BAD_OPTION;
            rc = walk_tlv(h + 2, hlen - 2, false);
            if (rc < 0)
                return rc;
            break;
        case HP_IPPROTO_ROUTING:
            hlen = ext_len(h);
            if (hlen > end - off)
                return -HP_WIRE_BAD_OPTION;
            /* RFC 8200 section 4.4: with Segments Left 0 an unrecognised
             * type is ignored; otherwise the packet is refused. We route no
             * type. RH0 is deprecated and treated the same way (RFC 5095
             * section 3), but a live one is the sender's fault. */
            if (h[3] != 0)
                return h[2] == 0 ? -HP_WIRE_BAD_FIELD : -HP_WIRE_UNSUPPORTED;
            break;
        case HP_IPPROTO_FRAGMENT: {
            hlen = HP_IPV6_FRAG_HDR_LEN;
            if (r->has_frag)
                return -HP_WIRE_UNSUPPORTED;
            /* RFC 8200 section 4.5: Next Header, Reserved (8 bits), Fragment
             * Offset (13) | Res (2) | M (1), Identification (32). Both
             * reserved fields are ignored on reception. */
            uint16_t fo = hp_get_be16(h + 2);
            r->has_frag = true;
            r->frag_next = h[0];
            r->frag_off = (uint16_t)(fo & 0xFFF8u);
            r->mf = (fo & 1u) != 0;
            r->frag_id = hp_get_be32(h + 4);
            r->unfrag_len = (uint16_t)off;
            if (r->frag_off == 0 && !r->mf)
                break; /* atomic (RFC 6946): the rest is a whole packet */
            size_t data = end - off - HP_IPV6_FRAG_HDR_LEN;
            /* Section 4.5: discard a fragment with M set whose length is
             * not a multiple of 8, and one whose reassembly would make the
             * Payload Length exceed 65,535. */
            if (r->mf && data % 8 != 0)
                return -HP_WIRE_BAD_LENGTH;
            if ((off - HP_IPV6_HDR_LEN) + r->frag_off + data > 65535)
                return -HP_WIRE_BAD_LENGTH;
            r->next_header = HP_IPPROTO_FRAGMENT;
            r->l4_off = (uint16_t)(off + HP_IPV6_FRAG_HDR_LEN);
            return 0;
        }
        default: /* HP_IPPROTO_AH */
            /* RFC 4302 section 2.2: Payload Length is the header's length
             * in 4-octet units minus 2; over IPv6 a multiple of 8 octets. */
            hlen = ((size_t)h[1] + 2) * 4;
            if (hlen < 12 || hlen % 8 != 0)
                return -HP_WIRE_BAD_LENGTH;
            if (hlen > end - off)
                return -HP_WIRE_BAD_OPTION;
            break;
        }
        nh = h[0];
        off += hlen;
    }
}

static int check_into(const void *pkt, size_t len, struct hp_ipv6_repr *r)
{
    const uint8_t *p = pkt;
    int rc = walk(p, len, r);
    if (rc < 0)
        return rc;
    /* RFC 4291 section 2.7: multicast addresses must not be used as source
     * addresses. */
    if (hp_ipv6_is_multicast(p + 8))
        return -HP_WIRE_BAD_ADDRESS;
    return 0;
}

HP_API int hp_ipv6_check(const void *pkt, size_t len)
{
    struct hp_ipv6_repr scratch;
    return check_into(pkt, len, &scratch);
}

HP_API int hp_ipv6_parse(const void *pkt, size_t len, struct hp_ipv6_repr *r)
{
    int rc = check_into(pkt, len, r);
    if (rc < 0)
        return rc;
    memcpy(r->src, hp_ipv6_src_ptr(pkt), 16);
    memcpy(r->dst, hp_ipv6_dst_ptr(pkt), 16);
    r->hop_limit = hp_ipv6_hop_limit(pkt);
    r->traffic_class = hp_ipv6_traffic_class(pkt);
    r->flow_label = hp_ipv6_flow_label(pkt);
    r->payload_len = hp_ipv6_payload_len(pkt);
    return 0;
}

HP_API size_t hp_ipv6_repr_len(const struct hp_ipv6_repr *r)
{
    (void)r;
    return HP_IPV6_HDR_LEN;
}

/* The fixed header with the given Next Header; r is already validated. */
static void put_fixed(const struct hp_ipv6_repr *r, uint8_t *p, uint8_t nh)
{
    hp_put_be32(p, (uint32_t)6 << 28 | (uint32_t)r->traffic_class << 20 | r->flow_label);
    hp_put_be16(p + 4, r->payload_len);
    p[6] = nh;
    p[7] = r->hop_limit;
    memcpy(p + 8, r->src, 16);
    memcpy(p + 24, r->dst, 16);
}

HP_API int hp_ipv6_emit(const struct hp_ipv6_repr *r, void *out, size_t cap)
{
    if (cap < HP_IPV6_HDR_LEN)
        return -HP_WIRE_NO_SPACE;
    if (r->flow_label > 0xFFFFFu)
        return -HP_WIRE_BAD_FIELD;
    put_fixed(r, out, r->next_header);
    return (int)HP_IPV6_HDR_LEN;
}

HP_API int hp_ipv6_emit_frag(const struct hp_ipv6_repr *r, void *out, size_t cap)
{
    if (cap < HP_IPV6_HDR_LEN + HP_IPV6_FRAG_HDR_LEN)
        return -HP_WIRE_NO_SPACE;
    if (r->flow_label > 0xFFFFFu || r->frag_off % 8 != 0)
        return -HP_WIRE_BAD_FIELD;
    if (r->payload_len < HP_IPV6_FRAG_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    uint8_t *p = out;
    put_fixed(r, p, HP_IPPROTO_FRAGMENT);
    uint8_t *f = p + HP_IPV6_HDR_LEN;
    f[0] = r->frag_next;
    f[1] = 0;
    hp_put_be16(f + 2, (uint16_t)(r->frag_off | (r->mf ? 1u : 0u)));
    hp_put_be32(f + 4, r->frag_id);
    return (int)(HP_IPV6_HDR_LEN + HP_IPV6_FRAG_HDR_LEN);
}
