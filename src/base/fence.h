/* SPDX-License-Identifier: BSD-3-Clause */
/* A full memory barrier that ThreadSanitizer understands, for the "flag, barrier, look again" handshakes between a sleeper and its waker. */
#ifndef HOTPATH_BASE_FENCE_H
#define HOTPATH_BASE_FENCE_H

#include <stdatomic.h>

/*
 * A sleeper sets its flag, then looks at the ring again; a producer fills
 * the ring, then looks at the flag. Each side needs a full barrier between
 * its store and its load (store-load ordering), or both may miss the other.
 * atomic_thread_fence(seq_cst) is that barrier, but ThreadSanitizer does not
 * model standalone fences (gcc refuses them under -fsanitize=thread with
 * -Werror=tsan). Under TSan, both sides do a seq_cst read-modify-write on
 * one shared location instead: those are totally ordered, and TSan sees the
 * synchronisation they make.
 */
#if defined(__SANITIZE_THREAD__)
#define HP__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HP__TSAN 1
#endif
#endif

#ifdef HP__TSAN
extern _Atomic unsigned hp__tsan_fence_word;
static inline void hp__fence_seq_cst(void)
{
    atomic_fetch_add_explicit(&hp__tsan_fence_word, 0, memory_order_seq_cst);
}
#else
static inline void hp__fence_seq_cst(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}
#endif

/*
 * Asymmetric barriers, where one side of such a handshake runs on every
 * transmit burst and the other once per sleep: the frequent side then
 * needs only a compiler barrier (hp__fence_light), and the rare side
 * calls membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED, hp__fence_heavy),
 * which makes every running thread of the process pass a full barrier, as
 * if the light side had one. Only between threads of one process.
 * hp__fence_asym_init() registers the process once and says whether the
 * kernel offers it (Linux 4.14; not in TSan builds, nor where the kernel,
 * an emulator or a seccomp filter refuses it). Whoever pairs the two decides once, before
 * either side runs, and both sides keep to it; without it, both use
 * hp__fence_seq_cst().
 */
#include <stdbool.h>

bool hp__fence_asym_init(void);
void hp__fence_heavy(void);
static inline void hp__fence_light(void)
{
    atomic_signal_fence(memory_order_seq_cst);
}

#endif
