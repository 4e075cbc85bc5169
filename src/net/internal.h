/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the net layer: the stack's structures and the calls between its modules. */
#ifndef HOTPATH_NET_INTERNAL_H
#define HOTPATH_NET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/cacheline.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/wire.h>

/*
 * Modules and who writes which file:
 *   stack.c   create/destroy, interfaces, addresses, routes, poll, counters
 *   timer.c   the timer heap
 *   eth.c     Ethernet input demultiplexing, transmit bursts
 *   neigh.c   the neighbour tables (ARP and NDP share them), resolution queues
 *   arp.c     ARP input/output (RFC 826, RFC 5227 announcements)
 *   ndp.c     NDP input/output, DAD (RFC 4861, RFC 4862)
 *   ipv4.c ipv6.c   IP input/output, routing lookup, fragmentation
 *   reasm.c   reassembly of both families (bounded memory, timeouts)
 *   icmp.c icmp6.c  echo, errors (rate limited)
 * and the sock layer (src/sock/): udp.c, events.c.
 *
 * Buffer conventions. Every function that takes an hp_buf consumes it
 * (frees it or passes it on) unless its comment says otherwise. Input
 * functions get the buffer with its data offset at their own header;
 * b->l2_len and b->l3_len say how long the headers before it were, and
 * those headers are still in the buffer right before the data (for a
 * reassembled datagram: the first fragment's headers, with the lengths
 * fixed), so ICMP errors can quote the original packet by stepping back.
 * Output functions get the buffer with its data offset at the header they
 * are to put the next one in front of, with enough headroom (the pools'
 * default 128 bytes is enough for Ethernet + IPv6 + a fragment header).
 */

#define HP__MAX_IFACES 8
#define HP__MAX_ADDRS  8
#define HP__TX_BURST   32
#define HP__RX_BURST   32

/* ---- time and timers (timer.c) ------------------------------------------ */

struct hp_stack;
typedef void (*hp__timer_fn)(struct hp_stack *s, void *arg);

/*
 * A timer lives inside the structure it serves (neighbour entry, fragment
 * queue, DAD state, TCP connection): 8 bytes, its place in the heap and its
 * kind. The kind says which function fires it (timer.c dispatches on it);
 * that function finds its structure from the timer's address
 * (HP__CONTAINER). A TCP connection holds three: with a callback and an
 * argument each they took 96 of its bytes. Timers of any other kind
 * (tests) are a struct hp__timer_cb, which carries its own.
 */
enum hp__timer_kind {
    HP__TK_NONE = 0, /* fires nothing */
    HP__TK_CB,       /* struct hp__timer_cb: its fn(s, arg) */
    HP__TK_NEIGH,    /* neigh.c: hp__neigh_timer */
    HP__TK_REASM,    /* reasm.c: hp__reasm_timer */
    HP__TK_DAD,      /* ndp.c: hp__ndp_dad_timer */
    HP__TK_TCP_RTX,  /* tcp_timer.c: hp__tcp_timer_rtx */
    HP__TK_TCP_DACK, /* tcp_timer.c: hp__tcp_timer_dack */
    HP__TK_TCP_MISC, /* tcp_timer.c: hp__tcp_timer_misc */
};

struct hp__timer {
    int32_t slot; /* position in the heap, -1 when not armed */
    uint8_t kind; /* enum hp__timer_kind */
};

/* A timer with its own callback (the tests' timers). */
struct hp__timer_cb {
    struct hp__timer t;
    hp__timer_fn fn;
    void *arg;
};

/* Whether addresses a and b (IPv4 or IPv6, network order) agree in their
 * first plen bits (at most the address's length), a 32-bit word at a time:
 * the route of every unconnected send asks it (a memcmp of plen / 8 bytes
 * was a call into libc). */
static inline bool hp__prefix_match(const uint8_t *a, const uint8_t *b, unsigned plen)
{
    for (unsigned i = 0; plen > 0; i += 4) {
        unsigned k = plen < 32 ? plen : 32;
        uint32_t m = k == 32 ? 0xFFFFFFFFu : ~(0xFFFFFFFFu >> k);
        if ((hp_get_be32(a + i) ^ hp_get_be32(b + i)) & m)
            return false;
        plen -= k;
    }
    return true;
}

