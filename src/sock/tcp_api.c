/* SPDX-License-Identifier: BSD-3-Clause */
/* The TCP socket calls of include/hotpath/tcp.h (RFC 9293 3.10 "user calls"): open, bind, listen, accept, connect, send, receive, shutdown, close, options, readiness. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tcp_internal.h"

#define EPH_LO  49152u /* RFC 6335 6: the dynamic ports */
#define EPH_N   16384u
#define BUF_MIN 2048L
#define BUF_MAX (1L << 30)

static size_t alen(int family)
{
    return family == 4 ? 4 : 16;
}

static bool all_zero(const uint8_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i])
            return false;
    return true;
}

static struct hp_tcp_sock *entry(struct hp__tcp_key *k)
{
    return k ? HP__TCP_ENTRY(k, struct hp_tcp_sock, key) : NULL;
}

/* The socket was given a 4-tuple once (connect, or made by a listener):
 * its key has a remote port, and keeps it after the connection is over. */
static bool was_connected(const struct hp_tcp_sock *c)
{
    return c->key.rport != 0;
}

/* Bound, and neither listening nor connected: such a socket holds its port
 * only through the `all` list (it is in neither map). */
static bool bound_idle(const struct hp_tcp_sock *c)
{
    return (c->flags & HP__TCPF_BOUND) && !(c->flags & (HP__TCPF_IN_TABLE | HP__TCPF_LISTEN_KEY)) &&
           !was_connected(c);
}

/* ---- open, bind, listen, accept ------------------------------------------------- */

HP_API struct hp_tcp_sock *hp_tcp_open(struct hp_stack *s, int family, void *user)
{
    if (!s || !s->sock || !s->sock->tcp || (family != 4 && family != 6)) {
        errno = EINVAL;
        return NULL;
    }
    /* The limit is checked here too, so that a user's open is not counted
     * as a connection dropped by the limit (TCP_CONN_LIMIT_DROPS). */
    struct hp__tcp_state *st = hp__tcp(s);
    if (st->nconns >= st->cfg.max_conns) {
        errno = ENFILE;
        return NULL;
    }
    struct hp_tcp_sock *c = hp__tcp_conn_new(s, family);
    if (!c)
        return NULL;
    c->flags |= HP__TCPF_ACCEPTED;
    c->ev.user = user;
    return c;
}

/*
 * Would binding (family, addr or the any address, port) clash? With a
 * listener, or with another bound socket that is not connected yet, when
 * either side is the any address or both have the same one. Connections
 * do not hold their local port against a bind (as with SO_REUSEADDR on
 * Linux): their 4-tuples are unique in the connection map, which connect
 * checks. IPv4 and IPv6 have separate port spaces (as with IPV6_V6ONLY).
 */
static bool port_in_use(struct hp_tcp_sock *self, const uint8_t *addr, bool wildcard, uint16_t port)
{
    size_t n = alen(self->key.family);
    struct hp__tcp_blocks *bl = &hp__tcp(self->s)->blocks;
    for (struct hp_tcp_sock *o = hp__tcp_block_next(bl, NULL); o; o = hp__tcp_block_next(bl, o)) {
        if (o == self || o->key.family != self->key.family || o->key.lport != port)
            continue;
        if (!(o->flags & HP__TCPF_LISTEN_KEY) && !bound_idle(o))
            continue;
        if (wildcard || (o->flags & HP__TCPF_WILDCARD) || memcmp(o->key.laddr, addr, n) == 0)
            return true;
    }
    return false;
}

/* An ephemeral port for bind(port 0) or listen on an unbound socket: one
 * that no socket of the family uses as its local port at all (one pass
 * over the sockets into a bitmap, then a search from a moving start). */
static int pick_port(struct hp_tcp_sock *self, uint16_t *out)
{
    uint64_t used[65536 / 64];
    memset(used, 0, sizeof used);
    struct hp__tcp_blocks *bl = &hp__tcp(self->s)->blocks;
    for (struct hp_tcp_sock *o = hp__tcp_block_next(bl, NULL); o; o = hp__tcp_block_next(bl, o))
        if (o != self && o->key.family == self->key.family && (o->flags & HP__TCPF_BOUND))
            used[o->key.lport / 64] |= 1ull << (o->key.lport % 64);
    struct hp__sock_state *ss = self->s->sock;
    uint32_t start = ss->ephemeral_next >= EPH_LO ? ss->ephemeral_next - EPH_LO : 0;
    for (uint32_t i = 0; i < EPH_N; i++) {
        uint32_t p = EPH_LO + (start + i) % EPH_N;
        if (!(used[p / 64] & (1ull << (p % 64)))) {
            ss->ephemeral_next = (uint16_t)(EPH_LO + (p - EPH_LO + 1u) % EPH_N);
            *out = (uint16_t)p;
            return 0;
        }
    }
    return -EADDRINUSE;
}

static int do_bind(struct hp_tcp_sock *c, const uint8_t *addr, bool wildcard, uint16_t port)
{
    if (port == 0) {
        int rc = pick_port(c, &port);
        if (rc < 0)
            return rc;
    } else if (port_in_use(c, addr, wildcard, port)) {
        return -EADDRINUSE;
    }
    hp__tcp_key_init(&c->key, c->key.family, wildcard ? NULL : addr, port, NULL, 0);
    c->flags |= HP__TCPF_BOUND;
    if (wildcard)
        c->flags |= HP__TCPF_WILDCARD;
    return 0;
}

