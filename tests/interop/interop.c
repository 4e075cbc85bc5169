/* SPDX-License-Identifier: BSD-3-Clause */
/* The root-only C tests' teardowns (namespaces removed, no buffer in use) and their way of making namespaces. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hotpath/pool.h>

#include "hp_test.h"
#include "interop.h"

static int remove_namespaces(void)
{
    tool_netns_down_all();
    return 0;
}

/* Every interop test ends with no buffer in use in any pool. */
static int no_buffers_out(void)
{
    long n = hp_pools_in_use();
    if (n != 0)
        fprintf(stderr, "  %ld buffer(s) still in use in some pool\n", n);
    return n != 0;
}

__attribute__((constructor)) static void register_teardowns(void)
{
    hp_test_add_teardown("network namespaces", remove_namespaces);
    hp_test_add_teardown("buffers in use", no_buffers_out);
}

int interop_netns_up(struct tool_netns *n)
{
    int rc = tool_netns_up(n, "t");
    if (rc == -EPERM) {
        hp_test_skip("needs root (network namespaces)");
        return -1;
    }
    if (rc == -ENOENT) {
        hp_test_skip("iproute2 (ip) is not installed");
        return -1;
    }
    if (rc < 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot set up the namespaces %s and %s: %s", n->ns[0],
                     n->ns[1], strerror(-rc));
        return -1;
    }
    return 0;
}
