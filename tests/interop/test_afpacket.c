/* SPDX-License-Identifier: BSD-3-Clause */
/* The afpacket link on a veth pair against the kernel: frames both ways, counters, VLAN tags, drops, MTU. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "frames.h"
#include "hp_test.h"
#include "interop.h"
#include "link/internal.h"

#define N_FRAMES 1000

/* Frame seq with an 802.1Q tag (VLAN 291, priority 5) inserted after the
 * addresses: len bytes in all. */
static void make_tagged_frame(uint8_t *f, uint32_t len, const uint8_t dst[6], const uint8_t src[6],
                              uint32_t seq)
{
    uint8_t plain[2048];
    tf_make_frame(plain, len - 4, dst, src, seq);
    memcpy(f, plain, 12);
    f[12] = 0x81;
    f[13] = 0x00;
    f[14] = 0xa1;
    f[15] = 0x23;
    memcpy(f + 16, plain + 12, len - 16);
}

/* ---- the kernel side: a packet socket on veth B ------------------------ */

/* Send a frame on the packet socket, retrying briefly when its send buffer
 * is full. */
static bool raw_send(int fd, const uint8_t *f, uint32_t len)
{
    long long end = tf_now_ms() + WAIT_MS;
    for (;;) {
        if (send(fd, f, len, 0) == (ssize_t)len)
            return true;
        if ((errno != EAGAIN && errno != ENOBUFS && errno != EINTR) || tf_now_ms() > end)
            return false;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        (void)poll(&p, 1, 10);
    }
}

/* ---- setup ------------------------------------------------------------- */

/* Both sides of a quiet veth pair (no IPv6: the kernel sends nothing by
 * itself), seen from side A where the test then stays. */
struct pair {
    struct tool_netns n;
    int fd_b; /* packet socket on veth B, made inside B */
    uint8_t mac_a[6], mac_b[6];
};

/* Set the pair up; false when the test is skipped or failed. */
static bool pair_up(struct pair *p)
{
    p->fd_b = -1;
    if (interop_netns_up(&p->n) < 0)
        return false;
    int rc = tool_netns_enter(&p->n, 1);
    if (rc == 0) {
        /* A socket stays in the namespace it was made in. */
        p->fd_b = tf_raw_open(p->n.ifname[1]);
        if (hp__if_mac(p->n.ifname[1], p->mac_b) < 0)
            rc = -1;
    }
    if (rc == 0)
        rc = tool_netns_enter(&p->n, 0);
    if (rc == 0 && hp__if_mac(p->n.ifname[0], p->mac_a) < 0)
        rc = -1;
    if (rc < 0 || p->fd_b < 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot set up the packet socket in %s or enter %s",
                     p->n.ns[1], p->n.ns[0]);
        if (p->fd_b >= 0)
            close(p->fd_b);
        p->fd_b = -1;
        return false;
    }
    return true;
}

static void pair_down(struct pair *p)
{
    if (p->fd_b >= 0)
        close(p->fd_b);
    p->fd_b = -1;
}

/* Open the afpacket link on veth A, reporting the reason as a test failure
 * when it fails. */
static struct hp_link *open_afp(struct pair *p, struct hp_link_config *cfg, int line)
{
    cfg->iface = p->n.ifname[0];
    struct hp_link *l = hp_link_open("afpacket", cfg);
    if (!l)
        hp_test_fail(__FILE__, line, "hp_link_open(afpacket, %s): %s (errno %d)", cfg->iface,
                     hp_link_error(), errno);
    return l;
}

/* Wait until the link has a frame, or WAIT_MS passed. */
static void wait_readable(struct hp_link *l)
{
    struct pollfd p = {.fd = hp_link_fd(l), .events = POLLIN};
    (void)poll(&p, 1, WAIT_MS);
}

/* ---- tests ------------------------------------------------------------- */

