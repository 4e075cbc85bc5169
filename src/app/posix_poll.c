/* SPDX-License-Identifier: BSD-3-Clause */
/* poll, ppoll, select and pselect over hotpath sockets and kernel fds together, with select's fd_sets of any size. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "posix_internal.h"

static bool is_sock(int fd)
{
    struct px_obj *o = hp__px_fd_get(fd);
    return o && o->kind == PX_K_SOCK;
}

bool hp__px_any_pollfd(const struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0 && is_sock(fds[i].fd))
            return true;
    return false;
}

/* The caller's array, split: kernel fds go to k (with their index in fds). */
struct px_pollset {
    struct pollfd *fds;
    nfds_t n;
    struct pollfd *k;
    int *kidx;
    int nk;
};

/* revents of the hotpath sockets; the number of fds with something. */
static int poll_socks(struct px_pollset *p)
{
    int count = 0;
    for (nfds_t i = 0; i < p->n; i++) {
        struct pollfd *f = &p->fds[i];
        if (f->fd < 0 || !is_sock(f->fd))
            continue;
        struct px_sock *ps = hp__px_sock(f->fd);
        /* epoll's bits and poll's are the same numbers on Linux. */
        f->revents =
            ps ? (short)(hp__px_sock_poll(ps) & ((uint32_t)(uint16_t)f->events | POLLERR | POLLHUP))
               : POLLNVAL;
        count += f->revents != 0;
    }
    return count;
}

static bool socks_ready(void *arg)
{
    struct px_pollset *p = arg;
    for (nfds_t i = 0; i < p->n; i++) {
        struct pollfd *f = &p->fds[i];
        struct px_sock *ps = f->fd >= 0 ? hp__px_sock(f->fd) : NULL;
        if (ps && (hp__px_sock_poll(ps) & ((uint32_t)(uint16_t)f->events | POLLERR | POLLHUP)))
            return true;
    }
    return false;
}

/* The kernel fds' revents, looked at now. */
static int poll_kernel(struct px_pollset *p)
{
    if (!p->nk)
        return 0;
    int r = PX_REAL(poll)(p->k, (nfds_t)p->nk, 0);
    if (r < 0)
        return -errno;
    for (int j = 0; j < p->nk; j++)
        p->fds[p->kidx[j]].revents = p->k[j].revents;
    return r;
}

static int split(struct px_pollset *p)
{
    p->nk = 0;
    p->k = malloc((p->n ? p->n : 1) * (sizeof *p->k + sizeof *p->kidx));
    if (!p->k)
        return -ENOMEM;
    p->kidx = (int *)(p->k + (p->n ? p->n : 1));
    for (nfds_t i = 0; i < p->n; i++) {
        p->fds[i].revents = 0;
        if (p->fds[i].fd < 0 || is_sock(p->fds[i].fd))
            continue;
        p->k[p->nk] = p->fds[i];
        p->kidx[p->nk++] = (int)i;
    }
    return 0;
}

/* Under the lock. */
static int poll_loop(struct px_pollset *p, uint64_t deadline, bool once, const sigset_t *mask)
{
    for (int tries = 0;; tries++) {
        int c = poll_socks(p);
        int k = poll_kernel(p);
        if (k < 0)
            return k;
        if (c + k > 0 || (once && tries > 0))
            return c + k;
        if (once) {
            hp__px_drive(); /* poll once, look again */
            continue;
        }
        if (deadline && hp__px_now_ns() >= deadline)
            return 0;
        int w = hp__px_wait(socks_ready, p, p->k, p->nk, deadline, mask, true);
        if (w == -EINTR)
            return -EINTR;
        if (w < 0)
            return w;
    }
}

static int ppoll_deadline(const struct timespec *t, uint64_t *deadline, bool *once)
{
    *deadline = 0;
    *once = false;
    if (!t)
        return 0;
    if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000)
        return -EINVAL;
    *once = t->tv_sec == 0 && t->tv_nsec == 0;
    *deadline = hp__px_deadline_ns((int64_t)t->tv_sec * 1000000000 + t->tv_nsec);
    return 0;
}

