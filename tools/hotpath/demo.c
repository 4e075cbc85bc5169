/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath demo`: runs each experiment with a progress display, prints its table, writes report/ with plots. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/cksum.h>
#include <hotpath/common.h>
#include <hotpath/cpu.h>

#include "bench_apps.h"
#include "bench_cksum.h"
#include "bench_pool.h"
#include "bench_txcomp.h"
#include "bench.h"
#include "cmd.h"
#include "tool.h"

#define LAYOUT_MAX_FLOWS 16
#define LAYOUT_MAX_REPS 15

/* Options of the layout experiment; 0 / NULL: the sweep's default. */
struct layout_opts {
    bool full;              /* --full: the whole sweep of the seed */
    const char *chrono_bin; /* --chrono-binary PATH, or "none" */
    unsigned flows[LAYOUT_MAX_FLOWS];
    int nflows;             /* --flows LIST */
    int families;           /* --family: bit 0 IPv4, bit 1 IPv6 */
    double duration;        /* --duration S */
    int reps;               /* --reps N */
    const char *early_demux;/* --early-demux N|off for the hotpath runs, NULL: rr's default */
    double sim_duration;    /* --sim-duration: > 0 seconds, < 0 off, 0 the sweep's default */
};

struct demo_ctx {
    const char *dir; /* report directory */
    FILE *md;        /* report.md, open for appending sections */
    bool quick;
    int cpu;
    int missed; /* goals missed, over all experiments */
    struct layout_opts layout;
};

/* Open DIR/NAME for writing. */
static FILE *report_file(struct demo_ctx *d, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "hotpath demo: cannot write %s: %s\n", path, strerror(errno));
    return f;
}

/* ---- experiment 1: the checksum (SEEDS.md part 1) ---------------------- */

static int exp_cksum(struct demo_ctx *d)
{
    struct cksum_report *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    struct progress p;
    progress_init(&p, "cksum");
    struct bench_opts o = {.quick = d->quick, .cpu = d->cpu, .progress = progress_update,
                           .progress_ctx = &p};
    int rc = cksum_report_run(r, &o);
    progress_done(&p);
    if (rc) {
        free(r);
        return rc;
    }
    cksum_report_goals(r);

    int hp = cksum_report_find(r, "hotpath"), dp = cksum_report_find(r, "dpdk");
    int dn = cksum_report_find(r, "dpdk-native"), un = cksum_report_find(r, "unroll64");
    FILE *outs[2] = {stdout, d->md};
    for (int w = 0; w < 2; w++) {
        FILE *f = outs[w];
        bool md = w == 1;
        if (md) {
            fprintf(f, "## 1. The Internet checksum\n\n"
                       "DPDK's `cksum_perf_autotest` method: %s per byte, median of %d "
                       "repetitions, start offsets 0 and +1. The seed's table: DPDK's loop "
                       "before, the unrolled patch's strategy, hotpath.\n\n```\n",
                    tool_ticks_unit(), r->reps);
            cksum_report_print_header(r, f);
            fprintf(f, "```\n\n| size | offset | dpdk (before) | dpdk -march=native | unroll64 "
                       "| hotpath | speed-up vs dpdk |\n|---:|---:|---:|---:|---:|---:|---:|\n");
        } else {
            printf("\n== 1. Internet checksum: cycles/byte (the seed's table) ==\n");
            printf("%6s %4s %14s %12s %10s %10s %10s\n", "size", "off", "dpdk (before)",
                   "dpdk-native", "unroll64", "hotpath", "speed-up");
        }
        for (int si = 0; si < 8; si++)
            for (int oi = 0; oi < 2; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                double vd = dp >= 0 ? c->cpb[dp] : 0, vn = dn >= 0 ? c->cpb[dn] : 0;
                if (md)
                    fprintf(f, "| %zu | %d | %.3f | %.3f | %.3f | %.4f | %.1fx |\n", c->size,
                            c->offset, vd, vn, c->cpb[un], c->cpb[hp], vd / c->cpb[hp]);
                else
                    printf("%6zu %4d %14.3f %12.3f %10.3f %10.4f %9.1fx\n", c->size, c->offset,
                           vd, vn, c->cpb[un], c->cpb[hp], vd / c->cpb[hp]);
            }
        fprintf(f, md ? "\nCode bytes (from the symbol table):" : "code bytes:");
        for (int k = 0; k < r->nimpls; k++)
            if (strcmp(r->impls[k].name, "hotpath") != 0)
                fprintf(f, " %s %ld%s", r->impls[k].name, r->impls[k].code_bytes,
                        k + 1 < r->nimpls ? "," : "");
        fprintf(f, "%s", md ? "\n\n![checksum: cycles/byte against size](cksum.png)\n\nGoals:\n\n"
                            : "\ngoals:\n");
        for (int i = 0; i < r->ngoals; i++)
            fprintf(f, md ? "- %s: %s\n" : "  [%s] %s\n", r->goals[i].met ? "met" : "MISSED",
                    r->goals[i].text);
        fputc('\n', f);
    }
    for (int i = 0; i < r->ngoals; i++)
        d->missed += !r->goals[i].met;
    FILE *j = report_file(d, "cksum.json");
    if (j) {
        cksum_report_print_json(r, j);
        fclose(j);
    }
    free(r);
    return 0;
}

/* ---- experiment 2: where alien frees go (SEEDS.md part 2) --------------- */

static int exp_pool(struct demo_ctx *d)
{
    struct pool_report *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    struct progress pr;
    progress_init(&pr, "pool");
    /* The benchmark pins its threads to d->cpu and the next CPU. */
    struct bench_opts o = {.quick = d->quick, .cpu = d->cpu, .progress = progress_update,
                           .progress_ctx = &pr};
    int rc = pool_report_run(r, &o);
    progress_done(&pr);
    if (rc) {
        free(r);
        return rc;
    }
    pool_report_goals(r);

    /* The seed's form: a row per policy (and peer), the rate per scenario. */
    FILE *outs[2] = {stdout, d->md};
    for (int w = 0; w < 2; w++) {
        FILE *f = outs[w];
        bool md = w == 1;
        if (md) {
            fprintf(f, "## 2. Where a buffer goes when another thread frees it\n\n"
                       "Millions of buffers per second (and CPU ns per buffer), per scenario; "
                       "median of %d repetitions, each thread pinned to its own core.\n\n```\n",
                    r->reps);
            pool_report_print_header(r, f);
            fprintf(f, "```\n\n| impl |");
            for (int s = 0; s < POOL_NSCEN; s++)
                fprintf(f, " %s |", pool_scenario_name(s));
            fprintf(f, "\n|---|");
            for (int s = 0; s < POOL_NSCEN; s++)
                fprintf(f, "---:|");
            fputc('\n', f);
        } else {
            printf("\n== 2. Alien frees: Mbuf/s (CPU ns per buffer), the seed's table ==\n%-17s", "impl");
            for (int s = 0; s < POOL_NSCEN; s++)
                printf(" %19s", pool_scenario_name(s));
            putchar('\n');
        }
        for (int i = 0; i < POOL_NIMPLS; i++) {
            if (!r->have[i])
                continue;
            fprintf(f, md ? "| %s |" : "%-17s", pool_impl_name(i));
            for (int s = 0; s < POOL_NSCEN; s++) {
                const struct pool_cell *c = &r->cells[s][i];
                if (!c->ran)
                    fprintf(f, md ? " - |" : " %19s", "-");
                else if (md)
                    fprintf(f, " %.1f (%.1f ns) |", c->mops, c->ns_per_obj);
                else
                    fprintf(f, " %8.1f (%5.1f ns)", c->mops, c->ns_per_obj);
            }
            fputc('\n', f);
        }
        fprintf(f, md ? "\n![pool: rate per scenario and policy](pool.png)\n\nGoals:\n\n" : "goals:\n");
        for (int i = 0; i < r->ngoals; i++)
            fprintf(f, md ? "- %s: %s\n" : "  [%s] %s\n", r->goals[i].met ? "met" : "MISSED",
                    r->goals[i].text);
        fputc('\n', f);
    }
    for (int i = 0; i < r->ngoals; i++)
        d->missed += !r->goals[i].met;
    FILE *j = report_file(d, "pool.json");
    if (j) {
        pool_report_print_json(r, j);
        fclose(j);
    }
    free(r);
    return 0;
}

