/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX2 checksum variant: three vector operations per 32 bytes (xor, vpmaddwd, add) on aligned loads; its fused copy. */
#include <hotpath/cksum.h>

#include "internal.h"

#ifdef HP_ARCH_X86
#include <immintrin.h>

/*
 * Why vpmaddwd: it adds pairs of 16-bit words into 32-bit lanes in one
 * operation, but treats the words as signed. Flipping each word's top bit
 * (xor 0x8000) maps an unsigned word w to the signed w - 32768 exactly, so
 * each lane receives w1 + w2 - 65536 per vector. Counting the vectors lets us
 * add the bias back exactly at the end: no lost carries, no approximation.
 *
 * Lane bounds: a lane gains a value in [-65536, 65534] per vector. With at
 * most MAXV + 2 vectors per round, the four accumulators' sum stays within
 * int32.
 *
 * Four accumulators, 128 bytes per turn: with two, the loop is bound by
 * dispatch (loop control and register copies) rather than by the vector
 * pipes. Loads are aligned to 32 bytes: a load that straddles two cache
 * lines costs two. The head before the first aligned vector and the tail
 * after the last are single masked vectors, so no scalar loop remains.
 */
#define VBYTES 32
#define LANES  (VBYTES / 4)
#define MAXV   ((size_t)16384)

#define AVX2 __attribute__((target("avx2")))

/* 32 zero bytes, 32 0xFF bytes, 32 zero bytes. 32 bytes loaded at offset k
 * keep the last k bytes of a vector; at offset 64 - k, the first k. */
static const unsigned char masks[96] __attribute__((aligned(32))) = {
    [32] = 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xFF,        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xFF,        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
};

/* vpshufb controls: identity, then swap the bytes of each 16-bit word. */
static const unsigned char shuffles[64] __attribute__((aligned(32))) = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 0,  1,  2,  3,  4,  5,
    6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 1,  0,  3,  2,  5,  4,  7,  6,  9,  8,  11, 10,
    13, 12, 15, 14, 1,  0,  3,  2,  5,  4,  7,  6,  9,  8,  11, 10, 13, 12, 15, 14,
};

__attribute__((always_inline)) AVX2 static inline __m256i step(__m256i a, __m256i x)
{
    const __m256i bias = _mm256_set1_epi16((short)0x8000);
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_xor_si256(x, bias), ones));
}

__attribute__((always_inline)) AVX2 static inline __m256i loadu(const unsigned char *p)
{
    return _mm256_loadu_si256((const __m256i_u *)p);
}

__attribute__((always_inline)) AVX2 static inline __m256i loada(const unsigned char *p)
{
    return _mm256_load_si256((const __m256i *)p);
}

/* Sum of the eight signed lanes, plus the bias of nv vectors. */
__attribute__((always_inline)) AVX2 static inline uint64_t total(__m256i s, size_t nv)
{
    __m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(s)),
                                 _mm256_cvtepi32_epi64(_mm256_extracti128_si256(s, 1)));
    __m128i t = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
    /* A plain sum of words, so non-negative. */
    return (uint64_t)(_mm_cvtsi128_si64(t) + (int64_t)(LANES * 65536) * (int64_t)nv);
}

