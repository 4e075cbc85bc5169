/* SPDX-License-Identifier: BSD-3-Clause */
/* The report of `hotpath bench paths`: its goals (issue 21), its table and its JSON. */
#include <math.h>
#include <string.h>

#include "bench_paths.h"

#define GOODPUT_VS_KERNEL  0.95
#define GOODPUT_VS_NEWRENO 2.0
#define FCT_P99_VS_KERNEL  1.1
#define TAIL_SHARE         0.95
#define PMTU_VS_KERNEL     1.5

static const char *const pmtu_names[PM_N] = {"IPv4 (DF)", "IPv6", "IPv4 (DF), no ICMP",
                                             "IPv6, no ICMP"};

/* Whether a part that did not run was asked for (HP_PATHS_ONLY): a goal
 * whose measurements were not is left out, neither met nor missed. */
static bool asked(const char *why)
{
    return strncmp(why, "not asked for", 13) != 0;
}

static bool cond_asked(const struct paths_report *r, int c)
{
    return asked(r->cells[c][PS_HOTPATH_CUBIC].why);
}

/* hotpath-cubic-sack's goodput over the `than` row's under condition c
 * into *x, with "X vs Y Mbit/s: Zx" (or why not) in buf. */
static bool goodput_ratio(const struct paths_report *r, int c, int than, double *x, char *buf,
                          size_t len)
{
    const struct paths_cell *h = &r->cells[c][PS_HOTPATH_CUBIC], *k = &r->cells[c][than];
    bool both = h->ran && k->ran && k->goodput_mbps > 0;
    *x = both ? h->goodput_mbps / k->goodput_mbps : 0;
    if (both)
        snprintf(buf, len, "%.1f vs %.1f Mbit/s: %.2fx", h->goodput_mbps, k->goodput_mbps, *x);
    else
        snprintf(buf, len, "not measured: %.120s", !h->ran ? h->why : k->why);
    return both;
}

static void bulk_goals(struct paths_report *r)
{
    char t[200], u[200];
    double x, y;
    for (int c = PC_LOSS0; c <= PC_REORDER; c++) {
        if (!cond_asked(r, c))
            continue;
        bool ok = goodput_ratio(r, c, PS_KERNEL_CUBIC, &x, t, sizeof t);
        hb_goal(&r->goals, ok && x >= GOODPUT_VS_KERNEL,
                "bulk, %s: hotpath-cubic-sack >= %.2fx kernel-cubic-sack's goodput (%s)",
                paths_cond_names[c], GOODPUT_VS_KERNEL, t);
    }
    if (!cond_asked(r, PC_LOSS2) || !cond_asked(r, PC_LOSS5))
        return;
    bool a = goodput_ratio(r, PC_LOSS2, PS_HOTPATH_RENO, &x, t, sizeof t);
    bool b = goodput_ratio(r, PC_LOSS5, PS_HOTPATH_RENO, &y, u, sizeof u);
    hb_goal(&r->goals, a && b && x >= GOODPUT_VS_NEWRENO && y >= GOODPUT_VS_NEWRENO,
            "bulk at 2%% and 5%% loss: hotpath-cubic-sack >= %.0fx hotpath-newreno-nosack (2%%: "
            "%s; 5%%: %s)",
            GOODPUT_VS_NEWRENO, t, u);
}

static void short_goal(struct paths_report *r)
{
    const struct paths_cell *h = &r->cells[PC_LOSS2][PS_HOTPATH_CUBIC],
                            *k = &r->cells[PC_LOSS2][PS_KERNEL_CUBIC];
    if (!cond_asked(r, PC_LOSS2))
        return;
    bool both =
        h->ran && k->ran && h->has_fct && k->has_fct && k->fct_p99_ms > 0 && !h->flows_failed;
    char t[200];
    if (both)
        snprintf(t, sizeof t, "%.0f vs %.0f ms: %.2fx, %d flows each", h->fct_p99_ms, k->fct_p99_ms,
                 h->fct_p99_ms / k->fct_p99_ms, h->flows);
    else
        snprintf(t, sizeof t, "not measured: %.120s",
                 h->flows_failed ? "some of hotpath's flows failed"
                 : !h->ran       ? h->why
                                 : k->why);
    hb_goal(&r->goals, both && h->fct_p99_ms <= FCT_P99_VS_KERNEL * k->fct_p99_ms,
            "short flows (100 KB) at 2%% loss: hotpath's p99 completion <= %.1fx the kernel's (%s)",
            FCT_P99_VS_KERNEL, t);
}

