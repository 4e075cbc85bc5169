/* SPDX-License-Identifier: BSD-3-Clause */
/* ICMPv4 view: scapy echo and error messages, round trips, types we refuse, checksums, the quote length. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/pool.h>
#include <hotpath/wire/icmp.h>

#include "hp_test.h"
#include "l4_vectors.h"

static bool is_error(unsigned type)
{
    return type == HP_ICMP_DEST_UNREACH || type == HP_ICMP_TIME_EXCEEDED ||
           type == HP_ICMP_PARAM_PROBLEM;
}

HP_TEST(icmp_vectors)
{
    struct l4v_set *vs = l4v_load("icmp4", NULL);
    HP_REQUIRE(vs != NULL);
    int ok = 0, same = 0, errors = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        uint8_t *msg = l4v_tight(v->l4, v->len);
        struct hp_icmp_repr r;
        int rc = hp_icmp_parse(msg, v->len, &r, HP_WIRE_VERIFY_CKSUM);
        if (!l4v_expect(v, rc)) {
            hp_test_fail(__FILE__, __LINE__, "line %d: parse gave %d (%s), want %s", v->line, rc,
                         hp_wire_reason(rc), l4v_str(v, "expect"));
            free(msg);
            break;
        }
        HP_CHECK_EQ(hp_icmp_check(msg, v->len), 0); /* every vector is >= 8 bytes */
        if (rc) {
            free(msg);
            continue;
        }
        ok++;
        HP_CHECK_EQ(r.type, l4v_u64(v, "type"));
        HP_CHECK_EQ(r.code, l4v_u64(v, "code"));
        HP_CHECK_EQ(r.ident, l4v_u64(v, "ident"));
        HP_CHECK_EQ(r.seq, l4v_u64(v, "seq"));
        HP_CHECK_EQ(r.pointer, l4v_u64(v, "ptr"));
        HP_CHECK_EQ(r.next_hop_mtu, l4v_u64(v, "mtu"));
        HP_CHECK_EQ(r.data_len, l4v_u64(v, "dlen"));
        HP_CHECK(r.data == msg + 8);
        HP_CHECK(r.data == hp_icmp_data(msg));
        HP_CHECK_EQ(hp_icmp_type(msg), r.type);
        HP_CHECK_EQ(hp_icmp_code(msg), r.code);
        if (is_error(r.type)) {
            errors++;
            /* The quote starts with the offending datagram's IPv4 header. */
            HP_CHECK_EQ(r.data[0] >> 4, 4);
            if (l4v_str(v, "quote_of"))
                HP_CHECK_EQ(hp_icmp_quote_len(l4v_u64(v, "quote_of")), r.data_len);
        } else {
            HP_CHECK_EQ(hp_icmp_ident(msg), r.ident);
            HP_CHECK_EQ(hp_icmp_seq(msg), r.seq);
        }

        uint8_t out[2048];
        int n = hp_icmp_emit(&r, out, sizeof out);
        HP_REQUIRE_EQ(n, hp_icmp_repr_len(&r));
        HP_CHECK_EQ(n, v->len);
        if (l4v_u64(v, "same")) {
            same++;
            HP_CHECK_MEMEQ(out, msg, v->len);
        }
        struct hp_icmp_repr r2;
        HP_REQUIRE_EQ(hp_icmp_parse(out, (size_t)n, &r2, HP_WIRE_VERIFY_CKSUM), 0);
        HP_CHECK_EQ(r2.type, r.type);
        HP_CHECK_EQ(r2.code, r.code);
        HP_CHECK_EQ(r2.ident, r.ident);
        HP_CHECK_EQ(r2.seq, r.seq);
        HP_CHECK_EQ(r2.pointer, r.pointer);
        HP_CHECK_EQ(r2.next_hop_mtu, r.next_hop_mtu);
        HP_CHECK_EQ(r2.data_len, r.data_len);
        HP_CHECK_MEMEQ(r2.data, r.data, r.data_len);
        free(msg);
    }
    HP_CHECK_GE(ok, 20);
    HP_CHECK_GE(same, 20);
    HP_CHECK_GE(errors, 10);
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp_truncated_at_every_length)
{
    struct l4v_set *vs = l4v_load("icmp4", NULL);
    HP_REQUIRE(vs != NULL);
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct l4v *v = &vs->v[i];
        if (!l4v_is(v, "expect", "ok") || v->len > 600)
            continue;
        for (size_t l = 0; l < v->len; l++) {
            uint8_t *msg = l4v_tight(v->l4, l);
            struct hp_icmp_repr r;
            int want = l < 8 ? -HP_WIRE_TRUNCATED : 0;
            HP_CHECK_EQ(hp_icmp_check(msg, l), want);
            if (want == 0 && is_error(v->l4[0]) && l < 8 + HP_ICMP_MIN_QUOTE)
                want = -HP_WIRE_TRUNCATED;
            HP_CHECK_EQ(hp_icmp_parse(msg, l, &r, 0), want);
            if (want == 0)
                HP_CHECK_EQ(r.data_len, l - 8);
            free(msg);
        }
    }
    l4v_free(vs);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 1122 3.2.2: unknown types are discarded (here: refused as
 * unsupported), yet well formed for check and the accessors. */
