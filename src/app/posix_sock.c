/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's socket calls: socket, bind, listen, accept, connect, shutdown, close, getsockname, getpeername, with Linux's errors for each misuse. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/buf.h>

#include "posix_internal.h"

/* ---- addresses ---------------------------------------------------------------- */

/* The sockaddr_in6 of RFC 2133, without sin6_scope_id: Linux still takes it. */
#define PX_SIN6_LEN_RFC2133 24

static const uint8_t v4mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int hp__px_addr_in(int domain, const struct sockaddr *sa, socklen_t len, struct hp_sockaddr *out)
{
    memset(out, 0, sizeof *out);
    if (!sa)
        return -EFAULT;
    if (domain == 4) {
        if (len < (socklen_t)sizeof(struct sockaddr_in))
            return -EINVAL;
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (in->sin_family != AF_INET)
            return -EAFNOSUPPORT;
        out->family = 4;
        out->port = ntohs(in->sin_port);
        memcpy(out->addr, &in->sin_addr, 4);
        return 0;
    }
    if (len < (socklen_t)PX_SIN6_LEN_RFC2133)
        return -EINVAL;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    if (in6->sin6_family != AF_INET6)
        return -EAFNOSUPPORT;
    out->port = ntohs(in6->sin6_port);
    if (memcmp(in6->sin6_addr.s6_addr, v4mapped_prefix, 12) == 0) {
        out->family = 4;
        memcpy(out->addr, in6->sin6_addr.s6_addr + 12, 4);
    } else {
        out->family = 6;
        memcpy(out->addr, in6->sin6_addr.s6_addr, 16);
    }
    return 0;
}

void hp__px_addr_out(int domain, const struct hp_sockaddr *a, struct sockaddr *sa, socklen_t *len)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t full;
    if (domain == 4) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(a->port);
        memcpy(&in->sin_addr, a->addr, 4);
        full = sizeof *in;
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(a->port);
        if (a->family == 4) {
            memcpy(in6->sin6_addr.s6_addr, v4mapped_prefix, 12);
            memcpy(in6->sin6_addr.s6_addr + 12, a->addr, 4);
        } else {
            memcpy(in6->sin6_addr.s6_addr, a->addr, 16);
        }
        full = sizeof *in6;
    }
    if (!sa || !len)
        return;
    memcpy(sa, &ss, *len < full ? *len : full);
    *len = full;
}

static bool addr_any(const struct hp_sockaddr *a)
{
    static const uint8_t zero[16];
    return memcmp(a->addr, zero, a->family == 4 ? 4 : 16) == 0;
}

/* ---- entering a call ------------------------------------------------------------ */

int hp__px_enter(int fd, struct px_sock **out)
{
    struct px_obj *o = hp__px_fd_get(fd);
    if (!o || o->kind == PX_K_INTERNAL)
        return -EBADF;
    if (o->kind != PX_K_SOCK)
        return -ENOTSOCK;
    struct px_sock *ps = (struct px_sock *)o;
    if (ps->dead) {
        static bool said;
        if (!said) {
            said = true;
            hp__px_say(
                "fd %d: a hotpath socket of process %ld, whose stack this process cannot use "
                "(a fork child, or the program is exiting): %s",
                fd, (long)hp__px.pid, strerror(PX_DEAD_ERRNO));
        }
        return -PX_DEAD_ERRNO;
    }
    *out = ps;
    return 0;
}

/* ---- socket ------------------------------------------------------------------- */

int hp__px_socket(int domain, int type, int protocol)
{
    int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    int proto = kind == SOCK_STREAM ? PX_TCP : PX_UDP;
    if ((proto == PX_TCP && protocol != 0 && protocol != IPPROTO_TCP) ||
        (proto == PX_UDP && protocol != 0 && protocol != IPPROTO_UDP))
        return -EPROTONOSUPPORT;
    hp__px_lock();
    int rc = hp__px_ensure_stack();
    if (rc != 0) {
        hp__px_unlock();
        return rc > 0 ? PX_USE_KERNEL : rc;
    }
    int fd = hp__px_reserve_fd((type & SOCK_CLOEXEC) != 0);
    struct px_sock *ps = fd >= 0 ? hp__px_sock_new(proto, domain == AF_INET ? 4 : 6) : NULL;
    if (!ps) {
        if (fd >= 0)
            PX_REAL(close)(fd);
        hp__px_unlock();
        return fd < 0 ? fd : -ENOMEM;
    }
    ps->nonblock = (type & SOCK_NONBLOCK) != 0;
    /* Linux's default, net.ipv6.bindv6only = 0: an AF_INET6 socket takes
     * IPv4 too unless IPV6_V6ONLY says otherwise. */
    ps->v6only = false;
    ps->o.refs = 1;
    hp__px_fd_install(fd, &ps->o);
    hp__px_unlock();
    return fd;
}

