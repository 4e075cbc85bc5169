/* SPDX-License-Identifier: BSD-3-Clause */
/* The event loop: one per stack thread, hotpath sockets, kernel fds and timers behind one epoll-like wait that busy-polls briefly, then sleeps in the kernel. */
#ifndef HOTPATH_LOOP_H
#define HOTPATH_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/select.h> /* sigset_t, also in strict ISO C modes */

#include <hotpath/common.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * An hp_loop drives one stack (hp_stack_poll) on the stack's thread and
 * gathers, behind one call, everything a program on that thread waits for:
 *
 *   sockets   every UDP and TCP socket of the stack: their readiness comes
 *             from hp_stack_events(), edge-triggered, with the `user`
 *             pointer given to hp_udp_open(), hp_tcp_open() or
 *             hp_tcp_accept(). Nothing to register. (With a loop, let the
 *             loop read hp_stack_events(): an event read elsewhere is not
 *             reported again.)
 *   fds       kernel file descriptors registered with hp_loop_fd_add(),
 *             level- or edge-triggered, one-shot or not: pipes, eventfds,
 *             timerfds, kernel sockets, another epoll set (an epoll fd is
 *             readable when its own set has an event: a program's epoll set
 *             nests in the loop's this way).
 *   timers    one-shot and periodic (hp_loop_timer_*), in nanoseconds.
 *   wake      hp_loop_wake() from any thread (or a signal handler) makes the
 *             loop's thread return from hp_loop_wait() with an
 *             HP_LOOP_WAKE event, at once if it is sleeping.
 *
 * The model is epoll: hp_loop_wait() fills an array of hp_loop_event; the
 * model of hp_loop_run() is libuv: a callback per event until
 * hp_loop_stop().
 *
 * How it waits. hp_loop_wait() polls the stack (receive, timers, transmit
 * flush) and returns what became ready. When a poll finds nothing, it goes
 * on polling (busy-polling, no system call) for spin_us microseconds after
 * the last work it saw, since traffic that just stopped usually comes back
 * soon and a sleep costs a wake-up of several microseconds. Then it sleeps
 * in the kernel (epoll) on the links' fds, the registered fds and the wake
 * eventfd, until the earliest of the stack's next timer, the loop's next
 * timer and the caller's timeout. Before sleeping it asks every link to arm
 * itself (hp_stack_prepare_sleep(), hp_link_prepare_sleep()): each link kind
 * wakes a sleeper its own way (AF_XDP: poll on the socket, need-wakeup
 * honoured; AF_PACKET: poll on the ring; TAP: the device fd; mem: an
 * eventfd that the peer signals only when this end said it is going to
 * sleep; decorators: their inner link, and the fault decorator's held frames
 * bound the sleep). So an idle program uses no CPU, and a busy one makes no
 * system call the loop could avoid: with sockets and links busy, registered
 * fds are checked with a non-blocking epoll_wait at most every
 * HP_LOOP_FD_CHECK_US microseconds.
 *
 * Threading: every call on a loop comes from the loop's thread (the stack's),
 * except hp_loop_wake() and hp_loop_stop(), which any thread may call at any
 * time, signal handlers included (async-signal-safe), for as long as the
 * loop exists.
 *
 * Knob: spin_us (struct hp_loop_config, hp_loop_set_spin_us(); `hotpath
 * serve --spin-us`; docs/knobs.md): default HP_LOOP_SPIN_US_DEFAULT; 0 never
 * spins (sleep as soon as a poll finds nothing: the least CPU, a wake-up's
 * latency on the first packet after any pause); HP_LOOP_SPIN_FOREVER never
 * sleeps (hotpath's behaviour before the loop: a core at 100% for the lowest
 * latency).
 */
struct hp_loop;

/** A loop's timer (hp_loop_timer_create()). */
struct hp_loop_timer;

