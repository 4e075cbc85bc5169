/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath layout --check-docs: the tables of docs/cachelines (each .md file) compared with the structures in a binary's DWARF. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "tool.h"

/*
 * What the tables look like (the parser follows them, not a grammar):
 *
 *   ## Group `hot` (line 0)                  a section: group of the rows below,
 *   ## `struct bucket`, group `line` (line 0)  and/or the structure they describe
 *   | field | type | [group] | [off (chrono)] | [bytes] | RX | TX | ... |
 *   | key.laddr, raddr | struct hp__tcp_key (48, ...) | demux | 0 (0) | r | r | ... |
 *   | group | bytes | lines | fields |         the groups of the structure
 *   | path | grouped | chrono | distinct bytes ... |   lines each fast path touches
 *
 * A file describes the structure named like it (hp_buf.md: struct hp_buf)
 * until a heading names another one. In a field cell, "a.b, c" means a.b
 * and a.c; "tag[5]" is the member tag. A type cell holds one type for all
 * the names ("uint32_t x2"), one per name, or the type of the enclosing
 * member for dotted names; a number in parentheses after it is the size.
 * "cold" (or "(cold)") is no group, unless the structure has a group by
 * that name.
 */

#define MAXC 16

struct trow {
    int lineno;
    char *c[MAXC];
    int nc;
};

struct table {
    char *sname, *group; /* context: structure and section group */
    int lineno;
    struct trow hdr;
    struct trow *rows;
    size_t nrows;
};

struct doc {
    char *path;  /* for reading */
    char *shown; /* for messages: docs/cachelines/x.md */
    struct table *t;
    size_t nt;
};

/* ---- parsing ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* A cell without markdown emphasis or code quotes, trimmed: a new string. */
static char *clean(const char *s)
{
    char *o = malloc(strlen(s) + 1);
    if (!o)
        return NULL;
    size_t j = 0;
    for (const char *p = s; *p; p++) {
        if (p[0] == '*' && p[1] == '*') { /* bold; a single * is a pointer */
            p++;
            continue;
        }
        if (*p != '`')
            o[j++] = *p;
    }
    o[j] = 0;
    char *t = trim(o);
    memmove(o, t, strlen(t) + 1);
    return o;
}

static void row_free(struct trow *r)
{
    for (int i = 0; i < r->nc; i++)
        free(r->c[i]);
    r->nc = 0;
}

static int split_row(char *line, struct trow *r, int lineno)
{
    memset(r, 0, sizeof *r);
    r->lineno = lineno;
    char *p = strchr(line, '|');
    if (!p)
        return 0;
    p++;
    while (*p && r->nc < MAXC) {
        char *e = strchr(p, '|');
        if (!e)
            break;
        *e = 0;
        r->c[r->nc] = clean(p);
        if (!r->c[r->nc])
            return -ENOMEM;
        r->nc++;
        p = e + 1;
    }
    return 0;
}

static bool is_separator(const struct trow *r)
{
    for (int i = 0; i < r->nc; i++)
        for (const char *p = r->c[i]; *p; p++)
            if (*p != '-' && *p != ':' && *p != ' ')
                return false;
    return r->nc > 0;
}

/* The text between the first pair of backticks after `after` in h ("Group `hot`"). */
static char *quoted_after(const char *h, const char *after)
{
    const char *p = strcasestr(h, after);
    if (!p)
        return NULL;
    p = strchr(p + strlen(after), '`');
    if (!p)
        return NULL;
    const char *e = strchr(p + 1, '`');
    if (!e)
        return NULL;
    return strndup(p + 1, (size_t)(e - p - 1));
}

static void doc_free(struct doc *d)
{
    for (size_t i = 0; i < d->nt; i++) {
        struct table *t = &d->t[i];
        free(t->sname);
        free(t->group);
        row_free(&t->hdr);
        for (size_t r = 0; r < t->nrows; r++)
            row_free(&t->rows[r]);
        free(t->rows);
    }
    free(d->t);
    free(d->path);
    free(d->shown);
    memset(d, 0, sizeof *d);
}

/* Headings with a group and a "(line N)" or "(lines N-M)": checked like table rows. */
struct heading {
    char *sname, *group, *lines;
    int lineno;
};
struct headings {
    struct heading *v;
    size_t n;
};

/* A heading: the section's structure and group from now on, and the
 * heading itself when it names lines. 0 or -ENOMEM. */