HP_API int hp_tcp_bind(struct hp_tcp_sock *t, const struct hp_sockaddr *local)
{
    if (!t || !local || local->family != t->key.family || (t->flags & HP__TCPF_BOUND) ||
        t->state != HP_TCP_CLOSED || was_connected(t))
        return -EINVAL;
    bool wildcard = all_zero(local->addr, alen(t->key.family));
    if (!wildcard && !hp__addr_is_ours(t->s, t->key.family, local->addr))
        return -EADDRNOTAVAIL;
    return do_bind(t, local->addr, wildcard, local->port);
}

HP_API int hp_tcp_listen(struct hp_tcp_sock *t, int backlog)
{
    if (!t || t->state != HP_TCP_CLOSED || was_connected(t))
        return -EINVAL;
    struct hp__tcp_state *st = hp__tcp(t->s);
    if (!(t->flags & HP__TCPF_BOUND)) {
        static const uint8_t any[16];
        int rc = do_bind(t, any, true, 0);
        if (rc < 0)
            return rc;
    }
    struct hp__tcp_listenq *lq = calloc(1, sizeof *lq);
    if (!lq)
        return -ENOMEM;
    uint32_t max = st->cfg.syn_backlog_max;
    lq->backlog = backlog < 1 ? 1u : (uint32_t)backlog > max ? max : (uint32_t)backlog;
    int rc = hp__tcp_listen_insert(st->table, &t->key);
    if (rc < 0) {
        free(lq);
        return rc == -EEXIST ? -EADDRINUSE : rc;
    }
    t->lq = lq;
    t->flags |= HP__TCPF_LISTEN_KEY;
    hp__tcp_set_state(t, HP_TCP_LISTEN);
    return 0;
}

static void fill_addr(struct hp_sockaddr *out, int family, const uint8_t *addr, uint16_t port)
{
    memset(out, 0, sizeof *out);
    out->family = (uint8_t)family;
    out->port = port;
    memcpy(out->addr, addr, alen(family));
}

HP_API struct hp_tcp_sock *hp_tcp_accept(struct hp_tcp_sock *listener, void *user,
                                         struct hp_sockaddr *peer)
{
    if (!listener || listener->state != HP_TCP_LISTEN || !listener->lq) {
        errno = EINVAL;
        return NULL;
    }
    struct hp__tcp_listenq *lq = listener->lq;
    struct hp_tcp_sock *c = lq->acc_head;
    if (!c) {
        errno = EAGAIN;
        return NULL;
    }
    /* FIFO: the connection that completed its handshake first. */
    lq->acc_head = c->qnext;
    if (lq->acc_head)
        lq->acc_head->qprev = NULL;
    else
        lq->acc_tail = NULL;
    lq->nacc--;
    c->qnext = c->qprev = NULL;
    c->parent = NULL;
    c->flags = (c->flags & ~HP__TCPF_ACCQ) | HP__TCPF_ACCEPTED;
    c->ev.user = user;
    if (peer)
        fill_addr(peer, c->key.family, c->key.raddr, c->key.rport);
    /* Whatever happened before the accept (data, the peer's FIN, room to
     * send) was raised on nobody: report it now, as epoll does for a
     * socket added while ready. */
    uint32_t ev = hp_tcp_poll(c);
    if (ev)
        hp__sock_ev_raise(c->s->sock, &c->ev, ev);
    return c;
}

/* ---- connect ----------------------------------------------------------------------- */

static bool bad_remote(int family, const uint8_t *a)
{
    if (all_zero(a, alen(family)))
        return true;
    if (family == 6)
        return a[0] == 0xFF; /* multicast */
    return (a[0] & 0xF0) == 0xE0 || (a[0] & a[1] & a[2] & a[3]) == 0xFF;
}

/*
 * tw_reuse (Linux's tcp_tw_reuse, after RFC 6191): a connection may take
 * over a 4-tuple whose previous incarnation is in TIME_WAIT when that one
 * used timestamps and heard from the peer at least a second ago. Our
 * timestamp clock for a tuple continues across incarnations (the offset is
 * a hash of the tuple), so every segment of the new connection carries a
 * TSval above the old ones and PAWS (RFC 7323 5) on both sides keeps old
 * duplicates out; the new ISS starts a window past the old SND.NXT (as
 * Linux does), so the sequence spaces do not overlap either.
 */
static bool tw_reusable(const struct hp__tcp_state *st, const struct hp_tcp_sock *old)
{
    /* More than a second in whole seconds, as Linux has it: at least one. */
    return st->cfg.tw_reuse && old->state == HP_TCP_TIME_WAIT && (old->flags & HP__TCPF_TS_OK) &&
           (uint32_t)(hp__tcp_now_s(old->s) - old->ts_recent_s) > 1u;
}

/* Free the TIME_WAIT block; *iss_floor gets where the new ISS may start. */
static void tw_take(struct hp_tcp_sock *old, uint32_t *iss_floor)
{
    struct hp_stack *s = old->s;
    *iss_floor = old->snd_nxt + 65535u + 2u;
    hp__tcp_conn_free(old);
    hp__ctr(s, HP_CTR_TCP_TW_REUSED);
}

/* The tuple of k for a bound socket: free, or taken over from TIME_WAIT.
 * @return 0 (*tw set when taken over), or -EADDRINUSE. */
