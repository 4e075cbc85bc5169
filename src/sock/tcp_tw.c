/* SPDX-License-Identifier: BSD-3-Clause */
/* TIME_WAIT without the connection: once nobody holds its socket, a connection in TIME_WAIT gives its block back and leaves a two-line record (RFC 9293 3.10.7.4's TIME-WAIT, RFC 7323's PAWS, RFC 6191's reuse) in a map of its own, ended by one FIFO timer. */
#include <errno.h>
#include <string.h>

#include "tcp_in.h"

/*
 * Why: a client that opens and closes connections keeps each one's tuple
 * in TIME_WAIT for time_wait_ms (60 s). As a whole connection that is a
 * 448-byte block and a timer in the stack's heap per tuple: at tens of
 * thousands of connections a second, the blocks of the new connections
 * come from memory nobody touched for a minute (cold in every cache, or
 * not yet mapped), and every timer removal sifts a heap of all the
 * TIME_WAITs. A record is 128 bytes, its timer a place in a FIFO: every
 * record lasts the same time_wait_ms, so they end in the order they began
 * (an insertion that finds a later neighbour, after hp_tcp_configure
 * shortened time_wait_ms, walks back from the tail). Linux does the same
 * with its inet_timewait_sock.
 *
 * A connection whose socket the user still holds stays whole until the
 * user closes it (hp_tcp_close then compacts it): hp_tcp_state() and the
 * receive queue must keep answering.
 *
 * What a record does with a segment is what the connection did in
 * TIME_WAIT (tcp_input.c), less what needs the block: a D-SACK for old
 * data, and the per-segment keepalive and ECN bookkeeping, which have no
 * use once both FINs are in.
 */

/* ---- the FIFO and its timer ---------------------------------------------------------------- */

static void fifo_unlink(struct hp__tcp_state *st, struct hp__tcp_tw *tw)
{
    if (tw->prev)
        tw->prev->next = tw->next;
    else
        st->tw_head = tw->next;
    if (tw->next)
        tw->next->prev = tw->prev;
    else
        st->tw_tail = tw->prev;
    tw->next = tw->prev = NULL;
}

/* In due order, from the tail: records are nearly always added in order. */
static void fifo_insert(struct hp__tcp_state *st, struct hp__tcp_tw *tw)
{
    struct hp__tcp_tw *after = st->tw_tail;
    while (after && after->due > tw->due)
        after = after->prev;
    tw->prev = after;
    tw->next = after ? after->next : st->tw_head;
    if (tw->next)
        tw->next->prev = tw;
    else
        st->tw_tail = tw;
    if (after)
        after->next = tw;
    else
        st->tw_head = tw;
}

/* The timer at the head's due time (or off with no record). A failed arm
 * (the heap could not grow) is retried at the next change; the records
 * then end late, never early. */
static void timer_sync(struct hp_stack *s, struct hp__tcp_state *st)
{
    struct hp__timer *t = &st->tw_timer.t;
    if (!st->tw_head) {
        if (hp__timer_armed(t))
            hp__timer_cancel(s, t);
        return;
    }
    if (!hp__timer_armed(t) || hp__timer_due(s, t) != st->tw_head->due)
        (void)hp__timer_arm(s, t, st->tw_head->due);
}

/* Out of the map and the FIFO, and freed; the caller syncs the timer. */
static void tw_free(struct hp__tcp_state *st, struct hp__tcp_tw *tw)
{
    (void)hp__tcp_tw_remove(st->table, &tw->key);
    fifo_unlink(st, tw);
    hp__tcp_block_free(&st->tw_blocks, tw);
}

static void tw_expire(struct hp_stack *s, void *arg)
{
    struct hp__tcp_state *st = arg;
    while (st->tw_head && st->tw_head->due <= s->now) {
        hp__ctr(s, HP_CTR_TCP_TW_EXPIRED);
        tw_free(st, st->tw_head);
    }
    timer_sync(s, st);
}

