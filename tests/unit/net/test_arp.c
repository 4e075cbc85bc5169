/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP (RFC 826, RFC 5227) and IPv4 neighbour resolution: replies, announcements, bad input, queueing, retries, overflow, table limits, ageing, the cached MAC of unicast output. */
#include "core_test.h"

/* A stack with CT_OUR4/24, nothing pending at the peer. */
static int open4(struct ct_env *e, struct hp_stack_config *cfg)
{
    struct hp_stack_config def = {0};
    if (!cfg)
        cfg = &def;
    cfg->flags |= HP_STACK_F_NO_DAD;
    if (ct_open(e, cfg) != 0 || hp_stack_add_addr(e->s, 0, 4, CT_OUR4, 24) != 0)
        return -1;
    ct_step(e);
    ct_drain(e);
    return 0;
}

/* Receive exactly one frame at the peer and parse it as ARP. */
static bool recv_arp(struct ct_env *e, struct hp_eth_repr *eth, struct hp_arp_repr *r)
{
    struct hp_buf *b;
    if (ct_recv(e, &b, 1) != 1)
        return false;
    const uint8_t *p = ct_eth(b, eth);
    bool ok = p && eth->ethertype == HP_ETHERTYPE_ARP &&
              hp_arp_parse(p, b->data_len - HP_ETH_HDR_LEN, r) == 0;
    hp_buf_free(b);
    return ok;
}

static void peer_reply(struct ct_env *e, const uint8_t spa[4], const uint8_t sha[6])
{
    struct hp_arp_repr rep = {.op = HP_ARP_OP_REPLY};
    memcpy(rep.sha, sha, 6);
    memcpy(rep.spa, spa, 4);
    memcpy(rep.tha, e->mac, 6);
    memcpy(rep.tpa, CT_OUR4, 4);
    ct_send_arp(e, e->mac, &rep);
}