static int tuple_for_bound(struct hp_stack *s, const struct hp__tcp_key *k, bool *tw,
                           uint32_t *iss_floor)
{
    struct hp__tcp_state *st = hp__tcp(s);
    struct hp__tcp_key *w = hp__tcp_tw_lookup(st->table, k);
    if (w) {
        struct hp__tcp_tw *rec = HP__TCP_ENTRY(w, struct hp__tcp_tw, key);
        if (!hp__tcp_tw_reusable(s, rec))
            return -EADDRINUSE;
        hp__tcp_tw_take(s, rec, iss_floor);
        *tw = true;
        return 0;
    }
    struct hp_tcp_sock *old = entry(hp__tcp_conn_lookup(st->table, k));
    if (!old)
        return 0;
    if (!tw_reusable(st, old))
        return -EADDRINUSE;
    tw_take(old, iss_floor);
    *tw = true;
    return 0;
}

/* Every ephemeral port is taken: take over one whose tuple is in TIME_WAIT
 * (and on which nothing listens), if tw_reuse allows. */
static int tw_port(struct hp_stack *s, struct hp__tcp_key *k, bool *tw, uint32_t *iss_floor)
{
    struct hp__tcp_state *st = hp__tcp(s);
    if (!st->cfg.tw_reuse)
        return -EADDRNOTAVAIL;
    for (uint32_t i = 0; i < EPH_N; i++) {
        uint16_t p = (uint16_t)(EPH_LO + i);
        k->lport = p;
        struct hp__tcp_key *w = hp__tcp_tw_lookup(st->table, k);
        if (w && hp__tcp_tw_reusable(s, HP__TCP_ENTRY(w, struct hp__tcp_tw, key)) &&
            !hp__tcp_listen_get(st->table, k->family, k->laddr, p) &&
            !hp__tcp_listen_get(st->table, k->family, NULL, p)) {
            hp__tcp_tw_take(s, HP__TCP_ENTRY(w, struct hp__tcp_tw, key), iss_floor);
            *tw = true;
            return 0;
        }
        struct hp_tcp_sock *old = entry(hp__tcp_conn_lookup(st->table, k));
        if (!old || !tw_reusable(st, old))
            continue;
        if (hp__tcp_listen_get(st->table, k->family, k->laddr, p) ||
            hp__tcp_listen_get(st->table, k->family, NULL, p))
            continue;
        tw_take(old, iss_floor);
        *tw = true;
        return 0;
    }
    return -EADDRNOTAVAIL;
}

HP_API int hp_tcp_connect(struct hp_tcp_sock *t, const struct hp_sockaddr *remote)
{
    if (!t || !remote || remote->family != t->key.family)
        return -EINVAL;
    switch (t->state) {
    case HP_TCP_CLOSED:
        break;
    case HP_TCP_SYN_SENT:
        return -EALREADY;
    case HP_TCP_LISTEN:
        return -EINVAL;
    default:
        return -EISCONN;
    }
    /* A socket connects once; a failed or finished one is closed and a
     * new one opened. */
    if (was_connected(t))
        return -EINVAL;
    if (remote->port == 0 || bad_remote(t->key.family, remote->addr))
        return -EINVAL;
    struct hp_stack *s = t->s;
    struct hp__tcp_state *st = hp__tcp(s);
    struct hp__route rt;
    int rc =
        t->key.family == 4 ? hp__route4(s, remote->addr, &rt) : hp__route6(s, remote->addr, &rt);
    if (rc < 0) {
        hp__ctr(s, t->key.family == 4 ? HP_CTR_IP_OUT_NO_ROUTES : HP_CTR_IP6_OUT_NO_ROUTES);
        return -EHOSTUNREACH;
    }
    /* Nor a directed broadcast (RFC 1122 4.2.3.10): a connection's next
     * hop is unicast, which its output relies on (HP__IP_UNICAST). */
    if (t->key.family == 4 && hp__is_bcast4(rt.ifc, remote->addr))
        return -ENETUNREACH;
    /* Our address: the bound one, else the route's source. */
    uint8_t laddr[16];
    bool bound = (t->flags & HP__TCPF_BOUND) != 0;
    memcpy(laddr, (bound && !(t->flags & HP__TCPF_WILDCARD)) ? t->key.laddr : rt.src, 16);
    struct hp__tcp_key probe;
    hp__tcp_key_init(&probe, t->key.family, laddr, bound ? t->key.lport : 0, remote->addr,
                     remote->port);
    bool tw = false;
    uint32_t iss_floor = 0;
    if (bound) {
        rc = tuple_for_bound(t->s, &probe, &tw, &iss_floor);
    } else {
        /* RFC 6056 3.3.4, algorithm 4. */
        rc = hp__tcp_port_alloc(st->table, &probe);
        if (rc < 0)
            rc = tw_port(t->s, &probe, &tw, &iss_floor);
    }
    if (rc < 0)
        return rc;

    /* Kept to undo a failed attach: the socket stays as it was. */
    struct hp__tcp_key saved_key = t->key;
    uint32_t saved_flags = t->flags;
    uint16_t saved_rmss = t->rmss;
    rc = hp__tcp_conn_attach(t, t->key.family, laddr, probe.lport, remote->addr, remote->port);
    if (rc < 0) {
        t->key = saved_key;
        t->flags = saved_flags;
        t->rmss = saved_rmss;
        if (rc == -EEXIST)
            return bound ? -EADDRINUSE : -EADDRNOTAVAIL;
        return rc == -ENOSPC ? -ENOBUFS : rc;
    }
    if (tw && hp__seq_lt(t->iss, iss_floor))
        t->iss = t->snd_una = t->snd_nxt = t->snd_max = iss_floor;
    hp__tcp_set_state(t, HP_TCP_SYN_SENT);
    hp__ctr(s, HP_CTR_TCP_ACTIVE_OPENS);
    /* The SYN is outstanding from here on even if no buffer could be had
     * for it now (-ENOBUFS): the retransmission timer sends it. */
    (void)hp__tcp_send_syn(t);
    return -EINPROGRESS;
}

