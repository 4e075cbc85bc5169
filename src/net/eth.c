/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet: receive filtering and demultiplexing by EtherType, header output, transmit bursts. */
#include <string.h>

#include "internal.h"

/* Whether ifc listens to the group MAC address dst. IPv4 multicast
 * (01:00:5e, RFC 1112 6.4) is not joined: the stack has no IGMP and no
 * group membership API yet. IPv6: 33:33 + the low 32 bits of a group we are
 * in (RFC 2464 7): all-nodes and the solicited-node groups. */
static bool listens_mcast(const struct hp__iface *ifc, const uint8_t dst[6])
{
    if (hp_eth_is_broadcast(dst))
        return true;
    if (dst[0] != 0x33 || dst[1] != 0x33)
        return false;
    static const uint8_t all_nodes[16] = {0xFF, 0x02, [15] = 1};
    uint8_t m[6];
    hp_ipv6_mcast_mac(all_nodes, m);
    if (memcmp(m, dst, 6) == 0)
        return true;
    for (int i = 0; i < ifc->n6; i++) {
        if (ifc->v6[i].state == HP_ADDR_DUPLICATE)
            continue;
        uint8_t sn[16];
        hp_ipv6_solicited_node(ifc->v6[i].addr, sn);
        hp_ipv6_mcast_mac(sn, m);
        if (memcmp(m, dst, 6) == 0)
            return true;
    }
    return false;
}

void hp__eth_input(struct hp__iface *ifc, struct hp_buf *b)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_ETH_IN_FRAMES);
    const uint8_t *p = hp_buf_data(b);
    size_t len = b->data_len;
    struct hp_eth_repr eth;
    size_t hlen;
    int rc = hp_eth_parse(p, len, &eth, &hlen);
    if (rc < 0) {
        /* A tag we cannot read (802.1ad, stacked tags) is a VLAN frame we
         * do not handle rather than garbage; an 802.3 length field (LLC)
         * is a protocol we do not speak. */
        uint16_t tpid = len >= HP_ETH_HDR_LEN ? hp_get_be16(p + 12) : 0;
        if (rc == -HP_WIRE_UNSUPPORTED && (tpid == HP_ETHERTYPE_VLAN || tpid == HP_ETHERTYPE_QINQ))
            hp__ctr(s, HP_CTR_ETH_IN_VLAN);
        else if (rc == -HP_WIRE_UNSUPPORTED && tpid < HP_ETHERTYPE_MIN)
            hp__ctr(s, HP_CTR_ETH_IN_UNKNOWN_TYPE);
        else
            hp__ctr(s, HP_CTR_ETH_IN_MALFORMED);
        hp_buf_free(b);
        return;
    }
    if (hp_eth_is_multicast(eth.dst) ? !listens_mcast(ifc, eth.dst)
                                     : memcmp(eth.dst, ifc->mac, 6) != 0) {
        hp__ctr(s, HP_CTR_ETH_IN_OTHER_HOST);
        hp_buf_free(b);
        return;
    }
    if (eth.has_vlan) {
        /* No VLAN interfaces yet: a tagged frame is not for any of ours
         * (a priority tag, VID 0, included). */
        hp__ctr(s, HP_CTR_ETH_IN_VLAN);
        hp_buf_free(b);
        return;
    }
    hp_buf_adj(b, (uint32_t)hlen);
    b->l2_len = (uint8_t)hlen;
    b->l3_len = 0;
    switch (eth.ethertype) {
    case HP_ETHERTYPE_IPV4:
        hp__ipv4_input(ifc, b);
        break;
    case HP_ETHERTYPE_IPV6:
        hp__ipv6_input(ifc, b);
        break;
    case HP_ETHERTYPE_ARP:
        hp__arp_input(ifc, b);
        break;
    default:
        hp__ctr(s, HP_CTR_ETH_IN_UNKNOWN_TYPE);
        hp_buf_free(b);
        break;
    }
}

void hp__eth_output(struct hp__iface *ifc, const uint8_t dst[6], uint16_t ethertype,
                    struct hp_buf *b)
{
    uint8_t *h = hp_buf_prepend(b, HP_ETH_HDR_LEN);
    if (!h) {
        /* No headroom (or shared data): the builder's bug, not the wire's,
         * but still a drop that must not leak. */
        hp__ctr(ifc->s, HP_CTR_ETH_OUT_DROPS);
        hp_buf_free(b);
        return;
    }
    struct hp_eth_repr eth = {.ethertype = ethertype};
    memcpy(eth.dst, dst, 6);
    memcpy(eth.src, ifc->mac, 6);
    hp_eth_emit(&eth, h, HP_ETH_HDR_LEN);
    b->l2_len = HP_ETH_HDR_LEN;
    hp__eth_xmit(ifc, b);
}

/*
 * hp__eth_xmit (inline, internal.h): inside hp_stack_poll frames wait for
 * the poll's flush, one burst to the link. Outside it (the application
 * sending after hp_stack_events, a timer's callback of the event loop),
 * nothing would flush them before the next poll: on a link that sends
 * without a system call (mem, memif: no HP_LINK_CAP_KERNEL) each goes to
 * the link at once, as lwIP's and smoltcp's egress after the application
 * do, so that a reply is not a poll late. Links into the kernel keep
 * batching until the poll, where one system call carries the burst.
 */
void hp__eth_flush(struct hp__iface *ifc)
{
    unsigned n = ifc->ntx;
    if (!n)
        return;
    ifc->ntx = 0;
    int r = hp_link_tx_burst(ifc->link, ifc->tx, n);
    unsigned took = r > 0 ? (unsigned)r : 0;
    if (took > n)
        took = n;
    hp__ctr_add(ifc->s, HP_CTR_ETH_OUT_FRAMES, took);
    if (took < n) {
        /* Ring full or link down: we do not hold frames across polls (the
         * upper layers retransmit what matters). */
        hp__ctr_add(ifc->s, HP_CTR_ETH_OUT_DROPS, n - took);
        hp_buf_free_bulk(ifc->tx + took, n - took);
    }
}
