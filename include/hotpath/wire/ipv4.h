/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv4 header view (RFC 791): check, accessors, parse and emit, and IPv4 address classes. */
#ifndef HOTPATH_WIRE_IPV4_H
#define HOTPATH_WIRE_IPV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The header of a received datagram is checked once (hp_ipv4_check or
 * hp_ipv4_parse); options are walked for their bounds but not acted upon.
 * Reassembly, routing and the checks that need the stack's addresses are the
 * net layer's.
 *
 * Nothing here allocates, keeps state, or holds on to pkt or out after it
 * returns: the caller owns every buffer before and after each call, and all
 * functions are safe to call from any thread.
 */

#define HP_IPV4_HDR_LEN     20u /**< without options */
#define HP_IPV4_MAX_HDR_LEN 60u /**< IHL 15 */

/* The Protocol field's values: HP_IPPROTO_ICMP, _TCP and _UDP are in
 * hotpath/common.h (every layer names them); the IPv6 extension headers'
 * numbers in ipv6.h. */

/**
 * An IPv4 header, parsed or to emit. Addresses are as on the wire; the
 * other fields are host order.
 *
 * src, dst     addresses.
 * proto        the Protocol field (HP_IPPROTO_*).
 * ttl          time to live.
 * dscp_ecn     the whole second byte (DSCP in the top 6 bits, ECN in the low 2).
 * ident        Identification.
 * df, mf       Don't Fragment, More Fragments.
 * frag_off     Fragment Offset in bytes (the field times 8): 0..65528, a
 *              multiple of 8.
 * payload_len  Total Length minus the header: bytes after the header that
 *              belong to the datagram (not trailing link-layer padding).
 * hdr_len      parse: the header's length with options (IHL * 4, 20..60);
 *              emit ignores it and writes a 20-byte header without options.
 */
struct hp_ipv4_repr {
    uint8_t src[4], dst[4];
    uint8_t proto, ttl, dscp_ecn;
    uint16_t ident;
    bool df, mf;
    uint16_t frag_off;
    uint16_t payload_len;
    uint8_t hdr_len;
};

/**
 * Validate a received datagram's header, once; afterwards the accessors
 * below are safe on (pkt, len). Everything parse checks except the
 * checksum.
 *
 * @param pkt  the first byte of the IPv4 header, any alignment.
 * @param len  bytes available from pkt. Bytes past Total Length (Ethernet
 *             padding of a short datagram) are allowed and are not payload.
 * @return 0, or a negative reason, checked in this order:
 *   -HP_WIRE_TRUNCATED    len < 20;
 *   -HP_WIRE_BAD_VERSION  version is not 4;
 *   -HP_WIRE_BAD_LENGTH   IHL < 5;
 *   -HP_WIRE_TRUNCATED    IHL * 4 > len;
 *   -HP_WIRE_BAD_LENGTH   Total Length < IHL * 4;
 *   -HP_WIRE_TRUNCATED    Total Length > len;
 *   -HP_WIRE_BAD_OPTION   an option that runs past the header, or whose
 *                         length is below 2 (RFC 791 section 3.1, "Options").
 *                         Options are otherwise ignored;
 *   -HP_WIRE_BAD_LENGTH   a fragment with More Fragments set whose data is
 *                         not a multiple of 8 bytes (the next fragment's
 *                         offset could not say where it starts), or a
 *                         fragment whose offset plus length would make the
 *                         reassembled datagram longer than 65,535 bytes
 *                         (Total Length is 16 bits; "ping of death");
 *   -HP_WIRE_BAD_ADDRESS  a source address that is multicast (224.0.0.0/4)
 *                         or the limited broadcast 255.255.255.255: a source
 *                         is a unicast address (RFC 1122 section 3.2.1.3,
 *                         RFC 1812 section 5.3.7).
 * The reserved flag bit is ignored on receipt (written as 0 by emit).
 */
HP_API int hp_ipv4_check(const void *pkt, size_t len);

/**
 * Check (as hp_ipv4_check) and read the header.
 *
 * @param r      filled on success; unspecified on failure.
 * @param flags  0, or HP_WIRE_VERIFY_CKSUM to verify the header checksum
 *               (RFC 791 section 3.1) after the other checks.
 * @return 0, the negative reasons of hp_ipv4_check, or -HP_WIRE_BAD_CHECKSUM.
 */
HP_API int hp_ipv4_parse(const void *pkt, size_t len, struct hp_ipv4_repr *r, unsigned flags);

/** Bytes hp_ipv4_emit writes: always HP_IPV4_HDR_LEN (20). */
HP_API size_t hp_ipv4_repr_len(const struct hp_ipv4_repr *r);

