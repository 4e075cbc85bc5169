/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link: a server and a client in one process (or a forked child), frames both ways, chains, full rings, the peer gone and back, hostile peers. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/log.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "link/memif_internal.h"

/* ---- helpers ------------------------------------------------------------- */

static char *sock_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/hpm-%d-%s.sock", (int)getpid(), tag);
    return buf;
}

static struct hp_link *open_memif(int role, const char *path, uint32_t id, unsigned flags,
                                  uint32_t ring)
{
    struct hp_link_config c = {.ring_size = ring, .flags = flags};
    c.memif.role = role;
    c.memif.socket = path;
    c.memif.id = id;
    return hp_link_open("memif", &c);
}

static struct hp_link *open_cfg(const struct hp_link_config *c)
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
static bool wait_state(struct hp_link *a, bool want_up)
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

HP_TEST(memif_zero_copy_client)
{
    char path[108];
    sock_path(path, sizeof path, "zc");
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    struct hp_link *c = open_memif(HP_MEMIF_CLIENT, path, 0, HP_LINK_F_ZEROCOPY, 512);
    HP_REQUIRE(s != NULL && c != NULL);
    HP_CHECK(hp_link_caps(c) & HP_LINK_CAP_ZEROCOPY_TX);
    HP_CHECK(hp_link_caps(c) & HP_LINK_CAP_ZEROCOPY_RX);
    HP_REQUIRE(wait_up(s, c));
    /* From the client's own pool: no copy on its side. */
    HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 5000), 5000);
    struct hp_memif_stats ms;
    HP_REQUIRE_EQ(hp_link_memif_stats(c, &ms), 0);
    HP_CHECK(ms.zero_copy);
    HP_CHECK_EQ(ms.tx_copied, 0);
    /* Received into the client's pool, the shared region. */
    HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 5000), 5000);
    struct hp_buf *b = frame(hp_link_pool(s), 100, 1);
    HP_REQUIRE(b != NULL);
    HP_REQUIRE_EQ(hp_link_tx_burst(s, &b, 1), 1);
    struct hp_buf *r[4];
    int k = 0;
    for (int i = 0; i < 1000 && k == 0; i++)
        k = hp_link_rx_burst(c, r, 4);
    HP_REQUIRE_EQ(k, 1);
    HP_CHECK(r[0]->pool == hp_link_pool(c));
    hp_buf_free(r[0]);
    /* From another pool: copied into the shared one first. */
    struct hp_pool_config pc = {.name = "other", .n_bufs = 256};
    struct hp_pool *other = hp_pool_create(&pc);
    HP_REQUIRE(other != NULL);
    HP_CHECK_EQ(exchange(c, s, other, 100), 100);
    HP_REQUIRE_EQ(hp_link_memif_stats(c, &ms), 0);
    HP_CHECK_EQ(ms.tx_copied, 100);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(hp_pool_destroy(other), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A frame of len bytes in three segments of pool p. */
static struct hp_buf *chained(struct hp_pool *p, uint32_t len, uint32_t seq)
{
    struct hp_buf *whole = frame(p, len, seq);
    if (!whole)
        return NULL;
    uint8_t bytes[2048];
    hp_buf_copy_out(whole, 0, len, bytes);
    hp_buf_free(whole);
    uint32_t cut[3] = {len / 2, len / 4, len - len / 2 - len / 4};
    struct hp_buf *head = NULL;
    uint32_t off = 0;
    for (int i = 0; i < 3; i++) {
        struct hp_buf *b = hp_buf_alloc(p);
        uint8_t *d = b ? hp_buf_append(b, cut[i]) : NULL;
        if (!d) {
            hp_buf_free(b);
            hp_buf_free(head);
            return NULL;
        }
        memcpy(d, bytes + off, cut[i]);
        off += cut[i];
        if (!head)
            head = b;
        else
            hp_buf_chain(head, b);
    }
    return head;
}

/* Send chained frames of growing sizes from tx, check each at rx. */
static uint32_t exchange_chains(struct hp_link *tx, struct hp_link *rx, uint32_t count)
{
    uint32_t sent = 0, got = 0;
    for (int spins = 0; got < count && spins < 100000; spins++) {
        if (sent < count) {
            struct hp_buf *b = chained(hp_link_pool(tx), len_of(sent), sent);
            if (b && hp_link_tx_burst(tx, &b, 1) == 1)
                sent++;
            else
                hp_buf_free(b);
        }
        struct hp_buf *r[16];
        int k = hp_link_rx_burst(rx, r, 16);
        for (int i = 0; i < k; i++) {
            if (!frame_is(r[i], len_of(got), got)) {
                hp_buf_free_bulk(r, (unsigned)k);
                return 0;
            }
            got++;
        }
        if (k > 0)
            hp_buf_free_bulk(r, (unsigned)k);
    }
    return got;
}

HP_TEST(memif_chained_frames)
{
    for (int zc = 0; zc < 2; zc++) {
        char path[108];
        sock_path(path, sizeof path, zc ? "chain-zc" : "chain");
        struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 3, 0, 0);
        /* 256-byte shared buffers: a 1518-byte frame spans 6 descriptors. */
        struct hp_link_config cc = {.ring_size = 64, .flags = zc ? HP_LINK_F_ZEROCOPY : 0};
        cc.memif.socket = path;
        cc.memif.id = 3;
        cc.memif.buffer_size = zc ? 0 : 256;
        struct hp_link *c = open_cfg(&cc);
        HP_REQUIRE(s != NULL && c != NULL);
        HP_REQUIRE(wait_up(s, c));
        HP_CHECK_EQ(exchange_chains(c, s, 500), 500);
        HP_CHECK_EQ(exchange_chains(s, c, 500), 500);
        /* Whole frames through small buffers: chained on the wire. */
        HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 500), 500);
        HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 500), 500);
        struct hp_memif_stats ms;
        HP_REQUIRE_EQ(hp_link_memif_stats(s, &ms), 0);
        HP_CHECK_EQ(ms.bad_descs, 0);
        HP_CHECK_EQ(hp_link_close(c), 0);
        HP_CHECK_EQ(hp_link_close(s), 0);
        HP_CHECK_EQ(hp_pools_in_use(), 0);
    }
}

