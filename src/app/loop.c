/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop (loop.h): polls a stack, busy-polls for a bounded time, then sleeps in epoll on the links, the registered fds, a wake eventfd and the next timer. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/loop.h>

#include "../base/debug.h"
#include "../base/fence.h"

/*
 * Two epoll sets. `uep` holds the fds the user registered, with the user's
 * interest (level, edge, one-shot). `ep`, the one the loop sleeps in, holds
 * the links' fds, the wake eventfd and `uep` itself (an epoll fd polls
 * readable while its set has an event). While the loop is busy it asks only
 * `uep`, and only every HP_LOOP_FD_CHECK_US: the links are polled anyway, and
 * their fds (readable all the time under traffic) would only be noise.
 *
 * hp_loop_wake() and the sleep meet Dekker-style, as the mem link's ends do:
 * the waker sets wake_pending, then reads `sleeping`; the sleeper sets
 * `sleeping`, then reads wake_pending; a full barrier between the write and
 * the read on each side. Either the sleeper sees the request and does not
 * sleep, or the waker sees the sleeper and writes the eventfd; a busy loop
 * costs a waker one atomic operation.
 */

#define TAG_WAKE     1u
#define TAG_USER     2u
#define TAG_LINK     3u
#define MAX_LINK_FDS 16
#define SLEEP_EVENTS 8
#define NAP_NS       1000000ull /* a link that cannot wake a sleeper: sleep at most this */
#define SPIN_MAX_US  10000000u  /* the knob's bound but FOREVER (10 s) */
#define FD_CHECK_NS  ((uint64_t)HP_LOOP_FD_CHECK_US * 1000u)
#define RUN_BATCH    64

struct hp_loop_timer {
    struct hp_loop *l;
    void *user;
    uint64_t due, period;
    int32_t slot;                      /* position in the heap, -1 when stopped */
    struct hp_loop_timer *prev, *next; /* every timer of the loop */
};

struct fdrec {
    void *user;
    uint32_t events; /* as registered (HP_EV_*, HP_LOOP_ET / ONESHOT) */
    bool used;
};

struct hp_loop {
    /* Written by other threads. */
    _Alignas(64) _Atomic uint32_t wake_pending;
    _Atomic uint32_t sleeping;
    _Atomic uint32_t stop;
    _Atomic uint64_t wake_calls, wake_signals;
    /* The loop's thread. */
    _Alignas(64) struct hp_stack *s;
    int ep, uep, wfd;
    uint32_t spin_us;
    uint64_t spin_ns; /* UINT64_MAX: never sleep */
    uint64_t last_fd_check;
    bool user_ready; /* the last sleep saw uep readable */
    bool prepared;   /* hp_loop_prepare() armed an outside sleep */
    int link_fd[MAX_LINK_FDS];
    int nlink;
    struct fdrec *fds; /* indexed by fd */
    int fds_cap, nfds;
    struct hp_loop_timer **heap;
    uint32_t nheap, heap_cap;
    struct hp_loop_timer *timers;
    /* hp_loop_run's batch, so that a timer destroyed or an fd removed by a
     * callback does not reach a later callback of the same batch. */
    struct hp_loop_event *run_ev;
    int run_n;
    struct hp_loop_stats st;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The time after a round: the stack's clock, read by its poll, when there is
 * a stack (a clock read costs as much as an idle poll on some machines). */
static uint64_t loop_now(const struct hp_loop *l)
{
    return l->s ? hp_stack_now_ns(l->s) : mono_ns();
}

/* ---- timers: a binary heap on due times --------------------------------- */

static void heap_set(struct hp_loop *l, uint32_t i, struct hp_loop_timer *t)
{
    l->heap[i] = t;
    t->slot = (int32_t)i;
}

static void heap_up(struct hp_loop *l, uint32_t i)
{
    struct hp_loop_timer *t = l->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (l->heap[p]->due <= t->due)
            break;
        heap_set(l, i, l->heap[p]);
        i = p;
    }
    heap_set(l, i, t);
}

static void heap_down(struct hp_loop *l, uint32_t i)
{
    struct hp_loop_timer *t = l->heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= l->nheap)
            break;
        if (c + 1 < l->nheap && l->heap[c + 1]->due < l->heap[c]->due)
            c++;
        if (t->due <= l->heap[c]->due)
            break;
        heap_set(l, i, l->heap[c]);
        i = c;
    }
    heap_set(l, i, t);
}

