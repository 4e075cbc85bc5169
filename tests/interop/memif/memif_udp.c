/* SPDX-License-Identifier: BSD-3-Clause */
/* A UDP client on a hotpath stack over memif for tests/interop/memif.sh: datagrams to `hotpath serve --udp-echo`, every echo checked, SHA-256 of both directions compared. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/udp.h>

#ifdef HP_HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif

/*
 * usage: memif_udp --socket PATH [--role client|server] [--family 4|6]
 *                  [--count N] [--timeout S]
 * Our stack is 198.18.0.1/24 (2001:2::1/64), the server 198.18.0.2:7
 * ([2001:2::2]:7). Datagram k has a size and bytes derived from k (its
 * first four bytes are k); at most 32 are out at once, and one not echoed
 * within 200 ms is sent again (the first ones may wait for ARP or NDP). An
 * echo must be byte for byte what was sent; each is taken once. At the end
 * the SHA-256 of the datagrams sent (in order) and of the echoes (put in
 * order) are printed and compared. Exit 0 when every one came back.
 */

#define WINDOW 32

struct opts {
    const char *socket;
    int role, family;
    uint32_t count;
    double timeout;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t size_of(uint32_t k, int family)
{
    uint32_t max = family == 4 ? 1472 : 1452;
    return 4 + (k * 2654435761u) % (max - 3);
}

static void fill(uint8_t *d, uint32_t k, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++)
        d[i] = (uint8_t)(k * 131 + i * 17 + (i >> 8));
    memcpy(d, &k, 4);
}

struct hash {
#ifdef HP_HAVE_LIBCRYPTO
    EVP_MD_CTX *ctx;
#endif
    unsigned char out[32];
};

static void hash_start(struct hash *h)
{
    memset(h, 0, sizeof *h);
#ifdef HP_HAVE_LIBCRYPTO
    h->ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL);
#endif
}

static void hash_add(struct hash *h, const uint8_t *d, size_t n)
{
#ifdef HP_HAVE_LIBCRYPTO
    EVP_DigestUpdate(h->ctx, d, n);
#else
    (void)h, (void)d, (void)n;
#endif
}

static void hash_end(struct hash *h, char hex[65])
{
#ifdef HP_HAVE_LIBCRYPTO
    unsigned n = 0;
    EVP_DigestFinal_ex(h->ctx, h->out, &n);
    EVP_MD_CTX_free(h->ctx);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", h->out[i]);
#else
    (void)h;
    snprintf(hex, 65, "(no libcrypto: compared byte for byte only)");
#endif
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"socket", required_argument, NULL, 's'},  {"role", required_argument, NULL, 'r'},
        {"family", required_argument, NULL, 'f'},  {"count", required_argument, NULL, 'n'},
        {"timeout", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
    };
    *o = (struct opts){.family = 4, .count = 5000, .timeout = 30};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == 's')
            o->socket = optarg;
        else if (c == 'r')
            o->role = strcmp(optarg, "server") == 0 ? HP_MEMIF_SERVER : HP_MEMIF_CLIENT;
        else if (c == 'f')
            o->family = atoi(optarg);
        else if (c == 'n')
            o->count = (uint32_t)strtoul(optarg, NULL, 10);
        else if (c == 't')
            o->timeout = strtod(optarg, NULL);
        else
            return -1;
    }
    return o->socket && (o->family == 4 || o->family == 6) && o->count ? 0 : -1;
}

struct run {
    struct hp_stack *st;
    struct hp_udp_sock *u;
    struct hp_sockaddr to;
    uint8_t *got;    /* per datagram: echoed */
    double *sent_at; /* per datagram: last sent, 0: never */
    uint8_t *echo;   /* the echoes, each at off[k] */
    size_t *off;
    uint32_t next, back, bad;
};

static void send_some(struct run *r, const struct opts *o)
{
    uint8_t d[1500];
    double t = now_s();
    /* Resend the oldest ones that are late, then new ones. */
    for (uint32_t k = 0; k < r->next; k++) {
        if (r->got[k] || t - r->sent_at[k] < 0.2)
            continue;
        fill(d, k, size_of(k, o->family));
        if (hp_udp_sendto(r->u, d, size_of(k, o->family), &r->to) >= 0)
            r->sent_at[k] = t;
    }
    while (r->next < o->count && r->next - r->back < WINDOW) {
        uint32_t k = r->next, len = size_of(k, o->family);
        fill(d, k, len);
        if (hp_udp_sendto(r->u, d, len, &r->to) < 0)
            break;
        r->sent_at[k] = t;
        r->next++;
    }
}

