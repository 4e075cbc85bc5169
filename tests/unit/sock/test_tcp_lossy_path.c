/* SPDX-License-Identifier: BSD-3-Clause */
/* A bulk TCP transfer between two hotpath stacks through a simulated bottleneck (rate, queue, delay, seeded random loss) on a virtual clock: loss recovery counted, not timed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "hp_test.h"
#include "net/internal.h"

/*
 * client --mem-- bridge --mem-- server. The bridge does to the client's
 * frames what `hotpath bench paths` has `hotpath impair --a2b` do: a
 * 100 Mbit/s bottleneck with a byte-bounded queue (tail drop), a 20 ms
 * delay line, then random loss; the server's frames cross unharmed and at
 * once. The clock is virtual and moves only between polls, so a run is a
 * function of the seed.
 */

#define NS_PER_MS 1000000ull
#define RATE_BPS  100000000ull
#define DELAY_NS  (20 * NS_PER_MS)
#define QUEUE_B   250000u
#define RING      8192u

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};

struct slot {
    struct hp_buf *b;
    uint64_t leave, deliver; /* last bit out of the bottleneck; out of the delay line */
};

struct lpath {
    struct hp_pool *pool;
    struct hp_link *end[4]; /* client, bridge (client side), bridge (server side), server */
    struct hp_stack *s[2];
    uint64_t now;
    struct slot ring[RING];
    uint32_t head, tail, queued; /* queued: the first slot still in the bottleneck */
    uint64_t queue_bytes, last_leave;
    uint64_t rng;
    double loss;
    uint64_t drops_loss, drops_queue;
    uint64_t batch_ns, batch; /* lp_batch_ns; the batch last handed over */
};

/* The bridge hands the delay line's frames over only once per this many ns
 * (0: each when due): a loaded `hotpath impair` that runs late delivers
 * in bunches, and the receiver's ACKs come in bunches. */
static uint64_t lp_batch_ns;

static uint64_t lp_clock(void *arg)
{
    return ((const struct lpath *)arg)->now;
}

static double lp_rand(struct lpath *p)
{
    p->rng ^= p->rng >> 12;
    p->rng ^= p->rng << 25;
    p->rng ^= p->rng >> 27;
    return (double)((p->rng * 0x2545F4914F6CDD1Dull) >> 11) / (double)(1ull << 53);
}

static int lp_up(struct lpath *p, double loss, uint64_t seed, const struct hp_tcp_config *tc)
{
    memset(p, 0, sizeof *p);
    p->loss = loss;
    p->batch_ns = lp_batch_ns;
    p->rng = seed * 0x9E3779B97F4A7C15ull + 1;
    struct hp_pool_config pc = {.name = "lossy", .n_bufs = 32768};
    p->pool = hp_pool_create(&pc);
    if (!p->pool)
        return -1;
    struct hp_link_config lc = {.ring_size = 4096, .pool = p->pool};
    if (hp_link_mem_pair(&lc, p->end) != 0 || hp_link_mem_pair(&lc, p->end + 2) != 0)
        return -1;
    p->now = 5000000000000ull;
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config sc = {.name = i ? "server" : "client", .flags = HP_STACK_F_NO_DAD};
        p->s[i] = hp_stack_create(&sc);
        if (!p->s[i])
            return -1;
        hp__stack_set_clock(p->s[i], lp_clock, p);
        int ifx = hp_stack_add_iface(p->s[i], p->end[i ? 3 : 0]);
        if (ifx < 0 || hp_stack_add_addr(p->s[i], ifx, 4, IP4[i], 24) != 0)
            return -1;
        if (hp_tcp_configure(p->s[i], tc) != 0)
            return -1;
    }
    return 0;
}

static void lp_down(struct lpath *p)
{
    for (int i = 0; i < 2; i++)
        hp_stack_destroy(p->s[i]);
    while (p->head != p->tail)
        hp_buf_free(p->ring[p->head++ % RING].b);
    for (int i = 0; i < 4; i++)
        hp_link_close(p->end[i]);
    HP_CHECK_EQ(hp_pool_in_use(p->pool), 0);
    HP_CHECK_EQ(hp_pool_destroy(p->pool), 0);
}

/* A client frame into the bottleneck (or its tail drop). */
static void lp_push(struct lpath *p, struct hp_buf *b)
{
    while (p->queued != p->tail && p->ring[p->queued % RING].leave <= p->now)
        p->queue_bytes -= p->ring[p->queued++ % RING].b->pkt_len;
    uint32_t bytes = b->pkt_len;
    if (p->tail - p->head == RING || p->queue_bytes + bytes > QUEUE_B) {
        p->drops_queue++;
        hp_buf_free(b);
        return;
    }
    uint64_t start = p->last_leave > p->now ? p->last_leave : p->now;
    p->last_leave = start + (uint64_t)bytes * 8u * 1000000000ull / RATE_BPS;
    p->queue_bytes += bytes;
    struct slot *s = &p->ring[p->tail++ % RING];
    s->b = b;
    s->leave = p->last_leave;
    s->deliver = p->last_leave + DELAY_NS;
}

