/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP connection and listen tables: a keyed multiply-fold hash rekeyed on long chains, one-cache-line buckets with tags, linear probing with overflow counts. */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cacheline.h>

#include "../base/siphash.h"
#include "tcp_table.h"

/*
 * The hash
 * --------
 * Received segments choose the tuple, so a hash whose collisions can be
 * computed lets a peer put every connection in one chain and turn each
 * lookup into a walk of thousands of entries (hash flooding). Every
 * segment is looked up, so the hash is on the hot path: SipHash-1-3 of a
 * tuple cost about 140 instructions per segment here (docs/experiments.md,
 * issue 23), a third of what lwIP spends on a whole segment. The defence
 * is now in two parts:
 *
 *  1. A keyed multiply-fold hash (the "mum" of wyhash and of the NH hash of
 *     UMAC, RFC 4418 5.2: a 64 x 64 -> 128-bit product of message words
 *     offset by secret words, its halves folded by xor): two products for
 *     IPv4, four for IPv6, under 384 bits of secret from getrandom(). Its
 *     outputs are not computable without the secret, which never leaves the
 *     table; NH's family is almost universal (two fixed inputs collide with
 *     probability about 2^-64 over the key), which is what a peer that
 *     chooses tuples without seeing the key faces. Linux's established
 *     table makes the same trade (jhash under a boot-time secret).
 *  2. What a universal hash does not promise, that a peer learning about
 *     the key from the timing of lookups cannot build a chain, is made
 *     pointless by watching the chains: an insert that has to probe
 *     REKEY_DIST buckets or more past its home (at our loads about once in
 *     10^9 inserts with any key, tcp_table.c's numbers below) asks for a
 *     new secret, and the next hp__tcp_table_maintain() rehashes every
 *     entry under it (Linux's rhashtable does the same on a long chain).
 *     Inserts are connections that completed a handshake, so a peer pays a
 *     round trip per entry it places, and whatever it learnt is void after.
 *     Rekeys are rate-limited to one per half the map's inserts, so they
 *     cost O(1) amortized per insert.
 *
 * SipHash stays where its output must be unpredictable in itself: the port
 * choice of RFC 6056 (below), initial sequence numbers and SYN cookies
 * (tcp_hash.c).
 *
 * The 64-bit output is split: the low bits pick the home bucket, the high
 * 32 bits are the tag stored in the bucket. Tag 0 marks an empty slot, so a
 * hash whose high half is 0 uses tag 1.
 *
 * The buckets
 * -----------
 * A bucket is one 64-byte line: 5 tags, an overflow count, 5 entry
 * pointers. A lookup compares its tag with the 5 tags and reads an entry
 * only on a match, so a hit reads one bucket and one entry and a miss reads
 * one bucket (for 5 x 2^-32 odds of a false tag match).
 *
 * A full bucket spills to the next one (linear probing, by whole buckets:
 * the next line is the one the adjacent-line prefetcher brings anyway). The
 * overflow count of a bucket is the number of entries that probed past it
 * (home at or before it, stored after it). A lookup stops at the first
 * bucket whose count is 0, so a miss in a bucket that never overflowed
 * stops there, and removal needs no tombstones: it clears the slot and
 * decrements the counts of the buckets between home and the slot. Entries
 * never move after insertion (until the map grows), which is what makes
 * removal during iteration safe.
 *
 * Growth
 * ------
 * At a load threshold, not incrementally: when an insert finds an average
 * of LOAD_PER_BUCKET entries per bucket (3 of 5 slots, 60%), the map
 * doubles and every entry is placed again from the hash stored in its key
 * (no rehashing). Incremental rehash would bound the pause but makes every
 * lookup during a migration read two tables (two lines on a miss) and
 * complicates removal and iteration; a doubling at 30,000 flows moves
 * 30,000 pointers in well under a millisecond, and a stack that knows its
 * load presizes (initial_entries) and never grows on the data path. The map
 * never shrinks. At 60% of 5-slot buckets, with keys spread uniformly, the
 * count per bucket is about Poisson(3): P(more than 5) is about 8%, so most
 * lookups read one bucket and nearly all the rest two. Between doublings
 * the load is 30-60%; memory is 64 bytes per 1.5-3 connections.
 */

