/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of TCP: the connection block, the listener's queues, and the calls between tcp.c, tcp_bufq.c, tcp_input.c, tcp_output.c and tcp_timer.c. */
#ifndef HOTPATH_SOCK_TCP_INTERNAL_H
#define HOTPATH_SOCK_TCP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <hotpath/cacheline.h>
#include <hotpath/tcp.h>

#include "internal.h"
#include "tcp_cc.h"
#include "tcp_hash.h"
#include "tcp_rtt.h"
#include "tcp_sack.h"
#include "tcp_seq.h"
#include "tcp_table.h"

/*
 * Who writes what
 * ---------------
 *   tcp.c         the API of include/hotpath/tcp.h; configuration; the
 *                 per-stack TCP state; connection allocation and freeing;
 *                 the lifecycle transitions every module calls
 *                 (hp__tcp_established, hp__tcp_drop, hp__tcp_set_state...)
 *   tcp_bufq.c    byte queues in buffers (send and receive queues)
 *   tcp_input.c   segment arrival (RFC 9293 3.10.7): checksum, parse,
 *                 demultiplexing, LISTEN (SYN queue, SYN cookies),
 *                 SYN-SENT, the checks of 3.10.7.4 with RFC 5961 and PAWS,
 *                 ACK processing (RTT, NewReno), data and out-of-order
 *                 reassembly, FIN; RSTs for segments without a connection
 *   tcp_output.c  building and sending segments: data (Nagle, SWS, cwnd,
 *                 the peer's window), SYN, SYN-ACK, FIN, ACK (delayed or
 *                 not), RST, retransmission; the receive window we offer
 *   tcp_timer.c   the timers: retransmission (RTO, SYN, persist/zero window
 *                 probe), delayed ACK, keepalive, FIN_WAIT_2, TIME_WAIT
 *
 * Sequence numbers
 * ----------------
 * RFC 9293 3.3.1 names, as fields: snd_una, snd_nxt, snd_wnd, snd_wl1,
 * snd_wl2, iss, rcv_nxt, rcv_wnd, irs. Beyond them:
 *
 *   snd_max   one past the highest sequence number ever sent. snd_nxt is
 *             where the next segment starts; after a retransmission
 *             timeout snd_nxt goes back to snd_una (go-back-N, as BSD and
 *             RFC 5681 3.1 allow) and segments below snd_max are
 *             retransmissions. Always snd_una <= snd_nxt <= snd_max.
 *   sndq      the bytes the user gave us that are not acknowledged: its
 *             first byte has sequence number sndq_seq() (iss + 1 until our
 *             SYN is acknowledged, snd_una after), sent or not.
 *   FIN       our FIN, once queued (HP__TCPF_FIN_QUEUED), takes the
 *             sequence number fin_seq() = sndq_seq() + sndq.bytes; it is
 *             sent after the last byte (HP__TCPF_FIN_SENT once snd_max
 *             covers it) and acknowledged when snd_una == fin_seq() + 1.
 *   rcv_adv   the right edge of the windows we advertised (rcv_nxt +
 *             window at the time): what the peer may send, and we accept
 *             up to it. We never move it left (RFC 9293 3.8.6.2.2: no
 *             shrinking): a later window is at least rcv_adv - rcv_nxt,
 *             but for less than one window-scale unit that the field may
 *             retract by when the buffer is full (tcp_output.c
 *             window_field, RFC 7323 Appendix F).
 *
 * Windows: snd_wnd and rcv_wnd are bytes, already scaled. snd_wscale is
 * the shift the peer asked for (applied to the window field of segments
 * we receive), rcv_wscale ours (applied to the windows we send); both 0
 * without HP__TCPF_WS_OK, and never applied to a SYN's window (RFC 7323
 * 2.2).
 *
 * MSS: smss is the largest segment the peer takes (the peer's MSS option, or
 * 536 / 1220 without one, RFC 9293 3.7.1, RFC 8200 8.3; capped by our
 * route's MTU - 40 / 60); mss_eff is the payload of a full segment we send
 * (smss minus the 12 bytes of the timestamp option when in use), the unit
 * congestion control counts in (RFC 5681 2: SMSS excludes options; with
 * smss, a loss window of one segment would split into 1448 + 12). rmss is
 * the MSS we announced: a received segment of rmss - 12 (timestamps) or
 * more is "full-sized" for the delayed ACK rule.
 *
 * Times: the stack's clock s->now, ns. Our timestamp clock (TSval) ticks
 * every ms: hp__tcp_ts_now(c) = s->now / 1e6 + c->ts_offset (a per-
 * connection random offset, RFC 7323 5.4 and 7.1).
 *
 * Buffers
 * -------
 * Every buffer a connection holds (send queue, receive queue, out-of-order
 * list) is accounted in its queue's byte count; hp__tcp_conn_free() and
 * hp__tcp_drop() free them all. A segment we send is a fresh buffer from
 * the route's interface pool (hp__alloc), with the payload copied into it:
 * the send queue keeps its bytes until they are acknowledged.
 * A received segment's buffer moves into the receive queue or the out-of-
 * order list as is (zero copy), trimmed to the new bytes; small segments
 * may be copied into the tail buffer's tailroom instead (see
 * hp__tcp_bufq_push_small) so that a stream of tiny segments does not pin
 * one pool buffer each.
 *
 * Readiness: the connection's ev; modules call hp__tcp_wake(c, HP_EV_*).
 */

struct hp__tcp_state;

/* ---- byte queues (tcp_bufq.c) ----------------------------------------------- */

/*
 * A byte stream held in a list of buffers linked through hp_buf.next (the
 * chain field: the queue is one long chain; pkt_len and nb_segs of its
 * buffers mean nothing while queued). Each buffer's bytes are its
 * [data_off, data_off + data_len). Empty buffers never stay in a queue.
 *
 * `start` is the stream offset of the first byte (bytes dropped from the
 * front so far), so positions are absolute 64-bit offsets that do not move
 * when the front is dropped.
 *
 * A cursor (struct hp__tcp_bufq_cur, kept by the caller beside the queue:
 * only the send queue has one) remembers the buffer the last copy ended in,
 * so that copying segment after segment from the middle (the transmit
 * path) does not walk from the head each time. The queue never updates it:
 * a cursor is valid while its offset is at or past `start` (the front only
 * moves forward, and a buffer that was dropped, or whose first bytes were,
 * began before `start`), so dropping and reading never touch it.
 */
