/* SPDX-License-Identifier: BSD-3-Clause */
/* The link layer's common part: dispatch through the operations table, errors, completion queues. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../base/debug.h"
#include "internal.h"

/* The reasons of failed link calls go through the library's one log
 * channel (log.h): hp_last_error() keeps them per thread. */
HP_API const char *hp_link_error(void)
{
    return hp_last_error();
}

int hp__link_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[384];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hp__fail(err, "link", "%s", msg);
}

void *hp__link_fail_null(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[384];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hp__fail_null(err, "link", "%s", msg);
}

/* ---- single-producer, single-consumer rings ---------------------------- */

struct hp__spsc *hp__spsc_create(uint32_t size)
{
    if (size < 2 || (size & (size - 1)))
        return NULL;
    struct hp__spsc *r = aligned_alloc(64, (sizeof *r + size * sizeof(void *) + 63) & ~(size_t)63);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    r->mask = size - 1;
    return r;
}

void hp__spsc_destroy(struct hp__spsc *r)
{
    if (!r)
        return;
    struct hp_buf *b[64];
    unsigned k;
    while ((k = hp__spsc_pop(r, b, 64)) > 0)
        hp_buf_free_bulk(b, k);
    free(r);
}

unsigned hp__spsc_push(struct hp__spsc *r, struct hp_buf *const *bufs, unsigned n)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t size = r->mask + 1;
    uint32_t room = size - (head - r->tail_cache);
    if (room < n) {
        /* Only now read the consumer's line. */
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        room = size - (head - r->tail_cache);
        if (n > room)
            n = room;
    }
    for (unsigned i = 0; i < n; i++)
        r->slot[(head + i) & r->mask] = bufs[i];
    atomic_store_explicit(&r->head, head + n, memory_order_release);
    return n;
}

unsigned hp__spsc_pop(struct hp__spsc *r, struct hp_buf **bufs, unsigned n)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t avail = r->head_cache - tail;
    if (avail < n) {
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        avail = r->head_cache - tail;
        if (n > avail)
            n = avail;
    }
    for (unsigned i = 0; i < n; i++)
        bufs[i] = r->slot[(tail + i) & r->mask];
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
    return n;
}

unsigned hp__spsc_avail(struct hp__spsc *r)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
    return r->head_cache - tail;
}

/* ---- common part of every link ----------------------------------------- */

int hp__link_init(struct hp_link *l, const struct hp__link_ops *ops,
                  const struct hp_link_config *cfg, const char *name)
{
    l->ops = ops;
    l->flags = cfg->flags;
    l->fd = -1;
    l->mtu = cfg->mtu ? cfg->mtu : 1500;
    snprintf(l->name, sizeof l->name, "%s", name ? name : ops->kind);
    if (cfg->pool) {
        l->pool = cfg->pool;
    } else {
        char pname[48];
        snprintf(pname, sizeof pname, "%s-%s", ops->kind, l->name);
        struct hp_pool_config pc = {.name = pname, .n_bufs = 4096, .data_room = 2048};
        l->pool = hp_pool_create(&pc);
        if (!l->pool)
            return hp__link_fail(errno, "%s %s: cannot create its pool: %s", ops->kind, l->name,
                                 hp_strerror(errno));
        l->own_pool = true;
    }
    if (cfg->flags & HP_LINK_F_TX_COMPLETIONS) {
        uint32_t size = cfg->ring_size ? cfg->ring_size : 1024;
        l->compq = hp__spsc_create(size * 2);
        if (!l->compq) {
            hp__link_fini(l);
            return hp__link_fail(ENOMEM, "%s %s: cannot create its completion queue", ops->kind,
                                 l->name);
        }
    }
    return 0;
}

void hp__link_fini(struct hp_link *l)
{
    hp__spsc_destroy(l->compq);
    l->compq = NULL;
    if (l->own_pool && l->pool)
        hp_pool_destroy(l->pool);
    l->pool = NULL;
    l->own_pool = false;
}

