/* SPDX-License-Identifier: BSD-3-Clause */
/* STUB (replaced by the real tcp_input.c): segment arrival. */
#include "tcp_internal.h"

void hp__tcp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src, const uint8_t *dst)
{
    (void)family; (void)src; (void)dst;
    hp__ctr(ifc->s, HP_CTR_TCP_IN_SEGS);
    hp_buf_free(b);
}
void hp__tcp_ooo_purge(struct hp_tcp_sock *c) { (void)c; }
