/* SPDX-License-Identifier: BSD-3-Clause */
/* The teardown check of the buf tests: no buffer still in use, every pool a test made destroyed. */
#include <stdio.h>

#include "hp_test.h"
#include "track.h"

#define MAX_POOLS 16

static struct hp_pool *pools[MAX_POOLS];
static int npools;
static bool made_pool; /* the test created a pool in this process */

struct hp_pool *track_pool(struct hp_pool *p)
{
    if (p) {
        made_pool = true;
        if (npools < MAX_POOLS)
            pools[npools++] = p;
    }
    return p;
}

void untrack_pool(struct hp_pool *p)
{
    for (int i = 0; i < npools; i++)
        if (pools[i] == p) {
            pools[i] = pools[--npools];
            return;
        }
}

void track_mark(void)
{
    made_pool = true;
}

bool track_full(void)
{
    return npools == MAX_POOLS;
}

/* Every test ends with no buffer out and every pool it made destroyed. */
static int buf_teardown(void)
{
    int problems = 0;
    if (made_pool) {
        long out = hp_pools_in_use();
        if (out) {
            fprintf(stderr, "    %ld buffer(s) still in use\n", out);
            problems += (int)out;
        }
    }
    for (int i = 0; i < npools; i++) {
        fprintf(stderr, "    pool \"%s\" not destroyed\n", hp_pool_name(pools[i]));
        problems++;
    }
    npools = 0;
    made_pool = false;
    return problems;
}

__attribute__((constructor)) static void buf_register_teardown(void)
{
    hp_test_add_teardown("buffers still in use", buf_teardown);
}
