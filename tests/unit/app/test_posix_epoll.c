/* SPDX-License-Identifier: BSD-3-Clause */
/* epoll, poll and select of the POSIX layer over a mem link: level, edge, one-shot, RDHUP, sets mixing hotpath sockets and kernel fds, registrations across dup and close, errors as Linux gives them. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "hp_test.h"
#include "px_fixture.h"

#define PERR(call) (fx_ret(call) < 0 ? errno : 0)
#define KERR(call) ((call) < 0 ? errno : 0)

static int ep_wait(int ep, struct epoll_event *ev, int max, int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    return hp__px_epoll_pwait2(ep, ev, max, ms < 0 ? NULL : &t, NULL);
}

static int ep_add(int ep, int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event e = {.events = events, .data.u64 = tag};
    return hp__px_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

HP_TEST(px_epoll_level_edge_oneshot)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p[3];
    int c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = fx_connected(4, SOCK_NONBLOCK, (uint16_t)(7200 + i), &p[i]);
        HP_REQUIRE(c[i] >= 0);
    }
    int ep = hp__px_epoll_create1(EPOLL_CLOEXEC);
    HP_REQUIRE(ep >= 0);
    HP_CHECK_EQ(ep_add(ep, c[0], EPOLLIN, 0), 0);
    HP_CHECK_EQ(ep_add(ep, c[1], EPOLLIN | EPOLLET, 1), 0);
    HP_CHECK_EQ(ep_add(ep, c[2], EPOLLIN | EPOLLONESHOT, 2), 0);
    struct epoll_event ev[8];
    HP_CHECK_EQ(ep_wait(ep, ev, 8, 0), 0);
    for (int i = 0; i < 3; i++)
        HP_CHECK_EQ(hp_tcp_send(p[i], "ab", 2), 2);
    int n = ep_wait(ep, ev, 8, 1000);
    HP_CHECK_EQ(n, 3);
    for (int i = 0; i < n; i++)
        HP_CHECK_EQ(ev[i].events, EPOLLIN);
    /* Unread: level reports again, edge and one-shot do not. */
    n = ep_wait(ep, ev, 8, 0);
    HP_CHECK_EQ(n, 1);
    HP_CHECK_EQ(ev[0].data.u64, 0u);
    /* New data: the edge fires again, the one-shot stays quiet. */
    HP_CHECK_EQ(hp_tcp_send(p[1], "c", 1), 1);
    HP_CHECK_EQ(hp_tcp_send(p[2], "c", 1), 1);
    fx_drive(5);
    n = ep_wait(ep, ev, 8, 0);
    HP_CHECK_EQ(n, 2);
    HP_CHECK(ev[0].data.u64 + ev[1].data.u64 == 1); /* 0 and 1 */
    /* MOD re-arms the one-shot. */
    struct epoll_event e = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = 2};
    HP_CHECK_EQ(hp__px_epoll_ctl(ep, EPOLL_CTL_MOD, c[2], &e), 0);
    n = ep_wait(ep, ev, 8, 0);
    HP_CHECK_EQ(n, 2);
    /* Read out: level stops reporting. */
    char b[8];
    HP_CHECK_EQ(hp__px_recvfrom(c[0], b, sizeof b, 0, NULL, NULL), 2);
    n = ep_wait(ep, ev, 8, 0);
    HP_CHECK_EQ(n, 0);
    /* maxevents smaller than the ready set: the rest comes next time. */
    HP_CHECK_EQ(hp_tcp_send(p[0], "x", 1), 1);
    HP_CHECK_EQ(hp__px_epoll_ctl(ep, EPOLL_CTL_MOD, c[1],
                                 &(struct epoll_event){.events = EPOLLIN, .data.u64 = 1}),
                0);
    fx_drive(5);
    HP_CHECK_EQ(ep_wait(ep, ev, 1, 0), 1);
    uint64_t first = ev[0].data.u64;
    HP_CHECK_EQ(ep_wait(ep, ev, 1, 0), 1);

    HP_CHECK_NE(ev[0].data.u64, first);
    for (int i = 0; i < 3; i++)
        hp_tcp_close(p[i]);
    fx_down();
}

