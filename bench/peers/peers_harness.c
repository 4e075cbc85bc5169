/* SPDX-License-Identifier: BSD-3-Clause */
/* The peers harness's driver: the workloads of `hotpath bench peers`, written once against struct ph_ops and run on hotpath and lwIP alike. */
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peers_harness.h"
#include "tool.h"

const uint8_t ph_addr[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};
const uint8_t ph_mac[2][6] = {{0x02, 0, 0, 0, 0, 1}, {0x02, 0, 0, 0, 0, 2}};

static const struct {
    const char *name, *unit;
    bool higher_better;
} results[PH_NRESULT] = {
    [PH_RR1] = {"tcp_rr_1", "ns/txn", false},
    [PH_RR1K] = {"tcp_rr_1000", "ns/txn", false},
    [PH_BULK] = {"tcp_bulk", "Gbit/s", true},
    [PH_CRR] = {"tcp_crr", "conn/s", true},
    [PH_UDP] = {"udp_echo", "echo/s", true},
    [PH_IDLE] = {"idle_rss", "B/conn", false},
    [PH_IDLE + 1] = {"idle_accounted", "B/conn", false},
    [PH_IDLE + 2] = {"idle_held", "B/conn", false},
};

const char *ph_result_name(int r)
{
    return r >= 0 && r < PH_NRESULT ? results[r].name : "?";
}

const char *ph_result_unit(int r)
{
    return r >= 0 && r < PH_NRESULT ? results[r].unit : "?";
}

bool ph_result_higher_better(int r)
{
    return r >= 0 && r < PH_NRESULT && results[r].higher_better;
}

int ph_result_find(const char *name)
{
    for (int r = 0; r < PH_NRESULT; r++)
        if (strcmp(results[r].name, name) == 0)
            return r;
    return -1;
}

uint64_t ph_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- the workloads' state and callbacks ------------------------------------------- */

/* An endpoint the workload knows: a client slot (side 0) or an accepted
 * connection (side 1). The stacks carry a pointer to it. */
struct ep {
    struct ph_conn *c;
    int side;
    uint32_t got;    /* bytes of the message being received */
    struct ep *next; /* free list of server endpoints */
};

struct run {
    struct ph_app app; /* first: the callbacks get &r->app */
    const struct ph_ops *ops;
    struct ph_pair *p;
    enum ph_workload w;
    struct ep *cli, *srv, *srv_free;
    uint32_t ncli, nsrv;
    uint32_t connected, accepted;
    struct ep **restart; /* crr: client slots to reconnect after this poll */
    uint32_t nrestart;
    uint64_t count;   /* transactions, bytes, connections or echoes */
    uint64_t stop_at; /* crr: stop the window at this count (0: never) */
    int err;
    char why[160];
    uint8_t *chunk; /* bulk: what the client writes */
};

static void fail(struct run *r, int err, const char *what)
{
    if (r->err)
        return;
    r->err = err ? err : EIO;
    snprintf(r->why, sizeof r->why, "%s: %s", what, strerror(r->err < 0 ? -r->err : r->err));
}

static void *on_accepted(struct ph_app *a, struct ph_conn *c)
{
    struct run *r = (struct run *)a;
    struct ep *e = r->srv_free;
    if (!e) {
        fail(r, ENOSPC, "more connections accepted than expected");
        return NULL;
    }
    r->srv_free = e->next;
    e->c = c;
    e->side = 1;
    e->got = 0;
    r->accepted++;
    return e;
}

static void send_all(struct run *r, struct ph_conn *c, const void *d, size_t n)
{
    long k = r->ops->send(c, d, n);
    if (k != (long)n)
        fail(r, k < 0 ? (int)-k : ENOBUFS, "a small message did not fit the send buffer");
}

/* Bulk: write until the stack takes no more; sendable() brings us back. */
static void pump(struct run *r, struct ph_conn *c)
{
    for (;;) {
        long k = r->ops->send(c, r->chunk, PH_BULK_CHUNK);
        if (k <= 0) {
            if (k < 0)
                fail(r, (int)-k, "bulk send");
            return;
        }
    }
}

