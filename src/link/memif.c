/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link's data path: frames through shared-memory rings, copied or zero-copy, with every index and descriptor checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../base/debug.h"
#include "../base/fence.h"
#include "memif_internal.h"

/*
 * Roles and copies (docs/memif.md):
 *  - server: the regions are the client's. Receive copies each frame out
 *    of the client's buffers into the link's pool; transmit copies into
 *    the buffers the client offered on the S2C ring.
 *  - client, copy mode (the default): region 0 holds the rings and one
 *    buffer per slot, as DPDK lays it out; frames are copied in and out.
 *  - client, zero-copy (HP_LINK_F_ZEROCOPY): region 1 is the link's pool.
 *    Transmit hands the pool's buffers to the server by descriptor and
 *    gets them back when the server moves tail; receive offers empty pool
 *    buffers on the S2C ring and hands them up filled. Frames from other
 *    pools are copied into the pool first.
 *
 * The peer is not trusted: its ring index is read once and must stay
 * within what the ring holds and what we produced or offered (else the
 * link goes down: ring_errors), every descriptor it wrote is read once
 * into a local copy and turned into a pointer only by hp__memif_desc_ptr()
 * (else the frame is dropped: bad_descs), and nothing it writes is read
 * twice.
 */

void hp__memif_bad(struct memif_link *m, uint64_t *counter, const char *fmt, ...)
{
    (*counter)++;
    unsigned k = m->bad_logged++;
    /* The first few, then at powers of two: a flood stays a few lines. */
    if (k >= 4 && (k & (k - 1)) != 0)
        return;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hp__log(HP_LOG_WARN, "memif", "%s: refused from %s: %s (%llu so far)", m->what,
            m->hs.peer_name[0] ? m->hs.peer_name : "the peer", msg, (unsigned long long)*counter);
}

void hp__memif_ring_error(struct memif_link *m, const char *what, uint16_t was, uint16_t now)
{
    m->ms.ring_errors++;
    hp__log(HP_LOG_WARN, "memif", "%s: %s jumped from %u to %u: taking the link down", m->what,
            what, was, now);
    hp__memif_down(m, "ring index out of range", true);
}

/* ---- up and down -------------------------------------------------------- */

static void queue_at(struct memif_link *m, struct memif_queue *q,
                     const struct hp__memif_ring_def *d)
{
    q->ring = (struct hp__memif_ring *)(m->reg[d->region].base + d->offset);
    q->desc = (struct hp__memif_desc *)(q->ring + 1);
    q->size = 1u << d->log2;
    q->mask = q->size - 1;
    q->prod = q->cons = q->offered = q->reclaim = 0;
}

static void refill(struct memif_link *m, struct memif_queue *q);

/* Zero-copy: the buffer behind each slot, for every ring. */
static int alloc_slots(struct memif_link *m)
{
    for (unsigned i = 0; i < m->n_rx + m->n_tx; i++) {
        struct memif_queue *q = i < m->n_rx ? &m->rx[i] : &m->tx[i - m->n_rx];
        if (!(q->slot = calloc(q->size, sizeof *q->slot))) {
            for (unsigned k = 0; k < HP__MEMIF_MAX_QUEUES; k++) {
                free(m->rx[k].slot);
                free(m->tx[k].slot);
                m->rx[k].slot = m->tx[k].slot = NULL;
            }
            return -ENOMEM;
        }
    }
    return 0;
}

