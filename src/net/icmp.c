/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv4 (RFC 792, RFC 1122 3.2.2): echo, received errors, rate-limited error messages, and hp_stack_ping. */
#include <errno.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "internal.h"
#include "ip_local.h"

/* ---- shared by both ICMP modules -------------------------------------------------------- */

bool hp__bucket_take_rate(struct hp_stack *s, struct hp__bucket *bk, uint64_t rate, uint64_t burst)
{
    uint64_t cap = burst * 1000u; /* thousandths of a token */
    if (bk->last == 0) {
        /* First use: a full bucket. */
        bk->tokens_milli = cap;
        bk->last = s->now ? s->now : 1;
    } else if (s->now > bk->last) {
        uint64_t el = s->now - bk->last;
        if (el > 100000000000ull) /* 100 s refill anything; keeps the product small */
            el = 100000000000ull;
        uint64_t add = el * rate / 1000000u; /* thousandths of a token */
        if (add > 0) {
            bk->tokens_milli = bk->tokens_milli + add > cap ? cap : bk->tokens_milli + add;
            bk->last = s->now;
        }
    }
    if (bk->tokens_milli < 1000)
        return false;
    bk->tokens_milli -= 1000;
    return true;
}

bool hp__bucket_take(struct hp_stack *s, struct hp__bucket *bk)
{
    return hp__bucket_take_rate(s, bk, s->cfg.icmp_rate ? s->cfg.icmp_rate : 1000,
                                s->cfg.icmp_burst ? s->cfg.icmp_burst : 50);
}

void hp__ping_fill(struct hp_buf *b, uint32_t off, uint32_t len)
{
    uint32_t i = 0;
    for (; b && i < len; b = b->next) {
        if (off >= b->data_len) {
            off -= b->data_len;
            continue;
        }
        uint8_t *d = (uint8_t *)hp_buf_data(b) + off;
        uint32_t n = b->data_len - off;
        for (uint32_t j = 0; j < n && i < len; j++, i++)
            d[j] = (uint8_t)i;
        off = 0;
    }
}

/* ---- input ---------------------------------------------------------------------------- */

/* Answer an echo request in place when no one else shares its buffers:
 * the type changes and the checksum follows by RFC 1624. */
static void echo_reply4(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv4_repr *ip)
{
    struct hp_stack *s = ifc->s;
    struct hp__route r;
    if (hp__route4(s, ip->src, &r) != 0) {
        hp__ctr(s, HP_CTR_IP_OUT_NO_ROUTES);
        hp_buf_free(b);
        return;
    }
    /* The reply comes from the address the request was sent to (RFC 1122 3.2.2.6). */
    memcpy(r.src, ip->dst, 4);
    if (!hp__chain_private(b)) {
        struct hp_buf *c = hp__chain_copy(r.ifc, b);
        hp_buf_free(b);
        if (!c)
            return;
        b = c;
    }
    uint8_t *m = hp_buf_data(b);
    uint16_t old, nw, ck;
    memcpy(&old, m, 2);
    /* RFC 792: an echo reply's code is 0, whatever the request's was. */
    m[0] = HP_ICMP_ECHO_REPLY;
    m[1] = 0;
    memcpy(&nw, m, 2);
    memcpy(&ck, m + 2, 2);
    ck = hp_cksum_update16(ck, old, nw);
    if (ck == 0) {
        /* All-zero message: the update cannot give 0xFFFF (RFC 1624 3). */
        memset(m + 2, 0, 2);
        ck = hp_cksum_fold(hp__chain_sum(b));
    }
    memcpy(m + 2, &ck, 2);
    hp__ctr(s, HP_CTR_ICMP_OUT_MSGS);
    hp__ctr(s, HP_CTR_ICMP_OUT_ECHO_REPS);
    (void)hp__ipv4_output(s, &r, ip->src, HP_IPPROTO_ICMP, b);
}

/* A "fragmentation needed" quoting one of our TCP segments goes to TCP
 * (RFC 1191 4, RFC 5927: TCP checks the quote against the connection). */
