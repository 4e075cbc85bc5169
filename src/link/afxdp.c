/* SPDX-License-Identifier: BSD-3-Clause */
/* The afxdp link: an AF_XDP socket (libxdp) whose UMEM is the link's buffer pool, so frames cross without a copy. */
#include <errno.h>

#include "internal.h"

#ifndef HP_HAVE_LIBXDP

struct hp_link *hp__afxdp_open(const struct hp_link_config *cfg)
{
    (void)cfg;
    return hp__link_fail_null(EOPNOTSUPP,
                              "afxdp: not built in: hotpath was built without libxdp-dev and "
                              "libbpf-dev (apt install libxdp-dev libbpf-dev, then rebuild)");
}

#else

#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

/*
 * The UMEM is one anonymous mapping cut into n_frames chunks of frame_size
 * bytes (aligned chunk mode, frame_headroom 0), and the link's pool is made
 * over the same memory with chunk = frame_size. Each chunk is therefore one
 * hp_buf:
 *
 *   chunk + 0      struct hp_buf (128 bytes of metadata)
 *   chunk + 128    base: the data room; a fresh buffer's data_off is 128
 *   chunk + 256    where the kernel writes a received frame
 *                  (XDP_PACKET_HEADROOM), = base + the pool's default data_off
 *
 * A UMEM address (fill, rx, tx, completion ring) maps to its hp_buf by
 * masking it to the chunk: hp_buf = area + (addr & ~(frame_size - 1)).
 *
 * The kernel never writes the first 128 bytes of a chunk in copy mode, nor
 * in zero-copy mode, where XDP metadata sits just before the data. One
 * caveat in zero-copy mode: an XDP program that moves the data start back
 * with bpf_xdp_adjust_head() by more than 128 bytes writes over the
 * metadata. Such a frame is dropped (rx_errors) and its metadata rebuilt.
 *
 * Which frames the kernel holds (fill ring, transmissions in flight,
 * receptions and completions not yet taken) is kept in one byte per frame,
 * so that closing can return exactly those to the pool after the socket is
 * gone: hp_pool_in_use() then counts what the user still holds.
 *
 * Threads: the data thread uses the rx, tx and fill rings; the completion
 * ring belongs to the data thread, or with HP_LINK_F_TX_COMPLETIONS to the
 * completion thread alone (which must have stopped calling
 * hp_link_completions() before the link is closed: closing frees what it
 * did not collect). The per-frame bytes are atomics (relaxed) since
 * both threads write them, for different frames. The kernel hands a
 * transmitted frame from one thread to the other through two different
 * rings, which ThreadSanitizer cannot see: tx_seq (a release store per
 * burst, an acquire load per completion batch) makes that order visible to
 * it. It costs one plain store per burst on x86.
 *
 * Opening: cfg->pool is ignored (the pool has to be the UMEM). The XDP
 * program is libxdp's default AF_XDP redirect program, attached in native
 * mode, or in generic (SKB) mode when the driver has no native XDP.
 * libxdp 1.3 puts it behind its multi-program dispatcher when a bpffs is
 * mounted at /sys/fs/bpf, and attaches it alone otherwise ("Can't use
 * dispatcher without a working bpffs"); both work and we mount nothing.
 * The kernel frees a closed socket's queue asynchronously, so an open right
 * after a close may find it busy: EBUSY is retried for up to a second.
 */

#define XDP_HEADROOM 256 /* XDP_PACKET_HEADROOM in the kernel */
#define BATCH        64
#define BUSY_RETRIES 100     /* x 10 ms: a socket just closed frees its queue asynchronously */
#define STALL_NS     1000000 /* frames waiting this long with no new submission: kick for them */

struct afxdp {
    struct hp_link l;
    /* data thread */
    struct xsk_ring_cons rx;
    struct xsk_ring_prod tx;
    struct xsk_ring_prod fq;
    unsigned char *area;   /* the UMEM */
    _Atomic uint8_t *held; /* per frame: 1 while the kernel or a ring holds it */
    uint64_t chunk_mask;   /* ~(frame_size - 1) */
    uint32_t frame_shift;
    uint32_t max_frame; /* mtu + 18 */
    bool need_wakeup;
    bool txc; /* HP_LINK_F_TX_COMPLETIONS: cq is the completion thread's */
    /* the completion ring: data thread, or the completion thread alone */
    _Alignas(64) struct xsk_ring_cons cq;
    uint32_t seen_prod;        /* completion thread: the tx producer while frames wait, */
    uint64_t seen_ns;          /* and since when (0: none waiting) */
    _Atomic uint64_t cq_kicks; /* completion thread: its kicks (see afxdp_completions) */
    /* see above: orders a transmission before its completion, for TSan */
    _Alignas(64) _Atomic uint64_t tx_seq;
    /* cold */
    _Alignas(64) struct xsk_umem *umem;
    struct xsk_socket *xsk;
    size_t area_len;
    uint32_t n_frames, frame_size, ring_size;
    char iface[IF_NAMESIZE];
};

