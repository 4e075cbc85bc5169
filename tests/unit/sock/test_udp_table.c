/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP sockets without the IP layer: binds, ephemeral ports, lookup, checksums, queues and events, fed by hp__udp_input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>
#include <hotpath/udp.h>

#include "hp_test.h"
#include "net/internal.h"
#include "sock/internal.h"

/* A stack built by hand around one interface: enough for the sock layer,
 * which only reads the interface's addresses and counters here. */
struct fake {
    struct hp_stack s;
    struct hp__iface ifc;
    struct hp_pool *pool;
};

static const uint8_t A4[4] = {198, 18, 0, 2}, P4[4] = {198, 18, 0, 1}, O4[4] = {198, 18, 0, 3};
static const uint8_t A6[16] = {0x20, 0x01, 0, 2, [15] = 2}, P6[16] = {0x20, 0x01, 0, 2, [15] = 1};

static struct fake *fake_new(void)
{
    struct fake *f = calloc(1, sizeof *f);
    struct hp_pool_config pc = {.name = "sockt", .n_bufs = 512};
    f->pool = hp_pool_create(&pc);
    if (!f->pool || hp__sock_init(&f->s) < 0) {
        hp_pool_destroy(f->pool);
        free(f);
        return NULL;
    }
    f->ifc.s = &f->s;
    f->ifc.pool = f->pool;
    f->ifc.mtu = 1500;
    memcpy(f->ifc.v4[0].addr, A4, 4);
    f->ifc.v4[0].plen = 24;
    f->ifc.n4 = 1;
    memcpy(f->ifc.v6[0].addr, A6, 16);
    f->ifc.v6[0].plen = 64;
    f->ifc.v6[0].state = HP_ADDR_PREFERRED;
    f->ifc.n6 = 1;
    f->s.ifaces[0] = &f->ifc;
    f->s.nifaces = 1;
    return f;
}

