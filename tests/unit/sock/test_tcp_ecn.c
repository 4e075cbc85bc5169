/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP ECN (RFC 3168 6.1): negotiation both ways and its refusals, ECT(0) on new data only, CE echoed until CWR, one reduction per window. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT      8080
#define PEER_PORT 8080

/* A passive connection from an ECN-setup SYN (ECE and CWR). */
static struct hp_tcp_sock *ecn_passive(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "SEW", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "SE.", 0, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    if (!t)
        pd_fail(h, "hp_tcp_accept: errno %d", errno);
    HP_CHECK(pd_info(h, t).ecn_ok);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    return t;
}

/* RFC 3168 6.1.1, 6.1.4: negotiated by default when the peer asks; new
 * data goes ECT(0), pure ACKs and retransmissions not ECT. */
PD_TEST(tcp_ecn_passive_negotiation_and_ect)
{
    struct hp_tcp_sock *t = ecn_passive(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ECN_NEGOTIATED), 1);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    HP_CHECK_EQ(h->last.ecn, 2);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 101, 11, PD_ANY, NULL);
    HP_CHECK_EQ(h->last.ecn, 0);
    /* The data is lost: its retransmission is not ECT (6.1.5). */
    pd_advance_ms(h, 1000);
    pd_expect_data(h, ".", 1, 11, PD_ANY, 100, NULL);
    HP_CHECK_EQ(h->last.ecn, 0);
}

/* A SYN with ECE alone, or CWR alone, is no ECN-setup SYN; with the knob
 * off even a proper one is refused. The SYN-ACK then has neither flag and
 * data is not ECT. */
PD_TEST(tcp_ecn_refused_syns)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 8);
    static const char *const flags[] = {"SE", "SW"};
    for (int k = 0; k < 2; k++) {
        pd_use(h, (uint16_t)(41000 + k), 5)->lport = PORT;
        pd_in(h, flags[k], 0, 0, 65535, PD_SYN_OPTS);
        pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
        pd_in(h, ".", 1, 1, 1000, NULL);
        struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
        HP_REQUIRE(t != NULL);
        HP_CHECK(!pd_info(h, t).ecn_ok);
        HP_CHECK_EQ(pd_send(h, t, 10), 10);
        pd_expect_data(h, ".", 1, 1, PD_ANY, 10, NULL);
        HP_CHECK_EQ(h->last.ecn, 0);
    }
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ECN_NEGOTIATED), 0);
}

PD_TEST(tcp_ecn_knob_off)
{
    struct hp_tcp_config cfg = {.ecn = HP_TCP_ECN_OFF};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "SEW", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK(!pd_info(h, t).ecn_ok);
}

/* Active side, HP_TCP_ECN_ON: the SYN asks; a SYN-ACK with ECE alone
 * agrees; one with both flags does not (6.1.1). By default the SYN does
 * not ask, and an unsolicited ECE on the SYN-ACK sets nothing up. */
PD_TEST(tcp_ecn_active)
{
    struct hp_tcp_config cfg = {.ecn = HP_TCP_ECN_ON};
    pd_configure(h, &cfg);
    pd_use(h, PEER_PORT, 1000);
    struct hp_tcp_sock *t = pd_connect(h, NULL);
    pd_expect(h, "SEW", 0, PD_ANY, PD_ANY, NULL);
    pd_in(h, "SE.", 0, 1, 65535, "mss 1460,sackok,ts * *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK(pd_info(h, t).ecn_ok);
    pd_use(h, PEER_PORT + 1, 1000);
    struct hp_tcp_sock *t2 = pd_connect(h, NULL);
    pd_expect(h, "SEW", 0, PD_ANY, PD_ANY, NULL);
    pd_in(h, "SEW.", 0, 1, 65535, "mss 1460,sackok,ts * *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK(!pd_info(h, t2).ecn_ok);
}

PD_TEST(tcp_ecn_unsolicited_synack)
{
    pd_use(h, PEER_PORT, 1000);
    struct hp_tcp_sock *t = pd_connect(h, NULL);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    pd_in(h, "SE.", 0, 1, 65535, "mss 1460,sackok,ts * *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK(!pd_info(h, t).ecn_ok);
    /* ECE on the ACKs of a connection without ECN changes nothing. */
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    HP_CHECK_EQ(h->last.ecn, 0);
    pd_in(h, "E.", 1, 101, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).ssthresh, UINT32_MAX);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ECN_REDUCTIONS), 0);
}

/* 6.1.3: a CE-marked segment is acknowledged at once with ECE, and every
 * ACK after it carries ECE until the peer's CWR arrives. */
PD_TEST(tcp_ecn_ce_echoed_until_cwr)
{
    struct hp_tcp_sock *t = ecn_passive(h);
    pd_in_mut(h, "P.", 1, 1, 1000, 100, NULL, PD_MUT_CE);
    pd_expect(h, "E.", 1, 101, PD_ANY, NULL);
    HP_CHECK_EQ(pd_info(h, t).ecn_ce_in, 1);
    pd_in_data(h, "P.", 101, 1, 1000, 100, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, "E.", 1, 201, PD_ANY, NULL);
    pd_in_data(h, "PW.", 201, 1, 1000, 100, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, 301, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 300);
}

/* 6.1.2: an ECE reduces the window once per window of data (CUBIC: to 0.7
 * cwnd), and the next new data segment carries CWR. A second ECE for the
 * same window changes nothing. */
PD_TEST(tcp_ecn_ece_reduces_once_per_window)
{
    struct hp_tcp_sock *t = ecn_passive(h);
    uint32_t f = pd_full(h);
    uint32_t cwnd0 = pd_info(h, t).cwnd;
    /* Six segments of the ten the initial window allows: more than half,
     * so the ACK may grow cwnd (tcp_cc.h hp__tcp_cc_used). */
    HP_CHECK_EQ(pd_send(h, t, 6 * f), 6 * f);
    for (uint32_t k = 0; k < 6; k++)
        pd_expect_data(h, ".", 1 + k * f, 1, PD_ANY, f, NULL);
    pd_advance_ms(h, 5);
    pd_in(h, "E.", 1, 1 + f, 1000, NULL);
    struct hp_tcp_info i = pd_info(h, t);
    /* The ACK's slow start growth first, then the reduction. */
    HP_CHECK_EQ(i.ssthresh, (cwnd0 + f) * 7 / 10);
    HP_CHECK_EQ(i.cwnd, i.ssthresh);
    HP_CHECK_EQ(i.ecn_reductions, 1);
    pd_in(h, "E.", 1, 1 + 2 * f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).ecn_reductions, 1);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    const struct pd_seg *g = pd_expect_data(h, "W.", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(g->ecn, 2);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ECN_CWR_OUT), 1);
    pd_discard(h);
}
