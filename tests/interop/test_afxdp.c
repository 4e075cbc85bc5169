/* SPDX-License-Identifier: BSD-3-Clause */
/* The afxdp link against the Linux kernel on a veth pair: content both ways, completions on another thread, copies, refusals. */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/buf.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "interop.h"

/* IEEE 802 local experimental EtherType 1: nobody else sends it. */
#define ETH_P_TEST 0x88B5
#define NFRAMES    1000
#define MAX_FRAME  1514
#define WAIT_S     10.0 /* every wait is bounded by this */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Frame i of a run: 60 to 1514 bytes. */
static unsigned size_of(unsigned i)
{
    return 60 + (unsigned)((unsigned long)i * (MAX_FRAME - 60) / (NFRAMES - 1));
}

/* Ethernet header, EtherType 0x88B5, a 32-bit sequence number, then a
 * pattern that depends on both the sequence and the offset. */
static void build(uint8_t *f, unsigned len, const uint8_t dst[6], const uint8_t src[6],
                  uint32_t seq)
{
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = ETH_P_TEST >> 8;
    f[13] = ETH_P_TEST & 0xff;
    uint32_t s = htonl(seq);
    memcpy(f + 14, &s, 4);
    for (unsigned i = 18; i < len; i++)
        f[i] = (uint8_t)(seq * 7 + i * 13);
}

/* The sequence number of a test frame, or -1 for any other frame. */
static long seq_of(const uint8_t *f, unsigned len)
{
    if (len < 18 || f[12] != (ETH_P_TEST >> 8) || f[13] != (ETH_P_TEST & 0xff))
        return -1;
    uint32_t s;
    memcpy(&s, f + 14, 4);
    return (long)ntohl(s);
}

/* Open afxdp on side A's interface, or skip when the backend is not built in. */
#define OPEN_OR_SKIP(l, cfg)                                                                       \
    do {                                                                                           \
        (l) = hp_link_open("afxdp", (cfg));                                                        \
        if (!(l) && errno == EOPNOTSUPP && strstr(hp_link_error(), "not built in"))                \
            HP_SKIP("%s", hp_link_error());                                                        \
        if (!(l))                                                                                  \
            hp_test_fail(__FILE__, __LINE__, "hp_link_open(afxdp, %s): %s", (cfg)->iface,          \
                         hp_link_error());                                                         \
        if (!(l))                                                                                  \
            return;                                                                                \
    } while (0)

/* Namespaces up and this thread in side A; false (the test skipped or
 * failed) otherwise. */
static bool setup(struct tool_netns *n)
{
    if (interop_netns_up(n) < 0)
        return false;
    int rc = tool_netns_enter(n, 0);
    if (rc < 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot enter %s: %s", n->ns[0], strerror(-rc));
        return false;
    }
    return true;
}

/* A raw socket on side B's interface (it stays in B's namespace), with
 * B's MAC address in mac. -1 after a test failure. */