static void heap_remove(struct hp_loop *l, struct hp_loop_timer *t)
{
    uint32_t i = (uint32_t)t->slot;
    t->slot = -1;
    struct hp_loop_timer *last = l->heap[--l->nheap];
    if (i == l->nheap)
        return;
    heap_set(l, i, last);
    heap_down(l, i);
    heap_up(l, (uint32_t)last->slot);
}

static int heap_insert(struct hp_loop *l, struct hp_loop_timer *t)
{
    if (l->nheap == l->heap_cap) {
        uint32_t cap = l->heap_cap ? 2 * l->heap_cap : 16;
        struct hp_loop_timer **h = realloc(l->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        l->heap = h;
        l->heap_cap = cap;
    }
    heap_set(l, l->nheap++, t);
    heap_up(l, (uint32_t)t->slot);
    return 0;
}

HP_API struct hp_loop_timer *hp_loop_timer_create(struct hp_loop *l, void *user)
{
    if (!l)
        return hp__fail_null(EINVAL, "loop", "hp_loop_timer_create: no loop");
    struct hp_loop_timer *t = calloc(1, sizeof *t);
    if (!t)
        return hp__fail_null(ENOMEM, "loop", "hp_loop_timer_create: out of memory");
    t->l = l;
    t->user = user;
    t->slot = -1;
    t->next = l->timers;
    if (l->timers)
        l->timers->prev = t;
    l->timers = t;
    return t;
}

HP_API int hp_loop_timer_start(struct hp_loop_timer *t, uint64_t after_ns, uint64_t period_ns)
{
    if (!t)
        return -EINVAL;
    struct hp_loop *l = t->l;
    uint64_t now = mono_ns();
    t->due = after_ns > UINT64_MAX - now ? UINT64_MAX : now + after_ns;
    t->period = period_ns;
    if (t->slot >= 0) {
        heap_down(l, (uint32_t)t->slot);
        heap_up(l, (uint32_t)t->slot);
        return 0;
    }
    return heap_insert(l, t);
}

HP_API int hp_loop_timer_stop(struct hp_loop_timer *t)
{
    if (!t)
        return -EINVAL;
    if (t->slot >= 0)
        heap_remove(t->l, t);
    return 0;
}

HP_API bool hp_loop_timer_active(const struct hp_loop_timer *t)
{
    return t && t->slot >= 0;
}

/* Drop the events of the batch hp_loop_run is handing out that are about
 * a timer or an fd that no longer exists. */
static void run_forget(struct hp_loop *l, const struct hp_loop_timer *t, int fd)
{
    for (int i = 0; i < l->run_n; i++) {
        struct hp_loop_event *e = &l->run_ev[i];
        if ((t && e->kind == HP_LOOP_TIMER && e->timer == t) ||
            (fd >= 0 && e->kind == HP_LOOP_FD && e->fd == fd))
            e->kind = 0;
    }
}

HP_API void hp_loop_timer_destroy(struct hp_loop_timer *t)
{
    if (!t)
        return;
    struct hp_loop *l = t->l;
    hp_loop_timer_stop(t);
    run_forget(l, t, -1);
    if (t->prev)
        t->prev->next = t->next;
    else
        l->timers = t->next;
    if (t->next)
        t->next->prev = t->prev;
    free(t);
}

/* Expired timers into ev (at most max); periodic ones go back on their
 * schedule, skipping the periods already missed. */
static int timers_due(struct hp_loop *l, struct hp_loop_event *ev, int max, uint64_t now)
{
    int n = 0;
    while (n < max && l->nheap && l->heap[0]->due <= now) {
        struct hp_loop_timer *t = l->heap[0];
        if (t->period) {
            uint64_t late = now - t->due;
            uint64_t step = (late / t->period + 1) * t->period;
            t->due = step > UINT64_MAX - t->due ? UINT64_MAX : t->due + step;
            heap_down(l, 0);
        } else {
            heap_remove(l, t);
        }
        ev[n] = (struct hp_loop_event){.kind = HP_LOOP_TIMER,
                                       .events = HP_EV_IN,
                                       .user = t->user,
                                       .fd = -1,
                                       .timer = t};
        n++;
    }
    l->st.ev_timer += (uint64_t)n;
    return n;
}

/* ---- create, destroy, knobs ------------------------------------------------ */

static int ep_add(int ep, int fd, uint32_t events, uint64_t data)
{
    struct epoll_event e = {.events = events, .data.u64 = data};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
}

static uint64_t spin_ns_of(uint32_t us)
{
    return us == HP_LOOP_SPIN_FOREVER ? UINT64_MAX : (uint64_t)us * 1000u;
}

static int loop_open_fds(struct hp_loop *l)
{
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->uep = epoll_create1(EPOLL_CLOEXEC);
    l->wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->ep < 0 || l->uep < 0 || l->wfd < 0)
        return -errno;
    int rc = ep_add(l->ep, l->wfd, EPOLLIN, (uint64_t)TAG_WAKE << 32);
    if (rc == 0)
        rc = ep_add(l->ep, l->uep, EPOLLIN, (uint64_t)TAG_USER << 32);
    return rc;
}