/* ---- send ---------------------------------------------------------------------------- */

static bool can_output(const struct hp_tcp_sock *c)
{
    return c->state == HP_TCP_ESTABLISHED || c->state == HP_TCP_CLOSE_WAIT;
}

/* Whether the user may queue data now: 0, or the error to return. A
 * pending error is reported once (and cleared). */
static int send_check(struct hp_tcp_sock *c)
{
    if (c->err) {
        int e = c->err;
        c->err = 0;
        return e;
    }
    switch (c->state) {
    case HP_TCP_SYN_SENT:
    case HP_TCP_SYN_RECEIVED:
    case HP_TCP_ESTABLISHED:
    case HP_TCP_CLOSE_WAIT:
        return (c->flags & HP__TCPF_FIN_QUEUED) ? -EPIPE : 0;
    case HP_TCP_CLOSED:
        return was_connected(c) ? -EPIPE : -ENOTCONN;
    case HP_TCP_LISTEN:
        return -ENOTCONN;
    default: /* FIN_WAIT_*, CLOSING, LAST_ACK, TIME_WAIT: we sent our FIN */
        return -EPIPE;
    }
}

static uint32_t send_room(const struct hp_tcp_sock *c)
{
    return c->sndbuf > c->sndq.bytes ? c->sndbuf - c->sndq.bytes : 0;
}

/* Queue what of [data, data + len) the send buffer and the pool take: the
 * bytes taken; HP__TCPF_SEND_SPACE when fewer than len (HP_EV_OUT then
 * follows), *no_bufs when the pool refused bytes the room allowed. */
static uint32_t queue_bytes(struct hp_tcp_sock *t, const void *data, size_t len, bool *no_bufs)
{
    uint32_t room = send_room(t);
    uint32_t want = len < room ? (uint32_t)len : room;
    uint32_t took = want ? hp__tcp_sndq_append(&t->sndq, hp__tcp_ifc(t)->pool, data, want) : 0;
    if (took < len)
        t->flags |= HP__TCPF_SEND_SPACE;
    if (took < want)
        *no_bufs = true;
    return took;
}

HP_API long hp_tcp_send(struct hp_tcp_sock *t, const void *data, size_t len)
{
    if (!t || (!data && len))
        return -EINVAL;
    int rc = send_check(t);
    if (rc < 0)
        return rc;
    if (len == 0)
        return 0;
    bool no_bufs = false;
    uint32_t took = queue_bytes(t, data, len, &no_bufs);
    if (took == 0) {
        if (no_bufs)
            hp__ctr(t->s, HP_CTR_TCP_NO_BUFFERS); /* room, but the pool is empty */
        return -EAGAIN;
    }
    if (can_output(t))
        hp__tcp_output(t);
    return (long)took;
}

/* The pieces are queued first and transmitted after the last, so that a
 * header and a body written together leave in one segment (as Linux's
 * tcp_sendmsg copies the whole iovec before it pushes): sent piece by
 * piece, a NODELAY connection would put each in a segment of its own. */
HP_API long hp_tcp_sendv(struct hp_tcp_sock *t, const struct iovec *iov, int iovcnt)
{
    if (!t || iovcnt < 0 || (!iov && iovcnt))
        return -EINVAL;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (!iov[i].iov_base && iov[i].iov_len)
            return -EINVAL;
        if (iov[i].iov_len > SIZE_MAX - total)
            return -EINVAL;
        total += iov[i].iov_len;
    }
    int rc = send_check(t);
    if (rc < 0)
        return rc;
    if (total == 0)
        return 0;
    bool no_bufs = false;
    size_t sent = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len == 0)
            continue;
        uint32_t took = queue_bytes(t, iov[i].iov_base, iov[i].iov_len, &no_bufs);
        sent += took;
        if (took < iov[i].iov_len)
            break;
    }
    if (sent == 0) {
        if (no_bufs)
            hp__ctr(t->s, HP_CTR_TCP_NO_BUFFERS);
        return -EAGAIN;
    }
    if (can_output(t))
        hp__tcp_output(t);
    return (long)sent;
}

HP_API long hp_tcp_send_buf(struct hp_tcp_sock *t, struct hp_buf *b)
{
    if (!t || !b)
        return -EINVAL;
    int rc = send_check(t);
    if (rc < 0)
        return rc;
    uint32_t len = b->pkt_len;
    /* All or nothing; a buffer larger than the whole send buffer is taken
     * when the queue is empty, else it could never be sent. */
    if (len > send_room(t) && t->sndq.bytes > 0) {
        t->flags |= HP__TCPF_SEND_SPACE;
        return -EAGAIN;
    }
    if (hp__tcp_sndq_push(&t->sndq, hp__tcp_ifc(t)->pool, b) < 0) {
        hp__ctr(t->s, HP_CTR_TCP_NO_BUFFERS); /* for the bytes queued inline before b */
        return -EAGAIN;
    }
    if (len && can_output(t))
        hp__tcp_output(t);
    return (long)len;
}

