/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP in SYN-SENT (RFC 9293 3.10.7.3): the SYN and its options, SYN-ACK, RSTs, bad ACKs, simultaneous open, SYN retransmission. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PEER_PORT 8080

static struct hp_tcp_sock *connect_syn(struct pd *h)
{
    pd_use(h, PEER_PORT, 1000000);
    struct hp_tcp_sock *t = pd_connect(h, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    char o[64];
    /* MSS, window scale 3, timestamps with TSecr 0 (RFC 7323 3.2: no ACK,
     * TSecr SHOULD be 0), SACK-permitted (RFC 2018 2). */
    snprintf(o, sizeof o, "mss %u,sackok,ws 3,ts * 0", h->mss);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, o);
    HP_CHECK(h->last.win > 0);
    return t;
}

/* connect -> SYN; SYN-ACK -> ACK, ESTABLISHED, HP_EV_OUT. */
PD_TEST(tcp_syn_sent_connect_and_synack)
{
    struct hp_tcp_sock *t = connect_syn(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ACTIVE_OPENS), 1);
    HP_CHECK_EQ(pd_events(h, h->c) & HP_EV_OUT, 0);
    struct hp_sockaddr me, peer;
    hp_tcp_local(t, &me);
    hp_tcp_peer(t, &peer);
    HP_CHECK(me.port != 0);
    HP_CHECK_MEMEQ(me.addr, h->our_ip, h->family == 4 ? 4 : 16);
    HP_CHECK_EQ(peer.port, PEER_PORT);
    HP_CHECK_EQ(hp_tcp_connect(t, &peer), -EALREADY);
    pd_advance_ms(h, 30);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, "ts +30 500");
    HP_CHECK(h->last.win > 0 && ((uint32_t)h->last.win << 3) <= 262144u);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    uint32_t ev = pd_events(h, h->c);
    HP_CHECK(ev & HP_EV_OUT);
    HP_CHECK_EQ(ev & (HP_EV_ERR | HP_EV_HUP), 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &peer), -EISCONN);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.ts_ok && i.ws_ok);
    HP_CHECK_EQ(i.snd_wscale, 7);
    HP_CHECK_EQ(i.rcv_wscale, 3);
    HP_CHECK_EQ(i.snd_wnd, 65535); /* a SYN's window is never scaled */
    hp_tcp_abort(t);
}

/* Data queued before the handshake goes once it completes. */
PD_TEST(tcp_syn_sent_data_queued_before_established)
{
    struct hp_tcp_sock *t = connect_syn(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_none(h);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    const struct pd_seg *g = pd_peek(h);
    HP_REQUIRE(g != NULL);
    if (g->len == 0)
        pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    hp_tcp_abort(t);
}

/* RFC 9293 3.10.7.3: a RST with an acceptable ACK -> the connection is
 * refused (CLOSED, ECONNREFUSED), nothing sent in reply. */
PD_TEST(tcp_syn_sent_rst_refused)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in(h, "R.", 0, 1, 0, "");
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    uint32_t ev = pd_events(h, h->c);
    HP_CHECK(ev & HP_EV_ERR);
    HP_CHECK(ev & HP_EV_HUP);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNREFUSED);
    HP_CHECK_EQ(hp_tcp_error(t), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ATTEMPT_FAILS), 1);
    hp_tcp_close(t);
    /* The SYN is not retransmitted: the connection is gone. */
    pd_advance_ms(h, 5000);
    pd_expect_none(h);
}

/* RFC 9293 3.10.7.3: a RST without ACK, or whose ACK is not acceptable,
 * is dropped; the connection waits on. */
PD_TEST(tcp_syn_sent_bad_rst_ignored)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in(h, "R", 0, 0, 0, "");
    pd_in(h, "R.", 0, 5, 0, "");
    pd_in(h, "R.", 0, 0, 0, "");
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    HP_CHECK_EQ(pd_events(h, h->c), 0);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    hp_tcp_abort(t);
}

