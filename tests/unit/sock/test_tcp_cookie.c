/* SPDX-License-Identifier: BSD-3-Clause */
/* SYN cookies (RFC 4987 3.6), initial sequence numbers (RFC 6528) and the SipHash under both. */
#include <errno.h>
#include <string.h>

#include <hotpath/pool.h>

#include "hp_test.h"
#include "sock/tcp_cookie.h"
#include "sock/tcp_hash.h"
#include "sock/tcp_isn.h"

static const struct hp__tcp_secret KEY = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
static const struct hp__tcp_secret KEY2 = {0x0706050403020100ull, 0x0f0e0d0c0b0a0909ull};

static struct hp__tcp_tuple tuple4(void)
{
    return (struct hp__tcp_tuple){
        .family = 4,
        .lport = 80,
        .rport = 40000,
        .laddr = {198, 18, 0, 1},
        .raddr = {198, 18, 0, 2},
    };
}

static struct hp__tcp_tuple tuple6(void)
{
    return (struct hp__tcp_tuple){
        .family = 6,
        .lport = 443,
        .rport = 50000,
        .laddr = {0x20, 0x01, 0, 2, [15] = 1},
        .raddr = {0x20, 0x01, 0, 2, [15] = 2},
    };
}

#define SEC 1000000000ull

HP_TEST(tcp_siphash_vectors)
{
    /* The paper's key 00 01 .. 0f: the empty message, and its appendix
     * example, the 15 bytes 00 01 .. 0e. */
    HP_CHECK_EQ(hp__siphash24(&KEY, "", 0), (long long)0x726fdb47dd0e0e31ull);
    uint8_t msg[15];
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    HP_CHECK(hp__siphash24(&KEY, msg, 15) == 0xa129ca6149be45e5ull);
    /* Eight bytes exactly: a full word then a length-only word. */
    HP_CHECK(hp__siphash24(&KEY, msg, 8) == 0x93f5f5799a932462ull);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_secret_random)
{
    struct hp__tcp_secret a, b;
    HP_REQUIRE_EQ(hp__tcp_secret_init(&a), 0);
    HP_REQUIRE_EQ(hp__tcp_secret_init(&b), 0);
    HP_CHECK(a.k0 != b.k0 || a.k1 != b.k1);
    HP_CHECK(a.k0 != 0 || a.k1 != 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_hash_covers_every_field)
{
    struct hp__tcp_tuple t = tuple6();
    uint64_t h = hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &t, 1, 2);
    HP_CHECK(h == hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &t, 1, 2));
    HP_CHECK(h != hp__tcp_hash(&KEY2, HP__TCP_HASH_ISN, &t, 1, 2));
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_COOKIE, &t, 1, 2));
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &t, 2, 1));
    struct hp__tcp_tuple u = t;
    u.lport++;
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &u, 1, 2));
    u = t;
    u.rport++;
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &u, 1, 2));
    u = t;
    u.laddr[15] ^= 1;
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &u, 1, 2));
    u = t;
    u.raddr[0] ^= 0x80;
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &u, 1, 2));
    /* Swapping the ends is another connection. */
    u = t;
    u.lport = t.rport;
    u.rport = t.lport;
    HP_CHECK(h != hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &u, 1, 2));
    /* IPv4 reads only the first 4 address bytes. */
    struct hp__tcp_tuple v = tuple4(), w = tuple4();
    w.laddr[4] = 0xaa;
    w.raddr[15] = 0xbb;
    HP_CHECK(hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &v, 0, 0) ==
             hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &w, 0, 0));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The hash is SipHash-2-4 of the serialisation tcp_hash.c documents
 * (domain, family, ports and words big-endian, the addresses): the fixed
 * lengths' inlined rounds give what the general call gives, for both
 * families (22 and 46 bytes: two words and a tail, five and a tail). */
