/* SPDX-License-Identifier: BSD-3-Clause */
/* The sock layer's per-stack state and the edge-triggered readiness list behind hp_stack_events(). */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"
#include "tcp_internal.h"

int hp__sock_init(struct hp_stack *s)
{
    struct hp__sock_state *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    hp__sock_ev_init(st);
    st->udp_hash = calloc(HP__UDP_HASH_MIN, sizeof *st->udp_hash);
    if (!st->udp_hash) {
        free(st);
        return -ENOMEM;
    }
    st->udp_mask = HP__UDP_HASH_MIN - 1;
    /* Start the ephemeral search somewhere that depends on the stack, so
     * that two stacks in one process do not pick the same ports in step
     * (RFC 6056 3.2 argues for less predictable ports; tests want determinism:
     * the address of the state is good enough for both). */
    st->ephemeral_next = (uint16_t)(49152u + (uint32_t)(((uintptr_t)st >> 6) % 16384u));
    s->sock = st;
    int err = hp__tcp_init(s);
    if (err < 0) {
        free(st->udp_hash);
        free(st);
        s->sock = NULL;
        return err;
    }
    return 0;
}

void hp__sock_fini(struct hp_stack *s)
{
    if (!s->sock)
        return;
    hp__udp_fini(s);
    hp__tcp_fini(s);
    free(s->sock->udp_hash);
    free(s->sock);
    s->sock = NULL;
}

void hp__sock_ev_init(struct hp__sock_state *st)
{
    st->ready.prev = st->ready.next = &st->ready;
}

void hp__sock_ev_raise(struct hp__sock_state *st, struct hp__sock_ev *e, uint32_t events)
{
    e->pending |= events;
    if (e->queued)
        return;
    e->queued = true;
    e->next = &st->ready;
    e->prev = st->ready.prev;
    st->ready.prev->next = e;
    st->ready.prev = e;
}

void hp__sock_ev_remove(struct hp__sock_ev *e)
{
    if (!e->queued)
        return;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
    e->queued = false;
    e->pending = 0;
}

HP_API int hp_stack_events(struct hp_stack *s, struct hp_event *ev, int max)
{
    if (!s || !s->sock || !ev || max <= 0)
        return 0;
    struct hp__sock_state *st = s->sock;
    int n = 0;
    while (n < max && st->ready.next != &st->ready) {
        struct hp__sock_ev *e = st->ready.next;
        uint32_t bits = e->pending;
        void *user = e->user;
        hp__sock_ev_remove(e);
        ev[n].user = user;
        ev[n].events = bits;
        n++;
    }
    return n;
}
