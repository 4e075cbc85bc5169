/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP in ESTABLISHED, sending: Nagle, the initial window and slow start (RFC 5681, RFC 6928), persist, RTO (RFC 6298), fast retransmit and NewReno (RFC 6582), keepalive. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080
/* After prime(): our next byte. */
#define S 101

/*
 * An established connection with an RTT sample: we sent 100 bytes, the
 * peer acknowledged them 10 ms later. The RTO is then rto_min (200 ms):
 * RFC 6298 2.2/2.3 give at most 3 * 10 ms.
 */
static struct hp_tcp_sock *prime(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, "ts * =");
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S, 1000, NULL);
    pd_expect_none(h);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.rto_us, 200000);
    HP_CHECK_EQ(i.unacked, 0);
    return t;
}

/* The classic algorithms these tests trace: NewReno's reductions
 * (RFC 5681, RFC 6582), dupack-driven recovery without SACK. */
static void newreno_no_sack(struct pd *h)
{
    struct hp_tcp_config cfg = {.cc = HP_TCP_CC_NEWRENO, .no_sack = true};
    pd_configure(h, &cfg);
}

/* RFC 9293 3.7.4 (Nagle): with data in flight a small segment waits for
 * the ACK, and then what accumulated goes as one segment. */
PD_TEST(tcp_est_nagle_holds_small_segment)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", S, 1, PD_ANY, 100, NULL);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_none(h);
    pd_advance_ms(h, 150); /* below the RTO: nothing moves */
    pd_expect_none(h);
    pd_in(h, ".", 1, S + 100, 1000, NULL);
    pd_expect_data(h, ".", S + 100, 1, PD_ANY, 200, NULL);
    /* A full segment is never held. */
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 2 * f + 50), 2 * f + 50);
    pd_expect_data(h, ".", S + 300, 1, PD_ANY, f, NULL);
    pd_expect_data(h, ".", S + 300 + f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, S + 300 + 2 * f, 1000, NULL);
    pd_expect_data(h, ".", S + 300 + 2 * f, 1, PD_ANY, 50, NULL);
}

/* NODELAY: no Nagle. */
PD_TEST(tcp_est_nodelay_sends_at_once)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    long v = 0;
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_NODELAY, &v), 0);
    HP_CHECK_EQ(v, 1);
    for (uint32_t k = 0; k < 3; k++) {
        HP_CHECK_EQ(pd_send(h, t, 100), 100);
        pd_expect_data(h, ".", S + 100 * k, 1, PD_ANY, 100, NULL);
    }
}

/* A gather send: the pieces are queued first and transmitted after the
 * last, so a header and a body written together leave in one segment on a
 * NODELAY connection (as Linux sends a writev), not a segment each; pieces
 * beyond a segment are cut by the MSS only; empty pieces are skipped. */
PD_TEST(tcp_est_sendv_pieces_share_segments)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    const uint32_t hdr_body[2] = {240, 1024};
    HP_CHECK_EQ(pd_sendv(h, t, hdr_body, 2), 1264);
    pd_expect_data(h, ".", S, 1, PD_ANY, 1264, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, S + 1264, 1000, NULL);
    uint32_t f = pd_full(h);
    const uint32_t cut[4] = {f - 10, 0, 30, 5};
    HP_CHECK_EQ(pd_sendv(h, t, cut, 4), f + 25);
    pd_expect_data(h, ".", S + 1264, 1, PD_ANY, f, NULL);
    pd_expect_data(h, ".", S + 1264 + f, 1, PD_ANY, 25, NULL);
    pd_expect_none(h);
}

/* A gather send into a nearly full send buffer takes the pieces in order
 * up to the room and no byte of a later piece; the rest waits for
 * HP_EV_OUT as with hp_tcp_send. */
