/* SPDX-License-Identifier: BSD-3-Clause */
/* The pcap and fault decorators (placeholder until they land). */
#include <errno.h>

#include "internal.h"

HP_API struct hp_link *hp_link_pcap(struct hp_link *inner, const char *path)
{
    (void)inner;
    (void)path;
    return hp__link_fail_null(EOPNOTSUPP, "pcap: not written yet");
}

HP_API struct hp_link *hp_link_fault(struct hp_link *inner, const struct hp_fault_config *cfg)
{
    (void)inner;
    (void)cfg;
    return hp__link_fail_null(EOPNOTSUPP, "fault: not written yet");
}

HP_API int hp_link_fault_stats(const struct hp_link *l, struct hp_fault_stats *out)
{
    (void)l;
    (void)out;
    return -EINVAL;
}
