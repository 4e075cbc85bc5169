/* SPDX-License-Identifier: BSD-3-Clause */
/* Error reporting: one error space for every hotpath call, and its text. */
#ifndef HOTPATH_ERR_H
#define HOTPATH_ERR_H

#include <hotpath/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The contract, followed by every public call:
 *
 * - Calls return 0 or a count (>= 0) on success and a negative value on
 *   failure: -errno (EINVAL, ENOMEM, EAGAIN...) for everything the errno
 *   space can say.
 * - Constructors (hp_pool_create, hp_link_open, hp_stack_create, hp_tcp_open...)
 *   return a pointer, or NULL with errno set to the positive value.
 * - The wire layer's reasons for refusing a packet (-HP_WIRE_*, wire/common.h)
 *   are the only other negative results, and live above the errno range
 *   (from HP_ERR_WIRE_BASE, 0x10000; Linux's errno values end at 4095), so a
 *   value is never both an errno and a reason.
 * - Bad input never aborts: it is refused with one of the above, or, on the
 *   receive path, dropped and counted by reason (hp_stack_counter()).
 * - Diagnostics (a double free, a link that cannot open, a bad environment
 *   variable) go through one log hook (log.h), never straight to stderr.
 *
 * hp_strerror() names every value of this space.
 */
#define HP_ERR_WIRE_BASE 0x10000

/**
 * Text for an error returned by a hotpath call: a negative errno value or
 * wire reason (a positive one is accepted too). Never returns NULL;
 * thread-safe; the string is static.
 */
HP_API const char *hp_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
