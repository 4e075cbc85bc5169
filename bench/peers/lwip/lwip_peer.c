/* SPDX-License-Identifier: BSD-3-Clause */
/* lwIP in the peers harness: the two instances (two copies of lwIP, lwip_inst.h) and the wire between them, as struct ph_ops. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwip_inst.h"

#ifndef HP_LWIP_SOURCE
#define HP_LWIP_SOURCE "lwIP"
#endif

struct ph_pair {
    const struct lwi_ops *inst[2];
    struct lw_wire *wire[2]; /* wire[i]: sent by side i */
    bool up[2];
};

static void lwp_close(struct ph_pair *p)
{
    if (!p)
        return;
    for (int i = 0; i < 2; i++)
        if (p->up[i])
            p->inst[i]->down();
    /* What the downs left in flight (their RSTs, never read) goes with the wires. */
    free(p->wire[0]);
    free(p->wire[1]);
    free(p);
}

static struct ph_pair *lwp_open(const struct ph_cfg *cfg, struct ph_app *app, char *why, size_t len)
{
    struct ph_pair *p = calloc(1, sizeof *p);
    if (!p || !(p->wire[0] = malloc(sizeof *p->wire[0])) ||
        !(p->wire[1] = malloc(sizeof *p->wire[1]))) {
        snprintf(why, len, "out of memory");
        lwp_close(p);
        return NULL;
    }
    p->inst[0] = &hp_peer_lwip_a;
    p->inst[1] = &hp_peer_lwip_b;
    for (int i = 0; i < 2; i++) {
        lw_wire_init(p->wire[i]);
        struct lwi_cfg c = {.side = i,
                            .tx = p->wire[i],
                            .rx = p->wire[1 - i],
                            .app = app,
                            .max_conns = cfg->max_conns + 64};
        int rc = p->inst[i]->up(&c);
        if (rc < 0) {
            snprintf(why, len, "lwIP instance %d: %s", i, strerror(-rc));
            lwp_close(p);
            return NULL;
        }
        p->up[i] = true;
    }
    return p;
}

static void lwp_poll(struct ph_pair *p, int side)
{
    p->inst[side]->poll();
}

static int lwp_listen(struct ph_pair *p, int backlog)
{
    return p->inst[1]->listen(PH_PORT, backlog);
}

static int lwp_connect(struct ph_pair *p, void *user)
{
    return p->inst[0]->connect(ph_addr[1], PH_PORT, user);
}

static long lwp_send(struct ph_conn *c, const void *d, size_t n)
{
    return c->inst->send(c, d, n);
}

static void lwp_close_conn(struct ph_conn *c)
{
    c->inst->close(c);
}

static int lwp_udp_open(struct ph_pair *p)
{
    int rc = p->inst[0]->udp_open(PH_UDP_PORT);
    return rc ? rc : p->inst[1]->udp_open(PH_UDP_PORT);
}

static int lwp_udp_send(struct ph_pair *p, int side, const void *d, size_t n)
{
    return p->inst[side]->udp_send(ph_addr[1 - side], PH_UDP_PORT, d, n);
}

static uint64_t lwp_conn_bytes(struct ph_pair *p, uint64_t *conns)
{
    *conns = 0;
    return p->inst[0]->conn_bytes(conns) + p->inst[1]->conn_bytes(conns);
}

static uint64_t lwp_frames(struct ph_pair *p)
{
    return p->wire[0]->frames + p->wire[1]->frames;
}

static const char *lwp_version(void)
{
    static char v[96];
    snprintf(v, sizeof v, "%s (%s, NO_SYS, raw API)", hp_peer_lwip_a.version(), HP_LWIP_SOURCE);
    return v;
}

const struct ph_ops ph_lwip_ops = {
    .name = "lwip",
    .version = lwp_version,
    .open = lwp_open,
    .close = lwp_close,
    .poll = lwp_poll,
    .listen = lwp_listen,
    .connect = lwp_connect,
    .send = lwp_send,
    .close_conn = lwp_close_conn,
    .udp_open = lwp_udp_open,
    .udp_send = lwp_udp_send,
    .conn_bytes = lwp_conn_bytes,
    .frames = lwp_frames,
};
