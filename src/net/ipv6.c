/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 for a host (RFC 8200): routing lookup and source selection, input checks and demultiplexing, output and fragmentation. */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "ip_local.h"

/* ---- routes and source selection ------------------------------------------------ */

/* Link-local unicast and multicast of interface- or link-local scope
 * (RFC 4291 2.7: scope 1 or 2). */
static bool link_scope6(const uint8_t a[16])
{
    if (hp_ipv6_is_link_local(a))
        return true;
    return hp_ipv6_is_multicast(a) && (a[1] & 0x0F) <= 2;
}

/* A source on ifc for a destination of global scope (RFC 6724 5, rules 2
 * and 3 simplified): a preferred address on dst's prefix, else any
 * preferred global address, else the link-local one. */
static const struct hp__addr6 *source6(const struct hp__iface *ifc, const uint8_t dst[16])
{
    const struct hp__addr6 *any = NULL, *ll = NULL;
    for (int i = 0; i < ifc->n6; i++) {
        const struct hp__addr6 *a = &ifc->v6[i];
        if (a->state != HP_ADDR_PREFERRED)
            continue;
        if (hp_ipv6_is_link_local(a->addr)) {
            if (!ll)
                ll = a;
            continue;
        }
        if (hp__prefix_match(dst, a->addr, a->plen))
            return a;
        if (!any)
            any = a;
    }
    return any ? any : ll;
}

static struct hp__iface *connected6(struct hp_stack *s, const uint8_t a[16])
{
    struct hp__iface *best = NULL;
    int best_len = -1;
    for (int i = 0; i < s->nifaces; i++) {
        struct hp__iface *ifc = s->ifaces[i];
        if (!ifc)
            continue;
        for (int j = 0; j < ifc->n6; j++) {
            const struct hp__addr6 *ad = &ifc->v6[j];
            if (ad->plen > best_len && hp__prefix_match(a, ad->addr, ad->plen)) {
                best = ifc;
                best_len = ad->plen;
            }
        }
    }
    return best;
}

int hp__route6(struct hp_stack *s, const uint8_t dst[16], struct hp__route *r)
{
    memset(r, 0, sizeof(*r));
    struct hp__iface *ifc = NULL;
    if (link_scope6(dst)) {
        /* Link-local destinations need a zone; with no way to name one,
         * the first interface with an IPv6 address is the link. */
        for (int i = 0; i < s->nifaces && !ifc; i++)
            if (s->ifaces[i] && s->ifaces[i]->n6 > 0)
                ifc = s->ifaces[i];
        if (!ifc)
            return -ENETUNREACH;
        /* RFC 6724 rule 2: same scope, the link-local address (v6[0]). */
        memcpy(r->src, ifc->v6[0].addr, 16);
        memcpy(r->nexthop, dst, 16);
        r->ifc = ifc;
        return 0;
    }
    if ((ifc = connected6(s, dst)) != NULL) {
        memcpy(r->nexthop, dst, 16);
    } else {
        if (!s->has_gw6)
            return -ENETUNREACH;
        if (hp_ipv6_is_link_local(s->gw6)) {
            for (int i = 0; i < s->nifaces && !ifc; i++)
                if (s->ifaces[i] && s->ifaces[i]->n6 > 0)
                    ifc = s->ifaces[i];
        } else {
            ifc = connected6(s, s->gw6);
        }
        if (!ifc)
            return -EHOSTUNREACH;
        memcpy(r->nexthop, s->gw6, 16);
    }
    const struct hp__addr6 *src = source6(ifc, dst);
    if (!src)
        return -EHOSTUNREACH; /* no usable address yet (DAD running) */
    memcpy(r->src, src->addr, 16);
    r->ifc = ifc;
    return 0;
}

/* ---- extension headers -------------------------------------------------------------- */

long hp__ipv6_walk(const uint8_t *p, size_t avail, size_t start, uint8_t next, uint8_t *proto,
                   size_t *nh_field)
{
    size_t off = start, field = start == HP_IPV6_HDR_LEN ? 6 : 0;
    for (unsigned n = 0; n <= HP_IPV6_MAX_EXT_HDRS; n++) {
        size_t len;
        switch (next) {
        case HP_IPPROTO_HOPOPTS:
        case HP_IPPROTO_ROUTING:
        case HP_IPPROTO_DSTOPTS:
            if (off + 2 > avail)
                return -1;
            len = ((size_t)p[off + 1] + 1) * 8; /* RFC 8200 4.3 */
            break;
        case HP_IPPROTO_AH:
            if (off + 2 > avail)
                return -1;
            len = ((size_t)p[off + 1] + 2) * 4; /* RFC 4302 2.2 */
            break;
        case HP_IPPROTO_FRAGMENT:
            return -1;
        default:
            *proto = next;
            if (nh_field)
                *nh_field = field;
            return (long)off;
        }
        if (off + len > avail)
            return -1;
        field = off;
        next = p[off];
        off += len;
    }
    return -1;
}

