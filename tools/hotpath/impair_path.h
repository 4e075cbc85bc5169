/* SPDX-License-Identifier: BSD-3-Clause */
/* One direction of `hotpath impair`: a byte-bounded queue drained at a set rate, ECN marking, and a delay line with jitter. */
#ifndef HOTPATH_TOOL_IMPAIR_PATH_H
#define HOTPATH_TOOL_IMPAIR_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include <hotpath/buf.h>

/*
 * A frame entering a direction goes through, in order:
 *   1. the MTU check: an IP packet larger than mtu is dropped (a link that
 *      cannot carry it, and sends no ICMP: a black hole for path MTU tests);
 *   2. the bottleneck queue: it leaves at `rate` bits per second (serialised
 *      one frame after another, Ethernet header included); when the bytes
 *      waiting would exceed `queue_bytes` it is dropped at the tail; when
 *      more than `ecn_mark_above` bytes wait before it and it is ECT(0) or
 *      ECT(1), its ECN field becomes CE (RFC 3168 section 5) instead;
 *   3. the delay line: it is delivered `delay` (plus a uniform jitter in
 *      [-jitter, +jitter]) after it left the queue, never before a frame
 *      that entered before it (jitter does not reorder; --reorder does);
 *   4. the tail loss, when tail_gap is set: a TCP segment carrying data
 *      that no frame followed within tail_gap (the last of a burst) is
 *      lost as it leaves the delay line, once per flow and sequence number,
 *      so that its retransmission passes: the loss that RACK-TLP's probe
 *      (RFC 8985 7) repairs. It is decided before the segment is due when
 *      tail_gap <= delay (a segment due sooner is let through).
 * Loss, duplication, corruption and reordering are the fault decorator's
 * (hp_link_fault on the output link), after this.
 *
 * Time is given by the caller in nanoseconds (any monotonic origin), so the
 * path is a pure function of its inputs and its tests need no clock.
 */
struct impair_cfg {
    uint64_t rate_bps;    /* 0: no rate limit (and no queue) */
    uint64_t queue_bytes; /* the queue's bound; 0: one bandwidth-delay product, at least 64 KiB */
    uint64_t ecn_mark_above; /* 0: never mark */
    uint64_t delay_ns, jitter_ns;
    uint32_t mtu;         /* 0: no check */
    uint64_t tail_gap_ns; /* 0: no tail loss; else the quiet after a burst's last segment */
    uint64_t seed;
};

struct impair_stats {
    uint64_t in, out; /* frames taken in and handed out */
    uint64_t bytes_in, bytes_out;
    uint64_t queue_drops;              /* tail drops: the queue was full */
    uint64_t ce_marked;                /* ECT frames marked CE */
    uint64_t mtu_drops;                /* larger than the MTU */
    uint64_t queue_max;                /* the most bytes that waited at once */
    uint64_t tail_drops;               /* the last data segments of bursts, lost (tail_gap) */
    uint64_t late_sum_ns, late_max_ns; /* how late the frames handed out left, against due */
};

enum { IMPAIR_TAIL_NO = 0, IMPAIR_TAIL_MAYBE, IMPAIR_TAIL_DROP };

struct impair_slot {
    struct hp_buf *b;
    uint64_t leave_ns;   /* when its last bit leaves the bottleneck */
    uint64_t deliver_ns; /* when it comes out of the delay line */
    uint64_t enter_ns;   /* when it was pushed */
    uint32_t bytes;
    uint32_t flow, seq; /* a TCP data segment's flow (a hash) and sequence number */
    uint8_t tail;       /* IMPAIR_TAIL_*: a data segment not known to be followed yet */
};

#define IMPAIR_TAIL_SEEN 64

struct impair_path {
    struct impair_cfg cfg;
    struct impair_slot *ring; /* FIFO: deliver_ns never decreases */
    uint32_t size, mask;      /* ring entries, a power of two */
    uint32_t head, tail;      /* out at head, in at tail */
    uint32_t queued;          /* index of the first slot still in the bottleneck queue */
    uint64_t queue_bytes;     /* bytes whose leave_ns is still ahead */
    uint64_t last_leave_ns, last_deliver_ns;
    uint64_t rng;
    struct impair_stats st;
    struct {
        uint32_t flow, seq;
    } tail_seen[IMPAIR_TAIL_SEEN]; /* the tails lost lately: their retransmissions pass */
    uint32_t tail_seen_n;
    uint64_t peek_ns; /* the time of the last peek: consume counts lateness against it */
};

/* 0, or -ENOMEM / -EINVAL (ring_size not a power of two). */
int impair_path_init(struct impair_path *p, const struct impair_cfg *cfg, uint32_t ring_size);
/* Frees every frame still inside. */
void impair_path_fini(struct impair_path *p);

/* Take frame b at time now: 1 (queued: the path owns b), 0 (dropped and
 * freed, counted). The ring full counts as a queue drop. */
int impair_path_push(struct impair_path *p, struct hp_buf *b, uint64_t now);

/* Up to n frames due at time now, in order, still owned by the path: hand
 * them to the output, then impair_path_consume() the number it took. Tails
 * to lose that are due are freed here first (counted); the frames returned
 * stop before one that is not due yet. */
unsigned impair_path_peek(struct impair_path *p, uint64_t now, struct hp_buf **out, unsigned n);
/* The first n frames peeked are gone (the caller owns them). */
void impair_path_consume(struct impair_path *p, unsigned n);

/* Frames inside (queued or delayed). */
uint32_t impair_path_count(const struct impair_path *p);

/* When the next frame is due, or UINT64_MAX when empty. */
uint64_t impair_path_next_ns(const struct impair_path *p);

/* Whether the IP packet in frame f (Ethernet, len bytes) is ECN-capable
 * (ECT(0) or ECT(1)); mark it CE when so, fixing the IPv4 header checksum.
 * Returns true if it was marked. Exposed for tests. */
bool impair_mark_ce(uint8_t *f, uint32_t len);

/* When frame f (Ethernet, len bytes) is a TCP segment carrying data over
 * IPv4 (not a fragment) or IPv6 (TCP the first next header): its payload
 * length, with *flow a hash of its addresses and ports and *seq its
 * sequence number; else 0. Exposed for tests. */
uint32_t impair_tcp_data(const uint8_t *f, uint32_t len, uint32_t *flow, uint32_t *seq);

/* The IP packet length of frame f (after Ethernet and one VLAN tag), or 0
 * when it is not IPv4 or IPv6. */
uint32_t impair_ip_len(const uint8_t *f, uint32_t len);

#endif
