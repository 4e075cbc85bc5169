/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP closing (RFC 9293 3.6, 3.10.4-5, 3.10.7.4): FIN_WAIT_1/2, CLOSING, TIME_WAIT, CLOSE_WAIT, LAST_ACK, half-close, RST on close and abort, TIME_WAIT reuse. */
#include <errno.h>
#include <string.h>

#include "sock/tcp_internal.h"
#include "tcp_pd.h"

#define PORT 8080

static struct hp_tcp_sock *est(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    return pd_established(h, l);
}

/* Active close: FIN_WAIT_1 -> FIN_WAIT_2 -> TIME_WAIT -> CLOSED after
 * time_wait_ms (2 MSL, 60 s by default). */
PD_TEST(tcp_close_active)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_FIN_WAIT_1);
    HP_CHECK_EQ(hp_tcp_send(t, "x", 1), -EPIPE);
    pd_in(h, ".", 1, 2, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_FIN_WAIT_2);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    char buf[8];
    HP_CHECK_EQ(hp_tcp_recv(t, buf, sizeof buf), 0);
    HP_CHECK(pd_events(h, h->c) & HP_EV_IN);
    uint64_t t0 = pd_now_ms(h);
    pd_advance_ms(h, 60000 - 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(pd_now_ms(h) - t0, 60000);
    HP_CHECK(pd_events(h, h->c) & HP_EV_HUP);
    HP_CHECK_EQ(hp_tcp_error(t), 0);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ESTAB_RESETS), 0);
    hp_tcp_close(t);
}

/* The same with hp_tcp_close: the orphan finishes alone and is freed after
 * TIME_WAIT; a segment then finds no connection (RST). */
PD_TEST(tcp_close_active_orphan_freed)
{
    struct hp_tcp_config cfg = {.time_wait_ms = 5000};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(pd_send(h, t, 100), 100);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    /* The data, then the FIN (perhaps in the same segment). */
    const struct pd_seg *g = pd_expect_data(h, ".F?", 1, 1, PD_ANY, 100, NULL);
    if (!(g->flags & HP_TCP_F_FIN))
        pd_expect(h, "F.", 101, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 102, 1000, NULL);
    pd_in(h, "F.", 1, 102, 1000, NULL);
    pd_expect(h, ".", 102, 2, PD_ANY, NULL);
    pd_advance_ms(h, 4999);
    pd_in(h, ".", 2, 102, 1000, NULL); /* TIME_WAIT: a stray ACK is dropped or ACKed */
    pd_discard(h);
    pd_advance_ms(h, 1);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_TW_EXPIRED), 1);
    /* The wait ran in a compact record, the block freed at once. */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_COMPACTED), 1);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 0u);
    pd_in(h, ".", 2, 102, 1000, NULL);
    pd_expect(h, "R", 102, PD_ANY, PD_ANY, NULL);
    hp_tcp_close(l);
}

/* An orphan in TIME_WAIT: the peer's FIN acknowledged, our block freed,
 * and the rest of the wait in a compact record (tcp_tw.c). @return the
 * listener. Our sequence space: 1 is our FIN, 2 next; the peer's: its FIN
 * at 1, 2 next. */
static struct hp_tcp_sock *tw_record(struct pd *h)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    uint32_t blocks = hp__tcp(h->s)->blocks.nlive;
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_COMPACTED), 1);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 1u);
    HP_CHECK_EQ(hp__tcp(h->s)->blocks.nlive, blocks - 1);
    return l;
}

/* The record answers as the connection did in TIME_WAIT (RFC 9293
 * 3.10.7.4): a retransmitted FIN is acknowledged again and restarts the 2
 * MSL wait; text past the FIN and an ACK of what we never sent get our ACK;
 * a bare ACK in the window nothing; the wait then ends on time. */
