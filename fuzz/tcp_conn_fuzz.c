/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: TCP segments, relative to live connections, into a stack with listeners and established connections, on a virtual clock; nothing may crash, corrupt a stream, send a bad segment or keep a buffer. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/wire/tcp.h>

#include "net/internal.h"      /* hp__stack_set_clock */
#include "sock/tcp_internal.h" /* the per-stack secret (fixed: reproducible ISNs), a connection's irs */

/*
 * The harness plays the peer (198.18.0.1, 2001:2::1, MAC 02:00:00:00:00:02)
 * of a stack (198.18.0.2/24, 2001:2::2/64) over a mem pair. Before reading
 * the input it builds, with real handshakes, three established connections:
 *
 *   flow 0  IPv4, peer port 40000 -> the stack's listener on port 80 (accepted)
 *   flow 1  IPv6, peer port 40001 -> the stack's listener on port 80 (accepted)
 *   flow 2  IPv4, the stack connects from an ephemeral port to peer port 7
 *
 * The peer answers ARP requests and neighbour solicitations, reads the
 * stack's SYN-ACK (or SYN) to learn its ISN and window, and completes the
 * handshake. Flows 3..7 are tuples with no connection yet:
 *
 *   flow 3  IPv4 40003 -> 80    flow 4  IPv6 40004 -> 80
 *   flow 5  IPv4 40005 -> 81 (no listener)    flow 6  IPv6 40006 -> 81
 *   flow 7  IPv4 40007 -> 80
 *
 * For every flow the peer keeps `nxt` (its next sequence number: advanced
 * by what it sends in order, and moved up to the stack's ACK) and `max`
 * (one past the highest sequence number the stack has sent). Segments of
 * the input give their numbers relative to these, so the fuzzer reaches
 * in-window, out-of-order, duplicate and out-of-window segments alike.
 *
 * Input: two setup bytes, then records (at most MAX_OPS).
 *
 *   setup[0]  bit 0: the peer offers timestamps in its SYN / SYN-ACK
 *             bit 1: window scaling (shift 7); bit 2: SACK-permitted
 *             bits 3-4: the peer's MSS: 1460, 536, 1220, 88
 *             bit 5: the stack's buffers are 4096 bytes (else 65536)
 *             bit 6: at the end, close every handle and run the clock
 *                    before destroying (else destroy with all open)
 *             bit 7: NODELAY and QUICKACK on the three connections
 *   setup[1]  bit 0: the stack offers no timestamps; bit 1: no window
 *             scaling; bit 2: no SYN cookies; bit 3: the stack's MSS 536;
 *             bit 4: early demultiplexing at the default threshold (off
 *             with this few connections; else on from the first)
 *
 *   op & 3 == 0   a segment. op bits 2-4: the flow; bit 5: corrupt the
 *                 checksum; bit 6: leave out the default options (SYN
 *                 options on a SYN, else timestamps when in use); bit 7:
 *                 set an urgent pointer. Then 11 bytes:
 *                   flags       the 8 TCP control bits, as is
 *                   dseq[2]     signed, big endian: seq = nxt + (dseq << sh>>4)
 *                   dack[2]     signed: ack = max + (dack << (sh & 15))
 *                   sh          the two shifts
 *                   win[2]      the window field, as is
 *                   len[2]      payload bytes (capped to fit one frame);
 *                               the byte at sequence number x is pattern(x)
 *                   olen        raw option bytes that follow (0-40), put
 *                               after the default options (40 in all at most);
 *                               the blocks of a SACK option (kind 5) among
 *                               them are signed offsets from the flow's max,
 *                               so that they land in, around and far from
 *                               the window (RFC 2018, RFC 2883)
 *   op & 3 == 1   advance the virtual clock by (1 + (op>>2 & 7)) * 4^(op>>5) ms
 *                 (1 ms .. 131 s): delayed ACKs, retransmissions,
 *                 persist and keepalive probes, FIN_WAIT_2, TIME_WAIT
 *   op & 3 == 2   the application: op bits 2-4 a handle (0-2 the three
 *                 connections, 3-7 accepted later), bits 5-7 the action,
 *                 then one argument byte a:
 *                   0 read up to a * 64 + 1 bytes now
 *                   1 send a * 32 + 1 bytes
 *                   2 shutdown: write (a & 1), read (a & 2), both (else)
 *                   3 close           4 abort
 *                   5 toggle: a&1 reading (stop: windows fill), a&2
 *                     zero-copy echo, a&4 close at end of stream
 *                   6 an option: a % 8 picks NODELAY, QUICKACK,
 *                     KEEPALIVE (idle a>>3 % 4 + 1 s, interval 1 s, 2
 *                     probes), LINGER0, SNDBUF, RCVBUF, MAXSEG, or
 *                     NODELAY off
 *                   7 close a listener (a & 1: the IPv6 one); with a & 2
 *                     instead an ICMP "too big" (IPv4 fragmentation
 *                     needed, ICMPv6 Packet Too Big) about flow op bits
 *                     2-4, MTU {0, 576, 1280, 1400}[a >> 2 & 3], quoting
 *                     sequence number max - 1 - (a >> 4) * 4096 (in
 *                     flight, acknowledged, or far out: RFC 5927 checks)
 *   op & 3 == 3   repeat the last segment (op >> 2) + 1 times; one more
 *                 byte: bit 0 gives copy i a flow of its own, peer port
 *                 41000 + i (a SYN flood fills the SYN queue and brings
 *                 out cookies; those flows are kept for the rest of the
 *                 input, so a later flood from the same ports finds them),
 *                 and then bit 1 completes each handshake: the ACK of the
 *                 SYN-ACK the copy drew (accept queue overflow, cookie
 *                 connections); without bit 0 the
 *                 copies follow each other on the record's own flow
 *                 (numbers recomputed each time: a bulk transfer); bit 2:
 *                 the copies reach the stack as one burst, unserviced in
 *                 between (bit 1 then does nothing)
 *
 * The application echoes: what it reads (automatically, while reading is
 * on) it checks against pattern(), then writes as many bytes of its own
 * stream, whose byte at offset k is out_byte(k). Every TCP segment the
 * stack sends is checked: well formed, the right checksum, and data that
 * is out_byte() of its offset from the stack's ISN. So beyond crashes,
 * the target aborts on a corrupted stream in either direction.
 *
 * Every input gets a new stack whose clock is virtual (hp__stack_set_clock)
 * and whose TCP secret is fixed, so an input always runs the same way. The
 * pool must be empty again after each input.
 *
 * Seeds: fuzz/corpus/make_tcp_conn_seeds.py (see there). With
 * TCP_CONN_FUZZ_TRACE=1 in the environment each input ends by printing the
 * handles' states and the stack's TCP counters, to see what an input
 * reaches.
 */

