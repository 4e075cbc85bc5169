/* SPDX-License-Identifier: BSD-3-Clause */
/* Benchmark peer: DPDK's raw checksum loop, included from the distro's libdpdk-dev headers (not copied). */
#include <stddef.h>
#include <stdint.h>

#include <rte_config.h>
#include <rte_ip.h>

/* Built twice by CMake, with HP_PEER_SUFFIX=baseline (our -march=x86-64-v2)
 * and HP_PEER_SUFFIX=native (-march=native), so that the benchmark shows the
 * compiler's best vectorisation of the same loop. */
#define HP_CAT_(a, b) a##b
#define HP_CAT(a, b)  HP_CAT_(a, b)
#define HP_PEER_FN    HP_CAT(hp_peer_dpdk_cksum_, HP_PEER_SUFFIX)

uint32_t HP_PEER_FN(const void *buf, size_t len, uint32_t sum);

uint32_t HP_PEER_FN(const void *buf, size_t len, uint32_t sum)
{
    return __rte_raw_cksum(buf, len, sum);
}