static void restart(struct hp_stack *s, struct hp__tcp_state *st, struct hp__tcp_tw *tw)
{
    fifo_unlink(st, tw);
    tw->due = s->now + (uint64_t)st->cfg.time_wait_ms * 1000000u;
    fifo_insert(st, tw);
    timer_sync(s, st);
}

void hp__tcp_tw_init(struct hp__tcp_state *st)
{
    hp__tcp_blocks_init(&st->tw_blocks, sizeof(struct hp__tcp_tw));
    hp__timer_cb_init(&st->tw_timer, tw_expire, st);
}

void hp__tcp_tw_fini(struct hp_stack *s)
{
    struct hp__tcp_state *st = hp__tcp(s);
    if (hp__timer_armed(&st->tw_timer.t))
        hp__timer_cancel(s, &st->tw_timer.t);
    st->tw_head = st->tw_tail = NULL;
    hp__tcp_blocks_fini(&st->tw_blocks); /* the table goes with the stack */
}

uint64_t hp__tcp_tw_mem(const struct hp__tcp_state *st)
{
    return (uint64_t)st->tw_blocks.size * st->tw_blocks.nlive;
}

/* ---- from a connection ------------------------------------------------------------------- */

bool hp__tcp_tw_compact(struct hp_tcp_sock *c)
{
    struct hp_stack *s = c->s;
    struct hp__tcp_state *st = hp__tcp(s);
    bool unowned = (c->flags & HP__TCPF_ORPHAN) || !(c->flags & HP__TCPF_ACCEPTED);
    if (c->state != HP_TCP_TIME_WAIT || !unowned || !(c->flags & HP__TCPF_IN_TABLE) ||
        (c->flags & (HP__TCPF_ACK_NOW | HP__TCPF_DACK)))
        return false; /* (an ACK still owed goes with the connection first) */
    struct hp__tcp_tw *tw = hp__tcp_block_alloc(&st->tw_blocks);
    if (!tw)
        return false;
    memset(tw, 0, sizeof *tw);
    tw->key = c->key;
    if (hp__tcp_tw_insert(st->table, &tw->key) < 0) {
        hp__tcp_block_free(&st->tw_blocks, tw);
        return false;
    }
    /* A long probe asks for a new hash key, as a connection's insert does
     * (the peer chooses half of the tuple). */
    if (hp__tcp_table_rekey_wanted(st->table))
        st->table_rekey = true;
    tw->snd_nxt = c->snd_nxt;
    tw->rcv_nxt = c->rcv_nxt;
    tw->rcv_wnd = hp__seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    tw->rcv_wscale = c->rcv_wscale;
    tw->ts_ok = (c->flags & HP__TCPF_TS_OK) != 0;
    tw->ts_recent = c->ts_recent;
    tw->ts_recent_s = c->ts_recent_s;
    tw->ts_offset = c->ts_offset;
    tw->chack_next_ms = c->chack_next_ms;
    /* The rest of the connection's wait (a restart by a retransmitted FIN
     * included). */
    uint64_t due = hp__timer_due(s, &c->t_misc);
    tw->due = due ? due : s->now + (uint64_t)st->cfg.time_wait_ms * 1000000u;
    fifo_insert(st, tw);
    timer_sync(s, st);
    hp__ctr(s, HP_CTR_TCP_TW_COMPACTED);
    hp__tcp_conn_free(c);
    return true;
}

/* ---- connect's tw_reuse ------------------------------------------------------------------- */

bool hp__tcp_tw_reusable(const struct hp_stack *s, const struct hp__tcp_tw *tw)
{
    /* As tcp_api.c's tw_reusable for a connection: timestamps, and the
     * peer last heard more than a second ago (in whole seconds: >= 2). */
    return s->sock->tcp->cfg.tw_reuse && tw->ts_ok &&
           (uint32_t)(hp__tcp_now_s(s) - tw->ts_recent_s) > 1u;
}

void hp__tcp_tw_take(struct hp_stack *s, struct hp__tcp_tw *tw, uint32_t *iss_floor)
{
    struct hp__tcp_state *st = hp__tcp(s);
    *iss_floor = tw->snd_nxt + 65535u + 2u;
    tw_free(st, tw);
    timer_sync(s, st);
    hp__ctr(s, HP_CTR_TCP_TW_REUSED);
}