HP_TEST(arp_request_for_us_gets_a_reply)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, CT_PEER_MAC, 6);
    memcpy(req.spa, CT_PEER4, 4);
    memcpy(req.tpa, CT_OUR4, 4);
    HP_REQUIRE_EQ(ct_send_arp(&e, CT_BCAST, &req), 0);
    ct_step(&e);
    struct hp_eth_repr eth;
    struct hp_arp_repr r;
    HP_REQUIRE(recv_arp(&e, &eth, &r));
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    HP_CHECK_MEMEQ(eth.src, e.mac, 6);
    HP_CHECK_EQ(r.op, HP_ARP_OP_REPLY);
    HP_CHECK_MEMEQ(r.sha, e.mac, 6);
    HP_CHECK_MEMEQ(r.spa, CT_OUR4, 4);
    HP_CHECK_MEMEQ(r.tha, CT_PEER_MAC, 6);
    HP_CHECK_MEMEQ(r.tpa, CT_PEER4, 4);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_REQUESTS), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REPLIES), 1);
    /* RFC 826: the asker was learned (STALE, RFC 4861 7.2.3 style);
     * sending to it needs no broadcast: the packet goes at once to the
     * learned MAC, with a unicast probe to confirm it. */
    HP_CHECK(hp__neigh_exists(e.ifc, 4, CT_PEER4));
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 8, 0x11));
    ct_step(&e);
    struct hp_buf *b[2];
    HP_REQUIRE_EQ(ct_recv(&e, b, 2), 2);
    HP_CHECK(ct_eth(b[0], &eth) != NULL);
    HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_ARP);
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    const uint8_t *p = ct_eth(b[1], &eth);
    HP_CHECK(p != NULL);
    HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_IPV4);
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    hp_buf_free_bulk(b, 2);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REQUESTS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_gratuitous_on_add_addr)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    ct_step(&e);
    ct_drain(&e);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, CT_OUR4, 24), 0);
    ct_step(&e);
    struct hp_eth_repr eth;
    struct hp_arp_repr r;
    HP_REQUIRE(recv_arp(&e, &eth, &r));
    HP_CHECK_MEMEQ(eth.dst, CT_BCAST, 6);
    HP_CHECK_EQ(r.op, HP_ARP_OP_REQUEST);
    HP_CHECK_MEMEQ(r.sha, e.mac, 6);
    HP_CHECK_MEMEQ(r.spa, CT_OUR4, 4);
    HP_CHECK_MEMEQ(r.tpa, CT_OUR4, 4);
    static const uint8_t zero6[6] = {0};
    HP_CHECK_MEMEQ(r.tha, zero6, 6);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_GRATUITOUS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_bad_input_is_counted_and_ignored)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    /* A reply nobody asked for: no entry is created (cache poisoning). */
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    /* A request for someone else: no reply, no entry. */
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, CT_PEER_MAC, 6);
    memcpy(req.spa, CT_PEER4, 4);
    static const uint8_t third[4] = {198, 18, 0, 3};
    memcpy(req.tpa, third, 4);
    ct_send_arp(&e, CT_BCAST, &req);
    /* Someone claiming our own address. */
    struct hp_arp_repr claim = req;
    memcpy(claim.spa, CT_OUR4, 4);
    ct_send_arp(&e, CT_BCAST, &claim);
    /* Malformed: truncated, a RARP opcode, a broadcast sender MAC. */
    struct hp_buf *b;
    uint8_t *p = ct_frame(&e, CT_BCAST, HP_ETHERTYPE_ARP, 12, &b);
    HP_REQUIRE(p != NULL);
    hp_arp_emit(&req, (uint8_t[28]){0}, 28);
    hp_put_be16(p, 1), hp_put_be16(p + 2, 0x0800), p[4] = 6, p[5] = 4;
    ct_send(&e, b);
    struct hp_arp_repr rarp = req;
    rarp.op = 3;
    ct_send_arp(&e, CT_BCAST, &rarp);
    struct hp_arp_repr grp = req;
    memcpy(grp.sha, CT_BCAST, 6);
    memcpy(grp.tpa, CT_OUR4, 4);
    ct_send_arp(&e, CT_BCAST, &grp);
    ct_step(&e);

    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN), 6);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_UNSOLICITED), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_NOT_FOR_US), 2);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_MALFORMED), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_REPLIES), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REPLIES), 0);
    HP_CHECK(!hp__neigh_exists(e.ifc, 4, CT_PEER4));
    HP_CHECK(!hp__neigh_exists(e.ifc, 4, CT_OUR4));
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_resolution_queues_then_sends)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    for (int i = 0; i < 3; i++)
        hp__neigh_output4(e.ifc, CT_PEER4,
                          ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 30, (uint8_t)(0x40 + i)));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 3);
    ct_step(&e);
    /* One broadcast request, not one per packet. */
    struct hp_eth_repr eth;
    struct hp_arp_repr r;
    HP_REQUIRE(recv_arp(&e, &eth, &r));
    HP_CHECK_MEMEQ(eth.dst, CT_BCAST, 6);
    HP_CHECK_EQ(r.op, HP_ARP_OP_REQUEST);
    HP_CHECK_MEMEQ(r.sha, e.mac, 6);
    HP_CHECK_MEMEQ(r.spa, CT_OUR4, 4);
    HP_CHECK_MEMEQ(r.tpa, CT_PEER4, 4);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REQUESTS), 1);

    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_REPLIES), 1);
    struct hp_buf *out[8];
    int n = ct_recv(&e, out, 8);
    HP_CHECK_EQ(n, 3);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = ct_eth(out[i], &eth);
        HP_REQUIRE(p != NULL);
        HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
        HP_CHECK_MEMEQ(eth.src, e.mac, 6);
        HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_IPV4);
        HP_CHECK_EQ(out[i]->data_len, HP_ETH_HDR_LEN + 50u);
        HP_CHECK_MEMEQ(hp_ipv4_dst_ptr(p), CT_PEER4, 4);
        HP_CHECK_EQ(p[20], 0x40 + i); /* in order */
    }
    hp_buf_free_bulk(out, n > 0 ? (unsigned)n : 0);
    /* Now cached: straight out. */
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 30, 0x50));
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REQUESTS), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 3);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_retries_then_failure_drops_the_queue)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    for (int i = 0; i < 4; i++)
        hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 30, (uint8_t)i));
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 1);
    /* neigh_retries (3) requests in all, neigh_retrans_ms (1 s) apart. */
    ct_advance_ms(&e, 999);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_advance_ms(&e, 1);
    HP_CHECK_EQ(ct_drain(&e), 1);
    ct_advance_ms(&e, 1000);
    HP_CHECK_EQ(ct_drain(&e), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REQUESTS), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UNRESOLVED_DROPS), 0);
    HP_CHECK(hp__neigh_exists(e.ifc, 4, CT_PEER4));
    ct_advance_ms(&e, 1000);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REQUESTS), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UNRESOLVED_DROPS), 4);
    HP_CHECK(!hp__neigh_exists(e.ifc, 4, CT_PEER4));
    HP_CHECK_EQ(hp_stack_next_timer_ns(e.s), -1);
    /* A late reply is now unsolicited. */
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_UNSOLICITED), 1);
    HP_CHECK_EQ(hp_pool_in_use(e.pool), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_queue_overflow_drops_the_oldest)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.neigh_queue = 2};
    HP_REQUIRE_EQ(open4(&e, &cfg), 0);
    for (int i = 0; i < 5; i++)
        hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 30, (uint8_t)i));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 5);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUE_DROPS), 3);
    ct_step(&e);
    ct_drain(&e);
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    struct hp_buf *out[8];
    int n = ct_recv(&e, out, 8);
    HP_CHECK_EQ(n, 2);
    for (int i = 0; i < n; i++) {
        struct hp_eth_repr eth;
        const uint8_t *p = ct_eth(out[i], &eth);
        HP_REQUIRE(p != NULL);
        HP_CHECK_EQ(p[20], 3 + i); /* RFC 4861 7.2.2: the newest survive */
    }
    hp_buf_free_bulk(out, n > 0 ? (unsigned)n : 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_table_full)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.neigh_max = 2};
    HP_REQUIRE_EQ(open4(&e, &cfg), 0);
    for (uint8_t h = 10; h < 13; h++) {
        uint8_t dst[4] = {198, 18, 0, h};
        hp__neigh_output4(e.ifc, dst, ct_ip4_packet(&e, CT_OUR4, dst, 30, h));
    }
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_TABLE_FULL), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 2);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 2);
    /* A request from a new host can not be learned either, but is answered. */
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, CT_PEER_MAC, 6);
    memcpy(req.spa, CT_PEER4, 4);
    memcpy(req.tpa, CT_OUR4, 4);
    ct_send_arp(&e, CT_BCAST, &req);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_TABLE_FULL), 2);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REPLIES), 1);
    HP_CHECK_EQ(ct_drain(&e), 1);
    /* After failure, the entries are free again. */
    for (int i = 0; i < 3; i++)
        ct_advance_ms(&e, 1000);
    ct_drain(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UNRESOLVED_DROPS), 2);
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 30, 1));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_TABLE_FULL), 2);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_broadcast_and_multicast_map_directly)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    static const uint8_t lbc[4] = {255, 255, 255, 255}, dbc[4] = {198, 18, 0, 255},
                         mc[4] = {224, 0, 0, 251}, mc_hi[4] = {239, 200, 1, 2};
    static const uint8_t mc_mac[6] = {0x01, 0x00, 0x5E, 0x00, 0x00, 0xFB};
    static const uint8_t mc_hi_mac[6] = {0x01, 0x00, 0x5E, 0x48, 0x01, 0x02};
    const uint8_t *dst[4] = {lbc, dbc, mc, mc_hi};
    const uint8_t *mac[4] = {CT_BCAST, CT_BCAST, mc_mac, mc_hi_mac};
    for (int i = 0; i < 4; i++) {
        hp__neigh_output4(e.ifc, dst[i], ct_ip4_packet(&e, CT_OUR4, dst[i], 8, 0));
        ct_step(&e);
        struct hp_buf *b;
        HP_REQUIRE_EQ(ct_recv(&e, &b, 1), 1);
        struct hp_eth_repr eth;
        HP_CHECK(ct_eth(b, &eth) != NULL);
        HP_CHECK_MEMEQ(eth.dst, mac[i], 6);
        HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_IPV4);
        hp_buf_free(b);
    }
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REQUESTS), 0);
    static const uint8_t zero[4] = {0};
    hp__neigh_output4(e.ifc, zero, ct_ip4_packet(&e, CT_OUR4, zero, 8, 0));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UNRESOLVED_DROPS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_entry_goes_stale_is_probed_and_expires)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 8, 0));
    ct_step(&e);
    ct_drain(&e);
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 1);
    /* REACHABLE for 30 s, then STALE: still used, but probed by unicast. */
    ct_advance_ms(&e, 30000);
    HP_CHECK_EQ(ct_drain(&e), 0);
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 8, 0));
    ct_step(&e);
    struct hp_buf *out[4];
    int n = ct_recv(&e, out, 4);
    HP_REQUIRE_EQ(n, 2);
    struct hp_eth_repr eth;
    struct hp_arp_repr r;
    const uint8_t *p = ct_eth(out[0], &eth);
    HP_REQUIRE(p != NULL);
    HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_ARP);
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6); /* unicast probe */
    HP_CHECK_EQ(hp_arp_parse(p, HP_ARP_LEN, &r), 0);
    HP_CHECK_MEMEQ(r.tpa, CT_PEER4, 4);
    HP_CHECK(ct_eth(out[1], &eth) != NULL);
    HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_IPV4);
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    hp_buf_free_bulk(out, 2);
    /* The peer answers the probe: reachable again. */
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_IN_REPLIES), 2);
    /* Unused: stale after 30 s, forgotten 60 s after last use. */
    ct_advance_ms(&e, 30000);
    ct_advance_ms(&e, 29000);
    HP_CHECK(hp__neigh_exists(e.ifc, 4, CT_PEER4));
    ct_advance_ms(&e, 1000);
    HP_CHECK(!hp__neigh_exists(e.ifc, 4, CT_PEER4));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_EXPIRED), 1);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(arp_probe_without_answer_forgets_the_neighbour)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, CT_PEER_MAC, 6);
    memcpy(req.spa, CT_PEER4, 4);
    memcpy(req.tpa, CT_OUR4, 4);
    ct_send_arp(&e, CT_BCAST, &req); /* learned STALE */
    ct_step(&e);
    ct_drain(&e);
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 8, 0));
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 2); /* probe + packet */
    ct_advance_ms(&e, 1000);
    ct_advance_ms(&e, 1000);
    HP_CHECK_EQ(ct_drain(&e), 2);
    HP_CHECK(hp__neigh_exists(e.ifc, 4, CT_PEER4));
    ct_advance_ms(&e, 1000);
    HP_CHECK(!hp__neigh_exists(e.ifc, 4, CT_PEER4));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_EXPIRED), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Receive every frame the stack sent; count the IPv4 ones, checking each
 * went to mac with the payload byte fill; ARP frames are dropped. */
