/* SPDX-License-Identifier: BSD-3-Clause */
/* What the root-only C tests share beyond frames: namespaces through the tool's helper, as a test sees them. */
#ifndef HP_TEST_INTEROP_H
#define HP_TEST_INTEROP_H

#include "netns.h" /* tools/common/netns.h: the one namespace helper */

/*
 * Two namespaces joined by a veth pair (tool_netns_up: IPv6 off, so that
 * the kernel sends nothing by itself): side 0 "hp-t-PID-a", side 1 "-b". Skips
 * the test (HP_SKIP's way) when not root or when `ip` is missing; a test
 * failure when they cannot be made. Every namespace is removed by the
 * runner's teardown after each test. 0, or -1 (skipped or failed).
 */
int interop_netns_up(struct tool_netns *n);

#endif
