/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack instance: create/destroy, interfaces, addresses, the gateway, the poll loop and the counters. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "neigh.h"

/* Upper bounds on the configuration, so that a typo cannot ask for
 * gigabytes: each is far above any sensible setting. */
#define NEIGH_MAX_LIMIT     (1u << 20)
#define NEIGH_QUEUE_LIMIT   4096u
#define NEIGH_RETRIES_LIMIT 100u

static int fill_config(struct hp_stack *s, const struct hp_stack_config *in)
{
    struct hp_stack_config c;
    if (in)
        c = *in;
    else
        memset(&c, 0, sizeof c);
    if (c.flags & ~(unsigned)(HP_STACK_F_NO_DAD | HP_STACK_F_ARP_ACCEPT | HP_STACK_F_NDP_OVERRIDE))
        return -EINVAL;
    if (c.neigh_max > NEIGH_MAX_LIMIT || c.neigh_queue > NEIGH_QUEUE_LIMIT ||
        c.neigh_retries > NEIGH_RETRIES_LIMIT)
        return -EINVAL;
    snprintf(s->name, sizeof s->name, "%s", c.name ? c.name : "stack");
    c.name = s->name;
    if (!c.neigh_max)
        c.neigh_max = 1024;
    if (!c.neigh_queue)
        c.neigh_queue = 64; /* a 65507-byte datagram is 45 fragments: all wait for one ARP reply */
    if (!c.neigh_retries)
        c.neigh_retries = 3;
    if (!c.neigh_retrans_ms)
        c.neigh_retrans_ms = 1000; /* RFC 4861 10: RETRANS_TIMER */
    if (!c.neigh_reachable_ms)
        c.neigh_reachable_ms = 30000; /* RFC 4861 10: REACHABLE_TIME */
    if (!c.neigh_locktime_ms)
        c.neigh_locktime_ms = 1000; /* Linux's ARP locktime */
    else if (c.neigh_locktime_ms == HP_NEIGH_LOCKTIME_NONE)
        c.neigh_locktime_ms = 0;
    if (!c.reasm_max_bytes)
        c.reasm_max_bytes = 4u << 20;
    /* reasm_timeout_ms stays 0 for "the defaults": 30 s for IPv4, 60 s for
     * IPv6 (reasm.c). */
    if (!c.icmp_rate)
        c.icmp_rate = 1000;
    if (!c.icmp_burst)
        c.icmp_burst = 50;
    if (!c.default_ttl)
        c.default_ttl = 64;
    s->cfg = c;
    return 0;
}

/* Zeroed memory starting on a cache line: struct hp_stack and struct
 * hp__iface are laid out by line (docs/cachelines/hp_stack.md), which
 * holds only if offset 0 is a line's first byte. */
static void *zalloc_lines(size_t size)
{
    size_t rounded = (size + HP_CACHELINE_SIZE - 1) & ~(size_t)(HP_CACHELINE_SIZE - 1);
    void *p = aligned_alloc(HP_CACHELINE_SIZE, rounded);
    if (p)
        memset(p, 0, rounded);
    return p;
}

HP_API struct hp_stack *hp_stack_create(const struct hp_stack_config *cfg)
{
    struct hp_stack *s = zalloc_lines(sizeof *s);
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    s->route_gen = 1; /* a UDP socket's 0 is no route kept */
    int err = fill_config(s, cfg);
    if (err) {
        free(s);
        errno = -err;
        return NULL;
    }
    s->now = hp__clock_ns();
    uint64_t burst = (uint64_t)s->cfg.icmp_burst * 1000u;
    s->icmp4_bucket.tokens_milli = burst;
    s->icmp4_bucket.last = s->now;
    s->icmp6_bucket.tokens_milli = burst;
    s->icmp6_bucket.last = s->now;

    if ((err = hp__ipid_init(s)) < 0)
        goto fail_ipid;
    if ((err = hp__neigh_init(s)) < 0)
        goto fail_neigh;
    if ((err = hp__reasm_init(s)) < 0)
        goto fail_reasm;
    if ((err = hp__sock_init(s)) < 0)
        goto fail_sock;
    return s;

fail_sock:
    hp__reasm_fini(s);
fail_reasm:
    hp__neigh_fini(s);
fail_neigh:
    hp__ipid_fini(s);
fail_ipid:
    hp__timers_fini(s);
    free(s);
    errno = -err;
    return NULL;
}

