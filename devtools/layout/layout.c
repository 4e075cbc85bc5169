/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath layout: size, holes, cache-line groups and the lines each fast path touches of the hot structures, from a binary's DWARF. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "sock/tcp_layout.h"
#include "tool.h"

#ifndef HP_SOURCE_DIR
#define HP_SOURCE_DIR "."
#endif

/*
 * Which layout a binary has: struct hp_tcp_sock with hp__group_begin_*
 * members is the grouped order; without them it was built with
 * -DHP_LAYOUT_CHRONO=1 (the field order is the only thing that option
 * changes, so the DWARF says it without running the binary).
 */

#define MAX_BINS    8
#define MAX_STRUCTS 32
#define DEFAULT_HOT 0.05

/* The fields each TCP fast path touches, compiled in from src/sock/tcp_layout.h
 * as strings and resolved against each binary's DWARF. */
#define LT_NAME(m) #m,
static const char *const rx_fields[] = {HP__TCP_RX_FIELDS(LT_NAME)};
static const char *const tx_fields[] = {HP__TCP_TX_FIELDS(LT_NAME)};
#define N(a) (sizeof(a) / sizeof((a)[0]))

const char *const lt_path_name[LT_NPATHS] = {"RX", "TX", "other"};

size_t lt_path_fields(int path, const char *const **names)
{
    *names = path == LT_RX ? rx_fields : tx_fields;
    return path == LT_RX ? N(rx_fields) : N(tx_fields);
}

/* ---- line sets ---- */

void lt_lines_add(struct lt_lines *l, uint64_t off, uint64_t size)
{
    if (size == 0)
        return;
    for (uint64_t i = off / LT_LINE; i <= (off + size - 1) / LT_LINE && i < LT_MAX_LINES; i++)
        l->w[i / 64] |= 1ull << (i % 64);
}

bool lt_lines_has(const struct lt_lines *l, unsigned line)
{
    return line < LT_MAX_LINES && (l->w[line / 64] >> (line % 64)) & 1;
}

unsigned lt_lines_count(const struct lt_lines *l)
{
    unsigned n = 0;
    for (size_t i = 0; i < N(l->w); i++)
        n += (unsigned)__builtin_popcountll(l->w[i]);
    return n;
}

const char *lt_lines_fmt(const struct lt_lines *l, char *buf, size_t n)
{
    buf[0] = 0;
    size_t len = 0;
    for (unsigned i = 0; i < LT_MAX_LINES; i++) {
        if (!lt_lines_has(l, i))
            continue;
        unsigned j = i;
        while (j + 1 < LT_MAX_LINES && lt_lines_has(l, j + 1))
            j++;
        int w = j == i ? snprintf(buf + len, n - len, "%s%u", len ? ", " : "", i)
                       : snprintf(buf + len, n - len, "%s%u-%u", len ? ", " : "", i, j);
        if (w < 0 || (size_t)w >= n - len)
            break;
        len += (size_t)w;
        i = j;
    }
    if (!len)
        snprintf(buf, n, "-");
    return buf;
}

json_t *lt_lines_json(const struct lt_lines *l)
{
    json_t *a = json_array();
    for (unsigned i = 0; i < LT_MAX_LINES; i++)
        if (lt_lines_has(l, i))
            json_array_append_new(a, json_integer(i));
    return a;
}

const char *lt_range_fmt(uint64_t off, uint64_t size, char *buf, size_t n)
{
    if (size == 0)
        snprintf(buf, n, "-");
    else if (off / LT_LINE == (off + size - 1) / LT_LINE)
        snprintf(buf, n, "%llu", (unsigned long long)(off / LT_LINE));
    else
        snprintf(buf, n, "%llu-%llu", (unsigned long long)(off / LT_LINE),
                 (unsigned long long)((off + size - 1) / LT_LINE));
    return buf;
}

/* ---- messages ---- */

void lt_msg_add(struct lt_msgs *m, const char *fmt, ...)
{
    if (tool_grow(&m->v, &m->cap, m->n, sizeof *m->v, 16) < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&m->v[m->n], fmt, ap) >= 0) {
        /* the same message twice (two binaries alike) says nothing new */
        bool dup = false;
        for (size_t i = 0; i < m->n && !dup; i++)
            dup = strcmp(m->v[i], m->v[m->n]) == 0;
        if (dup)
            free(m->v[m->n]);
        else
            m->n++;
    }
    va_end(ap);
}

void lt_msgs_free(struct lt_msgs *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i]);
    free(m->v);
    memset(m, 0, sizeof *m);
}

json_t *lt_json_msgs(const struct lt_msgs *m)
{
    json_t *a = json_array();
    for (size_t i = 0; i < m->n; i++)
        json_array_append_new(a, json_string(m->v[i]));
    return a;
}

/* ---- false sharing between paths ---- */

