/* SPDX-License-Identifier: BSD-3-Clause */
/* ADAPTIVE: the decision rule driven with injected rates (it converges on the faster policy, does not flap, follows a change, falls back when nothing can be measured), and the pool's per-pair measurements and stats. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include <hotpath/pool.h>

#include "buf/internal.h"
#include "hp_test.h"
#include "track.h"

#define L HP_ALIEN_LOCAL
#define D HP_ALIEN_DEFER

/* A made-up world: each policy frees at a rate (buffers per tick, any
 * unit), each epoch's length is off by up to +-noise (uniform), and now and
 * then (one epoch in `spike`, 0: never) an epoch is 3x longer, as when
 * the freer is preempted. */
struct world {
    double rate[2]; /* [0] LOCAL, [1] DEFER */
    double noise;
    unsigned spike;
    uint64_t rng;
};

static uint64_t epoch_ticks(struct world *w, int route)
{
    double u = (double)(hp_test_rand(&w->rng) >> 11) / (double)(1ull << 53);
    double t = 1e6 / w->rate[route == D] * (1 + w->noise * (2 * u - 1));
    if (w->spike && hp_test_rand(&w->rng) % w->spike == 0)
        t *= 3;
    return (uint64_t)t + 1;
}

struct tally {
    unsigned epochs, on[2]; /* epochs run on LOCAL, on DEFER */
};

/* Run n epochs from the rule's current state; returns the last route. */
static int run(struct hp__adapt *a, struct world *w, int route, unsigned n, int fallback,
               struct tally *t)
{
    for (unsigned i = 0; i < n; i++) {
        if (t) {
            t->epochs++;
            t->on[route == D]++;
        }
        route = hp__adapt_epoch(a, epoch_ticks(w, route), fallback);
        if (route != L && route != D) {
            hp_test_fail(__FILE__, __LINE__, "route %d after epoch %u", route, i);
            return L;
        }
    }
    return route;
}

static struct world world_of(double local, double defer, double noise)
{
    struct world w = {{local, defer}, noise, 0, hp_test_seed() | 1};
    return w;
}

/* DEFER 10% faster, +-3% noise, starting from the contention signal's
 * LOCAL: it switches once and stays, and after that spends little time on
 * LOCAL (only its explorations). */
HP_TEST(adapt_rule_converges_to_defer)
{
    struct hp__adapt a;
    hp__adapt_init(&a, L);
    struct world w = world_of(100, 110, 0.03);
    int route = run(&a, &w, a.route, 200, L, NULL);
    HP_CHECK_EQ(a.cur, D);
    HP_CHECK_EQ(a.switches, 1);
    struct tally t = {0};
    route = run(&a, &w, route, 20000, L, &t);
    HP_CHECK_EQ(a.cur, D);
    HP_CHECK_EQ(a.switches, 1);
    /* once settled, exploring costs 6 epochs in HOLD_MAX + 12 */
    HP_CHECK_LT(t.on[0] * 100, t.epochs * 3);
    HP_CHECK_GT(a.gain_ppm, 0); /* the last exploration saw DEFER faster */
}

/* LOCAL 8% faster, starting from DEFER (the contention signal said so). */
HP_TEST(adapt_rule_converges_to_local)
{
    struct hp__adapt a;
    hp__adapt_init(&a, D);
    struct world w = world_of(108, 100, 0.03);
    int route = run(&a, &w, a.route, 200, D, NULL);
    HP_CHECK_EQ(a.cur, L);
    HP_CHECK_EQ(a.switches, 1);
    route = run(&a, &w, route, 20000, D, NULL);
    HP_CHECK_EQ(a.cur, L);
    HP_CHECK_EQ(a.switches, 1);
    HP_CHECK_LT(a.gain_ppm, 0); /* the last exploration saw LOCAL faster */
}

/* Equal rates under heavy noise (+-8%) and preemption spikes: whatever it
 * picks, it does not flap. */
