/* SPDX-License-Identifier: BSD-3-Clause */
/* SipHash-c-d over a byte string, and random keys from getrandom(2). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"

uint64_t hp__siphash(const uint64_t key[2], const void *msg, size_t len, int c, int d)
{
    const uint8_t *p = msg;
    struct hp__sip s;
    hp__sip_init(&s, key[0], key[1]);
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        hp__sip_word(&s, hp__load_le64(p + i), c);
    /* The last word: the remaining bytes, and the length's low byte on top. */
    uint64_t b = (uint64_t)(len & 0xff) << 56;
    for (size_t j = 0; i + j < len; j++)
        b |= (uint64_t)p[i + j] << (8 * j);
    hp__sip_word(&s, b, c);
    return hp__sip_final(&s, d);
}

int hp__random_bytes(void *p, size_t n)
{
    uint8_t *q = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(q + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            memset(p, 0, n);
            return -err;
        }
        got += (size_t)r;
    }
    return 0;
}