static void too_big4(struct hp_stack *s, const struct hp_icmp_repr *m)
{
    const uint8_t *q = m->data;
    size_t n = m->data_len;
    if (n < HP_ICMP_MIN_QUOTE || (q[0] >> 4) != 4)
        return;
    size_t ihl = (size_t)(q[0] & 0x0f) * 4;
    if (ihl < 20 || n < ihl + 8 || q[9] != HP_IPPROTO_TCP)
        return;
    uint32_t tot = ((uint32_t)q[2] << 8) | q[3];
    hp__tcp_icmp_too_big(s, 4, q + 12, q + 16, q + ihl, n - ihl, m->next_hop_mtu, tot);
}

void hp__icmp4_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv4_repr *ip)
{
    struct hp_stack *s = ifc->s;
    hp__ctr(s, HP_CTR_ICMP_IN_MSGS);
    if (b->data_len < HP_ICMP_HDR_LEN) {
        hp__ctr(s, HP_CTR_ICMP_IN_ERRORS);
        hp_buf_free(b);
        return;
    }
    /* The checksum covers the whole message, which may be a chain. */
    if (hp_cksum_fold(hp__chain_sum(b)) != 0) {
        hp__ctr(s, HP_CTR_ICMP_IN_CSUM_ERRORS);
        hp__ctr(s, HP_CTR_ICMP_IN_ERRORS);
        hp_buf_free(b);
        return;
    }
    struct hp_icmp_repr m;
    int rc = hp_icmp_parse(hp_buf_data(b), b->data_len, &m, 0);
    if (rc < 0) {
        /* RFC 1122 3.2.2: unknown types are silently discarded. */
        hp__ctr(s, rc == -HP_WIRE_UNSUPPORTED ? HP_CTR_ICMP_IN_UNSUPPORTED : HP_CTR_ICMP_IN_ERRORS);
        hp_buf_free(b);
        return;
    }
    switch (m.type) {
    case HP_ICMP_ECHO_REQUEST:
        hp__ctr(s, HP_CTR_ICMP_IN_ECHOS);
        /* Echo to a broadcast or multicast address MAY be ignored (RFC
         * 1122 3.2.2.6): it is, against amplification. */
        if (!hp__is_local4(ifc, ip->dst)) {
            hp_buf_free(b);
            return;
        }
        echo_reply4(ifc, b, ip);
        return;
    case HP_ICMP_ECHO_REPLY:
        hp__ctr(s, HP_CTR_ICMP_IN_ECHO_REPS);
        break;
    case HP_ICMP_DEST_UNREACH:
        hp__ctr(s, HP_CTR_ICMP_IN_DEST_UNREACHS);
        if (m.code == HP_ICMP_UNREACH_FRAG_NEEDED)
            too_big4(s, &m);
        break;
    default: /* time exceeded, parameter problem: counted in MSGS only */
        break;
    }
    hp_buf_free(b);
}

/* ---- errors ---------------------------------------------------------------------------- */

/* Types that are not error messages (RFC 792, RFC 950, RFC 1256). */
static bool is_query4(uint8_t t)
{
    return t == 0 || t == 8 || t == 9 || t == 10 || (t >= 13 && t <= 18);
}

