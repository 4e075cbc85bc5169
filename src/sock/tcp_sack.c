/* SPDX-License-Identifier: BSD-3-Clause */
/* The sender's transmit log and SACK scoreboard (RFC 2018, RFC 6675), D-SACK (RFC 2883), RACK-TLP (RFC 8985), PRR (RFC 6937) and the undo of spurious reductions. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/tcp.h>

#include "tcp_internal.h"

#define LOG_CAP0       64u
#define LOG_CAP_MAX    (1u << 16) /* beyond: the last entry grows instead (coarser, never wrong) */
#define DUPTHRESH      3u         /* RFC 6675 / RFC 8985 6.2 */
#define WCDELACK_NS    200000000ull    /* RFC 8985 7.2 WCDelAckT: a worst-case delayed ACK */
#define PTO_MIN_NS     10000000ull     /* a floor under 2 SRTT on fast paths, as Linux */
#define PROMPT_ACKS    2u              /* ACKs in a row that show a peer not delaying (ack_pace) */
#define MIN_RTT_WIN_NS 300000000000ull /* RACK.min_RTT's window (RFC 8985 6.1: "recent") */
#define REO_PERSIST    16u             /* RFC 8985 6.2 step 4 */

/* The scoreboard, in c's extension: only functions reached with one call
 * it (the entry points below check, or their flags imply one: HP__TCPF_SB
 * and HP__TCPF_SB_LOSS are only ever set with it). */
static inline struct hp__tcp_sb *sbp(const struct hp_tcp_sock *c)
{
    return &c->x->sb;
}

static inline struct hp__tcp_txseg *at(const struct hp__tcp_sb *sb, uint32_t i)
{
    return &sb->seg[(sb->head + i) & (sb->cap - 1)];
}

void hp__tcp_sb_init(struct hp__tcp_sb *sb)
{
    memset(sb, 0, sizeof *sb);
    sb->reo_mult = 1;
    sb->reordering = DUPTHRESH;
}

void hp__tcp_sb_free(struct hp_tcp_sock *c)
{
    c->flags &= ~(HP__TCPF_SB | HP__TCPF_SB_LOSS);
    if (!c->x)
        return;
    free(sbp(c)->seg);
    sbp(c)->seg = NULL;
    sbp(c)->cap = sbp(c)->n = sbp(c)->head = 0;
    c->flags &= ~(HP__TCPF_SB | HP__TCPF_SB_LOSS);
}

/* ---- the counters ------------------------------------------------------------- */

/* Add (sign 1) or remove (sign -1) n bytes of an entry with flags f. */
static void acct(struct hp__tcp_sb *sb, uint8_t f, uint32_t n, int sign)
{
    uint32_t d = sign > 0 ? n : (uint32_t)-n;
    if (f & HP__TXS_SACKED) {
        sb->sacked += d;
        sb->nsacked += sign > 0 ? 1u : (uint32_t)-1;
        return;
    }
    if (f & HP__TXS_LOST)
        sb->lost += d;
    if (f & HP__TXS_RETRANS)
        sb->rtx_out += d;
}

static void set_flags(struct hp__tcp_sb *sb, struct hp__tcp_txseg *e, uint8_t f)
{
    acct(sb, e->flags, e->end - e->seq, -1);
    e->flags = f;
    acct(sb, f, e->end - e->seq, 1);
}

/* The slow path flag follows the state. */
static void update_flags(struct hp_tcp_sock *c)
{
    struct hp__tcp_sb *sb = sbp(c);
    if (sb->cap)
        c->flags |= HP__TCPF_SB;
    else
        c->flags &= ~HP__TCPF_SB;
    if (sb->sacked || sb->lost || sb->rtx_out || sb->in_recovery || sb->tlp_out || sb->reo_due)
        c->flags |= HP__TCPF_SB_LOSS;
    else
        c->flags &= ~HP__TCPF_SB_LOSS;
}

uint32_t hp__tcp_sb_pipe(const struct hp_tcp_sock *c)
{
    uint32_t flight = c->snd_max - c->snd_una;
    if (!c->x)
        return flight;
    const struct hp__tcp_sb *sb = sbp(c);
    uint64_t out = (uint64_t)sb->sacked + sb->lost;
    uint64_t pipe = (flight > out ? flight - out : 0) + (uint64_t)sb->rtx_out;
    return pipe > UINT32_MAX ? UINT32_MAX : (uint32_t)pipe;
}

void hp__tcp_sb_reset(struct hp_tcp_sock *c)
{
    if (!c->x) {
        c->flags &= ~(HP__TCPF_SB | HP__TCPF_SB_LOSS);
        return;
    }
    struct hp__tcp_sb *sb = sbp(c);
    sb->n = sb->head = 0;
    sb->sacked = sb->lost = sb->rtx_out = sb->nsacked = 0;
    sb->in_recovery = false;
    sb->tlp_out = sb->tlp_dsack = false;
    sb->reo_due = 0;
    update_flags(c);
}

/* ---- the log ------------------------------------------------------------------- */

