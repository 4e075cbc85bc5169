/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP SACK as the sender: the scoreboard (RFC 6675), RACK-TLP (RFC 8985), PRR (RFC 6937), D-SACK undo (RFC 2883), and hostile SACK blocks. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080
/* After prime(): our next byte. */
#define S 101

/* Established with SACK (PD_SYN_OPTS), RTT samples of 0 ms (the
 * handshake) and 10 ms: SRTT 1.25 ms, so the probe timeout is its floor,
 * 10 ms (2 SRTT below it). NODELAY. The tests' flights are acknowledged
 * after 5 ms: RACK.rtt and RACK.min_RTT 5 ms, a reordering window of
 * 1.25 ms. */
static struct hp_tcp_sock *prime(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK(pd_info(h, t).sack_ok);
    return t;
}

/* Send n full segments from S and see them go. */
static void flight(struct pd *h, struct hp_tcp_sock *t, uint32_t n)
{
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, n * f), n * f);
    for (uint32_t k = 0; k < n; k++)
        pd_expect_data(h, ".", S + k * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
}

/* An ACK of `ack` (relative) with SACK blocks given in segments from S. */
static void sack(struct pd *h, uint32_t ack, const char *blocks)
{
    char o[128];
    snprintf(o, sizeof o, "ts * *,sack %s", blocks);
    pd_in(h, ".", 1, ack, 1000, o);
}

static const char *blk(struct pd *h, char *buf, size_t cap, uint32_t from, uint32_t to)
{
    uint32_t f = pd_full(h);
    snprintf(buf, cap, "%u:%u", S + from * f, S + to * f);
    return buf;
}

/* RFC 8985 6.2 / RFC 6675: the first segment of ten is lost. Three SACKed
 * segments above it (DupThresh) leave no reordering window: it is lost at
 * once, recovery starts, PRR lets exactly the retransmission go; the
 * cumulative ACK ends recovery with cwnd = ssthresh (CUBIC: 0.7 cwnd). */
PD_TEST(tcp_sack_lost_first_segment)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    uint32_t cwnd0 = pd_info(h, t).cwnd;
    flight(h, t, 10);
    pd_advance_ms(h, 5);
    char b[32];
    sack(h, S, blk(h, b, sizeof b, 1, 2));
    sack(h, S, blk(h, b, sizeof b, 1, 3));
    pd_expect_none(h);
    HP_CHECK_EQ(pd_info(h, t).sacked, 2 * f);
    sack(h, S, blk(h, b, sizeof b, 1, 4));
    pd_expect_data(h, ".", S, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.sacked, 3 * f);
    HP_CHECK_EQ(i.lost, f);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SACK_RECOVERIES), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RACK_LOSSES), 1);
    HP_CHECK_EQ(i.ssthresh, cwnd0 * 7 / 10);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    pd_expect_none(h);
    i = pd_info(h, t);
    HP_CHECK_EQ(i.cwnd, i.ssthresh);
    HP_CHECK_EQ(i.sacked, 0);
    HP_CHECK_EQ(i.lost, 0);
    HP_CHECK_EQ(i.unacked, 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RETRANS_SEGS), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
}

/* A lost middle segment: after the cumulative ACK of the first four, the
 * SACKs of three above the fifth; NewReno's halving when chosen. */
PD_TEST(tcp_sack_lost_middle_segment_newreno)
{
    struct hp_tcp_config cfg = {.cc = HP_TCP_CC_NEWRENO};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 10);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + 4 * f, 1000, NULL);
    /* Slow start: the ACK of four opened cwnd; new data would go, but the
     * queue is empty. */
    pd_expect_none(h);
    char b[32];
    sack(h, S + 4 * f, blk(h, b, sizeof b, 5, 6));
    sack(h, S + 4 * f, blk(h, b, sizeof b, 5, 7));
    sack(h, S + 4 * f, blk(h, b, sizeof b, 5, 8));
    pd_expect_data(h, ".", S + 4 * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    struct hp_tcp_info i = pd_info(h, t);
    /* RFC 5681 equation 4 on the flight of six at the loss. */
    HP_CHECK_EQ(i.ssthresh, 3 * f);
    HP_CHECK_EQ(i.cc, HP_TCP_CC_NEWRENO);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).cwnd, 3 * f);
}