/* ---- input ---------------------------------------------------------------------- */

static bool is_all_nodes(const uint8_t a[16])
{
    static const uint8_t all[16] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return memcmp(a, all, 16) == 0;
}

/* An ICMPv6 Neighbor Discovery message (RFC 4861 4) starts at b's data. */
static bool is_ndp(const uint8_t *l4, size_t len, uint8_t proto)
{
    if (proto != HP_IPPROTO_ICMPV6 || len < 1)
        return false;
    return l4[0] >= HP_NDP_ROUTER_SOLICIT && l4[0] <= HP_NDP_REDIRECT;
}

/* Parameter problem for a header the wire parser refused, where RFC 8200
 * says one is sent: an unknown option whose action bits ask for it (4.2),
 * a Routing header with Segments Left we cannot process (4.4), a fragment
 * of a bad length or past 65535 (4.5). Located by walking again here. */
static void hdr_problem(struct hp__iface *ifc, struct hp_buf *b, int reason)
{
    const uint8_t *p = hp_buf_data(b);
    size_t avail = b->data_len;
    if (avail < HP_IPV6_HDR_LEN || (p[0] >> 4) != 6)
        return;
    size_t end = HP_IPV6_HDR_LEN + hp_get_be16(p + 4);
    if (end > avail)
        return;
    uint8_t next = p[6];
    size_t off = HP_IPV6_HDR_LEN;
    uint8_t code = 0;
    uint32_t ptr = 0;
    bool found = false;
    for (unsigned n = 0; n < HP_IPV6_MAX_EXT_HDRS && !found && off + 8 <= end; n++) {
        size_t len = ((size_t)p[off + 1] + 1) * 8;
        if (next == HP_IPPROTO_HOPOPTS || next == HP_IPPROTO_DSTOPTS) {
            if (off + len > end)
                return;
            if (reason == -HP_WIRE_BAD_OPTION) {
                for (size_t o = off + 2; o < off + len;) {
                    uint8_t t = p[o];
                    if (t == 0) { /* Pad1 */
                        o++;
                        continue;
                    }
                    if (o + 2 > off + len)
                        break;
                    /* Known: PadN 1, Router Alert 5, Jumbo 0xC2. */
                    if (t != 1 && t != 5 && t != 0xC2 && (t >> 6) >= 2) {
                        /* 11: not when the destination is multicast; the
                         * error function applies that exception (code 2). */
                        if ((t >> 6) == 3 && hp_ipv6_is_multicast(p + 24))
                            return;
                        code = HP_ICMP6_PARAM_OPTION;
                        ptr = (uint32_t)o;
                        found = true;
                        break;
                    }
                    o += 2u + p[o + 1];
                }
            }
        } else if (next == HP_IPPROTO_ROUTING) {
            if (off + len > end)
                return;
            if (reason == -HP_WIRE_UNSUPPORTED || reason == -HP_WIRE_BAD_FIELD) {
                if (p[off + 3] != 0) {
                    code = HP_ICMP6_PARAM_HEADER;
                    ptr = (uint32_t)off + 2; /* the Routing Type, RFC 8200 4.4 */
                    found = true;
                }
            }
        } else if (next == HP_IPPROTO_FRAGMENT) {
            if (reason != -HP_WIRE_BAD_LENGTH)
                return;
            uint16_t w = hp_get_be16(p + off + 2);
            size_t data = end - (off + 8);
            code = HP_ICMP6_PARAM_HEADER;
            if ((w & 1) && (data % 8) != 0)
                ptr = 4; /* Payload Length */
            else
                ptr = (uint32_t)off + 2; /* Fragment Offset */
            found = true;
            len = 8;
        } else {
            return;
        }
        next = p[off];
        off += len;
    }
    if (!found)
        return;
    b->l3_len = HP_IPV6_HDR_LEN;
    hp_buf_adj(b, HP_IPV6_HDR_LEN);
    hp__icmp6_error(ifc, b, HP_ICMP6_PARAM_PROBLEM, code, ptr);
}

