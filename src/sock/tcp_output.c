/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP output: data segments within the peer's window and cwnd (Nagle, SWS avoidance), SYN, SYN-ACK, FIN, ACKs (delayed or not), RSTs, retransmission, and the receive window we offer. */
#include <errno.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/tcp.h>

#include "../base/debug.h"
#include "tcp_cookie.h"
#include "tcp_internal.h"

/*
 * How a segment is built
 * ----------------------
 * One fresh buffer per segment from the route's interface pool, with its
 * headroom left for IP and Ethernet. The payload is copied from the send
 * queue straight to its place behind the header (hp__tcp_bufq_copy, whose
 * cursor makes the copy O(1) when segments are cut one after another), and
 * the checksum is one pass over header and payload. Data segments and
 * ACKs, whose only option is the timestamp, get their header written here
 * in hp_tcp_emit's layout (NOP NOP TS): measured on the transmit path
 * (1448-byte segments, everything from the send queue to the link), that
 * is about 195 ns of CPU per segment against 210 ns through hp_tcp_emit,
 * whose generic option handling and payload memmove cost the difference.
 * SYNs and RSTs, rare, go through hp_tcp_emit.
 */

#define TS_OPT_LEN       12u    /* NOP NOP kind len TSval TSecr (RFC 7323 3.2, Appendix A) */
#define ACK_COALESCE_MAX 65536u /* bytes one coalesced ACK may cover (hp__tcp_ack_schedule) */

static inline uint32_t min32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static inline uint8_t wscale(const struct hp_tcp_sock *c)
{
    return (c->flags & HP__TCPF_WS_OK) ? c->rcv_wscale : 0;
}

/* ---- the receive window ------------------------------------------------------ */

/*
 * What we may offer now, and (in *curp) what is left of the window we last
 * advertised, rcv_adv - rcv_nxt. Both are bytes, at most 65535 << shift.
 */
__attribute__((always_inline)) static inline uint32_t rcv_window(const struct hp_tcp_sock *c,
                                                                 uint32_t *curp)
{
    uint8_t ws = wscale(c);
    uint32_t used = c->rcvq.bytes + c->ooo_bytes;
    uint32_t space = c->rcvbuf > used ? c->rcvbuf - used : 0;
    /* The right edge we advertised, never moved left (RFC 9293 3.8.6.2.2:
     * no shrinking). Bounded by what we could ever have offered, so that a
     * stale rcv_adv (before the handshake set rcv_nxt) cannot open the
     * window past the buffer. */
    uint32_t cur = hp__seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    /* Both bounds below hold already unless the buffer is larger than the
     * field can say or cur is past the buffer: test that first (this runs
     * about three times per segment received). */
    if (__builtin_expect(cur > c->rcvbuf || c->rcvbuf > (65535u << ws), 0)) {
        uint32_t maxwin = 65535u << ws;
        if (space > maxwin)
            space = maxwin;
        uint32_t bound = (c->rcvbuf + (1u << ws) - 1) & ~((1u << ws) - 1);
        if (cur > min32(bound, maxwin))
            cur = min32(bound, maxwin);
    }
    *curp = cur;
    if (space <= cur)
        return cur;
    /* Receiver SWS avoidance (RFC 9293 3.8.6.2.2): move the right edge
     * only by at least min(RCV.BUFF / 2, MSS). */
    uint32_t thresh = min32(c->rcvbuf >> 1, c->rmss);
    if (space - cur < thresh)
        return cur;
    return space;
}

/*
 * The window field of a non-SYN segment, and the window it advertises in
 * bytes (*bytes). The field is the window >> our shift (RFC 7323 2.3);
 * rounding down could move the edge left, so then it rounds up instead.
 */
static uint16_t window_field(const struct hp_tcp_sock *c, uint32_t *bytes)
{
    uint8_t ws = wscale(c);
    uint32_t cur;
    uint32_t win = rcv_window(c, &cur);
    uint32_t field = win >> ws;
    if ((field << ws) < cur) {
        /* Rounding down moves the edge left by less than 1 << ws. Round up
         * only when the buffer holds the extra bytes: otherwise each ACK
         * sent while the buffer is full would push the edge right again
         * (RFC 7323 Appendix F) and the peer would send what we cannot
         * keep. So the field may retract by less than one unit (RFC 7323
         * 2.4; senders must cope, RFC 9293 3.8.6.2.1), while rcv_adv, what
         * we accept, stays where it was (acked_now). */
        uint32_t up = (cur + (1u << ws) - 1) >> ws;
        uint32_t used = c->rcvq.bytes + c->ooo_bytes;
        if ((uint64_t)used + ((uint64_t)up << ws) <= c->rcvbuf)
            field = up;
        else
            field = cur >> ws;
    }
    if (field > 65535u)
        field = 65535u;
    *bytes = field << ws;
    return (uint16_t)field;
}

/* The window in a SYN or SYN-ACK: never scaled (RFC 7323 2.2). */
static uint16_t syn_window(const struct hp_tcp_sock *c)
{
    uint32_t used = c->rcvq.bytes + c->ooo_bytes;
    uint32_t space = c->rcvbuf > used ? c->rcvbuf - used : 0;
    return (uint16_t)min32(space, 65535u);
}

/* The window we could offer has grown enough past the one we advertised
 * that the peer should hear of it now: by two segments, by half the
 * buffer, or by anything (beyond SWS) when the advertised window is
 * (nearly) closed and the sender is waiting for it. */
static bool window_grew(const struct hp_tcp_sock *c)
{
    /* The window offered is at most the buffer when the advertised one is
     * within it (rcv_window): with cur >= a segment and the buffer less
     * than two segments and less than half itself past cur, it cannot
     * have grown enough (every segment of a request/response flow). */
    uint32_t adv = hp__seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    if (adv >= c->rmss && adv <= c->rcvbuf && c->rcvbuf - adv < 2u * c->rmss &&
        c->rcvbuf - adv < (c->rcvbuf >> 1))
        return false;
    uint32_t cur;
    uint32_t win = rcv_window(c, &cur);
    if (win <= cur)
        return false;
    uint32_t grow = win - cur;
    return grow >= 2u * c->rmss || grow >= (c->rcvbuf >> 1) || cur < c->rmss;
}

/* After the user read: whether the peer should hear of the window now. Not
 * for every read that frees two segments (a bulk receiver's every poll):
 * once the window we could offer is at least twice what the peer still
 * has (Linux's tcp_cleanup_rbuf rule), or what it has is less than a
 * segment (it may be waiting for it). */
