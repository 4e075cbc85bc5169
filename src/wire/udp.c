/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP datagram view: length checks, checksum over the pseudo-header, emit in place or by copy. */
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/udp.h>

HP_API int hp_udp_check(const void *pkt, size_t len)
{
    if (len < HP_UDP_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    size_t ulen = hp_udp_len(pkt);
    /* RFC 768: the length counts the header, so it is at least 8. Zero is
     * the jumbogram marker of RFC 2675, not supported. */
    if (ulen < HP_UDP_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    if (ulen > len)
        return -HP_WIRE_TRUNCATED;
    return 0;
}

HP_API int hp_udp_parse(const void *pkt, size_t len, const struct hp_l4_addrs *a,
                        struct hp_udp_repr *r, unsigned flags)
{
    int rc = hp_udp_check(pkt, len);
    if (rc)
        return rc;
    const uint8_t *p = pkt;
    size_t ulen = hp_udp_len(p);
    if ((flags & HP_WIRE_VERIFY_CKSUM) && !hp_l4_addrs_valid(a))
        return -HP_WIRE_BAD_ADDRESS;
    if (a && a->family == HP_AF_INET6 && hp_udp_cksum(p) == 0)
        return -HP_WIRE_BAD_CHECKSUM; /* RFC 8200 section 8.1 */
    if (flags & HP_WIRE_VERIFY_CKSUM) {
        /* The checksum covers the length field's bytes only (RFC 768). */
        enum hp_cksum_result c = a->family == HP_AF_INET4
                                     ? hp_cksum_udp4_verify(a->src, a->dst, p, ulen)
                                     : hp_cksum_udp6_verify(a->src, a->dst, p, ulen);
        if (c == HP_CKSUM_BAD)
            return -HP_WIRE_BAD_CHECKSUM;
    }
    if (hp_udp_dst_port(p) == 0)
        return -HP_WIRE_BAD_FIELD;
    r->src_port = hp_udp_src_port(p);
    r->dst_port = hp_udp_dst_port(p);
    r->len = (uint16_t)ulen;
    r->payload = p + HP_UDP_HDR_LEN;
    r->payload_len = ulen - HP_UDP_HDR_LEN;
    return 0;
}

HP_API size_t hp_udp_repr_len(const struct hp_udp_repr *r)
{
    return HP_UDP_HDR_LEN + r->payload_len;
}

/* The header, then the checksum over the header and the payload after it. */
static int write_header(const struct hp_udp_repr *r, const struct hp_l4_addrs *a, uint8_t *o,
                        size_t ulen)
{
    hp_put_be16(o, r->src_port);
    hp_put_be16(o + 2, r->dst_port);
    hp_put_be16(o + 4, (uint16_t)ulen);
    uint16_t c = a->family == HP_AF_INET4 ? hp_cksum_udp4(a->src, a->dst, o, ulen)
                                          : hp_cksum_udp6(a->src, a->dst, o, ulen);
    memcpy(o + 6, &c, 2); /* already in network order */
    return (int)ulen;
}

/* Shared checks of both emits. */
static int emit_check(const struct hp_udp_repr *r, const struct hp_l4_addrs *a, size_t cap)
{
    if (!hp_l4_addrs_valid(a))
        return -HP_WIRE_BAD_ADDRESS;
    if (r->payload_len > 0xFFFFu - HP_UDP_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    if (cap < HP_UDP_HDR_LEN + r->payload_len)
        return -HP_WIRE_NO_SPACE;
    return 0;
}

HP_API int hp_udp_emit(const struct hp_udp_repr *r, const struct hp_l4_addrs *a, void *out,
                       size_t cap)
{
    int rc = emit_check(r, a, cap);
    if (rc)
        return rc;
    uint8_t *o = out;
    if (r->payload_len)
        memmove(o + HP_UDP_HDR_LEN, r->payload, r->payload_len);
    return write_header(r, a, o, HP_UDP_HDR_LEN + r->payload_len);
}

HP_API int hp_udp_emit_header(const struct hp_udp_repr *r, const struct hp_l4_addrs *a, void *out,
                              size_t cap)
{
    int rc = emit_check(r, a, cap);
    if (rc)
        return rc;
    return write_header(r, a, out, HP_UDP_HDR_LEN + r->payload_len);
}
