/* SPDX-License-Identifier: BSD-3-Clause */
/* The mem link across threads: each end on its own thread, frames in order, none lost, and no wake-up lost by a sleeping end; under TSan and without it. */
#include <poll.h>
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

/* ---- sleep and wake-up: a ping-pong in which both ends sleep each turn ---- */

#define PP_TURNS   5000
#define PP_WAIT_MS 10000 /* a lost wake-up waits for this; no real wait comes near it */

struct pp_end {
    struct hp_link *l;
    bool serve; /* answers; the other end asks first */
    uint32_t lost, bad, sleeps;
};

/* Wait for one frame on e, sleeping on the link's fd whenever it is armed:
 * the frame's sender must wake us (0), or PP_WAIT_MS passes (-1). */
static int pp_recv(struct pp_end *e, uint32_t *v)
{
    struct hp_buf *b;
    for (;;) {
        if (hp_link_rx_burst(e->l, &b, 1) == 1)
            break;
        int rc = hp_link_prepare_sleep(e->l, NULL);
        if (rc > 0)
            continue;
        if (rc < 0)
            return -1;
        e->sleeps++;
        struct pollfd pfd = {.fd = hp_link_fd(e->l), .events = POLLIN};
        if (poll(&pfd, 1, PP_WAIT_MS) == 0) {
            /* The frame was there and nobody said so, or the other end
             * stopped: either way the turns end here. */
            if (hp_link_rx_burst(e->l, &b, 1) == 1) {
                e->lost++;
                hp_buf_free(b);
            }
            return -1;
        }
    }
    memcpy(v, (uint8_t *)hp_buf_data(b) + 14, 4);
    hp_buf_free(b);
    return 0;
}

static void pp_send(struct pp_end *e, uint32_t v)
{
    struct hp_buf *b = hp_buf_alloc(hp_link_pool(e->l));
    if (!b) {
        e->bad++;
        return;
    }
    uint8_t *d = hp_buf_append(b, 64);
    memset(d, 0, 64);
    memcpy(d + 14, &v, 4);
    if (hp_link_tx_burst(e->l, &b, 1) != 1) {
        hp_buf_free(b);
        e->bad++;
    }
}

static void *pp_main(void *arg)
{
    struct pp_end *e = arg;
    for (uint32_t t = 0; t < PP_TURNS; t++) {
        uint32_t v = 0;
        if (!e->serve)
            pp_send(e, t);
        if (pp_recv(e, &v) < 0 || v != t) {
            e->bad++;
            break;
        }
        if (e->serve)
            pp_send(e, v);
    }
    hp_thread_exit();
    return NULL;
}

/* Each turn, each end finds its ring empty and sleeps, and the other's
 * frame must wake it: the sleeper's flag against the sender's look at it
 * (Dekker's pattern, or its asymmetric form with membarrier(2) where the
 * kernel has it: src/link/mem.c). A lost wake-up shows as a frame found
 * after a PP_WAIT_MS sleep. */
HP_TEST(mem_link_sleepers_woken_every_turn)
{
    struct hp_link *ends[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, ends), 0);
    struct pp_end e[2] = {{.l = ends[0]}, {.l = ends[1], .serve = true}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        HP_REQUIRE_EQ(pthread_create(&th[i], NULL, pp_main, &e[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        HP_CHECK_EQ(e[i].lost, 0);
        HP_CHECK_EQ(e[i].bad, 0);
    }
    /* Both slept, most turns (a frame may beat the arming now and then). */
    HP_CHECK_GT(e[0].sleeps + e[1].sleeps, PP_TURNS);
    struct hp_link_stats st;
    hp_link_stats(ends[0], &st);
    HP_CHECK_GT(st.wakeups, 0);
    HP_CHECK_EQ(hp_link_close(ends[0]), 0);
    HP_CHECK_EQ(hp_link_close(ends[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