PD_TEST(tcp_close_tw_record_answers_as_time_wait)
{
    struct hp_tcp_sock *l = tw_record(h);
    pd_advance_ms(h, 30000);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    pd_in_data(h, "P.", 2, 2, 1000, 10, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    pd_in(h, ".", 2, 50, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    pd_in(h, ".", 2, 2, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_EXPIRED), 0);
    pd_advance_ms(h, 59999); /* 60 s from the retransmitted FIN */
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 1u);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_EXPIRED), 1);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 0u);
    pd_expect_none(h);
    hp_tcp_close(l);
}

/* Hostile or stale segments at a record: an older TSval gets an ACK and is
 * dropped (PAWS, RFC 7323 5.3), one without a timestamp is dropped
 * silently (3.2), a RST in the window but not at RCV.NXT a challenge ACK
 * (RFC 5961 3.2), one out of the window nothing, a SYN with its ACK bit a
 * challenge ACK (4.2); a RST at RCV.NXT ends the wait, and the tuple is
 * then nobody's (a RST answers). */
PD_TEST(tcp_close_tw_record_survives_stale_and_forged)
{
    struct hp_tcp_sock *l = tw_record(h);
    uint32_t recent = h->c->last_peer_tsval;
    pd_in(h, ".", 2, 2, 1000, "ts 1 *");
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_PAWS_DROPS), 1);
    pd_in_data(h, "P.", 2, 2, 1000, 5, "");
    pd_expect_none(h);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_IN_BAD_OPTIONS), 1);
    pd_in(h, "R", 20, 0, 0, NULL);
    char o[32];
    snprintf(o, sizeof o, "ts * %u", recent); /* TS.Recent unmoved by the stale ones */
    pd_expect(h, ".", 2, 2, PD_ANY, o);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 1);
    pd_in(h, "R", 2000000, 0, 0, NULL);
    pd_expect_none(h);
    pd_advance_ms(h, 1000); /* past the per-tuple challenge ACK gap */
    pd_in_mut(h, "S.", 2, 2, 1000, 0, NULL, PD_MUT_NO_REBASE);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_CHALLENGE_ACKS), 2);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 1u);
    pd_in(h, "R", 2, 0, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 0u);
    pd_in(h, ".", 2, 2, 1000, NULL);
    pd_expect(h, "R", 2, PD_ANY, PD_ANY, NULL);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_EXPIRED), 0);
    hp_tcp_close(l);
}

/* A socket the user still holds stays whole in TIME_WAIT (its state and
 * end of stream answer); closing it moves the rest of its wait, not a new
 * 60 s, into a record. */
PD_TEST(tcp_close_held_time_wait_compacted_at_close)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_COMPACTED), 0);
    pd_advance_ms(h, 20000);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_COMPACTED), 1);
    pd_expect_none(h);
    pd_advance_ms(h, 39999);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 1u);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 0u);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_EXPIRED), 1);
    hp_tcp_close(l);
}

/* Records end in due order whatever their number, and the stack going
 * with records still waiting frees them (the sanitizers watch). */
PD_TEST(tcp_close_tw_records_expire_in_order)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 8);
    for (uint16_t k = 0; k < 5; k++) {
        pd_use(h, (uint16_t)(41000 + k), 1000u * k + 7)->lport = PORT;
        struct hp_tcp_sock *t = pd_established(h, l);
        HP_CHECK_EQ(hp_tcp_close(t), 0);
        pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
        pd_in(h, "F.", 1, 2, 1000, NULL);
        pd_expect(h, ".", 2, 2, PD_ANY, NULL);
        pd_advance_ms(h, 1000);
    }
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 5u);
    pd_advance_ms(h, 60000 - 5000); /* the first ended, 4 s left for the last */
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_TW_EXPIRED), 1);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 4u);
    pd_advance_ms(h, 2000);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 2u);
    /* With no socket left, a new configuration (a new table for a new
     * max_conns, a shorter time_wait_ms): the records move with the
     * tuples, a new one ends before them, and each on its own time. */
    hp_tcp_close(l);
    struct hp_tcp_config cfg = {.time_wait_ms = 500, .max_conns = 1000};
    pd_configure(h, &cfg);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 2u);
    pd_use(h, 41004, 4007);
    pd_in_data(h, "P.", 2, 2, 1000, 5, NULL); /* finds its record: our ACK */
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    l = pd_listen(h, PORT, 8);
    pd_use(h, 41100, 77)->lport = PORT;
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 3u);
    pd_advance_ms(h, 500);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 2u);
    pd_advance_ms(h, 500); /* 41003's, at 63 s */
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(h->s)->table), 1u);
    /* The last one is left to the stack's destruction. */
    hp_tcp_close(l);
}

