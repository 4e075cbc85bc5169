/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the TCP header view (options included) must stay in bounds, agree with itself, and round-trip what it accepts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/tcp.h>

/*
 * Input layout (missing header bytes read as zero):
 *
 *   [0]       bit 0: IPv6 (else IPv4); bit 1: verify the checksum
 *   [1..16]   source address (IPv4 uses the first 4 bytes)
 *   [17..32]  destination address
 *   [33..]    the segment, copied into an allocation of exactly its size
 */

#define HDR 33

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "tcp_fuzz: %s\n", what);
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

static int same_opts(const struct hp_tcp_opts *x, const struct hp_tcp_opts *y)
{
    if (x->has_mss != y->has_mss || x->mss != y->mss || x->has_ws != y->has_ws || x->ws != y->ws ||
        x->sack_perm != y->sack_perm || x->has_ts != y->has_ts || x->ts_val != y->ts_val ||
        x->ts_ecr != y->ts_ecr || x->n_sack != y->n_sack)
        return 0;
    for (int i = 0; i < x->n_sack; i++)
        if (x->sack[i][0] != y->sack[i][0] || x->sack[i][1] != y->sack[i][1])
            return 0;
    return 1;
}

static int same_repr(const struct hp_tcp_repr *x, const struct hp_tcp_repr *y)
{
    return x->src_port == y->src_port && x->dst_port == y->dst_port && x->seq == y->seq &&
           x->ack == y->ack && x->flags == y->flags && x->window == y->window &&
           x->urgent == y->urgent && x->payload_len == y->payload_len &&
           memcmp(x->payload, y->payload, x->payload_len) == 0 && same_opts(&x->opt, &y->opt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t hdr[HDR] = {0};
    memcpy(hdr, data, size < HDR ? size : HDR);
    size_t n = size > HDR ? size - HDR : 0;
    uint8_t *pkt = tight(data + (size > HDR ? HDR : size), n);
    struct hp_l4_addrs a = {(hdr[0] & 1) ? 6 : 4, hdr + 1, hdr + 17};
    unsigned flags = (hdr[0] & 2) ? HP_WIRE_VERIFY_CKSUM : 0;

    int chk = hp_tcp_check(pkt, n);
    volatile unsigned sink = 0;
    if (chk == 0) {
        sink += hp_tcp_src_port(pkt) + hp_tcp_dst_port(pkt) + hp_tcp_seq(pkt) + hp_tcp_ack(pkt) +
                hp_tcp_flags(pkt) + hp_tcp_window(pkt) + hp_tcp_cksum(pkt) + hp_tcp_urgent(pkt);
        size_t hl = hp_tcp_hdr_len(pkt);
        if (hl < HP_TCP_HDR_LEN || hl > n || hp_tcp_payload_len(pkt, n) != n - hl)
            fail("check passed a data offset outside the segment");
        const uint8_t *o = hp_tcp_options(pkt);
        for (size_t i = 0; i < hp_tcp_options_len(pkt); i++)
            sink += o[i];
        const uint8_t *p = hp_tcp_payload(pkt);
        for (size_t i = 0; i < n - hl; i++)
            sink += p[i];
    }

    struct hp_tcp_repr r;
    int rc = hp_tcp_parse(pkt, n, &a, &r, flags);
    if (chk != 0 && rc != chk)
        fail("parse and check disagree on a malformed segment");
    if (chk == 0 && rc != 0 && rc != -HP_WIRE_BAD_CHECKSUM)
        fail("parse refused a well-formed segment for a reason other than its checksum");
    if (rc == 0) {
        if (r.data_off < HP_TCP_HDR_LEN || r.data_off > n || r.payload != pkt + r.data_off ||
            r.payload_len != n - r.data_off || r.opt.n_sack > HP_TCP_MAX_SACK ||
            r.opt.ws > HP_TCP_MAX_WS)
            fail("parse gave fields outside their bounds");
        /* Our aligned layout may need more than the 40 bytes the sender
         * packed its options into (MSS, TS and 3 SACK blocks, say): emit
         * refuses; drop SACK blocks until it fits. */
        if (hp_tcp_opts_len(&r.opt) > HP_TCP_MAX_OPT_LEN) {
            uint8_t tmp[HP_TCP_MAX_HDR_LEN];
            if (hp_tcp_emit(&r, &a, tmp, sizeof tmp) != -HP_WIRE_BAD_OPTION)
                fail("emit accepted options beyond 40 bytes");
            while (r.opt.n_sack && hp_tcp_opts_len(&r.opt) > HP_TCP_MAX_OPT_LEN)
                r.opt.n_sack--;
            if (hp_tcp_opts_len(&r.opt) > HP_TCP_MAX_OPT_LEN)
                fail("options without SACK blocks exceed 40 bytes");
        }
        size_t len = hp_tcp_repr_len(&r);
        uint8_t *out = malloc(len), *out2 = malloc(len);
        if (!out || !out2)
            abort();
        if (hp_tcp_emit(&r, &a, out, len - 1) != -HP_WIRE_NO_SPACE)
            fail("emit wrote into too small a buffer");
        if (hp_tcp_emit(&r, &a, out, len) != (int)len)
            fail("emit failed on a parsed segment");
        struct hp_tcp_repr r2;
        if (hp_tcp_parse(out, len, &a, &r2, HP_WIRE_VERIFY_CKSUM) != 0)
            fail("emitted segment does not parse");
        if (!same_repr(&r, &r2) || r2.opt.ws_clamped)
            fail("round trip changed the segment");
        if (hp_tcp_emit(&r2, &a, out2, len) != (int)len || memcmp(out, out2, len) != 0)
            fail("second emit differs from the first");
        free(out);
        free(out2);
    }
    (void)sink;
    free(pkt);
    return 0;
}