static bool window_update_due(const struct hp_tcp_sock *c)
{
    /* As in window_grew: the window offered is at most the buffer, so
     * with cur >= a segment and more than half the buffer it cannot be
     * twice cur (every read of a request/response flow). */
    uint32_t adv = hp__seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
    if (adv >= c->rmss && adv <= c->rcvbuf && 2u * (uint64_t)adv > c->rcvbuf)
        return false;
    uint32_t cur;
    uint32_t win = rcv_window(c, &cur);
    return win > cur && (cur < c->rmss || win >= 2u * (uint64_t)cur);
}

/* ---- sending one segment ----------------------------------------------------- */

/* The connection sent a segment carrying ACK: what the peer knows of our
 * receive side now (RFC 7323 4.3 Last.ACK.sent), and no ACK is owed. */
static void acked_now(struct hp_tcp_sock *c, uint32_t wnd_bytes)
{
    c->rcv_wnd = wnd_bytes;
    uint32_t adv0 = c->rcv_adv;
    (void)adv0;
    if (hp__seq_gt(c->rcv_nxt + wnd_bytes, c->rcv_adv))
        c->rcv_adv = c->rcv_nxt + wnd_bytes;
    /* rcv_adv never moves left (tcp_internal.h); the advertised edge is
     * short of it by less than one window-scale unit at most (window_field). */
    HP_ASSERT(hp__seq_ge(c->rcv_adv, adv0));
    HP_ASSERT(!hp__seq_gt(c->rcv_nxt, c->rcv_adv) ||
              hp__seq_ge(c->rcv_nxt + wnd_bytes + (1u << wscale(c)), c->rcv_adv));
    c->last_ack_sent = c->rcv_nxt;
    c->segs_unacked = 0;
    /* A delayed ACK's timer stays in the heap: it finds DACK clear and does
     * nothing (tcp_timer.c, lazy cancel). */
    c->flags &= ~(HP__TCPF_ACK_NOW | HP__TCPF_DACK);
}

/* Every segment goes with DF (RFC 1191: the path MTU is discovered, not
 * fragmented around) unless no_pmtud; xf adds ECT(0) for ECN data. */
static int ip_send(struct hp_stack *s, const struct hp__route *rt, int family, const uint8_t *dst,
                   unsigned xf, struct hp_buf *b)
{
    xf |= HP__IP_UNICAST; /* a connection's peer is unicast (tcp_input.c, tcp_api.c) */
    if (!hp__tcp(s)->cfg.no_pmtud)
        xf |= HP__IP_DF;
    int rc = family == 4 ? hp__ipv4_output_x(s, rt, dst, HP_IPPROTO_TCP, xf, b)
                         : hp__ipv6_output_x(s, rt, dst, HP_IPPROTO_TCP, xf, b);
    if (rc < 0) {
        if (rc == -ENOBUFS)
            hp__ctr(s, HP_CTR_TCP_NO_BUFFERS);
        return rc;
    }
    hp__ctr(s, HP_CTR_TCP_OUT_SEGS);
    return 0;
}

/* RFC 3168 6.1: ECE on every ACK while a CE is unanswered (6.1.3); CWR on
 * the first new data segment after a reduction (6.1.2). */
static uint8_t ecn_flags(struct hp_tcp_sock *c, uint8_t fl, uint32_t len, bool rtx)
{
    struct hp__tcp_ecn *e = &c->x->ecn; /* ECN_PEND is only set with the extension */
    if (e->ece_owed && (fl & HP_TCP_F_ACK))
        fl |= HP_TCP_F_ECE;
    if (e->cwr_owed && len && !rtx && !(c->flags & HP__TCPF_PERSIST)) {
        fl |= HP_TCP_F_CWR;
        e->cwr_owed = false;
        hp__ctr(c->s, HP_CTR_TCP_ECN_CWR_OUT);
    }
    if (!e->ece_owed && !e->cwr_owed)
        c->flags &= ~HP__TCPF_ECN_PEND;
    return fl;
}

/* The SACK blocks an ACK carries (RFC 2018 3: with timestamps three fit
 * in 40 bytes); their option comes out of the payload (RFC 6691: the MSS
 * counts data and options), so *len may shrink (then FIN and PSH go).
 * @return the blocks' count; *hlen grows by the option. */
static unsigned sack_room(struct hp_tcp_sock *c, bool ts, uint32_t (*blk)[2], uint32_t *hlen,
                          uint32_t *len, uint8_t *fl)
{
    unsigned n = hp__tcp_sack_fill(c, blk, ts ? 3 : 4);
    if (!n)
        return 0;
    uint32_t extra = 4 + 8 * n;
    *hlen += extra;
    uint32_t most = c->mss_eff > extra ? c->mss_eff - extra : 1;
    if (*len > most) {
        *len = most;
        *fl &= (uint8_t) ~(HP_TCP_F_FIN | HP_TCP_F_PSH);
    }
    return n;
}

/* NOP NOP SACK blocks (hp_tcp_emit's layout, 4-byte aligned blocks).
 * @return the sum of the option's 16-bit words as host-order values. */
static uint64_t put_sack(uint8_t *o, uint32_t (*blk)[2], unsigned n)
{
    o[0] = HP_TCP_KIND_NOP;
    o[1] = HP_TCP_KIND_NOP;
    o[2] = HP_TCP_KIND_SACK;
    o[3] = (uint8_t)(2 + 8 * n);
    uint64_t sum = (HP_TCP_KIND_NOP << 8 | HP_TCP_KIND_NOP) + (HP_TCP_KIND_SACK << 8 | (2 + 8 * n));
    for (unsigned i = 0; i < n; i++) {
        hp_put_be32(o + 4 + 8 * i, blk[i][0]);
        hp_put_be32(o + 8 + 8 * i, blk[i][1]);
        sum += (blk[i][0] >> 16) + (blk[i][0] & 0xFFFF) + (blk[i][1] >> 16) + (blk[i][1] & 0xFFFF);
    }
    return sum;
}

/* The send queue's cursor, in the extension: without one the copy walks
 * from the head, fine for a queue of one or two buffers but O(window) per
 * segment past that. A connection with SACK has the extension by then (its
 * transmit log); one without SACK or CUBIC's state (NewReno, no_sack, a
 * peer that offers no SACK) takes it here. NULL without memory. */
static inline struct hp__tcp_bufq_cur *sndcur(struct hp_tcp_sock *c)
{
    if (c->x)
        return &c->x->sndcur;
    if (c->sndq.nbufs <= 2 || !hp__tcp_ext_get(c))
        return NULL;
    return &c->x->sndcur;
}

