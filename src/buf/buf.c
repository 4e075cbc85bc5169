/* SPDX-License-Identifier: BSD-3-Clause */
/* Packet buffer operations: the general free with its checks, sharing, clone, and edits that fail without changing anything. */
#include <errno.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/pool.h>

#include "internal.h"

/* The grouped layout (docs/cachelines/hp_buf.md); HP_LAYOUT_CHRONO has none. */
#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO)
HP_CACHELINE_ASSERT_GROUP_SIZE(struct hp_buf, hot, HP_CACHELINE_SIZE);
HP_CACHELINE_ASSERT_GROUP_LINES(struct hp_buf, hot, 1);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, base);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, next);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, pool);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, ol_flags);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, data_off);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, data_len);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, pkt_len);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, refcnt);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, owner);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, hot, flags);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, cold, direct);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct hp_buf, cold, user);
#endif
_Static_assert(sizeof(struct hp_buf) == HP_BUF_META_SIZE, "hp_buf metadata must be 128 bytes");

static inline bool shared(const struct hp_buf *b)
{
    return (b->flags & HP_BUF_F_INDIRECT) || hp_buf_refcnt(b) > 1;
}

/* Check that b is a live buffer of a pool before touching it further.
 * Returns its pool, or NULL after reporting what is wrong. */
__attribute__((always_inline)) static inline struct hp_pool *check(const struct hp_buf *b)
{
    struct hp_pool *p = hp__pool_of(b);
    if (__builtin_expect(!p, 0)) {
        hp__pool_report(NULL, b, "free of a pointer that is not a pool buffer");
        return NULL;
    }
    /* A pointer into the middle of a buffer is not at a chunk boundary. */
    uint64_t off = (uint64_t)((const unsigned char *)b - p->region);
    bool at_chunk = hp__at_chunk(off, p->elt_inv, p->elt_shift, p->elt_lim);
    if (__builtin_expect(!at_chunk, 0)) {
        hp__pool_report(p, b, "free of a pointer that is not the start of a buffer");
        return NULL;
    }
    if (__builtin_expect(b->flags & HP_BUF_F_FREE, 0)) {
        hp__pool_report(p, b, "double free (the buffer is already in the pool)");
        return NULL;
    }
    return p;
}

/* Drop one reference to segment b; true when it was the last. */
static bool unref(struct hp_buf *b)
{
    uint16_t r = hp_buf_refcnt(b);
    if (__builtin_expect(r == 1, 1)) {
        /* Sole holder: nobody else may touch the count. */
        atomic_store_explicit(&b->refcnt, 0, memory_order_relaxed);
        return true;
    }
    if (r == 0) {
        hp__pool_report(b->pool, b, "reference count underflow");
        return false;
    }
    return atomic_fetch_sub_explicit(&b->refcnt, 1, memory_order_acq_rel) == 1;
}

/* Give back segment b, whose last reference was just dropped (the pool
 * clears its next). */
static void release(struct hp_buf *b)
{
    if (b->flags & HP_BUF_F_INDIRECT) {
        /* A clone: point its metadata home again (allocation does not touch
         * these), give it back, then drop its reference to the data. */
        struct hp_buf *d = b->direct;
        b->direct = NULL;
        b->base = (unsigned char *)b + HP_BUF_META_SIZE;
        b->room = hp_pool_data_room(b->pool);
        hp__pool_put(b);
        if (check(d) && unref(d))
            hp__pool_put(d);
        return;
    }
    hp__pool_put(b);
}

/* The general case: every segment, shared ones only dropping a reference
 * (the common case is cache.c's hp_buf_free). */
void hp__buf_free_general(struct hp_buf *b)
{
    while (b) {
        if (!check(b))
            return; /* reported; a broken chain is not walked further */
        /* Read next first: once our reference is gone, another holder may
         * free the segment. */
        struct hp_buf *next = b->next;
        if (unref(b))
            release(b);
        b = next;
    }
}

HP_API int hp_buf_ref(struct hp_buf *b)
{
    if (!b)
        return -EINVAL;
    for (struct hp_buf *s = b; s; s = s->next)
        if (hp_buf_refcnt(s) == UINT16_MAX)
            return -EOVERFLOW;
    for (struct hp_buf *s = b; s; s = s->next)
        atomic_fetch_add_explicit(&s->refcnt, 1, memory_order_relaxed);
    return hp_buf_refcnt(b);
}

HP_API void *hp_buf_prepend(struct hp_buf *b, uint32_t len)
{
    if (!b || len > b->data_off || shared(b) || b->pkt_len > UINT32_MAX - len)
        return NULL;
    b->data_off -= len;
    b->data_len += len;
    b->pkt_len += len;
    return hp_buf_data(b);
}

