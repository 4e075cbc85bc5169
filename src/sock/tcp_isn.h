/* SPDX-License-Identifier: BSD-3-Clause */
/* Initial sequence numbers from a 4-microsecond clock plus a keyed hash of the connection (RFC 6528 section 3). */
#ifndef HOTPATH_SOCK_TCP_ISN_H
#define HOTPATH_SOCK_TCP_ISN_H

#include <stdint.h>

#include "tcp_hash.h"

/* RFC 6528 section 3 (and RFC 9293 section 3.4.1): M ticks every 4 us. */
#define HP__TCP_ISN_TICK_NS 4000u

/**
 * The ISN for a new connection (RFC 6528 section 3):
 *     ISN = M + F(localip, localport, remoteip, remoteport, secretkey)
 * with M = now_ns / 4 us modulo 2^32 and F the low 32 bits of
 * hp__tcp_hash(secret, HP__TCP_HASH_ISN, t, 0, 0).
 *
 * For one tuple, ISNs therefore follow the clock (a wrap every 4.77 hours,
 * as RFC 9293 3.4.1 intends), so a new incarnation starts above the old
 * one's sequence numbers; different tuples have unrelated offsets, so an
 * off-path attacker learns nothing from its own connections (RFC 6528
 * section 1). now_ns: any monotonic clock in ns (the stack's s->now).
 * Pure; never fails.
 */
uint32_t hp__tcp_isn(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                     uint64_t now_ns);

/**
 * hp__tcp_isn's ISN, and in *ts_offset the connection's timestamp clock
 * offset (RFC 7323 section 7.1, as RFC 6528 for the ISN): the high 32 bits
 * of the same hash, whose low 32 are F. One SipHash for both (a new
 * connection computed two, some 500 instructions, 2% of a connection's):
 * the halves of a pseudorandom function's output are independent, so the
 * offset every TSval reveals says nothing of F.
 */
uint32_t hp__tcp_isn_ts(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                        uint64_t now_ns, uint32_t *ts_offset);

/** The timestamp offset alone (hp__tcp_isn_ts's), for a SYN cookie's SYN-ACK. */
uint32_t hp__tcp_ts_offset(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t);

#endif
