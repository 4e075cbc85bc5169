/* SPDX-License-Identifier: BSD-3-Clause */
/* UDP sockets (RFC 768, RFC 8200 8.1): the port table, input demultiplexing, receive queues and output. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/udp.h>

#include "internal.h"
#include "tcp_internal.h"

#define UDP_MAX4     65507u /* 65535 - 20 (IPv4 header) - 8 */
#define UDP_MAX6     65527u /* 65535 - 8: IPv6's payload length field does not count its header */
#define RCVQ_DEFAULT 256u
/* Receive queue entries inside the socket itself. The ring starts there and
 * doubles on the heap only when more datagrams wait, up to the bound: a
 * request/response flow never leaves them, so 30,000 sockets take 30,000
 * small blocks, not 30,000 rings of RCVQ_DEFAULT entries (8 KiB each, whose
 * rotating slot was a cold line per datagram). */
#define RCVQ_INLINE  4u
#define RCVQ_MAX     65536u
#define EPHEMERAL_LO 49152u /* RFC 6335 6: the dynamic ports, 49152-65535 */
#define EPHEMERAL_N  16384u

struct rq_entry {
    struct hp_buf *b; /* data offset at the payload */
    struct hp_sockaddr from;
};

struct hp_udp_sock {
    struct hp__sock_ev ev; /* readiness; first so the list can hold it */
    struct hp_stack *s;
    struct hp_udp_sock *hnext;         /* port table chain (when bound) */
    struct hp_udp_sock *anext, *aprev; /* every socket of the stack */
    uint8_t family;
    bool bound, wildcard, connected, reuse;
    struct hp_sockaddr local, remote;
    struct rq_entry *q; /* ring of qcap entries: inl, or from the heap once it grew */
    uint32_t qcap, qhead, qlen, qmax;
    struct rq_entry inl[RCVQ_INLINE];
    /* The last route resolve() found, to rt_dst: good while the stack's
     * route_gen is rt_gen (0: none). A socket that sends to one peer (or
     * answers the last one) routes once, not per datagram. */
    uint32_t rt_gen;
    uint8_t rt_dst[16];
    struct hp__route rt;
    /* The IPv4 path to the last destination (net/internal.h): its
     * datagrams' headers are written from it at once. */
    struct hp__ip4_path path4;
};

static size_t alen(int family)
{
    return family == HP_AF_INET4 ? 4 : 16;
}

/* An address copied or compared at its family's constant length: a length
 * known only at run time is a call or a byte loop, on the path of every
 * datagram received (the lookup, the sender's address) and sent. */
static inline void addr_cpy(uint8_t *d, const uint8_t *a, int family)
{
    if (family == HP_AF_INET4)
        memcpy(d, a, 4);
    else
        memcpy(d, a, 16);
}

static inline bool addr_eq(const uint8_t *a, const uint8_t *b, int family)
{
    return family == HP_AF_INET4 ? memcmp(a, b, 4) == 0 : memcmp(a, b, 16) == 0;
}

static bool all_zero(const uint8_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i])
            return false;
    return true;
}

/* ---- checksums over chains ----------------------------------------------- */

/*
 * The one's complement sum of the first len bytes of a chain, from the first
 * segment's data offset. A segment that starts at an odd offset of the whole
 * has its sum byte-swapped (RFC 1071 2(B): the sum is byte-order
 * independent, so swapping realigns the pairs).
 */
static uint32_t chain_sum(const struct hp_buf *b, uint32_t len)
{
    uint32_t sum = 0, off = 0;
    for (const struct hp_buf *seg = b; seg && len; seg = seg->next) {
        uint32_t n = seg->data_len < len ? seg->data_len : len;
        uint32_t p = hp_cksum_partial(hp_buf_data(seg), n, 0);
        if (off & 1) {
            p = (p & 0xFFFF) + (p >> 16);
            p = (p & 0xFFFF) + (p >> 16);
            p = ((p & 0xFF) << 8) | (p >> 8);
        }
        sum = hp_cksum_add(sum, p);
        off += n;
        len -= n;
    }
    return sum;
}