/* ---- experiment 3: the seed's AF_XDP transmit experiment (SEEDS.md part 2) -- */

static int exp_txcomp(struct demo_ctx *d)
{
    struct txcomp_report *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    struct progress pr;
    progress_init(&pr, "txcomp");
    struct bench_opts o = {.quick = d->quick, .cpu = d->cpu, .progress = progress_update,
                           .progress_ctx = &pr};
    txcomp_run(&o, r);
    progress_done(&pr);
    printf("\n== 3. txonly with a completion thread: Mpps per alien policy (the seed's experiment) ==\n");
    txcomp_print_header(r, stdout);
    txcomp_print_table(r, stdout);
    printf("goals:\n");
    txcomp_goals(r, stdout, false);
    fprintf(d->md, "## 3. The seed's AF_XDP experiment: transmit completions freed on another thread\n\n"
                   "`hotpath gen txonly --completion-thread`: one thread allocates and transmits "
                   "64-byte frames, a second takes the completions and frees them, so every free "
                   "is an alien free. Rows: the links; columns: the pool's alien policy, in the "
                   "same run with rounds interleaved.\n\n```\n");
    txcomp_print_header(r, d->md);
    fputc('\n', d->md);
    txcomp_print_table(r, d->md);
    fprintf(d->md, "```\n\n![txcomp: Mpps per policy and link](txcomp.png)\n\nGoals:\n\n");
    d->missed += txcomp_goals(r, d->md, true);
    fputc('\n', d->md);
    FILE *j = report_file(d, "txcomp.json");
    if (j) {
        txcomp_print_json(r, j);
        fclose(j);
    }
    int rc = r->rows[r->nrows - 1].ok ? 0 : -EIO;
    free(r);
    return rc;
}

/* ---- experiment 4: hot structures by cache line (SEEDS.md part 3) ---------
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
#define GOAL_LAYOUT 0.70     /* grouped / chrono, at LAYOUT_GOAL_MIN.. flows */
#define GOAL_KERNEL 0.10     /* grouped / kernel, at every flow count */
#define LAYOUT_GOAL_MIN 10000u
#define LAYOUT_GOAL_MAX 30000u

/* A mem run whose busy-polling threads were on their CPUs for less than
 * this share of the window was preempted by some other process of this
 * shared machine: while one side waits for a CPU the other spins for
 * nothing, which inflates CPU per transaction. Such a run is done again (up
 * to LAYOUT_RETRIES times); the medians use the undisturbed runs. */
#define LAYOUT_MIN_BUSY 0.95
#define LAYOUT_RETRIES 2

struct layout_run {
    bool ok;
    bool disturbed;  /* mem: busy < LAYOUT_MIN_BUSY */
    double cpu_us, tps, p50_us, p99_us, setup_s;
    double busy;     /* mem: thread CPU time / (threads x window); kernel: -1 */
    unsigned flows_reached;
    char *json;      /* the child's JSON object (NULL when it failed) */
    char err[200];   /* why it failed */
    int retries;     /* disturbed attempts done again; their results: */
    double retried_us[LAYOUT_RETRIES], retried_busy[LAYOUT_RETRIES];
};

struct layout_cell {
    unsigned flows;
    bool ipv6;
    struct layout_run run[NCFG][LAYOUT_MAX_REPS];
    double us[NCFG], tps[NCFG]; /* medians over the runs that worked; 0: none */
    int nok[NCFG];
    int nused[NCFG];             /* runs in the median: the undisturbed ones, if any */
    /* grouped / chrono and grouped / kernel: the median over the
     * repetitions of the ratio of the two runs of one repetition, which ran
     * back to back (0: not measured). The machine's speed drifts by tens of
     * percent over minutes on this shared host, alike for every
     * configuration; a ratio of runs done together cancels that, a ratio of
     * medians taken minutes apart does not. */
    double q[NCFG];
    int nq[NCFG];
    unsigned reached_min[NCFG];  /* fewest flows any run set up */
};

struct layout_report {
    const struct layout_sweep *sw; /* the sweep the defaults come from */
    const char *sweep;             /* its name, or "custom" when an option changed it */
    unsigned flows[LAYOUT_MAX_FLOWS];
    int nflows, families, reps;
    double duration;
    char cpus[32];             /* --cpu of the children, "" when not pinned */
    const char *early_demux;   /* --early-demux of the hotpath children, NULL: their default */
    char self[4096], chrono[4096]; /* the binaries' paths, for the report */
    /* What the children exec: this very binary, and the chrono binary through
     * a descriptor opened once, so that a rebuild of build/ or build-chrono/
     * during a long sweep (the tree is shared) cannot mix two builds. */
    char exec_chrono[32];
    int chrono_fd;
    char chrono_why[300];      /* why the chrono column is skipped, "" when it ran */
    bool chrono_stale;
    struct layout_cell *cells;
    int ncells;
    double seconds;            /* wall time of the sweep */
    /* goals: 1 met, 0 missed, -1 not applicable; worst ratio and where */
    int goal[2];
    bool goal_measured[2];
    double worst[2];
    int worst_cell[2];
};

/* Run argv[0] with argv; its standard output (up to 64 KiB) into *out,
 * standard error into a temporary file whose first line explains a failure.
 * The child is killed after timeout_s seconds. 0 when it exited 0, else -1
 * with err set. */