static void fake_free(struct fake *f)
{
    hp__sock_fini(&f->s);
    hp_pool_thread_flush(f->pool);
    HP_CHECK_EQ(hp_pool_destroy(f->pool), 0);
    free(f);
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

/* A datagram as the IP layer hands it up: data offset at the UDP header,
 * an IP header's worth of bytes in front (l3_len). cksum: 1 computes it,
 * 0 leaves 0, 2 computes it and then spoils it. */
static struct hp_buf *dgram(struct fake *f, int family, const uint8_t *src, uint16_t sport,
                            const uint8_t *dst, uint16_t dport, const void *payload, size_t len,
                            int cksum)
{
    struct hp_buf *b = hp_buf_alloc(f->pool);
    if (!b)
        return NULL;
    uint8_t *u = hp_buf_append(b, (uint32_t)(8 + len));
    hp_put_be16(u, sport);
    hp_put_be16(u + 2, dport);
    hp_put_be16(u + 4, (uint16_t)(8 + len));
    u[6] = u[7] = 0;
    memcpy(u + 8, payload, len);
    if (cksum) {
        uint16_t c =
            family == 4 ? hp_cksum_udp4(src, dst, u, 8 + len) : hp_cksum_udp6(src, dst, u, 8 + len);
        if (cksum == 2)
            c ^= 0x0101;
        memcpy(u + 6, &c, 2);
    }
    b->l3_len = family == 4 ? 20 : 40;
    return b;
}

static void input(struct fake *f, int family, const uint8_t *src, uint16_t sport,
                  const uint8_t *dst, uint16_t dport, const char *text, int cksum)
{
    struct hp_buf *b = dgram(f, family, src, sport, dst, dport, text, strlen(text), cksum);
    if (b)
        hp__udp_input(&f->ifc, b, family, src, dst);
}

static uint64_t ctr(struct fake *f, enum hp_stack_ctr c)
{
    return f->s.ctr[c];
}

HP_TEST(udp_open_bad_args)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    errno = 0;
    HP_CHECK(hp_udp_open(&f->s, 5, NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(hp_udp_open(NULL, 4, NULL) == NULL);
    HP_CHECK_EQ(hp_udp_close(NULL), 0);
    struct hp_udp_sock *u = hp_udp_open(&f->s, 4, NULL);
    HP_REQUIRE(u != NULL);
    struct hp_sockaddr l;
    hp_udp_local(u, &l);
    HP_CHECK_EQ(l.family, 4);
    HP_CHECK_EQ(l.port, 0);
    struct hp_sockaddr six = sa(6, NULL, 7);
    HP_CHECK_EQ(hp_udp_bind(u, &six), -EINVAL); /* wrong family */
    struct hp_sockaddr other = sa(4, O4, 7);
    HP_CHECK_EQ(hp_udp_bind(u, &other), -EADDRNOTAVAIL); /* not ours */
    struct hp_sockaddr any = sa(4, NULL, 7);
    HP_CHECK_EQ(hp_udp_bind(u, &any), 0);
    HP_CHECK_EQ(hp_udp_bind(u, &any), -EINVAL); /* already bound */
    HP_CHECK_EQ(hp_udp_set_rcvq(u, 0), -EINVAL);
    char buf[4];
    HP_CHECK_EQ(hp_udp_recvfrom(u, buf, sizeof buf, NULL), -EAGAIN);
    struct hp_buf *b;
    HP_CHECK_EQ(hp_udp_recv_buf(u, &b, NULL), -EAGAIN);
    HP_CHECK_EQ(hp_udp_sendto(u, "x", 1, NULL), -EDESTADDRREQ);
    HP_CHECK_EQ(hp_udp_sendto(u, buf, 65508, &other), -EMSGSIZE);
    struct hp_sockaddr port0 = sa(4, P4, 0);
    HP_CHECK_EQ(hp_udp_connect(u, &port0), -EINVAL);
    HP_CHECK_EQ(hp_udp_connect(u, &six), -EINVAL);
    hp_udp_close(u);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_bind_conflicts)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    struct hp_udp_sock *a = hp_udp_open(&f->s, 4, NULL), *b = hp_udp_open(&f->s, 4, NULL),
                       *c = hp_udp_open(&f->s, 4, NULL), *d = hp_udp_open(&f->s, 6, NULL);
    HP_REQUIRE(a && b && c && d);
    struct hp_sockaddr exact = sa(4, A4, 5000), any = sa(4, NULL, 5000), any6 = sa(6, NULL, 5000);
    HP_CHECK_EQ(hp_udp_bind(a, &exact), 0);
    HP_CHECK_EQ(hp_udp_bind(b, &exact), -EADDRINUSE); /* same address and port */
    HP_CHECK_EQ(hp_udp_bind(b, &any), -EADDRINUSE);   /* the wildcard covers it */
    HP_CHECK_EQ(hp_udp_bind(d, &any6), 0);            /* IPv6 has its own ports */
    struct hp_sockaddr other = sa(4, NULL, 5001);
    HP_CHECK_EQ(hp_udp_bind(b, &other), 0);
    struct hp_sockaddr exact2 = sa(4, A4, 5001);
    HP_CHECK_EQ(hp_udp_bind(c, &exact2), -EADDRINUSE); /* b holds the wildcard */
    hp_udp_close(a);
    /* Closing frees the port. */
    HP_CHECK_EQ(hp_udp_bind(c, &any), 0);
    struct hp_sockaddr l;
    hp_udp_local(c, &l);
    HP_CHECK_EQ(l.port, 5000);
    hp_udp_close(b);
    hp_udp_close(c);
    hp_udp_close(d);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_ephemeral_ports)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    enum { N = 300 };
    struct hp_udp_sock *u[N];
    uint8_t seen[16384] = {0};
    for (int i = 0; i < N; i++) {
        u[i] = hp_udp_open(&f->s, i % 2 ? 6 : 4, NULL);
        HP_REQUIRE(u[i] != NULL);
        struct hp_sockaddr any = sa(i % 2 ? 6 : 4, NULL, 0);
        HP_REQUIRE_EQ(hp_udp_bind(u[i], &any), 0);
        struct hp_sockaddr l;
        hp_udp_local(u[i], &l);
        HP_CHECK_GE(l.port, 49152);
        HP_CHECK(seen[l.port - 49152] == 0 || i % 2); /* distinct within a family */
        if (i % 2 == 0)
            seen[l.port - 49152] = 1;
    }
    /* connect binds an unbound socket to an ephemeral port. */
    struct hp_udp_sock *cn = hp_udp_open(&f->s, 4, NULL);
    struct hp_sockaddr peer = sa(4, P4, 9);
    HP_REQUIRE_EQ(hp_udp_connect(cn, &peer), 0);
    struct hp_sockaddr l;
    hp_udp_local(cn, &l);
    HP_CHECK_GE(l.port, 49152);
    hp_udp_close(cn);
    for (int i = 0; i < N; i++)
        hp_udp_close(u[i]);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_lookup_exact_wildcard_connected)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    /* A second address on the interface. */
    static const uint8_t B4[4] = {198, 18, 0, 20};
    memcpy(f->ifc.v4[1].addr, B4, 4);
    f->ifc.v4[1].plen = 24;
    f->ifc.n4 = 2;
    int tag_exact = 1, tag_wild = 2, tag_conn = 3;
    struct hp_udp_sock *ex = hp_udp_open(&f->s, 4, &tag_exact);
    struct hp_udp_sock *wi = hp_udp_open(&f->s, 4, &tag_wild);
    struct hp_udp_sock *co = hp_udp_open(&f->s, 4, &tag_conn);
    HP_REQUIRE(ex && wi && co);
    struct hp_sockaddr e = sa(4, A4, 53), w = sa(4, NULL, 54), c = sa(4, B4, 53);
    HP_REQUIRE_EQ(hp_udp_bind(ex, &e), 0);
    HP_REQUIRE_EQ(hp_udp_bind(wi, &w), 0);
    HP_REQUIRE_EQ(hp_udp_bind(co, &c), 0);
    struct hp_sockaddr peer = sa(4, P4, 1000);
    HP_REQUIRE_EQ(hp_udp_connect(co, &peer), 0);

    input(f, 4, P4, 1000, A4, 53, "to-exact", 1);
    input(f, 4, P4, 1000, B4, 54, "to-wild-b", 1);
    input(f, 4, P4, 1000, A4, 54, "to-wild-a", 1);
    input(f, 4, P4, 1000, B4, 53, "to-conn", 1);
    input(f, 4, P4, 1001, B4, 53, "wrong-port", 1); /* not the connected peer: no socket */
    input(f, 4, O4, 1000, B4, 53, "wrong-addr", 1);
    input(f, 4, P4, 1000, A4, 55, "closed", 1);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_DATAGRAMS), 4);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_NO_PORTS), 3);

    char buf[32];
    struct hp_sockaddr from;
    int n = hp_udp_recvfrom(ex, buf, sizeof buf, &from);
    HP_REQUIRE_EQ(n, 8);
    HP_CHECK_MEMEQ(buf, "to-exact", 8);
    HP_CHECK_EQ(from.family, 4);
    HP_CHECK_EQ(from.port, 1000);
    HP_CHECK_MEMEQ(from.addr, P4, 4);
    HP_CHECK_EQ(hp_udp_recvfrom(wi, buf, sizeof buf, NULL), 9);
    HP_CHECK_MEMEQ(buf, "to-wild-b", 9);
    HP_CHECK_EQ(hp_udp_recvfrom(wi, buf, sizeof buf, NULL), 9);
    HP_CHECK_MEMEQ(buf, "to-wild-a", 9);
    HP_CHECK_EQ(hp_udp_recvfrom(co, buf, sizeof buf, NULL), 7);
    HP_CHECK_MEMEQ(buf, "to-conn", 7);
    HP_CHECK_EQ(hp_udp_recvfrom(co, buf, sizeof buf, NULL), -EAGAIN);

    /* An exact binding wins over a wildcard on the same port. */
    struct hp_udp_sock *w2 = hp_udp_open(&f->s, 4, NULL), *e2 = hp_udp_open(&f->s, 4, NULL);
    struct hp_sockaddr pw = sa(4, NULL, 60);
    HP_REQUIRE_EQ(hp_udp_bind(w2, &pw), 0);
    /* The wildcard holds the port, so an exact bind is refused (no address
     * sharing): check the preference with the exact one bound first. */
    hp_udp_close(w2);
    struct hp_sockaddr pe = sa(4, A4, 60);
    HP_REQUIRE_EQ(hp_udp_bind(e2, &pe), 0);
    input(f, 4, P4, 7, A4, 60, "x", 1);
    HP_CHECK_EQ(hp_udp_recvfrom(e2, buf, sizeof buf, NULL), 1);
    input(f, 4, P4, 7, B4, 60, "y", 1); /* the other address: nobody */
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_NO_PORTS), 4);
    hp_udp_close(e2);

    hp_udp_close(ex);
    hp_udp_close(wi);
    hp_udp_close(co);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_checksums_and_lengths)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    struct hp_udp_sock *u4 = hp_udp_open(&f->s, 4, NULL), *u6 = hp_udp_open(&f->s, 6, NULL);
    struct hp_sockaddr a4 = sa(4, NULL, 7), a6 = sa(6, NULL, 7);
    HP_REQUIRE_EQ(hp_udp_bind(u4, &a4), 0);
    HP_REQUIRE_EQ(hp_udp_bind(u6, &a6), 0);
    char buf[32];

    input(f, 4, P4, 9, A4, 7, "bad", 2);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_CSUM_ERRORS), 1);
    HP_CHECK_EQ(hp_udp_recvfrom(u4, buf, sizeof buf, NULL), -EAGAIN);
    input(f, 4, P4, 9, A4, 7, "none", 0); /* IPv4: zero means none sent (RFC 768) */
    HP_CHECK_EQ(hp_udp_recvfrom(u4, buf, sizeof buf, NULL), 4);
    input(f, 6, P6, 9, A6, 7, "zero", 0); /* IPv6: zero is invalid (RFC 8200 8.1) */
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_CSUM_ERRORS), 2);
    HP_CHECK_EQ(hp_udp_recvfrom(u6, buf, sizeof buf, NULL), -EAGAIN);
    input(f, 6, P6, 9, A6, 7, "bad6", 2);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_CSUM_ERRORS), 3);
    input(f, 6, P6, 9, A6, 7, "good6", 1);
    HP_CHECK_EQ(hp_udp_recvfrom(u6, buf, sizeof buf, NULL), 5);
    HP_CHECK_MEMEQ(buf, "good6", 5);

    /* Truncated: the length field says more than there is. */
    struct hp_buf *b = dgram(f, 4, P4, 9, A4, 7, "abcd", 4, 0);
    HP_REQUIRE(b != NULL);
    hp_put_be16((uint8_t *)hp_buf_data(b) + 4, 40);
    hp__udp_input(&f->ifc, b, 4, P4, A4);
    /* Length field below 8. */
    b = dgram(f, 4, P4, 9, A4, 7, "abcd", 4, 0);
    hp_put_be16((uint8_t *)hp_buf_data(b) + 4, 7);
    hp__udp_input(&f->ifc, b, 4, P4, A4);
    /* Destination port 0. */
    input(f, 4, P4, 9, A4, 0, "p0", 1);
    /* Padding after the length field is not payload (RFC 768). */
    b = dgram(f, 4, P4, 9, A4, 7, "abcdPADPAD", 10, 0);
    hp_put_be16((uint8_t *)hp_buf_data(b) + 4, 12);
    hp__udp_input(&f->ifc, b, 4, P4, A4);
    HP_CHECK_EQ(hp_udp_recvfrom(u4, buf, sizeof buf, NULL), 4);
    HP_CHECK_MEMEQ(buf, "abcd", 4);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_ERRORS), 3 + 3); /* 3 checksum + 3 malformed */
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_DATAGRAMS), 3);

    hp_udp_close(u4);
    hp_udp_close(u6);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A reassembled datagram arrives as a chain cut at odd places: the checksum
 * is verified over every segment. */