/* ---- handles ---------------------------------------------------------------- */

/* Make the TCP or UDP handle of family f (none may exist yet in that slot). */
static int open_handle(struct px_sock *ps, int f, bool second)
{
    struct hp_stack *s = hp__px.stack;
    if (ps->proto == PX_TCP) {
        struct hp_tcp_sock *t = hp_tcp_open(s, f, ps);
        if (!t)
            return errno == ENFILE ? -ENFILE : -ENOMEM;
        hp__px_opts_apply(ps, t);
        *(second ? &ps->t4 : &ps->t) = t;
    } else {
        struct hp_udp_sock *u = hp_udp_open(s, f, ps);
        if (!u)
            return -ENOMEM;
        *(second ? &ps->u4 : &ps->u) = u;
        hp__px_udp_opts_apply(ps, u);
    }
    if (!second)
        ps->hfamily = (uint8_t)f;
    return 0;
}

void hp__px_close_handles(struct px_sock *ps, bool abort_tcp)
{
    if (ps->t)
        abort_tcp ? hp_tcp_abort(ps->t) : hp_tcp_close(ps->t);
    if (ps->t4)
        abort_tcp ? hp_tcp_abort(ps->t4) : hp_tcp_close(ps->t4);
    hp_udp_close(ps->u);
    hp_udp_close(ps->u4);
    ps->t = ps->t4 = NULL;
    ps->u = ps->u4 = NULL;
    ps->hfamily = 0;
}

void hp__px_sock_release(struct px_sock *ps)
{
    if (ps->dead)
        return;
    if (ps->peek)
        hp_buf_free(ps->peek);
    ps->peek = NULL;
    bool linger0 = ps->opt.linger_on && ps->opt.linger_s == 0;
    hp__px_close_handles(ps, linger0);
}

static int bind_one(struct px_sock *ps, struct hp_sockaddr *a, bool second)
{
    int rc = ps->proto == PX_TCP ? hp_tcp_bind(second ? ps->t4 : ps->t, a)
                                 : hp_udp_bind(second ? ps->u4 : ps->u, a);
    return rc;
}

static void local_of(struct px_sock *ps, struct hp_sockaddr *out)
{
    memset(out, 0, sizeof *out);
    out->family = ps->hfamily ? ps->hfamily : ps->domain;
    if (ps->t)
        hp_tcp_local(ps->t, out);
    else if (ps->u)
        hp_udp_local(ps->u, out);
}

/* An AF_INET6 socket on [::] without IPV6_V6ONLY: a second handle holds
 * the same port in IPv4. An ephemeral port taken in IPv4 is retried. */
static int bind_dual(struct px_sock *ps, const struct hp_sockaddr *a6)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        int rc = open_handle(ps, 6, false);
        if (rc == 0)
            rc = open_handle(ps, 4, true);
        struct hp_sockaddr a = *a6, got;
        if (rc == 0)
            rc = bind_one(ps, &a, false);
        if (rc == 0) {
            local_of(ps, &got);
            struct hp_sockaddr a4 = {.family = 4, .port = got.port};
            rc = bind_one(ps, &a4, true);
            if (rc == 0)
                return 0;
        }
        hp__px_close_handles(ps, true);
        if (rc != -EADDRINUSE || a6->port != 0)
            return rc;
    }
    return -EADDRINUSE;
}

static int do_bind(struct px_sock *ps, const struct hp_sockaddr *a)
{
    if (a->family == 4 && ps->domain == 6 && ps->v6only)
        return -EINVAL;
    int rc;
    if (ps->domain == 6 && a->family == 6 && !ps->v6only && addr_any(a)) {
        rc = bind_dual(ps, a);
    } else {
        rc = open_handle(ps, a->family, false);
        struct hp_sockaddr b = *a;
        if (rc == 0 && (rc = bind_one(ps, &b, false)) < 0)
            hp__px_close_handles(ps, true);
    }
    if (rc == 0) {
        ps->bound = true;
        local_of(ps, &ps->local);
    }
    return rc;
}

