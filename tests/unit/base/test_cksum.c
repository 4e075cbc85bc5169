/* SPDX-License-Identifier: BSD-3-Clause */
/* Raw checksum tests: variants vs an RFC 1071 reference, iovecs, RFC 1624 updates, selection. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <hotpath/cksum.h>
#include <hotpath/cpu.h>

#include "base/internal.h"
#include "hp_test.h"

/*
 * How results are compared
 *
 * A partial sum is only defined mod 0xFFFF, so a result is compared with the
 * reference through hp_cksum_fold. That comparison is exact, not loose: for
 * x != 0, hp_cksum_fold(x) is ~r where r is the one value in [1, 0xFFFF]
 * congruent to x mod 0xFFFF, so two nonzero sums fold equal exactly when they
 * are congruent. The one exception is 0: it folds to 0xFFFF while every
 * nonzero multiple of 0xFFFF folds to 0x0000. The reference sum (a plain
 * 64-bit integer sum) is 0 exactly when the incoming sum and every byte are 0;
 * one's complement addition (end-around carry) of terms that are not all zero
 * never gives 0, so a correct variant returns 0 in exactly the same cases.
 * Hence "folds equal" means "congruent mod 0xFFFF, and zero exactly when the
 * data and incoming sum are all zero", which is what hp_cksum's choice between
 * 0x0000 and 0xFFFF and the verify functions depend on.
 */

/* ---- reference ----------------------------------------------------------- */

/* What byte b at position pos of the data adds to the sum: RFC 1071 pairs
 * bytes (2i, 2i+1) into a 16-bit word as it sits in memory, so on a
 * little-endian host the even-position byte is the low half. An odd last
 * byte is thus the low-address byte of a zero-padded word. */
static uint64_t ref_byte(unsigned char b, size_t pos)
{
#if HP_BIG_ENDIAN
    return (pos & 1) ? b : (uint64_t)b << 8;
#else
    return (pos & 1) ? (uint64_t)b << 8 : b;
#endif
}

/* Byte-at-a-time sum of buf[0..len), whose first byte sits at position pos0
 * of the whole data, added to acc with 64-bit accumulation (no carry is ever
 * lost below 2^48 bytes). */
static uint64_t ref_sum(const void *buf, size_t len, uint64_t acc, size_t pos0)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        acc += ref_byte(p[i], pos0 + i);
    return acc;
}

/* The reference sum of len bytes all equal to v: the byte loop in closed form. */
static uint64_t ref_fill(unsigned char v, size_t len, uint64_t acc)
{
    return acc + ref_byte(v, 0) * ((len + 1) / 2) + ref_byte(v, 1) * (len / 2);
}

/* hp_cksum_fold, written independently, for a 64-bit sum. */
static uint16_t ref_fold(uint64_t acc)
{
    while (acc >> 16)
        acc = (acc & 0xFFFF) + (acc >> 16);
    return (uint16_t)~acc;
}

/* ---- helpers ------------------------------------------------------------- */

/* The 16-bit value of bytes a, b as they sit in memory (network order a, b). */
static uint16_t mem16(unsigned char a, unsigned char b)
{
    const unsigned char t[2] = {a, b};
    return hp_test_load16(t);
}

static void fill_random(unsigned char *p, size_t n, uint64_t *rs)
{
    while (n) {
        uint64_t r = hp_test_rand(rs);
        size_t k = n < 8 ? n : 8;
        memcpy(p, &r, k);
        p += k;
        n -= k;
    }
}

/* A random incoming partial sum, often one of the values at carry edges. */
static uint32_t pick_sum(uint64_t *rs)
{
    static const uint32_t edges[] = {1,          0xFFFE,     0xFFFF,     0x10000,    0x1FFFE,
                                     0x7FFFFFFF, 0x80000000, 0xFFFF0000, 0xFFFFFFFE, 0xFFFFFFFF};
    uint64_t r = hp_test_rand(rs);
    uint32_t s =
        (r & 3) == 0 ? edges[(r >> 8) % (sizeof edges / sizeof edges[0])] : (uint32_t)(r >> 32);
    return s ? s : 1;
}

/* Copy len bytes to a fresh heap block at offset off from a 64-byte boundary,
 * the block ending right after the data, so that under ASan any read past
 * the end is reported. Free the returned block (not the data pointer). */
static unsigned char *place(const void *src, size_t len, size_t off)
{
    void *blk = NULL;
    if (posix_memalign(&blk, 64, off + len ? off + len : 1) != 0)
        return NULL;
    if (len)
        memcpy((unsigned char *)blk + off, src, len);
    return blk;
}

/* Compare one result with the reference; on a mismatch report everything
 * needed to reproduce it and return false. */
static bool check_sum(int line, const char *what, size_t len, size_t off, uint32_t in, uint32_t got,
                      uint64_t ref)
{
    if (hp_cksum_fold(got) == ref_fold(ref))
        return true;
    hp_test_fail(__FILE__, line,
                 "%s: len %zu, offset %zu (mod 64), incoming sum 0x%08" PRIx32
                 ": got partial 0x%08" PRIx32 " folding to 0x%04x, reference sum 0x%" PRIx64
                 " folds to 0x%04x",
                 what, len, off, in, got, hp_cksum_fold(got), ref, ref_fold(ref));
    return false;
}

/* ---- the subjects: each variant, and the dispatched public function ------ */

/* The variant called name, or NULL with the reason for skipping in why. */
static hp__cksum_fn find_variant(const char *name, char *why, size_t whylen)
{
    int n = 0;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    for (int i = 0; i < n; i++) {
        if (strcmp(v[i].name, name) != 0)
            continue;
        if (!hp_cksum_impl_supported(name)) {
            snprintf(why, whylen,
                     "variant %s NOT TESTED: this CPU lacks its features "
                     "(needs HP_CPU_* 0x%" PRIx32 ", has 0x%" PRIx32 ")",
                     name, v[i].needs, hp_cpu_features());
            return NULL;
        }
        return v[i].fn;
    }
    snprintf(why, whylen, "variant %s NOT TESTED: not in this build", name);
    return NULL;
}

/* ---- every length 0..2048 at every offset 0..63 --------------------------- */

#define SWEEP_LEN 2048
#define SWEEP_OFF 64

