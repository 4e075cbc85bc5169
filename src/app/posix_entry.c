/* SPDX-License-Identifier: BSD-3-Clause */
/* The C library calls libhotpath-posix.so takes over (LD_PRELOAD): each looks its fd up and hands hotpath sockets to the layer, everything else to the C library. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "posix_internal.h"

#define PX_EXPORT __attribute__((visibility("default")))

/* glibc's: the fortified variants fail through it. */
extern void __chk_fail(void) __attribute__((noreturn));
/* The fortified entry points glibc's headers call under _FORTIFY_SOURCE
 * (their prototypes live in bits/ headers a program sees, not we). */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *sa,
                       socklen_t *len);
int __poll_chk(struct pollfd *fds, nfds_t n, int ms, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask,
                size_t fdslen);
/* Old names of signal() (XSI), declared by glibc only in some modes. */
sighandler_t bsd_signal(int sig, sighandler_t h);

/* A hotpath socket, and not a call the layer itself makes. */
static inline bool ours(int fd)
{
    if (__builtin_expect(hp__px_in_layer, 0))
        return false;
    struct px_obj *o = hp__px_fd_get(fd);
    return o && o->kind == PX_K_SOCK;
}

/* Any of the layer's fds (sockets, epoll sets, its own). */
static inline bool known(int fd)
{
    return !hp__px_in_layer && hp__px_fd_get(fd) != NULL;
}

static inline long ret(long r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

__attribute__((constructor)) static void px_init(void)
{
    hp__px_libc_init();
    hp__px_atfork_install();
}

/* After the program's atexit handlers (which may still use sockets). */
__attribute__((destructor)) static void px_fini(void)
{
    hp__px_teardown();
}

/* ---- sockets ------------------------------------------------------------------------ */

PX_EXPORT int socket(int domain, int type, int protocol)
{
    int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    bool inet = domain == AF_INET || domain == AF_INET6;
    bool tcp = kind == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP);
    bool udp = kind == SOCK_DGRAM && (protocol == 0 || protocol == IPPROTO_UDP);
    if (hp__px_in_layer || !inet || !(tcp || udp))
        return PX_REAL(socket)(domain, type, protocol);
    int r = hp__px_socket(domain, type, protocol);
    if (r == PX_USE_KERNEL)
        return PX_REAL(socket)(domain, type, protocol);
    return (int)ret(r);
}

PX_EXPORT int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    return ours(fd) ? (int)ret(hp__px_bind(fd, sa, len)) : PX_REAL(bind)(fd, sa, len);
}

PX_EXPORT int listen(int fd, int backlog)
{
    return ours(fd) ? (int)ret(hp__px_listen(fd, backlog)) : PX_REAL(listen)(fd, backlog);
}

PX_EXPORT int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
    return ours(fd) ? (int)ret(hp__px_accept4(fd, sa, len, flags))
                    : PX_REAL(accept4)(fd, sa, len, flags);
}

PX_EXPORT int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
    return ours(fd) ? (int)ret(hp__px_accept4(fd, sa, len, 0)) : PX_REAL(accept)(fd, sa, len);
}

PX_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    return ours(fd) ? (int)ret(hp__px_connect(fd, sa, len)) : PX_REAL(connect)(fd, sa, len);
}

PX_EXPORT int shutdown(int fd, int how)
{
    return ours(fd) ? (int)ret(hp__px_shutdown(fd, how)) : PX_REAL(shutdown)(fd, how);
}

PX_EXPORT int close(int fd)
{
    return known(fd) ? (int)ret(hp__px_close(fd)) : PX_REAL(close)(fd);
}

PX_EXPORT int getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
    return ours(fd) ? (int)ret(hp__px_getsockname(fd, sa, len)) : PX_REAL(getsockname)(fd, sa, len);
}

PX_EXPORT int getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
    return ours(fd) ? (int)ret(hp__px_getpeername(fd, sa, len)) : PX_REAL(getpeername)(fd, sa, len);
}

PX_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    return ours(fd) ? (int)ret(hp__px_setsockopt(fd, level, name, val, len))
                    : PX_REAL(setsockopt)(fd, level, name, val, len);
}

PX_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    return ours(fd) ? (int)ret(hp__px_getsockopt(fd, level, name, val, len))
                    : PX_REAL(getsockopt)(fd, level, name, val, len);
}

