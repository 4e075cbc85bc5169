/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath serve`: a stack on one link answering ARP, NDP, ping and UDP echo, with counters each second. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "tool.h"

#define MAX_ADDRS 8

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

struct cidr {
    int family;
    uint8_t addr[16];
    uint8_t plen;
};

struct serve_opts {
    const char *link, *iface, *pcap;
    struct cidr ip[MAX_ADDRS];
    int nip;
    uint8_t gw4[4], gw6[16];
    bool has_gw4, has_gw6;
    unsigned port;
    bool json;
    double duration;     /* 0: until interrupted */
    int cpu;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath serve --link afxdp|afpacket|tap|mem --iface IF --ip ADDR/LEN [OPTIONS]\n\n"
            "Run a stack on one link: it answers ARP, NDP and ping, and echoes UDP.\n\n"
            "  --link KIND       afxdp (copy mode), afpacket, tap, or mem: a self-test with a\n"
            "                    built-in client stack on the other end of an in-process pair\n"
            "  --iface IF        the interface (all links but mem)\n"
            "  --ip A/LEN        an IPv4 address and prefix (repeatable)\n"
            "  --ip6 A/LEN       an IPv6 address and prefix (repeatable)\n"
            "  --gw A, --gw6 A   default gateways\n"
            "  --udp-echo PORT   echo UDP datagrams on PORT, both families (default 7)\n"
            "  --pcap FILE       write every frame to FILE\n"
            "  --json-stats      a JSON object of counters each second instead of a line\n"
            "  --duration S      stop after S seconds (default: at SIGINT / SIGTERM)\n"
            "  --cpu N           pin to CPU N\n");
}

/* "198.18.0.2/24" or "2001:2::2/64" of the expected family. */
static int parse_cidr(const char *opt, const char *arg, int family, struct cidr *out)
{
    char host[64];
    const char *slash = strchr(arg, '/');
    if (!slash || (size_t)(slash - arg) >= sizeof host || !slash[1])
        return tool_usage_error("serve", "%s '%s': wants ADDRESS/PREFIX-LENGTH", opt, arg);
    memcpy(host, arg, (size_t)(slash - arg));
    host[slash - arg] = '\0';
    char *end;
    errno = 0;
    long plen = strtol(slash + 1, &end, 10);
    if (errno || *end || plen < 0 || plen > (family == 4 ? 32 : 128) || slash[1] == '-' || slash[1] == '+')
        return tool_usage_error("serve", "%s '%s': the prefix length wants 0 to %d", opt, arg,
                                family == 4 ? 32 : 128);
    if (inet_pton(family == 4 ? AF_INET : AF_INET6, host, out->addr) != 1)
        return tool_usage_error("serve", "%s '%s': '%s' is not an IPv%d address", opt, arg, host, family);
    out->family = family;
    out->plen = (uint8_t)plen;
    return 0;
}

/* Counters each second: the non-zero ones on one line, or a JSON object. */
static void print_counters(const struct serve_opts *o, struct hp_stack *s, double t, const char *tag)
{
    if (o->json) {
        printf("{\"t\": %.3f, \"event\": \"%s\", \"counters\": {", t, tag);
        bool first = true;
        for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
            uint64_t v = hp_stack_counter(s, (enum hp_stack_ctr)c);
            if (!v)
                continue;
            printf("%s\"%s\": %llu", first ? "" : ", ", hp_stack_counter_name((enum hp_stack_ctr)c),
                   (unsigned long long)v);
            first = false;
        }
        printf("}}\n");
    } else {
        printf("serve %s %.1f s:", tag, t);
        for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
            uint64_t v = hp_stack_counter(s, (enum hp_stack_ctr)c);
            if (v)
                printf(" %s=%llu", hp_stack_counter_name((enum hp_stack_ctr)c), (unsigned long long)v);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* Echo what is queued: zero-copy, the received buffer goes back. */
static uint64_t echo_all(struct hp_udp_sock *u)
{
    uint64_t n = 0;
    struct hp_buf *b;
    struct hp_sockaddr from;
    while (u && hp_udp_recv_buf(u, &b, &from) >= 0) {
        if (hp_udp_send_buf(u, b, &from) < 0)
            hp_buf_free(b);
        else
            n++;
    }
    return n;
}

static int setup_stack(const struct serve_opts *o, struct hp_link *link, const char *name,
                       struct hp_stack **out)
{
    struct hp_stack_config sc = {.name = name};
    /* The mem self-test has nobody to collide with. */
    if (strcmp(o->link, "mem") == 0)
        sc.flags = HP_STACK_F_NO_DAD;
    struct hp_stack *s = hp_stack_create(&sc);
    if (!s) {
        fprintf(stderr, "hotpath serve: cannot create a stack: %s\n", hp_strerror(-errno));
        return 1;
    }
    *out = s;
    int ifx = hp_stack_add_iface(s, link);
    if (ifx < 0) {
        fprintf(stderr, "hotpath serve: cannot add %s: %s\n", hp_link_name(link), hp_strerror(ifx));
        return 1;
    }
    for (int i = 0; i < o->nip; i++) {
        int rc = hp_stack_add_addr(s, ifx, o->ip[i].family, o->ip[i].addr, o->ip[i].plen);
        if (rc < 0) {
            char a[64];
            inet_ntop(o->ip[i].family == 4 ? AF_INET : AF_INET6, o->ip[i].addr, a, sizeof a);
            fprintf(stderr, "hotpath serve: cannot add %s/%u: %s\n", a, o->ip[i].plen, hp_strerror(rc));
            return 1;
        }
    }
    if (o->has_gw4 && hp_stack_set_gateway(s, 4, o->gw4) < 0) {
        fprintf(stderr, "hotpath serve: --gw is not usable\n");
        return 1;
    }
    if (o->has_gw6 && hp_stack_set_gateway(s, 6, o->gw6) < 0) {
        fprintf(stderr, "hotpath serve: --gw6 is not usable\n");
        return 1;
    }
    return 0;
}

/*
 * The mem self-test: a client stack on the other end of the pair, one host
 * number above each server address, pings and sends UDP to every server
 * address and checks the echoes.
 */
struct selftest {
    struct hp_stack *s;
    struct hp_udp_sock *u[2]; /* IPv4, IPv6 */
    struct cidr peer[MAX_ADDRS];
    int npeer;
    uint64_t sent, echoed, bad, pings;
    uint16_t seq;
};

static int selftest_setup(const struct serve_opts *o, struct hp_link *link, struct selftest *t)
{
    struct serve_opts co = *o;
    co.has_gw4 = co.has_gw6 = false;
    co.nip = 0;
    for (int i = 0; i < o->nip; i++) {
        struct cidr c = o->ip[i];
        int last = c.family == 4 ? 3 : 15;
        c.addr[last] = (uint8_t)(c.addr[last] + 1); /* the neighbour address */
        co.ip[co.nip++] = c;
        t->peer[t->npeer++] = o->ip[i];
    }
    int rc = setup_stack(&co, link, "selftest", &t->s);
    if (rc)
        return rc;
    for (int f = 0; f < 2; f++)
        t->u[f] = hp_udp_open(t->s, f ? 6 : 4, NULL);
    return t->u[0] && t->u[1] ? 0 : 1;
}

static void selftest_send(struct selftest *t, unsigned port)
{
    for (int i = 0; i < t->npeer; i++) {
        struct hp_sockaddr to = {.family = (uint8_t)t->peer[i].family, .port = (uint16_t)port};
        memcpy(to.addr, t->peer[i].addr, 16);
        char msg[32];
        int len = snprintf(msg, sizeof msg, "hotpath selftest %u", t->seq);
        if (hp_udp_sendto(t->u[to.family == 6], msg, (size_t)len, &to) == len)
            t->sent++;
        if (hp_stack_ping(t->s, to.family, to.addr, 0x4850, t->seq, 56) == 0)
            t->pings++;
    }
    t->seq++;
}

static void selftest_recv(struct selftest *t)
{
    for (int f = 0; f < 2; f++) {
        char buf[64];
        int n;
        while ((n = hp_udp_recvfrom(t->u[f], buf, sizeof buf, NULL)) >= 0) {
            if (n >= 16 && memcmp(buf, "hotpath selftest", 16) == 0)
                t->echoed++;
            else
                t->bad++;
        }
    }
}

static int serve_run(const struct serve_opts *o)
{
    struct hp_link *link = NULL, *peer = NULL;
    if (strcmp(o->link, "mem") == 0) {
        struct hp_link *ends[2];
        if (hp_link_mem_pair(NULL, ends) < 0) {
            fprintf(stderr, "hotpath serve: %s\n", hp_link_error());
            return 1;
        }
        link = ends[0];
        peer = ends[1];
    } else {
        struct hp_link_config lc = {.iface = o->iface};
        if (strcmp(o->link, "afxdp") == 0)
            lc.flags = HP_LINK_F_COPY;
        link = hp_link_open(o->link, &lc);
        if (!link) {
            fprintf(stderr, "hotpath serve: %s\n", hp_link_error());
            return 1;
        }
    }
    if (o->pcap) {
        struct hp_link *p = hp_link_pcap(link, o->pcap);
        if (!p) {
            fprintf(stderr, "hotpath serve: --pcap %s: %s\n", o->pcap, hp_link_error());
            hp_link_close(link);
            hp_link_close(peer);
            return 1;
        }
        link = p;
    }
    if (o->cpu >= 0)
        tool_pin(o->cpu);

    int rc = 0;
    struct hp_stack *s = NULL;
    struct hp_udp_sock *u[2] = {NULL, NULL};
    struct selftest t;
    memset(&t, 0, sizeof t);
    if ((rc = setup_stack(o, link, "serve", &s)) != 0)
        goto out;
    for (int f = 0; f < 2; f++) {
        u[f] = hp_udp_open(s, f ? 6 : 4, NULL);
        struct hp_sockaddr any = {.family = (uint8_t)(f ? 6 : 4), .port = (uint16_t)o->port};
        int b = u[f] ? hp_udp_bind(u[f], &any) : -ENOMEM;
        if (b < 0) {
            fprintf(stderr, "hotpath serve: cannot bind UDP port %u (IPv%d): %s\n", o->port, f ? 6 : 4,
                    hp_strerror(b));
            rc = 1;
            goto out;
        }
    }
    if (peer && (rc = selftest_setup(o, peer, &t)) != 0)
        goto out;

    double t0 = tool_now_s(), next = t0 + 1, next_send = t0 + 0.05;
    double end = o->duration > 0 ? t0 + o->duration : 0;
    if (!o->json)
        printf("serve: %s on %s, UDP echo on port %u%s\n", hp_link_kind(link), hp_link_name(link), o->port,
               peer ? " (self-test client on the other end)" : "");
    struct hp_event ev[16];
    while (!interrupted) {
        hp_stack_poll(s);
        /* Echo whatever is queued each round, so the events only need
         * draining (they would say which socket to look at). */
        hp_stack_events(s, ev, 16);
        echo_all(u[0]);
        echo_all(u[1]);
        if (peer) {
            hp_stack_poll(t.s);
            selftest_recv(&t);
        }
        double now = tool_now_s();
        if (peer && now >= next_send && (!end || now < end - 0.2)) {
            selftest_send(&t, o->port);
            next_send = now + 0.05;
        }
        if (now >= next) {
            print_counters(o, s, now - t0, "tick");
            next += 1;
        }
        if (end && now >= end)
            break;
    }
    print_counters(o, s, tool_now_s() - t0, "exit");
    if (peer) {
        uint64_t reps = hp_stack_counter(t.s, HP_CTR_ICMP_IN_ECHO_REPS) +
                        hp_stack_counter(t.s, HP_CTR_ICMP6_IN_ECHO_REPS);
        bool ok = t.sent > 0 && t.echoed == t.sent && t.bad == 0 && reps == t.pings;
        printf("serve self-test: %llu/%llu UDP echoes, %llu/%llu ping replies: %s\n",
               (unsigned long long)t.echoed, (unsigned long long)t.sent, (unsigned long long)reps,
               (unsigned long long)t.pings, ok ? "ok" : "FAILED");
        if (!ok)
            rc = 1;
    }
out:
    for (int f = 0; f < 2; f++) {
        hp_udp_close(u[f]);
        hp_udp_close(t.u[f]);
    }
    hp_stack_destroy(s);
    hp_stack_destroy(t.s);
    hp_pool_thread_flush(hp_link_pool(link));
    int c1 = hp_link_close(link), c2 = hp_link_close(peer);
    long left = hp_pools_in_use();
    if (c1 < 0 || c2 < 0 || left != 0) {
        fprintf(stderr, "hotpath serve: %ld buffers still in use at exit\n", left);
        rc = rc ? rc : 1;
    }
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {.link = NULL, .port = 7, .cpu = -1};
    static const struct option longopts[] = {
        {"link", required_argument, NULL, 'l'}, {"iface", required_argument, NULL, 'i'},
        {"ip", required_argument, NULL, '4'}, {"ip6", required_argument, NULL, '6'},
        {"gw", required_argument, NULL, 'g'}, {"gw6", required_argument, NULL, 'G'},
        {"udp-echo", required_argument, NULL, 'u'}, {"pcap", required_argument, NULL, 'p'},
        {"json-stats", no_argument, NULL, 'j'}, {"duration", required_argument, NULL, 'd'},
        {"cpu", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'l':
            o.link = optarg;
            break;
        case 'i':
            o.iface = optarg;
            break;
        case '4':
        case '6':
            if (o.nip == MAX_ADDRS)
                return tool_usage_error("serve", "at most %d addresses", MAX_ADDRS);
            if (parse_cidr(c == '4' ? "--ip" : "--ip6", optarg, c == '4' ? 4 : 6, &o.ip[o.nip]))
                return 2;
            o.nip++;
            break;
        case 'g':
            if (inet_pton(AF_INET, optarg, o.gw4) != 1)
                return tool_usage_error("serve", "--gw '%s': not an IPv4 address", optarg);
            o.has_gw4 = true;
            break;
        case 'G':
            if (inet_pton(AF_INET6, optarg, o.gw6) != 1)
                return tool_usage_error("serve", "--gw6 '%s': not an IPv6 address", optarg);
            o.has_gw6 = true;
            break;
        case 'u': {
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || *end || !*optarg || optarg[0] == '-' || v < 1 || v > 65535)
                return tool_usage_error("serve", "--udp-echo wants a port from 1 to 65535, not '%s'", optarg);
            o.port = (unsigned)v;
            break;
        }
        case 'p':
            o.pcap = optarg;
            break;
        case 'j':
            o.json = true;
            break;
        case 'd':
            o.duration = strtod(optarg, &end);
            if (*end || !(o.duration > 0) || o.duration > 86400 * 365.0)
                return tool_usage_error("serve", "--duration wants seconds (> 0), not '%s'", optarg);
            break;
        case 'c':
            if (tool_parse_cpu("serve", optarg, &o.cpu))
                return 2;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return tool_usage_error("serve", "unknown option (hotpath serve --help lists them)");
        }
    }
    if (optind < argc)
        return tool_usage_error("serve", "unexpected argument '%s'", argv[optind]);
    if (!o.link)
        return tool_usage_error("serve", "--link is required: afxdp, afpacket, tap or mem");
    if (strcmp(o.link, "mem") && strcmp(o.link, "tap") && strcmp(o.link, "afpacket") &&
        strcmp(o.link, "afxdp"))
        return tool_usage_error("serve", "--link '%s': not afxdp, afpacket, tap or mem", o.link);
    bool mem = strcmp(o.link, "mem") == 0;
    if (!mem && !o.iface)
        return tool_usage_error("serve", "--link %s needs --iface", o.link);
    if (mem && o.iface)
        return tool_usage_error("serve", "--iface is for real links; mem makes its own pair");
    if (o.nip == 0)
        return tool_usage_error("serve", "give at least one address (--ip or --ip6)");
    if (mem && !(o.duration > 0))
        o.duration = 1;
    for (int i = 0; mem && i < o.nip; i++) {
        int last = o.ip[i].family == 4 ? 3 : 15;
        if (o.ip[i].addr[last] >= 254 || o.ip[i].plen > (o.ip[i].family == 4 ? 30 : 126))
            return tool_usage_error("serve", "--link mem: the self-test client takes the next address, "
                                             "so each address must leave room for it on its prefix");
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return serve_run(&o);
}
