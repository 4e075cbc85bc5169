/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath layout: the structures read from a binary's DWARF, the docs/cachelines check and the field profile, shared by layout*.c. */
#ifndef HOTPATH_TOOL_LAYOUT_H
#define HOTPATH_TOOL_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define LT_LINE 64 /* HP_CACHELINE_SIZE; lines are counted from the structure's start */

/* ---- structures from DWARF (layout_dwarf.c) ---- */

/*
 * One member, flattened: the top-level members (depth 0) in declaration
 * order, each followed by the members of the structs and unions it embeds
 * (depth 1, 2...), named with dots like C designators ("rtt.rto_us").
 * Offsets are from the start of the outermost structure.
 */
struct lt_member {
    char *name;
    char *type; /* C spelling: "uint32_t", "struct hp__timer", "uint8_t[16]" */
    uint64_t off, size;
    unsigned align; /* alignment of the type, for the proposed order */
    int depth;
    int top;     /* index of the depth-0 member this one is part of (itself at depth 0) */
    int group;   /* top level: index in lt_struct.g of the group holding it, or -1 */
    bool marker; /* hp__group_begin_* / hp__group_end_* (zero-sized, no data) */
};

/* A cache-line group: the bytes between hp__group_begin_<name> and hp__group_end_<name>. */
struct lt_group {
    char *name;
    uint64_t begin, end;
};

struct lt_struct {
    char *name;
    uint64_t size;
    unsigned align;
    unsigned ndefs; /* distinct definitions of the name in the binary (1 but for generic names) */
    struct lt_member *m;
    size_t nm;
    struct lt_group *g;
    size_t ng;
};

struct lt_binary {
    char *path;  /* as given */
    char *shown; /* for tables: a path relative to the source tree when inside it */
    char *layout; /* "grouped" or "chrono" (from hp_tcp_sock's DWARF, see layout.c), "-" without it */
    void *priv;   /* the DWARF reader's state */
};

/* Whether this build reads DWARF at all (libdw found at configure time). */
bool lt_have_libdw(void);
/* Open a binary's DWARF and index its structure names. 0, or -errno with
 * a message in err (no file, not ELF, no DWARF, built without libdw: -ENOSYS). */
int lt_binary_open(struct lt_binary *b, const char *path, char *err, size_t errlen);
void lt_binary_close(struct lt_binary *b);
/* The structure `name` (without "struct "), loaded on first use; NULL when
 * the binary defines none. The first definition found wins (ndefs says
 * whether others differ). */
const struct lt_struct *lt_struct_get(struct lt_binary *b, const char *name);
/* Names of the structures with hp__group_begin_* members, in the order first seen. */
size_t lt_grouped_names(struct lt_binary *b, const char ***names);

/* A member by designator ("key", "rtt.rto_us", "tag[5]" is "tag"); NULL if none. */
const struct lt_member *lt_member_find(const struct lt_struct *s, const char *name);
/* A group by name; NULL if none. */
const struct lt_group *lt_group_find(const struct lt_struct *s, const char *name);

/* ---- line sets ---- */

/* A set of cache lines of one structure (at most LT_MAX_LINES). */
#define LT_MAX_LINES 256
struct lt_lines {
    uint64_t w[LT_MAX_LINES / 64];
};
void lt_lines_add(struct lt_lines *l, uint64_t off, uint64_t size);
unsigned lt_lines_count(const struct lt_lines *l);
bool lt_lines_has(const struct lt_lines *l, unsigned line);
/* "0, 2-8" into buf. */
const char *lt_lines_fmt(const struct lt_lines *l, char *buf, size_t n);
/* The lines as a JSON array of numbers. */
json_t *lt_lines_json(const struct lt_lines *l);
/* The lines of [off, off + size) as "3" or "2-4"; "-" for size 0. */
const char *lt_range_fmt(uint64_t off, uint64_t size, char *buf, size_t n);

/* ---- the fast-path field lists (src/sock/tcp_layout.h, compiled in) ---- */
enum { LT_RX, LT_TX, LT_OTHER, LT_NPATHS };
extern const char *const lt_path_name[LT_NPATHS];           /* "RX", "TX", "other" */
size_t lt_path_fields(int path, const char *const **names); /* RX or TX of hp_tcp_sock */

/* ---- messages collected for the table and --json ---- */
struct lt_msgs {
    char **v;
    size_t n, cap;
};
void lt_msg_add(struct lt_msgs *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lt_msgs_free(struct lt_msgs *m);
/* The messages as a JSON array of strings. */
json_t *lt_json_msgs(const struct lt_msgs *m);

/* ---- docs/cachelines (layout_docs.c) ---- */

/* Field access as a docs table or a profile gives it. */
enum lt_access { LT_NONE = 0, LT_READ = 1, LT_WRITE = 2 };

/* One field's access on RX and TX, as a byte range of the structure. */
struct lt_access_span {
    char *name;
    uint64_t off, size;
    int top;               /* index of its top-level member */
    enum lt_access acc[2]; /* LT_RX, LT_TX */
};
struct lt_access_map {
    char *source; /* "docs/cachelines/hp_buf.md" or the profile file */
    struct lt_access_span *v;
    size_t n, cap;
};
void lt_access_map_free(struct lt_access_map *a);

/*
 * Check every table of the .md files of dir against the binaries (the grouped one for
 * groups and offsets, the chrono one for the offsets in brackets).
 * Mismatches go to bad, notes (what could not be checked) to notes.
 * @return 0, or -errno when dir cannot be read.
 */
int lt_docs_check(const char *dir, struct lt_binary *bins, size_t nbins, struct lt_msgs *bad,
                  struct lt_msgs *notes, int *tables_checked);
/* The RX / TX access of struct `sname` from its docs table (dir/<sname>.md,
 * or any file with a `struct sname` section), resolved against s. 0, or
 * -ENOENT when no table describes it. */
int lt_docs_access(const char *dir, const struct lt_struct *s, struct lt_access_map *out);

/* ---- sharing warnings (layout.c) ---- */
/* Lines where a field written on one path sits beside read-mostly fields another path reads. */
void lt_false_sharing(const struct lt_struct *s, const char *where, const struct lt_access_map *a,
                      struct lt_msgs *out);

/* ---- the field profile (layout_prof.c) ---- */

struct lt_prof_rec {
    uint32_t off, size;
    int path;
    uint64_t reads, writes;
};
struct lt_profile {
    char *file;
    char *binary;
    char *sname;
    uint64_t size;
    uint64_t blocks, lost;
    uint64_t entries[LT_NPATHS];
    struct lt_prof_rec *r;
    size_t n, cap;
};
/* Read a profile written by an HP_FIELD_PROFILE build. 0, or -errno with err set. */
int lt_profile_read(const char *file, struct lt_profile *p, char *err, size_t errlen);
void lt_profile_free(struct lt_profile *p);
/*
 * Per-member counts, classes, the proposed order and the lines per path
 * before and after: as a table on f (json false, returns NULL) or as a
 * JSON object (returned, the caller's). `hot` is the accesses per path
 * entry below which a field counts as not on the path. Access per field
 * goes to acc (for the sharing warnings).
 */
json_t *lt_profile_report(FILE *f, bool json, const struct lt_profile *p, const struct lt_struct *s,
                          double hot, struct lt_access_map *acc, struct lt_msgs *warn);

#endif