/* Passive close: the peer's FIN is ACKed at once, CLOSE_WAIT, end of
 * stream for the reader; our FIN, LAST_ACK; its ACK, CLOSED. */
PD_TEST(tcp_close_passive)
{
    struct hp_tcp_sock *t = est(h);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    pd_in(h, "F.", 11, 1, 1000, NULL);
    const struct pd_seg *g = pd_peek(h);
    if (g && g->rack == 11)
        pd_expect(h, ".", 1, 11, PD_ANY, NULL); /* (the first ACK may go at once) */
    pd_expect(h, ".", 1, 12, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSE_WAIT);
    HP_CHECK(pd_events(h, h->c) & HP_EV_IN);
    HP_CHECK_EQ(pd_read(h, t, 100), 10);
    char buf[8];
    HP_CHECK_EQ(hp_tcp_recv(t, buf, sizeof buf), 0);
    HP_CHECK_EQ(hp_tcp_recv(t, buf, sizeof buf), 0);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 12, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_LAST_ACK);
    pd_in(h, ".", 12, 2, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK(pd_events(h, h->c) & HP_EV_HUP);
    HP_CHECK_EQ(hp_tcp_error(t), 0);
    hp_tcp_close(t);
}

/* LAST_ACK: our FIN is retransmitted with back-off until acknowledged;
 * the orphan is then freed. */
PD_TEST(tcp_close_last_ack_fin_retransmitted)
{
    /* The RTO's back-off, without a tail loss probe first (SACK off). */
    struct hp_tcp_config cfg = {.no_sack = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = est(h);
    pd_in(h, "F.", 1, 1, 1000, NULL);
    pd_expect(h, ".", 1, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect(h, "F.", 1, 2, PD_ANY, NULL);
    uint64_t first = h->last.at_ms;
    pd_advance_ms(h, 10000);
    pd_expect(h, "F.", 1, 2, PD_ANY, NULL);
    uint64_t second = h->last.at_ms;
    pd_expect(h, "F.", 1, 2, PD_ANY, NULL);
    HP_CHECK_GE(h->last.at_ms - second, 2 * (second - first) - 1);
    pd_discard(h);
    pd_in(h, ".", 2, 2, 1000, NULL);
    pd_advance_ms(h, 120000);
    pd_expect_none(h);
    pd_in(h, ".", 2, 2, 1000, NULL);
    pd_expect(h, "R", 2, PD_ANY, PD_ANY, NULL);
}

/* Simultaneous close: FIN_WAIT_1 gets the peer's FIN -> CLOSING; the ACK
 * of ours -> TIME_WAIT. */
PD_TEST(tcp_close_simultaneous)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, "F.", 1, 1, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSING);
    pd_in(h, ".", 2, 2, 1000, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    pd_advance_ms(h, 60000);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    hp_tcp_close(t);
}

/* A FIN that acknowledges ours in FIN_WAIT_1: straight to TIME_WAIT. */
PD_TEST(tcp_close_fin_ack_together)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
}

/* Half-close: after shutdown(WR) the peer's data still arrives and is
 * acknowledged; after the peer's FIN we may still send. */
