/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: whole frames into a stack with UDP sockets open, one at a time or in bursts; nothing may crash, leak or keep a buffer. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

/*
 * Input: frames, each a 2-byte big-endian length then that many bytes (a
 * length past the end takes what is left). Each frame is transmitted from
 * the peer end of a mem pair into the stack, which is then polled; what the
 * stack sends back and what its sockets receive is drained and freed (port
 * 7 echoes with send_buf, so the output path runs too). A length with its
 * top bit set (0x8000 | length) holds the poll: the frame waits in the ring
 * with those after it until a frame without the bit (or the input's end), so
 * the stack takes them in one receive burst. An input of odd size turns
 * early demultiplexing on from the first bound socket (early_demux_conns 1),
 * so a burst's frames are peeked at before they are parsed (stack.c
 * rx_peek, udp.c hp__udp_early).
 *
 * The stack's MAC changes with every pair, so the seeds use placeholders:
 * a destination of 02:00:00:00:00:01 becomes the stack's MAC, and the same
 * bytes as ARP or NDP target link-layer addresses are left alone.
 *
 * Every input gets a new stack (created, used, destroyed), so inputs do not
 * affect each other; the only state across inputs is the pool, which must
 * be empty again after each one. Time is the real clock: timers (ARP
 * retries, reassembly timeouts) do not fire within one input in practice.
 */

#define MAX_FRAMES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hp_pool *pool;

static const uint8_t PLACEHOLDER[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t IP4[4] = {198, 18, 0, 2}, PEER4[4] = {198, 18, 0, 1};
static const uint8_t IP6[16] = {0x20, 0x01, 0, 2, [15] = 2};

static void fail(const char *what)
{
    fprintf(stderr, "stack_fuzz: %s\n", what);
    abort();
}

static void drain_link(struct hp_link *l)
{
    struct hp_buf *b[32];
    int n;
    while ((n = hp_link_rx_burst(l, b, 32)) > 0)
        hp_buf_free_bulk(b, (unsigned)n);
}

static void drain_socks(struct hp_udp_sock **u, int n)
{
    for (int i = 0; i < n; i++) {
        struct hp_buf *b;
        struct hp_sockaddr from;
        char tmp[64];
        if (i < 2) {
            /* Echo sockets: the buffer goes back out. */
            while (hp_udp_recv_buf(u[i], &b, &from) >= 0)
                if (hp_udp_send_buf(u[i], b, &from) < 0)
                    hp_buf_free(b);
        } else {
            while (hp_udp_recvfrom(u[i], tmp, sizeof tmp, &from) >= 0)
                ;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!pool) {
        struct hp_pool_config pc = {.name = "stack_fuzz", .n_bufs = 2048};
        pool = hp_pool_create(&pc);
        if (!pool)
            fail("no pool");
    }
    struct hp_link *e[2];
    struct hp_link_config lc = {.pool = pool, .ring_size = 256};
    if (hp_link_mem_pair(&lc, e) < 0)
        fail("no mem pair");
    struct hp_stack_config sc = {.name = "fuzz", .flags = HP_STACK_F_NO_DAD};
    struct hp_stack *s = hp_stack_create(&sc);
    if (!s)
        fail("no stack");
    if (size & 1) {
        struct hp_tcp_config tc = {.early_demux_conns = 1};
        if (hp_tcp_configure(s, &tc) < 0)
            fail("hp_tcp_configure");
    }
    int ifx = hp_stack_add_iface(s, e[0]);
    if (ifx < 0 || hp_stack_add_addr(s, ifx, 4, IP4, 24) < 0 ||
        hp_stack_add_addr(s, ifx, 6, IP6, 64) < 0)
        fail("stack setup");
    uint8_t mac[6];
    hp_link_mac(e[0], mac);

    /* Echo on 7 (both families), copy-and-drop on 53, and a socket
     * connected to the peer's port 7. */
    struct hp_udp_sock *u[5];
    u[0] = hp_udp_open(s, 4, NULL);
    u[1] = hp_udp_open(s, 6, NULL);
    u[2] = hp_udp_open(s, 4, NULL);
    u[3] = hp_udp_open(s, 6, NULL);
    u[4] = hp_udp_open(s, 4, NULL);
    for (int i = 0; i < 5; i++)
        if (!u[i])
            fail("udp open");
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = 4, a.port = 7;
    hp_udp_bind(u[0], &a);
    a.port = 53;
    hp_udp_bind(u[2], &a);
    a.family = 6, a.port = 7;
    hp_udp_bind(u[1], &a);
    a.port = 53;
    hp_udp_bind(u[3], &a);
    hp_udp_set_rcvq(u[2], 4);
    struct hp_sockaddr peer = {.family = 4, .port = 7};
    memcpy(peer.addr, PEER4, 4);
    hp_udp_connect(u[4], &peer);

    size_t off = 0;
    for (int f = 0; f < MAX_FRAMES && off + 2 <= size; f++) {
        size_t len = (size_t)(data[off] & 0x7F) << 8 | data[off + 1];
        bool hold = data[off] & 0x80;
        off += 2;
        if (len > size - off)
            len = size - off;
        struct hp_buf *b = hp_buf_alloc(pool);
        if (!b)
            fail("pool empty: a buffer leaked within the input");
        uint32_t room = hp_buf_tailroom(b);
        uint32_t n = len < room ? (uint32_t)len : room;
        uint8_t *p = hp_buf_append(b, n);
        memcpy(p, data + off, n);
        off += len;
        if (n >= 6 && memcmp(p, PLACEHOLDER, 6) == 0)
            memcpy(p, mac, 6);
        if (hp_link_tx_burst(e[1], &b, 1) != 1)
            hp_buf_free(b);
        if (hold && off < size)
            continue;
        hp_stack_poll(s);
        drain_socks(u, 5);
        hp_stack_poll(s);
        drain_link(e[1]);
        /* Something of our own now and then: the send path with whatever
         * state the frames left (a resolved or pending neighbour). */
        if (f % 8 == 7)
            hp_udp_sendto(u[4], data, size < 100 ? size : 100, NULL);
    }
    /* Frames still held when the input ran out of frames (MAX_FRAMES), in
     * as many bursts as they take. */
    for (int i = 0; i < MAX_FRAMES / 16; i++) {
        hp_stack_poll(s);
        drain_socks(u, 5);
        drain_link(e[1]);
    }
    for (int i = 0; i < 5; i++)
        hp_udp_close(u[i]);
    hp_stack_destroy(s);
    drain_link(e[1]);
    drain_link(e[0]);
    if (hp_link_close(e[0]) < 0 || hp_link_close(e[1]) < 0)
        fail("link close");
    hp_pool_thread_flush(pool);
    if (hp_pool_in_use(pool) != 0) {
        fprintf(stderr, "stack_fuzz: %ld buffers still in use after the input\n",
                hp_pool_in_use(pool));
        abort();
    }
    return 0;
}
