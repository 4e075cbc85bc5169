/* SPDX-License-Identifier: BSD-3-Clause */
/* Protocol checksum helpers checked on IP packets built by scapy (tests/vectors/cksum/gen.py). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "hp_test.h"

#define VECTORS_FILE HP_VECTORS_DIR "/cksum/vectors.txt"
#define MAX_PKT      9000
#define MAX_VECS     1000

enum kind { K_IPV4, K_UDP4, K_TCP4, K_ICMP4, K_UDP6, K_TCP6, K_ICMP6, K_COUNT };

static const char *const kind_names[K_COUNT] = {"ipv4", "udp4", "tcp4", "icmp4",
                                                "udp6", "tcp6", "icmp6"};

struct vec {
    enum kind kind;
    int line;   /* in vectors.txt */
    size_t len; /* of the whole IP packet */
    unsigned char *data;
    /* Located by locate(): */
    size_t l4off; /* the transport header (or the end of the IPv4 header) */
    size_t ihl;   /* IPv4 header length; 0 for IPv6 */
    size_t addr;  /* offset of the source address; the destination follows */
    int ext;      /* number of IPv6 extension headers walked */
};

struct vecs {
    struct vec v[MAX_VECS];
    size_t n;
    size_t lines;  /* lines that are neither comments nor blank */
    long declared; /* from "# packets: N", or -1 */
};

static bool is_v6(enum kind k)
{
    return k >= K_UDP6;
}

static size_t csum_off(enum kind k)
{
    return k == K_UDP4 || k == K_UDP6 ? 6 : k == K_TCP4 || k == K_TCP6 ? 16 : 2;
}

static uint8_t proto_of(enum kind k)
{
    static const uint8_t p[K_COUNT] = {0, 17, 6, 1, 17, 6, 58};
    return p[k];
}

static size_t min_l4(enum kind k)
{
    return k == K_UDP4 || k == K_UDP6 ? 8 : k == K_TCP4 || k == K_TCP6 ? 20 : 4;
}

static uint16_t be16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

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

/* Find the headers of a parsed packet; false (with a reason) if malformed. */
static bool locate(struct vec *v, char *why, size_t whylen)
{
    const unsigned char *d = v->data;
    if (!is_v6(v->kind)) {
        if (v->len < 20 || d[0] >> 4 != 4) {
            snprintf(why, whylen, "not an IPv4 packet");
            return false;
        }
        v->ihl = (size_t)(d[0] & 15) * 4;
        if (v->ihl < 20 || v->ihl > v->len || be16(d + 2) != v->len) {
            snprintf(why, whylen, "IHL %zu or total length %u does not fit %zu bytes", v->ihl,
                     be16(d + 2), v->len);
            return false;
        }
        v->addr = 12;
        v->l4off = v->ihl;
        if (v->kind != K_IPV4 && d[9] != proto_of(v->kind)) {
            snprintf(why, whylen, "protocol %u, not %s", d[9], kind_names[v->kind]);
            return false;
        }
    } else {
        if (v->len < 40 || d[0] >> 4 != 6 || (size_t)be16(d + 4) + 40 != v->len) {
            snprintf(why, whylen, "not an IPv6 packet of %zu bytes", v->len);
            return false;
        }
        v->ihl = 0;
        v->addr = 8;
        unsigned next = d[6];
        size_t off = 40;
        /* Hop-by-hop options (0) and destination options (60): next header,
         * length in 8-byte units not counting the first. A routing header
         * would change the pseudo-header's destination: none is expected. */
        while (next == 0 || next == 60) {
            if (off + 8 > v->len) {
                snprintf(why, whylen, "truncated extension header at %zu", off);
                return false;
            }
            next = d[off];
            off += ((size_t)d[off + 1] + 1) * 8;
            v->ext++;
        }
        if (off > v->len || next != proto_of(v->kind)) {
            snprintf(why, whylen, "upper layer %u at %zu, not %s", next, off, kind_names[v->kind]);
            return false;
        }
        v->l4off = off;
    }
    if (v->kind != K_IPV4) {
        size_t l4 = v->len - v->l4off;
        if (l4 < min_l4(v->kind) || csum_off(v->kind) + 2 > l4) {
            snprintf(why, whylen, "transport segment of %zu bytes too short", l4);
            return false;
        }
        if ((v->kind == K_UDP4 || v->kind == K_UDP6) && be16(v->data + v->l4off + 4) != l4) {
            snprintf(why, whylen, "UDP length %u, segment %zu", be16(v->data + v->l4off + 4), l4);
            return false;
        }
    }
    return true;
}

