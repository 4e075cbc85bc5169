/* SPDX-License-Identifier: BSD-3-Clause */
/* What serve and connect share to run on the event loop: the --spin-us option, SIGINT / SIGTERM stopping the loops, the loop's counters as JSON. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/err.h>
#include <hotpath/log.h>

#include "apploop.h"
#include "tool.h"

#define MAX_LOOPS 4

static volatile sig_atomic_t interrupted;
/* Read by the handler: each slot is set before the handler can see it and
 * cleared before its loop is destroyed. */
static struct hp_loop *_Atomic loops[MAX_LOOPS];

int apploop_parse_spin(const char *cmd, const char *arg, uint32_t *spin_us)
{
    if (strcmp(arg, "forever") == 0) {
        *spin_us = HP_LOOP_SPIN_FOREVER;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end || !*arg || arg[0] == '-' || v > 10000000)
        return tool_usage_error(
            cmd, "--spin-us wants microseconds from 0 to 10000000, or 'forever', not '%s'", arg);
    *spin_us = (uint32_t)v;
    return 0;
}

struct hp_loop *apploop_create(const char *cmd, struct hp_stack *s, uint32_t spin_us)
{
    struct hp_loop_config c = {.spin_us = spin_us, .flags = spin_us ? 0 : HP_LOOP_F_NO_SPIN};
    struct hp_loop *l = hp_loop_create(s, &c);
    if (!l)
        fprintf(stderr, "hotpath %s: cannot create the event loop: %s\n", cmd, hp_last_error());
    return l;
}

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
    for (int i = 0; i < MAX_LOOPS; i++) {
        struct hp_loop *l = atomic_load(&loops[i]);
        if (l)
            hp_loop_stop(l);
    }
}

void apploop_signals(struct hp_loop *l)
{
    for (int i = 0; i < MAX_LOOPS; i++) {
        struct hp_loop *none = NULL;
        if (atomic_compare_exchange_strong(&loops[i], &none, l))
            break;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A signal that came before the loop was known. */
    if (interrupted)
        hp_loop_stop(l);
}

void apploop_signals_forget(void)
{
    for (int i = 0; i < MAX_LOOPS; i++)
        atomic_store(&loops[i], NULL);
}

volatile sig_atomic_t *apploop_interrupt_flag(void)
{
    return &interrupted;
}

bool apploop_interrupted(void)
{
    return interrupted != 0;
}

json_t *apploop_stats_json(const struct hp_loop *l)
{
    struct hp_loop_stats st;
    hp_loop_stats(l, &st);
    json_t *o = json_object();
    json_object_set_new(o, "spin_us",
                        json_integer(hp_loop_spin_us(l) == HP_LOOP_SPIN_FOREVER
                                         ? -1
                                         : (json_int_t)hp_loop_spin_us(l)));
    json_object_set_new(o, "polls", json_integer((json_int_t)st.polls));
    json_object_set_new(o, "idle_polls", json_integer((json_int_t)st.idle_polls));
    json_object_set_new(o, "sleeps", json_integer((json_int_t)st.sleeps));
    json_object_set_new(o, "link_wakes", json_integer((json_int_t)st.link_wakes));
    json_object_set_new(o, "wake_signals", json_integer((json_int_t)st.wake_signals));
    return o;
}

void apploop_print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_REAL_PRECISION(10));
    if (s) {
        puts(s);
        free(s);
    }
    json_decref(v);
    fflush(stdout);
}
