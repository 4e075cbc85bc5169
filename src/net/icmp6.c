/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv6 (RFC 4443): echo, received errors, hand-off of Neighbor Discovery, rate-limited error messages, and ping over IPv6. */
#include <errno.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "internal.h"
#include "ip_local.h"

/* The ICMPv6 checksum of packet b (whole chain) between src and dst, as
 * stored: computed with the checksum field as it is. */
static uint16_t sum6(const uint8_t *src, const uint8_t *dst, const struct hp_buf *b)
{
    uint32_t ps = hp_cksum_pseudo_ipv6(src, dst, HP_IPPROTO_ICMPV6, b->pkt_len);
    return hp_cksum_fold(hp_cksum_add(ps, hp__chain_sum(b)));
}

/* ---- input ------------------------------------------------------------------------------ */

static void echo_reply6(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip)
{
    struct hp_stack *s = ifc->s;
    struct hp__route r;
    if (hp__route6(s, ip->src, &r) != 0) {
        hp__ctr(s, HP_CTR_IP6_OUT_NO_ROUTES);
        hp_buf_free(b);
        return;
    }
    /* From the address the request was sent to when it was unicast (RFC
     * 4443 4.2); to a multicast group, from our own choice of source. */
    bool unicast = !hp_ipv6_is_multicast(ip->dst);
    if (unicast)
        memcpy(r.src, ip->dst, 16);
    if (!hp__chain_private(b)) {
        struct hp_buf *c = hp__chain_copy(r.ifc, b);
        hp_buf_free(b);
        if (!c)
            return;
        b = c;
    }
    uint8_t *m = hp_buf_data(b);
    uint16_t old, nw, ck;
    memcpy(&old, m, 2);
    /* RFC 4443 4.2: an echo reply's code is 0, whatever the request's was. */
    m[0] = HP_ICMP6_ECHO_REPLY;
    m[1] = 0;
    memcpy(&nw, m, 2);
    memcpy(&ck, m + 2, 2);
    /* Swapped addresses leave the pseudo-header's sum alone: an RFC 1624
     * update for the type suffices. A new source needs a full sum. */
    ck = hp_cksum_update16(ck, old, nw);
    if (!unicast || ck == 0) {
        memset(m + 2, 0, 2);
        ck = sum6(r.src, ip->src, b);
    }
    memcpy(m + 2, &ck, 2);
    hp__ctr(s, HP_CTR_ICMP6_OUT_MSGS);
    hp__ctr(s, HP_CTR_ICMP6_OUT_ECHO_REPS);
    (void)hp__ipv6_output(s, &r, ip->src, HP_IPPROTO_ICMPV6, b);
}

/* A Packet Too Big quoting one of our TCP segments goes to TCP (RFC 8201
 * 4, RFC 5927), past the quoted packet's extension headers. */
static void too_big6(struct hp_stack *s, const struct hp_icmp6_repr *m)
{
    const uint8_t *q = m->data;
    size_t n = m->data_len;
    if (n < HP_IPV6_HDR_LEN + 8 || (q[0] >> 4) != 6)
        return;
    uint8_t proto = 0;
    long off = hp__ipv6_walk(q, n, HP_IPV6_HDR_LEN, q[6], &proto, NULL);
    if (off < 0 || proto != HP_IPPROTO_TCP || (size_t)off + 8 > n)
        return;
    uint32_t tot = HP_IPV6_HDR_LEN + (((uint32_t)q[4] << 8) | q[5]);
    hp__tcp_icmp_too_big(s, 6, q + 8, q + 24, q + off, n - (size_t)off, m->mtu, tot);
}

void hp__icmp6_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_ICMP6_IN_MSGS);
    if (b->data_len < HP_ICMP6_HDR_LEN) {
        hp__ctr(s, HP_CTR_ICMP6_IN_ERRORS);
        hp_buf_free(b);
        return;
    }
    uint8_t type = *(const uint8_t *)hp_buf_data(b);
    if (type >= HP_NDP_ROUTER_SOLICIT && type <= HP_NDP_REDIRECT) {
        /* NDP validates its messages itself (RFC 4861 6.1, 7.1). */
        hp__ndp_input(ifc, b, ip);
        return;
    }
    if (sum6(ip->src, ip->dst, b) != 0) {
        hp__ctr(s, HP_CTR_ICMP6_IN_CSUM_ERRORS);
        hp__ctr(s, HP_CTR_ICMP6_IN_ERRORS);
        hp_buf_free(b);
        return;
    }
    struct hp_icmp6_repr m;
    int rc = hp_icmp6_parse(hp_buf_data(b), b->data_len, NULL, &m, 0);
    if (rc < 0) {
        /* RFC 4443 2.4(a): unknown informational messages are discarded;
         * 2.4(b): unknown errors go to the upper layer, and none of ours
         * wants them. */
        if (rc != -HP_WIRE_UNSUPPORTED)
            hp__ctr(s, HP_CTR_ICMP6_IN_ERRORS);
        else if (type >= 128)
            hp__ctr(s, HP_CTR_ICMP6_IN_UNSUPPORTED);
        hp_buf_free(b);
        return;
    }
    switch (m.type) {
    case HP_ICMP6_ECHO_REQUEST:
        hp__ctr(s, HP_CTR_ICMP6_IN_ECHOS);
        echo_reply6(ifc, b, ip);
        return;
    case HP_ICMP6_ECHO_REPLY:
        hp__ctr(s, HP_CTR_ICMP6_IN_ECHO_REPS);
        break;
    case HP_ICMP6_DEST_UNREACH:
        hp__ctr(s, HP_CTR_ICMP6_IN_DEST_UNREACHS);
        break;
    case HP_ICMP6_PACKET_TOO_BIG:
        too_big6(s, &m);
        break;
    default: /* time exceeded, parameter problem */
        break;
    }
    hp_buf_free(b);
}

