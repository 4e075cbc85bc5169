/* SPDX-License-Identifier: BSD-3-Clause */
/* The link and address options that `hotpath serve` and `hotpath connect` share: parsing, opening the link, setting up a stack. */
#ifndef HOTPATH_TOOL_NETOPTS_H
#define HOTPATH_TOOL_NETOPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include <hotpath/link.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

#include "memifopt.h"

#define NETOPT_MAX_ADDRS 8

/* An address with its prefix length: "198.18.0.2/24", "2001:2::2/64". */
struct cidr {
    int family;
    uint8_t addr[16];
    uint8_t plen;
};

/* --link KIND --iface IF --ip A/LEN --ip6 A/LEN --gw A --gw6 A --pcap FILE --cpu N,
 * and memif's --memif-socket PATH --memif-role R --memif-id N */
struct net_opts {
    const char *link, *iface, *pcap;
    struct memif_opts memif;
    struct cidr ip[NETOPT_MAX_ADDRS];
    int nip;
    uint8_t gw4[4], gw6[16];
    bool has_gw4, has_gw6;
    int cpu; /* -1: leave */
    int cc;  /* --cc: enum hp_tcp_cc (0: the library's default) */
};

/* The getopt_long entries of those options, to put at the head of a
 * command's table (their codes: l i 4 6 g G p c). */
#define NETOPT_LONGOPTS                                                                            \
    {"link", required_argument, NULL, 'l'}, {"iface", required_argument, NULL, 'i'},               \
        {"ip", required_argument, NULL, '4'}, {"ip6", required_argument, NULL, '6'},               \
        {"gw", required_argument, NULL, 'g'}, {"gw6", required_argument, NULL, 'G'},               \
        {"pcap", required_argument, NULL, 'p'}, {"cpu", required_argument, NULL, 'c'},             \
        {"cc", required_argument, NULL, 'C'}, MEMIFOPT_LONGOPTS

/* The help lines of those options. */
#define NETOPT_HELP                                                                                \
    "  --iface IF        the interface (all links but mem)\n"                                      \
    "  --ip A/LEN        an IPv4 address and prefix (repeatable)\n"                                \
    "  --ip6 A/LEN       an IPv6 address and prefix (repeatable)\n"                                \
    "  --gw A, --gw6 A   default gateways\n"                                                       \
    "  --pcap FILE       write every frame to FILE\n"                                              \
    "  --cpu N           pin to CPU N\n"                                                           \
    "  --cc ALGO         TCP congestion control: cubic (default) or newreno\n" MEMIFOPT_HELP

void netopt_init(struct net_opts *o);

/* Handle getopt's code c with argument arg for command cmd.
 * @return 0 (taken), 1 (not one of ours), 2 (a usage error, printed). */
int netopt_parse(const char *cmd, struct net_opts *o, int c, const char *arg);

/* Put the TCP choices of o (--cc) into tc, before hp_tcp_configure. */
void netopt_tcp(const struct net_opts *o, struct hp_tcp_config *tc);

/* The checks after parsing: a known link kind, --iface for real links and
 * not for mem or memif, --memif-socket for memif. 0, or 2 after printing
 * the error. */
int netopt_check(const char *cmd, struct net_opts *o);

/* Parse "198.18.0.2/24" (family 4) or "2001:2::2/64" (family 6) for option
 * opt. 0, or 2 after printing the error. */
int netopt_parse_cidr(const char *cmd, const char *opt, const char *arg, int family,
                      struct cidr *out);

/* Whether a and b (family f) share their first plen bits. */
bool netopt_same_prefix(int family, const uint8_t *a, const uint8_t *b, unsigned plen);

/* Open the link of o: for mem a pair (*peer the other end), else
 * hp_link_open with *peer NULL (afxdp in copy mode); then the pcap
 * decorator when --pcap. base (or NULL) gives the rest of the link
 * configuration (pool, ring size, flags); iface comes from o.
 * 0, or 1 after printing the reason. */
int netopt_open_link(const char *cmd, const struct net_opts *o, const struct hp_link_config *base,
                     struct hp_link **link, struct hp_link **peer);

/* A stack named name on link with the addresses ips[0 .. nip-1] and, when
 * gw is set, o's gateways; flags: hp_stack_config.flags. *out is set as
 * soon as the stack exists (destroy it on failure too). 0, or 1 after
 * printing the reason. */
int netopt_setup_stack(const char *cmd, const struct net_opts *o, const struct cidr *ips, int nip,
                       bool gw, struct hp_link *link, const char *name, unsigned flags,
                       struct hp_stack **out);

#endif
