/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack's timers: a growable 4-ary min-heap of (due time, timer) entries. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define HEAP_MIN_CAP 64u

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The stack reads the clock once per poll, millions of times a second when
 * busy polling, and clock_gettime costs 20-40 ns on these VMs (a third of
 * a poll that moves one segment). With an invariant TSC (CPUID
 * 0x80000007 EDX bit 8: constant rate, running in every C-state) the clock
 * is instead CLOCK_MONOTONIC extrapolated by the TSC: each thread anchors
 * (tsc, ns) pairs, learns ns per tick from two anchors at least 10 ms apart,
 * and re-anchors every ~100 ms so that the TSC's drift against NTP-slewed
 * CLOCK_MONOTONIC stays in the microseconds. Until the rate is known, and
 * on CPUs without an invariant TSC, clock_gettime answers. Values never go
 * backwards on a thread (a re-anchor that lands below what was already
 * returned is clamped): timers only need monotonic, millisecond-true time.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <x86intrin.h>

static int tsc_usable(void)
{
    static int known = -1;
    int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (k < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        k = __get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
            __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8));
        __atomic_store_n(&known, k, __ATOMIC_RELAXED);
    }
    return k;
}

#define TSC_LEARN_NS    10000000ull  /* first rate after 10 ms */
#define TSC_REANCHOR_NS 100000000ull /* then a fresh anchor every 100 ms */

/* initial-exec, as the pools' thread variables: in libhotpath.so and libhotpath-posix.so
 * the default model called __tls_get_addr on every read of the clock. */
static _Thread_local struct {
    uint64_t tsc, ns;     /* the anchor */
    uint64_t last;        /* the last value returned */
    uint64_t reanchor_at; /* TSC value at which to re-anchor */
    double ns_per_tick;   /* 0 until learnt */
} tc __attribute__((tls_model("initial-exec")));

uint64_t hp__clock_ns(void)
{
    if (!tsc_usable())
        return monotonic_ns();
    uint64_t t = __rdtsc();
    if (tc.ns_per_tick > 0 && t < tc.reanchor_at && t >= tc.tsc) {
        uint64_t v = tc.ns + (uint64_t)((double)(t - tc.tsc) * tc.ns_per_tick);
        if (v > tc.last)
            tc.last = v;
        return tc.last;
    }
    uint64_t ns = monotonic_ns();
    if (tc.tsc == 0 || t < tc.tsc) {
        tc.tsc = t;
        tc.ns = ns;
    } else if (ns - tc.ns >= TSC_LEARN_NS) {
        tc.ns_per_tick = (double)(ns - tc.ns) / (double)(t - tc.tsc);
        tc.tsc = t;
        tc.ns = ns;
        tc.reanchor_at = t + (uint64_t)((double)TSC_REANCHOR_NS / tc.ns_per_tick);
    }
    if (ns > tc.last)
        tc.last = ns;
    return tc.last;
}
#else
uint64_t hp__clock_ns(void)
{
    return monotonic_ns();
}
#endif

void hp__timer_init(struct hp__timer *t, enum hp__timer_kind kind)
{
    t->slot = -1;
    t->kind = (uint8_t)kind;
}

void hp__timer_cb_init(struct hp__timer_cb *cb, hp__timer_fn fn, void *arg)
{
    hp__timer_init(&cb->t, HP__TK_CB);
    cb->fn = fn;
    cb->arg = arg;
}

uint64_t hp__timer_due(const struct hp_stack *s, const struct hp__timer *t)
{
    return t->slot >= 0 ? s->heap[t->slot].due : 0;
}

/* Fire t (already out of the heap) by its kind. */
static void fire(struct hp_stack *s, struct hp__timer *t)
{
    switch ((enum hp__timer_kind)t->kind) {
    case HP__TK_CB: {
        struct hp__timer_cb *cb = HP__CONTAINER(t, struct hp__timer_cb, t);
        if (cb->fn)
            cb->fn(s, cb->arg);
        return;
    }
    case HP__TK_NEIGH:
        hp__neigh_timer(s, t);
        return;
    case HP__TK_REASM:
        hp__reasm_timer(s, t);
        return;
    case HP__TK_DAD:
        hp__ndp_dad_timer(s, t);
        return;
    case HP__TK_TCP_RTX:
        hp__tcp_timer_rtx(s, t);
        return;
    case HP__TK_TCP_DACK:
        hp__tcp_timer_dack(s, t);
        return;
    case HP__TK_TCP_MISC:
        hp__tcp_timer_misc(s, t);
        return;
    case HP__TK_NONE:
        return;
    }
}

