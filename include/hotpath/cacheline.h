/* SPDX-License-Identifier: BSD-3-Clause */
/* Cache-line groups for hot structures: markers inside a struct and compile-time checks on them. */
#ifndef HOTPATH_CACHELINE_H
#define HOTPATH_CACHELINE_H

#include <stddef.h>

#define HP_CACHELINE_SIZE 64

/*
 * A group is the run of fields between HP_CACHELINE_GROUP_BEGIN(g) and
 * HP_CACHELINE_GROUP_END(g) inside a struct: the fields one fast path reads
 * or writes together, kept in as few cache lines as possible. The markers are
 * zero-sized (a GNU C extension that gcc and clang accept without a pedantic
 * warning under __extension__) and take no space.
 *
 * The checks below are static assertions: a field moved out of its group or
 * a group grown past its budget fails the build, not a benchmark.
 */
#define HP_CACHELINE_GROUP_BEGIN(g) __extension__ unsigned char hp__group_begin_##g[0];
#define HP_CACHELINE_GROUP_END(g)   __extension__ unsigned char hp__group_end_##g[0];

#define HP__GROUP_BEGIN_OFF(T, g) offsetof(T, hp__group_begin_##g)
#define HP__GROUP_END_OFF(T, g)   offsetof(T, hp__group_end_##g)

/** Field m of struct type T lies entirely inside group g. */
#define HP_CACHELINE_ASSERT_GROUP_MEMBER(T, g, m)                                                  \
    _Static_assert(offsetof(T, m) >= HP__GROUP_BEGIN_OFF(T, g) &&                                  \
                       offsetof(T, m) + sizeof(((T *)0)->m) <= HP__GROUP_END_OFF(T, g),            \
                   #T "." #m " is not in cache-line group " #g)

/** Group g of T spans at most size bytes. */
#define HP_CACHELINE_ASSERT_GROUP_SIZE(T, g, size)                                                 \
    _Static_assert(HP__GROUP_END_OFF(T, g) - HP__GROUP_BEGIN_OFF(T, g) <= (size),                  \
                   "cache-line group " #g " of " #T " is larger than " #size " bytes")

/** Group g of T (a cache-line aligned type) touches at most n cache lines. */
#define HP_CACHELINE_ASSERT_GROUP_LINES(T, g, n)                                                   \
    _Static_assert(HP__GROUP_END_OFF(T, g) == HP__GROUP_BEGIN_OFF(T, g) ||                         \
                       (HP__GROUP_END_OFF(T, g) - 1) / HP_CACHELINE_SIZE -                         \
                               HP__GROUP_BEGIN_OFF(T, g) / HP_CACHELINE_SIZE + 1 <=                \
                           (n),                                                                    \
                   "cache-line group " #g " of " #T " spans more than " #n " lines")

#endif
