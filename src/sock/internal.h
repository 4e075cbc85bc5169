/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the sock layer: the per-stack socket state and the readiness list. */
#ifndef HOTPATH_SOCK_INTERNAL_H
#define HOTPATH_SOCK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <hotpath/sock.h>

#include "../net/internal.h"

/*
 * Readiness (events.c). Every socket embeds one hp__sock_ev; a socket with
 * events not yet reported sits on the stack's ready list, once, in the
 * order it became ready. hp_stack_events() takes sockets off the list from
 * its head. The list is singly linked (24 bytes a socket, not 32): only a
 * socket closed while queued has to be looked for (hp__sock_ev_remove
 * walks the list), and hp_stack_events has taken most off before their
 * owners close them.
 */
#define HP__EV_QUEUED 0x80000000u /* in pending: on the ready list */
struct hp__sock_ev {
    struct hp__sock_ev *next; /* on the ready list when queued */
    void *user;
    uint32_t pending; /* HP_EV_* not yet reported, and HP__EV_QUEUED */
};

/* The UDP port table's buckets (powers of two): it starts at the minimum and
 * doubles whenever there are more bound sockets than buckets, up to one
 * bucket per port, so a lookup walks about one socket however many are bound. */
#define HP__UDP_HASH_MIN 1024u
#define HP__UDP_HASH_MAX 65536u

struct hp_udp_sock;
struct hp__tcp_state;

struct hp__sock_state {
    struct hp__sock_ev *ready, *ready_tail; /* the ready list, oldest first */
    struct hp_udp_sock **udp_hash;          /* bound sockets, by local port: udp_mask + 1 chains */
    uint32_t udp_mask, udp_bound;           /* udp_bound: sockets in the table */
    /* Early demultiplexing (udp.c): frame k's destination port + 1 while a
     * peeked UDP frame waits for its step (0: none). */
    uint32_t udp_early_port[HP__RX_BURST];
    uint64_t udp_early_prefetches; /* sockets prefetched (tests) */
    struct hp_udp_sock *all;       /* every open UDP socket (for fini) */
    uint16_t ephemeral_next;       /* where the search for a free port starts */
    struct hp__tcp_state *tcp;     /* tcp.c */
};

/* Raise events on a socket: added to the ready list if not there. */
void hp__sock_ev_raise(struct hp__sock_state *st, struct hp__sock_ev *e, uint32_t events);
/* Take a socket off the ready list (on close). */
void hp__sock_ev_remove(struct hp__sock_state *st, struct hp__sock_ev *e);
/* An empty ready list. */
void hp__sock_ev_init(struct hp__sock_state *st);

/* Close every UDP socket of the stack (udp.c, from hp__sock_fini). */
void hp__udp_fini(struct hp_stack *s);

#endif