#define MAX_OPS  256
#define NFLOWS   8
#define NFLOOD   64 /* flows of the flood copies (op 3) */
#define NHANDLES 8
#define NISS     4
#define T0       (1ull << 40) /* the virtual clock's start, ns */
#define MS       1000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct hp_pool *pool;

static const uint8_t PEER_MAC[6] = {0x02, 0, 0, 0, 0, 0x02};
static const uint8_t IP4[4] = {198, 18, 0, 2}, PEER4[4] = {198, 18, 0, 1};
static const uint8_t IP6[16] = {0x20, 0x01, 0, 2, [15] = 2};
static const uint8_t PEER6[16] = {0x20, 0x01, 0, 2, [15] = 1};

static void fail(const char *what)
{
    fprintf(stderr, "tcp_conn_fuzz: %s\n", what);
    abort();
}

/* The peer's bytes: the one at sequence number x. */
static uint8_t pattern(uint32_t x)
{
    return (uint8_t)((x * 2654435761u) >> 24);
}

/* The application's bytes: the one at offset k of what it writes. */
static uint8_t out_byte(uint64_t k)
{
    return (uint8_t)((((uint32_t)k * 0x9E3779B1u) >> 24) ^ 0xA5);
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v;
}
static void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}
static bool seq_gt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

/* The peer's view of one 4-tuple. */
struct flow {
    int family;
    uint16_t pport, sport; /* the peer's port, the stack's (0: not known yet) */
    uint32_t nxt;          /* the peer's next sequence number */
    uint32_t max;          /* one past the highest the stack sent */
    bool have_max;
    uint32_t iss[NISS]; /* the stack's recent ISNs on this tuple, newest first */
    int niss;
    bool ts;            /* the stack answered our timestamps */
    uint32_t ts_recent; /* its last TSval */
};

/* The application's view of one connection handle. */
struct handle {
    struct hp_tcp_sock *t;
    uint32_t irs;           /* the stream's first byte is irs + 1 */
    uint64_t rd, wr;        /* bytes read, bytes written */
    uint64_t owed;          /* read but not yet echoed */
    struct hp_buf *pending; /* zero-copy echo the send buffer had no room for */
    bool reading, zc, close_eof, eof;
};

/* One input's world. */
static struct {
    struct hp_stack *s;
    struct hp_link *e[2];
    uint8_t mac[6];
    uint64_t now;
    uint8_t setup0, setup1;
    struct flow f[NFLOWS + NFLOOD];
    struct handle h[NHANDLES];
    struct hp_tcp_sock *lis[2];
    /* the last segment record, for op 3 */
    const uint8_t *last_seg;
    uint8_t last_op;
    bool batch; /* op 3 bit 2: segments queue up until the burst's end */
} w;

static uint64_t vclock(void *arg)
{
    return *(const uint64_t *)arg;
}

/* ---- frames from the peer ----------------------------------------------- */

static void inject(const uint8_t *frame, size_t len)
{
    struct hp_buf *b = hp_buf_alloc(pool);
    if (!b)
        fail("pool empty: a buffer leaked within the input");
    if (len > hp_buf_tailroom(b))
        len = hp_buf_tailroom(b);
    memcpy(hp_buf_append(b, (uint32_t)len), frame, len);
    if (hp_link_tx_burst(w.e[1], &b, 1) != 1)
        hp_buf_free(b);
}

static size_t eth_hdr(uint8_t *p, uint16_t type)
{
    memcpy(p, w.mac, 6);
    memcpy(p + 6, PEER_MAC, 6);
    wr16(p + 12, type);
    return 14;
}

static void arp_reply(void)
{
    uint8_t p[42];
    size_t o = eth_hdr(p, 0x0806);
    wr16(p + o, 1), wr16(p + o + 2, 0x0800), p[o + 4] = 6, p[o + 5] = 4, wr16(p + o + 6, 2);
    memcpy(p + o + 8, PEER_MAC, 6);
    memcpy(p + o + 14, PEER4, 4);
    memcpy(p + o + 18, w.mac, 6);
    memcpy(p + o + 24, IP4, 4);
    inject(p, sizeof p);
}

/* A neighbour advertisement for PEER6, solicited by dst. */
static void ndp_advert(const uint8_t dst[16])
{
    uint8_t p[14 + 40 + 32];
    size_t o = eth_hdr(p, 0x86dd);
    uint8_t *ip = p + o, *m = ip + 40;
    memset(ip, 0, 40 + 32);
    wr32(ip, 0x60000000u), wr16(ip + 4, 32), ip[6] = 58, ip[7] = 255;
    memcpy(ip + 8, PEER6, 16);
    memcpy(ip + 24, dst, 16);
    m[0] = 136;
    wr32(m + 4, 0x60000000u); /* solicited, override */
    memcpy(m + 8, PEER6, 16);
    m[24] = 2, m[25] = 1; /* target link-layer address */
    memcpy(m + 26, PEER_MAC, 6);
    uint16_t c = hp_cksum_icmp6(ip + 8, ip + 24, m, 32);
    memcpy(m + 2, &c, 2);
    inject(p, sizeof p);
}

