/* SPDX-License-Identifier: BSD-3-Clause */
/* A small program on plain POSIX calls, built with _FORTIFY_SOURCE, that tests/apps/posix.sh runs under libhotpath-posix.so against kernel peers: blocking echo, epoll with a pipe beside the sockets, fork, threads, dup2, socket() errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 16384

static const char *host, *port;
/* Sizes the compiler cannot see: the fortified calls (__read_chk,
 * __recv_chk, __recvfrom_chk, __poll_chk) are made instead of the plain ones. */
static volatile size_t one_byte = 1;
static volatile nfds_t one_fd = 1;

static int fail(const char *what)
{
    printf("error: %s: %s\n", what, strerror(errno));
    return -1;
}

/* Byte i of a connection's stream. */
static unsigned char pat(size_t i, unsigned seed)
{
    return (unsigned char)((i * 2654435761u + seed) >> 13);
}

/* fail() for main's exit status. */
static int die(const char *what)
{
    fail(what);
    return 1;
}

static int dial(int type_flags)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        errno = EINVAL;
        return fail("getaddrinfo");
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | type_flags, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return fail("socket");
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc < 0 && errno != EINPROGRESS) {
        close(fd);
        return fail("connect");
    }
    return fd;
}

/* Blocking echo of n bytes: write a chunk, wait with select, read it back
 * with read() and recv(MSG_WAITALL) (both fortified here). */
static int echo_blocking(int fd, size_t n, unsigned seed)
{
    unsigned char out[CHUNK], in[CHUNK];
    for (size_t at = 0; at < n;) {
        size_t len = n - at < CHUNK ? n - at : CHUNK;
        for (size_t i = 0; i < len; i++)
            out[i] = pat(at + i, seed);
        if (write(fd, out, len) != (ssize_t)len)
            return fail("write");
        fd_set r;
        FD_ZERO(&r);
        FD_SET(fd, &r);
        struct timeval tv = {10, 0};
        if (select(fd + 1, &r, NULL, NULL, &tv) != 1)
            return fail("select");
        volatile size_t rest = len - 1;
        ssize_t got = read(fd, in, one_byte);
        if (got != 1 || recv(fd, in + 1, rest, MSG_WAITALL) != (ssize_t)(len - 1))
            return fail("read");
        if (memcmp(in, out, len) != 0) {
            printf("error: echo differs at byte %zu\n", at);
            return -1;
        }
        at += len;
    }
    return 0;
}

static int cmd_echo(size_t n)
{
    int fd = dial(0);
    if (fd < 0)
        return 1;
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
        return die("names");
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    if (poll(&p, one_fd, 5000) != 1 || !(p.revents & POLLOUT))
        return die("poll");
    int rc = echo_blocking(fd, n, 1);
    unsigned char b[16];
    if (rc == 0 && !(recvfrom(fd, b, one_byte, MSG_DONTWAIT, NULL, NULL) < 0 && errno == EAGAIN))
        rc = fail("recvfrom on an empty socket: not EAGAIN");
    close(fd);
    if (rc == 0)
        printf("ok: echo %zu bytes\n", n);
    return rc ? 1 : 0;
}

/* ---- epoll: many non-blocking connections, edge-triggered, and a pipe ---- */

struct conn {
    int fd;
    size_t sent, got, n;
};

static int conn_io(struct conn *c, unsigned seed)
{
    unsigned char b[CHUNK];
    while (c->sent < c->n) {
        size_t len = c->n - c->sent < CHUNK ? c->n - c->sent : CHUNK;
        for (size_t i = 0; i < len; i++)
            b[i] = pat(c->sent + i, seed);
        ssize_t w = send(c->fd, b, len, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == ENOTCONN))
            break;
        if (w <= 0)
            return fail("send");
        c->sent += (size_t)w;
    }
    for (;;) {
        ssize_t r = recv(c->fd, b, sizeof b, 0);
        if (r < 0 && errno == EAGAIN)
            return 0;
        if (r <= 0)
            return r == 0 ? (errno = EPIPE, fail("recv (early end)")) : fail("recv");
        for (ssize_t i = 0; i < r; i++)
            if (b[i] != pat(c->got + (size_t)i, seed)) {
                printf("error: epoll echo differs\n");
                return -1;
            }
        c->got += (size_t)r;
    }
}