/* Parse one "kind hex" line into v; false (with a reason) if malformed. */
static bool parse_line(const char *s, struct vec *v, char *why, size_t whylen)
{
    size_t klen = strcspn(s, " ");
    int k = 0;
    while (k < K_COUNT && !(strlen(kind_names[k]) == klen && strncmp(s, kind_names[k], klen) == 0))
        k++;
    if (k == K_COUNT || s[klen] != ' ') {
        snprintf(why, whylen, "unknown kind \"%.*s\"", (int)klen, s);
        return false;
    }
    const char *h = s + klen + 1;
    size_t hlen = strcspn(h, "\r\n");
    if (hlen == 0 || hlen % 2 || hlen / 2 > MAX_PKT) {
        snprintf(why, whylen, "hex of %zu digits", hlen);
        return false;
    }
    v->kind = (enum kind)k;
    v->len = hlen / 2;
    v->data = malloc(v->len);
    if (!v->data) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    for (size_t i = 0; i < v->len; i++) {
        int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(why, whylen, "bad hex digit near column %zu", klen + 2 + 2 * i);
            return false;
        }
        v->data[i] = (unsigned char)(hi << 4 | lo);
    }
    return locate(v, why, whylen);
}

static void free_vecs(struct vecs *vs)
{
    for (size_t i = 0; i < vs->n; i++)
        free(vs->v[i].data);
    free(vs);
}

/* Read every vector; report (as failures) a missing file and any bad line.
 * Returns NULL only when nothing could be read. */
static struct vecs *load(void)
{
    FILE *f = fopen(VECTORS_FILE, "r");
    if (!f) {
        hp_test_fail(__FILE__, __LINE__, "%s: %s (regenerate it with tests/vectors/cksum/gen.py)",
                     VECTORS_FILE, strerror(errno));
        return NULL;
    }
    struct vecs *vs = calloc(1, sizeof *vs);
    if (!vs) {
        fclose(f);
        hp_test_fail(__FILE__, __LINE__, "out of memory");
        return NULL;
    }
    vs->declared = -1;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (line[0] == '#') {
            long n;
            if (sscanf(line, "# packets: %ld", &n) == 1)
                vs->declared = n;
            continue;
        }
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        vs->lines++;
        if (vs->n == MAX_VECS) {
            hp_test_fail(__FILE__, __LINE__, "%s: more than %d vectors", VECTORS_FILE, MAX_VECS);
            continue;
        }
        struct vec *v = &vs->v[vs->n];
        memset(v, 0, sizeof *v);
        v->line = lineno;
        char why[128];
        if (parse_line(line, v, why, sizeof why)) {
            vs->n++;
        } else {
            free(v->data);
            v->data = NULL;
            hp_test_fail(__FILE__, __LINE__, "%s:%d: %s", VECTORS_FILE, lineno, why);
        }
    }
    free(line);
    fclose(f);
    return vs;
}

/* ---- the functions under test, by kind ------------------------------------- */

static uint16_t compute(enum kind k, const void *src, const void *dst, const void *seg, size_t len)
{
    switch (k) {
    case K_UDP4:
        return hp_cksum_udp4(src, dst, seg, len);
    case K_TCP4:
        return hp_cksum_tcp4(src, dst, seg, len);
    case K_ICMP4:
        return hp_cksum_icmp4(seg, len);
    case K_UDP6:
        return hp_cksum_udp6(src, dst, seg, len);
    case K_TCP6:
        return hp_cksum_tcp6(src, dst, seg, len);
    case K_ICMP6:
        return hp_cksum_icmp6(src, dst, seg, len);
    default:
        return 0;
    }
}

static enum hp_cksum_result verify(enum kind k, const void *src, const void *dst, const void *seg,
                                   size_t len)
{
    switch (k) {
    case K_UDP4:
        return hp_cksum_udp4_verify(src, dst, seg, len);
    case K_TCP4:
        return hp_cksum_tcp4_verify(src, dst, seg, len);
    case K_ICMP4:
        return hp_cksum_icmp4_verify(seg, len);
    case K_UDP6:
        return hp_cksum_udp6_verify(src, dst, seg, len);
    case K_TCP6:
        return hp_cksum_tcp6_verify(src, dst, seg, len);
    case K_ICMP6:
        return hp_cksum_icmp6_verify(src, dst, seg, len);
    default:
        return HP_CKSUM_BAD;
    }
}