HP_TEST(afpacket_frames_sent_reach_the_peer)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    struct hp_link_config cfg = {0};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    HP_CHECK_STREQ(hp_link_kind(l), "afpacket");
    HP_CHECK_STREQ(hp_link_name(l), p.n.ifname[0]);
    HP_CHECK_EQ(hp_link_caps(l), HP_LINK_CAP_FD | HP_LINK_CAP_KERNEL | HP_LINK_CAP_TX_COMPLETIONS);
    HP_CHECK_EQ(hp_link_mtu(l), 1500);
    uint8_t lmac[6];
    hp_link_mac(l, lmac);
    HP_CHECK_MEMEQ(lmac, p.mac_a, 6);
    long long before = tool_netns_counter(&p.n, 1, "rx_packets");

    unsigned got = 0, bad = 0;
    for (uint32_t seq = 0; seq < N_FRAMES; seq += 100) {
        if (!tf_link_send(l, seq, 100, p.mac_b, p.mac_a)) {
            hp_test_fail(__FILE__, __LINE__, "the link stopped taking frames at %u", seq);
            break;
        }
        got += tf_raw_receive(p.fd_b, seq, 100, p.mac_b, p.mac_a, &bad);
    }
    HP_CHECK_EQ(got, N_FRAMES);
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_EQ(tool_netns_counter(&p.n, 1, "rx_packets") - before, N_FRAMES);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, N_FRAMES);
    HP_CHECK_EQ(st.tx_dropped, 0);
    HP_CHECK_EQ(st.tx_errors, 0);
    uint64_t bytes = 0;
    for (uint32_t seq = 0; seq < N_FRAMES; seq++)
        bytes += tf_frame_len(seq);
    HP_CHECK_EQ(st.tx_bytes, bytes);

    /* Our own transmissions never come back through the ring. */
    struct hp_buf *b[64];
    int r;
    unsigned echoed = 0;
    while ((r = hp_link_rx_burst(l, b, 64)) > 0) {
        for (int i = 0; i < r; i++)
            echoed += tf_is_test_frame(hp_buf_data(b[i]), b[i]->data_len);
        hp_buf_free_bulk(b, (unsigned)r);
    }
    HP_CHECK_EQ(echoed, 0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}

HP_TEST(afpacket_frames_the_peer_sends_are_received)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    /* A small ring (64 nominal frames: four 32 KiB blocks) and bursts of 7:
     * reading resumes inside a block, and crosses blocks, all the time. */
    struct hp_link_config cfg = {.ring_size = 64};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    long long before = tool_netns_counter(&p.n, 1, "tx_packets");
    unsigned got = 0, bad = 0, stray = 0;
    uint8_t f[2048];
    for (uint32_t seq = 0; seq < N_FRAMES; seq += 20) {
        for (uint32_t s = seq; s < seq + 20; s++) {
            tf_make_frame(f, tf_frame_len(s), p.mac_a, p.mac_b, s);
            if (!raw_send(p.fd_b, f, tf_frame_len(s)))
                hp_test_fail(__FILE__, __LINE__, "send of frame %u: %s", s, strerror(errno));
        }
        got += tf_link_receive(l, 7, seq, 20, p.mac_a, p.mac_b, &bad, &stray);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(got, N_FRAMES);
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_EQ(tool_netns_counter(&p.n, 1, "tx_packets") - before, N_FRAMES);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.rx_packets, N_FRAMES + stray);
    HP_CHECK_EQ(st.rx_errors, 0);
    HP_CHECK_EQ(st.rx_dropped, 0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}