void hp__ipv6_input(struct hp__iface *ifc, struct hp_buf *b)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_IP6_IN_RECEIVES);
    if (b->next && hp_buf_linearize(b) != 0) {
        hp__ctr(s, HP_CTR_IP6_IN_HDR_ERRORS);
        hp_buf_free(b);
        return;
    }
    const uint8_t *p = hp_buf_data(b);
    struct hp_ipv6_repr ip;
    int rc = hp_ipv6_parse(p, b->data_len, &ip);
    if (rc < 0) {
        hp__ctr(s, rc == -HP_WIRE_TRUNCATED ? HP_CTR_IP6_IN_TRUNCATED : HP_CTR_IP6_IN_HDR_ERRORS);
        if (rc != -HP_WIRE_TRUNCATED && rc != -HP_WIRE_BAD_ADDRESS && rc != -HP_WIRE_BAD_VERSION &&
            (hp__is_local6(ifc, hp_ipv6_dst_ptr(p)) ||
             hp__is_mcast_member6(ifc, hp_ipv6_dst_ptr(p))))
            hdr_problem(ifc, b, rc);
        hp_buf_free(b);
        return;
    }
    uint32_t total = HP_IPV6_HDR_LEN + ip.payload_len;
    if (b->data_len > total)
        (void)hp_buf_trim(b, b->data_len - total);
    bool frag = ip.has_frag && (ip.mf || ip.frag_off);
    uint8_t proto = ip.next_header;
    bool ours =
        hp__is_local6(ifc, ip.dst) || is_all_nodes(ip.dst) || hp__is_mcast_member6(ifc, ip.dst);
    if (!ours) {
        /* A tentative address still receives Neighbor Discovery, which
         * duplicate address detection needs (RFC 4862 5.4.3). */
        bool ndp = false;
        if (!frag && ip.l4_off < b->data_len && hp__find6(ifc, ip.dst))
            ndp = is_ndp(p + ip.l4_off, b->data_len - ip.l4_off, proto);
        if (!ndp) {
            hp__ctr(s, HP_CTR_IP6_IN_ADDR_ERRORS);
            hp_buf_free(b);
            return;
        }
    }
    if (frag) {
        b = hp__reasm6_ex(ifc, b, &ip, &proto);
        if (!b)
            return;
    } else {
        if (ip.l4_off > 255) {
            /* l3_len is 8 bits: longer header chains are refused. */
            hp__ctr(s, HP_CTR_IP6_IN_HDR_ERRORS);
            hp_buf_free(b);
            return;
        }
        b->l3_len = (uint8_t)ip.l4_off;
        hp_buf_adj(b, ip.l4_off);
    }
    switch (proto) {
    case HP_IPPROTO_ICMPV6:
        hp__ctr(s, HP_CTR_IP6_IN_DELIVERS);
        hp__icmp6_input(ifc, b, &ip);
        return;
    case HP_IPPROTO_UDP:
        hp__ctr(s, HP_CTR_IP6_IN_DELIVERS);
        hp__udp_input(ifc, b, HP_AF_INET6, ip.src, ip.dst);
        return;
    case HP_IPPROTO_NONE:
        /* RFC 8200 4.7: nothing follows; not an error. */
        hp__ctr(s, HP_CTR_IP6_IN_DELIVERS);
        hp_buf_free(b);
        return;
    case HP_IPPROTO_TCP:
        hp__ctr(s, HP_CTR_IP6_IN_DELIVERS);
        hp__tcp_input(ifc, b, HP_AF_INET6, ip.src, ip.dst);
        return;
    default: {
        /* RFC 8200 4: parameter problem code 1 pointing at the Next Header
         * field that named the unknown protocol. */
        hp__ctr(s, HP_CTR_IP6_IN_UNKNOWN_PROTOS);
        const uint8_t *h = (const uint8_t *)hp_buf_data(b) - b->l3_len;
        uint8_t pr;
        size_t field = 6;
        if (hp__ipv6_walk(h, b->l3_len, HP_IPV6_HDR_LEN, h[6], &pr, &field) < 0)
            field = 6;
        hp__icmp6_error(ifc, b, HP_ICMP6_PARAM_PROBLEM, HP_ICMP6_PARAM_NEXT_HEADER,
                        (uint32_t)field);
        hp_buf_free(b);
        return;
    }
    }
}

/* ---- output ------------------------------------------------------------------ */

#define MAX_OUT_FRAGS6 64 /* 65535 bytes in fragments of the 1280-byte minimum MTU: 53 */

