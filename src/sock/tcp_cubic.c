/* SPDX-License-Identifier: BSD-3-Clause */
/* CUBIC congestion avoidance (RFC 9438) and the HyStart++ slow start exit (RFC 9406), in bytes. */
#include "tcp_cubic.h"
#include "tcp_seq.h"

/* RFC 9438 4.1: C = 0.4 (segments / s^3), beta = 0.7; alpha for W_est
 * (4.3) is 3 (1 - beta) / (1 + beta) = 9 / 17. */
#define CUBIC_C        0.4
#define CUBIC_BETA_NUM 7u
#define CUBIC_BETA_DEN 10u
#define ALPHA_NUM      9u
#define ALPHA_DEN      17u

/* RFC 9406 4.3. */
#define HS_MIN_RTT_THRESH_US  4000u
#define HS_MAX_RTT_THRESH_US  16000u
#define HS_MIN_RTT_DIVISOR    8u
#define HS_N_RTT_SAMPLE       8u
#define HS_CSS_GROWTH_DIVISOR 4u
#define HS_CSS_ROUNDS         5u
/* A round with fewer segments in flight cannot give N_RTT_SAMPLE samples:
 * HyStart++ skips it, so an application-limited request/response flow
 * never touches the cold state. */
#define HS_MIN_FLIGHT_SEGS HS_N_RTT_SAMPLE
/* The ACK train (below): ACKs at most this far apart belong to one train;
 * a train counts from a window this large; its yardstick gets this much
 * slack for ACKs that bunch up (delayed ACKs, a receive burst's batch), as
 * Linux's hystart_ack_delay allows at most. */
#define HS_ACK_DELTA_NS 2000000ull
#define HS_LOW_WINDOW   16u
#define HS_ACK_SLACK_US 1000u

static uint32_t max32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

double hp__tcp_cbrt(double v)
{
    if (v <= 0)
        return 0;
    double x = v < 1 ? 1 : v / 3; /* above the root for v >= 1: Newton descends */
    for (int i = 0; i < 100; i++) {
        double n = (2 * x + v / (x * x)) / 3;
        if (n >= x && i > 0)
            break;
        x = n;
    }
    return x;
}

void hp__tcp_cubic_init_ext(struct hp__tcp_cubic *x)
{
    *x = (struct hp__tcp_cubic){
        .hs_cur_min_us = UINT32_MAX,
        .hs_last_min_us = UINT32_MAX,
        .hs_css_base_us = UINT32_MAX,
        .hs_min_us = UINT32_MAX,
    };
}

void hp__tcp_cubic_init(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t round_end)
{
    if (x)
        hp__tcp_cubic_init_ext(x);
    cc->hs = cc->ssthresh == UINT32_MAX ? HP__HS_SS : HP__HS_OFF;
    cc->hs_samples = 0;
    cc->hs_css_rounds = 0;
    cc->hs_round_end = round_end;
}

/* ---- HyStart++ ------------------------------------------------------------------- */

/* The round ended (RFC 9406 4.2: "At the start of each round"). */
static void hs_new_round(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t snd_max,
                         uint64_t now_ns)
{
    x->hs_last_min_us = x->hs_cur_min_us;
    x->hs_cur_min_us = UINT32_MAX;
    cc->hs_samples = 0;
    cc->hs_round_end = snd_max;
    x->hs_round_ns = x->hs_last_ack_ns = now_ns ? now_ns : 1;
    if (cc->hs == HP__HS_CSS && ++cc->hs_css_rounds >= HS_CSS_ROUNDS) {
        /* CSS_ROUNDS in conservative slow start: enter congestion avoidance. */
        cc->ssthresh = cc->cwnd;
        cc->hs = HP__HS_OFF;
    }
}

