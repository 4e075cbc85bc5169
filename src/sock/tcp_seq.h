/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP sequence number and timestamp arithmetic modulo 2^32 (RFC 9293 section 3.4, RFC 7323 section 5). */
#ifndef HOTPATH_SOCK_TCP_SEQ_H
#define HOTPATH_SOCK_TCP_SEQ_H

#include <stdbool.h>
#include <stdint.h>

/*
 * RFC 9293 section 3.4: sequence numbers live in a space of 2^32 and every
 * comparison is modulo 2^32. a is "before" b when b - a, computed modulo
 * 2^32, lies in 1 .. 2^31 - 1. This is serial number arithmetic
 * (RFC 1982 section 3.2) with SERIAL_BITS = 32.
 *
 * At a distance of exactly 2^31 the order is undefined (RFC 1982 3.2);
 * these functions then say each number is before the other (lt(a, b) and
 * lt(b, a) both hold). TCP never compares numbers that far apart: windows
 * are at most 2^30 (RFC 7323 section 2.3).
 *
 * The difference is tested through its top bit, so no conversion of an
 * out-of-range value to a signed type is involved.
 */

/* a is before b: the top bit of a - b is set. */
static inline bool hp__seq_lt(uint32_t a, uint32_t b)
{
    return ((uint32_t)(a - b) & 0x80000000u) != 0;
}

static inline bool hp__seq_le(uint32_t a, uint32_t b)
{
    return a == b || hp__seq_lt(a, b);
}

static inline bool hp__seq_gt(uint32_t a, uint32_t b)
{
    return hp__seq_lt(b, a);
}

static inline bool hp__seq_ge(uint32_t a, uint32_t b)
{
    return a == b || hp__seq_lt(b, a);
}

/* The later / earlier of two sequence numbers. */
static inline uint32_t hp__seq_max(uint32_t a, uint32_t b)
{
    return hp__seq_gt(a, b) ? a : b;
}

static inline uint32_t hp__seq_min(uint32_t a, uint32_t b)
{
    return hp__seq_lt(a, b) ? a : b;
}

/* The signed distance a - b; exact for |a - b| < 2^31, INT32_MIN at 2^31. */
static inline int32_t hp__seq_diff(uint32_t a, uint32_t b)
{
    uint32_t d = a - b;
    /* Two's complement by hand: no implementation-defined conversion. */
    return d & 0x80000000u ? -(int32_t)(~d) - 1 : (int32_t)d;
}

/*
 * lo <= x <= hi, modulo 2^32: x lies on the arc that starts at lo and runs
 * forward to hi. The acceptability tests of RFC 9293 section 3.4 are built
 * from this, e.g. "SND.UNA < SEG.ACK =< SND.NXT" is
 * hp__seq_between(SND.UNA + 1, SEG.ACK, SND.NXT). Any arc length up to
 * 2^32 - 1 works, unlike a pair of lt/le tests.
 */
static inline bool hp__seq_between(uint32_t lo, uint32_t x, uint32_t hi)
{
    return (uint32_t)(x - lo) <= (uint32_t)(hi - lo);
}

/*
 * start <= x < start + len, modulo 2^32: x falls in a window of len octets
 * that begins at start (RFC 9293 section 3.10.7.4, "RCV.NXT =< SEG.SEQ <
 * RCV.NXT+RCV.WND"). An empty window (len 0) holds nothing.
 */
static inline bool hp__seq_in_window(uint32_t x, uint32_t start, uint32_t len)
{
    return (uint32_t)(x - start) < len;
}

/*
 * Timestamps (RFC 7323 section 5.3, PAWS): TSval values are compared as
 * 32-bit serial numbers too, "TSval < TS.Recent" meaning modulo 2^32. The
 * peer's clock ticks between 1 ms and 1 s (RFC 7323 section 5.4), so the
 * same top-bit test holds for up to 2^31 ticks (24.8 days at 1 ms).
 */
static inline bool hp__ts_lt(uint32_t a, uint32_t b)
{
    return hp__seq_lt(a, b);
}

static inline bool hp__ts_le(uint32_t a, uint32_t b)
{
    return hp__seq_le(a, b);
}

static inline bool hp__ts_gt(uint32_t a, uint32_t b)
{
    return hp__seq_gt(a, b);
}

static inline bool hp__ts_ge(uint32_t a, uint32_t b)
{
    return hp__seq_ge(a, b);
}

/*
 * RFC 7323 section 5.5: TS.Recent more than 24 days old is no longer
 * trusted, because the peer's clock may have moved by 2^31 ticks since.
 */
#define HP__TCP_PAWS_IDLE_NS (24ull * 24 * 3600 * 1000000000ull)

/*
 * The PAWS test of RFC 7323 section 5.3 R1 on a segment carrying tsval:
 * true when the segment is acceptable, false when it is an old duplicate
 * (TSval < TS.Recent) to be dropped (with an ACK in reply, unless it is a
 * RST). recent_age_ns is how long ago TS.Recent was set; once it exceeds
 * HP__TCP_PAWS_IDLE_NS any tsval passes (section 5.5).
 */
static inline bool hp__tcp_paws_ok(uint32_t tsval, uint32_t ts_recent, uint64_t recent_age_ns)
{
    return recent_age_ns > HP__TCP_PAWS_IDLE_NS || !hp__ts_lt(tsval, ts_recent);
}

#endif