struct hp__tcp_bufq {
    struct hp_buf *head, *tail;
    uint32_t bytes;           /* queued bytes */
    uint32_t nbufs;           /* buffers in the list */
    uint64_t start;           /* stream offset of head's first byte */
};

struct hp__tcp_bufq_cur {
    struct hp_buf *b;         /* a buffer of the queue if off >= start, else stale */
    uint64_t off;             /* stream offset of b's first byte */
};

void hp__tcp_bufq_init(struct hp__tcp_bufq *q);
/* Free every buffer; the queue is empty after (start moves past them). */
void hp__tcp_bufq_purge(struct hp__tcp_bufq *q);
/* Append every segment of chain b (segments with data_len 0 are freed).
 * Takes b. */
void hp__tcp_bufq_push(struct hp__tcp_bufq *q, struct hp_buf *b);
/* Append b (one segment) for the receive queue: when its data_len is at
 * most `small` and the tail buffer has that much tailroom (and is not
 * shared), the bytes are copied there and b is freed; else as push. Takes b. */
void hp__tcp_bufq_push_small(struct hp__tcp_bufq *q, struct hp_buf *b, uint32_t small);
/* Copy up to len bytes from data into the queue: into the tail buffer's
 * tailroom first (if not shared), then into new buffers from pool (whole
 * data room, data_off 0). @return bytes copied: fewer than len when the
 * pool ran out (0 if nothing). */
uint32_t hp__tcp_bufq_append(struct hp__tcp_bufq *q, struct hp_pool *pool, const void *data, uint32_t len);
/* Drop n bytes (at most q->bytes) from the front; freed buffers go back
 * to their pools. */
void hp__tcp_bufq_drop(struct hp__tcp_bufq *q, uint32_t n);
/* Copy len bytes starting at stream offset off (q->start <= off,
 * off + len <= q->start + q->bytes) to dst, using and moving the cursor
 * (NULL: walk from the head). */
void hp__tcp_bufq_copy(const struct hp__tcp_bufq *q, struct hp__tcp_bufq_cur *cur, uint64_t off, uint32_t len,
                       void *dst);
/* Copy len bytes from the front to dst and drop them (recv). len <= bytes. */
void hp__tcp_bufq_read(struct hp__tcp_bufq *q, void *dst, uint32_t len);
/* Detach the head buffer (recv_buf): the caller owns it (a one-segment
 * chain with pkt_len = data_len). NULL when empty. */
struct hp_buf *hp__tcp_bufq_pop(struct hp__tcp_bufq *q);

/* ---- the connection block --------------------------------------------------- */

/* c->flags */
#define HP__TCPF_ACK_NOW       0x00000001u /* send an ACK at the next hp__tcp_output */
#define HP__TCPF_DACK          0x00000002u /* an ACK is owed, delayed (until dack_due) */
#define HP__TCPF_NODELAY       0x00000004u /* no Nagle */
#define HP__TCPF_TS_OK         0x00000008u /* timestamps negotiated */
#define HP__TCPF_WS_OK         0x00000010u /* window scaling negotiated */
#define HP__TCPF_FIN_QUEUED    0x00000020u /* our FIN follows the send queue */
#define HP__TCPF_FIN_SENT      0x00000040u /* snd_max covers our FIN */
#define HP__TCPF_FIN_RCVD      0x00000080u /* the peer's FIN is in (rcv_nxt is past it) */
#define HP__TCPF_SHUT_RD       0x00000100u /* received data is discarded */
#define HP__TCPF_ORPHAN        0x00000200u /* the user closed the handle */
#define HP__TCPF_COOKIE        0x00000400u /* made from a SYN cookie */
#define HP__TCPF_SYN_LOST      0x00000800u /* our SYN / SYN-ACK was retransmitted */
#define HP__TCPF_KEEPALIVE     0x00001000u /* keepalive probes on */
#define HP__TCPF_QUICKACK      0x00002000u /* no delayed ACKs */
#define HP__TCPF_LINGER0       0x00004000u /* close resets */
#define HP__TCPF_IN_TABLE      0x00008000u /* key is in the connection map */
#define HP__TCPF_LISTEN_KEY    0x00010000u /* key is in the listen map */
#define HP__TCPF_WILDCARD      0x00020000u /* bound to the any address */
#define HP__TCPF_BOUND         0x00040000u /* local port chosen */
#define HP__TCPF_PERSIST       0x00080000u /* t_rtx is the persist (zero window probe) timer */
#define HP__TCPF_RTT_TIMING    0x00100000u /* rtt_seq / rtt_start time one segment (no timestamps) */
#define HP__TCPF_EOF_SEEN      0x00200000u /* the user read the end of stream */
#define HP__TCPF_ACCEPTED      0x00400000u /* handed to the user by accept (or created by open) */
#define HP__TCPF_SEND_SPACE    0x00800000u /* the user hit a full send buffer: raise OUT when room is back */
#define HP__TCPF_ACCQ          0x01000000u /* on parent's accept queue (tcp.c); with a parent and without it: on the SYN queue if linked */
#define HP__TCPF_DACK_PEND     0x02000000u /* on the stack's dack_pend list: t_dack armed at the next poll if still owed */
#define HP__TCPF_SACK_OK       0x04000000u /* SACK negotiated (RFC 2018 2): we send blocks, the peer's are used */
#define HP__TCPF_SB            0x08000000u /* the transmit log (tcp_sack.c) exists: sends go in it, ACKs update it */
#define HP__TCPF_SB_LOSS       0x10000000u /* SACKed or lost segments, recovery, a probe out: the slow paths run */
#define HP__TCPF_SACK_OUT      0x20000000u /* out-of-order data or a D-SACK to report: ACKs carry SACK blocks */
#define HP__TCPF_ECN_OK        0x40000000u /* ECN negotiated (RFC 3168 6.1.1) */
#define HP__TCPF_ECN_PEND      0x80000000u /* an ECE to echo or a CWR to send (c->ecn says which) */