/* The options a SYN or SYN-ACK of the peer offers, per setup[0]; ecr: the
 * TSecr (the stack's TSval when answering its SYN). */
static size_t syn_opts(uint8_t *o, uint32_t ecr)
{
    static const uint16_t mss[4] = {1460, 536, 1220, 88};
    size_t n = 0;
    o[n++] = 2, o[n++] = 4;
    wr16(o + n, mss[w.setup0 >> 3 & 3]), n += 2;
    if (w.setup0 & 4)
        o[n++] = 4, o[n++] = 2;
    else
        o[n++] = 1, o[n++] = 1;
    if (w.setup0 & 1) {
        o[n++] = 8, o[n++] = 10;
        wr32(o + n, (uint32_t)(w.now / MS) + 1000), n += 4;
        wr32(o + n, ecr), n += 4;
    }
    if (w.setup0 & 2)
        o[n++] = 1, o[n++] = 3, o[n++] = 3, o[n++] = 7;
    return n;
}

struct seg {
    uint8_t flags;
    uint32_t seq, ack;
    uint16_t win, urg;
    uint16_t len; /* payload */
    bool corrupt, no_defaults;
    const uint8_t *opts; /* raw option bytes after the defaults */
    size_t olen;
};

/* The blocks of SACK options in raw option bytes: signed offsets from
 * base, made sequence numbers. */
static void rebase_sack(uint8_t *o, size_t n, uint32_t base)
{
    size_t i = 0;
    while (i < n) {
        if (o[i] == 0)
            return;
        if (o[i] == 1) {
            i++;
            continue;
        }
        if (i + 1 >= n || o[i + 1] < 2 || i + o[i + 1] > n)
            return;
        if (o[i] == 5)
            for (size_t k = i + 2; k + 4 <= i + o[i + 1]; k += 4) {
                int32_t d = (int32_t)((uint32_t)o[k] << 24 | (uint32_t)o[k + 1] << 16 |
                                      (uint32_t)o[k + 2] << 8 | o[k + 3]);
                wr32(o + k, base + (uint32_t)d);
            }
        i += o[i + 1];
    }
}

/* An ICMP "too big" from the peer's side about flow f, quoting a segment
 * the stack sent with sequence number seq. */
static void send_too_big(const struct flow *f, uint32_t seq, uint32_t mtu)
{
    uint8_t p[14 + 40 + 8 + 40 + 20];
    bool v6 = f->family == 6;
    size_t iph = v6 ? 40 : 20, o = eth_hdr(p, v6 ? 0x86dd : 0x0800);
    uint8_t *ip = p + o, *m = ip + iph, *q = m + 8, *t = q + iph;
    memset(ip, 0, sizeof p - o);
    size_t ql = iph + 20, ml = 8 + ql;
    /* The quote: our datagram to the peer, its IP and TCP headers. */
    if (v6) {
        wr32(q, 0x60000000u), wr16(q + 4, 1000), q[6] = 6, q[7] = 63;
        memcpy(q + 8, IP6, 16), memcpy(q + 24, PEER6, 16);
    } else {
        q[0] = 0x45, wr16(q + 2, 1500), wr16(q + 6, 0x4000), q[8] = 63, q[9] = 6;
        memcpy(q + 12, IP4, 4), memcpy(q + 16, PEER4, 4);
    }
    wr16(t, f->sport), wr16(t + 2, f->pport), wr32(t + 4, seq), t[12] = 0x50, t[13] = HP_TCP_F_ACK;
    if (v6) {
        m[0] = 2;
        wr32(m + 4, mtu);
        wr32(ip, 0x60000000u), wr16(ip + 4, (uint16_t)ml), ip[6] = 58, ip[7] = 64;
        memcpy(ip + 8, PEER6, 16), memcpy(ip + 24, IP6, 16);
        uint32_t s = hp_cksum_pseudo_ipv6(ip + 8, ip + 24, 58, (uint32_t)ml);
        uint16_t c = hp_cksum_fold(hp_cksum_partial(m, ml, s));
        memcpy(m + 2, &c, 2);
    } else {
        m[0] = 3, m[1] = 4;
        wr16(m + 6, (uint16_t)mtu);
        uint16_t c = hp_cksum_fold(hp_cksum_partial(m, ml, 0));
        memcpy(m + 2, &c, 2);
        ip[0] = 0x45, wr16(ip + 2, (uint16_t)(20 + ml)), ip[8] = 64, ip[9] = 1;
        memcpy(ip + 12, PEER4, 4), memcpy(ip + 16, IP4, 4);
        c = hp_cksum_ipv4_hdr(ip, 20);
        memcpy(ip + 10, &c, 2);
    }
    inject(p, o + iph + ml);
}

