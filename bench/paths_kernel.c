/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's side of `hotpath bench paths`: the receiver (sink) in the server's namespace, the kernel's sender in the client's, and a namespace's TCP counters. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_paths.h"

#define CHUNK    (128 * 1024)
#define SINK_BUF (256 * 1024)

uint64_t paths_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long long paths_ns_counter(const char *group, const char *name)
{
    /* TcpExt lines are in netstat, Tcp ones in snmp: a header line of
     * names, then a line of values, each starting with "Group:". */
    const char *file =
        strcmp(group, "Tcp") == 0 ? "/proc/thread-self/net/snmp" : "/proc/thread-self/net/netstat";
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    char head[4096], vals[4096], tag[64];
    snprintf(tag, sizeof tag, "%s:", group);
    long long v = -1;
    while (v < 0 && fgets(head, sizeof head, f) && fgets(vals, sizeof vals, f)) {
        if (strncmp(head, tag, strlen(tag)) != 0)
            continue;
        char *hs, *vs;
        char *h = strtok_r(head, " \n", &hs), *x = strtok_r(vals, " \n", &vs);
        while ((h = strtok_r(NULL, " \n", &hs)) && (x = strtok_r(NULL, " \n", &vs)))
            if (strcmp(h, name) == 0) {
                v = strtoll(x, NULL, 10);
                break;
            }
    }
    fclose(f);
    return v;
}