/*
 * The connection block's fields, in blocks of fields that share both their
 * place in RFC 9293 3.3.1's story (and its companions') and their access on
 * the fast path (docs/cachelines/hp_tcp_sock.md has the table). Each field
 * is declared once, here; the struct below emits the blocks in one of two
 * orders:
 *
 *   grouped (the default)  by access, in the cache-line groups `demux`
 *                          (line 0: the map entry and what a lookup hit
 *                          reads next), `tx` (only the transmit path),
 *                          `rxtx` (both paths), `rx` (only the receive
 *                          path), then the cold fields;
 *   chrono (-DHP_LAYOUT_CHRONO=1)  the logical order the fields had before
 *                          grouping (RFC order), the baseline the grouped
 *                          layout is measured against (hotpath layout, the
 *                          tcp_layout test).
 *
 * Tag in each block's name: its group. The fast path measured is the
 * tcp_rr one: an ESTABLISHED connection with timestamps exchanging small
 * requests and responses (receive: hp__tcp_input .. hp__tcp_output, then
 * hp_tcp_recv; transmit: hp_tcp_send .. xmit).
 */
struct hp__tcp_ctr_rx { uint64_t bytes_acked, bytes_received, segs_in; };
struct hp__tcp_ctr_tx { uint64_t bytes_sent, segs_out; };
struct hp__tcp_ctr {     /* the rare ones */
    uint64_t retrans_segs;
    uint32_t fast_retrans, timeouts, dupacks_in;
    uint32_t tlp_probes, dsacks_in, spurious_undos;
    uint32_t ecn_ce_in, ecn_reductions, pmtu_probes;
};

/* demux: the map entry, then what the receive path reads right after a hit
 * and the transmit path reads first. */
#define HP__TCPS_ID_demux                                                                  \
    struct hp__tcp_key key;      /* first: the entry of the connection or listen map */    \
    struct hp_stack *s;                                                                    \
    uint8_t state;               /* enum hp_tcp_state */                                   \
    uint8_t family;              /* 4 or 6 */                                              \
    uint8_t snd_wscale, rcv_wscale;                                                        \
    uint32_t flags;              /* HP__TCPF_* */

/* send sequence space */
#define HP__TCPS_ISS_cold uint32_t iss;
#define HP__TCPS_SND_rxtx uint32_t snd_una, snd_nxt, snd_max, snd_wnd;
#define HP__TCPS_SNDWL_rx                                                                  \
    uint32_t snd_wl1, snd_wl2;                                                             \
    uint32_t max_snd_wnd;        /* largest window the peer offered (RFC 5961 5.2; sender SWS, RFC 9293 3.8.6.2.1) */ \
    uint16_t smss;
#define HP__TCPS_MSSEFF_rxtx uint16_t mss_eff;
#define HP__TCPS_RMSS_rxtx uint16_t rmss;
#define HP__TCPS_RTXCNT_rx                                                                 \
    uint8_t rtx_count;           /* consecutive retransmissions by timer of the same segment (R2 counter) */ \
    uint8_t ka_probes;           /* keepalive probes unanswered */

/* receive sequence space */
#define HP__TCPS_IRS_cold uint32_t irs;
#define HP__TCPS_RCVNXT_rxtx uint32_t rcv_nxt;
#define HP__TCPS_RCVWND_tx uint32_t rcv_wnd;
#define HP__TCPS_RCVADV_rxtx                                                               \
    uint32_t rcv_adv;                                                                      \
    uint32_t last_ack_sent;      /* RCV.NXT in the last segment we sent (RFC 7323 4.3 TS.Recent rule) */ \
    uint16_t segs_unacked;       /* full-sized segments received since our last ACK */

/* timestamps (RFC 7323) */
#define HP__TCPS_TS_rxtx uint32_t ts_recent; uint32_t ts_offset;
#define HP__TCPS_TSNS_rx uint64_t ts_recent_ns; /* when ts_recent was set (PAWS idle rule, 5.5) */

/* RTT and congestion control */
#define HP__TCPS_RTTCC_rxtx struct hp__tcp_rtt rtt; struct hp__tcp_cc cc;
#define HP__TCPS_RTTSEQ_cold                                                               \
    uint32_t rtt_seq;            /* without timestamps: the segment being timed ends here */ \
    uint64_t rtt_start_ns;
#define HP__TCPS_LASTSEND_tx uint64_t last_send_ns; /* last time we sent data (RFC 5681 4.1 restart after idle) */
#define HP__TCPS_LASTRCV_rx uint64_t last_rcv_ns;   /* last time a segment arrived (keepalive idle) */

/* queues */
#define HP__TCPS_QUEUES_rxtx                                                               \
    struct hp__tcp_bufq sndq;    /* unacknowledged user bytes, sent and unsent */          \
    struct hp__tcp_bufq rcvq;    /* in-order bytes not yet read */
#define HP__TCPS_SNDCUR_tx struct hp__tcp_bufq_cur sndcur; /* where the last copy from sndq ended */
#define HP__TCPS_OOO_rx                                                                    \
    struct hp_buf *ooo;          /* out-of-order segments, sorted by sequence, not overlapping; linked \
                                  * through next; each buffer's starting sequence number in its `reserved` field */
#define HP__TCPS_OOON_cold uint32_t ooo_n;
#define HP__TCPS_OOOBYTES_rxtx uint32_t ooo_bytes;
#define HP__TCPS_SNDBUF_tx uint32_t sndbuf; /* limit in bytes on sndq.bytes */
#define HP__TCPS_RCVBUF_rxtx uint32_t rcvbuf; /* limit in bytes on rcvq.bytes + ooo_bytes */