HP_TEST(afpacket_vlan_tags_survive_both_ways)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    struct hp_link_config cfg = {0};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    /* The kernel takes the tag out of received frames; the link puts it
     * back. 1518 bytes: the largest tagged frame at MTU 1500. */
    uint8_t f[2048];
    const uint32_t lens[2] = {1518, 64};
    for (int i = 0; i < 2; i++) {
        make_tagged_frame(f, lens[i], p.mac_a, p.mac_b, (uint32_t)i);
        HP_CHECK(raw_send(p.fd_b, f, lens[i]));
    }
    struct hp_buf *b[4];
    int got = 0;
    for (long long end = tf_now_ms() + WAIT_MS; got < 2 && tf_now_ms() < end;) {
        int r = hp_link_rx_burst(l, b + got, (unsigned)(4 - got));
        if (r > 0)
            got += r;
        else
            wait_readable(l);
    }
    HP_CHECK_EQ(got, 2);
    for (int i = 0; i < got && i < 2; i++) {
        make_tagged_frame(f, lens[i], p.mac_a, p.mac_b, (uint32_t)i);
        HP_CHECK_EQ(b[i]->pkt_len, lens[i]);
        HP_CHECK_MEMEQ(hp_buf_data(b[i]), f, lens[i]);
    }
    if (got > 0)
        hp_buf_free_bulk(b, (unsigned)got);

    /* Sending: a tagged frame may use 4 bytes beyond MTU + header. */
    long long before = tool_netns_counter(&p.n, 1, "rx_packets");
    struct hp_buf *t = hp_buf_alloc(hp_link_pool(l));
    HP_REQUIRE(t != NULL);
    make_tagged_frame(hp_buf_append(t, 1518), 1518, p.mac_b, p.mac_a, 9);
    HP_CHECK_EQ(hp_link_tx_burst(l, &t, 1), 1);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, 1);
    HP_CHECK_EQ(st.tx_dropped, 0);
    HP_CHECK_EQ(tool_netns_counter(&p.n, 1, "rx_packets") - before, 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}

HP_TEST(afpacket_oversize_and_malformed_frames_are_dropped_and_counted)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    struct hp_link_config cfg = {0};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    struct hp_pool *pool = hp_link_pool(l);
    long long before = tool_netns_counter(&p.n, 1, "rx_packets");
    /* 0: fine; 1: one byte over MTU + header, untagged; 2: shorter than a
     * header; 3: pkt_len disagreeing with its segment; 4: fine, chained;
     * 5: NULL. Everything is taken; 0 and 4 are sent, in order. */
    struct hp_buf *b[6];
    b[0] = tf_frame_buf(pool, 100, p.mac_b, p.mac_a, 0, 1);
    b[1] = tf_frame_buf(pool, 1515, p.mac_b, p.mac_a, 7, 1);
    b[2] = tf_frame_buf(pool, 13, p.mac_b, p.mac_a, 7, 1);
    b[3] = tf_frame_buf(pool, 200, p.mac_b, p.mac_a, 7, 1);
    b[4] = tf_frame_buf(pool, tf_frame_len(1), p.mac_b, p.mac_a, 1, 4);
    b[5] = NULL;
    for (int i = 0; i < 5; i++)
        HP_REQUIRE(b[i] != NULL);
    b[3]->pkt_len = 150;
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 6), 6);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_dropped, 4);
    HP_CHECK_EQ(st.tx_packets, 2);
    unsigned bad = 0;
    uint8_t first[100];
    tf_make_frame(first, 100, p.mac_b, p.mac_a, 0);
    uint8_t got[2048];
    ssize_t r = -1;
    for (long long end = tf_now_ms() + WAIT_MS; tf_now_ms() < end;) {
        r = recv(p.fd_b, got, sizeof got, 0);
        if (r >= 0)
            break;
        struct pollfd pf = {.fd = p.fd_b, .events = POLLIN};
        (void)poll(&pf, 1, 50);
    }
    HP_CHECK(r == 100 && memcmp(got, first, 100) == 0);
    HP_CHECK_EQ(tf_raw_receive(p.fd_b, 1, 1, p.mac_b, p.mac_a, &bad), 1);
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_EQ(tool_netns_counter(&p.n, 1, "rx_packets") - before, 2);
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 0), 0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}