/* Send one segment on flow f from peer port pport. */
static void send_seg(struct flow *f, uint16_t pport, const struct seg *g)
{
    uint8_t p[1600];
    bool v6 = f->family == 6;
    size_t iph = v6 ? 40 : 20;
    uint8_t opt[64];
    size_t on = 0;
    if (!g->no_defaults) {
        if (g->flags & HP_TCP_F_SYN) {
            on = syn_opts(opt, (g->flags & HP_TCP_F_ACK) ? f->ts_recent : 0);
        } else if (f->ts) {
            opt[0] = 1, opt[1] = 1, opt[2] = 8, opt[3] = 10;
            wr32(opt + 4, (uint32_t)(w.now / MS) + 1000);
            wr32(opt + 8, f->ts_recent);
            on = 12;
        }
    }
    size_t raw = g->olen;
    if (on + raw > 40)
        raw = 40 - on;
    if (raw) {
        memcpy(opt + on, g->opts, raw);
        rebase_sack(opt + on, raw, f->max);
    }
    on += raw;
    while (on % 4)
        opt[on++] = 0;
    size_t thl = 20 + on;
    size_t cap = sizeof p - 14 - iph - thl;
    if (cap > (v6 ? 1440u : 1460u))
        cap = v6 ? 1440u : 1460u;
    size_t len = g->len < cap ? g->len : cap;
    size_t o = eth_hdr(p, v6 ? 0x86dd : 0x0800);
    uint8_t *ip = p + o, *t = ip + iph;
    size_t tl = thl + len;
    memset(ip, 0, iph + thl);
    if (v6) {
        wr32(ip, 0x60000000u), wr16(ip + 4, (uint16_t)tl), ip[6] = 6, ip[7] = 64;
        memcpy(ip + 8, PEER6, 16);
        memcpy(ip + 24, IP6, 16);
    } else {
        ip[0] = 0x45, wr16(ip + 2, (uint16_t)(20 + tl)), wr16(ip + 6, 0x4000), ip[8] = 64,
        ip[9] = 6;
        memcpy(ip + 12, PEER4, 4);
        memcpy(ip + 16, IP4, 4);
        uint16_t c = hp_cksum_ipv4_hdr(ip, 20);
        memcpy(ip + 10, &c, 2);
    }
    wr16(t, pport), wr16(t + 2, f->sport);
    wr32(t + 4, g->seq), wr32(t + 8, g->ack);
    t[12] = (uint8_t)(thl / 4 << 4), t[13] = g->flags;
    wr16(t + 14, g->win), wr16(t + 18, g->urg);
    memcpy(t + 20, opt, on);
    uint32_t first = g->seq + ((g->flags & HP_TCP_F_SYN) ? 1u : 0u);
    for (size_t i = 0; i < len; i++)
        t[thl + i] = pattern(first + (uint32_t)i);
    uint16_t c =
        v6 ? hp_cksum_tcp6(ip + 8, ip + 24, t, tl) : hp_cksum_tcp4(ip + 12, ip + 16, t, tl);
    if (g->corrupt)
        c ^= 0x0101;
    memcpy(t + 16, &c, 2);
    inject(p, o + iph + tl);
    /* In order (and not corrupted): the peer's next number moves on. */
    if (!g->corrupt && pport == f->pport && g->seq == f->nxt && !(g->flags & HP_TCP_F_RST))
        f->nxt += (uint32_t)len + ((g->flags & HP_TCP_F_SYN) ? 1u : 0u) +
                  ((g->flags & HP_TCP_F_FIN) ? 1u : 0u);
}

/* ---- frames from the stack -------------------------------------------------- */

static struct flow *flow_of(int family, uint16_t pport, uint16_t sport, bool syn)
{
    for (int i = 0; i < NFLOWS + NFLOOD; i++) {
        struct flow *f = &w.f[i];
        if (f->family != family || f->pport != pport)
            continue;
        if (f->sport == sport)
            return f;
        if (f->sport == 0 && syn) { /* the stack's active open: learn its port */
            f->sport = sport;
            return f;
        }
    }
    return NULL;
}

/* A segment the stack sent: check it, and learn from it. */
static void stack_seg(int family, const uint8_t *src, const uint8_t *dst, const uint8_t *t,
                      size_t len)
{
    if (hp_tcp_check(t, len) != 0)
        fail("the stack sent a malformed TCP header");
    enum hp_cksum_result ck = family == 6 ? hp_cksum_tcp6_verify(src, dst, t, len)
                                          : hp_cksum_tcp4_verify(src, dst, t, len);
    if (ck != HP_CKSUM_GOOD)
        fail("the stack sent a TCP segment with a bad checksum");
    if (memcmp(src, family == 6 ? IP6 : IP4, family == 6 ? 16 : 4) != 0 ||
        memcmp(dst, family == 6 ? PEER6 : PEER4, family == 6 ? 16 : 4) != 0)
        fail("the stack sent a TCP segment between the wrong addresses");
    struct hp_tcp_repr r;
    if (hp_tcp_parse(t, len, NULL, &r, 0) != 0)
        fail("the stack sent a TCP segment its own parser refuses");
    bool syn = r.flags & HP_TCP_F_SYN, fin = r.flags & HP_TCP_F_FIN, rst = r.flags & HP_TCP_F_RST;
    struct flow *f = flow_of(family, r.dst_port, r.src_port, syn && !(r.flags & HP_TCP_F_ACK));
    if (!f || rst)
        return;
    if (syn) {
        if (f->niss == 0 || f->iss[0] != r.seq) {
            memmove(f->iss + 1, f->iss, sizeof f->iss[0] * (NISS - 1));
            f->iss[0] = r.seq;
            if (f->niss < NISS)
                f->niss++;
        }
        f->max = r.seq + 1;
        f->have_max = true;
        f->ts = r.opt.has_ts && (w.setup0 & 1);
        /* A SYN-ACK: a connection (perhaps a new one) starts at its ACK. */
        if (r.flags & HP_TCP_F_ACK)
            f->nxt = r.ack;
    }
    if (r.opt.has_ts)
        f->ts_recent = r.opt.ts_val;
    uint32_t first = r.seq + (syn ? 1u : 0u);
    /* Data: the application's bytes, at their offsets from one of the
     * stack's ISNs on this tuple. One byte that adds nothing new may be a
     * keepalive or window probe of an acknowledged byte: not checked. */
    if (r.payload_len > 0 && f->niss > 0) {
        uint32_t end = first + (uint32_t)r.payload_len;
        bool check = r.payload_len > 1 || !f->have_max || seq_gt(end, f->max);
        bool good = !check;
        for (int i = 0; i < f->niss && !good; i++) {
            uint32_t k0 = first - (f->iss[i] + 1);
            if (k0 >= 0x80000000u)
                continue;
            good = true;
            for (size_t j = 0; j < r.payload_len && good; j++)
                good = r.payload[j] == out_byte((uint64_t)k0 + j);
        }
        if (!good)
            fail("the stack sent bytes the application never wrote there");
    }
    uint32_t end = first + (uint32_t)r.payload_len + (fin ? 1u : 0u);
    if (f->have_max && seq_gt(end, f->max))
        f->max = end;
    if ((r.flags & HP_TCP_F_ACK) && seq_gt(r.ack, f->nxt))
        f->nxt = r.ack;
}

