/* SPDX-License-Identifier: BSD-3-Clause */
/* Reassembly of both families: order, duplicates, overlaps, the 65535 limit, the memory bound and timeouts. */
#include <stdlib.h>

#include "ip_test.h"

#define BIG 10000

/* Send an IPv4 fragment of message m from the peer. */
static void frag4d(struct ct_env *e, uint16_t id, uint32_t off, const uint8_t *data, uint32_t len,
                   bool mf)
{
    struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_ICMP,
                              .ttl = 64,
                              .ident = id,
                              .frag_off = (uint16_t)off,
                              .mf = mf};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, CT_OUR4, 4);
    it_send4(e, &ip, data, len);
}

/* The piece [off, off + len) of message m. */
static void frag4(struct ct_env *e, uint16_t id, const uint8_t *m, uint32_t off, uint32_t len,
                  bool mf)
{
    frag4d(e, id, off, m + off, len, mf);
}

/* Collect the stack's fragmented IPv4 answer into out; its length, or -1. */
static long collect4(struct ct_env *e, uint8_t *out, size_t cap, struct hp_ipv4_repr *first)
{
    static uint8_t pl[2000];
    long total = -1, have = 0;
    struct hp_ipv4_repr ip;
    long n;
    while ((n = it_recv4(e, &ip, pl, sizeof pl)) >= 0) {
        if (ip.frag_off + (size_t)n > cap)
            return -1;
        memcpy(out + ip.frag_off, pl, (size_t)n);
        have += n;
        if (ip.frag_off == 0)
            *first = ip;
        if (!ip.mf)
            total = ip.frag_off + n;
    }
    return have == total ? total : -1;
}

static void check_echo_reply(const uint8_t *r, long n, uint8_t type, uint16_t id, uint16_t seq,
                             size_t plen)
{
    HP_CHECK_EQ(n, (long)(8 + plen));
    HP_CHECK_EQ(r[0], type);
    HP_CHECK_EQ(hp_get_be16(r + 4), id);
    HP_CHECK_EQ(hp_get_be16(r + 6), seq);
    for (size_t i = 0; i < plen; i++)
        if (r[8 + i] != (uint8_t)i) {
            HP_CHECK_EQ(r[8 + i], (uint8_t)i);
            break;
        }
}

