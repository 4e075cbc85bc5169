/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet II frame header view, with at most one IEEE 802.1Q VLAN tag: check, accessors, parse and emit. */
#ifndef HOTPATH_WIRE_ETH_H
#define HOTPATH_WIRE_ETH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The header as it reaches us from a link: destination, source, EtherType,
 * with an optional 4-byte 802.1Q tag (TPID 0x8100, then the TCI) between the
 * source and the EtherType. No preamble, no FCS. Frames shorter than the
 * 60-byte Ethernet minimum are accepted (TAP and AF_PACKET deliver them
 * unpadded) and bytes after the payload are the upper layer's business.
 *
 * Nothing here allocates, keeps state, or holds on to pkt or out after it
 * returns: the caller owns every buffer before and after each call, and all
 * functions are safe to call from any thread.
 */

#define HP_ETH_ALEN         6u  /**< bytes in a MAC address */
#define HP_ETH_HDR_LEN      14u /**< untagged header */
#define HP_ETH_VLAN_HDR_LEN 18u /**< header with one 802.1Q tag */

#define HP_ETHERTYPE_IPV4 0x0800u
#define HP_ETHERTYPE_ARP  0x0806u
#define HP_ETHERTYPE_VLAN 0x8100u /**< IEEE 802.1Q customer tag (C-TAG) TPID */
#define HP_ETHERTYPE_QINQ 0x88A8u /**< IEEE 802.1ad service tag (S-TAG) TPID: not supported */
#define HP_ETHERTYPE_IPV6 0x86DDu

/** Smallest value that is an EtherType; below it the field is an IEEE 802.3 length. */
#define HP_ETHERTYPE_MIN 0x0600u

/** The VLAN identifier of a TCI (low 12 bits); 0 means "priority tag only". */
#define HP_VLAN_VID(tci) ((uint16_t)((tci)&0x0FFFu))
/** The priority code point of a TCI (top 3 bits). */
#define HP_VLAN_PCP(tci) ((uint8_t)(((tci) >> 13) & 7u))
/** VID 0xFFF is reserved and never sent in a tag (IEEE 802.1Q-2018 table 9-2). */
#define HP_VLAN_VID_RESERVED 0x0FFFu

/**
 * An Ethernet header, parsed or to emit.
 *
 * dst, src   MAC addresses as on the wire.
 * ethertype  the EtherType of the payload: after the tag when there is one
 *            (host order).
 * has_vlan   whether a 802.1Q tag is present (parse) or to be written (emit).
 * vlan_tci   the tag's TCI (PCP, DEI, VID), host order; 0 when has_vlan is false.
 */
struct hp_eth_repr {
    uint8_t dst[6], src[6];
    uint16_t ethertype;
    bool has_vlan;
    uint16_t vlan_tci;
};

/**
 * Validate a received frame's header, once; afterwards the accessors below
 * are safe on (pkt, len).
 *
 * @param pkt  the first byte of the destination address, any alignment.
 * @param len  bytes available from pkt.
 * @return 0, or a negative reason:
 *   -HP_WIRE_TRUNCATED    len < 14, or a 802.1Q tag and len < 18;
 *   -HP_WIRE_UNSUPPORTED  an 802.1ad S-tag (0x88A8), a second 802.1Q tag, or
 *                         an EtherType below 0x0600 (an IEEE 802.3 length:
 *                         LLC/SNAP frames are not handled);
 *   -HP_WIRE_BAD_FIELD    a tag with the reserved VID 0xFFF (IEEE 802.1Q-2018
 *                         table 9-2: never transmitted in a tag);
 *   -HP_WIRE_BAD_ADDRESS  a group (multicast or broadcast) source address:
 *                         the source is always an individual address
 *                         (IEEE 802.3 clause 3.2.3: its first bit is 0).
 */
HP_API int hp_eth_check(const void *pkt, size_t len);

/**
 * Check (as hp_eth_check) and read the header.
 *
 * @param r        filled on success; unspecified on failure.
 * @param hdr_len  if not NULL, set on success to the header's length (14 or
 *                 18): where the payload starts.
 * @return 0 or the negative reasons of hp_eth_check.
 */
HP_API int hp_eth_parse(const void *pkt, size_t len, struct hp_eth_repr *r, size_t *hdr_len);

/** Bytes hp_eth_emit writes for r: 18 with a tag, 14 without. */
HP_API size_t hp_eth_repr_len(const struct hp_eth_repr *r);

/**
 * Write the header (tagged when r->has_vlan) at out. The payload is the
 * caller's; nothing is padded to the 60-byte minimum (the link does that if
 * it must). Fields are written as given, unchecked.
 *
 * @param out  any alignment; cap bytes writable.
 * @return the bytes written (hp_eth_repr_len(r)), or -HP_WIRE_NO_SPACE when
 *         cap is smaller (nothing is written).
 */
HP_API int hp_eth_emit(const struct hp_eth_repr *r, void *out, size_t cap);

/* ---- Accessors: valid once hp_eth_check(pkt, len) returned 0 ---------- */

/** Destination MAC address (6 bytes). */
static inline const uint8_t *hp_eth_dst_ptr(const void *pkt)
{
    return (const uint8_t *)pkt;
}
/** Source MAC address (6 bytes). */
static inline const uint8_t *hp_eth_src_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 6;
}
/** Whether the frame carries a 802.1Q tag. */
static inline bool hp_eth_has_vlan(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 12) == HP_ETHERTYPE_VLAN;
}
/** The tag's TCI (host order), or 0 for an untagged frame. */
static inline uint16_t hp_eth_vlan_tci(const void *pkt)
{
    return hp_eth_has_vlan(pkt) ? hp_get_be16((const uint8_t *)pkt + 14) : 0;
}
/** Header length: 14, or 18 with a tag. */
static inline size_t hp_eth_hdr_len(const void *pkt)
{
    return hp_eth_has_vlan(pkt) ? HP_ETH_VLAN_HDR_LEN : HP_ETH_HDR_LEN;
}
/** The payload's EtherType (after the tag, if any), host order. */
static inline uint16_t hp_eth_ethertype(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + hp_eth_hdr_len(pkt) - 2);
}
/** The first payload byte (may be the end of the frame: len - hdr_len bytes follow). */
static inline const uint8_t *hp_eth_payload(const void *pkt)
{
    return (const uint8_t *)pkt + hp_eth_hdr_len(pkt);
}

/* ---- Addresses -------------------------------------------------------- */

/** True for a group address (the I/G bit, the first byte's low bit): multicast or broadcast. */
static inline bool hp_eth_is_multicast(const uint8_t mac[6])
{
    return (mac[0] & 1u) != 0;
}

/** True for ff:ff:ff:ff:ff:ff. */
static inline bool hp_eth_is_broadcast(const uint8_t mac[6])
{
    return (mac[0] & mac[1] & mac[2] & mac[3] & mac[4] & mac[5]) == 0xFF;
}

#ifdef __cplusplus
}
#endif
#endif
