/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP between two hotpath stacks over a mem link pair on a shared virtual clock: transfers verified byte for byte, with and without faults, many connections, zero copy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/wire.h>

#include "hp_test.h"
#include "net/internal.h"
#include "sock/tcp_internal.h"

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};
static const uint8_t IP6[2][16] = {{0x20, 0x01, 0, 2, [15] = 1}, {0x20, 0x01, 0, 2, [15] = 2}};

struct net {
    struct hp_pool *pool;
    struct hp_link *e[2];  /* what the stacks use (fault decorators or the mem ends) */
    struct hp_stack *s[2]; /* s[0] the client, s[1] the server */
    uint64_t now;          /* the shared virtual clock, ns */
};

static uint64_t net_clock(void *arg)
{
    return ((const struct net *)arg)->now;
}

static int net_up(struct net *n, const struct hp_fault_config *fault,
                  const struct hp_tcp_config *tc)
{
    memset(n, 0, sizeof *n);
    struct hp_pool_config pc = {.name = "e2e", .n_bufs = 16384};
    n->pool = hp_pool_create(&pc);
    if (!n->pool)
        return -1;
    struct hp_link_config lc = {.ring_size = 4096, .pool = n->pool};
    if (hp_link_mem_pair(&lc, n->e) != 0)
        return -1;
    n->now = 5000000000000ull;
    for (int i = 0; i < 2; i++) {
        if (fault) {
            struct hp_fault_config f = *fault;
            f.seed = fault->seed * 2 + (uint64_t)i + 1;
            struct hp_link *w = hp_link_fault(n->e[i], &f);
            if (!w)
                return -1;
            n->e[i] = w;
        }
        struct hp_stack_config sc = {.name = i ? "server" : "client", .flags = HP_STACK_F_NO_DAD};
        n->s[i] = hp_stack_create(&sc);
        if (!n->s[i])
            return -1;
        hp__stack_set_clock(n->s[i], net_clock, n);
        int ifx = hp_stack_add_iface(n->s[i], n->e[i]);
        if (ifx < 0 || hp_stack_add_addr(n->s[i], ifx, 4, IP4[i], 24) != 0 ||
            hp_stack_add_addr(n->s[i], ifx, 6, IP6[i], 64) != 0)
            return -1;
        if (tc && hp_tcp_configure(n->s[i], tc) != 0)
            return -1;
    }
    /* Resolve the neighbours both ways first (ARP and NDP queues are
     * small; what they drop is not TCP's business). */
    for (int i = 0; i < 2; i++) {
        if (hp_stack_ping(n->s[i], 4, IP4[!i], 1, 1, 8) != 0 ||
            hp_stack_ping(n->s[i], 6, IP6[!i], 1, 1, 8) != 0)
            return -1;
    }
    for (int k = 0; k < 100; k++)
        hp_stack_poll(n->s[0]), hp_stack_poll(n->s[1]);
    return 0;
}

static void net_down(struct net *n)
{
    for (int i = 0; i < 2; i++)
        hp_stack_destroy(n->s[i]);
    for (int i = 0; i < 2; i++)
        hp_link_close(n->e[i]);
    HP_CHECK_EQ(hp_pool_in_use(n->pool), 0);
    HP_CHECK_EQ(hp_pool_destroy(n->pool), 0);
}

/* One round on both stacks; when neither has work, the clock jumps to the
 * next timer (or by 1 ms). Busy rounds take 20 us, the link's latency. */
static int net_step(struct net *n)
{
    int w = hp_stack_poll(n->s[0]) + hp_stack_poll(n->s[1]);
    if (w > 0) {
        n->now += 20000;
        return w;
    }
    int64_t a = hp_stack_next_timer_ns(n->s[0]), b = hp_stack_next_timer_ns(n->s[1]);
    int64_t d = a < 0 ? b : (b < 0 || a < b ? a : b);
    n->now += d > 0 ? (uint64_t)d : 1000000u;
    return 0;
}

/* Run until nothing is left to do within max_ms of virtual time (timers
 * due later, like TIME_WAIT or neighbour expiry, are not waited for). */
static void net_settle(struct net *n, uint64_t max_ms)
{
    uint64_t deadline = n->now + max_ms * 1000000u;
    for (int i = 0; i < 1000000; i++) {
        int w = hp_stack_poll(n->s[0]) + hp_stack_poll(n->s[1]);
        if (w > 0) {
            n->now += 20000;
            continue;
        }
        int64_t a = hp_stack_next_timer_ns(n->s[0]), b = hp_stack_next_timer_ns(n->s[1]);
        int64_t d = a < 0 ? b : (b < 0 || a < b ? a : b);
        if (d < 0 || n->now + (uint64_t)d > deadline)
            return;
        n->now += (uint64_t)d;
    }
}

static struct hp_sockaddr addr_of(int family, int side, uint16_t port)
{
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = (uint8_t)family;
    a.port = port;
    if (side >= 0)
        memcpy(a.addr, family == 4 ? IP4[side] : IP6[side], family == 4 ? 4 : 16);
    return a;
}

static uint8_t pat(uint32_t seed, uint64_t off)
{
    uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    return (uint8_t)(x >> 29 ^ x >> 47);
}

/* One direction of a transfer: what was sent and received, checked. */
struct flow {
    struct hp_tcp_sock *tx, *rx;
    uint32_t seed;
    uint64_t len, sent, got;
    bool tx_shut, eof, bad;
    uint8_t chunk[16384]; /* the stream from chunk_off on */
    uint64_t chunk_off;
    uint32_t chunk_len;
};

static void flow_pump(struct flow *f, bool shut_when_done)
{
    static uint8_t buf[65536];
    while (f->sent < f->len) {
        if (f->sent >= f->chunk_off + f->chunk_len) {
            f->chunk_off = f->sent;
            uint64_t n = f->len - f->sent < sizeof f->chunk ? f->len - f->sent : sizeof f->chunk;
            for (uint64_t i = 0; i < n; i++)
                f->chunk[i] = pat(f->seed, f->sent + i);
            f->chunk_len = (uint32_t)n;
        }
        uint64_t at = f->sent - f->chunk_off;
        long r = hp_tcp_send(f->tx, f->chunk + at, f->chunk_len - at);
        if (r <= 0)
            break;
        f->sent += (uint64_t)r;
    }
    if (f->sent == f->len && shut_when_done && !f->tx_shut) {
        HP_CHECK_EQ(hp_tcp_shutdown(f->tx, HP_TCP_SHUT_WR), 0);
        f->tx_shut = true;
    }
    for (;;) {
        long r = hp_tcp_recv(f->rx, buf, sizeof buf);
        if (r == 0) {
            f->eof = true;
            break;
        }
        if (r < 0)
            break;
        for (long i = 0; i < r && !f->bad; i++) {
            if (buf[i] != pat(f->seed, f->got + (uint64_t)i)) {
                hp_test_fail(__FILE__, __LINE__, "byte %llu of a %llu-byte flow differs",
                             (unsigned long long)(f->got + (uint64_t)i),
                             (unsigned long long)f->len);
                f->bad = true;
            }
        }
        f->got += (uint64_t)r;
    }
}