/* The structure around an embedded member (container_of). */
#define HP__CONTAINER(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

/* A heap entry holds its timer's due time, so that sifting compares within
 * the heap's own array instead of reading timers spread over thousands of
 * connections (a cache miss each). */
struct hp__heap_ent {
    uint64_t due; /* ns, CLOCK_MONOTONIC */
    struct hp__timer *t;
};

void hp__timer_init(struct hp__timer *t, enum hp__timer_kind kind);
void hp__timer_cb_init(struct hp__timer_cb *cb, hp__timer_fn fn, void *arg);
/* Arm (or re-arm) t to fire at `due`; 0 or -ENOMEM. */
int hp__timer_arm(struct hp_stack *s, struct hp__timer *t, uint64_t due);
void hp__timer_cancel(struct hp_stack *s, struct hp__timer *t);
static inline bool hp__timer_armed(const struct hp__timer *t)
{
    return t->slot >= 0;
}
/* When an armed t fires (ns), 0 when not armed. */
uint64_t hp__timer_due(const struct hp_stack *s, const struct hp__timer *t);
/* The functions the kinds fire (each module's). */
void hp__neigh_timer(struct hp_stack *s, struct hp__timer *t);
void hp__reasm_timer(struct hp_stack *s, struct hp__timer *t);
void hp__ndp_dad_timer(struct hp_stack *s, struct hp__timer *t);
void hp__tcp_timer_rtx(struct hp_stack *s, struct hp__timer *t);
void hp__tcp_timer_dack(struct hp_stack *s, struct hp__timer *t);
void hp__tcp_timer_misc(struct hp_stack *s, struct hp__timer *t);
/* Run every timer due at s->now; returns how many ran. */
int hp__timers_run(struct hp_stack *s);
/* Free the heap (timers themselves belong to their owners). */
void hp__timers_fini(struct hp_stack *s);
/* The current time: CLOCK_MONOTONIC in ns, read once per poll into s->now. */
uint64_t hp__clock_ns(void);

/* ---- interfaces and the stack (stack.c, eth.c) ----------------------------- */

struct hp__addr4 {
    uint8_t addr[4];
    uint8_t plen;
};

struct hp__addr6 {
    uint8_t addr[16];
    uint8_t plen;
    uint8_t state;        /* enum hp_addr_state */
    uint8_t dad_left;     /* solicitations still to send */
    struct hp__timer dad; /* ndp.c */
    struct hp__iface *ifc;
    /* One line per address, as docs/cachelines/hp__iface.md has it (the
     * DAD timer shrank from 32 bytes to 8): an address never straddles
     * two lines, whichever slot it is in. */
    uint8_t spare_[24];
};

/*
 * struct hp__iface and struct hp_stack declare each field once, in blocks
 * (HP__IFC_<name>_<group>, HP__STK_<name>_<group>), and emit them in one of
 * two orders:
 *
 *   grouped (the default)  by fast-path access, in named cache-line groups
 *                          (docs/cachelines/hp__iface.md, hp_stack.md; the
 *                          build checks them in stack_layout.c);
 *   chrono (-DHP_LAYOUT_CHRONO=1)  the logical order the fields had before
 *                          grouping, the baseline to measure against.
 *
 * The tag in a block's name is its group. The paths measured: receive is
 * hp_stack_poll -> link rx burst -> hp__eth_input -> IP input -> UDP or TCP
 * input; transmit is a UDP or TCP send -> IP output -> hp__neigh_output ->
 * hp__eth_output / hp__eth_xmit, and the flush at the end of the poll. Both
 * structures are allocated 64-byte aligned by stack.c (aligned_alloc), so
 * that an offset's line in the struct is its line in memory; the types are
 * not over-aligned, so that tests may embed them in plain allocations.
 */

/* tx_ro: read by the transmit path only (buffer allocation, IP output). */
#define HP__IFC_POOL_tx_ro struct hp_pool *pool; /* the link's: our packets come from it */
#define HP__IFC_MTU_tx_ro  uint32_t mtu;
/* rxtx: read by both paths (poll, Ethernet filter and header, the IPv4
 * "is it ours / broadcast" checks, the neighbour hash, the flush). */