HP_TEST(reasm4_large_ping_out_of_order_with_duplicates)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    static uint8_t m[8 + BIG], r[8 + BIG];
    size_t n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 0x77, 3, BIG);
    /* 1480-byte pieces: offsets 0..5920 and a last one; sent backwards,
     * the middle one twice. */
    uint32_t per = 1480, nf = (uint32_t)((n + per - 1) / per);
    for (int i = (int)nf - 1; i >= 0; i--) {
        uint32_t off = (uint32_t)i * per, len = n - off < per ? (uint32_t)(n - off) : per;
        frag4(&e, 0x5151, m, off, len, off + len < n);
        if (i == 3)
            frag4(&e, 0x5151, m, off, len, true);
    }
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_REQDS), nf + 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_OKS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_ECHOS), 1);
    struct hp_ipv4_repr first;
    long k = collect4(&e, r, sizeof r, &first);
    check_echo_reply(r, k, HP_ICMP_ECHO_REPLY, 0x77, 3, BIG);
    HP_CHECK_EQ(hp_cksum(r, (size_t)k), 0);
    HP_CHECK_MEMEQ(first.src, CT_OUR4, 4);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_FRAG_CREATES), 7);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(reasm6_large_ping_out_of_order_with_duplicates)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    static uint8_t m[8 + BIG], r[8 + BIG], pl[2000];
    size_t n = it_echo6(m, sizeof m, CT_PEER6, CT_OUR6, HP_ICMP6_ECHO_REQUEST, 0x99, 4, BIG);
    uint32_t per = 1448, nf = (uint32_t)((n + per - 1) / per);
    for (uint32_t j = 0; j < nf; j++) {
        uint32_t i = (j * 3) % nf; /* a permutation: nf is not a multiple of 3 */
        uint32_t off = i * per, len = n - off < per ? (uint32_t)(n - off) : per;
        it_send6_frag(&e, CT_PEER6, CT_OUR6, 0xABCDEF, HP_IPPROTO_ICMPV6, (uint16_t)off,
                      off + len < n, m + off, len);
        if (j == 2)
            it_send6_frag(&e, CT_PEER6, CT_OUR6, 0xABCDEF, HP_IPPROTO_ICMPV6, (uint16_t)off,
                          off + len < n, m + off, len);
    }
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_REASM_OKS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_IN_ECHOS), 1);
    /* The reply comes in fragments; put it together by hand. */
    struct hp_ipv6_repr ip;
    long k, have = 0, total = -1;
    uint32_t id = 0;
    int frags = 0;
    while ((k = it_recv6(&e, &ip, pl, sizeof pl)) >= 0) {
        HP_REQUIRE(ip.has_frag);
        HP_CHECK_EQ(ip.frag_next, HP_IPPROTO_ICMPV6);
        if (frags++ == 0)
            id = ip.frag_id;
        HP_CHECK_EQ(ip.frag_id, id);
        HP_REQUIRE(ip.frag_off + (size_t)k <= sizeof r);
        memcpy(r + ip.frag_off, pl, (size_t)k);
        have += k;
        if (!ip.mf)
            total = ip.frag_off + k;
    }
    HP_CHECK_EQ(have, total);
    check_echo_reply(r, total, HP_ICMP6_ECHO_REPLY, 0x99, 4, BIG);
    HP_CHECK_EQ(hp_cksum_icmp6_verify(CT_OUR6, CT_PEER6, r, (size_t)total), HP_CKSUM_GOOD);
    HP_CHECK_EQ(frags, 7);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_FRAG_CREATES), 7);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(reasm_overlaps_drop_the_datagram)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    static uint8_t m[8 + 3000];
    size_t n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 1, 1, 3000);
    frag4(&e, 1, m, 0, 1480, true);
    frag4(&e, 1, m, 1472, 1480, true); /* overlaps the first by 8 */
    frag4(&e, 1, m, 2960, (uint32_t)(n - 2960), false);
    frag4(&e, 1, m, 1480, 1480, true); /* what would have completed it */
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_OVERLAPS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_OKS), 0);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_ECHOS), 0);
    HP_CHECK_EQ(ct_drain(&e), 0);
    /* The refused datagram holds no buffer. */
    HP_CHECK_EQ(hp_pool_in_use(e.pool), 0);
    /* IPv6 (RFC 5722). */
    static uint8_t m6[8 + 3000];
    n = it_echo6(m6, sizeof m6, CT_PEER6, CT_OUR6, HP_ICMP6_ECHO_REQUEST, 1, 1, 3000);
    it_send6_frag(&e, CT_PEER6, CT_OUR6, 5, 58, 0, true, m6, 1448);
    it_send6_frag(&e, CT_PEER6, CT_OUR6, 5, 58, 1448, false, m6 + 1448, n - 1448);
    it_send6_frag(&e, CT_PEER6, CT_OUR6, 5, 58, 1440, true, m6 + 1440, 8);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_REASM_OVERLAPS), 1);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_REASM_OKS), 0);
    HP_CHECK_EQ(ct_drain(&e), 0);
    /* After the timeout the identification can serve again, silently. */
    ct_advance_ms(&e, 61000);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_REASM_TIMEOUTS), 0);
    HP_CHECK_EQ(ct_drain(&e), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(reasm_past_65535_dropped)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, NULL) == 0);
    static uint8_t z[1480];
    /* Offset + length past 65535: the header check refuses it at once. */
    frag4d(&e, 9, 65000, z, 600, false);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_IN_HDR_ERRORS), 1);
    /* Within bounds for its own 20-byte header, but the first fragment has
     * 40 bytes of options: the datagram would be 65555 bytes. */
    frag4d(&e, 10, 65000, z, 515, false); /* 20 + 65515 = 65535 */
    struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_ICMP,
                              .ttl = 64,
                              .ident = 10,
                              .mf = true,
                              .payload_len = 64};
    memcpy(ip.src, CT_PEER4, 4);
    memcpy(ip.dst, CT_OUR4, 4);
    uint8_t f[104];
    hp_ipv4_emit(&ip, f, 20);
    memset(f + 20, 1, 20); /* 20 bytes of NOP options: IHL 10 */
    memset(f + 40, 0, 64);
    f[0] = 0x4A;
    hp_put_be16(f + 2, 104);
    memset(f + 10, 0, 2);
    uint16_t c = hp_cksum_ipv4_hdr(f, 40);
    memcpy(f + 10, &c, 2);
    it_send_raw(&e, HP_ETHERTYPE_IPV4, f, 104);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_OVERSIZE), 1);
    HP_CHECK_EQ(hp_pool_in_use(e.pool), 0);
    /* IPv6: offset 65528 with 16 bytes passes nothing. */
    it_send6_frag(&e, CT_PEER6, CT_OUR6, 77, 58, 65528, false, z, 16);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_IN_HDR_ERRORS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(reasm_memory_bound_holds_under_a_flood)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.reasm_max_bytes = 64 * 1024};
    HP_REQUIRE(it_open(&e, &cfg) == 0);
    static uint8_t z[1480];
    long peak = 0;
    for (int i = 0; i < 500; i++) {
        /* First fragments of datagrams that never complete. */
        frag4(&e, (uint16_t)(1000 + i), z, 0, 1480, true);
        if (i % 8 == 7) {
            ct_step(&e);
            long used = hp_pool_in_use(e.pool);
            if (used > peak)
                peak = used;
        }
    }
    ct_step(&e);
    /* 64 KiB of 2176-byte buffers: at most 30 held. */
    HP_CHECK_LE(peak, 30);
    HP_CHECK_GT(it_ctr(&e, HP_CTR_IP_REASM_MEM_DROPS), 400);
    /* A datagram still gets through. */
    static uint8_t m[8 + 2000];
    size_t n = it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 2, 2, 2000);
    frag4(&e, 7, m, 0, 1480, true);
    frag4(&e, 7, m, 1480, (uint32_t)(n - 1480), false);
    ct_step(&e);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_IN_ECHOS), 1);
    HP_CHECK_EQ(ct_drain(&e), 2);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* IPv6 fragments over the memory bound are counted as IPv6's
 * (IP6_REASM_MEM_DROPS), not in IPv4's counter. */
