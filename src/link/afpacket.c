/* SPDX-License-Identifier: BSD-3-Clause */
/* The afpacket link: any Linux interface through a packet socket, a TPACKET_V3 receive ring and sendmmsg(). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/*
 * Receive ring geometry (TPACKET_V3). The kernel packs frames one after the
 * other into blocks, each taking only its own length plus a ~80-byte header,
 * and hands a block to us when it is full or when the retire timer expires.
 * ring_size counts nominal 2 KiB frames: the ring is ring_size x 2 KiB bytes
 * (4 MiB by default), cut into blocks of 128 KiB (smaller for small rings, so
 * that there are at least four), each at least large enough for the biggest
 * frame a pool buffer holds. Small frames pack many more per block than the
 * nominal count.
 *
 * The retire timeout is 1 ms, the shortest there is: a frame waits at most
 * that long in a block that is not full, which bounds the latency a request /
 * response exchange sees at low rates. The price is a kernel timer firing
 * every millisecond per open link, and blocks handed over part-filled at low
 * rates (the ring then holds fewer frames than nominal).
 *
 * Received frames are copied out of the ring into the link's pool, and the
 * block goes back to the kernel as soon as its last frame is copied. A
 * position inside the current block is kept between calls, so bursts of any
 * size work.
 *
 * The kernel moves a frame's 802.1Q tag out of the frame into the ring's
 * header; receive puts it back, so frames arrive as they were on the wire.
 *
 * Large receive offload (GRO, LRO) hands packet sockets frames longer than
 * the MTU: they are refused as too long (rx_errors). Turn it off on
 * interfaces this link uses (ethtool -K IF gro off lro off).
 */
#define AFP_NOMINAL_FRAME 2048u
#define AFP_BLOCK         131072u
#define AFP_MIN_BLOCKS    4u
#define AFP_RETIRE_MS     1u
#define AFP_MAX_RING      (1u << 18) /* 512 MiB of ring */
/* Frames per sendmmsg() call, and iovecs shared by those frames. */
#define AFP_BATCH 32
#define AFP_IOV   256

struct afp_link {
    struct hp_link l;
    unsigned ifindex;
    int page;
    uint8_t *ring;
    size_t ring_len;
    uint32_t block_size, block_nr;
    /* Receive position: block blk, opened (in_block) with `left` frames not
     * yet read, the next at byte `pos` of the block. */
    uint32_t blk, left, pos;
    bool in_block;
    /* PACKET_IGNORE_OUTGOING is missing (kernels before 4.20): our own
     * transmissions come back through the ring and are skipped by hand. */
    bool filter_outgoing;
    /* The kernel's count of frames it could not queue to the ring. Reading
     * PACKET_STATISTICS resets it, so the counts are added up here. */
    uint64_t kernel_drops;
    /* Gathers a frame of more than AFP_IOV segments; grown on demand. */
    unsigned char *bounce;
    uint32_t bounce_len;
    struct mmsghdr msg[AFP_BATCH];
    struct iovec iov[AFP_IOV];
};

/* The largest MTU whose frames fit one buffer of the pool: the same bound
 * hp_link_set_mtu() applies (headroom and a VLAN-tagged header kept free). */
static uint32_t pool_mtu_limit(struct hp_pool *pool)
{
    uint32_t room = hp_pool_data_room(pool);
    uint32_t reserve = 128 + HP__ETH_HDR + HP__VLAN_HDR;
    return room > reserve ? room - reserve : 0;
}

/*
 * Fill bufs[0 .. want) from the pool: in one bulk call when it has that
 * many (the bulk call is all or nothing), else one at a time for as many as
 * it has. @return how many were allocated.
 */
static unsigned take_bufs(struct hp_pool *pool, struct hp_buf **bufs, unsigned want)
{
    if (want == 0)
        return 0;
    if (hp_buf_alloc_bulk(pool, bufs, want) == (int)want)
        return want;
    unsigned k = 0;
    while (k < want && (bufs[k] = hp_buf_alloc(pool)) != NULL)
        k++;
    return k;
}

/* The descriptor of block i of the ring. */
static struct tpacket_block_desc *block_at(const struct afp_link *a, uint32_t i)
{
    return (struct tpacket_block_desc *)(void *)(a->ring + (size_t)i * a->block_size);
}

