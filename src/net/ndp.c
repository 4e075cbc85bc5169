/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 Neighbor Discovery for a host with static addresses (RFC 4861) and duplicate address detection (RFC 4862 5.4). */
#include <string.h>

#include "neigh.h"

#define MS (1000000ull)

static const uint8_t all_nodes[16] = {0xFF, 0x02, [15] = 1};

/* Build an NDP message from src to dst and send it: to dst_mac when given,
 * else through neighbour resolution of dst. NDP goes out here directly
 * (hop limit 255, RFC 4861 7.1), not through the IP output path. */
static bool ndp_send(struct hp__iface *ifc, const uint8_t src[16], const uint8_t dst[16],
                     const uint8_t *dst_mac, const struct hp_ndp_repr *r)
{
    size_t mlen = hp_ndp_repr_len(r);
    struct hp_buf *b = hp__alloc(ifc);
    if (!b)
        return false;
    uint8_t *p = hp_buf_append(b, (uint32_t)(HP_IPV6_HDR_LEN + mlen));
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6,
                              .hop_limit = 255,
                              .payload_len = (uint16_t)mlen};
    memcpy(ip.src, src, 16);
    memcpy(ip.dst, dst, 16);
    struct hp_l4_addrs a = {.family = HP_AF_INET6, .src = src, .dst = dst};
    if (!p || hp_ipv6_emit(&ip, p, HP_IPV6_HDR_LEN) < 0 ||
        hp_ndp_emit(r, &a, p + HP_IPV6_HDR_LEN, mlen) < 0) {
        hp_buf_free(b);
        return false;
    }
    if (dst_mac)
        hp__eth_output(ifc, dst_mac, HP_ETHERTYPE_IPV6, b);
    else
        hp__neigh_output6(ifc, dst, b);
    return true;
}

/* A neighbour advertisement for one of our addresses (RFC 4861 7.2.4). */
static void send_na(struct hp__iface *ifc, const uint8_t target[16], const uint8_t dst[16],
                    const uint8_t *dst_mac, bool solicited)
{
    struct hp_ndp_repr r = {.type = HP_NDP_NEIGHBOR_ADVERT,
                            .solicited = solicited,
                            .override = true,
                            .has_tll = true};
    memcpy(r.target, target, 16);
    memcpy(r.tll, ifc->mac, 6);
    if (ndp_send(ifc, target, dst, dst_mac, &r))
        hp__ctr(ifc->s, HP_CTR_NDP_OUT_NA);
}

/* RFC 4861 7.2.6: tell the link about an address that became usable. */
static void announce(struct hp__iface *ifc, struct hp__addr6 *a)
{
    uint8_t mac[6];
    hp_ipv6_mcast_mac(all_nodes, mac);
    send_na(ifc, a->addr, all_nodes, mac, false);
}

static bool on_prefix(const struct hp__addr6 *a, const uint8_t x[16])
{
    unsigned full = a->plen / 8, rest = a->plen % 8;
    if (memcmp(a->addr, x, full) != 0)
        return false;
    return !rest || ((a->addr[full] ^ x[full]) & (uint8_t)(0xFFu << (8 - rest))) == 0;
}

/* The source of a solicitation for target (RFC 4861 7.2.2): the prompting
 * packet's source when it is ours, else an address of ours on the target's
 * prefix, else the link-local address; only preferred addresses (RFC 4862
 * 5.4: a tentative address is not used). */
static const uint8_t *ns_source(struct hp__iface *ifc, const uint8_t target[16],
                                const uint8_t *hint)
{
    if (hint && hp__is_local6(ifc, hint))
        return hint;
    for (int i = 0; i < ifc->n6; i++)
        if (ifc->v6[i].state == HP_ADDR_PREFERRED && on_prefix(&ifc->v6[i], target))
            return ifc->v6[i].addr;
    for (int i = 0; i < ifc->n6; i++)
        if (ifc->v6[i].state == HP_ADDR_PREFERRED)
            return ifc->v6[i].addr;
    return NULL;
}