PD_TEST(tcp_close_half_close)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 2, 1000, NULL);
    uint32_t f = pd_full(h);
    for (uint32_t k = 0; k < 4; k++)
        pd_in_data(h, ".", 1 + k * f, 2, 1000, f, NULL);
    pd_advance_ms(h, 40);
    const struct pd_seg *g;
    while ((g = pd_peek(h)) && g->rack != 1 + 4 * f)
        pd_expect(h, ".", 2, PD_ANY, PD_ANY, NULL);
    pd_expect(h, ".", 2, 1 + 4 * f, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 100000), 4 * f);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_FIN_WAIT_2);
    pd_discard(h);
    pd_in(h, "F.", 1 + 4 * f, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2 + 4 * f, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);

    /* The other way: the peer closed first, we keep sending. */
    pd_use(h, 40001, 77)->lport = PORT;
    struct hp_tcp_sock *l2 = pd_listen(h, PORT + 1, 4);
    (void)l2;
    h->c->lport = PORT + 1;
    struct hp_tcp_sock *u = pd_established(h, l2);
    pd_in(h, "F.", 1, 1, 1000, NULL);
    pd_expect(h, ".", 1, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_setopt(u, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, u, 2 * f), 2 * f);
    pd_expect_data(h, ".", 1, 2, PD_ANY, f, NULL);
    pd_expect_data(h, ".", 1 + f, 2, PD_ANY, f, NULL);
    pd_in(h, ".", 2, 1 + 2 * f, 1000, NULL);
    HP_CHECK_EQ(hp_tcp_state(u), HP_TCP_CLOSE_WAIT);
    HP_CHECK_EQ(hp_tcp_close(u), 0);
    pd_expect(h, "F.", 1 + 2 * f, 2, PD_ANY, NULL);
    pd_in(h, ".", 2, 2 + 2 * f, 1000, NULL);
    pd_expect_none(h);
}

/* Closing with unread data resets (RFC 9293 3.10.4 leaves it open; like
 * Linux, per hp_tcp_close): <SEQ=SND.NXT><CTL=RST>. */
PD_TEST(tcp_close_with_unread_data_resets)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(pd_send(h, t, 50), 50);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 50, NULL);
    pd_in_data(h, "P.", 1, 51, 1000, 100, NULL);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    const struct pd_seg *g = pd_peek(h);
    if (g && !(g->flags & HP_TCP_F_RST))
        pd_expect(h, ".", 51, PD_ANY, PD_ANY, NULL); /* (the ACK of the data, if due) */
    pd_expect(h, "R.?", 51, PD_ANY, PD_ANY, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_ABORT_ON_CLOSE), 1);
    pd_in_data(h, "P.", 101, 51, 1000, 10, NULL);
    pd_expect(h, "R", 51, PD_ANY, PD_ANY, NULL);
}

/* hp_tcp_abort and LINGER0: a RST at once, <SEQ=SND.NXT> (RFC 9293 3.10.5),
 * queued data discarded. */
PD_TEST(tcp_close_abort_and_linger0)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    HP_CHECK_EQ(pd_send(h, t, 500), 500);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 500, NULL);
    HP_CHECK_EQ(hp_tcp_abort(t), 0);
    pd_expect(h, "R.?", 501, PD_ANY, PD_ANY, NULL);
    pd_advance_ms(h, 10000);
    pd_expect_none(h);

    pd_use(h, 40001, 5)->lport = PORT;
    struct hp_tcp_sock *l = pd_listen(h, PORT + 1, 4);
    h->c->lport = PORT + 1;
    struct hp_tcp_sock *u = pd_established(h, l);
    HP_CHECK_EQ(hp_tcp_setopt(u, HP_TCP_OPT_LINGER0, 1), 0);
    HP_CHECK_EQ(hp_tcp_close(u), 0);
    pd_expect(h, "R.?", 1, PD_ANY, PD_ANY, NULL);
    pd_advance_ms(h, 10000);
    pd_expect_none(h);
}

/* RFC 9293 3.10.7.4 TIME-WAIT: a retransmitted FIN is acknowledged again
 * and restarts the 2 MSL timer. */
PD_TEST(tcp_close_time_wait_fin_retransmit_restarts_timer)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    pd_advance_ms(h, 30000);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, ".", 2, 2, PD_ANY, NULL);
    pd_advance_ms(h, 59999);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    pd_advance_ms(h, 1);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
}

