/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers for the stack core: a stack on one end of a mem link pair, a hand-driven clock, and frame builders for the peer. */
#ifndef HP_TEST_NET_CORE_TEST_H
#define HP_TEST_NET_CORE_TEST_H

#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/wire.h>

#include "hp_test.h"
#include "net/internal.h"
#include "net/neigh.h"

/* The peer's identity on the link (addresses from RFC 2544 / RFC 5180). */
static const uint8_t CT_PEER_MAC[6] = {0x02, 0x00, 0x00, 0xAA, 0xBB, 0xCC};
static const uint8_t CT_OUR4[4] = {198, 18, 0, 1};
static const uint8_t CT_PEER4[4] = {198, 18, 0, 2};
static const uint8_t CT_OUR6[16] = {0x20, 0x01, 0x00, 0x02, [15] = 1};
static const uint8_t CT_PEER6[16] = {0x20, 0x01, 0x00, 0x02, [15] = 2};
static const uint8_t CT_BCAST[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

struct ct_env {
    struct hp_link *end[2]; /* end[0]: the stack's; end[1]: the peer's */
    struct hp_pool *pool;
    struct hp_stack *s;
    struct hp__iface *ifc;
    uint8_t mac[6]; /* the stack's MAC */
};

/* A stack with one interface on a mem pair; everything it sent while
 * being set up is drained from the peer. 0 or -1. */
static inline int ct_open(struct ct_env *e, const struct hp_stack_config *cfg)
{
    memset(e, 0, sizeof *e);
    if (hp_link_mem_pair(NULL, e->end) != 0)
        return -1;
    e->pool = hp_link_pool(e->end[0]);
    e->s = hp_stack_create(cfg);
    if (!e->s)
        return -1;
    int ix = hp_stack_add_iface(e->s, e->end[0]);
    if (ix != 0)
        return -1;
    e->ifc = e->s->ifaces[0];
    hp_link_mac(e->end[0], e->mac);
    return 0;
}

/* One poll round without touching s->now (tests move the clock by hand):
 * receive, run due timers, flush. */
static inline int ct_step(struct ct_env *e)
{
    struct hp_stack *s = e->s;
    int work = 0;
    for (int i = 0; i < s->nifaces; i++) {
        struct hp_buf *rx[HP__RX_BURST];
        int n = hp_link_rx_burst(s->ifaces[i]->link, rx, HP__RX_BURST);
        for (int k = 0; k < n; k++)
            hp__eth_input(s->ifaces[i], rx[k]);
        if (n > 0)
            work += n;
    }
    work += hp__timers_run(s);
    for (int i = 0; i < s->nifaces; i++)
        hp__eth_flush(s->ifaces[i]);
    return work;
}

/* Move the stack's clock forward and run a round. */
static inline int ct_advance_ms(struct ct_env *e, uint64_t ms)
{
    e->s->now += ms * 1000000u;
    return ct_step(e);
}

/* Frames the stack sent, received at the peer (the caller frees them). */
static inline int ct_recv(struct ct_env *e, struct hp_buf **out, unsigned n)
{
    int r = hp_link_rx_burst(e->end[1], out, n);
    return r < 0 ? 0 : r;
}

/* Free everything waiting at the peer; returns how many frames. */
static inline int ct_drain(struct ct_env *e)
{
    struct hp_buf *b[64];
    int total = 0, n;
    while ((n = ct_recv(e, b, 64)) > 0) {
        hp_buf_free_bulk(b, (unsigned)n);
        total += n;
    }
    return total;
}

static inline void ct_close(struct ct_env *e)
{
    hp_stack_destroy(e->s);
    e->s = NULL;
    if (e->end[1])
        ct_drain(e);
    hp_link_close(e->end[0]);
    hp_link_close(e->end[1]);
}

/* A frame from the peer: Ethernet header (to dst, from CT_PEER_MAC) and a
 * payload to fill; returns the payload pointer, the buffer in *out. */
static inline uint8_t *ct_frame(struct ct_env *e, const uint8_t dst[6], uint16_t type, size_t plen,
                                struct hp_buf **out)
{
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (!b)
        return NULL;
    uint8_t *p = hp_buf_append(b, (uint32_t)(HP_ETH_HDR_LEN + plen));
    if (!p) {
        hp_buf_free(b);
        return NULL;
    }
    struct hp_eth_repr eth = {.ethertype = type};
    memcpy(eth.dst, dst, 6);
    memcpy(eth.src, CT_PEER_MAC, 6);
    hp_eth_emit(&eth, p, HP_ETH_HDR_LEN);
    memset(p + HP_ETH_HDR_LEN, 0, plen);
    *out = b;
    return p + HP_ETH_HDR_LEN;
}

/* Transmit one frame from the peer to the stack. */
static inline int ct_send(struct ct_env *e, struct hp_buf *b)
{
    int r = hp_link_tx_burst(e->end[1], &b, 1);
    if (r != 1)
        hp_buf_free(b);
    return r == 1 ? 0 : -1;
}

/* An ARP packet from the peer. */
static inline int ct_send_arp(struct ct_env *e, const uint8_t dst[6], const struct hp_arp_repr *r)
{
    struct hp_buf *b;
    uint8_t *p = ct_frame(e, dst, HP_ETHERTYPE_ARP, HP_ARP_LEN, &b);
    if (!p)
        return -1;
    hp_arp_emit(r, p, HP_ARP_LEN);
    return ct_send(e, b);
}

/* An NDP message from the peer, in an IPv6 packet with hop limit hl. */
static inline int ct_send_ndp(struct ct_env *e, const uint8_t dst_mac[6], const uint8_t src[16],
                              const uint8_t dst[16], uint8_t hl, const struct hp_ndp_repr *r)
{
    size_t mlen = hp_ndp_repr_len(r);
    struct hp_buf *b;
    uint8_t *p = ct_frame(e, dst_mac, HP_ETHERTYPE_IPV6, HP_IPV6_HDR_LEN + mlen, &b);
    if (!p)
        return -1;
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6,
                              .hop_limit = hl,
                              .payload_len = (uint16_t)mlen};
    memcpy(ip.src, src, 16);
    memcpy(ip.dst, dst, 16);
    struct hp_l4_addrs a = {.family = 6, .src = src, .dst = dst};
    hp_ipv6_emit(&ip, p, HP_IPV6_HDR_LEN);
    hp_ndp_emit(r, &a, p + HP_IPV6_HDR_LEN, mlen);
    return ct_send(e, b);
}

