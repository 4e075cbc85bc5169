/* SPDX-License-Identifier: BSD-3-Clause */
/* The fault decorator: rates within statistical bounds, what the receiver sees, seeds, held frames, stacking. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"

#define N_STAT  100000u
#define MAX_LEN 260u
/* A guard against a hang only: every loop below ends long before. */
#define GUARD_NS (20ull * 1000000000ull)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- frames: everything follows from the sequence number ----------------- */

static uint32_t flen(uint32_t seq)
{
    return 60 + (seq * 7919u) % 200;
}

/* A broadcast Ethernet header (EtherType 0x88b5, local experimental), the
 * sequence number at 14, then a pattern. */
static void fbytes(unsigned char *d, uint32_t seq)
{
    uint32_t len = flen(seq);
    for (uint32_t i = 0; i < len; i++)
        d[i] = (unsigned char)(seq * 31 + i * 7 + 1);
    memset(d, 0xff, 6);
    static const unsigned char src[6] = {0x02, 0x68, 0x70, 0, 0, 0x42};
    memcpy(d + 6, src, 6);
    d[12] = 0x88;
    d[13] = 0xb5;
    memcpy(d + 14, &seq, 4);
}

static struct hp_buf *fnew(struct hp_pool *p, uint32_t seq)
{
    struct hp_buf *b = hp_buf_alloc(p);
    unsigned char *d = b ? hp_buf_append(b, flen(seq)) : NULL;
    if (!d) {
        hp_buf_free(b);
        return NULL;
    }
    fbytes(d, seq);
    return b;
}

/* ---- a run: n frames through a fault decorator, and what arrives ---------- */

struct result {
    struct hp_fault_stats fs;
    uint64_t received;    /* frames the receiver got, copies included */
    uint64_t distinct;    /* different frames among them */
    uint64_t dups;        /* frames already received before */
    uint64_t dup_bad;     /* copies not identical to, or not right behind, their original */
    uint64_t corrupted;   /* frames whose bytes differ from what was sent */
    uint64_t corrupt_bad; /* ... by more than one byte, or in length */
    uint64_t ooo;         /* frames received after a later one */
    uint64_t slow;        /* frames received delay_us or more after they were sent */
    uint64_t bad;         /* frames we cannot place at all */
    uint64_t hash;        /* FNV-1a of everything received, in order */
};

struct rx_state {
    struct result *res;
    uint32_t n;
    bool by_index; /* corruption may hit the sequence number: use arrival order */
    uint64_t delay_ns;
    const uint64_t *send_ns;
    unsigned char *seen;
    int64_t max_seq, last_seq;
    unsigned char last[MAX_LEN];
    uint32_t last_len;
};

static void receive(struct rx_state *st, struct hp_buf *b, uint64_t t)
{
    struct result *res = st->res;
    unsigned char d[MAX_LEN + 64], want[MAX_LEN];
    uint32_t len = b->pkt_len;
    res->received++;
    if (len > sizeof d) {
        res->bad++;
        return;
    }
    hp_buf_copy_out(b, 0, len, d);
    for (uint32_t i = 0; i < len; i++)
        res->hash = (res->hash ^ d[i]) * 0x100000001b3ull;
    uint32_t seq;
    if (st->by_index)
        seq = (uint32_t)(res->received - 1);
    else if (len >= 18)
        memcpy(&seq, d + 14, 4);
    else
        seq = UINT32_MAX;
    if (seq >= st->n || len != flen(seq)) {
        res->bad++;
        return;
    }
    fbytes(want, seq);
    uint32_t diff = 0;
    for (uint32_t i = 0; i < len; i++)
        diff += d[i] != want[i];
    if (st->seen[seq]) {
        res->dups++;
        if ((int64_t)seq != st->last_seq || len != st->last_len || memcmp(d, st->last, len) != 0)
            res->dup_bad++;
    } else {
        st->seen[seq] = 1;
        res->distinct++;
        if ((int64_t)seq < st->max_seq)
            res->ooo++;
        if (t - st->send_ns[seq] >= st->delay_ns)
            res->slow++;
    }
    if (diff) {
        res->corrupted++;
        if (diff != 1)
            res->corrupt_bad++;
    }
    if ((int64_t)seq > st->max_seq)
        st->max_seq = seq;
    st->last_seq = seq;
    memcpy(st->last, d, len);
    st->last_len = len;
}

static int rx_some(struct rx_state *st, struct hp_link *l)
{
    struct hp_buf *b[64];
    int got = hp_link_rx_burst(l, b, 64);
    if (got <= 0)
        return got;
    uint64_t t = now_ns();
    for (int i = 0; i < got; i++)
        receive(st, b[i], t);
    hp_buf_free_bulk(b, (unsigned)got);
    return got;
}

