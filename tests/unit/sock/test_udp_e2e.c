/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP between two stacks over a mem link pair: every size up to the largest datagram, both families, ICMP for closed ports, zero-copy echo. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include <hotpath/tcp.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/ipv4.h>

#include "hp_test.h"
#include "sock/internal.h"

struct pair {
    struct hp_link *e[2];
    struct hp_stack *s[2];
};

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};
static const uint8_t IP6[2][16] = {{0x20, 0x01, 0, 2, [15] = 1}, {0x20, 0x01, 0, 2, [15] = 2}};

static int pair_up_ttl(struct pair *p, uint8_t ttl)
{
    memset(p, 0, sizeof *p);
    struct hp_link_config lc = {.ring_size = 1024};
    if (hp_link_mem_pair(&lc, p->e) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config c = {.name = i ? "server" : "client",
                                    .flags = HP_STACK_F_NO_DAD,
                                    .default_ttl = ttl};
        p->s[i] = hp_stack_create(&c);
        if (!p->s[i])
            return -1;
        int ifx = hp_stack_add_iface(p->s[i], p->e[i]);
        if (ifx < 0 || hp_stack_add_addr(p->s[i], ifx, 4, IP4[i], 24) < 0 ||
            hp_stack_add_addr(p->s[i], ifx, 6, IP6[i], 64) < 0)
            return -1;
    }
    return 0;
}

static int pair_up(struct pair *p)
{
    return pair_up_ttl(p, 0);
}

/* Poll both stacks until nothing moves for a few rounds. */
static void pump(struct pair *p)
{
    int idle = 0;
    for (int i = 0; i < 10000 && idle < 3; i++) {
        int n = hp_stack_poll(p->s[0]) + hp_stack_poll(p->s[1]);
        idle = n ? 0 : idle + 1;
    }
}

static void pair_down(struct pair *p)
{
    for (int i = 0; i < 2; i++)
        hp_stack_destroy(p->s[i]);
    for (int i = 0; i < 2; i++)
        hp_link_close(p->e[i]);
}

static struct hp_sockaddr sa(int family, int side, uint16_t port)
{
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = (uint8_t)family;
    a.port = port;
    if (side >= 0)
        memcpy(a.addr, family == 4 ? IP4[side] : IP6[side], family == 4 ? 4 : 16);
    return a;
}

