/* SPDX-License-Identifier: BSD-3-Clause */
/* hp_link_prepare_sleep: the mem link's eventfd signalled only for a sleeper, the fault decorator's held and delayed frames, pcap passing through. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"

static struct hp_buf *frame(struct hp_pool *p, uint32_t len)
{
    struct hp_buf *b = hp_buf_alloc(p);
    uint8_t *d = b ? hp_buf_append(b, len) : NULL;
    if (!d) {
        hp_buf_free(b);
        return NULL;
    }
    memset(d, 0xff, len);
    return b;
}

static int readable(const struct hp_link *l)
{
    struct pollfd p = {.fd = hp_link_fd(l), .events = POLLIN};
    return poll(&p, 1, 0);
}

static int send1(struct hp_link *l)
{
    struct hp_buf *b = frame(hp_link_pool(l), 60);
    if (!b)
        return -1;
    int r = hp_link_tx_burst(l, &b, 1);
    if (r != 1)
        hp_buf_free(b);
    return r;
}

static int drain(struct hp_link *l)
{
    struct hp_buf *b[32];
    int total = 0, k;
    while ((k = hp_link_rx_burst(l, b, 32)) > 0) {
        hp_buf_free_bulk(b, (unsigned)k);
        total += k;
    }
    return total;
}

static uint64_t wakeups(const struct hp_link *l)
{
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    return st.wakeups;
}

/* A busy pair makes no system call for waking: the eventfd stays quiet
 * until an end says it is going to sleep. */
HP_TEST(sleep_mem_no_signal_without_sleeper)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    for (int i = 0; i < 100; i++)
        HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(readable(e[1]), 0);
    HP_CHECK_EQ(wakeups(e[0]), 0u);
    HP_CHECK_EQ(drain(e[1]), 100);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(sleep_mem_armed_end_is_signalled_once)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    int64_t due = 123;
    HP_CHECK_EQ(hp_link_prepare_sleep(e[1], &due), 0);
    HP_CHECK_EQ(due, -1);
    HP_CHECK_EQ(readable(e[1]), 0);
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(readable(e[1]), 1);
    HP_CHECK_EQ(wakeups(e[0]), 1u);
    /* The flag was taken: more frames, no more signals. */
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(wakeups(e[0]), 1u);
    HP_CHECK_EQ(drain(e[1]), 2);
    /* Arming again consumes the old signal: a new sleep is not ended by it. */
    HP_CHECK_EQ(hp_link_prepare_sleep(e[1], NULL), 0);
    HP_CHECK_EQ(readable(e[1]), 0);
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(readable(e[1]), 1);
    HP_CHECK_EQ(drain(e[1]), 1);
    /* The other direction has its own flag and fd. */
    HP_CHECK_EQ(send1(e[1]), 1);
    HP_CHECK_EQ(readable(e[0]), 0);
    HP_CHECK_EQ(drain(e[0]), 1);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A frame already waiting when the end arms: no sleep, no stale signal. */
HP_TEST(sleep_mem_frame_waiting)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_GT(hp_link_prepare_sleep(e[1], NULL), 0);
    HP_CHECK_EQ(send1(e[0]), 1); /* the flag was withdrawn: no signal */
    HP_CHECK_EQ(wakeups(e[0]), 0u);
    HP_CHECK_EQ(drain(e[1]), 2);
    HP_CHECK_EQ(hp_link_prepare_sleep(e[1], NULL), 0);
    HP_CHECK_EQ(readable(e[1]), 0);
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Frames the fault decorator holds: reordered ones mean "poll again",
 * delayed ones bound the sleep. */
HP_TEST(sleep_fault_held_frames)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_fault_config fc = {.seed = 7,
                                 .delay = 1.0,
                                 .delay_us = 200000,
                                 .directions = HP_FAULT_RX};
    struct hp_link *f = hp_link_fault(e[1], &fc);
    HP_REQUIRE(f != NULL);
    HP_CHECK_EQ(hp_link_fd(f), hp_link_fd(e[1]));
    int64_t due = 0;
    HP_CHECK_EQ(hp_link_prepare_sleep(f, &due), 0);
    HP_CHECK_EQ(due, -1);
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(readable(f), 1);
    /* Received and held for 200 ms: nothing for the caller yet, and the
     * sleep is bounded by the time left. */
    HP_CHECK_EQ(drain(f), 0);
    HP_CHECK_EQ(hp_link_prepare_sleep(f, &due), 0);
    HP_CHECK(due > 0 && due <= 200000000);
    HP_CHECK_EQ(readable(f), 0);
    usleep((useconds_t)(due / 1000) + 1000);
    HP_CHECK_GT(hp_link_prepare_sleep(f, &due), 0); /* due now: poll */
    HP_CHECK_EQ(drain(f), 1);
    HP_CHECK_EQ(hp_link_prepare_sleep(f, &due), 0);
    HP_CHECK_EQ(due, -1);
    hp_link_close(f);
    hp_link_close(e[0]);

    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    fc = (struct hp_fault_config){.seed = 7, .reorder = 1.0, .directions = HP_FAULT_RX};
    f = hp_link_fault(e[1], &fc);
    HP_REQUIRE(f != NULL);
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(drain(f), 0); /* held for reordering behind the next one */
    HP_CHECK_GT(hp_link_prepare_sleep(f, NULL), 0);
    HP_CHECK_EQ(drain(f), 1); /* no next one came: released in place */
    HP_CHECK_EQ(hp_link_prepare_sleep(f, NULL), 0);
    hp_link_close(f);
    hp_link_close(e[0]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(sleep_pcap_passes_through)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    char path[64];
    snprintf(path, sizeof path, "/tmp/hp_sleep_%d.pcap", (int)getpid());
    struct hp_link *p = hp_link_pcap(e[1], path);
    HP_REQUIRE(p != NULL);
    HP_CHECK_EQ(hp_link_prepare_sleep(p, NULL), 0);
    HP_CHECK_EQ(send1(e[0]), 1);
    HP_CHECK_EQ(readable(p), 1);
    HP_CHECK_GT(hp_link_prepare_sleep(p, NULL), 0);
    HP_CHECK_EQ(drain(p), 1);
    hp_link_close(p);
    hp_link_close(e[0]);
    unlink(path);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
