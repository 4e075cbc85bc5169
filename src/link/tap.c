/* SPDX-License-Identifier: BSD-3-Clause */
/* The tap link: whole Ethernet frames through a Linux TAP device (/dev/net/tun), one read or write per frame. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

/*
 * The link is the far end of a wire whose near end is the kernel's tap
 * interface: what we write, the interface receives (its rx counters grow);
 * what the kernel sends out of the interface, we read.
 *
 * The link's MAC is therefore not the interface's (that one belongs to the
 * kernel side) but a locally administered unicast address of our own,
 * 02:68:74:xx:yy:zz: 0x02 sets the "locally administered" bit and clears the
 * group bit, 0x68 0x74 are "ht" (hotpath tap), and xx:yy:zz are the low 24
 * bits of the tap interface's index, which is unique in its namespace. Taps of
 * two namespaces bridged into one segment could share an index, hence a MAC:
 * give such setups addresses of their own.
 */

#define TAP_DEV "/dev/net/tun"
/* Segments written with one writev(); longer chains are gathered first. */
#define TAP_IOV 64
/* Sent buffers are handed to hp__link_complete in groups of this many. */
#define TAP_DONE_BATCH 64

struct tap_link {
    struct hp_link l;
    /* A buffer kept between rx calls for the next read, so that polling an
     * idle tap costs no allocation and free. Freed on close. */
    struct hp_buf *spare;
    /* Gathers frames of more than TAP_IOV segments; grown on demand. */
    unsigned char *bounce;
    uint32_t bounce_len;
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
 * Whether a checked frame may be sent: at most the MTU plus the Ethernet
 * header, or 4 more when it carries an 802.1Q or 802.1ad tag (like a VLAN
 * interface on the kernel side would accept), and at least a header.
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
    /* Only frames in the last 4 bytes of room need their EtherType read. */
    uint8_t et[2];
    if (hp_buf_copy_out(b, 12, 2, et) < 0)
        return false;
    return (et[0] == 0x81 && et[1] == 0x00) || (et[0] == 0x88 && et[1] == 0xa8);
}

/* Errors that mean the device itself is gone or unusable, rather than one
 * frame being refused. */
static bool device_gone(int err)
{
    return err == EBADFD || err == ENXIO || err == ENODEV || err == ENETDOWN;
}

/*
 * Receive: one readv() per frame into the data room of a buffer, until the
 * kernel has nothing more (EAGAIN), n frames are read, or the pool is empty.
 * A frame larger than the buffer is read truncated: Linux then returns the
 * frame's full length, and a one-byte overflow slot after the room catches a
 * kernel that would return only what it copied; either way a count above the
 * room means a truncated frame, counted in rx_errors. Running out of buffers
 * loses nothing: the frames wait in the tap's queue (the kernel counts its own
 * drops when that fills).
 */
static int tap_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct tap_link *t = (struct tap_link *)l;
    uint32_t max = l->mtu + HP__ETH_HDR + HP__VLAN_HDR;
    unsigned got = 0;
    uint64_t bytes = 0;
    int err = 0;
    while (got < n) {
        struct hp_buf *b = t->spare;
        if (!b) {
            b = hp_buf_alloc(l->pool);
            if (!b)
                break;
            t->spare = b;
        }
        uint32_t cap = b->room - b->data_off;
        unsigned char over;
        struct iovec iov[2] = {{hp_buf_data(b), cap}, {&over, 1}};
        ssize_t r = readv(l->fd, iov, 2);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                err = errno;
            break;
        }
        if ((size_t)r > cap || (size_t)r > max || (size_t)r < HP__ETH_HDR) {
            /* Truncated, above the MTU, or not even a header: refused, and
             * the spare buffer serves the next read. */
            l->st.rx_errors++;
            continue;
        }
        b->data_len = (uint32_t)r;
        b->pkt_len = (uint32_t)r;
        t->spare = NULL;
        bufs[got++] = b;
        bytes += (uint64_t)r;
    }
    l->st.rx_packets += got;
    l->st.rx_bytes += bytes;
    if (got == 0 && err)
        return device_gone(err) ? -ENXIO : -err;
    return (int)got;
}

/*
 * Transmit: one writev() per frame (its segments as the vector), in order.
 * Sent buffers go to hp__link_complete (freed, or queued for
 * hp_link_completions()); with completions on, no more are taken than the
 * queue has room for. Unsendable frames (too long or short, malformed chain,
 * refused by the kernel) are taken, freed and counted in tx_dropped. "Try
 * again" stops the burst: the caller keeps the rest.
 */