/* ---- receive -------------------------------------------------------------------------- */

/*
 * No data to return: what to say instead. A pending error first (once),
 * then the end of stream (0) once the peer's FIN is in, after SHUT_RD, or
 * when the connection is over (an error already reported: later calls see
 * 0, as with Linux); -ENOTCONN for a socket that never connected or a
 * listener; -EAGAIN while the connection may still deliver data.
 */
static long recv_nodata(struct hp_tcp_sock *c)
{
    if (c->err) {
        int e = c->err;
        c->err = 0;
        return e;
    }
    if (c->state == HP_TCP_LISTEN)
        return -ENOTCONN;
    if (c->flags & (HP__TCPF_FIN_RCVD | HP__TCPF_SHUT_RD)) {
        c->flags |= HP__TCPF_EOF_SEEN;
        return 0;
    }
    if (c->state == HP_TCP_CLOSED)
        return was_connected(c) ? 0 : -ENOTCONN;
    return -EAGAIN;
}

/* The part of a read that has data, out of line: a reader calls until
 * -EAGAIN, and the empty call then returns without this part's register
 * saves (about 15 instructions of a one-byte read's 60). */
static __attribute__((noinline)) long recv_copy(struct hp_tcp_sock *t, void *data, uint32_t n)
{
    hp__tcp_rcvq_read(&t->rcvq, data, n);
    if (hp__tcp_synchronized(t))
        hp__tcp_window_update(t);
    return (long)n;
}

HP_API long hp_tcp_recv(struct hp_tcp_sock *t, void *data, size_t cap)
{
    if (!t || (!data && cap))
        return -EINVAL;
    if (!t->rcvq.bytes)
        return recv_nodata(t);
    if (cap == 0)
        return 0;
    return recv_copy(t, data, cap < t->rcvq.bytes ? (uint32_t)cap : t->rcvq.bytes);
}

HP_API long hp_tcp_recv_buf(struct hp_tcp_sock *t, struct hp_buf **b)
{
    if (!t || !b)
        return -EINVAL;
    *b = NULL;
    if (!t->rcvq.bytes)
        return recv_nodata(t);
    struct hp_buf *h = hp__tcp_rcvq_pop(&t->rcvq);
    if (hp__tcp_synchronized(t))
        hp__tcp_window_update(t);
    *b = h;
    return (long)h->data_len;
}

/* ---- shutdown, close, abort -------------------------------------------------------------- */

/* RFC 9293 3.10.4: queue our FIN after the data; in SYN-RECEIVED it waits
 * for ESTABLISHED (hp__tcp_established moves on to FIN-WAIT-1). */
static void queue_fin(struct hp_tcp_sock *c)
{
    if (c->flags & HP__TCPF_FIN_QUEUED)
        return;
    if (c->state == HP_TCP_ESTABLISHED)
        hp__tcp_set_state(c, HP_TCP_FIN_WAIT_1);
    else if (c->state == HP_TCP_CLOSE_WAIT)
        hp__tcp_set_state(c, HP_TCP_LAST_ACK);
    else if (c->state != HP_TCP_SYN_RECEIVED)
        return;
    c->flags |= HP__TCPF_FIN_QUEUED;
}

/* RFC 9293 3.10.4 (CLOSE in SYN-SENT): delete the TCB. The handle stays
 * for the user; the connection is over without anything sent. */
static void forget_syn_sent(struct hp_tcp_sock *c)
{
    hp__tcp_timers_cancel(c);
    hp__tcp_sndq_purge(&c->sndq);
    if (c->flags & HP__TCPF_IN_TABLE) {
        hp__tcp_conn_remove(hp__tcp(c->s)->table, &c->key);
        c->flags &= ~HP__TCPF_IN_TABLE;
    }
    hp__tcp_set_state(c, HP_TCP_CLOSED);
    hp__tcp_wake(c, HP_EV_HUP);
}

HP_API int hp_tcp_shutdown(struct hp_tcp_sock *t, int how)
{
    if (!t || how < HP_TCP_SHUT_RD || how > (HP_TCP_SHUT_RD | HP_TCP_SHUT_WR))
        return -EINVAL;
    if (t->state == HP_TCP_CLOSED || t->state == HP_TCP_LISTEN)
        return -ENOTCONN;
    if (how & HP_TCP_SHUT_RD) {
        /* Queued and later data is discarded; the peer is not told (RFC
         * 9293 has no half-close of the receiving side). */
        t->flags |= HP__TCPF_SHUT_RD;
        hp__tcp_rcvq_purge(&t->rcvq);
    }
    if (how & HP_TCP_SHUT_WR) {
        if (t->state == HP_TCP_SYN_SENT) {
            forget_syn_sent(t);
            return 0;
        }
        queue_fin(t);
    }
    if ((how & HP_TCP_SHUT_RD) && hp__tcp_synchronized(t))
        hp__tcp_window_update(t); /* the purged bytes are free room again */
    if ((how & HP_TCP_SHUT_WR) && (t->state == HP_TCP_FIN_WAIT_1 || t->state == HP_TCP_LAST_ACK))
        hp__tcp_output(t);
    return 0;
}

