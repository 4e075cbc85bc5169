/* SPDX-License-Identifier: BSD-3-Clause */
/* What the transport views share: the IP addresses of the pseudo-header and the parse flags. */
#ifndef HOTPATH_WIRE_L4_H
#define HOTPATH_WIRE_L4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The addresses of the IP header that carried (or will carry) a UDP, TCP or
 * ICMPv6 message: the transport checksums cover them through the
 * pseudo-header (RFC 768, RFC 9293 section 3.1, RFC 8200 section 8.1).
 *
 * family  4 or 6.
 * src     the source address: 4 bytes for family 4, 16 for family 6, any
 *         alignment, in network byte order as on the wire.
 * dst     the destination address, likewise; over IPv6 the final
 *         destination (the last address of a routing header, if any).
 *
 * The views only read the addresses, during the call.
 */
struct hp_l4_addrs {
    uint8_t family;
    const uint8_t *src, *dst;
};

/** True when a is non-NULL, its family is 4 or 6 and both addresses are set. */
static inline bool hp_l4_addrs_valid(const struct hp_l4_addrs *a)
{
    return a && (a->family == HP_AF_INET4 || a->family == HP_AF_INET6) && a->src && a->dst;
}

#ifdef __cplusplus
}
#endif
#endif
