/* SPDX-License-Identifier: BSD-3-Clause */
/* Received TCP text: in-order bytes into the receive queue, out-of-order segments held sorted and trimmed until the gap before them fills (RFC 9293 3.10.7.4 seventh step, RFC 5681 4.2). */
#include <string.h>

#include "tcp_in.h"

/*
 * The out-of-order list (c->ooo) holds whole received buffers, trimmed to
 * their new bytes, sorted by sequence number and never overlapping. Each
 * buffer's `reserved` field holds its first sequence number in the low 32
 * bits and, in bit 32, whether the peer's FIN follows its last byte (a
 * FIN that arrived out of order must not be lost once the gap fills).
 * A FIN alone is kept as a buffer with no data.
 */
#define OOO_FIN (1ull << 32)

static inline uint32_t ooo_seq(const struct hp_buf *q)
{
    return (uint32_t)q->reserved;
}

static inline uint32_t ooo_end(const struct hp_buf *q)
{
    return (uint32_t)q->reserved + q->data_len;
}

static inline bool ooo_fin(const struct hp_buf *q)
{
    return (q->reserved & OOO_FIN) != 0;
}

/* Free one list buffer: unlinked first, since hp_buf_free frees a chain. */
static void ooo_free_one(struct hp_buf *q)
{
    q->next = NULL;
    hp_buf_free(q);
}

void hp__tcp_ooo_purge(struct hp_tcp_sock *c)
{
    struct hp_buf *q = c->ooo;
    while (q) {
        struct hp_buf *next = q->next;
        ooo_free_one(q);
        q = next;
    }
    c->ooo = NULL;
    c->ooo_n = 0;
    c->ooo_bytes = 0;
}

/* Keep len bytes of b's data from offset off (b is one segment). */
static void keep(struct hp_buf *b, uint32_t off, uint32_t len)
{
    (void)hp_buf_adj(b, off);
    (void)hp_buf_trim(b, b->data_len - len);
}

/* In-order bytes reach the user, or nowhere after SHUT_RD. */
static void deliver(struct hp_tcp_sock *c, struct hp_buf *b)
{
    if (c->flags & HP__TCPF_SHUT_RD) {
        hp_buf_free(b);
        return;
    }
    hp__tcp_rcvq_push_small(&c->rcvq, b, HP__TCP_RCV_SMALL);
}

/*
 * New in-order bytes [rcv_nxt, rcv_nxt + len) are about to be queued:
 * out-of-order entries they cover go, and the first one they overlap
 * loses its front, so that the list stays strictly above the new rcv_nxt.
 */
static void ooo_cut_below(struct hp_tcp_sock *c, uint32_t end)
{
    while (c->ooo && hp__seq_lt(ooo_seq(c->ooo), end)) {
        struct hp_buf *q = c->ooo;
        uint32_t qe = ooo_end(q);
        if (hp__seq_lt(qe, end) || (qe == end && !ooo_fin(q))) {
            c->ooo = q->next;
            c->ooo_n--;
            c->ooo_bytes -= q->data_len;
            ooo_free_one(q);
            continue;
        }
        /* It reaches past end, or its FIN follows end exactly: keep the
         * rest (a FIN alone, in the second case). */
        uint32_t d = end - ooo_seq(q);
        (void)hp_buf_adj(q, d);
        c->ooo_bytes -= d;
        q->reserved = (q->reserved & OOO_FIN) | (uint64_t)end;
        break;
    }
}

/* Move the entries that now start at rcv_nxt into the receive queue.
 * @return the bytes moved; *fin when a FIN came with them. */
static uint32_t ooo_pull(struct hp_tcp_sock *c, bool *fin)
{
    uint32_t moved = 0;
    while (c->ooo && hp__seq_le(ooo_seq(c->ooo), c->rcv_nxt)) {
        struct hp_buf *q = c->ooo;
        c->ooo = q->next;
        q->next = NULL;
        c->ooo_n--;
        c->ooo_bytes -= q->data_len;
        bool qfin = ooo_fin(q);
        uint32_t skip = c->rcv_nxt - ooo_seq(q);
        if (skip > q->data_len) {
            /* Behind rcv_nxt altogether (cannot happen with the list
             * kept above rcv_nxt; harmless if it does). */
            ooo_free_one(q);
            continue;
        }
        (void)hp_buf_adj(q, skip);
        uint32_t n = q->data_len;
        if (n) {
            deliver(c, q);
            c->rcv_nxt += n;
            c->bytes_received += n;
            moved += n;
        } else {
            ooo_free_one(q);
        }
        if (qfin) {
            /* Nothing follows the peer's FIN: anything still held
             * beyond it is not part of the stream. */
            *fin = true;
            hp__tcp_ooo_purge(c);
            break;
        }
    }
    return moved;
}

