/* SPDX-License-Identifier: BSD-3-Clause */
/* Segments for a listener (RFC 9293 3.10.7.2): SYNs make connections in SYN_RECEIVED on the SYN queue, in place of a stale one or as cookie SYN-ACKs when it is full (RFC 4987 3.6); cookie ACKs make connections directly. */
#include <errno.h>
#include <string.h>

#include "tcp_cookie.h"
#include "tcp_in.h"
#include "tcp_isn.h"

/* RFC 9293 3.7.1 and RFC 8200 8.3: the MSS to assume when the peer sends
 * none. */
#define MSS_DEFAULT4 536u
#define MSS_DEFAULT6 1220u

/* The 16-bit window field of a segment without scaling. */
#define WND_MAX_UNSCALED 65535u

void hp__tcp_negotiate(struct hp_tcp_sock *c, const struct hp_tcp_opts *o)
{
    const struct hp_tcp_config *cfg = &hp__tcp(c->s)->cfg;

    /* RFC 9293 3.7.1: send no segment larger than the peer's MSS (or the
     * default), nor than our own path allows (rmss comes from the route's
     * MTU, RFC 9293 3.7.1's "MMS_S"). */
    uint32_t peer = o->has_mss ? o->mss : (c->key.family == 6 ? MSS_DEFAULT6 : MSS_DEFAULT4);
    uint32_t mss = peer < c->rmss ? peer : c->rmss;
    if (mss < HP__TCP_MIN_SMSS)
        mss = HP__TCP_MIN_SMSS;
    c->smss = (uint16_t)mss;

    /* RFC 7323 2.2: scaling holds in both directions only if both SYNs
     * carried the option; a shift above 14 was clamped by the parser (2.3). */
    if (o->has_ws && !cfg->no_window_scaling) {
        c->flags |= HP__TCPF_WS_OK;
        c->snd_wscale = o->ws;
    } else {
        c->flags &= ~HP__TCPF_WS_OK;
        c->snd_wscale = 0;
        c->rcv_wscale = 0;
    }

    /* RFC 7323 3.2: timestamps likewise; TS.Recent starts from the SYN's
     * TSval (4.3). */
    if (o->has_ts && !cfg->no_timestamps) {
        c->flags |= HP__TCPF_TS_OK;
        c->ts_recent = o->ts_val;
        c->ts_recent_s = hp__tcp_now_s(c->s);
    } else {
        c->flags &= ~HP__TCPF_TS_OK;
    }
    c->mss_eff = (uint16_t)(c->smss - ((c->flags & HP__TCPF_TS_OK) ? 12u : 0u));
}

/* A new block for the segment's tuple, in the connection map, with its
 * parent set so that hp__tcp_conn_attach gives it the listener's options
 * (buffers, MSS, NODELAY, keepalive...); on no queue yet. NULL (counted)
 * when none can be had. */
static struct hp_tcp_sock *child_new(struct hp_tcp_sock *l, const struct hp__tcp_seg *sg)
{
    struct hp_stack *s = l->s;
    struct hp_tcp_sock *c = hp__tcp_conn_new(s, sg->family); /* counts CONN_LIMIT_DROPS */
    if (!c)
        return NULL;
    c->parent = l;
    int rc = hp__tcp_conn_attach(c, sg->family, sg->dst, sg->r.dst_port, sg->src, sg->r.src_port);
    if (rc < 0) {
        /* No route back, or the map is full. */
        hp__ctr(s, rc == -ENOSPC ? HP_CTR_TCP_CONN_LIMIT_DROPS : HP_CTR_TCP_SYN_QUEUE_DROPS);
        hp__tcp_conn_free(c);
        return NULL;
    }
    return c;
}

/* Put an embryo at the tail of its listener's SYN queue, which is so in
 * order of age (hp__tcp_established moves it to the accept queue;
 * hp__tcp_conn_free takes it off). */
static void syn_queue_add(struct hp_tcp_sock *l, struct hp_tcp_sock *c)
{
    struct hp__tcp_listenq *lq = l->lq;
    c->qnext = NULL;
    c->qprev = lq->syn_tail;
    if (lq->syn_tail)
        lq->syn_tail->qnext = c;
    else
        lq->syn_head = c;
    lq->syn_tail = c;
    lq->nsyn++;
}

/* ---- a full SYN queue -------------------------------------------------------- */