static void tail_goal(struct paths_report *r)
{
    const struct paths_tail *h = &r->tail[PS_HOTPATH_CUBIC], *k = &r->tail[PS_KERNEL_CUBIC];
    if (!asked(h->why))
        return;
    char t[200];
    if (h->ran)
        snprintf(t, sizeof t,
                 "hotpath %d of %d, p50 %.0f ms, %d RTOs; kernel %d of %d, p50 %.0f ms", h->ok,
                 h->trials, h->p50_ms, h->rtos, k->ok, k->trials, k->p50_ms);
    else
        snprintf(t, sizeof t, "not measured: %.120s", h->why);
    hb_goal(&r->goals,
            h->ran && h->trials >= r->trials && h->ok >= (int)ceil(TAIL_SHARE * h->trials),
            "a single tail loss repaired within 3 RTTs (%d ms) without an RTO in >= %.0f%% of %d "
            "trials (%s)",
            3 * PATHS_DELAY_MS, TAIL_SHARE * 100, r->trials, t);
}

static void ecn_goal(struct paths_report *r)
{
    const struct paths_cell *h = &r->cells[PC_ECN][PS_HOTPATH_CUBIC];
    if (!cond_asked(r, PC_ECN))
        return;
    char t[200];
    double x;
    bool ok = goodput_ratio(r, PC_ECN, PS_KERNEL_CUBIC, &x, t, sizeof t);
    hb_goal(&r->goals, ok && x >= GOODPUT_VS_KERNEL && h->bridge.queue_drops == 0,
            "ECN (marks above %d KB, ECN on at the kernel receiver): no drops at the bridge "
            "(%llu) and hotpath >= %.2fx the kernel's goodput (%s)",
            PATHS_ECN_ABOVE / 1000, (unsigned long long)h->bridge.queue_drops, GOODPUT_VS_KERNEL,
            t);
}

/* Both cases of a pair (IPv4, IPv6) within the factor, verified. */
static void pmtu_goal(struct paths_report *r, int first, const char *what)
{
    const struct paths_pmtu *p = &r->pmtu;
    if (!p->ran && !asked(p->why))
        return;
    char t[2][160];
    bool ok = p->ran;
    for (int i = 0; i < 2; i++) {
        const struct paths_pmtu_cell *c = &p->c[first + i];
        bool both = p->ran && c->ran[0] && c->ran[1] && c->secs[0] > 0;
        ok = ok && both && c->secs[1] <= PMTU_VS_KERNEL * c->secs[0];
        if (both)
            snprintf(t[i], sizeof t[i], "%s %.2f vs %.2f s: %.2fx", pmtu_names[first + i],
                     c->secs[1], c->secs[0], c->secs[1] / c->secs[0]);
        else
            snprintf(t[i], sizeof t[i], "%s not measured: %.120s", pmtu_names[first + i],
                     !p->ran      ? p->why
                     : !c->ran[1] ? c->why[1]
                                  : c->why[0]);
    }
    hb_goal(&r->goals, ok,
            "path MTU, %s: %.0f MB echoed through a %d-byte link by hotpath connect within "
            "%.1fx the kernel's client, every byte checked (%s; %s)",
            what, (double)p->bytes / 1e6, 1280, PMTU_VS_KERNEL, t[0], t[1]);
}

