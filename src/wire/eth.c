/* SPDX-License-Identifier: BSD-3-Clause */
/* Ethernet II header with an optional 802.1Q tag: validation, parsing and emission. */
#include <hotpath/wire/eth.h>

HP_API int hp_eth_check(const void *pkt, size_t len)
{
    const uint8_t *p = pkt;
    if (len < HP_ETH_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    uint16_t type = hp_get_be16(p + 12);
    if (type == HP_ETHERTYPE_QINQ)
        return -HP_WIRE_UNSUPPORTED;
    if (type == HP_ETHERTYPE_VLAN) {
        if (len < HP_ETH_VLAN_HDR_LEN)
            return -HP_WIRE_TRUNCATED;
        /* VID 0xFFF "shall not be transmitted in a VLAN tag" (IEEE
         * 802.1Q-2018 table 9-2). */
        if (HP_VLAN_VID(hp_get_be16(p + 14)) == HP_VLAN_VID_RESERVED)
            return -HP_WIRE_BAD_FIELD;
        type = hp_get_be16(p + 16);
        /* One tag only: a second tag (old-style 0x8100 stacking or an S-tag
         * inside) would need a repr for both. */
        if (type == HP_ETHERTYPE_VLAN || type == HP_ETHERTYPE_QINQ)
            return -HP_WIRE_UNSUPPORTED;
    }
    /* Values up to 1500 are an IEEE 802.3 length (LLC follows), and
     * 1501..1535 are undefined: neither is an EtherType we dispatch on. */
    if (type < HP_ETHERTYPE_MIN)
        return -HP_WIRE_UNSUPPORTED;
    /* The source is an individual address (IEEE 802.3 clause 3.2.3): a
     * group bit there is forged or broken. */
    if (hp_eth_is_multicast(p + 6))
        return -HP_WIRE_BAD_ADDRESS;
    return 0;
}

HP_API int hp_eth_parse(const void *pkt, size_t len, struct hp_eth_repr *r, size_t *hdr_len)
{
    int rc = hp_eth_check(pkt, len);
    if (rc < 0)
        return rc;
    memcpy(r->dst, hp_eth_dst_ptr(pkt), 6);
    memcpy(r->src, hp_eth_src_ptr(pkt), 6);
    r->has_vlan = hp_eth_has_vlan(pkt);
    r->vlan_tci = hp_eth_vlan_tci(pkt);
    r->ethertype = hp_eth_ethertype(pkt);
    if (hdr_len)
        *hdr_len = hp_eth_hdr_len(pkt);
    return 0;
}

HP_API size_t hp_eth_repr_len(const struct hp_eth_repr *r)
{
    return r->has_vlan ? HP_ETH_VLAN_HDR_LEN : HP_ETH_HDR_LEN;
}

HP_API int hp_eth_emit(const struct hp_eth_repr *r, void *out, size_t cap)
{
    size_t n = hp_eth_repr_len(r);
    if (cap < n)
        return -HP_WIRE_NO_SPACE;
    uint8_t *p = out;
    memcpy(p, r->dst, 6);
    memcpy(p + 6, r->src, 6);
    if (r->has_vlan) {
        hp_put_be16(p + 12, HP_ETHERTYPE_VLAN);
        hp_put_be16(p + 14, r->vlan_tci);
    }
    hp_put_be16(p + n - 2, r->ethertype);
    return (int)n;
}