/* How far from the oldest end of a full SYN queue to look for a stale
 * entry: enough to step over the few that wait for room on the accept
 * queue, bounded so that a SYN costs the same whatever the backlog. */
#define STALE_SCAN 8

/* An entry is stale once its SYN-ACK went out this many times more,
 * unacknowledged: 1 + 2 = 3 s after the SYN for an entry whose ISS is a
 * cookie (below), 1 + 2 + 4 = 7 s for one with an RFC 6528 ISS. */
#define STALE_RTX_COOKIE 2
#define STALE_RTX        3

static void tuple_of(const struct hp_tcp_sock *c, struct hp__tcp_tuple *t)
{
    memset(t, 0, sizeof *t);
    t->family = c->key.family;
    t->lport = c->key.lport;
    t->rport = c->key.rport;
    memcpy(t->laddr, c->key.laddr, sizeof t->laddr);
    memcpy(t->raddr, c->key.raddr, sizeof t->raddr);
}

/*
 * A full SYN queue (RFC 4987 4.1, "SYN cache" eviction): rather than a
 * cookie for the new SYN, drop the oldest half-open entry that is stale:
 * never acknowledged (SND.WL2 left at ISS: an ACK that came while the
 * accept queue was full set it, tcp_input.c ack_in, and such an entry's
 * peer thinks itself connected), its SYN-ACK unanswered for a while.
 * Under a spoofed flood the queue is soon full of such entries, which
 * would otherwise send every new client to a cookie for a minute (and a
 * SYN without timestamps to a connection with the MSS alone).
 *
 * Dropping an entry must not cost a real client its connection: under a
 * flood its ACK and its data may all be lost for seconds (rings overflow),
 * and when they get through the entry must still be there, or their ACK
 * must still be good. So entries made under pressure get a cookie for ISS
 * (syn_iss), and their SYN-ACKs carry the options in TSval's low bits as a
 * cookie SYN-ACK does (hp__tcp_embryo_ts): dropped after 3 s, the client's
 * ACK (or its data, at SEG.SEQ = ISN + 1) is a valid cookie ACK and makes
 * the connection all the same (its first RTT sample, from that TSval, may
 * then be up to 63 ms long, as with any cookie; Linux's too). What remains,
 * as with any SYN cookie: a client that sent data, all of it lost, and
 * whose next pure ACK (at ISN + 1 + its data) arrives before the data's
 * retransmission, fails the cookie check and is reset; 3 s leaves its
 * retransmissions several chances.
 * An entry with an RFC 6528 ISS (made before the queue was half full) goes
 * only after 7 s unanswered. The entry goes silently; Linux's older queue
 * pruning also went by retransmission counts. Returns whether room was
 * made.
 */
static bool syn_queue_evict_stale(struct hp_tcp_sock *l)
{
    struct hp_tcp_sock *c = l->lq->syn_head;
    for (int i = 0; c && i < STALE_SCAN; i++, c = c->qnext) {
        if (c->snd_wl2 != c->iss || c->rtx_count < STALE_RTX_COOKIE)
            continue;
        if (c->rtx_count >= STALE_RTX || c->cookie_iss) {
            hp__ctr(l->s, HP_CTR_TCP_SYN_QUEUE_STALE_DROPS);
            hp__tcp_drop(c, -ETIMEDOUT); /* never accepted: freed */
            return true;
        }
    }
    return false;
}

/* Under pressure (the SYN queue half full, when Linux too starts to treat
 * requests as a flood's), a new embryo's ISS is a cookie for its SYN, so
 * that evicting it later cannot break its connection (above). Otherwise
 * the RFC 6528 ISS hp__tcp_conn_attach gave it stays. */
static void syn_iss(struct hp_tcp_sock *l, struct hp_tcp_sock *c, uint32_t client_isn)
{
    struct hp__tcp_state *ts = hp__tcp(l->s);
    if (ts->cfg.no_syncookies || l->lq->nsyn < l->lq->backlog / 2)
        return;
    struct hp__tcp_tuple t;
    tuple_of(c, &t);
    uint32_t isn;
    if (hp__tcp_cookie_make(&ts->secret, &t, client_isn, c->smss, l->s->now, &isn) < 0)
        return; /* an MSS below every table entry: an ordinary ISS */
    c->iss = isn;
    c->snd_una = c->snd_nxt = c->snd_max = isn;
    c->cookie_iss = 1;
    l->lq->cookie_ns = l->s->now;
}

