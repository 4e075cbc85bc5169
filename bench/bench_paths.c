/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench paths`: the kernel's and hotpath's TCP senders through `hotpath impair` (loss, reordering, ECN marks, a tail loss) and through two routers with a narrow link, every row in one run. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_paths.h"

const char *const paths_sender_names[PS_N] = {"kernel-cubic-sack", "kernel-reno-nosack",
                                              "hotpath-cubic-sack", "hotpath-newreno-nosack"};
const char *const paths_cond_names[PC_N] = {"loss 0",  "loss 0.5%",  "loss 2%",
                                            "loss 5%", "reorder 1%", "ECN"};
const double paths_cond_loss[PC_N] = {0, 0.005, 0.02, 0.05, 0, 0};
const double paths_cond_reorder[PC_N] = {0, 0, 0, 0, 0.01, 0};

#define TAIL_RTTS   3
#define TAIL_GAP_MS "5"

struct env {
    struct tool_line line;
    struct paths_sink sink;
    struct paths_report *r;
    const struct bench_opts *o;
    int done, total; /* progress */
};

static bool is_hotpath(int s)
{
    return s == PS_HOTPATH_CUBIC || s == PS_HOTPATH_RENO;
}

static void progress(struct env *e, const char *what)
{
    if (e->o->progress)
        e->o->progress(e->o->progress_ctx, e->done, e->total, what);
}

/* The client's and the server's kernel as the row wants them: SACK of the
 * kernel's sender, ECN on both ends when asked
 * (else the kernel's default: accept when asked); the client's address off
 * its interface for a hotpath sender (else the kernel there would answer
 * hotpath's segments with resets). Metrics are never saved, so that no row
 * starts from what an earlier one learnt (ssthresh). 0 or -1. */
static int ends_for(struct env *e, int s, bool ecn, bool before)
{
    const struct tool_line *l = &e->line;
    const char *ifc = l->ifname[0][0];
    if (is_hotpath(s))
        return tool_sh("ip -n %s addr %s 198.18.0.1/24 dev %s", l->ns[0], before ? "del" : "add",
                       ifc) == 0
                   ? 0
                   : -1;
    if (!before)
        return 0;
    /* Congestion control is set per socket (TCP_CONGESTION, paths_kernel.c). */
    int rc = tool_line_sh(l, 0,
                          "sysctl -qw net.ipv4.tcp_sack=%d net.ipv4.tcp_ecn=%d "
                          "net.ipv4.tcp_no_metrics_save=1",
                          s == PS_KERNEL_RENO ? 0 : 1, ecn ? 1 : 2);
    return rc == 0 ? 0 : -1;
}

static int server_for(struct env *e, bool ecn)
{
    return tool_line_sh(&e->line, 2,
                        "sysctl -qw net.ipv4.tcp_ecn=%d net.ipv4.tcp_no_metrics_save=1",
                        ecn ? 1 : 2) == 0
               ? 0
               : -1;
}

/* impair's shaping for condition c (c < 0: the tail-loss trials). */
static void bridge_args(int c, char (*num)[24], const char **args)
{
    int n = 0;
    args[n++] = "--a2b";
    args[n++] = "--rate";
    args[n++] = "100";
    args[n++] = "--delay";
    args[n++] = "20";
    args[n++] = "--queue";
    args[n++] = "250000";
    args[n++] = "--seed";
    snprintf(num[0], 24, "%d", c + 2);
    args[n++] = num[0];
    if (c >= 0 && paths_cond_loss[c] > 0) {
        snprintf(num[1], 24, "%g", paths_cond_loss[c]);
        args[n++] = "--loss";
        args[n++] = num[1];
    }
    if (c >= 0 && paths_cond_reorder[c] > 0) {
        snprintf(num[2], 24, "%g", paths_cond_reorder[c]);
        args[n++] = "--reorder";
        args[n++] = num[2];
    }
    if (c == PC_ECN) {
        args[n++] = "--ecn-mark-above";
        args[n++] = "30000";
    }
    if (c < 0) {
        args[n++] = "--drop-tail";
        args[n++] = TAIL_GAP_MS;
    }
    args[n] = NULL;
}

/* Run the job's sender on its thread; with a bulk run, open and close the
 * measured window once its connection is up. The window's bytes / s. */
static double run_job(struct env *e, struct paths_job *j, char *why, size_t len)
{
    pthread_t th;
    _Atomic int phase;
    atomic_init(&phase, HB_SETUP);
    if (j->phase)
        j->phase = &phase;
    if (pthread_create(&th, NULL,
                       is_hotpath(j->sender) ? paths_hotpath_sender : paths_kernel_sender,
                       j) != 0) {
        snprintf(why, len, "cannot start the sender's thread");
        return -1;
    }
    double rate = -1;
    if (j->phase) {
        for (double end = tool_now_s() + 15; !atomic_load(&j->ready) && tool_now_s() < end;)
            hb_sleep(0.005);
        struct hb_window w;
        if (atomic_load(&j->ready) == 1) {
            paths_sink_arm(&e->sink, &phase);
            hb_phases_run(&phase, e->r->warm_s, e->r->bulk_s, NULL, NULL);
            if (paths_sink_window(&e->sink, 2, &w) && w.secs > 0)
                rate = (double)w.n[0] / w.secs;
            else
                snprintf(why, len, "the receiver did not measure the window");
        }
        atomic_store(&phase, HB_STOP);
    }
    pthread_join(th, NULL);
    if (is_hotpath(j->sender) && j->link) {
        e->r->hp_link = j->link;
        e->r->hp_rt = j->rt;
    }
    if (j->phase && rate < 0 && !why[0])
        snprintf(why, len, "%s", j->why[0] ? j->why : "the bulk connection did not come up");
    return rate;
}

static void cell_fill(struct paths_cell *cell, const struct paths_job *j, double rate)
{
    cell->goodput_mbps = rate * 8 / 1e6;
    cell->sack = j->sack;
    cell->ecn = j->ecn_ok;
    cell->retrans = j->retrans;
    cell->rto = j->rto;
    cell->has_fct = j->nfct > 0;
    cell->fct_p50_ms = hb_quantile(j->fct, j->nfct, 0.5);
    cell->fct_p99_ms = hb_quantile(j->fct, j->nfct, 0.99);
    cell->flows = j->nfct;
    cell->flows_failed = j->failed;
    cell->short_retrans = j->short_retrans;
    cell->short_rto = j->short_rto;
}

/* One sender under one condition: bulk, then short flows (not for ECN). */
static void cell_run(struct env *e, int c, int s)
{
    struct paths_cell *cell = &e->r->cells[c][s];
    char num[3][24];
    const char *args[24];
    bridge_args(c, num, args);
    struct paths_bridge br;
    bool ecn = c == PC_ECN;
    if (server_for(e, ecn) < 0 || ends_for(e, s, ecn, true) < 0) {
        snprintf(cell->why, sizeof cell->why, "cannot set the namespaces' sysctls or address");
        return;
    }
    if (paths_bridge_start_rt(&br, e->line.ns[1], e->line.ifname[0][1], e->line.ifname[1][0],
                              e->r->cpu_bridge, args, &e->r->bridge_rt, cell->why,
                              sizeof cell->why) < 0) {
        ends_for(e, s, ecn, false);
        return;
    }
    static struct paths_job j; /* large; one at a time */
    memset(&j, 0, sizeof j);
    j.sender = s;
    j.ns = e->line.ns[0];
    j.iface = e->line.ifname[0][0];
    j.cpu = e->r->cpu_ends;
    j.ecn = ecn;
    j.sink = &e->sink;
    j.phase = (_Atomic int *)1; /* run_job gives it its phase */
    j.flows = ecn ? 0 : e->r->flows;
    double rate = run_job(e, &j, cell->why, sizeof cell->why);
    char why[200] = "";
    int brc = paths_bridge_stop(&br, &cell->bridge, why, sizeof why);
    ends_for(e, s, ecn, false);
    if (rate < 0)
        return;
    if (brc < 0) {
        snprintf(cell->why, sizeof cell->why, "%s", why);
        return;
    }
    cell_fill(cell, &j, rate);
    cell->ran = true;
}

/* ---- the tail-loss trials ------------------------------------------------------------ */

static void tail_run(struct env *e, int s)
{
    struct paths_tail *t = &e->r->tail[s];
    char num[3][24];
    const char *args[24];
    bridge_args(-1, num, args);
    struct paths_bridge br;
    if (server_for(e, false) < 0 || ends_for(e, s, false, true) < 0) {
        snprintf(t->why, sizeof t->why, "cannot set the namespaces' sysctls or address");
        return;
    }
    if (paths_bridge_start_rt(&br, e->line.ns[1], e->line.ifname[0][1], e->line.ifname[1][0],
                              e->r->cpu_bridge, args, &e->r->bridge_rt, t->why,
                              sizeof t->why) < 0) {
        ends_for(e, s, false, false);
        return;
    }
    static struct paths_job j;
    memset(&j, 0, sizeof j);
    j.sender = s;
    j.ns = e->line.ns[0];
    j.iface = e->line.ifname[0][0];
    j.cpu = e->r->cpu_ends;
    j.sink = &e->sink;
    j.trials = e->r->trials;
    run_job(e, &j, t->why, sizeof t->why);
    struct paths_bridge_stats bs;
    char why[200] = "";
    paths_bridge_stop(&br, &bs, why, sizeof why);
    ends_for(e, s, false, false);
    if (j.ntrials == 0) {
        if (!t->why[0])
            snprintf(t->why, sizeof t->why, "%s", j.why[0] ? j.why : why);
        return;
    }
    t->ran = true;
    t->trials = j.ntrials;
    for (int k = 0; k < j.ntrials; k++) {
        t->rtos += j.trial_rto[k];
        t->ok += !j.trial_rto[k] && j.repair[k] <= TAIL_RTTS * PATHS_DELAY_MS;
    }
    t->p50_ms = hb_quantile(j.repair, j.ntrials, 0.5);
    t->p95_ms = hb_quantile(j.repair, j.ntrials, 0.95);
    t->probes = j.probes;
    t->tail_drops = bs.tail_drops;
    t->burst_segs = (double)j.burst_segs / j.ntrials;
}

/* ---- the bridge's own limit ---------------------------------------------------------- */

struct flood {
    const char *ns;
    int cpu, payload;
    double secs;
    uint64_t sent;
};

/* UDP datagrams to the server's discard port as fast as the kernel sends
 * them, for f->secs. */
static void *flood_main(void *arg)
{
    struct flood *f = arg;
    if (tool_ns_enter(f->ns) < 0)
        return NULL;
    if (f->cpu >= 0)
        tool_pin(f->cpu);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9)};
    inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    static char buf[1472];
    struct mmsghdr m[64];
    struct iovec v = {.iov_base = buf, .iov_len = (size_t)f->payload};
    memset(m, 0, sizeof m);
    for (int i = 0; i < 64; i++) {
        m[i].msg_hdr.msg_iov = &v;
        m[i].msg_hdr.msg_iovlen = 1;
    }
    for (double end = tool_now_s() + f->secs; tool_now_s() < end;) {
        int n = sendmmsg(fd, m, 64, 0);
        f->sent += n > 0 ? (uint64_t)n : 0;
    }
    close(fd);
    return NULL;
}

/* Frames per second the bridge forwards, unshaped, of `payload`-byte
 * datagrams (a frame of payload + 42 bytes); *offered: what the sender
 * managed. -1 when it could not be measured. */
static double bridge_fps(struct env *e, int payload, double secs, double *offered)
{
    /* Spinning at its normal priority: the flood keeps it busy anyway, and a
     * real-time task at full load would starve the CPU's other work. */
    const char *args[] = {"--a2b", NULL};
    struct paths_bridge br;
    char why[200];
    *offered = 0;
    if (paths_bridge_start(&br, e->line.ns[1], e->line.ifname[0][1], e->line.ifname[1][0],
                           e->r->cpu_bridge, args, why, sizeof why) < 0)
        return -1;
    struct flood f = {.ns = e->line.ns[0], .cpu = e->r->cpu_ends, .payload = payload, .secs = secs};
    pthread_t th;
    bool ok = pthread_create(&th, NULL, flood_main, &f) == 0;
    if (ok)
        pthread_join(th, NULL);
    struct paths_bridge_stats bs;
    if (paths_bridge_stop(&br, &bs, why, sizeof why) < 0 || !ok || !f.sent)
        return -1;
    *offered = (double)f.sent / secs;
    return (double)bs.out / secs;
}

/* ---- the run ------------------------------------------------------------------------- */

static void pick_cpus(struct paths_report *r, const struct bench_opts *o)
{
    int n = tool_ncpus();
    r->cpu_bridge = o->cpu >= 0 ? o->cpu : (n > 1 ? n - 1 : -1);
    r->cpu_ends = n > 1 ? (r->cpu_bridge + n - 1) % n : -1;
}

static void report_init(struct paths_report *r, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    r->quick = o->quick;
    r->bulk_s = o->quick ? 0.4 : 10;
    r->warm_s = o->quick ? 0.2 : 1;
    r->flows = o->quick ? 2 : PATHS_MAX_FLOWS;
    r->bridge_rt = true; /* until refused */
    r->trials = o->quick ? 4 : PATHS_MAX_TRIALS;
    pick_cpus(r, o);
}

/* What HP_PATHS_ONLY asks for: a comma-separated list of parts, `bridged`
 * (every condition), a condition's short name, `tail`, `pmtu`; unset or
 * empty: all of them. */
struct parts {
    bool cond[PC_N], tail, pmtu;
};

static const char *const part_names[PC_N] = {"loss0", "loss0.5", "loss2",
                                             "loss5", "reorder", "ecn"};

/* Whether token t names a part; marks what it names. */
static bool parts_mark(struct parts *p, const char *t)
{
    bool every = strcmp(t, "bridged") == 0, known = every;
    for (int c = 0; c < PC_N; c++) {
        bool hit = every || strcmp(t, part_names[c]) == 0;
        p->cond[c] |= hit;
        known |= hit;
    }
    if (strcmp(t, "tail") == 0)
        known = p->tail = true;
    if (strcmp(t, "pmtu") == 0)
        known = p->pmtu = true;
    return known;
}

/* 0, or -1 with why saying which name is not a part (nothing runs then). */
static int parts_parse(struct parts *p, const char *only, char *why, size_t len)
{
    bool all = !only || !*only;
    for (int c = 0; c < PC_N; c++)
        p->cond[c] = all;
    p->tail = p->pmtu = all;
    if (all)
        return 0;
    char buf[256];
    if (strlen(only) >= sizeof buf) {
        snprintf(why, len, "HP_PATHS_ONLY is too long (%zu bytes)", strlen(only));
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", only);
    char *save = NULL;
    for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        if (!parts_mark(p, t)) {
            snprintf(why, len,
                     "HP_PATHS_ONLY: no part '%.40s' (bridged, loss0, loss0.5, loss2, loss5, "
                     "reorder, ecn, tail, pmtu)",
                     t);
            return -1;
        }
    return 0;
}

static bool parts_bridged(const struct parts *p)
{
    for (int c = 0; c < PC_N; c++)
        if (p->cond[c])
            return true;
    return false;
}

/* The bridge's own limit (with any bridged row), the rows asked for, then
 * the tail trials. */
/* The parts that will not run say so (neither failed nor met). */
static void parts_skipped(struct paths_report *r, const struct parts *want)
{
    for (int c = 0; c < PC_N; c++)
        for (int s = 0; !want->cond[c] && s < PS_N; s++)
            snprintf(r->cells[c][s].why, sizeof r->cells[c][s].why, "not asked for");
    for (int s = 0; !want->tail && s < PS_N; s++)
        snprintf(r->tail[s].why, sizeof r->tail[s].why, "not asked for");
}

static void bridged_run(struct env *e, const struct parts *want)
{
    struct paths_report *r = e->r;
    double off;
    parts_skipped(r, want);
    progress(e, "the bridge's limit");
    r->bridge_fps_1514 = r->bridge_fps_64 = -1;
    if (parts_bridged(want)) {
        r->bridge_fps_1514 = bridge_fps(e, 1472, r->quick ? 0.3 : 1, &off);
        r->bridge_offered_1514 = off;
        r->bridge_fps_64 = bridge_fps(e, 18, r->quick ? 0.3 : 1, &off);
        r->bridge_offered_64 = off;
    }
    for (int c = 0; c < PC_N; c++)
        for (int s = 0; s < PS_N; s++) {
            if (!want->cond[c] || (c == PC_ECN && (s == PS_KERNEL_RENO || s == PS_HOTPATH_RENO)))
                continue;
            char what[64];
            snprintf(what, sizeof what, "%s, %s", paths_cond_names[c], paths_sender_names[s]);
            progress(e, what);
            cell_run(e, c, s);
            e->done++;
        }
    progress(e, "tail loss");
    if (want->tail) {
        tail_run(e, PS_KERNEL_CUBIC);
        tail_run(e, PS_HOTPATH_CUBIC);
    }
    e->done += 2;
}

/* The namespaces in a line and the receiver, the bridged parts, and down
 * again. 0, or 1 when the line or the receiver could not be set up. */
static int line_run(struct env *e, const struct parts *want)
{
    struct paths_report *r = e->r;
    int rc = tool_line_bridged(&e->line, "paths");
    if (rc < 0) {
        snprintf(r->why, sizeof r->why, "cannot make the namespaces: %s%s", strerror(-rc),
                 rc == -ENOENT ? " (iproute2 and ethtool are needed)" : "");
        return 1;
    }
    char why[200] = "";
    if (paths_sink_start(&e->sink, e->line.ns[2], r->cpu_ends, why, sizeof why) < 0) {
        snprintf(r->why, sizeof r->why, "%s", why);
        tool_line_down(&e->line);
        return 1;
    }
    bridged_run(e, want);
    paths_sink_stop(&e->sink);
    tool_line_down(&e->line);
    return 0;
}

int paths_report_run(struct paths_report *r, const struct bench_opts *o)
{
    report_init(r, o);
    /* HP_PATHS_ONLY runs some parts (to look at them again); a name that is
     * not a part is an error, root or not. */
    const char *only = getenv("HP_PATHS_ONLY");
    struct parts want;
    if (parts_parse(&want, only, r->why, sizeof r->why) < 0)
        return 1;
    if (geteuid() != 0) {
        /* Skipped, said why: no failure. */
        snprintf(r->why, sizeof r->why, "needs root (network namespaces, AF_PACKET)");
        return 0;
    }
    struct env e = {.r = r, .o = o, .total = 4 * PC_N - 2 + 2 + 1};
    if (parts_bridged(&want) || want.tail) {
        if (line_run(&e, &want) != 0)
            return 1;
    } else {
        parts_skipped(r, &want);
        r->bridge_fps_1514 = r->bridge_fps_64 = -1;
        e.done = e.total - 1;
    }
    progress(&e, "path MTU");
    if (want.pmtu)
        paths_pmtu_run(&r->pmtu, o, r->cpu_ends, r->cpu_bridge, o->quick ? 2000000 : 10000000,
                       o->quick ? 1 : 3);
    else
        snprintf(r->pmtu.why, sizeof r->pmtu.why, "not asked for (HP_PATHS_ONLY=%s)", only);
    e.done = e.total;
    progress(&e, "done");
    return 0;
}
