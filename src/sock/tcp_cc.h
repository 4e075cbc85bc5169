/* SPDX-License-Identifier: BSD-3-Clause */
/* Congestion control: NewReno (RFC 5681, RFC 6582) with appropriate byte counting (RFC 3465), and CUBIC (RFC 9438) with HyStart++ (RFC 9406); functions over a small hot state and a cold one. */
#ifndef HOTPATH_SOCK_TCP_CC_H
#define HOTPATH_SOCK_TCP_CC_H

#include <stdbool.h>
#include <stdint.h>

/*
 * How the caller uses it. The caller owns the send sequence variables and
 * passes them in; this module owns cwnd and ssthresh and says when to
 * retransmit. All sizes are bytes, SMSS is the sender MSS (RFC 5681
 * section 2; 1 .. 65535, it comes from a 16-bit option), sequence numbers are compared modulo 2^32 (tcp_seq.h).
 *
 *  - snd_una: SND.UNA after the ACK being processed;
 *  - snd_max: one past the highest sequence number ever sent (SND.NXT,
 *    unless the caller rewinds SND.NXT to retransmit);
 *  - FlightSize (RFC 5681 section 2) is snd_max - snd_una.
 *
 * An ACK that advances SND.UNA goes to hp__tcp_cc_on_ack (hp__tcp_cc_ack
 * with the algorithm's context). An ACK that is a duplicate by RFC 5681
 * section 2's definition (data outstanding, no data, no SYN or FIN,
 * SEG.ACK == SND.UNA, same window) goes to hp__tcp_cc_on_dupack, when
 * the connection does not use SACK-based recovery (tcp_sack.c, which
 * reduces the window with hp__tcp_cc_reduce and PRR instead). Any other
 * ACK goes to neither. The caller may send when snd_max - snd_una < cwnd
 * (and the peer's window allows).
 *
 * The algorithm (HP__TCP_CC_NEWRENO or HP__TCP_CC_CUBIC) decides three
 * things only: the window growth in congestion avoidance, the slow start
 * exit (HyStart++, CUBIC only) and the ssthresh of a congestion event.
 * Loss recovery (NewReno's partial ACKs here, or SACK and PRR) is the
 * same for both. CUBIC's own state is cold (struct hp__tcp_cubic): only
 * congestion avoidance, a congestion event and slow start with a large
 * flight touch it, so that a request/response connection reads none of it.
 *
 * An application-limited sender's cwnd does not grow (RFC 9438 5.8, RFC
 * 7661's validated phase): an ACK grows it only when the flight it found
 * was at least half of cwnd (hp__tcp_cc_used). Of RFC 7661 only that:
 * cwnd is not reduced after a non-validated period (RFC 5681 4.1's
 * restart after idle is, hp__tcp_cc_idle). Not implemented here: limited
 * transmit (RFC 3042, the caller's choice on the first two duplicates).
 */

/* What the caller must do after an event (a bit set). */
enum {
    HP__TCP_CC_NONE = 0,
    /* Retransmit the first unacknowledged segment (at snd_una) now. */
    HP__TCP_CC_RETRANSMIT = 1u << 0,
    /* Do not restart the retransmission timer for this ACK (RFC 6582
     * section 3.2: only the first partial ACK of a recovery resets it, the
     * "Impatient" variant of its timer discussion). Without the bit, an
     * ACK of new data restarts the timer as RFC 6298 5.3 says. */
    HP__TCP_CC_KEEP_RTO = 1u << 1,
};

/* The algorithms (hp_tcp_config.cc and HP_TCP_OPT_CC use the public
 * HP_TCP_CC_* values, which are these). */
#define HP__TCP_CC_NEWRENO 1u
#define HP__TCP_CC_CUBIC   2u

/* cwnd never grows past 1 GiB, the largest window RFC 7323 2.3 allows. */
#define HP__TCP_CC_CWND_MAX (1u << 30)

/* HyStart++ states (RFC 9406 4.2). */
enum { HP__HS_OFF = 0, HP__HS_SS, HP__HS_CSS };