uint32_t hp__tcp_embryo_ts(const struct hp_tcp_sock *c, uint32_t t)
{
    struct hp__tcp_cookie_opts co = {
        .ts = true,
        .ws = (c->flags & HP__TCPF_WS_OK) != 0,
        .snd_wscale = c->snd_wscale,
        .sack = (c->flags & HP__TCPF_SACK_OK) != 0,
        .ecn = (c->flags & HP__TCPF_ECN_OK) != 0,
    };
    return hp__tcp_cookie_tsval(t, &co);
}

/*
 * A SYN (RFC 9293 3.10.7.2 third check). The SYN queue full means a flood
 * or a slow accept: a stale entry makes room (syn_queue_evict_stale), else
 * the SYN is answered statelessly with a cookie (RFC 4987 3.6) unless
 * cookies are off. (A full accept queue is found at the handshake's ACK,
 * by hp__tcp_established: the embryo then waits, its SYN-ACK timer
 * running, for the peer's next segment.)
 * Data on the SYN is neither kept nor acknowledged: the peer sends it
 * again after the handshake.
 */
static void syn_in(struct hp_tcp_sock *l, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = l->s;
    struct hp__tcp_state *ts = hp__tcp(s);
    struct hp__tcp_listenq *lq = l->lq;
    const struct hp_tcp_repr *r = &sg->r;

    if (lq->nsyn >= lq->backlog && !syn_queue_evict_stale(l)) {
        if (ts->cfg.no_syncookies)
            hp__ctr(s, HP_CTR_TCP_SYN_QUEUE_DROPS);
        else
            hp__tcp_send_cookie_synack(l, sg->family, sg->src, sg->dst, r);
        hp__tcp_seg_free(sg);
        return;
    }
    struct hp_tcp_sock *c = child_new(l, sg);
    if (!c) {
        hp__tcp_seg_free(sg);
        return;
    }
    c->irs = r->seq;
    c->rcv_nxt = r->seq + 1;
    c->rcv_adv = c->rcv_nxt;
    c->last_ack_sent = c->rcv_nxt;
    hp__tcp_negotiate(c, &r->opt);
    hp__tcp_negotiate_more(c, r);
    syn_iss(l, c, r->seq);
    /* RFC 7323 2.2: the window of a SYN is never scaled. SND.WL2 = ISS
     * lets the first ACK of the handshake update the window. */
    c->snd_wnd = r->window;
    c->max_snd_wnd = r->window;
    c->snd_wl1 = r->seq;
    c->snd_wl2 = c->iss;
    c->last_rcv_ns = s->now;
    c->segs_in++;
    hp__tcp_set_state(c, HP_TCP_SYN_RECEIVED);
    syn_queue_add(l, c);
    hp__tcp_seg_free(sg);
    /* Arms the timer that resends it, also when it could not go now. */
    (void)hp__tcp_send_syn(c);
}

/* ---- SYN cookies with options (tcp_cookie.h) ------------------------------------ */

/*
 * What a connection from SYN syn negotiates beyond the MSS, as far as a
 * cookie can carry it: nothing without timestamps (RFC 7323 3.2: both
 * SYNs must carry them); window scaling when both offer it (2.2);
 * SACK-permitted when the SYN offers it and no_sack is off (RFC 2018 2);
 * ECN when the SYN is an ECN-setup SYN (ECE and CWR, RFC 3168 6.1.1) and
 * the stack's ecn knob is not off. The same rules as hp__tcp_negotiate_more
 * for a queued SYN: the final ACK gives the bits back to it (cookie_ack).
 */
static void cookie_agree(const struct hp_tcp_config *cfg, const struct hp_tcp_repr *syn,
                         struct hp__tcp_cookie_opts *co)
{
    memset(co, 0, sizeof *co);
    co->ts = syn->opt.has_ts && !cfg->no_timestamps;
    co->ws = co->ts && syn->opt.has_ws && !cfg->no_window_scaling;
    co->snd_wscale = co->ws ? syn->opt.ws : 0;
    co->sack = co->ts && syn->opt.sack_perm && !cfg->no_sack;
    co->ecn = co->ts && cfg->ecn != HP_TCP_ECN_OFF &&
              (syn->flags & (HP_TCP_F_ECE | HP_TCP_F_CWR)) == (HP_TCP_F_ECE | HP_TCP_F_CWR);
}

