/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP timers: retransmission (RFC 6298, lazily restarted), SYN retries, persist (zero window probes), delayed ACK, keepalive, FIN_WAIT_2 and TIME_WAIT. */
#include <errno.h>
#include <stdlib.h>

#include "tcp_internal.h"

/*
 * Three timers per connection (tcp_internal.h):
 *   t_rtx   the retransmission timer, or, with HP__TCPF_PERSIST, the
 *           persist timer; never both, as RFC 9293 3.8.6.1 keeps the
 *           probe going exactly when nothing is outstanding to time;
 *   t_dack  the delayed ACK (RFC 9293 3.8.6.3);
 *   t_misc  keepalive (3.8.4) and the orphan FIN_WAIT_2 limit, or TIME_WAIT
 *           (3.10.7.4, 2 MSL) which replaces them.
 *
 * The retransmission timer is restarted on every ACK of new data (RFC
 * 6298 5.3) and stopped when everything is acknowledged, and the delayed
 * ACK armed and cancelled once per message of a request/response flow: far
 * too often to move a heap entry each time, which with thousands of
 * connections costs a cache miss into another connection per heap level.
 * So the true deadlines live in rtx_due (0: stopped) and dack_due (with
 * HP__TCPF_DACK: pending), and the heap entries may be earlier or stale:
 * an entry that fires early re-arms itself for the deadline, a stale one
 * does nothing. A restart or a stop costs a store; the heap moves at most
 * once per deadline.
 *
 * Even that is too often for the delayed ACK of a request/response flow:
 * with thousands of flows each transaction's entry outlives the ACK it was
 * armed for (a response carries it within microseconds; the entry fires
 * 40 ms later to find nothing owed), and every insertion and removal sifts
 * through log2(entries) levels, each writing the slot of a timer in another
 * connection. So the receive path only records that an ACK is owed
 * (HP__TCPF_DACK, dack_due) and puts the connection on the stack's
 * dack_pend list; the next poll, after the application has had its turn
 * to answer, arms the entries of the ACKs still owed (hp__tcp_poll_begin).
 * hp_stack_next_timer_ns counts the list's earliest deadline. The same
 * list holds the ACKs owed at once that the application's answer may
 * carry (hp__tcp_ack_soon: the handshake's third segment, a FIN's, a
 * window update), due at the next poll: there each still owed is sent.
 *
 * Every callback may end with the connection freed (hp__tcp_drop,
 * hp__tcp_closed free orphans and unaccepted blocks): they return at once
 * after those calls and touch nothing of c.
 */

#define NS_PER_MS         1000000ull
#define NS_PER_S          1000000000ull
#define PERSIST_SHIFT_MAX 16 /* 2^16 RTOs: past any rto_max */

static uint64_t rto_ns(const struct hp_tcp_sock *c)
{
    return (uint64_t)hp__tcp_rtt_rto(&c->rtt) * 1000u;
}

static const struct hp_tcp_config *cfg_of(const struct hp_tcp_sock *c)
{
    return &hp__tcp(c->s)->cfg;
}

/* ---- the heap entries ---------------------------------------------------------- */

/* t_rtx and t_dack sit with the cold fields: the fast path reads only
 * rtx_tdue / dack_tdue, the due time of the heap entry (0: not in the
 * heap), kept here on every arm, fire and cancel. */
static void rtx_arm(struct hp_tcp_sock *c, uint64_t due)
{
    if (hp__timer_arm(c->s, &c->t_rtx, due) == 0)
        c->rtx_tdue = due;
}

static void dack_arm(struct hp_tcp_sock *c, uint64_t due)
{
    if (hp__timer_arm(c->s, &c->t_dack, due) == 0)
        c->dack_tdue = due;
}

/* Off the dack_pend list (a connection about to be freed). */
static void dack_unpend(struct hp_tcp_sock *c)
{
    struct hp__tcp_state *st = hp__tcp(c->s);
    c->flags &= ~HP__TCPF_DACK_PEND;
    for (uint32_t i = 0; i < st->ndack_pend; i++)
        if (st->dack_pend[i] == c)
            st->dack_pend[i] = NULL;
}

