/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's socket options, fcntl and ioctl: what hotpath does, what it stores and reports, and Linux's errors for the rest. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "posix_internal.h"

#define PX_BUF_MIN 2048
#define PX_BUF_MAX (1L << 30)

static long clamp_buf(long v)
{
    return v < PX_BUF_MIN ? PX_BUF_MIN : v > PX_BUF_MAX ? PX_BUF_MAX : v;
}

/* ---- applying options to handles -------------------------------------------------- */

static void set_tcp(struct px_sock *ps, enum hp_tcp_opt o, long v)
{
    if (ps->t)
        hp_tcp_setopt(ps->t, o, v);
    if (ps->t4)
        hp_tcp_setopt(ps->t4, o, v);
}

void hp__px_opts_apply(struct px_sock *ps, struct hp_tcp_sock *t)
{
    const struct px_opts *o = &ps->opt;
    if (o->nodelay)
        hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1);
    if (o->sndbuf)
        hp_tcp_setopt(t, HP_TCP_OPT_SNDBUF, clamp_buf(o->sndbuf));
    if (o->rcvbuf)
        hp_tcp_setopt(t, HP_TCP_OPT_RCVBUF, clamp_buf(o->rcvbuf));
    if (o->keepidle)
        hp_tcp_setopt(t, HP_TCP_OPT_KEEPIDLE, o->keepidle);
    if (o->keepintvl)
        hp_tcp_setopt(t, HP_TCP_OPT_KEEPINTVL, o->keepintvl);
    if (o->keepcnt)
        hp_tcp_setopt(t, HP_TCP_OPT_KEEPCNT, o->keepcnt);
    if (o->keepalive)
        hp_tcp_setopt(t, HP_TCP_OPT_KEEPALIVE, 1);
    if (o->quickack)
        hp_tcp_setopt(t, HP_TCP_OPT_QUICKACK, 1);
    if (o->maxseg)
        hp_tcp_setopt(t, HP_TCP_OPT_MAXSEG, o->maxseg);
    if (o->linger_on && o->linger_s == 0)
        hp_tcp_setopt(t, HP_TCP_OPT_LINGER0, 1);
}

void hp__px_udp_opts_apply(struct px_sock *ps, struct hp_udp_sock *u)
{
    if (ps->opt.reuseaddr || ps->opt.reuseport)
        hp_udp_set_reuseaddr(u, true);
    /* Linux counts a datagram's whole buffer (about 2 KiB for a small one)
     * against SO_RCVBUF; hotpath bounds the queue in datagrams. */
    if (ps->opt.rcvbuf) {
        long n = ps->opt.rcvbuf / 2048;
        hp_udp_set_rcvq(u, (unsigned)(n < 16 ? 16 : n > 65536 ? 65536 : n));
    }
}

/* ---- setsockopt -------------------------------------------------------------------------- */