static void sweep(const char *what, hp__cksum_fn fn)
{
    uint64_t rs = hp_test_seed() ^ 0x5357454550ull;
    unsigned char src[SWEEP_LEN];
    bool public_fn = fn == hp_cksum_partial;

    /* NULL is allowed with length 0. */
    if (!check_sum(__LINE__, what, 0, 0, 0, fn(NULL, 0, 0), 0) ||
        !check_sum(__LINE__, what, 0, 0, 0x12345, fn(NULL, 0, 0x12345), 0x12345))
        return;
    for (size_t off = 0; off < SWEEP_OFF; off++) {
        fill_random(src, sizeof src, &rs);
        uint64_t ref = 0; /* reference sum of src[0..len), grown a byte at a time */
        for (size_t len = 0; len <= SWEEP_LEN; len++) {
            if (len)
                ref += ref_byte(src[len - 1], len - 1);
            unsigned char *blk = place(src, len, off);
            HP_REQUIRE(blk != NULL);
            const unsigned char *p = blk + off;
            uint32_t in = pick_sum(&rs);
            uint32_t got0 = fn(p, len, 0), got1 = fn(p, len, in);
            uint16_t whole = public_fn ? hp_cksum(p, len) : 0;
            free(blk);
            if (!check_sum(__LINE__, what, len, off, 0, got0, ref) ||
                !check_sum(__LINE__, what, len, off, in, got1, ref + in))
                return;
            if (public_fn && whole != ref_fold(ref)) {
                hp_test_fail(__FILE__, __LINE__,
                             "hp_cksum: len %zu offset %zu: got 0x%04x, want 0x%04x", len, off,
                             whole, ref_fold(ref));
                return;
            }
        }
    }
}

/* ---- long buffers: past 64 KiB and the vector code's per-round limits ----- */

/* The AVX2 variant sums at most 16384 vectors of 32 B (512 KiB) per round,
 * the AVX-512 one 16384 of 64 B (1 MiB); lengths around multiples of both. */
#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
static const size_t large_fixed[] = {
    64 * KIB - 1,   64 * KIB,       64 * KIB + 1,   512 * KIB - 1,  512 * KIB,
    512 * KIB + 1,  512 * KIB + 31, 512 * KIB + 32, 512 * KIB + 33, 512 * KIB + 63,
    512 * KIB + 64, 512 * KIB + 65, 1 * MIB - 1,    1 * MIB,        1 * MIB + 1,
    1 * MIB + 63,   1 * MIB + 64,   1 * MIB + 65,   1536 * KIB + 7, 2 * MIB + 33,
};
#define LARGE_RANDOM 48
#define LARGE_NCASES (sizeof large_fixed / sizeof large_fixed[0] + LARGE_RANDOM)
#define LARGE_SRC    (2 * MIB + 64)

struct large_case {
    size_t len, off;
};

static void large(const char *what, hp__cksum_fn fn)
{
    uint64_t rs = hp_test_seed() ^ 0x4C41524745ull;
    struct large_case cases[LARGE_NCASES];
    size_t n = 0;
    for (size_t i = 0; i < sizeof large_fixed / sizeof large_fixed[0]; i++)
        cases[n++] = (struct large_case){large_fixed[i], hp_test_rand(&rs) % 64};
    while (n < LARGE_NCASES) {
        uint64_t r = hp_test_rand(&rs);
        cases[n++] = (struct large_case){(size_t)(r >> 20) % (MIB + 1), r % 64};
    }
    /* Sort by length so one pass over src yields every reference sum. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cases[j - 1].len > cases[j].len; j--) {
            struct large_case t = cases[j];
            cases[j] = cases[j - 1];
            cases[j - 1] = t;
        }

    unsigned char *src = malloc(LARGE_SRC);
    HP_REQUIRE(src != NULL);
    fill_random(src, LARGE_SRC, &rs);
    uint64_t ref = 0;
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = cases[i].len, off = cases[i].off;
        ref = ref_sum(src + done, len - done, ref, done);
        done = len;
        unsigned char *blk = place(src, len, off);
        if (!blk)
            break;
        uint32_t in = pick_sum(&rs);
        uint32_t got0 = fn(blk + off, len, 0), got1 = fn(blk + off, len, in);
        free(blk);
        if (!check_sum(__LINE__, what, len, off, 0, got0, ref) ||
            !check_sum(__LINE__, what, len, off, in, got1, ref + in))
            break;
    }
    free(src);
}

/* ---- all-0xFF and all-0x00 data: the carry paths -------------------------- */

#define FILL_SMALL 1100
#define FILL_BUF   (16 * MIB + 33)
static const size_t fill_big[] = {
    64 * KIB - 1,  64 * KIB,       64 * KIB + 1, 512 * KIB - 1, 512 * KIB,
    512 * KIB + 1, 512 * KIB + 32, 1 * MIB - 1,  1 * MIB,       1 * MIB + 1,
    2 * MIB,       2 * MIB + 33,   16 * MIB,     16 * MIB + 33,
};

/* One fill length; the data ends at the end of buf (so an over-read is
 * caught by ASan) and starts at whatever alignment that gives. */
static bool fill_case(const char *what, hp__cksum_fn fn, const unsigned char *buf, unsigned char v,
                      size_t len, uint32_t in)
{
    const unsigned char *p = buf + FILL_BUF - len;
    size_t off = (size_t)((uintptr_t)p % 64);
    char label[64];
    snprintf(label, sizeof label, "%s, all 0x%02x", what, v);
    uint32_t got0 = fn(p, len, 0);
    if (!check_sum(__LINE__, label, len, off, 0, got0, ref_fill(v, len, 0)) ||
        !check_sum(__LINE__, label, len, off, in, fn(p, len, in), ref_fill(v, len, in)))
        return false;
    /* The same, from first principles rather than through the reference:
     * zeros sum to +0 (checksum 0xFFFF); an even number of 0xFF bytes sums
     * to -0 (checksum 0x0000); an odd one leaves the word {0xFF, 0x00}. */
    uint16_t want = v == 0 || len == 0 ? 0xFFFF : len % 2 == 0 ? 0x0000 : (uint16_t)~mem16(0xFF, 0);
    if (hp_cksum_fold(got0) != want) {
        hp_test_fail(__FILE__, __LINE__, "%s: len %zu: checksum 0x%04x, want 0x%04x", label, len,
                     hp_cksum_fold(got0), want);
        return false;
    }
    return true;
}

static void fill(const char *what, hp__cksum_fn fn)
{
    uint64_t rs = hp_test_seed() ^ 0x46494C4Cull;
    unsigned char *buf = malloc(FILL_BUF);
    HP_REQUIRE(buf != NULL);
    static const unsigned char values[] = {0xFF, 0x00};
    for (size_t k = 0; k < sizeof values; k++) {
        memset(buf, values[k], FILL_BUF);
        for (size_t len = 0; len <= FILL_SMALL; len++)
            if (!fill_case(what, fn, buf, values[k], len, pick_sum(&rs)))
                goto out;
        for (size_t i = 0; i < sizeof fill_big / sizeof fill_big[0]; i++)
            if (!fill_case(what, fn, buf, values[k], fill_big[i], pick_sum(&rs)))
                goto out;
    }
out:
    free(buf);
}

/* ---- data next to unmapped pages ------------------------------------------ */

#define GUARD_LEN 4096

struct guarded {
    unsigned char *map, *lo, *hi; /* [lo, hi) is readable; the pages around it are not */
    size_t maplen;
};

static bool guarded_map(struct guarded *g, uint64_t *rs)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0)
        return false;
    size_t page = (size_t)pg, data = (GUARD_LEN + page - 1) / page * page;
    g->maplen = data + 2 * page;
    void *m = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return false;
    g->map = m;
    g->lo = g->map + page;
    g->hi = g->lo + data;
    fill_random(g->lo, data, rs);
    if (mprotect(g->map, page, PROT_NONE) == 0 && mprotect(g->hi, page, PROT_NONE) == 0)
        return true;
    munmap(g->map, g->maplen);
    return false;
}

