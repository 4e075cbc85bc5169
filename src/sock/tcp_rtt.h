/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP retransmission timeout estimator of RFC 6298 (SRTT, RTTVAR, RTO, back-off, Karn) with RFC 7323 timestamp samples, in integer microseconds. */
#ifndef HOTPATH_SOCK_TCP_RTT_H
#define HOTPATH_SOCK_TCP_RTT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Units: microseconds. SRTT and RTTVAR are kept in eighths of a
 * microsecond, so alpha = 1/8 and beta = 1/4 (RFC 6298 section 2.3) lose
 * at most 1/8 us per sample to integer division; RTO is rounded up to a
 * whole microsecond. All arithmetic is 64-bit: samples up to 2^32 - 1 us.
 *
 * Minimum RTO. RFC 6298 section 2.4 says RTO SHOULD be rounded up to 1 s;
 * Linux uses 200 ms, and on today's networks 1 s makes every tail loss
 * cost a second. Our default is the Linux value, HP__TCP_RTO_MIN_US; pass
 * HP__TCP_RTO_MIN_RFC_US for the RFC's.
 *
 * Maximum RTO: RFC 6298 section 2.5 allows a cap of at least 60 s; ours
 * is 60 s by default, configurable upwards.
 *
 * Clock granularity G (RFC 6298 section 2.3, "max(G, K*RTTVAR)"): how
 * coarse our timers are. The stack's timers run from a nanosecond clock
 * read once per poll, so G is the poll interval; 1 ms by default.
 *
 * Not done here (the caller's choices):
 *  - RFC 6298 section 5 allows clearing SRTT and RTTVAR after several
 *    back-offs; we keep them, and a valid sample starts from them again.
 *  - Which segment to time: the caller times one segment per RTT with
 *    hp__tcp_rtt_sample, or every ACK with timestamps (below).
 */

#define HP__TCP_RTO_MIN_US     200000u   /* Linux's minimum: 200 ms */
#define HP__TCP_RTO_MIN_RFC_US 1000000u  /* RFC 6298 section 2.4: 1 s */
#define HP__TCP_RTO_MAX_US     60000000u /* RFC 6298 section 2.5: >= 60 s */
#define HP__TCP_RTO_INITIAL_US 1000000u  /* RFC 6298 section 2.1: 1 s */
#define HP__TCP_RTO_SYN_US     3000000u  /* RFC 6298 section 5.7: 3 s */
#define HP__TCP_RTO_G_US       1000u     /* clock granularity G: 1 ms */
#define HP__TCP_RTO_K          4u        /* RFC 6298 section 2 */

struct hp__tcp_rtt_cfg {
    uint32_t min_rto_us;     /* lower bound on RTO */
    uint32_t max_rto_us;     /* upper bound on RTO, also for back-off */
    uint32_t initial_rto_us; /* RTO before the first sample */
    uint32_t granularity_us; /* G */
};

/* A sample above this is taken as this, so that 8 x SRTT fits 32 bits
 * (every RTO is capped far below it anyway). */
#define HP__TCP_RTT_SAMPLE_MAX_US 500000000u

/* 16 bytes: it sits in every connection's hot lines (tcp_internal.h). The
 * bounds and G are the configuration's (one per stack), passed to every call. */
struct hp__tcp_rtt {
    uint32_t srtt8;   /* SRTT, in 1/8 us */
    uint32_t rttvar8; /* RTTVAR, in 1/8 us */
    uint32_t rto_us;  /* the RTO to arm the timer with (back-off included) */
    uint16_t backoff; /* timeouts since the last valid sample */
    bool has_sample;  /* SRTT and RTTVAR hold a measurement */
};

/* The defaults described above (min 200 ms, max 60 s, initial 1 s, G 1 ms). */
void hp__tcp_rtt_cfg_default(struct hp__tcp_rtt_cfg *cfg);

/**
 * Start an estimator: no sample, RTO = cfg->initial_rto_us (RFC 6298 2.1).
 * cfg NULL means the defaults. The estimator keeps no copy of cfg: every
 * later call takes the same configuration again (never NULL).
 *
 * Returns 0, or -EINVAL (r untouched) unless
 * 0 < min_rto_us <= initial_rto_us <= max_rto_us and
 * max_rto_us >= HP__TCP_RTO_MAX_US (RFC 6298 2.5 allows no lower cap).
 */
int hp__tcp_rtt_init(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg);

/**
 * A round-trip sample from a timed segment: rtt_us between sending it and
 * receiving the ACK that covers it.
 *
 * Karn's algorithm (RFC 6298 section 3): if the segment was ever
 * retransmitted, the ACK may answer either copy, so the sample is
 * ambiguous; pass retransmitted = true and it is ignored, keeping any
 * back-off in place (section 5.5 and Karn's second half).
 *
 * Otherwise: the first sample sets SRTT = R, RTTVAR = R/2 (section 2.2);
 * later ones RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, then SRTT = 7/8 SRTT +
 * 1/8 R (section 2.3); RTO = SRTT + max(G, 4 RTTVAR), within [min, max]
 * (sections 2.4, 2.5), and the back-off is cleared.
 *
 * Returns 1 when the sample was used, 0 when Karn's rule discarded it.
 */
int hp__tcp_rtt_sample(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg, uint32_t rtt_us,
                       bool retransmitted);

/**
 * A sample from the timestamps option (RFC 7323 section 4): rtt_us = now -
 * TSecr, for an ACK that acknowledges new data (segments that do not, such
 * as duplicate ACKs, MUST NOT be used). Because every retransmission
 * carries a fresh TSval, TSecr names the copy that was acknowledged and
 * Karn's rule is not needed. The peer echoes the TSval of the earliest
 * segment it has not acknowledged yet (RFC 7323 section 4.3's rules for
 * delayed and out-of-order ACKs), so a sample includes its ACK delay and
 * errs on the long side, which is what the RTO wants.
 *
 * One sample per ACK would be up to a window's worth per RTT and shrink
 * the estimator's memory to a fraction of an RTT, so, as RFC 7323 section
 * 4.2 (updating the RTO) suggests, the gains are divided by the number of
 * samples expected per RTT:
 *     ExpectedSamples = ceil(FlightSize / (2 * SMSS))
 *     alpha' = alpha / ExpectedSamples, beta' = beta / ExpectedSamples
 * flight: bytes outstanding (SND.NXT - SND.UNA) when the ACK arrived;
 * smss: the sender MSS. ExpectedSamples is at least 1 (also for smss 0).
 * The first sample follows section 2.2 as above. Always used.
 */
void hp__tcp_rtt_sample_ts(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg,
                           uint32_t rtt_us, uint32_t flight, uint32_t smss);

/**
 * The retransmission timer expired (RFC 6298 section 5.5): RTO doubles, up
 * to the maximum, until a valid sample arrives. Call once per expiry,
 * before re-arming the timer with hp__tcp_rtt_rto(r).
 */
void hp__tcp_rtt_timeout(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg);

/**
 * The handshake completed (RFC 6298 section 5.7): if the timer expired
 * while waiting for the SYN's ACK (syn_timed_out), RTO is re-initialised to
 * 3 s (within [min, max]) for the data phase and the back-off cleared; the
 * rule is meant for initial RTOs below 3 s, which ours are. Otherwise no
 * change.
 */
void hp__tcp_rtt_established(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg,
                             bool syn_timed_out);

/* The RTO to arm the retransmission timer with, in us. */
static inline uint32_t hp__tcp_rtt_rto(const struct hp__tcp_rtt *r)
{
    return r->rto_us;
}

/* SRTT and RTTVAR in whole us (rounded down); 0 before the first sample. */
static inline uint32_t hp__tcp_rtt_srtt_us(const struct hp__tcp_rtt *r)
{
    return (uint32_t)(r->srtt8 >> 3);
}

static inline uint32_t hp__tcp_rtt_rttvar_us(const struct hp__tcp_rtt *r)
{
    return (uint32_t)(r->rttvar8 >> 3);
}

#endif
