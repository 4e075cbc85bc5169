/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP segment arrival (RFC 9293 3.10.7): checks and demultiplexing, SYN-SENT, and the synchronized states with PAWS (RFC 7323), RFC 5961's defences, ACK processing (RFC 6298, RFC 5681, RFC 6582) and FIN. */
#include <errno.h>
#include <string.h>

#include "tcp_in.h"
#include "tcp_layout.h"

/*
 * The order of the checks on a connection follows RFC 9293 3.10.7.4, with
 * RFC 7323's PAWS test in front of the sequence number check (5.3) and
 * RFC 5961's rules inside the RST, SYN and ACK steps. Every path ends
 * either with the segment dropped (counted) or with one hp__tcp_output()
 * call that sends what the segment made due (data, an ACK). After
 * hp__tcp_drop() or hp__tcp_closed() the block may be freed: nothing of it
 * is touched again.
 */

/* The unscaled window of a SYN (RFC 7323 2.2). */
#define WND_MAX_UNSCALED 65535u
/* A TSecr older than this is not an RTT sample but a peer's bug (the
 * sample in us must fit 32 bits). */
#define TS_RTT_MAX_MS (UINT32_MAX / 1000u)

/* ---- input hygiene --------------------------------------------------------------- */

static size_t addr_len(int family)
{
    return family == 6 ? 16 : 4;
}

/* Multicast, the limited broadcast, or the directed broadcast of one of
 * ifc's prefixes (RFC 1122 3.2.1.3, RFC 919): a segment to or from one is
 * no connection's (RFC 9293 3.9.1 MUST-57 and 3.10.7.2; RFC 1122
 * 4.2.3.10). */
static bool not_unicast(const struct hp__iface *ifc, int family, const uint8_t *a)
{
    if (family == 6)
        return hp_ipv6_is_multicast(a);
    if (hp_ipv4_is_multicast(a) || hp_ipv4_is_broadcast(a))
        return true;
    uint32_t d = hp_get_be32(a);
    for (int i = 0; i < ifc->n4; i++) {
        uint8_t plen = ifc->v4[i].plen;
        if (plen == 0 || plen >= 31) /* RFC 3021: a /31 has no broadcast */
            continue;
        uint32_t host = 0xFFFFFFFFu >> plen;
        uint32_t x = hp_get_be32(ifc->v4[i].addr);
        if ((d & ~host) == (x & ~host) && (d & host) == host)
            return true;
    }
    return false;
}

static bool unspecified(int family, const uint8_t *a)
{
    return family == 6 ? hp_ipv6_is_unspecified(a) : hp_ipv4_is_unspecified(a);
}

/* The window we advertised from rcv_nxt: RCV.WND of the acceptability
 * test. rcv_adv is never moved left (tcp_internal.h), so this is what the
 * peer may send. */
static uint32_t rcv_wnd_now(const struct hp_tcp_sock *c)
{
    return hp__seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
}

/* Answer an unacceptable segment with an ACK and drop it (RFC 9293
 * 3.10.7.4 first step; RFC 7323 5.3 R1). Before ESTABLISHED,
 * hp__tcp_output sends no bare ACK, so it goes directly. */
static void ack_and_drop(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    hp__tcp_seg_free(sg);
    if (hp__tcp_synchronized(c)) {
        c->flags |= HP__TCPF_ACK_NOW;
        (void)hp__tcp_output(c);
    } else {
        (void)hp__tcp_send_ack(c);
    }
}

/* ---- RTT ---------------------------------------------------------------------------- */

/*
 * An ACK of new data is an RTT sample: with timestamps, from its TSecr
 * (RFC 7323 4.1-4.2: each retransmission carries a fresh TSval, so there
 * is no Karn ambiguity; a TSecr of 0 means the peer had nothing to echo,
 * as Linux reads it); without, when it covers the one segment being timed,
 * which tcp_output.c stops timing when anything is retransmitted (Karn,
 * RFC 6298 3). flight: bytes outstanding when the ACK arrived.
 */
static inline uint32_t rtt_on_ack(struct hp_tcp_sock *c, const struct hp_tcp_repr *r, uint32_t ack,
                                  uint32_t flight)
{
    if (c->flags & HP__TCPF_TS_OK) {
        if (r->opt.has_ts && r->opt.ts_ecr != 0) {
            uint32_t ms = hp__tcp_ts_now(c) - r->opt.ts_ecr;
            if (ms <= TS_RTT_MAX_MS) {
                hp__tcp_rtt_sample_ts(&c->rtt, hp__tcp_rtt_cfg_of(c), ms * 1000u, flight, c->smss);
                /* A 0 ms sample (a LAN) says less than 1 ms: 1 us, not "none". */
                return ms ? ms * 1000u : 1u;
            }
        }
        return 0;
    }
    if ((c->flags & HP__TCPF_RTT_TIMING) && hp__seq_ge(ack, c->rtt_seq)) {
        c->flags &= ~HP__TCPF_RTT_TIMING;
        uint32_t u =
            (uint32_t)(c->s->now / 1000u) - c->rtt_start_us; /* wraps in 71 min: RTTs are shorter */
        (void)hp__tcp_rtt_sample(&c->rtt, hp__tcp_rtt_cfg_of(c), u, false);
        return u ? u : 1u;
    }
    return 0;
}

/* ---- FIN ------------------------------------------------------------------------------- */

/* The peer's FIN is in order (RFC 9293 3.10.7.4 eighth step). */
static void fin_in(struct hp_tcp_sock *c)
{
    c->flags |= HP__TCPF_FIN_RCVD;
    c->rcv_nxt++;
    switch (c->state) {
    case HP_TCP_ESTABLISHED:
        hp__tcp_set_state(c, HP_TCP_CLOSE_WAIT);
        /* The application's close, answering the end of stream, may send
         * our FIN before the next poll: it carries the ACK. */
        hp__tcp_ack_soon(c);
        break;
    case HP_TCP_FIN_WAIT_1:
        /* Our FIN is not acknowledged, or the ACK step would have moved
         * us to FIN_WAIT_2 already. */
        c->flags |= HP__TCPF_ACK_NOW;
        hp__tcp_set_state(c, HP_TCP_CLOSING);
        break;
    case HP_TCP_FIN_WAIT_2:
        c->flags |= HP__TCPF_ACK_NOW;
        hp__tcp_time_wait(c);
        break;
    default:
        c->flags |= HP__TCPF_ACK_NOW;
        break;
    }
    hp__tcp_wake(c, HP_EV_IN);
}

