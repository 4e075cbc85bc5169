/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP in LISTEN and without a connection (RFC 9293 3.10.7.1-2): SYN-ACK options, RSTs, SYN cookies (RFC 4987), malformed segments. */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080

/* The options our SYN-ACK must carry in answer to PD_SYN_OPTS sent at
 * time 0: our MSS, window scale 3 (the smallest shift that fits the
 * default rcvbuf of 262144 in 16 bits, RFC 7323 2.3), timestamps echoing
 * TSval 100, SACK-permitted (the SYN offered it, RFC 2018 2). */
static void expect_synack_full(struct pd *h)
{
    char o[80];
    snprintf(o, sizeof o, "mss %u,sackok,ws 3,ts * 100", h->mss);
    pd_expect(h, "S.", 0, 1, PD_ANY, o);
}

/* RFC 9293 3.10.7.2: SYN -> SYN-ACK; the final ACK makes a connection to
 * accept, ESTABLISHED, with the negotiated options. */
PD_TEST(tcp_listen_syn_gets_synack_then_accept)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    HP_CHECK_EQ(hp_tcp_state(l), HP_TCP_LISTEN);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    HP_CHECK(h->last.win > 0); /* never scaled in a SYN (RFC 7323 2.2) */
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL && errno == EAGAIN);
    HP_CHECK_EQ(pd_events(h, h) & HP_EV_IN, 0);

    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK(pd_events(h, h) & HP_EV_IN);
    struct hp_sockaddr peer;
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, &peer);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(peer.family, h->family);
    HP_CHECK_EQ(peer.port, 40000);
    HP_CHECK_MEMEQ(peer.addr, h->peer_ip, h->family == 4 ? 4 : 16);
    struct hp_sockaddr me;
    hp_tcp_local(t, &me);
    HP_CHECK_EQ(me.port, PORT);
    HP_CHECK_MEMEQ(me.addr, h->our_ip, h->family == 4 ? 4 : 16);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.ts_ok);
    HP_CHECK(i.ws_ok);
    HP_CHECK_EQ(i.snd_wscale, 7);
    HP_CHECK_EQ(i.rcv_wscale, 3);
    HP_CHECK_EQ(i.snd_wnd, 1000u << 7);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL && errno == EAGAIN);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PASSIVE_OPENS), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_OUT_RSTS), 0);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* RFC 7323 2.2 / 3.2, RFC 2018 2: what the SYN did not offer, the SYN-ACK
 * does not carry; without an MSS option the peer's MSS is 536 (IPv4,
 * RFC 9293 3.7.1) or 1220 (IPv6, RFC 8200 8.3). */
PD_TEST(tcp_listen_synack_mirrors_a_bare_syn)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    pd_in(h, "S", 0, 0, 8192, "");
    char o[32];
    snprintf(o, sizeof o, "mss %u", h->mss);
    pd_expect(h, "S.", 0, 1, PD_ANY, o);
    pd_in(h, ".", 1, 1, 65535, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(!i.ts_ok);
    HP_CHECK(!i.ws_ok);
    HP_CHECK_EQ(i.snd_wnd, 65535);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 3000), 3000);
    uint32_t dflt = h->family == 4 ? 536 : 1220;
    pd_expect_data(h, ".", 1, 1, PD_ANY, dflt, "");
    pd_expect_data(h, ".", 1 + dflt, 1, PD_ANY, dflt, "");
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* The peer's MSS option bounds our segments; a peer MSS above ours does
 * not raise them. */
PD_TEST(tcp_listen_peer_mss_bounds_segments)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    struct hp_tcp_sock *t = pd_passive_open(h, l, "mss 1000,sackok,ts * 0,nop,ws 7");
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 2000), 2000);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 988, "ts * ="); /* 1000 - 12 (RFC 6691) */
    pd_expect_data(h, ".", 989, 1, PD_ANY, 988, NULL);
    hp_tcp_abort(t);
    pd_discard(h);
    /* A jumbo MSS from the peer: our own MTU still bounds us. */
    pd_use(h, 40001, 5000);
    h->c->lport = PORT;
    t = pd_passive_open(h, l, "mss 9000,ts * 0,nop,ws 7");
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 4000), 4000);
    pd_expect_data(h, ".", 1, 1, PD_ANY, h->mss - 12u, NULL);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* RFC 9293 3.10.7.2: in LISTEN an ACK is bad: <SEQ=SEG.ACK><CTL=RST>. */
