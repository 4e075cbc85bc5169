/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP path MTU: DF on every IPv4 segment, ICMP fragmentation needed (RFC 1191) and Packet Too Big (RFC 8201) checked against the connection (RFC 5927), black holes and probing (RFC 4821). */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080
#define S    101

static struct hp_tcp_sock *prime(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    if (h->family == 4)
        HP_CHECK(h->last.df);
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).pmtu, 1500);
    return t;
}

/* A valid "too big" quoting data in flight: the MSS follows the new MTU
 * (1280 - 40 / - 60 bytes of headers, less the timestamps), the segments
 * in flight go again smaller, no congestion response. */
PD_TEST(tcp_pmtu_too_big_valid)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 3 * f), 3 * f);
    for (int k = 0; k < 3; k++)
        pd_expect_data(h, ".", S + (uint32_t)k * f, 1, PD_ANY, f, NULL);
    uint32_t cwnd = pd_info(h, t).cwnd;
    pd_icmp_too_big(h, 1280, S, f);
    struct hp_tcp_info i = pd_info(h, t);
    uint32_t mss = 1280 - (h->family == 4 ? 40 : 60) - 12;
    HP_CHECK_EQ(i.pmtu, 1280);
    HP_CHECK_EQ(i.snd_mss, mss);
    HP_CHECK_EQ(i.cwnd, cwnd);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PMTU_UPDATES), 1);
    uint32_t end = S, n = 0;
    while (pd_peek(h)) {
        pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
        HP_CHECK_LE(h->last.len, mss);
        if (h->last.rseq + h->last.len > end)
            end = h->last.rseq + h->last.len;
        n++;
    }
    HP_CHECK_EQ(end, S + 3 * f);
    HP_CHECK_GE(n, 4);
    pd_in(h, ".", 1, S + 3 * f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
    /* New data is sized for the new MTU. */
    HP_CHECK_EQ(pd_send(h, t, 2000), 2000);
    pd_expect_data(h, ".", S + 3 * f, 1, PD_ANY, mss, NULL);
    pd_discard(h);
}

/* RFC 5927 4.1: a quote whose sequence number is not in flight (a blind
 * attacker's guess, or an old segment) changes nothing; an MTU below the
 * floor (IPv4 552, IPv6 1280) is raised to it; one not smaller than ours
 * teaches nothing. */
PD_TEST(tcp_pmtu_too_big_forged)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(pd_send(h, t, 500), 500);
    pd_expect_data(h, ".", S, 1, PD_ANY, 500, NULL);
    pd_icmp_too_big(h, 1280, S + 100000, 500); /* beyond snd_max */
    pd_icmp_too_big(h, 1280, S - 50, 500);     /* below snd_una: acknowledged */
    pd_icmp_too_big(h, 1280, S + 500, 500);    /* = snd_max: not sent yet */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PMTU_ICMP_BAD), 3);
    HP_CHECK_EQ(pd_info(h, t).pmtu, 1500);
    pd_icmp_too_big(h, 9000, S, 500);
    HP_CHECK_EQ(pd_info(h, t).pmtu, 1500);
    pd_icmp_too_big(h, 100, S, 500);
    HP_CHECK_EQ(pd_info(h, t).pmtu, h->family == 4 ? 552 : 1280);
    pd_discard(h);
    /* Another connection's port: nobody's. */
    h->c->rport++;
    pd_icmp_too_big(h, 1000, S, 500);
    h->c->rport--;
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PMTU_ICMP_BAD), 4);
}

/* The no_pmtud knob: IPv4 without DF; ICMP ignored. */
PD_TEST_F(tcp_pmtu_knob_off, PD_V4)
{
    struct hp_tcp_config cfg = {.no_pmtud = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    HP_CHECK(!h->last.df);
    pd_icmp_too_big(h, 1280, 1, 100);
    HP_CHECK_EQ(pd_info(h, t).pmtu, 1500);
}

/* RFC 4821: full-sized segments time out twice with no ICMP (a black
 * hole): the MTU falls to the base (IPv4 1024, IPv6 1280), the data goes
 * in smaller segments, and once ACKs flow a probe of the range's middle
 * goes; its ACK raises the MTU. No SACK needed for the fallback; the probe
 * needs the transmit log (SACK). */
PD_TEST(tcp_pmtu_black_hole_then_probe)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 2 * f), 2 * f);
    pd_expect_data(h, ".", S, 1, PD_ANY, f, NULL);
    pd_expect_data(h, ".", S + f, 1, PD_ANY, f, NULL);
    /* Every full-sized segment vanishes: the probe timeout (10 ms, as the
     * flight is two segments) and two RTOs. */
    pd_advance_ms(h, 2000);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PMTU_BLACKHOLES), 1);
    uint32_t base = h->family == 4 ? 1024 : 1280;
    HP_CHECK_EQ(i.pmtu, base);
    uint32_t mss = base - (h->family == 4 ? 40 : 60) - 12;
    HP_CHECK_EQ(i.snd_mss, mss);
    /* The last segments sent are the small ones. */
    uint32_t small = 0;
    const struct pd_seg *g;
    while ((g = pd_peek(h)) != NULL) {
        pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
        small = h->last.len <= mss ? small + 1 : 0;
    }
    HP_CHECK_GE(small, 1);
    /* The peer got the first small piece only; it acknowledges it. */
    pd_in(h, ".", 1, S + mss, 1000, NULL);
    pd_discard(h);
    pd_in(h, ".", 1, S + 2 * f, 1000, NULL);
    pd_discard(h);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
    /* Enough new data for a probe: once ACKs flow and the windows allow,
     * it goes as one larger segment. */
    HP_CHECK_EQ(pd_send(h, t, 20 * f), 20 * f);
    uint32_t probe = 0, seq = 0, top = S + 2 * f;
    for (int round = 0; round < 10 && !probe; round++) {
        while ((g = pd_peek(h)) != NULL) {
            pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
            if (h->last.len > mss) {
                probe = h->last.len;
                seq = h->last.rseq;
            } else if (h->last.rseq + h->last.len > top) {
                top = h->last.rseq + h->last.len;
            }
        }
        if (!probe) {
            pd_advance_ms(h, 5);
            pd_in(h, ".", 1, top, 1000, NULL);
        }
    }
    if (h->family == 4) {
        /* 1024..1500: the middle, 1262 bytes of MTU. */
        HP_CHECK_EQ(probe, 1262 - 40 - 12);
        HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PMTU_PROBES), 1);
        pd_discard(h);
        pd_in(h, ".", 1, seq + probe, 1000, NULL);
        HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PMTU_PROBE_OK), 1);
        HP_CHECK_EQ(pd_info(h, t).pmtu, 1262);
    }
    pd_discard(h);
}
