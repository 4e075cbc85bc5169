/* SPDX-License-Identifier: BSD-3-Clause */
/* NewReno traces (RFC 5681, RFC 6582, RFC 3465): initial window, slow start, congestion avoidance, fast retransmit, partial and full ACKs, timeouts. */
#include <errno.h>

#include <hotpath/pool.h>
#include <hotpath/tcp.h>

#include "hp_test.h"
#include "sock/tcp_cc.h"

#define SMSS 1000u

/* A sender: the sequence variables the caller keeps, next to the cc state.
 * The ISS is near the top of the sequence space so every trace wraps. */
struct snd {
    struct hp__tcp_cc cc;
    uint32_t una, max;
};

static void snd_init(struct snd *s, uint32_t iss)
{
    hp__tcp_cc_init(&s->cc, SMSS, iss, false);
    s->una = s->max = iss + 1;
}

/* Send n bytes. */
static void send_bytes(struct snd *s, uint32_t n)
{
    s->max += n;
}

/* An ACK of n new bytes. */
static unsigned ack(struct snd *s, uint32_t n)
{
    s->una += n;
    return hp__tcp_cc_on_ack(&s->cc, n, s->una, s->max, SMSS);
}

/* An ACK of n new bytes to a sender that cwnd limits: it sends at once
 * what the larger window allows (the flight stays at cwnd). */
static unsigned ack_refill(struct snd *s, uint32_t n)
{
    unsigned r = ack(s, n);
    if (s->max - s->una < s->cc.cwnd)
        send_bytes(s, s->cc.cwnd - (s->max - s->una));
    return r;
}

static unsigned dupack(struct snd *s)
{
    return hp__tcp_cc_on_dupack(&s->cc, s->una, s->max, SMSS);
}

