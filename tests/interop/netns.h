/* SPDX-License-Identifier: BSD-3-Clause */
/* Network namespaces for root-only tests: two namespaces joined by a veth pair, removed at teardown. */
#ifndef HP_TEST_NETNS_H
#define HP_TEST_NETNS_H

#include <stdbool.h>

/*
 * Side A (index 0) and side B (index 1): namespaces "hpt-<pid>-a" / "-b",
 * interfaces "hpa<pid%10^5>" / "hpb<...>", up, with 198.18.0.1/24 and
 * 2001:2::1/64 on A and 198.18.0.2/24 and 2001:2::2/64 on B (no duplicate
 * address detection). With quiet, IPv6 is disabled on both interfaces so
 * that the kernel sends nothing by itself (no router or neighbour
 * solicitations, no MLD reports): tests that count frames want that.
 */
struct hp_netns {
    char ns[2][32];
    char ifname[2][16];
    unsigned ifindex[2];
    bool up;
};

/* Root only: skips the test (HP_SKIP) when not root or when `ip` is missing.
 * Registers a teardown that deletes both namespaces. Returns 0, or -1 after
 * reporting a test failure. */
int hp_netns_up(struct hp_netns *n, bool quiet);
/* Move the calling thread into namespace side (0 or 1). 0 or -errno. */
int hp_netns_enter(const struct hp_netns *n, int side);
/* Run a shell command inside namespace side; returns its exit status. */
int hp_netns_sh(const struct hp_netns *n, int side, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Read /sys/class/net/<if>/statistics/<counter> as seen from side. -1 on error. */
long long hp_netns_counter(const struct hp_netns *n, int side, const char *counter);
/* Delete both namespaces (also done by the teardown). */
void hp_netns_down(struct hp_netns *n);

#endif
