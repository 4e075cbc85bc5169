/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the link layer: the operations table every backend and decorator fills. */
#ifndef HOTPATH_LINK_INTERNAL_H
#define HOTPATH_LINK_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <hotpath/err.h>
#include <hotpath/link.h>

#define HP__ETH_HDR  14
#define HP__VLAN_HDR 4

struct hp__link_ops {
    const char *kind;
    int (*rx)(struct hp_link *l, struct hp_buf **bufs, unsigned n);
    int (*tx)(struct hp_link *l, struct hp_buf **bufs, unsigned n);
    /* NULL: the generic completion queue (hp__link_complete) is used. */
    int (*completions)(struct hp_link *l, struct hp_buf **bufs, unsigned n);
    /* NULL: hp_link_set_mtu only checks the bound against the pool. */
    int (*set_mtu)(struct hp_link *l, uint32_t mtu);
    /* Arm the link for a sleeper on its fd (hp_link_prepare_sleep(), whose
     * comment in link.h is the contract); *due_ns is -1 on entry. NULL: a
     * link with an fd is level-triggered with nothing to arm (0), one
     * without cannot wake a sleeper (-EOPNOTSUPP). */
    int (*prepare_sleep)(struct hp_link *l, int64_t *due_ns);
    /* Add backend counters (kernel drop counts...) to *out; may be NULL. */
    void (*stats)(const struct hp_link *l, struct hp_link_stats *out);
    /* Whether the link carries frames (hp_link_up()); NULL: always. */
    bool (*is_up)(const struct hp_link *l);
    /* Release everything but the struct hp_link itself (and its own pool,
     * which hp_link_close destroys after). 0 or -errno (-EBUSY: a pool the
     * backend owned still had buffers out). */
    int (*close)(struct hp_link *l);
};

/* A single-producer, single-consumer ring of buffer pointers: the mem
 * pair's wires and the generic completion queue. Producer and consumer
 * indices sit on their own lines, each with a cached copy of the other's. */
struct hp__spsc {
    _Alignas(64) _Atomic uint32_t head; /* producer writes */
    uint32_t tail_cache;
    _Alignas(64) _Atomic uint32_t tail; /* consumer writes */
    uint32_t head_cache;
    _Alignas(64) uint32_t mask;
    struct hp_buf *slot[];
};

struct hp__spsc *hp__spsc_create(uint32_t size);
void hp__spsc_destroy(struct hp__spsc *r); /* frees what it still holds */
unsigned hp__spsc_push(struct hp__spsc *r, struct hp_buf *const *bufs, unsigned n);
unsigned hp__spsc_pop(struct hp__spsc *r, struct hp_buf **bufs, unsigned n);
/* Consumer side: how many entries wait (reads the producer's index). */
unsigned hp__spsc_avail(struct hp__spsc *r);

/* Every link starts with this; backends embed it as their first member. */
struct hp_link {
    const struct hp__link_ops *ops;
    struct hp_pool *pool;
    bool own_pool;  /* hp_link_close destroys pool */
    unsigned flags; /* HP_LINK_F_* as opened */
    unsigned caps;  /* HP_LINK_CAP_* */
    uint32_t mtu;
    int fd; /* pollable fd or -1 */
    uint8_t mac[6];
    char name[32];
    struct hp_link *inner;   /* decorators: the wrapped link */
    struct hp__spsc *compq;  /* HP_LINK_F_TX_COMPLETIONS on copying backends */
    struct hp_link_stats st; /* written by the link's thread only */
};

/* Fill the common part: ops, name, flags, fd -1, and the pool (cfg->pool, or
 * a new one of 4096 x 2048-byte buffers owned by the link). Also creates the
 * completion queue when flags ask for it. 0 or -errno (message set). */
int hp__link_init(struct hp_link *l, const struct hp__link_ops *ops,
                  const struct hp_link_config *cfg, const char *name);
/* Undo hp__link_init's allocations (for a backend's failed open). */
void hp__link_fini(struct hp_link *l);

/* Buffers a copying backend has finished sending: freed, or queued for
 * hp_link_completions() with HP_LINK_F_TX_COMPLETIONS. The queue cannot
 * overflow if the backend never takes more than hp__link_tx_room() buffers
 * in one tx call (a full queue would free the rest: a bug, asserted). */
void hp__link_complete(struct hp_link *l, struct hp_buf **bufs, unsigned n);
/* How many buffers a copying backend may take now without overflowing the
 * completion queue (UINT32_MAX without HP_LINK_F_TX_COMPLETIONS). */
unsigned hp__link_tx_room(struct hp_link *l);

/* Record the reason of a failure for hp_link_error() and return -err. */
int hp__link_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for constructors: sets errno and returns NULL. */
void *hp__link_fail_null(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The total length of a (possibly chained) frame. */
static inline uint32_t hp__frame_len(const struct hp_buf *b)
{
    return b->pkt_len;
}

/*
 * Describe frame b as up to max iovecs after checking it: every segment lies
 * inside its data room and the segment lengths add up to pkt_len (the walk is
 * bounded, so a chain that loops cannot hang us). For the backends that
 * write frames with writev / sendmmsg.
 * @return the number of segments (1 .. max), max + 1 when the chain has more
 *         segments than that (iov then holds the first max), or 0 when the
 *         chain is malformed.
 */
struct iovec;
unsigned hp__frame_iov(const struct hp_buf *b, struct iovec *iov, unsigned max);

/* Copy a chain of more segments than a backend's iovec array into *bounce
 * (grown with realloc as needed; the backend frees it on close) and
 * describe it as one iovec. false when there is no memory for it. */
bool hp__gather(unsigned char **bounce, uint32_t *bounce_len, const struct hp_buf *b,
                struct iovec *iov);

/* Backends' constructors, called by hp_link_open. */
struct hp_link *hp__tap_open(const struct hp_link_config *cfg);
struct hp_link *hp__afpacket_open(const struct hp_link_config *cfg);
struct hp_link *hp__afxdp_open(const struct hp_link_config *cfg);
struct hp_link *hp__memif_open(const struct hp_link_config *cfg);

/* Interface helpers (ioctl on a datagram socket): 0 or -errno. */
int hp__if_index(const char *name, unsigned *index);
int hp__if_mtu(const char *name, uint32_t *mtu);
int hp__if_set_mtu(const char *name, uint32_t mtu);
int hp__if_mac(const char *name, uint8_t mac[6]);
int hp__if_up(const char *name);

#endif
