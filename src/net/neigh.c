/* SPDX-License-Identifier: BSD-3-Clause */
/* Neighbour tables (ARP and NDP share them): bounded hash tables, a simplified RFC 4861 7.3 state machine and resolution queues. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "neigh.h"

/* An entry nobody has used for this long is forgotten (like Linux's
 * gc_stale_time; RFC 4861 7.3.2 leaves garbage collection to the
 * implementation). */
#define STALE_GC_NS (60ull * 1000000000u)
#define MS          (1000000ull)

struct neigh {
    uint8_t addr[16];
    uint8_t mac[6];
    uint8_t state; /* enum hp__neigh_state, 0 when free */
    uint8_t sent;  /* requests / probes sent in this state */
    struct hp__iface *ifc;
    struct hp__neigh_table *tab;
    struct hp__timer timer; /* retransmission, reachable -> stale, or GC */
    uint64_t used;          /* last time a packet went out through it */
    uint64_t updated;       /* when mac was last set (neigh_locktime_ms counts from here) */
    /* Packets waiting for resolution (INCOMPLETE only), linked through
     * their `reserved` metadata word: the library's own field, unused
     * while the stack holds the buffer, so queueing allocates nothing. */
    struct hp_buf *qhead, *qtail;
    uint32_t qlen;
    int32_t next; /* hash chain, or the free list */
};

struct hp__neigh_table {
    struct hp_stack *s;
    int family;    /* 4 or 6 */
    unsigned alen; /* 4 or 16 */
    uint16_t ethertype;
    uint32_t max, mask; /* mask: buckets - 1 */
    int32_t free_head;
    int32_t last; /* the entry lookup found last (a hint: checked like any entry), or -1 */
    int32_t *buckets;
    struct neigh *ents;
};

static inline struct hp_buf *q_next(const struct hp_buf *b)
{
    return (struct hp_buf *)(uintptr_t)b->reserved;
}

static void q_push(struct neigh *e, struct hp_buf *b)
{
    b->reserved = 0;
    if (e->qtail)
        e->qtail->reserved = (uint64_t)(uintptr_t)b;
    else
        e->qhead = b;
    e->qtail = b;
    e->qlen++;
}

static struct hp_buf *q_pop(struct neigh *e)
{
    struct hp_buf *b = e->qhead;
    if (!b)
        return NULL;
    e->qhead = q_next(b);
    if (!e->qhead)
        e->qtail = NULL;
    b->reserved = 0;
    e->qlen--;
    return b;
}

static void q_drop(struct hp_stack *s, struct neigh *e, enum hp_stack_ctr why)
{
    struct hp_buf *b;
    while ((b = q_pop(e)) != NULL) {
        hp__ctr(s, why);
        hp_buf_free(b);
    }
}

static struct hp__neigh_table *table_new(struct hp_stack *s, int family)
{
    struct hp__neigh_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    uint32_t nb = 1;
    while (nb < s->cfg.neigh_max)
        nb <<= 1;
    t->s = s;
    t->family = family;
    t->alen = family == HP_AF_INET4 ? 4 : 16;
    t->ethertype = family == HP_AF_INET4 ? HP_ETHERTYPE_IPV4 : HP_ETHERTYPE_IPV6;
    t->max = s->cfg.neigh_max;
    t->mask = nb - 1;
    t->buckets = malloc((size_t)nb * sizeof *t->buckets);
    t->ents = calloc(t->max, sizeof *t->ents);
    if (!t->buckets || !t->ents) {
        free(t->buckets);
        free(t->ents);
        free(t);
        return NULL;
    }
    for (uint32_t i = 0; i < nb; i++)
        t->buckets[i] = -1;
    for (uint32_t i = 0; i < t->max; i++) {
        t->ents[i].next = i + 1 < t->max ? (int32_t)(i + 1) : -1;
        t->ents[i].tab = t;
        hp__timer_init(&t->ents[i].timer, HP__TK_NEIGH);
    }
    t->free_head = 0;
    t->last = -1;
    return t;
}

