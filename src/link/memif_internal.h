/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link's state, shared by its data path (memif.c) and its control channel (memif_ctl.c). */
#ifndef HOTPATH_LINK_MEMIF_INTERNAL_H
#define HOTPATH_LINK_MEMIF_INTERNAL_H

#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "internal.h"
#include "memif_proto.h"

#define MEMIF_DEFAULT_SOCKET "/run/vpp/memif.sock"
#define MEMIF_DEFAULT_BSIZE  2048u
#define MEMIF_DEFAULT_LOG2   10   /* client: 1024 entries per ring */
#define MEMIF_HANDSHAKE_MS   3000 /* a peer that has not finished its handshake by then is dropped */
#define MEMIF_SERVICE_NS     1000000 /* busy pollers look at the control channel every millisecond */
#define MEMIF_SETUP_MAX      (1 + HP__MEMIF_MAX_REGIONS + 2 * HP__MEMIF_MAX_QUEUES + 1)

/*
 * One ring as this end uses it. Our own indices are private copies: what
 * sits in shared memory is only ever written from them, and what the peer
 * writes there (its index, descriptors) is read once, checked, then used.
 *
 *                 producer index      consumer index
 *   C2S ring      head (client)       tail (server)
 *   S2C ring      tail (server)       head (client: the buffers it offers)
 */
struct memif_queue {
    struct hp__memif_ring *ring; /* in shared memory; NULL while down */
    struct hp__memif_desc *desc;
    uint32_t size, mask;
    uint16_t prod;        /* tx: the next slot we fill */
    uint16_t cons;        /* rx: the next slot we read */
    uint16_t offered;     /* client rx (S2C): the head we gave (slots offered up to it) */
    uint16_t reclaim;     /* zero-copy tx: slots up to here are back from the peer */
    bool masked;          /* rx: MASK_INT as we last wrote it */
    int irq_fd;           /* the ring's eventfd: ours to close */
    uint32_t buf0;        /* client copy mode: offset of slot 0's buffer in region 0 */
    struct hp_buf **slot; /* client zero-copy: the buffer behind each slot */
};

/* One step of the client's setup, waiting for its ACK: a message and the
 * descriptor that goes with it (not ours to close: it is a region's or a
 * ring's). */
struct memif_out {
    uint8_t msg[HP__MEMIF_MSG_SIZE];
    int fd;
};

/* A region we map: the client's memfds (server), or ours (client). */
struct memif_region_map {
    int fd; /* -1: none (or the zero-copy pool's, which the link keeps) */
    void *base;
    uint64_t size; /* as mapped */
};

struct memif_link {
    struct hp_link l;
    /* ---- data path --------------------------------------------------- */
    bool up;
    bool server;
    bool zc;             /* client zero-copy: region 1 is the pool */
    bool armed;          /* interrupts asked for: service on the next rx */
    uint16_t n_rx, n_tx; /* rings in use (our receive and transmit sides) */
    unsigned rx_next;    /* the receive ring to start with */
    unsigned calls;      /* rx + tx calls, to pace the service */
    uint64_t next_service_ns;
    uint32_t bsize;     /* client copy mode: bytes per slot buffer */
    uint32_t max_frame; /* MTU + Ethernet and VLAN headers */
    int rx_mode;
    struct memif_queue rx[HP__MEMIF_MAX_QUEUES], tx[HP__MEMIF_MAX_QUEUES];
    struct hp__memif_region reg[HP__MEMIF_MAX_REGIONS];
    unsigned n_reg;
    struct hp_memif_stats ms;
    unsigned bad_logged; /* bad descriptors logged in this connection */
    /* ---- control --------------------------------------------------------- */
    int epfd, listen_fd, ctl_fd, timer_fd;
    struct sockaddr_un addr;
    socklen_t addr_len;
    bool abstract;
    char sock_name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
    struct hp__memif_hs hs;
    struct memif_region_map map[HP__MEMIF_MAX_REGIONS];
    unsigned n_map;
    struct memif_out out[MEMIF_SETUP_MAX];
    unsigned n_out, next_out; /* client: setup messages, the next to send */
    uint32_t reconnect_ms;
    uint64_t handshake_deadline_ns; /* 0: no handshake in progress */
    /* zero-copy: the pool's shared memory, kept over reconnections */
    int pool_fd;
    void *pool_mem;
    size_t pool_len;
    char what[64];        /* "memif client /run/x.sock id 0", for messages */
    char last_logged[64]; /* the last refusal logged (see log_now) */
};

