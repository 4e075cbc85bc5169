/* SPDX-License-Identifier: BSD-3-Clause */
/* One direction of `hotpath impair`: bottleneck queue, rate, ECN marking and delay line, on time given by the caller. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>
#include <hotpath/wire/eth.h>

#include "impair_path.h"

#define NS_PER_S 1000000000ull

int impair_path_init(struct impair_path *p, const struct impair_cfg *cfg, uint32_t ring_size)
{
    memset(p, 0, sizeof *p);
    if (ring_size < 2 || (ring_size & (ring_size - 1)))
        return -EINVAL;
    p->ring = calloc(ring_size, sizeof *p->ring);
    if (!p->ring)
        return -ENOMEM;
    p->cfg = *cfg;
    if (p->cfg.rate_bps && !p->cfg.queue_bytes) {
        /* One round trip's worth when both directions have this delay. */
        uint64_t bdp = p->cfg.rate_bps / 8 * (2 * p->cfg.delay_ns) / NS_PER_S;
        p->cfg.queue_bytes = bdp > 65536 ? bdp : 65536;
    }
    p->size = ring_size;
    p->mask = ring_size - 1;
    p->rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ull;
    return 0;
}

void impair_path_fini(struct impair_path *p)
{
    while (p->head != p->tail)
        hp_buf_free(p->ring[p->head++ & p->mask].b);
    free(p->ring);
    p->ring = NULL;
}

uint32_t impair_path_count(const struct impair_path *p)
{
    return p->tail - p->head;
}

/* xorshift64*: reproducible jitter for a given seed. */
static uint64_t next_rand(struct impair_path *p)
{
    p->rng ^= p->rng >> 12;
    p->rng ^= p->rng << 25;
    p->rng ^= p->rng >> 27;
    return p->rng * 0x2545F4914F6CDD1Dull;
}

uint32_t impair_ip_len(const uint8_t *f, uint32_t len)
{
    uint32_t off = 14;
    if (len < off)
        return 0;
    uint16_t type = (uint16_t)(f[12] << 8 | f[13]);
    if (type == HP_ETHERTYPE_VLAN && len >= 18) {
        type = (uint16_t)(f[16] << 8 | f[17]);
        off = 18;
    }
    if (type != HP_ETHERTYPE_IPV4 && type != HP_ETHERTYPE_IPV6)
        return 0;
    return len - off;
}

bool impair_mark_ce(uint8_t *f, uint32_t len)
{
    if (impair_ip_len(f, len) == 0)
        return false;
    uint32_t off = (f[12] == 0x81 && f[13] == 0x00) ? 18 : 14;
    uint8_t *ip = f + off;
    if ((ip[0] >> 4) == 4 && len >= off + 20) {
        unsigned ihl = (ip[0] & 0xFu) * 4u;
        if ((ip[1] & 3u) == 0 || (ip[1] & 3u) == 3 || ihl < 20 || len < off + ihl)
            return false;
        ip[1] |= 3u;
        ip[10] = ip[11] = 0;
        uint16_t c = hp_cksum_ipv4_hdr(ip, ihl);
        memcpy(ip + 10, &c, 2);
        return true;
    }
    if ((ip[0] >> 4) == 6 && len >= off + 40) {
        /* Traffic Class spans the low nibble of byte 0 and the high one of
         * byte 1: ECN is bits 4-5 of byte 1. No header checksum. */
        unsigned ecn = (ip[1] >> 4) & 3u;
        if (ecn == 0 || ecn == 3)
            return false;
        ip[1] |= 0x30u;
        return true;
    }
    return false;
}

