/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP connection and listen tables: SipHash vectors, the keyed tuple hash and its rekeying, random, structured and colliding tuples, growth, limits, wildcard listeners, RFC 6056 ports, iteration. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/pool.h>

#include "hp_test.h"
#include "sock/tcp_table.h"

/* What a TCP connection will look like to the table: the key first. */
struct conn {
    struct hp__tcp_key key;
    uint32_t id;
    int seen;
};

/* A fixed secret: tests that depend on where tuples land are reproducible. */
static const uint8_t SECRET[32] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                                   0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
                                   0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f};

static const uint8_t A4[4] = {198, 18, 0, 2}, B4[4] = {198, 18, 0, 3}, P4[4] = {198, 19, 0, 1};
static const uint8_t A6[16] = {0x20, 0x01, 0, 2, [15] = 2}, P6[16] = {0x20, 0x01, 0, 2, [15] = 1};

static struct hp__tcp_table *table_fixed(uint32_t max, uint32_t initial, uint64_t hash_mask)
{
    struct hp__tcp_table_opts o = {.max_entries = max,
                                   .initial_entries = initial,
                                   .secret = SECRET,
                                   .hash_mask = hash_mask};
    return hp__tcp_table_create_opts(&o);
}

/* Tuple i of a set: random everywhere but for the remote address, which
 * encodes i, so the set has no duplicates and changing any other field of
 * tuple i gives a tuple that is not in the set. */
static void random_tuple(struct conn *c, uint32_t i, int family, uint64_t *rng)
{
    uint8_t l[16], r[16];
    for (int j = 0; j < 16; j++)
        l[j] = (uint8_t)hp_test_rand(rng);
    for (int j = 0; j < 16; j++)
        r[j] = (uint8_t)hp_test_rand(rng);
    int at = family == 4 ? 0 : 12;
    r[at] = (uint8_t)(i >> 24);
    r[at + 1] = (uint8_t)(i >> 16);
    r[at + 2] = (uint8_t)(i >> 8);
    r[at + 3] = (uint8_t)i;
    uint64_t ports = hp_test_rand(rng);
    hp__tcp_key_init(&c->key, family, l, (uint16_t)ports, r, (uint16_t)(ports >> 16));
    c->id = i;
    c->seen = 0;
}

static struct hp__tcp_table_stats stats(const struct hp__tcp_table *t)
{
    struct hp__tcp_table_stats s;
    hp__tcp_table_stats(t, &s);
    return s;
}

/* ---- the hash ------------------------------------------------------------------ */

/* The reference SipHash against the paper's vector (Appendix A: key
 * 00..0f, message 00..0e, SipHash-2-4 = a129ca6149be45e5) and the empty
 * message of the reference implementation's vectors. */