PD_TEST(tcp_listen_ack_gets_rst)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    pd_in(h, ".", 1000, 5000, 65535, "");
    pd_expect(h, "R", 5000, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(h->last.len, 0);
    /* Data with an ACK: the same. */
    pd_in_data(h, "P.", 1000, 123456789, 65535, 100, "");
    pd_expect(h, "R", 123456789, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_OUT_RSTS), 2);
    HP_CHECK_EQ(hp_tcp_state(l), HP_TCP_LISTEN);
    hp_tcp_close(l);
}

/* RFC 9293 3.10.7.2: a RST in LISTEN is ignored; the listener still works. */
PD_TEST(tcp_listen_rst_ignored)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    pd_in(h, "R", 0, 0, 0, "");
    pd_in(h, "R.", 0, 77, 0, "");
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_OUT_RSTS), 0);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    hp_tcp_close(l);
}

/* RFC 9293 3.10.7.1 (CLOSED): without ACK, <SEQ=0><ACK=SEG.SEQ+SEG.LEN>
 * <CTL=RST,ACK>, SYN and FIN counting in SEG.LEN; with ACK,
 * <SEQ=SEG.ACK><CTL=RST>; a RST gets nothing. */
PD_TEST(tcp_closed_port_gets_rst)
{
    pd_use(h, 40000, 1000000)->lport = 9; /* nobody listens on 9 */
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    /* Our ISN is unknown on this connection: seq is absolute. */
    pd_expect(h, "R.", 0, 1, PD_ANY, "");
    pd_in_data(h, "P", 10, 0, 65535, 300, "");
    pd_expect(h, "R.", 0, 310, PD_ANY, "");
    pd_in(h, "F", 20, 0, 65535, "");
    pd_expect(h, "R.", 0, 21, PD_ANY, "");
    pd_in(h, "S", 0x7FFFFFF0, 0, 65535, ""); /* a new incarnation: seq 0 relative to it */
    pd_expect(h, "R.", 0, 1, PD_ANY, "");
    pd_in(h, ".", 1, 777, 65535, "");
    pd_expect(h, "R", 777, PD_ANY, PD_ANY, "");
    pd_in_data(h, "FP.", 1, 0xFFFFFFFF, 65535, 10, "");
    pd_expect(h, "R", 0xFFFFFFFF, PD_ANY, PD_ANY, "");
    pd_in(h, "R", 1, 0, 0, "");
    pd_in(h, "R.", 1, 5, 0, "");
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_OUT_RSTS), 6);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_NO_PORT), 6);
}

/* A listener on another port does not answer for port 9; a SYN to the
 * listener from the same peer works. */
PD_TEST(tcp_closed_port_next_to_listener)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_use(h, 40001, 1)->lport = 9;
    pd_in(h, "S", 0, 0, 65535, "");
    pd_expect(h, "R.", 0, 1, PD_ANY, "");
    pd_use(h, 40002, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    expect_synack_full(h);
    hp_tcp_close(l);
}

/* RFC 4987 3.6: beyond the backlog, SYNs get SYN cookies. The cookie
 * SYN-ACK offers what a queued one would (MSS, window scale, timestamps,
 * SACK-permitted: the options ride in its TSval's low bits, tcp_cookie.h),
 * and a valid cookie ACK makes an established connection to accept with
 * all of them; a forged one gets a RST and is counted. */
