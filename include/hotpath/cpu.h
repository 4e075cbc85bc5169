/* SPDX-License-Identifier: BSD-3-Clause */
/* CPU features that select code paths at run time, and a one-line description for reports. */
#ifndef HOTPATH_CPU_H
#define HOTPATH_CPU_H

#include <stddef.h>
#include <stdint.h>

#include <hotpath/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Feature bits reported by hp_cpu_features(). A bit is set only when both
 * the CPU and the operating system (saved register state) support it. */
enum hp_cpu_feature {
    HP_CPU_SSE42 = 1u << 0,
    HP_CPU_AVX2 = 1u << 1,
    HP_CPU_AVX512F = 1u << 2,
    HP_CPU_AVX512BW = 1u << 3,
    HP_CPU_AVX512VNNI = 1u << 4,
    HP_CPU_NEON = 1u << 8,
};

/** The features of the CPU we run on (detected once, cached). Thread-safe. */
HP_API uint32_t hp_cpu_features(void);

/**
 * Describe the CPU for reports: architecture, model name and the features
 * above, e.g. "x86_64 AMD EPYC (family 25 model 1): sse4.2 avx2".
 * @return the length of the full description (as snprintf does).
 */
HP_API int hp_cpu_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