#define HP__IFC_S_rxtx     struct hp_stack *s;
#define HP__IFC_INDEX_rxtx int index;
#define HP__IFC_LINK_rxtx  struct hp_link *link;
#define HP__IFC_MAC_rxtx   uint8_t mac[6];
#define HP__IFC_V4_rxtx    struct hp__addr4 v4[HP__MAX_ADDRS];
#define HP__IFC_N4_rxtx    int n4;
#define HP__IFC_N6_rxtx    int n6;
/* tx_rw: the transmit burst, written for every frame queued. */
#define HP__IFC_TX_tx_rw  struct hp_buf *tx[HP__TX_BURST];
#define HP__IFC_NTX_tx_rw unsigned ntx;
/* addr6: IPv6 addresses, read by both paths for IPv6 only. */
#define HP__IFC_V6_addr6 struct hp__addr6 v6[HP__MAX_ADDRS]; /* v6[0]: the link-local address */

struct hp__iface {
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    HP__IFC_S_rxtx HP__IFC_INDEX_rxtx HP__IFC_LINK_rxtx HP__IFC_POOL_tx_ro HP__IFC_MAC_rxtx
        HP__IFC_MTU_tx_ro HP__IFC_V4_rxtx HP__IFC_N4_rxtx HP__IFC_V6_addr6 HP__IFC_N6_rxtx
            HP__IFC_TX_tx_rw HP__IFC_NTX_tx_rw
#else
    /* Line 0: everything both IPv4 paths read, v4[0..2] included; mtu
     * and the ints between pool and s, so that no hole opens. */
    HP_CACHELINE_GROUP_BEGIN(tx_ro)
    HP__IFC_POOL_tx_ro HP__IFC_MTU_tx_ro HP_CACHELINE_GROUP_END(tx_ro)
        HP_CACHELINE_GROUP_BEGIN(rxtx) HP__IFC_INDEX_rxtx HP__IFC_N4_rxtx HP__IFC_N6_rxtx
        HP__IFC_S_rxtx HP__IFC_LINK_rxtx HP__IFC_MAC_rxtx HP__IFC_V4_rxtx
        HP_CACHELINE_GROUP_END(rxtx)
        /* Line 1 on: ntx and the first slots of the burst share a line. */
        HP_CACHELINE_GROUP_BEGIN(tx_rw) HP__IFC_NTX_tx_rw HP__IFC_TX_tx_rw
        HP_CACHELINE_GROUP_END(tx_rw)
        /* Last, the largest: 64 bytes an address, the DAD state included. */
        HP_CACHELINE_GROUP_BEGIN(addr6) HP__IFC_V6_addr6 HP_CACHELINE_GROUP_END(addr6)
#endif
};

/* Token bucket for ICMP errors (RFC 1812 4.3.2.8, RFC 4443 2.4(f)). */
struct hp__bucket {
    uint64_t tokens_milli; /* thousandths of a token */
    uint64_t last;         /* ns */
};

struct hp__neigh_table; /* neigh.c */
struct hp__reasm;       /* reasm.c */
struct hp__ipid;        /* ipid.c */
struct hp__sock_state;  /* src/sock */

/* rx: read by the receive path only (the poll's clock, UDP / TCP input). */
/* tests: a clock of their own (NULL: hp__clock_ns) */
#define HP__STK_CLOCKFN_rx uint64_t (*clock_fn)(void *arg);
#define HP__STK_SOCK_rx    struct hp__sock_state *sock;
/* tx: read by the transmit path only: IPv4's neighbour table (IPv6's and
 * the gateways, which only off-link UDP destinations read, are tx_more). */
#define HP__STK_NEIGH4_tx      struct hp__neigh_table *neigh4;
#define HP__STK_NEIGH6_tx_more struct hp__neigh_table *neigh6;
#define HP__STK_GW_tx_more     uint8_t gw4[4], gw6[16];
#define HP__STK_HASGW_tx_more  bool has_gw4, has_gw6;
/* rw: written on the fast path: the clock (each poll), the timer heap
 * (TCP arms and cancels timers on both paths). */
