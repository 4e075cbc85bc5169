/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop driving stacks over a mem link: socket events, the stack's sleep API, the spin knob, sleeping until a frame comes from another thread, stack timers ending a sleep. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/loop.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

#include "hp_test.h"

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};

struct pair {
    struct hp_link *e[2];
    struct hp_stack *s[2];
    struct hp_loop *l[2];
};

static int pair_up(struct pair *p, const struct hp_loop_config *lc)
{
    memset(p, 0, sizeof *p);
    if (hp_link_mem_pair(NULL, p->e) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config c = {.name = i ? "b" : "a", .flags = HP_STACK_F_NO_DAD};
        p->s[i] = hp_stack_create(&c);
        if (!p->s[i])
            return -1;
        int ifx = hp_stack_add_iface(p->s[i], p->e[i]);
        if (ifx < 0 || hp_stack_add_addr(p->s[i], ifx, 4, IP4[i], 24) < 0)
            return -1;
        p->l[i] = hp_loop_create(p->s[i], lc);
        if (!p->l[i])
            return -1;
    }
    return 0;
}

static void pair_down(struct pair *p)
{
    for (int i = 0; i < 2; i++) {
        hp_loop_destroy(p->l[i]);
        hp_stack_destroy(p->s[i]);
    }
    for (int i = 0; i < 2; i++)
        hp_link_close(p->e[i]);
}

static struct hp_sockaddr sa4(int side, uint16_t port)
{
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = 4;
    a.port = port;
    if (side >= 0)
        memcpy(a.addr, IP4[side], 4);
    return a;
}

static struct hp_loop_stats stats_of(const struct hp_loop *l)
{
    struct hp_loop_stats st;
    hp_loop_stats(l, &st);
    return st;
}

/* Turn both loops (without sleeping) until side `side` reports an event of
 * a socket whose user is `user` with all of `bits`; other events are kept
 * in *seen_other (OR of their bits). */
static bool pump_until(struct pair *p, int side, void *user, uint32_t bits)
{
    struct hp_loop_event ev[16];
    for (int round = 0; round < 20000; round++) {
        for (int i = 0; i < 2; i++) {
            int n = hp_loop_wait(p->l[i], ev, 16, 0);
            for (int k = 0; i == side && k < n; k++)
                if (ev[k].kind == HP_LOOP_SOCK && ev[k].user == user &&
                    (ev[k].events & bits) == bits)
                    return true;
        }
    }
    return false;
}

HP_TEST(stack_sleep_api)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, NULL), 0);
    int fds[4];
    HP_CHECK_EQ(hp_stack_fds(p.s[0], fds, 4), 1);
    HP_CHECK_EQ(fds[0], hp_link_fd(p.e[0]));
    HP_CHECK_EQ(hp_stack_fds(p.s[0], NULL, 0), 1);
    /* Let the gratuitous ARPs go and be taken. */
    hp_stack_poll(p.s[0]);
    hp_stack_poll(p.s[1]);
    HP_CHECK(!hp_stack_tx_pending(p.s[0]));
    /* A ping to an unresolved neighbour: an ARP request waits in the
     * transmit burst until the next poll. */
    HP_CHECK_EQ(hp_stack_ping(p.s[0], 4, IP4[1], 1, 1, 8), 0);
    HP_CHECK(hp_stack_tx_pending(p.s[0]));
    int64_t wake = 0;
    HP_CHECK_GT(hp_stack_prepare_sleep(p.s[0], &wake), 0);
    HP_CHECK_EQ(wake, 0);
    hp_stack_poll(p.s[0]);
    HP_CHECK(!hp_stack_tx_pending(p.s[0]));
    /* Armed; the stack's next timer bounds the sleep. */
    int64_t next = hp_stack_next_timer_ns(p.s[0]);
    HP_CHECK_GT(next, 0);
    HP_CHECK_EQ(hp_stack_prepare_sleep(p.s[0], &wake), 0);
    HP_CHECK_GT(wake, 0);
    HP_CHECK_LE(wake, next);
    /* The other side has the request waiting: no sleep for it. */
    HP_CHECK_GT(hp_stack_prepare_sleep(p.s[1], &wake), 0);
    HP_CHECK_EQ(hp_stack_prepare_sleep(NULL, &wake), -EINVAL);
    pair_down(&p);
}

