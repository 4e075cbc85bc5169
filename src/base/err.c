/* SPDX-License-Identifier: BSD-3-Clause */
/* hp_strerror: text for the -errno values hotpath calls return. */
#include <string.h>

#include <hotpath/err.h>

#include "internal.h"

/* The wire layer's reasons, HP_ERR_WIRE_BASE + 1 .. (wire/common.h). */
static const char *const wire_reasons[] = {
    "packet truncated",
    "bad protocol version or type",
    "impossible length field",
    "bad checksum",
    "malformed option or extension header",
    "address not allowed here",
    "field value not allowed",
    "well formed but unsupported",
    "no space to write the packet",
};

HP_API const char *hp_strerror(int err)
{
    if (err < 0)
        err = -err;
    if (err == 0)
        return "success";
    if (err > HP_ERR_WIRE_BASE) {
        unsigned i = (unsigned)(err - HP_ERR_WIRE_BASE - 1);
        return i < sizeof wire_reasons / sizeof wire_reasons[0] ? wire_reasons[i] : "unknown error";
    }
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
