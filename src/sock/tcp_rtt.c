/* SPDX-License-Identifier: BSD-3-Clause */
/* RFC 6298 retransmission timeout: smoothed RTT, variance, back-off and Karn's rule, with RFC 7323 per-ACK samples. */
#include <errno.h>

#include "tcp_rtt.h"

void hp__tcp_rtt_cfg_default(struct hp__tcp_rtt_cfg *cfg)
{
    cfg->min_rto_us = HP__TCP_RTO_MIN_US;
    cfg->max_rto_us = HP__TCP_RTO_MAX_US;
    cfg->initial_rto_us = HP__TCP_RTO_INITIAL_US;
    cfg->granularity_us = HP__TCP_RTO_G_US;
}

int hp__tcp_rtt_init(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg)
{
    struct hp__tcp_rtt_cfg def;
    if (!cfg) {
        hp__tcp_rtt_cfg_default(&def);
        cfg = &def;
    }
    if (cfg->min_rto_us == 0 || cfg->min_rto_us > cfg->initial_rto_us ||
        cfg->initial_rto_us > cfg->max_rto_us || cfg->max_rto_us < HP__TCP_RTO_MAX_US)
        return -EINVAL;
    *r = (struct hp__tcp_rtt){
        .rto_us = cfg->initial_rto_us,
    };
    return 0;
}

static uint32_t clamp_rto(const struct hp__tcp_rtt_cfg *cfg, uint64_t rto)
{
    if (rto < cfg->min_rto_us)
        return cfg->min_rto_us;
    if (rto > cfg->max_rto_us)
        return cfg->max_rto_us;
    return (uint32_t)rto;
}

/* One update with gains alpha / n and beta / n (n = 1: RFC 6298 2.3). */
static void update(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg, uint32_t rtt_us,
                   uint32_t n)
{
    if (rtt_us > HP__TCP_RTT_SAMPLE_MAX_US)
        rtt_us = HP__TCP_RTT_SAMPLE_MAX_US;
    int64_t m8 = (int64_t)rtt_us * 8;
    if (!r->has_sample) {
        /* RFC 6298 2.2: SRTT = R, RTTVAR = R/2. */
        r->srtt8 = (uint32_t)m8;
        r->rttvar8 = (uint32_t)(m8 / 2);
        r->has_sample = true;
    } else {
        /* RFC 6298 2.3, in this order: RTTVAR uses the SRTT before the update.
         * x += (target - x) * gain is the same as (1 - gain) x + gain target. */
        int64_t srtt8 = (int64_t)r->srtt8, rttvar8 = (int64_t)r->rttvar8;
        int64_t err = m8 - srtt8;
        int64_t abserr = err < 0 ? -err : err;
        if (n == 1) { /* the usual case: constant divisors, shifts instead of two idivs */
            rttvar8 += (abserr - rttvar8) / 4;
            srtt8 += err / 8;
        } else {
            rttvar8 += (abserr - rttvar8) / (4 * (int64_t)n);
            srtt8 += err / (8 * (int64_t)n);
        }
        r->rttvar8 = (uint32_t)rttvar8;
        r->srtt8 = (uint32_t)srtt8;
    }
    /* RTO = SRTT + max(G, K * RTTVAR), rounded up to whole us. */
    uint64_t var8 = HP__TCP_RTO_K * (uint64_t)r->rttvar8, g8 = (uint64_t)cfg->granularity_us * 8;
    uint64_t rto = ((uint64_t)r->srtt8 + (var8 > g8 ? var8 : g8) + 7) / 8;
    r->rto_us = clamp_rto(cfg, rto);
    r->backoff = 0; /* RFC 6298 section 5, after 5.7: a new sample collapses the back-off */
}

int hp__tcp_rtt_sample(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg, uint32_t rtt_us,
                       bool retransmitted)
{
    if (retransmitted)
        return 0; /* Karn's algorithm, RFC 6298 section 3 */
    update(r, cfg, rtt_us, 1);
    return 1;
}

void hp__tcp_rtt_sample_ts(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg,
                           uint32_t rtt_us, uint32_t flight, uint32_t smss)
{
    uint32_t n = 1;
    uint64_t two = 2 * (uint64_t)smss;
    if (smss && flight > two) /* more than one: a division (most samples skip it) */
        n = (uint32_t)(((uint64_t)flight + two - 1) / two); /* ceiling */
    update(r, cfg, rtt_us, n);
}

void hp__tcp_rtt_timeout(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg)
{
    /* RFC 6298 5.5: back off; the cap of section 2.5 applies. */
    r->rto_us = clamp_rto(cfg, 2 * (uint64_t)r->rto_us);
    if (r->backoff < UINT16_MAX)
        r->backoff++;
}

void hp__tcp_rtt_established(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *cfg,
                             bool syn_timed_out)
{
    if (syn_timed_out) {
        r->rto_us = clamp_rto(cfg, HP__TCP_RTO_SYN_US);
        r->backoff = 0;
    }
}
