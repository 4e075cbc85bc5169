/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath's sender in `hotpath bench paths`: a stack over afpacket on the client namespace's interface (the kernel's address taken off it), bulk, short flows and tail-loss trials against the kernel's receiver. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "bench_paths.h"

#define CHUNK     (128 * 1024)
#define POOL_BUFS 16384
#define SNDBUF    (4u << 20) /* CUBIC grows past the path's 500 KB (BDP + queue) */

static const uint8_t CLIENT4[4] = {198, 18, 0, 1}, SERVER4[4] = {198, 18, 0, 2};

struct hps {
    struct hp_pool *pool;
    struct hp_link *link;
    struct hp_stack *st;
    int fd; /* the link's, to sleep on; -1: none */
    int tag;
};

static void hps_close(struct hps *h)
{
    hp_stack_destroy(h->st);
    if (h->link)
        hp_pool_thread_flush(hp_link_pool(h->link));
    hp_link_close(h->link);
    if (h->pool)
        hp_pool_destroy(h->pool);
    memset(h, 0, sizeof *h);
}

/* The TCP knobs of the job's sender. */
static void hps_config(const struct paths_job *j, struct hp_tcp_config *tc)
{
    memset(tc, 0, sizeof *tc);
    tc->sndbuf = SNDBUF;
    bool reno = j->sender == PS_HOTPATH_RENO;
    tc->cc = reno ? HP_TCP_CC_NEWRENO : HP_TCP_CC_CUBIC;
    tc->no_sack = reno; /* and so no RACK-TLP */
    tc->ecn = j->ecn ? HP_TCP_ECN_ON : HP_TCP_ECN_PASSIVE;
}

/* The link: afxdp in copy mode, whose frames are there as soon as they
 * arrive, else afpacket (its receive blocks are handed over within 1 ms:
 * ACKs a little later, in batches). NULL with j->why. */
static struct hp_link *hps_link(struct hps *h, struct paths_job *j)
{
    struct hp_link_config xc = {.iface = j->iface,
                                .flags = HP_LINK_F_COPY,
                                .ring_size = 2048,
                                .n_frames = POOL_BUFS,
                                .frame_size = 2048};
    struct hp_link *l = hp_link_open("afxdp", &xc);
    if (l) {
        j->link = "afxdp";
        return l;
    }
    char why[160];
    snprintf(why, sizeof why, "%s", hp_link_error());
    struct hp_pool_config pc = {.name = "paths", .n_bufs = POOL_BUFS};
    h->pool = hp_pool_create(&pc);
    struct hp_link_config lc = {.iface = j->iface, .pool = h->pool};
    l = h->pool ? hp_link_open("afpacket", &lc) : NULL;
    if (!l)
        snprintf(j->why, sizeof j->why, "neither afxdp (%.80s) nor afpacket (%.80s) on %s", why,
                 h->pool ? hp_link_error() : "no pool", j->iface);
    j->link = "afpacket";
    return l;
}

/* The stack on the job's interface. 0, or -1 with j->why. */
static int hps_open(struct hps *h, struct paths_job *j)
{
    memset(h, 0, sizeof *h);
    h->fd = -1;
    h->link = hps_link(h, j);
    if (!h->link)
        return -1;
    struct hp_stack_config sc = {.name = "paths", .flags = HP_STACK_F_NO_DAD};
    h->st = hp_stack_create(&sc);
    int ifx = h->st ? hp_stack_add_iface(h->st, h->link) : -ENOMEM;
    struct hp_tcp_config tc;
    hps_config(j, &tc);
    int rc = ifx < 0 ? ifx : hp_stack_add_addr(h->st, ifx, HP_AF_INET4, CLIENT4, 24);
    if (rc == 0)
        rc = hp_tcp_configure(h->st, &tc);
    if (rc < 0) {
        snprintf(j->why, sizeof j->why, "cannot set up the stack: %s", hp_strerror(rc));
        return -1;
    }
    if (hp_link_caps(h->link) & HP_LINK_CAP_FD)
        h->fd = hp_link_fd(h->link);
    return 0;
}

/* One turn of the stack; its events are read and dropped (the callers ask
 * their sockets directly). The work done. */
static int hps_poll(struct hps *h)
{
    int work = hp_stack_poll(h->st);
    struct hp_event ev[32];
    while (hp_stack_events(h->st, ev, 32) == 32)
        ;
    return work;
}

/* Sleep until a frame comes or the next timer is due, at most 1 ms: the
 * sender shares its CPU with the kernel's receiver, so it does not spin. */
static void hps_wait(struct hps *h)
{
    int64_t ns = hp_stack_next_timer_ns(h->st);
    if (ns < 0 || ns > 1000000)
        ns = 1000000;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ns};
    if (h->fd < 0) {
        nanosleep(&ts, NULL);
        return;
    }
    struct pollfd p = {.fd = h->fd, .events = POLLIN};
    ppoll(&p, 1, &ts, NULL);
}

