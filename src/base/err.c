/* SPDX-License-Identifier: BSD-3-Clause */
/* hp_strerror: text for the -errno values hotpath calls return. */
#include <string.h>

#include <hotpath/err.h>

#include "internal.h"

HP_API const char *hp_strerror(int err)
{
    if (err < 0)
        err = -err;
    if (err == 0)
        return "success";
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    /* strerrordesc_np returns a static string: thread-safe, unlike strerror. */
    const char *s = strerrordesc_np(err);
    return s ? s : "unknown error";
#else
    return strerror(err);
#endif
}

HP_API const char *hp_version(void)
{
    return HP_VERSION_STRING;
}
