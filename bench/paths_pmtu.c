/* SPDX-License-Identifier: BSD-3-Clause */
/* Path MTU in `hotpath bench paths`: a kernel echo server behind two kernel routers joined by a 1280-byte link, 10 MB echoed by the kernel's client and by `hotpath connect`, with ICMP passing and with every ICMP error dropped. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_paths.h"
#include "tcp_app.h"

#define NARROW_MTU  1280
#define NARROW_MBIT 100
#define ECHO_PORT   7
#define BUF         (256 * 1024)

static const char *const server_addr[2] = {"198.18.3.1", "2001:2:0:3::1"};

/* ---- the kernel's echo server -------------------------------------------------------- */

#define ECHO_CONNS 8

/* A connection of the echo server: what it read and has not written back. */
struct echo_conn {
    int fd;
    size_t have, off;
    uint8_t *buf;
};

struct echo {
    struct hb_server srv;
    const char *ns;
    int cpu, lfd;
    struct echo_conn c[ECHO_CONNS];
    int next; /* the slot to reuse when all are taken */
};

static void echo_close(struct echo_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->have = c->off = 0;
}

/* Write back what is pending, then read more once it all went; false once
 * the connection ended. A connection whose client vanished stays until
 * its slot is needed: the others are served meanwhile. */