static void table_free(struct hp_stack *s, struct hp__neigh_table *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->max; i++) {
        struct neigh *e = &t->ents[i];
        if (!e->state)
            continue;
        hp__timer_cancel(s, &e->timer);
        struct hp_buf *b;
        while ((b = q_pop(e)) != NULL)
            hp_buf_free(b);
    }
    free(t->buckets);
    free(t->ents);
    free(t);
}

int hp__neigh_init(struct hp_stack *s)
{
    s->neigh4 = table_new(s, 4);
    s->neigh6 = table_new(s, 6);
    if (!s->neigh4 || !s->neigh6) {
        hp__neigh_fini(s);
        return -ENOMEM;
    }
    return 0;
}

void hp__neigh_fini(struct hp_stack *s)
{
    table_free(s, s->neigh4);
    table_free(s, s->neigh6);
    s->neigh4 = s->neigh6 = NULL;
}

static struct hp__neigh_table *table_of(struct hp_stack *s, int family)
{
    return family == HP_AF_INET4 ? s->neigh4 : s->neigh6;
}

/* The address as 32-bit words (4 or 16 bytes), for hashing and comparing
 * without a byte loop or a memcmp call per packet sent. */
static inline uint32_t word(const uint8_t *a, unsigned i)
{
    uint32_t w;
    memcpy(&w, a + 4 * i, 4);
    return w;
}

static inline bool addr_eq(const struct hp__neigh_table *t, const uint8_t *x, const uint8_t *y)
{
    uint32_t d = word(x, 0) ^ word(y, 0);
    if (t->alen == 16)
        d |= (word(x, 1) ^ word(y, 1)) | (word(x, 2) ^ word(y, 2)) | (word(x, 3) ^ word(y, 3));
    return d == 0;
}

/* The interface index and the address's words, multiplied and folded
 * (the table is bounded: a flood of addresses fills it and is counted,
 * whatever its spread over the buckets). */
static uint32_t hash(const struct hp__neigh_table *t, const struct hp__iface *ifc, const uint8_t *a)
{
    uint64_t h = (uint64_t)(uint32_t)ifc->index * 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < t->alen / 4; i++)
        h = (h ^ word(a, i)) * 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h >> 32) & t->mask;
}

static struct neigh *lookup(struct hp__neigh_table *t, struct hp__iface *ifc, const uint8_t *a)
{
    /* Most packets go to the neighbour the last one went to (a gateway,
     * the one peer): try it before hashing. A free entry has no ifc. */
    if (t->last >= 0) {
        struct neigh *e = &t->ents[t->last];
        if (e->ifc == ifc && addr_eq(t, e->addr, a))
            return e;
    }
    for (int32_t i = t->buckets[hash(t, ifc, a)]; i >= 0; i = t->ents[i].next) {
        struct neigh *e = &t->ents[i];
        if (e->ifc == ifc && addr_eq(t, e->addr, a)) {
            t->last = i;
            return e;
        }
    }
    return NULL;
}

/* A new entry in state `state`, or NULL (counted) when the table is full. */
static struct neigh *insert(struct hp__neigh_table *t, struct hp__iface *ifc, const uint8_t *a,
                            uint8_t state)
{
    if (t->free_head < 0) {
        hp__ctr(t->s, HP_CTR_NEIGH_TABLE_FULL);
        return NULL;
    }
    int32_t i = t->free_head;
    struct neigh *e = &t->ents[i];
    t->free_head = e->next;
    memset(e->addr, 0, sizeof e->addr);
    memcpy(e->addr, a, t->alen);
    memset(e->mac, 0, 6);
    e->state = state;
    e->sent = 0;
    e->ifc = ifc;
    e->used = t->s->now;
    e->qhead = e->qtail = NULL;
    e->qlen = 0;
    uint32_t h = hash(t, ifc, a);
    e->next = t->buckets[h];
    t->buckets[h] = i;
    return e;
}

static void remove_entry(struct neigh *e, enum hp_stack_ctr why_queue)
{
    struct hp__neigh_table *t = e->tab;
    struct hp_stack *s = t->s;
    hp__timer_cancel(s, &e->timer);
    q_drop(s, e, why_queue);
    int32_t idx = (int32_t)(e - t->ents);
    int32_t *pp = &t->buckets[hash(t, e->ifc, e->addr)];
    while (*pp >= 0 && *pp != idx)
        pp = &t->ents[*pp].next;
    if (*pp == idx)
        *pp = e->next;
    e->state = 0;
    e->ifc = NULL;
    e->next = t->free_head;
    t->free_head = idx;
}

