/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4 for a host (RFC 791, RFC 1122 3.2.1): routing lookup, input checks and demultiplexing, output and fragmentation. */
#include <errno.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "../wire/ipv4_emit.h"
#include "internal.h"
#include "ip_local.h"

/* ---- prefixes and routes -------------------------------------------------- */

bool hp__ipv4_is_bcast(const struct hp__iface *ifc, const uint8_t a[4])
{
    if (hp_ipv4_is_broadcast(a))
        return true;
    for (int i = 0; i < ifc->n4; i++) {
        const struct hp__addr4 *ad = &ifc->v4[i];
        /* /31 and /32 have no broadcast address (RFC 3021). */
        if (ad->plen >= 31 || !hp__prefix_match(a, ad->addr, ad->plen))
            continue;
        uint32_t host = hp_get_be32(a) & (ad->plen ? (0xFFFFFFFFu >> ad->plen) : 0xFFFFFFFFu);
        uint32_t ones = ad->plen ? (0xFFFFFFFFu >> ad->plen) : 0xFFFFFFFFu;
        if (host == ones)
            return true;
    }
    return false;
}

/* d (host order) in ad's prefix: one word compare (hp__prefix_match's
 * loop is for IPv6's four words; every datagram a UDP socket sends is
 * routed, this once per address of each interface). */
static inline bool match4(uint32_t d, const struct hp__addr4 *ad)
{
    unsigned plen = ad->plen; /* 0 to 32 (hp_stack_add_addr) */
    uint32_t m = plen ? 0xFFFFFFFFu << (32 - plen) : 0;
    return ((d ^ hp_get_be32(ad->addr)) & m) == 0;
}

/* The longest connected prefix holding a; NULL when none. */
static const struct hp__addr4 *connected4(struct hp_stack *s, const uint8_t a[4],
                                          struct hp__iface **out)
{
    const struct hp__addr4 *best = NULL;
    uint32_t d = hp_get_be32(a);
    for (int i = 0; i < s->nifaces; i++) {
        struct hp__iface *ifc = s->ifaces[i];
        if (!ifc)
            continue;
        for (int j = 0; j < ifc->n4; j++) {
            const struct hp__addr4 *ad = &ifc->v4[j];
            if (match4(d, ad) && (!best || ad->plen > best->plen)) {
                best = ad;
                *out = ifc;
            }
        }
    }
    return best;
}

int hp__route4(struct hp_stack *s, const uint8_t dst[4], struct hp__route *r)
{
    memset(r, 0, sizeof(*r));
    struct hp__iface *ifc = NULL;
    const struct hp__addr4 *ad = NULL;
    if (hp_ipv4_is_broadcast(dst) || hp_ipv4_is_multicast(dst)) {
        /* Link-scope destinations: the first interface with an address. */
        for (int i = 0; i < s->nifaces && !ad; i++)
            if (s->ifaces[i] && s->ifaces[i]->n4 > 0) {
                ifc = s->ifaces[i];
                ad = &ifc->v4[0];
            }
        if (!ad)
            return -ENETUNREACH;
        memcpy(r->nexthop, dst, 4);
    } else if ((ad = connected4(s, dst, &ifc)) != NULL) {
        memcpy(r->nexthop, dst, 4);
    } else {
        if (!s->has_gw4)
            return -ENETUNREACH;
        /* The gateway itself must be on a connected prefix. */
        if ((ad = connected4(s, s->gw4, &ifc)) == NULL)
            return -EHOSTUNREACH;
        memcpy(r->nexthop, s->gw4, 4);
    }
    r->ifc = ifc;
    memcpy(r->src, ad->addr, 4);
    return 0;
}

/* ---- input ------------------------------------------------------------------ */

static bool for_us4(const struct hp__iface *ifc, const uint8_t dst[4])
{
    static const uint8_t all_hosts[4] = {224, 0, 0, 1}; /* RFC 1112 4 */
    return hp__is_local4(ifc, dst) || hp__ipv4_is_bcast(ifc, dst) || memcmp(dst, all_hosts, 4) == 0;
}