HP_TEST(tcp_table_siphash_vectors)
{
    const uint64_t key[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
    uint8_t msg[15];
    for (int i = 0; i < 15; i++)
        msg[i] = (uint8_t)i;
    HP_CHECK_EQ(hp__tcp_table_siphash(key, msg, 15, 2, 4), 0xa129ca6149be45e5ull);
    HP_CHECK_EQ(hp__tcp_table_siphash(key, msg, 0, 2, 4), 0x726fdb47dd0e0e31ull);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static unsigned popcount64(uint64_t x)
{
    return (unsigned)__builtin_popcountll(x);
}

/* The tuple hash is keyed: the same secret gives the same hashes, another
 * secret others; every field of the tuple reaches every part of the
 * output (a one-bit change flips about half the output bits, in the
 * bucket index's low bits and in the tag's high half alike). */
HP_TEST(tcp_table_hash_keyed_and_mixing)
{
    struct hp__tcp_table *t = table_fixed(16, 0, 0), *t1 = table_fixed(16, 0, 0);
    struct hp__tcp_table *t2 = hp__tcp_table_create(16);
    HP_REQUIRE(t != NULL && t1 != NULL && t2 != NULL);
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, 4, A4, 0x1234, P4, 0xabcd);
    HP_CHECK_EQ(hp__tcp_table_hash(t, &k), hp__tcp_table_hash(t1, &k));
    HP_CHECK_NE(hp__tcp_table_hash(t, &k), hp__tcp_table_hash(t2, &k));
    hp__tcp_key_init(&k, 6, A6, 443, P6, 50000);
    HP_CHECK_EQ(hp__tcp_table_hash(t, &k), hp__tcp_table_hash(t1, &k));
    HP_CHECK_NE(hp__tcp_table_hash(t, &k), hp__tcp_table_hash(t2, &k));
    uint64_t rng = 4242;
    for (int family = 4; family <= 6; family += 2) {
        /* Flip each bit of the 37 bytes that make the tuple in turn. */
        unsigned flips = 0;
        uint64_t dist = 0, low_dist = 0, high_dist = 0;
        for (int n = 0; n < 40; n++) {
            struct conn c;
            random_tuple(&c, (uint32_t)n, family, &rng);
            uint64_t h0 = hp__tcp_table_hash(t, &c.key);
            static const unsigned v4_bytes[] = {0, 1, 2, 3, 16, 17, 18, 19, 32, 33, 34, 35};
            unsigned m = family == 4 ? 12 : 36;
            for (unsigned i = 0; i < m; i++) {
                unsigned byte = family == 4 ? v4_bytes[i] : i;
                for (unsigned bit = 0; bit < 8; bit++) {
                    struct hp__tcp_key x = c.key;
                    ((uint8_t *)&x)[byte] ^= (uint8_t)(1u << bit);
                    uint64_t d = h0 ^ hp__tcp_table_hash(t, &x);
                    HP_CHECK_NE(d, 0);
                    dist += popcount64(d);
                    low_dist += popcount64(d & 0xFFFFu);
                    high_dist += popcount64(d >> 32);
                    flips++;
                }
            }
        }
        /* About half of the bits on average: 32 of 64, 8 of the 16 low
         * bits, 16 of the tag's 32. */
        HP_CHECK_GT(dist * 100 / flips, 2900);
        HP_CHECK_LT(dist * 100 / flips, 3500);
        HP_CHECK_GT(low_dist * 100 / flips, 700);
        HP_CHECK_LT(low_dist * 100 / flips, 900);
        HP_CHECK_GT(high_dist * 100 / flips, 1450);
        HP_CHECK_LT(high_dist * 100 / flips, 1750);
    }
    hp__tcp_table_destroy(t);
    hp__tcp_table_destroy(t1);
    hp__tcp_table_destroy(t2);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_table_create_errors)
{
    errno = 0;
    HP_CHECK(hp__tcp_table_create(0) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    errno = 0;
    HP_CHECK(hp__tcp_table_create((1u << 30) + 1) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    hp__tcp_table_destroy(NULL);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- connections ------------------------------------------------------------- */

static void many_random(int family)
{
    enum { N = 100000 };
    struct hp__tcp_table *t = hp__tcp_table_create(2 * N);
    struct conn *c = calloc(N, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    uint64_t rng = hp_test_seed() * 2 + (uint64_t)family;
    for (uint32_t i = 0; i < N; i++) {
        random_tuple(&c[i], i, family, &rng);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(hp__tcp_conn_count(t), N);
    for (uint32_t i = 0; i < N; i++) {
        struct hp__tcp_key probe = c[i].key;
        struct hp__tcp_key *k = hp__tcp_conn_lookup(t, &probe);
        HP_CHECK(k == &c[i].key);
        HP_CHECK_EQ(HP__TCP_ENTRY(k, struct conn, key)->id, i);
        /* Each field matters: change one, find nothing. */
        probe.rport++;
        HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
        probe.rport--;
        probe.lport++;
        HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
        probe.lport--;
        probe.laddr[family == 4 ? 3 : 15] ^= 1;
        HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
        probe.laddr[family == 4 ? 3 : 15] ^= 1;
        probe.family = (uint8_t)(family == 4 ? 6 : 4);
        HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
        HP_STOP_IF_FAILED();
    }
    /* A duplicate tuple in another structure is refused. */
    struct conn dup = c[N / 2];
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &dup.key), -EEXIST);
    /* Remove the even ones; the odd ones stay found. */
    for (uint32_t i = 0; i < N; i += 2)
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_count(t), N / 2);
    for (uint32_t i = 0; i < N; i++) {
        struct hp__tcp_key *k = hp__tcp_conn_lookup(t, &c[i].key);
        HP_CHECK(k == (i % 2 ? &c[i].key : NULL));
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[0].key), -ENOENT);
    HP_CHECK_EQ(hp__tcp_conn_remove(t, &dup.key), -ENOENT); /* a look-alike is not the entry */
    for (uint32_t i = 0; i < N; i += 2)
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_count(t), N);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);
    hp__tcp_table_destroy(t);
    free(c);
}

