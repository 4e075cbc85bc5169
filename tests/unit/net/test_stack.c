/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack instance: create/destroy and defaults, interfaces and addresses, counters, poll, and Ethernet drops by reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core_test.h"

HP_TEST(stack_create_defaults_and_destroy)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    HP_CHECK_STREQ(s->cfg.name, "stack");
    HP_CHECK_EQ(s->cfg.neigh_max, 1024u);
    HP_CHECK_EQ(s->cfg.neigh_queue, 64u);
    HP_CHECK_EQ(s->cfg.neigh_retries, 3u);
    HP_CHECK_EQ(s->cfg.neigh_retrans_ms, 1000u);
    HP_CHECK_EQ(s->cfg.neigh_reachable_ms, 30000u);
    HP_CHECK_EQ(s->cfg.reasm_max_bytes, 4u << 20);
    HP_CHECK_EQ(s->cfg.reasm_timeout_ms, 0u);
    HP_CHECK_EQ(s->cfg.icmp_rate, 1000u);
    HP_CHECK_EQ(s->cfg.icmp_burst, 50u);
    HP_CHECK_EQ(s->cfg.default_ttl, 64);
    HP_CHECK_GT(s->now, 0);
    HP_CHECK_EQ(hp_stack_next_timer_ns(s), -1);
    HP_CHECK_EQ(hp_stack_poll(s), 0);
    HP_CHECK_EQ(hp_stack_destroy(s), 0);
    HP_CHECK_EQ(hp_stack_destroy(NULL), 0);

    struct hp_stack_config cfg = {.name = "edge", .neigh_max = 7, .default_ttl = 200};
    s = hp_stack_create(&cfg);
    HP_REQUIRE(s != NULL);
    HP_CHECK_STREQ(s->cfg.name, "edge");
    HP_CHECK_EQ(s->cfg.neigh_max, 7u);
    HP_CHECK_EQ(s->cfg.default_ttl, 200);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_create_bad_config)
{
    struct hp_stack_config bad_flags = {.flags = 0x80};
    errno = 0;
    HP_CHECK(hp_stack_create(&bad_flags) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    struct hp_stack_config huge = {.neigh_max = 0xFFFFFFFFu};
    errno = 0;
    HP_CHECK(hp_stack_create(&huge) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    struct hp_stack_config deep = {.neigh_queue = 1u << 30};
    errno = 0;
    HP_CHECK(hp_stack_create(&deep) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_counter_names)
{
    HP_CHECK_STREQ(hp_stack_counter_name(HP_CTR_ETH_IN_FRAMES), "ETH_IN_FRAMES");
    HP_CHECK_STREQ(hp_stack_counter_name(HP_CTR_IP_IN_HDR_ERRORS), "IP_IN_HDR_ERRORS");
    HP_CHECK_STREQ(hp_stack_counter_name(HP_CTR_UDP_OUT_ERRORS), "UDP_OUT_ERRORS");
    HP_CHECK(hp_stack_counter_name(HP_STACK_NCOUNTERS) == NULL);
    HP_CHECK(hp_stack_counter_name((enum hp_stack_ctr) - 1) == NULL);
    for (int c = 0; c < HP_STACK_NCOUNTERS; c++)
        HP_CHECK(hp_stack_counter_name((enum hp_stack_ctr)c) != NULL);

    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    HP_CHECK_EQ(hp_stack_counter(s, HP_STACK_NCOUNTERS), 0);
    HP_CHECK_EQ(hp_stack_counter(NULL, HP_CTR_ETH_IN_FRAMES), 0);
    s->ctr[HP_CTR_ARP_IN] = 12;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    HP_REQUIRE(f != NULL);
    hp_stack_counters_print(s, f, true);
    fclose(f);
    HP_CHECK_STREQ(text, "ARP_IN 12\n");
    free(text);
    f = open_memstream(&text, &len);
    HP_REQUIRE(f != NULL);
    hp_stack_counters_print(s, f, false);
    fclose(f);
    HP_CHECK(strstr(text, "ETH_IN_FRAMES 0\n") == text);
    HP_CHECK(strstr(text, "\nARP_IN 12\n") != NULL);
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    HP_CHECK_EQ(lines, HP_STACK_NCOUNTERS);
    free(text);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_add_iface_errors_and_link_local)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    struct hp_link *l[10];
    for (int i = 0; i < 10; i += 2)
        HP_REQUIRE_EQ(hp_link_mem_pair(NULL, l + i), 0);
    HP_CHECK_EQ(hp_stack_add_iface(NULL, l[0]), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_iface(s, NULL), -EINVAL);
    for (int i = 0; i < HP__MAX_IFACES; i++)
        HP_CHECK_EQ(hp_stack_add_iface(s, l[i]), i);
    HP_CHECK_EQ(hp_stack_add_iface(s, l[0]), -EINVAL); /* already attached */
    HP_CHECK_EQ(hp_stack_add_iface(s, l[8]), -ENOSPC);

    /* Each interface got its EUI-64 link-local address, tentative (DAD). */
    uint8_t mac[6], ll[16];
    hp_link_mac(l[3], mac);
    hp_ipv6_eui64_link_local(mac, ll);
    HP_CHECK_EQ(hp_stack_addr_state(s, 3, 6, ll), HP_ADDR_TENTATIVE);
    HP_CHECK_EQ(hp_stack_addr_state(s, 2, 6, ll), HP_ADDR_NONE);
    HP_CHECK_EQ(s->ifaces[3]->mtu, 1500u);
    HP_CHECK_MEMEQ(s->ifaces[3]->mac, mac, 6);
    HP_CHECK(s->ifaces[3]->pool == hp_link_pool(l[3]));
    int64_t next = hp_stack_next_timer_ns(s);
    HP_CHECK_GE(next, 0);
    HP_CHECK_LE(next, 1000000000);

    hp_stack_destroy(s);
    for (int i = 0; i < 10; i++)
        hp_link_close(l[i]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_add_addr_errors)
{
    struct ct_env e;
    HP_REQUIRE_EQ(ct_open(&e, NULL), 0);
    struct hp_stack *s = e.s;
    static const uint8_t mc4[4] = {224, 0, 0, 1}, zero4[4] = {0}, bc4[4] = {255, 255, 255, 255},
                         lo4[4] = {127, 0, 0, 1};
    static const uint8_t mc6[16] = {0xFF, 0x02, [15] = 1}, zero6[16] = {0}, lo6[16] = {[15] = 1};
    HP_CHECK_EQ(hp_stack_add_addr(NULL, 0, 4, CT_OUR4, 24), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 5, CT_OUR4, 24), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, NULL, 24), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 1, 4, CT_OUR4, 24), -ENODEV);
    HP_CHECK_EQ(hp_stack_add_addr(s, -1, 4, CT_OUR4, 24), -ENODEV);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, CT_OUR4, 33), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, mc4, 24), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, zero4, 24), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, bc4, 24), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, lo4, 8), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, CT_OUR6, 129), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, mc6, 64), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, zero6, 64), -EINVAL);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, lo6, 128), -EINVAL);

    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, CT_OUR4, 24), 0);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, CT_OUR4, 24), -EEXIST);
    HP_CHECK_EQ(hp_stack_addr_state(s, 0, 4, CT_OUR4), HP_ADDR_PREFERRED);
    HP_CHECK_EQ(hp_stack_addr_state(s, 0, 4, CT_PEER4), HP_ADDR_NONE);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, CT_OUR6, 64), 0);
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, CT_OUR6, 64), -EEXIST);
    HP_CHECK_EQ(hp_stack_addr_state(s, 0, 6, CT_OUR6), HP_ADDR_TENTATIVE);
    HP_CHECK_EQ(hp_stack_addr_state(s, 0, 6, CT_PEER6), HP_ADDR_NONE);
    HP_CHECK_EQ(hp_stack_addr_state(s, 0, 7, CT_OUR6), HP_ADDR_NONE);
    HP_CHECK_EQ(hp_stack_addr_state(s, 3, 6, CT_OUR6), HP_ADDR_NONE);

    /* Eight per family and interface (the IPv6 link-local is one of them). */
    for (int i = 1; i < HP__MAX_ADDRS; i++) {
        uint8_t a4[4] = {198, 18, (uint8_t)i, 1};
        HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, a4, 24), 0);
    }
    uint8_t a4[4] = {198, 18, 100, 1};
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 4, a4, 24), -ENOSPC);
    for (int i = 2; i < HP__MAX_ADDRS; i++) {
        uint8_t a6[16] = {0x20, 0x01, 0x00, 0x02, 0, (uint8_t)i, [15] = 1};
        HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, a6, 64), 0);
    }
    uint8_t a6[16] = {0x20, 0x01, 0x00, 0x02, 0, 100, [15] = 1};
    HP_CHECK_EQ(hp_stack_add_addr(s, 0, 6, a6, 64), -ENOSPC);

    /* Gateways. */
    HP_CHECK_EQ(hp_stack_set_gateway(s, 4, CT_PEER4), 0);
    HP_CHECK(s->has_gw4);
    HP_CHECK_MEMEQ(s->gw4, CT_PEER4, 4);
    HP_CHECK_EQ(hp_stack_set_gateway(s, 6, CT_PEER6), 0);
    HP_CHECK(s->has_gw6);
    HP_CHECK_EQ(hp_stack_set_gateway(s, 4, mc4), -EINVAL);
    HP_CHECK_EQ(hp_stack_set_gateway(s, 6, zero6), -EINVAL);
    HP_CHECK_EQ(hp_stack_set_gateway(s, 5, CT_PEER4), -EINVAL);
    HP_CHECK_EQ(hp_stack_set_gateway(s, 4, NULL), -EINVAL);
    HP_CHECK_EQ(hp_stack_set_gateway(NULL, 4, CT_PEER4), -EINVAL);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_local_address_helpers)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, CT_OUR4, 24), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    HP_CHECK(hp__is_local4(e.ifc, CT_OUR4));
    HP_CHECK(!hp__is_local4(e.ifc, CT_PEER4));
    HP_CHECK(hp__is_local6(e.ifc, CT_OUR6));
    HP_CHECK(!hp__is_local6(e.ifc, CT_PEER6));
    HP_CHECK(hp__find6(e.ifc, CT_OUR6) == &e.ifc->v6[1]);
    HP_CHECK(hp__find6(e.ifc, CT_PEER6) == NULL);
    static const uint8_t all_nodes[16] = {0xFF, 0x02, [15] = 1};
    static const uint8_t all_routers[16] = {0xFF, 0x02, [15] = 2};
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    HP_CHECK(hp__is_mcast_member6(e.ifc, all_nodes));
    HP_CHECK(hp__is_mcast_member6(e.ifc, sn));
    HP_CHECK(!hp__is_mcast_member6(e.ifc, all_routers));
    hp_ipv6_solicited_node(CT_PEER6, sn);
    HP_CHECK(!hp__is_mcast_member6(e.ifc, sn));
    /* Directed broadcast of the /24, and the limited broadcast. */
    static const uint8_t dbc[4] = {198, 18, 0, 255}, lbc[4] = {255, 255, 255, 255};
    HP_CHECK(hp__is_bcast4(e.ifc, dbc));
    HP_CHECK(hp__is_bcast4(e.ifc, lbc));
    HP_CHECK(!hp__is_bcast4(e.ifc, CT_PEER4));
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_tentative_addresses_join_their_groups)
{
    struct ct_env e;
    HP_REQUIRE_EQ(ct_open(&e, NULL), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    uint8_t sn[16];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    HP_CHECK(hp__is_mcast_member6(e.ifc, sn)); /* RFC 4862 5.4.2: before DAD's NS */
    HP_CHECK(!hp__is_local6(e.ifc, CT_OUR6));  /* but not usable yet */
    HP_CHECK(hp__find6(e.ifc, CT_OUR6) != NULL);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Send a raw frame of len bytes from the peer. */
static void send_raw(struct ct_env *e, const uint8_t *bytes, size_t len)
{
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (!b)
        return;
    memcpy(hp_buf_append(b, (uint32_t)len), bytes, len);
    ct_send(e, b);
}

HP_TEST(eth_drops_by_reason)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, CT_OUR4, 24), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    ct_step(&e);
    ct_drain(&e);
    struct hp_stack *s = e.s;
    uint8_t f[64];

    /* Truncated: a tag announced in a 16-byte frame. */
    memset(f, 0, sizeof f);
    memcpy(f, e.mac, 6);
    memcpy(f + 6, CT_PEER_MAC, 6);
    hp_put_be16(f + 12, HP_ETHERTYPE_VLAN);
    send_raw(&e, f, 16);
    /* A group source address. */
    memcpy(f, e.mac, 6);
    memcpy(f + 6, CT_BCAST, 6);
    hp_put_be16(f + 12, HP_ETHERTYPE_IPV4);
    send_raw(&e, f, 60);
    /* Reserved VID 0xFFF. */
    memcpy(f + 6, CT_PEER_MAC, 6);
    hp_put_be16(f + 12, HP_ETHERTYPE_VLAN);
    hp_put_be16(f + 14, 0x0FFF);
    hp_put_be16(f + 16, HP_ETHERTYPE_IPV4);
    send_raw(&e, f, 60);
    HP_CHECK_EQ(ct_step(&e), 3);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_IN_MALFORMED), 3);

    /* VLAN 5 to our MAC, and an 802.1ad S-tag. */
    hp_put_be16(f + 14, 5);
    send_raw(&e, f, 60);
    hp_put_be16(f + 12, HP_ETHERTYPE_QINQ);
    send_raw(&e, f, 60);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_IN_VLAN), 2);

    /* Unknown EtherType, and an IEEE 802.3 length field. */
    hp_put_be16(f + 12, 0x88B5);
    send_raw(&e, f, 60);
    hp_put_be16(f + 12, 46);
    send_raw(&e, f, 60);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_IN_UNKNOWN_TYPE), 2);

    /* Not for us: another unicast MAC, IPv4 multicast (no groups joined),
     * an IPv6 group we are not in (all-routers), another solicited-node. */
    static const uint8_t other[6] = {0x02, 0, 0, 0, 0, 0x99};
    static const uint8_t mc4[6] = {0x01, 0x00, 0x5E, 0x00, 0x00, 0xFB};
    static const uint8_t routers[6] = {0x33, 0x33, 0, 0, 0, 2};
    static const uint8_t sn_other[6] = {0x33, 0x33, 0xFF, 0x12, 0x34, 0x56};
    const uint8_t *dsts[] = {other, mc4, routers, sn_other};
    for (int i = 0; i < 4; i++) {
        memcpy(f, dsts[i], 6);
        hp_put_be16(f + 12, HP_ETHERTYPE_ARP);
        send_raw(&e, f, 60);
    }
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_IN_OTHER_HOST), 4);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ARP_IN), 0);

    /* Accepted: our MAC, broadcast, all-nodes, our solicited-node groups
     * (the link-local's and CT_OUR6's): each reaches ARP (as malformed). */
    uint8_t sn[16], snmac[6], llsn[16], llsnmac[6];
    hp_ipv6_solicited_node(CT_OUR6, sn);
    hp_ipv6_mcast_mac(sn, snmac);
    hp_ipv6_solicited_node(e.ifc->v6[0].addr, llsn);
    hp_ipv6_mcast_mac(llsn, llsnmac);
    static const uint8_t nodes[6] = {0x33, 0x33, 0, 0, 0, 1};
    const uint8_t *ok[] = {e.mac, CT_BCAST, nodes, snmac, llsnmac};
    for (int i = 0; i < 5; i++) {
        memcpy(f, ok[i], 6);
        hp_put_be16(f + 12, HP_ETHERTYPE_ARP);
        send_raw(&e, f, 20);
    }
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_IN_OTHER_HOST), 4);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ARP_IN), 5);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ARP_IN_MALFORMED), 5);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_IN_FRAMES), 16);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(eth_output_without_headroom_is_dropped)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    ct_step(&e);
    ct_drain(&e);
    uint64_t before = hp_stack_counter(e.s, HP_CTR_ETH_OUT_FRAMES);
    struct hp_buf *b = hp_buf_alloc(e.pool);
    HP_REQUIRE(b != NULL);
    HP_REQUIRE(hp_buf_prepend(b, hp_buf_headroom(b) - 4) != NULL);
    hp__eth_output(e.ifc, CT_PEER_MAC, HP_ETHERTYPE_IPV4, b);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ETH_OUT_DROPS), 1);
    ct_step(&e);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ETH_OUT_FRAMES), before);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(eth_flush_frees_what_the_link_refuses)
{
    struct hp_link_config lc = {.ring_size = 4};
    struct hp_link *l[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(&lc, l), 0);
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    struct hp_stack *s = hp_stack_create(&cfg);
    HP_REQUIRE(s != NULL);
    HP_REQUIRE_EQ(hp_stack_add_iface(s, l[0]), 0);
    struct hp__iface *ifc = s->ifaces[0];
    hp__eth_flush(ifc); /* the unsolicited NA of the link-local address */
    struct hp_buf *drain[8];
    int n = hp_link_rx_burst(l[1], drain, 8);
    hp_buf_free_bulk(drain, n > 0 ? (unsigned)n : 0);
    uint64_t out0 = hp_stack_counter(s, HP_CTR_ETH_OUT_FRAMES);
    s->in_poll = true; /* as inside a poll: the frames wait for the flush */
    for (int i = 0; i < 10; i++) {
        struct hp_buf *b = hp_buf_alloc(hp_link_pool(l[0]));
        HP_REQUIRE(b != NULL);
        memset(hp_buf_append(b, 40), i, 40);
        hp__eth_output(ifc, CT_PEER_MAC, 0x88B5, b);
    }
    HP_CHECK_EQ(ifc->ntx, 10u);
    hp__eth_flush(ifc);
    s->in_poll = false;
    HP_CHECK_EQ(ifc->ntx, 0u);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_OUT_FRAMES) - out0, 4);
    HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ETH_OUT_DROPS), 6);
    n = hp_link_rx_burst(l[1], drain, 8);
    HP_CHECK_EQ(n, 4);
    for (int i = 0; i < n; i++) {
        struct hp_eth_repr eth;
        const uint8_t *p = ct_eth(drain[i], &eth);
        HP_REQUIRE(p != NULL);
        HP_CHECK_MEMEQ(eth.dst, CT_PEER_MAC, 6);
        HP_CHECK_MEMEQ(eth.src, ifc->mac, 6);
        HP_CHECK_EQ(eth.ethertype, 0x88B5);
        HP_CHECK_EQ(p[0], i);
    }
    hp_buf_free_bulk(drain, n > 0 ? (unsigned)n : 0);
    hp_stack_destroy(s);
    hp_link_close(l[0]);
    hp_link_close(l[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Outside a poll, a frame goes to a link that sends without a system
 * call (mem) at once: a reply the application makes after
 * hp_stack_events is on the wire before the next poll. Inside a poll
 * frames wait for its flush, one burst. */
HP_TEST(eth_outside_a_poll_goes_at_once)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    ct_drain(&e);
    uint64_t out0 = hp_stack_counter(e.s, HP_CTR_ETH_OUT_FRAMES);
    for (int i = 0; i < 3; i++) {
        struct hp_buf *b = hp_buf_alloc(e.pool);
        HP_REQUIRE(b != NULL);
        memset(hp_buf_append(b, 40), i, 40);
        hp__eth_output(e.ifc, CT_PEER_MAC, 0x88B5, b);
        HP_CHECK_EQ(e.ifc->ntx, 0u);
        HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ETH_OUT_FRAMES) - out0, (uint64_t)i + 1);
    }
    HP_CHECK(!hp_stack_tx_pending(e.s));
    HP_CHECK_EQ(ct_drain(&e), 3);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Frames waiting in the transmit burst (a kernel link's, between polls)
 * end a sleep before it starts. */
HP_TEST(stack_tx_pending_ends_a_sleep)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    ct_drain(&e);
    e.s->in_poll = true; /* queued as a kernel link's frames wait */
    struct hp_buf *b = hp_buf_alloc(e.pool);
    HP_REQUIRE(b != NULL);
    memset(hp_buf_append(b, 40), 1, 40);
    hp__eth_output(e.ifc, CT_PEER_MAC, 0x88B5, b);
    e.s->in_poll = false;
    HP_CHECK(hp_stack_tx_pending(e.s));
    int64_t wake = -1;
    HP_CHECK_GT(hp_stack_prepare_sleep(e.s, &wake), 0);
    HP_CHECK_EQ(wake, 0);
    hp_stack_poll(e.s);
    HP_CHECK(!hp_stack_tx_pending(e.s));
    HP_CHECK_EQ(ct_drain(&e), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_poll_answers_and_counts_work)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, CT_OUR4, 24), 0);
    HP_CHECK_EQ(hp_stack_poll(e.s), 0); /* sends, but handles nothing */
    HP_CHECK_EQ(ct_drain(&e), 2);       /* NA of the link-local, gratuitous ARP */
    struct hp_arp_repr req = {.op = HP_ARP_OP_REQUEST};
    memcpy(req.sha, CT_PEER_MAC, 6);
    memcpy(req.spa, CT_PEER4, 4);
    memcpy(req.tpa, CT_OUR4, 4);
    for (int i = 0; i < 3; i++)
        HP_REQUIRE_EQ(ct_send_arp(&e, CT_BCAST, &req), 0);
    HP_CHECK_EQ(hp_stack_poll(e.s), 3);
    HP_CHECK_EQ(ct_drain(&e), 3);
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_ARP_OUT_REPLIES), 3);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(stack_destroy_frees_queued_packets)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD};
    HP_REQUIRE_EQ(ct_open(&e, &cfg), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, CT_OUR4, 24), 0);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    /* Packets waiting for ARP and NDP, and frames in the transmit burst
     * (as inside a poll: outside one, the mem link takes them at once). */
    e.s->in_poll = true;
    for (int i = 0; i < 5; i++) {
        hp__neigh_output4(e.ifc, CT_PEER4, ct_ip4_packet(&e, CT_OUR4, CT_PEER4, 10, (uint8_t)i));
        hp__neigh_output6(e.ifc, CT_PEER6, ct_ip6_packet(&e, CT_OUR6, CT_PEER6, 10, (uint8_t)i));
    }
    HP_CHECK_EQ(hp_stack_counter(e.s, HP_CTR_NEIGH_QUEUED), 10);
    HP_CHECK_GT(e.ifc->ntx, 0u);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
