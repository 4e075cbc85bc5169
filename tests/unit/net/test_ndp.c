/* SPDX-License-Identifier: BSD-3-Clause */
/* Neighbor Discovery (RFC 4861) and DAD (RFC 4862): solicitations, advertisements, hop limit, duplicates, IPv6 resolution. */
#include "core_test.h"

static const uint8_t ALL_NODES[16] = {0xFF, 0x02, [15] = 1};
static const uint8_t UNSPEC[16] = {0};

/* Receive one frame at the peer and parse it as NDP. */
static bool recv_ndp(struct ct_env *e, struct hp_eth_repr *eth, struct hp_ipv6_repr *ip,
                     struct hp_ndp_repr *r)
{
    struct hp_buf *b;
    if (ct_recv(e, &b, 1) != 1)
        return false;
    bool ok = ct_parse_ndp(b, eth, ip, r);
    hp_buf_free(b);
    return ok;
}

/* Preferred CT_OUR6 at once, nothing pending at the peer. */
static int open6(struct ct_env *e, struct hp_stack_config *cfg)
{
    struct hp_stack_config def = {0};
    if (!cfg)
        cfg = &def;
    cfg->flags |= HP_STACK_F_NO_DAD;
    if (ct_open(e, cfg) != 0 || hp_stack_add_addr(e->s, 0, 6, CT_OUR6, 64) != 0)
        return -1;
    ct_step(e);
    ct_drain(e);
    return 0;
}

static void ns_for(struct hp_ndp_repr *r, const uint8_t target[16], bool sll)
{
    memset(r, 0, sizeof *r);
    r->type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(r->target, target, 16);
    if (sll) {
        r->has_sll = true;
        memcpy(r->sll, CT_PEER_MAC, 6);
    }
}

