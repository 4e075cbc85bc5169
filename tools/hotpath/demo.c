/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath demo`: runs each experiment with a progress display, prints its table, writes report/ with plots. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/cksum.h>
#include <hotpath/cpu.h>

#include "bench_cksum.h"
#include "bench_pool.h"
#include "bench_txcomp.h"
#include "tool.h"

struct demo_ctx {
    const char *dir; /* report directory */
    FILE *md;        /* report.md, open for appending sections */
    bool quick;
    int cpu;
    int missed; /* goals missed, over all experiments */
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
};
#define NEXP (sizeof experiments / sizeof experiments[0])

static const char *find_script(void)
{
    static const char *candidates[] = {HP_SOURCE_DIR "/scripts/report.py",
                                       HP_DATA_DIR "/report.py"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (access(candidates[i], R_OK) == 0)
            return candidates[i];
    return NULL;
}

static void plot(const char *dir)
{
    const char *script = find_script();
    if (!script) {
        printf("plots skipped: scripts/report.py not found\n");
        return;
    }
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
    fprintf(f, "usage: hotpath demo [--report DIR] [--quick] [--only NAME] [--cpu N]\n\n"
               "Runs the experiments with a progress display, prints their tables and writes\n"
               "DIR (default report/): report.md, NAME.json and NAME.png per experiment.\n\n"
               "experiments:\n");
    for (size_t i = 0; i < NEXP; i++)
        fprintf(f, "  %-8s %s\n", experiments[i].name, experiments[i].title);
}

int cmd_demo(int argc, char **argv)
{
    struct demo_ctx d = {.dir = "report", .cpu = tool_ncpus() - 1};
    const char *only = NULL;
    static const struct option longopts[] = {
        {"report", required_argument, NULL, 'o'}, {"quick", no_argument, NULL, 'q'},
        {"only", required_argument, NULL, 'n'},   {"cpu", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
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
        case 'h':
            usage(stdout);
            return 0;
        default:
            return tool_usage_error("demo", "unknown option");
        }
    }
    if (optind < argc)
        return tool_usage_error("demo", "unexpected argument '%s'", argv[optind]);
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