/* RFC 8985 7: the last segment is lost. With one segment left in flight
 * the probe timeout includes a delayed ACK (200 ms) and is clamped to the
 * RTO, but the probe (the last segment again) comes first, and its ACK
 * repairs the loss without a timeout; the congestion response follows
 * (7.4.2). */
PD_TEST(tcp_tlp_lost_last_segment)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 10);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + 9 * f, 1000, NULL);
    uint64_t acked = pd_now_ms(h);
    pd_expect_none(h);
    pd_advance_ms(h, 199);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    pd_expect_data(h, ".", S + 9 * f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(h->last.at_ms, acked + 200);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TLP_PROBES), 1);
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    pd_expect_none(h);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TLP_RECOVERIES), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
    HP_CHECK_EQ(i.tlp_probes, 1);
    HP_CHECK_EQ(i.cwnd, i.ssthresh);
    HP_CHECK(i.ssthresh != UINT32_MAX);
}

/* Two tail segments lost: the probe goes the PTO (10 ms) after the
 * flight was sent, not after the ACK that left two out; its SACK shows
 * the other lost (RACK), which goes in recovery; no timeout. */
PD_TEST(tcp_tlp_two_tail_segments)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    uint64_t sent = pd_now_ms(h);
    flight(h, t, 10);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + 8 * f, 1000, NULL);
    pd_advance_ms(h, 30);
    pd_expect_data(h, ".", S + 9 * f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(h->last.at_ms, sent + 10);
    pd_expect_none(h);
    char b[32];
    sack(h, S + 8 * f, blk(h, b, sizeof b, 9, 10));
    pd_expect_data(h, ".", S + 8 * f, 1, PD_ANY, f, NULL);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SACK_RECOVERIES), 1);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* A peer seen to ACK each segment at once (as Linux does early in a
 * connection, in quick-ACK mode) answers a lone segment within a round
 * trip: the last segment lost, the probe goes the PTO after the flight
 * was sent, without the 200 ms a delayed ACK could take. */
PD_TEST(tcp_tlp_prompt_peer_no_delayed_ack_wait)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    uint64_t sent = pd_now_ms(h);
    flight(h, t, 10);
    pd_advance_ms(h, 5);
    for (uint32_t k = 1; k <= 9; k++)
        pd_in(h, ".", 1, S + k * f, 1000, NULL);
    pd_expect_none(h);
    pd_advance_ms(h, 30);
    pd_expect_data(h, ".", S + 9 * f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(h->last.at_ms, sent + 10);
    pd_expect_none(h);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TLP_PROBES), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TLP_RECOVERIES), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* The last segment of a flight lost after the ACKs named in acks (each
 * the segments it covers, at 5 ms; -N: that one N ms later): with one
 * segment left, the probe allows for a delayed ACK (WCDelAckT, clamped
 * to the RTO: it goes at the RTO's time, in its place). */
static void tail_after(struct pd *h, struct hp_tcp_sock *t, const int *acks, int n)
{
    uint32_t f = pd_full(h);
    flight(h, t, 10);
    pd_advance_ms(h, 5);
    uint32_t k = 0;
    for (int a = 0; a < n; a++) {
        if (acks[a] < 0)
            pd_advance_ms(h, (uint64_t)-acks[a]);
        k += acks[a] < 0 ? 1u : (uint32_t)acks[a];
        pd_in(h, ".", 1, S + k * f, 1000, NULL);
    }
    HP_CHECK_EQ(k, 9);
    uint64_t acked = pd_now_ms(h);
    pd_advance_ms(h, 150);
    pd_expect_none(h);
    pd_advance_ms(h, 100);
    pd_expect_data(h, ".", S + 9 * f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(h->last.at_ms, acked + 200);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TLP_PROBES), 1);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* A peer that ACKs every other segment may hold the ACK of a lone one. */
PD_TEST(tcp_tlp_delaying_peer_keeps_delayed_ack_wait)
{
    static const int acks[] = {2, 2, 2, 2, 1};
    tail_after(h, prime(h), acks, 5);
}

/* ACKs of one segment each, but the last of them late (past min_RTT plus
 * RACK's reordering window, 5 + 1.25 ms: a delayed ACK): no longer prompt. */
PD_TEST(tcp_tlp_late_single_ack_is_not_prompt)
{
    static const int acks[] = {1, 1, 1, 1, 1, 1, 1, 1, -3};
    tail_after(h, prime(h), acks, 9);
}

/* New data written into an open flight does not restart the timer; the
 * probe still waits its PTO after that data went out (RFC 8985 7.2). */
PD_TEST(tcp_tlp_waits_for_later_data)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 4);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + 2 * f, 1000, NULL);
    pd_advance_ms(h, 4);
    HP_CHECK_EQ(pd_send(h, t, f), f);
    pd_expect_data(h, ".", S + 4 * f, 1, PD_ANY, f, NULL);
    uint64_t sent = pd_now_ms(h);
    pd_advance_ms(h, 9);
    pd_expect_none(h);
    pd_advance_ms(h, 5);
    pd_expect_data(h, ".", S + 4 * f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(h->last.at_ms, sent + 10);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TLP_PROBES), 1);
    pd_in(h, ".", 1, S + 5 * f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* Reordering below the threshold: a SACK above a hole arms RACK's
 * reordering timer (RACK.rtt + min_RTT / 4); the hole fills before it
 * fires: nothing is retransmitted, the reordering is remembered. */
PD_TEST(tcp_rack_reordering_within_window)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 4);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + f, 1000, NULL);
    char b[32];
    sack(h, S + f, blk(h, b, sizeof b, 2, 3));
    pd_advance_ms(h, 1);
    pd_in(h, ".", 1, S + 3 * f, 1000, NULL);
    pd_advance_ms(h, 5);
    pd_expect_none(h);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RETRANS_SEGS), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_REORDER_SEEN), 1);
    HP_CHECK_GE(i.reordering, 1);
    HP_CHECK_EQ(i.min_rtt_us, 5000);
    pd_in(h, ".", 1, S + 4 * f, 1000, NULL);
    pd_expect_none(h);
}

