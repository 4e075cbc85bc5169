/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP connection and listen tables: a keyed, cache-line bucketed hash of 4-tuples, and ephemeral port choice (RFC 6056). */
#ifndef HOTPATH_SOCK_TCP_TABLE_H
#define HOTPATH_SOCK_TCP_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * What this module is
 * -------------------
 * One hp__tcp_table per stack (per thread: no locks) holds two maps:
 *
 *   conn    every connection, by its 4-tuple (family, local addr+port,
 *           remote addr+port): the demultiplexer of received segments;
 *   listen  every listening socket, by (family, local addr, local port),
 *           where the address may be the any address (all zeros).
 *
 * Neither map allocates per entry. The entry is a struct hp__tcp_key that
 * the caller embeds, as its first member, in its own structure (the TCP
 * connection, the listening socket) and gets back from a lookup by
 * container_of (or a cast, since it is first):
 *
 *     struct hp_tcp_conn {
 *         struct hp__tcp_key key;   // first: cache line 0 starts with it
 *         ...                        // the rest of line 0: what the receive
 *     };                             // path reads right after the lookup
 *
 *     struct hp__tcp_key *k = hp__tcp_conn_lookup(t, &probe);
 *     struct hp_tcp_conn *c = k ? HP__TCP_ENTRY(k, struct hp_tcp_conn, key) : NULL;
 *
 * The key must stay at the same address while it is in a map, and must be
 * removed before the memory around it is freed. A key is in one map at a
 * time. The table is not thread-safe: it
 * belongs to one stack, like everything the stack's thread touches.
 *
 * Ports are in host order. "Local" is always our side: for a received
 * segment, local = its destination, remote = its source.
 *
 * Cost: a lookup hashes the tuple (a keyed multiply-fold hash: 2 products
 * for IPv4, 4 for IPv6; tcp_table.c says why that is safe against hash
 * flooding), reads one 64-byte bucket, and reads an entry only when its
 * 32-bit tag matches, so a miss reads no entry (but for a tag collision,
 * probability 2^-32 per occupied slot read) and a hit reads one.
 * docs/cachelines/tcp_table.md has the bucket layout.
 */

/** Recover the structure around an embedded key (container_of). */
#define HP__TCP_ENTRY(k, type, member) ((type *)(void *)((char *)(k)-offsetof(type, member)))

/**
 * A 4-tuple, and the entry of both maps. Fill it with hp__tcp_key_init()
 * (which zeroes the unused bytes: the first 40 bytes are compared as
 * words). A listen key has raddr all zero and rport 0.
 */
struct hp__tcp_key {
    uint8_t laddr[16]; /* IPv4: the first 4 bytes, the other 12 zero */
    uint8_t raddr[16];
    uint16_t lport; /* host order */
    uint16_t rport;
    uint8_t family;   /* 4 or 6 */
    uint8_t zero_[3]; /* always zero (part of the compared words) */
};

/** Fill k: every byte is written (unused address bytes zero). raddr may be
 * NULL (a listen key: any remote). laddr may be NULL (the any address).
 * Inline, the copies at constant lengths: every received segment fills two
 * keys (early demultiplexing's and the lookup's), and a length known only at
 * run time made each a memset and two short memcpy sequences (about 45
 * instructions; with IPv4's 4 bytes as constants, about 12). */
static inline void hp__tcp_key_init(struct hp__tcp_key *k, int family, const uint8_t *laddr,
                                    uint16_t lport, const uint8_t *raddr, uint16_t rport)
{
    memset(k, 0, sizeof *k);
    if (family == 4) {
        if (laddr)
            memcpy(k->laddr, laddr, 4);
        if (raddr)
            memcpy(k->raddr, raddr, 4);
    } else {
        if (laddr)
            memcpy(k->laddr, laddr, 16);
        if (raddr)
            memcpy(k->raddr, raddr, 16);
    }
    k->lport = lport;
    k->rport = rport;
    k->family = (uint8_t)family;
}

