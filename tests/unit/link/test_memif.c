/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link: a server and a client in one process (or a forked child), frames both ways, chains, full rings, the peer gone and back, hostile peers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "link/memif_internal.h"

/* ---- helpers ------------------------------------------------------------- */

static char *sock_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/hpm-%d-%s.sock", (int)getpid(), tag);
    return buf;
}

static struct hp_link *open_memif(int role, const char *path, uint32_t id, unsigned flags, uint32_t ring)
{
    struct hp_link_config c = {.ring_size = ring, .flags = flags};
    c.memif.role = role;
    c.memif.socket = path;
    c.memif.id = id;
    return hp_link_open("memif", &c);
}

__attribute__((unused)) static struct hp_link *open_cfg(const struct hp_link_config *c)
{
    return hp_link_open("memif", c);
}

static void nap(void)
{
    struct timespec t = {0, 200000};
    nanosleep(&t, NULL);
}

/* Poll both links (drop whatever arrives) until both are up or ~3 s pass. */
static bool wait_up(struct hp_link *a, struct hp_link *b)
{
    for (int i = 0; i < 15000; i++) {
        struct hp_buf *x[8];
        int k = hp_link_rx_burst(a, x, 8);
        if (k > 0)
            hp_buf_free_bulk(x, (unsigned)k);
        if (b && (k = hp_link_rx_burst(b, x, 8)) > 0)
            hp_buf_free_bulk(x, (unsigned)k);
        if (hp_link_up(a) && (!b || hp_link_up(b)))
            return true;
        nap();
    }
    return false;
}

/* Poll a until it is down (or up, when want_up) or ~3 s pass. */
__attribute__((unused)) static bool wait_state(struct hp_link *a, bool want_up)
{
    for (int i = 0; i < 15000; i++) {
        struct hp_buf *x[8];
        int k = hp_link_rx_burst(a, x, 8);
        if (k > 0)
            hp_buf_free_bulk(x, (unsigned)k);
        if (hp_link_up(a) == want_up)
            return true;
        nap();
    }
    return false;
}

/* A frame of len bytes: Ethernet header, then bytes that depend on seq. */
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
    for (uint32_t i = 0; i < len; i++)
        d[i] = (uint8_t)(seq * 7 + i * 13);
    memcpy(d + 14, &seq, 4);
    return b;
}

/* Whether b is exactly frame(len, seq), byte for byte. */
static bool frame_is(const struct hp_buf *b, uint32_t len, uint32_t seq)
{
    if (b->pkt_len != len)
        return false;
    uint8_t want[2048], got[2048];
    if (len > sizeof got || hp_buf_copy_out(b, 0, len, got) < 0)
        return false;
    for (uint32_t i = 0; i < len; i++)
        want[i] = (uint8_t)(seq * 7 + i * 13);
    memcpy(want + 14, &seq, 4);
    return memcmp(want, got, len) == 0;
}

static uint32_t len_of(uint32_t seq)
{
    return 60 + (seq * 37) % 1459; /* 60 .. 1518 */
}

/* Send count frames from tx to rx (polling both), checking each one that
 * arrives; returns how many arrived in order and intact. */
static uint32_t exchange(struct hp_link *tx, struct hp_link *rx, struct hp_pool *p, uint32_t count)
{
    uint32_t sent = 0, got = 0, bad = 0;
    for (int spins = 0; got < count && spins < 200000; spins++) {
        struct hp_buf *b[32];
        unsigned n = 0;
        while (n < 32 && sent + n < count && (b[n] = frame(p, len_of(sent + n), sent + n)) != NULL)
            n++;
        int t = hp_link_tx_burst(tx, b, n);
        if (t < 0)
            t = 0;
        sent += (unsigned)t;
        if ((unsigned)t < n)
            hp_buf_free_bulk(b + t, n - (unsigned)t);
        struct hp_buf *r[32];
        int k = hp_link_rx_burst(rx, r, 32);
        for (int i = 0; i < k; i++) {
            if (!frame_is(r[i], len_of(got), got))
                bad++;
            got++;
        }
        if (k > 0)
            hp_buf_free_bulk(r, (unsigned)k);
        if (t == 0 && k <= 0)
            hp_link_rx_burst(tx, r, 0);
    }
    return bad ? 0 : got;
}

/* ---- tests --------------------------------------------------------------- */

HP_TEST(memif_frames_both_ways_copy)
{
    char path[108];
    sock_path(path, sizeof path, "copy");
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    HP_REQUIRE(s != NULL);
    HP_CHECK(!hp_link_up(s));
    struct hp_link *c = open_memif(HP_MEMIF_CLIENT, path, 0, 0, 256);
    HP_REQUIRE(c != NULL);
    HP_CHECK_STREQ(hp_link_kind(c), "memif");
    HP_CHECK(hp_link_caps(c) & HP_LINK_CAP_FD);
    HP_CHECK(!(hp_link_caps(c) & HP_LINK_CAP_ZEROCOPY_TX));
    HP_REQUIRE(wait_up(s, c));
    HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 3000), 3000);
    HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 3000), 3000);
    struct hp_memif_stats ms;
    HP_REQUIRE_EQ(hp_link_memif_stats(c, &ms), 0);
    HP_CHECK(ms.up && !ms.server && !ms.zero_copy);
    HP_CHECK_EQ(ms.ring_size, 256);
    HP_CHECK_EQ(ms.queues, 1);
    HP_CHECK(strncmp(ms.peer_name, "hotpath", 7) == 0);
    HP_CHECK_EQ(ms.bad_descs + ms.bad_msgs + ms.ring_errors, 0);
    struct hp_link_stats st;
    hp_link_stats(s, &st);
    HP_CHECK_EQ(st.rx_packets, 3000);
    HP_CHECK_EQ(st.tx_packets, 3000);
    HP_CHECK_EQ(hp_link_memif_stats(hp_link_pool(c) ? s : NULL, &ms), 0);
    HP_CHECK(ms.server);
    uint8_t m1[6], m2[6];
    hp_link_mac(s, m1);
    hp_link_mac(c, m2);
    HP_CHECK(memcmp(m1, m2, 6) != 0);
    HP_CHECK_EQ(m1[0] & 3, 2);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(access(path, F_OK), -1); /* the server removed its socket file */
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
