/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop across threads, under TSan: wake-ups and stops from another thread, and a sleeping stack woken by frames a stack on another thread sends over a mem link. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "hp_test.h"

#define WAKES 20000

struct wake_run {
    struct hp_loop *l;
    _Atomic int done;
};

static void *waker(void *arg)
{
    struct wake_run *w = arg;
    for (int i = 0; i < WAKES; i++) {
        hp_loop_wake(w->l);
        if (i % 1000 == 0)
            usleep(200); /* let the loop fall asleep now and then */
    }
    atomic_store_explicit(&w->done, 1, memory_order_relaxed);
    hp_loop_wake(w->l);
    return NULL;
}

/* Every wake-up is seen (coalesced), the last one after `done`, whether
 * the loop was asleep, spinning or handing out events. */
HP_TEST(loop_wake_hammer)
{
    for (int pass = 0; pass < 2; pass++) {
        struct hp_loop_config c = {.flags = pass ? 0 : HP_LOOP_F_NO_SPIN};
        struct wake_run w = {.l = hp_loop_create(NULL, &c)};
        HP_REQUIRE(w.l != NULL);
        pthread_t th;
        HP_REQUIRE(pthread_create(&th, NULL, waker, &w) == 0);
        uint64_t events = 0;
        struct hp_loop_event ev[4];
        for (;;) {
            int n = hp_loop_wait(w.l, ev, 4, -1);
            HP_REQUIRE_EQ(n, 1);
            HP_CHECK_EQ(ev[0].kind, HP_LOOP_WAKE);
            events++;
            if (atomic_load_explicit(&w.done, memory_order_relaxed))
                break;
        }
        pthread_join(th, NULL);
        struct hp_loop_stats st;
        hp_loop_stats(w.l, &st);
        HP_CHECK_EQ(st.wake_calls, (uint64_t)WAKES + 1);
        HP_CHECK_GE(events, 1u);
        HP_CHECK_LE(events, (uint64_t)WAKES + 1);
        /* A signal per sleep at most (or per sleep given up for a wake-up
         * that came while the loop was arming). */
        HP_CHECK_LE(st.wake_signals, st.sleeps + st.not_slept);
        hp_loop_destroy(w.l);
    }
}

static void *stopper(void *arg)
{
    usleep(20000);
    hp_loop_stop(arg);
    return NULL;
}

static void count_cb(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    (void)l;
    (void)ev;
    (*(int *)arg)++;
}

HP_TEST(loop_stop_from_another_thread)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, stopper, l) == 0);
    int seen = 0;
    HP_CHECK_EQ(hp_loop_run(l, count_cb, &seen), 0);
    pthread_join(th, NULL);
    HP_CHECK_EQ(seen, 1); /* the stop's wake-up */
    hp_loop_destroy(l);
}

/* ---- two stacks on two threads over a mem link -------------------------- */

#define DGRAMS 300

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};

struct side {
    struct hp_link *link;
    struct hp_stack *s;
    struct hp_loop *l;
    struct hp_udp_sock *u;
    int tag;
};

struct duo {
    struct side x[2];
    _Atomic int received, bad, sender_done;
    struct hp_loop_stats st_rx;
};

static int side_up(struct side *d, struct hp_link *link, int i)
{
    struct hp_stack_config c = {.flags = HP_STACK_F_NO_DAD};
    d->link = link;
    d->s = hp_stack_create(&c);
    if (!d->s)
        return -1;
    int ifx = hp_stack_add_iface(d->s, link);
    if (ifx < 0 || hp_stack_add_addr(d->s, ifx, 4, IP4[i], 24) < 0)
        return -1;
    struct hp_loop_config lc = {.flags = i ? HP_LOOP_F_NO_SPIN : 0};
    d->l = hp_loop_create(d->s, &lc);
    d->u = hp_udp_open(d->s, 4, &d->tag);
    struct hp_sockaddr any = {.family = 4, .port = 7};
    return d->l && d->u && hp_udp_bind(d->u, &any) == 0 ? 0 : -1;
}

static void side_down(struct side *d)
{
    hp_udp_close(d->u);
    hp_loop_destroy(d->l);
    hp_stack_destroy(d->s);
    hp_pool_thread_flush(hp_link_pool(d->link));
}

/* The receiving side: sleeps between datagrams (no spin). */
static void *rx_main(void *arg)
{
    struct duo *d = arg;
    struct side *b = &d->x[1];
    struct hp_loop_event ev[16];
    uint32_t next = 0;
    while (next < DGRAMS) {
        int n = hp_loop_wait(b->l, ev, 16, 2000);
        if (n == 0 && atomic_load(&d->sender_done))
            break; /* lost: the check below fails */
        for (int i = 0; i < n; i++) {
            if (ev[i].kind != HP_LOOP_SOCK || ev[i].user != &b->tag)
                continue;
            uint32_t v;
            while (hp_udp_recvfrom(b->u, &v, sizeof v, NULL) == (int)sizeof v) {
                if (v != next)
                    atomic_fetch_add(&d->bad, 1);
                next = v + 1;
                atomic_fetch_add(&d->received, 1);
            }
        }
    }
    hp_loop_wait(b->l, ev, 16, 0);
    hp_loop_stats(b->l, &d->st_rx);
    side_down(b);
    hp_thread_exit();
    return NULL;
}

/* The sending side: bursts with pauses, so that the receiver sleeps and is
 * woken by the frames themselves. */
static void *tx_main(void *arg)
{
    struct duo *d = arg;
    struct side *a = &d->x[0];
    struct hp_sockaddr to = {.family = 4, .port = 7};
    memcpy(to.addr, IP4[1], 4);
    struct hp_loop_event ev[16];
    for (uint32_t v = 0; v < DGRAMS; v++) {
        while (hp_udp_sendto(a->u, &v, sizeof v, &to) == -EAGAIN)
            hp_loop_wait(a->l, ev, 16, 1);
        hp_loop_wait(a->l, ev, 16, 0); /* flush */
        if (v % 10 == 9)
            usleep(2000);
    }
    /* Answer the receiver's last ARP or so, then leave. */
    for (int i = 0; i < 20 && atomic_load(&d->received) < DGRAMS; i++)
        hp_loop_wait(a->l, ev, 16, 10);
    atomic_store(&d->sender_done, 1);
    side_down(a);
    hp_thread_exit();
    return NULL;
}

HP_TEST(loop_sleeper_woken_by_frames_from_another_thread)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct duo *d = calloc(1, sizeof *d);
    HP_REQUIRE(d != NULL);
    HP_REQUIRE_EQ(side_up(&d->x[0], e[0], 0), 0);
    HP_REQUIRE_EQ(side_up(&d->x[1], e[1], 1), 0);
    pthread_t rx, tx;
    HP_REQUIRE(pthread_create(&rx, NULL, rx_main, d) == 0);
    HP_REQUIRE(pthread_create(&tx, NULL, tx_main, d) == 0);
    pthread_join(tx, NULL);
    pthread_join(rx, NULL);
    HP_CHECK_EQ(atomic_load(&d->received), DGRAMS);
    HP_CHECK_EQ(atomic_load(&d->bad), 0);
    HP_CHECK_GE(d->st_rx.sleeps, 1u);
    struct hp_link_stats ls;
    hp_link_stats(e[0], &ls);
    HP_CHECK_GE(ls.wakeups, 1u);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
    free(d);
}