/* ---- libxdp's messages ------------------------------------------------- */

/* libxdp and libbpf print warnings to stderr by default, a few on every
 * socket ("No bpffs found", "skipping unrecognized data section"): noise
 * for a library's user. While we open a socket, their printers are
 * replaced by one that keeps the last warning, which a failure message then
 * quotes. Opens are serialised so that the printers are restored exactly
 * (they are process-wide). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static char lib_msg[200];

static void keep_msg(const char *fmt, va_list ap)
{
    char m[sizeof lib_msg];
    vsnprintf(m, sizeof m, fmt, ap);
    size_t n = strlen(m);
    while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
        m[--n] = 0;
    if (n)
        memcpy(lib_msg, m, n + 1);
}

static int quiet_libxdp(enum libxdp_print_level level, const char *fmt, va_list ap)
{
    if (level == LIBXDP_WARN)
        keep_msg(fmt, ap);
    return 0;
}

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    /* libbpf's warnings that matter carry the kernel's reason ("Kernel
     * error message: ..."); its ELF chatter is no failure. */
    if (level == LIBBPF_WARN && !strstr(fmt, "elf:"))
        keep_msg(fmt, ap);
    return 0;
}

/* " (libxdp: ...)" when a library said something, for failure messages;
 * "" otherwise. */
static void lib_said(char *buf, size_t len)
{
    if (lib_msg[0])
        snprintf(buf, len, " (%s)", lib_msg);
    else
        buf[0] = 0;
}

/* ---- small helpers ---------------------------------------------------- */

static inline struct hp_buf *frame_buf(const struct afxdp *x, uint64_t addr)
{
    return (struct hp_buf *)(x->area + (addr & x->chunk_mask));
}

