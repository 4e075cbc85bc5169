/* SPDX-License-Identifier: BSD-3-Clause */
/* Compile-time checks of struct hp_tcp_sock's cache-line groups (docs/cachelines/hp_tcp_sock.md). */
#include <stdalign.h>

#include "tcp_layout.h"

#define T struct hp_tcp_sock

/* Allocated with aligned_alloc(64) (hp__tcp_conn_new): line n of the block
 * is line n in memory. Both layouts. */
_Static_assert(alignof(T) == HP_CACHELINE_SIZE, "hp_tcp_sock must be cache-line aligned");
_Static_assert(sizeof(T) % HP_CACHELINE_SIZE == 0, "hp_tcp_sock must be whole cache lines");
/* The map entry is at the start of the block (and of line 0). */
_Static_assert(offsetof(T, key) == 0, "hp_tcp_sock.key must come first");

#if !(defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO)

/* demux: line 0 is the map entry plus what a lookup hit reads next. */
_Static_assert(HP__GROUP_BEGIN_OFF(T, demux) == 0, "group demux must start the block");
HP_CACHELINE_ASSERT_GROUP_LINES(T, demux, 1);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, key);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, s);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, state);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, rcv_wscale);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, flags);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, via_gw);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, rtx_count);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, ka_probes);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, persist_shift);

/* tx: what only the transmit path touches. */
HP_CACHELINE_ASSERT_GROUP_LINES(T, tx, 2);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, ifx);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, last_send_ns);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, rtx_tdue);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, bytes_sent);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, segs_out);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, err);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, sndbuf);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, tx, rcv_wnd);

/* rxtx: both paths. */
HP_CACHELINE_ASSERT_GROUP_LINES(T, rxtx, 4);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, snd_una);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, snd_nxt);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, snd_max);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, snd_wnd);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rcv_nxt);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rcv_adv);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, last_ack_sent);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, demux, segs_unacked);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rmss);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, mss_eff);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, ts_recent);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, ts_offset);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, ooo_bytes);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rcvbuf);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, sndq);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rcvq);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rtx_due);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, rtt);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, cc);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rxtx, x);

/* rx: what only the receive path touches. */
HP_CACHELINE_ASSERT_GROUP_LINES(T, rx, 3);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, snd_wl1);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, snd_wl2);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, max_snd_wnd);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, smss);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, ts_recent_s);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, last_rcv_ns);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, ooo);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, ev);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, dack_tdue);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, dack_due);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, bytes_received);
HP_CACHELINE_ASSERT_GROUP_MEMBER(T, rx, segs_in);

/* The order of the groups: tx before rxtx before rx, so that each path's
 * lines are one run (the transmit path's members of rtt, cc and rcvq sit
 * before rx starts). */
_Static_assert(HP__GROUP_END_OFF(T, demux) <= HP__GROUP_BEGIN_OFF(T, tx) &&
                   HP__GROUP_END_OFF(T, tx) <= HP__GROUP_BEGIN_OFF(T, rxtx) &&
                   HP__GROUP_END_OFF(T, rxtx) <= HP__GROUP_BEGIN_OFF(T, rx),
               "hp_tcp_sock groups out of order");

#endif