static bool grow(struct hp__tcp_sb *sb)
{
    uint32_t cap = sb->cap ? sb->cap * 2 : LOG_CAP0;
    if (cap > LOG_CAP_MAX)
        return false;
    struct hp__tcp_txseg *p = malloc((size_t)cap * sizeof *p);
    if (!p)
        return false;
    for (uint32_t i = 0; i < sb->n; i++)
        p[i] = *at(sb, i);
    free(sb->seg);
    sb->seg = p;
    sb->cap = cap;
    sb->head = 0;
    return true;
}

static void append(struct hp_tcp_sock *c, uint32_t seq, uint32_t end, uint64_t t)
{
    struct hp__tcp_sb *sb = sbp(c);
    if (sb->n) {
        /* Segments sent together (the same clock reading) make one entry:
         * a run, split later where SACK blocks or retransmissions cut it. */
        struct hp__tcp_txseg *l = at(sb, sb->n - 1);
        if (l->xmit_ns == t && l->end == seq && l->flags == 0) {
            l->end = end;
            return;
        }
    }
    if (sb->n == sb->cap && !grow(sb)) {
        if (!sb->n)
            return; /* no memory: the connection goes on without a log (NewReno) */
        /* Full: the last entry covers the new range too. */
        struct hp__tcp_txseg *l = at(sb, sb->n - 1);
        acct(sb, l->flags, l->end - l->seq, -1);
        l->end = end;
        l->xmit_ns = t;
        l->flags &= (uint8_t) ~(HP__TXS_SACKED | HP__TXS_LOST);
        acct(sb, l->flags, l->end - l->seq, 1);
        return;
    }
    struct hp__tcp_txseg *e = at(sb, sb->n++);
    e->seq = seq;
    e->end = end;
    e->xmit_ns = t;
    e->flags = 0;
    c->flags |= HP__TCPF_SB;
}

/* The first entry whose end lies after seq (the one holding seq, or the
 * next): entries are in sequence order from snd_una. */
static uint32_t find(const struct hp_tcp_sock *c, uint32_t seq)
{
    const struct hp__tcp_sb *sb = sbp(c);
    uint32_t una = c->snd_una, lo = 0, hi = sb->n, off = seq - una;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (at(sb, mid)->end - una <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Cut entry i in two at seq (inside it): both halves keep its flags and
 * time. @return false when the log cannot grow (the entry stays whole). */
static bool split(struct hp__tcp_sb *sb, uint32_t i, uint32_t seq)
{
    if (sb->n == sb->cap && !grow(sb))
        return false;
    for (uint32_t k = sb->n; k > i + 1; k--)
        *at(sb, k) = *at(sb, k - 1);
    sb->n++;
    struct hp__tcp_txseg *e = at(sb, i), *f = at(sb, i + 1);
    *f = *e;
    acct(sb, e->flags, e->end - e->seq, -1);
    e->end = seq;
    f->seq = seq;
    acct(sb, e->flags, e->end - e->seq, 1);
    acct(sb, f->flags, f->end - f->seq, 1);
    return true;
}

/* Make seq an entry boundary, if it falls inside one. */
static void cut_at(struct hp_tcp_sock *c, uint32_t seq)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint32_t i = find(c, seq);
    if (i < sb->n && hp__seq_lt(at(sb, i)->seq, seq))
        (void)split(sb, i, seq);
}

/* The single segment sent into an empty flight becomes an entry. */
static void materialize(struct hp_tcp_sock *c)
{
    if (sbp(c)->n == 0 && c->snd_una != c->snd_max)
        append(c, c->snd_una, c->snd_max, c->last_send_ns);
}

static void mark_retrans(struct hp_tcp_sock *c, uint32_t seq, uint32_t end, uint64_t now)
{
    struct hp__tcp_sb *sb = sbp(c);
    cut_at(c, seq);
    cut_at(c, end);
    for (uint32_t i = find(c, seq); i < sb->n; i++) {
        struct hp__tcp_txseg *e = at(sb, i);
        if (!hp__seq_lt(e->seq, end))
            break;
        if (e->flags & HP__TXS_SACKED)
            continue;
        if (!(e->flags & HP__TXS_RETRANS))
            sb->undo_retrans++;
        set_flags(sb, e, (uint8_t)(e->flags | HP__TXS_RETRANS | HP__TXS_EVER));
        e->xmit_ns = now;
    }
}

void hp__tcp_sb_sent_slow(struct hp_tcp_sock *c, uint32_t seq, uint32_t end)
{
    uint64_t now = c->s->now;
    uint32_t max = c->snd_max;
    uint32_t logged = c->x ? sbp(c)->n : 0;
    if ((c->flags & HP__TCPF_SB_LOSS) && sbp(c)->in_recovery)
        sbp(c)->prr_out += end - seq;
    if (seq == max && logged) {
        /* New data after logged data: the common case of a bulk sender. */
        append(c, seq, end, now);
        return;
    }
    if (seq == max && c->snd_una == max && logged == 0) {
        /* Into an empty flight: not logged (see tcp_sack.h); its time is
         * what a later entry for it takes. */
        c->last_send_ns = now;
        return;
    }
    /* The log starts: the extension holds it. Without memory, no log
     * (recovery as without SACK). */
    if (!hp__tcp_ext_get(c))
        return;
    materialize(c);
    if (hp__seq_lt(seq, max)) {
        mark_retrans(c, seq, hp__seq_lt(end, max) ? end : max, now);
        update_flags(c);
    }
    if (hp__seq_gt(end, max))
        append(c, hp__seq_gt(seq, max) ? seq : max, end, now);
}

bool hp__tcp_sb_next_lost(const struct hp_tcp_sock *c, uint32_t *seq, uint32_t *end)
{
    if (!c->x)
        return false;
    const struct hp__tcp_sb *sb = sbp(c);
    if (!sb->lost)
        return false;
    for (uint32_t i = 0; i < sb->n; i++) {
        const struct hp__tcp_txseg *e = at(sb, i);
        if ((e->flags & (HP__TXS_LOST | HP__TXS_RETRANS | HP__TXS_SACKED)) == HP__TXS_LOST) {
            *seq = e->seq;
            *end = e->end;
            return true;
        }
    }
    return false;
}

/* ---- RACK (RFC 8985 6) --------------------------------------------------------------- */

/* Segment e was delivered (acknowledged or SACKed) by this ACK. */
static inline void rack_update(struct hp_tcp_sock *c, const struct hp__tcp_txseg *e, uint64_t now)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t rtt = now > e->xmit_ns ? now - e->xmit_ns : 1;
    /* 6.2 step 2: a retransmitted segment's ACK may answer the original:
     * an RTT below the minimum says it does. */
    if ((e->flags & HP__TXS_EVER) && rtt < sb->min_rtt_ns)
        return;
    sb->rack_rtt_ns = rtt;
    if (rtt < sb->min_rtt_ns || !sb->min_rtt_ns || now - sb->min_rtt_at > MIN_RTT_WIN_NS) {
        sb->min_rtt_ns = rtt;
        sb->min_rtt_at = now;
    }
    if (e->xmit_ns > sb->rack_xmit_ns ||
        (e->xmit_ns == sb->rack_xmit_ns && hp__seq_gt(e->end, sb->rack_end))) {
        sb->rack_xmit_ns = e->xmit_ns;
        sb->rack_end = e->end;
    }
}