static bool echo_step(struct echo_conn *c)
{
    while (c->off < c->have) {
        ssize_t w = send(c->fd, c->buf + c->off, c->have - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c->off += (size_t)w;
    }
    ssize_t n = recv(c->fd, c->buf, BUF, MSG_DONTWAIT);
    if (n > 0) {
        c->have = (size_t)n;
        c->off = 0;
        return echo_step(c);
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

static void echo_accept(struct echo *e)
{
    int fd = accept4(e->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    int k = 0;
    while (k < ECHO_CONNS && e->c[k].fd >= 0)
        k++;
    if (k == ECHO_CONNS) {
        k = e->next++ % ECHO_CONNS;
        echo_close(&e->c[k]);
    }
    e->c[k].fd = fd;
}

static void echo_loop(struct echo *e)
{
    while (!hb_server_stopping(&e->srv)) {
        struct pollfd p[1 + ECHO_CONNS] = {{.fd = e->lfd, .events = POLLIN}};
        for (int k = 0; k < ECHO_CONNS; k++)
            p[1 + k] =
                (struct pollfd){.fd = e->c[k].fd,
                                .events = (short)(e->c[k].off < e->c[k].have ? POLLOUT : POLLIN)};
        if (poll(p, 1 + ECHO_CONNS, 20) <= 0)
            continue;
        for (int k = 0; k < ECHO_CONNS; k++)
            if (e->c[k].fd >= 0 && p[1 + k].revents && !echo_step(&e->c[k]))
                echo_close(&e->c[k]);
        if (p[0].revents & POLLIN)
            echo_accept(e);
    }
}

static void *echo_main(void *arg)
{
    struct echo *e = arg;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(ECHO_PORT)};
    int one = 1, zero = 0;
    bool ok = true;
    for (int k = 0; k < ECHO_CONNS; k++) {
        e->c[k].fd = -1;
        ok = ok && (e->c[k].buf = malloc(BUF)) != NULL;
    }
    if (!ok || tool_ns_enter(e->ns) < 0 ||
        (e->lfd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(e->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        setsockopt(e->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) < 0 ||
        bind(e->lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(e->lfd, 16) < 0) {
        atomic_store(&e->srv.state, -1);
    } else {
        if (e->cpu >= 0)
            tool_pin(e->cpu);
        atomic_store(&e->srv.state, 1);
        echo_loop(e);
    }
    for (int k = 0; k < ECHO_CONNS; k++) {
        echo_close(&e->c[k]);
        free(e->c[k].buf);
    }
    return NULL;
}

/* ---- the kernel's client ------------------------------------------------------------- */

struct kclient {
    const char *ns;
    int cpu, v6;
    const uint8_t *data; /* the pattern, bytes long */
    uint64_t bytes;
    double secs;
    bool verified;
    uint64_t retrans, rto;
    char why[200];
};

static int kc_connect(struct kclient *k)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    if (k->v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(ECHO_PORT);
        inet_pton(AF_INET6, server_addr[1], &a->sin6_addr);
        sl = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons(ECHO_PORT);
        inet_pton(AF_INET, server_addr[0], &a->sin_addr);
        sl = sizeof *a;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {.tv_sec = 10};
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        /* CUBIC, as the bridged rows' kernel sender (the machine's default may differ). */
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5);
    }
    if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl) < 0) {
        snprintf(k->why, sizeof k->why, "connect: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* Send the pattern and read it back, checking every byte, until the
 * server's FIN (60 s at most). */
static void kc_echo(struct kclient *k, int fd, uint8_t *buf)
{
    uint64_t sent = 0, got = 0;
    bool eof = false;
    for (double end = tool_now_s() + 60; !eof && tool_now_s() < end;) {
        struct pollfd p = {.fd = fd, .events = POLLIN | (sent < k->bytes ? POLLOUT : 0)};
        if (poll(&p, 1, 100) <= 0)
            continue;
        if (sent < k->bytes && (p.revents & POLLOUT)) {
            size_t want = k->bytes - sent < BUF ? (size_t)(k->bytes - sent) : BUF;
            ssize_t w = send(fd, k->data + sent, want, MSG_NOSIGNAL);
            sent += w > 0 ? (uint64_t)w : 0;
            if (sent == k->bytes)
                shutdown(fd, SHUT_WR);
        }
        ssize_t n = recv(fd, buf, BUF, 0);
        if (n > 0 && (got + (uint64_t)n > k->bytes || memcmp(buf, k->data + got, (size_t)n))) {
            snprintf(k->why, sizeof k->why, "the echo differs from what was sent at byte %llu",
                     (unsigned long long)got);
            return;
        }
        got += n > 0 ? (uint64_t)n : 0;
        eof = n == 0;
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            snprintf(k->why, sizeof k->why, "recv: %s", strerror(errno));
            return;
        }
    }
    k->verified = eof && got == k->bytes;
    if (!k->verified)
        snprintf(k->why, sizeof k->why, "%llu of %llu bytes echoed within 60 s",
                 (unsigned long long)got, (unsigned long long)k->bytes);
}

static void *kclient_main(void *arg)
{
    struct kclient *k = arg;
    uint8_t *buf = malloc(BUF);
    if (!buf || tool_ns_enter(k->ns) < 0) {
        snprintf(k->why, sizeof k->why, "cannot enter %s", k->ns);
        free(buf);
        return NULL;
    }
    if (k->cpu >= 0)
        tool_pin(k->cpu);
    long long r0 = paths_ns_counter("Tcp", "RetransSegs"),
              t0 = paths_ns_counter("TcpExt", "TCPTimeouts");
    double start = tool_now_s();
    int fd = kc_connect(k);
    if (fd >= 0) {
        kc_echo(k, fd, buf);
        close(fd);
    }
    k->secs = tool_now_s() - start;
    k->retrans = (uint64_t)(paths_ns_counter("Tcp", "RetransSegs") - r0);
    k->rto = (uint64_t)(paths_ns_counter("TcpExt", "TCPTimeouts") - t0);
    free(buf);
    return NULL;
}

/* ---- one run of each client ---------------------------------------------------------- */

struct pm_env {
    struct tool_line line;
    struct echo echo;
    uint8_t *data;
    uint64_t bytes;
    int cpu_a;
};

static void kernel_once(struct pm_env *m, int v6, double *secs, struct paths_pmtu_cell *c)
{
    *secs = -1;
    /* No path MTU learnt by an earlier run. */
    tool_line_sh(&m->line, 0, "ip route flush cache; ip -6 route flush cache");
    struct kclient k = {.ns = m->line.ns[0],
                        .cpu = m->cpu_a,
                        .v6 = v6,
                        .data = m->data,
                        .bytes = m->bytes};
    pthread_t th;
    if (pthread_create(&th, NULL, kclient_main, &k) != 0) {
        snprintf(c->why[0], sizeof c->why[0], "cannot start a thread");
        return;
    }
    pthread_join(th, NULL);
    c->verified[0] = k.verified;
    c->retrans[0] += k.retrans;
    c->rto[0] += k.rto;
    if (!k.verified)
        snprintf(c->why[0], sizeof c->why[0], "%s", k.why);
    *secs = k.verified ? k.secs : -1;
}

/* `hotpath connect` on the client's interface (the kernel's addresses off it). */
static void hotpath_once(struct pm_env *m, int v6, double *secs, struct paths_pmtu_cell *c)
{
    char bytes[32], cpu[16], *out = NULL;
    snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)m->bytes);
    snprintf(cpu, sizeof cpu, "%d", m->cpu_a);
    const char *argv[] = {"hotpath",
                          "connect",
                          "--link",
                          "afpacket",
                          "--iface",
                          m->line.ifname[0][0],
                          v6 ? "--ip6" : "--ip",
                          v6 ? "2001:2:0:1::1/64" : "198.18.1.1/24",
                          v6 ? "--gw6" : "--gw",
                          v6 ? "2001:2:0:1::fe" : "198.18.1.254",
                          "--to",
                          v6 ? "[2001:2:0:3::1]:7" : "198.18.3.1:7",
                          "--bytes",
                          bytes,
                          "--json",
                          "--cpu",
                          cpu,
                          NULL};
    *secs = -1;
    if (tool_line_routed_client(&m->line, false) < 0) {
        snprintf(c->why[1], sizeof c->why[1], "cannot take the kernel's addresses off");
        return;
    }
    int rc =
        paths_child_run(m->line.ns[0], (char *const *)argv, 90, &out, c->why[1], sizeof c->why[1]);
    tool_line_routed_client(&m->line, true);
    json_t *j = rc == 0 ? tool_json_find(out) : NULL;
    free(out);
    double s = -1, rt = 0, to = 0;
    json_t *tcp = j ? json_object_get(j, "tcp") : NULL;
    bool ok =
        j && json_is_true(json_object_get(j, "verified")) && tool_json_get_num(j, "seconds", &s);
    tool_json_get_num(tcp, "retrans_segs", &rt);
    tool_json_get_num(tcp, "timeouts", &to);
    json_decref(j);
    c->verified[1] = ok;
    c->retrans[1] += (uint64_t)rt;
    c->rto[1] += (uint64_t)to;
    if (!ok && !c->why[1][0])
        snprintf(c->why[1], sizeof c->why[1], "hotpath connect's JSON did not say verified");
    *secs = ok ? s : -1;
}

/* reps runs of both clients, alternating; their medians. */
static void pm_case(struct pm_env *m, int v6, int reps, struct paths_pmtu_cell *c)
{
    double s[2][16];
    int n[2] = {0, 0};
    for (int r = 0; r < reps && r < 16; r++) {
        double t = -1;
        kernel_once(m, v6, &t, c);
        if (t >= 0)
            s[0][n[0]++] = t;
        hotpath_once(m, v6, &t, c);
        if (t >= 0)
            s[1][n[1]++] = t;
    }
    for (int i = 0; i < 2; i++) {
        c->ran[i] = n[i] == reps;
        c->verified[i] = c->ran[i];
        c->secs[i] = hb_median(s[i], n[i]);
    }
}

/* Every ICMPv4 message and every ICMPv6 error dropped by both routers, on
 * their way out and through (neighbour discovery passes). 0 or -1. */
static int drop_icmp(struct pm_env *m)
{
    char path[] = "/tmp/hotpath-paths-nft.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    static const char rules[] =
        "table inet hotpath_paths {\n"
        "  chain from_router {\n"
        "    type filter hook output priority 0; policy accept;\n"
        "    meta l4proto icmp drop\n"
        "    icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, "
        "parameter-problem } drop\n"
        "  }\n"
        "  chain through {\n"
        "    type filter hook forward priority 0; policy accept;\n"
        "    meta l4proto icmp drop\n"
        "    icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, "
        "parameter-problem } drop\n"
        "  }\n"
        "}\n";
    bool ok = write(fd, rules, sizeof rules - 1) == (ssize_t)(sizeof rules - 1);
    close(fd);
    for (int r = 1; r <= 2 && ok; r++)
        ok = tool_sh("ip netns exec %s nft -f %s >/dev/null 2>&1", m->line.ns[r], path) == 0;
    unlink(path);
    return ok ? 0 : -1;
}

/* The namespaces, the server's route and the echo server. 0, or -1 with why. */
static int pm_setup(struct pm_env *m, int cpu_b, char *why, size_t len)
{
    int rc = tool_line_routed(&m->line, "pmtu", NARROW_MTU);
    if (rc < 0) {
        snprintf(why, len, "cannot make the routed namespaces: %s", strerror(-rc));
        return -1;
    }
    /* The server knows the narrow link on its way back (it sends at most
     * 1280-byte packets) but offers the MSS of its interface: only the
     * clients have to discover the path MTU. Both ends turn to probing
     * after black holes (net.ipv4.tcp_mtu_probing=1; the knob covers IPv6
     * too): without it the kernel's client never gets through without ICMP. */
    if (tool_line_sh(&m->line, 3,
                     "ip route replace default via 198.18.3.254 mtu %d advmss 1460 && ip -6 "
                     "route replace default via 2001:2:0:3::fe mtu %d advmss 1440",
                     NARROW_MTU, NARROW_MTU) != 0 ||
        tool_line_sh(&m->line, 0,
                     "sysctl -qw net.ipv4.tcp_mtu_probing=1 net.ipv4.tcp_no_metrics_save=1") != 0) {
        snprintf(why, len, "cannot set the server's route or the client's sysctls");
        return -1;
    }
    /* The narrow link is a 100 Mbit/s one too (a token bucket on both of its
     * ends), as the bridged rows' bottleneck: both clients then wait on the
     * link, and the time differs by what finding its MTU costs, not by how
     * fast afpacket copies frames next to the kernel's own veth path. */
    for (int r = 1; r <= 2; r++)
        if (tool_line_sh(&m->line, r,
                         "tc qdisc add dev %s root tbf rate %dmbit burst 15k latency 20ms",
                         m->line.ifname[1][r - 1], NARROW_MBIT) != 0) {
            snprintf(why, len, "cannot shape the narrow link (tc tbf)");
            return -1;
        }
    m->echo.ns = m->line.ns[3];
    m->echo.cpu = cpu_b;
    if (hb_server_start(&m->echo.srv, echo_main, &m->echo, 5) < 0) {
        snprintf(why, len, "the kernel echo server cannot listen on port %d", ECHO_PORT);
        return -1;
    }
    return 0;
}

void paths_pmtu_run(struct paths_pmtu *p, const struct bench_opts *o, int cpu_a, int cpu_b,
                    uint64_t bytes, int reps)
{
    (void)o;
    memset(p, 0, sizeof *p);
    p->bytes = bytes;
    p->reps = reps;
    static struct pm_env m;
    memset(&m, 0, sizeof m);
    m.echo.lfd = -1;
    m.bytes = bytes;
    m.cpu_a = cpu_a;
    m.data = malloc(bytes);
    if (!m.data) {
        snprintf(p->why, sizeof p->why, "out of memory");
        return;
    }
    tcp_pattern_fill(tcp_pattern_seed(0), 0, m.data, bytes);
    if (pm_setup(&m, cpu_b, p->why, sizeof p->why) == 0) {
        p->ran = true;
        pm_case(&m, 0, reps, &p->c[PM_V4]);
        pm_case(&m, 1, reps, &p->c[PM_V6]);
        if (tool_sh("command -v nft >/dev/null 2>&1") != 0 || drop_icmp(&m) < 0) {
            for (int c = PM_V4_NOICMP; c <= PM_V6_NOICMP; c++)
                for (int i = 0; i < 2; i++)
                    snprintf(p->c[c].why[i], sizeof p->c[c].why[i],
                             "cannot drop ICMP on the routers: nft (nftables) is missing or "
                             "failed (scripts/deps.sh installs it)");
        } else {
            pm_case(&m, 0, reps, &p->c[PM_V4_NOICMP]);
            pm_case(&m, 1, reps, &p->c[PM_V6_NOICMP]);
        }
    }
    hb_server_stop(&m.echo.srv);
    if (m.echo.lfd >= 0)
        close(m.echo.lfd);
    tool_line_down(&m.line);
    free(m.data);
}