static void arm(struct neigh *e, uint64_t due)
{
    /* -ENOMEM from the heap: the entry then lives until it is used or the
     * stack goes; nothing is lost but its expiry. */
    (void)hp__timer_arm(e->tab->s, &e->timer, due);
}

/* The source address hint for an NS: the first queued packet's source. */
static const uint8_t *queued_src6(const struct neigh *e)
{
    const struct hp_buf *b = e->qhead;
    if (!b || b->data_len < HP_IPV6_HDR_LEN)
        return NULL;
    return hp_ipv6_src_ptr(hp_buf_data(b));
}

/* A request or solicitation: broadcast / multicast while INCOMPLETE,
 * unicast to the cached MAC while probing (RFC 4861 7.3.3, PROBE). */
static void solicit(struct neigh *e, bool unicast)
{
    const uint8_t *dst = unicast ? e->mac : NULL;
    if (e->tab->family == HP_AF_INET4)
        hp__arp_request(e->ifc, e->addr, dst);
    else
        hp__ndp_solicit(e->ifc, e->addr, dst, queued_src6(e));
    e->sent++;
}

static void become_stale(struct neigh *e)
{
    e->state = HP__NEIGH_STALE;
    e->sent = 0;
    arm(e, e->used + STALE_GC_NS);
}

static void become_reachable(struct neigh *e)
{
    struct hp_stack *s = e->tab->s;
    e->state = HP__NEIGH_REACHABLE;
    e->sent = 0;
    arm(e, s->now + (uint64_t)s->cfg.neigh_reachable_ms * MS);
}

/* The entry has a MAC now: what waited for it goes out. */
static void release_queue(struct neigh *e)
{
    struct hp_buf *b;
    if (e->qhead)
        e->used = e->tab->s->now;
    while ((b = q_pop(e)) != NULL)
        hp__eth_output(e->ifc, e->mac, e->tab->ethertype, b);
}

void hp__neigh_timer(struct hp_stack *s, struct hp__timer *t)
{
    struct neigh *e = HP__CONTAINER(t, struct neigh, timer);
    uint64_t retrans = (uint64_t)s->cfg.neigh_retrans_ms * MS;
    switch (e->state) {
    case HP__NEIGH_INCOMPLETE:
        if (e->sent < s->cfg.neigh_retries) {
            solicit(e, false);
            arm(e, s->now + retrans);
        } else {
            /* RFC 4861 7.3.3: resolution failed; the waiting packets are
             * dropped (they are ours: no ICMP error to ourselves). */
            remove_entry(e, HP_CTR_NEIGH_UNRESOLVED_DROPS);
        }
        break;
    case HP__NEIGH_REACHABLE:
        become_stale(e);
        break;
    case HP__NEIGH_STALE:
        if (e->used + STALE_GC_NS <= s->now) {
            hp__ctr(s, HP_CTR_NEIGH_EXPIRED);
            remove_entry(e, HP_CTR_NEIGH_UNRESOLVED_DROPS);
        } else {
            arm(e, e->used + STALE_GC_NS);
        }
        break;
    case HP__NEIGH_PROBE:
        if (e->sent < s->cfg.neigh_retries) {
            solicit(e, true);
            arm(e, s->now + retrans);
        } else {
            /* RFC 4861 7.3.3: no answer to the unicast probes: the
             * neighbour is gone. */
            hp__ctr(s, HP_CTR_NEIGH_EXPIRED);
            remove_entry(e, HP_CTR_NEIGH_UNRESOLVED_DROPS);
        }
        break;
    default:
        break;
    }
}