/* 6.2 step 3: a segment delivered below the highest delivered one, never
 * retransmitted, was reordered. */
static void reorder_check(struct hp_tcp_sock *c, const struct hp__tcp_txseg *e, uint32_t fack)
{
    struct hp__tcp_sb *sb = sbp(c);
    if ((e->flags & HP__TXS_EVER) || !hp__seq_lt(e->end, fack))
        return;
    if (!sb->reordering_seen)
        hp__ctr(c->s, HP_CTR_TCP_REORDER_SEEN);
    sb->reordering_seen = true;
    uint32_t mss = c->mss_eff ? c->mss_eff : 1;
    uint32_t deg = (fack - e->seq + mss - 1) / mss;
    if (deg > sb->reordering)
        sb->reordering = deg;
}

/* 6.2 step 4: the reordering window. */
static uint64_t reo_wnd_ns(const struct hp_tcp_sock *c)
{
    const struct hp__tcp_sb *sb = sbp(c);
    if (!sb->reordering_seen && (sb->in_recovery || sb->sacked >= DUPTHRESH * (uint32_t)c->mss_eff))
        return 0;
    uint64_t srtt = hp__tcp_rtt_srtt_us(&c->rtt);
    srtt *= 1000u;
    uint64_t w = (sb->min_rtt_ns ? sb->min_rtt_ns : srtt) / 4 * sb->reo_mult;
    if (srtt && w > srtt)
        w = srtt;
    return w;
}

/* 6.2 step 5: entries sent before the latest delivered one, and not
 * delivered since RACK.rtt + reo_wnd, are lost. @return ns until the next
 * one would be (0: none). */
static uint64_t rack_detect(struct hp_tcp_sock *c, uint64_t now, bool *congestion)
{
    struct hp__tcp_sb *sb = sbp(c);
    if (!sb->rack_xmit_ns)
        return 0;
    uint64_t wait = sb->rack_rtt_ns + reo_wnd_ns(c), next = 0;
    for (uint32_t i = 0; i < sb->n; i++) {
        struct hp__tcp_txseg *e = at(sb, i);
        uint8_t f = e->flags;
        if ((f & HP__TXS_SACKED) || (f & (HP__TXS_LOST | HP__TXS_RETRANS)) == HP__TXS_LOST)
            continue;
        if (e->xmit_ns > sb->rack_xmit_ns ||
            (e->xmit_ns == sb->rack_xmit_ns && !hp__seq_lt(e->end, sb->rack_end)))
            continue; /* sent after the latest delivered: no evidence yet */
        uint64_t due = e->xmit_ns + wait;
        if (due <= now) {
            /* Lost (again, if it was a retransmission). A lost MTU probe
             * says the MTU is too big, not that the path is congested
             * (RFC 4821 7.6.2). */
            set_flags(sb, e, (uint8_t)((f | HP__TXS_LOST) & ~(HP__TXS_RETRANS | HP__TXS_PROBE)));
            if (f & HP__TXS_PROBE)
                hp__tcp_pmtu_probe_lost(c);
            else
                *congestion = true;
            hp__ctr(c->s, HP_CTR_TCP_RACK_LOSSES);
        } else if (!next || due - now > next) {
            next = due - now;
        }
    }
    return next;
}

/* ---- recovery and PRR ---------------------------------------------------------------- */

