/* SPDX-License-Identifier: BSD-3-Clause */
/* How the POSIX layer waits: a bounded busy-poll of the stack, then a sleep in the kernel on the link, the program's kernel fds, the next timer and a per-thread wake-up fd; and the keeper thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "posix_internal.h"

/* ---- per-thread wake-up fds ----------------------------------------------- */

/* initial-exec (the layer is preloaded, its thread variables static): each lock took a
 * __tls_get_addr call with the default model. */
static __thread struct px_waiter self_waiter
    __attribute__((tls_model("initial-exec"))) = {.wake_fd = -1};
static pthread_key_t waiter_key;
static pthread_once_t waiter_once = PTHREAD_ONCE_INIT;

/* Thread exit: its wake-up fd goes. */
static void waiter_gone(void *p)
{
    struct px_waiter *w = p;
    if (w->wake_fd < 0)
        return;
    hp__px_lock();
    hp__px_fd_set(w->wake_fd, NULL);
    PX_REAL(close)(w->wake_fd);
    w->wake_fd = -1;
    hp__px_unlock();
}

static void waiter_key_make(void)
{
    pthread_key_create(&waiter_key, waiter_gone);
}

/* Under the lock. */
static struct px_waiter *waiter(void)
{
    struct px_waiter *w = &self_waiter;
    if (w->wake_fd >= 0)
        return w;
    w->wake_fd = hp__px_fd_high(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (w->wake_fd < 0)
        return NULL;
    hp__px_fd_internal(w->wake_fd);
    pthread_once(&waiter_once, waiter_key_make);
    pthread_setspecific(waiter_key, w);
    return w;
}

void hp__px_waiter_forget(void)
{
    /* A fork child: the fd is shared with the parent's thread; drop ours. */
    if (self_waiter.wake_fd >= 0) {
        hp__px_fd_set(self_waiter.wake_fd, NULL);
        PX_REAL(close)(self_waiter.wake_fd);
    }
    self_waiter.wake_fd = -1;
    self_waiter.next = NULL;
}

void hp__px_wake_all(void)
{
    bool loop_wake = false;
    for (struct px_waiter *w = hp__px.sleepers; w; w = w->next) {
        if (w->woken)
            continue;
        w->woken = true;
        if (w->direct) {
            loop_wake = true;
            continue;
        }
        uint64_t one = 1;
        ssize_t r = PX_REAL(write)(w->wake_fd, &one, sizeof one);
        (void)r;
    }
    /* The links were armed again at unlock (hp__px_rearm_for_sleepers):
     * the loop counts as asleep, and its wake-up reaches its fd. */
    if (loop_wake && hp__px.loop)
        hp_loop_wake(hp__px.loop);
}

static void sleepers_remove(struct px_waiter *w)
{
    for (struct px_waiter **p = &hp__px.sleepers; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->next = NULL;
}

/* ---- deadlines and signals -------------------------------------------------- */

uint64_t hp__px_deadline_ns(int64_t ns)
{
    if (ns < 0)
        return 0;
    return hp__px_now_ns() + (uint64_t)ns + (ns == 0); /* 0 is "forever": never return it */
}

uint64_t hp__px_deadline_ms(int timeout_ms)
{
    return timeout_ms < 0 ? 0 : hp__px_deadline_ns((int64_t)timeout_ms * 1000000);
}

bool hp__px_restartable(void)
{
    /* Which signal interrupted us is not known here; restart only when no
     * installed handler asks for EINTR. The signals of faults (a crash
     * handler, a sanitizer's) never interrupt a wait: they do not count. */
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
            sig == SIGSYS || sig == SIGABRT)
            continue;
        struct sigaction sa;
        if (sigaction(sig, NULL, &sa) < 0)
            continue;
        if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
            continue;
        if (!(sa.sa_flags & SA_RESTART))
            return false;
    }
    return true;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* ---- the wait ------------------------------------------------------------ */

#define PX_WAIT_FDS 32

static struct px_waiter direct_waiter = {.wake_fd = -1, .direct = true};

/*
 * sleep_once() for the one program thread with no kernel fd to watch: the
 * loop's own wait (hp_loop_pwait: it polls the stack, arms the links and
 * sleeps in its epoll set, the native path) without the lock. Meanwhile
 * loop_busy keeps every other thread off the stack: hp__px_lock() wakes
 * the loop and waits for this thread to come out. Returns the socket
 * events it found (handed to the sockets), 0, or -errno.
 */
static int sleep_direct(int64_t t, uint64_t now, const sigset_t *mask)
{
    struct px_waiter *w = &direct_waiter;
    w->woken = false;
    w->until_ns = t < 0 ? 0 : now + (uint64_t)t;
    w->next = hp__px.sleepers;
    hp__px.sleepers = w;
    __atomic_store_n(&hp__px.loop_busy, true, __ATOMIC_RELEASE);
    hp__px.loop_disarmed = false;
    struct hp_loop *l = hp__px.loop;
    /* Still in the layer (px_in_layer): the C library calls the loop makes
     * (epoll_ctl on the links' fds) go straight through. */
    hp__px_release();
    struct hp_loop_event ev[64];
    int n = hp_loop_pwait(l, ev, 64, t, mask);
    pthread_mutex_lock(&hp__px.lock);
    hp__px.calls++;
    __atomic_store_n(&hp__px.loop_busy, false, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&hp__px.loop_cond);
    sleepers_remove(w);
    for (int i = 0; i < n; i++)
        if (ev[i].kind == HP_LOOP_SOCK && ev[i].user)
            hp__px_sock_notify(ev[i].user, ev[i].events);
    hp__px.last_poll_ns = hp__px_coarse_ns();
    hp__px.drive_call = hp__px.calls;
    return n;
}

/* Sleep in the kernel (the lock released): the program's kernel fds, the
 * loop's fd (the links, armed by hp_loop_prepare()), the wake-up fd.
 * Returns poll's result (1 without sleeping when work already waits) or
 * -errno. */
static int sleep_once(struct pollfd *kfds, int nk, uint64_t deadline, const sigset_t *mask,
                      int *kready)
{
    *kready = 0;
    int64_t t = -1;
    bool direct = nk == 0 && hp__px.loop && hp__px.app_threads <= 1;
    if (!direct && hp__px.loop && hp_loop_prepare(hp__px.loop, &t) > 0)
        return 1;
    /* The test hook's peer stack is polled only with ours: wake for it. */
    if (hp__px.extra_poll && (t < 0 || t > 1000000))
        t = 1000000;
    uint64_t now = hp__px_now_ns();
    if (deadline) {
        int64_t left = deadline > now ? (int64_t)(deadline - now) : 0;
        if (t < 0 || left < t)
            t = left;
    }
    /* One program thread and no kernel fd to watch: sleep on the loop's
     * fd itself (one epoll, no per-call poll set); another thread wakes
     * it through the loop (hp__px_wake_all). */
    if (direct)
        return sleep_direct(t, now, mask);
    struct px_waiter *w = waiter();
    struct pollfd local[PX_WAIT_FDS], *p = local;
    int n = nk + 2;
    if (n > PX_WAIT_FDS && !(p = malloc((size_t)n * sizeof *p)))
        return -ENOMEM;
    if (nk)
        memcpy(p, kfds, (size_t)nk * sizeof *p);
    p[nk] = (struct pollfd){.fd = hp__px.loop ? hp_loop_fd(hp__px.loop) : -1, .events = POLLIN};
    p[nk + 1] = (struct pollfd){.fd = w ? w->wake_fd : -1, .events = POLLIN};
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    if (w) {
        w->woken = false;
        w->until_ns = t < 0 ? 0 : now + (uint64_t)t;
        w->next = hp__px.sleepers;
        hp__px.sleepers = w;
    }
    hp__px.loop_disarmed = false;
    hp__px_release();
    int r = PX_REAL(ppoll)(p, (nfds_t)n, t < 0 ? NULL : &ts, mask);
    int e = errno;
    hp__px_reacquire();
    if (w) {
        sleepers_remove(w);
        if (p[nk + 1].revents) {
            uint64_t v;
            ssize_t rr = PX_REAL(read)(w->wake_fd, &v, sizeof v);
            (void)rr;
        }
    }
    for (int i = 0; r > 0 && i < nk; i++) {
        kfds[i].revents = p[i].revents;
        *kready += p[i].revents != 0;
    }
    if (p != local)
        free(p);
    return r < 0 ? -e : r;
}

bool hp__px_rearm_for_sleepers(void)
{
    int64_t t = -1;
    if (hp_loop_prepare(hp__px.loop, &t) > 0)
        return true;
    if (t < 0)
        return false;
    uint64_t due = hp__px_now_ns() + (uint64_t)t;
    for (struct px_waiter *w = hp__px.sleepers; w; w = w->next)
        if (!w->until_ns || due < w->until_ns)
            return true;
    return false;
}

int hp__px_wait(bool (*ready)(void *), void *arg, struct pollfd *kfds, int nkfds,
                uint64_t deadline_ns, const sigset_t *sigmask, bool spin)
{
    hp__px_tx_settle();
    uint64_t busy = (uint64_t)hp__px.cfg.busy_poll_us * 1000u;
    uint64_t spin_end = spin && busy ? hp__px_now_ns() + busy : 0;
    /* A handler that runs at any point of the wait ends it, as a signal
     * ends a blocking system call (not only one that comes while asleep). */
    unsigned long sigs = hp__px_signals_handled();
    /* The loop's own wait (sleep_direct) polls first and after its sleep:
     * without spinning, a poll of ours before or after it is one too many. */
    bool direct = nkfds == 0 && hp__px.app_threads <= 1 && !hp__px.extra_poll;
    bool polled = direct && !spin_end;
    for (unsigned round = 0;; round++) {
        if (!polled)
            hp__px_drive();
        polled = false;
        if (ready(arg))
            return 1;
        if (hp__px_signals_handled() != sigs)
            return -EINTR;
        uint64_t now = hp__px_now_ns();
        if (deadline_ns && now >= deadline_ns)
            return 0;
        if (hp__px.status != PX_ST_UP)
            return 1; /* the stack went away: let the caller see why */
        if (now < spin_end) {
            /* The program's kernel fds are looked at now and then while
             * spinning: a system call each round would cost more than the
             * spin saves. */
            if (nkfds && (round & 63) == 63) {
                int k = PX_REAL(poll)(kfds, (nfds_t)nkfds, 0);
                if (k > 0)
                    return 2 + k;
            }
            hp__px_release();
            cpu_relax();
            hp__px_reacquire();
            continue;
        }
        int kready = 0;
        int r = sleep_once(kfds, nkfds, deadline_ns, sigmask, &kready);
        if (r == -EINTR)
            return -EINTR;
        if (r < 0)
            return r;
        if (kready)
            return 2 + kready;
        polled = direct && hp__px.app_threads <= 1;
        /* Woken by traffic: spin again before the next sleep. */
        if (r > 0 && spin && busy)
            spin_end = hp__px_now_ns() + busy;
    }
}

/* ---- the keeper thread -------------------------------------------------------- */

/* The keeper's way into the lock (as hp__px_lock). While the program's
 * thread is inside the loop it polls the stack and the keeper has nothing
 * to do: hp__px_lock would wake it out of its sleep and wait for it, and,
 * with the program busy, find it back inside the loop by the time the
 * keeper ran again, waking it over and over: the keeper's first lock, at
 * its start, did that for as long as the program kept the loop busy
 * (measured: 3,500 to 19,000 forced wake-ups and 12,000 to 68,000 futex
 * calls in 2 s of a POSIX echo server, 0.2 per request). So the keeper
 * takes the lock only when the loop is free, and naps otherwise. */
static void keeper_acquire(struct pollfd *kfd, uint64_t *nap, uint64_t tick)
{
    for (;;) {
        while (__atomic_load_n(&hp__px.loop_busy, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&hp__px.keeper_stop, __ATOMIC_ACQUIRE)) {
            struct timespec tn = {(time_t)(*nap / 1000000000u), (long)(*nap % 1000000000u)};
            PX_REAL(ppoll)(kfd, 1, &tn, NULL);
            *nap = *nap * 2 > 10 * tick ? 10 * tick : *nap * 2;
        }
        /* Asked to stop: hp__px_lock's wait is the way out, as before. */
        if (__atomic_load_n(&hp__px.keeper_stop, __ATOMIC_ACQUIRE)) {
            hp__px_lock();
            return;
        }
        /* Else the loop may have been entered again since it looked. */
        if (hp__px_lock_if_free())
            return;
    }
}

/*
 * A program may stay out of the layer for long (computing, sleeping, or
 * blocked in a call on a kernel fd): nobody would poll the stack, and its
 * TCP would stop acknowledging, retransmitting and answering ARP. The
 * keeper wakes every HOTPATH_KEEPER_MS; when no thread polled the stack in
 * that time and none is asleep in a wait (which polls it), it takes over:
 * it polls and sleeps on the link and the next timer until the program
 * comes back.
 */
static void *keeper_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    uint64_t tick = (uint64_t)hp__px.cfg.keeper_ms * 1000000u;
    hp__px_not_an_app_thread();
    /* While a program thread sleeps in a layer wait (which polls), the
     * keeper's naps grow to 10 ticks: an idle program is woken less. */
    uint64_t nap = tick;
    struct pollfd kfd = {.fd = hp__px.keeper_fd, .events = POLLIN};
    keeper_acquire(&kfd, &nap, tick);
    while (!hp__px.keeper_stop && hp__px.status == PX_ST_UP) {
        bool idle = !hp__px.sleepers && hp__px_coarse_ns() - hp__px.last_poll_ns >= tick;
        int64_t t = -1;
        nap = hp__px.sleepers ? (nap * 2 > 10 * tick ? 10 * tick : nap * 2) : tick;
        if (idle) {
            hp__px_drive();
            /* Work already waiting: another round at once. */
            if (hp_loop_prepare(hp__px.loop, &t) > 0)
                continue;
            hp__px.loop_disarmed = false;
        }
        if (t < 0 || (uint64_t)t > nap)
            t = (int64_t)nap;
        struct pollfd p[2] = {{.fd = hp__px.keeper_fd, .events = POLLIN},
                              {.fd = idle ? hp_loop_fd(hp__px.loop) : -1, .events = POLLIN}};
        struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
        hp__px_unlock();
        PX_REAL(ppoll)(p, 2, &ts, NULL);
        keeper_acquire(p, &nap, tick);
    }
    hp__px_unlock();
    return NULL;
}