static void set_timeout(int fd, int opt, double s)
{
    struct timeval tv = {.tv_sec = (time_t)s, .tv_usec = (suseconds_t)((s - (time_t)s) * 1e6)};
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* ---- the sink ---------------------------------------------------------------------- */

/* Follow the bulk measurement the coordinator armed: a new generation
 * starts a window, HB_STOP ends it. */
static void sink_watch(struct paths_sink *s, unsigned *gen)
{
    _Atomic int *ph = atomic_load_explicit(&s->armed, memory_order_acquire);
    if (!ph)
        return;
    unsigned g = atomic_load_explicit(&s->gen, memory_order_acquire);
    if (g != *gen) {
        hb_window_init(&s->win);
        *gen = g;
    }
    uint64_t total = atomic_load_explicit(&s->total, memory_order_relaxed);
    if (hb_window_poll(&s->win, ph, &total, 1)) {
        atomic_store_explicit(&s->armed, NULL, memory_order_relaxed);
        atomic_store_explicit(&s->win_done, 1, memory_order_release);
    }
}

#define SINK_CONNS 32

/* Read what connection c has; false once it ended (EOF or an error). */
static bool sink_read(struct paths_sink *s, int c, uint8_t *buf)
{
    for (;;) {
        ssize_t n = recv(c, buf, SINK_BUF, MSG_DONTWAIT);
        if (n > 0) {
            atomic_fetch_add_explicit(&s->total, (uint64_t)n, memory_order_relaxed);
            atomic_store_explicit(&s->last_ns, paths_now_ns(), memory_order_release);
            continue;
        }
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
    }
}

/* Accept a connection into a free slot; when none is free, the oldest
 * goes (a connection whose sender vanished without a reset it sent, or
 * whose reset was lost, would otherwise stay forever). */
static void sink_accept(struct paths_sink *s, struct pollfd *p, int *next)
{
    int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return;
    int k = 1;
    while (k <= SINK_CONNS && p[k].fd >= 0)
        k++;
    if (k > SINK_CONNS) {
        k = 1 + (*next)++ % SINK_CONNS;
        close(p[k].fd);
        atomic_fetch_add_explicit(&s->conns, 1, memory_order_release);
    }
    p[k].fd = c;
    p[k].events = POLLIN;
}

/* Every connection, read as data comes, until stopped. */
static void sink_loop(struct paths_sink *s, uint8_t *buf)
{
    struct pollfd p[1 + SINK_CONNS];
    for (int k = 0; k <= SINK_CONNS; k++)
        p[k] = (struct pollfd){.fd = k ? -1 : s->lfd, .events = POLLIN};
    unsigned gen = 0;
    int next = 0;
    while (!hb_server_stopping(&s->srv)) {
        sink_watch(s, &gen);
        if (poll(p, 1 + SINK_CONNS, 20) <= 0)
            continue;
        for (int k = 1; k <= SINK_CONNS; k++)
            if (p[k].fd >= 0 && p[k].revents && !sink_read(s, p[k].fd, buf)) {
                close(p[k].fd);
                p[k].fd = -1;
                atomic_fetch_add_explicit(&s->conns, 1, memory_order_release);
            }
        if (p[0].revents & POLLIN)
            sink_accept(s, p, &next);
    }
    for (int k = 1; k <= SINK_CONNS; k++)
        if (p[k].fd >= 0)
            close(p[k].fd);
}

static void *sink_main(void *arg)
{
    struct paths_sink *s = arg;
    uint8_t *buf = malloc(SINK_BUF);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PATHS_PORT)};
    inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
    int one = 1;
    if (!buf || tool_ns_enter(s->ns) < 0 ||
        (s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(s->lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(s->lfd, 64) < 0) {
        atomic_store(&s->srv.state, -1);
        free(buf);
        return NULL;
    }
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    atomic_store(&s->srv.state, 1);
    sink_loop(s, buf);
    free(buf);
    return NULL;
}

int paths_sink_start(struct paths_sink *s, const char *ns, int cpu, char *why, size_t len)
{
    memset(s, 0, sizeof *s);
    s->ns = ns;
    s->cpu = cpu;
    s->lfd = -1;
    int rc = hb_server_start(&s->srv, sink_main, s, 5);
    if (rc < 0)
        snprintf(why, len, "the kernel receiver cannot listen on 198.18.0.2:%d in %s", PATHS_PORT,
                 ns);
    return rc;
}

void paths_sink_stop(struct paths_sink *s)
{
    hb_server_stop(&s->srv);
    if (s->lfd >= 0)
        close(s->lfd);
    s->lfd = -1;
}

void paths_sink_arm(struct paths_sink *s, _Atomic int *phase)
{
    atomic_store_explicit(&s->win_done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_release);
    atomic_store_explicit(&s->armed, phase, memory_order_release);
}

bool paths_sink_window(struct paths_sink *s, double timeout_s, struct hb_window *out)
{
    for (double end = tool_now_s() + timeout_s; tool_now_s() < end;) {
        if (atomic_load_explicit(&s->win_done, memory_order_acquire)) {
            *out = s->win;
            return out->measured;
        }
        hb_sleep(0.005);
    }
    atomic_store_explicit(&s->armed, NULL, memory_order_release);
    return false;
}

/* ---- the kernel's sender ------------------------------------------------------------- */

/* A connection to the sink; -1 with j->why. */
static int kconnect(struct paths_job *j)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PATHS_PORT)};
    inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(j->why, sizeof j->why, "socket: %s", strerror(errno));
        return -1;
    }
    set_timeout(fd, SO_SNDTIMEO, 10);
    set_timeout(fd, SO_RCVTIMEO, 30);
    /* Per socket: a namespace may only default to the algorithms the
     * machine allows unprivileged users (tcp_allowed_congestion_control). */
    const char *cc = j->sender == PS_KERNEL_RENO ? "reno" : "cubic";
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) < 0) {
        snprintf(j->why, sizeof j->why, "TCP_CONGESTION %s: %s", cc, strerror(errno));
        close(fd);
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        snprintf(j->why, sizeof j->why, "connect to 198.18.0.2:%d: %s", PATHS_PORT,
                 strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Close with a reset: what is still queued is of no interest. */
static void close_reset(int fd)
{
    struct linger l = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

static void kernel_bulk(struct paths_job *j, uint8_t *buf)
{
    int fd = kconnect(j);
    if (fd < 0)
        return;
    set_timeout(fd, SO_SNDTIMEO, 0.05);
    long long r0 = paths_ns_counter("Tcp", "RetransSegs"),
              t0 = paths_ns_counter("TcpExt", "TCPTimeouts");
    atomic_store(&j->ready, 1);
    while (atomic_load_explicit(j->phase, memory_order_acquire) != HB_STOP) {
        ssize_t n = send(fd, buf, CHUNK, MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(j->why, sizeof j->why, "send: %s", strerror(errno));
            close_reset(fd);
            return;
        }
    }
    j->retrans = (uint64_t)(paths_ns_counter("Tcp", "RetransSegs") - r0);
    j->rto = (uint64_t)(paths_ns_counter("TcpExt", "TCPTimeouts") - t0);
    struct tcp_info ti;
    socklen_t l = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) == 0) {
        j->sack = ti.tcpi_options & TCPI_OPT_SACK;
        j->ecn_ok = ti.tcpi_options & TCPI_OPT_ECN;
    }
    j->bulk_ok = true;
    close_reset(fd);
}

/* One short flow: connect, send PATHS_FLOW_BYTES, half-close, read to the
 * peer's FIN. Its completion time in ms, or -1. */
static double kernel_flow(struct paths_job *j, const uint8_t *buf)
{
    uint64_t t0 = paths_now_ns();
    int fd = kconnect(j);
    if (fd < 0)
        return -1;
    size_t sent = 0;
    while (sent < PATHS_FLOW_BYTES) {
        ssize_t n = send(fd, buf, PATHS_FLOW_BYTES - sent, MSG_NOSIGNAL);
        if (n <= 0 && errno != EINTR)
            break;
        sent += n > 0 ? (size_t)n : 0;
    }
    shutdown(fd, SHUT_WR);
    char c[64];
    ssize_t n;
    while ((n = recv(fd, c, sizeof c, 0)) > 0 || (n < 0 && errno == EINTR))
        ;
    uint64_t t1 = paths_now_ns();
    close(fd);
    if (sent < PATHS_FLOW_BYTES || n < 0) {
        snprintf(j->why, sizeof j->why, "a short flow failed: %s", strerror(errno));
        return -1;
    }
    return (double)(t1 - t0) / 1e6;
}

static void kernel_short(struct paths_job *j, const uint8_t *buf)
{
    long long r0 = paths_ns_counter("Tcp", "RetransSegs"),
              t0 = paths_ns_counter("TcpExt", "TCPTimeouts");
    for (int i = 0; i < j->flows && i < PATHS_MAX_FLOWS; i++) {
        double ms = kernel_flow(j, buf);
        if (ms < 0)
            j->failed++;
        else
            j->fct[j->nfct++] = ms;
    }
    j->short_retrans = (uint64_t)(paths_ns_counter("Tcp", "RetransSegs") - r0);
    j->short_rto = (uint64_t)(paths_ns_counter("TcpExt", "TCPTimeouts") - t0);
}

/* Wait (up to 3 s) until every byte sent on fd is acknowledged. */
static void wait_acked(int fd)
{
    for (double end = tool_now_s() + 3; tool_now_s() < end;) {
        struct tcp_info ti;
        socklen_t l = sizeof ti;
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) < 0 || ti.tcpi_unacked == 0)
            return;
        hb_sleep(0.0005);
    }
}

