/* SPDX-License-Identifier: BSD-3-Clause */
/* ADAPTIVE's decision rule for one (freer, owner) pair: measure both policies in short epochs, keep the faster, re-try now and then. */
#include <string.h>

#include <hotpath/pool.h>

#include "../base/debug.h"
#include "internal.h"

/*
 * The rule sees one number per epoch: how long the freer took for its last
 * HP__EPOCH alien frees of this owner's buffers (in ticks of hp__ticks()).
 * Fewer ticks is better: in a pipeline the freer's rate is the pipeline's
 * rate, whichever thread is the bottleneck, since the two are tied by what
 * they pass each other. The rule is pure (no clock, no pool), so that
 * tests can drive it with made-up rates.
 *
 * Exploring: blocks of HP__AD_ROUNDS (2) rounds, each round one epoch on
 * the current policy C and one on the other O, in the order C O | O C (so
 * that a steady drift favours neither); switching costs a settling epoch,
 * not measured, that lets the pool settle into the policy (the owner's
 * queue, the caches' fill): C o O O c C, 6 epochs, 3 on O. The rounds'
 * paired ratios decide. The other policy wins when the median ratio favours
 * it by more than HP__AD_MARGIN_PPM and a sign test agrees: 4 of 4 rounds, 6
 * of 6, 7 of 8, 8 of 10, 10 of 12 (at most 6% by chance; never on 2). The
 * current one is confirmed on weaker evidence (2 of 2, 3 of 4...: keeping
 * it risks less than leaving it). When the median leans one way but the
 * rounds do not say it clearly, another block is measured, up to
 * HP__AD_BLOCKS. A switch takes two explorations in a row that favour the
 * other policy (one is noise until a second confirms it).
 *
 * Exploiting: the chosen policy for `hold` epochs; each exploration that
 * confirms the choice makes the next hold longer, up to HP__AD_HOLD_MAX:
 * 16 times when the rounds show the current policy faster (the sign test,
 * as above), 4 times when they find no difference beyond the margin, twice
 * when the median favours the other policy without the rounds agreeing (a
 * doubt); a switch, or a first vote for the other policy, shortens it to
 * HP__AD_HOLD_MIN. With the longest hold a pair that keeps its choice
 * spends 3 of every HP__AD_HOLD_MAX + 6 epochs on the other policy (0.15%),
 * which bounds what exploring costs once it has settled.
 *
 * No measurement (ticks == 0: no clock, an epoch that took implausibly
 * long, or one the pool's policy changed in): the step is repeated from
 * its settling epoch. After HP__AD_STALE_MAX such epochs in a row, a pair
 * that has never been measured falls back to the contention signal
 * (`fallback`) until measurements come; one that has keeps its measured
 * choice (a stall or a trickle says nothing about the policies).
 */

#define ROUNDS HP__AD_ROUNDS
#define STEPS  6

/* A block's schedule: on the other policy?, measured?, its round. */
static const uint8_t step_other[STEPS] = {0, 1, 1, 1, 0, 0};
static const uint8_t step_measured[STEPS] = {1, 0, 1, 1, 0, 1};
static const uint8_t step_round[STEPS] = {0, 0, 0, 1, 1, 1};
_Static_assert(ROUNDS == 2, "a block has 2 rounds");

static int other(int policy)
{
    return policy == HP_ALIEN_DEFER ? HP_ALIEN_LOCAL : HP_ALIEN_DEFER;
}

static int step_policy(const struct hp__adapt *a, unsigned s)
{
    return step_other[s] ? other(a->cur) : a->cur;
}

void hp__adapt_init(struct hp__adapt *a, int fallback)
{
    memset(a, 0, sizeof *a);
    a->cur = (uint8_t)fallback;
    a->route = (uint8_t)fallback;
    a->mode = HP__AD_FALLBACK;
    a->next_hold = HP__AD_HOLD_MIN;
}

static void explore(struct hp__adapt *a)
{
    a->mode = HP__AD_EXPLORE;
    a->step = 0;
    a->block = 0;
    a->route = a->cur;
}