HP_TEST(tcp_cc_initial_window)
{
    /* RFC 6928 2: min(10 MSS, max(2 MSS, 14600)). */
    HP_CHECK_EQ(hp__tcp_cc_initial_window(1460), 14600);
    HP_CHECK_EQ(hp__tcp_cc_initial_window(1000), 10000);
    HP_CHECK_EQ(hp__tcp_cc_initial_window(536), 5360);
    HP_CHECK_EQ(hp__tcp_cc_initial_window(4000), 14600);
    HP_CHECK_EQ(hp__tcp_cc_initial_window(8960), 17920);
    HP_CHECK_EQ(hp__tcp_cc_initial_window(65535), 131070);
    struct hp__tcp_cc cc;
    hp__tcp_cc_init(&cc, 1460, 7, false);
    HP_CHECK_EQ(cc.cwnd, 14600);
    HP_CHECK_EQ(cc.ssthresh, UINT32_MAX);
    HP_CHECK_EQ(cc.recover, 7);
    HP_CHECK(!cc.in_recovery);
    /* RFC 5681 3.1: a lost SYN or SYN-ACK leaves one segment. */
    hp__tcp_cc_init(&cc, 1460, 7, true);
    HP_CHECK_EQ(cc.cwnd, 1460);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_slow_start_abc)
{
    struct snd s;
    snd_init(&s, 0xffffff00u);
    send_bytes(&s, 10000);
    HP_CHECK_EQ(s.cc.cwnd, 10000);
    /* One ACK per segment: +1 SMSS each. */
    HP_CHECK_EQ(ack_refill(&s, 1000), HP__TCP_CC_NONE);
    HP_CHECK_EQ(s.cc.cwnd, 11000);
    /* A delayed ACK of two segments: +2 SMSS (RFC 3465, L = 2). */
    ack_refill(&s, 2000);
    HP_CHECK_EQ(s.cc.cwnd, 13000);
    /* A stretch ACK of three: still +2 SMSS at most. */
    ack_refill(&s, 3000);
    HP_CHECK_EQ(s.cc.cwnd, 15000);
    /* A small ACK: +its size. */
    ack_refill(&s, 500);
    HP_CHECK_EQ(s.cc.cwnd, 15500);
    /* Nothing new acknowledged: nothing. */
    HP_CHECK_EQ(hp__tcp_cc_on_ack(&s.cc, 0, s.una, s.max, SMSS), HP__TCP_CC_NONE);
    HP_CHECK_EQ(s.cc.cwnd, 15500);

    /* A whole window acknowledged segment by segment doubles cwnd per RTT. */
    struct snd d;
    snd_init(&d, 5);
    send_bytes(&d, d.cc.cwnd);
    for (int rtt = 0; rtt < 3; rtt++) {
        uint32_t w = d.cc.cwnd;
        for (uint32_t i = 0; i < w / SMSS; i++)
            ack_refill(&d, SMSS);
        HP_CHECK_EQ(d.cc.cwnd, 2 * w);
    }
    HP_CHECK_EQ(d.cc.cwnd, 80000);

    /* Strict RFC 5681: L = 1 SMSS. */
    struct snd r;
    snd_init(&r, 5);
    r.cc.ss_limit = 1;
    send_bytes(&r, 10000);
    ack(&r, 2000);
    HP_CHECK_EQ(r.cc.cwnd, 11000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_congestion_avoidance)
{
    struct snd s;
    snd_init(&s, 0xfffffff0u);
    s.cc.ssthresh = 10000; /* cwnd == ssthresh: congestion avoidance */
    /* RTT 1: ten ACKs of one SMSS fill bytes_acked to cwnd: +1 SMSS. */
    send_bytes(&s, 10000);
    for (int i = 0; i < 9; i++) {
        ack_refill(&s, SMSS);
        HP_CHECK_EQ(s.cc.cwnd, 10000);
    }
    ack_refill(&s, SMSS);
    HP_CHECK_EQ(s.cc.cwnd, 11000);
    HP_CHECK_EQ(s.cc.bytes_acked, 0);
    /* RTT 2: eleven segments, acknowledged two at a time by a delaying
     * receiver (five ACKs of 2000, one of 1000): +1 SMSS, not less. */
    for (int i = 0; i < 5; i++)
        ack_refill(&s, 2000);
    HP_CHECK_EQ(s.cc.cwnd, 11000);
    ack_refill(&s, 1000);
    HP_CHECK_EQ(s.cc.cwnd, 12000);
    /* Ten RTTs later: ten more segments. */
    for (int rtt = 0; rtt < 10; rtt++) {
        uint32_t w = s.cc.cwnd;
        for (uint32_t i = 0; i < w / SMSS; i++)
            ack_refill(&s, SMSS);
    }
    HP_CHECK_EQ(s.cc.cwnd, 22000);
    /* The leftover counts towards the next increase. */
    s.cc.bytes_acked = 0;
    send_bytes(&s, 30000);
    ack(&s, 21500);
    HP_CHECK_EQ(s.cc.cwnd, 22000);
    ack(&s, 1000);
    HP_CHECK_EQ(s.cc.cwnd, 23000);
    HP_CHECK_EQ(s.cc.bytes_acked, 500);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 9438 5.8, RFC 7661: an application-limited sender's cwnd does not
 * grow; one that cwnd limits is not affected (the traces above). */
HP_TEST(tcp_cc_application_limited)
{
    /* Request/response: one byte out, its ACK, ten thousand times. cwnd
     * stays the initial window (it grew by a byte per ACK before). */
    struct snd s;
    snd_init(&s, 0xfffffff0u);
    for (int i = 0; i < 10000; i++) {
        send_bytes(&s, 1);
        HP_CHECK_EQ(ack(&s, 1), HP__TCP_CC_NONE);
    }
    HP_CHECK_EQ(s.cc.cwnd, 10000);
    HP_CHECK(!hp__tcp_cc_ack_acts(&s.cc, 1));

    /* A burst of a whole window and nothing behind it, acknowledged
     * segment by segment: cwnd grows while the flight the ACK found is at
     * least half of it, 10, 9, 8, 7 segments (to 14000), and not at 6. */
    struct snd b;
    snd_init(&b, 7);
    send_bytes(&b, 10000);
    uint32_t want[10] = {11000, 12000, 13000, 14000, 14000, 14000, 14000, 14000, 14000, 14000};
    for (int i = 0; i < 10; i++) {
        ack(&b, SMSS);
        HP_CHECK_EQ(b.cc.cwnd, want[i]);
    }
    /* The bound exactly: a flight of half of cwnd grows it. */
    b.cc.cwnd = 10000;
    send_bytes(&b, 5000);
    ack(&b, SMSS);
    HP_CHECK_EQ(b.cc.cwnd, 11000);
    HP_CHECK(hp__tcp_cc_used(&b.cc, 5500));
    HP_CHECK(!hp__tcp_cc_used(&b.cc, 5499));

    /* Congestion avoidance: application-limited ACKs count no bytes
     * towards the next increase. */
    struct snd c;
    snd_init(&c, 0xffffff00u);
    c.cc.ssthresh = 10000;
    for (int i = 0; i < 100; i++) {
        send_bytes(&c, 4000);
        ack(&c, 4000);
    }
    HP_CHECK_EQ(c.cc.cwnd, 10000);
    HP_CHECK_EQ(c.cc.bytes_acked, 0);
    /* A full window again: it counts. */
    send_bytes(&c, 10000);
    for (int i = 0; i < 10; i++)
        ack_refill(&c, SMSS);
    HP_CHECK_EQ(c.cc.cwnd, 11000);

    /* The duplicate count still starts over on an application-limited
     * ACK (the caller must not skip it), and recovery still runs. */
    struct snd d;
    snd_init(&d, 0);
    send_bytes(&d, 3000);
    HP_CHECK_EQ(dupack(&d), HP__TCP_CC_NONE);
    HP_CHECK(hp__tcp_cc_ack_acts(&d.cc, 3000));
    ack(&d, 1000);
    HP_CHECK_EQ(d.cc.dupacks, 0);
    HP_CHECK_EQ(d.cc.cwnd, 10000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_fast_retransmit_and_recovery)
{
    struct snd s;
    snd_init(&s, 0xffffd000u);
    send_bytes(&s, 10000); /* FlightSize 10000, cwnd 10000 */
    /* The first segment is lost: the next ones draw duplicates. */
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_NONE);
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_NONE);
    HP_CHECK_EQ(s.cc.cwnd, 10000);
    /* The third: ssthresh = max(10000 / 2, 2000) = 5000,
     * cwnd = 5000 + 3 * 1000 = 8000, recover = the last byte sent. */
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_RETRANSMIT);
    HP_CHECK(s.cc.in_recovery);
    HP_CHECK_EQ(s.cc.ssthresh, 5000);
    HP_CHECK_EQ(s.cc.cwnd, 8000);
    HP_CHECK_EQ(s.cc.recover, s.max - 1);
    /* Further duplicates inflate by SMSS each. */
    for (int i = 0; i < 6; i++)
        HP_CHECK_EQ(dupack(&s), HP__TCP_CC_NONE);
    HP_CHECK_EQ(s.cc.cwnd, 14000);
    /* That let the sender send 4000 new bytes while waiting. */
    send_bytes(&s, 4000);
    uint32_t recover = s.cc.recover;

    /* A partial ACK (a second loss 3000 bytes in): deflate by 3000, add
     * back SMSS, retransmit at the new SND.UNA, restart the timer. */
    HP_CHECK_EQ(ack(&s, 3000), HP__TCP_CC_RETRANSMIT);
    HP_CHECK_EQ(s.cc.cwnd, 12000);
    HP_CHECK(s.cc.in_recovery);
    /* Duplicates still inflate. */
    dupack(&s);
    HP_CHECK_EQ(s.cc.cwnd, 13000);
    /* A second partial ACK of less than SMSS: deflate only, and leave the
     * timer running (RFC 6582, Impatient). */
    HP_CHECK_EQ(ack(&s, 500), HP__TCP_CC_RETRANSMIT | HP__TCP_CC_KEEP_RTO);
    HP_CHECK_EQ(s.cc.cwnd, 12500);
    /* An ACK up to recover exactly (the last byte sent before recovery not
     * yet covered) is still partial. */
    uint32_t to_recover = recover - s.una; /* leaves byte `recover` unacked */
    HP_CHECK_EQ(ack(&s, to_recover), HP__TCP_CC_RETRANSMIT | HP__TCP_CC_KEEP_RTO);
    HP_CHECK(s.cc.in_recovery);
    /* The full ACK covers recover: recovery ends with
     * cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS) = min(5000, 4000 + 1000). */
    HP_CHECK_EQ(ack(&s, 1), HP__TCP_CC_NONE);
    HP_CHECK(!s.cc.in_recovery);
    HP_CHECK_EQ(s.max - s.una, 4000);
    HP_CHECK_EQ(s.cc.cwnd, 5000);
    HP_CHECK_EQ(s.cc.ssthresh, 5000);
    /* Back in congestion avoidance. */
    ack(&s, 4000);
    HP_CHECK_EQ(s.cc.cwnd, 5000);
    HP_CHECK_EQ(s.cc.bytes_acked, 4000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_full_ack_little_outstanding)
{
    struct snd s;
    snd_init(&s, 100);
    send_bytes(&s, 20000);
    dupack(&s);
    dupack(&s);
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_RETRANSMIT);
    HP_CHECK_EQ(s.cc.ssthresh, 10000);
    HP_CHECK_EQ(s.cc.cwnd, 13000);
    /* Everything acknowledged at once, nothing else sent: cwnd =
     * min(10000, max(0, 1000) + 1000) = 2000, no burst. */
    HP_CHECK_EQ(ack(&s, 20000), HP__TCP_CC_NONE);
    HP_CHECK_EQ(s.cc.cwnd, 2000);
    HP_CHECK(!s.cc.in_recovery);
    /* Then slow start again up to ssthresh. */
    send_bytes(&s, 2000);
    ack(&s, 1000);
    HP_CHECK_EQ(s.cc.cwnd, 3000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_small_flight_and_dupack_reset)
{
    struct snd s;
    snd_init(&s, 0xffffffffu); /* una = 0: the trace starts on the wrap */
    send_bytes(&s, 3000);
    /* Two duplicates, then new data: the count starts over. */
    dupack(&s);
    dupack(&s);
    ack(&s, 1000);
    HP_CHECK_EQ(s.cc.dupacks, 0);
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_NONE);
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_NONE);
    HP_CHECK(!s.cc.in_recovery);
    /* FlightSize 2000: ssthresh = max(1000, 2 * SMSS) = 2000. */
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_RETRANSMIT);
    HP_CHECK_EQ(s.cc.ssthresh, 2000);
    HP_CHECK_EQ(s.cc.cwnd, 5000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_timeout)
{
    struct snd s;
    snd_init(&s, 0xfffff000u);
    send_bytes(&s, 10000);
    hp__tcp_cc_on_timeout(&s.cc, s.una, s.max, SMSS, false);
    /* ssthresh = max(10000 / 2, 2000), cwnd = LW = 1 SMSS. */
    HP_CHECK_EQ(s.cc.ssthresh, 5000);
    HP_CHECK_EQ(s.cc.cwnd, 1000);
    HP_CHECK_EQ(s.cc.recover, s.max - 1);
    /* The timer fires again for the same segment: ssthresh held (RFC 5681
     * 3.1), even though FlightSize (now 16000) would give 8000. */
    send_bytes(&s, 6000);
    hp__tcp_cc_on_timeout(&s.cc, s.una, s.max, SMSS, true);
    HP_CHECK_EQ(s.cc.ssthresh, 5000);
    HP_CHECK_EQ(s.cc.cwnd, 1000);
    /* Slow start after a timeout: L = 1 SMSS even for a delayed ACK. */
    ack(&s, 2000);
    HP_CHECK_EQ(s.cc.cwnd, 2000);
    ack(&s, 2000);
    HP_CHECK_EQ(s.cc.cwnd, 3000);
    /* Duplicates for data sent before the timeout (SND.UNA not past
     * recover) start no fast retransmit (RFC 6582 3.2). */
    dupack(&s);
    dupack(&s);
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_NONE);
    HP_CHECK(!s.cc.in_recovery);
    HP_CHECK_EQ(s.cc.ssthresh, 5000);
    HP_CHECK_EQ(s.cc.cwnd, 3000);
    /* Once everything before the timeout is acknowledged (una = recover +
     * 1), new losses are fast-retransmitted again. */
    ack(&s, s.max - s.una);
    HP_CHECK_EQ(s.cc.cwnd, 4000);
    send_bytes(&s, 4000);
    dupack(&s);
    dupack(&s);
    HP_CHECK_EQ(dupack(&s), HP__TCP_CC_RETRANSMIT);
    HP_CHECK_EQ(s.cc.ssthresh, 2000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_timeout_during_recovery)
{
    struct snd s;
    snd_init(&s, 1);
    send_bytes(&s, 16000);
    dupack(&s);
    dupack(&s);
    dupack(&s);
    HP_REQUIRE(s.cc.in_recovery);
    hp__tcp_cc_on_timeout(&s.cc, s.una, s.max, SMSS, false);
    HP_CHECK(!s.cc.in_recovery);
    HP_CHECK_EQ(s.cc.cwnd, 1000);
    HP_CHECK_EQ(s.cc.ssthresh, 8000);
    /* The next ACK is ordinary slow start, not a partial ACK. */
    HP_CHECK_EQ(ack(&s, 1000), HP__TCP_CC_NONE);
    HP_CHECK_EQ(s.cc.cwnd, 2000);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(tcp_cc_after_idle_and_cap)
{
    struct hp__tcp_cc cc;
    hp__tcp_cc_init(&cc, SMSS, 0, false);
    cc.cwnd = 50000;
    /* RFC 5681 4.1: RW = min(IW, cwnd). */
    hp__tcp_cc_after_idle(&cc, SMSS);
    HP_CHECK_EQ(cc.cwnd, 10000);
    cc.cwnd = 3000;
    hp__tcp_cc_after_idle(&cc, SMSS);
    HP_CHECK_EQ(cc.cwnd, 3000);
    /* cwnd stops at 1 GiB. */
    cc.cwnd = HP__TCP_CC_CWND_MAX - 500;
    hp__tcp_cc_on_ack(&cc, 2000, 2001, 1u << 31, SMSS);
    HP_CHECK_EQ(cc.cwnd, HP__TCP_CC_CWND_MAX);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- CUBIC (RFC 9438) and HyStart++ (RFC 9406) ------------------------------------- */

#include "sock/tcp_cubic.h"

#define MS 1000000ull

static void cubic_init(struct snd *s, struct hp__tcp_cubic *x, uint32_t iss)
{
    snd_init(s, iss);
    hp__tcp_cc_set_algo(&s->cc, x, HP__TCP_CC_CUBIC, s->max);
}

static struct hp__tcp_cc_ev ev_of(const struct snd *s, uint64_t now_ns, uint32_t rtt_us,
                                  uint32_t flight)
{
    struct hp__tcp_cc_ev ev = {.snd_una = s->una,
                               .snd_max = s->max,
                               .smss = SMSS,
                               .now_ns = now_ns,
                               .rtt_us = rtt_us,
                               .srtt_us = 20000,
                               .flight = flight};
    return ev;
}

HP_TEST(tcp_cubic_cbrt)
{
    HP_CHECK(hp__tcp_cbrt(0) == 0);
    double v[] = {0.001, 0.5, 1, 8, 27, 1000, 123456.789, 1e9};
    for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) {
        double r = hp__tcp_cbrt(v[i]);
        double e = r * r * r - v[i];
        HP_CHECK(e < v[i] * 1e-9 && e > -v[i] * 1e-9);
    }
}

/* RFC 9438 4.6-4.7: ssthresh = 0.7 cwnd; W_max = cwnd, or 0.85 cwnd when
 * below the previous W_max (fast convergence); undo restores (4.9). */
HP_TEST(tcp_cubic_reduce_fast_convergence_undo)
{
    struct snd s;
    struct hp__tcp_cubic x;
    cubic_init(&s, &x, 1000);
    s.cc.cwnd = 100000;
    send_bytes(&s, 100000);
    struct hp__tcp_cc_ev ev = ev_of(&s, 1 * MS, 0, 100000);
    HP_CHECK_EQ(hp__tcp_cc_reduce(&s.cc, &x, &ev), 70000);
    HP_CHECK_EQ(x.w_max, 100000);
    HP_CHECK_EQ(s.cc.hs, HP__HS_OFF);
    s.cc.cwnd = 80000;
    HP_CHECK_EQ(hp__tcp_cc_reduce(&s.cc, &x, &ev), 56000);
    HP_CHECK_EQ(x.w_max, 68000); /* 80000 * (1 + 0.7) / 2 */
    s.cc.cwnd = 56000;
    hp__tcp_cc_undo(&s.cc, &x);
    HP_CHECK_EQ(s.cc.cwnd, 80000);
    HP_CHECK_EQ(s.cc.ssthresh, 70000);
    HP_CHECK_EQ(x.w_max, 100000);
    /* A tiny window: at least two segments. */
    s.cc.cwnd = SMSS;
    HP_CHECK_EQ(hp__tcp_cc_reduce(&s.cc, &x, &ev), 2 * SMSS);
}

/* CUBIC just after a reduction from 100 segments: cwnd 70, W_max 100. */
static void cubic_after_loss(struct snd *s, struct hp__tcp_cubic *x)
{
    cubic_init(s, x, 5);
    s->cc.cwnd = 100 * SMSS;
    struct hp__tcp_cc_ev ev = ev_of(s, 0, 0, 100 * SMSS);
    hp__tcp_cc_reduce(&s->cc, x, &ev);
    s->cc.cwnd = s->cc.ssthresh; /* 70 segments */
}

/* RFC 9438 4.2-4.5: after a reduction the window climbs back towards
 * W_max (concave), plateaus near it around t = K, then grows faster
 * (convex); it never moves faster than 1.5x per ACK train. */
HP_TEST(tcp_cubic_concave_then_convex)
{
    struct snd s;
    struct hp__tcp_cubic x;
    cubic_after_loss(&s, &x);
    /* K = cbrt(30 / 0.4) = 4.217 s. One ACK of a segment every ms. */
    uint64_t now = 1000 * MS;
    uint32_t at_k = 0, at_2k = 0, prev = s.cc.cwnd;
    for (uint32_t ms = 0; ms <= 8500; ms++) {
        send_bytes(&s, SMSS);
        s.una += SMSS;
        struct hp__tcp_cc_ev e = ev_of(&s, now + ms * MS, 20000, 100 * SMSS);
        hp__tcp_cc_ack(&s.cc, &x, SMSS, &e);
        HP_CHECK_GE(s.cc.cwnd, prev);
        prev = s.cc.cwnd;
        if (ms == 4217)
            at_k = s.cc.cwnd;
        if (ms == 8434)
            at_2k = s.cc.cwnd;
    }
    HP_CHECK(x.k_s > 4.2 && x.k_s < 4.23);
    /* Near W_max at K (within the RTT's look-ahead and W_est's pull). */
    HP_CHECK_GE(at_k, 98 * SMSS);
    HP_CHECK_LE(at_k, 103 * SMSS);
    /* At 2K, W_max + 30 segments (convex, symmetric to the concave part). */
    HP_CHECK_GE(at_2k, 125 * SMSS);
    HP_CHECK_LE(at_2k, 136 * SMSS);
}

/* RFC 9438 5.8: CUBIC does not increase cwnd while application-limited;
 * its epoch does not start on such ACKs. */
HP_TEST(tcp_cubic_application_limited)
{
    struct snd s;
    struct hp__tcp_cubic x;
    cubic_after_loss(&s, &x);
    uint32_t w_est = x.w_est;
    uint64_t now = 1000 * MS;
    for (uint32_t ms = 0; ms < 2000; ms++) {
        send_bytes(&s, SMSS);
        s.una += SMSS;
        struct hp__tcp_cc_ev e = ev_of(&s, now + ms * MS, 20000, 34 * SMSS);
        hp__tcp_cc_ack(&s.cc, &x, SMSS, &e);
    }
    HP_CHECK_EQ(s.cc.cwnd, 70 * SMSS);
    HP_CHECK_EQ(x.epoch_ns, 0);
    HP_CHECK_EQ(x.w_est, w_est);
    /* Half of cwnd in flight: the epoch starts and cwnd grows. */
    send_bytes(&s, SMSS);
    s.una += SMSS;
    struct hp__tcp_cc_ev e = ev_of(&s, now + 2000 * MS, 20000, 35 * SMSS);
    hp__tcp_cc_ack(&s.cc, &x, SMSS, &e);
    HP_CHECK(x.epoch_ns != 0);
    HP_CHECK_GE(s.cc.cwnd, 70 * SMSS);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* RFC 9406: a round with a higher minimum RTT than the last (by the
 * threshold) moves slow start to CSS, whose growth is a quarter; after
 * CSS_ROUNDS (5) rounds slow start ends (ssthresh = cwnd). */
HP_TEST(tcp_hystart_css_then_exit)
{
    struct snd s;
    struct hp__tcp_cubic x;
    cubic_init(&s, &x, 0);
    s.cc.cwnd = 20 * SMSS;
    HP_CHECK_EQ(s.cc.hs, HP__HS_SS);
    uint64_t now = 0;
    uint32_t rtt = 20000;
    for (int round = 0; round < 12 && s.cc.ssthresh == UINT32_MAX; round++) {
        /* A round: the flight is cwnd; 10 ACKs of 2 segments each. */
        uint32_t flight = s.cc.cwnd;
        send_bytes(&s, flight);
        uint32_t end = s.max;
        if (round == 3)
            rtt = 40000; /* a queue builds */
        uint32_t before = s.cc.cwnd;
        /* The ACKs 20 us apart: a train far shorter than half the RTT
         * (the flight does not fill the pipe: no ACK train exit). */
        now += (uint64_t)rtt * 1000u;
        while (s.una != end) {
            uint32_t n = end - s.una < 2 * SMSS ? end - s.una : 2 * SMSS;
            s.una += n;
            now += 20000;
            struct hp__tcp_cc_ev e = ev_of(&s, now, rtt, flight);
            hp__tcp_cc_ack(&s.cc, &x, n, &e);
        }
        if (round < 3)
            HP_CHECK_EQ(s.cc.cwnd, 2 * before); /* slow start doubles */
        if (round == 4)
            HP_CHECK_EQ(s.cc.hs, HP__HS_CSS);
        if (round == 5)
            HP_CHECK_LE(s.cc.cwnd, before + before / 4 + SMSS);
    }
    HP_CHECK(s.cc.ssthresh != UINT32_MAX);
    HP_CHECK_EQ(s.cc.ssthresh, s.cc.cwnd);
    HP_CHECK_EQ(s.cc.hs, HP__HS_OFF);
}

/* The ACK train (Linux's HyStart): the ACKs of a round arriving back to
 * back for more than half the minimum RTT (plus 1 ms of slack) mean the
 * flight fills the pipe: slow start ends at once, ssthresh = cwnd, with
 * the RTT still flat. A gap of more than 2 ms or a quarter of the minimum
 * RTT, whichever is larger (here 5 ms), breaks a train. */
HP_TEST(tcp_hystart_ack_train_exit)
{
    for (int gap = 0; gap < 2; gap++) {
        struct snd s;
        struct hp__tcp_cubic x;
        cubic_init(&s, &x, 0);
        s.cc.cwnd = 64 * SMSS;
        uint64_t now = 0;
        uint32_t exit_cwnd = 0;
        for (int round = 0; round < 3 && !exit_cwnd; round++) {
            uint32_t flight = s.cc.cwnd;
            send_bytes(&s, flight);
            uint32_t end = s.max;
            now += 20 * MS;
            for (int k = 0; s.una != end; k++) {
                uint32_t n = end - s.una < 2 * SMSS ? end - s.una : 2 * SMSS;
                s.una += n;
                /* 242 us: two segments at 100 Mbit/s; or every fourth
                 * ACK after a 6 ms pause (gap). */
                now += gap && k % 4 == 3 ? 6 * MS : 242000;
                struct hp__tcp_cc_ev e = ev_of(&s, now, 20000, flight);
                hp__tcp_cc_ack(&s.cc, &x, n, &e);
                if (s.cc.ssthresh != UINT32_MAX && !exit_cwnd)
                    exit_cwnd = s.cc.cwnd;
            }
        }
        if (gap) {
            HP_CHECK_EQ(exit_cwnd, 0);
            HP_CHECK_EQ(s.cc.hs, HP__HS_SS);
            continue;
        }
        /* Round 0 starts the train's clock (the first ACK past the initial
         * round end); round 1: 10.5 ms = 44 ACKs of 2 segments, on 128. */
        HP_CHECK_EQ(s.cc.hs, HP__HS_OFF);
        HP_CHECK_EQ(s.cc.ssthresh, exit_cwnd);
        HP_CHECK_GT(exit_cwnd, 128 * SMSS);
        HP_CHECK_LT(exit_cwnd, 256 * SMSS);
    }
}

/* A stable RTT keeps slow start; a small flight (fewer than 8 segments)
 * never starts a round: HyStart++ leaves it alone. */
HP_TEST(tcp_hystart_stable_rtt_and_small_flights)
{
    struct snd s;
    struct hp__tcp_cubic x;
    cubic_init(&s, &x, 0);
    uint32_t round_end = s.cc.hs_round_end;
    for (int i = 0; i < 1000; i++) {
        send_bytes(&s, 100);
        s.una += 100;
        struct hp__tcp_cc_ev e = ev_of(&s, (uint64_t)i * MS, 20000 + (uint32_t)i * 100, 100);
        hp__tcp_cc_ack(&s.cc, &x, 100, &e);
    }
    HP_CHECK_EQ(s.cc.hs, HP__HS_SS);
    HP_CHECK_EQ(s.cc.hs_round_end, round_end);
    HP_CHECK_EQ(s.cc.hs_samples, 0);
    HP_CHECK_EQ(s.cc.ssthresh, UINT32_MAX);
}

HP_TEST(tcp_cc_names)
{
    HP_CHECK_EQ(hp_tcp_cc_by_name("cubic"), HP_TCP_CC_CUBIC);
    HP_CHECK_EQ(hp_tcp_cc_by_name("NewReno"), HP_TCP_CC_NEWRENO);
    HP_CHECK_EQ(hp_tcp_cc_by_name("bbr"), -EINVAL);
    HP_CHECK_EQ(hp_tcp_cc_by_name(NULL), -EINVAL);
    HP_CHECK_STREQ(hp__tcp_cc_name(HP__TCP_CC_CUBIC), "cubic");
    HP_CHECK_STREQ(hp__tcp_cc_name(HP__TCP_CC_NEWRENO), "newreno");
}