int hp__px_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
    uint64_t deadline;
    bool once;
    int rc = ppoll_deadline(timeout, &deadline, &once);
    if (rc < 0)
        return rc;
    struct px_pollset p = {.fds = fds, .n = n};
    hp__px_lock();
    hp__px_tx_settle();
    rc = split(&p);
    if (rc == 0)
        rc = poll_loop(&p, deadline, once, mask);
    hp__px_tx_batch(rc);
    hp__px_unlock();
    free(p.k);
    return rc;
}

/* ---- select ------------------------------------------------------------------------ */

#define PX_NFDBITS (8 * (int)sizeof(unsigned long))

/* fd_set bits of any nfds (the program may have allocated a larger set than
 * FD_SETSIZE), without FD_ISSET's fortified bound check. */
static bool bit(const fd_set *s, int fd)
{
    const unsigned long *w = (const unsigned long *)(const void *)s;
    return s && (w[fd / PX_NFDBITS] >> (fd % PX_NFDBITS)) & 1ul;
}

static void set_bit(fd_set *s, int fd)
{
    unsigned long *w = (unsigned long *)(void *)s;
    w[fd / PX_NFDBITS] |= 1ul << (fd % PX_NFDBITS);
}

static void clear_set(fd_set *s, int nfds)
{
    if (s)
        memset(s, 0, (size_t)(nfds + PX_NFDBITS - 1) / PX_NFDBITS * sizeof(unsigned long));
}

bool hp__px_any_fdset(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
    for (int fd = 0; fd < nfds; fd++)
        if ((bit(r, fd) || bit(w, fd) || bit(e, fd)) && is_sock(fd))
            return true;
    return false;
}

/* The pollfds of the sets; their count, or -ENOMEM. */
static int sets_to_poll(int nfds, const fd_set *r, const fd_set *w, const fd_set *e,
                        struct pollfd **out)
{
    int n = 0;
    struct pollfd *p = malloc((size_t)(nfds ? nfds : 1) * sizeof *p);
    if (!p)
        return -ENOMEM;
    for (int fd = 0; fd < nfds; fd++) {
        short ev = (short)((bit(r, fd) ? POLLIN : 0) | (bit(w, fd) ? POLLOUT : 0) |
                           (bit(e, fd) ? POLLPRI : 0));
        if (ev)
            p[n++] = (struct pollfd){.fd = fd, .events = ev};
    }
    *out = p;
    return n;
}

/* Back into the sets, as Linux's select counts: a bit per set. */
static int poll_to_sets(const struct pollfd *p, int n, int nfds, fd_set *r, fd_set *w, fd_set *e)
{
    for (int i = 0; i < n; i++)
        if (p[i].revents & POLLNVAL)
            return -EBADF;
    clear_set(r, nfds);
    clear_set(w, nfds);
    clear_set(e, nfds);
    int count = 0;
    for (int i = 0; i < n; i++) {
        short ev = p[i].events, rv = p[i].revents;
        if ((ev & POLLIN) && (rv & (POLLIN | POLLHUP | POLLERR)) && ++count)
            set_bit(r, p[i].fd);
        if ((ev & POLLOUT) && (rv & (POLLOUT | POLLERR)) && ++count)
            set_bit(w, p[i].fd);
        if ((ev & POLLPRI) && (rv & POLLPRI) && ++count)
            set_bit(e, p[i].fd);
    }
    return count;
}

int hp__px_pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                   const sigset_t *mask, struct timeval *update)
{
    if (nfds < 0)
        return -EINVAL;
    struct pollfd *p;
    int n = sets_to_poll(nfds, r, w, e, &p);
    if (n < 0)
        return n;
    uint64_t start = hp__px_now_ns();
    int rc = hp__px_ppoll(p, (nfds_t)n, timeout, mask);
    if (rc > 0)
        rc = poll_to_sets(p, n, nfds, r, w, e);
    else if (rc == 0)
        poll_to_sets(p, 0, nfds, r, w, e);
    free(p);
    if (update && timeout) {
        /* select() leaves the time not slept in its timeval (Linux). */
        int64_t left =
            timeout->tv_sec * 1000000000 + timeout->tv_nsec - (int64_t)(hp__px_now_ns() - start);
        if (left < 0)
            left = 0;
        update->tv_sec = (time_t)(left / 1000000000);
        update->tv_usec = (suseconds_t)(left % 1000000000 / 1000);
    }
    return rc;
}
