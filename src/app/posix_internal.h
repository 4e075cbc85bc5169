/* SPDX-License-Identifier: BSD-3-Clause */
/* Private declarations of the POSIX socket layer (libhotpath-posix.so): the C library underneath, the fd table, sockets, epoll sets and the process's stack. */
#ifndef HOTPATH_APP_POSIX_INTERNAL_H
#define HOTPATH_APP_POSIX_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <hotpath/link.h>
#include <hotpath/loop.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/udp.h>

/*
 * How the layer is put together (docs/apps.md tells users):
 *
 * - posix_entry.c exports the C library's socket calls. A call on a file
 *   descriptor the fd table does not know goes straight to the C library
 *   (one table load); hotpath's go to hp__px_*().
 * - Every hotpath socket holds a real kernel fd (a dup of one AF_UNIX
 *   datagram socket made at start-up), so its number is unique, below
 *   RLIMIT_NOFILE, usable in fd_sets and fd-indexed tables, and anything
 *   that reaches the kernel with it by another road (fstat, lseek, pread)
 *   finds a socket that refuses politely instead of a file.
 * - One stack per process, created at the first AF_INET / AF_INET6 socket,
 *   behind one mutex (px.lock): every call on it takes the lock, so it is
 *   correct from any thread and costs a single-threaded program one
 *   uncontended lock. Blocking calls and epoll/poll/select wait without the
 *   lock (posix_wait.c): a bounded busy-poll, then a sleep in the kernel on
 *   the link's fd, the kernel fds asked for, the next timer and a
 *   per-thread wake-up fd that another thread writes when it finds work
 *   for the sleeper.
 * - While a thread runs layer code it sets px_in_layer: calls the library
 *   itself (or libxdp, libbpf) makes to the C library then go straight
 *   through, never into the layer again.
 */

/* ---- the C library underneath (posix_libc.c) ---------------------------- */

struct hp__px_libc {
    int (*socket)(int, int, int);
    int (*bind)(int, const struct sockaddr *, socklen_t);
    int (*listen)(int, int);
    int (*accept)(int, struct sockaddr *, socklen_t *);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*connect)(int, const struct sockaddr *, socklen_t);
    int (*close)(int);
    int (*shutdown)(int, int);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
    int (*recvmmsg)(int, struct mmsghdr *, unsigned, int, struct timespec *);
    ssize_t (*send)(int, const void *, size_t, int);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
    ssize_t (*sendmsg)(int, const struct msghdr *, int);
    int (*sendmmsg)(int, struct mmsghdr *, unsigned, int);
    ssize_t (*sendfile)(int, int, off_t *, size_t);
    int (*getsockname)(int, struct sockaddr *, socklen_t *);
    int (*getpeername)(int, struct sockaddr *, socklen_t *);
    int (*setsockopt)(int, int, int, const void *, socklen_t);
    int (*getsockopt)(int, int, int, void *, socklen_t *);
    int (*fcntl)(int, int, ...);
    int (*ioctl)(int, unsigned long, ...);
    int (*dup)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*epoll_create)(int);
    int (*epoll_create1)(int);
    int (*epoll_ctl)(int, int, int, struct epoll_event *);
    int (*epoll_wait)(int, struct epoll_event *, int, int);
    int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
    int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
    int (*poll)(struct pollfd *, nfds_t, int);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
    int (*close_range)(unsigned, unsigned, int);
    void (*closefrom)(int);
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
};

extern struct hp__px_libc hp__px_real;

/* Resolve the C library's functions (dlsym RTLD_NEXT); idempotent and safe
 * from any thread. Called by the constructor and by the first call of any
 * entry point that runs before it. */
void hp__px_libc_init(void);

/* The real function f, resolved on first use. */
#define PX_REAL(f)                                                                                 \
    (__builtin_expect(hp__px_real.f != NULL, 1) ? hp__px_real.f                                    \
                                                : (hp__px_libc_init(), hp__px_real.f))

