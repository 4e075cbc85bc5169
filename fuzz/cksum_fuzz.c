/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: every checksum variant, the dispatcher, scatter-gather and RFC 1624 updates must agree with a byte-at-a-time RFC 1071 reference. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <hotpath/cksum.h>

#include "base/internal.h"

/*
 * Input layout (a missing header byte reads as zero, so short inputs still
 * run with empty data):
 *
 *   [0]       start offset of the data in its allocation (low 6 bits: 0..63)
 *   [1..4]    incoming partial sum, little-endian
 *   [5]       low 3 bits: number of iovec segments - 1 (1..8);
 *             bit 3: give empty segments a NULL base
 *   [6..19]   seven 16-bit cut lengths; segment i takes cut % (left + 1)
 *             bytes of what is left, the last segment takes the rest
 *   [20..21]  position of the 16-bit field changed for hp_cksum_update16
 *             (an even offset into the data)
 *   [22..23]  the field's new value, as stored in memory
 *   [24..]    the data
 *
 * Every buffer handed to the library ends exactly where its allocation ends,
 * so AddressSanitizer reports any read past the end.
 */

#define HDR_LEN  24
#define MAX_SEGS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* RFC 1071, one byte at a time, 64-bit accumulator. Words are taken as they
 * sit in memory (so the result is in the same byte order as the library's);
 * an odd last byte is the low-address byte of a zero-padded word. Returns
 * the one's complement sum folded to 16 bits, not complemented. It is 0 only
 * when the incoming sum and every byte are 0: end-around carry addition
 * never reaches 0 from a non-zero operand. */
static uint16_t ref_sum16(const uint8_t *p, size_t len, uint32_t sum)
{
    const unsigned lo_shift = host_is_little_endian() ? 0 : 8; /* even-address byte */
    const unsigned hi_shift = 8 - lo_shift;                    /* odd-address byte */
    uint64_t acc = sum;
    for (size_t i = 0; i < len; i++)
        acc += (uint64_t)p[i] << ((i & 1) ? hi_shift : lo_shift);
    while (acc >> 16)
        acc = (acc & 0xFFFF) + (acc >> 16);
    return (uint16_t)acc;
}

/* The value to store in a checksum field: the complemented folded sum. */
static uint16_t ref_cksum(const uint8_t *p, size_t len, uint32_t sum)
{
    return (uint16_t)~ref_sum16(p, len, sum);
}

struct ctx {
    size_t len, off;
    uint32_t sum;
};

static void fail(const struct ctx *c, const char *variant, const char *what, unsigned expected,
                 unsigned got)
{
    fprintf(stderr,
            "cksum_fuzz: MISMATCH in %s (%s): len=%zu offset=%zu sum=0x%08x "
            "expected=0x%04x got=0x%04x\n",
            what, variant, c->len, c->off, (unsigned)c->sum, expected, got);
    abort();
}

/* A copy of src in its own allocation that ends where the copy ends (NULL
 * when len is 0 and null_if_empty is set). Caller frees *base. */
static uint8_t *tight_copy(const uint8_t *src, size_t len, size_t off, int null_if_empty,
                           void **base)
{
    *base = NULL;
    if (len == 0 && null_if_empty)
        return NULL;
    uint8_t *a = malloc(off + len ? off + len : 1);
    if (!a)
        abort();
    memset(a, 0xA5, off);
    if (len)
        memcpy(a + off, src, len);
    *base = a;
    return a + off;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t hdr[HDR_LEN] = {0};
    memcpy(hdr, data, size < HDR_LEN ? size : HDR_LEN);
    const uint8_t *in = size > HDR_LEN ? data + HDR_LEN : NULL;

    struct ctx c = {
        .len = size > HDR_LEN ? size - HDR_LEN : 0,
        .off = hdr[0] & 63u,
        .sum = rd32(hdr + 1),
    };
    void *alloc;
    uint8_t *buf = tight_copy(in, c.len, c.off, 0, &alloc);

    const uint16_t want = ref_cksum(buf, c.len, c.sum);

    /* 1. Every variant this CPU can run, called directly at this offset. */
    int nv = 0;
    const struct hp__cksum_variant *v = hp__cksum_variants(&nv);
    for (int i = 0; i < nv; i++) {
        if (!hp_cksum_impl_supported(v[i].name))
            continue;
        uint16_t got = hp_cksum_fold(v[i].fn(buf, c.len, c.sum));
        if (got != want)
            fail(&c, v[i].name, "variant fn(buf, len, sum)", want, got);
    }

    /* 2. The public entry points, through the dispatched variant. */
    {
        uint16_t got = hp_cksum_fold(hp_cksum_partial(buf, c.len, c.sum));
        if (got != want)
            fail(&c, hp_cksum_impl(), "hp_cksum_partial", want, got);
        uint16_t want0 = ref_cksum(buf, c.len, 0);
        got = hp_cksum(buf, c.len);
        if (got != want0)
            fail(&c, hp_cksum_impl(), "hp_cksum (sum 0)", want0, got);
    }

    /* 2b. The copies: each variant's fused copy and the public
     * hp_cksum_copy into a tight block at another offset (hdr[0] >> 6):
     * the sum, and the bytes. */
    {
        size_t doff = (size_t)(hdr[0] >> 6) * 13 + 1;
        for (int i = -1; i < nv; i++) {
            if (i >= 0 && (!v[i].copy || !hp_cksum_impl_supported(v[i].name)))
                continue;
            if (i >= 0 && c.len < 128)
                continue; /* the fused copies' contract: hp_cksum_copy sums shorter ones */
            /* Ending where the copy ends: ASan sees a store past it. */
            uint8_t *dalloc = calloc(1, doff + c.len), *dst = dalloc + doff;
            if (!dalloc)
                abort();
            uint32_t s =
                i >= 0 ? v[i].copy(dst, buf, c.len, c.sum) : hp_cksum_copy(dst, buf, c.len, c.sum);
            const char *who = i >= 0 ? v[i].name : hp_cksum_impl();
            uint16_t got = hp_cksum_fold(s);
            if (got != want)
                fail(&c, who, i >= 0 ? "fused copy's sum" : "hp_cksum_copy's sum", want, got);
            if (c.len && memcmp(dst, buf, c.len) != 0)
                fail(&c, who, i >= 0 ? "fused copy's bytes" : "hp_cksum_copy's bytes", 0, 1);
            free(dalloc);
        }
    }

    /* 3. hp_cksum_add over an even split point of the same data. */
    {
        size_t k = (size_t)rd16(hdr + 6) % (c.len + 1) & ~(size_t)1;
        uint32_t s =
            hp_cksum_add(hp_cksum_partial(buf, k, c.sum), hp_cksum_partial(buf + k, c.len - k, 0));
        uint16_t got = hp_cksum_fold(s);
        if (got != want)
            fail(&c, hp_cksum_impl(), "hp_cksum_add at an even split", want, got);
    }

    /* 4. hp_cksum_partial_iov over segments of arbitrary lengths (odd, zero),
     * each in its own tight allocation, with every variant dispatched. */
    {
        int nseg = (hdr[5] & 7) + 1;
        int null_empty = (hdr[5] >> 3) & 1;
        struct iovec iov[MAX_SEGS];
        void *seg_alloc[MAX_SEGS];
        size_t pos = 0;
        for (int s = 0; s < nseg; s++) {
            size_t left = c.len - pos;
            size_t n = s == nseg - 1 ? left : (size_t)rd16(hdr + 6 + 2 * s) % (left + 1);
            /* Vary the segments' alignment too, from the same offset byte. */
            size_t soff = (c.off + (size_t)s * 7) & 63u;
            iov[s].iov_base = tight_copy(buf + pos, n, soff, null_empty, &seg_alloc[s]);
            iov[s].iov_len = n;
            pos += n;
        }
        for (int i = 0; i < nv; i++) {
            if (!hp_cksum_impl_supported(v[i].name))
                continue;
            if (hp_cksum_set_impl(v[i].name) != 0)
                fail(&c, v[i].name, "hp_cksum_set_impl of a supported variant", 0, 1);
            uint16_t got = hp_cksum_fold(hp_cksum_partial_iov(iov, nseg, c.sum));
            if (got != want) {
                fprintf(stderr, "cksum_fuzz: segments:");
                for (int s = 0; s < nseg; s++)
                    fprintf(stderr, " %zu", iov[s].iov_len);
                fprintf(stderr, "\n");
                fail(&c, v[i].name, "hp_cksum_partial_iov", want, got);
            }
        }
        hp_cksum_set_impl("auto");
        for (int s = 0; s < nseg; s++)
            free(seg_alloc[s]);
    }

    /* 5. RFC 1624: change an even-aligned 16-bit field and compare the
     * incremental update with a recomputation. When the new data (with the
     * incoming sum) is all zeros, both forms of zero are correct. */
    if (c.len >= 2) {
        size_t fpos = ((size_t)rd16(hdr + 20) % (c.len / 2)) * 2;
        uint16_t old_val, new_val;
        memcpy(&old_val, buf + fpos, 2);
        memcpy(&new_val, hdr + 22, 2);
        uint16_t before = ref_cksum(buf, c.len, c.sum);
        memcpy(buf + fpos, &new_val, 2);
        uint16_t after = ref_cksum(buf, c.len, c.sum);
        uint16_t got = hp_cksum_update16(before, old_val, new_val);
        int all_zero = ref_sum16(buf, c.len, c.sum) == 0;
        if (got != after && !(all_zero && (got == 0x0000 || got == 0xFFFF)))
            fail(&c, "-", "hp_cksum_update16", after, got);
    }

    free(alloc);
    return 0;
}