static uint32_t pseudo_sum(int family, const uint8_t *src, const uint8_t *dst, uint32_t ulen)
{
    return family == HP_AF_INET4 ? hp_cksum_pseudo_ipv4(src, dst, HP_IPPROTO_UDP, (uint16_t)ulen)
                                 : hp_cksum_pseudo_ipv6(src, dst, HP_IPPROTO_UDP, ulen);
}

/* Cut a chain to its first len bytes (link padding, or bytes past the UDP
 * length field, which RFC 768 says are not part of the datagram). */
static void chain_trim(struct hp_buf *b, uint32_t len)
{
    if (b->pkt_len <= len)
        return;
    uint32_t cum = 0;
    uint16_t segs = 0;
    struct hp_buf *seg = b;
    for (;;) {
        segs++;
        if (cum + seg->data_len >= len || !seg->next) {
            seg->data_len = len - cum;
            break;
        }
        cum += seg->data_len;
        seg = seg->next;
    }
    struct hp_buf *rest = seg->next;
    seg->next = NULL;
    hp_buf_free(rest);
    b->pkt_len = len;
    b->nb_segs = segs;
}

/* Remove n bytes (at most pkt_len) from the front of a chain; a tiny first
 * fragment may hold less than the UDP header, so this crosses segments
 * (an emptied first segment stays, with no data, as the packet's head). */
static void chain_strip(struct hp_buf *b, uint32_t n)
{
    b->pkt_len -= n;
    for (struct hp_buf *seg = b; n && seg; seg = seg->next) {
        uint32_t k = seg->data_len < n ? seg->data_len : n;
        seg->data_off += k;
        seg->data_len -= k;
        n -= k;
    }
}

/* ---- the port table ----------------------------------------------------------- */

static struct hp_udp_sock **bucket(struct hp__sock_state *st, uint16_t port)
{
    return &st->udp_hash[port & st->udp_mask];
}

/* Twice the buckets, when there are more bound sockets than buckets: with
 * a fixed 1024, 30,000 flows made every datagram walk ~15 sockets, a cache
 * miss each. Ports are the binder's choice (sequential, ephemeral or
 * chosen), not the network's, so the port's low bits spread them. Without
 * memory for a larger table the smaller one stays: slower, still right. */
static void table_grow(struct hp__sock_state *st)
{
    uint32_t n = st->udp_mask + 1;
    if (st->udp_bound <= n || n >= HP__UDP_HASH_MAX)
        return;
    uint32_t nn = 2 * n;
    struct hp_udp_sock **h = calloc(nn, sizeof *h);
    if (!h)
        return;
    for (uint32_t i = 0; i < n; i++) {
        struct hp_udp_sock *u = st->udp_hash[i];
        while (u) {
            struct hp_udp_sock *next = u->hnext;
            struct hp_udp_sock **b = &h[u->local.port & (nn - 1)];
            u->hnext = *b;
            *b = u;
            u = next;
        }
    }
    free(st->udp_hash);
    st->udp_hash = h;
    st->udp_mask = nn - 1;
}

/* Would binding (family, addr or wildcard, port) clash with a bound socket?
 * A wildcard clashes with every address of the family, and IPv4 and IPv6
 * have separate port spaces (as with IPV6_V6ONLY); sockets that all asked
 * for address reuse (hp_udp_set_reuseaddr, SO_REUSEADDR) share. */
static bool port_in_use(struct hp__sock_state *st, int family, const uint8_t *addr, bool wildcard,
                        uint16_t port, bool reuse)
{
    for (struct hp_udp_sock *u = *bucket(st, port); u; u = u->hnext) {
        if (u->family != family || u->local.port != port || (reuse && u->reuse))
            continue;
        if (u->wildcard || wildcard || memcmp(u->local.addr, addr, alen(family)) == 0)
            return true;
    }
    return false;
}

/* The socket for a datagram: an exact local address before the wildcard,
 * a connected socket before an unconnected one; a connected socket only
 * takes datagrams from its peer. */
