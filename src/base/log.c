/* SPDX-License-Identifier: BSD-3-Clause */
/* The log hook, the default stderr writer, the last error of each thread, and HP_ASSERT's failure path. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/log.h>

#include "debug.h"

static void default_fn(void *ctx, enum hp_log_level level, const char *subsys, const char *msg)
{
    (void)ctx;
    (void)level;
    /* One fprintf per line: stdio locks the stream, so lines from two
     * threads do not interleave. */
    fprintf(stderr, "hotpath: %s: %s\n", subsys, msg);
}

/* The hook and its context change together: both behind one pointer. */
struct hook {
    hp_log_fn fn;
    void *ctx;
};
static struct hook default_hook = {default_fn, NULL};
static struct hook hooks[2];
static _Atomic(struct hook *) current = &default_hook;
static atomic_int hook_slot;
static atomic_int max_level = HP_LOG_WARN;
static _Thread_local char last_error[256] = "no error";

HP_API void hp_set_log_fn(hp_log_fn fn, void *ctx)
{
    if (!fn) {
        atomic_store_explicit(&current, &default_hook, memory_order_release);
        return;
    }
    /* Two slots, alternated, so that a logger still reading the previous
     * hook sees it whole. */
    int slot = atomic_fetch_add_explicit(&hook_slot, 1, memory_order_relaxed) & 1;
    hooks[slot].fn = fn;
    hooks[slot].ctx = ctx;
    atomic_store_explicit(&current, &hooks[slot], memory_order_release);
}

HP_API void hp_set_log_level(enum hp_log_level level)
{
    atomic_store_explicit(&max_level, (int)level, memory_order_relaxed);
}

HP_API enum hp_log_level hp_log_level(void)
{
    return (enum hp_log_level)atomic_load_explicit(&max_level, memory_order_relaxed);
}

HP_API const char *hp_log_level_name(enum hp_log_level level)
{
    switch (level) {
    case HP_LOG_ERR:
        return "err";
    case HP_LOG_WARN:
        return "warn";
    case HP_LOG_INFO:
        return "info";
    case HP_LOG_DEBUG:
        return "debug";
    }
    return "?";
}

HP_API const char *hp_last_error(void)
{
    return last_error;
}

bool hp__log_enabled(enum hp_log_level level)
{
    return (int)level <= atomic_load_explicit(&max_level, memory_order_relaxed);
}

void hp__vlog(enum hp_log_level level, const char *subsys, const char *fmt, va_list ap)
{
    if (!hp__log_enabled(level))
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct hook *h = atomic_load_explicit(&current, memory_order_acquire);
    h->fn(h->ctx, level, subsys, msg);
}

void hp__log(enum hp_log_level level, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hp__vlog(level, subsys, fmt, ap);
    va_end(ap);
}

static void record(const char *subsys, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    hp__vlog(HP_LOG_DEBUG, subsys, fmt, copy);
    va_end(copy);
}

int hp__fail(int err, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(subsys, fmt, ap);
    va_end(ap);
    return -err;
}

void *hp__fail_null(int err, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(subsys, fmt, ap);
    va_end(ap);
    errno = err;
    return NULL;
}

void hp__assert_fail(const char *cond, const char *file, int line, const char *func)
{
    hp__log(HP_LOG_ERR, "assert", "%s:%d: %s: invariant broken: %s", file, line, func, cond);
    abort();
}

/* HP_LOG_LEVEL=err|warn|info|debug at start-up. */
__attribute__((constructor)) static void log_init(void)
{
    const char *e = getenv("HP_LOG_LEVEL");
    if (!e || !*e)
        return;
    static const enum hp_log_level levels[] = {HP_LOG_ERR, HP_LOG_WARN, HP_LOG_INFO, HP_LOG_DEBUG};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (strcmp(e, hp_log_level_name(levels[i])) == 0) {
            hp_set_log_level(levels[i]);
            return;
        }
    hp__log(HP_LOG_WARN, "log", "HP_LOG_LEVEL=%s: not err, warn, info or debug; using warn", e);
}

#include "fence.h"
#ifdef HP__TSAN
/* The location every hp__fence_seq_cst() of a TSan build goes through. */
_Atomic unsigned hp__tsan_fence_word;
#endif
