/* SPDX-License-Identifier: BSD-3-Clause */
/* The UDP test frame that `hotpath gen` and the bare AF_XDP loop send. */
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/eth.h>
#include <hotpath/wire/ipv4.h>

#include "tool.h"

void tool_udp_frame(uint8_t *f, unsigned size, const uint8_t dst[6], const uint8_t src[6])
{
    memset(f, 0, size);
    memcpy(f, dst, HP_ETH_ALEN);
    memcpy(f + HP_ETH_ALEN, src, HP_ETH_ALEN);
    f[12] = (uint8_t)(HP_ETHERTYPE_IPV4 >> 8);
    f[13] = (uint8_t)HP_ETHERTYPE_IPV4;
    uint8_t *ip = f + HP_ETH_HDR_LEN;
    unsigned ip_len = size - HP_ETH_HDR_LEN, udp_len = ip_len - 20;
    ip[0] = 0x45; /* version 4, 20-byte header */
    ip[2] = (uint8_t)(ip_len >> 8);
    ip[3] = (uint8_t)ip_len;
    ip[6] = 0x40; /* don't fragment */
    ip[8] = 64;   /* TTL */
    ip[9] = HP_IPPROTO_UDP;
    const uint8_t saddr[4] = {198, 18, 0, 1}, daddr[4] = {198, 18, 0, 2};
    memcpy(ip + 12, saddr, 4);
    memcpy(ip + 16, daddr, 4);
    uint16_t c = hp_cksum_ipv4_hdr(ip, 20);
    memcpy(ip + 10, &c, 2);
    uint8_t *udp = ip + 20;
    udp[1] = 9; /* discard (RFC 863), both ports */
    udp[3] = 9;
    udp[4] = (uint8_t)(udp_len >> 8);
    udp[5] = (uint8_t)udp_len;
    for (unsigned i = 8; i < udp_len; i++)
        udp[i] = (uint8_t)i;
    /* RFC 768: over the pseudo-header and the datagram; 0 goes as 0xffff. */
    c = hp_cksum_udp4(saddr, daddr, udp, udp_len);
    memcpy(udp + 6, &c, 2);
}
