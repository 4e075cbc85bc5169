/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's I/O over a mem link: TCP and UDP data both ways, peek, waitall, truncation, EPIPE and SIGPIPE, resets, timeouts, EINTR and SA_RESTART, sendfile. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hp_test.h"
#include "px_fixture.h"

static volatile sig_atomic_t sigpipes, alarms;

static void on_sigpipe(int s)
{
    (void)s;
    sigpipes++;
}

HP_TEST(px_tcp_data_both_ways)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7001, &p);
    HP_REQUIRE(c >= 0);
    /* writev: gathered, in order. */
    struct iovec v[3] = {{"he", 2}, {"ll", 2}, {"o", 1}};
    HP_CHECK_EQ(hp__px_writev(c, v, 3), 5);
    char b[64] = "";
    HP_CHECK_EQ(fx_peer_read(p, b, 5), 5);
    HP_CHECK_EQ(memcmp(b, "hello", 5), 0);
    /* From the peer: peek, FIONREAD, then read it, scattered. */
    HP_CHECK_EQ(hp_tcp_send(p, "abcdef", 6), 6);
    fx_drive(5);
    int n = 0;
    HP_CHECK_EQ(hp__px_ioctl(c, FIONREAD, &n), 0);
    HP_CHECK_EQ(n, 6);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, 3, MSG_PEEK, NULL, NULL), 3);
    HP_CHECK_EQ(memcmp(b, "abc", 3), 0);
    HP_CHECK_EQ(hp__px_ioctl(c, FIONREAD, &n), 0);
    HP_CHECK_EQ(n, 6);
    char x[2], y[10];
    struct iovec r[2] = {{x, 2}, {y, 10}};
    HP_CHECK_EQ(hp__px_readv(c, r, 2), 6);
    HP_CHECK_EQ(memcmp(x, "ab", 2), 0);
    HP_CHECK_EQ(memcmp(y, "cdef", 4), 0);
    /* Non-blocking read of nothing. */
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, MSG_DONTWAIT, NULL, NULL), -EAGAIN);
    /* MSG_WAITALL: one call gathers what arrives in pieces. */
    HP_CHECK_EQ(hp_tcp_send(p, "12345", 5), 5);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, 5, MSG_WAITALL, NULL, NULL), 5);
    /* recvmsg on TCP gives no address. */
    struct sockaddr_in from;
    struct iovec one = {b, sizeof b};
    struct msghdr m = {.msg_name = &from,
                       .msg_namelen = sizeof from,
                       .msg_iov = &one,
                       .msg_iovlen = 1};
    HP_CHECK_EQ(hp_tcp_send(p, "q", 1), 1);
    HP_CHECK_EQ(hp__px_recvmsg(c, &m, 0), 1);
    HP_CHECK_EQ(m.msg_namelen, 0u);
    hp_tcp_close(p);
    fx_down();
}

/* A writev's pieces share segments, as on Linux: an HTTP server's header
 * and body written together leave in one segment on a TCP_NODELAY socket
 * (not one each), and a 40-piece writev (more than the layer hands the
 * stack at once) arrives whole and in order. */
HP_TEST(px_writev_pieces_share_a_segment)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7002, &p);
    HP_REQUIRE(c >= 0);
    int one = 1;
    HP_CHECK_EQ(hp__px_setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
    static char hdr[240], body[1024], got[1264 + 1];
    memset(hdr, 'h', sizeof hdr);
    memset(body, 'b', sizeof body);
    uint64_t segs = hp_stack_counter(fx.a, HP_CTR_TCP_OUT_SEGS);
    struct iovec v[2] = {{hdr, sizeof hdr}, {body, sizeof body}};
    HP_CHECK_EQ(hp__px_writev(c, v, 2), 1264);
    HP_CHECK_EQ(hp_stack_counter(fx.a, HP_CTR_TCP_OUT_SEGS) - segs, 1u);
    HP_CHECK_EQ(fx_peer_read(p, got, 1264), 1264);
    HP_CHECK_EQ(memcmp(got, hdr, sizeof hdr), 0);
    HP_CHECK_EQ(memcmp(got + sizeof hdr, body, sizeof body), 0);
    /* Many small pieces: one stream, in order; fewer segments than pieces. */
    struct iovec w[40];
    char pieces[40][3];
    for (int i = 0; i < 40; i++) {
        memset(pieces[i], 'A' + i % 26, sizeof pieces[i]);
        w[i] = (struct iovec){pieces[i], i % 7 == 3 ? 0 : sizeof pieces[i]};
    }
    segs = hp_stack_counter(fx.a, HP_CTR_TCP_OUT_SEGS);
    long want = 0;
    for (int i = 0; i < 40; i++)
        want += (long)w[i].iov_len;
    HP_CHECK_EQ(hp__px_writev(c, w, 40), want);
    HP_CHECK_LE(hp_stack_counter(fx.a, HP_CTR_TCP_OUT_SEGS) - segs, 3u);
    HP_CHECK_EQ(fx_peer_read(p, got, (size_t)want), want);
    for (int i = 0, at = 0; i < 40; i++)
        for (size_t k = 0; k < w[i].iov_len; k++)
            HP_CHECK_EQ(got[at++], 'A' + i % 26);
    hp_tcp_close(p);
    fx_down();
}

