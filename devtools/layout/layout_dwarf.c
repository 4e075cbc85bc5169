/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath layout: structures, members, groups and holes read from a binary's DWARF with libdw (stubs without it). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "tool.h"

#ifdef HP_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>

#define GROUP_BEGIN "hp__group_begin_"
#define GROUP_END   "hp__group_end_"
#define MAX_DEPTH   6 /* nested structs flattened; deeper ones stay whole */

/* A structure name seen in the DWARF: where its first definition is. */
struct name_ent {
    char *name;
    Dwarf_Off die; /* first definition */
    Dwarf_Word size;
    unsigned ndefs; /* definitions of a different size seen */
    bool grouped;   /* has hp__group_begin_* members */
    struct lt_struct *loaded;
};

struct dw {
    int fd;
    Dwarf *dw;
    struct name_ent *names;
    size_t n, cap;
    const char **grouped; /* for lt_grouped_names */
    size_t ngrouped;
};

bool lt_have_libdw(void)
{
    return true;
}

static struct name_ent *name_lookup(struct dw *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->names[i].name, name) == 0)
            return &d->names[i];
    return NULL;
}

/* Whether a structure DIE has group markers among its direct members. */
static bool die_grouped(Dwarf_Die *st)
{
    Dwarf_Die c;
    if (dwarf_child(st, &c) != 0)
        return false;
    do {
        const char *n = dwarf_diename(&c);
        if (dwarf_tag(&c) == DW_TAG_member && n &&
            strncmp(n, GROUP_BEGIN, strlen(GROUP_BEGIN)) == 0)
            return true;
    } while (dwarf_siblingof(&c, &c) == 0);
    return false;
}

/* Index the named structure definitions at the top level of every unit. */
static int index_names(struct dw *d)
{
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    Dwarf_Half version;
    uint8_t unit_type;
    while (dwarf_get_units(d->dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
        Dwarf_Die c;
        if (dwarf_child(&cudie, &c) != 0)
            continue;
        do {
            if (dwarf_tag(&c) != DW_TAG_structure_type || dwarf_hasattr(&c, DW_AT_declaration))
                continue;
            const char *n = dwarf_diename(&c);
            if (!n)
                continue;
            Dwarf_Word size = 0;
            Dwarf_Attribute a;
            if (dwarf_attr(&c, DW_AT_byte_size, &a))
                dwarf_formudata(&a, &size);
            struct name_ent *e = name_lookup(d, n);
            if (e) {
                if (e->size != size && e->ndefs < 2)
                    e->ndefs = 2;
                continue;
            }
            if (tool_grow(&d->names, &d->cap, d->n, sizeof *d->names, 256) < 0)
                return -ENOMEM;
            e = &d->names[d->n++];
            memset(e, 0, sizeof *e);
            e->name = strdup(n);
            if (!e->name)
                return -ENOMEM;
            e->die = dwarf_dieoffset(&c);
            e->size = size;
            e->ndefs = 1;
            e->grouped = die_grouped(&c);
            if (e->grouped) {
                const char **g = realloc(d->grouped, (d->ngrouped + 1) * sizeof *g);
                if (!g)
                    return -ENOMEM;
                d->grouped = g;
                d->grouped[d->ngrouped++] = e->name;
            }
        } while (dwarf_siblingof(&c, &c) == 0);
    }
    return 0;
}

int lt_binary_open(struct lt_binary *b, const char *path, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    struct dw *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (d->fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(e));
        free(d);
        return -e;
    }
    d->dw = dwarf_begin(d->fd, DWARF_C_READ);
    if (!d->dw) {
        int e = dwarf_errno();
        snprintf(err, errlen, "'%s' has no DWARF to read (%s): build it with -g", path,
                 dwarf_errmsg(e));
        close(d->fd);
        free(d);
        return -ENOEXEC;
    }
    b->priv = d;
    b->path = strdup(path);
    int rc = b->path ? index_names(d) : -ENOMEM;
    if (rc < 0) {
        snprintf(err, errlen, "'%s': %s", path, strerror(-rc));
        lt_binary_close(b);
        return rc;
    }
    if (d->n == 0) {
        snprintf(err, errlen, "'%s' has no structure in its DWARF: build it with -g", path);
        lt_binary_close(b);
        return -ENOEXEC;
    }
    return 0;
}

