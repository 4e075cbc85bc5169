/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: memif's control messages through the handshake's state machine, and descriptors and ring indices through their range checks. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "link/memif_proto.h"

/*
 * The input: one configuration byte, then records until the end.
 *   config: bit 0 server, bits 1-2 queues - 1, bits 3-6 ring log2 (0 -> 1),
 *           bit 7 zero-copy client (2 regions)
 *   record: a kind byte, then by kind & 3:
 *     0 a message: one byte (bit 0: a descriptor came with it), then up to
 *       128 bytes (fewer at the end of the input: a short message);
 *     1 regions for the descriptor checks: a count byte (0..8), then that
 *       many 16-bit sizes in bytes;
 *     2 a descriptor (16 bytes) checked against those regions;
 *     3 a ring index check: from, to (16 bits each), log2 (one byte).
 * Properties: decoding never reads past the input and re-encodes to an
 * equal message; the state machine refuses with a reason or goes on, and
 * what it accepted stays within our limits (rings inside their regions,
 * counts within what we offered); a descriptor is either refused or lies
 * wholly inside one region (its first and last bytes are read, so that
 * AddressSanitizer sees any overrun); ring counts stay within the ring.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "memif_fuzz: %s\n", what);
    abort();
}

static volatile uint8_t sink;

static void check_roundtrip(const uint8_t *msg, size_t len, const struct hp__memif_msg *m)
{
    (void)msg;
    (void)len;
    uint8_t out[HP__MEMIF_MSG_SIZE];
    hp__memif_msg_encode(m, out);
    struct hp__memif_msg again;
    if (hp__memif_msg_decode(out, sizeof out, &again) != 0)
        fail("an encoded message does not decode");
    if (memcmp(&again, m, sizeof again) != 0)
        fail("decode(encode(m)) differs from m");
}

static void check_accepted(const struct hp__memif_hs *hs, enum hp__memif_verdict v)
{
    if (v == HP__MEMIF_V_CONNECT) {
        if (!hs->n_c2s || !hs->n_s2c || hs->n_c2s > hs->queues || hs->n_s2c > hs->queues)
            fail("server accepted ring counts outside what it offered");
        struct hp__memif_region r[HP__MEMIF_MAX_REGIONS];
        for (unsigned k = 0; k < hs->n_regions; k++)
            r[k] = (struct hp__memif_region){NULL, hs->region_size[k]};
        for (unsigned i = 0; i < hs->n_c2s + hs->n_s2c; i++) {
            const struct hp__memif_ring_def *d =
                i < hs->n_c2s ? &hs->c2s[i] : &hs->s2c[i - hs->n_c2s];
            if (!d->set || d->log2 > hs->log2 ||
                hp__memif_check_ring(r, hs->n_regions, d->region, d->offset, d->log2) != 0)
                fail("server accepted a ring outside its region or limits");
        }
    }
    if (v == HP__MEMIF_V_SETUP) {
        if (!hs->n_c2s || !hs->n_s2c || hs->n_c2s > hs->queues || hs->n_s2c > hs->queues)
            fail("client agreed to ring counts it did not ask for");
        if (hs->run_log2 < 1 || hs->run_log2 > hs->log2)
            fail("client agreed to a ring size it did not ask for");
    }
}

static size_t do_message(struct hp__memif_hs *hs, const uint8_t *p, size_t left)
{
    if (left < 1)
        return left;
    bool has_fd = p[0] & 1;
    size_t len = left - 1 < HP__MEMIF_MSG_SIZE ? left - 1 : HP__MEMIF_MSG_SIZE;
    /* A copy of exactly len bytes, so that an overread is caught. */
    uint8_t *msg = malloc(len ? len : 1);
    memcpy(msg, p + 1, len);
    struct hp__memif_msg m;
    int rc = hp__memif_msg_decode(msg, len, &m);
    if (rc == 0) {
        check_roundtrip(msg, len, &m);
        const char *why = NULL;
        enum hp__memif_verdict v = hp__memif_hs_step(hs, &m, has_fd, &why);
        if ((v == HP__MEMIF_V_REFUSE) != (why != NULL))
            fail("a refusal without a reason, or a reason without a refusal");
        if (v < HP__MEMIF_V_ACK || v > HP__MEMIF_V_REFUSE)
            fail("unknown verdict");
        check_accepted(hs, v);
        if (v == HP__MEMIF_V_REFUSE || v == HP__MEMIF_V_PEER_GONE)
            hp__memif_hs_reset(hs);
    } else if (len == HP__MEMIF_MSG_SIZE && rc != -EPROTO) {
        fail("a full-sized message refused for its size");
    }
    free(msg);
    return 1 + len;
}