static void loop_close_fds(struct hp_loop *l)
{
    if (l->ep >= 0)
        close(l->ep);
    if (l->uep >= 0)
        close(l->uep);
    if (l->wfd >= 0)
        close(l->wfd);
}

HP_API struct hp_loop *hp_loop_create(struct hp_stack *s, const struct hp_loop_config *cfg)
{
    static const struct hp_loop_config zero;
    if (!cfg)
        cfg = &zero;
    if (cfg->flags & ~(unsigned)HP_LOOP_F_NO_SPIN)
        return hp__fail_null(EINVAL, "loop", "unknown flags 0x%x", cfg->flags);
    if (cfg->spin_us > SPIN_MAX_US && cfg->spin_us != HP_LOOP_SPIN_FOREVER)
        return hp__fail_null(EINVAL, "loop",
                             "spin_us %u: at most %u (10 s), or HP_LOOP_SPIN_FOREVER", cfg->spin_us,
                             SPIN_MAX_US);
    struct hp_loop *l = aligned_alloc(64, sizeof *l);
    if (!l)
        return hp__fail_null(ENOMEM, "loop", "out of memory");
    memset(l, 0, sizeof *l);
    atomic_init(&l->wake_pending, 0);
    atomic_init(&l->sleeping, 0);
    atomic_init(&l->stop, 0);
    atomic_init(&l->wake_calls, 0);
    atomic_init(&l->wake_signals, 0);
    l->s = s;
    l->ep = l->uep = l->wfd = -1;
    l->spin_us = (cfg->flags & HP_LOOP_F_NO_SPIN) ? 0
                 : cfg->spin_us                   ? cfg->spin_us
                                                  : HP_LOOP_SPIN_US_DEFAULT;
    l->spin_ns = spin_ns_of(l->spin_us);
    int rc = loop_open_fds(l);
    if (rc < 0) {
        loop_close_fds(l);
        free(l);
        return hp__fail_null(-rc, "loop", "cannot create its epoll sets and eventfd: %s",
                             hp_strerror(rc));
    }
    return l;
}

HP_API int hp_loop_destroy(struct hp_loop *l)
{
    if (!l)
        return 0;
    while (l->timers) {
        struct hp_loop_timer *t = l->timers;
        l->timers = t->next;
        free(t);
    }
    free(l->heap);
    free(l->fds);
    loop_close_fds(l);
    free(l);
    return 0;
}

HP_API struct hp_stack *hp_loop_stack(const struct hp_loop *l)
{
    return l ? l->s : NULL;
}

HP_API int hp_loop_set_spin_us(struct hp_loop *l, uint32_t spin_us)
{
    if (!l || (spin_us > SPIN_MAX_US && spin_us != HP_LOOP_SPIN_FOREVER))
        return -EINVAL;
    l->spin_us = spin_us;
    l->spin_ns = spin_ns_of(spin_us);
    return 0;
}

HP_API uint32_t hp_loop_spin_us(const struct hp_loop *l)
{
    return l ? l->spin_us : 0;
}

HP_API int hp_loop_fd(const struct hp_loop *l)
{
    return l ? l->ep : -1;
}

