/* SPDX-License-Identifier: BSD-3-Clause */
/* The Internet checksum (RFC 1071): raw sums, incremental updates and protocol helpers. */
#ifndef HOTPATH_CKSUM_H
#define HOTPATH_CKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <hotpath/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Conventions
 *
 * A "partial sum" is a 32-bit value congruent (mod 0xFFFF) to the one's
 * complement sum of 16-bit words as they sit in memory. Because the one's
 * complement sum is independent of byte order (RFC 1071 section 2(B)), the
 * folded result can be stored into a header with memcpy and is then in
 * network byte order, on little- and big-endian hosts alike.
 *
 * Partial sums may be added together (with hp_cksum_add) as long as every
 * block but the last has an even length; hp_cksum_partial_iov handles blocks
 * of any length.
 *
 * No function here reads outside [buf, buf + len), at any alignment, and
 * none allocates or keeps state. All are safe to call from any thread.
 */

/**
 * Add the 16-bit one's complement sum of buf[0..len) to a partial sum.
 *
 * @param buf  any alignment; may be NULL when len is 0.
 * @param len  any length, including 0 and odd lengths; an odd last byte is
 *             summed as the low-address byte of a zero-padded word.
 * @param sum  a partial sum to add to (0 to start).
 * @return the new partial sum (never needs more than 32 bits).
 */
HP_API uint32_t hp_cksum_partial(const void *buf, size_t len, uint32_t sum);

/**
 * Copy src[0..len) to dst and add the bytes' sum to a partial sum, in one
 * pass where the CPU allows (the checksum variant in use has a fused copy:
 * each vector loaded once, stored and summed), else a sum then memcpy. The
 * sum is hp_cksum_partial(src, len, sum): it is src's, pairing bytes from
 * src's first, whatever dst's alignment.
 *
 * @param dst  len bytes, not overlapping src; any alignment.
 * @param src  any alignment; either may be NULL when len is 0.
 * @return the new partial sum.
 */
HP_API uint32_t hp_cksum_copy(void *dst, const void *src, size_t len, uint32_t sum);

/**
 * Add partial sums. Both are partial sums of even-length data (or the first
 * may cover odd-length data if it is the last block).
 */
static inline uint32_t hp_cksum_add(uint32_t a, uint32_t b)
{
    uint32_t s = a + b;
    return s + (s < a); /* end-around carry */
}

/**
 * Fold a partial sum to 16 bits and complement it: the value to store in a
 * checksum field with memcpy (it is then in network byte order).
 */
static inline uint16_t hp_cksum_fold(uint32_t sum)
{
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    return (uint16_t)~sum;
}

/**
 * The partial sum (as hp_cksum_partial() returns it) of 16-bit words given as
 * host-order values and added up in acc: header fields summed as they are
 * written, instead of read back. A load of bytes that narrower stores have
 * just written waits for those stores to reach the cache (store-to-load
 * forwarding fails when a load spans several stores), and on the transmit
 * paths that wait cost more than the sum itself (docs/experiments.md).
 * acc may hold up to 2^48 such words without overflow.
 */
static inline uint32_t hp_cksum_from_host16(uint64_t acc)
{
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
    acc = (acc & 0xFFFF) + (acc >> 16);
    acc = (acc & 0xFFFF) + (acc >> 16);
    acc = (acc & 0xFFFF) + (acc >> 16);
    return hp_hton16((uint16_t)acc);
}

/** hp_cksum_fold(hp_cksum_partial(buf, len, 0)). */
HP_API uint16_t hp_cksum(const void *buf, size_t len);

/**
 * Add the sum of a scatter-gather list to a partial sum. Segments may have
 * any length, including odd and zero lengths anywhere in the list: a segment
 * that starts at an odd offset of the whole has its bytes paired with its
 * neighbours' as if the data were contiguous.
 *
 * @param iov     the segments; may be NULL when iovcnt is 0.
 * @param iovcnt  number of segments; a negative count is treated as 0.
 * @return the new partial sum.
 */
HP_API uint32_t hp_cksum_partial_iov(const struct iovec *iov, int iovcnt, uint32_t sum);

/**
 * RFC 1624 incremental update (equation 3: HC' = ~(~HC + ~m + m')) of a
 * checksum field after a 16-bit field of the covered data changed.
 * All three values are as they sit in memory (network byte order), read with
 * memcpy. Equation 3 never yields -0 where a full recomputation gives +0
 * (RFC 1624 section 3), so the result equals a full recomputation, with one
 * exception the update cannot see: when the covered data becomes all zeros,
 * the correct checksum is 0xFFFF but the update returns 0x0000, which a
 * receiver rejects. Only data that can be all zeros hits this (an ICMPv4 echo
 * reply with zero identifier, sequence number and payload, say): recompute
 * such messages instead.
 *
 * For a UDP checksum the caller applies RFC 768's rule itself: a result of 0
 * is sent as 0xFFFF, and a zero UDP checksum over IPv4 (none was computed)
 * is left alone rather than updated.
 */
HP_API uint16_t hp_cksum_update16(uint16_t cksum, uint16_t old_val, uint16_t new_val);

/** As hp_cksum_update16, for a 32-bit field (an IPv4 address, a sequence number). */
HP_API uint16_t hp_cksum_update32(uint16_t cksum, uint32_t old_val, uint32_t new_val);

/* ---- Protocol helpers ------------------------------------------------- */

/** Outcome of verifying a received checksum. */
enum hp_cksum_result {
    HP_CKSUM_GOOD = 0, /**< the checksum is correct */
    HP_CKSUM_BAD = 1,  /**< the checksum is wrong: drop and count */
    HP_CKSUM_NONE = 2, /**< UDP over IPv4 with checksum 0: none was sent */
};