static void recovery_enter(struct hp_tcp_sock *c)
{
    struct hp__tcp_sb *sb = sbp(c);
    struct hp__tcp_cc_ev ev = hp__tcp_cc_ev(c, 0, c->snd_max - c->snd_una);
    hp__tcp_cc_reduce(&c->cc, hp__tcp_cubic_of(c, true), &ev);
    sb->in_recovery = true;
    sb->recover = c->snd_max;
    sb->prr_delivered = sb->prr_out = 0;
    sb->recover_fs = c->snd_max - c->snd_una;
    sb->undo_retrans = 0;
    sb->undo_ok = true;
    sb->tlp_out = sb->tlp_dsack = false; /* a probe's episode becomes this recovery */
    c->cc.recover = c->snd_max - 1;
    hp__ctr(c->s, HP_CTR_TCP_SACK_RECOVERIES);
    hp__ctr(c->s, HP_CTR_TCP_FAST_RETRANS);
    HP__TCP_ST_INC(c, fast_retrans);
}

static void recovery_exit(struct hp_tcp_sock *c)
{
    struct hp__tcp_sb *sb = sbp(c);
    sb->in_recovery = false;
    /* RFC 6937: cwnd = ssthresh at the end of recovery. */
    if (c->cc.ssthresh != UINT32_MAX)
        c->cc.cwnd = c->cc.ssthresh;
    if (sb->reo_persist && --sb->reo_persist == 0)
        sb->reo_mult = 1;
}

/* RFC 6937 3, with the slow start reduction bound; delivered: bytes this
 * ACK newly delivered (acknowledged or SACKed). */
static void prr_ack(struct hp_tcp_sock *c, uint32_t delivered)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint32_t mss = c->mss_eff;
    sb->prr_delivered += delivered;
    uint32_t pipe = hp__tcp_sb_pipe(c);
    uint32_t ss = c->cc.ssthresh;
    int64_t sndcnt;
    if (pipe > ss) {
        uint64_t fs = sb->recover_fs ? sb->recover_fs : 1;
        sndcnt = (int64_t)(((uint64_t)sb->prr_delivered * ss + fs - 1) / fs) - sb->prr_out;
    } else {
        int64_t lim = (int64_t)sb->prr_delivered - sb->prr_out;
        if (lim < (int64_t)delivered)
            lim = delivered;
        lim += mss;
        sndcnt = (int64_t)ss - pipe;
        if (sndcnt > lim)
            sndcnt = lim;
    }
    if (sndcnt < 0)
        sndcnt = 0;
    /* The first retransmission goes in any case (RFC 9937's addition). */
    if (sb->prr_out == 0 && sndcnt == 0)
        sndcnt = mss;
    uint64_t w = (uint64_t)pipe + (uint64_t)sndcnt;
    c->cc.cwnd = w > HP__TCP_CC_CWND_MAX ? HP__TCP_CC_CWND_MAX : (uint32_t)w;
}

/* A reduction turned out needless: every retransmission of the episode
 * came back as a D-SACK (RFC 2883 5, RFC 9438 4.9). */
static void undo(struct hp_tcp_sock *c)
{
    struct hp__tcp_sb *sb = sbp(c);
    if (!sb->undo_ok)
        return;
    sb->undo_ok = false;
    hp__tcp_cc_undo(&c->cc, hp__tcp_cubic_of(c, false));
    if (sb->in_recovery)
        sb->in_recovery = false;
    hp__ctr(c->s, HP_CTR_TCP_SPURIOUS_UNDO);
    HP__TCP_ST_INC(c, spurious_undos);
}

/* ---- an ACK ---------------------------------------------------------------------------- */

/* Drop the entries SND.UNA passed; those not SACKed before are delivered
 * now. @return bytes newly delivered that were not SACKed. */
static uint32_t pop_acked(struct hp_tcp_sock *c, uint64_t now)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint32_t una = c->snd_una, fack = sb->fack, newly = 0;
    while (sb->n) {
        struct hp__tcp_txseg *e = at(sb, 0);
        if (hp__seq_le(e->end, una)) {
            if (!(e->flags & HP__TXS_SACKED)) {
                newly += e->end - e->seq;
                rack_update(c, e, now);
                reorder_check(c, e, fack);
            }
            acct(sb, e->flags, e->end - e->seq, -1);
            sb->head = (sb->head + 1) & (sb->cap - 1);
            sb->n--;
            continue;
        }
        if (hp__seq_lt(e->seq, una)) {
            /* Partly acknowledged (a peer that acknowledges inside a
             * segment): the rest stays. */
            acct(sb, e->flags, e->end - e->seq, -1);
            if (!(e->flags & HP__TXS_SACKED))
                newly += una - e->seq;
            e->seq = una;
            acct(sb, e->flags, e->end - e->seq, 1);
        }
        break;
    }
    if (!sb->n)
        sb->head = 0;
    if (hp__seq_gt(una, sb->fack))
        sb->fack = una;
    return newly;
}

/* The first block is a D-SACK (RFC 2883 4): at or below the ACK, or
 * inside the second block. */
static bool is_dsack(const struct hp_tcp_repr *r)
{
    const uint32_t(*b)[2] = r->opt.sack;
    if (hp__seq_le(b[0][1], r->ack))
        return true;
    return r->opt.n_sack > 1 && hp__seq_ge(b[0][0], b[1][0]) && hp__seq_le(b[0][1], b[1][1]);
}

