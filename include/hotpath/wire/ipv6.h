/* SPDX-License-Identifier: BSD-3-Clause */
/* IPv6 header view (RFC 8200) with a bounded walk of the extension headers: check, accessors, parse, emit, and address helpers. */
#ifndef HOTPATH_WIRE_IPV6_H
#define HOTPATH_WIRE_IPV6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The fixed header and its chain of extension headers are checked once
 * (hp_ipv6_check or hp_ipv6_parse). Reassembly, option processing (Router
 * Alert...) and ICMPv6 Parameter Problem replies are the net layer's.
 *
 * Nothing here allocates, keeps state, or holds on to pkt or out after it
 * returns: the caller owns every buffer before and after each call, and all
 * functions are safe to call from any thread.
 */

#define HP_IPV6_HDR_LEN      40u /**< the fixed header */
#define HP_IPV6_FRAG_HDR_LEN 8u  /**< the Fragment header (RFC 8200 section 4.5) */
/** The most extension headers check walks before giving up (see hp_ipv6_check). */
#define HP_IPV6_MAX_EXT_HDRS 16u

/* Next Header values (IANA) of the extension headers (ICMPv6, TCP and UDP: hotpath/common.h). */
#define HP_IPPROTO_HOPOPTS  0  /**< Hop-by-Hop Options (RFC 8200 section 4.3) */
#define HP_IPPROTO_ROUTING  43 /**< Routing (RFC 8200 section 4.4) */
#define HP_IPPROTO_FRAGMENT 44 /**< Fragment (RFC 8200 section 4.5) */
#define HP_IPPROTO_ESP      50 /**< Encapsulating Security Payload (RFC 4303) */
#define HP_IPPROTO_AH       51 /**< Authentication Header (RFC 4302) */
#define HP_IPPROTO_NONE     59 /**< No Next Header (RFC 8200 section 4.7) */
#define HP_IPPROTO_DSTOPTS  60 /**< Destination Options (RFC 8200 section 4.6) */

/**
 * An IPv6 header, parsed or to emit. Addresses are as on the wire; the
 * other fields are host order.
 *
 * src, dst       addresses.
 * next_header    parse: the protocol after the extension headers (TCP, UDP,
 *                ICMPv6, HP_IPPROTO_NONE, or any number the walk does not
 *                treat as an extension header). For a fragment that is not
 *                atomic, HP_IPPROTO_FRAGMENT: what follows is a piece of the
 *                datagram, to reassemble before parsing it.
 *                emit: written as the fixed header's Next Header, as given.
 * hop_limit, traffic_class  as in the fixed header.
 * flow_label     20 bits.
 * payload_len    the fixed header's Payload Length: extension headers
 *                included, trailing link-layer padding excluded.
 * l4_off         parse: offset from the IPv6 header's first byte to the
 *                upper-layer header (or, for a non-atomic fragment, to the
 *                fragment's data); 40 + payload_len - l4_off bytes follow it.
 * has_frag       parse: a Fragment header was walked (atomic or not).
 * frag_off       Fragment Offset in bytes (a multiple of 8).
 * mf             the M flag: more fragments follow.
 * frag_id        Identification.
 * unfrag_len     bytes before the Fragment header (fixed header included):
 *                the per-fragment headers reassembly keeps from the first
 *                fragment (RFC 8200 section 4.5).
 * frag_next      the Fragment header's own Next Header.
 * has_hbh        parse: a Hop-by-Hop Options header was walked (its options
 *                are checked but not acted upon: Router Alert is left to the
 *                stack, which may look at the header again).
 * The fragment fields are zero when has_frag is false.
 */
struct hp_ipv6_repr {
    uint8_t src[16], dst[16];
    uint8_t next_header, hop_limit, traffic_class;
    uint32_t flow_label;
    uint16_t payload_len;
    uint16_t l4_off;
    bool has_frag;
    uint16_t frag_off;
    bool mf;
    uint32_t frag_id;
    uint16_t unfrag_len;
    uint8_t frag_next;
    bool has_hbh;
};

