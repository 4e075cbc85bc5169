/* SPDX-License-Identifier: BSD-3-Clause */
/* The afpacket link (placeholder until its backend lands). */
#include <errno.h>

#include "internal.h"

struct hp_link *hp__afpacket_open(const struct hp_link_config *cfg)
{
    (void)cfg;
    return hp__link_fail_null(EOPNOTSUPP, "afpacket: not written yet");
}