static void dsack_in(struct hp_tcp_sock *c, uint32_t l, uint32_t r)
{
    struct hp__tcp_sb *sb = sbp(c);
    /* Plausible: non-empty, no larger than a window, not far below. */
    if (!hp__seq_lt(l, r) || r - l > c->max_snd_wnd + c->mss_eff ||
        hp__seq_lt(l, c->snd_una - c->max_snd_wnd - c->mss_eff) || hp__seq_gt(r, c->snd_max)) {
        hp__ctr(c->s, HP_CTR_TCP_SACK_BAD_BLOCKS);
        return;
    }
    hp__ctr(c->s, HP_CTR_TCP_DSACK_IN);
    HP__TCP_ST_INC(c, dsacks_in);
    if (sb->tlp_dsack && hp__seq_le(r, sb->tlp_end) && hp__seq_ge(r, sb->tlp_end - c->mss_eff)) {
        /* The probe was a duplicate (the original had arrived): a timer's
         * doing, not reordering's, so the window stays (as Linux); the
         * reduction its ACK made, if any (tlp_ack), is undone. */
        sb->tlp_dsack = sb->tlp_out = false;
        if (sb->undo_retrans && --sb->undo_retrans == 0)
            undo(c);
        return;
    }
    /* RFC 8985 6.2 step 4: a D-SACK widens the reordering window, once
     * per round trip, for the next 16 recoveries. */
    if (!sb->dsack_round_on || hp__seq_ge(c->snd_una, sb->dsack_round)) {
        sb->dsack_round_on = true;
        sb->dsack_round = c->snd_max;
        if (sb->reo_mult < 64)
            sb->reo_mult++;
        sb->reo_persist = REO_PERSIST;
    }
    sb->reordering_seen = true;
    if (sb->undo_retrans && --sb->undo_retrans == 0)
        undo(c);
}

/* Mark the entries inside [l, r) SACKed. @return bytes newly SACKed. */
static uint32_t sack_block(struct hp_tcp_sock *c, uint32_t l, uint32_t r, uint64_t now)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint32_t newly = 0, fack = sb->fack;
    cut_at(c, l);
    cut_at(c, r);
    for (uint32_t i = find(c, l); i < sb->n; i++) {
        struct hp__tcp_txseg *e = at(sb, i);
        if (hp__seq_gt(e->end, r))
            break;
        if (hp__seq_lt(e->seq, l) || (e->flags & HP__TXS_SACKED))
            continue;
        newly += e->end - e->seq;
        rack_update(c, e, now);
        reorder_check(c, e, fack);
        if ((e->flags & HP__TXS_PROBE) && c->x->plp.probe_out)
            c->x->plp.probe_end = c->snd_una; /* the probe got through: success at the next check */
        set_flags(sb, e,
                  (uint8_t)((e->flags | HP__TXS_SACKED) & ~(HP__TXS_LOST | HP__TXS_RETRANS)));
        if (hp__seq_gt(e->end, sb->fack))
            sb->fack = e->end;
    }
    return newly;
}

/* The ACK's SACK blocks. @return bytes newly SACKed; *dsack when it
 * carried one. */
static uint32_t sack_blocks(struct hp_tcp_sock *c, const struct hp_tcp_repr *r, uint64_t now,
                            bool *dsack)
{
    uint32_t newly = 0;
    int i = 0;
    if (is_dsack(r)) {
        *dsack = true;
        dsack_in(c, r->opt.sack[0][0], r->opt.sack[0][1]);
        i = 1;
    }
    for (; i < r->opt.n_sack; i++) {
        uint32_t l = r->opt.sack[i][0], rr = r->opt.sack[i][1];
        /* RFC 2018 3: blocks of data held above the ACK; anything else
         * (outside what we sent, empty, inverted) is ignored. */
        if (!hp__seq_lt(l, rr) || hp__seq_lt(l, c->snd_una) || hp__seq_gt(rr, c->snd_max)) {
            hp__ctr(c->s, HP_CTR_TCP_SACK_BAD_BLOCKS);
            continue;
        }
        hp__ctr(c->s, HP_CTR_TCP_SACK_BLOCKS_IN);
        if (sbp(c)->n)
            newly += sack_block(c, l, rr, now);
    }
    return newly;
}

/* RFC 8985 7.4: what the ACK says about an outstanding tail loss probe. */
static void tlp_ack(struct hp_tcp_sock *c, const struct hp_tcp_repr *r, bool advanced,
                    uint32_t newly)
{
    struct hp__tcp_sb *sb = sbp(c);
    if (!sb->tlp_out || hp__seq_lt(r->ack, sb->tlp_end))
        return;
    sb->tlp_out = false;
    if (!sb->tlp_is_rtx)
        return; /* new data: RACK judges the rest */
    if (!advanced && !newly)
        return; /* a pure duplicate ACK: both the original and the probe arrived */
    /* The probe repaired a loss: the congestion response of a fast
     * recovery, without one (7.4.2). */
    struct hp__tcp_cc_ev ev = hp__tcp_cc_ev(c, 0, c->snd_max - c->snd_una);
    hp__tcp_cc_reduce(&c->cc, hp__tcp_cubic_of(c, true), &ev);
    if (c->cc.cwnd > c->cc.ssthresh)
        c->cc.cwnd = c->cc.ssthresh;
    sb->undo_ok = true;
    sb->undo_retrans = 1; /* a D-SACK of the probe undoes it */
    hp__ctr(c->s, HP_CTR_TCP_TLP_RECOVERIES);
}