/* Every length 0..4096 ending exactly at the unmapped page after the data
 * (so the start takes every alignment mod 64), and every length starting
 * exactly after the unmapped page before it. A read outside faults. */
static void guard(const char *what, hp__cksum_fn fn)
{
    uint64_t rs = hp_test_seed() ^ 0x4755415244ull;
    struct guarded g;
    HP_REQUIRE(guarded_map(&g, &rs));
    char label[64];
    for (size_t len = 0; len <= GUARD_LEN; len++) {
        const unsigned char *tail = g.hi - len, *head = g.lo;
        uint32_t in = pick_sum(&rs);
        uint64_t rt = ref_sum(tail, len, 0, 0), rh = ref_sum(head, len, 0, 0);
        snprintf(label, sizeof label, "%s, ending at a guard page", what);
        if (!check_sum(__LINE__, label, len, (uintptr_t)tail % 64, 0, fn(tail, len, 0), rt) ||
            !check_sum(__LINE__, label, len, (uintptr_t)tail % 64, in, fn(tail, len, in), rt + in))
            break;
        snprintf(label, sizeof label, "%s, starting at a guard page", what);
        if (!check_sum(__LINE__, label, len, 0, 0, fn(head, len, 0), rh) ||
            !check_sum(__LINE__, label, len, 0, in, fn(head, len, in), rh + in))
            break;
        if (fn == hp_cksum_partial) {
            /* The scatter-gather sum over both edges: head then tail. */
            size_t a = len / 3;
            struct iovec iov[2] = {{(void *)head, a}, {(void *)(g.hi - (len - a)), len - a}};
            uint64_t r = ref_sum(g.hi - (len - a), len - a, ref_sum(head, a, in, 0), a);
            if (!check_sum(__LINE__, "hp_cksum_partial_iov at guard pages", len, a, in,
                           hp_cksum_partial_iov(iov, 2, in), r))
                break;
        }
    }
    munmap(g.map, g.maplen);
}

/* ---- one test per variant and aspect ---------------------------------------- */

#define VARIANT_TEST(test, vname, body)                                                            \
    HP_TEST(test)                                                                                  \
    {                                                                                              \
        char why_[200];                                                                            \
        hp__cksum_fn fn_ = find_variant(vname, why_, sizeof why_);                                 \
        if (!fn_)                                                                                  \
            HP_SKIP("%s", why_);                                                                   \
        body("variant " vname, fn_);                                                               \
    }