int hp__memif_start(struct memif_link *m)
{
    const struct hp__memif_hs *hs = &m->hs;
    m->n_rx = m->server ? hs->n_c2s : hs->n_s2c;
    m->n_tx = m->server ? hs->n_s2c : hs->n_c2s;
    for (unsigned i = 0; i < m->n_rx; i++) {
        queue_at(m, &m->rx[i], m->server ? &hs->c2s[i] : &hs->s2c[i]);
        m->rx[i].masked = m->rx_mode != HP_MEMIF_RX_INTERRUPT;
    }
    for (unsigned i = 0; i < m->n_tx; i++)
        queue_at(m, &m->tx[i], m->server ? &hs->s2c[i] : &hs->c2s[i]);
    if (m->zc && alloc_slots(m) < 0)
        return -ENOMEM;
    /* Fresh indices on both sides, as DPDK's server does on CONNECT; the
     * receiver of each ring says whether it wants interrupts. */
    for (unsigned i = 0; i < m->n_tx && m->server; i++) {
        st_rel(&m->tx[i].ring->head, 0);
        st_rel(&m->tx[i].ring->tail, 0);
    }
    for (unsigned i = 0; i < m->n_rx; i++) {
        if (m->server) {
            st_rel(&m->rx[i].ring->head, 0);
            st_rel(&m->rx[i].ring->tail, 0);
        }
        __atomic_store_n(&m->rx[i].ring->flags, m->rx[i].masked ? HP__MEMIF_RING_MASK_INT : 0,
                         __ATOMIC_RELEASE);
    }
    hp__memif_watch_irqs(m, true);
    m->up = true;
    m->bad_logged = 0;
    m->ms.connects++;
    m->ms.queues = m->n_rx < m->n_tx ? m->n_rx : m->n_tx;
    m->ms.ring_size = m->n_rx ? m->rx[0].size : 0;
    if (!m->server)
        for (unsigned i = 0; i < m->n_rx; i++)
            refill(m, &m->rx[i]);
    hp__log(HP_LOG_INFO, "memif", "%s: up with %s (%s), %u+%u rings of %u", m->what,
            m->hs.peer_name, m->hs.peer_if, m->n_tx, m->n_rx, m->ms.ring_size);
    return 0;
}

/* Frames the client put in a C2S ring that the server has not taken. */
static uint64_t unread_frames(const struct memif_queue *q)
{
    uint16_t tail = ld_acq(&q->ring->tail);
    int n = hp__memif_ring_count(tail, q->prod, q->size);
    if (n < 0)
        n = hp__memif_ring_count(q->reclaim, q->prod, q->size);
    uint64_t frames = 0;
    for (int k = 0; k < n; k++)
        if (!(desc_read(&q->desc[(uint16_t)(q->prod - 1 - k) & q->mask]).flags &
              HP__MEMIF_DESC_NEXT))
            frames++;
    return frames;
}

static void drop_slots(struct memif_link *m, struct memif_queue *q, bool tx)
{
    if (!q->slot)
        return;
    for (uint32_t s = 0; s < q->size; s++) {
        struct hp_buf *b = q->slot[s];
        q->slot[s] = NULL;
        if (b && tx)
            hp__link_complete(&m->l, &b, 1);
        else if (b)
            hp_buf_free(b);
    }
    free(q->slot);
    q->slot = NULL;
}

void hp__memif_stop(struct memif_link *m)
{
    hp__memif_watch_irqs(m, false);
    for (unsigned i = 0; i < m->n_tx; i++) {
        if (!m->server)
            m->ms.tx_unread += unread_frames(&m->tx[i]);
        drop_slots(m, &m->tx[i], true);
        m->tx[i].ring = NULL;
    }
    for (unsigned i = 0; i < m->n_rx; i++) {
        drop_slots(m, &m->rx[i], false);
        m->rx[i].ring = NULL;
    }
    m->up = false;
    m->armed = false;
    m->n_rx = m->n_tx = 0;
    m->ms.queues = 0;
    m->ms.ring_size = 0;
}

/* ---- receive ----------------------------------------------------------- */

enum { FR_OK, FR_WAIT, FR_BAD, FR_LONG };

/* Copy the frame that starts at slot cons (avail slots filled) into b;
 * *used: the descriptors it spans. FR_WAIT: its chain goes on beyond what
 * the peer has published (nothing taken). */
static int gather(struct memif_link *m, const struct memif_queue *q, uint16_t cons, unsigned avail,
                  struct hp_buf *b, unsigned *used, struct hp__memif_desc *bad)
{
    unsigned char *dst = hp_buf_data(b);
    uint32_t room = hp_buf_tailroom(b), len = 0;
    int st = FR_OK;
    unsigned u = 0;
    for (;;) {
        if (u == avail) {
            *used = u;
            /* A chain as long as the ring can never end: refused. */
            return avail < q->size ? FR_WAIT : FR_BAD;
        }
        struct hp__memif_desc d = desc_read(&q->desc[(uint16_t)(cons + u) & q->mask]);
        u++;
        if (st == FR_OK) {
            const void *src = hp__memif_desc_ptr(m->reg, m->n_reg, d.region, d.offset, d.length);
            if (!src) {
                st = FR_BAD;
                *bad = d;
            } else if (d.length > room - len) {
                st = FR_LONG;
            } else {
                memcpy(dst + len, src, d.length);
                len += d.length;
            }
        }
        if (!(d.flags & HP__MEMIF_DESC_NEXT))
            break;
    }
    *used = u;
    b->data_len = b->pkt_len = len;
    return st;
}