#define HP__STK_NOW_rw    uint64_t now; /* ns, read at the start of each poll (and at create) */
#define HP__STK_HEAP_rw   struct hp__heap_ent *heap; /* timer.c */
#define HP__STK_NHEAP_rw  uint32_t nheap, heap_cap;
#define HP__STK_INPOLL_rw bool in_poll; /* inside hp_stack_poll: frames wait for its flush */
/* rxtx: read by both paths (the poll and its flush; UDP routes each send). */
#define HP__STK_NIFACES_rxtx int nifaces;
#define HP__STK_IFACES_rxtx  struct hp__iface *ifaces[HP__MAX_IFACES];
/* ctr: the counters, written by both paths; cfg ends where they start, so
 * that cfg.default_ttl (IP output) shares the line of ctr[0..5]. */
#define HP__STK_CFG_ctr struct hp_stack_config cfg; /* defaults filled in */
#define HP__STK_CTR_ctr uint64_t ctr[HP_STACK_NCOUNTERS];
/* cold: names, fragments, ICMP errors, the tests' clock argument. */
#define HP__STK_NAME_cold char name[32];
/* IP identifications (ipid.c): read by IP output for every packet, but
 * line 0 has no room for it (docs/cachelines/hp_stack.md). */
#define HP__STK_IPID_cold struct hp__ipid *ipid;
/* Bumped by every change hp__route4's or hp__route6's answers depend on
 * (an interface added, an address added, a gateway set, an IPv6 address's
 * duplicate address detection starting, ending or failing), never 0: a UDP socket
 * keeps its last route while it holds (udp.c). In ipid's line: IPv4 output
 * reads that one for every datagram. */
#define HP__STK_ROUTEGEN_cold uint32_t route_gen;
#define HP__STK_REASM_cold    struct hp__reasm *reasm;
#define HP__STK_ICMP_cold     struct hp__bucket icmp4_bucket, icmp6_bucket;
#define HP__STK_CLOCKARG_cold void *clock_arg;

struct hp_stack {
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    HP__STK_CFG_ctr HP__STK_NAME_cold HP__STK_NOW_rw HP__STK_IFACES_rxtx HP__STK_NIFACES_rxtx
        HP__STK_GW_tx_more HP__STK_HASGW_tx_more HP__STK_INPOLL_rw HP__STK_IPID_cold
            HP__STK_ROUTEGEN_cold HP__STK_HEAP_rw HP__STK_NHEAP_rw HP__STK_NEIGH4_tx
                HP__STK_NEIGH6_tx_more HP__STK_REASM_cold HP__STK_ICMP_cold HP__STK_SOCK_rx
                    HP__STK_CLOCKFN_rx HP__STK_CLOCKARG_cold HP__STK_CTR_ctr
#else
    /* Line 0: all that either IPv4 path reads or writes but the counters
     * and cfg.default_ttl; ifaces last: only ifaces[0] is in line 0, the
     * other slots spill into line 1. */
    HP_CACHELINE_GROUP_BEGIN(rx)
    HP__STK_CLOCKFN_rx HP__STK_SOCK_rx HP_CACHELINE_GROUP_END(rx)
        HP_CACHELINE_GROUP_BEGIN(tx) HP__STK_NEIGH4_tx HP_CACHELINE_GROUP_END(tx)
            HP_CACHELINE_GROUP_BEGIN(rw) HP__STK_NOW_rw HP__STK_HEAP_rw HP__STK_NHEAP_rw
        HP__STK_INPOLL_rw HP_CACHELINE_GROUP_END(rw)
            HP_CACHELINE_GROUP_BEGIN(rxtx) HP__STK_NIFACES_rxtx HP__STK_IFACES_rxtx
        HP_CACHELINE_GROUP_END(rxtx)
        /* Lines 1-2: IPv6 transmit, gateways. */
        HP_CACHELINE_GROUP_BEGIN(tx_more) HP__STK_NEIGH6_tx_more HP__STK_GW_tx_more
        HP__STK_HASGW_tx_more HP_CACHELINE_GROUP_END(tx_more)
        /* cfg from 24 bytes into line 2, so that ctr starts 16 bytes into
     * line 3: the hot counters then fall in 3 lines (stack_layout.c). */
        HP_CACHELINE_GROUP_BEGIN(ctr) HP__STK_CFG_ctr HP__STK_CTR_ctr HP_CACHELINE_GROUP_END(ctr)
            HP_CACHELINE_GROUP_BEGIN(cold) HP__STK_IPID_cold HP__STK_ROUTEGEN_cold HP__STK_NAME_cold
        HP__STK_CLOCKARG_cold HP__STK_REASM_cold HP__STK_ICMP_cold HP_CACHELINE_GROUP_END(cold)
#endif
};