static void struct_free(struct lt_struct *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nm; i++) {
        free(s->m[i].name);
        free(s->m[i].type);
    }
    for (size_t i = 0; i < s->ng; i++)
        free(s->g[i].name);
    free(s->m);
    free(s->g);
    free(s->name);
    free(s);
}

void lt_binary_close(struct lt_binary *b)
{
    struct dw *d = b->priv;
    if (d) {
        for (size_t i = 0; i < d->n; i++) {
            free(d->names[i].name);
            struct_free(d->names[i].loaded);
        }
        free(d->names);
        free(d->grouped);
        dwarf_end(d->dw);
        close(d->fd);
        free(d);
    }
    free(b->path);
    free(b->shown);
    free(b->layout);
    memset(b, 0, sizeof *b);
}

size_t lt_grouped_names(struct lt_binary *b, const char ***names)
{
    struct dw *d = b->priv;
    *names = d ? d->grouped : NULL;
    return d ? d->ngrouped : 0;
}

/* ---- types ---- */

static bool die_type(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Attribute a;
    return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, out);
}

/* The type without typedefs and qualifiers: what decides struct or not. */
static bool peel(Dwarf_Die *t, Dwarf_Die *out)
{
    *out = *t;
    for (int i = 0; i < 16; i++) {
        int tag = dwarf_tag(out);
        if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
            tag != DW_TAG_atomic_type && tag != DW_TAG_restrict_type)
            return true;
        if (!die_type(out, out))
            return false;
    }
    return false;
}

/* Append to the string buffer, truncating silently (names are for display). */
static void cat(char *buf, size_t n, const char *s)
{
    size_t l = strlen(buf);
    if (l + 1 < n)
        snprintf(buf + l, n - l, "%s", s);
}

static void type_name(Dwarf_Die *t, char *buf, size_t n, int depth);

static void array_dims(Dwarf_Die *arr, char *buf, size_t n)
{
    Dwarf_Die c;
    if (dwarf_child(arr, &c) != 0)
        return;
    do {
        if (dwarf_tag(&c) != DW_TAG_subrange_type)
            continue;
        Dwarf_Attribute a;
        Dwarf_Word v;
        char d[32] = "[]";
        if (dwarf_attr(&c, DW_AT_count, &a) && dwarf_formudata(&a, &v) == 0)
            snprintf(d, sizeof d, "[%llu]", (unsigned long long)v);
        else if (dwarf_attr(&c, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &v) == 0)
            snprintf(d, sizeof d, "[%llu]", (unsigned long long)v + 1);
        cat(buf, n, d);
    } while (dwarf_siblingof(&c, &c) == 0);
}

static void params(Dwarf_Die *fn, char *buf, size_t n, int depth)
{
    cat(buf, n, "(");
    Dwarf_Die c;
    bool first = true;
    if (dwarf_child(fn, &c) == 0) {
        do {
            int tag = dwarf_tag(&c);
            if (tag != DW_TAG_formal_parameter && tag != DW_TAG_unspecified_parameters)
                continue;
            if (!first)
                cat(buf, n, ", ");
            first = false;
            Dwarf_Die pt;
            if (tag == DW_TAG_unspecified_parameters || !die_type(&c, &pt)) {
                cat(buf, n, "...");
                continue;
            }
            char p[128] = "";
            type_name(&pt, p, sizeof p, depth + 1);
            cat(buf, n, p);
        } while (dwarf_siblingof(&c, &c) == 0);
    }
    cat(buf, n, first ? "void)" : ")");
}

