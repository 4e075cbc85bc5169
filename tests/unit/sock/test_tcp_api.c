/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP socket calls without a peer: argument errors, binding rules, configuration, limits, options, and the connection lifecycle driven by hand through tcp_internal.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "hp_test.h"
#include "sock/tcp_internal.h"

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};
static const uint8_t IP6[2][16] = {{0x20, 0x01, 0, 2, [15] = 1}, {0x20, 0x01, 0, 2, [15] = 2}};
static const uint8_t FOREIGN4[4] = {198, 18, 0, 9};
static const uint8_t FOREIGN6[16] = {0x20, 0x01, 0, 2, [15] = 9};
static const uint8_t FAR4[4] = {198, 19, 7, 7}; /* off every prefix, and no gateway */

/* One stack on one end of a mem link pair (the other end is never read:
 * whatever is sent stays in the link until it is closed). */
struct env {
    struct hp_link *e[2];
    struct hp_stack *s;
};

static int env_up(struct env *v)
{
    memset(v, 0, sizeof *v);
    struct hp_link_config lc = {.ring_size = 256};
    if (hp_link_mem_pair(&lc, v->e) < 0)
        return -1;
    struct hp_stack_config c = {.name = "tcpapi", .flags = HP_STACK_F_NO_DAD};
    v->s = hp_stack_create(&c);
    if (!v->s)
        return -1;
    int ifx = hp_stack_add_iface(v->s, v->e[0]);
    if (ifx < 0 || hp_stack_add_addr(v->s, ifx, 4, IP4[0], 24) < 0 ||
        hp_stack_add_addr(v->s, ifx, 6, IP6[0], 64) < 0)
        return -1;
    return 0;
}