/* Set while this thread runs layer code (see above). */
extern __thread int hp__px_in_layer __attribute__((tls_model("initial-exec")));

/* ---- objects and the fd table (posix_fd.c) ------------------------------ */

enum px_kind {
    PX_K_SOCK = 1, /* a hotpath socket (struct px_sock) */
    PX_K_EPOLL,    /* an epoll set made through the layer (struct px_epoll) */
    PX_K_INTERNAL, /* one of the layer's own fds: close() and dup2() onto it fail with EBADF */
};

/* What an fd of the table points at. Several fds may share one object (dup):
 * refs counts them plus the calls in progress on it, so that a close by one
 * thread never frees what another is blocked on (as in Linux, the blocked
 * call goes on). */
struct px_obj {
    uint8_t kind;
    int refs;
};

enum px_proto { PX_TCP = 1, PX_UDP };

/* Socket options as the application set them; applied to the hotpath
 * socket when it is made (bind, listen or connect) and at once after. */
struct px_opts {
    int sndbuf, rcvbuf; /* as getsockopt reports them (twice what was set, as Linux) */
    int keepalive, keepidle, keepintvl, keepcnt;
    int nodelay, maxseg, quickack, cork, defer_accept, user_timeout;
    int reuseaddr, reuseport, broadcast, oobinline, rcvlowat, sndlowat, priority, mark;
    int tos, ttl, tclass, hoplimit, v6only_set;
    int linger_on, linger_s;
    int64_t rcvtimeo_ns, sndtimeo_ns; /* 0: forever */
};

struct px_epi;

/* A hotpath socket. Its hotpath handle is made when its family is known:
 * an AF_INET6 socket talks IPv4 when it binds or connects to an IPv4-mapped
 * address, and an AF_INET6 socket bound to [::] without IPV6_V6ONLY (the
 * Linux default, net.ipv6.bindv6only=0) also takes IPv4: a second handle
 * (t4 / u4) holds its port in IPv4. */
struct px_sock {
    struct px_obj o;
    uint8_t proto;   /* PX_TCP, PX_UDP */
    uint8_t domain;  /* 4 (AF_INET) or 6 (AF_INET6) */
    uint8_t hfamily; /* the family of t / u: 4 or 6; 0 before they exist */
    bool nonblock;   /* O_NONBLOCK: a file status flag, shared by dup()s */
    bool v6only;
    bool bound, listening;
    bool connecting;    /* a connect() in progress that no connect() has reported yet */
    bool tried;         /* TCP: a connection was attempted (or accepted) */
    bool udp_connected; /* UDP: connect() gave a peer (remote) */
    bool shut_rd, shut_wr;
    bool dead;                 /* no stack behind it any more (a fork child, or after exit) */
    int err;                   /* a pending error the layer holds (positive errno): SO_ERROR */
    struct hp_sockaddr local;  /* bound address (family hfamily) */
    struct hp_sockaddr remote; /* UDP: the connected peer */
    struct hp_tcp_sock *t, *t4;
    struct hp_udp_sock *u, *u4;
    /* MSG_PEEK: TCP bytes taken from the stack ahead of the next read
     * (peek_off of them read already); UDP: one datagram, with its sender
     * and full length. */
    struct hp_buf *peek;
    uint32_t peek_off, peek_len;
    struct hp_sockaddr peek_from;
    struct px_opts opt;
    struct px_epi *epis;           /* epoll registrations (posix_epoll.c) */
    struct px_sock *anext, *aprev; /* every live socket */
};

/* The fd table: two levels, so that it grows without moving (readers take
 * no lock). Linux's default fs.nr_open bounds fd numbers. */
#define PX_FD_CHUNK_BITS 10
#define PX_FD_CHUNK      (1u << PX_FD_CHUNK_BITS)
#define PX_FD_MAX        (1u << 20)
typedef _Atomic(struct px_obj *) px_slot;
extern _Atomic(px_slot *) hp__px_fds[PX_FD_MAX / PX_FD_CHUNK];