#define SLOTS           5u
#define LOAD_PER_BUCKET 3u
#define MIN_BUCKETS     16u
#define MAX_ENTRIES     (1u << 30)
#define PERTURB_N       256u
/* An insert that probes this many buckets past its home asks for a new
 * key. At the loads the map keeps (at most 3 entries per 5-slot bucket)
 * a run of 8 full buckets from a home has odds of about 10^-9 with any
 * key (the Poisson tail, 0.08 per bucket, compounded). */
#define REKEY_DIST 8u
#define HASH_WORDS 6u

struct bucket {
    HP_CACHELINE_GROUP_BEGIN(line)
    uint32_t tag[SLOTS];            /* 0: empty */
    uint32_t overflow;              /* entries that probed past this bucket */
    struct hp__tcp_key *ent[SLOTS]; /* NULL when the tag is 0 */
    HP_CACHELINE_GROUP_END(line)
} __attribute__((aligned(HP_CACHELINE_SIZE)));

_Static_assert(sizeof(struct bucket) == HP_CACHELINE_SIZE, "a bucket is one cache line");
_Static_assert(alignof(struct bucket) == HP_CACHELINE_SIZE, "buckets start on a line");
HP_CACHELINE_ASSERT_GROUP_SIZE(struct bucket, line, HP_CACHELINE_SIZE);
HP_CACHELINE_ASSERT_GROUP_LINES(struct bucket, line, 1);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct bucket, line, tag);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct bucket, line, overflow);
HP_CACHELINE_ASSERT_GROUP_MEMBER(struct bucket, line, ent);

/* The key: 40 bytes compared as 5 words, at the start of the caller's
 * line 0. */
_Static_assert(sizeof(struct hp__tcp_key) == 40,
               "the tuple is 5 words, compared as such; no stored hash");

struct map {
    struct bucket *b;
    uint32_t mask; /* buckets - 1 */
    uint32_t count;
    uint32_t grow_at;  /* count at which an insert doubles the map */
    uint32_t max_mask; /* mask at the largest size */
    uint32_t max_entries;
};

struct hp__tcp_table {
    struct map conn, listen;
    struct map tw;          /* compact TIME_WAIT records (tcp_tw.c) */
    uint64_t k[HASH_WORDS]; /* tuple hash key */
    uint64_t hash_mask;     /* all ones but in tests */
    bool rekey_wanted;      /* an insert probed REKEY_DIST buckets (see the hash) */
    uint32_t since_rekey;   /* inserts since the key was made */
    uint64_t rekeys;
    uint64_t pk0, pk1; /* port selection key (RFC 6056's secret_key) */
    uint64_t lookups, key_cmps, extra_buckets, grows;
    uint32_t conn_removed; /* hp__tcp_conn_epoch */
    uint16_t eph_lo, eph_hi;
    uint16_t perturb[PERTURB_N]; /* RFC 6056 algorithm 4's table */
};

/* ---- SipHash ------------------------------------------------------------------ */

uint64_t hp__tcp_table_siphash(const uint64_t key[2], const void *msg, size_t len, int c, int d)
{
    return hp__siphash(key, msg, len, c, d);
}

/*
 * SipHash-1-3 of a tuple, as the words hp__tcp_table_siphash would read from these
 * bytes (little-endian): IPv4 laddr[0..3] raddr[0..3] lport rport family
 * 0 0 0 (16 bytes); IPv6 laddr raddr lport rport family 0 0 0 (40 bytes).
 * The words are built from the key's bytes, so the result does not depend
 * on the host's byte order.
 */
