/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations shared by the stack core modules (stack.c, neigh.c, arp.c, ndp.c) beyond internal.h. */
#ifndef HOTPATH_NET_NEIGH_H
#define HOTPATH_NET_NEIGH_H

#include "internal.h"

/* Neighbour entry states: a simplified RFC 4861 7.3.2 (no DELAY state: a
 * STALE entry in use is probed at once). */
enum hp__neigh_state {
    HP__NEIGH_INCOMPLETE = 1, /* resolving: packets queue, requests repeat */
    HP__NEIGH_REACHABLE,      /* confirmed within neigh_reachable_ms */
    HP__NEIGH_STALE,          /* usable, unconfirmed; probed when used */
    HP__NEIGH_PROBE,          /* usable, unicast probes outstanding */
};

/* How a received ARP / NDP message updates an entry. */
enum hp__neigh_learn {
    /* The sender asked us something (ARP request for us, NS with SLL):
     * create the entry if missing; a new or changed MAC becomes STALE
     * (RFC 4861 7.2.3; RFC 826 "merge" then "add"). */
    HP__LEARN_CREATE,
    /* Heard about an existing entry only (RFC 826 merge): update its MAC
     * (STALE if it changed); never create. */
    HP__LEARN_MERGE,
    /* A reply to our request (ARP reply, solicited NA with override):
     * update the MAC, REACHABLE. Never creates. */
    HP__LEARN_CONFIRM,
};

/* Learn a mapping; sends whatever waited for it. Returns true when an
 * entry exists afterwards (false: none existed and none was created, or
 * the table is full). mac may be NULL for CONFIRM (an NA without TLL
 * confirms reachability of the cached MAC, RFC 4861 7.2.5). */
bool hp__neigh_learn(struct hp__iface *ifc, int family, const uint8_t *addr, const uint8_t *mac,
                     enum hp__neigh_learn how);

/* The NDP rules of RFC 4861 7.2.5 for an advertisement about an existing
 * entry. Returns false when there is no entry. */
bool hp__neigh_advert(struct hp__iface *ifc, const uint8_t addr[16], const uint8_t *tll,
                      bool solicited, bool override);

/* Whether there is an entry (any state) for addr on ifc. */
bool hp__neigh_exists(struct hp__iface *ifc, int family, const uint8_t *addr);

/* arp.c: an ARP request for tpa, broadcast (dst NULL) or unicast to dst. */
void hp__arp_request(struct hp__iface *ifc, const uint8_t tpa[4], const uint8_t *dst);
/* ndp.c: a neighbour solicitation for target: multicast to its
 * solicited-node group (dst NULL) or unicast to the cached dst MAC; from
 * src_hint when it is one of our preferred addresses, else from another
 * preferred address of ifc. Returns false when no source address is
 * usable yet (nothing sent). */
bool hp__ndp_solicit(struct hp__iface *ifc, const uint8_t target[16], const uint8_t *dst,
                     const uint8_t *src_hint);

/* stack.c helpers. */
/* The IPv4 address of ifc to use towards peer (one on its prefix, else the
 * first), or NULL when ifc has none. */
const uint8_t *hp__src4_for(const struct hp__iface *ifc, const uint8_t peer[4]);

#endif