HP_TEST(adapt_rule_does_not_flap)
{
    struct hp__adapt a;
    hp__adapt_init(&a, L);
    struct world w = world_of(100, 100, 0.08);
    w.spike = 50;
    run(&a, &w, a.route, 100000, L, NULL);
    HP_CHECK_GT(a.explorations, 40);
    /* A switch needs two explorations in a row whose every round agrees
     * beyond the margin; with equal rates that is rare. */
    HP_CHECK_LE(a.switches, 6);
}

/* A real difference smaller than the margin (1%) is not worth a switch:
 * the rule keeps what it has, either way. */
HP_TEST(adapt_rule_keeps_within_margin)
{
    for (int start = L; start <= D; start++) {
        struct hp__adapt a;
        hp__adapt_init(&a, start);
        struct world w = world_of(start == L ? 100 : 101, start == L ? 101 : 100, 0.005);
        run(&a, &w, a.route, 50000, start, NULL);
        HP_CHECK_EQ(a.cur, start);
        HP_CHECK_EQ(a.switches, 0);
    }
}

/* The world changes (the pipeline got deeper): the rule follows within a
 * few explorations, and only once. */
HP_TEST(adapt_rule_follows_a_change)
{
    struct hp__adapt a;
    hp__adapt_init(&a, L);
    struct world w = world_of(110, 100, 0.02);
    int route = run(&a, &w, a.route, 5000, L, NULL);
    HP_CHECK_EQ(a.cur, L);
    HP_CHECK_EQ(a.switches, 0);
    w.rate[1] = 125; /* DEFER now 14% faster */
    /* at worst: the current hold (HOLD_MAX) runs out, then two explorations */
    route = run(&a, &w, route, HP__AD_HOLD_MAX + 2 * (HP__AD_HOLD_MIN + 12) + 8, L, NULL);
    HP_CHECK_EQ(a.cur, D);
    HP_CHECK_EQ(a.switches, 1);
    run(&a, &w, route, 5000, L, NULL);
    HP_CHECK_EQ(a.switches, 1);
}

/* No clock (every epoch unmeasurable): the pair follows the contention
 * signal, whatever it says, and never counts a switch of its own. */
HP_TEST(adapt_rule_falls_back_without_measurements)
{
    struct hp__adapt a;
    hp__adapt_init(&a, L);
    for (int i = 0; i < 100; i++) {
        int fb = (i / 10) % 2 ? D : L;
        HP_CHECK_EQ(hp__adapt_epoch(&a, 0, fb), fb);
        HP_CHECK_EQ(a.mode, HP__AD_FALLBACK);
    }
    HP_CHECK_EQ(a.switches, 0);
    HP_CHECK_EQ(a.explorations, 0);
}

/* A few unmeasurable epochs (a policy switch, a preemption) repeat the
 * step; many in a row (a stall, a trickle) end the exploration but keep
 * the measured choice; a pair never measured follows the contention
 * signal, and starts exploring from its choice once measurements come. */
HP_TEST(adapt_rule_stale_epochs)
{
    struct hp__adapt a;
    hp__adapt_init(&a, L);
    struct world w = world_of(100, 120, 0.01);
    int route = run(&a, &w, a.route, 5, L, NULL);
    HP_CHECK_EQ(a.mode, HP__AD_EXPLORE);
    uint8_t step = a.step;
    for (int i = 0; i < HP__AD_STALE_MAX - 1; i++)
        route = hp__adapt_epoch(&a, 0, L);
    HP_CHECK_EQ(a.mode, HP__AD_EXPLORE);
    HP_CHECK_LE(a.step, step); /* back to the start of the run on this policy */
    HP_CHECK_EQ(route, a.step >= 1 && a.step <= 3 ? D : L);
    route = run(&a, &w, route, 200, L, NULL);
    HP_CHECK_EQ(a.cur, D);
    for (int i = 0; i < 3 * HP__AD_STALE_MAX; i++)
        route = hp__adapt_epoch(&a, 0, L);
    HP_CHECK_NE(a.mode, HP__AD_FALLBACK);
    HP_CHECK_EQ(a.cur, D); /* measured: the stall changes nothing */
    HP_CHECK_EQ(route, D);

    struct hp__adapt b; /* never measured: the contention signal */
    hp__adapt_init(&b, L);
    for (int i = 0; i < 3 * HP__AD_STALE_MAX; i++)
        HP_CHECK_EQ(hp__adapt_epoch(&b, 0, i < 10 ? L : D), i < 10 ? L : D);
    HP_CHECK_EQ(b.mode, HP__AD_FALLBACK);
    run(&b, &w, D, 1, D, NULL);
    HP_CHECK_EQ(b.mode, HP__AD_EXPLORE);
    HP_CHECK_EQ(b.cur, D);
}