/* Wait (up to 3 s) until the sink read `target` bytes in all; the time it
 * read the last of them, or 0. */
uint64_t paths_sink_until(struct paths_sink *s, uint64_t target)
{
    for (double end = tool_now_s() + 3; tool_now_s() < end;) {
        if (atomic_load_explicit(&s->total, memory_order_acquire) >= target)
            return atomic_load_explicit(&s->last_ns, memory_order_acquire);
        hb_sleep(0.0002);
    }
    return 0;
}

/* One tail-loss trial on a new connection: a write of one flight (up to
 * 10 segments: the initial window), whose last segment the bridge loses. */
static void kernel_trial(struct paths_job *j, const uint8_t *buf)
{
    int fd = kconnect(j);
    if (fd < 0)
        return;
    int one = 1, mss = 0;
    struct tcp_info ti;
    socklen_t l = sizeof mss, tl = sizeof ti;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) < 0 || mss <= 0 || mss > 9000)
        mss = 1448;
    unsigned segs = getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0 ? ti.tcpi_snd_cwnd : 10;
    segs = segs < 2 ? 2 : segs > 10 ? 10 : segs;
    size_t burst = segs * (size_t)mss;
    uint64_t target = atomic_load(&j->sink->total) + burst;
    long long r0 = paths_ns_counter("TcpExt", "TCPTimeouts");
    uint64_t t0 = paths_now_ns();
    if (send(fd, buf, burst, MSG_NOSIGNAL) != (ssize_t)burst) {
        snprintf(j->why, sizeof j->why, "tail trial: send: %s", strerror(errno));
        close_reset(fd);
        return;
    }
    uint64_t done = paths_sink_until(j->sink, target);
    wait_acked(fd);
    j->burst_segs += segs;
    j->repair[j->ntrials] = done ? (double)(done - t0) / 1e6 : 3000;
    j->trial_rto[j->ntrials++] = paths_ns_counter("TcpExt", "TCPTimeouts") > r0;
    close(fd);
}

static void kernel_tail(struct paths_job *j, const uint8_t *buf)
{
    long long p0 = paths_ns_counter("TcpExt", "TCPLossProbes");
    for (int t = 0; t < j->trials && t < PATHS_MAX_TRIALS; t++) {
        int before = j->ntrials;
        kernel_trial(j, buf);
        if (j->ntrials == before)
            break;
        hb_sleep(0.01);
    }
    j->probes = (uint64_t)(paths_ns_counter("TcpExt", "TCPLossProbes") - p0);
}

void *paths_kernel_sender(void *arg)
{
    struct paths_job *j = arg;
    uint8_t *buf = calloc(1, CHUNK);
    if (!buf || tool_ns_enter(j->ns) < 0) {
        snprintf(j->why, sizeof j->why, "cannot enter %s", j->ns);
        atomic_store(&j->ready, -1);
        free(buf);
        return NULL;
    }
    if (j->cpu >= 0)
        tool_pin(j->cpu);
    if (j->phase)
        kernel_bulk(j, buf);
    if (j->phase && !j->bulk_ok)
        atomic_store(&j->ready, -1);
    else if (j->flows)
        kernel_short(j, buf);
    if (j->trials)
        kernel_tail(j, buf);
    free(buf);
    return NULL;
}