/* How many slots the peer filled for us, or -1 when its index jumped. */
static int rx_avail(struct memif_link *m, struct memif_queue *q, uint16_t *prod)
{
    *prod = ld_acq(m->server ? &q->ring->head : &q->ring->tail);
    uint16_t d = (uint16_t)(*prod - q->cons);
    /* A client only ever gets back what it offered. */
    uint16_t limit = m->server ? (uint16_t)q->size : (uint16_t)(q->offered - q->cons);
    return d <= limit ? (int)d : -1;
}

static void refused_frame(struct memif_link *m, int st, const struct hp__memif_desc *bad)
{
    m->l.st.rx_errors++;
    if (st == FR_BAD)
        hp__memif_bad(m, &m->ms.bad_descs,
                      "descriptor outside the shared memory (region %u offset %u length %u)",
                      bad->region, bad->offset, bad->length);
}

/* Receive by copy (server; client in copy mode) into buffers allocated in
 * one go in bufs[0 .. k-1]; those a frame did not take are freed. */
static unsigned rx_copy(struct memif_link *m, struct memif_queue *q, struct hp_buf **bufs,
                        unsigned n)
{
    uint16_t prod;
    int avail = rx_avail(m, q, &prod);
    if (avail < 0) {
        hp__memif_ring_error(m, "the receive ring's producer index", q->cons, prod);
        return 0;
    }
    unsigned k = (unsigned)avail < n ? (unsigned)avail : n;
    if (k == 0)
        return 0;
    if (hp_buf_alloc_bulk(m->l.pool, bufs, k) < 0) {
        unsigned a = 0;
        while (a < k && (bufs[a] = hp_buf_alloc(m->l.pool)) != NULL)
            a++;
        m->ms.rx_nobuf++;
        k = a;
    }
    unsigned got = 0;
    uint64_t bytes = 0;
    uint16_t cons = q->cons;
    while (avail > 0 && got < k) {
        struct hp_buf *b = bufs[got];
        unsigned used;
        struct hp__memif_desc bad;
        b->data_len = b->pkt_len = 0;
        int st = gather(m, q, cons, (unsigned)avail, b, &used, &bad);
        if (st == FR_WAIT)
            break;
        cons = (uint16_t)(cons + used);
        avail -= (int)used;
        if (st == FR_OK && b->pkt_len >= HP__ETH_HDR && b->pkt_len <= m->max_frame) {
            bytes += b->pkt_len;
            got++;
        } else {
            refused_frame(m, st == FR_OK ? FR_LONG : st, &bad);
        }
    }
    if (got < k)
        hp_buf_free_bulk(bufs + got, k - got);
    q->cons = cons;
    if (m->server)
        st_rel(&q->ring->tail, cons);
    m->l.st.rx_packets += got;
    m->l.st.rx_bytes += bytes;
    return got;
}

/* Zero-copy receive: one descriptor's bytes into the pool buffer that sits
 * behind its slot (where they already are, unless the server moved them). */
static int zc_fill(struct memif_link *m, struct hp_buf *b, const struct hp__memif_desc *d)
{
    unsigned char *data = hp_buf_data(b);
    bool moved = d->region != 1 || d->offset != (uint32_t)(data - (unsigned char *)m->pool_mem);
    const void *src = hp__memif_desc_ptr(m->reg, m->n_reg, d->region, d->offset, d->length);
    if (!src)
        return FR_BAD;
    if (d->length > hp_buf_tailroom(b))
        return FR_LONG;
    if (moved)
        memmove(data, src, d->length);
    b->data_len = b->pkt_len = d->length;
    return FR_OK;
}

/* Zero-copy receive of one frame at q->cons: 1 (in *out, or refused and
 * freed: *out NULL), 0 (its chain is not complete yet). */