/* Exploring runs both policies in ABBA rounds, a settling epoch after
 * each switch, and the measured ticks land where they belong. */
HP_TEST(adapt_rule_schedule)
{
    struct hp__adapt a;
    hp__adapt_init(&a, L);
    hp__adapt_epoch(&a, 1000, L); /* from the fallback: explore */
    HP_REQUIRE_EQ(a.mode, HP__AD_EXPLORE);
    static const int want[12] = {L, D, D, D, L, L, L, D, D, D, L, L};
    for (unsigned s = 0; s < 12; s++) {
        HP_CHECK_EQ(a.route, want[s]);
        hp__adapt_epoch(&a, a.route == D ? 500 : 1001 + s, L);
    }
    HP_CHECK_EQ(a.mode, HP__AD_EXPLOIT);
    for (unsigned r = 0; r < HP__AD_ROUNDS; r++) {
        HP_CHECK_EQ(a.ticks[1][r], 500);
        HP_CHECK_GT(a.ticks[0][r], 1000);
    }
    HP_CHECK_EQ(a.pending, 1); /* DEFER twice as fast: once is not enough */
    HP_CHECK_EQ(a.cur, L);
    HP_CHECK_EQ(a.hold, HP__AD_HOLD_MIN);
}

/* ---- the rule in a pool --------------------------------------------------- */

static struct hp_pool *make_pool(const char *name, uint32_t n, int policy)
{
    struct hp_pool_config c = {.name = name,
                               .n_bufs = n,
                               .data_room = 512,
                               .cache_size = 32,
                               .alien_policy = policy,
                               .flags = HP_POOL_F_NO_HUGEPAGES};
    struct hp_pool *p = hp_pool_create(&c);
    if (!p)
        hp_test_fail(__FILE__, __LINE__, "hp_pool_create(%s): %s", name, strerror(errno));
    return track_pool(p);
}

static void destroy_pool(struct hp_pool *p)
{
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
    untrack_pool(p);
}

/* A second thread frees what main hands it through 64 slots. */
struct handoff {
    struct hp_pool *p;
    _Atomic(struct hp_buf *) slot[64];
    unsigned n;
    bool warm; /* the freer takes and frees a buffer of its own first */
};

static void *freer_main(void *arg)
{
    struct handoff *h = arg;
    if (h->warm) {
        /* As a stack's thread does: its cache exists and the pool is the
         * one it last used, so single frees take hp_buf_free's fast path,
         * alien ones included. */
        struct hp_buf *own = hp_buf_alloc(h->p);
        if (own)
            hp_buf_free(own);
    }
    for (unsigned freed = 0; freed < h->n;) {
        struct hp_buf *b = atomic_exchange(&h->slot[freed % 64], NULL);
        if (!b) {
            sched_yield();
            continue;
        }
        hp_buf_free(b);
        freed++;
    }
    hp_pool_thread_flush(h->p);
    hp_thread_exit();
    return NULL;
}

/* Main allocates n buffers and hands each to the freer (warm: see
 * struct handoff). */