static void env_down(struct env *v)
{
    hp_stack_destroy(v->s);
    hp_link_close(v->e[0]);
    hp_link_close(v->e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static struct hp_sockaddr sa(int family, const uint8_t *addr, uint16_t port)
{
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = (uint8_t)family;
    a.port = port;
    if (addr)
        memcpy(a.addr, addr, family == 4 ? 4 : 16);
    return a;
}

static uint32_t nconns(struct env *v)
{
    return hp__tcp(v->s)->nconns;
}

/* The events hp_stack_events reports for `user` now (0 if none). */
static uint32_t events_of(struct env *v, void *user)
{
    struct hp_event ev[64];
    uint32_t bits = 0;
    int n = hp_stack_events(v->s, ev, 64);
    for (int i = 0; i < n; i++)
        if (ev[i].user == user)
            bits |= ev[i].events;
    return bits;
}

/* Broadcast, multicast and the directed broadcast of our /24 are no
 * peers (RFC 1122 4.2.3.10): a connection's next hop is unicast. */
HP_TEST(tcp_api_connect_refuses_broadcasts)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    static const uint8_t bc[4] = {255, 255, 255, 255}, mc[4] = {224, 0, 0, 1},
                         dbc[4] = {198, 18, 0, 255};
    struct hp_sockaddr rb = sa(4, bc, 80), rm = sa(4, mc, 80), rd = sa(4, dbc, 80);
    HP_CHECK_EQ(hp_tcp_connect(t, &rb), -EINVAL);
    HP_CHECK_EQ(hp_tcp_connect(t, &rm), -EINVAL);
    HP_CHECK_EQ(hp_tcp_connect(t, &rd), -ENETUNREACH);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    hp_tcp_close(t);
    env_down(&v);
}

HP_TEST(tcp_api_null_and_bad_arguments)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_sockaddr a4 = sa(4, IP4[0], 80), r4 = sa(4, IP4[1], 80);
    char buf[16];
    struct hp_buf *b = (struct hp_buf *)1;
    long val;

    errno = 0;
    HP_CHECK(hp_tcp_open(NULL, 4, NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    errno = 0;
    HP_CHECK(hp_tcp_open(v.s, 5, NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(hp_tcp_open(v.s, 0, NULL) == NULL);
    HP_CHECK_EQ(hp_tcp_bind(NULL, &a4), -EINVAL);
    HP_CHECK_EQ(hp_tcp_listen(NULL, 5), -EINVAL);
    errno = 0;
    HP_CHECK(hp_tcp_accept(NULL, NULL, NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK_EQ(hp_tcp_connect(NULL, &r4), -EINVAL);
    HP_CHECK_EQ(hp_tcp_send(NULL, buf, 1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_send_buf(NULL, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_recv(NULL, buf, sizeof buf), -EINVAL);
    HP_CHECK_EQ(hp_tcp_recv_buf(NULL, &b), -EINVAL);
    HP_CHECK_EQ(hp_tcp_shutdown(NULL, HP_TCP_SHUT_WR), -EINVAL);
    HP_CHECK_EQ(hp_tcp_close(NULL), 0);
    HP_CHECK_EQ(hp_tcp_abort(NULL), 0);
    HP_CHECK_EQ(hp_tcp_setopt(NULL, HP_TCP_OPT_NODELAY, 1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_getopt(NULL, HP_TCP_OPT_NODELAY, &val), -EINVAL);
    HP_CHECK_EQ(hp_tcp_poll(NULL), 0);
    HP_CHECK_EQ(hp_tcp_error(NULL), 0);
    HP_CHECK_EQ(hp_tcp_state(NULL), HP_TCP_CLOSED);
    struct hp_sockaddr out;
    memset(&out, 0xAA, sizeof out);
    hp_tcp_local(NULL, &out);
    HP_CHECK_EQ(out.port, 0);
    HP_CHECK_EQ(out.family, 0);
    hp_tcp_peer(NULL, &out);
    HP_CHECK_EQ(out.port, 0);
    struct hp_tcp_info info;
    HP_CHECK_EQ(hp_tcp_get_info(NULL, &info), -EINVAL);
    HP_CHECK_EQ(hp_tcp_configure(NULL, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_configure(v.s, NULL), -EINVAL);

    /* On a real socket: NULL pointers, wrong family, bad flags. */
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_poll(t), 0);
    HP_CHECK_EQ(hp_tcp_bind(t, NULL), -EINVAL);
    struct hp_sockaddr a6 = sa(6, IP6[0], 80), r6 = sa(6, IP6[1], 80);
    HP_CHECK_EQ(hp_tcp_bind(t, &a6), -EINVAL);
    HP_CHECK_EQ(hp_tcp_connect(t, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_connect(t, &r6), -EINVAL);
    HP_CHECK_EQ(hp_tcp_send(t, NULL, 5), -EINVAL);
    struct iovec nobase[2] = {{.iov_base = buf, .iov_len = 1}, {.iov_base = NULL, .iov_len = 3}};
    HP_CHECK_EQ(hp_tcp_sendv(NULL, nobase, 1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_sendv(t, nobase, -1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_sendv(t, NULL, 1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_sendv(t, nobase, 2), -EINVAL); /* a length without a base */
    struct iovec huge[2] = {{.iov_base = buf, .iov_len = SIZE_MAX},
                            {.iov_base = buf, .iov_len = 2}};
    HP_CHECK_EQ(hp_tcp_sendv(t, huge, 2), -EINVAL); /* the total overflows */
    HP_CHECK_EQ(hp_tcp_recv(t, NULL, 5), -EINVAL);
    HP_CHECK_EQ(hp_tcp_recv_buf(t, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_send_buf(t, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_shutdown(t, 0), -EINVAL);
    HP_CHECK_EQ(hp_tcp_shutdown(t, 4), -EINVAL);
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_NODELAY, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_get_info(t, NULL), -EINVAL);
    HP_CHECK_EQ(hp_tcp_get_info(t, &info), 0);
    HP_CHECK_EQ(info.state, HP_TCP_CLOSED);

    /* Not connected. */
    HP_CHECK_EQ(hp_tcp_send(t, buf, sizeof buf), -ENOTCONN);
    struct iovec one = {.iov_base = buf, .iov_len = sizeof buf};
    HP_CHECK_EQ(hp_tcp_sendv(t, &one, 1), -ENOTCONN);
    HP_CHECK_EQ(hp_tcp_recv(t, buf, sizeof buf), -ENOTCONN);
    b = (struct hp_buf *)1;
    HP_CHECK_EQ(hp_tcp_recv_buf(t, &b), -ENOTCONN);
    HP_CHECK(b == NULL);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), -ENOTCONN);
    HP_CHECK_EQ(hp_tcp_error(t), 0);
    hp_tcp_peer(t, &out);
    HP_CHECK_EQ(out.port, 0);
    hp_tcp_local(t, &out);
    HP_CHECK_EQ(out.port, 0);

    /* Remote addresses that cannot be connected to. */
    struct hp_sockaddr bad = sa(4, IP4[1], 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &bad), -EINVAL);
    bad = sa(4, NULL, 80);
    HP_CHECK_EQ(hp_tcp_connect(t, &bad), -EINVAL);
    static const uint8_t mcast[4] = {224, 0, 0, 1}, bcast[4] = {255, 255, 255, 255};
    bad = sa(4, mcast, 80);
    HP_CHECK_EQ(hp_tcp_connect(t, &bad), -EINVAL);
    bad = sa(4, bcast, 80);
    HP_CHECK_EQ(hp_tcp_connect(t, &bad), -EINVAL);
    bad = sa(4, FAR4, 80);
    HP_CHECK_EQ(hp_tcp_connect(t, &bad), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_close(t), 0);
    HP_CHECK_EQ(nconns(&v), 0);
    env_down(&v);
}

HP_TEST(tcp_api_state_names)
{
    static const char *const want[] = {"CLOSED",      "LISTEN",     "SYN_SENT",   "SYN_RECEIVED",
                                       "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "CLOSE_WAIT",
                                       "CLOSING",     "LAST_ACK",   "TIME_WAIT"};
    for (int i = 0; i < 11; i++)
        HP_CHECK_STREQ(hp_tcp_state_name(i), want[i]);
    HP_CHECK_EQ(HP_TCP_TIME_WAIT, 10);
    HP_CHECK_STREQ(hp_tcp_state_name(-1), "?");
    HP_CHECK_STREQ(hp_tcp_state_name(11), "?");
    HP_CHECK_STREQ(hp_tcp_state_name(1000000), "?");
}

HP_TEST(tcp_api_bind_rules)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *a = hp_tcp_open(v.s, 4, NULL), *b = hp_tcp_open(v.s, 4, NULL);
    struct hp_tcp_sock *c6 = hp_tcp_open(v.s, 6, NULL), *d6 = hp_tcp_open(v.s, 6, NULL);
    HP_REQUIRE(a && b && c6 && d6);

    /* Not our address. */
    struct hp_sockaddr x = sa(4, FOREIGN4, 80);
    HP_CHECK_EQ(hp_tcp_bind(a, &x), -EADDRNOTAVAIL);
    x = sa(6, FOREIGN6, 80);
    HP_CHECK_EQ(hp_tcp_bind(c6, &x), -EADDRNOTAVAIL);

    /* Our address, then the same port again: in use; bound twice: EINVAL. */
    struct hp_sockaddr l = sa(4, IP4[0], 8080);
    HP_CHECK_EQ(hp_tcp_bind(a, &l), 0);
    HP_CHECK_EQ(hp_tcp_bind(a, &l), -EINVAL);
    HP_CHECK_EQ(hp_tcp_bind(b, &l), -EADDRINUSE);
    /* The any address clashes with a specific one on the same port. */
    struct hp_sockaddr any = sa(4, NULL, 8080);
    HP_CHECK_EQ(hp_tcp_bind(b, &any), -EADDRINUSE);
    /* IPv6 has its own ports. */
    struct hp_sockaddr any6 = sa(6, NULL, 8080);
    HP_CHECK_EQ(hp_tcp_bind(c6, &any6), 0);
    struct hp_sockaddr l6 = sa(6, IP6[0], 8080);
    HP_CHECK_EQ(hp_tcp_bind(d6, &l6), -EADDRINUSE);
    struct hp_sockaddr got;
    hp_tcp_local(a, &got);
    HP_CHECK_EQ(got.family, 4);
    HP_CHECK_EQ(got.port, 8080);
    HP_CHECK_MEMEQ(got.addr, IP4[0], 4);
    hp_tcp_local(c6, &got);
    HP_CHECK_EQ(got.port, 8080);
    HP_CHECK_EQ(got.addr[0], 0);

    /* A listener holds its port as well. */
    HP_CHECK_EQ(hp_tcp_listen(a, 8), 0);
    HP_CHECK_EQ(hp_tcp_bind(b, &l), -EADDRINUSE);
    /* Closing it frees the port. */
    hp_tcp_close(a);
    HP_CHECK_EQ(hp_tcp_bind(b, &l), 0);

    /* Port 0: an ephemeral port, different for each socket. */
    struct hp_tcp_sock *e1 = hp_tcp_open(v.s, 4, NULL), *e2 = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(e1 && e2);
    struct hp_sockaddr eph = sa(4, NULL, 0);
    HP_CHECK_EQ(hp_tcp_bind(e1, &eph), 0);
    HP_CHECK_EQ(hp_tcp_bind(e2, &eph), 0);
    struct hp_sockaddr p1, p2;
    hp_tcp_local(e1, &p1);
    hp_tcp_local(e2, &p2);
    HP_CHECK_GE(p1.port, 49152);
    HP_CHECK_GE(p2.port, 49152);
    HP_CHECK_NE(p1.port, p2.port);
    /* A port taken by an ephemeral bind is in use for an explicit one. */
    struct hp_tcp_sock *f = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(f != NULL);
    struct hp_sockaddr same = sa(4, IP4[0], p1.port);
    HP_CHECK_EQ(hp_tcp_bind(f, &same), -EADDRINUSE);

    hp_tcp_close(b);
    hp_tcp_close(c6);
    hp_tcp_close(d6);
    hp_tcp_close(e1);
    hp_tcp_close(e2);
    hp_tcp_close(f);
    HP_CHECK_EQ(nconns(&v), 0);
    env_down(&v);
}

HP_TEST(tcp_api_listen_and_accept_errors)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *l = hp_tcp_open(v.s, 6, NULL), *t = hp_tcp_open(v.s, 6, NULL);
    HP_REQUIRE(l && t);
    errno = 0;
    HP_CHECK(hp_tcp_accept(t, NULL, NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    /* Listening on an unbound socket binds an ephemeral port. */
    HP_CHECK_EQ(hp_tcp_listen(l, 1000000), 0);
    HP_CHECK_EQ(hp_tcp_state(l), HP_TCP_LISTEN);
    HP_CHECK_EQ(l->lq->backlog, 4096); /* clamped to syn_backlog_max */
    struct hp_sockaddr got;
    hp_tcp_local(l, &got);
    HP_CHECK_GE(got.port, 49152);
    HP_CHECK_EQ(hp_tcp_listen(l, 5), -EINVAL);
    errno = 0;
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    HP_CHECK_EQ(errno, EAGAIN);
    /* Nothing to do on a listener but accept and close. */
    char buf[4];
    HP_CHECK_EQ(hp_tcp_send(l, buf, 4), -ENOTCONN);
    HP_CHECK_EQ(hp_tcp_recv(l, buf, 4), -ENOTCONN);
    HP_CHECK_EQ(hp_tcp_shutdown(l, HP_TCP_SHUT_RD), -ENOTCONN);
    struct hp_sockaddr r = sa(6, IP6[1], 80);
    HP_CHECK_EQ(hp_tcp_connect(l, &r), -EINVAL);
    HP_CHECK_EQ(hp_tcp_bind(l, &got), -EINVAL);
    HP_CHECK_EQ(hp_tcp_poll(l), 0);
    /* Another socket cannot listen on the same port. */
    struct hp_sockaddr same = sa(6, NULL, got.port);
    HP_CHECK_EQ(hp_tcp_bind(t, &same), -EADDRINUSE);
    /* Backlog below 1 is 1. */
    HP_CHECK_EQ(hp_tcp_listen(t, -3), 0);
    HP_CHECK_EQ(t->lq->backlog, 1);
    hp_tcp_close(l);
    hp_tcp_abort(t);
    HP_CHECK_EQ(nconns(&v), 0);
    env_down(&v);
}

HP_TEST(tcp_api_configure)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_config c;
    hp_tcp_get_config(v.s, &c);
    HP_CHECK_EQ(c.max_conns, 65536);
    HP_CHECK_EQ(c.sndbuf, 262144);
    HP_CHECK_EQ(c.rcvbuf, 262144);
    HP_CHECK_EQ(c.ooo_max_segs, 256);
    HP_CHECK_EQ(c.delack_ms, 40);
    HP_CHECK_EQ(c.delack_segs, 2);
    HP_CHECK_EQ(c.rto_min_ms, 200);
    HP_CHECK_EQ(c.rto_max_ms, 60000);
    HP_CHECK_EQ(c.rto_initial_ms, 1000);
    HP_CHECK_EQ(c.syn_retries, 7);
    HP_CHECK_EQ(c.synack_retries, 5);
    HP_CHECK_EQ(c.data_retries, 15);
    HP_CHECK_EQ(c.time_wait_ms, 60000);
    HP_CHECK_EQ(c.fin_wait2_ms, 60000);
    HP_CHECK_EQ(c.keepalive_idle_s, 7200);
    HP_CHECK_EQ(c.keepalive_intvl_s, 75);
    HP_CHECK_EQ(c.keepalive_probes, 9);
    HP_CHECK_EQ(c.challenge_ack_limit, 1000);
    HP_CHECK_EQ(c.challenge_ack_conn_ms, 500);
    HP_CHECK_EQ(c.syn_backlog_max, 4096);
    HP_CHECK_EQ(c.early_demux_conns, 16384);
    HP_CHECK_EQ(c.mss, 0);
    HP_CHECK(!c.no_syncookies && !c.no_timestamps && !c.no_window_scaling && !c.tw_reuse);

    /* Values out of range. */
    struct {
        const char *what;
        struct hp_tcp_config c;
    } bad[] = {
        {"delack_ms 500", {.delack_ms = 500}},
        {"sndbuf 1000", {.sndbuf = 1000}},
        {"rcvbuf 2^30+1", {.rcvbuf = (1u << 30) + 1}},
        {"rto_min above rto_max", {.rto_min_ms = 70000, .rto_initial_ms = 70000}},
        {"rto_max below 60 s", {.rto_max_ms = 1000}},
        {"rto_initial below rto_min", {.rto_min_ms = 500, .rto_initial_ms = 300}},
        {"mss 50", {.mss = 50}},
        {"mss 65496", {.mss = 65496}},
        {"keepalive_probes 1000", {.keepalive_probes = 1000}},
        {"syn_retries 256", {.syn_retries = 256}},
        {"synack_retries 256", {.synack_retries = 256}},
        {"max_conns 2^30+1", {.max_conns = (1u << 30) + 1}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (hp_tcp_configure(v.s, &bad[i].c) != -EINVAL)
            hp_test_fail(__FILE__, __LINE__, "%s accepted", bad[i].what);
    /* A rejected configuration changes nothing. */
    struct hp_tcp_config now;
    hp_tcp_get_config(v.s, &now);
    HP_CHECK_MEMEQ(&now, &c, sizeof c);

    /* A good one; a larger minimum RTO alone raises the initial one. */
    struct hp_tcp_config good = {.sndbuf = 65536,
                                 .rto_min_ms = 1500,
                                 .tw_reuse = true,
                                 .max_conns = 100};
    HP_CHECK_EQ(hp_tcp_configure(v.s, &good), 0);
    hp_tcp_get_config(v.s, &now);
    HP_CHECK_EQ(now.sndbuf, 65536);
    HP_CHECK_EQ(now.rcvbuf, 262144);
    HP_CHECK_EQ(now.rto_initial_ms, 1500);
    HP_CHECK_EQ(now.max_conns, 100);
    HP_CHECK(now.tw_reuse);

    /* Sockets take the configured defaults, and pin the configuration. */
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    long val = 0;
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_SNDBUF, &val), 0);
    HP_CHECK_EQ(val, 65536);
    HP_CHECK_EQ(hp_tcp_configure(v.s, &good), -EBUSY);
    hp_tcp_close(t);
    HP_CHECK_EQ(hp_tcp_configure(v.s, &good), 0);
    env_down(&v);
}

HP_TEST(tcp_api_open_limit)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_config c = {.max_conns = 4};
    HP_REQUIRE_EQ(hp_tcp_configure(v.s, &c), 0);
    struct hp_tcp_sock *t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = hp_tcp_open(v.s, i & 1 ? 6 : 4, NULL);
        HP_REQUIRE(t[i] != NULL);
    }
    errno = 0;
    HP_CHECK(hp_tcp_open(v.s, 4, NULL) == NULL);
    HP_CHECK_EQ(errno, ENFILE);
    /* A user's open is not a connection dropped by the limit. */
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_CONN_LIMIT_DROPS), 0);
    /* Passive blocks go through the same limit, and are counted. */
    errno = 0;
    HP_CHECK(hp__tcp_conn_new(v.s, 4) == NULL);
    HP_CHECK_EQ(errno, ENFILE);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_CONN_LIMIT_DROPS), 1);
    hp_tcp_close(t[2]);
    t[2] = hp_tcp_open(v.s, 4, NULL);
    HP_CHECK(t[2] != NULL);
    for (int i = 0; i < 4; i++)
        hp_tcp_close(t[i]);
    HP_CHECK_EQ(nconns(&v), 0);
    env_down(&v);
}

HP_TEST(tcp_api_options)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    long val;
    struct {
        enum hp_tcp_opt opt;
        long good, bad_lo, bad_hi;
    } cases[] = {
        {HP_TCP_OPT_NODELAY, 1, -1, 2},
        {HP_TCP_OPT_SNDBUF, 4096, 2047, (1L << 30) + 1},
        {HP_TCP_OPT_RCVBUF, 1L << 20, 0, (1L << 30) + 1},
        {HP_TCP_OPT_KEEPALIVE, 1, -1, 2},
        {HP_TCP_OPT_KEEPIDLE, 60, 0, 32768},
        {HP_TCP_OPT_KEEPINTVL, 5, 0, 32768},
        {HP_TCP_OPT_KEEPCNT, 3, 0, 128},
        {HP_TCP_OPT_LINGER0, 1, -1, 2},
        {HP_TCP_OPT_QUICKACK, 1, -1, 2},
        {HP_TCP_OPT_MAXSEG, 1000, 87, 65496},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        HP_CHECK_EQ(hp_tcp_setopt(t, cases[i].opt, cases[i].bad_lo), -EINVAL);
        HP_CHECK_EQ(hp_tcp_setopt(t, cases[i].opt, cases[i].bad_hi), -EINVAL);
        HP_CHECK_EQ(hp_tcp_setopt(t, cases[i].opt, cases[i].good), 0);
        val = -5;
        HP_CHECK_EQ(hp_tcp_getopt(t, cases[i].opt, &val), 0);
        HP_CHECK_EQ(val, cases[i].good);
    }
    HP_CHECK_EQ(hp_tcp_setopt(t, (enum hp_tcp_opt)0, 1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_setopt(t, (enum hp_tcp_opt)99, 1), -EINVAL);
    HP_CHECK_EQ(hp_tcp_getopt(t, (enum hp_tcp_opt)99, &val), -EINVAL);
    /* A wire option kind given as a socket option is refused, never taken
     * for another option (MSS was SNDBUF's value, TS LINGER0's). */
    long sndbuf_before = 0;
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_SNDBUF, &sndbuf_before), 0);
    for (unsigned kind = 0; kind < 256; kind++) {
        HP_CHECK_EQ(hp_tcp_setopt(t, (enum hp_tcp_opt)kind, 1400), -EINVAL);
        HP_CHECK_EQ(hp_tcp_getopt(t, (enum hp_tcp_opt)kind, &val), -EINVAL);
    }
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_SNDBUF, &val), 0);
    HP_CHECK_EQ(val, sndbuf_before);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 0), 0);
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_NODELAY, &val), 0);
    HP_CHECK_EQ(val, 0);

    /* MAXSEG caps the MSS we announce; too late once connecting. */
    struct hp_sockaddr r = sa(4, IP4[1], 80);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    HP_CHECK_EQ(t->rmss, 1000);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_MAXSEG, 500), -EINVAL);
    HP_CHECK_EQ(hp_tcp_getopt(t, HP_TCP_OPT_MAXSEG, &val), 0);
    HP_CHECK_EQ(val, 536); /* the provisional SMSS (RFC 9293 3.7.1) */
    /* The window scale fits the receive buffer set before connecting. */
    HP_CHECK_EQ(t->rcv_wscale, 5); /* 1 MiB >> 5 = 32768 */
    hp_tcp_close(t);
    env_down(&v);
}

