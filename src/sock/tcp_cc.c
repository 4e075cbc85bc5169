/* SPDX-License-Identifier: BSD-3-Clause */
/* NewReno: slow start and congestion avoidance with byte counting, fast retransmit and recovery with partial ACKs, timeouts. */
#include "tcp_cc.h"
#include "tcp_seq.h"

static uint32_t min32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static uint32_t max32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* cwnd + n, saturating at HP__TCP_CC_CWND_MAX. */
static uint32_t grow(uint32_t cwnd, uint32_t n)
{
    uint64_t c = (uint64_t)cwnd + n;
    return c > HP__TCP_CC_CWND_MAX ? HP__TCP_CC_CWND_MAX : (uint32_t)c;
}

/* RFC 5681 equation 4: half the data in flight, at least two segments. */
static uint32_t half_flight(uint32_t snd_una, uint32_t snd_max, uint32_t smss)
{
    uint32_t flight = snd_max - snd_una;
    return max32(flight / 2, 2 * smss);
}

uint32_t hp__tcp_cc_initial_window(uint32_t smss)
{
    return min32(10 * smss, max32(2 * smss, 14600));
}

void hp__tcp_cc_init(struct hp__tcp_cc *cc, uint32_t smss, uint32_t iss, bool syn_lost)
{
    *cc = (struct hp__tcp_cc){
        .cwnd = syn_lost ? smss : hp__tcp_cc_initial_window(smss),
        .ssthresh = UINT32_MAX,
        .recover = iss,
        .ss_limit = 2,
    };
}

unsigned hp__tcp_cc_on_ack(struct hp__tcp_cc *cc, uint32_t acked, uint32_t snd_una, uint32_t snd_max,
                           uint32_t smss)
{
    if (acked == 0)
        return HP__TCP_CC_NONE;
    cc->dupacks = 0;

    if (cc->in_recovery) {
        if (hp__seq_gt(snd_una, cc->recover)) {
            /* Full ACK: all data outstanding at the fast retransmit is
             * acknowledged (RFC 6582 3.2). */
            uint32_t flight = snd_max - snd_una;
            cc->cwnd = min32(cc->ssthresh, grow(max32(flight, smss), smss));
            cc->in_recovery = false;
            cc->bytes_acked = 0;
            return HP__TCP_CC_NONE;
        }
        /* Partial ACK: the segment at snd_una was lost too. Deflate by what
         * left the network, add back one segment for the retransmission. */
        cc->cwnd = cc->cwnd > acked ? cc->cwnd - acked : 0;
        if (acked >= smss)
            cc->cwnd = grow(cc->cwnd, smss);
        cc->partial_acks++;
        return HP__TCP_CC_RETRANSMIT | (cc->partial_acks > 1 ? HP__TCP_CC_KEEP_RTO : 0);
    }

    if (cc->cwnd < cc->ssthresh) {
        /* Slow start with appropriate byte counting (RFC 3465 2.2). */
        uint32_t l = cc->after_rto ? smss : cc->ss_limit * smss;
        cc->cwnd = grow(cc->cwnd, min32(acked, l));
        if (cc->cwnd >= cc->ssthresh)
            cc->after_rto = false;
        return HP__TCP_CC_NONE;
    }

    /* Congestion avoidance: one SMSS per cwnd of acknowledged bytes (RFC 3465 2.1). */
    cc->after_rto = false;
    cc->bytes_acked += min32(acked, UINT32_MAX - cc->bytes_acked);
    if (cc->bytes_acked >= cc->cwnd) {
        cc->bytes_acked -= cc->cwnd;
        cc->cwnd = grow(cc->cwnd, smss);
    }
    return HP__TCP_CC_NONE;
}

unsigned hp__tcp_cc_on_dupack(struct hp__tcp_cc *cc, uint32_t snd_una, uint32_t snd_max, uint32_t smss)
{
    if (cc->in_recovery) {
        /* RFC 5681 3.2 step 4: each duplicate means a segment left the network. */
        cc->cwnd = grow(cc->cwnd, smss);
        return HP__TCP_CC_NONE;
    }
    if (cc->dupacks < UINT32_MAX)
        cc->dupacks++;
    if (cc->dupacks != 3)
        return HP__TCP_CC_NONE;
    /* RFC 6582 3.2: only when the ACK covers more than recover, so that the
     * duplicates from one loss episode start one fast retransmit only. */
    if (!hp__seq_gt(snd_una, cc->recover))
        return HP__TCP_CC_NONE;
    cc->ssthresh = half_flight(snd_una, snd_max, smss);
    cc->recover = snd_max - 1;
    cc->cwnd = grow(cc->ssthresh, 3 * smss);
    cc->in_recovery = true;
    cc->partial_acks = 0;
    cc->bytes_acked = 0;
    return HP__TCP_CC_RETRANSMIT;
}

void hp__tcp_cc_on_timeout(struct hp__tcp_cc *cc, uint32_t snd_una, uint32_t snd_max, uint32_t smss,
                           bool repeated)
{
    if (!repeated)
        cc->ssthresh = half_flight(snd_una, snd_max, smss);
    cc->cwnd = smss; /* the loss window, RFC 5681 3.1 */
    cc->recover = snd_max - 1;
    cc->in_recovery = false;
    cc->dupacks = 0;
    cc->partial_acks = 0;
    cc->bytes_acked = 0; /* RFC 3465 2.1 */
    cc->after_rto = true;
}

void hp__tcp_cc_after_idle(struct hp__tcp_cc *cc, uint32_t smss)
{
    cc->cwnd = min32(cc->cwnd, hp__tcp_cc_initial_window(smss));
}