HP_TEST(tcp_table_random_100k_v4)
{
    many_random(4);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_table_random_100k_v6)
{
    many_random(6);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* v4 and v6 tuples with the same bytes are different connections. */
/* hp__tcp_key_eq decides an IPv4 pair on three of the five words (the
 * other two are zero in every key hp__tcp_key_init fills): any byte of
 * either address, either port or the family that differs still makes the
 * keys differ, in both families, and equal tuples are equal. */
HP_TEST(tcp_key_eq_every_field)
{
    for (int family = 4; family <= 6; family += 2) {
        uint8_t la[16], ra[16];
        for (int i = 0; i < 16; i++)
            la[i] = (uint8_t)(0x20 + i), ra[i] = (uint8_t)(0x90 + i);
        size_t n = family == 4 ? 4 : 16;
        struct hp__tcp_key a, b;
        hp__tcp_key_init(&a, family, la, 80, ra, 40000);
        hp__tcp_key_init(&b, family, la, 80, ra, 40000);
        HP_CHECK(hp__tcp_key_eq(&a, &b));
        for (size_t i = 0; i < n; i++) {
            uint8_t x[16];
            memcpy(x, la, 16);
            x[i] ^= 1;
            hp__tcp_key_init(&b, family, x, 80, ra, 40000);
            HP_CHECK(!hp__tcp_key_eq(&a, &b));
            HP_CHECK(!hp__tcp_key_eq(&b, &a));
            memcpy(x, ra, 16);
            x[i] ^= 0x80;
            hp__tcp_key_init(&b, family, la, 80, x, 40000);
            HP_CHECK(!hp__tcp_key_eq(&a, &b));
        }
        hp__tcp_key_init(&b, family, la, 81, ra, 40000);
        HP_CHECK(!hp__tcp_key_eq(&a, &b));
        hp__tcp_key_init(&b, family, la, 80, ra, 40001);
        HP_CHECK(!hp__tcp_key_eq(&a, &b));
        /* The other family, the same leading bytes. */
        hp__tcp_key_init(&b, family == 4 ? 6 : 4, la, 80, ra, 40000);
        HP_CHECK(!hp__tcp_key_eq(&a, &b));
        HP_CHECK(!hp__tcp_key_eq(&b, &a));
    }
}

HP_TEST(tcp_table_families_apart)
{
    struct hp__tcp_table *t = hp__tcp_table_create(16);
    HP_REQUIRE(t != NULL);
    struct conn a, b;
    hp__tcp_key_init(&a.key, 4, A4, 80, P4, 1000);
    /* The same bytes as IPv6 addresses (zero-padded, as the v4 key stores them). */
    const uint8_t l6[16] = {198, 18, 0, 2}, r6[16] = {198, 19, 0, 1};
    hp__tcp_key_init(&b.key, 6, l6, 80, r6, 1000);
    HP_CHECK_MEMEQ(&a.key, &b.key, 32);
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &a.key), 0);
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &b.key), 0);
    HP_CHECK(hp__tcp_conn_lookup(t, &a.key) == &a.key);
    HP_CHECK(hp__tcp_conn_lookup(t, &b.key) == &b.key);
    hp__tcp_table_destroy(t);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/*
 * 30,000 flows, the top of the cache-line experiment's range: inserted from
 * a small start (the map doubles on the way), every hit reads exactly one
 * entry and every miss reads none. The secret and the tuples are fixed, so
 * the absence of 32-bit tag collisions is a fact of this data set, not luck
 * of the run.
 */
HP_TEST(tcp_table_30k_miss_reads_no_entry)
{
    enum { N = 30000 };
    struct hp__tcp_table *t = table_fixed(65536, 16, 0);
    struct conn *c = calloc(N, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = 0; i < N; i++) {
        random_tuple(&c[i], i, i % 3 ? 4 : 6, &rng);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    }
    struct hp__tcp_table_stats s0 = stats(t);
    HP_CHECK_GE(s0.grows, 5); /* 16 buckets -> at least 10,000 */
    HP_CHECK_GE((uint64_t)s0.buckets * 3, N);
    HP_CHECK_LE(s0.buckets, s0.max_buckets);
    /* Misses: tuple i with another remote port. */
    for (uint32_t i = 0; i < N; i++) {
        struct hp__tcp_key probe = c[i].key;
        probe.rport ^= 0x8000;
        HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
    }
    struct hp__tcp_table_stats s1 = stats(t);
    HP_CHECK_EQ(s1.lookups - s0.lookups, N);
    HP_CHECK_EQ(s1.key_cmps - s0.key_cmps, 0);
    /* Most misses stop in their home bucket (Poisson(<=3) spill: under 10%). */
    HP_CHECK_LT(s1.extra_buckets - s0.extra_buckets, N / 5);
    /* Hits: one entry each. */
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    struct hp__tcp_table_stats s2 = stats(t);
    HP_CHECK_EQ(s2.key_cmps - s1.key_cmps, N);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Tuples as real traffic makes them, which differ in a few low bits: one
 * client's ports towards one server (tcp_rr's flows), and one server port
 * from the addresses of a /16. They spread over the buckets as random ones
 * do: most misses stop in their home bucket. */
