/* SPDX-License-Identifier: BSD-3-Clause */
/* A memif end for tests/interop/memif.sh: send numbered frames to a forwarding peer (DPDK's testpmd) and check that each comes back, MACs swapped or not, byte for byte. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hotpath/err.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>

/*
 * usage: memif_peer --socket PATH [--role client|server] [--id N]
 *                   [--count N] [--size BYTES] [--expect macswap|io]
 *                   [--zero-copy] [--chain] [--timeout S]
 * Waits for the link to come up, then keeps at most 64 frames in flight:
 * frame k carries k in its payload and a pattern derived from k, so that
 * any change, loss, duplicate or reordering is seen. With --chain the
 * frames go out as three-segment chains. Prints one line and exits 0 when
 * every frame came back as expected.
 */

struct opts {
    const char *socket, *expect;
    int role;
    uint32_t id, count, size;
    unsigned flags;
    bool chain;
    double timeout;
};

static const uint8_t SRC[6] = {0x02, 0x68, 0x70, 0x00, 0x00, 0x01};
static const uint8_t DST[6] = {0x02, 0x68, 0x70, 0x00, 0x00, 0x02};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fill(uint8_t *f, uint32_t size, uint32_t k)
{
    memcpy(f, DST, 6);
    memcpy(f + 6, SRC, 6);
    f[12] = 0x88;
    f[13] = 0xb5; /* local experimental EtherType: no stack on the way cares */
    for (uint32_t i = 14; i < size; i++)
        f[i] = (uint8_t)(k * 31 + i * 7);
    memcpy(f + 14, &k, 4);
}

static struct hp_buf *make(struct hp_pool *p, uint32_t size, uint32_t k, bool chain)
{
    uint8_t f[9216];
    fill(f, size, k);
    uint32_t cut[3] = {size / 3, size / 3, size - 2 * (size / 3)};
    unsigned parts = chain ? 3 : 1;
    if (!chain)
        cut[0] = size;
    struct hp_buf *head = NULL;
    uint32_t off = 0;
    for (unsigned i = 0; i < parts; i++) {
        struct hp_buf *b = hp_buf_alloc(p);
        uint8_t *d = b ? hp_buf_append(b, cut[i]) : NULL;
        if (!d) {
            hp_buf_free(b);
            hp_buf_free(head);
            return NULL;
        }
        memcpy(d, f + off, cut[i]);
        off += cut[i];
        if (!head)
            head = b;
        else
            hp_buf_chain(head, b);
    }
    return head;
}

/* 0 when b is frame k as the peer should send it back, else why not. */
static const char *check(const struct hp_buf *b, const struct opts *o, uint32_t k)
{
    uint8_t want[9216], got[9216];
    if (b->pkt_len != o->size)
        return "wrong length";
    fill(want, o->size, k);
    if (strcmp(o->expect, "macswap") == 0) {
        memcpy(want, SRC, 6);
        memcpy(want + 6, DST, 6);
    }
    if (hp_buf_copy_out(b, 0, o->size, got) < 0)
        return "unreadable chain";
    return memcmp(want, got, o->size) == 0 ? NULL : "bytes differ";
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"socket", required_argument, NULL, 's'},  {"role", required_argument, NULL, 'r'},
        {"id", required_argument, NULL, 'i'},      {"count", required_argument, NULL, 'n'},
        {"size", required_argument, NULL, 'z'},    {"expect", required_argument, NULL, 'e'},
        {"zero-copy", no_argument, NULL, 'Z'},     {"chain", no_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
    };
    *o = (struct opts){.expect = "macswap", .count = 10000, .size = 64, .timeout = 30};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 's':
            o->socket = optarg;
            break;
        case 'r':
            o->role = strcmp(optarg, "server") == 0 ? HP_MEMIF_SERVER : HP_MEMIF_CLIENT;
            break;
        case 'i':
            o->id = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'n':
            o->count = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'z':
            o->size = (uint32_t)strtoul(optarg, NULL, 10);
            break;
        case 'e':
            o->expect = optarg;
            break;
        case 'Z':
            o->flags |= HP_LINK_F_ZEROCOPY;
            break;
        case 'c':
            o->chain = true;
            break;
        case 't':
            o->timeout = strtod(optarg, NULL);
            break;
        default:
            return -1;
        }
    }
    if (!o->socket || o->size < 60 || o->size > 1514)
        return -1;
    return 0;
}

#define PROBE 0xffffffffu