static int tap_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct tap_link *t = (struct tap_link *)l;
    unsigned room = hp__link_tx_room(l);
    unsigned want = n < room ? n : room;
    struct hp_buf *done[TAP_DONE_BATCH];
    unsigned nd = 0, i;
    uint64_t bytes = 0, sent = 0;
    int fail = 0;
    for (i = 0; i < want; i++) {
        struct hp_buf *b = bufs[i];
        struct iovec iov[TAP_IOV];
        unsigned k = b ? hp__frame_iov(b, iov, TAP_IOV) : 0;
        if (k == 0 || !frame_fits(l, b)) {
            l->st.tx_dropped++;
            hp_buf_free(b);
            continue;
        }
        if (k > TAP_IOV) {
            if (!hp__gather(&t->bounce, &t->bounce_len, b, iov)) {
                l->st.tx_dropped++;
                hp_buf_free(b);
                continue;
            }
            k = 1;
        }
        ssize_t r;
        do
            r = writev(l->fd, iov, (int)k);
        while (r < 0 && errno == EINTR);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r < 0 && device_gone(errno)) {
            l->st.tx_errors++;
            fail = ENXIO;
            break;
        }
        if (r != (ssize_t)b->pkt_len) {
            /* Refused (or, never seen, cut short): the frame is lost. */
            l->st.tx_errors++;
            l->st.tx_dropped++;
            hp_buf_free(b);
            continue;
        }
        sent++;
        bytes += b->pkt_len;
        done[nd++] = b;
        if (nd == TAP_DONE_BATCH) {
            hp__link_complete(l, done, nd);
            nd = 0;
        }
    }
    if (nd)
        hp__link_complete(l, done, nd);
    l->st.tx_packets += sent;
    l->st.tx_bytes += bytes;
    if (i < n)
        l->st.tx_full++;
    if (i == 0 && fail)
        return -fail;
    return (int)i;
}

/* Change the tap interface's MTU (the bound against the pool is checked by
 * hp_link_set_mtu before). */
static int tap_set_mtu(struct hp_link *l, uint32_t mtu)
{
    int rc = hp__if_set_mtu(l->name, mtu);
    if (rc == -EPERM || rc == -EACCES)
        return hp__link_fail(EPERM, "tap %s: changing its MTU needs CAP_NET_ADMIN: run as root",
                             l->name);
    if (rc < 0)
        return hp__link_fail(-rc, "tap %s: cannot set its MTU to %u: %s", l->name, mtu,
                             hp_strerror(-rc));
    return 0;
}

/* Free the spare buffer and the bounce buffer, and close the device: a tap
 * we created disappears with its last descriptor, a persistent one stays. */
static int tap_close(struct hp_link *l)
{
    struct tap_link *t = (struct tap_link *)l;
    hp_buf_free(t->spare);
    t->spare = NULL;
    free(t->bounce);
    t->bounce = NULL;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    return 0;
}

/* The device fd polls readable while the kernel has a frame queued for us,
 * and writes are synchronous: nothing to arm, nothing held. */
static int tap_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    (void)l;
    (void)due_ns;
    return 0;
}

static const struct hp__link_ops tap_ops = {
    .kind = "tap",
    .rx = tap_rx,
    .tx = tap_tx,
    .prepare_sleep = tap_prepare_sleep,
    .set_mtu = tap_set_mtu,
    .close = tap_close,
};

/* Open /dev/net/tun, non-blocking, to reach the device `what`: the
 * descriptor, or -1 with errno and the message set. */
static int open_clone_device(const char *what)
{
    int fd = open(TAP_DEV, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int e = errno;
    if (e == ENOENT || e == ENXIO || e == ENODEV)
        hp__link_fail_null(
            EOPNOTSUPP,
            "tap %s: cannot open %s (%s): this kernel has no TUN/TAP support (modprobe tun)", what,
            TAP_DEV, hp_strerror(e));
    else if (e == EACCES || e == EPERM)
        hp__link_fail_null(EPERM, "tap %s: cannot open %s: permission denied: run as root", what,
                           TAP_DEV);
    else
        hp__link_fail_null(e, "tap %s: cannot open %s: %s", what, TAP_DEV, hp_strerror(e));
    return -1;
}

/* Attach fd to the device `want` (NULL: a new one the kernel names tapN)
 * and store its name in name[IFNAMSIZ]. -1 with errno and a message. */
static int set_iff(int fd, const char *want, bool exists, char name[IFNAMSIZ])
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    /* No packet information header: reads and writes are bare frames. No
     * IFF_TUN_EXCL: an existing device is attached to, not an error. */
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (want)
        memcpy(ifr.ifr_name, want, strlen(want));
    if (ioctl(fd, TUNSETIFF, &ifr) == 0) {
        memcpy(name, ifr.ifr_name, IFNAMSIZ);
        name[IFNAMSIZ - 1] = '\0';
        return 0;
    }
    int e = errno;
    const char *what = want ? want : "a tap device";
    if (e == EPERM || e == EACCES) {
        if (exists)
            hp__link_fail_null(
                EPERM,
                "tap: attaching to %s needs CAP_NET_ADMIN (or to own the device): run as root",
                what);
        else
            hp__link_fail_null(EPERM, "tap: creating %s needs CAP_NET_ADMIN: run as root", what);
    } else if (e == EINVAL && exists) {
        hp__link_fail_null(EINVAL, "tap: %s exists and is not a tap device", what);
    } else if (e == EBUSY) {
        hp__link_fail_null(EBUSY, "tap: %s is already attached to another descriptor", what);
    } else {
        hp__link_fail_null(e, "tap: cannot %s %s: %s", exists ? "attach to" : "create", what,
                           hp_strerror(e));
    }
    return -1;
}