/**
 * Validate a received packet once: the fixed header and the chain of
 * extension headers up to the upper layer. Afterwards the accessors below
 * are safe on (pkt, len). Everything parse checks.
 *
 * The walk (RFC 8200 section 4) goes through Hop-by-Hop Options (only right
 * after the fixed header), Destination Options, Routing, Fragment and
 * Authentication headers, each required to lie within Payload Length. It
 * stops at an upper-layer protocol or No Next Header (bytes after that are
 * ignored, section 4.7), and at a Fragment header that is not atomic (offset
 * or M set): what follows it is fragment data. An atomic fragment (offset 0,
 * M 0, RFC 6946) is walked through as if the header were absent.
 *
 * @param pkt  the first byte of the IPv6 header, any alignment.
 * @param len  bytes available from pkt; bytes past 40 + Payload Length
 *             (link-layer padding) are allowed and ignored.
 * @return 0, or a negative reason:
 *   -HP_WIRE_TRUNCATED    len < 40, or 40 + Payload Length > len;
 *   -HP_WIRE_BAD_VERSION  version is not 6;
 *   -HP_WIRE_UNSUPPORTED  a jumbogram (Payload Length 0 and a Hop-by-Hop
 *                         header with a Jumbo Payload option, RFC 2675); ESP
 *                         (not decrypted here); a Routing header with
 *                         Segments Left non-zero (we route no type, RFC 8200
 *                         section 4.4); a second Fragment header; more than
 *                         HP_IPV6_MAX_EXT_HDRS extension headers (a local
 *                         limit of the kind RFC 8883 anticipates);
 *   -HP_WIRE_BAD_OPTION   an extension header or an option running past its
 *                         bounds; an option whose type's two high-order bits
 *                         are not 00 ("skip") and which we do not know (RFC
 *                         8200 section 4.2); a Jumbo Payload option with a
 *                         non-zero Payload Length (RFC 2675 section 3);
 *   -HP_WIRE_BAD_FIELD    a Hop-by-Hop header that is not the first (RFC 8200
 *                         section 4.1); a type 0 Routing header with Segments
 *                         Left non-zero (RFC 5095 section 3: RH0 is
 *                         deprecated; with Segments Left 0 it is ignored like
 *                         any unrecognised type);
 *   -HP_WIRE_BAD_LENGTH   a fragment with M set whose data is not a multiple
 *                         of 8 bytes, or one that would reassemble to more
 *                         than 65,535 bytes of payload (RFC 8200 section 4.5);
 *                         an Authentication header shorter than 12 bytes or
 *                         not a multiple of 8 (RFC 4302 section 2.2);
 *   -HP_WIRE_BAD_ADDRESS  a multicast source address (RFC 4291 section 2.7).
 */
HP_API int hp_ipv6_check(const void *pkt, size_t len);

/**
 * Check (as hp_ipv6_check) and read the header and what the walk found.
 * @param r  filled on success; unspecified on failure.
 * @return 0 or the negative reasons of hp_ipv6_check.
 */
HP_API int hp_ipv6_parse(const void *pkt, size_t len, struct hp_ipv6_repr *r);

/** Bytes hp_ipv6_emit writes: always HP_IPV6_HDR_LEN (40). */
HP_API size_t hp_ipv6_repr_len(const struct hp_ipv6_repr *r);

/**
 * Write the 40-byte fixed header at out: r->next_header and r->payload_len
 * as given (the caller writes any extension headers and the payload after
 * it, and counts them in payload_len). The l4_off and fragment fields are
 * ignored.
 *
 * @param out  any alignment; cap bytes writable.
 * @return 40, or (nothing written) -HP_WIRE_NO_SPACE when cap < 40, or
 *         -HP_WIRE_BAD_FIELD when r->flow_label does not fit 20 bits.
 */
HP_API int hp_ipv6_emit(const struct hp_ipv6_repr *r, void *out, size_t cap);

/**
 * Write a fixed header followed by a Fragment header (48 bytes), for
 * fragmenting on output (RFC 8200 section 4.5): the fixed header's Next
 * Header is HP_IPPROTO_FRAGMENT and its Payload Length r->payload_len, which
 * counts the 8-byte Fragment header and the fragment's data. The Fragment
 * header holds r->frag_next, r->frag_off, r->mf and r->frag_id, reserved
 * fields zero. r->next_header, l4_off, has_frag, unfrag_len and has_hbh are
 * ignored.
 *
 * @return 48, or (nothing written) -HP_WIRE_NO_SPACE when cap < 48,
 *         -HP_WIRE_BAD_FIELD when flow_label does not fit 20 bits or
 *         frag_off is not a multiple of 8, -HP_WIRE_BAD_LENGTH when
 *         payload_len < 8.
 */
