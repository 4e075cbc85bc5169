/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link's transmit: frames copied into shared buffers (ours or the client's), or handed over by descriptor in zero-copy. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../base/debug.h"
#include "../base/fence.h"
#include "memif_internal.h"

/*
 * Client, copy mode: each slot of a C2S ring has its own buffer in region
 * 0; a frame longer than one is spread over several slots (NEXT).
 * Server: the client offers buffers on the S2C ring; each is read once,
 * checked against the regions, and only then written.
 * Client, zero-copy: a frame whose segments all lie in the pool (region 1)
 * is described where it is and held until the server's tail passes it; a
 * frame from elsewhere is copied into the pool first (tx_copied).
 * Every ring's consumer index is read once per burst and must stay within
 * what we produced, or the link goes down (ring_errors).
 */

#define TX_BATCH            64
#define MAX_DESCS_PER_FRAME 128

/* Per burst: the slots each transmit ring has free, read once. */
struct tx_burst {
    bool open[HP__MEMIF_MAX_QUEUES];
    uint32_t free[HP__MEMIF_MAX_QUEUES];
    struct hp_buf *done[TX_BATCH];
    unsigned nd;
    uint64_t packets, bytes;
};

static void done_add(struct memif_link *m, struct tx_burst *t, struct hp_buf *b)
{
    t->done[t->nd++] = b;
    if (t->nd == TX_BATCH) {
        hp__link_complete(&m->l, t->done, t->nd);
        t->nd = 0;
    }
}

/* Zero-copy: the buffers the server gave back (tail moved past them). */
static void reclaim(struct memif_link *m, struct memif_queue *q, uint16_t tail, struct tx_burst *t)
{
    unsigned room = hp__link_tx_room(&m->l);
    while (q->reclaim != tail && room) {
        uint32_t s = q->reclaim & q->mask;
        if (q->slot[s]) {
            done_add(m, t, q->slot[s]);
            q->slot[s] = NULL;
            room--;
        }
        q->reclaim++;
    }
}

/* Read the consumer's index once: the free slots, or false when it jumped. */
static bool tx_open(struct memif_link *m, unsigned i, struct tx_burst *t)
{
    struct memif_queue *q = &m->tx[i];
    t->open[i] = true;
    if (m->server) {
        uint16_t head = ld_acq(&q->ring->head);
        int avail = hp__memif_ring_count(q->prod, head, q->size);
        if (avail < 0) {
            hp__memif_ring_error(m, "the transmit ring's offered head", q->prod, head);
            return false;
        }
        t->free[i] = (uint32_t)avail;
        return true;
    }
    uint16_t tail = ld_acq(&q->ring->tail);
    /* The server's tail only moves forward, over what we produced. */
    if ((uint16_t)(tail - q->reclaim) > (uint16_t)(q->prod - q->reclaim)) {
        hp__memif_ring_error(m, "the transmit ring's tail", q->reclaim, tail);
        return false;
    }
    if (m->zc)
        reclaim(m, q, tail, t);
    else
        q->reclaim = tail;
    t->free[i] = q->size - (uint16_t)(q->prod - q->reclaim);
    return true;
}

/* Publish what a ring got in this burst and wake the peer if it asked. */
static void tx_publish(struct memif_link *m, struct memif_queue *q)
{
    st_rel(m->server ? &q->ring->tail : &q->ring->head, q->prod);
    /* Store then load: the full barrier pairs with the receiver's, which
     * clears MASK_INT then looks at the ring (see rx_idle). */
    hp__fence_seq_cst();
    if (!(__atomic_load_n(&q->ring->flags, __ATOMIC_RELAXED) & HP__MEMIF_RING_MASK_INT) &&
        q->irq_fd >= 0) {
        uint64_t one = 1;
        if (write(q->irq_fd, &one, sizeof one) == (ssize_t)sizeof one)
            m->ms.irq_sent++;
    }
}

enum { PUT_OK, PUT_FULL, PUT_DROP, PUT_DOWN };

/* Large frames: ask for the next slot's lines for writing now, as many as
 * this frame had, so that taking them from the receiver's cache (its core
 * read them last) overlaps the work before the next copy instead of
 * stalling it (one TCP flow over memif, MTU 1500: +25-30% either way,
 * docs/memif.md). A prefetch reads nothing architecturally. */
#define PREFETCH_ABOVE 256u
static inline void prefetch_slot(unsigned char *p, uint32_t len)
{
    for (uint32_t o = 0; o < len; o += 64) {
#if defined(__x86_64__)
        /* PREFETCHW (a no-op on the few x86-64 CPUs without it), which
         * -march=x86-64-v2 does not let the compiler emit. */
        __asm__ volatile("prefetchw %0" : : "m"(*(const unsigned char *)(p + o)));
#else
        __builtin_prefetch(p + o, 1, 3);
#endif
    }
}