/* Reordering beyond the window: the timer fires (1.25 ms after RACK.rtt),
 * the segment goes again and recovery starts; then the original arrives
 * (the cumulative ACK) and the retransmission is reported as a duplicate
 * (D-SACK, RFC 2883): the reduction is undone (cwnd and ssthresh back) and
 * the reordering window widens (RFC 8985 6.2 step 4). */
PD_TEST(tcp_rack_spurious_retransmit_dsack_undo)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 4);
    struct hp_tcp_info i0 = pd_info(h, t);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + f, 1000, NULL);
    char b[32];
    sack(h, S + f, blk(h, b, sizeof b, 2, 3));
    pd_expect_none(h);
    pd_advance_ms(h, 3);
    pd_expect_data(h, ".", S + f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RACK_REO_TIMEOUTS), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SACK_RECOVERIES), 1);
    HP_CHECK(pd_info(h, t).ssthresh != UINT32_MAX);
    pd_advance_ms(h, 1);
    pd_in(h, ".", 1, S + 3 * f, 1000, NULL);
    pd_advance_ms(h, 9);
    /* The D-SACK of the retransmission, below the ACK. */
    sack(h, S + 3 * f, blk(h, b, sizeof b, 1, 2));
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_DSACK_IN), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SPURIOUS_UNDO), 1);
    HP_CHECK_EQ(i.spurious_undos, 1);
    HP_CHECK_EQ(i.ssthresh, i0.ssthresh);
    HP_CHECK_GE(i.cwnd, i0.cwnd);
    pd_in(h, ".", 1, S + 4 * f, 1000, NULL);
    pd_expect_none(h);
}

/* RFC 8985 7.4: a probe whose original arrived too: the peer's D-SACK of
 * the probe says there was no loss: no reduction stays. */
