/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath demo`'s peers experiment: hotpath, lwIP and smoltcp on one harness (issue 23), and where the instructions go per transaction. */
#ifndef HOTPATH_DEMO_PEERS_H
#define HOTPATH_DEMO_PEERS_H

#include <stdbool.h>
#include <stdio.h>

/* Run `hotpath bench peers` (medians of 3 rounds, 1 with quick), print its
 * table, append a section to md, write DIR/peers.json for the plot; without
 * quick, and with valgrind, also scripts/peers_profile.py's instructions per
 * tcp_rr_1 transaction of each stack. *missed grows by the goals missed.
 * @return 0, or -errno when nothing of hotpath's was measured. */
int demo_peers(const char *dir, FILE *md, bool quick, int cpu, int *missed);

#endif