static int raw_socket_b(const struct tool_netns *n, uint8_t mac[6])
{
    int fd = -1;
    if (tool_netns_enter(n, 1) < 0)
        return -1;
    fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_TEST));
    if (fd >= 0) {
        struct sockaddr_ll sll = {.sll_family = AF_PACKET,
                                  .sll_protocol = htons(ETH_P_TEST),
                                  .sll_ifindex = (int)n->ifindex[1]};
        int big = 8 << 20;
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", n->ifname[1]);
        if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) < 0 ||
            ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
            hp_test_fail(__FILE__, __LINE__, "raw socket on %s: %s", n->ifname[1], strerror(errno));
            close(fd);
            fd = -1;
        } else {
            memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
        }
    } else {
        hp_test_fail(__FILE__, __LINE__, "AF_PACKET socket: %s", strerror(errno));
    }
    if (tool_netns_enter(n, 0) < 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot go back to side A");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Receive every waiting test frame on the raw socket and check it against
 * what was sent: seen[] counts each sequence number. Returns the number of
 * new frames, or -1 after a failure. */
static int drain_raw(int fd, const uint8_t dst[6], const uint8_t src[6], unsigned char *seen)
{
    uint8_t f[2048], want[2048];
    int got = 0;
    for (;;) {
        ssize_t len = recv(fd, f, sizeof f, MSG_DONTWAIT);
        if (len < 0)
            return got;
        long s = seq_of(f, (unsigned)len);
        if (s < 0)
            continue;
        if (s >= NFRAMES || seen[s]) {
            hp_test_fail(__FILE__, __LINE__, "frame %ld received twice or unknown", s);
            return -1;
        }
        unsigned expect = size_of((unsigned)s);
        if ((unsigned)len != expect) {
            hp_test_fail(__FILE__, __LINE__, "frame %ld: %zd bytes, sent %u", s, len, expect);
            return -1;
        }
        build(want, expect, dst, src, (uint32_t)s);
        if (memcmp(f, want, expect) != 0) {
            hp_test_fail(__FILE__, __LINE__, "frame %ld: content differs", s);
            return -1;
        }
        seen[s] = 1;
        got++;
    }
}

/* Transmit NFRAMES test frames through l from pool buffers; B's raw
 * socket must receive each once, intact. */
static void tx_to_kernel(unsigned flags)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    uint8_t bmac[6], amac[6];
    int fd = raw_socket_b(&n, bmac);
    HP_REQUIRE(fd >= 0);
    struct hp_link_config cfg = {.iface = n.ifname[0], .flags = flags};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    HP_CHECK_STREQ(hp_link_kind(l), "afxdp");
    HP_CHECK_STREQ(hp_link_name(l), n.ifname[0]);
    HP_CHECK_EQ(hp_link_mtu(l), 1500);
    HP_CHECK(hp_link_fd(l) >= 0);
    HP_CHECK(hp_link_caps(l) & HP_LINK_CAP_KERNEL);
    HP_CHECK(hp_link_caps(l) & HP_LINK_CAP_ZEROCOPY_TX);
    hp_link_mac(l, amac);
    long long rx0 = tool_netns_counter(&n, 1, "rx_packets");

    static unsigned char seen[NFRAMES];
    memset(seen, 0, sizeof seen);
    struct hp_pool *pool = hp_link_pool(l);
    unsigned sent = 0, recvd = 0;
    double end = now_s() + WAIT_S;
    while ((sent < NFRAMES || recvd < NFRAMES) && now_s() < end && !hp_test_failed()) {
        bool idle = true;
        if (sent < NFRAMES) {
            struct hp_buf *b[32];
            unsigned k = NFRAMES - sent < 32 ? NFRAMES - sent : 32;
            if (hp_buf_alloc_bulk(pool, b, k) == (int)k) {
                for (unsigned i = 0; i < k; i++) {
                    unsigned len = size_of(sent + i);
                    build(hp_buf_append(b[i], len), len, bmac, amac, sent + i);
                }
                int t = hp_link_tx_burst(l, b, k);
                HP_CHECK_GE(t, 0);
                if (t < 0)
                    t = 0;
                hp_buf_free_bulk(b + t, k - (unsigned)t);
                sent += (unsigned)t;
                idle = t == 0;
            } else {
                (void)hp_link_tx_burst(l, b, 0); /* collects completions */
            }
        }
        int r = drain_raw(fd, bmac, amac, seen);
        if (r > 0) {
            recvd += (unsigned)r;
            idle = false;
        }
        if (idle)
            pause_us(100);
    }
    HP_CHECK_EQ(sent, NFRAMES);
    HP_CHECK_EQ(recvd, NFRAMES);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, NFRAMES);
    HP_CHECK_EQ(st.tx_dropped, 0);
    HP_CHECK_EQ(st.tx_errors, 0);
    HP_CHECK_EQ(tool_netns_counter(&n, 1, "rx_packets") - rx0, NFRAMES);
    HP_CHECK_EQ(hp_link_close(l), 0);
    close(fd);
}

HP_TEST(afxdp_tx_to_kernel_copy_mode)
{
    tx_to_kernel(HP_LINK_F_COPY);
}

HP_TEST(afxdp_tx_to_kernel_default_mode)
{
    tx_to_kernel(0);
}

HP_TEST(afxdp_tx_to_kernel_generic_mode_no_need_wakeup)
{
    tx_to_kernel(HP_LINK_F_XDP_SKB | HP_LINK_F_NO_NEED_WAKEUP);
}