HP_TEST(udp_chained_input)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    struct hp_udp_sock *u = hp_udp_open(&f->s, 6, NULL);
    struct hp_sockaddr a = sa(6, NULL, 7);
    HP_REQUIRE_EQ(hp_udp_bind(u, &a), 0);
    static uint8_t payload[5000], got[5000];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    /* Cut points; the rest goes in segments of at most 1800 bytes. */
    static const uint32_t cuts[][3] = {{3, 1001, 1777},
                                       {8, 9, 10},
                                       {1000, 2001, 3501},
                                       {4, 1500, 1501}};
    for (int spoil = 0; spoil < 2; spoil++)
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
            /* Build the whole datagram, then split it. */
            uint8_t whole[5008];
            whole[0] = 0, whole[1] = 9, whole[2] = 0, whole[3] = 7;
            hp_put_be16(whole + 4, sizeof whole);
            whole[6] = whole[7] = 0;
            memcpy(whole + 8, payload, sizeof payload);
            uint16_t c = hp_cksum_udp6(P6, A6, whole, sizeof whole);
            if (spoil)
                c ^= 0x0400;
            memcpy(whole + 6, &c, 2);
            uint32_t edges[16] = {0, cuts[k][0], cuts[k][1], cuts[k][2]};
            int ne = 4;
            while (edges[ne - 1] < sizeof whole) {
                uint32_t e = edges[ne - 1] + 1800;
                edges[ne++] = e < sizeof whole ? e : (uint32_t)sizeof whole;
            }
            struct hp_buf *head = NULL;
            for (int i = 0; i + 1 < ne; i++) {
                struct hp_buf *seg = hp_buf_alloc(f->pool);
                HP_REQUIRE(seg != NULL);
                uint8_t *d = hp_buf_append(seg, edges[i + 1] - edges[i]);
                HP_REQUIRE(d != NULL);
                memcpy(d, whole + edges[i], edges[i + 1] - edges[i]);
                if (!head)
                    head = seg;
                else
                    HP_REQUIRE_EQ(hp_buf_chain(head, seg), 0);
            }
            head->l3_len = 40;
            hp__udp_input(&f->ifc, head, 6, P6, A6);
            struct hp_buf *r = NULL;
            int n = hp_udp_recv_buf(u, &r, NULL);
            if (spoil) {
                HP_CHECK_EQ(n, -EAGAIN);
                continue;
            }
            HP_REQUIRE_EQ(n, 5000);
            HP_REQUIRE_EQ(hp_buf_copy_out(r, 0, 5000, got), 0);
            HP_CHECK_MEMEQ(got, payload, 5000);
            hp_buf_free(r);
        }
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_CSUM_ERRORS), 4);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_DATAGRAMS), 4);
    hp_udp_close(u);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_rcvq_overflow_and_close_frees)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    struct hp_udp_sock *u = hp_udp_open(&f->s, 4, NULL);
    struct hp_sockaddr a = sa(4, NULL, 7);
    HP_REQUIRE_EQ(hp_udp_bind(u, &a), 0);
    HP_REQUIRE_EQ(hp_udp_set_rcvq(u, 4), 0);
    for (int i = 0; i < 10; i++)
        input(f, 4, P4, 9, A4, 7, "q", 1);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_IN_DATAGRAMS), 4);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_RCVBUF_ERRORS), 6);
    /* Growing the queue keeps what is queued, in order. */
    HP_REQUIRE_EQ(hp_udp_set_rcvq(u, 300), 0);
    char buf[2];
    HP_CHECK_EQ(hp_udp_recvfrom(u, buf, 1, NULL), 1);
    for (int i = 0; i < 300; i++)
        input(f, 4, P4, 9, A4, 7, "r", 1);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_RCVBUF_ERRORS), 6 + 3);
    /* Shrinking below what is queued: nothing lost, nothing more taken. */
    HP_REQUIRE_EQ(hp_udp_set_rcvq(u, 2), 0);
    input(f, 4, P4, 9, A4, 7, "s", 1);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_RCVBUF_ERRORS), 6 + 4);
    int n = 0;
    while (hp_udp_recvfrom(u, buf, 1, NULL) == 1)
        n++;
    HP_CHECK_EQ(n, 300);
    /* Close with datagrams queued: they go back to the pool. */
    for (int i = 0; i < 2; i++)
        input(f, 4, P4, 9, A4, 7, "t", 1);
    HP_CHECK_EQ(hp_pool_in_use(f->pool), 2);
    hp_udp_close(u);
    HP_CHECK_EQ(hp_pool_in_use(f->pool), 0);
    /* And sockets left open are closed by fini, their queues freed. */
    struct hp_udp_sock *v = hp_udp_open(&f->s, 4, NULL);
    HP_REQUIRE_EQ(hp_udp_bind(v, &a), 0);
    input(f, 4, P4, 9, A4, 7, "u", 1);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A datagram to port 7 from P4:9 carrying v; false without a buffer. */