static struct hp_udp_sock *lookup(struct hp__sock_state *st, int family, const uint8_t *dst,
                                  uint16_t dport, const uint8_t *src, uint16_t sport)
{
    struct hp_udp_sock *best = NULL;
    int best_score = -1;
    for (struct hp_udp_sock *u = *bucket(st, dport); u; u = u->hnext) {
        if (u->local.port != dport || u->family != family)
            continue;
        int score = 0;
        if (!u->wildcard) {
            if (!addr_eq(u->local.addr, dst, family))
                continue;
            score += 2;
        }
        if (u->connected) {
            if (u->remote.port != sport || !addr_eq(u->remote.addr, src, family))
                continue;
            score += 1;
        }
        if (score > best_score) {
            best = u;
            best_score = score;
            if (score == 3)
                break;
        }
    }
    return best;
}

static void table_insert(struct hp_udp_sock *u)
{
    struct hp__sock_state *st = u->s->sock;
    st->udp_bound++;
    table_grow(st);
    struct hp_udp_sock **h = bucket(st, u->local.port);
    u->hnext = *h;
    *h = u;
    u->bound = true;
}

static void table_remove(struct hp_udp_sock *u)
{
    if (!u->bound)
        return;
    for (struct hp_udp_sock **p = bucket(u->s->sock, u->local.port); *p; p = &(*p)->hnext)
        if (*p == u) {
            *p = u->hnext;
            u->s->sock->udp_bound--;
            break;
        }
    u->hnext = NULL;
}

/* ---- input ------------------------------------------------------------------------ */

/* Broadcast or multicast: no ICMP error about those (RFC 1122 3.2.2,
 * RFC 4443 2.4(e)). */
static bool is_bcast_mcast(const struct hp__iface *ifc, int family, const uint8_t *dst)
{
    if (family == HP_AF_INET6)
        return dst[0] == 0xFF;
    if ((dst[0] & 0xF0) == 0xE0 || (dst[0] & dst[1] & dst[2] & dst[3]) == 0xFF)
        return true;
    /* Directed broadcast of one of our prefixes: the host part all ones. */
    uint32_t d = (uint32_t)dst[0] << 24 | (uint32_t)dst[1] << 16 | (uint32_t)dst[2] << 8 | dst[3];
    for (int i = 0; i < ifc->n4; i++) {
        uint8_t plen = ifc->v4[i].plen;
        if (plen >= 31 || plen == 0)
            continue;
        const uint8_t *a = ifc->v4[i].addr;
        uint32_t x = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
        uint32_t host = 0xFFFFFFFFu >> plen;
        if ((d & ~host) == (x & ~host) && (d & host) == host)
            return true;
    }
    return false;
}

static void drop(struct hp_stack *s, struct hp_buf *b, bool csum)
{
    if (csum)
        hp__ctr(s, HP_CTR_UDP_IN_CSUM_ERRORS);
    /* Like Linux, InErrors counts every datagram dropped for a reason of its
     * own (checksum, length, full queue), not the closed ports. */
    hp__ctr(s, HP_CTR_UDP_IN_ERRORS);
    hp_buf_free(b);
}

/*
 * Validate a datagram that spans a chain (reassembled): hp_udp_parse sees
 * one contiguous block only, so the lengths and the checksum are checked
 * here over every segment. 0, or -1 (bad length), -2 (bad checksum).
 */
static int check_chain(const struct hp_buf *b, int family, const uint8_t *src, const uint8_t *dst,
                       const uint8_t *hdr)
{
    uint32_t ulen = hp_get_be16(hdr + 4);
    if (ulen < HP_UDP_HDR_LEN || ulen > b->pkt_len)
        return -1;
    uint16_t ck = hp_get_be16(hdr + 6);
    if (ck == 0)
        return family == HP_AF_INET6 ? -2 : 0; /* RFC 8200 8.1 / RFC 768: none sent */
    if (b->ol_flags & HP_BUF_OL_L4_CKSUM_GOOD)
        return 0;
    uint32_t sum = hp_cksum_add(pseudo_sum(family, src, dst, ulen), chain_sum(b, ulen));
    return hp_cksum_fold(sum) == 0 ? 0 : -2;
}

/* ---- early demultiplexing ---------------------------------------------------------- */

bool hp__udp_early_on(const struct hp_stack *s)
{
    const struct hp__sock_state *st = s->sock;
    return st && st->tcp && st->udp_bound >= st->tcp->cfg.early_demux_conns;
}