/* Client and server connected over family; the server's accepted socket. */
static bool connect_pair(struct net *n, int family, uint16_t port, struct hp_tcp_sock **c,
                         struct hp_tcp_sock **srv, struct hp_tcp_sock **l)
{
    *l = hp_tcp_open(n->s[1], family, NULL);
    struct hp_sockaddr any = addr_of(family, -1, port), to = addr_of(family, 1, port);
    if (!*l || hp_tcp_bind(*l, &any) != 0 || hp_tcp_listen(*l, 16) != 0)
        return false;
    *c = hp_tcp_open(n->s[0], family, NULL);
    if (!*c || hp_tcp_connect(*c, &to) != -EINPROGRESS)
        return false;
    *srv = NULL;
    for (int i = 0; i < 200000 && !*srv; i++) {
        net_step(n);
        *srv = hp_tcp_accept(*l, NULL, NULL);
    }
    for (int i = 0; i < 200000 && hp_tcp_state(*c) != HP_TCP_ESTABLISHED; i++)
        net_step(n);
    return *srv && hp_tcp_state(*c) == HP_TCP_ESTABLISHED;
}

/* N clients connected to a listener on port 7 of the server, c[i] and the
 * accepted s[i] ESTABLISHED; the listener, or NULL (nothing closed) when
 * that failed. */
static struct hp_tcp_sock *connect_many(struct net *n, int family, int N, struct hp_tcp_sock **c,
                                        struct hp_tcp_sock **s)
{
    struct hp_tcp_sock *l = hp_tcp_open(n->s[1], family, NULL);
    struct hp_sockaddr any = addr_of(family, -1, 7), to = addr_of(family, 1, 7);
    if (!l || hp_tcp_bind(l, &any) != 0 || hp_tcp_listen(l, N) != 0)
        return NULL;
    for (int i = 0; i < N; i++) {
        c[i] = hp_tcp_open(n->s[0], family, NULL);
        if (!c[i] || hp_tcp_connect(c[i], &to) != -EINPROGRESS)
            return NULL;
    }
    int accepted = 0;
    for (int round = 0; round < 100000 && accepted < N; round++) {
        net_settle(n, 1);
        struct hp_tcp_sock *a;
        while (accepted < N && (a = hp_tcp_accept(l, NULL, NULL)) != NULL)
            s[accepted++] = a;
    }
    for (int i = 0; i < N; i++)
        if (i >= accepted || hp_tcp_state(c[i]) != HP_TCP_ESTABLISHED)
            return NULL;
    return l;
}

/* Counters that are zero on a clean link. */
static void check_clean(struct net *n)
{
    static const enum hp_stack_ctr zero[] = {
        HP_CTR_TCP_ATTEMPT_FAILS,    HP_CTR_TCP_ESTAB_RESETS,     HP_CTR_TCP_RETRANS_SEGS,
        HP_CTR_TCP_IN_ERRS,          HP_CTR_TCP_IN_CSUM_ERRORS,   HP_CTR_TCP_IN_BAD_FLAGS,
        HP_CTR_TCP_IN_BAD_OPTIONS,   HP_CTR_TCP_OUT_RSTS,         HP_CTR_TCP_NO_PORT,
        HP_CTR_TCP_PAWS_DROPS,       HP_CTR_TCP_CHALLENGE_ACKS,   HP_CTR_TCP_SYN_QUEUE_DROPS,
        HP_CTR_TCP_LISTEN_OVERFLOWS, HP_CTR_TCP_SYNCOOKIES_SENT,  HP_CTR_TCP_OFO_DROPS,
        HP_CTR_TCP_RCVQ_DROPS,       HP_CTR_TCP_FAST_RETRANS,     HP_CTR_TCP_TIMEOUTS,
        HP_CTR_TCP_SYN_RETRANS,      HP_CTR_TCP_CONN_LIMIT_DROPS, HP_CTR_TCP_NO_BUFFERS,
        HP_CTR_TCP_ABORT_ON_CLOSE,   HP_CTR_TCP_ABORT_ON_TIMEOUT, HP_CTR_ETH_OUT_DROPS,
        HP_CTR_NO_BUFFERS,           HP_CTR_NEIGH_QUEUE_DROPS,    HP_CTR_NEIGH_UNRESOLVED_DROPS,
        HP_CTR_IP_OUT_DISCARDS,      HP_CTR_IP_IN_HDR_ERRORS,     HP_CTR_IP6_IN_HDR_ERRORS,
        HP_CTR_TCP_OFO_QUEUED,
    };
    for (int s = 0; s < 2; s++)
        for (size_t k = 0; k < sizeof zero / sizeof zero[0]; k++)
            if (hp_stack_counter(n->s[s], zero[k]) != 0)
                hp_test_fail(__FILE__, __LINE__, "%s: %s = %llu on a clean link",
                             s ? "server" : "client", hp_stack_counter_name(zero[k]),
                             (unsigned long long)hp_stack_counter(n->s[s], zero[k]));
}

/*
 * Transfer len bytes each way over one connection and close: the client
 * first (client_first) or the server first, each side's FIN after its
 * data. Ends with both sides CLOSED after TIME_WAIT.
 */
static void transfer(struct net *n, int family, uint64_t len, bool client_first, uint16_t port)
{
    struct hp_tcp_sock *c, *srv, *l;
    if (!connect_pair(n, family, port, &c, &srv, &l)) {
        hp_test_fail(__FILE__, __LINE__, "IPv%d: no connection", family);
        return;
    }
    static struct flow up, down;
    memset(&up, 0, sizeof up);
    memset(&down, 0, sizeof down);
    up.tx = c, up.rx = srv, up.seed = (uint32_t)len * 7 + 1, up.len = len;
    down.tx = srv, down.rx = c, down.seed = (uint32_t)len * 13 + 5, down.len = len;
    uint64_t t0 = n->now;
    for (long i = 0; i < 20000000; i++) {
        flow_pump(&up, client_first || down.eof);
        flow_pump(&down, !client_first || up.eof);
        if (up.eof && down.eof)
            break;
        if (n->now - t0 > 3600ull * 1000000000u)
            break;
        net_step(n);
    }
    if (up.got != len || down.got != len || !up.eof || !down.eof) {
        hp_test_fail(__FILE__, __LINE__,
                     "IPv%d %llu bytes, %s closes first: up %llu/%llu%s, down %llu/%llu%s; "
                     "client %s error %d, server %s error %d, after %llu ms",
                     family, (unsigned long long)len, client_first ? "client" : "server",
                     (unsigned long long)up.got, (unsigned long long)up.sent, up.eof ? " eof" : "",
                     (unsigned long long)down.got, (unsigned long long)down.sent,
                     down.eof ? " eof" : "", hp_tcp_state_name(hp_tcp_state(c)), hp_tcp_error(c),
                     hp_tcp_state_name(hp_tcp_state(srv)), hp_tcp_error(srv),
                     (unsigned long long)((n->now - t0) / 1000000u));
        for (int k = 0; k < 2; k++) {
            fprintf(stderr, "    %s counters:\n", k ? "server" : "client");
            hp_stack_counters_print(n->s[k], stderr, true);
        }
    }
    /* Let the last ACKs and TIME_WAIT (60 s) run out. */
    for (int i = 0;
         i < 100000 && (hp_tcp_state(c) != HP_TCP_CLOSED || hp_tcp_state(srv) != HP_TCP_CLOSED);
         i++)
        net_step(n);
    HP_CHECK_EQ(hp_tcp_state(c), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_state(srv), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_error(c), 0);
    HP_CHECK_EQ(hp_tcp_error(srv), 0);
    hp_tcp_close(c);
    hp_tcp_close(srv);
    hp_tcp_close(l);
}

