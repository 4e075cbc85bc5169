/* SPDX-License-Identifier: BSD-3-Clause */
/* The fields of struct hp_tcp_sock that each TCP fast path touches, as lists the layout checks and the tcp_layout test count cache lines with. */
#ifndef HOTPATH_SOCK_TCP_LAYOUT_H
#define HOTPATH_SOCK_TCP_LAYOUT_H

#include <stddef.h>

#include <hotpath/cacheline.h>

#include "tcp_internal.h"

/*
 * The tcp_rr fast path (docs/cachelines/hp_tcp_sock.md, which has the same
 * lists as a table, with the functions): an ESTABLISHED connection with
 * timestamps exchanging small requests and responses.
 *
 * Receive: hp__tcp_input (lookup: hp__tcp_key_eq reads the key's first 40 bytes)
 * -> hp__tcp_conn_input (PAWS, acceptability, trim) -> ts_recent_update ->
 * ack_in / ack_new (send queue drop, RTT sample, NewReno, timer stop: a store, the
 * send window) -> hp__tcp_rcv_text / in_order (receive queue, delayed ACK
 * armed) -> hp__tcp_wake -> hp__tcp_output (nothing to send), then the
 * user's hp_tcp_recv (receive queue, window update check).
 *
 * Transmit: hp_tcp_send (error, state, send queue append) -> hp__tcp_output
 * (restart after idle check, windows, Nagle) -> xmit (header, window,
 * timestamps, checksum, route, the delayed ACK it carries: a flag cleared) ->
 * hp__tcp_rtx_ensure (timer armed: rtx_tdue, the heap entry's due time).
 *
 * A member of a nested struct is named when a path touches only it
 * (rtt.rto_us); a whole struct when the path's functions touch all of it.
 * The lists are X macros: X(member designator).
 */
/* (the field lists stay one line per group) */
// clang-format off
#define HP__TCP_RX_FIELDS(X)                                                               \
    X(key.laddr) X(key.raddr) X(key.lport) X(key.rport) X(key.family) X(key.zero_)         \
    X(s) X(state) X(flags) X(snd_wscale) X(rcv_wscale)                                     \
    X(ts_recent) X(ts_recent_s) X(rcv_adv) X(rcv_nxt) X(last_rcv_ns) X(ka_probes)          \
    X(last_ack_sent) X(snd_una) X(snd_max) X(max_snd_wnd) X(snd_nxt) X(snd_wnd)            \
    X(snd_wl1) X(snd_wl2) X(sndq) X(bytes_received) X(segs_in) X(rtx_count) X(ts_offset)   \
    X(rtt) X(smss) X(cc) X(persist_shift) X(rtx_due) X(ooo) X(rcvq) X(rcvbuf) X(ooo_bytes) \
    X(rmss) X(segs_unacked) X(dack_tdue) X(dack_due) X(ev) X(mss_eff) X(x)

#define HP__TCP_TX_FIELDS(X)                                                               \
    X(err) X(state) X(flags) X(sndbuf) X(sndq) X(ifx) X(s) X(snd_una) X(snd_nxt)          \
    X(snd_max) X(last_send_ns) X(rtt.rto_us) X(snd_wnd) X(cc.cwnd) X(mss_eff)              \
    X(rcv_wscale) X(rcvq.bytes) X(ooo_bytes) X(rcvbuf) X(rcv_adv) X(rcv_nxt) X(rmss)       \
    X(key.lport) X(key.rport) X(key.laddr) X(key.raddr) X(key.family) X(ts_offset)        \
    X(ts_recent) X(via_gw) X(rcv_wnd) X(last_ack_sent) X(segs_unacked)                     \
    X(bytes_sent) X(segs_out) X(rtx_tdue) X(rtx_due) X(x)
// clang-format on

/*
 * The lines either path touches, as a constant bit set (bit l: line l of the
 * block), for prefetching them all as soon as a segment's connection is
 * known (hp__tcp_prefetch_hot).
 */
#define HP__TCP_LINES_OF(off, size)                                                                \
    ((~0ull << ((off) / HP_CACHELINE_SIZE)) &                                                      \
     (~0ull >> (63 - ((off) + (size)-1) / HP_CACHELINE_SIZE)))
#define HP__TCP_FIELD_LINES(m)                                                                     \
    | HP__TCP_LINES_OF(offsetof(struct hp_tcp_sock, m), sizeof(((struct hp_tcp_sock *)0)->m))
#define HP__TCP_HOT_LINES                                                                          \
    (0ull HP__TCP_RX_FIELDS(HP__TCP_FIELD_LINES) HP__TCP_TX_FIELDS(HP__TCP_FIELD_LINES))

/* Start loading every line of c either path touches (for writing). */
static inline void hp__tcp_prefetch_hot(const struct hp_tcp_sock *c)
{
    for (unsigned l = 0; l < sizeof *c / HP_CACHELINE_SIZE; l++)
        if ((HP__TCP_HOT_LINES >> l) & 1)
            __builtin_prefetch((const char *)c + l * HP_CACHELINE_SIZE, 1, 3);
}

/* One touched field: its offset and size in the compiled layout. */
struct hp__tcp_field_span {
    const char *name;
    size_t off, size;
};

#define HP__TCP_FIELD_SPAN(m)                                                                      \
    {#m, offsetof(struct hp_tcp_sock, m), sizeof(((struct hp_tcp_sock *)0)->m)},

/*
 * Distinct cache lines of the (64-byte aligned) block that the n fields
 * touch; lines (if not NULL, HP__TCP_MAX_LINES bits) gets the set.
 */
#define HP__TCP_MAX_LINES 64
static inline unsigned hp__tcp_lines_touched(const struct hp__tcp_field_span *f, size_t n,
                                             uint64_t *lines)
{
    uint64_t set = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t l = f[i].off / HP_CACHELINE_SIZE;
             l <= (f[i].off + f[i].size - 1) / HP_CACHELINE_SIZE && l < HP__TCP_MAX_LINES; l++)
            set |= 1ull << l;
    if (lines)
        *lines = set;
    return (unsigned)__builtin_popcountll(set);
}

#endif