void hp__tcp_cookie_offer(struct hp_tcp_sock *l, const struct hp__tcp_tuple *t,
                          const struct hp_tcp_repr *syn, struct hp_tcp_repr *o)
{
    struct hp__tcp_state *ts = hp__tcp(l->s);
    const struct hp_tcp_config *cfg = &ts->cfg;
    struct hp__tcp_cookie_opts co;
    cookie_agree(cfg, syn, &co);
    if (!co.ts)
        return;
    /* The clock the connection will have: hp__tcp_conn_attach's offset
     * for this tuple (RFC 7323 5.4). */
    uint32_t off = hp__tcp_ts_offset(&ts->secret, t);
    uint32_t now = (uint32_t)(l->s->now / 1000000u) + off;
    o->opt.has_ts = true;
    o->opt.ts_val = hp__tcp_cookie_tsval(now, &co);
    o->opt.ts_ecr = syn->opt.ts_val;
    if (co.ws) {
        uint32_t rcvbuf = l->rcvbuf ? l->rcvbuf : cfg->rcvbuf;
        o->opt.has_ws = true;
        o->opt.ws = hp__tcp_rcv_wscale(rcvbuf, cfg->no_window_scaling);
    }
    o->opt.sack_perm = co.sack;
    if (co.ecn)
        o->flags |= HP_TCP_F_ECE; /* RFC 3168 6.1.1: an ECN-setup SYN-ACK */
}

/* The options the final ACK r of a cookie handshake gives back, as the SYN
 * would have offered them: the cookie's MSS, and from the TSecr (our
 * cookie TSval echoed) window scaling, SACK-permitted and timestamps, with
 * the ACK's TSval for TS.Recent. An ACK without timestamps had a SYN
 * without them: MSS only. *ecn: ECN was agreed. */
static void cookie_syn_opts(const struct hp_tcp_config *cfg, const struct hp_tcp_repr *r, int mss,
                            struct hp_tcp_opts *o, bool *ecn)
{
    memset(o, 0, sizeof *o);
    o->has_mss = true;
    o->mss = (uint16_t)mss;
    *ecn = false;
    if (!r->opt.has_ts || cfg->no_timestamps)
        return;
    struct hp__tcp_cookie_opts co;
    hp__tcp_cookie_ts_decode(r->opt.ts_ecr, &co);
    o->has_ts = true;
    o->ts_val = r->opt.ts_val;
    o->has_ws = co.ws && !cfg->no_window_scaling;
    o->ws = co.snd_wscale;
    o->sack_perm = co.sack;
    *ecn = co.ecn;
}

/* A segment that failed the cookie check while this listener's cookies of
 * the last two slots could still be out: perhaps a real client's, see
 * cookie_ack. */
static bool cookie_fail_waits(const struct hp_tcp_sock *l)
{
    const struct hp__tcp_listenq *q = l->lq;
    return q->cookie_ns && l->s->now - q->cookie_ns < 2 * HP__TCP_COOKIE_SLOT_NS;
}

/*
 * An ACK at a listener: the third segment of a handshake we answered with
 * a cookie (RFC 4987 3.6). A valid cookie gives back the client's ISN, our
 * ISN and the MSS, and the timestamps the options (tcp_cookie.h); the
 * connection is rebuilt as it would have been in SYN_RECEIVED and the
 * ACK, with any data or FIN it carries, is processed as in that state,
 * which completes the handshake.
 */
