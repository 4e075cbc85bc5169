/* SPDX-License-Identifier: BSD-3-Clause */
/* The demo's paths experiment: `hotpath bench paths` (loss, reordering, ECN, a tail loss, path MTU) with its table, report section, JSON and plot. */
#include <errno.h>
#include <string.h>

#include "bench_paths.h"
#include "demo.h"

int exp_paths(struct demo_ctx *d)
{
    static struct paths_report r; /* large */
    struct progress p;
    progress_init(&p, "paths");
    struct bench_opts o = {.quick = d->quick,
                           .cpu = d->cpu,
                           .progress = progress_update,
                           .progress_ctx = &p};
    paths_report_run(&r, &o);
    progress_done(&p);
    paths_report_goals(&r);
    printf("\n== 6. Paths: TCP through loss, reordering, ECN marks, a tail loss and a narrow "
           "link ==\n");
    paths_report_table(&r, stdout);
    fprintf(d->md,
            "## 6. Paths: loss, reordering, ECN, path MTU\n\n"
            "`hotpath bench paths`: the kernel's TCP and hotpath's, each with its loss recovery "
            "and congestion control and each in the variant without SACK, send to a kernel "
            "receiver through `hotpath impair` (100 Mbit/s, 20 ms, a one-BDP queue) at each "
            "loss rate, with reordering and with ECN marks; then a tail loss, and 10 MB echoed "
            "through two kernel routers joined by a 1280-byte link. docs/experiments.md says "
            "what each row means and where this machine bounds it.\n\n```\n");
    paths_report_table(&r, d->md);
    fprintf(d->md, "```\n\n");
    if (r.why[0]) {
        fprintf(d->md, "Not run: %s.\n\n", r.why);
        return 0;
    }
    fprintf(d->md, "![paths: goodput, completion times, path MTU](paths.png)\n\nGoals:\n\n");
    for (int i = 0; i < r.goals.n; i++)
        fprintf(d->md, "- %s: %s\n", r.goals.g[i].met ? "met" : "MISSED", r.goals.g[i].text);
    fputc('\n', d->md);
    d->missed += hb_goals_missed(&r.goals);
    FILE *j = report_file(d, "paths.json");
    if (j) {
        json_t *v = paths_report_json(&r);
        tool_json_write(v, j, true);
        json_decref(v);
        fclose(j);
    }
    return 0;
}
