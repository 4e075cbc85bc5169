/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench udp-echo` over veth: the kernel's UDP echo against hotpath serve's loop on afxdp and afpacket, the same kernel client. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#include "bench.h"
#include "bench_udp.h"
#include "harness.h"
#include "tool.h"
#include "udp_kernel.h"

/*
 * A veth pair in two namespaces of our own: the client's end (side 0,
 * 198.18.0.1, CPU Y) and the server's (side 1, 198.18.0.2, CPU X). The same
 * kernel client (udp_kernel.c) talks to each server in turn, rounds
 * alternating:
 *
 *   kernel              a recvmmsg/sendmmsg thread on a socket bound to
 *                       198.18.0.2:7, the address on the veth end;
 *   hotpath-afxdp       hotpath serve's loop (hp_link_open("afxdp") in copy
 *                       mode, one hp_stack, UDP echo with recv_buf/send_buf,
 *                       busy-polling), the kernel holding no address on the
 *                       veth end (and IPv6 off: it answers no ARP or NDP);
 *   hotpath-afxdp-wait  the same loop sleeping in poll(2) on the link when a
 *                       round finds nothing, as the kernel server sleeps in
 *                       recvmmsg;
 *   hotpath-afpacket    serve's loop on the afpacket link.
 *
 * Where the CPU goes. veth has no interrupts: a frame sent on one end is
 * received on the sending CPU (veth_xmit -> netif_rx, or veth's NAPI when
 * XDP is attached natively; both run on the sender). So the server's CPU
 * does the server, its transmit path and the client's receive of the
 * echoes, while the server's own receive (IP/UDP up to its socket, or XDP
 * and the copy into the UMEM) runs on the client's CPU, in the client's
 * sendmmsg. Every row has the same split, so "srv" compares like with like;
 * "both", the busy time of the two CPUs per echo, counts everything. Both
 * are read from /proc/stat (busy = user + nice + system + irq + softirq):
 * much of the work is softirq, which a thread's clock charges to whichever
 * thread it interrupted, not to the side it serves.
 *
 * Steering each end's receive to its own side's CPU with RPS (and XDP in
 * generic mode, after RPS) would give a cleaner split, but costs an
 * inter-processor interrupt per burst each way; in a VM (this machine's
 * kind) those cost microseconds each and then dominate every row.
 */

/* A round in which other processes took more than this share of the two
 * CPUs is run again, up to V_ATTEMPTS times; the least disturbed is kept. */
#define V_MAX_FOREIGN 0.05
#define V_ATTEMPTS    3
#define V_GOAL        0.5

const char *const udp_veth_rows[UDP_VETH_NROWS] = {"kernel", "hotpath-afxdp", "hotpath-afxdp-wait",
                                                   "hotpath-afpacket"};

/* hotpath serve's loop on a real link, on a thread of its own in the
 * server's namespace. */
struct hp_server {
    const struct tool_netns *ns;
    int side, cpu;
    const char *kind;
    unsigned link_flags;
    bool wait; /* sleep in poll(2) on the link when a round finds nothing */
    struct hb_server srv;
    uint64_t echoed;
    long leaked; /* buffers still in use after closing */
    char why[200];
};

static void *hp_server_main(void *arg)
{
    struct hp_server *sv = arg;
    struct hp_link *link = NULL;
    struct hp_stack *s = NULL;
    struct hp_udp_sock *u[2] = {NULL, NULL};
    int rc = tool_netns_enter(sv->ns, sv->side);
    if (rc < 0) {
        snprintf(sv->why, sizeof sv->why, "cannot enter %s: %s", sv->ns->ns[sv->side],
                 hp_strerror(rc));
        goto out;
    }
    tool_pin(sv->cpu);
    struct hp_link_config lc = {.iface = sv->ns->ifname[sv->side], .flags = sv->link_flags};
    link = hp_link_open(sv->kind, &lc);
    if (!link) {
        snprintf(sv->why, sizeof sv->why, "%s", hp_link_error());
        goto out;
    }
    /* As `hotpath serve --link KIND --iface IF --ip 198.18.0.2/24`. */
    struct hp_stack_config sc = {.name = "serve"};
    s = hp_stack_create(&sc);
    int ifx = s ? hp_stack_add_iface(s, link) : -ENOMEM;
    if (ifx < 0 || hp_stack_add_addr(s, ifx, HP_AF_INET4, UDP_SRV4, 24) < 0) {
        snprintf(sv->why, sizeof sv->why, "cannot set up the stack on %s", hp_link_name(link));
        goto out;
    }
    for (int f = 0; f < 2; f++) {
        int fam = f ? HP_AF_INET6 : HP_AF_INET4;
        u[f] = hp_udp_open(s, fam, NULL);
        struct hp_sockaddr any = {.family = (uint8_t)fam, .port = UDP_ECHO_PORT};
        if (!u[f] || hp_udp_bind(u[f], &any) < 0) {
            snprintf(sv->why, sizeof sv->why, "cannot bind UDP port %d", UDP_ECHO_PORT);
            goto out;
        }
    }
    atomic_store(&sv->srv.state, 1);
    struct hp_event ev[16];
    uint64_t echoed = 0;
    int fd = sv->wait ? hp_link_fd(link) : -1;
    while (!hb_server_stopping(&sv->srv)) {
        int n = hp_stack_poll(s);
        hp_stack_events(s, ev, 16);
        uint64_t e = tool_udp_echo(u[0]) + tool_udp_echo(u[1]);
        echoed += e;
        if (fd >= 0 && n == 0 && e == 0) {
            /* Nothing came in (and what the last round queued went out in
             * this poll): sleep until a frame or the next timer, as the
             * kernel server sleeps in recvmmsg. 10 ms at most, for stop. */
            int64_t t = hp_stack_next_timer_ns(s);
            int ms = t < 0 || t >= 10000000 ? 10 : (int)((t + 999999) / 1000000);
            struct pollfd p = {.fd = fd, .events = POLLIN};
            (void)poll(&p, 1, ms);
        }
    }
    sv->echoed = echoed;
out:
    for (int f = 0; f < 2; f++)
        hp_udp_close(u[f]);
    hp_stack_destroy(s);
    if (link) {
        hp_pool_thread_flush(hp_link_pool(link));
        hp_link_close(link);
    }
    hp_thread_exit();
    sv->leaked = hp_pools_in_use();
    if (atomic_load(&sv->srv.state) != 1)
        atomic_store(&sv->srv.state, -1);
    return NULL;
}

/* Opening an AF_XDP socket attaches an XDP program: allow it time. */
static int hp_server_start(struct hp_server *sv)
{
    int rc = hb_server_start(&sv->srv, hp_server_main, sv, 10);
    if (rc == 0)
        return 0;
    if (!sv->why[0])
        snprintf(sv->why, sizeof sv->why, "%s",
                 rc == -ETIMEDOUT ? "the server was not ready within 10 s"
                                  : "cannot start the server thread");
    return -1;
}

struct client_job {
    struct udpk_client_opts o;
    struct udpk_client_result r;
    int rc;
};

static void *client_main(void *arg)
{
    struct client_job *j = arg;
    j->rc = udpk_client_run(&j->o, &j->r);
    return NULL;
}

/* The server's veth end holds 198.18.0.2 for the kernel row only. */
static int srv_addr(struct udp_veth_report *v, bool want, bool *have)
{
    if (want == *have)
        return 0;
    int rc = tool_sh("ip -n %s addr %s 198.18.0.2/24 dev %s", v->ns.ns[1], want ? "add" : "del",
                     v->ns.ifname[1]);
    if (rc != 0)
        return -1;
    *have = want;
    return 0;
}

/* A round's values from what the client measured. */
static void round_values(const struct udpk_client_result *r, double *out, double *foreign)
{
    double e = (double)r->echoes;
    out[V_EPS] = e / r->seconds;
    out[V_SRV_NS] = r->server_busy_s * 1e9 / e;
    out[V_BOTH_NS] = (r->server_busy_s + r->client_busy_s) * 1e9 / e;
    out[V_THREAD_NS] = r->server_thread_s * 1e9 / e;
    out[V_CLI_NS] = r->client_busy_s * 1e9 / e;
    out[V_STEAL] = r->seconds > 0 ? r->steal_s / (2 * r->seconds) : 0;
    out[V_LOST] = (double)r->lost;
    out[V_REFUSED] = (double)r->refused;
    *foreign = r->seconds > 0 ? r->foreign_s / (2 * r->seconds) : 0;
}

/* One round of one row. 0; 1 with why when the row cannot run (skip it);
 * -1 with why on a failure. */
static int veth_round(struct udp_veth_report *v, int row, double *out, double *foreign, char *why,
                      size_t whylen)
{
    if (srv_addr(v, row == V_KERNEL, &v->have_addr) < 0) {
        snprintf(why, whylen, "cannot %s 198.18.0.2 on %s", row == V_KERNEL ? "add" : "remove",
                 v->ns.ifname[1]);
        return -1;
    }
    struct udpk_server ks = {.ns = &v->ns, .side = 1, .cpu = v->cpu_srv, .port = UDP_ECHO_PORT};
    memcpy(ks.addr, UDP_SRV4, 4);
    struct hp_server hs = {.ns = &v->ns, .side = 1, .cpu = v->cpu_srv};
    pthread_t sth;
    if (row == V_KERNEL) {
        if (udpk_server_start(&ks) < 0) {
            snprintf(why, whylen, "%s", ks.why);
            return -1;
        }
        sth = ks.srv.th;
    } else {
        bool xdp = row == V_AFXDP || row == V_AFXDP_WAIT;
        hs.kind = xdp ? "afxdp" : "afpacket";
        hs.link_flags = xdp ? HP_LINK_F_COPY : 0; /* as `hotpath serve --link afxdp` */
        hs.wait = row == V_AFXDP_WAIT;
        if (hp_server_start(&hs) < 0) {
            snprintf(why, whylen, "%s", hs.why);
            return 1;
        }
        sth = hs.srv.th;
    }
    struct client_job j = {.o = {.ns = &v->ns,
                                 .side = 0,
                                 .cpu = v->cpu_cli,
                                 .port = UDP_ECHO_PORT,
                                 .window = UDP_VETH_WINDOW,
                                 .payload = UDP_VETH_PAYLOAD,
                                 .warm_s = v->warm_s,
                                 .seconds = v->round_s,
                                 .cpu_server = v->cpu_srv}};
    memcpy(j.o.src, UDP_CLI4, 4);
    memcpy(j.o.dst, UDP_SRV4, 4);
    j.o.has_server_clock = pthread_getcpuclockid(sth, &j.o.server_clock) == 0;
    pthread_t cth;
    int rc = -1;
    if (pthread_create(&cth, NULL, client_main, &j) != 0) {
        snprintf(why, whylen, "cannot start the client thread");
    } else {
        pthread_join(cth, NULL);
        rc = j.rc;
        if (rc < 0)
            snprintf(why, whylen, "%s: %.160s%s", udp_veth_rows[row], j.r.why,
                     row != V_KERNEL && !v->csum_off
                         ? " (ethtool could not turn off transmit checksum offload "
                           "on the client's end: the server sees bad checksums)"
                         : "");
    }
    if (row == V_KERNEL) {
        udpk_server_stop(&ks);
    } else {
        hb_server_stop(&hs.srv);
        if (rc == 0 && hs.leaked != 0) {
            snprintf(why, whylen, "%s: %ld buffers still in use after the round",
                     udp_veth_rows[row], hs.leaked);
            rc = -1;
        }
    }
    if (rc == 0 && j.r.echoes == 0) {
        snprintf(why, whylen, "%s: no echoes in the measured interval", udp_veth_rows[row]);
        rc = -1;
    }
    if (rc < 0)
        return row == V_KERNEL ? -1 : 1;
    round_values(&j.r, out, foreign);
    return 0;
}

static int veth_round_fn(void *ctx, int row, double *v, double *disturbed, char *why, size_t len)
{
    return veth_round(ctx, row, v, disturbed, why, len);
}

static void veth_ratios(struct udp_veth_report *v)
{
    const struct hb_row *k = &v->rows[V_KERNEL], *h = &v->rows[V_AFXDP],
                        *w = &v->rows[V_AFXDP_WAIT];
    if (k->n && h->n && k->median[V_SRV_NS] > 0 && k->median[V_BOTH_NS] > 0) {
        v->ratio_srv = h->median[V_SRV_NS] / k->median[V_SRV_NS];
        v->ratio_both = h->median[V_BOTH_NS] / k->median[V_BOTH_NS];
        v->met = v->ratio_srv <= V_GOAL;
    }
    if (k->n && w->n && k->median[V_SRV_NS] > 0)
        v->ratio_wait = w->median[V_SRV_NS] / k->median[V_SRV_NS];
    for (int row = 0; row < UDP_VETH_NROWS; row++)
        if (v->rows[row].n && v->rows[row].max[V_STEAL] > v->worst_steal)
            v->worst_steal = v->rows[row].max[V_STEAL];
}

/* Why nothing can be measured here, or NULL. */
static const char *veth_cannot(const struct bench_opts *o, int ncpus)
{
    if (geteuid() != 0)
        return "needs root (network namespaces, AF_XDP)";
    if (ncpus < 2)
        return "needs two CPUs (server and client each on its own)";
    if (o->iface)
        return "makes a veth pair of its own: --iface is not for this benchmark";
    return NULL;
}

void udp_veth_run(struct udp_veth_report *v, const struct bench_opts *o)
{
    memset(v, 0, sizeof *v);
    v->reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    v->round_s = o->quick ? 0.5 : 1.0;
    v->warm_s = 0.2;
    int n = tool_ncpus();
    /* As the mem rows: the client on --cpu (default: the last CPU), the
     * server on the CPU before it. */
    v->cpu_cli = o->cpu >= 0 ? o->cpu : n - 1;
    v->cpu_srv = (v->cpu_cli + n - 1) % n;
    const char *cannot = veth_cannot(o, n);
    int rc = cannot ? 0 : tool_netns_up(&v->ns, "udp");
    if (cannot || rc < 0) {
        snprintf(v->skipped, sizeof v->skipped, "%s%s",
                 cannot ? cannot : "cannot make a veth pair in namespaces: ",
                 cannot ? "" : hp_strerror(rc));
        return;
    }
    /* The kernel leaves UDP checksums to the device when it sends on veth
     * (CHECKSUM_PARTIAL, which no device ever fills in): frames taken by
     * AF_XDP or AF_PACKET would arrive with a wrong one. So the client's end
     * computes them (for every row: the client stays the same); the
     * server's end keeps its offload, as a NIC's would be for the kernel. */
    v->csum_off =
        tool_netns_sh(&v->ns, 0, "ethtool -K %s tx off >/dev/null 2>&1", v->ns.ifname[0]) == 0;
    v->have_addr = true; /* tool_netns_up gave side 1 198.18.0.2 */
    for (int row = 0; row < UDP_VETH_NROWS; row++)
        v->rows[row].name = udp_veth_rows[row];
    v->h = (struct hb_rounds){.reps = v->reps,
                              .nrows = UDP_VETH_NROWS,
                              .nvalues = V_NVALUES,
                              .rotate = true,
                              .attempts = V_ATTEMPTS,
                              .max_disturbed = V_MAX_FOREIGN,
                              .retry_pause_s = 0.3,
                              .progress = o->progress,
                              .progress_ctx = o->progress_ctx};
    if (hb_rounds_run(&v->h, v->rows, veth_round_fn, v) < 0)
        snprintf(v->failed, sizeof v->failed, "%s", v->h.failed);
    else
        veth_ratios(v);
    tool_netns_down(&v->ns);
}

void udp_veth_goal(const struct udp_veth_report *v, int row, char *buf, size_t len)
{
    const struct hb_row *k = &v->rows[V_KERNEL], *h = &v->rows[row];
    const char *why = v->skipped[0]  ? v->skipped
                      : v->failed[0] ? v->failed
                      : !k->n        ? k->why
                                     : h->why;
    if (v->skipped[0] || v->failed[0] || !k->n || !h->n)
        snprintf(buf, len, "hotpath server CPU per echo <= %.1fx the kernel's (not measured: %s)",
                 V_GOAL, why);
    else
        snprintf(buf, len,
                 "hotpath server CPU per echo <= %.1fx the kernel's (%.0f ns vs %.0f ns: %.2f)",
                 V_GOAL, h->median[V_SRV_NS], k->median[V_SRV_NS],
                 h->median[V_SRV_NS] / k->median[V_SRV_NS]);
}

static void veth_print_setup(const struct udp_veth_report *v, FILE *f)
{
    fprintf(f,
            "setup:      a veth pair in namespaces of our own: client %s, 198.18.0.1, on CPU %d; "
            "server\n"
            "            %s, 198.18.0.2, on CPU %d; IPv6 off; the client's end computes UDP "
            "checksums%s\n",
            v->ns.ifname[0], v->cpu_cli, v->ns.ifname[1], v->cpu_srv,
            v->csum_off ? "" : " (NOT: ethtool failed)");
    fprintf(f,
            "client:     one kernel UDP socket, connected; %d datagrams of %d B in flight: "
            "sendmmsg to top\n"
            "            them up, then a blocking recvmmsg (%d at most); the same for every row\n",
            UDP_VETH_WINDOW, UDP_VETH_PAYLOAD, UDPK_BATCH);
    fprintf(f,
            "kernel:     one thread: recvmmsg(%d, MSG_WAITFORONE), sendmmsg back, on a socket "
            "bound to\n"
            "            198.18.0.2:7, the address on the veth end\n",
            UDPK_BATCH);
    fprintf(f,
            "hotpath-*:  hotpath serve's loop (hp_stack_poll, events, recv_buf/send_buf echo) on\n"
            "            hp_link_open(\"afxdp\", copy mode; XDP native on veth) or (\"afpacket\"); "
            "the kernel has\n"
            "            no address on the veth end. It busy-polls; -wait sleeps in poll(2) on the "
            "link when\n"
            "            a round finds nothing, as the kernel server sleeps in recvmmsg (not "
            "serve's loop)\n");
    fprintf(f,
            "method:     %d rounds of %.2g s (after %.2g s unmeasured) per row, rows alternating; "
            "medians\n",
            v->reps, v->round_s, v->warm_s);
    fprintf(
        f,
        "columns:    srv = busy time of the server's CPU per echo (/proc/stat: "
        "user+nice+system+irq+\n"
        "            softirq); both = of both CPUs: everything, the client (the same in every "
        "row)\n"
        "            included, the fairest single number; thread = the server thread's own CPU "
        "time\n"
        "            (softirq work done in its system calls included); client = the client's CPU.\n"
        "            A busy-polling server keeps its CPU 100%% busy: its srv is 1 s / (echoes/s),\n"
        "            however little of it is work.\n");
    fprintf(
        f,
        "counted:    veth receives on the sending CPU. srv counts the server, its transmit path, "
        "and\n"
        "            the client's receive of the echoes (run by the server's send); not the "
        "server's own\n"
        "            receive (IP/UDP up to its socket, or XDP and the copy into the UMEM), which "
        "runs on\n"
        "            the client's CPU in the client's sendmmsg. Every row has the same split.\n");
}

static void veth_print_notes(const struct udp_veth_report *v, FILE *f)
{
    hb_rounds_notes(f, &v->h, "other processes used the two CPUs");
    if (v->worst_steal > V_MAX_FOREIGN)
        fprintf(f,
                "note:       the hypervisor took up to %.0f%% of the two CPUs (steal time) in a "
                "round kept\n",
                100 * v->worst_steal);
    for (int row = 0; row < UDP_VETH_NROWS; row++) {
        const struct hb_row *r = &v->rows[row];
        if (r->n && (r->sum[V_LOST] > 0 || r->sum[V_REFUSED] > 0))
            fprintf(
                f,
                "note:       %s: %.0f datagrams lost (a window stalled for 20 ms), %.0f refused\n",
                r->name, r->sum[V_LOST], r->sum[V_REFUSED]);
    }
}

void udp_veth_table(const struct udp_veth_report *v, FILE *f)
{
    fprintf(f, "\n== udp-echo over veth: the kernel's UDP echo vs hotpath serve, the same kernel "
               "client\n");
    if (v->skipped[0]) {
        fprintf(f, "skipped: %s\n", v->skipped);
        return;
    }
    veth_print_setup(v, f);
    veth_print_notes(v, f);
    if (v->failed[0]) {
        fprintf(f, "\nfailed:     %s\n", v->failed);
        return;
    }
    static const struct hb_col cols[] = {{"echoes/s", 9, 0, NULL},
                                         {"srv ns", 8, 0, NULL},
                                         {"both ns", 8, 0, NULL},
                                         {"thread ns", 9, 0, NULL},
                                         {"client ns", 9, 0, NULL}};
    const struct hb_row *k = &v->rows[V_KERNEL];
    fputc('\n', f);
    fprintf(f, "  %-19s %9s %8s %8s %9s %9s   %s\n", "row", "echoes/s", "srv ns", "both ns",
            "thread ns", "client ns", "vs kernel: srv, both");
    for (int row = 0; row < UDP_VETH_NROWS; row++) {
        const struct hb_row *r = &v->rows[row];
        if (!r->n) {
            hb_table_skip(f, 19, r->name, "skipped", r->why);
            continue;
        }
        if (row == V_KERNEL || !k->n) {
            hb_table_row(f, 19, r->name, cols, 5, r->median);
            continue;
        }
        double w[7];
        memcpy(w, r->median, 5 * sizeof w[0]);
        w[5] = r->median[V_SRV_NS] / k->median[V_SRV_NS];
        w[6] = r->median[V_BOTH_NS] / k->median[V_BOTH_NS];
        static const struct hb_col ratios[] = {{"echoes/s", 9, 0, NULL},
                                               {"srv ns", 8, 0, NULL},
                                               {"both ns", 8, 0, NULL},
                                               {"thread ns", 9, 0, NULL},
                                               {"client ns", 9, 0, NULL},
                                               {"", 7, 2, "x,"},
                                               {"", 6, 2, "x"}};
        hb_table_row(f, 19, r->name, ratios, 7, w);
    }
}

json_t *udp_veth_json(const struct udp_veth_report *v)
{
    json_t *j = json_object();
    if (v->skipped[0]) {
        json_object_set_new(j, "skipped", json_string(v->skipped));
        return j;
    }
    json_t *x =
        json_pack("{s:i, s:i, s:b, s:b, s:i, s:i, s:i, s:f, s:f, s:i}", "cpu_server", v->cpu_srv,
                  "cpu_client", v->cpu_cli, "copy", 1, "client_csum_off", v->csum_off, "window",
                  UDP_VETH_WINDOW, "payload", UDP_VETH_PAYLOAD, "reps", v->reps, "round_s",
                  v->round_s, "warmup_s", v->warm_s, "retried", v->h.retried);
    json_object_update(j, x);
    json_decref(x);
    json_object_set_new(j, "max_foreign", tool_json_num(v->h.worst_disturbed, 4));
    json_object_set_new(j, "max_steal", tool_json_num(v->worst_steal, 4));
    if (v->failed[0]) {
        json_object_set_new(j, "failed", json_string(v->failed));
        return j;
    }
    static const char *const keys[] = {"echoes_per_s", "server_cpu_ns_per_echo",
                                       "both_cpus_ns_per_echo", "server_thread_ns_per_echo",
                                       "client_cpu_ns_per_echo"};
    static const int dec[] = {0, 1, 1, 1, 1};
    json_t *rows = json_array();
    for (int row = 0; row < UDP_VETH_NROWS; row++) {
        const struct hb_row *r = &v->rows[row];
        json_t *o = json_pack("{s:s}", "mode", r->name);
        if (!r->n)
            json_object_set_new(o, "skipped", json_string(r->why));
        for (int i = 0; r->n && i < 5; i++)
            json_object_set_new(o, keys[i], tool_json_num(r->median[i], dec[i]));
        if (r->n)
            json_object_set_new(o, "lost", json_integer((json_int_t)r->sum[V_LOST]));
        json_array_append_new(rows, o);
    }
    json_object_set_new(j, "rows", rows);
    json_object_set_new(j, "ratio_server_cpu", tool_json_num(v->ratio_srv, 4));
    json_object_set_new(j, "ratio_both_cpus", tool_json_num(v->ratio_both, 4));
    json_object_set_new(j, "ratio_server_cpu_wait", tool_json_num(v->ratio_wait, 4));
    return j;
}
