/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack's timers: a growable binary min-heap of timer pointers ordered by due time. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define HEAP_MIN_CAP 64u

uint64_t hp__clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hp__timer_init(struct hp__timer *t, hp__timer_fn fn, void *arg)
{
    t->due = 0;
    t->fn = fn;
    t->arg = arg;
    t->slot = -1;
}

static void place(struct hp_stack *s, uint32_t i, struct hp__timer *t)
{
    s->heap[i] = t;
    t->slot = (int32_t)i;
}

static void sift_up(struct hp_stack *s, uint32_t i)
{
    struct hp__timer *t = s->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (s->heap[parent]->due <= t->due)
            break;
        place(s, i, s->heap[parent]);
        i = parent;
    }
    place(s, i, t);
}

static void sift_down(struct hp_stack *s, uint32_t i)
{
    struct hp__timer *t = s->heap[i];
    uint32_t n = s->nheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && s->heap[c + 1]->due < s->heap[c]->due)
            c++;
        if (t->due <= s->heap[c]->due)
            break;
        place(s, i, s->heap[c]);
        i = c;
    }
    place(s, i, t);
}

int hp__timer_arm(struct hp_stack *s, struct hp__timer *t, uint64_t due)
{
    if (hp__timer_armed(t)) {
        uint64_t old = t->due;
        t->due = due;
        if (due < old)
            sift_up(s, (uint32_t)t->slot);
        else
            sift_down(s, (uint32_t)t->slot);
        return 0;
    }
    if (s->nheap == s->heap_cap) {
        uint32_t cap = s->heap_cap ? s->heap_cap * 2 : HEAP_MIN_CAP;
        struct hp__timer **h = realloc(s->heap, (size_t)cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        s->heap = h;
        s->heap_cap = cap;
    }
    t->due = due;
    uint32_t i = s->nheap++;
    s->heap[i] = t;
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
    struct hp__timer *moved = s->heap[last];
    place(s, i, moved);
    /* The moved timer may belong above or below its new place. */
    if (i > 0 && s->heap[(i - 1) / 2]->due > moved->due)
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
    while (budget-- > 0 && s->nheap > 0 && s->heap[0]->due <= s->now) {
        struct hp__timer *t = s->heap[0];
        hp__timer_cancel(s, t);
        ran++;
        if (t->fn)
            t->fn(s, t->arg);
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