static bool input_u32(struct fake *f, uint32_t v)
{
    struct hp_buf *b = dgram(f, 4, P4, 9, A4, 7, &v, sizeof v, 1);
    if (b)
        hp__udp_input(&f->ifc, b, 4, P4, A4);
    return b != NULL;
}

/* The receive queue starts inside the socket and grows on the heap as
 * datagrams wait: whatever the ring's position when it grows (wrapped or
 * not), datagrams come out in arrival order; an emptied queue starts again
 * at its first entry; the bound still drops the excess, counted. */
HP_TEST(udp_rcvq_grows_in_order)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    struct hp_udp_sock *u = hp_udp_open(&f->s, 4, NULL);
    struct hp_sockaddr a = sa(4, NULL, 7);
    HP_REQUIRE_EQ(hp_udp_bind(u, &a), 0);
    unsigned sent = 0, got = 0, bad = 0;
    uint32_t v;
    /* Ping-pong: one waits at a time. */
    for (int i = 0; i < 10; i++) {
        HP_REQUIRE(input_u32(f, sent++));
        uint32_t w = 0;
        HP_REQUIRE_EQ(hp_udp_recvfrom(u, &w, sizeof w, NULL), (int)sizeof w);
        bad += w != got++;
    }
    /* Wrap the ring, then make it grow several times while wrapped: 3 in, 2
     * out, then bursts of 5, 9 and 17 with reads between. */
    static const int burst[] = {3, -2, 5, -3, 9, -7, 17, -22};
    for (size_t k = 0; k < sizeof burst / sizeof burst[0]; k++) {
        for (int i = 0; i < burst[k]; i++) {
            HP_REQUIRE(input_u32(f, sent++));
        }
        for (int i = 0; i < -burst[k]; i++) {
            uint32_t w = 0;
            HP_REQUIRE_EQ(hp_udp_recvfrom(u, &w, sizeof w, NULL), (int)sizeof w);
            bad += w != got++;
        }
    }
    HP_CHECK_EQ(bad, 0u);
    HP_CHECK_EQ(got, sent);
    HP_CHECK_EQ(hp_udp_recvfrom(u, &v, sizeof v, NULL), -EAGAIN);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_RCVBUF_ERRORS), 0);
    /* The default bound, 256: 300 in, 256 kept, in order. */
    for (int i = 0; i < 300; i++) {
        HP_REQUIRE(input_u32(f, (uint32_t)i));
    }
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_RCVBUF_ERRORS), 44);
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t w = UINT32_MAX;
        HP_REQUIRE_EQ(hp_udp_recvfrom(u, &w, sizeof w, NULL), (int)sizeof w);
        bad += w != i;
    }
    HP_CHECK_EQ(bad, 0u);
    HP_CHECK_EQ(hp_udp_recvfrom(u, &v, sizeof v, NULL), -EAGAIN);
    hp_udp_close(u);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(udp_events_edge)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    int t1 = 1, t2 = 2;
    struct hp_udp_sock *u = hp_udp_open(&f->s, 4, &t1), *v = hp_udp_open(&f->s, 6, &t2);
    struct hp_sockaddr a = sa(4, NULL, 7), a6 = sa(6, NULL, 7);
    HP_REQUIRE_EQ(hp_udp_bind(u, &a), 0);
    HP_REQUIRE_EQ(hp_udp_bind(v, &a6), 0);
    struct hp_event ev[8];
    /* Both writable from the start, reported once, in opening order. */
    HP_REQUIRE_EQ(hp_stack_events(&f->s, ev, 8), 2);
    HP_CHECK(ev[0].user == &t1 && ev[0].events == HP_EV_OUT);
    HP_CHECK(ev[1].user == &t2 && ev[1].events == HP_EV_OUT);
    HP_CHECK_EQ(hp_stack_events(&f->s, ev, 8), 0);
    HP_CHECK_EQ(hp_udp_poll(u), HP_EV_OUT);
    /* The queue goes non-empty: IN, once; more datagrams add no event. */
    input(f, 4, P4, 9, A4, 7, "a", 1);
    input(f, 4, P4, 9, A4, 7, "b", 1);
    HP_REQUIRE_EQ(hp_stack_events(&f->s, ev, 8), 1);
    HP_CHECK(ev[0].user == &t1 && ev[0].events == HP_EV_IN);
    input(f, 4, P4, 9, A4, 7, "c", 1);
    HP_CHECK_EQ(hp_stack_events(&f->s, ev, 8), 0);
    HP_CHECK_EQ(hp_udp_poll(u), HP_EV_IN | HP_EV_OUT);
    char buf[4];
    while (hp_udp_recvfrom(u, buf, sizeof buf, NULL) > 0)
        ;
    HP_CHECK_EQ(hp_udp_poll(u), HP_EV_OUT);
    /* Empty again: the next datagram is a new edge. */
    input(f, 4, P4, 9, A4, 7, "d", 1);
    input(f, 6, P6, 9, A6, 7, "e", 1);
    /* max bounds the batch; the rest stays for the next call. */
    HP_REQUIRE_EQ(hp_stack_events(&f->s, ev, 1), 1);
    HP_CHECK(ev[0].user == &t1);
    HP_REQUIRE_EQ(hp_stack_events(&f->s, ev, 8), 1);
    HP_CHECK(ev[0].user == &t2 && ev[0].events == HP_EV_IN);
    /* A socket closed while on the ready list leaves it. */
    hp_udp_recvfrom(u, buf, sizeof buf, NULL);
    input(f, 4, P4, 9, A4, 7, "f", 1);
    hp_udp_close(u);
    HP_CHECK_EQ(hp_stack_events(&f->s, ev, 8), 0);
    HP_CHECK_EQ(hp_stack_events(&f->s, NULL, 8), 0);
    hp_udp_close(v);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* recv_buf hands over the buffer, data offset at the payload. */