static void type_name(Dwarf_Die *t, char *buf, size_t n, int depth)
{
    if (depth > 8) {
        cat(buf, n, "...");
        return;
    }
    const char *name = dwarf_diename(t);
    Dwarf_Die sub;
    bool has_sub = die_type(t, &sub);
    char inner[256] = "";
    switch (dwarf_tag(t)) {
    case DW_TAG_structure_type:
        cat(buf, n, "struct ");
        cat(buf, n, name ? name : "{...}");
        break;
    case DW_TAG_union_type:
        cat(buf, n, "union ");
        cat(buf, n, name ? name : "{...}");
        break;
    case DW_TAG_enumeration_type:
        cat(buf, n, "enum ");
        cat(buf, n, name ? name : "{...}");
        break;
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_atomic_type:
        cat(buf, n,
            dwarf_tag(t) == DW_TAG_const_type      ? "const "
            : dwarf_tag(t) == DW_TAG_volatile_type ? "volatile "
                                                   : "_Atomic ");
        if (has_sub)
            type_name(&sub, buf, n, depth + 1);
        else
            cat(buf, n, "void");
        break;
    case DW_TAG_restrict_type:
        if (has_sub)
            type_name(&sub, buf, n, depth + 1);
        break;
    case DW_TAG_pointer_type:
        if (has_sub && dwarf_tag(&sub) == DW_TAG_subroutine_type) {
            Dwarf_Die ret;
            if (die_type(&sub, &ret))
                type_name(&ret, inner, sizeof inner, depth + 1);
            else
                cat(inner, sizeof inner, "void");
            cat(inner, sizeof inner, " (*)");
            params(&sub, inner, sizeof inner, depth);
            cat(buf, n, inner);
        } else {
            if (has_sub)
                type_name(&sub, inner, sizeof inner, depth + 1);
            else
                cat(inner, sizeof inner, "void");
            cat(buf, n, inner);
            cat(buf, n, inner[strlen(inner) - 1] == '*' ? "*" : " *");
        }
        break;
    case DW_TAG_array_type:
        if (has_sub)
            type_name(&sub, buf, n, depth + 1);
        array_dims(t, buf, n);
        break;
    case DW_TAG_subroutine_type:
        if (has_sub)
            type_name(&sub, buf, n, depth + 1);
        else
            cat(buf, n, "void");
        params(t, buf, n, depth);
        break;
    default: /* base types, typedefs */
        cat(buf, n, name ? name : "?");
        break;
    }
}

static unsigned type_align(Dwarf_Die *t, int depth)
{
    Dwarf_Attribute a;
    Dwarf_Word v;
    if (dwarf_attr(t, DW_AT_alignment, &a) && dwarf_formudata(&a, &v) == 0 && v > 0)
        return (unsigned)v;
    if (depth > 16)
        return 1;
    Dwarf_Die sub;
    switch (dwarf_tag(t)) {
    case DW_TAG_typedef:
    case DW_TAG_const_type:
    case DW_TAG_volatile_type:
    case DW_TAG_atomic_type:
    case DW_TAG_restrict_type:
    case DW_TAG_array_type:
        return die_type(t, &sub) ? type_align(&sub, depth + 1) : 1;
    case DW_TAG_structure_type:
    case DW_TAG_union_type: {
        unsigned al = 1;
        Dwarf_Die c;
        if (dwarf_child(t, &c) == 0) {
            do {
                if (dwarf_tag(&c) == DW_TAG_member && die_type(&c, &sub)) {
                    unsigned m = type_align(&sub, depth + 1);
                    if (m > al)
                        al = m;
                }
            } while (dwarf_siblingof(&c, &c) == 0);
        }
        return al;
    }
    default: {
        Dwarf_Word size;
        if (dwarf_aggregate_size(t, &size) != 0 || size == 0)
            return 1;
        return size >= 16 ? 16 : size >= 8 ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
    }
    }
}

