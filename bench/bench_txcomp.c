/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench txcomp`: the seed's AF_XDP experiment, txonly with a completion thread, under each alien policy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/cpu.h>
#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "bench_txcomp.h"
#include "gen.h"
#include "bench.h"
#include "tool.h"

/*
 * The experiment (SEEDS.md, part 2): one thread transmits 64-byte frames it
 * allocates; a second thread takes the transmit completions and frees them,
 * so every free is an alien free. Linux defers such frees to the allocating
 * CPU (napi_consume_skb); that hurt this very pattern. Each policy runs on
 * the same link in the same run, rounds interleaved, median reported.
 */

#define NPOL TXCOMP_NPOL
static const int policies[NPOL] = {HP_ALIEN_LOCAL, HP_ALIEN_DEFER, HP_ALIEN_ADAPTIVE};


static int run_link(const struct bench_opts *o, const char *kind, const char *iface, struct txcomp_row *row)
{
    int reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    double secs = o->quick ? 0.5 : 1.0;
    double pps[NPOL][64], cpu[NPOL][64];
    row->link = kind;
    int total = reps * NPOL, done = 0;
    for (int rep = 0; rep < reps; rep++) {
        for (int k = 0; k < NPOL; k++) {
            /* Rotate the order so no policy always runs first. */
            int p = (k + rep) % NPOL;
            struct gen_opts g;
            gen_defaults(&g);
            g.link = kind;
            g.iface = iface;
            g.duration = secs;
            g.completion_thread = true;
            g.alien_policy = policies[p];
            int n = tool_ncpus();
            g.cpu = o->cpu >= 0 ? o->cpu : n - 1;
            g.cpu2 = n > 1 ? (g.cpu + n - 1) % n : -1;
            if (strcmp(kind, "afxdp") == 0)
                g.link_flags = HP_LINK_F_COPY;
            if (o->progress)
                o->progress(o->progress_ctx, done, total, kind);
            struct gen_result r;
            int rc = gen_run(&g, &r);
            if (rc) {
                snprintf(row->why, sizeof row->why, "gen on %s failed (exit %d; see above)", kind, rc);
                return -1;
            }
            pps[p][rep] = r.pps;
            cpu[p][rep] = r.packets ? r.cpu_s * 1e9 / (double)r.packets : 0;
            done++;
        }
    }
    if (strcmp(kind, "mem") == 0) {
        /* The single-core figure: the data thread also drains the peer. */
        double one[64];
        for (int rep = 0; rep < reps; rep++) {
            struct gen_opts g;
            gen_defaults(&g);
            g.duration = secs;
            g.cpu = o->cpu >= 0 ? o->cpu : tool_ncpus() - 1;
            struct gen_result r;
            if (gen_run(&g, &r))
                return -1;
            one[rep] = r.pps;
        }
        row->one_core_mpps = tool_median(one, reps) / 1e6;
    }
    for (int p = 0; p < NPOL; p++) {
        row->mpps[p] = tool_median(pps[p], reps) / 1e6;
        row->cpu_ns[p] = tool_median(cpu[p], reps);
    }
    row->ok = true;
    return 0;
}

void txcomp_print_json(const struct txcomp_report *rep, FILE *f)
{
    const struct txcomp_row *rows = rep->rows;
    int nrows = rep->nrows, reps_note = rep->reps;
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "{\"bench\": \"txcomp\", \"cpu\": ");
    tool_json_str(f, cpu);
    fprintf(f, ", \"compiler\": ");
    tool_json_str(f, tool_compiler());
    fprintf(f, ", \"flags\": ");
    tool_json_str(f, tool_build_flags());
    fprintf(f, ", \"reps\": %d, \"rows\": [", reps_note);
    for (int i = 0; i < nrows; i++) {
        fprintf(f, "%s{\"link\": ", i ? ", " : "");
        tool_json_str(f, rows[i].link);
        if (!rows[i].ok) {
            fprintf(f, ", \"skipped\": ");
            tool_json_str(f, rows[i].why);
            fprintf(f, "}");
            continue;
        }
        for (int p = 0; p < NPOL; p++)
            fprintf(f, ", \"%s_mpps\": %.4f, \"%s_cpu_ns\": %.2f", hp_alien_policy_name(policies[p]),
                    rows[i].mpps[p], hp_alien_policy_name(policies[p]), rows[i].cpu_ns[p]);
        if (rows[i].one_core_mpps > 0)
            fprintf(f, ", \"one_core_mpps\": %.4f", rows[i].one_core_mpps);
        fprintf(f, "}");
    }
    fprintf(f, "]}\n");
}

/* Run the experiment: the afxdp row (root, libxdp, a veth pair of our own
 * unless o->iface) and the mem row. */
void txcomp_run(const struct bench_opts *o, struct txcomp_report *rep)
{
    memset(rep, 0, sizeof *rep);
    rep->reps = o->reps ? o->reps : (o->quick ? 3 : 5);
    if (tool_ncpus() < 2)
        fprintf(stderr, "bench txcomp: one CPU only: the two threads share it\n");

    /* afxdp first (the seed's setting), when we can: root and libxdp. */
    struct txcomp_row *x = &rep->rows[rep->nrows++];
    x->link = "afxdp";
    struct tool_netns ns = {0};
    const char *iface = o->iface;
    if (geteuid() != 0) {
        snprintf(x->why, sizeof x->why, "needs root (AF_XDP and network namespaces)");
    } else {
        if (!iface) {
            int rc = tool_netns_up(&ns, "txc");
            if (rc < 0)
                snprintf(x->why, sizeof x->why, "cannot make a veth pair: %s", hp_strerror(rc));
            else if ((rc = tool_netns_enter(&ns, 0)) < 0)
                snprintf(x->why, sizeof x->why, "cannot enter the namespace: %s", hp_strerror(rc));
            else
                iface = ns.ifname[0];
        }
        if (iface) {
            /* Probe: is the backend built in and does the interface take it? */
            struct hp_link_config c = {.iface = iface, .flags = HP_LINK_F_COPY};
            struct hp_link *l = hp_link_open("afxdp", &c);
            if (!l) {
                snprintf(x->why, sizeof x->why, "%s", hp_link_error());
            } else {
                hp_link_close(l);
                run_link(o, "afxdp", iface, x);
            }
        }
        if (ns.up) {
            tool_netns_leave();
            tool_netns_down(&ns);
        }
    }
    run_link(o, "mem", NULL, &rep->rows[rep->nrows++]);
}

void txcomp_print_header(const struct txcomp_report *rep, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "txonly 64 B, batch 32, completions freed on a second thread (Mpps, median of %d;\n"
               "CPU ns per packet of both threads); afxdp in copy mode on a veth pair\n",
            rep->reps);
    fprintf(f, "cpu:        %s\ncompiler:   %s\nflags:      %s\n", cpu, tool_compiler(),
            tool_build_flags());
}

void txcomp_print_table(const struct txcomp_report *rep, FILE *f)
{
    fprintf(f, "  %-6s %10s %10s %10s   %8s %8s %8s   %s\n", "link", "local", "defer", "adaptive",
            "ns/pkt L", "D", "A", "adaptive/best");
    for (int i = 0; i < rep->nrows; i++) {
        const struct txcomp_row *r = &rep->rows[i];
        if (!r->ok) {
            fprintf(f, "  %-6s skipped: %s\n", r->link, r->why);
            continue;
        }
        double best = r->mpps[0] > r->mpps[1] ? r->mpps[0] : r->mpps[1];
        fprintf(f, "  %-6s %10.3f %10.3f %10.3f   %8.1f %8.1f %8.1f   %.3fx\n", r->link, r->mpps[0],
                r->mpps[1], r->mpps[2], r->cpu_ns[0], r->cpu_ns[1], r->cpu_ns[2], r->mpps[2] / best);
    }
}

int txcomp_goals(const struct txcomp_report *rep, FILE *f, bool md)
{
    int missed = 0;
    for (int i = 0; i < rep->nrows; i++) {
        const struct txcomp_row *r = &rep->rows[i];
        if (!r->ok) {
            fprintf(f, md ? "- MISSED: %s: ADAPTIVE within 3%% of the best: not measured (%s)\n"
                          : "  [MISSED] %s: ADAPTIVE within 3%% of the best: not measured (%s)\n",
                    r->link, r->why);
            missed++;
            continue;
        }
        double best = r->mpps[0] > r->mpps[1] ? r->mpps[0] : r->mpps[1];
        double a = r->mpps[2] / best;
        fprintf(f, md ? "- %s: %s: ADAPTIVE within 3%% of the better of LOCAL and DEFER (%+.1f%%)\n"
                      : "  [%s] %s: ADAPTIVE within 3%% of the better of LOCAL and DEFER (%+.1f%%)\n",
                a >= 0.97 ? (md ? "met" : " met ") : (md ? "MISSED" : "MISSED"), r->link, (a - 1) * 100);
        missed += a < 0.97;
        if (r->one_core_mpps > 0) {
            fprintf(f, md ? "- %s: mem txonly 64 B, batch 32, one core: >= 20 Mpps (%.1f Mpps)\n"
                          : "  [%s] mem txonly 64 B, batch 32, one core: >= 20 Mpps (%.1f Mpps)\n",
                    r->one_core_mpps >= 20 ? (md ? "met" : " met ") : "MISSED", r->one_core_mpps);
            missed += r->one_core_mpps < 20;
        }
    }
    return missed;
}

int bench_txcomp(const struct bench_opts *o, FILE *table)
{
    struct txcomp_report rep;
    txcomp_run(o, &rep);
    if (!o->json) {
        fprintf(table, "\n== txcomp: the seed's AF_XDP experiment, each alien policy\n");
        txcomp_print_header(&rep, table);
        fputc('\n', table);
        txcomp_print_table(&rep, table);
        fputc('\n', table);
        txcomp_goals(&rep, table, false);
    } else {
        txcomp_print_json(&rep, stdout);
    }
    if (o->json_out)
        txcomp_print_json(&rep, o->json_out);
    return rep.rows[rep.nrows - 1].ok ? 0 : 1;
}