HP_TEST(tcp_e2e_transfers_clean)
{
    static const uint64_t sizes[] = {1,     100,   1447,   1448,     1449,
                                     65535, 65536, 262145, 1u << 20, 4u << 20};
    for (int family = 4; family <= 6; family += 2) {
        for (int order = 0; order < 2; order++) {
            struct net n;
            HP_REQUIRE_EQ(net_up(&n, NULL, NULL), 0);
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                transfer(&n, family, sizes[k], order == 0, (uint16_t)(5000 + k));
                HP_STOP_IF_FAILED();
            }
            check_clean(&n);
            net_down(&n);
        }
    }
}

static void faulty(double drop, uint64_t seed, uint64_t big)
{
    struct hp_fault_config fc = {.seed = seed, .drop = drop, .reorder = 0.02, .duplicate = 0.02};
    for (int family = 4; family <= 6; family += 2) {
        for (int order = 0; order < 2; order++) {
            struct net n;
            HP_REQUIRE_EQ(net_up(&n, &fc, NULL), 0);
            const uint64_t sizes[] = {1, 3000, 100000, big};
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                transfer(&n, family, sizes[k], order == 0, (uint16_t)(6000 + k));
                HP_STOP_IF_FAILED();
            }
            struct hp_fault_stats st;
            HP_CHECK_EQ(hp_link_fault_stats(n.e[0], &st), 0);
            HP_CHECK_GT(st.dropped, 0);
            HP_CHECK_GT(st.reordered + st.duplicated, 0);
            HP_CHECK_GT(hp_stack_counter(n.s[0], HP_CTR_TCP_RETRANS_SEGS) +
                            hp_stack_counter(n.s[1], HP_CTR_TCP_RETRANS_SEGS),
                        0);
            for (int s = 0; s < 2; s++) {
                HP_CHECK_EQ(hp_stack_counter(n.s[s], HP_CTR_TCP_IN_CSUM_ERRORS), 0);
                HP_CHECK_EQ(hp_stack_counter(n.s[s], HP_CTR_TCP_ESTAB_RESETS), 0);
                HP_CHECK_EQ(hp_stack_counter(n.s[s], HP_CTR_NO_BUFFERS), 0);
            }
            net_down(&n);
        }
    }
}

HP_TEST(tcp_e2e_transfers_1pct_loss_reorder_dup)
{
    faulty(0.01, hp_test_seed(), 4u << 20);
}

HP_TEST(tcp_e2e_transfers_5pct_loss_reorder_dup)
{
    faulty(0.05, hp_test_seed() + 1, 1u << 20);
}

/* 1,000 connections at once: each sends its own message, the server
 * echoes it on the same connection; all close cleanly. */
HP_TEST(tcp_e2e_thousand_connections)
{
    enum { N = 1000 };
    for (int family = 4; family <= 6; family += 2) {
        struct net n;
        HP_REQUIRE_EQ(net_up(&n, NULL, NULL), 0);
        static struct hp_tcp_sock *c[N], *s[N];
        struct hp_tcp_sock *l = connect_many(&n, family, N, c, s);
        HP_REQUIRE(l != NULL);
        for (int i = 0; i < N; i++) {
            char msg[32];
            int len = snprintf(msg, sizeof msg, "connection %d", i);
            HP_REQUIRE_EQ(hp_tcp_state(c[i]), HP_TCP_ESTABLISHED);
            HP_CHECK_EQ(hp_tcp_send(c[i], msg, (size_t)len), len);
        }
        net_settle(&n, 200);
        int echoed = 0;
        for (int i = 0; i < N; i++) {
            char buf[64];
            long r = hp_tcp_recv(s[i], buf, sizeof buf);
            if (r > 0 && hp_tcp_send(s[i], buf, (size_t)r) == r)
                echoed++;
        }
        HP_CHECK_EQ(echoed, N);
        net_settle(&n, 200);
        int ok = 0;
        for (int i = 0; i < N; i++) {
            char buf[64], msg[32];
            int len = snprintf(msg, sizeof msg, "connection %d", i);
            long r = hp_tcp_recv(c[i], buf, sizeof buf);
            if (r == len && memcmp(buf, msg, (size_t)len) == 0)
                ok++;
            hp_tcp_close(c[i]);
        }
        HP_CHECK_EQ(ok, N);
        net_settle(&n, 200);
        int eof = 0;
        for (int i = 0; i < N; i++) {
            char buf[8];
            if (hp_tcp_recv(s[i], buf, sizeof buf) == 0)
                eof++;
            hp_tcp_close(s[i]);
        }
        HP_CHECK_EQ(eof, N);
        hp_tcp_close(l);
        for (int round = 0; round < 100000 && hp_stack_next_timer_ns(n.s[0]) >= 0; round++)
            net_step(&n);
        HP_CHECK_EQ(hp_stack_counter(n.s[1], HP_CTR_TCP_PASSIVE_OPENS), N);
        HP_CHECK_EQ(hp_stack_counter(n.s[0], HP_CTR_TCP_ACTIVE_OPENS), N);
        check_clean(&n);
        net_down(&n);
        HP_STOP_IF_FAILED();
    }
}