/* Tests: read time from fn(arg) instead of CLOCK_MONOTONIC (NULL restores
 * it); s->now is set from it at once and at every poll. */
void hp__stack_set_clock(struct hp_stack *s, uint64_t (*fn)(void *arg), void *arg);
static inline uint64_t hp__stack_clock(const struct hp_stack *s)
{
    return s->clock_fn ? s->clock_fn(s->clock_arg) : hp__clock_ns();
}

static inline void hp__ctr(struct hp_stack *s, enum hp_stack_ctr c)
{
    s->ctr[c]++;
}
static inline void hp__ctr_add(struct hp_stack *s, enum hp_stack_ctr c, uint64_t n)
{
    s->ctr[c] += n;
}

/* Take a token from bucket bk refilled at `rate` per second up to `burst`
 * tokens (full at first use): false when empty. ICMP errors (icmp.c) and
 * TCP challenge ACKs (RFC 5961 7) are limited with it. */
bool hp__bucket_take_rate(struct hp_stack *s, struct hp__bucket *bk, uint64_t rate, uint64_t burst);
/* a is one of our addresses of that family on any interface (IPv6: in any
 * state, so a tentative address may be bound before DAD ends). */
bool hp__addr_is_ours(struct hp_stack *s, int family, const uint8_t *a);

/* A new buffer for a packet we build on ifc (the link's pool), or NULL
 * (counted in NO_BUFFERS). */
struct hp_buf *hp__alloc(struct hp__iface *ifc);

/* Put an Ethernet header (dst, ifc's MAC, ethertype) in front of b and
 * queue it; b's data offset is at the L3 header. */
void hp__eth_output(struct hp__iface *ifc, const uint8_t dst[6], uint16_t ethertype,
                    struct hp_buf *b);
/* Hand the queued frames to the link; what it does not take is freed and
 * counted (ETH_OUT_DROPS). */
void hp__eth_flush(struct hp__iface *ifc);
/* Queue a complete Ethernet frame for transmission on ifc (flushed when
 * the burst is full and at the end of each poll; outside a poll, on a
 * link that needs no system call to send, at once: eth.c). Inline: its two
 * callers that write both headers at once (IPv4 output's direct path and a
 * prepared path) are the transmit path of every segment and datagram, and
 * the call cost more than the body. */
static inline void hp__eth_xmit(struct hp__iface *ifc, struct hp_buf *frame)
{
    if (ifc->ntx == HP__TX_BURST)
        hp__eth_flush(ifc);
    ifc->tx[ifc->ntx++] = frame;
    /* Inside hp_stack_poll frames wait for the poll's flush (eth.c). */
    if (!ifc->s->in_poll && !(hp_link_caps(ifc->link) & HP_LINK_CAP_KERNEL))
        hp__eth_flush(ifc);
}
/* One received frame, data offset at the Ethernet header. */
void hp__eth_input(struct hp__iface *ifc, struct hp_buf *b);

/* Our addresses. */
bool hp__is_local4(const struct hp__iface *ifc, const uint8_t a[4]);
/* 255.255.255.255 or the directed broadcast of one of ifc's prefixes
 * (RFC 919, RFC 1122 3.2.1.3 (c)); /31 and /32 have none (RFC 3021). */
bool hp__is_bcast4(const struct hp__iface *ifc, const uint8_t a[4]);
/* a is one of ifc's IPv6 addresses in state `preferred` (tentative ones
 * only receive NDP, RFC 4862 5.4). */