HP_TEST(afpacket_completions_return_exactly_the_sent_buffers)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    struct hp_link_config cfg = {.flags = HP_LINK_F_TX_COMPLETIONS, .ring_size = 64};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    /* 100 frames (the completion queue holds 128), one too long: freed, not
     * completed; the others come back in order, each once. */
    enum { N = 100, BIG = 41 };
    struct hp_buf *b[N], *sent[N], *c[2 * N];
    for (unsigned i = 0; i < N; i++) {
        b[i] = tf_frame_buf(hp_link_pool(l), i == BIG ? 1600 : tf_frame_len(i), p.mac_b, p.mac_a, i,
                            i % 10 == 0 ? 3 : 1);
        HP_REQUIRE(b[i] != NULL);
        sent[i] = b[i];
    }
    unsigned taken = 0;
    for (long long end = tf_now_ms() + WAIT_MS; taken < N && tf_now_ms() < end;) {
        int r = hp_link_tx_burst(l, b + taken, N - taken);
        HP_CHECK_GE(r, 0);
        taken += r > 0 ? (unsigned)r : 0;
    }
    HP_CHECK_EQ(taken, N);
    hp_buf_free_bulk(b + taken, N - taken);
    int k = hp_link_completions(l, c, 2 * N);
    HP_CHECK_EQ(k, N - 1);
    unsigned j = 0;
    for (unsigned i = 0; i < N && k == N - 1; i++) {
        if (i == BIG)
            continue;
        HP_CHECK(c[j] == sent[i]);
        j++;
    }
    HP_CHECK_EQ(hp_link_completions(l, c, N), 0);
    if (k > 0)
        hp_buf_free_bulk(c, (unsigned)k);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, N - 1);
    HP_CHECK_EQ(st.tx_dropped, 1);
    unsigned bad = 0;
    HP_CHECK_EQ(tf_raw_receive(p.fd_b, 0, BIG, p.mac_b, p.mac_a, &bad), BIG);
    HP_CHECK_EQ(bad, 0);

    /* Completions nobody collects are freed by close. */
    struct hp_buf *one = tf_frame_buf(hp_link_pool(l), 100, p.mac_b, p.mac_a, 0, 1);
    HP_REQUIRE(one != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(l, &one, 1), 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}

HP_TEST(afpacket_kernel_drops_are_counted)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    /* 16 nominal frames: a 32 KiB ring, about 20 full-size frames. */
    struct hp_link_config cfg = {.ring_size = 16};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    enum { N = 300 };
    uint8_t f[2048];
    for (uint32_t s = 0; s < N; s++) {
        tf_make_frame(f, 1514, p.mac_a, p.mac_b, s);
        HP_CHECK(raw_send(p.fd_b, f, 1514));
    }
    /* Everything is in the ring or dropped once the blocks are handed over
     * (at most 1 ms after the last frame). */
    struct pollfd pf = {.fd = hp_link_fd(l), .events = POLLIN};
    (void)poll(&pf, 1, WAIT_MS);
    usleep(20000);
    struct hp_buf *b[64];
    unsigned got = 0;
    int r;
    while ((r = hp_link_rx_burst(l, b, 64)) > 0) {
        for (int i = 0; i < r; i++)
            got += tf_is_test_frame(hp_buf_data(b[i]), b[i]->data_len);
        hp_buf_free_bulk(b, (unsigned)r);
    }
    struct hp_link_stats st, again;
    hp_link_stats(l, &st);
    HP_CHECK_GT(got, 0);
    HP_CHECK_GT(st.rx_dropped, 0);
    HP_CHECK_EQ(got + st.rx_dropped, N);
    /* The kernel's counter resets when read; ours does not. */
    hp_link_stats(l, &again);
    HP_CHECK_EQ(again.rx_dropped, st.rx_dropped);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}