static int zc_frame(struct memif_link *m, struct memif_queue *q, unsigned avail,
                    struct hp_buf **out)
{
    unsigned u = 0;
    int st = FR_OK;
    struct hp__memif_desc d = {0}, bad = {0};
    do {
        if (u == avail && avail < q->size)
            return 0;
        if (u == avail) {
            st = FR_BAD;
            break;
        }
        d = desc_read(&q->desc[(uint16_t)(q->cons + u) & q->mask]);
        struct hp_buf *b = q->slot[(uint16_t)(q->cons + u) & q->mask];
        u++;
        if (st == FR_OK && (st = zc_fill(m, b, &d)) != FR_OK)
            bad = d;
    } while (d.flags & HP__MEMIF_DESC_NEXT);
    struct hp_buf *head = NULL;
    for (unsigned k = 0; k < u; k++) {
        uint32_t s = (uint16_t)(q->cons + k) & q->mask;
        struct hp_buf *b = q->slot[s];
        q->slot[s] = NULL;
        if (!head) {
            head = b;
        } else if (hp_buf_chain(head, b) < 0) {
            st = FR_LONG;
            hp_buf_free(b);
        }
    }
    q->cons = (uint16_t)(q->cons + u);
    if (st == FR_OK && head->pkt_len >= HP__ETH_HDR && head->pkt_len <= m->max_frame) {
        *out = head;
        return 1;
    }
    refused_frame(m, st == FR_OK ? FR_LONG : st, &bad);
    hp_buf_free(head);
    *out = NULL;
    return 1;
}

static unsigned rx_zc(struct memif_link *m, struct memif_queue *q, struct hp_buf **bufs, unsigned n)
{
    uint16_t prod;
    int avail = rx_avail(m, q, &prod);
    if (avail < 0) {
        hp__memif_ring_error(m, "the receive ring's tail", q->cons, prod);
        return 0;
    }
    unsigned got = 0;
    uint64_t bytes = 0;
    while (avail > 0 && got < n) {
        uint16_t before = q->cons;
        struct hp_buf *b;
        if (zc_frame(m, q, (unsigned)avail, &b) == 0)
            break;
        avail -= (uint16_t)(q->cons - before);
        if (b) {
            bufs[got++] = b;
            bytes += b->pkt_len;
        }
    }
    m->l.st.rx_packets += got;
    m->l.st.rx_bytes += bytes;
    return got;
}

/* Client: offer empty buffers on an S2C ring, in batches (each move of
 * head is a cache line the server reads). */
static void refill(struct memif_link *m, struct memif_queue *q)
{
    uint32_t space = q->size - (uint16_t)(q->offered - q->cons);
    uint32_t batch = q->size >= 64 ? 32 : (q->size / 2 ? q->size / 2 : 1);
    if (space < batch)
        return;
    uint16_t h = q->offered;
    if (!m->zc) {
        for (uint32_t k = 0; k < space; k++, h++) {
            uint32_t s = h & q->mask;
            desc_write(&q->desc[s], 0, 0, m->bsize, q->buf0 + s * m->bsize);
        }
    } else {
        struct hp_buf *b[64];
        while (space) {
            unsigned want = space < 64 ? space : 64, got = want;
            if (hp_buf_alloc_bulk(m->l.pool, b, want) < 0) {
                got = 0;
                while (got < want && (b[got] = hp_buf_alloc(m->l.pool)) != NULL)
                    got++;
            }
            for (unsigned k = 0; k < got; k++, h++) {
                uint32_t s = h & q->mask;
                q->slot[s] = b[k];
                uint32_t off =
                    (uint32_t)((unsigned char *)hp_buf_data(b[k]) - (unsigned char *)m->pool_mem);
                desc_write(&q->desc[s], 0, 1, hp_buf_tailroom(b[k]), off);
            }
            space -= got;
            if (got < want) {
                m->ms.rx_nobuf++;
                break;
            }
        }
    }
    q->offered = h;
    st_rel(&q->ring->head, h);
}

static unsigned rx_all(struct memif_link *m, struct hp_buf **bufs, unsigned n)
{
    unsigned got = 0, nr = m->n_rx;
    for (unsigned k = 0; k < nr && got < n && m->up; k++) {
        struct memif_queue *q = &m->rx[(m->rx_next + k) % nr];
        got += m->zc ? rx_zc(m, q, bufs + got, n - got) : rx_copy(m, q, bufs + got, n - got);
        if (!m->server && m->up)
            refill(m, q);
    }
    m->rx_next++;
    return got;
}

