/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP datagram view (RFC 768, RFC 8200 section 8.1): check, accessors, parse and emit. */
#ifndef HOTPATH_WIRE_UDP_H
#define HOTPATH_WIRE_UDP_H

#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>
#include <hotpath/wire/l4.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HP_UDP_HDR_LEN 8u

/**
 * A UDP datagram, parsed or to emit.
 *
 * len          the header's length field (header + payload). Filled by parse;
 *              emit ignores it and writes HP_UDP_HDR_LEN + payload_len.
 * payload      after parse, points into the parsed datagram (the caller's
 *              buffer; valid as long as it is). For emit, the bytes to copy.
 * payload_len  from the length field, not from the buffer: bytes past the
 *              length field (link-layer padding) are not payload.
 */
struct hp_udp_repr {
    uint16_t src_port, dst_port;
    uint16_t len;
    const uint8_t *payload;
    size_t payload_len;
};

/**
 * Validate the lengths of a received datagram, once; afterwards the
 * accessors below are safe on (pkt, len).
 *
 * @param pkt  the UDP header, any alignment.
 * @param len  bytes from pkt to the end of the IP payload.
 * @return 0; -HP_WIRE_TRUNCATED when len < 8 or the length field is larger
 *         than len; -HP_WIRE_BAD_LENGTH when the length field is below 8
 *         (which includes 0, a jumbogram's, RFC 2675, not supported).
 *         Bytes after the length field are allowed and ignored (RFC 768).
 */
HP_API int hp_udp_check(const void *pkt, size_t len);

/* Accessors: valid once hp_udp_check(pkt, len) returned 0. Host order. */
static inline uint16_t hp_udp_src_port(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt);
}
static inline uint16_t hp_udp_dst_port(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 2);
}
/** The length field: header + payload. */
static inline uint16_t hp_udp_len(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 4);
}
/** The checksum field as on the wire (0: none sent, over IPv4). */
static inline uint16_t hp_udp_cksum(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 6);
}
static inline const uint8_t *hp_udp_payload(const void *pkt)
{
    return (const uint8_t *)pkt + HP_UDP_HDR_LEN;
}
static inline size_t hp_udp_payload_len(const void *pkt)
{
    return (size_t)hp_udp_len(pkt) - HP_UDP_HDR_LEN;
}

/**
 * Check and parse a received datagram.
 *
 * @param pkt, len  as for hp_udp_check.
 * @param a         the IP addresses; may be NULL only when flags lacks
 *                  HP_WIRE_VERIFY_CKSUM (then the IPv6 zero-checksum rule
 *                  below is not applied either).
 * @param r         filled on success (unspecified on failure); r->payload
 *                  points into pkt.
 * @param flags     HP_WIRE_VERIFY_CKSUM to verify the checksum over the
 *                  pseudo-header and the length field's bytes.
 * @return 0, or a reason of hp_udp_check, or
 *         -HP_WIRE_BAD_CHECKSUM: the checksum is wrong (with the flag); or a
 *           zero checksum over IPv6, whatever the flag (RFC 8200 section
 *           8.1: IPv6 receivers discard UDP packets with a zero checksum).
 *           A zero checksum over IPv4 means none was sent: accepted (RFC 768).
 *         -HP_WIRE_BAD_FIELD: destination port 0 (reserved, no socket can
 *           be bound to it).
 *         -HP_WIRE_BAD_ADDRESS: the flag is set and a is not valid.
 */
HP_API int hp_udp_parse(const void *pkt, size_t len, const struct hp_l4_addrs *a,
                        struct hp_udp_repr *r, unsigned flags);

/** Bytes hp_udp_emit writes: HP_UDP_HDR_LEN + r->payload_len. */
HP_API size_t hp_udp_repr_len(const struct hp_udp_repr *r);

/**
 * Write the header and copy the payload to out, with the checksum over the
 * pseudo-header of a (a computed 0 is sent as 0xFFFF, RFC 768). r->len is
 * ignored. r->payload may overlap out (it is moved, not copied), and may be
 * NULL when payload_len is 0.
 *
 * @return the bytes written (hp_udp_repr_len(r)); -HP_WIRE_NO_SPACE when cap
 *         is smaller; -HP_WIRE_BAD_LENGTH when the datagram would exceed
 *         65535 bytes; -HP_WIRE_BAD_ADDRESS when a is not valid.
 */
HP_API int hp_udp_emit(const struct hp_udp_repr *r, const struct hp_l4_addrs *a, void *out,
                       size_t cap);

/**
 * As hp_udp_emit, for a payload that is already in place: writes only the
 * 8-byte header at out, then computes the checksum over that header and the
 * r->payload_len bytes that follow it in memory (r->payload is ignored).
 * This lets the stack build a datagram in a buffer without copying it.
 *
 * @param cap  bytes available from out; must cover header and payload.
 * @return as hp_udp_emit.
 */
HP_API int hp_udp_emit_header(const struct hp_udp_repr *r, const struct hp_l4_addrs *a, void *out,
                              size_t cap);

#ifdef __cplusplus
}
#endif
#endif