static void cookie_ack(struct hp_tcp_sock *l, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = l->s;
    struct hp__tcp_state *ts = hp__tcp(s);
    const struct hp_tcp_repr *r = &sg->r;
    size_t alen = sg->family == 6 ? 16 : 4;

    struct hp__tcp_tuple t;
    memset(&t, 0, sizeof t);
    t.family = (uint8_t)sg->family;
    t.lport = r->dst_port;
    t.rport = r->src_port;
    memcpy(t.laddr, sg->dst, alen);
    memcpy(t.raddr, sg->src, alen);
    int mss = hp__tcp_cookie_check(&ts->secret, &t, r->seq, r->ack, s->now);
    if (mss < 0) {
        /* Not one of ours: RFC 9293 3.10.7.2, an ACK at a listener gets a
         * reset. Except while our cookies are live: a real client whose
         * ACK and first data were lost under a flood (rings overflow), or
         * whose entry went stale meanwhile, sends segments past ISN + 1
         * (later data, a duplicate ACK), which no cookie check can take;
         * the retransmission of its first data, at ISN + 1, passes. So
         * they are dropped (counted) rather than reset; a peer that really
         * has no connection here gets its reset once the cookies are old. */
        hp__ctr(s, HP_CTR_TCP_SYNCOOKIES_FAILED);
        if (!cookie_fail_waits(l))
            hp__tcp_send_rst_reply(s, sg->family, sg->src, sg->dst, r);
        hp__tcp_seg_free(sg);
        return;
    }
    if (l->lq->nacc >= l->lq->backlog) {
        hp__ctr(s, HP_CTR_TCP_LISTEN_OVERFLOWS);
        hp__tcp_seg_free(sg);
        return;
    }
    struct hp_tcp_sock *c = child_new(l, sg);
    if (!c) {
        hp__tcp_seg_free(sg);
        return;
    }
    hp__ctr(s, HP_CTR_TCP_SYNCOOKIES_OK);
    c->flags |= HP__TCPF_COOKIE;
    c->irs = r->seq - 1;
    c->rcv_nxt = r->seq;
    c->iss = r->ack - 1;
    c->snd_una = c->iss;
    c->snd_nxt = c->snd_max = r->ack;
    /* The SYN as the cookie remembers it: its options, and ECE and CWR
     * when ECN was agreed (an ECN-setup SYN), for the same negotiation
     * as a queued SYN's. */
    struct hp_tcp_repr syn;
    memset(&syn, 0, sizeof syn);
    bool ecn;
    cookie_syn_opts(&ts->cfg, r, mss, &syn.opt, &ecn);
    syn.flags = HP_TCP_F_SYN | (ecn ? HP_TCP_F_ECE | HP_TCP_F_CWR : 0);
    hp__tcp_negotiate(c, &syn.opt);
    hp__tcp_negotiate_more(c, &syn);
    /* This ACK's window is scaled when scaling was agreed (RFC 7323 2.2). */
    c->snd_wnd = c->max_snd_wnd = (uint32_t)r->window << c->snd_wscale;
    c->snd_wl1 = c->irs;
    c->snd_wl2 = c->iss;
    /* The cookie SYN-ACK offered an unscaled window of at most 65535
     * bytes; take that as the right edge we advertised, for the
     * acceptability test of this ACK's data. */
    c->rcv_adv = c->rcv_nxt + (c->rcvbuf < WND_MAX_UNSCALED ? c->rcvbuf : WND_MAX_UNSCALED);
    c->last_ack_sent = c->rcv_nxt;
    c->last_rcv_ns = s->now;
    /* Not on the SYN queue (it holds what the SYN queue could not):
     * hp__tcp_established takes it from nowhere to the accept queue, and
     * hp__tcp_conn_free copes with neither. */
    hp__tcp_set_state(c, HP_TCP_SYN_RECEIVED);
    c->segs_in++;
    hp__tcp_conn_input(c, sg);
}

void hp__tcp_listen_input(struct hp_tcp_sock *l, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = l->s;
    uint8_t fl = sg->r.flags;

    if (!l->lq) {
        hp__tcp_seg_free(sg);
        return;
    }
    /* RFC 9293 3.10.7.2 first: a RST can only be about an embryo that is
     * gone; ignore it. */
    if (fl & HP_TCP_F_RST) {
        hp__tcp_seg_free(sg);
        return;
    }
    /* Second: an ACK is bad at a listener (RST in reply), unless it
     * returns one of our cookies. */
    if (fl & HP_TCP_F_ACK) {
        if (!(fl & HP_TCP_F_SYN) && !hp__tcp(s)->cfg.no_syncookies) {
            cookie_ack(l, sg);
            return;
        }
        hp__tcp_send_rst_reply(s, sg->family, sg->src, sg->dst, &sg->r);
        hp__tcp_seg_free(sg);
        return;
    }
    /* Fourth: anything else without a SYN has no business here. */
    if (!(fl & HP_TCP_F_SYN)) {
        hp__ctr(s, HP_CTR_TCP_IN_BAD_FLAGS);
        hp__tcp_seg_free(sg);
        return;
    }
    syn_in(l, sg);
}
