/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath layout --profile: per-field reads and writes per TCP path from an instrumented run, field classes, a proposed order and its lines. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "tool.h"

/*
 * The profile (written by tools/hotpath/prof/fieldprof.c at exit):
 *
 *   # hotpath field profile 1
 *   binary /path/to/build-profile/hotpath
 *   struct hp_tcp_sock 704
 *   blocks 2000           connection blocks seen
 *   lost 0                blocks the runtime's table had no room for
 *   entries RX 123456     path entries (hp__tcp_input, hp_tcp_recv / hp_tcp_send, hp__tcp_output)
 *   entries TX 120000
 *   entries other 0
 *   OFF SIZE PATH READS WRITES   one line per (access offset, access size, path)
 *
 * An access is counted for every member its bytes overlap, so a word load
 * that reads two 16-bit fields counts for both.
 */

static int path_index(const char *s)
{
    for (int p = 0; p < LT_NPATHS; p++)
        if (strcasecmp(s, lt_path_name[p]) == 0)
            return p;
    return -1;
}

int lt_profile_read(const char *file, struct lt_profile *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    FILE *f = fopen(file, "r");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "cannot open the profile '%s': %s", file, strerror(e));
        return -e;
    }
    p->file = strdup(file);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    bool magic = false;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        char a[4096], b[64];
        unsigned long long x, y, z, w;
        if (line[0] == '#') {
            if (strstr(line, "hotpath field profile"))
                magic = true;
            continue;
        }
        if (sscanf(line, "binary %4095[^\n]", a) == 1) {
            free(p->binary);
            p->binary = strdup(a);
        } else if (sscanf(line, "struct %255s %llu", a, &x) == 2) {
            free(p->sname);
            p->sname = strdup(a);
            p->size = x;
        } else if (sscanf(line, "blocks %llu", &x) == 1) {
            p->blocks = x;
        } else if (sscanf(line, "lost %llu", &x) == 1) {
            p->lost = x;
        } else if (sscanf(line, "entries %63s %llu", b, &x) == 2 && path_index(b) >= 0) {
            p->entries[path_index(b)] = x;
        } else if (sscanf(line, "%llu %llu %63s %llu %llu", &x, &y, b, &z, &w) == 5 &&
                   path_index(b) >= 0) {
            if (tool_grow(&p->r, &p->cap, p->n, sizeof *p->r, 256) < 0) {
                rc = -ENOMEM;
                break;
            }
            p->r[p->n++] = (struct lt_prof_rec){(uint32_t)x, (uint32_t)y, path_index(b), z, w};
        } else {
            char *s = line;
            while (isspace((unsigned char)*s))
                s++;
            if (*s) {
                snprintf(err, errlen, "%s:%d: not a profile line: %.60s", file, lineno, s);
                rc = -EINVAL;
                break;
            }
        }
    }
    free(line);
    fclose(f);
    if (rc == 0 && (!magic || !p->sname || !p->size)) {
        snprintf(err, errlen,
                 "'%s' is not a field profile (no '# hotpath field profile' header or struct line)",
                 file);
        rc = -EINVAL;
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", file);
    if (rc < 0)
        lt_profile_free(p);
    return rc;
}

void lt_profile_free(struct lt_profile *p)
{
    free(p->file);
    free(p->binary);
    free(p->sname);
    free(p->r);
    memset(p, 0, sizeof *p);
}

/* ---- per member ---- */

enum cls { C_BOTH, C_RX, C_TX, C_RARE, C_COLD };
static const char *const cls_name[] = {"both", "rx-only", "tx-only", "rare", "cold"};
enum grp { G_DEMUX, G_TX, G_RXTX, G_RX, G_COLD, G_N };
static const char *const grp_name[] = {"demux", "tx", "rxtx", "rx", "cold"};

struct fld {
    const struct lt_member *m;
    uint64_t reads[LT_NPATHS], writes[LT_NPATHS];
    bool on[2], written[2]; /* hot on RX / TX; written there */
    enum cls cls;
    bool rw;
    enum grp grp;
    uint64_t new_off;
};

