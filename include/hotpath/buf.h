/* SPDX-License-Identifier: BSD-3-Clause */
/* Packet buffers: one cache line of fast-path metadata, headroom, data, segment chains and sharing. */
#ifndef HOTPATH_BUF_H
#define HOTPATH_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/cacheline.h>
#include <hotpath/common.h>

/* The reference count is a C11 atomic. C++ has no _Atomic: it sees a plain
 * field of the same size and layout, read through the GCC/Clang atomic
 * builtins (the library itself is C and does every write atomically). */
#ifdef __cplusplus
#define HP__ATOMIC_U16 uint16_t
#else
#include <stdatomic.h>
#define HP__ATOMIC_U16 _Atomic uint16_t
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct hp_pool;

/*
 * A packet buffer. Its 128 bytes of metadata sit in front of its data room,
 * in the pool's memory: the first cache line holds everything the receive
 * and transmit fast paths touch (see docs/cachelines/hp_buf.md), the second
 * the rarely used fields and a user area.
 *
 * A packet is a chain of one or more segments linked by `next`; the first
 * segment carries the packet-wide fields (pkt_len, nb_segs, ol_flags, hash).
 * A buffer's data may be shared: hp_buf_clone() makes new metadata that
 * points at the same data ("indirect" buffers), and the data's buffer is
 * freed when its last user frees it (refcnt).
 *
 * Fields are public to read; change them only through the functions below
 * (or as documented per field), which keep them consistent.
 *
 * Their order depends on the build: by cache line (the default: every fast
 * path field in line 0, docs/cachelines/hp_buf.md), or, in a library built
 * with -DHP_LAYOUT_CHRONO=1 (HP_LAYOUT=chrono, an experiment's "before",
 * never to install), in logical order, with the packet annotations the
 * fast paths read (hash, port, header lengths, ol_flags) in line 1. Code
 * that includes this header must be built the same way as the library.
 */
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
struct hp_buf {
    /* The same fields as below (see their comments), in logical order:
     * the data room, the packet and its segments, ownership, then the
     * annotations and the user's areas. */
    struct hp_pool *pool;
    unsigned char *base;
    uint32_t room;
    uint32_t data_off;
    uint32_t data_len;
    uint32_t pkt_len;
    struct hp_buf *next;
    uint16_t nb_segs;
    HP__ATOMIC_U16 refcnt;
    uint16_t flags;
    uint16_t owner;
    struct hp_buf *direct;
    uint64_t tag;
    uint64_t timestamp;
    uint16_t port;
    uint8_t l2_len;
    uint8_t l3_len;
    uint32_t hash;
    uint64_t ol_flags;
    uint64_t reserved;
    unsigned char user[32];
} __attribute__((aligned(HP_CACHELINE_SIZE)));
#else
struct hp_buf {
    HP_CACHELINE_GROUP_BEGIN(hot)
    unsigned char *base;   /**< start of the data room (the direct buffer's, for a clone) */
    struct hp_buf *next;   /**< next segment, NULL for the last */
    struct hp_pool *pool;  /**< the pool this metadata came from */
    uint64_t ol_flags;     /**< HP_BUF_OL_*: offload and checksum status (first segment) */
    uint32_t data_off;     /**< offset of the first data byte from base */
    uint32_t data_len;     /**< bytes of data in this segment */
    uint32_t pkt_len;      /**< bytes in the whole packet (first segment) */
    uint32_t room;         /**< size of the data room at base */
    HP__ATOMIC_U16 refcnt; /**< users of this buffer's data room; read with hp_buf_refcnt() */
    uint16_t nb_segs;      /**< segments in the packet (first segment) */
    uint16_t owner;        /**< thread id (hp_thread_id()) that allocated it */
    uint16_t flags;        /**< HP_BUF_F_*: state kept by the library (read only) */
    uint32_t hash;         /**< flow hash, set by whoever computes one (first segment) */
    uint16_t port;         /**< input interface, set by the receive path */
    uint8_t l2_len;        /**< bytes of the link-layer header, set by parsers */
    uint8_t l3_len;        /**< bytes of the network-layer header, set by parsers */
    HP_CACHELINE_GROUP_END(hot)

