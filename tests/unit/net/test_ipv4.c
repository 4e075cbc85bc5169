/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4 input and output: header errors counted by reason, padding, addresses, unknown protocols, routes, fragmentation on output. */
#include <errno.h>

#include "ip_test.h"

static struct hp_ipv4_repr hdr4(const uint8_t src[4], const uint8_t dst[4], uint8_t proto)
{
    struct hp_ipv4_repr ip = {.proto = proto, .ttl = 64, .ident = 0x1234};
    memcpy(ip.src, src, 4);
    memcpy(ip.dst, dst, 4);
    return ip;
}

/* A valid echo request datagram (20 + 8 + 8 bytes) to tweak byte by byte. */
static size_t echo_dgram(uint8_t *out)
{
    struct hp_ipv4_repr ip = hdr4(CT_PEER4, CT_OUR4, HP_IPPROTO_ICMP);
    size_t n = it_echo4(out + 20, 200, HP_ICMP_ECHO_REQUEST, 7, 1, 8);
    ip.payload_len = (uint16_t)n;
    hp_ipv4_emit(&ip, out, 20);
    return 20 + n;
}

static void refresh_cksum(uint8_t *h)
{
    size_t hl = (size_t)(h[0] & 15) * 4;
    memset(h + 10, 0, 2);
    uint16_t c = hp_cksum_ipv4_hdr(h, hl);
    memcpy(h + 10, &c, 2);
}

