/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the IP modules only (ipv4.c, ipv6.c, reasm.c, icmp.c, icmp6.c), not part of the net contract. */
#ifndef HOTPATH_NET_IP_LOCAL_H
#define HOTPATH_NET_IP_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* More datagrams than this in reassembly at once evict the oldest. */
#define HP__REASM_MAX_DGRAMS 64
/* More fragments than this in one datagram fail it (a 65535-byte datagram
 * cut for the IPv4 minimum MTU of 68 needs 1366). */
#define HP__REASM_MAX_FRAGS 1400

/* a is the limited broadcast or the directed broadcast of one of ifc's
 * IPv4 prefixes (RFC 1122 3.2.1.3, RFC 919). */
bool hp__ipv4_is_bcast(const struct hp__iface *ifc, const uint8_t a[4]);

/* Walk IPv6 extension headers (RFC 8200 4) in p[start .. avail), the first
 * being of type `next`, until an upper-layer protocol. On success returns
 * the offset of the upper-layer header, *proto its number and *nh_field the
 * offset of the Next Header field that names it (6 for the fixed header
 * when called with start 40 and next = p[6]). -1 when a header runs past
 * avail or a Fragment header is met. */
long hp__ipv6_walk(const uint8_t *p, size_t avail, size_t start, uint8_t next, uint8_t *proto,
                   size_t *nh_field);

/* hp__reasm4's IPv6 counterpart (ip describes the fragment; no fragment
 * header in the result), also telling the upper-layer protocol of the whole
 * datagram. */
struct hp_buf *hp__reasm6_ex(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip,
                             uint8_t *proto);

/* Room for a len-byte header in front of *b: in its headroom, or (no
 * headroom, or shared data) in a new buffer chained in front, which then
 * becomes *b. @return the header's first byte, or NULL with *b freed. */
uint8_t *hp__push_header(struct hp__iface *ifc, struct hp_buf **b, uint32_t len);

/* The partial Internet checksum (RFC 1071) of a whole chain from its data
 * offset, segments of any length. */
uint32_t hp__chain_sum(const struct hp_buf *b);
/* A new packet of len bytes (contents undefined) from ifc's pool, chained
 * when one buffer is not enough; the first segment keeps the pool's
 * headroom. NULL (counted NO_BUFFERS) when the pool runs out. */
struct hp_buf *hp__chain_alloc(struct hp__iface *ifc, uint32_t len);
/* Copy src (from its data offset, the whole chain) into a new packet from
 * ifc's pool; NULL when the pool runs out. Does not consume src. */
struct hp_buf *hp__chain_copy(struct hp__iface *ifc, const struct hp_buf *src);
/* Write len bytes at offset off of packet b (which must be long enough). */
void hp__chain_write(struct hp_buf *b, uint32_t off, const void *src, uint32_t len);
/* No segment of b shares its data: b may be rewritten in place. */
bool hp__chain_private(const struct hp_buf *b);

/* Take one token from an ICMP error bucket (cfg.icmp_rate per second,
 * cfg.icmp_burst deep); false when empty (RFC 4443 2.4(f), RFC 1812 4.3.2.8). */
bool hp__bucket_take(struct hp_stack *s, struct hp__bucket *bk);

/* hp_stack_ping for family 6 (icmp6.c). */
int hp__ping6(struct hp_stack *s, const uint8_t dst[16], uint16_t ident, uint16_t seq, size_t len);
/* Fill len bytes of b from offset off with hp_stack_ping's payload: byte i is i & 0xFF. */
void hp__ping_fill(struct hp_buf *b, uint32_t off, uint32_t len);

#endif