void hp__tcp_tw_move(struct hp_stack *s, struct hp__tcp_table *to)
{
    struct hp__tcp_state *st = hp__tcp(s);
    for (struct hp__tcp_tw *tw = st->tw_head, *next; tw; tw = next) {
        next = tw->next;
        if (hp__tcp_tw_insert(to, &tw->key) < 0) {
            hp__ctr(s, HP_CTR_TCP_TW_EXPIRED);
            fifo_unlink(st, tw); /* (the old table goes whole) */
            hp__tcp_block_free(&st->tw_blocks, tw);
        }
    }
    timer_sync(s, st);
}

void hp__tcp_tw_end(struct hp_stack *s, struct hp__tcp_tw *tw)
{
    struct hp__tcp_state *st = hp__tcp(s);
    tw_free(st, tw);
    timer_sync(s, st);
}

/* ---- segments ----------------------------------------------------------------------------- */

/* <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, with the window last advertised and
 * the timestamps, back to where sg came from. */
static void tw_ack(struct hp_stack *s, const struct hp__tcp_tw *tw, const struct hp__tcp_seg *sg)
{
    struct hp_tcp_repr o;
    memset(&o, 0, sizeof o);
    o.src_port = tw->key.lport;
    o.dst_port = tw->key.rport;
    o.seq = tw->snd_nxt;
    o.ack = tw->rcv_nxt;
    o.flags = HP_TCP_F_ACK;
    uint32_t w = tw->rcv_wnd >> tw->rcv_wscale;
    o.window = (uint16_t)(w < 65535u ? w : 65535u);
    if (tw->ts_ok) {
        o.opt.has_ts = true;
        o.opt.ts_val = (uint32_t)(s->now / 1000000u) + tw->ts_offset;
        o.opt.ts_ecr = tw->ts_recent;
    }
    (void)hp__tcp_send_reply(s, sg->family, sg->src, sg->dst, &o);
}

static void challenge(struct hp_stack *s, struct hp__tcp_tw *tw, const struct hp__tcp_seg *sg)
{
    if (!hp__tcp_challenge_allowed(s, &tw->chack_next_ms))
        return;
    hp__ctr(s, HP_CTR_TCP_CHALLENGE_ACKS);
    tw_ack(s, tw, sg);
}

/* RFC 9293 3.10.7.4's acceptability test against RCV.NXT and the window
 * last advertised. */
static bool acceptable(const struct hp__tcp_tw *tw, const struct hp__tcp_seg *sg)
{
    uint32_t seglen =
        sg->len + ((sg->flags & HP_TCP_F_SYN) ? 1u : 0u) + ((sg->flags & HP_TCP_F_FIN) ? 1u : 0u);
    if (sg->seq == tw->rcv_nxt)
        return true;
    if (tw->rcv_wnd == 0)
        return false;
    if (hp__seq_in_window(sg->seq, tw->rcv_nxt, tw->rcv_wnd))
        return true;
    return seglen > 0 && hp__seq_in_window(sg->seq + seglen - 1, tw->rcv_nxt, tw->rcv_wnd);
}

