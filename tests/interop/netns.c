/* SPDX-License-Identifier: BSD-3-Clause */
/* Network namespaces for root-only tests, made and removed with iproute2. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hp_test.h"
#include "netns.h"

/* The teardown's own copy of the names: the test's struct may be a local
 * that is gone by the time the teardown runs. */
static struct hp_netns current;

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

void hp_netns_down(struct hp_netns *n)
{
    if (!n || !n->up)
        return;
    for (int s = 0; s < 2; s++)
        sh("ip netns del %s 2>/dev/null", n->ns[s]);
    n->up = false;
}

static int teardown(void)
{
    hp_netns_down(&current);
    return 0;
}

int hp_netns_up(struct hp_netns *n, bool quiet)
{
    static bool registered;
    memset(n, 0, sizeof *n);
    if (geteuid() != 0) {
        hp_test_skip("needs root (network namespaces)");
        return -1;
    }
    if (sh("command -v ip >/dev/null 2>&1") != 0) {
        hp_test_skip("iproute2 (ip) is not installed");
        return -1;
    }
    int pid = (int)getpid();
    for (int s = 0; s < 2; s++) {
        snprintf(n->ns[s], sizeof n->ns[s], "hpt-%d-%c", pid, 'a' + s);
        snprintf(n->ifname[s], sizeof n->ifname[s], "hp%c%d", 'a' + s, pid % 100000);
    }
    if (!registered) {
        hp_test_add_teardown("network namespaces", teardown);
        registered = true;
    }
    n->up = true;
    current = *n;
    int rc = sh("set -e; ip netns add %s; ip netns add %s;"
                " ip link add %s netns %s type veth peer name %s netns %s",
                n->ns[0], n->ns[1], n->ifname[0], n->ns[0], n->ifname[1], n->ns[1]);
    for (int s = 0; s < 2 && rc == 0; s++) {
        const char *ns = n->ns[s], *ifn = n->ifname[s];
        if (quiet)
            rc = sh("ip netns exec %s sysctl -qw net.ipv6.conf.%s.disable_ipv6=1", ns, ifn);
        if (rc == 0)
            rc = sh("set -e; ip -n %s link set lo up; ip -n %s link set %s up;"
                    " ip -n %s addr add 198.18.0.%d/24 dev %s",
                    ns, ns, ifn, ns, s + 1, ifn);
        if (rc == 0 && !quiet)
            rc = sh("ip -n %s addr add 2001:2::%d/64 dev %s nodad", ns, s + 1, ifn);
    }
    if (rc != 0) {
        hp_test_fail(__FILE__, __LINE__, "cannot set up the namespaces %s and %s (ip exit %d)",
                     n->ns[0], n->ns[1], rc);
        hp_netns_down(n);
        return -1;
    }
    /* ifindex as seen inside each namespace */
    for (int s = 0; s < 2; s++) {
        char path[128], buf[32] = "";
        snprintf(path, sizeof path, "ip netns exec %s cat /sys/class/net/%s/ifindex", n->ns[s],
                 n->ifname[s]);
        FILE *f = popen(path, "r");
        if (f) {
            if (fgets(buf, sizeof buf, f))
                n->ifindex[s] = (unsigned)strtoul(buf, NULL, 10);
            pclose(f);
        }
    }
    return 0;
}

int hp_netns_enter(const struct hp_netns *n, int side)
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

int hp_netns_sh(const struct hp_netns *n, int side, const char *fmt, ...)
{
    char cmd[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return sh("ip netns exec %s sh -c '%s'", n->ns[side], cmd);
}

long long hp_netns_counter(const struct hp_netns *n, int side, const char *counter)
{
    char cmd[256], buf[64] = "";
    snprintf(cmd, sizeof cmd, "ip netns exec %s cat /sys/class/net/%s/statistics/%s", n->ns[side],
             n->ifname[side], counter);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    long long v = -1;
    if (fgets(buf, sizeof buf, f))
        v = strtoll(buf, NULL, 10);
    pclose(f);
    return v;
}

/* Every interop test ends with no buffer in use in any pool. */
#include <hotpath/pool.h>
static int no_buffers_out(void)
{
    long n = hp_pools_in_use();
    if (n != 0)
        fprintf(stderr, "  %ld buffer(s) still in use in some pool\n", n);
    return n != 0;
}
__attribute__((constructor)) static void register_buffer_check(void)
{
    hp_test_add_teardown("buffers in use", no_buffers_out);
}