/*
 * Send one segment of c: seq, len payload bytes from the send queue (seq
 * at or after the queue's first byte), control bits fl (ACK, PSH, FIN;
 * never SYN or RST). The payload is cut shorter if the buffer has no room
 * for it all (then FIN and PSH are dropped).
 * @return the payload bytes sent (<= len), or -ENOBUFS.
 */
static int xmit(struct hp_tcp_sock *c, uint32_t seq, uint32_t len, uint8_t fl)
{
    struct hp_stack *s = c->s;
    /* Once: the header's byte stores below may alias c for the compiler. */
    struct hp__iface *ifc = hp__tcp_ifc(c);
    struct hp_buf *b = hp__alloc(ifc);
    if (!b) {
        hp__ctr(s, HP_CTR_TCP_NO_BUFFERS);
        return -ENOBUFS;
    }
    bool ts = (c->flags & HP__TCPF_TS_OK) != 0;
    uint32_t hlen = HP_TCP_HDR_LEN + (ts ? TS_OPT_LEN : 0);
    uint32_t blk[HP_TCP_MAX_SACK][2];
    unsigned nsack = 0;
    if ((c->flags & HP__TCPF_SACK_OUT) && (fl & HP_TCP_F_ACK))
        nsack = sack_room(c, ts, blk, &hlen, &len, &fl);
    uint32_t room = hp_buf_tailroom(b);
    if (hlen + len > room) {
        len = room > hlen ? room - hlen : 0;
        fl &= (uint8_t) ~(HP_TCP_F_FIN | HP_TCP_F_PSH);
    }
    uint32_t tot = hlen + len;
    uint8_t *h = hp_buf_append(b, tot);
    /* The payload's sum comes from the send queue, the header's from the
     * values written (hp_cksum_from_host16): neither is read back from the
     * fresh buffer, where the loads would wait for the stores just made. */
    uint32_t psum = 0;
    if (len)
        psum =
            hp__tcp_sndq_copy(&c->sndq, sndcur(c),
                              c->sndq.start + (uint32_t)(seq - hp__tcp_sndq_seq(c)), len, h + hlen);

    /* Whether it repeats sequence space already sent; a pure ACK or a
     * keepalive (seq below snd_max, nothing in it) is not a retransmission,
     * nor is a zero window probe (counted on its own). */
    bool rtx = (len || (fl & HP_TCP_F_FIN)) && hp__seq_lt(seq, c->snd_max) &&
               !(c->flags & HP__TCPF_PERSIST);
    if (c->flags & HP__TCPF_ECN_PEND)
        fl = ecn_flags(c, fl, len, rtx);
    uint32_t wnd_bytes;
    uint16_t wnd = window_field(c, &wnd_bytes);
    uint32_t ack = (fl & HP_TCP_F_ACK) ? c->rcv_nxt : 0;
    hp_put_be16(h, c->key.lport);
    hp_put_be16(h + 2, c->key.rport);
    hp_put_be32(h + 4, seq);
    hp_put_be32(h + 8, ack);
    h[12] = (uint8_t)(hlen << 2); /* data offset hlen / 4 in the high nibble */
    h[13] = fl;
    hp_put_be16(h + 14, wnd);
    memset(h + 16, 0, 4); /* checksum (computed below), urgent pointer */
    uint64_t hsum = (uint64_t)c->key.lport + c->key.rport + (seq >> 16) + (seq & 0xFFFF) +
                    (ack >> 16) + (ack & 0xFFFF) + wnd + (hlen << 2 << 8 | fl);
    if (ts) {
        /* RFC 7323 3.2: TSval our clock, TSecr the TS.Recent we hold. */
        uint32_t tsval = hp__tcp_ts_now(c);
        h[20] = HP_TCP_KIND_NOP;
        h[21] = HP_TCP_KIND_NOP;
        h[22] = HP_TCP_KIND_TS;
        h[23] = 10;
        hp_put_be32(h + 24, tsval);
        hp_put_be32(h + 28, c->ts_recent);
        hsum += (HP_TCP_KIND_NOP << 8 | HP_TCP_KIND_NOP) + (HP_TCP_KIND_TS << 8 | 10) +
                (tsval >> 16) + (tsval & 0xFFFF) + (c->ts_recent >> 16) + (c->ts_recent & 0xFFFF);
    }
    if (nsack)
        hsum += put_sack(h + HP_TCP_HDR_LEN + (ts ? TS_OPT_LEN : 0), blk, nsack);
    unsigned xf = 0;
    /* RFC 3168 6.1.4-6.1.6: ECT on new data only: not on pure ACKs, not
     * on retransmissions or window probes. */
    if ((c->flags & HP__TCPF_ECN_OK) && len && !hp__seq_lt(seq, c->snd_max) &&
        !(c->flags & HP__TCPF_PERSIST))
        xf |= HP__IP_ECT0;
    uint32_t sum = c->key.family == 4
                       ? hp_cksum_pseudo_ipv4(c->key.laddr, c->key.raddr, 6, (uint16_t)tot)
                       : hp_cksum_pseudo_ipv6(c->key.laddr, c->key.raddr, 6, tot);
    sum = hp_cksum_add(hp_cksum_add(sum, psum), hp_cksum_from_host16(hsum));
    uint16_t ck = hp_cksum_fold(sum);
    memcpy(h + 16, &ck, 2);

    struct hp__route rt;
    hp__tcp_route_via(c, ifc, &rt);
    int rc = ip_send(s, &rt, c->key.family, c->key.raddr, xf, b);
    if (rc < 0)
        return rc;
    if (fl & HP_TCP_F_ACK)
        acked_now(c, wnd_bytes);
    if ((c->flags & HP__TCPF_SACK_OK) && (len || (fl & HP_TCP_F_FIN)) &&
        !(c->flags & HP__TCPF_PERSIST))
        hp__tcp_sb_sent(c, seq, seq + len + ((fl & HP_TCP_F_FIN) ? 1u : 0u));
    c->segs_out++;
    c->bytes_sent += len;
    if (rtx) {
        hp__ctr(s, HP_CTR_TCP_RETRANS_SEGS);
        HP__TCP_ST_INC(c, retrans_segs);
    }
    return (int)len;
}

/* Send a segment described by r through rt with hp_tcp_emit (SYNs, RSTs). */
static int emit_send(struct hp_stack *s, const struct hp__route *rt, int family, const uint8_t *dst,
                     const struct hp_tcp_repr *r)
{
    struct hp_buf *b = hp__alloc(rt->ifc);
    if (!b) {
        hp__ctr(s, HP_CTR_TCP_NO_BUFFERS);
        return -ENOBUFS;
    }
    size_t len = hp_tcp_repr_len(r);
    uint8_t *p = len <= hp_buf_tailroom(b) ? hp_buf_append(b, (uint32_t)len) : NULL;
    struct hp_l4_addrs a = {.family = (uint8_t)family, .src = rt->src, .dst = dst};
    if (!p || hp_tcp_emit(r, &a, p, len) < 0) {
        hp_buf_free(b);
        return -EINVAL;
    }
    return ip_send(s, rt, family, dst, 0, b);
}