HP_TEST(tcp_api_connect_syn_sent)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, &v);
    HP_REQUIRE(t != NULL);
    struct hp_sockaddr r = sa(4, IP4[1], 7);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_SYN_SENT);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ACTIVE_OPENS), 1);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EALREADY);
    HP_CHECK_EQ(hp_tcp_bind(t, &r), -EINVAL);
    HP_CHECK_EQ(hp_tcp_listen(t, 1), -EINVAL);
    struct hp_sockaddr l, p;
    hp_tcp_local(t, &l);
    hp_tcp_peer(t, &p);
    HP_CHECK_EQ(l.family, 4);
    HP_CHECK_MEMEQ(l.addr, IP4[0], 4);
    HP_CHECK_GE(l.port, 49152);
    HP_CHECK_EQ(p.port, 7);
    HP_CHECK_MEMEQ(p.addr, IP4[1], 4);
    HP_CHECK(t->flags & HP__TCPF_IN_TABLE);
    HP_CHECK_EQ(t->rmss, 1460);
    HP_CHECK_EQ(t->smss, 536);
    HP_CHECK_EQ(t->rcv_wscale, 3); /* 256 KiB >> 3 = 32768 */
    HP_CHECK_EQ(t->snd_una, t->iss);
    /* Data queued before the handshake ends waits in the send queue. */
    char data[3000];
    memset(data, 'x', sizeof data);
    HP_CHECK_EQ(hp_tcp_send(t, data, sizeof data), (long)sizeof data);
    HP_CHECK_EQ(t->sndq.bytes, sizeof data);
    HP_CHECK_EQ(hp_tcp_poll(t) & HP_EV_OUT, 0);
    char in[8];
    HP_CHECK_EQ(hp_tcp_recv(t, in, sizeof in), -EAGAIN);
    /* RFC 9293 3.10.4: closing the sending side in SYN-SENT deletes the
     * TCB: nothing is sent, the connection is over. */
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_CLOSED);
    HP_CHECK_EQ(t->sndq.bytes, 0);
    HP_CHECK(!(t->flags & HP__TCPF_IN_TABLE));
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ATTEMPT_FAILS), 1);
    HP_CHECK_EQ(hp_tcp_send(t, data, 1), -EPIPE);
    HP_CHECK_EQ(hp_tcp_recv(t, in, sizeof in), 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EINVAL);
    HP_CHECK(hp_tcp_poll(t) & HP_EV_HUP);
    HP_CHECK(events_of(&v, &v) & HP_EV_HUP);
    hp_tcp_close(t);

    /* Two sockets bound to one port can connect to different peers, not
     * to the same one. */
    struct hp_tcp_sock *a = hp_tcp_open(v.s, 4, NULL), *b = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(a && b);
    struct hp_sockaddr port = sa(4, IP4[0], 5555);
    HP_CHECK_EQ(hp_tcp_bind(a, &port), 0);
    HP_CHECK_EQ(hp_tcp_connect(a, &r), -EINPROGRESS);
    HP_CHECK_EQ(hp_tcp_bind(b, &port), 0); /* a connection does not hold the port against a bind */
    HP_CHECK_EQ(hp_tcp_connect(b, &r), -EADDRINUSE);
    HP_CHECK_EQ(hp_tcp_state(b), HP_TCP_CLOSED);
    struct hp_sockaddr r2 = sa(4, IP4[1], 8);
    HP_CHECK_EQ(hp_tcp_connect(b, &r2), -EINPROGRESS);
    hp_tcp_local(b, &l);
    HP_CHECK_EQ(l.port, 5555);
    /* Closing in SYN-SENT frees at once. */
    hp_tcp_close(a);
    hp_tcp_close(b);
    HP_CHECK_EQ(nconns(&v), 0);
    env_down(&v);
}

