/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack's timer heap: firing order, cancel, re-arm, growth to many timers, and callbacks that re-arm. */
#include <stdlib.h>

#include "core_test.h"

struct rec {
    struct hp__timer_cb cb; /* cb.t: the timer */
    uint64_t due;           /* what it was last armed for */
    int id;
    int fired;
};

/* Arm r's timer for due, remembering due (the heap forgets it once fired). */
static int arm(struct hp_stack *s, struct rec *r, uint64_t due)
{
    r->due = due;
    return hp__timer_arm(s, &r->cb.t, due);
}

static int order[20000];
static int norder;

static void record(struct hp_stack *s, void *arg)
{
    (void)s;
    struct rec *r = arg;
    r->fired++;
    if (norder < (int)(sizeof order / sizeof order[0]))
        order[norder++] = r->id;
}

HP_TEST(timer_fires_in_due_order)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    uint64_t base = s->now;
    struct rec r[100];
    uint64_t seed = hp_test_seed();
    for (int i = 0; i < 100; i++) {
        r[i].id = i;
        r[i].fired = 0;
        hp__timer_cb_init(&r[i].cb, record, &r[i]);
        HP_CHECK(!hp__timer_armed(&r[i].cb.t));
        HP_REQUIRE_EQ(arm(s, &r[i], base + 1 + hp_test_rand(&seed) % 1000000), 0);
        HP_CHECK(hp__timer_armed(&r[i].cb.t));
    }
    norder = 0;
    HP_CHECK_EQ(hp__timers_run(s), 0); /* nothing due yet */
    s->now = base + 500000;
    int first = hp__timers_run(s);
    for (int i = 0; i < 100; i++)
        HP_CHECK_EQ(r[i].fired, r[i].due <= s->now ? 1 : 0);
    s->now = base + 2000000;
    HP_CHECK_EQ(first + hp__timers_run(s), 100);
    HP_CHECK_EQ(norder, 100);
    for (int i = 1; i < norder; i++)
        HP_CHECK_LE(r[order[i - 1]].due, r[order[i]].due);
    for (int i = 0; i < 100; i++) {
        HP_CHECK_EQ(r[i].fired, 1);
        HP_CHECK(!hp__timer_armed(&r[i].cb.t));
    }
    HP_CHECK_EQ(hp_stack_next_timer_ns(s), -1);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(timer_cancel)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    struct rec r[5];
    for (int i = 0; i < 5; i++) {
        r[i].id = i;
        r[i].fired = 0;
        hp__timer_cb_init(&r[i].cb, record, &r[i]);
        HP_REQUIRE_EQ(arm(s, &r[i], s->now + 10 + (uint64_t)i), 0);
    }
    hp__timer_cancel(s, &r[0].cb.t); /* the root */
    hp__timer_cancel(s, &r[2].cb.t); /* the middle */
    hp__timer_cancel(s, &r[4].cb.t); /* the last */
    hp__timer_cancel(s, &r[4].cb.t); /* twice: no-op */
    HP_CHECK(!hp__timer_armed(&r[2].cb.t));
    HP_CHECK_EQ(s->nheap, 2u);
    HP_CHECK_GE(hp_stack_next_timer_ns(s), 0);
    s->now += 100;
    norder = 0;
    HP_CHECK_EQ(hp__timers_run(s), 2);
    HP_CHECK_EQ(norder, 2);
    HP_CHECK_EQ(order[0], 1);
    HP_CHECK_EQ(order[1], 3);
    HP_CHECK_EQ(r[0].fired + r[2].fired + r[4].fired, 0);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(timer_rearm_moves_it)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    uint64_t t0 = s->now;
    struct rec a = {.id = 1}, b = {.id = 2};
    hp__timer_cb_init(&a.cb, record, &a);
    hp__timer_cb_init(&b.cb, record, &b);
    HP_REQUIRE_EQ(arm(s, &a, t0 + 100), 0);
    HP_REQUIRE_EQ(arm(s, &b, t0 + 150), 0);
    /* Earlier. */
    HP_REQUIRE_EQ(arm(s, &a, t0 + 50), 0);
    HP_CHECK_EQ(s->nheap, 2u); /* re-arming does not duplicate */
    s->now = t0 + 60;
    HP_CHECK_EQ(hp__timers_run(s), 1);
    HP_CHECK_EQ(a.fired, 1);
    /* Later: b moves past a's new due time. */
    HP_REQUIRE_EQ(arm(s, &a, t0 + 200), 0);
    HP_REQUIRE_EQ(arm(s, &b, t0 + 300), 0);
    s->now = t0 + 250;
    norder = 0;
    HP_CHECK_EQ(hp__timers_run(s), 1);
    HP_CHECK_EQ(order[0], 1);
    HP_CHECK_EQ(b.fired, 0);
    s->now = t0 + 300;
    HP_CHECK_EQ(hp__timers_run(s), 1);
    HP_CHECK_EQ(b.fired, 1);
    HP_CHECK_EQ(a.fired, 2);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(timer_many_with_cancels)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    enum { N = 10000 };
    struct rec *r = calloc(N, sizeof *r);
    HP_REQUIRE(r != NULL);
    uint64_t seed = hp_test_seed() ^ 0x5eed;
    uint64_t t0 = s->now;
    for (int i = 0; i < N; i++) {
        r[i].id = i;
        hp__timer_cb_init(&r[i].cb, record, &r[i]);
        HP_REQUIRE_EQ(arm(s, &r[i], t0 + 1 + hp_test_rand(&seed) % 5000), 0);
    }
    /* Re-arm a quarter, cancel a third. */
    for (int i = 0; i < N; i += 4)
        HP_REQUIRE_EQ(arm(s, &r[i], t0 + 1 + hp_test_rand(&seed) % 5000), 0);
    int cancelled = 0;
    for (int i = 0; i < N; i += 3) {
        hp__timer_cancel(s, &r[i].cb.t);
        cancelled++;
    }
    HP_CHECK_EQ(s->nheap, (uint32_t)(N - cancelled));
    norder = 0;
    int ran = 0;
    for (uint64_t t = 0; t <= 5000; t += 250) {
        s->now = t0 + t;
        ran += hp__timers_run(s);
    }
    HP_CHECK_EQ(ran, N - cancelled);
    HP_CHECK_EQ(norder, N - cancelled);
    for (int i = 1; i < norder; i++)
        HP_CHECK_LE(r[order[i - 1]].due, r[order[i]].due);
    for (int i = 0; i < N; i++)
        HP_CHECK_EQ(r[i].fired, i % 3 == 0 ? 0 : 1);
    HP_STOP_IF_FAILED();
    free(r);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