/* Client, copy mode: the frame into the slots' own buffers in region 0. */
static int put_client_copy(struct memif_link *m, struct memif_queue *q, uint32_t *free,
                           struct hp_buf *b)
{
    uint32_t len = b->pkt_len, bs = m->bsize, need = len <= bs ? 1 : (len + bs - 1) / bs;
    if (need > *free)
        return PUT_FULL;
    unsigned char *base = m->reg[0].base;
    if (need == 1 && !b->next) {
        /* The common case: one segment into one buffer. */
        uint32_t s = q->prod & q->mask, off = q->buf0 + s * bs;
        memcpy(base + off, hp_buf_data(b), len);
        desc_write(&q->desc[s], 0, 0, len, off);
        q->prod++;
        (*free)--;
        /* The next slot, when it is ours (free): not one the receiver
         * has yet to read. */
        if (len > PREFETCH_ABOVE && *free)
            prefetch_slot(base + q->buf0 + (q->prod & q->mask) * bs, len);
        return PUT_OK;
    }
    for (uint32_t k = 0; k < need; k++) {
        uint32_t s = (uint16_t)(q->prod + k) & q->mask, off = q->buf0 + s * bs;
        uint32_t n = len - k * bs < bs ? len - k * bs : bs;
        if (!b->next && k == 0)
            memcpy(base + off, hp_buf_data(b), n);
        else
            (void)hp_buf_copy_out(b, k * bs, n, base + off);
        desc_write(&q->desc[s], k + 1 < need ? HP__MEMIF_DESC_NEXT : 0, 0, n, off);
    }
    q->prod = (uint16_t)(q->prod + need);
    *free -= need;
    return PUT_OK;
}

/* Server: the frame into the buffers the client offered (read once, each
 * checked before the first byte is written). */
static int put_server(struct memif_link *m, struct memif_queue *q, uint32_t *free, struct hp_buf *b)
{
    unsigned char *dst[MAX_DESCS_PER_FRAME];
    uint32_t cap[MAX_DESCS_PER_FRAME], have = 0, len = b->pkt_len;
    unsigned k = 0;
    while (have < len) {
        if (k == *free)
            return PUT_FULL;
        if (k == MAX_DESCS_PER_FRAME)
            return PUT_DROP;
        struct hp__memif_desc d = desc_read(&q->desc[(uint16_t)(q->prod + k) & q->mask]);
        dst[k] = hp__memif_desc_ptr(m->reg, m->n_reg, d.region, d.offset, d.length);
        if (!dst[k]) {
            hp__memif_bad(m, &m->ms.bad_descs,
                          "offered buffer outside the shared memory (region %u offset %u "
                          "length %u)",
                          d.region, d.offset, d.length);
            hp__memif_down(m, "bad descriptor", true);
            return PUT_DOWN;
        }
        cap[k] = d.length;
        have += d.length < len - have ? d.length : len - have;
        k++;
    }
    uint32_t off = 0;
    for (unsigned j = 0; j < k; j++) {
        uint32_t n = cap[j] < len - off ? cap[j] : len - off;
        if (!b->next)
            memcpy(dst[j], (unsigned char *)hp_buf_data(b) + off, n);
        else
            (void)hp_buf_copy_out(b, off, n, dst[j]);
        off += n;
        struct hp__memif_desc *d = &q->desc[(uint16_t)(q->prod + j) & q->mask];
        d->length = n;
        d->flags = j + 1 < k ? HP__MEMIF_DESC_NEXT : 0;
    }
    q->prod = (uint16_t)(q->prod + k);
    *free -= k;
    if (len > PREFETCH_ABOVE && *free) {
        /* The next offered buffer, if it is inside the regions. */
        struct hp__memif_desc d = desc_read(&q->desc[q->prod & q->mask]);
        unsigned char *p = hp__memif_desc_ptr(m->reg, m->n_reg, d.region, d.offset, d.length);
        if (p)
            prefetch_slot(p, len < d.length ? len : d.length);
    }
    return PUT_OK;
}

/* Zero-copy: the segments of b when every one's bytes lie in the pool's
 * region (and there are at most MAX_DESCS_PER_FRAME), else 0. */
static unsigned zc_segments(const struct memif_link *m, const struct hp_buf *b)
{
    const unsigned char *lo = m->pool_mem, *hi = lo + m->pool_len;
    unsigned n = 0;
    for (const struct hp_buf *s = b; s; s = s->next) {
        const unsigned char *p = s->base + s->data_off;
        if (++n > MAX_DESCS_PER_FRAME || p < lo || p >= hi || s->data_len > (size_t)(hi - p))
            return 0;
    }
    return n;
}

/* Zero-copy: a copy of b in the pool (one chain), or NULL. */
static struct hp_buf *zc_copy(struct memif_link *m, struct hp_buf *b)
{
    struct hp_buf *head = NULL;
    uint32_t off = 0, len = b->pkt_len;
    do {
        struct hp_buf *s = hp_buf_alloc(m->l.pool);
        if (!s)
            break;
        uint32_t n = hp_buf_tailroom(s) < len - off ? hp_buf_tailroom(s) : len - off;
        (void)hp_buf_copy_out(b, off, n, hp_buf_append(s, n));
        off += n;
        if (!head)
            head = s;
        else if (hp_buf_chain(head, s) < 0)
            hp_buf_free(s), off = len + 1;
    } while (off < len);
    if (off != len) {
        hp_buf_free(head);
        return NULL;
    }
    return head;
}

