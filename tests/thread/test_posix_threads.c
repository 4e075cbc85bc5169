/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer from several threads (under TSan): one asleep in epoll_wait is woken when another thread's call takes in its data; sockets made and closed from four threads at once. */
#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "hp_test.h"
#include "px_fixture.h"

static atomic_int send_now;
static struct hp_tcp_sock *late_peer;

/* B's side, run under the layer's lock: send to the sleeper once asked. */
static void peer_sends(void)
{
    if (atomic_exchange(&send_now, 0) && late_peer)
        hp_tcp_send(late_peer, "w", 1);
}

struct sleeper {
    int ep;
    _Atomic int n; /* read by the main thread while the sleeper may write it */
    uint64_t tag;
};

static void *sleep_in_epoll(void *arg)
{
    struct sleeper *s = arg;
    struct epoll_event ev[2];
    int n = hp__px_epoll_pwait2(s->ep, ev, 2, NULL, NULL);
    s->tag = n > 0 ? ev[0].data.u64 : 0;
    atomic_store(&s->n, n);
    return NULL;
}

HP_TEST(px_threads_wake_a_sleeper)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p1, *p2;
    int c1 = fx_connected(4, SOCK_NONBLOCK, 7800, &p1);
    int c2 = fx_connected(4, 0, 7801, &p2);
    HP_REQUIRE(c1 >= 0 && c2 >= 0);
    struct sleeper s = {.ep = hp__px_epoll_create1(0), .n = 0};
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = 77};
    HP_REQUIRE(hp__px_epoll_ctl(s.ep, EPOLL_CTL_ADD, c1, &e) == 0);
    late_peer = p1;
    fx.peer_hook = peer_sends;
    pthread_t t;
    HP_REQUIRE(pthread_create(&t, NULL, sleep_in_epoll, &s) == 0);
    usleep(20000);
    /* This thread's calls drive the stack (and B, which now sends to c1):
     * the frame for c1 is taken in here, and the sleeper must be woken. */
    atomic_store(&send_now, 1);
    int one = 1;
    HP_CHECK_EQ(hp__px_setsockopt(c2, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
    for (int i = 0; i < 50 && atomic_load(&s.n) == 0; i++) {
        char b;
        HP_CHECK_EQ(hp__px_sendto(c2, "x", 1, 0, NULL, 0), 1);
        HP_CHECK_EQ(fx_peer_read(p2, &b, 1), 1);
    }
    pthread_join(t, NULL);
    HP_CHECK_EQ(atomic_load(&s.n), 1);
    HP_CHECK_EQ(s.tag, 77u);
    fx.peer_hook = NULL;
    hp_tcp_close(p1);
    hp_tcp_close(p2);
    fx_down();
}

static void *churn(void *arg)
{
    (void)arg;
    long bad = 0;
    for (int i = 0; i < 300; i++) {
        int fd = hp__px_socket(i & 1 ? AF_INET6 : AF_INET, (i & 2) ? SOCK_DGRAM : SOCK_STREAM, 0);
        if (fd < 0) {
            bad++;
            continue;
        }
        int d = hp__px_dup(fd);
        bad += hp__px_sock(fd) == NULL;
        bad += hp__px_close(fd) != 0;
        bad += d < 0 || hp__px_close(d) != 0;
    }
    return (void *)bad;
}

HP_TEST(px_threads_fd_churn)
{
    HP_REQUIRE(fx_up() == 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        HP_REQUIRE(pthread_create(&t[i], NULL, churn, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        HP_CHECK_EQ((long)r, 0);
    }
    HP_CHECK(hp__px.socks == NULL);
    fx_down();
}
