/* SPDX-License-Identifier: BSD-3-Clause */
/* The mem link: two connected ends in one process, handing hp_buf pointers over SPSC rings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../base/fence.h"
#include "internal.h"

/*
 * Waking a sleeping end (hp_link_prepare_sleep() in link.h). Each end has an
 * eventfd, its hp_link_fd(), and a "sleeping" flag on a line of its own.
 * An end about to sleep sets its flag, then looks at its ring once more; the
 * other end, after each transmit burst, reads the flag and, only when it is
 * set, clears it and writes the eventfd. A full barrier sits between the
 * write and the read on both sides (Dekker's pattern): either the sleeper
 * sees the frames, or the sender sees the flag. So a busy pair makes no
 * system call; a sleeping end is signalled once per sleep.
 *
 * The sender's barrier came with every transmit burst and cost more than
 * the burst's hand-over (a locked instruction waits for the store buffer to
 * drain: the frame's headers, just written; perf put 5% of a UDP echo on
 * it). Where the kernel has membarrier(2), the pair uses the asymmetric
 * form instead (base/fence.h): a compiler barrier on each burst, and the
 * sleeper's membarrier() once per sleep, which is rare by construction
 * (after the loop's busy-poll time of nothing).
 */
struct mem_wake {
    _Alignas(64) _Atomic uint32_t sleeping;
    int efd;
};

/* What both ends share: the two wires, the wake-up state and, maybe, the
 * pool. The last end closed frees it. */
struct mem_shared {
    struct mem_wake wake[2]; /* wake[s]: end s's */
    _Alignas(64) _Atomic int refs;
    struct hp_pool *pool;
    bool own_pool;
    struct hp__spsc *wire[2]; /* wire[s]: written by end s, read by end 1 - s */
    bool asym;                /* hp__fence_light / hp__fence_heavy, decided once for both ends */
};

struct mem_link {
    struct hp_link l;
    struct mem_shared *sh;
    struct hp__spsc *out, *in;
    struct mem_wake *me, *peer;
};

/* After frames went onto the wire: signal the peer if it sleeps. */
static inline void wake_peer(struct mem_link *m)
{
    if (m->sh->asym)
        hp__fence_light();
    else
        hp__fence_seq_cst();
    if (atomic_load_explicit(&m->peer->sleeping, memory_order_relaxed) == 0 ||
        atomic_exchange_explicit(&m->peer->sleeping, 0, memory_order_relaxed) == 0)
        return;
    uint64_t one = 1;
    /* Cannot fail short of a bad fd: the counter is far from overflowing
     * (one write per sleep). */
    if (write(m->peer->efd, &one, sizeof one) != (ssize_t)sizeof one)
        m->l.st.tx_errors++;
    m->l.st.wakeups++;
}

static int mem_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    struct mem_link *m = (struct mem_link *)l;
    (void)due_ns;
    /* A signal from an earlier sleep (or one still on its way when we woke
     * for something else) must not end this one: consume it. Always: the
     * peer clears our flag before it writes, so the flag cannot tell
     * whether a write is still to come, and a count left behind would end
     * every sleep at once. One read per sleep, never on the busy path. */
    uint64_t v;
    while (read(m->me->efd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    atomic_store_explicit(&m->me->sleeping, 1, memory_order_relaxed);
    if (m->sh->asym)
        hp__fence_heavy();
    else
        hp__fence_seq_cst();
    if (hp__spsc_avail(m->in) == 0)
        return 0;
    /* Frames came before the flag was seen: no sleep (a signal the peer
     * sends meanwhile is consumed by the next arming). */
    atomic_store_explicit(&m->me->sleeping, 0, memory_order_relaxed);
    return 1;
}

static int mem_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct mem_link *m = (struct mem_link *)l;
    unsigned k = hp__spsc_pop(m->in, bufs, n);
    uint64_t bytes = 0;
    for (unsigned i = 0; i < k; i++)
        bytes += bufs[i]->pkt_len;
    l->st.rx_packets += k;
    l->st.rx_bytes += bytes;
    return (int)k;
}

static int mem_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct mem_link *m = (struct mem_link *)l;
    uint32_t max = l->mtu + HP__ETH_HDR + HP__VLAN_HDR;
    uint64_t bytes = 0;
    unsigned i;
    for (i = 0; i < n; i++) {
        if (bufs[i]->pkt_len > max || bufs[i]->pkt_len < HP__ETH_HDR)
            break;
        bytes += bufs[i]->pkt_len;
    }
    if (i == n) {
        /* The common case: every frame is sendable, hand over in one go. */
        unsigned k = hp__spsc_push(m->out, bufs, n);
        if (k)
            wake_peer(m);
        if (k < n) {
            l->st.tx_full++;
            bytes = 0;
            for (unsigned j = 0; j < k; j++)
                bytes += bufs[j]->pkt_len;
        }
        l->st.tx_packets += k;
        l->st.tx_bytes += bytes;
        return (int)k;
    }
    /* Some frame is too large or too short: send one at a time, in order. */
    unsigned taken = 0;
    for (i = 0; i < n; i++) {
        struct hp_buf *b = bufs[i];
        if (b->pkt_len > max || b->pkt_len < HP__ETH_HDR) {
            l->st.tx_dropped++;
            hp_buf_free(b);
        } else if (hp__spsc_push(m->out, &b, 1) == 1) {
            l->st.tx_packets++;
            l->st.tx_bytes += b->pkt_len;
        } else {
            l->st.tx_full++;
            break;
        }
        taken++;
    }
    if (taken)
        wake_peer(m);
    return (int)taken;
}