static int set_timeo(const void *val, socklen_t len, int64_t *out)
{
    struct timeval tv;
    if (len < (socklen_t)sizeof tv)
        return -EINVAL;
    memcpy(&tv, val, sizeof tv);
    if (tv.tv_usec < 0 || tv.tv_usec >= 1000000)
        return -EDOM;
    if (tv.tv_sec < 0) /* Linux: no wait at all */
        *out = 1;
    else
        *out = (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
    return 0;
}

static int sol_socket_set(struct px_sock *ps, int name, const void *val, socklen_t len, int v)
{
    struct px_opts *o = &ps->opt;
    switch (name) {
    case SO_RCVTIMEO:
        return set_timeo(val, len, &o->rcvtimeo_ns);
    case SO_SNDTIMEO:
        return set_timeo(val, len, &o->sndtimeo_ns);
    case SO_LINGER: {
        struct linger l;
        if (len < (socklen_t)sizeof l)
            return -EINVAL;
        memcpy(&l, val, sizeof l);
        o->linger_on = l.l_onoff != 0;
        o->linger_s = l.l_linger < 0 ? 0 : l.l_linger;
        set_tcp(ps, HP_TCP_OPT_LINGER0, o->linger_on && o->linger_s == 0);
        return 0;
    }
    case SO_BINDTODEVICE: {
        char name_[IFNAMSIZ] = "";
        size_t n = len < IFNAMSIZ ? len : IFNAMSIZ - 1;
        memcpy(name_, val, n);
        name_[n] = '\0';
        /* Only the interface the stack runs on exists for hotpath. */
        return name_[0] == '\0' || strcmp(name_, hp__px.cfg.iface) == 0 ? 0 : -ENODEV;
    }
    }
    if (len < (socklen_t)sizeof(int))
        return -EINVAL;
    switch (name) {
    case SO_REUSEADDR:
        o->reuseaddr = v != 0;
        return 0;
    case SO_REUSEPORT:
        o->reuseport = v != 0;
        return 0;
    case SO_BROADCAST:
        o->broadcast = v != 0;
        return 0;
    case SO_OOBINLINE:
        o->oobinline = v != 0;
        return 0;
    case SO_PRIORITY:
        o->priority = v;
        return 0;
    case SO_MARK:
        o->mark = v;
        return 0;
    case SO_RCVLOWAT:
        o->rcvlowat = v < 1 ? 1 : v;
        return 0;
    case SO_KEEPALIVE:
        o->keepalive = v != 0;
        set_tcp(ps, HP_TCP_OPT_KEEPALIVE, o->keepalive);
        return 0;
    case SO_SNDBUF:
    case SO_SNDBUFFORCE:
        /* Linux doubles the value (room for its bookkeeping) and reports that. */
        o->sndbuf = (int)clamp_buf(2L * (v < 0 ? 0 : v));
        set_tcp(ps, HP_TCP_OPT_SNDBUF, o->sndbuf);
        return 0;
    case SO_RCVBUF:
    case SO_RCVBUFFORCE:
        o->rcvbuf = (int)clamp_buf(2L * (v < 0 ? 0 : v));
        set_tcp(ps, HP_TCP_OPT_RCVBUF, o->rcvbuf);
        if (ps->u)
            hp__px_udp_opts_apply(ps, ps->u);
        if (ps->u4)
            hp__px_udp_opts_apply(ps, ps->u4);
        return 0;
    /* Accepted and without effect here (docs/apps.md). */
    case SO_DEBUG:
    case SO_DONTROUTE:
    case SO_TIMESTAMP:
    case SO_TIMESTAMPNS:
    case SO_TIMESTAMPING:
    case SO_ZEROCOPY:
    case SO_INCOMING_CPU:
    case SO_BUSY_POLL:
    case SO_MAX_PACING_RATE:
        return 0;
    case SO_SNDLOWAT:
        return -ENOPROTOOPT; /* Linux cannot change it either */
    default:
        return -ENOPROTOOPT;
    }
}

static int tcp_set(struct px_sock *ps, int name, const void *val, socklen_t len, int v)
{
    struct px_opts *o = &ps->opt;
    if (name == TCP_CONGESTION) {
        char cc[16] = "";
        memcpy(cc, val, len < sizeof cc - 1 ? len : sizeof cc - 1);
        /* hotpath's TCP is NewReno, Linux's "reno"; CUBIC is asked for often
         * and taken as reno (docs/apps.md). */
        return strcmp(cc, "reno") == 0 || strcmp(cc, "cubic") == 0 ? 0 : -ENOENT;
    }
    if (len < (socklen_t)sizeof(int))
        return -EINVAL;
    switch (name) {
    case TCP_NODELAY:
        o->nodelay = v != 0;
        set_tcp(ps, HP_TCP_OPT_NODELAY, o->nodelay);
        return 0;
    case TCP_MAXSEG:
        if (v < 88 || v > 65495)
            return -EINVAL;
        o->maxseg = v;
        if (!ps->t || hp_tcp_state(ps->t) == HP_TCP_CLOSED)
            set_tcp(ps, HP_TCP_OPT_MAXSEG, v);
        return 0;
    case TCP_KEEPIDLE:
    case TCP_KEEPINTVL:
    case TCP_KEEPCNT:
        if (v < 1 || v > (name == TCP_KEEPCNT ? 127 : 32767))
            return -EINVAL;
        *(name == TCP_KEEPIDLE    ? &o->keepidle
          : name == TCP_KEEPINTVL ? &o->keepintvl
                                  : &o->keepcnt) = v;
        set_tcp(ps,
                name == TCP_KEEPIDLE    ? HP_TCP_OPT_KEEPIDLE
                : name == TCP_KEEPINTVL ? HP_TCP_OPT_KEEPINTVL
                                        : HP_TCP_OPT_KEEPCNT,
                v);
        return 0;
    case TCP_QUICKACK:
        o->quickack = v != 0;
        set_tcp(ps, HP_TCP_OPT_QUICKACK, o->quickack);
        return 0;
    case TCP_CORK:
        o->cork = v != 0;
        return 0;
    case TCP_DEFER_ACCEPT:
        o->defer_accept = v;
        return 0;
    case TCP_USER_TIMEOUT:
        if (v < 0)
            return -EINVAL;
        o->user_timeout = v;
        return 0;
    case TCP_FASTOPEN:
    case TCP_NOTSENT_LOWAT:
    case TCP_LINGER2:
    case TCP_SYNCNT:
    case TCP_WINDOW_CLAMP:
    case TCP_THIN_LINEAR_TIMEOUTS:
        return 0;
    default:
        return -ENOPROTOOPT;
    }
}

static int ip_set(struct px_sock *ps, int level, int name, socklen_t len, int v)
{
    struct px_opts *o = &ps->opt;
    if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) {
        if (len < (socklen_t)sizeof(int))
            return -EINVAL;
        if (ps->hfamily || ps->bound)
            return -EINVAL; /* Linux: only before bind */
        ps->v6only = v != 0;
        o->v6only_set = 1;
        return 0;
    }
    switch (level == IPPROTO_IP ? name : -name - 1) {
    case IP_TOS:
        o->tos = v & 0xfc;
        return 0;
    case IP_TTL:
        o->ttl = v;
        return 0;
    case IP_RECVERR:
    case IP_BIND_ADDRESS_NO_PORT:
    case IP_FREEBIND:
    case IP_PKTINFO:
    case IP_RECVTOS:
    case IP_MTU_DISCOVER:
    case IP_RECVTTL:
        return 0;
    case -IPV6_TCLASS - 1:
        o->tclass = v;
        return 0;
    case -IPV6_UNICAST_HOPS - 1:
        o->hoplimit = v;
        return 0;
    case -IPV6_RECVPKTINFO - 1:
    case -IPV6_RECVERR - 1:
    case -IPV6_MTU_DISCOVER - 1:
    case -IPV6_DONTFRAG - 1:
    case -IPV6_RECVTCLASS - 1:
        return 0;
    default:
        /* Multicast and the rest: hotpath has none of it (docs/apps.md). */
        return -ENOPROTOOPT;
    }
}