/* The pseudo-header partial sum (0 for ICMPv4), from the packet's addresses. */
static uint32_t pseudo(enum kind k, const void *src, const void *dst, size_t len)
{
    if (k == K_ICMP4)
        return 0;
    if (is_v6(k))
        return hp_cksum_pseudo_ipv6(src, dst, proto_of(k), (uint32_t)len);
    return hp_cksum_pseudo_ipv4(src, dst, proto_of(k), (uint16_t)len);
}

/* Copy a vector to buf at offset align (to try odd alignments too). */
static unsigned char *copy_at(unsigned char *buf, const struct vec *v, size_t align)
{
    memcpy(buf + align, v->data, v->len);
    return buf + align;
}

static const size_t aligns[] = {0, 1, 3};

/* ---- tests --------------------------------------------------------------------- */

HP_TEST(vectors_file)
{
    struct vecs *vs = load();
    HP_REQUIRE(vs != NULL);
    HP_CHECK_GT(vs->n, 0);
    HP_CHECK_EQ(vs->n, vs->lines);
    HP_CHECK_EQ(vs->declared, (long)vs->lines);
    int per_kind[K_COUNT] = {0}, options = 0, ext = 0;
    for (size_t i = 0; i < vs->n; i++) {
        per_kind[vs->v[i].kind]++;
        options += vs->v[i].ihl > 20;
        ext += vs->v[i].ext > 0;
    }
    for (int k = 0; k < K_COUNT; k++)
        if (per_kind[k] == 0)
            hp_test_fail(__FILE__, __LINE__, "no %s vector", kind_names[k]);
    HP_CHECK_GT(options, 0); /* IPv4 headers with options */
    HP_CHECK_GT(ext, 0);     /* IPv6 extension headers */
    free_vecs(vs);
}

HP_TEST(vectors_ipv4_header)
{
    struct vecs *vs = load();
    HP_REQUIRE(vs != NULL);
    static unsigned char buf[MAX_PKT + 8];
    int checked = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct vec *v = &vs->v[i];
        if (is_v6(v->kind))
            continue;
        for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
            unsigned char *h = copy_at(buf, v, aligns[a]);
            uint16_t stored = hp_test_load16(h + 10);
            checked++;
            if (!hp_cksum_ipv4_hdr_ok(h, v->ihl) || hp_cksum_ipv4_hdr(h, v->ihl) != stored) {
                hp_test_fail(__FILE__, __LINE__,
                             "line %d (%s, IHL %zu, alignment %zu): ok %d, computed 0x%04x, "
                             "stored 0x%04x",
                             v->line, kind_names[v->kind], v->ihl, aligns[a],
                             hp_cksum_ipv4_hdr_ok(h, v->ihl), hp_cksum_ipv4_hdr(h, v->ihl), stored);
                break;
            }
            /* Computed as if the field were zero, whatever it holds. */
            hp_test_store16(h + 10, 0xA5C3);
            HP_CHECK_EQ(hp_cksum_ipv4_hdr(h, v->ihl), stored);
            HP_CHECK(!hp_cksum_ipv4_hdr_ok(h, v->ihl));
            hp_test_store16(h + 10, stored);
            /* Every header byte, the checksum field included: flip a bit,
             * detect it, recompute, accept; put it back, accept. */
            for (size_t pos = 0; pos < v->ihl; pos++) {
                unsigned char mask = (unsigned char)(1u << (pos % 8));
                h[pos] ^= mask;
                bool bad_detected = !hp_cksum_ipv4_hdr_ok(h, v->ihl);
                uint16_t fixed = hp_cksum_ipv4_hdr(h, v->ihl);
                uint16_t saved = hp_test_load16(h + 10);
                hp_test_store16(h + 10, fixed);
                bool fixed_ok = hp_cksum_ipv4_hdr_ok(h, v->ihl);
                hp_test_store16(h + 10, saved);
                h[pos] ^= mask;
                bool restored_ok = hp_cksum_ipv4_hdr_ok(h, v->ihl);
                if (!bad_detected || !fixed_ok || !restored_ok) {
                    hp_test_fail(__FILE__, __LINE__,
                                 "line %d: header byte %zu ^ 0x%02x: detected %d, ok after "
                                 "recomputing %d, ok after restoring %d",
                                 v->line, pos, mask, bad_detected, fixed_ok, restored_ok);
                    break;
                }
            }
        }
    }
    HP_CHECK_GT(checked, 0);
    free_vecs(vs);
}

