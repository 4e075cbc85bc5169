/* SPDX-License-Identifier: BSD-3-Clause */
/* The afxdp link (placeholder until its backend lands). */
#include <errno.h>

#include "internal.h"

struct hp_link *hp__afxdp_open(const struct hp_link_config *cfg)
{
    (void)cfg;
    return hp__link_fail_null(EOPNOTSUPP, "afxdp: not written yet");
}
