/* SPDX-License-Identifier: BSD-3-Clause */
/* Initial sequence numbers: RFC 6528's M + F(tuple, secret) with SipHash as F. */
#include "tcp_isn.h"

uint32_t hp__tcp_isn(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                     uint64_t now_ns)
{
    uint32_t m = (uint32_t)(now_ns / HP__TCP_ISN_TICK_NS); /* modulo 2^32 */
    uint32_t f = (uint32_t)hp__tcp_hash(secret, HP__TCP_HASH_ISN, t, 0, 0);
    return m + f;
}

uint32_t hp__tcp_isn_ts(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                        uint64_t now_ns, uint32_t *ts_offset)
{
    uint64_t h = hp__tcp_hash(secret, HP__TCP_HASH_ISN, t, 0, 0);
    *ts_offset = (uint32_t)(h >> 32);
    return (uint32_t)(now_ns / HP__TCP_ISN_TICK_NS) + (uint32_t)h;
}

uint32_t hp__tcp_ts_offset(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t)
{
    return (uint32_t)(hp__tcp_hash(secret, HP__TCP_HASH_ISN, t, 0, 0) >> 32);
}