/* Hand an NDP message straight to hp__ndp_input, as the ICMPv6 module
 * would after parsing the IPv6 header (independent of the IP modules). */
static inline void ct_inject_ndp(struct ct_env *e, const uint8_t src[16], const uint8_t dst[16],
                                 uint8_t hl, const struct hp_ndp_repr *r)
{
    size_t mlen = hp_ndp_repr_len(r);
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (!b)
        return;
    uint8_t *p = hp_buf_append(b, (uint32_t)(HP_IPV6_HDR_LEN + mlen));
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6,
                              .hop_limit = hl,
                              .payload_len = (uint16_t)mlen};
    memcpy(ip.src, src, 16);
    memcpy(ip.dst, dst, 16);
    struct hp_l4_addrs a = {.family = 6, .src = src, .dst = dst};
    hp_ipv6_emit(&ip, p, HP_IPV6_HDR_LEN);
    hp_ndp_emit(r, &a, p + HP_IPV6_HDR_LEN, mlen);
    struct hp_ipv6_repr parsed;
    if (hp_ipv6_parse(p, HP_IPV6_HDR_LEN + mlen, &parsed) != 0) {
        hp_buf_free(b);
        return;
    }
    hp_buf_adj(b, HP_IPV6_HDR_LEN);
    b->l2_len = 0;
    b->l3_len = HP_IPV6_HDR_LEN;
    hp__ndp_input(e->ifc, b, &parsed);
}

/* A minimal IPv4 packet (20-byte header + n bytes of payload) from src to
 * dst, data offset at the IP header, as the IP module hands it to
 * hp__neigh_output4. */
static inline struct hp_buf *ct_ip4_packet(struct ct_env *e, const uint8_t src[4],
                                           const uint8_t dst[4], uint16_t n, uint8_t fill)
{
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (!b)
        return NULL;
    uint8_t *p = hp_buf_append(b, 20u + n);
    struct hp_ipv4_repr ip = {.proto = 17, .ttl = 64, .payload_len = n};
    memcpy(ip.src, src, 4);
    memcpy(ip.dst, dst, 4);
    hp_ipv4_emit(&ip, p, 20);
    memset(p + 20, fill, n);
    return b;
}

static inline struct hp_buf *ct_ip6_packet(struct ct_env *e, const uint8_t src[16],
                                           const uint8_t dst[16], uint16_t n, uint8_t fill)
{
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (!b)
        return NULL;
    uint8_t *p = hp_buf_append(b, HP_IPV6_HDR_LEN + n);
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_NONE, .hop_limit = 64, .payload_len = n};
    memcpy(ip.src, src, 16);
    memcpy(ip.dst, dst, 16);
    hp_ipv6_emit(&ip, p, HP_IPV6_HDR_LEN);
    memset(p + HP_IPV6_HDR_LEN, fill, n);
    return b;
}

/* Views of a frame the stack sent: Ethernet parse + the payload. */
static inline const uint8_t *ct_eth(const struct hp_buf *b, struct hp_eth_repr *eth)
{
    size_t hl;
    if (hp_eth_parse(hp_buf_data(b), b->data_len, eth, &hl) != 0)
        return NULL;
    return (const uint8_t *)hp_buf_data(b) + hl;
}

/* Parse a frame the stack sent as IPv6 + NDP; true on success. */
static inline bool ct_parse_ndp(const struct hp_buf *b, struct hp_eth_repr *eth,
                                struct hp_ipv6_repr *ip, struct hp_ndp_repr *r)
{
    const uint8_t *p = ct_eth(b, eth);
    if (!p || eth->ethertype != HP_ETHERTYPE_IPV6)
        return false;
    size_t len = b->data_len - HP_ETH_HDR_LEN;
    if (hp_ipv6_parse(p, len, ip) != 0 || ip->next_header != HP_IPPROTO_ICMPV6)
        return false;
    struct hp_l4_addrs a = {.family = 6, .src = ip->src, .dst = ip->dst};
    return hp_ndp_parse(p + ip->l4_off, HP_IPV6_HDR_LEN + ip->payload_len - ip->l4_off, &a,
                        ip->hop_limit, r, HP_WIRE_VERIFY_CKSUM) == 0;
}

#endif