PD_TEST(tcp_listen_syn_flood_syncookies)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 2);
    for (int i = 0; i < 2; i++) {
        pd_use(h, (uint16_t)(41000 + i), 1000u * (uint32_t)i)->lport = PORT;
        pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
        expect_synack_full(h);
    }
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 0);
    /* The SYN queue is full (of young entries: nothing stale to drop). */
    pd_use(h, 41002, 777777)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    const struct pd_seg *g = pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 100");
    HP_CHECK(g->opt.mss >= 536 && g->opt.mss <= h->mss);
    HP_CHECK_EQ(g->opt.ts_val & 0xF, 7);     /* the peer's shift, in the cookie */
    HP_CHECK_EQ(g->opt.ts_val & 0x30, 0x10); /* SACK agreed, ECN not asked for */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 0);
    /* Nothing was kept: no retransmission of the cookie SYN-ACK. */
    pd_advance_ms(h, 500);
    pd_discard(h); /* (the two queued connections may retransmit theirs) */
    HP_CHECK(pd_ts_ok(h->c));
    HP_CHECK(pd_ws_ok(h->c));
    pd_in(h, ".", 1, 1, 1000, NULL); /* with "ts * *": the cookie TSval echoed */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 1);
    HP_CHECK(pd_events(h, h) & HP_EV_IN);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.ts_ok);
    HP_CHECK(i.ws_ok);
    HP_CHECK(i.sack_ok);
    HP_CHECK(!i.ecn_ok);
    HP_CHECK_EQ(i.snd_wscale, 7);
    HP_CHECK_EQ(i.rcv_wscale, 3);
    /* It carries data both ways, windows scaled (1000 << 7 from the peer). */
    pd_in_data(h, "P.", 1, 1, 1000, 100, NULL);
    pd_expect(h, ".", 1, 101, PD_ANY, "ts * *");
    HP_CHECK_EQ(pd_read(h, t, 200), 100);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 3000), 3000);
    uint32_t f = pd_full(h);
    pd_expect_data(h, ".", 1, 101, PD_ANY, f, "ts * *");
    pd_expect_data(h, ".", 1 + f, 101, PD_ANY, f, "ts * *");
    pd_expect_data(h, "P.", 1 + 2 * f, 101, PD_ANY, 3000 - 2 * f, "ts * *");
    /* A forged cookie (the ACK of a SYN-ACK that was never sent, with
     * data), or a cookie SYN-ACK answered with the wrong number: while
     * cookies are out, dropped and counted, not reset (below). */
    pd_use(h, 41003, 31337)->lport = PORT;
    pd_in_data(h, "P.", 1, 0x12345678, 65535, 10, "");
    pd_expect_none(h);
    pd_use(h, 41004, 4242)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *");
    pd_in(h, "F.", 1, 2, 65535, "");
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_FAILED), 2);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 1);
    /* A real client whose ACK and first data were lost: its later data
     * and a duplicate ACK (sequence numbers past ISN + 1) fail the check
     * and are dropped; the first data's retransmission passes it. */
    pd_use(h, 41005, 5000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *");
    pd_in_data(h, "P.", 1 + 700, 1, 65535, 300, "");
    pd_in(h, ".", 1 + 1000, 1, 65535, "");
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_FAILED), 4);
    pd_in_data(h, "P.", 1, 1, 65535, 700, "");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 2);
    struct hp_tcp_sock *v = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(v != NULL);
    HP_CHECK_EQ(pd_read(h, v, 1000), 700);
    pd_advance_ms(h, 50); /* the delayed ACK */
    pd_expect(h, ".", 1, 701, PD_ANY, "");
    hp_tcp_abort(v);
    /* Two slots (128 s) after the last cookie, a bare ACK is reset again. */
    pd_advance_ms(h, 129000);
    pd_discard(h);
    pd_use(h, 41006, 6000)->lport = PORT;
    pd_in(h, ".", 1, 0x2345, 65535, "");
    pd_expect(h, "R", 0x2345, PD_ANY, PD_ANY, "");
    pd_in_data(h, "P.", 1, 0x2345, 65535, 10, "");
    pd_expect(h, "R", 0x2345, PD_ANY, PD_ANY, "");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_FAILED), 6);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    hp_tcp_abort(t);
    hp_tcp_close(l);
}