static int recv_ip4_to(struct ct_env *e, const uint8_t mac[6], uint8_t fill, int *bad)
{
    struct hp_buf *out[16];
    int n = ct_recv(e, out, 16), ip = 0;
    for (int i = 0; i < n; i++) {
        struct hp_eth_repr eth;
        const uint8_t *p = ct_eth(out[i], &eth);
        if (p && eth.ethertype == HP_ETHERTYPE_IPV4) {
            ip++;
            if (memcmp(eth.dst, mac, 6) != 0 || p[20] != fill)
                (*bad)++;
        }
    }
    hp_buf_free_bulk(out, n > 0 ? (unsigned)n : 0);
    return ip;
}

/* Lookups try the neighbour the last packet went to first: packets to many
 * neighbours in any order each reach their own MAC, and an entry that was
 * forgotten or reused is never taken for the address it had. */
HP_TEST(arp_many_neighbours_each_get_their_own_mac)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    enum { N = 16 };
    uint8_t ip[N][4], mac[N][6];
    for (int i = 0; i < N; i++) {
        memcpy(ip[i], (uint8_t[]){198, 18, 0, (uint8_t)(10 + i)}, 4);
        memcpy(mac[i], (uint8_t[]){0x02, 0, 0, 0, 0x01, (uint8_t)i}, 6);
        struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
        memcpy(req.sha, mac[i], 6);
        memcpy(req.spa, ip[i], 4);
        memcpy(req.tpa, CT_OUR4, 4);
        ct_send_arp(&e, CT_BCAST, &req); /* learned STALE */
    }
    ct_step(&e);
    ct_drain(&e);
    static const int order[] = {0,  1,  2,  3,  4,  5, 6, 7, 8, 9, 10, 11, 12,
                                13, 14, 15, 15, 14, 3, 3, 3, 0, 0, 9,  1,  9};
    int bad = 0, got = 0;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        int i = order[k];
        hp__neigh_output4(e.ifc, ip[i], ct_ip4_packet(&e, CT_OUR4, ip[i], 8, (uint8_t)i));
        ct_step(&e);
        got += recv_ip4_to(&e, mac[i], (uint8_t)i, &bad);
    }
    HP_CHECK_EQ(got, (int)(sizeof order / sizeof order[0]));
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 0);

    /* Nobody answers the probes: every entry is forgotten. The last one
     * used (9) was the hint. */
    for (int s = 0; s < 5; s++)
        ct_advance_ms(&e, 1000);
    ct_drain(&e);
    for (int i = 0; i < N; i++)
        HP_CHECK(!hp__neigh_exists(e.ifc, 4, ip[i]));
    /* 9 again: queued behind a broadcast request, not sent to its old MAC. */
    hp__neigh_output4(e.ifc, ip[9], ct_ip4_packet(&e, CT_OUR4, ip[9], 8, 9));
    ct_step(&e);
    HP_CHECK_EQ(recv_ip4_to(&e, mac[9], 9, &bad), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 1);
    /* A new neighbour answers from the MAC 9 had: it takes a freed entry,
     * and packets to it go there, while 9 still waits. */
    static const uint8_t ip_new[4] = {198, 18, 0, 99};
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, mac[9], 6);
    memcpy(req.spa, ip_new, 4);
    memcpy(req.tpa, CT_OUR4, 4);
    ct_send_arp(&e, CT_BCAST, &req);
    ct_step(&e);
    ct_drain(&e);
    hp__neigh_output4(e.ifc, ip_new, ct_ip4_packet(&e, CT_OUR4, ip_new, 8, 99));
    ct_step(&e);
    HP_CHECK_EQ(recv_ip4_to(&e, mac[9], 99, &bad), 1);
    hp__neigh_output4(e.ifc, ip[9], ct_ip4_packet(&e, CT_OUR4, ip[9], 8, 9));
    ct_step(&e);
    HP_CHECK_EQ(recv_ip4_to(&e, mac[9], 9, &bad), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 2);
    HP_CHECK_EQ(bad, 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Directed broadcasts of every prefix of the interface map to the broadcast
 * MAC; an address with host bits not all set does not, nor anything in a
 * /31 (RFC 3021) or /32. */
HP_TEST(arp_directed_broadcasts_of_every_prefix)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, (uint8_t[]){198, 19, 4, 1}, 22), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, (uint8_t[]){198, 19, 9, 0}, 31), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, (uint8_t[]){198, 19, 10, 7}, 32), 0);
    ct_step(&e);
    ct_drain(&e);
    static const struct {
        uint8_t a[4];
        bool bcast;
    } cases[] = {
        {{198, 18, 0, 255}, true},  {{198, 19, 7, 255}, true},    {{198, 19, 5, 255}, false},
        {{198, 19, 4, 255}, false}, {{198, 19, 9, 1}, false},     {{198, 19, 10, 7}, false},
        {{198, 18, 1, 255}, false}, {{255, 255, 255, 255}, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t queued = hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED);
        HP_CHECK_EQ(hp__is_bcast4(e.ifc, cases[i].a), cases[i].bcast);
        hp__neigh_output4(e.ifc, cases[i].a, ct_ip4_packet(&e, CT_OUR4, cases[i].a, 8, (uint8_t)i));
        ct_step(&e);
        int bad = 0;
        HP_CHECK_EQ(recv_ip4_to(&e, CT_BCAST, (uint8_t)i, &bad), cases[i].bcast ? 1 : 0);
        HP_CHECK_EQ(bad, 0);
        HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED) - queued, cases[i].bcast ? 0u : 1u);
    }
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A unicast datagram (HP__IP_UNICAST, TCP's) to a REACHABLE or PROBE
 * neighbour takes the cached MAC and gets both headers written at once;
 * without an entry it is queued behind an ARP request, and to a STALE
 * neighbour it goes the full way, which probes the entry. The frames are
 * the same either way. */
static struct hp_buf *l4_payload(struct ct_env *e, uint8_t fill)
{
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (b)
        memset(hp_buf_append(b, 24), fill, 24);
    return b;
}

static void check_unicast_frame(struct ct_env *e, struct hp_buf *b, uint8_t fill)
{
    struct hp_eth_repr eth;
    const uint8_t *p = ct_eth(b, &eth);
    HP_REQUIRE(p != NULL);
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    HP_CHECK_MEMEQ(eth.src, e->mac, 6);
    HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_IPV4);
    struct hp_ipv4_repr ip;
    HP_REQUIRE_EQ(hp_ipv4_parse(p, b->data_len - HP_ETH_HDR_LEN, &ip, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_MEMEQ(ip.src, CT_OUR4, 4);
    HP_CHECK_MEMEQ(ip.dst, CT_PEER4, 4);
    HP_CHECK_EQ(ip.proto, 253);
    HP_CHECK(ip.df);
    HP_CHECK_EQ(ip.payload_len, 24);
    HP_CHECK_EQ(p[20], fill);
    HP_CHECK_EQ(p[43], fill);
}

HP_TEST(arp_unicast_output_takes_the_cached_mac)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    struct hp__route rt;
    HP_REQUIRE_EQ(hp__route4(e.s, CT_PEER4, &rt), 0);
    unsigned xf = HP__IP_UNICAST | HP__IP_DF;
    HP_CHECK_EQ(hp__ipv4_output_x(e.s, &rt, CT_PEER4, 253, xf, l4_payload(&e, 1)), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 1);
    ct_step(&e);
    ct_drain(&e); /* the ARP request */
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    struct hp_buf *out[4];
    HP_REQUIRE_EQ(ct_recv(&e, out, 4), 1);
    check_unicast_frame(&e, out[0], 1);
    hp_buf_free(out[0]);
    /* REACHABLE: straight out, nothing queued, no ARP. */
    for (uint8_t i = 2; i < 5; i++)
        HP_CHECK_EQ(hp__ipv4_output_x(e.s, &rt, CT_PEER4, 253, xf, l4_payload(&e, i)), 0);
    HP_REQUIRE_EQ(ct_recv(&e, out, 4), 3);
    for (int i = 0; i < 3; i++) {
        check_unicast_frame(&e, out[i], (uint8_t)(2 + i));
        hp_buf_free(out[i]);
    }
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 1);
    /* STALE after 30 s: the full path, which sends a unicast probe first. */
    ct_advance_ms(&e, 30000);
    ct_drain(&e);
    HP_CHECK_EQ(hp__ipv4_output_x(e.s, &rt, CT_PEER4, 253, xf, l4_payload(&e, 7)), 0);
    HP_REQUIRE_EQ(ct_recv(&e, out, 4), 2);
    struct hp_eth_repr eth;
    HP_CHECK(ct_eth(out[0], &eth) != NULL);
    HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_ARP);
    check_unicast_frame(&e, out[1], 7);
    hp_buf_free_bulk(out, 2);
    /* PROBE: the cached MAC again, no second probe. */
    HP_CHECK_EQ(hp__ipv4_output_x(e.s, &rt, CT_PEER4, 253, xf, l4_payload(&e, 8)), 0);
    HP_REQUIRE_EQ(ct_recv(&e, out, 4), 1);
    check_unicast_frame(&e, out[0], 8);
    hp_buf_free(out[0]);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- cache poisoning: lock time and arp_accept (docs/knobs.md) ----------- */