/* One frame the stack sent. */
static void stack_frame(const uint8_t *p, size_t len)
{
    if (len < 14)
        fail("the stack sent a runt frame");
    uint16_t type = rd16(p + 12);
    const uint8_t *l3 = p + 14;
    size_t n = len - 14;
    if (type == 0x0806) {
        if (n >= 28 && rd16(l3 + 6) == 1 && memcmp(l3 + 24, PEER4, 4) == 0)
            arp_reply();
    } else if (type == 0x0800) {
        if (n < 20 || (l3[0] >> 4) != 4 || (l3[0] & 15) < 5)
            fail("the stack sent a malformed IPv4 header");
        size_t ihl = (size_t)(l3[0] & 15) * 4, tot = rd16(l3 + 2);
        if (ihl > n || tot < ihl || tot > n || !hp_cksum_ipv4_hdr_ok(l3, ihl))
            fail("the stack sent an IPv4 header with a bad length or checksum");
        if (l3[9] == 6 && (rd16(l3 + 6) & 0x3fff) == 0)
            stack_seg(4, l3 + 12, l3 + 16, l3 + ihl, tot - ihl);
    } else if (type == 0x86dd) {
        if (n < 40)
            fail("the stack sent a runt IPv6 packet");
        size_t pl = rd16(l3 + 4);
        if (40 + pl > n)
            fail("the stack sent an IPv6 payload length past the frame");
        const uint8_t *m = l3 + 40;
        if (l3[6] == 58 && pl >= 24 && m[0] == 135 && memcmp(m + 8, PEER6, 16) == 0)
            ndp_advert(l3 + 8);
        else if (l3[6] == 6)
            stack_seg(6, l3 + 8, l3 + 24, m, pl);
    }
}

/* Take everything the stack sent; returns how many frames. */
static int drain_stack(void)
{
    static uint8_t frame[16384];
    struct hp_buf *b[32];
    int n, total = 0;
    while ((n = hp_link_rx_burst(w.e[1], b, 32)) > 0) {
        for (int i = 0; i < n; i++) {
            uint32_t len = b[i]->pkt_len;
            if (len > sizeof frame)
                fail("the stack sent a frame beyond any MTU");
            if (hp_buf_copy_out(b[i], 0, len, frame) != 0)
                fail("hp_buf_copy_out of a sent frame");
            hp_buf_free(b[i]);
            stack_frame(frame, len);
        }
        total += n;
    }
    return total;
}

/* ---- the application -------------------------------------------------------- */

static void handle_close(struct handle *h, bool abort_it)
{
    if (!h->t)
        return;
    if (h->pending)
        hp_buf_free(h->pending);
    if (abort_it)
        hp_tcp_abort(h->t);
    else
        hp_tcp_close(h->t);
    memset(h, 0, sizeof *h);
}

static void handle_init(struct handle *h, struct hp_tcp_sock *t)
{
    memset(h, 0, sizeof *h);
    h->t = t;
    h->irs = t->irs;
    h->reading = h->close_eof = true;
}

static void check_read(struct handle *h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(h->irs + 1 + (uint32_t)(h->rd + i)))
            fail("the application read bytes the peer never sent there");
    h->rd += n;
}

/* Write what is owed, as the application's own bytes; after the pending
 * zero-copy buffer, which comes first in the stream. */
static void echo_owed(struct handle *h)
{
    uint8_t tmp[2048];
    while (h->t && h->owed > 0 && !h->pending) {
        size_t n = h->owed < sizeof tmp ? (size_t)h->owed : sizeof tmp;
        for (size_t i = 0; i < n; i++)
            tmp[i] = out_byte(h->wr + i);
        long m = hp_tcp_send(h->t, tmp, n);
        if (m == -EAGAIN)
            return;
        if (m <= 0) {
            h->owed = 0; /* shut down or failed: the rest is not wanted */
            return;
        }
        if ((size_t)m > n)
            fail("hp_tcp_send took more than it was given");
        h->wr += (uint64_t)m;
        h->owed -= (uint64_t)m;
    }
}

/* Overwrite a received chain with the application's bytes from offset wr. */
static void rewrite(struct hp_buf *b, uint64_t wr)
{
    for (struct hp_buf *x = b; x; x = x->next) {
        uint8_t *p = hp_buf_data(x);
        for (uint32_t i = 0; i < x->data_len; i++)
            p[i] = out_byte(wr++);
    }
}

/* Send the pending zero-copy buffer, as the bytes of the stream at the
 * offset where it goes now. */
static void echo_pending(struct handle *h)
{
    if (!h->pending)
        return;
    uint32_t len = h->pending->pkt_len;
    rewrite(h->pending, h->wr);
    long m = hp_tcp_send_buf(h->t, h->pending);
    if (m == -EAGAIN)
        return;
    if (m >= 0) {
        if ((uint32_t)m != len)
            fail("hp_tcp_send_buf returned another length than the buffer's");
        h->wr += len;
    } else {
        hp_buf_free(h->pending);
    }
    h->pending = NULL;
}