/* A connection a listener made, as tcp_input would: on the SYN queue, in
 * SYN_RECEIVED, with its tuple. */
static struct hp_tcp_sock *fake_child(struct hp_tcp_sock *l, uint16_t rport)
{
    struct hp_tcp_sock *c = hp__tcp_conn_new(l->s, 4);
    if (!c)
        return NULL;
    struct hp__tcp_listenq *lq = l->lq;
    c->parent = l;
    c->qnext = lq->syn_head;
    if (lq->syn_head)
        lq->syn_head->qprev = c;
    lq->syn_head = c;
    lq->nsyn++;
    if (hp__tcp_conn_attach(c, 4, IP4[0], l->key.lport, IP4[1], rport) < 0) {
        hp__tcp_conn_free(c);
        return NULL;
    }
    hp__tcp_set_state(c, HP_TCP_SYN_RECEIVED);
    return c;
}

HP_TEST(tcp_life_passive_queues)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    int luser, cuser[3];
    struct hp_tcp_sock *l = hp_tcp_open(v.s, 4, &luser);
    HP_REQUIRE(l != NULL);
    struct hp_sockaddr any = sa(4, NULL, 80);
    HP_REQUIRE_EQ(hp_tcp_bind(l, &any), 0);
    HP_REQUIRE_EQ(hp_tcp_setopt(l, HP_TCP_OPT_NODELAY, 1), 0);
    HP_REQUIRE_EQ(hp_tcp_setopt(l, HP_TCP_OPT_MAXSEG, 1200), 0);
    HP_REQUIRE_EQ(hp_tcp_listen(l, 2), 0);
    struct hp_tcp_sock *c[4];
    for (int i = 0; i < 4; i++) {
        c[i] = fake_child(l, (uint16_t)(1000 + i));
        HP_REQUIRE(c[i] != NULL);
    }
    HP_CHECK_EQ(l->lq->nsyn, 4);
    HP_CHECK_EQ(c[0]->rmss, 1200); /* the listener's MAXSEG */
    /* Events on a connection nobody accepted go nowhere. */
    hp__tcp_wake(c[0], HP_EV_IN);
    HP_CHECK_EQ(events_of(&v, NULL), 0);

    /* The handshake completes, in order 1, 0, 2: the accept queue holds
     * backlog (2) of them, the third stays in SYN_RECEIVED. */
    HP_CHECK_EQ(hp__tcp_established(c[1]), 0);
    HP_CHECK_EQ(hp__tcp_established(c[0]), 0);
    HP_CHECK_EQ(hp__tcp_established(c[2]), -ENOSPC);
    HP_CHECK_EQ(hp_tcp_state(c[1]), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(hp_tcp_state(c[2]), HP_TCP_SYN_RECEIVED);
    HP_CHECK_EQ(l->lq->nacc, 2);
    HP_CHECK_EQ(l->lq->nsyn, 2);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_PASSIVE_OPENS), 2);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_LISTEN_OVERFLOWS), 1);
    HP_CHECK_GT(c[1]->cc.cwnd, 0);
    HP_CHECK(c[1]->flags & HP__TCPF_NODELAY); /* inherited */
    HP_CHECK_EQ(events_of(&v, &luser), HP_EV_IN);
    HP_CHECK_EQ(hp_tcp_poll(l), HP_EV_IN);

    /* A connection reset before it is accepted is freed at once. */
    uint32_t before = nconns(&v);
    hp__tcp_drop(c[3], -ECONNRESET);
    HP_CHECK_EQ(nconns(&v), before - 1);
    HP_CHECK_EQ(l->lq->nsyn, 1);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ATTEMPT_FAILS), 1);

    /* Accept: first in, first out, with the peer's address. */
    struct hp_sockaddr peer;
    struct hp_tcp_sock *a = hp_tcp_accept(l, &cuser[0], &peer);
    HP_CHECK(a == c[1]);
    HP_CHECK_EQ(peer.port, 1001);
    HP_CHECK_MEMEQ(peer.addr, IP4[1], 4);
    struct hp_tcp_sock *b = hp_tcp_accept(l, &cuser[1], NULL);
    HP_CHECK(b == c[0]);
    HP_CHECK(hp_tcp_accept(l, NULL, NULL) == NULL);
    HP_CHECK_EQ(hp_tcp_poll(l), 0);
    HP_CHECK(a->parent == NULL && (a->flags & HP__TCPF_ACCEPTED));
    /* An accepted connection reports what holds at once (room to send). */
    HP_CHECK_EQ(events_of(&v, &cuser[0]), HP_EV_OUT);
    /* Now the third fits. */
    HP_CHECK_EQ(hp__tcp_established(c[2]), 0);
    HP_CHECK_EQ(l->lq->nacc, 1);
    HP_CHECK_EQ(l->lq->nsyn, 0);

    /* A reset on an accepted connection: the error once, then the end. */
    hp__tcp_drop(a, -ECONNRESET);
    HP_CHECK_EQ(hp_tcp_state(a), HP_TCP_CLOSED);
    HP_CHECK_EQ(hp_tcp_poll(a), HP_EV_IN | HP_EV_ERR | HP_EV_HUP);
    HP_CHECK_EQ(events_of(&v, &cuser[0]), HP_EV_IN | HP_EV_ERR | HP_EV_HUP);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ESTAB_RESETS), 1);
    char buf[16];
    HP_CHECK_EQ(hp_tcp_recv(a, buf, sizeof buf), -ECONNRESET);
    HP_CHECK_EQ(hp_tcp_recv(a, buf, sizeof buf), 0);
    HP_CHECK_EQ(hp_tcp_send(a, buf, 1), -EPIPE);
    HP_CHECK_EQ(hp_tcp_poll(a), HP_EV_IN | HP_EV_HUP);
    hp_tcp_close(a);

    /* Closing the listener resets and frees what it still holds. */
    hp_tcp_close(l);
    HP_CHECK_EQ(nconns(&v), 1); /* b, accepted */
    hp_tcp_abort(b);
    HP_CHECK_EQ(nconns(&v), 0);
    env_down(&v);
}

