/* SPDX-License-Identifier: BSD-3-Clause */
/* Temporary network namespaces joined by a veth pair, for benchmarks and the demo on real links. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

static struct tool_netns *live; /* removed at exit and on SIGINT/SIGTERM */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

void tool_netns_down(struct tool_netns *n)
{
    if (!n || !n->up)
        return;
    for (int s = 0; s < 2; s++)
        sh("ip netns del %s 2>/dev/null", n->ns[s]);
    n->up = false;
    if (live == n)
        live = NULL;
}

static void at_exit(void)
{
    tool_netns_down(live);
}

static void on_signal(int sig)
{
    /* Not async-signal-safe in theory (system()), but the process is ending
     * anyway, and leaving namespaces behind is worse. */
    tool_netns_down(live);
    signal(sig, SIG_DFL);
    raise(sig);
}

int tool_netns_up(struct tool_netns *n, const char *tag)
{
    memset(n, 0, sizeof *n);
    if (geteuid() != 0)
        return -EPERM;
    if (sh("command -v ip >/dev/null 2>&1") != 0)
        return -ENOENT;
    int pid = (int)getpid();
    for (int s = 0; s < 2; s++) {
        snprintf(n->ns[s], sizeof n->ns[s], "hp-%s-%d-%c", tag, pid, 'a' + s);
        snprintf(n->ifname[s], sizeof n->ifname[s], "hp%c%d", 'a' + s, pid % 100000);
    }
    static bool hooked;
    if (!hooked) {
        atexit(at_exit);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        hooked = true;
    }
    live = n;
    n->up = true;
    int rc = sh("set -e; ip netns add %s; ip netns add %s;"
                " ip link add %s netns %s type veth peer name %s netns %s",
                n->ns[0], n->ns[1], n->ifname[0], n->ns[0], n->ifname[1], n->ns[1]);
    for (int s = 0; s < 2 && rc == 0; s++)
        rc = sh("set -e; ip -n %s link set lo up; ip -n %s link set %s up;"
                " ip netns exec %s sysctl -qw net.ipv6.conf.%s.disable_ipv6=1;"
                " ip -n %s addr add 198.18.0.%d/24 dev %s",
                n->ns[s], n->ns[s], n->ifname[s], n->ns[s], n->ifname[s], n->ns[s], s + 1,
                n->ifname[s]);
    if (rc != 0) {
        tool_netns_down(n);
        return -EIO;
    }
    return 0;
}

int tool_netns_enter(const struct tool_netns *n, int side)
{
    char path[96];
    snprintf(path, sizeof path, "/var/run/netns/%s", n->ns[side]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
    close(fd);
    return rc;
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
