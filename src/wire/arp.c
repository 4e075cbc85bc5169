/* SPDX-License-Identifier: BSD-3-Clause */
/* ARP for IPv4 over Ethernet (RFC 826): validation, parsing and emission. */
#include <hotpath/wire/arp.h>
#include <hotpath/wire/eth.h>
#include <hotpath/wire/ipv4.h>

/* RFC 826 "Packet format": ar$hrd(16) ar$pro(16) ar$hln(8) ar$pln(8)
 * ar$op(16), then sha, spa, tha, tpa of the lengths given. */

HP_API int hp_arp_check(const void *pkt, size_t len)
{
    const uint8_t *p = pkt;
    if (len < 8)
        return -HP_WIRE_TRUNCATED;
    if (hp_get_be16(p) != HP_ARP_HTYPE_ETHER || hp_get_be16(p + 2) != HP_ARP_PTYPE_IPV4)
        return -HP_WIRE_UNSUPPORTED;
    /* The lengths are implied by the types; anything else is contradictory. */
    if (p[4] != HP_ETH_ALEN || p[5] != 4)
        return -HP_WIRE_BAD_FIELD;
    if (len < HP_ARP_LEN)
        return -HP_WIRE_TRUNCATED;
    uint16_t op = hp_get_be16(p + 6);
    if (op != HP_ARP_OP_REQUEST && op != HP_ARP_OP_REPLY)
        return -HP_WIRE_UNSUPPORTED;
    /* RFC 1812 section 3.3.2: an ARP claiming a broadcast or multicast link
     * address must not be believed. A multicast or broadcast protocol
     * address is nobody's (RFC 1122 section 3.2.1.3), and learning it would
     * poison the cache. */
    if (hp_eth_is_multicast(p + 8))
        return -HP_WIRE_BAD_ADDRESS;
    if (hp_ipv4_is_multicast(p + 14) || hp_ipv4_is_broadcast(p + 14))
        return -HP_WIRE_BAD_ADDRESS;
    return 0;
}

HP_API int hp_arp_parse(const void *pkt, size_t len, struct hp_arp_repr *r)
{
    int rc = hp_arp_check(pkt, len);
    if (rc < 0)
        return rc;
    r->op = hp_arp_op(pkt);
    memcpy(r->sha, hp_arp_sha_ptr(pkt), 6);
    memcpy(r->spa, hp_arp_spa_ptr(pkt), 4);
    memcpy(r->tha, hp_arp_tha_ptr(pkt), 6);
    memcpy(r->tpa, hp_arp_tpa_ptr(pkt), 4);
    return 0;
}

HP_API size_t hp_arp_repr_len(const struct hp_arp_repr *r)
{
    (void)r;
    return HP_ARP_LEN;
}

HP_API int hp_arp_emit(const struct hp_arp_repr *r, void *out, size_t cap)
{
    if (cap < HP_ARP_LEN)
        return -HP_WIRE_NO_SPACE;
    uint8_t *p = out;
    hp_put_be16(p, HP_ARP_HTYPE_ETHER);
    hp_put_be16(p + 2, HP_ARP_PTYPE_IPV4);
    p[4] = HP_ETH_ALEN;
    p[5] = 4;
    hp_put_be16(p + 6, r->op);
    memcpy(p + 8, r->sha, 6);
    memcpy(p + 14, r->spa, 4);
    memcpy(p + 18, r->tha, 6);
    memcpy(p + 24, r->tpa, 4);
    return (int)HP_ARP_LEN;
}
