/* SPDX-License-Identifier: BSD-3-Clause */
/* hp_layout_name: which field order (grouped by cache line or chrono) the library was built with. */
#include <hotpath/common.h>

#include "internal.h"

HP_API const char *hp_layout_name(void)
{
#if defined(HP_LAYOUT_CHRONO) && HP_LAYOUT_CHRONO
    return "chrono";
#else
    return "grouped";
#endif
}