void hp__tcp_timers_cancel(struct hp_tcp_sock *c)
{
    if (c->flags & HP__TCPF_DACK_PEND)
        dack_unpend(c);
    hp__timer_cancel(c->s, &c->t_rtx);
    hp__timer_cancel(c->s, &c->t_dack);
    hp__timer_cancel(c->s, &c->t_misc);
    c->rtx_tdue = 0;
    c->dack_tdue = 0;
}

/* ---- retransmission timer ------------------------------------------------------ */

void hp__tcp_rtx_restart(struct hp_tcp_sock *c)
{
    struct hp_stack *s = c->s;
    uint64_t due = s->now + rto_ns(c);
    if (c->flags & HP__TCPF_SACK_OK)
        due = hp__tcp_sb_due(c, due); /* a tail loss probe or the reordering timer first */
    c->rtx_due = due;
    if (c->flags & HP__TCPF_PERSIST) {
        /* Data outstanding again: the timer times it, not the window. */
        c->flags &= ~HP__TCPF_PERSIST;
        c->persist_shift = 0;
        rtx_arm(c, due);
        return;
    }
    if (c->rtx_tdue == 0 || c->rtx_tdue > due)
        rtx_arm(c, due);
}

void hp__tcp_rtx_ensure(struct hp_tcp_sock *c)
{
    if (c->rtx_due == 0 || (c->flags & HP__TCPF_PERSIST))
        hp__tcp_rtx_restart(c);
}

void hp__tcp_rtx_at(struct hp_tcp_sock *c, uint64_t due)
{
    if (c->flags & HP__TCPF_PERSIST)
        return;
    if (c->rtx_due == 0 || c->rtx_due > due)
        c->rtx_due = due;
    if (c->rtx_tdue == 0 || c->rtx_tdue > c->rtx_due)
        rtx_arm(c, c->rtx_due);
}

void hp__tcp_rtx_stop(struct hp_tcp_sock *c)
{
    c->flags &= ~HP__TCPF_PERSIST;
    c->persist_shift = 0;
    c->rtx_due = 0; /* lazy: a t_rtx still in the heap finds nothing to do */
}

/* ---- persist ---------------------------------------------------------------------- */

/* The probe interval: the RTO, doubled per unanswered probe, up to rto_max
 * (RFC 9293 3.8.6.1: exponential back-off, as for retransmissions). */
static uint64_t persist_ns(const struct hp_tcp_sock *c)
{
    uint64_t max = (uint64_t)hp__tcp_rtt_cfg_of(c)->max_rto_us * 1000u;
    uint64_t t = rto_ns(c) << c->persist_shift;
    return t < max ? t : max;
}

void hp__tcp_persist_start(struct hp_tcp_sock *c)
{
    if ((c->flags & HP__TCPF_PERSIST) && c->rtx_tdue != 0)
        return;
    /* The probes go from SND.UNA, and so does everything after the window
     * opens: what the log holds is void. */
    if (c->flags & (HP__TCPF_SB | HP__TCPF_SB_LOSS))
        hp__tcp_sb_reset(c);
    c->flags |= HP__TCPF_PERSIST;
    c->flags &= ~HP__TCPF_RTT_TIMING;
    c->persist_shift = 0;
    c->rtx_count = 0; /* from now on: probes the peer has not answered */
    rtx_arm(c, c->s->now + persist_ns(c));
}

