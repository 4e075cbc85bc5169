/* SPDX-License-Identifier: BSD-3-Clause */
/* Reader for the scapy-built Ethernet/ARP/IPv4/IPv6 vectors (tests/vectors/wire/l2l3/vectors.txt), shared by their tests. */
#ifndef HP_TEST_L2L3_VECTORS_H
#define HP_TEST_L2L3_VECTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define L2L3_VECTORS_FILE HP_VECTORS_DIR "/wire/l2l3/vectors.txt"
#define L2L3_MAX_KV       24

/* One line: "<kind> <hex> key=value...". */
struct l2l3_vec {
    int line;      /* in vectors.txt, for messages */
    uint8_t *data; /* the packet */
    size_t len;
    int expect; /* from expect=: 0 or -HP_WIRE_* */
    int nkv;
    const char *key[L2L3_MAX_KV], *val[L2L3_MAX_KV];
    char *text; /* owns the strings above */
};

struct l2l3_vecs {
    size_t n;
    struct l2l3_vec *v;
};

/* Every vector of one kind ("eth", "arp", "ipv4", "ipv6"). A missing file or
 * a malformed line is reported as a failure of the calling test; NULL only
 * when nothing could be read. */
struct l2l3_vecs *l2l3_load(const char *kind);
void l2l3_free(struct l2l3_vecs *vs);

/* The value of key, or NULL. */
const char *l2l3_get(const struct l2l3_vec *v, const char *key);
/* The value of key as an integer; a missing or malformed value fails the test
 * (naming the line) and gives -1. */
long long l2l3_int(const struct l2l3_vec *v, const char *key);
/* The value of key as n bytes of hex; false (and a failure) otherwise. */
bool l2l3_bytes(const struct l2l3_vec *v, const char *key, uint8_t *out, size_t n);
/* "ok" -> 0, a hp_wire_reason() name -> its negative value, else 1. */
int l2l3_reason(const char *name);

/* A copy of len bytes in a fresh allocation that ends where the copy ends,
 * starting lead bytes into it (to vary alignment), so that AddressSanitizer
 * reports any read past len. Free *base when done. Never NULL. */
uint8_t *l2l3_tight(const void *src, size_t len, size_t lead, void **base);

#endif