HP_TEST(tcp_life_active_data_and_close)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    int user;
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 6, &user);
    HP_REQUIRE(t != NULL);
    struct hp_sockaddr r = sa(6, IP6[1], 9);
    HP_REQUIRE_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    HP_CHECK_EQ(t->smss, 1220);
    HP_CHECK_EQ(t->rmss, 1440);
    (void)events_of(&v, &user);
    /* The SYN-ACK arrives (as tcp_input would record it). */
    t->snd_una = t->snd_nxt = t->snd_max = t->iss + 1;
    t->irs = 5000;
    t->rcv_nxt = 5001;
    HP_CHECK_EQ(hp__tcp_established(t), 0);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_ESTABLISHED);
    HP_CHECK_EQ(events_of(&v, &user), HP_EV_OUT);
    HP_CHECK_EQ(hp_tcp_poll(t), HP_EV_OUT);

    /* Data in the receive queue (as tcp_input puts it there). */
    struct hp_pool *pool = hp__tcp_ifc(t)->pool;
    uint8_t msg[100];
    for (int i = 0; i < 100; i++)
        msg[i] = (uint8_t)i;
    HP_REQUIRE_EQ(hp__tcp_rcvq_append(&t->rcvq, pool, msg, 100), 100);
    HP_CHECK(hp_tcp_poll(t) & HP_EV_IN);
    uint8_t in[64];
    HP_CHECK_EQ(hp_tcp_recv(t, in, 60), 60);
    HP_CHECK_MEMEQ(in, msg, 60);
    struct hp_buf *b = NULL;
    HP_CHECK_EQ(hp_tcp_recv_buf(t, &b), 40);
    HP_REQUIRE(b != NULL);
    HP_CHECK_MEMEQ(hp_buf_data(b), msg + 60, 40);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_tcp_recv(t, in, sizeof in), -EAGAIN);

    /* The send buffer bounds what is taken. */
    HP_REQUIRE_EQ(hp_tcp_setopt(t, HP_TCP_OPT_SNDBUF, 4096), 0);
    static uint8_t big[10000];
    HP_CHECK_EQ(hp_tcp_send(t, big, sizeof big), 4096);
    HP_CHECK_EQ(t->sndq.bytes, 4096); /* nothing is acknowledged here */
    HP_CHECK(t->flags & HP__TCPF_SEND_SPACE);
    HP_CHECK_EQ(hp_tcp_poll(t) & HP_EV_OUT, 0);
    HP_CHECK_EQ(hp_tcp_send(t, big, 1), -EAGAIN);
    struct iovec full[2] = {{.iov_base = big, .iov_len = 0}, {.iov_base = big, .iov_len = 1}};
    HP_CHECK_EQ(hp_tcp_sendv(t, full, 2), -EAGAIN);
    HP_CHECK_EQ(hp_tcp_sendv(t, full, 1), 0); /* nothing to send is not an error */
    /* A zero-copy buffer larger than the room is refused whole, and stays
     * the caller's. */
    struct hp_buf *zb = hp_buf_alloc(pool);
    HP_REQUIRE(zb != NULL);
    hp_buf_append(zb, 1000);
    HP_CHECK_EQ(hp_tcp_send_buf(t, zb), -EAGAIN);
    hp_buf_free(zb);

    /* The peer's FIN: end of stream once the queue is read. */
    t->flags |= HP__TCPF_FIN_RCVD;
    hp__tcp_set_state(t, HP_TCP_CLOSE_WAIT);
    HP_CHECK(hp_tcp_poll(t) & HP_EV_IN);
    HP_CHECK_EQ(hp_tcp_recv(t, in, sizeof in), 0);
    HP_CHECK(t->flags & HP__TCPF_EOF_SEEN);
    /* Our side: FIN queued, CLOSE_WAIT -> LAST_ACK. */
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_LAST_ACK);
    HP_CHECK(t->flags & HP__TCPF_FIN_QUEUED);
    HP_CHECK_EQ(hp_tcp_send(t, big, 1), -EPIPE);
    HP_CHECK_EQ(hp_tcp_poll(t) & HP_EV_OUT, 0);
    /* Closing hands it to the stack: an orphan until it is over. */
    uint32_t before = nconns(&v);
    hp_tcp_close(t);
    HP_CHECK_EQ(nconns(&v), before);
    HP_CHECK(t->flags & HP__TCPF_ORPHAN);
    hp__tcp_closed(t); /* LAST_ACK acknowledged */
    HP_CHECK_EQ(nconns(&v), before - 1);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ESTAB_RESETS), 0);
    env_down(&v);
}

