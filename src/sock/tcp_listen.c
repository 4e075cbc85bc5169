/* SPDX-License-Identifier: BSD-3-Clause */
/* Segments for a listener (RFC 9293 3.10.7.2): SYNs make connections in SYN_RECEIVED on the SYN queue, or cookie SYN-ACKs when it is full (RFC 4987 3.6); cookie ACKs make connections directly. */
#include <errno.h>
#include <string.h>

#include "tcp_cookie.h"
#include "tcp_in.h"

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
    uint32_t peer = o->has_mss ? o->mss : (c->family == 6 ? MSS_DEFAULT6 : MSS_DEFAULT4);
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
        c->ts_recent_ns = c->s->now;
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

/* Put an embryo on its listener's SYN queue (hp__tcp_established moves it
 * to the accept queue; hp__tcp_conn_free takes it off). */
static void syn_queue_add(struct hp_tcp_sock *l, struct hp_tcp_sock *c)
{
    struct hp__tcp_listenq *lq = l->lq;
    c->qprev = NULL;
    c->qnext = lq->syn_head;
    if (lq->syn_head)
        lq->syn_head->qprev = c;
    lq->syn_head = c;
    lq->nsyn++;
}

/*
 * A SYN (RFC 9293 3.10.7.2 third check). The SYN queue full means a flood
 * or a slow accept: answer statelessly with a cookie (RFC 4987 3.6) unless
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

    if (lq->nsyn >= lq->backlog) {
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
    /* RFC 7323 2.2: the window of a SYN is never scaled. SND.WL2 = ISS
     * lets the first ACK of the handshake update the window. */
    c->snd_wnd = r->window;
    c->max_snd_wnd = r->window;
    c->snd_wl1 = r->seq;
    c->snd_wl2 = c->iss;
    c->last_rcv_ns = s->now;
    c->st_rx.segs_in++;
    hp__tcp_set_state(c, HP_TCP_SYN_RECEIVED);
    syn_queue_add(l, c);
    hp__tcp_seg_free(sg);
    /* Arms the timer that resends it, also when it could not go now. */
    (void)hp__tcp_send_syn(c);
}

/*
 * An ACK at a listener: the third segment of a handshake we answered with
 * a cookie (RFC 4987 3.6). A valid cookie gives back the client's ISN, our
 * ISN and the MSS; the connection is rebuilt as it would have been in
 * SYN_RECEIVED (no window scaling, no timestamps: the cookie SYN-ACK
 * offered neither) and the ACK, with any data or FIN it carries, is
 * processed as in that state, which completes the handshake.
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
         * reset. */
        hp__ctr(s, HP_CTR_TCP_SYNCOOKIES_FAILED);
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
    c->flags &= ~(HP__TCPF_WS_OK | HP__TCPF_TS_OK);
    c->snd_wscale = c->rcv_wscale = 0;
    c->irs = r->seq - 1;
    c->rcv_nxt = r->seq;
    c->iss = r->ack - 1;
    c->snd_una = c->iss;
    c->snd_nxt = c->snd_max = r->ack;
    uint32_t m = (uint32_t)mss < c->rmss ? (uint32_t)mss : c->rmss;
    c->smss = c->mss_eff = (uint16_t)(m < HP__TCP_MIN_SMSS ? HP__TCP_MIN_SMSS : m);
    c->snd_wnd = c->max_snd_wnd = r->window;
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
    c->st_rx.segs_in++;
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
