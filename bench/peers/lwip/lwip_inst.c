/* SPDX-License-Identifier: BSD-3-Clause */
/* One lwIP instance in the peers harness, raw API as lwIP documents it: a netif over the in-memory wire (zero-copy receive with custom pbufs), TCP and UDP callbacks into the workload. Linked twice (lwip_inst.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lwip/etharp.h"
#include "lwip/init.h"
#include "lwip/memp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "netif/ethernet.h"

#include "lwip_inst.h"

#define RX_BURST 64

/* A receive slot's pbuf: lwIP frees it through rx_free, which gives the
 * slot back to the wire (doc/ZeroCopyRx.c). */
struct rx_pbuf {
    struct pbuf_custom pc;
    uint16_t slot;
};

static struct {
    bool inited;
    int side;
    struct netif nif;
    struct lw_wire *tx, *rx;
    struct ph_app *app;
    struct ph_conn *conns, *free;
    struct tcp_pcb *lsn;
    struct udp_pcb *udp;
    struct rx_pbuf rxp[LW_SLOTS];
    uint32_t rand;
} I;

/* ---- the port: time, randomness -------------------------------------------------- */

u32_t sys_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

uint32_t lwip_peer_rand(void)
{
    uint32_t x = I.rand ? I.rand : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return I.rand = x;
}

/* ---- the interface ------------------------------------------------------------------ */

static err_t link_out(struct netif *n, struct pbuf *p)
{
    (void)n;
    int s = lw_wire_get(I.tx);
    if (s < 0 || p->tot_len > LW_FRAME)
        return ERR_MEM;
    pbuf_copy_partial(p, I.tx->slot[s], p->tot_len, 0); /* the DMA a NIC would do */
    lw_wire_push(I.tx, s, p->tot_len);
    return ERR_OK;
}

static err_t nif_init(struct netif *n)
{
    n->name[0] = 'h';
    n->name[1] = 'p';
    n->mtu = 1500;
    n->hwaddr_len = ETH_HWADDR_LEN;
    memcpy(n->hwaddr, ph_mac[I.side], ETH_HWADDR_LEN);
    n->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET | NETIF_FLAG_LINK_UP;
    n->output = etharp_output;
    n->linkoutput = link_out;
    return ERR_OK;
}

static void rx_free(struct pbuf *p)
{
    struct rx_pbuf *r = (struct rx_pbuf *)p;
    lw_wire_put(I.rx, r->slot);
}

static void inst_poll(void)
{
    uint32_t len;
    int s;
    for (int k = 0; k < RX_BURST && (s = lw_wire_pop(I.rx, &len)) >= 0; k++) {
        struct rx_pbuf *r = &I.rxp[s];
        r->slot = (uint16_t)s;
        r->pc.custom_free_function = rx_free;
        struct pbuf *p =
            pbuf_alloced_custom(PBUF_RAW, (u16_t)len, PBUF_REF, &r->pc, I.rx->slot[s], LW_FRAME);
        if (!p) {
            lw_wire_put(I.rx, s);
            continue;
        }
        if (I.nif.input(p, &I.nif) != ERR_OK)
            pbuf_free(p);
    }
    sys_check_timeouts();
}

/* ---- connection handles ---------------------------------------------------------------- */

static struct ph_conn *conn_new(void *pcb, void *user)
{
    struct ph_conn *c = I.free;
    if (!c)
        return NULL;
    I.free = c->next;
    memset(c, 0, sizeof *c);
    c->pcb = pcb;
    c->inst = &hp_peer_lwip_inst;
    c->user = user;
    return c;
}

static void conn_put(struct ph_conn *c)
{
    c->pcb = NULL;
    c->next = I.free;
    I.free = c;
}

static int errno_of(err_t e)
{
    switch (e) {
    case ERR_RST:
    case ERR_ABRT:
        return ECONNRESET;
    case ERR_CLSD:
        return EPIPE;
    case ERR_MEM:
    case ERR_BUF:
        return ENOBUFS;
    case ERR_TIMEOUT:
        return ETIMEDOUT;
    case ERR_RTE:
        return EHOSTUNREACH;
    default:
        return EIO;
    }
}

/* ---- TCP callbacks ---------------------------------------------------------------------- */

static void detach(struct tcp_pcb *pcb)
{
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    tcp_sent(pcb, NULL);
    tcp_err(pcb, NULL);
}

static void on_err(void *arg, err_t err)
{
    struct ph_conn *c = arg;
    if (!c)
        return;
    void *user = c->user;
    conn_put(c); /* lwIP has freed the pcb */
    I.app->failed(I.app, user, errno_of(err));
}

