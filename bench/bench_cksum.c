/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench cksum`: DPDK's cksum_perf_autotest method (cycles per byte, median of repetitions) against the peers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/cpu.h>

#include "base/internal.h"
#include "bench.h"
#include "bench_cksum.h"
#include "harness.h"
#include "tool.h"

static const size_t sizes[] = {20, 21, 100, 101, 1500, 1501, 9000, 65536};
static const int offsets[] = {0, 1};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define NOFFS  ((int)(sizeof offsets / sizeof offsets[0]))

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

/* One cell (a size and an offset) under test: the harness's round is one
 * timed loop of one row. */
struct cell_run {
    const struct cksum_report *r;
    const unsigned char *p;
    size_t len, iters;
    uint32_t sink;
};

static int cell_round(void *ctx, int row, double *v, double *disturbed, char *why, size_t len)
{
    (void)disturbed, (void)why, (void)len;
    struct cell_run *c = ctx;
    uint64_t t = timed(c->r->impls[row].fn, c->p, c->len, c->iters, &c->sink);
    v[0] = (double)t / ((double)c->iters * (double)c->len);
    return 0;
}

/* Measure one cell: every row must compute the same checksum before it is
 * timed; then rounds that interleave the rows, so that drift on a shared
 * machine hits every row alike, the first round a warm-up. */
static int measure_cell(struct cksum_report *r, struct cksum_cell *cell, const unsigned char *p,
                        size_t len, struct hb_row *rows)
{
    uint16_t want = hp_cksum_fold(hp__cksum_scalar(p, len, 0));
    for (int k = 0; k < r->nimpls; k++) {
        if (hp_cksum_fold(r->impls[k].fn(p, len, 0)) != want)
            r->impls[k].wrong = true;
        rows[k] = (struct hb_row){.name = r->impls[k].name};
    }
    /* Enough calls per repetition to cover 256 KiB, at least 64. */
    struct cell_run c = {.r = r, .p = p, .len = len, .iters = 262144 / len < 64 ? 64 : 262144 / len};
    struct hb_rounds h = {.reps = r->reps, .nrows = r->nimpls, .nvalues = 1, .warm_round = true};
    if (hb_rounds_run(&h, rows, cell_round, &c) < 0)
        return -EIO;
    for (int k = 0; k < r->nimpls; k++)
        cell->cpb[k] = rows[k].median[0];
    r->sink += c.sink;
    return 0;
}

/* ---- the copy and the sum ------------------------------------------------------ */

static const size_t copy_sizes[] = {64, 256, 1448, 9000};
#define COPY_POOL  ((size_t)64 << 20) /* cold: each call on the next slot of 64 MiB */
#define COPY_SRC   2                  /* a frame's payload is rarely aligned */
#define COPY_DST   (2048 + 54)        /* its page offset: no 4 KiB aliasing with the source */
#define COPY_CALLS 4096

/* The way before hp_cksum_copy: the sum from the source, then memcpy. */
/* A slot: the source at COPY_SRC, the destination from the next page on. */
static size_t dst_at(size_t len)
{
    return ((COPY_SRC + len + 4095) & ~(size_t)4095) + COPY_DST;
}

static uint32_t sum_then_memcpy(void *dst, const void *src, size_t len, uint32_t sum)
{
    sum = hp_cksum_partial(src, len, sum);
    memcpy(dst, src, len);
    return sum;
}

__attribute__((noinline, aligned(64))) static uint64_t timed_copy(int way, unsigned char *pool,
                                                                  size_t stride, size_t nslots,
                                                                  size_t len, uint32_t *sink)
{
    uint32_t acc = 0;
    uint64_t t0 = tool_ticks();
    for (size_t i = 0; i < COPY_CALLS; i++) {
        unsigned char *slot = pool + (i % nslots) * stride;
        acc += way ? hp_cksum_copy(slot + dst_at(len), slot + COPY_SRC, len, 0)
                   : sum_then_memcpy(slot + dst_at(len), slot + COPY_SRC, len, 0);
    }
    uint64_t t1 = tool_ticks();
    *sink += acc;
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Each size hot (one slot, in L1) and cold (a slot per call, over 64 MiB);
 * the two ways alternate within each repetition; medians. */
static int measure_copy(struct cksum_report *r)
{
    unsigned char *pool = aligned_alloc(4096, COPY_POOL);
    if (!pool)
        return -ENOMEM;
    for (size_t i = 0; i < COPY_POOL; i++)
        pool[i] = (unsigned char)(i * 2654435761u >> 13);
    r->ncopy = 0;
    for (int cold = 0; cold < 2; cold++)
        for (size_t si = 0; si < sizeof copy_sizes / sizeof copy_sizes[0]; si++) {
            size_t len = copy_sizes[si], stride = (dst_at(len) + len + 4095) & ~(size_t)4095;
            struct cksum_copy_cell *c = &r->copy[r->ncopy++];
            *c = (struct cksum_copy_cell){.size = len, .cold = cold};
            unsigned char *s0 = pool + COPY_SRC, *d0 = pool + dst_at(len);
            uint16_t want = hp_cksum_fold(hp__cksum_scalar(s0, len, 0));
            memset(d0, 0, len);
            c->wrong =
                hp_cksum_fold(hp_cksum_copy(d0, s0, len, 0)) != want || memcmp(d0, s0, len) != 0;
            size_t nslots = cold ? COPY_POOL / stride : 1;
            double v[2][CKSUM_MAX_REPS];
            for (int k = 0; k <= r->reps; k++) /* the first a warm-up */
                for (int way = 0; way < 2; way++) {
                    uint64_t t = timed_copy(way, pool, stride, nslots, len, &r->sink);
                    if (k)
                        v[way][k - 1] = (double)t / ((double)COPY_CALLS * (double)len);
                }
            for (int way = 0; way < 2; way++) {
                qsort(v[way], (size_t)r->reps, sizeof v[way][0], cmp_double);
                c->cpb[way] = v[way][r->reps / 2];
            }
        }
    free(pool);
    return 0;
}

int cksum_report_run(struct cksum_report *r, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    collect_impls(r);
    int reps = o->reps > 0 ? o->reps : (o->quick ? 7 : 15);
    r->reps = reps > CKSUM_MAX_REPS ? CKSUM_MAX_REPS : reps;
    int rc = o->cpu >= 0 ? tool_pin(o->cpu) : 0;
    if (rc)
        fprintf(stderr, "hotpath bench cksum: cannot pin to CPU %d: %s (continuing unpinned)\n",
                o->cpu, strerror(-rc));
    r->cpu_pinned = o->cpu;
    size_t bufsz = 65536 + 4096;
    unsigned char *buf = aligned_alloc(4096, bufsz);
    struct hb_row *rows = calloc(CKSUM_MAX_IMPLS, sizeof *rows);
    if (!buf || !rows) {
        free(buf);
        free(rows);
        return -ENOMEM;
    }
    uint64_t s = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < bufsz; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (unsigned char)(s >> 56);
    }
    int total = NSIZES * NOFFS, done = 0;
    for (int si = 0; si < NSIZES && rc == 0; si++)
        for (int oi = 0; oi < NOFFS && rc == 0; oi++) {
            struct cksum_cell *cell = &r->cells[si][oi];
            cell->size = sizes[si];
            cell->offset = offsets[oi];
            rc = measure_cell(r, cell, buf + offsets[oi], sizes[si], rows);
            if (o->progress) {
                char what[64];
                snprintf(what, sizeof what, "%zu B, offset %d", sizes[si], offsets[oi]);
                o->progress(o->progress_ctx, ++done, total, what);
            }
        }
    free(rows);
    free(buf);
    if (rc == 0)
        rc = measure_copy(r);
    return rc;
}

int cksum_report_find(const struct cksum_report *r, const char *name)
{
    for (int k = 0; k < r->nimpls; k++)
        if (strcmp(r->impls[k].name, name) == 0)
            return k;
    return -1;
}

/* ---- goals -------------------------------------------------------------- */

void cksum_report_goals(struct cksum_report *r)
{
    int hp = cksum_report_find(r, "hotpath");
    int dp = cksum_report_find(r, "dpdk"), dn = cksum_report_find(r, "dpdk-native");
    r->goals.n = 0;
    for (int k = 0; k < r->nimpls; k++)
        if (r->impls[k].wrong)
            hb_goal(&r->goals, false, "%s computes a wrong checksum", r->impls[k].name);
    if (dp >= 0 && dn >= 0) {
        double worst_dp = 0, worst_dn = 1e9;
        for (int si = 4; si < NSIZES; si++)
            for (int oi = 0; oi < NOFFS; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                double a = c->cpb[hp] / c->cpb[dp], b = c->cpb[dn] / c->cpb[hp];
                worst_dp = a > worst_dp ? a : worst_dp;
                worst_dn = b < worst_dn ? b : worst_dn;
            }
        hb_goal(&r->goals, worst_dp <= 1.0 / 3,
                "1500-65536 B: hotpath <= 1/3 of dpdk (worst %.3fx)", worst_dp);
        hb_goal(&r->goals, worst_dn >= 1.3,
                "1500-65536 B: hotpath >= 1.3x faster than dpdk-native (worst %.2fx)", worst_dn);
        double worst_small = 0;
        for (int si = 0; si < 4; si++)
            for (int oi = 0; oi < NOFFS; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                double a = c->cpb[hp] / c->cpb[dp];
                worst_small = a > worst_small ? a : worst_small;
            }
        hb_goal(&r->goals, worst_small <= 0.75, "20-101 B: hotpath <= 0.75x dpdk (worst %.3fx)",
                worst_small);
    } else {
        hb_goal(
            &r->goals, false,
            "dpdk rows missing (libdpdk-dev not installed at build time): DPDK goals not measured");
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
    hb_goal(&r->goals, worst <= 1.03,
            "20-101 B: hotpath never slower than any row (worst %.3fx of %s; 3%% noise allowed)",
            worst, who);
    int dv = cksum_report_find(r, r->dispatched);
    long vb = dv >= 0 ? r->impls[dv].code_bytes : -1;
    hb_goal(&r->goals, vb >= 0 && vb <= 1024,
            "the dispatched variant's function (%s) <= 1024 bytes (%ld; with the entry "
            "hp_cksum_partial, which sums inputs under 128 B inline, %ld)",
            r->dispatched, vb, r->impls[hp].code_bytes);
    double c9000 = r->cells[6][0].cpb[hp] > r->cells[6][1].cpb[hp] ? r->cells[6][0].cpb[hp]
                                                                   : r->cells[6][1].cpb[hp];
    hb_goal(&r->goals, c9000 <= 2 * LOAD_PORT_LIMIT,
            "9000 B: within 2x of the load-port limit %.3f (%.4f, %.2fx)", LOAD_PORT_LIMIT, c9000,
            c9000 / LOAD_PORT_LIMIT);
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
    fputc('\n', f);
    fprintf(f,
            "\ncopy and sum, %s/byte (the sum then memcpy; hp_cksum_copy, %s's; source at "
            "page offset %d, destination at %d)\n%6s %5s %13s %13s %9s\n",
            tool_ticks_unit(), r->dispatched, COPY_SRC, COPY_DST, "size", "cache", "sum+memcpy",
            "hp_cksum_copy", "ratio");
    for (int i = 0; i < r->ncopy; i++) {
        const struct cksum_copy_cell *c = &r->copy[i];
        fprintf(f, "%6zu %5s %13.4f %13.4f %8.2fx%s\n", c->size, c->cold ? "cold" : "hot",
                c->cpb[0], c->cpb[1], c->cpb[0] / c->cpb[1],
                c->wrong ? "  WRONG: the copy or its sum differed" : "");
    }
    hb_goals_table(&r->goals, f);
}

json_t *cksum_report_json(const struct cksum_report *r)
{
    json_t *j = hb_json_head("cksum");
    json_object_set_new(j, "dispatched", json_string(r->dispatched));
    json_object_set_new(j, "unit", json_string(tool_ticks_unit()));
    json_object_set_new(j, "reps", json_integer(r->reps));
    json_t *res = json_array(), *code = json_object(), *skipped = json_array();
    for (int k = 0; k < r->nimpls; k++)
        for (int si = 0; si < NSIZES; si++)
            for (int oi = 0; oi < NOFFS; oi++) {
                const struct cksum_cell *c = &r->cells[si][oi];
                json_array_append_new(res,
                                      json_pack("{s:s, s:I, s:i, s:o}", "impl", r->impls[k].name,
                                                "size", (json_int_t)c->size, "offset", c->offset,
                                                "cycles_per_byte", tool_json_num(c->cpb[k], 5)));
            }
    for (int k = 0; k < r->nimpls; k++)
        json_object_set_new(code, r->impls[k].name, json_integer(r->impls[k].code_bytes));
    for (int i = 0; i < r->nskipped; i++)
        json_array_append_new(skipped, json_string(r->skipped[i]));
    json_t *copy = json_array();
    for (int i = 0; i < r->ncopy; i++) {
        const struct cksum_copy_cell *c = &r->copy[i];
        json_array_append_new(copy,
                              json_pack("{s:I, s:s, s:o, s:o, s:b}", "size", (json_int_t)c->size,
                                        "cache", c->cold ? "cold" : "hot", "sum_then_memcpy",
                                        tool_json_num(c->cpb[0], 5), "hp_cksum_copy",
                                        tool_json_num(c->cpb[1], 5), "ok", !c->wrong));
    }
    json_object_set_new(j, "results", res);
    json_object_set_new(j, "copy", copy);
    json_object_set_new(j, "code_bytes", code);
    json_object_set_new(j, "skipped", skipped);
    json_object_set_new(j, "goals", hb_goals_json(&r->goals));
    return j;
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
    if (!o->json)
        cksum_report_print_table(r, table);
    if (o->json || o->json_out)
        hb_json_emit(cksum_report_json(r), o->json, o->json_out);
    free(r);
    return 0;
}