void hp__udp_early(struct hp_stack *s, unsigned k, uint16_t dport)
{
    struct hp__sock_state *st = s->sock;
    if (k >= HP__RX_BURST)
        return;
    st->udp_early_port[k] = (uint32_t)dport + 1u;
    __builtin_prefetch(bucket(st, dport), 0, 3);
}

void hp__udp_early_step(struct hp_stack *s, unsigned k)
{
    struct hp__sock_state *st = s->sock;
    if (k >= HP__RX_BURST || !st->udp_early_port[k])
        return;
    const struct hp_udp_sock *u = *bucket(st, (uint16_t)(st->udp_early_port[k] - 1u));
    st->udp_early_port[k] = 0;
    if (!u)
        return;
    /* The whole socket: the lookup's fields, the queue's and its first
     * inline entries (a few lines, written by the input path). */
    for (size_t off = 0; off < sizeof *u; off += 64)
        __builtin_prefetch((const char *)u + off, 1, 3);
    st->udp_early_prefetches++;
}

void hp__udp_early_end(struct hp_stack *s, unsigned n)
{
    struct hp__sock_state *st = s->sock;
    if (n > HP__RX_BURST)
        n = HP__RX_BURST;
    memset(st->udp_early_port, 0, n * sizeof st->udp_early_port[0]);
}

/* Room for one more datagram in a full ring: twice the entries, up to qmax,
 * in order from entry 0; false without memory (the datagram is dropped and
 * counted like one beyond the bound). */
static bool rq_grow(struct hp_udp_sock *u)
{
    uint32_t cap = 2 * u->qcap < u->qmax ? 2 * u->qcap : u->qmax;
    if (cap <= u->qcap)
        return false;
    struct rq_entry *q = malloc(cap * sizeof *q);
    if (!q)
        return false;
    for (uint32_t i = 0; i < u->qlen; i++)
        q[i] = u->q[(u->qhead + i) % u->qcap];
    if (u->q != u->inl)
        free(u->q);
    u->q = q;
    u->qcap = cap;
    u->qhead = 0;
    return true;
}

void hp__udp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src,
                   const uint8_t *dst)
{
    struct hp_stack *s = ifc->s;
    struct hp__sock_state *st = s->sock;
    uint8_t hdr[HP_UDP_HDR_LEN];
    uint16_t sport, dport, ulen;
    if (!b->next) {
        struct hp_l4_addrs a = {.family = (uint8_t)family, .src = src, .dst = dst};
        struct hp_udp_repr r;
        unsigned flags = (b->ol_flags & HP_BUF_OL_L4_CKSUM_GOOD) ? 0 : HP_WIRE_VERIFY_CKSUM;
        int rc = hp_udp_parse(hp_buf_data(b), b->data_len, &a, &r, flags);
        if (rc < 0) {
            drop(s, b, rc == -HP_WIRE_BAD_CHECKSUM);
            return;
        }
        sport = r.src_port;
        dport = r.dst_port;
        ulen = r.len;
    } else {
        if (b->pkt_len < HP_UDP_HDR_LEN || hp_buf_copy_out(b, 0, HP_UDP_HDR_LEN, hdr) < 0) {
            drop(s, b, false);
            return;
        }
        int rc = check_chain(b, family, src, dst, hdr);
        if (rc < 0) {
            drop(s, b, rc == -2);
            return;
        }
        sport = hp_get_be16(hdr);
        dport = hp_get_be16(hdr + 2);
        ulen = hp_get_be16(hdr + 4);
        if (dport == 0) { /* reserved: nobody can be bound to it */
            drop(s, b, false);
            return;
        }
    }
    chain_trim(b, ulen);

    struct hp_udp_sock *u = st ? lookup(st, family, dst, dport, src, sport) : NULL;
    if (!u) {
        hp__ctr(s, HP_CTR_UDP_NO_PORTS);
        /* RFC 1122 4.1.3.1 / RFC 4443 3.1: port unreachable. */
        if (!is_bcast_mcast(ifc, family, dst)) {
            if (family == HP_AF_INET4)
                hp__icmp4_error(ifc, b, HP_ICMP_DEST_UNREACH, HP_ICMP_UNREACH_PORT, 0);
            else
                hp__icmp6_error(ifc, b, HP_ICMP6_DEST_UNREACH, HP_ICMP6_UNREACH_PORT, 0);
        }
        hp_buf_free(b);
        return;
    }
    if (u->qlen >= u->qmax || (u->qlen == u->qcap && !rq_grow(u))) {
        hp__ctr(s, HP_CTR_UDP_RCVBUF_ERRORS);
        drop(s, b, false);
        return;
    }
    chain_strip(b, HP_UDP_HDR_LEN);
    uint32_t at = u->qhead + u->qlen;
    struct rq_entry *e = &u->q[at < u->qcap ? at : at - u->qcap];
    e->b = b;
    e->from.family = (uint8_t)family;
    e->from.port = sport;
    memset(e->from.addr, 0, sizeof e->from.addr);
    addr_cpy(e->from.addr, src, family);
    hp__ctr(s, HP_CTR_UDP_IN_DATAGRAMS);
    if (u->qlen++ == 0)
        hp__sock_ev_raise(st, &u->ev, HP_EV_IN);
}