static void on_connected(struct ph_app *a, struct ph_conn *c, void *user)
{
    struct run *r = (struct run *)a;
    struct ep *e = user;
    static const uint8_t req[PH_CRR_MSG] = {'q'};
    e->c = c;
    e->got = 0;
    r->connected++;
    if (r->w == PH_RR1 || r->w == PH_RR1K)
        send_all(r, c, "x", 1);
    else if (r->w == PH_BULK)
        pump(r, c);
    else if (r->w == PH_CRR)
        send_all(r, c, req, sizeof req);
}

static void crr_recv(struct run *r, struct ep *e, size_t n)
{
    static const uint8_t resp[PH_CRR_MSG] = {'r'};
    if (e->side == 1 && n == 0) { /* the client's FIN: close ours */
        r->ops->close_conn(e->c);
        e->c = NULL;
        e->next = r->srv_free;
        r->srv_free = e;
        return;
    }
    e->got += (uint32_t)n;
    if (n == 0 || e->got < PH_CRR_MSG)
        return;
    e->got = 0;
    if (e->side == 1) {
        send_all(r, e->c, resp, sizeof resp);
        return;
    }
    /* The response is in: close (we are first, as an HTTP/1.0 client), count,
     * and open the slot's next connection after this poll. */
    r->ops->close_conn(e->c);
    e->c = NULL;
    r->count++;
    r->restart[r->nrestart++] = e;
}

static void on_recv(struct ph_app *a, struct ph_conn *c, void *user, const void *p, size_t n)
{
    struct run *r = (struct run *)a;
    struct ep *e = user;
    switch (r->w) {
    case PH_RR1:
    case PH_RR1K:
        if (n == 0)
            fail(r, EPIPE, "tcp_rr: the peer closed");
        else if (e->side == 1)
            send_all(r, c, p, n);
        else {
            r->count += n;
            send_all(r, c, "x", 1);
        }
        break;
    case PH_BULK:
        if (n == 0)
            fail(r, EPIPE, "tcp_bulk: the sender closed");
        r->count += n;
        break;
    case PH_CRR:
        crr_recv(r, e, n);
        break;
    default:
        if (n)
            fail(r, EPROTO, "data on an idle connection");
        break;
    }
}

static void on_sendable(struct ph_app *a, struct ph_conn *c, void *user)
{
    struct run *r = (struct run *)a;
    (void)user;
    if (r->w == PH_BULK)
        pump(r, c);
}

static void on_failed(struct ph_app *a, void *user, int err)
{
    struct run *r = (struct run *)a;
    (void)user;
    fail(r, err, "a connection failed");
}

static void on_udp(struct ph_app *a, int side, const void *p, size_t n)
{
    struct run *r = (struct run *)a;
    int rc = r->ops->udp_send(r->p, side, p, n); /* echo, or the client's next */
    if (side == 0)
        r->count++;
    if (rc < 0)
        fail(r, -rc, "udp send");
}

/* ---- driving ------------------------------------------------------------------------ */

static void restart_slots(struct run *r)
{
    /* Once the window is over the slots wait here for the next one. */
    while (r->nrestart && !r->err && !(r->stop_at && r->count >= r->stop_at)) {
        struct ep *e = r->restart[--r->nrestart];
        int rc = r->ops->connect(r->p, e);
        if (rc < 0)
            fail(r, -rc, "tcp_crr: connect");
    }
}

/* Poll both instances in turn until the clock passes until (or the run
 * fails or reaches stop_at). */
static void spin(struct run *r, double until)
{
    for (unsigned i = 1; !r->err; i++) {
        r->ops->poll(r->p, 0);
        r->ops->poll(r->p, 1);
        if (r->nrestart)
            restart_slots(r);
        if ((i & 15) == 0 && (tool_now_s() >= until || (r->stop_at && r->count >= r->stop_at)))
            break;
    }
}

/* The measured window: its own function, so that callgrind can collect
 * inside it alone (valgrind --toggle-collect=ph_measured_window). */
__attribute__((noinline)) void ph_measured_window(struct run *r, double secs,
                                                  struct ph_result *res);
__attribute__((noinline)) void ph_measured_window(struct run *r, double secs, struct ph_result *res)
{
    uint64_t n0 = r->count, f0 = r->ops->frames(r->p);
    double t0 = tool_now_s(), c0 = tool_thread_cpu_s();
    spin(r, t0 + secs);
    res->cpu_s = tool_thread_cpu_s() - c0;
    res->seconds = tool_now_s() - t0;
    res->count = r->count - n0;
    res->frames = r->ops->frames(r->p) - f0;
}