static void insertion_sort(int64_t *v, unsigned n)
{
    for (unsigned i = 1; i < n; i++)
        for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* The exploration is over: switch (or count a vote for a switch), and
 * exploit for the next hold. favour: the policy the rounds showed to be
 * faster (0: none clearly); leaning: the one the median favours beyond the
 * margin (0: none). */
static void decide(struct hp__adapt *a, int favour, int leaning)
{
    a->explorations++;
    if (favour && favour != a->cur) {
        if (a->pending) {
            a->cur = (uint8_t)favour;
            a->switches++;
            a->pending = 0;
        } else {
            a->pending = 1; /* confirm soon */
        }
        a->next_hold = HP__AD_HOLD_MIN;
    } else {
        /* The choice stands: look again later, the later the clearer the
         * verdict (a doubt: the median leaned the other way). */
        unsigned grow = favour ? 16 : leaning && leaning != a->cur ? 2 : 4;
        a->pending = 0;
        a->next_hold =
            a->next_hold * grow > HP__AD_HOLD_MAX ? HP__AD_HOLD_MAX : a->next_hold * grow;
    }
    a->mode = HP__AD_EXPLOIT;
    a->hold = a->next_hold;
    a->route = a->cur;
}

/* A block of rounds is measured: decide, or (the median leans one way but
 * the rounds do not yet say so clearly) measure another block. Returns
 * whether the exploration is over. */
static bool block_done(struct hp__adapt *a)
{
    /* One-sided sign tests over n = 2, 4 ... 12 rounds: to leave the
     * current policy, P(at least need_other of n | both equal) <= 6.3%; to
     * confirm it, a majority is enough. */
    static const unsigned need_other[HP__AD_BLOCKS] = {3, 4, 6, 7, 8, 10};
    static const unsigned need_cur[HP__AD_BLOCKS] = {2, 3, 5, 6, 7, 9};
    unsigned n = ROUNDS * (a->block + 1u), for_defer = 0, for_local = 0;
    int64_t gain[ROUNDS * HP__AD_BLOCKS]; /* DEFER's rate over LOCAL's, minus 1, in ppm */
    for (unsigned r = 0; r < n; r++) {
        uint64_t l = a->ticks[0][r], d = a->ticks[1][r] ? a->ticks[1][r] : 1;
        gain[r] = (int64_t)(l * 1000000 / d) - 1000000; /* rate ratio = ticks L / ticks D */
        for_defer += gain[r] > 0;
        for_local += gain[r] < 0;
    }
    insertion_sort(gain, n);
    int64_t med = (gain[(n - 1) / 2] + gain[n / 2]) / 2;
    a->gain_ppm = (int32_t)med;
    int leaning = med > HP__AD_MARGIN_PPM    ? HP_ALIEN_DEFER
                  : med < -HP__AD_MARGIN_PPM ? HP_ALIEN_LOCAL
                                             : 0;
    unsigned votes = leaning == HP_ALIEN_DEFER ? for_defer : for_local;
    int favour = 0;
    if (leaning && votes >= (leaning == a->cur ? need_cur : need_other)[a->block])
        favour = leaning;
    bool unsure = !favour && (med > HP__AD_MARGIN_PPM / 2 || med < -HP__AD_MARGIN_PPM / 2);
    if (unsure && a->block + 1 < HP__AD_BLOCKS) {
        a->block++;
        return false;
    }
    decide(a, favour, leaning);
    return true;
}

/* An epoch that could not be measured. */
static int unmeasured(struct hp__adapt *a, int fallback)
{
    if (a->stale < 255)
        a->stale++;
    bool measured = a->explorations > 0;
    if (a->mode == HP__AD_FALLBACK || (a->stale >= HP__AD_STALE_MAX && !measured)) {
        a->mode = HP__AD_FALLBACK;
        a->cur = (uint8_t)fallback;
        a->route = (uint8_t)fallback;
        a->pending = 0;
        return a->route;
    }
    if (a->mode == HP__AD_EXPLORE && a->stale >= HP__AD_STALE_MAX) {
        /* No measurement for a while (a stall, a trickle): give up this
         * exploration and keep the measured choice, as long as before. */
        a->mode = HP__AD_EXPLOIT;
        a->hold = a->next_hold;
        a->route = a->cur;
    } else if (a->mode == HP__AD_EXPLORE) {
        /* Redo from the first epoch on this policy (a settling one, but at
         * the start). */
        while (a->step > 0 && step_other[a->step - 1] == step_other[a->step])
            a->step--;
        a->route = (uint8_t)step_policy(a, a->step);
    } else if (a->hold > 0) {
        a->hold--;
    }
    return a->route;
}

int hp__adapt_epoch(struct hp__adapt *a, uint64_t ticks, int fallback)
{
    HP_ASSERT(fallback == HP_ALIEN_LOCAL || fallback == HP_ALIEN_DEFER);
    if (ticks == 0)
        return unmeasured(a, fallback);
    a->stale = 0;
    switch (a->mode) {
    case HP__AD_FALLBACK:
        /* Measurements are possible (again): the contention signal's choice
         * is where the pair stands until they say otherwise. */
        a->cur = (uint8_t)fallback;
        explore(a);
        break;
    case HP__AD_EXPLORE:
        HP_ASSERT(a->step < STEPS && a->route == step_policy(a, a->step));
        if (step_measured[a->step])
            a->ticks[a->route == HP_ALIEN_DEFER][ROUNDS * a->block + step_round[a->step]] =
                ticks < UINT32_MAX ? (uint32_t)ticks : UINT32_MAX;
        if (++a->step < STEPS) {
            a->route = (uint8_t)step_policy(a, a->step);
        } else if (!block_done(a)) {
            a->step = 0; /* another block: it starts on the current policy, as this ended */
            a->route = a->cur;
        }
        break;
    default:
        HP_ASSERT(a->route == a->cur);
        if (a->hold > 0 && --a->hold > 0)
            break;
        explore(a);
        break;
    }
    return a->route;
}