/* RFC 9293 3.10.5: states in which an ABORT sends a reset. */
static bool rst_state(const struct hp_tcp_sock *c)
{
    switch (c->state) {
    case HP_TCP_SYN_RECEIVED:
    case HP_TCP_ESTABLISHED:
    case HP_TCP_FIN_WAIT_1:
    case HP_TCP_FIN_WAIT_2:
    case HP_TCP_CLOSE_WAIT:
        return true;
    default:
        return false;
    }
}

/* Reset and free: abort, close with unread data or LINGER0. */
static void reset_free(struct hp_tcp_sock *c)
{
    if (rst_state(c))
        hp__tcp_send_rst(c);
    hp__tcp_set_state(c, HP_TCP_CLOSED);
    hp__tcp_conn_free(c);
}

/* A listener goes: no more SYNs find it, and the connections in its
 * queues (which nobody accepted) are reset and freed with it. */
static void close_listener(struct hp_tcp_sock *l)
{
    if (l->flags & HP__TCPF_LISTEN_KEY) {
        hp__tcp_listen_remove(hp__tcp(l->s)->table, &l->key);
        l->flags &= ~HP__TCPF_LISTEN_KEY;
    }
    if (l->lq) {
        for (struct hp_tcp_sock *c = l->lq->syn_head; c; c = c->qnext)
            if (rst_state(c))
                hp__tcp_send_rst(c);
        for (struct hp_tcp_sock *c = l->lq->acc_head; c; c = c->qnext)
            if (rst_state(c))
                hp__tcp_send_rst(c);
    }
    hp__tcp_set_state(l, HP_TCP_CLOSED);
    hp__tcp_conn_free(l);
}

HP_API int hp_tcp_close(struct hp_tcp_sock *t)
{
    if (!t)
        return 0;
    if (t->state == HP_TCP_LISTEN || t->lq) {
        close_listener(t);
        return 0;
    }
    switch (t->state) {
    case HP_TCP_CLOSED:
        hp__tcp_conn_free(t);
        return 0;
    case HP_TCP_SYN_SENT:
        /* RFC 9293 3.10.4: delete the TCB. */
        hp__tcp_set_state(t, HP_TCP_CLOSED);
        hp__tcp_conn_free(t);
        return 0;
    default:
        break;
    }
    /* Unread data: the peer must learn that it was not delivered (RFC 9293
     * 3.10.4 leaves it open; Linux resets, RFC 2525 2.17 argues for it);
     * LINGER0 asks for the reset. */
    if (t->rcvq.bytes > 0 || (t->flags & HP__TCPF_LINGER0)) {
        hp__ctr(t->s, HP_CTR_TCP_ABORT_ON_CLOSE);
        reset_free(t);
        return 0;
    }
    /* In order: our FIN after the queued data; the block lives on as an
     * orphan until hp__tcp_closed() (LAST_ACK acknowledged, TIME_WAIT or
     * the FIN_WAIT_2 timer over) or hp__tcp_drop() frees it. */
    queue_fin(t);
    t->flags |= HP__TCPF_ORPHAN;
    hp__sock_ev_remove(t->s->sock, &t->ev);
    t->ev.user = NULL;
    hp__tcp_misc_rearm(t);
    if (t->state == HP_TCP_FIN_WAIT_1 || t->state == HP_TCP_LAST_ACK)
        hp__tcp_output(t);
    else if (t->state == HP_TCP_TIME_WAIT)
        (void)hp__tcp_tw_compact(t); /* the rest of the wait without the block */
    return 0;
}

HP_API int hp_tcp_abort(struct hp_tcp_sock *t)
{
    if (!t)
        return 0;
    if (t->state == HP_TCP_LISTEN || t->lq)
        close_listener(t);
    else
        reset_free(t);
    return 0;
}

/* ---- options -------------------------------------------------------------------------------- */

static int set_flag(struct hp_tcp_sock *c, uint32_t flag, long v)
{
    if (v != 0 && v != 1)
        return -EINVAL;
    if (v)
        c->flags |= flag;
    else
        c->flags &= ~flag;
    return 0;
}

/* HP_TCP_OPT_CC: the algorithm from now on. An established connection
 * keeps cwnd and ssthresh (as Linux's TCP_CONGESTION); a socket not yet
 * established uses it from the handshake's end. */
static int set_cc(struct hp_tcp_sock *t, long v)
{
    if (v < HP_TCP_CC_DEFAULT || v > HP_TCP_CC_CUBIC)
        return -EINVAL;
    uint8_t algo = v == HP_TCP_CC_DEFAULT ? hp__tcp(t->s)->cfg.cc : (uint8_t)v;
    t->cc_algo = algo;
    if (hp__tcp_synchronized(t) && t->cc.algo != algo)
        hp__tcp_cc_set_algo(&t->cc, hp__tcp_cubic_of(t, false), algo, t->snd_max);
    return 0;
}

HP_API int hp_tcp_cc_by_name(const char *name)
{
    if (!name)
        return -EINVAL;
    if (!strcasecmp(name, "cubic"))
        return HP_TCP_CC_CUBIC;
    if (!strcasecmp(name, "newreno") || !strcasecmp(name, "reno"))
        return HP_TCP_CC_NEWRENO;
    return -EINVAL;
}