static inline void set_held(struct afxdp *x, uint64_t addr, uint8_t v)
{
    atomic_store_explicit(&x->held[addr >> x->frame_shift], v, memory_order_relaxed);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ETHTOOL requests on a datagram socket (in the calling thread's namespace). */
static int ethtool(const char *ifname, void *data)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    ifr.ifr_data = data;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = ioctl(fd, SIOCETHTOOL, &ifr) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* Queues an AF_XDP socket may bind to: the kernel accepts a queue below the
 * larger of the real rx and tx queue counts; ethtool reports rx-only,
 * tx-only and combined channels. -1 when the driver does not say. */
static long queue_count(const char *ifname)
{
    struct ethtool_channels ch = {.cmd = ETHTOOL_GCHANNELS};
    if (ethtool(ifname, &ch) < 0)
        return -1;
    uint32_t one = ch.rx_count > ch.tx_count ? ch.rx_count : ch.tx_count;
    return (long)ch.combined_count + one;
}

static void driver_name(const char *ifname, char *out, size_t len)
{
    struct ethtool_drvinfo di = {.cmd = ETHTOOL_GDRVINFO};
    if (ethtool(ifname, &di) == 0 && di.driver[0])
        snprintf(out, len, "%s", di.driver);
    else
        snprintf(out, len, "unknown");
}

/* The XDP program on the interface when it is not one libxdp would share
 * with us (its AF_XDP program or its dispatcher): 1 with its name and id,
 * 0 otherwise, or when its name cannot be read (without CAP_SYS_ADMIN:
 * the socket's own failure then says more). */
static int foreign_program(unsigned ifindex, char *name, size_t len, uint32_t *id)
{
    struct bpf_xdp_query_opts q;
    memset(&q, 0, sizeof q);
    q.sz = sizeof q;
    if (bpf_xdp_query((int)ifindex, 0, &q) < 0)
        return 0;
    uint32_t pid = q.prog_id ? q.prog_id : q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id;
    if (!pid)
        return 0;
    *id = pid;
    int fd = bpf_prog_get_fd_by_id(pid);
    if (fd < 0)
        return 0;
    struct bpf_prog_info info;
    uint32_t il = sizeof info;
    memset(&info, 0, sizeof info);
    int rc = bpf_obj_get_info_by_fd(fd, &info, &il);
    close(fd);
    if (rc < 0)
        return 0;
    snprintf(name, len, "%s", info.name);
    return strcmp(name, "xsk_def_prog") != 0 && strcmp(name, "xdp_dispatcher") != 0;
}

/* ---- kicking the kernel ---------------------------------------------------- */

/* Whether the kernel has not yet taken every descriptor of the tx ring
 * (both counters are read atomically: the completion thread looks too). */
static inline bool tx_pending(const struct afxdp *x, uint32_t *prod, uint32_t *cons)
{
    *prod = __atomic_load_n(x->tx.producer, __ATOMIC_ACQUIRE);
    *cons = __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE);
    return *prod != *cons;
}

/* Ask the kernel to transmit; false when it needs no asking (a zero-copy
 * driver polling the ring: it clears the need-wakeup flag meanwhile). Copy
 * mode sends only from sendto(), so there the flag stays set. */
static bool kick_tx(struct afxdp *x)
{
    if (x->need_wakeup && !xsk_ring_prod__needs_wakeup(&x->tx))
        return false;
    x->l.st.wakeups++;
    if (sendto(x->l.fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
        int e = errno;
        /* The kernel is busy or out of completion-ring room: it goes on with
         * the next kick. */
        if (e != EAGAIN && e != EBUSY && e != ENOBUFS && e != EINTR)
            x->l.st.tx_errors++;
    }
    return true;
}

/* Kick until the kernel has taken the whole tx ring or stops making
 * progress. One sendto() sends at most 32 frames in copy mode, and none
 * when the completion ring is full: what is left waits for the next call
 * (rx_burst and tx_burst, n = 0 included, call this). */
static void tx_flush(struct afxdp *x)
{
    uint32_t prod, cons, last = 0;
    for (int i = 0; i < 16 && tx_pending(x, &prod, &cons); i++) {
        if (i > 0 && cons == last)
            return; /* no progress: the completion ring is full, or the device busy */
        last = cons;
        if (!kick_tx(x))
            return;
    }
}

/* ---- the completion ring ------------------------------------------------- */

/* Data thread, without HP_LINK_F_TX_COMPLETIONS: free what the kernel has
 * sent. These are frees on the data thread. */
static void reap(struct afxdp *x)
{
    struct hp_buf *b[BATCH];
    uint32_t idx;
    unsigned k;
    while ((k = xsk_ring_cons__peek(&x->cq, BATCH, &idx)) > 0) {
        for (unsigned i = 0; i < k; i++) {
            uint64_t addr = *xsk_ring_cons__comp_addr(&x->cq, idx + i);
            set_held(x, addr, 0);
            b[i] = frame_buf(x, addr);
        }
        xsk_ring_cons__release(&x->cq, k);
        hp_buf_free_bulk(b, k);
    }
}

static int afxdp_completions(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct afxdp *x = (struct afxdp *)l;
    if (!x->txc || n == 0)
        return 0;
    uint32_t idx;
    unsigned k = xsk_ring_cons__peek(&x->cq, n, &idx);
    if (k == 0) {
        /* Nothing completed, frames wait in the tx ring, and the data
         * thread has submitted nothing for a millisecond: it went idle
         * after the kernel stopped for want of completion-ring room, which
         * we have made since. Kick for it, or those frames would wait for
         * its next call. While it transmits (a burst every few
         * microseconds), this never fires, and the transmit work stays on
         * the data thread. */
        uint32_t prod, cons;
        if (!tx_pending(x, &prod, &cons)) {
            x->seen_ns = 0;
            return 0;
        }
        uint64_t now = mono_ns();
        if (x->seen_ns == 0 || prod != x->seen_prod) {
            x->seen_prod = prod;
            x->seen_ns = now;
        } else if (now - x->seen_ns >= STALL_NS &&
                   (!x->need_wakeup || xsk_ring_prod__needs_wakeup(&x->tx))) {
            atomic_fetch_add_explicit(&x->cq_kicks, 1, memory_order_relaxed);
            (void)sendto(x->l.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
            x->seen_ns = now;
        }
        return 0;
    }
    (void)atomic_load_explicit(&x->tx_seq, memory_order_acquire);
    for (unsigned i = 0; i < k; i++) {
        uint64_t addr = *xsk_ring_cons__comp_addr(&x->cq, idx + i);
        set_held(x, addr, 0);
        bufs[i] = frame_buf(x, addr);
    }
    xsk_ring_cons__release(&x->cq, k);
    return (int)k;
}

/* ---- receive ------------------------------------------------------------ */

/* Keep the fill ring full from the pool. An empty pool leaves it short; the
 * next call tries again. */
static void refill(struct afxdp *x)
{
    struct hp_buf *b[BATCH];
    uint32_t room = xsk_prod_nb_free(&x->fq, x->ring_size);
    while (room > 0) {
        unsigned k = room < BATCH ? room : BATCH;
        /* All or nothing: ask for less until it fits what the pool has. */
        while (k > 0 && hp_buf_alloc_bulk(x->l.pool, b, k) != (int)k)
            k /= 2;
        if (k == 0)
            break;
        uint32_t idx = 0;
        xsk_ring_prod__reserve(&x->fq, k, &idx); /* cannot fail: room >= k */
        for (unsigned i = 0; i < k; i++) {
            uint64_t addr = (uint64_t)((unsigned char *)b[i] - x->area);
            set_held(x, addr, 1);
            *xsk_ring_prod__fill_addr(&x->fq, idx + i) = addr;
        }
        xsk_ring_prod__submit(&x->fq, k);
        room -= k;
    }
    if (x->need_wakeup && xsk_ring_prod__needs_wakeup(&x->fq)) {
        x->l.st.wakeups++;
        (void)recvfrom(x->l.fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    }
}

/* A frame whose data start the XDP program moved into the metadata area
 * (zero-copy only): rebuild the metadata and give the buffer back. */
static void reclaim(struct afxdp *x, struct hp_buf *b)
{
    memset(b, 0, sizeof *b);
    b->base = (unsigned char *)b + HP_BUF_META_SIZE;
    b->pool = x->l.pool;
    b->room = x->frame_size - HP_BUF_META_SIZE;
    b->flags = HP_BUF_F_EXTERNAL;
    b->nb_segs = 1;
    int t = hp_thread_id();
    b->owner = t >= 0 ? (uint16_t)t : UINT16_MAX;
    atomic_store_explicit(&b->refcnt, 1, memory_order_relaxed);
    hp_buf_free(b);
}

static int afxdp_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct afxdp *x = (struct afxdp *)l;
    if (!x->txc)
        reap(x);
    uint32_t idx;
    unsigned k = xsk_ring_cons__peek(&x->rx, n, &idx), got = 0;
    uint64_t bytes = 0;
    for (unsigned i = 0; i < k; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
        uint64_t addr = d->addr;
        if (addr >= x->area_len) {
            l->st.rx_errors++; /* the kernel's bug: nothing to map back */
            continue;
        }
        struct hp_buf *b = frame_buf(x, addr);
        uint64_t off = addr & ~x->chunk_mask;
        set_held(x, addr, 0);
        if (off < HP_BUF_META_SIZE) {
            l->st.rx_errors++;
            reclaim(x, b);
            continue;
        }
        off -= HP_BUF_META_SIZE;
        if (off + d->len > b->room) {
            l->st.rx_errors++;
            hp_buf_free(b);
            continue;
        }
        b->data_off = (uint32_t)off;
        b->data_len = d->len;
        b->pkt_len = d->len;
        bytes += d->len;
        bufs[got++] = b;
    }
    if (k)
        xsk_ring_cons__release(&x->rx, k);
    refill(x);
    tx_flush(x);
    l->st.rx_packets += got;
    l->st.rx_bytes += bytes;
    return (int)got;
}

/* ---- transmit ----------------------------------------------------------- */

/* A buffer that can go out as it is: one segment of the UMEM pool, data
 * not shared (a completion returns the chunk's buffer, which must be this
 * one, and only once). */
static inline bool in_umem(const struct afxdp *x, const struct hp_buf *b)
{
    return b->pool == x->l.pool && !b->next && !(b->flags & HP_BUF_F_INDIRECT) &&
           hp_buf_refcnt(b) == 1 && b->data_len == b->pkt_len &&
           b->data_off + b->data_len <= b->room;
}

static int afxdp_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct afxdp *x = (struct afxdp *)l;
    if (!x->txc)
        reap(x);
    unsigned taken = 0;
    bool stop = false;
    while (taken < n && !stop) {
        uint32_t room = xsk_prod_nb_free(&x->tx, n - taken);
        if (room == 0)
            break;
        unsigned cap = n - taken < room ? n - taken : room;
        if (cap > BATCH)
            cap = BATCH;
        uint64_t addr[BATCH];
        uint32_t len[BATCH];
        unsigned j = 0;
        uint64_t bytes = 0;
        while (j < cap && taken < n) {
            struct hp_buf *b = bufs[taken];
            uint32_t plen = b->pkt_len;
            if (plen > x->max_frame || plen < HP__ETH_HDR) {
                l->st.tx_dropped++;
                hp_buf_free(b);
                taken++;
                continue;
            }
            if (!in_umem(x, b)) {
                /* Another pool's buffer, a chain, or shared data: copy it
                 * into a UMEM buffer. */
                struct hp_buf *c = hp_buf_alloc(l->pool);
                if (!c) {
                    stop = true;
                    break;
                }
                (void)hp_buf_copy_out(b, 0, plen, hp_buf_data(c));
                c->data_len = plen;
                c->pkt_len = plen;
                hp_buf_free(b);
                b = c;
            }
            addr[j] = (uint64_t)(b->base + b->data_off - x->area);
            len[j] = b->data_len;
            bytes += b->data_len;
            j++;
            taken++;
        }
        if (j == 0)
            continue;
        uint32_t idx = 0;
        xsk_ring_prod__reserve(&x->tx, j, &idx); /* cannot fail: room >= j */
        for (unsigned i = 0; i < j; i++) {
            struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);
            d->addr = addr[i];
            d->len = len[i];
            d->options = 0;
            set_held(x, addr[i], 1);
        }
        atomic_store_explicit(&x->tx_seq,
                              atomic_load_explicit(&x->tx_seq, memory_order_relaxed) + j,
                              memory_order_release);
        xsk_ring_prod__submit(&x->tx, j);
        l->st.tx_packets += j;
        l->st.tx_bytes += bytes;
    }
    if (taken < n)
        l->st.tx_full++;
    /* A full ring, or frames left from an earlier call, need a kick too:
     * in copy mode nothing else drains the ring. */
    tx_flush(x);
    return (int)taken;
}

/* ---- sleeping ------------------------------------------------------------ */

/*
 * Before a sleep on the XSK fd, which polls readable while the RX ring has
 * descriptors: what the kernel needs from us first is done here. Sent
 * frames are reaped and the fill ring topped up, with a kick when it has
 * the need-wakeup flag (a zero-copy driver stopped reading it and would not
 * start again on its own); frames still in the TX ring get their kick. If
 * the kernel could not take them all (its completion ring is full), or the
 * RX ring already has descriptors, there is no sleep.
 */
static int afxdp_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    struct afxdp *x = (struct afxdp *)l;
    (void)due_ns;
    if (!x->txc)
        reap(x);
    refill(x);
    uint32_t prod, cons;
    if (tx_pending(x, &prod, &cons)) {
        tx_flush(x);
        if (tx_pending(x, &prod, &cons))
            return 1;
    }
    return xsk_cons_nb_avail(&x->rx, 1) > 0 ? 1 : 0;
}

