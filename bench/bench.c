/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench NAME`: the benchmarks, each against the peers a user would otherwise pick, in one run. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cmd.h"
#include "tool.h"

static const struct {
    const char *name;
    int (*run)(const struct bench_opts *o, FILE *table);
    const char *help;
} benches[] = {
    {"cksum", bench_cksum,
     "Internet checksum, cycles/byte: hotpath and each variant vs DPDK, unroll64, RFC 1071"},
    {"pool", bench_pool,
     "buffer pool, Mbuf/s and CPU ns/buf: each alien policy vs DPDK rte_mempool, malloc"},
    {"afxdp-raw", bench_afxdp,
     "AF_XDP txonly, Mpps: the afxdp link vs a bare libxdp loop (root; a veth pair of its own)"},
    {"txcomp", bench_txcomp,
     "txonly with a completion thread (the seed's AF_XDP experiment): each alien policy"},
    {"udp-echo", bench_udp,
     "UDP echo, echoes/s and CPU ns/echo: two stacks over mem; over veth (root) hotpath serve vs "
     "the kernel's recvmmsg/sendmmsg server"},
    {"tcp-stream", bench_tcp_stream,
     "one TCP flow, Gbit/s and CPU ns/byte: two stacks over mem (MTU 1500) vs the kernel's TCP "
     "over loopback"},
    {"tcp-rr", bench_tcp_rr,
     "TCP 1-byte request/response, CPU ns/transaction: two stacks over mem vs the kernel's TCP "
     "over loopback"},
    {"paths", bench_paths,
     "TCP through hotpath impair (100 Mbit/s, 20 ms, loss, reordering, ECN, a tail loss) and a "
     "1280-byte routed path: hotpath's and the kernel's senders, goodput and completion times "
     "(root; about 20 minutes, --quick 1)"},
    {"peers", bench_peers,
     "hotpath vs lwIP and smoltcp on one harness (two instances, one thread): tcp_rr, bulk, "
     "connection rate, UDP echo, idle memory"},
    {"loop", bench_loop,
     "UDP 1-byte request/response over mem, p50/p99: the event loop (each spin setting) vs a "
     "hand-written poll loop"},
    {"memif", bench_memif,
     "memif between processes: 64 B txonly->rxdrop Mpps vs DPDK testpmd both ways, one TCP flow vs "
     "the kernel's"},
    {"apps", bench_apps,
     "redis, nginx/wrk, iperf3 unmodified: kernel vs server on hotpath vs both on hotpath (root; "
     "docs/apps.md)"},
};
#define NBENCH (sizeof benches / sizeof benches[0])

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hotpath bench NAME [--json] [--quick] [--reps N] [--cpu N] [--iface IF]\n\n");
    for (size_t i = 0; i < NBENCH; i++)
        fprintf(f, "  %-10s %s\n", benches[i].name, benches[i].help);
    fprintf(f, "  %-10s %s\n", "all", "every benchmark in turn");
    fprintf(f, "\n  --json     JSON on stdout instead of a table\n"
               "  --quick    fewer repetitions\n"
               "  --reps N   repetitions per measurement (median reported)\n"
               "  --cpu N    pin the measuring thread to CPU N (default: the last CPU;\n"
               "             -1 leaves it unpinned)\n"
               "  --iface IF benchmarks on a real interface use IF (default: a veth pair\n"
               "             in namespaces of their own, made and removed by the run)\n");
}

int cmd_bench(int argc, char **argv)
{
    struct bench_opts o = {.cpu = tool_ncpus() - 1};
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"quick", no_argument, NULL, 'q'},
        {"reps", required_argument, NULL, 'r'},
        {"cpu", required_argument, NULL, 'c'},
        {"iface", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "jqr:c:i:h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'j':
            o.json = true;
            break;
        case 'q':
            o.quick = true;
            break;
        case 'r':
            o.reps = (int)strtol(optarg, &end, 10);
            if (*end || o.reps < 1 || o.reps > 64)
                return tool_usage_error("bench", "--reps wants a number from 1 to 64, not '%s'",
                                        optarg);
            break;
        case 'c':
            if (tool_parse_cpu("bench", optarg, &o.cpu))
                return 2;
            break;
        case 'i':
            o.iface = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return tool_usage_error("bench", "unknown option");
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[optind];
    if (optind + 1 < argc)
        return tool_usage_error("bench", "unexpected argument '%s'", argv[optind + 1]);
    int rc = 0;
    bool found = false;
    for (size_t i = 0; i < NBENCH; i++)
        if (strcmp(name, "all") == 0 || strcmp(name, benches[i].name) == 0) {
            found = true;
            rc |= benches[i].run(&o, stdout);
        }
    if (!found)
        return tool_usage_error("bench", "no benchmark named '%s'", name);
    return rc;
}