/*
 * The ACK train (Linux's HyStart, Ha and Rhee 2011; RFC 9406 has only the
 * delay test): the ACKs of one round come at the bottleneck's pace, so a
 * train of them, unbroken, lasting over half the minimum RTT says the
 * flight already fills the pipe. The delay test cannot see that yet: a
 * round's first RTT samples are those of segments sent when the previous,
 * smaller flight left no queue; and the next doubling needs a queue as
 * large as the pipe (the one-BDP queue of `hotpath bench paths` overflowed
 * by hundreds of segments). @return true when slow start is to end.
 */
static bool hs_ack_train(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                         const struct hp__tcp_cc_ev *ev)
{
    uint64_t now = ev->now_ns;
    /* A gap up to a quarter of the minimum RTT still joins the train: a
     * receive path that hands ACKs over in batches (afpacket's blocks, a
     * loaded bridge running late) must not break it on a long path. */
    uint64_t delta = x->hs_min_us == UINT32_MAX ? 0 : (uint64_t)x->hs_min_us * 1000u / 4;
    if (delta < HS_ACK_DELTA_NS)
        delta = HS_ACK_DELTA_NS;
    if (!x->hs_round_ns || now < x->hs_last_ack_ns || now - x->hs_last_ack_ns > delta)
        return false;
    x->hs_last_ack_ns = now;
    if (x->hs_min_us == UINT32_MAX || cc->cwnd < HS_LOW_WINDOW * ev->smss)
        return false;
    uint64_t half_ns = ((uint64_t)x->hs_min_us + HS_ACK_SLACK_US) * 1000u / 2;
    return now - x->hs_round_ns > half_ns;
}

uint32_t hp__tcp_hystart_ack(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t inc,
                             const struct hp__tcp_cc_ev *ev)
{
    if (ev->flight < HS_MIN_FLIGHT_SEGS * ev->smss)
        return cc->hs == HP__HS_CSS ? inc / HS_CSS_GROWTH_DIVISOR : inc;
    if (hp__seq_ge(ev->snd_una, cc->hs_round_end))
        hs_new_round(cc, x, ev->snd_max, ev->now_ns);
    if (cc->hs == HP__HS_OFF)
        return 0; /* slow start just ended: nothing more this ACK */
    if (ev->rtt_us && ev->rtt_us < x->hs_min_us)
        x->hs_min_us = ev->rtt_us;
    if (hs_ack_train(cc, x, ev)) {
        cc->ssthresh = cc->cwnd;
        cc->hs = HP__HS_OFF;
        return 0;
    }
    if (ev->rtt_us) {
        if (ev->rtt_us < x->hs_cur_min_us)
            x->hs_cur_min_us = ev->rtt_us;
        if (cc->hs_samples < UINT16_MAX)
            cc->hs_samples++;
    }
    bool enough = cc->hs_samples >= HS_N_RTT_SAMPLE && x->hs_cur_min_us != UINT32_MAX &&
                  x->hs_last_min_us != UINT32_MAX;
    if (cc->hs == HP__HS_SS && enough) {
        uint32_t thresh = x->hs_last_min_us / HS_MIN_RTT_DIVISOR;
        if (thresh < HS_MIN_RTT_THRESH_US)
            thresh = HS_MIN_RTT_THRESH_US;
        if (thresh > HS_MAX_RTT_THRESH_US)
            thresh = HS_MAX_RTT_THRESH_US;
        if ((uint64_t)x->hs_cur_min_us >= (uint64_t)x->hs_last_min_us + thresh) {
            /* The RTT grew: a queue builds. Conservative slow start. */
            cc->hs = HP__HS_CSS;
            cc->hs_css_rounds = 0;
            x->hs_css_base_us = x->hs_cur_min_us;
        }
    } else if (cc->hs == HP__HS_CSS && enough && x->hs_cur_min_us < x->hs_css_base_us) {
        /* The increase was spurious: back to slow start. */
        cc->hs = HP__HS_SS;
        x->hs_css_base_us = UINT32_MAX;
    }
    return cc->hs == HP__HS_CSS ? inc / HS_CSS_GROWTH_DIVISOR : inc;
}

