/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath impair`: a userspace netem, a bridge between two interfaces that delays, limits, queues, marks and loses frames. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "cmd.h"
#include "impair_path.h"
#include "memifopt.h"
#include "tool.h"

#define BURST 64
#define RING  65536

static volatile sig_atomic_t stop_now;

struct impair_opts {
    const char *link, *iface[2];
    struct impair_cfg path;       /* the impaired direction(s) */
    struct hp_fault_config fault; /* loss, dup, corrupt, reorder on output */
    bool only[2];                 /* --a2b / --b2a: impair that direction only */
    double duration;              /* 0: until SIGINT */
    bool json;
    bool wait; /* sleep in poll(2) when nothing is due, instead of spinning */
    int rt;    /* SCHED_FIFO priority; 0: the default policy */
    int cpu;
    struct memif_opts memif; /* --link memif: role and id of both sides */
};

/* One direction: frames received on in go out on out through path. */
struct impair_dir {
    const char *name;
    struct hp_link *in, *out;
    struct impair_path path;
    struct hp_fault_stats fault_last;
    uint64_t tx_full;
};

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: hotpath impair --link afxdp|afpacket|memif --iface-a A --iface-b B\n"
        "                      [--delay MS[,JITTER]] [--loss P] [--reorder P] [--dup P]\n"
        "                      [--corrupt P] [--rate MBIT] [--queue BYTES]\n"
        "                      [--ecn-mark-above BYTES] [--mtu N] [--seed N] [--drop-tail MS]\n"
        "                      [--a2b|--b2a] [--duration S] [--json-stats] [--cpu N] [--wait]\n"
        "                      [--rt PRIO] [--memif-role R] [--memif-id N] [--memif-secret S]\n"
        "\n"
        "Bridges frames between interfaces A and B (both directions), like netem on a wire:\n"
        "  --delay MS[,J]     one-way delay in milliseconds (fractions allowed), plus a uniform\n"
        "                     jitter in [-J, +J] that never reorders frames\n"
        "  --rate MBIT        a bottleneck of MBIT Mbit/s (frames serialised, Ethernet header "
        "counted)\n"
        "  --queue BYTES      its queue (tail drop); default 2 x delay x rate, at least 64 KiB\n"
        "  --ecn-mark-above B mark ECT packets CE when more than B bytes wait (RFC 3168)\n"
        "  --mtu N            drop IP packets longer than N bytes, silently (a black hole)\n"
        "  --loss/--dup/--corrupt/--reorder P   probabilities in [0, 1] (the fault decorator)\n"
        "  --drop-tail MS     lose the last TCP data segment of every burst (no frame after it\n"
        "                     for MS ms), once: its retransmission passes (a tail loss, as\n"
        "                     RACK-TLP repairs); needs --delay >= MS\n"
        "  --seed N           the random generator's seed (the same seed, the same faults)\n"
        "  --a2b / --b2a      impair only frames from A to B (or B to A); the other direction\n"
        "                     passes untouched\n"
        "  --duration S       stop after S seconds (default: at SIGINT / SIGTERM)\n"
        "  --json-stats       one JSON object per second instead of a line: the first at 0 s,\n"
        "                     once both interfaces are open, the last (\"final\") at the end\n"
        "  --cpu N            pin to CPU N\n"
        "  --wait             sleep in poll(2) while nothing is due instead of spinning (less\n"
        "                     CPU; a wake-up's latency more per frame)\n"
        "  --rt PRIO          run at real-time priority PRIO (SCHED_FIFO, 1-99; root), with\n"
        "                     --wait: frames leave on time on a machine busy with other work\n"
        "The interfaces are taken whole (afpacket: every frame; afxdp: copy mode): give the\n"
        "bridge its own namespace with no addresses on them (scripts/netns.sh up3).\n"
        "--link memif: A and B are two memif control sockets (@NAME: abstract), one\n"
        "interface on each, both with these:\n"
        "  --memif-role R     client (the default: connects to the sockets) or server\n"
        "  --memif-id N       the interface id on each socket (default 0)\n"
        "  --memif-secret S   the shared secret, 1 to 24 bytes (a server with one refuses\n"
        "                     clients without it; other users see it in ps)\n");
}

static int parse_prob(const char *opt, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (*arg == 0 || *end || !(v >= 0 && v <= 1))
        return tool_usage_error("impair", "%s wants a probability in [0, 1], not '%s'", opt, arg);
    *out = v;
    return 0;
}

static int parse_delay(const char *arg, struct impair_cfg *c)
{
    char *end;
    double d = strtod(arg, &end), j = 0;
    if (*end == ',')
        j = strtod(end + 1, &end);
    if (*arg == 0 || *end || !(d >= 0 && d <= 60000) || !(j >= 0 && j <= d))
        return tool_usage_error(
            "impair", "--delay wants MS[,JITTER] with 0 <= JITTER <= MS <= 60000, not '%s'", arg);
    c->delay_ns = (uint64_t)llround(d * 1e6);
    c->jitter_ns = (uint64_t)llround(j * 1e6);
    return 0;
}

static int parse_u64(const char *opt, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (tool_parse_bytes(arg, &v) < 0 || v < min || v > max)
        return tool_usage_error("impair", "%s wants a number in [%llu, %llu], not '%s'", opt,
                                (unsigned long long)min, (unsigned long long)max, arg);
    *out = v;
    return 0;
}

static int parse_rate(const char *arg, uint64_t *bps)
{
    char *end;
    double m = strtod(arg, &end);
    if (*arg == 0 || *end || !(m > 0 && m <= 100000))
        return tool_usage_error("impair", "--rate wants Mbit/s in (0, 100000], not '%s'", arg);
    *bps = (uint64_t)llround(m * 1e6);
    return 0;
}

/* One option; 0, or 2 after printing a usage error. */
static int parse_one(struct impair_opts *o, int c, const char *arg)
{
    uint64_t v = 0;
    switch (c) {
    case 'l':
        o->link = arg;
        return 0;
    case 'a':
        o->iface[0] = arg;
        return 0;
    case 'b':
        o->iface[1] = arg;
        return 0;
    case 'D':
        return parse_delay(arg, &o->path);
    case 'L':
        return parse_prob("--loss", arg, &o->fault.drop);
    case 'R':
        return parse_prob("--reorder", arg, &o->fault.reorder);
    case 'U':
        return parse_prob("--dup", arg, &o->fault.duplicate);
    case 'C':
        return parse_prob("--corrupt", arg, &o->fault.corrupt);
    case 'r':
        return parse_rate(arg, &o->path.rate_bps);
    case 'q':
        return parse_u64("--queue", arg, 1500, 1ull << 32, &o->path.queue_bytes);
    case 'e':
        return parse_u64("--ecn-mark-above", arg, 1, 1ull << 32, &o->path.ecn_mark_above);
    case 'm':
        if (parse_u64("--mtu", arg, 68, 65535, &v))
            return 2;
        o->path.mtu = (uint32_t)v;
        return 0;
    case 'T': {
        char *end;
        double ms = strtod(arg, &end);
        if (*arg == 0 || *end || !(ms > 0 && ms <= 60000))
            return tool_usage_error("impair",
                                    "--drop-tail wants milliseconds in (0, 60000], not '%s'", arg);
        o->path.tail_gap_ns = (uint64_t)llround(ms * 1e6);
        return 0;
    }
    case 's':
        if (parse_u64("--seed", arg, 0, UINT64_MAX, &v))
            return 2;
        o->path.seed = o->fault.seed = v;
        return 0;
    case 'A':
        o->only[0] = true;
        return 0;
    case 'B':
        o->only[1] = true;
        return 0;
    case 'd':
        o->duration = strtod(arg, NULL);
        return o->duration > 0
                   ? 0
                   : tool_usage_error("impair", "--duration wants seconds > 0, not '%s'", arg);
    case 'j':
        o->json = true;
        return 0;
    case 'c':
        return tool_parse_cpu("impair", arg, &o->cpu);
    case 'W':
        o->wait = true;
        return 0;
    case 'P':
        if (parse_u64("--rt", arg, 1, 99, &v))
            return 2;
        o->rt = (int)v;
        o->wait = true; /* a spinning real-time task would starve its CPU */
        return 0;
    }
    return memifopt_parse("impair", &o->memif, c, arg) == 0 ? 0 : 2;
}

static int parse(int argc, char **argv, struct impair_opts *o)
{
    static const struct option longopts[] = {
        {"link", required_argument, NULL, 'l'},
        {"iface-a", required_argument, NULL, 'a'},
        {"iface-b", required_argument, NULL, 'b'},
        {"delay", required_argument, NULL, 'D'},
        {"loss", required_argument, NULL, 'L'},
        {"reorder", required_argument, NULL, 'R'},
        {"dup", required_argument, NULL, 'U'},
        {"corrupt", required_argument, NULL, 'C'},
        {"rate", required_argument, NULL, 'r'},
        {"queue", required_argument, NULL, 'q'},
        {"ecn-mark-above", required_argument, NULL, 'e'},
        {"mtu", required_argument, NULL, 'm'},
        {"seed", required_argument, NULL, 's'},
        {"drop-tail", required_argument, NULL, 'T'},
        {"a2b", no_argument, NULL, 'A'},
        {"b2a", no_argument, NULL, 'B'},
        {"duration", required_argument, NULL, 'd'},
        {"json-stats", no_argument, NULL, 'j'},
        {"cpu", required_argument, NULL, 'c'},
        {"wait", no_argument, NULL, 'W'},
        {"rt", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        MEMIFOPT_LONGOPTS,
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    memifopt_init(&o->memif);
    o->cpu = -1;
    o->path.seed = o->fault.seed = 1;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        if (c == '?' || parse_one(o, c, optarg))
            return 2;
    }
    if (optind < argc)
        return tool_usage_error("impair", "unexpected argument '%s'", argv[optind]);
    bool memif = o->link && strcmp(o->link, "memif") == 0;
    if (!o->link || (strcmp(o->link, "afxdp") != 0 && strcmp(o->link, "afpacket") != 0 && !memif))
        return tool_usage_error("impair", "--link wants afxdp, afpacket or memif");
    if (o->memif.socket)
        return tool_usage_error("impair",
                                "--link memif takes its two sockets as --iface-a and --iface-b, "
                                "not --memif-socket");
    if (o->memif.given && !memif)
        return tool_usage_error("impair",
                                "--memif-role, --memif-id and --memif-secret are for --link memif");
    if (!o->iface[0] || !o->iface[1] || strcmp(o->iface[0], o->iface[1]) == 0)
        return tool_usage_error("impair", "--iface-a and --iface-b want two different interfaces");
    if (o->only[0] && o->only[1])
        return tool_usage_error("impair",
                                "--a2b and --b2a exclude each other (give neither for both)");
    if (o->path.ecn_mark_above && !o->path.rate_bps)
        return tool_usage_error("impair",
                                "--ecn-mark-above needs --rate (marks come from the queue)");
    if (o->path.queue_bytes && !o->path.rate_bps)
        return tool_usage_error("impair", "--queue needs --rate");
    if (o->path.tail_gap_ns > o->path.delay_ns)
        return tool_usage_error("impair", "--drop-tail needs --delay of at least as many "
                                          "milliseconds (a tail is known once the quiet after it "
                                          "passed, before it leaves the delay line)");
    return 0;
}

static bool faulty(const struct hp_fault_config *f)
{
    return f->drop > 0 || f->duplicate > 0 || f->corrupt > 0 || f->reorder > 0;
}

/* Open interface i (wrapped in a fault decorator on transmit when its
 * outgoing direction is impaired). NULL after printing why. */
static struct hp_link *open_side(const struct impair_opts *o, int i, bool impaired)
{
    struct hp_link_config lc = {.iface = o->iface[i], .ring_size = 4096};
    if (strcmp(o->link, "afxdp") == 0)
        lc.flags |= HP_LINK_F_COPY;
    if (strcmp(o->link, "memif") == 0) {
        /* Each side is a memif interface of its own socket. */
        struct memif_opts m = o->memif;
        m.socket = o->iface[i];
        memifopt_apply(&m, &lc);
        lc.iface = NULL;
        lc.ring_size = 0;
    }
    struct hp_link *l = hp_link_open(o->link, &lc);
    if (!l) {
        fprintf(stderr, "hotpath impair: %s: %s\n", o->iface[i], hp_link_error());
        return NULL;
    }
    if (!impaired || !faulty(&o->fault))
        return l;
    struct hp_fault_config fc = o->fault;
    fc.directions = HP_FAULT_TX;
    fc.seed += (uint64_t)i;
    struct hp_link *f = hp_link_fault(l, &fc);
    if (!f) {
        fprintf(stderr, "hotpath impair: fault decorator on %s: %s\n", o->iface[i],
                hp_link_error());
        hp_link_close(l);
    }
    return f;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Move what arrived on d->in into its path, and what is due out of it. */
static int pump(struct impair_dir *d)
{
    struct hp_buf *b[BURST];
    int n = hp_link_rx_burst(d->in, b, BURST);
    if (n < 0)
        return n;
    /* The clock is read after the frames are in hand: a frame must never be
     * stamped earlier than it arrived (a thread descheduled between the
     * clock and the receive would otherwise deliver it early). */
    uint64_t now = now_ns();
    for (int i = 0; i < n; i++)
        impair_path_push(&d->path, b[i], now);
    unsigned k = impair_path_peek(&d->path, now, b, BURST);
    if (k == 0)
        return n;
    int sent = hp_link_tx_burst(d->out, b, k);
    if (sent < 0)
        return sent;
    if ((unsigned)sent < k)
        d->tx_full++;
    impair_path_consume(&d->path, (unsigned)sent);
    return n + sent;
}

static json_t *dir_json(struct impair_dir *d)
{
    const struct impair_stats *s = &d->path.st;
    struct hp_fault_stats f = {0};
    hp_link_fault_stats(d->out, &f);
    json_t *o =
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "in",
                  (json_int_t)s->in, "out", (json_int_t)s->out, "bytes_in", (json_int_t)s->bytes_in,
                  "bytes_out", (json_int_t)s->bytes_out, "queue_drops", (json_int_t)s->queue_drops,
                  "ce_marked", (json_int_t)s->ce_marked, "tail_drops", (json_int_t)s->tail_drops,
                  "mtu_drops", (json_int_t)s->mtu_drops, "queue_max", (json_int_t)s->queue_max,
                  "lost", (json_int_t)f.dropped, "duplicated", (json_int_t)f.duplicated,
                  "reordered", (json_int_t)f.reordered, "corrupted", (json_int_t)f.corrupted,
                  "in_flight", (json_int_t)impair_path_count(&d->path));
    /* How late frames left against when they were due: what the machine's
     * scheduling added to the delay asked for. */
    json_object_set_new(o, "late_max_us", json_integer((json_int_t)(s->late_max_ns / 1000)));
    json_object_set_new(o, "late_mean_us",
                        json_integer(s->out ? (json_int_t)(s->late_sum_ns / s->out / 1000) : 0));
    return o;
}

static void report(struct impair_dir *dirs, double t, bool json, bool final)
{
    if (json) {
        json_t *o = json_pack("{s:f,s:b,s:o,s:o}", "t", t, "final", final, "a2b",
                              dir_json(&dirs[0]), "b2a", dir_json(&dirs[1]));
        json_dumpf(o, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(o);
        fflush(stdout);
        return;
    }
    printf("%7.1f s", t);
    for (int i = 0; i < 2; i++) {
        const struct impair_stats *s = &dirs[i].path.st;
        struct hp_fault_stats f = {0};
        hp_link_fault_stats(dirs[i].out, &f);
        printf("  %s: in %llu out %llu qdrop %llu ce %llu tail %llu mtu %llu lost %llu dup %llu "
               "qmax %llu",
               dirs[i].name, (unsigned long long)s->in, (unsigned long long)s->out,
               (unsigned long long)s->queue_drops, (unsigned long long)s->ce_marked,
               (unsigned long long)s->tail_drops, (unsigned long long)s->mtu_drops,
               (unsigned long long)f.dropped, (unsigned long long)f.duplicated,
               (unsigned long long)s->queue_max);
    }
    printf("%s\n", final ? "  (end)" : "");
    fflush(stdout);
}

static void on_signal(int sig)
{
    (void)sig;
    stop_now = 1;
}

/* Nothing to do: sleep until a frame arrives on either side or `until`
 * (the next frame due, the next report, the end). */
static void idle(struct impair_dir *dirs, uint64_t now, uint64_t until)
{
    uint64_t ns = until > now ? until - now : 0;
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    struct pollfd p[2] = {{.fd = hp_link_fd(dirs[0].in), .events = POLLIN},
                          {.fd = hp_link_fd(dirs[1].in), .events = POLLIN}};
    if (p[0].fd < 0 || p[1].fd < 0) {
        /* A link without a descriptor to wait on: short naps. */
        if (ts.tv_sec || ts.tv_nsec > 50000)
            ts = (struct timespec){.tv_nsec = 50000};
        nanosleep(&ts, NULL);
        return;
    }
    ppoll(p, 2, &ts, NULL);
}

static int run(const struct impair_opts *o, struct impair_dir *dirs)
{
    uint64_t t0 = now_ns(), next_report = t0 + 1000000000ull;
    uint64_t end = o->duration > 0 ? t0 + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
    if (o->json)
        report(dirs, 0, true, false); /* the bridge is up: what a script waits for */
    while (!stop_now) {
        uint64_t now = now_ns();
        if (now >= end)
            break;
        int work = 0;
        for (int i = 0; i < 2; i++) {
            int rc = pump(&dirs[i]);
            if (rc < 0) {
                fprintf(stderr, "hotpath impair: %s: %s\n", dirs[i].name, hp_strerror(rc));
                return 1;
            }
            work += rc;
        }
        if (now >= next_report) {
            report(dirs, (double)(now - t0) / 1e9, o->json, false);
            next_report += 1000000000ull;
        }
        if (o->wait && !work) {
            uint64_t until = next_report < end ? next_report : end;
            for (int i = 0; i < 2; i++) {
                uint64_t due = impair_path_next_ns(&dirs[i].path);
                until = due < until ? due : until;
            }
            idle(dirs, now, until);
        }
    }
    report(dirs, (double)(now_ns() - t0) / 1e9, o->json, true);
    return 0;
}

/* Set up both directions: A's frames go out on B, B's on A. */
static int open_dirs(const struct impair_opts *o, struct impair_dir *dirs, struct hp_link **links)
{
    static const char *names[2] = {"a2b", "b2a"};
    bool impaired[2] = {!o->only[1], !o->only[0]}; /* by direction: a2b, b2a */
    for (int i = 0; i < 2; i++) {
        /* Side i transmits direction 1 - i's frames (a2b goes out on B). */
        links[i] = open_side(o, i, impaired[1 - i]);
        if (!links[i])
            return 1;
    }
    for (int i = 0; i < 2; i++) {
        struct impair_cfg clean = {.seed = o->path.seed};
        dirs[i].name = names[i];
        dirs[i].in = links[i];
        dirs[i].out = links[1 - i];
        int rc = impair_path_init(&dirs[i].path, impaired[i] ? &o->path : &clean, RING);
        if (rc < 0) {
            fprintf(stderr, "hotpath impair: %s\n", hp_strerror(rc));
            return 1;
        }
    }
    return 0;
}

int cmd_impair(int argc, char **argv)
{
    struct impair_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.cpu >= 0 && tool_pin(o.cpu) < 0)
        fprintf(stderr, "hotpath impair: cannot pin to CPU %d\n", o.cpu);
    struct sched_param sp = {.sched_priority = o.rt};
    if (o.rt && sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
        fprintf(stderr, "hotpath impair: --rt %d: %s\n", o.rt, strerror(errno));
        return 1;
    }
    struct impair_dir dirs[2];
    struct hp_link *links[2] = {NULL, NULL};
    memset(dirs, 0, sizeof dirs);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    rc = open_dirs(&o, dirs, links);
    if (rc == 0)
        rc = run(&o, dirs);
    for (int i = 0; i < 2; i++)
        impair_path_fini(&dirs[i].path);
    for (int i = 0; i < 2; i++)
        hp_link_close(links[i]);
    long out = hp_pools_in_use();
    if (out != 0) {
        fprintf(stderr, "hotpath impair: %ld buffers still in use at exit\n", out);
        return rc ? rc : 1;
    }
    if (!o.json)
        fprintf(stderr, "hotpath impair: every buffer came back\n");
    return rc;
}
