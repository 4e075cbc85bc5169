/* SPDX-License-Identifier: BSD-3-Clause */
/* Asymmetric barriers through membarrier(2): the heavy side of a handshake whose light side runs on every burst. */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "debug.h"
#include "fence.h"

/* 0: not tried yet; 1: registered; -1: not available (old kernel, seccomp,
 * an emulator without it, a TSan build). */
static _Atomic int asym_state;

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

bool hp__fence_asym_init(void)
{
    int st = atomic_load_explicit(&asym_state, memory_order_acquire);
    if (st)
        return st > 0;
#ifdef HP__TSAN
    st = -1; /* TSan models no fence: keep the read-modify-writes it sees */
#else
    long q = membarrier(MEMBARRIER_CMD_QUERY);
    st = (q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
          membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
             ? 1
             : -1;
#endif
    /* Two threads racing here register twice, which is harmless, and
     * agree on the outcome. */
    atomic_store_explicit(&asym_state, st, memory_order_release);
    return st > 0;
}

void hp__fence_heavy(void)
{
    /* Every thread of the process that runs now passes a full barrier
     * before this returns; one that does not run is between two context
     * switches, which are barriers. Registered by hp__fence_asym_init,
     * so it cannot fail but for a process that forked since (the
     * registration belongs to the address space): then its light side
     * runs in no other thread of this process either, and a full
     * barrier here is all there is to do. */
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
        hp__fence_seq_cst();
}