/* RFC 9293 3.10.7.4 TIME-WAIT / RFC 6191: a SYN with a higher sequence
 * number (and a newer timestamp) opens a new connection; one with an
 * older one does not. */
PD_TEST(tcp_close_time_wait_syn_reopens)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    pd_in_data(h, "P.", 1, 1, 1000, 100, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_discard(h);
    /* (the ACK of the data may precede the FIN) */
    pd_in(h, "F.", 101, 2, 1000, NULL);
    pd_expect(h, ".", 2, 102, PD_ANY, NULL);
    uint32_t old_isn = h->c->our_isn;
    pd_advance_ms(h, 1000);
    /* An old SYN (lower number, older timestamp): no new connection. */
    pd_in_mut(h, "S", 50, 0, 65535, 0, "mss 1460,sackok,ts 50 0,nop,ws 7", PD_MUT_NO_REBASE);
    const struct pd_seg *g = pd_peek(h);
    if (g)
        HP_CHECK(!(g->flags & HP_TCP_F_SYN));
    pd_discard(h);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    /* A new incarnation: seq beyond the old, newer timestamp. */
    pd_in(h, "S", 100000, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, NULL);
    HP_CHECK(h->c->our_isn != old_isn);
    pd_in(h, ".", 1, 1, 1000, NULL);
    struct hp_tcp_sock *u = hp_tcp_accept(l, h->c, NULL);
    HP_REQUIRE(u != NULL);
    HP_CHECK_EQ(hp_tcp_state(u), HP_TCP_ESTABLISHED);
    HP_CHECK_GE(pd_ctr(h, HP_CTR_TCP_TW_REUSED), 1);
    pd_in_data(h, "P.", 1, 1, 1000, 10, NULL);
    HP_CHECK_EQ(pd_read(h, u, 100), 10);
}

/* An orphan in FIN_WAIT_2 whose peer never closes is freed after
 * fin_wait2_ms. */
PD_TEST(tcp_close_fin_wait2_orphan_timeout)
{
    struct hp_tcp_config cfg = {.fin_wait2_ms = 10000};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 2, 1000, NULL);
    pd_advance_ms(h, 9999);
    /* Still there: an unacceptable segment gets an ACK (RFC 9293 3.10.7.4). */
    pd_in(h, ".", 1 + 500000, 2, 1000, NULL);
    pd_expect(h, ".", 2, 1, PD_ANY, NULL);
    pd_advance_ms(h, 1);
    pd_expect_none(h);
    pd_in(h, "F.", 1, 2, 1000, NULL);
    pd_expect(h, "R", 2, PD_ANY, PD_ANY, NULL);
}

/* RFC 9293 3.6.1 (SHLD-2), RFC 1122 4.2.2.13: with the half-duplex close
 * hp_tcp_close implements (unread data resets), new data arriving after
 * the close also gets a RST, to show it was lost. */
PD_TEST(tcp_close_data_after_close_resets)
{
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 2, 1000, NULL);
    pd_in_data(h, "P.", 1, 2, 1000, 10, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, "R.?", 2, PD_ANY, PD_ANY, NULL);
}

/* A FIN that arrives before the data it follows waits its turn. */
PD_TEST(tcp_close_out_of_order_fin)
{
    struct hp_tcp_sock *t = est(h);
    pd_in(h, "F.", 101, 1, 1000, NULL);
    pd_expect(h, ".", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(hp_tcp_recv(t, (char[8]){0}, 8), -EAGAIN);
    pd_in_data(h, "P.", 1, 1, 1000, 100, NULL);
    const struct pd_seg *g = pd_expect(h, ".", 1, PD_ANY, PD_ANY, NULL);
    if (g->rack != 102)
        pd_fail(h, "the FIN held out of order was not taken when the hole filled (ack %u)",
                g->rack);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSE_WAIT);
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    HP_CHECK_EQ(hp_tcp_recv(t, (char[8]){0}, 8), 0);
}