HP_API int hp_stack_destroy(struct hp_stack *s)
{
    if (!s)
        return 0;
    hp__sock_fini(s);
    hp__reasm_fini(s);
    hp__neigh_fini(s);
    hp__ipid_fini(s);
    for (int i = 0; i < s->nifaces; i++) {
        struct hp__iface *ifc = s->ifaces[i];
        for (int j = 0; j < ifc->n6; j++)
            hp__timer_cancel(s, &ifc->v6[j].dad);
        /* What is already queued goes out: the caller asked for it before
         * destroying, and the link frees what it cannot take. */
        hp__eth_flush(ifc);
        free(ifc);
    }
    hp__timers_fini(s);
    free(s);
    return 0;
}

HP_API int hp_stack_add_iface(struct hp_stack *s, struct hp_link *link)
{
    if (!s || !link)
        return -EINVAL;
    for (int i = 0; i < s->nifaces; i++)
        if (s->ifaces[i]->link == link)
            return -EINVAL;
    if (s->nifaces >= HP__MAX_IFACES)
        return -ENOSPC;
    struct hp__iface *ifc = zalloc_lines(sizeof *ifc);
    if (!ifc)
        return -ENOMEM;
    ifc->s = s;
    ifc->index = s->nifaces;
    ifc->link = link;
    ifc->pool = hp_link_pool(link);
    hp_link_mac(link, ifc->mac);
    ifc->mtu = hp_link_mtu(link);
    for (int j = 0; j < HP__MAX_ADDRS; j++)
        hp__timer_init(&ifc->v6[j].dad, HP__TK_DAD);
    s->ifaces[s->nifaces++] = ifc;
    hp__routes_changed(s);

    /* RFC 4862 5.3: the link-local address, formed from the interface
     * identifier (modified EUI-64, RFC 4291 2.5.1), goes through DAD like
     * any other. */
    struct hp__addr6 *ll = &ifc->v6[0];
    hp_ipv6_eui64_link_local(ifc->mac, ll->addr);
    ll->plen = 64;
    ll->state = HP_ADDR_TENTATIVE;
    ll->ifc = ifc;
    ifc->n6 = 1;
    hp__ndp_start_dad(ifc, ll);
    return ifc->index;
}

static bool have4(const struct hp_stack *s, const uint8_t a[4])
{
    for (int i = 0; i < s->nifaces; i++)
        if (hp__is_local4(s->ifaces[i], a))
            return true;
    return false;
}

static bool have6(const struct hp_stack *s, const uint8_t a[16])
{
    for (int i = 0; i < s->nifaces; i++)
        if (hp__find6(s->ifaces[i], a))
            return true;
    return false;
}

static int add_addr4(struct hp__iface *ifc, const uint8_t a[4], uint8_t plen)
{
    /* Not usable as a host address (RFC 1122 3.2.1.3, RFC 5735): this
     * network, loopback, multicast and class E / limited broadcast. */
    if (plen > 32 || a[0] == 0 || a[0] == 127 || a[0] >= 224)
        return -EINVAL;
    if (have4(ifc->s, a))
        return -EEXIST;
    if (ifc->n4 >= HP__MAX_ADDRS)
        return -ENOSPC;
    struct hp__addr4 *e = &ifc->v4[ifc->n4++];
    memcpy(e->addr, a, 4);
    e->plen = plen;
    hp__routes_changed(ifc->s);
    hp__arp_announce(ifc, a);
    return 0;
}

static int add_addr6(struct hp__iface *ifc, const uint8_t a[16], uint8_t plen)
{
    if (plen > 128 || hp_ipv6_is_multicast(a) || hp_ipv6_is_unspecified(a) ||
        hp_ipv6_is_loopback(a))
        return -EINVAL;
    if (have6(ifc->s, a))
        return -EEXIST;
    if (ifc->n6 >= HP__MAX_ADDRS)
        return -ENOSPC;
    struct hp__addr6 *e = &ifc->v6[ifc->n6++];
    memcpy(e->addr, a, 16);
    e->plen = plen;
    e->state = HP_ADDR_TENTATIVE;
    e->dad_left = 0;
    e->ifc = ifc;
    hp__ndp_start_dad(ifc, e);
    return 0;
}

HP_API int hp_stack_add_addr(struct hp_stack *s, int ifindex, int family, const uint8_t *addr,
                             uint8_t prefix_len)
{
    if (!s || !addr || (family != HP_AF_INET4 && family != HP_AF_INET6))
        return -EINVAL;
    if (ifindex < 0 || ifindex >= s->nifaces)
        return -ENODEV;
    struct hp__iface *ifc = s->ifaces[ifindex];
    return family == HP_AF_INET4 ? add_addr4(ifc, addr, prefix_len)
                                 : add_addr6(ifc, addr, prefix_len);
}