static int run_child(char *const argv[], double timeout_s, char **out, char *err, size_t errlen)
{
    enum { CAP = 64 * 1024 };
    *out = NULL;
    err[0] = 0;
    int fds[2];
    FILE *errf = tmpfile();
    char *buf = malloc(CAP + 1);
    if (!errf || !buf || pipe(fds) < 0) {
        snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(errno));
        if (errf)
            fclose(errf);
        free(buf);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fileno(errf), STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(fds[0]);
        fclose(errf);
        free(buf);
        return -1;
    }
    size_t len = 0;
    double deadline = tool_now_s() + timeout_s;
    bool timed_out = false;
    for (;;) {
        double left = deadline - tool_now_s();
        if (left <= 0) {
            timed_out = true;
            kill(pid, SIGKILL); /* rr's own children die with it (PR_SET_PDEATHSIG) */
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int n = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            continue;
        ssize_t got = read(fds[0], buf + len, CAP - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* end of file (or an error: the exit status tells) */
        len += (size_t)got;
        if (len == CAP) { /* far more than one JSON object: not rr */
            timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
    }
    close(fds[0]);
    buf[len] = 0;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!timed_out && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        fclose(errf);
        *out = buf;
        return 0;
    }
    char line[200] = "";
    rewind(errf);
    if (!fgets(line, sizeof line, errf))
        line[0] = 0;
    line[strcspn(line, "\n")] = 0;
    fclose(errf);
    free(buf);
    if (timed_out)
        snprintf(err, errlen, len == CAP ? "more than %.0f KiB of output: killed" : "no answer in %.0f s: killed",
                 len == CAP ? CAP / 1024.0 : timeout_s);
    else if (WIFEXITED(st))
        snprintf(err, errlen, "exit %d%s%s", WEXITSTATUS(st), line[0] ? ": " : "", line);
    else
        snprintf(err, errlen, "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return -1;
}

/* The number after "KEY": in a flat JSON object. */
static bool json_num(const char *s, const char *key, double *v)
{
    char pat[64];
    int n = snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(s, pat);
    if (!p)
        return false;
    char *end;
    *v = strtod(p + n, &end);
    return end != p + n;
}

/* Whether the string after "KEY": is VALUE. */
static bool json_is(const char *s, const char *key, const char *value)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": \"%s\"", key, value);
    return strstr(s, pat) != NULL;
}