/* Data in order: the window opened first (tcp_recved), then each pbuf read
 * where it lies, then freed. p NULL: the peer's FIN. */
static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct ph_conn *c = arg;
    (void)err;
    if (!c) {
        if (p)
            pbuf_free(p);
        return ERR_OK;
    }
    if (!p) {
        I.app->recv(I.app, c, c->user, NULL, 0);
        return ERR_OK;
    }
    tcp_recved(pcb, p->tot_len);
    for (struct pbuf *q = p; q && c->pcb == pcb; q = q->next)
        if (q->len)
            I.app->recv(I.app, c, c->user, q->payload, q->len);
    pbuf_free(p);
    return ERR_OK;
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    struct ph_conn *c = arg;
    (void)pcb;
    (void)len;
    if (c && c->wants_room) {
        c->wants_room = false;
        I.app->sendable(I.app, c, c->user);
    }
    return ERR_OK;
}

static void callbacks(struct tcp_pcb *pcb, struct ph_conn *c)
{
    tcp_arg(pcb, c);
    tcp_recv(pcb, on_recv);
    tcp_sent(pcb, on_sent);
    tcp_err(pcb, on_err);
    tcp_nagle_disable(pcb);
}

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    (void)arg;
    struct ph_conn *c = err == ERR_OK && pcb ? conn_new(pcb, NULL) : NULL;
    if (!c) {
        if (pcb)
            tcp_abort(pcb);
        return ERR_ABRT;
    }
    callbacks(pcb, c);
    c->user = I.app->accepted(I.app, c);
    return ERR_OK;
}

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct ph_conn *c = arg;
    (void)pcb;
    (void)err; /* lwIP calls this only on success; failures go to on_err */
    I.app->connected(I.app, c, c->user);
    return ERR_OK;
}

/* ---- the operations -------------------------------------------------------------------- */

static int inst_listen(uint16_t port, int backlog)
{
    (void)backlog; /* TCP_LISTEN_BACKLOG 0: no limit */
    struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
    if (!pcb)
        return -ENOMEM;
    err_t e = tcp_bind(pcb, IP4_ADDR_ANY, port);
    if (e != ERR_OK) {
        tcp_close(pcb);
        return -errno_of(e);
    }
    I.lsn = tcp_listen_with_backlog(pcb, TCP_DEFAULT_LISTEN_BACKLOG);
    if (!I.lsn) {
        tcp_close(pcb);
        return -ENOMEM;
    }
    tcp_accept(I.lsn, on_accept);
    return 0;
}

static int inst_connect(const uint8_t ip[4], uint16_t port, void *user)
{
    struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
    struct ph_conn *c = pcb ? conn_new(pcb, user) : NULL;
    if (!c) {
        if (pcb)
            tcp_abort(pcb);
        return -ENOBUFS;
    }
    callbacks(pcb, c);
    ip_addr_t to;
    IP_ADDR4(&to, ip[0], ip[1], ip[2], ip[3]);
    err_t e = tcp_connect(pcb, &to, port, on_connected);
    if (e != ERR_OK) {
        detach(pcb);
        tcp_abort(pcb);
        conn_put(c);
        return -errno_of(e);
    }
    return 0;
}

/* As much as the send buffer and queue take (copied), then out. */
static long inst_send(struct ph_conn *c, const void *d, size_t n)
{
    struct tcp_pcb *pcb = c->pcb;
    size_t room = tcp_sndbuf(pcb);
    size_t k = n < room ? n : room;
    if (k > 0xffff) /* tcp_write takes a u16_t: whole segments' worth below it */
        k = (0xffff / TCP_MSS) * TCP_MSS;
    err_t e = k ? tcp_write(pcb, d, (u16_t)k, TCP_WRITE_FLAG_COPY) : ERR_MEM;
    if (e == ERR_MEM) {
        c->wants_room = true;
        return 0;
    }
    if (e != ERR_OK)
        return -errno_of(e);
    tcp_output(pcb);
    if (k < n)
        c->wants_room = true;
    return (long)k;
}

static void inst_close(struct ph_conn *c)
{
    struct tcp_pcb *pcb = c->pcb;
    detach(pcb);
    if (tcp_close(pcb) != ERR_OK)
        tcp_abort(pcb);
    conn_put(c);
}

/* ---- UDP ---------------------------------------------------------------------------- */

static void on_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr,
                   u16_t port)
{
    (void)arg;
    (void)pcb;
    (void)addr;
    (void)port;
    if (p->len == p->tot_len)
        I.app->udp(I.app, I.side, p->payload, p->len);
    pbuf_free(p);
}

