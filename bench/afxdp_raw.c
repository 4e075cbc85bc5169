/* SPDX-License-Identifier: BSD-3-Clause */
/* A bare libxdp txonly loop in the manner of xdpsock -t, the peer of the afxdp link in `hotpath bench afxdp-raw`. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "afxdp_raw.h"
#include "harness.h"
#include "tool.h"

#ifndef HP_HAVE_LIBXDP

int afxdp_raw_txonly(const struct afxdp_raw_opts *o, struct afxdp_raw_result *r, char *why,
                     size_t why_len)
{
    (void)o;
    memset(r, 0, sizeof *r);
    snprintf(why, why_len,
             "this hotpath command was built without libxdp (HP_HAVE_LIBXDP undefined)");
    return -EOPNOTSUPP;
}

#else

#include <linux/if_link.h>
#include <net/if.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

/* xdpsock's defaults: 4096 frames of 4096 bytes, rings of 2048. */
#define NUM_FRAMES  4096
#define FRAME_SHIFT 12
#define FRAME_SIZE  (1u << FRAME_SHIFT)
#define RING_SIZE   2048
#define MAX_BATCH   256

struct raw {
    struct xsk_ring_prod fq, tx;
    struct xsk_ring_cons cq, rx;
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    uint8_t *area;
    int fd;
};

static int quiet_xdp(enum libxdp_print_level level, const char *fmt, va_list ap)
{
    (void)level, (void)fmt, (void)ap;
    return 0;
}

static int quiet_bpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level, (void)fmt, (void)ap;
    return 0;
}

/* A UMEM and a socket bound in copy mode with need-wakeup, xdpsock -t -c. */
static int try_open(struct raw *x, const struct afxdp_raw_opts *o, uint32_t xdp_flags)
{
    struct xsk_umem_config uc = {.fill_size = RING_SIZE,
                                 .comp_size = RING_SIZE,
                                 .frame_size = FRAME_SIZE};
    int rc =
        xsk_umem__create(&x->umem, x->area, (uint64_t)NUM_FRAMES * FRAME_SIZE, &x->fq, &x->cq, &uc);
    if (rc)
        return rc;
    struct xsk_socket_config sc = {.rx_size = RING_SIZE,
                                   .tx_size = RING_SIZE,
                                   .xdp_flags = xdp_flags,
                                   .bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP};
    rc = xsk_socket__create(&x->xsk, o->iface, o->queue, x->umem, &x->rx, &x->tx, &sc);
    if (rc) {
        xsk_umem__delete(x->umem);
        x->umem = NULL;
    }
    return rc;
}

/* Native XDP first unless asked for generic mode, generic when the driver
 * has no native mode; while a socket just closed still holds the queue
 * (released asynchronously), try again for up to a second. */