/* send_buf of chains and recv_buf: the bytes arrive in order, intact. */
HP_TEST(tcp_e2e_zero_copy)
{
    for (int family = 4; family <= 6; family += 2) {
        struct net n;
        HP_REQUIRE_EQ(net_up(&n, NULL, NULL), 0);
        struct hp_tcp_sock *c, *srv, *l;
        HP_REQUIRE(connect_pair(&n, family, 9000, &c, &srv, &l));
        const uint64_t total = 300000;
        uint64_t sent = 0, got = 0;
        struct hp_pool *pool = hp_link_pool(n.e[0]);
        for (int round = 0; round < 1000000 && got < total; round++) {
            while (sent < total) {
                /* A chain of three buffers of odd sizes. */
                struct hp_buf *head = NULL;
                uint32_t lens[3] = {700, 1, 1333};
                for (int k = 0; k < 3; k++) {
                    struct hp_buf *b = hp_buf_alloc(pool);
                    HP_REQUIRE(b != NULL);
                    uint8_t *p = hp_buf_append(b, lens[k]);
                    HP_REQUIRE(p != NULL);
                    uint64_t base = sent + (k > 0 ? lens[0] : 0) + (k > 1 ? lens[1] : 0);
                    for (uint32_t i = 0; i < lens[k]; i++)
                        p[i] = pat(77, base + i);
                    if (!head)
                        head = b;
                    else
                        HP_REQUIRE_EQ(hp_buf_chain(head, b), 0);
                }
                long r = hp_tcp_send_buf(c, head);
                if (r == -EAGAIN) {
                    hp_buf_free(head);
                    break;
                }
                HP_REQUIRE_EQ(r, 2034);
                sent += 2034;
            }
            struct hp_buf *b;
            long r;
            while ((r = hp_tcp_recv_buf(srv, &b)) > 0) {
                uint8_t tmp[65536];
                HP_REQUIRE(r <= (long)sizeof tmp);
                HP_REQUIRE_EQ(hp_buf_copy_out(b, 0, (uint32_t)r, tmp), 0);
                for (long i = 0; i < r; i++)
                    if (tmp[i] != pat(77, got + (uint64_t)i))
                        HP_REQUIRE(!"recv_buf: a byte differs");
                got += (uint64_t)r;
                hp_buf_free(b);
            }
            net_step(&n);
        }
        HP_CHECK_GE(got, total);
        HP_CHECK_EQ(got, sent);
        hp_tcp_close(c);
        hp_tcp_close(srv);
        hp_tcp_close(l);
        for (int round = 0; round < 100000 && hp_stack_next_timer_ns(n.s[0]) >= 0; round++)
            net_step(&n);
        check_clean(&n);
        net_down(&n);
    }
}

/* A slow reader behind a small receive buffer: the window closes and
 * reopens again and again (persist probes, window updates), with and
 * without faults (corruption included: caught by the checksums). */
static void slow_reader(const struct hp_fault_config *fc, int family)
{
    struct hp_tcp_config tc = {.rcvbuf = 16384, .sndbuf = 65536};
    struct net n;
    HP_REQUIRE_EQ(net_up(&n, fc, &tc), 0);
    struct hp_tcp_sock *c, *srv, *l;
    HP_REQUIRE(connect_pair(&n, family, 7000, &c, &srv, &l));
    static struct flow f;
    memset(&f, 0, sizeof f);
    f.tx = c, f.rx = srv, f.seed = 99, f.len = 1u << 20;
    uint64_t next_read = n.now;
    uint8_t buf[1000];
    long zero_seen = 0;
    for (long i = 0; i < 20000000 && !f.eof; i++) {
        /* send side */
        while (f.sent < f.len) {
            if (f.sent >= f.chunk_off + f.chunk_len) {
                f.chunk_off = f.sent;
                uint64_t k = f.len - f.sent < sizeof f.chunk ? f.len - f.sent : sizeof f.chunk;
                for (uint64_t j = 0; j < k; j++)
                    f.chunk[j] = pat(f.seed, f.sent + j);
                f.chunk_len = (uint32_t)k;
            }
            uint64_t at = f.sent - f.chunk_off;
            long r = hp_tcp_send(c, f.chunk + at, f.chunk_len - at);
            if (r <= 0)
                break;
            f.sent += (uint64_t)r;
        }
        if (f.sent == f.len && !f.tx_shut) {
            HP_CHECK_EQ(hp_tcp_shutdown(c, HP_TCP_SHUT_WR), 0);
            f.tx_shut = true;
        }
        /* a slow reader: 1000 bytes every 5 ms */
        if (n.now >= next_read) {
            long r = hp_tcp_recv(srv, buf, sizeof buf);
            if (r == 0)
                f.eof = true;
            for (long j = 0; j < r; j++)
                if (buf[j] != pat(f.seed, f.got + (uint64_t)j) && !f.bad) {
                    hp_test_fail(__FILE__, __LINE__, "IPv%d: byte %llu differs", family,
                                 (unsigned long long)(f.got + (uint64_t)j));
                    f.bad = true;
                }
            if (r > 0)
                f.got += (uint64_t)r;
            next_read = n.now + 5000000u;
        }
        struct hp_tcp_info ci;
        if (hp_tcp_get_info(c, &ci) == 0 && ci.snd_wnd < 1460)
            zero_seen++;
        /* Never jump past the reader's next turn. */
        int w = hp_stack_poll(n.s[0]) + hp_stack_poll(n.s[1]);
        if (w > 0) {
            n.now += 20000;
        } else {
            int64_t a = hp_stack_next_timer_ns(n.s[0]), b = hp_stack_next_timer_ns(n.s[1]);
            int64_t d = a < 0 ? b : (b < 0 || a < b ? a : b);
            uint64_t until = next_read > n.now ? next_read - n.now : 0;
            n.now += d >= 0 && (uint64_t)d < until ? (uint64_t)d : (until ? until : 1000);
        }
    }
    HP_CHECK_EQ(f.got, f.len);
    HP_CHECK(f.eof);
    HP_CHECK_GT(zero_seen, 0); /* the window did close (below one segment) */
    HP_CHECK_EQ(hp_tcp_state(srv), HP_TCP_CLOSE_WAIT);
    HP_CHECK_EQ(hp_tcp_error(c), 0);
    HP_CHECK_EQ(hp_tcp_error(srv), 0);
    if (fc && fc->corrupt > 0)
        HP_CHECK_GT(hp_stack_counter(n.s[0], HP_CTR_TCP_IN_CSUM_ERRORS) +
                        hp_stack_counter(n.s[1], HP_CTR_TCP_IN_CSUM_ERRORS) +
                        hp_stack_counter(n.s[0], HP_CTR_IP_IN_HDR_ERRORS) +
                        hp_stack_counter(n.s[1], HP_CTR_IP_IN_HDR_ERRORS),
                    0);
    hp_tcp_close(c);
    hp_tcp_close(srv);
    hp_tcp_close(l);
    net_down(&n);
}

HP_TEST(tcp_e2e_slow_reader_small_window)
{
    slow_reader(NULL, 4);
    HP_STOP_IF_FAILED();
    slow_reader(NULL, 6);
    HP_STOP_IF_FAILED();
    struct hp_fault_config fc = {.seed = hp_test_seed(),
                                 .drop = 0.02,
                                 .reorder = 0.02,
                                 .duplicate = 0.02,
                                 .corrupt = 0.01};
    slow_reader(&fc, 4);
    HP_STOP_IF_FAILED();
    fc.seed++;
    slow_reader(&fc, 6);
}

/*
 * Request/response: the reply, sent before the next poll, carries the ACK
 * the request was owed, and the delayed ACK never reaches the timer heap
 * (tcp_timer.c arms it at the next poll only if still owed). An ACK still
 * owed then goes after delack_ms; a connection freed while its ACK waits
 * for the next poll is forgotten by it.
 */
