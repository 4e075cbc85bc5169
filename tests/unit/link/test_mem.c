/* SPDX-License-Identifier: BSD-3-Clause */
/* The mem link pair: order, bursts, full rings, counters, bad frames, and every buffer returned. */
#include <errno.h>
#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"

static struct hp_buf *frame(struct hp_pool *p, uint32_t len, uint32_t seq)
{
    struct hp_buf *b = hp_buf_alloc(p);
    if (!b)
        return NULL;
    uint8_t *d = hp_buf_append(b, len);
    if (!d) {
        hp_buf_free(b);
        return NULL;
    }
    memset(d, (int)(seq & 0xff), len);
    if (len >= 18)
        memcpy(d + 14, &seq, 4);
    return b;
}

static uint32_t seq_of(const struct hp_buf *b)
{
    uint32_t s;
    memcpy(&s, (const uint8_t *)hp_buf_data(b) + 14, 4);
    return s;
}

HP_TEST(mem_pair_defaults)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    HP_CHECK_STREQ(hp_link_kind(e[0]), "mem");
    HP_CHECK(strcmp(hp_link_name(e[0]), hp_link_name(e[1])) != 0);
    HP_CHECK_EQ(hp_link_mtu(e[0]), 1500u);
    HP_CHECK(hp_link_pool(e[0]) == hp_link_pool(e[1]));
    /* An eventfd per end, for a sleeper (hp_link_prepare_sleep). */
    HP_CHECK(hp_link_fd(e[0]) >= 0);
    HP_CHECK(hp_link_fd(e[0]) != hp_link_fd(e[1]));
    HP_CHECK(hp_link_caps(e[0]) & HP_LINK_CAP_FD);
    HP_CHECK(hp_link_caps(e[0]) & HP_LINK_CAP_ZEROCOPY_TX);
    HP_CHECK(!(hp_link_caps(e[0]) & HP_LINK_CAP_KERNEL));
    uint8_t m0[6], m1[6];
    hp_link_mac(e[0], m0);
    hp_link_mac(e[1], m1);
    HP_CHECK(memcmp(m0, m1, 6) != 0);
    HP_CHECK_EQ(m0[0] & 3, 2); /* locally administered, unicast */
    struct hp_buf *b[4];
    HP_CHECK_EQ(hp_link_completions(e[0], b, 4), 0);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_order_and_content_both_ways)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_pool *p = hp_link_pool(e[0]);
    for (int dir = 0; dir < 2; dir++) {
        struct hp_link *tx = e[dir], *rx = e[1 - dir];
        uint32_t next_rx = 0, seq = 0;
        for (int round = 0; round < 50; round++) {
            struct hp_buf *b[64];
            unsigned n = 1 + (unsigned)round % 64;
            for (unsigned i = 0; i < n; i++) {
                b[i] = frame(p, 60 + (seq * 37) % 1455, seq);
                HP_REQUIRE(b[i] != NULL);
                seq++;
            }
            HP_REQUIRE_EQ(hp_link_tx_burst(tx, b, n), (int)n);
            int k;
            while ((k = hp_link_rx_burst(rx, b, 17)) > 0) {
                for (int i = 0; i < k; i++) {
                    HP_CHECK_EQ(seq_of(b[i]), next_rx);
                    HP_CHECK_EQ(b[i]->pkt_len, 60 + (next_rx * 37) % 1455);
                    next_rx++;
                }
                hp_buf_free_bulk(b, (unsigned)k);
            }
        }
        HP_CHECK_EQ(next_rx, seq);
        struct hp_link_stats st;
        hp_link_stats(tx, &st);
        HP_CHECK_EQ(st.tx_packets, seq);
        hp_link_stats(rx, &st);
        HP_CHECK_EQ(st.rx_packets, seq);
    }
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_full_ring_takes_what_fits)
{
    struct hp_link *e[2];
    struct hp_link_config cfg = {.ring_size = 8};
    HP_REQUIRE_EQ(hp_link_mem_pair(&cfg, e), 0);
    struct hp_pool *p = hp_link_pool(e[0]);
    struct hp_buf *b[12];
    for (unsigned i = 0; i < 12; i++)
        HP_REQUIRE((b[i] = frame(p, 64, i)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(e[0], b, 12), 8);
    /* The caller still owns the rest; a full ring takes none. */
    HP_CHECK_EQ(hp_link_tx_burst(e[0], b + 8, 4), 0);
    struct hp_link_stats st;
    hp_link_stats(e[0], &st);
    HP_CHECK_EQ(st.tx_full, 2);
    HP_CHECK_EQ(st.tx_packets, 8);
    struct hp_buf *r[16];
    HP_CHECK_EQ(hp_link_rx_burst(e[1], r, 3), 3);
    HP_CHECK_EQ(hp_link_tx_burst(e[0], b + 8, 4), 3);
    hp_buf_free(b[11]);
    hp_buf_free_bulk(r, 3);
    /* Closing one end, then the other, returns the 8 still on the wire. */
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_bad_frames_dropped_and_counted)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_pool *p = hp_link_pool(e[0]);
    struct hp_buf *b[4];
    HP_REQUIRE((b[0] = frame(p, 64, 0)) != NULL);
    HP_REQUIRE((b[1] = frame(p, 1500 + 14 + 4 + 1, 1)) != NULL); /* past MTU + VLAN header */
    HP_REQUIRE((b[2] = frame(p, 10, 2)) != NULL);                /* shorter than Ethernet */
    HP_REQUIRE((b[3] = frame(p, 1518, 3)) != NULL);              /* largest legal, tagged */
    HP_CHECK_EQ(hp_link_tx_burst(e[0], b, 4), 4);
    struct hp_link_stats st;
    hp_link_stats(e[0], &st);
    HP_CHECK_EQ(st.tx_dropped, 2);
    HP_CHECK_EQ(st.tx_packets, 2);
    struct hp_buf *r[4];
    HP_REQUIRE_EQ(hp_link_rx_burst(e[1], r, 4), 2);
    HP_CHECK_EQ(seq_of(r[0]), 0);
    HP_CHECK_EQ(seq_of(r[1]), 3);
    hp_buf_free_bulk(r, 2);
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_mtu_bounds)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    HP_CHECK_EQ(hp_link_set_mtu(e[0], 9000), -EMSGSIZE); /* 2048-byte buffers */
    HP_CHECK(strstr(hp_link_error(), "MTU 9000") != NULL);
    HP_CHECK_EQ(hp_link_set_mtu(e[0], 67), -EINVAL);
    HP_CHECK_EQ(hp_link_set_mtu(e[0], 1800), 0);
    HP_CHECK_EQ(hp_link_mtu(e[0]), 1800u);
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_caller_pool_is_not_destroyed)
{
    struct hp_pool_config pc = {.name = "mine", .n_bufs = 64};
    struct hp_pool *p = hp_pool_create(&pc);
    HP_REQUIRE(p != NULL);
    struct hp_link *e[2];
    struct hp_link_config cfg = {.pool = p, .iface = "wire"};
    HP_REQUIRE_EQ(hp_link_mem_pair(&cfg, e), 0);
    HP_CHECK(hp_link_pool(e[1]) == p);
    HP_CHECK_STREQ(hp_link_name(e[0]), "wire");
    HP_CHECK_STREQ(hp_link_name(e[1]), "wire-b");
    struct hp_buf *b = frame(p, 100, 7);
    HP_REQUIRE(b != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(e[1], &b, 1), 1);
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_close_with_buffers_out_reports_busy)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_buf *b = frame(hp_link_pool(e[0]), 64, 0);
    HP_REQUIRE(b != NULL);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    /* The user still holds b: the pool cannot go, and says so. */
    HP_CHECK_EQ(hp_link_close(e[1]), -EBUSY);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(mem_bad_arguments)
{
    struct hp_link *e[2] = {(struct hp_link *)1, (struct hp_link *)1};
    struct hp_link_config cfg = {.ring_size = 12};
    HP_CHECK_EQ(hp_link_mem_pair(&cfg, e), -EINVAL);
    HP_CHECK(e[0] == NULL && e[1] == NULL);
    HP_CHECK(strstr(hp_link_error(), "power of two") != NULL);
    cfg.ring_size = 0;
    cfg.flags = HP_LINK_F_ZEROCOPY;
    HP_CHECK_EQ(hp_link_mem_pair(&cfg, e), -EINVAL);
    HP_CHECK_EQ(hp_link_mem_pair(NULL, NULL), -EINVAL);
    errno = 0;
    HP_CHECK(hp_link_open("mem", NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(hp_link_open("nosuch", NULL) == NULL);
    HP_CHECK(strstr(hp_link_error(), "nosuch") != NULL);
    HP_CHECK(hp_link_open(NULL, NULL) == NULL);
    HP_CHECK_EQ(hp_link_close(NULL), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
