/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP packet view for IPv4 over Ethernet (RFC 826): check, accessors, parse and emit. */
#ifndef HOTPATH_WIRE_ARP_H
#define HOTPATH_WIRE_ARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Only the one combination this stack speaks: hardware type 1 (Ethernet),
 * protocol type 0x0800 (IPv4), address lengths 6 and 4, which makes the
 * packet 28 bytes. Bytes after them (Ethernet padding to 60) are ignored.
 *
 * Nothing here allocates, keeps state, or holds on to pkt or out after it
 * returns: the caller owns every buffer before and after each call, and all
 * functions are safe to call from any thread.
 */

#define HP_ARP_LEN         28u /**< an Ethernet/IPv4 ARP packet */
#define HP_ARP_HTYPE_ETHER 1u  /**< ar$hrd for Ethernet (RFC 826; IANA) */
#define HP_ARP_PTYPE_IPV4  0x0800u
#define HP_ARP_OP_REQUEST  1u
#define HP_ARP_OP_REPLY    2u

/**
 * An ARP packet, parsed or to emit. op is host order; addresses are as on
 * the wire (sha/tha MAC addresses, spa/tpa IPv4 addresses).
 */
struct hp_arp_repr {
    uint16_t op;
    uint8_t sha[6], spa[4], tha[6], tpa[4];
};

/**
 * Validate a received ARP packet, once; afterwards the accessors below are
 * safe on (pkt, len).
 *
 * @param pkt  the first byte of the ARP header (after the Ethernet header),
 *             any alignment.
 * @param len  bytes available from pkt (padding after 28 bytes is allowed).
 * @return 0, or a negative reason, in this order:
 *   -HP_WIRE_TRUNCATED    len < 8 (the fixed part);
 *   -HP_WIRE_UNSUPPORTED  hardware type other than 1 or protocol type other
 *                         than 0x0800 (well formed ARP for another network);
 *   -HP_WIRE_BAD_FIELD    hardware length not 6 or protocol length not 4,
 *                         which contradicts those types;
 *   -HP_WIRE_TRUNCATED    len < 28;
 *   -HP_WIRE_UNSUPPORTED  an opcode other than request (1) or reply (2)
 *                         (RARP, InARP...);
 *   -HP_WIRE_BAD_ADDRESS  a group sender hardware address (RFC 1812 section
 *                         3.3.2: never believe an ARP that maps to a
 *                         broadcast or multicast address), or a sender
 *                         protocol address that is IPv4 multicast or
 *                         255.255.255.255 (no host has it: RFC 1122 section
 *                         3.2.1.3). 0.0.0.0 is allowed (ARP probes, RFC 5227).
 */
HP_API int hp_arp_check(const void *pkt, size_t len);

/**
 * Check (as hp_arp_check) and read the packet.
 * @param r  filled on success; unspecified on failure.
 * @return 0 or the negative reasons of hp_arp_check.
 */
HP_API int hp_arp_parse(const void *pkt, size_t len, struct hp_arp_repr *r);

/** Bytes hp_arp_emit writes: always HP_ARP_LEN (28). */
HP_API size_t hp_arp_repr_len(const struct hp_arp_repr *r);

/**
 * Write the 28-byte packet (hardware type 1, protocol 0x0800, lengths 6 and
 * 4, then r's fields as given) at out. No Ethernet padding is added.
 *
 * @param out  any alignment; cap bytes writable.
 * @return 28, or -HP_WIRE_NO_SPACE when cap < 28 (nothing is written).
 */
HP_API int hp_arp_emit(const struct hp_arp_repr *r, void *out, size_t cap);

/* ---- Accessors: valid once hp_arp_check(pkt, len) returned 0 ---------- */

/** The opcode, host order (1 or 2 after a successful check). */
static inline uint16_t hp_arp_op(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 6);
}
/** Sender hardware address (6 bytes). */
static inline const uint8_t *hp_arp_sha_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 8;
}
/** Sender protocol address (4 bytes). */
static inline const uint8_t *hp_arp_spa_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 14;
}
/** Target hardware address (6 bytes; ignored in requests). */
static inline const uint8_t *hp_arp_tha_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 18;
}
/** Target protocol address (4 bytes). */
static inline const uint8_t *hp_arp_tpa_ptr(const void *pkt)
{
    return (const uint8_t *)pkt + 24;
}

#ifdef __cplusplus
}
#endif
#endif
