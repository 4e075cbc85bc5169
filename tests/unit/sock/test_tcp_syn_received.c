/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP in SYN-RECEIVED (RFC 9293 3.10.7.4): the final ACK, SYN-ACK retransmission, RSTs (RFC 5961), bad ACKs, data and FIN on the final ACK. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080

static struct hp_tcp_sock *listen_and_syn(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * =");
    return l;
}

/* RFC 6298 5.5: the SYN-ACK is retransmitted with back-off; after
 * syn_retries the embryonic connection is dropped without a word, and a
 * late ACK then finds no connection (RST, RFC 9293 3.10.7.2). */
PD_TEST(tcp_syn_received_synack_backoff_then_dropped)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    static const uint64_t at[] = {1000, 3000, 7000, 15000, 31000, 63000, 123000};
    for (int k = 0; k < 7; k++) {
        pd_advance_ms(h, at[k] - pd_now_ms(h) - 1);
        pd_expect_none(h);
        pd_advance_ms(h, 1);
        pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 100");
        HP_CHECK_EQ(h->last.at_ms, at[k]);
    }
    pd_advance_ms(h, 200000);
    pd_expect_none(h);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    HP_CHECK_EQ(pd_events(h, h), 0);
    pd_in(h, ".", 1, 1, 1000, "");
    pd_expect(h, "R", 1, PD_ANY, PD_ANY, NULL);
    /* The listener is intact. */
    pd_use(h, 40001, 7)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    hp_tcp_close(l);
}

/* A retransmitted SYN gets an answer that acknowledges it (the SYN-ACK
 * again, or <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK> of RFC 9293 3.10.7.4);
 * no second connection; the final ACK then completes the handshake. */
PD_TEST(tcp_syn_received_duplicate_syn)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    pd_advance_ms(h, 200);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    const struct pd_seg *g = pd_expect(h, ".?S?", PD_ANY, 1, PD_ANY, NULL);
    HP_CHECK(g->flags & HP_TCP_F_ACK);
    HP_CHECK_EQ(g->rseq, (g->flags & HP_TCP_F_SYN) ? 0u : 1u);
    pd_expect_none(h);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PASSIVE_OPENS), 1);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* RFC 9293 3.10.7.4 with RFC 5961 3.2: a RST at exactly RCV.NXT returns a
 * passively opened connection to LISTEN (nothing sent, nobody told); one
 * in the window but not exact gets a challenge ACK; one outside the
 * window is dropped. */
PD_TEST(tcp_syn_received_rst)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    pd_in(h, "R", 1 + 1000, 0, 0, NULL);
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 1);
    pd_in(h, "R", 1 + 0x40000000u, 0, 0, NULL);
    pd_expect_none(h);
    pd_in(h, "R", 1, 0, 0, NULL);
    pd_expect_none(h);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    HP_CHECK_EQ(pd_events(h, h), 0);
    /* Gone: the final ACK now finds nothing. */
    pd_in(h, ".", 1, 1, 1000, "");
    pd_expect(h, "R", 1, PD_ANY, PD_ANY, NULL);
    /* The same peer can start over. */
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* RFC 9293 3.10.7.4 fifth: an ACK outside SND.UNA < SEG.ACK =< SND.NXT in
 * SYN-RECEIVED gets <SEQ=SEG.ACK><CTL=RST>; the connection stays. */
PD_TEST(tcp_syn_received_bad_ack_gets_rst)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    pd_in(h, ".", 1, 5, 1000, NULL);
    pd_expect(h, "R", 5, PD_ANY, PD_ANY, NULL);
    pd_in(h, ".", 1, 0, 1000, NULL);
    pd_expect(h, "R", 0, PD_ANY, PD_ANY, NULL);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_expect_none(h);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* A segment without ACK in SYN-RECEIVED is dropped (RFC 9293 3.10.7.4
 * fifth: "if the ACK bit is off, drop the segment"). */
PD_TEST(tcp_syn_received_no_ack_dropped)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    pd_in_data(h, "P", 1, 0, 1000, 10, NULL);
    pd_expect_none(h);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_recv(t, (char[4]){0}, 4), -EAGAIN);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* Data on the final ACK is delivered with the connection. */
PD_TEST(tcp_syn_received_data_on_final_ack)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    pd_in_data(h, "P.", 1, 1, 1000, 500, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK(hp_tcp_poll(t) & HP_EV_IN);
    HP_CHECK_EQ(pd_read(h, t, 1000), 500);
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, 501, PD_ANY, "ts * =");
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.bytes_received, 500);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* A FIN on the final ACK: ESTABLISHED then CLOSE-WAIT at once, the FIN
 * acknowledged; the application reads the end of the stream. */
PD_TEST(tcp_syn_received_fin_on_final_ack)
{
    struct hp_tcp_sock *l = listen_and_syn(h);
    pd_in(h, "F.", 1, 1, 1000, NULL);
    pd_expect(h, ".", 1, 2, PD_ANY, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSE_WAIT);
    char buf[8];
    HP_CHECK_EQ(hp_tcp_recv(t, buf, sizeof buf), 0);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect(h, "F.", 1, 2, PD_ANY, NULL);
    pd_in(h, ".", 2, 2, 1000, NULL);
    pd_expect_none(h);
    hp_tcp_close(l);
}

/* An actively opened connection in SYN-RECEIVED (simultaneous open) that
 * gets a RST was refused (RFC 9293 3.10.7.4 second). */
PD_TEST(tcp_syn_received_active_rst_refused)
{
    pd_use(h, PORT, 1000000);
    struct hp_tcp_sock *t = pd_connect(h, NULL);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,ts 200 *,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_RECEIVED);
    pd_in(h, "R", 1, 0, 0, "");
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK(pd_events(h, h->c) & HP_EV_ERR);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNREFUSED);
    hp_tcp_close(t);
}

/* The SYN-ACK's TSecr is the SYN's TSval; later segments echo the latest
 * in-order TSval (RFC 7323 4.3). */
PD_TEST(tcp_syn_received_timestamp_echo)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,ts 5000 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,ws 3,ts * 5000");
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, 1, 1000, "ts 5010 *");
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    pd_advance_ms(h, 10);
    pd_in_data(h, "P.", 1, 1, 1000, 10, "ts 5020 *");
    pd_advance_ms(h, 40);
    /* (The first ACK may come at once: it opens the scaled window.) */
    uint32_t ts0 = h->last.opt.ts_val;
    pd_expect(h, ".", 1, 11, PD_ANY, "ts * 5020");
    HP_CHECK_EQ(h->last.opt.ts_val - ts0, h->last.at_ms);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}