    HP_CACHELINE_GROUP_BEGIN(cold)
    struct hp_buf *direct;  /**< for a clone: the buffer whose data it shares, else NULL */
    uint64_t tag;           /**< free for the application (tests tag owners with it) */
    uint64_t timestamp;     /**< free for the application or a link (receive time) */
    uint64_t reserved;      /**< reserved for the library; do not use */
    unsigned char user[32]; /**< user area: free for the application */
    HP_CACHELINE_GROUP_END(cold)
} __attribute__((aligned(HP_CACHELINE_SIZE)));
#endif

/** Size of the metadata in front of every data room. */
#define HP_BUF_META_SIZE 128
/** Default headroom: room for headers to be prepended without copying. */
#define HP_BUF_HEADROOM 128

/* flags (library state, read only) */
#define HP_BUF_F_FREE     0x0001 /**< in the pool, not owned by anyone */
#define HP_BUF_F_INDIRECT 0x0002 /**< a clone: base points into `direct` */
#define HP_BUF_F_EXTERNAL 0x0004 /**< data room in caller-provided memory (AF_XDP UMEM) */

/* ol_flags: checksum status, set by a receive path or a parser */
#define HP_BUF_OL_L3_CKSUM_GOOD (1ull << 0)
#define HP_BUF_OL_L3_CKSUM_BAD  (1ull << 1)
#define HP_BUF_OL_L4_CKSUM_GOOD (1ull << 2)
#define HP_BUF_OL_L4_CKSUM_BAD  (1ull << 3)
/* ol_flags: checksums the transmit path must fill in (offload requests) */
#define HP_BUF_OL_TX_IP_CKSUM (1ull << 8)
#define HP_BUF_OL_TX_L4_CKSUM (1ull << 9)

/* ---- allocation ------------------------------------------------------- */

/**
 * Take one buffer from a pool: one segment, data_len 0, the pool's headroom,
 * refcnt 1, owned by the calling thread.
 * @return the buffer (the caller owns it), or NULL with errno ENOMEM when
 *         the pool is empty, EINVAL when pool is NULL.
 */
HP_API struct hp_buf *hp_buf_alloc(struct hp_pool *pool);

/**
 * Take n buffers at once (cheaper per buffer than hp_buf_alloc).
 * All or nothing: on failure nothing is taken.
 * @return n, or -ENOMEM when the pool has fewer than n, -EINVAL for a NULL
 *         pool or array.
 */
HP_API int hp_buf_alloc_bulk(struct hp_pool *pool, struct hp_buf **bufs, unsigned n);

/**
 * Give a packet back: every segment of the chain. A segment whose data is
 * shared (refcnt > 1) only drops its reference. Afterwards the caller owns
 * nothing. NULL is ignored. Freeing a buffer twice, a pointer into a pool's
 * memory that is not the start of a buffer, or a buffer whose count is
 * already zero is logged through the log hook (log.h) with the address and
 * pool name, counted in the pool's `errors`, and otherwise ignored: the pool is left
 * intact. A pointer outside every pool's memory is reported the same way
 * (no pool owns it to count it).
 */
HP_API void hp_buf_free(struct hp_buf *b);

/** hp_buf_free() each of n packets (NULL entries are skipped). */
HP_API void hp_buf_free_bulk(struct hp_buf **bufs, unsigned n);

/**
 * Add a reference to b's data room (b itself, not a chain); each holder
 * calls hp_buf_free() once.
 * @return the new count, or -EOVERFLOW (unchanged) at 65535.
 */
HP_API int hp_buf_ref(struct hp_buf *b);