PD_TEST(tcp_est_sendv_stops_at_the_room)
{
    struct hp_tcp_sock *t = prime(h);
    HP_REQUIRE_EQ(hp_tcp_setopt(t, HP_TCP_OPT_SNDBUF, 4096), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    const uint32_t lens[3] = {3000, 2000, 500};
    HP_CHECK_EQ(pd_sendv(h, t, lens, 3), 4096);
    HP_CHECK_EQ(hp_tcp_poll(t) & HP_EV_OUT, 0);
    uint32_t f = pd_full(h), sent = 0;
    while (sent < 4096) {
        uint32_t n = 4096 - sent < f ? 4096 - sent : f;
        pd_expect_data(h, ".", S + sent, 1, PD_ANY, n, NULL);
        sent += n;
    }
    pd_expect_none(h);
    pd_in(h, ".", 1, S + 4096, 1000, NULL);
    HP_CHECK(hp_tcp_poll(t) & HP_EV_OUT);
    const uint32_t rest[2] = {1, 2};
    HP_CHECK_EQ(pd_sendv(h, t, rest, 2), 3);
    pd_expect_data(h, ".", S + 4096, 1, PD_ANY, 3, NULL);
}

static uint32_t iw(uint32_t mss)
{
    uint32_t a = 10 * mss, b = 2 * mss > 14600 ? 2 * mss : 14600;
    return a < b ? a : b;
}

/* RFC 6928: the initial window is min(10 MSS, max(2 MSS, 14600)); RFC
 * 5681 3.1: slow start grows cwnd by the bytes each ACK acknowledges (at
 * most SMSS here), and the sender uses it. Full segments only: sender SWS
 * avoidance (RFC 9293 3.8.6.2.1) forbids the runt that would fill cwnd. */
PD_TEST(tcp_est_initial_window_then_slow_start)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    uint32_t f = pd_full(h);
    uint32_t smss = h->mss < 1460 ? h->mss : 1460;
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.cwnd == iw(smss) || i.cwnd == iw(f));
    HP_CHECK_GE(i.ssthresh, 1u << 20);
    uint32_t cwnd0 = i.cwnd;
    HP_CHECK_EQ(pd_send(h, t, 200000), 200000);
    for (uint32_t k = 0; k < 10; k++)
        pd_expect_data(h, ".", 1 + k * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_info(h, t).unacked, 10 * f);
    /* One ACK per segment: each makes room for two. */
    uint32_t next = 1 + 10 * f;
    for (uint32_t k = 1; k <= 10; k++) {
        pd_in(h, ".", 1, 1 + k * f, 1000, NULL);
        for (int j = 0; j < 2; j++, next += f)
            pd_expect_data(h, ".", next, 1, PD_ANY, f, NULL);
        pd_expect_none(h);
    }
    i = pd_info(h, t);
    HP_CHECK_EQ(i.cwnd, cwnd0 + 10 * f);
    HP_CHECK_EQ(i.unacked, 20 * f);
    HP_CHECK_LE(i.unacked, i.cwnd);
}

/* RFC 9438 5.8, RFC 7661: request/response traffic (one byte out, its
 * ACK) never uses half of cwnd, and cwnd stays the initial window; a bulk
 * send after it starts from there and slow start grows it as above. */
PD_TEST(tcp_est_application_limited_cwnd_holds)
{
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    uint32_t cwnd0 = pd_info(h, t).cwnd;
    uint32_t seq = S;
    for (int k = 0; k < 200; k++, seq++) {
        HP_CHECK_EQ(pd_send(h, t, 1), 1);
        pd_expect_data(h, ".", seq, 1, PD_ANY, 1, NULL);
        pd_advance_ms(h, 1);
        pd_in(h, ".", 1, seq + 1, 1000, NULL);
        pd_expect_none(h);
    }
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.cwnd, cwnd0);
    HP_CHECK_EQ(i.unacked, 0);
    /* Now a window's worth: ten segments, and each ACK grows cwnd. */
    HP_CHECK_EQ(pd_send(h, t, 10 * f), 10 * f);
    for (uint32_t k = 0; k < 10; k++)
        pd_expect_data(h, ".", seq + k * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, seq + f, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).cwnd, cwnd0 + f);
    pd_in(h, ".", 1, seq + 10 * f, 1000, NULL);
    HP_CHECK_GE(pd_info(h, t).cwnd, cwnd0 + 2 * f);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}

/* RFC 9293 3.8.6.1: with a zero window and data waiting, probes go after
 * the RTO and then with exponential back-off; the connection is not given
 * up while the peer answers; data flows once the window opens. */