void hp__tcp_tw_input(struct hp_stack *s, struct hp__tcp_tw *tw, struct hp__tcp_seg *sg)
{
    struct hp__tcp_state *st = hp__tcp(s);
    const struct hp_tcp_repr *r = &sg->r;
    uint8_t fl = r->flags;

    /* A new SYN may open a new incarnation when a listener takes it and it
     * cannot be mistaken for the old one's (RFC 1122 4.2.2.13, RFC 6191):
     * with timestamps on both, a TSval newer than TS.Recent, else a
     * sequence number above RCV.NXT; otherwise it goes silently (RFC 6191
     * 2). Without a listener, it is answered as any other segment. */
    if ((fl & (HP_TCP_F_SYN | HP_TCP_F_ACK)) == HP_TCP_F_SYN) {
        struct hp__tcp_key *e = hp__tcp_listen_lookup(st->table, sg->family, sg->dst, r->dst_port);
        if (e) {
            bool ok = tw->ts_ok && r->opt.has_ts && !st->cfg.no_timestamps
                          ? hp__ts_gt(r->opt.ts_val, tw->ts_recent)
                          : hp__seq_gt(r->seq, tw->rcv_nxt);
            if (!ok) {
                hp__tcp_seg_free(sg);
                return;
            }
            hp__ctr(s, HP_CTR_TCP_TW_REUSED);
            tw_free(st, tw);
            timer_sync(s, st);
            hp__tcp_listen_input(HP__TCP_ENTRY(e, struct hp_tcp_sock, key), sg);
            return;
        }
    }
    if (!(fl & (HP_TCP_F_SYN | HP_TCP_F_RST | HP_TCP_F_ACK))) {
        hp__ctr(s, HP_CTR_TCP_IN_BAD_FLAGS);
        hp__tcp_seg_free(sg);
        return;
    }
    /* RFC 7323 3.2 and 5.3 R1 (PAWS), as for a connection. */
    if (tw->ts_ok && !(fl & HP_TCP_F_RST)) {
        if (!r->opt.has_ts) {
            hp__ctr(s, HP_CTR_TCP_IN_BAD_OPTIONS);
            hp__tcp_seg_free(sg);
            return;
        }
        uint64_t age = (uint64_t)(uint32_t)(hp__tcp_now_s(s) - tw->ts_recent_s) * 1000000000u;
        if (!hp__tcp_paws_ok(r->opt.ts_val, tw->ts_recent, age)) {
            hp__ctr(s, HP_CTR_TCP_PAWS_DROPS);
            tw_ack(s, tw, sg);
            hp__tcp_seg_free(sg);
            return;
        }
    }
    if (!acceptable(tw, sg)) {
        hp__ctr(s, HP_CTR_TCP_IN_OUT_OF_WINDOW);
        if (!(fl & HP_TCP_F_RST)) { /* RFC 5961 3.2: a RST out of the window goes silently */
            /* A retransmitted FIN (our ACK of it was lost) is acknowledged
             * again and restarts the 2 MSL wait. */
            if ((fl & HP_TCP_F_FIN) && r->seq + sg->len + 1 == tw->rcv_nxt)
                restart(s, st, tw);
            tw_ack(s, tw, sg);
        }
        hp__tcp_seg_free(sg);
        return;
    }
    if (fl & HP_TCP_F_RST) {
        /* RFC 5961 3.2: exactly at RCV.NXT the wait ends (RFC 9293; RFC
         * 1337's alternative is not used); elsewhere in the window, a
         * challenge ACK. */
        hp__ctr(s, HP_CTR_TCP_IN_RSTS);
        if (sg->seq == tw->rcv_nxt) {
            tw_free(st, tw);
            timer_sync(s, st);
        } else {
            challenge(s, tw, sg);
        }
        hp__tcp_seg_free(sg);
        return;
    }
    if (fl & HP_TCP_F_SYN) { /* RFC 5961 4.2 */
        challenge(s, tw, sg);
        hp__tcp_seg_free(sg);
        return;
    }
    /* RFC 7323 4.3: TS.Recent from a segment at or before the last ACK sent
     * (RCV.NXT here), PAWS having passed. */
    if (tw->ts_ok && r->opt.has_ts && hp__seq_le(sg->seq, tw->rcv_nxt)) {
        tw->ts_recent = r->opt.ts_val;
        tw->ts_recent_s = hp__tcp_now_s(s);
    }
    /* An ACK of what we never sent, text past the peer's FIN, a FIN again:
     * our ACK, which says where we are (RFC 9293 3.10.7.4). */
    if (((fl & HP_TCP_F_ACK) && hp__seq_gt(r->ack, tw->snd_nxt)) || sg->len || (fl & HP_TCP_F_FIN))
        tw_ack(s, tw, sg);
    hp__tcp_seg_free(sg);
}