/* Flip bits of several transport bytes (header and payload, never the
 * checksum field) and of the pseudo-header addresses: each must be BAD;
 * recomputing makes it GOOD; restoring makes it GOOD again. */
static void corrupt_and_repair(const struct vec *v, unsigned char *pkt)
{
    enum kind k = v->kind;
    unsigned char *seg = pkt + v->l4off;
    const unsigned char *src = pkt + v->addr, *dst = src + (is_v6(k) ? 16 : 4);
    size_t len = v->len - v->l4off, co = csum_off(k);
    uint16_t stored = hp_test_load16(seg + co);
    const size_t cand[] = {0,         1,       co - 1,  co + 2, min_l4(k) - 1,
                           min_l4(k), len / 2, len - 2, len - 1};
    for (size_t c = 0; c < sizeof cand / sizeof cand[0]; c++) {
        size_t pos = cand[c];
        if (pos >= len || (pos >= co && pos < co + 2))
            continue;
        static const unsigned char masks[] = {0x01, 0x80, 0xFF};
        for (size_t m = 0; m < sizeof masks; m++) {
            seg[pos] ^= masks[m];
            enum hp_cksum_result r1 = verify(k, src, dst, seg, len);
            uint16_t fixed = compute(k, src, dst, seg, len);
            hp_test_store16(seg + co, fixed);
            enum hp_cksum_result r2 = verify(k, src, dst, seg, len);
            hp_test_store16(seg + co, stored);
            seg[pos] ^= masks[m];
            enum hp_cksum_result r3 = verify(k, src, dst, seg, len);
            if (r1 != HP_CKSUM_BAD || r2 != HP_CKSUM_GOOD || r3 != HP_CKSUM_GOOD) {
                hp_test_fail(__FILE__, __LINE__,
                             "line %d (%s): segment byte %zu ^ 0x%02x: verify gave %d (want "
                             "BAD=1), after recomputing %d, after restoring %d (want GOOD=0)",
                             v->line, kind_names[k], pos, masks[m], r1, r2, r3);
                return;
            }
        }
    }
    /* The checksum field itself (for UDP over IPv4 a zero field means
     * "none", hence NONE). */
    for (int b = 0; b < 16; b += 5) {
        uint16_t bad = (uint16_t)(stored ^ (1u << b));
        hp_test_store16(seg + co, bad);
        enum hp_cksum_result want = k == K_UDP4 && bad == 0 ? HP_CKSUM_NONE : HP_CKSUM_BAD;
        enum hp_cksum_result got = verify(k, src, dst, seg, len);
        hp_test_store16(seg + co, stored);
        if (got != want) {
            hp_test_fail(__FILE__, __LINE__,
                         "line %d (%s): checksum field 0x%04x: verify %d, want %d", v->line,
                         kind_names[k], bad, got, want);
            return;
        }
    }
    /* The pseudo-header: a wrong source or destination address. */
    if (k != K_ICMP4) {
        unsigned char s2[16], d2[16];
        size_t alen = is_v6(k) ? 16 : 4;
        for (size_t i = 0; i < alen; i++) {
            memcpy(s2, src, alen);
            memcpy(d2, dst, alen);
            s2[i] ^= 0x10;
            d2[alen - 1 - i] ^= 0x01;
            enum hp_cksum_result rs = verify(k, s2, dst, seg, len);
            enum hp_cksum_result rd = verify(k, src, d2, seg, len);
            if (rs != HP_CKSUM_BAD || rd != HP_CKSUM_BAD) {
                hp_test_fail(__FILE__, __LINE__,
                             "line %d (%s): address byte %zu changed: verify gave %d (source), "
                             "%d (destination), want BAD=1",
                             v->line, kind_names[k], i, rs, rd);
                return;
            }
        }
    }
}

