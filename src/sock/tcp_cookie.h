/* SPDX-License-Identifier: BSD-3-Clause */
/* SYN cookies (RFC 4987 section 3.6): a listener's ISN that encodes what it needs to accept the final ACK without keeping state. */
#ifndef HOTPATH_SOCK_TCP_COOKIE_H
#define HOTPATH_SOCK_TCP_COOKIE_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp_hash.h"

/*
 * The technique (RFC 4987 section 3.6): when its SYN queue is full, a
 * listener answers a SYN with a SYN-ACK whose ISN is a cookie, and forgets
 * the SYN. A real client's ACK returns the cookie as SEG.ACK - 1; the
 * listener checks it and creates the connection only then.
 *
 * Our cookie, for the SYN's tuple t, the client's ISN c, the time slot
 * n = now / 64 s and the index i < 5 of the MSS in the table below:
 *
 *     mac    = SipHash(secret, "cookie", t, c, n, i), top 29 of its low 32 bits
 *     cookie = mac << 3 | i            (i in the low 3 bits)
 *
 * To check, i is read from the cookie and the MAC recomputed for the
 * current slot and the one before: two hashes. Every bit is covered, so a
 * client cannot change its MSS index, and a blind forger succeeds with
 * probability 2 / 2^29 per ACK. The client's ISN comes from the ACK's
 * SEG.SEQ - 1, so a cookie is bound to one SYN as well as to the tuple.
 * A cookie stays valid for 64 to 128 seconds after the SYN-ACK. The MSS
 * index is readable by anyone who sees the SYN-ACK; it is no secret (the
 * SYN carried the MSS in clear), and the other 29 bits are unpredictable.
 *
 * The options, in the timestamp (as Linux does): when the SYN carried
 * timestamps (RFC 7323), the cookie SYN-ACK offers them too, with every
 * option the SYN asked for that the stack agrees to, and hides what the
 * final ACK needs to know of them in the low 6 bits of its TSval:
 *
 *     bits 0-3  the peer's window shift (0-14), 15 for no window scaling
 *     bit  4    SACK-permitted (RFC 2018) agreed
 *     bit  5    ECN (RFC 3168 6.1.1) agreed
 *
 * The rest of the TSval is our timestamp clock for the connection (the
 * offset hp__tcp_conn_attach will give it), rounded down so that it never
 * runs ahead of it. The ACK echoes the TSval as TSecr: the bits come back,
 * and the connection is made with window scaling, timestamps, SACK and ECN
 * as from a SYN queue entry. Those bits are not covered by the MAC (a
 * client could flip them in its ACK): they only say what the client itself
 * asked for, which it could have asked differently in its SYN.
 *
 * What a cookie connection still loses, because nothing about the SYN is
 * kept:
 *  - the exact MSS: it is rounded down to a table entry;
 *  - everything but the MSS when the SYN had no timestamps (there is
 *    nowhere to hide it): the window is then at most 65,535 bytes and
 *    there is no PAWS and no timestamp RTT sampling;
 *  - SYN-ACK retransmission: a lost SYN-ACK is recovered only by the
 *    client sending its SYN again;
 *  - data on the SYN (TCP Fast Open) and ISN monotonicity: cookie ISNs do
 *    not follow the RFC 6528 clock.
 * Use cookies only while the SYN queue is under pressure, as RFC 4987 says
 * (the listener first drops a stale half-open entry: tcp_listen.c).
 */

#define HP__TCP_COOKIE_SLOT_NS (64ull * 1000000000ull) /* 64-second slots */
#define HP__TCP_COOKIE_NMSS    5

/* The MSS values a cookie can carry, smallest first: IPv4's default
 * (RFC 9293 3.7.1), IPv6's minimum (1280 - 60), common tunnels and
 * Ethernet, and jumbo frames. */
extern const uint16_t hp__tcp_cookie_mss[HP__TCP_COOKIE_NMSS];

/**
 * Make the cookie to use as our ISN in the SYN-ACK.
 *
 * secret     the stack's hp__tcp_secret
 * t          the connection as we see it (local = the listener)
 * client_isn the SYN's SEG.SEQ
 * mss        the MSS we would use: the smaller of the peer's MSS option
 *            (or its default, RFC 9293 3.7.1) and our own
 * now_ns     a monotonic clock in ns (the stack's s->now)
 * isn        out: the cookie
 *
 * Returns the MSS the connection will use (the largest table entry not
 * above mss, to announce nothing larger than the peer can take), or
 * -EINVAL when mss is below the smallest entry (536): then no cookie is
 * possible and the SYN is dropped.
 */
int hp__tcp_cookie_make(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                        uint32_t client_isn, uint32_t mss, uint64_t now_ns, uint32_t *isn);

/* What a cookie carries beside the MSS: what the connection negotiates. */
struct hp__tcp_cookie_opts {
    bool ts;            /* timestamps (without them, none of the rest) */
    bool ws;            /* window scaling, with the peer's shift: */
    uint8_t snd_wscale; /* 0-14 */
    bool sack;          /* SACK-permitted both ways */
    bool ecn;           /* ECN agreed */
};

#define HP__TCP_COOKIE_TS_BITS 6
#define HP__TCP_COOKIE_TS_NOWS 15u

/**
 * The TSval of a cookie SYN-ACK: ts_now (our timestamp clock for the
 * connection) with its low HP__TCP_COOKIE_TS_BITS bits replaced by o's
 * window shift, SACK and ECN bits, and never above ts_now (modulo 2^32).
 * o->ts must be set (a cookie without timestamps carries no options).
 */
uint32_t hp__tcp_cookie_tsval(uint32_t ts_now, const struct hp__tcp_cookie_opts *o);

/**
 * What the final ACK's TSecr (our cookie TSval echoed) says: fills o with
 * ts set and the window scaling, SACK and ECN bits. A shift of 15 means no
 * window scaling; anything else above 14 (only forged) is taken as 14,
 * the largest RFC 7323 2.3 allows.
 */
void hp__tcp_cookie_ts_decode(uint32_t tsecr, struct hp__tcp_cookie_opts *o);

/**
 * Check the ACK that completes a cookie handshake.
 *
 * seg_seq, seg_ack  the ACK's SEG.SEQ and SEG.ACK as received (client ISN
 *                   + 1 and cookie + 1)
 * now_ns            the same clock as at hp__tcp_cookie_make
 *
 * Returns the MSS encoded in the cookie, or -EACCES when the cookie is not
 * one of ours for this tuple and client ISN in the current or the previous
 * 64-second slot (wrong secret, other tuple, expired, or forged).
 * On success the connection's IRS is seg_seq - 1 and ISS is seg_ack - 1.
 */
int hp__tcp_cookie_check(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                         uint32_t seg_seq, uint32_t seg_ack, uint64_t now_ns);

/* RFC 7323 2.2: the smallest window shift that lets a receive buffer of
 * rcvbuf bytes be offered whole (0 with no_ws). A connection's
 * (hp__tcp_conn_attach) and its cookie SYN-ACK's, which must agree. */
static inline uint8_t hp__tcp_rcv_wscale(uint32_t rcvbuf, bool no_ws)
{
    uint8_t ws = 0;
    if (!no_ws)
        while (ws < 14 && (rcvbuf >> ws) > 65535u)
            ws++;
    return ws;
}

#endif
