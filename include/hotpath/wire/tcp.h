/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP header view (RFC 9293 section 3.1) with its options (RFC 9293 3.2, RFC 7323, RFC 2018): check, accessors, parse and emit. */
#ifndef HOTPATH_WIRE_TCP_H
#define HOTPATH_WIRE_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/wire/common.h>
#include <hotpath/wire/l4.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HP_TCP_HDR_LEN     20u /* without options */
#define HP_TCP_MAX_HDR_LEN 60u /* data offset 15 */
#define HP_TCP_MAX_OPT_LEN 40u

/* Control bits (RFC 9293 section 3.1; ECE and CWR from RFC 3168). */
#define HP_TCP_F_FIN 0x01u
#define HP_TCP_F_SYN 0x02u
#define HP_TCP_F_RST 0x04u
#define HP_TCP_F_PSH 0x08u
#define HP_TCP_F_ACK 0x10u
#define HP_TCP_F_URG 0x20u
#define HP_TCP_F_ECE 0x40u
#define HP_TCP_F_CWR 0x80u

/* Option kinds (the byte on the wire; socket options are HP_TCP_OPT_* in tcp.h). */
#define HP_TCP_KIND_EOL       0u
#define HP_TCP_KIND_NOP       1u
#define HP_TCP_KIND_MSS       2u /* RFC 9293 3.2, length 4 */
#define HP_TCP_KIND_WS        3u /* RFC 7323 2.2, length 3 */
#define HP_TCP_KIND_SACK_PERM 4u /* RFC 2018 2, length 2 */
#define HP_TCP_KIND_SACK      5u /* RFC 2018 3, length 2 + 8n */
#define HP_TCP_KIND_TS        8u /* RFC 7323 3.2, length 10 */

/* RFC 7323 section 2.3: the largest window shift. */
#define HP_TCP_MAX_WS 14u
/* RFC 2018 section 3: at most 4 blocks fit in 40 bytes of options. */
#define HP_TCP_MAX_SACK 4

/**
 * The options we understand. Others are skipped by parse and never emitted.
 * When an option appears twice, the last one counts.
 *
 * ws          the shift to use, at most HP_TCP_MAX_WS.
 * ws_clamped  parse saw a shift above 14 and used 14 (RFC 7323 section 2.3:
 *             the receiver SHOULD log it); emit ignores it.
 * sack        n_sack blocks of [left edge, right edge), sequence numbers.
 */
struct hp_tcp_opts {
    bool has_mss;
    uint16_t mss;
    bool has_ws;
    uint8_t ws;
    bool ws_clamped;
    bool sack_perm;
    bool has_ts;
    uint32_t ts_val, ts_ecr;
    uint8_t n_sack;
    uint32_t sack[HP_TCP_MAX_SACK][2];
};

/**
 * A TCP segment, parsed or to emit.
 *
 * flags     HP_TCP_F_*; the four reserved bits are ignored on receipt and
 *           sent as zero (RFC 9293 section 3.1).
 * data_off  the header length in bytes (20..60), filled by parse; emit
 *           ignores it and uses hp_tcp_repr_len's layout.
 * payload   after parse, points into the parsed segment. For emit, the
 *           bytes to copy (may overlap the output).
 */
struct hp_tcp_repr {
    uint16_t src_port, dst_port;
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t window, urgent;
    uint8_t data_off;
    struct hp_tcp_opts opt;
    const uint8_t *payload;
    size_t payload_len;
};

/**
 * Validate a received segment's header once: afterwards the accessors below
 * are safe on (pkt, len). The options are walked too: EOL ends them, NOP is
 * one byte, every other option has a length byte counting kind and length.
 *
 * @param pkt  the TCP header, any alignment.
 * @param len  the segment length (header + payload), from the IP header.
 * @return 0; -HP_WIRE_TRUNCATED when len < 20 or the data offset is past
 *         len; -HP_WIRE_BAD_LENGTH when the data offset is below 5;
 *         -HP_WIRE_BAD_OPTION when an option's length is below 2, runs past
 *         the header, or is wrong for its kind (MSS 4, WS 3, SACK-permitted
 *         2, SACK 2 + 8n with n from 1 to 4, timestamps 10).
 *         The control bits are not judged here: no flags at all, or SYN with
 *         FIN, are well formed headers; the connection decides.
 */
HP_API int hp_tcp_check(const void *pkt, size_t len);