/* The bulk test's peer: it reads whatever arrived each time B is polled. */
static struct hp_tcp_sock *drain;
static unsigned char *dst;
static size_t drained, want_len;

static void drain_hook(void)
{
    long r;
    while (drained < want_len && (r = hp_tcp_recv(drain, dst + drained, want_len - drained)) > 0)
        drained += (size_t)r;
}

/* A megabyte through one blocking send, more than the send buffer holds:
 * the call blocks (driving both stacks) until all of it was taken. */
HP_TEST(px_tcp_blocking_bulk)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(6, 0, 7002, &p);
    HP_REQUIRE(c >= 0);
    size_t len = 1 << 20;
    unsigned char *out = malloc(len), *in = malloc(len);
    HP_REQUIRE(out && in);
    uint64_t seed = hp_test_seed();
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)hp_test_rand(&seed);
    drain = p;
    dst = in;
    drained = 0;
    want_len = len;
    fx.peer_hook = drain_hook;
    HP_CHECK_EQ(hp__px_sendto(c, out, len, 0, NULL, 0), (long)len);
    for (int i = 0; i < 2000 && drained < len; i++)
        fx_drive(1);
    fx.peer_hook = NULL;
    HP_CHECK_EQ(drained, len);
    HP_CHECK_EQ(memcmp(in, out, len), 0);
    /* And back, read with MSG_WAITALL in one call. */
    size_t sent = 0;
    for (int i = 0; i < 100 && sent < 200000; i++) {
        long r = hp_tcp_send(p, out + sent, 200000 - sent);
        sent += r > 0 ? (size_t)r : 0;
        fx_drive(1);
    }
    HP_CHECK_EQ(sent, 200000u);
    HP_CHECK_EQ(hp__px_recvfrom(c, in, 200000, MSG_WAITALL, NULL, NULL), 200000);
    HP_CHECK_EQ(memcmp(in, out, 200000), 0);
    free(out);
    free(in);
    hp_tcp_close(p);
    fx_down();
}

HP_TEST(px_epipe_and_sigpipe)
{
    HP_REQUIRE(fx_up() == 0);
    signal(SIGPIPE, on_sigpipe);
    sigpipes = 0;
    /* Never connected: EPIPE and SIGPIPE (Linux), not with MSG_NOSIGNAL. */
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(hp__px_sendto(h, "x", 1, 0, NULL, 0), -EPIPE);
    HP_CHECK_EQ(sigpipes, 1);
    HP_CHECK_EQ(hp__px_sendto(h, "x", 1, MSG_NOSIGNAL, NULL, 0), -EPIPE);
    HP_CHECK_EQ(sigpipes, 1);
    char b[8];
    HP_CHECK_EQ(hp__px_recvfrom(h, b, sizeof b, 0, NULL, NULL), -ENOTCONN);
    /* The peer resets: the error once, then EOF; sending: EPIPE. */
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7003, &p);
    HP_REQUIRE(c >= 0);
    hp_tcp_abort(p);
    fx_drive(5);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), -ECONNRESET);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), 0);
    HP_CHECK_EQ(hp__px_sendto(c, "x", 1, 0, NULL, 0), -EPIPE);
    HP_CHECK_EQ(sigpipes, 2);
    fx_down();
}