HP_TEST(tcp_table_structured_tuples_spread)
{
    enum { N = 30000 };
    for (int shape = 0; shape < 3; shape++) {
        struct hp__tcp_table *t = table_fixed(65536, N, 0);
        struct conn *c = calloc(N, sizeof *c);
        HP_REQUIRE(t != NULL && c != NULL);
        for (uint32_t i = 0; i < N; i++) {
            uint8_t r4[4] = {198, 19, (uint8_t)(i >> 8), (uint8_t)i};
            uint8_t r6[16] = {0x20, 0x01, 0, 2, [14] = (uint8_t)(i >> 8), [15] = (uint8_t)i};
            if (shape == 0)
                hp__tcp_key_init(&c[i].key, 4, A4, (uint16_t)(20000 + i), P4, 5201);
            else if (shape == 1)
                hp__tcp_key_init(&c[i].key, 4, A4, 80, r4, 40000);
            else
                hp__tcp_key_init(&c[i].key, 6, A6, 443, r6, (uint16_t)(1024 + i % 7));
            HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
        }
        struct hp__tcp_table_stats s0 = stats(t);
        for (uint32_t i = 0; i < N; i++) {
            struct hp__tcp_key probe = c[i].key;
            if (shape == 0)
                probe.rport ^= 0x4000; /* the local ports are the set's */
            else
                probe.lport ^= 0x4000;
            HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
        }
        struct hp__tcp_table_stats s1 = stats(t);
        HP_CHECK_LT(s1.extra_buckets - s0.extra_buckets, N / 5);
        HP_CHECK_EQ(s1.key_cmps - s0.key_cmps, 0);
        HP_CHECK(!hp__tcp_table_rekey_wanted(t));
        hp__tcp_table_destroy(t);
        free(c);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A probe of REKEY_DIST (8) buckets past its home asks for a new key (the
 * defence against a peer that learnt enough of the key to build a chain);
 * the rekey moves every entry under the new key: every hash changes,
 * every entry is still found (and removed: removal hashes again), and
 * the chain is gone. */
HP_TEST(tcp_table_long_probe_rekeys)
{
    enum { N = 41 };
    struct hp__tcp_table *t = table_fixed(48, 48, 0); /* 16 buckets, fixed */
    HP_REQUIRE(t != NULL);
    struct conn c[N];
    uint64_t rng = 99;
    uint32_t n = 0, tries = 0;
    while (n < N && tries++ < 1000000) {
        random_tuple(&c[n], tries, 4, &rng);
        if ((hp__tcp_table_hash(t, &c[n].key) & 15) == 3)
            n++;
    }
    HP_REQUIRE_EQ(n, N);
    /* 40 entries fill buckets 3-10; the 41st probes 8 buckets. */
    for (uint32_t i = 0; i < N - 1; i++)
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    HP_CHECK(!hp__tcp_table_rekey_wanted(t));
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[N - 1].key), 0);
    HP_CHECK(hp__tcp_table_rekey_wanted(t));
    uint64_t before[N];
    for (uint32_t i = 0; i < N; i++)
        before[i] = hp__tcp_table_hash(t, &c[i].key);
    struct hp__tcp_table_stats s0 = stats(t);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    struct hp__tcp_table_stats s1 = stats(t);
    HP_CHECK_GT(s1.extra_buckets - s0.extra_buckets, 100);
    HP_CHECK_EQ(hp__tcp_table_rekey(t), 1);
    HP_CHECK(!hp__tcp_table_rekey_wanted(t));
    HP_CHECK_EQ(stats(t).rekeys, 1);
    HP_CHECK_EQ(hp__tcp_conn_count(t), N);
    unsigned changed = 0;
    for (uint32_t i = 0; i < N; i++) {
        changed += hp__tcp_table_hash(t, &c[i].key) != before[i];
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    }
    HP_CHECK_EQ(changed, N);
    /* 41 entries in 16 buckets of 5 under a fresh key: far fewer probes. */
    struct hp__tcp_table_stats s2 = stats(t);
    HP_CHECK_LT(s2.extra_buckets - s1.extra_buckets, 60);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);
    hp__tcp_table_destroy(t);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Every hash equal (mask 0): one home bucket, one tag. Lookups must fall
 * back on comparing whole tuples along one long overflow run, and removal
 * from its middle must keep the rest reachable. */
