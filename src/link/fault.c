/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault decorator: a link that drops, duplicates, reorders, corrupts and delays frames from a seeded generator. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/*
 * Each direction (transmit, receive) has its own generator, seeded from the
 * configured seed, and draws the same six numbers for every frame whatever
 * the rates: the faults a frame gets depend only on the seed and the frame's
 * position in its direction, not on timing, on the other direction, or on
 * which other faults are enabled.
 *
 * Per frame, in this order: drop (nothing else happens); duplicate (a copy,
 * made before any corruption, so the copy is what was sent); corrupt (the
 * original); then delay, else reorder (a delayed frame is overtaken already,
 * so it is not reordered as well). The copy travels right behind its
 * original, held or not.
 *
 * Frames of one direction sit in three FIFO queues:
 *   out      ready: transmit: waiting for the inner link to take them;
 *            receive: waiting for the caller's next rx_burst;
 *   delayed  due at a CLOCK_MONOTONIC time; the delay is fixed, so due times
 *            grow along the queue and frames leave in order;
 *   reorder  held until the next frame of the direction goes to `out`, and
 *            then queued right behind it. If no frame comes during the next
 *            burst call, they are released in place (not overtaken).
 * Together they hold at most FAULT_CAP frames; a frame is taken only when
 * two more fit (itself and a copy), so no queue can overflow and no frame is
 * ever lost: every buffer the decorator took is in a queue, was given to the
 * inner link, or was freed and counted (dropped). Close frees the queues.
 *
 * Any burst call also moves the transmit side on (due frames, frames the
 * inner link refused before), since a stack may go on polling receive
 * without transmitting.
 */

#define FAULT_CAP      1024u /* frames held per direction; a power of two */
#define FAULT_RX_BATCH 256u  /* frames read from the inner link per rx call */
#define FAULT_DELAY_US 1000u /* delay_us 0 */

enum { TX = 0, RX = 1 };

struct fifo {
    uint32_t head, tail; /* free-running; head - tail entries */
    struct hp_buf *b[FAULT_CAP];
};

struct fdir {
    bool on;         /* faults apply in this direction */
    uint64_t rng[4]; /* xoshiro256** state */
    struct fifo out, delayed, reorder;
    uint64_t due[FAULT_CAP]; /* parallel to delayed.b */
    /* Frames (originals, not copies) in `reorder`, to count `reordered` when
     * they are overtaken; and how much of `reorder` was held before the
     * current burst call (released in place if no frame comes). */
    uint32_t reorder_frames;
    uint32_t old_entries, old_frames;
};

struct fault_link {
    struct hp_link l;
    double p_drop, p_dup, p_reorder, p_corrupt, p_delay;
    uint64_t delay_ns;
    struct hp_fault_stats fs;
    struct fdir d[2];
    struct hp_buf *scratch[FAULT_RX_BATCH];
};

/* ---- generator: xoshiro256**, seeded by splitmix64 (both public domain, by
 * Blackman and Vigna) --------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* A uniform double in [0, 1): rate 0 never fires, rate 1 always does. */
static inline double rng_unit(uint64_t s[4])
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* ---- queues -------------------------------------------------------------- */

static inline uint32_t fifo_len(const struct fifo *q)
{
    return q->head - q->tail;
}

static inline void fifo_push(struct fifo *q, struct hp_buf *b)
{
    q->b[q->head++ & (FAULT_CAP - 1)] = b;
}

static inline struct hp_buf *fifo_pop(struct fifo *q)
{
    return q->b[q->tail++ & (FAULT_CAP - 1)];
}

static void fifo_free(struct fifo *q)
{
    while (fifo_len(q))
        hp_buf_free(fifo_pop(q));
}