static void resolve(struct hp__neigh_table *t, struct hp__iface *ifc, const uint8_t *nexthop,
                    struct hp_buf *b)
{
    struct hp_stack *s = t->s;
    struct neigh *e = lookup(t, ifc, nexthop);
    if (e && e->state != HP__NEIGH_INCOMPLETE) {
        e->used = s->now;
        if (e->state == HP__NEIGH_STALE) {
            /* RFC 4861 7.3.3 (without the DELAY state): keep sending to
             * the cached MAC, and verify it with unicast probes. */
            e->state = HP__NEIGH_PROBE;
            e->sent = 0;
            solicit(e, true);
            arm(e, s->now + (uint64_t)s->cfg.neigh_retrans_ms * MS);
        }
        hp__eth_output(ifc, e->mac, t->ethertype, b);
        return;
    }
    if (!e) {
        e = insert(t, ifc, nexthop, HP__NEIGH_INCOMPLETE);
        if (!e) {
            hp_buf_free(b);
            return;
        }
        q_push(e, b);
        hp__ctr(s, HP_CTR_NEIGH_QUEUED);
        solicit(e, false);
        arm(e, s->now + (uint64_t)s->cfg.neigh_retrans_ms * MS);
        return;
    }
    /* RFC 4861 7.2.2: when the queue overflows, the new arrival replaces
     * the oldest entry. */
    if (e->qlen >= s->cfg.neigh_queue) {
        hp__ctr(s, HP_CTR_NEIGH_QUEUE_DROPS);
        hp_buf_free(q_pop(e));
    }
    q_push(e, b);
    hp__ctr(s, HP_CTR_NEIGH_QUEUED);
}

const uint8_t *hp__neigh_mac4(struct hp__iface *ifc, const uint8_t nexthop[4])
{
    struct hp__neigh_table *t = ifc->s->neigh4;
    struct neigh *e = lookup(t, ifc, nexthop);
    /* REACHABLE and PROBE send to the cached MAC as they are; STALE must
     * move to PROBE first (resolve), INCOMPLETE queues. */
    if (!e || (e->state != HP__NEIGH_REACHABLE && e->state != HP__NEIGH_PROBE))
        return NULL;
    e->used = t->s->now;
    return e->mac;
}

void hp__neigh_output4(struct hp__iface *ifc, const uint8_t nexthop[4], struct hp_buf *b)
{
    uint8_t mac[6];
    if (hp__is_bcast4(ifc, nexthop)) {
        memset(mac, 0xFF, 6);
    } else if ((nexthop[0] & 0xF0u) == 0xE0u) {
        /* RFC 1112 6.4: 01:00:5e and the group's low 23 bits. */
        mac[0] = 0x01, mac[1] = 0x00, mac[2] = 0x5E;
        mac[3] = nexthop[1] & 0x7Fu, mac[4] = nexthop[2], mac[5] = nexthop[3];
    } else if (nexthop[0] == 0 || nexthop[0] >= 240 || nexthop[0] == 127) {
        /* Not an address a neighbour can have. */
        hp__ctr(ifc->s, HP_CTR_NEIGH_UNRESOLVED_DROPS);
        hp_buf_free(b);
        return;
    } else {
        resolve(ifc->s->neigh4, ifc, nexthop, b);
        return;
    }
    hp__eth_output(ifc, mac, HP_ETHERTYPE_IPV4, b);
}

void hp__neigh_output6(struct hp__iface *ifc, const uint8_t nexthop[16], struct hp_buf *b)
{
    if (hp_ipv6_is_multicast(nexthop)) {
        uint8_t mac[6];
        hp_ipv6_mcast_mac(nexthop, mac);
        hp__eth_output(ifc, mac, HP_ETHERTYPE_IPV6, b);
        return;
    }
    if (hp_ipv6_is_unspecified(nexthop) || hp_ipv6_is_loopback(nexthop)) {
        hp__ctr(ifc->s, HP_CTR_NEIGH_UNRESOLVED_DROPS);
        hp_buf_free(b);
        return;
    }
    resolve(ifc->s->neigh6, ifc, nexthop, b);
}

bool hp__neigh_exists(struct hp__iface *ifc, int family, const uint8_t *addr)
{
    return lookup(table_of(ifc->s, family), ifc, addr) != NULL;
}

static void set_mac(struct neigh *e, const uint8_t mac[6])
{
    if (e->state == HP__NEIGH_INCOMPLETE || memcmp(e->mac, mac, 6) != 0)
        e->updated = e->tab->s->now;
    memcpy(e->mac, mac, 6);
}

