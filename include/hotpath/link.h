/* SPDX-License-Identifier: BSD-3-Clause */
/* Links: how hp_bufs leave and enter a stack (memory pairs, TAP, AF_PACKET, AF_XDP, and decorators). */
#ifndef HOTPATH_LINK_H
#define HOTPATH_LINK_H

#include <stdint.h>

#include <hotpath/buf.h>
#include <hotpath/common.h>
#include <hotpath/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A link moves whole Ethernet frames (no FCS) between hp_bufs and something
 * else: another link in the same process (`mem`), a TAP device (`tap`), any
 * Linux interface through AF_PACKET (`afpacket`) or AF_XDP (`afxdp`), or
 * another process through shared memory (`memif`: DPDK, VPP, hotpath).
 * Decorators wrap any link (`pcap`, `fault`) and are links themselves.
 *
 * Threading: one thread calls hp_link_rx_burst(), hp_link_tx_burst() and
 * everything else on a link (the thread of the stack that owns it). The only
 * exception is hp_link_completions(), which one other thread may call at the
 * same time (a completion thread), when the link was opened with
 * HP_LINK_F_TX_COMPLETIONS.
 *
 * Every link has a pool (hp_link_pool()): received frames arrive in its
 * buffers, and transmitting buffers from it is zero-copy where the backend
 * can (afxdp: the pool *is* the UMEM). Buffers from any other pool are
 * accepted too and copied where the backend needs it.
 */
struct hp_link;

/** Opening flags (hp_link_config.flags). */
enum {
    /** Transmitted buffers are not freed by the link but handed back through
     * hp_link_completions(), possibly to another thread. */
    HP_LINK_F_TX_COMPLETIONS = 0x1,
    /** afxdp: require zero-copy mode (fail with -EOPNOTSUPP when the driver
     * cannot); without this or HP_LINK_F_COPY the kernel chooses.
     * memif client: the link's pool is a shared region, so that frames
     * from it cross without a copy; the server can then write the pool's
     * buffer metadata too, so use it only with a server you trust
     * (docs/memif.md). A memif server fails with EOPNOTSUPP. */
    HP_LINK_F_ZEROCOPY = 0x2,
    /** afxdp: force copy mode. */
    HP_LINK_F_COPY = 0x4,
    /** afxdp: attach the XDP program in generic (SKB) mode, which every
     * driver supports; without it, native mode is tried first. */
    HP_LINK_F_XDP_SKB = 0x8,
    /** afxdp: do not use the need-wakeup flag (kick the kernel on every
     * transmit burst, and let it poll the fill ring itself). */
    HP_LINK_F_NO_NEED_WAKEUP = 0x10,
    /** tap: attach to an existing persistent device only, never create one. */
    HP_LINK_F_TAP_ATTACH = 0x20,
};

/** Capabilities (hp_link_caps()). */
enum {
    HP_LINK_CAP_ZEROCOPY_TX = 0x1,    /**< pool buffers go out without a copy */
    HP_LINK_CAP_ZEROCOPY_RX = 0x2,    /**< frames arrive without a copy */
    HP_LINK_CAP_TX_COMPLETIONS = 0x4, /**< hp_link_completions() returns sent buffers */
    HP_LINK_CAP_NEED_WAKEUP = 0x8,    /**< afxdp need-wakeup is in use */
    HP_LINK_CAP_FD = 0x10,            /**< hp_link_fd() is pollable for receive */
    HP_LINK_CAP_KERNEL = 0x20,        /**< frames go to and come from the Linux kernel */
};

/** memif roles (hp_memif_config.role). */
enum hp_memif_role {
    /** Connects to the socket and makes the shared memory (DPDK's default role). */
    HP_MEMIF_CLIENT = 0,
    /** Listens on the socket and maps the memory of the client that connects. */
    HP_MEMIF_SERVER = 1,
};

/** memif receive notification (hp_memif_config.rx_mode); see hp_link_fd(). */
enum hp_memif_rx_mode {
    /** Poll while frames arrive. Once hp_link_fd() has been asked for, a
     * hp_link_rx_burst() that finds nothing asks the peer to write the
     * ring's eventfd after its next burst (and a burst that finds frames
     * asks it to stop): an event loop that sleeps on hp_link_fd() after an
     * empty receive is woken by the next frame. */
    HP_MEMIF_RX_AUTO = 0,
    /** Never ask for interrupts: for busy pollers. hp_link_fd() still wakes
     * on control events (peer connected, gone). */
    HP_MEMIF_RX_POLL = 1,
    /** Always ask (the peer writes the eventfd after every burst). */
    HP_MEMIF_RX_INTERRUPT = 2,
};

