/* SPDX-License-Identifier: BSD-3-Clause */
/* A layer-2 forwarder between two links, on the link API alone: bursts in, bursts out, and a sleep in poll(2) once both links are armed with hp_link_prepare_sleep. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/hotpath.h>

/*
 * Build against the installed library:
 *   cc -o l2fwd l2fwd.c $(pkg-config --cflags --libs hotpath) -pthread
 * Run:
 *   ./l2fwd                      host A -- mem -- [l2fwd] -- mem -- host B, in this
 *                                process, no privileges: A pings B through the forwarder
 *   ./l2fwd KIND IF1 IF2         forward between two interfaces (afpacket or afxdp;
 *                                root) until Ctrl-C
 */

#define BURST 32
#define PINGS 20

struct fwd {
    struct hp_link *port[2];
    int stop_fd[2]; /* a pipe: a byte on it ends the forwarder */
    _Atomic int stop;
    unsigned long frames, dropped, sleeps;
};

/* Move one burst from port `in` to the other. @return frames received. */
static int move(struct fwd *f, int in)
{
    struct hp_buf *b[BURST];
    int n = hp_link_rx_burst(f->port[in], b, BURST);
    if (n <= 0)
        return 0;
    int sent = hp_link_tx_burst(f->port[1 - in], b, (unsigned)n);
    if (sent < 0)
        sent = 0;
    if (sent < n) { /* the other side is full: drop, as a switch would */
        hp_buf_free_bulk(b + sent, (unsigned)(n - sent));
        f->dropped += (unsigned long)(n - sent);
    }
    f->frames += (unsigned long)sent;
    return n;
}

/* Nothing moved: arm both links, then sleep until a frame, a stop, or the
 * time a link asked to be looked at again. */
static void sleep_on_links(struct fwd *f)
{
    int timeout = -1;
    for (int i = 0; i < 2; i++) {
        int64_t due = -1;
        int rc = hp_link_prepare_sleep(f->port[i], &due);
        if (rc > 0)
            return; /* a frame came meanwhile: no sleep */
        if (rc < 0)
            timeout = 1; /* this link cannot wake us: nap */
        else if (due >= 0 && (timeout < 0 || due / 1000000 + 1 < timeout))
            timeout = (int)(due / 1000000 + 1);
    }
    struct pollfd p[3] = {{.fd = hp_link_fd(f->port[0]), .events = POLLIN},
                          {.fd = hp_link_fd(f->port[1]), .events = POLLIN},
                          {.fd = f->stop_fd[0], .events = POLLIN}};
    f->sleeps++;
    (void)poll(p, 3, timeout); /* EINTR (a signal): the loop looks at stop */
}

static void *fwd_main(void *arg)
{
    struct fwd *f = arg;
    unsigned idle = 0;
    while (!atomic_load(&f->stop)) {
        if (move(f, 0) + move(f, 1) > 0) {
            idle = 0;
        } else if (++idle > 64) { /* a short spin, then sleep */
            sleep_on_links(f);
            idle = 0;
        }
    }
    hp_thread_exit();
    return NULL;
}

static void fwd_stop(struct fwd *f)
{
    atomic_store(&f->stop, 1);
    if (write(f->stop_fd[1], "", 1) != 1)
        perror("l2fwd: write");
}

/* ---- the self-contained run: two hosts and the forwarder between them ---------- */

static struct hp_stack *host(struct hp_link *link, const uint8_t ip[4])
{
    struct hp_stack_config sc = {.flags = HP_STACK_F_NO_DAD};
    struct hp_stack *s = hp_stack_create(&sc);
    int ifx = s ? hp_stack_add_iface(s, link) : -1;
    if (ifx < 0 || hp_stack_add_addr(s, ifx, 4, ip, 24) < 0) {
        hp_stack_destroy(s);
        return NULL;
    }
    return s;
}