void paths_report_goals(struct paths_report *r)
{
    memset(&r->goals, 0, sizeof r->goals);
    if (r->why[0])
        return; /* not run here (not root): nothing to judge */
    bulk_goals(r);
    short_goal(r);
    tail_goal(r);
    ecn_goal(r);
    pmtu_goal(r, PM_V4, "ICMP passing");
    pmtu_goal(r, PM_V4_NOICMP, "every ICMP error dropped (probing)");
}

/* ---- the table ----------------------------------------------------------------------- */

static void table_setup(const struct paths_report *r, FILE *f)
{
    fprintf(
        f,
        "setup:      client ns -- hotpath impair (afpacket, CPU %d%s) -- server ns; the data\n"
        "            direction at %d Mbit/s, %d ms delay (the ACKs return at once: RTT %d ms),\n"
        "            a %d-byte queue (one BDP), the row's loss / reordering / ECN marks;\n"
        "            a kernel receiver; senders on CPU %d (hotpath's: a stack on %s%s).\n"
        "            Bulk: %.3g s measured after %.3g s; short flows: %d x %d KB, a connection\n"
        "            each, completion = connect to the receiver's FIN; retrans and RTOs are\n"
        "            the bulk flow's, the bridge's counters (qdrops, lost, CE) the whole row's\n",
        r->cpu_bridge, r->bridge_rt ? ", SCHED_FIFO" : "", PATHS_RATE_MBIT, PATHS_DELAY_MS,
        PATHS_DELAY_MS, PATHS_QUEUE_BYTES, r->cpu_ends, r->hp_link ? r->hp_link : "-",
        r->hp_rt ? ", SCHED_FIFO" : "", r->bulk_s, r->warm_s, r->flows, PATHS_FLOW_BYTES / 1000);
    fprintf(f, "bridge:     unshaped, it forwarded ");
    if (r->bridge_fps_1514 > 0)
        fprintf(f,
                "%.0f k frames/s of 1514 bytes (%.2f Gbit/s; offered %.0f k/s)\n"
                "            and %.0f k frames/s of 60 bytes (offered %.0f k/s); a row needs\n"
                "            8.3 k data frames/s (100 Mbit/s) and about 4 k ACKs\n",
                r->bridge_fps_1514 / 1e3, r->bridge_fps_1514 * 1514 * 8 / 1e9,
                r->bridge_offered_1514 / 1e3, r->bridge_fps_64 / 1e3, r->bridge_offered_64 / 1e3);
    else
        fprintf(f, "(not measured)\n");
}

static void table_rows(const struct paths_report *r, FILE *f)
{
    static const struct hb_col cols[] = {
        {"Mbit/s", 7, 1, NULL},  {"FCT p50 ms", 11, 0, NULL}, {"FCT p99 ms", 11, 0, NULL},
        {"retrans", 8, 0, NULL}, {"RTOs", 5, 0, NULL},        {"qdrops", 7, 0, NULL},
        {"lost", 6, 0, NULL},    {"CE", 6, 0, NULL},          {"late ms", 8, 1, NULL}};
    fputc('\n', f);
    hb_table_cols(f, 34, "row", cols, 9);
    for (int c = 0; c < PC_N; c++)
        for (int s = 0; s < PS_N; s++) {
            const struct paths_cell *x = &r->cells[c][s];
            if (c == PC_ECN && (s == PS_KERNEL_RENO || s == PS_HOTPATH_RENO))
                continue;
            char name[64];
            snprintf(name, sizeof name, "%-10s %s", paths_cond_names[c], paths_sender_names[s]);
            double v[9] = {x->goodput_mbps,
                           x->has_fct ? x->fct_p50_ms : NAN,
                           x->has_fct ? x->fct_p99_ms : NAN,
                           (double)x->retrans,
                           (double)x->rto,
                           (double)x->bridge.queue_drops,
                           (double)x->bridge.lost,
                           (double)x->bridge.ce_marked,
                           (double)x->bridge.late_max_us / 1000};
            if (x->ran)
                hb_table_row(f, 34, name, cols, 9, v);
            else
                hb_table_skip(f, 34, name, asked(x->why) ? "failed" : "skipped", x->why);
        }
}