int hp__px_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && !val && len)
        rc = -EFAULT;
    if (rc == 0 && (int)len < 0)
        rc = -EINVAL;
    int v = 0;
    if (rc == 0 && val && len >= (socklen_t)sizeof v)
        memcpy(&v, val, sizeof v);
    else if (rc == 0 && val && len > 0 && level != SOL_SOCKET && level != IPPROTO_TCP)
        v = *(const unsigned char *)val; /* Linux takes a one-byte int for IP options */
    if (rc == 0) {
        if (level == SOL_SOCKET)
            rc = sol_socket_set(ps, name, val, len, v);
        else if (level == IPPROTO_TCP)
            rc = ps->proto == PX_TCP ? tcp_set(ps, name, val, len, v) : -ENOPROTOOPT;
        else if (level == IPPROTO_IP || (level == IPPROTO_IPV6 && ps->domain == 6))
            rc = ip_set(ps, level, name, len, v);
        else
            rc = -ENOPROTOOPT;
    }
    hp__px_unlock();
    return rc;
}

/* ---- getsockopt -------------------------------------------------------------------------- */

static int put(void *val, socklen_t *len, const void *v, size_t n)
{
    if ((int)*len < 0)
        return -EINVAL;
    size_t k = *len < n ? *len : n;
    memcpy(val, v, k);
    *len = (socklen_t)k;
    return 0;
}

static int put_int(void *val, socklen_t *len, int v)
{
    return put(val, len, &v, sizeof v);
}

static int put_timeo(void *val, socklen_t *len, int64_t ns)
{
    struct timeval tv = {(time_t)(ns / 1000000000), (suseconds_t)(ns % 1000000000 / 1000)};
    return put(val, len, &tv, sizeof tv);
}

static long tcp_get(struct px_sock *ps, enum hp_tcp_opt o, long def)
{
    long v;
    return ps->t && hp_tcp_getopt(ps->t, o, &v) == 0 ? v : def;
}

