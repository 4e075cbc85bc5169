/* SPDX-License-Identifier: BSD-3-Clause */
/* NewReno: slow start and congestion avoidance with byte counting, fast retransmit and recovery with partial ACKs, timeouts; and the dispatch to CUBIC (tcp_cubic.c). */
#include <stddef.h>

#include "tcp_cc.h"
#include "tcp_cubic.h"
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

static bool cubic(const struct hp__tcp_cc *cc, const struct hp__tcp_cubic *x)
{
    return cc->algo == HP__TCP_CC_CUBIC && x;
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
        .algo = HP__TCP_CC_NEWRENO,
    };
}

void hp__tcp_cc_set_algo(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, unsigned algo,
                         uint32_t snd_max)
{
    cc->algo = HP__TCP_CC_NEWRENO;
    cc->hs = HP__HS_OFF;
    if (algo != HP__TCP_CC_CUBIC)
        return;
    cc->algo = HP__TCP_CC_CUBIC;
    hp__tcp_cubic_init(cc, x, snd_max);
}

const char *hp__tcp_cc_name(unsigned algo)
{
    return algo == HP__TCP_CC_CUBIC ? "cubic" : "newreno";
}

/* Slow start's growth for `acked` bytes (RFC 3465 2.2, 2.3). */
static uint32_t ss_inc(const struct hp__tcp_cc *cc, uint32_t acked, uint32_t smss)
{
    uint32_t l = cc->after_rto ? smss : cc->ss_limit * smss;
    return min32(acked, l);
}

/* Outside recovery: slow start or congestion avoidance. */
static void open_window(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t acked,
                        const struct hp__tcp_cc_ev *ev)
{
    uint32_t smss = ev->smss;
    if (!hp__tcp_cc_used(cc, ev->flight))
        return; /* application-limited: nothing grows (tcp_cc.h) */
    if (cc->cwnd < cc->ssthresh) {
        uint32_t inc = ss_inc(cc, acked, smss);
        /* HyStart++ needs N_RTT_SAMPLE (8) segments in a round; smaller
         * flights skip it (tcp_cubic.c). */
        if (cc->hs != HP__HS_OFF && (ev->flight >= 8u * smss || cc->hs == HP__HS_CSS) &&
            cubic(cc, x))
            inc = hp__tcp_hystart_ack(cc, x, inc, ev);
        cc->cwnd = grow(cc->cwnd, inc);
        if (cc->cwnd >= cc->ssthresh)
            cc->after_rto = false;
        return;
    }
    cc->after_rto = false;
    if (cubic(cc, x)) {
        hp__tcp_cubic_ca(cc, x, acked, ev);
        return;
    }
    /* Congestion avoidance: one SMSS per cwnd of acknowledged bytes (RFC 3465 2.1). */
    cc->bytes_acked += min32(acked, UINT32_MAX - cc->bytes_acked);
    if (cc->bytes_acked >= cc->cwnd) {
        cc->bytes_acked -= cc->cwnd;
        cc->cwnd = grow(cc->cwnd, smss);
    }
}