static double rate(uint64_t n, uint64_t entries)
{
    return entries ? (double)n / (double)entries : 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return a > 1 ? (v + a - 1) / a * a : v;
}

/* The bytes of one member an access touched, relative to the member. */
struct touch {
    uint32_t lo, hi;
    int path;
};

/* Per member, what its accesses touched on the paths it is on (a
 * handshake-only access is not the fast path and moves no line). */
struct touches {
    struct touch *v;
    size_t n;
    size_t *first; /* member i's touches: v[first[i] .. first[i + 1]) */
};

static int touches_build(const struct lt_profile *p, const struct fld *f, size_t nf,
                         struct touches *t)
{
    memset(t, 0, sizeof *t);
    t->first = calloc(nf + 1, sizeof *t->first);
    size_t cap = 0;
    if (!t->first)
        return -ENOMEM;
    for (size_t i = 0; i < nf; i++) {
        t->first[i] = t->n;
        const struct lt_member *m = f[i].m;
        for (size_t k = 0; k < p->n; k++) {
            const struct lt_prof_rec *r = &p->r[k];
            if (r->path > LT_TX || !f[i].on[r->path] || r->off >= m->off + m->size ||
                r->off + r->size <= m->off)
                continue;
            if (tool_grow(&t->v, &cap, t->n, sizeof *t->v, 256) < 0)
                return -ENOMEM;
            uint64_t lo = r->off > m->off ? r->off : m->off;
            uint64_t hi = r->off + r->size < m->off + m->size ? r->off + r->size : m->off + m->size;
            t->v[t->n++] =
                (struct touch){(uint32_t)(lo - m->off), (uint32_t)(hi - m->off), r->path};
        }
    }
    t->first[nf] = t->n;
    return 0;
}

static void touches_free(struct touches *t)
{
    free(t->v);
    free(t->first);
}

/* Lines each path touches with the members at their current (proposed
 * false) or proposed offsets; span gets the bytes from each path's first
 * touched byte to its last, summed. */
static void lines_with(const struct touches *t, const struct fld *f, size_t nf, bool proposed,
                       struct lt_lines out[2], uint64_t *span)
{
    memset(out, 0, 2 * sizeof out[0]);
    uint64_t lo[2] = {UINT64_MAX, UINT64_MAX}, hi[2] = {0, 0};
    for (size_t i = 0; i < nf; i++) {
        uint64_t base = proposed ? f[i].new_off : f[i].m->off;
        for (size_t k = t->first[i]; k < t->first[i + 1]; k++) {
            const struct touch *x = &t->v[k];
            lt_lines_add(&out[x->path], base + x->lo, x->hi - x->lo);
            if (base + x->lo < lo[x->path])
                lo[x->path] = base + x->lo;
            if (base + x->hi > hi[x->path])
                hi[x->path] = base + x->hi;
        }
    }
    if (span)
        *span = (hi[0] > lo[0] ? hi[0] - lo[0] : 0) + (hi[1] > lo[1] ? hi[1] - lo[1] : 0);
}

/* Offsets for the members in the order ord (each at its alignment); the size. */
static uint64_t place(struct fld *f, const size_t *ord, size_t n, unsigned salign)
{
    uint64_t off = 0;
    for (size_t k = 0; k < n; k++) {
        struct fld *x = &f[ord[k]];
        off = align_up(off, x->m->align ? x->m->align : 1);
        x->new_off = off;
        off += x->m->size;
    }
    return align_up(off, salign ? salign : 1);
}

/* What the proposal minimises, in this order: the lines of both paths,
 * those of the worse path, each path's spread, the size. */
struct cost {
    unsigned sum, max;
    uint64_t span, size;
};

static int cost_cmp(const struct cost *a, const struct cost *b)
{
    if (a->sum != b->sum)
        return a->sum < b->sum ? -1 : 1;
    if (a->max != b->max)
        return a->max < b->max ? -1 : 1;
    if (a->span != b->span)
        return a->span < b->span ? -1 : 1;
    return a->size < b->size ? -1 : a->size > b->size;
}

