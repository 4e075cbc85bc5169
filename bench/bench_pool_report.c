/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench pool`'s goals and output: the table, the policy comparison, the summary line, JSON (jansson). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/cpu.h>
#include <hotpath/pool.h>

#include "bench.h"
#include "bench_pool.h"
#include "tool.h"

static bool is_dpdk(int impl)
{
    return impl == POOL_DPDK || impl == POOL_DPDK_MBUF;
}

/* ---- goals -------------------------------------------------------------- */

static void goal(struct pool_report *r, bool met, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void goal(struct pool_report *r, bool met, const char *fmt, ...)
{
    if (r->ngoals == POOL_MAX_GOALS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->goals[r->ngoals].text, sizeof r->goals[0].text, fmt, ap);
    va_end(ap);
    r->goals[r->ngoals++].met = met;
}

static const char *peer_missing(const struct pool_report *r, int q)
{
    const char *note = q == POOL_DPDK_MBUF ? r->mbuf_note : q == POOL_DPDK ? r->dpdk_note : "";
    return note[0] ? note : r->failed[q][0] ? r->failed[q] : "row missing";
}

/* Every hotpath row at least `times` the peer q's rate, in every scenario:
 * judged on the worst row's median ratio over the repetitions. */
static void goal_vs_peer(struct pool_report *r, int q, double times, const char *why)
{
    const struct pool_summary *worst = NULL;
    int ws = 0, wk = 0;
    for (int s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++) {
            const struct pool_summary *v = &r->cells[s][k].vs[q];
            if (r->cells[s][k].ran && v->n && (!worst || v->med < worst->med)) {
                worst = v;
                ws = s;
                wk = k;
            }
        }
    if (!worst) {
        goal(r, false, "every hotpath row >= %gx %s%s: not measured (%s)", times, pool_impl_name(q),
             why, peer_missing(r, q));
        return;
    }
    char sb[96];
    goal(r, worst->med >= times,
         "every hotpath row >= %gx %s in every scenario%s: worst %s in %s, %s (ratio per "
         "repetition: median [spread])",
         times, pool_impl_name(q), why, pool_impl_name(wk), pool_scenario_name(ws),
         pool_summary_str(worst, sb, sizeof sb));
}

static void goal_policies(struct pool_report *r, int s)
{
    const struct pool_policies *p = &r->pol[s];
    char sb[96];
    if (!p->ran) {
        goal(r, false, "%s: ADAPTIVE within 3%% of the better fixed policy: not measured",
             pool_scenario_name(s));
        return;
    }
    if (s < POOL_PIPELINE) {
        double lo = 1e9, hi = 0;
        const struct pool_summary *v[3] = {&p->a_l, &p->a_d, &p->d_l};
        for (int i = 0; i < 3; i++) {
            lo = v[i]->med < lo ? v[i]->med : lo;
            hi = v[i]->med > hi ? v[i]->med : hi;
        }
        goal(r, lo >= 0.98 && hi <= 1.02,
             "%s: the policy check costs nothing measurable: adaptive/local, adaptive/defer, "
             "defer/local within 2%% (%.3f, %.3f, %.3f)",
             pool_scenario_name(s), p->a_l.med, p->a_d.med, p->d_l.med);
    }
    goal(r, p->a_best.med >= 0.97,
         "%s: ADAPTIVE within 3%% of the better fixed policy (%s): adaptive/%s %s over %d "
         "paired rounds",
         pool_scenario_name(s), p->better == POOL_HP_DEFER ? "DEFER" : "LOCAL",
         p->better == POOL_HP_DEFER ? "defer" : "local",
         pool_summary_str(&p->a_best, sb, sizeof sb), p->a_best.n);
}

void pool_report_goals(struct pool_report *r)
{
    struct pool_cell(*c)[POOL_NIMPLS] = r->cells;
    r->ngoals = 0;
    for (int k = 0; k < POOL_NIMPLS; k++)
        if (!is_dpdk(k) && r->failed[k][0])
            goal(r, false, "%s failed: %s", pool_impl_name(k), r->failed[k]);
    int s = POOL_LOCAL_BULK32;
    if (c[s][POOL_HP_LOCAL].ran && c[s][POOL_HP_DEFER].ran && c[s][POOL_HP_ADAPTIVE].ran) {
        double worst = 0;
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++)
            worst = c[s][k].ns_per_obj > worst ? c[s][k].ns_per_obj : worst;
        goal(r, worst <= 2.5,
             "local-bulk32: alloc + free <= 2.5 ns per buffer (CPU time; worst "
             "policy %.2f ns)",
             worst);
    }
    goal_vs_peer(r, POOL_MALLOC, 3, "");
    goal_vs_peer(r, POOL_DPDK_MBUF, 2,
                 " (DPDK's packet buffers: metadata reset and checked like hotpath's)");
    for (s = 0; s < POOL_NSCEN; s++) {
        if (s >= POOL_PIPELINE && !r->two_threads) {
            goal(r, false, "%s: not measured (needs 2 CPUs)", pool_scenario_name(s));
            continue;
        }
        goal_policies(r, s);
    }
}

/* ---- output ------------------------------------------------------------- */

static void print_dpdk_cache(FILE *f, int cache, const int lcores[2])
{
    if (cache < 0) {
        fprintf(
            f, "NOT used by some workers (rte_thread_register failed: every get/put hit the ring)");
        return;
    }
    fprintf(f,
            "in use in every worker (non-EAL threads registered with rte_thread_register: lcore");
    for (int i = 0; i < 2; i++)
        if (lcores[i] >= 0)
            fprintf(f, " %d", lcores[i]);
    fprintf(f, ")");
}

static void print_peers(const struct pool_report *r, FILE *f)
{
    if (r->have[POOL_DPDK]) {
        fprintf(
            f,
            "dpdk:       %s raw rte_mempool (rte_mempool_get/put[_bulk]: objects never touched, no "
            "mbuf init or check: NOT like for like), ops %s, cache %u:\n            ",
            r->dpdk_version, r->dpdk_ops[0] ? r->dpdk_ops : "?", r->cache_size);
        print_dpdk_cache(f, r->dpdk_cache, r->dpdk_lcores);
        fprintf(
            f,
            ";\n            EAL --no-huge --no-pci --no-shconf; one call into the peer per get/put "
            "like hotpath's\n");
    }
    if (r->have[POOL_DPDK_MBUF]) {
        fprintf(
            f,
            "dpdk-mbuf:  %s packet buffers, the like-for-like peer: rte_pktmbuf_pool_create(%u "
            "mbufs, "
            "cache %u, priv 0, data room %u B, %u B headroom included, as hotpath's),\n            "
            "%u B per mbuf, ops %s, cache %u: ",
            r->dpdk_version, r->n_bufs, r->cache_size, r->mbuf_data_room, r->mbuf_headroom,
            r->mbuf_elt_size, r->mbuf_ops[0] ? r->mbuf_ops : "?", r->cache_size);
        print_dpdk_cache(f, r->mbuf_cache, r->mbuf_lcores);
        fprintf(
            f,
            ";\n            rte_pktmbuf_alloc[_bulk] reset each mbuf's metadata, "
            "rte_pktmbuf_free[_bulk] check refcnt, chain, indirect/external before the put (as "
            "hotpath "
            "does);\n            data written with rte_pktmbuf_append + memset (as hp_buf_append + "
            "memset); one call into the peer per alloc/free/append like hotpath's\n");
    }
}

static void print_notes(const struct pool_report *r, FILE *f)
{
    if (r->dpdk_note[0])
        fprintf(f, "note:       %s\n", r->dpdk_note);
    if (r->mbuf_note[0])
        fprintf(f, "note:       %s\n", r->mbuf_note);
    if (!r->two_threads)
        fprintf(f, "note:       pipeline and crossed skipped: they need 2 CPUs\n");
    if (r->hugepages)
        fprintf(f, "note:       a hotpath pool got huge pages although asked not to\n");
    if (r->retried)
        fprintf(f,
                "note:       %d runs measured again: a row's threads never ran together in any "
                "slice (another process had their CPUs)\n",
                r->retried);
    if (r->cpu_wait > 0.02)
        fprintf(f,
                "note:       in a typical slice the busiest worker waited %.0f%% of it for its CPU "
                "(other processes): this machine is busy, the paired ratios are what to read\n",
                100 * r->cpu_wait);
    for (int s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k < POOL_NIMPLS; k++)
            if (r->alloc_failures[s][k])
                fprintf(
                    f,
                    "note:       %s, %s: %llu allocations failed (pool empty) and were retried\n",
                    pool_scenario_name(s), pool_impl_name(k),
                    (unsigned long long)r->alloc_failures[s][k]);
}

void pool_report_print_header(const struct pool_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "cpu:        %s\n", cpu);
    fprintf(f, "compiler:   %s\n", tool_compiler());
    fprintf(f, "flags:      %s\n", tool_build_flags());
    fprintf(
        f,
        "pool:       %u buffers of %u B data room, %d B headroom included (+%d B metadata; dpdk "
        "and "
        "malloc objects: %d B; dpdk-mbuf: see below),\n            per-thread cache %u, hotpath "
        "defer_max 128 (default), normal pages for every row\n",
        r->n_bufs, r->data_room, HP_BUF_HEADROOM, HP_BUF_META_SIZE, HP_BUF_META_SIZE + r->data_room,
        r->cache_size);
    fprintf(
        f,
        "method:     each run: a fresh pool, %.2g s warm-up (hotpath on two threads: until "
        "ADAPTIVE settled each\n            pair, at most %.2g s), then rounds of slices (one "
        "thread: %d "
        "rounds of %.0f ms, two: %d of %.0f ms,\n            each after %.0f/%.0f ms to settle); "
        "a hotpath run has one slice per policy in each round (the pool's policy\n            "
        "switched, order rotated), a peer's run one; %d repetitions (until adaptive/better is "
        "known within +-1%%,\n            %d-%d), the runs of each in rotated order. Mbuf/s: "
        "the rate of the median timed group of the freeing\n            threads (work between "
        "stalls: see bench_pool.h), median over slices and repetitions; ns/buf: CPU time\n"
        "            (CLOCK_THREAD_CPUTIME_ID, spinning included) per buffer. Ratios: of Mbuf/s, "
        "paired by round\n            (policies) or by repetition (peers); x [lo-hi]: median and "
        "its 95%% interval (min-max below 6 samples)\n",
        r->warmup_s, r->warm_max_s, r->rounds[0], 1e3 * r->slice_s[0], r->rounds[1],
        1e3 * r->slice_s[1], 1e3 * r->settle_s[0], 1e3 * r->settle_s[1], r->reps, r->min_reps,
        r->max_reps);
    if (r->cpu_a >= 0)
        fprintf(f,
                "threads:    local on CPU %d; pipeline and crossed on CPUs %d (A) and %d (B)%s\n",
                r->cpu_a, r->cpu_a, r->cpu_b,
                r->pin_failed ? " (pinning FAILED for some: unpinned)" : "");
    else
        fprintf(f, "threads:    unpinned (--cpu -1)\n");
    fprintf(
        f,
        "scenarios:  local-bulk1: %u single allocations, then %u single frees; local-bulk32: "
        "alloc %u in bulk, free them in bulk;\n            pipeline: A allocates %u, writes %u B "
        "of data into each, pushes them onto a %u-slot SPSC ring; B pops %u and frees them;\n"
        "            crossed: each thread does A's part towards the other and B's part for what "
        "the other pushes\n",
        r->bulk, r->bulk, r->bulk, r->bulk, r->fill, r->ring, r->bulk);
    print_peers(r, f);
    print_notes(r, f);
}

/* "2.41x [2.30-2.52]", or blanks. */
static void print_ratio(FILE *f, const struct pool_summary *s)
{
    if (!s->n) {
        fprintf(f, " %20s", "");
        return;
    }
    char b[40];
    snprintf(b, sizeof b, "%.2fx [%.2f-%.2f]", s->med, s->lo, s->hi);
    fprintf(f, " %20s", b);
}

static void print_rows(const struct pool_report *r, FILE *f)
{
    fprintf(f, "\n%-13s %-17s %8s %7s %20s %20s %20s\n", "scenario", "impl", "Mbuf/s", "ns/buf",
            "vs dpdk-mbuf", "vs malloc", "vs dpdk (raw)");
    for (int s = 0; s < POOL_NSCEN; s++) {
        if (s >= POOL_PIPELINE && !r->two_threads)
            continue;
        const struct pool_cell *c = r->cells[s];
        for (int k = 0; k < POOL_NIMPLS; k++) {
            if (!r->have[k] && !is_dpdk(k))
                continue;
            fprintf(f, "%-13s %-17s", k == 0 ? pool_scenario_name(s) : "", pool_impl_name(k));
            if (!c[k].ran) {
                bool skipped =
                    (k == POOL_DPDK && r->dpdk_note[0]) || (k == POOL_DPDK_MBUF && r->mbuf_note[0]);
                fprintf(f, " %8s\n", skipped ? "skipped" : "failed");
                continue;
            }
            fprintf(f, " %8.2f %7.2f", c[k].mops, c[k].ns_per_obj);
            print_ratio(f, &c[k].vs[POOL_DPDK_MBUF]);
            print_ratio(f, &c[k].vs[POOL_MALLOC]);
            print_ratio(f, &c[k].vs[POOL_DPDK]);
            fputc('\n', f);
        }
    }
}

/* What the pool did under each policy, from its counters: explains LOCAL
 * vs DEFER. */
static void print_counters(const struct pool_report *r, FILE *f)
{
    fprintf(f,
            "\nhotpath counters over the measured slices, per 1000 buffers freed\n"
            "%-13s %-17s %7s %8s %9s %7s %8s %8s %9s\n",
            "scenario", "policy", "alien", "deferred", "overflows", "taken", "refills", "flushes",
            "ring ops");
    for (int s = POOL_PIPELINE; s < POOL_NSCEN; s++)
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++) {
            const struct hp_pool_stats *st = &r->pol[s].st[k];
            if (!r->pol[s].freed[k])
                continue;
            double d = (double)r->pol[s].freed[k] / 1000;
            fprintf(f, "%-13s %-17s %7.1f %8.1f %9.1f %7.1f %8.2f %8.2f %9.2f\n",
                    k == 0 ? pool_scenario_name(s) : "", pool_impl_name(k),
                    (double)st->alien_frees / d, (double)st->deferred / d,
                    (double)st->defer_overflows / d, (double)st->defer_taken / d,
                    (double)st->refills / d, (double)st->flushes / d, (double)st->ring_ops / d);
        }
}

void pool_report_print_policies(const struct pool_report *r, FILE *f)
{
    fprintf(f,
            "\nthe policies slice by slice, paired within each round: rate ratio, median "
            "[95%% interval]\n%-13s %-27s %-27s %-27s %s\n",
            "scenario", "adaptive/local", "adaptive/defer", "defer/local", "adaptive/better");
    for (int s = 0; s < POOL_NSCEN; s++) {
        const struct pool_policies *p = &r->pol[s];
        if (!p->ran)
            continue;
        char b[4][64];
        fprintf(f, "%-13s %-27s %-27s %-27s %s (%s, %d rounds)\n", pool_scenario_name(s),
                pool_summary_str(&p->a_l, b[0], sizeof b[0]),
                pool_summary_str(&p->a_d, b[1], sizeof b[1]),
                pool_summary_str(&p->d_l, b[2], sizeof b[2]),
                pool_summary_str(&p->a_best, b[3], sizeof b[3]),
                p->better == POOL_HP_DEFER ? "defer" : "local", p->a_best.n);
    }
    for (int s = POOL_PIPELINE; s < POOL_NSCEN; s++) {
        if (!r->pol[s].npairs)
            continue;
        fprintf(f,
                "adaptive in %s (warm-up until each pair settled: up to %.2f s), at the end of "
                "the last run:\n",
                pool_scenario_name(s), r->pol[s].warm_max_s);
        pool_pairs_print(r->pol[s].pairs, r->pol[s].npairs, "  ", f);
    }
}

/* What ADAPTIVE settled on in one scenario: "defer", "local/local" (a
 * pair each way), "*" when the contention signal chose it; "-" for no
 * alien frees. */
static const char *settled_str(const struct pool_policies *p, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < p->npairs && o + 10 < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s%s", i ? "/" : "",
                              hp_alien_policy_name(p->pairs[i].policy),
                              p->pairs[i].measured ? "" : "*");
    return p->npairs ? buf : "-";
}

void pool_report_print_settled(const struct pool_report *r, FILE *f, bool md)
{
    static const char *const what[2] = {"adaptive settled", "adaptive/better"};
    for (int row = 0; row < 2; row++) {
        fprintf(f, md ? "| %s |" : "%-17s", what[row]);
        for (int s = 0; s < POOL_NSCEN; s++) {
            const struct pool_policies *p = &r->pol[s];
            char b[64];
            const char *v = b;
            if (row == 0)
                v = settled_str(p, b, sizeof b);
            else if (p->ran)
                snprintf(b, sizeof b, "%.3f [%.3f,%.3f]", p->a_best.med, p->a_best.lo,
                         p->a_best.hi);
            else
                snprintf(b, sizeof b, "-");
            fprintf(f, md ? " %s |" : " %19s", v);
        }
        fputc('\n', f);
    }
}

void pool_report_print_summary(const struct pool_report *r, FILE *f)
{
    fprintf(f, "summary: pool:");
    for (int s = 0; s < POOL_NSCEN; s++)
        if (r->pol[s].ran)
            fprintf(f, " %s A/%s %+.1f%% [%+.1f, %+.1f];", pool_scenario_name(s),
                    r->pol[s].better == POOL_HP_DEFER ? "D" : "L", 100 * (r->pol[s].a_best.med - 1),
                    100 * (r->pol[s].a_best.lo - 1), 100 * (r->pol[s].a_best.hi - 1));
    const struct pool_cell *c = r->cells[POOL_LOCAL_BULK32];
    if (c[POOL_HP_ADAPTIVE].ran)
        fprintf(f, " bulk32 %.2f ns/buf;", c[POOL_HP_ADAPTIVE].ns_per_obj);
    double wm = 1e9, wb = 1e9;
    for (int s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k <= POOL_HP_ADAPTIVE; k++) {
            if (r->cells[s][k].vs[POOL_MALLOC].n && r->cells[s][k].vs[POOL_MALLOC].med < wm)
                wm = r->cells[s][k].vs[POOL_MALLOC].med;
            if (r->cells[s][k].vs[POOL_DPDK_MBUF].n && r->cells[s][k].vs[POOL_DPDK_MBUF].med < wb)
                wb = r->cells[s][k].vs[POOL_DPDK_MBUF].med;
        }
    if (wm < 1e9)
        fprintf(f, " worst vs malloc %.2fx;", wm);
    if (wb < 1e9)
        fprintf(f, " worst vs dpdk-mbuf %.2fx;", wb);
    int met = 0;
    for (int i = 0; i < r->ngoals; i++)
        met += r->goals[i].met;
    fprintf(f, " goals met %d/%d; %d reps, cpu wait %.0f%%\n", met, r->ngoals, r->reps,
            100 * r->cpu_wait);
}

void pool_report_print_table(const struct pool_report *r, FILE *f)
{
    pool_report_print_header(r, f);
    print_rows(r, f);
    pool_report_print_policies(r, f);
    print_counters(r, f);
    fprintf(f, "\ngoals\n");
    for (int i = 0; i < r->ngoals; i++)
        fprintf(f, "  [%s] %s\n", r->goals[i].met ? " met " : "MISSED", r->goals[i].text);
    pool_report_print_summary(r, f);
}

static json_t *peers_json(const struct pool_report *r, int k)
{
    if (!r->have[k])
        return json_null();
    if (k == POOL_DPDK)
        return json_pack("{s:s, s:s, s:b}", "version", r->dpdk_version, "ops", r->dpdk_ops,
                         "cache_in_use", r->dpdk_cache >= 0);
    return json_pack("{s:s, s:s, s:b, s:i, s:i, s:i}", "version", r->dpdk_version, "ops",
                     r->mbuf_ops, "cache_in_use", r->mbuf_cache >= 0, "data_room",
                     r->mbuf_data_room, "headroom", r->mbuf_headroom, "elt_size", r->mbuf_elt_size);
}

static json_t *results_json(const struct pool_report *r)
{
    json_t *a = json_array();
    for (int s = 0; s < POOL_NSCEN; s++)
        for (int k = 0; k < POOL_NIMPLS; k++) {
            const struct pool_cell *c = &r->cells[s][k];
            if (!c->ran)
                continue;
            json_t *vs = json_object();
            for (int q = POOL_DPDK; q < POOL_NIMPLS; q++)
                if (c->vs[q].n)
                    json_object_set_new(vs, pool_impl_name(q), pool_summary_json(&c->vs[q]));
            json_array_append_new(a, json_pack("{s:s, s:s, s:f, s:f, s:o}", "scenario",
                                               pool_scenario_name(s), "impl", pool_impl_name(k),
                                               "mops", c->mops, "ns_per_obj", c->ns_per_obj, "vs",
                                               vs));
        }
    return a;
}

static json_t *policies_json(const struct pool_report *r)
{
    json_t *a = json_array();
    for (int s = 0; s < POOL_NSCEN; s++) {
        const struct pool_policies *p = &r->pol[s];
        if (!p->ran)
            continue;
        json_t *cnt = json_object();
        for (int k = 0; k < 3; k++)
            json_object_set_new(cnt, hp_alien_policy_name(HP_ALIEN_LOCAL + k),
                                json_pack("{s:I, s:I, s:I, s:I, s:I}", "freed",
                                          (json_int_t)p->freed[k], "alien_frees",
                                          (json_int_t)p->st[k].alien_frees, "deferred",
                                          (json_int_t)p->st[k].deferred, "defer_overflows",
                                          (json_int_t)p->st[k].defer_overflows, "ring_ops",
                                          (json_int_t)p->st[k].ring_ops));
        json_array_append_new(
            a,
            json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "scenario", pool_scenario_name(s),
                      "better", p->better == POOL_HP_DEFER ? "defer" : "local", "adaptive_local",
                      pool_summary_json(&p->a_l), "adaptive_defer", pool_summary_json(&p->a_d),
                      "defer_local", pool_summary_json(&p->d_l), "adaptive_better",
                      pool_summary_json(&p->a_best), "pairs", pool_pairs_json(p->pairs, p->npairs),
                      "counters", cnt));
    }
    return a;
}

static json_t *notes_json(const struct pool_report *r)
{
    json_t *a = json_array();
    if (r->dpdk_note[0])
        json_array_append_new(a, json_string(r->dpdk_note));
    if (r->mbuf_note[0])
        json_array_append_new(a, json_string(r->mbuf_note));
    for (int k = 0; k < POOL_NIMPLS; k++)
        if (r->failed[k][0])
            json_array_append_new(a, json_string(r->failed[k]));
    return a;
}

void pool_report_print_json(const struct pool_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    json_t *goals = json_array();
    for (int i = 0; i < r->ngoals; i++)
        json_array_append_new(
            goals, json_pack("{s:s, s:b}", "goal", r->goals[i].text, "met", r->goals[i].met));
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:[i, i], s:f, s:[f, f], s:[f, f], s:i, s:i, s:i,"
        " s:i, s:i, s:i, s:[i, i], s:f}",
        "bench", "pool", "cpu", cpu, "compiler", tool_compiler(), "flags", tool_build_flags(),
        "reps", r->reps, "min_reps", r->min_reps, "max_reps", r->max_reps, "rounds", r->rounds[0],
        r->rounds[1], "warmup_s", r->warmup_s, "settle_s", r->settle_s[0], r->settle_s[1],
        "slice_s", r->slice_s[0], r->slice_s[1], "n_bufs", r->n_bufs, "data_room", r->data_room,
        "cache_size", r->cache_size, "bulk", r->bulk, "fill_bytes", r->fill, "ring", r->ring,
        "cpus", r->cpu_a, r->cpu_b, "cpu_wait", r->cpu_wait);
    json_object_set_new(o, "dpdk", peers_json(r, POOL_DPDK));
    json_object_set_new(o, "dpdk_mbuf", peers_json(r, POOL_DPDK_MBUF));
    json_object_set_new(o, "notes", notes_json(r));
    json_object_set_new(o, "results", results_json(r));
    json_object_set_new(o, "policies", policies_json(r));
    json_object_set_new(o, "goals", goals);
    json_dumpf(o, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(o);
}

int bench_pool(const struct bench_opts *o, FILE *table)
{
    struct pool_report *r = malloc(sizeof *r);
    if (!r)
        return 1;
    int rc = pool_report_run(r, o);
    if (rc) {
        fprintf(stderr, "hotpath bench pool: %s\n", strerror(-rc));
        free(r);
        return 1;
    }
    pool_report_goals(r);
    if (o->json)
        pool_report_print_json(r, stdout);
    else
        pool_report_print_table(r, table);
    if (o->json_out)
        pool_report_print_json(r, o->json_out);
    bool failed = false;
    for (int k = 0; k < POOL_NIMPLS; k++)
        failed |= r->failed[k][0] != 0;
    free(r);
    return failed ? 1 : 0;
}