HP_API int hp_ipv6_emit_frag(const struct hp_ipv6_repr *r, void *out, size_t cap);

/* ---- Accessors of the fixed header: valid once hp_ipv6_check(pkt, len)
 * returned 0 (host order) ------------------------------------------------ */

/** Traffic Class (DSCP and ECN, RFC 8200 section 7). */
static inline uint8_t hp_ipv6_traffic_class(const void *pkt)
{
    return (uint8_t)(hp_get_be32(pkt) >> 20);
}
/** Flow Label (20 bits, RFC 6437). */
static inline uint32_t hp_ipv6_flow_label(const void *pkt)
{
    return hp_get_be32(pkt) & 0xFFFFFu;
}
/** Payload Length: bytes after the fixed header, extension headers included. */
static inline uint16_t hp_ipv6_payload_len(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 4);
}
/** The fixed header's Next Header (the first extension header, if any). */
static inline uint8_t hp_ipv6_next_header(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 6);
}
/** Hop Limit. */
static inline uint8_t hp_ipv6_hop_limit(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 7);
}
/** Source address (16 bytes). */
static inline const uint8_t *hp_ipv6_src_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 8;
}
/** Destination address (16 bytes). */
static inline const uint8_t *hp_ipv6_dst_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 24;
}

/* ---- Addresses (16 bytes, network order) ------------------------------ */

/** ff00::/8 (RFC 4291 section 2.7). */
static inline bool hp_ipv6_is_multicast(const uint8_t a[16])
{
    return a[0] == 0xFF;
}
/** fe80::/10, link-local unicast (RFC 4291 section 2.5.6). */
static inline bool hp_ipv6_is_link_local(const uint8_t a[16])
{
    return a[0] == 0xFE && (a[1] & 0xC0u) == 0x80u;
}
/** :: (RFC 4291 section 2.5.2). */
static inline bool hp_ipv6_is_unspecified(const uint8_t a[16])
{
    uint8_t acc = 0;
    for (int i = 0; i < 16; i++)
        acc |= a[i];
    return acc == 0;
}
/** ::1 (RFC 4291 section 2.5.3). */
static inline bool hp_ipv6_is_loopback(const uint8_t a[16])
{
    uint8_t acc = 0;
    for (int i = 0; i < 15; i++)
        acc |= a[i];
    return acc == 0 && a[15] == 1;
}

/**
 * The solicited-node multicast address of addr (RFC 4291 section 2.7.1):
 * ff02::1:ff00:0/104 followed by addr's low 24 bits. out may alias addr.
 */
static inline void hp_ipv6_solicited_node(const uint8_t addr[16], uint8_t out[16])
{
    uint8_t low[3] = {addr[13], addr[14], addr[15]};
    static const uint8_t prefix[13] = {0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xFF};
    memcpy(out, prefix, 13);
    memcpy(out + 13, low, 3);
}

/**
 * The Ethernet destination for an IPv6 multicast address (RFC 2464 section
 * 7): 33:33 followed by the address's last four bytes.
 */
static inline void hp_ipv6_mcast_mac(const uint8_t addr[16], uint8_t mac[6])
{
    mac[0] = 0x33;
    mac[1] = 0x33;
    memcpy(mac + 2, addr + 12, 4);
}

/**
 * The link-local address fe80::/64 with the modified EUI-64 interface
 * identifier of a MAC address (RFC 4291 section 2.5.1 and appendix A,
 * RFC 2464 section 4): ff:fe inserted in the middle, universal/local bit
 * inverted.
 */
static inline void hp_ipv6_eui64_link_local(const uint8_t mac[6], uint8_t out[16])
{
    memset(out, 0, 16);
    out[0] = 0xFE;
    out[1] = 0x80;
    out[8] = (uint8_t)(mac[0] ^ 0x02u);
    out[9] = mac[1];
    out[10] = mac[2];
    out[11] = 0xFF;
    out[12] = 0xFE;
    out[13] = mac[3];
    out[14] = mac[4];
    out[15] = mac[5];
}

#ifdef __cplusplus
}
#endif
#endif