static struct cost cost_of(const struct touches *t, struct fld *f, size_t nf, const size_t *ord,
                           unsigned salign, bool proposed)
{
    struct cost c = {0};
    c.size = proposed ? place(f, ord, nf, salign) : 0;
    struct lt_lines l[2];
    lines_with(t, f, nf, proposed, l, &c.span);
    unsigned a = lt_lines_count(&l[0]), b = lt_lines_count(&l[1]);
    c.sum = a + b;
    c.max = a > b ? a : b;
    return c;
}

/* How much more of member x the transmit path touches than the receive
 * path, as shares of its bytes: -1 (receive only) .. 1 (transmit only). */
static double lean(const struct touches *t, const struct fld *f, size_t i)
{
    double share[2] = {0, 0};
    uint64_t size = f[i].m->size ? f[i].m->size : 1;
    for (int q = 0; q < 2; q++) {
        uint64_t bytes = 0, lo = UINT64_MAX, hi = 0;
        for (size_t k = t->first[i]; k < t->first[i + 1]; k++)
            if (t->v[k].path == q) {
                bytes += t->v[k].hi - t->v[k].lo;
                if (t->v[k].lo < lo)
                    lo = t->v[k].lo;
                if (t->v[k].hi > hi)
                    hi = t->v[k].hi;
            }
        share[q] = hi > lo ? (double)(hi - lo) / (double)size : 0;
        (void)bytes;
    }
    return share[1] - share[0];
}

struct sort_ctx {
    const struct fld *f;
    const double *lean;
    int dir; /* 1: transmit-leaning first */
    bool align_first;
};
static struct sort_ctx sort_ctx; /* qsort has no context argument in C11 */

static int cmp_member(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const struct sort_ctx *c = &sort_ctx;
    unsigned ax = c->f[x].m->align, ay = c->f[y].m->align;
    if (c->align_first && ax != ay)
        return ax > ay ? -1 : 1;
    double lx = c->lean[x] * c->dir, ly = c->lean[y] * c->dir;
    if (lx != ly)
        return lx > ly ? -1 : 1;
    if (!c->align_first && ax != ay)
        return ax > ay ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* The proposed order: the first member stays first (the map entry's key,
 * and a pointer to the block is a pointer to it); then the groups, cold
 * last, demux (the rest of it), tx, rxtx and rx in the order that costs least, each
 * group's members by how much each path uses them (the group nearer the
 * transmit side starts with what transmit uses most) or by alignment, then
 * improved by swapping two members of a group while that lowers the cost. */
static uint64_t propose(const struct touches *t, struct fld *f, size_t nf, unsigned salign,
                        enum grp order_out[G_N], size_t *ord, struct cost *best_cost)
{
    double *ln = calloc(nf ? nf : 1, sizeof *ln);
    size_t *cand = calloc(nf ? nf : 1, sizeof *cand);
    if (!ln || !cand) {
        free(ln);
        free(cand);
        for (size_t i = 0; i < nf; i++)
            ord[i] = i;
        *best_cost = cost_of(t, f, nf, ord, salign, true);
        return best_cost->size;
    }
    for (size_t i = 0; i < nf; i++)
        ln[i] = lean(t, f, i);
    bool have = false;
    /* every order of the four hot groups (24), cold last */
    for (int k = 0; k < 24; k++) {
        for (int af = 0; af < 2; af++) {
            enum grp order[G_N], rest[4] = {G_DEMUX, G_TX, G_RXTX, G_RX};
            for (int g = 0, r = k; g < 4; g++) {
                int pick = r % (4 - g);
                r /= 4 - g;
                order[g] = rest[pick];
                memmove(&rest[pick], &rest[pick + 1], (size_t)(3 - g - pick) * sizeof rest[0]);
            }
            order[4] = G_COLD;
            int pos_tx = 0, pos_rx = 0;
            for (int g = 0; g < G_N; g++) {
                if (order[g] == G_TX)
                    pos_tx = g;
                if (order[g] == G_RX)
                    pos_rx = g;
            }
            sort_ctx = (struct sort_ctx){f, ln, pos_tx < pos_rx ? 1 : -1, af == 1};
            size_t n = 0, gs[G_N + 1];
            cand[n++] = 0;
            for (int g = 0; g < G_N; g++) {
                gs[g] = n;
                for (size_t i = 1; i < nf; i++)
                    if (f[i].grp == order[g])
                        cand[n++] = i;
                qsort(cand + gs[g], n - gs[g], sizeof *cand, cmp_member);
            }
            gs[G_N] = n;
            /* swaps inside each group while they help */
            struct cost c = cost_of(t, f, nf, cand, salign, true);
            for (int pass = 0; pass < 4; pass++) {
                bool better = false;
                for (int g = 0; g < G_N; g++)
                    for (size_t a = gs[g] > 0 ? gs[g] : 1; a < gs[g + 1]; a++)
                        for (size_t b = a + 1; b < gs[g + 1]; b++) {
                            size_t tmp = cand[a];
                            cand[a] = cand[b];
                            cand[b] = tmp;
                            struct cost d = cost_of(t, f, nf, cand, salign, true);
                            if (cost_cmp(&d, &c) < 0) {
                                c = d;
                                better = true;
                            } else {
                                cand[b] = cand[a];
                                cand[a] = tmp;
                            }
                        }
                if (!better)
                    break;
            }
            if (!have || cost_cmp(&c, best_cost) < 0) {
                have = true;
                *best_cost = c;
                memcpy(ord, cand, nf * sizeof *ord);
                memcpy(order_out, order, sizeof order);
            }
        }
    }
    free(ln);
    free(cand);
    return place(f, ord, nf, salign);
}

