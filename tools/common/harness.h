/* SPDX-License-Identifier: BSD-3-Clause */
/* The benchmark harness: the measured window with its warm-up, rounds of rows with retries, medians and quantiles, and the JSON and table writer. */
#ifndef HOTPATH_HARNESS_H
#define HOTPATH_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/*
 * Every measurement of the command and the benchmarks has the same shape:
 * set up, run unmeasured for a while (caches, rings, the kernel's first
 * allocations), then measure a window of wall time, thread CPU time and
 * counters, then stop. Two ways to drive it:
 *
 *   - threads watching a phase a coordinator sets (hb_phases_run), each
 *     taking its own window with hb_window_watch;
 *   - a loop that times itself (hb_clock_tick), for one thread.
 *
 * Rows (hotpath and its peers) are then measured in rounds, alternating,
 * a disturbed round run again (hb_rounds_run), and reported as medians.
 */

/* ---- phases: a coordinator opens and closes the window, workers watch ---- */

enum { HB_SETUP = 0, HB_WARM, HB_MEASURE, HB_STOP };

/* Sleep for s seconds (through signals). */
void hb_sleep(double s);

/* Set *phase to HB_WARM, sleep warm_s, set HB_MEASURE, sleep secs, set
 * HB_STOP. at_open runs right before the window opens and at_close right
 * after it closes (NULL: nothing). Returns the window's wall time. */
double hb_phases_run(_Atomic int *phase, double warm_s, double secs, void (*at_open)(void),
                     void (*at_close)(void));

#define HB_COUNTERS 2

/* What one worker measured over the window: its wall time, its thread's
 * CPU time and how far its counters moved. */
struct hb_window {
    int seen; /* the phase last seen */
    double t0, c0;
    uint64_t n0[HB_COUNTERS];
    bool measured; /* the worker saw the window open and close */
    double secs, cpu_s;
    uint64_t n[HB_COUNTERS];
};

void hb_window_init(struct hb_window *w);
/* Look at phase: as it turns HB_MEASURE take the start (time, thread CPU,
 * the first ncounters of counters), as it turns HB_STOP the end. true once
 * HB_STOP is seen: the worker should stop. */
bool hb_window_watch(struct hb_window *w, int phase, const uint64_t *counters, int ncounters);
/* hb_window_watch on an atomic phase (acquire). */
bool hb_window_poll(struct hb_window *w, _Atomic int *phase, const uint64_t *counters,
                    int ncounters);

/* ---- a server thread ---- */

/* A thread that serves until stopped: it sets state to 1 once ready (or
 * -1 when it fails) and returns once stop is set. */
struct hb_server {
    pthread_t th;
    bool started;
    _Atomic int state; /* 0 starting, 1 serving, -1 failed */
    _Atomic int stop;
};

/* Start fn(arg) and wait up to timeout_s until it is ready. 0, -EAGAIN
 * when no thread could start, -ETIMEDOUT when it failed or was late (then
 * it is stopped again). */
int hb_server_start(struct hb_server *s, void *(*fn)(void *), void *arg, double timeout_s);
/* Set stop and join (a no-op when it is not running). */
void hb_server_stop(struct hb_server *s);
/* Whether the server should stop (relaxed: polled in its loop). */
bool hb_server_stopping(struct hb_server *s);

/* ---- a loop that times itself ---- */

struct hb_clock {
    double now; /* the time last read */
    double warm_end, end, t0, c0;
    unsigned mask, iter;
    bool measuring;
    double secs, cpu_s; /* the window's, once closed */
};

enum { HB_TICK_WARM, HB_TICK_OPEN, HB_TICK_MEASURE, HB_TICK_CLOSE };

/* warm_s unmeasured from now, then a window of secs; the clock is read
 * every `every` ticks (a power of two; 1: every tick). */
void hb_clock_start(struct hb_clock *c, double warm_s, double secs, unsigned every);
/* Call once per iteration of the loop. HB_TICK_OPEN: the window just
 * opened (take the counters' start); HB_TICK_CLOSE: it closed (secs and
 * cpu_s are set): leave the loop. Otherwise HB_TICK_WARM or HB_TICK_MEASURE. */
int hb_clock_tick(struct hb_clock *c);
/* Close the window now (an error, a signal); sets secs and cpu_s (0 when
 * it never opened). */
void hb_clock_close(struct hb_clock *c);

/* ---- samples: medians and quantiles ---- */

/* The q-quantile (0..1) of v[0..n-1], interpolated between order
 * statistics; v is left as it was. 0 when n <= 0. */