/* B's raw socket sends NFRAMES test frames to A's MAC; the link receives
 * each once, intact, written where the pool's headroom ends. */
static void rx_from_kernel(unsigned flags)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    uint8_t bmac[6], amac[6];
    int fd = raw_socket_b(&n, bmac);
    HP_REQUIRE(fd >= 0);
    struct hp_link_config cfg = {.iface = n.ifname[0], .flags = flags};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    hp_link_mac(l, amac);
    struct hp_pool *pool = hp_link_pool(l);

    static unsigned char seen[NFRAMES];
    memset(seen, 0, sizeof seen);
    unsigned sent = 0, recvd = 0, others = 0;
    uint8_t f[MAX_FRAME], want[MAX_FRAME];
    double end = now_s() + WAIT_S;
    while (recvd < NFRAMES && now_s() < end && !hp_test_failed()) {
        /* A few frames at a time, so that the fill ring never runs dry. */
        for (unsigned i = 0; i < 16 && sent < NFRAMES && sent - recvd < 256; i++) {
            unsigned len = size_of(sent);
            build(f, len, amac, bmac, sent);
            if (send(fd, f, len, 0) != (ssize_t)len)
                break;
            sent++;
        }
        struct hp_buf *b[64];
        int k = hp_link_rx_burst(l, b, 64);
        HP_CHECK_GE(k, 0);
        for (int i = 0; i < k; i++) {
            const uint8_t *d = hp_buf_data(b[i]);
            long s = seq_of(d, b[i]->data_len);
            /* The frame sits at chunk + 256: base + the pool's default
             * 128 bytes of headroom, the metadata in front untouched. */
            HP_CHECK(b[i]->pool == pool);
            HP_CHECK(b[i]->base == (unsigned char *)b[i] + HP_BUF_META_SIZE);
            HP_CHECK_EQ(b[i]->data_off, HP_BUF_HEADROOM);
            HP_CHECK_EQ(b[i]->nb_segs, 1);
            HP_CHECK(b[i]->next == NULL);
            HP_CHECK_EQ(b[i]->pkt_len, b[i]->data_len);
            if (s < 0) {
                others++;
                continue;
            }
            if (s >= NFRAMES || seen[s]) {
                hp_test_fail(__FILE__, __LINE__, "frame %ld received twice or unknown", s);
                break;
            }
            unsigned len = size_of((unsigned)s);
            HP_CHECK_EQ(b[i]->data_len, len);
            build(want, len, amac, bmac, (uint32_t)s);
            if (b[i]->data_len == len && memcmp(d, want, len) != 0)
                hp_test_fail(__FILE__, __LINE__, "frame %ld: content differs", s);
            seen[s] = 1;
            recvd++;
        }
        if (k > 0)
            hp_buf_free_bulk(b, (unsigned)k);
        else
            pause_us(50);
    }
    HP_CHECK_EQ(sent, NFRAMES);
    HP_CHECK_EQ(recvd, NFRAMES);
    HP_CHECK_EQ(others, 0);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.rx_packets, recvd + others);
    HP_CHECK_EQ(st.rx_dropped, 0);
    HP_CHECK_EQ(st.rx_errors, 0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    close(fd);
}

HP_TEST(afxdp_rx_from_kernel_copy_mode)
{
    rx_from_kernel(HP_LINK_F_COPY);
}

HP_TEST(afxdp_rx_from_kernel_default_mode)
{
    rx_from_kernel(0);
}

HP_TEST(afxdp_rx_from_kernel_generic_mode)
{
    rx_from_kernel(HP_LINK_F_XDP_SKB);
}

/* ---- completions on another thread --------------------------------------- */

struct collector {
    struct hp_link *link;
    struct hp_buf **got;
    unsigned want;
    _Atomic unsigned n;
    _Atomic int stop;
};