HP_TEST(tcp_e2e_reply_before_next_poll_arms_no_delayed_ack)
{
    for (int family = 4; family <= 6; family += 2) {
        struct net n;
        HP_REQUIRE_EQ(net_up(&n, NULL, NULL), 0);
        struct hp_tcp_sock *c, *srv, *l;
        HP_REQUIRE(connect_pair(&n, family, 9, &c, &srv, &l));
        /* A few exchanges first: the ACKs of the handshake and of the first
         * data (which announces the scaled window at once) are not this
         * test's business. */
        char b[4];
        for (int r = 0; r < 3; r++) {
            HP_REQUIRE_EQ(hp_tcp_send(c, "q", 1), 1);
            net_settle(&n, 1);
            HP_REQUIRE_EQ(hp_tcp_recv(srv, b, sizeof b), 1);
            HP_REQUIRE_EQ(hp_tcp_send(srv, "r", 1), 1);
            hp_stack_poll(n.s[1]); /* sends what the call queued */
            net_settle(&n, 1);
            HP_REQUIRE_EQ(hp_tcp_recv(c, b, sizeof b), 1);
        }
        net_settle(&n, 100);
        uint64_t out0[2], dack0[2];
        for (int i = 0; i < 2; i++) {
            out0[i] = hp_stack_counter(n.s[i], HP_CTR_TCP_OUT_SEGS);
            dack0[i] = hp_stack_counter(n.s[i], HP_CTR_TCP_DELAYED_ACKS);
        }
        enum { ROUNDS = 200 };
        int done = 0;
        for (int r = 0; r < ROUNDS; r++) {
            HP_REQUIRE_EQ(hp_tcp_send(c, "q", 1), 1);
            hp_stack_poll(n.s[0]);
            n.now += 20000;
            hp_stack_poll(n.s[1]); /* the request: an ACK owed */
            HP_CHECK(srv->flags & HP__TCPF_DACK);
            HP_CHECK_GT(hp_stack_next_timer_ns(n.s[1]), 0); /* ... counted in the next deadline */
            HP_CHECK_EQ(hp_tcp_recv(srv, b, sizeof b), 1);
            HP_CHECK_EQ(hp_tcp_send(srv, "r", 1), 1); /* carries it */
            hp_stack_poll(n.s[1]);
            n.now += 20000;
            hp_stack_poll(n.s[0]);
            HP_CHECK_EQ(hp_tcp_recv(c, b, sizeof b), 1);
            /* The next request, before the next poll, carries this ACK. */
            HP_CHECK_EQ(srv->dack_tdue, 0u);
            HP_CHECK_EQ(c->dack_tdue, 0u);
            HP_STOP_IF_FAILED();
            done++;
            n.now += 1000000;
        }
        HP_CHECK_EQ(done, ROUNDS);
        for (int i = 0; i < 2; i++) {
            /* One segment per message, no ACK of its own, none delayed. */
            HP_CHECK_EQ(hp_stack_counter(n.s[i], HP_CTR_TCP_OUT_SEGS) - out0[i], (uint64_t)ROUNDS);
            HP_CHECK_EQ(hp_stack_counter(n.s[i], HP_CTR_TCP_DELAYED_ACKS), dack0[i]);
        }

        /* No reply: the next poll arms the entry, delack_ms (40) after the request. */
        uint64_t t_req = n.now;
        HP_REQUIRE_EQ(hp_tcp_send(c, "q", 1), 1);
        hp_stack_poll(n.s[0]);
        hp_stack_poll(n.s[1]);
        HP_CHECK_EQ(srv->dack_tdue, 0u);
        hp_stack_poll(n.s[1]);
        HP_CHECK_EQ(srv->dack_tdue, t_req + 40000000u);
        HP_CHECK_EQ(hp_stack_next_timer_ns(n.s[1]), 40000000);
        n.now = t_req + 39999999u;
        hp_stack_poll(n.s[1]);
        HP_CHECK_EQ(hp_stack_counter(n.s[1], HP_CTR_TCP_DELAYED_ACKS), dack0[1]);
        n.now++;
        hp_stack_poll(n.s[1]);
        HP_CHECK_EQ(hp_stack_counter(n.s[1], HP_CTR_TCP_DELAYED_ACKS), dack0[1] + 1);
        HP_CHECK(!(srv->flags & HP__TCPF_DACK));
        net_settle(&n, 10);
        HP_CHECK_EQ(hp_tcp_recv(srv, b, sizeof b), 1);

        /* Freed while its ACK waits for the next poll. */
        HP_REQUIRE_EQ(hp_tcp_send(c, "q", 1), 1);
        hp_stack_poll(n.s[0]);
        hp_stack_poll(n.s[1]);
        HP_CHECK(srv->flags & HP__TCPF_DACK_PEND);
        HP_CHECK_EQ(hp_tcp_abort(srv), 0);
        hp_stack_poll(n.s[1]);
        HP_CHECK_EQ(hp__tcp_pending_due(n.s[1]), 0u);
        net_settle(&n, 100);
        HP_CHECK_EQ(hp_tcp_state(c), HP_TCP_CLOSED); /* the abort's reset */
        hp_tcp_close(c);
        hp_tcp_close(l);
        net_down(&n);
        HP_STOP_IF_FAILED();
    }
}

/* An ACK owed at once by the handshake, a first window or a FIN waits for
 * the next poll (hp__tcp_ack_soon), so that what the application sends in
 * answer carries it: an HTTP/1.0-like exchange (connect, request,
 * response, the client closes first) takes 7 segments, not 10: SYN,
 * SYN-ACK, the request with the handshake's ACK, the response, the
 * client's FIN, the server's FIN with its ACK, the last ACK. Without an
 * answer the ACK still goes, at the next poll. */
static uint64_t segs_out(const struct net *n)
{
    return hp_stack_counter(n->s[0], HP_CTR_TCP_OUT_SEGS) +
           hp_stack_counter(n->s[1], HP_CTR_TCP_OUT_SEGS);
}