/* ---- the rest of the operations ------------------------------------------ */

static void afxdp_stats(const struct hp_link *l, struct hp_link_stats *out)
{
    struct xdp_statistics s;
    socklen_t len = sizeof s;
    memset(&s, 0, sizeof s);
    if (getsockopt(l->fd, SOL_XDP, XDP_STATISTICS, &s, &len) < 0)
        return;
    /* Cumulative since the socket was bound: nothing to keep ourselves.
     * A frame that finds the fill ring empty counts in both rx_dropped and
     * rx_fill_ring_empty_descs (measured on 6.18, copy mode: 136 frames
     * lost, 136 in each), and zero-copy drivers count their failed refills
     * in the latter without losing a frame: only rx_dropped is taken. A
     * full receive ring counts in rx_ring_full alone. */
    out->rx_dropped += s.rx_dropped + s.rx_ring_full;
    out->tx_errors += s.tx_invalid_descs;
    out->wakeups += atomic_load_explicit(&((struct afxdp *)l)->cq_kicks, memory_order_relaxed);
}

static int afxdp_set_mtu(struct hp_link *l, uint32_t mtu)
{
    struct afxdp *x = (struct afxdp *)l;
    int rc = hp__if_set_mtu(x->iface, mtu);
    if (rc == -EPERM)
        return hp__link_fail(EPERM, "afxdp %s: changing the MTU needs CAP_NET_ADMIN: run as root",
                             x->iface);
    if (rc < 0)
        return hp__link_fail(-rc, "afxdp %s: the interface refused MTU %u: %s", x->iface, mtu,
                             hp_strerror(rc));
    x->max_frame = mtu + HP__ETH_HDR + HP__VLAN_HDR;
    return 0;
}

