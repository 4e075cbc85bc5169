/* SPDX-License-Identifier: BSD-3-Clause */
/* The kernel's side of `hotpath bench udp-echo` over veth: a recvmmsg/sendmmsg echo server, a windowed client, CPU accounting. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <hotpath/err.h>

#include "harness.h"
#include "tool.h"
#include "udp_kernel.h"

#define PF_KTHREAD_FLAG 0x00200000u /* PF_KTHREAD in /proc/PID/stat's flags */
#define SOCK_BUF        (4 << 20)
#define STALL_S         0.02
#define MAX_DGRAM       2048

static double clock_s(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) < 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- CPU accounting --------------------------------------------------- */

double udpk_tick_s(void)
{
    long hz = sysconf(_SC_CLK_TCK);
    return 1.0 / (double)(hz > 0 ? hz : 100);
}

int udpk_cpustat_read(int cpu, struct udpk_cpustat *out)
{
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return -errno;
    char want[16], line[512];
    int wl = snprintf(want, sizeof want, "cpu%d ", cpu);
    int rc = -ENOENT;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, want, (size_t)wl) != 0)
            continue;
        unsigned long long v[8] = {0};
        /* user nice system idle iowait irq softirq steal (guest time is
         * already inside user and nice) */
        if (sscanf(line + wl, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) >= 7) {
            out->busy = v[0] + v[1] + v[2] + v[5] + v[6];
            out->steal = v[7];
            out->total = out->busy + v[3] + v[4] + v[7];
            rc = 0;
        }
        break;
    }
    fclose(f);
    return rc;
}

double udpk_foreign_cpu_s(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    pid_t self = getpid();
    unsigned long long ticks = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        long pid = strtol(e->d_name, NULL, 10);
        if (pid == (long)self)
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* The command name may hold spaces and parentheses: fields start
         * after the last ')'. Then: state ppid pgrp session tty tpgid flags
         * minflt cminflt majflt cmajflt utime stime. */
        char *p = strrchr(buf, ')');
        if (!p)
            continue;
        char state;
        long ppid, pgrp, session, tty, tpgid;
        unsigned long flags, minflt, cminflt, majflt, cmajflt, ut, st;
        if (sscanf(p + 1, " %c %ld %ld %ld %ld %ld %lu %lu %lu %lu %lu %lu %lu", &state, &ppid,
                   &pgrp, &session, &tty, &tpgid, &flags, &minflt, &cminflt, &majflt, &cmajflt, &ut,
                   &st) != 13)
            continue;
        if (flags & PF_KTHREAD_FLAG)
            continue;
        ticks += ut + st;
    }
    closedir(d);
    return (double)ticks * udpk_tick_s();
}

/* ---- sockets -------------------------------------------------------------- */

static void big_buffers(int fd)
{
    int v = SOCK_BUF;
    /* FORCE goes past net.core.rmem_max (root); plain SO_RCVBUF otherwise. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

static void set_rcvtimeo(int fd, long usec)
{
    struct timeval tv = {.tv_sec = usec / 1000000, .tv_usec = usec % 1000000};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static struct sockaddr_in sin4(const uint8_t a[4], uint16_t port)
{
    struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(port)};
    memcpy(&s.sin_addr, a, 4);
    return s;
}

/* ---- the echo server ---------------------------------------------------- */

struct srv_bufs {
    struct mmsghdr m[UDPK_BATCH];
    struct iovec iov[UDPK_BATCH];
    struct sockaddr_in from[UDPK_BATCH];
    unsigned char data[UDPK_BATCH][MAX_DGRAM];
};

static void *server_main(void *arg)
{
    struct udpk_server *s = arg;
    struct srv_bufs *b = calloc(1, sizeof *b);
    int fd = -1, rc;
    if (!b) {
        snprintf(s->why, sizeof s->why, "kernel server: out of memory");
        goto fail;
    }
    if ((rc = tool_netns_enter(s->ns, s->side)) < 0) {
        snprintf(s->why, sizeof s->why, "kernel server: cannot enter %s: %s", s->ns->ns[s->side],
                 hp_strerror(rc));
        goto fail;
    }
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in local = sin4(s->addr, s->port);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
        snprintf(s->why, sizeof s->why, "kernel server: cannot bind %u.%u.%u.%u:%u: %s", s->addr[0],
                 s->addr[1], s->addr[2], s->addr[3], s->port, strerror(errno));
        goto fail;
    }
    big_buffers(fd);
    set_rcvtimeo(fd, 50000); /* to look at the stop flag */
    for (int i = 0; i < UDPK_BATCH; i++) {
        b->iov[i].iov_base = b->data[i];
        b->m[i].msg_hdr.msg_iov = &b->iov[i];
        b->m[i].msg_hdr.msg_iovlen = 1;
        b->m[i].msg_hdr.msg_name = &b->from[i];
    }
    atomic_store(&s->srv.state, 1);
    uint64_t echoed = 0;
    while (!hb_server_stopping(&s->srv)) {
        for (int i = 0; i < UDPK_BATCH; i++) {
            b->iov[i].iov_len = MAX_DGRAM;
            b->m[i].msg_hdr.msg_namelen = sizeof b->from[i];
        }
        /* Block for the first datagram, then take what is queued. */
        int n = recvmmsg(fd, b->m, UDPK_BATCH, MSG_WAITFORONE, NULL);
        if (n <= 0)
            continue; /* the timeout, a signal, or an error to look past */
        for (int i = 0; i < n; i++)
            b->iov[i].iov_len = b->m[i].msg_len;
        int sent = 0;
        while (sent < n) {
            int k = sendmmsg(fd, b->m + sent, (unsigned)(n - sent), 0);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0)
                break; /* dropped, as a kernel that cannot queue drops */
            sent += k;
        }
        echoed += (uint64_t)sent;
    }
    s->echoed = echoed;
    close(fd);
    free(b);
    return NULL;