/* ---- what the SYNs negotiate beyond hp__tcp_negotiate ----------------------------------------- */

void hp__tcp_negotiate_more(struct hp_tcp_sock *c, const struct hp_tcp_repr *r)
{
    const struct hp_tcp_config *cfg = &hp__tcp(c->s)->cfg;
    /* RFC 2018 2: SACK when both SYNs carry SACK-permitted (ours does
     * unless no_sack; a SYN-ACK offers it only to a SYN that did). */
    if (r->opt.sack_perm && !cfg->no_sack)
        c->flags |= HP__TCPF_SACK_OK;
    else
        c->flags &= ~HP__TCPF_SACK_OK;
    /* RFC 3168 6.1.1: an ECN-setup SYN has ECE and CWR; an ECN-setup
     * SYN-ACK has ECE without CWR, and counts only if our SYN asked. Any
     * other combination (a SYN with one of them, a SYN-ACK with both, or
     * ECE when we did not ask) sets nothing up. */
    uint8_t ef = r->flags & (HP_TCP_F_ECE | HP_TCP_F_CWR);
    bool ecn;
    if (r->flags & HP_TCP_F_ACK)
        ecn = cfg->ecn == HP_TCP_ECN_ON && ef == HP_TCP_F_ECE;
    else
        ecn = cfg->ecn != HP_TCP_ECN_OFF && ef == (HP_TCP_F_ECE | HP_TCP_F_CWR);
    c->flags &= ~(HP__TCPF_ECN_OK | HP__TCPF_ECN_PEND);
    if (c->x)
        memset(&c->x->ecn, 0, sizeof c->x->ecn);
    if (ecn) {
        c->flags |= HP__TCPF_ECN_OK;
        hp__ctr(c->s, HP_CTR_TCP_ECN_NEGOTIATED);
    }
    /* Kept for a later change of the path MTU (tcp_pmtu.c). */
    c->peer_mss = r->opt.has_mss ? r->opt.mss : (c->key.family == 6 ? 1220 : 536);
}

/* ---- SYN-SENT (RFC 9293 3.10.7.3) ---------------------------------------------------------- */

static void syn_sent(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = c->s;
    const struct hp_tcp_repr *r = &sg->r;
    uint8_t fl = r->flags;
    bool ack_ok = false;

    /* First: an ACK of anything but our SYN (SEG.ACK =< ISS or > SND.NXT)
     * gets a reset, unless it is one. */
    if (fl & HP_TCP_F_ACK) {
        if (!(hp__seq_gt(r->ack, c->iss) && hp__seq_le(r->ack, c->snd_max))) {
            hp__ctr(s, HP_CTR_TCP_IN_BAD_ACK);
            hp__tcp_send_rst_reply(s, sg->family, sg->src, sg->dst, r);
            hp__tcp_seg_free(sg);
            return;
        }
        ack_ok = true;
    }
    /* Second: a RST counts only with an acceptable ACK (which makes it as
     * hard to forge as RFC 5961 3 wants); without one it is dropped. */
    if (fl & HP_TCP_F_RST) {
        hp__ctr(s, HP_CTR_TCP_IN_RSTS);
        hp__tcp_seg_free(sg);
        if (ack_ok)
            hp__tcp_drop(c, -ECONNREFUSED);
        return;
    }
    /* Fifth: neither SYN nor RST. */
    if (!(fl & HP_TCP_F_SYN)) {
        hp__tcp_seg_free(sg);
        return;
    }

    /* Fourth: the peer's SYN. */
    c->irs = r->seq;
    c->rcv_nxt = r->seq + 1;
    /* Our SYN offered rcv_wnd bytes, unscaled (tcp_output.c records it). */
    c->rcv_adv = c->rcv_nxt + (c->rcv_wnd < WND_MAX_UNSCALED ? c->rcv_wnd : WND_MAX_UNSCALED);
    c->last_ack_sent = c->rcv_nxt;
    hp__tcp_negotiate(c, &r->opt);
    hp__tcp_negotiate_more(c, r);
    /* RFC 7323 2.2: a SYN's window is never scaled. */
    c->snd_wnd = c->max_snd_wnd = r->window;
    c->snd_wl1 = r->seq;
    c->snd_wl2 = ack_ok ? r->ack : c->iss;
    c->last_rcv_ns = s->now;
    c->ka_probes = 0;

    if (!ack_ok) {
        /* Simultaneous open (RFC 9293 3.5, figure 8): SYN-ACK ours and wait
         * in SYN_RECEIVED for the ACK of our SYN. Text on the SYN is not
         * kept (RFC 9293 allows queueing it; the peer sends it again). */
        hp__tcp_set_state(c, HP_TCP_SYN_RECEIVED);
        hp__tcp_seg_free(sg);
        (void)hp__tcp_send_syn(c);
        return;
    }

    uint32_t flight = c->snd_max - c->snd_una;
    c->snd_una = r->ack;
    if (hp__seq_lt(c->snd_nxt, c->snd_una))
        c->snd_nxt = c->snd_una;
    c->rtx_count = 0;
    (void)hp__tcp_established(c); /* active: cannot fail */
    (void)rtt_on_ack(c, r, r->ack, flight);
    if (c->snd_una == c->snd_max)
        hp__tcp_rtx_stop(c);
    else
        hp__tcp_rtx_restart(c);
    /* The third segment of the handshake: soon, so that the application's
     * first data, sent when it hears the connection is up, carries it (as
     * lwIP's connected callback lets it), or at the next poll. */
    hp__tcp_ack_soon(c);

    /* Text or a FIN on the SYN-ACK: "continue processing at the sixth
     * step" with what follows the SYN, trimmed to our window. */
    sg->seq = r->seq + 1;
    sg->flags &= (uint8_t)~HP_TCP_F_SYN;
    uint32_t wnd = rcv_wnd_now(c);
    if (sg->len > wnd) {
        sg->len = wnd;
        sg->flags &= (uint8_t)~HP_TCP_F_FIN;
    }
    bool fin = hp__tcp_rcv_text(c, sg);
    hp__tcp_seg_free(sg);
    if (fin)
        fin_in(c);
    (void)hp__tcp_output(c);
}