static int inst_udp_open(uint16_t port)
{
    I.udp = udp_new_ip_type(IPADDR_TYPE_V4);
    if (!I.udp)
        return -ENOMEM;
    err_t e = udp_bind(I.udp, IP4_ADDR_ANY, port);
    if (e != ERR_OK)
        return -errno_of(e);
    udp_recv(I.udp, on_udp, NULL);
    return 0;
}

/* The payload copied into a fresh pbuf with room for the headers. */
static int inst_udp_send(const uint8_t ip[4], uint16_t port, const void *d, size_t n)
{
    struct pbuf *q = pbuf_alloc(PBUF_TRANSPORT, (u16_t)n, PBUF_RAM);
    if (!q)
        return -ENOBUFS;
    memcpy(q->payload, d, n);
    ip_addr_t to;
    IP_ADDR4(&to, ip[0], ip[1], ip[2], ip[3]);
    err_t e = udp_sendto(I.udp, q, &to, port);
    pbuf_free(q);
    return e == ERR_OK ? 0 : -errno_of(e);
}

/* ---- accounting, life cycle -------------------------------------------------------------- */

/* Connections: every pcb in the active and TIME_WAIT lists; each holds one
 * element of the TCP_PCB pool (and whatever pbufs are queued on it, none
 * when idle: counted from the queues). */
static uint64_t inst_conn_bytes(uint64_t *conns)
{
    struct tcp_pcb *lists[2] = {tcp_active_pcbs, tcp_tw_pcbs};
    uint64_t bytes = 0, n = 0;
    for (int i = 0; i < 2; i++)
        for (struct tcp_pcb *pcb = lists[i]; pcb; pcb = pcb->next) {
            n++;
            bytes += memp_pools[MEMP_TCP_PCB]->size;
            struct tcp_seg *qs[3] = {pcb->unsent, pcb->unacked, pcb->ooseq};
            for (int k = 0; k < 3; k++)
                for (struct tcp_seg *sg = qs[k]; sg; sg = sg->next)
                    bytes += memp_pools[MEMP_TCP_SEG]->size + sg->p->tot_len;
            if (pcb->refused_data)
                bytes += pcb->refused_data->tot_len;
        }
    *conns += n;
    return bytes;
}

static int inst_up(const struct lwi_cfg *cfg)
{
    if (!I.inited) {
        lwip_init();
        I.inited = true;
    }
    I.side = cfg->side;
    I.tx = cfg->tx;
    I.rx = cfg->rx;
    I.app = cfg->app;
    I.rand = 0x2545f491u * (uint32_t)(cfg->side + 1);
    I.conns = calloc(cfg->max_conns, sizeof *I.conns);
    if (!I.conns)
        return -ENOMEM;
    for (uint32_t i = 0; i + 1 < cfg->max_conns; i++)
        I.conns[i].next = &I.conns[i + 1];
    I.free = I.conns;
    ip4_addr_t ip, mask, gw;
    IP4_ADDR(&ip, ph_addr[cfg->side][0], ph_addr[cfg->side][1], ph_addr[cfg->side][2],
             ph_addr[cfg->side][3]);
    IP4_ADDR(&mask, 255, 255, 255, 0);
    ip4_addr_set_zero(&gw);
    if (!netif_add(&I.nif, &ip, &mask, &gw, NULL, nif_init, ethernet_input))
        return -EIO;
    netif_set_default(&I.nif);
    netif_set_up(&I.nif);
    netif_set_link_up(&I.nif);
    return 0;
}

/* Abort what is left (their RSTs go to the wire, which is thrown away),
 * close the sockets, remove the interface: lwIP is ready for the next run. */
static void inst_down(void)
{
    struct tcp_pcb **lists[3] = {&tcp_active_pcbs, &tcp_tw_pcbs, &tcp_bound_pcbs};
    for (int i = 0; i < 3; i++)
        while (*lists[i]) {
            detach(*lists[i]);
            tcp_abort(*lists[i]);
        }
    if (I.lsn)
        tcp_close(I.lsn);
    if (I.udp)
        udp_remove(I.udp);
    netif_remove(&I.nif);
    I.lsn = NULL;
    I.udp = NULL;
    free(I.conns);
    I.conns = I.free = NULL;
}

static const char *inst_version(void)
{
    return LWIP_VERSION_STRING;
}

const struct lwi_ops hp_peer_lwip_inst = {
    .up = inst_up,
    .down = inst_down,
    .poll = inst_poll,
    .listen = inst_listen,
    .connect = inst_connect,
    .send = inst_send,
    .close = inst_close,
    .udp_open = inst_udp_open,
    .udp_send = inst_udp_send,
    .conn_bytes = inst_conn_bytes,
    .version = inst_version,
};
