/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv6 message view (RFC 4443) and Neighbor Discovery messages with their options (RFC 4861). */
#ifndef HOTPATH_WIRE_ICMP6_H
#define HOTPATH_WIRE_ICMP6_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>
#include <hotpath/wire/l4.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HP_ICMP6_HDR_LEN 8u

/* Types (RFC 4443 section 2.1; 133-137 RFC 4861 section 4). */
#define HP_ICMP6_DEST_UNREACH   1u
#define HP_ICMP6_PACKET_TOO_BIG 2u
#define HP_ICMP6_TIME_EXCEEDED  3u
#define HP_ICMP6_PARAM_PROBLEM  4u
#define HP_ICMP6_ECHO_REQUEST   128u
#define HP_ICMP6_ECHO_REPLY     129u
#define HP_NDP_ROUTER_SOLICIT   133u
#define HP_NDP_ROUTER_ADVERT    134u
#define HP_NDP_NEIGHBOR_SOLICIT 135u
#define HP_NDP_NEIGHBOR_ADVERT  136u
#define HP_NDP_REDIRECT         137u

/* Destination unreachable codes (RFC 4443 section 3.1). */
#define HP_ICMP6_UNREACH_NO_ROUTE     0u
#define HP_ICMP6_UNREACH_ADMIN        1u
#define HP_ICMP6_UNREACH_BEYOND_SCOPE 2u
#define HP_ICMP6_UNREACH_ADDR         3u
#define HP_ICMP6_UNREACH_PORT         4u
#define HP_ICMP6_UNREACH_POLICY       5u
#define HP_ICMP6_UNREACH_REJECT_ROUTE 6u
/* Time exceeded codes (RFC 4443 section 3.3). */
#define HP_ICMP6_TIME_HOP_LIMIT  0u
#define HP_ICMP6_TIME_REASSEMBLY 1u
/* Parameter problem codes (RFC 4443 section 3.4). */
#define HP_ICMP6_PARAM_HEADER      0u
#define HP_ICMP6_PARAM_NEXT_HEADER 1u
#define HP_ICMP6_PARAM_OPTION      2u

/* An error quotes at least the offending packet's IPv6 header. */
#define HP_ICMP6_MIN_QUOTE 40u

/**
 * An ICMPv6 message other than Neighbor Discovery, parsed or to emit. The
 * fields that do not belong to the type are zero after parse and ignored by
 * emit.
 *
 * ident, seq  echo request and reply (RFC 4443 section 4).
 * mtu         packet too big (RFC 4443 section 3.2).
 * pointer     parameter problem: the octet of the quoted packet at fault
 *             (RFC 4443 section 3.4).
 * data        echo: the data. Errors: the quoted packet, from its IPv6
 *             header. After parse it points into the parsed message; for
 *             emit, the bytes to copy (may overlap the output).
 */
struct hp_icmp6_repr {
    uint8_t type, code;
    uint16_t ident, seq;
    uint32_t mtu;
    uint32_t pointer;
    const uint8_t *data;
    size_t data_len;
};

/**
 * Validate a received message's length once: afterwards the accessors below
 * (hp_icmp6_* and the NDP ones) are safe on (pkt, len) as long as len covers
 * the fields they read, as each says. Any type passes.
 *
 * @param pkt  the ICMPv6 header, any alignment.
 * @param len  the upper-layer length (IPv6 payload minus extension headers).
 * @return 0, or -HP_WIRE_TRUNCATED when len < 8.
 */
HP_API int hp_icmp6_check(const void *pkt, size_t len);

/* Accessors: valid once hp_icmp6_check(pkt, len) returned 0. Host order. */
static inline uint8_t hp_icmp6_type(const void *pkt)
{
    return hp_get_u8(pkt);
}
static inline uint8_t hp_icmp6_code(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 1);
}
static inline uint16_t hp_icmp6_cksum(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 2);
}
static inline uint16_t hp_icmp6_ident(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 4);
}
static inline uint16_t hp_icmp6_seq(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 6);
}
/** The 32-bit word after the checksum: the MTU of a packet too big, the
 *  pointer of a parameter problem. */
static inline uint32_t hp_icmp6_word(const void *pkt)
{
    return hp_get_be32((const uint8_t *)pkt + 4);
}
/** What follows the 8-byte header: echo data, quoted packet, or NDP body. */
static inline const uint8_t *hp_icmp6_data(const void *pkt)
{
    return (const uint8_t *)pkt + HP_ICMP6_HDR_LEN;
}