/* The delivery rate (hp_tcp_info): bytes delivered per round trip. */
static void rate_round(struct hp_tcp_sock *c, uint64_t now)
{
    struct hp__tcp_sb *sb = sbp(c);
    if (sb->round_ns && hp__seq_lt(c->snd_una, sb->round_end))
        return;
    if (sb->round_ns && now > sb->round_ns)
        sb->rate = (sb->delivered - sb->round_delivered) * 1000000000ull / (now - sb->round_ns);
    sb->round_ns = now;
    sb->round_delivered = sb->delivered;
    sb->round_end = c->snd_max;
}

/* Whether the peer ACKs each segment at once (a receiver in quick-ACK
 * mode, or one that never delays): a clean ACK of at most one segment
 * whose RTT sample is within RACK's reordering window of the minimum
 * (the margin the probe allows, pto_at) counts; a stretch ACK (two
 * segments or more: a receiver that delays, or coalesces) or a late one
 * starts the count again. Out-of-order data draws immediate ACKs from
 * any receiver, so ACKs with SACK blocks do not count (only the clean
 * path calls this). */
static void ack_pace(struct hp_tcp_sock *c, uint32_t newly, const struct hp__tcp_txseg *last)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t rtt = c->s->now > last->xmit_ns ? c->s->now - last->xmit_ns : 0;
    bool prompt = newly <= c->mss_eff && !(last->flags & HP__TXS_EVER) && sb->min_rtt_ns &&
                  rtt <= sb->min_rtt_ns + reo_wnd_ns(c);
    if (!prompt)
        sb->prompt_acks = 0;
    else if (sb->prompt_acks < UINT8_MAX)
        sb->prompt_acks++;
}

/* The clean path: nothing SACKed, lost or retransmitted (so no entry
 * carries a counted flag), no SACK blocks: drop what the ACK covers, one
 * RACK update for the latest delivered. */
void hp__tcp_sb_ack_clean(struct hp_tcp_sock *c)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t now = c->s->now;
    uint32_t una = c->snd_una, newly = 0;
    struct hp__tcp_txseg last = {0};
    bool any = false;
    while (sb->n) {
        struct hp__tcp_txseg *e = at(sb, 0);
        if (hp__seq_le(e->end, una)) {
            newly += e->end - e->seq;
            last = *e;
            any = true;
            sb->head = (sb->head + 1) & (sb->cap - 1);
            sb->n--;
            continue;
        }
        if (hp__seq_lt(e->seq, una)) {
            newly += una - e->seq;
            last = *e;
            any = true;
            e->seq = una;
        }
        break;
    }
    if (any) {
        rack_update(c, &last, now);
        ack_pace(c, newly, &last);
    }
    if (!sb->n)
        sb->head = 0;
    sb->fack = una;
    sb->delivered += newly;
    rate_round(c, now);
    if (c->x->plp.high > c->x->plp.low)
        hp__tcp_pmtu_on_ack(c);
}

void hp__tcp_sb_ack(struct hp_tcp_sock *c, const struct hp_tcp_repr *r, uint32_t old_una)
{
    /* SACK blocks on a connection that had no log (one segment in
     * flight): the scoreboard starts. Without memory they go unused. */
    if (!hp__tcp_ext_get(c))
        return;
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t now = c->s->now;
    bool advanced = c->snd_una != old_una;
    if (!(c->flags & HP__TCPF_SB_LOSS) && !((c->flags & HP__TCPF_SACK_OK) && r->opt.n_sack)) {
        if (advanced)
            hp__tcp_sb_ack_clean(c);
        return;
    }
    bool was_loss = (c->flags & HP__TCPF_SB_LOSS) != 0;
    uint32_t sacked_before = sb->sacked;
    if (hp__seq_lt(sb->fack, old_una) || hp__seq_gt(sb->fack, c->snd_max))
        sb->fack = old_una; /* nothing SACKed above: RACK.fack starts at SND.UNA */
    uint32_t newly = advanced ? pop_acked(c, now) : 0;
    bool dsack = false;
    uint32_t newly_sacked = 0;
    if ((c->flags & HP__TCPF_SACK_OK) && r->opt.n_sack)
        newly_sacked = sack_blocks(c, r, now, &dsack);
    sb->delivered += newly + newly_sacked;
    if (advanced || newly_sacked)
        rate_round(c, now);

    tlp_ack(c, r, advanced, newly_sacked);
    if (sb->in_recovery && hp__seq_ge(c->snd_una, sb->recover))
        recovery_exit(c);

    if (sb->sacked || sb->lost || sb->in_recovery || sb->reo_due) {
        bool cong = false;
        uint64_t next = rack_detect(c, now, &cong);
        if (cong && !sb->in_recovery)
            recovery_enter(c);
        sb->reo_due = next ? now + next : 0;
        if (sb->reo_due)
            hp__tcp_rtx_at(c, sb->reo_due);
    }
    if (sb->in_recovery) {
        /* DeliveredData: the bytes SND.UNA moved less those SACKed before,
         * plus those SACKed now (RFC 6937 3). */
        uint32_t acked = c->snd_una - old_una;
        uint32_t was = sacked_before > sb->sacked ? sacked_before - sb->sacked : 0;
        uint32_t delivered = (acked > was ? acked - was : 0) + newly_sacked;
        prr_ack(c, delivered);
    }
    update_flags(c);
    /* Back on the fast path: the timer the ACK restarted (ack_new) was
     * the reordering timer's; now it is the probe's or the RTO's. */
    if (was_loss && !(c->flags & HP__TCPF_SB_LOSS) && advanced && c->snd_una != c->snd_max)
        hp__tcp_rtx_restart(c);
    if (c->x->plp.probe_out || c->x->plp.high > c->x->plp.low)
        hp__tcp_pmtu_on_ack(c);
}

