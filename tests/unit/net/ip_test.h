/* SPDX-License-Identifier: BSD-3-Clause */
/* Test helpers for the IP modules: a stack with addresses and a known peer, IPv4/IPv6 packets from the peer, and views of what the stack answered. */
#ifndef HP_TEST_NET_IP_TEST_H
#define HP_TEST_NET_IP_TEST_H

#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "core_test.h"
#include "net/neigh.h"

/* A stack at CT_OUR4/24 and CT_OUR6/64 (no DAD) that already knows the
 * peer's MAC for CT_PEER4 and CT_PEER6. */
static inline int it_open(struct ct_env *e, struct hp_stack_config *cfg)
{
    struct hp_stack_config c = {0};
    if (cfg)
        c = *cfg;
    c.flags |= HP_STACK_F_NO_DAD;
    if (ct_open(e, &c) != 0)
        return -1;
    if (hp_stack_add_addr(e->s, 0, 4, CT_OUR4, 24) != 0 ||
        hp_stack_add_addr(e->s, 0, 6, CT_OUR6, 64) != 0)
        return -1;
    /* Created, then confirmed: REACHABLE, so no probe goes out with our answers. */
    hp__neigh_learn(e->ifc, 4, CT_PEER4, CT_PEER_MAC, HP__LEARN_CREATE);
    hp__neigh_learn(e->ifc, 4, CT_PEER4, CT_PEER_MAC, HP__LEARN_CONFIRM);
    hp__neigh_learn(e->ifc, 6, CT_PEER6, CT_PEER_MAC, HP__LEARN_CREATE);
    hp__neigh_learn(e->ifc, 6, CT_PEER6, CT_PEER_MAC, HP__LEARN_CONFIRM);
    ct_step(e);
    ct_drain(e);
    return 0;
}

/* An IPv4 datagram from the peer: the header from ip (payload_len set to n
 * unless keep_len), then n bytes of payload. */
static inline int it_send4(struct ct_env *e, struct hp_ipv4_repr *ip, const void *pl, size_t n)
{
    struct hp_buf *b;
    uint8_t *p = ct_frame(e, e->mac, HP_ETHERTYPE_IPV4, HP_IPV4_HDR_LEN + n, &b);
    if (!p)
        return -1;
    ip->payload_len = (uint16_t)n;
    if (hp_ipv4_emit(ip, p, HP_IPV4_HDR_LEN) < 0) {
        hp_buf_free(b);
        return -1;
    }
    if (n)
        memcpy(p + HP_IPV4_HDR_LEN, pl, n);
    return ct_send(e, b);
}

/* Raw bytes after an Ethernet header (type et) from the peer. */
static inline int it_send_raw(struct ct_env *e, uint16_t et, const void *pkt, size_t n)
{
    struct hp_buf *b;
    uint8_t *p = ct_frame(e, e->mac, et, n, &b);
    if (!p)
        return -1;
    memcpy(p, pkt, n);
    return ct_send(e, b);
}

/* An IPv6 packet from the peer: fixed header from ip, then n bytes (any
 * extension headers included; ip->next_header names the first). */
static inline int it_send6(struct ct_env *e, struct hp_ipv6_repr *ip, const void *pl, size_t n)
{
    struct hp_buf *b;
    uint8_t *p = ct_frame(e, e->mac, HP_ETHERTYPE_IPV6, HP_IPV6_HDR_LEN + n, &b);
    if (!p)
        return -1;
    ip->payload_len = (uint16_t)n;
    if (!ip->hop_limit)
        ip->hop_limit = 64;
    hp_ipv6_emit(ip, p, HP_IPV6_HDR_LEN);
    if (n)
        memcpy(p + HP_IPV6_HDR_LEN, pl, n);
    return ct_send(e, b);
}