/* ---- data and FIN ------------------------------------------------------------- */

/* Send [seq, end) of sequence space again, in segments of at most the
 * MSS (a FIN at its end included). @return segments sent, or -ENOBUFS. */
static int resend_range(struct hp_tcp_sock *c, uint32_t seq, uint32_t end)
{
    uint32_t qend = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    bool fin_in = (c->flags & HP__TCPF_FIN_SENT) && end == qend + 1;
    uint32_t dend = fin_in ? qend : end;
    int n = 0;
    do {
        uint32_t left = hp__seq_lt(seq, dend) ? dend - seq : 0;
        uint32_t len = min32(left, c->mss_eff);
        bool fin = fin_in && len == left;
        uint8_t fl =
            HP_TCP_F_ACK | (fin ? HP_TCP_F_FIN : 0) | (len && seq + len == qend ? HP_TCP_F_PSH : 0);
        int k = xmit(c, seq, len, fl);
        if (k < 0)
            return n ? n : k;
        n++;
        seq += (uint32_t)k + (fin && (uint32_t)k == len ? 1u : 0u);
        if (!k && !fin)
            break;
    } while (hp__seq_lt(seq, end));
    return n;
}

/* RFC 6675 5 (NextSeg rule 1), with RACK's losses: the segments deemed
 * lost go again, lowest first, while cwnd - pipe allows (always one when
 * nothing is in flight). @return segments sent. */
static int sack_retransmit(struct hp_tcp_sock *c, uint32_t cwnd, bool *nobufs)
{
    int sent = 0;
    uint32_t seq, end;
    while (hp__tcp_sb_next_lost(c, &seq, &end)) {
        uint32_t pipe = hp__tcp_sb_pipe(c);
        uint32_t want = min32(end - seq, c->mss_eff);
        if (pipe && (cwnd <= pipe || cwnd - pipe < want))
            break;
        c->flags &= ~HP__TCPF_RTT_TIMING; /* Karn */
        int n = resend_range(c, seq, end);
        if (n < 0) {
            *nobufs = true;
            break;
        }
        sent += n;
    }
    if (sent) {
        c->last_send_ns = c->s->now;
        hp__tcp_rtx_ensure(c);
    }
    return sent;
}

int hp__tcp_send_probe(struct hp_tcp_sock *c, uint32_t len)
{
    uint32_t nxt = c->snd_nxt;
    uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    if (!hp__seq_lt(nxt, end) || end - nxt < len)
        return -EAGAIN;
    /* Larger than mss_eff on purpose: xmit caps at the buffer's room only. */
    int n = xmit(c, nxt, len, HP_TCP_F_ACK | (nxt + len == end ? HP_TCP_F_PSH : 0));
    if (n <= 0)
        return n < 0 ? n : -EAGAIN;
    c->snd_nxt = nxt + (uint32_t)n;
    if (hp__seq_gt(c->snd_nxt, c->snd_max))
        c->snd_max = c->snd_nxt;
    c->last_send_ns = c->s->now;
    if (c->flags & HP__TCPF_SACK_OK)
        hp__tcp_sb_mark_probe(c, nxt);
    hp__tcp_rtx_ensure(c);
    return n;
}

int hp__tcp_send_tlp(struct hp_tcp_sock *c, bool *rtx)
{
    uint32_t una = c->snd_una, nxt = c->snd_nxt;
    uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    bool fin_q = (c->flags & HP__TCPF_FIN_QUEUED) != 0;
    uint32_t room = c->snd_wnd > nxt - una ? c->snd_wnd - (nxt - una) : 0;
    *rtx = false;
    if (nxt == c->snd_max && hp__seq_lt(nxt, end) && room) {
        /* New data the peer's window takes (RFC 8985 7.3 first choice). */
        uint32_t len = min32(min32(end - nxt, c->mss_eff), room);
        bool fin = fin_q && nxt + len == end;
        int n =
            xmit(c, nxt, len,
                 HP_TCP_F_ACK | (nxt + len == end ? HP_TCP_F_PSH : 0) | (fin ? HP_TCP_F_FIN : 0));
        if (n < 0)
            return n;
        c->snd_nxt = nxt + (uint32_t)n + (fin && (uint32_t)n == len ? 1u : 0u);
        if (hp__seq_gt(c->snd_nxt, c->snd_max))
            c->snd_max = c->snd_nxt;
        if (fin && (uint32_t)n == len)
            c->flags |= HP__TCPF_FIN_SENT;
        c->last_send_ns = c->s->now;
        return 0;
    }
    /* Else the last segment again (its last MSS of sequence space). */
    uint32_t max = c->snd_max;
    uint32_t start = max - una > c->mss_eff ? max - c->mss_eff : una;
    if (c->flags & HP__TCPF_FIN_SENT) {
        uint32_t dstart = (end - una > c->mss_eff) ? end - c->mss_eff : una;
        start = dstart;
    }
    if (start == max)
        return -EAGAIN;
    c->flags &= ~HP__TCPF_RTT_TIMING;
    int n = resend_range(c, start, max);
    if (n < 0)
        return n;
    *rtx = true;
    c->last_send_ns = c->s->now;
    return 0;
}

/* In a state that sends data, nothing new to send and nothing to repair:
 * the call after an ACK received (once per segment). hp__tcp_output tests
 * this before the call to output(), whose register saves and window
 * arithmetic it then skips. */
static inline bool output_idle(const struct hp_tcp_sock *c)
{
    uint8_t st = c->state;
    if (st < HP_TCP_ESTABLISHED || st == HP_TCP_TIME_WAIT || st == HP_TCP_FIN_WAIT_2 ||
        (c->flags & (HP__TCPF_FIN_QUEUED | HP__TCPF_SB_LOSS)))
        return false;
    uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    return c->snd_nxt == end || !hp__seq_le(c->snd_nxt, end);
}

/* What output() does when nothing is pending and nothing lost: the
 * retransmission timer runs while data is outstanding (but for a zero
 * window probed), and an owed ACK goes. */