/* ---- ECN (RFC 3168 6.1) ------------------------------------------------------------------- */

/* The ECN field of the segment's IP header (0 when it cannot be read). */
static uint8_t ip_ecn(const struct hp__tcp_seg *sg)
{
    const struct hp_buf *b = sg->b;
    if (!b || b->l3_len < (sg->family == 6 ? 40u : 20u) || b->data_off < b->l3_len)
        return 0;
    const uint8_t *ip = (const uint8_t *)hp_buf_data(b) - b->l3_len;
    return sg->family == 6 ? (uint8_t)((ip[1] >> 4) & 3u) : (uint8_t)(ip[1] & 3u);
}

/* An acceptable segment of an ECN connection: CE is echoed with ECE on
 * every ACK until the peer's CWR (6.1.3), and a CE is acknowledged at
 * once; CWR stops the echo unless the segment itself is CE. */
static void ecn_in(struct hp_tcp_sock *c, const struct hp__tcp_seg *sg)
{
    /* The state is in the extension, which only an ECN event makes: none
     * means nothing owed either way. */
    struct hp__tcp_ext *x = c->x;
    if ((sg->r.flags & HP_TCP_F_CWR) && x)
        x->ecn.ece_owed = false;
    if (ip_ecn(sg) == 3) {
        hp__ctr(c->s, HP_CTR_TCP_ECN_CE_IN);
        c->flags |= HP__TCPF_ACK_NOW;
        if ((x = hp__tcp_ext_get(c)) != NULL) { /* without memory: the CE goes unechoed */
            x->st.ecn_ce_in++;
            x->ecn.ece_owed = true;
        }
    }
    if (x && (x->ecn.ece_owed || x->ecn.cwr_owed))
        c->flags |= HP__TCPF_ECN_PEND;
    else
        c->flags &= ~HP__TCPF_ECN_PEND;
}

/* An ACK with ECE (6.1.2): the congestion response of a loss, without a
 * retransmission, once per window and not inside a loss recovery; the
 * next new data segment carries CWR. */
static void ece_in(struct hp_tcp_sock *c)
{
    hp__ctr(c->s, HP_CTR_TCP_ECN_ECE_IN);
    /* Without memory for the extension, no response (the peer keeps
     * echoing; a later ECE may find memory). */
    struct hp__tcp_ext *x = hp__tcp_ext_get(c);
    if (!x)
        return;
    if (x->ecn.recover_on && !hp__seq_gt(c->snd_una, x->ecn.recover))
        return;
    if (c->cc.in_recovery || ((c->flags & HP__TCPF_SB_LOSS) && x->sb.in_recovery))
        return;
    struct hp__tcp_cc_ev ev = hp__tcp_cc_ev(c, 0, c->snd_max - c->snd_una);
    hp__tcp_cc_reduce(&c->cc, &x->cubic, &ev);
    if (c->cc.cwnd > c->cc.ssthresh)
        c->cc.cwnd = c->cc.ssthresh;
    x->ecn.recover = c->snd_max;
    x->ecn.recover_on = true;
    x->ecn.cwr_owed = true;
    c->flags |= HP__TCPF_ECN_PEND;
    hp__ctr(c->s, HP_CTR_TCP_ECN_REDUCTIONS);
    x->st.ecn_reductions++;
}

/* ---- the synchronized states (RFC 9293 3.10.7.4) ------------------------------------------- */

/*
 * First step: is any of the segment in the window? The four cases of the
 * RFC, with its allowance for a zero window ("valid ACKs, URGs, and RSTs"):
 * a segment at exactly RCV.NXT is always looked at, its text being then
 * trimmed away. That is also how a zero window probe gets its ACK.
 */
static bool acceptable(const struct hp_tcp_sock *c, const struct hp__tcp_seg *sg, uint32_t wnd)
{
    uint32_t seglen =
        sg->len + ((sg->flags & HP_TCP_F_SYN) ? 1u : 0u) + ((sg->flags & HP_TCP_F_FIN) ? 1u : 0u);
    if (sg->seq == c->rcv_nxt)
        return true;
    if (wnd == 0)
        /* The allowance for ACKs: a peer with a one-byte zero window probe
         * outstanding numbers its ACKs RCV.NXT + 1 (BSD and we clamp to
         * the window's edge, not every stack does); refusing them would
         * throw away the ACKs that reopen the peer's own window, and both
         * sides could wait on each other. Their text is trimmed away. */
        return (sg->flags & HP_TCP_F_ACK) && sg->seq == c->rcv_nxt + 1;
    if (hp__seq_in_window(sg->seq, c->rcv_nxt, wnd))
        return true;
    /* A bare ACK numbered at the window's right edge: the peer filled our
     * window and its data there was lost or is still on the way. RFC 9293
     * (3.10.7.4) wants SEG.SEQ < RCV.NXT + RCV.WND; refusing it throws its
     * acknowledgment away, which stalls an echo's recovery until the
     * retransmission timer. Linux accepts SEG.SEQ <= RCV.NXT + RCV.WND. */
    if (seglen == 0 && (sg->flags & HP_TCP_F_ACK) && sg->seq == c->rcv_nxt + wnd)
        return true;
    return seglen > 0 && hp__seq_in_window(sg->seq + seglen - 1, c->rcv_nxt, wnd);
}