HP_TEST(memif_ring_full_takes_what_fits)
{
    for (int zc = 0; zc < 2; zc++) {
        char path[108];
        sock_path(path, sizeof path, zc ? "full-zc" : "full");
        struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
        struct hp_link *c = open_memif(HP_MEMIF_CLIENT, path, 0, zc ? HP_LINK_F_ZEROCOPY : 0, 8);
        HP_REQUIRE(s != NULL && c != NULL);
        HP_REQUIRE(wait_up(s, c));
        struct hp_buf *b[12];
        for (uint32_t i = 0; i < 12; i++)
            HP_REQUIRE((b[i] = frame(hp_link_pool(c), 64, i)) != NULL);
        HP_CHECK_EQ(hp_link_tx_burst(c, b, 12), 8);
        HP_CHECK_EQ(hp_link_tx_burst(c, b + 8, 4), 0); /* the caller keeps them */
        struct hp_link_stats st;
        hp_link_stats(c, &st);
        HP_CHECK_EQ(st.tx_full, 2);
        HP_CHECK_EQ(st.tx_packets, 8);
        struct hp_buf *r[16];
        HP_CHECK_EQ(hp_link_rx_burst(s, r, 3), 3);
        for (int i = 0; i < 3; i++)
            HP_CHECK(frame_is(r[i], 64, (uint32_t)i));
        hp_buf_free_bulk(r, 3);
        HP_CHECK_EQ(hp_link_tx_burst(c, b + 8, 4), 3);
        hp_buf_free(b[11]);
        int k = hp_link_rx_burst(s, r, 16);
        HP_CHECK_EQ(k, 8);
        for (int i = 0; i < k; i++)
            HP_CHECK(frame_is(r[i], 64, (uint32_t)i + 3));
        if (k > 0)
            hp_buf_free_bulk(r, (unsigned)k);
        /* Server to client: the client offered 8 buffers. */
        for (uint32_t i = 0; i < 12; i++)
            HP_REQUIRE((b[i] = frame(hp_link_pool(s), 64, i)) != NULL);
        HP_CHECK_EQ(hp_link_tx_burst(s, b, 12), 8);
        hp_buf_free_bulk(b + 8, 4);
        /* Closing with frames in the rings returns every buffer. */
        HP_CHECK_EQ(hp_link_close(c), 0);
        HP_CHECK_EQ(hp_link_close(s), 0);
        HP_CHECK_EQ(hp_pools_in_use(), 0);
    }
}

HP_TEST(memif_disconnect_and_reconnect)
{
    char path[108];
    sock_path(path, sizeof path, "recon");
    struct hp_link_config cc = {.ring_size = 64};
    cc.memif.socket = path;
    cc.memif.reconnect_ms = 10;
    struct hp_link *c = open_cfg(&cc);
    HP_REQUIRE(c != NULL);
    HP_CHECK(!hp_link_up(c)); /* no server yet: it opens down */
    /* Down: frames are dropped and counted. */
    struct hp_buf *b[4];
    for (int i = 0; i < 4; i++)
        HP_REQUIRE((b[i] = frame(hp_link_pool(c), 64, 0)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(c, b, 4), 4);
    struct hp_memif_stats ms;
    HP_REQUIRE_EQ(hp_link_memif_stats(c, &ms), 0);
    HP_CHECK_EQ(ms.tx_down, 4);
    HP_CHECK(strstr(ms.reason, "no server") != NULL);
    for (int round = 0; round < 3; round++) {
        struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
        HP_REQUIRE(s != NULL);
        HP_REQUIRE(wait_up(s, c));
        HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 200), 200);
        HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 200), 200);
        /* Frames left in the ring when the server goes. */
        for (int i = 0; i < 4; i++)
            HP_REQUIRE((b[i] = frame(hp_link_pool(c), 64, 0)) != NULL);
        HP_CHECK_EQ(hp_link_tx_burst(c, b, 4), 4);
        HP_CHECK_EQ(hp_link_close(s), 0);
        HP_REQUIRE(wait_state(c, false));
        HP_REQUIRE_EQ(hp_link_memif_stats(c, &ms), 0);
        HP_CHECK_EQ(ms.disconnects, (uint64_t)round + 1);
        HP_CHECK_EQ(ms.tx_unread, 4 * ((uint64_t)round + 1));
        HP_CHECK(strstr(ms.reason, "interface closed") != NULL);
    }
    HP_CHECK_EQ(ms.connects, 3);
    /* The client goes; the server stays and takes the next one. */
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    HP_REQUIRE(s != NULL);
    HP_REQUIRE(wait_up(s, c));
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_REQUIRE(wait_state(s, false));
    c = open_cfg(&cc);
    HP_REQUIRE(c != NULL);
    HP_REQUIRE(wait_up(s, c));
    HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 100), 100);
    HP_REQUIRE_EQ(hp_link_memif_stats(s, &ms), 0);
    HP_CHECK_EQ(ms.connects, 2);
    HP_CHECK_EQ(ms.disconnects, 1);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The child's side of the crash test: a client (or server) that sends
 * frames forever, or count frames then waits to be killed. */
static void child_sender(int role, const char *path, unsigned flags, uint32_t count)
{
    struct hp_link_config cc = {.ring_size = 64, .flags = flags};
    cc.memif.role = role;
    cc.memif.socket = path;
    cc.memif.reconnect_ms = 10;
    struct hp_link *l = open_cfg(&cc);
    if (!l || !wait_up(l, NULL))
        _exit(3);
    uint32_t seq = 0;
    for (;;) {
        struct hp_buf *b = seq < count ? frame(hp_link_pool(l), len_of(seq), seq) : NULL;
        if (b && hp_link_tx_burst(l, &b, 1) == 1)
            seq++;
        else
            hp_buf_free(b);
        struct hp_buf *r[8];
        int k = hp_link_rx_burst(l, r, 8);
        if (k > 0)
            hp_buf_free_bulk(r, (unsigned)k);
        if (seq >= count)
            nap();
    }
}

/* Receive until n frames arrived in order (after skipping any that come
 * first with a smaller sequence number) or ~5 s pass. */
static uint32_t receive_in_order(struct hp_link *l, uint32_t n)
{
    uint32_t got = 0;
    for (int i = 0; i < 25000 && got < n; i++) {
        struct hp_buf *r[16];
        int k = hp_link_rx_burst(l, r, 16);
        for (int j = 0; j < k; j++)
            if (frame_is(r[j], len_of(got), got))
                got++;
        if (k > 0)
            hp_buf_free_bulk(r, (unsigned)k);
        if (k <= 0)
            nap();
    }
    return got;
}

HP_TEST(memif_peer_killed_and_back)
{
    for (int role = 0; role < 2; role++) {
        char path[108];
        sock_path(path, sizeof path, role ? "kill-s" : "kill-c");
        /* We are the other role; the child crashes with frames in flight. */
        int mine = role == HP_MEMIF_CLIENT ? HP_MEMIF_SERVER : HP_MEMIF_CLIENT;
        struct hp_link_config cc = {.ring_size = 64};
        cc.memif.role = mine;
        cc.memif.socket = path;
        cc.memif.reconnect_ms = 10;
        struct hp_link *l = NULL;
        if (mine == HP_MEMIF_SERVER)
            HP_REQUIRE((l = open_cfg(&cc)) != NULL);
        pid_t kid = fork();
        HP_REQUIRE(kid >= 0);
        if (kid == 0)
            child_sender(role, path, role == HP_MEMIF_CLIENT ? HP_LINK_F_ZEROCOPY : 0, UINT32_MAX);
        if (!l)
            HP_REQUIRE((l = open_cfg(&cc)) != NULL);
        HP_CHECK(wait_up(l, NULL));
        HP_CHECK_GE(receive_in_order(l, 300), 300);
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        HP_CHECK(wait_state(l, false));
        struct hp_memif_stats ms;
        HP_REQUIRE_EQ(hp_link_memif_stats(l, &ms), 0);
        HP_CHECK_EQ(ms.disconnects, 1);
        /* A new peer: the link comes back and carries its frames. */
        kid = fork();
        HP_REQUIRE(kid >= 0);
        if (kid == 0)
            child_sender(role, path, 0, 500);
        HP_CHECK(wait_up(l, NULL));
        HP_CHECK_EQ(receive_in_order(l, 500), 500);
        kill(kid, SIGKILL);
        waitpid(kid, NULL, 0);
        HP_REQUIRE_EQ(hp_link_memif_stats(l, &ms), 0);
        HP_CHECK_EQ(ms.connects, 2);
        HP_CHECK_EQ(ms.bad_descs + ms.ring_errors + ms.bad_msgs, 0);
        HP_CHECK_EQ(hp_link_close(l), 0);
        HP_CHECK_EQ(hp_pools_in_use(), 0);
        unlink(path);
    }
}

