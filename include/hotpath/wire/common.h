/* SPDX-License-Identifier: BSD-3-Clause */
/* What every packet view shares: the reasons a packet is refused, and unaligned big-endian access. */
#ifndef HOTPATH_WIRE_COMMON_H
#define HOTPATH_WIRE_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hotpath/common.h>
#include <hotpath/err.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The wire layer is pure: no allocation, no global state. Each protocol has
 *   int    hp_X_check(const void *pkt, size_t len);          0 or -HP_WIRE_*
 *   int    hp_X_parse(const void *pkt, size_t len, struct hp_X_repr *r, ...);
 *   size_t hp_X_repr_len(const struct hp_X_repr *r);         bytes emit writes
 *   int    hp_X_emit(const struct hp_X_repr *r, void *out, size_t cap, ...);
 * and static inline accessors that are safe once check returned 0 for the
 * same (pkt, len). Failures return the negative of a reason below, which the
 * stack counts per reason; hp_wire_reason() and hp_strerror() name it.
 *
 * The reasons live above the errno range (Linux's errno values end at 4095,
 * MAX_ERRNO), so that a -HP_WIRE_* value can never be mistaken for a -errno
 * one, nor the reverse (err.h: one error space).
 */
#define HP_WIRE_REASON_BASE HP_ERR_WIRE_BASE
enum hp_wire_reason {
    HP_WIRE_OK = 0,
    HP_WIRE_TRUNCATED =
        HP_WIRE_REASON_BASE + 1, /* shorter than its header, or than a length field says */
    HP_WIRE_BAD_VERSION,         /* IP version, ARP hardware/protocol type... */
    HP_WIRE_BAD_LENGTH,          /* a length field that is impossible (too small, inconsistent) */
    HP_WIRE_BAD_CHECKSUM,
    HP_WIRE_BAD_OPTION,  /* an option or extension header that runs past its bounds */
    HP_WIRE_BAD_ADDRESS, /* a source address that may not appear (multicast source...) */
    HP_WIRE_BAD_FIELD,   /* any other field with a value the RFC forbids */
    HP_WIRE_UNSUPPORTED, /* well formed, but not something we handle */
    HP_WIRE_NO_SPACE,    /* emit: the output buffer is too small */
    HP_WIRE_END,         /* one past the last reason */
};
/** How many reasons there are besides HP_WIRE_OK. */
#define HP_WIRE_NREASONS (HP_WIRE_END - HP_WIRE_REASON_BASE - 1)

/** True when err (negative or positive) is one of the wire layer's reasons. */
static inline int hp_wire_is_reason(int err)
{
    if (err < 0)
        err = -err;
    return err > HP_WIRE_REASON_BASE && err < HP_WIRE_END;
}

/**
 * Parse flag: verify the checksum (IPv4 header, UDP, TCP, ICMP, ICMPv6) and
 * fail with -HP_WIRE_BAD_CHECKSUM when it is wrong. Without it the checksum
 * field is not looked at (the NIC verified it, say).
 */
#define HP_WIRE_VERIFY_CKSUM 0x1u

/** A short name for a reason ("truncated", "bad-checksum"...; 0 is "ok"); never NULL: "unknown"
 * for anything that is not a reason. */
HP_API const char *hp_wire_reason(int reason);

/* Unaligned reads and writes of network-order fields, through memcpy. */
static inline uint16_t hp_get_be16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return hp_ntoh16(v);
}
static inline uint32_t hp_get_be32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return hp_ntoh32(v);
}
static inline void hp_put_be16(void *p, uint16_t v)
{
    v = hp_hton16(v);
    memcpy(p, &v, 2);
}
static inline void hp_put_be32(void *p, uint32_t v)
{
    v = hp_hton32(v);
    memcpy(p, &v, 4);
}
static inline uint8_t hp_get_u8(const void *p)
{
    return *(const uint8_t *)p;
}

#ifdef __cplusplus
}
#endif
#endif
