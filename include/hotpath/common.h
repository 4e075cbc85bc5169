/* SPDX-License-Identifier: BSD-3-Clause */
/* Definitions shared by every public hotpath header: export macro and wire types. */
#ifndef HOTPATH_COMMON_H
#define HOTPATH_COMMON_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every public function carries HP_API; everything else is hidden by the
 * build (-fvisibility=hidden), so the shared library exports only the API. */
#if defined(__GNUC__) || defined(__clang__)
#define HP_API __attribute__((visibility("default")))
#else
#define HP_API
#endif

/* Wire fields in network byte order. Distinct names make intent visible in
 * prototypes; they are plain integers, so convert with hp_ntoh16() etc. */
typedef uint16_t hp_be16;
typedef uint32_t hp_be32;

static inline uint16_t hp_bswap16(uint16_t v)
{
    return (uint16_t)((v >> 8) | (v << 8));
}

static inline uint32_t hp_bswap32(uint32_t v)
{
    return __builtin_bswap32(v);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HP_BIG_ENDIAN 1
static inline hp_be16 hp_hton16(uint16_t v)
{
    return v;
}
static inline hp_be32 hp_hton32(uint32_t v)
{
    return v;
}
#else
#define HP_BIG_ENDIAN 0
static inline hp_be16 hp_hton16(uint16_t v)
{
    return hp_bswap16(v);
}
static inline hp_be32 hp_hton32(uint32_t v)
{
    return hp_bswap32(v);
}
#endif
static inline uint16_t hp_ntoh16(hp_be16 v)
{
    return hp_hton16(v);
}
static inline uint32_t hp_ntoh32(hp_be32 v)
{
    return hp_hton32(v);
}

/** Address families, as hp_sockaddr.family and every call taking a family
 * (hp_stack_add_addr, hp_udp_open, hp_tcp_open...) spell them: the IP
 * version. */
#define HP_AF_INET4 4
#define HP_AF_INET6 6

/** IP protocol numbers (IANA "Assigned Internet Protocol Numbers"): the
 * IPv4 Protocol and the IPv6 Next Header field. The IPv6 extension
 * headers' numbers are in wire/ipv6.h. */
#define HP_IPPROTO_ICMP   1
#define HP_IPPROTO_TCP    6
#define HP_IPPROTO_UDP    17
#define HP_IPPROTO_ICMPV6 58

/** Library version, "MAJOR.MINOR.PATCH". */
HP_API const char *hp_version(void);

/**
 * The field order the library's hot structures were built with: "grouped"
 * (by cache line, the default) or "chrono" (logical order, built with
 * -DHP_LAYOUT_CHRONO=1 / HP_LAYOUT=chrono). See docs/cachelines/.
 */
HP_API const char *hp_layout_name(void);

#ifdef __cplusplus
}
#endif
#endif