/* Append the name of span v (its top-level member when it is part of one
 * already listed) to a ", " list. */
static void list_add(char *buf, size_t n, const struct lt_struct *s, const struct lt_access_span *v)
{
    const char *name = v->name;
    if (strchr(name, '.') && v->top >= 0 && (size_t)v->top < s->nm)
        name = s->m[v->top].name;
    size_t nl = strlen(name);
    for (const char *p = buf; (p = strstr(p, name)) != NULL; p += nl)
        if ((p == buf || p[-1] == ' ') && (p[nl] == ',' || p[nl] == 0))
            return;
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", l ? ", " : "", name);
}

void lt_false_sharing(const struct lt_struct *s, const char *where, const struct lt_access_map *a,
                      struct lt_msgs *out)
{
    unsigned nlines = (unsigned)((s->size + LT_LINE - 1) / LT_LINE);
    for (unsigned line = 0; line < nlines && line < LT_MAX_LINES; line++) {
        uint64_t lo = (uint64_t)line * LT_LINE, hi = lo + LT_LINE;
        for (int pa = LT_RX; pa <= LT_TX; pa++) {
            int pb = pa == LT_RX ? LT_TX : LT_RX;
            char wr[1024] = "", rd[1024] = "";
            for (size_t i = 0; i < a->n; i++) {
                const struct lt_access_span *v = &a->v[i];
                if (v->size == 0 || v->off >= hi || v->off + v->size <= lo)
                    continue;
                if (v->acc[pa] == LT_WRITE)
                    list_add(wr, sizeof wr, s, v);
                else if (v->acc[pb] == LT_READ) /* and no path writes it: read-mostly */
                    list_add(rd, sizeof rd, s, v);
            }
            if (*wr && *rd)
                lt_msg_add(
                    out,
                    "struct %s (%s) line %u: %s writes %s beside read-mostly fields %s reads: %s",
                    s->name, where, line, lt_path_name[pa], wr, lt_path_name[pb], rd);
        }
    }
}

/* ---- the command ---- */

struct opts {
    const char *bins[MAX_BINS];
    int nbins;
    const char *structs[MAX_STRUCTS];
    int nstructs;
    const char *profile;
    const char *docs;
    bool check_docs, json;
    double hot;
};

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: hotpath layout [--binary PATH]... [--struct NAME]... [--profile FILE] "
        "[--check-docs]\n"
        "                      [--docs DIR] [--hot RATE] [--json]\n"
        "\n"
        "Reads the DWARF of hotpath binaries (libdw) and prints, for each hot structure, its "
        "size,\n"
        "alignment, cache lines, holes, cache-line groups (hp__group_begin_* / _end_* members) "
        "and,\n"
        "for struct hp_tcp_sock, the lines the RX and TX field lists of src/sock/tcp_layout.h "
        "touch\n"
        "(for the others, the RX and TX columns of their docs/cachelines table), one column per "
        "binary.\n"
        "It warns where a field one path writes shares a line with fields only the other path "
        "reads.\n"
        "\n"
        "  --binary PATH   a binary to read (repeatable). Default: the hotpath that ran this tool\n"
        "                  (or the one beside hotpath-layout) and, when it\n"
        "                  exists, the other layout's build in the source tree "
        "(build-chrono/hotpath,\n"
        "                  or build/hotpath when this one is chrono). A binary's layout is "
        "'grouped'\n"
        "                  when its struct hp_tcp_sock has group markers, else 'chrono'.\n"
        "  --struct NAME   only this structure (repeatable). Default: hp_tcp_sock, hp_buf, "
        "hp__cache\n"
        "                  and every structure with cache-line groups.\n"
        "  --check-docs    check the tables of docs/cachelines/*.md against the DWARF: every "
        "field\n"
        "                  exists, in the group the table says, with its type, offset and size; "
        "every\n"
        "                  member is in a table; group and lines tables agree. Exit 1 on a "
        "mismatch.\n"
        "  --docs DIR      the tables to check (default " HP_SOURCE_DIR "/docs/cachelines)\n"
        "  --profile FILE  a field profile from an instrumented build (make profile; run it with\n"
        "                  HP_FIELD_PROFILE=FILE): reads and writes per field and path, a class "
        "per\n"
        "                  field, a proposed order and the lines each path touches before and "
        "after.\n"
        "  --hot RATE      accesses per path entry below which a field is not on the path\n"
        "                  (default %.2f)\n"
        "  --json          one JSON object instead of tables\n"
        "\n"
        "Exit: 0, 1 when --check-docs finds a mismatch or a --struct is in no binary, 2 on usage\n"
        "errors, unreadable binaries or profiles, and when built without libdw.\n",
        DEFAULT_HOT);
}