/* Give the current block back to the kernel and move to the next. The
 * release store orders our reads of the block before the kernel's reuse. */
static void release_block(struct afp_link *a)
{
    struct tpacket_block_desc *bd = block_at(a, a->blk);
    __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    a->blk = a->blk + 1 == a->block_nr ? 0 : a->blk + 1;
    a->in_block = false;
}

/* The outcome of copying one frame of the ring. */
enum { FRAME_TAKEN, FRAME_REFUSED, FRAME_SKIPPED };

/*
 * Copy the frame h (of a block whose end is `end` bytes after h) into b,
 * putting back an 802.1Q tag the kernel took out. Refuses (rx_errors) frames
 * the kernel truncated, frames longer than the MTU plus a tagged header or
 * than the buffer, and frames shorter than a header.
 */
static int copy_frame(struct afp_link *a, const struct tpacket3_hdr *h, size_t end,
                      struct hp_buf *b)
{
    struct hp_link *l = &a->l;
    if (a->filter_outgoing) {
        const struct sockaddr_ll *sll =
            (const void *)((const uint8_t *)h + TPACKET_ALIGN(sizeof(struct tpacket3_hdr)));
        if (sll->sll_pkttype == PACKET_OUTGOING)
            return FRAME_SKIPPED;
    }
    uint32_t snap = h->tp_snaplen, status = h->tp_status;
    bool tagged = status & TP_STATUS_VLAN_VALID;
    uint32_t len = snap + (tagged ? HP__VLAN_HDR : 0);
    uint32_t cap = b->room - b->data_off;
    if ((size_t)h->tp_mac + snap > end || snap < h->tp_len || snap < HP__ETH_HDR ||
        len > l->mtu + HP__ETH_HDR + HP__VLAN_HDR || len > cap)
        return FRAME_REFUSED;
    const uint8_t *src = (const uint8_t *)h + h->tp_mac;
    uint8_t *dst = hp_buf_data(b);
    if (tagged) {
        uint16_t tpid = (status & TP_STATUS_VLAN_TPID_VALID) ? h->hv1.tp_vlan_tpid : ETH_P_8021Q;
        uint16_t tci = h->hv1.tp_vlan_tci;
        memcpy(dst, src, 12);
        dst[12] = (uint8_t)(tpid >> 8);
        dst[13] = (uint8_t)tpid;
        dst[14] = (uint8_t)(tci >> 8);
        dst[15] = (uint8_t)tci;
        memcpy(dst + 16, src + 12, snap - 12);
    } else {
        memcpy(dst, src, snap);
    }
    b->data_len = len;
    b->pkt_len = len;
    /* A frame the kernel itself sent (over veth, say) may carry a partial L4
     * checksum, to be finished by a NIC that never comes (CSUMNOTREADY); or
     * the kernel verified it already (CSUM_VALID). Either way the L4
     * checksum is not to be verified again: it would fail on the first. */
    if (status & (TP_STATUS_CSUMNOTREADY | TP_STATUS_CSUM_VALID))
        b->ol_flags |= HP_BUF_OL_L4_CKSUM_GOOD;
    return FRAME_TAKEN;
}

/*
 * Receive: walk the frames of the current block (tp_next_offset), copying
 * each into a buffer, and return the block to the kernel once read to the
 * end. Stops when n frames are taken, the ring is empty, or the pool has no
 * buffer left: then the frames stay in the ring for the next call, and
 * nothing is lost by us (the kernel counts what it cannot queue, added to
 * rx_dropped by hp_link_stats).
 */