HP_TEST(ndp_dad_sends_ns_then_address_is_preferred)
{
    struct ct_env e;
    HP_REQUIRE_EQ(ct_open(&e, NULL), 0);
    const uint8_t *ll = e.ifc->v6[0].addr;
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, ll), HP_ADDR_TENTATIVE);
    ct_step(&e);
    struct hp_eth_repr eth;
    struct hp_ipv6_repr ip;
    struct hp_ndp_repr r;
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    uint8_t sn[16], snmac[6];
    hp_ipv6_solicited_node(ll, sn);
    hp_ipv6_mcast_mac(sn, snmac);
    HP_CHECK_MEMEQ(eth.dst, snmac, 6);
    HP_CHECK_MEMEQ(eth.src, e.mac, 6);
    HP_CHECK_MEMEQ(ip.src, UNSPEC, 16); /* RFC 4862 5.4.2 */
    HP_CHECK_MEMEQ(ip.dst, sn, 16);
    HP_CHECK_EQ(ip.hop_limit, 255);
    HP_CHECK_EQ(r.type, HP_NDP_NEIGHBOR_SOLICIT);
    HP_CHECK_MEMEQ(r.target, ll, 16);
    HP_CHECK(!r.has_sll);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NS), 1);
    HP_CHECK(!hp__is_local6(e.ifc, ll));

    ct_advance_ms(&e, 999);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, ll), HP_ADDR_TENTATIVE);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_advance_ms(&e, 1);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, ll), HP_ADDR_PREFERRED);
    HP_CHECK(hp__is_local6(e.ifc, ll));
    /* RFC 4861 7.2.6: an unsolicited advertisement to all-nodes. */
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    static const uint8_t nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
    HP_CHECK_MEMEQ(eth.dst, nodes_mac, 6);
    HP_CHECK_MEMEQ(ip.src, ll, 16);
    HP_CHECK_MEMEQ(ip.dst, ALL_NODES, 16);
    HP_CHECK_EQ(ip.hop_limit, 255);
    HP_CHECK_EQ(r.type, HP_NDP_NEIGHBOR_ADVERT);
    HP_CHECK_MEMEQ(r.target, ll, 16);
    HP_CHECK(!r.solicited);
    HP_CHECK(r.override);
    HP_CHECK(r.has_tll);
    HP_CHECK_MEMEQ(r.tll, e.mac, 6);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NA), 1);

    /* An added address goes through the same. */
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    ct_step(&e);
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    HP_CHECK_MEMEQ(r.target, CT_OUR6, 16);
    HP_CHECK_MEMEQ(ip.src, UNSPEC, 16);
    ct_advance_ms(&e, 1000);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_PREFERRED);
    HP_CHECK_EQ(ct_drain(&e), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_no_dad_is_preferred_at_once)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, e.ifc->v6[0].addr), HP_ADDR_PREFERRED);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_PREFERRED);
    HP_CHECK_EQ(hp_stack_next_timer_ns(e.s), -1);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 2); /* two unsolicited NAs, no NS */
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NS), 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NA), 2);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_ns_gets_a_solicited_na)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    struct hp_ndp_repr ns;
    ns_for(&ns, CT_OUR6, true);
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    ct_inject_ndp(&e, CT_PEER6, sn, 255, &ns);
    ct_step(&e);
    struct hp_eth_repr eth;
    struct hp_ipv6_repr ip;
    struct hp_ndp_repr r;
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    HP_CHECK_MEMEQ(eth.src, e.mac, 6);
    HP_CHECK_MEMEQ(ip.src, CT_OUR6, 16);
    HP_CHECK_MEMEQ(ip.dst, CT_PEER6, 16);
    HP_CHECK_EQ(ip.hop_limit, 255);
    HP_CHECK_EQ(r.type, HP_NDP_NEIGHBOR_ADVERT);
    HP_CHECK_MEMEQ(r.target, CT_OUR6, 16);
    HP_CHECK(r.solicited);
    HP_CHECK(r.override);
    HP_CHECK(!r.router);
    HP_CHECK(r.has_tll);
    HP_CHECK_MEMEQ(r.tll, e.mac, 6);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_NS), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NA), 3); /* 2 announcements + this */
    /* RFC 4861 7.2.3: the sender was learned from its SLL option. */
    HP_CHECK(hp__neigh_exists(e.ifc, 6, CT_PEER6));

    /* An NS for an address that is not ours: nothing. */
    ns_for(&ns, CT_PEER6, true);
    ct_inject_ndp(&e, CT_PEER6, sn, 255, &ns);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 0);

    /* From the unspecified address (someone's DAD for our preferred
     * address): NA to all-nodes, Solicited clear (RFC 4861 7.2.4). */
    ns_for(&ns, CT_OUR6, false);
    ct_inject_ndp(&e, UNSPEC, sn, 255, &ns);
    ct_step(&e);
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    HP_CHECK_MEMEQ(ip.dst, ALL_NODES, 16);
    HP_CHECK(!r.solicited);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_PREFERRED);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_bad_hop_limit_and_checksum_are_dropped)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    struct hp_ndp_repr ns;
    ns_for(&ns, CT_OUR6, true);
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    ct_inject_ndp(&e, CT_PEER6, sn, 254, &ns);
    ct_inject_ndp(&e, CT_PEER6, sn, 64, &ns);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_BAD_HOPLIMIT), 2);

    /* A corrupted checksum. */
    size_t mlen = hp_ndp_repr_len(&ns);
    struct hp_buf *b = hp_buf_alloc(e.pool);
    HP_REQUIRE(b != NULL);
    uint8_t *p = hp_buf_append(b, (uint32_t)mlen);
    struct hp_l4_addrs a = {.family = 6, .src = CT_PEER6, .dst = sn};
    HP_REQUIRE(hp_ndp_emit(&ns, &a, p, mlen) > 0);
    p[2] ^= 0x55;
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6,
                              .hop_limit = 255,
                              .payload_len = (uint16_t)mlen,
                              .l4_off = 40};
    memcpy(ip.src, CT_PEER6, 16);
    memcpy(ip.dst, sn, 16);
    hp__ndp_input(e.ifc, b, &ip);
    /* Truncated: 20 bytes of an NS. */
    b = hp_buf_alloc(e.pool);
    HP_REQUIRE(b != NULL);
    p = hp_buf_append(b, (uint32_t)mlen);
    hp_ndp_emit(&ns, &a, p, mlen);
    ip.payload_len = 20;
    hp__ndp_input(e.ifc, b, &ip);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_INVALID), 2);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_NS), 0);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK(!hp__neigh_exists(e.ifc, 6, CT_PEER6));
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_dad_conflict_marks_duplicate)
{
    struct ct_env e;
    HP_REQUIRE_EQ(ct_open(&e, NULL), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    ct_step(&e);
    ct_drain(&e);
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    /* An NS from a real source for our tentative address is ignored
     * (RFC 4862 5.4.3). */
    struct hp_ndp_repr ns;
    ns_for(&ns, CT_OUR6, true);
    ct_inject_ndp(&e, CT_PEER6, sn, 255, &ns);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_TENTATIVE);
    /* Another node's DAD for the same address: duplicate. */
    ns_for(&ns, CT_OUR6, false);
    ct_inject_ndp(&e, UNSPEC, sn, 255, &ns);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_DUPLICATE);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_DAD_DUPLICATES), 1);
    HP_CHECK(hp__find6(e.ifc, CT_OUR6) != NULL);
    HP_CHECK(!hp__is_local6(e.ifc, CT_OUR6));
    ct_advance_ms(&e, 2000);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_DUPLICATE);
    /* The link-local finished its DAD and was announced; the duplicate
     * was not. */
    struct hp_eth_repr eth;
    struct hp_ipv6_repr ip;
    struct hp_ndp_repr r;
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    HP_CHECK_MEMEQ(r.target, e.ifc->v6[0].addr, 16);
    HP_CHECK_EQ(ct_drain(&e), 0);

    /* An NA for a tentative address: duplicate too (RFC 4862 5.4.4). */
    static const uint8_t other[16] = {0x20, 0x01, 0x00, 0x02, [15] = 9};
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, other, 64), 0);
    struct hp_ndp_repr na = {.type = HP_NDP_NEIGHBOR_ADVERT, .override = true, .has_tll = true};
    memcpy(na.target, other, 16);
    memcpy(na.tll, CT_PEER_MAC, 6);
    ct_inject_ndp(&e, CT_PEER6, ALL_NODES, 255, &na);
    HP_CHECK_EQ(hp_stack_addr_state(e.s, 0, 6, other), HP_ADDR_DUPLICATE);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_DAD_DUPLICATES), 2);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_resolution_queues_then_sends)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    for (int i = 0; i < 2; i++)
        hp__neigh_output6(e.ifc, CT_PEER6,
                          ct_ip6_packet(&e, CT_OUR6, CT_PEER6, 12, (uint8_t)(0x60 + i)));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 2);
    ct_step(&e);
    struct hp_eth_repr eth;
    struct hp_ipv6_repr ip;
    struct hp_ndp_repr r;
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    uint8_t sn[16], snmac[6];
    hp_ipv6_solicited_node(CT_PEER6, sn);
    hp_ipv6_mcast_mac(sn, snmac);
    HP_CHECK_MEMEQ(eth.dst, snmac, 6);
    HP_CHECK_MEMEQ(ip.src, CT_OUR6, 16); /* the waiting packet's source */
    HP_CHECK_MEMEQ(ip.dst, sn, 16);
    HP_CHECK_EQ(ip.hop_limit, 255);
    HP_CHECK_EQ(r.type, HP_NDP_NEIGHBOR_SOLICIT);
    HP_CHECK_MEMEQ(r.target, CT_PEER6, 16);
    HP_CHECK(r.has_sll);
    HP_CHECK_MEMEQ(r.sll, e.mac, 6);
    HP_CHECK_EQ(ct_drain(&e), 0);

    struct hp_ndp_repr na = {.type = HP_NDP_NEIGHBOR_ADVERT,
                             .solicited = true,
                             .override = true,
                             .has_tll = true};
    memcpy(na.target, CT_PEER6, 16);
    memcpy(na.tll, CT_PEER_MAC, 6);
    ct_inject_ndp(&e, CT_PEER6, CT_OUR6, 255, &na);
    ct_step(&e);
    struct hp_buf *out[4];
    int n = ct_recv(&e, out, 4);
    HP_CHECK_EQ(n, 2);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = ct_eth(out[i], &eth);
        HP_REQUIRE(p != NULL);
        HP_CHECK_EQ(eth.ethertype, HP_ETHERTYPE_IPV6);
        HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
        HP_CHECK_MEMEQ(hp_ipv6_dst_ptr(p), CT_PEER6, 16);
        HP_CHECK_EQ(p[40], 0x60 + i);
    }
    hp_buf_free_bulk(out, n > 0 ? (unsigned)n : 0);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_NA), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_resolution_failure_drops_and_counts)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    hp__neigh_output6(e.ifc, CT_PEER6, ct_ip6_packet(&e, CT_OUR6, CT_PEER6, 12, 1));
    for (int i = 0; i < 3; i++)
        ct_advance_ms(&e, 1000);
    HP_CHECK_EQ(ct_drain(&e), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NS), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UNRESOLVED_DROPS), 1);
    HP_CHECK(!hp__neigh_exists(e.ifc, 6, CT_PEER6));
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_unsolicited_na_and_router_messages_are_ignored)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    struct hp_ndp_repr na = {.type = HP_NDP_NEIGHBOR_ADVERT, .override = true, .has_tll = true};
    memcpy(na.target, CT_PEER6, 16);
    memcpy(na.tll, CT_PEER_MAC, 6);
    ct_inject_ndp(&e, CT_PEER6, ALL_NODES, 255, &na);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_UNSOLICITED), 1);
    HP_CHECK(!hp__neigh_exists(e.ifc, 6, CT_PEER6));

    static const uint8_t router_ll[16] = {0xFE, 0x80, [15] = 1};
    struct hp_ndp_repr ra = {.type = HP_NDP_ROUTER_ADVERT, .router_lifetime = 1800};
    ct_inject_ndp(&e, router_ll, ALL_NODES, 255, &ra);
    struct hp_ndp_repr rs = {.type = HP_NDP_ROUTER_SOLICIT};
    static const uint8_t all_routers[16] = {0xFF, 0x02, [15] = 2};
    ct_inject_ndp(&e, router_ll, all_routers, 255, &rs);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_RA), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_RS), 1);
    HP_CHECK(!e.s->has_gw6);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_na_rules_for_cached_entries)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    /* Learn the peer (STALE) from its NS. */
    struct hp_ndp_repr ns;
    ns_for(&ns, CT_OUR6, true);
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    ct_inject_ndp(&e, CT_PEER6, sn, 255, &ns);
    ct_step(&e);
    ct_drain(&e);
    /* An NA without override and with another MAC does not change it
     * (RFC 4861 7.2.5). */
    static const uint8_t other_mac[6] = {0x02, 0, 0, 0x11, 0x22, 0x33};
    struct hp_ndp_repr na = {.type = HP_NDP_NEIGHBOR_ADVERT, .solicited = true, .has_tll = true};
    memcpy(na.target, CT_PEER6, 16);
    memcpy(na.tll, other_mac, 6);
    ct_inject_ndp(&e, CT_PEER6, CT_OUR6, 255, &na);
    hp__neigh_output6(e.ifc, CT_PEER6, ct_ip6_packet(&e, CT_OUR6, CT_PEER6, 4, 0));
    ct_step(&e);
    struct hp_buf *out[4];
    int n = ct_recv(&e, out, 4);
    HP_REQUIRE_EQ(n, 2); /* probe + packet, both to the old MAC */
    for (int i = 0; i < n; i++) {
        struct hp_eth_repr eth;
        HP_CHECK(ct_eth(out[i], &eth) != NULL);
        HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    }
    hp_buf_free_bulk(out, 2);
    /* With override it does, once the lock time since the entry's MAC was
     * learned has passed (neigh_locktime_ms), and as an answer to our probe
     * (the entry is in PROBE: a REACHABLE one would need
     * HP_STACK_F_NDP_OVERRIDE). */
    e.s->now += 1001ull * 1000000u;
    na.override = true;
    ct_inject_ndp(&e, CT_PEER6, CT_OUR6, 255, &na);
    hp__neigh_output6(e.ifc, CT_PEER6, ct_ip6_packet(&e, CT_OUR6, CT_PEER6, 4, 0));
    ct_step(&e);
    n = ct_recv(&e, out, 4);
    HP_REQUIRE_EQ(n, 1); /* reachable now: no probe */
    struct hp_eth_repr eth;
    HP_CHECK(ct_eth(out[0], &eth) != NULL);
    HP_CHECK_MEMEQ(eth.dst, other_mac, 6);
    hp_buf_free(out[0]);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_multicast_output_maps_directly)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    hp__neigh_output6(e.ifc, ALL_NODES, ct_ip6_packet(&e, CT_OUR6, ALL_NODES, 4, 0));
    ct_step(&e);
    struct hp_buf *b;
    HP_REQUIRE_EQ(ct_recv(&e, &b, 1), 1);
    struct hp_eth_repr eth;
    HP_CHECK(ct_eth(b, &eth) != NULL);
    static const uint8_t nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
    HP_CHECK_MEMEQ(eth.dst, nodes_mac, 6);
    hp_buf_free(b);
    hp__neigh_output6(e.ifc, UNSPEC, ct_ip6_packet(&e, CT_OUR6, UNSPEC, 4, 0));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UNRESOLVED_DROPS), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_OUT_NS), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ndp_over_the_link_through_the_ip_modules)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    struct hp_ndp_repr ns;
    ns_for(&ns, CT_OUR6, true);
    uint8_t sn[16], snmac[6];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    hp_ipv6_mcast_mac(sn, snmac);
    HP_REQUIRE_EQ(ct_send_ndp(&e, snmac, CT_PEER6, sn, 255, &ns), 0);
    HP_REQUIRE_EQ(ct_send_ndp(&e, snmac, CT_PEER6, sn, 254, &ns), 0);
    HP_CHECK_EQ(hp_stack_poll(e.s), 2);
    struct hp_eth_repr eth;
    struct hp_ipv6_repr ip;
    struct hp_ndp_repr r;
    HP_REQUIRE(recv_ndp(&e, &eth, &ip, &r));
    HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
    HP_CHECK_MEMEQ(ip.dst, CT_PEER6, 16);
    HP_CHECK_EQ(r.type, HP_NDP_NEIGHBOR_ADVERT);
    HP_CHECK(r.solicited);
    HP_CHECK_MEMEQ(r.target, CT_OUR6, 16);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_NS), 1);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NDP_IN_BAD_HOPLIMIT), 1);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- cache poisoning: the override flag and the lock time (docs/knobs.md) ---- */