HP_API void hp_loop_stats(const struct hp_loop *l, struct hp_loop_stats *out)
{
    *out = l->st;
    out->wake_calls = atomic_load_explicit(&l->wake_calls, memory_order_relaxed);
    out->wake_signals = atomic_load_explicit(&l->wake_signals, memory_order_relaxed);
}

/* ---- wake, stop ------------------------------------------------------------ */

HP_API void hp_loop_wake(struct hp_loop *l)
{
    if (!l)
        return;
    atomic_fetch_add_explicit(&l->wake_calls, 1, memory_order_relaxed);
    atomic_store_explicit(&l->wake_pending, 1, memory_order_release);
    hp__fence_seq_cst();
    if (atomic_load_explicit(&l->sleeping, memory_order_relaxed) == 0 ||
        atomic_exchange_explicit(&l->sleeping, 0, memory_order_relaxed) == 0)
        return;
    uint64_t one = 1;
    /* Only a bad fd could fail: the loop owns it until it is destroyed. */
    if (write(l->wfd, &one, sizeof one) == (ssize_t)sizeof one)
        atomic_fetch_add_explicit(&l->wake_signals, 1, memory_order_relaxed);
}

HP_API void hp_loop_stop(struct hp_loop *l)
{
    if (!l)
        return;
    atomic_store_explicit(&l->stop, 1, memory_order_relaxed);
    hp_loop_wake(l);
}

/* ---- registered fds ------------------------------------------------------------ */

#define FD_INTEREST (HP_EV_IN | HP_EV_OUT | HP_EV_RDHUP | HP_EV_PRI | HP_EV_ERR | HP_EV_HUP)
#define FD_MODES    (HP_LOOP_ET | HP_LOOP_ONESHOT)

static uint32_t to_epoll(uint32_t ev)
{
    return ((ev & HP_EV_IN) ? EPOLLIN : 0u) | ((ev & HP_EV_OUT) ? EPOLLOUT : 0u) |
           ((ev & HP_EV_RDHUP) ? EPOLLRDHUP : 0u) | ((ev & HP_EV_PRI) ? EPOLLPRI : 0u) |
           ((ev & HP_LOOP_ET) ? (uint32_t)EPOLLET : 0u) |
           ((ev & HP_LOOP_ONESHOT) ? EPOLLONESHOT : 0u);
}

static uint32_t from_epoll(uint32_t e)
{
    return ((e & EPOLLIN) ? HP_EV_IN : 0u) | ((e & EPOLLOUT) ? HP_EV_OUT : 0u) |
           ((e & EPOLLRDHUP) ? HP_EV_RDHUP : 0u) | ((e & EPOLLPRI) ? HP_EV_PRI : 0u) |
           ((e & EPOLLERR) ? HP_EV_ERR : 0u) | ((e & EPOLLHUP) ? HP_EV_HUP : 0u);
}

static bool fd_known(const struct hp_loop *l, int fd)
{
    return fd >= 0 && fd < l->fds_cap && l->fds[fd].used;
}

static int fd_check(const struct hp_loop *l, int fd, uint32_t events)
{
    if (!l || fd < 0 || (events & ~(uint32_t)(FD_INTEREST | FD_MODES)))
        return -EINVAL;
    if (fd == l->ep || fd == l->uep || fd == l->wfd)
        return -EINVAL;
    return 0;
}

static int fds_grow(struct hp_loop *l, int fd)
{
    if (fd < l->fds_cap)
        return 0;
    int cap = l->fds_cap ? l->fds_cap : 64;
    while (cap <= fd)
        cap *= 2;
    struct fdrec *f = realloc(l->fds, (size_t)cap * sizeof *f);
    if (!f)
        return -ENOMEM;
    memset(f + l->fds_cap, 0, (size_t)(cap - l->fds_cap) * sizeof *f);
    l->fds = f;
    l->fds_cap = cap;
    return 0;
}

HP_API int hp_loop_fd_add(struct hp_loop *l, int fd, uint32_t events, void *user)
{
    int rc = fd_check(l, fd, events);
    if (rc < 0)
        return rc;
    if (fd_known(l, fd))
        return -EEXIST;
    if ((rc = fds_grow(l, fd)) < 0)
        return rc;
    if ((rc = ep_add(l->uep, fd, to_epoll(events), (uint64_t)fd)) < 0)
        return rc;
    l->fds[fd] = (struct fdrec){.user = user, .events = events, .used = true};
    l->nfds++;
    return 0;
}