/* Word i (0 to 4) of a key's first 40 bytes. */
static inline uint64_t hp__tcp_key_word(const struct hp__tcp_key *k, int i)
{
    uint64_t u;
    memcpy(&u, (const unsigned char *)k + 8 * i, 8);
    return u;
}

/** Whether a and b are the same tuple (their first 40 bytes as five
 * words, folded into one test, no early exit, no memcmp call). An IPv4 key
 * (its family is in word 4, compared always) has zeros in words 1 and 3,
 * both keys' (hp__tcp_key_init): three words decide it. */
static inline bool hp__tcp_key_eq(const struct hp__tcp_key *a, const struct hp__tcp_key *b)
{
    uint64_t x = (hp__tcp_key_word(a, 0) ^ hp__tcp_key_word(b, 0)) |
                 (hp__tcp_key_word(a, 2) ^ hp__tcp_key_word(b, 2)) |
                 (hp__tcp_key_word(a, 4) ^ hp__tcp_key_word(b, 4));
    if (a->family != 4)
        x |= (hp__tcp_key_word(a, 1) ^ hp__tcp_key_word(b, 1)) |
             (hp__tcp_key_word(a, 3) ^ hp__tcp_key_word(b, 3));
    return x == 0;
}

struct hp__tcp_table;

/** Options of hp__tcp_table_create_opts(); zero means the default. */
struct hp__tcp_table_opts {
    /** Most connections (and, separately, most listeners) the table holds;
     * the maps grow up to it. Required (> 0, at most 1 << 30). */
    uint32_t max_entries;
    /** Connections to size for at creation, so that a stack that knows its
     * load never grows on the data path. Default: 48. */
    uint32_t initial_entries;
    /** Test only: 32 bytes of secret instead of getrandom(), so that hashes
     * are reproducible. NULL in production. */
    const uint8_t *secret;
    /** Test only: every hash is ANDed with this before use; 0 means all
     * ones. The low 32 bits of a hash pick the bucket, the high 32 the tag:
     * 0xFFFFFFFF00000000 sends every tuple to bucket 0 with its own tag,
     * 1ull << 63 to bucket 0 with one of two tags: collisions on demand. */
    uint64_t hash_mask;
};

/**
 * A table holding at most max_entries connections and as many listeners,
 * with a secret from getrandom(). Returns NULL and sets errno: EINVAL
 * (max_entries 0 or above 1 << 30), ENOMEM, or getrandom's error.
 */
struct hp__tcp_table *hp__tcp_table_create(uint32_t max_entries);
/** As hp__tcp_table_create() with options (tests, presizing). */
struct hp__tcp_table *hp__tcp_table_create_opts(const struct hp__tcp_table_opts *o);
/** Free the table (not the entries: they belong to the caller, who
 * iterates to free them first). NULL is a no-op. */
void hp__tcp_table_destroy(struct hp__tcp_table *t);

/* ---- connections --------------------------------------------------------- */

/**
 * Add k (filled by hp__tcp_key_init) to the connection map.
 * The map keeps the pointer: k must stay put until removed.
 * @return 0; -EEXIST if the same tuple is there (k is not added);
 *         -ENOSPC if max_entries connections are there; -ENOMEM if the map
 *         had to grow, could not, and is too full to take k.
 */
int hp__tcp_conn_insert(struct hp__tcp_table *t, struct hp__tcp_key *k);
/** The entry with k's tuple, or NULL. No allocation. */
struct hp__tcp_key *hp__tcp_conn_lookup(struct hp__tcp_table *t, const struct hp__tcp_key *k);
/** The same, with h = hp__tcp_table_hash(t, k) computed by the caller
 * (early demultiplexing hashes a burst's tuples before their lookups). */
struct hp__tcp_key *hp__tcp_conn_lookup_hashed(struct hp__tcp_table *t, const struct hp__tcp_key *k,
                                               uint64_t h);
/** The same, with e the entry hp__tcp_conn_peek() returned for h when the
 * table's epoch (hp__tcp_conn_epoch) was `epoch`: e is the answer, without
 * the bucket read again, when no connection has been removed since and its
 * key is k's; anything else (NULL, a removal, a tag that matched another
 * tuple) takes the full lookup. */