/* timers (tcp_timer.c) */
#define HP__TCPS_TRTX_cold struct hp__timer t_rtx; /* retransmission, SYN, or persist (HP__TCPF_PERSIST) */
#define HP__TCPS_TDACK_cold struct hp__timer t_dack; /* delayed ACK */
#define HP__TCPS_RTXTDUE_tx uint64_t rtx_tdue;   /* due time of t_rtx's heap entry, 0 when not in the heap (tcp_timer.c) */
#define HP__TCPS_DACKTDUE_rx uint64_t dack_tdue; /* due time of t_dack's heap entry, 0 when not in the heap */
#define HP__TCPS_DACKDUE_rx uint64_t dack_due; /* when the pending delayed ACK is due: t_dack may be armed earlier (lazy) */
#define HP__TCPS_TMISC_cold struct hp__timer t_misc; /* keepalive, FIN_WAIT_2, TIME_WAIT */
#define HP__TCPS_RTXDUE_rxtx uint64_t rtx_due; /* when t_rtx should fire, 0 when stopped: t_rtx may be armed earlier or stale (lazy restart and stop) */
#define HP__TCPS_PERSIST_rx uint8_t persist_shift; /* persist timer back-off (zeroed by every rtx_stop) */
#define HP__TCPS_KA_cold uint32_t ka_idle_s, ka_intvl_s, ka_cnt;

/* SACK blocks we send (tcp_ooo.c, RFC 2018 4, RFC 2883) */
#define HP__TCP_SACK_RECENT 4
struct hp__tcp_sackrx {
    uint32_t recent[HP__TCP_SACK_RECENT]; /* first sequence numbers of the latest out-of-order arrivals, newest first */
    uint32_t dsack[2];           /* a duplicate to report once, [left, right) */
    uint8_t nrecent;
    bool dsack_pend;
};
#define HP__TCPS_SACKRX_cold struct hp__tcp_sackrx sackrx;
/* the sender's transmit log and scoreboard, RACK-TLP, PRR (tcp_sack.h) */
#define HP__TCPS_SB_cold struct hp__tcp_sb sb;
/* ECN (RFC 3168 6.1) */
struct hp__tcp_ecn {
    bool ece_owed;               /* a CE arrived: our ACKs carry ECE until the peer's CWR */
    bool cwr_owed;               /* we reduced for an ECE: the next new data carries CWR */
    bool recover_on;
    uint32_t recover;            /* one reduction per window: ECEs before SND.UNA passes this are one event */
};
#define HP__TCPS_ECN_cold struct hp__tcp_ecn ecn;
/* path MTU (tcp_pmtu.c, RFC 1191, RFC 8201, RFC 4821) */
struct hp__tcp_plpmtud {         /* RFC 4821 7: the search for a larger MTU */
    uint16_t low, high;          /* the MTU known to work, the smallest known not to (or the link's + 1) */
    uint16_t probe;              /* the probe's MTU while one is out */
    bool probe_out;
    uint32_t probe_end;          /* the probe's end in sequence space */
};
#define HP__TCPS_PMTU_cold                                                                 \
    uint16_t pmtu;               /* the path MTU our segments are sized for (the route's MTU at first) */ \
    uint16_t peer_mss;           /* the MSS the peer announced (or its default) */         \
    struct hp__tcp_plpmtud plp;

/* congestion control's cold state: CUBIC, HyStart++, undo (tcp_cc.h) */
#define HP__TCPS_CCX_cold                                                                  \
    struct hp__tcp_cubic cubic;                                                            \
    uint8_t cc_algo;             /* HP__TCP_CC_*: the algorithm this socket uses (set at open, HP_TCP_OPT_CC) */

/* the route our segments take (chosen at connect / accept; its source
 * address is key.laddr: hp__tcp_route) */
#define HP__TCPS_RT_tx                                                                     \
    struct hp__iface *ifc;                                                                 \
    uint8_t nexthop[16];

/* the user side */
#define HP__TCPS_EV_rx struct hp__sock_ev ev;
#define HP__TCPS_ERR_tx int err; /* pending error (-errno), 0 if none */

/* listener queues: a listener's own; a connection's links into its parent's */
#define HP__TCPS_LISTEN_cold                                                               \
    struct hp_tcp_sock *parent;  /* the listener of a connection not yet accepted */       \
    struct hp_tcp_sock *qnext, *qprev; /* in parent's syn or accept list */                \
    struct hp__tcp_listenq *lq;  /* a listener's queues (NULL for a connection) */         \
    struct hp_tcp_sock *anext, *aprev; /* every TCP socket of the stack (teardown) */

/* hp_tcp_get_info's counters, by the path that counts them */
#define HP__TCPS_CTRRX_rx struct hp__tcp_ctr_rx st_rx;
#define HP__TCPS_CTRTX_tx struct hp__tcp_ctr_tx st_tx;
#define HP__TCPS_CTR_cold struct hp__tcp_ctr st;

struct hp_tcp_sock {
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    HP__TCPS_ID_demux
    HP__TCPS_ISS_cold HP__TCPS_SND_rxtx HP__TCPS_SNDWL_rx HP__TCPS_MSSEFF_rxtx HP__TCPS_RMSS_rxtx
    HP__TCPS_RTXCNT_rx
    HP__TCPS_IRS_cold HP__TCPS_RCVNXT_rxtx HP__TCPS_RCVWND_tx HP__TCPS_RCVADV_rxtx
    HP__TCPS_TS_rxtx HP__TCPS_TSNS_rx
    HP__TCPS_RTTCC_rxtx HP__TCPS_RTTSEQ_cold HP__TCPS_LASTSEND_tx HP__TCPS_LASTRCV_rx
    HP__TCPS_QUEUES_rxtx HP__TCPS_SNDCUR_tx HP__TCPS_OOO_rx HP__TCPS_OOON_cold HP__TCPS_OOOBYTES_rxtx
    HP__TCPS_SNDBUF_tx HP__TCPS_RCVBUF_rxtx
    HP__TCPS_TRTX_cold HP__TCPS_TDACK_cold HP__TCPS_TMISC_cold HP__TCPS_RTXDUE_rxtx HP__TCPS_DACKDUE_rx
    HP__TCPS_RTXTDUE_tx HP__TCPS_DACKTDUE_rx HP__TCPS_PERSIST_rx HP__TCPS_KA_cold
    HP__TCPS_RT_tx
    HP__TCPS_EV_rx HP__TCPS_ERR_tx
    HP__TCPS_LISTEN_cold
    HP__TCPS_CTRRX_rx HP__TCPS_CTRTX_tx HP__TCPS_CTR_cold
    HP__TCPS_CCX_cold HP__TCPS_SACKRX_cold HP__TCPS_SB_cold HP__TCPS_PMTU_cold HP__TCPS_ECN_cold
#else
    HP_CACHELINE_GROUP_BEGIN(demux)   /* line 0: both paths read it */
    HP__TCPS_ID_demux
    HP_CACHELINE_GROUP_END(demux)

