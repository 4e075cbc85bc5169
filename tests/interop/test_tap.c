/* SPDX-License-Identifier: BSD-3-Clause */
/* The tap link against the kernel in a namespace: frames both ways, counters, MTU, MAC, attach, completions. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_link.h>
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
#define TAP_NAME "hptap0"

/* ---- the kernel side: a packet socket and the interface's counters ------ */

/* An interface counter (rx_packets, tx_packets...) as the calling thread's
 * namespace sees it; -1 when the interface is missing. /sys/class/net would
 * show the namespace sysfs was mounted in, not ours. */
static long long if_counter(const char *ifname, bool rx)
{
    struct ifaddrs *all, *a;
    long long v = -1;
    if (getifaddrs(&all) < 0)
        return -1;
    for (a = all; a; a = a->ifa_next) {
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_PACKET && a->ifa_data &&
            !strcmp(a->ifa_name, ifname)) {
            const struct rtnl_link_stats *s = a->ifa_data;
            v = rx ? s->rx_packets : s->tx_packets;
        }
    }
    freeifaddrs(all);
    return v;
}

/* ---- setup ------------------------------------------------------------- */

/*
 * Namespaces up, this test's process in side A, with IPv6 off for new
 * interfaces there (a new tap would otherwise send router solicitations and
 * MLD reports by itself). false when the test is skipped or failed.
 */
static bool enter_quiet_namespace(struct tool_netns *n)
{
    if (interop_netns_up(n) < 0)
        return false;
    if (tool_netns_sh(n, 0, "sysctl -qw net.ipv6.conf.default.disable_ipv6=1") != 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot turn IPv6 off in %s", n->ns[0]);
        return false;
    }
    int rc = tool_netns_enter(n, 0);
    if (rc < 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot enter %s: %s", n->ns[0], strerror(-rc));
        return false;
    }
    return true;
}

/* Open a tap link, reporting the reason as a test failure when it fails. */
static struct hp_link *open_tap(const struct hp_link_config *cfg, int line)
{
    struct hp_link *l = hp_link_open("tap", cfg);
    if (!l)
        hp_test_fail(__FILE__, line, "hp_link_open(tap, %s): %s (errno %d)",
                     cfg->iface ? cfg->iface : "NULL", hp_link_error(), errno);
    return l;
}

/* ---- tests ------------------------------------------------------------- */