static int parse_heading(const char *s, int lineno, char **sname, char **group, struct headings *hs)
{
    free(*group);
    *group = quoted_after(s, "group ");
    char *st = quoted_after(s, "");
    if (st && strncmp(st, "struct ", 7) == 0) {
        free(*sname);
        *sname = strdup(st + 7);
    }
    free(st);
    const char *lp = strstr(s, "(line");
    if (!*group || !lp)
        return 0;
    struct heading *v = realloc(hs->v, (hs->n + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    hs->v = v;
    const char *q = lp + 5;
    if (*q == 's')
        q++;
    const char *e = strchr(q, ')');
    while (*q == ' ')
        q++;
    v[hs->n].lines = e ? strndup(q, (size_t)(e - q)) : strdup(q);
    v[hs->n].sname = *sname ? strdup(*sname) : NULL;
    v[hs->n].group = strdup(*group);
    v[hs->n].lineno = lineno;
    hs->n++;
    return 0;
}

/* A table row: the header of a new table (*cur NULL), else a row of
 * *cur. r is taken. 0 or -ENOMEM. */
static int add_row(struct doc *d, struct table **cur, struct trow *r, const char *sname,
                   const char *group, int lineno)
{
    if (!*cur) {
        struct table *v = realloc(d->t, (d->nt + 1) * sizeof *v);
        if (!v) {
            row_free(r);
            return -ENOMEM;
        }
        d->t = v;
        *cur = &d->t[d->nt++];
        memset(*cur, 0, sizeof **cur);
        (*cur)->sname = sname ? strdup(sname) : NULL;
        (*cur)->group = group ? strdup(group) : NULL;
        (*cur)->lineno = lineno;
        (*cur)->hdr = *r;
        return 0;
    }
    struct trow *v = realloc((*cur)->rows, ((*cur)->nrows + 1) * sizeof *v);
    if (!v) {
        row_free(r);
        return -ENOMEM;
    }
    (*cur)->rows = v;
    (*cur)->rows[(*cur)->nrows++] = *r;
    return 0;
}

static int doc_parse(struct doc *d, const char *default_struct, struct headings *hs)
{
    FILE *f = fopen(d->path, "r");
    if (!f)
        return -errno;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    char *sname = default_struct ? strdup(default_struct) : NULL;
    char *group = NULL;
    struct table *cur = NULL;
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        lineno++;
        char *s = trim(line);
        if (s[0] == '#' || s[0] != '|') {
            cur = NULL;
            if (s[0] == '#')
                rc = parse_heading(s, lineno, &sname, &group, hs);
            continue;
        }
        struct trow r;
        if ((rc = split_row(s, &r, lineno)) < 0)
            break;
        if (is_separator(&r))
            row_free(&r);
        else
            rc = add_row(d, &cur, &r, sname, group, lineno);
    }
    free(line);
    free(sname);
    free(group);
    fclose(f);
    return rc;
}

static int col(const struct table *t, const char *name, bool prefix)
{
    for (int i = 0; i < t->hdr.nc; i++) {
        const char *h = t->hdr.c[i];
        if (prefix ? strncasecmp(h, name, strlen(name)) == 0 : strcasecmp(h, name) == 0)
            return i;
    }
    return -1;
}

static const char *cell(const struct trow *r, int c)
{
    return c >= 0 && c < r->nc ? r->c[c] : NULL;
}

/* ---- names and types of a field cell ---- */

struct names {
    char *v[32];
    int n;
    bool dotted; /* "a.b, c": the names are members of a's type */
};

static void names_free(struct names *n)
{
    for (int i = 0; i < n->n; i++)
        free(n->v[i]);
    n->n = 0;
}

static int names_parse(const char *c, struct names *out)
{
    memset(out, 0, sizeof *out);
    char *dup = strdup(c);
    if (!dup)
        return -ENOMEM;
    char prefix[256] = "";
    char *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok && out->n < 32;
         tok = strtok_r(NULL, ",", &save)) {
        char *t = trim(tok);
        if (!*t)
            continue;
        char buf[512];
        if (out->n == 0) {
            const char *dot = strrchr(t, '.');
            if (dot) {
                snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - t + 1), t);
                out->dotted = true;
            }
            snprintf(buf, sizeof buf, "%s", t);
        } else if (!strchr(t, '.')) {
            snprintf(buf, sizeof buf, "%s%s", prefix, t);
        } else {
            snprintf(buf, sizeof buf, "%s", t);
        }
        out->v[out->n] = strdup(buf);
        if (!out->v[out->n]) {
            free(dup);
            return -ENOMEM;
        }
        out->n++;
    }
    free(dup);
    return 0;
}

/* Types of a type cell: "uint32_t, uint64_t" -> 2; "uint32_t x2" -> 1;
 * "struct hp__tcp_key (48, hash not read)" -> 1 with size 48. */
struct types {
    char v[8][128];
    int n;
    long size; /* from "(N...)", -1 if none */
};

static void types_parse(const char *c, struct types *t)
{
    memset(t, 0, sizeof *t);
    t->size = -1;
    char buf[512];
    size_t j = 0;
    int depth = 0;
    for (const char *p = c; *p && j + 1 < sizeof buf; p++) {
        if (*p == '(' && depth == 0 && p[1] == '*') {
            /* a function pointer, "uint64_t (*)(void *)": all of it is the type */
            size_t n = strlen(p);
            if (n > sizeof buf - 1 - j)
                n = sizeof buf - 1 - j;
            memcpy(buf + j, p, n);
            j += n;
            break;
        }
        if (*p == '(') {
            if (depth++ == 0 && t->size < 0 && isdigit((unsigned char)p[1]))
                t->size = strtol(p + 1, NULL, 10);
            continue;
        }
        if (*p == ')') {
            if (depth)
                depth--;
            continue;
        }
        if (!depth)
            buf[j++] = *p;
    }
    buf[j] = 0;
    /* split at the commas outside parentheses (a function pointer's
     * parameters stay together) */
    char *tok = buf;
    depth = 0;
    for (char *q = buf;; q++) {
        if (*q == '(')
            depth++;
        else if (*q == ')' && depth)
            depth--;
        if ((*q != ',' || depth) && *q)
            continue;
        bool end = !*q;
        *q = 0;
        if (t->n == 8)
            break;
        char *s = trim(tok);
        tok = q + 1;
        /* "uint32_t x2": a count, not part of the type */
        char *x = strrchr(s, ' ');
        if (x && x[1] == 'x' && isdigit((unsigned char)x[2]))
            *x = 0;
        s = trim(s);
        if (*s)
            snprintf(t->v[t->n++], sizeof t->v[0], "%s", s);
        if (end)
            break;
    }
}