static int parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->docs = HP_SOURCE_DIR "/docs/cachelines";
    o->hot = DEFAULT_HOT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--check-docs") == 0) {
            o->check_docs = true;
        } else if (strcmp(a, "--binary") == 0 || strcmp(a, "--struct") == 0 ||
                   strcmp(a, "--profile") == 0 || strcmp(a, "--docs") == 0 ||
                   strcmp(a, "--hot") == 0) {
            if (!v || !*v)
                return -tool_usage_error("layout", "%s needs a value", a);
            i++;
            if (strcmp(a, "--binary") == 0) {
                if (o->nbins == MAX_BINS)
                    return -tool_usage_error("layout", "at most %d --binary", MAX_BINS);
                o->bins[o->nbins++] = v;
            } else if (strcmp(a, "--struct") == 0) {
                if (o->nstructs == MAX_STRUCTS)
                    return -tool_usage_error("layout", "at most %d --struct", MAX_STRUCTS);
                o->structs[o->nstructs++] = strncmp(v, "struct ", 7) == 0 ? v + 7 : v;
            } else if (strcmp(a, "--profile") == 0) {
                o->profile = v;
            } else if (strcmp(a, "--docs") == 0) {
                o->docs = v;
            } else {
                char *e;
                errno = 0;
                o->hot = strtod(v, &e);
                if (errno || *e || !(o->hot > 0) || o->hot > 1000)
                    return -tool_usage_error("layout", "--hot wants a rate above 0, not '%s'", v);
            }
        } else if (a[0] == '-') {
            return -tool_usage_error("layout", "unknown option '%s'", a);
        } else {
            return -tool_usage_error("layout", "unexpected argument '%s'", a);
        }
    }
    return 0;
}

/* A path as shown: relative to the source tree when inside it. */
static char *shown_path(const char *path)
{
    char real[PATH_MAX], src[PATH_MAX];
    if (!realpath(path, real))
        return strdup(path);
    if (realpath(HP_SOURCE_DIR, src)) {
        size_t n = strlen(src);
        if (strncmp(real, src, n) == 0 && real[n] == '/')
            return strdup(real + n + 1);
    }
    return strdup(real);
}

static bool same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

static int open_one(struct lt_binary *b, const char *path, bool quiet)
{
    char err[512];
    int rc = lt_binary_open(b, path, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "hotpath layout: %s%s\n", quiet ? "note: skipping: " : "", err);
        return rc;
    }
    b->shown = shown_path(path);
    const struct lt_struct *s = lt_struct_get(b, "hp_tcp_sock");
    b->layout = strdup(!s ? "-" : s->ng ? "grouped" : "chrono");
    if (!b->shown || !b->layout)
        return -ENOMEM;
    return 0;
}

/* The hotpath binary to read by default: the one that ran us (`hotpath
 * layout` sets HOTPATH_BINARY), else the hotpath beside this executable. */