/* A SYN without timestamps leaves the cookie nowhere to hide options: its
 * SYN-ACK offers the MSS alone, and the connection has no window scaling
 * (whatever the SYN asked); one with timestamps but no window scale gets
 * timestamps and no scaling. */
PD_TEST(tcp_listen_syncookie_without_timestamps)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_use(h, 41001, 500)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *");
    pd_in(h, ".", 1, 1, 65535, "");
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(!i.ts_ok);
    HP_CHECK(!i.ws_ok);
    pd_use(h, 41002, 900)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,ts 100 0");
    const struct pd_seg *g = pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,ts * 100");
    HP_CHECK_EQ(g->opt.ts_val & 0xF, 15); /* no window scaling in the cookie */
    pd_in(h, ".", 1, 1, 65535, NULL);
    struct hp_tcp_sock *u = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(u != NULL);
    i = pd_info(h, u);
    HP_CHECK(i.ts_ok);
    HP_CHECK(!i.ws_ok);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 2);
    hp_tcp_abort(t);
    hp_tcp_abort(u);
    pd_discard(h);
    hp_tcp_close(l);
}

/* ECN and SACK in a cookie (RFC 3168 6.1.1, RFC 2018 2): an ECN-setup SYN
 * (ECE and CWR) beyond the backlog gets an ECN-setup cookie SYN-ACK (ECE
 * without CWR) with bit 5 of its TSval set, and the cookie ACK makes an
 * ECN connection whose new data goes ECT(0); a SYN with ECE alone is no
 * ECN-setup SYN: neither the flag nor the bit. */
PD_TEST(tcp_listen_syncookie_ecn)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_use(h, 41001, 500)->lport = PORT;
    pd_in(h, "SEW", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    const struct pd_seg *g = pd_expect(h, "SE.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 100");
    HP_CHECK_EQ(g->opt.ts_val & 0x3F, 0x37); /* shift 7, SACK, ECN */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 1);
    pd_in(h, ".", 1, 1, 1000, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 1);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.ecn_ok && i.sack_ok && i.ts_ok && i.ws_ok);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ECN_NEGOTIATED), 1);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    HP_CHECK_EQ(h->last.ecn, 2); /* ECT(0) */
    pd_use(h, 41002, 900)->lport = PORT;
    pd_in(h, "SE", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    g = pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 100");
    HP_CHECK_EQ(g->opt.ts_val & 0x3F, 0x17);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *u = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(u != NULL);
    HP_CHECK(!pd_info(h, u).ecn_ok);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ECN_NEGOTIATED), 1);
    hp_tcp_abort(t);
    hp_tcp_abort(u);
    pd_discard(h);
    hp_tcp_close(l);
}

/* The knobs rule a cookie as they rule a queued SYN: with no_sack and ECN
 * off, a cookie SYN-ACK to an ECN-setup SYN offering SACK has neither ECE
 * nor SACK-permitted, nor their TSval bits, and its connection neither. */
PD_TEST(tcp_listen_syncookie_no_sack_no_ecn)
{
    struct hp_tcp_config cfg = {.no_sack = true, .ecn = HP_TCP_ECN_OFF};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_use(h, 41001, 500)->lport = PORT;
    pd_in(h, "SEW", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    const struct pd_seg *g = pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,ws 3,ts * 100");
    HP_CHECK_EQ(g->opt.ts_val & 0x3F, 0x07);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(!i.ecn_ok && !i.sack_ok);
    HP_CHECK(i.ts_ok && i.ws_ok);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 1);
    hp_tcp_abort(t);
    pd_discard(h);
    hp_tcp_close(l);
}

/* An entry made under pressure (cookie ISS) from an ECN-setup SYN with
 * SACK-permitted: its SYN-ACKs carry SACK and ECN in their TSval's low
 * bits (hp__tcp_embryo_ts), so that, dropped as stale after 3 s, its
 * client's late ACK still makes an ECN and SACK connection. */