/* ---- errors ------------------------------------------------------------------------------ */

void hp__icmp6_error(struct hp__iface *ifc, const struct hp_buf *orig, uint8_t type, uint8_t code,
                     uint32_t info)
{
    struct hp_stack *s = ifc->s;
    uint32_t l3 = orig->l3_len;
    if (l3 < HP_IPV6_HDR_LEN || hp_buf_headroom(orig) < l3)
        return;
    const uint8_t *h = (const uint8_t *)hp_buf_data(orig) - l3;
    const uint8_t *src = hp_ipv6_src_ptr(h), *dst = hp_ipv6_dst_ptr(h);
    /* RFC 4443 2.4(e): never from an unspecified or multicast source ... */
    if (hp_ipv6_is_unspecified(src) || hp_ipv6_is_multicast(src))
        return;
    /* ... nor about a multicast destination (IPv6 or link layer), except
     * packet too big and an unrecognised option that asked for it. */
    bool mcast_ok = type == HP_ICMP6_PACKET_TOO_BIG ||
                    (type == HP_ICMP6_PARAM_PROBLEM && code == HP_ICMP6_PARAM_OPTION);
    if (!mcast_ok) {
        if (hp_ipv6_is_multicast(dst))
            return;
        if (orig->l2_len >= 14 && hp_buf_headroom(orig) >= l3 + orig->l2_len &&
            (h[-(int)orig->l2_len] & 1u))
            return;
    }
    /* ... nor about an ICMPv6 error message (2.4(e.1)). */
    uint8_t proto;
    if (hp__ipv6_walk(h, l3, HP_IPV6_HDR_LEN, h[6], &proto, NULL) == (long)l3 &&
        proto == HP_IPPROTO_ICMPV6) {
        uint8_t t;
        if (hp_buf_copy_out(orig, 0, 1, &t) != 0 || t < 128)
            return;
    }
    if (!hp__bucket_take(s, &s->icmp6_bucket)) {
        hp__ctr(s, HP_CTR_ICMP6_OUT_RATE_LIMITED);
        return;
    }
    struct hp__route r;
    if (hp__route6(s, src, &r) != 0) {
        hp__ctr(s, HP_CTR_IP6_OUT_NO_ROUTES);
        return;
    }
    if (hp__is_local6(ifc, dst))
        memcpy(r.src, dst, 16);
    size_t q = hp_icmp6_quote_len(l3 + orig->pkt_len);
    struct hp_buf *b = hp__alloc(r.ifc);
    uint8_t *out = b ? hp_buf_append(b, (uint32_t)(HP_ICMP6_HDR_LEN + q)) : NULL;
    if (!out) {
        hp_buf_free(b);
        return;
    }
    memcpy(out + HP_ICMP6_HDR_LEN, h, l3);
    (void)hp_buf_copy_out(orig, 0, (uint32_t)(q - l3), out + HP_ICMP6_HDR_LEN + l3);
    struct hp_icmp6_repr m = {.type = type,
                              .code = code,
                              .data = out + HP_ICMP6_HDR_LEN,
                              .data_len = q};
    if (type == HP_ICMP6_PARAM_PROBLEM)
        m.pointer = info;
    if (type == HP_ICMP6_PACKET_TOO_BIG)
        m.mtu = info;
    struct hp_l4_addrs a = {.family = HP_AF_INET6, .src = r.src, .dst = src};
    if (hp_icmp6_emit(&m, &a, out, HP_ICMP6_HDR_LEN + q) < 0) {
        hp_buf_free(b);
        return;
    }
    hp__ctr(s, HP_CTR_ICMP6_OUT_MSGS);
    if (type == HP_ICMP6_DEST_UNREACH)
        hp__ctr(s, HP_CTR_ICMP6_OUT_DEST_UNREACHS);
    else if (type == HP_ICMP6_TIME_EXCEEDED)
        hp__ctr(s, HP_CTR_ICMP6_OUT_TIME_EXCEEDS);
    (void)hp__ipv6_output(s, &r, src, HP_IPPROTO_ICMPV6, b);
}

/* ---- ping ----------------------------------------------------------------------------------- */

int hp__ping6(struct hp_stack *s, const uint8_t dst[16], uint16_t ident, uint16_t seq, size_t len)
{
    if (len > 65535u - HP_ICMP6_HDR_LEN)
        return -EMSGSIZE;
    struct hp__route r;
    if (hp__route6(s, dst, &r) != 0) {
        hp__ctr(s, HP_CTR_IP6_OUT_NO_ROUTES);
        return -EHOSTUNREACH;
    }
    struct hp_buf *b = hp__chain_alloc(r.ifc, (uint32_t)(HP_ICMP6_HDR_LEN + len));
    if (!b)
        return -ENOBUFS;
    uint8_t hdr[HP_ICMP6_HDR_LEN] = {HP_ICMP6_ECHO_REQUEST, 0, 0, 0};
    hp_put_be16(hdr + 4, ident);
    hp_put_be16(hdr + 6, seq);
    hp__chain_write(b, 0, hdr, sizeof(hdr));
    hp__ping_fill(b, HP_ICMP6_HDR_LEN, (uint32_t)len);
    uint16_t ck = sum6(r.src, dst, b);
    hp__chain_write(b, 2, &ck, 2);
    hp__ctr(s, HP_CTR_ICMP6_OUT_MSGS);
    hp__ctr(s, HP_CTR_ICMP6_OUT_ECHOS);
    return hp__ipv6_output(s, &r, dst, HP_IPPROTO_ICMPV6, b);
}
