/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's fd table over a mem link: dup / dup2 / close ordering, fcntl, close_range, the layer's own fds, fork (the child's sockets die with EBADFD, the parent's stack goes on), misconfiguration. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hp_test.h"
#include "px_fixture.h"

HP_TEST(px_dup_close_ordering)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7700, &p);
    HP_REQUIRE(c >= 0);
    int d = hp__px_dup(c);
    HP_REQUIRE(d >= 0);
    HP_CHECK_NE(d, c);
    /* O_NONBLOCK is the open file's: shared by dups. FD_CLOEXEC is each fd's. */
    HP_CHECK_EQ(hp__px_fcntl(d, F_SETFL, O_NONBLOCK), 0);
    HP_CHECK_EQ(hp__px_fcntl(c, F_GETFL, 0) & O_NONBLOCK, O_NONBLOCK);
    HP_CHECK_EQ(hp__px_fcntl(c, F_SETFD, FD_CLOEXEC), 0);
    HP_CHECK_EQ(hp__px_fcntl(d, F_GETFD, 0), 0);
    /* Closing one fd: the connection lives on through the other. */
    HP_CHECK_EQ(hp__px_close(c), 0);
    HP_CHECK_EQ(hp__px_sendto(d, "1", 1, 0, NULL, 0), 1);
    char b;
    HP_CHECK_EQ(fx_peer_read(p, &b, 1), 1);
    HP_CHECK_EQ(hp__px_sendto(c, "1", 1, 0, NULL, 0), -EBADF);
    /* F_DUPFD_CLOEXEC at or above a number. */
    int e = hp__px_fcntl(d, F_DUPFD_CLOEXEC, 500);
    HP_CHECK_GE(e, 500);
    HP_CHECK_EQ(fcntl(e, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    HP_CHECK_EQ(hp__px_close(d), 0);
    HP_CHECK_EQ(hp__px_sendto(e, "2", 1, 0, NULL, 0), 1);
    /* The last fd closed: the peer gets the rest and a FIN. */
    HP_CHECK_EQ(hp__px_close(e), 0);
    HP_CHECK_EQ(fx_peer_read(p, &b, 1), 1);
    HP_CHECK_EQ(b, '2');
    HP_CHECK(fx_peer_eof(p));
    hp_tcp_close(p);
    fx_down();
}

HP_TEST(px_dup2_over_a_socket)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7701, &p);
    HP_REQUIRE(c >= 0);
    /* A kernel fd over the socket's number: the socket is closed (its only fd). */
    int nul = open("/dev/null", O_WRONLY);
    HP_CHECK_EQ(hp__px_dup3(nul, c, 0, true), c);
    HP_CHECK(hp__px_fd_get(c) == NULL);
    HP_CHECK(fx_peer_eof(p));
    HP_CHECK_EQ(write(c, "x", 1), 1); /* /dev/null now */
    close(nul);
    /* A socket over a kernel fd, then dup3's EINVAL for the same fd. */
    int s = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(hp__px_dup3(s, c, O_CLOEXEC, false), c);
    HP_CHECK(hp__px_sock(c) == hp__px_sock(s));
    HP_CHECK_EQ(fcntl(c, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    HP_CHECK_EQ(hp__px_dup3(s, s, 0, false), -EINVAL);
    HP_CHECK_EQ(hp__px_dup3(s, s, 0, true), s);
    /* dup2 of an fd onto a dup of the same socket: nothing changes. */
    HP_CHECK_EQ(hp__px_dup3(s, c, 0, true), c);
    HP_CHECK_EQ(hp__px_close(s), 0);
    HP_CHECK(hp__px_sock(c) != NULL);
    hp_tcp_close(p);
    fx_down();
}

HP_TEST(px_close_range_and_own_fds)
{
    HP_REQUIRE(fx_up() == 0);
    int s[4];
    for (int i = 0; i < 4; i++)
        s[i] = hp__px_socket(AF_INET, SOCK_DGRAM, 0);
    int lo = s[0], hi = s[0];
    for (int i = 1; i < 4; i++) {
        lo = s[i] < lo ? s[i] : lo;
        hi = s[i] > hi ? s[i] : hi;
    }
    /* The layer's own fds (the placeholder the sockets are dups of) are
     * not the program's: closing them says EBADF, close_range skips them. */
    int own = hp__px.placeholder;
    HP_REQUIRE(own >= 0);
    HP_CHECK_EQ(hp__px_close(own), -EBADF);
    HP_CHECK_EQ(hp__px_dup3(s[0], own, 0, true), -EBADF);
    unsigned from = (unsigned)(own < lo ? own : lo);
    HP_CHECK_EQ(hp__px_close_range(from, (unsigned)hi, 0), 0);
    for (int i = 0; i < 4; i++) {
        HP_CHECK(hp__px_fd_get(s[i]) == NULL);
        HP_CHECK_EQ(fcntl(s[i], F_GETFD), -1);
    }
    HP_CHECK_GE(fcntl(own, F_GETFD), 0);
    /* Still working: a new socket. */
    int n = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_GE(n, 0);
    fx_down();
}

/* fork: the child's copies of hotpath sockets fail with EBADFD, its new
 * inet sockets with EAFNOSUPPORT, close works; the parent's stack is
 * untouched and its connection goes on. */
HP_TEST(px_fork_child)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7702, &p);
    HP_REQUIRE(c >= 0);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        char b;
        bad += hp__px_sendto(c, "x", 1, MSG_NOSIGNAL, NULL, 0) != -EBADFD;
        bad += hp__px_recvfrom(c, &b, 1, MSG_DONTWAIT, NULL, NULL) != -EBADFD;
        bad += hp__px_socket(AF_INET, SOCK_STREAM, 0) != -EAFNOSUPPORT;
        bad += hp__px_close(c) != 0;
        /* Kernel fds are the child's as ever. */
        int pp[2];
        bad += pipe(pp) != 0 || write(pp[1], "k", 1) != 1 || read(pp[0], &b, 1) != 1;
        _exit(bad);
    }
    HP_REQUIRE(pid > 0);
    int st = 0;
    HP_CHECK_EQ(waitpid(pid, &st, 0), pid);
    HP_CHECK(WIFEXITED(st));
    HP_CHECK_EQ(WEXITSTATUS(st), 0);
    /* The child's close did not close the parent's socket. */
    HP_CHECK_EQ(hp__px_sendto(c, "ok", 2, 0, NULL, 0), 2);
    char b[2];
    HP_CHECK_EQ(fx_peer_read(p, b, 2), 2);
    HP_CHECK_EQ(hp_tcp_send(p, "!", 1), 1);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, 1, 0, NULL, NULL), 1);
    hp_tcp_close(p);
    fx_down();
}