static const uint8_t EVIL_MAC[6] = {0x02, 0x66, 0x66, 0x66, 0x66, 0x66};

/* Resolve CT_PEER4 (request, reply): REACHABLE with CT_PEER_MAC. */
static void resolve_peer(struct ct_env *e)
{
    hp__neigh_output4(e->ifc, CT_PEER4, ct_ip4_packet(e, CT_OUR4, CT_PEER4, 8, 0x01));
    ct_step(e);
    peer_reply(e, CT_PEER4, CT_PEER_MAC);
    ct_step(e);
    ct_drain(e);
}

/* A gratuitous ARP (RFC 5227 3: request, sender = target) for spa from sha. */
static void garp(struct ct_env *e, const uint8_t spa[4], const uint8_t sha[6])
{
    struct hp_arp_repr r = {.op = HP_ARP_OP_REQUEST};
    memcpy(r.sha, sha, 6);
    memcpy(r.spa, spa, 4);
    memcpy(r.tpa, spa, 4);
    ct_send_arp(e, CT_BCAST, &r);
}

/* Where a packet to CT_PEER4 goes now: 1 when to mac (and nothing else went out but ARP). */
static int sent_to(struct ct_env *e, const uint8_t mac[6], uint8_t fill)
{
    hp__neigh_output4(e->ifc, CT_PEER4, ct_ip4_packet(e, CT_OUR4, CT_PEER4, 8, fill));
    ct_step(e);
    int bad = 0;
    int n = recv_ip4_to(e, mac, fill, &bad);
    return n == 1 && bad == 0;
}