/** Busy-polling after the last work, by default, in microseconds. */
#define HP_LOOP_SPIN_US_DEFAULT 50u
/** spin_us: never sleep (poll all the time). */
#define HP_LOOP_SPIN_FOREVER UINT32_MAX
/** While busy, registered fds are checked at least this often (microseconds). */
#define HP_LOOP_FD_CHECK_US 100u

/** hp_loop_config.flags */
enum {
    /** Never spin: spin_us is 0 (a zeroed spin_us means the default). */
    HP_LOOP_F_NO_SPIN = 0x1,
};

/** Loop parameters; a zeroed structure asks for every default. */
struct hp_loop_config {
    /** Busy-poll this long (microseconds) after the last work before
     * sleeping; 0: HP_LOOP_SPIN_US_DEFAULT (HP_LOOP_F_NO_SPIN for none);
     * HP_LOOP_SPIN_FOREVER: never sleep. At most 10 s otherwise. */
    uint32_t spin_us;
    unsigned flags; /**< HP_LOOP_F_* */
};

/** What an event is about (hp_loop_event.kind). */
enum hp_loop_kind {
    /** A socket of the stack: user is the socket's user pointer, events its
     * HP_EV_* bits, edge-triggered, as hp_stack_events() gives them. */
    HP_LOOP_SOCK = 1,
    /** A registered kernel fd: fd and user as registered; events HP_EV_IN,
     * HP_EV_OUT, HP_EV_PRI, HP_EV_RDHUP as asked for, and HP_EV_ERR,
     * HP_EV_HUP always. */
    HP_LOOP_FD = 2,
    /** A timer expired: timer and user as created; events HP_EV_IN. */
    HP_LOOP_TIMER = 3,
    /** hp_loop_wake() was called since the last such event (several calls
     * make one event); user NULL; events HP_EV_IN. */
    HP_LOOP_WAKE = 4,
};

/* Readiness bits of kernel fds beyond sock.h's HP_EV_IN / OUT / ERR / HUP. */
#define HP_EV_RDHUP 0x10u /**< fd: the peer shut down its writing side (EPOLLRDHUP) */
#define HP_EV_PRI   0x20u /**< fd: urgent / priority data (EPOLLPRI) */

/* Interest modifiers of hp_loop_fd_add() / hp_loop_fd_mod(). */
#define HP_LOOP_ET 0x10000u /**< edge-triggered (EPOLLET): reported once per change */
/** reported once, then disabled until hp_loop_fd_mod() (EPOLLONESHOT) */
#define HP_LOOP_ONESHOT 0x20000u

/** One ready thing. */
struct hp_loop_event {
    uint32_t kind;               /**< enum hp_loop_kind */
    uint32_t events;             /**< HP_EV_* */
    void *user;                  /**< see enum hp_loop_kind */
    int fd;                      /**< HP_LOOP_FD: the descriptor; else -1 */
    struct hp_loop_timer *timer; /**< HP_LOOP_TIMER: the timer; else NULL */
};

/** Counters of a loop (hp_loop_stats()). */
struct hp_loop_stats {
    uint64_t waits;        /**< hp_loop_wait() / hp_loop_pwait() calls */
    uint64_t polls;        /**< hp_stack_poll() calls */
    uint64_t idle_polls;   /**< of them, polls that found nothing to do */
    uint64_t sleeps;       /**< times the loop slept in the kernel (epoll_pwait2) */
    uint64_t naps;         /**< of them, sleeps capped short because a link cannot wake a sleeper */
    uint64_t not_slept;    /**< times work turned up just before a sleep (no sleep then) */
    uint64_t link_wakes;   /**< sleeps a link's fd ended (a frame came for a sleeper) */
    uint64_t fd_checks;    /**< non-blocking epoll_wait calls for registered fds while busy */
    uint64_t wake_calls;   /**< hp_loop_wake() calls (any thread) */
    uint64_t wake_signals; /**< of them, calls that had to signal the eventfd (the loop slept) */
    uint64_t ev_sock, ev_fd, ev_timer, ev_wake; /**< events returned, by kind */
};