/* A connection to the sink, established (up to 10 s). NULL with j->why. */
static struct hp_tcp_sock *hps_connect(struct hps *h, struct paths_job *j)
{
    struct hp_sockaddr to = {.family = HP_AF_INET4, .port = PATHS_PORT};
    memcpy(to.addr, SERVER4, 4);
    struct hp_tcp_sock *t = hp_tcp_open(h->st, HP_AF_INET4, &h->tag);
    int rc = t ? hp_tcp_connect(t, &to) : -errno;
    if (rc == -EINPROGRESS)
        rc = 0;
    for (double end = tool_now_s() + 10;
         rc == 0 && hp_tcp_state(t) != HP_TCP_ESTABLISHED && tool_now_s() < end;) {
        if (hps_poll(h) == 0)
            hps_wait(h);
        if ((rc = hp_tcp_error(t)) != 0)
            break;
    }
    if (rc == 0 && hp_tcp_state(t) == HP_TCP_ESTABLISHED)
        return t;
    snprintf(j->why, sizeof j->why, "connect to 198.18.0.2:%d: %s", PATHS_PORT,
             rc ? hp_strerror(rc) : "not established within 10 s");
    hp_tcp_abort(t);
    return NULL;
}

/* Send what the socket takes; -errno of a failure, else the bytes sent. */
static long send_some(struct hp_tcp_sock *t, const uint8_t *buf, size_t len)
{
    long total = 0, n = 0;
    while ((size_t)total < len && (n = hp_tcp_send(t, buf + total, len - (size_t)total)) > 0)
        total += n;
    return total ? total : n == -EAGAIN ? 0 : n;
}

static void hps_bulk(struct hps *h, struct paths_job *j, const uint8_t *buf)
{
    struct hp_tcp_sock *t = hps_connect(h, j);
    if (!t)
        return;
    uint64_t r0 = hp_stack_counter(h->st, HP_CTR_TCP_RETRANS_SEGS),
             t0 = hp_stack_counter(h->st, HP_CTR_TCP_TIMEOUTS);
    atomic_store(&j->ready, 1);
    long n = 0;
    while (n >= 0 && atomic_load_explicit(j->phase, memory_order_acquire) != HB_STOP) {
        int work = hps_poll(h);
        n = send_some(t, buf, CHUNK);
        if (work == 0 && n == 0)
            hps_wait(h);
    }
    if (n < 0)
        snprintf(j->why, sizeof j->why, "send: %s", hp_strerror((int)n));
    j->retrans = hp_stack_counter(h->st, HP_CTR_TCP_RETRANS_SEGS) - r0;
    j->rto = hp_stack_counter(h->st, HP_CTR_TCP_TIMEOUTS) - t0;
    struct hp_tcp_info ti;
    if (hp_tcp_get_info(t, &ti) == 0) {
        j->sack = ti.sack_ok;
        j->ecn_ok = ti.ecn_ok;
    }
    j->bulk_ok = n >= 0;
    hp_tcp_abort(t);
}

/* One short flow, as the kernel's (paths_kernel.c): ms, or -1. */
static double hps_flow(struct hps *h, struct paths_job *j, const uint8_t *buf)
{
    uint64_t t0 = paths_now_ns();
    struct hp_sockaddr to = {.family = HP_AF_INET4, .port = PATHS_PORT};
    memcpy(to.addr, SERVER4, 4);
    struct hp_tcp_sock *t = hp_tcp_open(h->st, HP_AF_INET4, &h->tag);
    long rc = t ? hp_tcp_connect(t, &to) : -errno;
    size_t sent = 0;
    bool shut = false, fin = false;
    uint8_t sink[256];
    for (double end = tool_now_s() + 30; (rc == 0 || rc == -EINPROGRESS) && tool_now_s() < end;) {
        int work = hps_poll(h);
        long n = sent < PATHS_FLOW_BYTES ? send_some(t, buf, PATHS_FLOW_BYTES - sent) : 0;
        if (n < 0 && n != -ENOTCONN) {
            rc = n;
            break;
        }
        sent += n > 0 ? (size_t)n : 0;
        /* The FIN once everything is queued and the handshake is over (a
         * half-close in SYN_SENT abandons the connection, RFC 9293 3.10.4). */
        if (sent == PATHS_FLOW_BYTES && !shut && hp_tcp_state(t) == HP_TCP_ESTABLISHED)
            shut = hp_tcp_shutdown(t, HP_TCP_SHUT_WR) == 0;
        long r = hp_tcp_recv(t, sink, sizeof sink);
        if (r == 0 && shut) {
            fin = true; /* the receiver's FIN: it has everything */
            break;
        }
        if (r < 0 && r != -EAGAIN && r != -ENOTCONN)
            rc = r;
        if (work == 0 && n <= 0 && r < 0)
            hps_wait(h);
    }
    uint64_t t1 = paths_now_ns();
    bool ok = fin;
    if (!ok)
        snprintf(j->why, sizeof j->why, "a short flow failed: %s (%zu bytes sent)",
                 rc && rc != -EINPROGRESS ? hp_strerror((int)rc) : "no FIN within 30 s", sent);
    hp_tcp_close(t);
    return ok ? (double)(t1 - t0) / 1e6 : -1;
}

