/* SPDX-License-Identifier: BSD-3-Clause */
/* The fd table of the POSIX layer: which kernel fds are hotpath sockets or epoll sets, their shared objects, and the placeholder fds that give each socket a real number. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <hotpath/buf.h>

#include "posix_internal.h"

_Atomic(px_slot *) hp__px_fds[PX_FD_MAX / PX_FD_CHUNK];

/* The object every internal fd points at. */
static struct px_obj internal_obj = {.kind = PX_K_INTERNAL, .refs = 1};

static px_slot *chunk_of(int fd, bool create)
{
    unsigned i = (unsigned)fd >> PX_FD_CHUNK_BITS;
    px_slot *c = atomic_load_explicit(&hp__px_fds[i], memory_order_acquire);
    if (c || !create)
        return c;
    /* Under the lock: no other writer. Zeroed slots are NULL pointers. */
    c = calloc(PX_FD_CHUNK, sizeof *c);
    if (c)
        atomic_store_explicit(&hp__px_fds[i], c, memory_order_release);
    return c;
}

struct px_obj *hp__px_fd_set(int fd, struct px_obj *obj)
{
    if ((unsigned)fd >= PX_FD_MAX)
        return NULL;
    px_slot *c = chunk_of(fd, obj != NULL);
    if (!c)
        return NULL;
    return atomic_exchange_explicit(&c[(unsigned)fd & (PX_FD_CHUNK - 1)], obj,
                                    memory_order_acq_rel);
}

void hp__px_fd_install(int fd, struct px_obj *obj)
{
    struct px_obj *old = hp__px_fd_set(fd, obj);
    /* The kernel gave out a number the table still held: that fd was
     * closed behind the layer's back (fclose of an fdopen()ed socket, a
     * raw close system call). Its object loses that reference. */
    if (old && old != obj)
        hp__px_unref(old);
}

struct px_sock *hp__px_sock(int fd)
{
    struct px_obj *o = hp__px_fd_get(fd);
    return o && o->kind == PX_K_SOCK ? (struct px_sock *)o : NULL;
}

void hp__px_fd_internal(int fd)
{
    if (fd >= 0)
        hp__px_fd_install(fd, &internal_obj);
}

void hp__px_ref(struct px_obj *o)
{
    o->refs++;
}

void hp__px_unref(struct px_obj *o)
{
    if (!o || o->kind == PX_K_INTERNAL || --o->refs > 0)
        return;
    if (o->kind == PX_K_SOCK)
        hp__px_sock_free((struct px_sock *)o);
    else if (o->kind == PX_K_EPOLL)
        hp__px_epoll_free(o);
}

/* ---- the layer's own fds, out of the program's way ----------------------------- */

/* Programs pick fixed low numbers (a shell's `exec 3<>...`, daemons'
 * inherited fds): the layer keeps its own fds at PX_FD_HIGH or above, or
 * at half the fd limit when that is lower. */
#define PX_FD_HIGH 256

static int fd_floor(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < 2 * PX_FD_HIGH)
        return (int)(rl.rlim_cur / 2);
    return PX_FD_HIGH;
}

int hp__px_fd_high(int fd)
{
    if (fd < 0 || fd >= fd_floor())
        return fd;
    int n = PX_REAL(fcntl)(fd, F_DUPFD_CLOEXEC, fd_floor());
    if (n < 0)
        return fd; /* no room up there: keep it where it is */
    PX_REAL(close)(fd);
    return n;
}

