/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to the library: SipHash (Aumasson and Bernstein, 2012), the keyed hash behind TCP ISNs, cookies and tables and IP identifications, and random keys for it. */
#ifndef HOTPATH_BASE_SIPHASH_H
#define HOTPATH_BASE_SIPHASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The primitives are inline so that a caller hashing a fixed layout (the
 * TCP table's tuples) can feed words without a byte loop; hp__siphash()
 * hashes a byte string as the paper defines it (key and message words
 * little-endian, the length's low byte on top of the last word).
 */
struct hp__sip {
    uint64_t v0, v1, v2, v3;
};

static inline uint64_t hp__rotl64(uint64_t x, unsigned b)
{
    return (x << b) | (x >> (64 - b));
}

static inline void hp__sip_init(struct hp__sip *s, uint64_t k0, uint64_t k1)
{
    /* The initialization constants of the paper ("somepseudorandomlygeneratedbytes"). */
    s->v0 = k0 ^ 0x736f6d6570736575ull;
    s->v1 = k1 ^ 0x646f72616e646f6dull;
    s->v2 = k0 ^ 0x6c7967656e657261ull;
    s->v3 = k1 ^ 0x7465646279746573ull;
}

static inline void hp__sip_round(struct hp__sip *s)
{
    s->v0 += s->v1;
    s->v1 = hp__rotl64(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = hp__rotl64(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = hp__rotl64(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = hp__rotl64(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = hp__rotl64(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = hp__rotl64(s->v2, 32);
}

/* One message word, c compression rounds. */
static inline void hp__sip_word(struct hp__sip *s, uint64_t m, int c)
{
    s->v3 ^= m;
    for (int i = 0; i < c; i++)
        hp__sip_round(s);
    s->v0 ^= m;
}

/* d finalization rounds; the 64-bit result. */
static inline uint64_t hp__sip_final(struct hp__sip *s, int d)
{
    s->v2 ^= 0xff;
    for (int i = 0; i < d; i++)
        hp__sip_round(s);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/* Eight bytes as a little-endian word: one load (gcc did not merge the
 * byte loop this was into one where the rounds were inlined). */
static inline uint64_t hp__load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* SipHash-c-d of len bytes at msg under the 128-bit key (key[0]: its first
 * 8 bytes read little-endian). SipHash-2-4 is the paper's recommended
 * strength (secrets: ISNs, cookies, IP IDs); 1-3 the hash-table one. */
uint64_t hp__siphash(const uint64_t key[2], const void *msg, size_t len, int c, int d);

/* hp__siphash inline, for a caller whose len, c and d are constants: the
 * compiler then unrolls the rounds and reads each word with one load (an
 * ISN's 22 bytes: about half the instructions of the general call). */
__attribute__((always_inline)) static inline uint64_t hp__siphash_inline(const uint64_t key[2],
                                                                         const void *msg,
                                                                         size_t len, int c, int d)
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

/* Fill p with n random bytes from getrandom(2). 0, or -errno (the buffer
 * is then zeroed). Blocks only before the kernel's pool is initialised. */
int hp__random_bytes(void *p, size_t n);

#endif
