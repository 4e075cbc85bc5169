/* SPDX-License-Identifier: BSD-3-Clause */
/* What serve and connect share to run on the event loop: the --spin-us option, SIGINT / SIGTERM stopping the loops, the loop's counters as JSON. */
#ifndef HOTPATH_TOOL_APPLOOP_H
#define HOTPATH_TOOL_APPLOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <hotpath/loop.h>
#include <hotpath/stack.h>

/* The help line of --spin-us. */
#define APPLOOP_SPIN_HELP                                                                          \
    "  --spin-us N       busy-poll N microseconds after the last packet before sleeping\n"         \
    "                    (default 50; 0: sleep at once; 'forever': never sleep, a core at\n"       \
    "                    100%%; docs/knobs.md)\n"

/* Parse --spin-us: microseconds up to 10 s, or "forever". 0, or 2 after
 * printing a usage error for cmd. */
int apploop_parse_spin(const char *cmd, const char *arg, uint32_t *spin_us);

/* A loop on stack s with the given busy-poll time. NULL after printing why. */
struct hp_loop *apploop_create(const char *cmd, struct hp_stack *s, uint32_t spin_us);

/* SIGINT and SIGTERM set the interrupted flag and stop every loop given
 * here (at most 4, until apploop_signals_forget). */
void apploop_signals(struct hp_loop *l);
/* Forget the loops (before destroying them); the flag stays. */
void apploop_signals_forget(void);
bool apploop_interrupted(void);
/* The flag SIGINT / SIGTERM set, for code that polls it (memifopt_wait_up). */
volatile sig_atomic_t *apploop_interrupt_flag(void);

/* The loop's counters as a JSON object (new reference). */
json_t *apploop_stats_json(const struct hp_loop *l);

/* Print a JSON value on one line to stdout (and free it). */
void apploop_print_json(json_t *v);

#endif