/* ---- members ---- */

static int push_member(struct lt_struct *s, size_t *cap, struct lt_member *m)
{
    if (tool_grow(&s->m, cap, s->nm, sizeof *s->m, 32) < 0)
        return -ENOMEM;
    s->m[s->nm++] = *m;
    return 0;
}

static uint64_t member_offset(Dwarf_Die *m)
{
    Dwarf_Attribute a;
    Dwarf_Word v = 0;
    if (dwarf_attr(m, DW_AT_data_member_location, &a)) {
        if (dwarf_formudata(&a, &v) == 0)
            return v;
        /* An old-style location expression: DW_OP_plus_uconst N. */
        Dwarf_Op *ops;
        size_t nops;
        if (dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 &&
            ops[0].atom == DW_OP_plus_uconst)
            return ops[0].number;
        return 0;
    }
    if (dwarf_attr(m, DW_AT_data_bit_offset, &a) && dwarf_formudata(&a, &v) == 0)
        return v / 8; /* a bit-field: the byte it starts in */
    return 0;         /* union members */
}

static int add_members(struct lt_struct *s, size_t *cap, Dwarf_Die *agg, const char *prefix,
                       uint64_t base, int depth, int top)
{
    Dwarf_Die c;
    if (dwarf_child(agg, &c) != 0)
        return 0;
    do {
        if (dwarf_tag(&c) != DW_TAG_member)
            continue;
        const char *n = dwarf_diename(&c);
        Dwarf_Die t, p;
        bool has_t = die_type(&c, &t);
        struct lt_member m = {.off = base + member_offset(&c), .depth = depth, .group = -1};
        char nb[512], tb[256] = "";
        snprintf(nb, sizeof nb, "%s%s", prefix, n ? n : "(anonymous)");
        if (has_t) {
            Dwarf_Word size = 0;
            Dwarf_Attribute a;
            Dwarf_Word bits;
            if (dwarf_attr(&c, DW_AT_bit_size, &a) && dwarf_formudata(&a, &bits) == 0)
                size = (bits + 7) / 8;
            else if (dwarf_aggregate_size(&t, &size) != 0)
                size = 0; /* a flexible array member */
            m.size = size;
            type_name(&t, tb, sizeof tb, 0);
            m.align = type_align(&t, 0);
        } else {
            snprintf(tb, sizeof tb, "?");
            m.align = 1;
        }
        m.marker = depth == 0 && n &&
                   (strncmp(n, GROUP_BEGIN, strlen(GROUP_BEGIN)) == 0 ||
                    strncmp(n, GROUP_END, strlen(GROUP_END)) == 0);
        m.name = strdup(nb);
        m.type = strdup(tb);
        if (!m.name || !m.type) {
            free(m.name);
            free(m.type);
            return -ENOMEM;
        }
        m.top = depth == 0 ? (int)s->nm : top;
        int idx = (int)s->nm;
        int rc = push_member(s, cap, &m);
        if (rc < 0)
            return rc;
        if (has_t && peel(&t, &p) &&
            (dwarf_tag(&p) == DW_TAG_structure_type || dwarf_tag(&p) == DW_TAG_union_type) &&
            depth + 1 < MAX_DEPTH) {
            /* Members of an anonymous struct or union are named as the
             * parent's, as C accesses them. */
            char pre[512];
            if (n)
                snprintf(pre, sizeof pre, "%s%s.", prefix, n);
            else
                snprintf(pre, sizeof pre, "%s", prefix);
            rc = add_members(s, cap, &p, pre, m.off, depth + 1, depth == 0 ? idx : top);
            if (rc < 0)
                return rc;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return 0;
}

/* The groups from their markers, and each top-level member's group. */
static int find_groups(struct lt_struct *s)
{
    for (size_t i = 0; i < s->nm; i++) {
        struct lt_member *m = &s->m[i];
        if (!m->marker || strncmp(m->name, GROUP_BEGIN, strlen(GROUP_BEGIN)) != 0)
            continue;
        const char *g = m->name + strlen(GROUP_BEGIN);
        char end[300];
        snprintf(end, sizeof end, GROUP_END "%s", g);
        const struct lt_member *e = lt_member_find(s, end);
        struct lt_group *v = realloc(s->g, (s->ng + 1) * sizeof *v);
        if (!v)
            return -ENOMEM;
        s->g = v;
        v[s->ng].name = strdup(g);
        if (!v[s->ng].name)
            return -ENOMEM;
        v[s->ng].begin = m->off;
        v[s->ng].end = e ? e->off : m->off; /* an unterminated group is empty */
        s->ng++;
    }
    for (size_t i = 0; i < s->nm; i++) {
        struct lt_member *m = &s->m[i];
        if (m->depth != 0 || m->marker)
            continue;
        for (size_t g = 0; g < s->ng; g++) {
            uint64_t end = m->off + (m->size ? m->size : 1);
            if (m->off >= s->g[g].begin && end <= s->g[g].end) {
                m->group = (int)g;
                break;
            }
        }
    }
    return 0;
}

const struct lt_struct *lt_struct_get(struct lt_binary *b, const char *name)
{
    struct dw *d = b->priv;
    if (!d)
        return NULL;
    struct name_ent *e = name_lookup(d, name);
    if (!e)
        return NULL;
    if (e->loaded)
        return e->loaded;
    Dwarf_Die die;
    if (!dwarf_offdie(d->dw, e->die, &die))
        return NULL;
    struct lt_struct *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->name = strdup(name);
    s->size = e->size;
    s->ndefs = e->ndefs;
    s->align = type_align(&die, 0);
    size_t cap = 0;
    if (!s->name || add_members(s, &cap, &die, "", 0, 0, 0) < 0 || find_groups(s) < 0) {
        struct_free(s);
        return NULL;
    }
    e->loaded = s;
    return s;
}

#else /* no libdw */

bool lt_have_libdw(void)
{
    return false;
}

int lt_binary_open(struct lt_binary *b, const char *path, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    snprintf(err, errlen,
             "this hotpath was built without libdw, so it cannot read '%s': install libdw-dev and "
             "rebuild",
             path);
    return -ENOSYS;
}

void lt_binary_close(struct lt_binary *b)
{
    free(b->path);
    free(b->shown);
    free(b->layout);
    memset(b, 0, sizeof *b);
}

const struct lt_struct *lt_struct_get(struct lt_binary *b, const char *name)
{
    (void)b;
    (void)name;
    return NULL;
}

size_t lt_grouped_names(struct lt_binary *b, const char ***names)
{
    (void)b;
    *names = NULL;
    return 0;
}

#endif

/* ---- lookups on loaded structures (no libdw needed) ---- */

const struct lt_member *lt_member_find(const struct lt_struct *s, const char *name)
{
    char n[512];
    size_t j = 0;
    /* "tag[5]" names the member tag; drop subscripts and spaces. */
    for (const char *p = name; *p && j + 1 < sizeof n; p++) {
        if (*p == '[') {
            while (*p && *p != ']')
                p++;
            if (!*p)
                break;
            continue;
        }
        if (*p != ' ' && *p != '`')
            n[j++] = *p;
    }
    n[j] = 0;
    for (size_t i = 0; i < s->nm; i++)
        if (strcmp(s->m[i].name, n) == 0)
            return &s->m[i];
    return NULL;
}

const struct lt_group *lt_group_find(const struct lt_struct *s, const char *name)
{
    for (size_t i = 0; i < s->ng; i++)
        if (strcmp(s->g[i].name, name) == 0)
            return &s->g[i];
    return NULL;
}