HP_TEST(udp_recv_buf_zero_copy)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    struct hp_udp_sock *u = hp_udp_open(&f->s, 4, NULL);
    struct hp_sockaddr a = sa(4, A4, 7);
    HP_REQUIRE_EQ(hp_udp_bind(u, &a), 0);
    struct hp_buf *in = dgram(f, 4, P4, 4242, A4, 7, "zero-copy", 9, 1);
    HP_REQUIRE(in != NULL);
    unsigned char *payload = (unsigned char *)hp_buf_data(in) + 8;
    hp__udp_input(&f->ifc, in, 4, P4, A4);
    struct hp_buf *b = NULL;
    struct hp_sockaddr from;
    HP_REQUIRE_EQ(hp_udp_recv_buf(u, &b, &from), 9);
    HP_CHECK(b == in);
    HP_CHECK(hp_buf_data(b) == payload);
    HP_CHECK_EQ(b->pkt_len, 9);
    HP_CHECK_EQ(from.port, 4242);
    /* Truncating receive reports the full length. */
    in = dgram(f, 4, P4, 4242, A4, 7, "0123456789", 10, 1);
    hp__udp_input(&f->ifc, in, 4, P4, A4);
    char small[4];
    HP_CHECK_EQ(hp_udp_recvfrom(u, small, sizeof small, NULL), 10);
    HP_CHECK_MEMEQ(small, "0123", 4);
    hp_buf_free(b);
    hp_udp_close(u);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The port table grows with the sockets bound: 5,000 sockets on ports that
 * share their low 10 bits in runs (a fixed 1,024-bucket table would chain
 * them), IPv4 and IPv6, connected and not; every datagram reaches its own
 * socket, binds still clash, and closing half keeps the rest reachable. */
