/* SPDX-License-Identifier: BSD-3-Clause */
/* epoll for the POSIX layer: a kernel epoll set per epoll fd for the kernel fds, and beside it the hotpath sockets' registrations and ready list (level, edge, one-shot, RDHUP), waited on together. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "posix_internal.h"

/* One hotpath socket registered in one epoll set (Linux's epitem). */
struct px_epi {
    struct px_epoll *ep;
    struct px_sock *ps;
    int fd;          /* the fd it was added with */
    uint32_t events; /* asked for, with EPOLLET / EPOLLONESHOT... */
    epoll_data_t data;
    bool ready, disabled;         /* on the ready list; one-shot fired */
    struct px_epi *snext;         /* the socket's next registration */
    struct px_epi *enext, *eprev; /* every registration of the set */
    struct px_epi *rnext, *rprev; /* the ready list */
};

/* An epoll set made through the layer. Its kernel epoll fd holds the
 * program's kernel fds; the program's fd number for it is used for the
 * kernel calls (every dup of it is the same set). */
struct px_epoll {
    struct px_obj o;
    struct px_epi *all;
    struct px_epi *rhead, *rtail;
    int nkernel; /* kernel fds added (an upper bound: the kernel drops closed ones itself) */
};

static struct px_epoll *epoll_of(int epfd)
{
    struct px_obj *o = hp__px_fd_get(epfd);
    return o && o->kind == PX_K_EPOLL ? (struct px_epoll *)o : NULL;
}

/* ---- the ready list ------------------------------------------------------------------ */

static void ready_add(struct px_epi *e)
{
    if (e->ready)
        return;
    struct px_epoll *ep = e->ep;
    e->ready = true;
    e->rnext = NULL;
    e->rprev = ep->rtail;
    if (ep->rtail)
        ep->rtail->rnext = e;
    else
        ep->rhead = e;
    ep->rtail = e;
}

static void ready_del(struct px_epi *e)
{
    if (!e->ready)
        return;
    struct px_epoll *ep = e->ep;
    if (e->rprev)
        e->rprev->rnext = e->rnext;
    else
        ep->rhead = e->rnext;
    if (e->rnext)
        e->rnext->rprev = e->rprev;
    else
        ep->rtail = e->rprev;
    e->rnext = e->rprev = NULL;
    e->ready = false;
}

/* What e would report now (0: nothing). */
static uint32_t level(struct px_epi *e)
{
    if (e->disabled)
        return 0;
    return hp__px_sock_poll(e->ps) & (e->events | EPOLLERR | EPOLLHUP);
}

void hp__px_sock_notify(struct px_sock *ps, uint32_t hp_events)
{
    (void)hp_events;
    bool any = false;
    for (struct px_epi *e = ps->epis; e; e = e->snext) {
        if (!e->disabled && !e->ready) {
            ready_add(e);
            any = true;
        }
    }
    if (any)
        hp__px_sock_changed();
}

/* ---- registrations --------------------------------------------------------------------- */

static struct px_epi *find(struct px_epoll *ep, struct px_sock *ps, int fd)
{
    for (struct px_epi *e = ps->epis; e; e = e->snext)
        if (e->ep == ep && e->fd == fd)
            return e;
    return NULL;
}

static void unlink_epi(struct px_epi *e)
{
    ready_del(e);
    struct px_epoll *ep = e->ep;
    if (e->eprev)
        e->eprev->enext = e->enext;
    else
        ep->all = e->enext;
    if (e->enext)
        e->enext->eprev = e->eprev;
    for (struct px_epi **p = &e->ps->epis; *p; p = &(*p)->snext)
        if (*p == e) {
            *p = e->snext;
            break;
        }
    free(e);
}

static int add(struct px_epoll *ep, struct px_sock *ps, int fd, const struct epoll_event *ev)
{
    if (find(ep, ps, fd))
        return -EEXIST;
    struct px_epi *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->ep = ep;
    e->ps = ps;
    e->fd = fd;
    e->events = ev->events;
    e->data = ev->data;
    e->snext = ps->epis;
    ps->epis = e;
    e->enext = ep->all;
    if (ep->all)
        ep->all->eprev = e;
    ep->all = e;
    /* Ready at once if it is (Linux polls a file when it is added). */
    if (level(e)) {
        ready_add(e);
        hp__px_sock_changed();
    }
    return 0;
}