HP_TEST(tcp_table_all_collide)
{
    enum { N = 300 };
    /* A mask of 0 in the options means "no mask", so keep one bit, in the
     * tag half: every tuple has home bucket 0 and one of two tags. */
    struct hp__tcp_table *t = table_fixed(1024, 1024, 1ull << 63);
    HP_REQUIRE(t != NULL);
    struct conn *c = calloc(N, sizeof *c);
    HP_REQUIRE(c != NULL);
    uint64_t rng = hp_test_seed();
    for (uint32_t i = 0; i < N; i++) {
        random_tuple(&c[i], i, 4, &rng);
        HP_CHECK_EQ(hp__tcp_table_hash(t, &c[i].key) & 0xFFFFFFFFu, 0);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    }
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    struct hp__tcp_table_stats s = stats(t);
    HP_CHECK_GT(s.key_cmps, (uint64_t)N * 10); /* the price of colliding tags */
    HP_CHECK_GT(s.extra_buckets, (uint64_t)N * 10);
    /* Remove in a shuffled order, checking the survivors each time. */
    uint32_t order[N];
    for (uint32_t i = 0; i < N; i++)
        order[i] = i;
    for (uint32_t i = N - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(hp_test_rand(&rng) % (i + 1));
        uint32_t x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (uint32_t n = 0; n < N; n++) {
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[order[n]].key), 0);
        HP_CHECK(hp__tcp_conn_lookup(t, &c[order[n]].key) == NULL);
        if (n % 37 == 0)
            for (uint32_t m = n + 1; m < N; m++)
                HP_CHECK(hp__tcp_conn_lookup(t, &c[order[m]].key) == &c[order[m]].key);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);
    /* All overflow counts are back to 0: a miss now reads one bucket. */
    struct hp__tcp_table_stats a = stats(t);
    HP_CHECK(hp__tcp_conn_lookup(t, &c[0].key) == NULL);
    struct hp__tcp_table_stats b = stats(t);
    HP_CHECK_EQ(b.extra_buckets - a.extra_buckets, 0);
    HP_CHECK_EQ(b.key_cmps - a.key_cmps, 0);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* One home bucket but distinct tags (the hash's high half kept): a long
 * overflow run is walked, yet a miss still reads no entry. */
HP_TEST(tcp_table_same_bucket_tags_filter)
{
    enum { N = 200 };
    struct hp__tcp_table *t = table_fixed(1024, 1024, 0xFFFFFFFF00000000ull);
    struct conn *c = calloc(N, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    uint64_t rng = 12345;
    for (uint32_t i = 0; i < N; i++) {
        random_tuple(&c[i], i, 6, &rng);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    }
    struct hp__tcp_table_stats s0 = stats(t);
    for (uint32_t i = 0; i < N; i++) {
        struct hp__tcp_key probe = c[i].key;
        probe.lport ^= 1;
        HP_CHECK(hp__tcp_conn_lookup(t, &probe) == NULL);
    }
    struct hp__tcp_table_stats s1 = stats(t);
    HP_CHECK_EQ(s1.key_cmps - s0.key_cmps, 0);
    HP_CHECK_GE(s1.extra_buckets - s0.extra_buckets, (uint64_t)N * (N / 5 - 1));
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    HP_CHECK_EQ(stats(t).key_cmps - s1.key_cmps, N);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* With the real hash and a fixed secret, tuples found to share a home
 * bucket overflow it into the next; removing the home bucket's entries
 * leaves the spilled ones reachable. */
HP_TEST(tcp_table_real_hash_overflow)
{
    enum { N = 12 };
    struct hp__tcp_table *t = table_fixed(48, 48, 0); /* 16 buckets, fixed */
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(stats(t).max_buckets, 16);
    struct conn c[N];
    uint64_t rng = 777;
    uint32_t n = 0, tries = 0;
    while (n < N && tries++ < 100000) {
        random_tuple(&c[n], tries, 4, &rng);
        if ((hp__tcp_table_hash(t, &c[n].key) & 15) == 7)
            n++;
    }
    HP_REQUIRE_EQ(n, N);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    struct hp__tcp_table_stats s0 = stats(t);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    /* 5 in bucket 7, 5 in 8, 2 in 9: 0 + 5x1 + 2x2 extra buckets. */
    HP_CHECK_EQ(stats(t).extra_buckets - s0.extra_buckets, 9);
    for (uint32_t i = 0; i < 5; i++)
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[i].key), 0);
    for (uint32_t i = 5; i < N; i++)
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == &c[i].key);
    for (uint32_t i = 5; i < N; i++)
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);
    hp__tcp_table_destroy(t);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The map doubles up to its maximum and no further; entries survive each
 * doubling. */
HP_TEST(tcp_table_growth_and_max)
{
    enum { MAX = 1000 };
    struct hp__tcp_table *t = table_fixed(MAX, 1, 0);
    struct conn *c = calloc(MAX + 1, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    struct hp__tcp_table_stats s = stats(t);
    HP_CHECK_EQ(s.buckets, 16);
    HP_CHECK_EQ(s.max_buckets, 512); /* ceil(1000 / 3) = 334 -> 512 */
    uint64_t rng = hp_test_seed();
    uint32_t last_buckets = s.buckets;
    for (uint32_t i = 0; i < MAX; i++) {
        random_tuple(&c[i], i, i % 2 ? 4 : 6, &rng);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
        s = stats(t);
        if (s.buckets != last_buckets) {
            HP_CHECK_EQ(s.buckets, last_buckets * 2);
            for (uint32_t j = 0; j <= i; j++)
                HP_CHECK(hp__tcp_conn_lookup(t, &c[j].key) == &c[j].key);
            last_buckets = s.buckets;
        }
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_EQ(s.buckets, 512);
    HP_CHECK_EQ(s.grows, 5);
    random_tuple(&c[MAX], MAX, 4, &rng);
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[MAX].key), -ENOSPC);
    HP_CHECK(hp__tcp_conn_lookup(t, &c[MAX].key) == NULL);
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[3].key), -EEXIST); /* the duplicate check comes first */
    HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[3].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[MAX].key), 0);
    HP_CHECK_EQ(hp__tcp_conn_count(t), MAX);
    HP_CHECK_EQ(stats(t).buckets, 512);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- iteration ------------------------------------------------------------------ */