static bool in_order(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = c->s;
    uint32_t len = sg->len;
    bool fin = (sg->flags & HP_TCP_F_FIN) != 0;
    bool had_ooo = c->ooo != NULL;

    if (len) {
        ooo_cut_below(c, c->rcv_nxt + len);
        if (!(c->flags & HP__TCPF_SHUT_RD)) {
            /* The window we advertised bounds what the peer may send, but
             * rcvbuf is the limit on what we hold (tcp_internal.h). */
            uint32_t used = c->rcvq.bytes + c->ooo_bytes;
            uint32_t room = c->rcvbuf > used ? c->rcvbuf - used : 0;
            /* ... except that data inside a window we advertised is kept
             * even when it overruns rcvbuf (by less than one window-scale
             * unit: tcp_output.c window_field): dropping it would only
             * make the peer send it again. */
            uint32_t promised = hp__seq_gt(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
            if (promised > room)
                room = promised;
            if (len > room) {
                hp__ctr(s, HP_CTR_TCP_RCVQ_DROPS);
                len = room;
                fin = false; /* it follows bytes we did not take */
            }
        }
    }
    if (len) {
        struct hp_buf *b = sg->b;
        sg->b = NULL;
        keep(b, sg->off, len);
        deliver(c, b);
        c->rcv_nxt += len;
        c->bytes_received += len;
    }
    hp__tcp_seg_free(sg);

    uint32_t pulled = 0;
    if (!fin && had_ooo)
        pulled = ooo_pull(c, &fin);
    else if (fin && c->ooo)
        hp__tcp_ooo_purge(c); /* bytes held beyond the peer's FIN */

    if (sg->len) {
        if (len < sg->len)
            c->flags |= HP__TCPF_ACK_NOW; /* tell the peer at once what we could not take */
        /* RFC 5681 4.2: a segment that fills (part of) a gap is
         * acknowledged at once; hp__tcp_ack_schedule decides the rest. */
        hp__tcp_ack_schedule(c, len, true, had_ooo);
    }
    if ((len || pulled) && !(c->flags & HP__TCPF_SHUT_RD))
        hp__tcp_wake(c, HP_EV_IN);
    return fin;
}

/* ---- SACK blocks we send (RFC 2018, RFC 2883) ------------------------------------ */

/* Remember that a segment starting at seq arrived out of order now (most
 * recent first, no repeats). */
static void sack_recent_push(struct hp_tcp_sock *c, uint32_t seq)
{
    if (!(c->flags & HP__TCPF_SACK_OK))
        return;
    c->flags |= HP__TCPF_SACK_OUT;
    /* The ranking's memory is the extension's; without it the blocks go
     * unranked (sequence order). */
    struct hp__tcp_ext *ext = hp__tcp_ext_get(c);
    if (!ext)
        return;
    struct hp__tcp_sackrx *x = &ext->sackrx;
    unsigned n = x->nrecent, i = 0;
    while (i < n && x->recent[i] != seq)
        i++;
    if (i == n && n < HP__TCP_SACK_RECENT)
        x->nrecent = (uint8_t)++n;
    if (i == n)
        i = n - 1; /* full: the oldest goes */
    for (; i > 0; i--)
        x->recent[i] = x->recent[i - 1];
    x->recent[0] = seq;
}

void hp__tcp_dsack_note(struct hp_tcp_sock *c, uint32_t seq, uint32_t end)
{
    if (!(c->flags & HP__TCPF_SACK_OK) || !hp__seq_lt(seq, end))
        return;
    struct hp__tcp_ext *x = hp__tcp_ext_get(c); /* without it, no D-SACK */
    if (!x || x->sackrx.dsack_pend)
        return;
    x->sackrx.dsack[0] = seq;
    x->sackrx.dsack[1] = end;
    x->sackrx.dsack_pend = true;
    /* At once: the sender learns of a spurious retransmission from it. */
    c->flags |= HP__TCPF_SACK_OUT | HP__TCPF_ACK_NOW;
    hp__ctr(c->s, HP_CTR_TCP_DSACK_SENT);
}

struct pick {
    uint32_t l, r;
    uint32_t pri;
};

/* Insert [l, r) into the picked blocks, sorted by priority (lower first,
 * ties by sequence), keeping at most max (<= HP_TCP_MAX_SACK). */
static unsigned pick_add(struct pick *pk, unsigned n, unsigned max, uint32_t l, uint32_t r,
                         uint32_t p)
{
    unsigned at = n;
    while (at > 0 && pk[at - 1].pri > p)
        at--;
    if (at >= max)
        return n;
    if (n == max)
        n--;
    memmove(&pk[at + 1], &pk[at], (n - at) * sizeof pk[0]);
    pk[at] = (struct pick){.l = l, .r = r, .pri = p};
    return n + 1;
}

unsigned hp__tcp_sack_fill(struct hp_tcp_sock *c, uint32_t (*blk)[2], unsigned max)
{
    struct hp__tcp_sackrx *x = c->x ? &c->x->sackrx : NULL; /* none: no D-SACK, no ranking */
    unsigned n = 0;
    if (x && x->dsack_pend && max) {
        /* RFC 2883 4: the duplicate first, reported once. */
        blk[0][0] = x->dsack[0];
        blk[0][1] = x->dsack[1];
        x->dsack_pend = false;
        blk++;
        max--;
        n = 1;
    }
    struct pick pk[HP_TCP_MAX_SACK];
    unsigned m = 0;
    if (max > HP_TCP_MAX_SACK)
        max = HP_TCP_MAX_SACK;
    /* The out-of-order list merged into ranges; each ranked by the most
     * recent arrival it holds (RFC 2018 4: most recent first, then the
     * others). A FIN alone (no data) reports nothing. */
    struct hp_buf *q = c->ooo;
    while (q) {
        uint32_t l = ooo_seq(q), r = ooo_end(q);
        for (q = q->next; q && ooo_seq(q) == r; q = q->next)
            r = ooo_end(q);
        if (l == r)
            continue;
        uint32_t p = 0xff;
        for (unsigned i = 0; x && i < x->nrecent && p == 0xff; i++)
            if (hp__seq_ge(x->recent[i], l) && hp__seq_lt(x->recent[i], r))
                p = i;
        m = pick_add(pk, m, max, l, r, p);
    }
    for (unsigned i = 0; i < m; i++) {
        blk[i][0] = pk[i].l;
        blk[i][1] = pk[i].r;
    }
    if (m + n == 0)
        c->flags &= ~HP__TCPF_SACK_OUT;
    return m + n;
}

static void out_of_order(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    struct hp_stack *s = c->s;
    const struct hp__tcp_state *ts = hp__tcp(s);
    uint32_t s0 = sg->seq, off = sg->off, len = sg->len;
    uint32_t e0 = s0 + len;
    bool fin = (sg->flags & HP_TCP_F_FIN) != 0;

    /* RFC 5681 4.2: out-of-order data is acknowledged at once, which
     * gives the sender the duplicate ACKs of fast retransmit, whether we
     * keep the data or not. */
    c->flags |= HP__TCPF_ACK_NOW;

    /* After SHUT_RD nothing is kept; the peer resends once the gap fills. */
    uint32_t free_space = c->rcvbuf > c->rcvq.bytes ? c->rcvbuf - c->rcvq.bytes : 0;
    if ((c->flags & HP__TCPF_SHUT_RD) || c->ooo_n >= ts->cfg.ooo_max_segs ||
        e0 - c->rcv_nxt > free_space) {
        hp__ctr(s, HP_CTR_TCP_OFO_DROPS);
        hp__tcp_seg_free(sg);
        return;
    }

    /* RFC 2018 4: the block of the segment that arrived last goes first. */
    sack_recent_push(c, s0);

    /* prev: the last entry starting at or before s0. */
    struct hp_buf *prev = NULL;
    for (struct hp_buf *q = c->ooo; q && hp__seq_le(ooo_seq(q), s0); q = q->next)
        prev = q;
    if (prev) {
        uint32_t pe = ooo_end(prev);
        if (hp__seq_ge(pe, e0)) {
            /* Nothing new but perhaps the FIN after what we hold: a
             * duplicate (RFC 2883). */
            if (fin && pe == e0)
                prev->reserved |= OOO_FIN;
            if (len)
                hp__tcp_dsack_note(c, s0, e0);
            hp__tcp_seg_free(sg);
            return;
        }
        if (hp__seq_gt(pe, s0)) {
            uint32_t d = pe - s0;
            if (d && d <= len)
                hp__tcp_dsack_note(c, s0, pe);
            if (d > len)
                d = len;
            off += d;
            len -= d;
            s0 += d;
        }
    }
    /* Entries after it that the new bytes cover go; one that overlaps the
     * new bytes' end keeps its bytes and the new segment ends where it
     * starts. */
    struct hp_buf **link = prev ? &prev->next : &c->ooo;
    while (*link && hp__seq_lt(ooo_seq(*link), e0)) {
        struct hp_buf *q = *link;
        if (hp__seq_le(ooo_end(q), e0)) {
            if (ooo_fin(q) && ooo_end(q) == e0)
                fin = true;
            *link = q->next;
            c->ooo_n--;
            c->ooo_bytes -= q->data_len;
            ooo_free_one(q);
            continue;
        }
        len -= e0 - ooo_seq(q);
        e0 = ooo_seq(q);
        fin = false;
        break;
    }
    if (len == 0 && !fin) {
        hp__tcp_seg_free(sg);
        return;
    }
    struct hp_buf *b = sg->b;
    sg->b = NULL;
    keep(b, off, len);
    b->reserved = (uint64_t)s0 | (fin ? OOO_FIN : 0);
    b->next = *link;
    *link = b;
    c->ooo_n++;
    c->ooo_bytes += len;
    hp__ctr(s, HP_CTR_TCP_OFO_QUEUED);
    hp__tcp_ack_schedule(c, len, false, false);
}

bool hp__tcp_rcv_text(struct hp_tcp_sock *c, struct hp__tcp_seg *sg)
{
    if (sg->len == 0 && !(sg->flags & HP_TCP_F_FIN)) {
        hp__tcp_seg_free(sg);
        return false;
    }
    if (sg->seq == c->rcv_nxt)
        return in_order(c, sg);
    out_of_order(c, sg);
    return false;
}