PD_TEST(tcp_est_zero_window_persist)
{
    struct hp_tcp_sock *t = prime(h);
    pd_in(h, ".", 1, S, 0, NULL);
    HP_CHECK_EQ(pd_info(h, t).snd_wnd, 0);
    uint64_t t0 = pd_now_ms(h);
    HP_CHECK_EQ(pd_send(h, t, 1000), 1000);
    pd_expect_none(h);
    uint64_t due = 200;
    for (int k = 0; k < 8; k++) {
        pd_advance_ms(h, t0 + due - pd_now_ms(h) - 1);
        pd_expect_none(h);
        pd_advance_ms(h, 1);
        const struct pd_seg *g = pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
        /* One octet of new data, or SND.UNA - 1 with none (RFC 9293 3.8.6.1). */
        HP_CHECK((g->len == 1 && g->rseq == S) || (g->len == 0 && g->rseq == S - 1));
        pd_in(h, ".", 1, S, 0, NULL);
        t0 = pd_now_ms(h);
        due = due * 2 > 60000 ? 60000 : due * 2;
    }
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ZERO_WINDOW_PROBES), 8);
    /* The window opens: the data goes at once (the probe's octet, if one
     * was sent, is part of it; nothing waits for a timer). */
    pd_in(h, ".", 1, S, 1000, NULL);
    uint32_t end = S;
    const struct pd_seg *g;
    uint64_t opened = pd_now_ms(h);
    for (int k = 0; k < 5000 && !pd_peek(h); k++)
        pd_advance_ms(h, 1);
    while ((g = pd_peek(h)) != NULL) {
        pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
        HP_CHECK_EQ(h->last.at_ms, opened);
        if (h->last.rseq + h->last.len > end)
            end = h->last.rseq + h->last.len;
    }
    HP_CHECK_EQ(end, S + 1000);
    pd_in(h, ".", 1, S + 1000, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
    /* A probe the peer could not take is no loss (no RTO, no cwnd cut). */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
}

/* RFC 6298 5.4-5.6: on expiry the earliest unacknowledged segment is
 * retransmitted and the RTO doubles; RFC 5681 3.1: cwnd drops to one
 * segment, ssthresh to max(FlightSize / 2, 2 SMSS). */
PD_TEST(tcp_est_rto_retransmit_backoff)
{
    newreno_no_sack(h);
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    uint64_t t0 = pd_now_ms(h);
    HP_CHECK_EQ(pd_send(h, t, 1000), 1000);
    pd_expect_data(h, ".", S, 1, PD_ANY, 1000, NULL);
    static const uint64_t at[] = {200, 600, 1400, 3000};
    for (int k = 0; k < 4; k++) {
        pd_advance_ms(h, t0 + at[k] - pd_now_ms(h) - 1);
        pd_expect_none(h);
        pd_advance_ms(h, 1);
        pd_expect_data(h, ".", S, 1, PD_ANY, 1000, NULL);
    }
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 4);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RETRANS_SEGS), 4);
    struct hp_tcp_info i = pd_info(h, t);
    uint32_t smss = h->mss < 1460 ? h->mss : 1460;
    HP_CHECK_LE(i.cwnd, smss);
    HP_CHECK_GE(i.ssthresh, 2 * pd_full(h));
    HP_CHECK_LE(i.ssthresh, 2 * smss);
    HP_CHECK_EQ(i.timeouts, 4);
    pd_in(h, ".", 1, S + 1000, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
}

/* RFC 9293 3.8.3 R2: after data_retries retransmissions the connection is
 * dropped (ETIMEDOUT) when the last one times out too. */
PD_TEST(tcp_est_data_retries_then_etimedout)
{
    struct hp_tcp_config cfg = {.data_retries = 3, .no_sack = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = prime(h);
    uint64_t t0 = pd_now_ms(h);
    HP_CHECK_EQ(pd_send(h, t, 500), 500);
    pd_expect_data(h, ".", S, 1, PD_ANY, 500, NULL);
    for (int k = 0; k < 3; k++) {
        pd_advance_ms(h, (200u << k));
        pd_expect_data(h, ".", S, 1, PD_ANY, 500, NULL);
    }
    pd_advance_ms(h, t0 + 3000 - pd_now_ms(h) - 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    uint32_t ev = pd_events(h, h->c);
    HP_CHECK(ev & HP_EV_ERR);
    HP_CHECK(ev & HP_EV_HUP);
    HP_CHECK_EQ(hp_tcp_error(t), -ETIMEDOUT);
    pd_discard(h); /* a RST on giving up is the stack's choice */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RETRANS_SEGS), 3);
    hp_tcp_close(t);
}