/* ---- timers --------------------------------------------------------------------------- */

static bool tlp_allowed(const struct hp_tcp_sock *c)
{
    uint8_t st = c->state;
    return (c->flags & HP__TCPF_SACK_OK) && !(c->flags & (HP__TCPF_SB_LOSS | HP__TCPF_PERSIST)) &&
           c->snd_una != c->snd_max && c->snd_wnd != 0 &&
           (st == HP_TCP_ESTABLISHED || st == HP_TCP_CLOSE_WAIT || st == HP_TCP_FIN_WAIT_1 ||
            st == HP_TCP_CLOSING || st == HP_TCP_LAST_ACK);
}

/*
 * When the tail loss probe is due. RFC 8985 7.2: PTO = 2 SRTT, plus
 * WCDelAckT when one segment is out (the peer may hold its ACK for it),
 * restarted by each ACK of new data; here at least 10 ms (as Linux), and
 * three departures from the RFC's letter, each where it says SHOULD:
 * - PTO = SRTT + RACK's reordering window (min_RTT / 4, widened by
 *   D-SACKs, never over SRTT: so at most 2 SRTT): a tail segment is
 *   deemed overdue when RACK would deem any other segment lost, one
 *   delivered after it having been sent later (6.2). A probe that was
 *   needless costs one segment, which the peer's D-SACK reports
 *   (dsack_in; the window does not widen for it).
 * - The PTO runs from the latest transmission, as QUIC's does (RFC 9002
 *   6.2.1), not from the latest ACK: the RFC's restart on every ACK
 *   puts a lost last segment's probe a PTO after the ACK of the one
 *   before it, a full round trip after the loss could be known. On a
 *   flight the ACKs keep clocking out, the latest transmission is the
 *   latest ACK's, as before. An ACK arms it no sooner than the
 *   reordering window after itself (arming).
 * - WCDelAckT (200 ms) only while the peer has not shown that it ACKs
 *   each segment at once (ack_pace: two such ACKs in a row). A peer
 *   that delays ACKs (every other segment, or a stretch) keeps it; one
 *   seen not to delay answers a lone segment within the round trip.
 * A new connection's tail of ten segments at a 20 ms round trip, its
 * last lost: repaired 2.4 round trips after the write (RFC 8985's
 * timers: 13, with the 200 ms; Linux's are the same).
 */
static uint64_t pto_at(const struct hp_tcp_sock *c, uint64_t now, bool arming)
{
    uint64_t srtt = (uint64_t)hp__tcp_rtt_srtt_us(&c->rtt) * 1000u;
    uint64_t wnd = c->x ? reo_wnd_ns(c) : srtt / 4;
    uint64_t pto = srtt ? srtt + wnd : 1000000000ull;
    if (pto < PTO_MIN_NS)
        pto = PTO_MIN_NS;
    if (c->snd_max - c->snd_una <= c->mss_eff && !(c->x && sbp(c)->prompt_acks >= PROMPT_ACKS)) {
        /* WCDelAckT: 200 ms, or the RTO's configured floor when larger (a
         * stack told to let its timers rest, as rr under valgrind is). */
        uint64_t d = (uint64_t)hp__tcp_rtt_cfg_of(c)->min_rto_us * 1000u;
        pto += d > WCDELACK_NS ? d : WCDELACK_NS;
    }
    uint64_t from = c->last_send_ns && c->last_send_ns <= now ? c->last_send_ns : now;
    uint64_t at = from + pto, soonest = now + wnd;
    return !arming || at > soonest ? at : soonest;
}

uint64_t hp__tcp_sb_due(struct hp_tcp_sock *c, uint64_t due)
{
    if (c->x)
        sbp(c)->rto_due = due;
    if (c->flags & HP__TCPF_SB_LOSS) {
        uint64_t reo = sbp(c)->reo_due;
        return reo && reo < due ? reo : due;
    }
    /* Never later than the RTO. */
    uint64_t at = pto_at(c, c->s->now, true);
    if (at >= due || !tlp_allowed(c))
        return due;
    return at;
}

/* The timer fired at a deadline that has moved since: the reordering
 * timer's, which a later ACK pushed back or disarmed (rack_detect found
 * nothing due), or a probe's no longer allowed. The RTO's own deadline
 * (rto_due, from the last restart) decides: until then it is no timeout
 * (RFC 6298 5.3 restarts it on each ACK of new data, and RACK, not the
 * RTO, repairs a loss the ACKs point at). @return true when re-armed. */