/* ---- I/O ------------------------------------------------------------------------------ */

PX_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    if (!ours(fd))
        return PX_REAL(read)(fd, buf, n);
    return ret(hp__px_recv(fd, buf, n, 0));
}

PX_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    if (!ours(fd))
        return PX_REAL(write)(fd, buf, n);
    return ret(hp__px_send(fd, buf, n, 0));
}

PX_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
    return ours(fd) ? ret(hp__px_readv(fd, iov, n)) : PX_REAL(readv)(fd, iov, n);
}

PX_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
    return ours(fd) ? ret(hp__px_writev(fd, iov, n)) : PX_REAL(writev)(fd, iov, n);
}

PX_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    return ours(fd) ? ret(hp__px_recvfrom(fd, buf, n, flags, NULL, NULL))
                    : PX_REAL(recv)(fd, buf, n, flags);
}

PX_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *sa,
                           socklen_t *len)
{
    return ours(fd) ? ret(hp__px_recvfrom(fd, buf, n, flags, sa, len))
                    : PX_REAL(recvfrom)(fd, buf, n, flags, sa, len);
}

PX_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    return ours(fd) ? ret(hp__px_recvmsg(fd, msg, flags)) : PX_REAL(recvmsg)(fd, msg, flags);
}

PX_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *t)
{
    return ours(fd) ? (int)ret(hp__px_recvmmsg(fd, v, n, flags, t))
                    : PX_REAL(recvmmsg)(fd, v, n, flags, t);
}

PX_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    return ours(fd) ? ret(hp__px_sendto(fd, buf, n, flags, NULL, 0))
                    : PX_REAL(send)(fd, buf, n, flags);
}

PX_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *sa,
                         socklen_t len)
{
    return ours(fd) ? ret(hp__px_sendto(fd, buf, n, flags, sa, len))
                    : PX_REAL(sendto)(fd, buf, n, flags, sa, len);
}

PX_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    return ours(fd) ? ret(hp__px_sendmsg(fd, msg, flags)) : PX_REAL(sendmsg)(fd, msg, flags);
}

PX_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    return ours(fd) ? (int)ret(hp__px_sendmmsg(fd, v, n, flags))
                    : PX_REAL(sendmmsg)(fd, v, n, flags);
}

PX_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    if (ours(out))
        return ret(hp__px_sendfile(out, in, off, n));
    if (ours(in))
        return ret(-EINVAL); /* Linux cannot read a socket with sendfile either */
    return PX_REAL(sendfile)(out, in, off, n);
}

PX_EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t n)
{
    return sendfile(out, in, off, n);
}

/* ---- fds ------------------------------------------------------------------------------ */

PX_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    return known(fd) ? (int)ret(hp__px_fcntl(fd, cmd, arg)) : PX_REAL(fcntl)(fd, cmd, arg);
}

PX_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    return known(fd) ? (int)ret(hp__px_fcntl(fd, cmd, arg)) : PX_REAL(fcntl)(fd, cmd, arg);
}

PX_EXPORT int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return ours(fd) ? (int)ret(hp__px_ioctl(fd, req, arg)) : PX_REAL(ioctl)(fd, req, arg);
}

PX_EXPORT int dup(int fd)
{
    return known(fd) ? (int)ret(hp__px_dup(fd)) : PX_REAL(dup)(fd);
}

PX_EXPORT int dup2(int fd, int nfd)
{
    return known(fd) || known(nfd) ? (int)ret(hp__px_dup3(fd, nfd, 0, true))
                                   : PX_REAL(dup2)(fd, nfd);
}

PX_EXPORT int dup3(int fd, int nfd, int flags)
{
    return known(fd) || known(nfd) ? (int)ret(hp__px_dup3(fd, nfd, flags, false))
                                   : PX_REAL(dup3)(fd, nfd, flags);
}

PX_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    if (hp__px_in_layer)
        return PX_REAL(close_range)(first, last, flags);
    return (int)ret(hp__px_close_range(first, last, flags));
}

PX_EXPORT void closefrom(int lowfd)
{
    if (hp__px_in_layer) {
        PX_REAL(closefrom)(lowfd);
        return;
    }
    hp__px_close_range(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u, 0);
}

/* ---- epoll, poll, select -------------------------------------------------------------- */