HP_TEST(loop_udp_events)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, NULL), 0);
    int ua, ub;
    struct hp_udp_sock *a = hp_udp_open(p.s[0], 4, &ua), *b = hp_udp_open(p.s[1], 4, &ub);
    HP_REQUIRE(a && b);
    struct hp_sockaddr any = sa4(-1, 9000), to = sa4(1, 9000);
    HP_REQUIRE_EQ(hp_udp_bind(b, &any), 0);
    HP_CHECK_EQ(hp_udp_sendto(a, "hello", 5, &to), 5);
    HP_REQUIRE(pump_until(&p, 1, &ub, HP_EV_IN));
    char buf[16];
    struct hp_sockaddr from;
    HP_CHECK_EQ(hp_udp_recvfrom(b, buf, sizeof buf, &from), 5);
    HP_CHECK_MEMEQ(buf, "hello", 5);
    HP_CHECK_GE(stats_of(p.l[1]).ev_sock, 1u);
    hp_udp_close(a);
    hp_udp_close(b);
    pair_down(&p);
}

HP_TEST(loop_tcp_events)
{
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, NULL), 0);
    int lis_tag, cli_tag, conn_tag;
    struct hp_tcp_sock *lis = hp_tcp_open(p.s[1], 4, &lis_tag);
    struct hp_tcp_sock *cli = hp_tcp_open(p.s[0], 4, &cli_tag);
    HP_REQUIRE(lis && cli);
    struct hp_sockaddr any = sa4(-1, 80), to = sa4(1, 80);
    HP_REQUIRE_EQ(hp_tcp_bind(lis, &any), 0);
    HP_REQUIRE_EQ(hp_tcp_listen(lis, 8), 0);
    HP_CHECK_EQ(hp_tcp_connect(cli, &to), -EINPROGRESS);
    HP_REQUIRE(pump_until(&p, 0, &cli_tag, HP_EV_OUT)); /* connected */
    struct hp_tcp_sock *conn = hp_tcp_accept(lis, &conn_tag, NULL);
    if (!conn) {
        HP_REQUIRE(pump_until(&p, 1, &lis_tag, HP_EV_IN));
        conn = hp_tcp_accept(lis, &conn_tag, NULL);
    }
    HP_REQUIRE(conn != NULL);
    HP_CHECK_EQ(hp_tcp_send(cli, "ping", 4), 4);
    HP_REQUIRE(pump_until(&p, 1, &conn_tag, HP_EV_IN));
    char buf[8];
    HP_CHECK_EQ(hp_tcp_recv(conn, buf, sizeof buf), 4);
    HP_CHECK_MEMEQ(buf, "ping", 4);
    HP_CHECK_EQ(hp_tcp_send(conn, "pong", 4), 4);
    HP_REQUIRE(pump_until(&p, 0, &cli_tag, HP_EV_IN));
    HP_CHECK_EQ(hp_tcp_recv(cli, buf, sizeof buf), 4);
    HP_CHECK_EQ(hp_tcp_shutdown(cli, HP_TCP_SHUT_WR), 0);
    HP_REQUIRE(pump_until(&p, 1, &conn_tag, HP_EV_IN));
    HP_CHECK_EQ(hp_tcp_recv(conn, buf, sizeof buf), 0); /* the FIN */
    hp_tcp_close(conn);
    hp_tcp_close(cli);
    hp_tcp_close(lis);
    pair_down(&p);
}

