/* SPDX-License-Identifier: BSD-3-Clause */
/* CPU feature detection (cpuid and the OS-enabled register state) and a description for reports. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <hotpath/cpu.h>

#include "internal.h"

#ifdef HP_ARCH_X86
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static uint32_t detect(void)
{
    unsigned a, b, c, d;
    uint32_t f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (c & (1u << 20))
        f |= HP_CPU_SSE42;
    /* AVX state must be enabled by the OS (OSXSAVE, then XCR0 bits 1-2);
     * AVX-512 also needs opmask and ZMM state (XCR0 bits 5-7). */
    if (!(c & (1u << 27)))
        return f;
    uint64_t xcr0 = xgetbv0();
    bool ymm = (xcr0 & 0x6) == 0x6;
    bool zmm = ymm && (xcr0 & 0xE0) == 0xE0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return f;
    if (ymm && (b & (1u << 5)))
        f |= HP_CPU_AVX2;
    if (zmm && (b & (1u << 16)))
        f |= HP_CPU_AVX512F;
    if (zmm && (b & (1u << 16)) && (b & (1u << 30)))
        f |= HP_CPU_AVX512BW;
    if (zmm && (c & (1u << 11)))
        f |= HP_CPU_AVX512VNNI;
    return f;
}

static void model(char *buf, size_t len)
{
    unsigned r[12];
    unsigned a, b, c, d;
    buf[0] = 0;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
        char name[49];
        memcpy(name, r, 48);
        name[48] = 0;
        char *s = name;
        while (*s == ' ')
            s++;
        size_t n = strlen(s);
        while (n && s[n - 1] == ' ')
            s[--n] = 0;
        unsigned fam = 0, mod = 0;
        if (__get_cpuid(1, &a, &b, &c, &d)) {
            fam = (a >> 8) & 0xF;
            mod = (a >> 4) & 0xF;
            if (fam == 0xF)
                fam += (a >> 20) & 0xFF;
            if (fam >= 6)
                mod |= ((a >> 16) & 0xF) << 4;
        }
        snprintf(buf, len, "%s (family %u model %u)", s, fam, mod);
    }
}
#define HP_ARCH_NAME "x86_64"
#elif defined(HP_ARCH_ARM64)
static uint32_t detect(void)
{
    return HP_CPU_NEON; /* Advanced SIMD is mandatory on AArch64 */
}
static void model(char *buf, size_t len)
{
    snprintf(buf, len, "aarch64");
}
#define HP_ARCH_NAME "aarch64"
#else
static uint32_t detect(void)
{
    return 0;
}
static void model(char *buf, size_t len)
{
    snprintf(buf, len, "generic");
}
#define HP_ARCH_NAME "unknown-arch"
#endif

/* Bit 31 marks "detected"; feature bits never use it. */
static _Atomic uint32_t cached;

HP_API uint32_t hp_cpu_features(void)
{
    uint32_t f = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!(f & 0x80000000u)) {
        f = detect() | 0x80000000u; /* idempotent: racing threads agree */
        atomic_store_explicit(&cached, f, memory_order_relaxed);
    }
    return f & 0x7FFFFFFFu;
}

HP_API int hp_cpu_describe(char *buf, size_t len)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {
        {HP_CPU_SSE42, "sse4.2"},          {HP_CPU_AVX2, "avx2"},
        {HP_CPU_AVX512F, "avx512f"},       {HP_CPU_AVX512BW, "avx512bw"},
        {HP_CPU_AVX512VNNI, "avx512vnni"}, {HP_CPU_NEON, "neon"},
    };
    char m[96];
    char feats[128] = "";
    size_t used = 0;
    uint32_t f = hp_cpu_features();
    model(m, sizeof m);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(f & names[i].bit))
            continue;
        int n = snprintf(feats + used, sizeof feats - used, "%s%s", used ? " " : "", names[i].name);
        if (n > 0 && (size_t)n < sizeof feats - used)
            used += (size_t)n;
    }
#ifdef HP_ARCH_X86
    if (!(f & HP_CPU_AVX512F))
        snprintf(feats + used, sizeof feats - used, "%s(no avx512)", used ? " " : "");
#endif
    return snprintf(buf, len, "%s %s: %s", HP_ARCH_NAME, m, feats);
}