int hp__px_fill_low(int *held, int max)
{
    int n = 0, floor = fd_floor();
    while (n < max) {
        int fd =
            PX_REAL(fcntl)(0 <= hp__px.placeholder ? hp__px.placeholder : 2, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            break;
        if (fd >= floor) {
            PX_REAL(close)(fd);
            break;
        }
        held[n++] = fd;
    }
    return n;
}

void hp__px_release_low(const int *held, int n)
{
    for (int i = 0; i < n; i++)
        PX_REAL(close)(held[i]);
}

int hp__px_reserve_fd(bool cloexec)
{
    if (hp__px.placeholder < 0) {
        int fd = hp__px_fd_high(PX_REAL(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        if (fd < 0)
            return -errno;
        hp__px.placeholder = fd;
        hp__px_fd_internal(fd);
    }
    int fd = PX_REAL(fcntl)(hp__px.placeholder, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
    if (fd < 0)
        return -errno;
    if ((unsigned)fd >= PX_FD_MAX || !chunk_of(fd, true)) {
        PX_REAL(close)(fd);
        return -EMFILE;
    }
    return fd;
}

struct px_sock *hp__px_sock_new(int proto, int domain)
{
    struct px_sock *ps = calloc(1, sizeof *ps);
    if (!ps)
        return NULL;
    ps->o.kind = PX_K_SOCK;
    ps->proto = (uint8_t)proto;
    ps->domain = (uint8_t)domain;
    ps->anext = hp__px.socks;
    if (ps->anext)
        ps->anext->aprev = ps;
    hp__px.socks = ps;
    return ps;
}

void hp__px_sock_free(struct px_sock *ps)
{
    hp__px_epoll_forget(ps);
    hp__px_sock_release(ps);
    if (ps->aprev)
        ps->aprev->anext = ps->anext;
    else if (hp__px.socks == ps)
        hp__px.socks = ps->anext;
    if (ps->anext)
        ps->anext->aprev = ps->aprev;
    free(ps);
}

void hp__px_sock_kill_all(void)
{
    for (struct px_sock *ps = hp__px.socks; ps; ps = ps->anext) {
        hp__px_sock_release(ps);
        ps->dead = true;
    }
}

/* ---- dup, dup2, dup3, close_range ------------------------------------------------- */

int hp__px_dup(int fd)
{
    hp__px_lock();
    struct px_obj *o = hp__px_fd_get(fd);
    int rc;
    if (!o || o->kind == PX_K_INTERNAL) {
        rc = -EBADF;
    } else if ((rc = PX_REAL(dup)(fd)) < 0) {
        rc = -errno;
    } else {
        hp__px_ref(o);
        hp__px_fd_install(rc, o);
    }
    hp__px_unlock();
    return rc;
}

int hp__px_dup3(int fd, int newfd, int flags, bool is_dup2)
{
    hp__px_lock();
    struct px_obj *o = hp__px_fd_get(fd), *target = hp__px_fd_get(newfd);
    int rc;
    if ((o && o->kind == PX_K_INTERNAL) || (target && target->kind == PX_K_INTERNAL)) {
        /* The layer's own fds are not the program's to replace. */
        rc = -EBADF;
    } else {
        rc = is_dup2 ? PX_REAL(dup2)(fd, newfd) : PX_REAL(dup3)(fd, newfd, flags);
        if (rc < 0) {
            rc = -errno;
        } else if (target != o) {
            /* The kernel closed newfd's old file (if any) and newfd now
             * refers to fd's. */
            bool was_sock = target && target->kind == PX_K_SOCK;
            if (o)
                hp__px_ref(o);
            hp__px_fd_install(newfd, o);
            if (was_sock && hp__px.status == PX_ST_UP)
                hp__px_drive(); /* its FIN (or RST) leaves now */
        }
    }
    hp__px_unlock();
    return rc;
}

/* Close [first, last] (or set close-on-exec): the layer's objects there
 * lose their fds; its own fds are skipped. */
int hp__px_close_range(unsigned first, unsigned last, int flags)
{
    if (first > last)
        return -EINVAL;
    hp__px_lock();
    unsigned end = last < PX_FD_MAX - 1 ? last : PX_FD_MAX - 1, from = first;
    int rc = 0;
    for (unsigned fd = first; fd <= end && first < PX_FD_MAX; fd++) {
        px_slot *c = chunk_of((int)fd, false);
        if (!c) {
            fd |= PX_FD_CHUNK - 1; /* the whole chunk is empty */
            continue;
        }
        struct px_obj *o = atomic_load(&c[fd & (PX_FD_CHUNK - 1)]);
        if (!o)
            continue;
        if (o->kind == PX_K_INTERNAL) {
            if (fd > from && PX_REAL(close_range)(from, fd - 1, flags) < 0)
                rc = -errno;
            from = fd + 1;
        } else if (!(flags & CLOSE_RANGE_CLOEXEC)) {
            hp__px_unref(hp__px_fd_set((int)fd, NULL));
        }
    }
    if (from <= last && from >= first && PX_REAL(close_range)(from, last, flags) < 0)
        rc = -errno;
    hp__px_unlock();
    return rc;
}
