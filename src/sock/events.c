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
    st->ready = st->ready_tail = NULL;
}

void hp__sock_ev_raise(struct hp__sock_state *st, struct hp__sock_ev *e, uint32_t events)
{
    uint32_t p = e->pending;
    e->pending = p | events | HP__EV_QUEUED;
    if (p & HP__EV_QUEUED)
        return;
    e->next = NULL;
    if (st->ready_tail)
        st->ready_tail->next = e;
    else
        st->ready = e;
    st->ready_tail = e;
}

void hp__sock_ev_remove(struct hp__sock_state *st, struct hp__sock_ev *e)
{
    if (!(e->pending & HP__EV_QUEUED))
        return;
    struct hp__sock_ev *prev = NULL;
    for (struct hp__sock_ev *q = st->ready; q && q != e; q = q->next)
        prev = q;
    if (prev)
        prev->next = e->next;
    else
        st->ready = e->next;
    if (st->ready_tail == e)
        st->ready_tail = prev;
    e->next = NULL;
    e->pending = 0;
}

HP_API int hp_stack_events(struct hp_stack *s, struct hp_event *ev, int max)
{
    if (!s || !s->sock || !ev || max <= 0)
        return 0;
    struct hp__sock_state *st = s->sock;
    struct hp__sock_ev *e = st->ready;
    int n = 0;
    while (n < max && e) {
        struct hp__sock_ev *next = e->next;
        ev[n].user = e->user;
        ev[n].events = e->pending & ~HP__EV_QUEUED;
        e->pending = 0;
        e->next = NULL;
        n++;
        e = next;
    }
    st->ready = e;
    if (!e)
        st->ready_tail = NULL;
    return n;
}