static void take_echoes(struct run *r, const struct opts *o)
{
    uint8_t d[1500];
    int n;
    while ((n = hp_udp_recvfrom(r->u, d, sizeof d, NULL)) >= 4) {
        uint32_t k;
        memcpy(&k, d, 4);
        if (k >= r->next || r->got[k])
            continue; /* a duplicate of a resent one */
        if ((uint32_t)n != size_of(k, o->family)) {
            r->bad++;
            continue;
        }
        memcpy(r->echo + r->off[k], d, (size_t)n);
        r->got[k] = 1;
        r->back++;
    }
}

static int setup(struct run *r, struct hp_link *l, const struct opts *o)
{
    struct hp_stack_config sc = {.name = "memif-udp", .flags = HP_STACK_F_NO_DAD};
    r->st = hp_stack_create(&sc);
    int ifx = r->st ? hp_stack_add_iface(r->st, l) : -1;
    struct hp_sockaddr me;
    hp_sockaddr_parse(o->family == 4 ? "198.18.0.1" : "2001:2::1", &me);
    if (ifx < 0 || hp_stack_add_addr(r->st, ifx, o->family, me.addr, o->family == 4 ? 24 : 64) < 0)
        return -1;
    hp_sockaddr_parse(o->family == 4 ? "198.18.0.2:7" : "[2001:2::2]:7", &r->to);
    r->u = hp_udp_open(r->st, o->family, NULL);
    struct hp_sockaddr any = {.family = (uint8_t)o->family};
    if (!r->u || hp_udp_bind(r->u, &any) < 0 || hp_udp_set_rcvq(r->u, 4096) < 0)
        return -1;
    r->got = calloc(o->count, 1);
    r->sent_at = calloc(o->count, sizeof *r->sent_at);
    r->off = calloc(o->count + 1, sizeof *r->off);
    if (!r->got || !r->sent_at || !r->off)
        return -1;
    for (uint32_t k = 0; k < o->count; k++)
        r->off[k + 1] = r->off[k] + size_of(k, o->family);
    r->echo = calloc(r->off[o->count], 1);
    return r->echo ? 0 : -1;
}

/* SHA-256 of what was sent, in order, and of the echoes, put in order;
 * and whether the echoes are byte for byte what was sent. */
static bool digests(const struct run *r, const struct opts *o, char a[65], char b[65])
{
    struct hash hs, hr;
    hash_start(&hs);
    hash_start(&hr);
    uint8_t d[1500];
    bool same = true;
    for (uint32_t k = 0; k < o->count; k++) {
        uint32_t len = size_of(k, o->family);
        fill(d, k, len);
        hash_add(&hs, d, len);
        hash_add(&hr, r->echo + r->off[k], len);
        same &= memcmp(d, r->echo + r->off[k], len) == 0;
    }
    hash_end(&hs, a);
    hash_end(&hr, b);
    return same;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) < 0) {
        fprintf(stderr,
                "usage: memif_udp --socket PATH [--role client|server] [--family 4|6] [--count N] "
                "[--timeout S]\n");
        return 2;
    }
    struct hp_link_config c = {0};
    c.memif.role = o.role;
    c.memif.socket = o.socket;
    struct hp_link *l = hp_link_open("memif", &c);
    struct run r;
    memset(&r, 0, sizeof r);
    if (!l || setup(&r, l, &o) < 0) {
        fprintf(stderr, "memif_udp: %s\n", l ? "cannot set up the stack" : hp_link_error());
        return 1;
    }
    double end = now_s() + o.timeout;
    while (r.back < o.count && now_s() < end) {
        hp_stack_poll(r.st);
        struct hp_event ev[16];
        while (hp_stack_events(r.st, ev, 16) == 16)
            ;
        if (hp_link_up(l))
            send_some(&r, &o);
        take_echoes(&r, &o);
    }
    char a[65], b[65];
    bool same = digests(&r, &o, a, b);
    printf("memif_udp: %u of %u datagrams echoed (IPv%d), %u of the wrong size, %s\n", r.back,
           o.count, o.family, r.bad, same ? "byte for byte" : "CONTENT DIFFERS");
    printf("memif_udp: sha256 sent %s\nmemif_udp: sha256 echoed %s\n", a, b);
    hp_udp_close(r.u);
    hp_stack_destroy(r.st);
    int rc = hp_link_close(l);
    free(r.got);
    free(r.sent_at);
    free(r.off);
    free(r.echo);
    return r.back == o.count && r.bad == 0 && rc == 0 && same && strcmp(a, b) == 0 ? 0 : 1;
}