static const uint8_t EVIL_MAC6[6] = {0x02, 0x66, 0x66, 0x66, 0x66, 0x66};

/* Resolve CT_PEER6 (NS, solicited NA): REACHABLE with CT_PEER_MAC. */
static void resolve_peer6(struct ct_env *e)
{
    hp__neigh_output6(e->ifc, CT_PEER6, ct_ip6_packet(e, CT_OUR6, CT_PEER6, 8, 0x01));
    ct_step(e);
    struct hp_ndp_repr na = {.type = HP_NDP_NEIGHBOR_ADVERT,
                             .solicited = true,
                             .override = true,
                             .has_tll = true};
    memcpy(na.target, CT_PEER6, 16);
    memcpy(na.tll, CT_PEER_MAC, 6);
    ct_inject_ndp(e, CT_PEER6, CT_OUR6, 255, &na);
    ct_step(e);
    ct_drain(e);
}

/* An NA claiming CT_PEER6 for mac, with the override flag (and S set:
 * a forger sets what it likes). */
static void na_claim(struct ct_env *e, const uint8_t mac[6])
{
    struct hp_ndp_repr na = {.type = HP_NDP_NEIGHBOR_ADVERT,
                             .solicited = true,
                             .override = true,
                             .has_tll = true};
    memcpy(na.target, CT_PEER6, 16);
    memcpy(na.tll, mac, 6);
    ct_inject_ndp(e, CT_PEER6, CT_OUR6, 255, &na);
}