static void layout_run_one(const struct layout_report *r, struct layout_cell *c, int cfg, int rep,
                           double duration)
{
    struct layout_run *run = &c->run[cfg][rep];
    free(run->json);
    run->json = NULL;
    run->ok = run->disturbed = false;
    run->err[0] = 0;
    char flows[16], dur[32];
    snprintf(flows, sizeof flows, "%u", c->flows);
    snprintf(dur, sizeof dur, "%g", duration);
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)(cfg == CFG_CHRONO ? r->exec_chrono : "/proc/self/exe");
    argv[n++] = "rr";
    argv[n++] = "--json";
    argv[n++] = "--link";
    argv[n++] = cfg == CFG_KERNEL ? "kernel" : "mem";
    argv[n++] = "--flows";
    argv[n++] = flows;
    argv[n++] = "--duration";
    argv[n++] = dur;
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
    char *out;
    /* Setting up 30,000 kernel flows takes about a second; a minute more is
     * a generous bound for a loaded machine. */
    if (run_child(argv, 2 * duration + 60 + c->flows / 1000.0, &out, run->err, sizeof run->err) < 0)
        return;
    char *obj = strstr(out, "{\"proto\"");
    if (obj)
        obj[strcspn(obj, "\n")] = 0;
    double reached = 0;
    if (!obj || !json_num(obj, "cpu_s_per_txn", &run->cpu_us) || !json_num(obj, "tps", &run->tps) ||
        !json_num(obj, "flows_reached", &reached)) {
        snprintf(run->err, sizeof run->err, "no JSON result from %s rr", argv[0]);
        free(out);
        return;
    }
    if (cfg != CFG_KERNEL && !json_is(obj, "layout", cfg_name[cfg])) {
        snprintf(run->err, sizeof run->err, "%s is not a %s build", argv[0], cfg_name[cfg]);
        free(out);
        return;
    }
    json_num(obj, "p50_us", &run->p50_us);
    json_num(obj, "p99_us", &run->p99_us);
    json_num(obj, "setup_s", &run->setup_s);
    run->cpu_us *= 1e6;
    double cc = 0, cs = 0, secs = 0, threads = 1;
    run->busy = -1;
    if (cfg != CFG_KERNEL && json_num(obj, "cpu_client_s", &cc) && json_num(obj, "cpu_server_s", &cs) &&
        json_num(obj, "seconds", &secs) && json_num(obj, "threads", &threads) && secs > 0 && threads > 0) {
        run->busy = (cc + cs) / (2 * threads * secs);
        run->disturbed = run->busy < LAYOUT_MIN_BUSY;
    }
    run->flows_reached = (unsigned)reached;
    run->ok = run->cpu_us > 0;
    if (!run->ok)
        snprintf(run->err, sizeof run->err, "no transaction completed");
    memmove(out, obj, strlen(obj) + 1);
    run->json = out;
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
            snprintf(cand[nc++], sizeof cand[0], "%.*s-chrono/hotpath", (int)(slash - r->self), r->self);
        snprintf(cand[nc++], sizeof cand[0], "%s", HP_SOURCE_DIR "/build-chrono/hotpath");
    }
    const char *found = NULL;
    for (int i = 0; i < nc && !found; i++)
        if (access(cand[i], X_OK) == 0)
            found = cand[i];
    if (!found) {
        if (nc == 2 && strcmp(cand[0], cand[1]) != 0)
            snprintf(r->chrono_why, sizeof r->chrono_why,
                     "no chrono build at %.120s or %.120s: build one with `make chrono`", cand[0], cand[1]);
        else
            snprintf(r->chrono_why, sizeof r->chrono_why, "no chrono build at %.200s: build one with `make chrono`",
                     cand[nc - 1]);
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
        chrono = strstr(out, "layout: chrono") != NULL;
        free(out);
        if (!chrono)
            snprintf(r->chrono_why, sizeof r->chrono_why,
                     "%.150s is not a chrono build (`hotpath version` does not say layout: chrono): "
                     "build one with `make chrono`", found);
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
    c->q[cfg] = n ? tool_median(v, n) : 0;
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
            c->us[k] = n ? tool_median(us, n) : 0;
            c->tps[k] = n ? tool_median(tps, n) : 0;
        }
        layout_pair(r, c, CFG_CHRONO);
        layout_pair(r, c, CFG_KERNEL);
        /* Goal 1: the layout, where the state no longer fits in cache. */
        if (c->flows >= LAYOUT_GOAL_MIN && c->flows <= LAYOUT_GOAL_MAX) {
            double q = c->q[CFG_CHRONO];
            if (!q) {
                r->goal_measured[0] = false;
                r->goal[0] = 0;
            } else {
                if (r->goal[0] < 0)
                    r->goal[0] = 1;
                if (q > GOAL_LAYOUT)
                    r->goal[0] = 0;
                if (q > r->worst[0]) {
                    r->worst[0] = q;
                    r->worst_cell[0] = i;
                }
            }
        }
        /* Goal 2: against the kernel, at every flow count. */
        double q = c->q[CFG_KERNEL];
        if (!q) {
            r->goal_measured[1] = false;
            r->goal[1] = 0;
        } else {
            if (r->goal[1] < 0)
                r->goal[1] = 1;
            if (q > GOAL_KERNEL)
                r->goal[1] = 0;
            if (q > r->worst[1]) {
                r->worst[1] = q;
                r->worst_cell[1] = i;
            }
        }
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
        fprintf(f, "| flows | family | chrono µs/txn | grouped µs/txn | grouped/chrono | kernel µs/txn "
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
        fprintf(f, md ? "| %s | %s |" : "%6s %-6s", flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4");
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
    fprintf(f, md ? "\nThe seed's form, grouped against chrono (CPU per transaction):\n\n| flows |"
                  : "\nreduction of CPU per transaction, grouped vs chrono (the seed's form):\n%6s", "flows");
    for (int v = 0; v < 2; v++)
        if (fam[v])
            fprintf(f, md ? " %s |" : " %16s", v ? "IPv6 reduction" : "IPv4 reduction");
    fprintf(f, md ? "\n|---:|%s%s\n" : "\n", md && fam[0] ? "---:|" : "", md && fam[1] ? "---:|" : "");
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
                fprintf(f, md ? "- %s %s %s: %d of %d runs failed: %s\n" : "  note: %s %s %s: %d of %d runs failed: %s\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k], r->reps - c->nok[k],
                        r->reps, why);
            if (c->nok[k] && c->nused[k] < c->nok[k] && shown++ < 12)
                fprintf(f, md ? "- %s %s %s: median of the %d undisturbed runs of %d (the others were preempted)\n"
                              : "  note: %s %s %s: median of the %d undisturbed runs of %d (the others were preempted)\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k], c->nused[k], c->nok[k]);
            bool all_disturbed = c->nok[k] > 0 && k != CFG_KERNEL;
            for (int rep = 0; rep < r->reps; rep++)
                all_disturbed &= !c->run[k][rep].ok || c->run[k][rep].disturbed;
            if (all_disturbed && shown++ < 12)
                fprintf(f, md ? "- %s %s %s: every run was preempted by other processes (threads on CPU less than %.0f%% of the window): its number is high\n"
                              : "  note: %s %s %s: every run was preempted by other processes (threads on CPU less than %.0f%% of the window): its number is high\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k], LAYOUT_MIN_BUSY * 100);
            if (c->nok[k] && c->reached_min[k] < c->flows && shown++ < 12)
                fprintf(f, md ? "- %s %s %s: only %u flows came up in some run\n"
                              : "  note: %s %s %s: only %u flows came up in some run\n",
                        flows_label(c->flows), c->ipv6 ? "IPv6" : "IPv4", cfg_name[k], c->reached_min[k]);
        }
    }
}

/* S as a JSON string, or null when it is empty. */
static void json_str_or_null(FILE *f, const char *s)
{
    if (s[0])
        tool_json_str(f, s);
    else
        fprintf(f, "null");
}

static void layout_print_json(const struct layout_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "{\n  \"experiment\": \"layout\",\n  \"workload\": \"tcp_rr\",\n  \"sweep\": ");
    tool_json_str(f, r->sweep);
    fprintf(f, ",\n  \"cpu\": ");
    tool_json_str(f, cpu);
    fprintf(f, ",\n  \"compiler\": ");
    tool_json_str(f, tool_compiler());
    fprintf(f, ",\n  \"flags\": ");
    tool_json_str(f, tool_build_flags());
    fprintf(f, ",\n  \"duration_s\": %g,\n  \"reps\": %d,\n  \"seconds\": %.1f,\n  \"pinned_cpus\": ",
            r->duration, r->reps, r->seconds);
    tool_json_str(f, r->cpus);
    fprintf(f, ",\n  \"binaries\": {\"grouped\": ");
    tool_json_str(f, r->self);
    fprintf(f, ", \"chrono\": ");
    json_str_or_null(f, r->chrono);
    fprintf(f, ", \"kernel\": ");
    tool_json_str(f, r->self);
    fprintf(f, "},\n  \"chrono_skipped\": ");
    json_str_or_null(f, r->chrono_why);
    fprintf(f, ",\n  \"chrono_maybe_stale\": %s,\n  \"goal_layout_max_ratio\": %.2f, "
               "\"goal_kernel_max_ratio\": %.2f,\n  \"min_busy\": %.2f, \"retries\": %d,\n  \"ratios\": "
               "\"median over the repetitions of grouped/X of the same repetition (pairs: how many)\",\n"
               "  \"cells\": [",
            r->chrono_stale ? "true" : "false", GOAL_LAYOUT, GOAL_KERNEL, LAYOUT_MIN_BUSY, LAYOUT_RETRIES);
    for (int i = 0; i < r->ncells; i++) {
        const struct layout_cell *c = &r->cells[i];
        fprintf(f, "%s\n    {\"flows\": %u, \"family\": \"%s\"", i ? "," : "", c->flows, c->ipv6 ? "IPv6" : "IPv4");
        for (int k = 0; k < NCFG; k++) {
            if (c->us[k] > 0)
                fprintf(f, ", \"%s_us\": %.4f, \"%s_tps\": %.0f", cfg_name[k], c->us[k], cfg_name[k], c->tps[k]);
            else
                fprintf(f, ", \"%s_us\": null, \"%s_tps\": null", cfg_name[k], cfg_name[k]);
        }
        double qc = c->q[CFG_CHRONO];
        double qk = c->q[CFG_KERNEL];
        if (qc > 0)
            fprintf(f, ", \"grouped_over_chrono\": %.4f, \"reduction_pct\": %.2f", qc, (qc - 1) * 100);
        else
            fprintf(f, ", \"grouped_over_chrono\": null, \"reduction_pct\": null");
        if (qk > 0)
            fprintf(f, ", \"grouped_over_kernel\": %.4f", qk);
        else
            fprintf(f, ", \"grouped_over_kernel\": null");
        fprintf(f, ", \"pairs\": {\"chrono\": %d, \"kernel\": %d}", c->nq[CFG_CHRONO], c->nq[CFG_KERNEL]);
        fprintf(f, ", \"goal_met\": \"%s\", \"runs_in_median\": {", layout_row_goal(c));
        for (int k = 0; k < NCFG; k++)
            fprintf(f, "%s\"%s\": %d", k ? ", " : "", cfg_name[k], c->nused[k]);
        fprintf(f, "}, \"reps_us\": {"); /* the runs in the median; "runs" has all */
        for (int k = 0; k < NCFG; k++) {
            fprintf(f, "%s\"%s\": [", k ? ", " : "", cfg_name[k]);
            int n = 0;
            for (int rep = 0; rep < r->reps; rep++)
                if (c->run[k][rep].ok && (c->nused[k] == c->nok[k] || !c->run[k][rep].disturbed))
                    fprintf(f, "%s%.4f", n++ ? ", " : "", c->run[k][rep].cpu_us);
            fputc(']', f);
        }
        fprintf(f, "}}");
    }
    fprintf(f, "\n  ],\n  \"goals\": [");
    static const char *const gtext[2] = {"grouped <= 0.70x chrono CPU per transaction at 10k-30k flows",
                                         "hotpath (mem link) <= 0.1x the kernel's CPU per transaction at every flow count"};
    for (int g = 0; g < 2; g++) {
        fprintf(f, "%s\n    {\"text\": \"%s\", \"met\": %s, \"applies\": %s, \"measured\": %s, \"worst_ratio\": ",
                g ? "," : "", gtext[g], r->goal[g] == 1 ? "true" : "false", r->goal[g] >= 0 ? "true" : "false",
                r->goal_measured[g] ? "true" : "false");
        if (r->worst[g] > 0)
            fprintf(f, "%.4f}", r->worst[g]);
        else
            fprintf(f, "null}");
    }
    /* Every child's own JSON, for whoever wants more than the medians. */
    fprintf(f, "\n  ],\n  \"runs\": [");
    int n = 0;
    for (int i = 0; i < r->ncells; i++)
        for (int k = 0; k < NCFG; k++)
            for (int rep = 0; rep < r->reps; rep++) {
                const struct layout_run *run = &r->cells[i].run[k][rep];
                if (k == CFG_CHRONO && !r->chrono[0])
                    continue;
                fprintf(f, "%s\n    {\"flows\": %u, \"family\": \"%s\", \"config\": \"%s\", \"rep\": %d, ",
                        n++ ? "," : "", r->cells[i].flows, r->cells[i].ipv6 ? "IPv6" : "IPv4", cfg_name[k], rep);
                if (run->busy >= 0)
                    fprintf(f, "\"busy\": %.3f, \"disturbed\": %s, ", run->busy, run->disturbed ? "true" : "false");
                fprintf(f, "\"preempted_attempts\": [");
                for (int a = 0; a < run->retries; a++)
                    fprintf(f, "%s{\"cpu_us\": %.4f, \"busy\": %.3f}", a ? ", " : "", run->retried_us[a],
                            run->retried_busy[a]);
                fprintf(f, "], ");
                if (run->json) {
                    fprintf(f, "\"result\": %s}", run->json);
                } else {
                    fprintf(f, "\"error\": ");
                    tool_json_str(f, run->err[0] ? run->err : "not run");
                    fputc('}', f);
                }
            }
    fprintf(f, "\n  ]\n}\n");
}