int hp__px_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    struct hp_sockaddr a;
    if (rc == 0 && ps->domain == 4 && sa && len >= (socklen_t)sizeof(struct sockaddr_in) &&
        sa->sa_family == AF_UNSPEC &&
        ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY)) {
        /* Linux takes AF_UNSPEC with INADDR_ANY as AF_INET (old programs). */
        struct sockaddr_in in = *(const struct sockaddr_in *)sa;
        in.sin_family = AF_INET;
        rc = hp__px_addr_in(4, (struct sockaddr *)&in, sizeof in, &a);
    } else if (rc == 0) {
        rc = hp__px_addr_in(ps->domain, sa, len, &a);
    }
    if (rc == 0 && (ps->bound || ps->hfamily))
        rc = -EINVAL;
    if (rc == 0)
        rc = do_bind(ps, &a);
    hp__px_unlock();
    return rc;
}

/* ---- listen / accept -------------------------------------------------------- */

static int renew(struct px_sock *ps);

int hp__px_listen(int fd, int backlog)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && ps->proto != PX_TCP)
        rc = -EOPNOTSUPP;
    enum hp_tcp_state st = rc == 0 ? hp_tcp_state(ps->t) : HP_TCP_CLOSED;
    if (rc == 0 && !ps->listening && ps->t && st != HP_TCP_CLOSED)
        rc = -EINVAL; /* connected or connecting */
    if (rc == 0 && !ps->listening && ps->tried)
        rc = renew(ps); /* a connection attempt failed: the socket is free again */
    if (rc == 0 && !ps->hfamily) {
        /* Not bound: an ephemeral port, on every address of the family. */
        struct hp_sockaddr any = {.family = ps->domain};
        rc = do_bind(ps, &any);
    }
    if (backlog < 1)
        backlog = 1;
    /* Listening again only changes the backlog (Linux); hotpath keeps the first. */
    if (rc == 0 && !ps->listening && (rc = hp_tcp_listen(ps->t, backlog)) == 0 && ps->t4)
        rc = hp_tcp_listen(ps->t4, backlog);
    if (rc == 0 && !ps->listening) {
        ps->listening = true;
        hp__px_sock_notify(ps, 0);
    }
    hp__px_unlock();
    return rc;
}

static bool acceptable(void *arg)
{
    struct px_sock *ps = arg;
    return ps->dead || !ps->listening ||
           ((hp_tcp_poll(ps->t) | hp_tcp_poll(ps->t4)) & (HP_EV_IN | HP_EV_ERR));
}

/* Take one connection from ps's queues into a new socket with a new fd. */
static int take_conn(struct px_sock *ps, struct sockaddr *sa, socklen_t *len, int flags)
{
    struct hp_tcp_sock *l = (hp_tcp_poll(ps->t) & HP_EV_IN) ? ps->t : ps->t4;
    int fd = hp__px_reserve_fd((flags & SOCK_CLOEXEC) != 0);
    if (fd < 0)
        return fd;
    struct px_sock *c = hp__px_sock_new(PX_TCP, ps->domain);
    struct hp_sockaddr peer;
    struct hp_tcp_sock *t = c ? hp_tcp_accept(l, c, &peer) : NULL;
    if (!t) {
        int e = c ? errno : ENOMEM;
        if (c)
            hp__px_sock_free(c);
        PX_REAL(close)(fd);
        return -e;
    }
    c->t = t;
    c->hfamily = peer.family;
    c->tried = true;
    c->opt = ps->opt; /* Linux: accepted sockets inherit the listener's options */
    c->v6only = ps->v6only;
    c->nonblock = (flags & SOCK_NONBLOCK) != 0;
    hp_tcp_local(t, &c->local);
    c->o.refs = 1;
    hp__px_fd_install(fd, &c->o);
    hp__px_addr_out(ps->domain, &peer, sa, len);
    return fd;
}