__attribute__((aligned(64))) AVX2 uint32_t hp__cksum_avx2(const void *buf, size_t len, uint32_t sum)
{
    const unsigned char *p = buf;
    if (len < HP__CKSUM_VEC_MIN)
        return hp_cksum_partial(buf, len, sum); /* sums it without a jump back */

    /* Sums are taken in the frame of the first aligned address A: the head
     * [buf, A) is the first vector, masked to its head bytes. If the head is
     * odd, bytes pair the other way round in A's frame than in buf's: we swap
     * the head's bytes into A's frame and, at the end, rotate the total by 8
     * bits, which swaps the bytes of its 16-bit fold (RFC 1071 section 2(B))
     * and so brings everything back to buf's frame. */
    size_t head = (size_t)(-(uintptr_t)p) & (VBYTES - 1);
    unsigned odd = head & 1;
    __m256i h = _mm256_and_si256(loadu(p), loadu(masks + 64 - head));
    h = _mm256_shuffle_epi8(h, loada(shuffles + VBYTES * odd));
    __m256i a0 = step(_mm256_setzero_si256(), h);
    size_t extra = 1; /* vectors beyond the loop's, for the bias */
    p += head;
    len -= head;

    uint64_t body = 0;
    for (;;) {
        size_t nv = len / VBYTES;
        if (nv > MAXV)
            nv = MAXV;
        __m256i a1 = _mm256_setzero_si256(), a2 = a1, a3 = a1;
        size_t i = nv;
        for (; i >= 4; i -= 4, p += 4 * VBYTES) {
            a0 = step(a0, loada(p));
            a1 = step(a1, loada(p + VBYTES));
            a2 = step(a2, loada(p + 2 * VBYTES));
            a3 = step(a3, loada(p + 3 * VBYTES));
        }
        for (; i; i--, p += VBYTES)
            a0 = step(a0, loada(p));
        len -= nv * VBYTES;
        bool last = len < VBYTES;
        if (last) {
            /* The even part of what is left: one load that ends with it,
             * masked to keep only it (it starts an even distance from A, so
             * words pair right; zeroed words count in the bias). */
            size_t k = len & ~(size_t)1;
            a1 = step(a1, _mm256_and_si256(loadu(p + k - VBYTES), loadu(masks + k)));
            extra++;
            p += k;
            len -= k;
        }
        __m256i s = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
        body = hp__adc64(body, total(s, nv + extra));
        if (last)
            break;
        a0 = _mm256_setzero_si256();
        extra = 0;
    }
    if (len) { /* one odd byte, at an even offset from A */
        uint16_t b = 0;
        memcpy(&b, p, 1);
        body = hp__adc64(body, b);
    }
    unsigned rot = 8 * odd;
    body = (body << rot) | (body >> ((64 - rot) & 63));
    return hp__fold64c(hp__adc64(sum, body));
}

__attribute__((always_inline)) AVX2 static inline void storeu(unsigned char *p, __m256i x)
{
    _mm256_storeu_si256((__m256i_u *)p, x);
}

/*
 * The copy and the sum in one pass: each vector of src loaded once, stored
 * to dst and summed (the sum's scheme above). Loads and stores are
 * unaligned: src and dst rarely share an alignment, and the vectors start
 * an even distance from src, so words pair as in src's frame with no
 * rotation. The tail (under one vector) is copied as the last 32 bytes of
 * the whole, overlapping what is already copied, and summed as the masked
 * load of its even part (as above) plus an odd last byte. len >= 64.
 */
__attribute__((aligned(64))) AVX2 uint32_t hp__cksum_copy_avx2(void *restrict dst,
                                                               const void *restrict src, size_t len,
                                                               uint32_t sum)
{
    const unsigned char *p = src;
    unsigned char *d = dst;
    if (len < 2 * VBYTES) { /* not from hp_cksum_copy, which sends only >= 128 */
        sum = hp_cksum_partial(src, len, sum);
        if (len)
            memcpy(dst, src, len);
        return sum;
    }
    uint64_t body = 0;
    size_t left = len / VBYTES; /* whole vectors */
    while (left) {
        size_t nv = left < MAXV ? left : MAXV;
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        size_t i = nv;
        for (; i >= 4; i -= 4, p += 4 * VBYTES, d += 4 * VBYTES) {
            __m256i x0 = loadu(p), x1 = loadu(p + VBYTES), x2 = loadu(p + 2 * VBYTES),
                    x3 = loadu(p + 3 * VBYTES);
            /* In registers: else gcc loads each vector twice, once for the
             * store and once folded into the xor. */
            __asm__("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3));
            storeu(d, x0);
            storeu(d + VBYTES, x1);
            storeu(d + 2 * VBYTES, x2);
            storeu(d + 3 * VBYTES, x3);
            a0 = step(a0, x0);
            a1 = step(a1, x1);
            a2 = step(a2, x2);
            a3 = step(a3, x3);
        }
        for (; i; i--, p += VBYTES, d += VBYTES) {
            __m256i x = loadu(p);
            storeu(d, x);
            a0 = step(a0, x);
        }
        __m256i s = _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
        body = hp__adc64(body, total(s, nv));
        left -= nv;
    }
    size_t r = len % VBYTES;
    if (r) {
        const unsigned char *end = (const unsigned char *)src + len;
        storeu((unsigned char *)dst + len - VBYTES, loadu(end - VBYTES));
        size_t k = r & ~(size_t)1;
        if (k) {
            __m256i x = _mm256_and_si256(loadu(p + k - VBYTES), loadu(masks + k));
            body = hp__adc64(body, total(step(_mm256_setzero_si256(), x), 1));
        }
        if (r & 1) {
            uint16_t b = 0;
            memcpy(&b, p + k, 1);
            body = hp__adc64(body, b);
        }
    }
    return hp__fold64c(hp__adc64(sum, body));
}
#endif
