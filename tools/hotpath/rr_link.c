/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath rr` over real links: a network namespace of its own with veth pairs or bridged taps (or the user's interfaces), and the stacks' afxdp, afpacket or tap links opened inside it. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "netns.h"
#include "rr.h"

#define RING_MIN 1024u
#define RING_MAX 16384u /* a burst of 10,000 flows fits; more only costs memory */

static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t p = 1;
    while (p < v && p < (1u << 30))
        p <<= 1;
    return p;
}

/* Rings for n flows: a first burst of a request per flow fits (twice, for
 * TCP's ACKs), within [RING_MIN, RING_MAX]. */
static uint32_t ring_for(unsigned n)
{
    uint32_t r = pow2_at_least(2 * n + 1024);
    return r < RING_MIN ? RING_MIN : r > RING_MAX ? RING_MAX : r;
}

static int set_ns(int fd)
{
    return setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
}

/* Write a sysctl of the calling thread's namespace (/proc/sys/net follows
 * the thread's namespace). */
static int write_sysctl(const char *path, const char *v)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, v, strlen(v));
    int rc = w < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static void fail(struct rr_result *r, bool unavailable, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(struct rr_result *r, bool unavailable, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
    r->unavailable = unavailable;
}

/* The interfaces: one veth pair, or a bridge with two taps, per stack pair. */
static int make_interfaces(const struct rr_opts *o, unsigned max_flows, struct rr_net *n,
                           struct rr_result *r)
{
    bool tap = strcmp(o->link, "tap") == 0;
    size_t cap = 512 + (size_t)n->pairs * 320;
    char *cmds = malloc(cap);
    if (!cmds) {
        fail(r, false, "out of memory");
        return -1;
    }
    size_t at = 0;
    at += (size_t)snprintf(cmds + at, cap - at, "link set lo up\n");
    /* The tap's queue towards us is txqueuelen frames (1000 by default): a
     * first burst of every flow's request must fit. */
    uint32_t qlen = ring_for(max_flows);
    for (unsigned k = 0; k < n->pairs; k++) {
        const char *c = n->ifname[k][0], *s = n->ifname[k][1];
        if (tap)
            at += (size_t)snprintf(
                cmds + at, cap - at,
                "link add rrbr%u type bridge forward_delay 0 stp_state 0 mcast_snooping 0\n"
                "link set rrbr%u up\n"
                "tuntap add dev %s mode tap\ntuntap add dev %s mode tap\n"
                "link set %s master rrbr%u txqueuelen %u up\n"
                "link set %s master rrbr%u txqueuelen %u up\n",
                k, k, c, s, c, k, qlen, s, k, qlen);
        else
            at += (size_t)snprintf(
                cmds + at, cap - at,
                "link add %s type veth peer name %s\nlink set %s up\nlink set %s up\n", c, s, c, s);
    }
    int rc = tool_ns_batch(n->ns, cmds);
    free(cmds);
    if (rc != 0) {
        fail(r, false, "cannot make the %s interfaces in namespace %s (ip -batch failed)",
             tap ? "bridge and tap" : "veth", n->ns);
        return -1;
    }
    return 0;
}

/* The kernel's IPv6 off in the namespace before the interfaces exist, so
 * that it sends nothing (router solicitations, DAD, MLD) on them; it gets no
 * IPv4 address either, so it answers no ARP and drops (forwarding is off)
 * what afpacket lets it see. */
static int quiet_kernel(struct rr_net *n, struct rr_result *r)
{
    int rc = set_ns(n->ns_fd);
    if (rc == 0) {
        rc = write_sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
        if (rc == 0 || rc == -ENOENT) /* ENOENT: a kernel without IPv6 */
            rc = write_sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
        if (rc == -ENOENT)
            rc = 0;
        int back = set_ns(n->home_fd);
        if (back < 0) {
            fail(r, false, "cannot come back from namespace %s: %s", n->ns, hp_strerror(back));
            return -1;
        }
    }
    if (rc < 0) {
        fail(r, false, "cannot turn IPv6 off in namespace %s: %s", n->ns, hp_strerror(rc));
        return -1;
    }
    return 0;
}

/* The namespace of the run (tools/common/netns.c removes it at exit and on
 * SIGINT / SIGTERM), entered and left through descriptors. */
static int make_namespace(const struct rr_opts *o, struct rr_net *n, struct rr_result *r)
{
    tool_ns_name(n->ns, sizeof n->ns, "rr");
    snprintf(r->netns, sizeof r->netns, "%s", n->ns);
    int rc = tool_ns_add(n->ns);
    if (rc == -EPERM) {
        fail(r, true,
             "--link %s needs root: it makes a network namespace with %s (or give --iface and "
             "--peer-iface "
             "as a user with CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF)",
             o->link, strcmp(o->link, "tap") == 0 ? "a bridge and two tap devices" : "a veth pair");
        return -1;
    }
    if (rc == -ENOENT) {
        fail(r, true, "--link %s makes a network namespace with `ip`: iproute2 is not installed",
             o->link);
        return -1;
    }
    if (rc < 0) {
        fail(r, false, "cannot make network namespace %s (ip netns add failed)", n->ns);
        return -1;
    }
    n->own = true;
    n->home_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    n->ns_fd = tool_ns_open(n->ns);
    if (n->home_fd < 0 || n->ns_fd < 0) {
        fail(r, false, "cannot open namespace %s: %s", n->ns, hp_strerror(-errno));
        return -1;
    }
    return quiet_kernel(n, r);
}

int rr_net_up(const struct rr_opts *o, unsigned max_flows, struct rr_net *n, struct rr_result *r)
{
    memset(n, 0, sizeof *n);
    n->ns_fd = n->home_fd = -1;
    n->pairs = o->threads;
    if (o->iface) {
        /* The user's interfaces, in our namespace; one stack pair (checked
         * by the options). */
        snprintf(n->ifname[0][0], sizeof n->ifname[0][0], "%s", o->iface);
        snprintf(n->ifname[0][1], sizeof n->ifname[0][1], "%s", o->peer_iface);
        snprintf(r->iface, sizeof r->iface, "%s", o->iface);
        snprintf(r->peer_iface, sizeof r->peer_iface, "%s", o->peer_iface);
        return 0;
    }
    for (unsigned k = 0; k < n->pairs; k++) {
        snprintf(n->ifname[k][0], sizeof n->ifname[k][0], "rrc%u", k);
        snprintf(n->ifname[k][1], sizeof n->ifname[k][1], "rrs%u", k);
    }
    snprintf(r->iface, sizeof r->iface, "%s", n->ifname[0][0]);
    snprintf(r->peer_iface, sizeof r->peer_iface, "%s", n->ifname[0][1]);
    if (make_namespace(o, n, r) < 0 || make_interfaces(o, max_flows, n, r) < 0) {
        rr_net_down(n);
        return -1;
    }
    return 0;
}

/* Whether a failure to open a link means "not here": no privilege, or no
 * support in this build or kernel. */
static bool unavailable_errno(int e)
{
    return e == EPERM || e == EACCES || e == EOPNOTSUPP || e == EAFNOSUPPORT ||
           e == EPROTONOSUPPORT;
}

static struct hp_link *open_one(const struct rr_opts *o, const char *ifname, struct hp_pool *pool,
                                uint32_t ring, uint32_t frames, struct rr_result *r)
{
    struct hp_link_config lc = {.iface = ifname, .pool = pool, .ring_size = ring};
    if (strcmp(o->link, "afxdp") == 0) {
        /* veth has no zero-copy mode; 2 KiB frames hold a 1500-byte MTU
         * and halve the UMEM. */
        lc.flags = HP_LINK_F_COPY;
        lc.n_frames = frames;
        lc.frame_size = 2048;
    } else if (strcmp(o->link, "tap") == 0) {
        lc.flags = HP_LINK_F_TAP_ATTACH; /* made above, or the user's: never a new device */
        lc.ring_size = 0;
    }
    struct hp_link *l = hp_link_open(o->link, &lc);
    if (!l) {
        int e = errno;
        snprintf(r->note, sizeof r->note, "%s", hp_link_error());
        r->unavailable = unavailable_errno(e);
    }
    return l;
}

int rr_net_open(const struct rr_opts *o, struct rr_net *net, unsigned k, unsigned n,
                struct hp_link *e[2], struct hp_pool **pool, struct rr_result *r)
{
    e[0] = e[1] = NULL;
    *pool = NULL;
    uint32_t ring = ring_for(n);
    /* Each stack holds about two buffers per TCP flow (the request or
     * response in its send queue, one being received); afxdp's UMEM also
     * keeps a fill ring and a transmit ring full. */
    uint32_t frames = 2 * ring + 2 * n + 4096;
    uint32_t nbufs = 4 * n + 8192;
    bool afxdp = strcmp(o->link, "afxdp") == 0;
    r->ring_size = strcmp(o->link, "tap") == 0 ? 0 : ring;
    r->pool_bufs = afxdp ? 2 * frames : nbufs;
    if (!afxdp) {
        /* Faulted in now, as rr's in-process pools (rr.c). */
        struct hp_pool_config pc = {.name = "rr", .n_bufs = nbufs, .flags = HP_POOL_F_POPULATE};
        *pool = hp_pool_create(&pc);
        if (!*pool) {
            snprintf(r->note, sizeof r->note, "cannot allocate %u buffers", nbufs);
            return -1;
        }
    }
    if (net->own) {
        int rc = set_ns(net->ns_fd);
        if (rc < 0) {
            snprintf(r->note, sizeof r->note, "cannot enter namespace %s: %s", net->ns,
                     hp_strerror(rc));
            return -1;
        }
    }
    for (int i = 0; i < 2 && (i == 0 || e[0]); i++)
        e[i] = open_one(o, net->ifname[k][i], *pool, ring, frames, r);
    if (net->own) {
        int rc = set_ns(net->home_fd);
        if (rc < 0) {
            snprintf(r->note, sizeof r->note, "cannot come back from namespace %s: %s", net->ns,
                     hp_strerror(rc));
            return -1;
        }
    }
    return e[0] && e[1] ? 0 : -1;
}

void rr_net_close(struct rr_net *net, struct hp_link *e[2])
{
    if (!e[0] && !e[1])
        return;
    /* Outside the namespace, an afxdp link's interface index could name
     * another interface: close where it was opened, or leave the program to
     * go with the namespace. */
    bool inside = net->own && set_ns(net->ns_fd) == 0;
    for (int i = 0; i < 2; i++)
        if (e[i] && (!net->own || inside || strcmp(hp_link_kind(e[i]), "afxdp") != 0))
            hp_link_close(e[i]);
    e[0] = e[1] = NULL;
    if (inside)
        (void)set_ns(net->home_fd);
}

void rr_net_down(struct rr_net *n)
{
    if (n->own)
        tool_ns_del(n->ns);
    if (n->ns_fd >= 0)
        close(n->ns_fd);
    if (n->home_fd >= 0)
        close(n->home_fd);
    n->ns_fd = n->home_fd = -1;
    n->own = false;
}