bool hp__ndp_solicit(struct hp__iface *ifc, const uint8_t target[16], const uint8_t *dst,
                     const uint8_t *src_hint)
{
    const uint8_t *src = ns_source(ifc, target, src_hint);
    if (!src)
        return false;
    struct hp_ndp_repr r = {.type = HP_NDP_NEIGHBOR_SOLICIT, .has_sll = true};
    memcpy(r.target, target, 16);
    memcpy(r.sll, ifc->mac, 6);
    uint8_t ipdst[16], mac[6];
    if (dst) {
        /* A unicast probe of a cached entry (RFC 4861 7.3.3, PROBE). */
        memcpy(ipdst, target, 16);
        memcpy(mac, dst, 6);
    } else {
        hp_ipv6_solicited_node(target, ipdst);
        hp_ipv6_mcast_mac(ipdst, mac);
    }
    if (!ndp_send(ifc, src, ipdst, mac, &r))
        return false;
    hp__ctr(ifc->s, HP_CTR_NDP_OUT_NS);
    return true;
}

/* DAD's solicitation (RFC 4862 5.4.2): from the unspecified address,
 * without a source link-layer option, to the solicited-node group. */
static void dad_solicit(struct hp__iface *ifc, const struct hp__addr6 *a)
{
    static const uint8_t unspec[16] = {0};
    struct hp_ndp_repr r = {.type = HP_NDP_NEIGHBOR_SOLICIT};
    memcpy(r.target, a->addr, 16);
    uint8_t ipdst[16], mac[6];
    hp_ipv6_solicited_node(a->addr, ipdst);
    hp_ipv6_mcast_mac(ipdst, mac);
    if (ndp_send(ifc, unspec, ipdst, mac, &r))
        hp__ctr(ifc->s, HP_CTR_NDP_OUT_NS);
}

static void dad_done(struct hp__iface *ifc, struct hp__addr6 *a)
{
    a->state = HP_ADDR_PREFERRED;
    hp__routes_changed(ifc->s); /* a source hp__route6 may pick now */
    announce(ifc, a);
}

void hp__ndp_dad_timer(struct hp_stack *s, struct hp__timer *t)
{
    struct hp__addr6 *a = HP__CONTAINER(t, struct hp__addr6, dad);
    if (a->state != HP_ADDR_TENTATIVE)
        return;
    if (a->dad_left > 0) {
        a->dad_left--;
        dad_solicit(a->ifc, a);
        if (hp__timer_arm(s, &a->dad, s->now + (uint64_t)s->cfg.neigh_retrans_ms * MS) == 0)
            return;
    }
    /* RFC 4862 5.4.5 not triggered within RetransTimer of the last
     * solicitation: the address is unique. */
    dad_done(a->ifc, a);
}

/* RFC 4862 5.4.5: someone else has (or is trying) the address. */
static void dad_duplicate(struct hp__iface *ifc, struct hp__addr6 *a)
{
    hp__timer_cancel(ifc->s, &a->dad);
    a->state = HP_ADDR_DUPLICATE;
    hp__routes_changed(ifc->s);
    hp__ctr(ifc->s, HP_CTR_NDP_DAD_DUPLICATES);
}

void hp__ndp_start_dad(struct hp__iface *ifc, struct hp__addr6 *a)
{
    struct hp_stack *s = ifc->s;
    hp__timer_cancel(s, &a->dad);
    hp__timer_init(&a->dad, HP__TK_DAD);
    a->ifc = ifc;
    if (s->cfg.flags & HP_STACK_F_NO_DAD) {
        dad_done(ifc, a);
        return;
    }
    /* DupAddrDetectTransmits = 1 (RFC 4862 5.1): one solicitation, then
     * RetransTimer of silence. The random initial delay of 5.4.2 is
     * skipped: it only spreads the load of many hosts booting at once. */
    a->state = HP_ADDR_TENTATIVE;
    a->dad_left = 0;
    hp__routes_changed(s); /* its prefix is connected from now on (connected6) */
    dad_solicit(ifc, a);
    if (hp__timer_arm(s, &a->dad, s->now + (uint64_t)s->cfg.neigh_retrans_ms * MS) < 0)
        dad_done(ifc, a); /* no memory for a timer: optimistic (RFC 4429) rather than stuck */
}