void hp__ipv4_input(struct hp__iface *ifc, struct hp_buf *b)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_IP_IN_RECEIVES);
    if (b->next && hp_buf_linearize(b) != 0) {
        hp__ctr(s, HP_CTR_IP_IN_HDR_ERRORS);
        hp_buf_free(b);
        return;
    }
    const uint8_t *p = hp_buf_data(b);
    struct hp_ipv4_repr ip;
    int rc = hp_ipv4_parse(p, b->data_len, &ip, HP_WIRE_VERIFY_CKSUM);
    if (rc < 0) {
        hp__ctr(s, rc == -HP_WIRE_TRUNCATED      ? HP_CTR_IP_IN_TRUNCATED
                   : rc == -HP_WIRE_BAD_CHECKSUM ? HP_CTR_IP_IN_CSUM_ERRORS
                                                 : HP_CTR_IP_IN_HDR_ERRORS);
        hp_buf_free(b);
        return;
    }
    /* Ethernet pads short frames: bytes past Total Length are not ours. */
    uint32_t total = (uint32_t)ip.hdr_len + ip.payload_len;
    if (b->data_len > total)
        (void)hp_buf_trim(b, b->data_len - total);
    /* A host neither forwards nor accepts datagrams for others (RFC 1122
     * 3.3.4.2, 3.2.1.3). */
    if (!for_us4(ifc, ip.dst)) {
        hp__ctr(s, HP_CTR_IP_IN_ADDR_ERRORS);
        hp_buf_free(b);
        return;
    }
    if (ip.mf || ip.frag_off) {
        b->l3_len = ip.hdr_len;
        b = hp__reasm4(ifc, b, &ip);
        if (!b)
            return;
        ip.mf = false;
        ip.frag_off = 0;
        ip.hdr_len = b->l3_len;
        ip.payload_len = (uint16_t)b->pkt_len;
    } else {
        b->l3_len = ip.hdr_len;
        hp_buf_adj(b, ip.hdr_len);
    }
    switch (ip.proto) {
    case HP_IPPROTO_ICMP:
        hp__ctr(s, HP_CTR_IP_IN_DELIVERS);
        hp__icmp4_input(ifc, b, &ip);
        return;
    case HP_IPPROTO_UDP:
        hp__ctr(s, HP_CTR_IP_IN_DELIVERS);
        hp__udp_input(ifc, b, HP_AF_INET4, ip.src, ip.dst);
        return;
    case HP_IPPROTO_TCP:
        hp__ctr(s, HP_CTR_IP_IN_DELIVERS);
        hp__tcp_input(ifc, b, HP_AF_INET4, ip.src, ip.dst);
        return;
    default:
        /* RFC 1122 3.2.2.1: protocol unreachable. */
        hp__ctr(s, HP_CTR_IP_IN_UNKNOWN_PROTOS);
        hp__icmp4_error(ifc, b, HP_ICMP_DEST_UNREACH, HP_ICMP_UNREACH_PROTO, 0);
        hp_buf_free(b);
        return;
    }
}

/* ---- output ----------------------------------------------------------------- */

/* Fragments at most this many (65535 bytes over the 68-byte minimum MTU). */
#define MAX_OUT_FRAGS 1366