static bool type_eq(const char *doc, const char *dwarf)
{
    if (strcmp(doc, "pointers") == 0 || strcmp(doc, "pointer") == 0)
        return dwarf[strlen(dwarf) - 1] == '*';
    /* compare without spaces: "struct hp_buf *" == "struct hp_buf*" */
    const char *a = doc, *b = dwarf;
    for (;;) {
        while (*a == ' ')
            a++;
        while (*b == ' ')
            b++;
        if (*a != *b)
            return false;
        if (!*a)
            return true;
        a++, b++;
    }
}

/* "0, 2-8" == "0,2-8" */
static bool same_nospace(const char *a, const char *b)
{
    return type_eq(a, b);
}

/* ---- the check ---- */

struct ctx {
    struct lt_binary *bins;
    size_t nbins;
    struct lt_msgs *bad, *notes;
    /* top-level members named in some fields table, per structure checked */
    struct covered {
        char *sname;
        const struct lt_struct *s;
        int binary;
        bool *named;
        const char *where; /* first file describing it */
    } cov[32];
    size_t ncov;
};

/* The binary whose structure the tables are checked against: the first
 * where it has cache-line groups (the grouped layout), else the first that
 * has it. -1 if none. */
static int pick_binary(struct ctx *c, const char *sname, const struct lt_struct **out)
{
    int any = -1;
    for (size_t i = 0; i < c->nbins; i++) {
        const struct lt_struct *s = lt_struct_get(&c->bins[i], sname);
        if (!s)
            continue;
        if (s->ng) {
            *out = s;
            return (int)i;
        }
        if (any < 0) {
            any = (int)i;
            *out = s;
        }
    }
    return any;
}

static int chrono_binary(struct ctx *c, const char *sname, const struct lt_struct **out)
{
    for (size_t i = 0; i < c->nbins; i++) {
        if (!c->bins[i].layout || strcmp(c->bins[i].layout, "chrono") != 0)
            continue;
        const struct lt_struct *s = lt_struct_get(&c->bins[i], sname);
        if (s) {
            *out = s;
            return (int)i;
        }
    }
    return -1;
}

static struct covered *coverage(struct ctx *c, const char *sname, const struct lt_struct *s,
                                int bin, const char *where)
{
    for (size_t i = 0; i < c->ncov; i++)
        if (strcmp(c->cov[i].sname, sname) == 0)
            return &c->cov[i];
    if (c->ncov == sizeof c->cov / sizeof c->cov[0])
        return NULL;
    struct covered *v = &c->cov[c->ncov];
    v->named = calloc(s->nm ? s->nm : 1, sizeof(bool));
    v->sname = strdup(sname);
    if (!v->named || !v->sname) {
        free(v->named);
        free(v->sname);
        return NULL;
    }
    v->s = s;
    v->binary = bin;
    v->where = where;
    c->ncov++;
    return v;
}

/* The group a table names: NULL for none ("cold" when the structure has no such group). */
static const char *doc_group(const struct lt_struct *s, const char *g)
{
    if (!g || !*g || strcmp(g, "-") == 0)
        return NULL;
    char b[64];
    snprintf(b, sizeof b, "%s", g);
    char *p = b;
    if (*p == '(') {
        p++;
        char *e = strchr(p, ')');
        if (e)
            *e = 0;
    }
    if (lt_group_find(s, p))
        return lt_group_find(s, p)->name;
    return strcmp(p, "cold") == 0 ? NULL : g;
}

static bool access_ok(const char *a)
{
    return a && (a[0] == '-' || a[0] == 'r' || a[0] == 'w');
}

/* One row of a fields table being checked: its fields resolved in s. */
struct frow {
    struct ctx *c;
    const struct doc *d;
    const struct table *t;
    const struct trow *r;
    const struct lt_struct *s, *sc; /* the structure; in the chrono binary (sc NULL: none) */
    int ci;                         /* the chrono binary, or -1 */
    const char *bshown, *fc;        /* the binary as shown; the field cell */
    struct names nm;
    const struct lt_member *ms[32], *top0;
};

