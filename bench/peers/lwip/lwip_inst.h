/* SPDX-License-Identifier: BSD-3-Clause */
/* One lwIP instance: lwIP is one stack per process (global state), so the build links two copies of it, each with this glue, under the names hp_peer_lwip_a and hp_peer_lwip_b (tools/tools.cmake). */
#ifndef HOTPATH_PEERS_LWIP_INST_H
#define HOTPATH_PEERS_LWIP_INST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../peers_harness.h"
#include "wire.h"

struct lwi_ops;

/* An lwIP connection as the harness sees it. */
struct ph_conn {
    void *pcb;                  /* struct tcp_pcb *, NULL once closed */
    const struct lwi_ops *inst; /* the copy of lwIP that owns it */
    void *user;
    struct ph_conn *next; /* free list */
    bool wants_room;      /* a send came back short: sendable() on the next ACK */
};

/* How an instance comes up. */
struct lwi_cfg {
    int side;                /* 0 or 1: its address and MAC in ph_addr / ph_mac */
    struct lw_wire *tx, *rx; /* what it sends on and receives from */
    struct ph_app *app;
    uint32_t max_conns; /* connection handles to have */
};

struct lwi_ops {
    /* lwIP (once per process) and the interface. 0 or -errno. */
    int (*up)(const struct lwi_cfg *cfg);
    /* Every connection aborted, sockets closed, the interface removed. */
    void (*down)(void);
    /* Frames from the wire (a burst), then the timers that are due. */
    void (*poll)(void);
    int (*listen)(uint16_t port, int backlog);
    int (*connect)(const uint8_t ip[4], uint16_t port, void *user);
    long (*send)(struct ph_conn *c, const void *d, size_t n);
    void (*close)(struct ph_conn *c);
    int (*udp_open)(uint16_t port);
    int (*udp_send)(const uint8_t ip[4], uint16_t port, const void *d, size_t n);
    /* Bytes of the pcbs of its connections (and how many). */
    uint64_t (*conn_bytes)(uint64_t *conns);
    const char *(*version)(void);
};

/* The glue's one exported symbol, renamed per copy by objcopy. */
extern const struct lwi_ops hp_peer_lwip_inst;
extern const struct lwi_ops hp_peer_lwip_a, hp_peer_lwip_b;

#endif