/* Read (up to cap bytes) and echo; returns false when the handle went away. */
static bool app_read(struct handle *h, size_t cap)
{
    uint8_t tmp[4096];
    while (h->t && cap > 0) {
        long n;
        if (h->zc) {
            if (h->pending)
                return true;
            struct hp_buf *b = NULL;
            n = hp_tcp_recv_buf(h->t, &b);
            if (n > 0) {
                if (!b || b->pkt_len != (uint32_t)n)
                    fail("hp_tcp_recv_buf: the buffer's length is not the one returned");
                uint8_t *lin = malloc((size_t)n);
                if (!lin || hp_buf_copy_out(b, 0, (uint32_t)n, lin) != 0)
                    fail("copying a received buffer");
                check_read(h, lin, (size_t)n);
                free(lin);
                h->pending = b;
                echo_pending(h);
            } else if (b) {
                fail("hp_tcp_recv_buf gave a buffer with a return of 0 or an error");
            }
        } else {
            if (h->owed)
                return true;
            n = hp_tcp_recv(h->t, tmp, cap < sizeof tmp ? cap : sizeof tmp);
            if (n > 0) {
                if ((size_t)n > sizeof tmp)
                    fail("hp_tcp_recv returned more than asked");
                check_read(h, tmp, (size_t)n);
                h->owed += (uint64_t)n;
                echo_owed(h);
            }
        }
        if (n == -EAGAIN)
            return true;
        if (n == 0) {
            h->eof = true;
            if (h->close_eof) {
                handle_close(h, false);
                return false;
            }
            hp_tcp_shutdown(h->t, HP_TCP_SHUT_WR);
            return true;
        }
        if (n < 0) { /* reset, timed out, not connected: like a server, let go */
            handle_close(h, false);
            return false;
        }
        cap = (size_t)n < cap ? cap - (size_t)n : 0;
    }
    return h->t != NULL;
}

static void app_run(void)
{
    struct hp_event ev[64];
    while (hp_stack_events(w.s, ev, 64) == 64)
        ;
    /* Accept into free handles. */
    for (int l = 0; l < 2; l++) {
        while (w.lis[l]) {
            int slot = -1;
            for (int i = 3; i < NHANDLES && slot < 0; i++)
                if (!w.h[i].t)
                    slot = i;
            if (slot < 0)
                break;
            struct hp_sockaddr peer;
            struct hp_tcp_sock *t = hp_tcp_accept(w.lis[l], &w.h[slot], &peer);
            if (!t)
                break;
            handle_init(&w.h[slot], t);
        }
    }
    for (int i = 0; i < NHANDLES; i++) {
        struct handle *h = &w.h[i];
        if (!h->t)
            continue;
        echo_pending(h);
        echo_owed(h);
        if (h->reading && !h->eof)
            app_read(h, 1u << 20);
    }
}

/* Let the stack and the application run until nothing more happens. */
static void service(void)
{
    for (int round = 0; round < 16; round++) {
        hp_stack_poll(w.s);
        app_run();
        hp_stack_poll(w.s);
        if (drain_stack() == 0)
            break;
    }
}

static void advance(uint64_t ns)
{
    w.now += ns;
    service();
}

/* ---- setup ---------------------------------------------------------------------- */

static struct hp_tcp_sock *listener(int family, uint16_t port)
{
    struct hp_tcp_sock *t = hp_tcp_open(w.s, family, NULL);
    if (!t)
        fail("hp_tcp_open of a listener");
    struct hp_sockaddr a = {.family = (uint8_t)family, .port = port};
    if (hp_tcp_bind(t, &a) < 0 || hp_tcp_listen(t, 4) < 0)
        fail("bind and listen");
    return t;
}

static void conn_opts(struct hp_tcp_sock *t)
{
    if (w.setup0 & 0x80) {
        hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1);
        hp_tcp_setopt(t, HP_TCP_OPT_QUICKACK, 1);
    }
}

/* The peer connects on flow i to the listener, which accepts into handle i. */
static void passive_open(int i)
{
    struct flow *f = &w.f[i];
    struct seg g = {.flags = HP_TCP_F_SYN, .seq = f->nxt, .win = 65535};
    send_seg(f, f->pport, &g);
    service();
    if (f->niss == 0)
        fail("handshake: no SYN-ACK from the listener");
    memset(&g, 0, sizeof g);
    g.flags = HP_TCP_F_ACK, g.seq = f->nxt, g.ack = f->max, g.win = 65535;
    send_seg(f, f->pport, &g);
    /* Accept here, not in app_run, so the handle lands in slot i. */
    hp_stack_poll(w.s);
    struct hp_tcp_sock *t = hp_tcp_accept(w.lis[f->family == 6], &w.h[i], NULL);
    if (!t)
        fail("handshake: nothing to accept after the ACK");
    handle_init(&w.h[i], t);
    conn_opts(t);
    service();
    if (hp_tcp_state(t) != HP_TCP_ESTABLISHED)
        fail("handshake: the accepted connection is not ESTABLISHED");
}

/* The stack connects to the peer's port 7 on flow 2. */
static void active_open(void)
{
    struct flow *f = &w.f[2];
    struct hp_tcp_sock *t = hp_tcp_open(w.s, 4, &w.h[2]);
    if (!t)
        fail("hp_tcp_open of the active connection");
    conn_opts(t);
    struct hp_sockaddr to = {.family = 4, .port = 7};
    memcpy(to.addr, PEER4, 4);
    int rc = hp_tcp_connect(t, &to);
    if (rc != -EINPROGRESS && rc != 0)
        fail("hp_tcp_connect");
    service();
    if (f->sport == 0 || f->niss == 0)
        fail("handshake: no SYN from the connecting socket");
    struct seg g = {.flags = HP_TCP_F_SYN | HP_TCP_F_ACK,
                    .seq = f->nxt,
                    .ack = f->max,
                    .win = 65535};
    send_seg(f, f->pport, &g);
    service();
    if (hp_tcp_state(t) != HP_TCP_ESTABLISHED)
        fail("handshake: the connecting socket is not ESTABLISHED after the SYN-ACK");
    handle_init(&w.h[2], t);
}