/*
 * Trim an acceptable segment to the window: the part before RCV.NXT (a
 * SYN, old bytes, an old FIN) and the part past RCV.NXT + RCV.WND. A FIN
 * right after the last byte in the window is kept even at the window's
 * edge or on a zero window: it takes no buffer space, and the peer could
 * not otherwise close while we do not read (Linux does the same).
 */
static void trim(struct hp_tcp_sock *c, struct hp__tcp_seg *sg, uint32_t wnd)
{
    if ((sg->flags & HP_TCP_F_SYN) && hp__seq_lt(sg->seq, c->rcv_nxt)) {
        sg->flags &= (uint8_t)~HP_TCP_F_SYN;
        sg->seq++;
    }
    if (hp__seq_lt(sg->seq, c->rcv_nxt)) {
        uint32_t d = c->rcv_nxt - sg->seq;
        if (sg->len)
            hp__tcp_dsack_note(c, sg->seq, d < sg->len ? c->rcv_nxt : sg->seq + sg->len);
        if (d > sg->len) {
            /* Everything, the FIN at seq + len included, was seen. */
            sg->flags &= (uint8_t)~HP_TCP_F_FIN;
            d = sg->len;
        }
        sg->off += d;
        sg->len -= d;
        sg->seq = c->rcv_nxt;
    }
    uint32_t used = sg->seq - c->rcv_nxt;
    uint32_t room = wnd > used ? wnd - used : 0;
    if (sg->len > room) {
        sg->len = room;
        sg->flags &= (uint8_t)~HP_TCP_F_FIN;
        c->flags |= HP__TCPF_ACK_NOW; /* tell the peer where the window ends */
    }
}

/*
 * Second step, a RST in the window (RFC 5961 3.2): exactly at RCV.NXT it
 * resets the connection; anywhere else it may be a blind attack, and a
 * challenge ACK makes the real peer answer with an exact one.
 */
static void reset_in(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    hp__ctr(c->s, HP_CTR_TCP_IN_RSTS);
    bool exact = sg->r.seq == c->rcv_nxt;
    hp__tcp_seg_free(sg);
    if (!exact) {
        hp__tcp_challenge_ack(c);
        return;
    }
    switch (c->state) {
    case HP_TCP_SYN_RECEIVED:
        /* A passive open's embryo goes (its listener stays: "return to
         * LISTEN"); an active one (simultaneous open) was refused. */
        hp__tcp_drop(c, c->parent ? -ECONNRESET : -ECONNREFUSED);
        return;
    case HP_TCP_CLOSING:
    case HP_TCP_LAST_ACK:
    case HP_TCP_TIME_WAIT:
        /* Both sides had closed: the connection simply ends (RFC 9293
         * takes TIME-WAIT down too; RFC 1337's alternative is not used). */
        hp__tcp_closed(c);
        return;
    default:
        hp__tcp_drop(c, -ECONNRESET);
        return;
    }
}

/*
 * RFC 7323 4.3 and 5.3 R3: TS.Recent takes the TSval of a segment that
 * starts at or before the last ACK we sent and is not older, so that it
 * echoes the earliest unacknowledged segment (delayed and out-of-order
 * ACKs). The lower bound alone, as 5.3 R3 and Linux have it: the "within
 * the segment" form of 4.3 would never let a pure ACK (SEG.LEN 0) refresh
 * it. After 24 days idle (5.5) any TSval starts it again.
 */
static void ts_recent_update(struct hp_tcp_sock *c, const struct hp_tcp_repr *r)
{
    if (!(c->flags & HP__TCPF_TS_OK) || !r->opt.has_ts)
        return;
    if (!hp__seq_le(r->seq, c->last_ack_sent))
        return;
    /* The same TSval again (the peer's clock ticks at most every ms, many
     * segments share a tick): nothing changes, not even when it was set,
     * which the same value was less than a tick ago (RFC 7323 5.4: at
     * least one tick per second) -- and no division for the time. */
    if (r->opt.ts_val == c->ts_recent)
        return;
    if (hp__ts_ge(r->opt.ts_val, c->ts_recent) ||
        hp__tcp_ts_recent_age_ns(c) > HP__TCP_PAWS_IDLE_NS) {
        c->ts_recent = r->opt.ts_val;
        c->ts_recent_s = hp__tcp_now_s(c->s);
    }
}

/*
 * New bytes acknowledged (SND.UNA < SEG.ACK =< SND.MAX): the send queue
 * drops them (our SYN and FIN take sequence numbers but no queue bytes),
 * RTT sample, congestion control, the retransmission timer (RFC 6298 5.2,
 * 5.3), room in the send buffer. syn_pending: the ACK covers our SYN.
 * @return the HP__TCP_CC_* bits; *fin_acked when it covers our FIN.
 */
