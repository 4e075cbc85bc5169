/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv4 message view: echo and error messages, checksum, and the quote length of errors. */
#include <stdbool.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/icmp.h>

/* RFC 1812 4.3.2.3: an ICMP error datagram is at most 576 bytes. */
#define ICMP_ERROR_MAX 576u
#define IPV4_MIN_HDR   20u

HP_API int hp_icmp_check(const void *pkt, size_t len)
{
    (void)pkt;
    return len < HP_ICMP_HDR_LEN ? -HP_WIRE_TRUNCATED : 0;
}

static bool is_error(uint8_t type)
{
    return type == HP_ICMP_DEST_UNREACH || type == HP_ICMP_TIME_EXCEEDED ||
           type == HP_ICMP_PARAM_PROBLEM;
}

HP_API int hp_icmp_parse(const void *pkt, size_t len, struct hp_icmp_repr *r, unsigned flags)
{
    if (len < HP_ICMP_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    const uint8_t *p = pkt;
    if ((flags & HP_WIRE_VERIFY_CKSUM) && hp_cksum_icmp4_verify(p, len) != HP_CKSUM_GOOD)
        return -HP_WIRE_BAD_CHECKSUM;
    uint8_t type = hp_icmp_type(p);
    memset(r, 0, sizeof *r);
    r->type = type;
    r->code = hp_icmp_code(p);
    switch (type) {
    case HP_ICMP_ECHO_REPLY:
    case HP_ICMP_ECHO_REQUEST:
        r->ident = hp_icmp_ident(p);
        r->seq = hp_icmp_seq(p);
        break;
    case HP_ICMP_DEST_UNREACH:
        /* RFC 1191 section 4: the low 16 bits of the unused word carry the
         * next-hop MTU in "fragmentation needed"; elsewhere it is unused and
         * ignored (RFC 1122 3.2.2). */
        if (r->code == HP_ICMP_UNREACH_FRAG_NEEDED)
            r->next_hop_mtu = hp_icmp_next_hop_mtu(p);
        break;
    case HP_ICMP_TIME_EXCEEDED:
        break;
    case HP_ICMP_PARAM_PROBLEM:
        r->pointer = hp_icmp_pointer(p);
        break;
    default:
        return -HP_WIRE_UNSUPPORTED; /* RFC 1122 3.2.2 */
    }
    r->data = p + HP_ICMP_HDR_LEN;
    r->data_len = len - HP_ICMP_HDR_LEN;
    /* RFC 792 / RFC 1122 3.2.2: errors quote the offending datagram's IP
     * header and (up to) 8 octets of its data. */
    if (is_error(type) && r->data_len < HP_ICMP_MIN_QUOTE)
        return -HP_WIRE_TRUNCATED;
    return 0;
}

HP_API size_t hp_icmp_repr_len(const struct hp_icmp_repr *r)
{
    return HP_ICMP_HDR_LEN + r->data_len;
}

HP_API int hp_icmp_emit(const struct hp_icmp_repr *r, void *out, size_t cap)
{
    if (r->data_len > 0xFFFFu - IPV4_MIN_HDR - HP_ICMP_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    size_t total = HP_ICMP_HDR_LEN + r->data_len;
    if (cap < total)
        return -HP_WIRE_NO_SPACE;
    uint8_t *o = out;
    if (r->data_len)
        memmove(o + HP_ICMP_HDR_LEN, r->data, r->data_len);
    o[0] = r->type;
    o[1] = r->code;
    memset(o + 2, 0, 6);
    switch (r->type) {
    case HP_ICMP_ECHO_REPLY:
    case HP_ICMP_ECHO_REQUEST:
        hp_put_be16(o + 4, r->ident);
        hp_put_be16(o + 6, r->seq);
        break;
    case HP_ICMP_DEST_UNREACH:
        if (r->code == HP_ICMP_UNREACH_FRAG_NEEDED)
            hp_put_be16(o + 6, r->next_hop_mtu);
        break;
    case HP_ICMP_PARAM_PROBLEM:
        o[4] = r->pointer;
        break;
    default:
        break;
    }
    /* A full computation: never the 0x0000 an all-zero message would get
     * from an incremental update (see hp_cksum_update16). */
    uint16_t c = hp_cksum_icmp4(o, total);
    memcpy(o + 2, &c, 2);
    return (int)total;
}

HP_API size_t hp_icmp_quote_len(size_t orig_len)
{
    size_t max = ICMP_ERROR_MAX - IPV4_MIN_HDR - HP_ICMP_HDR_LEN;
    return orig_len < max ? orig_len : max;
}