HP_API enum hp_addr_state hp_stack_addr_state(const struct hp_stack *s, int ifindex, int family,
                                              const uint8_t *addr)
{
    if (!s || !addr || ifindex < 0 || ifindex >= s->nifaces)
        return HP_ADDR_NONE;
    struct hp__iface *ifc = s->ifaces[ifindex];
    if (family == HP_AF_INET4)
        return hp__is_local4(ifc, addr) ? HP_ADDR_PREFERRED : HP_ADDR_NONE;
    if (family == HP_AF_INET6) {
        const struct hp__addr6 *a = hp__find6(ifc, addr);
        return a ? (enum hp_addr_state)a->state : HP_ADDR_NONE;
    }
    return HP_ADDR_NONE;
}

HP_API int hp_stack_set_gateway(struct hp_stack *s, int family, const uint8_t *gw)
{
    if (!s || !gw)
        return -EINVAL;
    if (family == HP_AF_INET4) {
        if (gw[0] == 0 || gw[0] == 127 || gw[0] >= 224)
            return -EINVAL;
        memcpy(s->gw4, gw, 4);
        s->has_gw4 = true;
        hp__routes_changed(s);
        return 0;
    }
    if (family == HP_AF_INET6) {
        if (hp_ipv6_is_multicast(gw) || hp_ipv6_is_unspecified(gw) || hp_ipv6_is_loopback(gw))
            return -EINVAL;
        memcpy(s->gw6, gw, 16);
        s->has_gw6 = true;
        hp__routes_changed(s);
        return 0;
    }
    return -EINVAL;
}

bool hp__addr_is_ours(struct hp_stack *s, int family, const uint8_t *a)
{
    for (int i = 0; i < s->nifaces; i++) {
        struct hp__iface *ifc = s->ifaces[i];
        if (ifc && (family == HP_AF_INET4 ? hp__is_local4(ifc, a) : hp__find6(ifc, a) != NULL))
            return true;
    }
    return false;
}

/*
 * Early demultiplexing. With many thousands of connections their blocks and
 * the table's buckets are out of the cache, and processing a burst frame by
 * frame takes the misses one after another: the bucket, then the block's
 * first line, then each hot line as the receive path reaches it. Peeking at
 * the frames a few ahead of the one being processed, as Linux's early demux
 * and DPDK's prefetching loops do, starts those loads early enough for them
 * to overlap with the work on the frames before. A peek, not a parse:
 * untagged IPv4 without fragmentation and IPv6 with TCP or UDP right after
 * the fixed header, bounds-checked; it decides nothing (hp__tcp_input checks
 * the tuple it parses against the peeked one; for UDP only the socket is
 * prefetched). Below early_demux_conns connections (hp__tcp_early_on), or
 * bound UDP sockets (hp__udp_early_on), it is skipped: with the blocks in
 * the cache the peek costs more than it hides.
 */
#define PEEK_AHEAD     8 /* frames: a bucket's load has this long */
#define UDP_STEP_AHEAD 4 /* frames: the chain head's load, then the socket's */
static void rx_peek(struct hp_stack *s, const struct hp_buf *b, unsigned k, bool tcp, bool udp)
{
    const uint8_t *p = hp_buf_data(b);
    size_t len = b->data_len;
    if (len < HP_ETH_HDR_LEN + 20 + 4)
        return;
    uint16_t type = hp_get_be16(p + 12);
    p += HP_ETH_HDR_LEN;
    len -= HP_ETH_HDR_LEN;
    if (type == HP_ETHERTYPE_IPV4) {
        size_t ihl = (size_t)(p[0] & 15) * 4;
        if ((p[0] >> 4) != 4 || ihl < 20 || len < ihl + 4 || (hp_get_be16(p + 6) & 0x3FFF) != 0)
            return;
        if (p[9] == HP_IPPROTO_TCP && tcp)
            hp__tcp_early(s, b, 4, p + 16, hp_get_be16(p + ihl + 2), p + 12, hp_get_be16(p + ihl));
        else if (p[9] == HP_IPPROTO_UDP && udp)
            hp__udp_early(s, k, hp_get_be16(p + ihl + 2));
    } else if (type == HP_ETHERTYPE_IPV6) {
        if (len < 40 + 4 || (p[0] >> 4) != 6)
            return;
        if (p[6] == HP_IPPROTO_TCP && tcp)
            hp__tcp_early(s, b, 6, p + 24, hp_get_be16(p + 42), p + 8, hp_get_be16(p + 40));
        else if (p[6] == HP_IPPROTO_UDP && udp)
            hp__udp_early(s, k, hp_get_be16(p + 42));
    }
}