/* HOTPATH_* errors: one line on stderr, socket() fails with the errno. */
HP_TEST(px_misconfiguration)
{
    struct px_config c;
    unsetenv("HOTPATH_LINK");
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    setenv("HOTPATH_LINK", "carrier-pigeon", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    setenv("HOTPATH_LINK", "afpacket", 1);
    setenv("HOTPATH_IFACE", "hpx-none0", 1);
    setenv("HOTPATH_IP", "198.18.0.300/24", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    setenv("HOTPATH_IP", "198.18.0.2/24,198.18.1.2", 1);
    setenv("HOTPATH_BUSY_POLL_US", "-3", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    unsetenv("HOTPATH_BUSY_POLL_US");
    HP_CHECK_EQ(hp__px_config_parse(&c), 0);
    HP_CHECK_EQ(c.nip, 2);
    HP_CHECK_EQ(c.ip[1].plen, 24);
    HP_CHECK_EQ(c.afxdp_flags, 0u); /* unset: the kernel's and the driver's choices */
    /* HOTPATH_AFXDP_MODE: copy | zerocopy, skb; contradictions refused. */
    static const struct {
        const char *v;
        int rc;
        unsigned flags;
    } modes[] = {
        {"copy", 0, HP_LINK_F_COPY},   {"zerocopy", 0, HP_LINK_F_ZEROCOPY},
        {"skb", 0, HP_LINK_F_XDP_SKB}, {"skb,copy", 0, HP_LINK_F_XDP_SKB | HP_LINK_F_COPY},
        {"copy,zerocopy", -EINVAL, 0}, {"zerocopy,skb", -EINVAL, 0},
        {"turbo", -EINVAL, 0},         {"copy,", 0, HP_LINK_F_COPY},
        {"native", -EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        setenv("HOTPATH_AFXDP_MODE", modes[i].v, 1);
        HP_CHECK_EQ(hp__px_config_parse(&c), modes[i].rc);
        if (modes[i].rc == 0)
            HP_CHECK_EQ(c.afxdp_flags, modes[i].flags);
    }
    unsetenv("HOTPATH_AFXDP_MODE");
    HP_CHECK_EQ(hp__px_config_parse(&c), 0);
    /* No such interface (or, not root, no permission): socket() says so. */
    int rc = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK(rc == -ENODEV || rc == -EPERM);
    HP_CHECK_EQ(hp__px_socket(AF_INET6, SOCK_DGRAM, 0), rc);
    /* Unless the kernel is asked to take over. */
    hp__px.cfg.fallback_kernel = true;
    HP_CHECK_EQ(hp__px_socket(AF_INET, SOCK_STREAM, 0), PX_USE_KERNEL);
}

/* HOTPATH_LINK=memif: the control socket instead of an interface; a
 * client that no server answers fails with ECONNREFUSED (and one line),
 * after HOTPATH_MEMIF_WAIT_MS, instead of hanging. */
HP_TEST(px_misconfiguration_memif)
{
    struct px_config c;
    setenv("HOTPATH_LINK", "memif", 1);
    unsetenv("HOTPATH_IFACE");
    unsetenv("HOTPATH_MEMIF_SOCKET");
    setenv("HOTPATH_IP", "198.18.0.2/24", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    char sock[160];
    snprintf(sock, sizeof sock, "/tmp/hpm-unit-%d/none.sock", (int)getpid());
    setenv("HOTPATH_MEMIF_SOCKET", sock, 1);
    setenv("HOTPATH_MEMIF_ROLE", "master", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    setenv("HOTPATH_MEMIF_ROLE", "server", 1);
    setenv("HOTPATH_MEMIF_ID", "x7", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), -EINVAL);
    setenv("HOTPATH_MEMIF_ID", "7", 1);
    HP_CHECK_EQ(hp__px_config_parse(&c), 0);
    HP_CHECK_EQ(c.memif_role, HP_MEMIF_SERVER);
    HP_CHECK_EQ(c.memif_id, 7u);
    HP_CHECK_EQ(strcmp(c.iface, "memif7"), 0);
    HP_CHECK_EQ(strcmp(c.memif_socket, sock), 0);
    /* A server cannot listen in a directory that does not exist. */
    hp__px.status = PX_ST_NONE;
    hp__px.cfg.fallback_kernel = false;
    int rc = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK(rc < 0);
    HP_CHECK(rc != -ECONNREFUSED);
    /* A client waits HOTPATH_MEMIF_WAIT_MS for a server, then fails. */
    setenv("HOTPATH_MEMIF_ROLE", "client", 1);
    setenv("HOTPATH_MEMIF_WAIT_MS", "200", 1);
    hp__px.status = PX_ST_NONE;
    HP_CHECK_EQ(hp__px_socket(AF_INET, SOCK_STREAM, 0), -ECONNREFUSED);
    HP_CHECK_EQ(hp__px_socket(AF_INET6, SOCK_DGRAM, 0), -ECONNREFUSED);
    HP_CHECK(hp__px.link == NULL && hp__px.stack == NULL);
    hp__px.status = PX_ST_NONE;
    unsetenv("HOTPATH_MEMIF_SOCKET");
    unsetenv("HOTPATH_MEMIF_ROLE");
    unsetenv("HOTPATH_MEMIF_ID");
    unsetenv("HOTPATH_MEMIF_WAIT_MS");
    unsetenv("HOTPATH_LINK");
}