static void rearm_now(struct hp_stack *s, void *arg)
{
    struct rec *r = arg;
    r->fired++;
    arm(s, r, s->now); /* due at once, again */
}

HP_TEST(timer_callback_rearming_for_now_waits_a_round)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    struct rec r = {0};
    hp__timer_cb_init(&r.cb, rearm_now, &r);
    HP_REQUIRE_EQ(arm(s, &r, s->now), 0);
    HP_CHECK_EQ(hp__timers_run(s), 1);
    HP_CHECK_EQ(r.fired, 1);
    HP_CHECK(hp__timer_armed(&r.cb.t));
    HP_CHECK_EQ(hp__timers_run(s), 1);
    HP_CHECK_EQ(r.fired, 2);
    HP_CHECK_EQ(hp_stack_next_timer_ns(s), 0); /* overdue */
    hp__timer_cancel(s, &r.cb.t);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(timer_clock_is_monotonic)
{
    uint64_t a = hp__clock_ns(), b = hp__clock_ns();
    HP_CHECK_GT(a, 0);
    HP_CHECK_LE(a, b);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* Every entry no earlier than its parent (the heap is 4-ary), every armed
 * timer's slot pointing at its own entry (whose due time is the timer's:
 * hp__timer_due reads it there). */
static bool heap_ok(const struct hp_stack *s)
{
    for (uint32_t i = 0; i < s->nheap; i++) {
        const struct hp__heap_ent *e = &s->heap[i];
        if (e->t->slot != (int32_t)i)
            return false;
        if (i > 0 && s->heap[(i - 1) / 4].due > e->due)
            return false;
    }
    return true;
}

HP_TEST(timer_heap_shape_under_random_operations)
{
    struct hp_stack *s = hp_stack_create(NULL);
    HP_REQUIRE(s != NULL);
    enum { N = 3000 };
    struct rec *r = calloc(N, sizeof *r);
    HP_REQUIRE(r != NULL);
    for (int i = 0; i < N; i++) {
        r[i].id = i;
        hp__timer_cb_init(&r[i].cb, record, &r[i]);
    }
    uint64_t seed = hp_test_seed() ^ 0x4a7;
    uint64_t t0 = s->now;
    int armed = 0, ran = 0;
    norder = 0;
    for (int op = 0; op < 60000; op++) {
        struct rec *x = &r[hp_test_rand(&seed) % N];
        unsigned what = (unsigned)(hp_test_rand(&seed) % 16);
        if (what < 9) {
            bool was = hp__timer_armed(&x->cb.t);
            HP_REQUIRE_EQ(arm(s, x, s->now + hp_test_rand(&seed) % 100000), 0);
            armed += was ? 0 : 1;
        } else if (what < 14) {
            armed -= hp__timer_armed(&x->cb.t) ? 1 : 0;
            hp__timer_cancel(s, &x->cb.t);
        } else {
            s->now += hp_test_rand(&seed) % 20000;
            int k = hp__timers_run(s);
            ran += k;
            armed -= k;
            /* Nothing left that was due. */
            HP_CHECK(s->nheap == 0 || s->heap[0].due > s->now);
        }
        if (op % 7 == 0)
            HP_CHECK(heap_ok(s));
        HP_CHECK_EQ(s->nheap, (uint32_t)armed);
        HP_STOP_IF_FAILED();
    }
    HP_CHECK(heap_ok(s));
    s->now = t0 + UINT32_MAX;
    ran += hp__timers_run(s);
    HP_CHECK_EQ(s->nheap, 0u);
    int fired = 0;
    for (int i = 0; i < N; i++)
        fired += r[i].fired;
    HP_CHECK_EQ(fired, ran);
    free(r);
    hp_stack_destroy(s);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