/* The bridge's turn: both directions. @return frames moved. */
static int lp_bridge(struct lpath *p)
{
    struct hp_buf *v[64];
    int work = 0, n;
    while ((n = hp_link_rx_burst(p->end[1], v, 64)) > 0) {
        for (int i = 0; i < n; i++)
            lp_push(p, v[i]);
        work += n;
    }
    if (p->batch_ns) {
        if (p->now / p->batch_ns == p->batch)
            goto back;
        p->batch = p->now / p->batch_ns;
    }
    while (p->head != p->tail && p->ring[p->head % RING].deliver <= p->now) {
        struct slot *s = &p->ring[p->head % RING];
        if (p->queued == p->head)
            p->queue_bytes -= s->b->pkt_len, p->queued++;
        p->head++;
        work++;
        if (lp_rand(p) < p->loss) {
            p->drops_loss++;
            hp_buf_free(s->b);
        } else if (hp_link_tx_burst(p->end[2], &s->b, 1) != 1) {
            hp_buf_free(s->b);
        }
    }
back:
    while ((n = hp_link_rx_burst(p->end[2], v, 64)) > 0) {
        int sent = hp_link_tx_burst(p->end[1], v, (unsigned)n);
        for (int i = sent < 0 ? 0 : sent; i < n; i++)
            hp_buf_free(v[i]);
        work += n;
    }
    for (int e = 1; e <= 2; e++)
        while ((n = hp_link_completions(p->end[e], v, 64)) > 0)
            hp_buf_free_bulk(v, (unsigned)n);
    return work;
}

/* One round; busy rounds take 10 us, idle ones jump to the next event. */
static void lp_step(struct lpath *p)
{
    int w = hp_stack_poll(p->s[0]) + hp_stack_poll(p->s[1]) + lp_bridge(p);
    if (w > 0) {
        p->now += 10000;
        return;
    }
    int64_t d = -1;
    for (int i = 0; i < 2; i++) {
        int64_t t = hp_stack_next_timer_ns(p->s[i]);
        if (t >= 0 && (d < 0 || t < d))
            d = t;
    }
    if (p->head != p->tail) {
        uint64_t due = p->ring[p->head % RING].deliver;
        int64_t t = due > p->now ? (int64_t)(due - p->now) : 0;
        if (d < 0 || t < d)
            d = t;
    }
    p->now += d > 0 ? (uint64_t)d : 1000u;
}

/* What a bulk transfer of len bytes did: the client's counters. */
struct lp_result {
    uint64_t got, timeouts, retrans, fast, tlp, rack, queue_drops, loss_drops, ofo_drops, ms;
};

static void lp_bulk(double loss, uint64_t seed, uint64_t len, const struct hp_tcp_config *tc,
                    struct lp_result *r)
{
    memset(r, 0, sizeof *r);
    struct lpath *p = calloc(1, sizeof *p);
    HP_REQUIRE(p != NULL);
    HP_REQUIRE_EQ(lp_up(p, loss, seed, tc), 0);
    struct hp_tcp_sock *l = hp_tcp_open(p->s[1], 4, NULL);
    struct hp_sockaddr any = {.family = 4, .port = 5001}, to = {.family = 4, .port = 5001};
    memcpy(to.addr, IP4[1], 4);
    HP_REQUIRE(l != NULL);
    HP_REQUIRE_EQ(hp_tcp_bind(l, &any), 0);
    HP_REQUIRE_EQ(hp_tcp_listen(l, 4), 0);
    struct hp_tcp_sock *c = hp_tcp_open(p->s[0], 4, NULL), *srv = NULL;
    HP_REQUIRE(c != NULL);
    HP_REQUIRE_EQ(hp_tcp_connect(c, &to), -EINPROGRESS);
    static uint8_t buf[65536];
    memset(buf, 0x5a, sizeof buf);
    uint64_t sent = 0, t0 = p->now;
    for (long i = 0; i < 50000000 && r->got < len; i++) {
        if (!srv)
            srv = hp_tcp_accept(l, NULL, NULL);
        if (hp_tcp_state(c) == HP_TCP_ESTABLISHED && sent < len) {
            long k = hp_tcp_send(c, buf, len - sent < sizeof buf ? len - sent : sizeof buf);
            if (k > 0)
                sent += (uint64_t)k;
        }
        long k;
        while (srv && (k = hp_tcp_recv(srv, buf, sizeof buf)) > 0)
            r->got += (uint64_t)k;
        if (p->now - t0 > 600000 * NS_PER_MS)
            break;
        lp_step(p);
    }
    r->ms = (p->now - t0) / NS_PER_MS;
    r->timeouts = hp_stack_counter(p->s[0], HP_CTR_TCP_TIMEOUTS);
    r->retrans = hp_stack_counter(p->s[0], HP_CTR_TCP_RETRANS_SEGS);
    r->fast = hp_stack_counter(p->s[0], HP_CTR_TCP_FAST_RETRANS);
    r->tlp = hp_stack_counter(p->s[0], HP_CTR_TCP_TLP_PROBES);
    r->rack = hp_stack_counter(p->s[0], HP_CTR_TCP_RACK_LOSSES);
    r->queue_drops = p->drops_queue;
    r->loss_drops = p->drops_loss;
    r->ofo_drops = hp_stack_counter(p->s[1], HP_CTR_TCP_OFO_DROPS) +
                   hp_stack_counter(p->s[1], HP_CTR_TCP_RCVQ_DROPS);
    if (getenv("HP_LOSSY_VERBOSE"))
        fprintf(stderr,
                "loss %g seed %llu: %llu/%llu bytes in %llu ms; rto %llu rtx %llu fast %llu "
                "tlp %llu rack %llu; dropped: loss %llu queue %llu ofo %llu\n",
                loss, (unsigned long long)seed, (unsigned long long)r->got, (unsigned long long)len,
                (unsigned long long)r->ms, (unsigned long long)r->timeouts,
                (unsigned long long)r->retrans, (unsigned long long)r->fast,
                (unsigned long long)r->tlp, (unsigned long long)r->rack,
                (unsigned long long)r->loss_drops, (unsigned long long)r->queue_drops,
                (unsigned long long)r->ofo_drops);
    hp_tcp_close(c);
    if (srv)
        hp_tcp_close(srv);
    hp_tcp_close(l);
    lp_down(p);
    free(p);
}