static struct mem_shared *shared_new(void)
{
    struct mem_shared *sh = aligned_alloc(64, sizeof *sh);
    if (!sh)
        return NULL;
    memset(sh, 0, sizeof *sh);
    for (int s = 0; s < 2; s++) {
        atomic_init(&sh->wake[s].sleeping, 0);
        sh->wake[s].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }
    sh->asym = hp__fence_asym_init();
    return sh;
}

static void shared_free(struct mem_shared *sh)
{
    if (!sh)
        return;
    for (int s = 0; s < 2; s++)
        if (sh->wake[s].efd >= 0)
            close(sh->wake[s].efd);
    free(sh);
}

static int mem_close(struct hp_link *l)
{
    struct mem_link *m = (struct mem_link *)l;
    struct mem_shared *sh = m->sh;
    if (atomic_fetch_sub(&sh->refs, 1) != 1)
        return 0;
    /* The last end: the wires' buffers go back, then the pool. */
    hp__spsc_destroy(sh->wire[0]);
    hp__spsc_destroy(sh->wire[1]);
    int rc = 0;
    if (sh->own_pool)
        rc = hp_pool_destroy(sh->pool);
    shared_free(sh);
    return rc;
}

static const struct hp__link_ops mem_ops = {
    .kind = "mem",
    .rx = mem_rx,
    .tx = mem_tx,
    .prepare_sleep = mem_prepare_sleep,
    .close = mem_close,
};

HP_API int hp_link_mem_pair(const struct hp_link_config *cfg, struct hp_link *ends[2])
{
    static const struct hp_link_config zero;
    static _Atomic unsigned pairs;
    if (!cfg)
        cfg = &zero;
    if (!ends)
        return hp__link_fail(EINVAL, "mem: no place for the two ends");
    ends[0] = ends[1] = NULL;
    uint32_t size = cfg->ring_size ? cfg->ring_size : 1024;
    if (size < 2 || (size & (size - 1)))
        return hp__link_fail(EINVAL, "mem: ring_size %u is not a power of two >= 2", size);
    if (cfg->flags & ~(unsigned)HP_LINK_F_TX_COMPLETIONS)
        return hp__link_fail(EINVAL, "mem: flags 0x%x are for other backends", cfg->flags);
    struct mem_shared *sh = shared_new();
    struct mem_link *m[2] = {calloc(1, sizeof(struct mem_link)),
                             calloc(1, sizeof(struct mem_link))};
    if (!sh || !m[0] || !m[1])
        goto nomem;
    if (sh->wake[0].efd < 0 || sh->wake[1].efd < 0) {
        int err = errno;
        free(m[0]);
        free(m[1]);
        shared_free(sh);
        return hp__link_fail(err, "mem: cannot create its eventfds: %s", hp_strerror(err));
    }
    sh->wire[0] = hp__spsc_create(size);
    sh->wire[1] = hp__spsc_create(size);
    if (!sh->wire[0] || !sh->wire[1])
        goto nomem;

    const char *base = cfg->iface ? cfg->iface : "mem";
    unsigned id = atomic_fetch_add(&pairs, 1);
    for (int s = 0; s < 2; s++) {
        char name[32];
        if (cfg->iface)
            snprintf(name, sizeof name, "%.28s%s", base, s ? "-b" : "");
        else
            snprintf(name, sizeof name, "mem%u", 2 * id + (unsigned)s);
        /* Only the first end may create the pool; the second shares it. */
        struct hp_link_config c = *cfg;
        c.flags = 0;
        if (s == 1)
            c.pool = m[0]->l.pool;
        int rc = hp__link_init(&m[s]->l, &mem_ops, &c, name);
        if (rc < 0) {
            if (s == 1)
                hp__link_fini(&m[0]->l);
            free(m[0]);
            free(m[1]);
            hp__spsc_destroy(sh->wire[0]);
            hp__spsc_destroy(sh->wire[1]);
            shared_free(sh);
            return rc;
        }
        m[s]->sh = sh;
        m[s]->out = sh->wire[s];
        m[s]->in = sh->wire[1 - s];
        m[s]->me = &sh->wake[s];
        m[s]->peer = &sh->wake[1 - s];
        m[s]->l.fd = sh->wake[s].efd;
        /* Locally administered, unicast: 02:68:70 ("hp"), the pair, the end. */
        uint8_t mac[6] = {0x02, 0x68, 0x70, (uint8_t)(id >> 8), (uint8_t)id, (uint8_t)(s + 1)};
        memcpy(m[s]->l.mac, mac, 6);
        m[s]->l.caps = HP_LINK_CAP_ZEROCOPY_TX | HP_LINK_CAP_ZEROCOPY_RX | HP_LINK_CAP_FD;
    }
    sh->pool = m[0]->l.pool;
    sh->own_pool = m[0]->l.own_pool;
    m[0]->l.own_pool = false; /* the shared part destroys it */
    atomic_init(&sh->refs, 2);
    ends[0] = &m[0]->l;
    ends[1] = &m[1]->l;
    return 0;
nomem:
    if (sh) {
        hp__spsc_destroy(sh->wire[0]);
        hp__spsc_destroy(sh->wire[1]);
    }
    shared_free(sh);
    free(m[0]);
    free(m[1]);
    return hp__link_fail(ENOMEM, "mem: out of memory");
}