HP_TEST(tcp_life_close_with_unread_data_resets)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    struct hp_sockaddr r = sa(4, IP4[1], 9);
    HP_REQUIRE_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    t->snd_una = t->snd_nxt = t->snd_max = t->iss + 1;
    HP_REQUIRE_EQ(hp__tcp_established(t), 0);
    uint8_t msg[10] = {0};
    HP_REQUIRE_EQ(hp__tcp_rcvq_append(&t->rcvq, hp__tcp_ifc(t)->pool, msg, 10), 10);
    hp_tcp_close(t);
    HP_CHECK_EQ(nconns(&v), 0);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ABORT_ON_CLOSE), 1);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ESTAB_RESETS), 1);

    /* LINGER0 resets too, with nothing unread. */
    t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(hp_tcp_setopt(t, HP_TCP_OPT_LINGER0, 1), 0);
    HP_REQUIRE_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    t->snd_una = t->snd_nxt = t->snd_max = t->iss + 1;
    HP_REQUIRE_EQ(hp__tcp_established(t), 0);
    hp_tcp_close(t);
    HP_CHECK_EQ(nconns(&v), 0);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_ABORT_ON_CLOSE), 2);
    env_down(&v);
}

/* hp_stack_destroy with sockets of every kind still open: every block and
 * every buffer they hold is freed, and nothing is left in use. */