static int sock_ctl(struct px_epoll *ep, int op, int fd, struct px_sock *ps, struct epoll_event *ev)
{
    struct px_epi *e;
    switch (op) {
    case EPOLL_CTL_ADD:
        return add(ep, ps, fd, ev);
    case EPOLL_CTL_MOD:
        if (!(e = find(ep, ps, fd)))
            return -ENOENT;
        if ((ev->events & EPOLLEXCLUSIVE) || (e->events & EPOLLEXCLUSIVE))
            return -EINVAL;
        e->events = ev->events;
        e->data = ev->data;
        e->disabled = false;
        if (level(e)) {
            ready_add(e);
            hp__px_sock_changed();
        }
        return 0;
    case EPOLL_CTL_DEL:
        if (!(e = find(ep, ps, fd)))
            return -ENOENT;
        unlink_epi(e);
        return 0;
    default:
        return -EINVAL;
    }
}

void hp__px_epoll_forget(struct px_sock *ps)
{
    while (ps->epis)
        unlink_epi(ps->epis);
}

void hp__px_epoll_free(struct px_obj *o)
{
    struct px_epoll *ep = (struct px_epoll *)o;
    while (ep->all)
        unlink_epi(ep->all);
    free(ep);
}

/* ---- the calls -------------------------------------------------------------------------- */

int hp__px_epoll_create1(int flags)
{
    if (flags & ~EPOLL_CLOEXEC)
        return -EINVAL;
    hp__px_lock();
    int fd = PX_REAL(epoll_create1)(flags);
    int rc = fd < 0 ? -errno : fd;
    struct px_epoll *ep = fd >= 0 ? calloc(1, sizeof *ep) : NULL;
    if (fd >= 0 && !ep) {
        PX_REAL(close)(fd);
        rc = -ENOMEM;
    } else if (ep) {
        ep->o.kind = PX_K_EPOLL;
        ep->o.refs = 1;
        hp__px_fd_install(fd, &ep->o);
    }
    hp__px_unlock();
    return rc;
}

int hp__px_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    if (op != EPOLL_CTL_DEL && !ev)
        return -EFAULT;
    hp__px_lock();
    struct px_epoll *ep = epoll_of(epfd);
    struct px_obj *t = hp__px_fd_get(fd);
    int rc;
    if (!ep || !t || t->kind != PX_K_SOCK) {
        if (t && t->kind == PX_K_INTERNAL) {
            rc = -EBADF;
        } else {
            /* A kernel fd (or a set that is not the layer's): the kernel's. */
            rc = PX_REAL(epoll_ctl)(epfd, op, fd, ev) < 0 ? -errno : 0;
            if (rc == 0 && ep)
                ep->nkernel += op == EPOLL_CTL_ADD ? 1 : op == EPOLL_CTL_DEL ? -1 : 0;
        }
    } else if (epfd == fd) {
        rc = -EINVAL;
    } else if (((struct px_sock *)t)->dead) {
        rc = -PX_DEAD_ERRNO;
    } else if (op == EPOLL_CTL_ADD && (ev->events & EPOLLEXCLUSIVE) &&
               (ev->events &
                ~(EPOLLEXCLUSIVE | EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP |
                  EPOLLET | EPOLLRDNORM | EPOLLWRNORM | EPOLLRDBAND | EPOLLWRBAND))) {
        rc = -EINVAL;
    } else {
        rc = sock_ctl(ep, op, fd, (struct px_sock *)t, ev);
    }
    hp__px_unlock();
    return rc;
}

/* Report up to max ready registrations; level-triggered ones that are
 * still ready go back to the end of the list (Linux's round robin). */