static int put_client_zc(struct memif_link *m, struct memif_queue *q, uint32_t *free,
                         struct hp_buf **bp, struct tx_burst *t)
{
    struct hp_buf *b = *bp;
    unsigned nseg = zc_segments(m, b);
    if (nseg == 0) {
        uint32_t cap = hp_pool_data_room(m->l.pool) - HP_BUF_HEADROOM;
        if ((b->pkt_len + cap - 1) / cap > *free)
            return PUT_FULL;
        struct hp_buf *c = zc_copy(m, b);
        if (!c)
            return PUT_FULL;
        m->ms.tx_copied++;
        done_add(m, t, b);
        *bp = b = c;
        nseg = zc_segments(m, b);
    }
    if (nseg > *free)
        return PUT_FULL;
    const unsigned char *base = m->pool_mem;
    for (struct hp_buf *s = b; s; s = s->next) {
        uint32_t slot = q->prod & q->mask;
        const unsigned char *p = hp_buf_data(s);
        desc_write(&q->desc[slot], s->next ? HP__MEMIF_DESC_NEXT : 0, 1, s->data_len,
                   (uint32_t)(p - base));
        /* The slot of the last segment holds the frame until it is back. */
        q->slot[slot] = s->next ? NULL : b;
        q->prod++;
    }
    *free -= nseg;
    return PUT_OK;
}

static bool frame_ok(const struct memif_link *m, const struct hp_buf *b)
{
    if (!b || b->pkt_len < HP__ETH_HDR || b->pkt_len > m->max_frame)
        return false;
    /* One segment, the common case: its bytes inside its room. */
    if (!b->next)
        return b->data_len == b->pkt_len && (uint64_t)b->data_off + b->data_len <= b->room;
    struct iovec iov;
    return hp__frame_iov(b, &iov, 0) != 0;
}

/* One frame into the ring its hash picks. */
static int tx_one(struct memif_link *m, struct hp_buf **bp, struct tx_burst *t)
{
    struct hp_buf *b = *bp;
    unsigned i = m->n_tx == 1 ? 0 : b->hash % m->n_tx;
    if (!t->open[i] && !tx_open(m, i, t))
        return PUT_DOWN;
    struct memif_queue *q = &m->tx[i];
    if (m->server)
        return put_server(m, q, &t->free[i], b);
    if (m->zc)
        return put_client_zc(m, q, &t->free[i], bp, t);
    return put_client_copy(m, q, &t->free[i], b);
}

static int drop_down(struct memif_link *m, struct hp_buf **bufs, unsigned n)
{
    m->l.st.tx_dropped += n;
    m->ms.tx_down += n;
    hp_buf_free_bulk(bufs, n);
    return (int)n;
}

void hp__memif_zc_collect(struct memif_link *m)
{
    struct tx_burst t;
    memset(t.open, 0, sizeof t.open);
    t.nd = 0;
    for (unsigned i = 0; i < m->n_tx && m->up; i++)
        tx_open(m, i, &t);
    if (t.nd)
        hp__link_complete(&m->l, t.done, t.nd);
}

int hp__memif_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct memif_link *m = (struct memif_link *)l;
    hp__memif_pace(m);
    if (!m->up)
        return drop_down(m, bufs, n);
    if (n == 0) {
        if (m->zc)
            hp__memif_zc_collect(m);
        return 0;
    }
    struct tx_burst t;
    memset(t.open, 0, sizeof t.open);
    t.nd = 0;
    t.packets = t.bytes = 0;
    unsigned room = m->zc ? n : hp__link_tx_room(l), want = n < room ? n : room, i;
    for (i = 0; i < want; i++) {
        if (!frame_ok(m, bufs[i])) {
            l->st.tx_dropped++;
            hp_buf_free(bufs[i]);
            continue;
        }
        uint32_t len = bufs[i]->pkt_len;
        int r = tx_one(m, &bufs[i], &t);
        if (r == PUT_FULL)
            break;
        if (r == PUT_DOWN) {
            i += (unsigned)drop_down(m, bufs + i, n - i);
            break;
        }
        if (r == PUT_DROP) {
            l->st.tx_dropped++;
            hp_buf_free(bufs[i]);
            continue;
        }
        t.packets++;
        t.bytes += len;
        if (!m->zc)
            done_add(m, &t, bufs[i]);
    }
    for (unsigned q = 0; q < m->n_tx && m->up; q++)
        if (t.open[q])
            tx_publish(m, &m->tx[q]);
    if (t.nd)
        hp__link_complete(l, t.done, t.nd);
    if (i < n && m->up)
        l->st.tx_full++;
    l->st.tx_packets += t.packets;
    l->st.tx_bytes += t.bytes;
    return (int)i;
}