/* One IPv6 fragment from the peer: fixed + Fragment header + data. */
static inline int it_send6_frag(struct ct_env *e, const uint8_t src[16], const uint8_t dst[16],
                                uint32_t id, uint8_t next, uint16_t off, bool mf, const void *data,
                                size_t n)
{
    struct hp_buf *b;
    uint8_t *p = ct_frame(e, e->mac, HP_ETHERTYPE_IPV6, 48 + n, &b);
    if (!p)
        return -1;
    struct hp_ipv6_repr ip = {.hop_limit = 64,
                              .payload_len = (uint16_t)(8 + n),
                              .frag_next = next,
                              .frag_off = off,
                              .mf = mf,
                              .frag_id = id};
    memcpy(ip.src, src, 16);
    memcpy(ip.dst, dst, 16);
    hp_ipv6_emit_frag(&ip, p, 48);
    memcpy(p + 48, data, n);
    return ct_send(e, b);
}

/* An ICMP(v6) echo message with payload byte i = i & 0xFF into out; its length. */
static inline size_t it_echo4(uint8_t *out, size_t cap, uint8_t type, uint16_t id, uint16_t seq,
                              size_t n)
{
    uint8_t *pl = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        pl[i] = (uint8_t)i;
    struct hp_icmp_repr m = {.type = type, .ident = id, .seq = seq, .data = pl, .data_len = n};
    int r = hp_icmp_emit(&m, out, cap);
    free(pl);
    return r < 0 ? 0 : (size_t)r;
}
static inline size_t it_echo6(uint8_t *out, size_t cap, const uint8_t src[16],
                              const uint8_t dst[16], uint8_t type, uint16_t id, uint16_t seq,
                              size_t n)
{
    uint8_t *pl = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        pl[i] = (uint8_t)i;
    struct hp_icmp6_repr m = {.type = type, .ident = id, .seq = seq, .data = pl, .data_len = n};
    struct hp_l4_addrs a = {.family = 6, .src = src, .dst = dst};
    int r = hp_icmp6_emit(&m, &a, out, cap);
    free(pl);
    return r < 0 ? 0 : (size_t)r;
}

/* The next frame the stack sent, as IPv4 (header verified): the payload
 * copied to pl (up to cap), its length returned; -1 when none or not IPv4. */
static inline long it_recv4(struct ct_env *e, struct hp_ipv4_repr *ip, uint8_t *pl, size_t cap)
{
    struct hp_buf *b;
    if (ct_recv(e, &b, 1) != 1)
        return -1;
    long r = -1;
    struct hp_eth_repr eth;
    uint8_t *flat = malloc(b->pkt_len);
    hp_buf_copy_out(b, 0, b->pkt_len, flat);
    size_t hl;
    if (hp_eth_parse(flat, b->pkt_len, &eth, &hl) == 0 && eth.ethertype == HP_ETHERTYPE_IPV4 &&
        hp_ipv4_parse(flat + hl, b->pkt_len - hl, ip, HP_WIRE_VERIFY_CKSUM) == 0) {
        size_t n = ip->payload_len < cap ? ip->payload_len : cap;
        memcpy(pl, flat + hl + ip->hdr_len, n);
        r = ip->payload_len;
    }
    free(flat);
    hp_buf_free(b);
    return r;
}

/* The same for IPv6: pl gets what follows the fixed header and its
 * extension headers (l4_off), or the fragment data of a fragment. */
static inline long it_recv6(struct ct_env *e, struct hp_ipv6_repr *ip, uint8_t *pl, size_t cap)
{
    struct hp_buf *b;
    if (ct_recv(e, &b, 1) != 1)
        return -1;
    long r = -1;
    struct hp_eth_repr eth;
    uint8_t *flat = malloc(b->pkt_len);
    hp_buf_copy_out(b, 0, b->pkt_len, flat);
    size_t hl;
    if (hp_eth_parse(flat, b->pkt_len, &eth, &hl) == 0 && eth.ethertype == HP_ETHERTYPE_IPV6 &&
        hp_ipv6_parse(flat + hl, b->pkt_len - hl, ip) == 0) {
        size_t len = HP_IPV6_HDR_LEN + ip->payload_len - ip->l4_off;
        size_t n = len < cap ? len : cap;
        memcpy(pl, flat + hl + ip->l4_off, n);
        r = (long)len;
    }
    free(flat);
    hp_buf_free(b);
    return r;
}

static inline uint64_t it_ctr(const struct ct_env *e, enum hp_stack_ctr c)
{
    return hp_stack_counter(e->s, c);
}

#endif
