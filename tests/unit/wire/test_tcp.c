/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP header view: scapy segments with every option kind, round trips, option and data offset errors, checksums. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>
#include <hotpath/wire/tcp.h>

#include "hp_test.h"
#include "l4_vectors.h"

static const uint8_t src4[4] = {198, 18, 0, 1}, dst4[4] = {198, 18, 7, 9};
static const uint8_t src6[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t dst6[16] = {0x20, 0x01, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

static struct hp_l4_addrs addrs(int family)
{
    struct hp_l4_addrs a = {(uint8_t)family, family == 4 ? src4 : src6, family == 4 ? dst4 : dst6};
    return a;
}

/* A raw segment: a 20-byte header whose data offset covers opts (padded with
 * zeros to 4 bytes), then n payload bytes; a correct checksum for family 4.
 * Returns the segment length. */
static size_t raw_segment(uint8_t *d, const uint8_t *opts, size_t olen, size_t n)
{
    size_t pad = (olen + 3) / 4 * 4;
    memset(d, 0, 20 + pad + n);
    hp_put_be16(d, 1000);
    hp_put_be16(d + 2, 2000);
    hp_put_be32(d + 4, 0x01020304);
    hp_put_be32(d + 8, 0x0A0B0C0D);
    d[12] = (uint8_t)((5 + pad / 4) << 4);
    d[13] = HP_TCP_F_SYN;
    hp_put_be16(d + 14, 65535);
    if (olen)
        memcpy(d + 20, opts, olen);
    for (size_t i = 0; i < n; i++)
        d[20 + pad + i] = (uint8_t)i;
    uint16_t c = hp_cksum_tcp4(src4, dst4, d, 20 + pad + n);
    memcpy(d + 16, &c, 2);
    return 20 + pad + n;
}

static int parse_opts(const uint8_t *opts, size_t olen, struct hp_tcp_repr *r)
{
    uint8_t d[128];
    size_t n = raw_segment(d, opts, olen, 0);
    uint8_t *t = l4v_tight(d, n);
    struct hp_l4_addrs a = addrs(4);
    int rc = hp_tcp_parse(t, n, &a, r, HP_WIRE_VERIFY_CKSUM);
    int rc2 = hp_tcp_check(t, n);
    if (rc != rc2 && rc2 != 0)
        hp_test_fail(__FILE__, __LINE__, "check gave %d, parse %d", rc2, rc);
    free(t);
    return rc;
}

static bool opts_equal(const struct hp_tcp_opts *x, const struct hp_tcp_opts *y)
{
    if (x->has_mss != y->has_mss || (x->has_mss && x->mss != y->mss))
        return false;
    if (x->has_ws != y->has_ws || (x->has_ws && x->ws != y->ws))
        return false;
    if (x->sack_perm != y->sack_perm || x->has_ts != y->has_ts || x->n_sack != y->n_sack)
        return false;
    if (x->has_ts && (x->ts_val != y->ts_val || x->ts_ecr != y->ts_ecr))
        return false;
    for (int i = 0; i < x->n_sack; i++)
        if (x->sack[i][0] != y->sack[i][0] || x->sack[i][1] != y->sack[i][1])
            return false;
    return true;
}

/* The expected options of a vector. */
static void want_opts(const struct l4v *v, struct hp_tcp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->has_mss = l4v_str(v, "mss") != NULL;
    o->mss = (uint16_t)l4v_u64(v, "mss");
    o->has_ws = l4v_str(v, "ws") != NULL;
    o->ws = (uint8_t)l4v_u64(v, "ws");
    o->ws_clamped = l4v_u64(v, "ws_clamped") != 0;
    o->sack_perm = l4v_u64(v, "sackok") != 0;
    o->has_ts = l4v_str(v, "ts_val") != NULL;
    o->ts_val = (uint32_t)l4v_u64(v, "ts_val");
    o->ts_ecr = (uint32_t)l4v_u64(v, "ts_ecr");
    o->n_sack = (uint8_t)l4v_u64(v, "nsack");
    const char *s = l4v_str(v, "sack");
    for (int i = 0; s && i < o->n_sack && i < HP_TCP_MAX_SACK; i++) {
        char *end;
        o->sack[i][0] = (uint32_t)strtoul(s, &end, 10);
        o->sack[i][1] = (uint32_t)strtoul(end + 1, &end, 10);
        s = end + 1;
    }
}

HP_TEST(tcp_vectors)
{
    struct l4v_set *vs = l4v_load("tcp4", "tcp6");
    HP_REQUIRE(vs != NULL);
    int ok = 0, same = 0, bad = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        uint8_t *seg = l4v_tight(v->l4, v->len);
        struct hp_tcp_repr r;
        int rc = hp_tcp_parse(seg, v->len, &v->a, &r, HP_WIRE_VERIFY_CKSUM);
        if (!l4v_expect(v, rc)) {
            hp_test_fail(__FILE__, __LINE__, "line %d: parse gave %d (%s), want %s", v->line, rc,
                         hp_wire_reason(rc), l4v_str(v, "expect"));
            free(seg);
            break;
        }
        /* check agrees with parse on well-formedness. */
        HP_CHECK_EQ(hp_tcp_check(seg, v->len), rc);
        if (rc) {
            bad++;
            free(seg);
            continue;
        }
        ok++;
        HP_CHECK_EQ(r.src_port, l4v_u64(v, "sport"));
        HP_CHECK_EQ(r.dst_port, l4v_u64(v, "dport"));
        HP_CHECK_EQ(r.seq, l4v_u64(v, "seq"));
        HP_CHECK_EQ(r.ack, l4v_u64(v, "ack"));
        HP_CHECK_EQ(r.flags, l4v_u64(v, "flags"));
        HP_CHECK_EQ(r.window, l4v_u64(v, "window"));
        HP_CHECK_EQ(r.urgent, l4v_u64(v, "urgent"));
        HP_CHECK_EQ(r.data_off, l4v_u64(v, "doff"));
        HP_CHECK_EQ(r.payload_len, l4v_u64(v, "plen"));
        HP_CHECK(r.payload == seg + r.data_off);
        struct hp_tcp_opts w;
        want_opts(v, &w);
        if (!opts_equal(&r.opt, &w) || r.opt.ws_clamped != w.ws_clamped)
            hp_test_fail(__FILE__, __LINE__, "line %d: options differ from scapy's", v->line);
        /* Accessors. */
        HP_CHECK_EQ(hp_tcp_src_port(seg), r.src_port);
        HP_CHECK_EQ(hp_tcp_dst_port(seg), r.dst_port);
        HP_CHECK_EQ(hp_tcp_seq(seg), r.seq);
        HP_CHECK_EQ(hp_tcp_ack(seg), r.ack);
        HP_CHECK_EQ(hp_tcp_flags(seg), r.flags);
        HP_CHECK_EQ(hp_tcp_window(seg), r.window);
        HP_CHECK_EQ(hp_tcp_urgent(seg), r.urgent);
        HP_CHECK_EQ(hp_tcp_hdr_len(seg), r.data_off);
        HP_CHECK_EQ(hp_tcp_options_len(seg), r.data_off - 20u);
        HP_CHECK(hp_tcp_options(seg) == seg + 20);
        HP_CHECK(hp_tcp_payload(seg) == r.payload);
        HP_CHECK_EQ(hp_tcp_payload_len(seg, v->len), r.payload_len);

        /* Round trip. */
        uint8_t out[2048];
        int n = hp_tcp_emit(&r, &v->a, out, sizeof out);
        HP_REQUIRE_EQ(n, hp_tcp_repr_len(&r));
        if (l4v_u64(v, "same")) {
            same++;
            HP_CHECK_EQ(n, v->len);
            HP_CHECK_MEMEQ(out, seg, v->len);
        }
        struct hp_tcp_repr r2;
        HP_REQUIRE_EQ(hp_tcp_parse(out, (size_t)n, &v->a, &r2, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK(opts_equal(&r2.opt, &r.opt));
        HP_CHECK_EQ(r2.seq, r.seq);
        HP_CHECK_EQ(r2.ack, r.ack);
        HP_CHECK_EQ(r2.flags, r.flags);
        HP_CHECK_EQ(r2.urgent, r.urgent);
        HP_CHECK_EQ(r2.window, r.window);
        HP_CHECK_EQ(r2.payload_len, r.payload_len);
        HP_CHECK_MEMEQ(r2.payload, r.payload, r.payload_len);
        free(seg);
    }
    HP_CHECK_GE(ok, 60);
    HP_CHECK_GE(same, 40);
    HP_CHECK_GE(bad, 30);
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_truncated_at_every_length)
{
    struct l4v_set *vs = l4v_load("tcp4", "tcp6");
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        if (!l4v_is(v, "expect", "ok") || v->len > 300)
            continue;
        size_t doff = (size_t)l4v_u64(v, "doff");
        for (size_t l = 0; l < v->len; l++) {
            uint8_t *seg = l4v_tight(v->l4, l);
            struct hp_tcp_repr r;
            int want = l < doff ? -HP_WIRE_TRUNCATED : 0;
            HP_CHECK_EQ(hp_tcp_check(seg, l), want);
            HP_CHECK_EQ(hp_tcp_parse(seg, l, &v->a, &r, 0), want);
            if (want == 0)
                HP_CHECK_EQ(r.payload_len, l - doff);
            /* Shorter than the IP layer said: the checksum cannot match
             * (the pseudo-header length changed too). */
            HP_CHECK_NE(hp_tcp_parse(seg, l, &v->a, &r, HP_WIRE_VERIFY_CKSUM), 0);
            free(seg);
        }
    }
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_data_offset)
{
    uint8_t d[128];
    size_t n = raw_segment(d, NULL, 0, 40); /* 60 bytes; payload byte 0 is EOL */
    struct hp_l4_addrs a = addrs(4);
    struct hp_tcp_repr r;
    for (unsigned off = 0; off < 16; off++) {
        d[12] = (uint8_t)(off << 4 | (d[12] & 15));
        int want = off < 5 ? -HP_WIRE_BAD_LENGTH : 0;
        HP_CHECK_EQ(hp_tcp_check(d, n), want);
        if (off >= 5)
            HP_CHECK_EQ(hp_tcp_check(d, off * 4 - 1), -HP_WIRE_TRUNCATED);
        HP_CHECK_EQ(hp_tcp_parse(d, n, &a, &r, 0), hp_tcp_check(d, n));
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Each option kind with every length from 0 to 40 in a 60-byte header. */
HP_TEST(tcp_option_lengths)
{
    static const struct {
        uint8_t kind;
        int ok_len; /* -1: 2 + 8n for n 1..4; -2: any length >= 2 */
    } kinds[] = {{HP_TCP_KIND_MSS, 4},
                 {HP_TCP_KIND_WS, 3},
                 {HP_TCP_KIND_SACK_PERM, 2},
                 {HP_TCP_KIND_SACK, -1},
                 {HP_TCP_KIND_TS, 10},
                 {253, -2},
                 {30, -2}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int len = 0; len <= 40; len++) {
            uint8_t o[40] = {0};
            o[0] = kinds[k].kind;
            o[1] = (uint8_t)len;
            bool fits = len >= 2 && len <= 40;
            bool right = kinds[k].ok_len == -2   ? true
                         : kinds[k].ok_len == -1 ? (len - 2) % 8 == 0 && len >= 10 && len <= 34
                                                 : len == kinds[k].ok_len;
            struct hp_tcp_repr r;
            int rc = parse_opts(o, 40, &r);
            if (rc != (fits && right ? 0 : -HP_WIRE_BAD_OPTION)) {
                hp_test_fail(__FILE__, __LINE__, "kind %u length %d: parse gave %d", kinds[k].kind,
                             len, rc);
                return;
            }
            /* The same option at the very end of a shorter header runs past
             * it whenever its length is more than the 4 bytes left. */
            uint8_t p[8] = {1, 1, 1, 1, kinds[k].kind, (uint8_t)len, 0, 0};
            rc = parse_opts(p, 8, &r);
            bool fits4 = len >= 2 && len <= 4;
            HP_CHECK_EQ(rc, fits4 && right ? 0 : -HP_WIRE_BAD_OPTION);
        }
    }
    /* A kind with no room for its length byte. */
    static const uint8_t last[4] = {1, 1, 1, HP_TCP_KIND_MSS};
    struct hp_tcp_repr r;
    HP_CHECK_EQ(parse_opts(last, 4, &r), -HP_WIRE_BAD_OPTION);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_option_values)
{
    struct hp_tcp_repr r;
    static const uint8_t all[] = {
        2,    4,    0x05, 0xb4,                                /* MSS 1460 */
        1,    3,    3,    9,                                   /* NOP WS 9 */
        4,    2,                                               /* SACK-permitted */
        8,    10,   0,    0,    0, 1,  0xff, 0xff, 0xff, 0xfe, /* TS */
        5,    18,   0,    0,    0, 10, 0,    0,    0,    20,
        0xff, 0xff, 0xff, 0xf0, 0, 0,  0,    16}; /* 2 SACK blocks, the second wrapping */
    HP_REQUIRE_EQ(parse_opts(all, sizeof all, &r), 0);
    HP_CHECK(r.opt.has_mss);
    HP_CHECK_EQ(r.opt.mss, 1460);
    HP_CHECK(r.opt.has_ws);
    HP_CHECK_EQ(r.opt.ws, 9);
    HP_CHECK(!r.opt.ws_clamped);
    HP_CHECK(r.opt.sack_perm);
    HP_CHECK(r.opt.has_ts);
    HP_CHECK_EQ(r.opt.ts_val, 1);
    HP_CHECK_EQ(r.opt.ts_ecr, 0xfffffffe);
    HP_CHECK_EQ(r.opt.n_sack, 2);
    HP_CHECK_EQ(r.opt.sack[0][0], 10);
    HP_CHECK_EQ(r.opt.sack[0][1], 20);
    HP_CHECK_EQ(r.opt.sack[1][0], 0xfffffff0);
    HP_CHECK_EQ(r.opt.sack[1][1], 16);
    HP_CHECK_EQ(r.data_off, 60);

    /* RFC 7323 2.3: shifts above 14 are used as 14, and recorded. */
    for (unsigned ws = 0; ws < 256; ws++) {
        uint8_t o[4] = {1, 3, 3, (uint8_t)ws};
        HP_REQUIRE_EQ(parse_opts(o, 4, &r), 0);
        HP_CHECK_EQ(r.opt.ws, ws > 14 ? 14 : ws);
        HP_CHECK_EQ(r.opt.ws_clamped, ws > 14);
    }
    /* EOL ends the list: bytes after it are not options (even bad ones). */
    static const uint8_t eol[8] = {2, 4, 1, 0, 0, 2, 0, 9};
    HP_REQUIRE_EQ(parse_opts(eol, 8, &r), 0);
    HP_CHECK(r.opt.has_mss);
    HP_CHECK_EQ(r.opt.mss, 256);
    HP_CHECK(!r.opt.has_ws);
    /* Unknown kinds are skipped by their length. */
    static const uint8_t unknown[12] = {99, 6, 2, 4, 5, 6, 2, 4, 0x12, 0x34, 1, 1};
    HP_REQUIRE_EQ(parse_opts(unknown, 12, &r), 0);
    HP_CHECK_EQ(r.opt.mss, 0x1234);
    /* A repeated option: the last one counts. */
    static const uint8_t twice[8] = {2, 4, 0, 100, 2, 4, 0, 200};
    HP_REQUIRE_EQ(parse_opts(twice, 8, &r), 0);
    HP_CHECK_EQ(r.opt.mss, 200);
    /* No options, or only NOPs. */
    static const uint8_t nops[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    HP_REQUIRE_EQ(parse_opts(nops, 8, &r), 0);
    struct hp_tcp_opts none = {0};
    HP_CHECK(opts_equal(&r.opt, &none));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The 12 option bytes of nearly every segment with timestamps, NOP NOP TS,
 * are read without the walk: the same result as the walk gives for the same
 * option in other places, and anything that only resembles them still gets
 * the walk (and its errors). */
HP_TEST(tcp_aligned_timestamps)
{
    struct hp_tcp_repr fast, walked;
    static const uint8_t aligned[12] = {1, 1, 8, 10, 0x80, 0, 0, 1, 0, 0, 0xff, 0xfe};
    static const uint8_t moved[12] = {8, 10, 0x80, 0, 0, 1, 0, 0, 0xff, 0xfe, 1, 1};
    HP_REQUIRE_EQ(parse_opts(aligned, 12, &fast), 0);
    HP_REQUIRE_EQ(parse_opts(moved, 12, &walked), 0);
    HP_CHECK(fast.opt.has_ts);
    HP_CHECK_EQ(fast.opt.ts_val, 0x80000001u);
    HP_CHECK_EQ(fast.opt.ts_ecr, 0xfffeu);
    HP_CHECK(opts_equal(&fast.opt, &walked.opt));
    HP_CHECK_EQ(fast.data_off, 32);
    HP_CHECK_EQ(fast.seq, walked.seq);
    /* Resemblances: a TS length of 11 (past the header: an error), of 9
     * (an error), NOP NOP then a kind that is not TS, EOL first. */
    static const uint8_t len11[12] = {1, 1, 8, 11, 0, 0, 0, 1, 0, 0, 0, 2};
    static const uint8_t len9[12] = {1, 1, 8, 9, 0, 0, 0, 1, 0, 0, 0, 2};
    static const uint8_t mss[12] = {1, 1, 2, 4, 0x05, 0xb4, 1, 1, 1, 1, 1, 1};
    static const uint8_t eol[12] = {0, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
    struct hp_tcp_repr r;
    HP_CHECK_EQ(parse_opts(len11, 12, &r), -HP_WIRE_BAD_OPTION);
    HP_CHECK_EQ(parse_opts(len9, 12, &r), -HP_WIRE_BAD_OPTION);
    HP_REQUIRE_EQ(parse_opts(mss, 12, &r), 0);
    HP_CHECK(!r.opt.has_ts);
    HP_CHECK_EQ(r.opt.mss, 1460);
    HP_REQUIRE_EQ(parse_opts(eol, 12, &r), 0);
    HP_CHECK(!r.opt.has_ts);
    /* The same 12 bytes in a longer header (then EOL padding): the walk. */
    static const uint8_t longer[16] = {1, 1, 8, 10, 0x80, 0, 0, 1, 0, 0, 0xff, 0xfe, 0, 0, 0, 0};
    HP_REQUIRE_EQ(parse_opts(longer, 16, &r), 0);
    HP_CHECK(opts_equal(&r.opt, &fast.opt));
    HP_CHECK_EQ(r.data_off, 36);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 9293 3.1: every control-bit combination is a well-formed header; the
 * reserved bits are ignored on receipt and sent as zero. */
HP_TEST(tcp_flags_and_reserved_bits)
{
    struct hp_l4_addrs a = addrs(6);
    for (unsigned f = 0; f < 256; f++) {
        struct hp_tcp_repr r = {.src_port = 1,
                                .dst_port = 2,
                                .seq = f,
                                .flags = (uint8_t)f,
                                .urgent = (uint16_t)(f * 3)},
                           p;
        uint8_t d[64];
        HP_REQUIRE_EQ(hp_tcp_emit(&r, &a, d, sizeof d), 20);
        HP_CHECK_EQ(d[12], 0x50);
        d[12] |= (uint8_t)(f & 15); /* reserved bits set by the peer */
        uint16_t c = hp_cksum_tcp6(src6, dst6, d, 20);
        memcpy(d + 16, &c, 2);
        HP_REQUIRE_EQ(hp_tcp_parse(d, 20, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(p.flags, f);
        HP_CHECK_EQ(p.urgent, r.urgent);
        HP_CHECK_EQ(p.data_off, 20);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Every combination of options we emit: the ones that fit in 40 bytes
 * round-trip, with each 32-bit value 4-byte aligned; the others are refused. */
HP_TEST(tcp_emit_option_combinations)
{
    struct hp_l4_addrs a = addrs(4);
    int fitted = 0, refused = 0;
    for (unsigned m = 0; m < 16; m++) {
        for (int ns = 0; ns <= HP_TCP_MAX_SACK; ns++) {
            struct hp_tcp_repr r = {.src_port = 80,
                                    .dst_port = 5555,
                                    .seq = 7,
                                    .ack = 9,
                                    .flags = HP_TCP_F_ACK,
                                    .window = 100},
                               p;
            r.opt.has_mss = m & 1;
            r.opt.mss = 1460;
            r.opt.has_ws = (m >> 1) & 1;
            r.opt.ws = 7;
            r.opt.sack_perm = (m >> 2) & 1;
            r.opt.has_ts = (m >> 3) & 1;
            r.opt.ts_val = 0x11223344;
            r.opt.ts_ecr = 0x55667788;
            r.opt.n_sack = (uint8_t)ns;
            for (int b = 0; b < ns; b++) {
                r.opt.sack[b][0] = 1000u * (uint32_t)b;
                r.opt.sack[b][1] = 1000u * (uint32_t)b + 500;
            }
            uint8_t pl[3] = {1, 2, 3};
            r.payload = pl;
            r.payload_len = 3;
            uint8_t d[128];
            size_t olen = hp_tcp_opts_len(&r.opt);
            HP_CHECK_EQ(olen % 4, 0);
            int n = hp_tcp_emit(&r, &a, d, sizeof d);
            if (olen > HP_TCP_MAX_OPT_LEN) {
                HP_CHECK_EQ(n, -HP_WIRE_BAD_OPTION);
                refused++;
                continue;
            }
            fitted++;
            HP_REQUIRE_EQ(n, 20 + olen + 3);
            HP_REQUIRE_EQ(hp_tcp_parse(d, (size_t)n, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
            HP_CHECK(opts_equal(&p.opt, &r.opt));
            HP_CHECK_EQ(p.data_off, 20 + olen);
            HP_CHECK_MEMEQ(p.payload, pl, 3);
            /* Alignment: walk the emitted options. */
            for (size_t i = 20; i < 20 + olen;) {
                uint8_t kind = d[i];
                if (kind == HP_TCP_KIND_NOP) {
                    i++;
                    continue;
                }
                if (kind == HP_TCP_KIND_TS || kind == HP_TCP_KIND_SACK)
                    HP_CHECK_EQ((i + 2) % 4, 0);
                if (kind == HP_TCP_KIND_MSS)
                    HP_CHECK_EQ(i % 4, 0);
                i += d[i + 1];
            }
            HP_STOP_IF_FAILED();
        }
    }
    HP_CHECK_EQ(fitted, 16 * 5 - refused);
    HP_CHECK_GT(refused, 0); /* TS with 4 SACK blocks, say */
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The layout of a SYN with every SYN option, byte for byte. */
HP_TEST(tcp_emit_syn_layout)
{
    struct hp_l4_addrs a = addrs(4);
    struct hp_tcp_repr r = {.src_port = 0x1234,
                            .dst_port = 80,
                            .seq = 1,
                            .flags = HP_TCP_F_SYN,
                            .window = 64240};
    r.opt.has_mss = r.opt.has_ws = r.opt.sack_perm = r.opt.has_ts = true;
    r.opt.mss = 1460;
    r.opt.ws = 7;
    r.opt.ts_val = 0xAABBCCDD;
    static const uint8_t want[20] = {2,    4,    0x05, 0xb4, 4, 2, 8, 10, 0xAA, 0xBB,
                                     0xCC, 0xDD, 0,    0,    0, 0, 1, 3,  3,    7};
    uint8_t d[64];
    HP_REQUIRE_EQ(hp_tcp_emit(&r, &a, d, sizeof d), 40);
    HP_CHECK_EQ(d[12], 10 << 4);
    HP_CHECK_MEMEQ(d + 20, want, 20);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_bad_checksum)
{
    for (int fam = 4; fam <= 6; fam += 2) {
        struct hp_l4_addrs a = addrs(fam);
        struct hp_tcp_repr r = {.src_port = 443,
                                .dst_port = 50000,
                                .seq = 0xdeadbeef,
                                .flags = HP_TCP_F_ACK | HP_TCP_F_PSH,
                                .window = 1024},
                           p;
        r.opt.has_ts = true;
        r.opt.ts_val = 5;
        uint8_t pl[37];
        memset(pl, 0x77, sizeof pl);
        r.payload = pl;
        r.payload_len = sizeof pl;
        uint8_t d[128];
        int n = hp_tcp_emit(&r, &a, d, sizeof d);
        HP_REQUIRE_EQ(n, 32 + 37);
        HP_REQUIRE_EQ(hp_tcp_parse(d, (size_t)n, &a, &p, HP_WIRE_VERIFY_CKSUM), 0);
        for (int i = 0; i < n; i++) {
            if (i == 12)
                continue; /* data offset: a length change */
            d[i] ^= 0x20;
            int rc = hp_tcp_parse(d, (size_t)n, &a, &p, HP_WIRE_VERIFY_CKSUM);
            /* The option bytes may now be malformed: reported first. */
            if (rc != -HP_WIRE_BAD_OPTION)
                HP_CHECK_EQ(rc, -HP_WIRE_BAD_CHECKSUM);
            d[i] ^= 0x20;
        }
        uint8_t other[16];
        memcpy(other, a.dst, fam == 4 ? 4 : 16);
        other[0] ^= 0x80;
        struct hp_l4_addrs b = {a.family, a.src, other};
        HP_CHECK_EQ(hp_tcp_parse(d, (size_t)n, &b, &p, HP_WIRE_VERIFY_CKSUM),
                    -HP_WIRE_BAD_CHECKSUM);
        HP_CHECK_EQ(hp_tcp_parse(d, (size_t)n, &b, &p, 0), 0);
        HP_CHECK_EQ(hp_tcp_parse(d, (size_t)n, NULL, &p, HP_WIRE_VERIFY_CKSUM),
                    -HP_WIRE_BAD_ADDRESS);
        HP_CHECK_EQ(hp_tcp_parse(d, (size_t)n, NULL, &p, 0), 0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_emit_errors)
{
    struct hp_l4_addrs a = addrs(6);
    struct hp_tcp_repr r = {.src_port = 1, .dst_port = 2};
    r.opt.has_mss = true;
    uint8_t d[64];
    HP_CHECK_EQ(hp_tcp_repr_len(&r), 24);
    HP_CHECK_EQ(hp_tcp_emit(&r, &a, d, 23), -HP_WIRE_NO_SPACE);
    HP_CHECK_EQ(hp_tcp_emit(&r, &a, d, 24), 24);
    HP_CHECK_EQ(hp_tcp_emit(&r, NULL, d, sizeof d), -HP_WIRE_BAD_ADDRESS);
    r.opt.n_sack = 5;
    HP_CHECK_EQ(hp_tcp_emit(&r, &a, d, sizeof d), -HP_WIRE_BAD_OPTION);
    r.opt.n_sack = 0;
    r.payload_len = 65535 - 24 + 1;
    HP_CHECK_EQ(hp_tcp_emit(&r, &a, d, (size_t)1 << 20), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
