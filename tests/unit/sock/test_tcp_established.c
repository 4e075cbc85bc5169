/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP in ESTABLISHED, receiving (RFC 9293 3.10.7.4): delayed ACKs, out-of-order data, windows, PAWS (RFC 7323), RFC 5961 defences. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080
/* After prime(): the peer's next byte. */
#define B 101

/*
 * An established connection past its first data: the peer sent 100 bytes
 * and got them acknowledged. (The first ACK after the handshake may come
 * at once, since it is the first to carry the scaled window; delayed ACK
 * rules are tested after it.)
 */
static struct hp_tcp_sock *prime(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    pd_in_data(h, "P.", 1, 1, 1000, 100, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B, PD_ANY, "ts * =");
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    pd_expect_none(h);
    return t;
}

/* RFC 9293 3.8.6.3 / RFC 5681 4.2: a small in-order segment is ACKed
 * after delack_ms (40), measured from the first unacknowledged segment. */
PD_TEST(tcp_est_delayed_ack_40ms)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, "P.", B, 1, 1000, 1000, NULL);
    uint32_t ts_first = h->c->last_peer_tsval;
    HP_CHECK(hp_tcp_poll(t) & HP_EV_IN);
    pd_advance_ms(h, 20);
    pd_in_data(h, "P.", B + 1000, 1, 1000, 10, NULL);
    pd_advance_ms(h, 19);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    /* RFC 7323 4.3: TS.Recent moved only with the segment at
     * Last.ACK.sent: a delayed ACK echoes the earliest one it covers. */
    char o[32];
    snprintf(o, sizeof o, "ts * %u", ts_first);
    pd_expect(h, ".", 1, B + 1010, PD_ANY, o);
    HP_CHECK_EQ(h->last.at_ms, 80);
    HP_CHECK_EQ(pd_read(h, t, 5000), 1010);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_DELAYED_ACKS), 1);
    pd_advance_ms(h, 1000);
    pd_expect_none(h);
}

/* RFC 5681 4.2 / RFC 9293 3.8.6.3: an ACK at least every second
 * full-sized segment. */
PD_TEST(tcp_est_ack_every_second_full_segment)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    pd_in_data(h, ".", B, 1, 1000, f, NULL);
    pd_expect_none(h);
    pd_in_data(h, ".", B + f, 1, 1000, f, NULL);
    pd_expect(h, ".", 1, B + 2 * f, PD_ANY, NULL);
    pd_in_data(h, ".", B + 2 * f, 1, 1000, f, NULL);
    pd_expect_none(h);
    pd_in_data(h, ".", B + 3 * f, 1, 1000, f, NULL);
    pd_expect(h, ".", 1, B + 4 * f, PD_ANY, NULL);
    pd_in_data(h, ".", B + 4 * f, 1, 1000, f, NULL);
    pd_advance_ms(h, 39);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    pd_expect(h, ".", 1, B + 5 * f, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 5 * f);
}

/* Six full-sized segments from B, handed over in one receive burst.
 * @return their size. */
static uint32_t burst_of_six(struct pd *h)
{
    uint32_t f = pd_full(h);
    h->hold = true;
    for (uint32_t i = 0; i < 6; i++)
        pd_in_data(h, ".", B + i * f, 1, 1000, f, NULL);
    h->hold = false;
    pd_pump(h);
    return f;
}

/* Full-sized segments that arrive in one receive burst get one ACK, at the
 * burst's end, for all of them (as Linux's GRO aggregates do); the data
 * segments the peer sends in one go mostly arrive so. */
PD_TEST(tcp_est_burst_acked_once)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = burst_of_six(h);
    pd_expect(h, ".", 1, B + 6 * f, PD_ANY, NULL);
    pd_expect_none(h);
    /* One by one, every second one is ACKed again. */
    pd_in_data(h, ".", B + 6 * f, 1, 1000, f, NULL);
    pd_expect_none(h);
    pd_in_data(h, ".", B + 7 * f, 1, 1000, f, NULL);
    pd_expect(h, ".", 1, B + 8 * f, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 8 * f);
}