static void pipeline_x(struct hp_pool *p, unsigned n, bool warm)
{
    static struct handoff h;
    memset(&h, 0, sizeof h);
    h.p = p;
    h.n = n;
    h.warm = warm;
    pthread_t th;
    if (pthread_create(&th, NULL, freer_main, &h) != 0) {
        hp_test_fail(__FILE__, __LINE__, "pthread_create failed");
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        struct hp_buf *b;
        while ((b = hp_buf_alloc(p)) == NULL)
            sched_yield(); /* the freer holds them in its cache or queue */
        while (atomic_load(&h.slot[i % 64]) != NULL)
            sched_yield();
        atomic_store(&h.slot[i % 64], b);
    }
    pthread_join(th, NULL);
    hp_pool_thread_flush(p);
}

static void pipeline(struct hp_pool *p, unsigned n)
{
    pipeline_x(p, n, false);
}

/* Single alien frees by a thread that uses the pool itself (hp_buf_free's
 * fast path keeps them when the policy says local, the bulk path defers
 * them otherwise): every one counted for its pair, every buffer back. */
HP_TEST(pool_single_alien_frees_on_the_fast_path)
{
    static const int pols[] = {HP_ALIEN_LOCAL, HP_ALIEN_DEFER, HP_ALIEN_ADAPTIVE};
    for (int k = 0; k < 3; k++) {
        struct hp_pool *p = make_pool("alien-fast", 256, pols[k]);
        HP_REQUIRE(p);
        if (pols[k] == HP_ALIEN_ADAPTIVE)
            hp__pool_set_epoch(p, 16);
        pipeline_x(p, 4096, true);
        struct hp_pool_pair_stats ps[2];
        HP_REQUIRE_EQ(hp_pool_pair_stats(p, ps, 2), 1);
        HP_CHECK_EQ(ps[0].alien_frees, 4096);
        struct hp_pool_stats st;
        HP_REQUIRE_EQ(hp_pool_stats(p, &st), 0);
        HP_CHECK_EQ(st.alien_frees, 4096);
        HP_CHECK_EQ(st.errors, 0);
        destroy_pool(p);
    }
}

/* Short epochs, so that many end: the pair is measured, explores both
 * policies, and says so in the pair stats, whose counts agree with the
 * pool's (after the freer left: the counts are over the pool's life).
 * 128 frees an epoch (4096 of them: three explorations take about 2,300
 * when each confirms the choice, adapt.c), 16 a part: shorter parts (2
 * frees at an epoch of 16) often took no tick at all of a coarse counter
 * (aarch64's cntvct_el0 under qemu, or a 25 MHz one on hardware, as the
 * freer drains its slots in a burst), so the epochs were not measurements
 * and the pair never explored (qemu-aarch64 on a Zen 4: 5 of 10 runs). */
HP_TEST(pool_adaptive_measures_pairs)
{
    enum { N = 512, TOTAL = 512 * 1024, EPOCH = 128 };
    struct hp_pool *p = make_pool("adaptive-measured", N, HP_ALIEN_ADAPTIVE);
    HP_REQUIRE(p);
    hp__pool_set_epoch(p, EPOCH);
    pipeline(p, TOTAL);
    struct hp_pool_pair_stats ps[4];
    memset(ps, 0xA5, sizeof ps);
    HP_REQUIRE_EQ(hp_pool_pair_stats(p, ps, 4), 1);
    HP_CHECK_EQ(ps[0].owner, hp_thread_id());
    HP_CHECK_NE(ps[0].freer, ps[0].owner);
    HP_CHECK_EQ(ps[0].alien_frees, TOTAL);
    HP_CHECK_EQ(ps[0].measured, 1);
    HP_CHECK_GE(ps[0].explorations, 3);
    HP_CHECK(ps[0].policy == HP_ALIEN_LOCAL || ps[0].policy == HP_ALIEN_DEFER);
    HP_CHECK(ps[0].defer_gain > -1 && ps[0].defer_gain < 100);
    struct hp_pool_stats st;
    HP_REQUIRE_EQ(hp_pool_stats(p, &st), 0);
    HP_CHECK_EQ(st.alien_frees, TOTAL);
    HP_CHECK_EQ(st.policy_switches, ps[0].switches);
    HP_CHECK_EQ(st.errors, 0);
    destroy_pool(p);
}