/* ---- sockets --------------------------------------------------------------------- */

HP_API struct hp_udp_sock *hp_udp_open(struct hp_stack *s, int family, void *user)
{
    if (!s || !s->sock || (family != HP_AF_INET4 && family != HP_AF_INET6)) {
        errno = EINVAL;
        return NULL;
    }
    struct hp_udp_sock *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->q = u->inl;
    u->qcap = RCVQ_INLINE;
    u->qmax = RCVQ_DEFAULT;
    u->s = s;
    u->family = (uint8_t)family;
    u->local.family = u->remote.family = (uint8_t)family;
    u->ev.user = user;
    struct hp__sock_state *st = s->sock;
    u->anext = st->all;
    if (st->all)
        st->all->aprev = u;
    st->all = u;
    /* Room to send from the start. */
    hp__sock_ev_raise(st, &u->ev, HP_EV_OUT);
    return u;
}

static int bind_port(struct hp_udp_sock *u, const uint8_t *addr, bool wildcard, uint16_t port)
{
    struct hp__sock_state *st = u->s->sock;
    if (port == 0) {
        uint32_t start = st->ephemeral_next >= EPHEMERAL_LO ? st->ephemeral_next - EPHEMERAL_LO : 0;
        for (uint32_t i = 0; i < EPHEMERAL_N; i++) {
            uint16_t p = (uint16_t)(EPHEMERAL_LO + (start + i) % EPHEMERAL_N);
            if (!port_in_use(st, u->family, addr, wildcard, p, false)) {
                port = p;
                break;
            }
        }
        if (port == 0)
            return -EADDRINUSE;
        st->ephemeral_next = (uint16_t)(EPHEMERAL_LO + (port - EPHEMERAL_LO + 1u) % EPHEMERAL_N);
    } else if (port_in_use(st, u->family, addr, wildcard, port, u->reuse)) {
        return -EADDRINUSE;
    }
    memset(u->local.addr, 0, sizeof u->local.addr);
    if (!wildcard)
        memcpy(u->local.addr, addr, alen(u->family));
    u->local.port = port;
    u->wildcard = wildcard;
    table_insert(u);
    return 0;
}

HP_API int hp_udp_bind(struct hp_udp_sock *u, const struct hp_sockaddr *local)
{
    if (!u || !local || u->bound || local->family != u->family)
        return -EINVAL;
    bool wildcard = all_zero(local->addr, alen(u->family));
    if (!wildcard && !hp__addr_is_ours(u->s, u->family, local->addr))
        return -EADDRNOTAVAIL;
    return bind_port(u, local->addr, wildcard, local->port);
}

HP_API int hp_udp_set_reuseaddr(struct hp_udp_sock *u, bool on)
{
    if (!u || u->bound)
        return -EINVAL;
    u->reuse = on;
    return 0;
}

static int autobind(struct hp_udp_sock *u)
{
    static const uint8_t zero[16];
    return u->bound ? 0 : bind_port(u, zero, true, 0);
}

HP_API int hp_udp_connect(struct hp_udp_sock *u, const struct hp_sockaddr *remote)
{
    if (!u || !remote || remote->family != u->family || remote->port == 0 ||
        all_zero(remote->addr, alen(u->family)))
        return -EINVAL;
    int rc = autobind(u);
    if (rc < 0)
        return rc;
    u->remote = *remote;
    u->connected = true;
    return 0;
}