static unsigned ack_new(struct hp_tcp_sock *c, const struct hp_tcp_repr *r, bool syn_pending,
                        bool *fin_acked)
{
    uint32_t ack = r->ack;
    uint32_t old_una = c->snd_una;
    uint32_t flight = c->snd_max - old_una;
    uint32_t data_start = syn_pending ? c->iss + 1 : old_una;
    uint32_t fin_seq = data_start + c->sndq.bytes;
    uint32_t upto = hp__seq_lt(ack, fin_seq) ? ack : fin_seq;
    uint32_t data = hp__seq_gt(upto, data_start) ? upto - data_start : 0;
    *fin_acked = (c->flags & HP__TCPF_FIN_SENT) && hp__seq_gt(ack, fin_seq);

    if (data)
        hp__tcp_sndq_drop(&c->sndq, data); /* its start counts them (hp_tcp_info's bytes_acked) */
    c->snd_una = ack;
    /* After a timeout snd_nxt went back to retransmit (go-back-N): what is
     * acknowledged need not be sent again. */
    if (hp__seq_lt(c->snd_nxt, ack))
        c->snd_nxt = ack;
    c->rtx_count = 0;
    uint32_t rtt_us = rtt_on_ack(c, r, ack, flight);

    unsigned cc = HP__TCP_CC_NONE;
    /* hp__tcp_established just started congestion control; in SACK
     * recovery PRR sets cwnd (tcp_sack.c); an application-limited ACK
     * changes nothing (a request/response flow's every ACK). */
    if (!syn_pending && !((c->flags & HP__TCPF_SB_LOSS) && c->x->sb.in_recovery) &&
        hp__tcp_cc_ack_acts(&c->cc, flight)) {
        struct hp__tcp_cc_ev ev = hp__tcp_cc_ev(c, rtt_us, flight);
        /* CUBIC's state only where it may be touched (tcp_cc.c
         * open_window): congestion avoidance, HyStart++'s flights. */
        bool need =
            c->cc.cwnd >= c->cc.ssthresh || flight >= 8u * c->mss_eff || c->cc.hs == HP__HS_CSS;
        cc = hp__tcp_cc_ack(&c->cc, hp__tcp_cubic_of(c, need), ack - old_una, &ev);
    }
    /* The persist timer stays in charge while the window is closed; the
     * window update below decides when it ends. */
    if (!(c->flags & HP__TCPF_PERSIST)) {
        if (c->snd_una == c->snd_max)
            hp__tcp_rtx_stop(c);
        else if (!(cc & HP__TCP_CC_KEEP_RTO))
            hp__tcp_rtx_restart(c);
    }
    if ((c->flags & HP__TCPF_SEND_SPACE) && data && hp__tcp_send_room_ok(c))
        hp__tcp_wake(c, HP_EV_OUT); /* clears SEND_SPACE */
    return cc;
}

/*
 * Fifth step, the ACK field. @return false when the segment is done with
 * (dropped, or the connection closed and perhaps freed).
 */
static bool ack_in(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = c->s;
    const struct hp_tcp_repr *r = &sg->r;
    uint32_t ack = r->ack;
    bool syn_pending = false;

    if (c->state == HP_TCP_SYN_RECEIVED) {
        /* SND.UNA < SEG.ACK =< SND.NXT completes the handshake; any other
         * ACK gets <SEQ=SEG.ACK><CTL=RST>. */
        if (!(hp__seq_gt(ack, c->snd_una) && hp__seq_le(ack, c->snd_max))) {
            hp__ctr(s, HP_CTR_TCP_IN_BAD_ACK);
            hp__tcp_send_rst_reply(s, sg->family, sg->src, sg->dst, r);
            hp__tcp_seg_free(sg);
            return false;
        }
        c->snd_wnd = (uint32_t)r->window << c->snd_wscale;
        c->snd_wl1 = r->seq;
        c->snd_wl2 = ack;
        if (c->snd_wnd > c->max_snd_wnd)
            c->max_snd_wnd = c->snd_wnd;
        if (hp__tcp_established(c) < 0) {
            /* The accept queue is full (counted LISTEN_OVERFLOWS): the ACK
             * is dropped and the embryo waits for the peer to send again,
             * our SYN-ACK timer running. A cookie connection has no timer
             * and no SYN queue slot: it goes, and the next segment of the
             * peer brings the cookie again. */
            hp__tcp_seg_free(sg);
            if (c->flags & HP__TCPF_COOKIE)
                hp__tcp_conn_free(c);
            return false;
        }
        syn_pending = true;
    } else if (!hp__seq_between(c->snd_una - c->max_snd_wnd, ack, c->snd_max)) {
        /* RFC 5961 5.2: acceptable ACKs lie in [SND.UNA - MAX.SND.WND,
         * SND.NXT] (snd_max: snd_nxt may be rewound); others are dropped
         * and answered with a (rate limited) ACK. */
        hp__ctr(s, HP_CTR_TCP_IN_BAD_ACK);
        hp__tcp_seg_free(sg);
        hp__tcp_challenge_ack(c);
        return false;
    }

    uint32_t swnd = (uint32_t)r->window << c->snd_wscale;
    unsigned cc = HP__TCP_CC_NONE;
    bool fin_acked = false;
    uint32_t old_una = c->snd_una;
    if (hp__seq_gt(ack, c->snd_una)) {
        cc = ack_new(c, r, syn_pending, &fin_acked);
    } else if (ack == c->snd_una && c->snd_max != c->snd_una && r->payload_len == 0 &&
               !(r->flags & (HP_TCP_F_SYN | HP_TCP_F_FIN)) && swnd == c->snd_wnd && swnd != 0) {
        /* RFC 5681 2: a duplicate ACK (data outstanding, none carried, no
         * SYN or FIN, SND.UNA unmoved, the same window). A closed window's
         * repeated ACKs are not a loss signal. */
        hp__ctr(s, HP_CTR_TCP_DUP_ACKS);
        HP__TCP_ST_INC(c, dupacks_in);
        /* With a transmit log, RACK finds the losses (tcp_sack.c). */
        if (!(c->flags & HP__TCPF_SB)) {
            struct hp__tcp_cc_ev ev = hp__tcp_cc_ev(c, 0, c->snd_max - c->snd_una);
            cc = hp__tcp_cc_dupack(&c->cc, hp__tcp_cubic_of(c, true), &ev);
            if (cc & HP__TCP_CC_RETRANSMIT) {
                hp__ctr(s, HP_CTR_TCP_FAST_RETRANS);
                HP__TCP_ST_INC(c, fast_retrans);
            }
        }
    }

    /* The send window, from the newest segment only (SND.WL1, SND.WL2),
     * and never from an old ACK (SEG.ACK < SND.UNA). */
    if (ack == c->snd_una &&
        (hp__seq_lt(c->snd_wl1, r->seq) || (c->snd_wl1 == r->seq && hp__seq_le(c->snd_wl2, ack)))) {
        c->snd_wnd = swnd;
        c->snd_wl1 = r->seq;
        c->snd_wl2 = ack;
        if (swnd > c->max_snd_wnd)
            c->max_snd_wnd = swnd;
        if ((c->flags & HP__TCPF_PERSIST) && swnd > 0) {
            /* The window opened: the persist timer ends (rtx_stop clears
             * HP__TCPF_PERSIST). What went into the closed window, the
             * probe's octet and any data past it, goes again now with the
             * rest, from SND.UNA: left in flight, it would hold the next
             * segment back (Nagle) until the RTO. hp__tcp_output arms the
             * retransmission timer for what it sends. */
            hp__tcp_rtx_stop(c);
            c->snd_nxt = c->snd_una;
        }
    }

    if ((c->flags & HP__TCPF_ECN_OK) && (r->flags & HP_TCP_F_ECE) && !syn_pending &&
        hp__seq_gt(c->snd_max, old_una))
        ece_in(c);

    /* The scoreboard: SACK blocks, RACK, recovery (RFC 6675, 8985, 6937). */
    if ((c->flags & (HP__TCPF_SB_LOSS | HP__TCPF_SACK_OK)) == HP__TCPF_SACK_OK && !r->opt.n_sack) {
        if ((c->flags & HP__TCPF_SB) && c->snd_una != old_una)
            hp__tcp_sb_ack_clean(c);
    } else if ((c->flags & (HP__TCPF_SB | HP__TCPF_SB_LOSS)) ||
               ((c->flags & HP__TCPF_SACK_OK) && r->opt.n_sack)) {
        hp__tcp_sb_ack(c, r, old_una);
    }

    if (cc & HP__TCP_CC_RETRANSMIT)
        (void)hp__tcp_retransmit(c);

    if (fin_acked) {
        switch (c->state) {
        case HP_TCP_FIN_WAIT_1:
            hp__tcp_set_state(c, HP_TCP_FIN_WAIT_2);
            hp__tcp_misc_rearm(c); /* the orphan's FIN_WAIT_2 limit */
            break;
        case HP_TCP_CLOSING:
            hp__tcp_time_wait(c);
            break;
        case HP_TCP_LAST_ACK:
            hp__tcp_seg_free(sg);
            hp__tcp_closed(c);
            return false;
        default:
            break;
        }
    }
    return true;
}

