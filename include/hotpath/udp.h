/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP sockets on an hp_stack: non-blocking, IPv4 and IPv6, copying and zero-copy calls. */
#ifndef HOTPATH_UDP_H
#define HOTPATH_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/buf.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A UDP socket belongs to one stack and is used from the stack's thread.
 * Every call is non-blocking: -EAGAIN when nothing can be done now; wait
 * for HP_EV_IN / HP_EV_OUT through hp_stack_events().
 */
struct hp_udp_sock;

/**
 * Open a socket of family 4 or 6 on s; `user` comes back in its events.
 * @return the socket, or NULL with errno EINVAL or ENOMEM.
 */
HP_API struct hp_udp_sock *hp_udp_open(struct hp_stack *s, int family, void *user);

/**
 * Bind to a local address (all zeros: any of ours) and port (0: an
 * ephemeral port, 49152-65535). @return 0, -EADDRINUSE, -EADDRNOTAVAIL
 * (not one of our addresses), -EINVAL (already bound, wrong family).
 */
HP_API int hp_udp_bind(struct hp_udp_sock *u, const struct hp_sockaddr *local);

/**
 * Share the address (SO_REUSEADDR), before hp_udp_bind(): sockets that all
 * set it may bind the same port and address. A datagram goes to the best
 * match: a socket bound to its destination address before a wildcard one,
 * a socket connected to its source before an unconnected one; among equals,
 * the one bound last. @return 0, or -EINVAL (NULL, or already bound).
 */
HP_API int hp_udp_set_reuseaddr(struct hp_udp_sock *u, bool on);

/**
 * Set the default destination, and receive only from it. Binds to an
 * ephemeral port first if needed. @return 0, -EINVAL, -EADDRINUSE.
 */
HP_API int hp_udp_connect(struct hp_udp_sock *u, const struct hp_sockaddr *remote);

/**
 * Send len bytes (copied) to `to` (NULL: the connected peer). Datagrams
 * larger than the path MTU are fragmented.
 * @return len, -EAGAIN (no buffers now, or the neighbour queue is full),
 *         -EMSGSIZE (len > 65507 for IPv4, 65527 for IPv6), -EHOSTUNREACH (no
 *         route), -EDESTADDRREQ (no destination), -EINVAL.
 */
HP_API int hp_udp_sendto(struct hp_udp_sock *u, const void *data, size_t len,
                         const struct hp_sockaddr *to);

/**
 * Zero-copy send: b holds the payload (from its data offset; it needs 62
 * bytes of headroom for the headers, as every pool buffer has). On success
 * the stack owns b; on failure the caller still does.
 * @return the payload length, or the errors of hp_udp_sendto().
 */
HP_API int hp_udp_send_buf(struct hp_udp_sock *u, struct hp_buf *b, const struct hp_sockaddr *to);

/**
 * Receive one datagram into data (at most cap bytes; the rest of a longer
 * datagram is discarded, as with recvfrom(2)). from may be NULL.
 * @return the datagram's full length (> cap when truncated), or -EAGAIN.
 */
HP_API int hp_udp_recvfrom(struct hp_udp_sock *u, void *data, size_t cap, struct hp_sockaddr *from);

/**
 * Zero-copy receive: *b gets the datagram, data offset at the payload
 * (possibly a chain, for a reassembled datagram); the caller owns it.
 * @return the payload length, or -EAGAIN.
 */
HP_API int hp_udp_recv_buf(struct hp_udp_sock *u, struct hp_buf **b, struct hp_sockaddr *from);

/** HP_EV_* bits that hold now. */
HP_API uint32_t hp_udp_poll(const struct hp_udp_sock *u);

/** The bound local address (port 0 when unbound). */
HP_API void hp_udp_local(const struct hp_udp_sock *u, struct hp_sockaddr *out);

/** Set the receive queue bound in datagrams (default 256); beyond it datagrams are dropped and counted (UDP_RCVBUF_ERRORS). The queue's memory grows toward the bound only as datagrams wait (a few entries live in the socket); a datagram that finds no memory to grow into is dropped and counted the same way. 0, or -EINVAL for 0 or more than 65536. */
HP_API int hp_udp_set_rcvq(struct hp_udp_sock *u, unsigned max);

/** Close: queued datagrams are freed. NULL is a no-op. @return 0. */
HP_API int hp_udp_close(struct hp_udp_sock *u);

#ifdef __cplusplus
}
#endif
#endif
