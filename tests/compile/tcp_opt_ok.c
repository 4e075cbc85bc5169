/* SPDX-License-Identifier: BSD-3-Clause */
/* Must compile: the same call with the socket option's name (the control for tcp_opt_kind.c). */
#include <hotpath/tcp.h>
#include <hotpath/wire/tcp.h>

int use(struct hp_tcp_sock *t);
int use(struct hp_tcp_sock *t)
{
    return hp_tcp_setopt(t, HP_TCP_OPT_MAXSEG, 1400) + (int)HP_TCP_KIND_MSS;
}
