/* SPDX-License-Identifier: BSD-3-Clause */
/* The UDP echo loop of the command's server and the benchmarks: each datagram's buffer goes straight back. */
#include <hotpath/buf.h>
#include <hotpath/udp.h>

#include "tool.h"

uint64_t tool_udp_echo(struct hp_udp_sock *u)
{
    uint64_t n = 0;
    struct hp_buf *b;
    struct hp_sockaddr from;
    while (u && hp_udp_recv_buf(u, &b, &from) >= 0) {
        /* Zero copy: the received buffer is the reply. A send that fails
         * leaves it ours to free (udp.h). */
        if (hp_udp_send_buf(u, b, &from) < 0)
            hp_buf_free(b);
        else
            n++;
    }
    return n;
}