/* Epochs longer than the run: nothing measured, the contention signal
 * decides (here: no contention, so local). */
HP_TEST(pool_adaptive_unmeasured_pair_falls_back)
{
    struct hp_pool *p = make_pool("adaptive-unmeasured", 256, HP_ALIEN_ADAPTIVE);
    HP_REQUIRE(p);
    hp__pool_set_epoch(p, UINT32_MAX);
    pipeline(p, 4096);
    struct hp_pool_pair_stats ps;
    HP_REQUIRE_EQ(hp_pool_pair_stats(p, &ps, 1), 1);
    HP_CHECK_EQ(ps.measured, 0);
    HP_CHECK_EQ(ps.policy, HP_ALIEN_LOCAL);
    HP_CHECK_EQ(ps.explorations, 0);
    HP_CHECK_EQ(ps.alien_frees, 4096);
    destroy_pool(p);
}

/* Under a fixed policy every pair is on it; the arguments are checked. */
HP_TEST(pool_pair_stats_fixed_and_bad_args)
{
    HP_CHECK_EQ(hp_pool_pair_stats(NULL, NULL, 0), -EINVAL);
    static const int pols[] = {HP_ALIEN_LOCAL, HP_ALIEN_DEFER};
    for (int k = 0; k < 2; k++) {
        struct hp_pool *p = make_pool("pair-fixed", 256, pols[k]);
        HP_REQUIRE(p);
        HP_CHECK_EQ(hp_pool_pair_stats(p, NULL, 0), 0);
        HP_CHECK_EQ(hp_pool_pair_stats(p, NULL, 1), -EINVAL);
        pipeline(p, 1000);
        struct hp_pool_pair_stats ps[2];
        HP_CHECK_EQ(hp_pool_pair_stats(p, NULL, 0), 1);
        HP_REQUIRE_EQ(hp_pool_pair_stats(p, ps, 2), 1);
        HP_CHECK_EQ(ps[0].policy, pols[k]);
        HP_CHECK_EQ(ps[0].alien_frees, 1000);
        HP_CHECK_EQ(ps[0].measured, 0);
        HP_CHECK_EQ(ps[0].switches, 0);
        destroy_pool(p);
    }
}

/* The pool's policy switched back and forth under ADAPTIVE (what `hotpath
 * bench pool` does between its slices): epochs a switch falls in are not
 * measured, the pair still converges, and the buffers all come back. */
HP_TEST(pool_adaptive_across_policy_switches)
{
    struct hp_pool *p = make_pool("adaptive-switched", 512, HP_ALIEN_ADAPTIVE);
    HP_REQUIRE(p);
    hp__pool_set_epoch(p, 32);
    for (int round = 0; round < 6; round++) {
        HP_CHECK_EQ(hp_pool_set_alien_policy(p, HP_ALIEN_LOCAL + round % 3), 0);
        pipeline(p, 8192);
    }
    struct hp_pool_pair_stats ps[8];
    int n = hp_pool_pair_stats(p, ps, 8);
    HP_CHECK_GE(n, 1);
    uint64_t total = 0;
    for (int i = 0; i < n && i < 8; i++)
        total += ps[i].alien_frees;
    HP_CHECK_EQ(total, 6 * 8192);
    struct hp_pool_stats st;
    HP_REQUIRE_EQ(hp_pool_stats(p, &st), 0);
    HP_CHECK_EQ(st.errors, 0);
    HP_CHECK_EQ(st.allocs, st.frees);
    destroy_pool(p);
}