HP_TEST(px_peer_close_then_eof)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, SOCK_NONBLOCK, 7004, &p);
    HP_REQUIRE(c >= 0);
    HP_CHECK_EQ(hp_tcp_send(p, "bye", 3), 3);
    hp_tcp_close(p);
    char b[8];
    long r;
    for (int i = 0; i < 100 && (r = hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL)) == -EAGAIN; i++)
        fx_drive(1);
    HP_CHECK_EQ(r, 3);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), 0);
    fx_down();
}

HP_TEST(px_rcvtimeo)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7005, &p);
    HP_REQUIRE(c >= 0);
    struct timeval tv = {0, 30000};
    HP_CHECK_EQ(hp__px_setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    char b[4];
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), -EAGAIN);
    hp_tcp_close(p);
    fx_down();
}

/* EINTR: a handler without SA_RESTART ends a blocking recv; with
 * SA_RESTART the recv goes on (no timeout set) and gets the data the peer
 * sends once the signal came. */
static void on_alarm(int s)
{
    (void)s;
    alarms++;
}

static struct hp_tcp_sock *late_sender;

static void send_after_alarm(void)
{
    if (alarms && late_sender) {
        hp_tcp_send(late_sender, "L", 1);
        late_sender = NULL;
    }
}

HP_TEST(px_eintr_and_restart)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7006, &p);
    HP_REQUIRE(c >= 0);
    /* Through the layer's sigaction (posix_entry.c is not linked here):
     * its trampoline counts the handlers run during a wait. */
    struct sigaction sa = {.sa_handler = on_alarm};
    hp__px_sigaction(SIGALRM, &sa, NULL);
    alarms = 0;
    ualarm(20000, 0);
    char b[4];
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), -EINTR);
    sa.sa_flags = SA_RESTART;
    hp__px_sigaction(SIGALRM, &sa, NULL);
    struct sigaction back;
    HP_CHECK_EQ(hp__px_sigaction(SIGALRM, NULL, &back), 0);
    HP_CHECK(back.sa_handler == on_alarm); /* the program's handler, not the trampoline */
    alarms = 0;
    late_sender = p;
    fx.peer_hook = send_after_alarm;
    ualarm(20000, 0);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), 1);
    HP_CHECK_EQ(b[0], 'L');
    fx.peer_hook = NULL;
    hp_tcp_close(p);
    fx_down();
}

/* read, recv and recvfrom without an address (hp__px_recv): a connected
 * TCP socket's bytes straight from the stack, everything else as recvmsg
 * answers it. */
HP_TEST(px_recv_direct_and_general)
{
    HP_REQUIRE(fx_up() == 0);
    char b[16];
    /* A listener, a socket never connected: ENOTCONN, blocking or not. */
    int l = hp__px_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = fx_sin(0, 7010);
    HP_REQUIRE(hp__px_bind(l, (struct sockaddr *)&a, sizeof a) == 0);
    HP_REQUIRE(hp__px_listen(l, 4) == 0);
    HP_CHECK_EQ(hp__px_recv(l, b, sizeof b, 0), -ENOTCONN);
    HP_CHECK_EQ(hp__px_recv(l, b, sizeof b, MSG_DONTWAIT), -ENOTCONN);
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(hp__px_recv(h, b, sizeof b, 0), -ENOTCONN);
    HP_CHECK_EQ(hp__px_recv(12345, b, sizeof b, 0), -EBADF);
    /* Connected, non-blocking, in an epoll set: nothing is EAGAIN; a
     * zero-length read is 0. */
    struct hp_tcp_sock *p;
    int c = fx_connected(4, SOCK_NONBLOCK, 7011, &p);
    HP_REQUIRE(c >= 0);
    int ep = hp__px_epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = c};
    HP_REQUIRE(hp__px_epoll_ctl(ep, EPOLL_CTL_ADD, c, &e) == 0);
    HP_CHECK_EQ(hp__px_recv(c, b, sizeof b, 0), -EAGAIN);
    HP_CHECK_EQ(hp__px_recv(c, b, 0, 0), 0);
    /* Data: as much as asked, in order. */
    HP_CHECK_EQ(hp_tcp_send(p, "abcdef", 6), 6);
    fx_drive(5);
    HP_CHECK_EQ(hp__px_recv(c, b, 2, 0), 2);
    HP_CHECK_EQ(memcmp(b, "ab", 2), 0);
    /* A peek takes the rest into the layer: the next read gives it from
     * there, not from the stack. */
    HP_CHECK_EQ(hp__px_recv(c, b, 2, MSG_PEEK), 2);
    HP_CHECK_EQ(memcmp(b, "cd", 2), 0);
    HP_CHECK_EQ(hp__px_recvfrom(c, b, sizeof b, 0, NULL, NULL), 4);
    HP_CHECK_EQ(memcmp(b, "cdef", 4), 0);
    HP_CHECK_EQ(hp__px_recv(c, b, sizeof b, MSG_DONTWAIT), -EAGAIN);
    /* The peer closes: the end, each time asked. */
    hp_tcp_close(p);
    fx_drive(5);
    HP_CHECK_EQ(hp__px_recv(c, b, sizeof b, 0), 0);
    HP_CHECK_EQ(hp__px_recv(c, b, sizeof b, 0), 0);
    HP_CHECK_EQ(hp__px_close(ep), 0);
    HP_CHECK_EQ(hp__px_close(c), 0);
    HP_CHECK_EQ(hp__px_close(h), 0);
    HP_CHECK_EQ(hp__px_close(l), 0);
    fx_down();
}