/**
 * memif: the shared-memory packet interface of VPP, libmemif and DPDK's
 * net_memif (docs/memif.md). A zeroed structure asks for the defaults.
 */
struct hp_memif_config {
    int role; /**< enum hp_memif_role; default HP_MEMIF_CLIENT */
    /** The control socket's path; "@NAME" names NAME in the abstract
     * namespace (DPDK's socket-abstract=yes). NULL: "/run/vpp/memif.sock",
     * VPP's and libmemif's default. A server replaces a stale socket file
     * (one nobody listens on) and removes its file on close. */
    const char *socket;
    uint32_t id; /**< interface id: which interface on the socket (default 0) */
    /** Shared secret, at most 24 bytes; NULL or "": none. A server with a
     * secret refuses clients without the same one. */
    const char *secret;
    /** Client: bytes of each shared buffer (copy mode); 0: 2048. Frames
     * longer than a buffer are chained over several descriptors. In
     * zero-copy mode, the data room of the pool's buffers (headroom
     * included: a descriptor offers the room after the headroom). */
    uint32_t buffer_size;
    /** Rings per direction: the client asks for this many (the server may
     * allow fewer), the server allows at most this many; 0: 1, at most 16.
     * Transmit spreads frames by hp_buf.hash; receive polls every ring. */
    uint16_t queues;
    /** Client: how often to try again while no server answers, and after
     * the peer went away; 0: 100 ms. */
    uint32_t reconnect_ms;
    int rx_mode; /**< enum hp_memif_rx_mode; default HP_MEMIF_RX_AUTO */
};

/** Opening parameters. A zeroed structure asks for every default. */
struct hp_link_config {
    /** Interface: tap: the device to create or attach to (NULL: the kernel
     * names it, tapN); afpacket, afxdp: an existing interface (required);
     * mem: the name of the first end (NULL: "mem0"; the second is "mem1"). */
    const char *iface;
    /** Receive buffers come from this pool. NULL: the link creates its own
     * (4096 buffers of 2048 bytes; afxdp: its UMEM pool, see n_frames) and
     * destroys it on close. afxdp ignores this field: its pool must be its
     * UMEM. Owned by the caller when given: it must outlive the link. */
    struct hp_pool *pool;
    uint32_t queue;               /**< afxdp: the interface queue to bind to (default 0) */
    uint32_t ring_size;           /**< ring entries, a power of two; 0: 1024 (afxdp,
                          * afpacket: 2048). The mem pair: each direction.
                          * memif: the client's rings (at most 16384); a
                          * server takes rings up to this size (0: 16384). */
    uint32_t n_frames;            /**< afxdp: UMEM frames; 0: 4 x ring_size. memif
                          * zero-copy: the pool's buffers; 0: 4096 or
                          * 4 x ring_size x 2 x queues, the larger */
    uint32_t frame_size;          /**< afxdp: UMEM frame size, 2048 or 4096; 0: 4096 */
    uint32_t mtu;                 /**< 0: the interface's MTU (mem: 1500; tap: 1500) */
    unsigned flags;               /**< HP_LINK_F_* */
    struct hp_memif_config memif; /**< memif only */
};

/** Counters, like the kernel's per-interface statistics. */
struct hp_link_stats {
    uint64_t rx_packets, rx_bytes;
    uint64_t tx_packets, tx_bytes;
    uint64_t rx_dropped; /**< frames lost on receive: no buffer, or the kernel's count
                            * of frames it could not queue to us (afxdp, afpacket) */
    uint64_t rx_errors;  /**< frames we refused: larger than the MTU or the buffer */
    uint64_t tx_dropped; /**< frames accepted by tx_burst but not sent (too large, refused) */
    uint64_t tx_errors;  /**< transmit system calls that failed (other than "try again") */
    uint64_t tx_full;    /**< tx_burst calls that could not take every buffer */
    uint64_t wakeups;    /**< system calls made to kick the kernel */
};

/** Where a frame went through a decorator; for hp_link_fault_stats(). */
struct hp_fault_stats {
    uint64_t seen; /**< frames that passed through (both directions) */
    uint64_t dropped, duplicated, reordered, corrupted, delayed;
};