/* Close the socket and the UMEM, give back every frame they held, and
 * destroy the pool; the mapping goes only if the pool could go (a user
 * still holding buffers keeps both, leaked rather than unmapped under
 * them). */
static int afxdp_close(struct hp_link *l)
{
    struct afxdp *x = (struct afxdp *)l;
    /* libxdp says a few words on detaching its program too. */
    pthread_mutex_lock(&open_lock);
    libxdp_print_fn_t old_xdp = libxdp_set_print(quiet_libxdp);
    libbpf_print_fn_t old_bpf = libbpf_set_print(quiet_libbpf);
    if (x->xsk)
        xsk_socket__delete(x->xsk);
    if (x->umem)
        (void)xsk_umem__delete(x->umem);
    libxdp_set_print(old_xdp);
    libbpf_set_print(old_bpf);
    pthread_mutex_unlock(&open_lock);
    x->xsk = NULL;
    x->umem = NULL;
    int rc = 0;
    if (l->pool) {
        struct hp_buf *b[BATCH];
        unsigned k = 0;
        for (uint32_t f = 0; f < x->n_frames; f++) {
            if (!atomic_load_explicit(&x->held[f], memory_order_relaxed))
                continue;
            atomic_store_explicit(&x->held[f], 0, memory_order_relaxed);
            b[k++] = (struct hp_buf *)(x->area + (size_t)f * x->frame_size);
            if (k == BATCH) {
                hp_buf_free_bulk(b, k);
                k = 0;
            }
        }
        hp_buf_free_bulk(b, k);
        hp_pool_thread_flush(l->pool);
        rc = hp_pool_destroy(l->pool);
        if (rc == 0)
            munmap(x->area, x->area_len);
        l->pool = NULL;
    }
    free((void *)x->held);
    x->held = NULL;
    return rc;
}