/**
 * Check and parse a received message of one of the types 1-4, 128 and 129.
 * Neighbor Discovery (133-137) goes to hp_ndp_parse instead.
 *
 * @param a      the IPv6 addresses (family 6); may be NULL when flags lacks
 *               HP_WIRE_VERIFY_CKSUM.
 * @param flags  HP_WIRE_VERIFY_CKSUM to verify the checksum, which covers
 *               the IPv6 pseudo-header (RFC 4443 section 2.3).
 * @param r      filled on success (unspecified on failure); r->data points
 *               into pkt.
 * @return 0; -HP_WIRE_TRUNCATED when len < 8 or an error message quotes
 *         less than an IPv6 header; -HP_WIRE_BAD_CHECKSUM (with the flag);
 *         -HP_WIRE_BAD_ADDRESS when the flag is set and a is not a valid
 *         family 6; -HP_WIRE_UNSUPPORTED for other types. The checksum is
 *         verified before the type is judged. RFC 4443 2.4(b) asks that an
 *         error of unknown type (below 128) still reach the upper layer that
 *         sent the offending packet: the stack can do that with the
 *         accessors, which hp_icmp6_check made safe.
 */
HP_API int hp_icmp6_parse(const void *pkt, size_t len, const struct hp_l4_addrs *a,
                          struct hp_icmp6_repr *r, unsigned flags);

/** Bytes hp_icmp6_emit writes: 8 + r->data_len. */
HP_API size_t hp_icmp6_repr_len(const struct hp_icmp6_repr *r);

/**
 * Write the message with its checksum (over the pseudo-header of a) to out,
 * copying r->data (which may overlap out, and may be NULL when data_len is
 * 0). The unused word of destination unreachable and time exceeded is
 * written as zero; so is the second word of types not listed above.
 *
 * @return the bytes written; -HP_WIRE_NO_SPACE when cap is smaller;
 *         -HP_WIRE_BAD_LENGTH beyond 65535 bytes (no jumbograms);
 *         -HP_WIRE_BAD_ADDRESS when a is not a valid family 6.
 */
HP_API int hp_icmp6_emit(const struct hp_icmp6_repr *r, const struct hp_l4_addrs *a, void *out,
                         size_t cap);

/**
 * How much of an offending packet of orig_len bytes (IPv6 header included)
 * an error should quote: as much as possible without the error packet
 * exceeding the IPv6 minimum MTU of 1280 bytes (RFC 4443 section 2.4(c)).
 * Assumes the error carries no extension headers: min(orig_len,
 * 1280 - 40 - 8 = 1232).
 */
HP_API size_t hp_icmp6_quote_len(size_t orig_len);

/* ---- Neighbor Discovery (RFC 4861) ------------------------------------- */

/* Option types (RFC 4861 section 4.6). */
#define HP_NDP_OPT_SLL        1u
#define HP_NDP_OPT_TLL        2u
#define HP_NDP_OPT_PREFIX     3u
#define HP_NDP_OPT_REDIRECTED 4u
#define HP_NDP_OPT_MTU        5u

/* Prefix information options kept from one Router Advertisement. */
#define HP_NDP_MAX_PREFIX 4

/**
 * A Neighbor Discovery message, parsed or to emit. Only the fields of its
 * type are meaningful; the others are zero after parse and ignored by emit.
 *
 * type            HP_NDP_ROUTER_SOLICIT ... HP_NDP_REDIRECT.
 * target          NS, NA and Redirect: the target address.
 * router, solicited, override  NA flags R, S, O (RFC 4861 section 4.4).
 * cur_hop_limit, managed, other, router_lifetime, reachable_time,
 * retrans_timer   RA fields (section 4.2); times in seconds (lifetime) and
 *                 milliseconds (the timers) as on the wire.
 * has_sll, sll    Source link-layer address option (RS, RA, NS): a 6-byte
 *                 Ethernet address. An option of another length (another link
 *                 type) is not recorded.
 * has_tll, tll    Target link-layer address option (NA, Redirect).
 * has_mtu, mtu    MTU option (RA).
 * n_prefix, prefix  Prefix information options (RA, section 4.6.2), at most
 *                 HP_NDP_MAX_PREFIX; parse ignores any further ones. len is
 *                 the prefix length in bits, onlink and autonomous the L and
 *                 A flags, valid and preferred the lifetimes in seconds.
 * redirect_dst    Redirect: the Destination Address field.
 *
 * Options that do not belong to the type (a prefix in an NS, say) are
 * ignored by parse (RFC 4861 sections 6.1 and 7.1) and not written by emit.
 * The Redirected Header option of a Redirect is skipped. The other RA flags
 * (Home Agent, router preference of RFC 4191, proxy) are not kept, and emit
 * writes them as zero.
 */
