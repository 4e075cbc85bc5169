/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the Ethernet view must agree between check and parse, stay in bounds, and round-trip through emit byte for byte. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/eth.h>

/*
 * The input is a frame from the destination address. libFuzzer hands it in
 * an allocation of exactly its size, so AddressSanitizer reports any read
 * past the end.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "eth_fuzz: %s\n", what);
    abort();
}

static volatile uint32_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hp_eth_repr r;
    size_t hlen = 0;
    int rc = hp_eth_check(data, size);
    int rp = hp_eth_parse(data, size, &r, &hlen);
    if (rc != rp)
        fail("check and parse disagree");
    if (rc < 0) {
        if (!hp_wire_is_reason(rc) || rc == -HP_WIRE_NO_SPACE)
            fail("not a receive reason");
        return 0;
    }
    if (rc != 0)
        fail("positive return");
    /* Accessors, within the frame. */
    if (hlen > size || hlen != hp_eth_hdr_len(data) || hp_eth_payload(data) != data + hlen)
        fail("header length");
    sink = hp_eth_ethertype(data) + hp_eth_vlan_tci(data) + hp_eth_dst_ptr(data)[5] +
           hp_eth_src_ptr(data)[5];
    if (hp_eth_ethertype(data) != r.ethertype || hp_eth_vlan_tci(data) != r.vlan_tci ||
        hp_eth_has_vlan(data) != r.has_vlan)
        fail("accessors and repr disagree");

    /* Emit: the header back, byte for byte (the repr holds every bit of it). */
    uint8_t out[HP_ETH_VLAN_HDR_LEN];
    if (hp_eth_repr_len(&r) != hlen)
        fail("repr_len");
    if (hp_eth_emit(&r, out, hlen - 1) != -HP_WIRE_NO_SPACE)
        fail("emit into too little room");
    if (hp_eth_emit(&r, out, hlen) != (int)hlen)
        fail("emit length");
    if (memcmp(out, data, hlen) != 0)
        fail("emitted header differs from the parsed one");
    struct hp_eth_repr r2;
    size_t h2;
    if (hp_eth_parse(out, hlen, &r2, &h2) != 0 || h2 != hlen)
        fail("emitted header does not parse");
    if (memcmp(r.dst, r2.dst, 6) || memcmp(r.src, r2.src, 6) || r.ethertype != r2.ethertype ||
        r.has_vlan != r2.has_vlan || r.vlan_tci != r2.vlan_tci)
        fail("round trip changed the repr");
    return 0;
}