/* A pings B, one echo request every 10 ms; both hosts' loops run here. */
static uint64_t ping_through(struct hp_stack *a, struct hp_stack *b, const uint8_t ip_b[4])
{
    struct hp_loop *la = hp_loop_create(a, NULL), *lb = hp_loop_create(b, NULL);
    struct hp_loop_event ev[8];
    for (int i = 0; la && lb && i < PINGS; i++) {
        hp_stack_ping(a, 4, ip_b, 0x4c32, (uint16_t)i, 56);
        for (int k = 0; k < 5; k++) {
            hp_loop_wait(la, ev, 8, 1);
            hp_loop_wait(lb, ev, 8, 1);
        }
    }
    uint64_t replies = hp_stack_counter(a, HP_CTR_ICMP_IN_ECHO_REPS);
    hp_loop_destroy(la);
    hp_loop_destroy(lb);
    return replies;
}

static int run_mem(void)
{
    static const uint8_t ip_a[4] = {198, 18, 0, 1}, ip_b[4] = {198, 18, 0, 2};
    struct hp_link *p1[2], *p2[2];
    if (hp_link_mem_pair(NULL, p1) < 0 || hp_link_mem_pair(NULL, p2) < 0)
        return 1;
    struct fwd f = {.port = {p1[1], p2[0]}};
    struct hp_stack *a = host(p1[0], ip_a), *b = host(p2[1], ip_b);
    pthread_t th;
    if (!a || !b || pipe(f.stop_fd) < 0 || pthread_create(&th, NULL, fwd_main, &f) != 0)
        return 1;
    uint64_t replies = ping_through(a, b, ip_b);
    fwd_stop(&f);
    pthread_join(th, NULL);
    printf("l2fwd: %llu of %d pings answered through the forwarder; it moved %lu frames, "
           "dropped %lu, slept %lu times\n",
           (unsigned long long)replies, PINGS, f.frames, f.dropped, f.sleeps);
    hp_stack_destroy(a);
    hp_stack_destroy(b);
    hp_pool_thread_flush(hp_link_pool(p1[0]));
    hp_pool_thread_flush(hp_link_pool(p2[0]));
    for (int i = 0; i < 2; i++) {
        hp_link_close(p1[i]);
        hp_link_close(p2[i]);
    }
    close(f.stop_fd[0]);
    close(f.stop_fd[1]);
    return replies == PINGS && hp_pools_in_use() == 0 ? 0 : 1;
}

/* ---- between two real interfaces ---------------------------------------------- */

static struct fwd *signal_fwd;

static void on_signal(int sig)
{
    (void)sig;
    if (signal_fwd) /* atomic store and write(2): async-signal-safe */
        fwd_stop(signal_fwd);
}

static int run_ifaces(const char *kind, const char *if1, const char *if2)
{
    struct fwd f = {0};
    for (int i = 0; i < 2; i++) {
        struct hp_link_config lc = {.iface = i ? if2 : if1,
                                    .flags = strcmp(kind, "afxdp") ? 0 : HP_LINK_F_COPY};
        f.port[i] = hp_link_open(kind, &lc);
        if (!f.port[i]) {
            fprintf(stderr, "l2fwd: %s\n", hp_last_error());
            hp_link_close(f.port[0]);
            return 1;
        }
    }
    if (pipe(f.stop_fd) < 0)
        return 1;
    signal_fwd = &f;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("l2fwd: forwarding between %s and %s (%s), Ctrl-C stops\n", if1, if2, kind);
    fflush(stdout);
    fwd_main(&f);
    printf("l2fwd: moved %lu frames, dropped %lu, slept %lu times\n", f.frames, f.dropped,
           f.sleeps);
    hp_link_close(f.port[0]);
    hp_link_close(f.port[1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return run_mem();
    if (argc == 4)
        return run_ifaces(argv[1], argv[2], argv[3]);
    fprintf(stderr, "usage: l2fwd [afpacket|afxdp IF1 IF2]\n");
    return 2;
}
