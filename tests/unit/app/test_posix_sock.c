/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's socket calls over a mem link: real fd numbers, flags in the type, bind, listen, accept, connect, shutdown and names, each misuse with Linux's errno (compared with a kernel socket where no traffic is needed). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hp_test.h"
#include "px_fixture.h"

/* errno of a kernel call, 0 on success. */
#define KERR(call) ((call) < 0 ? errno : 0)
/* errno of a layer call, 0 on success. */
#define PERR(call) (fx_ret(call) < 0 ? errno : 0)

HP_TEST(px_socket_real_unique_fd)
{
    HP_REQUIRE(fx_up() == 0);
    int a = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    int b = hp__px_socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    HP_REQUIRE(a >= 0 && b >= 0);
    HP_CHECK_NE(a, b);
    HP_CHECK_LT(b, FD_SETSIZE);
    /* Real kernel fds: the kernel knows them, as sockets. */
    struct stat st;
    HP_CHECK_EQ(fstat(a, &st), 0);
    HP_CHECK(S_ISSOCK(st.st_mode));
    HP_CHECK_EQ(fcntl(a, F_GETFD) & FD_CLOEXEC, 0);
    HP_CHECK_EQ(fcntl(b, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    /* The flags of the type: O_NONBLOCK through the layer's fcntl. */
    HP_CHECK_EQ(hp__px_fcntl(a, F_GETFL, 0) & O_NONBLOCK, 0);
    HP_CHECK_EQ(hp__px_fcntl(b, F_GETFL, 0) & O_NONBLOCK, O_NONBLOCK);
    int v = 0;
    socklen_t len = sizeof v;
    HP_CHECK_EQ(hp__px_getsockopt(b, SOL_SOCKET, SO_TYPE, &v, &len), 0);
    HP_CHECK_EQ(v, SOCK_DGRAM);
    HP_CHECK_EQ(hp__px_getsockopt(b, SOL_SOCKET, SO_DOMAIN, &v, &len), 0);
    HP_CHECK_EQ(v, AF_INET6);
    /* Closing frees the number: the kernel hands it out again. */
    HP_CHECK_EQ(hp__px_close(a), 0);
    int f = open("/dev/null", O_RDONLY);
    HP_CHECK_EQ(f, a);
    HP_CHECK(hp__px_fd_get(f) == NULL);
    close(f);
    HP_CHECK_EQ(hp__px_close(b), 0);
    HP_CHECK_EQ(hp__px_close(b), -EBADF);
    fx_down();
}

HP_TEST(px_socket_protocol_errors)
{
    HP_REQUIRE(fx_up() == 0);
    HP_CHECK_EQ(PERR(hp__px_socket(AF_INET, SOCK_STREAM, IPPROTO_UDP)),
                KERR(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP)));
    HP_CHECK_EQ(PERR(hp__px_socket(AF_INET, SOCK_DGRAM, IPPROTO_TCP)),
                KERR(socket(AF_INET, SOCK_DGRAM, IPPROTO_TCP)));
    fx_down();
}

HP_TEST(px_bind_errors_as_linux)
{
    HP_REQUIRE(fx_up() == 0);
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0), k = socket(AF_INET, SOCK_STREAM, 0);
    HP_REQUIRE(h >= 0 && k >= 0);
    struct sockaddr_in a = fx_sin(0, 5000),
                       lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 a6 = fx_sin6(0, 5000);
    /* Too short, then the wrong family. */
    HP_CHECK_EQ(PERR(hp__px_bind(h, (struct sockaddr *)&a, sizeof a - 1)),
                KERR(bind(k, (struct sockaddr *)&lo, sizeof lo - 1)));
    HP_CHECK_EQ(PERR(hp__px_bind(h, (struct sockaddr *)&a6, sizeof a6)),
                KERR(bind(k, (struct sockaddr *)&a6, sizeof a6)));
    /* Not one of ours. */
    struct sockaddr_in other = fx_sin(1, 5000);
    HP_CHECK_EQ(PERR(hp__px_bind(h, (struct sockaddr *)&other, sizeof other)), EADDRNOTAVAIL);
    /* Bound twice. */
    HP_CHECK_EQ(hp__px_bind(h, (struct sockaddr *)&a, sizeof a), 0);
    HP_CHECK_EQ(KERR(bind(k, (struct sockaddr *)&lo, sizeof lo)), 0);
    HP_CHECK_EQ(PERR(hp__px_bind(h, (struct sockaddr *)&a, sizeof a)),
                KERR(bind(k, (struct sockaddr *)&lo, sizeof lo)));
    /* The port of a listener is taken. */
    HP_CHECK_EQ(hp__px_listen(h, 8), 0);
    int h2 = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(PERR(hp__px_bind(h2, (struct sockaddr *)&a, sizeof a)), EADDRINUSE);
    /* An fd that is not a socket: the kernel's answer, ENOTSOCK. */
    int ep = hp__px_epoll_create1(0);
    HP_CHECK_EQ(PERR(hp__px_bind(ep, (struct sockaddr *)&a, sizeof a)), ENOTSOCK);
    close(k);
    fx_down();
}