HP_API int hp_stack_poll(struct hp_stack *s)
{
    if (!s)
        return -EINVAL;
    s->now = hp__stack_clock(s);
    s->in_poll = true;
    hp__tcp_poll_begin(s);
    int work = 0;
    for (int i = 0; i < s->nifaces; i++) {
        struct hp__iface *ifc = s->ifaces[i];
        struct hp_buf *rx[HP__RX_BURST];
        int n = hp_link_rx_burst(ifc->link, rx, HP__RX_BURST);
        bool tearly = n > 1 && hp__tcp_early_on(s), uearly = n > 1 && hp__udp_early_on(s);
        bool early = tearly || uearly;
        int ustep = 0; /* the next frame whose UDP socket to load */
        if (early) {
            for (int k = 0; k < n; k++)
                __builtin_prefetch(hp_buf_data(rx[k]), 0, 3);
            for (int k = 0; k < n && k < PEEK_AHEAD; k++)
                rx_peek(s, rx[k], (unsigned)k, tearly, uearly);
        }
        for (int k = 0; k < n; k++) {
            if (early) {
                if (k + PEEK_AHEAD < n)
                    rx_peek(s, rx[k + PEEK_AHEAD], (unsigned)(k + PEEK_AHEAD), tearly, uearly);
                if (tearly)
                    hp__tcp_early_step(s);
                for (; uearly && ustep < n && ustep <= k + UDP_STEP_AHEAD; ustep++)
                    hp__udp_early_step(s, (unsigned)ustep);
            }
            rx[k]->port = (uint16_t)ifc->index;
            hp__eth_input(ifc, rx[k]);
        }
        if (tearly)
            hp__tcp_early_end(s);
        if (uearly)
            hp__udp_early_end(s, (unsigned)n);
        if (n > 0)
            work += n;
    }
    work += hp__timers_run(s);
    for (int i = 0; i < s->nifaces; i++)
        hp__eth_flush(s->ifaces[i]);
    s->in_poll = false;
    return work;
}

void hp__stack_set_clock(struct hp_stack *s, uint64_t (*fn)(void *arg), void *arg)
{
    s->clock_fn = fn;
    s->clock_arg = arg;
    s->now = hp__stack_clock(s);
}

HP_API int64_t hp_stack_next_timer_ns(const struct hp_stack *s)
{
    if (!s)
        return -1;
    /* The heap, and the delayed ACKs the next poll arms (never due at 0). */
    uint64_t due = hp__tcp_pending_due(s);
    if (s->nheap > 0 && (due == 0 || s->heap[0].due < due))
        due = s->heap[0].due;
    else if (due == 0)
        return -1;
    uint64_t now = hp__stack_clock(s);
    return due > now ? (int64_t)(due - now) : 0;
}

HP_API uint64_t hp_stack_now_ns(const struct hp_stack *s)
{
    return s ? s->now : 0;
}

HP_API bool hp_stack_tx_pending(const struct hp_stack *s)
{
    for (int i = 0; s && i < s->nifaces; i++)
        if (s->ifaces[i]->ntx)
            return true;
    return false;
}

HP_API int hp_stack_fds(const struct hp_stack *s, int *fds, int max)
{
    int n = 0;
    for (int i = 0; s && i < s->nifaces; i++) {
        int fd = hp_link_fd(s->ifaces[i]->link);
        if (fd < 0)
            continue;
        if (fds && n < max)
            fds[n] = fd;
        n++;
    }
    return n;
}

/* Every interface is armed even after one said it cannot wake a sleeper,
 * so that the caller may still nap on the others' fds; one with work
 * waiting ends the round (no sleep follows). */
HP_API int hp_stack_prepare_sleep(struct hp_stack *s, int64_t *wake_ns)
{
    int64_t wake = s ? hp_stack_next_timer_ns(s) : -1;
    int rc = s ? 0 : -EINVAL;
    if (s && (wake == 0 || hp_stack_tx_pending(s))) {
        wake = 0;
        rc = 1;
    }
    for (int i = 0; s && rc <= 0 && i < s->nifaces; i++) {
        int64_t due = -1;
        int r = hp_link_prepare_sleep(s->ifaces[i]->link, &due);
        if (r > 0) {
            wake = 0;
            rc = 1;
        } else if (r < 0 && rc == 0) {
            rc = r;
        }
        if (due >= 0 && (wake < 0 || due < wake))
            wake = due;
    }
    if (wake_ns)
        *wake_ns = wake;
    return rc;
}