/**
 * Create a loop for stack s (NULL: a loop of fds, timers and wake-ups only).
 * The stack stays the caller's; it must outlive the loop, and only this loop
 * should poll it. Interfaces may be added to the stack later: the loop looks
 * at them every time it is about to sleep.
 * @return the loop, or NULL with errno EINVAL (a bad field), ENOMEM, or the
 *         errno of epoll_create1() / eventfd() (EMFILE, ENFILE).
 */
HP_API struct hp_loop *hp_loop_create(struct hp_stack *s, const struct hp_loop_config *cfg);

/**
 * Destroy a loop: its timers are freed (their handles become invalid), the
 * registered fds are left open (they are the caller's), the stack is left as
 * it is. NULL is a no-op. Another thread may not call hp_loop_wake() during
 * or after this. @return 0.
 */
HP_API int hp_loop_destroy(struct hp_loop *l);

/** The loop's stack (NULL for a loop without one). */
HP_API struct hp_stack *hp_loop_stack(const struct hp_loop *l);

/**
 * Set the busy-poll time (the knob): 0 never spins, HP_LOOP_SPIN_FOREVER
 * never sleeps. @return 0, or -EINVAL above 10 s (other than FOREVER).
 */
HP_API int hp_loop_set_spin_us(struct hp_loop *l, uint32_t spin_us);
/** The busy-poll time in force, in microseconds (0: none). */
HP_API uint32_t hp_loop_spin_us(const struct hp_loop *l);

/**
 * Wait for events: poll the stack, busy-poll, sleep, as described above,
 * until at least one event is ready or timeout_ms passed. Returns as soon as
 * there is something; never sleeps while it has events to give.
 * Events beyond max stay ready for the next call (sockets, timers, wake) or
 * are reported again by the kernel (level-triggered fds).
 * @param timeout_ms -1: no limit; 0: poll once and return what is ready
 *        (neither spin nor sleep); > 0: at most this long.
 * @return the number of events written to ev (1 .. max), 0 when the timeout
 *         passed with none, -EINTR when a signal handler ran during a sleep,
 *         -EINVAL (ev NULL or max < 1), or another -errno of epoll (the
 *         loop's own epoll set failed: should not happen).
 */
HP_API int hp_loop_wait(struct hp_loop *l, struct hp_loop_event *ev, int max, int timeout_ms);

/**
 * hp_loop_wait() with a timeout in nanoseconds (-1: none) and, like
 * epoll_pwait2() / ppoll(), a signal mask installed for the time of the sleep
 * only (NULL: the thread's mask is left alone), so that a caller may block
 * signals while checking its state and receive them only while asleep.
 * @return as hp_loop_wait().
 */
HP_API int hp_loop_pwait(struct hp_loop *l, struct hp_loop_event *ev, int max, int64_t timeout_ns,
                         const sigset_t *sigmask);

/** The callback of hp_loop_run(): one call per event. ev is valid for the call only. */
typedef void (*hp_loop_cb)(struct hp_loop *l, const struct hp_loop_event *ev, void *arg);

/**
 * Run: wait and hand each event to cb, until hp_loop_stop() (from cb, another
 * thread or a signal handler). A signal interrupting a sleep is not an error
 * here (the wait is resumed, after cb had a chance to look at its flags
 * through the HP_LOOP_WAKE a handler can cause with hp_loop_wake()).
 * @return 0 after hp_loop_stop(), or the -errno of a failed wait.
 */
HP_API int hp_loop_run(struct hp_loop *l, hp_loop_cb cb, void *arg);

/**
 * Make hp_loop_run() return once the event being handled (if any) is done;
 * also wakes the loop. Any thread, async-signal-safe. A stop requested while
 * no hp_loop_run() is running ends the next one at once.
 */
HP_API void hp_loop_stop(struct hp_loop *l);