static int output_quiet(struct hp_tcp_sock *c)
{
    if (c->snd_max != c->snd_una && !((c->flags & HP__TCPF_PERSIST) && c->snd_wnd == 0))
        hp__tcp_rtx_ensure(c);
    return (c->flags & HP__TCPF_ACK_NOW) ? hp__tcp_send_ack(c) == 0 : 0;
}

/*
 * The body of hp__tcp_output. force: the persist timer's override of
 * RFC 9293 3.8.6.2.1 (4): send the first segment the windows allow even
 * if Nagle or sender SWS avoidance would wait.
 */
static int output(struct hp_tcp_sock *c, bool force)
{
    uint8_t st = c->state;
    if (st < HP_TCP_ESTABLISHED || st == HP_TCP_TIME_WAIT || st == HP_TCP_FIN_WAIT_2) {
        /* Nothing to send in these states (FIN_WAIT_2: all we sent, FIN
         * included, is acknowledged) but an owed ACK. */
        if ((c->flags & HP__TCPF_ACK_NOW) && (st == HP_TCP_TIME_WAIT || st == HP_TCP_FIN_WAIT_2))
            return hp__tcp_send_ack(c) == 0 ? 1 : 0;
        return 0;
    }

    struct hp_stack *s = c->s;
    uint64_t now = s->now;
    const uint32_t una = c->snd_una;
    const uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes; /* = fin_seq() */
    const bool fin_q = (c->flags & HP__TCPF_FIN_QUEUED) != 0;
    /* Something not yet sent: bytes past snd_nxt, or a FIN that snd_nxt
     * has not passed. */
    bool pending = hp__seq_le(c->snd_nxt, end) && (c->snd_nxt != end || fin_q);

    if (!pending && !(c->flags & HP__TCPF_SB_LOSS))
        return output_quiet(c);

    /* RFC 5681 4.1: after an idle period longer than the RTO, start again
     * from the restart window rather than send an old cwnd as one burst. */
    if (pending && una == c->snd_max &&
        now - c->last_send_ns > (uint64_t)hp__tcp_rtt_rto(&c->rtt) * 1000u)
        hp__tcp_cc_idle(&c->cc, hp__tcp_cubic_of(c, false), c->mss_eff);

    const uint32_t mss = c->mss_eff;
    /* Limited Transmit (RFC 3042): on the first two duplicate ACKs, one
     * new segment each beyond cwnd, so that a small window still draws the
     * third duplicate and a fast retransmit rather than a timeout. */
    uint32_t cwnd = c->cc.cwnd;
    if (c->cc.dupacks && !c->cc.in_recovery && c->snd_nxt == c->snd_max)
        cwnd += (c->cc.dupacks < 2 ? c->cc.dupacks : 2u) * mss;
    const bool nodelay = (c->flags & HP__TCPF_NODELAY) != 0;
    int sent = 0;
    bool blocked = false, nobufs = false;
    /* With SACK state, cwnd limits RFC 6675's pipe, not the flight: the
     * bytes SACKed or lost are out of the network (adj), and lost ones go
     * again first. */
    uint32_t adj = 0;
    if (c->flags & HP__TCPF_SB_LOSS) {
        sent = sack_retransmit(c, cwnd, &nobufs);
        uint32_t pipe = hp__tcp_sb_pipe(c), fl0 = c->snd_nxt - una;
        adj = fl0 > pipe ? fl0 - pipe : 0;
    }

    /* flight - adj < cwnd and flight < snd_wnd: one bound on the flight. */
    const uint32_t wnd = min32(c->snd_wnd, cwnd + adj < cwnd ? UINT32_MAX : cwnd + adj);
    while (pending && !nobufs) {
        uint32_t seq = c->snd_nxt;
        uint32_t d = end - seq; /* unsent bytes */
        uint32_t flight = seq - una;
        uint32_t usable = wnd > flight ? wnd - flight : 0;
        uint32_t len = d < mss ? d : mss;
        bool rtx = hp__seq_lt(seq, c->snd_max);
        if (len > usable) {
            /* Window-limited. Sender SWS avoidance (RFC 9293 3.8.6.2.1):
             * send less than a full segment only when it is at least half
             * the largest window the peer ever offered and nothing is in
             * flight (Nagle's bracketed condition), or when it repeats
             * data already sent. */
            if (usable == 0 ||
                (!rtx && !force && (flight != 0 || usable < (c->max_snd_wnd >> 1)))) {
                blocked = true;
                break;
            }
            len = usable;
        } else if (len < mss && !rtx && !force && flight != 0 && !nodelay && !fin_q) {
            /* Nagle (RFC 9293 3.7.4): a short segment waits while data is
             * unacknowledged. Our FIN overrides it: nothing more will come
             * to fill the segment. */
            break;
        }
        bool last = seq + len == end;
        bool fin = fin_q && last;
        uint8_t fl = HP_TCP_F_ACK;
        if (fin)
            fl |= HP_TCP_F_FIN;
        if (last && len)
            fl |= HP_TCP_F_PSH; /* the segment that empties the queue (RFC 9293 3.9.1) */
        int n = xmit(c, seq, len, fl);
        if (n < 0) {
            nobufs = true;
            break;
        }
        if ((uint32_t)n < len)
            fin = false;
        uint32_t nxt = seq + (uint32_t)n + (fin ? 1u : 0u);
        if (rtx) {
            /* Karn (RFC 6298 3): no sample across a retransmission. */
            c->flags &= ~HP__TCPF_RTT_TIMING;
        } else if (!(c->flags & (HP__TCPF_RTT_TIMING | HP__TCPF_TS_OK)) && n > 0) {
            /* Without timestamps, time one segment per round trip. */
            c->flags |= HP__TCPF_RTT_TIMING;
            c->rtt_seq = nxt;
            c->rtt_start_us = (uint32_t)(now / 1000u);
        }
        c->snd_nxt = nxt;
        if (hp__seq_gt(nxt, c->snd_max))
            c->snd_max = nxt;
        if (fin)
            c->flags |= HP__TCPF_FIN_SENT;
        sent++;
        force = false;
        pending = hp__seq_le(nxt, end) && (nxt != end || fin_q);
    }
    if (sent)
        c->last_send_ns = now;

    if (c->snd_max != una) {
        /* Data or FIN outstanding: the retransmission timer runs, unless
         * the persist timer is probing a zero window. */
        if (!((c->flags & HP__TCPF_PERSIST) && c->snd_wnd == 0))
            hp__tcp_rtx_ensure(c);
    } else if (pending) {
        /* Data waits and nothing is outstanding, so no ACK will come to
         * clock it out: the persist timer probes a closed window (RFC 9293
         * 3.8.6.1) or overrides SWS avoidance for a small one (3.8.6.2.1
         * (4)); the retransmission timer retries after a lack of buffers. */
        if (blocked)
            hp__tcp_persist_start(c);
        else if (nobufs)
            hp__tcp_rtx_ensure(c);
    }

    if (!sent && (c->flags & HP__TCPF_ACK_NOW) && !nobufs)
        sent += hp__tcp_send_ack(c) == 0;
    return sent;
}