/**
 * Fault injection rates: each is a probability in [0, 1], applied on
 * transmit and receive independently, from a generator seeded with `seed`
 * (the same seed gives the same faults for the same traffic).
 */
struct hp_fault_config {
    uint64_t seed;
    double drop;         /**< the frame is freed and counted */
    double duplicate;    /**< a copy follows the frame */
    double reorder;      /**< the frame is held back and sent after the next one */
    double corrupt;      /**< one random byte of the frame is flipped */
    double delay;        /**< the frame is held for delay_us microseconds */
    uint32_t delay_us;   /**< 0: 1000 */
    unsigned directions; /**< HP_FAULT_TX | HP_FAULT_RX; 0: both */
};
#define HP_FAULT_TX 0x1
#define HP_FAULT_RX 0x2

/**
 * Open a link of the given kind: "tap", "afpacket", "afxdp" or "memif" (for
 * "mem", see hp_link_mem_pair()).
 *
 * memif (cfg->memif): a server binds and listens at once; a client
 * connects at once if a server is there, else later: the link opens down
 * and comes up when the handshake ends, driven by hp_link_rx_burst() and
 * hp_link_tx_burst() (see hp_link_up()). Frames sent while it is down are
 * dropped and counted (tx_dropped, hp_memif_stats.tx_down).
 * @return the link, or NULL with errno set: EINVAL (bad configuration),
 *         ENODEV (no such interface), EPERM (missing privilege: the message
 *         names the capability), EOPNOTSUPP (backend not built in, or a mode
 *         the interface lacks), EMSGSIZE (MTU too large), ENOMEM,
 *         EADDRINUSE (memif server: a live server already listens there).
 *         hp_link_error() gives the reason as a sentence.
 */
HP_API struct hp_link *hp_link_open(const char *kind, const struct hp_link_config *cfg);

/**
 * Open two connected in-memory links: what one transmits, the other
 * receives, zero-copy (the hp_buf pointers cross over lock-free
 * single-producer, single-consumer rings). Each end may run on its own
 * thread. The ends share one pool (cfg->pool, or one they create and destroy
 * with the last end closed).
 * @return 0, or -EINVAL / -ENOMEM (hp_link_error() says why).
 */
HP_API int hp_link_mem_pair(const struct hp_link_config *cfg, struct hp_link *ends[2]);

/**
 * Wrap `inner` so that every frame received and transmitted is written to a
 * pcap file at `path` (microsecond timestamps, Ethernet link type), which
 * tshark and Wireshark read. The new link owns `inner` (closing it closes
 * inner) unless the call fails, in which case the caller still owns it.
 * @return the link, or NULL with errno (the file cannot be created).
 */
HP_API struct hp_link *hp_link_pcap(struct hp_link *inner, const char *path);

/**
 * Wrap `inner` with seeded fault injection (see hp_fault_config). Owns
 * `inner` on success, like hp_link_pcap(). Frames held for reordering go out
 * behind the next frame of their direction (or in place on the next burst
 * call); delayed frames go out on the first burst call after they are due;
 * both are freed on close. Delayed received frames do not make hp_link_fd()
 * readable: a caller sleeping in poll() should wake at least every delay_us.
 * Duplicates come back through hp_link_completions() like any sent frame.
 * @return the link, or NULL with errno EINVAL (a rate outside [0, 1]) or ENOMEM.
 */
HP_API struct hp_link *hp_link_fault(struct hp_link *inner, const struct hp_fault_config *cfg);

/** The fault decorator's counters; -EINVAL when l is not a fault decorator. */
HP_API int hp_link_fault_stats(const struct hp_link *l, struct hp_fault_stats *out);

/**
 * Close a link: buffers it still holds (receive rings, fill rings, pending
 * transmissions, completions nobody collected) go back to their pools; the
 * pool is destroyed if the link created it.
 * @return 0, or -EBUSY when the link's own pool still has buffers out (it is
 *         then leaked rather than freed under their holders). NULL is a no-op.
 */
HP_API int hp_link_close(struct hp_link *l);

/**
 * Receive up to n frames. The caller owns the buffers returned.
 * @return the number received (0 when none is waiting), or -errno on a
 *         failure of the link itself (-ENETDOWN, -ENXIO for a device gone).
 */
HP_API int hp_link_rx_burst(struct hp_link *l, struct hp_buf **bufs, unsigned n);

