/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath run`: an unmodified program on a hotpath stack, through libhotpath-posix.so (LD_PRELOAD and HOTPATH_* variables); --stats prints the stack's counters at its exit. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "netopts.h"
#include "tool.h"

struct run_opts {
    struct net_opts n;
    const char *lib;      /* --lib PATH */
    const char *fallback; /* --fallback kernel|none */
    long queue, bufs, busy_us;
    bool stats, no_dad;
    bool copy, zerocopy, skb; /* --copy, --zero-copy, --skb (afxdp) */
    char **argv;              /* the command */
};

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: hotpath run --link afxdp|afpacket|tap --iface IF --ip A/LEN [--ip6 A/LEN] [--gw "
        "A]\n"
        "                   [--gw6 A] [--queue N] [--stats] [OPTIONS] -- COMMAND [ARGS...]\n"
        "       hotpath run --link memif --memif-socket PATH [--memif-role client|server]\n"
        "                   [--memif-id N] [--memif-secret S] --ip A/LEN [OPTIONS]\n"
        "                   -- COMMAND [ARGS...]\n\n"
        "Run an unmodified program on a hotpath stack: its AF_INET / AF_INET6 TCP and UDP\n"
        "sockets live on hotpath (libhotpath-posix.so, preloaded), everything else stays\n"
        "with the kernel. The interface must be hotpath's: no kernel address of the same\n"
        "IP on it (docs/apps.md). Sets LD_PRELOAD and the HOTPATH_* variables below, which\n"
        "also work without this command.\n\n"
        "  --link KIND       afxdp, afpacket, tap (an existing device) or memif (shared\n"
        "                    memory with another process)                  HOTPATH_LINK\n"
        "  --iface IF        the interface (not memif)                     HOTPATH_IFACE\n"
        "  --memif-socket P  memif: the control socket (@NAME: abstract;\n"
        "                    server: made here)                     HOTPATH_MEMIF_SOCKET\n"
        "  --memif-role R    memif: client (the default; waits for the\n"
        "                    server HOTPATH_MEMIF_WAIT_MS) or server     HOTPATH_MEMIF_ROLE\n"
        "  --memif-id N      memif: the interface id (default 0)           HOTPATH_MEMIF_ID\n"
        "  --memif-secret S  memif: the shared secret, 1 to 24 bytes (a\n"
        "                    server with one refuses clients without it;\n"
        "                    other users see it in ps: set the variable\n"
        "                    instead to keep it out)                HOTPATH_MEMIF_SECRET\n"
        "  --ip A/LEN        IPv4 address (repeatable)                     HOTPATH_IP\n"
        "  --ip6 A/LEN       IPv6 address (repeatable)                     HOTPATH_IP6\n"
        "  --gw A, --gw6 A   default gateways                       HOTPATH_GW, HOTPATH_GW6\n"
        "  --queue N         afxdp: the interface queue (default 0)        HOTPATH_QUEUE\n"
        "  --copy | --zero-copy\n"
        "                    afxdp: force the copy or the zero-copy bind (default: the\n"
        "                    kernel's choice, zero-copy where the driver can)\n"
        "  --skb             afxdp: attach XDP in generic (SKB) mode (default: native\n"
        "                    where the driver has it, else generic)   HOTPATH_AFXDP_MODE\n"
        "  --pcap FILE       write every frame to FILE                     HOTPATH_PCAP\n"
        "  --bufs N          packet buffers (afxdp: UMEM frames; 32768)    HOTPATH_BUFS\n"
        "  --busy-poll US    spin this long before sleeping (50; 0 never)  HOTPATH_BUSY_POLL_US\n"
        "  --no-dad          IPv6 addresses usable at once, without duplicate address\n"
        "                    detection (a link nobody else uses)           HOTPATH_NO_DAD=1\n"
        "  --fallback kernel when the stack cannot be made, inet sockets go to the\n"
        "                    kernel instead of failing                     HOTPATH_FALLBACK\n"
        "  --stats           print the stack's counters when the program exits\n"
        "                    (stderr; the layer writes them to HOTPATH_STATS=FILE)\n"
        "  --lib PATH        the layer (default: beside this binary, then the install)\n\n"
        "Exit status: the program's (128 + N when signal N ended it).\n");
}

static int parse_num(const char *opt, const char *arg, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || *end || end == arg || v < lo || v > hi)
        return tool_usage_error("run", "%s '%s': wants a number from %ld to %ld", opt, arg, lo, hi);
    *out = v;
    return 0;
}

enum { OPT_COPY = 1000, OPT_ZEROCOPY, OPT_SKB };

/* The options together, once all are read; the command from argv[optind]. */
static int check(struct run_opts *o, int argc, char **argv)
{
    if (netopt_check("run", &o->n))
        return 2;
    if (o->copy && o->zerocopy)
        return tool_usage_error("run", "--copy and --zero-copy exclude each other");
    if (o->zerocopy && o->skb)
        return tool_usage_error("run", "--zero-copy needs the driver's own XDP, not --skb");
    if ((o->copy || o->zerocopy || o->skb) && strcmp(o->n.link, "afxdp") != 0)
        return tool_usage_error("run", "--copy, --zero-copy and --skb are for --link afxdp");
    if (strcmp(o->n.link, "mem") == 0)
        return tool_usage_error("run", "--link mem: a program needs a real link (afxdp, "
                                       "afpacket, tap, memif)");
    if (o->n.cpu >= 0)
        return tool_usage_error("run", "--cpu: pin the program with taskset instead");
    if (o->n.nip == 0)
        return tool_usage_error("run", "--ip or --ip6 is required");
    if (optind >= argc)
        return tool_usage_error("run", "no command: hotpath run [OPTIONS] -- COMMAND [ARGS...]");
    o->argv = argv + optind;
    return 0;
}

static int parse(int argc, char **argv, struct run_opts *o)
{
    static const struct option longopts[] = {
        NETOPT_LONGOPTS,
        {"queue", required_argument, NULL, 'q'},
        {"stats", no_argument, NULL, 's'},
        {"lib", required_argument, NULL, 'L'},
        {"fallback", required_argument, NULL, 'F'},
        {"bufs", required_argument, NULL, 'b'},
        {"busy-poll", required_argument, NULL, 'B'},
        {"no-dad", no_argument, NULL, 'D'},
        /* Long only: the one-letter codes are netopts' (--cpu is 'c'). */
        {"copy", no_argument, NULL, OPT_COPY},
        {"zero-copy", no_argument, NULL, OPT_ZEROCOPY},
        {"skb", no_argument, NULL, OPT_SKB},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    netopt_init(&o->n);
    o->queue = o->bufs = o->busy_us = -1;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        int rc = netopt_parse("run", &o->n, c, optarg);
        if (rc == 0)
            continue;
        if (rc == 2)
            return 2;
        rc = 0;
        switch (c) {
        case 'q':
            rc = parse_num("--queue", optarg, 0, 4095, &o->queue);
            break;
        case 'b':
            rc = parse_num("--bufs", optarg, 1024, 1L << 22, &o->bufs);
            break;
        case 'B':
            rc = parse_num("--busy-poll", optarg, 0, 1000000, &o->busy_us);
            break;
        case 's':
            o->stats = true;
            break;
        case 'D':
            o->no_dad = true;
            break;
        case OPT_COPY:
            o->copy = true;
            break;
        case OPT_ZEROCOPY:
            o->zerocopy = true;
            break;
        case OPT_SKB:
            o->skb = true;
            break;
        case 'L':
            o->lib = optarg;
            break;
        case 'F':
            if (strcmp(optarg, "kernel") && strcmp(optarg, "none"))
                return tool_usage_error("run", "--fallback '%s': not kernel or none", optarg);
            o->fallback = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return 2;
        }
        if (rc)
            return 2;
    }
    return check(o, argc, argv);
}

/* ---- the environment ------------------------------------------------------------- */

/* The layer: --lib, then beside this binary (the build tree), then the
 * installed library. */
static int find_lib(const char *given, char *out, size_t cap)
{
    if (given) {
        if (!realpath(given, out))
            return tool_usage_error("run", "--lib %s: %s", given, strerror(errno));
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            snprintf(out, cap, "%.*s/libhotpath-posix.so", (int)(slash - self), self);
            if (access(out, R_OK) == 0)
                return 0;
        }
    }
    snprintf(out, cap, "%s/libhotpath-posix.so", HP_LIB_DIR);
    if (access(out, R_OK) == 0)
        return 0;
    fprintf(
        stderr,
        "hotpath run: libhotpath-posix.so is neither beside %s nor in %s: build it (make build) "
        "or give --lib PATH\n",
        n > 0 ? self : "this binary", HP_LIB_DIR);
    return 1;
}

/* "A/LEN,A/LEN" of one family into buf. */
static void cidrs(const struct net_opts *n, int family, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->nip; i++) {
        if (n->ip[i].family != family)
            continue;
        char a[64];
        inet_ntop(family == 4 ? AF_INET : AF_INET6, n->ip[i].addr, a, sizeof a);
        int w = snprintf(buf + at, cap - at, "%s%s/%u", at ? "," : "", a, n->ip[i].plen);
        if (w < 0 || (size_t)w >= cap - at)
            break;
        at += (size_t)w;
    }
}

static void set_num(const char *name, long v)
{
    if (v < 0)
        return;
    char b[24];
    snprintf(b, sizeof b, "%ld", v);
    setenv(name, b, 1);
}

static void set_env(const struct run_opts *o, const char *lib, const char *stats_path)
{
    char buf[1024];
    const char *pre = getenv("LD_PRELOAD");
    size_t need = strlen(lib) + (pre ? strlen(pre) : 0) + 2;
    char *preload = malloc(need);
    if (preload) {
        snprintf(preload, need, "%s%s%s", lib, pre && *pre ? ":" : "", pre && *pre ? pre : "");
        setenv("LD_PRELOAD", preload, 1);
        free(preload);
    }
    setenv("HOTPATH_LINK", o->n.link, 1);
    if (o->n.iface)
        setenv("HOTPATH_IFACE", o->n.iface, 1);
    if (strcmp(o->n.link, "memif") == 0) {
        setenv("HOTPATH_MEMIF_SOCKET", o->n.memif.socket, 1);
        setenv("HOTPATH_MEMIF_ROLE", o->n.memif.role == HP_MEMIF_SERVER ? "server" : "client", 1);
        set_num("HOTPATH_MEMIF_ID", (long)o->n.memif.id);
        /* Without the option, a HOTPATH_MEMIF_SECRET already in our
         * environment passes to the program as it is. */
        if (o->n.memif.secret)
            setenv("HOTPATH_MEMIF_SECRET", o->n.memif.secret, 1);
    }
    cidrs(&o->n, 4, buf, sizeof buf);
    buf[0] ? setenv("HOTPATH_IP", buf, 1) : unsetenv("HOTPATH_IP");
    cidrs(&o->n, 6, buf, sizeof buf);
    buf[0] ? setenv("HOTPATH_IP6", buf, 1) : unsetenv("HOTPATH_IP6");
    if (o->n.has_gw4 && inet_ntop(AF_INET, o->n.gw4, buf, sizeof buf))
        setenv("HOTPATH_GW", buf, 1);
    if (o->n.has_gw6 && inet_ntop(AF_INET6, o->n.gw6, buf, sizeof buf))
        setenv("HOTPATH_GW6", buf, 1);
    if (o->n.pcap)
        setenv("HOTPATH_PCAP", o->n.pcap, 1);
    if (o->fallback)
        setenv("HOTPATH_FALLBACK", o->fallback, 1);
    if (o->no_dad)
        setenv("HOTPATH_NO_DAD", "1", 1);
    set_num("HOTPATH_QUEUE", o->queue);
    if (o->copy || o->zerocopy || o->skb) {
        snprintf(buf, sizeof buf, "%s%s%s",
                 o->copy       ? "copy"
                 : o->zerocopy ? "zerocopy"
                               : "",
                 (o->copy || o->zerocopy) && o->skb ? "," : "", o->skb ? "skb" : "");
        setenv("HOTPATH_AFXDP_MODE", buf, 1);
    }
    set_num("HOTPATH_BUFS", o->bufs);
    set_num("HOTPATH_BUSY_POLL_US", o->busy_us);
    if (stats_path)
        setenv("HOTPATH_STATS", stats_path, 1);
    /* A fresh stack: not the child of another hotpath process. */
    unsetenv("HOTPATH_OWNER_PID");
}

/* ---- --stats: run, wait, print --------------------------------------------------- */

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static void print_stats(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        fprintf(stderr,
                "hotpath run: no statistics (%s): the program opened no hotpath socket, or "
                "ended without exiting (a signal)\n",
                err.text);
        return;
    }
    fprintf(
        stderr,
        "hotpath run: stack of process %lld on %s %s: %lld polls, %lld buffer(s) in use at exit\n",
        (long long)json_integer_value(json_object_get(root, "pid")),
        json_string_value(json_object_get(root, "link")),
        json_string_value(json_object_get(root, "iface")),
        (long long)json_integer_value(json_object_get(root, "polls")),
        (long long)json_integer_value(json_object_get(root, "buffers_in_use")));
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(root, "counters"), key, v)
        fprintf(stderr, "  %-28s %lld\n", key, (long long)json_integer_value(v));
    json_object_foreach(json_object_get(root, "link_stats"), key, v)
        fprintf(stderr, "  link.%-23s %lld\n", key, (long long)json_integer_value(v));
    /* memif's life, where something happened (a counter named *errors* at 0
     * would read as an error to a script grepping for one). */
    json_object_foreach(json_object_get(root, "memif"), key, v) if (json_integer_value(v))
        fprintf(stderr, "  memif.%-22s %lld\n", key, (long long)json_integer_value(v));
    json_decref(root);
}

static int run_with_stats(char **argv)
{
    char path[] = "/tmp/hotpath-run-stats.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "hotpath run: cannot make a statistics file: %s\n", strerror(errno));
        return 1;
    }
    close(fd);
    setenv("HOTPATH_STATS", path, 1);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "hotpath run: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        fprintf(stderr, "hotpath run: fork: %s\n", strerror(errno));
        unlink(path);
        return 1;
    }
    child_pid = pid;
    struct sigaction sa = {.sa_handler = forward, .sa_flags = SA_RESTART};
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    print_stats(path);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    char lib[PATH_MAX];
    if ((rc = find_lib(o.lib, lib, sizeof lib)) != 0)
        return rc;
    set_env(&o, lib, NULL);
    if (o.stats)
        return run_with_stats(o.argv);
    execvp(o.argv[0], o.argv);
    fprintf(stderr, "hotpath run: %s: %s\n", o.argv[0], strerror(errno));
    return 127;
}