static void setup(uint8_t s0, uint8_t s1)
{
    memset(&w, 0, sizeof w);
    w.setup0 = s0, w.setup1 = s1;
    w.now = T0;
    struct hp_link_config lc = {.pool = pool, .ring_size = 512};
    if (hp_link_mem_pair(&lc, w.e) < 0)
        fail("no mem pair");
    struct hp_stack_config sc = {.name = "tcpfuzz", .flags = HP_STACK_F_NO_DAD};
    w.s = hp_stack_create(&sc);
    if (!w.s)
        fail("no stack");
    hp__stack_set_clock(w.s, vclock, &w.now);
    int ifx = hp_stack_add_iface(w.s, w.e[0]);
    if (ifx < 0 || hp_stack_add_addr(w.s, ifx, 4, IP4, 24) < 0 ||
        hp_stack_add_addr(w.s, ifx, 6, IP6, 64) < 0)
        fail("stack setup");
    hp_link_mac(w.e[0], w.mac);

    /* Short timers and small limits, so that one input reaches them. */
    uint32_t buf = (s0 & 0x20) ? 4096 : 65536;
    struct hp_tcp_config tc = {
        .max_conns = 32,
        .sndbuf = buf,
        .rcvbuf = buf,
        .ooo_max_segs = 16,
        .syn_retries = 3,
        .data_retries = 4, /* rto_max_ms may not go below 60 s */
        .time_wait_ms = 2000,
        .fin_wait2_ms = 3000,
        .challenge_ack_limit = 10,
        .syn_backlog_max = 4,
        .mss = (s1 & 8) ? 536 : 0,
        .no_timestamps = s1 & 1,
        .no_window_scaling = s1 & 2,
        .no_syncookies = s1 & 4,
        .early_demux_conns = (s1 & 16) ? 0 : 1,
    };
    if (hp_tcp_configure(w.s, &tc) < 0)
        fail("hp_tcp_configure");
    w.lis[0] = listener(4, 80);
    w.lis[1] = listener(6, 80);
    /* A fixed secret: the same ISNs, cookies and ports every run. */
    if (hp__tcp(w.s)) {
        hp__tcp(w.s)->secret.k0 = 0x686f747061746821ull;
        hp__tcp(w.s)->secret.k1 = 0x7463705f66757a7aull;
    }

    static const uint16_t pports[NFLOWS] = {40000, 40001, 7, 40003, 40004, 40005, 40006, 40007};
    static const uint16_t sports[NFLOWS] = {80, 80, 0, 80, 80, 81, 81, 80};
    static const int fams[NFLOWS] = {4, 6, 4, 4, 6, 4, 6, 4};
    for (int i = 0; i < NFLOWS; i++) {
        w.f[i].family = fams[i];
        w.f[i].pport = pports[i];
        w.f[i].sport = sports[i];
        w.f[i].nxt = 0x10000000u * (uint32_t)(i + 1) + 0x1234567u;
    }
    passive_open(0);
    passive_open(1);
    active_open();
}

static void teardown(void)
{
    /* TCP_CONN_FUZZ_TRACE=1: what the input did, as the stack counted it
     * (for checking what seeds reach). */
    static int trace = -1;
    if (trace < 0)
        trace = getenv("TCP_CONN_FUZZ_TRACE") != NULL;
    if (trace) {
        fprintf(stderr, "tcp_conn_fuzz: states");
        for (int i = 0; i < NHANDLES; i++)
            fprintf(stderr, " %s", w.h[i].t ? hp_tcp_state_name(hp_tcp_state(w.h[i].t)) : "-");
        fprintf(stderr, "; read");
        for (int i = 0; i < NHANDLES; i++)
            fprintf(stderr, " %llu", (unsigned long long)w.h[i].rd);
        fprintf(stderr, "\n  ");
        for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
            const char *n = hp_stack_counter_name((enum hp_stack_ctr)c);
            uint64_t v = hp_stack_counter(w.s, (enum hp_stack_ctr)c);
            if (v && strncmp(n, "TCP", 3) == 0)
                fprintf(stderr, " %s=%llu", n, (unsigned long long)v);
        }
        fprintf(stderr, "\n");
    }
    if (w.setup0 & 0x40) {
        for (int i = 0; i < NHANDLES; i++)
            handle_close(&w.h[i], false);
        hp_tcp_close(w.lis[0]);
        hp_tcp_close(w.lis[1]);
        w.lis[0] = w.lis[1] = NULL;
        for (int i = 0; i < 8; i++)
            advance(20000 * MS);
    } else {
        for (int i = 0; i < NHANDLES; i++)
            if (w.h[i].pending)
                hp_buf_free(w.h[i].pending);
    }
    hp_stack_destroy(w.s);
    struct hp_buf *b[32];
    int n;
    for (int e = 0; e < 2; e++)
        while ((n = hp_link_rx_burst(w.e[e], b, 32)) > 0)
            hp_buf_free_bulk(b, (unsigned)n);
    if (hp_link_close(w.e[0]) < 0 || hp_link_close(w.e[1]) < 0)
        fail("link close");
}

/* ---- the input ------------------------------------------------------------------- */

/* The flow of flood copy i of a record on flow base. */
static struct flow *flood_flow(const struct flow *base, int i)
{
    struct flow *d = &w.f[NFLOWS + i % NFLOOD];
    uint16_t pport = (uint16_t)(41000 + i);
    if (d->family != base->family || d->pport != pport || d->sport != base->sport) {
        memset(d, 0, sizeof *d);
        d->family = base->family;
        d->pport = pport;
        d->sport = base->sport;
        d->nxt = 0x7000000u + (uint32_t)i * 0x10000u;
    }
    return d;
}

/* A segment record at p (11 bytes and its options, known to be there);
 * copy: -1, or the flood copy's number (op 3), with how its byte. */
static void op_segment(uint8_t op, const uint8_t *p, const uint8_t *opts, int copy, uint8_t how)
{
    struct flow *f = &w.f[op >> 2 & 7];
    if (copy >= 0)
        f = flood_flow(f, copy);
    int16_t dseq = (int16_t)rd16(p + 1), dack = (int16_t)rd16(p + 3);
    uint8_t sh = p[5];
    struct seg g = {
        .flags = p[0],
        .seq = f->nxt + (uint32_t)((int64_t)dseq * (1ll << (sh >> 4))),
        .ack = f->max + (uint32_t)((int64_t)dack * (1ll << (sh & 15))),
        .win = rd16(p + 6),
        .len = rd16(p + 8),
        .corrupt = op & 0x20,
        .no_defaults = op & 0x40,
        .urg = (op & 0x80) ? (uint16_t)(1 + (p[8] & 0x7f)) : 0,
        .opts = opts,
        .olen = p[10],
    };
    send_seg(f, f->pport, &g);
    if (w.batch)
        return;
    service();
    if (copy >= 0 && (how & 2) && f->have_max) {
        struct seg a = {.flags = HP_TCP_F_ACK, .seq = f->nxt, .ack = f->max, .win = 65535};
        send_seg(f, f->pport, &a);
        service();
    }
}