uint32_t impair_tcp_data(const uint8_t *f, uint32_t len, uint32_t *flow, uint32_t *seq)
{
    uint32_t ip_len = impair_ip_len(f, len);
    if (ip_len == 0)
        return 0;
    const uint8_t *ip = f + (len - ip_len);
    uint32_t hl, addr_off, addr_len, total;
    if ((ip[0] >> 4) == 4 && ip_len >= 20) {
        hl = (ip[0] & 0xFu) * 4u;
        total = (uint32_t)(ip[2] << 8 | ip[3]);
        /* A fragment (offset or more-fragments set) has no whole TCP header. */
        if (ip[9] != 6 || hl < 20 || ((ip[6] & 0x3Fu) | ip[7]) != 0)
            return 0;
        addr_off = 12;
        addr_len = 8;
    } else if ((ip[0] >> 4) == 6 && ip_len >= 40) {
        hl = 40;
        total = 40u + (uint32_t)(ip[4] << 8 | ip[5]);
        if (ip[6] != 6)
            return 0;
        addr_off = 8;
        addr_len = 32;
    } else {
        return 0;
    }
    if (total > ip_len || total < hl + 20)
        return 0;
    const uint8_t *tcp = ip + hl;
    uint32_t thl = (uint32_t)(tcp[12] >> 4) * 4u;
    if (thl < 20 || hl + thl >= total)
        return 0;
    /* FNV-1a over the addresses and the ports. */
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < addr_len; i++)
        h = (h ^ ip[addr_off + i]) * 16777619u;
    for (uint32_t i = 0; i < 4; i++)
        h = (h ^ tcp[i]) * 16777619u;
    *flow = h;
    *seq = (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 | (uint32_t)tcp[6] << 8 | tcp[7];
    return total - hl - thl;
}

/* A new slot: a candidate tail when it carries TCP data that is not the
 * retransmission of a tail lost before. */
static void tail_classify(struct impair_path *p, struct impair_slot *s)
{
    if (s->b->data_len < 54 ||
        impair_tcp_data(hp_buf_data(s->b), s->b->data_len, &s->flow, &s->seq) == 0)
        return;
    uint32_t n = p->tail_seen_n < IMPAIR_TAIL_SEEN ? p->tail_seen_n : IMPAIR_TAIL_SEEN;
    for (uint32_t i = 0; i < n; i++)
        if (p->tail_seen[i].flow == s->flow && p->tail_seen[i].seq == s->seq)
            return;
    s->tail = IMPAIR_TAIL_MAYBE;
}

/* Decide a candidate at time `next` (when the next frame came, or now when
 * none did): a tail when the quiet after it lasted tail_gap. */
static void tail_decide(struct impair_path *p, struct impair_slot *s, uint64_t next)
{
    if (s->tail != IMPAIR_TAIL_MAYBE)
        return;
    if (next - s->enter_ns < p->cfg.tail_gap_ns) {
        s->tail = IMPAIR_TAIL_NO;
        return;
    }
    s->tail = IMPAIR_TAIL_DROP;
    uint32_t i = p->tail_seen_n++ % IMPAIR_TAIL_SEEN;
    p->tail_seen[i].flow = s->flow;
    p->tail_seen[i].seq = s->seq;
}

/* Frames whose last bit has left the bottleneck no longer count in it. */
static void drain(struct impair_path *p, uint64_t now)
{
    if ((int32_t)(p->queued - p->head) < 0)
        p->queued = p->head;
    while (p->queued != p->tail && p->ring[p->queued & p->mask].leave_ns <= now) {
        p->queue_bytes -= p->ring[p->queued & p->mask].bytes;
        p->queued++;
    }
}

/* Set *leave to when b's last bit leaves the bottleneck; false when the
 * queue refuses it (counted; the caller frees it). Marks CE when asked. */
static bool enqueue(struct impair_path *p, struct hp_buf *b, uint32_t bytes, uint64_t now,
                    uint64_t *leave)
{
    *leave = now;
    if (!p->cfg.rate_bps)
        return true;
    if (p->queue_bytes + bytes > p->cfg.queue_bytes) {
        p->st.queue_drops++;
        return false;
    }
    if (p->cfg.ecn_mark_above && p->queue_bytes > p->cfg.ecn_mark_above) {
        /* Only a linear frame is marked: the headers are in its first segment. */
        if (b->data_len >= 54 && impair_mark_ce(hp_buf_data(b), b->data_len))
            p->st.ce_marked++;
    }
    uint64_t start = p->last_leave_ns > now ? p->last_leave_ns : now;
    *leave = start + (uint64_t)bytes * 8u * NS_PER_S / p->cfg.rate_bps;
    p->last_leave_ns = *leave;
    p->queue_bytes += bytes;
    if (p->queue_bytes > p->st.queue_max)
        p->st.queue_max = p->queue_bytes;
    return true;
}

