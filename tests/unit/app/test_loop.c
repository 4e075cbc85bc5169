/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop without a stack: configuration, kernel fds (level, edge, one-shot), timers, wake-ups from another thread, signals, the callback runner, embedding. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/log.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>

#include "hp_test.h"

#define MS 1000000ull

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static struct hp_loop_stats stats_of(const struct hp_loop *l)
{
    struct hp_loop_stats st;
    hp_loop_stats(l, &st);
    return st;
}

HP_TEST(loop_config)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    HP_CHECK_EQ(hp_loop_spin_us(l), HP_LOOP_SPIN_US_DEFAULT);
    HP_CHECK(hp_loop_stack(l) == NULL);
    HP_CHECK(hp_loop_fd(l) >= 0);
    HP_CHECK_EQ(hp_loop_set_spin_us(l, 0), 0);
    HP_CHECK_EQ(hp_loop_spin_us(l), 0u);
    HP_CHECK_EQ(hp_loop_set_spin_us(l, HP_LOOP_SPIN_FOREVER), 0);
    HP_CHECK_EQ(hp_loop_set_spin_us(l, 10000001), -EINVAL);
    HP_CHECK_EQ(hp_loop_spin_us(l), HP_LOOP_SPIN_FOREVER);
    HP_CHECK_EQ(hp_loop_destroy(l), 0);

    struct hp_loop_config c = {.flags = HP_LOOP_F_NO_SPIN, .spin_us = 300};
    l = hp_loop_create(NULL, &c);
    HP_REQUIRE(l != NULL);
    HP_CHECK_EQ(hp_loop_spin_us(l), 0u); /* the flag wins */
    hp_loop_destroy(l);
    c = (struct hp_loop_config){.spin_us = 300};
    l = hp_loop_create(NULL, &c);
    HP_REQUIRE(l != NULL);
    HP_CHECK_EQ(hp_loop_spin_us(l), 300u);
    hp_loop_destroy(l);

    c = (struct hp_loop_config){.flags = 0x80};
    errno = 0;
    HP_CHECK(hp_loop_create(NULL, &c) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    c = (struct hp_loop_config){.spin_us = 20000000};
    HP_CHECK(hp_loop_create(NULL, &c) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(strstr(hp_last_error(), "spin_us") != NULL);
    HP_CHECK_EQ(hp_loop_destroy(NULL), 0);

    struct hp_loop_event ev[4];
    l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    HP_CHECK_EQ(hp_loop_wait(l, NULL, 4, 0), -EINVAL);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 0, 0), -EINVAL);
    HP_CHECK_EQ(hp_loop_wait(NULL, ev, 4, 0), -EINVAL);
    /* Nothing registered: a poll returns nothing, without sleeping. */
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 0), 0);
    struct hp_loop_stats st = stats_of(l);
    HP_CHECK_EQ(st.waits, 1u);
    HP_CHECK_EQ(st.sleeps, 0u);
    hp_loop_destroy(l);
}

HP_TEST(loop_fd_errors)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    int p[2];
    HP_REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    HP_CHECK_EQ(hp_loop_fd_add(l, p[0], HP_EV_IN, NULL), 0);
    HP_CHECK_EQ(hp_loop_fd_add(l, p[0], HP_EV_IN, NULL), -EEXIST);
    HP_CHECK_EQ(hp_loop_fd_add(l, p[1], 0x40000000u, NULL), -EINVAL);
    HP_CHECK_EQ(hp_loop_fd_add(l, -1, HP_EV_IN, NULL), -EINVAL);
    HP_CHECK_EQ(hp_loop_fd_add(l, hp_loop_fd(l), HP_EV_IN, NULL), -EINVAL);
    HP_CHECK_EQ(hp_loop_fd_add(l, 100000, HP_EV_IN, NULL), -EBADF);
    char path[] = "/tmp/hp_loop_XXXXXX";
    int f = mkstemp(path);
    HP_REQUIRE(f >= 0);
    unlink(path);
    HP_CHECK_EQ(hp_loop_fd_add(l, f, HP_EV_IN, NULL), -EPERM);
    close(f);
    HP_CHECK_EQ(hp_loop_fd_mod(l, p[1], HP_EV_OUT, NULL), -ENOENT);
    HP_CHECK_EQ(hp_loop_fd_del(l, p[1]), -ENOENT);
    HP_CHECK_EQ(hp_loop_fd_del(l, p[0]), 0);
    HP_CHECK_EQ(hp_loop_fd_del(l, p[0]), -ENOENT);
    /* Removed: the readable pipe is not reported. */
    HP_CHECK_EQ(write(p[1], "x", 1), 1);
    struct hp_loop_event ev[4];
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0);
    close(p[0]);
    close(p[1]);
    hp_loop_destroy(l);
}

