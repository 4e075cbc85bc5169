/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench memif`: the memif link between processes, each pinned to its CPU: 64-byte txonly to rxdrop against DPDK's testpmd both ways, and one TCP flow against the kernel's over loopback. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "bench.h"
#include "gen.h"
#include "tcp_kernel.h"
#include "tool.h"

/*
 * Rows (each the median of --reps rounds, rows alternating):
 *   hp>hp       hotpath gen txonly (memif client) -> hotpath gen rxdrop
 *               (server), 64-byte frames, the client in copy mode
 *   hp>hp zc    the same with the client in zero-copy mode
 *   hp>testpmd  hotpath txonly (client) -> testpmd --forward-mode=rxonly
 *               (net_memif server): the frames our link took per second
 *               (the ring holds at most 1024 more than testpmd read)
 *   testpmd>hp  testpmd --forward-mode=txonly (client) -> hotpath rxdrop
 *   testpmd>testpmd  DPDK to DPDK, for scale: testpmd's own Rx-pps
 *   tcp         one TCP flow, MTU 1500, hotpath stacks in two processes
 *               over memif, 128 KiB writes, the stack's default buffers
 *               (256 KiB: twice the bandwidth-delay product of 20 Gbit/s
 *               at this link's ~50 us round trip); the same with 4 MiB
 *               buffers, whose in-flight data no longer fits in L2 (the
 *               price of oversized windows on a local link); beside the
 *               kernel's TCP over loopback (threads on the same two CPUs)
 * Each side is its own process, pinned: the receiver to CPU a, the sender
 * to CPU b (testpmd's forwarding lcore likewise, its main lcore beside it).
 */

#define MAX_REPS  64
#define MPPS_GOAL 20.0
#define GBPS_GOAL 20.0
#define TCP_PORT  5201
#define TCP_CHUNK (128 * 1024)
/* The tcp 4MiB row's send and receive buffers (the tcp rows: the defaults). */
#define BIG_WINDOW (4u << 20)

enum {
    R_HP,
    R_HP_ZC,
    R_MEM,
    R_HP_TP,
    R_TP_HP,
    R_TP_TP,
    R_TCP,
    R_TCP_BIG,
    R_TCP_MEM,
    R_TCPK,
    NROWS
};

struct row {
    const char *name, *unit, *what;
    double v[MAX_REPS], share[MAX_REPS];
    int n;
    double med, med_share; /* share: the receiver's CPU time over its wall time (hotpath rows) */
    char why[200];
};

/* ---- one side in a child process ---------------------------------------------------- */

struct side_res {
    int ok;
    double rate;  /* packets/s, or bits/s for TCP */
    double share; /* CPU time over wall time while measuring: how much of its CPU it got */
    char why[160];
};

static void write_res(int fd, const struct side_res *r)
{
    if (write(fd, r, sizeof *r) != (ssize_t)sizeof *r)
        _exit(3);
}

/* Collect a child's result and reap it. */
static void read_res(int fd, pid_t pid, struct side_res *r)
{
    memset(r, 0, sizeof *r);
    if (read(fd, r, sizeof *r) != (ssize_t)sizeof *r) {
        r->ok = 0;
        snprintf(r->why, sizeof r->why, "the measuring process ended without a result");
    }
    close(fd);
    int st;
    waitpid(pid, &st, 0);
}

/* gen in a child: 64-byte frames over memif for secs, pinned to cpu (or,
 * sock NULL, over an in-process mem pair whose feeding thread runs on
 * cpu2: the same frames across the same two CPUs without memif). */
static pid_t gen_child(const char *mode, const char *sock, int role, unsigned flags, int cpu,
                       int cpu2, double secs, int *fd)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t pid = fork();
    if (pid != 0) {
        close(p[1]);
        *fd = p[0];
        return pid;
    }
    close(p[0]);
    struct gen_opts g;
    gen_defaults(&g);
    g.mode = mode;
    g.link = sock ? "memif" : "mem";
    g.memif.socket = sock;
    g.memif.role = role;
    g.link_flags = flags;
    g.duration = secs;
    g.cpu = cpu;
    g.cpu2 = cpu2;
    g.rate_out = NULL;
    struct gen_result gr;
    struct side_res r = {0};
    freopen("/dev/null", "w", stderr);
    if (gen_run(&g, &gr) == 0 && gr.packets) {
        r.ok = 1;
        r.rate = gr.pps;
        r.share = gr.seconds > 0 ? gr.cpu_s / gr.seconds : 0;
    } else {
        snprintf(r.why, sizeof r.why, "gen %s over %s failed", mode, g.link);
    }
    write_res(p[1], &r);
    _exit(0);
}

static void sock_name(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "/tmp/hotpath-bench-memif-%d-%s.sock", (int)getpid(), what);
    unlink(buf);
}

/* ---- hotpath to hotpath ------------------------------------------------------------------ */

static int hp_round(bool zc, int a, int b, double secs, double *mpps, double *share, char *why,
                    size_t len)
{
    char sock[128];
    sock_name(sock, sizeof sock, "hp");
    int rfd, tfd;
    pid_t rx = gen_child("rxdrop", sock, HP_MEMIF_SERVER, 0, a, -1, secs, &rfd);
    pid_t tx = gen_child("txonly", sock, HP_MEMIF_CLIENT, zc ? HP_LINK_F_ZEROCOPY : 0, b, -1,
                         secs + 1, &tfd);
    struct side_res r, t;
    read_res(rfd, rx, &r);
    read_res(tfd, tx, &t);
    unlink(sock);
    if (!r.ok || !t.ok) {
        snprintf(why, len, "%s", r.ok ? t.why : r.why);
        return -1;
    }
    *mpps = r.rate / 1e6;
    *share = r.share;
    return 0;
}

/* The in-process reference: gen rxdrop on a mem pair, fed by its second
 * thread on the other CPU. */
static int mem_round(int a, int b, double secs, double *mpps, double *share, char *why, size_t len)
{
    int fd;
    pid_t pid = gen_child("rxdrop", NULL, 0, 0, a, b, secs, &fd);
    struct side_res r;
    read_res(fd, pid, &r);
    if (!r.ok) {
        snprintf(why, len, "%s", r.why);
        return -1;
    }
    *mpps = r.rate / 1e6;
    *share = r.share;
    return 0;
}

/* ---- testpmd ------------------------------------------------------------------------------ */

static const char *testpmd_path(void)
{
    static const char *const paths[] = {"/usr/bin/dpdk-testpmd", "/usr/local/bin/dpdk-testpmd"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0)
            return paths[i];
    return NULL;
}

/* Why testpmd cannot run here, or NULL. */
static const char *testpmd_missing(void)
{
    if (!testpmd_path())
        return "dpdk-testpmd is not installed (apt-get install dpdk-dev librte-net-memif23)";
    if (geteuid() != 0)
        return "testpmd needs root here (its run files live under /var/run/dpdk)";
    return NULL;
}

/* testpmd with one memif port in role, forwarding mode, its forwarding
 * lcore on cpu; output to log. */
static pid_t testpmd_start(const char *role, const char *mode, const char *sock, int cpu,
                           const char *log)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char vdev[256], lcores[32], prefix[64];
    snprintf(vdev, sizeof vdev, "--vdev=net_memif,role=%s,socket=%s,socket-abstract=no", role,
             sock);
    snprintf(lcores, sizeof lcores, "0@%d,1@%d", cpu, cpu);
    /* The parent's pid: testpmd_clean() removes the run directory by it. */
    snprintf(prefix, sizeof prefix, "--file-prefix=hpbench-%d-%s", (int)getppid(), role);
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600), in = open("/dev/null", O_RDONLY);
    if (out >= 0 && in >= 0) {
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
    }
    char *argv[] = {(char *)testpmd_path(),
                    "--no-huge",
                    "-m",
                    "512",
                    "--no-pci",
                    prefix,
                    "--lcores",
                    lcores,
                    vdev,
                    "--",
                    "--forward-mode",
                    (char *)mode,
                    "--auto-start",
                    "--stats-period",
                    "1",
                    "--total-num-mbufs=8192",
                    NULL};
    execv(argv[0], argv);
    _exit(127);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    (void)remove(path);
    return 0;
}

/* testpmd leaves its run directory (/var/run/dpdk/PREFIX) behind. */
static void testpmd_clean(const char *role)
{
    char dir[96];
    snprintf(dir, sizeof dir, "/var/run/dpdk/hpbench-%d-%s", (int)getpid(), role);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void testpmd_stop(pid_t pid, const char *role)
{
    kill(pid, SIGINT);
    bool gone = false;
    for (int i = 0; i < 50 && !gone; i++) {
        gone = waitpid(pid, NULL, WNOHANG) == pid;
        struct timespec t = {0, 100000000};
        if (!gone)
            nanosleep(&t, NULL);
    }
    if (!gone) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    testpmd_clean(role);
}

static bool wait_file(const char *path, double secs)
{
    double end = tool_now_s() + secs;
    struct stat st;
    while (tool_now_s() < end) {
        if (stat(path, &st) == 0)
            return true;
        struct timespec t = {0, 20000000};
        nanosleep(&t, NULL);
    }
    return false;
}

/* hotpath txonly toward testpmd rxonly (tp_rx) or testpmd txonly toward
 * hotpath rxdrop (!tp_rx). */
static int tp_round(bool tp_rx, int a, int b, double secs, double *mpps, char *why, size_t len)
{
    char sock[128], log[160];
    sock_name(sock, sizeof sock, "tp");
    snprintf(log, sizeof log, "/tmp/hotpath-bench-memif-%d-testpmd.log", (int)getpid());
    int fd;
    pid_t tp, hp;
    if (tp_rx) {
        tp = testpmd_start("server", "rxonly", sock, a, log);
        if (!wait_file(sock, 20)) {
            testpmd_stop(tp, "server");
            snprintf(why, len, "testpmd did not listen in 20 s (its log: %.70s)", log);
            return -1;
        }
        hp = gen_child("txonly", sock, HP_MEMIF_CLIENT, 0, b, -1, secs, &fd);
    } else {
        /* A DPDK client does not retry: our server listens first. */
        hp = gen_child("rxdrop", sock, HP_MEMIF_SERVER, 0, a, -1, secs, &fd);
        wait_file(sock, 5);
        tp = testpmd_start("client", "txonly", sock, b, log);
    }
    struct side_res r;
    read_res(fd, hp, &r);
    testpmd_stop(tp, tp_rx ? "server" : "client");
    unlink(sock);
    if (!r.ok) {
        snprintf(why, len, "%.100s (testpmd's log: %.70s)", r.why, log);
        return -1;
    }
    unlink(log);
    *mpps = r.rate / 1e6;
    return 0;
}

/* The median of the Rx-pps samples testpmd printed once frames flowed
 * (the first such second is partial and left out when there are others). */
static double rx_pps_of(const char *log)
{
    FILE *f = fopen(log, "r");
    double v[256];
    int n = 0, first = -1;
    char line[512];
    while (f && fgets(line, sizeof line, f) && n < 256) {
        const char *p = strstr(line, "Rx-pps:");
        if (!p)
            continue;
        v[n] = strtod(p + 7, NULL);
        if (first < 0 && v[n] > 0)
            first = n;
        n++;
    }
    if (f)
        fclose(f);
    if (first < 0)
        return 0;
    /* The last sample may be the partial second before the stop, too. */
    int from = n - first > 2 ? first + 1 : first, to = n - first > 3 ? n - 1 : n;
    return tool_median(v + from, to - from);
}

static int tp_tp_round(int a, int b, double secs, double *mpps, char *why, size_t len)
{
    char sock[128], log[2][160];
    sock_name(sock, sizeof sock, "tptp");
    for (int i = 0; i < 2; i++)
        snprintf(log[i], sizeof log[i], "/tmp/hotpath-bench-memif-%d-testpmd-%d.log", (int)getpid(),
                 i);
    pid_t rx = testpmd_start("server", "rxonly", sock, a, log[0]);
    pid_t tx = wait_file(sock, 20) ? testpmd_start("client", "txonly", sock, b, log[1]) : -1;
    struct timespec t = {(time_t)(secs + 4), 0};
    if (tx > 0)
        nanosleep(&t, NULL);
    if (tx > 0)
        testpmd_stop(tx, "client");
    testpmd_stop(rx, "server");
    unlink(sock);
    *mpps = rx_pps_of(log[0]) / 1e6;
    if (!(*mpps > 0)) {
        snprintf(why, len, "no Rx-pps from testpmd (its logs: %.70s, %.70s)", log[0], log[1]);
        return -1;
    }
    unlink(log[0]);
    unlink(log[1]);
    return 0;
}

/* ---- one TCP flow between two processes ------------------------------------------------- */

static const uint8_t A4[4] = {198, 18, 0, 1}, B4[4] = {198, 18, 0, 2};

/* A stack on a memif link (server: B4, the receiver; client: A4). */
struct tcp_end {
    struct hp_pool *pool;
    struct hp_link *link;
    struct hp_stack *st;
    struct hp_tcp_sock *l, *t;
};

/* A stack on link (NULL: a memif link of its own on sock, with its pool). */
static int tcp_end_open(struct tcp_end *e, const char *sock, bool server, struct hp_link *link,
                        uint32_t win)
{
    memset(e, 0, sizeof *e);
    e->link = link;
    if (!link) {
        struct hp_pool_config pc = {.name = "bench-memif-tcp", .n_bufs = 16384};
        e->pool = hp_pool_create(&pc);
        struct hp_link_config lc = {.pool = e->pool};
        lc.memif.socket = sock;
        lc.memif.role = server ? HP_MEMIF_SERVER : HP_MEMIF_CLIENT;
        e->link = e->pool ? hp_link_open("memif", &lc) : NULL;
    }
    struct hp_stack_config sc = {.name = server ? "receiver" : "sender",
                                 .flags = HP_STACK_F_NO_DAD};
    e->st = e->link ? hp_stack_create(&sc) : NULL;
    int ifx = e->st ? hp_stack_add_iface(e->st, e->link) : -1;
    if (ifx < 0 || hp_stack_add_addr(e->st, ifx, 4, server ? B4 : A4, 24) < 0)
        return -1;
    /* win 0: the stack's defaults (256 KiB each way) */
    struct hp_tcp_config tc = {.sndbuf = win, .rcvbuf = win};
    hp_tcp_configure(e->st, &tc);
    struct hp_sockaddr any = {.family = 4, .port = TCP_PORT};
    if (server) {
        e->l = hp_tcp_open(e->st, 4, NULL);
        return e->l && hp_tcp_bind(e->l, &any) == 0 && hp_tcp_listen(e->l, 4) == 0 ? 0 : -1;
    }
    return 0;
}

/* Close the stack (and, when they are its own, the link and the pool). */
static void tcp_end_close(struct tcp_end *e)
{
    hp_tcp_close(e->t);
    hp_tcp_close(e->l);
    hp_stack_destroy(e->st);
    if (e->pool) {
        hp_pool_thread_flush(e->pool);
        hp_link_close(e->link);
        hp_pool_destroy(e->pool);
    }
}

static void drain_events(struct hp_stack *st)
{
    struct hp_event ev[16];
    while (hp_stack_events(st, ev, 16) == 16)
        ;
}

/* The receiver: bytes over [first byte + warm, + secs]; bits/s in r. */
static void tcp_receiver(struct tcp_end *e, double warm, double secs, struct side_res *r)
{
    static uint8_t buf[TCP_CHUNK];
    uint64_t bytes = 0, b0 = 0;
    double first = 0, t0 = 0, c0 = 0, give_up = tool_now_s() + warm + secs + 30;
    while (tool_now_s() < give_up) {
        hp_stack_poll(e->st);
        drain_events(e->st);
        if (!e->t)
            e->t = hp_tcp_accept(e->l, NULL, NULL);
        long n;
        while (e->t && (n = hp_tcp_recv(e->t, buf, sizeof buf)) > 0)
            bytes += (uint64_t)n;
        if (bytes && !first)
            first = tool_now_s();
        double now = first ? tool_now_s() : 0;
        if (first && !t0 && now >= first + warm) {
            t0 = now;
            c0 = tool_thread_cpu_s();
            b0 = bytes;
        }
        if (t0 && now >= t0 + secs) {
            r->ok = 1;
            r->rate = (double)(bytes - b0) * 8 / (now - t0);
            r->share = (tool_thread_cpu_s() - c0) / (now - t0);
            return;
        }
    }
    snprintf(r->why, sizeof r->why, "hotpath TCP over memif: %s",
             bytes ? "the flow stopped" : "no byte arrived");
}

/* The sender: connect once the link is up, write until the deadline. */
static void tcp_sender(struct tcp_end *e, double until, struct side_res *r)
{
    static uint8_t buf[TCP_CHUNK];
    for (size_t k = 0; k < sizeof buf; k++)
        buf[k] = (uint8_t)(k * 7);
    struct hp_sockaddr to = {.family = 4, .port = TCP_PORT};
    memcpy(to.addr, B4, 4);
    while (tool_now_s() < until) {
        hp_stack_poll(e->st);
        drain_events(e->st);
        if (!e->t && hp_link_up(e->link)) {
            e->t = hp_tcp_open(e->st, 4, NULL);
            if (e->t && hp_tcp_connect(e->t, &to) != -EINPROGRESS &&
                hp_tcp_state(e->t) != HP_TCP_ESTABLISHED) {
                hp_tcp_abort(e->t);
                e->t = NULL;
            }
        }
        while (e->t && hp_tcp_send(e->t, buf, sizeof buf) > 0)
            ;
    }
    r->ok = 1;
}

static pid_t tcp_child(bool server, const char *sock, int cpu, double warm, double secs,
                       uint32_t win, int *fd)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t pid = fork();
    if (pid != 0) {
        close(p[1]);
        *fd = p[0];
        return pid;
    }
    close(p[0]);
    if (cpu >= 0)
        tool_pin(cpu);
    struct side_res r = {0};
    struct tcp_end e;
    if (tcp_end_open(&e, sock, server, NULL, win) < 0)
        snprintf(r.why, sizeof r.why, "cannot set up a stack on memif: %s", hp_link_error());
    else if (server)
        tcp_receiver(&e, warm, secs, &r);
    else
        tcp_sender(&e, tool_now_s() + warm + secs + 2, &r);
    write_res(p[1], &r);
    tcp_end_close(&e);
    _exit(0);
}

static int tcp_round(int a, int b, double warm, double secs, uint32_t win, double *gbps,
                     double *share, char *why, size_t len)
{
    char sock[128];
    sock_name(sock, sizeof sock, "tcp");
    int rfd, sfd;
    pid_t rx = tcp_child(true, sock, a, warm, secs, win, &rfd);
    pid_t tx = tcp_child(false, sock, b, warm, secs, win, &sfd);
    struct side_res r, s;
    read_res(rfd, rx, &r);
    read_res(sfd, tx, &s);
    unlink(sock);
    if (!r.ok) {
        snprintf(why, len, "%s", r.why);
        return -1;
    }
    *gbps = r.rate / 1e9;
    *share = r.share;
    return 0;
}

/* The same flow between two threads over an in-process mem pair, on the
 * same CPUs: what the machine gives two busy pollers without memif. */
struct tcp_thread {
    struct tcp_end e;
    bool server;
    int cpu;
    double warm, secs;
    struct side_res r;
};

static void *tcp_thread_fn(void *arg)
{
    struct tcp_thread *t = arg;
    if (t->cpu >= 0)
        tool_pin(t->cpu);
    if (t->server)
        tcp_receiver(&t->e, t->warm, t->secs, &t->r);
    else
        tcp_sender(&t->e, tool_now_s() + t->warm + t->secs + 2, &t->r);
    hp_thread_exit();
    return NULL;
}

static int tcp_mem_round(int a, int b, double warm, double secs, double *gbps, double *share,
                         char *why, size_t len)
{
    struct hp_pool_config pc = {.name = "bench-mem-tcp", .n_bufs = 32768};
    struct hp_pool *pool = hp_pool_create(&pc);
    struct hp_link_config lc = {.pool = pool, .ring_size = 1024};
    struct hp_link *e[2] = {NULL, NULL};
    static struct tcp_thread th[2];
    memset(th, 0, sizeof th);
    int rc = -1, started = 0;
    pthread_t id[2];
    if (!pool || hp_link_mem_pair(&lc, e) < 0) {
        snprintf(why, len, "mem pair: %s", hp_link_error());
        goto out;
    }
    for (int i = 0; i < 2; i++) {
        th[i] =
            (struct tcp_thread){.server = i == 0, .cpu = i == 0 ? a : b, .warm = warm, .secs = secs};
        if (tcp_end_open(&th[i].e, NULL, i == 0, e[i], 0) < 0) {
            snprintf(why, len, "cannot set up the stacks on the mem pair");
            goto out;
        }
    }
    for (; started < 2; started++)
        if (pthread_create(&id[started], NULL, tcp_thread_fn, &th[started]) != 0)
            break;
    for (int i = 0; i < started; i++)
        pthread_join(id[i], NULL);
    if (started == 2 && th[0].r.ok) {
        *gbps = th[0].r.rate / 1e9;
        *share = th[0].r.share;
        rc = 0;
    } else {
        snprintf(why, len, "%s", started < 2 ? "cannot start the threads" : th[0].r.why);
    }
out:
    for (int i = 0; i < 2; i++)
        tcp_end_close(&th[i].e);
    if (pool)
        hp_pool_thread_flush(pool);
    hp_link_close(e[0]);
    hp_link_close(e[1]);
    hp_pool_destroy(pool);
    return rc;
}

static int tcpk_round(int a, int b, double warm, double secs, double *gbps, char *why, size_t len)
{
    struct tcpk_opts ko = {.cpu_a = b,
                           .cpu_b = a,
                           .chunk = TCP_CHUNK,
                           .warm_s = warm,
                           .seconds = secs};
    struct tcpk_result kr;
    if (tcpk_stream_run(&ko, &kr) < 0 || !(kr.seconds > 0)) {
        snprintf(why, len, "%s", kr.why);
        return -1;
    }
    *gbps = (double)kr.count * 8 / kr.seconds / 1e9;
    return 0;
}

/* ---- the run ------------------------------------------------------------------------------ */

static void row_add(struct row *w, int rc, double v, double share, const char *why)
{
    if (rc == 0 && w->n < MAX_REPS) {
        w->share[w->n] = share;
        w->v[w->n++] = v;
    } else if (rc != 0 && !w->why[0]) {
        snprintf(w->why, sizeof w->why, "%s", why);
    }
}

/* HP_BENCH_MEMIF_ONLY="tcp hp/memif,hp>hp": the rows named, by their table
 * names (unset: every row). */
static bool row_wanted(const struct row *w)
{
    const char *only = getenv("HP_BENCH_MEMIF_ONLY");
    if (!only || !*only)
        return true;
    size_t len = strlen(w->name);
    for (const char *p = only; *p;) {
        size_t n = strcspn(p, ",");
        if (n == len && memcmp(p, w->name, n) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static void run_rounds(struct row *rows, int reps, int a, int b, double warm, double secs,
                       const char *tp_missing, const struct bench_opts *o)
{
    for (int k = 0; k < reps; k++) {
        for (int i = 0; i < NROWS; i++) {
            char why[200] = "";
            double v = 0, share = 0;
            int rc = -1;
            if (!row_wanted(&rows[i])) {
                snprintf(why, sizeof why, "not in HP_BENCH_MEMIF_ONLY");
            } else if ((i == R_HP_TP || i == R_TP_HP || i == R_TP_TP) && tp_missing) {
                snprintf(why, sizeof why, "%s", tp_missing);
            } else if (i == R_HP || i == R_HP_ZC) {
                rc = hp_round(i == R_HP_ZC, a, b, secs, &v, &share, why, sizeof why);
            } else if (i == R_MEM) {
                rc = mem_round(a, b, secs, &v, &share, why, sizeof why);
            } else if (i == R_HP_TP || i == R_TP_HP) {
                rc = tp_round(i == R_HP_TP, a, b, secs, &v, why, sizeof why);
            } else if (i == R_TP_TP) {
                rc = tp_tp_round(a, b, secs, &v, why, sizeof why);
            } else if (i == R_TCP || i == R_TCP_BIG) {
                rc = tcp_round(a, b, warm, secs, i == R_TCP ? 0 : BIG_WINDOW, &v, &share, why,
                               sizeof why);
            } else if (i == R_TCP_MEM) {
                rc = tcp_mem_round(a, b, warm, secs, &v, &share, why, sizeof why);
            } else {
                rc = tcpk_round(a, b, warm, secs, &v, why, sizeof why);
            }
            row_add(&rows[i], rc, v, share, why);
            if (o->progress)
                o->progress(o->progress_ctx, k * NROWS + i + 1, reps * NROWS, rows[i].name);
        }
    }
    for (int i = 0; i < NROWS; i++) {
        rows[i].med = rows[i].n ? tool_median(rows[i].v, rows[i].n) : 0;
        rows[i].med_share = rows[i].n ? tool_median(rows[i].share, rows[i].n) : 0;
    }
}

struct ratios {
    double hp_goal, tp_dir, hp_vs_tp, hp_vs_mem, tcp_goal, tcp_vs_kernel, tcp_vs_mem, tcp_big;
    bool has_tp_dir, has_hp_vs_tp, has_hp_vs_mem, has_tcp_k, has_tcp_mem, has_tcp_big;
};

static void compute_ratios(const struct row *r, struct ratios *x)
{
    memset(x, 0, sizeof *x);
    x->hp_goal = r[R_HP].med / MPPS_GOAL;
    x->tcp_goal = r[R_TCP].med / GBPS_GOAL;
    x->has_tp_dir = r[R_HP_TP].n && r[R_TP_HP].n;
    x->tp_dir = x->has_tp_dir ? r[R_HP_TP].med / r[R_TP_HP].med : 0;
    x->has_hp_vs_tp = r[R_HP].n && r[R_TP_TP].n;
    x->hp_vs_tp = x->has_hp_vs_tp ? r[R_HP].med / r[R_TP_TP].med : 0;
    x->has_hp_vs_mem = r[R_HP].n && r[R_MEM].n;
    x->hp_vs_mem = x->has_hp_vs_mem ? r[R_HP].med / r[R_MEM].med : 0;
    x->has_tcp_k = r[R_TCP].n && r[R_TCPK].n;
    x->tcp_vs_kernel = x->has_tcp_k ? r[R_TCP].med / r[R_TCPK].med : 0;
    x->has_tcp_mem = r[R_TCP].n && r[R_TCP_MEM].n;
    x->tcp_vs_mem = x->has_tcp_mem ? r[R_TCP].med / r[R_TCP_MEM].med : 0;
    x->has_tcp_big = r[R_TCP].n && r[R_TCP_BIG].n;
    x->tcp_big = x->has_tcp_big ? r[R_TCP_BIG].med / r[R_TCP].med : 0;
}

static void print_json(FILE *f, const struct row *rows, const struct ratios *x, int reps,
                       double secs, int a, int b)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    json_t *root = json_pack("{s:s, s:s, s:s, s:s, s:i, s:f, s:[i,i]}", "bench", "memif", "cpu",
                             cpu, "compiler", tool_compiler(), "flags", tool_build_flags(), "reps",
                             reps, "round_s", secs, "cpus", a, b);
    json_t *arr = json_array();
    for (int i = 0; i < NROWS; i++) {
        json_t *w = json_pack("{s:s, s:s, s:s, s:i}", "row", rows[i].name, "unit", rows[i].unit,
                              "what", rows[i].what, "rounds", rows[i].n);
        json_object_set_new(w, "median", rows[i].n ? json_real(rows[i].med) : json_null());
        if (rows[i].n && rows[i].med_share > 0)
            json_object_set_new(w, "receiver_cpu_share", json_real(rows[i].med_share));
        if (rows[i].why[0])
            json_object_set_new(w, "why", json_string(rows[i].why));
        json_array_append_new(arr, w);
    }
    json_object_set_new(root, "rows", arr);
    json_t *rat = json_object();
    json_object_set_new(rat, "hp_mpps_over_goal_20",
                        rows[R_HP].n ? json_real(x->hp_goal) : json_null());
    json_object_set_new(rat, "hp_to_testpmd_over_testpmd_to_hp",
                        x->has_tp_dir ? json_real(x->tp_dir) : json_null());
    json_object_set_new(rat, "hp_over_testpmd_to_testpmd",
                        x->has_hp_vs_tp ? json_real(x->hp_vs_tp) : json_null());
    json_object_set_new(rat, "hp_over_mem_cross_cpu",
                        x->has_hp_vs_mem ? json_real(x->hp_vs_mem) : json_null());
    json_object_set_new(rat, "tcp_gbps_over_goal_20",
                        rows[R_TCP].n ? json_real(x->tcp_goal) : json_null());
    json_object_set_new(rat, "tcp_over_mem",
                        x->has_tcp_mem ? json_real(x->tcp_vs_mem) : json_null());
    json_object_set_new(rat, "tcp_over_kernel_loopback",
                        x->has_tcp_k ? json_real(x->tcp_vs_kernel) : json_null());
    json_object_set_new(rat, "tcp_4mib_buffers_over_defaults",
                        x->has_tcp_big ? json_real(x->tcp_big) : json_null());
    json_object_set_new(root, "ratios", rat);
    json_dumpf(root, f, JSON_COMPACT);
    fputc('\n', f);
    json_decref(root);
}

static void print_table(FILE *f, const struct row *rows, const struct ratios *x, int reps,
                        double secs, int a, int b)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "\n== memif: two processes over shared memory, each pinned to its CPU\n");
    fprintf(f, "cpu:        %s\ncompiler:   %s\nflags:      %s\n", cpu, tool_compiler(),
            tool_build_flags());
    fprintf(f,
            "setup:      receiver on CPU %d, sender on CPU %d (testpmd: its forwarding lcore "
            "there); %d round%s\n"
            "            of %.2g s per row, rows alternating; medians; 64-byte frames, rings of "
            "1024\n\n",
            a, b, reps, reps == 1 ? "" : "s", secs);
    fprintf(f, "  %-16s %14s %6s  %s\n", "row", "median", "rxCPU", "what");
    for (int i = 0; i < NROWS; i++) {
        char sh[16] = "";
        if (rows[i].n && rows[i].med_share > 0)
            snprintf(sh, sizeof sh, "%3.0f%%", rows[i].med_share * 100);
        if (rows[i].n)
            fprintf(f, "  %-16s %7.3f %-6s %6s  %s\n", rows[i].name, rows[i].med, rows[i].unit, sh,
                    rows[i].what);
        else
            fprintf(f, "  %-16s %14s %6s  %s: %s\n", rows[i].name, "-", "", rows[i].what,
                    rows[i].why);
    }
    fprintf(
        f,
        "  (rxCPU: the receiving process's CPU time over its wall time: below 100%%, the machine\n"
        "   gave it less than its CPU, and the rate is bounded by that share, not by the link)\n");
    fprintf(f, "\nratios\n");
    if (rows[R_HP].n)
        fprintf(f, "  hp>hp / 20 Mpps goal:                  %.3fx\n", x->hp_goal);
    if (x->has_tp_dir)
        fprintf(f, "  hp>testpmd / testpmd>hp (goal >= 1):   %.3fx\n", x->tp_dir);
    if (x->has_hp_vs_tp)
        fprintf(f, "  hp>hp / testpmd>testpmd:               %.3fx\n", x->hp_vs_tp);
    if (x->has_hp_vs_mem)
        fprintf(f, "  hp>hp / mem x-cpu:                     %.3fx\n", x->hp_vs_mem);
    if (rows[R_TCP].n)
        fprintf(f, "  tcp / 20 Gbit/s goal:                  %.3fx\n", x->tcp_goal);
    if (x->has_tcp_k)
        fprintf(f, "  tcp over memif / kernel over loopback: %.3fx\n", x->tcp_vs_kernel);
    if (x->has_tcp_mem)
        fprintf(f, "  tcp over memif / tcp over mem:         %.3fx\n", x->tcp_vs_mem);
    if (x->has_tcp_big)
        fprintf(f, "  tcp 4 MiB buffers / default buffers:   %.3fx\n", x->tcp_big);
}

int bench_memif(const struct bench_opts *o, FILE *table)
{
    int reps = o->reps ? o->reps : (o->quick ? 1 : 3), n = tool_ncpus();
    double secs = o->quick ? 1 : 2, warm = 0.5;
    int b = o->cpu >= 0 ? o->cpu : n - 1, a = b == 0 ? (n > 1 ? 1 : 0) : 0;
    struct row rows[NROWS] = {
        [R_HP] = {.name = "hp>hp",
                  .unit = "Mpps",
                  .what = "hotpath txonly (client, copy) -> hotpath rxdrop (server)"},
        [R_HP_ZC] = {.name = "hp>hp zc",
                     .unit = "Mpps",
                     .what = "the same, the client in zero-copy mode"},
        [R_MEM] = {.name = "mem x-cpu",
                   .unit = "Mpps",
                   .what =
                       "gen rxdrop on an in-process mem pair fed from the other CPU (no memif)"},
        [R_HP_TP] = {.name = "hp>testpmd",
                     .unit = "Mpps",
                     .what = "hotpath txonly (client) -> testpmd rxonly (server)"},
        [R_TP_HP] = {.name = "testpmd>hp",
                     .unit = "Mpps",
                     .what = "testpmd txonly (client) -> hotpath rxdrop (server)"},
        [R_TP_TP] = {.name = "testpmd>testpmd",
                     .unit = "Mpps",
                     .what = "testpmd txonly (client) -> testpmd rxonly (server), for scale"},
        [R_TCP] = {.name = "tcp hp/memif",
                   .unit = "Gbit/s",
                   .what = "one TCP flow, MTU 1500, hotpath in two processes over memif"},
        [R_TCP_BIG] = {.name = "tcp 4MiB win",
                       .unit = "Gbit/s",
                       .what = "the same with 4 MiB send and receive buffers"},
        [R_TCP_MEM] = {.name = "tcp hp/mem",
                       .unit = "Gbit/s",
                       .what = "the same flow, two threads over an in-process mem pair (no memif)"},
        [R_TCPK] = {.name = "tcp kernel/lo",
                    .unit = "Gbit/s",
                    .what = "one TCP flow, the kernel over loopback, same two CPUs"},
    };
    run_rounds(rows, reps, a, b, warm, secs, testpmd_missing(), o);
    struct ratios x;
    compute_ratios(rows, &x);
    if (o->json)
        print_json(stdout, rows, &x, reps, secs, a, b);
    if (o->json_out)
        print_json(o->json_out, rows, &x, reps, secs, a, b);
    if (!o->json)
        print_table(table, rows, &x, reps, secs, a, b);
    return rows[R_HP].n && rows[R_TCP].n ? 0 : 1;
}