/* group: the column, else the section's */
static void frow_group(struct frow *f, int cg)
{
    const struct lt_struct *s = f->s;
    const char *want = doc_group(s, cg >= 0 ? cell(f->r, cg) : f->t->group);
    if (!s->ng && !want)
        return;
    for (int i = 0; i < f->nm.n; i++) {
        const struct lt_member *top = &s->m[f->ms[i]->top];
        const char *has = top->group >= 0 ? s->g[top->group].name : NULL;
        if ((want == NULL) != (has == NULL) || (want && strcmp(want, has) != 0))
            lt_msg_add(f->c->bad, "%s:%d: %s is in group %s in the table, in %s%s in %s",
                       f->d->shown, f->r->lineno, f->nm.v[i], want ? want : "(none)",
                       has ? "group " : "", has ? has : "no group", f->bshown);
        if (f->nm.dotted)
            break;
    }
}

static void frow_types(struct frow *f, const char *tc)
{
    struct types ty;
    types_parse(tc, &ty);
    const char *dshown = f->d->shown;
    int line = f->r->lineno;
    if (f->nm.dotted || ty.n == 1) {
        const struct lt_member *m = f->nm.dotted ? f->top0 : NULL;
        for (int i = 0; i < (f->nm.dotted ? 1 : f->nm.n); i++) {
            if (!m || !f->nm.dotted)
                m = f->ms[i];
            if (ty.n >= 1 && !type_eq(ty.v[0], m->type))
                lt_msg_add(f->c->bad, "%s:%d: %s has type '%s' in the table, '%s' in %s", dshown,
                           line, m->name, ty.v[0], m->type, f->bshown);
        }
    } else if (ty.n == f->nm.n) {
        for (int i = 0; i < f->nm.n; i++)
            if (!type_eq(ty.v[i], f->ms[i]->type))
                lt_msg_add(f->c->bad, "%s:%d: %s has type '%s' in the table, '%s' in %s", dshown,
                           line, f->ms[i]->name, ty.v[i], f->ms[i]->type, f->bshown);
    } else if (ty.n) {
        lt_msg_add(f->c->notes, "%s:%d: %d types for %d fields: types not checked", dshown, line,
                   ty.n, f->nm.n);
    }
    const struct lt_member *sized = f->nm.dotted ? f->top0 : f->nm.n == 1 ? f->ms[0] : NULL;
    if (ty.size >= 0 && sized && (uint64_t)ty.size != sized->size)
        lt_msg_add(f->c->bad, "%s:%d: %s is %ld bytes in the table, %llu in %s", dshown, line,
                   sized->name, ty.size, (unsigned long long)sized->size, f->bshown);
}

/* offsets: "152 (68)": this layout (chrono in brackets) */
static void frow_offset(struct frow *f, const char *oc, bool *noted_chrono)
{
    unsigned long off = strtoul(oc, NULL, 10);
    const struct lt_member *m = f->nm.dotted ? f->top0 : f->ms[0];
    const char *dshown = f->d->shown;
    if (off != m->off)
        lt_msg_add(f->c->bad, "%s:%d: %s at offset %lu in the table, %llu in %s", dshown,
                   f->r->lineno, m->name, off, (unsigned long long)m->off, f->bshown);
    const char *br = strchr(oc, '(');
    if (br && f->ci >= 0) {
        const struct lt_member *mc = lt_member_find(f->sc, m->name);
        unsigned long offc = strtoul(br + 1, NULL, 10);
        const char *cshown = f->c->bins[f->ci].shown;
        if (!mc)
            lt_msg_add(f->c->bad, "%s:%d: %s is not in struct %s of %s", dshown, f->r->lineno,
                       m->name, f->s->name, cshown);
        else if (offc != mc->off)
            lt_msg_add(f->c->bad,
                       "%s:%d: %s at offset %lu in the chrono layout in the table, %llu in %s",
                       dshown, f->r->lineno, m->name, offc, (unsigned long long)mc->off, cshown);
    } else if (br && !*noted_chrono) {
        *noted_chrono = true;
        lt_msg_add(f->c->notes,
                   "%s:%d: chrono offsets not checked: no chrono build among the binaries "
                   "(make chrono, or --binary build-chrono/hotpath)",
                   dshown, f->t->lineno);
    }
}

/* bytes: "20 (0-19)" */
static void frow_bytes(struct frow *f, const char *bc)
{
    unsigned long n = strtoul(bc, NULL, 10), a = 0, b = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < f->nm.n; i++) {
        if (f->ms[i]->off < lo)
            lo = f->ms[i]->off;
        if (f->ms[i]->off + f->ms[i]->size > hi)
            hi = f->ms[i]->off + f->ms[i]->size;
    }
    const char *br = strchr(bc, '(');
    bool ok = n == hi - lo;
    if (br && sscanf(br, "(%lu-%lu)", &a, &b) == 2)
        ok = ok && a == lo && b + 1 == hi;
    if (!ok)
        lt_msg_add(f->c->bad, "%s:%d: %s: '%s' in the table, %llu (%llu-%llu) in %s", f->d->shown,
                   f->r->lineno, f->fc, bc, (unsigned long long)(hi - lo), (unsigned long long)lo,
                   (unsigned long long)(hi - 1), f->bshown);
}

/* The row's fields as members of f->s. false (with what is wrong said)
 * when a name is not one, or there are none. */
