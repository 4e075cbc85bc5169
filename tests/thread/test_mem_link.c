/* SPDX-License-Identifier: BSD-3-Clause */
/* The mem link across threads: each end on its own thread, frames in order, none lost, under TSan. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"

struct run {
    struct hp_link *tx, *rx;
    uint64_t n;
    uint64_t bad;
};

static void *sender(void *arg)
{
    struct run *r = arg;
    struct hp_pool *p = hp_link_pool(r->tx);
    uint64_t seq = 0;
    struct hp_buf *b[32];
    while (seq < r->n) {
        unsigned n = r->n - seq < 32 ? (unsigned)(r->n - seq) : 32;
        if (hp_buf_alloc_bulk(p, b, n) < 0)
            continue; /* the receiver is behind: its frees refill the pool */
        for (unsigned i = 0; i < n; i++) {
            uint8_t *d = hp_buf_append(b[i], 64);
            uint64_t s = seq + i;
            memcpy(d + 14, &s, 8);
        }
        unsigned done = 0;
        while (done < n) {
            int k = hp_link_tx_burst(r->tx, b + done, n - done);
            done += (unsigned)k;
        }
        seq += n;
    }
    hp_thread_exit();
    return NULL;
}

static void *receiver(void *arg)
{
    struct run *r = arg;
    uint64_t next = 0;
    struct hp_buf *b[32];
    while (next < r->n) {
        int k = hp_link_rx_burst(r->rx, b, 32);
        for (int i = 0; i < k; i++) {
            uint64_t s;
            memcpy(&s, (uint8_t *)hp_buf_data(b[i]) + 14, 8);
            if (s != next)
                r->bad++;
            next++;
        }
        if (k > 0)
            hp_buf_free_bulk(b, (unsigned)k);
    }
    hp_thread_exit();
    return NULL;
}

HP_TEST(mem_link_two_threads_in_order)
{
    const char *e = getenv("HP_STRESS_OPS");
    uint64_t n = e ? (uint64_t)strtod(e, NULL) / 10 : 1000000;
    if (n < 10000)
        n = 10000;
    for (int policy = HP_ALIEN_LOCAL; policy <= HP_ALIEN_ADAPTIVE; policy++) {
        struct hp_link *ends[2];
        struct hp_link_config cfg = {.ring_size = 256};
        HP_REQUIRE_EQ(hp_link_mem_pair(&cfg, ends), 0);
        hp_pool_set_alien_policy(hp_link_pool(ends[0]), policy);
        struct run r = {.tx = ends[0], .rx = ends[1], .n = n};
        pthread_t a, b;
        HP_REQUIRE_EQ(pthread_create(&a, NULL, sender, &r), 0);
        HP_REQUIRE_EQ(pthread_create(&b, NULL, receiver, &r), 0);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        HP_CHECK_EQ(r.bad, 0);
        struct hp_link_stats st;
        hp_link_stats(ends[1], &st);
        HP_CHECK_EQ(st.rx_packets, n);
        HP_CHECK_EQ(hp_link_close(ends[0]), 0);
        HP_CHECK_EQ(hp_link_close(ends[1]), 0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
