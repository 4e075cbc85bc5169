/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the base layer: checksum variants and their shared tail code. */
#ifndef HOTPATH_BASE_INTERNAL_H
#define HOTPATH_BASE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef HP_VERSION_STRING
#define HP_VERSION_STRING "0.0.0"
#endif

#if defined(__x86_64__) || defined(__i386__)
#define HP_ARCH_X86 1
#endif
#if defined(__aarch64__)
#define HP_ARCH_ARM64 1
#endif

typedef uint32_t (*hp__cksum_fn)(const void *buf, size_t len, uint32_t sum);

/* The variants. Each has the contract of hp_cksum_partial. They are not
 * static so that the benchmark can call each one and measure its size. */
uint32_t hp__cksum_scalar(const void *buf, size_t len, uint32_t sum);
#ifdef HP_ARCH_X86
uint32_t hp__cksum_avx2(const void *buf, size_t len, uint32_t sum);
uint32_t hp__cksum_avx512(const void *buf, size_t len, uint32_t sum);
#endif
#ifdef HP_ARCH_ARM64
uint32_t hp__cksum_neon(const void *buf, size_t len, uint32_t sum);
#endif

/* The fused copies: the contract of hp_cksum_copy, for len >= 128
 * (HP__CKSUM_VEC_MIN; shorter ones are summed and copied by it). */
typedef uint32_t (*hp__cksum_copy_fn)(void *restrict dst, const void *restrict src, size_t len,
                                      uint32_t sum);
#ifdef HP_ARCH_X86
uint32_t hp__cksum_copy_avx2(void *restrict dst, const void *restrict src, size_t len,
                             uint32_t sum);
uint32_t hp__cksum_copy_avx512(void *restrict dst, const void *restrict src, size_t len,
                               uint32_t sum);
#endif

struct hp__cksum_variant {
    const char *name;
    const char *symbol; /* function symbol, for code size reports */
    hp__cksum_fn fn;
    uint32_t needs;         /* HP_CPU_* bits the variant needs */
    hp__cksum_copy_fn copy; /* its fused copy; NULL: fn, then memcpy */
};

/* All variants this build has, best last; *n receives the count. */
const struct hp__cksum_variant *hp__cksum_variants(int *n);

/* Fold a 64-bit accumulator into a 32-bit partial sum. 2^32 == 1 (mod
 * 0xFFFF), so adding the halves keeps the value mod 0xFFFF; two rounds are
 * enough to bring any 64-bit value under 2^32. */
static inline uint32_t hp__fold64(uint64_t acc)
{
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
    acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
    return (uint32_t)acc;
}

/* Add with end-around carry: the one's complement sum of two 64-bit words
 * (compilers emit add + adc). */
static inline uint64_t hp__adc64(uint64_t a, uint64_t b)
{
    uint64_t s = a + b;
    return s + (s < b);
}

/* Inputs shorter than this are summed by hp_cksum_partial itself, without a
 * jump (scalar below HP__CKSUM_SSE_MIN, SSE from there on x86): vector
 * variants' set-up and reduction cost more than they save there. The vector
 * variants hand such inputs back to it. */
#define HP__CKSUM_VEC_MIN 128
#define HP__CKSUM_SSE_MIN 32

/* The scalar sum of fewer than 32 bytes, never reading outside [p, p+len).
 *
 * Words are read with memcpy as they sit in memory; a 64-bit word is
 * congruent (mod 0xFFFF) to the sum of its 16-bit halves in either byte
 * order, so adding 64-bit words with end-around carry gives the RFC 1071 sum.
 * One branch per bit of the length, each predicted alike for a given length.
 * From 8 bytes on, the last partial word is read as the 8 bytes that end the
 * buffer, with the bytes before it shifted out. The bytes kept start a
 * multiple of 8 bytes into the buffer, so words pair as they should, and an
 * odd last byte lands as the low-address byte of a zeroed word (RFC 1071
 * section 4.1). */
__attribute__((always_inline)) static inline uint64_t hp__cksum_short(const unsigned char *p,
                                                                      size_t len, uint64_t a)
{
    uint64_t b = 0, c = 0, q0, q1, q2, q3;
    if (len < 8) {
        uint64_t t = 0;
        if (len & 4) {
            uint32_t w;
            memcpy(&w, p, 4);
            t = w;
            p += 4;
        }
        if (len & 2) {
            uint16_t h;
            memcpy(&h, p, 2);
            t += h;
            p += 2;
        }
        if (len & 1) {
            uint16_t h = 0;
            memcpy(&h, p, 1);
            t += h;
        }
        return hp__adc64(a, t); /* t < 2^33 */
    }
    if (len & 16) {
        memcpy(&q0, p, 8);
        memcpy(&q1, p + 8, 8);
        a = hp__adc64(a, q0);
        b = hp__adc64(b, q1);
        p += 16;
    }
    if (len & 8) {
        memcpy(&q2, p, 8);
        c = hp__adc64(c, q2);
        p += 8;
    }
    len &= 7;
    memcpy(&q3, p + len - 8, 8); /* keep its last len bytes */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    q3 = (q3 << 8) << (56 - 8 * len);
#else
    q3 = (q3 >> 8) >> (56 - 8 * len);
#endif
    return hp__adc64(hp__adc64(a, b), hp__adc64(c, q3));
}

/* The scalar sum of any length: 32 bytes a turn in four add-with-carry
 * chains (a carry out of 64 bits wraps around, so no length overflows them;
 * four chains keep the ALUs busy), then hp__cksum_short. */
__attribute__((always_inline)) static inline uint64_t hp__cksum_words(const unsigned char *p,
                                                                      size_t len, uint64_t a)
{
    uint64_t b = 0, c = 0, d = 0;
    for (; len >= 32; len -= 32, p += 32) {
        uint64_t q0, q1, q2, q3;
        memcpy(&q0, p, 8);
        memcpy(&q1, p + 8, 8);
        memcpy(&q2, p + 16, 8);
        memcpy(&q3, p + 24, 8);
        a = hp__adc64(a, q0);
        b = hp__adc64(b, q1);
        c = hp__adc64(c, q2);
        d = hp__adc64(d, q3);
    }
    a = hp__adc64(hp__adc64(a, b), hp__adc64(c, d));
    return hp__cksum_short(p, len, a);
}

/* Fold a 64-bit one's complement sum to 32 bits (2^32 == 1 mod 0xFFFF). */
static inline uint32_t hp__fold64c(uint64_t a)
{
    uint32_t lo = (uint32_t)a, r = lo + (uint32_t)(a >> 32);
    return r + (r < lo);
}

#endif
