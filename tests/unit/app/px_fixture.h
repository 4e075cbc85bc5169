/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's unit-test fixture: the layer on stack A of a mem pair, a peer stack B driven with it, and helpers that call the layer like the C library would. */
#ifndef HP_TEST_PX_FIXTURE_H
#define HP_TEST_PX_FIXTURE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

#include "app/posix_internal.h"

/* A: the layer's stack, 198.18.0.1/24 and 2001:2::1/64; B: the peer,
 * 198.18.0.2/24 and 2001:2::2/64 (no duplicate address detection). */
struct px_fix {
    struct hp_link *e[2];
    struct hp_stack *a, *b;
    /* Called after each poll of B (the signal tests send from here). */
    void (*peer_hook)(void);
    /* While set, B is not polled (a handshake stays in progress). */
    bool peer_paused;
};
extern struct px_fix fx;

/* Make both stacks and attach A to the layer. 0, or -1 (the test fails). */
int fx_up(void);
/* Close every layer fd the test left, tear the layer down and destroy both
 * stacks (the teardown then checks that no buffer is in use). */
void fx_down(void);

/* The C library's conventions over hp__px_*: -1 and errno. */
int fx_ret(long r);

/* Addresses: a sockaddr_in / sockaddr_in6 of side (0: A, 1: B, -1: any). */
struct sockaddr_in fx_sin(int side, uint16_t port);
struct sockaddr_in6 fx_sin6(int side, uint16_t port);
/* IPv4-mapped IPv6 address of side's IPv4 address. */
struct sockaddr_in6 fx_sin6_mapped(int side, uint16_t port);
struct hp_sockaddr fx_hp(int family, int side, uint16_t port);

/* Drive the layer (and with it B) n rounds. */
void fx_drive(int n);
/* B listens on port (both families). */
struct hp_tcp_sock *fx_peer_listen(int family, uint16_t port);
/* B accepts one connection, driving up to a second. */
struct hp_tcp_sock *fx_peer_accept(struct hp_tcp_sock *l);
/* A layer TCP socket (blocking unless flags has SOCK_NONBLOCK) connected
 * to B's port; *peer: B's end. -1 on failure. */
int fx_connected(int family, int flags, uint16_t port, struct hp_tcp_sock **peer);
/* Read from B's end until len bytes came or a second passed. */
long fx_peer_read(struct hp_tcp_sock *t, void *buf, size_t len);
/* Whether B's end saw the end of the stream (0 from recv) within a second. */
bool fx_peer_eof(struct hp_tcp_sock *t);

#endif