static void persist_fire(struct hp_tcp_sock *c)
{
    struct hp_stack *s = c->s;
    uint32_t una = c->snd_una;
    uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    if (c->snd_wnd > 0 || !hp__seq_lt(una, end) || !hp__tcp_synchronized(c) ||
        c->state == HP_TCP_TIME_WAIT) {
        /* The window opened (or there is no data left to probe with):
         * send what it allows, overriding SWS avoidance and Nagle (RFC
         * 9293 3.8.6.2.1 (4)); output re-arms what is needed. */
        (void)hp__tcp_output_force(c);
        return;
    }
    /* An ACK since the last probe (a zero window ACK, usually) means the
     * peer is alive: RFC 9293 3.8.6.1 says to keep probing as long as it
     * answers, so only unanswered probes count towards giving up. */
    if (c->last_rcv_ns >= c->last_send_ns)
        c->rtx_count = 0;
    if (c->rtx_count >= cfg_of(c)->data_retries) {
        hp__ctr(s, HP_CTR_TCP_ABORT_ON_TIMEOUT);
        hp__tcp_drop(c, -ETIMEDOUT);
        return;
    }
    /* The probe: the next unsent byte, one past the closed window (RFC
     * 9293 3.8.6.1). It counts as sent, so that a peer that takes it can
     * acknowledge it. */
    c->snd_nxt = una;
    if (hp__tcp_send_seg(c, una, 1) == 1) {
        c->snd_nxt = una + 1;
        if (hp__seq_gt(c->snd_nxt, c->snd_max))
            c->snd_max = c->snd_nxt;
        hp__ctr(s, HP_CTR_TCP_ZERO_WINDOW_PROBES);
    }
    if (c->rtx_count < UINT8_MAX)
        c->rtx_count++;
    if (c->persist_shift < PERSIST_SHIFT_MAX)
        c->persist_shift++;
    rtx_arm(c, s->now + persist_ns(c));
}

/* ---- the retransmission timeout ------------------------------------------------ */

/* RFC 6298 5.5-5.6: back off; RFC 5681 3.1: the loss window, ssthresh
 * once per loss episode; what goes again: with a log, the lost segments
 * in order and the SACKed ones not (RFC 6675 5.1, RFC 8985 6.3); without,
 * go-back-N from snd_una (RFC 5681 3.1 allows resending everything). */
static void rto_response(struct hp_tcp_sock *c)
{
    hp__tcp_rtt_timeout(&c->rtt, hp__tcp_rtt_cfg_of(c));
    struct hp__tcp_cc_ev ev = hp__tcp_cc_ev(c, 0, c->snd_max - c->snd_una);
    hp__tcp_cc_timeout(&c->cc, hp__tcp_cubic_of(c, true), &ev, c->rtx_count > 0);
    if (!(c->flags & HP__TCPF_SACK_OK) || !hp__tcp_sb_rto(c))
        c->snd_nxt = c->snd_una;
    c->flags &= ~HP__TCPF_RTT_TIMING; /* Karn: nothing sent before is timed */
}