int hp__tcp_output(struct hp_tcp_sock *c)
{
    int n = output_idle(c) ? output_quiet(c) : output(c, false);
    hp__tcp_check(c);
    return n;
}

int hp__tcp_output_force(struct hp_tcp_sock *c)
{
    /* The override is for what the persist timer was waiting for. */
    c->flags &= ~HP__TCPF_PERSIST;
    c->persist_shift = 0;
    return output(c, true);
}

int hp__tcp_send_seg(struct hp_tcp_sock *c, uint32_t seq, uint32_t len)
{
    uint8_t fl = HP_TCP_F_ACK;
    if (len && seq + len == hp__tcp_sndq_seq(c) + c->sndq.bytes)
        fl |= HP_TCP_F_PSH;
    int n = xmit(c, seq, len, fl);
    if (n > 0)
        c->last_send_ns = c->s->now;
    return n;
}

int hp__tcp_retransmit(struct hp_tcp_sock *c)
{
    if (c->state == HP_TCP_SYN_SENT || c->state == HP_TCP_SYN_RECEIVED)
        return hp__tcp_send_syn(c);
    if (!hp__tcp_synchronized(c) || c->state == HP_TCP_TIME_WAIT || c->snd_una == c->snd_max)
        return 0;
    uint32_t seq = c->snd_una;
    uint32_t end = hp__tcp_sndq_seq(c) + c->sndq.bytes;
    uint32_t len = 0;
    if (hp__seq_lt(seq, end))
        len = min32(min32(end - seq, c->mss_eff), c->snd_max - seq);
    /* The FIN goes along if it was sent and this segment reaches it. */
    bool fin = (c->flags & HP__TCPF_FIN_QUEUED) && seq + len == end && hp__seq_gt(c->snd_max, end);
    if (!len && !fin)
        return 0;
    uint8_t fl =
        HP_TCP_F_ACK | (fin ? HP_TCP_F_FIN : 0) | (len && seq + len == end ? HP_TCP_F_PSH : 0);
    c->flags &= ~HP__TCPF_RTT_TIMING; /* Karn */
    int n = xmit(c, seq, len, fl);
    if (n < 0)
        return n;
    if (hp__seq_gt(seq + (uint32_t)n, c->snd_nxt))
        c->snd_nxt = seq + (uint32_t)n; /* never behind what was just sent */
    c->last_send_ns = c->s->now;
    hp__tcp_rtx_ensure(c);
    return 0;
}

/* ---- SYN, ACK, RST -------------------------------------------------------------- */

int hp__tcp_send_syn(struct hp_tcp_sock *c)
{
    const struct hp_tcp_config *cfg = &hp__tcp(c->s)->cfg;
    struct hp_tcp_repr r;
    memset(&r, 0, sizeof r);
    r.src_port = c->key.lport;
    r.dst_port = c->key.rport;
    r.seq = c->iss;
    r.window = syn_window(c);
    r.opt.has_mss = true;
    r.opt.mss = c->rmss;
    if (c->state == HP_TCP_SYN_SENT) {
        r.flags = HP_TCP_F_SYN;
        if (!cfg->no_window_scaling) {
            r.opt.has_ws = true;
            r.opt.ws = c->rcv_wscale;
        }
        if (!cfg->no_timestamps) {
            r.opt.has_ts = true;
            r.opt.ts_val = hp__tcp_ts_now(c);
            r.opt.ts_ecr = 0; /* RFC 7323 3.2: TSecr is 0 without ACK */
        }
        r.opt.sack_perm = !cfg->no_sack; /* RFC 2018 2 */
        if (cfg->ecn == HP_TCP_ECN_ON)
            r.flags |= HP_TCP_F_ECE | HP_TCP_F_CWR; /* an ECN-setup SYN (RFC 3168 6.1.1) */
    } else if (c->state == HP_TCP_SYN_RECEIVED) {
        /* A SYN-ACK offers only what the peer's SYN offered (RFC 7323 1.3);
         * a cookie connection nothing but MSS (tcp_cookie.h). */
        r.flags = HP_TCP_F_SYN | HP_TCP_F_ACK;
        r.ack = c->rcv_nxt;
        if (!(c->flags & HP__TCPF_COOKIE)) {
            if (c->flags & HP__TCPF_WS_OK) {
                r.opt.has_ws = true;
                r.opt.ws = c->rcv_wscale;
            }
            if (c->flags & HP__TCPF_TS_OK) {
                r.opt.has_ts = true;
                r.opt.ts_val = hp__tcp_ts_now(c);
                r.opt.ts_ecr = c->ts_recent;
            }
            r.opt.sack_perm = (c->flags & HP__TCPF_SACK_OK) != 0;
        }
        if (c->flags & HP__TCPF_ECN_OK)
            r.flags |= HP_TCP_F_ECE; /* an ECN-setup SYN-ACK */
    } else {
        return -EINVAL;
    }
    /* A SYN was sent before when the timer runs (the timer itself re-arms
     * before it resends). */
    bool again = c->rtx_tdue != 0 && c->rtx_due != 0;
    struct hp__route rt;
    hp__tcp_route(c, &rt);
    int rc = emit_send(c->s, &rt, c->key.family, c->key.raddr, &r);
    /* The SYN is outstanding from now on, sent or not: the timer resends it. */
    c->snd_max = c->iss + 1;
    c->snd_nxt = c->iss + 1;
    if (rc == 0) {
        c->segs_out++;
        if (again) {
            hp__ctr(c->s, HP_CTR_TCP_RETRANS_SEGS);
            HP__TCP_ST_INC(c, retrans_segs);
        }
        if (r.flags & HP_TCP_F_ACK)
            acked_now(c, r.window);
        else
            c->rcv_wnd = r.window;
        c->last_send_ns = c->s->now;
    }
    hp__tcp_rtx_ensure(c);
    return rc == -ENOBUFS || rc == 0 ? rc : -ENOBUFS;
}