/* RFC 9293 3.10.7.3: SEG.ACK =< ISS or SEG.ACK > SND.NXT: <SEQ=SEG.ACK>
 * <CTL=RST>, the segment is dropped, the connection waits on. */
PD_TEST(tcp_syn_sent_bad_ack_gets_rst)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in(h, "S.", 0, 5, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    pd_expect(h, "R", 5, PD_ANY, PD_ANY, NULL);
    pd_in(h, "S.", 0, 0, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    pd_expect(h, "R", 0, PD_ANY, PD_ANY, NULL);
    pd_in(h, ".", 0, 0xFFFF0000u, 65535, "");
    pd_expect(h, "R", 0xFFFF0000u, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    HP_CHECK_EQ(pd_events(h, h->c), 0);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    hp_tcp_abort(t);
}

/* A segment with neither SYN nor RST (and no ACK) is dropped. */
PD_TEST(tcp_syn_sent_plain_segment_dropped)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in_data(h, "P", 0, 0, 65535, 10, "");
    pd_in(h, "F", 0, 0, 65535, "");
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    hp_tcp_abort(t);
}

/* RFC 9293 3.10.7.3 fifth / figure 8: a SYN without ACK -> SYN-RECEIVED
 * with <SEQ=ISS><ACK=RCV.NXT><CTL=SYN,ACK>; the peer's SYN-ACK and ACK
 * complete it. */
PD_TEST(tcp_syn_sent_simultaneous_open)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,ts * 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    HP_CHECK(h->last.opt.has_mss);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_RECEIVED);
    /* The peer's answer to our SYN, then its ACK of our SYN-ACK. */
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,ts * *,nop,ws 7");
    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_discard(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK(pd_events(h, h->c) & HP_EV_OUT);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100), 10);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 20), 20);
    pd_expect_data(h, ".", 1, 11, PD_ANY, 20, NULL);
    hp_tcp_abort(t);
}

/* RFC 6298 2.1 and 5.5: the SYN is retransmitted after 1 s, then with the
 * timeout doubled each time (capped by rto_max, 60 s, RFC 6298 2.5);
 * after syn_retries (7) retransmissions the attempt fails with ETIMEDOUT
 * once the last one's timeout expires: at 123 + 60 = 183 s, past the 3
 * minutes RFC 9293 3.8.3 asks for. */
PD_TEST(tcp_syn_sent_retransmit_backoff_then_etimedout)
{
    struct hp_tcp_sock *t = connect_syn(h);
    const struct pd_seg first = h->last;
    static const uint64_t at[] = {1000, 3000, 7000, 15000, 31000, 63000, 123000};
    for (int k = 0; k < 7; k++) {
        pd_advance_ms(h, at[k] - pd_now_ms(h) - 1);
        pd_expect_none(h);
        pd_advance_ms(h, 1);
        char o[64];
        snprintf(o, sizeof o, "mss %u,sackok,ws 3,ts * 0", h->mss);
        pd_expect(h, "S", 0, PD_ANY, PD_ANY, o);
        HP_CHECK_EQ(h->last.at_ms, at[k]);
        HP_CHECK_EQ(h->last.win, first.win);
        HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    }
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_RETRANS), 7);
    pd_advance_ms(h, 183000 - pd_now_ms(h) - 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    HP_CHECK_EQ(pd_events(h, h->c), 0);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    uint32_t ev = pd_events(h, h->c);
    HP_CHECK(ev & HP_EV_ERR);
    HP_CHECK(ev & HP_EV_HUP);
    HP_CHECK_EQ(hp_tcp_error(t), -ETIMEDOUT);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ATTEMPT_FAILS), 1);
    pd_discard(h); /* a RST on giving up is the stack's choice */
    pd_advance_ms(h, 600000);
    pd_expect_none(h);
    hp_tcp_close(t);
}

/* A smaller syn_retries gives up sooner. */
PD_TEST(tcp_syn_sent_syn_retries_knob)
{
    struct hp_tcp_config cfg = {.syn_retries = 2};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = connect_syn(h);
    pd_advance_ms(h, 1000);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    pd_advance_ms(h, 2000);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    pd_advance_ms(h, 3999);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(t), -ETIMEDOUT);
    hp_tcp_close(t);
}