struct hp__tcp_cc {
    uint32_t cwnd;         /* congestion window */
    uint32_t ssthresh;     /* slow start threshold */
    uint32_t recover;      /* RFC 6582: highest sequence number sent when
                              * the last fast retransmit or timeout happened */
    uint32_t bytes_acked;  /* RFC 3465 2.1: octets acknowledged in congestion avoidance */
    uint16_t dupacks;      /* consecutive duplicate ACKs (saturating) */
    uint16_t partial_acks; /* partial ACKs in this recovery (saturating) */
    uint8_t ss_limit;      /* RFC 3465 L, in SMSS: 2 (default) or 1 */
    bool in_recovery;      /* in NewReno fast recovery (RFC 6582) */
    bool after_rto;        /* slow start after a timeout: L = 1 SMSS */
    uint8_t algo;          /* HP__TCP_CC_NEWRENO or HP__TCP_CC_CUBIC */
    uint8_t hs;            /* HyStart++ state, HP__HS_* */
    uint8_t hs_css_rounds; /* rounds spent in conservative slow start */
    uint16_t hs_samples;   /* RTT samples in this round (saturating) */
    uint32_t hs_round_end; /* the round ends when snd_una passes this */
};

/* CUBIC's and HyStart++'s cold state, and what an undo restores. */
struct hp__tcp_cubic {
    uint32_t hs_cur_min_us;  /* HyStart++ currentRoundMinRTT (UINT32_MAX: none) */
    uint32_t hs_last_min_us; /* lastRoundMinRTT */
    uint32_t hs_css_base_us; /* cssBaselineMinRtt */
    uint32_t hs_min_us;      /* the least RTT seen in slow start (the ACK train's yardstick) */
    uint64_t hs_round_ns;    /* when this round's first ACK came (0: no round yet) */
    uint64_t hs_last_ack_ns; /* the last ACK of this round's unbroken train */
    uint32_t w_max;          /* RFC 9438 W_max, bytes */
    uint32_t w_est;          /* RFC 9438 4.3 W_est (Reno-friendly), bytes */
    uint32_t cwnd_epoch;     /* cwnd when the epoch began */
    uint64_t epoch_ns;       /* start of this congestion avoidance epoch, 0: none yet */
    double k_s;              /* RFC 9438 K, seconds */
    uint64_t inc_acc;        /* fractional growth carried from ACK to ACK */
    uint64_t est_acc;        /* the same for W_est */
    /* Before the last reduction (hp__tcp_cc_save / hp__tcp_cc_undo). */
    uint32_t prior_cwnd, prior_ssthresh, prior_w_max;
};

/* What the caller knows at an event. */
struct hp__tcp_cc_ev {
    uint32_t snd_una, snd_max, smss;
    uint64_t now_ns;
    uint32_t rtt_us;  /* an RTT sample from this ACK (0: none) */
    uint32_t srtt_us; /* the smoothed RTT (0: none yet) */
    uint32_t flight;  /* bytes in flight before this ACK (HyStart++'s round) */
};

/**
 * The initial window (RFC 6928 section 2):
 *     min(10 * MSS, max(2 * MSS, 14600))
 * MSS being SMSS. 14,600 caps it at ten 1460-byte segments; a small MSS
 * still gets two segments.
 */
uint32_t hp__tcp_cc_initial_window(uint32_t smss);

/**
 * Start congestion control for a connection whose handshake just ended,
 * with NewReno (hp__tcp_cc_set_algo chooses another).
 *
 * cwnd is the initial window, or one SMSS when the SYN or SYN-ACK had to
 * be retransmitted (syn_lost; RFC 5681 section 3.1). ssthresh starts
 * "arbitrarily high" (RFC 5681 3.1): UINT32_MAX; the caller may lower it
 * to the peer's window. recover = iss (RFC 6582 section 3.2).
 *
 * ss_limit is 2: slow start grows cwnd by up to 2 SMSS per ACK (RFC 3465
 * 2.2, L = 2 SMSS), which keeps slow start at its intended pace when the
 * peer delays ACKs. RFC 5681 3.1 makes 1 SMSS the standard and L = 2 an
 * experiment; set cc->ss_limit = 1 after init for strict RFC 5681.
 */
void hp__tcp_cc_init(struct hp__tcp_cc *cc, uint32_t smss, uint32_t iss, bool syn_lost);