static int afp_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct afp_link *a = (struct afp_link *)l;
    unsigned got = 0;
    uint64_t bytes = 0;
    while (got < n) {
        struct tpacket_block_desc *bd = block_at(a, a->blk);
        if (!a->in_block) {
            uint32_t st = __atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
            if (!(st & TP_STATUS_USER))
                break;
            a->left = bd->hdr.bh1.num_pkts;
            a->pos = bd->hdr.bh1.offset_to_first_pkt;
            a->in_block = true;
        }
        unsigned want = n - got < a->left ? n - got : a->left;
        unsigned have = take_bufs(l->pool, bufs + got, want);
        if (want && !have)
            break;
        unsigned used = 0;
        while (used < have && a->left) {
            /* The kernel wrote these offsets, but a bad one must not send
             * us outside the block: the rest of the block is dropped. */
            if ((size_t)a->pos + sizeof(struct tpacket3_hdr) + sizeof(struct sockaddr_ll) >
                a->block_size) {
                l->st.rx_errors++;
                a->left = 0;
                break;
            }
            const struct tpacket3_hdr *h = (const void *)((const uint8_t *)bd + a->pos);
            int r = copy_frame(a, h, a->block_size - a->pos, bufs[got + used]);
            a->left--;
            if (a->left && h->tp_next_offset == 0) {
                l->st.rx_errors += a->left;
                a->left = 0;
            }
            a->pos += h->tp_next_offset;
            if (r == FRAME_TAKEN) {
                bytes += bufs[got + used]->pkt_len;
                used++;
            } else if (r == FRAME_REFUSED) {
                l->st.rx_errors++;
            }
        }
        /* Buffers of refused or skipped frames go back. */
        if (used < have)
            hp_buf_free_bulk(bufs + got + used, have - used);
        got += used;
        if (a->left == 0)
            release_block(a);
    }
    l->st.rx_packets += got;
    l->st.rx_bytes += bytes;
    return (int)got;
}

/*
 * Whether a checked frame may be sent: at most the MTU plus the Ethernet
 * header, 4 more for an 802.1Q-tagged frame (the kernel's own rule for packet
 * sockets, which takes no extra length for other tags), and at least a header.
 */
static bool frame_fits(const struct hp_link *l, const struct hp_buf *b)
{
    uint32_t len = b->pkt_len, plain = l->mtu + HP__ETH_HDR;
    if (len < HP__ETH_HDR)
        return false;
    if (len <= plain)
        return true;
    if (len > plain + HP__VLAN_HDR)
        return false;
    uint8_t et[2];
    if (hp_buf_copy_out(b, 12, 2, et) < 0)
        return false;
    return et[0] == 0x81 && et[1] == 0x00;
}

/*
 * Prepare the batch that starts at bufs[0]: consecutive sendable frames, at
 * most AFP_BATCH of them and AFP_IOV segments in all. A frame that cannot be
 * sent ends the batch before it, so that whatever happens to the batch,
 * everything taken is a prefix of bufs. A frame of more segments than fit is
 * gathered into the bounce buffer and sent alone.
 * @return frames in the batch; 0 when bufs[0] itself is unsendable.
 */
static unsigned prepare_batch(struct afp_link *a, struct hp_buf **bufs, unsigned n)
{
    unsigned nb = 0, niov = 0;
    while (nb < n && nb < AFP_BATCH) {
        struct hp_buf *b = bufs[nb];
        if (!b)
            break;
        unsigned space = AFP_IOV - niov;
        unsigned k = hp__frame_iov(b, a->iov + niov, space);
        if (k == 0 || !frame_fits(&a->l, b))
            break;
        bool alone = false;
        if (k > space) {
            if (nb > 0)
                break;
            if (!hp__gather(&a->bounce, &a->bounce_len, b, a->iov))
                break;
            k = 1;
            alone = true;
        }
        struct msghdr *m = &a->msg[nb].msg_hdr;
        memset(m, 0, sizeof *m);
        m->msg_iov = a->iov + niov;
        m->msg_iovlen = k;
        a->msg[nb].msg_len = 0;
        niov += k;
        nb++;
        if (alone)
            break;
    }
    return nb;
}

/*
 * Transmit: batches of frames through sendmmsg(), non-blocking, to the bound
 * interface (each frame's segments as one message's vector). The kernel
 * copies the data, so sent buffers go to hp__link_complete at once (freed,
 * or queued for hp_link_completions(); with completions on, no more are
 * taken than the queue holds). The send buffer full (EAGAIN) or a full queue
 * discipline (ENOBUFS, the frame not sent) stops the burst: the caller keeps
 * the rest. A frame refused (too long, malformed, or by the kernel) is taken,
 * freed and counted in tx_dropped.
 */
