/* SPDX-License-Identifier: BSD-3-Clause */
/* The echo servers and client of `hotpath bench apps` (apps_echo.c): the layer's cost against a native program doing the same work. */
#ifndef HOTPATH_BENCH_APPS_ECHO_H
#define HOTPATH_BENCH_APPS_ECHO_H

#include <stddef.h>
#include <stdint.h>

/* A TCP echo server on plain POSIX calls (epoll), on port, until SIGTERM;
 * prints "ready" once listening. Run it under libhotpath-posix.so. */
int apps_echo_posix(uint16_t port);

/* The same server on hotpath's API and event loop: link kind on iface,
 * address ip/24, until SIGTERM. Exit status. */
int apps_echo_native(const char *kind, const char *iface, const char *ip, uint16_t port);

/* conns connections to ip:port, each with one len-byte request
 * outstanding, for secs seconds; *txns: the round trips completed.
 * @return 0, or -errno (a connection failed). */
int apps_echo_client(const char *ip, uint16_t port, int conns, size_t len, double secs,
                     uint64_t *txns);

#endif
