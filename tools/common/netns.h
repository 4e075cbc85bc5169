/* SPDX-License-Identifier: BSD-3-Clause */
/* Network namespaces made with iproute2 for the tool, the benchmarks and the root-only C tests: two joined by a veth pair, or one of a run's own. */
#ifndef HOTPATH_TOOL_NETNS_H
#define HOTPATH_TOOL_NETNS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Every namespace made here is removed by tool_netns_down / tool_ns_del, at
 * exit, and on SIGINT / SIGTERM. The signal handler only unmounts and
 * unlinks what `ip netns add` made (a bind mount under /var/run/netns):
 * both are system calls, safe there; the interfaces go with the namespace.
 * Addresses come from the benchmarking ranges only (198.18.0.0/15, RFC 2544;
 * 2001:2::/48, RFC 5180). Root only.
 */

/* ---- one namespace of a run's own ---- */

/* The name of this process's namespace `tag`: "PREFIX-TAG-PID", PREFIX
 * from HP_NETNS_PREFIX (default "hp"; tests running side by side give
 * each run its own). */
void tool_ns_name(char *buf, size_t len, const char *tag);

/* Make namespace `name` (ip netns add), registered for removal. An earlier
 * one of the same name, left by a killed process, is removed first. 0,
 * -EPERM (not root), -ENOENT (no iproute2), -EIO (ip failed), -ENOSPC (too
 * many namespaces live at once). */
int tool_ns_add(const char *name);
/* Remove it (ip netns del, by system calls). Safe on a name never made. */
void tool_ns_del(const char *name);
/* Open it for setns(2) (O_CLOEXEC). A descriptor, or -errno. */
int tool_ns_open(const char *name);
/* Run `ip -n NAME -batch -` with cmds on its standard input (one process
 * for them all). 0, or ip's exit status (-1 when it could not run). */
int tool_ns_batch(const char *name, const char *cmds);
/* Move the calling thread into namespace `name`; 0 or -errno. */
int tool_ns_enter(const char *name);

/* ---- two namespaces joined by a veth pair ---- */

/* Namespaces "PREFIX-TAG-PID-a" (tool_ns_name; side 0: interface hpaN, 198.18.0.1/24) and
 * "-b" (side 1: hpbN, 198.18.0.2/24), both up, IPv6 off on both interfaces
 * so that the kernel sends nothing by itself (no router or neighbour
 * solicitations, no MLD): tests that count frames want that. ifindex as
 * seen inside each namespace. */
struct tool_netns {
    char ns[2][40];
    char ifname[2][16];
    unsigned ifindex[2];
    bool up;
};

/* 0, or -EPERM (not root), -ENOENT (no iproute2), -EIO (ip failed; what was
 * made is removed again). */
int tool_netns_up(struct tool_netns *n, const char *tag);
/* Remove both namespaces (safe twice, and on one never up). */
void tool_netns_down(struct tool_netns *n);
/* Remove every namespace this process made and has not removed (a test
 * runner's teardown). */
void tool_netns_down_all(void);
/* Move the calling thread into side 0 or 1; 0 or -errno. */
int tool_netns_enter(const struct tool_netns *n, int side);
/* Back to the initial namespace (that of PID 1); 0 or -errno. */
int tool_netns_leave(void);
/* Run a shell command (formatted) inside side; its exit status, or -1. */
int tool_netns_sh(const struct tool_netns *n, int side, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* /sys/class/net/<ifname>/statistics/<counter> as seen from side; -1 on error. */
long long tool_netns_counter(const struct tool_netns *n, int side, const char *counter);

/* ---- namespaces in a line: a bridge, or two routers, between client and server ---- */

#define TOOL_LINE_MAX 4

/* Namespaces ns[0] (the client) .. ns[n-1] (the server) in a line, the
 * neighbours ns[i] and ns[i+1] joined by veth pair i: ifname[i][0] in
 * ns[i], ifname[i][1] in ns[i+1]. Checksum offload, TSO, GSO and GRO are
 * off on every interface: frames cross a userspace bridge or a kernel
 * router as they were sent, whole and with whole checksums, as hotpath's
 * links (afpacket, afxdp) read them. Needs ethtool for that. */
struct tool_line {
    int n;
    char ns[TOOL_LINE_MAX][40];
    char ifname[TOOL_LINE_MAX - 1][2][16];
    bool up;
};

/* The bridged line, for `hotpath impair`: "PREFIX-TAG-PID-a" (the client,
 * 198.18.0.1/24 on ifname[0][0]), "-br" (the bridge: ifname[0][1] and
 * ifname[1][0] up, no addresses) and "-b" (the server, 198.18.0.2/24 on
 * ifname[1][1]): one Ethernet segment. IPv6 is off on every interface, so
 * that the kernel sends nothing by itself and the bridge's kernel neither
 * answers nor forwards. 0, -EPERM (not root), -ENOENT (no iproute2 or no
 * ethtool), -EIO (a command failed; what was made is removed again). */
int tool_line_bridged(struct tool_line *l, const char *tag);

/* The routed line: "-c" (the client: 198.18.1.1/24, 2001:2:0:1::1/64,
 * default routes through router 1), "-r1" (198.18.1.254/24, 2001:2:0:1::fe
 * toward the client; 198.18.2.1/24, 2001:2:0:2::1 toward router 2), "-r2"
 * (198.18.2.2, 2001:2:0:2::2; 198.18.3.254/24, 2001:2:0:3::fe toward the
 * server) and "-s" (the server: 198.18.3.1/24, 2001:2:0:3::1/64). The routers
 * forward both families; the link between them has MTU mtu (the others
 * 1500), so that they answer larger packets with ICMP "fragmentation
 * needed" (DF set) or "packet too big". IPv6 addresses skip duplicate
 * address detection. Errors as tool_line_bridged. */
int tool_line_routed(struct tool_line *l, const char *tag, unsigned mtu);

/* The routed line's client addresses: off (removed, and IPv6 off on its
 * interface, link-local address included) so that a userspace stack can
 * take the interface over without the kernel answering its traffic, or on
 * again as tool_line_routed made them. 0 or -EIO. */
int tool_line_routed_client(const struct tool_line *l, bool on);

/* Remove every namespace of the line (safe twice, and on one never up). */
void tool_line_down(struct tool_line *l);

/* Run a shell command (formatted) inside namespace i of the line; its exit
 * status, or -1. */
int tool_line_sh(const struct tool_line *l, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Run a shell command (formatted); its exit status, or -1 when it did not
 * exit normally. */
int tool_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