struct hp_ndp_repr {
    uint8_t type;
    uint8_t target[16];
    bool router, solicited, override;
    uint8_t cur_hop_limit;
    bool managed, other;
    uint16_t router_lifetime;
    uint32_t reachable_time, retrans_timer;
    bool has_sll, has_tll;
    uint8_t sll[6], tll[6];
    bool has_mtu;
    uint32_t mtu;
    int n_prefix;
    struct hp_ndp_prefix {
        uint8_t len;
        bool onlink, autonomous;
        uint32_t valid, preferred;
        uint8_t prefix[16];
    } prefix[HP_NDP_MAX_PREFIX];
    uint8_t redirect_dst[16];
};

/**
 * Check, validate and parse a received Neighbor Discovery message by the
 * rules of RFC 4861: sections 6.1.1 (RS), 6.1.2 (RA), 7.1.1 (NS), 7.1.2 (NA)
 * and 8.1 (Redirect).
 *
 * @param msg        the ICMPv6 message, any alignment.
 * @param len        its length (the upper-layer length).
 * @param a          the IPv6 source and destination (family 6); required,
 *                   the rules depend on them.
 * @param hop_limit  the IPv6 header's Hop Limit.
 * @param r          filled on success (unspecified on failure).
 * @param flags      HP_WIRE_VERIFY_CKSUM to verify the checksum.
 * @return 0, or (in the order checked):
 *   -HP_WIRE_TRUNCATED     len < 8.
 *   -HP_WIRE_UNSUPPORTED   the type is not 133-137.
 *   -HP_WIRE_BAD_ADDRESS   a is NULL or not family 6.
 *   -HP_WIRE_BAD_FIELD     hop limit not 255 (the message came from off
 *                          link, or was forwarded).
 *   -HP_WIRE_BAD_CHECKSUM  with the flag.
 *   -HP_WIRE_BAD_FIELD     code not 0.
 *   -HP_WIRE_BAD_LENGTH    shorter than the type's fixed part: RS 8, RA 16,
 *                          NS and NA 24, Redirect 40.
 *   -HP_WIRE_BAD_OPTION    an option of length 0 or running past the
 *                          message; a prefix option not 32 bytes or with a
 *                          prefix length above 128; an MTU option not 8
 *                          bytes; a source link-layer option when the IP
 *                          source is unspecified (RS, NS).
 *   -HP_WIRE_BAD_ADDRESS   RA or Redirect from a source that is not
 *                          link-local; NS or NA target multicast; NS from
 *                          the unspecified address not to a solicited-node
 *                          multicast address; Redirect destination
 *                          multicast, or target neither link-local nor the
 *                          destination.
 *   -HP_WIRE_BAD_FIELD     NA with the Solicited flag sent to a multicast
 *                          address.
 */
HP_API int hp_ndp_parse(const void *msg, size_t len, const struct hp_l4_addrs *a, uint8_t hop_limit,
                        struct hp_ndp_repr *r, unsigned flags);

/**
 * Bytes hp_ndp_emit writes for r: the type's fixed part and its options;
 * 0 for a type that is not 133-137.
 */
HP_API size_t hp_ndp_repr_len(const struct hp_ndp_repr *r);

/**
 * Write an RS (with SLL), RA (SLL, MTU, then prefixes), NS (SLL), NA (TLL)
 * or Redirect (TLL) with its checksum over the pseudo-header of a, code 0
 * and reserved fields zero. The caller sends it with hop limit 255.
 *
 * @return the bytes written; -HP_WIRE_UNSUPPORTED for another type;
 *         -HP_WIRE_BAD_OPTION when n_prefix is outside 0..HP_NDP_MAX_PREFIX;
 *         -HP_WIRE_NO_SPACE when cap is smaller; -HP_WIRE_BAD_ADDRESS when
 *         a is not a valid family 6.
 */
HP_API int hp_ndp_emit(const struct hp_ndp_repr *r, const struct hp_l4_addrs *a, void *out,
                       size_t cap);

#ifdef __cplusplus
}
#endif
#endif