HP_TEST(icmp_every_type)
{
    for (unsigned t = 0; t < 256; t++) {
        uint8_t d[8 + 28];
        memset(d, 0, sizeof d);
        d[0] = (uint8_t)t;
        d[8] = 0x45;
        uint16_t c = hp_cksum_icmp4(d, sizeof d);
        memcpy(d + 2, &c, 2);
        struct hp_icmp_repr r;
        bool known = t == 0 || t == 8 || is_error(t);
        HP_CHECK_EQ(hp_icmp_check(d, sizeof d), 0);
        HP_CHECK_EQ(hp_icmp_parse(d, sizeof d, &r, HP_WIRE_VERIFY_CKSUM),
                    known ? 0 : -HP_WIRE_UNSUPPORTED);
        /* The checksum is judged before the type. */
        d[5] ^= 1;
        HP_CHECK_EQ(hp_icmp_parse(d, sizeof d, &r, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp_bad_checksum)
{
    uint8_t data[56];
    for (int i = 0; i < 56; i++)
        data[i] = (uint8_t)(i * 5);
    struct hp_icmp_repr r = {.type = HP_ICMP_ECHO_REQUEST,
                             .ident = 0x4242,
                             .seq = 7,
                             .data = data,
                             .data_len = sizeof data},
                        p;
    uint8_t d[64];
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 64);
    HP_REQUIRE_EQ(hp_icmp_parse(d, 64, &p, HP_WIRE_VERIFY_CKSUM), 0);
    for (int i = 0; i < 64; i++) {
        if (i == 0)
            continue; /* the type */
        d[i] ^= 0x81;
        HP_CHECK_EQ(hp_icmp_parse(d, 64, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_BAD_CHECKSUM);
        HP_CHECK_EQ(hp_icmp_parse(d, 64, &p, 0), 0);
        d[i] ^= 0x81;
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 1191 4: the next-hop MTU is in "fragmentation needed" only; the
 * second word of the other errors is unused and ignored. */
HP_TEST(icmp_error_fields)
{
    uint8_t quote[28] = {0x45};
    struct hp_icmp_repr r = {.type = HP_ICMP_DEST_UNREACH,
                             .code = HP_ICMP_UNREACH_FRAG_NEEDED,
                             .next_hop_mtu = 1280,
                             .pointer = 9,
                             .ident = 1,
                             .seq = 2,
                             .data = quote,
                             .data_len = sizeof quote},
                        p;
    uint8_t d[64];
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 36);
    HP_CHECK_EQ(hp_get_be32(d + 4), 1280); /* pointer, ident, seq not written */
    HP_REQUIRE_EQ(hp_icmp_parse(d, 36, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(p.next_hop_mtu, 1280);
    HP_CHECK_EQ(hp_icmp_next_hop_mtu(d), 1280);
    HP_CHECK_EQ(p.pointer, 0);
    HP_CHECK_EQ(p.ident, 0);
    r.code = HP_ICMP_UNREACH_PORT;
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 36);
    HP_CHECK_EQ(hp_get_be32(d + 4), 0);
    hp_put_be16(d + 6, 1500); /* garbage in the unused word */
    HP_REQUIRE_EQ(hp_icmp_parse(d, 36, &p, 0), 0);
    HP_CHECK_EQ(p.next_hop_mtu, 0);
    r.type = HP_ICMP_PARAM_PROBLEM;
    r.code = 0;
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 36);
    HP_CHECK_EQ(hp_get_be32(d + 4), 9u << 24);
    HP_REQUIRE_EQ(hp_icmp_parse(d, 36, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(p.pointer, 9);
    HP_CHECK_EQ(hp_icmp_pointer(d), 9);
    HP_CHECK_EQ(p.next_hop_mtu, 0);
    /* An error quoting 19 bytes: less than an IPv4 header. */
    r.data_len = 19;
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 27);
    HP_CHECK_EQ(hp_icmp_parse(d, 27, &p, HP_WIRE_VERIFY_CKSUM), -HP_WIRE_TRUNCATED);
    r.data_len = 20;
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 28);
    HP_CHECK_EQ(hp_icmp_parse(d, 28, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 1812 4.3.2.3: the error datagram stays within 576 bytes; RFC 792:
 * at least the IP header and 8 octets (all of a shorter datagram). */
HP_TEST(icmp_quote_len)
{
    HP_CHECK_EQ(hp_icmp_quote_len(0), 0);
    HP_CHECK_EQ(hp_icmp_quote_len(20), 20);
    HP_CHECK_EQ(hp_icmp_quote_len(28), 28);
    HP_CHECK_EQ(hp_icmp_quote_len(548), 548);
    HP_CHECK_EQ(hp_icmp_quote_len(549), 548);
    HP_CHECK_EQ(hp_icmp_quote_len(1500), 548);
    HP_CHECK_EQ(hp_icmp_quote_len(65535), 548);
    for (size_t n = 28; n < 2000; n += 37) {
        size_t q = hp_icmp_quote_len(n);
        HP_CHECK_LE(20 + 8 + q, 576);
        HP_CHECK_GE(q, 28);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The all-zero echo reply: a full computation gives 0xFFFF (an incremental
 * update would give 0x0000, which receivers reject). */
HP_TEST(icmp_echo_all_zero)
{
    struct hp_icmp_repr r = {.type = HP_ICMP_ECHO_REPLY}, p;
    uint8_t d[8];
    HP_REQUIRE_EQ(hp_icmp_emit(&r, d, sizeof d), 8);
    HP_CHECK_EQ(hp_icmp_cksum(d), 0xFFFF);
    HP_CHECK_EQ(hp_icmp_parse(d, 8, &p, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(p.data_len, 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A reply built in the request's own buffer: the data overlaps the output. */
HP_TEST(icmp_echo_reply_in_place)
{
    uint8_t data[100];
    for (int i = 0; i < 100; i++)
        data[i] = (uint8_t)(255 - i);
    struct hp_icmp_repr q = {.type = HP_ICMP_ECHO_REQUEST,
                             .ident = 99,
                             .seq = 1000,
                             .data = data,
                             .data_len = 100},
                        p;
    uint8_t d[108];
    HP_REQUIRE_EQ(hp_icmp_emit(&q, d, sizeof d), 108);
    HP_REQUIRE_EQ(hp_icmp_parse(d, 108, &p, HP_WIRE_VERIFY_CKSUM), 0);
    p.type = HP_ICMP_ECHO_REPLY;
    HP_REQUIRE_EQ(hp_icmp_emit(&p, d, sizeof d), 108);
    struct hp_icmp_repr rep;
    HP_REQUIRE_EQ(hp_icmp_parse(d, 108, &rep, HP_WIRE_VERIFY_CKSUM), 0);
    HP_CHECK_EQ(rep.type, HP_ICMP_ECHO_REPLY);
    HP_CHECK_EQ(rep.ident, 99);
    HP_CHECK_EQ(rep.seq, 1000);
    HP_CHECK_MEMEQ(rep.data, data, 100);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(icmp_emit_errors)
{
    struct hp_icmp_repr r = {.type = HP_ICMP_ECHO_REQUEST, .data_len = 10};
    static uint8_t d[64];
    r.data = d + 32;
    HP_CHECK_EQ(hp_icmp_repr_len(&r), 18);
    HP_CHECK_EQ(hp_icmp_emit(&r, d, 17), -HP_WIRE_NO_SPACE);
    HP_CHECK_EQ(hp_icmp_emit(&r, d, 18), 18);
    r.data_len = 65535 - 20 - 8 + 1;
    HP_CHECK_EQ(hp_icmp_emit(&r, d, (size_t)1 << 20), -HP_WIRE_BAD_LENGTH);
    HP_CHECK_EQ(hp_icmp_check(d, 7), -HP_WIRE_TRUNCATED);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