/**
 * Wake the loop: its thread returns from hp_loop_wait() with an HP_LOOP_WAKE
 * event (at once if it sleeps; at its next wait if it is busy). Any thread,
 * async-signal-safe. Costs an atomic operation when the loop is awake, one
 * eventfd write when it sleeps (counted in wake_signals).
 */
HP_API void hp_loop_wake(struct hp_loop *l);

/**
 * Register a kernel fd. events: HP_EV_IN, HP_EV_OUT, HP_EV_RDHUP, HP_EV_PRI
 * (HP_EV_ERR and HP_EV_HUP are always reported), with HP_LOOP_ET and / or
 * HP_LOOP_ONESHOT; 0 registers the fd for errors and hang-ups only. user comes
 * back in its events. The fd stays the caller's: close it only after
 * hp_loop_fd_del() (a closed fd may keep reporting, as with epoll, while a
 * dup of it is open).
 * @return 0, -EEXIST (already registered), -EBADF, -EPERM (the fd does not
 *         support polling: a regular file), -EINVAL (unknown bits, fd < 0, or
 *         the loop's own fd), -ENOMEM, -ENOSPC (the kernel's epoll limits).
 */
HP_API int hp_loop_fd_add(struct hp_loop *l, int fd, uint32_t events, void *user);

/** Change a registered fd's interest and user (re-enables a one-shot fd). 0, -ENOENT, -EINVAL. */
HP_API int hp_loop_fd_mod(struct hp_loop *l, int fd, uint32_t events, void *user);

/** Unregister an fd. 0, or -ENOENT (not registered). */
HP_API int hp_loop_fd_del(struct hp_loop *l, int fd);

/**
 * A timer of the loop, stopped; user comes back in its events.
 * @return the timer, or NULL with errno ENOMEM (or EINVAL: l is NULL).
 */
HP_API struct hp_loop_timer *hp_loop_timer_create(struct hp_loop *l, void *user);

/**
 * Start (or restart) a timer: it expires after_ns from now (0: at the next
 * wait), then, when period_ns > 0, every period_ns after that, on a fixed
 * schedule (start + after + k * period): a wait that comes late reports the
 * expiry once and the next one keeps to the schedule (missed periods are
 * skipped, not reported in a burst). @return 0, or -EINVAL (NULL).
 */
HP_API int hp_loop_timer_start(struct hp_loop_timer *t, uint64_t after_ns, uint64_t period_ns);

/** Stop a timer (it stays usable). @return 0, or -EINVAL (NULL). */
HP_API int hp_loop_timer_stop(struct hp_loop_timer *t);

/** Whether the timer is started (a one-shot timer stops when it expires). */
HP_API bool hp_loop_timer_active(const struct hp_loop_timer *t);

/** Stop and free a timer. NULL is a no-op. */
HP_API void hp_loop_timer_destroy(struct hp_loop_timer *t);

/**
 * Embedding the loop in another one (libuv's backend fd): hp_loop_fd() is an
 * epoll fd that becomes readable when a link has a frame for an armed sleeper,
 * a registered fd is ready or hp_loop_wake() was called. Before polling it,
 * call hp_loop_prepare(); after it is readable (or the timeout passed), call
 * hp_loop_wait(l, ev, max, 0).
 */
HP_API int hp_loop_fd(const struct hp_loop *l);

/**
 * Arm the loop's links for an outside sleep on hp_loop_fd().
 * @param timeout_ns out: how long the sleep may last (-1: no limit; the
 *        earliest of the stack's and the loop's timers, or a short nap when a
 *        link cannot wake a sleeper).
 * @return 0: armed, sleep; > 0: work is already waiting (a frame, a due timer,
 *         a wake-up, frames queued for transmission): call hp_loop_wait()
 *         with timeout 0 instead of sleeping.
 */
HP_API int hp_loop_prepare(struct hp_loop *l, int64_t *timeout_ns);

/** Copy the loop's counters. */
HP_API void hp_loop_stats(const struct hp_loop *l, struct hp_loop_stats *out);

#ifdef __cplusplus
}
#endif
#endif