static inline uint64_t tuple_sip(uint64_t k0, uint64_t k1, const struct hp__tcp_key *k)
{
    uint64_t last = (uint64_t)k->lport | (uint64_t)k->rport << 16 | (uint64_t)k->family << 32;
    struct hp__sip s;
    hp__sip_init(&s, k0, k1);
    if (k->family == 4) {
        uint64_t w = (uint64_t)k->laddr[0] | (uint64_t)k->laddr[1] << 8 |
                     (uint64_t)k->laddr[2] << 16 | (uint64_t)k->laddr[3] << 24 |
                     (uint64_t)k->raddr[0] << 32 | (uint64_t)k->raddr[1] << 40 |
                     (uint64_t)k->raddr[2] << 48 | (uint64_t)k->raddr[3] << 56;
        hp__sip_word(&s, w, 1);
        hp__sip_word(&s, last, 1);
        hp__sip_word(&s, 16ull << 56, 1);
    } else {
        hp__sip_word(&s, hp__load_le64(k->laddr), 1);
        hp__sip_word(&s, hp__load_le64(k->laddr + 8), 1);
        hp__sip_word(&s, hp__load_le64(k->raddr), 1);
        hp__sip_word(&s, hp__load_le64(k->raddr + 8), 1);
        hp__sip_word(&s, last, 1);
        hp__sip_word(&s, 40ull << 56, 1);
    }
    return hp__sip_final(&s, 3);
}

