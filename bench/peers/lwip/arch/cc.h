/* SPDX-License-Identifier: BSD-3-Clause */
/* lwIP's port header for `hotpath bench peers`: Linux with glibc, 64-bit, our random numbers. */
#ifndef HOTPATH_PEERS_LWIP_CC_H
#define HOTPATH_PEERS_LWIP_CC_H

#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* lwIP's diagnostics go nowhere (LWIP_NOASSERT, no LWIP_DEBUG). */
#define LWIP_PLATFORM_DIAG(x)                                                                      \
    do {                                                                                           \
    } while (0)
#define LWIP_PLATFORM_ASSERT(x)                                                                    \
    do {                                                                                           \
    } while (0)

/* Initial ephemeral port and ISNs: a xorshift generator of the glue. */
uint32_t lwip_peer_rand(void);
#define LWIP_RAND() lwip_peer_rand()

#endif