static void place(struct hp_stack *s, uint32_t i, struct hp__heap_ent e)
{
    s->heap[i] = e;
    e.t->slot = (int32_t)i;
}

/*
 * A 4-ary heap: half the levels of a binary one. What a level costs is
 * the write of the moved timer's slot, in another connection, neighbour
 * entry or fragment queue each time, a cache miss once they outnumber the
 * cache; the four children's entries (64 bytes) are compared within the
 * heap's own array.
 */
#define ARITY 4u

static void sift_up(struct hp_stack *s, uint32_t i)
{
    struct hp__heap_ent e = s->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / ARITY;
        if (s->heap[parent].due <= e.due)
            break;
        place(s, i, s->heap[parent]);
        i = parent;
    }
    place(s, i, e);
}

static void sift_down(struct hp_stack *s, uint32_t i)
{
    struct hp__heap_ent e = s->heap[i];
    uint32_t n = s->nheap;
    for (;;) {
        uint32_t first = ARITY * i + 1;
        if (first >= n)
            break;
        uint32_t end = n - first < ARITY ? n : first + ARITY;
        uint32_t c = first;
        for (uint32_t k = first + 1; k < end; k++)
            if (s->heap[k].due < s->heap[c].due)
                c = k;
        if (e.due <= s->heap[c].due)
            break;
        place(s, i, s->heap[c]);
        i = c;
    }
    place(s, i, e);
}

int hp__timer_arm(struct hp_stack *s, struct hp__timer *t, uint64_t due)
{
    if (hp__timer_armed(t)) {
        uint64_t old = s->heap[t->slot].due;
        s->heap[t->slot].due = due;
        if (due < old)
            sift_up(s, (uint32_t)t->slot);
        else
            sift_down(s, (uint32_t)t->slot);
        return 0;
    }
    if (s->nheap == s->heap_cap) {
        uint32_t cap = s->heap_cap ? s->heap_cap * 2 : HEAP_MIN_CAP;
        struct hp__heap_ent *h = realloc(s->heap, (size_t)cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        s->heap = h;
        s->heap_cap = cap;
    }
    uint32_t i = s->nheap++;
    s->heap[i] = (struct hp__heap_ent){.due = due, .t = t};
    sift_up(s, i);
    return 0;
}

void hp__timer_cancel(struct hp_stack *s, struct hp__timer *t)
{
    if (!hp__timer_armed(t))
        return;
    uint32_t i = (uint32_t)t->slot;
    t->slot = -1;
    uint32_t last = --s->nheap;
    if (i == last)
        return;
    struct hp__heap_ent moved = s->heap[last];
    place(s, i, moved);
    /* The moved timer may belong above or below its new place. */
    if (i > 0 && s->heap[(i - 1) / ARITY].due > moved.due)
        sift_up(s, i);
    else
        sift_down(s, i);
}

int hp__timers_run(struct hp_stack *s)
{
    /* At most as many as were armed on entry: a callback that re-arms its
     * timer for "now" waits for the next poll instead of spinning here. */
    uint32_t budget = s->nheap;
    int ran = 0;
    while (budget-- > 0 && s->nheap > 0 && s->heap[0].due <= s->now) {
        struct hp__timer *t = s->heap[0].t;
        hp__timer_cancel(s, t);
        ran++;
        fire(s, t);
    }
    return ran;
}

void hp__timers_fini(struct hp_stack *s)
{
    /* The timers belong to their owners, who may already be gone: only
     * the heap's own memory is released. */
    free(s->heap);
    s->heap = NULL;
    s->nheap = s->heap_cap = 0;
}