static void *collect(void *arg)
{
    struct collector *c = arg;
    double end = now_s() + WAIT_S;
    unsigned n = 0;
    while (n < c->want && !atomic_load(&c->stop) && now_s() < end) {
        struct hp_buf *b[64];
        int k = hp_link_completions(c->link, b, 64);
        if (k <= 0) {
            pause_us(50);
            continue;
        }
        for (int i = 0; i < k && n < c->want; i++)
            c->got[n++] = b[i];
        /* These frees are the alien frees of SEEDS.md, part 2. */
        hp_buf_free_bulk(b, (unsigned)k);
        atomic_store(&c->n, n);
    }
    hp_thread_exit();
    return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

HP_TEST(afxdp_completions_on_another_thread)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0],
                                 .ring_size = 256,
                                 .flags = HP_LINK_F_TX_COMPLETIONS};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    HP_CHECK(hp_link_caps(l) & HP_LINK_CAP_TX_COMPLETIONS);
    struct hp_pool *pool = hp_link_pool(l);
    long fill_level = hp_pool_in_use(pool);
    HP_CHECK_EQ(fill_level, 256); /* the fill ring, kept full */

    static struct hp_buf *sent_ptr[NFRAMES], *got_ptr[NFRAMES];
    struct collector c = {.link = l, .got = got_ptr, .want = NFRAMES};
    atomic_init(&c.n, 0);
    atomic_init(&c.stop, 0);
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, collect, &c) == 0);

    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x02};
    uint8_t src[6];
    hp_link_mac(l, src);
    unsigned sent = 0;
    double end = now_s() + WAIT_S;
    while (sent < NFRAMES && now_s() < end) {
        struct hp_buf *b[32];
        unsigned k = NFRAMES - sent < 32 ? NFRAMES - sent : 32;
        if (hp_buf_alloc_bulk(pool, b, k) != (int)k) {
            pause_us(50); /* the collector has not freed enough yet */
            continue;
        }
        for (unsigned i = 0; i < k; i++)
            build(hp_buf_append(b[i], 60), 60, dst, src, sent + i);
        int t = hp_link_tx_burst(l, b, k);
        HP_CHECK_GE(t, 0);
        if (t < 0)
            t = 0;
        memcpy(sent_ptr + sent, b, (size_t)t * sizeof b[0]);
        hp_buf_free_bulk(b + t, k - (unsigned)t);
        sent += (unsigned)t;
        if (t == 0)
            pause_us(50);
    }
    HP_CHECK_EQ(sent, NFRAMES);
    while (atomic_load(&c.n) < sent && now_s() < end)
        pause_us(100);
    atomic_store(&c.stop, 1);
    pthread_join(th, NULL);
    HP_CHECK_EQ(atomic_load(&c.n), NFRAMES);
    if (atomic_load(&c.n) == NFRAMES && sent == NFRAMES) {
        /* The same buffers (a multiset: a buffer freed by the collector may
         * be sent again). */
        qsort(sent_ptr, NFRAMES, sizeof sent_ptr[0], cmp_ptr);
        qsort(got_ptr, NFRAMES, sizeof got_ptr[0], cmp_ptr);
        HP_CHECK(memcmp(sent_ptr, got_ptr, sizeof sent_ptr) == 0);
    }
    /* Every transmitted buffer is back; the link holds its fill ring. */
    HP_CHECK_EQ(hp_pool_in_use(pool), fill_level);
    struct hp_pool_stats ps;
    HP_CHECK_EQ(hp_pool_stats(pool, &ps), 0);
    HP_CHECK_GE(ps.alien_frees, 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Nobody collects completions: the completion ring fills, then the
 * transmit ring, and tx_burst takes fewer; closing returns them all. */
HP_TEST(afxdp_uncollected_completions_fill_the_ring)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0],
                                 .ring_size = 64,
                                 .n_frames = 512,
                                 .flags = HP_LINK_F_TX_COMPLETIONS | HP_LINK_F_COPY};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    struct hp_pool *pool = hp_link_pool(l);
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x02};
    uint8_t src[6];
    hp_link_mac(l, src);
    unsigned sent = 0, zero = 0;
    for (int round = 0; round < 2000 && zero < 20; round++) {
        struct hp_buf *b[16];
        if (hp_buf_alloc_bulk(pool, b, 16) != 16)
            break;
        for (unsigned i = 0; i < 16; i++)
            build(hp_buf_append(b[i], 60), 60, dst, src, sent + i);
        int t = hp_link_tx_burst(l, b, 16);
        HP_CHECK_GE(t, 0);
        if (t < 0)
            t = 0;
        hp_buf_free_bulk(b + t, 16 - (unsigned)t);
        sent += (unsigned)t;
        if (t == 0) {
            zero++;
            pause_us(200);
        }
    }
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_GE(st.tx_full, 1);
    /* In flight at most: the completion ring plus the transmit ring. */
    HP_CHECK_LE(sent, 2 * 64);
    HP_CHECK_GE(sent, 64);
    HP_CHECK_EQ(hp_pool_in_use(pool), 64 + (long)sent);
    HP_CHECK_EQ(hp_link_close(l), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- buffers the link must copy -------------------------------------------- */

HP_TEST(afxdp_tx_copies_foreign_chained_and_shared_buffers)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    uint8_t bmac[6], amac[6];
    int fd = raw_socket_b(&n, bmac);
    HP_REQUIRE(fd >= 0);
    struct hp_link_config cfg = {.iface = n.ifname[0], .flags = HP_LINK_F_COPY};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    hp_link_mac(l, amac);
    struct hp_pool_config pc = {.name = "foreign", .n_bufs = 64, .data_room = 2048};
    struct hp_pool *other = hp_pool_create(&pc);
    HP_REQUIRE(other != NULL);
    struct hp_pool *lp = hp_link_pool(l);
    long base_use = hp_pool_in_use(lp);

    /* 0..7: another pool's buffers; 8: a chain of three segments from the
     * other pool; 9: a link-pool buffer with a second reference (shared
     * data); 10: a clone (other pool's metadata over link-pool data). */
    static unsigned char seen[NFRAMES];
    memset(seen, 0, sizeof seen);
    struct hp_buf *b[11];
    for (unsigned i = 0; i < 8; i++) {
        b[i] = hp_buf_alloc(other);
        HP_REQUIRE(b[i] != NULL);
        unsigned len = size_of(i * 100);
        build(hp_buf_append(b[i], len), len, bmac, amac, i * 100);
    }
    uint8_t f[MAX_FRAME];
    unsigned len8 = size_of(800);
    build(f, len8, bmac, amac, 800);
    struct hp_buf *seg[3];
    unsigned cut[4] = {0, 17, 700, len8}; /* odd cuts on purpose */
    for (int s = 0; s < 3; s++) {
        seg[s] = hp_buf_alloc(other);
        HP_REQUIRE(seg[s] != NULL);
        memcpy(hp_buf_append(seg[s], cut[s + 1] - cut[s]), f + cut[s], cut[s + 1] - cut[s]);
        if (s)
            HP_REQUIRE_EQ(hp_buf_chain(seg[0], seg[s]), 0);
    }
    b[8] = seg[0];
    HP_CHECK_EQ(b[8]->nb_segs, 3);
    b[9] = hp_buf_alloc(lp);
    HP_REQUIRE(b[9] != NULL);
    unsigned len9 = size_of(900);
    build(hp_buf_append(b[9], len9), len9, bmac, amac, 900);
    HP_REQUIRE_EQ(hp_buf_ref(b[9]), 2);
    struct hp_buf *keep = b[9];
    struct hp_buf *direct = hp_buf_alloc(lp);
    HP_REQUIRE(direct != NULL);
    unsigned len10 = size_of(999);
    build(hp_buf_append(direct, len10), len10, bmac, amac, 999);
    b[10] = hp_buf_clone(direct, other);
    HP_REQUIRE(b[10] != NULL);
    hp_buf_free(direct); /* the clone holds the data now */

    HP_CHECK_EQ(hp_link_tx_burst(l, b, 11), 11);
    /* The originals were copied and freed at once. */
    HP_CHECK_EQ(hp_pool_in_use(other), 0);
    HP_CHECK_EQ(hp_buf_refcnt(keep), 1);
    hp_buf_free(keep);

    unsigned recvd = 0;
    double end = now_s() + WAIT_S;
    while (recvd < 11 && now_s() < end && !hp_test_failed()) {
        int r = drain_raw(fd, bmac, amac, seen);
        if (r > 0)
            recvd += (unsigned)r;
        else
            pause_us(100);
    }
    HP_CHECK_EQ(recvd, 11);
    for (unsigned i = 0; i < 8; i++)
        HP_CHECK(seen[i * 100]);
    HP_CHECK(seen[800] && seen[900] && seen[999]);
    /* The UMEM copies come back with the completions (reaped by any call). */
    end = now_s() + WAIT_S;
    while (hp_pool_in_use(lp) != base_use && now_s() < end) {
        (void)hp_link_tx_burst(l, b, 0);
        pause_us(100);
    }
    HP_CHECK_EQ(hp_pool_in_use(lp), base_use);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_packets, 11);
    HP_CHECK_EQ(hp_pool_destroy(other), 0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    close(fd);
}