/* write, send and sendto without an address (hp__px_send): what the stack
 * takes at once, then the general way; a call that sent something
 * returns its count, never an error, and raises no SIGPIPE. */
HP_TEST(px_send_direct_and_general)
{
    HP_REQUIRE(fx_up() == 0);
    signal(SIGPIPE, on_sigpipe);
    sigpipes = 0;
    struct hp_tcp_sock *p;
    int c = fx_connected(4, SOCK_NONBLOCK, 7012, &p);
    HP_REQUIRE(c >= 0);
    char b[8];
    HP_CHECK_EQ(hp__px_send(c, "hello", 5, 0), 5);
    HP_CHECK_EQ(fx_peer_read(p, b, 5), 5);
    HP_CHECK_EQ(memcmp(b, "hello", 5), 0);
    HP_CHECK_EQ(hp__px_send(c, b, 0, 0), 0);
    /* More than the send buffer holds, the peer not reading: a part, then
     * (nothing acknowledged meanwhile) EAGAIN or a little more. */
    int sz = 16384;
    HP_CHECK_EQ(hp__px_setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz), 0);
    static char big[1 << 20];
    long n = hp__px_send(c, big, sizeof big, 0);
    HP_CHECK(n > 0 && n < (long)sizeof big);
    long k = hp__px_send(c, big, sizeof big, MSG_DONTWAIT);
    HP_CHECK(k == -EAGAIN || (k > 0 && k < (long)sizeof big));
    HP_CHECK_EQ(sigpipes, 0);
    /* The peer resets: errors, and SIGPIPE only without MSG_NOSIGNAL. */
    hp_tcp_abort(p);
    fx_drive(5);
    long e = hp__px_send(c, "x", 1, MSG_NOSIGNAL);
    HP_CHECK(e == -ECONNRESET || e == -EPIPE);
    HP_CHECK_EQ(sigpipes, 0);
    HP_CHECK_EQ(hp__px_send(c, "x", 1, 0), -EPIPE);
    HP_CHECK_EQ(sigpipes, 1);
    /* Flags the direct way does not take: MSG_OOB as Linux's TCP. */
    int h = hp__px_socket(AF_INET, SOCK_STREAM, 0);
    HP_CHECK_EQ(hp__px_send(h, "x", 1, MSG_OOB), -EOPNOTSUPP);
    HP_CHECK_EQ(hp__px_send(98765, "x", 1, 0), -EBADF);
    fx_down();
}