    HP_CACHELINE_GROUP_BEGIN(tx)      /* only the transmit path */
    HP__TCPS_RT_tx HP__TCPS_LASTSEND_tx HP__TCPS_CTRTX_tx HP__TCPS_RTXTDUE_tx HP__TCPS_SNDCUR_tx
    HP__TCPS_ERR_tx HP__TCPS_SNDBUF_tx HP__TCPS_RCVWND_tx
    HP_CACHELINE_GROUP_END(tx)

    HP_CACHELINE_GROUP_BEGIN(rxtx)    /* both paths; rcvq, rtt and cc last: the transmit path reads only rcvq.bytes, rtt.rto_us and cc.cwnd */
    HP__TCPS_SND_rxtx HP__TCPS_RCVNXT_rxtx HP__TCPS_RCVADV_rxtx HP__TCPS_RMSS_rxtx HP__TCPS_MSSEFF_rxtx
    HP__TCPS_TS_rxtx HP__TCPS_OOOBYTES_rxtx HP__TCPS_RCVBUF_rxtx
    HP__TCPS_RTXDUE_rxtx HP__TCPS_QUEUES_rxtx HP__TCPS_RTTCC_rxtx
    HP_CACHELINE_GROUP_END(rxtx)

    HP_CACHELINE_GROUP_BEGIN(rx)      /* only the receive path */
    HP__TCPS_SNDWL_rx HP__TCPS_RTXCNT_rx HP__TCPS_PERSIST_rx HP__TCPS_TSNS_rx
    HP__TCPS_LASTRCV_rx HP__TCPS_DACKDUE_rx HP__TCPS_DACKTDUE_rx HP__TCPS_OOO_rx HP__TCPS_EV_rx HP__TCPS_CTRRX_rx
    HP_CACHELINE_GROUP_END(rx)

    /* cold: the handshake, listeners, keepalive, the timers themselves, rare counters */
    HP__TCPS_ISS_cold HP__TCPS_IRS_cold HP__TCPS_OOON_cold HP__TCPS_RTTSEQ_cold
    HP__TCPS_KA_cold HP__TCPS_TRTX_cold HP__TCPS_TDACK_cold HP__TCPS_TMISC_cold HP__TCPS_LISTEN_cold HP__TCPS_CTR_cold
    HP__TCPS_CCX_cold HP__TCPS_SACKRX_cold HP__TCPS_SB_cold HP__TCPS_PMTU_cold HP__TCPS_ECN_cold
#endif
} __attribute__((aligned(HP_CACHELINE_SIZE))); /* allocated with aligned_alloc(64) by hp__tcp_conn_new */

/* A listener's queues. Connections in SYN_RECEIVED sit on syn (count
 * nsyn); established, not yet accepted ones on acc (count nacc). Both are
 * bounded by backlog. */
struct hp__tcp_listenq {
    uint32_t backlog;
    uint32_t nsyn, nacc;
    struct hp_tcp_sock *syn_head;              /* doubly linked through qnext/qprev */
    struct hp_tcp_sock *acc_head, *acc_tail;   /* FIFO through qnext/qprev */
};

/* The stack's TCP state (s->sock->tcp). */
/* Connection blocks (tcp_block.c): from 2 MiB chunks advised for
 * transparent huge pages, freed blocks reused LIFO, the chunks unmapped at
 * fini. */
struct hp__tcp_blocks {
    size_t size;              /* one block: sizeof(struct hp_tcp_sock), rounded up to 64 */
    void *free;               /* freed blocks, linked through their first word */
    uint8_t *next, *end;      /* the newest chunk's part never handed out */
    void **chunks;
    uint32_t nchunks, cap;
    uint32_t nlive;           /* blocks handed out and not freed */
};
void hp__tcp_blocks_init(struct hp__tcp_blocks *b, size_t size);
/* A block of b->size bytes, 64-byte aligned, contents undefined; NULL when
 * out of memory. */
void *hp__tcp_block_alloc(struct hp__tcp_blocks *b);
void hp__tcp_block_free(struct hp__tcp_blocks *b, void *p);
/* Unmap every chunk (blocks still handed out go with them). */
void hp__tcp_blocks_fini(struct hp__tcp_blocks *b);

struct hp__tcp_state {
    struct hp_tcp_config cfg;     /* defaults filled in */
    struct hp__tcp_rtt_cfg rtt_cfg; /* cfg's RTO bounds, for the estimators */
    struct hp__tcp_table *table;
    struct hp__tcp_secret secret; /* ISNs, cookies, timestamp offsets */
    struct hp_tcp_sock *all;      /* every TCP socket (anext/aprev) */
    uint32_t nconns;              /* sockets allocated (any state) */
    struct hp__bucket challenge;  /* RFC 5961 7: challenge ACK rate limit */
    /* Delayed ACKs owed since the last poll began (tcp_timer.c): armed at
     * the next one unless the application's reply carried them first. */
    struct hp_tcp_sock **dack_pend;
    uint32_t ndack_pend, dack_pend_cap;
    uint64_t dack_pend_due; /* the first one's deadline, the earliest */
    struct hp__tcp_blocks blocks; /* every hp_tcp_sock of the stack */
    /* Early demultiplexing of the receive burst being processed
     * (tcp_input.c): the peeked tuples and their hashes, in burst order. */
    struct hp__tcp_hint {
        struct hp__tcp_key k; /* hash field unused */
        const struct hp_buf *b;
        uint64_t h;
    } hint[HP__RX_BURST];
    uint32_t nhint, hint_at, lines_at;
    uint64_t early_hits; /* lookups that used a peeked hash (tests) */
};