static int sol_socket_get(struct px_sock *ps, int name, void *val, socklen_t *len)
{
    struct px_opts *o = &ps->opt;
    switch (name) {
    case SO_TYPE:
        return put_int(val, len, ps->proto == PX_TCP ? SOCK_STREAM : SOCK_DGRAM);
    case SO_DOMAIN:
        return put_int(val, len, ps->domain == 4 ? AF_INET : AF_INET6);
    case SO_PROTOCOL:
        return put_int(val, len, ps->proto == PX_TCP ? IPPROTO_TCP : IPPROTO_UDP);
    case SO_ACCEPTCONN:
        return put_int(val, len, ps->listening);
    case SO_ERROR: {
        int e = ps->err;
        ps->err = 0;
        if (!e && ps->t)
            e = -hp_tcp_error(ps->t);
        return put_int(val, len, e);
    }
    case SO_REUSEADDR:
        return put_int(val, len, o->reuseaddr);
    case SO_REUSEPORT:
        return put_int(val, len, o->reuseport);
    case SO_KEEPALIVE:
        return put_int(val, len, o->keepalive);
    case SO_BROADCAST:
        return put_int(val, len, o->broadcast);
    case SO_OOBINLINE:
        return put_int(val, len, o->oobinline);
    case SO_PRIORITY:
        return put_int(val, len, o->priority);
    case SO_MARK:
        return put_int(val, len, o->mark);
    case SO_RCVLOWAT:
        return put_int(val, len, o->rcvlowat ? o->rcvlowat : 1);
    case SO_SNDLOWAT:
        return put_int(val, len, 1);
    case SO_SNDBUF:
        return put_int(val, len,
                       o->sndbuf             ? o->sndbuf
                       : ps->proto == PX_TCP ? (int)tcp_get(ps, HP_TCP_OPT_SNDBUF, 262144)
                                             : 212992);
    case SO_RCVBUF:
        return put_int(val, len,
                       o->rcvbuf             ? o->rcvbuf
                       : ps->proto == PX_TCP ? (int)tcp_get(ps, HP_TCP_OPT_RCVBUF, 262144)
                                             : 212992);
    case SO_RCVTIMEO:
        return put_timeo(val, len, o->rcvtimeo_ns);
    case SO_SNDTIMEO:
        return put_timeo(val, len, o->sndtimeo_ns);
    case SO_LINGER: {
        struct linger l = {o->linger_on, o->linger_s};
        return put(val, len, &l, sizeof l);
    }
    case SO_BINDTODEVICE:
        return put(val, len, "", 1);
    default:
        return -ENOPROTOOPT;
    }
}

static int tcp_get_opt(struct px_sock *ps, int name, void *val, socklen_t *len)
{
    struct px_opts *o = &ps->opt;
    switch (name) {
    case TCP_NODELAY:
        return put_int(val, len, o->nodelay);
    case TCP_MAXSEG: {
        /* Linux: 536 (RFC 1122's default) before a connection, the MSS
         * we send with after. */
        enum hp_tcp_state st = hp_tcp_state(ps->t);
        bool conn = ps->t && st != HP_TCP_CLOSED && st != HP_TCP_LISTEN && st != HP_TCP_SYN_SENT;
        return put_int(val, len,
                       conn        ? (int)tcp_get(ps, HP_TCP_OPT_MAXSEG, 536)
                       : o->maxseg ? o->maxseg
                                   : 536);
    }
    case TCP_KEEPIDLE:
        return put_int(val, len,
                       o->keepidle ? o->keepidle : (int)tcp_get(ps, HP_TCP_OPT_KEEPIDLE, 7200));
    case TCP_KEEPINTVL:
        return put_int(val, len,
                       o->keepintvl ? o->keepintvl : (int)tcp_get(ps, HP_TCP_OPT_KEEPINTVL, 75));
    case TCP_KEEPCNT:
        return put_int(val, len, o->keepcnt ? o->keepcnt : (int)tcp_get(ps, HP_TCP_OPT_KEEPCNT, 9));
    case TCP_QUICKACK:
        return put_int(val, len, o->quickack);
    case TCP_CORK:
        return put_int(val, len, o->cork);
    case TCP_DEFER_ACCEPT:
        return put_int(val, len, o->defer_accept);
    case TCP_USER_TIMEOUT:
        return put_int(val, len, o->user_timeout);
    case TCP_CONGESTION:
        return put(val, len, "reno", 5);
    case TCP_INFO:
        return hp__px_tcp_info(ps, val, len);
    default:
        return -ENOPROTOOPT;
    }
}

static int ip_get(struct px_sock *ps, int level, int name, void *val, socklen_t *len)
{
    struct px_opts *o = &ps->opt;
    if (level == IPPROTO_IPV6) {
        switch (name) {
        case IPV6_V6ONLY:
            return put_int(val, len, ps->v6only);
        case IPV6_TCLASS:
            return put_int(val, len, o->tclass);
        case IPV6_UNICAST_HOPS:
            return put_int(val, len, o->hoplimit ? o->hoplimit : 64);
        default:
            return -ENOPROTOOPT;
        }
    }
    switch (name) {
    case IP_TOS:
        return put_int(val, len, o->tos);
    case IP_TTL:
        return put_int(val, len, o->ttl ? o->ttl : 64);
    default:
        return -ENOPROTOOPT;
    }
}