/* Send n frames through a fault decorator with cfg on the transmit end of a
 * mem pair (dir HP_FAULT_TX) or its receive end (HP_FAULT_RX), in bursts of
 * 32, receiving as we go, then until every frame that can come has come. */
static void run(const struct hp_fault_config *cfg_in, unsigned dir, uint32_t n, bool by_index,
                struct result *res)
{
    memset(res, 0, sizeof *res);
    res->hash = 0xcbf29ce484222325ull;
    struct hp_fault_config cfg = *cfg_in;
    cfg.directions = dir;
    struct rx_state st = {.res = res, .n = n, .by_index = by_index, .max_seq = -1, .last_seq = -1};
    st.delay_ns = (uint64_t)(cfg.delay_us ? cfg.delay_us : 1000) * 1000;
    uint64_t *send_ns = calloc(n, sizeof *send_ns);
    st.seen = calloc(n, 1);
    st.send_ns = send_ns;
    HP_REQUIRE(send_ns && st.seen);

    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_link *f = hp_link_fault(dir == HP_FAULT_TX ? e[0] : e[1], &cfg);
    HP_REQUIRE(f != NULL);
    struct hp_link *txl = dir == HP_FAULT_TX ? f : e[0], *rxl = dir == HP_FAULT_TX ? e[1] : f;
    struct hp_pool *pool = hp_link_pool(f);

    uint64_t guard = now_ns() + GUARD_NS;
    uint32_t seq = 0;
    while (seq < n) {
        struct hp_buf *b[32];
        unsigned k = n - seq < 32 ? n - seq : 32;
        for (unsigned i = 0; i < k; i++) {
            b[i] = fnew(pool, seq + i);
            HP_REQUIRE(b[i] != NULL);
        }
        uint64_t t = now_ns();
        for (unsigned i = 0; i < k; i++)
            send_ns[seq + i] = t;
        int r = hp_link_tx_burst(txl, b, k);
        HP_REQUIRE(r >= 0);
        /* Frames not taken are rebuilt and sent again (a new send time). */
        hp_buf_free_bulk(b + r, k - (unsigned)r);
        seq += (unsigned)r;
        HP_REQUIRE(rx_some(&st, rxl) >= 0);
        if (now_ns() > guard) {
            hp_test_fail(__FILE__, __LINE__, "stuck after %u frames sent", seq);
            break;
        }
    }
    /* Everything not dropped, and every copy, comes in the end. */
    for (;;) {
        HP_REQUIRE_EQ(hp_link_fault_stats(f, &res->fs), 0);
        if (res->received >= n - res->fs.dropped + res->fs.duplicated)
            break;
        if (dir == HP_FAULT_TX)
            HP_REQUIRE(hp_link_tx_burst(f, NULL, 0) >= 0);
        HP_REQUIRE(rx_some(&st, rxl) >= 0);
        if (now_ns() > guard) {
            hp_test_fail(__FILE__, __LINE__, "frames never came: %llu of %llu",
                         (unsigned long long)res->received,
                         (unsigned long long)(n - res->fs.dropped + res->fs.duplicated));
            break;
        }
    }
    /* And nothing more. */
    if (dir == HP_FAULT_TX)
        HP_CHECK_EQ(hp_link_tx_burst(f, NULL, 0), 0);
    HP_CHECK_EQ(rx_some(&st, rxl), 0);
    HP_REQUIRE_EQ(hp_link_fault_stats(f, &res->fs), 0);
    HP_CHECK_EQ(res->fs.seen, n);
    /* A flipped sequence number makes a frame unplaceable; nothing else may. */
    if (by_index || cfg.corrupt == 0)
        HP_CHECK_EQ(res->bad, 0);
    else
        HP_CHECK_LE(res->bad, res->fs.corrupted);
    HP_CHECK_EQ(hp_link_close(f), 0);
    HP_CHECK_EQ(hp_link_close(dir == HP_FAULT_TX ? e[1] : e[0]), 0);
    free(send_ns);
    free(st.seen);
}

/* |observed - pN| within five standard deviations (plus one for p = 0). */
static void check_rate_at(int line, const char *what, uint64_t obs, double p, uint32_t n)
{
    double mean = p * n, sd = sqrt(n * p * (1 - p));
    if (fabs((double)obs - mean) > 5 * sd + 1)
        hp_test_fail(__FILE__, line, "%s: %llu of %u frames at rate %g (expected %.0f +- %.0f)",
                     what, (unsigned long long)obs, n, p, mean, 5 * sd + 1);
}
#define CHECK_RATE(what, obs, p, n) check_rate_at(__LINE__, what, obs, p, n)