HP_TEST(tcp_table_iterate_and_remove)
{
    enum { N = 2000 };
    struct hp__tcp_table *t = table_fixed(N, 0, 0);
    struct conn *c = calloc(N, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    uint64_t rng = hp_test_seed();
    for (uint32_t i = 0; i < N; i++) {
        random_tuple(&c[i], i, 4, &rng);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    }
    /* A plain walk sees each entry once. */
    struct hp__tcp_iter it = HP__TCP_ITER_INIT;
    uint32_t n = 0;
    for (struct hp__tcp_key *k; (k = hp__tcp_conn_next(t, &it)) != NULL; n++)
        HP__TCP_ENTRY(k, struct conn, key)->seen++;
    HP_CHECK_EQ(n, N);
    for (uint32_t i = 0; i < N; i++) {
        HP_CHECK_EQ(c[i].seen, 1);
        c[i].seen = 0;
    }
    /* Teardown: remove what the walk returns, and now and then another
     * entry too (as closing one connection can close others). */
    it = (struct hp__tcp_iter)HP__TCP_ITER_INIT;
    int removed_other[N] = {0};
    for (struct hp__tcp_key *k; (k = hp__tcp_conn_next(t, &it)) != NULL;) {
        struct conn *x = HP__TCP_ENTRY(k, struct conn, key);
        HP_CHECK(!removed_other[x->id]);
        x->seen++;
        HP_CHECK_EQ(hp__tcp_conn_remove(t, k), 0);
        uint32_t other = (uint32_t)(hp_test_rand(&rng) % N);
        if (other % 4 == 0 && !c[other].seen && !removed_other[other]) {
            HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[other].key), 0);
            removed_other[other] = 1;
        }
        HP_STOP_IF_FAILED();
    }
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK_EQ(c[i].seen + removed_other[i], 1);
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);
    it = (struct hp__tcp_iter)HP__TCP_ITER_INIT;
    HP_CHECK(hp__tcp_conn_next(t, &it) == NULL);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- listeners ------------------------------------------------------------------ */