/**
 * Transmit up to n frames, in order. The link takes bufs[0 .. r-1] where r is
 * the return value; the caller still owns bufs[r .. n-1] (ring full: try
 * again later). A frame taken but unsendable (larger than the MTU plus the
 * Ethernet header, or refused by the kernel) is freed and counted in
 * tx_dropped. Chained buffers are sent as one frame.
 * @return r >= 0, or -errno on a failure of the link itself.
 */
HP_API int hp_link_tx_burst(struct hp_link *l, struct hp_buf **bufs, unsigned n);

/**
 * With HP_LINK_F_TX_COMPLETIONS: hand back up to n buffers whose
 * transmission is complete; the caller owns them (free or reuse them). May
 * run on one thread other than the link's. Without the flag, or on links
 * without HP_LINK_CAP_TX_COMPLETIONS (mem: the peer owns what it receives),
 * returns 0.
 */
HP_API int hp_link_completions(struct hp_link *l, struct hp_buf **bufs, unsigned n);

/**
 * A file descriptor to poll(2) / epoll for receive readiness (POLLIN), or -1
 * (no HP_LINK_CAP_FD). To sleep on it, call hp_link_prepare_sleep() first:
 * some kinds (mem, afxdp with need-wakeup) make it readable only for a
 * sleeper that armed them.
 *
 * It may also become readable for the link's own events (memif: a control
 * message, a peer connecting or gone, a retry timer): after it does, call
 * hp_link_rx_burst(), which handles them, before sleeping again.
 */
HP_API int hp_link_fd(const struct hp_link *l);

/**
 * Prepare to sleep on hp_link_fd(). A thread that found nothing to receive
 * and wants to block in poll(2) / epoll for POLLIN on the link's fd calls
 * this right before, every time (an event loop does: see loop.h).
 * @param due_ns out (may be NULL): the nanoseconds after which the link must
 *        be polled again even if its fd stays quiet (the fault decorator's
 *        delayed frames), or -1 when there is no such time.
 * @return > 0: work is already waiting (a frame to receive, or frames held
 *         that the next burst call releases): poll instead of sleeping.
 *         0: armed: the fd becomes readable when a frame arrives. A wake-up
 *         may be spurious; frames are taken with hp_link_rx_burst() as
 *         usual, and the next sleep arms again (no disarming call).
 *         -EOPNOTSUPP: the link has no fd that can wake a sleeper (poll it,
 *         or sleep in short naps); another -errno on a failure of the link.
 *
 * What each kind does:
 *   mem       its fd is an eventfd. Arming drains it, sets a "sleeping" flag
 *             that the peer's transmit reads after each enqueue (and clears,
 *             signalling the eventfd, when set), then looks at the ring
 *             again. The fast path pays one load and a barrier per transmit
 *             burst, no system call.
 *   tap       the device fd is readable while a frame is queued: nothing to arm.
 *   afpacket  the socket is readable while the RX_RING has a frame for us;
 *             arming looks at the ring's next slot.
 *   afxdp     the XSK fd is readable while the RX ring has descriptors; arming
 *             kicks the kernel when the fill ring (or transmit ring) has the
 *             need-wakeup flag, then looks at the RX ring.
 *   memif     its fd is an epoll set over the control socket, the listener,
 *             a retry timer and the receive rings' eventfds. Arming asks the
 *             peer for receive interrupts (a ring flag the peer reads after
 *             it enqueued), then looks at the rings again. A peer whose
 *             transmit reads that flag without a full barrier (DPDK 22.11's)
 *             can in rare races leave a frame until its next burst: sleep
 *             with a timeout, as a loop with timers does anyway.
 *   pcap      the inner link's.
 *   fault     the inner link's, > 0 when frames held for reordering or
 *             frames whose delay has passed wait, and *due_ns is the time
 *             left on the earliest delayed frame (either direction).
 *
 * The contract for a backend (memif and any other; hp__link_ops.prepare_sleep
 * in src/link/internal.h):
 *   - never block, and stay cheap: it runs once per sleep, not per burst;
 *   - after it returns 0, a frame that arrives (or that arrived before and
 *     that rx_burst would return) makes the fd readable, level-triggered,
 *     until rx_burst took it or prepare_sleep is called again;
 *   - drain the backend's own wake-up signal here, before arming, so that a
 *     stale signal does not keep a sleeper awake; then look for frames again
 *     after arming (a frame enqueued between the last rx_burst and the arming
 *     must be seen: return > 0);
 *   - the fast path (rx_burst, tx_burst) pays no system call for it: a
 *     shared-memory peer signals only when this end said it sleeps (a flag
 *     written here and read by the peer after it enqueued, with a full
 *     barrier on both sides between the write and the read);
 *   - work the link owes without new frames (a kick the kernel needs for the
 *     fill or transmit ring, held frames) is done here or reported as > 0.
 */
