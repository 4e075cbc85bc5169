/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv4 and ICMPv6: echo byte for byte, bad checksums, error rules and rate limiting, and hp_stack_ping between two stacks. */
#include <errno.h>

#include "ip_test.h"

HP_TEST(icmp4_echo_reply_byte_for_byte)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t m[200], r[300];
    size_t n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 0xBEEF, 0x0102, 100);
    struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_ICMP, .ttl = 64, .ident = 9};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, CT_OUR4, 4);
    it_send4(&e, &ip, m, n);
    ct_step(&e);
    struct hp_ipv4_repr rip;
    long k = it_recv4(&e, &rip, r, sizeof r);
    HP_REQUIRE_EQ(k, (long)n);
    HP_CHECK_MEMEQ(rip.src, CT_OUR4, 4);
    HP_CHECK_MEMEQ(rip.dst, CT_PEER4, 4);
    HP_CHECK_EQ(rip.proto, HP_IPPROTO_ICMP);
    HP_CHECK_EQ(rip.ttl, 64);
    HP_CHECK_EQ(r[0], HP_ICMP_ECHO_REPLY);
    HP_CHECK_EQ(r[1], 0);
    HP_CHECK_EQ(hp_get_be16(r + 4), 0xBEEF);
    HP_CHECK_EQ(hp_get_be16(r + 6), 0x0102);
    HP_CHECK_MEMEQ(r + 8, m + 8, 100);
    HP_CHECK_EQ(hp_cksum(r, n), 0);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_ECHOS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_OUT_ECHO_REPS), 1);
    /* The all-zero case of RFC 1624: identifier, sequence and data zero. */
    n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 0, 0, 0);
    it_send4(&e, &ip, m, n);
    ct_step(&e);
    k = it_recv4(&e, &rip, r, sizeof r);
    HP_REQUIRE_EQ(k, 8);
    HP_CHECK_EQ(hp_get_be16(r + 2), 0xFFFF);
    HP_CHECK_EQ(hp_cksum(r, 8), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp4_bad_checksum_and_unknown_types_dropped)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t m[64];
    size_t n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 1, 2, 20);
    m[9] ^= 1;
    struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_ICMP, .ttl = 64};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, CT_OUR4, 4);
    it_send4(&e, &ip, m, n);
    /* Type 42 with a right checksum: unsupported, silently dropped. */
    uint8_t u[8] = {42, 0, 0, 0, 0, 0, 0, 0};
    uint16_t c = hp_cksum(u, 8);
    memcpy(u + 2, &c, 2);
    it_send4(&e, &ip, u, 8);
    /* An echo reply: counted. */
    n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REPLY, 1, 2, 20);
    it_send4(&e, &ip, m, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_CSUM_ERRORS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_UNSUPPORTED), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_ECHO_REPS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_MSGS), 3);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp4_errors_rate_limited)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.icmp_burst = 10, .icmp_rate = 1};
    HP_REQUIRE(it_open(&e, &cfg) == 0);
    struct hp_ipv4_repr ip = {.proto = 253, .ttl = 64};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, CT_OUR4, 4);
    uint8_t pl[16] = {0};
    int sent = 0;
    for (int i = 0; i < 200; i++) {
        it_send4(&e, &ip, pl, sizeof pl);
        if (i % 16 == 15)
            ct_step(&e);
        sent += ct_drain(&e);
    }
    ct_step(&e);
    sent += ct_drain(&e);
    HP_CHECK_EQ(sent, 10);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_OUT_RATE_LIMITED), 190);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_UNKNOWN_PROTOS), 200);
    /* A second later, one more token. */
    e.s->now += 1000000000ull;
    it_send4(&e, &ip, pl, sizeof pl);
    it_send4(&e, &ip, pl, sizeof pl);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp4_no_error_about_errors_or_broadcasts)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    /* A datagram of an unknown protocol to the subnet broadcast. */
    static const uint8_t bcast[4] = {198, 18, 0, 255};
    struct hp_ipv4_repr ip = {.proto = 253, .ttl = 64};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, bcast, 4);
    uint8_t pl[8] = {0};
    it_send4(&e, &ip, pl, 8);
    /* A UDP datagram to a closed port inside an ICMP error we received is
     * not answered either: the error is about... an ICMP error to us. */
    uint8_t m[8 + 28];
    struct hp_ipv4_repr q = {.proto = HP_IPPROTO_UDP, .ttl = 1, .payload_len = 8};
    memcpy(q.src, CT_OUR4, 4);
    memcpy(q.dst, CT_PEER4, 4);
    uint8_t quote[28] = {0};
    hp_ipv4_emit(&q, quote, 20);
    struct hp_icmp_repr er = {.type = HP_ICMP_DEST_UNREACH,
                              .code = 3,
                              .data = quote,
                              .data_len = 28};
    size_t n = (size_t)hp_icmp_emit(&er, m, sizeof m);
    ip.proto = HP_IPPROTO_ICMP;
    memcpy(ip.dst, CT_OUR4, 4);
    it_send4(&e, &ip, m, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_DEST_UNREACHS), 1);
    HP_CHECK_EQ(ct_drain(&e), 0);
    /* hp__icmp4_error itself refuses to speak about an ICMP error. */
    struct hp_buf *b = hp_buf_alloc(e.pool);
    uint8_t *p = hp_buf_append(b, 20 + n);
    ip.payload_len = (uint16_t)n;
    hp_ipv4_emit(&ip, p, 20);
    memcpy(p + 20, m, n);
    hp_buf_adj(b, 20);
    b->l3_len = 20;
    hp__icmp4_error(e.ifc, b, HP_ICMP_DEST_UNREACH, HP_ICMP_UNREACH_PROTO, 0);
    hp_buf_free(b);
    ct_step(&e);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_OUT_MSGS), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp6_echo_reply_byte_for_byte)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t m[300], r[300];
    size_t n = it_echo6(m, sizeof m, CT_PEER6, CT_OUR6, HP_ICMP6_ECHO_REQUEST, 0x4242, 77, 200);
    struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6};
    memcpy(ip.src, CT_PEER6, 16);
    memcpy(ip.dst, CT_OUR6, 16);
    it_send6(&e, &ip, m, n);
    ct_step(&e);
    struct hp_ipv6_repr rip;
    long k = it_recv6(&e, &rip, r, sizeof r);
    HP_REQUIRE_EQ(k, (long)n);
    HP_CHECK_MEMEQ(rip.src, CT_OUR6, 16);
    HP_CHECK_MEMEQ(rip.dst, CT_PEER6, 16);
    HP_CHECK_EQ(rip.next_header, HP_IPPROTO_ICMPV6);
    HP_CHECK_EQ(rip.hop_limit, 64);
    HP_CHECK_EQ(r[0], HP_ICMP6_ECHO_REPLY);
    HP_CHECK_EQ(hp_get_be16(r + 4), 0x4242);
    HP_CHECK_EQ(hp_get_be16(r + 6), 77);
    HP_CHECK_MEMEQ(r + 8, m + 8, 200);
    HP_CHECK_EQ(hp_cksum_icmp6_verify(rip.src, rip.dst, r, n), HP_CKSUM_GOOD);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_IN_ECHOS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_OUT_ECHO_REPS), 1);
    /* A bad checksum: counted, no answer. */
    m[20] ^= 0x10;
    it_send6(&e, &ip, m, n);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_IN_CSUM_ERRORS), 1);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp6_errors_rate_limited)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.icmp_burst = 7, .icmp_rate = 1};
    HP_REQUIRE(it_open(&e, &cfg) == 0);
    struct hp_ipv6_repr ip = {.next_header = 253};
    memcpy(ip.src, CT_PEER6, 16);
    memcpy(ip.dst, CT_OUR6, 16);
    uint8_t pl[16] = {0};
    int sent = 0;
    for (int i = 0; i < 200; i++) {
        it_send6(&e, &ip, pl, sizeof pl);
        if (i % 16 == 15)
            ct_step(&e);
        sent += ct_drain(&e);
    }
    ct_step(&e);
    sent += ct_drain(&e);
    HP_CHECK_EQ(sent, 7);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_OUT_RATE_LIMITED), 193);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_UNKNOWN_PROTOS), 200);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- two stacks ---------------------------------------------------------------------- */