/* Buffers past the path's 500 KB (BDP and queue), and an out-of-order queue
 * that holds them, as the kernel receiver of the benchmark has. */
static const struct hp_tcp_config BIG = {.sndbuf = 1u << 20,
                                         .rcvbuf = 4u << 20,
                                         .ooo_max_segs = 4096};

/*
 * With SACK and RACK-TLP a random loss is found by the ACKs that follow it,
 * a lost retransmission too (RFC 8985 6.2: ordered by its own transmit
 * time): a bulk sender that always has new data to send should never need
 * its RTO. (At the very end of a transfer a lost retransmission has nothing
 * sent after it to reveal it, and RFC 8985 7.2 allows no probe during
 * recovery: there the RTO is the repair. The seeds below have no such
 * tail; 2 of 20 seeds at 0.5 % and 5 % do.) Each retransmission repairs a
 * drop: none is spurious.
 */
HP_TEST(tcp_lossy_path_sack_repairs_random_loss_without_rto)
{
    static const struct {
        double loss;
        uint64_t seed;
    } runs[] = {{0.005, 7}, {0.005, 9}, {0.02, 1}, {0.02, 8}, {0.05, 9}, {0.05, 12}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        struct lp_result r;
        lp_bulk(runs[k].loss, runs[k].seed, 8u << 20, &BIG, &r);
        HP_CHECK_EQ(r.got, 8u << 20);
        HP_CHECK_GT(r.loss_drops, 10);
        HP_CHECK_EQ(r.timeouts, 0);
        HP_CHECK_GT(r.rack, 0);
        HP_CHECK_EQ(r.ofo_drops, 0);
        HP_CHECK_LE(r.retrans, r.loss_drops + r.queue_drops);
        HP_STOP_IF_FAILED();
    }
}

/* Slow start ends before the bottleneck's queue (one BDP) overflows: the
 * ACK train says when the flight fills the pipe (tcp_cubic.c); HyStart++'s
 * delay test alone saw the queue only once it had overflowed (445 drops
 * at the end of slow start in this transfer). */
HP_TEST(tcp_lossy_path_slow_start_exits_before_the_queue_overflows)
{
    struct lp_result r;
    lp_bulk(0, 7, 8u << 20, &BIG, &r);
    HP_CHECK_EQ(r.got, 8u << 20);
    HP_CHECK_EQ(r.queue_drops, 0);
    HP_CHECK_EQ(r.retrans, 0);
    HP_CHECK_EQ(r.timeouts, 0);
    /* The same with the data handed to the receiver in bunches every 3 ms:
     * gaps in the ACK train under a quarter of the RTT do not break it
     * (with Linux's fixed 2 ms: 460 drops here). */
    lp_batch_ns = 3 * NS_PER_MS;
    lp_bulk(0, 7, 8u << 20, &BIG, &r);
    lp_batch_ns = 0;
    HP_CHECK_EQ(r.got, 8u << 20);
    HP_CHECK_LE(r.queue_drops, 4);
    HP_CHECK_EQ(r.timeouts, 0);
}

/* Short flows (100 KB, a connection each, as the benchmark's) at 2 % loss:
 * their losses are repaired by RACK and the tail loss probe, not the RTO
 * (before the fix: 25 RTOs in 20 of these 40 flows). */
HP_TEST(tcp_lossy_path_short_flows_repair_without_rto)
{
    uint64_t drops = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct lp_result r;
        lp_bulk(0.02, seed, 100000, &BIG, &r);
        HP_CHECK_EQ(r.got, 100000);
        HP_CHECK_EQ(r.timeouts, 0);
        drops += r.loss_drops;
        HP_STOP_IF_FAILED();
    }
    HP_CHECK_GT(drops, 20);
}