HP_TEST(ipv4_header_errors_counted_by_reason)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t d[256];
    size_t n;

    /* Truncated: shorter than a header. */
    n = echo_dgram(d);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, 19);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_TRUNCATED), 1);

    /* Total Length past the frame. */
    n = echo_dgram(d);
    hp_put_be16(d + 2, (uint16_t)(n + 10));
    refresh_cksum(d);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_TRUNCATED), 2);

    /* Bad header checksum. */
    n = echo_dgram(d);
    d[10] ^= 0x55;
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_CSUM_ERRORS), 1);

    /* Bad version. */
    n = echo_dgram(d);
    d[0] = 0x65;
    refresh_cksum(d);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_HDR_ERRORS), 1);

    /* An option running past the header: IHL 6, option 0x44 length 10. */
    {
        uint8_t o[256];
        n = echo_dgram(d);
        memcpy(o, d, 20);
        o[0] = 0x46;
        o[20] = 0x44;
        o[21] = 10;
        o[22] = 5;
        o[23] = 0;
        memcpy(o + 24, d + 20, n - 20);
        hp_put_be16(o + 2, (uint16_t)(n + 4));
        refresh_cksum(o);
        it_send_raw(&e, HP_ETHERTYPE_IPV4, o, n + 4);
        ct_step(&e);
        HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_HDR_ERRORS), 2);
    }

    /* Multicast source (RFC 1122 3.2.1.3). */
    n = echo_dgram(d);
    d[12] = 224;
    refresh_cksum(d);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_HDR_ERRORS), 3);

    /* For another host: a host does not forward (RFC 1122 3.3.4.2). */
    n = echo_dgram(d);
    d[19] = 77;
    refresh_cksum(d);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_ADDR_ERRORS), 1);

    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_RECEIVES), 7);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_DELIVERS), 0);
    HP_CHECK_EQ(ct_drain(&e), 0); /* nothing answered */

    /* And the untouched datagram still works. */
    n = echo_dgram(d);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_DELIVERS), 1);
    HP_CHECK_EQ(ct_drain(&e), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_ethernet_padding_is_trimmed)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t d[64] = {0};
    size_t n = echo_dgram(d); /* 36 bytes: a real link pads it to 46 */
    memset(d + n, 0xEE, 46 - n);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, d, 46);
    ct_step(&e);
    struct hp_ipv4_repr ip;
    uint8_t pl[64];
    long r = it_recv4(&e, &ip, pl, sizeof pl);
    HP_CHECK_EQ(r, 16); /* the reply carries the 16-byte message, no padding */
    HP_CHECK_EQ(pl[0], HP_ICMP_ECHO_REPLY);
    HP_CHECK_EQ(hp_cksum(pl, 16), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_broadcast_accepted_other_hosts_not)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    static const uint8_t bcast[4] = {198, 18, 0, 255}, limited[4] = {255, 255, 255, 255};
    uint8_t udp[8] = {0, 9, 0, 9, 0, 8, 0, 0};
    struct hp_ipv4_repr ip = hdr4(CT_PEER4, bcast, HP_IPPROTO_UDP);
    it_send4(&e, &ip, udp, 8);
    ip = hdr4(CT_PEER4, limited, HP_IPPROTO_UDP);
    it_send4(&e, &ip, udp, 8);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_DELIVERS), 2);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_ADDR_ERRORS), 0);
    /* No port unreachable about a broadcast (RFC 1122 3.2.2). */
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_unknown_protocol_gets_protocol_unreachable)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t pl[40];
    for (int i = 0; i < 40; i++)
        pl[i] = (uint8_t)(0xA0 + i);
    struct hp_ipv4_repr ip = hdr4(CT_PEER4, CT_OUR4, 253);
    it_send4(&e, &ip, pl, sizeof pl);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_UNKNOWN_PROTOS), 1);
    struct hp_ipv4_repr rip;
    uint8_t r[600];
    long n = it_recv4(&e, &rip, r, sizeof r);
    HP_REQUIRE_EQ(n, 8 + 20 + 40);
    HP_CHECK_MEMEQ(rip.src, CT_OUR4, 4);
    HP_CHECK_MEMEQ(rip.dst, CT_PEER4, 4);
    HP_CHECK_EQ(rip.proto, HP_IPPROTO_ICMP);
    HP_CHECK_EQ(r[0], HP_ICMP_DEST_UNREACH);
    HP_CHECK_EQ(r[1], HP_ICMP_UNREACH_PROTO);
    HP_CHECK_EQ(hp_cksum(r, (size_t)n), 0);
    /* The quote: the original header, then its data. */
    HP_CHECK_EQ(r[8], 0x45);
    HP_CHECK_EQ(r[8 + 9], 253);
    HP_CHECK_MEMEQ(r + 8 + 12, CT_PEER4, 4);
    HP_CHECK_MEMEQ(r + 28, pl, 40);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_OUT_DEST_UNREACHS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_route_lookup)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    struct hp__route r;
    static const uint8_t far[4] = {203, 0, 113, 9}, gw[4] = {198, 18, 0, 254},
                         offgw[4] = {10, 0, 0, 1};
    HP_CHECK_EQ(hp__route4(e.s, far, &r), -ENETUNREACH);
    HP_REQUIRE_EQ(hp__route4(e.s, CT_PEER4, &r), 0);
    HP_CHECK(r.ifc == e.ifc);
    HP_CHECK_MEMEQ(r.src, CT_OUR4, 4);
    HP_CHECK_MEMEQ(r.nexthop, CT_PEER4, 4);
    /* A longer prefix wins. */
    static const uint8_t a2[4] = {198, 18, 0, 129}, in2[4] = {198, 18, 0, 200};
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, a2, 25), 0);
    HP_REQUIRE_EQ(hp__route4(e.s, in2, &r), 0);
    HP_CHECK_MEMEQ(r.src, a2, 4);
    HP_REQUIRE_EQ(hp__route4(e.s, CT_PEER4, &r), 0);
    HP_CHECK_MEMEQ(r.src, CT_OUR4, 4);
    /* A /32 covers itself alone, a /2 a quarter of the space (connected4
     * tests one word under each mask length). */
    static const uint8_t h32[4] = {198, 19, 7, 7}, n32[4] = {198, 19, 7, 6},
                         a2b[4] = {100, 64, 0, 1}, in2b[4] = {99, 9, 9, 9};
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, h32, 32), 0);
    HP_REQUIRE_EQ(hp__route4(e.s, h32, &r), 0);
    HP_CHECK_MEMEQ(r.src, h32, 4);
    HP_CHECK_EQ(hp__route4(e.s, n32, &r), -ENETUNREACH);
    HP_REQUIRE_EQ(hp_stack_add_addr(e.s, 0, 4, a2b, 2), 0); /* 64.0.0.0/2 */
    HP_REQUIRE_EQ(hp__route4(e.s, in2b, &r), 0);
    HP_CHECK_MEMEQ(r.src, a2b, 4);
    HP_CHECK_MEMEQ(r.nexthop, in2b, 4);
    HP_CHECK_EQ(hp__route4(e.s, n32, &r), -ENETUNREACH);
    /* Off link through the gateway, which must be on link. */
    HP_REQUIRE_EQ(hp_stack_set_gateway(e.s, 4, gw), 0);
    HP_REQUIRE_EQ(hp__route4(e.s, far, &r), 0);
    HP_CHECK_MEMEQ(r.nexthop, gw, 4);
    HP_CHECK_MEMEQ(r.src, a2, 4);
    if (hp_stack_set_gateway(e.s, 4, offgw) == 0)
        HP_CHECK_EQ(hp__route4(e.s, far, &r), -EHOSTUNREACH);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(ipv4_output_fragments_large_datagrams)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    HP_REQUIRE_EQ(hp_stack_ping(e.s, 4, CT_PEER4, 5, 6, 4000), 0);
    ct_step(&e);
    /* 4008 bytes of ICMP in 1480-byte pieces: 1480, 1480, 1048. */
    uint8_t all[4008], pl[1500];
    uint16_t ident = 0;
    uint32_t got = 0;
    for (int i = 0; i < 3; i++) {
        struct hp_ipv4_repr ip;
        long n = it_recv4(&e, &ip, pl, sizeof pl);
        HP_REQUIRE(n > 0);
        HP_CHECK_EQ(ip.frag_off, (uint16_t)(i * 1480));
        HP_CHECK_EQ(ip.frag_off % 8, 0);
        HP_CHECK_EQ(ip.mf, i < 2);
        HP_CHECK(!ip.df);
        HP_CHECK_EQ(n, i < 2 ? 1480 : 1048);
        if (i == 0)
            ident = ip.ident;
        HP_CHECK_EQ(ip.ident, ident);
        memcpy(all + ip.frag_off, pl, (size_t)n);
        got += (uint32_t)n;
    }
    HP_CHECK_EQ(got, 4008);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK_EQ(all[0], HP_ICMP_ECHO_REQUEST);
    HP_CHECK_EQ(hp_get_be16(all + 4), 5);
    HP_CHECK_EQ(hp_get_be16(all + 6), 6);
    HP_CHECK_EQ(hp_cksum(all, sizeof all), 0);
    for (int i = 0; i < 4000; i++)
        if (all[8 + i] != (uint8_t)i) {
            HP_CHECK_EQ(all[8 + i], (uint8_t)i);
            break;
        }
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_FRAG_OKS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_FRAG_CREATES), 3);
    HP_CHECK_EQ(hp_stack_ping(e.s, 4, CT_PEER4, 5, 6, 65508), -EMSGSIZE);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* One datagram through hp__ipv4_output to dst (its route), the frame
 * the stack sent: its destination MAC and IPv4 header. */
