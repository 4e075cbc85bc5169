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
    uint32_t bytes; /* queued bytes */
    uint32_t nbufs; /* buffers in the list */
    uint64_t start; /* stream offset of head's first byte */
};

struct hp__tcp_bufq_cur {
    struct hp_buf *b; /* a buffer of the queue if off >= start, else stale */
    uint64_t off;     /* stream offset of b's first byte */
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
uint32_t hp__tcp_bufq_append(struct hp__tcp_bufq *q, struct hp_pool *pool, const void *data,
                             uint32_t len);
/* Drop n bytes (at most q->bytes) from the front; freed buffers go back
 * to their pools. */
void hp__tcp_bufq_drop(struct hp__tcp_bufq *q, uint32_t n);
/* Copy len bytes starting at stream offset off (q->start <= off,
 * off + len <= q->start + q->bytes) to dst, using and moving the cursor
 * (NULL: walk from the head).
 * @return the bytes' partial checksum (hp_cksum_partial's, as if dst were
 *         at an even offset), summed from the source. */
uint32_t hp__tcp_bufq_copy(const struct hp__tcp_bufq *q, struct hp__tcp_bufq_cur *cur, uint64_t off,
                           uint32_t len, void *dst);
/* Copy len bytes from the front to dst and drop them (recv). len <= bytes. */
void hp__tcp_bufq_read(struct hp__tcp_bufq *q, void *dst, uint32_t len);
/* Detach the head buffer (recv_buf): the caller owns it (a one-segment
 * chain with pkt_len = data_len). NULL when empty. */
struct hp_buf *hp__tcp_bufq_pop(struct hp__tcp_bufq *q);

/* The receive queue: a byte queue without the stream offset (nothing
 * reads it there, and it would cost every connection 8 bytes), used
 * through these (tcp_bufq.c). */
struct hp__tcp_rcvq {
    uint32_t bytes; /* queued bytes (first: the transmit path reads it alone) */
    uint32_t nbufs; /* buffers in the list */
    struct hp_buf *head, *tail;
};
void hp__tcp_rcvq_push_small(struct hp__tcp_rcvq *rq, struct hp_buf *b, uint32_t small);
uint32_t hp__tcp_rcvq_append(struct hp__tcp_rcvq *rq, struct hp_pool *pool, const void *data,
                             uint32_t len);
void hp__tcp_rcvq_read(struct hp__tcp_rcvq *rq, void *dst, uint32_t len);
struct hp_buf *hp__tcp_rcvq_pop(struct hp__tcp_rcvq *rq);
void hp__tcp_rcvq_purge(struct hp__tcp_rcvq *rq);

/* The send queue (struct hp__tcp_sndq, below): the byte queue's calls,
 * which keep up to HP__TCP_SNDQ_INLINE bytes inline while no buffer is
 * queued. A cursor in a queue that is inline means nothing (copy ignores
 * it); one carried over from the queue's buffers is stale by its offset
 * (tcp_internal.h, cursors). */
struct hp__tcp_sndq;
void hp__tcp_sndq_init(struct hp__tcp_sndq *sq);
/* Free every buffer (the connection is over: it sends nothing more).
 * Leaves start, the bytes acknowledged. */
void hp__tcp_sndq_purge(struct hp__tcp_sndq *sq);
/* As hp__tcp_bufq_append: inline while the bytes fit and no buffer is
 * queued, else the inline bytes go into a buffer first. @return bytes
 * taken (fewer than len when the pool ran out). */
uint32_t hp__tcp_sndq_append(struct hp__tcp_sndq *sq, struct hp_pool *pool, const void *data,
                             uint32_t len);
/* As hp__tcp_bufq_push (the user's buffer chain; takes b), after moving
 * inline bytes into a buffer from pool: -ENOBUFS (b not taken) when there
 * is none. */
int hp__tcp_sndq_push(struct hp__tcp_sndq *sq, struct hp_pool *pool, struct hp_buf *b);
void hp__tcp_sndq_drop(struct hp__tcp_sndq *sq, uint32_t n);
/* As hp__tcp_bufq_copy; cur may be NULL. */
uint32_t hp__tcp_sndq_copy(const struct hp__tcp_sndq *sq, struct hp__tcp_bufq_cur *cur,
                           uint64_t off, uint32_t len, void *dst);

/* ---- the connection block --------------------------------------------------- */

/* c->flags */
#define HP__TCPF_ACK_NOW    0x00000001u /* send an ACK at the next hp__tcp_output */
#define HP__TCPF_DACK       0x00000002u /* an ACK is owed, delayed (until dack_due) */
#define HP__TCPF_NODELAY    0x00000004u /* no Nagle */
#define HP__TCPF_TS_OK      0x00000008u /* timestamps negotiated */
#define HP__TCPF_WS_OK      0x00000010u /* window scaling negotiated */
#define HP__TCPF_FIN_QUEUED 0x00000020u /* our FIN follows the send queue */
#define HP__TCPF_FIN_SENT   0x00000040u /* snd_max covers our FIN */
#define HP__TCPF_FIN_RCVD   0x00000080u /* the peer's FIN is in (rcv_nxt is past it) */
#define HP__TCPF_SHUT_RD    0x00000100u /* received data is discarded */
#define HP__TCPF_ORPHAN     0x00000200u /* the user closed the handle */
#define HP__TCPF_COOKIE     0x00000400u /* made from a SYN cookie */
#define HP__TCPF_SYN_LOST   0x00000800u /* our SYN / SYN-ACK was retransmitted */
#define HP__TCPF_KEEPALIVE  0x00001000u /* keepalive probes on */
#define HP__TCPF_QUICKACK   0x00002000u /* no delayed ACKs */
#define HP__TCPF_LINGER0    0x00004000u /* close resets */
#define HP__TCPF_IN_TABLE   0x00008000u /* key is in the connection map */
#define HP__TCPF_LISTEN_KEY 0x00010000u /* key is in the listen map */
#define HP__TCPF_WILDCARD   0x00020000u /* bound to the any address */
#define HP__TCPF_BOUND      0x00040000u /* local port chosen */
#define HP__TCPF_PERSIST    0x00080000u /* t_rtx is the persist (zero window probe) timer */
#define HP__TCPF_RTT_TIMING 0x00100000u /* rtt_seq / rtt_start time one segment (no timestamps) */
#define HP__TCPF_EOF_SEEN   0x00200000u /* the user read the end of stream */
#define HP__TCPF_ACCEPTED   0x00400000u /* handed to the user by accept (or created by open) */
/* the user hit a full send buffer: raise OUT when room is back */
#define HP__TCPF_SEND_SPACE 0x00800000u
/* on parent's accept queue (tcp.c); with a parent and without it: on the SYN queue if linked */
#define HP__TCPF_ACCQ 0x01000000u
/* on the stack's dack_pend list: t_dack armed at the next poll if still owed */
#define HP__TCPF_DACK_PEND 0x02000000u
/* SACK negotiated (RFC 2018 2): we send blocks, the peer's are used */
#define HP__TCPF_SACK_OK 0x04000000u
/* the transmit log (tcp_sack.c) exists: sends go in it, ACKs update it */
#define HP__TCPF_SB 0x08000000u
/* SACKed or lost segments, recovery, a probe out: the slow paths run */
#define HP__TCPF_SB_LOSS 0x10000000u
/* out-of-order data or a D-SACK to report: ACKs carry SACK blocks */
#define HP__TCPF_SACK_OUT 0x20000000u
#define HP__TCPF_ECN_OK   0x40000000u /* ECN negotiated (RFC 3168 6.1.1) */
#define HP__TCPF_ECN_PEND 0x80000000u /* an ECE to echo or a CWR to send (c->ecn says which) */

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
struct hp__tcp_ctr { /* the rare ones (in the extension) */
    uint64_t retrans_segs;
    uint32_t fast_retrans, timeouts, dupacks_in;
    uint32_t tlp_probes, dsacks_in, spurious_undos;
    uint32_t ecn_ce_in, ecn_reductions, pmtu_probes;
};

/* SACK blocks we send (tcp_ooo.c, RFC 2018 4, RFC 2883) */
#define HP__TCP_SACK_RECENT 4
struct hp__tcp_sackrx {
    /* first sequence numbers of the latest out-of-order arrivals, newest first */
    uint32_t recent[HP__TCP_SACK_RECENT];
    uint32_t dsack[2]; /* a duplicate to report once, [left, right) */
    uint8_t nrecent;
    bool dsack_pend;
};
/* ECN (RFC 3168 6.1) */
struct hp__tcp_ecn {
    bool ece_owed; /* a CE arrived: our ACKs carry ECE until the peer's CWR */
    bool cwr_owed; /* we reduced for an ECE: the next new data carries CWR */
    bool recover_on;
    uint32_t recover; /* one reduction per window: ECEs before SND.UNA passes this are one event */
};
/* path MTU search (tcp_pmtu.c, RFC 4821 7) */
struct hp__tcp_plpmtud {
    uint16_t low, high; /* the MTU known to work, the smallest known not to (or the link's + 1) */
    uint16_t probe;     /* the probe's MTU while one is out */
    bool probe_out;
    uint32_t probe_end; /* the probe's end in sequence space */
};

/*
 * The extension: what a connection needs only once it does more than
 * exchange small messages, allocated the first time something needs it
 * (hp__tcp_ext_get) and freed with the connection. A request/response or
 * idle connection has none: its block is all it holds (issue 23's 512-byte
 * budget). What makes one:
 *   sb       a second segment in flight (the transmit log), SACK blocks
 *            from the peer, a tail loss probe (tcp_sack.c);
 *   cubic    CUBIC in congestion avoidance, HyStart++ with 8 segments or
 *            more in flight, a congestion event or timeout (tcp_cc.h);
 *   sndcur   the send queue's cursor for copying segment after segment
 *            from the middle of a long queue (without one the copy walks
 *            from the head): the first copy from a queue of more than two
 *            buffers takes the extension if nothing else did (NewReno
 *            without SACK; tcp_output.c, sndcur());
 *   sackrx   out-of-order data or a duplicate to report (tcp_ooo.c);
 *   plp      a PLPMTUD search (after a black hole, tcp_pmtu.c);
 *   ecn      a CE mark or an ECE (RFC 3168 6.1);
 *   st       a retransmission, timeout, duplicate ACK... (hp_tcp_info's
 *            rare counters).
 * Without memory for it (counted TCP_EXT_NOMEM) each of those degrades as
 * its module says: no log (NewReno recovery), NewReno's growth, the walk
 * from the head, no SACK blocks, no search, no echo of the CE, a count
 * lost.
 */
struct hp__tcp_ext {
    struct hp__tcp_sb sb;
    struct hp__tcp_cubic cubic;
    struct hp__tcp_bufq_cur sndcur; /* where the last copy from sndq ended (hp__tcp_sndq_copy) */
    struct hp__tcp_sackrx sackrx;
    struct hp__tcp_plpmtud plp;
    struct hp__tcp_ecn ecn;
    struct hp__tcp_ctr st;
};

/*
 * The send queue: a byte queue in buffers, or, while it holds at most
 * HP__TCP_SNDQ_INLINE bytes and no buffer, those bytes inline in the block
 * (a request/response connection's messages never take a pool buffer:
 * one allocation and one free fewer per segment, and no line of a held
 * buffer to miss on when the ACK frees it).
 */
#define HP__TCP_SNDQ_INLINE 16u
struct hp__tcp_sndq {
    uint32_t bytes; /* queued bytes */
    uint32_t nbufs; /* buffers; 0: the bytes are in u.inl */
    uint64_t start; /* stream offset of the first byte: the bytes acknowledged so far */
    union {
        struct {
            struct hp_buf *head, *tail;
        } q;
        uint8_t inl[HP__TCP_SNDQ_INLINE];
    } u;
};

/* demux: the map entry, then what the receive path reads right after a hit
 * and the transmit path reads first. */
#define HP__TCPS_ID_demux                                                                          \
    struct hp__tcp_key key; /* first: the map entry; key.family is 4 or 6 */                       \
    struct hp_stack *s;                                                                            \
    uint32_t flags; /* HP__TCPF_* */                                                               \
    uint8_t state;  /* enum hp_tcp_state */                                                        \
    uint8_t snd_wscale, rcv_wscale;                                                                \
    uint8_t via_gw; /* the next hop is the stack's gateway (else key.raddr) */                     \
    uint8_t ifx;    /* the route's interface: s->ifaces[ifx - 1] (0: none) */

/* send sequence space */
#define HP__TCPS_ISS_cold uint32_t iss;
#define HP__TCPS_SND_rxtx uint32_t snd_una, snd_nxt, snd_max, snd_wnd;
#define HP__TCPS_SNDWL_rx                                                                          \
    uint32_t snd_wl1, snd_wl2;                                                                     \
    uint32_t                                                                                       \
        max_snd_wnd; /* largest window the peer offered (RFC 5961 5.2; sender SWS, RFC 9293 3.8.6.2.1) */
#define HP__TCPS_SMSS_rx     uint16_t smss;
#define HP__TCPS_MSSEFF_rxtx uint16_t mss_eff;
#define HP__TCPS_RMSS_rxtx   uint16_t rmss;
#define HP__TCPS_RTXCNT_rx                                                                         \
    uint8_t rtx_count; /* consecutive retransmissions by timer of the same segment (R2 counter) */ \
    uint8_t ka_probes; /* keepalive probes unanswered */

/* receive sequence space */
#define HP__TCPS_IRS_cold    uint32_t irs;
#define HP__TCPS_RCVNXT_rxtx uint32_t rcv_nxt;
#define HP__TCPS_RCVWND_tx   uint32_t rcv_wnd;
#define HP__TCPS_RCVADV_rxtx                                                                       \
    uint32_t rcv_adv;                                                                              \
    uint32_t last_ack_sent; /* RCV.NXT in the last segment we sent (RFC 7323 4.3 TS.Recent rule) */
#define HP__TCPS_SEGSUNACKED_rxtx                                                                  \
    uint16_t segs_unacked; /* full-sized segments received since our last ACK */

/* timestamps (RFC 7323) */
#define HP__TCPS_TS_rxtx                                                                           \
    uint32_t ts_recent;                                                                            \
    uint32_t ts_offset;
#define HP__TCPS_TSS_rx                                                                            \
    uint32_t ts_recent_s; /* when ts_recent was set, s->now in seconds (PAWS idle rule, 5.5) */

/* RTT and congestion control */
#define HP__TCPS_RTT_rxtx struct hp__tcp_rtt rtt;
#define HP__TCPS_CC_rxtx  struct hp__tcp_cc cc;
#define HP__TCPS_RTTSEQ_cold                                                                       \
    uint32_t rtt_seq;      /* without timestamps: the segment being timed ends here */             \
    uint32_t rtt_start_us; /* and was sent then (s->now in us, 32 bits: wraps in 71 minutes) */
/* last time we sent data (RFC 5681 4.1 restart after idle) */
#define HP__TCPS_LASTSEND_tx uint64_t last_send_ns;
#define HP__TCPS_LASTRCV_rx  uint64_t last_rcv_ns; /* last time a segment arrived (keepalive idle) */

/* queues */
#define HP__TCPS_SNDQ_rxtx                                                                         \
    struct hp__tcp_sndq sndq; /* unacknowledged user bytes, sent and unsent */
#define HP__TCPS_RCVQ_rxtx struct hp__tcp_rcvq rcvq; /* in-order bytes not yet read */
#define HP__TCPS_OOO_rx                                                                            \
    struct hp_buf *ooo; /* out-of-order segments, sorted by sequence, not overlapping; linked \
                                  * through next; each buffer's starting sequence number in its `reserved` field */
#define HP__TCPS_OOON_cold     uint32_t ooo_n;
#define HP__TCPS_OOOBYTES_rxtx uint32_t ooo_bytes;
#define HP__TCPS_SNDBUF_tx     uint32_t sndbuf; /* limit in bytes on sndq.bytes */
#define HP__TCPS_RCVBUF_rxtx   uint32_t rcvbuf; /* limit in bytes on rcvq.bytes + ooo_bytes */

/* timers (tcp_timer.c) */
#define HP__TCPS_TIMERS_cold                                                                       \
    struct hp__timer t_rtx;  /* retransmission, SYN, or persist (HP__TCPF_PERSIST) */              \
    struct hp__timer t_dack; /* delayed ACK */                                                     \
    struct hp__timer t_misc; /* keepalive, FIN_WAIT_2, TIME_WAIT */
/* due time of t_rtx's heap entry, 0 when not in the heap (tcp_timer.c) */
#define HP__TCPS_RTXTDUE_tx uint64_t rtx_tdue;
/* due time of t_dack's heap entry, 0 when not in the heap */
#define HP__TCPS_DACKTDUE_rx uint64_t dack_tdue;
#define HP__TCPS_DACKDUE_rx                                                                        \
    uint64_t dack_due; /* when the pending delayed ACK is due: t_dack may be armed earlier (lazy) */
#define HP__TCPS_RTXDUE_rxtx                                                                       \
    uint64_t                                                                                       \
        rtx_due; /* when t_rtx should fire, 0 when stopped: t_rtx may be armed earlier or stale (lazy restart and stop) */
/* persist timer back-off (zeroed by every rtx_stop) */
#define HP__TCPS_PERSIST_rx uint8_t persist_shift;
/* A passive embryo whose ISS is a SYN cookie (tcp_listen.c syn_iss); read
 * only in SYN_RECEIVED. A byte in a hole: after ka_cnt (grouped), after
 * persist_shift (chrono). */
#define HP__TCPS_COOKIEISS_cold uint8_t cookie_iss;
#define HP__TCPS_KA_cold                                                                           \
    uint16_t ka_idle_s, ka_intvl_s; /* keepalive (tcp.c bounds them to Linux's 32767) */           \
    uint8_t ka_cnt;
/* RFC 5961 7: no challenge ACK from this connection before this time (ms
 * of s->now, wrapping; 0: any time). 32 bits: it fills a hole. */
#define HP__TCPS_CHACK_cold uint32_t chack_next_ms;

/* path MTU (tcp_pmtu.c, RFC 1191, RFC 8201; the search of RFC 4821 is in the extension) */
#define HP__TCPS_PMTU_cold                                                                         \
    uint16_t pmtu;     /* the path MTU our segments are sized for (the route's MTU at first) */    \
    uint16_t peer_mss; /* the MSS the peer announced (or its default) */

/* congestion control: the algorithm this socket uses (set at open,
 * HP_TCP_OPT_CC); CUBIC's state is in the extension */
#define HP__TCPS_CCX_cold uint8_t cc_algo;
/* NULL until needed (above). Both paths read it, whether they use it or
 * not: hp__tcp_cubic_of on every ACK, the send queue's cursor and the loss
 * probe's timer on every segment sent (gcc loads it ahead of the flag
 * tests that guard its uses). */
#define HP__TCPS_EXT_rxtx struct hp__tcp_ext *x;

/* the user side */
#define HP__TCPS_EV_rx  struct hp__sock_ev ev;
#define HP__TCPS_ERR_tx int err; /* pending error (-errno), 0 if none */

/* listener queues: a listener's own; a connection's links into its parent's */
#define HP__TCPS_LISTEN_cold                                                                       \
    struct hp_tcp_sock *parent;        /* the listener of a connection not yet accepted */         \
    struct hp_tcp_sock *qnext, *qprev; /* in parent's syn or accept list */                        \
    struct hp__tcp_listenq *lq;        /* a listener's queues (NULL for a connection) */

/* hp_tcp_get_info's counters, by the path that counts them (the rare ones
 * in the extension) */
#define HP__TCPS_BYTESRX_rx uint64_t bytes_received; /* (bytes acknowledged: sndq.start) */
#define HP__TCPS_SEGSIN_rx  uint32_t segs_in;
#define HP__TCPS_BYTESTX_tx uint64_t bytes_sent;
#define HP__TCPS_SEGSOUT_tx uint32_t segs_out;

/* (the field groups one after another, as a table) */
// clang-format off
struct hp_tcp_sock {
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    HP__TCPS_ID_demux HP__TCPS_ISS_cold HP__TCPS_SND_rxtx HP__TCPS_SNDWL_rx HP__TCPS_SMSS_rx
    HP__TCPS_MSSEFF_rxtx HP__TCPS_RMSS_rxtx HP__TCPS_RTXCNT_rx HP__TCPS_IRS_cold
    HP__TCPS_RCVNXT_rxtx HP__TCPS_RCVWND_tx HP__TCPS_RCVADV_rxtx HP__TCPS_SEGSUNACKED_rxtx
    HP__TCPS_TS_rxtx HP__TCPS_TSS_rx HP__TCPS_RTT_rxtx HP__TCPS_CC_rxtx HP__TCPS_RTTSEQ_cold
    HP__TCPS_LASTSEND_tx HP__TCPS_LASTRCV_rx HP__TCPS_SNDQ_rxtx HP__TCPS_RCVQ_rxtx
    HP__TCPS_OOO_rx HP__TCPS_OOON_cold HP__TCPS_OOOBYTES_rxtx HP__TCPS_SNDBUF_tx
    HP__TCPS_RCVBUF_rxtx HP__TCPS_TIMERS_cold HP__TCPS_RTXDUE_rxtx HP__TCPS_DACKDUE_rx
    HP__TCPS_RTXTDUE_tx HP__TCPS_DACKTDUE_rx HP__TCPS_PERSIST_rx HP__TCPS_COOKIEISS_cold
    HP__TCPS_KA_cold HP__TCPS_EV_rx HP__TCPS_ERR_tx HP__TCPS_CHACK_cold HP__TCPS_LISTEN_cold
    HP__TCPS_BYTESRX_rx HP__TCPS_SEGSIN_rx HP__TCPS_BYTESTX_tx HP__TCPS_SEGSOUT_tx
    HP__TCPS_CCX_cold HP__TCPS_PMTU_cold HP__TCPS_EXT_rxtx
#else
    /* 448 bytes, 7 lines (an odd number: tcp_block.c), every byte used
     * but 1; the transmit path's fields in lines 0-3, the receive path's
     * in 0-5 (docs/cachelines/hp_tcp_sock.md). */
    HP_CACHELINE_GROUP_BEGIN(demux) /* line 0: both paths read it */
    HP__TCPS_ID_demux HP__TCPS_RTXCNT_rx HP__TCPS_PERSIST_rx HP__TCPS_CCX_cold
    HP__TCPS_SEGSUNACKED_rxtx
    HP_CACHELINE_GROUP_END(demux)

