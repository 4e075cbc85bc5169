/* SPDX-License-Identifier: BSD-3-Clause */
/* AVX-512BW checksum variant: the AVX2 scheme on 64-byte vectors, with a fault-free masked tail; its fused copy. */
#include "internal.h"

#ifdef HP_ARCH_X86
#include <immintrin.h>

/* Same scheme and bounds as cksum_avx2.c (see there): xor 0x8000 turns
 * unsigned words into signed ones, vpmaddwd adds pairs, and the exact bias
 * of 65536 per lane per vector is added back at the end. The tail (under one
 * vector) is read with a byte-masked load, which never touches the masked-out
 * bytes (no fault at a page end) and zero-fills them, so an odd last byte is
 * already the low-address byte of a zeroed word. */
#define VBYTES 64
#define LANES  (VBYTES / 4)
#define MAXV   ((size_t)16384)

#define AVX512 __attribute__((target("avx512f,avx512bw")))

__attribute__((always_inline)) AVX512 static inline __m512i step(__m512i a, __m512i x)
{
    const __m512i bias = _mm512_set1_epi16((short)0x8000);
    const __m512i ones = _mm512_set1_epi16(1);
    return _mm512_add_epi32(a, _mm512_madd_epi16(_mm512_xor_si512(x, bias), ones));
}

/* Sum of the sixteen signed 32-bit lanes, plus the bias of nv vectors. */
__attribute__((always_inline)) AVX512 static inline uint64_t total(__m512i s, size_t nv)
{
    __m512i w = _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(s)),
                                 _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(s, 1)));
    return (uint64_t)(_mm512_reduce_add_epi64(w) + (int64_t)(LANES * 65536) * (int64_t)nv);
}

/* The sum of p[0..len) added to acc; with d, p's bytes also copied to d
 * in the same pass: each vector loaded once, stored and summed (the two
 * functions below inline it, d NULL or not, so the sum has no stores).
 * Unaligned loads and stores: the vectors start an even distance from p,
 * so words pair as in p. */
__attribute__((always_inline)) AVX512 static inline uint64_t run(const unsigned char *p,
                                                                 unsigned char *d, size_t len,
                                                                 uint64_t acc)
{
    while (len >= VBYTES) {
        size_t nv = len / VBYTES;
        if (nv > MAXV)
            nv = MAXV;
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
        size_t i = nv;
        for (; i >= 4; i -= 4, p += 4 * VBYTES) {
            __m512i x0 = _mm512_loadu_si512((const void *)p);
            __m512i x1 = _mm512_loadu_si512((const void *)(p + VBYTES));
            __m512i x2 = _mm512_loadu_si512((const void *)(p + 2 * VBYTES));
            __m512i x3 = _mm512_loadu_si512((const void *)(p + 3 * VBYTES));
            if (d) {
                /* In registers: else gcc may load each twice, for the
                 * store and folded into the xor (see cksum_avx2.c). */
                __asm__("" : "+v"(x0), "+v"(x1), "+v"(x2), "+v"(x3));
                _mm512_storeu_si512((void *)d, x0);
                _mm512_storeu_si512((void *)(d + VBYTES), x1);
                _mm512_storeu_si512((void *)(d + 2 * VBYTES), x2);
                _mm512_storeu_si512((void *)(d + 3 * VBYTES), x3);
                d += 4 * VBYTES;
            }
            a0 = step(a0, x0);
            a1 = step(a1, x1);
            a2 = step(a2, x2);
            a3 = step(a3, x3);
        }
        for (; i; i--, p += VBYTES) {
            __m512i x = _mm512_loadu_si512((const void *)p);
            if (d) {
                _mm512_storeu_si512((void *)d, x);
                d += VBYTES;
            }
            a0 = step(a0, x);
        }
        len -= nv * VBYTES;
        __m512i s = _mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3));
        acc = hp__adc64(acc, total(s, nv));
    }
    if (len) {
        __mmask64 m = ((__mmask64)1 << len) - 1; /* len < 64 here */
        __m512i x = _mm512_maskz_loadu_epi8(m, (const void *)p);
        if (d)
            _mm512_mask_storeu_epi8((void *)d, m, x);
        /* A zeroed word adds 0 - 32768 after the xor, which the bias of one
         * vector accounts for like any other word. */
        acc = hp__adc64(acc, total(step(_mm512_setzero_si512(), x), 1));
    }
    return acc;
}

AVX512 uint32_t hp__cksum_avx512(const void *buf, size_t len, uint32_t sum)
{
    return hp__fold64c(run(buf, NULL, len, sum));
}

/* The copy and the sum in one pass; the tail's masked load and masked
 * store touch neither buffer past its end. */
AVX512 uint32_t hp__cksum_copy_avx512(void *restrict dst, const void *restrict src, size_t len,
                                      uint32_t sum)
{
    return hp__fold64c(run(src, dst, len, sum));
}
#endif