static void default_binary(char *self, size_t len)
{
    const char *env = getenv("HOTPATH_BINARY");
    if (env && *env) {
        snprintf(self, len, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    snprintf(self, len, "%.*s/hotpath", slash ? (int)(slash - exe) : 1, slash ? exe : ".");
}

/* The hotpath binary, and the other layout's build beside it when there is one. */
static int open_default(struct lt_binary *bins, int *nbins)
{
    char self[PATH_MAX];
    default_binary(self, sizeof self);
    int rc = open_one(&bins[0], self, false);
    if (rc < 0)
        return rc;
    *nbins = 1;
    bool chrono = strcmp(bins[0].layout, "chrono") == 0;
    const char *other = chrono ? "build/hotpath" : "build-chrono/hotpath";
    char cand[2][PATH_MAX + 64];
    snprintf(cand[0], sizeof cand[0], "%s/%s", HP_SOURCE_DIR, other);
    char *slash = strrchr(self, '/');
    snprintf(cand[1], sizeof cand[1], "%.*s/../%s", slash ? (int)(slash - self) : 1,
             slash ? self : ".", other);
    for (int i = 0; i < 2; i++) {
        if (access(cand[i], R_OK) != 0 || same_file(cand[i], self) ||
            (*nbins > 1 && same_file(cand[i], bins[1].path)))
            continue;
        if (open_one(&bins[*nbins], cand[i], true) == 0)
            (*nbins)++;
        else
            lt_binary_close(&bins[*nbins]);
    }
    return 0;
}

/* The access a structure's fields have on RX and TX: the profile's for
 * its structure, else the docs table's. */
static int access_for(const struct opts *o, const struct lt_struct *s,
                      const struct lt_access_map *prof, const char *prof_struct,
                      struct lt_access_map *out)
{
    memset(out, 0, sizeof *out);
    if (prof && prof->n && prof_struct && strcmp(prof_struct, s->name) == 0) {
        /* Re-resolve the profile's member names in this binary's layout. */
        out->source = strdup(prof->source);
        out->v = calloc(prof->n, sizeof *out->v);
        if (!out->v || !out->source)
            return -ENOMEM;
        for (size_t i = 0; i < prof->n; i++) {
            const struct lt_member *m = lt_member_find(s, prof->v[i].name);
            if (!m)
                continue;
            struct lt_access_span *v = &out->v[out->n++];
            *v = prof->v[i];
            v->name = strdup(m->name);
            v->off = m->off;
            v->size = m->size;
            v->top = m->top;
        }
        return 0;
    }
    return lt_docs_access(o->docs, s, out);
}

/* Lines a path touches in s: the code's lists for hp_tcp_sock, else the docs access. */
static bool path_lines(const struct lt_struct *s, const struct lt_access_map *acc, int path,
                       struct lt_lines *l, const char **source, struct lt_msgs *warn,
                       const char *bshown)
{
    memset(l, 0, sizeof *l);
    if (strcmp(s->name, "hp_tcp_sock") == 0) {
        const char *const *names;
        size_t n = lt_path_fields(path, &names);
        for (size_t i = 0; i < n; i++) {
            const struct lt_member *m = lt_member_find(s, names[i]);
            if (!m) {
                lt_msg_add(
                    warn,
                    "%s field '%s' of src/sock/tcp_layout.h is not in struct hp_tcp_sock of %s",
                    lt_path_name[path], names[i], bshown);
                continue;
            }
            lt_lines_add(l, m->off, m->size);
        }
        *source = "src/sock/tcp_layout.h";
        return true;
    }
    if (!acc || !acc->n)
        return false;
    for (size_t i = 0; i < acc->n; i++)
        if (acc->v[i].acc[path] != LT_NONE)
            lt_lines_add(l, acc->v[i].off, acc->v[i].size);
    *source = acc->source;
    return true;
}

struct view { /* one structure in one binary */
    struct lt_binary *b;
    const struct lt_struct *s;
    struct lt_access_map acc;
    bool has_paths;
    struct lt_lines lines[2];
    const char *path_src;
    uint64_t holes, hole_bytes, tail;
    int same_as; /* index of an earlier view with the same layout, or -1 */
};

/* Count v's holes and its tail padding; each hole also as text on f
 * ("none" when there is none), or into the JSON array arr. */
static void holes_of(struct view *v, FILE *f, json_t *arr)
{
    const struct lt_struct *s = v->s;
    uint64_t end = 0;
    v->holes = v->hole_bytes = 0;
    for (size_t i = 0; i < s->nm; i++) {
        const struct lt_member *m = &s->m[i];
        if (m->depth || m->marker)
            continue;
        if (m->off > end) {
            if (arr)
                json_array_append_new(arr, json_pack("{s:I, s:I}", "off", (json_int_t)end, "size",
                                                     (json_int_t)(m->off - end)));
            if (f)
                fprintf(f, "%s%llu+%llu (before %s)", v->holes ? ", " : "", (unsigned long long)end,
                        (unsigned long long)(m->off - end), m->name);
            v->holes++;
            v->hole_bytes += m->off - end;
        }
        if (m->off + m->size > end)
            end = m->off + m->size;
    }
    v->tail = s->size > end ? s->size - end : 0;
    if (f && !v->holes)
        fprintf(f, "none");
}

/* The strongest access any table row or profile entry of top-level member
 * `top` has on each path: "w", "r", "-" (or "" without access data). */
static void access_of_top(const struct view *v, size_t top, char out[2][3])
{
    for (int p = 0; p < 2; p++) {
        enum lt_access a = LT_NONE;
        for (size_t i = 0; i < v->acc.n; i++)
            if ((size_t)v->acc.v[i].top == top && v->acc.v[i].acc[p] > a)
                a = v->acc.v[i].acc[p];
        snprintf(out[p], 3, "%s", a == LT_WRITE ? "w" : a == LT_READ ? "r" : v->acc.n ? "-" : "");
    }
}

/* Same members at the same offsets: the second column would repeat the first. */
static bool same_layout(const struct lt_struct *a, const struct lt_struct *b)
{
    if (a->size != b->size || a->nm != b->nm || a->ng != b->ng)
        return false;
    for (size_t i = 0; i < a->nm; i++)
        if (a->m[i].off != b->m[i].off || a->m[i].size != b->m[i].size ||
            strcmp(a->m[i].name, b->m[i].name) != 0)
            return false;
    return true;
}

static void print_groups_holes(struct view *v)
{
    const struct lt_struct *s = v->s;
    printf("\n  %s: holes ", v->b->shown);
    holes_of(v, stdout, NULL);
    if (v->tail)
        printf("; tail padding %llu", (unsigned long long)v->tail);
    printf("\n");
    if (!s->ng)
        return;
    printf("    %-12s %-16s %-7s %s\n", "group", "bytes", "lines", "members");
    for (size_t g = 0; g < s->ng; g++) {
        char bytes[64], lines[48];
        const struct lt_group *gr = &s->g[g];
        snprintf(bytes, sizeof bytes, "%llu-%llu (%llu)", (unsigned long long)gr->begin,
                 (unsigned long long)(gr->end ? gr->end - 1 : 0),
                 (unsigned long long)(gr->end - gr->begin));
        printf("    %-12s %-16s %-7s ", gr->name, bytes,
               lt_range_fmt(gr->begin, gr->end - gr->begin, lines, sizeof lines));
        bool first = true;
        for (size_t m = 0; m < s->nm; m++)
            if (s->m[m].depth == 0 && s->m[m].group == (int)g) {
                printf("%s%s", first ? "" : " ", s->m[m].name);
                first = false;
            }
        printf("\n");
    }
}

/* The column width, and whether any binary has path lines. */
static int text_width(struct view *vs, int nv, char head[][300], bool *paths)
{
    int w = 24;
    *paths = false;
    for (int i = 0; i < nv; i++) {
        snprintf(head[i], 300, "%s (%s)", vs[i].b->shown, vs[i].b->layout);
        if ((int)strlen(head[i]) + 2 > w)
            w = (int)strlen(head[i]) + 2;
        *paths = *paths || (vs[i].s && vs[i].has_paths);
    }
    return w;
}

/* A row of the summary: one cell per binary. */
static void text_row(const char *label, struct view *vs, int nv, int w, int what)
{
    printf("  %-14s", label);
    for (int i = 0; i < nv; i++) {
        char cell[256] = "(not in this binary)", lines[200];
        const struct lt_struct *s = vs[i].s;
        if (what >= 5)
            snprintf(cell, sizeof cell, "-");
        if (s && what == 0)
            snprintf(cell, sizeof cell, "%llu bytes, %llu lines", (unsigned long long)s->size,
                     (unsigned long long)((s->size + LT_LINE - 1) / LT_LINE));
        else if (s && what == 1)
            snprintf(cell, sizeof cell, "%u", s->align);
        else if (s && what == 2)
            snprintf(cell, sizeof cell, "%llu (%llu bytes)", (unsigned long long)vs[i].holes,
                     (unsigned long long)vs[i].hole_bytes);
        else if (s && what == 3)
            snprintf(cell, sizeof cell, "%llu bytes", (unsigned long long)vs[i].tail);
        else if (s && what == 4)
            snprintf(cell, sizeof cell, "%zu", s->ng);
        else if (s && vs[i].has_paths) /* 5: RX lines, 6: TX lines */
            snprintf(cell, sizeof cell, "%u: %s", lt_lines_count(&vs[i].lines[what - 5]),
                     lt_lines_fmt(&vs[i].lines[what - 5], lines, sizeof lines));
        printf("%-*s", w, cell);
    }
    printf("\n");
}

static void text_summary(const char *name, struct view *vs, int nv)
{
    char head[MAX_BINS][300];
    bool paths;
    int w = text_width(vs, nv, head, &paths);
    printf("  %-14s", "");
    for (int i = 0; i < nv; i++)
        printf("%-*s", w, head[i]);
    printf("\n");
    static const char *const labels[] = {"size",   "alignment", "holes",   "tail padding",
                                         "groups", "RX lines",  "TX lines"};
    for (int r = 0; r < (paths ? 7 : 5); r++)
        text_row(labels[r], vs, nv, w, r);
    for (int i = 0; i < nv; i++)
        if (vs[i].s && vs[i].has_paths) {
            printf("  (path lines: the fields %s lists%s)\n", vs[i].path_src,
                   strcmp(name, "hp_tcp_sock") == 0
                       ? ""
                       : ", whole fields but for array elements named by number: an upper bound");
            break;
        }
}

/* The members, in the order of binary ref, with their offset, line and
 * group in each distinct layout. */
static void text_members(struct view *vs, int nv, int ref)
{
    const struct lt_struct *rs = vs[ref].s;
    int nw = 6, tw = 4;
    for (size_t m = 0; m < rs->nm; m++) {
        if (rs->m[m].depth || rs->m[m].marker)
            continue;
        nw = (int)strlen(rs->m[m].name) > nw ? (int)strlen(rs->m[m].name) : nw;
        tw = (int)strlen(rs->m[m].type) > tw ? (int)strlen(rs->m[m].type) : tw;
    }
    tw = tw > 30 ? 30 : tw;
    bool acc = vs[ref].acc.n > 0;
    printf("\n  %-*s %-*s %5s%s", nw, "member", tw, "type", "size", acc ? " RX TX" : "");
    for (int i = 0; i < nv; i++)
        if (vs[i].s && vs[i].same_as < 0)
            printf("  %-24.24s", vs[i].b->shown);
    printf("\n  %-*s %-*s %5s%s", nw, "", tw, "", "", acc ? "      " : "");
    for (int i = 0; i < nv; i++)
        if (vs[i].s && vs[i].same_as < 0)
            printf("  %5s %-6s %-11s", "off", "line", "group");
    printf("\n");
    for (size_t m = 0; m < rs->nm; m++) {
        const struct lt_member *rm = &rs->m[m];
        if (rm->depth || rm->marker)
            continue;
        printf("  %-*s %-*.*s %5llu", nw, rm->name, tw, tw, rm->type, (unsigned long long)rm->size);
        if (acc) {
            char a[2][3];
            access_of_top(&vs[ref], m, a);
            printf(" %2s %2s", a[0], a[1]);
        }
        for (int i = 0; i < nv; i++) {
            if (!vs[i].s || vs[i].same_as >= 0)
                continue;
            const struct lt_member *x = lt_member_find(vs[i].s, rm->name);
            char lines[48];
            if (!x)
                printf("  %5s %-6s %-11s", "-", "-", "");
            else
                printf("  %5llu %-6s %-11s", (unsigned long long)x->off,
                       lt_range_fmt(x->off, x->size ? x->size : 1, lines, sizeof lines),
                       x->group >= 0 ? vs[i].s->g[x->group].name : "");
        }
        printf("\n");
    }
    if (acc)
        printf("  (RX / TX: r read, w written, - not touched, from %s)\n", vs[ref].acc.source);
}

static void print_struct_text(const char *name, struct view *vs, int nv)
{
    printf("struct %s\n", name);
    text_summary(name, vs, nv);
    /* groups and holes, once per distinct layout */
    for (int i = 0; i < nv; i++) {
        if (!vs[i].s)
            continue;
        if (vs[i].same_as >= 0)
            printf("\n  %s: the same layout as %s\n", vs[i].b->shown, vs[vs[i].same_as].b->shown);
        else
            print_groups_holes(&vs[i]);
    }
    /* members, in the order of the first binary that has the structure */
    int ref = -1;
    for (int i = 0; i < nv && ref < 0; i++)
        if (vs[i].s)
            ref = i;
    text_members(vs, nv, ref);
    printf("\n");
}

static json_t *groups_json(const struct lt_struct *s)
{
    json_t *a = json_array();
    for (size_t g = 0; g < s->ng; g++) {
        const struct lt_group *gr = &s->g[g];
        uint64_t size = gr->end - gr->begin;
        json_t *members = json_array();
        for (size_t m = 0; m < s->nm; m++)
            if (s->m[m].depth == 0 && s->m[m].group == (int)g)
                json_array_append_new(members, json_string(s->m[m].name));
        json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:I, s:I, s:o}", "name", gr->name,
                                           "begin", (json_int_t)gr->begin, "end",
                                           (json_int_t)gr->end, "first_line",
                                           (json_int_t)(gr->begin / LT_LINE), "last_line",
                                           (json_int_t)((size ? gr->end - 1 : gr->begin) / LT_LINE),
                                           "members", members));
    }
    return a;
}

