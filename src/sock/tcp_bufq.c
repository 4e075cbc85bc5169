/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP byte queues: a stream of bytes held in a chain of packet buffers, cursors for copying from the middle, and the send queue that keeps a few bytes inline. */
#include <errno.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "tcp_internal.h"

/* A partial sum of bytes paired the other way round, folded and swapped. */
static inline uint32_t swap_sum(uint32_t p)
{
    p = (p & 0xFFFF) + (p >> 16);
    p = (p & 0xFFFF) + (p >> 16);
    return ((p & 0xFF) << 8) | (p >> 8);
}

/*
 * Invariants (checked by the unit tests, relied on everywhere here):
 *  - head == NULL <=> tail == NULL <=> bytes == 0 <=> nbufs == 0;
 *  - every queued buffer has data_len > 0 and is linked through next, the
 *    tail's next is NULL;
 *  - a cursor whose off is at or past start points at a queued buffer
 *    beginning at off (tcp_internal.h): the queue never writes cursors.
 * A buffer leaving the queue has next cleared before it is freed
 * (hp_buf_free frees a whole chain).
 */

void hp__tcp_bufq_init(struct hp__tcp_bufq *q)
{
    memset(q, 0, sizeof *q);
}

/* We may write into b's data room: it is ours alone. A clone shares its
 * data room with the original (and another holder reads it), and so does
 * a buffer someone else holds a reference to (a segment still in flight
 * on a link, a zero-copy send the user also keeps). */
static inline bool writable(const struct hp_buf *b)
{
    return !b->direct && !(b->flags & HP_BUF_F_INDIRECT) && hp_buf_refcnt(b) == 1;
}

/* Buffers leaving the queue are given back in batches (one pool call per
 * batch): an ACK of a large window frees dozens at once. */
#define BATCH 32u

struct freelist {
    struct hp_buf *b[BATCH];
    unsigned n;
};

static inline void fl_flush(struct freelist *f)
{
    if (f->n == 1) /* a segment read or acknowledged: most flushes */
        hp_buf_free(f->b[0]);
    else if (f->n)
        hp_buf_free_bulk(f->b, f->n);
    f->n = 0;
}

/* Cut b off the chain (hp_buf_free frees a whole chain) and free it. */
static inline void fl_add(struct freelist *f, struct hp_buf *b)
{
    b->next = NULL;
    f->b[f->n++] = b;
    if (f->n == BATCH)
        fl_flush(f);
}

void hp__tcp_bufq_purge(struct hp__tcp_bufq *q)
{
    struct freelist f;
    f.n = 0; /* not an initializer: that would zero all of b[], 256 bytes, per call */
    struct hp_buf *b = q->head;
    while (b) {
        struct hp_buf *next = b->next;
        fl_add(&f, b);
        b = next;
    }
    fl_flush(&f);
    q->start += q->bytes;
    q->head = q->tail = NULL;
    q->bytes = q->nbufs = 0;
}

/* Link one segment (next already NULL, data_len > 0) at the tail. */
static inline void link_tail(struct hp__tcp_bufq *q, struct hp_buf *b)
{
    if (q->tail)
        q->tail->next = b;
    else
        q->head = b;
    q->tail = b;
    q->bytes += b->data_len;
    q->nbufs++;
}

void hp__tcp_bufq_push(struct hp__tcp_bufq *q, struct hp_buf *b)
{
    while (b) {
        struct hp_buf *next = b->next;
        b->next = NULL;
        if (b->data_len == 0)
            hp_buf_free(b);
        else
            link_tail(q, b);
        b = next;
    }
}

void hp__tcp_bufq_push_small(struct hp__tcp_bufq *q, struct hp_buf *b, uint32_t small)
{
    if (!b)
        return;
    uint32_t n = b->data_len;
    struct hp_buf *t = q->tail;
    /* Copying a small segment into the tail's tailroom returns b's buffer
     * to the pool at once: a stream of tiny segments (an interactive
     * session, a peer with a small MSS) then holds one buffer per
     * data room, not one per segment. */
    if (!b->next && n <= small && t && n <= hp_buf_tailroom(t) && writable(t)) {
        if (n) {
            memcpy(hp_buf_data(t) + t->data_len, hp_buf_data(b), n);
            t->data_len += n;
            q->bytes += n;
        }
        hp_buf_free(b);
        return;
    }
    hp__tcp_bufq_push(q, b);
}