static const struct hp__link_ops afxdp_ops = {
    .kind = "afxdp",
    .rx = afxdp_rx,
    .tx = afxdp_tx,
    .prepare_sleep = afxdp_prepare_sleep,
    .completions = afxdp_completions,
    .set_mtu = afxdp_set_mtu,
    .stats = afxdp_stats,
    .close = afxdp_close,
};

/* ---- opening ---------------------------------------------------------- */

/* One try at a socket in one XDP mode: a fresh UMEM registration each time,
 * since a failed attempt may leave its socket bound. */
static int try_socket(struct afxdp *x, uint32_t queue, uint32_t xdp_flags, uint16_t bind_flags)
{
    struct xsk_umem_config uc = {
        .fill_size = x->ring_size,
        .comp_size = x->ring_size,
        .frame_size = x->frame_size,
        .frame_headroom = 0,
        .flags = 0,
    };
    int rc = xsk_umem__create(&x->umem, x->area, x->area_len, &x->fq, &x->cq, &uc);
    if (rc) {
        x->umem = NULL;
        return rc;
    }
    struct xsk_socket_config sc = {
        .rx_size = x->ring_size,
        .tx_size = x->ring_size,
        .xdp_flags = xdp_flags,
        .bind_flags = bind_flags,
    };
    rc = xsk_socket__create(&x->xsk, x->iface, queue, x->umem, &x->rx, &x->tx, &sc);
    if (rc) {
        x->xsk = NULL;
        (void)xsk_umem__delete(x->umem);
        x->umem = NULL;
    }
    return rc;
}

/* Make the socket: native XDP first, then generic (SKB) mode unless a mode
 * was asked for; retry while the queue is still held by a socket being
 * closed. Returns 0 or -errno with the failure message set. */