static json_t *layout_json(struct view *v)
{
    const struct lt_struct *s = v->s;
    json_t *holes = json_array(), *members = json_array(), *paths = json_object();
    holes_of(v, NULL, holes);
    json_t *j =
        json_pack("{s:s, s:s, s:I, s:i, s:I, s:o, s:I, s:I}", "binary", v->b->shown, "layout",
                  v->b->layout, "size", (json_int_t)s->size, "align", (int)s->align, "lines",
                  (json_int_t)((s->size + LT_LINE - 1) / LT_LINE), "holes", holes, "hole_bytes",
                  (json_int_t)v->hole_bytes, "tail_padding", (json_int_t)v->tail);
    json_object_set_new(j, "groups", groups_json(s));
    for (size_t m = 0; m < s->nm; m++) {
        const struct lt_member *x = &s->m[m];
        if (x->depth || x->marker)
            continue;
        json_array_append_new(
            members, json_pack("{s:s, s:s, s:I, s:I, s:o}", "name", x->name, "type", x->type, "off",
                               (json_int_t)x->off, "size", (json_int_t)x->size, "group",
                               x->group >= 0 ? json_string(s->g[x->group].name) : json_null()));
    }
    json_object_set_new(j, "members", members);
    for (int p = 0; v->has_paths && p < 2; p++)
        json_object_set_new(paths, lt_path_name[p],
                            json_pack("{s:s, s:i, s:o}", "source", v->path_src, "count",
                                      (int)lt_lines_count(&v->lines[p]), "lines",
                                      lt_lines_json(&v->lines[p])));
    json_object_set_new(j, "paths", paths);
    return j;
}

