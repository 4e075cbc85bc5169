/* SPDX-License-Identifier: BSD-3-Clause */
/* The keyed hash (SipHash-2-4) and the per-stack secret for TCP ISNs and SYN cookies. */
#include <string.h>

#include "../base/siphash.h"
#include "tcp_hash.h"

int hp__tcp_secret_init(struct hp__tcp_secret *s)
{
    uint8_t raw[16];
    int rc = hp__random_bytes(raw, sizeof raw);
    if (rc < 0) {
        memset(s, 0, sizeof *s);
        return rc;
    }
    s->k0 = hp__load_le64(raw);
    s->k1 = hp__load_le64(raw + 8);
    return 0;
}

/* One SipHash for the whole library (base/siphash.c), checked against the
 * paper's vectors in both test files. */
uint64_t hp__siphash24(const struct hp__tcp_secret *key, const void *data, size_t len)
{
    const uint64_t k[2] = {key->k0, key->k1};
    return hp__siphash(k, data, len, 2, 4);
}

uint64_t hp__tcp_hash(const struct hp__tcp_secret *key, enum hp__tcp_hash_domain domain,
                      const struct hp__tcp_tuple *t, uint32_t w0, uint32_t w1)
{
    /* domain, family, ports, addresses, words: a fixed layout per family,
     * so two different inputs never serialise to the same bytes. */
    uint8_t buf[2 + 4 + 32 + 8];
    size_t alen = t->family == 4 ? 4 : 16;
    size_t n = 0;
    buf[n++] = (uint8_t)domain;
    buf[n++] = t->family;
    buf[n++] = (uint8_t)(t->lport >> 8);
    buf[n++] = (uint8_t)t->lport;
    buf[n++] = (uint8_t)(t->rport >> 8);
    buf[n++] = (uint8_t)t->rport;
    memcpy(buf + n, t->laddr, alen);
    n += alen;
    memcpy(buf + n, t->raddr, alen);
    n += alen;
    for (int i = 3; i >= 0; i--)
        buf[n++] = (uint8_t)(w0 >> (8 * i));
    for (int i = 3; i >= 0; i--)
        buf[n++] = (uint8_t)(w1 >> (8 * i));
    return hp__siphash24(key, buf, n);
}