int hp__px_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && ps->proto != PX_TCP)
        rc = -EOPNOTSUPP;
    if (rc == 0 && (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)))
        rc = -EINVAL;
    if (rc == 0 && !ps->listening)
        rc = -EINVAL;
    if (rc == 0 && sa && (!len || (int)*len < 0))
        rc = -EINVAL;
    if (rc < 0) {
        hp__px_unlock();
        return rc;
    }
    hp__px_ref(&ps->o);
    uint64_t deadline = ps->opt.rcvtimeo_ns ? hp__px_deadline_ns(ps->opt.rcvtimeo_ns) : 0;
    for (;;) {
        if (!acceptable(ps) && !(ps->nonblock && hp__px_drove_recently()))
            hp__px_drive();
        if (ps->dead || !ps->listening) {
            rc = ps->dead ? -PX_DEAD_ERRNO : -EINVAL;
            break;
        }
        if (acceptable(ps)) {
            rc = take_conn(ps, sa, len, flags);
            if (rc != -EAGAIN)
                break;
        }
        if (ps->nonblock) {
            rc = -EAGAIN;
            break;
        }
        int w = hp__px_wait(acceptable, ps, NULL, 0, deadline, NULL, true);
        if (w == 0) {
            rc = -EAGAIN;
            break;
        }
        if (w == -EINTR && (ps->opt.rcvtimeo_ns || !hp__px_signal_restarts())) {
            rc = -EINTR;
            break;
        }
        if (w == -EINTR)
            hp__px_run_deferred_in_call();
    }
    hp__px_unref(&ps->o);
    hp__px_unlock();
    return rc;
}

/* ---- connect ------------------------------------------------------------------ */

static bool connect_done(void *arg)
{
    struct px_sock *ps = arg;
    return ps->dead || hp_tcp_state(ps->t) != HP_TCP_SYN_SENT;
}

/* The outcome of a connection attempt that is over: 0 (connected) or the
 * error, reported once (Linux: the next connect() says EISCONN). */
static int connect_result(struct px_sock *ps)
{
    ps->connecting = false;
    if (hp_tcp_state(ps->t) == HP_TCP_CLOSED) {
        int e = ps->err ? -ps->err : hp_tcp_error(ps->t);
        ps->err = 0;
        return e ? e : -ECONNABORTED;
    }
    return 0;
}

/* A connect() while one is in progress or over. */
static int connect_again(struct px_sock *ps)
{
    if (ps->connecting) {
        if (hp_tcp_state(ps->t) == HP_TCP_SYN_SENT)
            return ps->nonblock ? -EALREADY : 1;
        return connect_result(ps);
    }
    enum hp_tcp_state st = hp_tcp_state(ps->t);
    if (ps->listening || st != HP_TCP_CLOSED)
        return st == HP_TCP_SYN_SENT ? -EALREADY : -EISCONN;
    return 2; /* closed after a failed or finished connection: a new one */
}

/* The handle to connect from for a remote of family f. */
static int connect_handle(struct px_sock *ps, const struct hp_sockaddr *r)
{
    if (r->family == 4 && ps->domain == 6 && ps->v6only)
        return -ENETUNREACH;
    if (ps->hfamily && ps->t4 && r->family == 4) {
        /* Dual-stack bound: IPv4 keeps the IPv4 handle. */
        hp_tcp_close(ps->t);
        ps->t = ps->t4;
        ps->t4 = NULL;
        ps->hfamily = 4;
    } else if (ps->t4) {
        hp_tcp_close(ps->t4);
        ps->t4 = NULL;
    }
    if (ps->hfamily && ps->hfamily != r->family)
        return ps->domain == 6 ? -ENETUNREACH : -EAFNOSUPPORT;
    if (!ps->hfamily)
        return open_handle(ps, r->family, false);
    return 0;
}

static int start_connect(struct px_sock *ps, const struct hp_sockaddr *r)
{
    int rc = connect_handle(ps, r);
    if (rc < 0)
        return rc;
    struct hp_sockaddr rr = *r;
    rc = hp_tcp_connect(ps->t, &rr);
    if (rc == -EHOSTUNREACH)
        rc = -ENETUNREACH; /* Linux's word for "no route" */
    if (rc != -EINPROGRESS && rc != 0)
        return rc;
    ps->tried = true;
    ps->connecting = true;
    hp_tcp_local(ps->t, &ps->local);
    hp__px_drive(); /* the SYN leaves now */
    return -EINPROGRESS;
}

/* Renew a socket whose connection is over (Linux lets such a socket
 * connect again); it keeps an explicit bind. */
static int renew(struct px_sock *ps)
{
    struct hp_sockaddr keep = ps->local;
    bool was_bound = ps->bound;
    hp__px_close_handles(ps, false);
    ps->bound = ps->tried = ps->shut_rd = ps->shut_wr = false;
    ps->err = 0;
    return was_bound ? do_bind(ps, &keep) : 0;
}