/* A client with id and secret (NULL: none) on server s's path is refused,
 * and says why: reason. */
static void check_refused(struct hp_link *s, const char *path, uint32_t id, const char *secret,
                          const char *reason)
{
    struct hp_link_config cc = {0};
    cc.memif.socket = path;
    cc.memif.id = id;
    cc.memif.secret = secret;
    struct hp_link *c = open_cfg(&cc);
    HP_REQUIRE(c != NULL);
    struct hp_memif_stats ms = {0};
    for (int k = 0; k < 3000 && !strstr(ms.reason, reason); k++) {
        struct hp_buf *x[4];
        hp_link_rx_burst(s, x, 4);
        hp_link_rx_burst(c, x, 4);
        hp_link_memif_stats(c, &ms);
        nap();
    }
    if (!strstr(ms.reason, reason))
        hp_test_fail(__FILE__, __LINE__, "secret '%s': the client says '%s', not '%s'",
                     secret ? secret : "(none)", ms.reason, reason);
    HP_CHECK(!hp_link_up(c) && !hp_link_up(s));
    HP_CHECK_GE(ms.refused, 1);
    HP_CHECK_EQ(ms.connects, 0);
    HP_CHECK_EQ(hp_link_close(c), 0);
}

HP_TEST(memif_id_and_secret)
{
    char path[108];
    sock_path(path, sizeof path, "secret");
    struct hp_link_config sc = {0};
    sc.memif.role = HP_MEMIF_SERVER;
    sc.memif.socket = path;
    sc.memif.id = 7;
    sc.memif.secret = "open sesame";
    struct hp_link *s = open_cfg(&sc);
    HP_REQUIRE(s != NULL);
    check_refused(s, path, 8, "open sesame", "ID not found");
    check_refused(s, path, 7, NULL, "secret required");
    check_refused(s, path, 7, "", "secret required");
    check_refused(s, path, 7, "open sesamf", "incorrect secret");
    /* Neither a prefix of the secret nor the secret and more. */
    check_refused(s, path, 7, "open sesam", "incorrect secret");
    check_refused(s, path, 7, "open sesame!", "incorrect secret");
    struct hp_memif_stats ms;
    HP_REQUIRE_EQ(hp_link_memif_stats(s, &ms), 0);
    HP_CHECK_GE(ms.refused, 6);
    struct hp_link_config cc = {0};
    cc.memif.socket = path;
    cc.memif.id = 7;
    cc.memif.secret = "open sesame";
    struct hp_link *c = open_cfg(&cc);
    HP_REQUIRE(c != NULL);
    HP_CHECK(wait_up(s, c));
    HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 50), 50);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- hostile peers ------------------------------------------------------- */

/* The last warning the library logged. */
static char last_warn[512];

static void capture(void *ctx, enum hp_log_level level, const char *subsys, const char *msg)
{
    (void)ctx;
    if (level <= HP_LOG_WARN && strcmp(subsys, "memif") == 0)
        snprintf(last_warn, sizeof last_warn, "%s", msg);
}