void hp__link_complete(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    if (!l->compq) {
        hp_buf_free_bulk(bufs, n);
        return;
    }
    unsigned k = hp__spsc_push(l->compq, bufs, n);
    if (k < n) {
        /* The backend took more than hp__link_tx_room(): our bug. Freeing
         * keeps the buffers accounted for. */
        l->st.tx_dropped += n - k;
        hp_buf_free_bulk(bufs + k, n - k);
    }
}

unsigned hp__link_tx_room(struct hp_link *l)
{
    if (!l->compq)
        return UINT32_MAX;
    uint32_t head = atomic_load_explicit(&l->compq->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&l->compq->tail, memory_order_acquire);
    return l->compq->mask + 1 - (head - tail);
}

/* ---- the public calls ------------------------------------------------- */

HP_API struct hp_link *hp_link_open(const char *kind, const struct hp_link_config *cfg)
{
    static const struct hp_link_config zero;
    if (!cfg)
        cfg = &zero;
    if (!kind)
        return hp__link_fail_null(EINVAL,
                                  "no link kind given (mem, tap, afpacket, afxdp or memif)");
    if (cfg->ring_size && (cfg->ring_size < 2 || (cfg->ring_size & (cfg->ring_size - 1))))
        return hp__link_fail_null(EINVAL, "%s: ring_size %u is not a power of two >= 2", kind,
                                  cfg->ring_size);
    if (!strcmp(kind, "tap"))
        return hp__tap_open(cfg);
    if (!strcmp(kind, "afpacket"))
        return hp__afpacket_open(cfg);
    if (!strcmp(kind, "afxdp"))
        return hp__afxdp_open(cfg);
    if (!strcmp(kind, "memif"))
        return hp__memif_open(cfg);
    if (!strcmp(kind, "mem"))
        return hp__link_fail_null(EINVAL, "mem links come in pairs: use hp_link_mem_pair()");
    return hp__link_fail_null(EINVAL, "unknown link kind '%s' (mem, tap, afpacket, afxdp or memif)",
                              kind);
}

HP_API int hp_link_close(struct hp_link *l)
{
    if (!l)
        return 0;
    int rc = l->ops->close(l);
    hp__spsc_destroy(l->compq);
    if (l->own_pool) {
        int r = hp_pool_destroy(l->pool);
        if (r < 0)
            rc = r;
        /* -EBUSY: buffers are still held somewhere; leak the pool rather
         * than unmap memory under them. */
    }
    free(l);
    return rc;
}

HP_API int hp_link_rx_burst(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    return l->ops->rx(l, bufs, n);
}

HP_API int hp_link_tx_burst(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    return l->ops->tx(l, bufs, n);
}

HP_API int hp_link_completions(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    if (l->ops->completions)
        return l->ops->completions(l, bufs, n);
    if (!l->compq)
        return 0;
    return (int)hp__spsc_pop(l->compq, bufs, n);
}

HP_API int hp_link_fd(const struct hp_link *l)
{
    return l->fd;
}

HP_API int hp_link_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    int64_t due = -1;
    int rc;
    if (l->ops->prepare_sleep)
        rc = l->ops->prepare_sleep(l, &due);
    else
        rc = l->fd >= 0 ? 0 : -EOPNOTSUPP;
    if (due_ns)
        *due_ns = due;
    return rc;
}

HP_API bool hp_link_up(const struct hp_link *l)
{
    for (const struct hp_link *x = l; x; x = x->inner)
        if (x->ops->is_up)
            return x->ops->is_up(x);
    return true;
}

HP_API const char *hp_link_kind(const struct hp_link *l)
{
    return l->ops->kind;
}

HP_API const char *hp_link_name(const struct hp_link *l)
{
    return l->name;
}

HP_API struct hp_pool *hp_link_pool(const struct hp_link *l)
{
    return l->pool;
}

HP_API unsigned hp_link_caps(const struct hp_link *l)
{
    return l->caps;
}

HP_API uint32_t hp_link_mtu(const struct hp_link *l)
{
    return l->mtu;
}