void hp__tcp_timer_rtx(struct hp_stack *s, struct hp__timer *t)
{
    struct hp_tcp_sock *c = HP__CONTAINER(t, struct hp_tcp_sock, t_rtx);
    c->rtx_tdue = 0; /* out of the heap */
    if (c->flags & HP__TCPF_PERSIST) {
        persist_fire(c);
        return;
    }
    if (c->rtx_due == 0)
        return; /* stopped since it was armed (lazy stop) */
    if (s->now < c->rtx_due) {
        /* Restarted since it was armed (lazy restart). */
        rtx_arm(c, c->rtx_due);
        return;
    }
    const struct hp_tcp_config *cfg = cfg_of(c);
    switch (c->state) {
    case HP_TCP_SYN_SENT:
    case HP_TCP_SYN_RECEIVED:
        /* A passive open's SYN-ACK has its own bound (synack_retries, 63 s
         * as Linux): half-open connections of a spoofed SYN flood must not
         * hold the SYN queue for the minutes RFC 9293 3.8.3 asks of a
         * SYN (a simultaneous open, without a parent, is an active one). */
        if (c->rtx_count >= (c->parent ? cfg->synack_retries : cfg->syn_retries)) {
            /* A passive embryo is freed by hp__tcp_drop (never accepted). */
            hp__tcp_drop(c, -ETIMEDOUT);
            return;
        }
        c->rtx_count++;
        c->flags |= HP__TCPF_SYN_LOST; /* RFC 5681 3.1 / RFC 6298 5.7 when established */
        hp__tcp_rtt_timeout(&c->rtt, hp__tcp_rtt_cfg_of(c));
        hp__ctr(s, HP_CTR_TCP_SYN_RETRANS);
        hp__tcp_rtx_restart(c);
        (void)hp__tcp_send_syn(c);
        return;
    case HP_TCP_ESTABLISHED:
    case HP_TCP_FIN_WAIT_1:
    case HP_TCP_FIN_WAIT_2:
    case HP_TCP_CLOSE_WAIT:
    case HP_TCP_CLOSING:
    case HP_TCP_LAST_ACK:
        break;
    default:
        return;
    }
    if (c->snd_una == c->snd_max) {
        /* Nothing outstanding: armed to retry after a lack of buffers. */
        (void)hp__tcp_output(c);
        return;
    }
    /* A tail loss probe or the RACK reordering timer (tcp_sack.c). */
    if ((c->flags & HP__TCPF_SACK_OK) && hp__tcp_sb_timer(c))
        return;
    uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    if (c->snd_wnd == 0 && hp__seq_lt(c->snd_una, end)) {
        /* The peer closed its window on data in flight: what lies past the
         * window is not lost, so probe (RFC 9293 3.8.6.1) rather than back
         * off towards a drop while the peer still answers. */
        c->snd_nxt = c->snd_una;
        c->flags &= ~HP__TCPF_RTT_TIMING;
        hp__tcp_persist_start(c);
        return;
    }
    if (c->rtx_count >= cfg->data_retries) {
        /* RFC 9293 3.8.3 R2. */
        hp__ctr(s, HP_CTR_TCP_ABORT_ON_TIMEOUT);
        hp__tcp_drop(c, -ETIMEDOUT);
        return;
    }
    /* The FIN, if it was outstanding, goes again after the last byte:
     * hp__tcp_output sends it whenever snd_nxt has not passed it. */
    rto_response(c);
    if (c->rtx_count < UINT8_MAX)
        c->rtx_count++;
    hp__tcp_pmtu_on_rto(c); /* RFC 4821: a probe lost, or a black hole */
    hp__ctr(s, HP_CTR_TCP_TIMEOUTS);
    HP__TCP_ST_INC(c, timeouts);
    hp__tcp_rtx_restart(c);
    (void)hp__tcp_output(c);
}

/* ---- delayed ACK ------------------------------------------------------------------- */

/* Put c on the dack_pend list; false when the list cannot grow. */
static bool dack_pend(struct hp_tcp_sock *c)
{
    struct hp__tcp_state *st = hp__tcp(c->s);
    if (st->ndack_pend == st->dack_pend_cap) {
        uint32_t cap = st->dack_pend_cap ? st->dack_pend_cap * 2 : 64;
        struct hp_tcp_sock **p = realloc(st->dack_pend, (size_t)cap * sizeof *p);
        if (!p)
            return false;
        st->dack_pend = p;
        st->dack_pend_cap = cap;
    }
    if (st->ndack_pend == 0 || c->dack_due < st->dack_pend_due)
        st->dack_pend_due = c->dack_due;
    st->dack_pend[st->ndack_pend++] = c;
    c->flags |= HP__TCPF_DACK_PEND;
    return true;
}

void hp__tcp_ack_soon(struct hp_tcp_sock *c)
{
    if (c->flags & HP__TCPF_QUICKACK) {
        c->flags |= HP__TCPF_ACK_NOW;
        return;
    }
    uint64_t now = c->s->now;
    c->flags |= HP__TCPF_DACK;
    c->dack_due = now;
    if (c->flags & HP__TCPF_DACK_PEND) {
        struct hp__tcp_state *st = hp__tcp(c->s);
        if (now < st->dack_pend_due)
            st->dack_pend_due = now;
        return;
    }
    if (!dack_pend(c))
        c->flags |= HP__TCPF_ACK_NOW; /* the list cannot grow: at once */
}

void hp__tcp_dack_arm(struct hp_tcp_sock *c)
{
    uint64_t ms = cfg_of(c)->delack_ms ? cfg_of(c)->delack_ms : 40;
    uint64_t due = c->s->now + ms * NS_PER_MS;
    c->dack_due = due;
    /* An entry already due by then (a stale one, lazily cancelled, or
     * still to be armed) fires in time and re-arms itself if need be. */
    if ((c->dack_tdue != 0 && c->dack_tdue <= due) || (c->flags & HP__TCPF_DACK_PEND))
        return;
    if (!dack_pend(c))
        dack_arm(c, due);
}