HP_TEST(udp_e2e_sizes_both_families)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    static uint8_t out[65536], in[65536];
    for (size_t i = 0; i < sizeof out; i++)
        out[i] = (uint8_t)(i * 131 + (i >> 8));
    for (int family = 4; family <= 6; family += 2) {
        struct hp_udp_sock *c = hp_udp_open(p.s[0], family, NULL),
                           *srv = hp_udp_open(p.s[1], family, NULL);
        HP_REQUIRE(c && srv);
        struct hp_sockaddr any = sa(family, -1, 7);
        HP_REQUIRE_EQ(hp_udp_bind(srv, &any), 0);
        struct hp_sockaddr to = sa(family, 1, 7);
        const size_t sizes[] = {0, 1, 1472, 1473, 8000, family == 4 ? 65507 : 65527};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            int rc = hp_udp_sendto(c, out + k, n, &to);
            HP_CHECK_EQ(rc, (int)n);
            pump(&p);
            struct hp_sockaddr from;
            memset(in, 0xEE, sizeof in);
            rc = hp_udp_recvfrom(srv, in, sizeof in, &from);
            if (rc != (int)n)
                hp_test_fail(__FILE__, __LINE__, "IPv%d, %zu bytes: received %d", family, n, rc);
            else
                HP_CHECK_MEMEQ(in, out + k, n);
            struct hp_sockaddr l;
            hp_udp_local(c, &l);
            HP_CHECK_EQ(from.port, l.port);
            HP_CHECK_MEMEQ(from.addr, family == 4 ? IP4[0] : IP6[0], family == 4 ? 4 : 16);
            HP_STOP_IF_FAILED();
        }
        char big[65528];
        HP_CHECK_EQ(hp_udp_sendto(c, big, family == 4 ? 65508 : 65528, &to), -EMSGSIZE);
        hp_udp_close(c);
        hp_udp_close(srv);
    }
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_UDP_IN_DATAGRAMS), 12);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_UDP_OUT_DATAGRAMS), 12);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_UDP_IN_ERRORS), 0);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_e2e_closed_port_icmp)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    for (int family = 4; family <= 6; family += 2) {
        struct hp_udp_sock *c = hp_udp_open(p.s[0], family, NULL);
        HP_REQUIRE(c != NULL);
        struct hp_sockaddr to = sa(family, 1, 9);
        HP_CHECK_EQ(hp_udp_sendto(c, "knock", 5, &to), 5);
        pump(&p);
        hp_udp_close(c);
    }
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_UDP_NO_PORTS), 2);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_ICMP_OUT_DEST_UNREACHS), 1);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_ICMP6_OUT_DEST_UNREACHS), 1);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_ICMP_IN_DEST_UNREACHS), 1);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_ICMP6_IN_DEST_UNREACHS), 1);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The server echoes with recv_buf + send_buf: the same buffer goes back. */
HP_TEST(udp_e2e_zero_copy_echo)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    for (int family = 4; family <= 6; family += 2) {
        int tag = family;
        struct hp_udp_sock *c = hp_udp_open(p.s[0], family, NULL),
                           *srv = hp_udp_open(p.s[1], family, &tag);
        HP_REQUIRE(c && srv);
        struct hp_sockaddr any = sa(family, -1, 7), to = sa(family, 1, 7);
        HP_REQUIRE_EQ(hp_udp_bind(srv, &any), 0);
        HP_REQUIRE_EQ(hp_udp_connect(c, &to), 0);
        struct hp_event ev[4];
        hp_stack_events(p.s[1], ev, 4); /* the initial HP_EV_OUT */
        for (int round = 0; round < 20; round++) {
            char msg[64];
            int len = snprintf(msg, sizeof msg, "echo %d over IPv%d", round, family);
            HP_REQUIRE_EQ(hp_udp_sendto(c, msg, (size_t)len, NULL), len);
            pump(&p);
            HP_REQUIRE_EQ(hp_stack_events(p.s[1], ev, 4), 1);
            HP_CHECK(ev[0].user == &tag && (ev[0].events & HP_EV_IN));
            struct hp_buf *b;
            struct hp_sockaddr from;
            HP_REQUIRE_EQ(hp_udp_recv_buf(srv, &b, &from), len);
            HP_REQUIRE_EQ(hp_udp_send_buf(srv, b, &from), len);
            pump(&p);
            char got[64];
            struct hp_sockaddr src;
            HP_REQUIRE_EQ(hp_udp_recvfrom(c, got, sizeof got, &src), len);
            HP_CHECK_MEMEQ(got, msg, (size_t)len);
            HP_CHECK_EQ(src.port, 7);
        }
        /* A connected socket ignores other senders. */
        struct hp_udp_sock *other = hp_udp_open(p.s[1], family, NULL);
        struct hp_sockaddr l;
        hp_udp_local(c, &l);
        struct hp_sockaddr back = sa(family, 0, l.port);
        HP_REQUIRE_EQ(hp_udp_sendto(other, "intruder", 8, &back), 8);
        pump(&p);
        char got[16];
        HP_CHECK_EQ(hp_udp_recvfrom(c, got, sizeof got, NULL), -EAGAIN);
        hp_udp_close(other);
        hp_udp_close(c);
        hp_udp_close(srv);
    }
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_UDP_NO_PORTS), 2);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* No route, and a bound source address that is used as the source. */
HP_TEST(udp_e2e_routes_and_source)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    struct hp_udp_sock *c = hp_udp_open(p.s[0], 4, NULL);
    HP_REQUIRE(c != NULL);
    struct hp_sockaddr mine = sa(4, 0, 4000);
    HP_REQUIRE_EQ(hp_udp_bind(c, &mine), 0);
    struct hp_sockaddr far = {.family = 4, .port = 7, .addr = {203, 0, 113, 1}};
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_IP_OUT_NO_ROUTES), 1);
    struct hp_udp_sock *srv = hp_udp_open(p.s[1], 4, NULL);
    struct hp_sockaddr at = sa(4, 1, 7);
    HP_REQUIRE_EQ(hp_udp_bind(srv, &at), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "hello", 5, &at), 5);
    pump(&p);
    struct hp_sockaddr from;
    char got[8];
    HP_CHECK_EQ(hp_udp_recvfrom(srv, got, sizeof got, &from), 5);
    HP_CHECK_EQ(from.port, 4000);
    hp_udp_close(c);
    hp_udp_close(srv);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A socket keeps its last IPv4 route (udp.c resolve) only while nothing it
 * depends on changed: no route, then the gateway, then a connected prefix
 * for the same destination, each datagram going where the stack's routes
 * say at the time it is sent. */
