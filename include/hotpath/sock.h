/* SPDX-License-Identifier: BSD-3-Clause */
/* What UDP and TCP sockets share: endpoint addresses and readiness events on a stack. */
#ifndef HOTPATH_SOCK_H
#define HOTPATH_SOCK_H

#include <stdint.h>

#include <hotpath/common.h>
#include <hotpath/stack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An endpoint: family HP_AF_INET4 or HP_AF_INET6 (4 or 6, common.h), the address (4 or 16
 * bytes used), a port in host order. */
struct hp_sockaddr {
    uint8_t family;
    uint16_t port;
    uint8_t addr[16];
};

/** Readiness, like epoll's. */
#define HP_EV_IN  0x1u /**< something to receive (or accept) */
#define HP_EV_OUT 0x2u /**< room to send */
#define HP_EV_ERR 0x4u /**< an error is pending (read it with the socket's error call) */
#define HP_EV_HUP 0x8u /**< the peer closed (TCP) */

/** One ready socket: the user pointer given to it, and its HP_EV_* bits. */
struct hp_event {
    void *user;
    uint32_t events;
};

/**
 * Sockets that became ready since the last call (edge-triggered: a socket
 * is reported again only after a new event on it), at most max of them.
 * Call after hp_stack_poll(). @return the number written to ev.
 */
HP_API int hp_stack_events(struct hp_stack *s, struct hp_event *ev, int max);

/** Parse "198.18.0.2:7", "[2001:2::2]:7" or an address without port (port 0). 0 or -EINVAL. */
HP_API int hp_sockaddr_parse(const char *text, struct hp_sockaddr *out);
/** Format as above into buf (at least 48 bytes); returns buf. */
HP_API char *hp_sockaddr_format(const struct hp_sockaddr *a, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