/* The kernel fd's table entry, or NULL when the fd is not the layer's. Safe
 * without the lock (the fast path of every entry point); under the lock the
 * object stays valid. */
static inline struct px_obj *hp__px_fd_get(int fd)
{
    if ((unsigned)fd >= PX_FD_MAX)
        return NULL;
    px_slot *c =
        atomic_load_explicit(&hp__px_fds[(unsigned)fd >> PX_FD_CHUNK_BITS], memory_order_acquire);
    if (!c)
        return NULL;
    return atomic_load_explicit(&c[(unsigned)fd & (PX_FD_CHUNK - 1)], memory_order_acquire);
}
/* Set (obj) or clear (NULL) fd's entry, under the lock; returns the old
 * one (references unchanged). */
struct px_obj *hp__px_fd_set(int fd, struct px_obj *obj);
/* Point a new fd at obj (whose reference the caller took): a stale entry
 * the fd had (closed behind the layer's back) loses its reference. */
void hp__px_fd_install(int fd, struct px_obj *obj);
/* fd's entry if it is a socket (under the lock), else NULL. */
struct px_sock *hp__px_sock(int fd);
/* Take / drop a reference (under the lock); the last one frees the object. */
void hp__px_ref(struct px_obj *o);
void hp__px_unref(struct px_obj *o);
/* A new kernel fd for an object: a dup of the placeholder socket, close on
 * exec when asked; -errno on failure. */
int hp__px_reserve_fd(bool cloexec);
/* Move one of the layer's own fds above the numbers programs pick (256,
 * or half the fd limit); returns the new fd (the old one is closed), or fd
 * when it cannot move. */
int hp__px_fd_high(int fd);
/* Fill the free low fds (below that floor) with placeholders, so that fds
 * a library makes meanwhile (links, the loop) land high; held[] gets them
 * (at most max) for hp__px_release_low(). Returns how many. */
int hp__px_fill_low(int *held, int max);
void hp__px_release_low(const int *held, int n);
/* Mark one of the layer's own fds (links, wake-up fds). */
void hp__px_fd_internal(int fd);
/* Make a socket / free one whose references are gone. */
struct px_sock *hp__px_sock_new(int proto, int domain);
void hp__px_sock_free(struct px_sock *ps);
/* Detach every socket from the stack (they fail with EBADFD afterwards). */
void hp__px_sock_kill_all(void);

/* ---- the process's stack (posix_init.c) --------------------------------- */

struct px_config {
    char link[16];          /* HOTPATH_LINK: afxdp, afpacket, tap, memif */
    char iface[64];         /* HOTPATH_IFACE (memif: the link's name, memifN) */
    char memif_socket[108]; /* HOTPATH_MEMIF_SOCKET ("@NAME": abstract) */
    char memif_secret[25];  /* HOTPATH_MEMIF_SECRET (none: "") */
    int memif_role;         /* HOTPATH_MEMIF_ROLE: HP_MEMIF_CLIENT or HP_MEMIF_SERVER */
    uint32_t memif_id;      /* HOTPATH_MEMIF_ID */
    uint32_t memif_wait_ms; /* HOTPATH_MEMIF_WAIT_MS: a client waits this long for a server */
    struct {
        int family;
        uint8_t addr[16];
        uint8_t plen;
    } ip[8];
    int nip; /* HOTPATH_IP, HOTPATH_IP6 (comma-separated lists) */
    uint8_t gw4[4], gw6[16];
    bool has_gw4, has_gw6;   /* HOTPATH_GW, HOTPATH_GW6 */
    uint32_t queue;          /* HOTPATH_QUEUE */
    unsigned afxdp_flags;    /* HOTPATH_AFXDP_MODE: HP_LINK_F_COPY / _ZEROCOPY / _XDP_SKB */
    char afxdp_mode[64];     /* the variable as given, for messages */
    uint32_t pool_bufs;      /* HOTPATH_BUFS */
    uint32_t busy_poll_us;   /* HOTPATH_BUSY_POLL_US */
    uint32_t exit_linger_ms; /* HOTPATH_EXIT_LINGER_MS */
    uint32_t keeper_ms;      /* HOTPATH_KEEPER_MS (0: no keeper thread) */
    uint32_t tx_batch;       /* HOTPATH_TX_BATCH (0: every send's frames leave at once) */
    bool fallback_kernel;    /* HOTPATH_FALLBACK=kernel */
    bool no_dad;             /* HOTPATH_NO_DAD=1 */
    char stats_path[256];    /* HOTPATH_STATS: a JSON file written at exit ("-": stderr) */
    char pcap[256];          /* HOTPATH_PCAP: every frame to this file */
};