struct pair {
    struct hp_link *end[2];
    struct hp_stack *s[2];
};

static const uint8_t A4[4] = {198, 18, 1, 1}, B4[4] = {198, 18, 1, 2};
static const uint8_t A6[16] = {0x20, 0x01, 0x00, 0x02, 0, 1, [15] = 1};
static const uint8_t B6[16] = {0x20, 0x01, 0x00, 0x02, 0, 1, [15] = 2};

static int pair_open(struct pair *p)
{
    memset(p, 0, sizeof *p);
    if (hp_link_mem_pair(NULL, p->end) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config cfg = {.flags = HP_STACK_F_NO_DAD, .name = i ? "b" : "a"};
        if (!(p->s[i] = hp_stack_create(&cfg)) || hp_stack_add_iface(p->s[i], p->end[i]) != 0)
            return -1;
        if (hp_stack_add_addr(p->s[i], 0, 4, i ? B4 : A4, 24) != 0 ||
            hp_stack_add_addr(p->s[i], 0, 6, i ? B6 : A6, 64) != 0)
            return -1;
    }
    return 0;
}

static void pair_run(struct pair *p)
{
    for (int round = 0; round < 50; round++) {
        int w = hp_stack_poll(p->s[0]) + hp_stack_poll(p->s[1]);
        if (w == 0 && round > 5)
            break;
    }
}

static void pair_close(struct pair *p)
{
    hp_stack_destroy(p->s[0]);
    hp_stack_destroy(p->s[1]);
    struct hp_buf *b[64];
    for (int i = 0; i < 2; i++) {
        int n;
        while ((n = hp_link_rx_burst(p->end[i], b, 64)) > 0)
            hp_buf_free_bulk(b, (unsigned)n);
    }
    hp_link_close(p->end[0]);
    hp_link_close(p->end[1]);
}