static int fragment4(struct hp_stack *s, const struct hp__route *r, struct hp_ipv4_repr *ip,
                     struct hp_buf *b)
{
    struct hp__iface *ifc = r->ifc;
    uint32_t len = b->pkt_len;
    /* RFC 791 3.2: every fragment but the last carries a multiple of 8. */
    uint32_t per = (ifc->mtu - HP_IPV4_HDR_LEN) & ~7u;
    uint32_t n = (len + per - 1) / per;
    struct hp_buf *f[MAX_OUT_FRAGS];
    if (per < 8 || n > MAX_OUT_FRAGS) {
        hp__ctr(s, HP_CTR_IP_FRAG_FAILS);
        hp__ctr(s, HP_CTR_IP_OUT_DISCARDS);
        hp_buf_free(b);
        return -EMSGSIZE;
    }
    if (hp_buf_alloc_bulk(ifc->pool, f, n) < 0) {
        hp__ctr(s, HP_CTR_NO_BUFFERS);
        hp__ctr(s, HP_CTR_IP_FRAG_FAILS);
        hp__ctr(s, HP_CTR_IP_OUT_DISCARDS);
        hp_buf_free(b);
        return -ENOBUFS;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t off = i * per, cnt = len - off < per ? len - off : per;
        uint8_t *d = hp_buf_append(f[i], HP_IPV4_HDR_LEN + cnt);
        if (!d) {
            hp_buf_free_bulk(f, n);
            hp__ctr(s, HP_CTR_IP_FRAG_FAILS);
            hp__ctr(s, HP_CTR_IP_OUT_DISCARDS);
            hp_buf_free(b);
            return -EMSGSIZE;
        }
        ip->frag_off = (uint16_t)off;
        ip->mf = off + cnt < len;
        ip->payload_len = (uint16_t)cnt;
        (void)hp_ipv4_emit(ip, d, HP_IPV4_HDR_LEN);
        (void)hp_buf_copy_out(b, off, cnt, d + HP_IPV4_HDR_LEN);
    }
    hp_buf_free(b);
    hp__ctr(s, HP_CTR_IP_FRAG_OKS);
    hp__ctr_add(s, HP_CTR_IP_FRAG_CREATES, n);
    for (uint32_t i = 0; i < n; i++)
        hp__neigh_output4(ifc, r->nexthop, f[i]);
    return 0;
}

/*
 * A unicast datagram whose next hop's MAC is cached and usable: the IPv4
 * and Ethernet headers written together into b's headroom and the frame
 * queued, without the generic steps (a header pushed per layer, the
 * broadcast and multicast checks, the neighbour state machine) that
 * hp__neigh_output4 takes. false, b untouched, when that does not apply:
 * no usable entry, no headroom, shared data.
 */
static bool out_fast(const struct hp__route *r, const struct hp_ipv4_repr *ip, struct hp_buf *b)
{
    struct hp__iface *ifc = r->ifc;
    if (hp_buf_headroom(b) < HP_ETH_HDR_LEN + HP_IPV4_HDR_LEN || b->next)
        return false;
    const uint8_t *mac = hp__neigh_mac4(ifc, r->nexthop);
    uint8_t *h = mac ? hp_buf_prepend(b, HP_ETH_HDR_LEN + HP_IPV4_HDR_LEN) : NULL;
    if (!h)
        return false;
    memcpy(h, mac, 6);
    memcpy(h + 6, ifc->mac, 6);
    hp_put_be16(h + 12, HP_ETHERTYPE_IPV4);
    (void)hp__ipv4_emit20(ip, h + HP_ETH_HDR_LEN);
    b->l2_len = HP_ETH_HDR_LEN;
    b->l3_len = HP_IPV4_HDR_LEN;
    hp__eth_xmit(ifc, b);
    return true;
}

/*
 * A next hop hp__neigh_output4 would resolve through the neighbour table
 * (not a broadcast, multicast, 0/8, 127/8 or 240/4 address): the same
 * frame goes out of out_fast when its entry is usable. TCP knows this of
 * its peer already (HP__IP_UNICAST); UDP, ICMP and the rest ask here, the
 * broadcast test a word compare per address of the interface.
 */
static inline bool unicast_hop4(const struct hp__iface *ifc, const uint8_t a[4])
{
    return a[0] != 0 && a[0] != 127 && a[0] < 224 && !hp__is_bcast4(ifc, a);
}

int hp__ipv4_output(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[4],
                    uint8_t proto, struct hp_buf *b)
{
    return hp__ipv4_output_x(s, r, dst, proto, 0, b);
}