HP_TEST(px_listen_accept_errors_as_linux)
{
    HP_REQUIRE(fx_up() == 0);
    int hu = hp__px_socket(AF_INET, SOCK_DGRAM, 0), ku = socket(AF_INET, SOCK_DGRAM, 0);
    HP_CHECK_EQ(PERR(hp__px_listen(hu, 1)), KERR(listen(ku, 1)));
    HP_CHECK_EQ(PERR(hp__px_accept4(hu, NULL, NULL, 0)), KERR(accept4(ku, NULL, NULL, 0)));
    int h = hp__px_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int k = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    /* Not listening. */
    HP_CHECK_EQ(PERR(hp__px_accept4(h, NULL, NULL, 0)), KERR(accept4(k, NULL, NULL, 0)));
    HP_CHECK_EQ(hp__px_listen(h, 4), 0);
    struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    HP_CHECK_EQ(bind(k, (struct sockaddr *)&lo, sizeof lo), 0);
    HP_CHECK_EQ(listen(k, 4), 0);
    /* Nothing waiting; bad flags. */
    HP_CHECK_EQ(PERR(hp__px_accept4(h, NULL, NULL, 0)), KERR(accept4(k, NULL, NULL, 0)));
    HP_CHECK_EQ(PERR(hp__px_accept4(h, NULL, NULL, 0x4000)), KERR(accept4(k, NULL, NULL, 0x4000)));
    /* Listening again is allowed; connect on a listener is EISCONN. */
    HP_CHECK_EQ(PERR(hp__px_listen(h, 8)), KERR(listen(k, 8)));
    struct sockaddr_in b = fx_sin(1, 7);
    HP_CHECK_EQ(PERR(hp__px_connect(h, (struct sockaddr *)&b, sizeof b)),
                KERR(connect(k, (struct sockaddr *)&lo, sizeof lo)));
    /* A listener has no peer, nothing to send or receive. */
    char c = 0;
    socklen_t len = sizeof b;
    HP_CHECK_EQ(PERR(hp__px_getpeername(h, (struct sockaddr *)&b, &len)),
                KERR(getpeername(k, (struct sockaddr *)&b, &len)));
    HP_CHECK_EQ(PERR(hp__px_recvfrom(h, &c, 1, 0, NULL, NULL)), KERR(recv(k, &c, 1, 0)));
    HP_CHECK_EQ(PERR(hp__px_sendto(h, &c, 1, MSG_NOSIGNAL, NULL, 0)),
                KERR(send(k, &c, 1, MSG_NOSIGNAL)));
    close(k);
    close(ku);
    fx_down();
}