    HP_CACHELINE_GROUP_BEGIN(tx) /* only the transmit path */
    HP__TCPS_LASTSEND_tx HP__TCPS_BYTESTX_tx HP__TCPS_RTXTDUE_tx HP__TCPS_SEGSOUT_tx
    HP__TCPS_ERR_tx HP__TCPS_SNDBUF_tx HP__TCPS_RCVWND_tx
    HP_CACHELINE_GROUP_END(tx)

    /* Both paths; cc, rtt and rcvq last, in line 3: the transmit path reads
     * only their first words it needs (cc.cwnd, rtt.rto_us, rcvq.bytes). */
    HP_CACHELINE_GROUP_BEGIN(rxtx)
    HP__TCPS_RTXDUE_rxtx HP__TCPS_SNDQ_rxtx HP__TCPS_SND_rxtx
    HP__TCPS_RCVNXT_rxtx HP__TCPS_RCVADV_rxtx HP__TCPS_TS_rxtx HP__TCPS_OOOBYTES_rxtx
    HP__TCPS_RCVBUF_rxtx HP__TCPS_RMSS_rxtx HP__TCPS_MSSEFF_rxtx HP__TCPS_EXT_rxtx
    HP__TCPS_CC_rxtx HP__TCPS_RTT_rxtx HP__TCPS_RCVQ_rxtx
    HP_CACHELINE_GROUP_END(rxtx)