/* A row whose bulk connection did not negotiate what its name says
 * measured something else: said under the table. */
static void table_checks(const struct paths_report *r, FILE *f)
{
    for (int c = 0; c < PC_N; c++)
        for (int s = 0; s < PS_N; s++) {
            const struct paths_cell *x = &r->cells[c][s];
            bool sack = s == PS_KERNEL_CUBIC || s == PS_HOTPATH_CUBIC;
            if (x->ran && (x->sack != sack || x->ecn != (c == PC_ECN)))
                fprintf(f, "  note: %s, %s: SACK %s, ECN %s (negotiated)\n", paths_cond_names[c],
                        paths_sender_names[s], x->sack ? "on" : "off", x->ecn ? "on" : "off");
        }
}

static void table_tail_pmtu(const struct paths_report *r, FILE *f)
{
    fprintf(f, "\ntail loss:  a new connection writes one flight (its initial window, at most 10\n"
               "            segments); the bridge loses its last segment once (--drop-tail 5 ms);\n"
               "            repair = from the write until the receiver has every byte\n");
    for (int s = 0; s < PS_N; s++) {
        const struct paths_tail *t = &r->tail[s];
        if (s != PS_KERNEL_CUBIC && s != PS_HOTPATH_CUBIC)
            continue;
        if (!t->ran)
            fprintf(f, "  %-22s %s: %s\n", paths_sender_names[s],
                    asked(t->why) ? "failed" : "skipped", t->why);
        else
            fprintf(f,
                    "  %-22s %d trials of %.1f segments, %d tails lost: %d within %d ms without an "
                    "RTO,\n  %-22s %d RTOs, %llu probes; repair p50 %.1f ms, p95 %.1f ms\n",
                    paths_sender_names[s], t->trials, t->burst_segs, (int)t->tail_drops, t->ok,
                    3 * PATHS_DELAY_MS, "", t->rtos, (unsigned long long)t->probes, t->p50_ms,
                    t->p95_ms);
    }
    const struct paths_pmtu *p = &r->pmtu;
    fprintf(f,
            "\npath MTU:   client -- router -- %d-byte link -- router -- kernel echo server; "
            "%.0f MB echoed,\n            median of %d; the kernel's client with "
            "tcp_mtu_probing=1\n",
            1280, (double)p->bytes / 1e6, p->reps);
    if (!p->ran)
        fprintf(f, "  not run: %s\n", p->why);
    for (int c = 0; p->ran && c < PM_N; c++) {
        const struct paths_pmtu_cell *x = &p->c[c];
        fprintf(f, "  %-20s", pmtu_names[c]);
        for (int i = 0; i < 2; i++) {
            const char *who = i ? "hotpath connect" : "kernel";
            if (x->ran[i])
                fprintf(f, "  %s %.3f s (%llu retrans, %llu RTOs)", who, x->secs[i],
                        (unsigned long long)x->retrans[i], (unsigned long long)x->rto[i]);
            else
                fprintf(f, "  %s failed: %s", who, x->why[i]);
        }
        fputc('\n', f);
    }
}

void paths_report_table(const struct paths_report *r, FILE *f)
{
    hb_table_head(f, "paths: TCP senders through a shaped, lossy bridge and a narrow routed path");
    if (r->why[0]) {
        fprintf(f, "not run: %s\n", r->why);
        return;
    }
    table_setup(r, f);
    table_rows(r, f);
    table_checks(r, f);
    table_tail_pmtu(r, f);
    hb_goals_table(&r->goals, f);
}

/* ---- JSON ---------------------------------------------------------------------------- */