/* ---- CUBIC ------------------------------------------------------------------------- */

uint32_t hp__tcp_cubic_reduce(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t smss)
{
    uint32_t w = cc->cwnd;
    /* RFC 9438 4.7, fast convergence: a flow whose W_max shrinks releases
     * bandwidth for newer flows. */
    if (w < x->w_max)
        x->w_max =
            (uint32_t)((uint64_t)w * (CUBIC_BETA_DEN + CUBIC_BETA_NUM) / (2 * CUBIC_BETA_DEN));
    else
        x->w_max = w;
    x->epoch_ns = 0;
    uint32_t ss = (uint32_t)((uint64_t)w * CUBIC_BETA_NUM / CUBIC_BETA_DEN);
    return max32(ss, 2 * smss);
}

/* A new epoch begins (RFC 9438 4.2): K from W_max and cwnd now. */
static void epoch_start(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x,
                        const struct hp__tcp_cc_ev *ev)
{
    x->epoch_ns = ev->now_ns ? ev->now_ns : 1;
    x->cwnd_epoch = cc->cwnd;
    x->w_est = cc->cwnd;
    x->inc_acc = x->est_acc = 0;
    if (x->w_max <= cc->cwnd) {
        /* Past the last maximum (or none yet, after slow start): the
         * curve's plateau is here. */
        x->w_max = cc->cwnd;
        x->k_s = 0;
    } else {
        double segs = (double)(x->w_max - cc->cwnd) / ev->smss;
        x->k_s = hp__tcp_cbrt(segs / CUBIC_C);
    }
}

/* W_cubic(t) in bytes (RFC 9438 equation 1), t in seconds. */
static double w_cubic(const struct hp__tcp_cubic *x, double t, uint32_t smss)
{
    double d = t - x->k_s;
    return (CUBIC_C * d * d * d) * smss + x->w_max;
}

void hp__tcp_cubic_ca(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t acked,
                      const struct hp__tcp_cc_ev *ev)
{
    uint32_t smss = ev->smss ? ev->smss : 1;
    if (!x->epoch_ns)
        epoch_start(cc, x, ev);
    uint32_t cwnd = cc->cwnd;
    double t = ev->now_ns > x->epoch_ns ? (double)(ev->now_ns - x->epoch_ns) / 1e9 : 0;
    double rtt = (double)ev->srtt_us / 1e6;

    /* W_est (RFC 9438 4.3): alpha_cubic per RTT, 1 once past W_max. */
    uint64_t an = x->w_est >= x->w_max ? 1 : ALPHA_NUM, ad = x->w_est >= x->w_max ? 1 : ALPHA_DEN;
    x->est_acc += (uint64_t)acked * smss * an;
    uint64_t per = (uint64_t)cwnd * ad;
    if (x->est_acc >= per) {
        uint64_t add = x->est_acc / per;
        x->est_acc %= per;
        uint64_t w = x->w_est + add;
        x->w_est = w > HP__TCP_CC_CWND_MAX ? HP__TCP_CC_CWND_MAX : (uint32_t)w;
    }

    if (w_cubic(x, t, smss) < x->w_est) {
        /* The Reno-friendly region (4.3). */
        if (x->w_est > cwnd)
            cc->cwnd = x->w_est;
        return;
    }
    /* Concave or convex region (4.4, 4.5): towards W_cubic(t + RTT). */
    double target = w_cubic(x, t + rtt, smss);
    if (target < cwnd)
        target = cwnd;
    if (target > 1.5 * cwnd)
        target = 1.5 * cwnd;
    uint64_t gap = (uint64_t)(target - cwnd);
    x->inc_acc += gap * acked;
    if (x->inc_acc >= cwnd) {
        uint64_t add = x->inc_acc / cwnd;
        x->inc_acc %= cwnd;
        uint64_t w = cwnd + add;
        cc->cwnd = w > HP__TCP_CC_CWND_MAX ? HP__TCP_CC_CWND_MAX : (uint32_t)w;
    }
}
