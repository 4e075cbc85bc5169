/* SPDX-License-Identifier: BSD-3-Clause */
/* SYN cookies: make and check, with the MSS table and two live 64-second slots. */
#include <errno.h>

#include "tcp_cookie.h"

const uint16_t hp__tcp_cookie_mss[HP__TCP_COOKIE_NMSS] = {536, 1220, 1440, 1460, 8960};

/* The 29-bit MAC over everything the cookie stands for; the slot keeps its
 * low 29 bits (a repeat every 1,089 years) to leave room for the index. */
static uint32_t cookie_mac(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                           uint32_t client_isn, uint32_t slot, uint32_t idx)
{
    uint64_t h = hp__tcp_hash(secret, HP__TCP_HASH_COOKIE, t, client_isn, (slot << 3) | idx);
    return (uint32_t)h & ~7u;
}

int hp__tcp_cookie_make(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                        uint32_t client_isn, uint32_t mss, uint64_t now_ns, uint32_t *isn)
{
    if (mss < hp__tcp_cookie_mss[0])
        return -EINVAL;
    uint32_t i = HP__TCP_COOKIE_NMSS - 1;
    while (hp__tcp_cookie_mss[i] > mss)
        i--;
    uint32_t slot = (uint32_t)(now_ns / HP__TCP_COOKIE_SLOT_NS);
    *isn = cookie_mac(secret, t, client_isn, slot, i) | i;
    return hp__tcp_cookie_mss[i];
}

int hp__tcp_cookie_check(const struct hp__tcp_secret *secret, const struct hp__tcp_tuple *t,
                         uint32_t seg_seq, uint32_t seg_ack, uint64_t now_ns)
{
    uint32_t client_isn = seg_seq - 1, cookie = seg_ack - 1;
    uint32_t i = cookie & 7u;
    if (i >= HP__TCP_COOKIE_NMSS)
        return -EACCES;
    uint32_t slot = (uint32_t)(now_ns / HP__TCP_COOKIE_SLOT_NS);
    /* The current slot, then the previous one: a SYN-ACK sent just before
     * a slot boundary must still be accepted after it. */
    for (uint32_t back = 0; back < 2; back++) {
        if ((cookie & ~7u) == cookie_mac(secret, t, client_isn, slot - back, i))
            return hp__tcp_cookie_mss[i];
    }
    return -EACCES;
}

uint32_t hp__tcp_cookie_tsval(uint32_t ts_now, const struct hp__tcp_cookie_opts *o)
{
    const uint32_t mask = (1u << HP__TCP_COOKIE_TS_BITS) - 1;
    uint32_t bits = o->ws ? (o->snd_wscale & 0xFu) : HP__TCP_COOKIE_TS_NOWS;
    if (o->ws && bits > 14)
        bits = 14;
    bits |= (o->sack ? 1u : 0u) << 4 | (o->ecn ? 1u : 0u) << 5;
    uint32_t ts = (ts_now & ~mask) | bits;
    /* Not ahead of the clock the connection will keep (RFC 7323 5.4: its
     * TSvals must not go backwards). */
    if ((int32_t)(ts - ts_now) > 0)
        ts -= mask + 1;
    return ts;
}

void hp__tcp_cookie_ts_decode(uint32_t tsecr, struct hp__tcp_cookie_opts *o)
{
    uint32_t ws = tsecr & 0xFu;
    o->ts = true;
    o->ws = ws != HP__TCP_COOKIE_TS_NOWS;
    o->snd_wscale = (uint8_t)(o->ws ? (ws > 14 ? 14 : ws) : 0);
    o->sack = (tsecr >> 4) & 1u;
    o->ecn = (tsecr >> 5) & 1u;
}