HP_API void hp_udp_local(const struct hp_udp_sock *u, struct hp_sockaddr *out)
{
    if (!u || !out)
        return;
    *out = u->local;
}

HP_API uint32_t hp_udp_poll(const struct hp_udp_sock *u)
{
    if (!u)
        return 0;
    return (u->qlen ? HP_EV_IN : 0) | HP_EV_OUT;
}

HP_API int hp_udp_set_rcvq(struct hp_udp_sock *u, unsigned max)
{
    if (!u || max == 0 || max > RCVQ_MAX)
        return -EINVAL;
    /* What is queued stays queued, even beyond a smaller bound; the ring
     * grows to a larger one as datagrams wait (rq_grow). */
    u->qmax = max;
    return 0;
}

static void close_one(struct hp_udp_sock *u)
{
    struct hp__sock_state *st = u->s->sock;
    table_remove(u);
    hp__sock_ev_remove(st, &u->ev);
    if (u->aprev)
        u->aprev->anext = u->anext;
    else
        st->all = u->anext;
    if (u->anext)
        u->anext->aprev = u->aprev;
    for (uint32_t i = 0; i < u->qlen; i++)
        hp_buf_free(u->q[(u->qhead + i) % u->qcap].b);
    if (u->q != u->inl)
        free(u->q);
    free(u);
}

HP_API int hp_udp_close(struct hp_udp_sock *u)
{
    if (u)
        close_one(u);
    return 0;
}

void hp__udp_fini(struct hp_stack *s)
{
    while (s->sock->all)
        close_one(s->sock->all);
}

/* ---- receive --------------------------------------------------------------------- */

static struct hp_buf *dequeue(struct hp_udp_sock *u, struct hp_sockaddr *from)
{
    struct rq_entry *e = &u->q[u->qhead];
    struct hp_buf *b = e->b;
    if (from)
        *from = e->from;
    u->qhead = u->qhead + 1 == u->qcap ? 0 : u->qhead + 1;
    if (--u->qlen == 0)
        u->qhead = 0; /* the next datagram in the first entry again, a line already used */
    return b;
}

HP_API int hp_udp_recvfrom(struct hp_udp_sock *u, void *data, size_t cap, struct hp_sockaddr *from)
{
    if (!u || (!data && cap))
        return -EINVAL;
    if (!u->qlen)
        return -EAGAIN;
    struct hp_buf *b = dequeue(u, from);
    uint32_t len = b->pkt_len;
    uint32_t n = cap < len ? (uint32_t)cap : len;
    if (n)
        hp_buf_copy_out(b, 0, n, data);
    hp_buf_free(b);
    return (int)len;
}

HP_API int hp_udp_recv_buf(struct hp_udp_sock *u, struct hp_buf **b, struct hp_sockaddr *from)
{
    if (!u || !b)
        return -EINVAL;
    if (!u->qlen)
        return -EAGAIN;
    *b = dequeue(u, from);
    return (int)(*b)->pkt_len;
}

/* ---- send ------------------------------------------------------------------------ */

struct dest {
    struct hp__route r;
    uint8_t dst[16];
    uint16_t dport;
};

/* Where a datagram goes: `to` or the peer, the route, and our source (the
 * bound address if any, else the route's). */
static int resolve(struct hp_udp_sock *u, const struct hp_sockaddr *to, struct dest *d)
{
    if (!to) {
        if (!u->connected)
            return -EDESTADDRREQ;
        to = &u->remote;
    }
    size_t n = alen(u->family);
    if (to->family != u->family || to->port == 0 || all_zero(to->addr, n))
        return -EINVAL;
    int rc = autobind(u);
    if (rc < 0)
        return rc;
    addr_cpy(d->dst, to->addr, u->family);
    d->dport = to->port;
    if (u->rt_gen == u->s->route_gen && addr_eq(u->rt_dst, d->dst, u->family)) {
        d->r = u->rt;
    } else if ((rc = u->family == HP_AF_INET4 ? hp__route4(u->s, d->dst, &d->r)
                                              : hp__route6(u->s, d->dst, &d->r)) == 0) {
        u->rt = d->r;
        addr_cpy(u->rt_dst, d->dst, u->family);
        u->rt_gen = u->s->route_gen;
    }
    if (rc < 0) {
        hp__ctr(u->s,
                u->family == HP_AF_INET4 ? HP_CTR_IP_OUT_NO_ROUTES : HP_CTR_IP6_OUT_NO_ROUTES);
        return -EHOSTUNREACH;
    }
    if (!u->wildcard)
        addr_cpy(d->r.src, u->local.addr, u->family);
    return 0;
}