/* RFC 5681 3.2: the third duplicate ACK retransmits at once; RFC 6582: a
 * partial ACK retransmits the next hole at once; the full ACK ends the
 * recovery with cwnd no above ssthresh. No timeout is involved. */
PD_TEST(tcp_est_fast_retransmit_newreno)
{
    newreno_no_sack(h);
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 10 * f), 10 * f);
    for (uint32_t k = 0; k < 10; k++)
        pd_expect_data(h, ".", S + k * f, 1, PD_ANY, f, NULL);
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S + f, 1000, NULL); /* the first segment arrived */
    pd_in(h, ".", 1, S + f, 1000, NULL); /* duplicates: the second was lost */
    pd_in(h, ".", 1, S + f, 1000, NULL);
    pd_expect_none(h); /* (nothing new to send: no limited transmit) */
    pd_in(h, ".", 1, S + f, 1000, NULL);
    pd_expect_data(h, ".", S + f, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_FAST_RETRANS), 1);
    struct hp_tcp_info i = pd_info(h, t);
    uint32_t smss = h->mss < 1460 ? h->mss : 1460;
    /* ssthresh = max(FlightSize / 2, 2 SMSS), FlightSize = 9 segments. */
    HP_CHECK_GE(i.ssthresh, 9 * f / 2 - 1);
    HP_CHECK_LE(i.ssthresh, 9 * f / 2 + 1);
    HP_CHECK_GE(i.cwnd, i.ssthresh + 3 * f);
    HP_CHECK_LE(i.cwnd, i.ssthresh + 3 * smss);
    pd_in(h, ".", 1, S + f, 1000, NULL); /* more duplicates: nothing to send */
    pd_expect_none(h);
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S + 4 * f, 1000, NULL); /* partial: the fifth was lost too */
    pd_expect_data(h, ".", S + 4 * f, 1, PD_ANY, f, NULL);
    pd_advance_ms(h, 10);
    pd_in(h, ".", 1, S + 10 * f, 1000, NULL);
    pd_expect_none(h);
    i = pd_info(h, t);
    HP_CHECK_LE(i.cwnd, i.ssthresh);
    HP_CHECK_EQ(i.unacked, 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TIMEOUTS), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_RETRANS_SEGS), 2);
    HP_CHECK_EQ(i.fast_retrans, 1);
}

/* Limited transmit (RFC 3042): the first two duplicates each send one new
 * segment past cwnd (the receiver's window permitting); the third still
 * retransmits, and nothing else goes beyond cwnd. */
PD_TEST(tcp_est_fast_retransmit_with_new_data)
{
    newreno_no_sack(h);
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 20 * f), 20 * f);
    for (uint32_t k = 0; k < 10; k++)
        pd_expect_data(h, ".", S + k * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, S, 1000, NULL);
    pd_expect_data(h, ".", S + 10 * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, S, 1000, NULL);
    pd_expect_data(h, ".", S + 11 * f, 1, PD_ANY, f, NULL);
    pd_expect_none(h);
    pd_in(h, ".", 1, S, 1000, NULL);
    pd_expect_data(h, ".", S, 1, PD_ANY, f, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_FAST_RETRANS), 1);
    /* In recovery, cwnd = ssthresh + 3 SMSS with 12 segments out: no new
     * segment until enough duplicates inflate it. */
    pd_expect_none(h);
    (void)t;
}

/* RFC 9293 3.8.4: keepalive probes after the idle time (<SEQ=SND.NXT-1>,
 * at most one garbage octet); an answer restarts the idle time; keepcnt
 * unanswered probes drop the connection (ETIMEDOUT). */