PD_TEST(tcp_listen_stale_entry_keeps_sack_and_ecn)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 2);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_use(h, 41001, 1000)->lport = PORT;
    pd_in(h, "SEW", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    const struct pd_seg *g = pd_expect(h, "SE.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 100");
    HP_CHECK_EQ(g->opt.ts_val & 0x3F, 0x37);
    pd_advance_ms(h, 3000); /* two retransmissions each: 41001 is stale */
    HP_CHECK_EQ(pd_discard(h), 4);
    pd_use(h, 41002, 2000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 3100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 3100");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 1);
    pd_use(h, 41001, 1000);
    pd_in(h, ".", 1, 1, 1000, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 1);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.ecn_ok && i.sack_ok && i.ts_ok && i.ws_ok);
    HP_CHECK_EQ(i.snd_wscale, 7);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 100, NULL);
    HP_CHECK_EQ(h->last.ecn, 2);
    hp_tcp_abort(t);
    pd_discard(h);
    hp_tcp_close(l);
}

/* A full SYN queue (RFC 4987 4.1): entries made once it is half full have a
 * cookie for ISS and carry their options in their SYN-ACK's TSval, like a
 * cookie SYN-ACK; one of them unanswered for 3 s gives its place to a new
 * SYN, which then gets a queued handshake rather than a cookie, and its
 * client's late ACK still makes the connection (a valid cookie ACK). An
 * entry with an ordinary ISS goes only after 7 s unanswered, and its late
 * ACK then finds nothing (a RST). */
PD_TEST(tcp_listen_stale_syn_entries_make_room)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    for (int i = 0; i < 4; i++) {
        pd_use(h, (uint16_t)(41000 + i), 1000u * (uint32_t)i)->lport = PORT;
        pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
        const struct pd_seg *g = pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
        /* From the third on (the queue half full), the TSval's low bits
         * carry the peer's window shift and SACK-permitted. */
        if (i >= 2)
            HP_CHECK_EQ(g->opt.ts_val & 0x3F, 0x17);
    }
    /* Full, nothing stale yet: a cookie. */
    pd_use(h, 41004, 4000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 100");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 1);
    /* At 1 s every SYN-ACK went again; at 3 s again, and 41002, the oldest
     * entry with a cookie ISS, gives its place to the next SYN. */
    pd_advance_ms(h, 1000);
    HP_CHECK_EQ(pd_discard(h), 4);
    pd_use(h, 41008, 8000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 1100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 1100"); /* a cookie */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 0);
    pd_advance_ms(h, 2000);
    HP_CHECK_EQ(pd_discard(h), 4);
    pd_use(h, 41005, 5000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 3100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 3100");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 2);
    /* 41002's client answers at last: its ACK is a good cookie ACK, and
     * its connection has window scaling, timestamps and SACK. */
    pd_use(h, 41002, 2000);
    pd_in(h, ".", 1, 1, 1000, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 1);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK(i.ts_ok && i.ws_ok && i.sack_ok);
    HP_CHECK_EQ(i.snd_wscale, 7);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100), 10);
    /* An ordinary ISS (41000, 41001) waits 7 s (three retransmissions):
     * just before, the next SYN takes the place of 41003, the other
     * cookie entry, behind them; at 7 s, that of 41000. */
    pd_advance_ms(h, 3999);
    pd_discard(h);
    pd_use(h, 41006, 6000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 7000 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 7000");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 2);
    pd_use(h, 41003, 3000);
    pd_in(h, ".", 1, 1, 1000, NULL); /* a good cookie ACK: a connection */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_OK), 2);
    pd_advance_ms(h, 1);
    pd_discard(h);
    pd_use(h, 41007, 7000)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 7100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 7100");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 3);
    /* The one that went was 41000, the oldest: its late ACK and data find
     * nothing (while cookies are out: dropped, not reset). */
    pd_use(h, 41000, 0);
    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    pd_expect_none(h);
    struct hp_tcp_sock *u = hp_tcp_accept(l, NULL, NULL);
    HP_REQUIRE(u != NULL);
    hp_tcp_abort(t);
    hp_tcp_abort(u);
    pd_discard(h);
    hp_tcp_close(l);
}

