/* SPDX-License-Identifier: BSD-3-Clause */
/* The link and address options that `hotpath serve` and `hotpath connect` share: parsing, opening the link, setting up a stack. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/err.h>

#include "netopts.h"
#include "tool.h"

void netopt_init(struct net_opts *o)
{
    memset(o, 0, sizeof *o);
    o->cpu = -1;
    memifopt_init(&o->memif);
}

int netopt_parse_cidr(const char *cmd, const char *opt, const char *arg, int family,
                      struct cidr *out)
{
    char host[64];
    const char *slash = strchr(arg, '/');
    if (!slash || (size_t)(slash - arg) >= sizeof host || !slash[1])
        return tool_usage_error(cmd, "%s '%s': wants ADDRESS/PREFIX-LENGTH", opt, arg);
    memcpy(host, arg, (size_t)(slash - arg));
    host[slash - arg] = '\0';
    char *end;
    errno = 0;
    long plen = strtol(slash + 1, &end, 10);
    if (errno || *end || plen < 0 || plen > (family == HP_AF_INET4 ? 32 : 128) || slash[1] == '-' ||
        slash[1] == '+')
        return tool_usage_error(cmd, "%s '%s': the prefix length wants 0 to %d", opt, arg,
                                family == HP_AF_INET4 ? 32 : 128);
    memset(out->addr, 0, sizeof out->addr);
    if (inet_pton(family == HP_AF_INET4 ? AF_INET : AF_INET6, host, out->addr) != 1)
        return tool_usage_error(cmd, "%s '%s': '%s' is not an IPv%d address", opt, arg, host,
                                family);
    out->family = family;
    out->plen = (uint8_t)plen;
    return 0;
}

void netopt_tcp(const struct net_opts *o, struct hp_tcp_config *tc)
{
    tc->cc = (uint8_t)o->cc;
}

int netopt_parse(const char *cmd, struct net_opts *o, int c, const char *arg)
{
    switch (c) {
    case 'l':
        o->link = arg;
        return 0;
    case 'i':
        o->iface = arg;
        return 0;
    case '4':
    case '6':
        if (o->nip == NETOPT_MAX_ADDRS)
            return tool_usage_error(cmd, "at most %d addresses", NETOPT_MAX_ADDRS);
        if (netopt_parse_cidr(cmd, c == '4' ? "--ip" : "--ip6", arg,
                              c == '4' ? HP_AF_INET4 : HP_AF_INET6, &o->ip[o->nip]))
            return 2;
        o->nip++;
        return 0;
    case 'g':
        if (inet_pton(AF_INET, arg, o->gw4) != 1)
            return tool_usage_error(cmd, "--gw '%s': not an IPv4 address", arg);
        o->has_gw4 = true;
        return 0;
    case 'C':
        if ((o->cc = hp_tcp_cc_by_name(arg)) < 0)
            return tool_usage_error(cmd, "--cc '%s': not cubic or newreno", arg);
        return 0;
    case 'G':
        if (inet_pton(AF_INET6, arg, o->gw6) != 1)
            return tool_usage_error(cmd, "--gw6 '%s': not an IPv6 address", arg);
        o->has_gw6 = true;
        return 0;
    case 'p':
        o->pcap = arg;
        return 0;
    case 'c':
        return tool_parse_cpu(cmd, arg, &o->cpu) ? 2 : 0;
    default:
        return memifopt_parse(cmd, &o->memif, c, arg);
    }
}

int netopt_check(const char *cmd, struct net_opts *o)
{
    if (!o->link)
        return tool_usage_error(cmd, "--link is required: afxdp, afpacket, tap, mem or memif");
    if (strcmp(o->link, "mem") && strcmp(o->link, "tap") && strcmp(o->link, "afpacket") &&
        strcmp(o->link, "afxdp") && strcmp(o->link, "memif"))
        return tool_usage_error(cmd, "--link '%s': not afxdp, afpacket, tap, mem or memif",
                                o->link);
    bool mem = strcmp(o->link, "mem") == 0, memif = strcmp(o->link, "memif") == 0;
    if (!mem && !memif && !o->iface)
        return tool_usage_error(cmd, "--link %s needs --iface", o->link);
    if (mem && o->iface)
        return tool_usage_error(cmd, "--iface is for real links; mem makes its own pair");
    if (memif && o->iface)
        return tool_usage_error(
            cmd, "--iface is for real links; memif names its peer with --memif-socket");
    return memifopt_check(cmd, o->link, &o->memif) ? 2 : 0;
}

bool netopt_same_prefix(int family, const uint8_t *a, const uint8_t *b, unsigned plen)
{
    unsigned bits = family == HP_AF_INET4 ? 32 : 128;
    if (plen > bits)
        plen = bits;
    unsigned whole = plen / 8, rest = plen % 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

int netopt_open_link(const char *cmd, const struct net_opts *o, const struct hp_link_config *base,
                     struct hp_link **link, struct hp_link **peer)
{
    *link = *peer = NULL;
    struct hp_link_config lc = {0};
    if (base)
        lc = *base;
    if (strcmp(o->link, "mem") == 0) {
        struct hp_link *ends[2];
        if (hp_link_mem_pair(&lc, ends) < 0) {
            fprintf(stderr, "hotpath %s: %s\n", cmd, hp_link_error());
            return 1;
        }
        *link = ends[0];
        *peer = ends[1];
    } else {
        lc.iface = o->iface;
        if (strcmp(o->link, "afxdp") == 0)
            lc.flags |= HP_LINK_F_COPY;
        if (strcmp(o->link, "memif") == 0)
            memifopt_apply(&o->memif, &lc);
        *link = hp_link_open(o->link, &lc);
        if (!*link) {
            fprintf(stderr, "hotpath %s: %s\n", cmd, hp_link_error());
            return 1;
        }
    }
    if (o->pcap) {
        struct hp_link *p = hp_link_pcap(*link, o->pcap);
        if (!p) {
            fprintf(stderr, "hotpath %s: --pcap %s: %s\n", cmd, o->pcap, hp_link_error());
            hp_link_close(*link);
            hp_link_close(*peer);
            *link = *peer = NULL;
            return 1;
        }
        *link = p;
    }
    return 0;
}

int netopt_setup_stack(const char *cmd, const struct net_opts *o, const struct cidr *ips, int nip,
                       bool gw, struct hp_link *link, const char *name, unsigned flags,
                       struct hp_stack **out)
{
    struct hp_stack_config sc = {.name = name, .flags = flags};
    struct hp_stack *s = hp_stack_create(&sc);
    if (!s) {
        fprintf(stderr, "hotpath %s: cannot create a stack: %s\n", cmd, hp_strerror(-errno));
        return 1;
    }
    *out = s;
    /* --cc for commands that keep the default TCP configuration (serve);
     * the others pass theirs through netopt_tcp. */
    struct hp_tcp_config tc = {0};
    netopt_tcp(o, &tc);
    (void)hp_tcp_configure(s, &tc);
    int ifx = hp_stack_add_iface(s, link);
    if (ifx < 0) {
        fprintf(stderr, "hotpath %s: cannot add %s: %s\n", cmd, hp_link_name(link),
                hp_strerror(ifx));
        return 1;
    }
    for (int i = 0; i < nip; i++) {
        int rc = hp_stack_add_addr(s, ifx, ips[i].family, ips[i].addr, ips[i].plen);
        if (rc < 0) {
            char a[64];
            inet_ntop(ips[i].family == HP_AF_INET4 ? AF_INET : AF_INET6, ips[i].addr, a, sizeof a);
            fprintf(stderr, "hotpath %s: cannot add %s/%u: %s\n", cmd, a, ips[i].plen,
                    hp_strerror(rc));
            return 1;
        }
    }
    /* IPv6 addresses are tentative until duplicate address detection ends
     * (RFC 4862 5.4): a connection from or to one before then fails with
     * EHOSTUNREACH, so wait for them here, polling the stack. */
    if (!(flags & HP_STACK_F_NO_DAD)) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < nip; i++) {
            if (ips[i].family != HP_AF_INET6)
                continue;
            enum hp_addr_state st;
            while ((st = hp_stack_addr_state(s, ifx, HP_AF_INET6, ips[i].addr)) ==
                   HP_ADDR_TENTATIVE) {
                clock_gettime(CLOCK_MONOTONIC, &t);
                if (t.tv_sec - t0.tv_sec > 10)
                    break;
                if (hp_stack_poll(s) == 0)
                    usleep(1000);
            }
            if (st != HP_ADDR_PREFERRED) {
                char a[64];
                inet_ntop(AF_INET6, ips[i].addr, a, sizeof a);
                fprintf(stderr, "hotpath %s: %s: %s\n", cmd, a,
                        st == HP_ADDR_DUPLICATE
                            ? "duplicate address detected on the link"
                            : "duplicate address detection did not finish in 10 s");
                return 1;
            }
        }
    }
    if (gw && o->has_gw4 && hp_stack_set_gateway(s, 4, o->gw4) < 0) {
        fprintf(stderr, "hotpath %s: --gw is not usable\n", cmd);
        return 1;
    }
    if (gw && o->has_gw6 && hp_stack_set_gateway(s, 6, o->gw6) < 0) {
        fprintf(stderr, "hotpath %s: --gw6 is not usable\n", cmd);
        return 1;
    }
    return 0;
}