HP_API uint64_t hp_stack_counter(const struct hp_stack *s, enum hp_stack_ctr c)
{
    if (!s || (unsigned)c >= HP_STACK_NCOUNTERS)
        return 0;
    return s->ctr[c];
}

static const char *const ctr_names[HP_STACK_NCOUNTERS] = {
#define HP__CTR_NAME(name) #name,
    HP_STACK_COUNTERS(HP__CTR_NAME)
#undef HP__CTR_NAME
};

HP_API const char *hp_stack_counter_name(enum hp_stack_ctr c)
{
    return (unsigned)c < HP_STACK_NCOUNTERS ? ctr_names[c] : NULL;
}

HP_API void hp_stack_counters_print(const struct hp_stack *s, FILE *f, bool nonzero_only)
{
    if (!s || !f)
        return;
    for (unsigned c = 0; c < HP_STACK_NCOUNTERS; c++)
        if (!nonzero_only || s->ctr[c])
            fprintf(f, "%s %llu\n", ctr_names[c], (unsigned long long)s->ctr[c]);
}

/* ---- helpers for the other modules --------------------------------------- */

struct hp_buf *hp__alloc(struct hp__iface *ifc)
{
    struct hp_buf *b = hp_buf_alloc(ifc->pool);
    if (!b)
        hp__ctr(ifc->s, HP_CTR_NO_BUFFERS);
    return b;
}

bool hp__is_local4(const struct hp__iface *ifc, const uint8_t a[4])
{
    for (int i = 0; i < ifc->n4; i++)
        if (memcmp(ifc->v4[i].addr, a, 4) == 0)
            return true;
    return false;
}

bool hp__is_local6(const struct hp__iface *ifc, const uint8_t a[16])
{
    for (int i = 0; i < ifc->n6; i++)
        if (ifc->v6[i].state == HP_ADDR_PREFERRED && memcmp(ifc->v6[i].addr, a, 16) == 0)
            return true;
    return false;
}

struct hp__addr6 *hp__find6(struct hp__iface *ifc, const uint8_t a[16])
{
    for (int i = 0; i < ifc->n6; i++)
        if (memcmp(ifc->v6[i].addr, a, 16) == 0)
            return &ifc->v6[i];
    return NULL;
}

bool hp__is_mcast_member6(const struct hp__iface *ifc, const uint8_t a[16])
{
    static const uint8_t all_nodes[16] = {0xFF, 0x02, [15] = 1};
    if (memcmp(a, all_nodes, 16) == 0)
        return true;
    /* RFC 4291 2.7.1 / RFC 4862 5.4.2: the solicited-node group of every
     * address, tentative ones included (DAD listens on it); a duplicate
     * address is not in use and its group is left. */
    for (int i = 0; i < ifc->n6; i++) {
        if (ifc->v6[i].state == HP_ADDR_DUPLICATE)
            continue;
        uint8_t sn[16];
        hp_ipv6_solicited_node(ifc->v6[i].addr, sn);
        if (memcmp(a, sn, 16) == 0)
            return true;
    }
    return false;
}

const uint8_t *hp__src4_for(const struct hp__iface *ifc, const uint8_t peer[4])
{
    for (int i = 0; i < ifc->n4; i++)
        if (hp__prefix_match(ifc->v4[i].addr, peer, ifc->v4[i].plen))
            return ifc->v4[i].addr;
    return ifc->n4 ? ifc->v4[0].addr : NULL;
}

bool hp__is_bcast4(const struct hp__iface *ifc, const uint8_t a[4])
{
    uint32_t d = hp_get_be32(a);
    if (d == 0xFFFFFFFFu)
        return true;
    for (int i = 0; i < ifc->n4; i++) {
        unsigned plen = ifc->v4[i].plen;
        if (plen > 30)
            continue;
        uint32_t hostmask = 0xFFFFFFFFu >> plen; /* plen <= 30 */
        /* In the prefix, with every host bit set (words: no byte loop). */
        if ((d | hostmask) == (hp_get_be32(ifc->v4[i].addr) | hostmask) &&
            (d & hostmask) == hostmask)
            return true;
    }
    return false;
}