/* By default a REACHABLE entry keeps its MAC against an unsolicited reply,
 * a gratuitous ARP and a request claiming another MAC (each counted);
 * once it is no longer REACHABLE, a gratuitous ARP moves it (a real
 * failover gets through within neigh_reachable_ms). */
HP_TEST(arp_reachable_entry_refuses_unsolicited_changes)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open4(&e, NULL), 0);
    resolve_peer(&e);
    e.s->now += 2000ull * 1000000u; /* past the lock time */
    peer_reply(&e, CT_PEER4, EVIL_MAC);
    garp(&e, CT_PEER4, EVIL_MAC);
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, EVIL_MAC, 6);
    memcpy(req.spa, CT_PEER4, 4);
    memcpy(req.tpa, CT_OUR4, 4);
    ct_send_arp(&e, CT_BCAST, &req);
    ct_step(&e);
    ct_drain(&e); /* the reply to the request (to whoever asked) */
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_REFUSED), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_LOCKED), 0);
    HP_CHECK(sent_to(&e, CT_PEER_MAC, 0x22));
    /* Stale after neigh_reachable_ms (30 s): a gratuitous ARP now applies. */
    ct_advance_ms(&e, 31000);
    ct_drain(&e);
    garp(&e, CT_PEER4, EVIL_MAC);
    ct_step(&e);
    HP_CHECK(sent_to(&e, EVIL_MAC, 0x23));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_REFUSED), 3);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* HP_STACK_F_ARP_ACCEPT with no lock time is the old behaviour (and
 * Linux's with arp_accept): any reply or gratuitous ARP moves the entry
 * at once. */
HP_TEST(arp_accept_knob_replaces_at_once)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_ARP_ACCEPT,
                                  .neigh_locktime_ms = HP_NEIGH_LOCKTIME_NONE};
    HP_REQUIRE_EQ(open4(&e, &cfg), 0);
    resolve_peer(&e);
    peer_reply(&e, CT_PEER4, EVIL_MAC);
    ct_step(&e);
    HP_CHECK(sent_to(&e, EVIL_MAC, 0x31));
    garp(&e, CT_PEER4, CT_PEER_MAC);
    ct_step(&e);
    HP_CHECK(sent_to(&e, CT_PEER_MAC, 0x32));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_REFUSED), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_LOCKED), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The lock time (Linux's locktime, default 1 s): of two different replies
 * to one request the first wins, even with arp_accept; after the lock
 * time, with arp_accept, a new MAC applies. */
HP_TEST(arp_locktime_first_answer_wins)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_ARP_ACCEPT};
    HP_REQUIRE_EQ(open4(&e, &cfg), 0);
    hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 8, 0x41));
    ct_step(&e);
    peer_reply(&e, CT_PEER4, CT_PEER_MAC);
    peer_reply(&e, CT_PEER4, EVIL_MAC);
    ct_step(&e);
    int bad = 0;
    HP_CHECK_EQ(recv_ip4_to(&e, CT_PEER_MAC, 0x41, &bad), 1);
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_LOCKED), 1);
    HP_CHECK(sent_to(&e, CT_PEER_MAC, 0x42));
    e.s->now += 999ull * 1000000u;
    garp(&e, CT_PEER4, EVIL_MAC);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_LOCKED), 2);
    HP_CHECK(sent_to(&e, CT_PEER_MAC, 0x43));
    e.s->now += 2ull * 1000000u;
    garp(&e, CT_PEER4, EVIL_MAC);
    ct_step(&e);
    HP_CHECK(sent_to(&e, EVIL_MAC, 0x44));
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