/* The next IPv6 packet to CT_PEER6 goes to mac. */
static bool sent6_to(struct ct_env *e, const uint8_t mac[6])
{
    hp__neigh_output6(e->ifc, CT_PEER6, ct_ip6_packet(e, CT_OUR6, CT_PEER6, 8, 0x77));
    ct_step(e);
    struct hp_buf *out[8];
    int n = ct_recv(e, out, 8), ok = 0, other = 0;
    for (int i = 0; i < n; i++) {
        struct hp_eth_repr eth;
        const uint8_t *p = ct_eth(out[i], &eth);
        if (p && eth.ethertype == HP_ETHERTYPE_IPV6 && p[6] != HP_IPPROTO_ICMPV6) {
            if (memcmp(eth.dst, mac, 6) == 0)
                ok++;
            else
                other++;
        }
    }
    hp_buf_free_bulk(out, n > 0 ? (unsigned)n : 0);
    return ok == 1 && other == 0;
}

/* By default an NA with the override flag we did not ask for, and an NS
 * with another source link-layer address, do not move a REACHABLE entry
 * (counted); with HP_STACK_F_NDP_OVERRIDE they do (RFC 4861 7.2.5 as
 * written), after the lock time. */
HP_TEST(ndp_override_of_reachable_entry_is_a_knob)
{
    struct ct_env e;
    HP_REQUIRE_EQ(open6(&e, NULL), 0);
    resolve_peer6(&e);
    e.s->now += 2000ull * 1000000u;
    na_claim(&e, EVIL_MAC6);
    struct hp_ndp_repr ns;
    ns_for(&ns, CT_OUR6, true);
    memcpy(ns.sll, EVIL_MAC6, 6);
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    ct_inject_ndp(&e, CT_PEER6, sn, 255, &ns);
    ct_step(&e);
    ct_drain(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_REFUSED), 2);
    HP_CHECK(sent6_to(&e, CT_PEER_MAC));
    ct_close(&e);

    struct hp_stack_config cfg = {.flags = HP_STACK_F_NDP_OVERRIDE};
    HP_REQUIRE_EQ(open6(&e, &cfg), 0);
    resolve_peer6(&e);
    na_claim(&e, EVIL_MAC6); /* within the lock time: kept */
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_LOCKED), 1);
    HP_CHECK(sent6_to(&e, CT_PEER_MAC));
    e.s->now += 1001ull * 1000000u;
    na_claim(&e, EVIL_MAC6);
    ct_step(&e);
    HP_CHECK(sent6_to(&e, EVIL_MAC6));
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_UPDATES_REFUSED), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