/**
 * IPv4 header checksum (RFC 791 section 3.1): the value to store in the
 * header's checksum field, computed as if that field were zero.
 *
 * @param hdr  the header, len bytes long (20..60, a multiple of 4; the caller
 *             has validated IHL).
 * @return the checksum, in network byte order as stored in memory.
 */
HP_API uint16_t hp_cksum_ipv4_hdr(const void *hdr, size_t len);

/** True when the IPv4 header's checksum (including its own field) is correct. */
HP_API bool hp_cksum_ipv4_hdr_ok(const void *hdr, size_t len);

/**
 * Partial sum of the IPv4 pseudo-header (RFC 768, RFC 9293 section 3.1).
 * @param src, dst  4-byte addresses in network byte order (any alignment).
 * @param proto     IP protocol number.
 * @param l4_len    length of the transport header plus payload, host order.
 */
HP_API uint32_t hp_cksum_pseudo_ipv4(const void *src, const void *dst, uint8_t proto,
                                     uint16_t l4_len);

/**
 * Partial sum of the IPv6 pseudo-header (RFC 8200 section 8.1).
 * @param src, dst  16-byte addresses; dst is the final destination (the
 *                  last address of a routing header, if present).
 * @param next      upper-layer protocol number (not an extension header).
 * @param l4_len    upper-layer packet length, host order.
 */
HP_API uint32_t hp_cksum_pseudo_ipv6(const void *src, const void *dst, uint8_t next,
                                     uint32_t l4_len);

/**
 * Checksum of a transport segment for its header field, computed as if the
 * field held zero, whatever it holds now.
 *
 * @param pseudo   a pseudo-header partial sum (0 for ICMPv4).
 * @param seg      the transport header and payload, len bytes.
 * @param csum_off offset of the 16-bit checksum field in seg (UDP 6, TCP 16,
 *                 ICMP 2); must be even and csum_off + 2 <= len.
 * @return the value to store with memcpy (network byte order).
 */
HP_API uint16_t hp_cksum_l4(uint32_t pseudo, const void *seg, size_t len, size_t csum_off);

/**
 * UDP checksum over IPv4 or IPv6: as hp_cksum_l4 with csum_off 6, except that
 * a computed 0 is sent as 0xFFFF (RFC 768; RFC 8200 section 8.1), since 0
 * means "no checksum".
 */
HP_API uint16_t hp_cksum_udp4(const void *src, const void *dst, const void *udp, size_t len);
HP_API uint16_t hp_cksum_udp6(const void *src, const void *dst, const void *udp, size_t len);
/** TCP checksum (RFC 9293 section 3.1) over IPv4 or IPv6. */
HP_API uint16_t hp_cksum_tcp4(const void *src, const void *dst, const void *tcp, size_t len);
HP_API uint16_t hp_cksum_tcp6(const void *src, const void *dst, const void *tcp, size_t len);
/** ICMPv4 checksum (RFC 792): over the message alone, no pseudo-header. */
HP_API uint16_t hp_cksum_icmp4(const void *msg, size_t len);
/** ICMPv6 checksum (RFC 4443 section 2.3): with the IPv6 pseudo-header. */
HP_API uint16_t hp_cksum_icmp6(const void *src, const void *dst, const void *msg, size_t len);

/**
 * Verify a received UDP datagram (len >= 8). Over IPv4 a zero checksum means
 * none was computed: HP_CKSUM_NONE. Over IPv6 a zero checksum is invalid
 * (RFC 8200 section 8.1): HP_CKSUM_BAD.
 */
HP_API enum hp_cksum_result hp_cksum_udp4_verify(const void *src, const void *dst, const void *udp,
                                                 size_t len);
HP_API enum hp_cksum_result hp_cksum_udp6_verify(const void *src, const void *dst, const void *udp,
                                                 size_t len);
/** Verify a received TCP segment (len >= 20). */
HP_API enum hp_cksum_result hp_cksum_tcp4_verify(const void *src, const void *dst, const void *tcp,
                                                 size_t len);
HP_API enum hp_cksum_result hp_cksum_tcp6_verify(const void *src, const void *dst, const void *tcp,
                                                 size_t len);
/** Verify a received ICMPv4 (len >= 4) or ICMPv6 message. */
HP_API enum hp_cksum_result hp_cksum_icmp4_verify(const void *msg, size_t len);
HP_API enum hp_cksum_result hp_cksum_icmp6_verify(const void *src, const void *dst, const void *msg,
                                                  size_t len);

/* ---- Implementation choice -------------------------------------------- */

/**
 * Name of the variant hp_cksum_partial uses: "scalar", "avx2", "avx512" or
 * "neon". Chosen once at start-up from the CPU's features, or forced by the
 * environment variable HP_CKSUM_IMPL (see docs/knobs.md).
 */
HP_API const char *hp_cksum_impl(void);

/**
 * Switch the variant (for tests and benchmarks). Not meant to race with
 * checksum calls on other threads (they would use either variant; both give
 * the same result).
 *
 * @return 0, -EINVAL for an unknown name, -ENOTSUP when this CPU or build
 *         lacks it.
 */
HP_API int hp_cksum_set_impl(const char *name);

/**
 * Whether a variant can run here. Fills names[] (up to max) with every
 * variant this build knows; returns how many were written.
 */
HP_API int hp_cksum_impls(const char **names, int max);
HP_API bool hp_cksum_impl_supported(const char *name);

#ifdef __cplusplus
}
#endif
#endif