/* Level-triggered: reported as long as the pipe has a byte. */
HP_TEST(loop_fd_level)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    int p[2];
    HP_REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    int tag;
    HP_REQUIRE_EQ(hp_loop_fd_add(l, p[0], HP_EV_IN, &tag), 0);
    struct hp_loop_event ev[4];
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0); /* nothing yet */
    HP_CHECK_EQ(write(p[1], "x", 1), 1);
    for (int round = 0; round < 3; round++) {
        HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
        HP_CHECK_EQ(ev[0].kind, HP_LOOP_FD);
        HP_CHECK_EQ(ev[0].fd, p[0]);
        HP_CHECK(ev[0].user == &tag);
        HP_CHECK_EQ(ev[0].events, HP_EV_IN);
        HP_CHECK(ev[0].timer == NULL);
    }
    char c;
    HP_CHECK_EQ(read(p[0], &c, 1), 1);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0);
    /* The writer goes away: a hang-up, reported without being asked for. */
    close(p[1]);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
    HP_CHECK(ev[0].events & HP_EV_HUP);
    HP_CHECK(stats_of(l).ev_fd >= 4);
    hp_loop_fd_del(l, p[0]);
    close(p[0]);
    hp_loop_destroy(l);
}

/* Edge-triggered: once per write; one-shot: once, until re-armed. */
HP_TEST(loop_fd_edge_and_oneshot)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    int p[2], q[2];
    HP_REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    HP_REQUIRE(pipe2(q, O_NONBLOCK | O_CLOEXEC) == 0);
    HP_REQUIRE_EQ(hp_loop_fd_add(l, p[0], HP_EV_IN | HP_LOOP_ET, NULL), 0);
    HP_REQUIRE_EQ(hp_loop_fd_add(l, q[0], HP_EV_IN | HP_LOOP_ONESHOT, NULL), 0);
    struct hp_loop_event ev[4];
    HP_CHECK_EQ(write(p[1], "a", 1), 1);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
    HP_CHECK_EQ(ev[0].fd, p[0]);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0); /* the byte is still there: no new edge */
    HP_CHECK_EQ(write(p[1], "b", 1), 1);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
    HP_CHECK_EQ(ev[0].fd, p[0]);

    HP_CHECK_EQ(write(q[1], "a", 1), 1);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
    HP_CHECK_EQ(ev[0].fd, q[0]);
    HP_CHECK_EQ(write(q[1], "b", 1), 1);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0); /* disabled after one event */
    int tag;
    HP_CHECK_EQ(hp_loop_fd_mod(l, q[0], HP_EV_IN | HP_LOOP_ONESHOT, &tag), 0);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
    HP_CHECK_EQ(ev[0].fd, q[0]);
    HP_CHECK(ev[0].user == &tag);

    /* Write readiness. */
    HP_CHECK_EQ(hp_loop_fd_add(l, q[1], HP_EV_OUT, NULL), 0);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
    HP_CHECK_EQ(ev[0].fd, q[1]);
    HP_CHECK_EQ(ev[0].events, HP_EV_OUT);
    for (int i = 0; i < 2; i++) {
        close(p[i]);
        close(q[i]);
    }
    hp_loop_destroy(l);
}

/* A program's own epoll set nests in the loop's. */
HP_TEST(loop_fd_nested_epoll)
{
    struct hp_loop *outer = hp_loop_create(NULL, NULL);
    struct hp_loop *inner = hp_loop_create(NULL, NULL);
    HP_REQUIRE(outer && inner);
    int p[2];
    HP_REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    HP_REQUIRE_EQ(hp_loop_fd_add(inner, p[0], HP_EV_IN, NULL), 0);
    /* The inner loop's fd is an epoll set: the outer one watches it. */
    HP_REQUIRE_EQ(hp_loop_fd_add(outer, hp_loop_fd(inner), HP_EV_IN, inner), 0);
    struct hp_loop_event ev[4];
    int64_t t;
    HP_CHECK_EQ(hp_loop_prepare(inner, &t), 0);
    HP_CHECK_EQ(t, -1);
    HP_CHECK_EQ(hp_loop_wait(outer, ev, 4, 20), 0);
    HP_CHECK_EQ(write(p[1], "x", 1), 1);
    HP_REQUIRE_EQ(hp_loop_wait(outer, ev, 4, 5000), 1);
    HP_CHECK(ev[0].user == inner);
    HP_REQUIRE_EQ(hp_loop_wait(inner, ev, 4, 0), 1);
    HP_CHECK_EQ(ev[0].fd, p[0]);
    close(p[0]);
    close(p[1]);
    hp_loop_destroy(outer);
    hp_loop_destroy(inner);
}