/*
 * The sequence number of a segment that carries no data, SYN or FIN (a
 * pure ACK, a RST). RFC 9293's SND.NXT is the next new octet, which in our
 * go-back-N model is snd_max: snd_nxt may have gone back to snd_una after
 * a timeout, and the peer, which may hold everything up to snd_max, would
 * find an ACK numbered below its RCV.NXT unacceptable (3.10.7.4) and drop
 * it, our ACK field with it; two sides retransmitting at once would then
 * never hear each other (BSD's tcp_output uses snd_max for the same
 * reason). Past the peer's window (a zero window probe outstanding, a
 * shrunk window) the window's right edge is used instead, allowing for
 * the peer's window scale rounding, as Linux does.
 */
static uint32_t acceptable_seq(const struct hp_tcp_sock *c)
{
    uint32_t seq = c->snd_max;
    if (!hp__tcp_synchronized(c))
        return seq;
    uint32_t right = c->snd_una + c->snd_wnd;
    /* Past the right edge by less than the scale's rounding, the peer's
     * real window may still cover seq (Linux's rule); but a zero window
     * accepts only its left edge (RFC 9293 3.10.7.4). */
    if (hp__seq_gt(seq, right) && (c->snd_wnd == 0 || seq - right >= (1u << c->snd_wscale)))
        seq = right;
    return seq;
}

int hp__tcp_send_ack(struct hp_tcp_sock *c)
{
    if (c->state < HP_TCP_SYN_RECEIVED)
        return -ENOTCONN;
    int rc = xmit(c, acceptable_seq(c), 0, HP_TCP_F_ACK);
    return rc < 0 ? rc : 0;
}

/*
 * RFC 5961 7 asks for a limit on challenge ACKs; a single stack-wide
 * counter, as the RFC sketches it, is a side channel (RFC 5961 10,
 * CVE-2016-5696): an off-path attacker exhausts it with its own
 * connection, then counts the challenge ACKs it gets back while it probes
 * another connection's sequence space, and learns whether its guesses hit.
 * As Linux since 4.7:
 *  - per connection: at most one challenge ACK every challenge_ack_conn_ms
 *    (tcp_invalid_ratelimit), so a burst on one connection spends only
 *    its own allowance and never another connection's;
 *  - stack-wide, as a backstop: a budget per second drawn at random from
 *    [limit/2, limit + limit/2) (from the stack's secret: unpredictable to
 *    the attacker), so that what is left of it tells nothing exact.
 */
bool hp__tcp_challenge_allowed(struct hp_stack *s, uint32_t *next_ms)
{
    struct hp__tcp_state *ts = hp__tcp(s);
    const struct hp_tcp_config *cfg = &ts->cfg;
    uint32_t now_ms = (uint32_t)(s->now / 1000000u);
    uint32_t left = *next_ms - now_ms; /* wraps: within gap means not yet */
    if (*next_ms != 0 && left != 0 && left <= cfg->challenge_ack_conn_ms) {
        hp__ctr(s, HP_CTR_TCP_CHALLENGE_ACK_CONN_LIMITED);
        return false;
    }
    uint32_t limit = cfg->challenge_ack_limit;
    if (limit != UINT32_MAX) {
        uint64_t sec = s->now / 1000000000u;
        if (sec != ts->chack_sec) {
            static const struct hp__tcp_tuple none = {.family = 0};
            uint64_t r = hp__tcp_hash(&ts->secret, HP__TCP_HASH_CHALLENGE, &none, (uint32_t)sec,
                                      (uint32_t)(sec >> 32));
            uint32_t half = limit / 2 + (limit & 1);
            ts->chack_sec = sec;
            ts->chack_left = half + (uint32_t)(r % limit);
        }
        if (ts->chack_left == 0) {
            hp__ctr(s, HP_CTR_TCP_CHALLENGE_ACK_LIMITED);
            return false;
        }
        ts->chack_left--;
    }
    *next_ms = now_ms + cfg->challenge_ack_conn_ms;
    if (*next_ms == 0)
        *next_ms = 1; /* 0 means "any time" */
    return true;
}

static bool challenge_allowed(struct hp_tcp_sock *c)
{
    return hp__tcp_challenge_allowed(c->s, &c->chack_next_ms);
}

void hp__tcp_challenge_ack(struct hp_tcp_sock *c)
{
    if (!challenge_allowed(c))
        return;
    hp__ctr(c->s, HP_CTR_TCP_CHALLENGE_ACKS);
    (void)hp__tcp_send_ack(c);
}

void hp__tcp_send_rst(struct hp_tcp_sock *c)
{
    if (c->state == HP_TCP_CLOSED || c->state == HP_TCP_LISTEN || !c->ifx)
        return;
    struct hp_tcp_repr r;
    memset(&r, 0, sizeof r);
    r.src_port = c->key.lport;
    r.dst_port = c->key.rport;
    r.seq = acceptable_seq(c); /* RFC 9293 3.10.5: SND.NXT, see acceptable_seq */
    r.flags = HP_TCP_F_RST;
    if (c->flags & HP__TCPF_TS_OK) {
        /* RFC 7323 3.2: TSopt SHOULD be sent in an RST once negotiated. */
        r.opt.has_ts = true;
        r.opt.ts_val = hp__tcp_ts_now(c);
        r.opt.ts_ecr = c->ts_recent;
    }
    struct hp__route rt;
    hp__tcp_route(c, &rt);
    if (emit_send(c->s, &rt, c->key.family, c->key.raddr, &r) == 0) {
        hp__ctr(c->s, HP_CTR_TCP_OUT_RSTS);
        c->segs_out++;
    }
}

/* Route a reply to the source of a received segment, from the address it
 * was sent to. */
static int reply_route(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                       struct hp__route *rt)
{
    /* Never to or from a multicast or limited broadcast address (RFC 1122
     * 4.2.3.10; directed broadcasts are left to the IP layer's delivery). */
    bool group =
        family == 4 ? (src[0] >= 224 || dst[0] >= 224) : (src[0] == 0xff || dst[0] == 0xff);
    if (group)
        return -EINVAL;
    int rc = family == 4 ? hp__route4(s, src, rt) : hp__route6(s, src, rt);
    if (rc < 0) {
        hp__ctr(s, family == 4 ? HP_CTR_IP_OUT_NO_ROUTES : HP_CTR_IP6_OUT_NO_ROUTES);
        return rc;
    }
    memcpy(rt->src, dst, family == 4 ? 4 : 16);
    return 0;
}

int hp__tcp_send_reply(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                       const struct hp_tcp_repr *o)
{
    struct hp__route rt;
    int rc = reply_route(s, family, src, dst, &rt);
    return rc < 0 ? rc : emit_send(s, &rt, family, src, o);
}

