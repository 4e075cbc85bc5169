/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to the library: logging through the hook, failures with a reason, and HP_ASSERT for our own invariants. */
#ifndef HOTPATH_BASE_DEBUG_H
#define HOTPATH_BASE_DEBUG_H

#include <stdarg.h>
#include <stdbool.h>

#include <hotpath/log.h>

/* Log one line through the hook (log.h), when level is enabled. */
void hp__log(enum hp_log_level level, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void hp__vlog(enum hp_log_level level, const char *subsys, const char *fmt, va_list ap);
bool hp__log_enabled(enum hp_log_level level);

/* A failed call: record the reason for hp_last_error(), log it at
 * HP_LOG_DEBUG, and return -err (or set errno = err and return NULL). */
int hp__fail(int err, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void *hp__fail_null(int err, const char *subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * HP_ASSERT(cond): an invariant of our own (never a check of input: bad
 * input is dropped and counted). Live under HP_DEBUG, which the Debug build
 * (and so the sanitizer job of make check) defines: a broken invariant is
 * logged at HP_LOG_ERR with its place and aborts. In release builds the
 * condition is not evaluated.
 */
void hp__assert_fail(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn));
#ifdef HP_DEBUG
#define HP_ASSERT(cond)    ((cond) ? (void)0 : hp__assert_fail(#cond, __FILE__, __LINE__, __func__))
#define HP_DEBUG_ONLY(...) __VA_ARGS__
#else
#define HP_ASSERT(cond) ((void)sizeof(!(cond)))
#define HP_DEBUG_ONLY(...)
#endif

#endif