static bool frow_members(struct frow *f, struct covered *cov)
{
    bool all = true;
    for (int i = 0; i < f->nm.n; i++) {
        f->ms[i] = lt_member_find(f->s, f->nm.v[i]);
        if (!f->ms[i]) {
            lt_msg_add(f->c->bad, "%s:%d: '%s' is not a member of struct %s (%s)", f->d->shown,
                       f->r->lineno, f->nm.v[i], f->s->name, f->bshown);
            all = false;
            continue;
        }
        if (cov)
            cov->named[f->ms[i]->top] = true;
    }
    if (all && f->nm.n)
        f->top0 = &f->s->m[f->ms[0]->top];
    return all && f->nm.n;
}

static void check_fields_table(struct ctx *c, const struct doc *d, const struct table *t)
{
    struct frow f = {.c = c, .d = d, .t = t};
    int bi = pick_binary(c, t->sname, &f.s);
    if (bi < 0) {
        lt_msg_add(c->bad, "%s:%d: struct %s is in the DWARF of no binary given", d->shown,
                   t->lineno, t->sname);
        return;
    }
    f.bshown = c->bins[bi].shown;
    f.ci = chrono_binary(c, t->sname, &f.sc);
    struct covered *cov = coverage(c, t->sname, f.s, bi, d->shown);
    int cf = col(t, "field", false), ct = col(t, "type", false), cg = col(t, "group", false);
    int co = col(t, "off", true), cb = col(t, "bytes", false), crx = col(t, "RX", false),
        ctx = col(t, "TX", false);
    bool noted_chrono = false;
    for (size_t ri = 0; ri < t->nrows; ri++) {
        f.r = &t->rows[ri];
        f.fc = cell(f.r, cf);
        if (!f.fc || !*f.fc)
            continue;
        if (names_parse(f.fc, &f.nm) < 0)
            return;
        memset(f.ms, 0, sizeof f.ms);
        if (frow_members(&f, cov)) {
            frow_group(&f, cg);
            if (ct >= 0 && cell(f.r, ct))
                frow_types(&f, cell(f.r, ct));
            if (co >= 0 && cell(f.r, co) && isdigit((unsigned char)cell(f.r, co)[0]))
                frow_offset(&f, cell(f.r, co), &noted_chrono);
            if (cb >= 0 && cell(f.r, cb) && isdigit((unsigned char)cell(f.r, cb)[0]))
                frow_bytes(&f, cell(f.r, cb));
            if ((crx >= 0 && !access_ok(cell(f.r, crx))) ||
                (ctx >= 0 && !access_ok(cell(f.r, ctx))))
                lt_msg_add(c->bad, "%s:%d: %s: an access is not r, rm, rw, w or -", d->shown,
                           f.r->lineno, f.fc);
        }
        names_free(&f.nm);
    }
}

/* A groups table's fields cell against the group's members: the same
 * names, in any order. */
static void compare_fields(struct ctx *c, const struct doc *d, int lineno, const char *gname,
                           const char *cellv, const char *want_fields, const char *bshown)
{
    struct names dn, wn;
    if (names_parse(cellv, &dn) < 0)
        return;
    if (names_parse(want_fields, &wn) < 0) {
        names_free(&dn);
        return;
    }
    char extra[1024] = "", missing[1024] = "";
    for (int pass = 0; pass < 2; pass++) {
        const struct names *x = pass ? &wn : &dn, *y = pass ? &dn : &wn;
        char *out = pass ? missing : extra;
        for (int i = 0; i < x->n; i++) {
            bool found = false;
            for (int k = 0; k < y->n && !found; k++)
                found = strcmp(x->v[i], y->v[k]) == 0;
            size_t l = strlen(out);
            if (!found)
                snprintf(out + l, 1024 - l, " %s", x->v[i]);
        }
    }
    if (*extra || *missing)
        lt_msg_add(c->bad,
                   "%s:%d: group %s: fields in the table but not in the group in %s:%s; in the "
                   "group but not in the table:%s",
                   d->shown, lineno, gname, bshown, *extra ? extra : " none",
                   *missing ? missing : " none");
    names_free(&dn);
    names_free(&wn);
}