/** Current reference count of b's data room. */
static inline uint16_t hp_buf_refcnt(const struct hp_buf *b)
{
#ifdef __cplusplus
    return __atomic_load_n(&b->refcnt, __ATOMIC_RELAXED);
#else
    return atomic_load_explicit(&((struct hp_buf *)b)->refcnt, memory_order_relaxed);
#endif
}

/* ---- data access ------------------------------------------------------ */

/** First data byte of this segment. */
static inline void *hp_buf_data(const struct hp_buf *b)
{
    return b->base + b->data_off;
}

/** Bytes free in front of this segment's data. */
static inline uint32_t hp_buf_headroom(const struct hp_buf *b)
{
    return b->data_off;
}

/** Bytes free after this segment's data. */
static inline uint32_t hp_buf_tailroom(const struct hp_buf *b)
{
    return b->room - b->data_off - b->data_len;
}

/** The last segment of a chain. */
static inline struct hp_buf *hp_buf_last(struct hp_buf *b)
{
    while (b->next)
        b = b->next;
    return b;
}

/* ---- editing (each fails without changing anything) --------------------- */

/**
 * Make room for len bytes in front of the first segment's data (a header).
 * @return the new first data byte, or NULL (nothing changed) when the
 *         headroom is smaller than len or b's data is shared (refcnt > 1 or
 *         a clone), since writing there would change other holders' view.
 */
HP_API void *hp_buf_prepend(struct hp_buf *b, uint32_t len);

/**
 * Make room for len bytes after the last segment's data.
 * @return the first of the new bytes, or NULL (nothing changed) when the
 *         last segment's tailroom is smaller than len or its data is shared.
 */
HP_API void *hp_buf_append(struct hp_buf *b, uint32_t len);

/**
 * Remove len bytes from the front of the first segment (strip a header).
 * @return the new first data byte, or NULL (nothing changed) when the first
 *         segment holds fewer than len bytes.
 */
HP_API void *hp_buf_adj(struct hp_buf *b, uint32_t len);

/**
 * Remove len bytes from the end of the last segment.
 * @return 0, or -EINVAL (nothing changed) when the last segment holds fewer
 *         than len bytes.
 */
HP_API int hp_buf_trim(struct hp_buf *b, uint32_t len);

/**
 * Append the chain tail to the chain head: head's packet grows by tail's
 * pkt_len. On success head owns tail's segments; the caller keeps owning
 * head (and no longer owns tail separately).
 * @return 0, or -EOVERFLOW (nothing changed) when the packet would exceed
 *         UINT32_MAX bytes or 65535 segments, -EINVAL for NULL or head == tail.
 */
HP_API int hp_buf_chain(struct hp_buf *head, struct hp_buf *tail);

/**
 * Gather a chained packet into its first segment and free the others.
 * @return 0 (also for a single segment), -ENOSPC (nothing changed) when the
 *         first segment's room after data_off is smaller than pkt_len, -EPERM
 *         (nothing changed) when the first segment's data is shared.
 */
HP_API int hp_buf_linearize(struct hp_buf *b);

/**
 * Copy len bytes of the packet, starting off bytes into it, to dst.
 * @return 0, or -EINVAL (nothing copied) when [off, off + len) is not inside
 *         the packet.
 */
HP_API int hp_buf_copy_out(const struct hp_buf *b, uint32_t off, uint32_t len, void *dst);

/**
 * Clone a packet: new metadata from pool for each segment, sharing the
 * original's data (read only for both until all but one are freed).
 * Packet-wide fields are copied. The original is unchanged but its data
 * rooms' reference counts grow.
 * @return the clone (the caller owns it), or NULL with errno ENOMEM (nothing
 *         changed) when pool runs out, EOVERFLOW when a count would pass 65535.
 */
HP_API struct hp_buf *hp_buf_clone(struct hp_buf *b, struct hp_pool *pool);

#ifdef __cplusplus
}
#endif
#endif
