/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath in the peers harness: two stacks over a mem pair, driven through the public API (hp_stack_poll, events, hp_tcp_*, hp_udp_*). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/common.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

#include "peers_harness.h"

#define POOL_BUFS 16384
#define EV_BURST  64

/* From hotpath_mem.c: the bytes stack s holds for its connections. */
uint64_t ph_hotpath_mem(struct hp_stack *s, uint64_t *conns);

struct ph_conn {
    struct hp_tcp_sock *t;
    struct ph_pair *p;
    void *user;
    int side;
    bool established; /* side 0: connected() was called */
    bool dead;        /* closed by the workload or failed: no more callbacks */
    bool fin;         /* the peer's FIN was delivered */
    struct ph_conn *next;
};

struct ph_pair {
    struct ph_app *app;
    struct hp_pool *pool;
    struct hp_link *e[2];
    struct hp_stack *st[2];
    struct hp_tcp_sock *lsn;
    struct hp_udp_sock *u[2];
    struct ph_conn *conns, *free, *zombies;
    int lsn_tag;
};

static struct ph_conn *conn_new(struct ph_pair *p, int side)
{
    struct ph_conn *c = p->free;
    if (!c)
        return NULL;
    p->free = c->next;
    memset(c, 0, sizeof *c);
    c->p = p;
    c->side = side;
    return c;
}

/* Closed handles go back to the free list after the poll that closed them:
 * events fetched in the same burst may still name them. */
static void conn_bury(struct ph_conn *c)
{
    c->dead = true;
    c->t = NULL;
    c->next = c->p->zombies;
    c->p->zombies = c;
}

static void hpp_close(struct ph_pair *p)
{
    if (!p)
        return;
    for (int i = 0; i < 2; i++) {
        hp_udp_close(p->u[i]);
        hp_stack_destroy(p->st[i]);
    }
    if (p->pool)
        hp_pool_thread_flush(p->pool);
    for (int i = 0; i < 2; i++)
        hp_link_close(p->e[i]);
    if (p->pool)
        hp_pool_destroy(p->pool);
    free(p->conns);
    free(p);
}

/* HP_PEERS_HOTPATH_CC=newreno|cubic and HP_PEERS_HOTPATH_NO_SACK=1: the
 * TCP variant both hotpath stacks run (unset: the defaults, CUBIC and
 * SACK), to weigh what loss recovery costs a clean path (docs/experiments.md). */
static int tcp_variant(struct hp_stack *st)
{
    const char *cc = getenv("HP_PEERS_HOTPATH_CC"), *ns = getenv("HP_PEERS_HOTPATH_NO_SACK");
    const char *tw = getenv("HP_PEERS_HOTPATH_TIME_WAIT_MS");
    if ((!cc || !*cc) && (!ns || !*ns) && (!tw || !*tw))
        return 0;
    struct hp_tcp_config tc = {.no_sack = ns && strcmp(ns, "1") == 0};
    if (tw && *tw) { /* an experiment's knob: what the TIME_WAITs cost tcp_crr */
        char *end;
        unsigned long ms = strtoul(tw, &end, 10);
        if (*end || ms == 0 || ms > 600000)
            return -EINVAL;
        tc.time_wait_ms = (uint32_t)ms;
    }
    if (cc && *cc) {
        int k = hp_tcp_cc_by_name(cc);
        if (k < 0)
            return k;
        tc.cc = (uint8_t)k;
    }
    return hp_tcp_configure(st, &tc);
}

