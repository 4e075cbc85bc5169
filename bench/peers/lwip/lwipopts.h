/* SPDX-License-Identifier: BSD-3-Clause */
/* lwIP's options for `hotpath bench peers`: NO_SYS, raw API, IPv4 over Ethernet, buffers and pools sized like hotpath's (docs/experiments.md). */
#ifndef HOTPATH_PEERS_LWIPOPTS_H
#define HOTPATH_PEERS_LWIPOPTS_H

/* No operating system: one thread calls the stack, the raw (callback) API,
 * timers from sys_check_timeouts() in the polling loop. */
#define NO_SYS               1
#define SYS_LIGHTWEIGHT_PROT 0
#define LWIP_NETCONN         0
#define LWIP_SOCKET          0
#define LWIP_TIMERS          1
#define LWIP_SINGLE_NETIF    1 /* each instance has its one interface */

/* Production settings: no assertions (hotpath's Release build has none
 * live either), no statistics, no debug output. */
#define LWIP_NOASSERT 1
#define LWIP_STATS    0

/* What the workloads use, as hotpath's IPv4 path does. */
#define LWIP_IPV4                1
#define LWIP_IPV6                0
#define LWIP_ARP                 1
#define LWIP_ETHERNET            1
#define LWIP_ICMP                1
#define LWIP_RAW                 0
#define LWIP_UDP                 1
#define LWIP_TCP                 1
#define LWIP_DHCP                0
#define LWIP_AUTOIP              0
#define LWIP_IGMP                0
#define LWIP_DNS                 0
#define ARP_QUEUEING             1 /* the SYNs sent before the neighbour is resolved wait, as in hotpath */
#define MEMP_NUM_ARP_QUEUE       512
#define LWIP_SUPPORT_CUSTOM_PBUF 1 /* zero-copy receive (doc/ZeroCopyRx.c) */

/* Memory: the C library's malloc for the heap (PBUF_RAM: segments), static
 * pools for the rest, sized for the largest workload: 10,000 idle
 * connections, or 12,000 connections opened in a round with their
 * TIME_WAITs (hotpath: 65,536 connections, 16,384 ephemeral ports). */
#define MEM_LIBC_MALLOC         1
#define MEM_ALIGNMENT           8
#define MEMP_NUM_TCP_PCB        16448
#define MEMP_NUM_TCP_PCB_LISTEN 4
#define MEMP_NUM_UDP_PCB        4
#define MEMP_NUM_TCP_SEG        16384
#define MEMP_NUM_PBUF           1024
#define PBUF_POOL_SIZE          256
#define PBUF_POOL_BUFSIZE       1536

/* TCP: hotpath's defaults. MSS from MTU 1500, 256 KiB send buffer and
 * receive window (so window scaling, RFC 7323), timestamps on, Nagle off
 * per connection (tcp_nagle_disable), no SACK (hotpath has none). */
#define TCP_MSS             1460
#define LWIP_WND_SCALE      1
#define TCP_RCV_SCALE       3
#define TCP_WND             (256 * 1024)
#define TCP_SND_BUF         (256 * 1024)
#define TCP_SNDLOWAT        (32 * 1024)
#define LWIP_TCP_TIMESTAMPS 1
#define LWIP_TCP_SACK_OUT   0
#define TCP_QUEUE_OOSEQ     1
#define TCP_LISTEN_BACKLOG  0
#define LWIP_TCP_KEEPALIVE  0

#endif