/* An entry whose handshake ACK came while the accept queue was full waits
 * for room, its SYN-ACK timer running: however old, it is not stale (its
 * peer thinks itself connected), and a SYN beyond a full queue of such
 * entries gets a cookie. */
PD_TEST(tcp_listen_acked_entries_are_not_stale)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_use(h, 41000, 100)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_in(h, ".", 1, 1, 1000, NULL); /* established, not accepted: the accept queue is full */
    pd_use(h, 41001, 200)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_in(h, ".", 1, 1, 1000, NULL); /* dropped: LISTEN_OVERFLOWS */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_LISTEN_OVERFLOWS), 1);
    pd_advance_ms(h, 7000); /* three SYN-ACK retransmissions */
    pd_discard(h);
    pd_use(h, 41002, 300)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 7100 0,nop,ws 7");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,sackok,ws 3,ts * 7100");
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 1);
    /* Once accepted, the waiting one completes at its peer's next segment. */
    struct hp_tcp_sock *t = hp_tcp_accept(l, h, NULL);
    HP_REQUIRE(t != NULL);
    pd_use(h, 41001, 200);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    struct hp_tcp_sock *u = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(u != NULL);
    HP_CHECK_EQ(hp_tcp_state(u), HP_TCP_ESTABLISHED);
    hp_tcp_abort(t);
    hp_tcp_abort(u);
    pd_discard(h);
    hp_tcp_close(l);
}

/* With no_syncookies, a SYN beyond the backlog is dropped and counted. */
PD_TEST(tcp_listen_no_syncookies_drops)
{
    struct hp_tcp_config cfg = {.no_syncookies = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_use(h, 40001, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    pd_in(h, "S", 0, 0, 65535, "mss 1460");
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYN_QUEUE_DROPS), 2);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_SYNCOOKIES_SENT), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_OUT_RSTS), 0);
    hp_tcp_close(l);
}

/* Completed connections beyond the backlog wait: the final ACK is dropped
 * (counted) and the connection stays in SYN_RECEIVED, to complete once
 * the application accepted. */
PD_TEST(tcp_listen_accept_queue_overflow)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 1);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_use(h, 41001, 2)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    expect_synack_full(h);
    pd_in(h, ".", 1, 1, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_LISTEN_OVERFLOWS), 1);
    struct hp_tcp_sock *a = hp_tcp_accept(l, NULL, NULL);
    HP_REQUIRE(a != NULL);
    struct hp_sockaddr p;
    hp_tcp_peer(a, &p);
    HP_CHECK_EQ(p.port, 41000);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    /* The peer's next ACK (here: data) completes the second one. */
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    struct hp_tcp_sock *b = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(b != NULL);
    hp_tcp_peer(b, &p);
    HP_CHECK_EQ(p.port, 41001);
    HP_CHECK_EQ(pd_read(h, b, 100), 10);
    hp_tcp_abort(a);
    hp_tcp_abort(b);
    hp_tcp_close(l);
}

/* Closing a listener resets the connections in both of its queues
 * (<SEQ=SND.NXT><CTL=RST>, RFC 9293 3.10.4 / 3.10.5). */
PD_TEST(tcp_listen_close_resets_queued)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 8);
    pd_use(h, 41000, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 1, 1000, NULL); /* established, not accepted */
    pd_use(h, 41001, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS); /* in SYN_RECEIVED */
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    hp_tcp_close(l);
    int seen = 0;
    for (int k = 0; k < 2; k++) {
        const struct pd_seg *g = pd_peek(h);
        HP_REQUIRE(g != NULL);
        pd_use(h, g->dport, 0);
        pd_expect(h, "R.?", 1, PD_ANY, PD_ANY, NULL);
        seen |= h->last.dport == 41000 ? 1 : 2;
    }
    HP_CHECK_EQ(seen, 3);
    pd_expect_none(h);
    /* Nobody listens any more. */
    pd_use(h, 41002, 1)->lport = PORT;
    pd_in(h, "S", 0, 0, 65535, "");
    pd_expect(h, "R.", 0, 1, PD_ANY, "");
}

