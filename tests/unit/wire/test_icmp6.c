/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv6 and Neighbor Discovery views: scapy messages, round trips, the validation rules of RFC 4861, options, checksums. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>
#include <hotpath/wire/icmp6.h>

#include "hp_test.h"
#include "l4_vectors.h"

static const uint8_t global1[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t global2[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
static const uint8_t ll1[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t ll2[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 2};
static const uint8_t unspec[16];
static const uint8_t all_nodes[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t all_routers[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
/* The solicited-node address of global2 (RFC 4291 2.7.1). */
static const uint8_t snma2[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2};
static const uint8_t mac1[6] = {0x02, 0x00, 0x5e, 0x00, 0x53, 0x01};

static struct hp_l4_addrs addrs(const uint8_t *src, const uint8_t *dst)
{
    struct hp_l4_addrs a = {6, src, dst};
    return a;
}

static void fix_cksum(const struct hp_l4_addrs *a, uint8_t *m, size_t len)
{
    uint16_t c = hp_cksum_icmp6(a->src, a->dst, m, len);
    memcpy(m + 2, &c, 2);
}

/* ---- ICMPv6 -------------------------------------------------------------- */

HP_TEST(icmp6_vectors)
{
    struct l4v_set *vs = l4v_load("icmp6", NULL);
    HP_REQUIRE(vs != NULL);
    int ok = 0, same = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        uint8_t *msg = l4v_tight(v->l4, v->len);
        struct hp_icmp6_repr r;
        int rc = hp_icmp6_parse(msg, v->len, &v->a, &r, HP_WIRE_VERIFY_CKSUM);
        if (!l4v_expect(v, rc)) {
            hp_test_fail(__FILE__, __LINE__, "line %d: parse gave %d (%s), want %s", v->line, rc,
                         hp_wire_reason(rc), l4v_str(v, "expect"));
            free(msg);
            break;
        }
        HP_CHECK_EQ(hp_icmp6_check(msg, v->len), 0);
        if (rc) {
            free(msg);
            continue;
        }
        ok++;
        HP_CHECK_EQ(r.type, l4v_u64(v, "type"));
        HP_CHECK_EQ(r.code, l4v_u64(v, "code"));
        HP_CHECK_EQ(r.ident, l4v_u64(v, "ident"));
        HP_CHECK_EQ(r.seq, l4v_u64(v, "seq"));
        HP_CHECK_EQ(r.mtu, l4v_u64(v, "mtu"));
        HP_CHECK_EQ(r.pointer, l4v_u64(v, "ptr"));
        HP_CHECK_EQ(r.data_len, l4v_u64(v, "dlen"));
        HP_CHECK(r.data == hp_icmp6_data(msg));
        HP_CHECK_EQ(hp_icmp6_type(msg), r.type);
        HP_CHECK_EQ(hp_icmp6_code(msg), r.code);
        if (r.type < 128) {
            HP_CHECK_EQ(r.data[0] >> 4, 6); /* the quoted IPv6 header */
            if (l4v_str(v, "quote_of"))
                HP_CHECK_EQ(hp_icmp6_quote_len(l4v_u64(v, "quote_of")), r.data_len);
            if (r.type == HP_ICMP6_PACKET_TOO_BIG)
                HP_CHECK_EQ(hp_icmp6_word(msg), r.mtu);
        } else {
            HP_CHECK_EQ(hp_icmp6_ident(msg), r.ident);
            HP_CHECK_EQ(hp_icmp6_seq(msg), r.seq);
        }
        uint8_t out[2048];
        int n = hp_icmp6_emit(&r, &v->a, out, sizeof out);
        HP_REQUIRE_EQ(n, hp_icmp6_repr_len(&r));
        HP_CHECK_EQ(n, v->len);
        if (l4v_u64(v, "same")) {
            same++;
            HP_CHECK_MEMEQ(out, msg, v->len);
        }
        struct hp_icmp6_repr r2;
        HP_REQUIRE_EQ(hp_icmp6_parse(out, (size_t)n, &v->a, &r2, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(r2.type, r.type);
        HP_CHECK_EQ(r2.code, r.code);
        HP_CHECK_EQ(r2.ident, r.ident);
        HP_CHECK_EQ(r2.seq, r.seq);
        HP_CHECK_EQ(r2.mtu, r.mtu);
        HP_CHECK_EQ(r2.pointer, r.pointer);
        HP_CHECK_EQ(r2.data_len, r.data_len);
        HP_CHECK_MEMEQ(r2.data, r.data, r.data_len);
        free(msg);
    }
    HP_CHECK_GE(ok, 20);
    HP_CHECK_GE(same, 20);
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp6_truncated_at_every_length)
{
    struct l4v_set *vs = l4v_load("icmp6", NULL);
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        if (!l4v_is(v, "expect", "ok") || v->len > 300)
            continue;
        for (size_t l = 0; l < v->len; l++) {
            uint8_t *msg = l4v_tight(v->l4, l);
            struct hp_icmp6_repr r;
            int want = l < 8 ? -HP_WIRE_TRUNCATED : 0;
            HP_CHECK_EQ(hp_icmp6_check(msg, l), want);
            if (want == 0 && v->l4[0] < 128 && l < 8 + HP_ICMP6_MIN_QUOTE)
                want = -HP_WIRE_TRUNCATED;
            HP_CHECK_EQ(hp_icmp6_parse(msg, l, &v->a, &r, 0), want);
            if (want == 0) {
                HP_CHECK_EQ(r.data_len, l - 8);
                /* The pseudo-header length changed: the checksum fails. */
                HP_CHECK_EQ(hp_icmp6_parse(msg, l, &v->a, &r, HP_WIRE_VERIFY_CKSUM),
                            -HP_WIRE_BAD_CHECKSUM);
            }
            free(msg);
        }
    }
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp6_every_type)
{
    struct hp_l4_addrs a = addrs(global1, global2);
    for (unsigned t = 0; t < 256; t++) {
        uint8_t d[8 + 40] = {0};
        d[0] = (uint8_t)t;
        d[8] = 0x60;
        fix_cksum(&a, d, sizeof d);
        struct hp_icmp6_repr r;
        bool known = (t >= 1 && t <= 4) || t == 128 || t == 129;
        HP_CHECK_EQ(hp_icmp6_check(d, sizeof d), 0);
        HP_CHECK_EQ(hp_icmp6_parse(d, sizeof d, &a, &r, HP_WIRE_VERIFY_CKSUM),
                    known ? 0 : -HP_WIRE_UNSUPPORTED);
        /* NDP has its own parser; the others are not NDP. */
        if (t < 133 || t > 137) {
            struct hp_ndp_repr n;
            HP_CHECK_EQ(hp_ndp_parse(d, sizeof d, &a, 255, &n, 0), -HP_WIRE_UNSUPPORTED);
        }
        d[9] ^= 4;
        HP_CHECK_EQ(hp_icmp6_parse(d, sizeof d, &a, &r, HP_WIRE_VERIFY_CKSUM),
                    -HP_WIRE_BAD_CHECKSUM);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp6_checksum_and_addresses)
{
    struct hp_l4_addrs a = addrs(global1, global2);
    uint8_t data[33];
    memset(data, 0xA5, sizeof data);
    struct hp_icmp6_repr r = {.type = HP_ICMP6_ECHO_REQUEST,
                              .ident = 1,
                              .seq = 2,
                              .data = data,
                              .data_len = sizeof data},
                         p;
    uint8_t d[64];
    HP_REQUIRE_EQ(hp_icmp6_emit(&r, &a, d, sizeof d), 41);
    HP_REQUIRE_EQ(hp_icmp6_parse(d, 41, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
    for (int i = 1; i < 41; i++) {
        d[i] ^= 0x10;
        HP_CHECK_EQ(hp_icmp6_parse(d, 41, &a, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
        HP_CHECK_EQ(hp_icmp6_parse(d, 41, &a, &p, 0), 0);
        d[i] ^= 0x10;
    }
    /* RFC 4443 2.3: the pseudo-header is covered. */
    struct hp_l4_addrs b = addrs(global2, global2), c = addrs(global1, global1);
    HP_CHECK_EQ(hp_icmp6_parse(d, 41, &b, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
    HP_CHECK_EQ(hp_icmp6_parse(d, 41, &c, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
    /* Addresses: needed to verify, and to emit; family 6 only. */
    struct hp_l4_addrs v4 = {4, global1, global2};
    HP_CHECK_EQ(hp_icmp6_parse(d, 41, NULL, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_ADDRESS);
    HP_CHECK_EQ(hp_icmp6_parse(d, 41, &v4, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_ADDRESS);
    HP_CHECK_EQ(hp_icmp6_parse(d, 41, NULL, &p, 0), 0);
    HP_CHECK_EQ(hp_icmp6_emit(&r, NULL, d, sizeof d), -HP_WIRE_BAD_ADDRESS);
    HP_CHECK_EQ(hp_icmp6_emit(&r, &v4, d, sizeof d), -HP_WIRE_BAD_ADDRESS);
    HP_CHECK_EQ(hp_icmp6_emit(&r, &a, d, 40), -HP_WIRE_NO_SPACE);
    r.data_len = 65535 - 8 + 1;
    HP_CHECK_EQ(hp_icmp6_emit(&r, &a, d, (size_t)1 << 20), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp6_error_fields)
{
    struct hp_l4_addrs a = addrs(global1, global2);
    uint8_t quote[48] = {0x60};
    struct hp_icmp6_repr r = {.type = HP_ICMP6_PACKET_TOO_BIG,
                              .mtu = 1280,
                              .pointer = 77,
                              .ident = 5,
                              .data = quote,
                              .data_len = sizeof quote},
                         p;
    uint8_t d[64];
    HP_REQUIRE_EQ(hp_icmp6_emit(&r, &a, d, sizeof d), 56);
    HP_CHECK_EQ(hp_icmp6_word(d), 1280);
    HP_REQUIRE_EQ(hp_icmp6_parse(d, 56, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(p.mtu, 1280);
    HP_CHECK_EQ(p.pointer, 0);
    HP_CHECK_EQ(p.ident, 0);
    r.type = HP_ICMP6_PARAM_PROBLEM;
    r.code = HP_ICMP6_PARAM_NEXT_HEADER;
    HP_REQUIRE_EQ(hp_icmp6_emit(&r, &a, d, sizeof d), 56);
    HP_CHECK_EQ(hp_icmp6_word(d), 77);
    HP_REQUIRE_EQ(hp_icmp6_parse(d, 56, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(p.pointer, 77);
    HP_CHECK_EQ(p.mtu, 0);
    r.type = HP_ICMP6_TIME_EXCEEDED;
    HP_REQUIRE_EQ(hp_icmp6_emit(&r, &a, d, sizeof d), 56);
    HP_CHECK_EQ(hp_icmp6_word(d), 0);
    /* Quoting less than an IPv6 header. */
    r.data_len = 39;
    HP_REQUIRE_EQ(hp_icmp6_emit(&r, &a, d, sizeof d), 47);
    HP_CHECK_EQ(hp_icmp6_parse(d, 47, &a, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_TRUNCATED);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 4443 2.4(c): the error packet fits the minimum MTU of 1280 bytes. */
HP_TEST(icmp6_quote_len)
{
    HP_CHECK_EQ(hp_icmp6_quote_len(0), 0);
    HP_CHECK_EQ(hp_icmp6_quote_len(48), 48);
    HP_CHECK_EQ(hp_icmp6_quote_len(1232), 1232);
    HP_CHECK_EQ(hp_icmp6_quote_len(1233), 1232);
    HP_CHECK_EQ(hp_icmp6_quote_len(9000), 1232);
    for (size_t n = 40; n < 10000; n += 101)
        HP_CHECK_LE(40 + 8 + hp_icmp6_quote_len(n), 1280);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- Neighbor Discovery --------------------------------------------------- */

static size_t fixed_len(unsigned type)
{
    switch (type) {
    case 133:
        return 8;
    case 134:
        return 16;
    case 135:
    case 136:
        return 24;
    case 137:
        return 40;
    default:
        return 0;
    }
}

static void check_ndp_equal(const struct hp_ndp_repr *x, const struct hp_ndp_repr *y, int line)
{
    bool eq = x->type == y->type && memcmp(x->target, y->target, 16) == 0 &&
              x->router == y->router && x->solicited == y->solicited &&
              x->override == y->override && x->cur_hop_limit == y->cur_hop_limit &&
              x->managed == y->managed && x->other == y->other &&
              x->router_lifetime == y->router_lifetime && x->reachable_time == y->reachable_time &&
              x->retrans_timer == y->retrans_timer && x->has_sll == y->has_sll &&
              x->has_tll == y->has_tll && (!x->has_sll || memcmp(x->sll, y->sll, 6) == 0) &&
              (!x->has_tll || memcmp(x->tll, y->tll, 6) == 0) && x->has_mtu == y->has_mtu &&
              x->mtu == y->mtu && x->n_prefix == y->n_prefix &&
              memcmp(x->redirect_dst, y->redirect_dst, 16) == 0;
    for (int i = 0; eq && i < x->n_prefix && i < HP_NDP_MAX_PREFIX; i++) {
        const struct hp_ndp_prefix *p = &x->prefix[i], *q = &y->prefix[i];
        eq = p->len == q->len && p->onlink == q->onlink && p->autonomous == q->autonomous &&
             p->valid == q->valid && p->preferred == q->preferred &&
             memcmp(p->prefix, q->prefix, 16) == 0;
    }
    if (!eq)
        hp_test_fail(__FILE__, __LINE__, "line %d: NDP fields differ", line);
}

/* The fields scapy wrote, from a vector's keys. */
static void want_ndp(const struct l4v *v, struct hp_ndp_repr *w)
{
    memset(w, 0, sizeof *w);
    w->type = (uint8_t)l4v_u64(v, "type");
    l4v_bytes(v, "target", w->target, 16);
    w->router = l4v_u64(v, "router");
    w->solicited = l4v_u64(v, "solicited");
    w->override = l4v_u64(v, "override");
    w->cur_hop_limit = (uint8_t)l4v_u64(v, "chlim");
    w->managed = l4v_u64(v, "managed");
    w->other = l4v_u64(v, "other");
    w->router_lifetime = (uint16_t)l4v_u64(v, "lifetime");
    w->reachable_time = (uint32_t)l4v_u64(v, "reachable");
    w->retrans_timer = (uint32_t)l4v_u64(v, "retrans");
    w->has_sll = l4v_bytes(v, "sll", w->sll, 6);
    w->has_tll = l4v_bytes(v, "tll", w->tll, 6);
    w->has_mtu = l4v_str(v, "mtu") != NULL;
    w->mtu = (uint32_t)l4v_u64(v, "mtu");
    w->n_prefix = (int)l4v_u64(v, "nprefix");
    for (int i = 0; i < w->n_prefix && i < HP_NDP_MAX_PREFIX; i++) {
        char key[5] = {'p', 'f', 'x', (char)('0' + i), '\0'};
        const char *s = l4v_str(v, key);
        if (!s)
            continue;
        unsigned len, l, a;
        unsigned long valid, pref;
        char hex[33];
        if (sscanf(s, "%u,%u,%u,%lu,%lu,%32s", &len, &l, &a, &valid, &pref, hex) != 6)
            continue;
        w->prefix[i].len = (uint8_t)len;
        w->prefix[i].onlink = l;
        w->prefix[i].autonomous = a;
        w->prefix[i].valid = (uint32_t)valid;
        w->prefix[i].preferred = (uint32_t)pref;
        l4v_unhex(hex, w->prefix[i].prefix, 16);
    }
    l4v_bytes(v, "rdst", w->redirect_dst, 16);
}

HP_TEST(ndp_vectors)
{
    struct l4v_set *vs = l4v_load("ndp", NULL);
    HP_REQUIRE(vs != NULL);
    int ok = 0, same = 0, refused = 0, types[256] = {0};
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        uint8_t *msg = l4v_tight(v->l4, v->len);
        struct hp_ndp_repr r;
        int rc = hp_ndp_parse(msg, v->len, &v->a, v->hlim, &r, HP_WIRE_VERIFY_CKSUM);
        if (!l4v_expect(v, rc)) {
            hp_test_fail(__FILE__, __LINE__, "line %d: parse gave %d (%s), want %s", v->line, rc,
                         hp_wire_reason(rc), l4v_str(v, "expect"));
            free(msg);
            break;
        }
        if (rc) {
            refused++;
            free(msg);
            continue;
        }
        ok++;
        types[r.type]++;
        struct hp_ndp_repr w;
        want_ndp(v, &w);
        check_ndp_equal(&r, &w, v->line);
        /* ICMPv6 parse leaves NDP to hp_ndp_parse. */
        struct hp_icmp6_repr ir;
        HP_CHECK_EQ(hp_icmp6_parse(msg, v->len, &v->a, &ir, HP_WIRE_VERIFY_CKSUM),
                    -HP_WIRE_UNSUPPORTED);

        uint8_t out[2048];
        int n = hp_ndp_emit(&r, &v->a, out, sizeof out);
        HP_REQUIRE_EQ(n, hp_ndp_repr_len(&r));
        if (l4v_u64(v, "same")) {
            same++;
            HP_CHECK_EQ(n, v->len);
            HP_CHECK_MEMEQ(out, msg, v->len);
        }
        struct hp_ndp_repr r2;
        HP_REQUIRE_EQ(hp_ndp_parse(out, (size_t)n, &v->a, 255, &r2, HP_WIRE_VERIFY_CKSUM), 0);
        check_ndp_equal(&r2, &r, v->line);
        free(msg);
    }
    HP_CHECK_GE(ok, 20);
    HP_CHECK_GE(same, 14);
    HP_CHECK_GE(refused, 14);
    for (unsigned t = 133; t <= 137; t++)
        HP_CHECK_GT(types[t], 0);
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 4861: hop limit 255 proves the message was not forwarded. */
HP_TEST(ndp_hop_limit_not_255)
{
    struct l4v_set *vs = l4v_load("ndp", NULL);
    HP_REQUIRE(vs != NULL);
    int n = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        if (!l4v_is(v, "expect", "ok"))
            continue;
        struct hp_ndp_repr r;
        for (unsigned h = 0; h < 255; h++)
            HP_CHECK_EQ(hp_ndp_parse(v->l4, v->len, &v->a, (uint8_t)h, &r, HP_WIRE_VERIFY_CKSUM),
                        -HP_WIRE_BAD_FIELD);
        HP_CHECK_EQ(hp_ndp_parse(v->l4, v->len, &v->a, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
        n++;
    }
    HP_CHECK_GT(n, 0);
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Cut every valid message at every length: below 8 bytes truncated, below
 * the fixed part a length error, inside an option an option error, and at
 * an option boundary a valid (shorter) message. */
HP_TEST(ndp_truncated_at_every_length)
{
    struct l4v_set *vs = l4v_load("ndp", NULL);
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        if (!l4v_is(v, "expect", "ok"))
            continue;
        size_t fixed = fixed_len(v->l4[0]);
        bool boundary[2048] = {false};
        for (size_t o = fixed; o <= v->len && o < sizeof boundary; o += v->l4[o + 1] * 8u) {
            boundary[o] = true;
            if (o + 2 > v->len || v->l4[o + 1] == 0)
                break;
        }
        for (size_t l = 0; l < v->len; l++) {
            uint8_t *msg = l4v_tight(v->l4, l);
            struct hp_ndp_repr r;
            int rc = hp_ndp_parse(msg, l, &v->a, 255, &r, 0);
            int want = l < 8         ? -HP_WIRE_TRUNCATED
                       : l < fixed   ? -HP_WIRE_BAD_LENGTH
                       : boundary[l] ? 0
                                     : -HP_WIRE_BAD_OPTION;
            if (rc != want) {
                hp_test_fail(__FILE__, __LINE__, "line %d cut at %zu: %d, want %d", v->line, l, rc,
                             want);
                free(msg);
                break;
            }
            free(msg);
        }
    }
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* An NS to global2 from global1 with the options given (whole units). */
static size_t ns_with(uint8_t *d, const uint8_t *opts, size_t olen, const struct hp_l4_addrs *a)
{
    struct hp_ndp_repr r = {.type = HP_NDP_NEIGHBOR_SOLICIT};
    memcpy(r.target, global2, 16);
    int n = hp_ndp_emit(&r, a, d, 24);
    if (n != 24)
        return 0;
    memcpy(d + 24, opts, olen);
    fix_cksum(a, d, 24 + olen);
    return 24 + olen;
}

HP_TEST(ndp_option_lengths)
{
    struct hp_l4_addrs a = addrs(global1, snma2);
    struct hp_ndp_repr r;
    uint8_t d[128];
    /* Length 0 (RFC 4861 4.6: MUST NOT be 0), whatever the type. */
    for (unsigned t = 0; t < 256; t += 17) {
        uint8_t o[8] = {(uint8_t)t, 0};
        size_t n = ns_with(d, o, 8, &a);
        HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    }
    /* Running past the message. */
    static const uint8_t past[8] = {HP_NDP_OPT_SLL, 2, 1, 2, 3, 4, 5, 6};
    size_t n = ns_with(d, past, 8, &a);
    HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    /* A lone byte, or a type and length with nothing after. */
    static const uint8_t one[9] = {HP_NDP_OPT_SLL, 1, 1, 2, 3, 4, 5, 6, 99};
    n = ns_with(d, one, 9, &a);
    HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    n = ns_with(d, one, 2, &a);
    HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    /* A valid SLL, an unknown option skipped, then the SLL again. */
    static const uint8_t good[24] = {
        HP_NDP_OPT_SLL, 1, 1,   2,   3,   4,   5,   6,  200, 1, 9, 9, 9, 9, 9, 9,
        HP_NDP_OPT_SLL, 1, 0xa, 0xb, 0xc, 0xd, 0xe, 0xf};
    n = ns_with(d, good, 24, &a);
    HP_REQUIRE_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(r.has_sll);
    HP_CHECK_EQ(r.sll[0], 0xa);
    /* An SLL of another link type (16 bytes): not an Ethernet address. */
    static const uint8_t wide[16] = {HP_NDP_OPT_SLL, 2, 1, 2, 3, 4, 5, 6, 7, 8};
    n = ns_with(d, wide, 16, &a);
    HP_REQUIRE_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(!r.has_sll);
    /* Options that do not belong to an NS are ignored, whatever they hold. */
    static const uint8_t other[16] = {HP_NDP_OPT_PREFIX, 2, 200, 0, 0, 0, 0, 0,
                                      HP_NDP_OPT_TLL,    1, 1,   2, 3, 4, 5, 6};
    n = ns_with(d, other, 16, &a);
    HP_REQUIRE_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(!r.has_tll);
    HP_CHECK_EQ(r.n_prefix, 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* An RA from ll1 with a prefix and an MTU option, then a mutation. */
static size_t ra_with(uint8_t *d, const struct hp_l4_addrs *a)
{
    struct hp_ndp_repr r = {.type = HP_NDP_ROUTER_ADVERT,
                            .cur_hop_limit = 64,
                            .router_lifetime = 1800,
                            .has_mtu = true,
                            .mtu = 1500,
                            .n_prefix = 1};
    r.prefix[0].len = 64;
    r.prefix[0].onlink = r.prefix[0].autonomous = true;
    r.prefix[0].valid = 86400;
    r.prefix[0].preferred = 14400;
    memcpy(r.prefix[0].prefix, global1, 8);
    int n = hp_ndp_emit(&r, a, d, 128);
    return n > 0 ? (size_t)n : 0;
}

HP_TEST(ndp_ra_options)
{
    struct hp_l4_addrs a = addrs(ll1, all_nodes);
    struct hp_ndp_repr r;
    uint8_t d[128];
    size_t n = ra_with(d, &a);
    HP_REQUIRE_EQ(n, 16 + 8 + 32);
    HP_REQUIRE_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(r.has_mtu);
    HP_CHECK_EQ(r.mtu, 1500);
    HP_CHECK_EQ(r.n_prefix, 1);
    HP_CHECK_EQ(r.prefix[0].len, 64);
    /* MTU option of length 2 (4.6.4: 1). */
    d[17] = 2;
    memmove(d + 32, d + 24, 32); /* keep the message whole: shift the prefix */
    memset(d + 24, 0, 8);
    fix_cksum(&a, d, n + 8);
    HP_CHECK_EQ(hp_ndp_parse(d, n + 8, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    /* Prefix option lengths other than 4 (4.6.2), and prefix length 129. */
    n = ra_with(d, &a);
    d[25] = 3;
    fix_cksum(&a, d, n);
    HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    n = ra_with(d, &a);
    d[26] = 129;
    fix_cksum(&a, d, n);
    HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    d[26] = 128;
    fix_cksum(&a, d, n);
    HP_CHECK_EQ(hp_ndp_parse(d, n, &a, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
    /* In an NS an MTU option is not looked into, but its length must still
     * fit the message (4.6). */
    struct hp_l4_addrs b = addrs(global1, snma2);
    static const uint8_t mtu3[8] = {HP_NDP_OPT_MTU, 3};
    uint8_t e[64];
    size_t m = ns_with(e, mtu3, 8, &b);
    HP_CHECK_EQ(hp_ndp_parse(e, m, &b, 255, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_OPTION);
    static const uint8_t mtu1[8] = {HP_NDP_OPT_MTU, 1, 0, 0, 0, 0, 5, 0};
    m = ns_with(e, mtu1, 8, &b);
    HP_CHECK_EQ(hp_ndp_parse(e, m, &b, 255, &r, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK(!r.has_mtu);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

struct rule_case {
    const char *what;
    struct hp_ndp_repr r;
    const uint8_t *src, *dst;
    int want;
};

/* The rules of RFC 4861 sections 6.1.1, 6.1.2, 7.1.1, 7.1.2 and 8.1, on
 * messages we emit ourselves (hop limit 255, checksum right). */
HP_TEST(ndp_validation_rules)
{
    struct rule_case c[24];
    int n = 0;
#define CASE(w, s, d, exp)                                                                         \
    do {                                                                                           \
        memset(&c[n], 0, sizeof c[n]);                                                             \
        c[n].what = (w);                                                                           \
        c[n].src = (s);                                                                            \
        c[n].dst = (d);                                                                            \
        c[n].want = (exp);                                                                         \
        n++;                                                                                       \
    } while (0)
    /* NS (7.1.1) */
    CASE("NS resolution", global1, snma2, 0);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(c[n - 1].r.target, global2, 16);
    c[n - 1].r.has_sll = true;
    CASE("NS target multicast", global1, snma2, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(c[n - 1].r.target, all_nodes, 16);
    CASE("NS DAD", unspec, snma2, 0);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(c[n - 1].r.target, global2, 16);
    CASE("NS DAD with SLL", unspec, snma2, -HP_WIRE_BAD_OPTION);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(c[n - 1].r.target, global2, 16);
    c[n - 1].r.has_sll = true;
    CASE("NS DAD to unicast", unspec, global2, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(c[n - 1].r.target, global2, 16);
    CASE("NS DAD to all-nodes", unspec, all_nodes, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_SOLICIT;
    memcpy(c[n - 1].r.target, global2, 16);
    /* NA (7.1.2) */
    CASE("NA solicited unicast", global2, global1, 0);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_ADVERT;
    memcpy(c[n - 1].r.target, global2, 16);
    c[n - 1].r.solicited = c[n - 1].r.override = c[n - 1].r.has_tll = true;
    CASE("NA solicited to multicast", global2, all_nodes, -HP_WIRE_BAD_FIELD);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_ADVERT;
    memcpy(c[n - 1].r.target, global2, 16);
    c[n - 1].r.solicited = true;
    CASE("NA unsolicited to multicast", global2, all_nodes, 0);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_ADVERT;
    memcpy(c[n - 1].r.target, global2, 16);
    c[n - 1].r.override = true;
    CASE("NA target multicast", global2, global1, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_NEIGHBOR_ADVERT;
    memcpy(c[n - 1].r.target, snma2, 16);
    /* RS (6.1.1) */
    CASE("RS", ll1, all_routers, 0);
    c[n - 1].r.type = HP_NDP_ROUTER_SOLICIT;
    c[n - 1].r.has_sll = true;
    CASE("RS unspecified", unspec, all_routers, 0);
    c[n - 1].r.type = HP_NDP_ROUTER_SOLICIT;
    CASE("RS unspecified with SLL", unspec, all_routers, -HP_WIRE_BAD_OPTION);
    c[n - 1].r.type = HP_NDP_ROUTER_SOLICIT;
    c[n - 1].r.has_sll = true;
    /* RA (6.1.2) */
    CASE("RA link-local", ll1, all_nodes, 0);
    c[n - 1].r.type = HP_NDP_ROUTER_ADVERT;
    CASE("RA global source", global1, all_nodes, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_ROUTER_ADVERT;
    CASE("RA unspecified source", unspec, all_nodes, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_ROUTER_ADVERT;
    /* Redirect (8.1) */
    CASE("Redirect to on-link neighbour", ll1, global1, 0);
    c[n - 1].r.type = HP_NDP_REDIRECT;
    memcpy(c[n - 1].r.target, ll2, 16);
    memcpy(c[n - 1].r.redirect_dst, global2, 16);
    CASE("Redirect target = destination", ll1, global1, 0);
    c[n - 1].r.type = HP_NDP_REDIRECT;
    memcpy(c[n - 1].r.target, global2, 16);
    memcpy(c[n - 1].r.redirect_dst, global2, 16);
    CASE("Redirect global source", global2, global1, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_REDIRECT;
    memcpy(c[n - 1].r.target, ll2, 16);
    memcpy(c[n - 1].r.redirect_dst, global2, 16);
    CASE("Redirect destination multicast", ll1, global1, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_REDIRECT;
    memcpy(c[n - 1].r.target, ll2, 16);
    memcpy(c[n - 1].r.redirect_dst, all_nodes, 16);
    CASE("Redirect target global, not the destination", ll1, global1, -HP_WIRE_BAD_ADDRESS);
    c[n - 1].r.type = HP_NDP_REDIRECT;
    memcpy(c[n - 1].r.target, global1, 16);
    memcpy(c[n - 1].r.redirect_dst, global2, 16);
#undef CASE
    for (int i = 0; i < n; i++) {
        memcpy(c[i].r.sll, mac1, 6);
        memcpy(c[i].r.tll, mac1, 6);
        struct hp_l4_addrs a = addrs(c[i].src, c[i].dst);
        uint8_t d[128];
        int len = hp_ndp_emit(&c[i].r, &a, d, sizeof d);
        HP_REQUIRE(len > 0);
        uint8_t *t = l4v_tight(d, (size_t)len);
        struct hp_ndp_repr p;
        int rc = hp_ndp_parse(t, (size_t)len, &a, 255, &p, HP_WIRE_VERIFY_CKSUM);
        if (rc != c[i].want)
            hp_test_fail(__FILE__, __LINE__, "%s: parse gave %d (%s), want %d", c[i].what, rc,
                         hp_wire_reason(rc), c[i].want);
        if (rc == 0) {
            /* Code not 0; a bad checksum; a message shorter than its type's
             * fixed part; a hop limit of 254. */
            size_t fixed = fixed_len(c[i].r.type);
            t[1] = 1;
            fix_cksum(&a, t, (size_t)len);
            HP_CHECK_EQ(hp_ndp_parse(t, (size_t)len, &a, 255, &p, HP_WIRE_VERIFY_CKSUM),
                        -HP_WIRE_BAD_FIELD);
            t[1] = 0;
            HP_CHECK_EQ(hp_ndp_parse(t, (size_t)len, &a, 255, &p, HP_WIRE_VERIFY_CKSUM),
                        -HP_WIRE_BAD_CHECKSUM);
            fix_cksum(&a, t, (size_t)len);
            HP_CHECK_EQ(hp_ndp_parse(t, (size_t)len, &a, 254, &p, HP_WIRE_VERIFY_CKSUM),
                        -HP_WIRE_BAD_FIELD);
            if (fixed > 8) {
                fix_cksum(&a, t, fixed - 1);
                HP_CHECK_EQ(hp_ndp_parse(t, fixed - 1, &a, 255, &p, HP_WIRE_VERIFY_CKSUM),
                            -HP_WIRE_BAD_LENGTH);
            }
            /* Addresses: required, IPv6. */
            struct hp_l4_addrs v4 = {4, c[i].src, c[i].dst};
            HP_CHECK_EQ(hp_ndp_parse(t, (size_t)len, NULL, 255, &p, 0), -HP_WIRE_BAD_ADDRESS);
            HP_CHECK_EQ(hp_ndp_parse(t, (size_t)len, &v4, 255, &p, 0), -HP_WIRE_BAD_ADDRESS);
        }
        free(t);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* emit of each type, with every option it carries, and the limits of emit. */
HP_TEST(ndp_emit_each_type)
{
    for (unsigned t = 133; t <= 137; t++) {
        struct hp_ndp_repr r = {.type = (uint8_t)t,
                                .has_sll = true,
                                .has_tll = true,
                                .has_mtu = true,
                                .mtu = 9000,
                                .n_prefix = 4,
                                .cur_hop_limit = 64,
                                .managed = true,
                                .router_lifetime = 600,
                                .reachable_time = 1,
                                .retrans_timer = 2,
                                .router = true};
        memcpy(r.sll, mac1, 6);
        memcpy(r.tll, mac1, 6);
        r.tll[5] = 0x99;
        for (int i = 0; i < 4; i++) {
            r.prefix[i].len = (uint8_t)(48 + 8 * i);
            r.prefix[i].onlink = i & 1;
            r.prefix[i].autonomous = i & 2;
            r.prefix[i].valid = 1000u * (uint32_t)i;
            r.prefix[i].preferred = 500u * (uint32_t)i;
            memcpy(r.prefix[i].prefix, global1, 16);
            r.prefix[i].prefix[7] = (uint8_t)i;
        }
        memcpy(r.target, t == 137 ? ll2 : global2, 16);
        memcpy(r.redirect_dst, global1, 16);
        const uint8_t *src = t == 133 || t == 134 || t == 137 ? ll1 : global1;
        const uint8_t *dst = t == 135 ? snma2 : all_nodes;
        struct hp_l4_addrs a = addrs(src, dst);
        size_t want = fixed_len(t) + (t == 134 ? 8 + 8 + 128 : 8);
        HP_CHECK_EQ(hp_ndp_repr_len(&r), want);
        uint8_t d[256];
        HP_CHECK_EQ(hp_ndp_emit(&r, &a, d, want - 1), -HP_WIRE_NO_SPACE);
        HP_REQUIRE_EQ(hp_ndp_emit(&r, &a, d, sizeof d), want);
        struct hp_ndp_repr p;
        HP_REQUIRE_EQ(hp_ndp_parse(d, want, &a, 255, &p, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(p.type, t);
        /* Only the options of the type come back. */
        HP_CHECK_EQ(p.has_sll, t == 133 || t == 134 || t == 135);
        HP_CHECK_EQ(p.has_tll, t == 136 || t == 137);
        HP_CHECK_EQ(p.has_mtu, t == 134);
        HP_CHECK_EQ(p.n_prefix, t == 134 ? 4 : 0);
        if (t == 134) {
            HP_CHECK_EQ(p.cur_hop_limit, 64);
            HP_CHECK(p.managed && !p.other);
            HP_CHECK_EQ(p.router_lifetime, 600);
            HP_CHECK_EQ(p.reachable_time, 1);
            HP_CHECK_EQ(p.retrans_timer, 2);
            for (int i = 0; i < 4; i++) {
                HP_CHECK_EQ(p.prefix[i].len, r.prefix[i].len);
                HP_CHECK_EQ(p.prefix[i].onlink, r.prefix[i].onlink);
                HP_CHECK_EQ(p.prefix[i].autonomous, r.prefix[i].autonomous);
                HP_CHECK_EQ(p.prefix[i].valid, r.prefix[i].valid);
                HP_CHECK_EQ(p.prefix[i].preferred, r.prefix[i].preferred);
                HP_CHECK_MEMEQ(p.prefix[i].prefix, r.prefix[i].prefix, 16);
            }
        }
        if (t == 136)
            HP_CHECK(p.router && !p.solicited && !p.override);
        if (t == 137)
            HP_CHECK_MEMEQ(p.redirect_dst, global1, 16);
        if (t >= 135)
            HP_CHECK_MEMEQ(p.target, r.target, 16);
        if (p.has_tll)
            HP_CHECK_EQ(p.tll[5], 0x99);
        HP_CHECK_EQ(hp_ndp_emit(&r, NULL, d, sizeof d), -HP_WIRE_BAD_ADDRESS);
    }
    struct hp_l4_addrs a = addrs(ll1, all_nodes);
    struct hp_ndp_repr r = {.type = HP_NDP_ROUTER_ADVERT, .n_prefix = HP_NDP_MAX_PREFIX + 1};
    uint8_t d[512];
    HP_CHECK_EQ(hp_ndp_emit(&r, &a, d, sizeof d), -HP_WIRE_BAD_OPTION);
    r.n_prefix = -1;
    HP_CHECK_EQ(hp_ndp_emit(&r, &a, d, sizeof d), -HP_WIRE_BAD_OPTION);
    r.type = HP_ICMP6_ECHO_REQUEST;
    HP_CHECK_EQ(hp_ndp_repr_len(&r), 0);
    HP_CHECK_EQ(hp_ndp_emit(&r, &a, d, sizeof d), -HP_WIRE_UNSUPPORTED);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