unsigned hp__tcp_cc_ack(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t acked,
                        const struct hp__tcp_cc_ev *ev)
{
    if (acked == 0)
        return HP__TCP_CC_NONE;
    cc->dupacks = 0;
    uint32_t smss = ev->smss;

    if (cc->in_recovery) {
        if (hp__seq_gt(ev->snd_una, cc->recover)) {
            /* Full ACK: all data outstanding at the fast retransmit is
             * acknowledged (RFC 6582 3.2). */
            uint32_t flight = ev->snd_max - ev->snd_una;
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
        if (cc->partial_acks < UINT16_MAX)
            cc->partial_acks++;
        return HP__TCP_CC_RETRANSMIT | (cc->partial_acks > 1 ? HP__TCP_CC_KEEP_RTO : 0);
    }
    open_window(cc, x, acked, ev);
    return HP__TCP_CC_NONE;
}

unsigned hp__tcp_cc_on_ack(struct hp__tcp_cc *cc, uint32_t acked, uint32_t snd_una,
                           uint32_t snd_max, uint32_t smss)
{
    struct hp__tcp_cc_ev ev = {.snd_una = snd_una,
                               .snd_max = snd_max,
                               .smss = smss,
                               .flight = snd_max - snd_una + acked};
    return hp__tcp_cc_ack(cc, NULL, acked, &ev);
}

/* Remember what an undo restores (the state before a reduction). */
static void save(const struct hp__tcp_cc *cc, struct hp__tcp_cubic *x)
{
    if (!x)
        return;
    x->prior_cwnd = cc->cwnd;
    x->prior_ssthresh = cc->ssthresh;
    x->prior_w_max = x->w_max;
}

uint32_t hp__tcp_cc_reduce(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                           const struct hp__tcp_cc_ev *ev)
{
    save(cc, x);
    cc->hs = HP__HS_OFF;
    if (cubic(cc, x))
        cc->ssthresh = hp__tcp_cubic_reduce(cc, x, ev->smss);
    else
        cc->ssthresh = half_flight(ev->snd_una, ev->snd_max, ev->smss);
    cc->bytes_acked = 0;
    return cc->ssthresh;
}

void hp__tcp_cc_undo(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x)
{
    if (!x || !x->prior_cwnd)
        return;
    cc->cwnd = max32(cc->cwnd, x->prior_cwnd);
    cc->ssthresh =
        x->prior_ssthresh == UINT32_MAX ? UINT32_MAX : max32(cc->ssthresh, x->prior_ssthresh);
    x->w_max = max32(x->w_max, x->prior_w_max);
    x->prior_cwnd = 0;
    cc->in_recovery = false;
}

unsigned hp__tcp_cc_dupack(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                           const struct hp__tcp_cc_ev *ev)
{
    uint32_t smss = ev->smss;
    if (cc->in_recovery) {
        /* RFC 5681 3.2 step 4: each duplicate means a segment left the network. */
        cc->cwnd = grow(cc->cwnd, smss);
        return HP__TCP_CC_NONE;
    }
    if (cc->dupacks < UINT16_MAX)
        cc->dupacks++;
    if (cc->dupacks != 3)
        return HP__TCP_CC_NONE;
    /* RFC 6582 3.2: only when the ACK covers more than recover, so that the
     * duplicates from one loss episode start one fast retransmit only. */
    if (!hp__seq_gt(ev->snd_una, cc->recover))
        return HP__TCP_CC_NONE;
    hp__tcp_cc_reduce(cc, x, ev);
    cc->recover = ev->snd_max - 1;
    cc->cwnd = grow(cc->ssthresh, 3 * smss);
    cc->in_recovery = true;
    cc->partial_acks = 0;
    return HP__TCP_CC_RETRANSMIT;
}

unsigned hp__tcp_cc_on_dupack(struct hp__tcp_cc *cc, uint32_t snd_una, uint32_t snd_max,
                              uint32_t smss)
{
    struct hp__tcp_cc_ev ev = {.snd_una = snd_una, .snd_max = snd_max, .smss = smss};
    return hp__tcp_cc_dupack(cc, NULL, &ev);
}

void hp__tcp_cc_timeout(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                        const struct hp__tcp_cc_ev *ev, bool repeated)
{
    if (!repeated)
        hp__tcp_cc_reduce(cc, x, ev);
    cc->hs = HP__HS_OFF;
    cc->cwnd = ev->smss; /* the loss window, RFC 5681 3.1 */
    cc->recover = ev->snd_max - 1;
    cc->in_recovery = false;
    cc->dupacks = 0;
    cc->partial_acks = 0;
    cc->bytes_acked = 0; /* RFC 3465 2.1 */
    cc->after_rto = true;
    if (cubic(cc, x))
        x->epoch_ns = 0; /* RFC 9438 4.8: a new epoch after the timeout's slow start */
}

void hp__tcp_cc_on_timeout(struct hp__tcp_cc *cc, uint32_t snd_una, uint32_t snd_max, uint32_t smss,
                           bool repeated)
{
    struct hp__tcp_cc_ev ev = {.snd_una = snd_una, .snd_max = snd_max, .smss = smss};
    hp__tcp_cc_timeout(cc, NULL, &ev, repeated);
}

void hp__tcp_cc_after_idle(struct hp__tcp_cc *cc, uint32_t smss)
{
    cc->cwnd = min32(cc->cwnd, hp__tcp_cc_initial_window(smss));
}

void hp__tcp_cc_idle(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t smss)
{
    hp__tcp_cc_after_idle(cc, smss);
    if (cubic(cc, x))
        x->epoch_ns = 0;
}