static void set_masks(struct memif_link *m, bool mask)
{
    for (unsigned i = 0; i < m->n_rx; i++) {
        struct memif_queue *q = &m->rx[i];
        if (q->masked == mask)
            continue;
        q->masked = mask;
        __atomic_store_n(&q->ring->flags, mask ? HP__MEMIF_RING_MASK_INT : 0, __ATOMIC_RELAXED);
        if (!mask)
            m->ms.irq_armed++;
    }
}

/* Whether a receive ring has frames waiting (or an index that jumped, which
 * the next receive reports). */
static bool frames_waiting(struct memif_link *m)
{
    for (unsigned i = 0; i < m->n_rx; i++) {
        uint16_t prod;
        if (rx_avail(m, &m->rx[i], &prod) != 0)
            return true;
    }
    return false;
}

int hp__memif_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    struct memif_link *m = (struct memif_link *)l;
    (void)due_ns; /* the timer in the epoll set covers retries and deadlines */
    if (m->rx_mode == HP_MEMIF_RX_POLL)
        return -EOPNOTSUPP;
    /* Drain: control messages, the timer, the rings' eventfds. The next
     * receive looks at them again at once (armed): the sleeper woke for
     * something, maybe a control event. */
    hp__memif_service(m);
    m->armed = true;
    if (!m->up)
        return 0; /* a peer arriving (or its messages) makes the fd readable */
    set_masks(m, false);
    hp__fence_seq_cst();
    return frames_waiting(m) ? 1 : 0;
}

static int memif_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct memif_link *m = (struct memif_link *)l;
    hp__memif_pace(m);
    if (!m->up)
        return 0;
    unsigned got = rx_all(m, bufs, n);
    /* Frames came: a sleeper that asked for interrupts is awake again; in
     * AUTO mode the peer stops signalling until the next sleep
     * (hp__memif_prepare_sleep) asks again. */
    if (got && m->rx_mode == HP_MEMIF_RX_AUTO)
        set_masks(m, true);
    return (int)got;
}

/* ---- the link ------------------------------------------------------------ */

static int memif_set_mtu(struct hp_link *l, uint32_t mtu)
{
    ((struct memif_link *)l)->max_frame = mtu + HP__ETH_HDR + HP__VLAN_HDR;
    return 0;
}

static bool memif_is_up(const struct hp_link *l)
{
    return ((const struct memif_link *)l)->up;
}

static int memif_close(struct hp_link *l)
{
    struct memif_link *m = (struct memif_link *)l;
    hp__memif_ctl_close(m);
    int rc = 0;
    if (m->zc) {
        /* Our pool over shared memory: its completions first, then it. */
        hp__spsc_destroy(l->compq);
        l->compq = NULL;
        if (l->pool)
            rc = hp_pool_destroy(l->pool);
        if (rc == 0 && m->pool_mem)
            munmap(m->pool_mem, m->pool_len);
        l->pool = NULL;
    }
    if (m->pool_fd >= 0)
        close(m->pool_fd);
    return rc;
}

static const struct hp__link_ops memif_ops = {
    .kind = "memif",
    .rx = memif_rx,
    .tx = hp__memif_tx,
    .set_mtu = memif_set_mtu,
    .close = memif_close,
    .prepare_sleep = hp__memif_prepare_sleep,
    .is_up = memif_is_up,
};

HP_API int hp_link_memif_stats(const struct hp_link *l, struct hp_memif_stats *out)
{
    while (l && l->ops != &memif_ops)
        l = l->inner;
    if (!l || !out)
        return -EINVAL;
    const struct memif_link *m = (const struct memif_link *)l;
    *out = m->ms;
    out->up = m->up;
    out->server = m->server;
    out->zero_copy = m->zc;
    snprintf(out->peer_name, sizeof out->peer_name, "%s", m->up ? m->hs.peer_name : "");
    snprintf(out->peer_if, sizeof out->peer_if, "%s", m->up ? m->hs.peer_if : "");
    return 0;
}

/* ---- opening ------------------------------------------------------------- */

static unsigned log2_of(uint32_t v)
{
    unsigned k = 0;
    while ((1u << k) < v)
        k++;
    return k;
}