HP_TEST(tcp_e2e_acks_ride_on_the_answer)
{
    struct net n;
    HP_REQUIRE_EQ(net_up(&n, NULL, NULL), 0);
    struct hp_tcp_sock *l = hp_tcp_open(n.s[1], 4, NULL);
    struct hp_sockaddr any = addr_of(4, -1, 80), to = addr_of(4, 1, 80);
    HP_REQUIRE(l && hp_tcp_bind(l, &any) == 0 && hp_tcp_listen(l, 8) == 0);
    for (int round = 0; round < 3; round++) {
        uint64_t out0 = segs_out(&n);
        struct hp_tcp_sock *c = hp_tcp_open(n.s[0], 4, NULL), *srv = NULL;
        HP_REQUIRE(c != NULL);
        HP_REQUIRE_EQ(hp_tcp_connect(c, &to), -EINPROGRESS);
        hp_stack_poll(n.s[0]); /* (the SYN went at connect) */
        hp_stack_poll(n.s[1]); /* the SYN-ACK */
        hp_stack_poll(n.s[0]); /* established: the ACK waits */
        HP_CHECK_EQ(hp_tcp_state(c), HP_TCP_ESTABLISHED);
        HP_CHECK(c->flags & HP__TCPF_DACK);
        HP_REQUIRE_EQ(hp_tcp_send(c, "GET /", 5), 5); /* carries it */
        HP_CHECK(!(c->flags & HP__TCPF_DACK));
        hp_stack_poll(n.s[1]);
        srv = hp_tcp_accept(l, NULL, NULL);
        HP_REQUIRE(srv != NULL);
        char b[16];
        HP_CHECK_EQ(hp_tcp_recv(srv, b, sizeof b), 5);
        HP_REQUIRE_EQ(hp_tcp_send(srv, "200 OK", 6), 6);
        hp_stack_poll(n.s[0]);
        HP_CHECK_EQ(hp_tcp_recv(c, b, sizeof b), 6);
        HP_CHECK_EQ(hp_tcp_close(c), 0); /* the client's FIN */
        hp_stack_poll(n.s[1]);
        HP_CHECK(srv->flags & HP__TCPF_DACK); /* the FIN's ACK waits */
        HP_CHECK_EQ(hp_tcp_recv(srv, b, sizeof b), 0);
        HP_CHECK_EQ(hp_tcp_close(srv), 0); /* our FIN carries it */
        net_settle(&n, 10);
        HP_CHECK_EQ(segs_out(&n) - out0, 7u);
        HP_STOP_IF_FAILED();
    }
    /* No answer: the handshake's ACK goes at the client's next poll. */
    struct hp_tcp_sock *c = hp_tcp_open(n.s[0], 4, NULL);
    HP_REQUIRE(c != NULL);
    HP_REQUIRE_EQ(hp_tcp_connect(c, &to), -EINPROGRESS);
    hp_stack_poll(n.s[0]);
    hp_stack_poll(n.s[1]);
    hp_stack_poll(n.s[0]);
    HP_CHECK(c->flags & HP__TCPF_DACK);
    HP_CHECK_EQ(hp_stack_next_timer_ns(n.s[0]), 0); /* no sleep while it waits */
    uint64_t out1 = hp_stack_counter(n.s[0], HP_CTR_TCP_OUT_SEGS);
    hp_stack_poll(n.s[0]);
    HP_CHECK_EQ(hp_stack_counter(n.s[0], HP_CTR_TCP_OUT_SEGS) - out1, 1u);
    HP_CHECK(!(c->flags & HP__TCPF_DACK));
    hp_stack_poll(n.s[1]);
    struct hp_tcp_sock *srv = hp_tcp_accept(l, NULL, NULL);
    HP_CHECK(srv != NULL);
    hp_tcp_close(srv);
    hp_tcp_close(c);
    hp_tcp_close(l);
    net_settle(&n, 200000);
    net_down(&n);
}

/* Issue 23's budget: an idle or request/response connection holds its
 * 448-byte block and nothing else (no extension, no buffer for its small
 * messages, no heap entry once idle); a bulk sender gets the extension
 * (its transmit log, CUBIC's state), which goes with the connection. */
/* Close the three and check that nothing of them is left: no extension,
 * no connection; then take the network down. */
static void close_all_gone(struct net *n, struct hp_tcp_sock *c, struct hp_tcp_sock *srv,
                           struct hp_tcp_sock *l)
{
    hp_tcp_close(c);
    hp_tcp_close(srv);
    hp_tcp_close(l);
    net_settle(n, 200000);
    HP_CHECK_EQ(hp__tcp(n->s[0])->nexts, 0u);
    HP_CHECK_EQ(hp__tcp(n->s[0])->nconns, 0u);
    net_down(n);
}

/* Queue what of data[*sent, len) c takes now. */
static void send_more(struct hp_tcp_sock *c, const uint8_t *data, uint32_t len, uint32_t *sent)
{
    if (*sent >= len)
        return;
    long w = hp_tcp_send(c, data + *sent, len - *sent);
    if (w > 0)
        *sent += (uint32_t)w;
}

/* NewReno without SACK keeps no transmit log, but a bulk sender still
 * takes the extension for the send queue's cursor once the queue holds
 * more than two buffers: without it every segment's copy walked the queue
 * from its head (O(window) per segment: 759 instructions per segment in
 * the copy at 256 KiB windows under callgrind, against 40 with it). Each
 * copy from the middle then starts from the cursor, and every byte still
 * arrives in order. */
HP_TEST(tcp_e2e_newreno_no_sack_bulk_uses_the_cursor)
{
    struct hp_tcp_config tc = {.cc = HP_TCP_CC_NEWRENO, .no_sack = true};
    struct net n;
    HP_REQUIRE_EQ(net_up(&n, NULL, &tc), 0);
    struct hp_tcp_sock *c, *srv, *l;
    HP_REQUIRE(connect_pair(&n, 4, 12, &c, &srv, &l));
    static uint8_t big[300000], back[sizeof big];
    for (size_t k = 0; k < sizeof big; k++)
        big[k] = (uint8_t)(k * 131 + (k >> 9));
    uint32_t sent = 0, got = 0;
    bool saw_cursor = false;
    for (int k = 0; k < 100000 && got < sizeof big; k++) {
        send_more(c, big, sizeof big, &sent);
        net_step(&n);
        /* The queue past two buffers: the extension is there, and the
         * last copy left its cursor inside the queue. */
        if (c->sndq.nbufs > 2 && c->x && c->x->sndcur.b && c->x->sndcur.off >= c->sndq.start)
            saw_cursor = true;
        long r;
        while ((r = hp_tcp_recv(srv, back + got, sizeof back - got)) > 0)
            got += (uint32_t)r;
    }
    HP_CHECK_EQ(got, (uint32_t)sizeof big);
    HP_CHECK(memcmp(big, back, sizeof big) == 0);
    HP_CHECK(saw_cursor);
    HP_CHECK(!(c->flags & HP__TCPF_SACK_OK));
    struct hp_tcp_info i;
    HP_REQUIRE_EQ(hp_tcp_get_info(c, &i), 0);
    HP_CHECK_EQ(i.cc, (uint8_t)HP_TCP_CC_NEWRENO);
    HP_CHECK_EQ(i.retrans_segs, 0u);
    close_all_gone(&n, c, srv, l);
}

