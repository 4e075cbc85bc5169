/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the ICMPv6 and Neighbor Discovery views must stay in bounds, agree with themselves, and round-trip what they accept. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/icmp6.h>

/*
 * Input layout (missing header bytes read as zero):
 *
 *   [0]       bit 1: verify the checksum; bit 2: use hop limit 255
 *   [1]       the hop limit otherwise
 *   [2..17]   IPv6 source address
 *   [18..33]  IPv6 destination address
 *   [34..]    the ICMPv6 message, copied into an allocation of exactly its
 *             size so that AddressSanitizer reports any read past the end
 */

#define HDR 34

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "icmp6_fuzz: %s\n", what);
    abort();
}

static uint8_t *tight(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (!c)
        abort();
    if (n)
        memcpy(c, p, n);
    return c;
}

static bool same_icmp6(const struct hp_icmp6_repr *x, const struct hp_icmp6_repr *y)
{
    return x->type == y->type && x->code == y->code && x->ident == y->ident && x->seq == y->seq &&
           x->mtu == y->mtu && x->pointer == y->pointer && x->data_len == y->data_len &&
           memcmp(x->data, y->data, x->data_len) == 0;
}

static bool same_ndp(const struct hp_ndp_repr *x, const struct hp_ndp_repr *y)
{
    if (x->type != y->type || memcmp(x->target, y->target, 16) != 0 || x->router != y->router ||
        x->solicited != y->solicited || x->override != y->override ||
        x->cur_hop_limit != y->cur_hop_limit || x->managed != y->managed || x->other != y->other ||
        x->router_lifetime != y->router_lifetime || x->reachable_time != y->reachable_time ||
        x->retrans_timer != y->retrans_timer || x->has_sll != y->has_sll ||
        x->has_tll != y->has_tll || memcmp(x->sll, y->sll, 6) != 0 ||
        memcmp(x->tll, y->tll, 6) != 0 || x->has_mtu != y->has_mtu || x->mtu != y->mtu ||
        x->n_prefix != y->n_prefix || memcmp(x->redirect_dst, y->redirect_dst, 16) != 0)
        return false;
    for (int i = 0; i < x->n_prefix; i++) {
        const struct hp_ndp_prefix *p = &x->prefix[i], *q = &y->prefix[i];
        if (p->len != q->len || p->onlink != q->onlink || p->autonomous != q->autonomous ||
            p->valid != q->valid || p->preferred != q->preferred ||
            memcmp(p->prefix, q->prefix, 16) != 0)
            return false;
    }
    return true;
}

static void icmp6_round_trip(const uint8_t *pkt, size_t n, const struct hp_l4_addrs *a,
                             unsigned flags, int chk)
{
    struct hp_icmp6_repr r;
    int rc = hp_icmp6_parse(pkt, n, a, &r, flags);
    if (chk != 0 && rc != chk)
        fail("icmp6 parse and check disagree on a short message");
    if (rc != 0)
        return;
    if (r.data != pkt + HP_ICMP6_HDR_LEN || r.data_len != n - HP_ICMP6_HDR_LEN)
        fail("icmp6 parse gave data outside the message");
    size_t len = hp_icmp6_repr_len(&r);
    uint8_t *out = malloc(len), *out2 = malloc(len);
    if (!out || !out2)
        abort();
    if (hp_icmp6_emit(&r, a, out, len - 1) != -HP_WIRE_NO_SPACE)
        fail("icmp6 emit wrote into too small a buffer");
    if (hp_icmp6_emit(&r, a, out, len) != (int)len)
        fail("icmp6 emit failed on a parsed message");
    struct hp_icmp6_repr r2;
    if (hp_icmp6_parse(out, len, a, &r2, HP_WIRE_VERIFY_CKSUM) != 0)
        fail("emitted icmp6 message does not parse");
    if (!same_icmp6(&r, &r2))
        fail("icmp6 round trip changed the message");
    if (hp_icmp6_emit(&r2, a, out2, len) != (int)len || memcmp(out, out2, len) != 0)
        fail("second icmp6 emit differs from the first");
    free(out);
    free(out2);
}

static void ndp_round_trip(const uint8_t *pkt, size_t n, const struct hp_l4_addrs *a, uint8_t hlim,
                           unsigned flags)
{
    struct hp_ndp_repr r;
    int rc = hp_ndp_parse(pkt, n, a, hlim, &r, flags);
    if (rc != 0)
        return;
    if (hlim != 255 || r.type < HP_NDP_ROUTER_SOLICIT || r.type > HP_NDP_REDIRECT ||
        r.n_prefix < 0 || r.n_prefix > HP_NDP_MAX_PREFIX)
        fail("ndp parse accepted what the rules refuse");
    size_t len = hp_ndp_repr_len(&r);
    if (len < HP_ICMP6_HDR_LEN || len > n)
        fail("ndp repr_len larger than the parsed message");
    uint8_t *out = malloc(len), *out2 = malloc(len);
    if (!out || !out2)
        abort();
    if (hp_ndp_emit(&r, a, out, len - 1) != -HP_WIRE_NO_SPACE)
        fail("ndp emit wrote into too small a buffer");
    if (hp_ndp_emit(&r, a, out, len) != (int)len)
        fail("ndp emit failed on a parsed message");
    struct hp_ndp_repr r2;
    if (hp_ndp_parse(out, len, a, 255, &r2, HP_WIRE_VERIFY_CKSUM) != 0)
        fail("emitted ndp message does not parse");
    if (!same_ndp(&r, &r2))
        fail("ndp round trip changed the message");
    if (hp_ndp_emit(&r2, a, out2, len) != (int)len || memcmp(out, out2, len) != 0)
        fail("second ndp emit differs from the first");
    free(out);
    free(out2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t hdr[HDR] = {0};
    memcpy(hdr, data, size < HDR ? size : HDR);
    size_t n = size > HDR ? size - HDR : 0;
    uint8_t *pkt = tight(data + (size > HDR ? HDR : size), n);
    struct hp_l4_addrs a = {6, hdr + 2, hdr + 18};
    unsigned flags = (hdr[0] & 2) ? HP_WIRE_VERIFY_CKSUM : 0;
    uint8_t hlim = (hdr[0] & 4) ? 255 : hdr[1];

    int chk = hp_icmp6_check(pkt, n);
    volatile unsigned sink = 0;
    if (chk == 0) {
        sink += hp_icmp6_type(pkt) + hp_icmp6_code(pkt) + hp_icmp6_cksum(pkt) +
                hp_icmp6_ident(pkt) + hp_icmp6_seq(pkt) + hp_icmp6_word(pkt);
        const uint8_t *d = hp_icmp6_data(pkt);
        for (size_t i = 0; i < n - HP_ICMP6_HDR_LEN; i++)
            sink += d[i];
    }
    size_t q = hp_icmp6_quote_len(n * 37);
    if (q > 1232 || q > n * 37)
        fail("quote length out of range");

    icmp6_round_trip(pkt, n, &a, flags, chk);
    ndp_round_trip(pkt, n, &a, hlim, flags);
    (void)sink;
    free(pkt);
    return 0;
}