/* The process-wide state. */
struct px_state {
    pthread_mutex_t lock;
    int status;   /* PX_ST_* */
    int init_err; /* why the stack could not be made (positive errno) */
    pid_t pid;    /* the process the stack belongs to */
    struct px_config cfg;
    struct hp_stack *stack;
    struct hp_loop *loop; /* on the stack: polled here, slept on from any thread */
    bool loop_disarmed;   /* polled since the sleepers armed the links */
    struct hp_link *link;
    struct hp_pool *pool;  /* ours (afpacket, tap); afxdp's is its UMEM */
    int link_fd;           /* pollable for receive, or -1 */
    int placeholder;       /* the AF_UNIX socket hotpath fds are dups of */
    struct px_sock *socks; /* every live socket */
    /* Drive hooks of the test hook: run after each poll of our stack. */
    int (*extra_poll)(void *);
    void *extra_ctx;
    struct px_waiter *sleepers; /* threads asleep in hp__px_wait (posix_wait.c) */
    int app_threads; /* program threads that called into the layer (the keeper is not one) */
    /* The one program thread is inside hp_loop_pwait(), without the lock
     * (posix_wait.c): nobody else touches the stack until it is out. */
    bool loop_busy;
    pthread_cond_t loop_cond;
    uint64_t last_poll_ns; /* CLOCK_MONOTONIC_COARSE */
    uint64_t polls;
    uint64_t calls, drive_call; /* layer calls (locks) so far; the call that last polled */
    /* Sends whose frames may wait for the rest of the program's event batch
     * (hp__px_flush), and whether frames wait now (read without the lock by
     * the kernel-only waits, posix_entry.c). */
    uint32_t tx_defer;
    bool tx_held;
    pthread_t keeper;
    bool keeper_on, keeper_stop;
    int keeper_fd; /* an eventfd that stops the keeper */
};

enum {
    PX_ST_NONE = 0, /* no stack yet: made at the first AF_INET / AF_INET6 socket */
    PX_ST_UP,       /* the stack runs */
    PX_ST_FAILED,   /* it could not be made (init_err): socket() fails, or the kernel takes over */
    PX_ST_FORKED,   /* a fork child: the parent's sockets are dead here */
    PX_ST_DOWN,     /* torn down at exit */
};

extern struct px_state hp__px;

/* Take and release the lock, entering and leaving the layer
 * (px_in_layer): leaving it runs the handlers of signals that came inside. */
void hp__px_lock(void);
void hp__px_unlock(void);
/* As hp__px_lock, unless a program thread is inside the loop (loop_busy):
 * then false, the lock not taken and the loop not woken (the keeper). */
bool hp__px_lock_if_free(void);
/* Release the lock and take it back inside a call (to sleep, or to read a
 * file): the thread stays in the layer, signal handlers stay deferred. */
void hp__px_release(void);
void hp__px_reacquire(void);
/* The keeper thread is not counted among the program's threads. */
void hp__px_not_an_app_thread(void);
/* Under the lock: make sure the stack exists. 0, or -errno (the reason was
 * printed once); with HOTPATH_FALLBACK=kernel, 1: use the kernel. */
int hp__px_ensure_stack(void);
/* Under the lock: poll the stack once and hand its events to the sockets
 * and epoll sets; wakes sleeping threads when something happened. Returns
 * the work done (frames, timers, events). */