HP_API int hp_tcp_setopt(struct hp_tcp_sock *t, enum hp_tcp_opt opt, long v)
{
    if (!t)
        return -EINVAL;
    int rc;
    switch (opt) {
    case HP_TCP_OPT_NODELAY:
        rc = set_flag(t, HP__TCPF_NODELAY, v);
        /* Like Linux: turning Nagle off sends what it was holding back. */
        if (rc == 0 && v && can_output(t))
            hp__tcp_output(t);
        return rc;
    case HP_TCP_OPT_SNDBUF:
        if (v < BUF_MIN || v > BUF_MAX)
            return -EINVAL;
        t->sndbuf = (uint32_t)v;
        if ((t->flags & HP__TCPF_SEND_SPACE) && can_output(t) && hp__tcp_send_room_ok(t))
            hp__tcp_wake(t, HP_EV_OUT);
        return 0;
    case HP_TCP_OPT_RCVBUF:
        if (v < BUF_MIN || v > BUF_MAX)
            return -EINVAL;
        t->rcvbuf = (uint32_t)v;
        if (hp__tcp_synchronized(t))
            hp__tcp_window_update(t);
        return 0;
    case HP_TCP_OPT_KEEPALIVE:
        rc = set_flag(t, HP__TCPF_KEEPALIVE, v);
        if (rc == 0 && hp__tcp_synchronized(t))
            hp__tcp_misc_rearm(t);
        return rc;
    case HP_TCP_OPT_KEEPIDLE:
    case HP_TCP_OPT_KEEPINTVL:
    case HP_TCP_OPT_KEEPCNT: {
        long max = opt == HP_TCP_OPT_KEEPCNT ? 127 : 32767; /* Linux's bounds */
        if (v < 1 || v > max)
            return -EINVAL;
        if (opt == HP_TCP_OPT_KEEPIDLE)
            t->ka_idle_s = (uint32_t)v;
        else if (opt == HP_TCP_OPT_KEEPINTVL)
            t->ka_intvl_s = (uint32_t)v;
        else
            t->ka_cnt = (uint32_t)v;
        if ((t->flags & HP__TCPF_KEEPALIVE) && hp__tcp_synchronized(t))
            hp__tcp_misc_rearm(t);
        return 0;
    }
    case HP_TCP_OPT_LINGER0:
        return set_flag(t, HP__TCPF_LINGER0, v);
    case HP_TCP_OPT_QUICKACK:
        return set_flag(t, HP__TCPF_QUICKACK, v);
    case HP_TCP_OPT_MAXSEG:
        if (v < 88 || v > 65495)
            return -EINVAL;
        /* Announced in our SYN: too late once connecting. A listener
         * passes it on to the connections it makes. */
        if ((t->state != HP_TCP_CLOSED && t->state != HP_TCP_LISTEN) || was_connected(t))
            return -EINVAL;
        t->rmss = (uint16_t)v;
        return 0;
    case HP_TCP_OPT_CC:
        return set_cc(t, v);
    }
    return -EINVAL;
}

HP_API int hp_tcp_getopt(const struct hp_tcp_sock *t, enum hp_tcp_opt opt, long *value)
{
    if (!t || !value)
        return -EINVAL;
    switch (opt) {
    case HP_TCP_OPT_NODELAY:
        *value = !!(t->flags & HP__TCPF_NODELAY);
        return 0;
    case HP_TCP_OPT_SNDBUF:
        *value = t->sndbuf;
        return 0;
    case HP_TCP_OPT_RCVBUF:
        *value = t->rcvbuf;
        return 0;
    case HP_TCP_OPT_KEEPALIVE:
        *value = !!(t->flags & HP__TCPF_KEEPALIVE);
        return 0;
    case HP_TCP_OPT_KEEPIDLE:
        *value = t->ka_idle_s;
        return 0;
    case HP_TCP_OPT_KEEPINTVL:
        *value = t->ka_intvl_s;
        return 0;
    case HP_TCP_OPT_KEEPCNT:
        *value = t->ka_cnt;
        return 0;
    case HP_TCP_OPT_LINGER0:
        *value = !!(t->flags & HP__TCPF_LINGER0);
        return 0;
    case HP_TCP_OPT_QUICKACK:
        *value = !!(t->flags & HP__TCPF_QUICKACK);
        return 0;
    case HP_TCP_OPT_MAXSEG:
        /* Connected: the segment size we send with; before: what the user
         * set (0: from the MTU). */
        *value = was_connected(t) ? t->smss : t->rmss;
        return 0;
    case HP_TCP_OPT_CC:
        *value = t->cc_algo;
        return 0;
    }
    return -EINVAL;
}

/* ---- readiness and introspection --------------------------------------------------------------- */

HP_API uint32_t hp_tcp_poll(const struct hp_tcp_sock *t)
{
    if (!t)
        return 0;
    uint32_t ev = t->err ? HP_EV_ERR : 0;
    if (t->state == HP_TCP_LISTEN)
        return ev | ((t->lq && t->lq->nacc) ? HP_EV_IN : 0);
    bool over = t->state == HP_TCP_CLOSED && was_connected(t);
    if (t->rcvq.bytes || (t->flags & (HP__TCPF_FIN_RCVD | HP__TCPF_SHUT_RD)) || t->err || over)
        ev |= HP_EV_IN;
    if (can_output(t) && !(t->flags & HP__TCPF_FIN_QUEUED) && hp__tcp_send_room_ok(t))
        ev |= HP_EV_OUT;
    /* Over in both directions: closed after a connection, or TIME_WAIT
     * (our FIN acknowledged and the peer's received). */
    if (over || t->state == HP_TCP_TIME_WAIT)
        ev |= HP_EV_HUP;
    return ev;
}

