/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the IPv4 view must agree between check and parse (with and without checksum verification), stay in bounds, and round-trip through emit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/ipv4.h>

/* The input is a datagram from the first byte of the IPv4 header, in an
 * allocation of exactly its size. */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "ipv4_fuzz: %s\n", what);
    abort();
}

static volatile uint32_t sink;

static bool same(const struct hp_ipv4_repr *a, const struct hp_ipv4_repr *b)
{
    return !memcmp(a->src, b->src, 4) && !memcmp(a->dst, b->dst, 4) && a->proto == b->proto &&
           a->ttl == b->ttl && a->dscp_ecn == b->dscp_ecn && a->ident == b->ident &&
           a->df == b->df && a->mf == b->mf && a->frag_off == b->frag_off &&
           a->payload_len == b->payload_len;
}

/* Room for the largest datagram a 16-bit Total Length allows. */
static uint8_t out[65535], out2[HP_IPV4_HDR_LEN];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hp_ipv4_repr r, rv;
    int rc = hp_ipv4_check(data, size);
    int rp = hp_ipv4_parse(data, size, &r, 0);
    int rpv = hp_ipv4_parse(data, size, &rv, HP_WIRE_VERIFY_CKSUM);
    if (rc != rp)
        fail("check and parse disagree");
    if (rc < 0) {
        if (!hp_wire_is_reason(rc) || rc == -HP_WIRE_NO_SPACE || rc == -HP_WIRE_BAD_CHECKSUM)
            fail("not a reason check gives");
        if (rpv != rc)
            fail("verifying changed a structural reason");
        return 0;
    }
    size_t hlen = hp_ipv4_hdr_len(data);
    bool cksum_ok = hp_cksum_ipv4_hdr_ok(data, hlen);
    if (rpv != (cksum_ok ? 0 : -HP_WIRE_BAD_CHECKSUM))
        fail("verify flag");
    if (cksum_ok && !same(&r, &rv))
        fail("verify flag changed the repr");

    /* Accessors, within the datagram. */
    if (r.hdr_len != hlen || hlen < 20 || hlen > 60 || hlen + r.payload_len > size ||
        hp_ipv4_total_len(data) != hlen + r.payload_len)
        fail("lengths");
    const uint8_t *pl = hp_ipv4_payload(data);
    sink = hp_ipv4_ttl(data) + hp_ipv4_proto(data) + hp_ipv4_src_ptr(data)[3] +
           hp_ipv4_dst_ptr(data)[3] + hp_ipv4_cksum_raw(data) +
           (r.payload_len ? pl[r.payload_len - 1] : 0) + data[hlen - 1];
    if (hp_ipv4_is_fragment(data) != (r.mf || r.frag_off != 0))
        fail("is_fragment");
    if (hp_ipv4_is_multicast(r.src) || hp_ipv4_is_broadcast(r.src))
        fail("accepted a group source");
    if ((size_t)r.frag_off + r.payload_len + hlen > 65535 || (r.mf && r.payload_len % 8))
        fail("accepted an impossible fragment");

    /* Emit a header without options, put the payload after it, parse it
     * again (checksum verified): the same fields. */
    if (hp_ipv4_emit(&r, out, 19) != -HP_WIRE_NO_SPACE)
        fail("emit into too little room");
    if (hp_ipv4_emit(&r, out, sizeof out) != (int)HP_IPV4_HDR_LEN)
        fail("emit of a parsed repr refused");
    memcpy(out + HP_IPV4_HDR_LEN, pl, r.payload_len);
    size_t n = HP_IPV4_HDR_LEN + r.payload_len;
    struct hp_ipv4_repr r2;
    if (hp_ipv4_parse(out, n, &r2, HP_WIRE_VERIFY_CKSUM) != 0)
        fail("emitted datagram does not parse");
    if (!same(&r, &r2) || r2.hdr_len != HP_IPV4_HDR_LEN)
        fail("round trip changed the repr");
    /* Stable: emitting the re-parsed repr gives the same header. */
    if (hp_ipv4_emit(&r2, out2, sizeof out2) != (int)HP_IPV4_HDR_LEN ||
        memcmp(out, out2, HP_IPV4_HDR_LEN) != 0)
        fail("second emit differs");
    /* Without options or the reserved flag, the header comes back byte for
     * byte, but for the checksum's representation of zero. */
    if (hlen == HP_IPV4_HDR_LEN && !(data[6] & 0x80) &&
        (memcmp(out, data, 10) != 0 || memcmp(out + 12, data + 12, 8) != 0))
        fail("emitted header differs from the parsed one");
    return 0;
}