HP_TEST(afpacket_empty_pool_loses_nothing)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    struct hp_pool_config pc = {.name = "afp-small", .n_bufs = 8};
    struct hp_pool *pool = hp_pool_create(&pc);
    HP_REQUIRE(pool != NULL);
    struct hp_link_config cfg = {.pool = pool};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        hp_pool_destroy(pool);
        pair_down(&p);
        return;
    }
    enum { N = 40 };
    uint8_t f[2048];
    for (uint32_t s = 0; s < N; s++) {
        tf_make_frame(f, tf_frame_len(s), p.mac_a, p.mac_b, s);
        HP_CHECK(raw_send(p.fd_b, f, tf_frame_len(s)));
    }
    /* Hold every buffer of the pool: receiving then returns nothing and
     * loses nothing; the frames wait in the ring. */
    struct hp_buf *held[8];
    unsigned nheld = 0, got = 0, bad = 0;
    long long end = tf_now_ms() + WAIT_MS;
    while (got < N && tf_now_ms() < end) {
        int r = hp_link_rx_burst(l, held + nheld, 8 - nheld);
        HP_CHECK_GE(r, 0);
        if (r <= 0) {
            struct pollfd pf = {.fd = hp_link_fd(l), .events = POLLIN};
            (void)poll(&pf, 1, 20);
            continue;
        }
        nheld += (unsigned)r;
        if (nheld == 8 || got + nheld == N) {
            if (nheld == 8) {
                struct hp_buf *more[4];
                HP_CHECK_EQ(hp_link_rx_burst(l, more, 4), 0);
            }
            for (unsigned i = 0; i < nheld; i++) {
                uint8_t exp[2048];
                uint32_t len = tf_frame_len(got + i);
                tf_make_frame(exp, len, p.mac_a, p.mac_b, got + i);
                if (held[i]->pkt_len != len || memcmp(hp_buf_data(held[i]), exp, len) != 0)
                    bad++;
            }
            got += nheld;
            hp_buf_free_bulk(held, nheld);
            nheld = 0;
        }
    }
    hp_buf_free_bulk(held, nheld);
    HP_CHECK_EQ(got, N);
    HP_CHECK_EQ(bad, 0);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.rx_dropped, 0);
    HP_CHECK_EQ(st.rx_packets, N);
    HP_CHECK_EQ(hp_link_close(l), 0);
    HP_CHECK_EQ(hp_pool_destroy(pool), 0);
    pair_down(&p);
}

HP_TEST(afpacket_frames_too_large_for_the_buffers_are_refused)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    /* 1024-byte buffers: 896 bytes after the headroom, MTU at most 878. */
    struct hp_pool_config pc = {.name = "afp-1k", .n_bufs = 64, .data_room = 1024};
    struct hp_pool *pool = hp_pool_create(&pc);
    HP_REQUIRE(pool != NULL);
    struct hp_link_config cfg = {.pool = pool};
    /* The interface's 1500 does not fit: refused, unless an MTU is given. */
    cfg.iface = p.n.ifname[0];
    errno = 0;
    HP_CHECK(hp_link_open("afpacket", &cfg) == NULL);
    HP_CHECK_EQ(errno, EMSGSIZE);
    HP_CHECK(strstr(hp_link_error(), p.n.ifname[0]) != NULL);
    cfg.mtu = 800;
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        hp_pool_destroy(pool);
        pair_down(&p);
        return;
    }
    uint32_t mtu = 0;
    HP_CHECK_EQ(hp__if_mtu(p.n.ifname[0], &mtu), 0);
    HP_CHECK_EQ(mtu, 800);
    /* Behind the link's back, the interface takes 1500 again. */
    HP_CHECK_EQ(hp__if_set_mtu(p.n.ifname[0], 1500), 0);
    /* 1200: longer than a buffer; 850: fits a buffer, not MTU 800 plus a
     * tagged header; 100: fine. */
    const uint32_t lens[3] = {1200, 850, 100};
    uint8_t f[2048];
    for (int i = 0; i < 3; i++) {
        tf_make_frame(f, lens[i], p.mac_a, p.mac_b, (uint32_t)i);
        HP_CHECK(raw_send(p.fd_b, f, lens[i]));
    }
    struct hp_buf *b[4];
    int got = 0;
    for (long long end = tf_now_ms() + WAIT_MS; got == 0 && tf_now_ms() < end;) {
        got = hp_link_rx_burst(l, b, 4);
        if (got == 0)
            wait_readable(l);
    }
    HP_CHECK_EQ(got, 1);
    if (got == 1) {
        tf_make_frame(f, 100, p.mac_a, p.mac_b, 2);
        HP_CHECK_EQ(b[0]->pkt_len, 100);
        HP_CHECK_MEMEQ(hp_buf_data(b[0]), f, 100);
    }
    if (got > 0)
        hp_buf_free_bulk(b, (unsigned)got);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.rx_errors, 2);
    HP_CHECK_EQ(st.rx_packets, 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
    HP_CHECK_EQ(hp_pool_destroy(pool), 0);
    pair_down(&p);
}

