/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of the reasons the wire layer refuses a packet. */
#include <hotpath/wire/common.h>

HP_API const char *hp_wire_reason(int reason)
{
    static const char *const names[HP_WIRE_NREASONS] = {
        [HP_WIRE_OK] = "ok",
        [HP_WIRE_TRUNCATED] = "truncated",
        [HP_WIRE_BAD_VERSION] = "bad-version",
        [HP_WIRE_BAD_LENGTH] = "bad-length",
        [HP_WIRE_BAD_CHECKSUM] = "bad-checksum",
        [HP_WIRE_BAD_OPTION] = "bad-option",
        [HP_WIRE_BAD_ADDRESS] = "bad-address",
        [HP_WIRE_BAD_FIELD] = "bad-field",
        [HP_WIRE_UNSUPPORTED] = "unsupported",
        [HP_WIRE_NO_SPACE] = "no-space",
    };
    if (reason < 0)
        reason = -reason;
    return reason < HP_WIRE_NREASONS ? names[reason] : "unknown";
}