HP_TEST(loop_timer_oneshot)
{
    struct hp_loop_config c = {.flags = HP_LOOP_F_NO_SPIN};
    struct hp_loop *l = hp_loop_create(NULL, &c);
    HP_REQUIRE(l != NULL);
    int tag;
    struct hp_loop_timer *t = hp_loop_timer_create(l, &tag);
    HP_REQUIRE(t != NULL);
    HP_CHECK(!hp_loop_timer_active(t));
    struct hp_loop_event ev[4];
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 10), 0); /* created stopped */
    HP_CHECK_EQ(hp_loop_timer_start(t, 5 * MS, 0), 0);
    HP_CHECK(hp_loop_timer_active(t));
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, -1), 1);
    HP_CHECK_EQ(ev[0].kind, HP_LOOP_TIMER);
    HP_CHECK(ev[0].timer == t);
    HP_CHECK(ev[0].user == &tag);
    HP_CHECK_EQ(ev[0].fd, -1);
    HP_CHECK(!hp_loop_timer_active(t));
    /* It slept for it: no spinning with NO_SPIN. */
    HP_CHECK_GE(stats_of(l).sleeps, 1u);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0);
    /* Stopped before it expires: never reported. */
    HP_CHECK_EQ(hp_loop_timer_start(t, 5 * MS, 0), 0);
    HP_CHECK_EQ(hp_loop_timer_stop(t), 0);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 30), 0);
    /* after 0: at the next wait. */
    HP_CHECK_EQ(hp_loop_timer_start(t, 0, 0), 0);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 0), 1);
    HP_CHECK_EQ(hp_loop_timer_start(NULL, 0, 0), -EINVAL);
    HP_CHECK_EQ(hp_loop_timer_stop(NULL), -EINVAL);
    hp_loop_timer_destroy(t);
    hp_loop_timer_destroy(NULL);
    hp_loop_destroy(l);
}

HP_TEST(loop_timer_periodic_and_order)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    int a, b, c;
    struct hp_loop_timer *ta = hp_loop_timer_create(l, &a), *tb = hp_loop_timer_create(l, &b);
    struct hp_loop_timer *tc = hp_loop_timer_create(l, &c);
    HP_REQUIRE(ta && tb && tc);
    /* Due in the order c, a, b, whatever the order of starting. */
    HP_CHECK_EQ(hp_loop_timer_start(tb, 30 * MS, 0), 0);
    HP_CHECK_EQ(hp_loop_timer_start(ta, 20 * MS, 0), 0);
    HP_CHECK_EQ(hp_loop_timer_start(tc, 10 * MS, 0), 0);
    void *order[3];
    int got = 0;
    struct hp_loop_event ev[4];
    while (got < 3) {
        int n = hp_loop_wait(l, ev, 4, 5000);
        HP_REQUIRE(n > 0);
        for (int i = 0; i < n && got < 3; i++)
            order[got++] = ev[i].user;
    }
    HP_CHECK(order[0] == &c);
    HP_CHECK(order[1] == &a);
    HP_CHECK(order[2] == &b);
    /* Periodic: goes on until stopped, and stays active. */
    HP_CHECK_EQ(hp_loop_timer_start(ta, 1 * MS, 2 * MS), 0);
    for (int i = 0; i < 5; i++) {
        HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 5000), 1);
        HP_CHECK(ev[0].timer == ta);
        HP_CHECK(hp_loop_timer_active(ta));
    }
    /* A late wait gets one expiry, not a burst of the missed ones (five
     * periods of 40 ms missed; the next is 35 ms away). */
    HP_CHECK_EQ(hp_loop_timer_start(ta, 40 * MS, 40 * MS), 0);
    sleep_ms(205);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 0), 1);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 0), 0);
    HP_CHECK_EQ(hp_loop_timer_stop(ta), 0);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 20), 0);
    HP_CHECK_EQ(stats_of(l).ev_timer, 9u);
    /* Destroying the loop frees the timers still there. */
    hp_loop_timer_destroy(tb);
    hp_loop_destroy(l);
}