static inline uint32_t held(const struct fdir *d)
{
    return fifo_len(&d->out) + fifo_len(&d->delayed) + fifo_len(&d->reorder);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- what happens to frames ---------------------------------------------- */

static bool seg_shared(const struct hp_buf *s)
{
    return (s->flags & HP_BUF_F_INDIRECT) || hp_buf_refcnt(s) > 1;
}

/* A new frame with b's bytes in buffers of its own (not a clone: a clone
 * shares the data, which a corruption would then change in both, and some
 * backends need frames of their own). NULL when the pool runs out. */
static struct hp_buf *copy_frame(struct hp_pool *pool, const struct hp_buf *b)
{
    struct hp_buf *head = NULL;
    uint32_t off = 0, left = hp__frame_len(b);
    do {
        struct hp_buf *c = hp_buf_alloc(pool);
        uint32_t room = c ? hp_buf_tailroom(c) : 0;
        if (!room) {
            hp_buf_free(c);
            hp_buf_free(head);
            return NULL;
        }
        uint32_t k = left < room ? left : room;
        hp_buf_copy_out(b, off, k, hp_buf_append(c, k));
        if (!head)
            head = c;
        else if (hp_buf_chain(head, c) < 0) {
            hp_buf_free(c);
            hp_buf_free(head);
            return NULL;
        }
        off += k;
        left -= k;
    } while (left);
    head->ol_flags = b->ol_flags;
    head->hash = b->hash;
    head->port = b->port;
    head->l2_len = b->l2_len;
    head->l3_len = b->l3_len;
    head->timestamp = b->timestamp;
    return head;
}

/* Flip random bits (never none) of one random byte of *pb, first replacing
 * it by a private copy when the byte's data is shared. */
static bool corrupt(struct fault_link *f, struct hp_buf **pb, uint64_t r)
{
    struct hp_buf *b = *pb;
    uint32_t len = hp__frame_len(b);
    if (len == 0)
        return false;
    uint32_t pos = (uint32_t)(((r >> 32) * len) >> 32);
    uint8_t mask = (uint8_t)(1 + (r & 0xffff) % 255);
    for (int pass = 0; pass < 2; pass++) {
        uint32_t off = pos;
        struct hp_buf *s = b;
        while (s && off >= s->data_len) {
            off -= s->data_len;
            s = s->next;
        }
        if (!s)
            return false; /* pkt_len larger than the segments: not ours to fix */
        if (!seg_shared(s)) {
            ((unsigned char *)hp_buf_data(s))[off] ^= mask;
            return true;
        }
        if (pass == 1)
            return false;
        struct hp_buf *c = copy_frame(f->l.pool, b);
        if (!c)
            return false;
        hp_buf_free(b);
        *pb = b = c;
    }
    return false;
}

/* A frame is ready: queue it, its copy behind it, and behind both the frames
 * held for reordering, which it has now overtaken. */
static void emit(struct fault_link *f, struct fdir *d, struct hp_buf *b, struct hp_buf *dup)
{
    fifo_push(&d->out, b);
    if (dup)
        fifo_push(&d->out, dup);
    if (fifo_len(&d->reorder)) {
        while (fifo_len(&d->reorder))
            fifo_push(&d->out, fifo_pop(&d->reorder));
        f->fs.reordered += d->reorder_frames;
        d->reorder_frames = 0;
        d->old_entries = d->old_frames = 0;
    }
}

/* One frame the decorator took (from the caller or the inner link); it goes
 * to one of the queues or is freed. Needs room for two in the queues. */
static void place(struct fault_link *f, struct fdir *d, struct hp_buf *b, uint64_t now)
{
    f->fs.seen++;
    if (!d->on) {
        emit(f, d, b, NULL);
        return;
    }
    double u_drop = rng_unit(d->rng), u_dup = rng_unit(d->rng), u_corrupt = rng_unit(d->rng);
    double u_delay = rng_unit(d->rng), u_reorder = rng_unit(d->rng);
    uint64_t r = rng_next(d->rng);
    if (u_drop < f->p_drop) {
        hp_buf_free(b);
        f->fs.dropped++;
        return;
    }
    struct hp_buf *dup = NULL;
    if (u_dup < f->p_dup) {
        dup = copy_frame(f->l.pool, b); /* none when the pool is empty */
        if (dup)
            f->fs.duplicated++;
    }
    if (u_corrupt < f->p_corrupt && corrupt(f, &b, r))
        f->fs.corrupted++;
    if (u_delay < f->p_delay) {
        d->due[d->delayed.head & (FAULT_CAP - 1)] = now + f->delay_ns;
        fifo_push(&d->delayed, b);
        if (dup) {
            d->due[d->delayed.head & (FAULT_CAP - 1)] = now + f->delay_ns;
            fifo_push(&d->delayed, dup);
        }
        f->fs.delayed++;
        return;
    }
    if (u_reorder < f->p_reorder) {
        fifo_push(&d->reorder, b);
        if (dup)
            fifo_push(&d->reorder, dup);
        d->reorder_frames++;
        return;
    }
    emit(f, d, b, dup);
}

static bool need_clock(const struct fault_link *f, const struct fdir *d)
{
    return (d->on && f->p_delay > 0) || fifo_len(&d->delayed);
}

/* Start of a burst call for direction d: what is held for reordering now
 * was held by an earlier call; then frames whose delay is over are ready. */
static void begin_call(struct fdir *d, uint64_t now)
{
    d->old_entries = fifo_len(&d->reorder);
    d->old_frames = d->reorder_frames;
    while (fifo_len(&d->delayed) && d->due[d->delayed.tail & (FAULT_CAP - 1)] <= now)
        fifo_push(&d->out, fifo_pop(&d->delayed));
}

/* End of a burst call: frames held for reordering since an earlier call,
 * which no frame came to overtake, go out as they are. */
static void end_call(struct fdir *d)
{
    for (uint32_t i = 0; i < d->old_entries; i++)
        fifo_push(&d->out, fifo_pop(&d->reorder));
    d->reorder_frames -= d->old_frames;
    d->old_entries = d->old_frames = 0;
}

/* Hand transmit frames that are ready to the inner link, in order, as far
 * as it takes them. 0 or the inner link's -errno. */
static int flush_tx(struct fault_link *f)
{
    struct fifo *q = &f->d[TX].out;
    while (fifo_len(q)) {
        uint32_t at = q->tail & (FAULT_CAP - 1);
        uint32_t span = FAULT_CAP - at < fifo_len(q) ? FAULT_CAP - at : fifo_len(q);
        int r = hp_link_tx_burst(f->l.inner, &q->b[at], span);
        if (r < 0)
            return r;
        q->tail += (uint32_t)r;
        if ((uint32_t)r < span)
            break;
    }
    return 0;
}

static int fault_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct fault_link *f = (struct fault_link *)l;
    struct fdir *d = &f->d[TX];
    if (!d->on && !fifo_len(&d->out)) {
        /* Nothing to do here: straight through. */
        int r = hp_link_tx_burst(l->inner, bufs, n);
        if (r > 0)
            f->fs.seen += (unsigned)r;
        return r;
    }
    uint64_t now = need_clock(f, d) ? mono_ns() : 0;
    begin_call(d, now);
    unsigned taken = 0;
    /* Full queues: take no more, and let the caller keep the rest. */
    while (taken < n && held(d) + 2 <= FAULT_CAP)
        place(f, d, bufs[taken++], now);
    end_call(d);
    int rc = flush_tx(f);
    /* Frames taken are ours whatever the inner link said: report them. */
    if (taken == 0 && rc < 0)
        return rc;
    return (int)taken;
}