bool hp__is_local6(const struct hp__iface *ifc, const uint8_t a[16]);
/* a is one of ifc's IPv6 addresses in any state; returns it or NULL. */
struct hp__addr6 *hp__find6(struct hp__iface *ifc, const uint8_t a[16]);
/* ifc has joined the solicited-node group of one of its addresses, or all-nodes. */
bool hp__is_mcast_member6(const struct hp__iface *ifc, const uint8_t a[16]);

/* ---- neighbours (neigh.c, arp.c, ndp.c) ---------------------------------- */

int hp__neigh_init(struct hp_stack *s);
void hp__neigh_fini(struct hp_stack *s); /* frees queued packets */
/* Send b (data offset at the IPv4 / IPv6 header) to nexthop on ifc:
 * resolve the MAC (ARP / NDP), queue b meanwhile (bounded: overflow and
 * resolution failure drop and count), then hp__eth_output. Broadcast and
 * multicast destinations map directly. Consumes b. */
void hp__neigh_output4(struct hp__iface *ifc, const uint8_t nexthop[4], struct hp_buf *b);
/* The MAC of unicast nexthop when its entry can be used as it is
 * (REACHABLE or PROBE: marked used now), else NULL (hp__neigh_output4
 * does the rest: resolution, probing a STALE entry). The pointer is
 * valid until the table next changes. */
const uint8_t *hp__neigh_mac4(struct hp__iface *ifc, const uint8_t nexthop[4]);
void hp__neigh_output6(struct hp__iface *ifc, const uint8_t nexthop[16], struct hp_buf *b);
/* ARP input, data offset at the ARP header. */
void hp__arp_input(struct hp__iface *ifc, struct hp_buf *b);
/* Announce a new IPv4 address (gratuitous ARP, RFC 5227 3). */
void hp__arp_announce(struct hp__iface *ifc, const uint8_t a[4]);
/* NDP input (types 133-137), data offset at the ICMPv6 header; ip is the
 * packet's IPv6 header. */
void hp__ndp_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip);
/* Start duplicate address detection of a (RFC 4862 5.4), or mark it
 * preferred at once with HP_STACK_F_NO_DAD; then announce it (unsolicited NA). */
void hp__ndp_start_dad(struct hp__iface *ifc, struct hp__addr6 *a);

/* ---- IP (ipv4.c, ipv6.c, reasm.c, ipid.c) ----------------------------------- */

/* The stack's identification state: a random key and per-bucket counters
 * (ipid.c). 0 or -ENOMEM / getrandom's error. */
int hp__ipid_init(struct hp_stack *s);
void hp__ipid_fini(struct hp_stack *s);
/*
 * The Identification of an IPv4 datagram of protocol proto from src to dst
 * (RFC 791 3.2): per destination, from a keyed hash (RFC 7739 5.3, RFC
 * 6864 4). atomic: the caller sends it with DF set and unfragmented (RFC
 * 6864 4.1: its ID may be any value); such datagrams count apart from the
 * fragmentable ones. Whether to set DF is the caller's decision (path MTU
 * discovery for TCP, RFC 1191): this only takes it into account.
 */
uint16_t hp__ip4_ident(struct hp_stack *s, const uint8_t src[4], const uint8_t dst[4],
                       uint8_t proto, bool atomic);
/* The Identification of a fragmented IPv6 datagram (RFC 8200 4.5, RFC
 * 7739 5.3): the same per-destination scheme, 32 bits. */
uint32_t hp__ip6_frag_ident(struct hp_stack *s, const uint8_t src[16], const uint8_t dst[16],
                            uint8_t proto);

/* Where a packet to dst goes: the interface, our source address on it,
 * and the next hop (dst itself on a connected prefix, else the gateway). */
struct hp__route {
    struct hp__iface *ifc;
    uint8_t src[16];
    uint8_t nexthop[16];
};
/* 0, or -ENETUNREACH / -EHOSTUNREACH (no route; counted by the caller's
 * output call, not here). */
int hp__route4(struct hp_stack *s, const uint8_t dst[4], struct hp__route *r);
/* What hp__route4 or hp__route6 answers changed (s->route_gen). */
static inline void hp__routes_changed(struct hp_stack *s)
{
    if (++s->route_gen == 0)
        s->route_gen = 1;
}
int hp__route6(struct hp_stack *s, const uint8_t dst[16], struct hp__route *r);