struct regions {
    unsigned n;
    struct hp__memif_region r[HP__MEMIF_MAX_REGIONS];
};

static void free_regions(struct regions *g)
{
    for (unsigned k = 0; k < g->n; k++)
        free(g->r[k].base);
    g->n = 0;
}

static size_t do_regions(struct regions *g, const uint8_t *p, size_t left)
{
    free_regions(g);
    if (left < 1)
        return left;
    unsigned n = p[0] % (HP__MEMIF_MAX_REGIONS + 1);
    size_t used = 1;
    for (unsigned k = 0; k < n && used + 2 <= left; k++, used += 2) {
        uint64_t sz = (uint64_t)(p[used] | p[used + 1] << 8);
        g->r[k].base = malloc(sz ? sz : 1);
        g->r[k].size = sz;
        g->n = k + 1;
    }
    return used;
}

static size_t do_desc(const struct regions *g, const uint8_t *p, size_t left)
{
    if (left < HP__MEMIF_DESC_SIZE)
        return left;
    struct hp__memif_desc d;
    memcpy(&d, p, sizeof d);
    unsigned char *q = hp__memif_desc_ptr(g->r, g->n, d.region, d.offset, d.length);
    if (q) {
        const struct hp__memif_region *r = &g->r[d.region];
        if (d.region >= g->n || q < r->base || (uint64_t)(q - r->base) + d.length > r->size)
            fail("a descriptor accepted outside its region");
        if (d.length)
            sink = (uint8_t)(q[0] + q[d.length - 1]);
    }
    return HP__MEMIF_DESC_SIZE;
}

static size_t do_count(const uint8_t *p, size_t left)
{
    if (left < 5)
        return left;
    uint16_t from = (uint16_t)(p[0] | p[1] << 8), to = (uint16_t)(p[2] | p[3] << 8);
    uint32_t size = 1u << (p[4] % (HP__MEMIF_MAX_LOG2 + 1));
    int n = hp__memif_ring_count(from, to, size);
    if (n > (int)size || n < -1 || (n >= 0 && (uint16_t)(from + n) != to))
        fail("ring count out of range");
    return 5;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct hp__memif_hs hs;
    memset(&hs, 0, sizeof hs);
    hs.server = data[0] & 1;
    hs.queues = (uint16_t)(1 + ((data[0] >> 1) & 3));
    hs.log2 = (uint8_t)((data[0] >> 3) & 15);
    if (hs.log2 < 1 || hs.log2 > HP__MEMIF_MAX_LOG2)
        hs.log2 = 10;
    hs.regions = (data[0] & 0x80) ? 2 : 1;
    hs.id = 0;
    hp__memif_hs_reset(&hs);
    struct regions g = {0};
    size_t at = 1;
    while (at < size) {
        uint8_t kind = data[at++] & 3;
        const uint8_t *p = data + at;
        size_t left = size - at;
        if (kind == 0)
            at += do_message(&hs, p, left);
        else if (kind == 1)
            at += do_regions(&g, p, left);
        else if (kind == 2)
            at += do_desc(&g, p, left);
        else
            at += do_count(p, left);
    }
    free_regions(&g);
    return 0;
}