HP_API int hp_loop_fd_mod(struct hp_loop *l, int fd, uint32_t events, void *user)
{
    int rc = fd_check(l, fd, events);
    if (rc < 0)
        return rc;
    if (!fd_known(l, fd))
        return -ENOENT;
    struct epoll_event e = {.events = to_epoll(events), .data.u64 = (uint64_t)fd};
    if (epoll_ctl(l->uep, EPOLL_CTL_MOD, fd, &e) < 0)
        return -errno;
    l->fds[fd].user = user;
    l->fds[fd].events = events;
    return 0;
}

HP_API int hp_loop_fd_del(struct hp_loop *l, int fd)
{
    if (!l)
        return -EINVAL;
    if (!fd_known(l, fd))
        return -ENOENT;
    /* EBADF: closed already, and epoll forgot it with its last reference. */
    (void)epoll_ctl(l->uep, EPOLL_CTL_DEL, fd, NULL);
    l->fds[fd].used = false;
    l->nfds--;
    run_forget(l, NULL, fd);
    return 0;
}

/* Ready registered fds into ev (non-blocking). */
static int fds_ready(struct hp_loop *l, struct hp_loop_event *ev, int max, uint64_t now)
{
    struct epoll_event e[64];
    int want = max < 64 ? max : 64;
    l->last_fd_check = now;
    l->user_ready = false;
    int k = epoll_wait(l->uep, e, want, 0);
    int n = 0;
    for (int i = 0; i < k; i++) {
        int fd = (int)(uint32_t)e[i].data.u64;
        if (!fd_known(l, fd))
            continue;
        ev[n++] = (struct hp_loop_event){.kind = HP_LOOP_FD,
                                         .events = from_epoll(e[i].events),
                                         .user = l->fds[fd].user,
                                         .fd = fd};
    }
    /* A full batch may have left more: look again at the next call. */
    if (k == want)
        l->user_ready = true;
    l->st.ev_fd += (uint64_t)n;
    return n;
}

/* ---- gathering events ---------------------------------------------------------- */

static int sock_events(struct hp_loop *l, struct hp_loop_event *ev, int max)
{
    struct hp_event se[32];
    int n = 0;
    while (n < max) {
        int want = max - n < 32 ? max - n : 32;
        int k = hp_stack_events(l->s, se, want);
        for (int i = 0; i < k; i++)
            ev[n++] = (struct hp_loop_event){.kind = HP_LOOP_SOCK,
                                             .events = se[i].events,
                                             .user = se[i].user,
                                             .fd = -1};
        if (k < want)
            break;
    }
    l->st.ev_sock += (uint64_t)n;
    return n;
}

/*
 * One round: the wake request, a poll of the stack, then every kind of
 * event. *work says whether the poll did anything (frames, timers).
 * Registered fds are asked when the last sleep saw them ready, or when they
 * were last asked HP_LOOP_FD_CHECK_US ago or more.
 */
static int gather(struct hp_loop *l, struct hp_loop_event *ev, int max, uint64_t *now, bool *work)
{
    int n = 0;
    if (atomic_load_explicit(&l->wake_pending, memory_order_relaxed) &&
        atomic_exchange_explicit(&l->wake_pending, 0, memory_order_acquire)) {
        ev[n++] = (struct hp_loop_event){.kind = HP_LOOP_WAKE, .events = HP_EV_IN, .fd = -1};
        l->st.ev_wake++;
    }
    *work = false;
    if (l->s) {
        l->st.polls++;
        if (hp_stack_poll(l->s) > 0)
            *work = true;
        else
            l->st.idle_polls++;
        n += sock_events(l, ev + n, max - n);
    }
    if (l->nheap || l->nfds)
        *now = loop_now(l);
    if (l->nheap && n < max)
        n += timers_due(l, ev + n, max - n, *now);
    if (l->nfds && n < max && (l->user_ready || *now - l->last_fd_check >= FD_CHECK_NS)) {
        if (!l->user_ready)
            l->st.fd_checks++;
        n += fds_ready(l, ev + n, max - n, *now);
    }
    return n;
}