HP_TEST(udp_port_table_grows_with_the_sockets)
{
    struct fake *f = fake_new();
    HP_REQUIRE(f != NULL);
    enum { N = 5000 };
    struct hp_udp_sock **u = calloc(N, sizeof *u);
    int *tag = calloc(N, sizeof *tag);
    HP_REQUIRE(u && tag);
    for (int i = 0; i < N && !hp_test_failed(); i++) {
        int fam = i % 3 == 2 ? 6 : 4;
        uint16_t port = (uint16_t)(2000 + (i % 50) * 1024 + i / 50); /* 50 runs 1,024 apart */
        tag[i] = i;
        u[i] = hp_udp_open(&f->s, fam, &tag[i]);
        HP_REQUIRE(u[i] != NULL);
        struct hp_sockaddr l = sa(fam, fam == 4 ? A4 : A6, port);
        HP_REQUIRE_EQ(hp_udp_bind(u[i], &l), 0);
        if (i % 2) {
            struct hp_sockaddr peer = sa(fam, fam == 4 ? P4 : P6, (uint16_t)(7000 + i));
            HP_REQUIRE_EQ(hp_udp_connect(u[i], &peer), 0);
        }
    }
    HP_CHECK_EQ(f->s.sock->udp_bound, (uint32_t)N);
    HP_CHECK_GE(f->s.sock->udp_mask + 1,
                (uint32_t)N); /* grown: at most one socket per bucket on average */
    /* A second bind of a bound port and address clashes. */
    struct hp_udp_sock *dup = hp_udp_open(&f->s, 4, NULL);
    struct hp_sockaddr again = sa(4, A4, 2000);
    HP_CHECK_EQ(hp_udp_bind(dup, &again), -EADDRINUSE);
    hp_udp_close(dup);

    for (int round = 0; round < 2 && !hp_test_failed(); round++) {
        int delivered = 0, wrong = 0;
        for (int i = 0; i < N; i++) {
            if (round == 1 && i % 4 == 0)
                continue; /* closed below */
            int fam = i % 3 == 2 ? 6 : 4;
            uint16_t port = (uint16_t)(2000 + (i % 50) * 1024 + i / 50);
            uint32_t v = (uint32_t)i;
            struct hp_buf *b = dgram(f, fam, fam == 4 ? P4 : P6, (uint16_t)(7000 + i),
                                     fam == 4 ? A4 : A6, port, &v, sizeof v, 1);
            HP_REQUIRE(b != NULL);
            hp__udp_input(&f->ifc, b, fam, fam == 4 ? P4 : P6, fam == 4 ? A4 : A6);
            uint32_t got = 0;
            if (hp_udp_recvfrom(u[i], &got, sizeof got, NULL) == (int)sizeof got && got == v)
                delivered++;
            else
                wrong++;
        }
        HP_CHECK_EQ(wrong, 0);
        HP_CHECK_EQ(delivered, round == 0 ? N : N - N / 4);
        if (round == 0)
            for (int i = 0; i < N; i += 4) {
                hp_udp_close(u[i]);
                u[i] = NULL;
            }
    }
    HP_CHECK_EQ(f->s.sock->udp_bound, (uint32_t)(N - N / 4));
    /* A datagram for a closed socket's port finds nobody. */
    uint64_t noport = ctr(f, HP_CTR_UDP_NO_PORTS);
    input(f, 4, P4, 7000, A4, 2000, "gone", 1);
    HP_CHECK_EQ(ctr(f, HP_CTR_UDP_NO_PORTS), noport + 1);
    for (int i = 0; i < N; i++)
        if (u[i])
            hp_udp_close(u[i]);
    HP_CHECK_EQ(f->s.sock->udp_bound, 0u);
    free(u);
    free(tag);
    fake_free(f);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