/* | group | bytes | lines | fields | */
static void check_groups_table(struct ctx *c, const struct doc *d, const struct table *t)
{
    const struct lt_struct *s = NULL;
    int bi = pick_binary(c, t->sname, &s);
    if (bi < 0)
        return; /* said by the fields table */
    const char *bshown = c->bins[bi].shown;
    int cb = col(t, "bytes", false), cl = col(t, "lines", false), cf = col(t, "fields", false);
    for (size_t ri = 0; ri < t->nrows; ri++) {
        const struct trow *r = &t->rows[ri];
        const char *gname = cell(r, 0);
        if (!gname || !*gname)
            continue;
        const char *g = doc_group(s, gname);
        const struct lt_group *grp = g ? lt_group_find(s, g) : NULL;
        if (g && !grp) {
            lt_msg_add(c->bad, "%s:%d: struct %s has no group %s in %s", d->shown, r->lineno,
                       s->name, g, bshown);
            continue;
        }
        /* the group's bytes, or those of the members in no group */
        uint64_t lo = grp ? grp->begin : UINT64_MAX, hi = grp ? grp->end : s->size;
        char want_fields[2048] = "";
        for (size_t i = 0; i < s->nm; i++) {
            const struct lt_member *m = &s->m[i];
            if (m->depth || m->marker)
                continue;
            if (grp ? m->group >= 0 && &s->g[m->group] == grp : m->group < 0) {
                if (!grp && m->off < lo)
                    lo = m->off;
                size_t l = strlen(want_fields);
                snprintf(want_fields + l, sizeof want_fields - l, "%s%s", l ? ", " : "", m->name);
            }
        }
        if (lo == UINT64_MAX)
            lo = hi;
        char exp[64], got[64];
        if (cb >= 0 && cell(r, cb)) {
            snprintf(exp, sizeof exp, "%llu-%llu", (unsigned long long)lo,
                     (unsigned long long)(hi ? hi - 1 : 0));
            snprintf(got, sizeof got, "%s", cell(r, cb));
            char *p = strchr(got, '(');
            if (p)
                *p = 0;
            if (!same_nospace(got, exp) ||
                (p && strtoull(p + 1, NULL, 10) != hi - lo && strchr(cell(r, cb), '(')))
                lt_msg_add(c->bad, "%s:%d: group %s: bytes '%s' in the table, %s (%llu) in %s",
                           d->shown, r->lineno, gname, cell(r, cb), exp,
                           (unsigned long long)(hi - lo), bshown);
        }
        if (cl >= 0 && cell(r, cl)) {
            lt_range_fmt(lo, hi - lo, exp, sizeof exp);
            if (!same_nospace(cell(r, cl), exp))
                lt_msg_add(c->bad, "%s:%d: group %s: lines '%s' in the table, %s in %s", d->shown,
                           r->lineno, gname, cell(r, cl), exp, bshown);
        }
        if (cf >= 0 && cell(r, cf))
            compare_fields(c, d, r->lineno, gname, cell(r, cf), want_fields, bshown);
    }
}

/* One cell of a path table: the lines (or the distinct bytes) the path's
 * field list touches in s of binary b. */
static void check_path_cell(struct ctx *c, const struct doc *d, const struct trow *r, int ci,
                            const char *p, const char *h, int path, const struct lt_struct *s,
                            const struct lt_binary *b, bool bytes_col)
{
    const char *const *names;
    size_t nn = lt_path_fields(path, &names);
    struct lt_lines l = {{0}};
    unsigned char *bytes = calloc(s->size ? s->size : 1, 1);
    if (!bytes)
        return;
    for (size_t i = 0; i < nn; i++) {
        const struct lt_member *m = lt_member_find(s, names[i]);
        if (!m)
            continue;
        lt_lines_add(&l, m->off, m->size);
        for (uint64_t k = m->off; k < m->off + m->size && k < s->size; k++)
            bytes[k] = 1;
    }
    unsigned nbytes = 0;
    for (uint64_t k = 0; k < s->size; k++)
        nbytes += bytes[k];
    free(bytes);
    const char *v = r->c[ci];
    if (bytes_col) {
        if (strtoul(v, NULL, 10) != nbytes)
            lt_msg_add(c->bad, "%s:%d: %s: %s distinct bytes in the table, %u in %s", d->shown,
                       r->lineno, p, v, nbytes, b->shown);
        return;
    }
    char fmt[256];
    lt_lines_fmt(&l, fmt, sizeof fmt);
    unsigned n = (unsigned)strtoul(v, NULL, 10);
    const char *lp = strstr(v, "(lines ");
    char listed[256] = "";
    if (lp) {
        snprintf(listed, sizeof listed, "%s", lp + 7);
        char *e = strchr(listed, ')');
        if (e)
            *e = 0;
    }
    if (n != lt_lines_count(&l) || (lp && !same_nospace(listed, fmt)))
        lt_msg_add(c->bad, "%s:%d: %s in the %s layout: '%s' in the table, %u (lines %s) in %s",
                   d->shown, r->lineno, p, h, v, lt_lines_count(&l), fmt, b->shown);
}

/* | path | grouped | chrono | distinct bytes ... |: the lines the code's
 * field lists (src/sock/tcp_layout.h) touch in each layout. */
static void check_lines_table(struct ctx *c, const struct doc *d, const struct table *t)
{
    if (!t->sname || strcmp(t->sname, "hp_tcp_sock") != 0) {
        lt_msg_add(c->notes,
                   "%s:%d: a path table for struct %s: not checked (the tool has path lists of "
                   "hp_tcp_sock only)",
                   d->shown, t->lineno, t->sname ? t->sname : "?");
        return;
    }
    for (size_t ri = 0; ri < t->nrows; ri++) {
        const struct trow *r = &t->rows[ri];
        const char *p = cell(r, 0);
        int path = p && strcasecmp(p, "RX") == 0   ? LT_RX
                   : p && strcasecmp(p, "TX") == 0 ? LT_TX
                                                   : -1;
        if (path < 0)
            continue;
        for (int ci = 1; ci < t->hdr.nc && ci < r->nc; ci++) {
            const char *h = t->hdr.c[ci];
            bool bytes_col = strncasecmp(h, "distinct bytes", 14) == 0;
            struct lt_binary *b = NULL;
            for (size_t i = 0; i < c->nbins && !bytes_col; i++)
                if (c->bins[i].layout && strcasecmp(c->bins[i].layout, h) == 0) {
                    b = &c->bins[i];
                    break;
                }
            if (!b && bytes_col) {
                const struct lt_struct *s0;
                int bi = pick_binary(c, t->sname, &s0);
                b = bi >= 0 ? &c->bins[bi] : NULL;
            }
            if (!b) {
                if (!bytes_col)
                    lt_msg_add(c->notes,
                               "%s:%d: the %s column: no %s build among the binaries, not checked",
                               d->shown, r->lineno, h, h);
                continue;
            }
            const struct lt_struct *s = lt_struct_get(b, t->sname);
            if (s)
                check_path_cell(c, d, r, ci, p, h, path, s, b, bytes_col);
        }
    }
}