/* ---- refusals and limits ---------------------------------------------------- */

HP_TEST(afxdp_oversize_and_runt_frames_are_dropped)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0], .flags = HP_LINK_F_COPY};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    struct hp_pool *pool = hp_link_pool(l);
    long base_use = hp_pool_in_use(pool);
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x02};
    uint8_t src[6];
    hp_link_mac(l, src);
    struct hp_buf *b[4];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(pool, b, 4), 4);
    unsigned lens[4] = {1500 + 18 + 1, 13, 60,
                        1500 + 18}; /* too long, too short, fine, the largest */
    for (int i = 0; i < 4; i++) {
        uint8_t *d = hp_buf_append(b[i], lens[i]);
        HP_REQUIRE(d != NULL);
        memset(d, 0x5a, lens[i]);
        if (lens[i] >= 18)
            build(d, lens[i], dst, src, (uint32_t)i);
    }
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 4), 4); /* all taken: two sent, two dropped */
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_dropped, 2);
    HP_CHECK_EQ(st.tx_packets, 2);
    double end = now_s() + WAIT_S;
    while (hp_pool_in_use(pool) != base_use && now_s() < end) {
        (void)hp_link_rx_burst(l, b, 0);
        pause_us(100);
    }
    HP_CHECK_EQ(hp_pool_in_use(pool), base_use);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

