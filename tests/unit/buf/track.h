/* SPDX-License-Identifier: BSD-3-Clause */
/* Pools made by the buf tests, so that every test ends checking that no buffer is out and every pool is destroyed. */
#ifndef HP_TEST_BUF_TRACK_H
#define HP_TEST_BUF_TRACK_H

#include <stdbool.h>

#include <hotpath/pool.h>

/* Record a pool the test made (NULL passes through); returns p. */
struct hp_pool *track_pool(struct hp_pool *p);
/* Forget a pool the test destroyed. */
void untrack_pool(struct hp_pool *p);
/* Note that the test made pools it destroys itself (checks in-use only). */
void track_mark(void);
/* No room to record another pool. */
bool track_full(void);

#endif
