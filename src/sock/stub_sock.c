/* SPDX-License-Identifier: BSD-3-Clause */
/* Placeholders for the sock layer until it lands (deleted then). */
#include "../net/internal.h"

int hp__sock_init(struct hp_stack *s)
{
    (void)s;
    return 0;
}
void hp__sock_fini(struct hp_stack *s)
{
    (void)s;
}
void hp__udp_input(struct hp__iface *ifc, struct hp_buf *b, int family, const uint8_t *src,
                   const uint8_t *dst)
{
    (void)family, (void)src, (void)dst;
    hp__ctr(ifc->s, HP_CTR_UDP_NO_PORTS);
    hp_buf_free(b);
}
