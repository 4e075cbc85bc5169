/* SPDX-License-Identifier: BSD-3-Clause */
/* SipHash-c-d over a byte string, and random keys from getrandom(2). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"

uint64_t hp__siphash(const uint64_t key[2], const void *msg, size_t len, int c, int d)
{
    return hp__siphash_inline(key, msg, len, c, d);
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