/* Move the transmit side on during a receive call. */
static void service_tx(struct fault_link *f)
{
    struct fdir *d = &f->d[TX];
    if (!held(d))
        return;
    begin_call(d, need_clock(f, d) ? mono_ns() : 0);
    end_call(d);
    (void)flush_tx(f); /* an error shows on the next tx call */
}

static int fault_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct fault_link *f = (struct fault_link *)l;
    struct fdir *d = &f->d[RX];
    service_tx(f);
    if (!d->on && !fifo_len(&d->out)) {
        int r = hp_link_rx_burst(l->inner, bufs, n);
        if (r > 0)
            f->fs.seen += (unsigned)r;
        return r;
    }
    uint64_t now = need_clock(f, d) ? mono_ns() : 0;
    begin_call(d, now);
    int err = 0;
    if (fifo_len(&d->out) < n) {
        /* Read no more than the queues can hold, two per frame. */
        unsigned k = n - fifo_len(&d->out);
        unsigned room = (FAULT_CAP - held(d)) / 2;
        if (k > room)
            k = room;
        if (k > FAULT_RX_BATCH)
            k = FAULT_RX_BATCH;
        if (k) {
            int r = hp_link_rx_burst(l->inner, f->scratch, k);
            if (r < 0)
                err = r;
            for (int i = 0; i < r; i++)
                place(f, d, f->scratch[i], now);
        }
    }
    end_call(d);
    unsigned m = 0;
    while (m < n && fifo_len(&d->out))
        bufs[m++] = fifo_pop(&d->out);
    if (m == 0 && err)
        return err;
    return (int)m;
}

/*
 * Before a sleep on the inner link's fd: frames ready to be handed on
 * (either direction) or held for reordering are released by the next burst
 * call, so no sleep; delayed frames bound the sleep (the fd says nothing
 * about them); then the inner link arms.
 */
static int fault_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    struct fault_link *f = (struct fault_link *)l;
    uint64_t now = 0, first = UINT64_MAX;
    for (int i = 0; i < 2; i++) {
        struct fdir *d = &f->d[i];
        if (fifo_len(&d->out) || fifo_len(&d->reorder))
            return 1;
        if (!fifo_len(&d->delayed))
            continue;
        uint64_t due = d->due[d->delayed.tail & (FAULT_CAP - 1)];
        if (due < first)
            first = due;
    }
    if (first != UINT64_MAX) {
        now = mono_ns();
        if (first <= now)
            return 1;
    }
    int64_t inner_due = -1;
    int rc = hp_link_prepare_sleep(l->inner, &inner_due);
    int64_t mine = first == UINT64_MAX ? -1 : (int64_t)(first - now);
    if (mine >= 0 && (inner_due < 0 || mine < inner_due))
        *due_ns = mine;
    else
        *due_ns = inner_due;
    return rc;
}