HP_TEST(reasm6_memory_drops_counted_as_ipv6)
{
    struct ct_env e;
    struct hp_stack_config cfg = {.reasm_max_bytes = 64 * 1024};
    HP_REQUIRE(it_open(&e, &cfg) == 0);
    static uint8_t z[1400];
    for (int i = 0; i < 200; i++) {
        it_send6_frag(&e, CT_PEER6, CT_OUR6, (uint32_t)(5000 + i), HP_IPPROTO_UDP, 0, true, z,
                      sizeof z);
        if (i % 8 == 7)
            ct_step(&e);
    }
    ct_step(&e);
    HP_CHECK_GT(it_ctr(&e, HP_CTR_IP6_REASM_MEM_DROPS), 150);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_MEM_DROPS), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Neighbours stay reachable across the long waits below (no probes in between). */
static struct hp_stack_config slow_neigh = {.neigh_reachable_ms = 600000};

HP_TEST(reasm4_timeout_sends_time_exceeded_after_first_fragment)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, &slow_neigh) == 0);
    static uint8_t m[8 + 3000];
    it_echo4(m, sizeof m, HP_ICMP_ECHO_REQUEST, 1, 1, 3000);
    frag4(&e, 21, m, 0, 1480, true);
    frag4(&e, 22, m, 1480, 1480, true); /* no first fragment: no ICMP */
    ct_step(&e);
    ct_advance_ms(&e, 29000);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_TIMEOUTS), 0);
    ct_advance_ms(&e, 1001);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP_REASM_TIMEOUTS), 2);
    struct hp_ipv4_repr ip;
    uint8_t r[600];
    long n = it_recv4(&e, &ip, r, sizeof r);
    HP_REQUIRE_EQ(n, 8 + 548);
    HP_CHECK_EQ(r[0], HP_ICMP_TIME_EXCEEDED);
    HP_CHECK_EQ(r[1], HP_ICMP_TIME_REASSEMBLY);
    HP_CHECK_EQ(hp_cksum(r, (size_t)n), 0);
    HP_CHECK_EQ(hp_get_be16(r + 8 + 4), 21); /* the quoted first fragment */
    HP_CHECK_MEMEQ(r + 8 + 20, m, 8);
    HP_CHECK_EQ(ct_drain(&e), 0);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP_OUT_TIME_EXCEEDS), 1);
    HP_CHECK_EQ(hp_pool_in_use(e.pool), 0);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(reasm6_timeout_is_60s_and_sends_time_exceeded)
{
    struct ct_env e;
    HP_REQUIRE(it_open(&e, &slow_neigh) == 0);
    static uint8_t m[8 + 3000];
    it_echo6(m, sizeof m, CT_PEER6, CT_OUR6, HP_ICMP6_ECHO_REQUEST, 1, 1, 3000);
    it_send6_frag(&e, CT_PEER6, CT_OUR6, 42, 58, 0, true, m, 1448);
    ct_step(&e);
    ct_advance_ms(&e, 30500);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_REASM_TIMEOUTS), 0);
    ct_advance_ms(&e, 30000);
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_IP6_REASM_TIMEOUTS), 1);
    struct hp_ipv6_repr ip;
    uint8_t r[1300];
    long n = it_recv6(&e, &ip, r, sizeof r);
    HP_REQUIRE_EQ(n, 8 + 1232); /* quoted up to the 1280-byte minimum MTU */
    HP_CHECK_EQ(r[0], HP_ICMP6_TIME_EXCEEDED);
    HP_CHECK_EQ(r[1], HP_ICMP6_TIME_REASSEMBLY);
    HP_CHECK_EQ(hp_cksum_icmp6_verify(ip.src, ip.dst, r, (size_t)n), HP_CKSUM_GOOD);
    HP_CHECK_EQ(r[8 + 6], HP_IPPROTO_FRAGMENT); /* the fragment as received */
    HP_CHECK_EQ(it_ctr(&e, HP_CTR_ICMP6_OUT_TIME_EXCEEDS), 1);
    ct_close(&e);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