static int connect_tcp(struct px_sock *ps, const struct hp_sockaddr *r)
{
    int rc = ps->tried || ps->listening || ps->connecting ? connect_again(ps) : 2;
    if (rc == 2) {
        rc = ps->tried ? renew(ps) : 0;
        if (rc == 0)
            rc = start_connect(ps, r);
        if (rc != -EINPROGRESS || ps->nonblock)
            return rc;
    } else if (rc != 1) {
        return rc;
    }
    /* Blocking: wait for the handshake, SO_SNDTIMEO at most (then
     * EINPROGRESS, as Linux). A signal ends it with EINTR; the attempt
     * goes on and a later connect() reports it. */
    uint64_t deadline = ps->opt.sndtimeo_ns ? hp__px_deadline_ns(ps->opt.sndtimeo_ns) : 0;
    hp__px_ref(&ps->o);
    int w = hp__px_wait(connect_done, ps, NULL, 0, deadline, NULL, true);
    hp__px_unref(&ps->o);
    if (ps->dead)
        return -PX_DEAD_ERRNO;
    if (w == -EINTR)
        return -EINTR;
    if (!connect_done(ps))
        return -EINPROGRESS;
    return connect_result(ps);
}

int hp__px_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && (!sa || len < (socklen_t)sizeof(sa_family_t)))
        rc = sa ? -EINVAL : -EFAULT;
    if (rc == 0 && sa->sa_family == AF_UNSPEC) {
        rc = hp__px_disconnect(ps);
    } else if (rc == 0) {
        struct hp_sockaddr r;
        rc = hp__px_addr_in(ps->domain, sa, len, &r);
        if (rc == 0)
            rc = ps->proto == PX_TCP ? connect_tcp(ps, &r) : hp__px_udp_connect(ps, &r);
    }
    hp__px_unlock();
    return rc;
}

/* connect(AF_UNSPEC): TCP aborts its connection (Linux's tcp_disconnect),
 * UDP forgets its peer. */
int hp__px_disconnect(struct px_sock *ps)
{
    if (ps->proto == PX_UDP)
        return hp__px_udp_disconnect(ps);
    if (ps->hfamily) {
        hp__px_close_handles(ps, true);
        hp__px_drive();
    }
    ps->bound = ps->tried = ps->listening = ps->connecting = false;
    ps->shut_rd = ps->shut_wr = false;
    ps->err = 0;
    hp__px_sock_notify(ps, 0);
    return 0;
}

/* ---- shutdown, close ------------------------------------------------------------ */

static int shutdown_tcp(struct px_sock *ps, int how)
{
    enum hp_tcp_state st = hp_tcp_state(ps->t);
    bool rd = how != SHUT_WR, wr = how != SHUT_RD;
    if (ps->listening) {
        if (rd) {
            /* Linux stops listening (tcp_disconnect). */
            hp__px_close_handles(ps, false);
            ps->listening = ps->bound = false;
        }
        return 0;
    }
    if (st == HP_TCP_CLOSED) {
        ps->shut_rd |= rd;
        ps->shut_wr |= wr;
        return -ENOTCONN;
    }
    if (st == HP_TCP_SYN_SENT) {
        hp__px_close_handles(ps, true);
        ps->connecting = false;
        return 0;
    }
    if (rd && !ps->shut_rd)
        hp_tcp_shutdown(ps->t, HP_TCP_SHUT_RD);
    if (wr && !ps->shut_wr)
        hp_tcp_shutdown(ps->t, HP_TCP_SHUT_WR);
    ps->shut_rd |= rd;
    ps->shut_wr |= wr;
    return 0;
}

int hp__px_shutdown(int fd, int how)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
        rc = -EINVAL;
    if (rc == 0) {
        if (ps->proto == PX_TCP) {
            rc = shutdown_tcp(ps, how);
        } else if (!ps->udp_connected) {
            rc = -ENOTCONN;
        } else {
            ps->shut_rd |= how != SHUT_WR;
            ps->shut_wr |= how != SHUT_RD;
        }
        hp__px_sock_notify(ps, 0);
        hp__px_drive();
    }
    hp__px_unlock();
    return rc;
}

int hp__px_close(int fd)
{
    hp__px_lock();
    struct px_obj *o = hp__px_fd_get(fd);
    if (!o || o->kind == PX_K_INTERNAL) {
        hp__px_unlock();
        return -EBADF;
    }
    hp__px_fd_set(fd, NULL);
    PX_REAL(close)(fd);
    bool sock = o->kind == PX_K_SOCK;
    hp__px_unref(o);
    if (sock && hp__px.status == PX_ST_UP)
        hp__px_drive(); /* a FIN or RST leaves now */
    hp__px_unlock();
    return 0;
}