/* The knob: never spin sleeps at the first idle poll; forever never sleeps. */
HP_TEST(loop_spin_knob)
{
    struct hp_loop_config c = {.flags = HP_LOOP_F_NO_SPIN};
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, &c), 0);
    struct hp_loop_event ev[8];
    /* The gratuitous ARPs cross first. */
    while (hp_loop_wait(p.l[0], ev, 8, 0) > 0 || hp_loop_wait(p.l[1], ev, 8, 0) > 0)
        ;
    hp_stack_poll(p.s[0]);
    hp_stack_poll(p.s[1]);
    struct hp_loop_stats before = stats_of(p.l[0]);
    HP_CHECK_EQ(hp_loop_wait(p.l[0], ev, 8, 30), 0);
    struct hp_loop_stats after = stats_of(p.l[0]);
    HP_CHECK_GE(after.sleeps - before.sleeps, 1u);
    /* A sleep per idle poll, or close to it: no spinning in between. */
    HP_CHECK_LE(after.idle_polls - before.idle_polls, 2 * (after.sleeps - before.sleeps) + 2);

    HP_CHECK_EQ(hp_loop_set_spin_us(p.l[0], HP_LOOP_SPIN_FOREVER), 0);
    before = stats_of(p.l[0]);
    HP_CHECK_EQ(hp_loop_wait(p.l[0], ev, 8, 30), 0);
    after = stats_of(p.l[0]);
    HP_CHECK_EQ(after.sleeps, before.sleeps);
    HP_CHECK_GT(after.idle_polls - before.idle_polls, 2u);

    /* A spin longer than the wait: no sleep either. */
    HP_CHECK_EQ(hp_loop_set_spin_us(p.l[0], 10000000), 0);
    before = stats_of(p.l[0]);
    HP_CHECK_EQ(hp_loop_wait(p.l[0], ev, 8, 30), 0);
    HP_CHECK_EQ(stats_of(p.l[0]).sleeps, before.sleeps);

    /* The default: a short spin, then sleeps. */
    HP_CHECK_EQ(hp_loop_set_spin_us(p.l[0], HP_LOOP_SPIN_US_DEFAULT), 0);
    before = stats_of(p.l[0]);
    HP_CHECK_EQ(hp_loop_wait(p.l[0], ev, 8, 300), 0);
    HP_CHECK_GE(stats_of(p.l[0]).sleeps - before.sleeps, 1u);
    pair_down(&p);
}

struct sleeper {
    struct pair *p;
    struct hp_udp_sock *u;
    int tag;
    char got[32];
    int len;
    struct hp_loop_stats st;
};

/* Side b's thread: wait without a timeout until the datagram is there. */
static void *sleeper_main(void *arg)
{
    struct sleeper *z = arg;
    struct hp_loop_event ev[8];
    while (z->len <= 0) {
        int n = hp_loop_wait(z->p->l[1], ev, 8, -1);
        for (int i = 0; i < n; i++)
            if (ev[i].kind == HP_LOOP_SOCK && ev[i].user == &z->tag && (ev[i].events & HP_EV_IN))
                __atomic_store_n(&z->len, hp_udp_recvfrom(z->u, z->got, sizeof z->got, NULL),
                                 __ATOMIC_RELEASE);
    }
    /* The stack's last words (nothing) go out before the thread leaves. */
    hp_loop_wait(z->p->l[1], ev, 8, 0);
    hp_loop_stats(z->p->l[1], &z->st);
    hp_pool_thread_flush(hp_link_pool(z->p->e[1]));
    hp_thread_exit();
    return NULL;
}

static void sleeping_end_woken(uint32_t spin_us, unsigned flags)
{
    struct hp_loop_config c = {.spin_us = spin_us, .flags = flags};
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, &c), 0);
    struct sleeper z = {.p = &p};
    z.u = hp_udp_open(p.s[1], 4, &z.tag);
    struct hp_udp_sock *a = hp_udp_open(p.s[0], 4, NULL);
    HP_REQUIRE(z.u && a);
    struct hp_sockaddr any = sa4(-1, 7), to = sa4(1, 7);
    HP_REQUIRE_EQ(hp_udp_bind(z.u, &any), 0);
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, sleeper_main, &z) == 0);
    usleep(50000); /* b is asleep by now: nothing has been sent */
    HP_CHECK_EQ(hp_udp_sendto(a, "wake up", 7, &to), 7);
    /* a's loop resolves b (b's thread answers the ARP request, woken by
     * it) and sends; it runs until b's thread has the datagram. */
    struct hp_loop_event ev[8];
    for (int i = 0; i < 2000; i++) {
        hp_loop_wait(p.l[0], ev, 8, 5);
        if (__atomic_load_n(&z.len, __ATOMIC_ACQUIRE) > 0)
            break;
    }
    pthread_join(th, NULL);
    HP_CHECK_EQ(z.len, 7);
    HP_CHECK_MEMEQ(z.got, "wake up", 7);
    HP_CHECK_GE(z.st.sleeps, 1u);
    HP_CHECK_GE(z.st.link_wakes, 1u); /* the mem link's eventfd ended a sleep */
    /* a signalled b's eventfd: the ARP request found b asleep. */
    struct hp_link_stats ls;
    hp_link_stats(p.e[0], &ls);
    HP_CHECK_GE(ls.wakeups, 1u);
    hp_udp_close(a);
    hp_udp_close(z.u);
    pair_down(&p);
}

