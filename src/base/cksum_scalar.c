/* SPDX-License-Identifier: BSD-3-Clause */
/* Portable checksum variant: 64-bit words added with end-around carry in four chains, no read past the end. */
#include "internal.h"

/* Aligned to 64 bytes: on AMD Zen 3, short calls measured 25% slower when a
 * small function's branches straddled fetch blocks. */
__attribute__((aligned(64))) uint32_t hp__cksum_scalar(const void *buf, size_t len, uint32_t sum)
{
    return hp__fold64c(hp__cksum_words(buf, len, sum));
}