static void ns_input(struct hp__iface *ifc, const struct hp_ipv6_repr *ip,
                     const struct hp_ndp_repr *r)
{
    struct hp__addr6 *a = hp__find6(ifc, r->target);
    if (!a)
        return; /* RFC 4861 7.2.3: not one of ours */
    bool from_dad = hp_ipv6_is_unspecified(ip->src);
    if (a->state == HP_ADDR_TENTATIVE) {
        /* RFC 4862 5.4.3: a DAD probe for our tentative address means
         * another node wants it too; an NS from a real source is for the
         * address's future owner, not us (silently discarded). */
        if (from_dad)
            dad_duplicate(ifc, a);
        return;
    }
    if (a->state != HP_ADDR_PREFERRED)
        return;
    if (from_dad) {
        /* RFC 4861 7.2.4: to all-nodes, Solicited clear. */
        uint8_t mac[6];
        hp_ipv6_mcast_mac(all_nodes, mac);
        send_na(ifc, a->addr, all_nodes, mac, false);
        return;
    }
    /* RFC 4861 7.2.3: the source link-layer option creates or updates the
     * sender's entry (STALE when new or changed). */
    if (r->has_sll)
        hp__neigh_learn(ifc, HP_AF_INET6, ip->src, r->sll, HP__LEARN_CREATE);
    send_na(ifc, a->addr, ip->src, r->has_sll ? r->sll : NULL, true);
}

static void na_input(struct hp__iface *ifc, const struct hp_ipv6_repr *ip,
                     const struct hp_ndp_repr *r)
{
    (void)ip;
    struct hp__addr6 *a = hp__find6(ifc, r->target);
    if (a) {
        /* RFC 4862 5.4.4: an advertisement for our tentative address. For
         * a preferred one, another node misconfigured: we keep ours. */
        if (a->state == HP_ADDR_TENTATIVE)
            dad_duplicate(ifc, a);
        return;
    }
    /* RFC 4861 7.2.5: no entry, silently discarded (we never create
     * entries from advertisements we did not ask for). */
    if (!hp__neigh_advert(ifc, r->target, r->has_tll ? r->tll : NULL, r->solicited, r->override))
        hp__ctr(ifc->s, HP_CTR_NDP_IN_UNSOLICITED);
}

void hp__ndp_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip)
{
    struct hp_stack *s = ifc->s;
    /* The message is small: gather a chain (reassembled NDP is legal,
     * if odd) so the view reads it in one piece. */
    if (b->next && hp_buf_linearize(b) < 0) {
        hp__ctr(s, HP_CTR_NDP_IN_INVALID);
        hp_buf_free(b);
        return;
    }
    size_t len = b->data_len;
    size_t ulen = (size_t)HP_IPV6_HDR_LEN + ip->payload_len;
    if (ulen >= ip->l4_off && ulen - ip->l4_off < len)
        len = ulen - ip->l4_off; /* trailing link padding is not the message's */
    struct hp_l4_addrs a = {.family = HP_AF_INET6, .src = ip->src, .dst = ip->dst};
    struct hp_ndp_repr r;
    int rc = hp_ndp_parse(hp_buf_data(b), len, &a, ip->hop_limit, &r, HP_WIRE_VERIFY_CKSUM);
    if (rc < 0) {
        /* RFC 4861 7.1.1 / 7.1.2: a hop limit other than 255 means the
         * message crossed a router: it is not from this link. */
        hp__ctr(s, rc == -HP_WIRE_BAD_FIELD && ip->hop_limit != 255 ? HP_CTR_NDP_IN_BAD_HOPLIMIT
                                                                    : HP_CTR_NDP_IN_INVALID);
        hp_buf_free(b);
        return;
    }
    switch (r.type) {
    case HP_NDP_NEIGHBOR_SOLICIT:
        hp__ctr(s, HP_CTR_NDP_IN_NS);
        ns_input(ifc, ip, &r);
        break;
    case HP_NDP_NEIGHBOR_ADVERT:
        hp__ctr(s, HP_CTR_NDP_IN_NA);
        na_input(ifc, ip, &r);
        break;
    /* A host with static configuration: routers and redirects are
     * counted, not acted upon. */
    case HP_NDP_ROUTER_SOLICIT:
        hp__ctr(s, HP_CTR_NDP_IN_RS);
        break;
    case HP_NDP_ROUTER_ADVERT:
        hp__ctr(s, HP_CTR_NDP_IN_RA);
        break;
    case HP_NDP_REDIRECT:
        hp__ctr(s, HP_CTR_NDP_IN_REDIRECT);
        break;
    default:
        hp__ctr(s, HP_CTR_NDP_IN_INVALID);
        break;
    }
    hp_buf_free(b);
}