/* Many timers in random order come out sorted. */
HP_TEST(loop_timer_heap)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    enum { N = 200 };
    struct hp_loop_timer *t[N];
    uint64_t seed = hp_test_seed();
    for (uintptr_t i = 0; i < N; i++) {
        t[i] = hp_loop_timer_create(l, (void *)i);
        HP_REQUIRE(t[i] != NULL);
        HP_CHECK_EQ(hp_loop_timer_start(t[i], (hp_test_rand(&seed) % 1000) * 1000, 0), 0);
    }
    /* Some restarted and some stopped, to exercise removal from the middle. */
    for (int i = 0; i < N; i += 7)
        hp_loop_timer_start(t[i], (hp_test_rand(&seed) % 1000) * 1000, 0);
    for (int i = 3; i < N; i += 11)
        hp_loop_timer_stop(t[i]);
    sleep_ms(2);
    struct hp_loop_event ev[64];
    int seen = 0, expect = 0;
    for (int i = 0; i < N; i++)
        expect += hp_loop_timer_active(t[i]);
    while (seen < expect) {
        int n = hp_loop_wait(l, ev, 64, 5000);
        HP_REQUIRE(n > 0);
        seen += n;
    }
    HP_CHECK_EQ(seen, expect);
    for (int i = 0; i < N; i++)
        HP_CHECK(!hp_loop_timer_active(t[i]));
    hp_loop_destroy(l);
}

struct waker {
    struct hp_loop *l;
    unsigned delay_ms;
    int n;
};

static void *wake_later(void *arg)
{
    struct waker *w = arg;
    for (int i = 0; i < w->n; i++) {
        sleep_ms(w->delay_ms);
        hp_loop_wake(w->l);
    }
    return NULL;
}

HP_TEST(loop_wake_from_another_thread)
{
    struct hp_loop_config c = {.flags = HP_LOOP_F_NO_SPIN};
    struct hp_loop *l = hp_loop_create(NULL, &c);
    HP_REQUIRE(l != NULL);
    struct hp_loop_event ev[4];
    /* A wake-up before the wait: returned at once, no sleep. */
    hp_loop_wake(l);
    hp_loop_wake(l);
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, -1), 1);
    HP_CHECK_EQ(ev[0].kind, HP_LOOP_WAKE);
    HP_CHECK(ev[0].user == NULL);
    HP_CHECK_EQ(stats_of(l).sleeps, 0u);
    HP_CHECK_EQ(stats_of(l).wake_signals, 0u); /* the loop was awake */
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 0), 0); /* two calls, one event */

    /* From another thread while the loop sleeps without a timeout. */
    struct waker w = {.l = l, .delay_ms = 20, .n = 3};
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, wake_later, &w) == 0);
    for (int i = 0; i < 3; i++) {
        HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, -1), 1);
        HP_CHECK_EQ(ev[0].kind, HP_LOOP_WAKE);
    }
    pthread_join(th, NULL);
    struct hp_loop_stats st = stats_of(l);
    HP_CHECK_EQ(st.wake_calls, 5u);
    HP_CHECK_EQ(st.ev_wake, 4u);
    HP_CHECK_LE(st.wake_signals, 3u);
    HP_CHECK_GE(st.sleeps, 1u);
    hp_loop_destroy(l);
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

struct killer {
    pthread_t target;
};

static void *kill_later(void *arg)
{
    struct killer *k = arg;
    sleep_ms(20);
    pthread_kill(k->target, SIGUSR1);
    return NULL;
}

/* A signal blocked outside the sleep and let in by pwait's mask: -EINTR. */
HP_TEST(loop_pwait_signal)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t block, during;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &during);
    sigdelset(&during, SIGUSR1);
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    struct killer k = {.target = pthread_self()};
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, kill_later, &k) == 0);
    struct hp_loop_event ev[4];
    HP_CHECK_EQ(hp_loop_pwait(l, ev, 4, 10000 * (int64_t)MS, &during), -EINTR);
    HP_CHECK(got_usr1);
    pthread_join(th, NULL);
    hp_loop_destroy(l);
    pthread_sigmask(SIG_UNBLOCK, &block, NULL);
}

