/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of the reasons the wire layer refuses a packet. */
#include <hotpath/wire/common.h>

HP_API const char *hp_wire_reason(int reason)
{
    static const char *const names[HP_WIRE_NREASONS] = {
        "truncated",   "bad-version", "bad-length",  "bad-checksum", "bad-option",
        "bad-address", "bad-field",   "unsupported", "no-space",
    };
    _Static_assert(HP_WIRE_NO_SPACE - HP_WIRE_REASON_BASE == HP_WIRE_NREASONS,
                   "one name per reason");
    if (reason < 0)
        reason = -reason;
    if (reason == HP_WIRE_OK)
        return "ok";
    return hp_wire_is_reason(reason) ? names[reason - HP_WIRE_REASON_BASE - 1] : "unknown";
}