static int raw_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static int raw_send_bytes(int fd, const void *buf, size_t len, int nfds, const int *fds)
{
    struct iovec iov = {(void *)buf, len};
    union {
        char b[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        memset(&ctl, 0, sizeof ctl);
        mh.msg_control = ctl.b;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static int raw_send(int fd, const struct hp__memif_msg *m, int nfds, const int *fds)
{
    uint8_t buf[HP__MEMIF_MSG_SIZE];
    hp__memif_msg_encode(m, buf);
    return raw_send_bytes(fd, buf, sizeof buf, nfds, fds);
}

/* Poll link l while waiting for a message on fd: 1 (in *m), 0 (the link
 * closed the channel), -1 (nothing in ~2 s). */
static int raw_recv(struct hp_link *l, int fd, struct hp__memif_msg *m)
{
    for (int i = 0; i < 10000; i++) {
        struct hp_buf *x[4];
        int k = hp_link_rx_burst(l, x, 4);
        if (k > 0)
            hp_buf_free_bulk(x, (unsigned)k);
        uint8_t buf[HP__MEMIF_MSG_SIZE];
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0)
            return 0;
        if (r > 0)
            return hp__memif_msg_decode(buf, (size_t)r, m) == 0 ? 1 : -1;
        nap();
    }
    return -1;
}

static struct hp__memif_msg msg_of(uint16_t type)
{
    struct hp__memif_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    return m;
}

static struct hp__memif_msg init_msg(uint32_t id)
{
    struct hp__memif_msg m = msg_of(HP__MEMIF_MSG_INIT);
    m.u.init.version = HP__MEMIF_VERSION;
    m.u.init.id = id;
    snprintf(m.u.init.name, sizeof m.u.init.name, "raw test peer");
    return m;
}

static struct hp__memif_msg region_msg(uint16_t index, uint64_t size)
{
    struct hp__memif_msg m = msg_of(HP__MEMIF_MSG_ADD_REGION);
    m.u.add_region.index = index;
    m.u.add_region.size = size;
    return m;
}

static struct hp__memif_msg ring_msg(bool c2s, uint32_t offset, uint8_t log2)
{
    struct hp__memif_msg m = msg_of(HP__MEMIF_MSG_ADD_RING);
    m.u.add_ring.flags = c2s ? HP__MEMIF_RING_FLAG_C2S : 0;
    m.u.add_ring.offset = offset;
    m.u.add_ring.log2_ring_size = log2;
    return m;
}

/* A memfd of len bytes, sealed against shrinking when sealed. */
static int memfd(size_t len, bool sealed)
{
    int fd = memfd_create("hpm-test", MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
        return -1;
    if (sealed)
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
    return fd;
}

enum { STEP_MSG, STEP_BYTES };

struct step {
    int kind;
    struct hp__memif_msg msg;
    size_t bytes; /* STEP_BYTES: this many zero bytes (type 0) */
    int fd_kind;  /* 0 none, 1 sealed region, 2 unsealed, 3 pipe, 4 eventfd, 5 two eventfds */
    size_t fd_len;
};

/* One hostile script against server s: HELLO, then the steps, each but the
 * last answered by ACK; the last must bring DISCONNECT with `reason`. */
static void run_script(struct hp_link *s, const char *path, const struct step *steps, int n,
                       const char *reason)
{
    int fd = raw_connect(path);
    HP_REQUIRE(fd >= 0);
    struct hp__memif_msg m;
    HP_REQUIRE_EQ(raw_recv(s, fd, &m), 1);
    HP_CHECK_EQ(m.type, HP__MEMIF_MSG_HELLO);
    for (int i = 0; i < n; i++) {
        int fds[2] = {-1, -1}, nfds = 0, p[2];
        switch (steps[i].fd_kind) {
        case 1:
            fds[nfds++] = memfd(steps[i].fd_len, true);
            break;
        case 2:
            fds[nfds++] = memfd(steps[i].fd_len, false);
            break;
        case 3:
            HP_REQUIRE(pipe(p) == 0);
            fds[nfds++] = p[0];
            close(p[1]);
            break;
        case 4:
            fds[nfds++] = eventfd(0, 0);
            break;
        case 5:
            fds[nfds++] = eventfd(0, 0);
            fds[nfds++] = eventfd(0, 0);
            break;
        default:
            break;
        }
        uint8_t zero[256] = {0};
        if (steps[i].kind == STEP_BYTES)
            HP_CHECK_EQ(raw_send_bytes(fd, zero, steps[i].bytes, nfds, fds), 0);
        else
            HP_CHECK_EQ(raw_send(fd, &steps[i].msg, nfds, fds), 0);
        for (int k = 0; k < nfds; k++)
            close(fds[k]);
        HP_REQUIRE_EQ(raw_recv(s, fd, &m), 1);
        if (i + 1 < n) {
            HP_CHECK_EQ(m.type, HP__MEMIF_MSG_ACK);
            continue;
        }
        HP_CHECK_EQ(m.type, HP__MEMIF_MSG_DISCONNECT);
        if (!strstr(m.u.disconnect.reason, reason))
            hp_test_fail(__FILE__, __LINE__, "DISCONNECT says '%s', not '%s'",
                         m.u.disconnect.reason, reason);
        if (!strstr(last_warn, reason))
            hp_test_fail(__FILE__, __LINE__, "the log says '%s', not '%s'", last_warn, reason);
    }
    /* Then the server hangs up. */
    HP_CHECK_EQ(raw_recv(s, fd, &m), 0);
    close(fd);
    HP_CHECK(!hp_link_up(s));
}

#define MSG(x)                                                                                     \
    {                                                                                              \
        STEP_MSG, x, 0, 0, 0                                                                       \
    }
#define MSG_FD(x, k, len)                                                                          \
    {                                                                                              \
        STEP_MSG, x, 0, k, len                                                                     \
    }

HP_TEST(memif_server_refuses_malformed_control)
{
    char path[108];
    sock_path(path, sizeof path, "hostile-c");
    hp_set_log_fn(capture, NULL);
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    HP_REQUIRE(s != NULL);
    struct hp__memif_msg old = init_msg(0), bad_type = msg_of(99), sized = region_msg(0, 8192);
    old.u.init.version = 0x0100;
    struct hp__memif_msg r0 = region_msg(0, 4096), r1 = region_msg(1, 4096),
                         wide = region_msg(0, 4096);
    struct hp__memif_msg eth_only = init_msg(0);
    eth_only.u.init.mode = 1;
    const struct step s_short[] = {{STEP_BYTES, {0}, 10, 0, 0}};
    const struct step s_long[] = {{STEP_BYTES, {0}, 200, 0, 0}};
    const struct step s_type[] = {MSG(bad_type)};
    const struct step s_ack[] = {MSG(msg_of(HP__MEMIF_MSG_ACK))};
    const struct step s_ver[] = {MSG(old)};
    const struct step s_mode[] = {MSG(eth_only)};
    const struct step s_nofd[] = {MSG(init_msg(0)), MSG(r0)};
    const struct step s_unsealed[] = {MSG(init_msg(0)), MSG_FD(r0, 2, 4096)};
    const struct step s_small[] = {MSG(init_msg(0)), MSG_FD(sized, 1, 4096)};
    const struct step s_index[] = {MSG(init_msg(0)), MSG_FD(r1, 1, 4096)};
    const struct step s_outside[] = {MSG(init_msg(0)), MSG_FD(r0, 1, 4096),
                                     MSG_FD(ring_msg(true, 4000, 4), 4, 0)};
    const struct step s_pipe[] = {MSG(init_msg(0)), MSG_FD(r0, 1, 4096),
                                  MSG_FD(ring_msg(true, 0, 4), 3, 0)};
    const struct step s_tworing[] = {MSG(init_msg(0)), MSG_FD(r0, 1, 4096),
                                     MSG_FD(ring_msg(true, 0, 4), 4, 0),
                                     MSG_FD(ring_msg(true, 512, 4), 4, 0)};
    const struct step s_norings[] = {MSG(init_msg(0)), MSG_FD(r0, 1, 4096),
                                     MSG(msg_of(HP__MEMIF_MSG_CONNECT))};
    const struct step s_twofds[] = {MSG_FD(init_msg(0), 5, 0)};
    const struct step s_cookie[] = {
        MSG(init_msg(0)), MSG_FD(wide, 1, 4096), MSG_FD(ring_msg(true, 0, 4), 4, 0),
        MSG_FD(ring_msg(false, 1024, 4), 4, 0), MSG(msg_of(HP__MEMIF_MSG_CONNECT))};
    run_script(s, path, s_short, 1, "invalid message size");
    run_script(s, path, s_long, 1, "truncated message");
    run_script(s, path, s_type, 1, "unknown message type");
    run_script(s, path, s_ack, 1, "unexpected message");
    run_script(s, path, s_ver, 1, "incompatible memif version");
    run_script(s, path, s_mode, 1, "only ethernet mode");
    run_script(s, path, s_nofd, 2, "missing region fd");
    run_script(s, path, s_unsealed, 2, "not sealed");
    run_script(s, path, s_small, 2, "smaller than announced");
    run_script(s, path, s_index, 2, "invalid region index");
    run_script(s, path, s_outside, 3, "ring outside its region");
    run_script(s, path, s_pipe, 3, "not an eventfd");
    run_script(s, path, s_tworing, 4, "invalid ring index");
    run_script(s, path, s_norings, 3, "rings missing");
    run_script(s, path, s_twofds, 1, "extra descriptors");
    run_script(s, path, s_cookie, 5, "wrong ring cookie");
    struct hp_memif_stats ms;
    HP_REQUIRE_EQ(hp_link_memif_stats(s, &ms), 0);
    HP_CHECK_EQ(ms.refused + ms.bad_msgs, 16);
    HP_CHECK_EQ(ms.connects, 0);
    /* A client that says nothing is dropped at the handshake's deadline. */
    int idle = raw_connect(path);
    HP_REQUIRE(idle >= 0);
    struct hp__memif_msg m;
    HP_CHECK_EQ(raw_recv(s, idle, &m), 1); /* HELLO */
    for (int i = 0; i < 20000 && !strstr(last_warn, "handshake"); i++) {
        struct hp_buf *x[4];
        hp_link_rx_burst(s, x, 4);
        nap();
    }
    HP_CHECK(strstr(last_warn, "handshake not finished") != NULL);
    close(idle);
    /* And the server still takes a real client. */
    struct hp_link *c = open_memif(HP_MEMIF_CLIENT, path, 0, 0, 0);
    HP_REQUIRE(c != NULL);
    HP_CHECK(wait_up(s, c));
    HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 50), 50);
    /* A second client while one is connected: told so, and refused. */
    int extra = raw_connect(path);
    HP_REQUIRE(extra >= 0);
    HP_CHECK_EQ(raw_recv(s, extra, &m), 1);
    HP_CHECK_EQ(m.type, HP__MEMIF_MSG_DISCONNECT);
    HP_CHECK(strstr(m.u.disconnect.reason, "Already connected") != NULL);
    close(extra);
    HP_CHECK(hp_link_up(s));
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    hp_set_log_fn(NULL, NULL);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* INIT with secret (24 bytes as they go on the wire) from a raw client to
 * server s: the type of the server's answer (ACK or DISCONNECT, its reason
 * in why), or -1 when none came. */
static int raw_init_answer(struct hp_link *s, const char *path, const uint8_t secret[24], char *why,
                           size_t len)
{
    int fd = raw_connect(path);
    if (fd < 0)
        return -1;
    struct hp__memif_msg m;
    int rc = -1;
    if (raw_recv(s, fd, &m) == 1 && m.type == HP__MEMIF_MSG_HELLO) {
        struct hp__memif_msg init = init_msg(0);
        memcpy(init.u.init.secret, secret, sizeof init.u.init.secret);
        if (raw_send(fd, &init, 0, NULL) == 0 && raw_recv(s, fd, &m) == 1) {
            rc = m.type;
            snprintf(why, len, "%s", rc == HP__MEMIF_MSG_DISCONNECT ? m.u.disconnect.reason : "");
        }
    }
    close(fd);
    /* After an ACK the server holds the channel: wait until it has seen the
     * hang-up, so that the next client is not "already connected". */
    struct hp_memif_stats ms = {0};
    for (int k = 0; k < 10000 && rc == HP__MEMIF_MSG_ACK && !strstr(ms.reason, "closed"); k++) {
        struct hp_buf *x[4];
        hp_link_rx_burst(s, x, 4);
        hp_link_memif_stats(s, &ms);
        nap();
    }
    HP_CHECK(rc != HP__MEMIF_MSG_ACK || strstr(ms.reason, "closed") != NULL);
    HP_CHECK(!hp_link_up(s));
    return rc;
}

/* The secret is compared as DPDK compares it (strncmp over 24 bytes): up to
 * the first NUL, so that what a client leaves after it does not count, and
 * the whole 24 bytes when there is none. */
HP_TEST(memif_secret_compared_up_to_nul)
{
    char path[108], why[128] = "";
    sock_path(path, sizeof path, "secret-wire");
    hp_set_log_fn(capture, NULL);
    struct hp_link_config sc = {0};
    sc.memif.role = HP_MEMIF_SERVER;
    sc.memif.socket = path;
    sc.memif.secret = "open sesame";
    struct hp_link *s = open_cfg(&sc);
    HP_REQUIRE(s != NULL);
    uint8_t w[24];
    memset(w, 0, sizeof w);
    memcpy(w, "open sesame\0junk", 16);
    HP_CHECK_EQ(raw_init_answer(s, path, w, why, sizeof why), HP__MEMIF_MSG_ACK);
    memcpy(w, "open sesameXXXXXXXXXXXXX", 24); /* no NUL at all */
    HP_CHECK_EQ(raw_init_answer(s, path, w, why, sizeof why), HP__MEMIF_MSG_DISCONNECT);
    HP_CHECK(strstr(why, "incorrect secret") != NULL);
    memset(w, 0, sizeof w);
    memcpy(w, "\0open sesame", 12); /* empty up to its NUL */
    HP_CHECK_EQ(raw_init_answer(s, path, w, why, sizeof why), HP__MEMIF_MSG_DISCONNECT);
    HP_CHECK(strstr(why, "secret") != NULL);
    HP_CHECK_EQ(hp_link_close(s), 0);
    /* A secret of the full 24 bytes: its 23-byte prefix is refused, itself
     * taken. */
    sc.memif.secret = "abcdefghijklmnopqrstuvwx";
    s = open_cfg(&sc);
    HP_REQUIRE(s != NULL);
    check_refused(s, path, 0, "abcdefghijklmnopqrstuvw", "incorrect secret");
    struct hp_link_config cc = {0};
    cc.memif.socket = path;
    cc.memif.secret = sc.memif.secret;
    struct hp_link *c = open_cfg(&cc);
    HP_REQUIRE(c != NULL);
    HP_CHECK(wait_up(s, c));
    HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 50), 50);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    /* A server without a secret takes a client with one (DPDK's rule: the
     * server decides). */
    sc.memif.secret = NULL;
    s = open_cfg(&sc);
    c = open_cfg(&cc);
    HP_REQUIRE(s != NULL && c != NULL);
    HP_CHECK(wait_up(s, c));
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    hp_set_log_fn(NULL, NULL);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A raw server: listen at path (non-blocking). */
static int raw_listen(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4) < 0)
        return -1;
    return fd;
}

