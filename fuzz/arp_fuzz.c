/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the ARP view must agree between check and parse, stay in bounds, and round-trip through emit byte for byte. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/arp.h>

/* The input is an ARP packet (after the Ethernet header), in an allocation
 * of exactly its size. */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "arp_fuzz: %s\n", what);
    abort();
}

static volatile uint32_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct hp_arp_repr r;
    int rc = hp_arp_check(data, size);
    int rp = hp_arp_parse(data, size, &r);
    if (rc != rp)
        fail("check and parse disagree");
    if (rc < 0) {
        if (!hp_wire_is_reason(rc) || rc == -HP_WIRE_NO_SPACE)
            fail("not a receive reason");
        return 0;
    }
    if (rc != 0 || size < HP_ARP_LEN)
        fail("accepted a short packet");
    sink = hp_arp_op(data) + hp_arp_sha_ptr(data)[5] + hp_arp_spa_ptr(data)[3] +
           hp_arp_tha_ptr(data)[5] + hp_arp_tpa_ptr(data)[3];
    if (hp_arp_op(data) != r.op || (r.op != HP_ARP_OP_REQUEST && r.op != HP_ARP_OP_REPLY))
        fail("opcode");

    uint8_t out[HP_ARP_LEN];
    if (hp_arp_repr_len(&r) != HP_ARP_LEN)
        fail("repr_len");
    if (hp_arp_emit(&r, out, HP_ARP_LEN - 1) != -HP_WIRE_NO_SPACE)
        fail("emit into too little room");
    if (hp_arp_emit(&r, out, sizeof out) != (int)HP_ARP_LEN)
        fail("emit length");
    if (memcmp(out, data, HP_ARP_LEN) != 0)
        fail("emitted packet differs from the parsed one");
    struct hp_arp_repr r2;
    if (hp_arp_parse(out, sizeof out, &r2) != 0 || r.op != r2.op || memcmp(r.sha, r2.sha, 6) ||
        memcmp(r.spa, r2.spa, 4) || memcmp(r.tha, r2.tha, 6) || memcmp(r.tpa, r2.tpa, 4))
        fail("round trip changed the repr");
    return 0;
}