static void check_heading(struct ctx *c, const char *shown, const struct heading *h)
{
    if (!h->sname)
        return;
    const struct lt_struct *s = NULL;
    int bi = pick_binary(c, h->sname, &s);
    if (bi < 0)
        return;
    const struct lt_group *g = lt_group_find(s, h->group);
    if (!g) {
        lt_msg_add(c->bad, "%s:%d: struct %s has no group %s in %s", shown, h->lineno, s->name,
                   h->group, c->bins[bi].shown);
        return;
    }
    char exp[64];
    lt_range_fmt(g->begin, g->end - g->begin, exp, sizeof exp);
    if (!same_nospace(h->lines, exp))
        lt_msg_add(c->bad, "%s:%d: group %s is on line(s) %s in the heading, %s in %s", shown,
                   h->lineno, h->group, h->lines, exp, c->bins[bi].shown);
}

static int md_filter(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 3 && strcmp(e->d_name + n - 3, ".md") == 0;
}

/* Read every the .md files of dir; default struct of each: its name, when a binary has it. */
static int read_docs(const char *dir, struct lt_binary *bins, size_t nbins, struct doc **out,
                     size_t *nout, struct headings **hout)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, md_filter, alphasort);
    if (n < 0)
        return -errno;
    struct doc *docs = calloc((size_t)n + 1, sizeof *docs);
    struct headings *hs = calloc((size_t)n + 1, sizeof *hs);
    int rc = docs && hs ? 0 : -ENOMEM;
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            char path[4096], sname[256];
            snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
            snprintf(sname, sizeof sname, "%.*s", (int)(strlen(ents[i]->d_name) - 3),
                     ents[i]->d_name);
            bool known = false;
            for (size_t b = 0; b < nbins && !known; b++)
                known = lt_struct_get(&bins[b], sname) != NULL;
            docs[i].path = strdup(path);
            /* messages name the file as the repository does */
            const char *rel = strstr(path, "docs/cachelines/");
            docs[i].shown = strdup(rel ? rel : path);
            if (!docs[i].path || !docs[i].shown)
                rc = -ENOMEM;
            else
                rc = doc_parse(&docs[i], known ? sname : NULL, &hs[i]);
        }
        free(ents[i]);
    }
    free(ents);
    *out = docs;
    *hout = hs;
    *nout = (size_t)n;
    return rc;
}

static void heading_list_free(struct headings *h)
{
    for (size_t j = 0; j < h->n; j++) {
        free(h->v[j].sname);
        free(h->v[j].group);
        free(h->v[j].lines);
    }
    free(h->v);
    memset(h, 0, sizeof *h);
}

static void headings_free(struct headings *hs, size_t n)
{
    for (size_t i = 0; hs && i < n; i++)
        heading_list_free(&hs[i]);
    free(hs);
}

int lt_docs_check(const char *dir, struct lt_binary *bins, size_t nbins, struct lt_msgs *bad,
                  struct lt_msgs *notes, int *tables_checked)
{
    struct doc *docs = NULL;
    struct headings *hs = NULL;
    size_t nd = 0;
    int rc = read_docs(dir, bins, nbins, &docs, &nd, &hs);
    struct ctx c = {.bins = bins, .nbins = nbins, .bad = bad, .notes = notes};
    *tables_checked = 0;
    for (size_t i = 0; rc == 0 && i < nd; i++) {
        for (size_t j = 0; j < docs[i].nt; j++) {
            const struct table *t = &docs[i].t[j];
            const char *first = t->hdr.nc ? t->hdr.c[0] : "";
            bool fields = strcasecmp(first, "field") == 0, groups = strcasecmp(first, "group") == 0,
                 paths = strcasecmp(first, "path") == 0;
            if (!fields && !groups && !paths)
                continue;
            if (!t->sname) {
                lt_msg_add(notes, "%s:%d: a table before any `struct NAME` heading: not checked",
                           docs[i].shown, t->lineno);
                continue;
            }
            (*tables_checked)++;
            if (fields)
                check_fields_table(&c, &docs[i], t);
            else if (groups)
                check_groups_table(&c, &docs[i], t);
            else
                check_lines_table(&c, &docs[i], t);
        }
        for (size_t j = 0; j < hs[i].n; j++)
            check_heading(&c, docs[i].shown, &hs[i].v[j]);
    }
    /* every member of a described structure is in its tables */
    for (size_t i = 0; i < c.ncov; i++) {
        const struct covered *v = &c.cov[i];
        for (size_t m = 0; m < v->s->nm; m++) {
            const struct lt_member *mm = &v->s->m[m];
            if (mm->depth == 0 && !mm->marker && !v->named[m])
                lt_msg_add(bad, "%s: member %s of struct %s (%s) is in no table", v->where,
                           mm->name, v->sname, bins[v->binary].shown);
        }
        free(v->named);
        free(v->sname);
    }
    for (size_t i = 0; docs && i < nd; i++)
        doc_free(&docs[i]);
    free(docs);
    headings_free(hs, nd);
    return rc;
}