static inline struct hp__tcp_state *hp__tcp(struct hp_stack *s)
{
    return s->sock->tcp;
}

/* The route of c's segments: its interface and next hop, from key.laddr. */
static inline void hp__tcp_route(const struct hp_tcp_sock *c, struct hp__route *rt)
{
    rt->ifc = c->ifc;
    memcpy(rt->src, c->key.laddr, sizeof rt->src);
    memcpy(rt->nexthop, c->nexthop, sizeof rt->nexthop);
}

static inline const struct hp__tcp_rtt_cfg *hp__tcp_rtt_cfg_of(const struct hp_tcp_sock *c)
{
    return &hp__tcp(c->s)->rtt_cfg;
}

static inline uint32_t hp__tcp_ts_now(const struct hp_tcp_sock *c)
{
    return (uint32_t)(c->s->now / 1000000u) + c->ts_offset;
}
static inline uint32_t hp__tcp_sndq_seq(const struct hp_tcp_sock *c)
{
    /* Our SYN is unacknowledged exactly in SYN_SENT and SYN_RECEIVED (a
     * test of snd_una == iss would misfire after 2^32 bytes). */
    return c->state == HP_TCP_SYN_SENT || c->state == HP_TCP_SYN_RECEIVED ? c->iss + 1 : c->snd_una;
}
/* Meaningful until our FIN is acknowledged (after that, sndq_seq has moved past it). */
static inline uint32_t hp__tcp_fin_seq(const struct hp_tcp_sock *c)
{
    return hp__tcp_sndq_seq(c) + c->sndq.bytes;
}
/* Room in the send buffer worth an HP_EV_OUT: a quarter of it, at least
 * one segment (waking a bulk sender for a few bytes costs more than it
 * gains; poll and the wake-up on ACKs use the same rule). */
static inline bool hp__tcp_send_room_ok(const struct hp_tcp_sock *c)
{
    uint32_t want = c->sndbuf / 4 > c->smss ? c->sndbuf / 4 : c->smss;
    return c->sndq.bytes <= c->sndbuf && c->sndbuf - c->sndq.bytes >= want;
}
static inline bool hp__tcp_synchronized(const struct hp_tcp_sock *c)
{
    return c->state >= HP_TCP_ESTABLISHED;
}

/* xmit sent [seq, end) on a SACK connection (tcp_sack.h): the bulk
 * sender's new segment goes straight into the log, the first segment into
 * an empty flight nowhere; the rest in tcp_sack.c. */
static inline void hp__tcp_sb_sent(struct hp_tcp_sock *c, uint32_t seq, uint32_t end)
{
    struct hp__tcp_sb *sb = &c->sb;
    if (seq == c->snd_max && !(c->flags & HP__TCPF_SB_LOSS)) {
        /* Once a connection has its log, every segment goes in: a bulk
         * sender's flight empties and fills again all the time. */
        if ((c->flags & HP__TCPF_SB) && sb->n < sb->cap && (sb->n || c->snd_una == seq)) {
            uint64_t now = c->s->now;
            if (sb->n) {
                struct hp__tcp_txseg *l = &sb->seg[(sb->head + sb->n - 1) & (sb->cap - 1)];
                if (l->xmit_ns == now && l->end == seq && !l->flags) {
                    l->end = end; /* sent together: one entry (tcp_sack.c, a run) */
                    return;
                }
            }
            struct hp__tcp_txseg *e = &sb->seg[(sb->head + sb->n) & (sb->cap - 1)];
            e->seq = seq;
            e->end = end;
            e->xmit_ns = now;
            e->flags = 0;
            sb->n++;
            return;
        }
        if (!(c->flags & HP__TCPF_SB) && c->snd_una == seq) {
            /* (The flag, not sb->n: a request/response flow never reads
             * the log's cold line.) */
            c->last_send_ns = c->s->now; /* the time a later entry for it takes */
            return;
        }
    }
    hp__tcp_sb_sent_slow(c, seq, end);
}

/* What congestion control is told at an event of c (tcp_cc.h). rtt_us: a
 * sample from this ACK (0: none); flight: bytes outstanding before it. */
static inline struct hp__tcp_cc_ev hp__tcp_cc_ev(const struct hp_tcp_sock *c, uint32_t rtt_us, uint32_t flight)
{
    struct hp__tcp_cc_ev ev = {
        .snd_una = c->snd_una,
        .snd_max = c->snd_max,
        .smss = c->mss_eff,
        .now_ns = c->s->now,
        .rtt_us = rtt_us,
        .srtt_us = hp__tcp_rtt_srtt_us(&c->rtt),
        .flight = flight,
    };
    return ev;
}

/* ---- tcp.c: lifecycle -------------------------------------------------------- */

int hp__tcp_init(struct hp_stack *s);      /* from hp__sock_init */
void hp__tcp_fini(struct hp_stack *s);     /* from hp__sock_fini: frees every socket, sends nothing */

/* A new connection block for the stack: defaults from the config (buffers,
 * keepalive, rto via hp__tcp_rtt_init), timers initialised, on the `all`
 * list, state CLOSED, not in any map. NULL (counted in
 * TCP_CONN_LIMIT_DROPS) at max_conns, or on ENOMEM. */
struct hp_tcp_sock *hp__tcp_conn_new(struct hp_stack *s, int family);
/* Free a connection block: out of its map and its parent's queue, timers
 * cancelled, every queued buffer freed, off the ready list. */
void hp__tcp_conn_free(struct hp_tcp_sock *c);
/* Move to a state (for the record; the only place state changes, so
 * tests and tracing can hook it). */
void hp__tcp_set_state(struct hp_tcp_sock *c, enum hp_tcp_state st);
/* The handshake completed (SYN_SENT or SYN_RECEIVED -> ESTABLISHED, or a
 * cookie connection born established): for a passive one, moves it from
 * its listener's SYN queue to the accept queue (or, if that is full,
 * returns -ENOSPC and the caller drops the ACK, counted in
 * TCP_LISTEN_OVERFLOWS: the connection stays in SYN_RECEIVED); raises
 * HP_EV_IN on the listener; for an active one, HP_EV_OUT on c. Starts
 * congestion control (hp__tcp_cc_init) and the keepalive timer.
 * @return 0 or -ENOSPC. */