static bool out_one(struct ct_env *e, const uint8_t dst[4], uint8_t mac[6], struct hp_ipv4_repr *ip)
{
    struct hp__route r;
    if (hp__route4(e->s, dst, &r) != 0)
        return false;
    struct hp_buf *b = hp_buf_alloc(e->pool);
    if (!b)
        return false;
    memset(hp_buf_append(b, 8), 0x5A, 8);
    if (hp__ipv4_output(e->s, &r, dst, HP_IPPROTO_UDP, b) != 0)
        return false;
    ct_step(e);
    struct hp_buf *f;
    if (ct_recv(e, &f, 1) != 1)
        return false;
    struct hp_eth_repr eth;
    const uint8_t *p = ct_eth(f, &eth);
    bool ok = p && eth.ethertype == HP_ETHERTYPE_IPV4 &&
              hp_ipv4_parse(p, f->data_len - HP_ETH_HDR_LEN, ip, HP_WIRE_VERIFY_CKSUM) == 0;
    memcpy(mac, eth.dst, 6);
    hp_buf_free(f);
    return ok;
}

/* Output to a unicast neighbour with a usable entry takes the direct path
 * (both headers at once); broadcast and multicast next hops never do,
 * even when the neighbour table holds an entry for that address (a forged
 * ARP reply could have put one there): the frame goes to the broadcast or
 * the group's MAC, as hp__neigh_output4 decides. */