void hp__icmp4_error(struct hp__iface *ifc, const struct hp_buf *orig, uint8_t type, uint8_t code,
                     uint32_t info)
{
    struct hp_stack *s = ifc->s;
    uint32_t l3 = orig->l3_len;
    if (l3 < HP_IPV4_HDR_LEN || hp_buf_headroom(orig) < l3)
        return;
    const uint8_t *h = (const uint8_t *)hp_buf_data(orig) - l3;
    const uint8_t *src = hp_ipv4_src_ptr(h), *dst = hp_ipv4_dst_ptr(h);
    /* RFC 1122 3.2.2: never about a fragment other than the first, a
     * datagram to a broadcast or multicast address (IP or link layer),
     * from an address that is not one host's, or about an ICMP error. */
    if ((hp_get_be16(h + 6) & 0x1FFFu) != 0)
        return;
    if (hp_ipv4_is_multicast(dst) || hp__ipv4_is_bcast(ifc, dst))
        return;
    if (hp_ipv4_is_unspecified(src) || hp_ipv4_is_multicast(src) || hp_ipv4_is_loopback(src) ||
        hp__ipv4_is_bcast(ifc, src))
        return;
    if (orig->l2_len >= 14 && hp_buf_headroom(orig) >= l3 + orig->l2_len &&
        (h[-(int)orig->l2_len] & 1u))
        return;
    if (hp_ipv4_proto(h) == HP_IPPROTO_ICMP) {
        uint8_t t;
        if (hp_buf_copy_out(orig, 0, 1, &t) != 0 || !is_query4(t))
            return;
    }
    if (!hp__bucket_take(s, &s->icmp4_bucket)) {
        hp__ctr(s, HP_CTR_ICMP_OUT_RATE_LIMITED);
        return;
    }
    struct hp__route r;
    if (hp__route4(s, src, &r) != 0) {
        hp__ctr(s, HP_CTR_IP_OUT_NO_ROUTES);
        return;
    }
    if (hp__is_local4(ifc, dst))
        memcpy(r.src, dst, 4);
    size_t q = hp_icmp_quote_len(l3 + orig->pkt_len);
    struct hp_buf *b = hp__alloc(r.ifc);
    uint8_t *out = b ? hp_buf_append(b, (uint32_t)(HP_ICMP_HDR_LEN + q)) : NULL;
    if (!out) {
        hp_buf_free(b);
        return;
    }
    memcpy(out + HP_ICMP_HDR_LEN, h, l3);
    (void)hp_buf_copy_out(orig, 0, (uint32_t)(q - l3), out + HP_ICMP_HDR_LEN + l3);
    struct hp_icmp_repr m = {.type = type,
                             .code = code,
                             .data = out + HP_ICMP_HDR_LEN,
                             .data_len = q};
    if (type == HP_ICMP_PARAM_PROBLEM)
        m.pointer = (uint8_t)info;
    if (type == HP_ICMP_DEST_UNREACH && code == HP_ICMP_UNREACH_FRAG_NEEDED)
        m.next_hop_mtu = (uint16_t)info;
    (void)hp_icmp_emit(&m, out, HP_ICMP_HDR_LEN + q);
    hp__ctr(s, HP_CTR_ICMP_OUT_MSGS);
    if (type == HP_ICMP_DEST_UNREACH)
        hp__ctr(s, HP_CTR_ICMP_OUT_DEST_UNREACHS);
    else if (type == HP_ICMP_TIME_EXCEEDED)
        hp__ctr(s, HP_CTR_ICMP_OUT_TIME_EXCEEDS);
    (void)hp__ipv4_output(s, &r, src, HP_IPPROTO_ICMP, b);
}

/* ---- ping ------------------------------------------------------------------------------ */

HP_API int hp_stack_ping(struct hp_stack *s, int family, const uint8_t *dst, uint16_t ident,
                         uint16_t seq, size_t len)
{
    if (!s || !dst)
        return -EINVAL;
    if (family == HP_AF_INET6)
        return hp__ping6(s, dst, ident, seq, len);
    if (family != HP_AF_INET4)
        return -EINVAL;
    if (len > 65535u - HP_IPV4_HDR_LEN - HP_ICMP_HDR_LEN)
        return -EMSGSIZE;
    struct hp__route r;
    if (hp__route4(s, dst, &r) != 0) {
        hp__ctr(s, HP_CTR_IP_OUT_NO_ROUTES);
        return -EHOSTUNREACH;
    }
    struct hp_buf *b = hp__chain_alloc(r.ifc, (uint32_t)(HP_ICMP_HDR_LEN + len));
    if (!b)
        return -ENOBUFS;
    uint8_t hdr[HP_ICMP_HDR_LEN];
    struct hp_icmp_repr m = {.type = HP_ICMP_ECHO_REQUEST, .ident = ident, .seq = seq};
    (void)hp_icmp_emit(&m, hdr, sizeof(hdr));
    memset(hdr + 2, 0, 2);
    hp__chain_write(b, 0, hdr, sizeof(hdr));
    hp__ping_fill(b, HP_ICMP_HDR_LEN, (uint32_t)len);
    uint16_t ck = hp_cksum_fold(hp__chain_sum(b));
    hp__chain_write(b, 2, &ck, 2);
    hp__ctr(s, HP_CTR_ICMP_OUT_MSGS);
    hp__ctr(s, HP_CTR_ICMP_OUT_ECHOS);
    return hp__ipv4_output(s, &r, dst, HP_IPPROTO_ICMP, b);
}