/* ... but not beyond a quarter of the receive window: with a window of
 * eight segments, every second segment of the burst is ACKed at once, so
 * that a sender the window holds back hears of it in time. */
PD_TEST(tcp_est_burst_small_window_acks_every_second)
{
    struct hp_tcp_config cfg = {.rcvbuf = 8 * (h->mss - 12u)};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = burst_of_six(h);
    for (uint32_t k = 1; k <= 3; k++)
        pd_expect(h, ".", 1, B + 2 * k * f, PD_ANY, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_read(h, t, 100000), 6 * f);
}

/* delack_segs and QUICKACK. */
PD_TEST(tcp_est_quickack_and_delack_knobs)
{
    struct hp_tcp_config cfg = {.delack_ms = 100, .delack_segs = 3};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = prime(h); /* (its ACK came within 100 ms) */
    uint32_t f = pd_full(h);
    pd_in_data(h, ".", B, 1, 1000, f, NULL);
    pd_in_data(h, ".", B + f, 1, 1000, f, NULL);
    pd_expect_none(h);
    pd_in_data(h, ".", B + 2 * f, 1, 1000, f, NULL);
    pd_expect(h, ".", 1, B + 3 * f, PD_ANY, NULL);
    pd_in_data(h, ".", B + 3 * f, 1, 1000, 10, NULL);
    pd_advance_ms(h, 99);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    pd_expect(h, ".", 1, B + 3 * f + 10, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_QUICKACK, 1), 0);
    long v = 0;
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_QUICKACK, &v), 0);
    HP_CHECK_EQ(v, 1);
    pd_in_data(h, "P.", B + 3 * f + 10, 1, 1000, 10, NULL);
    pd_expect(h, ".", 1, B + 3 * f + 20, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 3 * f + 20);
}

/* RFC 5681 4.2 / RFC 9293 3.8.6.3: out-of-order data gets an immediate
 * duplicate ACK; the segment that fills the hole an immediate ACK of
 * everything. RFC 7323 4.3: the duplicate ACKs echo the last in-order
 * TSval, the hole-filling ACK the filler's. RFC 2018 4: the duplicate ACKs
 * carry SACK blocks, the latest arrival's first; an ACK with no data
 * beyond it carries none. */
PD_TEST(tcp_est_out_of_order_then_fill)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t last = h->c->last_peer_tsval;
    pd_advance_ms(h, 10);
    pd_in_data(h, ".", B + 1000, 1, 1000, 1000, NULL);
    char o[64];
    snprintf(o, sizeof o, "ts * %u,sack %u:%u", last, B + 1000, B + 2000);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    pd_advance_ms(h, 10);
    pd_in_data(h, ".", B + 3000, 1, 1000, 500, NULL);
    snprintf(o, sizeof o, "ts * %u,sack %u:%u %u:%u", last, B + 3000, B + 3500, B + 1000, B + 2000);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    HP_CHECK_EQ(hp_tcp_recv(t, (char[8]){0}, 8), -EAGAIN);
    HP_CHECK_EQ(pd_info(h, t).ooo_segs, 2);
    pd_advance_ms(h, 10);
    pd_in_data(h, ".", B, 1, 1000, 1000, NULL);
    snprintf(o, sizeof o, "ts * =,sack %u:%u", B + 3000, B + 3500);
    pd_expect(h, ".", 1, B + 2000, PD_ANY, o);
    pd_in_data(h, ".", B + 2000, 1, 1000, 1000, NULL);
    pd_expect(h, ".", 1, B + 3500, PD_ANY, "ts * =");
    HP_CHECK_EQ(pd_read(h, t, 100000), 3500);
    HP_CHECK_EQ(pd_info(h, t).ooo_segs, 0);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_OFO_QUEUED), 2);
}