#define VARIANT_TESTS(v)                                                                           \
    VARIANT_TEST(variant_##v, #v, sweep)                                                           \
    VARIANT_TEST(variant_##v##_large, #v, large)                                                   \
    VARIANT_TEST(variant_##v##_fill, #v, fill)                                                     \
    VARIANT_TEST(variant_##v##_guard, #v, guard)

VARIANT_TESTS(scalar)
#ifdef HP_ARCH_X86
VARIANT_TESTS(avx2)
VARIANT_TESTS(avx512)
#endif
#ifdef HP_ARCH_ARM64
VARIANT_TESTS(neon)
#endif

/* The public hp_cksum_partial: short inputs summed inline, longer ones by
 * whichever variant is in use (the best one, unless HP_CKSUM_IMPL says
 * otherwise). */
#define DISPATCHED_TEST(test, body)                                                                \
    HP_TEST(test)                                                                                  \
    {                                                                                              \
        char what_[64];                                                                            \
        snprintf(what_, sizeof what_, "hp_cksum_partial (using %s)", hp_cksum_impl());             \
        body(what_, hp_cksum_partial);                                                             \
    }

DISPATCHED_TEST(dispatched, sweep)
DISPATCHED_TEST(dispatched_large, large)
DISPATCHED_TEST(dispatched_fill, fill)
DISPATCHED_TEST(dispatched_guard, guard)

/* ---- the fused copies: the tests above, through a copy ------------------------ */

/* The copy under test. via_copy is a sum function for the tests above: it
 * copies the bytes into a block of its own, at another alignment each
 * call, between guard bytes, checks the copy and the guards, and returns
 * the copy's sum, which the tests then check as any variant's. */
static hp__cksum_copy_fn copy_fn;
static size_t copy_calls;
static bool copy_failed;

#define COPY_GUARD 64
#define COPY_FILL  0xA5

static uint32_t via_copy(const void *buf, size_t len, uint32_t sum)
{
    size_t off = (copy_calls++ * 13) % 64, n = COPY_GUARD + off + len + COPY_GUARD;
    unsigned char *blk = malloc(n);
    if (!blk) {
        hp_test_fail(__FILE__, __LINE__, "out of memory for a copy of %zu bytes", len);
        return 0;
    }
    memset(blk, COPY_FILL, n);
    unsigned char *d = blk + COPY_GUARD + off;
    uint32_t r = copy_fn(d, buf, len, sum);
    bool good = len == 0 || memcmp(d, buf, len) == 0;
    for (size_t i = 0; i < COPY_GUARD + off; i++)
        good &= blk[i] == COPY_FILL;
    for (size_t i = 0; i < COPY_GUARD; i++)
        good &= d[len + i] == COPY_FILL;
    if (!good && !copy_failed) {
        copy_failed = true; /* once: the sweeps call this a million times */
        hp_test_fail(__FILE__, __LINE__,
                     "copy of %zu bytes to offset %zu (mod 64) of its block: the copy differs "
                     "from the source or a byte around it changed",
                     len, (size_t)((uintptr_t)d % 64));
    }
    free(blk);
    return r;
}

#ifdef HP_ARCH_X86 /* the variants with a fused copy */
/* The fused copy of the variant called name, or NULL with the reason. */
static hp__cksum_copy_fn find_copy(const char *name, char *why, size_t whylen)
{
    if (!find_variant(name, why, whylen))
        return NULL;
    int n = 0;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0 && v[i].copy)
            return v[i].copy;
    snprintf(why, whylen,
             "variant %s has no fused copy: hp_cksum_copy sums with it, then copies "
             "(the dispatched_copy tests)",
             name);
    return NULL;
}

#define COPY_TEST(test, vname, body)                                                               \
    HP_TEST(test)                                                                                  \
    {                                                                                              \
        char why_[200];                                                                            \
        copy_fn = find_copy(vname, why_, sizeof why_);                                             \
        if (!copy_fn)                                                                              \
            HP_SKIP("%s", why_);                                                                   \
        copy_failed = false;                                                                       \
        body("fused copy of " vname, via_copy);                                                    \
    }

#define COPY_TESTS(v)                                                                              \
    COPY_TEST(copy_##v, #v, sweep)                                                                 \
    COPY_TEST(copy_##v##_large, #v, large)                                                         \
    COPY_TEST(copy_##v##_fill, #v, fill)                                                           \
    COPY_TEST(copy_##v##_guard, #v, guard)

COPY_TESTS(avx2)
COPY_TESTS(avx512)
#endif

/* The public hp_cksum_copy: short inputs summed and copied inline, longer
 * ones by the variant in use's fused copy, or its sum and memcpy. */
#define DISPATCHED_COPY_TEST(test, body)                                                           \
    HP_TEST(test)                                                                                  \
    {                                                                                              \
        char what_[64];                                                                            \
        snprintf(what_, sizeof what_, "hp_cksum_copy (using %s)", hp_cksum_impl());                \
        copy_fn = hp_cksum_copy;                                                                   \
        copy_failed = false;                                                                       \
        body(what_, via_copy);                                                                     \
    }

DISPATCHED_COPY_TEST(dispatched_copy, sweep)
DISPATCHED_COPY_TEST(dispatched_copy_large, large)
DISPATCHED_COPY_TEST(dispatched_copy_guard, guard)

/* Each variant in use by hp_cksum_copy, at the lengths around its
 * threshold and a segment's: the copy and the sum. */
HP_TEST(copy_each_variant_dispatched)
{
    int n = 0;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    const char *orig = hp_cksum_impl();
    uint64_t rs = hp_test_seed() ^ 0x434F5059ull;
    enum { LEN = 3000 };
    unsigned char *src = malloc(LEN + 8);
    HP_REQUIRE(src != NULL);
    fill_random(src, LEN + 8, &rs);
    copy_fn = hp_cksum_copy;
    copy_failed = false;
    for (int i = 0; i < n; i++) {
        if (hp_cksum_set_impl(v[i].name) != 0)
            continue; /* not on this CPU (impl_unsupported says so) */
        static const size_t lens[] = {0, 1, 127, 128, 129, 1448, 1449, 2999};
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
            for (size_t off = 0; off < 4; off++) {
                uint32_t in = pick_sum(&rs);
                if (!check_sum(__LINE__, v[i].name, lens[k], off, in,
                               via_copy(src + off, lens[k], in),
                               ref_sum(src + off, lens[k], in, 0)))
                    break;
            }
    }
    free(src);
    HP_CHECK_EQ(hp_cksum_set_impl(orig), 0);
}

/* Every variant of the table has tests above (a new one must get its own). */
HP_TEST(variant_table)
{
    static const char *const tested[] = {
        "scalar",
#ifdef HP_ARCH_X86
        "avx2",
        "avx512",
#endif
#ifdef HP_ARCH_ARM64
        "neon",
#endif
    };
    int n = -1;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    HP_REQUIRE(v != NULL);
    HP_CHECK_EQ(n, (int)(sizeof tested / sizeof tested[0]));
    HP_REQUIRE(n > 0);
    HP_CHECK_STREQ(v[0].name, "scalar");
    HP_CHECK_EQ(v[0].needs, 0);
    for (int i = 0; i < n; i++) {
        bool known = false;
        for (size_t k = 0; k < sizeof tested / sizeof tested[0]; k++)
            known |= strcmp(v[i].name, tested[k]) == 0;
        if (!known)
            hp_test_fail(__FILE__, __LINE__, "variant %s has no tests", v[i].name);
        HP_CHECK(v[i].fn != NULL);
        HP_CHECK(v[i].symbol != NULL && v[i].symbol[0] != '\0');
    }
}

/* ---- scatter-gather ---------------------------------------------------------- */

#define IOV_MAX_SEGS 40

/* Checksum iov (n segments, of which the data is the concatenation, src) and
 * compare with the contiguous reference; describe the split on failure. */
static bool check_iov(int line, const struct iovec *iov, int n, const unsigned char *src,
                      size_t len, uint32_t in)
{
    uint32_t got = hp_cksum_partial_iov(iov, n, in);
    uint64_t ref = ref_sum(src, len, in, 0);
    if (hp_cksum_fold(got) == ref_fold(ref))
        return true;
    char desc[IOV_MAX_SEGS * 24] = "";
    size_t used = 0;
    for (int i = 0; i < n && i < IOV_MAX_SEGS && used < sizeof desc; i++)
        used += (size_t)snprintf(desc + used, sizeof desc - used, " %zu%s", iov[i].iov_len,
                                 iov[i].iov_base ? "" : "(NULL)");
    hp_test_fail(__FILE__, line,
                 "hp_cksum_partial_iov: %d segments of lengths [%s ] (total %zu), incoming "
                 "sum 0x%08" PRIx32 ": got 0x%08" PRIx32 " folding to 0x%04x, want 0x%04x",
                 n, desc, len, in, got, hp_cksum_fold(got), ref_fold(ref));
    return false;
}

HP_TEST(iov_random)
{
    uint64_t rs = hp_test_seed() ^ 0x494F56ull;
    enum { SRC = 70000 };
    unsigned char *src = malloc(SRC);
    HP_REQUIRE(src != NULL);
    for (int iter = 0; iter < 20000 && !hp_test_failed(); iter++) {
        uint64_t r = hp_test_rand(&rs);
        int nseg = (int)(r % (IOV_MAX_SEGS + 1));
        size_t len = nseg == 0            ? 0
                     : (r >> 8) % 20 == 0 ? (size_t)(r >> 16) % (SRC + 1)
                     : (r >> 8) % 4 == 0  ? (size_t)(r >> 16) % 3001
                                          : (size_t)(r >> 16) % 301;
        fill_random(src, len, &rs);
        /* Cut points: sorted, often repeated (zero-length segments), the
         * first at 0 and the last at len. */
        size_t cut[IOV_MAX_SEGS + 1];
        cut[0] = 0;
        for (int i = 1; i < nseg; i++) {
            uint64_t c = hp_test_rand(&rs);
            cut[i] = c % 4 == 0 ? cut[i - 1] : (size_t)(c >> 8) % (len + 1);
        }
        for (int i = 1; i < nseg; i++) /* insertion sort; cut[0] == 0 stays first */
            for (int j = i; j > 1 && cut[j - 1] > cut[j]; j--) {
                size_t t = cut[j];
                cut[j] = cut[j - 1];
                cut[j - 1] = t;
            }
        cut[nseg > 0 ? nseg : 0] = len;
        struct iovec iov[IOV_MAX_SEGS];
        unsigned char *blk[IOV_MAX_SEGS] = {NULL};
        bool ok = true;
        for (int i = 0; i < nseg; i++) {
            size_t n = cut[i + 1] - cut[i];
            uint64_t c = hp_test_rand(&rs);
            if (n == 0) {
                /* A zero-length segment: NULL or a valid pointer. */
                iov[i] = (struct iovec){(c & 1) ? NULL : src, 0};
                continue;
            }
            /* Each segment in a block of its own, at a random alignment. */
            size_t off = (size_t)(c >> 8) % 64;
            blk[i] = place(src + cut[i], n, off);
            ok &= blk[i] != NULL;
            iov[i] = (struct iovec){blk[i] ? blk[i] + off : src + cut[i], n};
        }
        HP_CHECK(ok);
        uint32_t in = (hp_test_rand(&rs) & 1) ? pick_sum(&rs) : 0;
        check_iov(__LINE__, iov, nseg, src, len, in);
        for (int i = 0; i < nseg; i++)
            free(blk[i]);
    }
    free(src);
}

HP_TEST(iov_edge_cases)
{
    uint64_t rs = hp_test_seed() ^ 0x45444745ull;
    unsigned char src[IOV_MAX_SEGS + 300];
    fill_random(src, sizeof src, &rs);
    struct iovec iov[IOV_MAX_SEGS];
    static const uint32_t sums[] = {0, 1, 0xFFFF, 0x10000, 0xFFFFFFFF};

    for (size_t k = 0; k < sizeof sums / sizeof sums[0]; k++) {
        uint32_t in = sums[k];
        /* No segments: NULL with count 0, and negative counts (treated as 0). */
        check_iov(__LINE__, NULL, 0, src, 0, in);
        iov[0] = (struct iovec){src, 5};
        check_iov(__LINE__, iov, -1, src, 0, in);
        check_iov(__LINE__, iov, INT_MIN, src, 0, in);
        /* Only empty segments, NULL or not. */
        for (int i = 0; i < 4; i++)
            iov[i] = (struct iovec){(i & 1) ? NULL : src + i, 0};
        check_iov(__LINE__, iov, 4, src, 0, in);
        /* One byte per segment: every other segment starts at an odd offset. */
        for (int n = 1; n <= IOV_MAX_SEGS; n++) {
            for (int i = 0; i < n; i++)
                iov[i] = (struct iovec){src + i, 1};
            check_iov(__LINE__, iov, n, src, (size_t)n, in);
        }
        /* Odd, long (through the variant) at an odd offset, odd, NULL/0,
         * even at an odd offset, and a trailing empty segment. */
        static const size_t lens[] = {1, 200, 3, 0, 64, 31, 0};
        size_t pos = 0;
        for (int i = 0; i < 7; i++) {
            iov[i] = (struct iovec){lens[i] ? src + pos : NULL, lens[i]};
            pos += lens[i];
        }
        check_iov(__LINE__, iov, 7, src, pos, in);
        /* The same data as one segment, and split everywhere into two. */
        for (size_t cut = 0; cut <= pos; cut++) {
            iov[0] = (struct iovec){src, cut};
            iov[1] = (struct iovec){src + cut, pos - cut};
            if (!check_iov(__LINE__, iov, 2, src, pos, in))
                return;
        }
    }
}

/* ---- RFC 1624 incremental updates ---------------------------------------------- */

/* The full recomputation: the checksum of buf as if the field at c were 0. */
static uint16_t recompute(const unsigned char *buf, size_t len, size_t c)
{
    uint64_t acc = ref_sum(buf, c, 0, 0);
    return ref_fold(ref_sum(buf + c + 2, len - c - 2, acc, c + 2));
}

/* True when every byte but the checksum field at c is zero. */
static bool data_all_zero(const unsigned char *buf, size_t len, size_t c)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] && (i < c || i >= c + 2))
            return false;
    return true;
}

/* A new field value: often one at an edge, or related to the old value. */
static uint16_t pick16(uint64_t *rs, uint16_t old)
{
    uint64_t r = hp_test_rand(rs);
    switch (r % 10) {
    case 0:
        return 0;
    case 1:
        return 0xFFFF;
    case 2:
        return old;
    case 3:
        return (uint16_t)~old;
    case 4:
        return mem16(0xFF, 0);
    case 5:
        return mem16(0, 0xFF);
    default:
        return (uint16_t)(r >> 32);
    }
}

/* A random buffer of 8.. bytes (often tiny, so that all-zero data and sums
 * of exactly -0 come up), with random bytes, bytes of 0x00/0xFF, or zeros. */
static size_t random_data(unsigned char *buf, size_t max, uint64_t *rs)
{
    uint64_t r = hp_test_rand(rs);
    size_t len = (r & 1) ? 8 + (size_t)(r >> 8) % 9 : 8 + (size_t)(r >> 8) % (max - 7);
    switch ((r >> 40) % 4) {
    case 0:
    case 1:
        fill_random(buf, len, rs);
        break;
    case 2:
        fill_random(buf, len, rs);
        for (size_t i = 0; i < len; i++)
            buf[i] = (buf[i] & 1) ? 0xFF : 0x00;
        break;
    default:
        memset(buf, 0, len);
        break;
    }
    return len;
}

/* Check an updated checksum against the full recomputation; the documented
 * exception: when the data has become all zeros both 0x0000 and 0xFFFF are
 * accepted. */
static bool check_update(int line, const char *fn, const unsigned char *buf, size_t len, size_t c,
                         size_t f, uint16_t hc, uint32_t old, uint32_t nv, uint16_t got)
{
    uint16_t want = recompute(buf, len, c);
    bool zero = data_all_zero(buf, len, c);
    if (zero ? (got == 0x0000 || got == 0xFFFF) : got == want)
        return true;
    hp_test_fail(__FILE__, line,
                 "%s(0x%04x, 0x%08" PRIx32 ", 0x%08" PRIx32 ") = 0x%04x; full recomputation "
                 "0x%04x (len %zu, checksum at %zu, field at %zu%s; values as read from memory)",
                 fn, hc, old, nv, got, want, len, c, f, zero ? ", data all zero" : "");
    return false;
}

/* An even offset for a field of w bytes in buf[0..len) not overlapping the
 * 2-byte checksum field at c. */
static size_t pick_field(uint64_t *rs, size_t len, size_t c, size_t w)
{
    for (;;) {
        size_t f = 2 * ((size_t)hp_test_rand(rs) % ((len - w) / 2 + 1));
        if (f + w <= c || f >= c + 2)
            return f;
    }
}

HP_TEST(update16_random)
{
    uint64_t rs = hp_test_seed() ^ 0x5531360000ull;
    unsigned char buf[1500];
    for (int iter = 0; iter < 20000 && !hp_test_failed(); iter++) {
        size_t len = random_data(buf, sizeof buf, &rs);
        size_t c = 2 * ((size_t)hp_test_rand(&rs) % (len / 2)); /* checksum field */
        hp_test_store16(buf + c, recompute(buf, len, c));
        /* A chain of edits, each starting from the previous update. */
        for (int k = 0; k < 8 && !hp_test_failed(); k++) {
            size_t f = pick_field(&rs, len, c, 2);
            uint16_t hc = hp_test_load16(buf + c), old = hp_test_load16(buf + f),
                     nv = pick16(&rs, old);
            hp_test_store16(buf + f, nv);
            uint16_t got = hp_cksum_update16(hc, old, nv);
            check_update(__LINE__, "hp_cksum_update16", buf, len, c, f, hc, old, nv, got);
            hp_test_store16(buf + c, got);
        }
    }
}

HP_TEST(update32_random)
{
    uint64_t rs = hp_test_seed() ^ 0x5533320000ull;
    unsigned char buf[1500];
    for (int iter = 0; iter < 20000 && !hp_test_failed(); iter++) {
        size_t len = random_data(buf, sizeof buf, &rs);
        size_t c = 2 * ((size_t)hp_test_rand(&rs) % (len / 2));
        hp_test_store16(buf + c, recompute(buf, len, c));
        for (int k = 0; k < 8 && !hp_test_failed(); k++) {
            /* 16-bit aligned, so often not 32-bit aligned. */
            size_t f = pick_field(&rs, len, c, 4);
            uint32_t old = hp_test_load32(buf + f);
            uint16_t hi = pick16(&rs, (uint16_t)(old >> 16)), lo = pick16(&rs, (uint16_t)old);
            uint32_t nv = (uint32_t)hi << 16 | lo;
            uint16_t hc = hp_test_load16(buf + c);
            hp_test_store32(buf + f, nv);
            uint16_t got = hp_cksum_update32(hc, old, nv);
            check_update(__LINE__, "hp_cksum_update32", buf, len, c, f, hc, old, nv, got);
            hp_test_store16(buf + c, got);
        }
    }
}

/* RFC 1624 section 4's example, which section 3 uses to show that equation 2
 * gives -0 (0xFFFF) where the recomputation gives +0 (0x0000): the other
 * words sum to 0xCD7A, a field changes from 0x5555 to 0x3285. */
HP_TEST(update_minus_zero_rfc1624)
{
    /* Words, in network order: 0xCD7A, the field, the checksum. */
    unsigned char b[6] = {0xCD, 0x7A, 0x55, 0x55, 0, 0};
    hp_test_store16(b + 4, recompute(b, 6, 4));
    HP_CHECK_EQ(hp_test_load16(b + 4), mem16(0xDD, 0x2F)); /* HC = ~(0xCD7A + 0x5555) */
    uint16_t hc = hp_test_load16(b + 4), m = hp_test_load16(b + 2);
    b[2] = 0x32;
    b[3] = 0x85;
    HP_CHECK_EQ(recompute(b, 6, 4), 0x0000); /* ~(0xCD7A + 0x3285) = ~0xFFFF */
    HP_CHECK_EQ(hp_cksum_update16(hc, m, hp_test_load16(b + 2)), 0x0000);

    /* The same through a 32-bit field: words 0xCD7A, field (0x5555, 0x0000)
     * then (0x3285, 0x0000), and (0x1111, 0x4444) then (0x2000, 0x1285). */
    unsigned char w[8] = {0xCD, 0x7A, 0x55, 0x55, 0x00, 0x00, 0, 0};
    hp_test_store16(w + 6, recompute(w, 8, 6));
    hc = hp_test_load16(w + 6);
    uint32_t old = hp_test_load32(w + 2);
    const unsigned char n1[4] = {0x32, 0x85, 0x00, 0x00};
    HP_CHECK_EQ(hp_cksum_update32(hc, old, hp_test_load32(n1)), 0x0000);
    const unsigned char o2[4] = {0x11, 0x11, 0x44, 0x44}, n2[4] = {0x20, 0x00, 0x12, 0x85};
    memcpy(w + 2, o2, 4);
    hp_test_store16(w + 6, recompute(w, 8, 6));
    hc = hp_test_load16(w + 6);
    memcpy(w + 2, n2, 4);
    HP_CHECK_EQ(recompute(w, 8, 6), 0x0000);
    HP_CHECK_EQ(hp_cksum_update32(hc, hp_test_load32(o2), hp_test_load32(n2)), 0x0000);
}

/* Random data, and a new field value chosen so that the data sums to exactly
 * -0 (0xFFFF): the recomputation gives 0x0000, and so must the update. */
HP_TEST(update_minus_zero_random)
{
    uint64_t rs = hp_test_seed() ^ 0x4D5A45524Full;
    unsigned char buf[256];
    for (int iter = 0; iter < 20000 && !hp_test_failed(); iter++) {
        size_t len = random_data(buf, sizeof buf, &rs);
        size_t c = 2 * ((size_t)hp_test_rand(&rs) % (len / 2));
        bool wide = iter & 1;
        size_t f = pick_field(&rs, len, c, wide ? 4 : 2);
        hp_test_store16(buf + c, recompute(buf, len, c));
        uint16_t hc = hp_test_load16(buf + c);
        uint32_t old = wide ? hp_test_load32(buf + f) : hp_test_load16(buf + f);
        /* The sum of everything else, as a one's complement value r (0 only
         * when it is all zeros); the new field must add 0xFFFF - r. */
        if (wide)
            hp_test_store32(buf + f, 0);
        else
            hp_test_store16(buf + f, 0);
        uint16_t r = (uint16_t)~recompute(buf, len, c);
        uint16_t add = r == 0 ? 0xFFFF : (uint16_t)(0xFFFF - r);
        /* r and add are sums of words as they sit in memory (the reference's
         * view), so store add as it is; a 32-bit field takes it in two
         * halves, 0xAB00 + 0x00CD = 0xABCD. */
        uint32_t nv;
        if (wide) {
            hp_test_store16(buf + f, (uint16_t)(add & 0xFF00));
            hp_test_store16(buf + f + 2, (uint16_t)(add & 0x00FF));
            nv = hp_test_load32(buf + f);
        } else {
            hp_test_store16(buf + f, add);
            nv = add;
        }
        HP_REQUIRE_EQ(recompute(buf, len, c), 0x0000);
        uint16_t got = wide ? hp_cksum_update32(hc, old, nv)
                            : hp_cksum_update16(hc, (uint16_t)old, (uint16_t)nv);
        check_update(__LINE__, wide ? "hp_cksum_update32" : "hp_cksum_update16", buf, len, c, f, hc,
                     old, nv, got);
    }
}

/* The documented exception: data that becomes all zeros sums to +0, whose
 * checksum is 0xFFFF by recomputation; the update may give 0x0000 instead. */
HP_TEST(update_all_zero_exception)
{
    unsigned char b[4] = {0x00, 0x00, 0x12, 0x34}; /* checksum field at 0 */
    hp_test_store16(b, recompute(b, 4, 0));
    HP_CHECK_EQ(hp_test_load16(b), mem16(0xED, 0xCB));
    uint16_t hc = hp_test_load16(b), old = hp_test_load16(b + 2);
    b[2] = b[3] = 0;
    HP_CHECK_EQ(recompute(b, 4, 0), 0xFFFF);
    uint16_t got = hp_cksum_update16(hc, old, 0);
    HP_CHECK(got == 0x0000 || got == 0xFFFF);
    /* Either form of zero, as input, then gives the exact result again. */
    for (int z = 0; z < 2; z++) {
        uint16_t zero = z ? 0xFFFF : 0x0000, nv = mem16(0xAB, 0xCD);
        b[2] = 0xAB;
        b[3] = 0xCD;
        HP_CHECK_EQ(hp_cksum_update16(zero, 0, nv), recompute(b, 4, 0));
        HP_CHECK_EQ(hp_cksum_update32(zero, 0, nv), recompute(b, 4, 0));
        b[2] = b[3] = 0;
    }
}

/* ---- variant selection ------------------------------------------------------ */

HP_TEST(impl_select)
{
    int n = 0;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    const char *names[16] = {NULL};
    HP_REQUIRE(n > 0 && n <= 16);
    HP_CHECK_EQ(hp_cksum_impls(names, 16), n);
    for (int i = 0; i < n; i++)
        HP_CHECK_STREQ(names[i], v[i].name);
    HP_CHECK_EQ(hp_cksum_impls(names, 1), 1);
    HP_CHECK_EQ(hp_cksum_impls(names, 0), 0);

    const char *orig = hp_cksum_impl();
    HP_REQUIRE(orig != NULL);
    HP_CHECK(hp_cksum_impl_supported(orig));
    HP_CHECK(hp_cksum_impl_supported("scalar"));

    /* The best supported variant (the table is ordered best last). */
    int best = 0;
    for (int i = 0; i < n; i++) {
        bool sup = (hp_cpu_features() & v[i].needs) == v[i].needs;
        HP_CHECK_EQ(hp_cksum_impl_supported(v[i].name), sup);
        if (sup)
            best = i;
    }
    const char *env = getenv("HP_CKSUM_IMPL");
    if (!env || !*env || strcmp(env, "auto") == 0)
        HP_CHECK_STREQ(orig, v[best].name);

    /* Unknown names. */
    static const char *const unknown[] = {"", "nope", "AVX2", "scalar ", "Auto", "sse"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        HP_CHECK_EQ(hp_cksum_set_impl(unknown[i]), -EINVAL);
        HP_CHECK(!hp_cksum_impl_supported(unknown[i]));
        HP_CHECK_STREQ(hp_cksum_impl(), orig);
    }

    /* Each variant: selected, reported, and used by hp_cksum_partial (the
     * longer lengths go to the variant); or refused with -ENOTSUP. */
    uint64_t rs = hp_test_seed() ^ 0x494D504Cull;
    enum { LEN = 3000 };
    unsigned char *buf = malloc(LEN);
    HP_REQUIRE(buf != NULL);
    fill_random(buf, LEN, &rs);
    for (int i = 0; i < n; i++) {
        const char *before = hp_cksum_impl();
        int rc = hp_cksum_set_impl(v[i].name);
        if (!hp_cksum_impl_supported(v[i].name)) {
            HP_CHECK_EQ(rc, -ENOTSUP);
            HP_CHECK_STREQ(hp_cksum_impl(), before);
            continue;
        }
        HP_CHECK_EQ(rc, 0);
        HP_CHECK_STREQ(hp_cksum_impl(), v[i].name);
        for (size_t len = 60; len < LEN; len += 97) {
            size_t off = len % 7;
            uint32_t in = pick_sum(&rs);
            if (!check_sum(__LINE__, v[i].name, len, off, in, hp_cksum_partial(buf + off, len, in),
                           ref_sum(buf + off, len, in, 0)))
                break;
        }
    }
    free(buf);

    HP_CHECK_EQ(hp_cksum_set_impl("auto"), 0);
    HP_CHECK_STREQ(hp_cksum_impl(), v[best].name);
    HP_CHECK_EQ(hp_cksum_set_impl(orig), 0);
    HP_CHECK_STREQ(hp_cksum_impl(), orig);
}

HP_TEST(impl_unsupported)
{
    int n = 0;
    const struct hp__cksum_variant *v = hp__cksum_variants(&n);
    const char *orig = hp_cksum_impl();
    int tried = 0;
    for (int i = 0; i < n; i++) {
        if (hp_cksum_impl_supported(v[i].name))
            continue;
        tried++;
        HP_CHECK_EQ(hp_cksum_set_impl(v[i].name), -ENOTSUP);
        HP_CHECK_STREQ(hp_cksum_impl(), orig);
    }
    if (tried == 0)
        HP_SKIP("every variant of this build runs on this CPU: -ENOTSUP not exercised");
}

/* ---- hp_cksum_add and hp_cksum_fold ------------------------------------------- */

HP_TEST(add_edges)
{
    HP_CHECK_EQ(hp_cksum_add(0, 0), 0);
    HP_CHECK_EQ(hp_cksum_add(0, 5), 5);
    HP_CHECK_EQ(hp_cksum_add(5, 0), 5);
    HP_CHECK_EQ(hp_cksum_add(0xFFFFFFFF, 0), 0xFFFFFFFF);
    HP_CHECK_EQ(hp_cksum_add(0xFFFFFFFF, 1), 1);
    HP_CHECK_EQ(hp_cksum_add(1, 0xFFFFFFFF), 1);
    HP_CHECK_EQ(hp_cksum_add(0xFFFFFFFF, 0xFFFFFFFF), 0xFFFFFFFF);
    HP_CHECK_EQ(hp_cksum_add(0x80000000, 0x80000000), 1);
    HP_CHECK_EQ(hp_cksum_add(0xFFFF, 0xFFFF), 0x1FFFE);
    HP_CHECK_EQ(hp_cksum_add(0xFFFF0000, 0x10000), 1);

    /* Congruent to the plain sum mod 0xFFFF (2^32 == 1), and never 0 unless
     * both are 0. */
    uint64_t rs = hp_test_seed() ^ 0x414444ull;
    for (int i = 0; i < 100000; i++) {
        uint32_t a = pick_sum(&rs), b = (i & 1) ? pick_sum(&rs) : (uint32_t)hp_test_rand(&rs);
        uint32_t s = hp_cksum_add(a, b);
        if (s % 0xFFFF != ((uint64_t)a + b) % 0xFFFF || s == 0) {
            hp_test_fail(__FILE__, __LINE__,
                         "hp_cksum_add(0x%08" PRIx32 ", 0x%08" PRIx32 ") = 0x%08" PRIx32, a, b, s);
            return;
        }
    }
}

HP_TEST(fold_edges)
{
    HP_CHECK_EQ(hp_cksum_fold(0), 0xFFFF);
    HP_CHECK_EQ(hp_cksum_fold(0xFFFF), 0x0000);
    HP_CHECK_EQ(hp_cksum_fold(0x10000), 0xFFFE);
    HP_CHECK_EQ(hp_cksum_fold(0x1FFFE), 0x0000);
    HP_CHECK_EQ(hp_cksum_fold(0x1FFFF), 0xFFFE);
    HP_CHECK_EQ(hp_cksum_fold(0xFFFEFFFF), 0x0001);
    HP_CHECK_EQ(hp_cksum_fold(0xFFFF0000), 0x0000);
    HP_CHECK_EQ(hp_cksum_fold(0xFFFFFFFE), 0x0001);
    HP_CHECK_EQ(hp_cksum_fold(0xFFFFFFFF), 0x0000);
    HP_CHECK_EQ(hp_cksum_fold(0x12345678), (uint16_t) ~(0x1234 + 0x5678));

    /* For x != 0: ~(the value in [1, 0xFFFF] congruent to x). */
    uint64_t rs = hp_test_seed() ^ 0x464F4C44ull;
    for (int i = 0; i < 100000; i++) {
        uint32_t x = (i & 1) ? pick_sum(&rs) : (uint32_t)hp_test_rand(&rs);
        uint16_t want = (uint16_t) ~((x - 1) % 0xFFFF + 1);
        if (x != 0 && hp_cksum_fold(x) != want) {
            hp_test_fail(__FILE__, __LINE__, "hp_cksum_fold(0x%08" PRIx32 ") = 0x%04x, want 0x%04x",
                         x, hp_cksum_fold(x), want);
            return;
        }
    }
}

/* Partial sums of even-length blocks add up (hp_cksum_add) to the sum of the
 * whole; the last block may have an odd length. */
HP_TEST(add_combines_partials)
{
    uint64_t rs = hp_test_seed() ^ 0x434F4D42ull;
    unsigned char buf[4096];
    for (int iter = 0; iter < 2000 && !hp_test_failed(); iter++) {
        size_t len = (size_t)hp_test_rand(&rs) % (sizeof buf + 1);
        fill_random(buf, len, &rs);
        size_t cut = 2 * ((size_t)hp_test_rand(&rs) % (len / 2 + 1));
        uint32_t in = (iter & 1) ? pick_sum(&rs) : 0;
        uint32_t a = hp_cksum_partial(buf, cut, in), b = hp_cksum_partial(buf + cut, len - cut, 0);
        check_sum(__LINE__, "hp_cksum_add of two partial sums", len, cut, in, hp_cksum_add(a, b),
                  ref_sum(buf, len, in, 0));
        check_sum(__LINE__, "hp_cksum_add, odd last block first", len, cut, in, hp_cksum_add(b, a),
                  ref_sum(buf, len, in, 0));
    }
}

/* Header fields summed as host-order values (hp_cksum_from_host16) give the
 * partial sum of the same fields written big-endian: a few words, many
 * all-ones words (carries in every fold), and none. */
HP_TEST(from_host16_matches_the_written_words)
{
    uint64_t rs = hp_test_seed() ^ 0x48523136ull;
    static uint16_t w[40000];
    static unsigned char buf[2 * 40000];
    static const size_t counts[] = {0, 1, 2, 5, 10, 30, 40000};
    for (int iter = 0; iter < 3000 && !hp_test_failed(); iter++) {
        size_t n = iter < 7 ? counts[iter] : (size_t)hp_test_rand(&rs) % 64;
        uint64_t acc = 0;
        for (size_t i = 0; i < n; i++) {
            w[i] = (iter % 3 == 1) ? 0xFFFF : (uint16_t)hp_test_rand(&rs);
            buf[2 * i] = (unsigned char)(w[i] >> 8);
            buf[2 * i + 1] = (unsigned char)w[i];
            acc += w[i];
        }
        uint32_t in = (iter & 1) ? pick_sum(&rs) : 0;
        check_sum(__LINE__, "hp_cksum_from_host16", 2 * n, 0, in,
                  hp_cksum_add(in, hp_cksum_from_host16(acc)), ref_sum(buf, 2 * n, in, 0));
    }
}