HP_TEST(loop_sleeps_until_frame_no_spin)
{
    sleeping_end_woken(0, HP_LOOP_F_NO_SPIN);
}

HP_TEST(loop_sleeps_until_frame_spin)
{
    sleeping_end_woken(200, 0);
}

/* With nothing but the stack's own timer (a SYN to retransmit), the loop
 * sleeps and wakes for that timer. */
HP_TEST(loop_wakes_for_stack_timer)
{
    struct hp_loop_config c = {.flags = HP_LOOP_F_NO_SPIN};
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, &c), 0);
    struct hp_tcp_config tc = {.rto_initial_ms = 50, .rto_min_ms = 50};
    HP_REQUIRE_EQ(hp_tcp_configure(p.s[0], &tc), 0);
    struct hp_tcp_sock *t = hp_tcp_open(p.s[0], 4, NULL);
    HP_REQUIRE(t != NULL);
    /* An address on the prefix nobody answers for: ARP, then nothing. */
    struct hp_sockaddr to = sa4(1, 80);
    to.addr[3] = 77;
    HP_CHECK_EQ(hp_tcp_connect(t, &to), -EINPROGRESS);
    struct hp_loop_event ev[8];
    for (int i = 0; i < 50 && hp_stack_counter(p.s[0], HP_CTR_ARP_OUT_REQUESTS) < 2; i++)
        hp_loop_wait(p.l[0], ev, 8, 100);
    /* The ARP retransmission (1 s) is a stack timer; no frame came. */
    HP_CHECK_GE(hp_stack_counter(p.s[0], HP_CTR_ARP_OUT_REQUESTS), 2u);
    HP_CHECK_GE(stats_of(p.l[0]).sleeps, 2u);
    hp_tcp_abort(t);
    pair_down(&p);
}

struct piper {
    int fd;
};

static void *write_later(void *arg)
{
    struct piper *w = arg;
    usleep(20000);
    if (write(w->fd, "x", 1) != 1)
        abort();
    return NULL;
}

/* A loop that never sleeps still sees its kernel fds. */
HP_TEST(loop_busy_sees_fds)
{
    struct hp_loop_config c = {.spin_us = HP_LOOP_SPIN_FOREVER};
    struct pair p;
    HP_REQUIRE_EQ(pair_up(&p, &c), 0);
    int pp[2];
    HP_REQUIRE(pipe2(pp, O_NONBLOCK | O_CLOEXEC) == 0);
    int tag;
    HP_REQUIRE_EQ(hp_loop_fd_add(p.l[0], pp[0], HP_EV_IN, &tag), 0);
    struct piper w = {.fd = pp[1]};
    pthread_t th;
    HP_REQUIRE(pthread_create(&th, NULL, write_later, &w) == 0);
    struct hp_loop_event ev[8];
    int n = hp_loop_wait(p.l[0], ev, 8, 10000);
    pthread_join(th, NULL);
    HP_REQUIRE(n >= 1);
    HP_CHECK_EQ(ev[n - 1].kind, HP_LOOP_FD);
    HP_CHECK(ev[n - 1].user == &tag);
    struct hp_loop_stats st = stats_of(p.l[0]);
    HP_CHECK_EQ(st.sleeps, 0u);
    HP_CHECK_GE(st.fd_checks, 1u);
    close(pp[0]);
    close(pp[1]);
    pair_down(&p);
}

/* Every test of this binary ends with no buffer in use in any pool. */
static int pools_teardown(void)
{
    long n = hp_pools_in_use();
    if (n)
        fprintf(stderr, "    %ld buffers still in use\n", n);
    return n != 0;
}

__attribute__((constructor)) static void app_register_teardown(void)
{
    hp_test_add_teardown("no buffer in use in any pool", pools_teardown);
}
