/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv4 message view (RFC 792, RFC 1122 section 3.2.2): echo and the error messages, with the quote length rule. */
#ifndef HOTPATH_WIRE_ICMP_H
#define HOTPATH_WIRE_ICMP_H

#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>
#include <hotpath/wire/l4.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HP_ICMP_HDR_LEN 8u

/* Types we handle (RFC 792). */
#define HP_ICMP_ECHO_REPLY    0u
#define HP_ICMP_DEST_UNREACH  3u
#define HP_ICMP_ECHO_REQUEST  8u
#define HP_ICMP_TIME_EXCEEDED 11u
#define HP_ICMP_PARAM_PROBLEM 12u

/* Destination unreachable codes (RFC 792; 6-15 from RFC 1122 3.2.2.1 and RFC 1812 5.2.7.1). */
#define HP_ICMP_UNREACH_NET         0u
#define HP_ICMP_UNREACH_HOST        1u
#define HP_ICMP_UNREACH_PROTO       2u
#define HP_ICMP_UNREACH_PORT        3u
#define HP_ICMP_UNREACH_FRAG_NEEDED 4u /* carries the next-hop MTU (RFC 1191) */
#define HP_ICMP_UNREACH_SRC_ROUTE   5u
#define HP_ICMP_UNREACH_ADMIN       13u /* communication administratively prohibited */

/* Time exceeded codes (RFC 792). */
#define HP_ICMP_TIME_TTL        0u
#define HP_ICMP_TIME_REASSEMBLY 1u

/* The smallest IPv4 header an error quotes; the quote is at least this. */
#define HP_ICMP_MIN_QUOTE 20u

/**
 * An ICMPv4 message, parsed or to emit. The fields that do not belong to the
 * type are zero after parse and ignored by emit.
 *
 * ident, seq    echo request and reply (RFC 792).
 * pointer       parameter problem: the octet of the quoted datagram at fault.
 * next_hop_mtu  destination unreachable, code 4 (RFC 1191 section 4); 0 from
 *               an old router that does not send it.
 * data          echo: the payload. Errors: the quoted datagram, starting
 *               with its IPv4 header. After parse it points into the parsed
 *               message; for emit, the bytes to copy (may overlap output).
 */
struct hp_icmp_repr {
    uint8_t type, code;
    uint16_t ident, seq;
    uint8_t pointer;
    uint16_t next_hop_mtu;
    const uint8_t *data;
    size_t data_len;
};

/**
 * Validate a received message's length once: afterwards the accessors below
 * are safe on (pkt, len). Any type passes.
 *
 * @param pkt  the ICMP header, any alignment.
 * @param len  the IP payload length.
 * @return 0, or -HP_WIRE_TRUNCATED when len < 8.
 */
HP_API int hp_icmp_check(const void *pkt, size_t len);

/* Accessors: valid once hp_icmp_check(pkt, len) returned 0. Host order. */
static inline uint8_t hp_icmp_type(const void *pkt)
{
    return hp_get_u8(pkt);
}
static inline uint8_t hp_icmp_code(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 1);
}
static inline uint16_t hp_icmp_cksum(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 2);
}
/** Echo identifier (meaningful for echo request and reply). */
static inline uint16_t hp_icmp_ident(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 4);
}
/** Echo sequence number. */
static inline uint16_t hp_icmp_seq(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 6);
}
/** Parameter problem pointer. */
static inline uint8_t hp_icmp_pointer(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 4);
}
/** Next-hop MTU of a "fragmentation needed" (RFC 1191 section 4). */
static inline uint16_t hp_icmp_next_hop_mtu(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 6);
}
/** What follows the 8-byte header: echo data or the quoted datagram. */
static inline const uint8_t *hp_icmp_data(const void *pkt)
{
    return (const uint8_t *)pkt + HP_ICMP_HDR_LEN;
}

/**
 * Check and parse a received message.
 *
 * @param flags  HP_WIRE_VERIFY_CKSUM to verify the checksum (RFC 792: over
 *               the whole ICMP message, no pseudo-header).
 * @param r      filled on success (unspecified on failure); r->data points
 *               into pkt.
 * @return 0; -HP_WIRE_TRUNCATED when len < 8, or when an error message
 *         quotes fewer than the 20 bytes of an IPv4 header (RFC 1122
 *         3.2.2: the quote is the IP header and at least 8 data octets; a
 *         datagram with less data is quoted whole);
 *         -HP_WIRE_BAD_CHECKSUM (with the flag); -HP_WIRE_UNSUPPORTED for
 *         types other than echo request and reply, destination unreachable,
 *         time exceeded and parameter problem (RFC 1122 3.2.2: unknown types
 *         MUST be silently discarded). The checksum is verified before the
 *         type is judged. Codes are not judged: the stack maps them.
 */
HP_API int hp_icmp_parse(const void *pkt, size_t len, struct hp_icmp_repr *r, unsigned flags);

/** Bytes hp_icmp_emit writes: 8 + r->data_len. */
HP_API size_t hp_icmp_repr_len(const struct hp_icmp_repr *r);

/**
 * Write the message with its checksum to out, copying r->data (which may
 * overlap out, and may be NULL when data_len is 0). The unused bytes of
 * error messages are written as zero. Any type is written, with the fields
 * of the types above; the second word of other types is zero.
 *
 * @return the bytes written; -HP_WIRE_NO_SPACE when cap is smaller;
 *         -HP_WIRE_BAD_LENGTH when the message would exceed 65515 bytes (an
 *         IPv4 datagram's 65535 minus a 20-byte header).
 */
HP_API int hp_icmp_emit(const struct hp_icmp_repr *r, void *out, size_t cap);

/**
 * How much of an offending datagram of orig_len bytes (its IPv4 header
 * included) an error message should quote: as much as possible while the
 * error datagram stays within 576 bytes (RFC 1812 section 4.3.2.3), which
 * is more than the IP header + 8 octets RFC 792 and RFC 1122 3.2.2 require.
 * Assumes the error's own IPv4 header has no options: min(orig_len,
 * 576 - 20 - 8 = 548).
 */
HP_API size_t hp_icmp_quote_len(size_t orig_len);

#ifdef __cplusplus
}
#endif
#endif