/* Accept the client's next connection, polling it meanwhile. */
static int raw_accept(struct hp_link *c, int lfd)
{
    for (int i = 0; i < 10000; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
        if (fd >= 0)
            return fd;
        struct hp_buf *x[4];
        hp_link_rx_burst(c, x, 4);
        nap();
    }
    return -1;
}

static struct hp__memif_msg hello_msg(void)
{
    struct hp__memif_msg h = msg_of(HP__MEMIF_MSG_HELLO);
    snprintf(h.u.hello.name, sizeof h.u.hello.name, "raw test server");
    h.u.hello.min_version = h.u.hello.max_version = HP__MEMIF_VERSION;
    h.u.hello.max_region = 7;
    h.u.hello.max_log2_ring_size = 10;
    return h;
}

HP_TEST(memif_client_refuses_malformed_control)
{
    char path[108];
    sock_path(path, sizeof path, "hostile-s");
    hp_set_log_fn(capture, NULL);
    int lfd = raw_listen(path);
    HP_REQUIRE(lfd >= 0);
    struct hp_link_config cc = {0};
    cc.memif.socket = path;
    cc.memif.reconnect_ms = 5;
    struct hp_link *c = open_cfg(&cc);
    HP_REQUIRE(c != NULL);
    struct hp__memif_msg future = hello_msg(), flat = hello_msg();
    future.u.hello.min_version = 0x0300;
    flat.u.hello.max_log2_ring_size = 0;
    struct {
        struct hp__memif_msg first;
        bool ack_init; /* then answer INIT with `second` */
        struct hp__memif_msg second;
        int second_fds;
        const char *reason;
    } cases[] = {
        {future, false, {0}, 0, "incompatible memif version"},
        {msg_of(HP__MEMIF_MSG_ACK), false, {0}, 0, "unexpected message"},
        {flat, false, {0}, 0, "invalid ring size"},
        {hello_msg(), true, msg_of(HP__MEMIF_MSG_CONNECTED), 0, "unexpected message"},
        {hello_msg(), true, msg_of(HP__MEMIF_MSG_ACK), 1, "unexpected file descriptor"},
        {hello_msg(), true, msg_of(42), 0, "unknown message type"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = raw_accept(c, lfd);
        HP_REQUIRE(fd >= 0);
        HP_CHECK_EQ(raw_send(fd, &cases[i].first, 0, NULL), 0);
        struct hp__memif_msg m;
        if (cases[i].ack_init) {
            HP_REQUIRE_EQ(raw_recv(c, fd, &m), 1);
            HP_CHECK_EQ(m.type, HP__MEMIF_MSG_INIT);
            HP_CHECK_EQ(m.u.init.version, HP__MEMIF_VERSION);
            int efd = eventfd(0, 0);
            HP_CHECK_EQ(raw_send(fd, &cases[i].second, cases[i].second_fds, &efd), 0);
            close(efd);
        }
        HP_REQUIRE_EQ(raw_recv(c, fd, &m), 1);
        HP_CHECK_EQ(m.type, HP__MEMIF_MSG_DISCONNECT);
        if (!strstr(m.u.disconnect.reason, cases[i].reason))
            hp_test_fail(__FILE__, __LINE__, "DISCONNECT says '%s', not '%s'",
                         m.u.disconnect.reason, cases[i].reason);
        HP_CHECK(strstr(last_warn, cases[i].reason) != NULL);
        HP_CHECK_EQ(raw_recv(c, fd, &m), 0);
        close(fd);
        HP_CHECK(!hp_link_up(c));
    }
    struct hp_memif_stats ms;
    HP_REQUIRE_EQ(hp_link_memif_stats(c, &ms), 0);
    HP_CHECK_EQ(ms.bad_msgs, sizeof cases / sizeof cases[0]);
    /* A server that hangs up at once: refused, tried again. */
    int fd = raw_accept(c, lfd);
    HP_REQUIRE(fd >= 0);
    close(fd);
    HP_REQUIRE((fd = raw_accept(c, lfd)) >= 0);
    close(fd);
    close(lfd);
    unlink(path);
    /* The client still reaches a real server. */
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    HP_REQUIRE(s != NULL);
    HP_CHECK(wait_up(s, c));
    HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 50), 50);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    hp_set_log_fn(NULL, NULL);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* What the peer writes in shared memory, done here through the other
 * link's own mapping. */
