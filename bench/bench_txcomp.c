/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench txcomp`: the seed's AF_XDP experiment, txonly with a completion thread, the alien policies interleaved slice by slice and compared in pairs. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/buf.h>
#include <hotpath/cksum.h>
#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "bench.h"
#include "bench_pool.h"
#include "bench_txcomp.h"
#include "gen.h"
#include "tool.h"

/*
 * The experiment (SEEDS.md, part 2): one thread transmits 64-byte frames it
 * allocates; a second thread takes the transmit completions and frees them,
 * so every free is an alien free. Linux defers such frees to the allocating
 * CPU (napi_consume_skb); that hurt this very pattern. Each run opens the
 * link afresh (so its pool is new), warms up under ADAPTIVE, then switches
 * the pool's policy slice by slice: rounds of one slice per policy, order
 * rotated, so that the policies are compared in pairs under the same
 * conditions. Over mem, the rate is the sender's, from its median timed
 * group (see struct pool_meter): the rate at which it transmits while it
 * runs (it waits when the peer does not take frames or the completions do
 * not give buffers back; the completion thread frees in bursts, so its own
 * rate says little). Over afxdp the kernel paces the sender: the rate is
 * frames over each slice's wall time.
 */

#define NPOL       TXCOMP_NPOL
#define BATCH      32
#define FRAME      64
#define GROUP      128 /* frames per timed group */
#define MAX_ROUNDS 16
#define MAX_REPS   32
static const int policies[NPOL] = {HP_ALIEN_LOCAL, HP_ALIEN_DEFER, HP_ALIEN_ADAPTIVE};

struct txc;

/* One of the two threads. */
struct side {
    struct txc *t;
    struct pool_meter meter;
    pthread_t th;
    int cpu, tid;
    uint64_t done; /* frames sent (tx) or freed (completions) */
};

struct txc {
    _Alignas(64) _Atomic unsigned mark;
    _Atomic int stop;            /* the sender stops */
    _Atomic int tx_done;         /* ...and has stopped */
    struct hp_link *link, *peer; /* peer: the mem link's other end */
    struct hp_pool *pool;
    uint8_t frame[FRAME];
    struct side tx, compl ;
    int err; /* the sender's transmit failure (-errno), or 0 */
};

/* What one run measured, per slice. */
struct txc_result {
    int nslots;
    int policy[NPOL * MAX_ROUNDS];
    double mpps[NPOL * MAX_ROUNDS], cpu_ns[NPOL * MAX_ROUNDS];
    bool ok[NPOL * MAX_ROUNDS];
    struct pool_pair pairs[POOL_MAX_PAIRS];
    int npairs;
    uint64_t tx_dropped;
    double warm_s;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

/* A 64-byte UDP/IPv4 frame from 198.18.0.1 to 198.18.0.2 (RFC 2544's
 * benchmarking range), without FCS. */
static void build_frame(uint8_t *f, const uint8_t dst[6], const uint8_t src[6])
{
    memset(f, 0, FRAME);
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x08; /* IPv4 */
    uint8_t *ip = f + 14;
    unsigned ip_len = FRAME - 14;
    ip[0] = 0x45;
    ip[2] = (uint8_t)(ip_len >> 8);
    ip[3] = (uint8_t)ip_len;
    ip[8] = 64; /* TTL */
    ip[9] = 17; /* UDP */
    static const uint8_t sa[4] = {198, 18, 0, 1}, da[4] = {198, 18, 0, 2};
    memcpy(ip + 12, sa, 4);
    memcpy(ip + 16, da, 4);
    uint16_t c = hp_cksum_ipv4_hdr(ip, 20);
    memcpy(ip + 10, &c, 2);
    uint8_t *udp = ip + 20;
    unsigned udp_len = ip_len - 20;
    udp[1] = 9; /* discard */
    udp[3] = 9;
    udp[4] = (uint8_t)(udp_len >> 8);
    udp[5] = (uint8_t)udp_len;
    c = hp_cksum_udp4(sa, da, udp, udp_len);
    memcpy(udp + 6, &c, 2);
}

/* The sender: allocate, fill, transmit; what the link does not take is
 * freed at once (a local free). */
static void *tx_main(void *arg)
{
    struct side *s = arg;
    struct txc *t = s->t;
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    s->tid = hp_thread_id();
    struct hp_buf *b[BATCH];
    while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        pool_meter_poll(&s->meter, s->done);
        if (hp_buf_alloc_bulk(t->pool, b, BATCH) != BATCH) {
            cpu_relax(); /* the completions hold them: they come back */
            continue;
        }
        for (unsigned i = 0; i < BATCH; i++) {
            memcpy(hp_buf_data(b[i]), t->frame, FRAME);
            b[i]->data_len = b[i]->pkt_len = FRAME;
        }
        int n = hp_link_tx_burst(t->link, b, BATCH);
        if (n < 0) {
            t->err = n;
            hp_buf_free_bulk(b, BATCH);
            break;
        }
        if (n < BATCH)
            hp_buf_free_bulk(b + n, BATCH - (unsigned)n);
        s->done += (unsigned)n;
        if (n > 0)
            pool_meter_add(&s->meter, (unsigned)n);
    }
    atomic_store_explicit(&t->tx_done, 1, memory_order_release);
    hp_pool_thread_flush(t->pool);
    return NULL;
}

/* The completion thread: take back what was sent (mem: what the peer
 * received) and free it: every free an alien one. */
static void *compl_main(void *arg)
{
    struct side *s = arg;
    struct txc *t = s->t;
    if (s->cpu >= 0)
        tool_pin(s->cpu);
    s->tid = hp_thread_id();
    struct hp_buf *b[BATCH];
    for (int idle = 0; idle < 1000;) {
        pool_meter_poll(&s->meter, s->done);
        int k =
            t->peer ? hp_link_rx_burst(t->peer, b, BATCH) : hp_link_completions(t->link, b, BATCH);
        if (k > 0) {
            hp_buf_free_bulk(b, (unsigned)k);
            s->done += (unsigned)k;
            idle = 0;
        } else if (atomic_load_explicit(&t->tx_done, memory_order_acquire)) {
            idle++; /* after the sender stopped: until nothing more comes */
        } else {
            cpu_relax();
        }
    }
    hp_pool_thread_flush(t->pool);
    return NULL;
}

static int open_links(struct txc *t, const char *kind, const char *iface, char *why, size_t len)
{
    if (strcmp(kind, "mem") == 0) {
        struct hp_link *ends[2];
        /* Deep enough rings that the second thread rarely waits. */
        struct hp_link_config cfg = {.ring_size = 1024};
        if (hp_link_mem_pair(&cfg, ends) < 0) {
            snprintf(why, len, "%s", hp_link_error());
            return -1;
        }
        t->link = ends[0];
        t->peer = ends[1];
    } else {
        struct hp_link_config cfg = {.iface = iface,
                                     .flags = HP_LINK_F_COPY | HP_LINK_F_TX_COMPLETIONS};
        t->link = hp_link_open(kind, &cfg);
        if (!t->link) {
            snprintf(why, len, "%s", hp_link_error());
            return -1;
        }
    }
    t->pool = hp_link_pool(t->link);
    hp_pool_set_alien_policy(t->pool, HP_ALIEN_ADAPTIVE);
    uint8_t src[6], dst[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    hp_link_mac(t->link, src);
    if (t->peer)
        hp_link_mac(t->peer, dst);
    build_frame(t->frame, dst, src);
    return 0;
}

/* The main thread's side: warm up, then the slices. */
static void drive(struct txc *t, const struct txcomp_report *rep, int r, struct txc_result *res)
{
    unsigned m = 0;
    /* Until ADAPTIVE has settled the pair (its learning is not what the
     * slices compare). */
    res->warm_s = pool_warm_adaptive(t->pool, rep->warmup_s, rep->warm_max_s);
    for (int rd = 0; rd < rep->rounds; rd++)
        for (int i = 0; i < NPOL; i++) {
            int k = (i + rd + r) % NPOL;
            res->policy[res->nslots++] = k;
            hp_pool_set_alien_policy(t->pool, policies[k]);
            sleep_s(rep->settle_s);
            atomic_store_explicit(&t->mark, ++m, memory_order_release);
            sleep_s(rep->slice_s);
            atomic_store_explicit(&t->mark, ++m, memory_order_release);
        }
    atomic_store_explicit(&t->stop, 1, memory_order_release);
    atomic_store_explicit(&t->mark, ++m, memory_order_release);
}

/* Slice j: the sender's rate, both threads' CPU per frame. */
static void slot_of(const struct txc *t, int j, double hz, uint32_t *scratch,
                    struct txc_result *res)
{
    unsigned m0 = 2 * (unsigned)j + 1, m1 = m0 + 1;
    const struct pool_mark *ca = &t->compl .meter.marks[m0], *cb = &t->compl .meter.marks[m1];
    const struct pool_mark *ta = &t->tx.meter.marks[m0], *tb = &t->tx.meter.marks[m1];
    uint64_t n = tb->done - ta->done;
    res->ok[j] = n > 0 && cb->wall > ca->wall && tb->wall > ta->wall;
    /* afxdp: the kernel paces the sender (one sendto sends 32 frames, the
     * ring fills in between), so its groups say little: the slice's rate. */
    double g = res->ok[j] && t->peer ? pool_meter_rate(&t->tx.meter, m0, m1, hz, scratch) : 0;
    res->mpps[j] = (g > 0 ? g : (double)n / (tb->wall - ta->wall)) / 1e6;
    res->cpu_ns[j] = n ? (cb->cpu - ca->cpu + tb->cpu - ta->cpu) * 1e9 / (double)n : 0;
}

static void collect(struct txc *t, struct txc_result *res)
{
    double hz = pool_meter_hz(&t->tx.meter, 1, 2 * (unsigned)res->nslots);
    uint32_t *scratch = malloc((size_t)t->tx.meter.max_groups * sizeof(uint32_t));
    for (int j = 0; j < res->nslots && scratch; j++)
        slot_of(t, j, hz, scratch, res);
    free(scratch);
    static const char *const names[2] = {"tx", "compl"};
    int tids[2] = {t->tx.tid, t->compl .tid};
    res->npairs = pool_pairs_of(t->pool, tids, names, 2, res->pairs, POOL_MAX_PAIRS);
    struct hp_link_stats st;
    hp_link_stats(t->link, &st);
    res->tx_dropped = st.tx_dropped;
}

static int start(struct txc *t, const struct bench_opts *o)
{
    int n = tool_ncpus();
    t->tx.cpu = o->cpu >= 0 ? o->cpu : n - 1;
    t->compl .cpu = n > 1 ? (t->tx.cpu + n - 1) % n : -1;
    t->tx.t = t->compl .t = t;
    if (pthread_create(&t->compl .th, NULL, compl_main, &t->compl ) != 0)
        return -1;
    if (pthread_create(&t->tx.th, NULL, tx_main, &t->tx) != 0) {
        atomic_store(&t->tx_done, 1);
        pthread_join(t->compl .th, NULL);
        return -1;
    }
    return 0;
}

/* One run on a fresh link: 0, or -1 with the reason in why. */
static int run_once(const struct txcomp_report *rep, const struct bench_opts *o, const char *kind,
                    const char *iface, int r, struct txc_result *res, char *why, size_t len)
{
    struct txc *t = aligned_alloc(64, sizeof *t);
    if (!t)
        return snprintf(why, len, "out of memory"), -1;
    memset(t, 0, sizeof *t);
    memset(res, 0, sizeof *res);
    unsigned nmarks = 2 * (unsigned)(NPOL * rep->rounds) + 2;
    double secs = rep->warmup_s + NPOL * rep->rounds * (rep->settle_s + rep->slice_s) + 1;
    int rc = -1;
    if (pool_meter_init(&t->tx.meter, &t->mark, nmarks, secs, GROUP) ||
        pool_meter_init(&t->compl .meter, &t->mark, nmarks, 0, 1)) {
        snprintf(why, len, "out of memory");
    } else if (open_links(t, kind, iface, why, len) == 0) {
        if (start(t, o) != 0) {
            snprintf(why, len, "cannot start the threads");
        } else {
            drive(t, rep, r, res);
            pthread_join(t->tx.th, NULL);
            pthread_join(t->compl .th, NULL);
            collect(t, res);
            rc = 0;
            if (t->err)
                rc = -1, snprintf(why, len, "transmit on %s failed: %s", kind, hp_strerror(t->err));
        }
        int c1 = hp_link_close(t->link), c2 = hp_link_close(t->peer);
        if ((c1 < 0 || c2 < 0) && rc == 0)
            rc = -1, snprintf(why, len, "closing %s: %s (buffers still out)", kind,
                              hp_strerror(c1 < 0 ? c1 : c2));
    }
    pool_meter_free(&t->tx.meter);
    pool_meter_free(&t->compl .meter);
    free(t);
    return rc;
}

/* ---- the repetitions ---------------------------------------------------- */

struct txc_acc {
    double speed[NPOL][MAX_REPS], cpu[NPOL][MAX_REPS];
    int got;
    double pr[3][MAX_REPS * MAX_ROUNDS]; /* per round: adaptive/local, adaptive/defer, defer/local */
    int npr;
    double one[MAX_REPS];
    int none;
};

static double median(double *v, int n)
{
    return n ? tool_median(v, n) : 0;
}

static void fold(struct txcomp_row *row, struct txc_acc *a, const struct txc_result *res)
{
    double sp[NPOL][MAX_ROUNDS], cp[NPOL][MAX_ROUNDS];
    int n[NPOL] = {0};
    for (int j = 0; j < res->nslots; j++) {
        int k = res->policy[j];
        if (res->ok[j] && n[k] < MAX_ROUNDS) {
            sp[k][n[k]] = res->mpps[j];
            cp[k][n[k]++] = res->cpu_ns[j];
        }
    }
    if (a->got < MAX_REPS) {
        for (int k = 0; k < NPOL; k++) {
            a->speed[k][a->got] = median(sp[k], n[k]);
            a->cpu[k][a->got] = median(cp[k], n[k]);
        }
        a->got++;
    }
    for (int j = 0; j + NPOL <= res->nslots && a->npr < MAX_REPS * MAX_ROUNDS; j += NPOL) {
        double v[NPOL];
        bool ok = true;
        for (int i = 0; i < NPOL; i++) {
            ok &= res->ok[j + i] && res->mpps[j + i] > 0;
            v[res->policy[j + i]] = res->mpps[j + i];
        }
        if (!ok)
            continue;
        a->pr[0][a->npr] = v[2] / v[0];
        a->pr[1][a->npr] = v[2] / v[1];
        a->pr[2][a->npr++] = v[1] / v[0];
    }
    memcpy(row->pairs, res->pairs, sizeof row->pairs);
    row->npairs = res->npairs;
    row->tx_dropped += res->tx_dropped;
    row->warm_max_s = res->warm_s > row->warm_max_s ? res->warm_s : row->warm_max_s;
}

/* The row's figures from the repetitions so far. */
static void summarise(struct txcomp_row *row, struct txc_acc *a)
{
    double v[MAX_REPS * MAX_ROUNDS];
    for (int k = 0; k < NPOL; k++) {
        memcpy(v, a->speed[k], (size_t)a->got * sizeof v[0]);
        row->mpps[k] = median(v, a->got);
        memcpy(v, a->cpu[k], (size_t)a->got * sizeof v[0]);
        row->cpu_ns[k] = median(v, a->got);
    }
    struct pool_summary *s[3] = {&row->a_l, &row->a_d, &row->d_l};
    for (int i = 0; i < 3; i++) {
        memcpy(v, a->pr[i], (size_t)a->npr * sizeof v[0]);
        pool_summarise(v, a->npr, s[i]);
    }
    row->better = row->d_l.med > 1;
    memcpy(v, a->pr[row->better], (size_t)a->npr * sizeof v[0]);
    pool_summarise(v, a->npr, &row->a_best);
    memcpy(v, a->one, (size_t)a->none * sizeof v[0]);
    row->one_core_mpps = median(v, a->none) / 1e6;
}

/* The single-core figure: the data thread also drains the peer. */
static void one_core(const struct bench_opts *o, struct txc_acc *a)
{
    struct gen_opts g;
    gen_defaults(&g);
    g.duration = o->quick ? 0.3 : 0.5;
    g.cpu = o->cpu >= 0 ? o->cpu : tool_ncpus() - 1;
    struct gen_result r;
    if (gen_run(&g, &r) == 0 && a->none < MAX_REPS)
        a->one[a->none++] = r.pps;
}

/* Whether afxdp can run here: root, a veth pair of our own (unless
 * o->iface), the backend built in. The namespace is left entered. */
static const char *afxdp_iface(const struct bench_opts *o, struct tool_netns *ns, char *why,
                               size_t len)
{
    if (geteuid() != 0) {
        snprintf(why, len, "needs root (AF_XDP and network namespaces)");
        return NULL;
    }
    const char *iface = o->iface;
    if (!iface) {
        int rc = tool_netns_up(ns, "hpp-txc");
        if (rc < 0) {
            snprintf(why, len, "cannot make a veth pair: %s", hp_strerror(rc));
            return NULL;
        }
        if ((rc = tool_netns_enter(ns, 0)) < 0) {
            snprintf(why, len, "cannot enter the namespace: %s", hp_strerror(rc));
            return NULL;
        }
        iface = ns->ifname[0];
    }
    struct hp_link_config c = {.iface = iface, .flags = HP_LINK_F_COPY};
    struct hp_link *l = hp_link_open("afxdp", &c);
    if (!l) {
        snprintf(why, len, "%s", hp_link_error());
        return NULL;
    }
    hp_link_close(l);
    return iface;
}

static bool resolved(const struct txcomp_report *rep)
{
    for (int i = 0; i < rep->nrows; i++) {
        const struct pool_summary *s = &rep->rows[i].a_best;
        if (rep->rows[i].ok && (!s->ci || s->hi - s->lo > 0.02))
            return false;
    }
    return true;
}

static void setup(const struct bench_opts *o, struct txcomp_report *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->min_reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    rep->max_reps = o->reps ? o->reps : (o->quick ? 3 : 12);
    if (rep->max_reps > MAX_REPS)
        rep->max_reps = rep->min_reps = MAX_REPS;
    rep->rounds = o->quick ? 4 : 8;
    rep->warmup_s = o->quick ? 0.1 : 0.2;
    rep->warm_max_s = o->quick ? 0.5 : 1.5;
    rep->settle_s = 0.005;
    rep->slice_s = o->quick ? 0.025 : 0.04;
    rep->nrows = 2;
    rep->rows[0].link = "afxdp";
    rep->rows[1].link = "mem";
    if (tool_ncpus() < 2)
        fprintf(stderr, "bench txcomp: one CPU only: the two threads share it\n");
}

void txcomp_run(const struct bench_opts *o, struct txcomp_report *rep)
{
    setup(o, rep);
    struct txc_acc *acc = calloc(2, sizeof *acc);
    struct txc_result *res = malloc(sizeof *res);
    struct tool_netns ns = {0};
    const char *iface = afxdp_iface(o, &ns, rep->rows[0].why, sizeof rep->rows[0].why);
    rep->rows[0].ok = iface != NULL;
    rep->rows[1].ok = acc && res;
    int total = rep->max_reps * 2, done = 0;
    for (int r = 0; r < rep->max_reps && acc && res; r++) {
        for (int i = 0; i < 2; i++) {
            struct txcomp_row *row = &rep->rows[(i + r) % 2];
            if (o->progress)
                o->progress(o->progress_ctx, done++, total, row->link);
            if (!row->ok)
                continue;
            if (run_once(rep, o, row->link, iface, r, res, row->why, sizeof row->why) == 0)
                fold(row, &acc[(i + r) % 2], res);
            else
                row->ok = false;
        }
        one_core(o, &acc[1]);
        rep->reps = r + 1;
        for (int i = 0; i < 2; i++)
            summarise(&rep->rows[i], &acc[i]);
        if (rep->reps >= rep->min_reps && resolved(rep))
            break;
    }
    if (ns.up) {
        tool_netns_leave();
        tool_netns_down(&ns);
    }
    free(acc);
    free(res);
}

/* ---- output ------------------------------------------------------------- */

void txcomp_print_header(const struct txcomp_report *rep, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f,
            "txonly 64 B, batch 32, completions freed on a second thread; afxdp in copy mode on "
            "a veth pair.\nEach run: a fresh link and pool, a warm-up under adaptive (%.2g s, "
            "then until it settled the pair,\nat most %.2g s), %d rounds of one %.0f ms slice per "
            "policy (the pool's policy switched, order\nrotated; %.0f ms to settle); %d "
            "repetitions (until adaptive/better is known within +-1%%, %d-%d).\nMpps: mem: the "
            "sender's median timed group (frames sent while it runs: it waits when buffers do\n"
            "not come back); afxdp: frames per second of each slice; medians over slices and "
            "repetitions.\nns/pkt: CPU time of both threads per frame. Ratios paired by round: "
            "median [95%% interval, or\nmin-max below 6 rounds]\n",
            rep->warmup_s, rep->warm_max_s, rep->rounds, 1e3 * rep->slice_s, 1e3 * rep->settle_s,
            rep->reps, rep->min_reps, rep->max_reps);
    fprintf(f, "cpu:        %s\ncompiler:   %s\nflags:      %s\n", cpu, tool_compiler(),
            tool_build_flags());
}

void txcomp_print_table(const struct txcomp_report *rep, FILE *f)
{
    fprintf(f, "  %-6s %9s %9s %9s   %8s %8s %8s   %-34s %s\n", "link", "local", "defer",
            "adaptive", "ns/pkt L", "D", "A", "adaptive/better", "defer/local");
    for (int i = 0; i < rep->nrows; i++) {
        const struct txcomp_row *r = &rep->rows[i];
        if (!r->ok && !r->a_best.n) {
            fprintf(f, "  %-6s skipped: %s\n", r->link, r->why);
            continue;
        }
        char b[2][64], bb[80];
        snprintf(bb, sizeof bb, "%s (%s)", pool_summary_str(&r->a_best, b[0], sizeof b[0]),
                 r->better ? "defer" : "local");
        fprintf(f, "  %-6s %9.3f %9.3f %9.3f   %8.1f %8.1f %8.1f   %-34s %s\n", r->link, r->mpps[0],
                r->mpps[1], r->mpps[2], r->cpu_ns[0], r->cpu_ns[1], r->cpu_ns[2], bb,
                pool_summary_str(&r->d_l, b[1], sizeof b[1]));
        if (!r->ok)
            fprintf(f, "  %-6s stopped: %s\n", "", r->why);
    }
    for (int i = 0; i < rep->nrows; i++) {
        const struct txcomp_row *r = &rep->rows[i];
        if (r->one_core_mpps > 0)
            fprintf(f, "  mem txonly 64 B, batch 32, one core: %.1f Mpps\n", r->one_core_mpps);
        if (r->npairs) {
            fprintf(f, "  adaptive over %s (warm-up up to %.2f s), at the end of the last run:\n",
                    r->link, r->warm_max_s);
            pool_pairs_print(r->pairs, r->npairs, "    ", f);
        }
    }
}

int txcomp_goals(const struct txcomp_report *rep, FILE *f, bool md)
{
    int missed = 0;
    const char *fmt_ok = md ? "- %s: " : "  [%s] ", *met = md ? "met" : " met ";
    for (int i = 0; i < rep->nrows; i++) {
        const struct txcomp_row *r = &rep->rows[i];
        if (!r->a_best.n) {
            fprintf(f, fmt_ok, "MISSED");
            fprintf(f, "%s: ADAPTIVE within 3%% of the better fixed policy: not measured (%s)\n",
                    r->link, r->why);
            missed++;
            continue;
        }
        char b[64];
        bool ok = r->a_best.med >= 0.97;
        fprintf(f, fmt_ok, ok ? met : "MISSED");
        fprintf(f,
                "%s: ADAPTIVE within 3%% of the better fixed policy (%s): adaptive/%s %s over "
                "%d paired rounds\n",
                r->link, r->better ? "DEFER" : "LOCAL", r->better ? "defer" : "local",
                pool_summary_str(&r->a_best, b, sizeof b), r->a_best.n);
        missed += !ok;
        if (r->one_core_mpps > 0) {
            fprintf(f, fmt_ok, r->one_core_mpps >= 20 ? met : "MISSED");
            fprintf(f, "mem txonly 64 B, batch 32, one core: >= 20 Mpps (%.1f Mpps)\n",
                    r->one_core_mpps);
            missed += r->one_core_mpps < 20;
        }
    }
    return missed;
}

void txcomp_print_summary(const struct txcomp_report *rep, FILE *f)
{
    fprintf(f, "summary: txcomp:");
    for (int i = 0; i < rep->nrows; i++) {
        const struct txcomp_row *r = &rep->rows[i];
        if (!r->a_best.n) {
            fprintf(f, " %s skipped;", r->link);
            continue;
        }
        fprintf(f, " %s A/%s %+.1f%% [%+.1f, %+.1f] (D/L %.3f, %s);", r->link,
                r->better ? "D" : "L", 100 * (r->a_best.med - 1), 100 * (r->a_best.lo - 1),
                100 * (r->a_best.hi - 1), r->d_l.med,
                r->npairs ? hp_alien_policy_name(r->pairs[0].policy) : "?");
    }
    fprintf(f, " %d reps\n", rep->reps);
}

static json_t *row_json(const struct txcomp_row *r)
{
    if (!r->a_best.n)
        return json_pack("{s:s, s:s}", "link", r->link, "skipped", r->why);
    json_t *o = json_pack("{s:s}", "link", r->link);
    for (int p = 0; p < NPOL; p++) {
        char k[32];
        snprintf(k, sizeof k, "%s_mpps", hp_alien_policy_name(policies[p]));
        json_object_set_new(o, k, json_real(r->mpps[p]));
        snprintf(k, sizeof k, "%s_cpu_ns", hp_alien_policy_name(policies[p]));
        json_object_set_new(o, k, json_real(r->cpu_ns[p]));
    }
    if (r->one_core_mpps > 0)
        json_object_set_new(o, "one_core_mpps", json_real(r->one_core_mpps));
    json_object_set_new(o, "better", json_string(r->better ? "defer" : "local"));
    json_object_set_new(o, "adaptive_local", pool_summary_json(&r->a_l));
    json_object_set_new(o, "adaptive_defer", pool_summary_json(&r->a_d));
    json_object_set_new(o, "defer_local", pool_summary_json(&r->d_l));
    json_object_set_new(o, "adaptive_better", pool_summary_json(&r->a_best));
    json_object_set_new(o, "pairs", pool_pairs_json(r->pairs, r->npairs));
    json_object_set_new(o, "tx_dropped", json_integer((json_int_t)r->tx_dropped));
    if (!r->ok)
        json_object_set_new(o, "stopped", json_string(r->why));
    return o;
}

void txcomp_print_json(const struct txcomp_report *rep, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    json_t *rows = json_array();
    for (int i = 0; i < rep->nrows; i++)
        json_array_append_new(rows, row_json(&rep->rows[i]));
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:o}", "bench", "txcomp", "cpu",
        cpu, "compiler", tool_compiler(), "flags", tool_build_flags(), "reps", rep->reps,
        "min_reps", rep->min_reps, "max_reps", rep->max_reps, "rounds", rep->rounds, "warmup_s",
        rep->warmup_s, "settle_s", rep->settle_s, "slice_s", rep->slice_s, "rows", rows);
    json_dumpf(o, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(o);
}

int bench_txcomp(const struct bench_opts *o, FILE *table)
{
    struct txcomp_report *rep = malloc(sizeof *rep);
    if (!rep)
        return 1;
    txcomp_run(o, rep);
    if (!o->json) {
        fprintf(table, "\n== txcomp: the seed's AF_XDP experiment, each alien policy\n");
        txcomp_print_header(rep, table);
        fputc('\n', table);
        txcomp_print_table(rep, table);
        fputc('\n', table);
        txcomp_goals(rep, table, false);
        txcomp_print_summary(rep, table);
    } else {
        txcomp_print_json(rep, stdout);
    }
    if (o->json_out)
        txcomp_print_json(rep, o->json_out);
    int rc = rep->rows[rep->nrows - 1].ok ? 0 : 1;
    free(rep);
    return rc;
}