void hp__tcp_conn_input(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = c->s;
    const struct hp_tcp_repr *r = &sg->r;
    uint8_t fl = r->flags;

    if (c->state == HP_TCP_SYN_RECEIVED && (fl & HP_TCP_F_SYN) && r->seq == c->irs) {
        if (!(fl & HP_TCP_F_ACK)) {
            /* The peer's SYN again: our SYN-ACK was lost or is late. Answer
             * at once rather than at our timer (as Linux does). */
            hp__tcp_seg_free(sg);
            (void)hp__tcp_send_syn(c);
            return;
        }
        /* Simultaneous open: the peer's SYN-ACK, whose SYN we have. Its
         * ACK is what completes our side (RFC 9293 3.5 figure 8, line 4). */
        sg->seq++;
        sg->flags &= (uint8_t)~HP_TCP_F_SYN;
        fl &= (uint8_t)~HP_TCP_F_SYN;
        c->flags |= HP__TCPF_ACK_NOW;
    }
    /* Fifth step's "if the ACK bit is off drop the segment", taken first:
     * only a SYN or a RST may come without one. */
    if (!(fl & (HP_TCP_F_SYN | HP_TCP_F_RST | HP_TCP_F_ACK))) {
        hp__ctr(s, HP_CTR_TCP_IN_BAD_FLAGS);
        hp__tcp_seg_free(sg);
        return;
    }

    /* RFC 7323 3.2: once timestamps are negotiated every segment but a
     * RST carries one; one without SHOULD be dropped silently (5.3 R1
     * needs it). 5.3 R1, PAWS: an older TSval is an old duplicate. */
    if ((c->flags & HP__TCPF_TS_OK) && !(fl & HP_TCP_F_RST)) {
        if (!r->opt.has_ts) {
            hp__ctr(s, HP_CTR_TCP_IN_BAD_OPTIONS);
            hp__tcp_seg_free(sg);
            return;
        }
        /* TS.Recent's age (a division) only for an older TSval. */
        if (hp__ts_lt(r->opt.ts_val, c->ts_recent) &&
            !hp__tcp_paws_ok(r->opt.ts_val, c->ts_recent, hp__tcp_ts_recent_age_ns(c))) {
            hp__ctr(s, HP_CTR_TCP_PAWS_DROPS);
            ack_and_drop(c, sg);
            return;
        }
    }

    /* First step: sequence numbers. */
    uint32_t wnd = rcv_wnd_now(c);
    if (!acceptable(c, sg, wnd)) {
        hp__ctr(s, HP_CTR_TCP_IN_OUT_OF_WINDOW);
        if (fl & HP_TCP_F_RST) {
            /* RFC 5961 3.2: out of the window, silently. */
            hp__tcp_seg_free(sg);
            return;
        }
        /* TIME-WAIT: a retransmitted FIN (our ACK of it was lost) is
         * acknowledged again and restarts the 2 MSL wait. */
        if (c->state == HP_TCP_TIME_WAIT && (fl & HP_TCP_F_FIN) &&
            r->seq + sg->len + 1 == c->rcv_nxt)
            hp__tcp_time_wait(c);
        /* Data we already have, sent again: a D-SACK tells the sender its
         * retransmission was not needed (RFC 2883 4.1). Only what lies
         * within a window below RCV.NXT: older is not plausible. */
        if (sg->len && hp__seq_lt(sg->seq, c->rcv_nxt) &&
            hp__seq_le(sg->seq + sg->len, c->rcv_nxt) && c->rcv_nxt - sg->seq <= c->rcvbuf)
            hp__tcp_dsack_note(c, sg->seq, sg->seq + sg->len);
        ack_and_drop(c, sg);
        return;
    }
    if (c->flags & HP__TCPF_ECN_OK)
        ecn_in(c, sg);
    /* The peer is alive (RFC 9293 3.8.4): keepalive starts over. */
    c->last_rcv_ns = s->now;
    c->ka_probes = 0;
    trim(c, sg, wnd);

    /* Second step: RST. */
    if (fl & HP_TCP_F_RST) {
        reset_in(c, sg);
        return;
    }
    /* Fourth step: a SYN in a synchronized state, whatever its sequence
     * number (RFC 5961 4.2): a challenge ACK; a restarted peer answers
     * it with a RST that clears the old connection. In SYN-RECEIVED of a
     * passive open, RFC 9293 returns to LISTEN: the embryo goes. */
    if (fl & HP_TCP_F_SYN) {
        hp__tcp_seg_free(sg);
        if (c->state == HP_TCP_SYN_RECEIVED && c->parent)
            hp__tcp_drop(c, -ECONNRESET);
        else
            hp__tcp_challenge_ack(c);
        return;
    }
    /* Fifth step: ACK (present: checked above). */
    ts_recent_update(c, r);
    if (!ack_in(c, sg))
        return;

    /* RFC 1122 4.2.2.13 (RFC 9293 3.6.1): new data for a connection the
     * user closed cannot be delivered; a RST tells the peer it was lost
     * (as Linux does, "TCPAbortOnData"). */
    if ((c->flags & HP__TCPF_ORPHAN) && sg->len > 0 &&
        (c->state == HP_TCP_FIN_WAIT_1 || c->state == HP_TCP_FIN_WAIT_2)) {
        hp__ctr(s, HP_CTR_TCP_ABORT_ON_CLOSE);
        hp__tcp_seg_free(sg);
        hp__tcp_send_rst(c);
        hp__tcp_drop(c, -ECONNRESET);
        return;
    }
    /* Seventh and eighth steps: text and FIN, where the peer may still
     * send. In CLOSE-WAIT, CLOSING, LAST-ACK and TIME-WAIT its FIN is in,
     * and nothing can follow it. */
    bool fin = false;
    if ((c->state == HP_TCP_ESTABLISHED || c->state == HP_TCP_FIN_WAIT_1 ||
         c->state == HP_TCP_FIN_WAIT_2) &&
        !(c->flags & HP__TCPF_FIN_RCVD))
        fin = hp__tcp_rcv_text(c, sg);
    hp__tcp_seg_free(sg);
    if (fin)
        fin_in(c);
    (void)hp__tcp_output(c);
    /* TIME_WAIT reached (or the ACK it owed sent) with nobody holding the
     * socket: the rest of the wait in a compact record (tcp_tw.c). */
    if (c->state == HP_TCP_TIME_WAIT)
        (void)hp__tcp_tw_compact(c);
}