HP_TEST(px_epoll_rdhup_hup_out)
{
    HP_REQUIRE(fx_up() == 0);
    int ep = hp__px_epoll_create1(0);
    /* A fresh TCP socket: EPOLLOUT | EPOLLHUP, as Linux. */
    int fresh = hp__px_socket(AF_INET, SOCK_STREAM, 0), kfresh = socket(AF_INET, SOCK_STREAM, 0);
    int kep = epoll_create1(0);
    HP_CHECK_EQ(ep_add(ep, fresh, EPOLLIN | EPOLLOUT | EPOLLRDHUP, 9), 0);
    struct epoll_event ke = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP};
    HP_CHECK_EQ(epoll_ctl(kep, EPOLL_CTL_ADD, kfresh, &ke), 0);
    struct epoll_event ev[4], kev[4];
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 0), 1);
    HP_CHECK_EQ(epoll_wait(kep, kev, 4, 0), 1);
    HP_CHECK_EQ(ev[0].events, kev[0].events);
    HP_CHECK_EQ(hp__px_epoll_ctl(ep, EPOLL_CTL_DEL, fresh, NULL), 0);
    close(kfresh);
    close(kep);
    /* Connected, writable; the peer's FIN: IN | RDHUP. */
    struct hp_tcp_sock *p;
    int c = fx_connected(4, SOCK_NONBLOCK, 7300, &p);
    HP_REQUIRE(c >= 0);
    HP_CHECK_EQ(ep_add(ep, c, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, 1), 0);
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 0), 1);
    HP_CHECK_EQ(ev[0].events, EPOLLOUT);
    HP_CHECK_EQ(hp_tcp_shutdown(p, HP_TCP_SHUT_WR), 0);
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 1000), 1);
    HP_CHECK_EQ(ev[0].events, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
    /* Our side closes too, the connection ends: HUP. */
    HP_CHECK_EQ(hp__px_shutdown(c, SHUT_WR), 0);
    fx_drive(10);
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 1000), 1);
    HP_CHECK(ev[0].events & EPOLLHUP);
    hp_tcp_close(p);
    fx_down();
}

/* One set: a pipe and hotpath sockets; either side wakes a wait. */
HP_TEST(px_epoll_mixed_kernel_fds)
{
    HP_REQUIRE(fx_up() == 0);
    int pp[2];
    HP_REQUIRE(pipe(pp) == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(6, SOCK_NONBLOCK, 7400, &p);
    HP_REQUIRE(c >= 0);
    int ep = hp__px_epoll_create1(0);
    HP_CHECK_EQ(ep_add(ep, pp[0], EPOLLIN, 100), 0);
    HP_CHECK_EQ(ep_add(ep, c, EPOLLIN, 200), 0);
    struct epoll_event ev[4];
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 20), 0);
    HP_CHECK_EQ(write(pp[1], "k", 1), 1);
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 1000), 1);
    HP_CHECK_EQ(ev[0].data.u64, 100u);
    HP_CHECK_EQ(hp_tcp_send(p, "h", 1), 1);
    fx_drive(3);
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 1000), 2);
    HP_CHECK_EQ(ev[0].data.u64 + ev[1].data.u64, 300u);
    /* The pipe read out: the socket alone wakes a wait. */
    char k;
    HP_CHECK_EQ(read(pp[0], &k, 1), 1);
    HP_CHECK_EQ(hp__px_recvfrom(c, &k, 1, 0, NULL, NULL), 1);
    HP_CHECK_EQ(hp_tcp_send(p, "i", 1), 1);
    HP_CHECK_EQ(ep_wait(ep, ev, 4, 1000), 1);
    HP_CHECK_EQ(ev[0].data.u64, 200u);
    /* Kernel errors for kernel fds, the layer's for sockets, as Linux. */
    int kep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN};
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &e)), EEXIST);
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, EPOLL_CTL_ADD, c, &e)), EEXIST);
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, EPOLL_CTL_MOD, pp[1], &e)),
                KERR(epoll_ctl(kep, EPOLL_CTL_MOD, pp[1], &e)));
    int other = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, EPOLL_CTL_MOD, other, &e)), ENOENT);
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, EPOLL_CTL_DEL, other, NULL)), ENOENT);
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, 99, c, &e)), KERR(epoll_ctl(kep, 99, pp[0], &e)));
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(ep, EPOLL_CTL_ADD, ep, &e)),
                KERR(epoll_ctl(kep, EPOLL_CTL_ADD, kep, &e)));
    /* A socket is not an epoll set. */
    HP_CHECK_EQ(PERR(hp__px_epoll_ctl(c, EPOLL_CTL_ADD, pp[0], &e)),
                KERR(epoll_ctl(pp[0], EPOLL_CTL_ADD, pp[1], &e)));
    HP_CHECK_EQ(PERR(hp__px_epoll_pwait2(ep, ev, 0, NULL, NULL)), KERR(epoll_wait(kep, ev, 0, 0)));
    close(kep);
    close(pp[0]);
    close(pp[1]);
    hp_tcp_close(p);
    fx_down();
}