/* ---- access maps from the tables ---- */

static enum lt_access parse_access(const char *a)
{
    if (!a)
        return LT_NONE;
    if (a[0] == 'w' || (a[0] == 'r' && a[1] == 'w'))
        return LT_WRITE;
    if (a[0] == 'r')
        return LT_READ;
    return LT_NONE;
}

/* "r (v4[0])": the access touches element k of array member m only; -1 if
 * the cell names no element by number. */
static long element_hint(const struct lt_member *m, const char *cellv)
{
    if (!cellv)
        return -1;
    const char *leaf = strrchr(m->name, '.');
    leaf = leaf ? leaf + 1 : m->name;
    char pat[300];
    snprintf(pat, sizeof pat, "(%s[", leaf);
    const char *p = strstr(cellv, pat);
    if (!p || !isdigit((unsigned char)p[strlen(pat)]))
        return -1;
    return strtol(p + strlen(pat), NULL, 10);
}

static int span_add(struct lt_access_map *a, const struct lt_member *m, enum lt_access rx,
                    enum lt_access tx)
{
    if (tool_grow(&a->v, &a->cap, a->n, sizeof *a->v, 32) < 0)
        return -ENOMEM;
    struct lt_access_span *s = &a->v[a->n];
    s->name = strdup(m->name);
    if (!s->name)
        return -ENOMEM;
    s->off = m->off;
    s->size = m->size;
    s->top = m->top;
    s->acc[LT_RX] = rx;
    s->acc[LT_TX] = tx;
    a->n++;
    return 0;
}

int lt_docs_access(const char *dir, const struct lt_struct *s, struct lt_access_map *out)
{
    memset(out, 0, sizeof *out);
    struct dirent **ents;
    int n = scandir(dir, &ents, md_filter, alphasort);
    if (n < 0)
        return -errno;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
        bool own = strlen(ents[i]->d_name) == strlen(s->name) + 3 &&
                   strncmp(ents[i]->d_name, s->name, strlen(s->name)) == 0;
        struct doc d = {.path = strdup(path)};
        struct headings hs = {0};
        if (d.path && doc_parse(&d, own ? s->name : NULL, &hs) == 0) {
            for (size_t j = 0; j < d.nt; j++) {
                const struct table *t = &d.t[j];
                if (!t->sname || strcmp(t->sname, s->name) != 0 || !t->hdr.nc ||
                    strcasecmp(t->hdr.c[0], "field"))
                    continue;
                int crx = col(t, "RX", false), ctx = col(t, "TX", false);
                if (crx < 0 || ctx < 0)
                    continue;
                for (size_t ri = 0; ri < t->nrows; ri++) {
                    struct names nm;
                    if (!cell(&t->rows[ri], 0) || names_parse(cell(&t->rows[ri], 0), &nm) < 0)
                        continue;
                    for (int k = 0; k < nm.n; k++) {
                        const struct lt_member *m = lt_member_find(s, nm.v[k]);
                        if (!m || rc != 0)
                            continue;
                        const char *arx = cell(&t->rows[ri], crx), *atx = cell(&t->rows[ri], ctx);
                        rc = span_add(out, m, parse_access(arx), parse_access(atx));
                        /* an array whose cells name one element ("r (v4[0])") on
                         * every path that touches it: that element only */
                        long ex = element_hint(m, arx), et = element_hint(m, atx);
                        const char *br = strrchr(m->type, '[');
                        long cnt = br ? strtol(br + 1, NULL, 10) : 0;
                        long e = ex >= 0 ? ex : et;
                        bool all_paths = (ex == e || parse_access(arx) == LT_NONE) &&
                                         (et == e || parse_access(atx) == LT_NONE);
                        if (rc == 0 && e >= 0 && cnt > 0 && e < cnt && all_paths) {
                            struct lt_access_span *v = &out->v[out->n - 1];
                            v->size = m->size / (uint64_t)cnt;
                            v->off = m->off + (uint64_t)e * v->size;
                        }
                    }
                    names_free(&nm);
                }
                if (!out->source) {
                    const char *rel = strstr(path, "docs/cachelines/");
                    out->source = strdup(rel ? rel : path);
                }
            }
        }
        doc_free(&d);
        heading_list_free(&hs);
        free(ents[i]);
    }
    free(ents);
    if (rc == 0 && out->n == 0)
        rc = -ENOENT;
    return rc;
}

void lt_access_map_free(struct lt_access_map *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i].name);
    free(a->v);
    free(a->source);
    memset(a, 0, sizeof *a);
}
