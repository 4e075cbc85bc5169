/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the UDP view must stay in bounds, agree with itself, and round-trip what it accepts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/udp.h>

/*
 * Input layout (missing header bytes read as zero):
 *
 *   [0]       bit 0: IPv6 (else IPv4); bit 1: verify the checksum
 *   [1..16]   source address (IPv4 uses the first 4 bytes)
 *   [17..32]  destination address
 *   [33..]    the datagram, copied into an allocation of exactly its size
 *             so that AddressSanitizer reports any read past the end
 */

#define HDR 33

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "udp_fuzz: %s\n", what);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t hdr[HDR] = {0};
    memcpy(hdr, data, size < HDR ? size : HDR);
    size_t n = size > HDR ? size - HDR : 0;
    uint8_t *pkt = tight(data + (size > HDR ? HDR : size), n);
    struct hp_l4_addrs a = {(hdr[0] & 1) ? 6 : 4, hdr + 1, hdr + 17};
    unsigned flags = (hdr[0] & 2) ? HP_WIRE_VERIFY_CKSUM : 0;

    int chk = hp_udp_check(pkt, n);
    volatile unsigned sink = 0;
    if (chk == 0) {
        /* Every accessor, and every payload byte, must be readable. */
        sink += hp_udp_src_port(pkt) + hp_udp_dst_port(pkt) + hp_udp_cksum(pkt);
        size_t pl = hp_udp_payload_len(pkt);
        if (HP_UDP_HDR_LEN + pl > n || hp_udp_len(pkt) < HP_UDP_HDR_LEN)
            fail("check passed a length field outside the datagram");
        const uint8_t *p = hp_udp_payload(pkt);
        for (size_t i = 0; i < pl; i++)
            sink += p[i];
    }

    struct hp_udp_repr r;
    int rc = hp_udp_parse(pkt, n, &a, &r, flags);
    if (chk != 0 && rc != chk)
        fail("parse and check disagree on a malformed datagram");
    if (rc == 0) {
        if (r.payload != pkt + HP_UDP_HDR_LEN || r.payload_len + HP_UDP_HDR_LEN > n ||
            r.len != r.payload_len + HP_UDP_HDR_LEN)
            fail("parse gave a payload outside the datagram");
        size_t len = hp_udp_repr_len(&r);
        uint8_t *out = malloc(len);
        if (!out)
            abort();
        if (hp_udp_emit(&r, &a, out, len - 1) != -HP_WIRE_NO_SPACE)
            fail("emit wrote into too small a buffer");
        if (hp_udp_emit(&r, &a, out, len) != (int)len)
            fail("emit failed on a parsed datagram");
        struct hp_udp_repr r2;
        if (hp_udp_parse(out, len, &a, &r2, HP_WIRE_VERIFY_CKSUM) != 0)
            fail("emitted datagram does not parse");
        if (r2.src_port != r.src_port || r2.dst_port != r.dst_port ||
            r2.payload_len != r.payload_len || memcmp(r2.payload, r.payload, r.payload_len) != 0)
            fail("round trip changed the datagram");
        /* The in-place variant writes the same bytes. */
        uint8_t *again = malloc(len);
        if (!again)
            abort();
        memcpy(again + HP_UDP_HDR_LEN, r.payload, r.payload_len);
        if (hp_udp_emit_header(&r2, &a, again, len) != (int)len || memcmp(again, out, len) != 0)
            fail("emit_header differs from emit");
        free(again);
        free(out);
    }
    (void)sink;
    free(pkt);
    return 0;
}