HP_TEST(px_accept_a_connection)
{
    HP_REQUIRE(fx_up() == 0);
    int l = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = fx_sin(-1, 8080);
    HP_REQUIRE(hp__px_bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    HP_REQUIRE(hp__px_listen(l, 4) == 0);
    struct hp_tcp_sock *t = hp_tcp_open(fx.b, 4, NULL);
    struct hp_sockaddr to = fx_hp(4, 0, 8080);
    HP_REQUIRE(hp_tcp_connect(t, &to) == -EINPROGRESS);
    /* Blocking accept: it drives both stacks until the handshake ends. */
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int c = hp__px_accept4(l, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    HP_REQUIRE(c >= 0);
    HP_CHECK_EQ(len, sizeof peer);
    HP_CHECK_EQ(peer.sin_family, AF_INET);
    HP_CHECK_EQ(memcmp(&peer.sin_addr, "\xc6\x12\x00\x02", 4), 0);
    struct hp_sockaddr pl;
    hp_tcp_local(t, &pl);
    HP_CHECK_EQ(ntohs(peer.sin_port), pl.port);
    HP_CHECK_EQ(hp__px_fcntl(c, F_GETFL, 0) & O_NONBLOCK, O_NONBLOCK);
    HP_CHECK_EQ(fcntl(c, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    /* A short address buffer is filled as far as it goes; len says the full size. */
    struct sockaddr_in me;
    len = 4;
    memset(&me, 0xee, sizeof me);
    HP_CHECK_EQ(hp__px_getsockname(c, (struct sockaddr *)&me, &len), 0);
    HP_CHECK_EQ(len, sizeof me);
    HP_CHECK_EQ(me.sin_family, AF_INET);
    HP_CHECK_EQ(me.sin_addr.s_addr, 0xeeeeeeeeu);
    hp_tcp_close(t);
    fx_down();
}

HP_TEST(px_connect_nonblocking_states)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *l = fx_peer_listen(4, 9000);
    int h = hp__px_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in b = fx_sin(1, 9000);
    fx.peer_paused = true; /* the SYN waits */
    HP_CHECK_EQ(hp__px_connect(h, (struct sockaddr *)&b, sizeof b), -EINPROGRESS);
    HP_CHECK_EQ(hp__px_connect(h, (struct sockaddr *)&b, sizeof b), -EALREADY);
    /* Sending before the handshake ends: EAGAIN, as Linux. */
    HP_CHECK_EQ(hp__px_sendto(h, "x", 1, 0, NULL, 0), -EAGAIN);
    fx.peer_paused = false;
    fx_drive(10);
    /* Linux: the first connect() after completion says 0, then EISCONN. */
    HP_CHECK_EQ(hp__px_connect(h, (struct sockaddr *)&b, sizeof b), 0);
    HP_CHECK_EQ(hp__px_connect(h, (struct sockaddr *)&b, sizeof b), -EISCONN);
    int err = -1;
    socklen_t len = sizeof err;
    HP_CHECK_EQ(hp__px_getsockopt(h, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    HP_CHECK_EQ(err, 0);
    struct sockaddr_in p;
    len = sizeof p;
    HP_CHECK_EQ(hp__px_getpeername(h, (struct sockaddr *)&p, &len), 0);
    HP_CHECK_EQ(ntohs(p.sin_port), 9000);
    hp_tcp_close(fx_peer_accept(l));
    hp_tcp_close(l);
    fx_down();
}

HP_TEST(px_connect_refused)
{
    HP_REQUIRE(fx_up() == 0);
    struct sockaddr_in b = fx_sin(1, 9);
    /* Blocking: the peer's RST ends it. */
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(hp__px_connect(h, (struct sockaddr *)&b, sizeof b), -ECONNREFUSED);
    /* Linux lets the socket try again. */
    HP_CHECK_EQ(hp__px_connect(h, (struct sockaddr *)&b, sizeof b), -ECONNREFUSED);
    /* Non-blocking: SO_ERROR says it, once; then connect() finds nothing to report. */
    int n = hp__px_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    HP_CHECK_EQ(hp__px_connect(n, (struct sockaddr *)&b, sizeof b), -EINPROGRESS);
    fx_drive(10);
    int err = 0;
    socklen_t len = sizeof err;
    HP_CHECK_EQ(hp__px_getsockopt(n, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    HP_CHECK_EQ(err, ECONNREFUSED);
    HP_CHECK_EQ(hp__px_getsockopt(n, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    HP_CHECK_EQ(err, 0);
    HP_CHECK_EQ(hp__px_connect(n, (struct sockaddr *)&b, sizeof b), -ECONNABORTED);
    fx_down();
}

HP_TEST(px_connect_address_errors)
{
    HP_REQUIRE(fx_up() == 0);
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0), k = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in6 b6 = fx_sin6(1, 80);
    struct sockaddr_in b = fx_sin(1, 80);
    HP_CHECK_EQ(PERR(hp__px_connect(h, (struct sockaddr *)&b, 2)),
                KERR(connect(k, (struct sockaddr *)&b, 2)));
    HP_CHECK_EQ(PERR(hp__px_connect(h, (struct sockaddr *)&b6, sizeof b6)),
                KERR(connect(k, (struct sockaddr *)&b6, sizeof b6)));
    /* An IPv6-only socket cannot reach an IPv4-mapped address. */
    int h6 = hp__px_socket(AF_INET6, SOCK_STREAM, 0), k6 = socket(AF_INET6, SOCK_STREAM, 0);
    int one = 1;
    HP_CHECK_EQ(hp__px_setsockopt(h6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one), 0);
    HP_CHECK_EQ(setsockopt(k6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one), 0);
    struct sockaddr_in6 m = fx_sin6_mapped(1, 80);
    HP_CHECK_EQ(PERR(hp__px_connect(h6, (struct sockaddr *)&m, sizeof m)),
                KERR(connect(k6, (struct sockaddr *)&m, sizeof m)));
    /* IPv6 options on an IPv4 socket. */
    HP_CHECK_EQ(PERR(hp__px_setsockopt(h, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)),
                KERR(setsockopt(k, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)));
    close(k);
    close(k6);
    fx_down();
}

/* An AF_INET6 socket on [::] takes IPv4 too (net.ipv6.bindv6only = 0), and
 * reports IPv4 peers as IPv4-mapped addresses; with IPV6_V6ONLY it does not. */
HP_TEST(px_dual_stack_listener)
{
    HP_REQUIRE(fx_up() == 0);
    int l = hp__px_socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 any = fx_sin6(-1, 6000);
    HP_REQUIRE(hp__px_bind(l, (struct sockaddr *)&any, sizeof any) == 0);
    HP_REQUIRE(hp__px_listen(l, 4) == 0);
    for (int fam = 4; fam <= 6; fam += 2) {
        struct hp_tcp_sock *t = hp_tcp_open(fx.b, fam, NULL);
        struct hp_sockaddr to = fx_hp(fam, 0, 6000);
        HP_CHECK_EQ(hp_tcp_connect(t, &to), -EINPROGRESS);
        struct sockaddr_in6 p;
        socklen_t len = sizeof p;
        int c = hp__px_accept4(l, (struct sockaddr *)&p, &len, 0);
        HP_CHECK_GE(c, 0);
        HP_CHECK_EQ(p.sin6_family, AF_INET6);
        struct sockaddr_in6 want = fam == 4 ? fx_sin6_mapped(1, 0) : fx_sin6(1, 0);
        HP_CHECK_EQ(memcmp(&p.sin6_addr, &want.sin6_addr, 16), 0);
        /* It talks: a byte each way. */
        HP_CHECK_EQ(hp__px_sendto(c, "z", 1, 0, NULL, 0), 1);
        char got = 0;
        HP_CHECK_EQ(fx_peer_read(t, &got, 1), 1);
        HP_CHECK_EQ(got, 'z');
        hp_tcp_close(t);
        hp__px_close(c);
    }
    /* IPV6_V6ONLY: IPv4 is refused. */
    int o = hp__px_socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    HP_CHECK_EQ(hp__px_setsockopt(o, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one), 0);
    any.sin6_port = htons(6001);
    HP_REQUIRE(hp__px_bind(o, (struct sockaddr *)&any, sizeof any) == 0);
    HP_CHECK_EQ(PERR(hp__px_setsockopt(o, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)), EINVAL);
    HP_REQUIRE(hp__px_listen(o, 4) == 0);
    struct hp_tcp_sock *t = hp_tcp_open(fx.b, 4, NULL);
    struct hp_sockaddr to = fx_hp(4, 0, 6001);
    HP_CHECK_EQ(hp_tcp_connect(t, &to), -EINPROGRESS);
    fx_drive(20);
    HP_CHECK_EQ(hp_tcp_error(t), -ECONNREFUSED);
    HP_CHECK_EQ(hp__px_accept4(o, NULL, NULL, 0), -EAGAIN);
    hp_tcp_close(t);
    fx_down();
}

HP_TEST(px_shutdown_as_linux)
{
    HP_REQUIRE(fx_up() == 0);
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0), k = socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(PERR(hp__px_shutdown(h, SHUT_WR)), KERR(shutdown(k, SHUT_WR)));
    HP_CHECK_EQ(PERR(hp__px_shutdown(h, 7)), KERR(shutdown(k, 7)));
    int hu = hp__px_socket(AF_INET, SOCK_DGRAM, 0), ku = socket(AF_INET, SOCK_DGRAM, 0);
    HP_CHECK_EQ(PERR(hp__px_shutdown(hu, SHUT_RDWR)), KERR(shutdown(ku, SHUT_RDWR)));
    close(k);
    close(ku);
    /* Connected: SHUT_WR sends a FIN; sending after it is EPIPE. */
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7000, &p);
    HP_REQUIRE(c >= 0);
    HP_CHECK_EQ(hp__px_shutdown(c, SHUT_WR), 0);
    HP_CHECK(fx_peer_eof(p));
    HP_CHECK_EQ(hp__px_sendto(c, "x", 1, MSG_NOSIGNAL, NULL, 0), -EPIPE);
    /* The other direction still works. */
    HP_CHECK_EQ(hp_tcp_send(p, "yz", 2), 2);
    char b[4];
    HP_CHECK_EQ(hp__px_recvfrom(c, b, 2, MSG_WAITALL, NULL, NULL), 2);
    /* SHUT_RD: reads end. */
    HP_CHECK_EQ(hp__px_shutdown(c, SHUT_RD), 0);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), 0);
    hp_tcp_close(p);
    fx_down();
}

HP_TEST(px_options)
{
    HP_REQUIRE(fx_up() == 0);
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0), k = socket(AF_INET, SOCK_STREAM, 0);
    int v = 4096, got = 0;
    socklen_t len = sizeof got;
    /* Linux doubles SO_SNDBUF / SO_RCVBUF and reports the double. */
    HP_CHECK_EQ(hp__px_setsockopt(h, SOL_SOCKET, SO_SNDBUF, &v, sizeof v), 0);
    HP_CHECK_EQ(hp__px_getsockopt(h, SOL_SOCKET, SO_SNDBUF, &got, &len), 0);
    HP_CHECK_EQ(got, 8192);
    /* Too short an int; an unknown option; an unknown level. */
    HP_CHECK_EQ(PERR(hp__px_setsockopt(h, SOL_SOCKET, SO_KEEPALIVE, &v, 2)),
                KERR(setsockopt(k, SOL_SOCKET, SO_KEEPALIVE, &v, 2)));
    HP_CHECK_EQ(PERR(hp__px_setsockopt(h, IPPROTO_TCP, 9999, &v, sizeof v)),
                KERR(setsockopt(k, IPPROTO_TCP, 9999, &v, sizeof v)));
    HP_CHECK_EQ(PERR(hp__px_getsockopt(h, 9999, 1, &got, &len)),
                KERR(getsockopt(k, 9999, 1, &got, &len)));
    /* TCP options on a UDP socket. */
    int hu = hp__px_socket(AF_INET, SOCK_DGRAM, 0), ku = socket(AF_INET, SOCK_DGRAM, 0);
    HP_CHECK_EQ(PERR(hp__px_setsockopt(hu, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v)),
                KERR(setsockopt(ku, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v)));
    /* Values read back. */
    int one = 1;
    HP_CHECK_EQ(hp__px_setsockopt(h, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
    HP_CHECK_EQ(hp__px_getsockopt(h, IPPROTO_TCP, TCP_NODELAY, &got, &len), 0);
    HP_CHECK_EQ(got, 1);
    HP_CHECK_EQ(hp__px_getsockopt(h, IPPROTO_TCP, TCP_MAXSEG, &got, &len), 0);
    HP_CHECK_EQ(got, 536); /* before a connection, as Linux */
    struct timeval tv = {1, 500000}, tg;
    len = sizeof tg;
    HP_CHECK_EQ(hp__px_setsockopt(h, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    HP_CHECK_EQ(hp__px_getsockopt(h, SOL_SOCKET, SO_RCVTIMEO, &tg, &len), 0);
    HP_CHECK_EQ(tg.tv_sec, 1);
    HP_CHECK_EQ(tg.tv_usec, 500000);
    tv.tv_usec = 2000000;
    HP_CHECK_EQ(PERR(hp__px_setsockopt(h, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)),
                KERR(setsockopt(k, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)));
    char cc[16] = "";
    len = sizeof cc;
    HP_CHECK_EQ(hp__px_getsockopt(h, IPPROTO_TCP, TCP_CONGESTION, cc, &len), 0);
    HP_CHECK_STREQ(cc, "reno");
    close(k);
    close(ku);
    fx_down();
}

HP_TEST(px_tcp_info_linux_layout)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7100, &p);
    HP_REQUIRE(c >= 0);
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0xff, sizeof ti);
    HP_CHECK_EQ(hp__px_getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
    HP_CHECK_EQ(len, sizeof ti);
    HP_CHECK_EQ(ti.tcpi_state, 1); /* TCP_ESTABLISHED */
    HP_CHECK_GT(ti.tcpi_snd_mss, 500u);
    HP_CHECK_GT(ti.tcpi_snd_cwnd, 0u);
    HP_CHECK_GT(ti.tcpi_rto, 0u);
    hp_tcp_close(p);
    fx_down();
}