/* Bring the interface up and give it the MTU asked for, or take its own.
 * 0 or -errno with the message set. */
static int setup_interface(struct hp_link *l, const struct hp_link_config *cfg)
{
    uint32_t limit = pool_mtu_limit(l->pool), cur = 0;
    int rc = hp__if_mtu(l->name, &cur);
    if (rc < 0)
        return hp__link_fail(-rc, "tap %s: cannot read its MTU: %s", l->name, hp_strerror(-rc));
    if (cfg->mtu) {
        if (cfg->mtu < 68)
            return hp__link_fail(EINVAL, "tap %s: MTU %u is below IPv4's minimum of 68", l->name,
                                 cfg->mtu);
        if (cfg->mtu > limit)
            return hp__link_fail(
                EMSGSIZE, "tap %s: MTU %u does not fit the pool's %u-byte buffers (at most %u)",
                l->name, cfg->mtu, hp_pool_data_room(l->pool), limit);
        if (cur != cfg->mtu && (rc = tap_set_mtu(l, cfg->mtu)) < 0)
            return rc;
        l->mtu = cfg->mtu;
    } else {
        if (cur > limit)
            return hp__link_fail(
                EMSGSIZE,
                "tap %s: its MTU %u does not fit the pool's %u-byte buffers (at most %u): "
                "give cfg->mtu or a pool with larger buffers",
                l->name, cur, hp_pool_data_room(l->pool), limit);
        l->mtu = cur;
    }
    rc = hp__if_up(l->name);
    if (rc == -EPERM || rc == -EACCES)
        return hp__link_fail(EPERM, "tap %s: bringing it up needs CAP_NET_ADMIN: run as root",
                             l->name);
    if (rc < 0)
        return hp__link_fail(-rc, "tap %s: cannot bring it up: %s", l->name, hp_strerror(-rc));
    return 0;
}

/* Choose the link's MAC (see the top of this file): 02:68:74 and the
 * interface index, made different from the interface's own if it happens to
 * be equal. */
static void choose_mac(struct hp_link *l)
{
    unsigned idx = 0;
    uint8_t kernel[6] = {0};
    (void)hp__if_index(l->name, &idx);
    (void)hp__if_mac(l->name, kernel);
    uint8_t mac[6] = {0x02, 0x68, 0x74, (uint8_t)(idx >> 16), (uint8_t)(idx >> 8), (uint8_t)idx};
    if (memcmp(mac, kernel, 6) == 0)
        mac[2] ^= 0x80;
    memcpy(l->mac, mac, 6);
}

struct hp_link *hp__tap_open(const struct hp_link_config *cfg)
{
    const char *want = cfg->iface;
    unsigned allowed = HP_LINK_F_TX_COMPLETIONS | HP_LINK_F_TAP_ATTACH;
    if (cfg->flags & ~allowed)
        return hp__link_fail_null(EINVAL, "tap: flags 0x%x are for other backends",
                                  cfg->flags & ~allowed);
    if (want && (!*want || strlen(want) >= IFNAMSIZ))
        return hp__link_fail_null(EINVAL,
                                  "tap: interface name '%s' is empty or longer than %d characters",
                                  want, IFNAMSIZ - 1);
    bool attach = cfg->flags & HP_LINK_F_TAP_ATTACH;
    if (attach && !want)
        return hp__link_fail_null(
            EINVAL, "tap: HP_LINK_F_TAP_ATTACH needs cfg->iface, the device to attach to");
    /* Whether the device exists decides between attaching and creating.
     * Asked through a socket of the calling thread's network namespace,
     * which /sys/class/net does not follow after setns(). */
    unsigned idx;
    bool exists = want && hp__if_index(want, &idx) == 0;
    if (attach && !exists)
        return hp__link_fail_null(ENODEV,
                                  "tap: no interface named %s to attach to (create it first: "
                                  "ip tuntap add dev %s mode tap)",
                                  want, want);

    int fd = open_clone_device(want ? want : "(new device)");
    if (fd < 0)
        return NULL;
    char name[IFNAMSIZ];
    if (set_iff(fd, want, exists, name) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    struct tap_link *t = calloc(1, sizeof *t);
    if (!t) {
        close(fd);
        return hp__link_fail_null(ENOMEM, "tap %s: out of memory", name);
    }
    int rc = hp__link_init(&t->l, &tap_ops, cfg, name);
    if (rc < 0) {
        close(fd);
        free(t);
        errno = -rc;
        return NULL;
    }
    t->l.fd = fd;
    rc = setup_interface(&t->l, cfg);
    if (rc < 0) {
        tap_close(&t->l);
        hp__link_fini(&t->l);
        free(t);
        errno = -rc;
        return NULL;
    }
    choose_mac(&t->l);
    t->l.caps = HP_LINK_CAP_FD | HP_LINK_CAP_KERNEL | HP_LINK_CAP_TX_COMPLETIONS;
    return &t->l;
}