/* Open n connections from side 0 and wait until side 1 has accepted them
 * all: the first alone (its SYN resolves the neighbour, while the others
 * would wait in the stack's queue for it), then at most 128 handshakes at a
 * time. 0 or -1 (r->err set). */
static int open_conns(struct run *r, uint32_t n)
{
    double deadline = tool_now_s() + 30;
    uint32_t asked = 0;
    while (!r->err && (r->connected < n || r->accepted < n)) {
        while (asked < n && asked - r->connected < (r->connected ? 128u : 1u)) {
            int rc = r->ops->connect(r->p, &r->cli[asked]);
            if (rc < 0) {
                fail(r, -rc, "connect");
                return -1;
            }
            asked++;
        }
        r->ops->poll(r->p, 0);
        r->ops->poll(r->p, 1);
        if (tool_now_s() > deadline) {
            snprintf(r->why, sizeof r->why, "only %u of %u connections in 30 s (%u accepted)",
                     r->connected, n, r->accepted);
            r->err = ETIMEDOUT;
        }
    }
    return r->err ? -1 : 0;
}

static int run_init(struct run *r, const struct ph_ops *ops, enum ph_workload w)
{
    memset(r, 0, sizeof *r);
    r->app = (struct ph_app){on_accepted, on_connected, on_recv, on_sendable, on_failed, on_udp};
    r->ops = ops;
    r->w = w;
    r->ncli = w == PH_RR1K   ? PH_RR_FLOWS
              : w == PH_CRR  ? PH_CRR_PAR
              : w == PH_IDLE ? PH_IDLE_CONNS
                             : 1;
    r->nsrv = w == PH_CRR ? PH_CRR_PAR * 4 : r->ncli;
    r->cli = calloc(r->ncli, sizeof *r->cli);
    r->srv = calloc(r->nsrv, sizeof *r->srv);
    r->restart = calloc(r->ncli, sizeof *r->restart);
    r->chunk = w == PH_BULK ? malloc(PH_BULK_CHUNK) : NULL;
    if (!r->cli || !r->srv || !r->restart || (w == PH_BULK && !r->chunk))
        return -1;
    if (r->chunk)
        for (size_t k = 0; k < PH_BULK_CHUNK; k++)
            r->chunk[k] = (uint8_t)(k * 7);
    /* Touched now, so that the idle workload's RSS growth is the stack's alone. */
    memset(r->cli, 0, r->ncli * sizeof *r->cli);
    memset(r->restart, 0, r->ncli * sizeof *r->restart);
    for (uint32_t i = 0; i < r->nsrv; i++) {
        r->srv[i].next = i + 1 < r->nsrv ? &r->srv[i + 1] : NULL;
        r->srv[i].side = 1;
    }
    r->srv_free = r->srv;
    return 0;
}

static void run_free(struct run *r)
{
    if (r->p)
        r->ops->close(r->p);
    free(r->cli);
    free(r->srv);
    free(r->restart);
    free(r->chunk);
}

/* The connections (or sockets) of w, and its first messages. 0 or -1. */
static int setup(struct run *r)
{
    if (r->w == PH_UDP) {
        static const uint8_t msg[PH_UDP_MSG] = {'u'};
        int rc = r->ops->udp_open(r->p);
        for (int i = 0; rc == 0 && i < PH_UDP_WINDOW; i++)
            rc = r->ops->udp_send(r->p, 0, msg, sizeof msg);
        if (rc < 0)
            fail(r, -rc, "udp");
        return rc < 0 ? -1 : 0;
    }
    int rc = r->ops->listen(r->p, 1024);
    if (rc < 0) {
        fail(r, -rc, "listen");
        return -1;
    }
    return open_conns(r, r->ncli);
}