static int cmd_epoll(int nconn, size_t n)
{
    int ep = epoll_create1(EPOLL_CLOEXEC), pp[2];
    if (ep < 0 || pipe(pp) < 0)
        return die("epoll/pipe");
    struct conn *c = calloc((size_t)nconn, sizeof *c);
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = (uint64_t)-1};
    epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &e);
    for (int i = 0; i < nconn; i++) {
        if ((c[i].fd = dial(SOCK_NONBLOCK)) < 0)
            return 1;
        c[i].n = n;
        e = (struct epoll_event){.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP,
                                 .data.u64 = (uint64_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &e) < 0)
            return die("epoll_ctl");
    }
    int done = 0, pipe_seen = 0;
    if (write(pp[1], "p", 1) != 1)
        return 1;
    while (done < nconn) {
        struct epoll_event ev[16];
        int k = epoll_wait(ep, ev, 16, 10000);
        if (k <= 0)
            return die("epoll_wait (timed out)");
        for (int j = 0; j < k; j++) {
            if (ev[j].data.u64 == (uint64_t)-1) {
                char x;
                pipe_seen += read(pp[0], &x, 1) == 1;
                continue;
            }
            struct conn *cc = &c[ev[j].data.u64];
            bool was = cc->got == cc->n;
            if (conn_io(cc, 7) < 0)
                return 1;
            done += !was && cc->got == cc->n;
        }
    }
    for (int i = 0; i < nconn; i++)
        close(c[i].fd);
    printf("ok: epoll %d connections x %zu bytes, pipe %d\n", nconn, n, pipe_seen);
    return pipe_seen == 1 ? 0 : 1;
}

/* ---- fork, threads, dup2, socket ---------------------------------------------- */

static int cmd_fork(void)
{
    int fd = dial(0);
    if (fd < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        bad += !(write(fd, "x", 1) < 0 && errno == EBADFD);
        bad += !(socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EAFNOSUPPORT);
        bad += close(fd) != 0;
        int pp[2];
        char k;
        bad += pipe(pp) != 0 || write(pp[1], "k", 1) != 1 || read(pp[0], &k, 1) != 1;
        _exit(bad);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("error: the fork child saw %d unexpected results\n", WEXITSTATUS(st));
        return 1;
    }
    int rc = echo_blocking(fd, 100000, 3);
    close(fd);
    if (rc == 0)
        printf("ok: fork child EBADFD / EAFNOSUPPORT, parent echo after it\n");
    return rc ? 1 : 0;
}

static void *thread_echo(void *arg)
{
    size_t n = *(size_t *)arg;
    int fd = dial(0);
    long bad = fd < 0 || echo_blocking(fd, n, (unsigned)fd) < 0;
    if (fd >= 0)
        close(fd);
    return (void *)bad;
}

static int cmd_threads(int nt, size_t n)
{
    pthread_t t[16];
    nt = nt > 16 ? 16 : nt;
    for (int i = 0; i < nt; i++)
        pthread_create(&t[i], NULL, thread_echo, &n);
    long bad = 0;
    for (int i = 0; i < nt; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    if (!bad)
        printf("ok: %d threads x %zu bytes\n", nt, n);
    return bad ? 1 : 0;
}

static int cmd_dup2(void)
{
    int fd = dial(0);
    if (fd < 0 || dup2(fd, 200) != 200 || close(fd) != 0)
        return 1;
    if (echo_blocking(200, 50000, 5) < 0)
        return 1;
    FILE *f = fopen("/dev/null", "w");
    if (!f || dup2(fileno(f), 200) != 200 || write(200, "x", 1) != 1)
        return die("dup2 over the socket");
    fclose(f);
    close(200);
    printf("ok: dup2\n");
    return 0;
}

static int cmd_socket(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        int e = errno;
        printf("errno %d %s\n", e, strerror(e));
        return 1;
    }
    printf("ok: socket %d\n", fd);
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "socket") == 0)
        return cmd_socket();
    if (argc < 4) {
        fprintf(stderr,
                "usage: probe socket | echo|epoll|fork|threads|dup2 HOST PORT [N] [BYTES]\n");
        return 2;
    }
    host = argv[2];
    port = argv[3];
    const char *c = argv[1];
    if (strcmp(c, "echo") == 0)
        return cmd_echo(argc > 4 ? strtoul(argv[4], NULL, 0) : 1000000);
    if (strcmp(c, "epoll") == 0)
        return cmd_epoll(argc > 4 ? atoi(argv[4]) : 8,
                         argc > 5 ? strtoul(argv[5], NULL, 0) : 200000);
    if (strcmp(c, "fork") == 0)
        return cmd_fork();
    if (strcmp(c, "threads") == 0)
        return cmd_threads(argc > 4 ? atoi(argv[4]) : 4,
                           argc > 5 ? strtoul(argv[5], NULL, 0) : 200000);
    if (strcmp(c, "dup2") == 0)
        return cmd_dup2();
    fprintf(stderr, "probe: unknown command %s\n", c);
    return 2;
}
