/* SPDX-License-Identifier: BSD-3-Clause */
/* Test frames shared by the tap and afpacket interop tests. */
#ifndef HP_TEST_FRAMES_H
#define HP_TEST_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/buf.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

/* IEEE 802 local experimental EtherType: the kernel never sends it, so
 * counting frames of this type is exact. */
#define TEST_ETHERTYPE 0x88B5
/* Every wait is bounded by this. */
#define WAIT_MS 2000

uint32_t tf_frame_len(uint32_t seq);
void tf_make_frame(uint8_t *f, uint32_t len, const uint8_t dst[6], const uint8_t src[6],
                   uint32_t seq);
bool tf_is_test_frame(const uint8_t *f, size_t len);
struct hp_buf *tf_frame_buf(struct hp_pool *pool, uint32_t len, const uint8_t dst[6],
                            const uint8_t src[6], uint32_t seq, unsigned segs);
long long tf_now_ms(void);
int tf_raw_open(const char *ifname);
unsigned tf_raw_receive(int fd, uint32_t first, unsigned want, const uint8_t dst[6],
                        const uint8_t src[6], unsigned *bad);
unsigned tf_link_receive(struct hp_link *l, unsigned burst, uint32_t first, unsigned want,
                         const uint8_t dst[6], const uint8_t src[6], unsigned *bad,
                         unsigned *stray);
bool tf_link_send(struct hp_link *l, uint32_t first, unsigned count, const uint8_t dst[6],
                  const uint8_t src[6]);

#endif