HP_TEST(tcp_e2e_small_messages_hold_only_the_block)
{
    struct net n;
    HP_REQUIRE_EQ(net_up(&n, NULL, NULL), 0);
    struct hp_tcp_sock *c, *srv, *l;
    HP_REQUIRE(connect_pair(&n, 4, 11, &c, &srv, &l));
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    HP_CHECK_EQ(sizeof(struct hp_tcp_sock), 512u); /* the logical order leaves holes */
#else
    HP_CHECK_EQ(sizeof(struct hp_tcp_sock), 448u);
#endif
    HP_CHECK(!hp__timer_armed(&c->t_rtx) && !hp__timer_armed(&srv->t_rtx)); /* the SYN's, gone */
    char b[64];
    for (int r = 0; r < 100; r++) {
        HP_REQUIRE_EQ(hp_tcp_send(c, "request", 7), 7);
        HP_CHECK_EQ(c->sndq.nbufs, 0u); /* inline */
        net_settle(&n, 1);
        HP_REQUIRE_EQ(hp_tcp_recv(srv, b, sizeof b), 7);
        HP_REQUIRE_EQ(hp_tcp_send(srv, "response", 8), 8);
        net_settle(&n, 1);
        HP_REQUIRE_EQ(hp_tcp_recv(c, b, sizeof b), 8);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK(c->x == NULL && srv->x == NULL);
    HP_CHECK_EQ(hp__tcp(n.s[0])->nexts, 0u);
    struct hp_tcp_info i;
    HP_REQUIRE_EQ(hp_tcp_get_info(c, &i), 0);
    HP_CHECK_EQ(i.bytes_acked, 700u);
    HP_CHECK_EQ(i.bytes_received, 800u);
    HP_CHECK_EQ(i.retrans_segs, 0u);
    /* Idle: nothing in the timer heap for it (nothing outstanding, no ACK
     * owed, no keepalive). */
    net_settle(&n, 2000);
    HP_CHECK(!hp__timer_armed(&c->t_rtx) && !hp__timer_armed(&c->t_dack) &&
             !hp__timer_armed(&c->t_misc));
    HP_CHECK(!hp__timer_armed(&srv->t_rtx) && !hp__timer_armed(&srv->t_dack));
    /* A bulk transfer: the sender's extension, its log and CUBIC's state. */
    static uint8_t big[200000];
    uint32_t sent = 0, got = 0;
    for (int k = 0; k < 100000 && got < sizeof big; k++) {
        send_more(c, big, sizeof big, &sent);
        net_step(&n);
        long r;
        while ((r = hp_tcp_recv(srv, b, sizeof b)) > 0)
            got += (uint32_t)r;
    }
    HP_CHECK_EQ(got, (uint32_t)sizeof big);
    HP_CHECK(c->x != NULL);
    HP_CHECK_EQ(hp__tcp(n.s[0])->nexts, 1u);
    close_all_gone(&n, c, srv, l);
}

/* ---- early demultiplexing (net/stack.c's rx_peek, tcp_input.c) ---------------------- */

/* The thousand-connection exchange in bursts, with early demultiplexing on
 * from the first connection and off: the same bytes arrive, and only the
 * first uses peeked hashes. */
HP_TEST(tcp_e2e_early_demux_bursts)
{
    enum { N = 256 };
    for (int on = 0; on <= 1; on++) {
        for (int family = 4; family <= 6; family += 2) {
            struct net n;
            struct hp_tcp_config tc = {.early_demux_conns = on ? 1 : 0};
            HP_REQUIRE_EQ(net_up(&n, NULL, &tc), 0);
            struct hp_tcp_config got;
            hp_tcp_get_config(n.s[0], &got);
            HP_CHECK_EQ(got.early_demux_conns, on ? 1u : 16384u);
            static struct hp_tcp_sock *c[N], *s[N];
            struct hp_tcp_sock *l = connect_many(&n, family, N, c, s);
            HP_REQUIRE(l != NULL);
            uint64_t hits0[2] = {hp__tcp(n.s[0])->early_hits, hp__tcp(n.s[1])->early_hits};
            /* Three rounds of request and echo, every connection's message
             * queued before either stack polls: bursts of 32 frames. */
            for (int r = 0; r < 3; r++) {
                for (int i = 0; i < N; i++) {
                    char msg[32];
                    int len = snprintf(msg, sizeof msg, "round %d connection %d", r, i);
                    HP_CHECK_EQ(hp_tcp_send(c[i], msg, (size_t)len), len);
                }
                net_settle(&n, 1);
                int echoed = 0;
                for (int i = 0; i < N; i++) {
                    char buf[64];
                    long k = hp_tcp_recv(s[i], buf, sizeof buf);
                    if (k > 0 && hp_tcp_send(s[i], buf, (size_t)k) == k)
                        echoed++;
                }
                HP_CHECK_EQ(echoed, N);
                net_settle(&n, 1);
                int ok = 0;
                for (int i = 0; i < N; i++) {
                    char buf[64], msg[32];
                    int len = snprintf(msg, sizeof msg, "round %d connection %d", r, i);
                    long k = hp_tcp_recv(c[i], buf, sizeof buf);
                    if (k == len && memcmp(buf, msg, (size_t)len) == 0)
                        ok++;
                }
                HP_CHECK_EQ(ok, N);
            }
            for (int i = 0; i < 2; i++) {
                uint64_t hits = hp__tcp(n.s[i])->early_hits - hits0[i];
                if (on)
                    HP_CHECK_GE(hits, (uint64_t)(3 * N * 9 / 10)); /* all but bursts of one */
                else
                    HP_CHECK_EQ(hits, 0u);
                HP_CHECK_EQ(hp__tcp(n.s[i])->nhint, 0u); /* forgotten after each burst */
            }
            for (int i = 0; i < N; i++) {
                hp_tcp_close(c[i]);
                hp_tcp_close(s[i]);
            }
            hp_tcp_close(l);
            for (int round = 0; round < 100000 && hp_stack_next_timer_ns(n.s[0]) >= 0; round++)
                net_step(&n);
            check_clean(&n);
            net_down(&n);
            HP_STOP_IF_FAILED();
        }
    }
}

/* A copy of frame f, with len bytes of it (at most its length) and edit
 * applied to the copy's bytes. */
static struct hp_buf *frame_copy(struct hp_pool *pool, const struct hp_buf *f, uint32_t len,
                                 void (*edit)(uint8_t *p, uint32_t len))
{
    struct hp_buf *b = hp_buf_alloc(pool);
    if (!b)
        return NULL;
    if (len > f->data_len)
        len = f->data_len;
    uint8_t *p = hp_buf_append(b, len);
    memcpy(p, hp_buf_data(f), len);
    if (edit)
        edit(p, len);
    return b;
}

static size_t l4_at(const uint8_t *p)
{
    return hp_get_be16(p + 12) == 0x0800 ? 14u + (size_t)(p[14] & 15) * 4 : 14u + 40u;
}

static void edit_ports(uint8_t *p, uint32_t len)
{
    /* The ports swapped: the checksum still holds, the tuple is no
     * connection's (and no listener has the client's port). */
    (void)len;
    uint8_t *t = p + l4_at(p), x[2] = {t[0], t[1]};
    t[0] = t[2], t[1] = t[3], t[2] = x[0], t[3] = x[1];
}

static void edit_ip_bad(uint8_t *p, uint32_t len)
{
    (void)len;
    if (hp_get_be16(p + 12) == 0x0800)
        p[14 + 10] ^= 0xFF; /* the header checksum */
    else
        p[14 + 4] = 0xFF; /* a payload length past the frame */
}

static void edit_vlan(uint8_t *p, uint32_t len)
{
    /* The EtherType becomes an 802.1Q tag: the rest shifts to no sense. */
    (void)len;
    p[12] = 0x81, p[13] = 0x00;
}

static void edit_frag(uint8_t *p, uint32_t len)
{
    (void)len;
    if (hp_get_be16(p + 12) == 0x0800) {
        p[14 + 6] |= 0x20; /* more fragments: held for reassembly, which never completes */
    } else {
        p[14 + 6] = 60; /* a destination options header, not TCP, first */
    }
}

/* One burst of real segments for three connections mixed with frames the
 * peek must not trust: truncated ones, a tag, a fragment (IPv6: an
 * extension header), a bad IP header, a tuple of no connection. Each real segment is delivered, the others are
 * dropped and counted as without early demultiplexing, no buffer is lost,
 * and exactly the frames the peek could read as TCP used its hash. */
HP_TEST(tcp_e2e_early_demux_odd_frames)
{
    for (int family = 4; family <= 6; family += 2) {
        struct net n;
        struct hp_tcp_config tc = {.early_demux_conns = 1};
        HP_REQUIRE_EQ(net_up(&n, NULL, &tc), 0);
        struct hp_tcp_sock *c[3], *s[3], *l[3];
        for (int i = 0; i < 3; i++)
            HP_REQUIRE(connect_pair(&n, family, (uint16_t)(100 + i), &c[i], &s[i], &l[i]));
        net_settle(&n, 100);
        /* The client's three segments, taken off the server's link. */
        for (int i = 0; i < 3; i++)
            HP_REQUIRE_EQ(hp_tcp_send(c[i], "x", 1), 1);
        hp_stack_poll(n.s[0]);
        struct hp_buf *real[8];
        HP_REQUIRE_EQ(hp_link_rx_burst(n.e[1], real, 8), 3);
        uint32_t hlen = (uint32_t)l4_at(hp_buf_data(real[0]));
        struct hp_buf *burst[16];
        int k = 0;
        burst[k++] = frame_copy(n.pool, real[0], 14, NULL);       /* no IP header */
        burst[k++] = frame_copy(n.pool, real[0], hlen + 2, NULL); /* ports cut in half */
        burst[k++] =
            frame_copy(n.pool, real[1], 4096, edit_ip_bad); /* peeked, then dropped by IP */
        burst[k++] = real[0];
        burst[k++] = frame_copy(n.pool, real[2], 4096, edit_vlan);
        burst[k++] = frame_copy(n.pool, real[0], 4096, edit_ports); /* peeked: no connection */
        burst[k++] = frame_copy(n.pool, real[2], 4096, edit_frag);
        burst[k++] = real[1];
        burst[k++] = frame_copy(n.pool, real[1], 30, NULL); /* IP header cut */
        burst[k++] = real[2];
        for (int i = 0; i < k; i++)
            HP_REQUIRE(burst[i] != NULL);
        HP_REQUIRE_EQ(hp_link_tx_burst(n.e[0], burst, (uint16_t)k), k);
        uint64_t hits0 = hp__tcp(n.s[1])->early_hits;
        uint64_t no_port0 = hp_stack_counter(n.s[1], HP_CTR_TCP_NO_PORT);
        uint64_t vlan0 = hp_stack_counter(n.s[1], HP_CTR_ETH_IN_VLAN);
        HP_CHECK_GE(hp_stack_poll(n.s[1]), k); /* one burst (and any timer due) */
        HP_CHECK_EQ(hp_link_rx_burst(n.e[1], real, 8), 0);
        HP_CHECK_EQ(hp__tcp(n.s[1])->early_hits - hits0, 4u);
        HP_CHECK_EQ(hp_stack_counter(n.s[1], HP_CTR_TCP_NO_PORT) - no_port0, 1u);
        HP_CHECK_EQ(hp_stack_counter(n.s[1], HP_CTR_ETH_IN_VLAN) - vlan0, 1u);
        for (int i = 0; i < 3; i++) {
            char b[8];
            HP_CHECK_EQ(hp_tcp_recv(s[i], b, sizeof b), 1);
            HP_CHECK_EQ(b[0], 'x');
        }
        net_settle(&n, 100);
        for (int i = 0; i < 3; i++) {
            HP_CHECK_EQ(hp_tcp_state(c[i]), HP_TCP_ESTABLISHED);
            hp_tcp_close(c[i]);
            hp_tcp_close(s[i]);
            hp_tcp_close(l[i]);
        }
        for (int round = 0; round < 100000 && hp_stack_next_timer_ns(n.s[0]) >= 0; round++)
            net_step(&n);
        net_down(&n);
        HP_STOP_IF_FAILED();
    }
}

/* A connection freed inside a burst: the server's last ACK ends its
 * LAST_ACK (the socket was closed: the block is freed at once), and a copy
 * of that ACK follows in the same burst. Early demultiplexing peeked the
 * block for both frames; the second must not use it (the table's epoch
 * moved: hp__tcp_conn_lookup_peeked looks the tuple up again, under ASan a
 * read of the freed block would stop here) and is answered as a segment of
 * no connection, to the listener's port: a reset. */
HP_TEST(tcp_e2e_early_demux_conn_freed_mid_burst)
{
    for (int family = 4; family <= 6; family += 2) {
        struct net n;
        struct hp_tcp_config tc = {.early_demux_conns = 1};
        HP_REQUIRE_EQ(net_up(&n, NULL, &tc), 0);
        struct hp_tcp_sock *c, *s, *l;
        HP_REQUIRE(connect_pair(&n, family, 100, &c, &s, &l));
        net_settle(&n, 100);
        hp_tcp_close(c); /* FIN from the client; the server ACKs it */
        net_settle(&n, 100);
        HP_REQUIRE_EQ(hp_tcp_state(s), HP_TCP_CLOSE_WAIT);
        hp_tcp_close(s); /* the server's FIN: LAST_ACK, the socket gone */
        hp_stack_poll(n.s[1]);
        hp_stack_poll(n.s[0]); /* the client answers with the last ACK */
        struct hp_buf *ack[4];
        HP_REQUIRE_EQ(hp_link_rx_burst(n.e[1], ack, 4), 1);
        struct hp_buf *burst[2] = {ack[0], frame_copy(n.pool, ack[0], 4096, NULL)};
        HP_REQUIRE(burst[1] != NULL);
        HP_REQUIRE_EQ(hp_link_tx_burst(n.e[0], burst, 2), 2);
        uint64_t hits0 = hp__tcp(n.s[1])->early_hits;
        uint64_t rst0 = hp_stack_counter(n.s[1], HP_CTR_TCP_OUT_RSTS);
        HP_CHECK_GE(hp_stack_poll(n.s[1]), 2);
        HP_CHECK_EQ(hp__tcp(n.s[1])->early_hits - hits0, 2u);
        HP_CHECK_EQ(hp__tcp_conn_count(hp__tcp(n.s[1])->table), 0u);
        HP_CHECK_EQ(hp_stack_counter(n.s[1], HP_CTR_TCP_OUT_RSTS) - rst0, 1u);
        hp_tcp_close(l);
        for (int round = 0; round < 100000 && hp_stack_next_timer_ns(n.s[0]) >= 0; round++)
            net_step(&n);
        net_down(&n);
        HP_STOP_IF_FAILED();
    }
}
