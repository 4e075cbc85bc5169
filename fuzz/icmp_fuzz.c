/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the ICMPv4 view must stay in bounds, agree with itself, and round-trip what it accepts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/icmp.h>

/*
 * Input layout:
 *
 *   [0]   bit 1: verify the checksum (missing: 0)
 *   [1..] the message, copied into an allocation of exactly its size
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "icmp_fuzz: %s\n", what);
    abort();
}

static uint8_t *tight(const uint8_t *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (!c)
        abort();
    if (n)
        memcpy(c, p, n);
    return c;
}

static int same_repr(const struct hp_icmp_repr *x, const struct hp_icmp_repr *y)
{
    return x->type == y->type && x->code == y->code && x->ident == y->ident && x->seq == y->seq &&
           x->pointer == y->pointer && x->next_hop_mtu == y->next_hop_mtu &&
           x->data_len == y->data_len && memcmp(x->data, y->data, x->data_len) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned flags = size && (data[0] & 2) ? HP_WIRE_VERIFY_CKSUM : 0;
    size_t n = size ? size - 1 : 0;
    uint8_t *pkt = tight(data + (size ? 1 : 0), n);

    int chk = hp_icmp_check(pkt, n);
    volatile unsigned sink = 0;
    if (chk == 0) {
        sink += hp_icmp_type(pkt) + hp_icmp_code(pkt) + hp_icmp_cksum(pkt) + hp_icmp_ident(pkt) +
                hp_icmp_seq(pkt) + hp_icmp_pointer(pkt) + hp_icmp_next_hop_mtu(pkt);
        const uint8_t *d = hp_icmp_data(pkt);
        for (size_t i = 0; i < n - HP_ICMP_HDR_LEN; i++)
            sink += d[i];
    }
    /* The quote length never exceeds what 576 bytes leave, nor the datagram. */
    size_t q = hp_icmp_quote_len(n * 37);
    if (q > 548 || q > n * 37)
        fail("quote length out of range");

    struct hp_icmp_repr r;
    int rc = hp_icmp_parse(pkt, n, &r, flags);
    if (chk != 0 && rc != chk)
        fail("parse and check disagree on a short message");
    if (rc == 0) {
        if (r.data != pkt + HP_ICMP_HDR_LEN || r.data_len != n - HP_ICMP_HDR_LEN)
            fail("parse gave data outside the message");
        size_t len = hp_icmp_repr_len(&r);
        uint8_t *out = malloc(len), *out2 = malloc(len);
        if (!out || !out2)
            abort();
        if (hp_icmp_emit(&r, out, len - 1) != -HP_WIRE_NO_SPACE)
            fail("emit wrote into too small a buffer");
        if (hp_icmp_emit(&r, out, len) != (int)len)
            fail("emit failed on a parsed message");
        struct hp_icmp_repr r2;
        if (hp_icmp_parse(out, len, &r2, HP_WIRE_VERIFY_CKSUM) != 0)
            fail("emitted message does not parse");
        if (!same_repr(&r, &r2))
            fail("round trip changed the message");
        if (hp_icmp_emit(&r2, out2, len) != (int)len || memcmp(out, out2, len) != 0)
            fail("second emit differs from the first");
        free(out);
        free(out2);
    }
    (void)sink;
    free(pkt);
    return 0;
}
