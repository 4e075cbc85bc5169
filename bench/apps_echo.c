/* SPDX-License-Identifier: BSD-3-Clause */
/* The two TCP echo servers of `hotpath bench apps` that do the same work, one on hotpath's event loop and one on plain POSIX calls (run under libhotpath-posix.so), and their kernel-socket client. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/loop.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "apps_echo.h"
#include "tool.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void catch_term(void)
{
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* ---- on plain POSIX calls ------------------------------------------------------ */

static int listen_on(uint16_t port)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1024) < 0) {
        fprintf(stderr, "apps echo: cannot listen on port %u: %s\n", port, strerror(errno));
        return -1;
    }
    return l;
}

/* Echo what a connection has; false when it is over. */
static bool posix_echo_one(int fd)
{
    char b[4096];
    for (;;) {
        ssize_t n = read(fd, b, sizeof b);
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n <= 0)
            return false;
        /* Messages are small: the send buffer takes them (a short write ends the connection). */
        if (write(fd, b, (size_t)n) != n)
            return false;
    }
}

int apps_echo_posix(uint16_t port)
{
    catch_term();
    int l = listen_on(port), ep = epoll_create1(0);
    if (l < 0 || ep < 0)
        return 1;
    struct epoll_event e = {.events = EPOLLIN, .data.fd = l};
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &e);
    printf("ready\n");
    fflush(stdout);
    while (!stop) {
        struct epoll_event ev[64];
        int n = epoll_wait(ep, ev, 64, 200);
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            if (fd == l) {
                int c;
                while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    e = (struct epoll_event){.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
                }
            } else if (!posix_echo_one(fd)) {
                close(fd);
            }
        }
    }
    close(ep);
    close(l);
    return 0;
}

/* ---- on the event loop ---------------------------------------------------------- */

/* The user pointer of the listener; each connection's is its struct conn. */
static char listener_tag;

struct conn {
    struct hp_tcp_sock *t;
};

/* Echo what c has; false when it is over. */
static bool native_echo_one(struct hp_tcp_sock *c)
{
    char b[4096];
    for (;;) {
        long n = hp_tcp_recv(c, b, sizeof b);
        if (n == -EAGAIN)
            return true;
        if (n <= 0)
            return false;
        if (hp_tcp_send(c, b, (size_t)n) != n)
            return false;
    }
}

static void native_accept(struct hp_tcp_sock *l)
{
    for (;;) {
        struct conn *c = malloc(sizeof *c);
        if (!c || !(c->t = hp_tcp_accept(l, c, NULL))) {
            free(c);
            return;
        }
        hp_tcp_setopt(c->t, HP_TCP_OPT_NODELAY, 1);
    }
}

static int native_run(struct hp_loop *loop, struct hp_tcp_sock *l)
{
    struct hp_loop_event ev[64];
    while (!stop) {
        int n = hp_loop_wait(loop, ev, 64, 200);
        if (n < 0 && n != -EINTR)
            return 1;
        for (int i = 0; i < n; i++) {
            if (ev[i].kind != HP_LOOP_SOCK)
                continue;
            if (ev[i].user == &listener_tag) {
                native_accept(l);
                continue;
            }
            struct conn *c = ev[i].user;
            if (!native_echo_one(c->t)) {
                hp_tcp_close(c->t);
                free(c);
            }
        }
    }
    return 0;
}

int apps_echo_native(const char *kind, const char *iface, const char *ip, uint16_t port)
{
    catch_term();
    struct hp_link_config lc = {.iface = iface,
                                .flags = strcmp(kind, "afxdp") == 0 ? HP_LINK_F_COPY : 0,
                                .frame_size = 2048};
    struct hp_link *link = hp_link_open(kind, &lc);
    struct hp_stack_config sc = {.name = "echo", .flags = HP_STACK_F_NO_DAD};
    struct hp_stack *s = link ? hp_stack_create(&sc) : NULL;
    uint8_t a[4];
    inet_pton(AF_INET, ip, a);
    int ifx = s ? hp_stack_add_iface(s, link) : -1;
    /* No busy-polling, here and for the POSIX echo (--busy-poll 0): the
     * CPU each request costs is then the work, not the spinning between. */
    struct hp_loop_config lcfg = {.flags = HP_LOOP_F_NO_SPIN};
    struct hp_loop *loop =
        ifx >= 0 && hp_stack_add_addr(s, ifx, 4, a, 24) == 0 ? hp_loop_create(s, &lcfg) : NULL;
    struct hp_tcp_sock *l = loop ? hp_tcp_open(s, 4, &listener_tag) : NULL;
    struct hp_sockaddr any = {.family = 4, .port = port};
    if (!l || hp_tcp_bind(l, &any) < 0 || hp_tcp_listen(l, 1024) < 0) {
        fprintf(stderr, "apps echo: cannot run on %s %s: %s\n", kind, iface,
                link ? "stack" : hp_link_error());
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    int rc = native_run(loop, l);
    hp_tcp_close(l);
    hp_loop_destroy(loop);
    hp_stack_destroy(s);
    hp_link_close(link);
    return rc;
}

/* ---- the client (kernel sockets) --------------------------------------------------- */

struct cli_conn {
    int fd;
    size_t got;
};

static int cli_open(const char *ip, uint16_t port, int ep, struct cli_conn *c, const char *msg,
                    size_t len)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    int one = 1;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0)
        return -errno;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e);
    return write(c->fd, msg, len) == (ssize_t)len ? 0 : -EIO;
}

/* A reply (part) arrived: when whole, send the next request. 1 per
 * transaction completed, 0, or -1 when the connection failed. */
static int cli_step(struct cli_conn *c, const char *msg, size_t len)
{
    char b[4096];
    ssize_t n = read(c->fd, b, sizeof b);
    if (n <= 0)
        return n < 0 && errno == EAGAIN ? 0 : -1;
    c->got += (size_t)n;
    if (c->got < len)
        return 0;
    c->got = 0;
    return write(c->fd, msg, len) == (ssize_t)len ? 1 : -1;
}

int apps_echo_client(const char *ip, uint16_t port, int conns, size_t len, double secs,
                     uint64_t *txns)
{
    char msg[1024];
    if (len > sizeof msg || conns < 1 || conns > 1024)
        return -EINVAL;
    memset(msg, 'e', len);
    int ep = epoll_create1(0);
    struct cli_conn *c = calloc((size_t)conns, sizeof *c);
    if (ep < 0 || !c)
        return -ENOMEM;
    int rc = 0;
    for (int i = 0; i < conns && rc == 0; i++)
        rc = cli_open(ip, port, ep, &c[i], msg, len);
    double end = tool_now_s() + secs;
    *txns = 0;
    while (rc == 0 && tool_now_s() < end) {
        struct epoll_event ev[64];
        int n = epoll_wait(ep, ev, 64, 100);
        for (int i = 0; i < n && rc == 0; i++) {
            int r = cli_step(ev[i].data.ptr, msg, len);
            if (r < 0)
                rc = -EPIPE;
            *txns += r > 0;
        }
    }
    for (int i = 0; i < conns; i++)
        if (c[i].fd > 0)
            close(c[i].fd);
    free(c);
    close(ep);
    return rc;
}