HP_API int hp_link_prepare_sleep(struct hp_link *l, int64_t *due_ns);

/**
 * Whether the link carries frames now: true for every kind but memif
 * (decorators: their inner link's), which is up between the end of its
 * handshake and the peer's disconnection or crash.
 */
HP_API bool hp_link_up(const struct hp_link *l);

/** memif counters and state, beside hp_link_stats(); see hp_link_memif_stats(). */
struct hp_memif_stats {
    uint64_t connects;    /**< times the link came up */
    uint64_t disconnects; /**< times it went down (DISCONNECT, the peer's crash, our refusal) */
    uint64_t refused;     /**< connections refused (wrong id, secret or version, busy, timeout) */
    uint64_t bad_msgs;    /**< control messages refused: malformed, unexpected, out of range */
    uint64_t bad_descs;   /**< descriptors refused: region, offset or length outside the shared
                            * memory or the buffer offered (the frame is dropped) */
    uint64_t ring_errors; /**< ring indices that jumped or ran backwards (the link goes down) */
    uint64_t tx_down;     /**< frames dropped because the link was down */
    uint64_t tx_unread;   /**< frames in our transmit rings the peer had not taken when the
                            * link went down (client only: a server cannot tell) */
    uint64_t rx_nobuf;    /**< receive bursts cut short by an empty pool (frames wait) */
    uint64_t tx_copied;   /**< zero-copy: frames copied because they were not in the pool */
    uint64_t irq_sent;    /**< eventfd writes to wake the peer */
    uint64_t irq_armed;   /**< times receive interrupts were asked of the peer */
    bool up;
    bool server;
    bool zero_copy;
    uint16_t queues;    /**< rings per direction in use (0 while down) */
    uint32_t ring_size; /**< entries per ring in use (0 while down) */
    char peer_name[33]; /**< the peer's application, as it says ("DPDK 22.11.11") */
    char peer_if[33];   /**< the peer's interface name */
    char reason[97];    /**< why the link last went down ("" before) */
};

/**
 * Copy a memif link's counters and state (decorators: their inner link's).
 * @return 0, or -EINVAL when l is not a memif link.
 */
HP_API int hp_link_memif_stats(const struct hp_link *l, struct hp_memif_stats *out);

/** The link's kind: "mem", "tap", "afpacket", "afxdp", "memif", "pcap" or "fault". */
HP_API const char *hp_link_kind(const struct hp_link *l);
/** The interface name (for decorators, the inner link's). */
HP_API const char *hp_link_name(const struct hp_link *l);
/** The link's pool (see above). Never NULL. */
HP_API struct hp_pool *hp_link_pool(const struct hp_link *l);
/** HP_LINK_CAP_* of the link. */
HP_API unsigned hp_link_caps(const struct hp_link *l);
/** The MTU: the largest frame is the MTU plus 14 bytes of Ethernet header (18 with 802.1Q). */
HP_API uint32_t hp_link_mtu(const struct hp_link *l);
/**
 * Change the MTU. @return 0, -EMSGSIZE when larger than the pool's buffers or
 * the backend allows, -EPERM when the interface's MTU cannot be changed by us.
 */
HP_API int hp_link_set_mtu(struct hp_link *l, uint32_t mtu);
/** The link's MAC address (the interface's; mem: a locally administered one). */
HP_API void hp_link_mac(const struct hp_link *l, uint8_t mac[6]);
/** Copy the link's counters (decorators: the inner link's). */
HP_API void hp_link_stats(const struct hp_link *l, struct hp_link_stats *out);

/**
 * The reason for the last failure of hp_link_open(), hp_link_mem_pair() or a
 * decorator on this thread, as a sentence naming the interface and what to
 * do ("afxdp: needs CAP_NET_ADMIN and CAP_NET_RAW: run as root"). Never NULL.
 * The same text as hp_last_error() (log.h), which covers every layer: link
 * failures are recorded there and logged at HP_LOG_DEBUG like any other.
 */
HP_API const char *hp_link_error(void);

#ifdef __cplusplus
}
#endif
#endif