int hp__ipv4_output_x(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[4],
                      uint8_t proto, unsigned xf, struct hp_buf *b)
{
    hp__ctr(s, HP_CTR_IP_OUT_REQUESTS);
    uint32_t len = b->pkt_len;
    if (len > 65535u - HP_IPV4_HDR_LEN) {
        hp__ctr(s, HP_CTR_IP_OUT_DISCARDS);
        hp_buf_free(b);
        return -EMSGSIZE;
    }
    struct hp_ipv4_repr ip = {
        .proto = proto,
        .ttl = s->cfg.default_ttl ? s->cfg.default_ttl : 64,
        .payload_len = (uint16_t)len,
    };
    memcpy(ip.src, r->src, 4);
    memcpy(ip.dst, dst, 4);
    ip.df = (xf & HP__IP_DF) != 0;
    if (xf & HP__IP_ECT0)
        ip.dscp_ecn = 2; /* ECT(0), RFC 3168 5 */
    bool frag = len + HP_IPV4_HDR_LEN > r->ifc->mtu;
    if (frag && ip.df) {
        hp__ctr(s, HP_CTR_IP_FRAG_FAILS);
        hp__ctr(s, HP_CTR_IP_OUT_DISCARDS);
        hp_buf_free(b);
        return -EMSGSIZE;
    }
    /* Per destination, never one counter for all (RFC 6864 4, RFC 7739);
     * a datagram with DF that goes whole is atomic (RFC 6864 4.1). */
    ip.ident = hp__ip4_ident(s, ip.src, ip.dst, proto, ip.df && !frag);
    if (frag)
        return fragment4(s, r, &ip, b);
    if (((xf & HP__IP_UNICAST) || unicast_hop4(r->ifc, r->nexthop)) && out_fast(r, &ip, b))
        return 0;
    uint8_t *h = hp__push_header(r->ifc, &b, HP_IPV4_HDR_LEN);
    if (!h) {
        hp__ctr(s, HP_CTR_IP_OUT_DISCARDS);
        return -ENOBUFS;
    }
    (void)hp_ipv4_emit(&ip, h, HP_IPV4_HDR_LEN);
    b->l3_len = HP_IPV4_HDR_LEN;
    hp__neigh_output4(r->ifc, r->nexthop, b);
    return 0;
}

/* ---- prepared paths (struct hp__ip4_path) ----------------------------------------- */

void hp__ip4_path_make(struct hp_stack *s, struct hp__ip4_path *p, const struct hp__route *r,
                       const uint8_t dst[4], uint8_t proto)
{
    p->ifc = r->ifc;
    memcpy(p->src, r->src, 4);
    memcpy(p->dst, dst, 4);
    memcpy(p->nexthop, r->nexthop, 4);
    uint32_t a, d;
    memcpy(&a, p->src, 4);
    memcpy(&d, p->dst, 4);
    p->addr_sum = hp_cksum_add(a, d);
    p->ttl_proto = (uint16_t)((s->cfg.default_ttl ? s->cfg.default_ttl : 64) << 8 | proto);
    /* Broadcast and the special prefixes depend on the interface's
     * addresses, which move route_gen when they change. */
    p->unicast = unicast_hop4(r->ifc, r->nexthop);
    p->gen = s->route_gen;
}

bool hp__ip4_path_send(struct hp_stack *s, const struct hp__ip4_path *p, struct hp_buf *b)
{
    struct hp__iface *ifc = p->ifc;
    uint32_t len = b->pkt_len;
    if (!p->unicast || len + HP_IPV4_HDR_LEN > ifc->mtu || b->next ||
        hp_buf_headroom(b) < HP_ETH_HDR_LEN + HP_IPV4_HDR_LEN)
        return false;
    const uint8_t *mac = hp__neigh_mac4(ifc, p->nexthop);
    /* NULL for shared data as well (hp_buf_prepend). */
    uint8_t *h = mac ? hp_buf_prepend(b, HP_ETH_HDR_LEN + HP_IPV4_HDR_LEN) : NULL;
    if (!h)
        return false;
    hp__ctr(s, HP_CTR_IP_OUT_REQUESTS);
    /* DF clear, as hp__ipv4_output sends it: the ID counts per destination. */
    uint16_t id = hp__ip4_ident(s, p->src, p->dst, (uint8_t)(p->ttl_proto & 0xFFu), false);
    memcpy(h, mac, 6);
    memcpy(h + 6, ifc->mac, 6);
    hp_put_be16(h + 12, HP_ETHERTYPE_IPV4);
    uint8_t *ip = h + HP_ETH_HDR_LEN;
    uint32_t tot = len + HP_IPV4_HDR_LEN;
    hp_put_be16(ip, 0x4500u);
    hp_put_be16(ip + 2, (uint16_t)tot);
    hp_put_be16(ip + 4, id);
    hp_put_be16(ip + 6, 0);
    hp_put_be16(ip + 8, p->ttl_proto);
    memcpy(ip + 12, p->src, 4);
    memcpy(ip + 16, p->dst, 4);
    /* From the values and the path's sum, not read back (hp_cksum_from_host16). */
    uint16_t c = hp_cksum_fold(hp_cksum_add(
        p->addr_sum, hp_cksum_from_host16((uint64_t)0x4500u + tot + id + p->ttl_proto)));
    memcpy(ip + 10, &c, 2);
    b->l2_len = HP_ETH_HDR_LEN;
    b->l3_len = HP_IPV4_HDR_LEN;
    hp__eth_xmit(ifc, b);
    return true;
}