static void put_desc(struct memif_queue *q, uint16_t slot, uint16_t flags, uint16_t region,
                     uint32_t len, uint32_t off)
{
    q->desc[slot & q->mask] = (struct hp__memif_desc){flags, region, len, off, 0};
}

static uint64_t bad_descs_of(struct hp_link *l)
{
    struct hp_memif_stats ms;
    hp_link_memif_stats(l, &ms);
    return ms.bad_descs;
}

HP_TEST(memif_refuses_descriptors_outside_the_regions)
{
    for (int zc = 0; zc < 2; zc++) {
        char path[108];
        sock_path(path, sizeof path, zc ? "desc-zc" : "desc");
        hp_set_log_fn(capture, NULL);
        struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
        struct hp_link_config cc = {.ring_size = 64, .flags = zc ? HP_LINK_F_ZEROCOPY : 0};
        cc.memif.socket = path;
        cc.memif.reconnect_ms = 5;
        struct hp_link *c = open_cfg(&cc);
        HP_REQUIRE(s != NULL && c != NULL);
        HP_REQUIRE(wait_up(s, c));
        struct memif_link *mc = (struct memif_link *)c, *msv = (struct memif_link *)s;
        /* Client to server: past region 0's end, a region that does not
         * exist, a length that wraps, a chain whose second part is bad. */
        struct memif_queue *q = &mc->tx[0];
        uint32_t end = (uint32_t)mc->reg[0].size;
        put_desc(q, q->prod, 0, 0, 64, end - 10);
        put_desc(q, (uint16_t)(q->prod + 1), 0, 5, 64, 0);
        put_desc(q, (uint16_t)(q->prod + 2), 0, 0, 0xfffffff0u, 64);
        put_desc(q, (uint16_t)(q->prod + 3), HP__MEMIF_DESC_NEXT, 0, 64, 0);
        put_desc(q, (uint16_t)(q->prod + 4), 0, 9, 64, 0);
        q->prod = (uint16_t)(q->prod + 5);
        __atomic_store_n(&q->ring->head, q->prod, __ATOMIC_RELEASE);
        struct hp_buf *r[8];
        HP_CHECK_EQ(hp_link_rx_burst(s, r, 8), 0);
        HP_CHECK_EQ(bad_descs_of(s), 4);
        HP_CHECK(strstr(last_warn, "outside the shared memory") != NULL);
        struct hp_link_stats st;
        hp_link_stats(s, &st);
        HP_CHECK_EQ(st.rx_errors, 4);
        HP_CHECK(hp_link_up(s));
        HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 100), 100);
        /* Server to client: a filled descriptor that points elsewhere. */
        struct memif_queue *sq = &msv->tx[0];
        put_desc(sq, sq->prod, 0, 0, 64, (uint32_t)msv->reg[0].size);
        put_desc(sq, (uint16_t)(sq->prod + 1), 0, 3, 64, 0);
        sq->prod = (uint16_t)(sq->prod + 2);
        __atomic_store_n(&sq->ring->tail, sq->prod, __ATOMIC_RELEASE);
        HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 0);
        HP_CHECK_EQ(bad_descs_of(c), 2);
        HP_CHECK(hp_link_up(c));
        HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 100), 100);
        /* A buffer the client offers outside its memory: the server
         * refuses to write there and takes the link down. */
        struct memif_queue *cq = &mc->rx[0];
        put_desc(cq, cq->cons, 0, 0, 2048, end);
        struct hp_buf *b = frame(hp_link_pool(s), 64, 0);
        HP_REQUIRE(b != NULL);
        HP_CHECK_EQ(hp_link_tx_burst(s, &b, 1), 1);
        HP_CHECK_EQ(bad_descs_of(s), 5);
        HP_CHECK(!hp_link_up(s));
        HP_CHECK(strstr(last_warn, "offered buffer outside") != NULL);
        /* Both come back. */
        HP_REQUIRE(wait_up(s, c));
        HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 100), 100);
        HP_CHECK_EQ(hp_link_close(c), 0);
        HP_CHECK_EQ(hp_link_close(s), 0);
        hp_set_log_fn(NULL, NULL);
        HP_CHECK_EQ(hp_pools_in_use(), 0);
    }
}

static uint64_t ring_errors_of(struct hp_link *l)
{
    struct hp_memif_stats ms;
    hp_link_memif_stats(l, &ms);
    return ms.ring_errors;
}