static int check_config(const struct hp_link_config *cfg)
{
    const struct hp_memif_config *mc = &cfg->memif;
    if (mc->role != HP_MEMIF_CLIENT && mc->role != HP_MEMIF_SERVER)
        return hp__link_fail(EINVAL, "memif: role %d is neither client (0) nor server (1)",
                             mc->role);
    if (mc->queues > HP__MEMIF_MAX_QUEUES)
        return hp__link_fail(EINVAL, "memif: %u queues: at most %d", mc->queues,
                             HP__MEMIF_MAX_QUEUES);
    if (cfg->ring_size > (1u << HP__MEMIF_MAX_LOG2))
        return hp__link_fail(EINVAL, "memif: ring_size %u: at most %u", cfg->ring_size,
                             1u << HP__MEMIF_MAX_LOG2);
    if (mc->buffer_size && (mc->buffer_size < 128 || mc->buffer_size > 65535))
        return hp__link_fail(EINVAL, "memif: buffer_size %u: 128 to 65535 bytes", mc->buffer_size);
    if (mc->secret && strlen(mc->secret) > HP__MEMIF_SECRET_LEN)
        return hp__link_fail(EINVAL, "memif: the secret is longer than %d bytes",
                             HP__MEMIF_SECRET_LEN);
    if (mc->rx_mode < HP_MEMIF_RX_AUTO || mc->rx_mode > HP_MEMIF_RX_INTERRUPT)
        return hp__link_fail(EINVAL, "memif: rx_mode %d is not an enum hp_memif_rx_mode",
                             mc->rx_mode);
    if (cfg->flags & ~(unsigned)(HP_LINK_F_TX_COMPLETIONS | HP_LINK_F_ZEROCOPY | HP_LINK_F_COPY))
        return hp__link_fail(EINVAL, "memif: flags 0x%x are for other backends", cfg->flags);
    if ((cfg->flags & HP_LINK_F_ZEROCOPY) && (cfg->flags & HP_LINK_F_COPY))
        return hp__link_fail(EINVAL, "memif: zero-copy and copy exclude each other");
    if ((cfg->flags & HP_LINK_F_ZEROCOPY) && mc->role == HP_MEMIF_SERVER)
        return hp__link_fail(EOPNOTSUPP,
                             "memif server: zero-copy is the client's (the server maps the "
                             "client's memory and copies)");
    if ((cfg->flags & HP_LINK_F_ZEROCOPY) && cfg->pool)
        return hp__link_fail(
            EINVAL, "memif zero-copy makes its pool over shared memory: leave cfg->pool NULL");
    return 0;
}