/* Overlapping and duplicated out-of-order pieces are delivered once. */
PD_TEST(tcp_est_out_of_order_overlaps)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, ".", B + 500, 1, 1000, 500, NULL);
    pd_in_data(h, ".", B + 700, 1, 1000, 600, NULL);
    pd_in_data(h, ".", B + 500, 1, 1000, 500, NULL);
    pd_in_data(h, ".", B + 1200, 1, 1000, 100, NULL);
    pd_in_data(h, ".", B + 100, 1, 1000, 300, NULL);
    for (int k = 0; k < 5; k++)
        pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_in_data(h, ".", B, 1, 1000, 150, NULL);
    pd_expect(h, ".", 1, B + 400, PD_ANY, NULL);
    pd_in_data(h, ".", B + 350, 1, 1000, 200, NULL);
    pd_expect(h, ".", 1, B + 1300, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 1300);
}

/* RFC 7323 2.3: the peer's window field is scaled by its shift (7 here);
 * ours by 3; we send no more than the peer's window. */
PD_TEST(tcp_est_window_scaling)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    /* (The SYN's window is the largest the peer offers, so that sender SWS
     * avoidance, RFC 9293 3.8.6.2.1, lets 1024 bytes go at once.) */
    pd_in(h, "S", 0, 0, 1024, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 1, 8, NULL); /* 8 << 7 = 1024 bytes */
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(pd_info(h, t).snd_wnd, 1024);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 5000), 5000);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 1024, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, 1025, 8, NULL);
    pd_expect_data(h, ".", 1025, 1, PD_ANY, 1024, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, 2049, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_info(h, t).snd_wnd, 0);
    /* Our window: scaled by 3. Data in, unread: the window shows it. */
    pd_in_data(h, "P.", 1, 2049, 0, 1000, NULL);
    pd_advance_ms(h, 40);
    const struct pd_seg *g = pd_expect(h, ".", 2049, 1001, PD_ANY, NULL);
    uint32_t w = (uint32_t)g->win << 3;
    HP_CHECK_LE(w, 262144u - 1000u + 7u);
    HP_CHECK_GT(w, 65535u); /* the scale is applied (rcvbuf 262144) */
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.rcv_wnd, w);
    HP_CHECK_EQ(i.rcvq, 1000);
}

/* Without window scaling (the SYN offered none) a 256 KiB buffer is
 * announced as 65535 at most (RFC 7323 2.2), and the edge moves only by
 * an MSS or more (receiver SWS avoidance, RFC 9293 3.8.6.2.2): the clamp
 * that tcp_output.c's rcv_window takes out of line. */
PD_TEST(tcp_est_window_unscaled_clamped)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    const struct pd_seg *g = pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    HP_CHECK_EQ(g->win, 65535);
    pd_in(h, ".", 1, 1, 65535, "");
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    pd_in_data(h, "P.", 1, 1, 65535, 1000, "");
    pd_advance_ms(h, 40);
    g = pd_expect(h, ".", 1, 1001, PD_ANY, "");
    HP_CHECK_EQ(g->win, 65535 - 1000); /* 1000 bytes less than an MSS: the edge stays */
    HP_CHECK_EQ(pd_read(h, t, 5000), 1000);
    pd_expect_none(h);
    pd_in_data(h, "P.", 1001, 1, 65535, 1000, "");
    pd_advance_ms(h, 40);
    g = pd_expect(h, ".", 1, 2001, PD_ANY, "");
    HP_CHECK_EQ(g->win, 65535); /* 2000 bytes of room back: moved, and clamped */
    HP_CHECK_EQ(pd_info(h, t).rcv_wnd, 65535);
    HP_CHECK_EQ(pd_read(h, t, 5000), 1000);
}

/* RFC 7323 5.3: a segment whose TSval is older than TS.Recent is dropped
 * with an ACK (PAWS); a RST is exempt. */