    HP_CACHELINE_GROUP_BEGIN(rx) /* only the receive path */
    HP__TCPS_LASTRCV_rx HP__TCPS_DACKDUE_rx HP__TCPS_DACKTDUE_rx HP__TCPS_OOO_rx HP__TCPS_EV_rx
    HP__TCPS_BYTESRX_rx HP__TCPS_SNDWL_rx HP__TCPS_TSS_rx HP__TCPS_SEGSIN_rx HP__TCPS_SMSS_rx
    HP_CACHELINE_GROUP_END(rx)

    /* cold: the handshake, listeners, keepalive, the timers themselves (the extension's
     * pointer is in rxtx: both paths read it) */
    HP__TCPS_KA_cold HP__TCPS_COOKIEISS_cold HP__TCPS_PMTU_cold HP__TCPS_ISS_cold
    HP__TCPS_IRS_cold HP__TCPS_OOON_cold HP__TCPS_RTTSEQ_cold HP__TCPS_TIMERS_cold
    HP__TCPS_CHACK_cold HP__TCPS_LISTEN_cold
#endif
} __attribute__((aligned(HP_CACHELINE_SIZE))); /* allocated with aligned_alloc(64) by hp__tcp_conn_new */
// clang-format on

/* A listener's queues. Connections in SYN_RECEIVED sit on syn (count
 * nsyn), oldest first; established, not yet accepted ones on acc (count
 * nacc). Both are bounded by backlog. */
struct hp__tcp_listenq {
    uint32_t backlog;
    uint32_t nsyn, nacc;
    struct hp_tcp_sock *syn_head, *syn_tail; /* FIFO through qnext/qprev */
    struct hp_tcp_sock *acc_head, *acc_tail; /* FIFO through qnext/qprev */
    uint64_t cookie_ns;                      /* when this listener last gave out a cookie
                                                * (a cookie SYN-ACK or a cookie ISS); 0: never */
};

/*
 * A connection in TIME_WAIT that nobody holds (tcp_tw.c): what RFC 9293's
 * TIME-WAIT, RFC 7323's PAWS and RFC 6191's reuse need of it, two lines
 * instead of the connection's block (7 lines, and its timer in the heap).
 * In the table's TIME_WAIT map by key; on the stack's FIFO by due time.
 */
struct hp__tcp_tw {
    struct hp__tcp_key key;
    struct hp__tcp_tw *next, *prev; /* the FIFO, oldest first */
    uint64_t due;                   /* s->now at which it ends */
    uint32_t snd_nxt;               /* past our FIN */
    uint32_t rcv_nxt;               /* past the peer's FIN */
    uint32_t rcv_wnd;               /* the window last advertised (bytes) */
    uint32_t ts_recent, ts_recent_s, ts_offset;
    uint32_t chack_next_ms; /* the ACK rate limit, as a connection's */
    uint8_t rcv_wscale;
    bool ts_ok;
};

/* The stack's TCP state (s->sock->tcp). */
/* Connection blocks (tcp_block.c): from 2 MiB chunks advised for
 * transparent huge pages, freed blocks reused LIFO, the chunks unmapped at
 * fini. */
struct hp__tcp_blocks {
    size_t size;         /* one block: sizeof(struct hp_tcp_sock), rounded up to 64 */
    void *free;          /* freed blocks, linked through their first word */
    uint8_t *next, *end; /* the newest chunk's part never handed out */
    void **chunks;
    uint64_t **live; /* per chunk: a bit per block, set while handed out */
    uint32_t nchunks, cap;
    uint32_t nlive; /* blocks handed out and not freed */
};
void hp__tcp_blocks_init(struct hp__tcp_blocks *b, size_t size);
/* A block of b->size bytes, 64-byte aligned, contents undefined; NULL when
 * out of memory. */
void *hp__tcp_block_alloc(struct hp__tcp_blocks *b);
void hp__tcp_block_free(struct hp__tcp_blocks *b, void *p);
/* Unmap every chunk (blocks still handed out go with them). */
void hp__tcp_blocks_fini(struct hp__tcp_blocks *b);
/* The first block handed out after prev (chunk by chunk, in address
 * order within one; NULL: from the start), or NULL. prev may have been freed since:
 * freeing blocks during a walk is allowed, and a block handed out during
 * it may or may not be visited. */
void *hp__tcp_block_next(const struct hp__tcp_blocks *b, const void *prev);

struct hp__tcp_state {
    struct hp_tcp_config cfg;       /* defaults filled in */
    struct hp__tcp_rtt_cfg rtt_cfg; /* cfg's RTO bounds, for the estimators */
    struct hp__tcp_table *table;
    struct hp__tcp_secret secret; /* ISNs, cookies, timestamp offsets */
    uint32_t nconns;              /* sockets allocated (any state) */
    uint32_t nexts;               /* extensions allocated (hp__tcp_ext_get) */
    /* RFC 5961 7: this second's stack-wide challenge ACK budget, drawn at
     * random (tcp_output.c challenge_allowed). */
    uint64_t chack_sec; /* the second it was drawn for (s->now / 1 s) */
    uint32_t chack_left;
    /* Delayed ACKs owed since the last poll began (tcp_timer.c): armed at
     * the next one unless the application's reply carried them first. */
    struct hp_tcp_sock **dack_pend;
    uint32_t ndack_pend, dack_pend_cap;
    uint64_t dack_pend_due;       /* the first one's deadline, the earliest */
    bool table_rekey;             /* the table asked for a new hash key (tcp_table.c) */
    struct hp__tcp_blocks blocks; /* every hp_tcp_sock of the stack */
    /* Compact TIME_WAIT records (tcp_tw.c): their blocks, the FIFO by due
     * time and the one timer for its head. */
    struct hp__tcp_blocks tw_blocks;
    struct hp__tcp_tw *tw_head, *tw_tail;
    struct hp__timer_cb tw_timer;
    /* Early demultiplexing of the receive burst being processed
     * (tcp_input.c): the peeked tuples and their hashes, in burst order. */
    struct hp__tcp_hint {
        struct hp__tcp_key k;
        const struct hp_buf *b;
        uint64_t h;
        struct hp__tcp_key *e; /* what the step peeked (NULL: not yet, or none) */
        uint32_t epoch;        /* the table's epoch then (hp__tcp_conn_lookup_peeked) */
    } hint[HP__RX_BURST];
    uint32_t nhint, hint_at, lines_at;
    uint64_t early_hits; /* lookups that used a peeked hash (tests) */
};

static inline struct hp__tcp_state *hp__tcp(struct hp_stack *s)
{
    return s->sock->tcp;
}

/* The next hop of c's segments: the peer, or the stack's gateway. */
static inline const uint8_t *hp__tcp_nexthop(const struct hp_tcp_sock *c)
{
    if (!c->via_gw)
        return c->key.raddr;
    return c->key.family == 4 ? c->s->gw4 : c->s->gw6;
}

/* The interface c's segments leave by (NULL before it has a route). The
 * route (chosen at connect / accept) is ifx, the interface's index, and
 * via_gw: the source address is key.laddr, the next hop key.raddr or the
 * stack's gateway (hp__tcp_nexthop). */
static inline struct hp__iface *hp__tcp_ifc(const struct hp_tcp_sock *c)
{
    return c->ifx ? c->s->ifaces[c->ifx - 1] : NULL;
}

/* The route of c's segments by its interface ifc (hp__tcp_ifc(c)): the
 * next hop, the source from key.laddr. */
static inline void hp__tcp_route_via(const struct hp_tcp_sock *c, struct hp__iface *ifc,
                                     struct hp__route *rt)
{
    rt->ifc = ifc;
    memcpy(rt->src, c->key.laddr, sizeof rt->src);
    memcpy(rt->nexthop, hp__tcp_nexthop(c), c->key.family == 4 ? 4 : 16);
}

/* The route of c's segments: its interface and next hop, from key.laddr. */
static inline void hp__tcp_route(const struct hp_tcp_sock *c, struct hp__route *rt)
{
    hp__tcp_route_via(c, hp__tcp_ifc(c), rt);
}

/* c's extension (tcp_internal.h, struct hp__tcp_ext), allocated now if it
 * has none: NULL (counted TCP_EXT_NOMEM) without memory. */
struct hp__tcp_ext *hp__tcp_ext_get(struct hp_tcp_sock *c);

/* CUBIC's state for a congestion control call on c (tcp_cc.h takes NULL
 * for NewReno): the extension's; made now when `need` (an event that may
 * touch it) and c uses CUBIC. NULL otherwise, or without memory: the
 * event then runs as NewReno's. */
static inline struct hp__tcp_cubic *hp__tcp_cubic_of(struct hp_tcp_sock *c, bool need)
{
    if (c->x)
        return &c->x->cubic;
    if (!need || c->cc.algo != HP__TCP_CC_CUBIC)
        return NULL;
    struct hp__tcp_ext *x = hp__tcp_ext_get(c);
    return x ? &x->cubic : NULL;
}

/* c's rare counters (hp_tcp_info), NULL when they cannot be kept. */
static inline struct hp__tcp_ctr *hp__tcp_st(struct hp_tcp_sock *c)
{
    struct hp__tcp_ext *x = hp__tcp_ext_get(c);
    return x ? &x->st : NULL;
}
#define HP__TCP_ST_INC(c, field)                                                                   \
    do {                                                                                           \
        struct hp__tcp_ctr *st_ = hp__tcp_st(c);                                                   \
        if (st_)                                                                                   \
            st_->field++;                                                                          \
    } while (0)

static inline const struct hp__tcp_rtt_cfg *hp__tcp_rtt_cfg_of(const struct hp_tcp_sock *c)
{
    return &hp__tcp(c->s)->rtt_cfg;
}

/* s->now in seconds (ts_recent_s's unit: 32 bits last 136 years). */
static inline uint32_t hp__tcp_now_s(const struct hp_stack *s)
{
    return (uint32_t)(s->now / 1000000000u);
}
/* How long ago ts_recent was set, ns (a whole number of seconds). */
static inline uint64_t hp__tcp_ts_recent_age_ns(const struct hp_tcp_sock *c)
{
    return (uint64_t)(uint32_t)(hp__tcp_now_s(c->s) - c->ts_recent_s) * 1000000000u;
}

/* tcp_listen.c: the timestamp clock t of an embryo whose ISS is a cookie
 * (cookie_iss), read in SYN_RECEIVED as the last value at or
 * before t whose low bits carry the negotiated options, as a cookie
 * SYN-ACK's TSval does (up to 63 ms behind, never going back): should the
 * embryo be dropped from a full SYN queue, the peer's ACK then echoes them
 * to the cookie check. */
uint32_t hp__tcp_embryo_ts(const struct hp_tcp_sock *c, uint32_t t);

static inline uint32_t hp__tcp_ts_now(const struct hp_tcp_sock *c)
{
    uint32_t t = (uint32_t)(c->s->now / 1000000u) + c->ts_offset;
    /* A cookie embryo's clock carries its options (tcp_listen.c). */
    if (__builtin_expect(c->state == HP_TCP_SYN_RECEIVED, 0) && c->cookie_iss)
        return hp__tcp_embryo_ts(c, t);
    return t;
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
    struct hp__tcp_sb *sb =
        (c->flags & HP__TCPF_SB) ? &c->x->sb : NULL; /* the log is in the extension */
    if (seq == c->snd_max && !(c->flags & HP__TCPF_SB_LOSS)) {
        /* Once a connection has its log, every segment goes in: a bulk
         * sender's flight empties and fills again all the time. */
        if (sb && sb->n < sb->cap && (sb->n || c->snd_una == seq)) {
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
        if (!sb && c->snd_una == seq) {
            /* (The flag, not sb->n: a request/response flow never reads
             * the extension.) */
            c->last_send_ns = c->s->now; /* the time a later entry for it takes */
            return;
        }
    }
    hp__tcp_sb_sent_slow(c, seq, end);
}

/* What congestion control is told at an event of c (tcp_cc.h). rtt_us: a
 * sample from this ACK (0: none); flight: bytes outstanding before it. */
static inline struct hp__tcp_cc_ev hp__tcp_cc_ev(const struct hp_tcp_sock *c, uint32_t rtt_us,
                                                 uint32_t flight)
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

int hp__tcp_init(struct hp_stack *s);  /* from hp__sock_init */
void hp__tcp_fini(struct hp_stack *s); /* from hp__sock_fini: frees every socket, sends nothing */

/* A new connection block for the stack: defaults from the config (buffers,
 * keepalive, rto via hp__tcp_rtt_init), timers initialised, on the `all`
 * list, state CLOSED, not in any map. NULL (counted in
 * TCP_CONN_LIMIT_DROPS) at max_conns, or on ENOMEM. */
struct hp_tcp_sock *hp__tcp_conn_new(struct hp_stack *s, int family);
/* What the stack holds for its TCP sockets, in bytes: their blocks and
 * extensions (the transmit logs' rings left out: a bulk sender's, sized by
 * its flight), the connection map's buckets, the timer heap's and the
 * delayed-ACK list's arrays. *conns grows by the connections in the map.
 * For the peers bench's memory row (bench/peers/hotpath_mem.c). */
uint64_t hp__tcp_mem_held(struct hp_stack *s, uint64_t *conns);
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
 * be one of ours, never the any address): fills c->key (key.family),
 * finds the route to raddr (c->rt, with rt.src forced to laddr), derives
 * rmss (from the route's MTU or cfg.mss / MAXSEG: MTU - 40 for IPv4,
 * - 60 for IPv6), a provisional smss = min(rmss, 536 or 1220), rcv_wscale
 * (the smallest shift that lets rcvbuf fit the 16-bit field, 0 with
 * no_window_scaling), iss and ts_offset (hp__tcp_isn_ts), and inserts c
 * in the connection map (IN_TABLE).
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
/* RFC 5961 7: a challenge ACK, rate limited per connection
 * (challenge_ack_conn_ms; TCP_CHALLENGE_ACK_CONN_LIMITED) and stack-wide
 * by a budget drawn at random each second (challenge_ack_limit;
 * TCP_CHALLENGE_ACK_LIMITED); TCP_CHALLENGE_ACKS counts those sent. */
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
 * (hp__tcp_cookie_make; TCP_SYNCOOKIES_SENT), with the options of
 * hp__tcp_cookie_offer. */
void hp__tcp_send_cookie_synack(struct hp_tcp_sock *l, int family, const uint8_t *src,
                                const uint8_t *dst, const struct hp_tcp_repr *r);
/* tcp_listen.c: the options of listener l's cookie SYN-ACK o for SYN syn
 * of connection t (tcp_cookie.h): MSS (set by the caller), and when the
 * SYN had timestamps, timestamps with the cookie's bits in TSval, window
 * scaling, SACK-permitted and ECN as agreed. */
void hp__tcp_cookie_offer(struct hp_tcp_sock *l, const struct hp__tcp_tuple *t,
                          const struct hp_tcp_repr *syn, struct hp_tcp_repr *o);

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

/* The timers' functions (HP__TK_TCP_RTX, _DACK, _MISC) are declared in
 * net/internal.h, which fires them. */
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
/* An ACK is owed now, but a segment the application sends in answer may
 * carry it: it goes at the start of the next poll unless one did (the
 * dack_pend list, due now: hp_stack_next_timer_ns is 0 meanwhile). With
 * QUICKACK, or when the list cannot grow, HP__TCPF_ACK_NOW instead (the
 * caller's hp__tcp_output sends it). */
void hp__tcp_ack_soon(struct hp_tcp_sock *c);
/* Enter TIME_WAIT (sets the state, stops rtx/dack, arms t_misc for
 * time_wait_ms); or restart it (a retransmitted FIN arrived, RFC 9293
 * 3.10.7.4). */
void hp__tcp_time_wait(struct hp_tcp_sock *c);
/* Keepalive or FIN_WAIT_2 timer per the state and options (t_misc). */
void hp__tcp_misc_rearm(struct hp_tcp_sock *c);

/* ---- tcp_tw.c: TIME_WAIT without the connection ---- */
struct hp__tcp_seg;
void hp__tcp_tw_init(struct hp__tcp_state *st);
/* Free every record (the stack goes). */
void hp__tcp_tw_fini(struct hp_stack *s);
/* c is in TIME_WAIT and nobody holds it: hand its tuple and what TIME_WAIT
 * needs to a compact record, for the rest of its time_wait_ms, and free c.
 * @return true (c is gone), false (no memory or no room in the map: c
 * stays, in TIME_WAIT as before). */
bool hp__tcp_tw_compact(struct hp_tcp_sock *c);
/* A segment for the record's tuple (tcp_input.c, after the connection map
 * had none). Consumes sg. */
void hp__tcp_tw_input(struct hp_stack *s, struct hp__tcp_tw *tw, struct hp__tcp_seg *sg);
/* connect's tw_reuse (tcp_api.c): whether the record may give its tuple to
 * a new connection; then hp__tcp_tw_take frees it, and *iss_floor gets
 * where the new ISS may start. */
bool hp__tcp_tw_reusable(const struct hp_stack *s, const struct hp__tcp_tw *tw);
void hp__tcp_tw_take(struct hp_stack *s, struct hp__tcp_tw *tw, uint32_t *iss_floor);
/* Insert every record into table `to` (hp_tcp_configure's new table); one
 * it cannot take ends (counted TW_EXPIRED). */
void hp__tcp_tw_move(struct hp_stack *s, struct hp__tcp_table *to);
/* End the record's wait now, uncounted (tests; what its timer does, early). */
void hp__tcp_tw_end(struct hp_stack *s, struct hp__tcp_tw *tw);
/* Bytes the records hold (hp__tcp_mem_held). */
uint64_t hp__tcp_tw_mem(const struct hp__tcp_state *st);

/* tcp_output.c: a segment for (family, src -> dst) outside any connection,
 * routed as a reply to a segment from src to dst. 0 or -errno. */
int hp__tcp_send_reply(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                       const struct hp_tcp_repr *o);
/* RFC 5961 7's challenge ACK limits (tcp_output.c): one per *next_ms gap
 * (a connection's or a TIME_WAIT record's field) and the stack's budget
 * per second. @return whether one may go now (then counted against both). */
bool hp__tcp_challenge_allowed(struct hp_stack *s, uint32_t *next_ms);

#endif