void hp__ipv4_input(struct hp__iface *ifc, struct hp_buf *b);
void hp__ipv6_input(struct hp__iface *ifc, struct hp_buf *b);
/* Send an upper-layer packet (data offset at its header, checksum already
 * computed with r->src) to dst through r: the IP header goes in front,
 * fragments when larger than the MTU (IPv4: DF clear; IPv6: fragment
 * header, RFC 8200 4.5), then hp__neigh_output. Consumes b.
 * @return 0, or -ENOBUFS / -EMSGSIZE (counted). */
int hp__ipv4_output(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[4],
                    uint8_t proto, struct hp_buf *b);
int hp__ipv6_output(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[16],
                    uint8_t next, struct hp_buf *b);
/* The same with per-packet choices (TCP's): HP__IP_DF sends an IPv4 datagram
 * with Don't Fragment (RFC 1191; an atomic datagram, RFC 6864), refused with
 * -EMSGSIZE (counted IP_FRAG_FAILS) when larger than the MTU; HP__IP_ECT0
 * marks it ECN-capable, ECT(0) (RFC 3168 5). */
#define HP__IP_DF   0x1u
#define HP__IP_ECT0 0x2u
/* The next hop is a unicast address (TCP's: checked at connect and
 * accept), so that IPv4 output may take the MAC cached for it and write
 * both headers at once (ipv4.c, out_fast). */
#define HP__IP_UNICAST 0x4u
int hp__ipv4_output_x(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[4],
                      uint8_t proto, unsigned xf, struct hp_buf *b);
int hp__ipv6_output_x(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[16],
                      uint8_t next, unsigned xf, struct hp_buf *b);

/*
 * A prepared IPv4 path: what a socket that sends to one destination again
 * and again (a UDP socket's peer) would otherwise work out per packet, made
 * once from its route. The addresses' sum serves both the IP header's
 * checksum and the upper layer's pseudo-header (hp__ip4_path_sum).
 * Good while s->route_gen is gen (hp__ip4_path_good); 0: none.
 */
struct hp__ip4_path {
    struct hp__iface *ifc;
    uint32_t gen;
    uint32_t addr_sum; /* partial sum of src and dst, as they sit in the header */
    uint16_t ttl_proto;
    bool unicast; /* the next hop resolves through the neighbour table */
    uint8_t src[4], dst[4], nexthop[4];
};
void hp__ip4_path_make(struct hp_stack *s, struct hp__ip4_path *p, const struct hp__route *r,
                       const uint8_t dst[4], uint8_t proto);
static inline bool hp__ip4_path_good(const struct hp_stack *s, const struct hp__ip4_path *p,
                                     const uint8_t src[4], const uint8_t dst[4])
{
    return p->gen == s->route_gen && memcmp(p->dst, dst, 4) == 0 && memcmp(p->src, src, 4) == 0;
}
/* The partial sum of the pseudo-header's addresses (RFC 768, RFC 9293 3.1),
 * to which the caller adds its protocol, length and header. */
static inline uint32_t hp__ip4_path_sum(const struct hp__ip4_path *p)
{
    return p->addr_sum;
}
/*
 * Send b (the upper layer's datagram, its checksum done) on a good path as
 * hp__ipv4_output would, when that is a whole datagram (within the MTU)
 * to a unicast next hop whose MAC is usable and b one buffer with headroom:
 * both headers written at once, from the path's sums. true: sent (b is the
 * stack's). false: nothing done, b still the caller's, for hp__ipv4_output.
 */
bool hp__ip4_path_send(struct hp_stack *s, const struct hp__ip4_path *p, struct hp_buf *b);

int hp__reasm_init(struct hp_stack *s);
void hp__reasm_fini(struct hp_stack *s);
/* A fragment, data offset at its IP header. Returns the whole datagram as
 * a chain, data offset at the upper-layer header, with l3_len set and the
 * first fragment's IP header in front of it (length fields fixed); or NULL
 * when more fragments are needed or the fragment was dropped (counted).
 * Consumes b. IPv6's, which also says the datagram's upper-layer protocol,
 * is hp__reasm6_ex (ip_local.h). */