uint32_t hp__tcp_bufq_append(struct hp__tcp_bufq *q, struct hp_pool *pool, const void *data,
                             uint32_t len)
{
    const uint8_t *p = data;
    uint32_t done = 0;
    struct hp_buf *t = q->tail;
    if (len && t && writable(t)) {
        uint32_t room = hp_buf_tailroom(t);
        uint32_t n = room < len ? room : len;
        if (n) {
            memcpy(hp_buf_data(t) + t->data_len, p, n);
            t->data_len += n;
            q->bytes += n;
            done = n;
        }
    }
    /* New buffers in batches (one pool call each); when the pool cannot
     * give a whole batch, one at a time for what it has left. */
    uint32_t per = hp_pool_data_room(pool);
    bool bulk = per > 0;
    while (done < len) {
        struct hp_buf *bufs[BATCH];
        unsigned got = 0;
        if (bulk) {
            uint32_t need = (len - done + per - 1) / per;
            unsigned k = need < BATCH ? (unsigned)need : BATCH;
            if (hp_buf_alloc_bulk(pool, bufs, k) == (int)k)
                got = k;
            else
                bulk = false;
        }
        if (!got) {
            if (!(bufs[0] = hp_buf_alloc(pool)))
                break;
            got = 1;
        }
        unsigned i = 0;
        for (; i < got && done < len; i++) {
            struct hp_buf *b = bufs[i];
            /* Queued bytes never get headers put in front of them
             * (segments are fresh buffers the payload is copied into), so
             * the whole data room holds payload. */
            b->data_off = 0;
            uint32_t n = b->room < len - done ? b->room : len - done;
            memcpy(b->base, p + done, n);
            b->data_len = n;
            b->next = NULL;
            link_tail(q, b);
            done += n;
        }
        if (i < got)
            hp_buf_free_bulk(bufs + i, got - i);
    }
    return done;
}

void hp__tcp_bufq_drop(struct hp__tcp_bufq *q, uint32_t n)
{
    if (n > q->bytes)
        n = q->bytes;
    q->start += n;
    q->bytes -= n;
    struct freelist f;
    f.n = 0;
    while (n) {
        struct hp_buf *b = q->head;
        if (n < b->data_len) {
            b->data_off += n;
            b->data_len -= n;
            break;
        }
        n -= b->data_len;
        q->head = b->next;
        q->nbufs--;
        fl_add(&f, b);
    }
    fl_flush(&f);
    if (!q->head)
        q->tail = NULL;
}

uint32_t hp__tcp_bufq_copy(const struct hp__tcp_bufq *q, struct hp__tcp_bufq_cur *cur, uint64_t off,
                           uint32_t len, void *dst)
{
    if (!len)
        return 0;
    uint8_t *d = dst;
    uint32_t sum = 0;
    struct hp_buf *b;
    uint64_t pos;
    /* Start from the cursor when the range is at or past it: copying
     * segment after segment forward (the transmit path) then moves at most
     * one buffer per call. A range before it (a retransmission from
     * snd_una) starts from the head, which is where it is anyway; so does
     * a stale cursor (off before start: its buffer may be gone). */
    if (cur && cur->b && cur->off >= q->start && cur->off <= off) {
        b = cur->b;
        pos = cur->off;
    } else {
        b = q->head;
        pos = q->start;
    }
    while (off >= pos + b->data_len) {
        pos += b->data_len;
        b = b->next;
    }
    uint32_t skip = (uint32_t)(off - pos);
    for (;;) {
        uint32_t n = b->data_len - skip;
        if (n > len)
            n = len;
        /* Copied and summed in one pass over the source (hp_cksum_copy),
         * never read back from dst, whose stores (into a fresh, often cold
         * buffer) drain meanwhile. A piece starting at an odd offset of
         * dst pairs its bytes the other way round: swap its sum (RFC 1071
         * 2(B)). */
        uint32_t ps = hp_cksum_copy(d, hp_buf_data(b) + skip, n, 0);
        if ((d - (uint8_t *)dst) & 1)
            ps = swap_sum(ps);
        sum = hp_cksum_add(sum, ps);
        d += n;
        len -= n;
        if (!len) {
            /* Leave the cursor on the buffer holding the next byte, so the
             * next consecutive copy starts right there. */
            if (skip + n == b->data_len && b->next) {
                pos += b->data_len;
                b = b->next;
            }
            break;
        }
        pos += b->data_len;
        b = b->next;
        skip = 0;
    }
    if (cur) {
        cur->b = b;
        cur->off = pos;
    }
    return sum;
}