static int make_socket(struct afxdp *x, const struct hp_link_config *cfg, unsigned ifindex)
{
    unsigned f = cfg->flags;
    uint16_t bind = (uint16_t)((f & HP_LINK_F_COPY ? XDP_COPY : 0) |
                               (f & HP_LINK_F_ZEROCOPY ? XDP_ZEROCOPY : 0) |
                               (f & HP_LINK_F_NO_NEED_WAKEUP ? 0 : XDP_USE_NEED_WAKEUP));
    uint32_t modes[2];
    int nmodes = 0;
    if (f & HP_LINK_F_XDP_SKB) {
        modes[nmodes++] = XDP_FLAGS_SKB_MODE;
    } else {
        modes[nmodes++] = XDP_FLAGS_DRV_MODE;
        /* Zero-copy needs the driver's own XDP support: no fallback. */
        if (!(f & HP_LINK_F_ZEROCOPY))
            modes[nmodes++] = XDP_FLAGS_SKB_MODE;
    }
    char pname[32], said[240];
    uint32_t pid = 0;
    if (foreign_program(ifindex, pname, sizeof pname, &pid))
        return hp__link_fail(EBUSY,
                             "afxdp %s: an XDP program is already attached (%s, id %u); detach it "
                             "first (ip link set dev %s xdp off; or xdpgeneric off)",
                             x->iface, pname, pid, x->iface);

    int rc = 0;
    pthread_mutex_lock(&open_lock);
    libxdp_print_fn_t old_xdp = libxdp_set_print(quiet_libxdp);
    libbpf_print_fn_t old_bpf = libbpf_set_print(quiet_libbpf);
    lib_msg[0] = 0;
    for (int m = 0; m < nmodes; m++) {
        for (int t = 0; t < BUSY_RETRIES; t++) {
            rc = try_socket(x, cfg->queue, modes[m], bind);
            if (rc != -EBUSY)
                break;
            /* Busy: someone's program arrived meanwhile (give up), or the
             * queue is still held by a socket being closed (wait). */
            if (foreign_program(ifindex, pname, sizeof pname, &pid))
                break;
            sleep_ms(10);
        }
        /* Native mode unsupported by the driver: the generic mode is next. */
        if (rc != -EOPNOTSUPP || (f & HP_LINK_F_ZEROCOPY))
            break;
    }
    libxdp_set_print(old_xdp);
    libbpf_set_print(old_bpf);
    lib_said(said, sizeof said);
    pthread_mutex_unlock(&open_lock);
    if (rc == 0) {
        x->need_wakeup = bind & XDP_USE_NEED_WAKEUP;
        return 0;
    }

    const char *ifn = x->iface;
    if (rc == -EPERM || rc == -EACCES)
        return hp__link_fail(
            EPERM,
            "afxdp %s: needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (or CAP_SYS_ADMIN): "
            "run as root",
            ifn);
    if (rc == -EOPNOTSUPP && (f & HP_LINK_F_ZEROCOPY)) {
        char drv[32];
        driver_name(ifn, drv, sizeof drv);
        return hp__link_fail(EOPNOTSUPP,
                             "afxdp %s: the driver (%s) does not support zero-copy AF_XDP: open "
                             "without HP_LINK_F_ZEROCOPY (copy mode works on every interface)",
                             ifn, drv);
    }
    if (rc == -EINVAL) {
        long nq = queue_count(ifn);
        if (nq >= 0 && cfg->queue >= (unsigned long)nq)
            return hp__link_fail(EINVAL,
                                 "afxdp %s: no queue %u: the interface has %ld queue%s (0 to %ld)",
                                 ifn, cfg->queue, nq, nq == 1 ? "" : "s", nq - 1);
    }
    if (rc == -EBUSY) {
        if (foreign_program(ifindex, pname, sizeof pname, &pid))
            return hp__link_fail(
                EBUSY,
                "afxdp %s: an XDP program is already attached (%s, id %u); detach it "
                "first (ip link set dev %s xdp off; or xdpgeneric off)",
                ifn, pname, pid, ifn);
        return hp__link_fail(EBUSY, "afxdp %s: queue %u is in use by another AF_XDP socket%s", ifn,
                             cfg->queue, said);
    }
    if (rc == -ENOMEM || rc == -ENOBUFS)
        return hp__link_fail(
            -rc,
            "afxdp %s: cannot register %zu MiB of UMEM: %s (is RLIMIT_MEMLOCK too low? "
            "ulimit -l)%s",
            ifn, x->area_len >> 20, hp_strerror(rc), said);
    if (rc == -ENODEV || rc == -ENXIO)
        return hp__link_fail(ENODEV, "afxdp: no interface named %s", ifn);
    return hp__link_fail(-rc, "afxdp %s queue %u: cannot make the AF_XDP socket: %s%s", ifn,
                         cfg->queue, hp_strerror(rc), said);
}

struct hp_link *hp__afxdp_open(const struct hp_link_config *cfg)
{
    if (!cfg->iface || !cfg->iface[0])
        return hp__link_fail_null(EINVAL, "afxdp: no interface given (hp_link_config.iface)");
    const char *ifn = cfg->iface;
    if (strlen(ifn) >= IF_NAMESIZE)
        return hp__link_fail_null(ENODEV,
                                  "afxdp: no interface named %s (longer than %d characters)", ifn,
                                  IF_NAMESIZE - 1);
    uint32_t frame = cfg->frame_size ? cfg->frame_size : 4096;
    uint32_t ring = cfg->ring_size ? cfg->ring_size : 2048;
    uint32_t nframes = cfg->n_frames ? cfg->n_frames : 4 * ring;
    if ((cfg->flags & HP_LINK_F_COPY) && (cfg->flags & HP_LINK_F_ZEROCOPY))
        return hp__link_fail_null(
            EINVAL, "afxdp %s: HP_LINK_F_COPY and HP_LINK_F_ZEROCOPY exclude each other", ifn);
    if (frame != 2048 && frame != 4096)
        return hp__link_fail_null(
            EINVAL, "afxdp %s: frame_size %u: 2048 or 4096 (aligned UMEM chunks)", ifn, frame);
    if (nframes < 2 * ring || nframes > (1u << 22))
        return hp__link_fail_null(EINVAL,
                                  "afxdp %s: n_frames %u: from 2 x ring_size (%u) to 4194304", ifn,
                                  nframes, 2 * ring);
    unsigned ifindex = 0;
    int rc = hp__if_index(ifn, &ifindex);
    if (rc < 0)
        return hp__link_fail_null(ENODEV, "afxdp: no interface named %s", ifn);
    uint32_t mtu = 0;
    if ((rc = hp__if_mtu(ifn, &mtu)) < 0)
        return hp__link_fail_null(-rc, "afxdp %s: cannot read its MTU: %s", ifn, hp_strerror(rc));
    /* A received frame must fit its chunk after the kernel's headroom. */
    uint32_t max_mtu = frame - XDP_HEADROOM - HP__ETH_HDR - HP__VLAN_HDR;
    uint32_t want = cfg->mtu ? cfg->mtu : mtu;
    if (want > max_mtu)
        return hp__link_fail_null(EMSGSIZE,
                                  "afxdp %s: MTU %u does not fit %u-byte UMEM frames (at most %u: "
                                  "frame - 256 B of XDP headroom - 18 B of Ethernet header)%s",
                                  ifn, want, frame, max_mtu,
                                  frame == 2048 ? "; try frame_size 4096"
                                                : "; lower the interface's MTU");
    if (want < 68)
        return hp__link_fail_null(EINVAL, "afxdp %s: MTU %u is below IPv4's minimum of 68", ifn,
                                  want);
    if (want != mtu) {
        if ((rc = hp__if_set_mtu(ifn, want)) < 0)
            return hp__link_fail_null(-rc, "afxdp %s: cannot set the MTU to %u: %s", ifn, want,
                                      hp_strerror(rc));
        mtu = want;
    }