HP_TEST(tcp_table_listen_wildcard)
{
    struct hp__tcp_table *t = hp__tcp_table_create(64);
    HP_REQUIRE(t != NULL);
    struct conn any4, a4, any6, a6, dup, bad;
    hp__tcp_key_init(&any4.key, 4, NULL, 80, NULL, 0);
    hp__tcp_key_init(&a4.key, 4, A4, 80, NULL, 0);
    hp__tcp_key_init(&any6.key, 6, NULL, 443, NULL, 0);
    hp__tcp_key_init(&a6.key, 6, A6, 80, NULL, 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &any4.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &a4.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &any6.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &a6.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_count(t), 4);
    hp__tcp_key_init(&dup.key, 4, A4, 80, NULL, 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &dup.key), -EEXIST);
    hp__tcp_key_init(&bad.key, 4, A4, 81, P4, 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &bad.key), -EINVAL);
    hp__tcp_key_init(&bad.key, 4, A4, 81, NULL, 5);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &bad.key), -EINVAL);

    /* The exact address first, then the any address. */
    HP_CHECK(hp__tcp_listen_lookup(t, 4, A4, 80) == &a4.key);
    HP_CHECK(hp__tcp_listen_lookup(t, 4, B4, 80) == &any4.key);
    HP_CHECK(hp__tcp_listen_lookup(t, 4, A4, 81) == NULL);
    HP_CHECK(hp__tcp_listen_get(t, 4, B4, 80) == NULL); /* no fallback */
    HP_CHECK(hp__tcp_listen_get(t, 4, NULL, 80) == &any4.key);
    /* Families are apart: no v4 listener answers v6, nor the other way. */
    HP_CHECK(hp__tcp_listen_lookup(t, 6, A6, 80) == &a6.key);
    HP_CHECK(hp__tcp_listen_lookup(t, 6, P6, 80) == NULL);
    HP_CHECK(hp__tcp_listen_lookup(t, 6, P6, 443) == &any6.key);
    HP_CHECK(hp__tcp_listen_lookup(t, 4, A4, 443) == NULL);
    /* The listen map is not the connection map. */
    HP_CHECK(hp__tcp_conn_lookup(t, &a4.key) == NULL);
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);

    /* Without the specific listener, the wildcard takes its SYNs. */
    HP_CHECK_EQ(hp__tcp_listen_remove(t, &a4.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_remove(t, &a4.key), -ENOENT);
    HP_CHECK(hp__tcp_listen_lookup(t, 4, A4, 80) == &any4.key);
    HP_CHECK_EQ(hp__tcp_listen_remove(t, &any4.key), 0);
    HP_CHECK(hp__tcp_listen_lookup(t, 4, A4, 80) == NULL);

    struct hp__tcp_iter it = HP__TCP_ITER_INIT;
    int n = 0;
    for (struct hp__tcp_key *k; (k = hp__tcp_listen_next(t, &it)) != NULL; n++)
        HP_CHECK_EQ(hp__tcp_listen_remove(t, k), 0);
    HP_CHECK_EQ(n, 2);
    HP_CHECK_EQ(hp__tcp_listen_count(t), 0);
    hp__tcp_table_destroy(t);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The TIME_WAIT map (tcp_tw.c's records): apart from the connection map
 * (a tuple may be in either, found only where it is), its tuples taken
 * for port choice, and moved under a new key by a rekey with the others. */
HP_TEST(tcp_table_time_wait_map)
{
    enum { N = 64, NP = 8, LO = 50000 };
    struct hp__tcp_table *t = table_fixed(1024, 48, 0);
    struct conn *c = calloc(N, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    uint64_t rng = hp_test_seed();
    HP_CHECK(hp__tcp_tw_lookup(t, &c[0].key) == NULL); /* empty: no probe at all */
    for (uint32_t i = 0; i < N; i++) {
        random_tuple(&c[i], i, i & 1 ? 6 : 4, &rng);
        HP_CHECK_EQ(hp__tcp_tw_insert(t, &c[i].key), 0);
    }
    HP_CHECK_EQ(hp__tcp_tw_insert(t, &c[5].key), -EEXIST);
    HP_CHECK_EQ(hp__tcp_tw_count(t), N);
    HP_CHECK_EQ(hp__tcp_conn_count(t), 0);
    for (uint32_t i = 0; i < N; i++) {
        HP_CHECK(hp__tcp_tw_lookup(t, &c[i].key) == &c[i].key);
        HP_CHECK(hp__tcp_conn_lookup(t, &c[i].key) == NULL);
    }
    HP_CHECK_EQ(hp__tcp_table_rekey(t), 1);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK(hp__tcp_tw_lookup(t, &c[i].key) == &c[i].key);
    for (uint32_t i = 0; i < N; i += 2)
        HP_CHECK_EQ(hp__tcp_tw_remove(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_tw_remove(t, &c[0].key), -ENOENT);
    HP_CHECK_EQ(hp__tcp_tw_count(t), N / 2);
    for (uint32_t i = 0; i < N; i++)
        HP_CHECK((hp__tcp_tw_lookup(t, &c[i].key) != NULL) == (i % 2 == 1));
    /* Ports: a tuple in TIME_WAIT is as taken as a connection's. */
    HP_REQUIRE_EQ(hp__tcp_table_set_ephemeral(t, LO, LO + NP - 1), 0);
    struct hp__tcp_key k[NP + 1];
    for (uint32_t i = 0; i < NP; i++) {
        hp__tcp_key_init(&k[i], 4, A4, 0, P4, 80);
        HP_REQUIRE_EQ(hp__tcp_port_alloc(t, &k[i]), 0);
        HP_CHECK_EQ(i % 2 ? hp__tcp_tw_insert(t, &k[i]) : hp__tcp_conn_insert(t, &k[i]), 0);
    }
    hp__tcp_key_init(&k[NP], 4, A4, 0, P4, 80);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k[NP]), -EADDRNOTAVAIL);
    HP_CHECK_EQ(hp__tcp_tw_remove(t, &k[3]), 0);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k[NP]), 0);
    HP_CHECK_EQ(k[NP].lport, k[3].lport);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- ephemeral ports ------------------------------------------------------------ */

/* Connections to one destination get distinct ports from the range until
 * it runs out; a freed port is found again; another destination has its
 * own port space. */
HP_TEST(tcp_table_port_alloc_unique_and_exhausted)
{
    enum { LO = 40000, NP = 100 };
    struct hp__tcp_table *t = hp__tcp_table_create(1024);
    struct conn *c = calloc(NP + 1, sizeof *c);
    HP_REQUIRE(t != NULL && c != NULL);
    HP_CHECK_EQ(hp__tcp_table_set_ephemeral(t, 0, 10), -EINVAL);
    HP_CHECK_EQ(hp__tcp_table_set_ephemeral(t, 20, 10), -EINVAL);
    HP_REQUIRE_EQ(hp__tcp_table_set_ephemeral(t, LO, LO + NP - 1), 0);
    uint8_t used[NP] = {0};
    for (uint32_t i = 0; i < NP; i++) {
        hp__tcp_key_init(&c[i].key, 4, A4, 0, P4, 80);
        HP_REQUIRE_EQ(hp__tcp_port_alloc(t, &c[i].key), 0);
        uint16_t p = c[i].key.lport;
        HP_CHECK_GE(p, LO);
        HP_CHECK_LT(p, LO + NP);
        HP_REQUIRE(p >= LO && p < LO + NP);
        HP_CHECK_EQ(used[p - LO], 0);
        used[p - LO] = 1;
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    }
    hp__tcp_key_init(&c[NP].key, 4, A4, 0, P4, 80);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &c[NP].key), -EADDRNOTAVAIL);
    /* Free one: the next allocation finds exactly it. */
    uint16_t freed = c[37].key.lport;
    HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[37].key), 0);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &c[NP].key), 0);
    HP_CHECK_EQ(c[NP].key.lport, freed);
    /* Another remote port, another remote address, another local address:
     * the 4-tuples differ, so ports are free again. */
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, 4, A4, 0, P4, 81);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k), 0);
    hp__tcp_key_init(&k, 4, A4, 0, B4, 80);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k), 0);
    hp__tcp_key_init(&k, 4, B4, 0, P4, 80);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k), 0);
    hp__tcp_key_init(&k, 6, A6, 0, P6, 80);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k), 0);
    hp__tcp_table_destroy(t);
    free(c);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A port something listens on (at our address or the any address) is not
 * handed to a connection. */