HP_TEST(udp_e2e_route_kept_until_routes_change)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    struct hp_udp_sock *c = hp_udp_open(p.s[0], 4, NULL);
    HP_REQUIRE(c != NULL);
    struct hp_sockaddr far = {.family = 4, .port = 7, .addr = {198, 19, 0, 1}};
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_IP_OUT_NO_ROUTES), 2);
    /* Through the gateway (the other stack, which is no router: it drops
     * them as not for it), every datagram, the route kept or not. */
    HP_REQUIRE_EQ(hp_stack_set_gateway(p.s[0], 4, IP4[1]), 0);
    for (int i = 0; i < 3; i++)
        HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP_IN_ADDR_ERRORS), 3);
    /* Another gateway, nobody there: asked for by ARP, the datagram
     * waiting; and back to the first. */
    static const uint8_t gone[4] = {198, 18, 0, 77};
    uint64_t q = hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED);
    HP_REQUIRE_EQ(hp_stack_set_gateway(p.s[0], 4, gone), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP_IN_ADDR_ERRORS), 3);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED), q + 1);
    HP_REQUIRE_EQ(hp_stack_set_gateway(p.s[0], 4, IP4[1]), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP_IN_ADDR_ERRORS), 4);
    /* Another destination on the connected prefix in between: its own
     * route, and back to far's. */
    struct hp_udp_sock *srv = hp_udp_open(p.s[1], 4, NULL);
    struct hp_sockaddr at = sa(4, 1, 7);
    HP_REQUIRE_EQ(hp_udp_bind(srv, &at), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "near", 4, &at), 4);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    char got[8];
    struct hp_sockaddr from;
    HP_CHECK_EQ(hp_udp_recvfrom(srv, got, sizeof got, &from), 4);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP_IN_ADDR_ERRORS), 5);
    /* An address whose prefix holds far: far is on the link now, asked for
     * by ARP (nobody answers), the datagram waiting for the answer, not
     * sent to the gateway. */
    uint64_t arp0 = hp_stack_counter(p.s[0], HP_CTR_ARP_OUT_REQUESTS);
    uint64_t q0 = hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED);
    static const uint8_t mine[4] = {198, 19, 0, 9};
    HP_REQUIRE_EQ(hp_stack_add_addr(p.s[0], 0, 4, mine, 24), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP_IN_ADDR_ERRORS), 5);
    HP_CHECK_GT(hp_stack_counter(p.s[0], HP_CTR_ARP_OUT_REQUESTS), arp0);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED), q0 + 1);
    hp_udp_close(c);
    hp_udp_close(srv);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The same for IPv6, whose routes also move with duplicate address
 * detection: no route, a gateway, another gateway (asked for by NDP), back,
 * an address whose prefix holds the destination (on the link now: asked for
 * by NDP, not sent to the gateway); and a source whose address turns out to
 * be a duplicate is not used again. */