static bool names(const char *what)
{
    return strstr(hp_link_error(), what) != NULL;
}

HP_TEST(afxdp_no_such_interface)
{
    struct hp_link_config cfg = {.iface = "hpnope0"};
    errno = 0;
    struct hp_link *l = hp_link_open("afxdp", &cfg);
    if (!l && errno == EOPNOTSUPP && names("not built in"))
        HP_SKIP("%s", hp_link_error());
    HP_CHECK(l == NULL);
    HP_CHECK_EQ(errno, ENODEV);
    HP_CHECK(names("hpnope0"));
    HP_CHECK(names("no interface"));
    hp_link_close(l);
    cfg.iface = NULL;
    errno = 0;
    HP_CHECK(hp_link_open("afxdp", &cfg) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
}

HP_TEST(afxdp_bad_configurations)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0], .queue = 99};
    errno = 0;
    struct hp_link *l = hp_link_open("afxdp", &cfg);
    if (!l && errno == EOPNOTSUPP && names("not built in"))
        HP_SKIP("%s", hp_link_error());
    HP_CHECK(l == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(names("99"));
    HP_CHECK(names("1 queue")); /* veth pairs come with one queue */
    hp_link_close(l);

    struct hp_link_config bad[] = {
        {.iface = n.ifname[0], .frame_size = 3000},
        {.iface = n.ifname[0], .ring_size = 64, .n_frames = 100},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        l = hp_link_open("afxdp", &bad[i]);
        HP_CHECK(l == NULL);
        HP_CHECK_EQ(errno, EINVAL);
        hp_link_close(l);
    }
    /* 2048-byte frames hold an MTU of at most 2048 - 256 - 18 = 1774. */
    HP_REQUIRE_EQ(tool_netns_sh(&n, 0, "ip link set dev %s mtu 1800", n.ifname[0]), 0);
    struct hp_link_config small = {.iface = n.ifname[0], .frame_size = 2048};
    errno = 0;
    l = hp_link_open("afxdp", &small);
    HP_CHECK(l == NULL);
    HP_CHECK_EQ(errno, EMSGSIZE);
    HP_CHECK(names("1800"));
    hp_link_close(l);
    HP_REQUIRE_EQ(tool_netns_sh(&n, 0, "ip link set dev %s mtu 1500", n.ifname[0]), 0);
    l = hp_link_open("afxdp", &small);
    HP_CHECK(l != NULL);
    if (l)
        HP_CHECK_EQ(hp_link_mtu(l), 1500);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(afxdp_set_mtu)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0], .flags = HP_LINK_F_COPY};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    HP_CHECK_EQ(hp_link_set_mtu(l, 2000), 0);
    HP_CHECK_EQ(hp_link_mtu(l), 2000);
    HP_CHECK_EQ(tool_netns_sh(&n, 0, "ip link show %s | grep -q \"mtu 2000 \"", n.ifname[0]), 0);
    HP_CHECK_EQ(hp_link_set_mtu(l, 4000), -EMSGSIZE); /* 4096-byte frames: at most 3822 */
    HP_CHECK_EQ(hp_link_mtu(l), 2000);
    /* A frame of the new MTU + 18 is accepted, one byte more is not. */
    struct hp_buf *b[2];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(hp_link_pool(l), b, 2), 2);
    memset(hp_buf_append(b[0], 2018), 0, 2018);
    memset(hp_buf_append(b[1], 2019), 0, 2019);
    HP_CHECK_EQ(hp_link_tx_burst(l, b, 2), 2);
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    HP_CHECK_EQ(st.tx_dropped, 1);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(afxdp_zero_copy_on_veth)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0], .flags = HP_LINK_F_ZEROCOPY};
    errno = 0;
    struct hp_link *l = hp_link_open("afxdp", &cfg);
    if (!l && errno == EOPNOTSUPP && names("not built in"))
        HP_SKIP("%s", hp_link_error());
    if (l) {
        /* A kernel whose veth does zero-copy: fine too. */
        printf("    veth accepted zero-copy AF_XDP\n");
        HP_CHECK_EQ(hp_link_close(l), 0);
        return;
    }
    HP_CHECK_EQ(errno, EOPNOTSUPP);
    HP_CHECK(names("zero-copy"));
    HP_CHECK(names("veth"));
    /* The refusal left nothing behind: copy mode opens at once. */
    cfg.flags = HP_LINK_F_COPY;
    l = hp_link_open("afxdp", &cfg);
    HP_CHECK(l != NULL);
    HP_CHECK_EQ(hp_link_close(l), 0);
    cfg.flags = HP_LINK_F_ZEROCOPY | HP_LINK_F_COPY;
    errno = 0;
    HP_CHECK(hp_link_open("afxdp", &cfg) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
}