PD_TEST(tcp_est_keepalive)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    long v = 0;
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_KEEPALIVE, &v), 0);
    HP_CHECK_EQ(v, 0);
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_KEEPIDLE, &v), 0);
    HP_CHECK_EQ(v, 7200);
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_KEEPINTVL, &v), 0);
    HP_CHECK_EQ(v, 75);
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_KEEPCNT, &v), 0);
    HP_CHECK_EQ(v, 9);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPIDLE, 10), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPINTVL, 2), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPCNT, 3), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPALIVE, 1), 0);
    uint64_t t0 = pd_now_ms(h);
    pd_advance_ms(h, 9999);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    const struct pd_seg *g = pd_expect_data(h, ".", 0, 1, PD_ANY, PD_ANY, NULL);
    HP_CHECK_LE(g->len, 1);
    HP_CHECK_EQ(g->at_ms, t0 + 10000);
    pd_in(h, ".", 1, 1, 1000, NULL);
    t0 = pd_now_ms(h);
    pd_advance_ms(h, 9999);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    pd_expect_data(h, ".", 0, 1, PD_ANY, PD_ANY, NULL);
    for (int k = 0; k < 2; k++) {
        pd_advance_ms(h, 1999);
        pd_expect_none(h);
        pd_advance_ms(h, 1);
        pd_expect_data(h, ".", 0, 1, PD_ANY, PD_ANY, NULL);
    }
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    pd_advance_ms(h, 1999);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(t), -ETIMEDOUT);
    HP_CHECK(pd_events(h, h->c) & HP_EV_ERR);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_KEEPALIVE_PROBES), 4);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_KEEPALIVE_DROPS), 1);
    pd_discard(h);
    hp_tcp_close(t);
}

/* Keepalive is off by default: hours of silence, nothing sent. Turned on
 * on a connection idle for longer than keepidle + keepcnt * keepintvl,
 * its probes still go one keepintvl apart, and an answer keeps the
 * connection (RFC 9293 3.8.4: a keepalive must not kill a live peer). */
PD_TEST(tcp_est_keepalive_enabled_on_idle_connection)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    pd_advance_ms(h, 3 * 3600 * 1000);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPIDLE, 10), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPINTVL, 2), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPCNT, 3), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPALIVE, 1), 0);
    for (int k = 0; k < 100 && !pd_peek(h); k++)
        pd_advance_ms(h, 100);
    const struct pd_seg *g = pd_expect_data(h, ".", 0, 1, PD_ANY, PD_ANY, NULL);
    HP_CHECK_LE(g->len, 1);
    /* No second probe before keepintvl. */
    pd_expect_none(h);
    pd_advance_ms(h, 1999);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_advance_ms(h, 9999);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
}

/* Any segment from the peer counts as an answer, data included; a
 * connection with data in flight needs no keepalive. */
PD_TEST(tcp_est_keepalive_restarted_by_traffic)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPIDLE, 10), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_KEEPALIVE, 1), 0);
    for (int k = 0; k < 5; k++) {
        pd_advance_ms(h, 9000);
        pd_in_data(h, "P.", 1 + 10 * (uint32_t)k, S, 1000, 10, NULL);
    }
    pd_advance_ms(h, 40);
    pd_discard(h); /* the ACKs of that data */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_KEEPALIVE_PROBES), 0);
    HP_CHECK_EQ(pd_read(h, t, 1000), 50);
}

/* The send buffer fills: -EAGAIN, then HP_EV_OUT when ACKs make room. */
PD_TEST(tcp_est_send_buffer_full_then_out_event)
{
    struct hp_tcp_config cfg = {.sndbuf = 8192};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = prime(h);
    pd_events(h, h->c);
    HP_CHECK_EQ(pd_send(h, t, 10000), 8192);
    HP_CHECK_EQ(pd_send(h, t, 100), -EAGAIN);
    HP_CHECK_EQ(pd_events(h, h->c) & HP_EV_OUT, 0);
    uint32_t acked = S;
    for (int round = 0; round < 4 && acked < S + 8192; round++) {
        const struct pd_seg *g;
        while ((g = pd_peek(h)) != NULL) {
            pd_expect_data(h, ".", PD_ANY, 1, PD_ANY, PD_ANY, NULL);
            acked = h->last.rseq + h->last.len;
        }
        pd_in(h, ".", 1, acked, 1000, NULL);
    }
    HP_CHECK_EQ(acked, S + 8192);
    HP_CHECK(pd_events(h, h->c) & HP_EV_OUT);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
}