/*
 * Whether a message may replace e's MAC with mac (a new one). The
 * protections against cache poisoning, as knobs (docs/knobs.md):
 *  - a lock time after each change (Linux's locktime): of several
 *    different answers in a row the first wins, and a flood of forged
 *    ones cannot make the entry flap;
 *  - a REACHABLE entry, confirmed within neigh_reachable_ms, is not
 *    replaced by what we did not ask for (an unsolicited reply, a
 *    gratuitous ARP, a request, an NA with the override flag) unless
 *    HP_STACK_F_ARP_ACCEPT / HP_STACK_F_NDP_OVERRIDE says so. What we
 *    asked for is an answer while we resolve or probe the entry.
 * A refusal leaves the entry as it was and is counted.
 */
static bool may_replace(struct neigh *e, const uint8_t *mac, bool asked)
{
    struct hp_stack *s = e->tab->s;
    if (e->state == HP__NEIGH_INCOMPLETE || memcmp(e->mac, mac, 6) == 0)
        return true;
    if (s->now < e->updated + (uint64_t)s->cfg.neigh_locktime_ms * MS) {
        hp__ctr(s, HP_CTR_NEIGH_UPDATES_LOCKED);
        return false;
    }
    unsigned accept = e->tab->family == 4 ? HP_STACK_F_ARP_ACCEPT : HP_STACK_F_NDP_OVERRIDE;
    if (!asked && e->state == HP__NEIGH_REACHABLE && !(s->cfg.flags & accept)) {
        hp__ctr(s, HP_CTR_NEIGH_UPDATES_REFUSED);
        return false;
    }
    return true;
}

bool hp__neigh_learn(struct hp__iface *ifc, int family, const uint8_t *addr, const uint8_t *mac,
                     enum hp__neigh_learn how)
{
    struct hp__neigh_table *t = table_of(ifc->s, family);
    struct neigh *e = lookup(t, ifc, addr);
    if (!e) {
        if (how != HP__LEARN_CREATE || !mac)
            return false;
        e = insert(t, ifc, addr, HP__NEIGH_STALE);
        if (!e)
            return false;
        set_mac(e, mac);
        become_stale(e);
        return true;
    }
    if (how == HP__LEARN_CONFIRM) {
        /* A reply is an answer while we resolve or probe; otherwise it is
         * unsolicited, and confirms only the MAC we have. */
        bool asked = e->state == HP__NEIGH_INCOMPLETE || e->state == HP__NEIGH_PROBE;
        if (mac) {
            if (!may_replace(e, mac, asked))
                return true;
            set_mac(e, mac);
        } else if (e->state == HP__NEIGH_INCOMPLETE) {
            return true; /* nothing to send to yet */
        }
        become_reachable(e);
        release_queue(e);
        return true;
    }
    if (!mac)
        return true;
    if (e->state == HP__NEIGH_INCOMPLETE || memcmp(e->mac, mac, 6) != 0) {
        if (!may_replace(e, mac, false))
            return true;
        set_mac(e, mac);
        become_stale(e);
        release_queue(e);
    }
    return true;
}

bool hp__neigh_advert(struct hp__iface *ifc, const uint8_t addr[16], const uint8_t *tll,
                      bool solicited, bool override)
{
    struct neigh *e = lookup(ifc->s->neigh6, ifc, addr);
    if (!e)
        return false;
    /* RFC 4861 7.2.5. */
    if (e->state == HP__NEIGH_INCOMPLETE) {
        if (!tll)
            return true;
        set_mac(e, tll);
        if (solicited)
            become_reachable(e);
        else
            become_stale(e);
        release_queue(e);
        return true;
    }
    bool differs = tll && memcmp(tll, e->mac, 6) != 0;
    if (!override && differs) {
        if (e->state == HP__NEIGH_REACHABLE)
            become_stale(e);
        return true;
    }
    /* The override flag replaces the MAC, within may_replace's limits: an
     * answer is an NA while we probe (the S flag alone proves nothing). */
    if (differs && !may_replace(e, tll, e->state == HP__NEIGH_PROBE))
        return true;
    if (tll)
        set_mac(e, tll);
    if (solicited)
        become_reachable(e);
    else if (differs)
        become_stale(e);
    return true;
}
