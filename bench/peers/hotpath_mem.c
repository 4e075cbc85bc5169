/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath's own accounting of what it holds for its TCP connections, read from its internal state (the one place the peers harness looks inside the library). */
#include "sock/tcp_internal.h"

uint64_t ph_hotpath_mem(struct hp_stack *s, uint64_t *conns);

/*
 * What the stack holds for its connections (hp__tcp_mem_held: the blocks,
 * one per socket, listeners included, their extensions, the connection
 * map's buckets, the timer heap and the delayed-ACK list). The count is of
 * the connections in the map. (The caller adds the pool buffers in use,
 * through the public API.)
 */
uint64_t ph_hotpath_mem(struct hp_stack *s, uint64_t *conns)
{
    return hp__tcp_mem_held(s, conns);
}