HP_TEST(tcp_api_destroy_with_sockets_open)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_tcp_sock *l = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(l != NULL);
    HP_REQUIRE_EQ(hp_tcp_listen(l, 16), 0);
    for (int i = 0; i < 3; i++)
        HP_REQUIRE(fake_child(l, (uint16_t)(2000 + i)) != NULL);
    HP_REQUIRE_EQ(hp__tcp_established(l->lq->syn_head), 0);
    struct hp_tcp_sock *b = hp_tcp_open(v.s, 6, NULL);
    struct hp_sockaddr any6 = sa(6, NULL, 443);
    HP_REQUIRE(b != NULL);
    HP_REQUIRE_EQ(hp_tcp_bind(b, &any6), 0);
    static uint8_t data[50000];
    for (int i = 0; i < 4; i++) {
        struct hp_tcp_sock *t = hp_tcp_open(v.s, i & 1 ? 6 : 4, NULL);
        HP_REQUIRE(t != NULL);
        struct hp_sockaddr r = i & 1 ? sa(6, IP6[1], 80) : sa(4, IP4[1], 80);
        HP_REQUIRE_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
        HP_CHECK_GT(hp_tcp_send(t, data, sizeof data), 0);
        HP_CHECK_EQ(hp__tcp_rcvq_append(&t->rcvq, hp__tcp_ifc(t)->pool, data, 3000), 3000);
    }
    hp_tcp_open(v.s, 4, NULL);
    HP_CHECK_GT(hp_pools_in_use(), 0);
    env_down(&v); /* checks hp_pools_in_use() == 0 */
}

