/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench peers`: hotpath, lwIP and smoltcp side by side on the same workloads and harness (two instances, one thread), with ratios and the goals of issue 23. */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hotpath/cpu.h>

#include "bench_peers.h"
#include "peers_harness.h"
#include "tool.h"

#define NSTACK          3
#define MAX_REPS        64
#define GOAL_RATIO      2.0 /* hotpath >= 2x the better peer in every row */
#define GOAL_IDLE_BYTES 512 /* per idle established connection, everything held */
#define CHILD_TIMEOUT_S 600

enum { ST_HOTPATH, ST_LWIP, ST_SMOLTCP };
static const char *const stack_names[NSTACK] = {"hotpath", "lwip", "smoltcp"};

struct cell {
    double v[MAX_REPS];
    int rep[MAX_REPS]; /* the round each value comes from */
    int n;
    uint64_t count, frames; /* sums over the runs */
    double cpu_s;
    double med;
    char why[200];
};

struct peers_report {
    int reps, cpu, round;
    double secs, warm;
    bool stack_on[NSTACK], work_on[PH_NWORK];
    char version[NSTACK][160];
    char skip[NSTACK][320];
    struct cell c[NSTACK][PH_NRESULT];
    double ratio[PH_NRESULT]; /* hotpath against the better peer, > 1: ahead; 0: not measured */
    int best[PH_NRESULT];     /* the better peer, or -1 */
};

/* The speed rows, which the ratio goals cover. */
static bool speed_row(int w)
{
    return w >= PH_RR1 && w <= PH_UDP;
}

static int work_of(int result)
{
    return result > PH_IDLE ? PH_IDLE : result;
}

/* ---- selection and the stacks there are ------------------------------------------------ */

/* A comma-separated list from the environment; unset: all on. */
static void select_env(const char *var, const char *(*name)(int), int n, bool *on)
{
    const char *v = getenv(var);
    for (int i = 0; i < n; i++)
        on[i] = !v || !*v;
    if (!v || !*v)
        return;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (int i = 0; i < n; i++)
            if (strcmp(t, name(i)) == 0)
                known = on[i] = true;
        if (!known)
            fprintf(stderr, "hotpath bench peers: %s: no '%s' (ignored)\n", var, t);
    }
}

static const char *stack_name(int i)
{
    return stack_names[i];
}

static const char *work_name(int i)
{
    return i == PH_IDLE ? "idle" : ph_result_name(i);
}

static const char *smoltcp_bin(void)
{
    const char *e = getenv("HP_PEER_SMOLTCP");
    return e && *e ? e : HP_PEERS_SMOLTCP_BIN;
}

int peers_child_output(char *const argv[], int cpu, char **out, char *why, size_t len)
{
    int fd[2];
    *out = NULL;
    if (pipe(fd) < 0) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        if (cpu >= 0)
            tool_pin(cpu);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    double deadline = tool_now_s() + CHILD_TIMEOUT_S;
    while (pid > 0 && buf) {
        struct pollfd p = {.fd = fd[0], .events = POLLIN};
        if (poll(&p, 1, 1000) == 0) {
            if (tool_now_s() < deadline)
                continue;
            kill(pid, SIGKILL);
            break;
        }
        if (n + 4096 > cap && !(buf = realloc(buf, cap *= 2)))
            break;
        ssize_t k = read(fd[0], buf + n, cap - n - 1);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    close(fd[0]);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !buf || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(why, len, "%s %s", argv[0],
                 pid < 0         ? "could not start"
                 : !buf          ? "printed too much"
                 : WIFEXITED(st) ? tool_fmt("exited with %.0f", WEXITSTATUS(st))
                                 : "was killed");
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *out = buf;
    return 0;
}

static void find_stacks(struct peers_report *r)
{
    snprintf(r->version[ST_HOTPATH], sizeof r->version[0], "%s", ph_hotpath_ops.version());
#ifdef HP_HAVE_LWIP
    snprintf(r->version[ST_LWIP], sizeof r->version[0], "%s", ph_lwip_ops.version());
#else
    snprintf(r->skip[ST_LWIP], sizeof r->skip[0],
             "not built: its source is Debian's source package, which scripts/deps.sh fetches "
             "(a deb-src entry, apt-get source lwip) into build-peers/; then rebuild");
#endif
    const char *bin = smoltcp_bin();
    char *out = NULL, why[200];
    char *argv[] = {(char *)bin, "--version", NULL};
    if (access(bin, X_OK) != 0)
        snprintf(r->skip[ST_SMOLTCP], sizeof r->skip[0],
                 "not built: scripts/deps.sh builds bench/peers/smoltcp with cargo from crates.io "
                 "into %s",
                 bin);
    else if (peers_child_output(argv, -1, &out, why, sizeof why) < 0)
        snprintf(r->skip[ST_SMOLTCP], sizeof r->skip[0], "%s", why);
    else
        snprintf(r->version[ST_SMOLTCP], sizeof r->version[0], "%.*s", (int)strcspn(out, "\n"),
                 out);
    free(out);
}

/* ---- running ------------------------------------------------------------------------------ */

static void cell_add(struct cell *c, const struct ph_result *res, int round)
{
    if (!res->ok) {
        if (!c->why[0])
            snprintf(c->why, sizeof c->why, "%s", res->why[0] ? res->why : "failed");
        return;
    }
    if (c->n < MAX_REPS) {
        c->rep[c->n] = round;
        c->v[c->n++] = res->value;
    }
    c->count += res->count;
    c->frames += res->frames;
    c->cpu_s += res->cpu_s;
}

static void run_c_stack(struct peers_report *r, int s, const struct ph_ops *ops, int w)
{
    struct ph_run_opts ro = {.warm_s = r->warm, .seconds = r->secs, .cpu = r->cpu};
    struct ph_result res[2];
    ph_run(ops, (enum ph_workload)w, &ro, res);
    cell_add(&r->c[s][w], &res[0], r->round);
    if (w == PH_IDLE)
        cell_add(&r->c[s][PH_IDLE + 1], &res[1], r->round);
}

static const char *jstr(json_t *o, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : dflt;
}

/* One result of the smoltcp driver's JSON into its cell. */
static void smoltcp_result(struct peers_report *r, json_t *o)
{
    int k = ph_result_find(jstr(o, "workload", ""));
    if (k < 0)
        return;
    struct ph_result res = {.ok = json_is_true(json_object_get(o, "ok"))};
    res.value = json_number_value(json_object_get(o, "value"));
    res.count = (uint64_t)json_integer_value(json_object_get(o, "count"));
    res.frames = (uint64_t)json_integer_value(json_object_get(o, "frames"));
    res.cpu_s = json_number_value(json_object_get(o, "cpu_s"));
    snprintf(res.why, sizeof res.why, "%s", jstr(o, "why", "failed"));
    cell_add(&r->c[ST_SMOLTCP][k], &res, r->round);
}

/* The smoltcp driver, a process of its own, for workload w. */
static void run_smoltcp(struct peers_report *r, int w)
{
    char secs[32], warm[32];
    snprintf(secs, sizeof secs, "%g", r->secs);
    snprintf(warm, sizeof warm, "%g", r->warm);
    char *argv[] = {(char *)smoltcp_bin(),
                    "--workloads",
                    (char *)work_name(w),
                    "--seconds",
                    secs,
                    "--warm",
                    warm,
                    NULL};
    char *out = NULL, why[200];
    json_error_t jerr;
    json_t *root = NULL, *results;
    if (peers_child_output(argv, r->cpu, &out, why, sizeof why) == 0 &&
        !(root = json_loads(out, 0, &jerr)))
        snprintf(why, sizeof why, "its JSON does not parse: %s", jerr.text);
    if (root && json_is_array(results = json_object_get(root, "results"))) {
        size_t i;
        json_t *o;
        json_array_foreach(results, i, o) smoltcp_result(r, o);
    } else {
        for (int k = 0; k < PH_NRESULT; k++)
            if (work_of(k) == w && !r->c[ST_SMOLTCP][k].why[0])
                snprintf(r->c[ST_SMOLTCP][k].why, sizeof r->c[0][0].why, "%s",
                         root ? "no results" : why);
    }
    json_decref(root);
    free(out);
}

/* idle_held, run by run: the larger of the RSS growth and the accounting. */
static void derive_held(struct cell *rss, struct cell *acc, struct cell *held)
{
    held->n = rss->n < acc->n ? rss->n : acc->n;
    for (int i = 0; i < held->n; i++) {
        held->v[i] = rss->v[i] > acc->v[i] ? rss->v[i] : acc->v[i];
        held->rep[i] = rss->rep[i];
    }
    held->count = acc->count;
    if (!held->n)
        snprintf(held->why, sizeof held->why, "%s", rss->why[0] ? rss->why : acc->why);
}

/* hotpath against peer b in result k: the median over the rounds of the
 * ratio of the two runs of one round (done seconds apart), not the ratio of
 * the medians, since this host's speed drifts alike for every stack over
 * minutes and only runs done together cancel that (the layout experiment's
 * method). Called before the medians sort the samples. */
static double paired_ratio(const struct peers_report *r, int k, int b)
{
    const struct cell *h = &r->c[ST_HOTPATH][k], *p = &r->c[b][k];
    double q[MAX_REPS];
    int n = 0;
    for (int i = 0; i < h->n; i++)
        for (int j = 0; j < p->n; j++)
            if (h->rep[i] == p->rep[j] && h->v[i] > 0 && p->v[j] > 0)
                q[n++] = ph_result_higher_better(k) ? h->v[i] / p->v[j] : p->v[j] / h->v[i];
    return tool_median(q, n);
}

/* The better peer of result k, by median; -1 when no peer has one. */
static int better_peer(const struct peers_report *r, int k)
{
    bool hb = ph_result_higher_better(k);
    int b = -1;
    for (int s = ST_LWIP; s < NSTACK; s++) {
        const struct cell *c = &r->c[s][k];
        if (c->n && c->med > 0 &&
            (b < 0 || (hb ? c->med > r->c[b][k].med : c->med < r->c[b][k].med)))
            b = s;
    }
    return b;
}

static void summarise(struct peers_report *r)
{
    double sorted[MAX_REPS];
    for (int s = 0; s < NSTACK; s++) {
        derive_held(&r->c[s][PH_IDLE], &r->c[s][PH_IDLE + 1], &r->c[s][PH_IDLE + 2]);
        for (int k = 0; k < PH_NRESULT; k++) {
            struct cell *c = &r->c[s][k];
            memcpy(sorted, c->v, (size_t)c->n * sizeof *sorted);
            c->med = tool_median(sorted, c->n);
        }
    }
    for (int k = 0; k < PH_NRESULT; k++) {
        r->ratio[k] = 0;
        r->best[k] = -1;
        if (k == PH_IDLE || k == PH_IDLE + 1)
            continue; /* compared as idle_held */
        r->best[k] = better_peer(r, k);
        if (r->best[k] >= 0 && r->c[ST_HOTPATH][k].n)
            r->ratio[k] = paired_ratio(r, k, r->best[k]);
    }
}

static void run_one(struct peers_report *r, int s, int w)
{
    if (s == ST_SMOLTCP)
        run_smoltcp(r, w);
#ifdef HP_HAVE_LWIP
    else if (s == ST_LWIP)
        run_c_stack(r, s, &ph_lwip_ops, w);
#endif
    else
        run_c_stack(r, s, &ph_hotpath_ops, w);
}

struct peers_report *peers_report_run(const struct bench_opts *o)
{
    struct peers_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->reps = o->reps ? o->reps : (o->quick ? 1 : 5);
    r->secs = o->quick ? 0.2 : 1.0;
    r->warm = o->quick ? 0.05 : 0.2;
    const char *e = getenv("HP_PEERS_SECONDS");
    if (e && atof(e) > 0)
        r->secs = atof(e);
    r->cpu = o->cpu;
    select_env("HP_PEERS_STACKS", stack_name, NSTACK, r->stack_on);
    select_env("HP_PEERS_WORKLOADS", work_name, PH_NWORK, r->work_on);
    find_stacks(r);
    int steps = 0, total = 0;
    for (int s = 0; s < NSTACK; s++)
        for (int w = 0; w < PH_NWORK; w++)
            total += r->reps * (r->stack_on[s] && !r->skip[s][0] && r->work_on[w]);
    /* The stacks take turns workload by workload, each round and workload
     * starting with the next stack: the load of a shared machine moves in
     * seconds, and so it falls on all three alike. */
    for (r->round = 0; r->round < r->reps; r->round++)
        for (int w = 0; w < PH_NWORK; w++)
            for (int j = 0; j < NSTACK && r->work_on[w]; j++) {
                int s = (r->round + w + j) % NSTACK;
                if (!r->stack_on[s] || r->skip[s][0])
                    continue;
                char what[64];
                snprintf(what, sizeof what, "%s, %s", work_name(w), stack_names[s]);
                if (o->progress)
                    o->progress(o->progress_ctx, steps++, total, what);
                run_one(r, s, w);
            }
    if (o->progress)
        o->progress(o->progress_ctx, total, total, "done");
    summarise(r);
    return r;
}

void peers_report_free(struct peers_report *r)
{
    free(r);
}

bool peers_report_ok(const struct peers_report *r)
{
    for (int k = 0; k < PH_NRESULT; k++)
        if (r->work_on[work_of(k)] && !r->c[ST_HOTPATH][k].n && r->stack_on[ST_HOTPATH])
            return false;
    return true;
}

/* ---- output --------------------------------------------------------------------------------- */

static const char *fmt_value(int k, double v)
{
    const char *u = ph_result_unit(k);
    if (strcmp(u, "Gbit/s") == 0)
        return tool_fmt("%.2f", v);
    if (strcmp(u, "ns/txn") == 0)
        return tool_fmt("%.1f", v);
    return tool_fmt("%.0f", v);
}

void peers_print_header(const struct peers_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "cpu:        %s\ncompiler:   %s\nflags:      %s\n", cpu, tool_compiler(),
            tool_build_flags());
    fprintf(
        f,
        "harness:    two instances of each stack in one process, joined by in-memory frame\n"
        "            queues (hotpath: hp_link_mem_pair), one thread%s polling both; IPv4,\n"
        "            MTU 1500; %d round%s of %.2g s after %.2g s unmeasured, the stacks taking\n"
        "            turns workload by workload; medians, and ratios the median of each round's\n"
        "            ratio. Rates are per CPU second of that thread (one core)\n",
        r->cpu >= 0 ? tool_fmt(" on CPU %.0f", r->cpu) : "", r->reps, r->reps == 1 ? "" : "s",
        r->secs, r->warm);
    for (int s = 0; s < NSTACK; s++) {
        char label[16];
        snprintf(label, sizeof label, "%s:", stack_names[s]);
        fprintf(f, "%-12s%s%s\n", label,
                !r->stack_on[s] ? "not selected (HP_PEERS_STACKS)"
                : r->skip[s][0] ? "SKIPPED: "
                                : "",
                !r->stack_on[s] ? ""
                : r->skip[s][0] ? r->skip[s]
                                : r->version[s]);
    }
}

static const char *cell_text(const struct peers_report *r, int s, int k)
{
    const struct cell *c = &r->c[s][k];
    if (!r->stack_on[s] || r->skip[s][0] || !r->work_on[work_of(k)])
        return "-";
    return c->n ? fmt_value(k, c->med) : "failed";
}

static const char *ratio_text(const struct peers_report *r, int k)
{
    if (k == PH_IDLE || k == PH_IDLE + 1)
        return "(as idle_held)";
    if (!(r->ratio[k] > 0))
        return "-";
    static char b[64];
    snprintf(b, sizeof b, "%.2fx (vs %s)", r->ratio[k], stack_names[r->best[k]]);
    return b;
}

void peers_print_table(const struct peers_report *r, FILE *f, bool md)
{
    if (md)
        fprintf(f, "| workload | unit | hotpath | lwip | smoltcp | hotpath vs the better peer |\n"
                   "|---|---|---:|---:|---:|---|\n");
    else
        fprintf(f, "  %-15s %-7s %10s %10s %10s   %s\n", "workload", "unit", "hotpath", "lwip",
                "smoltcp", "hotpath vs the better peer");
    for (int k = 0; k < PH_NRESULT; k++) {
        if (!r->work_on[work_of(k)])
            continue;
        if (md)
            fprintf(f, "| %s | %s | %s | %s | %s | %s |\n", ph_result_name(k), ph_result_unit(k),
                    cell_text(r, 0, k), cell_text(r, 1, k), cell_text(r, 2, k), ratio_text(r, k));
        else
            fprintf(f, "  %-15s %-7s %10s %10s %10s   %s\n", ph_result_name(k), ph_result_unit(k),
                    cell_text(r, 0, k), cell_text(r, 1, k), cell_text(r, 2, k), ratio_text(r, k));
    }
    fprintf(f,
            "\n%sratio > 1: hotpath ahead (a rate: hotpath's / the peer's; a cost in ns or bytes:\n"
            "%sthe peer's / hotpath's)\n",
            md ? "" : "  ", md ? "" : "  ");
    for (int s = 0; s < NSTACK; s++)
        for (int k = 0; k < PH_NRESULT; k++)
            if (r->stack_on[s] && !r->skip[s][0] && r->work_on[work_of(k)] && !r->c[s][k].n)
                fprintf(f, "  %s %s failed: %s\n", stack_names[s], ph_result_name(k),
                        r->c[s][k].why);
}

/* ---- goals ----------------------------------------------------------------------------------- */

struct goal {
    char text[480];
    bool met;
};

/* hotpath at least `min` times the better peer in every speed row. */
static void goal_ratio(const struct peers_report *r, double min, const char *what, struct goal *g)
{
    char rows[320] = "";
    int measured = 0, short_of = 0, missing = 0;
    for (int k = 0; k < PH_NRESULT; k++) {
        if (!speed_row(k) || !r->work_on[k])
            continue;
        size_t l = strlen(rows);
        if (r->ratio[k] > 0) {
            measured++;
            short_of += r->ratio[k] < min;
            snprintf(rows + l, sizeof rows - l, "%s%s %.2fx", l ? ", " : "", ph_result_name(k),
                     r->ratio[k]);
        } else {
            snprintf(rows + l, sizeof rows - l, "%s%s not measured", l ? ", " : "",
                     ph_result_name(k));
            missing++;
        }
    }
    g->met = measured > 0 && short_of == 0 && missing == 0;
    snprintf(g->text, sizeof g->text, "%s (%s)", what, measured ? rows : "no peer measured");
}

static int make_goals(const struct peers_report *r, struct goal g[3])
{
    int n = 0;
    bool speed = false;
    for (int w = 0; w < PH_NWORK; w++)
        speed |= speed_row(w) && r->work_on[w];
    if (speed) {
        goal_ratio(r, GOAL_RATIO,
                   "hotpath >= 2x the better peer in every row: CPU per transaction at 1 "
                   "and 1,000 flows, Gbit/s, connections and echoes per CPU second",
                   &g[n++]);
        goal_ratio(r, 1.0, "first milestone: hotpath never behind any peer (every row >= 1x)",
                   &g[n++]);
    }
    if (!r->work_on[PH_IDLE])
        return n;
    const struct cell *rss = &r->c[ST_HOTPATH][PH_IDLE], *acc = &r->c[ST_HOTPATH][PH_IDLE + 1];
    const struct cell *held = &r->c[ST_HOTPATH][PH_IDLE + 2];
    struct goal *m = &g[n++];
    m->met = held->n && held->med <= GOAL_IDLE_BYTES;
    if (held->n)
        snprintf(
            m->text, sizeof m->text,
            "hotpath's memory per idle established connection, everything it holds for it, <= %d B "
            "(RSS growth %.0f B, its own accounting %.0f B per connection endpoint)",
            GOAL_IDLE_BYTES, rss->med, acc->med);
    else
        snprintf(m->text, sizeof m->text,
                 "hotpath's memory per idle established connection <= %d B (not measured)",
                 GOAL_IDLE_BYTES);
    return n;
}

int peers_print_goals(const struct peers_report *r, FILE *f, bool md)
{
    struct goal g[3];
    int n = make_goals(r, g), missed = 0;
    for (int i = 0; i < n; i++) {
        fprintf(f, md ? "- %s: %s\n" : "  [%s] %s\n", g[i].met ? (md ? "met" : " met ") : "MISSED",
                g[i].text);
        missed += !g[i].met;
    }
    return missed;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static json_t *json_head(const struct peers_report *r)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    json_t *root =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:i}", "bench", "peers", "cpu", cpu,
                  "compiler", tool_compiler(), "flags", tool_build_flags(), "reps", r->reps,
                  "round_s", r->secs, "warmup_s", r->warm, "cpu_pinned", r->cpu);
    json_t *stacks = json_array();
    for (int s = 0; s < NSTACK; s++) {
        json_t *o = json_pack("{s:s, s:b}", "stack", stack_names[s], "selected", r->stack_on[s]);
        if (r->skip[s][0])
            json_object_set_new(o, "skipped", json_string(r->skip[s]));
        else
            json_object_set_new(o, "version", json_string(r->version[s]));
        json_array_append_new(stacks, o);
    }
    json_object_set_new(root, "stacks", stacks);
    return root;
}

static json_t *json_cell(const struct peers_report *r, int s, int k)
{
    const struct cell *c = &r->c[s][k];
    json_t *o = json_pack("{s:s, s:s, s:s}", "stack", stack_names[s], "workload", ph_result_name(k),
                          "unit", ph_result_unit(k));
    if (!c->n) {
        json_object_set_new(o, "value", json_null());
        json_object_set_new(o, "failed", json_string(c->why));
        return o;
    }
    json_t *samples = json_array();
    for (int i = 0; i < c->n; i++)
        json_array_append_new(samples, json_real(c->v[i]));
    json_object_set_new(o, "value", json_real(c->med));
    json_object_set_new(o, "samples", samples);
    json_object_set_new(o, "count", json_integer((json_int_t)c->count));
    if (k == PH_IDLE + 2)
        json_object_set_new(o, "derived", json_string("max(idle_rss, idle_accounted), run by run"));
    if (speed_row(k)) {
        json_object_set_new(o, "frames", json_integer((json_int_t)c->frames));
        json_object_set_new(o, "cpu_s", json_real(c->cpu_s));
    }
    return o;
}

void peers_print_json(const struct peers_report *r, FILE *f)
{
    json_t *root = json_head(r), *results = json_array(), *ratios = json_array(),
           *goals = json_array();
    for (int k = 0; k < PH_NRESULT; k++) {
        if (!r->work_on[work_of(k)])
            continue;
        for (int s = 0; s < NSTACK; s++)
            if (r->stack_on[s] && !r->skip[s][0])
                json_array_append_new(results, json_cell(r, s, k));
        json_t *q = json_pack("{s:s, s:b}", "workload", ph_result_name(k), "higher_is_better",
                              ph_result_higher_better(k));
        json_object_set_new(q, "better_peer",
                            r->best[k] >= 0 ? json_string(stack_names[r->best[k]]) : json_null());
        json_object_set_new(q, "hotpath_vs_better_peer",
                            r->ratio[k] > 0 ? json_real(r->ratio[k]) : json_null());
        json_array_append_new(ratios, q);
    }
    struct goal g[3];
    int n = make_goals(r, g);
    for (int i = 0; i < n; i++)
        json_array_append_new(goals, json_pack("{s:s, s:b}", "goal", g[i].text, "met", g[i].met));
    json_object_set_new(root, "results", results);
    json_object_set_new(root, "ratios", ratios);
    json_object_set_new(root, "goals", goals);
    json_dumpf(root, f, JSON_COMPACT | JSON_REAL_PRECISION(6));
    fputc('\n', f);
    json_decref(root);
}

/* ---- the command ---------------------------------------------------------------------------- */

int bench_peers(const struct bench_opts *o, FILE *table)
{
    struct peers_report *r = peers_report_run(o);
    if (!r) {
        fprintf(stderr, "hotpath bench peers: out of memory\n");
        return 1;
    }
    if (o->json)
        peers_print_json(r, stdout);
    if (o->json_out)
        peers_print_json(r, o->json_out);
    if (!o->json) {
        fprintf(table, "\n== peers: hotpath, lwIP and smoltcp on the same workloads and harness\n");
        peers_print_header(r, table);
        fputc('\n', table);
        peers_print_table(r, table, false);
        fprintf(table, "\ngoals\n");
        peers_print_goals(r, table, false);
    }
    int rc = peers_report_ok(r) ? 0 : 1;
    peers_report_free(r);
    return rc;
}