static int raw_open(struct raw *x, const struct afxdp_raw_opts *o, bool *skb)
{
    libxdp_print_fn_t ox = libxdp_set_print(quiet_xdp);
    libbpf_print_fn_t ob = libbpf_set_print(quiet_bpf);
    int rc = 0;
    for (int m = o->skb_mode ? 1 : 0; m < 2; m++) {
        *skb = m == 1;
        for (int t = 0; t < 100; t++) {
            rc = try_open(x, o, *skb ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
            if (rc != -EBUSY)
                break;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (rc != -EOPNOTSUPP)
            break;
    }
    libxdp_set_print(ox);
    libbpf_set_print(ob);
    if (rc == 0)
        x->fd = xsk_socket__fd(x->xsk);
    return rc;
}

static void raw_close(struct raw *x)
{
    libxdp_print_fn_t ox = libxdp_set_print(quiet_xdp);
    libbpf_print_fn_t ob = libbpf_set_print(quiet_bpf);
    if (x->xsk)
        xsk_socket__delete(x->xsk);
    if (x->umem)
        xsk_umem__delete(x->umem);
    libxdp_set_print(ox);
    libbpf_set_print(ob);
}

static int if_mac(const char *ifname, uint8_t mac[6])
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = ioctl(fd, SIOCGIFHWADDR, &ifr) < 0 ? -errno : 0;
    close(fd);
    if (rc == 0)
        memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    return rc;
}

/* The loop, as xdpsock's tx_only and complete_tx_only: reserve a batch,
 * point the descriptors at the pre-written frames, submit, kick when the
 * ring asks, reap completions. */
static void raw_loop(struct raw *x, const struct afxdp_raw_opts *o, struct afxdp_raw_result *r)
{
    const unsigned batch = o->batch, len_f = o->frame_len;
    uint32_t frame_nb = 0, outstanding = 0;
    uint64_t sent = 0, kicks = 0;
    struct hb_clock c;
    hb_clock_start(&c, o->warmup_s, o->seconds, 16);
    for (;;) {
        int tick = hb_clock_tick(&c);
        if (tick == HB_TICK_CLOSE)
            break;
        if (tick == HB_TICK_OPEN)
            sent = kicks = 0;
        uint32_t idx = 0;
        if (xsk_ring_prod__reserve(&x->tx, batch, &idx) == batch) {
            for (unsigned i = 0; i < batch; i++) {
                struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);
                d->addr = (uint64_t)((frame_nb + i) & (NUM_FRAMES - 1)) << FRAME_SHIFT;
                d->len = len_f;
            }
            xsk_ring_prod__submit(&x->tx, batch);
            frame_nb += batch;
            outstanding += batch;
            sent += batch;
        }
        if (outstanding) {
            if (xsk_ring_prod__needs_wakeup(&x->tx)) {
                kicks++;
                (void)sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
            }
            uint32_t cidx;
            unsigned done = xsk_ring_cons__peek(&x->cq, batch, &cidx);
            if (done) {
                xsk_ring_cons__release(&x->cq, done);
                outstanding -= done;
            }
        }
    }
    r->cpu_s = c.cpu_s;
    r->packets = sent;
    r->kicks = kicks;
    r->seconds = c.secs;
    r->pps = r->seconds > 0 ? (double)r->packets / r->seconds : 0;
}

int afxdp_raw_txonly(const struct afxdp_raw_opts *o, struct afxdp_raw_result *r, char *why,
                     size_t why_len)
{
    memset(r, 0, sizeof *r);
    if (o->batch < 1 || o->batch > MAX_BATCH || o->frame_len < 60 || o->frame_len > 1514) {
        snprintf(why, why_len, "batch 1..%d and frames of 60..1514 bytes", MAX_BATCH);
        return -EINVAL;
    }
    uint8_t src[6], dst[6] = {0x02, 0, 0, 0, 0, 0x02};
    if (if_mac(o->iface, src) < 0) {
        snprintf(why, why_len, "no interface named %s", o->iface);
        return -ENODEV;
    }
    struct raw x;
    memset(&x, 0, sizeof x);
    size_t len = (size_t)NUM_FRAMES * FRAME_SIZE;
    x.area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (x.area == MAP_FAILED) {
        snprintf(why, why_len, "cannot map the UMEM");
        return -ENOMEM;
    }
    /* Every frame written once, before the socket exists: the loop never
     * touches packet data, as in xdpsock. */
    for (uint32_t i = 0; i < NUM_FRAMES; i++)
        tool_udp_frame(x.area + ((size_t)i << FRAME_SHIFT), o->frame_len, dst, src);
    bool skb = false;
    int rc = raw_open(&x, o, &skb);
    if (rc) {
        snprintf(why, why_len, "AF_XDP socket on %s: %s", o->iface, strerror(-rc));
        munmap(x.area, len);
        return rc;
    }
    raw_loop(&x, o, r);
    r->skb_mode = skb;
    raw_close(&x);
    munmap(x.area, len);
    return 0;
}

#endif /* HP_HAVE_LIBXDP */