fail:
    if (fd >= 0)
        close(fd);
    free(b);
    atomic_store(&s->srv.state, -1);
    return NULL;
}

int udpk_server_start(struct udpk_server *s)
{
    s->echoed = 0;
    s->why[0] = '\0';
    int rc = hb_server_start(&s->srv, server_main, s, 5);
    if (rc == 0)
        return 0;
    if (!s->why[0])
        snprintf(s->why, sizeof s->why, "kernel server: %s",
                 rc == -ETIMEDOUT ? "not ready within 5 s" : "cannot start a thread");
    return -1;
}

void udpk_server_stop(struct udpk_server *s)
{
    hb_server_stop(&s->srv);
}

/* ---- the client ------------------------------------------------------------ */

struct cli_bufs {
    struct mmsghdr tx[UDPK_BATCH], rx[UDPK_BATCH];
    struct iovec txv[UDPK_BATCH], rxv[UDPK_BATCH];
    unsigned char payload[MAX_DGRAM];
    unsigned char data[UDPK_BATCH][MAX_DGRAM];
};

struct snap {
    double t, foreign, srv_thread, cli_thread;
    struct udpk_cpustat srv, cli;
};

static void take(const struct udpk_client_opts *o, struct snap *s, bool start)
{
    if (start)
        s->foreign = udpk_foreign_cpu_s();
    else
        s->t = tool_now_s();
    udpk_cpustat_read(o->cpu_server, &s->srv);
    udpk_cpustat_read(o->cpu, &s->cli);
    s->srv_thread = o->has_server_clock ? clock_s(o->server_clock) : 0;
    s->cli_thread = clock_s(CLOCK_THREAD_CPUTIME_ID);
    if (start)
        s->t = tool_now_s();
    else
        s->foreign = udpk_foreign_cpu_s();
}