static bool rto_not_due(struct hp_tcp_sock *c)
{
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t now = c->s->now, due = sb->rto_due;
    if (!due || now >= due)
        return false;
    if ((c->flags & HP__TCPF_SB_LOSS) && sb->reo_due && sb->reo_due < due)
        due = sb->reo_due;
    c->rtx_due = 0; /* fired: hp__tcp_rtx_at arms it anew */
    hp__tcp_rtx_at(c, due);
    return true;
}

bool hp__tcp_sb_timer(struct hp_tcp_sock *c)
{
    /* A probe's state lives in the extension; without memory, no probe:
     * the RTO's work instead. */
    if (!hp__tcp_ext_get(c))
        return false;
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t now = c->s->now;
    if ((c->flags & HP__TCPF_SB_LOSS) && sb->reo_due && now >= sb->reo_due) {
        /* RFC 8985 6.3: the reordering timer. */
        sb->reo_due = 0;
        hp__ctr(c->s, HP_CTR_TCP_RACK_REO_TIMEOUTS);
        bool cong = false;
        uint64_t next = rack_detect(c, now, &cong);
        if (cong && !sb->in_recovery)
            recovery_enter(c);
        if (sb->in_recovery)
            prr_ack(c, 0);
        sb->reo_due = next ? now + next : 0;
        update_flags(c);
        hp__tcp_rtx_restart(c);
        (void)hp__tcp_output(c);
        return true;
    }
    if ((c->flags & HP__TCPF_SB_LOSS) || !tlp_allowed(c))
        return rto_not_due(c);
    /* Data went out since the deadline was set (a write into an open
     * flight, which does not restart the timer): the probe waits for its
     * PTO past that (RFC 8985 7.2), unless the RTO is due first (or its
     * deadline is not known: the extension is new). */
    uint64_t at = pto_at(c, now, false), rto = sb->rto_due;
    if (now < at && now < rto) {
        c->rtx_due = 0;
        hp__tcp_rtx_at(c, at < rto ? at : rto);
        return true;
    }
    /* RFC 8985 7.3: the probe, then the RTO. */
    bool rtx = false;
    if (hp__tcp_send_tlp(c, &rtx) < 0)
        return false;
    sb->tlp_out = true;
    sb->tlp_is_rtx = sb->tlp_dsack = rtx;
    sb->tlp_end = c->snd_max;
    hp__ctr(c->s, HP_CTR_TCP_TLP_PROBES);
    HP__TCP_ST_INC(c, tlp_probes);
    update_flags(c);
    hp__tcp_rtx_restart(c);
    return true;
}

bool hp__tcp_sb_rto(struct hp_tcp_sock *c)
{
    if (!hp__tcp_ext_get(c))
        return false;
    struct hp__tcp_sb *sb = sbp(c);
    uint64_t now = c->s->now;
    materialize(c);
    if (!sb->n)
        return false;
    if (at(sb, 0)->flags & HP__TXS_SACKED) {
        /* The peer dropped data it had SACKed (RFC 2018 8: reneging):
         * none of its SACKs counts any more. */
        hp__ctr(c->s, HP_CTR_TCP_SACK_RENEGING);
        for (uint32_t i = 0; i < sb->n; i++) {
            struct hp__tcp_txseg *e = at(sb, i);
            set_flags(sb, e, (uint8_t)(e->flags & ~HP__TXS_SACKED));
        }
    }
    if (sb->in_recovery)
        sb->in_recovery = false;
    sb->tlp_out = sb->tlp_dsack = false;
    sb->reo_due = 0;
    sb->undo_retrans = 0;
    sb->undo_ok = true;
    uint64_t wait = sb->rack_rtt_ns + reo_wnd_ns(c);
    for (uint32_t i = 0; i < sb->n; i++) {
        struct hp__tcp_txseg *e = at(sb, i);
        if (e->flags & HP__TXS_SACKED)
            continue;
        if (i == 0 || e->xmit_ns + wait <= now)
            set_flags(sb, e, (uint8_t)((e->flags | HP__TXS_LOST) & ~HP__TXS_RETRANS));
    }
    update_flags(c);
    return true;
}

bool hp__tcp_sb_mark_larger(struct hp_tcp_sock *c, uint32_t size)
{
    if (!hp__tcp_ext_get(c))
        return false;
    struct hp__tcp_sb *sb = sbp(c);
    materialize(c);
    if (!sb->n)
        return false;
    for (uint32_t i = 0; i < sb->n; i++) {
        struct hp__tcp_txseg *e = at(sb, i);
        if (!(e->flags & HP__TXS_SACKED) && e->end - e->seq > size)
            set_flags(sb, e, (uint8_t)((e->flags | HP__TXS_LOST) & ~HP__TXS_RETRANS));
    }
    update_flags(c);
    return true;
}

void hp__tcp_sb_mark_probe(struct hp_tcp_sock *c, uint32_t seq)
{
    if (!c->x)
        return;
    struct hp__tcp_sb *sb = sbp(c);
    uint32_t i = find(c, seq);
    if (i < sb->n && at(sb, i)->seq == seq)
        at(sb, i)->flags |= HP__TXS_PROBE;
}