HP_TEST(afxdp_reopen_same_queue_at_once)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    struct hp_link_config cfg = {.iface = n.ifname[0], .ring_size = 64};
    for (int i = 0; i < 4; i++) {
        struct hp_link *l;
        OPEN_OR_SKIP(l, &cfg);
        HP_CHECK_EQ(hp_link_close(l), 0);
    }
    /* Nothing stays attached after the last close. */
    HP_CHECK(tool_netns_sh(&n, 0, "ip link show %s | grep -q prog/xdp", n.ifname[0]) != 0);
}

HP_TEST(afxdp_modes_native_then_generic)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    /* veth has native XDP: the default takes it. */
    struct hp_link_config cfg = {.iface = n.ifname[0]};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    HP_CHECK_EQ(tool_netns_sh(&n, 0, "ip link show %s | grep -q \"mtu [0-9]* xdp \"", n.ifname[0]),
                0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    cfg.flags = HP_LINK_F_XDP_SKB;
    OPEN_OR_SKIP(l, &cfg);
    HP_CHECK_EQ(
        tool_netns_sh(&n, 0, "ip link show %s | grep -q \"mtu [0-9]* xdpgeneric \"", n.ifname[0]),
        0);
    HP_CHECK_EQ(hp_link_close(l), 0);
    /* ifb has no native XDP: the default falls back to generic mode. */
    if (tool_netns_sh(&n, 0, "ip link add hpifb0 type ifb 2>/dev/null && ip link set hpifb0 up") !=
        0) {
        printf("    (no ifb device here: the fallback is not exercised)\n");
        return;
    }
    struct hp_link_config ifb = {.iface = "hpifb0", .ring_size = 64};
    OPEN_OR_SKIP(l, &ifb);
    HP_CHECK_EQ(tool_netns_sh(&n, 0, "ip link show hpifb0 | grep -q \"mtu [0-9]* xdpgeneric \""),
                0);
    HP_CHECK_EQ(hp_link_close(l), 0);
}