static int cmp_new_off(const void *a, const void *b)
{
    const struct fld *x = *(const struct fld *const *)a, *y = *(const struct fld *const *)b;
    return x->new_off < y->new_off ? -1 : x->new_off > y->new_off;
}

/* The code's lists against the profile, top-level member by member. */
static void list_diffs(const struct lt_struct *s, const struct fld *f, size_t nf,
                       struct lt_msgs *out)
{
    if (strcmp(s->name, "hp_tcp_sock") != 0)
        return;
    for (int p = LT_RX; p <= LT_TX; p++) {
        const char *const *names;
        size_t n = lt_path_fields(p, &names);
        char miss[1024] = "", extra[1024] = "";
        for (size_t i = 0; i < nf; i++) {
            bool in_list = false;
            for (size_t k = 0; k < n && !in_list; k++) {
                const struct lt_member *m = lt_member_find(s, names[k]);
                in_list = m && m->top == f[i].m->top;
            }
            size_t l;
            if (f[i].on[p] && !in_list) {
                l = strlen(miss);
                snprintf(miss + l, sizeof miss - l, " %s", f[i].m->name);
            } else if (!f[i].on[p] && in_list) {
                l = strlen(extra);
                snprintf(extra + l, sizeof extra - l, " %s", f[i].m->name);
            }
        }
        if (*miss)
            lt_msg_add(out, "on %s in the profile but not in its list (src/sock/tcp_layout.h):%s",
                       lt_path_name[p], miss);
        if (*extra)
            lt_msg_add(
                out,
                "in the %s list (src/sock/tcp_layout.h) but under the --hot rate in the profile:%s",
                lt_path_name[p], extra);
    }
}

/* x's access, as the sharing warnings want it. */
static void add_span(struct lt_access_map *acc, const struct fld *x)
{
    struct lt_access_span *v = realloc(acc->v, (acc->n + 1) * sizeof *v);
    if (!v)
        return;
    acc->v = v;
    v[acc->n] = (struct lt_access_span){.name = strdup(x->m->name),
                                        .off = x->m->off,
                                        .size = x->m->size,
                                        .top = x->m->top,
                                        .acc = {x->written[LT_RX] ? LT_WRITE
                                                : x->on[LT_RX]    ? LT_READ
                                                                  : LT_NONE,
                                                x->written[LT_TX] ? LT_WRITE
                                                : x->on[LT_TX]    ? LT_READ
                                                                  : LT_NONE}};
    if (v[acc->n].name)
        acc->n++;
}

/* The profile's top-level members (nf of them) with their counts, path
 * classes and proposed groups; the access of those on a path into acc.
 * NULL when out of memory. */