/* The socket, bound and connected, and the message vectors. -1 with r->why. */
static int client_socket(const struct udpk_client_opts *o, struct cli_bufs *b,
                         struct udpk_client_result *r)
{
    struct sockaddr_in src = sin4(o->src, 0), dst = sin4(o->dst, o->port);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof src) < 0 ||
        connect(fd, (struct sockaddr *)&dst, sizeof dst) < 0) {
        snprintf(r->why, sizeof r->why, "client: socket: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    big_buffers(fd);
    set_rcvtimeo(fd, (long)(STALL_S * 1e6));
    for (unsigned i = 0; i < sizeof b->payload; i++)
        b->payload[i] = (unsigned char)i;
    for (int i = 0; i < UDPK_BATCH; i++) {
        b->txv[i] = (struct iovec){.iov_base = b->payload, .iov_len = o->payload};
        b->tx[i].msg_hdr.msg_iov = &b->txv[i];
        b->tx[i].msg_hdr.msg_iovlen = 1;
        b->rxv[i] = (struct iovec){.iov_base = b->data[i], .iov_len = MAX_DGRAM};
        b->rx[i].msg_hdr.msg_iov = &b->rxv[i];
        b->rx[i].msg_hdr.msg_iovlen = 1;
    }
    return fd;
}

/* One datagram at a time until one comes back (the server resolves our
 * address first), within 5 s. */
static bool first_echo(int fd, const struct udpk_client_opts *o, const struct cli_bufs *b)
{
    double deadline = tool_now_s() + 5;
    while (tool_now_s() < deadline) {
        (void)send(fd, b->payload, o->payload, 0);
        char one[MAX_DGRAM];
        if (recv(fd, one, sizeof one, 0) == (ssize_t)o->payload)
            return true;
    }
    return false;
}

struct window_counts {
    unsigned in_flight;
    uint64_t echoes, lost, refused;
};

/* Top the window up with sendmmsg, then a blocking recvmmsg. 0, or -1
 * with r->why on an error that is not a stall or a refusal. */
static int client_step(int fd, const struct udpk_client_opts *o, struct cli_bufs *b,
                       struct window_counts *w, struct udpk_client_result *r)
{
    while (w->in_flight < o->window) {
        unsigned want = o->window - w->in_flight;
        int k = sendmmsg(fd, b->tx, want < UDPK_BATCH ? want : UDPK_BATCH, MSG_DONTWAIT);
        if (k <= 0) {
            if (k < 0 && errno == ECONNREFUSED)
                w->refused++;
            break;
        }
        w->in_flight += (unsigned)k;
    }
    int n = recvmmsg(fd, b->rx, UDPK_BATCH, MSG_WAITFORONE, NULL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            /* Stalled: whatever is in flight is not coming back. */
            w->lost += w->in_flight;
            w->in_flight = 0;
        } else if (errno == ECONNREFUSED) {
            w->refused++;
        } else if (errno != EINTR) {
            snprintf(r->why, sizeof r->why, "client: recvmmsg: %s", strerror(errno));
            return -1;
        }
        return 0;
    }
    for (int i = 0; i < n; i++)
        w->echoes += b->rx[i].msg_len == o->payload;
    w->in_flight = (unsigned)n < w->in_flight ? w->in_flight - (unsigned)n : 0;
    return 0;
}

static void client_result(const struct udpk_client_opts *o, const struct window_counts *w,
                          const struct snap *s0, const struct snap *s1,
                          struct udpk_client_result *r)
{
    (void)o;
    double tick = udpk_tick_s();
    r->echoes = w->echoes;
    r->lost = w->lost;
    r->refused = w->refused;
    r->seconds = s1->t - s0->t;
    r->server_busy_s = (double)(s1->srv.busy - s0->srv.busy) * tick;
    r->client_busy_s = (double)(s1->cli.busy - s0->cli.busy) * tick;
    r->server_thread_s = s1->srv_thread - s0->srv_thread;
    r->client_thread_s = s1->cli_thread - s0->cli_thread;
    r->foreign_s = s1->foreign > s0->foreign ? s1->foreign - s0->foreign : 0;
    r->steal_s = (double)(s1->srv.steal - s0->srv.steal + s1->cli.steal - s0->cli.steal) * tick;
}

int udpk_client_run(const struct udpk_client_opts *o, struct udpk_client_result *r)
{
    memset(r, 0, sizeof *r);
    if (o->window < 1 || o->window > 4096 || o->payload > 1472 || o->cpu < 0 || o->cpu_server < 0) {
        snprintf(r->why, sizeof r->why, "client: window 1..4096, payload 0..1472, two CPUs");
        return -1;
    }
    struct cli_bufs *b = calloc(1, sizeof *b);
    int rc = b ? tool_netns_enter(o->ns, o->side) : -ENOMEM;
    if (rc < 0) {
        snprintf(r->why, sizeof r->why, "client: cannot enter %s: %s", o->ns->ns[o->side],
                 hp_strerror(rc));
        free(b);
        return -1;
    }
    tool_pin(o->cpu);
    int fd = client_socket(o, b, r);
    if (fd >= 0 && !first_echo(fd, o, b)) {
        snprintf(r->why, sizeof r->why, "no echo within 5 s");
        rc = -1;
    }
    /* Then the window, unmeasured for warm_s, measured for seconds. */
    struct window_counts w = {0};
    struct snap s0 = {0}, s1 = {0};
    struct hb_clock c;
    hb_clock_start(&c, o->warm_s, o->seconds, 1);
    while (fd >= 0 && rc == 0) {
        int tick = hb_clock_tick(&c);
        if (tick == HB_TICK_OPEN) {
            take(o, &s0, true);
            w = (struct window_counts){.in_flight = w.in_flight};
        } else if (tick == HB_TICK_CLOSE) {
            take(o, &s1, false);
            client_result(o, &w, &s0, &s1, r);
            break;
        }
        rc = client_step(fd, o, b, &w, r);
    }
    if (fd >= 0)
        close(fd);
    free(b);
    return fd < 0 ? -1 : rc;
}