static void hps_short(struct hps *h, struct paths_job *j, const uint8_t *buf)
{
    uint64_t r0 = hp_stack_counter(h->st, HP_CTR_TCP_RETRANS_SEGS),
             t0 = hp_stack_counter(h->st, HP_CTR_TCP_TIMEOUTS);
    for (int i = 0; i < j->flows && i < PATHS_MAX_FLOWS; i++) {
        double ms = hps_flow(h, j, buf);
        if (ms < 0)
            j->failed++;
        else
            j->fct[j->nfct++] = ms;
    }
    j->short_retrans = hp_stack_counter(h->st, HP_CTR_TCP_RETRANS_SEGS) - r0;
    j->short_rto = hp_stack_counter(h->st, HP_CTR_TCP_TIMEOUTS) - t0;
}

/* Run the stack until the sink read `target` bytes (0 after 3 s: the time
 * it read the last of them otherwise), then until t has nothing unacked. */
static uint64_t hps_until(struct hps *h, struct hp_tcp_sock *t, struct paths_sink *s,
                          uint64_t target)
{
    uint64_t done = 0;
    for (double end = tool_now_s() + 3; tool_now_s() < end;) {
        if (!done && atomic_load_explicit(&s->total, memory_order_acquire) >= target)
            done = atomic_load_explicit(&s->last_ns, memory_order_acquire);
        struct hp_tcp_info ti;
        if (done && (hp_tcp_get_info(t, &ti) < 0 || ti.unacked == 0))
            break;
        if (hps_poll(h) == 0)
            hps_wait(h);
    }
    return done;
}

/* One tail-loss trial on a new connection, as the kernel's (paths_kernel.c). */
static void hps_trial(struct hps *h, struct paths_job *j, const uint8_t *buf)
{
    struct hp_tcp_sock *t = hps_connect(h, j);
    if (!t)
        return;
    long mss = 0;
    struct hp_tcp_info a, b;
    hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1);
    if (hp_tcp_getopt(t, HP_TCP_OPT_MAXSEG, &mss) < 0 || mss <= 0 || mss > 9000)
        mss = 1448;
    hp_tcp_get_info(t, &a);
    unsigned segs = a.cwnd / (uint32_t)mss;
    segs = segs < 2 ? 2 : segs > 10 ? 10 : segs;
    size_t burst = segs * (size_t)mss;
    uint64_t target = atomic_load(&j->sink->total) + burst;
    uint64_t t0 = paths_now_ns();
    if (send_some(t, buf, burst) != (long)burst) {
        snprintf(j->why, sizeof j->why, "tail trial: the send buffer did not take %zu bytes",
                 burst);
        hp_tcp_abort(t);
        return;
    }
    hps_poll(h);
    uint64_t done = hps_until(h, t, j->sink, target);
    hp_tcp_get_info(t, &b);
    j->burst_segs += segs;
    j->probes += b.tlp_probes - a.tlp_probes;
    j->repair[j->ntrials] = done ? (double)(done - t0) / 1e6 : 3000;
    j->trial_rto[j->ntrials++] = b.timeouts > a.timeouts;
    hp_tcp_close(t);
}

static void hps_tail(struct hps *h, struct paths_job *j, const uint8_t *buf)
{
    for (int k = 0; k < j->trials && k < PATHS_MAX_TRIALS; k++) {
        int before = j->ntrials;
        hps_trial(h, j, buf);
        if (j->ntrials == before)
            break;
        for (double end = tool_now_s() + 0.01; tool_now_s() < end;)
            if (hps_poll(h) == 0)
                hps_wait(h);
    }
}

void *paths_hotpath_sender(void *arg)
{
    struct paths_job *j = arg;
    uint8_t *buf = calloc(1, CHUNK);
    struct hps h = {.fd = -1};
    if (!buf || tool_ns_enter(j->ns) < 0) {
        snprintf(j->why, sizeof j->why, "cannot enter %s", j->ns);
    } else {
        if (j->cpu >= 0)
            tool_pin(j->cpu);
        /* The kernel's TCP runs in softirq context, ahead of every process;
         * hotpath's runs on this thread, which sleeps when idle: at
         * real-time priority it is as prompt on a busy machine. */
        struct sched_param sp = {.sched_priority = PATHS_RT_PRIO};
        j->rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
        if (hps_open(&h, j) == 0) {
            if (j->phase)
                hps_bulk(&h, j, buf);
            if (j->flows && (!j->phase || j->bulk_ok))
                hps_short(&h, j, buf);
            if (j->trials)
                hps_tail(&h, j, buf);
        }
        hps_close(&h);
    }
    if (j->phase && !j->bulk_ok)
        atomic_store(&j->ready, -1);
    free(buf);
    hp_thread_exit();
    return NULL;
}
