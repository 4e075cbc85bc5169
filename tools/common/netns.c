/* SPDX-License-Identifier: BSD-3-Clause */
/* Network namespaces made with iproute2, removed at exit and on SIGINT / SIGTERM: the one helper of the tool, the benchmarks and the C tests. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns.h"

#define NS_DIR   "/var/run/netns" /* where `ip netns` keeps its names */
#define MAX_LIVE 8

/* The namespaces to remove at exit or on a signal: their paths are written
 * before they exist, so that the handler formats nothing. */
static char live_path[MAX_LIVE][64];
static volatile sig_atomic_t live[MAX_LIVE];

int tool_sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* What `ip netns del` does: a lazy unmount and an unlink, both system calls. */
static void remove_slot(int i)
{
    if (!live[i])
        return;
    live[i] = 0;
    umount2(live_path[i], MNT_DETACH);
    unlink(live_path[i]);
}

void tool_netns_down_all(void)
{
    for (int i = 0; i < MAX_LIVE; i++)
        remove_slot(i);
}

static void on_signal(int sig)
{
    tool_netns_down_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void hook_cleanup(void)
{
    static bool hooked;
    if (hooked)
        return;
    hooked = true;
    atexit(tool_netns_down_all);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int slot_of(const char *path)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] && strcmp(live_path[i], path) == 0)
            return i;
    return -1;
}

void tool_ns_name(char *buf, size_t len, const char *tag)
{
    const char *prefix = getenv("HP_NETNS_PREFIX");
    snprintf(buf, len, "%s-%s-%d", prefix && *prefix ? prefix : "hp", tag, (int)getpid());
}

int tool_ns_add(const char *name)
{
    if (geteuid() != 0)
        return -EPERM;
    if (tool_sh("command -v ip >/dev/null 2>&1") != 0)
        return -ENOENT;
    char path[64];
    if ((size_t)snprintf(path, sizeof path, NS_DIR "/%s", name) >= sizeof path)
        return -ENAMETOOLONG;
    int slot = 0;
    while (slot < MAX_LIVE && live[slot])
        slot++;
    if (slot == MAX_LIVE)
        return -ENOSPC;
    hook_cleanup();
    memcpy(live_path[slot], path, sizeof path);
    /* One of an earlier process with our PID, killed before it could remove
     * it, is stale: nobody else names one after us. */
    umount2(path, MNT_DETACH);
    unlink(path);
    live[slot] = 1;
    if (tool_sh("ip netns add %s >/dev/null 2>&1", name) != 0) {
        remove_slot(slot);
        return -EIO;
    }
    return 0;
}

void tool_ns_del(const char *name)
{
    char path[64];
    snprintf(path, sizeof path, NS_DIR "/%s", name);
    int slot = slot_of(path);
    if (slot >= 0)
        remove_slot(slot);
}

