/* SPDX-License-Identifier: BSD-3-Clause */
/* Compile-time checks of the cache-line groups of struct hp_stack and struct hp__iface (docs/cachelines/hp_stack.md, hp__iface.md). */
#include "internal.h"

/* The line of a field's first and of its last byte. Both structures are
 * allocated on a line boundary (zalloc_lines in stack.c), so these are
 * lines in memory too. */
#define LINE(T, m)     (offsetof(T, m) / HP_CACHELINE_SIZE)
#define LINE_END(T, m) ((offsetof(T, m) + sizeof(((T *)0)->m) - 1) / HP_CACHELINE_SIZE)
/* Through one more macro, so that the messages name the struct, not T. */
#define GROUP_LINES(T_, g, n)  HP_CACHELINE_ASSERT_GROUP_LINES(T_, g, n)
#define GROUP_MEMBER(T_, g, m) HP_CACHELINE_ASSERT_GROUP_MEMBER(T_, g, m)
#define BEFORE(T, a, b)                                                                            \
    _Static_assert(offsetof(T, a) < offsetof(T, b), #T ": " #a " must come before " #b)

#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO

/* chrono: the declaration order the structures had before grouping (the
 * baseline the grouped layout is measured against) is kept as it was. */
BEFORE(struct hp__iface, s, index);
BEFORE(struct hp__iface, index, link);
BEFORE(struct hp__iface, link, pool);
BEFORE(struct hp__iface, pool, mac);
BEFORE(struct hp__iface, mac, mtu);
BEFORE(struct hp__iface, mtu, v4);
BEFORE(struct hp__iface, v4, n4);
BEFORE(struct hp__iface, n4, v6);
BEFORE(struct hp__iface, v6, n6);
BEFORE(struct hp__iface, n6, tx);
BEFORE(struct hp__iface, tx, ntx);

BEFORE(struct hp_stack, cfg, name);
BEFORE(struct hp_stack, name, now);
BEFORE(struct hp_stack, now, ifaces);
BEFORE(struct hp_stack, ifaces, nifaces);
BEFORE(struct hp_stack, nifaces, gw4);
BEFORE(struct hp_stack, gw4, gw6);
BEFORE(struct hp_stack, gw6, has_gw4);
BEFORE(struct hp_stack, has_gw4, has_gw6);
BEFORE(struct hp_stack, has_gw6, ipid);
BEFORE(struct hp_stack, ipid, heap);
BEFORE(struct hp_stack, heap, nheap);
BEFORE(struct hp_stack, nheap, heap_cap);
BEFORE(struct hp_stack, heap_cap, neigh4);
BEFORE(struct hp_stack, neigh4, neigh6);
BEFORE(struct hp_stack, neigh6, reasm);
BEFORE(struct hp_stack, reasm, icmp4_bucket);
BEFORE(struct hp_stack, icmp4_bucket, icmp6_bucket);
BEFORE(struct hp_stack, icmp6_bucket, sock);
BEFORE(struct hp_stack, sock, clock_fn);
BEFORE(struct hp_stack, clock_fn, clock_arg);
BEFORE(struct hp_stack, clock_arg, ctr);

#else

/* ---- struct hp__iface ---------------------------------------------------- */

#define T struct hp__iface

/* Line 0: what both IPv4 paths read, the first three IPv4 addresses
 * included (v4 is the group's last field: the others spill into line 1). */
_Static_assert(HP__GROUP_BEGIN_OFF(T, tx_ro) == 0, "hp__iface: group tx_ro must start the struct");
GROUP_LINES(T, tx_ro, 1);
GROUP_MEMBER(T, tx_ro, pool);
GROUP_MEMBER(T, tx_ro, mtu);

GROUP_LINES(T, rxtx, 2);
GROUP_MEMBER(T, rxtx, s);
GROUP_MEMBER(T, rxtx, index);
GROUP_MEMBER(T, rxtx, link);
GROUP_MEMBER(T, rxtx, mac);
GROUP_MEMBER(T, rxtx, n4);
GROUP_MEMBER(T, rxtx, n6);
GROUP_MEMBER(T, rxtx, v4);
_Static_assert(LINE_END(T, mtu) == 0 && LINE_END(T, index) == 0 && LINE_END(T, n4) == 0 &&
                   LINE_END(T, n6) == 0 && LINE_END(T, s) == 0 && LINE_END(T, link) == 0 &&
                   LINE_END(T, mac) == 0 && LINE_END(T, v4[2]) == 0,
               "hp__iface: line 0 must hold tx_ro, rxtx's scalars and v4[0..2]");

/* tx_rw: ntx and the first four slots of the burst in line 1. */
GROUP_LINES(T, tx_rw, 5);
GROUP_MEMBER(T, tx_rw, ntx);
GROUP_MEMBER(T, tx_rw, tx);
_Static_assert(LINE(T, ntx) == 1 && LINE(T, tx[0]) == 1 && LINE_END(T, tx[3]) == 1,
               "hp__iface: ntx and tx[0..3] must share line 1");

/* addr6: an address is one line's worth (its DAD timer and back pointer
 * included); what the paths read of it (addr, plen, state: the bytes
 * before dad_left) must not straddle two lines. */
GROUP_LINES(T, addr6, 9);
GROUP_MEMBER(T, addr6, v6);
_Static_assert(
    sizeof(struct hp__addr6) == HP_CACHELINE_SIZE,
    "hp__addr6 is no longer 64 bytes: check addr6's placement (docs/cachelines/hp__iface.md)");
_Static_assert(offsetof(T, v6) % HP_CACHELINE_SIZE + offsetof(struct hp__addr6, dad_left) <=
                   HP_CACHELINE_SIZE,
               "hp__iface: an IPv6 address's addr, plen and state must sit in one line");

_Static_assert(HP__GROUP_END_OFF(T, tx_ro) <= HP__GROUP_BEGIN_OFF(T, rxtx) &&
                   HP__GROUP_END_OFF(T, rxtx) <= HP__GROUP_BEGIN_OFF(T, tx_rw) &&
                   HP__GROUP_END_OFF(T, tx_rw) <= HP__GROUP_BEGIN_OFF(T, addr6),
               "hp__iface groups out of order");

#undef T

/* ---- struct hp_stack ----------------------------------------------------- */

#define T struct hp_stack

/* Line 0: every field either IPv4 path touches but the counters and
 * cfg.default_ttl: rx, tx, rw, and rxtx up to ifaces[0] (one interface per
 * stack is the measured case; ifaces[1..7] spill into line 1). */
_Static_assert(HP__GROUP_BEGIN_OFF(T, rx) == 0, "hp_stack: group rx must start the struct");
GROUP_LINES(T, rx, 1);
GROUP_MEMBER(T, rx, clock_fn);
GROUP_MEMBER(T, rx, sock);

GROUP_LINES(T, tx, 1);
GROUP_MEMBER(T, tx, neigh4);

GROUP_LINES(T, rw, 1);
GROUP_MEMBER(T, rw, now);
GROUP_MEMBER(T, rw, heap);
GROUP_MEMBER(T, rw, nheap);
GROUP_MEMBER(T, rw, heap_cap);

GROUP_LINES(T, rxtx, 2);
GROUP_MEMBER(T, rxtx, nifaces);
GROUP_MEMBER(T, rxtx, ifaces);
_Static_assert(HP__GROUP_END_OFF(T, rw) <= HP_CACHELINE_SIZE && LINE_END(T, nifaces) == 0 &&
                   LINE_END(T, ifaces[0]) == 0,
               "hp_stack: line 0 must hold rx, tx, rw, nifaces and ifaces[0]");

/* tx_more: IPv6's neighbour table and the gateways, in lines 1-2. */
GROUP_LINES(T, tx_more, 2);
GROUP_MEMBER(T, tx_more, neigh6);
GROUP_MEMBER(T, tx_more, gw4);
GROUP_MEMBER(T, tx_more, gw6);
GROUP_MEMBER(T, tx_more, has_gw4);
GROUP_MEMBER(T, tx_more, has_gw6);

/*
 * ctr: the counter array (its order is the public enum's, so it cannot be
 * regrouped; docs/cachelines/hp_stack.md). Starting it 16 bytes into a
 * line puts ETH_IN_FRAMES and ETH_OUT_FRAMES in one line, IP_IN_RECEIVES,
 * IP_IN_DELIVERS and IP_OUT_REQUESTS in another, TCP_IN_SEGS and
 * TCP_OUT_SEGS in a third; the 16 bytes before it are cfg's last ones,
 * default_ttl (read by IP output) among them. A new counter in front of
 * these, or a field added to struct hp_stack_config, moves them: then
 * re-place (or accept and update the doc).
 */
GROUP_MEMBER(T, ctr, cfg);
GROUP_MEMBER(T, ctr, ctr);
_Static_assert(offsetof(T, cfg) + sizeof(struct hp_stack_config) == offsetof(T, ctr),
               "hp_stack: cfg must end where ctr starts");
_Static_assert(offsetof(T, ctr) % HP_CACHELINE_SIZE == 16,
               "hp_stack: ctr must start 16 bytes into a line");
_Static_assert(LINE(T, cfg.default_ttl) == LINE(T, ctr[0]),
               "hp_stack: cfg.default_ttl must share the line of ctr[0]");
_Static_assert(LINE(T, ctr[HP_CTR_ETH_IN_FRAMES]) == LINE(T, ctr[HP_CTR_ETH_OUT_FRAMES]),
               "hp_stack: the Ethernet frame counters must share a line");
_Static_assert(LINE(T, ctr[HP_CTR_IP_IN_RECEIVES]) == LINE(T, ctr[HP_CTR_IP_IN_DELIVERS]) &&
                   LINE(T, ctr[HP_CTR_IP_IN_RECEIVES]) == LINE(T, ctr[HP_CTR_IP_OUT_REQUESTS]),
               "hp_stack: the IPv4 receive / deliver / send counters must share a line");
_Static_assert(LINE(T, ctr[HP_CTR_TCP_IN_SEGS]) == LINE(T, ctr[HP_CTR_TCP_OUT_SEGS]),
               "hp_stack: the TCP segment counters must share a line");

GROUP_MEMBER(T, cold, ipid);
GROUP_MEMBER(T, cold, route_gen);
_Static_assert(LINE(T, route_gen) == LINE(T, ipid),
               "hp_stack: route_gen in ipid's line (a UDP datagram reads both)");
GROUP_MEMBER(T, cold, name);
GROUP_MEMBER(T, cold, clock_arg);
GROUP_MEMBER(T, cold, reasm);
GROUP_MEMBER(T, cold, icmp4_bucket);
GROUP_MEMBER(T, cold, icmp6_bucket);

_Static_assert(HP__GROUP_END_OFF(T, rx) <= HP__GROUP_BEGIN_OFF(T, tx) &&
                   HP__GROUP_END_OFF(T, tx) <= HP__GROUP_BEGIN_OFF(T, rw) &&
                   HP__GROUP_END_OFF(T, rw) <= HP__GROUP_BEGIN_OFF(T, rxtx) &&
                   HP__GROUP_END_OFF(T, rxtx) <= HP__GROUP_BEGIN_OFF(T, tx_more) &&
                   HP__GROUP_END_OFF(T, tx_more) <= HP__GROUP_BEGIN_OFF(T, ctr) &&
                   HP__GROUP_END_OFF(T, ctr) <= HP__GROUP_BEGIN_OFF(T, cold),
               "hp_stack groups out of order");

#undef T

#endif