/* RFC 5681 3.1: after a lost SYN the initial window is one segment. */
PD_TEST(tcp_syn_sent_lost_syn_one_segment_window)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_advance_ms(h, 1000);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts 500 *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 20000), 20000);
    pd_expect_data(h, ".", 1, 1, PD_ANY, pd_full(h), NULL);
    pd_expect_none(h);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_LE(i.cwnd, 1460u);
    HP_CHECK_GE(i.cwnd, pd_full(h));
    hp_tcp_abort(t);
}

/* A SYN-ACK without options: no timestamps or scaling, MSS as given. */
PD_TEST(tcp_syn_sent_synack_without_options)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in(h, "S.", 0, 1, 5000, "mss 536");
    pd_expect(h, ".", 1, 1, PD_ANY, "");
    HP_CHECK_LE(h->last.win, 65535);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(!i.ts_ok && !i.ws_ok);
    HP_CHECK_EQ(i.snd_wnd, 5000);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 1000), 1000);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 536, "");
    pd_expect_data(h, ".", 537, 1, PD_ANY, 464, "");
    /* Unscaled windows both ways: the peer's 1-byte units. */
    pd_in(h, ".", 1, 1001, 100, "");
    i = pd_info(h, t);
    HP_CHECK_EQ(i.snd_wnd, 100);
    hp_tcp_abort(t);
}

/* connect() without a route or to a bad address. */
PD_TEST(tcp_syn_sent_connect_errors)
{
    struct hp_tcp_sock *t = hp_tcp_open(h->s, h->family, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_sockaddr far;
    memset(&far, 0, sizeof far);
    far.family = (uint8_t)h->family;
    far.port = 80;
    if (h->family == 4)
        memcpy(far.addr, (const uint8_t[]){203, 0, 113, 1}, 4);
    else
        memcpy(far.addr, (const uint8_t[]){0x20, 0x01, 0x0d, 0xb8, [15] = 1}, 16);
    HP_CHECK_EQ(hp_tcp_connect(t, &far), -EHOSTUNREACH);
    hp_tcp_close(t);
    pd_expect_none(h);
}

/* RFC 9293 3.10.4 / 3.10.5: CLOSE or ABORT in SYN-SENT deletes the TCB,
 * sending nothing; the late SYN-ACK then finds no connection (RST). */
PD_TEST(tcp_syn_sent_close_before_established)
{
    struct hp_tcp_sock *t = connect_syn(h);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect_none(h);
    pd_advance_ms(h, 10000);
    pd_expect_none(h);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460");
    pd_expect(h, "R", 1, PD_ANY, PD_ANY, NULL);

    pd_use(h, PEER_PORT + 1, 1);
    struct hp_tcp_sock *u = pd_connect(h, NULL);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_abort(u), 0);
    pd_advance_ms(h, 10000);
    pd_expect_none(h);
}

/* Our ACK of the SYN-ACK was lost: the peer's retransmitted SYN-ACK is
 * acknowledged again; the connection is unharmed. */
PD_TEST(tcp_syn_sent_synack_retransmitted_after_established)
{
    struct hp_tcp_sock *t = connect_syn(h);
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts * *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    pd_advance_ms(h, 1000);
    pd_in_mut(h, "S.", 0, 1, 65535, 0, "mss 1460,sackok,ts * *,nop,ws 7", PD_MUT_NO_REBASE);
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100), 10);
}

/* Options of our SYN from the knobs: rcvbuf sets the window scale (RFC
 * 7323 2.3), MAXSEG the MSS, no_timestamps / no_window_scaling drop them. */