static int collect(struct px_epoll *ep, struct epoll_event *out, int max)
{
    struct px_epi *keep_head = NULL, *keep_tail = NULL;
    int n = 0;
    while (ep->rhead && n < max) {
        struct px_epi *e = ep->rhead;
        ready_del(e);
        uint32_t lv = level(e);
        if (!lv)
            continue;
        out[n].events = lv;
        out[n].data = e->data;
        n++;
        if (e->events & EPOLLONESHOT) {
            e->disabled = true;
        } else if (!(e->events & EPOLLET)) {
            e->ready = true; /* on the keep list */
            e->rnext = NULL;
            e->rprev = keep_tail;
            if (keep_tail)
                keep_tail->rnext = e;
            else
                keep_head = e;
            keep_tail = e;
        }
    }
    if (keep_head) {
        keep_head->rprev = ep->rtail;
        if (ep->rtail)
            ep->rtail->rnext = keep_head;
        else
            ep->rhead = keep_head;
        ep->rtail = keep_tail;
    }
    return n;
}

/* Whether something on the ready list would be reported (the rest goes). */
static bool ep_ready(void *arg)
{
    struct px_epoll *ep = arg;
    struct px_epi *e = ep->rhead;
    while (e) {
        struct px_epi *next = e->rnext;
        if (level(e))
            return true;
        ready_del(e);
        e = next;
    }
    return false;
}

static uint64_t ts_deadline(const struct timespec *t)
{
    if (!t)
        return 0;
    if (t->tv_sec < 0)
        return hp__px_deadline_ns(0);
    return hp__px_deadline_ns((int64_t)t->tv_sec * 1000000000 + t->tv_nsec);
}

static int wait_loop(int epfd, struct px_epoll *ep, struct epoll_event *ev, int max,
                     const struct timespec *timeout, const sigset_t *mask)
{
    uint64_t deadline = ts_deadline(timeout);
    bool once = timeout && timeout->tv_sec <= 0 && timeout->tv_nsec == 0;
    struct pollfd kp = {.fd = epfd, .events = POLLIN};
    for (int tries = 0;; tries++) {
        int n = collect(ep, ev, max);
        if (n < max && ep->nkernel > 0) {
            int k = PX_REAL(epoll_wait)(epfd, ev + n, max - n, 0);
            if (k < 0 && n == 0)
                return -errno;
            n += k > 0 ? k : 0;
        }
        if (n > 0 || (once && tries > 0))
            return n;
        if (once) {
            hp__px_drive(); /* poll once, look again */
            continue;
        }
        if (deadline && hp__px_now_ns() >= deadline)
            return 0;
        int w = hp__px_wait(ep_ready, ep, ep->nkernel > 0 ? &kp : NULL, ep->nkernel > 0, deadline,
                            mask, true);
        if (w == -EINTR)
            return -EINTR;
        if (w < 0)
            return w;
    }
}

/* The kernel's epoll_pwait2, or epoll_pwait with the timeout in
 * milliseconds (rounded up) where the C library or the kernel lacks it
 * (ENOSYS: Linux before 5.11, qemu-user). */
static int kernel_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
                         const sigset_t *mask)
{
    if (PX_REAL(epoll_pwait2)) {
        int r = PX_REAL(epoll_pwait2)(epfd, ev, max, timeout, mask);
        if (r >= 0 || errno != ENOSYS)
            return r < 0 ? -errno : r;
    }
    int ms = -1;
    if (timeout) {
        long long t = (long long)timeout->tv_sec * 1000 + (timeout->tv_nsec + 999999) / 1000000;
        ms = t > INT_MAX ? INT_MAX : (int)t;
    }
    int r = PX_REAL(epoll_pwait)(epfd, ev, max, ms, mask);
    return r < 0 ? -errno : r;
}

int hp__px_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
                        const sigset_t *mask)
{
    if (max <= 0 || max > INT_MAX / (int)sizeof(struct epoll_event))
        return -EINVAL;
    if (!ev)
        return -EFAULT;
    hp__px_lock();
    hp__px_tx_settle();
    struct px_epoll *ep = epoll_of(epfd);
    if (!ep || !ep->all || hp__px.status != PX_ST_UP) {
        /* No hotpath socket in it: the kernel's call, without the lock. */
        hp__px_unlock();
        return kernel_pwait2(epfd, ev, max, timeout, mask);
    }
    hp__px_ref(&ep->o);
    int n = wait_loop(epfd, ep, ev, max, timeout, mask);
    hp__px_unref(&ep->o);
    hp__px_tx_batch(n);
    hp__px_unlock();
    return n;
}