static struct fld *classify(const struct lt_profile *p, const struct lt_struct *s, double hot,
                            struct lt_access_map *acc, size_t *nfp)
{
    size_t nf = 0;
    struct fld *f = calloc(s->nm ? s->nm : 1, sizeof *f);
    if (!f)
        return NULL;
    for (size_t i = 0; i < s->nm; i++)
        if (s->m[i].depth == 0 && !s->m[i].marker && s->m[i].size)
            f[nf++].m = &s->m[i];
    for (size_t k = 0; k < p->n; k++) {
        const struct lt_prof_rec *r = &p->r[k];
        for (size_t i = 0; i < nf; i++) {
            const struct lt_member *m = f[i].m;
            if (r->off < m->off + m->size && r->off + r->size > m->off) {
                f[i].reads[r->path] += r->reads;
                f[i].writes[r->path] += r->writes;
            }
        }
    }
    for (size_t i = 0; i < nf; i++) {
        struct fld *x = &f[i];
        bool touched = false;
        for (int q = LT_RX; q <= LT_TX; q++) {
            x->on[q] = rate(x->reads[q] + x->writes[q], p->entries[q]) >= hot;
            x->written[q] = x->on[q] && rate(x->writes[q], p->entries[q]) >= hot;
            touched = touched || x->reads[q] || x->writes[q];
        }
        x->rw = x->written[LT_RX] || x->written[LT_TX];
        x->cls = x->on[LT_RX] && x->on[LT_TX] ? C_BOTH
                 : x->on[LT_RX]               ? C_RX
                 : x->on[LT_TX]               ? C_TX
                 : touched                    ? C_RARE
                                              : C_COLD;
        x->grp = x->cls == C_BOTH ? (x->rw ? G_RXTX : G_DEMUX)
                 : x->cls == C_RX ? G_RX
                 : x->cls == C_TX ? G_TX
                                  : G_COLD;
        if (acc && (x->on[LT_RX] || x->on[LT_TX]))
            add_span(acc, x);
    }
    if (acc && !acc->source)
        acc->source = strdup(p->file);
    *nfp = nf;
    return f;
}

/* What the report shows: the lines each path touches now and with the
 * proposed order, which it is, and the fields by their proposed offset. */
struct proposal {
    struct lt_lines before[2], after[2];
    enum grp order[G_N];
    uint64_t new_size;
    bool improves;
    struct fld **sorted;
    struct lt_msgs diffs;
};

static int propose_order(const struct lt_profile *p, const struct lt_struct *s, struct fld *f,
                         size_t nf, struct proposal *pr)
{
    struct touches tch;
    size_t *ord = calloc(nf ? nf : 1, sizeof *ord);
    pr->sorted = calloc(nf ? nf : 1, sizeof *pr->sorted);
    if (!ord || !pr->sorted) {
        free(ord);
        return -ENOMEM;
    }
    if (touches_build(p, f, nf, &tch) < 0) {
        touches_free(&tch);
        free(ord);
        return -ENOMEM;
    }
    struct cost now = cost_of(&tch, f, nf, NULL, s->align, false), best = {0};
    lines_with(&tch, f, nf, false, pr->before, NULL);
    pr->new_size = propose(&tch, f, nf, s->align, pr->order, ord, &best);
    lines_with(&tch, f, nf, true, pr->after, NULL);
    pr->improves = cost_cmp(&best, &now) < 0 && (best.sum < now.sum || best.max < now.max);
    free(ord);
    touches_free(&tch);
    for (size_t i = 0; i < nf; i++)
        pr->sorted[i] = &f[i];
    qsort(pr->sorted, nf, sizeof *pr->sorted, cmp_new_off);
    list_diffs(s, f, nf, &pr->diffs);
    return 0;
}

