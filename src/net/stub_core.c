/* SPDX-License-Identifier: BSD-3-Clause */
/* Placeholders for the stack core, Ethernet and neighbour modules until they land (deleted then). */
#include <errno.h>

#include "internal.h"

struct hp_buf *hp__alloc(struct hp__iface *ifc)
{
    return hp_buf_alloc(ifc->pool);
}
void hp__eth_xmit(struct hp__iface *ifc, struct hp_buf *frame)
{
    (void)ifc;
    hp_buf_free(frame);
}
void hp__eth_output(struct hp__iface *ifc, const uint8_t dst[6], uint16_t ethertype, struct hp_buf *b)
{
    (void)ifc, (void)dst, (void)ethertype;
    hp_buf_free(b);
}
bool hp__is_local4(const struct hp__iface *ifc, const uint8_t a[4])
{
    (void)ifc, (void)a;
    return false;
}
bool hp__is_local6(const struct hp__iface *ifc, const uint8_t a[16])
{
    (void)ifc, (void)a;
    return false;
}
bool hp__is_mcast_member6(const struct hp__iface *ifc, const uint8_t a[16])
{
    (void)ifc, (void)a;
    return false;
}
void hp__neigh_output4(struct hp__iface *ifc, const uint8_t nexthop[4], struct hp_buf *b)
{
    (void)ifc, (void)nexthop;
    hp_buf_free(b);
}
void hp__neigh_output6(struct hp__iface *ifc, const uint8_t nexthop[16], struct hp_buf *b)
{
    (void)ifc, (void)nexthop;
    hp_buf_free(b);
}
void hp__ndp_input(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip)
{
    (void)ifc, (void)ip;
    hp_buf_free(b);
}
void hp__timer_init(struct hp__timer *t, hp__timer_fn fn, void *arg)
{
    t->fn = fn;
    t->arg = arg;
    t->slot = -1;
}
int hp__timer_arm(struct hp_stack *s, struct hp__timer *t, uint64_t due)
{
    (void)s, (void)t, (void)due;
    return -ENOMEM;
}
void hp__timer_cancel(struct hp_stack *s, struct hp__timer *t)
{
    (void)s;
    t->slot = -1;
}
uint64_t hp__clock_ns(void)
{
    return 0;
}
