/* SPDX-License-Identifier: BSD-3-Clause */
/* The keyed hash (SipHash-2-4) and the per-stack secret for TCP ISNs and SYN cookies. */
#include <string.h>

#include <hotpath/common.h>

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
    uint32_t be[2] = {hp_hton32(w0), hp_hton32(w1)};
    memcpy(buf + n, be, 8);
    n += 8;
    /* Two constant lengths (IPv4 22 bytes, IPv6 and the rest 46): the
     * rounds unrolled, the words loaded whole (once per connection on each
     * side: its ISN and timestamp offset). */
    const uint64_t k[2] = {key->k0, key->k1};
    if (n == 22)
        return hp__siphash_inline(k, buf, 22, 2, 4);
    return hp__siphash_inline(k, buf, 46, 2, 4);
}