/* A registration lives as long as the socket has an fd (Linux: the open
 * file description): a dup keeps it, the last close removes it. */
HP_TEST(px_epoll_dup_and_close)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, SOCK_NONBLOCK, 7500, &p);
    HP_REQUIRE(c >= 0);
    int ep = hp__px_epoll_create1(0);
    HP_CHECK_EQ(ep_add(ep, c, EPOLLIN, 5), 0);
    int d = hp__px_dup(c);
    HP_REQUIRE(d >= 0);
    HP_CHECK_EQ(hp__px_close(c), 0);
    HP_CHECK_EQ(hp_tcp_send(p, "x", 1), 1);
    struct epoll_event ev[2];
    HP_CHECK_EQ(ep_wait(ep, ev, 2, 1000), 1);
    HP_CHECK_EQ(ev[0].data.u64, 5u);
    HP_CHECK_EQ(hp__px_close(d), 0);
    HP_CHECK_EQ(hp_tcp_send(p, "y", 1) > 0 || true, true);
    fx_drive(3);
    HP_CHECK_EQ(ep_wait(ep, ev, 2, 0), 0);
    hp_tcp_close(p);
    fx_down();
}

HP_TEST(px_poll_and_select)
{
    HP_REQUIRE(fx_up() == 0);
    int pp[2];
    HP_REQUIRE(pipe(pp) == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7600, &p);
    HP_REQUIRE(c >= 0);
    struct pollfd f[3] = {{.fd = c, .events = POLLIN}, {.fd = pp[0], .events = POLLIN}, {.fd = -1}};
    struct timespec t0 = {0, 0}, t20 = {0, 20000000};
    HP_CHECK_EQ(hp__px_ppoll(f, 3, &t0, NULL), 0);
    HP_CHECK_EQ(hp__px_ppoll(f, 3, &t20, NULL), 0);
    HP_CHECK_EQ(hp_tcp_send(p, "s", 1), 1);
    HP_CHECK_EQ(hp__px_ppoll(f, 3, NULL, NULL), 1);
    HP_CHECK_EQ(f[0].revents, POLLIN);
    HP_CHECK_EQ(f[1].revents, 0);
    HP_CHECK_EQ(write(pp[1], "k", 1), 1);
    f[0].events = POLLOUT;
    HP_CHECK_EQ(hp__px_ppoll(f, 3, &t0, NULL), 2);
    HP_CHECK_EQ(f[0].revents, POLLOUT);
    HP_CHECK_EQ(f[1].revents, POLLIN);
    /* select: the same, by bits; select counts a bit per set. */
    fd_set r, w;
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(c, &r);
    FD_SET(c, &w);
    FD_SET(pp[0], &r);
    int nfds = (c > pp[0] ? c : pp[0]) + 1;
    struct timeval tv = {1, 0};
    HP_CHECK_EQ(hp__px_pselect(nfds, &r, &w, NULL, &t0, NULL, &tv), 3);
    HP_CHECK(FD_ISSET(c, &r) && FD_ISSET(c, &w) && FD_ISSET(pp[0], &r));
    /* A closed fd in a set: EBADF. */
    int dead = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    hp__px_close(dead);
    fd_set r2;
    FD_ZERO(&r2);
    FD_SET(dead, &r2);
    FD_SET(pp[0], &r2);
    int nf2 = (dead > pp[0] ? dead : pp[0]) + 1;
    HP_CHECK_EQ(PERR(hp__px_pselect(nf2, &r2, NULL, NULL, &t0, NULL, NULL)), EBADF);
    HP_CHECK_EQ(PERR(hp__px_pselect(-1, NULL, NULL, NULL, &t0, NULL, NULL)), EINVAL);
    close(pp[0]);
    close(pp[1]);
    hp_tcp_close(p);
    fx_down();
}