void hp__px_keeper_start(void)
{
    if (!hp__px.cfg.keeper_ms || hp__px.keeper_on)
        return;
    hp__px.keeper_fd = hp__px_fd_high(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (hp__px.keeper_fd < 0)
        return;
    hp__px_fd_internal(hp__px.keeper_fd);
    hp__px.keeper_stop = false;
    /* Under the lock: the keeper starts by waiting for it. */
    if (pthread_create(&hp__px.keeper, NULL, keeper_main, NULL) == 0)
        hp__px.keeper_on = true;
}

void hp__px_keeper_stop(void)
{
    hp__px_lock();
    bool on = hp__px.keeper_on;
    __atomic_store_n(&hp__px.keeper_stop, true, __ATOMIC_RELEASE);
    hp__px.keeper_on = false;
    if (on) {
        uint64_t one = 1;
        ssize_t r = PX_REAL(write)(hp__px.keeper_fd, &one, sizeof one);
        (void)r;
    }
    hp__px_unlock();
    if (on)
        pthread_join(hp__px.keeper, NULL);
    hp__px_lock();
    if (hp__px.keeper_fd >= 0) {
        hp__px_fd_set(hp__px.keeper_fd, NULL);
        PX_REAL(close)(hp__px.keeper_fd);
        hp__px.keeper_fd = -1;
    }
    hp__px_unlock();
}
