/* SPDX-License-Identifier: BSD-3-Clause */
/* The RFC 6298 estimator against values worked out by hand from the RFC's formulas: first and later samples, bounds, G, back-off, Karn, RFC 7323 samples. */
#include <errno.h>

#include <hotpath/pool.h>

#include "hp_test.h"
#include "sock/tcp_rtt.h"

/* The configuration the estimator under test was started with: the
 * estimator keeps none, every call takes it. */
static struct hp__tcp_rtt_cfg cfg_;

static void init_default(struct hp__tcp_rtt *r)
{
    HP_CHECK_EQ(hp__tcp_rtt_init(r, NULL), 0);
    hp__tcp_rtt_cfg_default(&cfg_);
}

static int init_cfg(struct hp__tcp_rtt *r, const struct hp__tcp_rtt_cfg *c)
{
    cfg_ = *c;
    return hp__tcp_rtt_init(r, c);
}

HP_TEST(tcp_rtt_initial)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    /* RFC 6298 2.1: 1 s before any sample. */
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1000000);
    HP_CHECK(!r.has_sample);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 0);
    HP_CHECK_EQ(r.backoff, 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_config_checked)
{
    struct hp__tcp_rtt r = {.rto_us = 7};
    struct hp__tcp_rtt_cfg c;
    hp__tcp_rtt_cfg_default(&c);
    HP_CHECK_EQ(c.min_rto_us, 200000);
    HP_CHECK_EQ(c.max_rto_us, 60000000);
    HP_CHECK_EQ(c.initial_rto_us, 1000000);
    HP_CHECK_EQ(c.granularity_us, 1000);
    struct hp__tcp_rtt_cfg bad = c;
    bad.min_rto_us = 0;
    HP_CHECK_EQ(hp__tcp_rtt_init(&r, &bad), -EINVAL);
    bad = c;
    bad.max_rto_us = 59000000; /* RFC 6298 2.5: the cap is at least 60 s */
    HP_CHECK_EQ(hp__tcp_rtt_init(&r, &bad), -EINVAL);
    bad = c;
    bad.min_rto_us = 2000000; /* above the initial RTO */
    HP_CHECK_EQ(hp__tcp_rtt_init(&r, &bad), -EINVAL);
    bad = c;
    bad.initial_rto_us = 70000000; /* above the maximum */
    HP_CHECK_EQ(hp__tcp_rtt_init(&r, &bad), -EINVAL);
    HP_CHECK_EQ(r.rto_us, 7); /* untouched */
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_rfc6298_sequence)
{
    struct hp__tcp_rtt r;
    init_default(&r); /* min 200 ms, G 1 ms */

    /* 2.2, R = 100 ms: SRTT = 100000, RTTVAR = 50000,
     * RTO = 100000 + max(1000, 4 * 50000) = 300000. */
    HP_CHECK_EQ(hp__tcp_rtt_sample(&r, &cfg_, 100000, false), 1);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 100000);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 50000);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 300000);

    /* 2.3, R = 120 ms: RTTVAR = 3/4 * 50000 + 1/4 * |100000 - 120000| = 42500,
     * SRTT = 7/8 * 100000 + 1/8 * 120000 = 102500,
     * RTO = 102500 + 4 * 42500 = 272500. */
    HP_CHECK_EQ(hp__tcp_rtt_sample(&r, &cfg_, 120000, false), 1);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 42500);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 102500);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 272500);

    /* R = 80 ms: RTTVAR = 3/4 * 42500 + 1/4 * 22500 = 37500,
     * SRTT = 7/8 * 102500 + 1/8 * 80000 = 99687.5,
     * RTO = 99687.5 + 150000 = 249687.5, rounded up. */
    HP_CHECK_EQ(hp__tcp_rtt_sample(&r, &cfg_, 80000, false), 1);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 37500);
    HP_CHECK_EQ(r.srtt8, 797500); /* 99687.5 * 8, exact */
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 99687);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 249688);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_min_rto_linux_and_rfc)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    /* R = 1 ms: 1000 + max(1000, 2000) = 3000, raised to 200 ms. */
    hp__tcp_rtt_sample(&r, &cfg_, 1000, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 200000);

    struct hp__tcp_rtt_cfg c;
    hp__tcp_rtt_cfg_default(&c);
    c.min_rto_us = HP__TCP_RTO_MIN_RFC_US; /* RFC 6298 2.4: 1 s */
    HP_REQUIRE_EQ(init_cfg(&r, &c), 0);
    hp__tcp_rtt_sample(&r, &cfg_, 1000, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1000000);
    /* R = 300 ms: 300000 + 600000 = 900000, still raised to 1 s. */
    HP_REQUIRE_EQ(init_cfg(&r, &c), 0);
    hp__tcp_rtt_sample(&r, &cfg_, 300000, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1000000);
    /* R = 400 ms: 400000 + 800000 = 1.2 s, above the minimum. */
    HP_REQUIRE_EQ(init_cfg(&r, &c), 0);
    hp__tcp_rtt_sample(&r, &cfg_, 400000, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1200000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_granularity)
{
    struct hp__tcp_rtt_cfg c;
    hp__tcp_rtt_cfg_default(&c);
    c.min_rto_us = 1;
    c.granularity_us = 10000; /* G = 10 ms */
    struct hp__tcp_rtt r;
    HP_REQUIRE_EQ(init_cfg(&r, &c), 0);
    /* R = 2 ms: RTTVAR 1 ms, 4 * RTTVAR = 4 ms < G: RTO = 2 + 10 ms. */
    hp__tcp_rtt_sample(&r, &cfg_, 2000, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 12000);
    /* A steady 50 ms path: RTTVAR decays towards 0 and RTO towards SRTT + G. */
    HP_REQUIRE_EQ(init_cfg(&r, &c), 0);
    for (int i = 0; i < 200; i++)
        hp__tcp_rtt_sample(&r, &cfg_, 50000, false);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 50000);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 0);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 60000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_backoff_doubles_and_caps)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    hp__tcp_rtt_sample(&r, &cfg_, 100000, false); /* RTO 300 ms */
    /* RFC 6298 5.5: 0.6, 1.2, 2.4, 4.8, 9.6, 19.2, 38.4 s, then the 60 s cap. */
    static const uint32_t want[] = {600000,   1200000,  2400000,  4800000,  9600000,
                                    19200000, 38400000, 60000000, 60000000, 60000000};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        hp__tcp_rtt_timeout(&r, &cfg_);
        HP_CHECK_EQ(hp__tcp_rtt_rto(&r), want[i]);
        HP_CHECK_EQ(r.backoff, i + 1);
    }
    /* SRTT and RTTVAR are untouched by timeouts. */
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 100000);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 50000);

    /* A larger configured cap is honoured. */
    struct hp__tcp_rtt_cfg c;
    hp__tcp_rtt_cfg_default(&c);
    c.max_rto_us = 120000000;
    HP_REQUIRE_EQ(init_cfg(&r, &c), 0);
    for (int i = 0; i < 6; i++)
        hp__tcp_rtt_timeout(&r, &cfg_); /* 1 s * 2^6 = 64 s */
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 64000000);
    hp__tcp_rtt_timeout(&r, &cfg_);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 120000000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_karn)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    /* No sample from a retransmitted segment, even the first. */
    HP_CHECK_EQ(hp__tcp_rtt_sample(&r, &cfg_, 5000, true), 0);
    HP_CHECK(!r.has_sample);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1000000);

    hp__tcp_rtt_sample(&r, &cfg_, 100000, false); /* RTO 300 ms */
    hp__tcp_rtt_timeout(&r, &cfg_);
    hp__tcp_rtt_timeout(&r, &cfg_); /* 1.2 s */
    /* The ACK of the retransmission: ambiguous, ignored, back-off kept. */
    HP_CHECK_EQ(hp__tcp_rtt_sample(&r, &cfg_, 10000, true), 0);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1200000);
    HP_CHECK_EQ(r.backoff, 2);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 100000);
    /* A sample from new data: section 2.3 again and the back-off collapses.
     * R = 100 ms: RTTVAR = 3/4 * 50000 = 37500, SRTT 100000,
     * RTO = 100000 + 150000. */
    HP_CHECK_EQ(hp__tcp_rtt_sample(&r, &cfg_, 100000, false), 1);
    HP_CHECK_EQ(r.backoff, 0);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 37500);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 250000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_syn_timeout_three_seconds)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    hp__tcp_rtt_timeout(&r, &cfg_); /* SYN lost: 2 s */
    hp__tcp_rtt_established(&r, &cfg_, true);
    /* RFC 6298 5.7: 3 s once data transmission begins. */
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 3000000);
    HP_CHECK_EQ(r.backoff, 0);
    init_default(&r);
    hp__tcp_rtt_established(&r, &cfg_, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 1000000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_timestamp_samples)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    /* The first sample: RFC 6298 2.2 whatever the flight. */
    hp__tcp_rtt_sample_ts(&r, &cfg_, 100000, 20 * 1460, 1460);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 100000);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 50000);
    /* RFC 7323 4.2: flight 10 SMSS, ExpectedSamples = ceil(10 / 2) = 5,
     * alpha' = 1/40, beta' = 1/20. R = 140 ms:
     * RTTVAR = 50000 + (40000 - 50000) / 20 = 49500,
     * SRTT = 100000 + 40000 / 40 = 101000, RTO = 101000 + 198000. */
    hp__tcp_rtt_sample_ts(&r, &cfg_, 140000, 10 * 1460, 1460);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r), 49500);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), 101000);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 299000);
    /* Flight of 8 SMSS + 1 byte: ceil(4.0003) = 5 as well. */
    struct hp__tcp_rtt a, b;
    init_default(&a);
    init_default(&b);
    hp__tcp_rtt_sample_ts(&a, &cfg_, 100000, 0, 1460);
    hp__tcp_rtt_sample_ts(&b, &cfg_, 100000, 0, 1460);
    hp__tcp_rtt_sample_ts(&a, &cfg_, 140000, 10 * 1460, 1460);
    hp__tcp_rtt_sample_ts(&b, &cfg_, 140000, 8 * 1460 + 1, 1460);
    HP_CHECK_EQ(a.srtt8, b.srtt8);
    HP_CHECK_EQ(a.rttvar8, b.rttvar8);
    /* One or two segments in flight (or smss 0): the plain RFC 6298 gains,
     * the same as hp__tcp_rtt_sample. */
    struct hp__tcp_rtt c;
    init_default(&c);
    hp__tcp_rtt_sample(&c, &cfg_, 100000, false);
    hp__tcp_rtt_sample(&c, &cfg_, 120000, false);
    init_default(&a);
    hp__tcp_rtt_sample_ts(&a, &cfg_, 100000, 1460, 1460);
    hp__tcp_rtt_sample_ts(&a, &cfg_, 120000, 2 * 1460, 1460);
    init_default(&b);
    hp__tcp_rtt_sample_ts(&b, &cfg_, 100000, 5000, 0);
    hp__tcp_rtt_sample_ts(&b, &cfg_, 120000, 5000, 0);
    HP_CHECK_EQ(a.srtt8, c.srtt8);
    HP_CHECK_EQ(a.rttvar8, c.rttvar8);
    HP_CHECK_EQ(b.srtt8, c.srtt8);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&a), 272500);
    /* A timestamp sample also ends a back-off. */
    hp__tcp_rtt_timeout(&a, &cfg_);
    hp__tcp_rtt_sample_ts(&a, &cfg_, 120000, 1460, 1460);
    HP_CHECK_EQ(a.backoff, 0);
    HP_CHECK_LT(hp__tcp_rtt_rto(&a), 300000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_rtt_extremes)
{
    struct hp__tcp_rtt r;
    init_default(&r);
    /* The largest sample: taken as HP__TCP_RTT_SAMPLE_MAX_US (8 x SRTT
     * fits 32 bits), RTO capped, no overflow. */
    hp__tcp_rtt_sample(&r, &cfg_, UINT32_MAX, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 60000000);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), HP__TCP_RTT_SAMPLE_MAX_US);
    hp__tcp_rtt_sample(&r, &cfg_, UINT32_MAX - 1, false);
    HP_CHECK_EQ(hp__tcp_rtt_srtt_us(&r), HP__TCP_RTT_SAMPLE_MAX_US);
    HP_CHECK_EQ(hp__tcp_rtt_rttvar_us(&r),
                187500000u); /* R/2, then 3/4 of it (RFC 6298 2.3, no error) */
    hp__tcp_rtt_sample(&r, &cfg_, 0, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 60000000);
    HP_CHECK_LT(hp__tcp_rtt_srtt_us(&r), HP__TCP_RTT_SAMPLE_MAX_US);
    /* A zero sample (a coarse timestamp clock) gives the minimum. */
    init_default(&r);
    hp__tcp_rtt_sample(&r, &cfg_, 0, false);
    HP_CHECK_EQ(hp__tcp_rtt_rto(&r), 200000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
