/* SPDX-License-Identifier: BSD-3-Clause */
/* The sender's transmit log and SACK scoreboard (RFC 6675), RACK-TLP loss detection (RFC 8985) and PRR (RFC 6937), for connections that negotiated SACK. */
#ifndef HOTPATH_SOCK_TCP_SACK_H
#define HOTPATH_SOCK_TCP_SACK_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The transmit log
 * ----------------
 * (HP__TCPF_SB: the log's ring exists. A connection that never had two
 * segments in flight has none, and its paths read nothing of this.)
 * One entry per segment in flight, [seq, end) of sequence space (a FIN
 * counts), in sequence order, with the time of its latest transmission
 * and its scoreboard bits. It costs nothing while at most one segment is
 * outstanding (a request/response flow): the first segment sent into an
 * empty flight is not logged, and becomes an entry (sent at last_send_ns)
 * only when a second one follows, or when it is retransmitted. Each ACK
 * drops the entries below SND.UNA; a bulk sender pays one append per
 * segment and one pop per acknowledged segment. Everything else (SACK
 * blocks, RACK's loss detection, recovery) runs only when the peer's SACK
 * blocks or a loss put the connection on the slow path (HP__TCPF_SB_LOSS).
 *
 * Counters, in bytes of sequence space not yet cumulatively acknowledged:
 *   sacked   entries the peer SACKed;
 *   lost     entries not SACKed that RACK (or a timeout) deemed lost;
 *   rtx_out  entries not SACKed whose latest retransmission is in flight.
 * RFC 6675's pipe is then FlightSize - sacked - lost + rtx_out: a lost
 * entry counts once its retransmission is out, a retransmitted one that
 * is not lost (a tail loss probe) twice.
 */

#define HP__TXS_SACKED  0x01u /* the peer SACKed it */
#define HP__TXS_LOST    0x02u /* deemed lost: to retransmit (or retransmitted: RETRANS) */
#define HP__TXS_RETRANS 0x04u /* a retransmission is in flight */
#define HP__TXS_EVER    0x08u /* retransmitted at least once (RACK's RTT ambiguity) */
#define HP__TXS_PROBE   0x10u /* an MTU probe (tcp_pmtu.c) */

struct hp__tcp_txseg {
    uint32_t seq, end;
    uint64_t xmit_ns; /* the latest transmission */
    uint8_t flags;    /* HP__TXS_* */
};

struct hp__tcp_sb {
    struct hp__tcp_txseg *seg; /* a ring of cap entries (a power of two), NULL until needed */
    uint32_t head, n, cap;
    uint32_t sacked, lost, rtx_out; /* bytes (see above) */
    uint32_t nsacked;               /* entries SACKed */
    uint32_t fack;                  /* the highest end SACKed or acknowledged (RACK.fack) */
    /* RACK (RFC 8985 6) */
    uint64_t rack_xmit_ns; /* RACK.xmit_ts: the latest sent of the segments delivered */
    uint32_t rack_end;     /* RACK.end_seq */
    uint64_t rack_rtt_ns;  /* RACK.rtt */
    uint64_t min_rtt_ns;   /* RACK.min_RTT (windowed; 0: none yet) */
    uint64_t min_rtt_at;   /* when it was taken */
    uint64_t reo_due;      /* the reordering timer's deadline, 0: not armed */
    uint64_t rto_due;      /* the RTO's own deadline at the last restart (rtx_due may be earlier) */
    uint32_t reo_mult;     /* RACK.reo_wnd_mult */
    uint32_t reo_persist;  /* recoveries left before reo_mult goes back to 1 */
    uint32_t dsack_round;  /* one reo_mult step per round trip: the round ends past this */
    bool dsack_round_on;
    bool reordering_seen; /* RACK.reordering_seen */
    /* Recovery (RFC 6675 5, PRR RFC 6937) */
    bool in_recovery;
    uint32_t recover; /* RecoveryPoint: snd_max when it began */
    uint32_t prr_delivered, prr_out, recover_fs;
    uint32_t undo_retrans; /* retransmissions of the episode not yet reported spurious */
    bool undo_ok;          /* a reduction an undo may reverse */
    /* TLP (RFC 8985 7) */
    bool tlp_out;
    bool tlp_is_rtx;
    bool tlp_dsack;      /* a D-SACK of the probe's range would be the probe's (a retransmission) */
    uint8_t prompt_acks; /* clean ACKs in a row of at most one segment, not delayed (pto_at) */
    uint32_t tlp_end;
    /* For hp_tcp_info */
    uint32_t reordering;                /* segments; 3 until more is seen */
    uint64_t delivered;                 /* bytes acknowledged or SACKed, ever */
    uint64_t round_delivered, round_ns; /* at the start of the rate's round */
    uint32_t round_end;
    uint64_t rate; /* bytes/s over the last round */
};

struct hp_tcp_sock;
struct hp_tcp_repr;

/* Set the scoreboard up for a new connection (no memory yet). */
void hp__tcp_sb_init(struct hp__tcp_sb *sb);
/* Free the log (connection teardown). */
void hp__tcp_sb_free(struct hp_tcp_sock *c);
/* Forget everything in flight (the caller goes back to SND.UNA: the
 * persist timer's window opening); keeps RACK's estimates. */
void hp__tcp_sb_reset(struct hp_tcp_sock *c);

/* xmit sent [seq, end) (before snd_nxt / snd_max move): logs it, or marks
 * the entries it retransmits; PRR counts it (prr_out). The common cases
 * are inline (tcp_internal.h, hp__tcp_sb_sent); this is the rest. */
void hp__tcp_sb_sent_slow(struct hp_tcp_sock *c, uint32_t seq, uint32_t end);
/* The ACK path when nothing is SACKed, lost or probing and the ACK has no
 * SACK blocks (HP__TCPF_SB_LOSS clear): drop what it acknowledges. */
void hp__tcp_sb_ack_clean(struct hp_tcp_sock *c);

/*
 * An acceptable ACK r has been processed up to the send window (SND.UNA
 * moved from old_una when it advanced): drop what it acknowledges, take
 * its SACK blocks (D-SACK included), RACK's estimates and loss
 * detection, recovery with PRR (cwnd), the tail loss probe's outcome, an
 * undo on D-SACK. The caller then calls hp__tcp_output.
 */
void hp__tcp_sb_ack(struct hp_tcp_sock *c, const struct hp_tcp_repr *r, uint32_t old_una);

/* Bytes RFC 6675's pipe holds: FlightSize less what is SACKed or lost,
 * plus retransmissions in flight. */
uint32_t hp__tcp_sb_pipe(const struct hp_tcp_sock *c);

/* The next range to retransmit: the lowest entry deemed lost whose
 * retransmission is not out. @return false when there is none. */
bool hp__tcp_sb_next_lost(const struct hp_tcp_sock *c, uint32_t *seq, uint32_t *end);

/* The retransmission timer's deadline due, moved earlier when the
 * connection may send a tail loss probe (RFC 8985 7.2: PTO, never after
 * the RTO) or a reordering timer is armed. */
uint64_t hp__tcp_sb_due(struct hp_tcp_sock *c, uint64_t due);

/* The retransmission timer fired at its deadline: the reordering timer's
 * work, or a tail loss probe. @return true when done (the RTO's work is
 * not to be done). */
bool hp__tcp_sb_timer(struct hp_tcp_sock *c);

/* A retransmission timeout (RFC 8985 6.3, RFC 6675 5.1): recovery ends,
 * the first segment and those sent more than RACK.rtt + reo_wnd ago are
 * lost (to be resent in order, SACKed ones not); SACK information the
 * peer reneged on is dropped. @return false when the connection has no
 * log (the caller goes back to SND.UNA instead). */
bool hp__tcp_sb_rto(struct hp_tcp_sock *c);

/* Deem the segments in flight larger than size lost and retransmittable
 * (a smaller path MTU: they were dropped, RFC 1191 / RFC 8201), without a
 * congestion response. @return false without a log. */
bool hp__tcp_sb_mark_larger(struct hp_tcp_sock *c, uint32_t size);
/* The segment starting at seq is an MTU probe (RFC 4821). */
void hp__tcp_sb_mark_probe(struct hp_tcp_sock *c, uint32_t seq);

#endif
