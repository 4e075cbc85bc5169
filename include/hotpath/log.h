/* SPDX-License-Identifier: BSD-3-Clause */
/* Diagnostics: one log hook for the whole library, and the reason for the last failed call. */
#ifndef HOTPATH_LOG_H
#define HOTPATH_LOG_H

#include <hotpath/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Everything the library has to say goes through one hook:
 *
 * - HP_LOG_ERR / HP_LOG_WARN: events nobody asked about and no return value
 *   can carry: a buffer freed twice or written after its free, a pool
 *   destroyed with buffers out, a bad environment variable, a link whose
 *   device went away.
 * - HP_LOG_DEBUG: the reason for each failed call (hp_link_open() cannot
 *   open an interface, hp_pool_create() refuses a configuration...), which
 *   the caller also gets as a return value and errno, and, as text, from
 *   hp_last_error().
 *
 * The default hook writes "hotpath: SUBSYSTEM: MESSAGE" lines to stderr for
 * levels up to HP_LOG_WARN (HP_LOG_LEVEL=err|warn|info|debug in the
 * environment changes that at start-up; hp_set_log_level() at run time).
 */
enum hp_log_level {
    HP_LOG_ERR = 3,   /**< something went wrong that the caller could not be told */
    HP_LOG_WARN = 4,  /**< something odd that the library worked around */
    HP_LOG_INFO = 6,  /**< state changes worth knowing (a link up or down) */
    HP_LOG_DEBUG = 7, /**< the reasons behind failed calls; traces */
};

/**
 * A log hook: level, the subsystem ("pool", "link", "afxdp", "tcp"...) and
 * one line of text without a newline. Called from whichever thread logs,
 * possibly several at once; msg is valid during the call only.
 */
typedef void (*hp_log_fn)(void *ctx, enum hp_log_level level, const char *subsys, const char *msg);

/**
 * Install a hook (NULL: the default, stderr). Messages above the level set
 * by hp_set_log_level() never reach it. Set it before other threads use
 * the library; changing it while they log is safe but a message may still
 * reach the previous hook.
 */
HP_API void hp_set_log_fn(hp_log_fn fn, void *ctx);

/** The most verbose level that reaches the hook (default HP_LOG_WARN). */
HP_API void hp_set_log_level(enum hp_log_level level);
HP_API enum hp_log_level hp_log_level(void);

/** "err", "warn", "info" or "debug"; "?" for anything else. */
HP_API const char *hp_log_level_name(enum hp_log_level level);

/**
 * The reason for the last failed hotpath call on this thread, as a
 * sentence naming what failed and what to do ("afxdp: needs CAP_NET_ADMIN
 * and CAP_NET_RAW: run as root"); "no error" before any. Never NULL; valid
 * until the next failure on this thread.
 */
HP_API const char *hp_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
