/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP header view: data offset and option walking, checksum, and an aligned option layout for emit. */
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/tcp.h>

/*
 * Walk the options (RFC 9293 section 3.1, "Options"): kind 0 ends the list,
 * kind 1 is a single byte, every other kind is followed by a length byte that
 * counts the kind and length bytes. Known kinds must have their fixed length;
 * unknown kinds are skipped by their length (RFC 9293 section 3.1: an
 * implementation MUST ignore options it does not implement, and MUST be
 * prepared for an illegal option length, zero say, without crashing). When o
 * is NULL only the structure is checked.
 */
static int walk_options(const uint8_t *p, size_t n, struct hp_tcp_opts *o)
{
    size_t i = 0;
    while (i < n) {
        uint8_t kind = p[i];
        if (kind == HP_TCP_KIND_EOL)
            break;
        if (kind == HP_TCP_KIND_NOP) {
            i++;
            continue;
        }
        if (n - i < 2)
            return -HP_WIRE_BAD_OPTION; /* no room for the length byte */
        size_t olen = p[i + 1];
        if (olen < 2 || olen > n - i)
            return -HP_WIRE_BAD_OPTION;
        const uint8_t *v = p + i + 2;
        switch (kind) {
        case HP_TCP_KIND_MSS: /* RFC 9293 3.2 */
            if (olen != 4)
                return -HP_WIRE_BAD_OPTION;
            if (o) {
                o->has_mss = true;
                o->mss = hp_get_be16(v);
            }
            break;
        case HP_TCP_KIND_WS: /* RFC 7323 2.2 */
            if (olen != 3)
                return -HP_WIRE_BAD_OPTION;
            if (o) {
                o->has_ws = true;
                /* RFC 7323 2.3: a shift above 14 MUST be used as 14. */
                o->ws_clamped = v[0] > HP_TCP_MAX_WS;
                o->ws = o->ws_clamped ? HP_TCP_MAX_WS : v[0];
            }
            break;
        case HP_TCP_KIND_SACK_PERM: /* RFC 2018 2 */
            if (olen != 2)
                return -HP_WIRE_BAD_OPTION;
            if (o)
                o->sack_perm = true;
            break;
        case HP_TCP_KIND_SACK: { /* RFC 2018 3: 2 + 8n bytes, n >= 1 */
            size_t nb = (olen - 2) / 8;
            if ((olen - 2) % 8 || nb < 1 || nb > HP_TCP_MAX_SACK)
                return -HP_WIRE_BAD_OPTION;
            if (o) {
                o->n_sack = (uint8_t)nb;
                for (size_t b = 0; b < nb; b++) {
                    o->sack[b][0] = hp_get_be32(v + 8 * b);
                    o->sack[b][1] = hp_get_be32(v + 8 * b + 4);
                }
            }
            break;
        }
        case HP_TCP_KIND_TS: /* RFC 7323 3.2 */
            if (olen != 10)
                return -HP_WIRE_BAD_OPTION;
            if (o) {
                o->has_ts = true;
                o->ts_val = hp_get_be32(v);
                o->ts_ecr = hp_get_be32(v + 4);
            }
            break;
        default:
            break;
        }
        i += olen;
    }
    return 0;
}