HP_TEST(ipv4_output_unicast_direct_broadcast_never)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t mac[6];
    struct hp_ipv4_repr ip;
    HP_REQUIRE(out_one(&e, CT_PEER4, mac, &ip));
    HP_CHECK_MEMEQ(mac, CT_PEER_MAC, 6);
    HP_CHECK_MEMEQ(ip.src, CT_OUR4, 4);
    HP_CHECK_MEMEQ(ip.dst, CT_PEER4, 4);
    HP_CHECK_EQ(ip.proto, HP_IPPROTO_UDP);
    HP_CHECK_EQ(ip.payload_len, 8);

    static const uint8_t dbc[4] = {198, 18, 0, 255}, lbc[4] = {255, 255, 255, 255},
                         grp[4] = {224, 0, 0, 251};
    static const uint8_t grp_mac[6] = {0x01, 0x00, 0x5E, 0x00, 0x00, 0xFB};
    hp__neigh_learn(e.ifc, 4, dbc, CT_PEER_MAC, HP__LEARN_CREATE);
    hp__neigh_learn(e.ifc, 4, dbc, CT_PEER_MAC, HP__LEARN_CONFIRM);
    HP_REQUIRE(out_one(&e, dbc, mac, &ip));
    HP_CHECK_MEMEQ(mac, CT_BCAST, 6);
    HP_CHECK_MEMEQ(ip.dst, dbc, 4);
    HP_REQUIRE(out_one(&e, lbc, mac, &ip));
    HP_CHECK_MEMEQ(mac, CT_BCAST, 6);
    HP_REQUIRE(out_one(&e, grp, mac, &ip));
    HP_CHECK_MEMEQ(mac, grp_mac, 6);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* hp__prefix_match against bit-by-bit comparison: random pairs of IPv6
 * addresses that first differ at every bit position, every prefix length
 * up to 128 (IPv4 uses the first 32), and equal addresses. */
static bool prefix_match_ref(const uint8_t *a, const uint8_t *b, unsigned plen)
{
    for (unsigned i = 0; i < plen; i++)
        if (((a[i / 8] ^ b[i / 8]) >> (7 - i % 8)) & 1)
            return false;
    return true;
}

HP_TEST(prefix_match_every_length)
{
    uint64_t seed = hp_test_seed();
    uint8_t a[16], b[16];
    for (unsigned diff = 0; diff <= 128; diff++) { /* 128: equal */
        for (int r = 0; r < 8; r++) {
            for (int i = 0; i < 16; i++)
                a[i] = (uint8_t)hp_test_rand(&seed);
            memcpy(b, a, 16);
            if (diff < 128) {
                b[diff / 8] ^= (uint8_t)(0x80u >> (diff % 8));
                for (unsigned i = diff + 1; i < 128; i++) /* anything after the first difference */
                    if (hp_test_rand(&seed) & 1)
                        b[i / 8] ^= (uint8_t)(0x80u >> (i % 8));
            }
            for (unsigned plen = 0; plen <= 128; plen++) {
                bool want = prefix_match_ref(a, b, plen);
                HP_CHECK_EQ(want, plen <= diff);
                if (hp__prefix_match(a, b, plen) != want)
                    hp_test_fail(__FILE__, __LINE__, "first difference at bit %u, /%u: got %d",
                                 diff, plen, !want);
            }
        }
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