/* ---- shared memory accesses (what the peer writes is read once) -------- */

static inline uint16_t ld_acq(const uint16_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void st_rel(uint16_t *p, uint16_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* One read of a descriptor the peer may be writing: two 8-byte loads the
 * compiler cannot repeat. */
static inline struct hp__memif_desc desc_read(const struct hp__memif_desc *p)
{
    const volatile uint64_t *w = (const volatile uint64_t *)(const void *)p;
    uint64_t v[2] = {w[0], w[1]};
    struct hp__memif_desc d;
    memcpy(&d, v, sizeof d);
    return d;
}

static inline void desc_write(struct hp__memif_desc *p, uint16_t flags, uint16_t region,
                              uint32_t len, uint32_t off)
{
    p->flags = flags;
    p->region = region;
    p->length = len;
    p->offset = off;
}

/* ---- memif_ctl.c --------------------------------------------------------- */

/* Set up the control side of a newly opened link: the epoll set (the
 * link's fd), the timer, then listen (server) or try to connect (client).
 * 0 or -errno with the message set. */
int hp__memif_ctl_open(struct memif_link *m, const struct hp_link_config *cfg);
/* Handle whatever the control side has waiting: messages, connections,
 * the timer, and clear the eventfds. Never blocks. */
void hp__memif_service(struct memif_link *m);
/* Take the link down: tell the peer why (when send_reason), stop the data
 * path, unmap, close the channel; a client arms its retry timer. */
void hp__memif_down(struct memif_link *m, const char *reason, bool send_reason);
/* The receive rings' eventfds join the link's epoll set while up. */
void hp__memif_watch_irqs(struct memif_link *m, bool on);
/* Close everything of the control side (the link is being closed). */
void hp__memif_ctl_close(struct memif_link *m);
uint64_t hp__memif_now_ns(void);

/* ---- memif.c ------------------------------------------------------------- */

/* After a successful handshake (regions mapped, rings checked): point the
 * queues at the rings and bring the link up. 0 or -errno. */
int hp__memif_start(struct memif_link *m);
/* Before the regions go away: stop the data path, give back every buffer
 * the rings held, count what the peer had not taken. */
void hp__memif_stop(struct memif_link *m);
/* Log a refusal of the peer's data (rate limited per connection). */
void hp__memif_bad(struct memif_link *m, uint64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A ring index of the peer's out of range: counted, logged, link down. */
void hp__memif_ring_error(struct memif_link *m, const char *what, uint16_t was, uint16_t now);

/*
 * hp_link_prepare_sleep() for memif, by the contract in link.h of the
 * branch that has it (the event loop's): drain the control channel, the
 * timer and the receive eventfds; unless the link is down, clear
 * MASK_INT on the receive rings, a full barrier, one more look at them.
 * > 0: frames wait; 0: armed (a frame, a control message, a peer arriving
 * or the client's retry timer makes the fd readable); -EOPNOTSUPP in
 * HP_MEMIF_RX_POLL mode (nothing would wake a sleeper). A receive that
 * finds frames masks the rings again (HP_MEMIF_RX_AUTO). Until that
 * branch is merged, hp_link_fd() plus an empty hp_link_rx_burst() do the
 * same (rx_idle in memif.c).
 */
int hp__memif_prepare_sleep(struct hp_link *l, int64_t *due_ns);

/* ---- memif_tx.c ---------------------------------------------------------- */

/* The link's transmit (hp_link_tx_burst). */
int hp__memif_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n);
/* Zero-copy: take back from every ring what the server is done with. */
void hp__memif_zc_collect(struct memif_link *m);

/* ---- the control side's turn, from the data path ---------------------- */

/* Busy pollers look at the control channel every millisecond (a clock read
 * every 64 calls while up), and zero-copy collects what the server gave
 * back, so that buffers return even when nothing more is sent; after an
 * empty receive that asked for interrupts, the next call looks at once:
 * the caller may have slept. */
static inline void hp__memif_pace(struct memif_link *m)
{
    bool now = m->armed;
    m->armed = false;
    if (!now && ((++m->calls & 63) == 0 || !m->up))
        now = hp__memif_now_ns() >= m->next_service_ns;
    if (!now)
        return;
    hp__memif_service(m);
    if (m->zc && m->up)
        hp__memif_zc_collect(m);
}

#endif