static json_t *cell_json(const struct paths_report *r, int c, int s)
{
    const struct paths_cell *x = &r->cells[c][s];
    json_t *o = json_pack("{s:s, s:s, s:f, s:f, s:b}", "row", paths_sender_names[s], "condition",
                          paths_cond_names[c], "loss", paths_cond_loss[c], "reorder",
                          paths_cond_reorder[c], "ecn", c == PC_ECN);
    if (!x->ran) {
        json_object_set_new(o, asked(x->why) ? "failed" : "skipped", json_string(x->why));
        return o;
    }
    json_object_set_new(o, "goodput_mbps", tool_json_num(x->goodput_mbps, 2));
    json_object_set_new(o, "sack_negotiated", json_boolean(x->sack));
    json_object_set_new(o, "ecn_negotiated", json_boolean(x->ecn));
    json_object_set_new(o, "fct_p50_ms",
                        x->has_fct ? tool_json_num(x->fct_p50_ms, 2) : json_null());
    json_object_set_new(o, "fct_p99_ms",
                        x->has_fct ? tool_json_num(x->fct_p99_ms, 2) : json_null());
    json_object_set_new(o, "retrans", json_integer((json_int_t)x->retrans));
    json_object_set_new(o, "rto", json_integer((json_int_t)x->rto));
    json_object_set_new(o, "flows", json_integer(x->flows));
    json_object_set_new(o, "flows_failed", json_integer(x->flows_failed));
    json_object_set_new(o, "short_retrans", json_integer((json_int_t)x->short_retrans));
    json_object_set_new(o, "short_rto", json_integer((json_int_t)x->short_rto));
    json_object_set_new(
        o, "bridge",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "frames", (json_int_t)x->bridge.in,
                  "queue_drops", (json_int_t)x->bridge.queue_drops, "lost",
                  (json_int_t)x->bridge.lost, "reordered", (json_int_t)x->bridge.reordered,
                  "ce_marked", (json_int_t)x->bridge.ce_marked, "late_mean_us",
                  (json_int_t)x->bridge.late_mean_us, "late_max_us",
                  (json_int_t)x->bridge.late_max_us));
    return o;
}