void hp__tcp_send_rst_reply(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                            const struct hp_tcp_repr *r)
{
    if (r->flags & HP_TCP_F_RST)
        return; /* never answer a RST (RFC 9293 3.10.7.1) */
    struct hp__route rt;
    if (reply_route(s, family, src, dst, &rt) < 0)
        return;
    struct hp_tcp_repr o;
    memset(&o, 0, sizeof o);
    o.src_port = r->dst_port;
    o.dst_port = r->src_port;
    if (r->flags & HP_TCP_F_ACK) {
        o.seq = r->ack; /* <SEQ=SEG.ACK><CTL=RST> */
        o.flags = HP_TCP_F_RST;
    } else {
        /* <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>; SYN and FIN count in SEG.LEN. */
        uint32_t seglen = (uint32_t)r->payload_len + ((r->flags & HP_TCP_F_SYN) ? 1u : 0u) +
                          ((r->flags & HP_TCP_F_FIN) ? 1u : 0u);
        o.ack = r->seq + seglen;
        o.flags = HP_TCP_F_RST | HP_TCP_F_ACK;
    }
    if (emit_send(s, &rt, family, src, &o) == 0)
        hp__ctr(s, HP_CTR_TCP_OUT_RSTS);
}

void hp__tcp_send_cookie_synack(struct hp_tcp_sock *l, int family, const uint8_t *src,
                                const uint8_t *dst, const struct hp_tcp_repr *r)
{
    struct hp_stack *s = l->s;
    struct hp__tcp_state *ts = hp__tcp(s);
    struct hp__route rt;
    if (reply_route(s, family, src, dst, &rt) < 0)
        return;
    size_t alen = family == 4 ? 4 : 16;
    struct hp__tcp_tuple t;
    memset(&t, 0, sizeof t);
    t.family = (uint8_t)family;
    t.lport = r->dst_port;
    t.rport = r->src_port;
    memcpy(t.laddr, dst, alen);
    memcpy(t.raddr, src, alen);

    /* The MSS: the peer's option or its default (RFC 9293 3.7.1, RFC 8200
     * 8.3), no more than our route allows (and the configured MSS). */
    uint32_t hdrs = family == 4 ? 40u : 60u;
    uint32_t mss = r->opt.has_mss ? r->opt.mss : (family == 4 ? 536u : 1220u);
    uint32_t ours = rt.ifc->mtu > hdrs ? rt.ifc->mtu - hdrs : 0;
    if (ts->cfg.mss && ts->cfg.mss < ours)
        ours = ts->cfg.mss;
    if (l->rmss && l->rmss < ours)
        ours = l->rmss;
    mss = min32(mss, ours);
    uint32_t isn;
    int cm = hp__tcp_cookie_make(&ts->secret, &t, r->seq, mss, s->now, &isn);
    if (cm < 0)
        return;

    struct hp_tcp_repr o;
    memset(&o, 0, sizeof o);
    o.src_port = r->dst_port;
    o.dst_port = r->src_port;
    o.seq = isn;
    o.ack = r->seq + 1;
    o.flags = HP_TCP_F_SYN | HP_TCP_F_ACK;
    uint32_t rcvbuf = l->rcvbuf ? l->rcvbuf : ts->cfg.rcvbuf;
    o.window = (uint16_t)min32(rcvbuf, 65535u); /* RFC 7323 2.2: a SYN's window is never scaled */
    o.opt.has_mss = true;
    o.opt.mss = (uint16_t)cm;
    hp__tcp_cookie_offer(l, &t, r, &o);
    if (emit_send(s, &rt, family, src, &o) == 0)
        hp__ctr(s, HP_CTR_TCP_SYNCOOKIES_SENT);
    l->lq->cookie_ns = s->now;
}

/* ---- when to acknowledge ------------------------------------------------------- */

void hp__tcp_ack_schedule(struct hp_tcp_sock *c, uint32_t len, bool in_order, bool fills_hole)
{
    /* At once (RFC 9293 3.8.6.3, RFC 5681 4.2): out-of-order data (the
     * sender needs the duplicate ACKs), a segment that fills a hole, a FIN
     * or anything without data, or with QUICKACK. */
    if (!in_order || fills_hole || len == 0 ||
        (c->flags & (HP__TCPF_QUICKACK | HP__TCPF_FIN_RCVD))) {
        c->flags |= HP__TCPF_ACK_NOW;
        return;
    }
    uint32_t segs = hp__tcp(c->s)->cfg.delack_segs;
    if (!segs)
        segs = 2;
    uint32_t full = c->rmss - ((c->flags & HP__TCPF_TS_OK) ? TS_OPT_LEN : 0);
    if (len >= full && c->segs_unacked < UINT16_MAX)
        c->segs_unacked++;
    /* Every delack_segs full-sized segments; and, so that a peer sending
     * short segments (a smaller MSS than we announced) still gets its ACKs,
     * every delack_segs segments' worth of bytes. */
    uint32_t owed = c->rcv_nxt - c->last_ack_sent;
    if (c->segs_unacked >= segs || owed >= segs * full) {
        /* Within a receive burst, the ACK goes once at its end (the next
         * poll's start, hp__tcp_ack_soon), for every segment the burst
         * brought: what Linux's GRO does, one ACK per aggregate of up to
         * 64 KiB. Bounded the same way, and by a quarter of our window, so
         * that a sender with a small window still hears of it in time. */
        if (c->s->in_poll && owed < ACK_COALESCE_MAX && owed < c->rcv_wnd / 4) {
            hp__tcp_ack_soon(c);
            return;
        }
        c->flags |= HP__TCPF_ACK_NOW;
        return;
    }
    /* A window the peer should hear of (the first data after the handshake
     * announces the scaled one): soon, so that the application's answer
     * carries it. */
    if (window_grew(c)) {
        hp__tcp_ack_soon(c);
        return;
    }
    if (!(c->flags & HP__TCPF_DACK)) {
        /* Measured from the first segment not acknowledged. */
        c->flags |= HP__TCPF_DACK;
        hp__tcp_dack_arm(c);
    }
}

void hp__tcp_window_update(struct hp_tcp_sock *c)
{
    /* Only where the peer may still send (not after its FIN). */
    if (!(c->state == HP_TCP_ESTABLISHED || c->state == HP_TCP_FIN_WAIT_1 ||
          c->state == HP_TCP_FIN_WAIT_2) ||
        (c->flags & HP__TCPF_FIN_RCVD))
        return;
    if (!window_update_due(c))
        return;
    /* Soon rather than now: data the application sends before the next
     * poll carries it, and so does the ACK of what arrives meanwhile. */
    hp__tcp_ack_soon(c);
    if (c->flags & HP__TCPF_ACK_NOW)
        (void)hp__tcp_output(c);
}