static json_t *struct_json(const char *name, struct view *vs, int nv)
{
    json_t *layouts = json_array();
    for (int i = 0; i < nv; i++)
        if (vs[i].s)
            json_array_append_new(layouts, layout_json(&vs[i]));
    return json_pack("{s:s, s:o}", "name", name, "layouts", layouts);
}

static bool listed(const char **v, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* The binaries: --binary, else the default ones. 0, or 2. */
static int open_binaries(const struct opts *o, struct lt_binary *bins, int *nbins)
{
    if (!o->nbins)
        return open_default(bins, nbins) < 0 ? 2 : 0;
    for (int i = 0; i < o->nbins; i++) {
        if (open_one(&bins[i], o->bins[i], false) < 0)
            return 2;
        (*nbins)++;
    }
    return 0;
}

/* The structures to show: --struct (each in some binary), else the hot
 * ones and every one with cache-line groups. 0, or 1. */
static int pick_structs(const struct opts *o, struct lt_binary *bins, int nbins, const char **names,
                        int max, int *nn)
{
    for (int i = 0; i < o->nstructs; i++) {
        bool found = false;
        for (int b = 0; b < nbins && !found; b++)
            found = lt_struct_get(&bins[b], o->structs[i]) != NULL;
        if (!found) {
            fprintf(stderr, "hotpath layout: no struct %s in the DWARF of %s%s\n", o->structs[i],
                    bins[0].shown, nbins > 1 ? " or the other binaries" : "");
            return 1;
        }
        names[(*nn)++] = o->structs[i];
    }
    if (o->nstructs)
        return 0;
    static const char *const def[] = {"hp_tcp_sock", "hp_buf", "hp__cache"};
    for (size_t i = 0; i < N(def); i++)
        for (int b = 0; b < nbins; b++)
            if (lt_struct_get(&bins[b], def[i]) && !listed(names, *nn, def[i])) {
                names[(*nn)++] = def[i];
                break;
            }
    for (int b = 0; b < nbins; b++) {
        const char **g;
        size_t ng = lt_grouped_names(&bins[b], &g);
        for (size_t i = 0; i < ng && *nn < max; i++)
            if (!listed(names, *nn, g[i]))
                names[(*nn)++] = g[i];
    }
    return 0;
}

/* What main works with. */
struct run {
    struct opts o;
    struct lt_binary bins[MAX_BINS];
    int nbins;
    struct lt_profile prof;
    struct lt_msgs warn, bad, notes;
    struct lt_access_map pacc;
    json_t *root; /* --json: the object being built */
};

/* The profile, mapped with its own binary's DWARF. 0, or 2. */
static int do_profile(struct run *R)
{
    struct lt_binary pb, *use = NULL;
    char err[512];
    const struct lt_profile *prof = &R->prof;
    if (prof->binary && access(prof->binary, R_OK) == 0 &&
        lt_binary_open(&pb, prof->binary, err, sizeof err) == 0) {
        pb.shown = shown_path(prof->binary);
        use = &pb;
    } else {
        fprintf(stderr,
                "hotpath layout: note: the profile's binary %s cannot be read; mapping offsets "
                "with %s\n",
                prof->binary ? prof->binary : "(unnamed)", R->bins[0].shown);
    }
    const struct lt_struct *ps = lt_struct_get(use ? use : &R->bins[0], prof->sname);
    int rc = 0;
    if (!ps || ps->size != prof->size) {
        fprintf(stderr, "hotpath layout: struct %s is %s in %s, %llu bytes in the profile\n",
                prof->sname, ps ? "of another size" : "not", use ? use->shown : R->bins[0].shown,
                (unsigned long long)prof->size);
        rc = 2;
    } else {
        json_t *j = lt_profile_report(stdout, R->o.json, prof, ps, R->o.hot, &R->pacc, &R->warn);
        if (R->root)
            json_object_set_new(R->root, "profile", j ? j : json_null());
        /* the sharing warnings of the profiled layout */
        if (R->pacc.n)
            lt_false_sharing(ps, prof->file, &R->pacc, &R->warn);
    }
    if (use)
        lt_binary_close(use);
    return rc;
}

/* One structure in every binary. */
static void do_struct(struct run *R, const char *name, json_t *structs)
{
    struct view vs[MAX_BINS];
    memset(vs, 0, sizeof vs);
    for (int b = 0; b < R->nbins; b++) {
        struct view *v = &vs[b];
        v->b = &R->bins[b];
        v->same_as = -1;
        v->s = lt_struct_get(&R->bins[b], name);
        if (!v->s)
            continue;
        for (int e = 0; e < b && v->same_as < 0; e++)
            if (vs[e].s && vs[e].same_as < 0 && same_layout(vs[e].s, v->s))
                v->same_as = e;
        holes_of(v, NULL, NULL);
        access_for(&R->o, v->s, R->o.profile ? &R->pacc : NULL, R->prof.sname, &v->acc);
        for (int p = 0; p < 2; p++)
            v->has_paths = path_lines(v->s, &v->acc, p, &v->lines[p], &v->path_src, &R->warn,
                                      R->bins[b].shown);
        if (v->acc.n && !R->o.profile && v->same_as < 0)
            lt_false_sharing(v->s, R->bins[b].shown, &v->acc, &R->warn);
        if (v->s->ndefs > 1)
            lt_msg_add(
                &R->warn,
                "%s defines struct %s more than once, with different sizes: showing the first",
                R->bins[b].shown, name);
    }
    if (structs)
        json_array_append_new(structs, struct_json(name, vs, R->nbins));
    else
        print_struct_text(name, vs, R->nbins);
    for (int b = 0; b < R->nbins; b++)
        lt_access_map_free(&vs[b].acc);
}

/* --check-docs. 0, 1 on a mismatch, 2 when the tables cannot be read. */
static int do_docs_check(struct run *R)
{
    int tables = 0;
    int r = lt_docs_check(R->o.docs, R->bins, (size_t)R->nbins, &R->bad, &R->notes, &tables);
    if (r < 0) {
        fprintf(stderr, "hotpath layout: cannot read the tables in %s: %s\n", R->o.docs,
                strerror(-r));
        return 2;
    }
    if (R->root) {
        json_object_set_new(R->root, "docs_check",
                            json_pack("{s:s, s:i, s:b, s:o, s:o}", "dir", R->o.docs, "tables",
                                      tables, "ok", R->bad.n == 0, "mismatches",
                                      lt_json_msgs(&R->bad), "notes", lt_json_msgs(&R->notes)));
        return R->bad.n ? 1 : 0;
    }
    printf("docs check: %d tables in %s against", tables, R->o.docs);
    for (int b = 0; b < R->nbins; b++)
        printf(" %s (%s)", R->bins[b].shown, R->bins[b].layout);
    printf("\n");
    for (size_t i = 0; i < R->notes.n; i++)
        printf("  note: %s\n", R->notes.v[i]);
    for (size_t i = 0; i < R->bad.n; i++)
        printf("  MISMATCH %s\n", R->bad.v[i]);
    printf("docs check: %s (%zu mismatches)\n", R->bad.n ? "FAILED" : "ok", R->bad.n);
    return R->bad.n ? 1 : 0;
}

/* Everything but the set-up: profile, tables, docs check, warnings. */
static int report(struct run *R, const char **names, int nn)
{
    if (R->root) {
        json_t *b = json_array();
        for (int i = 0; i < R->nbins; i++)
            json_array_append_new(
                b, json_pack("{s:s, s:s}", "path", R->bins[i].shown, "layout", R->bins[i].layout));
        json_object_set_new(R->root, "binaries", b);
    }
    if (R->o.profile && do_profile(R))
        return 2;
    if ((!R->o.profile && !R->o.check_docs) || R->o.nstructs) {
        json_t *structs = R->root ? json_array() : NULL;
        for (int k = 0; k < nn; k++)
            do_struct(R, names[k], structs);
        if (structs)
            json_object_set_new(R->root, "structs", structs);
    }
    int ret = R->o.check_docs ? do_docs_check(R) : 0;
    if (ret == 2)
        return 2;
    if (R->root) {
        json_object_set_new(R->root, "warnings", lt_json_msgs(&R->warn));
    } else if (R->warn.n) {
        printf("warnings:\n");
        for (size_t i = 0; i < R->warn.n; i++)
            printf("  warning: %s\n", R->warn.v[i]);
    }
    return ret;
}

int main(int argc, char **argv)
{
    static struct run R;
    int rc = parse(argc, argv, &R.o);
    if (rc)
        return rc > 0 ? 0 : -rc;
    if (!lt_have_libdw()) {
        fprintf(stderr, "hotpath layout: this hotpath was built without libdw, so it cannot read "
                        "DWARF: install "
                        "libdw-dev (elfutils) and rebuild\n");
        return 2;
    }
    const char *names[MAX_STRUCTS + 64];
    int nn = 0;
    char err[512];
    int ret = open_binaries(&R.o, R.bins, &R.nbins);
    if (ret == 0)
        ret = pick_structs(&R.o, R.bins, R.nbins, names, (int)N(names), &nn);
    if (ret == 0 && R.o.profile && lt_profile_read(R.o.profile, &R.prof, err, sizeof err) < 0) {
        fprintf(stderr, "hotpath layout: %s\n", err);
        ret = 2;
    }
    if (ret == 0) {
        R.root = R.o.json ? json_object() : NULL;
        ret = report(&R, names, nn);
        if (R.root)
            tool_json_write(R.root, stdout, false);
        json_decref(R.root);
    }
    for (int b = 0; b < MAX_BINS; b++)
        lt_binary_close(&R.bins[b]);
    lt_profile_free(&R.prof);
    lt_access_map_free(&R.pacc);
    lt_msgs_free(&R.warn);
    lt_msgs_free(&R.bad);
    lt_msgs_free(&R.notes);
    return ret;
}