int hp__px_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0 && (!len || (!val && *len)))
        rc = -EFAULT;
    if (rc == 0 && (int)*len < 0)
        rc = -EINVAL;
    if (rc == 0) {
        /* Linux: an unknown option is ENOPROTOOPT, a level the protocol
         * does not have EOPNOTSUPP (ip_getsockopt), unlike setsockopt. */
        if (level == SOL_SOCKET)
            rc = sol_socket_get(ps, name, val, len);
        else if (level == IPPROTO_TCP)
            rc = ps->proto == PX_TCP ? tcp_get_opt(ps, name, val, len) : -EOPNOTSUPP;
        else if (level == IPPROTO_IP || (level == IPPROTO_IPV6 && ps->domain == 6))
            rc = ip_get(ps, level, name, val, len);
        else
            rc = -EOPNOTSUPP;
    }
    hp__px_unlock();
    return rc;
}

/* ---- fcntl, ioctl ------------------------------------------------------------------------ */

int hp__px_fcntl(int fd, int cmd, long arg)
{
    hp__px_lock();
    struct px_obj *o = hp__px_fd_get(fd);
    int rc;
    if (!o || o->kind == PX_K_INTERNAL) {
        rc = -EBADF;
    } else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
        rc = PX_REAL(fcntl)(fd, cmd, arg);
        if (rc < 0) {
            rc = -errno;
        } else {
            hp__px_ref(o);
            hp__px_fd_install(rc, o);
        }
    } else if (o->kind == PX_K_SOCK && (cmd == F_GETFL || cmd == F_SETFL)) {
        /* O_NONBLOCK is the layer's (a file status flag shared by the
         * socket's dups); the placeholder's flags are never touched. */
        struct px_sock *ps = (struct px_sock *)o;
        if (cmd == F_GETFL) {
            rc = O_RDWR | (ps->nonblock ? O_NONBLOCK : 0);
        } else {
            ps->nonblock = (arg & O_NONBLOCK) != 0;
            rc = 0;
        }
    } else {
        /* FD_CLOEXEC is the fd's own; the rest (locks, owners) goes to the
         * kernel fd, which answers like any socket. */
        rc = PX_REAL(fcntl)(fd, cmd, arg);
        if (rc < 0)
            rc = -errno;
    }
    hp__px_unlock();
    return rc;
}

/* A kernel socket for the interface ioctls (SIOCGIF*) a program makes on
 * one of its sockets: they are about the kernel's interfaces. */
static int ifreq_socket(void)
{
    static int fd = -1;
    if (fd < 0 &&
        (fd = hp__px_fd_high(PX_REAL(socket)(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0))) >= 0)
        hp__px_fd_internal(fd);
    return fd;
}

static int sock_ioctl(struct px_sock *ps, unsigned long req, void *arg)
{
    int v;
    switch (req) {
    case FIONBIO:
        if (!arg)
            return -EFAULT;
        memcpy(&v, arg, sizeof v);
        ps->nonblock = v != 0;
        return 0;
    case FIONREAD:
        if (!arg)
            return -EFAULT;
        if (ps->proto == PX_TCP && ps->listening)
            return -EINVAL;
        v = hp__px_readable_bytes(ps);
        memcpy(arg, &v, sizeof v);
        return 0;
    case TIOCOUTQ:
    case SIOCOUTQNSD: {
        if (!arg)
            return -EFAULT;
        if (ps->proto == PX_TCP && ps->listening)
            return -EINVAL;
        struct hp_tcp_info ti = {0};
        if (ps->t)
            hp_tcp_get_info(ps->t, &ti);
        v = (int)(req == TIOCOUTQ ? ti.sndq : ti.sndq - ti.unacked);
        memcpy(arg, &v, sizeof v);
        return 0;
    }
    case SIOCATMARK:
        if (!arg)
            return -EFAULT;
        v = 0;
        memcpy(arg, &v, sizeof v);
        return 0;
    case FIOCLEX:
    case FIONCLEX:
        return 1; /* the kernel fd's */
    }
    if (req >= 0x8910 && req <= 0x89ff) {
        int k = ifreq_socket();
        if (k < 0)
            return -errno;
        return PX_REAL(ioctl)(k, req, arg) < 0 ? -errno : 0;
    }
    return -ENOTTY;
}

int hp__px_ioctl(int fd, unsigned long req, void *arg)
{
    hp__px_lock();
    struct px_sock *ps;
    int rc = hp__px_enter(fd, &ps);
    if (rc == 0)
        rc = sock_ioctl(ps, req, arg);
    if (rc == 1)
        rc = PX_REAL(ioctl)(fd, req, arg) < 0 ? -errno : 0;
    hp__px_unlock();
    return rc;
}