PD_TEST(tcp_est_paws)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, "P.", B, 1, 1000, 100, "ts 5000 *");
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B + 100, PD_ANY, "ts * 5000");
    pd_in_data(h, "P.", B + 100, 1, 1000, 100, "ts 4999 *");
    pd_expect(h, ".", 1, B + 100, PD_ANY, "ts * 5000");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PAWS_DROPS), 1);
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    /* Equal is fine. */
    pd_in_data(h, "P.", B + 100, 1, 1000, 100, "ts 5000 *");
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B + 200, PD_ANY, "ts * 5000");
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    pd_in(h, "R", B + 200, 0, 0, "ts 1 *");
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNRESET);
}

/* RFC 9293 3.10.7.4: data outside the window (beyond it, or an old
 * duplicate) is not acceptable: an ACK, and the segment is dropped. */
PD_TEST(tcp_est_out_of_window_data)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, ".", B + 300000, 1, 1000, 100, NULL);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_in_data(h, ".", 1, 1, 1000, 100, NULL); /* all old */
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_in_data(h, ".", 51, 1, 1000, 100, NULL); /* half old, half new */
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B + 50, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 50);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_IN_OUT_OF_WINDOW), 1);
}

/* A bare ACK numbered at the right edge of our window (the peer filled
 * the window and that data was lost): its acknowledgment counts, as in
 * Linux, though RFC 9293 3.10.7.4 would refuse it; data there is still
 * out of the window. */
PD_TEST(tcp_est_ack_at_window_edge)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    uint32_t wnd = pd_info(h, t).rcv_wnd;
    HP_REQUIRE(wnd > 0);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, "P.", 1, B, PD_ANY, 100, NULL);
    pd_in(h, ".", B + wnd, 101, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_OUT_OF_WINDOW), 0);
    /* One past the edge: refused with an ACK. */
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, "P.", 101, B, PD_ANY, 100, NULL);
    pd_in(h, ".", B + wnd + 1, 201, 1000, NULL);
    pd_expect(h, ".", 201, B, PD_ANY, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 100);
    /* Data at the edge is out of the window, and its ACK is refused with
     * it: only bare ACKs get the allowance. */
    pd_in_data(h, ".", B + wnd, 201, 1000, 10, NULL);
    pd_expect(h, ".", 201, B, PD_ANY, NULL);
    pd_in(h, ".", B, 201, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* RFC 5961 3.2: a RST in the window but not at RCV.NXT gets a challenge
 * ACK (one per connection per challenge_ack_conn_ms, 500); outside the
 * window it is dropped; at RCV.NXT it resets. */
PD_TEST(tcp_est_rst_rfc5961)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in(h, "R", B + 100, 0, 0, NULL);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 1);
    pd_advance_ms(h, 499);
    pd_in(h, "R.", B + 1, 1, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACK_CONN_LIMITED), 1);
    pd_advance_ms(h, 1);
    pd_in(h, "R.", B + 1, 1, 0, NULL);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_in(h, "R", B + 1000000, 0, 0, NULL);
    pd_in(h, "R", B - 1, 0, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(pd_events(h, h->c) & (HP_EV_ERR | HP_EV_HUP), 0);
    pd_in(h, "R", B, 0, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    uint32_t ev = pd_events(h, h->c);
    HP_CHECK(ev & HP_EV_ERR);
    HP_CHECK(ev & HP_EV_HUP);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNRESET);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ESTAB_RESETS), 1);
    /* The peer's next segment finds no connection. */
    pd_in_data(h, "P.", B, 1, 1000, 10, NULL);
    pd_expect(h, "R", 1, PD_ANY, PD_ANY, NULL);
    hp_tcp_close(t);
}

/* RFC 5961 4.2 / RFC 9293 3.10.7.4 fourth: a SYN on an established
 * connection gets a challenge ACK, whatever its sequence number. */
PD_TEST(tcp_est_syn_challenge_ack)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_mut(h, "S", B + 10, 0, 65535, 0, "mss 1460,ts * 0,nop,ws 7", PD_MUT_NO_REBASE);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_advance_ms(h, 500); /* one challenge ACK per connection per 500 ms */
    pd_in_mut(h, "S", 5, 0, 65535, 0, "mss 1460,ts * *", PD_MUT_NO_REBASE);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_advance_ms(h, 500);
    pd_in_mut(h, "S.", B, 1, 65535, 0, "mss 1460,ts * *", PD_MUT_NO_REBASE);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 1);
    pd_in_data(h, "P.", B, 1, 1000, 10, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100), 10);
}