int hp__px_drive(void);
/* Under the lock: whether the stack was polled in this call or the
 * PX_FRESH_CALLS before (a non-blocking call that found nothing need not
 * poll it again). */
#define PX_FRESH_CALLS 2u
bool hp__px_drove_recently(void);
/* CLOCK_MONOTONIC_COARSE in nanoseconds: for the keeper's idea of idle. */
uint64_t hp__px_coarse_ns(void);
/* Under the lock: a send queued frames. They leave now, or, while the
 * program works through the events its last wait returned (more than one:
 * hp__px_tx_batch), at its last send of them or its next wait
 * (hp__px_tx_settle), whichever is first: one transmit kick (a system call
 * on afxdp, afpacket and tap) per batch, as hotpath's own event loop makes,
 * where a kick per send cost the POSIX echo 1.2-1.4x the native one's CPU.
 * The keeper thread bounds the wait for a program that stops calling in. */
void hp__px_flush(void);
/* Under the lock: the program is about to wait: frames held leave now. */
void hp__px_tx_settle(void);
/* Under the lock: a wait returned n ready items (HOTPATH_TX_BATCH). */
void hp__px_tx_batch(int n);
/* Without the lock: a program's wait on kernel fds only is about to start;
 * frames held leave first (one load when none are; nothing inside the
 * layer, whose own waits hold the lock). */
void hp__px_tx_settle_unlocked(void);
/* Under the lock: readiness changed by a call (not by the stack): wake the
 * sleeping threads at unlock. */
void hp__px_sock_changed(void);
/* Start / stop the keeper thread (posix_wait.c), which polls the stack when
 * no thread has for HOTPATH_KEEPER_MS, so that TCP keeps answering while
 * the program computes or sleeps outside the layer. */
void hp__px_keeper_start(void);
void hp__px_keeper_stop(void);
/* Under the lock: the stack's next timer in nanoseconds (-1 none). */
int64_t hp__px_next_timer_ns(void);
uint64_t hp__px_now_ns(void);
/* Parse the HOTPATH_* environment into cfg; 0 or -EINVAL after printing why. */
int hp__px_config_parse(struct px_config *cfg);
/* A message on stderr, "hotpath: ..." (one line). */
void hp__px_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A stack given by a test instead of the environment's (tests/unit/app):
 * the layer drives s (on link) and calls extra_poll(ctx) after each poll
 * (the peer stack). NULL s detaches: the layer's sockets die. */
void hp__px_test_attach(struct hp_stack *s, struct hp_link *link, int (*extra_poll)(void *),
                        void *ctx);
/* Tear everything down as at exit; returns the buffers still in use. */
long hp__px_teardown(void);
/* pthread_atfork handlers (posix_life.c); the calling thread's wake-up fd
 * dropped in a fork child (posix_wait.c). */
void hp__px_atfork_install(void);
void hp__px_waiter_forget(void);

/* ---- waiting (posix_wait.c) --------------------------------------------- */

/* One sleeping thread: its wake-up fd. */
struct px_waiter {
    int wake_fd;
    bool direct; /* asleep on the loop's fd itself: woken with hp_loop_wake() */
    bool woken;
    uint64_t until_ns; /* when it wakes by itself (0: never) */
    struct px_waiter *next;
};

/* Under the lock: wake every sleeping thread (another thread found work). */
void hp__px_wake_all(void);
/* Under the lock, with threads asleep: arm the links again for them; true
 * when they should wake instead (work waits, or a timer is due before the
 * earliest of them wakes). */
bool hp__px_rearm_for_sleepers(void);
/* Destroy the loop (teardown, fork child: never in a child). */
void hp__px_unmake_loop(void);
/*
 * Wait for something to change: called under the lock, which it releases
 * while sleeping and holds again on return. It busy-polls (driving the
 * stack) for HOTPATH_BUSY_POLL_US first when spin is set; then sleeps in
 * the kernel on the link, the pollfds in kfds (may be NULL), the next
 * stack timer and the thread's wake-up fd, until deadline_ns (0: forever).
 * ready(arg) is checked after each poll (under the lock); sigmask, when
 * given, is in force during the sleep (ppoll).
 * @return 1 ready, 0 deadline, -EINTR (a signal handler ran), or the number
 *         of kfds with revents as 2 + n (>= 2) when a kernel fd woke it.
 */