void hp__tcp_poll_begin(struct hp_stack *s)
{
    struct hp__tcp_state *st = s->sock ? hp__tcp(s) : NULL;
    if (!st)
        return;
    if (st->table_rekey) {
        /* Here, outside any receive burst: no early demultiplexing hint
         * holds a hash under the old key. */
        st->table_rekey = false;
        (void)hp__tcp_table_rekey(st->table);
    }
    if (st->ndack_pend == 0)
        return;
    /* Nothing here runs user code or frees a connection (an ACK sent
     * changes no list): the list holds still. An ACK owed at once
     * (hp__tcp_ack_soon) that nothing carried goes now; a delayed one gets
     * its heap entry. */
    for (uint32_t i = 0; i < st->ndack_pend; i++) {
        struct hp_tcp_sock *c = st->dack_pend[i];
        if (!c)
            continue; /* freed since */
        c->flags &= ~HP__TCPF_DACK_PEND;
        if (!(c->flags & HP__TCPF_DACK))
            continue;
        if (c->dack_due <= s->now && hp__tcp_send_ack(c) == 0)
            continue;
        /* (After a lack of buffers: another try in this poll's timers.) */
        if (c->dack_tdue == 0 || c->dack_tdue > c->dack_due)
            dack_arm(c, c->dack_due);
    }
    st->ndack_pend = 0;
}

uint64_t hp__tcp_pending_due(const struct hp_stack *s)
{
    const struct hp__tcp_state *st = s->sock ? s->sock->tcp : NULL;
    return st && st->ndack_pend ? st->dack_pend_due : 0;
}

void hp__tcp_timer_dack(struct hp_stack *s, struct hp__timer *t)
{
    struct hp_tcp_sock *c = HP__CONTAINER(t, struct hp_tcp_sock, t_dack);
    c->dack_tdue = 0; /* out of the heap */
    if (!(c->flags & HP__TCPF_DACK))
        return; /* the ACK went with a segment since (lazy cancel) */
    if (s->now < c->dack_due) {
        dack_arm(c, c->dack_due);
        return;
    }
    if (hp__tcp_send_ack(c) == 0)
        hp__ctr(s, HP_CTR_TCP_DELAYED_ACKS);
}

/* ---- keepalive, FIN_WAIT_2, TIME_WAIT -------------------------------------------- */

static bool ka_applies(const struct hp_tcp_sock *c)
{
    return (c->flags & HP__TCPF_KEEPALIVE) && hp__tcp_synchronized(c) &&
           c->state != HP_TCP_TIME_WAIT;
}

static bool fw2_applies(const struct hp_tcp_sock *c)
{
    return c->state == HP_TCP_FIN_WAIT_2 && (c->flags & HP__TCPF_ORPHAN);
}

/* An orphan in FIN_WAIT_2 waits fin_wait2_ms from the last segment (the
 * ACK of our FIN that brought it there, or anything later). */
static uint64_t fw2_due(const struct hp_tcp_sock *c)
{
    return c->last_rcv_ns + (uint64_t)cfg_of(c)->fin_wait2_ms * NS_PER_MS;
}

static uint64_t ka_intvl_ns(const struct hp_tcp_sock *c)
{
    return (uint64_t)(c->ka_intvl_s ? c->ka_intvl_s : 1) * NS_PER_S;
}

static uint64_t ka_idle_ns(const struct hp_tcp_sock *c)
{
    return (uint64_t)c->ka_idle_s * NS_PER_S;
}

/* Data in flight or a closed window: the retransmission or persist timer
 * watches the peer, and a keepalive probe would only add to it. */
static bool ka_busy(const struct hp_tcp_sock *c)
{
    return c->snd_una != c->snd_max || (c->flags & HP__TCPF_PERSIST);
}