HP_TEST(tcp_table_port_alloc_skips_listeners)
{
    enum { LO = 5000, NP = 8 };
    struct hp__tcp_table *t = hp__tcp_table_create(64);
    HP_REQUIRE(t != NULL);
    HP_REQUIRE_EQ(hp__tcp_table_set_ephemeral(t, LO, LO + NP - 1), 0);
    struct conn l1, l2, c[NP];
    hp__tcp_key_init(&l1.key, 4, NULL, LO + 2, NULL, 0);
    hp__tcp_key_init(&l2.key, 4, A4, LO + 5, NULL, 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &l1.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_insert(t, &l2.key), 0);
    int got = 0;
    for (int i = 0; i < NP; i++) {
        hp__tcp_key_init(&c[i].key, 4, A4, 0, P4, 443);
        int r = hp__tcp_port_alloc(t, &c[i].key);
        if (r == -EADDRNOTAVAIL)
            break;
        HP_CHECK_EQ(r, 0);
        HP_CHECK_NE(c[i].key.lport, LO + 2);
        HP_CHECK_NE(c[i].key.lport, LO + 5);
        HP_CHECK_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
        got++;
    }
    HP_CHECK_EQ(got, NP - 2);
    /* From another local address, only the wildcard listener's port is taken. */
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, 4, B4, 0, P4, 443);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k), 0);
    HP_CHECK_NE(k.lport, LO + 2);
    for (int i = 0; i < got; i++)
        HP_CHECK_EQ(hp__tcp_conn_remove(t, &c[i].key), 0);
    HP_CHECK_EQ(hp__tcp_listen_remove(t, &l1.key), 0);
    HP_CHECK_EQ(hp__tcp_listen_remove(t, &l2.key), 0);
    hp__tcp_table_destroy(t);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The default range (RFC 6335 6), over the whole of it: 16,384 connections
 * to one server port, each a distinct port, then exhaustion. */
HP_TEST(tcp_table_port_alloc_full_default_range)
{
    enum { NP = 16384 };
    struct hp__tcp_table *t = hp__tcp_table_create(NP + 16);
    struct conn *c = calloc(NP, sizeof *c);
    uint8_t *used = calloc(65536, 1);
    HP_REQUIRE(t != NULL && c != NULL && used != NULL);
    for (uint32_t i = 0; i < NP; i++) {
        hp__tcp_key_init(&c[i].key, 6, A6, 0, P6, 8080);
        HP_REQUIRE_EQ(hp__tcp_port_alloc(t, &c[i].key), 0);
        HP_CHECK_GE(c[i].key.lport, 49152);
        HP_CHECK_EQ(used[c[i].key.lport], 0);
        used[c[i].key.lport] = 1;
        HP_REQUIRE_EQ(hp__tcp_conn_insert(t, &c[i].key), 0);
    }
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, 6, A6, 0, P6, 8080);
    HP_CHECK_EQ(hp__tcp_port_alloc(t, &k), -EADDRNOTAVAIL);
    hp__tcp_table_destroy(t);
    free(c);
    free(used);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