HP_API int hp_tcp_check(const void *pkt, size_t len)
{
    if (len < HP_TCP_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    size_t hlen = hp_tcp_hdr_len(pkt);
    if (hlen < HP_TCP_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH; /* data offset below 5 */
    if (hlen > len)
        return -HP_WIRE_TRUNCATED;
    return walk_options(hp_tcp_options(pkt), hlen - HP_TCP_HDR_LEN, NULL);
}

HP_API int hp_tcp_parse(const void *pkt, size_t len, const struct hp_l4_addrs *a,
                        struct hp_tcp_repr *r, unsigned flags)
{
    if (len < HP_TCP_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    const uint8_t *p = pkt;
    size_t hlen = hp_tcp_hdr_len(p);
    if (hlen < HP_TCP_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    if (hlen > len)
        return -HP_WIRE_TRUNCATED;
    /* The options straight into r (unspecified on failure): no copy. */
    struct hp_tcp_opts *o = &r->opt;
    memset(o, 0, sizeof *o);
    if (hlen == HP_TCP_HDR_LEN + 12 && hp_get_be32(p + HP_TCP_HDR_LEN) == 0x0101080Au) {
        /* NOP, NOP, timestamps: what every segment of a connection with
         * timestamps carries (RFC 7323 appendix A's layout), read without
         * the walk. */
        o->has_ts = true;
        o->ts_val = hp_get_be32(p + HP_TCP_HDR_LEN + 4);
        o->ts_ecr = hp_get_be32(p + HP_TCP_HDR_LEN + 8);
    } else {
        int rc = walk_options(p + HP_TCP_HDR_LEN, hlen - HP_TCP_HDR_LEN, o);
        if (rc)
            return rc;
    }
    if (flags & HP_WIRE_VERIFY_CKSUM) {
        if (!hp_l4_addrs_valid(a))
            return -HP_WIRE_BAD_ADDRESS;
        enum hp_cksum_result c = a->family == HP_AF_INET4
                                     ? hp_cksum_tcp4_verify(a->src, a->dst, p, len)
                                     : hp_cksum_tcp6_verify(a->src, a->dst, p, len);
        if (c != HP_CKSUM_GOOD)
            return -HP_WIRE_BAD_CHECKSUM;
    }
    r->src_port = hp_tcp_src_port(p);
    r->dst_port = hp_tcp_dst_port(p);
    r->seq = hp_tcp_seq(p);
    r->ack = hp_tcp_ack(p);
    r->flags = hp_tcp_flags(p);
    r->window = hp_tcp_window(p);
    r->urgent = hp_tcp_urgent(p);
    r->data_off = (uint8_t)hlen;
    r->payload = p + hlen;
    r->payload_len = len - hlen;
    return 0;
}

HP_API size_t hp_tcp_opts_len(const struct hp_tcp_opts *o)
{
    size_t n = 0;
    if (o->has_mss)
        n += 4;
    if (o->has_ts)
        n += 12; /* SACK-permitted or NOP NOP, then TS */
    else if (o->sack_perm)
        n += 4;
    if (o->has_ws)
        n += 4;
    if (o->n_sack)
        n += 4 + 8 * (size_t)o->n_sack;
    return n;
}

HP_API size_t hp_tcp_repr_len(const struct hp_tcp_repr *r)
{
    return HP_TCP_HDR_LEN + hp_tcp_opts_len(&r->opt) + r->payload_len;
}

/* Write the options of o at p, in the layout documented at hp_tcp_opts_len. */
static void write_options(const struct hp_tcp_opts *o, uint8_t *p)
{
    if (o->has_mss) {
        p[0] = HP_TCP_KIND_MSS;
        p[1] = 4;
        hp_put_be16(p + 2, o->mss);
        p += 4;
    }
    if (o->has_ts) {
        if (o->sack_perm) {
            p[0] = HP_TCP_KIND_SACK_PERM;
            p[1] = 2;
        } else {
            p[0] = p[1] = HP_TCP_KIND_NOP;
        }
        p[2] = HP_TCP_KIND_TS;
        p[3] = 10;
        hp_put_be32(p + 4, o->ts_val);
        hp_put_be32(p + 8, o->ts_ecr);
        p += 12;
    } else if (o->sack_perm) {
        p[0] = p[1] = HP_TCP_KIND_NOP;
        p[2] = HP_TCP_KIND_SACK_PERM;
        p[3] = 2;
        p += 4;
    }
    if (o->has_ws) {
        p[0] = HP_TCP_KIND_NOP;
        p[1] = HP_TCP_KIND_WS;
        p[2] = 3;
        p[3] = o->ws;
        p += 4;
    }
    if (o->n_sack) {
        p[0] = p[1] = HP_TCP_KIND_NOP;
        p[2] = HP_TCP_KIND_SACK;
        p[3] = (uint8_t)(2 + 8 * o->n_sack);
        p += 4;
        for (unsigned b = 0; b < o->n_sack; b++) {
            hp_put_be32(p, o->sack[b][0]);
            hp_put_be32(p + 4, o->sack[b][1]);
            p += 8;
        }
    }
}

HP_API int hp_tcp_emit(const struct hp_tcp_repr *r, const struct hp_l4_addrs *a, void *out,
                       size_t cap)
{
    if (!hp_l4_addrs_valid(a))
        return -HP_WIRE_BAD_ADDRESS;
    if (r->opt.n_sack > HP_TCP_MAX_SACK)
        return -HP_WIRE_BAD_OPTION;
    size_t olen = hp_tcp_opts_len(&r->opt);
    if (olen > HP_TCP_MAX_OPT_LEN)
        return -HP_WIRE_BAD_OPTION;
    size_t hlen = HP_TCP_HDR_LEN + olen;
    /* The IPv4 pseudo-header carries a 16-bit length, and no IP packet
     * without a jumbogram option carries more. */
    if (r->payload_len > 0xFFFFu - hlen)
        return -HP_WIRE_BAD_LENGTH;
    size_t total = hlen + r->payload_len;
    if (cap < total)
        return -HP_WIRE_NO_SPACE;
    uint8_t *o = out;
    if (r->payload_len)
        memmove(o + hlen, r->payload, r->payload_len);
    hp_put_be16(o, r->src_port);
    hp_put_be16(o + 2, r->dst_port);
    hp_put_be32(o + 4, r->seq);
    hp_put_be32(o + 8, r->ack);
    o[12] = (uint8_t)(hlen / 4 << 4); /* reserved bits zero (RFC 9293 3.1) */
    o[13] = r->flags;
    hp_put_be16(o + 14, r->window);
    hp_put_be16(o + 18, r->urgent);
    write_options(&r->opt, o + HP_TCP_HDR_LEN);
    uint16_t c = a->family == HP_AF_INET4 ? hp_cksum_tcp4(a->src, a->dst, o, total)
                                          : hp_cksum_tcp6(a->src, a->dst, o, total);
    memcpy(o + 16, &c, 2); /* already in network order */
    return (int)total;
}
