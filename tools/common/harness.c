/* SPDX-License-Identifier: BSD-3-Clause */
/* The benchmark harness: phases and measured windows, rounds of rows with retries, medians and quantiles, goals, JSON and tables. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/cpu.h>

#include "harness.h"
#include "tool.h"

/* ---- phases and windows ------------------------------------------------- */

void hb_sleep(double s)
{
    if (!(s > 0))
        return;
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

double hb_phases_run(_Atomic int *phase, double warm_s, double secs, void (*at_open)(void),
                     void (*at_close)(void))
{
    atomic_store_explicit(phase, HB_WARM, memory_order_release);
    hb_sleep(warm_s);
    double t0 = tool_now_s();
    if (at_open)
        at_open();
    atomic_store_explicit(phase, HB_MEASURE, memory_order_release);
    hb_sleep(secs);
    atomic_store_explicit(phase, HB_STOP, memory_order_release);
    if (at_close)
        at_close();
    return tool_now_s() - t0;
}

void hb_window_init(struct hb_window *w)
{
    memset(w, 0, sizeof *w);
    w->seen = HB_SETUP;
}

bool hb_window_watch(struct hb_window *w, int phase, const uint64_t *counters, int ncounters)
{
    if (phase == w->seen)
        return phase == HB_STOP;
    if (phase == HB_MEASURE) {
        w->t0 = tool_now_s();
        w->c0 = tool_thread_cpu_s();
        for (int i = 0; i < ncounters && i < HB_COUNTERS; i++)
            w->n0[i] = counters[i];
    } else if (phase == HB_STOP && w->seen == HB_MEASURE) {
        w->secs = tool_now_s() - w->t0;
        w->cpu_s = tool_thread_cpu_s() - w->c0;
        for (int i = 0; i < ncounters && i < HB_COUNTERS; i++)
            w->n[i] = counters[i] - w->n0[i];
        w->measured = true;
    }
    w->seen = phase;
    return phase == HB_STOP;
}

bool hb_window_poll(struct hb_window *w, _Atomic int *phase, const uint64_t *counters,
                    int ncounters)
{
    return hb_window_watch(w, atomic_load_explicit(phase, memory_order_acquire), counters,
                           ncounters);
}

int hb_server_start(struct hb_server *s, void *(*fn)(void *), void *arg, double timeout_s)
{
    atomic_init(&s->state, 0);
    atomic_init(&s->stop, 0);
    s->started = pthread_create(&s->th, NULL, fn, arg) == 0;
    if (!s->started)
        return -EAGAIN;
    double deadline = tool_now_s() + timeout_s;
    while (atomic_load(&s->state) == 0 && tool_now_s() < deadline)
        hb_sleep(0.001);
    if (atomic_load(&s->state) == 1)
        return 0;
    hb_server_stop(s);
    return -ETIMEDOUT;
}

void hb_server_stop(struct hb_server *s)
{
    if (!s->started)
        return;
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    s->started = false;
}

bool hb_server_stopping(struct hb_server *s)
{
    return atomic_load_explicit(&s->stop, memory_order_relaxed) != 0;
}

void hb_clock_start(struct hb_clock *c, double warm_s, double secs, unsigned every)
{
    memset(c, 0, sizeof *c);
    c->now = tool_now_s();
    c->warm_end = c->now + warm_s;
    c->end = secs; /* from the window's opening */
    c->mask = every > 1 ? every - 1 : 0;
}

int hb_clock_tick(struct hb_clock *c)
{
    if ((c->iter++ & c->mask) != 0)
        return c->measuring ? HB_TICK_MEASURE : HB_TICK_WARM;
    c->now = tool_now_s();
    if (!c->measuring) {
        if (c->now < c->warm_end)
            return HB_TICK_WARM;
        c->measuring = true;
        c->t0 = c->now;
        c->c0 = tool_thread_cpu_s();
        c->end += c->now;
        return HB_TICK_OPEN;
    }
    if (c->now < c->end)
        return HB_TICK_MEASURE;
    hb_clock_close(c);
    return HB_TICK_CLOSE;
}

void hb_clock_close(struct hb_clock *c)
{
    if (!c->measuring)
        return;
    c->measuring = false;
    c->secs = tool_now_s() - c->t0;
    c->cpu_s = tool_thread_cpu_s() - c->c0;
}

/* ---- medians and quantiles ---------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double hb_quantile(const double *v, int n, double q)
{
    if (n <= 0)
        return 0;
    double s[HB_MAX_REPS * 4];
    double *w = n <= (int)(sizeof s / sizeof s[0]) ? s : malloc((size_t)n * sizeof *w);
    if (!w)
        return 0;
    memcpy(w, v, (size_t)n * sizeof *w);
    qsort(w, (size_t)n, sizeof *w, cmp_double);
    double pos = (q < 0 ? 0 : q > 1 ? 1 : q) * (n - 1);
    int i = (int)pos;
    double r = i + 1 < n ? w[i] + (w[i + 1] - w[i]) * (pos - i) : w[i];
    if (w != s)
        free(w);
    return r;
}

double hb_median(const double *v, int n)
{
    return hb_quantile(v, n, 0.5);
}

/* ---- rounds of rows ----------------------------------------------------- */

/* One round of one row, again while disturbed. 0 with the least disturbed
 * attempt in v, 1 (the row is skipped), -1 (failed). */
static int one_round(struct hb_rounds *h, struct hb_row *row, int k, hb_round_fn fn, void *ctx,
                     double *v, double *disturbed)
{
    int attempts = h->attempts > 1 ? h->attempts : 1;
    *disturbed = 2;
    for (int a = 0; a < attempts; a++) {
        double got[HB_MAX_VALUES] = {0}, dist = 0;
        char why[240] = "";
        int rc = fn(ctx, k, got, &dist, why, sizeof why);
        if (rc > 0) {
            snprintf(row->why, sizeof row->why, "%s", why[0] ? why : "cannot run here");
            return 1;
        }
        if (rc < 0) {
            snprintf(h->failed, sizeof h->failed, "%s", why[0] ? why : "failed");
            return -1;
        }
        if (dist < *disturbed) {
            *disturbed = dist;
            memcpy(v, got, sizeof got);
        }
        if (dist <= h->max_disturbed || a + 1 == attempts)
            break;
        h->retried++;
        hb_sleep(h->retry_pause_s);
    }
    return 0;
}

static void summarise(const struct hb_rounds *h, struct hb_row *rows)
{
    for (int k = 0; k < h->nrows; k++) {
        struct hb_row *r = &rows[k];
        for (int i = 0; i < h->nvalues; i++) {
            r->median[i] = hb_median(r->v[i], r->n);
            r->sum[i] = r->max[i] = 0;
            for (int j = 0; j < r->n; j++) {
                r->sum[i] += r->v[i][j];
                if (j == 0 || r->v[i][j] > r->max[i])
                    r->max[i] = r->v[i][j];
            }
        }
        if (!r->n && !r->why[0])
            snprintf(r->why, sizeof r->why, "not measured");
    }
}

int hb_rounds_run(struct hb_rounds *h, struct hb_row *rows, hb_round_fn fn, void *ctx)
{
    int reps = h->reps < 1 ? 1 : h->reps > HB_MAX_REPS ? HB_MAX_REPS : h->reps;
    int first = h->warm_round ? -1 : 0, total = reps * h->nrows, done = 0;
    h->retried = 0;
    h->worst_disturbed = 0;
    h->failed[0] = '\0';
    for (int k = 0; k < h->nrows; k++)
        rows[k].n = 0;
    for (int rep = first; rep < reps && !h->failed[0]; rep++)
        for (int i = 0; i < h->nrows && !h->failed[0]; i++) {
            int k = h->rotate && rep > 0 ? (i + rep) % h->nrows : i;
            struct hb_row *row = &rows[k];
            if (h->progress && rep >= 0)
                h->progress(h->progress_ctx, done++, total, row->name);
            if (row->why[0])
                continue;
            double v[HB_MAX_VALUES], dist;
            if (one_round(h, row, k, fn, ctx, v, &dist) != 0 || rep < 0)
                continue;
            for (int j = 0; j < h->nvalues; j++)
                row->v[j][row->n] = v[j];
            row->n++;
            if (dist > h->worst_disturbed)
                h->worst_disturbed = dist;
        }
    if (h->progress)
        h->progress(h->progress_ctx, total, total, "done");
    summarise(h, rows);
    return h->failed[0] ? -1 : 0;
}

void hb_rounds_notes(FILE *f, const struct hb_rounds *h, const char *who)
{
    if (h->retried)
        fprintf(f, "note:       %d rounds run again: %s over %.0f%% of the time\n", h->retried, who,
                100 * h->max_disturbed);
    if (h->worst_disturbed > h->max_disturbed)
        fprintf(f,
                "note:       in the worst round kept, %s %.0f%% of the time: this machine is "
                "busy,\n            compare with care\n",
                who, 100 * h->worst_disturbed);
}

/* ---- goals, JSON and tables --------------------------------------------- */

void hb_goal(struct hb_goals *gs, bool met, const char *fmt, ...)
{
    if (gs->n == HB_MAX_GOALS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gs->g[gs->n].text, sizeof gs->g[0].text, fmt, ap);
    va_end(ap);
    gs->g[gs->n++].met = met;
}

int hb_goals_missed(const struct hb_goals *gs)
{
    int n = 0;
    for (int i = 0; i < gs->n; i++)
        n += !gs->g[i].met;
    return n;
}

json_t *hb_goals_json(const struct hb_goals *gs)
{
    json_t *a = json_array();
    for (int i = 0; i < gs->n; i++)
        json_array_append_new(a,
                              json_pack("{s:s, s:b}", "goal", gs->g[i].text, "met", gs->g[i].met));
    return a;
}

void hb_json_goals(json_t *j, const struct hb_goals *gs)
{
    json_object_set_new(j, "goal_met", json_boolean(gs->n > 0 && gs->g[0].met));
    json_object_set_new(j, "goals", hb_goals_json(gs));
}

void hb_goals_table(const struct hb_goals *gs, FILE *f)
{
    fprintf(f, "\ngoals\n");
    for (int i = 0; i < gs->n; i++)
        fprintf(f, "  [%s] %s\n", gs->g[i].met ? " met " : "MISSED", gs->g[i].text);
}

json_t *hb_json_head(const char *bench)
{
    json_t *j = json_object();
    json_object_set_new(j, "bench", json_string(bench));
    tool_json_build(j);
    return j;
}

void hb_json_emit(json_t *j, bool to_stdout, FILE *also)
{
    if (to_stdout)
        tool_json_write(j, stdout, false);
    if (also)
        tool_json_write(j, also, false);
    json_decref(j);
}

void hb_table_head(FILE *f, const char *title)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "\n== %s\n", title);
    fprintf(f, "cpu:        %s\ncompiler:   %s\nflags:      %s\n", cpu, tool_compiler(),
            tool_build_flags());
}

void hb_table_cols(FILE *f, int name_width, const char *name_head, const struct hb_col *c, int n)
{
    fprintf(f, "  %-*s", name_width, name_head);
    for (int i = 0; i < n; i++)
        fprintf(f, " %*s", c[i].width, c[i].head);
    fputc('\n', f);
}

void hb_table_row(FILE *f, int name_width, const char *name, const struct hb_col *c, int n,
                  const double *v)
{
    fprintf(f, "  %-*s", name_width, name);
    for (int i = 0; i < n; i++) {
        const char *unit = c[i].unit ? c[i].unit : "";
        int w = c[i].width - (int)strlen(unit);
        if (isfinite(v[i]))
            fprintf(f, " %*.*f%s", w > 0 ? w : 1, c[i].decimals, v[i], unit);
        else
            fprintf(f, " %*s", c[i].width, "-"); /* not measured */
    }
    fputc('\n', f);
}

void hb_table_skip(FILE *f, int name_width, const char *name, const char *what, const char *why)
{
    fprintf(f, "  %-*s %s: %s\n", name_width, name, what, why);
}