struct hp_buf *hp__reasm4(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv4_repr *ip);

/* ---- ICMP (icmp.c, icmp6.c) ------------------------------------------------- */

/* Data offset at the ICMP header; src/dst of the IP header. */
void hp__icmp4_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv4_repr *ip);
void hp__icmp6_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip);
/* Send an error about `orig` (data offset anywhere after its IP header,
 * l3_len set so the IP header is found at data - l3_len), rate limited.
 * Does NOT consume orig. Never about an ICMP error, a fragment other than
 * the first, or a multicast/broadcast (RFC 1122 3.2.2, RFC 4443 2.4(e)). */
void hp__icmp4_error(struct hp__iface *ifc, const struct hp_buf *orig, uint8_t type, uint8_t code,
                     uint32_t info);
void hp__icmp6_error(struct hp__iface *ifc, const struct hp_buf *orig, uint8_t type, uint8_t code,
                     uint32_t info);

/* ---- the sock layer (src/sock) -------------------------------------------- */

int hp__sock_init(struct hp_stack *s);
void hp__sock_fini(struct hp_stack *s); /* closes every socket */
/* A UDP datagram, data offset at the UDP header, l3_len set; src and dst
 * of the IP header (4 or 16 bytes by family). Closed port: ICMP port
 * unreachable (unless multicast/broadcast). Consumes b. */
void hp__udp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src,
                   const uint8_t *dst);
/* An ICMP error says a datagram we sent was too big for a link on its
 * way (IPv4 fragmentation needed, RFC 1191; ICMPv6 Packet Too Big, RFC
 * 8201) and it was TCP (src/sock/tcp_pmtu.c): src and dst are the quoted
 * IP header's addresses (ours first), tcp the quoted TCP header with tlen
 * bytes of it (at least 8), mtu the MTU reported (0 from an old router),
 * tot_len the quoted datagram's length. Nothing is consumed. */
void hp__tcp_icmp_too_big(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                          const uint8_t *tcp, size_t tlen, uint32_t mtu, uint32_t tot_len);
/* A TCP segment, data offset at the TCP header, l3_len set (src/sock/tcp_input.c). Consumes b. */
void hp__tcp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src,
                   const uint8_t *dst);
/* Early demultiplexing of a receive burst (src/sock/tcp_input.c). When
 * hp__tcp_early_on() (enough connections: hp_tcp_config.early_demux_conns),
 * hp_stack_poll peeks at the frames a few ahead of the one it processes:
 * hp__tcp_early() for one that looks like a TCP segment (local = its
 * destination) hashes its 4-tuple and starts loading the table bucket;
 * hp__tcp_early_step(), before each frame, starts loading the hot lines of
 * the connections the next few buckets name; hp__tcp_input() uses the hash
 * when the tuple it parses equals the peeked one. hp__tcp_early_end()
 * forgets the burst. */
bool hp__tcp_early_on(const struct hp_stack *s);
void hp__tcp_early(struct hp_stack *s, const struct hp_buf *b, int family, const uint8_t *laddr,
                   uint16_t lport, const uint8_t *raddr, uint16_t rport);
void hp__tcp_early_step(struct hp_stack *s);
void hp__tcp_early_end(struct hp_stack *s);
/* The same for UDP datagrams (src/sock/udp.c), from as many bound sockets
 * as early_demux_conns: hp__udp_early() notes frame k's destination port
 * and starts loading its port-table chain head; hp__udp_early_step(s, k)
 * then starts loading the socket that chain begins with (a guess: the
 * lookup decides); hp__udp_early_end() forgets the burst's first n frames. */
bool hp__udp_early_on(const struct hp_stack *s);
void hp__udp_early(struct hp_stack *s, unsigned k, uint16_t dport);
void hp__udp_early_step(struct hp_stack *s, unsigned k);
void hp__udp_early_end(struct hp_stack *s, unsigned n);
/* At the start of each poll: arm the delayed ACKs still owed since the
 * last one (src/sock/tcp_timer.c). */
void hp__tcp_poll_begin(struct hp_stack *s);
/* The earliest deadline among them, 0 when there are none. */
uint64_t hp__tcp_pending_due(const struct hp_stack *s);

#endif