/* Zero-copy: the pool over a sealed memfd, region 1 of every connection. */
static int make_pool(struct memif_link *m, const struct hp_link_config *cfg, struct hp_pool **pool)
{
    uint32_t q = m->hs.queues, ring = 1u << m->hs.log2;
    uint32_t n = cfg->n_frames ? cfg->n_frames : 4 * ring * 2 * q;
    if (n < 4096 && !cfg->n_frames)
        n = 4096;
    uint32_t chunk = (HP_BUF_META_SIZE + m->bsize + 63) & ~63u;
    m->pool_len = (size_t)n * chunk;
    if (m->pool_len > UINT32_MAX)
        return hp__link_fail(EINVAL, "memif: a zero-copy pool of %u x %u bytes passes 4 GiB", n,
                             chunk);
    m->pool_fd = memfd_create("hotpath-memif-pool", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (m->pool_fd < 0 || ftruncate(m->pool_fd, (off_t)m->pool_len) < 0 ||
        fcntl(m->pool_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
        return hp__link_fail(errno, "memif: cannot make the shared pool: %s", hp_strerror(-errno));
    void *p = mmap(NULL, m->pool_len, PROT_READ | PROT_WRITE, MAP_SHARED, m->pool_fd, 0);
    if (p == MAP_FAILED)
        return hp__link_fail(errno, "memif: cannot map the shared pool: %s", hp_strerror(-errno));
    m->pool_mem = p;
    struct hp_pool_config pc = {.name = "memif-zc",
                                .mem = p,
                                .mem_len = m->pool_len,
                                .chunk = chunk,
                                .flags = HP_POOL_F_NO_HUGEPAGES};
    *pool = hp_pool_create(&pc);
    if (!*pool)
        return hp__link_fail(errno, "memif: cannot make the shared pool: %s", hp_strerror(-errno));
    return 0;
}

static void set_identity(struct memif_link *m, const struct hp_link_config *cfg)
{
    const struct hp_memif_config *mc = &cfg->memif;
    m->server = mc->role == HP_MEMIF_SERVER;
    m->zc = (cfg->flags & HP_LINK_F_ZEROCOPY) != 0;
    m->rx_mode = mc->rx_mode;
    m->bsize = mc->buffer_size ? mc->buffer_size : MEMIF_DEFAULT_BSIZE;
    m->reconnect_ms = mc->reconnect_ms ? mc->reconnect_ms : 100;
    m->hs.server = m->server;
    m->hs.id = mc->id;
    if (mc->secret)
        memcpy(m->hs.secret, mc->secret, strlen(mc->secret));
    m->hs.queues = mc->queues ? mc->queues : 1;
    m->hs.log2 = (uint8_t)(cfg->ring_size ? log2_of(cfg->ring_size)
                                          : (m->server ? HP__MEMIF_MAX_LOG2 : MEMIF_DEFAULT_LOG2));
    m->hs.regions = m->zc ? 2 : 1;
}

/* Locally administered unicast: 02:6d ("m"), a hash of the socket and id,
 * the role in the last bit, so that the two ends differ. */
static void make_mac(struct memif_link *m, const char *sock, uint32_t id)
{
    uint32_t h = 2166136261u ^ id;
    for (const char *c = sock; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    uint8_t mac[6] = {0x02,
                      0x6d,
                      (uint8_t)(h >> 24),
                      (uint8_t)(h >> 16),
                      (uint8_t)(h >> 8),
                      (uint8_t)((h & 0xfe) | (m->server ? 1 : 0))};
    memcpy(m->l.mac, mac, 6);
}

static struct memif_link *memif_alloc(void)
{
    struct memif_link *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->epfd = m->listen_fd = m->ctl_fd = m->timer_fd = m->pool_fd = -1;
    for (unsigned i = 0; i < HP__MEMIF_MAX_QUEUES; i++)
        m->rx[i].irq_fd = m->tx[i].irq_fd = -1;
    for (unsigned i = 0; i < HP__MEMIF_MAX_REGIONS; i++)
        m->map[i].fd = -1;
    return m;
}

struct hp_link *hp__memif_open(const struct hp_link_config *cfg)
{
    int bad = check_config(cfg);
    if (bad < 0) {
        errno = -bad;
        return NULL;
    }
    struct memif_link *m = memif_alloc();
    if (!m)
        return hp__link_fail_null(ENOMEM, "memif: out of memory");
    set_identity(m, cfg);
    struct hp_link_config c = *cfg;
    int rc = 0;
    if (m->zc)
        rc = make_pool(m, cfg, &c.pool);
    char name[32];
    snprintf(name, sizeof name, "%s", cfg->iface ? cfg->iface : "");
    if (!cfg->iface)
        snprintf(name, sizeof name, "memif%u", cfg->memif.id);
    if (rc == 0 && (rc = hp__link_init(&m->l, &memif_ops, &c, name)) == 0) {
        m->l.fd = -1;
        m->max_frame = m->l.mtu + HP__ETH_HDR + HP__VLAN_HDR;
        m->l.caps =
            HP_LINK_CAP_FD | (m->zc ? HP_LINK_CAP_ZEROCOPY_TX | HP_LINK_CAP_ZEROCOPY_RX : 0);
        make_mac(m, cfg->memif.socket ? cfg->memif.socket : MEMIF_DEFAULT_SOCKET, cfg->memif.id);
        rc = hp__memif_ctl_open(m, cfg);
        if (rc < 0)
            hp__memif_ctl_close(m);
    }
    if (rc < 0) {
        int e = -rc;
        hp__link_fini(&m->l);
        if (m->zc && c.pool && c.pool != cfg->pool)
            hp_pool_destroy(c.pool);
        if (m->pool_mem)
            munmap(m->pool_mem, m->pool_len);
        if (m->pool_fd >= 0)
            close(m->pool_fd);
        free(m);
        errno = e;
        return NULL;
    }
    return &m->l;
}
