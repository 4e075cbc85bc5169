/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's side of `hotpath bench tcp-stream` and `tcp-rr`: TCP over loopback with two pinned threads, like iperf3 and netperf TCP_RR. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "tcp_kernel.h"
#include "tool.h"

struct side {
    int fd, cpu;
    bool tx; /* stream: the sender; rr: the client */
    size_t chunk;
    _Atomic int *phase;
    uint64_t count;       /* bytes or transactions */
    struct hb_window win; /* the measured interval, as this side saw it */
    int err;              /* errno of a failure, 0 */
};

static void set_timeouts(int fd)
{
    /* A peer that stops answering must not hang the benchmark. */
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* A connected pair over 127.0.0.1: fds[0] the connecting side, fds[1] the accepted one. */
static int loopback_pair(int fds[2], bool nodelay, char *why, size_t len)
{
    fds[0] = fds[1] = -1;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) < 0) {
        snprintf(why, len, "kernel: cannot listen on 127.0.0.1: %s", strerror(errno));
        if (l >= 0)
            close(l);
        return -1;
    }
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof a) < 0 ||
        (fds[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0) {
        snprintf(why, len, "kernel: cannot connect over loopback: %s", strerror(errno));
        close(l);
        if (fds[0] >= 0)
            close(fds[0]);
        fds[0] = -1;
        return -1;
    }
    close(l);
    int one = 1;
    for (int i = 0; i < 2; i++) {
        set_timeouts(fds[i]);
        if (nodelay)
            setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return 0;
}

/* The phase as the side sees it: true once the window closed. */
static bool observe(struct side *s)
{
    return hb_window_poll(&s->win, s->phase, &s->count, 1);
}

static void *stream_side(void *arg)
{
    struct side *s = arg;
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    char *buf = malloc(s->chunk);
    if (!buf) {
        s->err = ENOMEM;
        return NULL;
    }
    memset(buf, 0x5a, s->chunk);
    hb_window_init(&s->win);
    for (;;) {
        bool stop = observe(s);
        if (s->tx) {
            if (stop)
                break;
            ssize_t n = write(s->fd, buf, s->chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                s->err = n < 0 ? errno : EPIPE;
                break;
            }
            s->count += (uint64_t)n;
        } else {
            /* Keep reading to the end (the sender stops at HB_STOP). */
            ssize_t n = read(s->fd, buf, s->chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0)
                break;
            if (n < 0) {
                s->err = errno;
                break;
            }
            s->count += (uint64_t)n;
        }
    }
    if (s->tx)
        shutdown(s->fd, SHUT_WR);
    observe(s);
    free(buf);
    return NULL;
}

static void *rr_side(void *arg)
{
    struct side *s = arg;
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    hb_window_init(&s->win);
    char b = 'x';
    for (;;) {
        bool stop = observe(s);
        if (s->tx) {
            if (stop)
                break;
            if (write(s->fd, &b, 1) != 1 || read(s->fd, &b, 1) != 1) {
                s->err = errno ? errno : EPIPE;
                break;
            }
            s->count++;
        } else {
            ssize_t n = read(s->fd, &b, 1);
            if (n == 0)
                break;
            if (n != 1 || write(s->fd, &b, 1) != 1) {
                s->err = errno ? errno : EPIPE;
                break;
            }
            s->count++;
        }
    }
    if (s->tx)
        shutdown(s->fd, SHUT_WR);
    observe(s);
    return NULL;
}

static uint64_t retrans_of(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
        return 0;
    return ti.tcpi_total_retrans;
}

static int run_once(const struct tcpk_opts *o, struct tcpk_result *r, bool rr)
{
    memset(r, 0, sizeof *r);
    int fds[2];
    if (loopback_pair(fds, rr, r->why, sizeof r->why) < 0)
        return -1;
    _Atomic int phase;
    atomic_init(&phase, HB_SETUP);
    struct side a = {.fd = fds[0], .cpu = o->cpu_a, .tx = true, .chunk = o->chunk, .phase = &phase};
    struct side b = {.fd = fds[1], .cpu = o->cpu_b, .tx = false, .chunk = o->chunk, .phase = &phase};
    pthread_t ta, tb;
    void *(*fn)(void *) = rr ? rr_side : stream_side;
    if (pthread_create(&tb, NULL, fn, &b) != 0) {
        snprintf(r->why, sizeof r->why, "kernel: cannot start a thread");
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pthread_create(&ta, NULL, fn, &a) != 0) {
        snprintf(r->why, sizeof r->why, "kernel: cannot start a thread");
        shutdown(fds[0], SHUT_RDWR);
        pthread_join(tb, NULL);
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    hb_phases_run(&phase, o->warm_s, o->seconds, NULL, NULL);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    r->retrans = retrans_of(fds[0]);
    close(fds[0]);
    close(fds[1]);
    if (a.err || b.err) {
        snprintf(r->why, sizeof r->why, "kernel: %s failed: %s",
                 a.err ? (rr ? "the client" : "the sender") : (rr ? "the server" : "the receiver"),
                 strerror(a.err ? a.err : b.err));
        return -1;
    }
    /* Bytes as the receiver counted them; transactions as the client did. */
    const struct side *m_side = rr ? &a : &b;
    r->count = m_side->win.n[0];
    r->seconds = m_side->win.secs;
    r->cpu_a_s = a.win.cpu_s;
    r->cpu_b_s = b.win.cpu_s;
    if (!r->count || !(r->seconds > 0)) {
        snprintf(r->why, sizeof r->why, "kernel: nothing was measured");
        return -2;
    }
    return 0;
}

/* A window that passed while a busy machine kept the threads off their CPUs
 * measures nothing: try again a few times before giving up on the row. */
static int run(const struct tcpk_opts *o, struct tcpk_result *r, bool rr)
{
    int rc = -2;
    for (int attempt = 0; attempt < 4 && rc == -2; attempt++)
        rc = run_once(o, r, rr);
    return rc < 0 ? -1 : 0;
}

int tcpk_stream_run(const struct tcpk_opts *o, struct tcpk_result *r)
{
    return run(o, r, false);
}

int tcpk_rr_run(const struct tcpk_opts *o, struct tcpk_result *r)
{
    return run(o, r, true);
}