static int afp_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct afp_link *a = (struct afp_link *)l;
    unsigned room = hp__link_tx_room(l);
    unsigned want = n < room ? n : room;
    unsigned i = 0;
    uint64_t sent = 0, bytes = 0;
    int fail = 0;
    bool stop = false;
    while (i < want && !stop) {
        unsigned nb = prepare_batch(a, bufs + i, want - i);
        if (nb == 0) {
            l->st.tx_dropped++;
            hp_buf_free(bufs[i]);
            i++;
            continue;
        }
        /* msg[j] is bufs[start + j]; i advances as frames are taken. */
        unsigned start = i;
        while (i < start + nb) {
            int r = sendmmsg(l->fd, a->msg + (i - start), start + nb - i, MSG_DONTWAIT);
            if (r > 0) {
                for (unsigned j = i; j < i + (unsigned)r; j++)
                    bytes += bufs[j]->pkt_len;
                sent += (unsigned)r;
                hp__link_complete(l, bufs + i, (unsigned)r);
                i += (unsigned)r;
                continue;
            }
            int e = errno;
            if (e == EINTR)
                continue;
            if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) {
                stop = true;
                break;
            }
            l->st.tx_errors++;
            if (e == ENETDOWN || e == ENXIO || e == ENODEV) {
                /* The interface is down or gone: nothing more can go. */
                fail = e;
                stop = true;
                break;
            }
            /* The kernel refused this frame (EMSGSIZE after an MTU change
             * behind our back...): it is lost; go on with the next. */
            l->st.tx_dropped++;
            hp_buf_free(bufs[i]);
            i++;
        }
    }
    l->st.tx_packets += sent;
    l->st.tx_bytes += bytes;
    if (i < n)
        l->st.tx_full++;
    if (i == 0 && fail)
        return -fail;
    return (int)i;
}

/* Change the interface's MTU (the bound against the pool is checked by
 * hp_link_set_mtu before; the ring's blocks hold any frame that fits a pool
 * buffer, so the ring stays). */
static int afp_set_mtu(struct hp_link *l, uint32_t mtu)
{
    int rc = hp__if_set_mtu(l->name, mtu);
    if (rc == -EPERM || rc == -EACCES)
        return hp__link_fail(
            EPERM, "afpacket %s: changing its MTU needs CAP_NET_ADMIN: run as root", l->name);
    if (rc == -EINVAL)
        return hp__link_fail(EMSGSIZE, "afpacket %s: the interface refuses an MTU of %u", l->name,
                             mtu);
    if (rc < 0)
        return hp__link_fail(-rc, "afpacket %s: cannot set its MTU to %u: %s", l->name, mtu,
                             hp_strerror(-rc));
    return 0;
}

/* Add the kernel's drop count (frames it had no room for in the ring) to
 * rx_dropped. Called on the link's thread: the accumulator in the link's
 * private part is written through a cast (the link is never const itself). */
static void afp_stats(const struct hp_link *l, struct hp_link_stats *out)
{
    struct afp_link *a = (struct afp_link *)(uintptr_t)l;
    struct tpacket_stats_v3 ks;
    socklen_t len = sizeof ks;
    memset(&ks, 0, sizeof ks);
    if (l->fd >= 0 && getsockopt(l->fd, SOL_PACKET, PACKET_STATISTICS, &ks, &len) == 0)
        a->kernel_drops += ks.tp_drops;
    out->rx_dropped += a->kernel_drops;
}

/* Unmap the ring and close the socket. No buffer is held: frames are
 * copied out of the ring. */
static int afp_close(struct hp_link *l)
{
    struct afp_link *a = (struct afp_link *)l;
    if (a->ring)
        munmap(a->ring, a->ring_len);
    a->ring = NULL;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    free(a->bounce);
    a->bounce = NULL;
    return 0;
}

/*
 * Before a sleep: the socket polls readable while a block of the ring is
 * ours (the kernel closes a block that holds frames within AFP_RETIRE_MS and
 * then wakes the socket), so a frame already in our current block, or a
 * block handed over since the last receive, means no sleep.
 */
static int afp_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    struct afp_link *a = (struct afp_link *)l;
    (void)due_ns;
    if (a->in_block)
        return 1;
    uint32_t st = __atomic_load_n(&block_at(a, a->blk)->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
    return (st & TP_STATUS_USER) ? 1 : 0;
}

