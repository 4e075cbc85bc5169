/* SPDX-License-Identifier: BSD-3-Clause */
/* Must NOT compile: the wire layer's option kinds and the socket options no longer share a prefix. */
#include <hotpath/tcp.h>
#include <hotpath/wire/tcp.h>

int misuse(struct hp_tcp_sock *t);
int misuse(struct hp_tcp_sock *t)
{
    /* Once HP_TCP_OPT_MSS was the wire kind 2, equal to HP_TCP_OPT_SNDBUF:
     * this line set the send buffer. */
    return hp_tcp_setopt(t, HP_TCP_OPT_MSS, 1400) + hp_tcp_setopt(t, HP_TCP_OPT_TS, 1);
}