PX_EXPORT int epoll_create1(int flags)
{
    return hp__px_in_layer ? PX_REAL(epoll_create1)(flags) : (int)ret(hp__px_epoll_create1(flags));
}

PX_EXPORT int epoll_create(int size)
{
    if (hp__px_in_layer)
        return PX_REAL(epoll_create)(size);
    return size <= 0 ? (int)ret(-EINVAL) : (int)ret(hp__px_epoll_create1(0));
}

PX_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    return known(epfd) || known(fd) ? (int)ret(hp__px_epoll_ctl(epfd, op, fd, ev))
                                    : PX_REAL(epoll_ctl)(epfd, op, fd, ev);
}

PX_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *t,
                           const sigset_t *mask)
{
    if (!known(epfd)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(epoll_pwait2)(epfd, ev, max, t, mask);
    }
    return (int)ret(hp__px_epoll_pwait2(epfd, ev, max, t, mask));
}

PX_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int ms, const sigset_t *mask)
{
    if (!known(epfd)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(epoll_pwait)(epfd, ev, max, ms, mask);
    }
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    return (int)ret(hp__px_epoll_pwait2(epfd, ev, max, ms < 0 ? NULL : &t, mask));
}

PX_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int ms)
{
    if (!known(epfd)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(epoll_wait)(epfd, ev, max, ms);
    }
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    return (int)ret(hp__px_epoll_pwait2(epfd, ev, max, ms < 0 ? NULL : &t, NULL));
}

/* glibc declares poll's array write-only (__attr_access), which makes gcc
 * think reading the caller's events is reading uninitialized memory. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

PX_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
    if (hp__px_in_layer || !hp__px_any_pollfd(fds, n)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(ppoll)(fds, n, t, mask);
    }
    return (int)ret(hp__px_ppoll(fds, n, t, mask));
}

PX_EXPORT int poll(struct pollfd *fds, nfds_t n, int ms)
{
    if (hp__px_in_layer || !hp__px_any_pollfd(fds, n)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(poll)(fds, n, ms);
    }
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
    return (int)ret(hp__px_ppoll(fds, n, ms < 0 ? NULL : &t, NULL));
}

PX_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
                      const sigset_t *mask)
{
    if (hp__px_in_layer || !hp__px_any_fdset(nfds, r, w, e)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(pselect)(nfds, r, w, e, t, mask);
    }
    return (int)ret(hp__px_pselect(nfds, r, w, e, t, mask, NULL));
}

PX_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
    if (hp__px_in_layer || !hp__px_any_fdset(nfds, r, w, e)) {
        hp__px_tx_settle_unlocked();
        return PX_REAL(select)(nfds, r, w, e, tv);
    }
    if (tv && (tv->tv_sec < 0 || tv->tv_usec < 0))
        return (int)ret(-EINVAL);
    struct timespec t = {0, 0};
    if (tv) {
        /* Linux accepts microseconds past a second and carries them. */
        t.tv_sec = tv->tv_sec + tv->tv_usec / 1000000;
        t.tv_nsec = (long)(tv->tv_usec % 1000000) * 1000;
    }
    return (int)ret(hp__px_pselect(nfds, r, w, e, tv ? &t : NULL, NULL, tv));
}

/* ---- signal handlers (posix_signal.c) ----------------------------------------------- */

PX_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return hp__px_in_layer ? PX_REAL(sigaction)(sig, act, old) : hp__px_sigaction(sig, act, old);
}

PX_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
    return hp__px_signal(sig, h, SA_RESTART);
}

PX_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
    return hp__px_signal(sig, h, SA_RESTART);
}

PX_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
    return hp__px_signal(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* ---- the fortified variants (_FORTIFY_SOURCE) ---------------------------------------- */

PX_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        __chk_fail();
    return read(fd, buf, n);
}

PX_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    if (n > buflen)
        __chk_fail();
    return recv(fd, buf, n, flags);
}

PX_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr *sa, socklen_t *len)
{
    if (n > buflen)
        __chk_fail();
    return recvfrom(fd, buf, n, flags, sa, len);
}

PX_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int ms, size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        __chk_fail();
    return poll(fds, n, ms);
}

PX_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t,
                          const sigset_t *mask, size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        __chk_fail();
    return ppoll(fds, n, t, mask);
}