int impair_path_push(struct impair_path *p, struct hp_buf *b, uint64_t now)
{
    uint32_t bytes = b->pkt_len;
    p->st.in++;
    p->st.bytes_in += bytes;
    drain(p, now);
    uint32_t ip_len = b->data_len >= 18 ? impair_ip_len(hp_buf_data(b), b->pkt_len) : 0;
    if (p->cfg.mtu && ip_len > p->cfg.mtu) {
        p->st.mtu_drops++;
        hp_buf_free(b);
        return 0;
    }
    if (p->tail - p->head == p->size) {
        p->st.queue_drops++;
        hp_buf_free(b);
        return 0;
    }
    uint64_t leave;
    if (!enqueue(p, b, bytes, now, &leave)) {
        hp_buf_free(b);
        return 0;
    }
    uint64_t deliver = leave + p->cfg.delay_ns;
    if (p->cfg.jitter_ns) {
        uint64_t span = 2 * p->cfg.jitter_ns + 1;
        uint64_t j = next_rand(p) % span;
        deliver = deliver + j >= p->cfg.jitter_ns ? deliver + j - p->cfg.jitter_ns : 0;
    }
    if (deliver < leave)
        deliver = leave;
    if (deliver < p->last_deliver_ns)
        deliver = p->last_deliver_ns;
    p->last_deliver_ns = deliver;
    if (p->cfg.tail_gap_ns && p->tail != p->head)
        tail_decide(p, &p->ring[(p->tail - 1) & p->mask], now);
    struct impair_slot *s = &p->ring[p->tail++ & p->mask];
    s->b = b;
    s->bytes = bytes;
    s->leave_ns = leave;
    s->deliver_ns = deliver;
    s->enter_ns = now;
    s->tail = IMPAIR_TAIL_NO;
    if (p->cfg.tail_gap_ns)
        tail_classify(p, s);
    if (!p->cfg.rate_bps)
        p->queued = p->tail;
    return 1;
}

/* The head slot leaves the path (its buffer taken or freed by the caller). */
static void pop_head(struct impair_path *p)
{
    struct impair_slot *s = &p->ring[p->head++ & p->mask];
    /* Out of the delay line, so it has left the bottleneck (deliver >= leave). */
    if ((int32_t)(p->queued - p->head) < 0) {
        p->queue_bytes -= s->bytes;
        p->queued = p->head;
    }
    s->b = NULL;
}

unsigned impair_path_peek(struct impair_path *p, uint64_t now, struct hp_buf **out, unsigned n)
{
    unsigned k = 0;
    p->peek_ns = now;
    for (uint32_t i = p->head; i != p->tail && k < n; i++) {
        struct impair_slot *s = &p->ring[i & p->mask];
        if (s->deliver_ns > now)
            break;
        /* The last frame in: nothing followed it yet. */
        if (s->tail == IMPAIR_TAIL_MAYBE && i + 1 == p->tail)
            tail_decide(p, s, now);
        if (s->tail != IMPAIR_TAIL_DROP) {
            out[k++] = s->b;
            continue;
        }
        if (k)
            break; /* lost when it reaches the head, after the frames before it */
        hp_buf_free(s->b);
        p->st.tail_drops++;
        pop_head(p);
    }
    return k;
}

void impair_path_consume(struct impair_path *p, unsigned n)
{
    for (unsigned i = 0; i < n && p->head != p->tail; i++) {
        const struct impair_slot *s = &p->ring[p->head & p->mask];
        uint64_t late = p->peek_ns > s->deliver_ns ? p->peek_ns - s->deliver_ns : 0;
        p->st.late_sum_ns += late;
        p->st.late_max_ns = late > p->st.late_max_ns ? late : p->st.late_max_ns;
        p->st.out++;
        p->st.bytes_out += s->bytes;
        pop_head(p);
    }
}

uint64_t impair_path_next_ns(const struct impair_path *p)
{
    return p->head == p->tail ? UINT64_MAX : p->ring[p->head & p->mask].deliver_ns;
}
