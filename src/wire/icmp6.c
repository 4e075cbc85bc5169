/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv6 message view (echo and errors) and Neighbor Discovery: validation rules, options, emit. */
#include <stdbool.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/icmp6.h>

/* RFC 4443 2.4(c): an error packet must not exceed the minimum IPv6 MTU. */
#define IPV6_MIN_MTU 1280u
#define IPV6_HDR     40u

static bool family6(const struct hp_l4_addrs *a)
{
    return hp_l4_addrs_valid(a) && a->family == HP_AF_INET6;
}

static bool cksum_ok(const struct hp_l4_addrs *a, const uint8_t *p, size_t len)
{
    return hp_cksum_icmp6_verify(a->src, a->dst, p, len) == HP_CKSUM_GOOD;
}

static void put_cksum(const struct hp_l4_addrs *a, uint8_t *o, size_t len)
{
    uint16_t c = hp_cksum_icmp6(a->src, a->dst, o, len);
    memcpy(o + 2, &c, 2); /* already in network order */
}

HP_API int hp_icmp6_check(const void *pkt, size_t len)
{
    (void)pkt;
    return len < HP_ICMP6_HDR_LEN ? -HP_WIRE_TRUNCATED : 0;
}

HP_API int hp_icmp6_parse(const void *pkt, size_t len, const struct hp_l4_addrs *a,
                          struct hp_icmp6_repr *r, unsigned flags)
{
    if (len < HP_ICMP6_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    const uint8_t *p = pkt;
    if (flags & HP_WIRE_VERIFY_CKSUM) {
        if (!family6(a))
            return -HP_WIRE_BAD_ADDRESS;
        if (!cksum_ok(a, p, len))
            return -HP_WIRE_BAD_CHECKSUM;
    }
    memset(r, 0, sizeof *r);
    r->type = hp_icmp6_type(p);
    r->code = hp_icmp6_code(p);
    switch (r->type) {
    case HP_ICMP6_ECHO_REQUEST:
    case HP_ICMP6_ECHO_REPLY:
        r->ident = hp_icmp6_ident(p);
        r->seq = hp_icmp6_seq(p);
        break;
    case HP_ICMP6_PACKET_TOO_BIG:
        r->mtu = hp_icmp6_word(p);
        break;
    case HP_ICMP6_PARAM_PROBLEM:
        r->pointer = hp_icmp6_word(p);
        break;
    case HP_ICMP6_DEST_UNREACH:
    case HP_ICMP6_TIME_EXCEEDED:
        break; /* the word is unused: ignored on receipt (RFC 4443 3.1, 3.3) */
    default:
        return -HP_WIRE_UNSUPPORTED;
    }
    r->data = p + HP_ICMP6_HDR_LEN;
    r->data_len = len - HP_ICMP6_HDR_LEN;
    /* Errors carry "as much of invoking packet as possible" (RFC 4443
     * 3.1-3.4), so at least its IPv6 header. */
    if (r->type < 128 && r->data_len < HP_ICMP6_MIN_QUOTE)
        return -HP_WIRE_TRUNCATED;
    return 0;
}

HP_API size_t hp_icmp6_repr_len(const struct hp_icmp6_repr *r)
{
    return HP_ICMP6_HDR_LEN + r->data_len;
}

HP_API int hp_icmp6_emit(const struct hp_icmp6_repr *r, const struct hp_l4_addrs *a, void *out,
                         size_t cap)
{
    if (!family6(a))
        return -HP_WIRE_BAD_ADDRESS;
    if (r->data_len > 0xFFFFu - HP_ICMP6_HDR_LEN)
        return -HP_WIRE_BAD_LENGTH;
    size_t total = HP_ICMP6_HDR_LEN + r->data_len;
    if (cap < total)
        return -HP_WIRE_NO_SPACE;
    uint8_t *o = out;
    if (r->data_len)
        memmove(o + HP_ICMP6_HDR_LEN, r->data, r->data_len);
    o[0] = r->type;
    o[1] = r->code;
    memset(o + 2, 0, 6);
    switch (r->type) {
    case HP_ICMP6_ECHO_REQUEST:
    case HP_ICMP6_ECHO_REPLY:
        hp_put_be16(o + 4, r->ident);
        hp_put_be16(o + 6, r->seq);
        break;
    case HP_ICMP6_PACKET_TOO_BIG:
        hp_put_be32(o + 4, r->mtu);
        break;
    case HP_ICMP6_PARAM_PROBLEM:
        hp_put_be32(o + 4, r->pointer);
        break;
    default:
        break;
    }
    put_cksum(a, o, total);
    return (int)total;
}

HP_API size_t hp_icmp6_quote_len(size_t orig_len)
{
    size_t max = IPV6_MIN_MTU - IPV6_HDR - HP_ICMP6_HDR_LEN;
    return orig_len < max ? orig_len : max;
}

/* ---- Neighbor Discovery ------------------------------------------------- */

/* RFC 4861 section 4: fixed part of each message, before the options. */
static size_t ndp_fixed_len(uint8_t type)
{
    switch (type) {
    case HP_NDP_ROUTER_SOLICIT:
        return 8;
    case HP_NDP_ROUTER_ADVERT:
        return 16;
    case HP_NDP_NEIGHBOR_SOLICIT:
        return 24;
    case HP_NDP_NEIGHBOR_ADVERT:
        return 24;
    case HP_NDP_REDIRECT:
        return 40;
    default:
        return 0;
    }
}

/* RFC 4291 section 2.7: multicast is ff00::/8. */
static bool addr_multicast(const uint8_t *x)
{
    return x[0] == 0xff;
}

static bool addr_unspecified(const uint8_t *x)
{
    static const uint8_t zero[16];
    return memcmp(x, zero, 16) == 0;
}

/* RFC 4291 section 2.5.6: link-local unicast is fe80::/10. */
static bool addr_link_local(const uint8_t *x)
{
    return x[0] == 0xfe && (x[1] & 0xc0) == 0x80;
}

/* RFC 4291 section 2.7.1: the solicited-node address ff02::1:ffXX:XXXX. */
static bool addr_solicited_node(const uint8_t *x)
{
    static const uint8_t pfx[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
    return memcmp(x, pfx, sizeof pfx) == 0;
}

/* Which options each message carries (RFC 4861 section 4). */
static bool ndp_has_sll(uint8_t type)
{
    return type == HP_NDP_ROUTER_SOLICIT || type == HP_NDP_ROUTER_ADVERT ||
           type == HP_NDP_NEIGHBOR_SOLICIT;
}

static bool ndp_has_tll(uint8_t type)
{
    return type == HP_NDP_NEIGHBOR_ADVERT || type == HP_NDP_REDIRECT;
}

/*
 * Walk the options of a message of type r->type (RFC 4861 section 4.6: type,
 * length in units of 8 octets, which MUST NOT be 0). Records those the type
 * carries, ignores the rest (sections 6.1 and 7.1: options that are not
 * recognised, or do not belong, are ignored). *saw_sll is set by any source
 * link-layer option, whatever its length.
 */
static int ndp_walk(const uint8_t *p, size_t n, struct hp_ndp_repr *r, bool *saw_sll)
{
    size_t i = 0;
    while (i < n) {
        if (n - i < 2)
            return -HP_WIRE_BAD_OPTION;
        uint8_t type = p[i];
        size_t olen = (size_t)p[i + 1] * 8;
        if (olen == 0 || olen > n - i)
            return -HP_WIRE_BAD_OPTION;
        const uint8_t *o = p + i;
        if (type == HP_NDP_OPT_SLL && ndp_has_sll(r->type)) {
            *saw_sll = true;
            /* 4.6.1: 8 bytes for an IEEE 802 address. */
            if (olen == 8) {
                r->has_sll = true;
                memcpy(r->sll, o + 2, 6);
            }
        } else if (type == HP_NDP_OPT_TLL && ndp_has_tll(r->type)) {
            if (olen == 8) {
                r->has_tll = true;
                memcpy(r->tll, o + 2, 6);
            }
        } else if (type == HP_NDP_OPT_PREFIX && r->type == HP_NDP_ROUTER_ADVERT) {
            /* 4.6.2: length 4; prefix length 0..128. */
            if (olen != 32 || o[2] > 128)
                return -HP_WIRE_BAD_OPTION;
            if (r->n_prefix < HP_NDP_MAX_PREFIX) {
                struct hp_ndp_prefix *x = &r->prefix[r->n_prefix++];
                x->len = o[2];
                x->onlink = (o[3] & 0x80) != 0;
                x->autonomous = (o[3] & 0x40) != 0;
                x->valid = hp_get_be32(o + 4);
                x->preferred = hp_get_be32(o + 8);
                memcpy(x->prefix, o + 16, 16);
            }
        } else if (type == HP_NDP_OPT_MTU && r->type == HP_NDP_ROUTER_ADVERT) {
            /* 4.6.4: length 1. */
            if (olen != 8)
                return -HP_WIRE_BAD_OPTION;
            r->has_mtu = true;
            r->mtu = hp_get_be32(o + 4);
        }
        i += olen;
    }
    return 0;
}

/* The per-message rules on addresses and flags, after the common ones. */
static int ndp_rules(const struct hp_ndp_repr *r, const struct hp_l4_addrs *a, bool saw_sll)
{
    switch (r->type) {
    case HP_NDP_ROUTER_SOLICIT:
        /* 6.1.1: from the unspecified address, no source link-layer option. */
        if (addr_unspecified(a->src) && saw_sll)
            return -HP_WIRE_BAD_OPTION;
        return 0;
    case HP_NDP_ROUTER_ADVERT:
        /* 6.1.2: routers advertise from their link-local address. */
        return addr_link_local(a->src) ? 0 : -HP_WIRE_BAD_ADDRESS;
    case HP_NDP_NEIGHBOR_SOLICIT:
        /* 7.1.1 */
        if (addr_multicast(r->target))
            return -HP_WIRE_BAD_ADDRESS;
        if (addr_unspecified(a->src)) {
            if (!addr_solicited_node(a->dst))
                return -HP_WIRE_BAD_ADDRESS;
            if (saw_sll)
                return -HP_WIRE_BAD_OPTION;
        }
        return 0;
    case HP_NDP_NEIGHBOR_ADVERT:
        /* 7.1.2 */
        if (addr_multicast(r->target))
            return -HP_WIRE_BAD_ADDRESS;
        if (addr_multicast(a->dst) && r->solicited)
            return -HP_WIRE_BAD_FIELD;
        return 0;
    case HP_NDP_REDIRECT:
        /* 8.1 */
        if (!addr_link_local(a->src) || addr_multicast(r->redirect_dst))
            return -HP_WIRE_BAD_ADDRESS;
        if (!addr_link_local(r->target) && memcmp(r->target, r->redirect_dst, 16) != 0)
            return -HP_WIRE_BAD_ADDRESS;
        return 0;
    default:
        return -HP_WIRE_UNSUPPORTED;
    }
}

HP_API int hp_ndp_parse(const void *msg, size_t len, const struct hp_l4_addrs *a, uint8_t hop_limit,
                        struct hp_ndp_repr *r, unsigned flags)
{
    if (len < HP_ICMP6_HDR_LEN)
        return -HP_WIRE_TRUNCATED;
    const uint8_t *p = msg;
    uint8_t type = hp_icmp6_type(p);
    size_t fixed = ndp_fixed_len(type);
    if (!fixed)
        return -HP_WIRE_UNSUPPORTED;
    if (!family6(a))
        return -HP_WIRE_BAD_ADDRESS;
    /* Every message of RFC 4861 (6.1.1, 6.1.2, 7.1.1, 7.1.2, 8.1): a hop
     * limit of 255 proves it was not forwarded by a router. */
    if (hop_limit != 255)
        return -HP_WIRE_BAD_FIELD;
    if ((flags & HP_WIRE_VERIFY_CKSUM) && !cksum_ok(a, p, len))
        return -HP_WIRE_BAD_CHECKSUM;
    if (hp_icmp6_code(p) != 0)
        return -HP_WIRE_BAD_FIELD;
    if (len < fixed)
        return -HP_WIRE_BAD_LENGTH;

    memset(r, 0, sizeof *r);
    r->type = type;
    switch (type) {
    case HP_NDP_ROUTER_ADVERT: /* 4.2 */
        r->cur_hop_limit = p[4];
        r->managed = (p[5] & 0x80) != 0;
        r->other = (p[5] & 0x40) != 0;
        r->router_lifetime = hp_get_be16(p + 6);
        r->reachable_time = hp_get_be32(p + 8);
        r->retrans_timer = hp_get_be32(p + 12);
        break;
    case HP_NDP_NEIGHBOR_ADVERT: /* 4.4 */
        r->router = (p[4] & 0x80) != 0;
        r->solicited = (p[4] & 0x40) != 0;
        r->override = (p[4] & 0x20) != 0;
        memcpy(r->target, p + 8, 16);
        break;
    case HP_NDP_NEIGHBOR_SOLICIT: /* 4.3 */
        memcpy(r->target, p + 8, 16);
        break;
    case HP_NDP_REDIRECT: /* 4.5 */
        memcpy(r->target, p + 8, 16);
        memcpy(r->redirect_dst, p + 24, 16);
        break;
    default: /* RS: reserved word only (4.1) */
        break;
    }
    bool saw_sll = false;
    int rc = ndp_walk(p + fixed, len - fixed, r, &saw_sll);
    if (rc)
        return rc;
    return ndp_rules(r, a, saw_sll);
}

HP_API size_t hp_ndp_repr_len(const struct hp_ndp_repr *r)
{
    size_t n = ndp_fixed_len(r->type);
    if (!n)
        return 0;
    if (r->has_sll && ndp_has_sll(r->type))
        n += 8;
    if (r->has_tll && ndp_has_tll(r->type))
        n += 8;
    if (r->type == HP_NDP_ROUTER_ADVERT) {
        if (r->has_mtu)
            n += 8;
        if (r->n_prefix > 0 && r->n_prefix <= HP_NDP_MAX_PREFIX)
            n += 32 * (size_t)r->n_prefix;
    }
    return n;
}

/* A link-layer address option (4.6.1) for an Ethernet address. */
static uint8_t *put_lladdr(uint8_t *o, uint8_t type, const uint8_t mac[6])
{
    o[0] = type;
    o[1] = 1;
    memcpy(o + 2, mac, 6);
    return o + 8;
}

HP_API int hp_ndp_emit(const struct hp_ndp_repr *r, const struct hp_l4_addrs *a, void *out,
                       size_t cap)
{
    size_t fixed = ndp_fixed_len(r->type);
    if (!fixed)
        return -HP_WIRE_UNSUPPORTED;
    if (!family6(a))
        return -HP_WIRE_BAD_ADDRESS;
    if (r->type == HP_NDP_ROUTER_ADVERT && (r->n_prefix < 0 || r->n_prefix > HP_NDP_MAX_PREFIX))
        return -HP_WIRE_BAD_OPTION;
    size_t total = hp_ndp_repr_len(r);
    if (cap < total)
        return -HP_WIRE_NO_SPACE;
    uint8_t *o = out;
    memset(o, 0, fixed); /* code 0, reserved fields 0 */
    o[0] = r->type;
    switch (r->type) {
    case HP_NDP_ROUTER_ADVERT:
        o[4] = r->cur_hop_limit;
        o[5] = (uint8_t)((r->managed ? 0x80 : 0) | (r->other ? 0x40 : 0));
        hp_put_be16(o + 6, r->router_lifetime);
        hp_put_be32(o + 8, r->reachable_time);
        hp_put_be32(o + 12, r->retrans_timer);
        break;
    case HP_NDP_NEIGHBOR_ADVERT:
        o[4] = (uint8_t)((r->router ? 0x80 : 0) | (r->solicited ? 0x40 : 0) |
                         (r->override ? 0x20 : 0));
        memcpy(o + 8, r->target, 16);
        break;
    case HP_NDP_NEIGHBOR_SOLICIT:
        memcpy(o + 8, r->target, 16);
        break;
    case HP_NDP_REDIRECT:
        memcpy(o + 8, r->target, 16);
        memcpy(o + 24, r->redirect_dst, 16);
        break;
    default:
        break;
    }
    uint8_t *w = o + fixed;
    if (r->has_sll && ndp_has_sll(r->type))
        w = put_lladdr(w, HP_NDP_OPT_SLL, r->sll);
    if (r->has_tll && ndp_has_tll(r->type))
        w = put_lladdr(w, HP_NDP_OPT_TLL, r->tll);
    if (r->type == HP_NDP_ROUTER_ADVERT) {
        if (r->has_mtu) {
            w[0] = HP_NDP_OPT_MTU;
            w[1] = 1;
            w[2] = w[3] = 0;
            hp_put_be32(w + 4, r->mtu);
            w += 8;
        }
        for (int i = 0; i < r->n_prefix; i++) {
            const struct hp_ndp_prefix *x = &r->prefix[i];
            w[0] = HP_NDP_OPT_PREFIX;
            w[1] = 4;
            w[2] = x->len;
            w[3] = (uint8_t)((x->onlink ? 0x80 : 0) | (x->autonomous ? 0x40 : 0));
            hp_put_be32(w + 4, x->valid);
            hp_put_be32(w + 8, x->preferred);
            memset(w + 12, 0, 4);
            memcpy(w + 16, x->prefix, 16);
            w += 32;
        }
    }
    put_cksum(a, o, total);
    return (int)total;
}