static bool is_probe(const struct hp_buf *b)
{
    uint32_t k = 0;
    return b->pkt_len >= 18 && hp_buf_copy_out(b, 14, 4, &k) == 0 && k == PROBE;
}

/* A forwarder may not forward yet when the link comes up (testpmd drains
 * its receive queues for about a second when forwarding starts): send a
 * probe every 100 ms until one comes back. */
static bool probe(struct hp_link *l, const struct opts *o, double end)
{
    struct hp_pool *p = hp_link_pool(l);
    double next = 0;
    while (now_s() < end) {
        struct hp_buf *b[32];
        if (now_s() >= next && (b[0] = make(p, o->size, PROBE, false)) != NULL) {
            if (hp_link_tx_burst(l, b, 1) != 1)
                hp_buf_free(b[0]);
            next = now_s() + 0.1;
        }
        int k = hp_link_rx_burst(l, b, 32);
        bool back = false;
        for (int i = 0; i < k; i++)
            back |= is_probe(b[i]);
        if (k > 0)
            hp_buf_free_bulk(b, (unsigned)k);
        if (back)
            return true;
    }
    printf("memif_peer: no probe came back\n");
    return false;
}

/* Send and check until every frame is back or the time is up. */
static int run(struct hp_link *l, const struct opts *o, double end)
{
    struct hp_pool *p = hp_link_pool(l);
    uint32_t sent = 0, back = 0;
    if (!probe(l, o, end))
        return 1;
    while (back < o->count && now_s() < end) {
        struct hp_buf *b[32];
        unsigned n = 0;
        while (n < 32 && sent + n < o->count && sent + n - back < 64 &&
               (b[n] = make(p, o->size, sent + n, o->chain)) != NULL)
            n++;
        int t = hp_link_tx_burst(l, b, n);
        t = t < 0 ? 0 : t;
        if ((unsigned)t < n)
            hp_buf_free_bulk(b + t, n - (unsigned)t);
        sent += (unsigned)t;
        int k = hp_link_rx_burst(l, b, 32);
        for (int i = 0; i < k; i++) {
            if (is_probe(b[i]))
                continue; /* a late one */
            const char *why = check(b[i], o, back);
            if (why) {
                printf("memif_peer: frame %u: %s\n", back, why);
                hp_buf_free_bulk(b, (unsigned)k);
                return 1;
            }
            back++;
        }
        if (k > 0)
            hp_buf_free_bulk(b, (unsigned)k);
    }
    struct hp_link_stats st;
    hp_link_stats(l, &st);
    printf("memif_peer: %u of %u frames of %u bytes came back (%s)%s; sent %llu, tx_dropped %llu, "
           "rx_errors %llu\n",
           back, o->count, o->size, o->expect, o->chain ? " as chains" : "",
           (unsigned long long)st.tx_packets, (unsigned long long)st.tx_dropped,
           (unsigned long long)st.rx_errors);
    return back == o->count ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) < 0) {
        fprintf(stderr,
                "usage: memif_peer --socket PATH [--role client|server] [--id N] [--count N] "
                "[--size 60..1514] [--expect macswap|io] [--zero-copy] [--chain] [--timeout S]\n");
        return 2;
    }
    struct hp_link_config c = {.flags = o.flags};
    c.memif.role = o.role;
    c.memif.socket = o.socket;
    c.memif.id = o.id;
    struct hp_link *l = hp_link_open("memif", &c);
    if (!l) {
        fprintf(stderr, "memif_peer: %s\n", hp_link_error());
        return 1;
    }
    double end = now_s() + o.timeout;
    struct hp_buf *b[32];
    while (!hp_link_up(l) && now_s() < end) {
        int k = hp_link_rx_burst(l, b, 32);
        if (k > 0)
            hp_buf_free_bulk(b, (unsigned)k);
    }
    int rc = 1;
    if (!hp_link_up(l))
        printf("memif_peer: the link did not come up in %.0f s\n", o.timeout);
    else
        rc = run(l, &o, end);
    struct hp_memif_stats ms;
    if (hp_link_memif_stats(l, &ms) == 0)
        printf(
            "memif_peer: peer \"%s\", %u ring(s) of %u, bad descriptors %llu, bad messages %llu\n",
            ms.peer_name, ms.queues, ms.ring_size, (unsigned long long)ms.bad_descs,
            (unsigned long long)ms.bad_msgs);
    if (hp_link_close(l) < 0) {
        printf("memif_peer: buffers still in use at close\n");
        rc = 1;
    }
    return rc;
}