HP_TEST(tap_frames_sent_reach_the_kernel)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    struct hp_link_config cfg = {.iface = TAP_NAME};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    HP_CHECK_STREQ(hp_link_kind(l), "tap");
    HP_CHECK_STREQ(hp_link_name(l), TAP_NAME);
    HP_CHECK_EQ(hp_link_caps(l), HP_LINK_CAP_FD | HP_LINK_CAP_KERNEL | HP_LINK_CAP_TX_COMPLETIONS);
    HP_CHECK(hp_link_fd(l) >= 0);
    int fd = tf_raw_open(TAP_NAME);
    HP_CHECK(fd >= 0);
    uint8_t kmac[6], lmac[6];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    long long before = if_counter(TAP_NAME, true);

    /* Frames the link writes are frames the tap interface receives. */
    unsigned got = 0, bad = 0;
    for (uint32_t seq = 0; seq < N_FRAMES && fd >= 0; seq += 100) {
        if (!tf_link_send(l, seq, 100, kmac, lmac)) {
            hp_test_fail(__FILE__, __LINE__, "the link stopped taking frames at %u", seq);
            break;
        }
        got += tf_raw_receive(fd, seq, 100, kmac, lmac, &bad);
    }
    HP_CHECK_EQ(got, N_FRAMES);
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_EQ(if_counter(TAP_NAME, true) - before, N_FRAMES);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, N_FRAMES);
    HP_CHECK_EQ(st.tx_dropped, 0);
    HP_CHECK_EQ(st.tx_errors, 0);
    uint64_t bytes = 0;
    for (uint32_t seq = 0; seq < N_FRAMES; seq++)
        bytes += tf_frame_len(seq);
    HP_CHECK_EQ(st.tx_bytes, bytes);
    if (fd >= 0)
        close(fd);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(tap_frames_the_kernel_sends_are_received)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    struct hp_link_config cfg = {.iface = TAP_NAME};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    int fd = tf_raw_open(TAP_NAME);
    HP_CHECK(fd >= 0);
    uint8_t kmac[6], lmac[6];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    long long before = if_counter(TAP_NAME, false);

    /* In steps of 50, well inside the tap's queue of 500 frames. */
    unsigned got = 0, bad = 0, stray = 0;
    uint8_t f[2048];
    for (uint32_t seq = 0; seq < N_FRAMES && fd >= 0; seq += 50) {
        for (uint32_t s = seq; s < seq + 50; s++) {
            tf_make_frame(f, tf_frame_len(s), lmac, kmac, s);
            if (send(fd, f, tf_frame_len(s), 0) != (ssize_t)tf_frame_len(s))
                hp_test_fail(__FILE__, __LINE__, "send of frame %u: %s", s, strerror(errno));
        }
        got += tf_link_receive(l, 32, seq, 50, lmac, kmac, &bad, &stray);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(got, N_FRAMES);
    HP_CHECK_EQ(bad, 0);
    HP_CHECK_GE(if_counter(TAP_NAME, false) - before, N_FRAMES);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.rx_packets, N_FRAMES + stray);
    HP_CHECK_EQ(st.rx_errors, 0);
    HP_CHECK_EQ(st.rx_dropped, 0);
    if (fd >= 0)
        close(fd);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(tap_mac_is_its_own_and_mtu_follows_the_interface)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    struct hp_link_config cfg = {.iface = TAP_NAME};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    /* The link is the far end of the wire: its MAC is not the kernel's. */
    uint8_t kmac[6], lmac[6];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    HP_CHECK(memcmp(kmac, lmac, 6) != 0);
    HP_CHECK_EQ(lmac[0] & 0x03, 0x02); /* locally administered, unicast */
    HP_CHECK_EQ(lmac[1], 0x68);
    HP_CHECK_EQ(lmac[2], 0x74);
    HP_CHECK_EQ(lmac[5], if_nametoindex(TAP_NAME) & 0xff);

    uint32_t mtu = 0;
    HP_CHECK_EQ(hp_link_mtu(l), 1500);
    HP_CHECK_EQ(hp_link_set_mtu(l, 1400), 0);
    HP_CHECK_EQ(hp__if_mtu(TAP_NAME, &mtu), 0);
    HP_CHECK_EQ(mtu, 1400);
    HP_CHECK_EQ(hp_link_mtu(l), 1400);
    /* The default pool's 2048-byte buffers cannot take 9000-byte frames. */
    HP_CHECK_EQ(hp_link_set_mtu(l, 9000), -EMSGSIZE);
    HP_CHECK(strstr(hp_link_error(), TAP_NAME) != NULL);
    HP_CHECK_EQ(hp__if_mtu(TAP_NAME, &mtu), 0);
    HP_CHECK_EQ(mtu, 1400);
    HP_CHECK_EQ(hp_link_mtu(l), 1400);
    HP_CHECK_EQ(hp_link_close(l), 0);
    /* A device we created is gone with its descriptor. */
    unsigned idx;
    HP_CHECK_EQ(hp__if_index(TAP_NAME, &idx), -ENODEV);

    /* An MTU asked for at open is given to the interface; one too large is
     * refused, and the device made for it is gone again. */
    cfg.mtu = 1280;
    l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    HP_CHECK_EQ(hp_link_mtu(l), 1280);
    HP_CHECK_EQ(hp__if_mtu(TAP_NAME, &mtu), 0);
    HP_CHECK_EQ(mtu, 1280);
    HP_CHECK_EQ(hp_link_close(l), 0);
    cfg.mtu = 9000;
    HP_CHECK(hp_link_open("tap", &cfg) == NULL);
    HP_CHECK_EQ(errno, EMSGSIZE);
    HP_CHECK_EQ(hp__if_index(TAP_NAME, &idx), -ENODEV);

    /* No name: the kernel chooses one, tapN. */
    cfg.iface = NULL;
    cfg.mtu = 0;
    l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    HP_CHECK(strncmp(hp_link_name(l), "tap", 3) == 0);
    HP_CHECK_EQ(hp__if_index(hp_link_name(l), &idx), 0);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(tap_attach_takes_only_an_existing_tap)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    if (tool_netns_sh(&n, 0, "ip tuntap add dev hptp1 mode tap") != 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot create a persistent tap device");
        return;
    }
    struct hp_link_config cfg = {.iface = "hptp1", .flags = HP_LINK_F_TAP_ATTACH};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (l) {
        HP_CHECK_STREQ(hp_link_name(l), "hptp1");
        HP_CHECK_EQ(hp_link_close(l), 0);
    }
    /* Persistent: still there after the link closed. */
    unsigned idx;
    HP_CHECK_EQ(hp__if_index("hptp1", &idx), 0);

    cfg.iface = "hpnone9";
    errno = 0;
    HP_CHECK(hp_link_open("tap", &cfg) == NULL);
    HP_CHECK_EQ(errno, ENODEV);
    HP_CHECK(strstr(hp_link_error(), "hpnone9") != NULL);
    HP_CHECK_EQ(hp__if_index("hpnone9", &idx), -ENODEV);

    /* The veth exists but is no tap. */
    cfg.iface = n.ifname[0];
    errno = 0;
    HP_CHECK(hp_link_open("tap", &cfg) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(strstr(hp_link_error(), n.ifname[0]) != NULL);
    cfg.flags = 0;
    errno = 0;
    HP_CHECK(hp_link_open("tap", &cfg) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
}

HP_TEST(tap_oversize_and_malformed_frames_are_dropped_and_counted)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    struct hp_link_config cfg = {.iface = TAP_NAME};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    int fd = tf_raw_open(TAP_NAME);
    HP_CHECK(fd >= 0);
    uint8_t kmac[6], lmac[6];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    struct hp_pool *pool = hp_link_pool(l);
    long long before = if_counter(TAP_NAME, true);

    /* frame 0: fine; 1: one byte over MTU + header; 2: a header short;
     * 3: pkt_len disagreeing with its segment; 4: 1518 bytes with an 802.1Q
     * tag, which may use the 4 extra bytes; 5: fine. */
    struct hp_buf *b[6];
    b[0] = tf_frame_buf(pool, 100, kmac, lmac, 0, 1);
    b[1] = tf_frame_buf(pool, 1515, kmac, lmac, 1, 1);
    b[2] = tf_frame_buf(pool, 13, kmac, lmac, 2, 1);
    b[3] = tf_frame_buf(pool, 200, kmac, lmac, 3, 1);
    b[4] = tf_frame_buf(pool, 1518, kmac, lmac, 4, 1);
    b[5] = tf_frame_buf(pool, 100, kmac, lmac, 1, 1);
    for (int i = 0; i < 6; i++)
        HP_REQUIRE(b[i] != NULL);
    b[3]->pkt_len = 300;
    uint8_t *t = hp_buf_data(b[4]);
    t[12] = 0x81;
    t[13] = 0x00;
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 6), 6);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_dropped, 3);
    HP_CHECK_EQ(st.tx_packets, 3);
    HP_CHECK_EQ(st.tx_bytes, 100 + 1518 + 100);
    HP_CHECK_EQ(if_counter(TAP_NAME, true) - before, 3);
    /* The plain frames reach the kernel, in order (sequence 0 then 1). */
    uint8_t got[2048];
    ssize_t r = -1;
    for (long long end = tf_now_ms() + WAIT_MS; fd >= 0 && tf_now_ms() < end;) {
        r = recv(fd, got, sizeof got, 0);
        if (r >= 0)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        (void)poll(&p, 1, 50);
    }
    uint8_t exp[100];
    tf_make_frame(exp, 100, kmac, lmac, 0);
    HP_CHECK(r == 100 && memcmp(got, exp, 100) == 0);
    /* An empty burst and a NULL entry are not fatal either. */
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 0), 0);
    struct hp_buf *none = NULL;
    HP_CHECK_EQ(hp_link_tx_burst(l, &none, 1), 1);
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_dropped, 4);
    if (fd >= 0)
        close(fd);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(tap_completions_return_exactly_the_sent_buffers)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    struct hp_link_config cfg = {.iface = TAP_NAME,
                                 .flags = HP_LINK_F_TX_COMPLETIONS,
                                 .ring_size = 64};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    uint8_t kmac[6], lmac[6];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);

    /* 100 frames, one of them too long: it is freed, not completed. The
     * completion queue holds 128, so everything is taken at once. */
    enum { N = 100, BIG = 37 };
    struct hp_buf *b[N], *sent[N];
    for (unsigned i = 0; i < N; i++) {
        b[i] = tf_frame_buf(hp_link_pool(l), i == BIG ? 1600 : tf_frame_len(i), kmac, lmac, i,
                            i % 10 == 0 ? 3 : 1);
        HP_REQUIRE(b[i] != NULL);
        sent[i] = b[i];
    }
    HP_CHECK_EQ(hp_link_tx_burst(l, b, N), N);
    struct hp_buf *c[2 * N];
    int k = hp_link_completions(l, c, 2 * N);
    HP_CHECK_EQ(k, N - 1);
    /* The same buffers, in order, each once. */
    unsigned j = 0;
    for (unsigned i = 0; i < N && k == N - 1; i++) {
        if (i == BIG)
            continue;
        HP_CHECK(c[j] == sent[i]);
        j++;
    }
    HP_CHECK_EQ(hp_link_completions(l, c + (k > 0 ? k : 0), N), 0);
    if (k > 0)
        hp_buf_free_bulk(c, (unsigned)k);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, N - 1);
    HP_CHECK_EQ(st.tx_dropped, 1);

    /* Completions nobody collects are freed by close. */
    struct hp_buf *one = tf_frame_buf(hp_link_pool(l), 100, kmac, lmac, 0, 1);
    HP_REQUIRE(one != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(l, &one, 1), 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(tap_completion_queue_bounds_what_tx_takes)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    /* ring_size 8: a completion queue of 16. */
    struct hp_link_config cfg = {.iface = TAP_NAME,
                                 .flags = HP_LINK_F_TX_COMPLETIONS,
                                 .ring_size = 8};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l)
        return;
    uint8_t kmac[6], lmac[6];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    struct hp_buf *b[24], *c[24];
    for (unsigned i = 0; i < 24; i++) {
        b[i] = tf_frame_buf(hp_link_pool(l), 64, kmac, lmac, i, 1);
        HP_REQUIRE(b[i] != NULL);
    }
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 24), 16);
    HP_CHECK_EQ(hp_link_tx_burst(l, b + 16, 8), 0);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_full, 2);
    HP_CHECK_EQ(hp_link_completions(l, c, 24), 16);
    HP_CHECK_EQ(hp_link_tx_burst(l, b + 16, 8), 8);
    HP_CHECK_EQ(hp_link_completions(l, c + 16, 8), 8);
    hp_buf_free_bulk(c, 24);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(tap_empty_pool_loses_nothing)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    struct hp_pool_config pc = {.name = "tap-small", .n_bufs = 8};
    struct hp_pool *pool = hp_pool_create(&pc);
    HP_REQUIRE(pool != NULL);
    struct hp_link_config cfg = {.iface = TAP_NAME, .pool = pool};
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l) {
        hp_pool_destroy(pool);
        return;
    }
    int fd = tf_raw_open(TAP_NAME);
    HP_CHECK(fd >= 0);
    uint8_t kmac[6], lmac[6], f[2048];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    enum { N = 40 };
    for (uint32_t s = 0; s < N && fd >= 0; s++) {
        tf_make_frame(f, tf_frame_len(s), lmac, kmac, s);
        HP_CHECK_EQ(send(fd, f, tf_frame_len(s), 0), tf_frame_len(s));
    }
    /* Hold every buffer the pool has: receiving then returns nothing, and
     * loses nothing. */
    struct hp_buf *held[8];
    unsigned nheld = 0, got = 0, bad = 0;
    long long end = tf_now_ms() + WAIT_MS;
    while (got < N && tf_now_ms() < end) {
        int r = hp_link_rx_burst(l, held + nheld, 8 - nheld);
        HP_CHECK_GE(r, 0);
        if (r <= 0) {
            struct pollfd p = {.fd = hp_link_fd(l), .events = POLLIN};
            (void)poll(&p, 1, 20);
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
                tf_make_frame(exp, len, lmac, kmac, got + i);
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
    if (fd >= 0)
        close(fd);
    HP_CHECK_EQ(hp_link_close(l), 0);
    HP_CHECK_EQ(hp_pool_destroy(pool), 0);
}

HP_TEST(tap_frames_too_large_for_the_buffers_are_refused)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!enter_quiet_namespace(&n))
        return;
    /* 1024-byte buffers: 896 bytes after the headroom, MTU at most 878. */
    struct hp_pool_config pc = {.name = "tap-1k", .n_bufs = 64, .data_room = 1024};
    struct hp_pool *pool = hp_pool_create(&pc);
    HP_REQUIRE(pool != NULL);
    struct hp_link_config cfg = {.iface = TAP_NAME, .pool = pool, .mtu = 1500};
    HP_CHECK(hp_link_open("tap", &cfg) == NULL);
    HP_CHECK_EQ(errno, EMSGSIZE);
    cfg.mtu = 800;
    struct hp_link *l = open_tap(&cfg, __LINE__);
    if (!l) {
        hp_pool_destroy(pool);
        return;
    }
    /* Behind the link's back, the interface takes 1500 again. */
    HP_CHECK_EQ(hp__if_set_mtu(TAP_NAME, 1500), 0);
    int fd = tf_raw_open(TAP_NAME);
    HP_CHECK(fd >= 0);
    uint8_t kmac[6], lmac[6], f[2048];
    HP_CHECK_EQ(hp__if_mac(TAP_NAME, kmac), 0);
    hp_link_mac(l, lmac);
    /* 1200: longer than a buffer (read truncated); 850: fits a buffer but
     * not MTU 800 plus a tagged header; 100: fine. */
    const uint32_t lens[3] = {1200, 850, 100};
    for (int i = 0; i < 3 && fd >= 0; i++) {
        tf_make_frame(f, lens[i], lmac, kmac, (uint32_t)i);
        HP_CHECK_EQ(send(fd, f, lens[i], 0), lens[i]);
    }
    struct hp_buf *b[4];
    int got = 0;
    for (long long end = tf_now_ms() + WAIT_MS; got == 0 && tf_now_ms() < end;) {
        got = hp_link_rx_burst(l, b, 4);
        if (got == 0) {
            struct pollfd p = {.fd = hp_link_fd(l), .events = POLLIN};
            (void)poll(&p, 1, 20);
        }
    }
    HP_CHECK_EQ(got, 1);
    if (got == 1) {
        tf_make_frame(f, 100, lmac, kmac, 2);
        HP_CHECK_EQ(b[0]->pkt_len, 100);
        HP_CHECK_MEMEQ(hp_buf_data(b[0]), f, 100);
    }
    if (got > 0)
        hp_buf_free_bulk(b, (unsigned)got);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.rx_errors, 2);
    HP_CHECK_EQ(st.rx_packets, 1);
    if (fd >= 0)
        close(fd);
    HP_CHECK_EQ(hp_link_close(l), 0);
    HP_CHECK_EQ(hp_pool_destroy(pool), 0);
}
