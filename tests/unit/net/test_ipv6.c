/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 input and output: header errors counted by reason, addresses, parameter problems, NDP to tentative addresses, routes and source selection. */
#include <errno.h>

#include "ip_test.h"

static size_t echo_pkt6(uint8_t *out, size_t cap)
{
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6, .hop_limit = 64};
    memcpy(ip.src, CT_PEER6, 16);
    memcpy(ip.dst, CT_OUR6, 16);
    size_t n = it_echo6(out + 40, cap - 40, CT_PEER6, CT_OUR6, HP_ICMP6_ECHO_REQUEST, 3, 4, 16);
    ip.payload_len = (uint16_t)n;
    hp_ipv6_emit(&ip, out, 40);
    return 40 + n;
}

HP_TEST(ipv6_header_errors_counted_by_reason)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t d[256];
    size_t n = echo_pkt6(d, sizeof d);
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, 39); /* shorter than the header */
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_TRUNCATED), 1);
    n = echo_pkt6(d, sizeof d);
    hp_put_be16(d + 4, (uint16_t)(n - 40 + 1)); /* Payload Length past the frame */
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_TRUNCATED), 2);
    n = echo_pkt6(d, sizeof d);
    d[0] = 0x40; /* version 4 */
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_HDR_ERRORS), 1);
    n = echo_pkt6(d, sizeof d);
    d[8] = 0xFF; /* multicast source */
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_HDR_ERRORS), 2);
    n = echo_pkt6(d, sizeof d);
    d[39] = 0x77; /* another host */
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_ADDR_ERRORS), 1);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_RECEIVES), 5);
    /* Padding after Payload Length is ignored; the packet itself answered. */
    n = echo_pkt6(d, sizeof d);
    memset(d + n, 0, 10);
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, n + 10);
    ct_step(&e);
    struct hp_ipv6_repr ip;
    uint8_t r[256];
    HP_CHECK_EQ(it_recv6(&e, &ip, r, sizeof r), (long)(n - 40));
    HP_CHECK_EQ(r[0], HP_ICMP6_ECHO_REPLY);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_unknown_next_header_parameter_problem)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    struct hp_ipv6_repr ip = {.next_header = 253};
    memcpy(ip.src, CT_PEER6, 16);
    memcpy(ip.dst, CT_OUR6, 16);
    uint8_t pl[24] = {0};
    it_send6(&e, &ip, pl, 16);
    /* Behind a Destination Options header: the pointer is that header's
     * Next Header field, at offset 40. */
    ip.next_header = HP_IPPROTO_DSTOPTS;
    pl[0] = 253;
    pl[1] = 0;
    pl[2] = 1; /* PadN, 4 bytes */
    pl[3] = 4;
    it_send6(&e, &ip, pl, 24);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_UNKNOWN_PROTOS), 2);
    uint32_t want[2] = {6, 40};
    for (int i = 0; i < 2; i++) {
        struct hp_ipv6_repr rip;
        uint8_t r[256];
        long n = it_recv6(&e, &rip, r, sizeof r);
        HP_REQUIRE_EQ(n, 8 + 40 + (i ? 24 : 16));
        HP_CHECK_EQ(r[0], HP_ICMP6_PARAM_PROBLEM);
        HP_CHECK_EQ(r[1], HP_ICMP6_PARAM_NEXT_HEADER);
        HP_CHECK_EQ(hp_get_be32(r + 4), want[i]);
        HP_CHECK_MEMEQ(rip.src, CT_OUR6, 16);
        HP_CHECK_EQ(hp_cksum_icmp6_verify(rip.src, rip.dst, r, (size_t)n), HP_CKSUM_GOOD);
    }
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_unknown_option_parameter_problem_code_2)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_DSTOPTS};
    memcpy(ip.src, CT_PEER6, 16);
    memcpy(ip.dst, CT_OUR6, 16);
    /* Option type 0x9E: action bits 10 (discard, send parameter problem). */
    uint8_t pl[8] = {HP_IPPROTO_NONE, 0, 0x9E, 4, 0, 0, 0, 0};
    it_send6(&e, &ip, pl, 8);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_HDR_ERRORS), 1);
    struct hp_ipv6_repr rip;
    uint8_t r[256];
    long n = it_recv6(&e, &rip, r, sizeof r);
    HP_REQUIRE_EQ(n, 8 + 48);
    HP_CHECK_EQ(r[0], HP_ICMP6_PARAM_PROBLEM);
    HP_CHECK_EQ(r[1], HP_ICMP6_PARAM_OPTION);
    HP_CHECK_EQ(hp_get_be32(r + 4), 42);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_ndp_reaches_a_tentative_address_other_traffic_does_not)
{
    struct ct_env e;
    HP_REQUIRE(ct_open(&e, NULL) == 0); /* with DAD */
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 6, CT_OUR6, 64), 0);
    HP_REQUIRE_EQ(hp_stack_addr_state(e.s, 0, 6, CT_OUR6), HP_ADDR_TENTATIVE);
    ct_drain(&e);
    uint8_t d[256];
    size_t n = echo_pkt6(d, sizeof d);
    it_send_raw(&e, HP_ETHERTYPE_IPV6, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_ADDR_ERRORS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_IN_ECHOS), 0);
    /* A unicast NS for the tentative address goes to NDP (RFC 4862 5.4.3). */
    struct hp_ndp_repr ns = {.type = HP_NDP_NEIGHBOR_SOLICIT, .has_sll = true};
    memcpy(ns.target, CT_OUR6, 16);
    memcpy(ns.sll, CT_PEER_MAC, 6);
    uint64_t before = it_ctr(&e, HP_CTR_NDP_IN_NS);
    ct_send_ndp(&e, e.mac, CT_PEER6, CT_OUR6, 255, &ns);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_NDP_IN_NS), before + 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_ADDR_ERRORS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv6_route_and_source_selection)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    struct hp__route r;
    static const uint8_t far[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 9};
    static const uint8_t ll_peer[16] = {0xFE, 0x80, [15] = 2};
    static const uint8_t gw[16] = {0xFE, 0x80, [15] = 1};
    HP_CHECK_EQ(hp__route6(e.s, far, &r), -ENETUNREACH);
    HP_REQUIRE_EQ(hp__route6(e.s, CT_PEER6, &r), 0);
    HP_CHECK_MEMEQ(r.src, CT_OUR6, 16);
    HP_CHECK_MEMEQ(r.nexthop, CT_PEER6, 16);
    /* Link-local destination: our link-local source. */
    HP_REQUIRE_EQ(hp__route6(e.s, ll_peer, &r), 0);
    HP_CHECK_MEMEQ(r.src, e.ifc->v6[0].addr, 16);
    HP_CHECK(hp_ipv6_is_link_local(r.src));
    /* Through a link-local gateway, from the global address. */
    HP_REQUIRE_EQ(hp_stack_set_gateway(e.s, 6, gw), 0);
    HP_REQUIRE_EQ(hp__route6(e.s, far, &r), 0);
    HP_CHECK_MEMEQ(r.nexthop, gw, 16);
    HP_CHECK_MEMEQ(r.src, CT_OUR6, 16);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