static int fault_completions(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    return hp_link_completions(l->inner, bufs, n);
}

static int fault_set_mtu(struct hp_link *l, uint32_t mtu)
{
    return hp_link_set_mtu(l->inner, mtu);
}

static void fault_stats(const struct hp_link *l, struct hp_link_stats *out)
{
    hp_link_stats(l->inner, out);
}

static int fault_close(struct hp_link *l)
{
    struct fault_link *f = (struct fault_link *)l;
    /* Held frames first: the inner link may own the pool they came from. */
    for (int i = 0; i < 2; i++) {
        fifo_free(&f->d[i].out);
        fifo_free(&f->d[i].delayed);
        fifo_free(&f->d[i].reorder);
    }
    return hp_link_close(l->inner);
}

static const struct hp__link_ops fault_ops = {
    .kind = "fault",
    .rx = fault_rx,
    .tx = fault_tx,
    .prepare_sleep = fault_prepare_sleep,
    .completions = fault_completions,
    .set_mtu = fault_set_mtu,
    .stats = fault_stats,
    .close = fault_close,
};

static bool rate_ok(double p)
{
    return p >= 0.0 && p <= 1.0; /* false for NaN too */
}

HP_API struct hp_link *hp_link_fault(struct hp_link *inner, const struct hp_fault_config *cfg)
{
    static const struct hp_fault_config none;
    if (!inner)
        return hp__link_fail_null(EINVAL, "fault: no link to wrap");
    if (!cfg)
        cfg = &none;
    const struct {
        const char *name;
        double p;
    } rates[] = {{"drop", cfg->drop},
                 {"duplicate", cfg->duplicate},
                 {"reorder", cfg->reorder},
                 {"corrupt", cfg->corrupt},
                 {"delay", cfg->delay}};
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
        if (!rate_ok(rates[i].p))
            return hp__link_fail_null(EINVAL, "fault %s: %s rate %g is not a probability in [0, 1]",
                                      inner->name, rates[i].name, rates[i].p);
    if (cfg->directions & ~(unsigned)(HP_FAULT_TX | HP_FAULT_RX))
        return hp__link_fail_null(EINVAL,
                                  "fault %s: directions 0x%x: only HP_FAULT_TX and HP_FAULT_RX",
                                  inner->name, cfg->directions);
    struct fault_link *f = calloc(1, sizeof *f);
    if (!f)
        return hp__link_fail_null(ENOMEM, "fault %s: out of memory", inner->name);
    f->p_drop = cfg->drop;
    f->p_dup = cfg->duplicate;
    f->p_reorder = cfg->reorder;
    f->p_corrupt = cfg->corrupt;
    f->p_delay = cfg->delay;
    f->delay_ns = (uint64_t)(cfg->delay_us ? cfg->delay_us : FAULT_DELAY_US) * 1000u;
    unsigned dirs = cfg->directions ? cfg->directions : HP_FAULT_TX | HP_FAULT_RX;
    bool any = cfg->drop > 0 || cfg->duplicate > 0 || cfg->reorder > 0 || cfg->corrupt > 0 ||
               cfg->delay > 0;
    for (int i = 0; i < 2; i++) {
        f->d[i].on = any && (dirs & (i == TX ? HP_FAULT_TX : HP_FAULT_RX));
        /* Two streams from one seed: the directions do not share draws. */
        uint64_t x = cfg->seed ^ (i == TX ? 0 : 0x6A09E667F3BCC909ull);
        for (int k = 0; k < 4; k++)
            f->d[i].rng[k] = splitmix64(&x);
    }

    struct hp_link *l = &f->l;
    l->ops = &fault_ops;
    l->pool = inner->pool;
    l->own_pool = false;
    l->flags = inner->flags;
    l->caps = inner->caps;
    l->mtu = inner->mtu;
    l->fd = inner->fd;
    memcpy(l->mac, inner->mac, sizeof l->mac);
    memcpy(l->name, inner->name, sizeof l->name);
    l->inner = inner;
    return l;
}

HP_API int hp_link_fault_stats(const struct hp_link *l, struct hp_fault_stats *out)
{
    if (!l || !out || l->ops != &fault_ops)
        return -EINVAL;
    *out = ((const struct fault_link *)l)->fs;
    return 0;
}