static void result_from(enum ph_workload w, struct ph_result *res)
{
    double cpu = res->cpu_s;
    res->unit = ph_result_unit((int)w);
    if (!res->count || !(cpu > 0)) {
        snprintf(res->why, sizeof res->why, "nothing completed in the window");
        return;
    }
    double n = (double)res->count;
    switch (w) {
    case PH_RR1:
    case PH_RR1K:
        res->value = cpu * 1e9 / n;
        break;
    case PH_BULK:
        res->value = n * 8 / cpu / 1e9;
        break;
    default:
        res->value = n / cpu;
        break;
    }
    res->ok = true;
}

/* idle: RSS before and after PH_IDLE_CONNS connections, and the stack's count. */
static void idle_measure(struct run *r, struct ph_result res[2])
{
    res[0].unit = res[1].unit = "B/conn";
    malloc_trim(0); /* free heap pages back, so that the growth is counted */
    uint64_t rss0 = ph_rss_bytes();
    if (setup(r) < 0)
        return;
    for (int i = 0; i < 8; i++) { /* the last ACKs */
        r->ops->poll(r->p, 0);
        r->ops->poll(r->p, 1);
    }
    uint64_t rss1 = ph_rss_bytes(), conns = 0;
    uint64_t bytes = r->ops->conn_bytes(r->p, &conns);
    uint64_t ends = 2ull * r->ncli;
    res[0].count = ends;
    res[0].value = rss1 > rss0 ? (double)(rss1 - rss0) / (double)ends : 0;
    res[0].ok = true;
    res[1].count = conns;
    res[1].value = conns ? (double)bytes / (double)conns : 0;
    res[1].ok = conns > 0;
    if (!res[1].ok)
        snprintf(res[1].why, sizeof res[1].why, "the stack reported no connections");
}

/* One pair: set up, warm up, one measured window (added to res[0]). 0 or -1. */
static int one_pair(const struct ph_ops *ops, enum ph_workload w, const struct ph_run_opts *o,
                    double secs, struct ph_result res[2])
{
    static struct run r; /* one run at a time */
    struct ph_cfg cfg = {.w = w,
                         .max_conns = w == PH_IDLE ? PH_IDLE_CONNS + 64 : PH_CRR_MAX + 1024};
    struct ph_result one = {0};
    if (run_init(&r, ops, w) < 0) {
        snprintf(r.why, sizeof r.why, "out of memory");
        r.err = ENOMEM;
    } else if (!(r.p = ops->open(&cfg, &r.app, r.why, sizeof r.why))) {
        r.err = EIO;
    } else if (w == PH_IDLE) {
        idle_measure(&r, res);
    } else if (setup(&r) == 0) {
        /* tcp_crr: every connection of the round leaves a TIME_WAIT behind
         * at the client, so the round stops short of the ephemeral ports. */
        r.stop_at = w == PH_CRR ? PH_CRR_WARM : 0;
        spin(&r, tool_now_s() + o->warm_s);
        r.stop_at = w == PH_CRR ? PH_CRR_MAX - PH_CRR_PAR : 0;
        if (!r.err)
            ph_measured_window(&r, secs, &one);
        res[0].cpu_s += one.cpu_s;
        res[0].seconds += one.seconds;
        res[0].count += one.count;
        res[0].frames += one.frames;
    }
    int rc = r.err ? -1 : 0;
    for (int i = 0; r.err && i < 2; i++) {
        res[i].ok = false;
        snprintf(res[i].why, sizeof res[i].why, "%s", r.why);
    }
    run_free(&r);
    return rc;
}

void ph_run(const struct ph_ops *ops, enum ph_workload w, const struct ph_run_opts *o,
            struct ph_result res[2])
{
    memset(res, 0, 2 * sizeof *res);
    cpu_set_t saved;
    bool restore = o->cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0;
    if (o->cpu >= 0)
        tool_pin(o->cpu);
    /* tcp_crr's rounds end at PH_CRR_MAX connections, in a few tens of ms on
     * a fast stack: fresh pairs until the window's time is spent. */
    int rc = one_pair(ops, w, o, o->seconds, res);
    for (int i = 1; rc == 0 && w == PH_CRR && i < 100 && res[0].seconds < o->seconds; i++)
        rc = one_pair(ops, w, o, o->seconds - res[0].seconds, res);
    if (rc == 0 && w != PH_IDLE)
        result_from(w, &res[0]);
    if (restore)
        sched_setaffinity(0, sizeof saved, &saved);
}