/* send_buf: the buffer's bytes go out as sent. */
PD_TEST(tcp_est_send_buf)
{
    struct hp_tcp_sock *t = prime(h);
    struct hp_buf *b = hp_buf_alloc(h->pool);
    HP_REQUIRE(b != NULL);
    uint8_t *p = hp_buf_append(b, 300);
    HP_REQUIRE(p != NULL);
    for (uint32_t i = 0; i < 300; i++)
        p[i] = pd_pattern(0, h->c->tx_off + i);
    HP_CHECK_EQ(hp_tcp_send_buf(t, b), 300);
    h->c->tx_off += 300;
    pd_expect_data(h, ".", S, 1, PD_ANY, 300, NULL);
    pd_in(h, ".", 1, S + 300, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).sndq, 0);
}

/* RFC 6298 2.1: before any RTT sample the RTO is 1 s. A cookie connection
 * without timestamps has none (no SYN-ACK was timed). */
PD_TEST(tcp_est_rto_initial_without_sample)
{
    struct hp_tcp_config cfg = {.no_timestamps = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_use(h, 41001, 1)->lport = PORT; /* the SYN queue is full: a cookie */
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *");
    pd_advance_ms(h, 50);
    pd_in(h, ".", 1, 1, 65535, "");
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(pd_info(h, t).rto_us, 1000000);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, "");
    uint64_t t0 = pd_now_ms(h);
    pd_advance_ms(h, 999);
    pd_discard(h); /* (the first connection's SYN-ACK retransmission) */
    pd_advance_ms(h, 1);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, "");
    HP_CHECK_EQ(h->last.at_ms, t0 + 1000);
}

/* RFC 6298 5.7: after the SYN-ACK had to be retransmitted (and without a
 * timestamp to time it), data starts with an RTO of 3 s. */
PD_TEST(tcp_est_rto_3s_after_lost_synack)
{
    struct hp_tcp_config cfg = {.no_timestamps = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_advance_ms(h, 1000);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_advance_ms(h, 20);
    pd_in(h, ".", 1, 1, 1000, "");
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, "");
    uint64_t t0 = pd_now_ms(h);
    pd_advance_ms(h, 2999);
    pd_expect_none(h);
    pd_advance_ms(h, 1);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, "");
    HP_CHECK_EQ(h->last.at_ms, t0 + 3000);
}

/* RFC 5681 2 (duplicate ACK): an ACK that changes the window is not a
 * duplicate; three of them trigger no fast retransmit. */
PD_TEST(tcp_est_window_updates_are_not_dupacks)
{
    newreno_no_sack(h);
    struct hp_tcp_sock *t = prime(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 4 * f), 4 * f);
    for (uint32_t k = 0; k < 4; k++)
        pd_expect_data(h, ".", S + k * f, 1, PD_ANY, f, NULL);
    for (uint32_t k = 0; k < 4; k++)
        pd_in(h, ".", 1, S, 1001 + k, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_FAST_RETRANS), 0);
    /* Data from the peer with the same ACK is no duplicate either. */
    for (uint32_t k = 0; k < 4; k++)
        pd_in_data(h, "P.", 1 + 10 * k, S, 1004, 10, NULL);
    pd_advance_ms(h, 40);
    while (pd_peek(h))
        pd_expect(h, ".", PD_ANY, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_FAST_RETRANS), 0);
    HP_CHECK_EQ(pd_read(h, t, 100), 40);
}

/* After a partial ACK of a segment, the timeout retransmits from SND.UNA:
 * the acknowledged part is not sent again. */
PD_TEST(tcp_est_rto_retransmits_from_snd_una)
{
    struct hp_tcp_sock *t = prime(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 1000), 1000);
    pd_expect_data(h, ".", S, 1, PD_ANY, 1000, NULL);
    pd_in(h, ".", 1, S + 300, 1000, NULL);
    pd_expect_none(h);
    pd_advance_ms(h, 200);
    pd_expect_data(h, ".", S + 300, 1, PD_ANY, 700, NULL);
    pd_in(h, ".", 1, S + 1000, 1000, NULL);
    HP_CHECK_EQ(pd_info(h, t).unacked, 0);
}
