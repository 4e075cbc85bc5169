/* SPDX-License-Identifier: BSD-3-Clause */
/* IP identifications from a keyed hash per destination (RFC 7739 5.3 for IPv6 fragments, the same for IPv4 after RFC 6864 4), so that no observer sees one counter for all our traffic. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../base/debug.h"
#include "../base/siphash.h"
#include "internal.h"

/*
 * One incrementing identification for everything a host sends lets anyone
 * who can make it send count what it sends to others: idle scans (nmap
 * -sI) and traffic counting (RFC 7739 3, RFC 6274 3.5.1). RFC 7739 5.3's
 * algorithm instead:
 *
 *     h     = SipHash-2-4(secret, family, src, dst, protocol, atomic)
 *     ID    = (h >> 32) + counter[h mod N]++
 *
 * The offset (h >> 32) is unpredictable per flow; the counter is shared
 * only by the flows that hash to the same one of the N = 4096 buckets, so
 * what one destination sees of the IDs says nothing of what we send
 * elsewhere but for a 1 / 4096 chance of sharing a bucket. For that case,
 * as Linux does since 2019, a bucket idle for t ms first moves on by a
 * random amount below t (from the same secret), so that a destination
 * probing its colliding neighbour cannot read an exact count of what
 * went to it in between.
 *
 * Uniqueness (RFC 6864 4.2, RFC 8200 4.5): a datagram that may be
 * fragmented needs an ID not reused towards the same (src, dst, protocol)
 * within the maximum datagram lifetime; a per-destination counter wraps
 * only after 65,536 of our datagrams to that destination, as a global one
 * did after 65,536 to all. Atomic datagrams (DF set and not fragmented,
 * RFC 6864 4.1) may carry any ID: they take their own bucket (the atomic
 * bit is in the hash), so that a fast TCP flow with DF does not spin the
 * counter the fragmentable datagrams to the same host rely on.
 *
 * The hash of the last flow is kept: a stack talking to one peer hashes
 * once, not per packet, and a packet reads two lines of this state (the
 * key with the last flow, and its bucket).
 */

#define NBUCKETS  4096u
#define NS_PER_MS 1000000ull

/* The key and the last flow's hash in one cache line (what a packet to
 * the same peer as the last reads), then the buckets: a counter and its
 * last use side by side, one line read per packet. */
struct hp__ipid {
    uint64_t key[2];
    uint64_t last_h;
    uint32_t last_tag; /* family, proto, atomic of the last flow; 0: none yet */
    uint8_t last_src[16], last_dst[16];
    _Alignas(HP_CACHELINE_SIZE) struct {
        uint32_t ctr;
        uint32_t used_ms; /* when the bucket last gave an ID (ms, wraps) */
    } b[NBUCKETS];
};

int hp__ipid_init(struct hp_stack *s)
{
    struct hp__ipid *t = aligned_alloc(HP_CACHELINE_SIZE, sizeof *t);
    if (!t)
        return -ENOMEM;
    memset(t, 0, sizeof *t);
    int rc = hp__random_bytes(t->key, sizeof t->key);
    if (rc < 0) {
        free(t);
        return rc;
    }
    s->ipid = t;
    return 0;
}

void hp__ipid_fini(struct hp_stack *s)
{
    free(s->ipid);
    s->ipid = NULL;
}

static uint64_t flow_hash(const struct hp__ipid *t, uint32_t tag, const uint8_t *src,
                          const uint8_t *dst, size_t alen)
{
    uint8_t m[4 + 32];
    memcpy(m, &tag, 4);
    memcpy(m + 4, src, alen);
    memcpy(m + 4 + alen, dst, alen);
    return hp__siphash(t->key, m, 4 + 2 * alen, 2, 4);
}

/* The next ID of the flow (family, proto, atomic) from src to dst. */
/* The last flow's addresses, compared at constant lengths: in registers, where a length
 * known only at run time (one next_id for both families, as link-time optimisation made it)
 * called memcmp twice a packet. */
static bool same_addrs(const struct hp__ipid *t, size_t alen, const uint8_t *src,
                       const uint8_t *dst)
{
    if (alen == 4)
        return memcmp(t->last_src, src, 4) == 0 && memcmp(t->last_dst, dst, 4) == 0;
    return memcmp(t->last_src, src, 16) == 0 && memcmp(t->last_dst, dst, 16) == 0;
}

/* The flow's hash: the last one's, or computed and kept (out of line). */
static __attribute__((noinline)) uint64_t new_flow(struct hp__ipid *t, uint32_t tag,
                                                   const uint8_t *src, const uint8_t *dst,
                                                   size_t alen)
{
    uint64_t h = flow_hash(t, tag, src, dst, alen);
    memcpy(t->last_src, src, alen);
    memcpy(t->last_dst, dst, alen);
    t->last_tag = tag;
    t->last_h = h;
    return h;
}

/* A bucket idle for more than 1 ms first moves on by a random step below
 * the idle time (out of line: a busy bucket just counts). Keyed by the
 * bucket's state, so it is as unpredictable as the offsets. */
static __attribute__((noinline)) void idle_step(struct hp__ipid *t, uint32_t i, uint32_t now_ms,
                                                uint32_t idle)
{
    uint64_t w[2] = {(uint64_t)i << 32 | t->b[i].ctr, now_ms};
    t->b[i].ctr += (uint32_t)(hp__siphash(t->key, w, sizeof w, 2, 4) % idle);
}

/* The next ID of the flow (family, proto, atomic) from src to dst: inline
 * at its two callers, the hash and the idle step out of line (a packet to
 * the last peer, from a busy bucket, is a compare and an increment). */
static inline uint32_t next_id(struct hp_stack *s, int family, const uint8_t *src,
                               const uint8_t *dst, uint8_t proto, bool atomic)
{
    struct hp__ipid *t = s->ipid;
    HP_ASSERT(t != NULL);
    size_t alen = family == 4 ? 4 : 16;
    uint32_t tag = (uint32_t)family | (uint32_t)proto << 8 | (uint32_t)atomic << 16;
    uint64_t h = t->last_tag == tag && same_addrs(t, alen, src, dst)
                     ? t->last_h
                     : new_flow(t, tag, src, dst, alen);
    uint32_t i = (uint32_t)h % NBUCKETS;
    uint32_t now_ms = (uint32_t)(s->now / NS_PER_MS);
    uint32_t idle = now_ms - t->b[i].used_ms;
    if (idle > 1)
        idle_step(t, i, now_ms, idle);
    t->b[i].used_ms = now_ms;
    return (uint32_t)(h >> 32) + t->b[i].ctr++;
}

uint16_t hp__ip4_ident(struct hp_stack *s, const uint8_t src[4], const uint8_t dst[4],
                       uint8_t proto, bool atomic)
{
    return (uint16_t)next_id(s, 4, src, dst, proto, atomic);
}

uint32_t hp__ip6_frag_ident(struct hp_stack *s, const uint8_t src[16], const uint8_t dst[16],
                            uint8_t proto)
{
    return next_id(s, 6, src, dst, proto, false);
}
