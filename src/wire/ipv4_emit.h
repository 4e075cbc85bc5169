/* SPDX-License-Identifier: BSD-3-Clause */
/* The IPv4 header writer, inline: hp_ipv4_emit's body, and IPv4 output's direct path (net/ipv4.c), which gcc otherwise calls as a function for each packet. */
#ifndef HOTPATH_WIRE_IPV4_EMIT_H
#define HOTPATH_WIRE_IPV4_EMIT_H

#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/ipv4.h>

/* hp_ipv4_emit (include/hotpath/wire/ipv4.h) without the room check: r's
 * header into out (20 bytes), or a negative HP_WIRE_* error. */
__attribute__((always_inline)) static inline int hp__ipv4_emit20(const struct hp_ipv4_repr *r,
                                                                 void *out)
{
    if (r->payload_len > 65535 - HP_IPV4_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    if (r->frag_off % 8 != 0 || r->frag_off > 0x1FFFu * 8)
        return -HP_WIRE_BAD_FIELD;
    uint8_t *p = out;
    uint16_t w[5] = {
        (uint16_t)(0x4500u | r->dscp_ecn), /* version 4, IHL 5 */
        (uint16_t)(HP_IPV4_HDR_LEN + r->payload_len),
        r->ident,
        (uint16_t)((r->df ? 0x4000u : 0) | (r->mf ? 0x2000u : 0) | (unsigned)(r->frag_off / 8)),
        (uint16_t)(r->ttl << 8 | r->proto),
    };
    for (int i = 0; i < 5; i++)
        hp_put_be16(p + 2 * i, w[i]);
    p[10] = p[11] = 0;
    memcpy(p + 12, r->src, 4);
    memcpy(p + 16, r->dst, 4);
    /* Summed from the values, not read back (hp_cksum_from_host16); the
     * addresses as two 32-bit words, a partial sum as any other. */
    uint64_t acc = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
    uint32_t a, d;
    memcpy(&a, r->src, 4);
    memcpy(&d, r->dst, 4);
    uint16_t c = hp_cksum_fold(hp_cksum_add(hp_cksum_add(a, d), hp_cksum_from_host16(acc)));
    memcpy(p + 10, &c, 2);
    return (int)HP_IPV4_HDR_LEN;
}

#endif
