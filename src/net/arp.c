/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP for IPv4 over Ethernet (RFC 826): answering, learning by the merge rule, requests, and RFC 5227 announcements. */
#include <string.h>

#include "neigh.h"

static const uint8_t bcast_mac[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

/* Build and queue one ARP packet to the Ethernet destination dst. */
static bool arp_send(struct hp__iface *ifc, const struct hp_arp_repr *r, const uint8_t dst[6])
{
    struct hp_buf *b = hp__alloc(ifc);
    if (!b)
        return false;
    uint8_t *p = hp_buf_append(b, HP_ARP_LEN);
    if (!p || hp_arp_emit(r, p, HP_ARP_LEN) < 0) {
        hp_buf_free(b);
        return false;
    }
    hp__eth_output(ifc, dst, HP_ETHERTYPE_ARP, b);
    return true;
}

void hp__arp_request(struct hp__iface *ifc, const uint8_t tpa[4], const uint8_t *dst)
{
    struct hp_arp_repr r = {.op = HP_ARP_OP_REQUEST};
    memcpy(r.sha, ifc->mac, 6);
    /* Without an address of our own this is an ARP probe (RFC 5227 2.1.1:
     * sender 0.0.0.0), which still gets a reply. */
    const uint8_t *spa = hp__src4_for(ifc, tpa);
    if (spa)
        memcpy(r.spa, spa, 4);
    memcpy(r.tpa, tpa, 4);
    if (arp_send(ifc, &r, dst ? dst : bcast_mac))
        hp__ctr(ifc->s, HP_CTR_ARP_OUT_REQUESTS);
}

void hp__arp_announce(struct hp__iface *ifc, const uint8_t a[4])
{
    /* RFC 5227 3: an ARP request with sender and target both the new
     * address, broadcast, so that neighbours update stale caches. */
    struct hp_arp_repr r = {.op = HP_ARP_OP_REQUEST};
    memcpy(r.sha, ifc->mac, 6);
    memcpy(r.spa, a, 4);
    memcpy(r.tpa, a, 4);
    if (arp_send(ifc, &r, bcast_mac))
        hp__ctr(ifc->s, HP_CTR_ARP_OUT_GRATUITOUS);
}

void hp__arp_input(struct hp__iface *ifc, struct hp_buf *b)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_ARP_IN);
    struct hp_arp_repr r;
    if (hp_arp_parse(hp_buf_data(b), b->data_len, &r) < 0) {
        hp__ctr(s, HP_CTR_ARP_IN_MALFORMED);
        hp_buf_free(b);
        return;
    }
    static const uint8_t zero4[4] = {0};
    bool probe = memcmp(r.spa, zero4, 4) == 0;
    bool for_us = hp__is_local4(ifc, r.tpa);

    /* Someone else claims one of our addresses (RFC 5227 2.4): never
     * learn it as a neighbour; we keep our address. */
    if (!probe && hp__is_local4(ifc, r.spa)) {
        hp__ctr(s, HP_CTR_ARP_IN_NOT_FOR_US);
        hp_buf_free(b);
        return;
    }

    if (r.op == HP_ARP_OP_REPLY) {
        /* We only believe replies to our own requests: an entry must be
         * waiting (or cached) for the sender. Anything else is the
         * classic cache-poisoning shape and is dropped. */
        if (probe || !hp__neigh_learn(ifc, HP_AF_INET4, r.spa, r.sha, HP__LEARN_CONFIRM)) {
            hp__ctr(s, HP_CTR_ARP_IN_UNSOLICITED);
            hp_buf_free(b);
            return;
        }
        hp__ctr(s, HP_CTR_ARP_IN_REPLIES);
        hp_buf_free(b);
        return;
    }

    /* A request. RFC 826 "Packet Reception": merge the sender into an
     * existing entry; if we are the target, add it when missing. */
    if (!probe)
        hp__neigh_learn(ifc, HP_AF_INET4, r.spa, r.sha,
                        for_us ? HP__LEARN_CREATE : HP__LEARN_MERGE);
    if (!for_us) {
        hp__ctr(s, HP_CTR_ARP_IN_NOT_FOR_US);
        hp_buf_free(b);
        return;
    }
    hp__ctr(s, HP_CTR_ARP_IN_REQUESTS);
    /* RFC 826: swap hardware and protocol fields, putting the local
     * hardware and protocol addresses in the sender fields. A fresh
     * buffer: the received one may be shared or too short to reuse. */
    struct hp_arp_repr rep = {.op = HP_ARP_OP_REPLY};
    memcpy(rep.sha, ifc->mac, 6);
    memcpy(rep.spa, r.tpa, 4);
    memcpy(rep.tha, r.sha, 6);
    memcpy(rep.tpa, r.spa, 4);
    hp_buf_free(b);
    if (arp_send(ifc, &rep, r.sha))
        hp__ctr(s, HP_CTR_ARP_OUT_REPLIES);
}