HP_TEST(udp_e2e_route6_kept_until_routes_change)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    struct hp_udp_sock *c = hp_udp_open(p.s[0], 6, NULL);
    HP_REQUIRE(c != NULL);
    struct hp_sockaddr far = {.family = 6, .port = 7, .addr = {0x20, 0x01, 0, 2, 0, 1, [15] = 1}};
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), -EHOSTUNREACH);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_IP6_OUT_NO_ROUTES), 2);
    HP_REQUIRE_EQ(hp_stack_set_gateway(p.s[0], 6, IP6[1]), 0);
    for (int i = 0; i < 3; i++)
        HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP6_IN_ADDR_ERRORS), 3);
    static const uint8_t gone[16] = {0x20, 0x01, 0, 2, [15] = 0x77};
    uint64_t q = hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED);
    HP_REQUIRE_EQ(hp_stack_set_gateway(p.s[0], 6, gone), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP6_IN_ADDR_ERRORS), 3);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED), q + 1);
    HP_REQUIRE_EQ(hp_stack_set_gateway(p.s[0], 6, IP6[1]), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP6_IN_ADDR_ERRORS), 4);
    uint64_t ns0 = hp_stack_counter(p.s[0], HP_CTR_NDP_OUT_NS);
    uint64_t q0 = hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED);
    static const uint8_t mine[16] = {0x20, 0x01, 0, 2, 0, 1, [15] = 9};
    HP_REQUIRE_EQ(hp_stack_add_addr(p.s[0], 0, 6, mine, 64), 0);
    HP_CHECK_EQ(hp_udp_sendto(c, "x", 1, &far), 1);
    pump(&p);
    HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_IP6_IN_ADDR_ERRORS), 4);
    HP_CHECK_GT(hp_stack_counter(p.s[0], HP_CTR_NDP_OUT_NS), ns0);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_NEIGH_QUEUED), q0 + 1);
    hp_udp_close(c);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Poll both stacks until d's address a is in state want (a real clock:
 * DAD's RetransTimer of silence); false after 2 s. */