/* Sends that answer the events of one wait leave together: the frames of
 * all but the batch's last send wait for it (or for the next wait, or a
 * wait on kernel fds only), one transmit kick per batch as hotpath's own
 * loop makes; every byte arrives. HOTPATH_TX_BATCH=0: every send's frames
 * leave at once. A wait that returns one event holds nothing. */
HP_TEST(px_epoll_batch_sends_leave_together)
{
    HP_REQUIRE(fx_up() == 0);
    HP_CHECK_EQ(hp__px.cfg.tx_batch, 1u);
    struct hp_tcp_sock *p[3];
    int c[3];
    int ep = hp__px_epoll_create1(0);
    HP_REQUIRE(ep >= 0);
    for (int i = 0; i < 3; i++) {
        c[i] = fx_connected(4, SOCK_NONBLOCK, (uint16_t)(7300 + i), &p[i]);
        HP_REQUIRE(c[i] >= 0);
        HP_CHECK_EQ(ep_add(ep, c[i], EPOLLIN, (uint64_t)i), 0);
    }
    struct epoll_event ev[8];
    char b[8];
    for (int round = 0; round < 3; round++) {
        hp__px.cfg.tx_batch = round < 2;
        for (int i = 0; i < 3; i++)
            HP_CHECK_EQ(hp_tcp_send(p[i], "q", 1), 1);
        fx_drive(5);
        int n = ep_wait(ep, ev, 8, 1000);
        HP_REQUIRE(n == 3);
        for (int i = 0; i < n; i++) {
            if (round == 1 && i == 1)
                break; /* the program waits again before its other answers */
            int fd = c[ev[i].data.u64];
            HP_CHECK_EQ(hp__px_recvfrom(fd, b, sizeof b, 0, NULL, NULL), 1);
            HP_CHECK_EQ(hp__px_sendto(fd, "a", 1, 0, NULL, 0), 1);
            /* Held until the batch's last send, unless batching is off. */
            HP_CHECK_EQ(hp__px.tx_held, round < 2 && i < n - 1);
        }
        if (round == 1) {
            HP_CHECK(hp__px.tx_held);
            n = ep_wait(ep, ev, 8, 0); /* the two unread */
            HP_CHECK_EQ(n, 2);
            HP_CHECK(!hp__px.tx_held);
            for (int i = 0; i < n; i++) {
                int fd = c[ev[i].data.u64];
                HP_CHECK_EQ(hp__px_recvfrom(fd, b, sizeof b, 0, NULL, NULL), 1);
                HP_CHECK_EQ(hp__px_sendto(fd, "a", 1, 0, NULL, 0), 1);
                HP_CHECK_EQ(hp__px.tx_held, i == 0);
            }
        }
        for (int i = 0; i < 3; i++)
            HP_CHECK_EQ(fx_peer_read(p[i], b, 1), 1);
    }
    /* A wait on kernel fds only lets held frames go first. */
    hp__px.cfg.tx_batch = 1;
    for (int i = 0; i < 3; i++)
        HP_CHECK_EQ(hp_tcp_send(p[i], "q", 1), 1);
    fx_drive(5);
    HP_REQUIRE(ep_wait(ep, ev, 8, 1000) == 3);
    int fd = c[ev[0].data.u64];
    HP_CHECK_EQ(hp__px_recvfrom(fd, b, sizeof b, 0, NULL, NULL), 1);
    HP_CHECK_EQ(hp__px_sendto(fd, "a", 1, 0, NULL, 0), 1);
    HP_CHECK(hp__px.tx_held);
    hp__px_tx_settle_unlocked();
    HP_CHECK(!hp__px.tx_held);
    HP_CHECK_EQ(fx_peer_read(p[ev[0].data.u64], b, 1), 1);
    /* The other two, one wait each: one event, nothing held. */
    for (int k = 0; k < 2; k++) {
        HP_REQUIRE(ep_wait(ep, ev, 1, 1000) == 1);
        fd = c[ev[0].data.u64];
        HP_CHECK_EQ(hp__px_recvfrom(fd, b, sizeof b, 0, NULL, NULL), 1);
        HP_CHECK_EQ(hp__px_sendto(fd, "a", 1, 0, NULL, 0), 1);
        HP_CHECK(!hp__px.tx_held);
        HP_CHECK_EQ(fx_peer_read(p[ev[0].data.u64], b, 1), 1);
    }
    hp__px_close(ep);
    for (int i = 0; i < 3; i++)
        hp_tcp_close(p[i]);
    fx_down();
}