/* ---- sleeping ------------------------------------------------------------------ */

/* Keep the links' fds in the sleep set in step with the stack's interfaces. */
static void sync_link_fds(struct hp_loop *l)
{
    int fds[MAX_LINK_FDS];
    int n = l->s ? hp_stack_fds(l->s, fds, MAX_LINK_FDS) : 0;
    if (n > MAX_LINK_FDS)
        n = MAX_LINK_FDS;
    if (n == l->nlink && memcmp(fds, l->link_fd, (size_t)n * sizeof fds[0]) == 0)
        return;
    for (int i = 0; i < l->nlink; i++)
        (void)epoll_ctl(l->ep, EPOLL_CTL_DEL, l->link_fd[i], NULL);
    l->nlink = 0;
    for (int i = 0; i < n; i++) {
        /* EEXIST: two interfaces on one fd (a decorator and its inner link). */
        int rc = ep_add(l->ep, fds[i], EPOLLIN, ((uint64_t)TAG_LINK << 32) | (uint32_t)fds[i]);
        if (rc < 0 && rc != -EEXIST)
            hp__log(HP_LOG_WARN, "loop", "cannot watch link fd %d: %s", fds[i], hp_strerror(rc));
    }
    memcpy(l->link_fd, fds, (size_t)n * sizeof fds[0]);
    l->nlink = n;
}

