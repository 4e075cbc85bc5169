/* SPDX-License-Identifier: BSD-3-Clause */
/* Signal handlers seen by the POSIX layer: the program's handlers run behind a trampoline that counts, per thread, the signals handled, so that a blocking call the layer emulates ends with EINTR (or restarts, by the handler's SA_RESTART) whenever a handler ran during it, not only during its sleep. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "posix_internal.h"

/* What the program asked for, per signal (valid when `set`). */
static struct sigaction user_act[NSIG];
static bool set[NSIG];
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;

/* Per thread: handlers run (or deferred), and the last signal handled.
 * TLS of the initial-exec model: safe to touch in a handler. */
static __thread unsigned long handled __attribute__((tls_model("initial-exec")));
static __thread int last_sig __attribute__((tls_model("initial-exec")));

/* Signals that came while the thread was inside the layer: their handlers
 * run when it leaves (hp__px_run_deferred). A handler that longjmps (iperf3
 * does, out of select) would otherwise leave the layer's lock held. */
#define PX_DEFER_MAX 8
struct deferred {
    int sig;
    siginfo_t info;
    ucontext_t uc;
};
static __thread struct deferred defer_q[PX_DEFER_MAX] __attribute__((tls_model("initial-exec")));
static __thread int ndefer __attribute__((tls_model("initial-exec")));

static void call_handler(int sig, siginfo_t *si, void *uc)
{
    struct sigaction a = user_act[sig];
    if (a.sa_flags & SA_RESETHAND) {
        /* The kernel put SIG_DFL back: so does our copy. */
        user_act[sig].sa_handler = SIG_DFL;
        user_act[sig].sa_flags &= ~SA_SIGINFO;
    }
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, si, uc);
    else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN)
        a.sa_handler(sig);
}

static void trampoline(int sig, siginfo_t *si, void *uc)
{
    handled++;
    last_sig = sig;
    if (!hp__px_in_layer) {
        call_handler(sig, si, uc);
        return;
    }
    /* Inside the layer: later. A standard signal twice counts once, as the
     * kernel merges a pending one. */
    for (int i = 0; i < ndefer; i++)
        if (defer_q[i].sig == sig && sig < SIGRTMIN)
            return;
    if (ndefer == PX_DEFER_MAX)
        return;
    struct deferred *d = &defer_q[ndefer++];
    d->sig = sig;
    memcpy(&d->info, si, sizeof d->info);
    memcpy(&d->uc, uc, sizeof d->uc);
}

bool hp__px_signals_deferred(void)
{
    return ndefer > 0;
}

void hp__px_run_deferred(void)
{
    while (ndefer > 0) {
        struct deferred d = defer_q[0];
        ndefer--;
        memmove(defer_q, defer_q + 1, (size_t)ndefer * sizeof defer_q[0]);
        /* As the kernel would: the handler's mask, and the signal itself
         * unless SA_NODEFER, blocked while it runs. */
        sigset_t block = user_act[d.sig].sa_mask, old;
        if (!(user_act[d.sig].sa_flags & SA_NODEFER))
            sigaddset(&block, d.sig);
        pthread_sigmask(SIG_BLOCK, &block, &old);
        call_handler(d.sig, &d.info, &d.uc);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
}

void hp__px_run_deferred_in_call(void)
{
    if (!ndefer)
        return;
    hp__px_release();
    int depth = hp__px_in_layer;
    hp__px_in_layer = 0;
    hp__px_run_deferred();
    hp__px_in_layer = depth;
    hp__px_reacquire();
}

unsigned long hp__px_signals_handled(void)
{
    return handled;
}

bool hp__px_signal_restarts(void)
{
    int sig = last_sig;
    if (sig <= 0 || sig >= NSIG || !set[sig])
        return hp__px_restartable();
    return (user_act[sig].sa_flags & SA_RESTART) != 0;
}

/* Signals whose handlers the layer must not wrap: the kernel refuses
 * SIGKILL and SIGSTOP anyway; the faults are synchronous and never
 * interrupt a wait. */
static bool wrappable(int sig)
{
    return sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP && sig != SIGSEGV &&
           sig != SIGBUS && sig != SIGFPE && sig != SIGILL;
}

int hp__px_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!wrappable(sig))
        return PX_REAL(sigaction)(sig, act, old);
    pthread_mutex_lock(&sig_lock);
    struct sigaction prev, k;
    int rc = 0;
    if (set[sig])
        prev = user_act[sig];
    else
        rc = PX_REAL(sigaction)(sig, NULL, &prev);
    if (rc == 0 && act) {
        k = *act;
        if (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN) {
            k.sa_sigaction = trampoline;
            k.sa_flags |= SA_SIGINFO;
        }
        /* Our copy first: a signal may come as soon as the kernel has it. */
        struct sigaction keep = user_act[sig];
        bool was = set[sig];
        user_act[sig] = *act;
        set[sig] = true;
        if ((rc = PX_REAL(sigaction)(sig, &k, NULL)) < 0) {
            user_act[sig] = keep;
            set[sig] = was;
        }
    }
    pthread_mutex_unlock(&sig_lock);
    if (rc == 0 && old)
        *old = prev;
    return rc;
}

sighandler_t hp__px_signal(int sig, sighandler_t h, int flags)
{
    struct sigaction a, old;
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    a.sa_flags = flags;
    sigemptyset(&a.sa_mask);
    if (!(flags & SA_NODEFER))
        sigaddset(&a.sa_mask, sig);
    if (hp__px_sigaction(sig, &a, &old) < 0)
        return SIG_ERR;
    return old.sa_handler; /* the union's other member for an SA_SIGINFO handler: the same pointer */
}
