/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath's own accounting of what it holds for its TCP connections, read from its internal state (the one place the peers harness looks inside the library). */
#include <hotpath/cacheline.h>

#include "sock/tcp_internal.h"
#include "sock/tcp_table.h"

uint64_t ph_hotpath_mem(struct hp_stack *s, uint64_t *conns);

/*
 * What the stack holds for its connections: the connection blocks (one per
 * socket, listeners included) and the connection map's buckets (64-byte
 * lines, tcp_table.h). The count is of the connections in the map. (The
 * caller adds the pool buffers in use, through the public API.)
 */
uint64_t ph_hotpath_mem(struct hp_stack *s, uint64_t *conns)
{
    struct hp__tcp_state *ts = s && s->sock ? s->sock->tcp : NULL;
    if (!ts)
        return 0;
    struct hp__tcp_table_stats tst;
    hp__tcp_table_stats(ts->table, &tst);
    *conns += hp__tcp_conn_count(ts->table);
    return (uint64_t)ts->blocks.size * ts->blocks.nlive + (uint64_t)tst.buckets * HP_CACHELINE_SIZE;
}