double hb_quantile(const double *v, int n, double q);
/* The median (hb_quantile at 0.5). */
double hb_median(const double *v, int n);

/* ---- rounds of rows ---- */

#define HB_MAX_REPS   64
#define HB_MAX_VALUES 8

/* One row (hotpath, or a peer): the values of every round kept, and per
 * value their median, sum and maximum. */
struct hb_row {
    const char *name;
    char why[240]; /* why the row was skipped, "" when it ran */
    int n;         /* rounds kept */
    double v[HB_MAX_VALUES][HB_MAX_REPS];
    double median[HB_MAX_VALUES], sum[HB_MAX_VALUES], max[HB_MAX_VALUES];
};

/* One round of one row: 0 with the round's values in v[] and the share of
 * it that other work disturbed in *disturbed (0: none, or not known); 1
 * when the row cannot run here (why set: the row is skipped from then on);
 * -1 on a failure (why set: the rounds stop). */
typedef int (*hb_round_fn)(void *ctx, int row, double *v, double *disturbed, char *why,
                           size_t whylen);

struct hb_rounds {
    int reps;             /* rounds of every row (1 .. HB_MAX_REPS) */
    int nrows, nvalues;   /* nvalues <= HB_MAX_VALUES */
    bool rotate;          /* the first row of each round rotates */
    bool warm_round;      /* a first round of every row, not kept */
    int attempts;         /* a disturbed round is run up to this many times (0, 1: once) */
    double max_disturbed; /* ... when it was more disturbed than this; the least disturbed is kept */
    double retry_pause_s; /* let a passing job pass before the next attempt */
    void (*progress)(void *ctx, int done, int total, const char *what);
    void *progress_ctx;
    /* results */
    int retried;            /* rounds run again */
    double worst_disturbed; /* of the rounds kept */
    char failed[240];       /* why the rounds stopped, "" */
};

/* Run the rounds: every round runs each row once (rows skipped drop out),
 * then each row's medians, sums and maxima are filled in. 0, or -1 with
 * h->failed set. */
int hb_rounds_run(struct hb_rounds *h, struct hb_row *rows, hb_round_fn fn, void *ctx);

/* The table's notes on disturbed rounds: how many were run again and, when
 * even the kept ones were disturbed, that the machine is busy. who says by
 * whom ("other processes held the sender's CPU"). */
void hb_rounds_notes(FILE *f, const struct hb_rounds *h, const char *who);

/* ---- goals, and the JSON and table writer ---- */

#define HB_MAX_GOALS 12

struct hb_goals {
    int n;
    struct {
        char text[300];
        bool met;
    } g[HB_MAX_GOALS];
};

void hb_goal(struct hb_goals *gs, bool met, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* How many goals were missed. */
int hb_goals_missed(const struct hb_goals *gs);
/* [{"goal": text, "met": bool}, ...] */
json_t *hb_goals_json(const struct hb_goals *gs);
/* Add "goal_met" (the first goal's) and "goals" to j. */
void hb_json_goals(json_t *j, const struct hb_goals *gs);
/* "\ngoals\n  [ met ] text\n  [MISSED] text\n..." */
void hb_goals_table(const struct hb_goals *gs, FILE *f);

/* {"bench": name, "cpu": ..., "compiler": ..., "flags": ...}: the head of
 * every benchmark's JSON. */
json_t *hb_json_head(const char *bench);
/* Write j to stdout when to_stdout, and to also when not NULL; j is
 * released. */
void hb_json_emit(json_t *j, bool to_stdout, FILE *also);

/* "\n== title\ncpu: ...\ncompiler: ...\nflags: ...\n": the head of every
 * benchmark's table. */
void hb_table_head(FILE *f, const char *title);

/* A table column: its heading, width and decimals; unit is printed after
 * the number ("x" for ratios). */
struct hb_col {
    const char *head;
    int width, decimals;
    const char *unit;
};
/* "  NAME  HEAD1 HEAD2 ...": the first column (the row's name) name_width
 * wide, left-aligned. */
void hb_table_cols(FILE *f, int name_width, const char *name_head, const struct hb_col *c, int n);
/* A row of n numbers under those columns ("-" for one that is not finite:
 * not measured). */
void hb_table_row(FILE *f, int name_width, const char *name, const struct hb_col *c, int n,
                  const double *v);
/* A row that was not measured: "  NAME  what: why". */
void hb_table_skip(FILE *f, int name_width, const char *name, const char *what, const char *why);

#endif