/* ---- TIME-WAIT and a new SYN ------------------------------------------------------------ */

/*
 * A SYN for a connection in TIME-WAIT may open a new incarnation when a
 * listener would take it and it cannot be mistaken for the old one's
 * (RFC 1122 4.2.2.13, RFC 6191): with timestamps on both, its TSval is
 * newer than TS.Recent; otherwise its sequence number is above RCV.NXT.
 * Else it is dropped silently (RFC 6191 2) and TIME-WAIT stays.
 * @return true when the segment was taken; false: process it as usual.
 */
static bool time_wait_syn(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = c->s;
    struct hp__tcp_state *ts = hp__tcp(s);
    struct hp__tcp_key *e = hp__tcp_listen_lookup(ts->table, sg->family, sg->dst, sg->r.dst_port);
    if (!e)
        return false;
    bool ok;
    if ((c->flags & HP__TCPF_TS_OK) && sg->r.opt.has_ts && !ts->cfg.no_timestamps)
        ok = hp__ts_gt(sg->r.opt.ts_val, c->ts_recent);
    else
        ok = hp__seq_gt(sg->r.seq, c->rcv_nxt);
    if (!ok) {
        hp__tcp_seg_free(sg);
        return true;
    }
    hp__ctr(s, HP_CTR_TCP_TW_REUSED);
    hp__tcp_closed(c); /* out of the map; freed if orphaned */
    hp__tcp_listen_input(HP__TCP_ENTRY(e, struct hp_tcp_sock, key), sg);
    return true;
}

/* ---- early demultiplexing (net/stack.c's rx_peek) ---------------------------------------- */

/* Frames ahead of the one being processed whose connections' lines are
 * loading: far enough to cover a block's latency, near enough that they
 * are still in L1 when their frame comes. */
#define EARLY_LINES_AHEAD 4

bool hp__tcp_early_on(const struct hp_stack *s)
{
    const struct hp__tcp_state *ts = s->sock ? s->sock->tcp : NULL;
    return ts && hp__tcp_conn_count(ts->table) >= ts->cfg.early_demux_conns;
}

void hp__tcp_early(struct hp_stack *s, const struct hp_buf *b, int family, const uint8_t *laddr,
                   uint16_t lport, const uint8_t *raddr, uint16_t rport)
{
    struct hp__tcp_state *ts = s->sock ? s->sock->tcp : NULL;
    if (!ts || ts->nhint >= HP__RX_BURST)
        return;
    struct hp__tcp_hint *h = &ts->hint[ts->nhint++];
    hp__tcp_key_init(&h->k, family, laddr, lport, raddr, rport);
    h->b = b;
    h->e = NULL;
    h->h = hp__tcp_table_hash(ts->table, &h->k);
    hp__tcp_conn_prefetch(ts->table, h->h);
}

void hp__tcp_early_step(struct hp_stack *s)
{
    struct hp__tcp_state *ts = s->sock ? s->sock->tcp : NULL;
    if (!ts)
        return;
    uint32_t end = ts->hint_at + EARLY_LINES_AHEAD;
    if (end > ts->nhint)
        end = ts->nhint;
    for (; ts->lines_at < end; ts->lines_at++) {
        struct hp__tcp_hint *h = &ts->hint[ts->lines_at];
        struct hp__tcp_key *e = hp__tcp_conn_peek(ts->table, h->h);
        h->e = e;
        h->epoch = hp__tcp_conn_epoch(ts->table);
        if (e)
            hp__tcp_prefetch_hot(HP__TCP_ENTRY(e, struct hp_tcp_sock, key));
    }
}