HP_TEST(memif_refuses_ring_indices_that_jump)
{
    char path[108];
    sock_path(path, sizeof path, "jump");
    hp_set_log_fn(capture, NULL);
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    struct hp_link_config cc = {.ring_size = 64};
    cc.memif.socket = path;
    cc.memif.reconnect_ms = 5;
    struct hp_link *c = open_cfg(&cc);
    HP_REQUIRE(s != NULL && c != NULL);
    struct hp_buf *r[8];
    /* Four ways: the client's head (C2S producer) past the ring, the
     * server's tail (S2C producer) past what was offered, the server's
     * C2S tail backwards, the client's S2C head far ahead. */
    for (int way = 0; way < 4; way++) {
        HP_REQUIRE(wait_up(s, c));
        HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 20), 20);
        struct memif_link *mc = (struct memif_link *)c, *msv = (struct memif_link *)s;
        struct hp_link *victim;
        if (way == 0) {
            __atomic_store_n(&mc->tx[0].ring->head, (uint16_t)(mc->tx[0].prod + 1000),
                             __ATOMIC_RELEASE);
            victim = s;
            HP_CHECK_EQ(hp_link_rx_burst(s, r, 8), 0);
        } else if (way == 1) {
            __atomic_store_n(&msv->tx[0].ring->tail, (uint16_t)(msv->tx[0].prod + 65),
                             __ATOMIC_RELEASE);
            victim = c;
            HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 0);
        } else if (way == 2) {
            /* Behind what the client already saw come back. */
            __atomic_store_n(&msv->rx[0].ring->tail, (uint16_t)(mc->tx[0].reclaim - 3),
                             __ATOMIC_RELEASE);
            victim = c;
            struct hp_buf *b = frame(hp_link_pool(c), 64, 0);
            HP_CHECK_EQ(hp_link_tx_burst(c, &b, 1), 1); /* dropped: down */
        } else {
            __atomic_store_n(&mc->rx[0].ring->head, (uint16_t)(mc->rx[0].offered + 5000),
                             __ATOMIC_RELEASE);
            victim = s;
            struct hp_buf *b = frame(hp_link_pool(s), 64, 0);
            HP_CHECK_EQ(hp_link_tx_burst(s, &b, 1), 1);
        }
        if (ring_errors_of(victim) != 1)
            hp_test_fail(__FILE__, __LINE__, "way %d: no ring error counted", way);
        HP_CHECK(!hp_link_up(victim));
        HP_CHECK(strstr(last_warn, "jumped") != NULL);
        /* Back up, then the next way, with fresh counters. */
        HP_REQUIRE(wait_up(s, c));
        HP_CHECK_EQ(exchange(s, c, hp_link_pool(s), 20), 20);
        hp_link_close(c);
        hp_link_close(s);
        s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
        c = open_cfg(&cc);
        HP_REQUIRE(s != NULL && c != NULL);
    }
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    hp_set_log_fn(NULL, NULL);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(memif_interrupt_wakes_a_sleeper)
{
    char path[108];
    sock_path(path, sizeof path, "irq");
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    struct hp_link *c = open_memif(HP_MEMIF_CLIENT, path, 0, 0, 0);
    HP_REQUIRE(s != NULL && c != NULL);
    HP_REQUIRE(wait_up(s, c));
    for (int dir = 0; dir < 2; dir++) {
        struct hp_link *rx = dir ? s : c, *tx = dir ? c : s;
        struct pollfd p = {.fd = hp_link_fd(rx), .events = POLLIN};
        HP_REQUIRE(p.fd >= 0);
        struct hp_buf *r[8];
        /* Empty receive, arm, then sleep: the frame sent meanwhile wakes us. */
        for (int i = 0; i < 3; i++)
            HP_CHECK_EQ(hp_link_rx_burst(rx, r, 8), 0);
        HP_CHECK_EQ(hp_link_prepare_sleep(rx, NULL), 0);
        HP_CHECK_EQ(poll(&p, 1, 0), 0);
        struct hp_buf *b = frame(hp_link_pool(tx), 200, 9);
        HP_REQUIRE_EQ(hp_link_tx_burst(tx, &b, 1), 1);
        HP_CHECK_EQ(poll(&p, 1, 2000), 1);
        HP_CHECK_EQ(hp_link_rx_burst(rx, r, 8), 1);
        HP_CHECK(frame_is(r[0], 200, 9));
        hp_buf_free(r[0]);
        /* Arming again drains the eventfd: nothing left to wake on. */
        HP_CHECK_EQ(hp_link_rx_burst(rx, r, 8), 0);
        HP_CHECK_EQ(hp_link_prepare_sleep(rx, NULL), 0);
        HP_CHECK_EQ(poll(&p, 1, 0), 0);
        struct hp_memif_stats ms;
        hp_link_memif_stats(rx, &ms);
        HP_CHECK_GE(ms.irq_armed, 1);
        hp_link_memif_stats(tx, &ms);
        HP_CHECK_GE(ms.irq_sent, 1);
    }
    /* While frames flow, no interrupts are asked for. */
    struct hp_memif_stats before, after;
    hp_link_memif_stats(c, &before);
    HP_CHECK_EQ(exchange(c, s, hp_link_pool(c), 2000), 2000);
    hp_link_memif_stats(c, &after);
    HP_CHECK_LT(after.irq_sent - before.irq_sent, 1000);
    /* The peer going away wakes the sleeper too. */
    struct pollfd p = {.fd = hp_link_fd(c), .events = POLLIN};
    struct hp_buf *r[8];
    hp_link_rx_burst(c, r, 8);
    HP_CHECK_EQ(hp_link_prepare_sleep(c, NULL), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(poll(&p, 1, 2000), 1);
    hp_link_rx_burst(c, r, 8);
    HP_CHECK(!hp_link_up(c));
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(memif_bad_configuration)
{
    char path[108];
    sock_path(path, sizeof path, "cfg");
    struct hp_link_config c = {0};
    c.memif.socket = path;
    c.memif.role = 2;
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    c.memif.role = HP_MEMIF_CLIENT;
    c.memif.queues = 17;
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    c.memif.queues = 0;
    c.ring_size = 32768;
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    c.ring_size = 0;
    c.memif.secret = "twenty-five bytes of text";
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    HP_CHECK(strstr(hp_link_error(), "secret") != NULL);
    c.memif.secret = NULL;
    c.memif.buffer_size = 64;
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    c.memif.buffer_size = 0;
    c.flags = HP_LINK_F_XDP_SKB;
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    c.flags = HP_LINK_F_ZEROCOPY;
    c.memif.role = HP_MEMIF_SERVER;
    HP_CHECK(open_cfg(&c) == NULL && errno == EOPNOTSUPP);
    c.flags = 0;
    char longp[200];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    c.memif.socket = longp;
    HP_CHECK(open_cfg(&c) == NULL && errno == EINVAL);
    /* A live server owns its path; a stale socket file is replaced. */
    c.memif.socket = path;
    struct hp_link *s = open_cfg(&c);
    HP_REQUIRE(s != NULL);
    HP_CHECK(open_cfg(&c) == NULL && errno == EADDRINUSE);
    HP_CHECK_EQ(hp_link_close(s), 0);
    int stale = raw_listen(path);
    close(stale);
    HP_CHECK_EQ(access(path, F_OK), 0);
    s = open_cfg(&c);
    HP_CHECK(s != NULL);
    HP_CHECK_EQ(hp_link_close(s), 0);
    /* An abstract name. */
    char abs_name[108];
    snprintf(abs_name, sizeof abs_name, "@hpm-%d-abstract", (int)getpid());
    c.memif.socket = abs_name;
    s = open_cfg(&c);
    struct hp_link *cl = open_memif(HP_MEMIF_CLIENT, abs_name, 0, 0, 0);
    HP_REQUIRE(s != NULL && cl != NULL);
    HP_CHECK(wait_up(s, cl));
    HP_CHECK_EQ(hp_link_close(cl), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    /* Not a memif link. */
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_memif_stats ms;
    HP_CHECK_EQ(hp_link_memif_stats(e[0], &ms), -EINVAL);
    HP_CHECK(hp_link_up(e[0]));
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(memif_queues_and_completions)
{
    char path[108];
    sock_path(path, sizeof path, "queues");
    struct hp_link_config sc = {0};
    sc.memif.role = HP_MEMIF_SERVER;
    sc.memif.socket = path;
    sc.memif.queues = 4;
    struct hp_link *s = open_cfg(&sc);
    for (int zc = 0; zc < 2; zc++) {
        struct hp_link_config cc = {.flags =
                                        HP_LINK_F_TX_COMPLETIONS | (zc ? HP_LINK_F_ZEROCOPY : 0)};
        cc.memif.socket = path;
        cc.memif.queues = 2;
        struct hp_link *c = open_cfg(&cc);
        HP_REQUIRE(s != NULL && c != NULL);
        HP_REQUIRE(wait_up(s, c));
        struct hp_memif_stats ms;
        hp_link_memif_stats(s, &ms);
        HP_CHECK_EQ(ms.queues, 2); /* the client asked for 2 of the 4 allowed */
        /* Four flows spread over the rings; each flow keeps its order. */
        uint32_t next[4] = {0}, sent = 0, got = 0, done = 0;
        for (int spin = 0; spin < 50000 && got < 400; spin++) {
            if (sent < 400) {
                struct hp_buf *b = frame(hp_link_pool(c), 64 + sent % 4, sent / 4);
                b->hash = sent % 4;
                if (hp_link_tx_burst(c, &b, 1) == 1)
                    sent++;
                else
                    hp_buf_free(b);
            }
            struct hp_buf *r[16];
            int k = hp_link_rx_burst(s, r, 16);
            for (int i = 0; i < k; i++) {
                uint32_t flow = r[i]->pkt_len - 64;
                HP_CHECK(frame_is(r[i], 64 + flow, next[flow]));
                next[flow]++;
                got++;
            }
            if (k > 0)
                hp_buf_free_bulk(r, (unsigned)k);
            int d = hp_link_completions(c, r, 16);
            if (d > 0) {
                done += (unsigned)d;
                hp_buf_free_bulk(r, (unsigned)d);
            }
        }
        HP_CHECK_EQ(got, 400);
        struct memif_link *msv = (struct memif_link *)s;
        HP_CHECK(__atomic_load_n(&msv->rx[0].ring->head, __ATOMIC_RELAXED) > 0);
        HP_CHECK(__atomic_load_n(&msv->rx[1].ring->head, __ATOMIC_RELAXED) > 0);
        /* Every sent buffer comes back through the completions, at the
         * latest when the link closes (zero-copy keeps them until the
         * server is done). */
        struct hp_buf *r[16];
        for (int spin = 0; spin < 1000 && done < 400; spin++) {
            hp_link_tx_burst(c, r, 0);
            int d = hp_link_completions(c, r, 16);
            if (d > 0) {
                done += (unsigned)d;
                hp_buf_free_bulk(r, (unsigned)d);
            }
        }
        HP_CHECK_EQ(done, 400);
        HP_CHECK_EQ(hp_link_close(c), 0);
        HP_REQUIRE(wait_state(s, false));
    }
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(memif_under_a_decorator)
{
    char path[108], pcap[128];
    sock_path(path, sizeof path, "deco");
    snprintf(pcap, sizeof pcap, "/tmp/hpm-%d-deco.pcap", (int)getpid());
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    struct hp_link *inner = open_memif(HP_MEMIF_CLIENT, path, 0, 0, 0);
    HP_REQUIRE(s != NULL && inner != NULL);
    struct hp_link *c = hp_link_pcap(inner, pcap);
    HP_REQUIRE(c != NULL);
    HP_CHECK(!hp_link_up(c));
    HP_REQUIRE(wait_up(s, c));
    HP_CHECK(hp_link_up(c)); /* the inner link's state */
    struct hp_memif_stats ms;
    HP_CHECK_EQ(hp_link_memif_stats(c, &ms), 0);
    HP_CHECK(ms.up);
    /* Arming the decorator arms the memif link under it. */
    struct pollfd p = {.fd = hp_link_fd(c), .events = POLLIN};
    struct hp_buf *r[8];
    HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 0);
    HP_CHECK_EQ(hp_link_prepare_sleep(c, NULL), 0);
    struct hp_buf *b = frame(hp_link_pool(s), 100, 3);
    HP_REQUIRE_EQ(hp_link_tx_burst(s, &b, 1), 1);
    HP_CHECK_EQ(poll(&p, 1, 2000), 1);
    HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 1);
    HP_CHECK(frame_is(r[0], 100, 3));
    hp_buf_free(r[0]);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    unlink(pcap);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The event loop's way (hp_link_prepare_sleep() on the branch that has
 * it): arm right before sleeping, every time; no hp_link_fd() heuristics. */
HP_TEST(memif_prepare_sleep_contract)
{
    char path[108];
    sock_path(path, sizeof path, "sleep");
    struct hp_link *s = open_memif(HP_MEMIF_SERVER, path, 0, 0, 0);
    struct hp_link *c = open_memif(HP_MEMIF_CLIENT, path, 0, 0, 0);
    HP_REQUIRE(s != NULL && c != NULL);
    HP_REQUIRE(wait_up(s, c));
    struct memif_link *mc = (struct memif_link *)c;
    struct pollfd p = {.fd = mc->l.fd, .events = POLLIN};
    struct hp_buf *r[8];
    HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 0);
    HP_CHECK_EQ(hp__memif_prepare_sleep(c, NULL), 0);
    HP_CHECK_EQ(poll(&p, 1, 0), 0);
    /* A frame sent to a sleeper wakes it. */
    struct hp_buf *b = frame(hp_link_pool(s), 80, 1);
    HP_REQUIRE_EQ(hp_link_tx_burst(s, &b, 1), 1);
    HP_CHECK_EQ(poll(&p, 1, 2000), 1);
    HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 1);
    HP_CHECK(frame_is(r[0], 80, 1));
    hp_buf_free(r[0]);
    /* Arming drains the wake-up: no stale signal keeps the sleeper up. */
    HP_CHECK_EQ(hp__memif_prepare_sleep(c, NULL), 0);
    HP_CHECK_EQ(poll(&p, 1, 0), 0);
    /* A frame that came before the arming is reported, not slept on. */
    b = frame(hp_link_pool(s), 90, 2);
    HP_REQUIRE_EQ(hp_link_tx_burst(s, &b, 1), 1);
    HP_CHECK_GT(hp__memif_prepare_sleep(c, NULL), 0);
    HP_CHECK_EQ(hp_link_rx_burst(c, r, 8), 1);
    hp_buf_free(r[0]);
    /* The peer going away wakes it too. */
    HP_CHECK_EQ(hp__memif_prepare_sleep(c, NULL), 0);
    HP_CHECK_EQ(hp_link_close(s), 0);
    HP_CHECK_EQ(poll(&p, 1, 2000), 1);
    hp_link_rx_burst(c, r, 8);
    HP_CHECK(!hp_link_up(c));
    HP_CHECK_EQ(hp_link_close(c), 0);
    /* A link that never asks the peer to signal cannot wake a sleeper. */
    struct hp_link_config pc = {0};
    pc.memif.socket = path;
    pc.memif.rx_mode = HP_MEMIF_RX_POLL;
    c = open_cfg(&pc);
    HP_REQUIRE(c != NULL);
    HP_CHECK_EQ(hp__memif_prepare_sleep(c, NULL), -EOPNOTSUPP);
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