static uint64_t hash_by_bytes(int domain, const struct hp__tcp_tuple *t, uint32_t w0, uint32_t w1)
{
    uint8_t b[46];
    size_t alen = t->family == 4 ? 4 : 16, n = 0;
    b[n++] = (uint8_t)domain;
    b[n++] = t->family;
    b[n++] = (uint8_t)(t->lport >> 8);
    b[n++] = (uint8_t)t->lport;
    b[n++] = (uint8_t)(t->rport >> 8);
    b[n++] = (uint8_t)t->rport;
    memcpy(b + n, t->laddr, alen);
    n += alen;
    memcpy(b + n, t->raddr, alen);
    n += alen;
    for (int i = 24; i >= 0; i -= 8)
        b[n++] = (uint8_t)(w0 >> i);
    for (int i = 24; i >= 0; i -= 8)
        b[n++] = (uint8_t)(w1 >> i);
    return hp__siphash24(&KEY, b, n);
}

HP_TEST(tcp_hash_is_siphash_of_its_bytes)
{
    struct hp__tcp_tuple t4 = tuple4(), t6 = tuple6();
    HP_CHECK(hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &t4, 0, 0) ==
             hash_by_bytes(HP__TCP_HASH_ISN, &t4, 0, 0));
    HP_CHECK(hp__tcp_hash(&KEY, HP__TCP_HASH_COOKIE, &t4, 0x01020304u, 0xa0b0c0d0u) ==
             hash_by_bytes(HP__TCP_HASH_COOKIE, &t4, 0x01020304u, 0xa0b0c0d0u));
    HP_CHECK(hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &t6, 7, 9) ==
             hash_by_bytes(HP__TCP_HASH_ISN, &t6, 7, 9));
    HP_CHECK(hp__tcp_hash(&KEY, HP__TCP_HASH_CHALLENGE, &t6, 0xffffffffu, 1) ==
             hash_by_bytes(HP__TCP_HASH_CHALLENGE, &t6, 0xffffffffu, 1));
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_isn_clock_and_tuples)
{
    struct hp__tcp_tuple t = tuple4();
    uint64_t now = 1000 * SEC;
    uint32_t i0 = hp__tcp_isn(&KEY, &t, now);
    /* M ticks every 4 us: same tick, same ISN; 1 ms later, 250 more. */
    HP_CHECK_EQ(hp__tcp_isn(&KEY, &t, now + 3999), i0);
    HP_CHECK_EQ((uint32_t)(hp__tcp_isn(&KEY, &t, now + 4000) - i0), 1);
    HP_CHECK_EQ((uint32_t)(hp__tcp_isn(&KEY, &t, now + 1000000) - i0), 250);
    /* Increasing (modulo 2^32) over time for one tuple, across the wrap. */
    uint32_t prev = i0;
    for (int i = 1; i <= 100; i++) {
        uint64_t at = now + (uint64_t)i * 500 * SEC; /* 50,000 s: ~3 wraps of the 4.77 h period */
        uint32_t isn = hp__tcp_isn(&KEY, &t, at);
        HP_CHECK_EQ((uint32_t)(isn - prev), 500u * 250000u);
        prev = isn;
    }
    /* Different tuples: unrelated offsets at the same instant. */
    struct hp__tcp_tuple u = t;
    uint32_t seen[64];
    for (int i = 0; i < 64; i++) {
        u.rport = (uint16_t)(40000 + i);
        seen[i] = hp__tcp_isn(&KEY, &u, now);
        for (int j = 0; j < i; j++)
            HP_CHECK_NE(seen[i], seen[j]);
    }
    /* The ISN with the timestamp offset: the same ISN, the offset the hash's other half
     * (the cookie's SYN-ACK computes it alone), unrelated to the ISN's. */
    uint32_t off = 0;
    HP_CHECK_EQ(hp__tcp_isn_ts(&KEY, &t, now, &off), i0);
    HP_CHECK_EQ(off, hp__tcp_ts_offset(&KEY, &t));
    HP_CHECK_EQ(off, (uint32_t)(hp__tcp_hash(&KEY, HP__TCP_HASH_ISN, &t, 0, 0) >> 32));
    HP_CHECK_NE(off, (uint32_t)(i0 - (uint32_t)(now / HP__TCP_ISN_TICK_NS)));
    u.rport = (uint16_t)(t.rport + 1);
    HP_CHECK_NE(hp__tcp_ts_offset(&KEY, &u), off);
    /* Another secret, another ISN. */
    HP_CHECK_NE(hp__tcp_isn(&KEY2, &t, now), i0);
    HP_CHECK_NE(hp__tcp_isn(&KEY, &(struct hp__tcp_tuple){.family = 6}, now), i0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cookie_round_trip_every_mss)
{
    struct hp__tcp_tuple ts[2] = {tuple4(), tuple6()};
    uint64_t seed = hp_test_seed();
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < HP__TCP_COOKIE_NMSS; i++) {
            uint32_t mss = hp__tcp_cookie_mss[i];
            uint32_t cisn = (uint32_t)hp_test_rand(&seed);
            uint64_t now = 5000 * SEC + hp_test_rand(&seed) % (1000 * SEC);
            uint32_t isn = 0;
            HP_REQUIRE_EQ(hp__tcp_cookie_make(&KEY, &ts[f], cisn, mss, now, &isn), mss);
            /* The ACK: SEG.SEQ = client ISN + 1, SEG.ACK = cookie + 1. */
            HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &ts[f], cisn + 1, isn + 1, now), mss);
            HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &ts[f], cisn + 1, isn + 1, now + SEC), mss);
            /* Just above an entry rounds down to it. */
            uint32_t isn2 = 0;
            HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &ts[f], cisn, mss + 1, now, &isn2), mss);
            HP_CHECK_EQ(isn2, isn);
            HP_STOP_IF_FAILED();
        }
    }
    /* Between and beyond the entries. */
    struct hp__tcp_tuple t = tuple4();
    uint32_t isn;
    HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &t, 1, 1400, 0, &isn), 1220);
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 2, isn + 1, 0), 1220);
    HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &t, 1, 65535, 0, &isn), 8960);
    HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &t, 1, 9000, 0, &isn), 8960);
    HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &t, 1, 1459, 0, &isn), 1440);
    /* Below the smallest entry: no cookie possible. */
    isn = 77;
    HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &t, 1, 535, 0, &isn), -EINVAL);
    HP_CHECK_EQ(hp__tcp_cookie_make(&KEY, &t, 1, 0, 0, &isn), -EINVAL);
    HP_CHECK_EQ(isn, 77);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cookie_slots)
{
    struct hp__tcp_tuple t = tuple4();
    uint64_t slot = HP__TCP_COOKIE_SLOT_NS;
    uint64_t made = 100 * slot + slot - 1; /* the last ns of slot 100 */
    uint32_t isn;
    HP_REQUIRE_EQ(hp__tcp_cookie_make(&KEY, &t, 0xfffffffeu, 1460, made, &isn), 1460);
    /* Same slot, next slot (the previous one is still accepted)... */
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 0xffffffffu, isn + 1, made), 1460);
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 0xffffffffu, isn + 1, made + 1), 1460);
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 0xffffffffu, isn + 1, made + slot), 1460);
    /* ...two slots later it has expired. */
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 0xffffffffu, isn + 1, made + slot + 1), -EACCES);
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 0xffffffffu, isn + 1, made + 10 * slot), -EACCES);
    /* A clock that went backwards a slot does not validate it either. */
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 0xffffffffu, isn + 1, made - slot), -EACCES);
    /* Slot 0 (just after boot) works; its "previous" slot wraps harmlessly. */
    HP_REQUIRE_EQ(hp__tcp_cookie_make(&KEY, &t, 5, 536, 0, &isn), 536);
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, 6, isn + 1, slot), 536);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cookie_rejects)
{
    struct hp__tcp_tuple t = tuple6();
    uint64_t now = 12345 * SEC;
    uint32_t cisn = 0x12345678u, isn;
    HP_REQUIRE_EQ(hp__tcp_cookie_make(&KEY, &t, cisn, 1440, now, &isn), 1440);
    HP_REQUIRE_EQ(hp__tcp_cookie_check(&KEY, &t, cisn + 1, isn + 1, now), 1440);
    /* Another secret. */
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY2, &t, cisn + 1, isn + 1, now), -EACCES);
    /* Another tuple: each field. */
    struct hp__tcp_tuple u = t;
    u.rport++;
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &u, cisn + 1, isn + 1, now), -EACCES);
    u = t;
    u.lport++;
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &u, cisn + 1, isn + 1, now), -EACCES);
    u = t;
    u.raddr[15] = 3;
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &u, cisn + 1, isn + 1, now), -EACCES);
    u = t;
    u.laddr[0] = 0x30;
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &u, cisn + 1, isn + 1, now), -EACCES);
    /* Another client ISN (an ACK that does not follow this SYN). */
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, cisn + 2, isn + 1, now), -EACCES);
    /* The raw cookie without the +1 of an ACK. */
    HP_CHECK_EQ(hp__tcp_cookie_check(&KEY, &t, cisn + 1, isn, now), -EACCES);
    /* Tampering: every single-bit flip of the cookie is caught, including
     * flips that would change the MSS index to another valid one. */
    for (int bit = 0; bit < 32; bit++) {
        int rc = hp__tcp_cookie_check(&KEY, &t, cisn + 1, (isn ^ (1u << bit)) + 1, now);
        if (rc != -EACCES)
            hp_test_fail(__FILE__, __LINE__, "bit %d flipped: accepted, rc %d", bit, rc);
    }
    /* Blind guesses: a few thousand random ACKs, none accepted (the chance of
     * one is 2 / 2^29 each). */
    uint64_t seed = hp_test_seed();
    int accepted = 0;
    for (int i = 0; i < 5000; i++) {
        uint32_t guess = (uint32_t)hp_test_rand(&seed);
        if (hp__tcp_cookie_check(&KEY, &t, cisn + 1, guess, now) >= 0)
            accepted++;
    }
    HP_CHECK_EQ(accepted, 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The options a cookie carries in its TSval (tcp_cookie.h): every window
 * shift, or none, with SACK and ECN in each combination, come back from
 * the echoed TSecr; the TSval never runs ahead of the connection's clock
 * and lags it by less than 64 ms, across the 2^32 wrap too. */
HP_TEST(tcp_cookie_ts_carries_wscale_sack_ecn)
{
    uint64_t seed = hp_test_seed();
    for (int ws = -1; ws <= 14; ws++) {
        for (int bits = 0; bits < 4; bits++) {
            struct hp__tcp_cookie_opts o = {.ts = true,
                                            .ws = ws >= 0,
                                            .snd_wscale = (uint8_t)(ws >= 0 ? ws : 0),
                                            .sack = bits & 1,
                                            .ecn = (bits >> 1) & 1};
            for (int k = 0; k < 20; k++) {
                uint32_t now = (uint32_t)hp_test_rand(&seed);
                if (k == 0)
                    now = 0; /* the wrap: the TSval is just below 2^32 */
                uint32_t tsval = hp__tcp_cookie_tsval(now, &o);
                HP_CHECK((int32_t)(now - tsval) >= 0 && now - tsval < 64);
                struct hp__tcp_cookie_opts d;
                memset(&d, 0xAA, sizeof d);
                hp__tcp_cookie_ts_decode(tsval, &d);
                HP_CHECK(d.ts);
                HP_CHECK_EQ(d.ws, o.ws);
                HP_CHECK_EQ(d.snd_wscale, o.snd_wscale);
                HP_CHECK_EQ(d.sack, o.sack);
                HP_CHECK_EQ(d.ecn, o.ecn);
            }
            HP_STOP_IF_FAILED();
        }
    }
    /* A forged TSecr with shift 15 is "no scaling"; the low bits are all
     * there is: the rest of the TSecr says nothing. */
    struct hp__tcp_cookie_opts d;
    hp__tcp_cookie_ts_decode(0xFFFFFFC0u | 15u | 16u, &d);
    HP_CHECK(!d.ws && d.sack && !d.ecn);
    /* A shift above 14 in o is clamped to 14 (RFC 7323 2.3). */
    struct hp__tcp_cookie_opts big = {.ts = true, .ws = true, .snd_wscale = 14};
    hp__tcp_cookie_ts_decode(hp__tcp_cookie_tsval(1000, &big), &d);
    HP_CHECK_EQ(d.snd_wscale, 14);
    /* The receive window shift a cookie SYN-ACK announces: the smallest
     * that fits the buffer (RFC 7323 2.2), as a queued connection's. */
    HP_CHECK_EQ(hp__tcp_rcv_wscale(65535, false), 0);
    HP_CHECK_EQ(hp__tcp_rcv_wscale(65536, false), 1);
    HP_CHECK_EQ(hp__tcp_rcv_wscale(262144, false), 3);
    HP_CHECK_EQ(hp__tcp_rcv_wscale(1u << 30, false), 14);
    HP_CHECK_EQ(hp__tcp_rcv_wscale(262144, true), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