int tool_ns_open(const char *name)
{
    char path[96];
    snprintf(path, sizeof path, NS_DIR "/%s", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int tool_ns_enter(const char *name)
{
    int fd = tool_ns_open(name);
    if (fd < 0)
        return fd;
    int rc = setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int tool_ns_batch(const char *name, const char *cmds)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ip -n %s -batch - >/dev/null 2>&1", name);
    FILE *p = popen(cmd, "w");
    if (!p)
        return -1;
    fputs(cmds, p);
    int rc = pclose(p);
    return rc == -1 ? -1 : WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A number read from a file as seen from inside namespace ns; -1 on error. */
static long long read_in(const char *ns, const char *file)
{
    char cmd[256], buf[64] = "";
    snprintf(cmd, sizeof cmd, "ip netns exec %s cat %s 2>/dev/null", ns, file);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    long long v = -1;
    if (fgets(buf, sizeof buf, f))
        v = strtoll(buf, NULL, 10);
    pclose(f);
    return v;
}

/* One side up, IPv6 off, its IPv4 address. */
static int address_side(const struct tool_netns *n, int s)
{
    const char *ns = n->ns[s], *ifn = n->ifname[s];
    return tool_sh("set -e; ip netns exec %s sysctl -qw net.ipv6.conf.%s.disable_ipv6=1;"
                   " ip -n %s link set lo up; ip -n %s link set %s up; ip -n %s addr add "
                   "198.18.0.%d/24 dev %s",
                   ns, ifn, ns, ns, ifn, ns, s + 1, ifn);
}

int tool_netns_up(struct tool_netns *n, const char *tag)
{
    memset(n, 0, sizeof *n);
    char base[32];
    tool_ns_name(base, sizeof base, tag);
    for (int s = 0; s < 2; s++) {
        snprintf(n->ns[s], sizeof n->ns[s], "%s-%c", base, 'a' + s);
        snprintf(n->ifname[s], sizeof n->ifname[s], "hp%c%d", 'a' + s, (int)getpid() % 100000);
    }
    int rc = tool_ns_add(n->ns[0]);
    if (rc < 0)
        return rc;
    n->up = true;
    rc = tool_ns_add(n->ns[1]) < 0 ? -1 : 0;
    if (rc == 0)
        rc = tool_sh("ip link add %s netns %s type veth peer name %s netns %s", n->ifname[0],
                     n->ns[0], n->ifname[1], n->ns[1]);
    for (int s = 0; s < 2 && rc == 0; s++)
        rc = address_side(n, s);
    if (rc != 0) {
        tool_netns_down(n);
        return -EIO;
    }
    for (int s = 0; s < 2; s++) {
        char file[96];
        snprintf(file, sizeof file, "/sys/class/net/%s/ifindex", n->ifname[s]);
        long long v = read_in(n->ns[s], file);
        n->ifindex[s] = v > 0 ? (unsigned)v : 0;
    }
    return 0;
}

void tool_netns_down(struct tool_netns *n)
{
    if (!n || !n->up)
        return;
    for (int s = 0; s < 2; s++)
        tool_ns_del(n->ns[s]);
    n->up = false;
}

int tool_netns_enter(const struct tool_netns *n, int side)
{
    return tool_ns_enter(n->ns[side]);
}

int tool_netns_leave(void)
{
    int fd = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int tool_netns_sh(const struct tool_netns *n, int side, const char *fmt, ...)
{
    char cmd[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return tool_sh("ip netns exec %s sh -c '%s'", n->ns[side], cmd);
}

long long tool_netns_counter(const struct tool_netns *n, int side, const char *counter)
{
    char file[128];
    snprintf(file, sizeof file, "/sys/class/net/%s/statistics/%s", n->ifname[side], counter);
    return read_in(n->ns[side], file);
}

/* ---- namespaces in a line ------------------------------------------------------------ */

int tool_line_sh(const struct tool_line *l, int i, const char *fmt, ...)
{
    char cmd[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return tool_sh("ip netns exec %s sh -c '%s'", l->ns[i], cmd);
}

void tool_line_down(struct tool_line *l)
{
    if (!l || !l->up)
        return;
    for (int i = 0; i < l->n; i++)
        tool_ns_del(l->ns[i]);
    l->up = false;
}

/* Make the namespaces (names "BASE-SUFFIX") and the veth pairs between
 * them, every interface up with its offloads off. 0 or -errno (what was
 * made is removed again). */
static int line_make(struct tool_line *l, const char *tag, const char *const *suffix, int n)
{
    memset(l, 0, sizeof *l);
    if (geteuid() == 0 && tool_sh("command -v ethtool >/dev/null 2>&1") != 0)
        return -ENOENT;
    char base[32];
    tool_ns_name(base, sizeof base, tag);
    l->n = n;
    for (int i = 0; i < n; i++)
        snprintf(l->ns[i], sizeof l->ns[i], "%s-%s", base, suffix[i]);
    for (int i = 0; i + 1 < n; i++)
        for (int e = 0; e < 2; e++)
            snprintf(l->ifname[i][e], sizeof l->ifname[i][e], "hp%u%c%u", (unsigned)i % 10u,
                     'a' + e, (unsigned)getpid() % 100000u);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = tool_ns_add(l->ns[i]);
        l->up = l->up || rc == 0;
        if (rc == 0)
            rc = tool_ns_batch(l->ns[i], "link set lo up\n") ? -EIO : 0;
        /* No duplicate address detection on the interfaces to come: a
         * link-local address is usable at once (neighbour discovery sends
         * from it), not a second or two later. */
        if (rc == 0 && tool_sh("ip netns exec %s sysctl -qw net.ipv6.conf.default.accept_dad=0 "
                               "net.ipv6.conf.all.accept_dad=0",
                               l->ns[i]) != 0)
            rc = -EIO;
    }
    for (int i = 0; i + 1 < n && rc == 0; i++)
        if (tool_sh("ip link add %s netns %s type veth peer name %s netns %s", l->ifname[i][0],
                    l->ns[i], l->ifname[i][1], l->ns[i + 1]) != 0)
            rc = -EIO;
    for (int i = 0; i + 1 < n && rc == 0; i++)
        for (int e = 0; e < 2 && rc == 0; e++)
            if (tool_sh("ip -n %s link set %s up && ip netns exec %s ethtool -K %s tx off tso off "
                        "gso off gro off >/dev/null 2>&1",
                        l->ns[i + e], l->ifname[i][e], l->ns[i + e], l->ifname[i][e]) != 0)
                rc = -EIO;
    if (rc < 0)
        tool_line_down(l);
    return rc;
}

int tool_line_bridged(struct tool_line *l, const char *tag)
{
    static const char *const suffix[] = {"a", "br", "b"};
    int rc = line_make(l, tag, suffix, 3);
    if (rc < 0)
        return rc;
    /* IPv6 off first: no solicitations, and nothing the bridge's kernel
     * would answer or forward. */
    for (int i = 0; i < 2 && rc == 0; i++)
        for (int e = 0; e < 2 && rc == 0; e++)
            if (tool_sh("ip netns exec %s sysctl -qw net.ipv6.conf.%s.disable_ipv6=1", l->ns[i + e],
                        l->ifname[i][e]) != 0)
                rc = -EIO;
    if (rc == 0 &&
        (tool_sh("ip -n %s addr add 198.18.0.1/24 dev %s", l->ns[0], l->ifname[0][0]) != 0 ||
         tool_sh("ip -n %s addr add 198.18.0.2/24 dev %s", l->ns[2], l->ifname[1][1]) != 0))
        rc = -EIO;
    if (rc < 0)
        tool_line_down(l);
    return rc;
}

/* Namespace i's addresses and routes of the routed line, as an `ip -batch`. */
static void routed_cmds(const struct tool_line *l, int i, char *buf, size_t len)
{
    const char *w = l->ifname[i > 0 ? i - 1 : 0][1], *e = l->ifname[i < 3 ? i : 2][0];
    switch (i) {
    case 0:
        snprintf(buf, len,
                 "addr add 198.18.1.1/24 dev %s\naddr add 2001:2:0:1::1/64 dev %s nodad\n"
                 "route add default via 198.18.1.254\nroute add default via 2001:2:0:1::fe\n",
                 e, e);
        return;
    case 1:
        snprintf(buf, len,
                 "addr add 198.18.1.254/24 dev %s\naddr add 2001:2:0:1::fe/64 dev %s nodad\n"
                 "addr add 198.18.2.1/24 dev %s\naddr add 2001:2:0:2::1/64 dev %s nodad\n"
                 "route add 198.18.3.0/24 via 198.18.2.2\nroute add 2001:2:0:3::/64 via "
                 "2001:2:0:2::2\n",
                 w, w, e, e);
        return;
    case 2:
        snprintf(buf, len,
                 "addr add 198.18.2.2/24 dev %s\naddr add 2001:2:0:2::2/64 dev %s nodad\n"
                 "addr add 198.18.3.254/24 dev %s\naddr add 2001:2:0:3::fe/64 dev %s nodad\n"
                 "route add 198.18.1.0/24 via 198.18.2.1\nroute add 2001:2:0:1::/64 via "
                 "2001:2:0:2::1\n",
                 w, w, e, e);
        return;
    default:
        snprintf(buf, len,
                 "addr add 198.18.3.1/24 dev %s\naddr add 2001:2:0:3::1/64 dev %s nodad\n"
                 "route add default via 198.18.3.254\nroute add default via 2001:2:0:3::fe\n",
                 w, w);
    }
}

int tool_line_routed(struct tool_line *l, const char *tag, unsigned mtu)
{
    static const char *const suffix[] = {"c", "r1", "r2", "s"};
    int rc = line_make(l, tag, suffix, 4);
    if (rc < 0)
        return rc;
    if (tool_sh("ip -n %s link set %s mtu %u && ip -n %s link set %s mtu %u", l->ns[1],
                l->ifname[1][0], mtu, l->ns[2], l->ifname[1][1], mtu) != 0)
        rc = -EIO;
    for (int i = 1; i < 3 && rc == 0; i++)
        if (tool_sh("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1 "
                    "net.ipv6.conf.all.forwarding=1",
                    l->ns[i]) != 0)
            rc = -EIO;
    for (int i = 0; i < 4 && rc == 0; i++) {
        char cmds[600];
        routed_cmds(l, i, cmds, sizeof cmds);
        if (tool_ns_batch(l->ns[i], cmds) != 0)
            rc = -EIO;
    }
    if (rc < 0)
        tool_line_down(l);
    return rc;
}

int tool_line_routed_client(const struct tool_line *l, bool on)
{
    const char *ns = l->ns[0], *ifn = l->ifname[0][0];
    if (!on)
        return tool_sh("ip -n %s addr flush dev %s && ip netns exec %s sysctl -qw "
                       "net.ipv6.conf.%s.disable_ipv6=1",
                       ns, ifn, ns, ifn) == 0
                   ? 0
                   : -EIO;
    char cmds[600];
    routed_cmds(l, 0, cmds, sizeof cmds);
    if (tool_sh("ip netns exec %s sysctl -qw net.ipv6.conf.%s.disable_ipv6=0", ns, ifn) != 0 ||
        tool_ns_batch(ns, cmds) != 0)
        return -EIO;
    return 0;
}