HP_API int hp_link_set_mtu(struct hp_link *l, uint32_t mtu)
{
    uint32_t room = hp_pool_data_room(l->pool);
    uint32_t limit =
        room > 128 + HP__ETH_HDR + HP__VLAN_HDR ? room - 128 - HP__ETH_HDR - HP__VLAN_HDR : 0;
    if (mtu < 68)
        return hp__link_fail(EINVAL, "%s %s: MTU %u is below IPv4's minimum of 68", l->ops->kind,
                             l->name, mtu);
    /* Frames are received into one buffer: the MTU must fit it. */
    if (mtu > limit && strcmp(l->ops->kind, "pcap") && strcmp(l->ops->kind, "fault"))
        return hp__link_fail(EMSGSIZE,
                             "%s %s: MTU %u does not fit the pool's %u-byte buffers (at most %u)",
                             l->ops->kind, l->name, mtu, room, limit);
    if (l->ops->set_mtu) {
        int rc = l->ops->set_mtu(l, mtu);
        if (rc < 0)
            return rc;
    }
    l->mtu = mtu;
    return 0;
}

HP_API void hp_link_mac(const struct hp_link *l, uint8_t mac[6])
{
    memcpy(mac, l->mac, 6);
}

HP_API void hp_link_stats(const struct hp_link *l, struct hp_link_stats *out)
{
    *out = l->st;
    if (l->ops->stats)
        l->ops->stats(l, out);
}

/* ---- frames ------------------------------------------------------------- */

unsigned hp__frame_iov(const struct hp_buf *b, struct iovec *iov, unsigned max)
{
    uint64_t sum = 0;
    unsigned k = 0;
    for (const struct hp_buf *s = b; s; s = s->next) {
        if (k == UINT16_MAX || (uint64_t)s->data_off + s->data_len > s->room)
            return 0;
        if (k < max) {
            iov[k].iov_base = s->base + s->data_off;
            iov[k].iov_len = s->data_len;
        }
        sum += s->data_len;
        k++;
        if (sum > b->pkt_len)
            return 0;
    }
    if (sum != b->pkt_len)
        return 0;
    return k <= max ? k : max + 1;
}

bool hp__gather(unsigned char **bounce, uint32_t *bounce_len, const struct hp_buf *b,
                struct iovec *iov)
{
    if (*bounce_len < b->pkt_len) {
        unsigned char *p = realloc(*bounce, b->pkt_len);
        if (!p)
            return false;
        *bounce = p;
        *bounce_len = b->pkt_len;
    }
    if (hp_buf_copy_out(b, 0, b->pkt_len, *bounce) < 0)
        return false;
    iov->iov_base = *bounce;
    iov->iov_len = b->pkt_len;
    return true;
}

/* ---- interface helpers -------------------------------------------------- */

static int if_ioctl(const char *name, unsigned long req, struct ifreq *ifr)
{
    if (!name || strlen(name) >= IFNAMSIZ)
        return -EINVAL;
    memset(ifr->ifr_name, 0, IFNAMSIZ);
    memcpy(ifr->ifr_name, name, strlen(name));
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = ioctl(fd, req, ifr) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int hp__if_index(const char *name, unsigned *index)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    int rc = if_ioctl(name, SIOCGIFINDEX, &ifr);
    if (rc == 0)
        *index = (unsigned)ifr.ifr_ifindex;
    return rc;
}

int hp__if_mtu(const char *name, uint32_t *mtu)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    int rc = if_ioctl(name, SIOCGIFMTU, &ifr);
    if (rc == 0)
        *mtu = (uint32_t)ifr.ifr_mtu;
    return rc;
}

int hp__if_set_mtu(const char *name, uint32_t mtu)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_mtu = (int)mtu;
    return if_ioctl(name, SIOCSIFMTU, &ifr);
}

int hp__if_mac(const char *name, uint8_t mac[6])
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    int rc = if_ioctl(name, SIOCGIFHWADDR, &ifr);
    if (rc == 0)
        memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    return rc;
}

int hp__if_up(const char *name)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    int rc = if_ioctl(name, SIOCGIFFLAGS, &ifr);
    if (rc < 0)
        return rc;
    if (ifr.ifr_flags & IFF_UP)
        return 0;
    ifr.ifr_flags |= IFF_UP;
    return if_ioctl(name, SIOCSIFFLAGS, &ifr);
}
