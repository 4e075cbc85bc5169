/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench cksum`: DPDK's cksum_perf_autotest method (cycles per byte, median of repetitions) against the peers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/cpu.h>

#include "base/internal.h"
#include "bench_cksum.h"
#include "bench.h"
#include "tool.h"

static const size_t sizes[] = {20, 21, 100, 101, 1500, 1501, 9000, 65536};
static const int offsets[] = {0, 1};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define NOFFS ((int)(sizeof offsets / sizeof offsets[0]))

/* What the seed quotes as the load-port limit of Zen 4 (and Zen 3): two
 * 32-byte loads per cycle. */
#define LOAD_PORT_LIMIT 0.016

static int add_impl(struct cksum_report *r, const char *name, hp__cksum_fn fn, const char *sym,
                    const char *note)
{
    if (r->nimpls == CKSUM_MAX_IMPLS)
        return -1;
    struct cksum_impl *im = &r->impls[r->nimpls];
    memset(im, 0, sizeof *im);
    im->name = name;
    im->fn = fn;
    im->symbol = sym;
    im->note = note;
    im->code_bytes = sym ? tool_symbol_size(sym) : -1;
    return r->nimpls++;
}

static void collect_impls(struct cksum_report *r)
{
    int n;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    const char *disp = hp_cksum_impl();
    const char *disp_sym = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, disp) == 0)
            disp_sym = v[i].symbol;
    r->dispatched = disp;
    /* The dispatched path is hp_cksum_partial (which sums inputs under 128
     * bytes itself) plus the variant it jumps to: the row counts both; the
     * variant's own size is its row's. */
    int hp = add_impl(r, "hotpath", hp_cksum_partial, disp_sym, NULL);
    long entry = tool_symbol_size("hp_cksum_partial");
    r->entry_bytes = entry;
    if (hp >= 0 && entry >= 0 && r->impls[hp].code_bytes >= 0)
        r->impls[hp].code_bytes += entry;
    else if (hp >= 0)
        r->impls[hp].code_bytes = -1;
    for (int i = 0; i < n; i++) {
        if (hp_cksum_impl_supported(v[i].name))
            add_impl(r, v[i].name, v[i].fn, v[i].symbol, NULL);
        else if (r->nskipped < CKSUM_MAX_IMPLS)
            r->skipped[r->nskipped++] = v[i].name;
    }
#ifdef HP_HAVE_DPDK
    add_impl(r, "dpdk", hp_peer_dpdk_cksum_baseline, "hp_peer_dpdk_cksum_baseline", NULL);
    add_impl(r, "dpdk-native", hp_peer_dpdk_cksum_native, "hp_peer_dpdk_cksum_native", NULL);
#else
    r->no_dpdk = true;
#endif
    add_impl(r, "unroll64", hp_peer_unroll64, "hp_peer_unroll64", NULL);
    add_impl(r, "naive", hp_peer_naive, "hp_peer_naive", NULL);
}

/* The timed loop, out of line and on a 64-byte boundary so that its own
 * placement is the same for every row and every build. Calls are
 * independent, as in DPDK's cksum_perf_autotest: this measures throughput. */
__attribute__((noinline, aligned(64))) static uint64_t timed(hp__cksum_fn fn,
                                                             const unsigned char *p, size_t len,
                                                             size_t iters, uint32_t *sink)
{
    uint32_t acc = 0;
    uint64_t t0 = tool_ticks();
    for (size_t i = 0; i < iters; i++)
        acc += fn(p, len, 0);
    uint64_t t1 = tool_ticks();
    *sink += acc;
    return t1 - t0;
}

int cksum_report_run(struct cksum_report *r, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    collect_impls(r);
    int reps = o->reps > 0 ? o->reps : (o->quick ? 7 : 15);
    if (reps > CKSUM_MAX_REPS)
        reps = CKSUM_MAX_REPS;
    r->reps = reps;
    if (o->cpu >= 0) {
        int rc = tool_pin(o->cpu);
        if (rc)
            fprintf(stderr, "hotpath bench cksum: cannot pin to CPU %d: %s (continuing unpinned)\n",
                    o->cpu, strerror(-rc));
    }
    r->cpu_pinned = o->cpu;

    size_t bufsz = 65536 + 4096;
    unsigned char *buf = aligned_alloc(4096, bufsz);
    if (!buf)
        return -ENOMEM;
    uint64_t s = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < bufsz; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (unsigned char)(s >> 56);
    }

    int total = NSIZES * NOFFS, done = 0;
    for (int si = 0; si < NSIZES; si++) {
        for (int oi = 0; oi < NOFFS; oi++) {
            size_t len = sizes[si];
            const unsigned char *p = buf + offsets[oi];
            struct cksum_cell *cell = &r->cells[si][oi];
            cell->size = len;
            cell->offset = offsets[oi];
            /* Every row must compute the same checksum before it is timed. */
            uint16_t want = hp_cksum_fold(hp__cksum_scalar(p, len, 0));
            for (int k = 0; k < r->nimpls; k++)
                if (hp_cksum_fold(r->impls[k].fn(p, len, 0)) != want)
                    r->impls[k].wrong = true;
            /* Enough calls per repetition to cover 256 KiB, at least 64. */
            size_t iters = 262144 / len;
            if (iters < 64)
                iters = 64;
            double samples[CKSUM_MAX_IMPLS][CKSUM_MAX_REPS];
            /* Rounds interleave the rows, so that drift on a shared machine
             * hits every row alike; the first round warms up and is dropped. */
            for (int rep = -1; rep < reps; rep++) {
                for (int k = 0; k < r->nimpls; k++) {
                    uint64_t t = timed(r->impls[k].fn, p, len, iters, &r->sink);
                    if (rep >= 0)
                        samples[k][rep] = (double)t / ((double)iters * (double)len);
                }
            }
            for (int k = 0; k < r->nimpls; k++)
                cell->cpb[k] = tool_median(samples[k], reps);
            if (o->progress) {
                char what[64];
                snprintf(what, sizeof what, "%zu B, offset %d", len, offsets[oi]);
                o->progress(o->progress_ctx, ++done, total, what);
            }
        }
    }
    free(buf);
    return 0;
}

int cksum_report_find(const struct cksum_report *r, const char *name)
{
    for (int k = 0; k < r->nimpls; k++)
        if (strcmp(r->impls[k].name, name) == 0)
            return k;
    return -1;
}

/* ---- goals -------------------------------------------------------------- */

static void goal(struct cksum_report *r, bool met, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void goal(struct cksum_report *r, bool met, const char *fmt, ...)
{
    if (r->ngoals == CKSUM_MAX_GOALS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->goals[r->ngoals].text, sizeof r->goals[0].text, fmt, ap);
    va_end(ap);
    r->goals[r->ngoals++].met = met;
}

void cksum_report_goals(struct cksum_report *r)
{
    int hp = cksum_report_find(r, "hotpath");
    int dp = cksum_report_find(r, "dpdk"), dn = cksum_report_find(r, "dpdk-native");
    r->ngoals = 0;
    for (int k = 0; k < r->nimpls; k++)
        if (r->impls[k].wrong)
            goal(r, false, "%s computes a wrong checksum", r->impls[k].name);
    if (dp >= 0 && dn >= 0) {
        double worst_dp = 0, worst_dn = 1e9;
        for (int si = 4; si < NSIZES; si++)
            for (int oi = 0; oi < NOFFS; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                double a = c->cpb[hp] / c->cpb[dp], b = c->cpb[dn] / c->cpb[hp];
                worst_dp = a > worst_dp ? a : worst_dp;
                worst_dn = b < worst_dn ? b : worst_dn;
            }
        goal(r, worst_dp <= 1.0 / 3, "1500-65536 B: hotpath <= 1/3 of dpdk (worst %.3fx)", worst_dp);
        goal(r, worst_dn >= 1.3, "1500-65536 B: hotpath >= 1.3x faster than dpdk-native (worst %.2fx)",
             worst_dn);
        double worst_small = 0;
        for (int si = 0; si < 4; si++)
            for (int oi = 0; oi < NOFFS; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                double a = c->cpb[hp] / c->cpb[dp];
                worst_small = a > worst_small ? a : worst_small;
            }
        goal(r, worst_small <= 0.75, "20-101 B: hotpath <= 0.75x dpdk (worst %.3fx)", worst_small);
    } else {
        goal(r, false, "dpdk rows missing (libdpdk-dev not installed at build time): DPDK goals not measured");
    }
    /* "Never slower than any row", with 3% for the noise of a shared VM. */
    double worst = 0;
    const char *who = "-";
    for (int si = 0; si < 4; si++)
        for (int oi = 0; oi < NOFFS; oi++)
            for (int k = 0; k < r->nimpls; k++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                double a = c->cpb[hp] / c->cpb[k];
                if (k != hp && a > worst) {
                    worst = a;
                    who = r->impls[k].name;
                }
            }
    goal(r, worst <= 1.03, "20-101 B: hotpath never slower than any row (worst %.3fx of %s; 3%% noise allowed)",
         worst, who);
    int dv = cksum_report_find(r, r->dispatched);
    long vb = dv >= 0 ? r->impls[dv].code_bytes : -1;
    goal(r, vb >= 0 && vb <= 1024,
         "the dispatched variant's function (%s) <= 1024 bytes (%ld; with the entry "
         "hp_cksum_partial, which sums inputs under 128 B inline, %ld)",
         r->dispatched, vb, r->impls[hp].code_bytes);
    double c9000 = r->cells[6][0].cpb[hp] > r->cells[6][1].cpb[hp] ? r->cells[6][0].cpb[hp]
                                                                  : r->cells[6][1].cpb[hp];
    goal(r, c9000 <= 2 * LOAD_PORT_LIMIT, "9000 B: within 2x of the load-port limit %.3f (%.4f, %.2fx)",
         LOAD_PORT_LIMIT, c9000, c9000 / LOAD_PORT_LIMIT);
}

/* ---- output ------------------------------------------------------------- */

void cksum_report_print_header(const struct cksum_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "cpu:        %s\n", cpu);
    fprintf(f, "compiler:   %s\n", tool_compiler());
    fprintf(f, "flags:      %s; dpdk-native: -O3 -march=native\n", tool_build_flags());
    fprintf(f, "dispatched: %s", r->dispatched);
    for (int i = 0; i < r->nskipped; i++)
        fprintf(f, "%s%s", i ? ", " : " (not runnable here: ", r->skipped[i]);
    fprintf(f, "%s\n", r->nskipped ? ")" : "");
    fprintf(f, "method:     %s per byte, median of %d repetitions, pinned to CPU %d\n",
            tool_ticks_unit(), r->reps, r->cpu_pinned);
    if (r->no_dpdk)
        fprintf(f, "note:       dpdk rows skipped: libdpdk-dev was not installed at build time\n");
}

void cksum_report_print_table(const struct cksum_report *r, FILE *f)
{
    int hp = cksum_report_find(r, "hotpath");
    int dp = cksum_report_find(r, "dpdk"), dn = cksum_report_find(r, "dpdk-native");
    cksum_report_print_header(r, f);
    fprintf(f, "\ncycles/byte\n%6s %3s", "size", "off");
    for (int k = 0; k < r->nimpls; k++)
        fprintf(f, " %11s", r->impls[k].name);
    if (dp >= 0)
        fprintf(f, " %9s %11s", "hp/dpdk", "native/hp");
    fputc('\n', f);
    for (int si = 0; si < NSIZES; si++)
        for (int oi = 0; oi < NOFFS; oi++) {
            const struct cksum_cell *c = &r->cells[si][oi];
            fprintf(f, "%6zu %3d", c->size, c->offset);
            for (int k = 0; k < r->nimpls; k++)
                fprintf(f, " %11.4f", c->cpb[k]);
            if (dp >= 0)
                fprintf(f, " %8.3fx %10.2fx", c->cpb[hp] / c->cpb[dp], c->cpb[dn] / c->cpb[hp]);
            fputc('\n', f);
        }
    fprintf(f, "\ncode bytes");
    for (int k = 0; k < r->nimpls; k++) {
        if (r->impls[k].code_bytes >= 0)
            fprintf(f, "  %s %ld", r->impls[k].name, r->impls[k].code_bytes);
        else
            fprintf(f, "  %s n/a", r->impls[k].name);
    }
    fprintf(f, "\n\ngoals\n");
    for (int i = 0; i < r->ngoals; i++)
        fprintf(f, "  [%s] %s\n", r->goals[i].met ? " met " : "MISSED", r->goals[i].text);
}

void cksum_report_print_json(const struct cksum_report *r, FILE *f)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    fprintf(f, "{\"bench\": \"cksum\", \"dispatched\": ");
    tool_json_str(f, r->dispatched);
    fprintf(f, ", \"cpu\": ");
    tool_json_str(f, cpu);
    fprintf(f, ", \"compiler\": ");
    tool_json_str(f, tool_compiler());
    fprintf(f, ", \"flags\": ");
    tool_json_str(f, tool_build_flags());
    fprintf(f, ", \"unit\": ");
    tool_json_str(f, tool_ticks_unit());
    fprintf(f, ", \"reps\": %d,\n \"results\": [", r->reps);
    bool first = true;
    for (int k = 0; k < r->nimpls; k++)
        for (int si = 0; si < NSIZES; si++)
            for (int oi = 0; oi < NOFFS; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                fprintf(f, "%s\n  {\"impl\": \"%s\", \"size\": %zu, \"offset\": %d, "
                        "\"cycles_per_byte\": %.5f}",
                        first ? "" : ",", r->impls[k].name, c->size, c->offset, c->cpb[k]);
                first = false;
            }
    fprintf(f, "],\n \"code_bytes\": {");
    for (int k = 0; k < r->nimpls; k++)
        fprintf(f, "%s\"%s\": %ld", k ? ", " : "", r->impls[k].name, r->impls[k].code_bytes);
    fprintf(f, "},\n \"skipped\": [");
    for (int i = 0; i < r->nskipped; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", r->skipped[i]);
    fprintf(f, "],\n \"goals\": [");
    for (int i = 0; i < r->ngoals; i++) {
        fprintf(f, "%s\n  {\"goal\": ", i ? "," : "");
        tool_json_str(f, r->goals[i].text);
        fprintf(f, ", \"met\": %s}", r->goals[i].met ? "true" : "false");
    }
    fprintf(f, "]}\n");
}

int bench_cksum(const struct bench_opts *o, FILE *table)
{
    struct cksum_report *r = malloc(sizeof *r);
    if (!r)
        return 1;
    int rc = cksum_report_run(r, o);
    if (rc) {
        fprintf(stderr, "hotpath bench cksum: %s\n", strerror(-rc));
        free(r);
        return 1;
    }
    cksum_report_goals(r);
    if (o->json)
        cksum_report_print_json(r, stdout);
    else
        cksum_report_print_table(r, table);
    if (o->json_out)
        cksum_report_print_json(r, o->json_out);
    free(r);
    return 0;
}