PD_TEST(tcp_syn_sent_options_from_knobs)
{
    pd_use(h, PEER_PORT, 1);
    struct hp_tcp_sock *t = hp_tcp_open(h->s, h->family, h->c);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_RCVBUF, 1 << 20), 0);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_MAXSEG, 1000), 0);
    struct hp_sockaddr to = pd_peer_addr(h, PEER_PORT);
    HP_CHECK_EQ(hp_tcp_connect(t, &to), -EINPROGRESS);
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, "mss 1000,sackok,ws 5,ts * 0");
    hp_tcp_abort(t);
    pd_use(h, PEER_PORT + 1, 1);
    t = hp_tcp_open(h->s, h->family, h->c);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_RCVBUF, 65535), 0);
    to.port = PEER_PORT + 1;
    HP_CHECK_EQ(hp_tcp_connect(t, &to), -EINPROGRESS);
    pd_expect(h, "S", 0, PD_ANY, 65535, "mss *,sackok,ws 0,ts * 0");
    hp_tcp_abort(t);
    HP_CHECK_EQ(hp_tcp_setopt(t = hp_tcp_open(h->s, h->family, NULL), HP_TCP_OPT_MAXSEG, 10),
                -EINVAL);
    hp_tcp_close(t);
}

PD_TEST(tcp_syn_sent_no_timestamps_no_scaling)
{
    struct hp_tcp_config cfg = {.no_timestamps = true, .no_window_scaling = true, .no_sack = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = pd_connect(h, NULL);
    char o[16];
    snprintf(o, sizeof o, "mss %u", h->mss);
    pd_expect(h, "S", 0, PD_ANY, 65535, o);
    /* The peer offers all three anyway: we use none. */
    pd_in(h, "S.", 0, 1, 65535, "mss 1460,sackok,ts 1 *,nop,ws 7");
    pd_expect(h, ".", 1, 1, PD_ANY, "");
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(!i.ts_ok && !i.ws_ok);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 10), 10);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 10, "");
    hp_tcp_abort(t);
}

/* Configuration rules: bad values, and no change once sockets exist. */
PD_TEST(tcp_syn_sent_configure_rules)
{
    struct hp_tcp_config bad1 = {.delack_ms = 500}, bad2 = {.rto_min_ms = 5000, .rto_max_ms = 1000},
                         bad3 = {.rcvbuf = 1000};
    HP_CHECK_EQ(hp_tcp_configure(h->s, &bad1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_configure(h->s, &bad2), -EINVAL);
    HP_CHECK_EQ(hp_tcp_configure(h->s, &bad3), -EINVAL);
    struct hp_tcp_config got;
    hp_tcp_get_config(h->s, &got);
    HP_CHECK_EQ(got.delack_ms, 40);
    HP_CHECK_EQ(got.delack_segs, 2);
    HP_CHECK_EQ(got.rto_initial_ms, 1000);
    HP_CHECK_EQ(got.rto_min_ms, 200);
    HP_CHECK_EQ(got.time_wait_ms, 60000);
    HP_CHECK_EQ(got.keepalive_idle_s, 7200);
    HP_CHECK_EQ(got.keepalive_intvl_s, 75);
    HP_CHECK_EQ(got.keepalive_probes, 9);
    HP_CHECK_EQ(got.syn_retries, 7);
    HP_CHECK_EQ(got.rcvbuf, 262144);
    HP_CHECK_EQ(got.sndbuf, 262144);
    struct hp_tcp_sock *t = hp_tcp_open(h->s, h->family, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_config ok = {.delack_ms = 10};
    HP_CHECK_EQ(hp_tcp_configure(h->s, &ok), -EBUSY);
    hp_tcp_close(t);
}

/* Two connections to the same peer get different ephemeral ports. */
PD_TEST(tcp_syn_sent_ephemeral_ports)
{
    pd_use(h, PEER_PORT, 1);
    struct hp_tcp_sock *a = pd_connect(h, NULL);
    uint16_t pa = h->c->lport;
    pd_expect(h, "S", 0, PD_ANY, PD_ANY, NULL);
    pd_use(h, PEER_PORT, 1)->lport = 0;
    struct hp_tcp_sock *b = pd_connect(h, NULL);
    HP_CHECK_NE(h->c->lport, pa);
    HP_CHECK_GE(h->c->lport, 1024);
    pd_discard(h);
    hp_tcp_abort(a);
    hp_tcp_abort(b);
}