HP_API void *hp_buf_append(struct hp_buf *b, uint32_t len)
{
    if (!b)
        return NULL;
    struct hp_buf *last = hp_buf_last(b);
    if (len > hp_buf_tailroom(last) || shared(last) || b->pkt_len > UINT32_MAX - len)
        return NULL;
    unsigned char *p = last->base + last->data_off + last->data_len;
    last->data_len += len;
    b->pkt_len += len;
    return p;
}

HP_API void *hp_buf_adj(struct hp_buf *b, uint32_t len)
{
    if (!b || len > b->data_len)
        return NULL;
    b->data_off += len;
    b->data_len -= len;
    b->pkt_len -= len;
    return hp_buf_data(b);
}

HP_API int hp_buf_trim(struct hp_buf *b, uint32_t len)
{
    if (!b)
        return -EINVAL;
    struct hp_buf *last = hp_buf_last(b);
    if (len > last->data_len)
        return -EINVAL;
    last->data_len -= len;
    b->pkt_len -= len;
    return 0;
}

HP_API int hp_buf_chain(struct hp_buf *head, struct hp_buf *tail)
{
    if (!head || !tail)
        return -EINVAL;
    struct hp_buf *last = head;
    for (struct hp_buf *s = head; s; s = s->next) {
        if (s == tail)
            return -EINVAL; /* already part of head: would make a cycle */
        last = s;
    }
    if ((uint32_t)head->nb_segs + tail->nb_segs > UINT16_MAX ||
        (uint64_t)head->pkt_len + tail->pkt_len > UINT32_MAX)
        return -EOVERFLOW;
    last->next = tail;
    head->nb_segs = (uint16_t)(head->nb_segs + tail->nb_segs);
    head->pkt_len += tail->pkt_len;
    return 0;
}

HP_API int hp_buf_linearize(struct hp_buf *b)
{
    if (!b)
        return -EINVAL;
    if (!b->next)
        return 0;
    if (shared(b))
        return -EPERM;
    if ((uint64_t)b->room - b->data_off < b->pkt_len)
        return -ENOSPC;
    unsigned char *dst = (unsigned char *)hp_buf_data(b) + b->data_len;
    for (struct hp_buf *s = b->next; s; s = s->next) {
        memcpy(dst, hp_buf_data(s), s->data_len);
        dst += s->data_len;
    }
    struct hp_buf *rest = b->next;
    b->next = NULL;
    b->data_len = b->pkt_len;
    b->nb_segs = 1;
    hp_buf_free(rest);
    return 0;
}

HP_API int hp_buf_copy_out(const struct hp_buf *b, uint32_t off, uint32_t len, void *dst)
{
    if (!b || (len && !dst) || (uint64_t)off + len > b->pkt_len)
        return -EINVAL;
    unsigned char *d = dst;
    for (const struct hp_buf *s = b; s && len; s = s->next) {
        if (off >= s->data_len) {
            off -= s->data_len;
            continue;
        }
        uint32_t n = s->data_len - off < len ? s->data_len - off : len;
        memcpy(d, (const unsigned char *)hp_buf_data(s) + off, n);
        d += n;
        len -= n;
        off = 0;
    }
    return len ? -EINVAL : 0;
}

HP_API struct hp_buf *hp_buf_clone(struct hp_buf *b, struct hp_pool *pool)
{
    if (!b || !pool) {
        errno = EINVAL;
        return NULL;
    }
    for (struct hp_buf *s = b; s; s = s->next) {
        struct hp_buf *d = (s->flags & HP_BUF_F_INDIRECT) ? s->direct : s;
        if (hp_buf_refcnt(d) == UINT16_MAX) {
            errno = EOVERFLOW;
            return NULL;
        }
    }
    struct hp_buf *head = NULL, *prev = NULL;
    for (struct hp_buf *s = b; s; s = s->next) {
        struct hp_buf *c = hp_buf_alloc(pool);
        if (!c) {
            hp_buf_free(head); /* drops the references taken so far */
            errno = ENOMEM;
            return NULL;
        }
        struct hp_buf *d = (s->flags & HP_BUF_F_INDIRECT) ? s->direct : s;
        atomic_fetch_add_explicit(&d->refcnt, 1, memory_order_relaxed);
        c->base = s->base;
        c->data_off = s->data_off;
        c->data_len = s->data_len;
        c->room = s->room;
        c->flags |= HP_BUF_F_INDIRECT;
        c->direct = d;
        if (prev)
            prev->next = c;
        else
            head = c;
        prev = c;
    }
    head->pkt_len = b->pkt_len;
    head->nb_segs = b->nb_segs;
    head->ol_flags = b->ol_flags;
    head->hash = b->hash;
    head->port = b->port;
    head->l2_len = b->l2_len;
    head->l3_len = b->l3_len;
    return head;
}