struct hp__tcp_key *hp__tcp_conn_lookup_peeked(struct hp__tcp_table *t, const struct hp__tcp_key *k,
                                               uint64_t h, struct hp__tcp_key *e, uint32_t epoch);
/** Counts the connections removed: an entry peeked at epoch n is still in
 * the map (at the same address) while the epoch is n. */
uint32_t hp__tcp_conn_epoch(const struct hp__tcp_table *t);
/** Start loading the home bucket of hash h (a prefetch: nothing is read). */
void hp__tcp_conn_prefetch(const struct hp__tcp_table *t, uint64_t h);
/** A guess, for prefetching only: the first entry of h's home bucket whose
 * tag matches, or NULL; its key is not read, so it may be another tuple's
 * (odds 2^-32) and, once the table changes, gone. */
struct hp__tcp_key *hp__tcp_conn_peek(const struct hp__tcp_table *t, uint64_t h);
/** Whether an insert asked for a new hash key (a probe of unusual length:
 * tcp_table.c, "The hash"). The stack asks after its inserts and rekeys at
 * the next poll's start, outside any receive burst, so that no hash
 * computed under the old key is still held (early demultiplexing's). */
bool hp__tcp_table_rekey_wanted(const struct hp__tcp_table *t);
/**
 * Make a new hash key from getrandom() and place every entry of both maps
 * again under it (stored hashes rewritten). Hashes computed before are
 * void after. Called by the stack when hp__tcp_table_rekey_wanted(); tests
 * call it directly.
 * @return 1 rekeyed, 0 kept the old key (no memory, or getrandom failed:
 *         still correct, asked again at the next long probe).
 */
int hp__tcp_table_rekey(struct hp__tcp_table *t);
/** Remove entry k (a pointer that was inserted, not a look-alike).
 * @return 0, or -ENOENT if k is not in the map. */
int hp__tcp_conn_remove(struct hp__tcp_table *t, struct hp__tcp_key *k);
/** Connections in the map. */
uint32_t hp__tcp_conn_count(const struct hp__tcp_table *t);

/* ---- TIME_WAIT records ---------------------------------------------------- */

/* A third map, of the compact records that stand for connections in
 * TIME_WAIT once nobody holds their socket (tcp_tw.c): looked up when the
 * connection map has no entry for a segment's tuple, and by connect's port
 * choice, for which their tuples are taken. The same hash key and the same
 * guarantees as the connection map; its own max_entries. */
/** Add k. @return 0, -EEXIST, -ENOSPC, -ENOMEM as hp__tcp_conn_insert. */
int hp__tcp_tw_insert(struct hp__tcp_table *t, struct hp__tcp_key *k);
/** The record with k's tuple, or NULL (at once when the map is empty). */
struct hp__tcp_key *hp__tcp_tw_lookup(struct hp__tcp_table *t, const struct hp__tcp_key *k);
/** Remove record k. @return 0, or -ENOENT. */
int hp__tcp_tw_remove(struct hp__tcp_table *t, struct hp__tcp_key *k);
/** Records in the map. */
uint32_t hp__tcp_tw_count(const struct hp__tcp_table *t);

/* ---- listeners ----------------------------------------------------------- */

/**
 * Add a listener: k from hp__tcp_key_init(k, family, addr or NULL, port,
 * NULL, 0). A specific address and the any address may listen on the same
 * port (the specific one wins lookups); whether to allow that is the bind
 * layer's policy, which can ask hp__tcp_listen_get() first.
 * @return 0, -EEXIST (same family, address and port), -ENOSPC, -ENOMEM,
 *         -EINVAL (k has a remote address or port).
 */
int hp__tcp_listen_insert(struct hp__tcp_table *t, struct hp__tcp_key *k);
/** The listener for a SYN to (family, laddr, lport): one bound to laddr
 * exactly, else one bound to the any address, else NULL. */