HP_TEST(afxdp_someone_elses_xdp_program)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    /* Any XDP object will do; libxdp-dev's filter programs are at hand. */
    if (tool_netns_sh(&n, 0,
                      "o=$(ls /usr/lib/*/bpf/xdpfilt_alw_all.o /usr/lib/bpf/xdpfilt_alw_all.o "
                      "2>/dev/null | head -1);"
                      " [ -n \"$o\" ] && ip link set dev %s xdpgeneric obj $o sec xdp 2>/dev/null",
                      n.ifname[0]) != 0)
        HP_SKIP("no XDP object file to attach (xdpfilt_alw_all.o from libxdp)");
    struct hp_link_config cfg = {.iface = n.ifname[0]};
    errno = 0;
    struct hp_link *l = hp_link_open("afxdp", &cfg);
    if (!l && errno == EOPNOTSUPP && names("not built in"))
        HP_SKIP("%s", hp_link_error());
    HP_CHECK(l == NULL);
    HP_CHECK_EQ(errno, EBUSY);
    HP_CHECK(names("already attached"));
    HP_CHECK(names("xdpfilt_alw_all"));
    hp_link_close(l);
    /* Theirs is still there. */
    HP_CHECK_EQ(tool_netns_sh(&n, 0, "ip link show %s | grep -q xdpfilt", n.ifname[0]), 0);
}

/* Without root's capabilities, the refusal names them. */
HP_TEST(afxdp_without_privileges)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    HP_REQUIRE(pid >= 0);
    if (pid == 0) {
        /* nobody: every capability goes with the user id */
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
            setresuid(65534, 65534, 65534) < 0)
            _exit(3);
        struct hp_link_config cfg = {.iface = n.ifname[0]};
        errno = 0;
        struct hp_link *l = hp_link_open("afxdp", &cfg);
        if (!l && errno == EOPNOTSUPP && names("not built in"))
            _exit(77);
        if (l || errno != EPERM || !names("CAP_NET_ADMIN") || !names("root")) {
            fprintf(stderr, "    errno %d: %s\n", errno, hp_link_error());
            _exit(1);
        }
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    HP_REQUIRE(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77)
        HP_SKIP("afxdp is not built in");
    HP_CHECK_EQ(WEXITSTATUS(st), 0);
}

/* Frames the kernel could not deliver (the fill ring ran dry) are counted
 * from its XDP_STATISTICS. */
HP_TEST(afxdp_kernel_drops_are_counted)
{
    static struct tool_netns n; /* outlives the test: the teardown removes it */
    if (!setup(&n))
        return;
    uint8_t bmac[6], amac[6];
    int fd = raw_socket_b(&n, bmac);
    HP_REQUIRE(fd >= 0);
    struct hp_link_config cfg = {.iface = n.ifname[0],
                                 .ring_size = 64,
                                 .n_frames = 128,
                                 .flags = HP_LINK_F_COPY};
    struct hp_link *l;
    OPEN_OR_SKIP(l, &cfg);
    hp_link_mac(l, amac);
    /* The fill ring holds 64 buffers and nobody receives: of 200 frames,
     * 64 wait in the receive ring and 136 are dropped. */
    uint8_t f[64];
    unsigned sent = 0;
    for (unsigned i = 0; i < 200; i++) {
        build(f, 60, amac, bmac, i);
        sent += send(fd, f, 60, 0) == 60;
    }
    HP_CHECK_EQ(sent, 200);
    struct hp_link_stats st;
    double end = now_s() + WAIT_S;
    do {
        pause_us(1000);
        hp_link_stats(l, &st);
    } while (st.rx_dropped < 136 && now_s() < end);
    printf("    rx_dropped %llu after 200 frames into 64 buffers\n",
           (unsigned long long)st.rx_dropped);
    HP_CHECK_EQ(st.rx_dropped, 136);
    struct hp_buf *b[64];
    unsigned got = 0;
    int k;
    while ((k = hp_link_rx_burst(l, b, 64)) > 0) {
        got += (unsigned)k;
        hp_buf_free_bulk(b, (unsigned)k);
    }
    HP_CHECK_EQ(got, 64);
    HP_CHECK_EQ(hp_link_close(l), 0);
    close(fd);
}