/* RFC 9293 3.10.7.4 fifth / RFC 5961 5.2: an ACK of data not yet sent is
 * answered with an ACK and the segment dropped; so is an ACK older than
 * SND.UNA - MAX.SND.WND. A duplicate ACK within that range is fine. */
PD_TEST(tcp_est_bad_acks)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, "P.", B, 1000, 1000, 100, NULL);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    pd_advance_ms(h, 500); /* one challenge ACK per connection per 500 ms */
    pd_in_data(h, "P.", B, (uint32_t)(1 - 200000), 1000, 100, NULL);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_recv(t, (char[8]){0}, 8), -EAGAIN);
    pd_in_data(h, "P.", B, (uint32_t)(1 - 1000), 1000, 100, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
}

/* RFC 5961 7 and CVE-2016-5696: a burst of in-window RSTs on one
 * connection gets it one challenge ACK per challenge_ack_conn_ms; the
 * rest are counted and spend nothing of the stack-wide budget, so
 * another connection's challenge ACK still goes out. */
PD_TEST(tcp_est_challenge_ack_per_connection)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_use(h, 40001, 1000)->lport = PORT;
    struct hp_tcp_sock *a = pd_established(h, l);
    pd_use(h, 40002, 5000)->lport = PORT;
    struct hp_tcp_sock *b = pd_established(h, l);
    pd_use(h, 40001, 1000);
    for (int k = 0; k < 1500; k++)
        pd_in(h, "R", 1 + 100 + (uint32_t)(k % 1000), 0, 0, NULL);
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACK_CONN_LIMITED), 1499);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACK_LIMITED), 0);
    pd_use(h, 40002, 5000);
    pd_in(h, "R", 1 + 100, 0, 0, NULL);
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 2);
    HP_CHECK_EQ(hp_tcp_state(a), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(hp_tcp_state(b), HP_TCP_ESTABLISHED);
    hp_tcp_abort(a);
    hp_tcp_abort(b);
    pd_discard(h);
    hp_tcp_close(l);
}

/* RFC 5961 7: the stack-wide budget still bounds many connections (or one
 * with no per-connection gap); each second's budget is drawn at random
 * from [limit/2, 3*limit/2), so what is left of it says nothing exact,
 * and the excess is counted. */
PD_TEST(tcp_est_challenge_ack_budget_random)
{
    struct hp_tcp_config cfg = {.challenge_ack_limit = 10, .challenge_ack_conn_ms = 1};
    pd_configure(h, &cfg);
    prime(h);
    /* Whole seconds of the virtual clock from here. */
    pd_advance_ms(h, 1000 - pd_now_ms(h) % 1000);
    unsigned counts[12], lo = 1000, hi = 0, distinct = 0;
    for (int sec = 0; sec < 12; sec++) {
        uint64_t before = pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS);
        for (int ms = 0; ms < 1000; ms += 20) {
            pd_in(h, "R", B + 100 + (uint32_t)ms, 0, 0, NULL);
            pd_advance_ms(h, 20);
        }
        counts[sec] = (unsigned)(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS) - before);
        pd_discard(h);
        lo = counts[sec] < lo ? counts[sec] : lo;
        hi = counts[sec] > hi ? counts[sec] : hi;
        bool seen = false;
        for (int j = 0; j < sec; j++)
            seen = seen || counts[j] == counts[sec];
        distinct += !seen;
    }
    HP_CHECK_GE(lo, 5);
    HP_CHECK_LE(hi, 14);
    /* 12 draws from 10 values: all equal with probability 10^-11. */
    HP_CHECK_GE(distinct, 2);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACK_LIMITED),
                12 * 50 - pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS));
    pd_in(h, "R", B, 0, 0, NULL);
}