PD_TEST(tcp_tlp_spurious_probe_dsack)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 4);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, S + 2 * f, 1000, NULL);
    pd_advance_ms(h, 20);
    pd_expect_data(h, ".", S + 3 * f, 1, PD_ANY, f, NULL);
    /* The originals arrive late; then the probe, a duplicate. */
    pd_in(h, ".", 1, S + 4 * f, 1000, NULL);
    char b[32];
    sack(h, S + 4 * f, blk(h, b, sizeof b, 3, 4));
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_DSACK_IN), 1);
    HP_CHECK_EQ(i.ssthresh, UINT32_MAX);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
    /* The probe's D-SACK is no reordering: RACK's window stays at
     * min_RTT / 4, so a hole SACKed over is retransmitted as soon as
     * before (tcp_rack_spurious_retransmit_dsack_undo's timing). */
    uint32_t s2 = S + 4 * f;
    HP_CHECK_EQ(pd_send(h, t, 4 * f), 4 * f);
    for (uint32_t k = 0; k < 4; k++)
        pd_expect_data(h, ".", s2 + k * f, 1, PD_ANY, f, NULL);
    pd_advance_ms(h, 5);
    pd_in(h, ".", 1, s2 + f, 1000, NULL);
    snprintf(b, sizeof b, "%u:%u", s2 + 2 * f, s2 + 3 * f);
    sack(h, s2 + f, b);
    pd_expect_none(h);
    pd_advance_ms(h, 2);
    pd_expect_data(h, ".", s2 + f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RACK_REO_TIMEOUTS), 1);
}

/* A timeout with SACK state (RFC 6675 5.1, RFC 8985 6.3): the lost
 * segments go again, the SACKed ones not. */
PD_TEST(tcp_sack_rto_skips_sacked)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 4);
    pd_advance_ms(h, 5);
    char b[32];
    sack(h, S, blk(h, b, sizeof b, 1, 2)); /* segment 2 SACKed; 1, 3 and 4 outstanding */
    pd_discard(h);
    pd_advance_ms(h, 1000);
    uint32_t lens = 0;
    const struct pd_seg *g;
    while ((g = pd_peek(h)) != NULL) {
        pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
        HP_CHECK(h->last.rseq != S + f); /* never the SACKed one */
        lens += h->last.len;
    }
    HP_CHECK_GE(lens, f);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_TIMEOUTS) + pd_ctr(h, HP_CTR_TCP_TLP_PROBES), 1);
    pd_in(h, ".", 1, S + 4 * f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* Hostile SACK blocks: beyond what we sent, below SND.UNA (no plausible
 * D-SACK), inverted, overlapping, and on a RST. None may change the
 * scoreboard wrongly or stop the connection. */
PD_TEST(tcp_sack_bad_blocks)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    flight(h, t, 6);
    char o[128];
    /* Beyond snd_max. */
    snprintf(o, sizeof o, "ts * *,sack %u:%u", S + 6 * f, S + 8 * f);
    pd_in(h, ".", 1, S, 1000, o);
    /* Inverted, and wrapping around the sequence space. */
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u", S + 3 * f, S + 2 * f, S + 4 * f, S - 100000);
    pd_in(h, ".", 1, S, 1000, o);
    /* Far below SND.UNA: no D-SACK the peer could mean. */
    snprintf(o, sizeof o, "ts * *,sack %u:%u", S - 1000000, S - 999000);
    pd_in(h, ".", 1, S, 1000, o);
    HP_CHECK_EQ(pd_info(h, t).sacked, 0);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_SACK_BAD_BLOCKS), 4);
    /* Overlapping: 1-3 and 2-4 mark 1..3 once. */
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u", S + 1 * f, S + 3 * f, S + 2 * f, S + 4 * f);
    pd_in(h, ".", 1, S, 1000, o);
    HP_CHECK_EQ(pd_info(h, t).sacked, 3 * f);
    /* A SACK option longer than the header can hold: the segment is
     * malformed and dropped whole (counted), the connection lives. */
    uint64_t bad = pd_ctr(h, HP_CTR_TCP_IN_BAD_OPTIONS);
    pd_in(h, ".", 1, S, 1000,
          "nop,nop,raw 05 2a 00 00 00 01 00 00 00 02 00 00 00 03 00 00 00 04 00 00 00 05 00 00 00 "
          "06 00 00 00 07 00 00 00 08 00 00 00 09 00 00");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_BAD_OPTIONS), bad + 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    pd_discard(h);
    /* SACK blocks on a RST: the RST does what a RST does, nothing else. */
    snprintf(o, sizeof o, "ts * *,sack %u:%u", S + 4 * f, S + 5 * f);
    pd_in(h, "R.", 1, S, 0, o);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNRESET);
    hp_tcp_close(t);
}
