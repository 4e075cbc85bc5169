/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench afxdp-raw`: AF_XDP txonly through the afxdp link against a bare libxdp loop, in one run. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/link.h>

#include "afxdp_raw.h"
#include "bench.h"
#include "gen.h"
#include "harness.h"
#include "tool.h"

/*
 * Both rows send the same 64-byte frame in copy mode, in the same XDP mode,
 * on the same interface and CPU, batch 32 (one sendto() sends at most 32
 * frames in copy mode), need-wakeup on. "raw" is the bare loop of
 * afxdp_raw.c: frames written once, descriptors only. "hotpath" is `hotpath
 * gen txonly` over the afxdp link: every frame a buffer allocated from the
 * UMEM pool, the frame copied in, hp_link_tx_burst(), completions freed by
 * the link. The difference is what the link costs. Rounds alternate (the
 * order swapped each round), each row opening its own socket, and the
 * median is reported.
 */

#define FRAME_LEN 64
#define BATCH     32
#define GOAL      0.95
/* A round in which the sending thread was off its CPU (another process had
 * it) for more than this share of the window is run again, up to ATTEMPTS
 * times in all; the least disturbed is kept. Both rows spin, so a thread
 * on its CPU all along shows as much CPU time as wall time. */
#define MAX_DISTURBED 0.05
#define ATTEMPTS      4

enum { ROW_RAW, ROW_HP, NROWS };
static const char *const row_names[NROWS] = {"raw", "hotpath"};

struct afxdp_report {
    char skipped[240]; /* why nothing was measured, or "" */
    char failed[240];  /* a row that failed, or "" */
    char iface[IF_NAMESIZE];
    bool own_veth;
    bool skb_mode;
    int reps, cpu;
    double round_s, warmup_s;
    struct hb_rounds h;
    struct hb_row rows[NROWS]; /* values: Mpps, CPU ns per frame */
    double ratio;
    bool met;
};

/* The share of the window the sending thread was off its CPU. */
static double off_cpu(double cpu_s, double secs)
{
    return secs > 0 ? 1 - cpu_s / secs : 1;
}

static int round_raw(struct afxdp_report *r, double *v, double *off, char *why, size_t len)
{
    struct afxdp_raw_opts ro = {.iface = r->iface,
                                .frame_len = FRAME_LEN,
                                .batch = BATCH,
                                .skb_mode = r->skb_mode,
                                .warmup_s = r->warmup_s,
                                .seconds = r->round_s};
    struct afxdp_raw_result res;
    char w[200];
    if (r->cpu >= 0)
        tool_pin(r->cpu);
    int rc = afxdp_raw_txonly(&ro, &res, w, sizeof w);
    if (rc) {
        snprintf(why, len, "raw: %s", w);
        return -1;
    }
    if (res.skb_mode != r->skb_mode) {
        snprintf(why, len, "raw: the XDP mode changed between rounds (%s)",
                 res.skb_mode ? "generic" : "native");
        return -1;
    }
    v[0] = res.pps / 1e6;
    v[1] = res.packets ? res.cpu_s * 1e9 / (double)res.packets : 0;
    *off = off_cpu(res.cpu_s, res.seconds);
    return 0;
}

static int round_hp(struct afxdp_report *r, double *v, double *off, char *why, size_t len)
{
    struct gen_opts g;
    gen_defaults(&g);
    g.mode = "txonly";
    g.link = "afxdp";
    g.iface = r->iface;
    g.size = FRAME_LEN;
    g.batch = BATCH;
    g.duration = r->round_s;
    g.cpu = r->cpu;
    g.link_flags = HP_LINK_F_COPY | (r->skb_mode ? HP_LINK_F_XDP_SKB : 0);
    struct gen_result res;
    int rc = gen_run(&g, &res);
    if (rc) {
        snprintf(why, len, "hotpath: gen_run failed (exit %d, see above)", rc);
        return -1;
    }
    v[0] = res.pps / 1e6;
    v[1] = res.packets ? res.cpu_s * 1e9 / (double)res.packets : 0;
    *off = off_cpu(res.cpu_s, res.seconds);
    return 0;
}

/* The harness's round: one measurement of one row. */
static int round_fn(void *ctx, int row, double *v, double *disturbed, char *why, size_t len)
{
    struct afxdp_report *r = ctx;
    return row == ROW_RAW ? round_raw(r, v, disturbed, why, len)
                          : round_hp(r, v, disturbed, why, len);
}

/* The interface: --iface, or a veth pair of our own with this thread in
 * its first namespace. false with r->skipped set. */
static bool pick_iface(struct afxdp_report *r, const struct bench_opts *o, struct tool_netns *ns)
{
    if (o->iface) {
        snprintf(r->iface, sizeof r->iface, "%s", o->iface);
        return true;
    }
    int rc = tool_netns_up(ns, "xdp");
    if (rc < 0) {
        snprintf(r->skipped, sizeof r->skipped, "cannot make a veth pair in namespaces: %s",
                 hp_strerror(rc));
        return false;
    }
    if ((rc = tool_netns_enter(ns, 0)) < 0) {
        snprintf(r->skipped, sizeof r->skipped, "cannot enter namespace %s: %s", ns->ns[0],
                 hp_strerror(rc));
        return false;
    }
    snprintf(r->iface, sizeof r->iface, "%s", ns->ifname[0]);
    r->own_veth = true;
    return true;
}

/* Is the link built in, and which XDP mode does the interface take? The
 * raw row probes the mode (native, else generic); both rows then use it. */
static void probe(struct afxdp_report *r)
{
    struct hp_link_config c = {.iface = r->iface, .flags = HP_LINK_F_COPY};
    struct hp_link *l = hp_link_open("afxdp", &c);
    if (!l) {
        snprintf(r->skipped, sizeof r->skipped, "%s", hp_link_error());
        return;
    }
    hp_link_close(l);
    struct afxdp_raw_opts po = {.iface = r->iface,
                                .frame_len = FRAME_LEN,
                                .batch = BATCH,
                                .seconds = 0.01};
    struct afxdp_raw_result pr;
    char why[200];
    int rc = afxdp_raw_txonly(&po, &pr, why, sizeof why);
    if (rc == -EOPNOTSUPP && strstr(why, "built without"))
        snprintf(r->skipped, sizeof r->skipped, "raw row: %s", why);
    else if (rc)
        snprintf(r->failed, sizeof r->failed, "raw: %s", why);
    else
        r->skb_mode = pr.skb_mode;
}

static void run(struct afxdp_report *r, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    r->reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    r->cpu = o->cpu;
    r->round_s = o->quick ? 0.5 : 1.0;
    r->warmup_s = r->round_s > 1 ? 0.2 : r->round_s * 0.1; /* as gen_run does */
    if (geteuid() != 0) {
        snprintf(r->skipped, sizeof r->skipped,
                 "needs root (AF_XDP sockets, XDP programs, network namespaces)");
        return;
    }
    struct tool_netns ns = {.up = false};
    int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC); /* not always PID 1's */
    if (pick_iface(r, o, &ns))
        probe(r);
    r->h = (struct hb_rounds){.reps = r->reps,
                              .nrows = NROWS,
                              .nvalues = 2,
                              .rotate = true,
                              .attempts = ATTEMPTS,
                              .max_disturbed = MAX_DISTURBED,
                              .progress = o->progress,
                              .progress_ctx = o->progress_ctx};
    for (int row = 0; row < NROWS; row++)
        r->rows[row].name = row_names[row];
    if (!r->skipped[0] && !r->failed[0] && hb_rounds_run(&r->h, r->rows, round_fn, r) < 0)
        snprintf(r->failed, sizeof r->failed, "%s", r->h.failed);
    if (r->own_veth && (home < 0 || setns(home, CLONE_NEWNET) < 0))
        tool_netns_leave();
    if (home >= 0)
        close(home);
    tool_netns_down(&ns);
    double raw = r->rows[ROW_RAW].median[0];
    r->ratio = raw > 0 ? r->rows[ROW_HP].median[0] / raw : 0;
    r->met = r->ratio >= GOAL;
}

static void goal_text(const struct afxdp_report *r, char *buf, size_t len)
{
    snprintf(buf, len, "hotpath >= %.2fx the bare libxdp loop (%.3f vs %.3f Mpps: %.3fx)", GOAL,
             r->rows[ROW_HP].median[0], r->rows[ROW_RAW].median[0], r->ratio);
}

static void print_setup(const struct afxdp_report *r, FILE *f)
{
    fprintf(f,
            "setup:      %u B frames (Ethernet to 02:00:00:00:00:02, IPv4 198.18.0.1 -> "
            "198.18.0.2, UDP), "
            "batch %d, copy mode,\n            XDP %s mode, need-wakeup, on %s%s\n",
            FRAME_LEN, BATCH, r->skb_mode ? "generic (SKB)" : "native", r->iface,
            r->own_veth ? " (a veth pair in namespaces of our own)" : "");
    fprintf(f,
            "method:     %d rounds of %.2g s (after %.2g s unmeasured) per row, rows alternating, "
            "a fresh socket "
            "per round;\n            median; Mpps = frames handed to the kernel (transmit ring) "
            "per second; "
            "CPU = the sending\n            thread's time, kernel included, per frame\n",
            r->reps, r->round_s, r->warmup_s);
    fprintf(f,
            "raw:        xsk.h only, like xdpsock -t: 4096 frames written once; reserve %d "
            "descriptors, "
            "submit,\n            sendto() when the ring asks, reap the completion ring\n",
            BATCH);
    fprintf(
        f,
        "hotpath:    hotpath gen txonly on the afxdp link: hp_buf_alloc_bulk from the UMEM pool, "
        "64 B copied\n            into each, hp_link_tx_burst (completions freed by the link)\n");
    hb_rounds_notes(f, &r->h, "other processes held the sender's CPU");
}

static void print_table(const struct afxdp_report *r, FILE *f)
{
    if (r->skipped[0]) {
        fprintf(
            f, "\n== afxdp-raw: AF_XDP txonly, the afxdp link vs a bare libxdp loop\nskipped: %s\n",
            r->skipped);
        return;
    }
    hb_table_head(f, "afxdp-raw: AF_XDP txonly, the afxdp link vs a bare libxdp loop");
    print_setup(r, f);
    if (r->failed[0]) {
        fprintf(f, "\nfailed:     %s\n", r->failed);
        return;
    }
    static const struct hb_col cols[] = {{"Mpps", 9, 3, NULL},
                                         {"CPU ns/pkt", 12, 1, NULL},
                                         {"vs raw", 9, 3, "x"}};
    fputc('\n', f);
    hb_table_cols(f, 8, "row", cols, 3);
    double raw = r->rows[ROW_RAW].median[0];
    for (int row = 0; row < NROWS; row++) {
        const struct hb_row *w = &r->rows[row];
        double v[3] = {w->median[0], w->median[1], raw > 0 ? w->median[0] / raw : 0};
        hb_table_row(f, 8, w->name, cols, 3, v);
    }
    struct hb_goals g = {.n = 0};
    char text[200];
    goal_text(r, text, sizeof text);
    hb_goal(&g, r->met, "%s", text);
    hb_goals_table(&g, f);
}

static json_t *report_json(const struct afxdp_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "bench", json_string("afxdp-raw"));
    if (r->skipped[0]) {
        json_object_set_new(j, "skipped", json_string(r->skipped));
        return j;
    }
    tool_json_build(j);
    json_object_set_new(j, "iface", json_string(r->iface));
    json_object_set_new(j, "own_veth", json_boolean(r->own_veth));
    json_object_set_new(j, "xdp_mode", json_string(r->skb_mode ? "skb" : "native"));
    json_object_set_new(j, "copy", json_true());
    json_object_set_new(j, "frame", json_integer(FRAME_LEN));
    json_object_set_new(j, "batch", json_integer(BATCH));
    json_object_set_new(j, "reps", json_integer(r->reps));
    json_object_set_new(j, "round_s", json_real(r->round_s));
    json_object_set_new(j, "warmup_s", json_real(r->warmup_s));
    if (r->failed[0]) {
        json_object_set_new(j, "failed", json_string(r->failed));
        return j;
    }
    json_object_set_new(j, "retried", json_integer(r->h.retried));
    json_object_set_new(j, "max_off_cpu", tool_json_num(r->h.worst_disturbed, 4));
    json_t *res = json_array();
    for (int row = 0; row < NROWS; row++)
        json_array_append_new(res, json_pack("{s:s, s:o, s:o}", "impl", row_names[row], "mpps",
                                             tool_json_num(r->rows[row].median[0], 4), "cpu_ns",
                                             tool_json_num(r->rows[row].median[1], 2)));
    json_object_set_new(j, "results", res);
    json_object_set_new(j, "ratio", tool_json_num(r->ratio, 4));
    struct hb_goals g = {.n = 0};
    char text[200];
    goal_text(r, text, sizeof text);
    hb_goal(&g, r->met, "%s", text);
    json_object_set_new(j, "goals", hb_goals_json(&g));
    return j;
}

int bench_afxdp(const struct bench_opts *o, FILE *table)
{
    struct afxdp_report *r = malloc(sizeof *r);
    if (!r)
        return 1;
    run(r, o);
    if (!o->json)
        print_table(r, table);
    if (o->json || o->json_out)
        hb_json_emit(report_json(r), o->json, o->json_out);
    /* Skipped (not root, no libxdp) is no failure; a row that failed is. */
    int rc = r->failed[0] ? 1 : 0;
    free(r);
    return rc;
}