/* The 128-bit product of a and b, its halves folded (wyhash's "mum"). */
static inline uint64_t mum(uint64_t a, uint64_t b)
{
    unsigned __int128 p = (unsigned __int128)a * b;
    return (uint64_t)p ^ (uint64_t)(p >> 64);
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/*
 * The table's hash of a tuple under key k (see "The hash"). The last word
 * holds the ports and the family, so the two families never share inputs;
 * the key words are offsets, the product mixes every bit of both factors
 * into its high half, and the second product mixes that into every output
 * bit (the bucket index is the low bits). Host byte order: the hash never
 * leaves the process.
 */
static inline uint64_t tuple_mum(const uint64_t *k, const struct hp__tcp_key *t)
{
    uint64_t last = (uint64_t)t->lport | (uint64_t)t->rport << 16 | (uint64_t)t->family << 32;
    uint64_t h;
    if (t->family == 4) {
        uint32_t l, r;
        memcpy(&l, t->laddr, 4);
        memcpy(&r, t->raddr, 4);
        h = mum(((uint64_t)l | (uint64_t)r << 32) ^ k[0], last ^ k[1]);
    } else {
        h = mum(load64(t->laddr) ^ k[0], load64(t->laddr + 8) ^ k[1]) ^
            mum(load64(t->raddr) ^ k[2], load64(t->raddr + 8) ^ k[3]) ^ last;
    }
    return mum(h ^ k[4], k[5]);
}

static inline uint64_t key_hash(const struct hp__tcp_table *t, const struct hp__tcp_key *k)
{
    return tuple_mum(t->k, k) & t->hash_mask;
}

uint64_t hp__tcp_table_hash(const struct hp__tcp_table *t, const struct hp__tcp_key *k)
{
    return key_hash(t, k);
}

static inline uint32_t tag_of(uint64_t h)
{
    uint32_t g = (uint32_t)(h >> 32);
    return g ? g : 1;
}

/* ---- one map ------------------------------------------------------------------- */

static struct bucket *buckets_new(uint32_t n)
{
    struct bucket *b = aligned_alloc(HP_CACHELINE_SIZE, (size_t)n * sizeof *b);
    if (b)
        memset(b, 0, (size_t)n * sizeof *b);
    return b;
}

static uint32_t pow2_at_least(uint64_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static void map_set_grow_at(struct map *m)
{
    m->grow_at = m->mask == m->max_mask ? UINT32_MAX : (m->mask + 1) * LOAD_PER_BUCKET;
}

static int map_init(struct map *m, uint32_t max_entries, uint32_t initial)
{
    uint32_t max_n = pow2_at_least((max_entries + LOAD_PER_BUCKET - 1) / LOAD_PER_BUCKET);
    uint32_t n = pow2_at_least((initial + LOAD_PER_BUCKET - 1) / LOAD_PER_BUCKET);
    if (n < MIN_BUCKETS)
        n = MIN_BUCKETS;
    if (max_n < MIN_BUCKETS)
        max_n = MIN_BUCKETS;
    if (n > max_n)
        n = max_n;
    m->b = buckets_new(n);
    if (!m->b)
        return -ENOMEM;
    m->mask = n - 1;
    m->max_mask = max_n - 1;
    m->max_entries = max_entries;
    m->count = 0;
    map_set_grow_at(m);
    return 0;
}

static struct hp__tcp_key *map_find(struct hp__tcp_table *t, const struct map *m,
                                    const struct hp__tcp_key *k, uint64_t h)
{
    uint32_t tag = tag_of(h), i = (uint32_t)h & m->mask;
    t->lookups++;
    /* Bounded by the number of buckets: the search ends at a bucket nothing
     * probed past, which exists while the map has free slots. */
    for (uint32_t n = 0; n <= m->mask; n++) {
        const struct bucket *b = &m->b[i];
        for (unsigned s = 0; s < SLOTS; s++) {
            if (b->tag[s] == tag) {
                t->key_cmps++;
                if (hp__tcp_key_eq(b->ent[s], k))
                    return b->ent[s];
            }
        }
        if (b->overflow == 0)
            return NULL;
        t->extra_buckets++;
        i = (i + 1) & m->mask;
    }
    return NULL;
}

/* Store e (its hash h) in the first free slot from its home bucket on,
 * counting it in the overflow of each full bucket passed. The caller makes
 * sure there is a free slot. @return the buckets passed. */
static uint32_t map_place(struct map *m, struct hp__tcp_key *e, uint64_t h)
{
    uint32_t tag = tag_of(h), i = (uint32_t)h & m->mask;
    for (uint32_t d = 0;; d++) {
        struct bucket *b = &m->b[i];
        for (unsigned s = 0; s < SLOTS; s++) {
            if (b->tag[s] == 0) {
                b->tag[s] = tag;
                b->ent[s] = e;
                return d;
            }
        }
        b->overflow++;
        i = (i + 1) & m->mask;
    }
}

/* Double the map, placing every entry again. Keys store no hash (8 bytes
 * of every connection): each is hashed again, which reads the key's line,
 * as reading a stored hash would. */
static int map_grow(struct hp__tcp_table *t, struct map *m)
{
    uint32_t old_n = m->mask + 1, n = old_n * 2;
    struct bucket *nb = buckets_new(n), *ob = m->b;
    if (!nb)
        return -ENOMEM;
    m->b = nb;
    m->mask = n - 1;
    for (uint32_t i = 0; i < old_n; i++)
        for (unsigned s = 0; s < SLOTS; s++)
            if (ob[i].tag[s])
                (void)map_place(m, ob[i].ent[s], key_hash(t, ob[i].ent[s]));
    free(ob);
    map_set_grow_at(m);
    t->grows++;
    return 0;
}

static int map_insert(struct hp__tcp_table *t, struct map *m, struct hp__tcp_key *k)
{
    uint64_t h = key_hash(t, k);
    if (map_find(t, m, k, h))
        return -EEXIST;
    if (m->count >= m->max_entries)
        return -ENOSPC;
    if (m->count >= m->grow_at && map_grow(t, m) < 0) {
        /* Out of memory: go on in the present map while it keeps a
         * bucket's worth of free slots, so that probes stay bounded. */
        uint64_t slots = (uint64_t)(m->mask + 1) * SLOTS;
        if (m->count + 1 + SLOTS > slots)
            return -ENOMEM;
    }
    /* A long probe asks for a new key (see "The hash"), at most once per
     * half the map's inserts; never under a test's mask, which collides on
     * purpose. */
    if (map_place(m, k, h) >= REKEY_DIST && t->hash_mask == UINT64_MAX &&
        t->since_rekey >= m->count / 2)
        t->rekey_wanted = true;
    t->since_rekey++;
    m->count++;
    return 0;
}

static int map_remove(const struct hp__tcp_table *t, struct map *m, struct hp__tcp_key *e)
{
    uint32_t home = (uint32_t)key_hash(t, e) & m->mask, i = home;
    for (uint32_t d = 0; d <= m->mask; d++) {
        struct bucket *b = &m->b[i];
        for (unsigned s = 0; s < SLOTS; s++) {
            if (b->ent[s] == e && b->tag[s]) {
                b->tag[s] = 0;
                b->ent[s] = NULL;
                /* It probed past the d buckets before this one. */
                for (uint32_t j = home; j != i; j = (j + 1) & m->mask)
                    m->b[j].overflow--;
                m->count--;
                return 0;
            }
        }
        if (b->overflow == 0)
            return -ENOENT; /* e would have been counted here */
        i = (i + 1) & m->mask;
    }
    return -ENOENT;
}

static struct hp__tcp_key *map_next(const struct map *m, struct hp__tcp_iter *it)
{
    while (it->bucket <= m->mask) {
        const struct bucket *b = &m->b[it->bucket];
        while (it->slot < SLOTS) {
            unsigned s = it->slot++;
            if (b->tag[s])
                return b->ent[s];
        }
        it->slot = 0;
        it->bucket++;
    }
    return NULL;
}

/* ---- the table ----------------------------------------------------------------- */

/* The hash's HASH_WORDS key words from 128 bits of secret: SipHash-1-3
 * of the word's index under it (a PRF's outputs, independent of each
 * other). The last is a multiplier: odd, never 0. */
static void set_hash_key(struct hp__tcp_table *t, uint64_t s0, uint64_t s1)
{
    for (uint32_t i = 0; i < HASH_WORDS; i++) {
        struct hp__sip s;
        hp__sip_init(&s, s0, s1);
        hp__sip_word(&s, i, 1);
        hp__sip_word(&s, 8ull << 56, 1);
        t->k[i] = hp__sip_final(&s, 3);
    }
    t->k[HASH_WORDS - 1] |= 1;
}

/* Place every entry of m again, into nb (as many buckets), under the
 * table's (new) key. */
static void map_rehash(struct hp__tcp_table *t, struct map *m, struct bucket *nb)
{
    struct bucket *ob = m->b;
    m->b = nb;
    for (uint32_t i = 0; i <= m->mask; i++)
        for (unsigned s = 0; s < SLOTS; s++)
            if (ob[i].tag[s])
                (void)map_place(m, ob[i].ent[s], key_hash(t, ob[i].ent[s]));
    free(ob);
}

bool hp__tcp_table_rekey_wanted(const struct hp__tcp_table *t)
{
    return t->rekey_wanted;
}

int hp__tcp_table_rekey(struct hp__tcp_table *t)
{
    t->rekey_wanted = false;
    /* A new key, and every entry moved under it (see "The hash"). Without
     * memory or randomness the old key stays: still correct, and the next
     * long probe asks again. */
    uint64_t fresh[2];
    struct bucket *cb = buckets_new(t->conn.mask + 1), *lb = buckets_new(t->listen.mask + 1);
    struct bucket *wb = buckets_new(t->tw.mask + 1);
    if (!cb || !lb || !wb || hp__random_bytes(fresh, sizeof fresh) < 0) {
        free(cb);
        free(lb);
        free(wb);
        return 0;
    }
    set_hash_key(t, fresh[0], fresh[1]);
    map_rehash(t, &t->conn, cb);
    map_rehash(t, &t->listen, lb);
    map_rehash(t, &t->tw, wb);
    t->since_rekey = 0;
    t->rekeys++;
    return 1;
}

struct hp__tcp_table *hp__tcp_table_create_opts(const struct hp__tcp_table_opts *o)
{
    if (!o || o->max_entries == 0 || o->max_entries > MAX_ENTRIES ||
        o->initial_entries > MAX_ENTRIES) {
        errno = EINVAL;
        return NULL;
    }
    uint8_t secret[32];
    if (o->secret) {
        memcpy(secret, o->secret, sizeof secret);
    } else {
        int err = hp__random_bytes(secret, sizeof secret);
        if (err < 0) {
            errno = -err;
            return NULL;
        }
    }
    struct hp__tcp_table *t = calloc(1, sizeof *t);
    if (!t) {
        errno = ENOMEM;
        return NULL;
    }
    uint32_t initial = o->initial_entries ? o->initial_entries : 48;
    if (map_init(&t->conn, o->max_entries, initial) < 0 ||
        map_init(&t->listen, o->max_entries, 0) < 0 || map_init(&t->tw, o->max_entries, 0) < 0) {
        hp__tcp_table_destroy(t);
        errno = ENOMEM;
        return NULL;
    }
    set_hash_key(t, hp__load_le64(secret), hp__load_le64(secret + 8));
    t->pk0 = hp__load_le64(secret + 16);
    t->pk1 = hp__load_le64(secret + 24);
    t->hash_mask = o->hash_mask ? o->hash_mask : UINT64_MAX;
    t->eph_lo = 49152;
    t->eph_hi = 65535;
    /* RFC 6056 algorithm 4 starts its table at random values. One-word
     * messages under the port key: distinct from the 2- and 5-word tuples
     * that key also hashes (the length is part of SipHash's last word). */
    for (uint32_t i = 0; i < PERTURB_N; i++) {
        struct hp__sip s;
        hp__sip_init(&s, t->pk0, t->pk1);
        hp__sip_word(&s, i, 1);
        hp__sip_word(&s, 8ull << 56, 1);
        t->perturb[i] = (uint16_t)hp__sip_final(&s, 3);
    }
    memset(secret, 0, sizeof secret);
    return t;
}

struct hp__tcp_table *hp__tcp_table_create(uint32_t max_entries)
{
    struct hp__tcp_table_opts o = {.max_entries = max_entries};
    return hp__tcp_table_create_opts(&o);
}

void hp__tcp_table_destroy(struct hp__tcp_table *t)
{
    if (!t)
        return;
    free(t->conn.b);
    free(t->listen.b);
    free(t->tw.b);
    free(t);
}

int hp__tcp_conn_insert(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    return map_insert(t, &t->conn, k);
}

struct hp__tcp_key *hp__tcp_conn_lookup(struct hp__tcp_table *t, const struct hp__tcp_key *k)
{
    return map_find(t, &t->conn, k, key_hash(t, k));
}

struct hp__tcp_key *hp__tcp_conn_lookup_hashed(struct hp__tcp_table *t, const struct hp__tcp_key *k,
                                               uint64_t h)
{
    return map_find(t, &t->conn, k, h);
}

struct hp__tcp_key *hp__tcp_conn_lookup_peeked(struct hp__tcp_table *t, const struct hp__tcp_key *k,
                                               uint64_t h, struct hp__tcp_key *e, uint32_t epoch)
{
    if (e && epoch == t->conn_removed && hp__tcp_key_eq(e, k)) {
        t->lookups++;
        t->key_cmps++;
        return e;
    }
    return map_find(t, &t->conn, k, h);
}

uint32_t hp__tcp_conn_epoch(const struct hp__tcp_table *t)
{
    return t->conn_removed;
}

void hp__tcp_conn_prefetch(const struct hp__tcp_table *t, uint64_t h)
{
    __builtin_prefetch(&t->conn.b[(uint32_t)h & t->conn.mask], 0, 3);
}

struct hp__tcp_key *hp__tcp_conn_peek(const struct hp__tcp_table *t, uint64_t h)
{
    const struct bucket *b = &t->conn.b[(uint32_t)h & t->conn.mask];
    uint32_t tag = tag_of(h);
    for (unsigned s = 0; s < SLOTS; s++)
        if (b->tag[s] == tag)
            return b->ent[s];
    return NULL;
}

int hp__tcp_conn_remove(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    t->conn_removed++;
    return map_remove(t, &t->conn, k);
}

uint32_t hp__tcp_conn_count(const struct hp__tcp_table *t)
{
    return t->conn.count;
}

int hp__tcp_tw_insert(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    return map_insert(t, &t->tw, k);
}

struct hp__tcp_key *hp__tcp_tw_lookup(struct hp__tcp_table *t, const struct hp__tcp_key *k)
{
    return t->tw.count ? map_find(t, &t->tw, k, key_hash(t, k)) : NULL;
}

int hp__tcp_tw_remove(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    return map_remove(t, &t->tw, k);
}

uint32_t hp__tcp_tw_count(const struct hp__tcp_table *t)
{
    return t->tw.count;
}

static bool all_zero(const uint8_t *a, size_t n)
{
    uint8_t x = 0;
    for (size_t i = 0; i < n; i++)
        x |= a[i];
    return x == 0;
}

int hp__tcp_listen_insert(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    if (k->rport != 0 || !all_zero(k->raddr, sizeof k->raddr))
        return -EINVAL;
    return map_insert(t, &t->listen, k);
}

struct hp__tcp_key *hp__tcp_listen_get(struct hp__tcp_table *t, int family, const uint8_t *laddr,
                                       uint16_t lport)
{
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, family, laddr, lport, NULL, 0);
    return map_find(t, &t->listen, &k, key_hash(t, &k));
}

struct hp__tcp_key *hp__tcp_listen_lookup(struct hp__tcp_table *t, int family, const uint8_t *laddr,
                                          uint16_t lport)
{
    /* Most specific first: a socket bound to the address the SYN was sent
     * to, then one bound to the any address (as Linux, and as our UDP). */
    struct hp__tcp_key *l = NULL;
    if (laddr && !all_zero(laddr, family == 4 ? 4 : 16))
        l = hp__tcp_listen_get(t, family, laddr, lport);
    return l ? l : hp__tcp_listen_get(t, family, NULL, lport);
}

int hp__tcp_listen_remove(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    return map_remove(t, &t->listen, k);
}

uint32_t hp__tcp_listen_count(const struct hp__tcp_table *t)
{
    return t->listen.count;
}

/* ---- ephemeral ports ----------------------------------------------------------- */

int hp__tcp_table_set_ephemeral(struct hp__tcp_table *t, uint16_t lo, uint16_t hi)
{
    if (lo == 0 || lo > hi)
        return -EINVAL;
    t->eph_lo = lo;
    t->eph_hi = hi;
    return 0;
}

/*
 * RFC 6056 3.3.4, algorithm 4:
 *   offset = F(local_IP, remote_IP, remote_port, secret_key1)
 *   index  = G(local_IP, remote_IP, remote_port, secret_key2)
 *   try port = min + (offset + table[index]) % num, table[index]++ ...
 * The offset makes each destination walk the range from its own secret
 * starting point (a third party cannot guess our ports, 3.3.3); the
 * per-index counter moves the walk on after each connection, so a
 * destination we reconnect to gets a new port rather than the one whose
 * 4-tuple may still be in TIME_WAIT at the peer (RFC 6056 2.3).
 * F and G come from one SipHash-1-3 output under the port key: the low 32
 * bits are F, the top 8 bits G. Bits of a PRF output are independent, so
 * this is two keyed functions for the price of one.
 */
int hp__tcp_port_alloc(struct hp__tcp_table *t, struct hp__tcp_key *k)
{
    struct hp__tcp_key p;
    hp__tcp_key_init(&p, k->family, k->laddr, 0, k->raddr, k->rport);
    uint64_t f = tuple_sip(t->pk0, t->pk1, &p);
    uint32_t offset = (uint32_t)f, index = (uint32_t)(f >> 56);
    uint32_t num = (uint32_t)t->eph_hi - t->eph_lo + 1;
    uint32_t base = t->perturb[index];
    /* base + n for n < num covers num consecutive values: each port once. */
    for (uint32_t n = 0; n < num; n++) {
        uint16_t port = (uint16_t)(t->eph_lo + (uint32_t)(((uint64_t)offset + base + n) % num));
        p.lport = port;
        uint64_t h = key_hash(t, &p);
        if (map_find(t, &t->conn, &p, h) || (t->tw.count && map_find(t, &t->tw, &p, h)))
            continue;
        if (hp__tcp_listen_lookup(t, k->family, k->laddr, port))
            continue;
        t->perturb[index] = (uint16_t)(base + n + 1);
        k->lport = port;
        return 0;
    }
    t->perturb[index] = (uint16_t)(base + num);
    return -EADDRNOTAVAIL;
}

/* ---- iteration and introspection ------------------------------------------------- */

struct hp__tcp_key *hp__tcp_conn_next(struct hp__tcp_table *t, struct hp__tcp_iter *it)
{
    return map_next(&t->conn, it);
}

struct hp__tcp_key *hp__tcp_listen_next(struct hp__tcp_table *t, struct hp__tcp_iter *it)
{
    return map_next(&t->listen, it);
}

void hp__tcp_table_stats(const struct hp__tcp_table *t, struct hp__tcp_table_stats *out)
{
    out->lookups = t->lookups;
    out->key_cmps = t->key_cmps;
    out->extra_buckets = t->extra_buckets;
    out->grows = t->grows;
    out->rekeys = t->rekeys;
    out->buckets = t->conn.mask + 1;
    out->max_buckets = t->conn.max_mask + 1;
}