/* Put the header in front of the payload b (headroom checked by the
 * caller) with the checksum over the whole chain. */
static void put_header(struct hp_udp_sock *u, const struct dest *d, struct hp_buf *b)
{
    /* The payload's sum first, then the header's from its values: read back
     * just after its 16-bit stores, it would wait for them (see
     * hp_cksum_from_host16). */
    uint32_t ulen = b->pkt_len + HP_UDP_HDR_LEN;
    uint32_t sum =
        hp_cksum_add(pseudo_sum(u->family, d->r.src, d->dst, ulen), chain_sum(b, b->pkt_len));
    uint8_t *h = hp_buf_prepend(b, HP_UDP_HDR_LEN);
    hp_put_be16(h, u->local.port);
    hp_put_be16(h + 2, d->dport);
    hp_put_be16(h + 4, (uint16_t)ulen);
    h[6] = h[7] = 0;
    sum = hp_cksum_add(sum, hp_cksum_from_host16((uint64_t)u->local.port + d->dport + ulen));
    uint16_t c = hp_cksum_fold(sum);
    if (c == 0)
        c = 0xFFFF; /* RFC 768: 0 means "no checksum" */
    memcpy(h + 6, &c, 2);
}

/*
 * An IPv4 datagram on the socket's prepared path (remade when the
 * destination, our source or the routes changed): the UDP checksum from
 * the path's address sum, and both lower headers written at once when the
 * path allows (hp__ip4_path_send); the general output otherwise.
 */
static int out4(struct hp_udp_sock *u, const struct dest *d, struct hp_buf *b, uint32_t psum)
{
    struct hp_stack *s = u->s;
    struct hp__ip4_path *p = &u->path4;
    if (!hp__ip4_path_good(s, p, d->r.src, d->dst))
        hp__ip4_path_make(s, p, &d->r, d->dst, HP_IPPROTO_UDP);
    uint32_t ulen = b->pkt_len + HP_UDP_HDR_LEN;
    uint32_t sum = hp_cksum_add(hp__ip4_path_sum(p), psum);
    uint8_t *h = hp_buf_prepend(b, HP_UDP_HDR_LEN);
    hp_put_be16(h, u->local.port);
    hp_put_be16(h + 2, d->dport);
    hp_put_be16(h + 4, (uint16_t)ulen);
    /* The pseudo-header's protocol and length, and the header's ports and length. */
    sum = hp_cksum_add(
        sum, hp_cksum_from_host16((uint64_t)HP_IPPROTO_UDP + 2 * ulen + u->local.port + d->dport));
    uint16_t c = hp_cksum_fold(sum);
    if (c == 0)
        c = 0xFFFF; /* RFC 768: 0 means "no checksum" */
    memcpy(h + 6, &c, 2);
    if (hp__ip4_path_send(s, p, b)) {
        hp__ctr(s, HP_CTR_UDP_OUT_DATAGRAMS);
        return 0;
    }
    int rc = hp__ipv4_output(s, &d->r, d->dst, HP_IPPROTO_UDP, b);
    hp__ctr(s, rc < 0 ? HP_CTR_UDP_OUT_ERRORS : HP_CTR_UDP_OUT_DATAGRAMS);
    return rc;
}

static int ip_out(struct hp_udp_sock *u, const struct dest *d, struct hp_buf *b)
{
    int rc = u->family == HP_AF_INET4 ? hp__ipv4_output(u->s, &d->r, d->dst, HP_IPPROTO_UDP, b)
                                      : hp__ipv6_output(u->s, &d->r, d->dst, HP_IPPROTO_UDP, b);
    hp__ctr(u->s, rc < 0 ? HP_CTR_UDP_OUT_ERRORS : HP_CTR_UDP_OUT_DATAGRAMS);
    return rc;
}