int hp__px_wait(bool (*ready)(void *), void *arg, struct pollfd *kfds, int nkfds,
                uint64_t deadline_ns, const sigset_t *sigmask, bool spin);
/* Whether a call interrupted by a signal should restart, as SA_RESTART
 * would (true when every installed handler has SA_RESTART): the guess when
 * the handler is not known (posix_signal.c knows it otherwise). */
bool hp__px_restartable(void);

/* ---- signals (posix_signal.c) -------------------------------------------- */

/* The program's handlers run behind a trampoline: handlers run on this
 * thread so far (a wait that sees the count move ends with EINTR), and
 * whether the last one asked for SA_RESTART. */
unsigned long hp__px_signals_handled(void);
bool hp__px_signal_restarts(void);
/* Signals that came while this thread was inside the layer: their handlers
 * were deferred (a handler that longjmps out of layer code would leave the
 * lock held); run them, outside the layer. */
bool hp__px_signals_deferred(void);
void hp__px_run_deferred(void);
/* A blocking call that restarts after a signal (SA_RESTART): the handlers
 * run first, as they would have in the kernel, with the lock released. */
void hp__px_run_deferred_in_call(void);
/* sigaction() / signal() with the trampoline; flags for signal(): SA_RESTART
 * (BSD semantics, glibc's signal()), SA_RESETHAND | SA_NODEFER (System V). */
int hp__px_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
sighandler_t hp__px_signal(int sig, sighandler_t h, int flags);
/* A deadline from a millisecond / timespec / timeval timeout: 0 forever,
 * else now + timeout (now + 0 for a zero timeout: poll once). */
uint64_t hp__px_deadline_ms(int timeout_ms);
uint64_t hp__px_deadline_ns(int64_t ns);

/* ---- sockets (posix_sock.c, posix_io.c, posix_opt.c) --------------------- */

/* The HP_EV_* that hold now for ps (level), as epoll / poll bits. */
uint32_t hp__px_sock_poll(struct px_sock *ps);
/* Readiness may have changed: tell the epoll sets watching ps. */
void hp__px_sock_notify(struct px_sock *ps, uint32_t hp_events);
/* TCP_INFO in Linux's struct tcp_info layout (posix_tcpinfo.c). */
int hp__px_tcp_info(struct px_sock *ps, void *val, socklen_t *len);
/* FIONREAD: TCP bytes ready to read; UDP the next datagram's length. */
int hp__px_readable_bytes(struct px_sock *ps);
/* Apply the stored options to a fresh handle. */
void hp__px_opts_apply(struct px_sock *ps, struct hp_tcp_sock *t);
/* The error a dead socket gives (a fork child's, or after exit). */
#define PX_DEAD_ERRNO EBADFD

/* Release a socket's hotpath handles (close, or reset with SO_LINGER 0). */
void hp__px_sock_release(struct px_sock *ps);
/* Close (or abort) every handle of ps; it has no family any more. */
void hp__px_close_handles(struct px_sock *ps, bool abort_tcp);
/* Under the lock: fd's socket in *out, or -EBADF (not open, or the
 * layer's own), -ENOTSOCK (an epoll set), -EBADFD (dead). */
int hp__px_enter(int fd, struct px_sock **out);
/* hp__px_socket's answer when the kernel should make the socket
 * (HOTPATH_FALLBACK=kernel). */