HP_TEST(px_udp)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_udp_sock *pu = hp_udp_open(fx.b, 4, NULL);
    struct hp_sockaddr pb = fx_hp(4, 1, 5353);
    HP_REQUIRE(hp_udp_bind(pu, &pb) == 0);
    int u = hp__px_socket(AF_INET, SOCK_DGRAM, 0);
    HP_CHECK_EQ(hp__px_sendto(u, "x", 1, 0, NULL, 0), -EDESTADDRREQ);
    struct sockaddr_in to = fx_sin(1, 5353);
    HP_CHECK_EQ(hp__px_sendto(u, "ping", 4, 0, (struct sockaddr *)&to, sizeof to), 4);
    static char big[70000];
    HP_CHECK_EQ(hp__px_sendto(u, big, 65508, 0, (struct sockaddr *)&to, sizeof to), -EMSGSIZE);
    fx_drive(3);
    char b[16];
    struct hp_sockaddr from;
    HP_CHECK_EQ(hp_udp_recvfrom(pu, b, sizeof b, &from), 4);
    /* Back: truncated into a short buffer, MSG_TRUNC gives the real size. */
    HP_CHECK_EQ(hp_udp_sendto(pu, "0123456789", 10, &from), 10);
    struct sockaddr_in src;
    socklen_t sl = sizeof src;
    HP_CHECK_EQ(hp__px_recvfrom(u, b, 4, MSG_PEEK, (struct sockaddr *)&src, &sl), 4);
    int n = 0;
    HP_CHECK_EQ(hp__px_ioctl(u, FIONREAD, &n), 0);
    HP_CHECK_EQ(n, 10);
    struct iovec v = {b, 4};
    struct msghdr m = {.msg_name = &src, .msg_namelen = sizeof src, .msg_iov = &v, .msg_iovlen = 1};
    HP_CHECK_EQ(hp__px_recvmsg(u, &m, MSG_TRUNC), 10);
    HP_CHECK(m.msg_flags & MSG_TRUNC);
    HP_CHECK_EQ(memcmp(b, "0123", 4), 0);
    HP_CHECK_EQ(ntohs(src.sin_port), 5353);
    /* Connected: plain send and recv, a peer name. */
    HP_CHECK_EQ(hp__px_connect(u, (struct sockaddr *)&to, sizeof to), 0);
    HP_CHECK_EQ(hp__px_sendto(u, "c", 1, 0, NULL, 0), 1);
    struct sockaddr_in pn;
    sl = sizeof pn;
    HP_CHECK_EQ(hp__px_getpeername(u, (struct sockaddr *)&pn, &sl), 0);
    HP_CHECK_EQ(ntohs(pn.sin_port), 5353);
    fx_drive(3);
    HP_CHECK_EQ(hp_udp_recvfrom(pu, b, sizeof b, &from), 1);
    HP_CHECK_EQ(hp__px_recvfrom(u, b, sizeof b, MSG_DONTWAIT, NULL, NULL), -EAGAIN);
    hp_udp_close(pu);
    fx_down();
}

HP_TEST(px_sendfile)
{
    HP_REQUIRE(fx_up() == 0);
    struct hp_tcp_sock *p;
    int c = fx_connected(4, 0, 7007, &p);
    HP_REQUIRE(c >= 0);
    char path[] = "/tmp/hp-px-sendfile.XXXXXX";
    int f = mkstemp(path);
    HP_REQUIRE(f >= 0);
    unlink(path);
    char data[100000];
    uint64_t seed = hp_test_seed();
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)hp_test_rand(&seed);
    HP_REQUIRE(write(f, data, sizeof data) == (ssize_t)sizeof data);
    off_t off = 1000;
    long n = hp__px_sendfile(c, f, &off, 50000);
    HP_CHECK_EQ(n, 50000);
    HP_CHECK_EQ(off, 51000);
    HP_CHECK_EQ(lseek(f, 0, SEEK_CUR), (off_t)sizeof data); /* the file position stays */
    char got[50000];
    HP_CHECK_EQ(fx_peer_read(p, got, sizeof got), (long)sizeof got);
    HP_CHECK_EQ(memcmp(got, data + 1000, sizeof got), 0);
    /* Without an offset: from the file position, which moves. */
    lseek(f, 99990, SEEK_SET);
    HP_CHECK_EQ(hp__px_sendfile(c, f, NULL, 100), 10);
    HP_CHECK_EQ(lseek(f, 0, SEEK_CUR), (off_t)sizeof data);
    HP_CHECK_EQ(fx_peer_read(p, got, 10), 10);
    HP_CHECK_EQ(memcmp(got, data + 99990, 10), 0);
    close(f);
    hp_tcp_close(p);
    fx_down();
}