static int64_t min_ns(int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

/*
 * Arm everything for a sleep. @return > 0 when work is waiting (no sleep),
 * else 0 with *timeout_ns (-1: none) from the stack's and the loop's timers
 * and `deadline` (0: none).
 */
static int arm(struct hp_loop *l, uint64_t now, uint64_t deadline, int64_t *timeout_ns)
{
    int64_t t = deadline ? (int64_t)(deadline > now ? deadline - now : 0) : -1;
    if (l->nheap)
        t = min_ns(t, l->heap[0]->due > now ? (int64_t)(l->heap[0]->due - now) : 0);
    if (l->s) {
        sync_link_fds(l);
        int64_t st = -1;
        int rc = hp_stack_prepare_sleep(l->s, &st);
        if (rc > 0)
            return 1;
        t = min_ns(t, st);
        if (rc < 0) {
            /* A link cannot wake a sleeper: nap, then poll it. */
            t = min_ns(t, (int64_t)NAP_NS);
            l->st.naps++;
        }
    }
    *timeout_ns = t;
    if (t == 0)
        return 1;
    /* Announce the sleep to hp_loop_wake(), then look for its request. */
    atomic_store_explicit(&l->sleeping, 1, memory_order_relaxed);
    hp__fence_seq_cst();
    if (atomic_load_explicit(&l->wake_pending, memory_order_relaxed)) {
        atomic_store_explicit(&l->sleeping, 0, memory_order_relaxed);
        return 1;
    }
    return 0;
}

static int epoll_sleep(int ep, struct epoll_event *e, int n, int64_t timeout_ns,
                       const sigset_t *mask)
{
    struct timespec ts = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
    int k = epoll_pwait2(ep, e, n, timeout_ns < 0 ? NULL : &ts, mask);
    if (k >= 0 || errno != ENOSYS)
        return k;
    /* Kernels before 5.11: milliseconds, rounded up so as not to wake early. */
    int ms = timeout_ns < 0 ? -1 : (int)((timeout_ns + 999999) / 1000000);
    return epoll_pwait(ep, e, n, ms, mask);
}

/* What woke a sleep: drain the wake eventfd; note registered fds ready
 * (the links' fds need nothing: the next poll takes their frames). */
static void sleep_events(struct hp_loop *l, const struct epoll_event *e, int k)
{
    bool link = false;
    for (int i = 0; i < k; i++) {
        uint32_t tag = (uint32_t)(e[i].data.u64 >> 32);
        if (tag == TAG_WAKE) {
            uint64_t v;
            while (read(l->wfd, &v, sizeof v) < 0 && errno == EINTR)
                ;
        } else if (tag == TAG_USER) {
            l->user_ready = true;
        } else if (tag == TAG_LINK && !link) {
            link = true;
            l->st.link_wakes++;
        }
    }
}

/* Sleep in the kernel. 0 (woken or timed out), -EINTR, or another -errno. */
static int loop_sleep(struct hp_loop *l, uint64_t now, uint64_t deadline, const sigset_t *mask)
{
    int64_t timeout;
    if (arm(l, now, deadline, &timeout) > 0) {
        l->st.not_slept++;
        return 0;
    }
    struct epoll_event e[SLEEP_EVENTS];
    l->st.sleeps++;
    int k = epoll_sleep(l->ep, e, SLEEP_EVENTS, timeout, mask);
    int err = errno;
    atomic_store_explicit(&l->sleeping, 0, memory_order_relaxed);
    if (k < 0)
        return -err;
    sleep_events(l, e, k);
    return 0;
}

/* After an outside sleep on hp_loop_fd() (hp_loop_prepare()): what woke it. */
static void after_outside_sleep(struct hp_loop *l)
{
    struct epoll_event e[SLEEP_EVENTS];
    l->prepared = false;
    atomic_store_explicit(&l->sleeping, 0, memory_order_relaxed);
    int k = epoll_wait(l->ep, e, SLEEP_EVENTS, 0);
    if (k > 0)
        sleep_events(l, e, k);
}

/* ---- waiting ------------------------------------------------------------------- */

HP_API int hp_loop_pwait(struct hp_loop *l, struct hp_loop_event *ev, int max, int64_t timeout_ns,
                         const sigset_t *sigmask)
{
    if (!l || !ev || max < 1)
        return -EINVAL;
    l->st.waits++;
    if (l->prepared)
        after_outside_sleep(l);
    /* The clock is read only once nothing was found: a busy caller pays
     * for a poll and its events, nothing else. */
    uint64_t now = 0, idle_since = 0, deadline = 0;
    for (bool first = true;; first = false) {
        bool work;
        int n = gather(l, ev, max, &now, &work);
        if (n > 0)
            return n;
        if (timeout_ns == 0)
            return 0;
        if (!(l->nheap || l->nfds))
            now = loop_now(l);
        if (first && timeout_ns > 0)
            deadline = now + (uint64_t)timeout_ns;
        if (deadline && now >= deadline)
            return 0;
        /* Spin for spin_ns from the first poll that found nothing. */
        if (work || !idle_since)
            idle_since = now;
        if (l->spin_ns == UINT64_MAX || now - idle_since < l->spin_ns)
            continue;
        int rc = loop_sleep(l, now, deadline, sigmask);
        if (rc < 0)
            return rc;
        idle_since = 0;
    }
}

HP_API int hp_loop_wait(struct hp_loop *l, struct hp_loop_event *ev, int max, int timeout_ms)
{
    int64_t t = timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000000;
    return hp_loop_pwait(l, ev, max, t, NULL);
}

HP_API int hp_loop_run(struct hp_loop *l, hp_loop_cb cb, void *arg)
{
    if (!l || !cb)
        return -EINVAL;
    struct hp_loop_event ev[RUN_BATCH];
    while (!atomic_exchange_explicit(&l->stop, 0, memory_order_relaxed)) {
        int n = hp_loop_wait(l, ev, RUN_BATCH, -1);
        if (n == -EINTR)
            continue;
        if (n < 0)
            return n;
        l->run_ev = ev;
        l->run_n = n;
        for (int i = 0; i < n; i++)
            if (ev[i].kind)
                cb(l, &ev[i], arg);
        l->run_ev = NULL;
        l->run_n = 0;
    }
    return 0;
}

HP_API int hp_loop_prepare(struct hp_loop *l, int64_t *timeout_ns)
{
    if (!l)
        return -EINVAL;
    int64_t t = -1;
    int rc = 1;
    if (!atomic_load_explicit(&l->wake_pending, memory_order_relaxed) &&
        !(l->s && hp_stack_tx_pending(l->s)))
        rc = arm(l, mono_ns(), 0, &t);
    if (timeout_ns)
        *timeout_ns = rc > 0 ? 0 : t;
    l->prepared = rc == 0;
    /* `sleeping` stays set: hp_loop_wake() signals the eventfd in ep, and
     * the next hp_loop_wait() clears it. */
    return rc;
}