static struct ph_pair *hpp_open(const struct ph_cfg *cfg, struct ph_app *app, char *why, size_t len)
{
    struct ph_pair *p = calloc(1, sizeof *p);
    uint32_t n = cfg->max_conns * 2 + 64;
    if (!p || !(p->conns = calloc(n, sizeof *p->conns))) {
        snprintf(why, len, "out of memory");
        hpp_close(p);
        return NULL;
    }
    for (uint32_t i = 0; i + 1 < n; i++)
        p->conns[i].next = &p->conns[i + 1];
    p->free = p->conns;
    p->app = app;
    struct hp_pool_config pc = {.name = "peers", .n_bufs = POOL_BUFS};
    p->pool = hp_pool_create(&pc);
    struct hp_link_config lc = {.pool = p->pool, .ring_size = 1024};
    if (!p->pool || hp_link_mem_pair(&lc, p->e) < 0) {
        snprintf(why, len, "mem pair: %s", p->pool ? hp_link_error() : "no pool");
        hpp_close(p);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        struct hp_stack_config sc = {.name = i ? "server" : "client", .flags = HP_STACK_F_NO_DAD};
        p->st[i] = hp_stack_create(&sc);
        int ifx = p->st[i] ? hp_stack_add_iface(p->st[i], p->e[i]) : -ENOMEM;
        if (ifx < 0 || hp_stack_add_addr(p->st[i], ifx, 4, ph_addr[i], 24) < 0 ||
            tcp_variant(p->st[i]) < 0) {
            snprintf(why, len, "cannot set up the %s stack", sc.name);
            hpp_close(p);
            return NULL;
        }
    }
    return p;
}

/* Everything received on c, each segment handed to the workload as it lies
 * in its buffer (hp_tcp_recv_buf: no copy). */
static void drain(struct ph_pair *p, struct ph_conn *c)
{
    while (!c->dead && !c->fin) {
        struct hp_buf *b;
        long n = hp_tcp_recv_buf(c->t, &b);
        if (n > 0) {
            for (struct hp_buf *s = b; s && !c->dead; s = s->next)
                if (s->data_len)
                    p->app->recv(p->app, c, c->user, hp_buf_data(s), s->data_len);
            hp_buf_free(b);
        } else if (n == 0) {
            c->fin = true;
            p->app->recv(p->app, c, c->user, NULL, 0);
        } else {
            if (n != -EAGAIN) {
                hp_tcp_close(c->t);
                conn_bury(c);
                p->app->failed(p->app, c->user, (int)-n);
            }
            return;
        }
    }
}

static void accept_all(struct ph_pair *p)
{
    for (;;) {
        struct ph_conn *c = conn_new(p, 1);
        if (!c)
            return;
        c->t = hp_tcp_accept(p->lsn, c, NULL);
        if (!c->t) {
            c->next = p->free;
            p->free = c;
            return;
        }
        hp_tcp_setopt(c->t, HP_TCP_OPT_NODELAY, 1);
        c->user = p->app->accepted(p->app, c);
        drain(p, c); /* what came with or right after the handshake */
    }
}

static void on_event(struct ph_pair *p, const struct hp_event *ev)
{
    if (ev->user == &p->lsn_tag) {
        accept_all(p);
        return;
    }
    struct ph_conn *c = ev->user;
    if (!c || c->dead)
        return;
    if (ev->events & HP_EV_IN)
        drain(p, c);
    if (!c->dead && (ev->events & HP_EV_OUT)) {
        if (c->side == 0 && !c->established) {
            c->established = true;
            p->app->connected(p->app, c, c->user);
        } else {
            p->app->sendable(p->app, c, c->user);
        }
    }
    if (!c->dead && (ev->events & HP_EV_ERR)) {
        int err = hp_tcp_error(c->t);
        hp_tcp_close(c->t);
        conn_bury(c);
        p->app->failed(p->app, c->user, err ? -err : ECONNRESET);
    }
}

static void hpp_poll(struct ph_pair *p, int side)
{
    struct hp_stack *st = p->st[side];
    hp_stack_poll(st);
    struct hp_event ev[EV_BURST];
    int n;
    do {
        n = hp_stack_events(st, ev, EV_BURST);
        for (int i = 0; i < n; i++)
            on_event(p, &ev[i]);
    } while (n == EV_BURST);
    if (p->u[side]) {
        struct hp_buf *b;
        while (hp_udp_recv_buf(p->u[side], &b, NULL) >= 0) {
            p->app->udp(p->app, side, hp_buf_data(b), b->data_len);
            hp_buf_free(b);
        }
    }
    while (p->zombies) {
        struct ph_conn *c = p->zombies;
        p->zombies = c->next;
        c->next = p->free;
        p->free = c;
    }
}