static json_t *tail_json(const struct paths_report *r)
{
    json_t *a = json_array();
    for (int s = 0; s < PS_N; s++) {
        const struct paths_tail *t = &r->tail[s];
        if (s != PS_KERNEL_CUBIC && s != PS_HOTPATH_CUBIC)
            continue;
        json_t *o = json_pack("{s:s}", "row", paths_sender_names[s]);
        if (!t->ran)
            json_object_set_new(o, asked(t->why) ? "failed" : "skipped", json_string(t->why));
        else
            json_object_update_new(
                o, json_pack("{s:i, s:i, s:i, s:i, s:o, s:o, s:I}", "trials", t->trials,
                             "tails_lost", (int)t->tail_drops, "within_3_rtt_no_rto", t->ok, "rtos",
                             t->rtos, "repair_p50_ms", tool_json_num(t->p50_ms, 2), "repair_p95_ms",
                             tool_json_num(t->p95_ms, 2), "probes", (json_int_t)t->probes));
        if (t->ran)
            json_object_set_new(o, "segments_per_write", tool_json_num(t->burst_segs, 2));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *pmtu_json(const struct paths_pmtu *p)
{
    json_t *a = json_array();
    for (int c = 0; p->ran && c < PM_N; c++)
        for (int i = 0; i < 2; i++) {
            const struct paths_pmtu_cell *x = &p->c[c];
            json_t *o =
                json_pack("{s:s, s:s, s:b, s:b, s:I}", "case", pmtu_names[c], "client",
                          i ? "hotpath-connect" : "kernel", "ipv6", c == PM_V6 || c == PM_V6_NOICMP,
                          "icmp", c < PM_V4_NOICMP, "bytes", (json_int_t)p->bytes);
            if (x->ran[i])
                json_object_update_new(
                    o, json_pack("{s:o, s:b, s:I, s:I}", "seconds", tool_json_num(x->secs[i], 4),
                                 "verified", x->verified[i], "retrans", (json_int_t)x->retrans[i],
                                 "rto", (json_int_t)x->rto[i]));
            else
                json_object_set_new(o, "failed", json_string(x->why[i]));
            json_array_append_new(a, o);
        }
    return a;
}

json_t *paths_report_json(const struct paths_report *r)
{
    json_t *j = hb_json_head("paths");
    if (r->why[0]) {
        json_object_set_new(j, "skipped", json_string(r->why));
        json_object_set_new(j, "results", json_array());
        hb_json_goals(j, &r->goals);
        return j;
    }
    json_object_set_new(j, "setup",
                        json_pack("{s:i, s:i, s:i, s:i, s:f, s:f, s:i, s:i, s:i, s:[i, i]}",
                                  "rate_mbit", PATHS_RATE_MBIT, "rtt_ms", PATHS_DELAY_MS,
                                  "queue_bytes", PATHS_QUEUE_BYTES, "ecn_mark_above",
                                  PATHS_ECN_ABOVE, "bulk_s", r->bulk_s, "warmup_s", r->warm_s,
                                  "flows", r->flows, "flow_bytes", PATHS_FLOW_BYTES, "tail_trials",
                                  r->trials, "cpus", r->cpu_bridge, r->cpu_ends));
    json_t *setup = json_object_get(j, "setup");
    json_object_set_new(setup, "bridge_realtime", json_boolean(r->bridge_rt));
    json_object_set_new(setup, "hotpath_link", tool_json_str_or_null(r->hp_link));
    json_object_set_new(setup, "hotpath_realtime", json_boolean(r->hp_rt));
    json_object_set_new(j, "bridge",
                        json_pack("{s:o, s:o, s:o, s:o}", "fps_1514",
                                  tool_json_num(r->bridge_fps_1514, 0), "offered_fps_1514",
                                  tool_json_num(r->bridge_offered_1514, 0), "fps_60",
                                  tool_json_num(r->bridge_fps_64, 0), "offered_fps_60",
                                  tool_json_num(r->bridge_offered_64, 0)));
    json_t *res = json_array();
    for (int c = 0; c < PC_N; c++)
        for (int s = 0; s < PS_N; s++)
            if (c != PC_ECN || s == PS_KERNEL_CUBIC || s == PS_HOTPATH_CUBIC)
                json_array_append_new(res, cell_json(r, c, s));
    json_object_set_new(j, "results", res);
    json_object_set_new(j, "tail_loss", tail_json(r));
    json_object_set_new(j, "pmtu", pmtu_json(&r->pmtu));
    hb_json_goals(j, &r->goals);
    return j;
}

int paths_report_failures(const struct paths_report *r)
{
    if (r->why[0])
        return 0;
    int n = 0;
    for (int c = 0; c < PC_N; c++)
        for (int s = 0; s < PS_N; s++)
            if (c != PC_ECN || s == PS_KERNEL_CUBIC || s == PS_HOTPATH_CUBIC)
                n += !r->cells[c][s].ran && asked(r->cells[c][s].why);
    n += !r->tail[PS_KERNEL_CUBIC].ran && asked(r->tail[PS_KERNEL_CUBIC].why);
    n += !r->tail[PS_HOTPATH_CUBIC].ran && asked(r->tail[PS_HOTPATH_CUBIC].why);
    if (!r->pmtu.ran)
        return n + asked(r->pmtu.why);
    for (int c = 0; c < PM_N; c++)
        n += !r->pmtu.c[c].ran[0] + !r->pmtu.c[c].ran[1];
    return n;
}

int bench_paths(const struct bench_opts *o, FILE *table)
{
    static struct paths_report r; /* large; one benchmark runs at a time */
    int rc = paths_report_run(&r, o);
    paths_report_goals(&r);
    if (o->json || o->json_out)
        hb_json_emit(paths_report_json(&r), o->json, o->json_out);
    if (!o->json)
        paths_report_table(&r, table);
    return rc || paths_report_failures(&r) ? 1 : 0;
}