enum kind { K_DROP, K_DUP, K_CORRUPT, K_REORDER, K_DELAY };
static const double rates[] = {0.01, 0.05, 0.2};

static void rate_case(enum kind k, double p, unsigned dir)
{
    struct hp_fault_config cfg = {.seed =
                                      0x5eed + (uint64_t)k * 1000 + (uint64_t)(p * 100) + dir * 7,
                                  .delay_us = 100};
    switch (k) {
    case K_DROP:
        cfg.drop = p;
        break;
    case K_DUP:
        cfg.duplicate = p;
        break;
    case K_CORRUPT:
        cfg.corrupt = p;
        break;
    case K_REORDER:
        cfg.reorder = p;
        break;
    case K_DELAY:
        cfg.delay = p;
        break;
    }
    struct result r;
    run(&cfg, dir, N_STAT, k == K_CORRUPT, &r);
    HP_STOP_IF_FAILED();
    const uint32_t n = N_STAT;
    const struct hp_fault_stats *fs = &r.fs;
    switch (k) {
    case K_DROP:
        CHECK_RATE("dropped", fs->dropped, p, n);
        HP_CHECK_EQ(r.received, n - fs->dropped);
        HP_CHECK_EQ(r.distinct, r.received);
        HP_CHECK_EQ(r.ooo, 0);
        HP_CHECK_EQ(r.corrupted, 0);
        break;
    case K_DUP:
        CHECK_RATE("duplicated", fs->duplicated, p, n);
        HP_CHECK_EQ(r.received, n + fs->duplicated);
        HP_CHECK_EQ(r.dups, fs->duplicated);
        HP_CHECK_EQ(r.dup_bad, 0);
        HP_CHECK_EQ(r.distinct, n);
        HP_CHECK_EQ(r.ooo, 0);
        HP_CHECK_EQ(r.corrupted, 0);
        break;
    case K_CORRUPT:
        CHECK_RATE("corrupted", fs->corrupted, p, n);
        HP_CHECK_EQ(r.received, n);
        HP_CHECK_EQ(r.corrupted, fs->corrupted);
        HP_CHECK_EQ(r.corrupt_bad, 0);
        break;
    case K_REORDER:
        CHECK_RATE("reordered", fs->reordered, p, n);
        HP_CHECK_EQ(r.received, n);
        HP_CHECK_EQ(r.distinct, n);
        HP_CHECK_EQ(r.ooo, fs->reordered);
        HP_CHECK_EQ(r.corrupted, 0);
        break;
    case K_DELAY:
        CHECK_RATE("delayed", fs->delayed, p, n);
        HP_CHECK_EQ(r.received, n);
        HP_CHECK_EQ(r.distinct, n);
        /* Every delayed frame came delay_us or more after it was sent
         * (others may be slow too, when the machine is busy). */
        HP_CHECK_GE(r.slow, fs->delayed);
        HP_CHECK_EQ(r.corrupted, 0);
        break;
    }
    /* Only the fault asked for happened. */
    HP_CHECK_EQ(fs->dropped + fs->duplicated + fs->corrupted + fs->reordered + fs->delayed,
                k == K_DROP      ? fs->dropped
                : k == K_DUP     ? fs->duplicated
                : k == K_CORRUPT ? fs->corrupted
                : k == K_REORDER ? fs->reordered
                                 : fs->delayed);
    if (k != K_DUP)
        HP_CHECK_EQ(r.dups, 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static void rates_both_ways(enum kind k)
{
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        rate_case(k, rates[i], HP_FAULT_TX);
        HP_STOP_IF_FAILED();
        rate_case(k, rates[i], HP_FAULT_RX);
        HP_STOP_IF_FAILED();
    }
}

HP_TEST(fault_drop_rates)
{
    rates_both_ways(K_DROP);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_duplicate_rates)
{
    rates_both_ways(K_DUP);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_corrupt_rates)
{
    rates_both_ways(K_CORRUPT);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_reorder_rates)
{
    rates_both_ways(K_REORDER);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_delay_rates)
{
    rates_both_ways(K_DELAY);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_rate_zero_changes_nothing)
{
    struct hp_fault_config cfg = {.seed = 7};
    for (unsigned dir = HP_FAULT_TX; dir <= HP_FAULT_RX; dir++) {
        struct result r;
        run(&cfg, dir, 20000, false, &r);
        HP_STOP_IF_FAILED();
        HP_CHECK_EQ(r.received, 20000);
        HP_CHECK_EQ(r.distinct, 20000);
        HP_CHECK_EQ(r.ooo + r.dups + r.corrupted, 0);
        HP_CHECK_EQ(r.fs.seen, 20000);
        HP_CHECK_EQ(r.fs.dropped + r.fs.duplicated + r.fs.corrupted + r.fs.reordered + r.fs.delayed,
                    0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_same_seed_same_faults)
{
    struct hp_fault_config cfg = {.seed = 1234,
                                  .drop = 0.05,
                                  .duplicate = 0.05,
                                  .reorder = 0.05,
                                  .corrupt = 0.05};
    for (unsigned dir = HP_FAULT_TX; dir <= HP_FAULT_RX; dir++) {
        struct result a, b, c;
        run(&cfg, dir, 20000, false, &a);
        run(&cfg, dir, 20000, false, &b);
        HP_STOP_IF_FAILED();
        HP_CHECK_MEMEQ(&a.fs, &b.fs, sizeof a.fs);
        HP_CHECK_EQ(a.hash, b.hash);
        HP_CHECK_EQ(a.received, b.received);
        HP_CHECK_GT(a.fs.dropped, 0);
        HP_CHECK_GT(a.fs.duplicated, 0);
        HP_CHECK_GT(a.fs.reordered, 0);
        HP_CHECK_GT(a.fs.corrupted, 0);
        /* Another seed, other faults. */
        struct hp_fault_config other = cfg;
        other.seed = 4321;
        run(&other, dir, 20000, false, &c);
        HP_CHECK_NE(a.hash, c.hash);
        /* With delays the arrival order depends on time, but which frames
         * are delayed (and dropped, copied, corrupted) does not. */
        struct hp_fault_config timed = cfg;
        timed.delay = 0.05;
        timed.delay_us = 50;
        run(&timed, dir, 20000, false, &a);
        run(&timed, dir, 20000, false, &b);
        HP_CHECK_EQ(a.fs.delayed, b.fs.delayed);
        HP_CHECK_EQ(a.fs.dropped, b.fs.dropped);
        HP_CHECK_EQ(a.fs.duplicated, b.fs.duplicated);
        HP_CHECK_EQ(a.fs.corrupted, b.fs.corrupted);
        HP_CHECK_GT(a.fs.delayed, 0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_bad_config_is_refused)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    const double bad[] = {-0.01, 1.0001, -1e-300, NAN, -NAN, INFINITY, -INFINITY};
    for (int field = 0; field < 5; field++) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            struct hp_fault_config cfg = {.seed = 1};
            double *rate[] = {&cfg.drop, &cfg.duplicate, &cfg.reorder, &cfg.corrupt, &cfg.delay};
            *rate[field] = bad[i];
            errno = 0;
            struct hp_link *f = hp_link_fault(e[0], &cfg);
            HP_CHECK(f == NULL);
            HP_CHECK_EQ(errno, EINVAL);
            if (f)
                hp_link_close(f);
        }
    }
    HP_CHECK(strstr(hp_link_error(), "delay") != NULL);
    struct hp_fault_config dirs = {.directions = 0x4};
    errno = 0;
    HP_CHECK(hp_link_fault(e[0], &dirs) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    errno = 0;
    HP_CHECK(hp_link_fault(NULL, &dirs) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    struct hp_fault_stats fs;
    HP_CHECK_EQ(hp_link_fault_stats(e[0], &fs), -EINVAL);
    HP_CHECK_EQ(hp_link_fault_stats(NULL, &fs), -EINVAL);

    /* The caller still owns e[0], which works. */
    struct hp_buf *b = fnew(hp_link_pool(e[0]), 1);
    HP_REQUIRE(b != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(e[0], &b, 1), 1);
    HP_CHECK_EQ(hp_link_rx_burst(e[1], &b, 1), 1);
    hp_buf_free(b);

    /* 0 and 1 are probabilities; NULL asks for no faults. */
    struct hp_fault_config edge = {.drop = 1,
                                   .duplicate = 0,
                                   .reorder = 1,
                                   .corrupt = 1,
                                   .delay = 0};
    struct hp_link *f = hp_link_fault(e[0], &edge);
    HP_REQUIRE(f != NULL);
    struct hp_link *g = hp_link_fault(f, NULL);
    HP_REQUIRE(g != NULL);
    HP_CHECK_EQ(hp_link_close(g), 0); /* closes f and e[0] */
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Frames delayed by 2 ms arrive 2 ms or more after they were sent, in order. */
HP_TEST(fault_delay_not_before)
{
    for (unsigned dir = HP_FAULT_TX; dir <= HP_FAULT_RX; dir++) {
        struct hp_link *e[2];
        HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
        struct hp_fault_config cfg = {.seed = 3, .delay = 1, .delay_us = 2000, .directions = dir};
        struct hp_link *f = hp_link_fault(dir == HP_FAULT_TX ? e[0] : e[1], &cfg);
        HP_REQUIRE(f != NULL);
        struct hp_link *txl = dir == HP_FAULT_TX ? f : e[0], *rxl = dir == HP_FAULT_TX ? e[1] : f;
        struct hp_buf *b[10];
        for (uint32_t i = 0; i < 10; i++) {
            b[i] = fnew(hp_link_pool(f), i);
            HP_REQUIRE(b[i] != NULL);
        }
        uint64_t t0 = now_ns();
        HP_REQUIRE_EQ(hp_link_tx_burst(txl, b, 10), 10);
        uint32_t got = 0;
        uint64_t guard = t0 + GUARD_NS;
        while (got < 10 && now_ns() < guard) {
            if (dir == HP_FAULT_TX)
                HP_REQUIRE(hp_link_tx_burst(f, NULL, 0) >= 0);
            int k = hp_link_rx_burst(rxl, b, 10);
            HP_REQUIRE(k >= 0);
            uint64_t t = now_ns();
            for (int i = 0; i < k; i++, got++) {
                HP_CHECK_GE(t - t0, 2000000u);
                uint32_t seq;
                hp_buf_copy_out(b[i], 0 + 14, 4, &seq);
                HP_CHECK_EQ(seq, got);
            }
            hp_buf_free_bulk(b, (unsigned)k);
        }
        HP_CHECK_EQ(got, 10);
        struct hp_fault_stats fs;
        HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
        HP_CHECK_EQ(fs.delayed, 10);
        HP_CHECK_EQ(fs.seen, 10);
        HP_CHECK_EQ(hp_link_close(f), 0);
        HP_CHECK_EQ(hp_link_close(dir == HP_FAULT_TX ? e[1] : e[0]), 0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_close_frees_held_frames)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    /* Delayed for ten seconds, both ways; and one held for reordering. */
    struct hp_fault_config cfg = {.seed = 5, .delay = 1, .delay_us = 10000000};
    struct hp_link *f = hp_link_fault(e[0], &cfg);
    HP_REQUIRE(f != NULL);
    struct hp_pool *pool = hp_link_pool(f);
    struct hp_buf *b[100];
    for (uint32_t i = 0; i < 100; i++)
        HP_REQUIRE((b[i] = fnew(pool, i)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(f, b, 100), 100);
    HP_CHECK_EQ(hp_link_rx_burst(e[1], b, 100), 0);
    for (uint32_t i = 0; i < 50; i++)
        HP_REQUIRE((b[i] = fnew(pool, i)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(e[1], b, 50), 50);
    HP_CHECK_EQ(hp_link_rx_burst(f, b, 100), 0);
    HP_CHECK_EQ(hp_pool_in_use(pool), 150);
    HP_CHECK_EQ(hp_link_close(f), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);

    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_fault_config reo = {.seed = 5, .reorder = 1, .duplicate = 1};
    f = hp_link_fault(e[0], &reo);
    HP_REQUIRE(f != NULL);
    for (uint32_t i = 0; i < 10; i++)
        HP_REQUIRE((b[i] = fnew(hp_link_pool(f), i)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(f, b, 10), 10);
    HP_CHECK_EQ(hp_link_close(f), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The inner link is full: the decorator queues what it took, then takes no
 * more; nothing is lost, nothing overtakes. */
HP_TEST(fault_full_inner_link_keeps_order_and_frames)
{
    for (int drain = 0; drain < 2; drain++) {
        struct hp_link_config lc = {.ring_size = 8};
        struct hp_link *e[2];
        HP_REQUIRE_EQ(hp_link_mem_pair(&lc, e), 0);
        struct hp_fault_config cfg = {.seed = 11, .duplicate = 0.1, .directions = HP_FAULT_TX};
        struct hp_link *f = hp_link_fault(e[0], &cfg);
        HP_REQUIRE(f != NULL);
        struct hp_pool *pool = hp_link_pool(f);
        uint32_t seq = 0;
        int r;
        do {
            struct hp_buf *b[32];
            for (uint32_t i = 0; i < 32; i++)
                HP_REQUIRE((b[i] = fnew(pool, seq + i)) != NULL);
            r = hp_link_tx_burst(f, b, 32);
            HP_REQUIRE(r >= 0);
            hp_buf_free_bulk(b + r, 32 - (unsigned)r);
            seq += (unsigned)r;
        } while (r == 32 && seq < 4000);
        /* It took more than the ring holds, and stopped before its bound. */
        HP_CHECK_GT(seq, 8);
        HP_CHECK_LT(seq, 2000);
        struct hp_fault_stats fs;
        HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
        HP_CHECK_EQ(fs.seen, seq);
        if (drain) {
            struct result res = {0};
            unsigned char *seen = calloc(seq, 1);
            uint64_t *send_ns = calloc(seq, sizeof *send_ns);
            HP_REQUIRE(seen && send_ns);
            struct rx_state st = {.res = &res,
                                  .n = seq,
                                  .seen = seen,
                                  .send_ns = send_ns,
                                  .delay_ns = UINT64_MAX,
                                  .max_seq = -1,
                                  .last_seq = -1};
            uint64_t guard = now_ns() + GUARD_NS;
            while (res.received < seq + fs.duplicated && now_ns() < guard) {
                HP_REQUIRE(hp_link_tx_burst(f, NULL, 0) >= 0);
                HP_REQUIRE(rx_some(&st, e[1]) >= 0);
                HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
            }
            HP_CHECK_EQ(res.received, seq + fs.duplicated);
            HP_CHECK_EQ(res.distinct, seq);
            HP_CHECK_EQ(res.dups, fs.duplicated);
            HP_CHECK_EQ(res.dup_bad + res.ooo + res.bad + res.corrupted, 0);
            free(seen);
            free(send_ns);
        }
        /* Without draining, close with the decorator's queue full. */
        HP_CHECK_EQ(hp_link_close(f), 0);
        HP_CHECK_EQ(hp_link_close(e[1]), 0);
        HP_CHECK_EQ(hp_pools_in_use(), 0);
    }
}

/* Duplicates come from the link's pool; when it is empty, there is none. */
HP_TEST(fault_duplicate_skipped_when_pool_empty)
{
    struct hp_pool_config pc = {.name = "fault-dup", .n_bufs = 64, .flags = HP_POOL_F_NO_HUGEPAGES};
    struct hp_pool *pool = hp_pool_create(&pc);
    HP_REQUIRE(pool != NULL);
    struct hp_link_config lc = {.pool = pool};
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(&lc, e), 0);
    struct hp_fault_config cfg = {.seed = 2, .duplicate = 1};
    struct hp_link *f = hp_link_fault(e[0], &cfg);
    HP_REQUIRE(f != NULL);
    struct hp_buf *b[64];
    for (uint32_t i = 0; i < 40; i++)
        HP_REQUIRE((b[i] = fnew(pool, i)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(f, b, 40), 40);
    struct hp_fault_stats fs;
    HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
    HP_CHECK_LT(fs.duplicated, 40);
    HP_CHECK_GE(fs.duplicated, 1);
    int k = hp_link_rx_burst(e[1], b, 64);
    HP_CHECK_EQ(k, 40 + (int)fs.duplicated);
    if (k > 0)
        hp_buf_free_bulk(b, (unsigned)k);
    HP_CHECK_EQ(hp_link_close(f), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pool_in_use(pool), 0);
    HP_CHECK_EQ(hp_pool_destroy(pool), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* A frame whose data is shared is copied before a byte is flipped: the
 * other holders' view does not change. */
HP_TEST(fault_corrupt_copies_shared_frames)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_fault_config cfg = {.seed = 8, .corrupt = 1};
    struct hp_link *f = hp_link_fault(e[0], &cfg);
    HP_REQUIRE(f != NULL);
    struct hp_pool *pool = hp_link_pool(f);
    unsigned char want[MAX_LEN], got[MAX_LEN];
    for (int how = 0; how < 2; how++) {
        struct hp_buf *orig = fnew(pool, 77), *send;
        HP_REQUIRE(orig != NULL);
        if (how == 0) {
            send = hp_buf_clone(orig, pool);
            HP_REQUIRE(send != NULL);
        } else {
            HP_REQUIRE_EQ(hp_buf_ref(orig), 2);
            send = orig;
        }
        HP_CHECK_EQ(hp_link_tx_burst(f, &send, 1), 1);
        struct hp_buf *r;
        HP_REQUIRE_EQ(hp_link_rx_burst(e[1], &r, 1), 1);
        fbytes(want, 77);
        HP_REQUIRE_EQ(r->pkt_len, flen(77));
        hp_buf_copy_out(r, 0, r->pkt_len, got);
        int diff = 0;
        for (uint32_t i = 0; i < flen(77); i++)
            diff += got[i] != want[i];
        HP_CHECK_EQ(diff, 1);
        HP_CHECK_MEMEQ(hp_buf_data(orig), want, flen(77));
        hp_buf_free(r);
        hp_buf_free(orig);
    }
    struct hp_fault_stats fs;
    HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
    HP_CHECK_EQ(fs.corrupted, 2);
    HP_CHECK_EQ(hp_link_close(f), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* directions: faults apply only where asked. */
HP_TEST(fault_directions)
{
    for (unsigned dir = HP_FAULT_TX; dir <= HP_FAULT_RX; dir++) {
        struct hp_link *e[2];
        HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
        struct hp_fault_config cfg = {.seed = 4, .drop = 1, .directions = dir};
        struct hp_link *f = hp_link_fault(e[0], &cfg);
        HP_REQUIRE(f != NULL);
        struct hp_buf *b[20];
        for (uint32_t i = 0; i < 20; i++)
            HP_REQUIRE((b[i] = fnew(hp_link_pool(f), i)) != NULL);
        HP_CHECK_EQ(hp_link_tx_burst(f, b, 10), 10);
        HP_CHECK_EQ(hp_link_tx_burst(e[1], b + 10, 10), 10);
        struct hp_buf *r[20];
        int k1 = hp_link_rx_burst(e[1], r, 20);
        HP_REQUIRE(k1 >= 0);
        hp_buf_free_bulk(r, (unsigned)k1);
        int k2 = hp_link_rx_burst(f, r, 20);
        HP_REQUIRE(k2 >= 0);
        hp_buf_free_bulk(r, (unsigned)k2);
        HP_CHECK_EQ(k1, dir == HP_FAULT_TX ? 0 : 10);
        HP_CHECK_EQ(k2, dir == HP_FAULT_RX ? 0 : 10);
        struct hp_fault_stats fs;
        HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
        HP_CHECK_EQ(fs.seen, 20);
        HP_CHECK_EQ(fs.dropped, 10);
        HP_CHECK_EQ(hp_link_close(f), 0);
        HP_CHECK_EQ(hp_link_close(e[1]), 0);
    }
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(fault_forwards_to_inner_link)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_fault_config cfg = {.seed = 1, .drop = 0.5};
    struct hp_link *f = hp_link_fault(e[0], &cfg);
    HP_REQUIRE(f != NULL);
    HP_CHECK_STREQ(hp_link_kind(f), "fault");
    HP_CHECK_STREQ(hp_link_name(f), hp_link_name(e[0]));
    HP_CHECK(hp_link_pool(f) == hp_link_pool(e[0]));
    HP_CHECK_EQ(hp_link_caps(f), hp_link_caps(e[0]));
    HP_CHECK_EQ(hp_link_mtu(f), hp_link_mtu(e[0]));
    HP_CHECK_EQ(hp_link_fd(f), hp_link_fd(e[0]));
    uint8_t m0[6], m1[6];
    hp_link_mac(f, m0);
    hp_link_mac(e[0], m1);
    HP_CHECK_MEMEQ(m0, m1, 6);
    HP_CHECK_EQ(hp_link_set_mtu(f, 900), 0);
    HP_CHECK_EQ(hp_link_mtu(e[0]), 900u);
    HP_CHECK_EQ(hp_link_set_mtu(f, 100000), -EMSGSIZE);
    struct hp_buf *b[100];
    HP_CHECK_EQ(hp_link_completions(f, b, 100), 0);
    for (uint32_t i = 0; i < 100; i++)
        HP_REQUIRE((b[i] = fnew(hp_link_pool(f), i)) != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(f, b, 100), 100);
    struct hp_fault_stats fs;
    HP_REQUIRE_EQ(hp_link_fault_stats(f, &fs), 0);
    struct hp_link_stats sf, si;
    hp_link_stats(f, &sf);
    hp_link_stats(e[0], &si);
    HP_CHECK_MEMEQ(&sf, &si, sizeof sf);
    HP_CHECK_EQ(sf.tx_packets, 100 - fs.dropped);
    int k = hp_link_rx_burst(e[1], b, 100);
    HP_CHECK_EQ(k, (int)(100 - fs.dropped));
    if (k > 0)
        hp_buf_free_bulk(b, (unsigned)k);
    HP_CHECK_EQ(hp_link_close(f), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- stacking: fault over pcap over mem, and pcap over fault -------------- */

/* Sequence numbers of the records of a pcap file of our frames, in order;
 * -1 when the file is not what we wrote. */
static long pcap_seqs(const char *path, uint32_t *seqs, size_t max)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    unsigned char h[24], rh[16], d[MAX_LEN];
    long n = -1;
    if (fread(h, 1, 24, fp) == 24 && hp_test_load32(h) == 0xa1b2c3d4u &&
        hp_test_load32(h + 20) == 1) {
        n = 0;
        while (fread(rh, 1, 16, fp) == 16) {
            uint32_t incl = hp_test_load32(rh + 8);
            if (incl > sizeof d || incl < 18 || fread(d, 1, incl, fp) != incl || (size_t)n == max) {
                n = -1;
                break;
            }
            memcpy(&seqs[n++], d + 14, 4);
        }
    }
    fclose(fp);
    return n;
}

HP_TEST(fault_stacks_with_pcap)
{
    char dir[] = "/tmp/hp-fault-XXXXXX";
    HP_REQUIRE(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/stack.pcap", dir);
    const uint32_t n = 2048; /* whole bursts of 32 */
    uint32_t *got = calloc(n, sizeof *got), *rec = calloc(n, sizeof *rec);
    HP_REQUIRE(got && rec);

    for (int order = 0; order < 2; order++) {
        struct hp_link *e[2];
        HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
        struct hp_fault_config cfg = {.seed = 9, .drop = 0.1, .reorder = 0.1};
        struct hp_link *top, *fl;
        if (order == 0) { /* fault over pcap over mem: the file holds what got through */
            struct hp_link *p = hp_link_pcap(e[0], path);
            HP_REQUIRE(p != NULL);
            top = fl = hp_link_fault(p, &cfg);
            HP_REQUIRE(top != NULL);
            struct hp_fault_stats fs;
            HP_CHECK_EQ(hp_link_fault_stats(p, &fs), -EINVAL);
        } else { /* pcap over fault over mem: the file holds what was sent */
            fl = hp_link_fault(e[0], &cfg);
            HP_REQUIRE(fl != NULL);
            top = hp_link_pcap(fl, path);
            HP_REQUIRE(top != NULL);
            HP_CHECK_STREQ(hp_link_kind(top), "pcap");
        }
        HP_CHECK_STREQ(hp_link_name(top), hp_link_name(e[0]));
        HP_CHECK(hp_link_pool(top) == hp_link_pool(e[0]));
        size_t ngot = 0;
        for (uint32_t seq = 0; seq < n;) {
            struct hp_buf *b[32];
            for (uint32_t i = 0; i < 32; i++)
                HP_REQUIRE((b[i] = fnew(hp_link_pool(top), seq + i)) != NULL);
            HP_REQUIRE_EQ(hp_link_tx_burst(top, b, 32), 32);
            seq += 32;
            int k;
            while ((k = hp_link_rx_burst(e[1], b, 32)) > 0) {
                for (int i = 0; i < k && ngot < n; i++)
                    hp_buf_copy_out(b[i], 14, 4, &got[ngot++]);
                hp_buf_free_bulk(b, (unsigned)k);
            }
        }
        /* Release the last held frame. */
        HP_CHECK_EQ(hp_link_tx_burst(top, NULL, 0), 0);
        struct hp_buf *b[32];
        int k;
        while ((k = hp_link_rx_burst(e[1], b, 32)) > 0) {
            for (int i = 0; i < k && ngot < n; i++)
                hp_buf_copy_out(b[i], 14, 4, &got[ngot++]);
            hp_buf_free_bulk(b, (unsigned)k);
        }
        struct hp_fault_stats fs;
        HP_REQUIRE_EQ(hp_link_fault_stats(fl, &fs), 0);
        HP_CHECK_EQ(ngot, n - fs.dropped);
        HP_CHECK_GT(fs.reordered, 0);
        struct hp_link_stats st;
        hp_link_stats(top, &st);
        HP_CHECK_EQ(st.tx_packets, n - fs.dropped);
        HP_CHECK_EQ(hp_link_close(top), 0); /* the whole stack */
        HP_CHECK_EQ(hp_link_close(e[1]), 0);

        long nrec = pcap_seqs(path, rec, n);
        if (order == 0) {
            HP_CHECK_EQ(nrec, (long)ngot);
            if (nrec == (long)ngot)
                HP_CHECK_MEMEQ(rec, got, ngot * sizeof *got);
        } else {
            HP_CHECK_EQ(nrec, (long)n);
            for (long i = 0; i < nrec; i++)
                if (rec[i] != (uint32_t)i) {
                    hp_test_fail(__FILE__, __LINE__, "record %ld is frame %u", i, rec[i]);
                    break;
                }
        }
        unlink(path);
    }
    rmdir(dir);
    free(got);
    free(rec);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