/* Accessors: valid once hp_tcp_check(pkt, len) returned 0. Host order. */
static inline uint16_t hp_tcp_src_port(const void *pkt)
{
    return hp_get_be16(pkt);
}
static inline uint16_t hp_tcp_dst_port(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 2);
}
static inline uint32_t hp_tcp_seq(const void *pkt)
{
    return hp_get_be32((const uint8_t *)pkt + 4);
}
static inline uint32_t hp_tcp_ack(const void *pkt)
{
    return hp_get_be32((const uint8_t *)pkt + 8);
}
/** Header length in bytes (data offset * 4). */
static inline size_t hp_tcp_hdr_len(const void *pkt)
{
    return (size_t)(hp_get_u8((const uint8_t *)pkt + 12) >> 4) * 4;
}
/** The eight control bits, HP_TCP_F_*. */
static inline uint8_t hp_tcp_flags(const void *pkt)
{
    return hp_get_u8((const uint8_t *)pkt + 13);
}
static inline uint16_t hp_tcp_window(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 14);
}
static inline uint16_t hp_tcp_cksum(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 16);
}
static inline uint16_t hp_tcp_urgent(const void *pkt)
{
    return hp_get_be16((const uint8_t *)pkt + 18);
}
/** The options' bytes: from offset 20 to the header's end. */
static inline const uint8_t *hp_tcp_options(const void *pkt)
{
    return (const uint8_t *)pkt + HP_TCP_HDR_LEN;
}
static inline size_t hp_tcp_options_len(const void *pkt)
{
    return hp_tcp_hdr_len(pkt) - HP_TCP_HDR_LEN;
}
static inline const uint8_t *hp_tcp_payload(const void *pkt)
{
    return (const uint8_t *)pkt + hp_tcp_hdr_len(pkt);
}
/** Payload length: the segment length given to check minus the header. */
static inline size_t hp_tcp_payload_len(const void *pkt, size_t len)
{
    return len - hp_tcp_hdr_len(pkt);
}

/**
 * Check and parse a received segment, options included.
 *
 * @param pkt, len  as for hp_tcp_check.
 * @param a         the IP addresses; may be NULL when flags lacks
 *                  HP_WIRE_VERIFY_CKSUM.
 * @param r         filled on success (unspecified on failure); r->payload
 *                  points into pkt.
 * @param flags     HP_WIRE_VERIFY_CKSUM to verify the checksum.
 * @return 0, a reason of hp_tcp_check, -HP_WIRE_BAD_CHECKSUM (with the
 *         flag), or -HP_WIRE_BAD_ADDRESS when the flag is set and a is not
 *         valid.
 */
HP_API int hp_tcp_parse(const void *pkt, size_t len, const struct hp_l4_addrs *a,
                        struct hp_tcp_repr *r, unsigned flags);

/**
 * Bytes of options hp_tcp_emit writes for o, a multiple of 4. May exceed
 * HP_TCP_MAX_OPT_LEN, in which case emit refuses.
 *
 * The layout keeps every 32-bit value 4-byte aligned, in this order:
 *   MSS                       02 04 mss
 *   SACK-permitted + TS       04 02 08 0a val ecr    (both)
 *   NOP NOP TS                01 01 08 0a val ecr    (TS alone)
 *   NOP NOP SACK-permitted    01 01 04 02            (SACK-permitted alone)
 *   NOP WS                    01 03 03 shift
 *   NOP NOP SACK              01 01 05 2+8n blocks
 * With timestamps, at most 3 SACK blocks fit (RFC 2018 section 3).
 */
HP_API size_t hp_tcp_opts_len(const struct hp_tcp_opts *o);

/** Bytes hp_tcp_emit writes: 20 + hp_tcp_opts_len(&r->opt) + r->payload_len. */
HP_API size_t hp_tcp_repr_len(const struct hp_tcp_repr *r);

/**
 * Write the header, options (layout of hp_tcp_opts_len) and payload to out,
 * with the checksum over the pseudo-header of a. The urgent pointer and all
 * control bits are written as given. r->data_off and r->opt.ws_clamped are
 * ignored; r->opt.ws is written as given.
 *
 * @return the bytes written (hp_tcp_repr_len(r)); -HP_WIRE_NO_SPACE when cap
 *         is smaller; -HP_WIRE_BAD_OPTION when the options exceed 40 bytes or
 *         n_sack exceeds 4; -HP_WIRE_BAD_LENGTH when the segment would exceed
 *         65535 bytes; -HP_WIRE_BAD_ADDRESS when a is not valid.
 */
HP_API int hp_tcp_emit(const struct hp_tcp_repr *r, const struct hp_l4_addrs *a, void *out,
                       size_t cap);

#ifdef __cplusplus
}
#endif
#endif