static void layout_free(struct layout_report *r)
{
    for (int i = 0; i < r->ncells; i++)
        for (int k = 0; k < NCFG; k++)
            for (int rep = 0; rep < LAYOUT_MAX_REPS; rep++)
                free(r->cells[i].run[k][rep].json);
    if (r->chrono_fd >= 0)
        close(r->chrono_fd);
    free(r->cells);
    free(r);
}

/* A script of scripts/ by NAME: in the source tree, else where `make install`
 * put it. NULL when neither has it. A static buffer: the next call reuses it. */
static const char *find_data_script(const char *name)
{
    static char path[4096];
    const char *dirs[] = {HP_SOURCE_DIR "/scripts", HP_DATA_DIR};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dirs[i], name);
        if (access(path, R_OK) == 0)
            return path;
    }
    return NULL;
}

/* ---- the layout experiment's simulated step -------------------------------
 * CPU time on a shared host moves by tens of percent between runs; what a
 * field order changes is the cache misses, and those a cache simulator counts
 * the same on any host. scripts/rr_cachesim.py runs one `hotpath rr` under
 * valgrind's callgrind (rr zeroes and dumps its counters at the measured
 * window's edges) and prints the misses per transaction; this step runs it
 * for each build at the sweep's largest flow count. */

#define SIM_L1 32768          /* a Zen 3 core's L1d, 8-way (the script's default) */
#define SIM_LL (32u << 20)    /* last level modelled: a Zen 3 CCX's L3, 32 MiB */
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
    char flows[16], dur[32], l1[16], ll[16], lla[8];
    snprintf(flows, sizeof flows, "%u", sim->flows);
    snprintf(dur, sizeof dur, "%g", window);
    snprintf(l1, sizeof l1, "%d", SIM_L1);
    snprintf(ll, sizeof ll, "%u", SIM_LL);
    snprintf(lla, sizeof lla, "%d", SIM_LL_ASSOC);
    int total = bins[1] ? 2 : 1;
    for (int b = 0; b < total; b++) {
        const char *name = cfg_name[b == 0 ? CFG_GROUPED : CFG_CHRONO];
        char what[80];
        snprintf(what, sizeof what, "simulated misses: %s flows %s %s (valgrind)", flows_label(sim->flows),
                 sim->ipv6 ? "IPv6" : "IPv4", name);
        progress_update(pr, b, total, what);
        char *argv[24];
        int n = 0;
        argv[n++] = "/usr/bin/env";
        argv[n++] = "python3";
        argv[n++] = (char *)script;
        argv[n++] = (char *)bins[b];
        argv[n++] = "--flows";
        argv[n++] = flows;
        argv[n++] = "--duration";
        argv[n++] = dur;
        argv[n++] = "--l1";
        argv[n++] = l1;
        argv[n++] = "--ll";
        argv[n++] = ll;
        argv[n++] = "--ll-assoc";
        argv[n++] = lla;
        argv[n++] = "--top";
        argv[n++] = "0";
        argv[n++] = "--json";
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
        /* Under valgrind rr sets up about 3,000 flows a second; the window
         * is valgrind's (slow) time. Twice that and two minutes more. */
        double timeout = 2 * (window + sim->flows / 3000.0) + 120;
        char *out, err[200];
        if (run_child(argv, timeout, &out, err, sizeof err) < 0) {
            snprintf(sim->why, sizeof sim->why, "rr_cachesim.py %s: %s", name, err);
            return;
        }
        struct layout_sim_row *row = &sim->row[sim->n];
        row->layout = name;
        char *obj = strstr(out, "{\"binary\"");
        if (obj)
            obj[strcspn(obj, "\n")] = 0;
        if (!obj || !json_is(obj, "layout", name) || !json_num(obj, "transactions", &row->txns) ||
            !json_num(obj, "ir_per_txn", &row->ir) || !json_num(obj, "d1_miss_per_txn", &row->d1) ||
            !json_num(obj, "ll_miss_per_txn", &row->ll) || !json_num(obj, "ll_rd_per_txn", &row->ll_rd) ||
            !json_num(obj, "ll_wr_per_txn", &row->ll_wr) || row->txns <= 0) {
            snprintf(sim->why, sizeof sim->why, "rr_cachesim.py %s: no %s result in its output", name, name);
            free(out);
            return;
        }
        free(out);
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
        fprintf(f, "  %-16s %12s %12s %10s %17s\n", "layout", "transactions", "instructions", "L1d misses",
                "last-level misses");
    for (int i = 0; i < sim->n; i++) {
        const struct layout_sim_row *w = &sim->row[i];
        fprintf(f, md ? "| %s | %.0f | %.0f | %.1f | %.2f |\n" : "  %-16s %12.0f %12.0f %10.1f %17.2f\n",
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
            fprintf(f, "| grouped/chrono | | %.2fx | %.2fx | %s |\n", g->ir / c->ir, g->d1 / c->d1, ll);
        else
            fprintf(f, "  %-16s %12s %11.2fx %9.2fx %17s\n", "grouped/chrono", "", g->ir / c->ir,
                    g->d1 / c->d1, ll);
    }
}

static void layout_sim_json(const struct layout_report *r, const struct layout_sim *sim, FILE *f)
{
    fprintf(f, "{\n  \"experiment\": \"layout_sim\",\n  \"workload\": \"tcp_rr\",\n  \"tool\": "
               "\"scripts/rr_cachesim.py (valgrind --tool=callgrind --cache-sim=yes)\",\n  \"flows\": %u, "
               "\"family\": \"%s\", \"window_s\": %g,\n  \"l1d\": {\"bytes\": %d, \"assoc\": 8}, "
               "\"last_level\": {\"bytes\": %u, \"assoc\": %d},\n  \"binaries\": {\"grouped\": ",
            sim->flows, sim->ipv6 ? "IPv6" : "IPv4", sim->window, SIM_L1, SIM_LL, SIM_LL_ASSOC);
    tool_json_str(f, r->self);
    fprintf(f, ", \"chrono\": ");
    json_str_or_null(f, r->chrono);
    fprintf(f, "},\n  \"rows\": [");
    for (int i = 0; i < sim->n; i++) {
        const struct layout_sim_row *w = &sim->row[i];
        fprintf(f, "%s\n    {\"layout\": \"%s\", \"transactions\": %.0f, \"ir_per_txn\": %.1f, "
                   "\"d1_miss_per_txn\": %.3f, \"ll_miss_per_txn\": %.3f, \"ll_rd_per_txn\": %.3f, "
                   "\"ll_wr_per_txn\": %.3f}",
                i ? "," : "", w->layout, w->txns, w->ir, w->d1, w->ll, w->ll_rd, w->ll_wr);
    }
    fprintf(f, "\n  ]\n}\n");
}

static int exp_layout(struct demo_ctx *d)
{
    const struct layout_opts *lo = &d->layout;
    struct layout_report *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
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
        free(r);
        return -ENOENT;
    }
    r->self[n] = 0;
    if (strcmp(hp_layout_name(), "grouped") != 0) {
        fprintf(stderr, "hotpath demo: layout: this binary is a %s build; the experiment runs the grouped "
                        "layout from the running binary: run build/hotpath demo\n", hp_layout_name());
        free(r);
        return -EINVAL;
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
            if (r->families & (1 << v))
                r->ncells++;
    r->cells = calloc((size_t)r->ncells, sizeof *r->cells);
    if (!r->cells) {
        r->ncells = 0;
        layout_free(r);
        return -ENOMEM;
    }
    int ci = 0;
    for (int v = 0; v < 2; v++)
        for (int fi = 0; fi < r->nflows; fi++)
            if (r->families & (1 << v))
                r->cells[ci++] = (struct layout_cell){.flows = r->flows[fi], .ipv6 = v == 1};

    printf("  %s sweep: flows", r->sweep);
    for (int fi = 0; fi < r->nflows; fi++)
        printf(" %s", flows_label(r->flows[fi]));
    printf(", %s, %g s per run, %d rep%s, threads on CPUs %s\n",
           r->families == 3 ? "IPv4 and IPv6" : r->families == 2 ? "IPv6" : "IPv4", r->duration, r->reps,
           r->reps == 1 ? "" : "s", r->cpus[0] ? r->cpus : "(not pinned)");
    if (r->early_demux)
        printf("  hotpath runs: --early-demux %s\n", r->early_demux);
    printf("  grouped and kernel: %s\n", r->self);
    if (r->chrono[0])
        printf("  chrono: %s%s\n", r->chrono,
               r->chrono_stale ? " (older than a file of src/ or include/: it may be stale; `make chrono`)" : "");
    else
        printf("  chrono column skipped: %s\n", r->chrono_why);
    fflush(stdout);

    /* Round robin: every repetition runs every cell once, and the three
     * configurations of a cell back to back, in an order that rotates, so
     * that a burst of load on this shared machine hits all alike and the
     * medians shed it. */
    struct progress pr;
    progress_init(&pr, "layout");
    int ncfg = r->chrono[0] ? 3 : 2, total = r->reps * r->ncells * ncfg, done = 0;
    double t0 = tool_now_s();
    for (int rep = 0; rep < r->reps; rep++)
        for (int i = 0; i < r->ncells; i++)
            for (int j = 0; j < NCFG; j++) {
                int k = (j + rep + i) % NCFG;
                if (k == CFG_CHRONO && !r->chrono[0])
                    continue;
                char what[80];
                snprintf(what, sizeof what, "rep %d/%d: %s flows %s %s", rep + 1, r->reps,
                         flows_label(r->cells[i].flows), r->cells[i].ipv6 ? "IPv6" : "IPv4", cfg_name[k]);
                progress_update(&pr, done, total, what);
                struct layout_run *run = &r->cells[i].run[k][rep];
                layout_run_one(r, &r->cells[i], k, rep, r->duration);
                while (run->ok && run->disturbed && run->retries < LAYOUT_RETRIES) {
                    run->retried_us[run->retries] = run->cpu_us;
                    run->retried_busy[run->retries++] = run->busy;
                    snprintf(what, sizeof what, "rep %d/%d: %s flows %s %s (again: preempted)", rep + 1,
                             r->reps, flows_label(r->cells[i].flows), r->cells[i].ipv6 ? "IPv6" : "IPv4",
                             cfg_name[k]);
                    progress_update(&pr, done, total, what);
                    layout_run_one(r, &r->cells[i], k, rep, r->duration);
                }
                progress_update(&pr, ++done, total, what);
            }
    r->seconds = tool_now_s() - t0;
    progress_done(&pr);
    layout_summarise(r);

    /* The simulated step: by default in the demo and full sweeps only
     * (about a minute per build at 30k flows). */
    struct layout_sim sim = {.n = 0};
    double simw = lo->sim_duration > 0 ? lo->sim_duration
                  : lo->sim_duration < 0 || strcmp(r->sweep, "custom") == 0 ? 0
                                                                            : r->sw->sim_duration;
    if (simw > 0) {
        progress_init(&pr, "layout-sim");
        layout_simulate(r, simw, &pr, &sim);
        progress_done(&pr);
    } else {
        snprintf(sim.why, sizeof sim.why, "%s",
                 lo->sim_duration < 0 ? "--sim-duration off"
                 : d->quick           ? "not in --quick (--sim-duration S runs it)"
                                      : "not by default in a custom sweep (--sim-duration S runs it)");
    }

    printf("\n== 4. tcp_rr over many flows: CPU per transaction, layout grouped vs chrono, vs the kernel ==\n");
    layout_print(r, stdout, false);
    printf("  ratios: median over the repetitions of grouped / X within one repetition (runs back to back)\n");
    layout_print_notes(r, stdout, false);
    if (!r->chrono[0])
        printf("  chrono column skipped: %s\n", r->chrono_why);
    printf("goals:\n");
    layout_print_goals(r, stdout, false);
    if (sim.n) {
        printf("\n  simulated cache misses per transaction (callgrind, host-independent): %s flows %s, "
               "rr's window %g s of valgrind time;\n  L1d 32 KiB 8-way, last level 32 MiB 16-way "
               "(a Zen 3 L3); not a goal, the cause the layout acts on\n",
               flows_label(sim.flows), sim.ipv6 ? "IPv6" : "IPv4", sim.window);
        layout_sim_print(&sim, stdout, false);
    }
    if (sim.why[0])
        printf("  simulated cache misses %s: %s\n", sim.n ? "stopped" : "skipped", sim.why);

    FILE *md = d->md;
    fprintf(md, "## 4. Hot structures by cache line: tcp_rr over many flows\n\n"
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
                "runs when there are any. The ratios are not the ratios of the medians: each is the median, "
                "over the repetitions, of the ratio of the two runs of one repetition, which ran back to "
                "back; this host's speed drifts by tens of percent over minutes, alike for all three "
                "configurations, and only a ratio of runs done together cancels that.\n\n",
            r->duration, r->cpus[0] ? r->cpus : "(none)", r->sweep, r->reps, r->reps == 1 ? "" : "s",
            r->seconds, LAYOUT_MIN_BUSY * 100, LAYOUT_RETRIES);
    if (r->early_demux)
        fprintf(md, "The hotpath runs had `--early-demux %s` (hp_tcp_config.early_demux_conns).\n\n",
                r->early_demux);
    if (r->chrono[0])
        fprintf(md, "Binaries: grouped and kernel `%s`, chrono `%s`%s.\n\n", r->self, r->chrono,
                r->chrono_stale ? " (older than a file of src/ or include/: it may be stale)" : "");
    else
        fprintf(md, "**chrono column skipped**: %s.\n\n", r->chrono_why);
    layout_print(r, md, true);
    fprintf(md, "\n\"goal met?\": grouped/kernel <= %.2fx in every row, and grouped/chrono <= %.2fx from %s to "
                "%s flows.\n\n", GOAL_KERNEL, GOAL_LAYOUT, flows_label(LAYOUT_GOAL_MIN), flows_label(LAYOUT_GOAL_MAX));
    layout_print_notes(r, md, true);
    fprintf(md, "\n![layout: CPU per transaction against flows](layout.png)\n\nGoals:\n\n");
    layout_print_goals(r, md, true);
    fputc('\n', md);
    fprintf(md, "### Simulated cache misses per transaction\n\n");
    if (sim.n) {
        fprintf(md, "What a field order changes is the cache misses, and valgrind's cache simulator counts "
                    "them the same on any host, busy or not (`scripts/rr_cachesim.py`: `hotpath rr` under "
                    "callgrind, which rr tells when its measured window opens and closes). %s flows, %s, "
                    "rr's window %g s of valgrind time, `--rto-min 60000` (under valgrind a round trip takes "
                    "about a hundred times longer; the floor keeps the retransmission timer as rare as in a "
                    "native run). L1d 32 KiB 8-way, last level 32 MiB 16-way (a Zen 3 L3); no hardware "
                    "prefetcher. Per transaction:\n\n",
                flows_label(sim.flows), sim.ipv6 ? "IPv6" : "IPv4", sim.window);
        layout_sim_print(&sim, md, true);
        fprintf(md, "\nNot a goal: the goal is CPU time, of which misses are one part; docs/experiments.md "
                    "(\"Simulated cache misses per transaction\") works out the CPU ratio these counts allow."
                    "\n\n![layout: simulated misses per transaction](layout_sim.png)\n\n");
    }
    if (sim.why[0])
        fprintf(md, "%s: %s.\n\n", sim.n ? "Stopped" : "Not run", sim.why);
    for (int g = 0; g < 2; g++)
        d->missed += r->goal[g] == 0;

    FILE *j = report_file(d, "layout.json");
    if (j) {
        layout_print_json(r, j);
        fclose(j);
    }
    if (sim.n && (j = report_file(d, "layout_sim.json"))) {
        layout_sim_json(r, &sim, j);
        fclose(j);
    }
    bool any = false;
    for (int i = 0; i < r->ncells; i++)
        any |= r->cells[i].nok[CFG_GROUPED] > 0;
    layout_free(r);
    return any ? 0 : -EIO;
}

/* ---- experiment: unmodified programs on hotpath (issue 20) --------------- */

static int exp_apps(struct demo_ctx *d)
{
    struct apps_report *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    struct progress pr;
    progress_init(&pr, "apps");
    struct bench_opts o = {.quick = d->quick, .cpu = d->cpu, .progress = progress_update, .progress_ctx = &pr};
    int rc = apps_report_run(r, &o);
    progress_done(&pr);
    fprintf(d->md, "## Unmodified programs on hotpath\n\n"
                   "`hotpath bench apps`: redis-benchmark GET and SET (50 connections, 3-byte values), wrk "
                   "on a 1 KiB page (100 connections, keep-alive) and one iperf3 TCP stream over one veth "
                   "pair, in one run: both ends on the kernel, the server on hotpath (`hotpath run`, "
                   "libhotpath-posix.so), both ends on hotpath; then the same TCP echo on hotpath's event "
                   "loop and on POSIX calls through the layer (docs/apps.md).\n\n```\n");
    if (rc == 2) {
        printf("\n== apps: skipped: %s ==\n", r->note);
        fprintf(d->md, "skipped: %s\n```\n\n", r->note);
        free(r);
        return 0;
    }
    apps_report_print(r, stdout);
    apps_report_print(r, d->md);
    fprintf(d->md, "```\n\n![apps: requests/s and p99 per configuration](apps.png)\n\n");
    for (int i = 0; i < r->ngoals; i++)
        d->missed += !r->goals[i].met;
    FILE *j = report_file(d, "apps.json");
    if (j) {
        apps_report_json(r, j);
        fclose(j);
    }
    free(r);
    return rc ? -EIO : 0;
}

/* ---- the experiments, in the order they run ------------------------------
 * To add one: write a function that runs it with a progress display, prints
 * its table to stdout, appends a section to d->md and writes DIR/NAME.json;
 * then teach scripts/report.py to plot NAME.json. */
static const struct {
    const char *name;
    const char *title;
    int (*run)(struct demo_ctx *d);
} experiments[] = {
    {"cksum", "Internet checksum vs DPDK (SEEDS.md part 1)", exp_cksum},
    {"pool", "Buffer pools: where alien frees go, vs DPDK and malloc (SEEDS.md part 2)", exp_pool},
    {"txcomp", "AF_XDP txonly with a completion thread, per alien policy (SEEDS.md part 2)",
     exp_txcomp},
    {"layout", "tcp_rr over many flows: hot structures grouped vs chrono layout, vs the kernel (SEEDS.md part 3)",
     exp_layout},
    {"apps", "redis, nginx/wrk, iperf3 unmodified: kernel vs server on hotpath vs both on hotpath (issue 20)",
     exp_apps},
};
#define NEXP (sizeof experiments / sizeof experiments[0])

static void plot(const char *dir)
{
    const char *script = find_data_script("report.py");
    if (!script) {
        printf("plots skipped: scripts/report.py not found\n");
        return;
    }
    fflush(stdout); /* the tables before the script's lines, when stdout is a pipe */
    pid_t pid = fork();
    if (pid == 0) {
        execlp("python3", "python3", script, dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        int code = pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        printf("plots skipped: %s\n",
               code == 127 ? "python3 not found"
               : code == 3 ? "python3 has no matplotlib (run 'make demo' as root to install it)"
                           : "the plotting script failed (see above)");
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: hotpath demo [--report DIR] [--quick] [--only NAME] [--cpu N]\n"
               "                    [--full] [--chrono-binary PATH|none] [--flows LIST]\n"
               "                    [--family 4|6|both] [--duration S] [--reps N]\n"
               "                    [--early-demux N|off] [--sim-duration S|off]\n\n"
               "Runs the experiments with a progress display, prints their tables and writes\n"
               "DIR (default report/): report.md, NAME.json and NAME.png per experiment.\n\n"
               "experiments:\n");
    for (size_t i = 0; i < NEXP; i++)
        fprintf(f, "  %-8s %s\n", experiments[i].name, experiments[i].title);
    fprintf(f, "\nThe layout experiment runs `hotpath rr --json` children: this binary (grouped\n"
               "layout, and the kernel's TCP), and a chrono build (`make chrono`): X-chrono/hotpath\n"
               "when this binary is X/hotpath (build/ -> build-chrono/), else build-chrono/hotpath\n"
               "of the source tree; without one its column is skipped. Its sweep: flows 1k 10k 30k,\n"
               "IPv4, 2 s per run, median of 3 (--quick: 1k 10k, 1 s, once; --full: 1k 5k 10k\n"
               "20k 30k, IPv4 and IPv6, 3 s, median of 5, about 12 minutes). These change it:\n"
               "  --full               the seed's whole sweep (use with --only layout)\n"
               "  --chrono-binary P    the chrono build to run; 'none' skips the column\n"
               "  --flows LIST         flow counts, e.g. 1k,10k,30000 (at most %d)\n"
               "  --family 4|6|both    address families\n"
               "  --duration S         measured seconds per run (0.1 to 60)\n"
               "  --reps N             repetitions per cell, the median is reported (1 to %d)\n"
               "  --early-demux N|off  passed to the hotpath runs (grouped and chrono): early\n"
               "                       demultiplexing from N connections, or never\n"
               "  --sim-duration S|off the simulated step: after the sweep, scripts/rr_cachesim.py\n"
               "                       counts cache misses per transaction of each build under\n"
               "                       valgrind at the sweep's largest flow count, over S seconds of\n"
               "                       valgrind time (default 20 in the demo and full sweeps, not\n"
               "                       run with --quick or when --flows/--family/--duration/--reps\n"
               "                       change the sweep)\n"
               "  --cpu N              client and server threads on the CPU before N and on N\n"
               "                       (default: the last two CPUs; -1: not pinned)\n",
            LAYOUT_MAX_FLOWS, LAYOUT_MAX_REPS);
}

/* "1k,10k,30000" into o->flows. 0, or 2 after a usage error. */
static int parse_flows(struct layout_opts *o, const char *arg)
{
    o->nflows = 0;
    const char *p = arg;
    for (;;) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        bool ok = end != p && *p != '-' && !errno;
        if (ok && (*end == 'k' || *end == 'K')) {
            v *= 1000;
            end++;
        }
        if (!ok || (*end && *end != ',') || v < 1 || v > 200000 || o->nflows == LAYOUT_MAX_FLOWS)
            return tool_usage_error("demo", "--flows wants up to %d flow counts from 1 to 200000 "
                                            "(e.g. 1k,10k,30000), not '%s'", LAYOUT_MAX_FLOWS, arg);
        o->flows[o->nflows++] = (unsigned)v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

int cmd_demo(int argc, char **argv)
{
    struct demo_ctx d = {.dir = "report", .cpu = tool_ncpus() - 1};
    const char *only = NULL;
    static const struct option longopts[] = {
        {"report", required_argument, NULL, 'o'},   {"quick", no_argument, NULL, 'q'},
        {"only", required_argument, NULL, 'n'},     {"cpu", required_argument, NULL, 'c'},
        {"full", no_argument, NULL, 'F'},           {"chrono-binary", required_argument, NULL, 'B'},
        {"flows", required_argument, NULL, 'f'},    {"family", required_argument, NULL, 'a'},
        {"duration", required_argument, NULL, 'd'}, {"reps", required_argument, NULL, 'r'},
        {"early-demux", required_argument, NULL, 'E'}, {"sim-duration", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    struct layout_opts *lo = &d.layout;
    char *end;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:qn:c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            d.dir = optarg;
            break;
        case 'q':
            d.quick = true;
            break;
        case 'n':
            only = optarg;
            break;
        case 'c':
            if (tool_parse_cpu("demo", optarg, &d.cpu))
                return 2;
            break;
        case 'F':
            lo->full = true;
            break;
        case 'B':
            if (strcmp(optarg, "none") != 0 && access(optarg, X_OK) != 0)
                return tool_usage_error("demo", "--chrono-binary '%s': %s (build it with `make chrono`, "
                                                "or give 'none' to skip the chrono column)",
                                        optarg, strerror(errno));
            lo->chrono_bin = optarg;
            break;
        case 'f':
            if (parse_flows(lo, optarg))
                return 2;
            break;
        case 'a':
            if (strcmp(optarg, "4") == 0)
                lo->families = 1;
            else if (strcmp(optarg, "6") == 0)
                lo->families = 2;
            else if (strcmp(optarg, "both") == 0)
                lo->families = 3;
            else
                return tool_usage_error("demo", "--family wants 4, 6 or both, not '%s'", optarg);
            break;
        case 'd':
            errno = 0;
            lo->duration = strtod(optarg, &end);
            if (!*optarg || *end || errno || !(lo->duration >= 0.1 && lo->duration <= 60))
                return tool_usage_error("demo", "--duration wants seconds from 0.1 to 60, not '%s'", optarg);
            break;
        case 'r':
            errno = 0;
            lo->reps = (int)strtol(optarg, &end, 10);
            if (!*optarg || *end || errno || lo->reps < 1 || lo->reps > LAYOUT_MAX_REPS)
                return tool_usage_error("demo", "--reps wants a number from 1 to %d, not '%s'",
                                        LAYOUT_MAX_REPS, optarg);
            break;
        case 'E': {
            errno = 0;
            unsigned long v = strcmp(optarg, "off") == 0 ? 1 : strtoul(optarg, &end, 10);
            if (strcmp(optarg, "off") != 0 && (!*optarg || *end || errno || v < 1 || v > (1ul << 30)))
                return tool_usage_error("demo", "--early-demux wants a number from 1 to %lu or 'off', not '%s'",
                                        1ul << 30, optarg);
            lo->early_demux = optarg;
            break;
        }
        case 'S':
            errno = 0;
            lo->sim_duration = strcmp(optarg, "off") == 0 ? -1 : strtod(optarg, &end);
            if (strcmp(optarg, "off") != 0 &&
                (!*optarg || *end || errno || !(lo->sim_duration >= 1 && lo->sim_duration <= 600)))
                return tool_usage_error("demo", "--sim-duration wants seconds from 1 to 600 or 'off', not '%s'",
                                        optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return tool_usage_error("demo", "unknown option");
        }
    }
    if (optind < argc)
        return tool_usage_error("demo", "unexpected argument '%s'", argv[optind]);
    if (lo->full && d.quick)
        return tool_usage_error("demo", "--full and --quick exclude each other");
    bool known = !only;
    for (size_t i = 0; i < NEXP && !known; i++)
        known = strcmp(only, experiments[i].name) == 0;
    if (!known)
        return tool_usage_error("demo", "no experiment named '%s'", only);
    if (mkdir(d.dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "hotpath demo: cannot create %s: %s\n", d.dir, strerror(errno));
        return 1;
    }
    d.md = report_file(&d, "report.md");
    if (!d.md)
        return 1;
    char cpu[256], when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(d.md, "# hotpath report\n\n%s. hotpath %s; %s; %s.\n\n", when, hp_version(), cpu,
            tool_compiler());
    printf("hotpath demo: %s\n", cpu);

    int failed = 0;
    for (size_t i = 0; i < NEXP; i++) {
        if (only && strcmp(only, experiments[i].name) != 0)
            continue;
        printf("\n[%zu/%zu] %s\n", i + 1, NEXP, experiments[i].title);
        fflush(stdout);
        int rc = experiments[i].run(&d);
        if (rc) {
            fprintf(stderr, "hotpath demo: %s failed: %s\n", experiments[i].name, strerror(-rc));
            fprintf(d.md, "## %s\n\nFailed: %s\n\n", experiments[i].title, strerror(-rc));
            failed++;
        }
        fflush(d.md);
    }
    fclose(d.md);
    plot(d.dir);
    printf("\nreport: %s/report.md%s\n", d.dir,
           d.missed ? "  (some goals were missed: see the goals lines)" : "");
    return failed ? 1 : 0;
}