HP_TEST(ping_between_two_stacks_both_families_both_ways)
{
    struct pair p;
    HP_REQUIRE(pair_open(&p) == 0);
    pair_run(&p);
    for (int from = 0; from < 2; from++) {
        struct hp_stack *s = p.s[from], *peer = p.s[1 - from];
        const uint8_t *d4 = from ? A4 : B4, *d6 = from ? A6 : B6;
        size_t sizes[] = {0, 56, 1472, 10000};
        for (int k = 0; k < 4; k++) {
            uint64_t r4 = hp_stack_counter(s, HP_CTR_ICMP_IN_ECHO_REPS);
            uint64_t r6 = hp_stack_counter(s, HP_CTR_ICMP6_IN_ECHO_REPS);
            HP_CHECK_EQ(hp_stack_ping(s, 4, d4, 1, (uint16_t)k, sizes[k]), 0);
            pair_run(&p);
            HP_CHECK_EQ(hp_stack_ping(s, 6, d6, 1, (uint16_t)k, sizes[k]), 0);
            pair_run(&p);
            HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ICMP_IN_ECHO_REPS), r4 + 1);
            HP_CHECK_EQ(hp_stack_counter(s, HP_CTR_ICMP6_IN_ECHO_REPS), r6 + 1);
        }
        HP_CHECK_EQ(hp_stack_counter(peer, HP_CTR_ICMP_IN_ECHOS), 4);
        HP_CHECK_EQ(hp_stack_counter(peer, HP_CTR_ICMP6_IN_ECHOS), 4);
    }
    /* Each stack reassembled one 10000-byte request and one reply over
     * IPv4; over IPv6 the 1472-byte ones too (1480 + 40 > 1500). */
    for (int i = 0; i < 2; i++) {
        HP_CHECK_EQ(hp_stack_counter(p.s[i], HP_CTR_IP_REASM_OKS), 2);
        HP_CHECK_EQ(hp_stack_counter(p.s[i], HP_CTR_IP6_REASM_OKS), 4);
        HP_CHECK_EQ(hp_stack_counter(p.s[i], HP_CTR_IP_FRAG_OKS), 2);
        HP_CHECK_EQ(hp_stack_counter(p.s[i], HP_CTR_IP6_FRAG_OKS), 4);
    }
    static const uint8_t nowhere[4] = {203, 0, 113, 1};
    HP_CHECK_EQ(hp_stack_ping(p.s[0], 4, nowhere, 1, 1, 8), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_stack_ping(p.s[0], 5, nowhere, 1, 1, 8), -EINVAL);
    HP_CHECK_EQ(hp_stack_ping(p.s[0], 6, B6, 1, 1, 65528), -EMSGSIZE);
    pair_close(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 792 and RFC 4443 4.2: an echo reply's code is 0. A request with a
 * nonzero code (nmap's OS detection sends code 9) is answered with code 0
 * and a checksum that still verifies. */
HP_TEST(icmp_echo_reply_code_zero)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    uint8_t m[64], r[64];
    size_t n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 7, 8, 16);
    HP_REQUIRE(n > 0);
    m[1] = 9;
    memset(m + 2, 0, 2);
    uint16_t c = hp_cksum(m, n);
    memcpy(m + 2, &c, 2);
    struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_ICMP, .ttl = 64};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, CT_OUR4, 4);
    it_send4(&e, &ip, m, n);
    ct_step(&e);
    struct hp_ipv4_repr rip;
    HP_REQUIRE_EQ(it_recv4(&e, &rip, r, sizeof r), (long)n);
    HP_CHECK_EQ(r[0], HP_ICMP_ECHO_REPLY);
    HP_CHECK_EQ(r[1], 0);
    HP_CHECK_EQ(hp_cksum(r, n), 0);

    n = it_echo6(m, sizeof m, CT_PEER6, CT_OUR6, HP_ICMP6_ECHO_REQUEST, 7, 8, 16);
    HP_REQUIRE(n > 0);
    m[1] = 200;
    memset(m + 2, 0, 2);
    c = hp_cksum_icmp6(CT_PEER6, CT_OUR6, m, n);
    memcpy(m + 2, &c, 2);
    HP_REQUIRE_EQ(hp_cksum_icmp6_verify(CT_PEER6, CT_OUR6, m, n), HP_CKSUM_GOOD);
    struct hp_ipv6_repr ip6 = {.next_header = HP_IPPROTO_ICMPV6};
    memcpy(ip6.src, CT_PEER6, 16);
    memcpy(ip6.dst, CT_OUR6, 16);
    it_send6(&e, &ip6, m, n);
    ct_step(&e);
    struct hp_ipv6_repr rip6;
    HP_REQUIRE_EQ(it_recv6(&e, &rip6, r, sizeof r), (long)n);
    HP_CHECK_EQ(r[0], HP_ICMP6_ECHO_REPLY);
    HP_CHECK_EQ(r[1], 0);
    HP_CHECK_EQ(hp_cksum_icmp6_verify(rip6.src, rip6.dst, r, n), HP_CKSUM_GOOD);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