/* ---- chains, shared by the IP modules ------------------------------------------- */

uint8_t *hp__push_header(struct hp__iface *ifc, struct hp_buf **b, uint32_t len)
{
    uint8_t *h = hp_buf_prepend(*b, len);
    if (h)
        return h;
    /* No headroom (or shared data): the header gets a buffer of its own. */
    struct hp_buf *hb = hp__alloc(ifc);
    if (!hb || !(h = hp_buf_append(hb, len)) || hp_buf_chain(hb, *b) != 0) {
        hp_buf_free(hb);
        hp_buf_free(*b);
        *b = NULL;
        return NULL;
    }
    *b = hb;
    return h;
}

uint32_t hp__chain_sum(const struct hp_buf *b)
{
    uint32_t sum = 0;
    size_t pos = 0;
    for (; b; b = b->next) {
        uint32_t part = hp_cksum_partial(hp_buf_data(b), b->data_len, 0);
        /* Fold to 16 bits; a segment starting at an odd offset of the whole
         * has its bytes in the other halves of the words (RFC 1071 2(B)). */
        part = (part & 0xFFFF) + (part >> 16);
        part = (part & 0xFFFF) + (part >> 16);
        if (pos & 1)
            part = ((part << 8) | (part >> 8)) & 0xFFFF;
        sum = hp_cksum_add(sum, part);
        pos += b->data_len;
    }
    return sum;
}

struct hp_buf *hp__chain_alloc(struct hp__iface *ifc, uint32_t len)
{
    struct hp_buf *head = NULL;
    do {
        struct hp_buf *seg = hp__alloc(ifc);
        if (!seg) {
            hp_buf_free(head);
            return NULL;
        }
        uint32_t n = hp_buf_tailroom(seg);
        if (n > len)
            n = len;
        (void)hp_buf_append(seg, n);
        len -= n;
        if (!head)
            head = seg;
        else if (hp_buf_chain(head, seg) != 0) {
            hp_buf_free(seg);
            hp_buf_free(head);
            return NULL;
        }
    } while (len > 0);
    return head;
}

void hp__chain_write(struct hp_buf *b, uint32_t off, const void *src, uint32_t len)
{
    const uint8_t *p = src;
    for (; b && len; b = b->next) {
        if (off >= b->data_len) {
            off -= b->data_len;
            continue;
        }
        uint32_t n = b->data_len - off < len ? b->data_len - off : len;
        memcpy((uint8_t *)hp_buf_data(b) + off, p, n);
        p += n;
        len -= n;
        off = 0;
    }
}

struct hp_buf *hp__chain_copy(struct hp__iface *ifc, const struct hp_buf *src)
{
    struct hp_buf *b = hp__chain_alloc(ifc, src->pkt_len);
    if (!b)
        return NULL;
    uint32_t off = 0;
    for (struct hp_buf *seg = b; seg; seg = seg->next) {
        (void)hp_buf_copy_out(src, off, seg->data_len, hp_buf_data(seg));
        off += seg->data_len;
    }
    return b;
}

bool hp__chain_private(const struct hp_buf *b)
{
    for (; b; b = b->next)
        if (hp_buf_refcnt(b) != 1 || (b->flags & HP_BUF_F_INDIRECT))
            return false;
    return true;
}