int hp__tcp_established(struct hp_tcp_sock *c);
/* The connection is over without a proper close: reset received, retries
 * exhausted, keepalive failed, aborted. Cancels timers, purges the queues,
 * removes it from the connection map, state CLOSED, c->err = err (a
 * negative errno: -ECONNRESET, -ECONNREFUSED, -ETIMEDOUT...), raises
 * HP_EV_ERR | HP_EV_HUP | HP_EV_IN. Frees c at once when the user holds
 * no handle (orphan, or not yet accepted). Sends nothing: callers that
 * owe a RST send it first. Counts TCP_ESTAB_RESETS / TCP_ATTEMPT_FAILS. */
void hp__tcp_drop(struct hp_tcp_sock *c, int err);
/* The connection closed in order (LAST_ACK acknowledged, TIME_WAIT
 * expired, CLOSING/FIN_WAIT_2 orphan timeout): state CLOSED, out of the
 * map, HP_EV_HUP; freed if orphaned. */
void hp__tcp_closed(struct hp_tcp_sock *c);
/* Debug builds (HP_DEBUG): HP_ASSERT the invariants this file states
 * (snd_una <= snd_nxt <= snd_max, queue counts, the out-of-order list,
 * the scoreboard's counters); nothing otherwise. */
void hp__tcp_check(const struct hp_tcp_sock *c);
/* Raise events on c (no-op for an orphan or a connection not yet accepted). */
void hp__tcp_wake(struct hp_tcp_sock *c, uint32_t events);
/*
 * Give a new connection block its 4-tuple (local = our address, which must
 * be one of ours, never the any address): fills c->key and c->family,
 * finds the route to raddr (c->rt, with rt.src forced to laddr), derives
 * rmss (from the route's MTU or cfg.mss / MAXSEG: MTU - 40 for IPv4,
 * - 60 for IPv6), a provisional smss = min(rmss, 536 or 1220), rcv_wscale
 * (the smallest shift that lets rcvbuf fit the 16-bit field, 0 with
 * no_window_scaling), iss (hp__tcp_isn) and ts_offset (hp__tcp_hash with
 * HP__TCP_HASH_TS), and inserts c in the connection map (IN_TABLE).
 * Used by connect (tcp.c) and by a SYN or cookie ACK arriving at a
 * listener (tcp_input.c).
 * @return 0, -EEXIST (the tuple is taken), -ENOSPC (map full),
 *         -EHOSTUNREACH (no route).
 */
int hp__tcp_conn_attach(struct hp_tcp_sock *c, int family, const uint8_t *laddr, uint16_t lport,
                        const uint8_t *raddr, uint16_t rport);

/* ---- tcp_input.c ------------------------------------------------------------- */

/* A received segment, data offset at the TCP header, l3_len set; src/dst
 * of the IP header (4 or 16 bytes). Consumes b. Counted: TCP_IN_SEGS and
 * the drop reasons. */
void hp__tcp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src,
                   const uint8_t *dst);
/* Free c's out-of-order list (from hp__tcp_conn_free / hp__tcp_drop). */
void hp__tcp_ooo_purge(struct hp_tcp_sock *c);
/* tcp_ooo.c: the SACK blocks our next ACK carries (at most max; SACK_OK
 * connections): a pending D-SACK first (then forgotten), then the out-of-
 * order list's ranges, the one holding the latest arrival first. Clears
 * HP__TCPF_SACK_OUT when there is nothing. @return the count. */
unsigned hp__tcp_sack_fill(struct hp_tcp_sock *c, uint32_t (*blk)[2], unsigned max);
/* tcp_ooo.c: [seq, end) arrived a second time: the next ACK reports it as
 * a D-SACK (RFC 2883; the first duplicate until then is kept). Counted
 * TCP_DSACK_SENT. No-op without SACK. */
void hp__tcp_dsack_note(struct hp_tcp_sock *c, uint32_t seq, uint32_t end);

/* ---- tcp_output.c ------------------------------------------------------------ */

/*
 * Send what the connection may send now: new or go-back-N data from
 * snd_nxt within min(cwnd, snd_wnd) (Nagle unless NODELAY, sender SWS
 * avoidance of RFC 9293 3.8.6.2.1), our FIN when due, and an ACK if
 * HP__TCPF_ACK_NOW is set and no data segment carried it. Arms the
 * retransmission timer when data is outstanding, the persist timer when
 * the peer's window is zero and data waits. Every segment carries ACK
 * (once synchronized), our window and the timestamp option when in use;
 * sending any segment clears ACK_NOW, DACK (cancelling t_dack) and
 * segs_unacked, and sets last_ack_sent / rcv_adv.
 * @return segments sent (>= 0).
 */
int hp__tcp_output(struct hp_tcp_sock *c);
/* Our SYN (SYN_SENT) or SYN-ACK (SYN_RECEIVED), with the options we offer
 * (MSS, window scale, timestamps; for a cookie SYN-ACK none but MSS). Sets
 * snd_max to iss + 1 and arms t_rtx (first send) . @return 0 or -ENOBUFS. */
int hp__tcp_send_syn(struct hp_tcp_sock *c);
/* An ACK now (pure, or a challenge ACK of RFC 5961, or the reply to an
 * unacceptable segment of 3.10.7.4). @return 0 or -ENOBUFS. */
int hp__tcp_send_ack(struct hp_tcp_sock *c);
/* RFC 5961 7: a challenge ACK, rate limited stack-wide (counted
 * TCP_CHALLENGE_ACKS or TCP_CHALLENGE_ACK_LIMITED). */
void hp__tcp_challenge_ack(struct hp_tcp_sock *c);
/* A RST from c (abort, close with unread data, keepalive / retry
 * failures need none): <SEQ=SND.NXT><CTL=RST> (RFC 9293 3.10.5). */