static bool dad_wait(struct hp_stack *d, struct hp_stack *peer, int ifx, const uint8_t *a,
                     enum hp_addr_state want)
{
    for (int i = 0; i < 400; i++) {
        hp_stack_poll(d);
        hp_stack_poll(peer);
        if (hp_stack_addr_state(d, ifx, 6, a) == want)
            return true;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* A kept IPv6 route follows duplicate address detection: while a global
 * address is tentative its prefix is on the link but the link-local
 * address is the source; once it is done the same socket, to the same
 * destination, sends from it (without the bump at DAD's end the kept
 * route would keep the link-local source). */
HP_TEST(udp_e2e_route6_follows_dad)
{
    struct hp_link *e[2];
    struct hp_link_config lc = {.ring_size = 256};
    HP_REQUIRE_EQ(hp_link_mem_pair(&lc, e), 0);
    struct hp_stack_config dc = {.name = "dad", .neigh_retrans_ms = 20};
    struct hp_stack_config pc = {.name = "peer", .flags = HP_STACK_F_NO_DAD};
    struct hp_stack *d = hp_stack_create(&dc), *peer = hp_stack_create(&pc);
    HP_REQUIRE(d && peer);
    int ifx = hp_stack_add_iface(d, e[0]);
    HP_REQUIRE(ifx >= 0 && hp_stack_add_iface(peer, e[1]) >= 0);
    static const uint8_t a1[16] = {0x20, 0x01, 0, 2, 0, 3, [15] = 1};
    static const uint8_t a2[16] = {0x20, 0x01, 0, 2, 0, 3, [15] = 2};
    HP_REQUIRE_EQ(hp_stack_add_addr(peer, 0, 6, a2, 64), 0);
    struct hp_udp_sock *srv = hp_udp_open(peer, 6, NULL), *u = hp_udp_open(d, 6, NULL);
    HP_REQUIRE(srv && u);
    struct hp_sockaddr at = {.family = 6, .port = 7};
    memcpy(at.addr, a2, 16);
    HP_REQUIRE_EQ(hp_udp_bind(srv, &at), 0);
    uint8_t mac[6], ll[16];
    hp_link_mac(e[0], mac);
    hp_ipv6_eui64_link_local(mac, ll);
    HP_REQUIRE(dad_wait(d, peer, ifx, ll, HP_ADDR_PREFERRED));
    HP_REQUIRE_EQ(hp_stack_add_addr(d, ifx, 6, a1, 64), 0);
    HP_CHECK_EQ(hp_stack_addr_state(d, ifx, 6, a1), HP_ADDR_TENTATIVE);
    char got[4];
    struct hp_sockaddr from;
    HP_CHECK_EQ(hp_udp_sendto(u, "x", 1, &at), 1);
    /* NDP, the datagram (its header made before: the link-local source),
     * and DAD's end meanwhile. */
    HP_REQUIRE(dad_wait(d, peer, ifx, a1, HP_ADDR_PREFERRED));
    for (int i = 0; i < 10; i++) {
        hp_stack_poll(d);
        hp_stack_poll(peer);
    }
    HP_REQUIRE_EQ(hp_udp_recvfrom(srv, got, sizeof got, &from), 1);
    HP_CHECK(memcmp(from.addr, ll, 16) == 0);
    HP_CHECK_EQ(hp_udp_sendto(u, "y", 1, &at), 1);
    for (int i = 0; i < 10; i++) {
        hp_stack_poll(d);
        hp_stack_poll(peer);
    }
    HP_REQUIRE_EQ(hp_udp_recvfrom(srv, got, sizeof got, &from), 1);
    HP_CHECK(memcmp(from.addr, a1, 16) == 0);
    hp_udp_close(u);
    hp_udp_close(srv);
    hp_stack_destroy(d);
    hp_stack_destroy(peer);
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The frames of IPv4 datagrams sent on a socket's prepared path (the
 * neighbour known: both lower headers written at once from the path's
 * sums), read off the wire before the peer sees them and checked field by
 * field: Ethernet addresses, version and length, DF clear, the configured
 * TTL, IDs one apart, both checksums, the payload. A datagram past the MTU
 * takes the general path (fragments); a change of destination remakes the
 * path. Counters as through the general path. */
HP_TEST(udp_e2e_prepared_path_frames)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up_ttl(&p, 7), 0);
    struct hp_udp_sock *c = hp_udp_open(p.s[0], 4, NULL);
    struct hp_udp_sock *srv = hp_udp_open(p.s[1], 4, NULL);
    struct hp_udp_sock *srv2 = hp_udp_open(p.s[1], 4, NULL);
    HP_REQUIRE(c && srv && srv2);
    struct hp_sockaddr at = sa(4, 1, 7), at2 = sa(4, 1, 9), mine = sa(4, 0, 5000);
    HP_REQUIRE_EQ(hp_udp_bind(srv, &at), 0);
    HP_REQUIRE_EQ(hp_udp_bind(srv2, &at2), 0);
    HP_REQUIRE_EQ(hp_udp_bind(c, &mine), 0);
    /* The first datagram waits for ARP (the general path). */
    HP_CHECK_EQ(hp_udp_sendto(c, "warm", 4, &at), 4);
    pump(&p);
    char got[8];
    HP_CHECK_EQ(hp_udp_recvfrom(srv, got, sizeof got, NULL), 4);
    uint8_t mac[2][6];
    hp_link_mac(p.e[0], mac[0]);
    hp_link_mac(p.e[1], mac[1]);
    static const uint32_t sizes[] = {0, 1, 63, 64, 1000, 1472, 1, 1473};
    enum { N = sizeof sizes / sizeof sizes[0] };
    uint8_t *data = malloc(2000);
    HP_REQUIRE(data != NULL);
    for (int i = 0; i < 2000; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    uint64_t out0 = hp_stack_counter(p.s[0], HP_CTR_UDP_OUT_DATAGRAMS);
    uint64_t req0 = hp_stack_counter(p.s[0], HP_CTR_IP_OUT_REQUESTS);
    for (int i = 0; i < N; i++)
        HP_CHECK_EQ(hp_udp_sendto(c, data, sizes[i], i == 6 ? &at2 : &at), (int)sizes[i]);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_UDP_OUT_DATAGRAMS), out0 + N);
    HP_CHECK_EQ(hp_stack_counter(p.s[0], HP_CTR_IP_OUT_REQUESTS), req0 + N);
    struct hp_buf *f[16];
    int n = hp_link_rx_burst(p.e[1], f, 16);
    HP_REQUIRE_EQ(n, N + 1); /* the last one in two fragments */
    int prev_id = -1;
    for (int i = 0; i < n; i++) {
        const uint8_t *e = hp_buf_data(f[i]);
        HP_CHECK(memcmp(e, mac[1], 6) == 0);
        HP_CHECK(memcmp(e + 6, mac[0], 6) == 0);
        HP_CHECK(e[12] == 0x08 && e[13] == 0x00);
        struct hp_ipv4_repr ip;
        HP_REQUIRE_EQ(hp_ipv4_parse(e + 14, f[i]->data_len - 14, &ip, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(ip.ttl, 7);
        HP_CHECK_EQ(ip.proto, 17);
        HP_CHECK_EQ(ip.hdr_len, 20);
        HP_CHECK_EQ(ip.dscp_ecn, 0);
        HP_CHECK(!ip.df);
        HP_CHECK(memcmp(ip.src, IP4[0], 4) == 0 && memcmp(ip.dst, IP4[1], 4) == 0);
        if (i >= N - 1) { /* the fragments of 1473 bytes */
            HP_CHECK_EQ(ip.mf, i == N - 1);
            continue;
        }
        HP_CHECK(!ip.mf && ip.frag_off == 0);
        /* One flow's IDs one apart, whichever path wrote them. */
        if (prev_id >= 0)
            HP_CHECK_EQ(ip.ident, (uint16_t)(prev_id + 1));
        prev_id = ip.ident;
        const uint8_t *u = e + 14 + 20;
        uint32_t ulen = sizes[i] + 8;
        HP_CHECK_EQ(ip.payload_len, ulen);
        HP_CHECK_EQ(hp_cksum_udp4_verify(ip.src, ip.dst, u, ulen), HP_CKSUM_GOOD);
        HP_CHECK_EQ(hp_get_be16(u), 5000);
        HP_CHECK_EQ(hp_get_be16(u + 2), i == 6 ? 9 : 7);
        HP_CHECK_EQ(hp_get_be16(u + 4), ulen);
        HP_CHECK(hp_get_be16(u + 6) != 0);
        HP_CHECK(memcmp(u + 8, data, sizes[i]) == 0);
    }
    hp_buf_free_bulk(f, (unsigned)n);
    free(data);
    hp_udp_close(c);
    hp_udp_close(srv);
    hp_udp_close(srv2);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Early demultiplexing of UDP bursts (from early_demux_conns bound sockets):
 * 64 sockets each side, bursts of datagrams to all of them in both
 * families, every one delivered to its socket with its bytes; the sockets
 * were prefetched when on, never when off. It only prefetches: a burst with
 * datagrams to closed ports and truncated frames among them still gets its
 * ICMP errors and drops. */
HP_TEST(udp_e2e_early_demux_bursts)
{
    for (int on = 0; on < 2 && !hp_test_failed(); on++) {
        struct pair p;
        HP_REQUIRE_EQ(pair_up(&p), 0);
        struct hp_tcp_config tc = {.early_demux_conns = on ? 1u : UINT32_MAX};
        HP_REQUIRE_EQ(hp_tcp_configure(p.s[1], &tc), 0);
        enum { N = 64 };
        struct hp_udp_sock *c[2][N], *sv[2][N];
        for (int fam = 0; fam < 2; fam++)
            for (int i = 0; i < N; i++) {
                int family = fam ? 6 : 4;
                uint16_t port = (uint16_t)(5000 + 100 * fam + i);
                c[fam][i] = hp_udp_open(p.s[0], family, NULL);
                sv[fam][i] = hp_udp_open(p.s[1], family, NULL);
                HP_REQUIRE(c[fam][i] && sv[fam][i]);
                struct hp_sockaddr ca = sa(family, 0, port), saddr = sa(family, 1, port);
                HP_REQUIRE_EQ(hp_udp_bind(c[fam][i], &ca), 0);
                HP_REQUIRE_EQ(hp_udp_bind(sv[fam][i], &saddr), 0);
                HP_REQUIRE_EQ(hp_udp_connect(c[fam][i], &saddr), 0);
            }
        /* Resolve the neighbours first: one datagram each family. */
        for (int fam = 0; fam < 2; fam++) {
            uint32_t v = 0;
            HP_REQUIRE_EQ(hp_udp_sendto(c[fam][0], &v, sizeof v, NULL), (int)sizeof v);
            pump(&p);
            HP_REQUIRE_EQ(hp_udp_recvfrom(sv[fam][0], &v, sizeof v, NULL), (int)sizeof v);
        }
        p.s[1]->sock->udp_early_prefetches = 0;
        unsigned bad = 0, got = 0;
        for (int round = 0; round < 3; round++) {
            /* Send everything before the server polls: bursts of 32 form. */
            for (int fam = 0; fam < 2; fam++)
                for (int i = 0; i < N; i++) {
                    uint32_t v = (uint32_t)(round << 16 | fam << 8 | i);
                    HP_REQUIRE_EQ(hp_udp_sendto(c[fam][i], &v, sizeof v, NULL), (int)sizeof v);
                }
            /* And two to a port nobody has. */
            struct hp_udp_sock *x = hp_udp_open(p.s[0], 4, NULL);
            struct hp_sockaddr closed = sa(4, 1, 4999);
            HP_REQUIRE_EQ(hp_udp_sendto(x, "x", 1, &closed), 1);
            HP_REQUIRE_EQ(hp_udp_sendto(x, "y", 1, &closed), 1);
            hp_udp_close(x);
            hp_stack_poll(p.s[0]);
            pump(&p);
            for (int fam = 0; fam < 2; fam++)
                for (int i = 0; i < N; i++) {
                    uint32_t w = 0;
                    if (hp_udp_recvfrom(sv[fam][i], &w, sizeof w, NULL) != (int)sizeof w ||
                        w != (uint32_t)(round << 16 | fam << 8 | i))
                        bad++;
                    else
                        got++;
                }
        }
        HP_CHECK_EQ(bad, 0u);
        HP_CHECK_EQ(got, 3u * 2 * N);
        HP_CHECK_EQ(hp_stack_counter(p.s[1], HP_CTR_UDP_NO_PORTS), 6u);
        uint64_t pre = p.s[1]->sock->udp_early_prefetches;
        if (on)
            HP_CHECK_GE(pre, (uint64_t)(3 * 2 * N) /
                                 2); /* most: the first frame of a burst is not peeked alone */
        else
            HP_CHECK_EQ(pre, 0u);
        for (int fam = 0; fam < 2; fam++)
            for (int i = 0; i < N; i++) {
                hp_udp_close(c[fam][i]);
                hp_udp_close(sv[fam][i]);
            }
        pair_down(&p);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* SO_REUSEADDR: a socket connected to one client and a listener on the
 * same port (iperf3's UDP server): the client's datagrams go to the
 * connected socket, a new client's to the listener; without reuse on both,
 * the second bind is refused. */
HP_TEST(udp_e2e_reuseaddr_connected_and_listener)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p), 0);
    struct hp_sockaddr any = sa(4, -1, 5201), cli1 = sa(4, 0, 4001), cli2 = sa(4, 0, 4002);
    struct hp_udp_sock *s1 = hp_udp_open(p.s[1], 4, NULL), *s2 = hp_udp_open(p.s[1], 4, NULL);
    struct hp_udp_sock *plain = hp_udp_open(p.s[1], 4, NULL);
    HP_CHECK_EQ(hp_udp_set_reuseaddr(s1, true), 0);
    HP_CHECK_EQ(hp_udp_set_reuseaddr(s2, true), 0);
    HP_CHECK_EQ(hp_udp_bind(s1, &any), 0);
    HP_CHECK_EQ(hp_udp_set_reuseaddr(s1, false), -EINVAL); /* bound already */
    HP_CHECK_EQ(hp_udp_bind(plain, &any), -EADDRINUSE);
    HP_CHECK_EQ(hp_udp_connect(s1, &cli1), 0);
    HP_CHECK_EQ(hp_udp_bind(s2, &any), 0);
    struct hp_udp_sock *c1 = hp_udp_open(p.s[0], 4, NULL), *c2 = hp_udp_open(p.s[0], 4, NULL);
    HP_CHECK_EQ(hp_udp_bind(c1, &cli1), 0);
    HP_CHECK_EQ(hp_udp_bind(c2, &cli2), 0);
    struct hp_sockaddr srv = sa(4, 1, 5201);
    HP_CHECK_EQ(hp_udp_sendto(c1, "one", 3, &srv), 3);
    HP_CHECK_EQ(hp_udp_sendto(c2, "two", 3, &srv), 3);
    pump(&p);
    char b[8];
    HP_CHECK_EQ(hp_udp_recvfrom(s1, b, sizeof b, NULL), 3);
    HP_CHECK_EQ(memcmp(b, "one", 3), 0);
    HP_CHECK_EQ(hp_udp_recvfrom(s2, b, sizeof b, NULL), 3);
    HP_CHECK_EQ(memcmp(b, "two", 3), 0);
    HP_CHECK_EQ(hp_udp_recvfrom(s1, b, sizeof b, NULL), -EAGAIN);
    hp_udp_close(s1);
    hp_udp_close(s2);
    hp_udp_close(plain);
    hp_udp_close(c1);
    hp_udp_close(c2);
    pair_down(&p);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