/* Copy len bytes into a chain of buffers from ifc's pool; the first one
 * keeps its headroom for the headers, the others use their whole room. */
static struct hp_buf *copy_in(struct hp__iface *ifc, const uint8_t *data, size_t len)
{
    struct hp_buf *head = hp__alloc(ifc);
    if (!head)
        return NULL;
    uint32_t n = hp_buf_tailroom(head);
    if (n > len)
        n = (uint32_t)len;
    if (n)
        memcpy(hp_buf_append(head, n), data, n);
    size_t done = n;
    while (done < len) {
        struct hp_buf *b = hp__alloc(ifc);
        if (!b) {
            hp_buf_free(head);
            return NULL;
        }
        /* Take the headroom too: only the first segment needs it. */
        uint32_t front = hp_buf_headroom(b);
        if (front > len - done)
            front = (uint32_t)(len - done);
        if (front)
            memcpy(hp_buf_prepend(b, front), data + done, front);
        done += front;
        uint32_t back = hp_buf_tailroom(b);
        if (back > len - done)
            back = (uint32_t)(len - done);
        if (back)
            memcpy(hp_buf_append(b, back), data + done, back);
        done += back;
        if (hp_buf_chain(head, b) < 0) {
            hp_buf_free(b);
            hp_buf_free(head);
            return NULL;
        }
    }
    return head;
}

HP_API int hp_udp_sendto(struct hp_udp_sock *u, const void *data, size_t len,
                         const struct hp_sockaddr *to)
{
    if (!u || (!data && len))
        return -EINVAL;
    if (len > (u->family == HP_AF_INET4 ? UDP_MAX4 : UDP_MAX6))
        return -EMSGSIZE;
    struct dest d;
    int rc = resolve(u, to, &d);
    if (rc < 0)
        return rc;
    struct hp_buf *b = u->family == HP_AF_INET4 ? hp__alloc(d.r.ifc) : NULL;
    if (b && len <= hp_buf_tailroom(b)) {
        /* One buffer (nearly every datagram): the payload summed from the
         * caller's bytes as it is copied behind the headroom. */
        uint32_t psum = hp_cksum_copy(hp_buf_data(b), data, len, 0);
        b->data_len = b->pkt_len = (uint32_t)len;
        rc = out4(u, &d, b, psum);
        if (rc == -ENOBUFS)
            return -EAGAIN;
        return rc < 0 ? rc : (int)len;
    }
    if (b)
        hp_buf_free(b);
    b = copy_in(d.r.ifc, data, len);
    if (!b) {
        hp__ctr(u->s, HP_CTR_UDP_OUT_ERRORS);
        return -EAGAIN;
    }
    if (u->family == HP_AF_INET4) {
        rc = out4(u, &d, b, chain_sum(b, b->pkt_len));
    } else {
        put_header(u, &d, b);
        rc = ip_out(u, &d, b);
    }
    if (rc == -ENOBUFS)
        return -EAGAIN; /* our copy is gone, the caller still has the data */
    return rc < 0 ? rc : (int)len;
}

HP_API int hp_udp_send_buf(struct hp_udp_sock *u, struct hp_buf *b, const struct hp_sockaddr *to)
{
    if (!u || !b)
        return -EINVAL;
    uint32_t len = b->pkt_len;
    if (len > (u->family == HP_AF_INET4 ? UDP_MAX4 : UDP_MAX6))
        return -EMSGSIZE;
    /* UDP, IP and Ethernet headers go in front without a copy. */
    uint32_t need = HP_UDP_HDR_LEN + (u->family == HP_AF_INET4 ? 20u : 40u) + 14u;
    if (hp_buf_headroom(b) < need || b->direct || hp_buf_refcnt(b) != 1)
        return -EINVAL;
    struct dest d;
    int rc = resolve(u, to, &d);
    if (rc < 0)
        return rc;
    /* From here the stack owns b: a failure below (no buffer for a fragment)
     * loses the datagram as a full device queue would, counted by IP and
     * UDP_OUT_ERRORS, and the call still succeeds. */
    if (u->family == HP_AF_INET4) {
        out4(u, &d, b, chain_sum(b, b->pkt_len));
    } else {
        put_header(u, &d, b);
        ip_out(u, &d, b);
    }
    return (int)len;
}