void hp__tcp_send_rst(struct hp_tcp_sock *c);
/* A RST in reply to segment r that has no connection (RFC 9293 3.10.7.1):
 * if r has ACK, <SEQ=SEG.ACK><CTL=RST>; else <SEQ=0><ACK=SEG.SEQ+SEG.LEN>
 * <CTL=RST,ACK>. Never in reply to a RST. src/dst as received. */
void hp__tcp_send_rst_reply(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                            const struct hp_tcp_repr *r);
/* A SYN-ACK carrying a cookie for SYN r, sent statelessly by listener l
 * (hp__tcp_cookie_make; TCP_SYNCOOKIES_SENT). No options but MSS. */
void hp__tcp_send_cookie_synack(struct hp_tcp_sock *l, int family, const uint8_t *src,
                                const uint8_t *dst, const struct hp_tcp_repr *r);
/* Retransmit the first unacknowledged segment (fast retransmit, partial
 * ACK, RTO): data from snd_una, or SYN / FIN alone. Counted
 * TCP_RETRANS_SEGS. @return 0 or -ENOBUFS. */
int hp__tcp_retransmit(struct hp_tcp_sock *c);
/* A data segment of rcv side arrived in order / out of order: ACK now or
 * later per RFC 9293 3.8.6.3 and RFC 5681 4.2 (every delack_segs
 * full-sized segments, at once for out-of-order data, a segment that
 * fills a hole, a FIN, or with QUICKACK; else arm t_dack for delack_ms).
 * Sets ACK_NOW or DACK; the caller then calls hp__tcp_output(). */
void hp__tcp_ack_schedule(struct hp_tcp_sock *c, uint32_t len, bool in_order, bool fills_hole);
/* The user read bytes: if the window we could offer grew by at least 2
 * segments or half the buffer past what we advertised, send a window
 * update now. */
void hp__tcp_window_update(struct hp_tcp_sock *c);
/* For tcp_timer.c. hp__tcp_output, with the override timeout of RFC 9293
 * 3.8.6.2.1 (4): the first segment goes even if Nagle or sender SWS
 * avoidance would hold it (the persist timer, on a small window). */
int hp__tcp_output_force(struct hp_tcp_sock *c);
/* One segment <SEQ=seq><ACK=RCV.NXT><CTL=ACK> with len bytes of the send
 * queue from seq (a zero window probe), or none (a keepalive probe, seq =
 * SND.UNA - 1). Moves no sequence variable. @return bytes sent, -ENOBUFS. */
int hp__tcp_send_seg(struct hp_tcp_sock *c, uint32_t seq, uint32_t len);
/* A tail loss probe (RFC 8985 7.3): one new segment if the peer's window
 * takes one, else the last segment sent again (*rtx true). Ignores cwnd.
 * @return 0, -ENOBUFS, or -EAGAIN (nothing to send). */
int hp__tcp_send_tlp(struct hp_tcp_sock *c, bool *rtx);
/* An MTU probe (RFC 4821 7.5): len new bytes from snd_nxt in one segment
 * (the peer's window allowing), logged as a probe. @return bytes sent,
 * -ENOBUFS, or -EAGAIN. */
int hp__tcp_send_probe(struct hp_tcp_sock *c, uint32_t len);

/* ---- tcp_pmtu.c ------------------------------------------------------------------ */

/* Size smss and mss_eff for c->pmtu (and the peer's MSS, our rmss). */
void hp__tcp_pmtu_apply(struct hp_tcp_sock *c);
/* The retransmission timer expired with rtx_count consecutive timeouts
 * (after counting this one): a probe out failed; the second timeout of a
 * full-sized segment without ICMP is a black hole (RFC 4821 7.7, 7.8):
 * the MTU falls to the base and the search starts. */
void hp__tcp_pmtu_on_rto(struct hp_tcp_sock *c);
/* An ACK (tcp_sack.c): a probe acknowledged or SACKed raises the MTU; a
 * new probe goes when the search is on and data waits. */
void hp__tcp_pmtu_on_ack(struct hp_tcp_sock *c);
/* RACK deemed the probe lost: the search's upper bound falls. */
void hp__tcp_pmtu_probe_lost(struct hp_tcp_sock *c);

/* ---- tcp_timer.c ---------------------------------------------------------------- */

/* hp__timer callbacks, set by hp__tcp_conn_new. */
void hp__tcp_timer_rtx(struct hp_stack *s, void *arg);
void hp__tcp_timer_dack(struct hp_stack *s, void *arg);
void hp__tcp_timer_misc(struct hp_stack *s, void *arg);
/* (Re)start the retransmission timer RTO from now (lazily: moves rtx_due;
 * the heap entry only when it must fire earlier). */
void hp__tcp_rtx_restart(struct hp_tcp_sock *c);
/* Start it only if not running. */
void hp__tcp_rtx_ensure(struct hp_tcp_sock *c);
/* Have it fire by due at the latest (the RACK reordering timer): the
 * deadline moves earlier, never later. */
void hp__tcp_rtx_at(struct hp_tcp_sock *c, uint64_t due);
void hp__tcp_rtx_stop(struct hp_tcp_sock *c);
/* Enter the persist state (window zero, data waiting). */
void hp__tcp_persist_start(struct hp_tcp_sock *c);
/* Take t_rtx, t_dack and t_misc out of the heap (teardown). */
void hp__tcp_timers_cancel(struct hp_tcp_sock *c);
/* An ACK is owed, delayed (HP__TCPF_DACK just set): due in delack_ms. The
 * heap entry is armed at the next poll if the ACK is still owed then. */
void hp__tcp_dack_arm(struct hp_tcp_sock *c);
/* Enter TIME_WAIT (sets the state, stops rtx/dack, arms t_misc for
 * time_wait_ms); or restart it (a retransmitted FIN arrived, RFC 9293
 * 3.10.7.4). */
void hp__tcp_time_wait(struct hp_tcp_sock *c);
/* Keepalive or FIN_WAIT_2 timer per the state and options (t_misc). */
void hp__tcp_misc_rearm(struct hp_tcp_sock *c);

#endif
