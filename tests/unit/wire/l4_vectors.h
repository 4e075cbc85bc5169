/* SPDX-License-Identifier: BSD-3-Clause */
/* Reads tests/vectors/wire/l4/vectors.txt (made by gen.py beside it) for the UDP, TCP, ICMP and ICMPv6 tests. */
#ifndef HP_TEST_WIRE_L4_VECTORS_H
#define HP_TEST_WIRE_L4_VECTORS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/wire/l4.h>

#include "hp_test.h"

#define L4V_FILE HP_VECTORS_DIR "/wire/l4/vectors.txt"
#define L4V_MAX  400

/*
 * One line: "<kind> <hex of the IP packet> key=value ...". The transport
 * message is located from the IP header (IHL, or byte 40 for IPv6: the
 * generator writes no extension headers).
 */
struct l4v {
    char kind[8];
    int line;
    uint8_t *ip;
    size_t ip_len;
    const uint8_t *l4; /* the transport message, inside ip */
    size_t len;
    struct hp_l4_addrs a; /* pointing into ip */
    uint8_t hlim;         /* IPv6 hop limit (0 for IPv4) */
    char *keys;           /* " key=value ..." */
};

struct l4v_set {
    struct l4v v[L4V_MAX];
    size_t n;
};

static inline int l4v_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode n bytes of hex from s; false on a bad digit. */
static inline bool l4v_unhex(const char *s, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = l4v_hexval(s[2 * i]), lo = hi < 0 ? -1 : l4v_hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

/* Locate the transport message; false if the IP header does not fit. */
static inline bool l4v_locate(struct l4v *v)
{
    const uint8_t *d = v->ip;
    if (v->ip_len >= 40 && d[0] >> 4 == 6) {
        v->a.family = 6;
        v->a.src = d + 8;
        v->a.dst = d + 24;
        v->hlim = d[7];
        v->l4 = d + 40;
        v->len = v->ip_len - 40;
        return true;
    }
    if (v->ip_len >= 20 && d[0] >> 4 == 4 && (size_t)(d[0] & 15) * 4 <= v->ip_len) {
        v->a.family = 4;
        v->a.src = d + 12;
        v->a.dst = d + 16;
        v->l4 = d + (d[0] & 15) * 4;
        v->len = v->ip_len - (size_t)(d[0] & 15) * 4;
        return true;
    }
    return false;
}

/* Load the vectors of kind k1 or k2 (k2 may be NULL). Bad lines and a
 * missing file are reported as failures. The caller frees with l4v_free. */
static inline struct l4v_set *l4v_load(const char *k1, const char *k2)
{
    FILE *f = fopen(L4V_FILE, "r");
    if (!f) {
        hp_test_fail(__FILE__, __LINE__, "%s: %s (regenerate it with tests/vectors/wire/l4/gen.py)",
                     L4V_FILE, strerror(errno));
        return NULL;
    }
    struct l4v_set *s = calloc(1, sizeof *s);
    if (!s) {
        fclose(f);
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        size_t klen = strcspn(line, " ");
        if (klen >= sizeof s->v[0].kind || line[klen] != ' ')
            continue;
        char kind[8];
        memcpy(kind, line, klen);
        kind[klen] = '\0';
        if (strcmp(kind, k1) != 0 && !(k2 && strcmp(kind, k2) == 0))
            continue;
        if (s->n == L4V_MAX) {
            hp_test_fail(__FILE__, __LINE__, "%s: more than %d vectors", L4V_FILE, L4V_MAX);
            break;
        }
        struct l4v *v = &s->v[s->n];
        memset(v, 0, sizeof *v);
        memcpy(v->kind, kind, klen + 1);
        v->line = lineno;
        const char *h = line + klen + 1;
        size_t hlen = strcspn(h, " \n");
        v->ip_len = hlen / 2;
        v->ip = malloc(v->ip_len ? v->ip_len : 1);
        v->keys = strdup(h + hlen);
        if (!v->ip || !v->keys || hlen % 2 || !l4v_unhex(h, v->ip, v->ip_len) || !l4v_locate(v)) {
            hp_test_fail(__FILE__, __LINE__, "%s:%d: malformed line", L4V_FILE, lineno);
            free(v->ip);
            free(v->keys);
            continue;
        }
        s->n++;
    }
    free(line);
    fclose(f);
    if (s->n == 0)
        hp_test_fail(__FILE__, __LINE__, "%s: no %s vectors", L4V_FILE, k1);
    return s;
}

static inline void l4v_free(struct l4v_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].ip);
        free(s->v[i].keys);
    }
    free(s);
}

/* The value of key, up to the next blank (NULL when absent). */
static inline const char *l4v_str(const struct l4v *v, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = v->keys; (p = strchr(p, ' ')) != NULL; p++) {
        if (strncmp(p + 1, key, kl) == 0 && p[1 + kl] == '=')
            return p + 2 + kl;
    }
    return NULL;
}

/* A numeric value (decimal or 0x hex); 0 when absent. */
static inline uint64_t l4v_u64(const struct l4v *v, const char *key)
{
    const char *s = l4v_str(v, key);
    return s ? strtoull(s, NULL, 0) : 0;
}

/* n bytes of hex; all zero and false when absent. */
static inline bool l4v_bytes(const struct l4v *v, const char *key, uint8_t *out, size_t n)
{
    const char *s = l4v_str(v, key);
    memset(out, 0, n);
    return s && l4v_unhex(s, out, n);
}

/* Whether the value of key is exactly want. */
static inline bool l4v_is(const struct l4v *v, const char *key, const char *want)
{
    const char *s = l4v_str(v, key);
    size_t n = strlen(want);
    return s && strncmp(s, want, n) == 0 && (s[n] == ' ' || s[n] == '\n' || s[n] == '\0');
}

/* The expected outcome of parsing with checksum verification, as a reason
 * name; prints "ok" for 0. */
static inline bool l4v_expect(const struct l4v *v, int rc)
{
    return l4v_is(v, "expect", rc == 0 ? "ok" : hp_wire_reason(rc));
}

/* A copy of n bytes in an allocation of exactly n bytes, so that
 * AddressSanitizer sees any read past the end. Never NULL (aborts). */
static inline uint8_t *l4v_tight(const void *p, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (!c)
        abort();
    if (n)
        memcpy(c, p, n);
    return c;
}

#endif
