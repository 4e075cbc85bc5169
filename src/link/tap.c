/* SPDX-License-Identifier: BSD-3-Clause */
/* The tap link (placeholder until its backend lands). */
#include <errno.h>

#include "internal.h"

struct hp_link *hp__tap_open(const struct hp_link_config *cfg)
{
    (void)cfg;
    return hp__link_fail_null(EOPNOTSUPP, "tap: not written yet");
}