/**
 * Write a 20-byte header without options at out, its Total Length
 * 20 + r->payload_len and its checksum computed. The payload is the
 * caller's, after the header.
 *
 * @param out  any alignment; cap bytes writable.
 * @return 20, or (nothing written):
 *   -HP_WIRE_NO_SPACE    cap < 20;
 *   -HP_WIRE_BAD_LENGTH  r->payload_len > 65515 (Total Length is 16 bits);
 *   -HP_WIRE_BAD_FIELD   r->frag_off not a multiple of 8 or above 65528.
 */
HP_API int hp_ipv4_emit(const struct hp_ipv4_repr *r, void *out, size_t cap);

/* ---- Accessors: valid once hp_ipv4_check(pkt, len) returned 0 --------- */

/** The IHL field: header length in 32-bit words (5..15). */
static inline uint8_t hp_ipv4_ihl(const void *pkt)
{
    return (uint8_t)(hp_get_u8(pkt) & 0x0Fu);
}
/** Header length in bytes (20..60). */
static inline size_t hp_ipv4_hdr_len(const void *pkt)
{
    return (size_t)hp_ipv4_ihl(pkt) * 4;
}
/** The second byte: DSCP (top 6 bits) and ECN (low 2 bits). */
static inline uint8_t hp_ipv4_dscp_ecn(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 1);
}
/** Total Length: header and payload, <= len. */
static inline uint16_t hp_ipv4_total_len(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 2);
}
/** Bytes of payload after the header (Total Length minus the header). */
static inline size_t hp_ipv4_payload_len(const void *pkt)
{
    return hp_ipv4_total_len(pkt) - hp_ipv4_hdr_len(pkt);
}
/** Identification. */
static inline uint16_t hp_ipv4_ident(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 4);
}
/** Don't Fragment. */
static inline bool hp_ipv4_df(const void *pkt)
{
    return (hp_get_u8((const uint8_t *)pkt + 6) & 0x40u) != 0;
}
/** More Fragments. */
static inline bool hp_ipv4_mf(const void *pkt)
{
    return (hp_get_u8((const uint8_t *)pkt + 6) & 0x20u) != 0;
}
/** Fragment Offset in bytes. */
static inline uint16_t hp_ipv4_frag_off(const void *pkt)
{
    return (uint16_t)((hp_get_be16((const uint8_t *)pkt + 6) & 0x1FFFu) * 8u);
}
/** True for a fragment of a larger datagram (More Fragments or a non-zero offset). */
static inline bool hp_ipv4_is_fragment(const void *pkt)
{
    return (hp_get_be16((const uint8_t *)pkt + 6) & 0x3FFFu) != 0;
}
/** Time to Live. */
static inline uint8_t hp_ipv4_ttl(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 8);
}
/** Protocol (HP_IPPROTO_*). */
static inline uint8_t hp_ipv4_proto(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 9);
}
/** The checksum field as stored (network byte order, for memcmp-style use). */
static inline uint16_t hp_ipv4_cksum_raw(const void *pkt)
{
    uint16_t v;
    memcpy(&v, (const uint8_t *)pkt + 10, 2);
    return v;
}
/** Source address (4 bytes, network order). */
static inline const uint8_t *hp_ipv4_src_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 12;
}
/** Destination address (4 bytes, network order). */
static inline const uint8_t *hp_ipv4_dst_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 16;
}
/** The first payload byte; hp_ipv4_payload_len(pkt) bytes follow. */
static inline const uint8_t *hp_ipv4_payload(const void *pkt)
{
    return (const uint8_t *)pkt + hp_ipv4_hdr_len(pkt);
}

/* ---- Addresses (4 bytes, network order) -------------------------------- */

/** 224.0.0.0/4 (RFC 5771). */
static inline bool hp_ipv4_is_multicast(const uint8_t a[4])
{
    return (a[0] & 0xF0u) == 0xE0u;
}
/** The limited broadcast 255.255.255.255 (RFC 919, RFC 1122 section 3.2.1.3). */
static inline bool hp_ipv4_is_broadcast(const uint8_t a[4])
{
    return (a[0] & a[1] & a[2] & a[3]) == 0xFFu;
}
/** 127.0.0.0/8 (RFC 1122 section 3.2.1.3 (g)). */
static inline bool hp_ipv4_is_loopback(const uint8_t a[4])
{
    return a[0] == 127;
}
/** 0.0.0.0 ("this host", a source only while it has no address). */
static inline bool hp_ipv4_is_unspecified(const uint8_t a[4])
{
    return (a[0] | a[1] | a[2] | a[3]) == 0;
}

#ifdef __cplusplus
}
#endif
#endif