/* The receive window fills, is zero, reopens when the application reads
 * (RFC 9293 3.8.6.2.2: update once it grew by min(RCV.BUFF/2, MSS)). */
PD_TEST(tcp_est_receive_window_fills_and_reopens)
{
    struct hp_tcp_config cfg = {.rcvbuf = 16384};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    uint32_t f = pd_full(h), sent = 0;
    while (sent < 16384) {
        uint32_t n = 16384 - sent < f ? 16384 - sent : f;
        pd_in_data(h, ".", 1 + sent, 1, 1000, n, NULL);
        sent += n;
    }
    pd_advance_ms(h, 40);
    const struct pd_seg *g;
    while ((g = pd_peek(h)) && g->rack != 1 + 16384)
        pd_expect(h, ".", 1, PD_ANY, PD_ANY, NULL);
    g = pd_expect(h, ".", 1, 1 + 16384, 0, NULL);
    pd_expect_none(h);
    /* More data: not acceptable with a zero window; an ACK. */
    pd_in_data(h, ".", 1 + 16384, 1, 1000, 100, NULL);
    pd_expect(h, ".", 1, 1 + 16384, 0, NULL);
    /* A zero window probe: the same. */
    pd_in_data(h, ".", 1 + 16384, 1, 1000, 1, NULL);
    pd_expect(h, ".", 1, 1 + 16384, 0, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 1000);
    pd_expect_none(h); /* 1000 free bytes: below min(RCV.BUFF / 2, MSS), no update */
    HP_CHECK_EQ(pd_read(h, t, 8000), 8000);
    g = pd_expect(h, ".", 1, 1 + 16384, PD_ANY, NULL);
    HP_CHECK_GE(g->win, f);
    HP_CHECK_LE(g->win, 9000);
    HP_CHECK_EQ(pd_read(h, t, 100000), 16384 - 9000);
    pd_in_data(h, ".", 1 + 16384, 1, 1000, 100, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
}

/* Sequence numbers wrap (RFC 9293 3.4): the peer's ISN just below 2^32. */
PD_TEST(tcp_est_sequence_wraparound)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_use(h, 40000, 0xFFFFFA00u);
    struct hp_tcp_sock *t = pd_established(h, l);
    for (uint32_t k = 0; k < 10; k++)
        pd_in_data(h, ".", 1 + k * 1000, 1, 1000, 1000, NULL);
    pd_advance_ms(h, 40);
    const struct pd_seg *g;
    while ((g = pd_peek(h)) && g->rack != 10001)
        pd_expect(h, ".", 1, PD_ANY, PD_ANY, NULL);
    pd_expect(h, ".", 1, 10001, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 10000);
    pd_discard(h); /* (a window update may follow the read) */
    /* Out of order across the wrap too. */
    pd_in_data(h, ".", 10001 + 1000, 1, 1000, 1000, NULL);
    pd_expect(h, ".", 1, 10001, PD_ANY, NULL);
    pd_in_data(h, ".", 10001, 1, 1000, 1000, NULL);
    pd_expect(h, ".", 1, 12001, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 2000);
}

/* recv_buf hands out the received buffers themselves. */
PD_TEST(tcp_est_recv_buf)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, "P.", B, 1, 1000, 700, NULL);
    pd_in_data(h, "P.", B + 700, 1, 1000, 300, NULL);
    uint32_t got = 0;
    while (got < 1000) {
        struct hp_buf *b = NULL;
        long n = hp_tcp_recv_buf(t, &b);
        HP_REQUIRE(n > 0 && b != NULL);
        HP_CHECK_EQ((long)b->pkt_len, n);
        uint8_t tmp[2048];
        HP_REQUIRE(n <= (long)sizeof tmp);
        hp_buf_copy_out(b, 0, (uint32_t)n, tmp);
        for (long i = 0; i < n; i++)
            if (tmp[i] != pd_pattern(1, 100 + got + (uint64_t)i))
                HP_REQUIRE(!"recv_buf byte differs");
        hp_buf_free(b);
        got += (uint32_t)n;
    }
    HP_CHECK_EQ(got, 1000);
    struct hp_buf *b = NULL;
    HP_CHECK_EQ(hp_tcp_recv_buf(t, &b), -EAGAIN);
}

