/* SPDX-License-Identifier: BSD-3-Clause */
/* What the receive side's three files share: a received segment being processed, and the calls between tcp_input.c, tcp_listen.c and tcp_ooo.c. */
#ifndef HOTPATH_SOCK_TCP_IN_H
#define HOTPATH_SOCK_TCP_IN_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp_internal.h"

/*
 * tcp_input.c   checks every segment, demultiplexes it, and runs the
 *               SYN-SENT and synchronized-state rules (RFC 9293 3.10.7.3,
 *               3.10.7.4) with PAWS, RFC 5961, ACK processing and FIN;
 * tcp_listen.c  LISTEN (3.10.7.2): new connections from SYNs and from SYN
 *               cookies; the option negotiation of a SYN;
 * tcp_ooo.c     segment text: the receive queue and out-of-order
 *               reassembly.
 */

/* Small in-order segments are copied into the receive queue's tail buffer
 * (hp__tcp_bufq_push_small) so that a stream of them does not pin one
 * pool buffer each. */
#define HP__TCP_RCV_SMALL 512u

/* The smallest SMSS we accept from a peer's MSS option: the low end of
 * HP_TCP_OPT_MAXSEG. A tiny MSS only multiplies the segments (and
 * buffers) a transfer needs. */
#define HP__TCP_MIN_SMSS 88u

/*
 * One received segment while it is processed. r is the segment as parsed
 * and never changes (RST replies and the tests of 3.10.7.4 read the
 * original SEG.SEQ, SEG.ACK and control bits); seq, off, len and flags
 * describe what is left of it after trimming to the receive window
 * (RFC 9293 3.10.7.4 first step): the SYN, the payload bytes
 * [off, off + len) of b's data (whose data offset is at the TCP header),
 * and the FIN, in that order from sequence number seq.
 */
struct hp__tcp_seg {
    struct hp__iface *ifc;
    struct hp_buf *b; /* owned; NULL once queued or freed */
    int family;
    const uint8_t *src, *dst; /* the IP header's addresses (4 or 16 bytes) */
    struct hp_tcp_repr r;
    uint32_t seq;
    uint32_t off, len;
    uint8_t flags; /* HP_TCP_F_SYN / FIN cleared when trimmed away */
};

static inline void hp__tcp_seg_free(struct hp__tcp_seg *sg)
{
    if (sg->b) {
        hp_buf_free(sg->b);
        sg->b = NULL;
    }
}

/* tcp_input.c: a segment for connection c in SYN_RECEIVED or a
 * synchronized state (also the ACK that completes a SYN cookie). Consumes
 * the segment; c may be freed on return. */
void hp__tcp_conn_input(struct hp_tcp_sock *c, struct hp__tcp_seg *sg);

/* tcp_listen.c: a segment for listener l (RFC 9293 3.10.7.2). Consumes it. */
void hp__tcp_listen_input(struct hp_tcp_sock *l, struct hp__tcp_seg *sg);

/* tcp_listen.c: the options of the peer's SYN or SYN-ACK decide smss,
 * mss_eff, window scaling and timestamps (RFC 9293 3.7.1, RFC 7323 2.2 and
 * 3.2); c->rmss and c->rcv_wscale must be set (hp__tcp_conn_attach). */
void hp__tcp_negotiate(struct hp_tcp_sock *c, const struct hp_tcp_opts *o);

/* tcp_input.c: the rest of what the peer's SYN or SYN-ACK r negotiates,
 * after hp__tcp_negotiate: SACK (RFC 2018 2) and ECN (RFC 3168 6.1.1). */
void hp__tcp_negotiate_more(struct hp_tcp_sock *c, const struct hp_tcp_repr *r);

/* tcp_ooo.c: the segment's text (and FIN), already trimmed to the window,
 * starting at or after rcv_nxt (RFC 9293 3.10.7.4 seventh step): queued in
 * order or out of order, acknowledged through hp__tcp_ack_schedule.
 * Takes sg->b when it keeps the bytes. @return true when a FIN is now in
 * order (at rcv_nxt): the caller processes it (eighth step). */
bool hp__tcp_rcv_text(struct hp_tcp_sock *c, struct hp__tcp_seg *sg);

#endif