void hp__tcp_early_end(struct hp_stack *s)
{
    struct hp__tcp_state *ts = s->sock ? s->sock->tcp : NULL;
    if (ts)
        ts->nhint = ts->hint_at = ts->lines_at = 0;
}

/* k's connection, with the hash early demultiplexing computed when b was
 * peeked, if the peek read the same tuple. Frames are processed in burst
 * order, so b's hint, if it has one, is at or after hint_at; a segment
 * without one (reassembled, or from elsewhere) leaves hint_at alone. */
static struct hp__tcp_key *conn_lookup(struct hp__tcp_state *ts, const struct hp_buf *b,
                                       const struct hp__tcp_key *k)
{
    for (uint32_t i = ts->hint_at; i < ts->nhint; i++) {
        const struct hp__tcp_hint *h = &ts->hint[i];
        if (h->b != b)
            continue;
        ts->hint_at = i + 1;
        if (hp__tcp_key_eq(&h->k, k)) {
            ts->early_hits++;
            return hp__tcp_conn_lookup_peeked(ts->table, k, h->h, h->e, h->epoch);
        }
        break;
    }
    return hp__tcp_conn_lookup(ts->table, k);
}

/* ---- arrival ------------------------------------------------------------------------------ */

void hp__tcp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src,
                   const uint8_t *dst)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_TCP_IN_SEGS);
    struct hp__tcp_state *ts = s->sock ? s->sock->tcp : NULL;
    if (!ts || (family != 4 && family != 6)) {
        hp__ctr(s, HP_CTR_TCP_NO_PORT);
        hp_buf_free(b);
        return;
    }
    /* A reassembled datagram is a chain; the segment is kept zero copy in
     * the receive queue, which wants one buffer per segment. IP input
     * trimmed the link's padding: data_len is the segment's length. */
    if (b->next && hp_buf_linearize(b) != 0) {
        hp__ctr(s, HP_CTR_TCP_IN_ERRS);
        hp_buf_free(b);
        return;
    }

    struct hp__tcp_seg sg;
    sg.ifc = ifc;
    sg.b = b;
    sg.family = family;
    sg.src = src;
    sg.dst = dst;
    struct hp_l4_addrs a = {.family = (uint8_t)family, .src = src, .dst = dst};
    unsigned pf = (b->ol_flags & HP_BUF_OL_L4_CKSUM_GOOD) ? 0u : HP_WIRE_VERIFY_CKSUM;
    int rc = hp_tcp_parse(hp_buf_data(b), b->data_len, &a, &sg.r, pf);
    if (rc < 0) {
        hp__ctr(s, rc == -HP_WIRE_BAD_CHECKSUM ? HP_CTR_TCP_IN_CSUM_ERRORS
                                               : HP_CTR_TCP_IN_BAD_OPTIONS);
        hp__ctr(s, HP_CTR_TCP_IN_ERRS);
        hp_buf_free(b);
        return;
    }
    const struct hp_tcp_repr *r = &sg.r;
    sg.seq = r->seq;
    sg.off = r->data_off;
    sg.len = (uint32_t)r->payload_len;
    sg.flags = r->flags;

    /* Port 0 is nobody's; a segment from our own address and port to
     * itself (a "land" packet) can only be forged: we have no loopback. */
    if (r->src_port == 0 || r->dst_port == 0 ||
        (r->src_port == r->dst_port && memcmp(src, dst, addr_len(family)) == 0)) {
        hp__ctr(s, HP_CTR_TCP_IN_ERRS);
        hp_buf_free(b);
        return;
    }
    /* SYN with FIN or RST has no meaning in any state. */
    if ((r->flags & HP_TCP_F_SYN) && (r->flags & (HP_TCP_F_FIN | HP_TCP_F_RST))) {
        hp__ctr(s, HP_CTR_TCP_IN_BAD_FLAGS);
        hp_buf_free(b);
        return;
    }

    /* Demultiplex: local = destination, remote = source. */
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, family, dst, r->dst_port, src, r->src_port);
    struct hp__tcp_key *e = conn_lookup(ts, b, &k);
    if (e) {
        struct hp_tcp_sock *c = HP__TCP_ENTRY(e, struct hp_tcp_sock, key);
        if (c->state != HP_TCP_CLOSED && c->state != HP_TCP_LISTEN) {
            c->segs_in++;
            if (c->state == HP_TCP_SYN_SENT) {
                syn_sent(c, &sg);
                return;
            }
            if (c->state == HP_TCP_TIME_WAIT &&
                (r->flags & (HP_TCP_F_SYN | HP_TCP_F_ACK)) == HP_TCP_F_SYN && time_wait_syn(c, &sg))
                return;
            hp__tcp_conn_input(c, &sg);
            return;
        }
    }
    /* Unicast only, both ways (RFC 9293 3.9.1, RFC 1122 4.2.3.10). A
     * connection's own segments skip the test (about 75 instructions, the
     * interface's prefixes walked twice): its tuple passed it when it was
     * made (its SYN, here; hp_tcp_connect refuses the others), and a
     * multicast, broadcast or unspecified address cannot be in it. */
    if (not_unicast(ifc, family, dst) || not_unicast(ifc, family, src) ||
        unspecified(family, src)) {
        hp__ctr(s, HP_CTR_TCP_IN_ERRS);
        hp_buf_free(b);
        return;
    }
    e = hp__tcp_tw_lookup(ts->table, &k);
    if (e) {
        hp__tcp_tw_input(s, HP__TCP_ENTRY(e, struct hp__tcp_tw, key), &sg);
        return;
    }
    e = hp__tcp_listen_lookup(ts->table, family, dst, r->dst_port);
    if (e) {
        hp__tcp_listen_input(HP__TCP_ENTRY(e, struct hp_tcp_sock, key), &sg);
        return;
    }
    /* CLOSED (RFC 9293 3.10.7.1): a reset for anything but a reset. */
    hp__ctr(s, HP_CTR_TCP_NO_PORT);
    hp__tcp_send_rst_reply(s, family, src, dst, r);
    hp_buf_free(b);
}