/* ---- names ------------------------------------------------------------------- */

int hp__px_getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && (!len || (int)*len < 0))
        rc = len ? -EINVAL : -EFAULT;
    if (rc == 0) {
        struct hp_sockaddr a;
        local_of(ps, &a);
        hp__px_addr_out(ps->domain, &a, sa, len);
    }
    hp__px_unlock();
    return rc;
}

int hp__px_getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && (!len || (int)*len < 0))
        rc = len ? -EINVAL : -EFAULT;
    struct hp_sockaddr a;
    if (rc == 0 && ps->proto == PX_TCP) {
        enum hp_tcp_state st = hp_tcp_state(ps->t);
        if (!ps->t || ps->listening || st == HP_TCP_CLOSED || st == HP_TCP_SYN_SENT)
            rc = -ENOTCONN;
        else
            hp_tcp_peer(ps->t, &a);
    } else if (rc == 0) {
        if (!ps->udp_connected)
            rc = -ENOTCONN;
        else
            a = ps->remote;
    }
    if (rc == 0)
        hp__px_addr_out(ps->domain, &a, sa, len);
    hp__px_unlock();
    return rc;
}

/* ---- readiness ----------------------------------------------------------------- */

static uint32_t poll_tcp(struct px_sock *ps)
{
    uint32_t ev = hp_tcp_poll(ps->t) | hp_tcp_poll(ps->t4);
    uint32_t m = (ev & HP_EV_ERR) || ps->err ? EPOLLERR : 0;
    if (ps->listening)
        return m | ((ev & HP_EV_IN) ? EPOLLIN | EPOLLRDNORM : 0);
    enum hp_tcp_state st = hp_tcp_state(ps->t);
    bool over = st == HP_TCP_CLOSED && ps->tried;
    bool rcv_shut = ps->shut_rd || over || st == HP_TCP_CLOSE_WAIT || st == HP_TCP_CLOSING ||
                    st == HP_TCP_LAST_ACK || st == HP_TCP_TIME_WAIT;
    bool snd_shut = ps->shut_wr || over;
    if (st == HP_TCP_CLOSED || (rcv_shut && snd_shut))
        m |= EPOLLHUP;
    if (rcv_shut)
        m |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
    if (st != HP_TCP_SYN_SENT && st != HP_TCP_SYN_RECEIVED) {
        if ((ev & HP_EV_IN) || ps->peek)
            m |= EPOLLIN | EPOLLRDNORM;
        if (snd_shut || (ev & HP_EV_OUT) || st == HP_TCP_CLOSED)
            m |= EPOLLOUT | EPOLLWRNORM;
    }
    return m;
}

static uint32_t poll_udp(struct px_sock *ps)
{
    uint32_t ev = hp_udp_poll(ps->u) | hp_udp_poll(ps->u4);
    uint32_t m = EPOLLOUT | EPOLLWRNORM;
    if ((ev & HP_EV_IN) || ps->peek)
        m |= EPOLLIN | EPOLLRDNORM;
    if (ps->shut_rd)
        m |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
    if (ps->shut_rd && ps->shut_wr)
        m |= EPOLLHUP;
    if (ps->err)
        m |= EPOLLERR;
    return m;
}

uint32_t hp__px_sock_poll(struct px_sock *ps)
{
    if (ps->dead)
        return EPOLLERR | EPOLLHUP;
    return ps->proto == PX_TCP ? poll_tcp(ps) : poll_udp(ps);
}

int hp__px_autobind(struct px_sock *ps, int f)
{
    if (ps->hfamily)
        return 0;
    if (f == 4 && ps->domain == 6 && ps->v6only)
        return -ENETUNREACH;
    /* An AF_INET6 socket without IPV6_V6ONLY binds both families, as
     * Linux's autobind on [::] does. */
    struct hp_sockaddr any = {.family = ps->domain == 6 && !ps->v6only ? 6 : (uint8_t)f};
    int rc = do_bind(ps, &any);
    if (rc == 0)
        ps->bound = false; /* not the program's: connect(AF_UNSPEC) lets it go */
    return rc;
}

int hp__px_rebind(struct px_sock *ps, const struct hp_sockaddr *a)
{
    return do_bind(ps, a);
}