void hp__tcp_bufq_read(struct hp__tcp_bufq *q, void *dst, uint32_t len)
{
    uint8_t *d = dst;
    if (len > q->bytes)
        len = q->bytes;
    uint32_t left = len;
    for (struct hp_buf *b = q->head; left; b = b->next) {
        uint32_t n = b->data_len < left ? b->data_len : left;
        memcpy(d, hp_buf_data(b), n);
        d += n;
        left -= n;
    }
    hp__tcp_bufq_drop(q, len);
}

struct hp_buf *hp__tcp_bufq_pop(struct hp__tcp_bufq *q)
{
    struct hp_buf *b = q->head;
    if (!b)
        return NULL;
    q->head = b->next;
    if (!q->head)
        q->tail = NULL;
    q->nbufs--;
    q->bytes -= b->data_len;
    q->start += b->data_len;
    b->next = NULL;
    b->pkt_len = b->data_len;
    b->nb_segs = 1;
    return b;
}

/* ---- the send queue: inline bytes or a byte queue (tcp_internal.h) ---------------- */

static inline struct hp__tcp_bufq sq_q(const struct hp__tcp_sndq *sq)
{
    return (struct hp__tcp_bufq){sq->u.q.head, sq->u.q.tail, sq->bytes, sq->nbufs, sq->start};
}

static inline void sq_set(struct hp__tcp_sndq *sq, const struct hp__tcp_bufq *q)
{
    sq->u.q.head = q->head;
    sq->u.q.tail = q->tail;
    sq->bytes = q->bytes;
    sq->nbufs = q->nbufs;
    sq->start = q->start;
}

void hp__tcp_sndq_init(struct hp__tcp_sndq *sq)
{
    memset(sq, 0, sizeof *sq);
}

void hp__tcp_sndq_purge(struct hp__tcp_sndq *sq)
{
    /* start stays: it counts the bytes acknowledged (hp_tcp_info). The
     * connection sends nothing more, so no cursor is followed again. */
    uint64_t start = sq->start;
    if (sq->nbufs) {
        struct hp__tcp_bufq q = sq_q(sq);
        hp__tcp_bufq_purge(&q);
        sq_set(sq, &q);
    }
    sq->bytes = 0;
    sq->start = start;
}

/* The inline bytes move into a buffer of their own, which starts the
 * byte queue. false (nothing changed) when the pool has none. */
static bool spill(struct hp__tcp_sndq *sq, struct hp_pool *pool)
{
    uint32_t n = sq->bytes;
    struct hp_buf *b = NULL;
    if (n) {
        b = hp_buf_alloc(pool);
        if (!b)
            return false;
        b->data_off = 0;
        memcpy(b->base, sq->u.inl, n);
        b->data_len = n;
        b->next = NULL;
    }
    sq->u.q.head = sq->u.q.tail = b;
    sq->nbufs = n ? 1u : 0u;
    return true;
}

uint32_t hp__tcp_sndq_append(struct hp__tcp_sndq *sq, struct hp_pool *pool, const void *data,
                             uint32_t len)
{
    if (sq->nbufs == 0) {
        if (len <= HP__TCP_SNDQ_INLINE - sq->bytes) {
            memcpy(sq->u.inl + sq->bytes, data, len);
            sq->bytes += len;
            return len;
        }
        if (!spill(sq, pool)) {
            /* No buffer: what still fits inline. */
            uint32_t n = HP__TCP_SNDQ_INLINE - sq->bytes;
            memcpy(sq->u.inl + sq->bytes, data, n);
            sq->bytes += n;
            return n;
        }
    }
    struct hp__tcp_bufq q = sq_q(sq);
    uint32_t took = hp__tcp_bufq_append(&q, pool, data, len);
    sq_set(sq, &q);
    return took;
}