/**
 * Use algorithm algo (HP__TCP_CC_NEWRENO or HP__TCP_CC_CUBIC) from now on;
 * x is CUBIC's state (zeroed here; may be NULL: then the calls below that
 * get NULL for it run as NewReno, until one gets a state). cwnd and
 * ssthresh stay; CUBIC starts HyStart++ when still in the initial slow
 * start (ssthresh UINT32_MAX) at round end iss (any value: the first ACK
 * starts a round). Unknown values leave NewReno.
 */
void hp__tcp_cc_set_algo(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, unsigned algo,
                         uint32_t snd_max);

/* CUBIC's state as it starts (no epoch, no W_max, no RTT measured), for a
 * connection's extension made after hp__tcp_cc_set_algo (tcp_internal.h). */
void hp__tcp_cubic_init_ext(struct hp__tcp_cubic *x);

/**
 * An ACK acknowledged `acked` new bytes (SND.UNA moved by that much, now
 * snd_una).
 *
 * Outside recovery:
 *  - slow start (cwnd < ssthresh): cwnd += min(acked, L) with L =
 *    ss_limit SMSS, or 1 SMSS in the slow start after a timeout (RFC 3465
 *    2.2 and 2.3; RFC 5681 3.1); with CUBIC, HyStart++ (RFC 9406) may
 *    move to its conservative slow start (a quarter of that growth) and
 *    then end slow start (ssthresh = cwnd);
 *  - congestion avoidance: NewReno: bytes_acked += acked, and each time it
 *    reaches cwnd, cwnd grows by SMSS and bytes_acked drops by cwnd: about
 *    one SMSS per RTT (RFC 3465 2.1, RFC 5681 3.1). CUBIC: towards
 *    W_cubic(t + RTT) or W_est, whichever is larger (RFC 9438 4.2-4.4).
 * In fast recovery (RFC 6582 section 3.2):
 *  - a full ACK (everything up to recover acknowledged) ends it, with
 *    cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS), the first of the
 *    two choices RFC 6582 gives, which avoids a burst when little is
 *    outstanding;
 *  - a partial ACK deflates cwnd by `acked`, adds back one SMSS if acked
 *    >= SMSS, stays in recovery and returns HP__TCP_CC_RETRANSMIT (the
 *    next hole starts at snd_una), plus HP__TCP_CC_KEEP_RTO from the second
 *    partial ACK on.
 * The duplicate ACK count starts again. acked = 0 does nothing.
 *
 * Returns a set of HP__TCP_CC_* bits.
 */
unsigned hp__tcp_cc_ack(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t acked,
                        const struct hp__tcp_cc_ev *ev);

/*
 * Whether the sender used its cwnd: the flight an ACK found (bytes
 * outstanding before it) was at least half of cwnd. Only then does the ACK
 * grow cwnd, in slow start and in congestion avoidance, and feed HyStart++
 * and CUBIC; a request/response flow's one-segment flights leave cwnd
 * where it is instead of raising it by every ACK to a window it never used
 * (and would one day send as a burst).
 *
 * That is RFC 7661's test for its validated phase (pipeACK >= cwnd / 2)
 * made per ACK, with the flight the ACK found for pipeACK. Linux's
 * tcp_is_cwnd_limited asks in slow start whether cwnd < 2x the window's
 * largest flight, which takes per-window state; this takes none, and a
 * burst that drains without more data behind it grows cwnd while its
 * flight is above half, to about 1.5x what it used rather than 2x. A
 * sender limited by cwnd refills the flight as ACKs come and is not
 * affected.
 */
static inline bool hp__tcp_cc_used(const struct hp__tcp_cc *cc, uint32_t flight)
{
    return 2 * (uint64_t)flight >= cc->cwnd;
}

/*
 * Whether hp__tcp_cc_ack for an ACK of new data that found `flight` bytes
 * outstanding changes anything: not outside recovery with no duplicates
 * counted and cwnd not used (the caller may skip the call then).
 */
static inline bool hp__tcp_cc_ack_acts(const struct hp__tcp_cc *cc, uint32_t flight)
{
    return cc->in_recovery || cc->dupacks != 0 || hp__tcp_cc_used(cc, flight);
}

