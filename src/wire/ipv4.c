/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4 header (RFC 791): validation, including a bounded walk of the options, parsing and emission. */
#include <hotpath/cksum.h>
#include <hotpath/wire/ipv4.h>

#include "ipv4_emit.h"

#define OPT_EOL 0 /* End of Option List */
#define OPT_NOP 1 /* No Operation */

/* RFC 791 section 3.1, "Options": a single-octet option (EOL, NOP), or a
 * type octet, a length octet counting type, length and data, then the data.
 * After EOL the rest of the header is padding. We do not act on any option
 * (RFC 1122 section 3.2.1.8: ignore those not understood); we
 * only make sure none claims bytes beyond the header. */
static int walk_options(const uint8_t *opt, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t type = opt[i];
        if (type == OPT_EOL)
            return 0;
        if (type == OPT_NOP) {
            i++;
            continue;
        }
        if (n - i < 2)
            return -HP_WIRE_BAD_OPTION; /* no room for the length octet */
        uint8_t olen = opt[i + 1];
        if (olen < 2 || olen > n - i)
            return -HP_WIRE_BAD_OPTION;
        i += olen;
    }
    return 0;
}

HP_API int hp_ipv4_check(const void *pkt, size_t len)
{
    const uint8_t *p = pkt;
    if (len < HP_IPV4_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    if (p[0] >> 4 != 4)
        return -HP_WIRE_BAD_VERSION;
    size_t hlen = (size_t)(p[0] & 0x0F) * 4;
    if (hlen < HP_IPV4_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    if (hlen > len)
        return -HP_WIRE_TRUNCATED;
    size_t total = hp_get_be16(p + 2);
    if (total < hlen)
        return -HP_WIRE_BAD_LENGTH;
    if (total > len)
        return -HP_WIRE_TRUNCATED;
    int rc = walk_options(p + HP_IPV4_HDR_LEN, hlen - HP_IPV4_HDR_LEN);
    if (rc < 0)
        return rc;

    size_t payload = total - hlen;
    uint16_t frag = hp_get_be16(p + 6);
    size_t off = (size_t)(frag & 0x1FFFu) * 8;
    bool mf = (frag & 0x2000u) != 0;
    /* Fragment Offset counts 8-octet units (RFC 791 section 3.1), so every
     * fragment but the last carries a multiple of 8 data octets; otherwise
     * the next one could not say where it starts. */
    if (mf && payload % 8 != 0)
        return -HP_WIRE_BAD_LENGTH;
    /* The reassembled datagram, header included, must fit Total Length's 16
     * bits. Fragments after the first carry at most the first's header
     * (only "copied" options are repeated, RFC 791 section 3.2), so this
     * fragment's header is a lower bound. */
    if (off + payload + hlen > 65535)
        return -HP_WIRE_BAD_LENGTH;

    if (hp_ipv4_is_multicast(p + 12) || hp_ipv4_is_broadcast(p + 12))
        return -HP_WIRE_BAD_ADDRESS;
    return 0;
}

HP_API int hp_ipv4_parse(const void *pkt, size_t len, struct hp_ipv4_repr *r, unsigned flags)
{
    int rc = hp_ipv4_check(pkt, len);
    if (rc < 0)
        return rc;
    size_t hlen = hp_ipv4_hdr_len(pkt);
    if ((flags & HP_WIRE_VERIFY_CKSUM) && !hp_cksum_ipv4_hdr_ok(pkt, hlen))
        return -HP_WIRE_BAD_CHECKSUM;
    memcpy(r->src, hp_ipv4_src_ptr(pkt), 4);
    memcpy(r->dst, hp_ipv4_dst_ptr(pkt), 4);
    r->proto = hp_ipv4_proto(pkt);
    r->ttl = hp_ipv4_ttl(pkt);
    r->dscp_ecn = hp_ipv4_dscp_ecn(pkt);
    r->ident = hp_ipv4_ident(pkt);
    r->df = hp_ipv4_df(pkt);
    r->mf = hp_ipv4_mf(pkt);
    r->frag_off = hp_ipv4_frag_off(pkt);
    r->payload_len = (uint16_t)hp_ipv4_payload_len(pkt);
    r->hdr_len = (uint8_t)hlen;
    return 0;
}

HP_API size_t hp_ipv4_repr_len(const struct hp_ipv4_repr *r)
{
    (void)r;
    return HP_IPV4_HDR_LEN;
}

HP_API int hp_ipv4_emit(const struct hp_ipv4_repr *r, void *out, size_t cap)
{
    if (cap < HP_IPV4_HDR_LEN)
        return -HP_WIRE_NO_SPACE;
    return hp__ipv4_emit20(r, out);
}