/*
 * Keepalive (RFC 9293 3.8.4): the first probe once the peer has been
 * silent for ka_idle_s (since last_rcv_ns), then one every ka_intvl_s
 * from the probe before, until ka_cnt go unanswered. Any segment from the
 * peer answers: tcp_input.c then sets ka_probes back to 0 and moves
 * last_rcv_ns. An orphan in FIN_WAIT_2 has its own limit instead (as with
 * Linux, whose keepalive timer serves both).
 */
void hp__tcp_misc_rearm(struct hp_tcp_sock *c)
{
    struct hp_stack *s = c->s;
    if (c->state == HP_TCP_TIME_WAIT)
        return; /* t_misc is the TIME_WAIT timer (hp__tcp_time_wait) */
    uint64_t due;
    if (fw2_applies(c)) {
        due = fw2_due(c);
    } else if (ka_applies(c)) {
        if (c->ka_probes && hp__timer_armed(&c->t_misc))
            return; /* probing: the callback armed the next step */
        due = c->ka_probes ? s->now + ka_intvl_ns(c) : c->last_rcv_ns + ka_idle_ns(c);
        if (due <= s->now && ka_busy(c))
            due = s->now + ka_intvl_ns(c);
    } else {
        if (hp__timer_armed(&c->t_misc))
            hp__timer_cancel(s, &c->t_misc);
        return;
    }
    if (hp__timer_due(s, &c->t_misc) != due)
        (void)hp__timer_arm(s, &c->t_misc, due);
}

void hp__tcp_timer_misc(struct hp_stack *s, struct hp__timer *t)
{
    struct hp_tcp_sock *c = HP__CONTAINER(t, struct hp_tcp_sock, t_misc);
    if (c->state == HP_TCP_TIME_WAIT) {
        hp__ctr(s, HP_CTR_TCP_TW_EXPIRED);
        hp__tcp_closed(c);
        return;
    }
    if (fw2_applies(c)) {
        if (s->now >= fw2_due(c)) {
            /* The peer never sent its FIN and nobody holds the handle. */
            hp__tcp_closed(c);
            return;
        }
    } else if (ka_applies(c) && (c->ka_probes || s->now >= c->last_rcv_ns + ka_idle_ns(c))) {
        if (c->ka_probes >= c->ka_cnt) {
            hp__ctr(s, HP_CTR_TCP_KEEPALIVE_DROPS);
            hp__tcp_drop(c, -ETIMEDOUT);
            return;
        }
        if (!ka_busy(c)) {
            /* <SEQ=SND.UNA-1><ACK=RCV.NXT>, no data: the peer answers
             * the old sequence number with an ACK (RFC 9293 3.8.4). An
             * unsent probe (no buffer) counts as unanswered all the same. */
            if (hp__tcp_send_seg(c, c->snd_una - 1, 0) >= 0)
                hp__ctr(s, HP_CTR_TCP_KEEPALIVE_PROBES);
            c->ka_probes++;
        }
        (void)hp__timer_arm(s, &c->t_misc, s->now + ka_intvl_ns(c));
        return;
    }
    hp__tcp_misc_rearm(c);
}

void hp__tcp_time_wait(struct hp_tcp_sock *c)
{
    struct hp_stack *s = c->s;
    if (c->state != HP_TCP_TIME_WAIT)
        hp__tcp_set_state(c, HP_TCP_TIME_WAIT);
    /* An ACK still owed goes with the caller's next hp__tcp_output rather
     * than be lost with its timer. */
    if (c->flags & HP__TCPF_DACK)
        c->flags |= HP__TCPF_ACK_NOW;
    c->flags &= ~(HP__TCPF_DACK | HP__TCPF_RTT_TIMING);
    hp__tcp_rtx_stop(c);
    hp__timer_cancel(s, &c->t_dack);
    c->dack_tdue = 0;
    /* Nothing the user could still read goes: the receive queue stays.
     * (Our side is all acknowledged; no data can follow the peer's FIN,
     * so the out-of-order list holds nothing worth keeping.) */
    hp__tcp_ooo_purge(c);
    uint64_t ms = cfg_of(c)->time_wait_ms;
    (void)hp__timer_arm(s, &c->t_misc, s->now + ms * NS_PER_MS);
}