/* A connection that completed its handshake and is now in TIME_WAIT. */
/* A connection in TIME_WAIT that the user closed: from then on a compact
 * record (tcp_tw.c), its block freed. *key gets its tuple, *snd_nxt its
 * SND.NXT. @return 0, or -1 (the test fails). */
static int time_wait_conn(struct env *v, const struct hp_sockaddr *local,
                          const struct hp_sockaddr *r, bool ts, uint64_t idle_ns,
                          struct hp__tcp_key *key, uint32_t *snd_nxt)
{
    struct hp_tcp_sock *t = hp_tcp_open(v->s, 4, NULL);
    if (!t || (local && hp_tcp_bind(t, local) < 0) || hp_tcp_connect(t, r) != -EINPROGRESS)
        return -1;
    t->snd_una = t->snd_nxt = t->snd_max = t->iss + 1;
    if (hp__tcp_established(t) < 0)
        return -1;
    if (ts)
        t->flags |= HP__TCPF_TS_OK;
    t->ts_recent_s = (uint32_t)((v->s->now - idle_ns) / 1000000000u);
    t->snd_nxt = t->snd_max = t->snd_una = t->iss + 100000;
    hp__tcp_set_state(t, HP_TCP_TIME_WAIT);
    *key = t->key;
    *snd_nxt = t->snd_nxt;
    uint32_t before = hp__tcp_tw_count(hp__tcp(v->s)->table);
    hp_tcp_close(t); /* the user is done with it: the rest of the wait in a record */
    return hp__tcp_tw_count(hp__tcp(v->s)->table) == before + 1 ? 0 : -1;
}

/* The record of key ends now, as its timer would end it. */
static void end_time_wait(struct env *v, const struct hp__tcp_key *key)
{
    struct hp__tcp_key *e = hp__tcp_tw_lookup(hp__tcp(v->s)->table, key);
    HP_REQUIRE(e != NULL);
    hp__tcp_tw_end(v->s, HP__TCP_ENTRY(e, struct hp__tcp_tw, key));
}

HP_TEST(tcp_api_time_wait_reuse)
{
    struct env v;
    HP_REQUIRE_EQ(env_up(&v), 0);
    struct hp_sockaddr local = sa(4, IP4[0], 6000), r = sa(4, IP4[1], 80);
    struct hp__tcp_key key;
    uint32_t old_nxt;

    /* Without tw_reuse the tuple stays taken. */
    HP_REQUIRE_EQ(time_wait_conn(&v, &local, &r, true, 3000000000ull, &key, &old_nxt), 0);
    struct hp_tcp_sock *t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(hp_tcp_bind(t, &local), 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EADDRINUSE);
    hp_tcp_close(t);
    hp__tcp_fini(v.s); /* start over with tw_reuse: no socket may exist */
    HP_REQUIRE_EQ(hp__tcp_init(v.s), 0);
    struct hp_tcp_config c = {.tw_reuse = true};
    HP_REQUIRE_EQ(hp_tcp_configure(v.s, &c), 0);

    /* Timestamps, and a second of silence: taken over, with the new ISS
     * past the old sequence space. */
    HP_REQUIRE_EQ(time_wait_conn(&v, &local, &r, true, 3000000000ull, &key, &old_nxt), 0);
    t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(hp_tcp_bind(t, &local), 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_TW_REUSED), 1);
    HP_CHECK_EQ(nconns(&v), 1);
    HP_CHECK_EQ(hp__tcp_tw_count(hp__tcp(v.s)->table), 0u);
    HP_CHECK(hp__seq_gt(t->iss, old_nxt + 65535u));
    hp_tcp_close(t);

    /* Too recent, or no timestamps: not taken over. */
    HP_REQUIRE_EQ(time_wait_conn(&v, &local, &r, true, 100000000ull, &key, &old_nxt), 0);
    t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(hp_tcp_bind(t, &local), 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EADDRINUSE);
    hp_tcp_close(t);
    end_time_wait(&v, &key);
    HP_REQUIRE_EQ(time_wait_conn(&v, &local, &r, false, 3000000000ull, &key, &old_nxt), 0);
    t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(hp_tcp_bind(t, &local), 0);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EADDRINUSE);
    hp_tcp_close(t);
    end_time_wait(&v, &key);

    /* Ephemeral ports all taken: one in TIME_WAIT is taken over. */
    struct hp__tcp_table *tab = hp__tcp(v.s)->table;
    HP_REQUIRE_EQ(hp__tcp_table_set_ephemeral(tab, 50000, 50001), 0);
    HP_REQUIRE_EQ(time_wait_conn(&v, NULL, &r, true, 3000000000ull, &key, &old_nxt), 0);
    struct hp_tcp_sock *live = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(live != NULL);
    HP_REQUIRE_EQ(hp_tcp_connect(live, &r), -EINPROGRESS);
    struct hp_sockaddr lp;
    hp_tcp_local(live, &lp);
    t = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(t != NULL);
    HP_CHECK_EQ(hp_tcp_connect(t, &r), -EINPROGRESS);
    struct hp_sockaddr tp;
    hp_tcp_local(t, &tp);
    HP_CHECK(tp.port == 50000 || tp.port == 50001);
    HP_CHECK_NE(tp.port, lp.port);
    HP_CHECK_EQ(hp_stack_counter(v.s, HP_CTR_TCP_TW_REUSED), 2);
    /* And now there is none left. */
    struct hp_tcp_sock *u = hp_tcp_open(v.s, 4, NULL);
    HP_REQUIRE(u != NULL);
    HP_CHECK_EQ(hp_tcp_connect(u, &r), -EADDRNOTAVAIL);
    env_down(&v);
}