HP_TEST(afpacket_mtu_and_refusals)
{
    static struct pair p; /* outlives the test: the teardown removes its namespaces */
    if (!pair_up(&p))
        return;
    /* No such interface: ENODEV, and the sentence names it. */
    struct hp_link_config cfg = {.iface = "hpnosuch7"};
    errno = 0;
    HP_CHECK(hp_link_open("afpacket", &cfg) == NULL);
    HP_CHECK_EQ(errno, ENODEV);
    HP_CHECK(strstr(hp_link_error(), "hpnosuch7") != NULL);
    /* B's interface is in the other namespace: not visible from here. */
    cfg.iface = p.n.ifname[1];
    errno = 0;
    HP_CHECK(hp_link_open("afpacket", &cfg) == NULL);
    HP_CHECK_EQ(errno, ENODEV);
    HP_CHECK_EQ(hp_pools_in_use(), 0);

    cfg = (struct hp_link_config){.mtu = 1280};
    struct hp_link *l = open_afp(&p, &cfg, __LINE__);
    if (!l) {
        pair_down(&p);
        return;
    }
    uint32_t mtu = 0;
    HP_CHECK_EQ(hp_link_mtu(l), 1280);
    HP_CHECK_EQ(hp__if_mtu(p.n.ifname[0], &mtu), 0);
    HP_CHECK_EQ(mtu, 1280);
    HP_CHECK_EQ(hp_link_set_mtu(l, 1400), 0);
    HP_CHECK_EQ(hp__if_mtu(p.n.ifname[0], &mtu), 0);
    HP_CHECK_EQ(mtu, 1400);
    HP_CHECK_EQ(hp_link_mtu(l), 1400);
    /* 9000-byte frames do not fit the default pool's 2048-byte buffers. */
    HP_CHECK_EQ(hp_link_set_mtu(l, 9000), -EMSGSIZE);
    HP_CHECK(strstr(hp_link_error(), p.n.ifname[0]) != NULL);
    HP_CHECK_EQ(hp__if_mtu(p.n.ifname[0], &mtu), 0);
    HP_CHECK_EQ(mtu, 1400);
    HP_CHECK_EQ(hp_link_mtu(l), 1400);

    /* Frames up to the new MTU still go out; one byte more does not. */
    long long before = tool_netns_counter(&p.n, 1, "rx_packets");
    struct hp_buf *b[2] = {tf_frame_buf(hp_link_pool(l), 1414, p.mac_b, p.mac_a, 0, 1),
                           tf_frame_buf(hp_link_pool(l), 1415, p.mac_b, p.mac_a, 1, 1)};
    HP_REQUIRE(b[0] && b[1]);
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 2), 2);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, 1);
    HP_CHECK_EQ(st.tx_dropped, 1);
    HP_CHECK_EQ(tool_netns_counter(&p.n, 1, "rx_packets") - before, 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
    pair_down(&p);
}