/* Data and FIN queued at close go in order; the FIN after the last byte. */
PD_TEST(tcp_close_flushes_queued_data_then_fin)
{
    struct hp_tcp_sock *t = est(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 3 * f + 10), 3 * f + 10);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    uint32_t end = 1;
    bool fin = false;
    for (int round = 0; round < 5 && !fin; round++) {
        const struct pd_seg *g;
        while ((g = pd_peek(h)) != NULL) {
            pd_expect_data(h, ".F?", end, 1, PD_ANY, PD_ANY, NULL);
            end += h->last.len;
            if (h->last.flags & HP_TCP_F_FIN) {
                fin = true;
                HP_CHECK_EQ(end, 1 + 3 * f + 10);
            }
        }
        pd_in(h, ".", 1, end, 1000, NULL);
    }
    HP_CHECK(fin);
}

/* The client side closes first: TIME_WAIT is on the side that connected. */
PD_TEST(tcp_close_active_by_client)
{
    pd_use(h, PORT, 1000);
    struct hp_tcp_sock *t = pd_active_open(h, NULL);
    HP_CHECK_EQ(pd_send(h, t, 10), 10);
    pd_expect_data(h, ".", 1, 1, PD_ANY, 10, NULL);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    /* The FIN goes after the data, at once or with the ACK of the data. */
    if (!pd_peek(h)) {
        pd_in(h, ".", 1, 11, 1000, NULL);
        pd_expect(h, "F.", 11, 1, PD_ANY, NULL);
    } else {
        pd_expect(h, "F.", 11, 1, PD_ANY, NULL);
    }
    pd_in(h, "F.", 1, 12, 1000, NULL);
    pd_expect(h, ".", 12, 2, PD_ANY, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_TIME_WAIT);
    pd_advance_ms(h, 60000);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
}

/* FIN_WAIT_1: our FIN is retransmitted with back-off until acknowledged. */
PD_TEST(tcp_close_fin_wait1_fin_retransmitted)
{
    /* The RTO's back-off, without a tail loss probe first (SACK off). */
    struct hp_tcp_config cfg = {.no_sack = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *t = est(h);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    uint64_t t0 = h->last.at_ms;
    pd_advance_ms(h, 5000);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    uint64_t t1 = h->last.at_ms;
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    HP_CHECK_EQ(h->last.at_ms - t1, 2 * (t1 - t0));
    pd_discard(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_FIN_WAIT_1);
    pd_in(h, ".", 1, 2, 1000, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_FIN_WAIT_2);
    pd_advance_ms(h, 5000);
    pd_expect_none(h);
}

/* RFC 9293 3.10.7.4 second: an exact RST resets in every synchronized
 * state (CLOSE_WAIT, FIN_WAIT_2 here); in the window but not exact, a
 * challenge ACK (RFC 5961 3.2). */
PD_TEST(tcp_close_rst_in_closing_states)
{
    struct hp_tcp_sock *t = est(h);
    pd_in(h, "F.", 1, 1, 1000, NULL);
    pd_expect(h, ".", 1, 2, PD_ANY, NULL);
    pd_in(h, "R", 10, 0, 0, NULL);
    pd_expect(h, ".", 1, 2, PD_ANY, NULL);
    pd_in(h, "R", 2, 0, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNRESET);

    pd_use(h, 40001, 9)->lport = PORT;
    struct hp_tcp_sock *l2 = pd_listen(h, PORT + 1, 4);
    h->c->lport = PORT + 1;
    struct hp_tcp_sock *u = pd_established(h, l2);
    HP_CHECK_EQ(hp_tcp_shutdown(u, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    pd_in(h, ".", 1, 2, 1000, NULL);
    HP_CHECK_EQ(hp_tcp_state(u), HP_TCP_FIN_WAIT_2);
    pd_in(h, "R", 1, 0, 0, NULL);
    pd_expect_none(h);
    HP_CHECK_EQ(hp_tcp_state(u), HP_TCP_CLOSED);
}
