/* SPDX-License-Identifier: BSD-3-Clause */
/* Error reporting: every hotpath call returns 0 or a count, or -errno on failure. */
#ifndef HOTPATH_ERR_H
#define HOTPATH_ERR_H

#include <hotpath/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Text for an error returned by a hotpath call: err is a negative errno value
 * (a positive one is accepted too). Never returns NULL; thread-safe; the
 * string is static.
 */
HP_API const char *hp_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
