/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath demo`: runs each experiment with a progress display, prints its table, writes report/ with plots. */
#include <errno.h>
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

#include "bench.h"
#include "bench_apps.h"
#include "bench_cksum.h"
#include "bench_pool.h"
#include "bench_txcomp.h"
#include "cmd.h"
#include "demo.h"
#include "demo_peers.h"
#include "harness.h"
#include "tool.h"

/* Open DIR/NAME for writing. */
FILE *report_file(struct demo_ctx *d, const char *name)
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
    struct bench_opts o = {.quick = d->quick,
                           .cpu = d->cpu,
                           .progress = progress_update,
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
            fprintf(f,
                    "## 1. The Internet checksum\n\n"
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
                    printf("%6zu %4d %14.3f %12.3f %10.3f %10.4f %9.1fx\n", c->size, c->offset, vd,
                           vn, c->cpb[un], c->cpb[hp], vd / c->cpb[hp]);
            }
        fprintf(f, md ? "\nCode bytes (from the symbol table):" : "code bytes:");
        for (int k = 0; k < r->nimpls; k++)
            if (strcmp(r->impls[k].name, "hotpath") != 0)
                fprintf(f, " %s %ld%s", r->impls[k].name, r->impls[k].code_bytes,
                        k + 1 < r->nimpls ? "," : "");
        fprintf(f, "%s",
                md ? "\n\n![checksum: cycles/byte against size](cksum.png)\n\nGoals:\n\n"
                   : "\ngoals:\n");
        for (int i = 0; i < r->goals.n; i++)
            fprintf(f, md ? "- %s: %s\n" : "  [%s] %s\n", r->goals.g[i].met ? "met" : "MISSED",
                    r->goals.g[i].text);
        fputc('\n', f);
    }
    d->missed += hb_goals_missed(&r->goals);
    FILE *j = report_file(d, "cksum.json");
    if (j) {
        json_t *v = cksum_report_json(r);
        tool_json_write(v, j, true);
        json_decref(v);
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
    struct bench_opts o = {.quick = d->quick,
                           .cpu = d->cpu,
                           .progress = progress_update,
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
            fprintf(f,
                    "## 2. Where a buffer goes when another thread frees it\n\n"
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
            printf("\n== 2. Alien frees: Mbuf/s (CPU ns per buffer), the seed's table ==\n%-17s",
                   "impl");
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
        pool_report_print_settled(r, f, md);
        fprintf(f, md ? "\n![pool: rate per scenario and policy](pool.png)\n\nGoals:\n\n"
                      : "goals:\n");
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
    struct bench_opts o = {.quick = d->quick,
                           .cpu = d->cpu,
                           .progress = progress_update,
                           .progress_ctx = &pr};
    txcomp_run(&o, r);
    progress_done(&pr);
    printf("\n== 3. txonly with a completion thread: Mpps per alien policy (the seed's experiment) "
           "==\n");
    txcomp_print_header(r, stdout);
    txcomp_print_table(r, stdout);
    printf("goals:\n");
    txcomp_goals(r, stdout, false);
    fprintf(d->md,
            "## 3. The seed's AF_XDP experiment: transmit completions freed on another thread\n\n"
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

/* ---- what the experiments share ------------------------------------------ */

enum { CHILD_CAP = 64 * 1024 };

/* Read the child's standard output into buf until it ends, the deadline
 * passes or CHILD_CAP bytes came (then the child is killed: far more than
 * one JSON object). Its length; *killed says whether it was killed. */
static size_t read_child(int fd, pid_t pid, double timeout_s, char *buf, bool *killed)
{
    size_t len = 0;
    double deadline = tool_now_s() + timeout_s;
    *killed = false;
    for (;;) {
        double left = deadline - tool_now_s();
        if (left <= 0 || len == CHILD_CAP) {
            *killed = true;
            kill(pid, SIGKILL); /* rr's own children die with it (PR_SET_PDEATHSIG) */
            return len;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
            continue; /* a signal, or the time is up: looked at above */
        ssize_t got = read(fd, buf + len, CHILD_CAP - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return len; /* end of file (or an error: the exit status tells) */
        len += (size_t)got;
    }
}

/* Why the child failed, from its exit status and standard error's first line. */
static void child_error(FILE *errf, int st, bool killed, size_t len, double timeout_s, char *err,
                        size_t errlen)
{
    char line[200] = "";
    rewind(errf);
    if (!fgets(line, sizeof line, errf))
        line[0] = 0;
    line[strcspn(line, "\n")] = 0;
    if (killed && len == CHILD_CAP)
        snprintf(err, errlen, "more than %.0f KiB of output: killed", CHILD_CAP / 1024.0);
    else if (killed)
        snprintf(err, errlen, "no answer in %.0f s: killed", timeout_s);
    else if (WIFEXITED(st))
        snprintf(err, errlen, "exit %d%s%s", WEXITSTATUS(st), line[0] ? ": " : "", line);
    else
        snprintf(err, errlen, "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int run_child(char *const argv[], double timeout_s, char **out, char *err, size_t errlen)
{
    *out = NULL;
    err[0] = 0;
    int fds[2];
    FILE *errf = tmpfile();
    char *buf = malloc(CHILD_CAP + 1);
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
    bool killed = false;
    size_t len = pid > 0 ? read_child(fds[0], pid, timeout_s, buf, &killed) : 0;
    close(fds[0]);
    buf[len] = 0;
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    int rc = -1;
    if (pid < 0)
        snprintf(err, errlen, "fork: %s", strerror(errno));
    else if (!killed && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        rc = 0;
    else
        child_error(errf, st, killed, len, timeout_s, err, errlen);
    fclose(errf);
    if (rc == 0)
        *out = buf;
    else
        free(buf);
    return rc;
}

/* A script of scripts/ by NAME: in the source tree, else where `make install`
 * put it. NULL when neither has it. A static buffer: the next call reuses it. */
const char *find_data_script(const char *name)
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

/* ---- experiment 5: side by side with lwIP and smoltcp (demo_peers.c) ---- */

static int exp_peers(struct demo_ctx *d)
{
    return demo_peers(d->dir, d->md, d->quick, d->cpu, &d->missed);
}

/* ---- experiment: unmodified programs on hotpath (issue 20) --------------- */

static int exp_apps(struct demo_ctx *d)
{
    struct apps_report *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    struct progress pr;
    progress_init(&pr, "apps");
    struct bench_opts o = {.quick = d->quick,
                           .cpu = d->cpu,
                           .progress = progress_update,
                           .progress_ctx = &pr};
    int rc = apps_report_run(r, &o);
    progress_done(&pr);
    fprintf(
        d->md,
        "## Unmodified programs on hotpath\n\n"
        "`hotpath bench apps`: redis-benchmark GET and SET (50 connections, 3-byte values), wrk "
        "on a 1 KiB page (100 connections, keep-alive) and one iperf3 TCP stream over one veth "
        "pair, in one run: both ends on the kernel, the server on hotpath (`hotpath run`, "
        "libhotpath-posix.so), both ends on hotpath; redis GET on one host, both ends on the "
        "kernel over loopback and both on hotpath over memif; then the same TCP echo on "
        "hotpath's event loop and on POSIX calls through the layer (docs/apps.md).\n\n```\n");
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
    {"layout",
     "tcp_rr over many flows: hot structures grouped vs chrono layout, vs the kernel (SEEDS.md "
     "part 3)",
     exp_layout},
    {"peers",
     "hotpath vs lwIP and smoltcp on one harness: rr, bulk, connections, UDP, idle memory (issue "
     "23)",
     exp_peers},
    {"apps",
     "redis, nginx/wrk, iperf3 unmodified: kernel vs server on hotpath vs both on hotpath (issue "
     "20)",
     exp_apps},
    {"paths",
     "TCP through loss, reordering, ECN, a tail loss and a 1280-byte link: hotpath vs the kernel "
     "(issue 21)",
     exp_paths},
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
    fprintf(f, "\nThe paths experiment (root) is `hotpath bench paths`: about 20 minutes, 1 with\n"
               "--quick; --cpu N puts hotpath impair on CPU N and the senders and receivers on\n"
               "the CPU before it.\n");
    fprintf(f,
            "\nThe layout experiment runs `hotpath rr --json` children: this binary (grouped\n"
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
            return tool_usage_error("demo",
                                    "--flows wants up to %d flow counts from 1 to 200000 "
                                    "(e.g. 1k,10k,30000), not '%s'",
                                    LAYOUT_MAX_FLOWS, arg);
        o->flows[o->nflows++] = (unsigned)v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* The layout experiment's options. 0, 1 (not one of them), or 2 after a
 * usage error. */
static int layout_option(int c, const char *arg, struct layout_opts *lo)
{
    char *end;
    errno = 0;
    switch (c) {
    case 'F':
        lo->full = true;
        return 0;
    case 'B':
        if (strcmp(arg, "none") != 0 && access(arg, X_OK) != 0)
            return tool_usage_error("demo",
                                    "--chrono-binary '%s': %s (build it with `make chrono`, "
                                    "or give 'none' to skip the chrono column)",
                                    arg, strerror(errno));
        lo->chrono_bin = arg;
        return 0;
    case 'f':
        return parse_flows(lo, arg);
    case 'a':
        lo->families = strcmp(arg, "4") == 0      ? 1
                       : strcmp(arg, "6") == 0    ? 2
                       : strcmp(arg, "both") == 0 ? 3
                                                  : 0;
        return lo->families
                   ? 0
                   : tool_usage_error("demo", "--family wants 4, 6 or both, not '%s'", arg);
    case 'd':
        lo->duration = strtod(arg, &end);
        if (!*arg || *end || errno || !(lo->duration >= 0.1 && lo->duration <= 60))
            return tool_usage_error("demo", "--duration wants seconds from 0.1 to 60, not '%s'",
                                    arg);
        return 0;
    case 'r':
        lo->reps = (int)strtol(arg, &end, 10);
        if (!*arg || *end || errno || lo->reps < 1 || lo->reps > LAYOUT_MAX_REPS)
            return tool_usage_error("demo", "--reps wants a number from 1 to %d, not '%s'",
                                    LAYOUT_MAX_REPS, arg);
        return 0;
    case 'E': {
        bool off = strcmp(arg, "off") == 0;
        unsigned long v = off ? 1 : strtoul(arg, &end, 10);
        if (!off && (!*arg || *end || errno || v < 1 || v > (1ul << 30)))
            return tool_usage_error("demo",
                                    "--early-demux wants a number from 1 to %lu or 'off', not '%s'",
                                    1ul << 30, arg);
        lo->early_demux = arg;
        return 0;
    }
    case 'S': {
        bool off = strcmp(arg, "off") == 0;
        lo->sim_duration = off ? -1 : strtod(arg, &end);
        if (!off && (!*arg || *end || errno || !(lo->sim_duration >= 1 && lo->sim_duration <= 600)))
            return tool_usage_error(
                "demo", "--sim-duration wants seconds from 1 to 600 or 'off', not '%s'", arg);
        return 0;
    }
    default:
        return 1;
    }
}

/* The options into d and *only. 0, -1 (--help printed), or 2. */
static int demo_options(int argc, char **argv, struct demo_ctx *d, const char **only)
{
    static const struct option longopts[] = {
        {"report", required_argument, NULL, 'o'},
        {"quick", no_argument, NULL, 'q'},
        {"only", required_argument, NULL, 'n'},
        {"cpu", required_argument, NULL, 'c'},
        {"full", no_argument, NULL, 'F'},
        {"chrono-binary", required_argument, NULL, 'B'},
        {"flows", required_argument, NULL, 'f'},
        {"family", required_argument, NULL, 'a'},
        {"duration", required_argument, NULL, 'd'},
        {"reps", required_argument, NULL, 'r'},
        {"early-demux", required_argument, NULL, 'E'},
        {"sim-duration", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:qn:c:h", longopts, NULL)) != -1) {
        int rc = layout_option(c, optarg, &d->layout);
        if (rc != 1) {
            if (rc)
                return 2;
            continue;
        }
        if (c == 'o')
            d->dir = optarg;
        else if (c == 'q')
            d->quick = true;
        else if (c == 'n')
            *only = optarg;
        else if (c == 'c' && tool_parse_cpu("demo", optarg, &d->cpu))
            return 2;
        else if (c == 'h') {
            usage(stdout);
            return -1;
        } else if (c != 'c')
            return tool_usage_error("demo", "unknown option");
    }
    if (optind < argc)
        return tool_usage_error("demo", "unexpected argument '%s'", argv[optind]);
    if (d->layout.full && d->quick)
        return tool_usage_error("demo", "--full and --quick exclude each other");
    bool known = !*only;
    for (size_t i = 0; i < NEXP && !known; i++)
        known = strcmp(*only, experiments[i].name) == 0;
    if (!known)
        return tool_usage_error("demo", "no experiment named '%s'", *only);
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    struct demo_ctx d = {.dir = "report", .cpu = tool_ncpus() - 1};
    const char *only = NULL;
    int rc = demo_options(argc, argv, &d, &only);
    if (rc)
        return rc < 0 ? 0 : rc;
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
        rc = experiments[i].run(&d);
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