HP_TEST(vectors_transport)
{
    struct vecs *vs = load();
    HP_REQUIRE(vs != NULL);
    static unsigned char buf[MAX_PKT + 8];
    int checked = 0;
    for (size_t i = 0; i < vs->n && !hp_test_failed(); i++) {
        const struct vec *v = &vs->v[i];
        enum kind k = v->kind;
        if (k == K_IPV4)
            continue;
        for (size_t a = 0; a < sizeof aligns / sizeof aligns[0] && !hp_test_failed(); a++) {
            unsigned char *pkt = copy_at(buf, v, aligns[a]);
            unsigned char *seg = pkt + v->l4off;
            const unsigned char *src = pkt + v->addr, *dst = src + (is_v6(k) ? 16 : 4);
            size_t len = v->len - v->l4off, co = csum_off(k);
            uint16_t stored = hp_test_load16(seg + co);
            checked++;

            enum hp_cksum_result r = verify(k, src, dst, seg, len);
            uint16_t c = compute(k, src, dst, seg, len);
            /* Through the pseudo-header functions and hp_cksum_l4; for UDP a
             * computed 0 is sent as 0xFFFF. */
            uint16_t l4 = hp_cksum_l4(pseudo(k, src, dst, len), seg, len, co);
            bool udp = k == K_UDP4 || k == K_UDP6;
            uint16_t l4_sent = udp && l4 == 0 ? 0xFFFF : l4;
            if (r != HP_CKSUM_GOOD || c != stored || l4_sent != stored) {
                hp_test_fail(__FILE__, __LINE__,
                             "line %d (%s, %zu-byte segment at %zu, alignment %zu): verify %d "
                             "(want GOOD=0), computed 0x%04x, via hp_cksum_l4 0x%04x, stored "
                             "(by scapy) 0x%04x",
                             v->line, kind_names[k], len, v->l4off, aligns[a], r, c, l4, stored);
                break;
            }
            /* Computed as if the field were zero, whatever it holds. */
            hp_test_store16(seg + co, 0x5AA5);
            HP_CHECK_EQ(compute(k, src, dst, seg, len), stored);
            HP_CHECK_EQ(hp_cksum_l4(pseudo(k, src, dst, len), seg, len, co), l4);
            hp_test_store16(seg + co, stored);
            corrupt_and_repair(v, pkt);
        }
    }
    HP_CHECK_GT(checked, 0);
    free_vecs(vs);
}

HP_TEST(vectors_udp_zero_checksum)
{
    struct vecs *vs = load();
    HP_REQUIRE(vs != NULL);
    static unsigned char buf[MAX_PKT + 8];
    int udp4 = 0, udp6 = 0, zero4 = 0, zero6 = 0;
    for (size_t i = 0; i < vs->n; i++) {
        const struct vec *v = &vs->v[i];
        enum kind k = v->kind;
        if (k != K_UDP4 && k != K_UDP6)
            continue;
        unsigned char *pkt = copy_at(buf, v, 1);
        unsigned char *seg = pkt + v->l4off;
        const unsigned char *src = pkt + v->addr, *dst = src + (k == K_UDP6 ? 16 : 4);
        size_t len = v->len - v->l4off;
        uint16_t stored = hp_test_load16(seg + 6);
        HP_CHECK_NE(stored, 0); /* scapy never sends 0 */
        /* A datagram whose checksum computes to 0 carries 0xFFFF. */
        if (hp_cksum_l4(pseudo(k, src, dst, len), seg, len, 6) == 0) {
            HP_CHECK_EQ(stored, 0xFFFF);
            HP_CHECK_EQ(compute(k, src, dst, seg, len), 0xFFFF);
            HP_CHECK_EQ(verify(k, src, dst, seg, len), HP_CKSUM_GOOD);
            *(k == K_UDP4 ? &zero4 : &zero6) += 1;
        }
        /* A zero field: "no checksum" over IPv4, invalid over IPv6. */
        hp_test_store16(seg + 6, 0);
        if (k == K_UDP4) {
            udp4++;
            HP_CHECK_EQ(hp_cksum_udp4_verify(src, dst, seg, len), HP_CKSUM_NONE);
        } else {
            udp6++;
            HP_CHECK_EQ(hp_cksum_udp6_verify(src, dst, seg, len), HP_CKSUM_BAD);
        }
        /* ... whatever the data: corrupting it (here the source port and
         * the last byte, when that is not the checksum field) changes
         * nothing. */
        seg[0] ^= 0x42;
        if (len > 8)
            seg[len - 1] ^= 0x42;
        if (k == K_UDP4)
            HP_CHECK_EQ(hp_cksum_udp4_verify(src, dst, seg, len), HP_CKSUM_NONE);
        else
            HP_CHECK_EQ(hp_cksum_udp6_verify(src, dst, seg, len), HP_CKSUM_BAD);
    }
    HP_CHECK_GT(udp4, 0);
    HP_CHECK_GT(udp6, 0);
    /* gen.py builds such datagrams on purpose; they must be in the file. */
    HP_CHECK_GT(zero4, 0);
    HP_CHECK_GT(zero6, 0);
    free_vecs(vs);
}