int hp__tcp_sndq_push(struct hp__tcp_sndq *sq, struct hp_pool *pool, struct hp_buf *b)
{
    if (sq->nbufs == 0 && !spill(sq, pool))
        return -ENOBUFS;
    struct hp__tcp_bufq q = sq_q(sq);
    hp__tcp_bufq_push(&q, b);
    sq_set(sq, &q);
    return 0;
}

void hp__tcp_sndq_drop(struct hp__tcp_sndq *sq, uint32_t n)
{
    if (sq->nbufs) {
        struct hp__tcp_bufq q = sq_q(sq);
        hp__tcp_bufq_drop(&q, n);
        sq_set(sq, &q);
        return;
    }
    if (n > sq->bytes)
        n = sq->bytes;
    sq->bytes -= n;
    sq->start += n;
    if (sq->bytes)
        memmove(sq->u.inl, sq->u.inl + n, sq->bytes);
}

uint32_t hp__tcp_sndq_copy(const struct hp__tcp_sndq *sq, struct hp__tcp_bufq_cur *cur,
                           uint64_t off, uint32_t len, void *dst)
{
    if (sq->nbufs == 0) {
        return hp_cksum_copy(dst, sq->u.inl + (off - sq->start), len, 0);
    }
    struct hp__tcp_bufq q = sq_q(sq);
    return hp__tcp_bufq_copy(&q, cur, off, len, dst);
}

/* ---- the receive queue: a byte queue without its stream offset -------------------- */

static inline struct hp__tcp_bufq rq_q(const struct hp__tcp_rcvq *rq)
{
    return (struct hp__tcp_bufq){.head = rq->head,
                                 .tail = rq->tail,
                                 .bytes = rq->bytes,
                                 .nbufs = rq->nbufs};
}

static inline void rq_set(struct hp__tcp_rcvq *rq, const struct hp__tcp_bufq *q)
{
    rq->head = q->head;
    rq->tail = q->tail;
    rq->bytes = q->bytes;
    rq->nbufs = q->nbufs;
}

void hp__tcp_rcvq_push_small(struct hp__tcp_rcvq *rq, struct hp_buf *b, uint32_t small)
{
    struct hp__tcp_bufq q = rq_q(rq);
    hp__tcp_bufq_push_small(&q, b, small);
    rq_set(rq, &q);
}

uint32_t hp__tcp_rcvq_append(struct hp__tcp_rcvq *rq, struct hp_pool *pool, const void *data,
                             uint32_t len)
{
    struct hp__tcp_bufq q = rq_q(rq);
    uint32_t n = hp__tcp_bufq_append(&q, pool, data, len);
    rq_set(rq, &q);
    return n;
}

void hp__tcp_rcvq_read(struct hp__tcp_rcvq *rq, void *dst, uint32_t len)
{
    struct hp_buf *h = rq->head;
    /* A read that takes the first buffer whole (a request read at once):
     * copied, unlinked and freed, without the general walk. */
    if (h && len == h->data_len && len <= rq->bytes) {
        memcpy(dst, hp_buf_data(h), len);
        rq->head = h->next;
        if (!rq->head)
            rq->tail = NULL;
        rq->bytes -= len;
        rq->nbufs--;
        h->next = NULL;
        hp_buf_free(h);
        return;
    }
    struct hp__tcp_bufq q = rq_q(rq);
    hp__tcp_bufq_read(&q, dst, len);
    rq_set(rq, &q);
}

struct hp_buf *hp__tcp_rcvq_pop(struct hp__tcp_rcvq *rq)
{
    struct hp__tcp_bufq q = rq_q(rq);
    struct hp_buf *b = hp__tcp_bufq_pop(&q);
    rq_set(rq, &q);
    return b;
}

void hp__tcp_rcvq_purge(struct hp__tcp_rcvq *rq)
{
    struct hp__tcp_bufq q = rq_q(rq);
    hp__tcp_bufq_purge(&q);
    rq_set(rq, &q);
}