    struct afxdp *x = aligned_alloc(64, (sizeof *x + 63) & ~(size_t)63);
    if (!x)
        return hp__link_fail_null(ENOMEM, "afxdp %s: out of memory", ifn);
    memset(x, 0, sizeof *x);
    snprintf(x->iface, sizeof x->iface, "%s", ifn);
    x->frame_size = frame;
    x->frame_shift = (uint32_t)__builtin_ctz(frame);
    x->chunk_mask = ~(uint64_t)(frame - 1);
    x->ring_size = ring;
    x->n_frames = nframes;
    x->area_len = (size_t)nframes * frame;
    x->max_frame = mtu + HP__ETH_HDR + HP__VLAN_HDR;
    x->txc = cfg->flags & HP_LINK_F_TX_COMPLETIONS;
    atomic_init(&x->tx_seq, 0);
    x->held = calloc(nframes, sizeof *x->held);
    x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (x->area == MAP_FAILED || !x->held) {
        size_t mib = x->area_len >> 20;
        if (x->area != MAP_FAILED)
            munmap(x->area, x->area_len);
        free((void *)x->held);
        free(x);
        return hp__link_fail_null(ENOMEM, "afxdp %s: cannot map %zu MiB of UMEM", ifn, mib);
    }
    char pname[48];
    snprintf(pname, sizeof pname, "afxdp-%s-q%u", ifn, cfg->queue);
    struct hp_pool_config pc = {.name = pname,
                                .mem = x->area,
                                .mem_len = x->area_len,
                                .chunk = frame};
    struct hp_pool *pool = hp_pool_create(&pc);
    if (!pool) {
        int e = errno;
        munmap(x->area, x->area_len);
        free((void *)x->held);
        free(x);
        return hp__link_fail_null(e, "afxdp %s: cannot make the UMEM pool: %s", ifn,
                                  hp_strerror(e));
    }
    /* The pool is ours, not hp_link_close's: afxdp_close destroys it and
     * unmaps the UMEM only if that worked. The completion queue of copying
     * backends is not needed: completions come from the kernel's ring. */
    struct hp_link_config lc = *cfg;
    lc.pool = pool;
    lc.flags &= ~(unsigned)HP_LINK_F_TX_COMPLETIONS;
    lc.mtu = mtu;
    rc = hp__link_init(&x->l, &afxdp_ops, &lc, ifn); /* with a pool given, nothing to fail */
    x->l.flags = cfg->flags;
    x->l.mtu = mtu;

    if (rc == 0)
        rc = make_socket(x, cfg, ifindex);
    if (rc < 0) {
        hp_pool_destroy(pool);
        munmap(x->area, x->area_len);
        free((void *)x->held);
        free(x);
        errno = -rc;
        return NULL;
    }
    x->l.fd = xsk_socket__fd(x->xsk);
    (void)hp__if_mac(ifn, x->l.mac);
    x->l.caps = HP_LINK_CAP_ZEROCOPY_TX | HP_LINK_CAP_ZEROCOPY_RX | HP_LINK_CAP_TX_COMPLETIONS |
                HP_LINK_CAP_FD | HP_LINK_CAP_KERNEL |
                (x->need_wakeup ? HP_LINK_CAP_NEED_WAKEUP : 0);
    refill(x);
    return &x->l;
}

#endif /* HP_HAVE_LIBXDP */