/* Malformed segments are dropped and counted: bad checksum, bad option
 * lengths (RFC 9293 3.2 MUST-7: handled without crashing), SYN with FIN. */
PD_TEST(tcp_listen_bad_segments_dropped)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    pd_in_mut(h, "S", 0, 0, 65535, 0, PD_SYN_OPTS, PD_MUT_BAD_CKSUM);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_CSUM_ERRORS), 1);
    pd_in(h, "S", 0, 0, 65535, "raw 02 05 05 b4 00"); /* MSS of length 5 */
    pd_in(h, "S", 0, 0, 65535, "raw 01 01 08 00");    /* an option of length 0 */
    pd_in(h, "S", 0, 0, 65535, "raw 08 0a 00 00");    /* timestamps past the header */
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_BAD_OPTIONS), 3);
    pd_in(h, "SF", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_BAD_FLAGS), 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_OUT_RSTS), 0);
    /* An unknown option is fine (RFC 9293 3.2 MUST-6: ignored). */
    pd_in(h, "S", 0, 0, 65535, "mss 1460,raw fe 04 12 34,eol");
    char o[32];
    snprintf(o, sizeof o, "mss %u", h->mss);
    pd_expect(h, "S.", 0, 1, PD_ANY, o);
    hp_tcp_close(l);
}

/* API rules of a listener. */
PD_TEST(tcp_listen_api)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 0); /* clamped to 1 */
    HP_CHECK_EQ(hp_tcp_listen(l, 4), -EINVAL);
    struct hp_tcp_sock *o = hp_tcp_open(h->s, h->family, NULL);
    HP_REQUIRE(o != NULL);
    struct hp_sockaddr a = pd_our_addr(h, PORT);
    HP_CHECK_EQ(hp_tcp_bind(o, &a), -EADDRINUSE);
    struct hp_sockaddr far = pd_peer_addr(h, 1); /* not ours */
    HP_CHECK_EQ(hp_tcp_bind(o, &far), -EADDRNOTAVAIL);
    HP_CHECK_EQ(hp_tcp_listen(o, 4), 0); /* an ephemeral port */
    struct hp_sockaddr me;
    hp_tcp_local(o, &me);
    HP_CHECK(me.port != 0 && me.port != PORT);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL && errno == EAGAIN);
    HP_CHECK_EQ(hp_tcp_send(l, "x", 1), -ENOTCONN);
    hp_tcp_close(o);
    hp_tcp_close(l);
    /* The port is free again. */
    l = pd_listen(h, PORT, 1);
    hp_tcp_close(l);
}

/* Data on a SYN (no Fast Open here): whatever the SYN-ACK acknowledges is
 * delivered after the handshake; what it does not is not. */
PD_TEST(tcp_listen_data_on_syn)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in_data(h, "S", 0, 0, 65535, 20, "mss 1460,sackok,ts 100 0,nop,ws 7");
    const struct pd_seg *g = pd_expect(h, "S.", 0, PD_ANY, PD_ANY, NULL);
    uint32_t acked = g->rack - 1;
    HP_CHECK(acked == 0 || acked == 20);
    pd_in(h, ".", 1 + acked, 1, 1000, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    uint8_t buf[64];
    long n = hp_tcp_recv(t, buf, sizeof buf);
    HP_CHECK_EQ(n, acked ? 20 : -EAGAIN);
    hp_tcp_close(l);
}

/* RFC 9293 3.1: reserved bits are ignored on receipt; RFC 3168 6.1.1: an
 * ECN-setup SYN gets a non-ECN-setup SYN-ACK from a host without ECN; a
 * data offset below 5 is a malformed header (dropped, counted). */
