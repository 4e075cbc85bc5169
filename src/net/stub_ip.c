/* SPDX-License-Identifier: BSD-3-Clause */
/* Placeholders for the IP, reassembly and ICMP modules until they land (deleted then). */
#include <errno.h>

#include "internal.h"

int hp__route4(struct hp_stack *s, const uint8_t dst[4], struct hp__route *r)
{
    (void)s, (void)dst, (void)r;
    return -ENETUNREACH;
}
int hp__route6(struct hp_stack *s, const uint8_t dst[16], struct hp__route *r)
{
    (void)s, (void)dst, (void)r;
    return -ENETUNREACH;
}
void hp__ipv4_input(struct hp__iface *ifc, struct hp_buf *b)
{
    hp__ctr(ifc->s, HP_CTR_IP_IN_UNKNOWN_PROTOS);
    hp_buf_free(b);
}
void hp__ipv6_input(struct hp__iface *ifc, struct hp_buf *b)
{
    hp__ctr(ifc->s, HP_CTR_IP6_IN_UNKNOWN_PROTOS);
    hp_buf_free(b);
}
int hp__ipv4_output(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[4], uint8_t proto,
                    struct hp_buf *b)
{
    (void)s, (void)r, (void)dst, (void)proto;
    hp_buf_free(b);
    return -ENOBUFS;
}
int hp__ipv6_output(struct hp_stack *s, const struct hp__route *r, const uint8_t dst[16], uint8_t next,
                    struct hp_buf *b)
{
    (void)s, (void)r, (void)dst, (void)next;
    hp_buf_free(b);
    return -ENOBUFS;
}
int hp__reasm_init(struct hp_stack *s)
{
    (void)s;
    return 0;
}
void hp__reasm_fini(struct hp_stack *s)
{
    (void)s;
}
void hp__icmp4_error(struct hp__iface *ifc, const struct hp_buf *orig, uint8_t type, uint8_t code,
                     uint32_t info)
{
    (void)ifc, (void)orig, (void)type, (void)code, (void)info;
}
void hp__icmp6_error(struct hp__iface *ifc, const struct hp_buf *orig, uint8_t type, uint8_t code,
                     uint32_t info)
{
    (void)ifc, (void)orig, (void)type, (void)code, (void)info;
}
HP_API int hp_stack_ping(struct hp_stack *s, int family, const uint8_t *dst, uint16_t ident,
                         uint16_t seq, size_t len)
{
    (void)s, (void)family, (void)dst, (void)ident, (void)seq, (void)len;
    return -EHOSTUNREACH;
}