struct runctx {
    struct hp_loop_timer *a, *b;
    int a_seen, b_seen, fd_seen, wakes;
    int p[2];
};

static void run_cb(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct runctx *r = arg;
    if (ev->kind == HP_LOOP_TIMER && ev->timer == r->a) {
        r->a_seen++;
        /* b expired in the same batch: destroying it here means its
         * event is not handed out. */
        hp_loop_timer_destroy(r->b);
        r->b = NULL;
        /* The fd too. */
        hp_loop_fd_del(l, r->p[0]);
    } else if (ev->kind == HP_LOOP_TIMER) {
        r->b_seen++;
    } else if (ev->kind == HP_LOOP_FD) {
        r->fd_seen++;
    } else if (ev->kind == HP_LOOP_WAKE) {
        r->wakes++;
        hp_loop_stop(l);
    }
}

HP_TEST(loop_run_and_stop)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    struct runctx r;
    memset(&r, 0, sizeof r);
    HP_REQUIRE(pipe2(r.p, O_NONBLOCK | O_CLOEXEC) == 0);
    r.a = hp_loop_timer_create(l, NULL);
    r.b = hp_loop_timer_create(l, NULL);
    HP_REQUIRE(r.a && r.b);
    /* Both expired by the time the loop looks; a was due first. */
    hp_loop_timer_start(r.a, 0, 0);
    hp_loop_timer_start(r.b, 1000, 0);
    HP_REQUIRE_EQ(hp_loop_fd_add(l, r.p[0], HP_EV_IN, NULL), 0);
    HP_CHECK_EQ(write(r.p[1], "x", 1), 1);
    sleep_ms(1);
    struct waker w = {.l = l, .delay_ms = 30, .n = 1};
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, wake_later, &w) == 0);
    HP_CHECK_EQ(hp_loop_run(l, run_cb, &r), 0);
    pthread_join(th, NULL);
    HP_CHECK_EQ(r.a_seen, 1);
    HP_CHECK_EQ(r.b_seen, 0);
    HP_CHECK_EQ(r.fd_seen, 0);
    HP_CHECK_EQ(r.wakes, 1);
    /* A stop before run: the next run returns at once. */
    hp_loop_stop(l);
    HP_CHECK_EQ(hp_loop_run(l, run_cb, &r), 0);
    HP_CHECK_EQ(r.wakes, 1);
    HP_CHECK_EQ(hp_loop_run(l, NULL, &r), -EINVAL);
    close(r.p[0]);
    close(r.p[1]);
    hp_loop_destroy(l);
}

/* Embedding: prepare, sleep on the loop's fd elsewhere, then wait(0). */
HP_TEST(loop_embedding)
{
    struct hp_loop *l = hp_loop_create(NULL, NULL);
    HP_REQUIRE(l != NULL);
    int64_t t = 0;
    struct hp_loop_timer *tm = hp_loop_timer_create(l, NULL);
    HP_REQUIRE(tm != NULL);
    hp_loop_timer_start(tm, 10000 * MS, 0); /* bounds the sleep; never expires here */
    HP_CHECK_EQ(hp_loop_prepare(l, &t), 0);
    HP_CHECK(t > 0 && t <= (int64_t)(10000 * MS));
    struct pollfd pf = {.fd = hp_loop_fd(l), .events = POLLIN};
    HP_CHECK_EQ(poll(&pf, 1, 0), 0); /* nothing yet */
    /* A wake-up makes the fd readable for the outside sleeper. */
    struct waker w = {.l = l, .delay_ms = 5, .n = 1};
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, wake_later, &w) == 0);
    HP_CHECK_EQ(poll(&pf, 1, 5000), 1);
    pthread_join(th, NULL);
    struct hp_loop_event ev[4];
    HP_REQUIRE_EQ(hp_loop_wait(l, ev, 4, 0), 1);
    HP_CHECK_EQ(ev[0].kind, HP_LOOP_WAKE);
    HP_CHECK_EQ(poll(&pf, 1, 0), 0); /* consumed */
    /* Work waiting: prepare says so and asks for no sleep. */
    hp_loop_wake(l);
    HP_CHECK_GT(hp_loop_prepare(l, &t), 0);
    HP_CHECK_EQ(t, 0);
    HP_CHECK_EQ(hp_loop_wait(l, ev, 4, 0), 1);
    HP_CHECK_EQ(hp_loop_prepare(NULL, &t), -EINVAL);
    hp_loop_destroy(l);
}