PD_TEST(tcp_listen_header_bits)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 16);
    pd_in_mut(h, "S", 0, 0, 65535, 0, "mss 1460,sackok,ts 100 0,nop,ws 7", PD_MUT_RESERVED);
    expect_synack_full(h);
    pd_use(h, 40001, 5)->lport = PORT;
    pd_in(h, "SEW", 0, 0, 65535, "mss 1460,sackok,ts 100 0,nop,ws 7");
    /* An ECN-setup SYN: by default (passive ECN, as Linux) an ECN-setup
     * SYN-ACK, ECE without CWR (RFC 3168 6.1.1). */
    char o[80];
    snprintf(o, sizeof o, "mss %u,sackok,ws 3,ts * 100", h->mss);
    pd_expect(h, "SE.", 0, 1, PD_ANY, o);
    pd_use(h, 40002, 5)->lport = PORT;
    uint64_t errs = pd_ctr(h, HP_CTR_TCP_IN_ERRS);
    pd_in_mut(h, "S", 0, 0, 65535, 0, "", PD_MUT_DOFF4);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_ERRS), errs + 1);
    hp_tcp_close(l);
}

/* A tiny MSS from the peer is honoured (options count against it, RFC
 * 6691): every segment fits, the bytes arrive in order. */
PD_TEST(tcp_listen_tiny_peer_mss)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_passive_open(h, l, "mss 100,ts * 0,nop,ws 7");
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 500), 500);
    uint32_t end = 1;
    for (int round = 0; round < 20 && end < 501; round++) {
        const struct pd_seg *g;
        while ((g = pd_peek(h)) != NULL) {
            pd_expect_data(h, ".", end, 1, PD_ANY, PD_ANY, NULL);
            HP_CHECK_LE(h->last.len, 88);
            HP_CHECK_GT(h->last.len, 0);
            end += h->last.len;
        }
        pd_in(h, ".", 1, end, 1000, NULL);
    }
    HP_CHECK_EQ(end, 501);
    hp_tcp_close(l);
}

/* RFC 7323 2.3: a shift above 14 is used as 14. */
PD_TEST(tcp_listen_window_scale_clamped)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "S", 0, 0, 65535, "mss 1460,ts * 0,nop,ws 15");
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,ws 3,ts * =");
    pd_in(h, ".", 1, 1, 1, NULL);
    struct hp_tcp_sock *t = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_tcp_info i = pd_info(h, t);
    HP_CHECK_EQ(i.snd_wscale, 14);
    HP_CHECK_EQ(i.snd_wnd, 1u << 14);
    hp_tcp_close(l);
}

/* RFC 1122 4.2.3.10: a SYN from or to the subnet's broadcast address
 * (198.18.0.255 on our /24) gets no answer and is counted; the test runs
 * after the connection lookup (a connection's tuple is unicast), so this
 * is the path it guards. An established connection is not disturbed. */
PD_TEST_F(tcp_listen_directed_broadcast_dropped, PD_V4)
{
    static const uint8_t BCAST[4] = {198, 18, 0, 255};
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_passive_open(h, l, "mss 1460,ts * 0,nop,ws 7");
    const uint8_t *peer = h->peer_ip, *ours = h->our_ip;
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            h->peer_ip = BCAST; /* from the broadcast address */
        else
            h->our_ip = BCAST; /* to it */
        pd_use(h, (uint16_t)(41000 + k), 7)->lport = PORT;
        uint64_t errs = pd_ctr(h, HP_CTR_TCP_IN_ERRS);
        pd_in(h, "S", 0, 0, 65535, "mss 1460,ts 100 0,nop,ws 7");
        pd_expect_none(h);
        HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_IN_ERRS), errs + 1);
        h->peer_ip = peer;
        h->our_ip = ours;
    }
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    hp_tcp_close(t);
    hp_tcp_close(l);
}