static const struct hp__link_ops afp_ops = {
    .kind = "afpacket",
    .rx = afp_rx,
    .tx = afp_tx,
    .prepare_sleep = afp_prepare_sleep,
    .set_mtu = afp_set_mtu,
    .stats = afp_stats,
    .close = afp_close,
};

/* The smallest power of two >= v (v <= 2^31). */
static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* Create the TPACKET_V3 receive ring (geometry: see the top of this file)
 * and map it. 0 or -errno with the message set. */
static int setup_ring(struct afp_link *a, uint32_t ring_size)
{
    struct hp_link *l = &a->l;
    int v = TPACKET_V3;
    if (setsockopt(l->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0)
        return hp__link_fail(EOPNOTSUPP, "afpacket %s: this kernel has no TPACKET_V3 rings: %s",
                             l->name, hp_strerror(errno));
    /* A block must hold the largest frame a buffer can take, plus the
     * ring's own headers. */
    uint32_t room = hp_pool_data_room(l->pool);
    uint32_t min_block = pow2_at_least((room < (1u << 22) ? room : (1u << 22)) + 256);
    if (min_block < (uint32_t)a->page)
        min_block = (uint32_t)a->page;
    uint64_t total = (uint64_t)ring_size * AFP_NOMINAL_FRAME;
    if (total < min_block)
        total = min_block;
    uint64_t block = AFP_BLOCK;
    if (block > total / AFP_MIN_BLOCKS)
        block = total / AFP_MIN_BLOCKS;
    if (block < min_block)
        block = min_block;
    a->block_size = (uint32_t)block;
    a->block_nr = (uint32_t)(total / block);
    struct tpacket_req3 req;
    memset(&req, 0, sizeof req);
    req.tp_block_size = a->block_size;
    req.tp_block_nr = a->block_nr;
    req.tp_frame_size = AFP_NOMINAL_FRAME;
    req.tp_frame_nr = (uint32_t)(total / AFP_NOMINAL_FRAME);
    req.tp_retire_blk_tov = AFP_RETIRE_MS;
    if (setsockopt(l->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) {
        int e = errno;
        return hp__link_fail(e == ENOMEM ? ENOMEM : e,
                             "afpacket %s: cannot create a receive ring of %u x %u bytes: %s",
                             l->name, a->block_nr, a->block_size, hp_strerror(e));
    }
    a->ring_len = (size_t)a->block_size * a->block_nr;
    void *p = mmap(NULL, a->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, l->fd, 0);
    if (p == MAP_FAILED)
        return hp__link_fail(errno, "afpacket %s: cannot map its receive ring: %s", l->name,
                             hp_strerror(errno));
    a->ring = p;
    return 0;
}

/* Options that can fail without harm, then bind to the interface. 0 or
 * -errno with the message set. */
static int setup_socket(struct afp_link *a, uint32_t ring_size)
{
    struct hp_link *l = &a->l;
    int one = 1;
    if (setsockopt(l->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        a->filter_outgoing = true;
    /* Room for a ring's worth of frames in flight to the driver: past it,
     * sends say EAGAIN. Forcing needs CAP_NET_ADMIN; otherwise the
     * system's cap (net.core.wmem_max) applies. */
    int sndbuf = (int)(ring_size < (1u << 15) ? ring_size * AFP_NOMINAL_FRAME : (1u << 26));
    if (setsockopt(l->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) < 0)
        (void)setsockopt(l->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    /* The socket was created for no protocol, so nothing entered the ring
     * before this: only the interface's frames ever do. */
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = (int)a->ifindex;
    if (bind(l->fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        int e = errno;
        return hp__link_fail(e == ENODEV ? ENODEV : e, "afpacket %s: cannot bind to it: %s",
                             l->name, hp_strerror(e));
    }
    return 0;
}

/* Take the interface's MAC, and its MTU or give it the one asked for.
 * 0 or -errno with the message set. */
static int setup_interface(struct afp_link *a, const struct hp_link_config *cfg)
{
    struct hp_link *l = &a->l;
    uint32_t limit = pool_mtu_limit(l->pool), cur = 0;
    int rc = hp__if_mac(l->name, l->mac);
    if (rc < 0)
        return hp__link_fail(-rc, "afpacket %s: cannot read its MAC address: %s", l->name,
                             hp_strerror(-rc));
    rc = hp__if_mtu(l->name, &cur);
    if (rc < 0)
        return hp__link_fail(-rc, "afpacket %s: cannot read its MTU: %s", l->name,
                             hp_strerror(-rc));
    if (cfg->mtu) {
        if (cfg->mtu < 68)
            return hp__link_fail(EINVAL, "afpacket %s: MTU %u is below IPv4's minimum of 68",
                                 l->name, cfg->mtu);
        if (cfg->mtu > limit)
            return hp__link_fail(
                EMSGSIZE,
                "afpacket %s: MTU %u does not fit the pool's %u-byte buffers (at most %u)", l->name,
                cfg->mtu, hp_pool_data_room(l->pool), limit);
        if (cur != cfg->mtu && (rc = afp_set_mtu(l, cfg->mtu)) < 0)
            return rc;
        l->mtu = cfg->mtu;
    } else {
        if (cur > limit)
            return hp__link_fail(
                EMSGSIZE,
                "afpacket %s: its MTU %u does not fit the pool's %u-byte buffers (at most %u): "
                "give cfg->mtu or a pool with larger buffers",
                l->name, cur, hp_pool_data_room(l->pool), limit);
        l->mtu = cur;
    }
    return 0;
}

struct hp_link *hp__afpacket_open(const struct hp_link_config *cfg)
{
    const char *ifname = cfg->iface;
    unsigned allowed = HP_LINK_F_TX_COMPLETIONS;
    if (cfg->flags & ~allowed)
        return hp__link_fail_null(EINVAL, "afpacket: flags 0x%x are for other backends",
                                  cfg->flags & ~allowed);
    if (!ifname || !*ifname)
        return hp__link_fail_null(
            EINVAL, "afpacket: no interface given (cfg->iface names an existing interface)");
    uint32_t ring_size = cfg->ring_size ? cfg->ring_size : 2048;
    if (ring_size > AFP_MAX_RING)
        return hp__link_fail_null(EINVAL, "afpacket %s: ring_size %u is too large (at most %u)",
                                  ifname, ring_size, AFP_MAX_RING);
    unsigned ifindex = 0;
    int rc = strlen(ifname) < IFNAMSIZ ? hp__if_index(ifname, &ifindex) : -ENODEV;
    if (rc == -ENODEV)
        return hp__link_fail_null(ENODEV, "afpacket: no interface named %s", ifname);
    if (rc < 0)
        return hp__link_fail_null(-rc, "afpacket %s: cannot look it up: %s", ifname,
                                  hp_strerror(-rc));

    /* Created for no protocol: nothing is queued to it until bind() names
     * the interface (see setup_socket). */
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        if (e == EPERM || e == EACCES)
            return hp__link_fail_null(EPERM, "afpacket %s: needs CAP_NET_RAW: run as root", ifname);
        if (e == EAFNOSUPPORT)
            return hp__link_fail_null(EOPNOTSUPP,
                                      "afpacket %s: this kernel has no AF_PACKET sockets", ifname);
        return hp__link_fail_null(e, "afpacket %s: cannot open a packet socket: %s", ifname,
                                  hp_strerror(e));
    }
    struct afp_link *a = calloc(1, sizeof *a);
    if (!a) {
        close(fd);
        return hp__link_fail_null(ENOMEM, "afpacket %s: out of memory", ifname);
    }
    rc = hp__link_init(&a->l, &afp_ops, cfg, ifname);
    if (rc < 0) {
        close(fd);
        free(a);
        errno = -rc;
        return NULL;
    }
    a->l.fd = fd;
    a->ifindex = ifindex;
    long page = sysconf(_SC_PAGESIZE);
    a->page = page > 0 && page < (1L << 24) ? (int)page : 4096;
    /* The interface's MTU is changed last, so that a failed open leaves it
     * as it was. */
    rc = setup_ring(a, ring_size);
    if (rc == 0)
        rc = setup_socket(a, ring_size);
    if (rc == 0)
        rc = setup_interface(a, cfg);
    if (rc < 0) {
        afp_close(&a->l);
        hp__link_fini(&a->l);
        free(a);
        errno = -rc;
        return NULL;
    }
    a->l.caps = HP_LINK_CAP_FD | HP_LINK_CAP_KERNEL | HP_LINK_CAP_TX_COMPLETIONS;
    return &a->l;
}