#define PX_USE_KERNEL (-100000)
/* UDP (posix_io.c): connect / connect(AF_UNSPEC), options on a new handle. */
int hp__px_udp_connect(struct px_sock *ps, const struct hp_sockaddr *r);
int hp__px_udp_disconnect(struct px_sock *ps);
void hp__px_udp_opts_apply(struct px_sock *ps, struct hp_udp_sock *u);
int hp__px_disconnect(struct px_sock *ps);
/* Make a socket's handles on demand (UDP sending unbound): bind to an
 * ephemeral port of family f (both families for a dual-stack socket). */
int hp__px_autobind(struct px_sock *ps, int f);
/* bind() again to a (after connect(AF_UNSPEC) dropped the handles). */
int hp__px_rebind(struct px_sock *ps, const struct hp_sockaddr *a);

/* Fill a struct sockaddr for an endpoint, as seen by a socket of domain
 * (IPv4 endpoints of an AF_INET6 socket become IPv4-mapped); truncated to
 * *len, which gets the full length. */
void hp__px_addr_out(int domain, const struct hp_sockaddr *a, struct sockaddr *sa, socklen_t *len);
/* Read a sockaddr given to bind/connect/sendto by a socket of domain into
 * *out (IPv4-mapped IPv6 becomes IPv4). 0, or -EINVAL (short), -EAFNOSUPPORT. */
int hp__px_addr_in(int domain, const struct sockaddr *sa, socklen_t len, struct hp_sockaddr *out);

/* The calls: the same arguments as the C library's, -errno on failure
 * (posix_entry.c sets errno). */
int hp__px_socket(int domain, int type, int protocol);
int hp__px_bind(int fd, const struct sockaddr *sa, socklen_t len);
int hp__px_listen(int fd, int backlog);
int hp__px_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags);
int hp__px_connect(int fd, const struct sockaddr *sa, socklen_t len);
int hp__px_shutdown(int fd, int how);
int hp__px_close(int fd);
int hp__px_getsockname(int fd, struct sockaddr *sa, socklen_t *len);
int hp__px_getpeername(int fd, struct sockaddr *sa, socklen_t *len);
ssize_t hp__px_recvmsg(int fd, struct msghdr *msg, int flags);
/* read, recv, recvfrom without an address */
ssize_t hp__px_recv(int fd, void *buf, size_t len, int flags);
ssize_t hp__px_sendmsg(int fd, const struct msghdr *msg, int flags);
/* write, send, sendto without an address */
ssize_t hp__px_send(int fd, const void *buf, size_t len, int flags);
ssize_t hp__px_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *sa,
                        socklen_t *salen);
ssize_t hp__px_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *sa,
                      socklen_t salen);
ssize_t hp__px_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t hp__px_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t hp__px_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);
int hp__px_recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *timeout);
int hp__px_sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags);
int hp__px_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int hp__px_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int hp__px_fcntl(int fd, int cmd, long arg);
int hp__px_ioctl(int fd, unsigned long req, void *arg);
int hp__px_dup(int fd);
int hp__px_dup3(int fd, int newfd, int flags, bool is_dup2);
int hp__px_close_range(unsigned first, unsigned last, int flags);

/* ---- epoll, poll, select (posix_epoll.c, posix_poll.c) ------------------ */

int hp__px_epoll_create1(int flags);
int hp__px_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int hp__px_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
                        const sigset_t *mask);
/* Remove ps from every epoll set (its last fd closed). */
void hp__px_epoll_forget(struct px_sock *ps);
/* Free an epoll set's registrations (its last fd closed). */
void hp__px_epoll_free(struct px_obj *o);
int hp__px_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                 const sigset_t *mask);
int hp__px_pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
                   const sigset_t *mask, struct timeval *update);
/* Whether any of the first n pollfds / of the fd_sets is a hotpath fd. */
bool hp__px_any_pollfd(const struct pollfd *fds, nfds_t n);
bool hp__px_any_fdset(int nfds, const fd_set *r, const fd_set *w, const fd_set *e);

/* Epoll bits for HP_EV_* bits and the socket's state. */
uint32_t hp__px_epoll_bits(struct px_sock *ps, uint32_t hp_ev);

#endif