static void op_app(uint8_t op, uint8_t a)
{
    int i = op >> 2 & 7;
    struct handle *h = &w.h[i];
    int act = op >> 5;
    if (act == 7 && (a & 2)) {
        static const uint32_t mtus[4] = {0, 576, 1280, 1400};
        struct flow *f = &w.f[i];
        if (f->sport)
            send_too_big(f, f->max - 1 - (uint32_t)(a >> 4) * 4096u, mtus[a >> 2 & 3]);
        service();
        return;
    }
    if (act == 7) {
        int l = a & 1;
        if (w.lis[l]) {
            hp_tcp_close(w.lis[l]);
            w.lis[l] = NULL;
        }
        service();
        return;
    }
    if (!h->t)
        return;
    switch (act) {
    case 0:
        app_read(h, (size_t)a * 64 + 1);
        break;
    case 1:
        h->owed += (uint64_t)a * 32 + 1;
        echo_owed(h);
        break;
    case 2: {
        int how = (a & 3) == 1   ? HP_TCP_SHUT_WR
                  : (a & 3) == 2 ? HP_TCP_SHUT_RD
                                 : HP_TCP_SHUT_WR | HP_TCP_SHUT_RD;
        hp_tcp_shutdown(h->t, how);
        break;
    }
    case 3:
        handle_close(h, false);
        break;
    case 4:
        handle_close(h, true);
        break;
    case 5:
        if (a & 1)
            h->reading = !h->reading;
        if (a & 2)
            h->zc = !h->zc;
        if (a & 4)
            h->close_eof = !h->close_eof;
        break;
    case 6:
        switch (a & 7) {
        case 0:
            hp_tcp_setopt(h->t, HP_TCP_OPT_NODELAY, 1);
            break;
        case 1:
            hp_tcp_setopt(h->t, HP_TCP_OPT_QUICKACK, 1);
            break;
        case 2:
            hp_tcp_setopt(h->t, HP_TCP_OPT_KEEPIDLE, (a >> 3) % 4 + 1);
            hp_tcp_setopt(h->t, HP_TCP_OPT_KEEPINTVL, 1);
            hp_tcp_setopt(h->t, HP_TCP_OPT_KEEPCNT, 2);
            hp_tcp_setopt(h->t, HP_TCP_OPT_KEEPALIVE, 1);
            break;
        case 3:
            hp_tcp_setopt(h->t, HP_TCP_OPT_LINGER0, 1);
            break;
        case 4:
            hp_tcp_setopt(h->t, HP_TCP_OPT_SNDBUF, 2048 + (long)(a >> 3) * 1024);
            break;
        case 5:
            hp_tcp_setopt(h->t, HP_TCP_OPT_RCVBUF, 2048 + (long)(a >> 3) * 1024);
            break;
        case 6:
            hp_tcp_setopt(h->t, HP_TCP_OPT_MAXSEG, 88 + (long)(a >> 3) * 40);
            break;
        default:
            hp_tcp_setopt(h->t, HP_TCP_OPT_NODELAY, 0);
            break;
        }
        break;
    }
    service();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!pool) {
        struct hp_pool_config pc = {.name = "tcp_conn_fuzz", .n_bufs = 8192};
        pool = hp_pool_create(&pc);
        if (!pool)
            fail("no pool");
    }
    if (size < 2)
        return 0;
    setup(data[0], data[1]);
    size_t off = 2;
    for (int ops = 0; ops < MAX_OPS && off < size; ops++) {
        uint8_t op = data[off++];
        switch (op & 3) {
        case 0: {
            if (size - off < 11) {
                off = size;
                break;
            }
            const uint8_t *p = data + off;
            size_t olen = p[10] > 40 ? 40 : p[10];
            if (size - off - 11 < olen)
                olen = size - off - 11;
            uint8_t rec[11];
            memcpy(rec, p, 11);
            rec[10] = (uint8_t)olen;
            w.last_seg = p, w.last_op = op;
            op_segment(op, rec, p + 11, -1, 0);
            off += 11 + olen;
            break;
        }
        case 1:
            advance((uint64_t)(1 + (op >> 2 & 7)) * (1ull << (2 * (op >> 5))) * MS);
            break;
        case 2:
            if (off >= size)
                break;
            op_app(op, data[off++]);
            break;
        case 3: {
            if (off >= size)
                break;
            uint8_t how = data[off++];
            if (!w.last_seg)
                break;
            uint8_t rec[11];
            memcpy(rec, w.last_seg, 11);
            size_t olen = rec[10] > 40 ? 40 : rec[10];
            if ((size_t)(data + size - (w.last_seg + 11)) < olen)
                olen = (size_t)(data + size - (w.last_seg + 11));
            rec[10] = (uint8_t)olen;
            w.batch = how & 4;
            for (int i = 0; i <= op >> 2; i++)
                op_segment(w.last_op, rec, w.last_seg + 11, (how & 1) ? i : -1, how);
            if (w.batch) {
                w.batch = false;
                service();
            }
            break;
        }
        }
    }
    teardown();
    hp_pool_thread_flush(pool);
    if (hp_pool_in_use(pool) != 0) {
        fprintf(stderr, "tcp_conn_fuzz: %ld buffers still in use after the input\n",
                hp_pool_in_use(pool));
        abort();
    }
    return 0;
}