static json_t *profile_json(const struct lt_profile *p, const struct lt_struct *s, double hot,
                            const struct fld *f, size_t nf, const struct proposal *pr)
{
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:f}", "file", p->file, "binary",
                  p->binary ? p->binary : "", "struct", s->name, "size", (json_int_t)s->size,
                  "blocks", (json_int_t)p->blocks, "lost", (json_int_t)p->lost, "hot", hot);
    json_t *entries = json_object(), *members = json_array(), *order = json_array(),
           *lines = json_object();
    for (int q = 0; q < LT_NPATHS; q++)
        json_object_set_new(entries, lt_path_name[q], json_integer((json_int_t)p->entries[q]));
    for (size_t i = 0; i < nf; i++) {
        json_t *m = json_pack("{s:s, s:I, s:I}", "name", f[i].m->name, "off",
                              (json_int_t)f[i].m->off, "size", (json_int_t)f[i].m->size);
        for (int q = 0; q < LT_NPATHS; q++)
            json_object_set_new(m, lt_path_name[q],
                                json_pack("{s:I, s:I}", "reads", (json_int_t)f[i].reads[q],
                                          "writes", (json_int_t)f[i].writes[q]));
        json_object_set_new(m, "class", json_string(cls_name[f[i].cls]));
        json_object_set_new(m, "access", json_string(f[i].rw ? "read-write" : "read-mostly"));
        json_object_set_new(m, "proposed_group", json_string(grp_name[f[i].grp]));
        json_object_set_new(m, "proposed_off", json_integer((json_int_t)f[i].new_off));
        json_array_append_new(members, m);
        json_array_append_new(order, json_string(pr->sorted[i]->m->name));
    }
    for (int q = LT_RX; q <= LT_TX; q++)
        json_object_set_new(
            lines, lt_path_name[q],
            json_pack("{s:i, s:i, s:o, s:o}", "before", (int)lt_lines_count(&pr->before[q]),
                      "after", (int)lt_lines_count(&pr->after[q]), "before_lines",
                      lt_lines_json(&pr->before[q]), "after_lines", lt_lines_json(&pr->after[q])));
    json_object_set_new(j, "entries", entries);
    json_object_set_new(j, "members", members);
    json_object_set_new(j, "proposed_order", order);
    json_object_set_new(j, "proposed_size", json_integer((json_int_t)pr->new_size));
    json_object_set_new(j, "improves", json_boolean(pr->improves));
    json_object_set_new(j, "lines", lines);
    json_object_set_new(j, "list_differences", lt_json_msgs(&pr->diffs));
    return j;
}

static void profile_members_text(FILE *out, const struct lt_profile *p, const struct fld *f,
                                 size_t nf)
{
    int nw = 6;
    for (size_t i = 0; i < nf; i++)
        if ((int)strlen(f[i].m->name) > nw)
            nw = (int)strlen(f[i].m->name);
    fprintf(out, "  %-*s %5s %5s  %8s %8s  %8s %8s  %10s  %-8s %-11s %s\n", nw, "member", "off",
            "size", "RX r/e", "RX w/e", "TX r/e", "TX w/e", "other r+w", "class", "access",
            "proposed");
    for (size_t i = 0; i < nf; i++) {
        const struct fld *x = &f[i];
        fprintf(out, "  %-*s %5llu %5llu  %8.3f %8.3f  %8.3f %8.3f  %10llu  %-8s %-11s %s @%llu\n",
                nw, x->m->name, (unsigned long long)x->m->off, (unsigned long long)x->m->size,
                rate(x->reads[LT_RX], p->entries[LT_RX]), rate(x->writes[LT_RX], p->entries[LT_RX]),
                rate(x->reads[LT_TX], p->entries[LT_TX]), rate(x->writes[LT_TX], p->entries[LT_TX]),
                (unsigned long long)(x->reads[LT_OTHER] + x->writes[LT_OTHER]), cls_name[x->cls],
                x->cls == C_RARE || x->cls == C_COLD ? "-"
                : x->rw                              ? "read-write"
                                                     : "read-mostly",
                grp_name[x->grp], (unsigned long long)x->new_off);
    }
}