static int hpp_listen(struct ph_pair *p, int backlog)
{
    struct hp_sockaddr any = {.family = 4, .port = PH_PORT};
    p->lsn = hp_tcp_open(p->st[1], 4, &p->lsn_tag);
    if (!p->lsn)
        return -errno;
    int rc = hp_tcp_bind(p->lsn, &any);
    return rc ? rc : hp_tcp_listen(p->lsn, backlog);
}

static int hpp_connect(struct ph_pair *p, void *user)
{
    struct ph_conn *c = conn_new(p, 0);
    if (!c)
        return -ENOBUFS;
    c->user = user;
    c->t = hp_tcp_open(p->st[0], 4, c);
    if (!c->t) {
        c->next = p->free;
        p->free = c;
        return -errno;
    }
    hp_tcp_setopt(c->t, HP_TCP_OPT_NODELAY, 1);
    struct hp_sockaddr to = {.family = 4, .port = PH_PORT};
    memcpy(to.addr, ph_addr[1], 4);
    int rc = hp_tcp_connect(c->t, &to);
    if (rc != -EINPROGRESS && rc != 0) {
        hp_tcp_close(c->t);
        conn_bury(c);
        return rc;
    }
    return 0;
}

static long hpp_send(struct ph_conn *c, const void *d, size_t n)
{
    long k = hp_tcp_send(c->t, d, n);
    return k == -EAGAIN ? 0 : k;
}

static void hpp_close_conn(struct ph_conn *c)
{
    hp_tcp_close(c->t);
    conn_bury(c);
}

static int hpp_udp_open(struct ph_pair *p)
{
    struct hp_sockaddr any = {.family = 4, .port = PH_UDP_PORT};
    for (int i = 0; i < 2; i++) {
        p->u[i] = hp_udp_open(p->st[i], 4, NULL);
        if (!p->u[i])
            return -errno;
        int rc = hp_udp_bind(p->u[i], &any);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int hpp_udp_send(struct ph_pair *p, int side, const void *d, size_t n)
{
    struct hp_sockaddr to = {.family = 4, .port = PH_UDP_PORT};
    memcpy(to.addr, ph_addr[1 - side], 4);
    int rc = hp_udp_sendto(p->u[side], d, n, &to);
    return rc < 0 ? rc : 0;
}

static uint64_t hpp_conn_bytes(struct ph_pair *p, uint64_t *conns)
{
    *conns = 0;
    uint64_t held =
        (uint64_t)hp_pool_in_use(p->pool) * (HP_BUF_META_SIZE + hp_pool_data_room(p->pool));
    return ph_hotpath_mem(p->st[0], conns) + ph_hotpath_mem(p->st[1], conns) + held;
}

static uint64_t hpp_frames(struct ph_pair *p)
{
    struct hp_link_stats a, b;
    hp_link_stats(p->e[0], &a);
    hp_link_stats(p->e[1], &b);
    return a.tx_packets + b.tx_packets;
}

static const char *hpp_version(void)
{
    static char v[64];
    snprintf(v, sizeof v, "%s (%s layout)", hp_version(), hp_layout_name());
    return v;
}

const struct ph_ops ph_hotpath_ops = {
    .name = "hotpath",
    .version = hpp_version,
    .open = hpp_open,
    .close = hpp_close,
    .poll = hpp_poll,
    .listen = hpp_listen,
    .connect = hpp_connect,
    .send = hpp_send,
    .close_conn = hpp_close_conn,
    .udp_open = hpp_udp_open,
    .udp_send = hpp_udp_send,
    .conn_bytes = hpp_conn_bytes,
    .frames = hpp_frames,
};