struct hp__tcp_key *hp__tcp_listen_lookup(struct hp__tcp_table *t, int family, const uint8_t *laddr,
                                          uint16_t lport);
/** The listener bound to exactly (family, laddr or NULL for any, lport), no
 * fallback; NULL if none. */
struct hp__tcp_key *hp__tcp_listen_get(struct hp__tcp_table *t, int family, const uint8_t *laddr,
                                       uint16_t lport);
/** Remove listener k. @return 0, or -ENOENT. */
int hp__tcp_listen_remove(struct hp__tcp_table *t, struct hp__tcp_key *k);
/** Listeners in the map. */
uint32_t hp__tcp_listen_count(const struct hp__tcp_table *t);

/* ---- ephemeral ports (RFC 6056) ------------------------------------------ */

/** The range connect() picks local ports from, inclusive. Default
 * 49152-65535 (RFC 6335 6). @return 0, or -EINVAL (lo 0 or lo > hi). */
int hp__tcp_table_set_ephemeral(struct hp__tcp_table *t, uint16_t lo, uint16_t hi);

/**
 * Choose a local port for a connection from k's local address to k's
 * remote address and port (k->lport is ignored; k->laddr must be the
 * source address the route chose, not the any address): RFC 6056 3.3.4,
 * algorithm 4 (double-hash port selection). The port is one whose 4-tuple
 * is neither in the connection map nor in TIME_WAIT's and on which nothing listens (at k's
 * address or the any address). Tries each port of the range at most once.
 * Does not insert: the caller sets up the connection and inserts k (on the
 * same thread, so nothing can take the port meanwhile).
 * @return 0 with k->lport set, or -EADDRNOTAVAIL (every port in use).
 */
int hp__tcp_port_alloc(struct hp__tcp_table *t, struct hp__tcp_key *k);

/* ---- iteration (teardown) ------------------------------------------------ */

/** A position in a map; start with HP__TCP_ITER_INIT. */
struct hp__tcp_iter {
    uint32_t bucket;
    uint32_t slot;
};
#define HP__TCP_ITER_INIT                                                                          \
    {                                                                                              \
        0, 0                                                                                       \
    }

/**
 * The next connection, or NULL at the end. Removing entries (the returned
 * one or any other) between calls is allowed: entries never move on
 * removal, so every entry present throughout is returned exactly once.
 * Inserting may grow the map; then the rest of the walk is unspecified
 * (still memory-safe).
 */
struct hp__tcp_key *hp__tcp_conn_next(struct hp__tcp_table *t, struct hp__tcp_iter *it);
/** As hp__tcp_conn_next(), over the listeners. */
struct hp__tcp_key *hp__tcp_listen_next(struct hp__tcp_table *t, struct hp__tcp_iter *it);

/* ---- introspection (tests, benchmarks) ---------------------------------- */

/** Counters over both maps since creation. */
struct hp__tcp_table_stats {
    uint64_t lookups;       /* lookups of a tuple (insert's duplicate check included) */
    uint64_t key_cmps;      /* entries read to compare a tuple (tag matched) */
    uint64_t extra_buckets; /* buckets read past the home bucket */
    uint64_t grows;         /* doublings */
    uint64_t rekeys;        /* new hash keys (hp__tcp_table_rekey) */
    uint32_t buckets;       /* buckets of the connection map now */
    uint32_t max_buckets;   /* its limit */
};
void hp__tcp_table_stats(const struct hp__tcp_table *t, struct hp__tcp_table_stats *out);

/** The hash the connection map uses for k's tuple (after hash_mask). */
uint64_t hp__tcp_table_hash(const struct hp__tcp_table *t, const struct hp__tcp_key *k);

/** SipHash-c-d (Aumasson and Bernstein, 2012) of len bytes under a 16-byte
 * key (k[0] the first 8 bytes, little-endian). The reference the port
 * choice's and tcp_hash.c's hashes are checked against. */
uint64_t hp__tcp_table_siphash(const uint64_t key[2], const void *msg, size_t len, int c, int d);

#endif