/* RFC 9293 3.8.6.2.1: a window below Fr * the largest the peer offered
 * holds data back (sender SWS avoidance) only until the override timeout
 * (0.1 to 1 s); then it is used. */
PD_TEST(tcp_est_sender_sws_override)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 1, 8, NULL); /* 1024 bytes, well below 65535 / 2 */
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 5000), 5000);
    pd_advance_ms(h, 1000);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 1024, NULL);
    HP_CHECK_GE(h->last.at_ms, 100);
}

/* RFC 9293 3.8.6.3: an ACK owed rides on the data the application sends
 * before the delayed ACK timer; no separate ACK follows. */
PD_TEST(tcp_est_ack_piggybacked_on_reply)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, "P.", B, 1, 1000, 50, NULL);
    pd_advance_ms(h, 10);
    HP_CHECK_EQ(pd_read(h, t, 100), 50);
    HP_CHECK_EQ(pd_send(h, t, 20), 20);
    pd_expect_data(h, ".", 1, B + 50, PD_ANY, 20, NULL);
    pd_advance_ms(h, 100);
    pd_expect_none(h);
}

/* The peer's FIN again (our ACK was lost) in CLOSE_WAIT: ACKed again;
 * data beyond the FIN is ignored. */
PD_TEST(tcp_est_duplicate_fin)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in(h, "F.", B, 1, 1000, NULL);
    pd_expect(h, ".", 1, B + 1, PD_ANY, NULL);
    pd_in(h, "F.", B, 1, 1000, NULL);
    pd_expect(h, ".", 1, B + 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSE_WAIT);
    pd_in_data(h, "P.", B + 1, 1, 1000, 10, NULL);
    pd_discard(h);
    HP_CHECK_EQ(hp_tcp_recv(t, (char[16]){0}, 16), 0);
}

/* The out-of-order queue is bounded (ooo_max_segs): what does not fit is
 * dropped and counted, what was kept is delivered once the hole fills. */
PD_TEST(tcp_est_ooo_queue_bounded)
{
    struct hp_tcp_config cfg = {.ooo_max_segs = 4};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = prime(h);
    for (uint32_t k = 1; k <= 8; k++) {
        pd_in_data(h, ".", B + k * 200, 1, 1000, 100, NULL); /* each leaves a gap */
        pd_expect(h, ".", 1, B, PD_ANY, NULL);
    }
    HP_CHECK_LE(pd_info(h, t).ooo_segs, 4);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_OFO_DROPS), 4);
    /* Fill everything in order: all 8 * 200 + 100 bytes arrive intact. */
    for (uint32_t k = 0; k <= 8; k++)
        pd_in_data(h, ".", B + k * 200, 1, 1000, k == 8 ? 100 : 200, NULL);
    pd_advance_ms(h, 40);
    const struct pd_seg *g;
    while ((g = pd_peek(h)) && g->rack != B + 1700)
        pd_expect(h, ".", 1, PD_ANY, PD_ANY, NULL);
    pd_expect(h, ".", 1, B + 1700, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 10000), 1700);
}

/* A stream of tiny segments does not pin one pool buffer per byte. */
PD_TEST(tcp_est_tiny_segments_coalesce)
{
    struct hp_tcp_sock *t = prime(h);
    long before = hp_pool_in_use(h->pool);
    for (uint32_t k = 0; k < 3000; k++)
        pd_in_data(h, "P.", B + k, 1, 1000, 1, NULL);
    pd_discard(h);
    HP_CHECK_EQ(pd_info(h, t).rcvq, 3000);
    HP_CHECK_LT(hp_pool_in_use(h->pool) - before, 300);
    HP_CHECK_EQ(pd_read(h, t, 5000), 3000);
}