static void profile_order_text(FILE *out, const struct fld *f, size_t nf, const struct proposal *pr)
{
    fprintf(
        out,
        "\n  proposed order (%llu bytes, %llu lines): %s first, then groups %s, %s, %s, %s, cold\n",
        (unsigned long long)pr->new_size,
        (unsigned long long)((pr->new_size + LT_LINE - 1) / LT_LINE), f[0].m->name,
        grp_name[pr->order[0]], grp_name[pr->order[1]], grp_name[pr->order[2]],
        grp_name[pr->order[3]]);
    for (int g = -1; g < G_N; g++) {
        uint64_t lo = UINT64_MAX, hi = 0;
        char names[2048] = "";
        for (size_t i = 0; i < nf; i++) {
            const struct fld *x = pr->sorted[i];
            if (g < 0 ? x != &f[0] : x == &f[0] || x->grp != pr->order[g])
                continue;
            if (x->new_off < lo)
                lo = x->new_off;
            if (x->new_off + x->m->size > hi)
                hi = x->new_off + x->m->size;
            size_t l = strlen(names);
            snprintf(names + l, sizeof names - l, "%s%s", l ? " " : "", x->m->name);
        }
        if (!*names)
            continue;
        char lines[48];
        fprintf(out, "    %-6s %4llu-%-4llu lines %-6s %s\n",
                g < 0 ? "first" : grp_name[pr->order[g]], (unsigned long long)lo,
                (unsigned long long)(hi - 1), lt_range_fmt(lo, hi - lo, lines, sizeof lines),
                names);
    }
}

static void profile_text(FILE *out, const struct lt_profile *p, const struct lt_struct *s,
                         double hot, const struct fld *f, size_t nf, const struct proposal *pr)
{
    fprintf(out, "field profile %s\n  binary %s, struct %s (%llu bytes), %llu blocks", p->file,
            p->binary ? p->binary : "?", s->name, (unsigned long long)s->size,
            (unsigned long long)p->blocks);
    fprintf(out, "; path entries: RX %llu, TX %llu (other accesses: timers, setup)\n",
            (unsigned long long)p->entries[LT_RX], (unsigned long long)p->entries[LT_TX]);
    fprintf(out,
            "  per path entry; a field is on a path at %.2f accesses per entry or more, written at "
            "%.2f "
            "writes per entry\n\n",
            hot, hot);
    profile_members_text(out, p, f, nf);
    profile_order_text(out, f, nf, pr);
    fprintf(out, "\n  lines touched   %-24s %s\n", "now", "proposed");
    for (int q = LT_RX; q <= LT_TX; q++) {
        char a[128], b[128], c1[160], c2[160];
        snprintf(c1, sizeof c1, "%u: %s", lt_lines_count(&pr->before[q]),
                 lt_lines_fmt(&pr->before[q], a, sizeof a));
        snprintf(c2, sizeof c2, "%u: %s", lt_lines_count(&pr->after[q]),
                 lt_lines_fmt(&pr->after[q], b, sizeof b));
        fprintf(out, "  %-15s %-24s %s\n", lt_path_name[q], c1, c2);
    }
    if (!pr->improves)
        fprintf(out, "  the current order touches no more lines than the proposal: keep it\n");
    for (size_t i = 0; i < pr->diffs.n; i++)
        fprintf(out, "  note: %s\n", pr->diffs.v[i]);
    fprintf(out, "\n");
}

json_t *lt_profile_report(FILE *out, bool json, const struct lt_profile *p,
                          const struct lt_struct *s, double hot, struct lt_access_map *acc,
                          struct lt_msgs *warn)
{
    size_t nf = 0;
    struct fld *f = classify(p, s, hot, acc, &nf);
    struct proposal pr;
    memset(&pr, 0, sizeof pr);
    json_t *j = NULL;
    if (f && propose_order(p, s, f, nf, &pr) == 0) {
        if (p->lost)
            lt_msg_add(
                warn,
                "the profile lost %llu blocks (the runtime's table was full): counts are partial",
                (unsigned long long)p->lost);
        if (!p->entries[LT_RX] || !p->entries[LT_TX])
            lt_msg_add(warn,
                       "the profile has no %s path entries: was the workload TCP (rr --proto tcp)?",
                       !p->entries[LT_RX] ? "RX" : "TX");
        if (json)
            j = profile_json(p, s, hot, f, nf, &pr);
        else
            profile_text(out, p, s, hot, f, nf, &pr);
    }
    lt_msgs_free(&pr.diffs);
    free(pr.sorted);
    free(f);
    return j;
}