/* hp__tcp_cc_ack for NewReno, without the context (tests): the flight
 * before the ACK is snd_max - snd_una + acked. */
unsigned hp__tcp_cc_on_ack(struct hp__tcp_cc *cc, uint32_t acked, uint32_t snd_una,
                           uint32_t snd_max, uint32_t smss);

/**
 * A duplicate ACK (snd_una = SEG.ACK = SND.UNA), for a connection without
 * SACK-based recovery.
 *
 * The third in a row starts fast retransmit (RFC 5681 3.2 steps 2-3), if
 * snd_una is past recover, i.e. this is not a stray duplicate from data
 * sent before the last recovery or timeout (RFC 6582 3.2):
 *     ssthresh = the algorithm's (NewReno: max(FlightSize / 2, 2 * SMSS);
 *                CUBIC: max(cwnd * 0.7, 2 * SMSS))
 *     recover  = snd_max - 1
 *     cwnd     = ssthresh + 3 * SMSS
 * and returns HP__TCP_CC_RETRANSMIT. Each further duplicate in recovery
 * inflates cwnd by SMSS (RFC 5681 3.2 step 4), letting the caller send new
 * data as segments leave the network. Otherwise nothing.
 *
 * Returns a set of HP__TCP_CC_* bits.
 */
unsigned hp__tcp_cc_dupack(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                           const struct hp__tcp_cc_ev *ev);
unsigned hp__tcp_cc_on_dupack(struct hp__tcp_cc *cc, uint32_t snd_una, uint32_t snd_max,
                              uint32_t smss);

/**
 * A congestion event other than a timeout (a loss found by SACK / RACK, an
 * ECN echo, a loss a tail loss probe revealed): remembers what an undo
 * would restore, sets ssthresh as the algorithm says (NewReno: RFC 5681
 * equation 4 on FlightSize; CUBIC: RFC 9438 4.6, with W_max and fast
 * convergence 4.7) and ends slow start and HyStart++. cwnd is the
 * caller's (PRR lowers it towards ssthresh, RFC 6937). @return ssthresh.
 */
uint32_t hp__tcp_cc_reduce(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                           const struct hp__tcp_cc_ev *ev);

/**
 * The reduction turned out spurious (every retransmission of the episode
 * was reported as a duplicate by D-SACK, RFC 2883 / RFC 9438 4.9): cwnd,
 * ssthresh and CUBIC's W_max come back to what they were before it.
 */
void hp__tcp_cc_undo(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x);

/**
 * The retransmission timer expired (RFC 5681 3.1 equation 4 and the loss
 * window; RFC 6582 3.2 on timeouts; RFC 9438 4.8):
 *     ssthresh = the algorithm's, as for hp__tcp_cc_reduce (not when `repeated`)
 *     cwnd     = 1 SMSS (the loss window)
 *     recover  = snd_max - 1
 * and fast recovery, if any, ends. repeated: the segment being
 * retransmitted was already retransmitted by the timer, so ssthresh is
 * held (RFC 5681 3.1, after equation 4). The caller retransmits the
 * first unacknowledged segment itself and backs off the RTO (tcp_rtt.h).
 */
void hp__tcp_cc_timeout(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                        const struct hp__tcp_cc_ev *ev, bool repeated);
void hp__tcp_cc_on_timeout(struct hp__tcp_cc *cc, uint32_t snd_una, uint32_t snd_max, uint32_t smss,
                           bool repeated);

/**
 * Restart after idle (RFC 5681 section 4.1): the caller is about to send
 * after sending nothing for more than one RTO; cwnd becomes the restart
 * window min(IW, cwnd), so an old cwnd is not sent as one burst into a
 * network that may have changed. Optional: RFC 5681 says SHOULD, and
 * request/response traffic may prefer to keep cwnd; the caller decides.
 * CUBIC's epoch starts again (RFC 9438 5.8: the idle time is no growth time).
 */
void hp__tcp_cc_after_idle(struct hp__tcp_cc *cc, uint32_t smss);
void hp__tcp_cc_idle(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t smss);

/* The algorithm's name ("newreno", "cubic"). */
const char *hp__tcp_cc_name(unsigned algo);

#endif