/* After a reset, send reports ECONNRESET once, then EPIPE. */
PD_TEST(tcp_est_send_after_reset)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in(h, "R", B, 0, 0, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_send(t, "x", 1), -ECONNRESET);
    HP_CHECK_EQ(hp_tcp_send(t, "x", 1), -EPIPE);
    pd_expect_none(h);
}

/* RFC 7323 5.5: TS.Recent older than 24 days is no longer trusted: after
 * 25 idle days a segment with a smaller TSval is accepted. */
PD_TEST(tcp_est_paws_idle_24_days)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_data(h, "P.", B, 1, 1000, 10, "ts 1073741924 *"); /* 100 + 2^30 */
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B + 10, PD_ANY, "ts * 1073741924");
    pd_advance_ms(h, 25ull * 24 * 3600 * 1000);
    pd_discard(h);
    pd_in_data(h, "P.", B + 10, 1, 1000, 10, "ts 5 *"); /* "older" modulo 2^32 */
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B + 20, PD_ANY, "ts * 5");
    HP_CHECK_EQ(pd_read(h, t, 100), 20);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PAWS_DROPS), 0);
}

/* RFC 5961 4 (half-open recovery): the peer restarted and sends a SYN; our
 * challenge ACK makes it answer with a RST at exactly RCV.NXT, which
 * resets the old connection; its next SYN then opens a new one. */
PD_TEST(tcp_est_half_open_recovery)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in_mut(h, "S", 5000, 0, 65535, 0, "mss 1460,sackok,ts * 0,nop,ws 7", PD_MUT_NO_REBASE);
    const struct pd_seg *g = pd_expect(h, ".", 1, B, PD_ANY, NULL);
    /* The restarted peer's RST in reply to that ACK: <SEQ=SEG.ACK>. */
    pd_in(h, "R", g->rack, 0, 0, "");
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNRESET);
    pd_in(h, "S", 5000, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
}

/* RFC 7323 Appendix F: with a window scale, rounding the window field up
 * each time the buffer is full would push the right edge past the buffer,
 * one unit per ACK, and the peer's data there would be dropped. The field
 * rounds down instead (a retraction of less than one unit), and what we
 * advertised before is still accepted. */
PD_TEST(tcp_est_window_scale_rounding_full_buffer)
{
    struct hp_tcp_config cfg = {.rcvbuf = 262144};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    /* Fill to 5 bytes short of rcvbuf; the windows on the way are floors
     * of the free space in units of 8 (our scale is 3), so the last edge
     * we offered lies between the buffer's end - 7 and its end. */
    uint32_t f = pd_full(h), sent = 0, total = 262144 - 5;
    while (sent < total) {
        uint32_t n = total - sent < f ? total - sent : f;
        pd_in_data(h, ".", 1 + sent, 1, 1000, n, NULL);
        sent += n;
        if (sent < total)
            pd_discard(h);
    }
    pd_advance_ms(h, 40);
    const struct pd_seg *g;
    while ((g = pd_peek(h)) && g->rack != 1 + total)
        pd_expect(h, ".", 1, PD_ANY, PD_ANY, NULL);
    /* Less than 8 bytes left of the promise: 0 (rounding it up to one
     * unit would offer bytes past the buffer, and again with every ACK). */
    g = pd_expect(h, ".", 1, 1 + total, 0, NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.rcvq, total);
    uint32_t promised = 0;
    /* A full unit: whatever of it lies inside the edge we offered is
     * taken, the rest is out of the window; nothing is dropped inside it. */
    pd_in_data(h, ".", 1 + total, 1, 1000, 8, NULL);
    g = pd_expect(h, ".", 1, PD_ANY, 0, NULL);
    promised = g->rack - (1 + total);
    HP_CHECK_LE(promised, 5);
    HP_CHECK_EQ(pd_info(h, t).rcvq, total + promised);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RCVQ_DROPS), 0);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_read(h, t, 300000), total + promised);
}