HP_API int hp_tcp_error(struct hp_tcp_sock *t)
{
    if (!t)
        return 0;
    int e = t->err;
    t->err = 0;
    return e;
}

HP_API enum hp_tcp_state hp_tcp_state(const struct hp_tcp_sock *t)
{
    return t ? (enum hp_tcp_state)t->state : HP_TCP_CLOSED;
}

HP_API const char *hp_tcp_state_name(int state)
{
    static const char *const names[] = {
        [HP_TCP_CLOSED] = "CLOSED",           [HP_TCP_LISTEN] = "LISTEN",
        [HP_TCP_SYN_SENT] = "SYN_SENT",       [HP_TCP_SYN_RECEIVED] = "SYN_RECEIVED",
        [HP_TCP_ESTABLISHED] = "ESTABLISHED", [HP_TCP_FIN_WAIT_1] = "FIN_WAIT_1",
        [HP_TCP_FIN_WAIT_2] = "FIN_WAIT_2",   [HP_TCP_CLOSE_WAIT] = "CLOSE_WAIT",
        [HP_TCP_CLOSING] = "CLOSING",         [HP_TCP_LAST_ACK] = "LAST_ACK",
        [HP_TCP_TIME_WAIT] = "TIME_WAIT",
    };
    if (state < 0 || (size_t)state >= sizeof names / sizeof names[0])
        return "?";
    return names[state];
}

HP_API void hp_tcp_local(const struct hp_tcp_sock *t, struct hp_sockaddr *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!t)
        return;
    out->family = t->key.family;
    if (t->flags & HP__TCPF_BOUND)
        fill_addr(out, t->key.family, t->key.laddr, t->key.lport);
}

HP_API void hp_tcp_peer(const struct hp_tcp_sock *t, struct hp_sockaddr *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!t)
        return;
    out->family = t->key.family;
    if (was_connected(t) && t->state != HP_TCP_CLOSED)
        fill_addr(out, t->key.family, t->key.raddr, t->key.rport);
}

HP_API int hp_tcp_get_info(const struct hp_tcp_sock *t, struct hp_tcp_info *out)
{
    if (!t || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    out->state = t->state;
    out->ts_ok = (t->flags & HP__TCPF_TS_OK) != 0;
    out->ws_ok = (t->flags & HP__TCPF_WS_OK) != 0;
    out->snd_wscale = t->snd_wscale;
    out->rcv_wscale = t->rcv_wscale;
    out->snd_mss = t->mss_eff;
    out->rcv_mss = t->rmss;
    out->rto_us = hp__tcp_rtt_rto(&t->rtt);
    out->srtt_us = hp__tcp_rtt_srtt_us(&t->rtt);
    out->rttvar_us = hp__tcp_rtt_rttvar_us(&t->rtt);
    out->cwnd = t->cc.cwnd;
    out->ssthresh = t->cc.ssthresh;
    out->snd_wnd = t->snd_wnd;
    out->rcv_wnd = t->rcv_wnd;
    /* Bytes only: not our SYN or FIN, which take a sequence number each. */
    uint32_t unacked = t->snd_max - t->snd_una;
    if (unacked && t->snd_una == t->iss)
        unacked--;
    if (unacked && (t->flags & HP__TCPF_FIN_SENT))
        unacked--;
    out->unacked = unacked;
    out->sndq = t->sndq.bytes;
    out->rcvq = t->rcvq.bytes;
    out->ooo_segs = t->ooo_n;
    out->bytes_sent = t->bytes_sent;
    out->bytes_acked = t->sndq.start;
    out->bytes_received = t->bytes_received;
    out->segs_out = t->segs_out;
    out->segs_in = t->segs_in;
    out->sack_ok = (t->flags & HP__TCPF_SACK_OK) != 0;
    out->ecn_ok = (t->flags & HP__TCPF_ECN_OK) != 0;
    out->cc = hp__tcp_synchronized(t) ? t->cc.algo : t->cc_algo;
    out->pmtu = t->pmtu;
    out->reordering = 3;                /* RFC 6675's DupThresh until more is seen */
    const struct hp__tcp_ext *x = t->x; /* none: nothing of it happened yet */
    if (!x)
        return 0;
    out->retrans_segs = x->st.retrans_segs;
    out->fast_retrans = x->st.fast_retrans;
    out->timeouts = x->st.timeouts;
    out->dupacks_in = x->st.dupacks_in;
    out->min_rtt_us =
        (uint32_t)(x->sb.min_rtt_ns / 1000u > UINT32_MAX ? UINT32_MAX : x->sb.min_rtt_ns / 1000u);
    out->sacked = x->sb.sacked;
    out->lost = x->sb.lost;
    out->reordering = x->sb.reordering;
    out->delivery_rate = x->sb.rate;
    out->recoveries = x->st.fast_retrans;
    out->tlp_probes = x->st.tlp_probes;
    out->dsacks_in = x->st.dsacks_in;
    out->spurious_undos = x->st.spurious_undos;
    out->ecn_ce_in = x->st.ecn_ce_in;
    out->ecn_reductions = x->st.ecn_reductions;
    out->pmtu_probes = x->st.pmtu_probes;
    return 0;
}