static int fragment6(struct hp_stack *s, const struct hp__route *r, struct hp_ipv6_repr *ip,
                     struct hp_buf *b)
{
    struct hp__iface *ifc = r->ifc;
    uint32_t len = b->pkt_len;
    /* RFC 8200 4.5: the unfragmentable part is the fixed header alone
     * (we add no extension headers); each fragment's data but the last is
     * a multiple of 8. */
    uint32_t per = (ifc->mtu - HP_IPV6_HDR_LEN - HP_IPV6_FRAG_HDR_LEN) & ~7u;
    uint32_t n = per ? (len + per - 1) / per : 0;
    struct hp_buf *f[MAX_OUT_FRAGS6];
    if (per < 8 || n > MAX_OUT_FRAGS6) {
        hp__ctr(s, HP_CTR_IP6_FRAG_FAILS);
        hp__ctr(s, HP_CTR_IP6_OUT_DISCARDS);
        hp_buf_free(b);
        return -EMSGSIZE;
    }
    if (hp_buf_alloc_bulk(ifc->pool, f, n) < 0) {
        hp__ctr(s, HP_CTR_NO_BUFFERS);
        hp__ctr(s, HP_CTR_IP6_FRAG_FAILS);
        hp__ctr(s, HP_CTR_IP6_OUT_DISCARDS);
        hp_buf_free(b);
        return -ENOBUFS;
    }
    ip->frag_id = hp__ip6_frag_ident(s, ip->src, ip->dst, ip->next_header);
    const uint32_t hl = HP_IPV6_HDR_LEN + HP_IPV6_FRAG_HDR_LEN;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t off = i * per, cnt = len - off < per ? len - off : per;
        uint8_t *d = hp_buf_append(f[i], hl + cnt);
        if (!d) {
            hp_buf_free_bulk(f, n);
            hp__ctr(s, HP_CTR_IP6_FRAG_FAILS);
            hp__ctr(s, HP_CTR_IP6_OUT_DISCARDS);
            hp_buf_free(b);
            return -EMSGSIZE;
        }
        ip->frag_off = (uint16_t)off;
        ip->mf = off + cnt < len;
        ip->payload_len = (uint16_t)(HP_IPV6_FRAG_HDR_LEN + cnt);
        (void)hp_ipv6_emit_frag(ip, d, hl);
        (void)hp_buf_copy_out(b, off, cnt, d + hl);
    }
    hp_buf_free(b);
    hp__ctr(s, HP_CTR_IP6_FRAG_OKS);
    hp__ctr_add(s, HP_CTR_IP6_FRAG_CREATES, n);
    for (uint32_t i = 0; i < n; i++)
        hp__neigh_output6(ifc, r->nexthop, f[i]);
    return 0;
}

int hp__ipv6_output(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[16],
                    uint8_t next, struct hp_buf *b)
{
    return hp__ipv6_output_x(s, r, dst, next, 0, b);
}

int hp__ipv6_output_x(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[16],
                      uint8_t next, unsigned xf, struct hp_buf *b)
{
    hp__ctr(s, HP_CTR_IP6_OUT_REQUESTS);
    uint32_t len = b->pkt_len;
    if (len > 65535u) {
        hp__ctr(s, HP_CTR_IP6_OUT_DISCARDS);
        hp_buf_free(b);
        return -EMSGSIZE;
    }
    struct hp_ipv6_repr ip = {
        .next_header = next,
        .frag_next = next,
        .hop_limit = s->cfg.default_ttl ? s->cfg.default_ttl : 64,
        .payload_len = (uint16_t)len,
    };
    memcpy(ip.src, r->src, 16);
    memcpy(ip.dst, dst, 16);
    if (xf & HP__IP_ECT0)
        ip.traffic_class = 2; /* ECT(0), RFC 3168 5 and 9.3 */
    if (len + HP_IPV6_HDR_LEN > r->ifc->mtu)
        return fragment6(s, r, &ip, b);
    uint8_t *h = hp__push_header(r->ifc, &b, HP_IPV6_HDR_LEN);
    if (!h) {
        hp__ctr(s, HP_CTR_IP6_OUT_DISCARDS);
        return -ENOBUFS;
    }
    (void)hp_ipv6_emit(&ip, h, HP_IPV6_HDR_LEN);
    b->l3_len = HP_IPV6_HDR_LEN;
    hp__neigh_output6(r->ifc, r->nexthop, b);
    return 0;
}
