/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath demo`'s layout experiment: tcp_rr over many flows with the hot structures grouped by cache line against their logical order, and against the kernel. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <hotpath/cpu.h>

#include "demo.h"
#include "harness.h"
#include "tool.h"

/*
 * neper's tcp_rr over many flows, as the kernel series measured it: CPU
 * seconds per transaction with the hot structures (hp_tcp_sock, hp_stack,
 * hp_buf...) laid out by cache line (grouped, this binary) against their
 * logical field order (chrono, a second build of the same sources), and
 * against the kernel's TCP over loopback. Each measurement is a `hotpath rr
 * --json` child process, so the two layouts run the very same code path and
 * every run starts from a fresh process. */

enum { CFG_GROUPED, CFG_CHRONO, CFG_KERNEL, NCFG };
static const char *const cfg_name[NCFG] = {"grouped", "chrono", "kernel"};

/* The sweeps; --flows, --family, --duration and --reps override a field. */
static const struct layout_sweep {
    const char *name;
    unsigned flows[LAYOUT_MAX_FLOWS];
    int nflows;
    int families; /* bit 0: IPv4, bit 1: IPv6 */
    double duration;
    int reps;
    double sim_duration; /* the simulated step's window (layout_simulate), 0: not run */
} sweeps[] = {
    {"quick", {1000, 10000}, 2, 1, 1, 1, 0},
    {"demo", {1000, 10000, 30000}, 3, 1, 2, 3, 20},
    {"full", {1000, 5000, 10000, 20000, 30000}, 5, 3, 3, 5, 20},
};

/* The seed's goals (SEEDS.md part 3, the issue). */
#define GOAL_LAYOUT     0.70 /* grouped / chrono, at LAYOUT_GOAL_MIN.. flows */
#define GOAL_KERNEL     0.10 /* grouped / kernel, at every flow count */
#define LAYOUT_GOAL_MIN 10000u
#define LAYOUT_GOAL_MAX 30000u

/* A mem run whose busy-polling threads were on their CPUs for less than
 * this share of the window was preempted by some other process of this
 * shared machine: while one side waits for a CPU the other spins for
 * nothing, which inflates CPU per transaction. Such a run is done again (up
 * to LAYOUT_RETRIES times); the medians use the undisturbed runs. */
#define LAYOUT_MIN_BUSY 0.95
#define LAYOUT_RETRIES  2

struct layout_run {
    bool ok;
    bool disturbed; /* mem: busy < LAYOUT_MIN_BUSY */
    double cpu_us, tps, p50_us, p99_us, setup_s;
    double busy; /* mem: thread CPU time / (threads x window); kernel: -1 */
    unsigned flows_reached;
    json_t *json;  /* the child's JSON object (NULL when it failed) */
    char err[200]; /* why it failed */
    int retries;   /* disturbed attempts done again; their results: */
    double retried_us[LAYOUT_RETRIES], retried_busy[LAYOUT_RETRIES];
};

struct layout_cell {
    unsigned flows;
    bool ipv6;
    struct layout_run run[NCFG][LAYOUT_MAX_REPS];
    double us[NCFG], tps[NCFG]; /* medians over the runs that worked; 0: none */
    int nok[NCFG];
    int nused[NCFG]; /* runs in the median: the undisturbed ones, if any */
    /* grouped / chrono and grouped / kernel: the median over the
     * repetitions of the ratio of the two runs of one repetition, which ran
     * back to back (0: not measured). The machine's speed drifts by tens of
     * percent over minutes on this shared host, alike for every
     * configuration; a ratio of runs done together cancels that, a ratio of
     * medians taken minutes apart does not. */
    double q[NCFG];
    int nq[NCFG];
    unsigned reached_min[NCFG]; /* fewest flows any run set up */
};

struct layout_report {
    const struct layout_sweep *sw; /* the sweep the defaults come from */
    const char *sweep;             /* its name, or "custom" when an option changed it */
    unsigned flows[LAYOUT_MAX_FLOWS];
    int nflows, families, reps;
    double duration;
    char cpus[32];                 /* --cpu of the children, "" when not pinned */
    const char *early_demux;       /* --early-demux of the hotpath children, NULL: their default */
    char self[4096], chrono[4096]; /* the binaries' paths, for the report */
    /* What the children exec: this very binary, and the chrono binary through
     * a descriptor opened once, so that a rebuild of build/ or build-chrono/
     * during a long sweep (the tree is shared) cannot mix two builds. */
    char exec_chrono[32];
    int chrono_fd;
    char chrono_why[300]; /* why the chrono column is skipped, "" when it ran */
    bool chrono_stale;
    struct layout_cell *cells;
    int ncells;
    double seconds; /* wall time of the sweep */
    /* goals: 1 met, 0 missed, -1 not applicable; worst ratio and where */
    int goal[2];
    bool goal_measured[2];
    double worst[2];
    int worst_cell[2];
};

/* The first JSON object in a child's output that has key (its lines may
 * hold other text). NULL when there is none. */
static json_t *find_object(const char *out, const char *key)
{
    for (const char *p = strchr(out, '{'); p; p = strchr(p + 1, '{')) {
        json_t *v = tool_json_find(p);
        if (v && json_object_get(v, key))
            return v;
        json_decref(v);
    }
    return NULL;
}

/* Whether obj's "layout" is name. */
static bool layout_is(const json_t *obj, const char *name)
{
    const char *v = json_string_value(json_object_get(obj, "layout"));
    return v && strcmp(v, name) == 0;
}

/* The argument vector of one `hotpath rr --json` child; its strings in buf. */
static void rr_argv(const struct layout_report *r, const struct layout_cell *c, int cfg,
                    double duration, char *argv[16], char buf[2][32])
{
    snprintf(buf[0], sizeof buf[0], "%u", c->flows);
    snprintf(buf[1], sizeof buf[1], "%g", duration);
    int n = 0;
    argv[n++] = (char *)(cfg == CFG_CHRONO ? r->exec_chrono : "/proc/self/exe");
    argv[n++] = "rr";
    argv[n++] = "--json";
    argv[n++] = "--link";
    argv[n++] = cfg == CFG_KERNEL ? "kernel" : "mem";
    argv[n++] = "--flows";
    argv[n++] = buf[0];
    argv[n++] = "--duration";
    argv[n++] = buf[1];
    if (c->ipv6)
        argv[n++] = "--ipv6";
    if (cfg != CFG_KERNEL && r->early_demux) {
        argv[n++] = "--early-demux";
        argv[n++] = (char *)r->early_demux;
    }
    if (r->cpus[0]) {
        argv[n++] = "--cpu";
        argv[n++] = (char *)r->cpus;
    }
    argv[n] = NULL;
}

/* A run's numbers from its JSON. false with run->err set. */
static bool read_run(struct layout_run *run, const json_t *obj, int cfg, const char *bin)
{
    double reached = 0;
    if (!obj || !tool_json_get_num(obj, "cpu_s_per_txn", &run->cpu_us) ||
        !tool_json_get_num(obj, "tps", &run->tps) ||
        !tool_json_get_num(obj, "flows_reached", &reached)) {
        snprintf(run->err, sizeof run->err, "no JSON result from %s rr", bin);
        return false;
    }
    if (cfg != CFG_KERNEL && !layout_is(obj, cfg_name[cfg])) {
        snprintf(run->err, sizeof run->err, "%s is not a %s build", bin, cfg_name[cfg]);
        return false;
    }
    tool_json_get_num(obj, "p50_us", &run->p50_us);
    tool_json_get_num(obj, "p99_us", &run->p99_us);
    tool_json_get_num(obj, "setup_s", &run->setup_s);
    run->cpu_us *= 1e6;
    double cc = 0, cs = 0, secs = 0, threads = 1;
    run->busy = -1;
    if (cfg != CFG_KERNEL && tool_json_get_num(obj, "cpu_client_s", &cc) &&
        tool_json_get_num(obj, "cpu_server_s", &cs) && tool_json_get_num(obj, "seconds", &secs) &&
        tool_json_get_num(obj, "threads", &threads) && secs > 0 && threads > 0) {
        run->busy = (cc + cs) / (2 * threads * secs);
        run->disturbed = run->busy < LAYOUT_MIN_BUSY;
    }
    run->flows_reached = (unsigned)reached;
    run->ok = run->cpu_us > 0;
    if (!run->ok)
        snprintf(run->err, sizeof run->err, "no transaction completed");
    return true;
}

static void layout_run_one(const struct layout_report *r, struct layout_cell *c, int cfg, int rep,
                           double duration)
{
    struct layout_run *run = &c->run[cfg][rep];
    json_decref(run->json);
    run->json = NULL;
    run->ok = run->disturbed = false;
    run->err[0] = 0;
    char *argv[16], buf[2][32], *out;
    rr_argv(r, c, cfg, duration, argv, buf);
    /* Setting up 30,000 kernel flows takes about a second; a minute more is
     * a generous bound for a loaded machine. */
    if (run_child(argv, 2 * duration + 60 + c->flows / 1000.0, &out, run->err, sizeof run->err) < 0)
        return;
    json_t *obj = find_object(out, "proto");
    free(out);
    if (read_run(run, obj, cfg, argv[0]))
        run->json = obj;
    else
        json_decref(obj);
}

static time_t newest_src; /* of the nftw walk below; one walk at a time */

static int newest_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (type == FTW_F && st->st_mtime > newest_src)
        newest_src = st->st_mtime;
    return 0;
}

/* The chrono binary: --chrono-binary, else DIR-chrono/hotpath beside this
 * binary's DIR (build/ -> build-chrono/), else build-chrono/ of the source
 * tree. Sets r->chrono, or r->chrono_why. */
static void layout_find_chrono(struct layout_report *r, const char *opt)
{
    if (opt && strcmp(opt, "none") == 0) {
        snprintf(r->chrono_why, sizeof r->chrono_why, "--chrono-binary none");
        return;
    }
    char cand[2][4096];
    int nc = 0;
    if (opt) {
        snprintf(cand[nc++], sizeof cand[0], "%s", opt);
    } else {
        const char *slash = strrchr(r->self, '/');
        if (slash && slash > r->self)
            snprintf(cand[nc++], sizeof cand[0], "%.*s-chrono/hotpath", (int)(slash - r->self),
                     r->self);
        snprintf(cand[nc++], sizeof cand[0], "%s", HP_SOURCE_DIR "/build-chrono/hotpath");
    }
    const char *found = NULL;
    for (int i = 0; i < nc && !found; i++)
        if (access(cand[i], X_OK) == 0)
            found = cand[i];
    if (!found) {
        if (nc == 2 && strcmp(cand[0], cand[1]) != 0)
            snprintf(r->chrono_why, sizeof r->chrono_why,
                     "no chrono build at %.120s or %.120s: build one with `make chrono`", cand[0],
                     cand[1]);
        else
            snprintf(r->chrono_why, sizeof r->chrono_why,
                     "no chrono build at %.200s: build one with `make chrono`", cand[nc - 1]);
        return;
    }
    size_t flen = strlen(found);
    int fd = flen < sizeof r->chrono ? open(found, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) {
        snprintf(r->chrono_why, sizeof r->chrono_why, "cannot open %.200s: %s", found,
                 flen < sizeof r->chrono ? strerror(errno) : "path too long");
        return;
    }
    /* The child opens /proc/self/fd/N before exec closes N (O_CLOEXEC). */
    snprintf(r->exec_chrono, sizeof r->exec_chrono, "/proc/self/fd/%d", fd);
    /* Ask it: a grouped binary in its place would make the column a lie. */
    char *out, err[200];
    char *argv[] = {r->exec_chrono, "version", NULL};
    bool chrono = false;
    if (run_child(argv, 20, &out, err, sizeof err) == 0) {
        chrono = strstr(out, "layout: chrono") != NULL; /* `hotpath version`: text */
        free(out);
        if (!chrono)
            snprintf(
                r->chrono_why, sizeof r->chrono_why,
                "%.150s is not a chrono build (`hotpath version` does not say layout: chrono): "
                "build one with `make chrono`",
                found);
    } else {
        snprintf(r->chrono_why, sizeof r->chrono_why, "%.150s version failed (%.100s)", found, err);
    }
    if (!chrono) {
        close(fd);
        return;
    }
    r->chrono_fd = fd;
    memcpy(r->chrono, found, flen + 1);
    /* A library source edited since the chrono build: `make chrono` would
     * rebuild it, and the two columns would measure different code. */
    struct stat st;
    if (fstat(fd, &st) == 0) {
        newest_src = 0;
        nftw(HP_SOURCE_DIR "/src", newest_cb, 16, FTW_PHYS);
        nftw(HP_SOURCE_DIR "/include", newest_cb, 16, FTW_PHYS);
        r->chrono_stale = newest_src > st.st_mtime;
    }
}

/* The paired ratio of grouped against cfg in cell c (see layout_cell.q):
 * over the repetitions where both ran undisturbed, or where both ran when
 * no such repetition exists. */
static void layout_pair(const struct layout_report *r, struct layout_cell *c, int cfg)
{
    double v[LAYOUT_MAX_REPS];
    int n = 0;
    for (int pass = 0; pass < 2 && !n; pass++)
        for (int rep = 0; rep < r->reps; rep++) {
            const struct layout_run *g = &c->run[CFG_GROUPED][rep], *o = &c->run[cfg][rep];
            if (g->ok && o->ok && (pass || (!g->disturbed && !o->disturbed)))
                v[n++] = g->cpu_us / o->cpu_us;
        }
    c->nq[cfg] = n;
    c->q[cfg] = n ? hb_median(v, n) : 0;
}

static const char *flows_label(unsigned f)
{
    static _Thread_local char bufs[4][16];
    static _Thread_local int next;
    char *b = bufs[next++ & 3];
    if (f >= 1000 && f % 1000 == 0)
        snprintf(b, 16, "%uk", f / 1000);
    else
        snprintf(b, 16, "%u", f);
    return b;
}

/* Goal g with cell i's ratio q (0: not measured) against its bound. */
static void goal_update(struct layout_report *r, int g, double q, double bound, int i)
{
    if (!q) {
        r->goal_measured[g] = false;
        r->goal[g] = 0;
        return;
    }
    if (r->goal[g] < 0)
        r->goal[g] = 1;
    if (q > bound)
        r->goal[g] = 0;
    if (q > r->worst[g]) {
        r->worst[g] = q;
        r->worst_cell[g] = i;
    }
}

static void layout_summarise(struct layout_report *r)
{
    for (int g = 0; g < 2; g++) {
        r->goal[g] = -1;
        r->goal_measured[g] = true;
        r->worst[g] = 0;
        r->worst_cell[g] = -1;
    }
    for (int i = 0; i < r->ncells; i++) {
        struct layout_cell *c = &r->cells[i];
        for (int k = 0; k < NCFG; k++) {
            double us[LAYOUT_MAX_REPS], tps[LAYOUT_MAX_REPS];
            int n = 0, clean = 0;
            c->reached_min[k] = 0;
            for (int rep = 0; rep < r->reps; rep++) {
                const struct layout_run *run = &c->run[k][rep];
                if (!run->ok)
                    continue;
                if (!c->nok[k]++ || run->flows_reached < c->reached_min[k])
                    c->reached_min[k] = run->flows_reached;
                clean += !run->disturbed;
            }
            for (int rep = 0; rep < r->reps; rep++) {
                const struct layout_run *run = &c->run[k][rep];
                if (!run->ok || (clean && run->disturbed))
                    continue;
                us[n] = run->cpu_us;
                tps[n++] = run->tps;
            }
            c->nused[k] = n;
            c->us[k] = n ? hb_median(us, n) : 0;
            c->tps[k] = n ? hb_median(tps, n) : 0;
        }
        layout_pair(r, c, CFG_CHRONO);
        layout_pair(r, c, CFG_KERNEL);
        /* Goal 1: the layout, where the state no longer fits in cache. */
        if (c->flows >= LAYOUT_GOAL_MIN && c->flows <= LAYOUT_GOAL_MAX)
            goal_update(r, 0, c->q[CFG_CHRONO], GOAL_LAYOUT, i);
        /* Goal 2: against the kernel, at every flow count. */
        goal_update(r, 1, c->q[CFG_KERNEL], GOAL_KERNEL, i);
    }
}

/* "yes", or what a row misses. */
static const char *layout_row_goal(const struct layout_cell *c)
{
    double qc = c->q[CFG_CHRONO];
    double qk = c->q[CFG_KERNEL];
    bool layout_applies = c->flows >= LAYOUT_GOAL_MIN && c->flows <= LAYOUT_GOAL_MAX;
    bool lay_ok = !layout_applies || (qc > 0 && qc <= GOAL_LAYOUT);
    bool ker_ok = qk > 0 && qk <= GOAL_KERNEL;
    if (lay_ok && ker_ok)
        return "yes";
    if (!lay_ok && !ker_ok)
        return "no (layout, kernel)";
    return lay_ok ? "no (kernel)" : "no (layout)";
}

static void print_us(FILE *f, bool md, double v, int width)
{
    if (md && v > 0)
        fprintf(f, " %.3f |", v);
    else if (md)
        fprintf(f, " - |");
    else if (v > 0)
        fprintf(f, " %*.3f", width, v);
    else
        fprintf(f, " %*s", width, "-");
}

static void layout_print_goals(const struct layout_report *r, FILE *f, bool md)
{
    static const char *const text[2] = {
        "at 10k-30k flows, grouped <= 0.70x chrono CPU per transaction",
        "at every flow count, hotpath over the mem link <= 0.1x the kernel's CPU per transaction",
    };
    for (int g = 0; g < 2; g++) {
        const char *state = r->goal[g] < 0 ? "n/a" : r->goal[g] ? "met" : "MISSED";
        fprintf(f, md ? "- %s: %s" : "  [%s] %s", state, text[g]);
        if (r->goal[g] < 0)
            fprintf(f, " (no flow count of the sweep is in that range)");
        else if (!r->goal_measured[g])
            fprintf(f, " (not measured%s%s)", g == 0 && r->chrono_why[0] ? ": " : "",
                    g == 0 ? r->chrono_why : "");
        else if (r->worst_cell[g] >= 0) {
            const struct layout_cell *c = &r->cells[r->worst_cell[g]];
            fprintf(f, " (worst %.3fx at %s %s)", r->worst[g], flows_label(c->flows),
                    c->ipv6 ? "IPv6" : "IPv4");
        }
        fputc('\n', f);
    }
}

static void layout_print(const struct layout_report *r, FILE *f, bool md)
{
    if (md)
        fprintf(
            f, "| flows | family | chrono µs/txn | grouped µs/txn | grouped/chrono | kernel µs/txn "
               "| grouped/kernel | goal met? |\n|---:|---|---:|---:|---:|---:|---:|---|\n");
    else
        fprintf(f, "%6s %-6s %14s %15s %16s %14s %15s  %s\n", "flows", "family", "chrono us/txn",
                "grouped us/txn", "grouped/chrono", "kernel us/txn", "grouped/kernel", "goal met?");
    for (int i = 0; i < r->ncells; i++) {
        const struct layout_cell *c = &r->cells[i];
        double qc = c->q[CFG_CHRONO];
        double qk = c->q[CFG_KERNEL];
        char qcs[40] = "-", qks[24] = "-";
        if (qc > 0)
            snprintf(qcs, sizeof qcs, "%.2fx (%+.1f%%)", qc, (qc - 1) * 100);
        if (qk > 0)
            snprintf(qks, sizeof qks, "%.3fx", qk);
        fprintf(f, md ? "| %s | %s |" : "%6s %-6s", flows_label(c->flows),
                c->ipv6 ? "IPv6" : "IPv4");
        print_us(f, md, c->us[CFG_CHRONO], 14);
        print_us(f, md, c->us[CFG_GROUPED], 15);
        fprintf(f, md ? " %s |" : " %16s", qcs);
        print_us(f, md, c->us[CFG_KERNEL], 14);
        fprintf(f, md ? " %s | %s |\n" : " %15s  %s\n", qks, layout_row_goal(c));
    }
    /* The seed's own form: the reduction per flow count and family. */
    bool fam[2] = {r->families & 1, (r->families & 2) != 0};
    if (!r->chrono[0])
        return;
    fprintf(f,
            md ? "\nThe seed's form, grouped against chrono (CPU per transaction):\n\n| flows |"
               : "\nreduction of CPU per transaction, grouped vs chrono (the seed's form):\n%6s",
            "flows");
    for (int v = 0; v < 2; v++)
        if (fam[v])
            fprintf(f, md ? " %s |" : " %16s", v ? "IPv6 reduction" : "IPv4 reduction");
    fprintf(f, md ? "\n|---:|%s%s\n" : "\n", md && fam[0] ? "---:|" : "",
            md && fam[1] ? "---:|" : "");
    for (int fi = 0; fi < r->nflows; fi++) {
        fprintf(f, md ? "| %s |" : "%6s", flows_label(r->flows[fi]));
        for (int v = 0; v < 2; v++) {
            if (!fam[v])
                continue;
            double q = 0;
            for (int i = 0; i < r->ncells; i++)
                if (r->cells[i].flows == r->flows[fi] && r->cells[i].ipv6 == (v == 1))
                    q = r->cells[i].q[CFG_CHRONO];
            char s[24] = "-";
            if (q > 0)
                snprintf(s, sizeof s, "%+.1f%%", (q - 1) * 100);
            fprintf(f, md ? " %s |" : " %16s", s);
        }
        fputc('\n', f);
    }
}

/* Runs that failed, and cells where fewer flows came up than asked. */
static void layout_print_notes(const struct layout_report *r, FILE *f, bool md)
{
    int shown = 0;
    for (int i = 0; i < r->ncells; i++) {
        const struct layout_cell *c = &r->cells[i];
        for (int k = 0; k < NCFG; k++) {
            if (k == CFG_CHRONO && !r->chrono[0])
                continue;
            const char *why = NULL;
            for (int rep = 0; rep < r->reps && !why; rep++)
                if (!c->run[k][rep].ok)
                    why = c->run[k][rep].err;
            if (why && shown++ < 12)
                fprintf(f,
                        md ? "- %s %s %s: %d of %d runs failed: %s\n"
                           : "  note: %s %s %s: %d of %d runs failed: %s\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k],
                        r->reps - c->nok[k], r->reps, why);
            if (c->nok[k] && c->nused[k] < c->nok[k] && shown++ < 12)
                fprintf(f,
                        md ? "- %s %s %s: median of the %d undisturbed runs of %d (the others were "
                             "preempted)\n"
                           : "  note: %s %s %s: median of the %d undisturbed runs of %d (the "
                             "others were preempted)\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k], c->nused[k],
                        c->nok[k]);
            bool all_disturbed = c->nok[k] > 0 && k != CFG_KERNEL;
            for (int rep = 0; rep < r->reps; rep++)
                all_disturbed &= !c->run[k][rep].ok || c->run[k][rep].disturbed;
            if (all_disturbed && shown++ < 12)
                fprintf(
                    f,
                    md ? "- %s %s %s: every run was preempted by other processes (threads on CPU "
                         "less than %.0f%% of the window): its number is high\n"
                       : "  note: %s %s %s: every run was preempted by other processes (threads on "
                         "CPU less than %.0f%% of the window): its number is high\n",
                    flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k],
                    LAYOUT_MIN_BUSY * 100);
            if (c->nok[k] && c->reached_min[k] < c->flows && shown++ < 12)
                fprintf(f,
                        md ? "- %s %s %s: only %u flows came up in some run\n"
                           : "  note: %s %s %s: only %u flows came up in some run\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k],
                        c->reached_min[k]);
        }
    }
}

static json_t *us_or_null(double v, int decimals)
{
    return v > 0 ? tool_json_num(v, decimals) : json_null();
}

/* One cell: medians, ratios, pairs, and the runs in the median. */
static json_t *cell_json(const struct layout_report *r, const struct layout_cell *c)
{
    json_t *j =
        json_pack("{s:i, s:s}", "flows", (int)c->flows, "family", c->ipv6 ? "IPv6" : "IPv4");
    for (int k = 0; k < NCFG; k++) {
        char key[32];
        snprintf(key, sizeof key, "%s_us", cfg_name[k]);
        json_object_set_new(j, key, us_or_null(c->us[k], 4));
        snprintf(key, sizeof key, "%s_tps", cfg_name[k]);
        json_object_set_new(j, key, c->us[k] > 0 ? tool_json_num(c->tps[k], 0) : json_null());
    }
    double qc = c->q[CFG_CHRONO], qk = c->q[CFG_KERNEL];
    json_object_set_new(j, "grouped_over_chrono", us_or_null(qc, 4));
    json_object_set_new(j, "reduction_pct",
                        qc > 0 ? tool_json_num((qc - 1) * 100, 2) : json_null());
    json_object_set_new(j, "grouped_over_kernel", us_or_null(qk, 4));
    json_object_set_new(
        j, "pairs",
        json_pack("{s:i, s:i}", "chrono", c->nq[CFG_CHRONO], "kernel", c->nq[CFG_KERNEL]));
    json_object_set_new(j, "goal_met", json_string(layout_row_goal(c)));
    json_t *used = json_object(),
           *reps = json_object(); /* the runs in the median; "runs" has all */
    for (int k = 0; k < NCFG; k++) {
        json_object_set_new(used, cfg_name[k], json_integer(c->nused[k]));
        json_t *a = json_array();
        for (int rep = 0; rep < r->reps; rep++)
            if (c->run[k][rep].ok && (c->nused[k] == c->nok[k] || !c->run[k][rep].disturbed))
                json_array_append_new(a, tool_json_num(c->run[k][rep].cpu_us, 4));
        json_object_set_new(reps, cfg_name[k], a);
    }
    json_object_set_new(j, "runs_in_median", used);
    json_object_set_new(j, "reps_us", reps);
    return j;
}

static json_t *goals_json(const struct layout_report *r)
{
    static const char *const gtext[2] = {
        "grouped <= 0.70x chrono CPU per transaction at 10k-30k flows",
        "hotpath (mem link) <= 0.1x the kernel's CPU per transaction at every flow count"};
    json_t *a = json_array();
    for (int g = 0; g < 2; g++)
        json_array_append_new(a, json_pack("{s:s, s:b, s:b, s:b, s:o}", "text", gtext[g], "met",
                                           r->goal[g] == 1, "applies", r->goal[g] >= 0, "measured",
                                           r->goal_measured[g], "worst_ratio",
                                           us_or_null(r->worst[g], 4)));
    return a;
}

/* Every child's own JSON, for whoever wants more than the medians. */
static json_t *runs_json(const struct layout_report *r)
{
    json_t *a = json_array();
    for (int i = 0; i < r->ncells; i++)
        for (int k = 0; k < NCFG; k++)
            for (int rep = 0; rep < r->reps; rep++) {
                const struct layout_run *run = &r->cells[i].run[k][rep];
                if (k == CFG_CHRONO && !r->chrono[0])
                    continue;
                json_t *o = json_pack("{s:i, s:s, s:s, s:i}", "flows", (int)r->cells[i].flows,
                                      "family", r->cells[i].ipv6 ? "IPv6" : "IPv4", "config",
                                      cfg_name[k], "rep", rep);
                if (run->busy >= 0) {
                    json_object_set_new(o, "busy", tool_json_num(run->busy, 3));
                    json_object_set_new(o, "disturbed", json_boolean(run->disturbed));
                }
                json_t *pre = json_array();
                for (int t = 0; t < run->retries; t++)
                    json_array_append_new(
                        pre, json_pack("{s:o, s:o}", "cpu_us", tool_json_num(run->retried_us[t], 4),
                                       "busy", tool_json_num(run->retried_busy[t], 3)));
                json_object_set_new(o, "preempted_attempts", pre);
                if (run->json)
                    json_object_set(o, "result", run->json);
                else
                    json_object_set_new(o, "error",
                                        json_string(run->err[0] ? run->err : "not run"));
                json_array_append_new(a, o);
            }
    return a;
}

static json_t *layout_json(const struct layout_report *r)
{
    json_t *j = json_pack("{s:s, s:s, s:s}", "experiment", "layout", "workload", "tcp_rr", "sweep",
                          r->sweep);
    tool_json_build(j);
    json_object_set_new(j, "duration_s", json_real(r->duration));
    json_object_set_new(j, "reps", json_integer(r->reps));
    json_object_set_new(j, "seconds", tool_json_num(r->seconds, 1));
    json_object_set_new(j, "pinned_cpus", json_string(r->cpus));
    json_object_set_new(j, "binaries",
                        json_pack("{s:s, s:o, s:s}", "grouped", r->self, "chrono",
                                  tool_json_str_or_null(r->chrono), "kernel", r->self));
    json_object_set_new(j, "chrono_skipped", tool_json_str_or_null(r->chrono_why));
    json_object_set_new(j, "chrono_maybe_stale", json_boolean(r->chrono_stale));
    json_object_set_new(j, "goal_layout_max_ratio", json_real(GOAL_LAYOUT));
    json_object_set_new(j, "goal_kernel_max_ratio", json_real(GOAL_KERNEL));
    json_object_set_new(j, "min_busy", json_real(LAYOUT_MIN_BUSY));
    json_object_set_new(j, "retries", json_integer(LAYOUT_RETRIES));
    json_object_set_new(
        j, "ratios",
        json_string("median over the repetitions of grouped/X of the same repetition "
                    "(pairs: how many)"));
    json_t *cells = json_array();
    for (int i = 0; i < r->ncells; i++)
        json_array_append_new(cells, cell_json(r, &r->cells[i]));
    json_object_set_new(j, "cells", cells);
    json_object_set_new(j, "goals", goals_json(r));
    json_object_set_new(j, "runs", runs_json(r));
    return j;
}

static void layout_free(struct layout_report *r)
{
    for (int i = 0; i < r->ncells; i++)
        for (int k = 0; k < NCFG; k++)
            for (int rep = 0; rep < LAYOUT_MAX_REPS; rep++)
                json_decref(r->cells[i].run[k][rep].json);
    if (r->chrono_fd >= 0)
        close(r->chrono_fd);
    free(r->cells);
    free(r);
}

/* ---- the layout experiment's simulated step -------------------------------
 * CPU time on a shared host moves by tens of percent between runs; what a
 * field order changes is the cache misses, and those a cache simulator counts
 * the same on any host. scripts/rr_cachesim.py runs one `hotpath rr` under
 * valgrind's callgrind (rr zeroes and dumps its counters at the measured
 * window's edges) and prints the misses per transaction; this step runs it
 * for each build at the sweep's largest flow count. */

#define SIM_L1       32768       /* a Zen 3 core's L1d, 8-way (the script's default) */
#define SIM_LL       (32u << 20) /* last level modelled: a Zen 3 CCX's L3, 32 MiB */
#define SIM_LL_ASSOC 16

struct layout_sim_row {
    const char *layout;
    double txns, ir, d1, ll, ll_rd, ll_wr;
};

struct layout_sim {
    unsigned flows;
    bool ipv6;
    double window;
    int n;
    struct layout_sim_row row[2]; /* grouped, then chrono when there is one */
    char why[300];                /* why it did not run (or stopped), "" when it ran */
};

/* The argument vector of rr_cachesim.py on one binary; its strings in buf. */
static void sim_argv(const struct layout_report *r, const struct layout_sim *sim,
                     const char *script, const char *bin, char *argv[24], char buf[5][32])
{
    snprintf(buf[0], sizeof buf[0], "%u", sim->flows);
    snprintf(buf[1], sizeof buf[1], "%g", sim->window);
    snprintf(buf[2], sizeof buf[2], "%d", SIM_L1);
    snprintf(buf[3], sizeof buf[3], "%u", SIM_LL);
    snprintf(buf[4], sizeof buf[4], "%d", SIM_LL_ASSOC);
    const char *fixed[] = {"/usr/bin/env", "python3", script,  bin,    "--flows", buf[0],
                           "--duration",   buf[1],    "--l1",  buf[2], "--ll",    buf[3],
                           "--ll-assoc",   buf[4],    "--top", "0",    "--json"};
    int n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = (char *)fixed[i];
    if (sim->ipv6 || r->early_demux) {
        argv[n++] = "--";
        if (sim->ipv6)
            argv[n++] = "--ipv6";
        if (r->early_demux) {
            argv[n++] = "--early-demux";
            argv[n++] = (char *)r->early_demux;
        }
    }
    argv[n] = NULL;
}

/* rr_cachesim.py's row for one build into row. false with sim->why set. */
static bool sim_one(const struct layout_report *r, struct layout_sim *sim, const char *script,
                    const char *bin, const char *name, struct layout_sim_row *row)
{
    char *argv[24], buf[5][32], *out, err[200];
    sim_argv(r, sim, script, bin, argv, buf);
    /* Under valgrind rr sets up about 3,000 flows a second; the window is
     * valgrind's (slow) time. Twice that and two minutes more. */
    double timeout = 2 * (sim->window + sim->flows / 3000.0) + 120;
    if (run_child(argv, timeout, &out, err, sizeof err) < 0) {
        snprintf(sim->why, sizeof sim->why, "rr_cachesim.py %s: %s", name, err);
        return false;
    }
    json_t *obj = find_object(out, "binary");
    free(out);
    row->layout = name;
    bool ok = obj && layout_is(obj, name) && tool_json_get_num(obj, "transactions", &row->txns) &&
              tool_json_get_num(obj, "ir_per_txn", &row->ir) &&
              tool_json_get_num(obj, "d1_miss_per_txn", &row->d1) &&
              tool_json_get_num(obj, "ll_miss_per_txn", &row->ll) &&
              tool_json_get_num(obj, "ll_rd_per_txn", &row->ll_rd) &&
              tool_json_get_num(obj, "ll_wr_per_txn", &row->ll_wr) && row->txns > 0;
    json_decref(obj);
    if (!ok)
        snprintf(sim->why, sizeof sim->why, "rr_cachesim.py %s: no %s result in its output", name,
                 name);
    return ok;
}

/* Runs the step into *sim; sim->why says why when it could not. */
static void layout_simulate(const struct layout_report *r, double window, struct progress *pr,
                            struct layout_sim *sim)
{
    memset(sim, 0, sizeof *sim);
    sim->window = window;
    for (int fi = 0; fi < r->nflows; fi++)
        if (r->flows[fi] > sim->flows)
            sim->flows = r->flows[fi];
    sim->ipv6 = !(r->families & 1);
    const char *script = find_data_script("rr_cachesim.py");
    if (!script) {
        snprintf(sim->why, sizeof sim->why, "scripts/rr_cachesim.py not found");
        return;
    }
    const char *bins[2] = {r->self, r->chrono[0] ? r->chrono : NULL};
    int total = bins[1] ? 2 : 1;
    for (int b = 0; b < total; b++) {
        const char *name = cfg_name[b == 0 ? CFG_GROUPED : CFG_CHRONO];
        char what[80];
        snprintf(what, sizeof what, "simulated misses: %s flows %s %s (valgrind)",
                 flows_label(sim->flows), sim->ipv6 ? "IPv6" : "IPv4", name);
        progress_update(pr, b, total, what);
        if (!sim_one(r, sim, script, bins[b], name, &sim->row[sim->n]))
            return;
        sim->n++;
        progress_update(pr, b + 1, total, what);
    }
}

static void layout_sim_print(const struct layout_sim *sim, FILE *f, bool md)
{
    if (md)
        fprintf(f, "| layout | transactions | instructions | L1d misses | last-level misses |\n"
                   "|---|---:|---:|---:|---:|\n");
    else
        fprintf(f, "  %-16s %12s %12s %10s %17s\n", "layout", "transactions", "instructions",
                "L1d misses", "last-level misses");
    for (int i = 0; i < sim->n; i++) {
        const struct layout_sim_row *w = &sim->row[i];
        fprintf(f,
                md ? "| %s | %.0f | %.0f | %.1f | %.2f |\n"
                   : "  %-16s %12.0f %12.0f %10.1f %17.2f\n",
                w->layout, w->txns, w->ir, w->d1, w->ll);
    }
    if (sim->n == 2) {
        const struct layout_sim_row *g = &sim->row[0], *c = &sim->row[1];
        /* Below a tenth of a miss per transaction everything fits the last
         * level: a ratio of such counts says nothing. */
        char ll[32];
        if (g->ll >= 0.1 && c->ll >= 0.1)
            snprintf(ll, sizeof ll, "%.2fx", g->ll / c->ll);
        else
            snprintf(ll, sizeof ll, "- (all cached)");
        if (md)
            fprintf(f, "| grouped/chrono | | %.2fx | %.2fx | %s |\n", g->ir / c->ir, g->d1 / c->d1,
                    ll);
        else
            fprintf(f, "  %-16s %12s %11.2fx %9.2fx %17s\n", "grouped/chrono", "", g->ir / c->ir,
                    g->d1 / c->d1, ll);
    }
}

static json_t *layout_sim_json(const struct layout_report *r, const struct layout_sim *sim)
{
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:i, s:s, s:f}", "experiment", "layout_sim", "workload", "tcp_rr", "tool",
        "scripts/rr_cachesim.py (valgrind --tool=callgrind --cache-sim=yes)", "flows",
        (int)sim->flows, "family", sim->ipv6 ? "IPv6" : "IPv4", "window_s", sim->window);
    json_object_set_new(j, "l1d", json_pack("{s:i, s:i}", "bytes", SIM_L1, "assoc", 8));
    json_object_set_new(
        j, "last_level",
        json_pack("{s:I, s:i}", "bytes", (json_int_t)SIM_LL, "assoc", SIM_LL_ASSOC));
    json_object_set_new(
        j, "binaries",
        json_pack("{s:s, s:o}", "grouped", r->self, "chrono", tool_json_str_or_null(r->chrono)));
    json_t *rows = json_array();
    for (int i = 0; i < sim->n; i++) {
        const struct layout_sim_row *w = &sim->row[i];
        json_array_append_new(rows, json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "layout",
                                              w->layout, "transactions", tool_json_num(w->txns, 0),
                                              "ir_per_txn", tool_json_num(w->ir, 1),
                                              "d1_miss_per_txn", tool_json_num(w->d1, 3),
                                              "ll_miss_per_txn", tool_json_num(w->ll, 3),
                                              "ll_rd_per_txn", tool_json_num(w->ll_rd, 3),
                                              "ll_wr_per_txn", tool_json_num(w->ll_wr, 3)));
    }
    json_object_set_new(j, "rows", rows);
    return j;
}

/* The report of a sweep: the options over the sweep's defaults, the
 * binaries, the CPUs and the cells. NULL with *rc set on a failure. */
static struct layout_report *layout_new(const struct demo_ctx *d, int *rc)
{
    const struct layout_opts *lo = &d->layout;
    struct layout_report *r = calloc(1, sizeof *r);
    if (!r) {
        *rc = -ENOMEM;
        return NULL;
    }
    r->sw = &sweeps[lo->full ? 2 : d->quick ? 0 : 1];
    memcpy(r->flows, lo->nflows ? lo->flows : r->sw->flows, sizeof r->flows);
    r->nflows = lo->nflows ? lo->nflows : r->sw->nflows;
    r->families = lo->families ? lo->families : r->sw->families;
    r->duration = lo->duration > 0 ? lo->duration : r->sw->duration;
    r->early_demux = lo->early_demux;
    r->reps = lo->reps ? lo->reps : r->sw->reps;
    r->sweep = lo->nflows || lo->families || lo->duration > 0 || lo->reps ? "custom" : r->sw->name;
    r->chrono_fd = -1;
    ssize_t n = readlink("/proc/self/exe", r->self, sizeof r->self - 1);
    if (n <= 0) {
        fprintf(stderr, "hotpath demo: layout: cannot find this executable: %s\n", strerror(errno));
        *rc = -ENOENT;
        layout_free(r);
        return NULL;
    }
    r->self[n] = 0;
    if (strcmp(hp_layout_name(), "grouped") != 0) {
        fprintf(stderr,
                "hotpath demo: layout: this binary is a %s build; the experiment runs the grouped "
                "layout from the running binary: run build/hotpath demo\n",
                hp_layout_name());
        *rc = -EINVAL;
        layout_free(r);
        return NULL;
    }
    layout_find_chrono(r, lo->chrono_bin);
    /* Client and server each on a core of their own: d->cpu and the CPU
     * before it (CPUs 0 and 1 on a two-core machine, by default). */
    int ncpus = tool_ncpus();
    if (d->cpu >= 0 && ncpus >= 2)
        snprintf(r->cpus, sizeof r->cpus, "%d,%d", (d->cpu + ncpus - 1) % ncpus, d->cpu);
    else if (d->cpu >= 0)
        snprintf(r->cpus, sizeof r->cpus, "%d", d->cpu);
    for (int fi = 0; fi < r->nflows; fi++)
        for (int v = 0; v < 2; v++)
            r->ncells += (r->families & (1 << v)) != 0;
    r->cells = calloc((size_t)r->ncells, sizeof *r->cells);
    if (!r->cells) {
        r->ncells = 0;
        layout_free(r);
        *rc = -ENOMEM;
        return NULL;
    }
    int ci = 0;
    for (int v = 0; v < 2; v++)
        for (int fi = 0; fi < r->nflows; fi++)
            if (r->families & (1 << v))
                r->cells[ci++] = (struct layout_cell){.flows = r->flows[fi], .ipv6 = v == 1};
    return r;
}

static void layout_announce(const struct layout_report *r)
{
    printf("  %s sweep: flows", r->sweep);
    for (int fi = 0; fi < r->nflows; fi++)
        printf(" %s", flows_label(r->flows[fi]));
    printf(", %s, %g s per run, %d rep%s, threads on CPUs %s\n",
           r->families == 3   ? "IPv4 and IPv6"
           : r->families == 2 ? "IPv6"
                              : "IPv4",
           r->duration, r->reps, r->reps == 1 ? "" : "s", r->cpus[0] ? r->cpus : "(not pinned)");
    if (r->early_demux)
        printf("  hotpath runs: --early-demux %s\n", r->early_demux);
    printf("  grouped and kernel: %s\n", r->self);
    if (r->chrono[0])
        printf("  chrono: %s%s\n", r->chrono,
               r->chrono_stale
                   ? " (older than a file of src/ or include/: it may be stale; `make chrono`)"
                   : "");
    else
        printf("  chrono column skipped: %s\n", r->chrono_why);
    fflush(stdout);
}

/* One run of cell i, configuration k, repetition rep, again while preempted. */
static void layout_run(struct layout_report *r, int i, int k, int rep, struct progress *pr,
                       int done, int total)
{
    struct layout_cell *c = &r->cells[i];
    struct layout_run *run = &c->run[k][rep];
    char what[80];
    snprintf(what, sizeof what, "rep %d/%d: %s flows %s %s", rep + 1, r->reps,
             flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k]);
    progress_update(pr, done, total, what);
    layout_run_one(r, c, k, rep, r->duration);
    while (run->ok && run->disturbed && run->retries < LAYOUT_RETRIES) {
        run->retried_us[run->retries] = run->cpu_us;
        run->retried_busy[run->retries++] = run->busy;
        snprintf(what, sizeof what, "rep %d/%d: %s flows %s %s (again: preempted)", rep + 1,
                 r->reps, flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k]);
        progress_update(pr, done, total, what);
        layout_run_one(r, c, k, rep, r->duration);
    }
    progress_update(pr, done + 1, total, what);
}

/* Round robin: every repetition runs every cell once, and the three
 * configurations of a cell back to back, in an order that rotates, so that
 * a burst of load on this shared machine hits all alike and the medians
 * shed it. */
static void layout_sweep(struct layout_report *r)
{
    struct progress pr;
    progress_init(&pr, "layout");
    int ncfg = r->chrono[0] ? 3 : 2, total = r->reps * r->ncells * ncfg, done = 0;
    double t0 = tool_now_s();
    for (int rep = 0; rep < r->reps; rep++)
        for (int i = 0; i < r->ncells; i++)
            for (int j = 0; j < NCFG; j++) {
                int k = (j + rep + i) % NCFG;
                if (k != CFG_CHRONO || r->chrono[0])
                    layout_run(r, i, k, rep, &pr, done++, total);
            }
    r->seconds = tool_now_s() - t0;
    progress_done(&pr);
    layout_summarise(r);
}

/* The simulated step: by default in the demo and full sweeps only (about a
 * minute per build at 30k flows). */
static void layout_sim_step(const struct demo_ctx *d, const struct layout_report *r,
                            struct layout_sim *sim)
{
    const struct layout_opts *lo = &d->layout;
    double simw = lo->sim_duration > 0                                      ? lo->sim_duration
                  : lo->sim_duration < 0 || strcmp(r->sweep, "custom") == 0 ? 0
                                                                            : r->sw->sim_duration;
    memset(sim, 0, sizeof *sim);
    if (simw > 0) {
        struct progress pr;
        progress_init(&pr, "layout-sim");
        layout_simulate(r, simw, &pr, sim);
        progress_done(&pr);
        return;
    }
    snprintf(sim->why, sizeof sim->why, "%s",
             lo->sim_duration < 0 ? "--sim-duration off"
             : d->quick           ? "not in --quick (--sim-duration S runs it)"
                                  : "not by default in a custom sweep (--sim-duration S runs it)");
}

static void layout_stdout(const struct layout_report *r, const struct layout_sim *sim)
{
    printf("\n== 4. tcp_rr over many flows: CPU per transaction, layout grouped vs chrono, vs the "
           "kernel ==\n");
    layout_print(r, stdout, false);
    printf("  ratios: median over the repetitions of grouped / X within one repetition (runs back "
           "to back)\n");
    layout_print_notes(r, stdout, false);
    if (!r->chrono[0])
        printf("  chrono column skipped: %s\n", r->chrono_why);
    printf("goals:\n");
    layout_print_goals(r, stdout, false);
    if (sim->n) {
        printf("\n  simulated cache misses per transaction (callgrind, host-independent): %s flows "
               "%s, "
               "rr's window %g s of valgrind time;\n  L1d 32 KiB 8-way, last level 32 MiB 16-way "
               "(a Zen 3 L3); not a goal, the cause the layout acts on\n",
               flows_label(sim->flows), sim->ipv6 ? "IPv6" : "IPv4", sim->window);
        layout_sim_print(sim, stdout, false);
    }
    if (sim->why[0])
        printf("  simulated cache misses %s: %s\n", sim->n ? "stopped" : "skipped", sim->why);
}

static void layout_markdown_sim(const struct layout_sim *sim, FILE *md)
{
    fprintf(md, "### Simulated cache misses per transaction\n\n");
    if (sim->n) {
        fprintf(
            md,
            "What a field order changes is the cache misses, and valgrind's cache simulator counts "
            "them the same on any host, busy or not (`scripts/rr_cachesim.py`: `hotpath rr` under "
            "callgrind, which rr tells when its measured window opens and closes). %s flows, %s, "
            "rr's window %g s of valgrind time, `--rto-min 60000` (under valgrind a round trip "
            "takes "
            "about a hundred times longer; the floor keeps the retransmission timer as rare as in "
            "a "
            "native run). L1d 32 KiB 8-way, last level 32 MiB 16-way (a Zen 3 L3); no hardware "
            "prefetcher. Per transaction:\n\n",
            flows_label(sim->flows), sim->ipv6 ? "IPv6" : "IPv4", sim->window);
        layout_sim_print(sim, md, true);
        fprintf(
            md,
            "\nNot a goal: the goal is CPU time, of which misses are one part; docs/experiments.md "
            "(\"Simulated cache misses per transaction\") works out the CPU ratio these counts "
            "allow."
            "\n\n![layout: simulated misses per transaction](layout_sim.png)\n\n");
    }
    if (sim->why[0])
        fprintf(md, "%s: %s.\n\n", sim->n ? "Stopped" : "Not run", sim->why);
}

static void layout_markdown(const struct layout_report *r, const struct layout_sim *sim, FILE *md)
{
    fprintf(
        md,
        "## 4. Hot structures by cache line: tcp_rr over many flows\n\n"
        "The seed's experiment (SEEDS.md part 3): neper-style `tcp_rr`, one 1-byte request "
        "and 1-byte response outstanding per flow, CPU seconds per transaction (client and "
        "server thread CPU time over the window, divided by the transactions). Each cell is "
        "`hotpath rr --json --flows N --duration %g` run as a child process: hotpath's TCP "
        "over the mem link with the hot structures (`hp_tcp_sock`, `hp_stack`, `hp_buf`...) "
        "grouped by cache line (this binary) and in their logical field order (chrono build), "
        "and the kernel's TCP over loopback (`--link kernel`). Client and server threads pinned "
        "to CPUs %s. Sweep: %s; median of "
        "%d repetition%s, configurations interleaved round robin; %.0f s in all. A mem run whose "
        "busy-polling threads were on their CPUs for less than %.0f%% of the window was preempted "
        "by another process and is run again (at most %d times); the medians use the undisturbed "
        "runs when there are any. The ratios are not the ratios of the medians: each is the "
        "median, "
        "over the repetitions, of the ratio of the two runs of one repetition, which ran back to "
        "back; this host's speed drifts by tens of percent over minutes, alike for all three "
        "configurations, and only a ratio of runs done together cancels that.\n\n",
        r->duration, r->cpus[0] ? r->cpus : "(none)", r->sweep, r->reps, r->reps == 1 ? "" : "s",
        r->seconds, LAYOUT_MIN_BUSY * 100, LAYOUT_RETRIES);
    if (r->early_demux)
        fprintf(md,
                "The hotpath runs had `--early-demux %s` (hp_tcp_config.early_demux_conns).\n\n",
                r->early_demux);
    if (r->chrono[0])
        fprintf(md, "Binaries: grouped and kernel `%s`, chrono `%s`%s.\n\n", r->self, r->chrono,
                r->chrono_stale ? " (older than a file of src/ or include/: it may be stale)" : "");
    else
        fprintf(md, "**chrono column skipped**: %s.\n\n", r->chrono_why);
    layout_print(r, md, true);
    fprintf(md,
            "\n\"goal met?\": grouped/kernel <= %.2fx in every row, and grouped/chrono <= %.2fx "
            "from %s to "
            "%s flows.\n\n",
            GOAL_KERNEL, GOAL_LAYOUT, flows_label(LAYOUT_GOAL_MIN), flows_label(LAYOUT_GOAL_MAX));
    layout_print_notes(r, md, true);
    fprintf(md, "\n![layout: CPU per transaction against flows](layout.png)\n\nGoals:\n\n");
    layout_print_goals(r, md, true);
    fputc('\n', md);
    layout_markdown_sim(sim, md);
}

/* DIR/NAME from j (released), indented. */
static void write_report_json(struct demo_ctx *d, const char *name, json_t *j)
{
    FILE *f = report_file(d, name);
    if (f) {
        tool_json_write(j, f, true);
        fclose(f);
    }
    json_decref(j);
}

int exp_layout(struct demo_ctx *d)
{
    int rc = 0;
    struct layout_report *r = layout_new(d, &rc);
    if (!r)
        return rc;
    layout_announce(r);
    layout_sweep(r);
    struct layout_sim sim;
    layout_sim_step(d, r, &sim);
    layout_stdout(r, &sim);
    layout_markdown(r, &sim, d->md);
    for (int g = 0; g < 2; g++)
        d->missed += r->goal[g] == 0;
    write_report_json(d, "layout.json", layout_json(r));
    if (sim.n)
        write_report_json(d, "layout_sim.json", layout_sim_json(r, &sim));
    bool any = false;
    for (int i = 0; i < r->ncells; i++)
        any |= r->cells[i].nok[CFG_GROUPED] > 0;
    layout_free(r);
    return any ? 0 : -EIO;
}
