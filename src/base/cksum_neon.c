/* SPDX-License-Identifier: BSD-3-Clause */
/* AArch64 Advanced SIMD checksum variant: pairwise add-and-accumulate of unsigned words. */
#include "internal.h"

#ifdef HP_ARCH_ARM64
#include <arm_neon.h>

/* vpadalq_u16 adds pairs of unsigned 16-bit words into 32-bit lanes in one
 * instruction, so unlike x86 no bias is needed. A lane gains at most
 * 2 * 65535 per step; 16384 steps per accumulator keep it under 2^32. */
#define MAXSTEPS ((size_t)16384)

uint32_t hp__cksum_neon(const void *buf, size_t len, uint32_t sum)
{
    const unsigned char *p = buf;
    uint64_t acc = sum;

    while (len >= 32) {
        size_t n = len / 32;
        if (n > MAXSTEPS)
            n = MAXSTEPS;
        uint32x4_t a0 = vdupq_n_u32(0), a1 = vdupq_n_u32(0);
        for (size_t i = 0; i < n; i++, p += 32) {
            a0 = vpadalq_u16(a0, vreinterpretq_u16_u8(vld1q_u8(p)));
            a1 = vpadalq_u16(a1, vreinterpretq_u16_u8(vld1q_u8(p + 16)));
        }
        len -= n * 32;
        acc = hp__adc64(acc, vaddlvq_u32(a0) + vaddlvq_u32(a1));
    }
    return hp__fold64c(hp__cksum_words(p, len, acc)); /* len < 32 here */
}
#endif
