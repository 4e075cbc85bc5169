/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark peers written here as baselines: the RFC 1071 loop and the seed patch's 64-byte unrolling. */
#include <string.h>

#include "bench.h"
#include "tool.h"

/* RFC 1071 section 4.1, with memcpy instead of a cast so that any alignment
 * is defined behaviour. */
uint32_t hp_peer_naive(const void *buf, size_t len, uint32_t sum)
{
    const unsigned char *p = buf;
    uint64_t acc = sum;
    while (len > 1) {
        uint16_t v;
        memcpy(&v, p, 2);
        acc += v;
        p += 2;
        len -= 2;
    }
    if (len) {
        uint16_t v = 0;
        memcpy(&v, p, 1);
        acc += v;
    }
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
    return (uint32_t)((acc & 0xFFFFFFFFu) + (acc >> 32));
}

/* The strategy of the DPDK patch the seed describes: 64-byte blocks of 32
 * 16-bit additions, then 32/16/8/4/2-byte tails. Written here from that
 * description as a baseline; a 64-bit sum keeps it correct past 128 KiB. */
#define ADD_WORDS(n)                                                                               \
    do {                                                                                           \
        for (int i_ = 0; i_ < (n) / 2; i_++) {                                                     \
            uint16_t v_;                                                                           \
            memcpy(&v_, p + 2 * i_, 2);                                                            \
            acc += v_;                                                                             \
        }                                                                                          \
        p += (n);                                                                                  \
    } while (0)

uint32_t hp_peer_unroll64(const void *buf, size_t len, uint32_t sum)
{
    const unsigned char *p = buf;
    uint64_t acc = sum;
    for (; len >= 64; len -= 64)
        ADD_WORDS(64);
    if (len & 32)
        ADD_WORDS(32);
    if (len & 16)
        ADD_WORDS(16);
    if (len & 8)
        ADD_WORDS(8);
    if (len & 4)
        ADD_WORDS(4);
    if (len & 2)
        ADD_WORDS(2);
    if (len & 1) {
        uint16_t v = 0;
        memcpy(&v, p, 1);
        acc += v;
    }
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
    return (uint32_t)((acc & 0xFFFFFFFFu) + (acc >> 32));
}
