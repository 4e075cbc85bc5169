/* SPDX-License-Identifier: BSD-3-Clause */
/* Reader for the scapy-built Ethernet/ARP/IPv4/IPv6 vectors, shared by test_eth.c, test_arp.c, test_ipv4.c and test_ipv6.c. */
#include "l2l3_vectors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/common.h>

#include "hp_test.h"

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool unhex(const char *h, size_t hlen, uint8_t *out)
{
    for (size_t i = 0; i < hlen / 2; i++) {
        int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return hlen % 2 == 0;
}

int l2l3_reason(const char *name)
{
    if (strcmp(name, "ok") == 0)
        return 0;
    for (int r = HP_WIRE_TRUNCATED; r < HP_WIRE_END; r++)
        if (strcmp(name, hp_wire_reason(r)) == 0)
            return -r;
    return 1;
}

/* Split a line (modified in place) into v; false with a reason if malformed. */
static bool parse_line(char *s, struct l2l3_vec *v, char *why, size_t whylen)
{
    char *save = NULL;
    strtok_r(s, " \r\n", &save); /* the kind, already matched */
    char *hex = strtok_r(NULL, " \r\n", &save);
    if (!hex || strlen(hex) % 2 != 0) {
        snprintf(why, whylen, "no packet hex");
        return false;
    }
    v->len = strlen(hex) / 2;
    v->data = malloc(v->len ? v->len : 1);
    if (!v->data || !unhex(hex, strlen(hex), v->data)) {
        snprintf(why, whylen, "bad hex");
        return false;
    }
    for (char *kv; (kv = strtok_r(NULL, " \r\n", &save)) != NULL;) {
        char *eq = strchr(kv, '=');
        if (!eq || v->nkv == L2L3_MAX_KV) {
            snprintf(why, whylen, "bad field \"%s\"", kv);
            return false;
        }
        *eq = '\0';
        v->key[v->nkv] = kv;
        v->val[v->nkv] = eq + 1;
        v->nkv++;
    }
    const char *e = l2l3_get(v, "expect");
    if (!e || (v->expect = l2l3_reason(e)) > 0) {
        snprintf(why, whylen, "missing or unknown expect=");
        return false;
    }
    return true;
}

static void free_one(struct l2l3_vec *v)
{
    free(v->data);
    free(v->text);
}

void l2l3_free(struct l2l3_vecs *vs)
{
    if (!vs)
        return;
    for (size_t i = 0; i < vs->n; i++)
        free_one(&vs->v[i]);
    free(vs->v);
    free(vs);
}

struct l2l3_vecs *l2l3_load(const char *kind)
{
    FILE *f = fopen(L2L3_VECTORS_FILE, "r");
    if (!f) {
        hp_test_fail(__FILE__, __LINE__,
                     "%s: %s (regenerate it with tests/vectors/wire/l2l3/gen.py)",
                     L2L3_VECTORS_FILE, strerror(errno));
        return NULL;
    }
    struct l2l3_vecs *vs = calloc(1, sizeof *vs);
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    int lineno = 0;
    size_t klen = strlen(kind);
    while (vs && getline(&line, &lcap, f) >= 0) {
        lineno++;
        if (line[0] == '#' || strncmp(line, kind, klen) != 0 || line[klen] != ' ')
            continue;
        if (vs->n == cap) {
            cap = cap ? 2 * cap : 64;
            struct l2l3_vec *nv = realloc(vs->v, cap * sizeof *nv);
            if (!nv)
                break;
            vs->v = nv;
        }
        struct l2l3_vec *v = &vs->v[vs->n];
        memset(v, 0, sizeof *v);
        v->line = lineno;
        v->text = strdup(line);
        char why[96];
        if (v->text && parse_line(v->text, v, why, sizeof why)) {
            vs->n++;
        } else {
            hp_test_fail(__FILE__, __LINE__, "%s:%d: %s", L2L3_VECTORS_FILE, lineno,
                         v->text ? why : "out of memory");
            free_one(v);
        }
    }
    free(line);
    fclose(f);
    if (vs && vs->n == 0)
        hp_test_fail(__FILE__, __LINE__, "%s: no %s vectors", L2L3_VECTORS_FILE, kind);
    return vs;
}

const char *l2l3_get(const struct l2l3_vec *v, const char *key)
{
    for (int i = 0; i < v->nkv; i++)
        if (strcmp(v->key[i], key) == 0)
            return v->val[i];
    return NULL;
}

long long l2l3_int(const struct l2l3_vec *v, const char *key)
{
    const char *s = l2l3_get(v, key);
    char *end = NULL;
    long long x = s ? strtoll(s, &end, 0) : 0;
    if (!s || *s == '\0' || *end != '\0') {
        hp_test_fail(__FILE__, __LINE__, "vectors line %d: no integer %s=", v->line, key);
        return -1;
    }
    return x;
}

bool l2l3_bytes(const struct l2l3_vec *v, const char *key, uint8_t *out, size_t n)
{
    const char *s = l2l3_get(v, key);
    if (!s || strlen(s) != 2 * n || !unhex(s, 2 * n, out)) {
        hp_test_fail(__FILE__, __LINE__, "vectors line %d: no %zu-byte %s=", v->line, n, key);
        return false;
    }
    return true;
}

uint8_t *l2l3_tight(const void *src, size_t len, size_t lead, void **base)
{
    /* malloc(0) under AddressSanitizer gives a pointer with no readable
     * byte, which is what an empty packet should be. */
    uint8_t *a = malloc(lead + len);
    if (!a && lead + len == 0)
        a = malloc(1);
    if (!a) {
        fprintf(stderr, "l2l3_tight: out of memory\n");
        abort();
    }
    memset(a, 0xA5, lead);
    if (len)
        memcpy(a + lead, src, len);
    *base = a;
    return a + lead;
}
