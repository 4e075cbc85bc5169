/* SPDX-License-Identifier: BSD-3-Clause */
/* Reassembly of IPv4 (RFC 791 3.2) and IPv6 (RFC 8200 4.5) fragments, with bounded memory, overlap refusal and timeouts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "internal.h"
#include "ip_local.h"

/* One fragment held: its buffer and the part of the datagram it carries.
 * The first fragment's buffer keeps its data offset at its IP header (its
 * headers become the datagram's); the others are advanced to their data. */
struct frag {
    struct hp_buf *b;
    uint32_t off, len;
};

/* A datagram in reassembly. */
struct fq {
    bool used;
    bool dead;     /* refused (overlap): later fragments dropped until the timer */
    bool first;    /* the fragment at offset 0 is here */
    bool has_last; /* the fragment without More Fragments is here */
    uint8_t family, proto;
    uint8_t src[16], dst[16];
    uint32_t id;
    struct hp__iface *ifc;
    struct frag *f; /* sorted by offset, no overlaps */
    uint32_t nf, cap;
    uint32_t total;    /* datagram data length, once has_last */
    uint32_t max_end;  /* largest offset + length seen */
    uint32_t have;     /* data bytes held */
    uint64_t held;     /* buffer bytes held (what counts against the bound) */
    uint64_t seq;      /* creation order, for eviction */
    uint16_t hdr_len;  /* first fragment: bytes before its data */
    uint16_t unfrag;   /* IPv6 first fragment: bytes before its Fragment header */
    uint8_t frag_next; /* IPv6: the Fragment header's Next Header */
    struct hp__timer timer;
};

struct hp__reasm {
    struct fq q[HP__REASM_MAX_DGRAMS];
    uint64_t held;
    uint64_t seq;
};

/* Counters of one family. */
struct fam_ctr {
    enum hp_stack_ctr reqds, oks, fails, timeouts, overlaps, oversize, mem_drops;
};
static const struct fam_ctr ctr4 = {HP_CTR_IP_REASM_REQDS,    HP_CTR_IP_REASM_OKS,
                                    HP_CTR_IP_REASM_FAILS,    HP_CTR_IP_REASM_TIMEOUTS,
                                    HP_CTR_IP_REASM_OVERLAPS, HP_CTR_IP_REASM_OVERSIZE,
                                    HP_CTR_IP_REASM_MEM_DROPS};
static const struct fam_ctr ctr6 = {HP_CTR_IP6_REASM_REQDS,    HP_CTR_IP6_REASM_OKS,
                                    HP_CTR_IP6_REASM_FAILS,    HP_CTR_IP6_REASM_TIMEOUTS,
                                    HP_CTR_IP6_REASM_OVERLAPS, HP_CTR_IP6_REASM_OVERSIZE,
                                    HP_CTR_IP6_REASM_MEM_DROPS};
static const struct fam_ctr *fctr(const struct fq *q)
{
    return q->family == HP_AF_INET4 ? &ctr4 : &ctr6;
}

/* What a buffer pins: its metadata and its whole data room, per segment. */
static uint64_t truesize(const struct hp_buf *b)
{
    uint64_t n = 0;
    for (; b; b = b->next)
        n += HP_BUF_META_SIZE + b->room;
    return n;
}

static uint64_t timeout_ns(const struct hp_stack *s, int family)
{
    uint32_t ms = s->cfg.reasm_timeout_ms;
    /* 0: the defaults, 30 s for IPv4 (Linux's ipfrag_time) and the 60 s
     * RFC 8200 4.5 asks for IPv6. */
    if (ms == 0)
        ms = family == HP_AF_INET4 ? 30000 : 60000;
    return (uint64_t)ms * 1000000u;
}

/* Free what q holds and put it back in the table. */
static void fq_release(struct hp_stack *s, struct fq *q)
{
    if (hp__timer_armed(&q->timer))
        hp__timer_cancel(s, &q->timer);
    for (uint32_t i = 0; i < q->nf; i++)
        hp_buf_free(q->f[i].b);
    free(q->f);
    s->reasm->held -= q->held;
    struct hp__timer t = q->timer;
    memset(q, 0, sizeof(*q));
    q->timer = t;
}

/* Drop q's fragments but remember the datagram until its timer fires, so
 * that its later fragments are dropped too (RFC 5722 3). */
static void fq_kill(struct hp_stack *s, struct fq *q)
{
    for (uint32_t i = 0; i < q->nf; i++)
        hp_buf_free(q->f[i].b);
    q->nf = 0;
    s->reasm->held -= q->held;
    q->held = 0;
    q->dead = true;
}

/* Give up on q: counted as a failure, and as `why` when that is another counter. */
static void fq_fail(struct hp_stack *s, struct fq *q, enum hp_stack_ctr why)
{
    if (why != fctr(q)->fails)
        hp__ctr(s, why);
    hp__ctr(s, fctr(q)->fails);
    fq_release(s, q);
}

void hp__reasm_timer(struct hp_stack *s, struct hp__timer *t)
{
    struct fq *q = HP__CONTAINER(t, struct fq, timer);
    if (!q->dead) {
        hp__ctr(s, fctr(q)->timeouts);
        hp__ctr(s, fctr(q)->fails);
        /* Time exceeded, code 1, only when the first fragment came: it is
         * the one quoted (RFC 792; RFC 8200 4.5). */
        if (q->first && q->nf > 0 && q->f[0].off == 0) {
            struct hp_buf *fb = q->f[0].b;
            if (q->hdr_len <= 255 && hp_buf_adj(fb, q->hdr_len)) {
                fb->l3_len = (uint8_t)q->hdr_len;
                if (q->family == HP_AF_INET4)
                    hp__icmp4_error(q->ifc, fb, HP_ICMP_TIME_EXCEEDED, HP_ICMP_TIME_REASSEMBLY, 0);
                else
                    hp__icmp6_error(q->ifc, fb, HP_ICMP6_TIME_EXCEEDED, HP_ICMP6_TIME_REASSEMBLY,
                                    0);
            }
        }
    }
    fq_release(s, q);
}

int hp__reasm_init(struct hp_stack *s)
{
    struct hp__reasm *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    for (int i = 0; i < HP__REASM_MAX_DGRAMS; i++)
        hp__timer_init(&r->q[i].timer, HP__TK_REASM);
    s->reasm = r;
    return 0;
}

void hp__reasm_fini(struct hp_stack *s)
{
    if (!s->reasm)
        return;
    for (int i = 0; i < HP__REASM_MAX_DGRAMS; i++)
        if (s->reasm->q[i].used)
            fq_release(s, &s->reasm->q[i]);
    free(s->reasm);
    s->reasm = NULL;
}

/* Evict the oldest datagram other than keep; false when there is none. */
static bool evict_oldest(struct hp_stack *s, const struct fq *keep)
{
    struct fq *old = NULL;
    for (int i = 0; i < HP__REASM_MAX_DGRAMS; i++) {
        struct fq *q = &s->reasm->q[i];
        if (q->used && q != keep && (!old || q->seq < old->seq))
            old = q;
    }
    if (!old)
        return false;
    if (old->dead)
        fq_release(s, old);
    else
        fq_fail(s, old, fctr(old)->mem_drops);
    return true;
}

/* The fragment's identity and what reassembly needs of it. */
struct fkey {
    uint8_t family, proto;
    const uint8_t *src, *dst;
    uint32_t id;
    uint32_t off, len; /* in the datagram's data */
    uint32_t hdr;      /* bytes in front of the data in b */
    bool mf;
    uint16_t unfrag;   /* IPv6 */
    uint8_t frag_next; /* IPv6 */
};

static struct fq *lookup(struct hp_stack *s, const struct fkey *k)
{
    size_t alen = k->family == HP_AF_INET4 ? 4 : 16;
    for (int i = 0; i < HP__REASM_MAX_DGRAMS; i++) {
        struct fq *q = &s->reasm->q[i];
        if (q->used && q->family == k->family && q->id == k->id && q->proto == k->proto &&
            memcmp(q->src, k->src, alen) == 0 && memcmp(q->dst, k->dst, alen) == 0)
            return q;
    }
    return NULL;
}

static struct fq *create(struct hp__iface *ifc, const struct fkey *k)
{
    struct hp_stack *s = ifc->s;
    struct fq *q = NULL;
    for (int i = 0; i < HP__REASM_MAX_DGRAMS && !q; i++)
        if (!s->reasm->q[i].used)
            q = &s->reasm->q[i];
    if (!q) {
        /* Too many datagrams at once: the oldest gives way. */
        evict_oldest(s, NULL);
        for (int i = 0; i < HP__REASM_MAX_DGRAMS && !q; i++)
            if (!s->reasm->q[i].used)
                q = &s->reasm->q[i];
        if (!q)
            return NULL;
    }
    q->used = true;
    q->family = k->family;
    q->proto = k->proto;
    size_t alen = k->family == HP_AF_INET4 ? 4 : 16;
    memcpy(q->src, k->src, alen);
    memcpy(q->dst, k->dst, alen);
    q->id = k->id;
    q->ifc = ifc;
    q->seq = ++s->reasm->seq;
    if (hp__timer_arm(s, &q->timer, s->now + timeout_ns(s, k->family)) != 0) {
        fq_release(s, q);
        return NULL;
    }
    return q;
}

/* Rebuild the IPv4 datagram: the first fragment's header with Total Length
 * set and MF / offset cleared (DF kept), the others chained behind. */
static struct hp_buf *finish4(struct hp_stack *s, struct fq *q)
{
    struct hp_buf *h = q->f[0].b;
    uint8_t *p = hp_buf_data(h);
    hp_put_be16(p + 2, (uint16_t)(q->hdr_len + q->total));
    hp_put_be16(p + 6, (uint16_t)(hp_get_be16(p + 6) & 0x4000u));
    memset(p + 10, 0, 2);
    uint16_t c = hp_cksum_ipv4_hdr(p, q->hdr_len);
    memcpy(p + 10, &c, 2);
    hp_buf_adj(h, q->hdr_len);
    h->l3_len = (uint8_t)q->hdr_len;
    for (uint32_t i = 1; i < q->nf; i++)
        (void)hp_buf_chain(h, q->f[i].b); /* at most 1400 segments: cannot overflow */
    q->nf = 0;
    hp__ctr(s, HP_CTR_IP_REASM_OKS);
    fq_release(s, q);
    return h;
}

/* Rebuild the IPv6 packet: the first fragment's unfragmentable part with
 * the Fragment header taken out (the Next Header that named it now names
 * what it carried) and Payload Length fixed, then the fragmentable part;
 * data offset at the upper-layer header (RFC 8200 4.5). */
static struct hp_buf *finish6(struct hp_stack *s, struct fq *q, uint8_t *proto)
{
    struct hp_buf *h = q->f[0].b;
    uint8_t *p = hp_buf_data(h);
    size_t field = 6, pos = HP_IPV6_HDR_LEN;
    uint8_t next = p[6];
    /* The unfragmentable headers were walked by the wire parser when this
     * fragment arrived: they lie within unfrag. */
    while (pos < q->unfrag) {
        size_t len =
            next == HP_IPPROTO_AH ? ((size_t)p[pos + 1] + 2) * 4 : ((size_t)p[pos + 1] + 1) * 8;
        field = pos;
        next = p[pos];
        pos += len;
    }
    p[field] = q->frag_next;
    memmove(p + HP_IPV6_FRAG_HDR_LEN, p, q->unfrag);
    p = hp_buf_adj(h, HP_IPV6_FRAG_HDR_LEN);
    uint32_t plen = (uint32_t)q->unfrag - HP_IPV6_HDR_LEN + q->total;
    hp_put_be16(p + 4, (uint16_t)plen);
    /* RFC 8200 4.5 (and RFC 7112): the first fragment holds every header
     * up to the upper layer; if not, the packet is refused. */
    long l4 = hp__ipv6_walk(p, h->data_len, q->unfrag, q->frag_next, proto, NULL);
    if (l4 < 0 || l4 > 255) {
        hp__ctr(s, HP_CTR_IP6_IN_HDR_ERRORS);
        hp__ctr(s, HP_CTR_IP6_REASM_FAILS);
        fq_release(s, q);
        return NULL;
    }
    hp_buf_adj(h, (uint32_t)l4);
    h->l3_len = (uint8_t)l4;
    for (uint32_t i = 1; i < q->nf; i++)
        (void)hp_buf_chain(h, q->f[i].b);
    q->nf = 0;
    hp__ctr(s, HP_CTR_IP6_REASM_OKS);
    fq_release(s, q);
    return h;
}

static struct hp_buf *reasm(struct hp__iface *ifc, struct hp_buf *b, const struct fkey *k,
                            uint8_t *proto)
{
    struct hp_stack *s = ifc->s;
    const struct fam_ctr *fc = k->family == HP_AF_INET4 ? &ctr4 : &ctr6;
    hp__ctr(s, fc->reqds);
    if (!s->reasm) {
        hp__ctr(s, fc->fails);
        hp_buf_free(b);
        return NULL;
    }
    struct fq *q = lookup(s, k);
    if (!q && !(q = create(ifc, k))) {
        hp__ctr(s, fc->fails);
        hp_buf_free(b);
        return NULL;
    }
    if (q->dead) {
        hp_buf_free(b);
        return NULL;
    }
    uint32_t end = k->off + k->len;
    /* The datagram may not outgrow its 16-bit length field, counted with
     * the first fragment's headers (which may be longer than this one's). */
    uint32_t max_end = end > q->max_end ? end : q->max_end;
    uint32_t over;
    if (k->family == HP_AF_INET4)
        over = (q->first ? q->hdr_len : k->off == 0 ? k->hdr : HP_IPV4_HDR_LEN) + max_end;
    else
        over = (q->first      ? q->unfrag
                : k->off == 0 ? k->unfrag
                              : HP_IPV6_HDR_LEN) -
               HP_IPV6_HDR_LEN + max_end;
    if (over > 65535u) {
        hp_buf_free(b);
        fq_fail(s, q, fc->oversize);
        return NULL;
    }
    /* The last fragment fixes the length; everything must agree with it. */
    if ((!k->mf && ((q->has_last && end != q->total) || end < q->max_end)) ||
        (k->mf && q->has_last && end > q->total) || (k->mf && k->len == 0)) {
        hp_buf_free(b);
        fq_fail(s, q, fc->fails);
        return NULL;
    }
    /* Find the place in offset order (fragments mostly come in order). */
    uint32_t i = q->nf;
    while (i > 0 && q->f[i - 1].off > k->off)
        i--;
    if (i > 0 && q->f[i - 1].off == k->off && q->f[i - 1].len == k->len) {
        /* An exact duplicate is dropped alone (RFC 8200 4.5 allows it). */
        hp_buf_free(b);
        return NULL;
    }
    if ((i > 0 && q->f[i - 1].off + q->f[i - 1].len > k->off) || (i < q->nf && end > q->f[i].off) ||
        (i < q->nf && q->f[i].off == k->off)) {
        /* Overlapping fragments: the whole datagram goes (RFC 5722 3; the
         * same for IPv4, where overlaps only serve to evade filters). */
        hp_buf_free(b);
        hp__ctr(s, fc->overlaps);
        hp__ctr(s, fc->fails);
        fq_kill(s, q);
        return NULL;
    }
    if (!k->mf) {
        q->has_last = true;
        q->total = end;
    }
    if (k->len == 0) {
        hp_buf_free(b);
    } else {
        uint64_t ts = truesize(b);
        uint64_t max = s->cfg.reasm_max_bytes ? s->cfg.reasm_max_bytes : 4u << 20;
        while (s->reasm->held + ts > max && evict_oldest(s, q))
            ;
        if (s->reasm->held + ts > max) {
            hp_buf_free(b);
            fq_fail(s, q, fc->mem_drops);
            return NULL;
        }
        if (q->nf == q->cap) {
            uint32_t cap = q->cap ? q->cap * 2 : 8;
            struct frag *nf = q->nf < HP__REASM_MAX_FRAGS ? realloc(q->f, cap * sizeof(*nf)) : NULL;
            if (!nf) {
                hp_buf_free(b);
                fq_fail(s, q, fc->fails);
                return NULL;
            }
            q->f = nf;
            q->cap = cap;
        }
        if (k->off == 0) {
            q->first = true;
            q->hdr_len = (uint16_t)k->hdr;
            q->unfrag = k->unfrag;
            q->frag_next = k->frag_next;
        } else {
            hp_buf_adj(b, k->hdr);
        }
        memmove(&q->f[i + 1], &q->f[i], (q->nf - i) * sizeof(q->f[0]));
        q->f[i] = (struct frag){b, k->off, k->len};
        q->nf++;
        q->have += k->len;
        q->held += ts;
        s->reasm->held += ts;
    }
    if (end > q->max_end)
        q->max_end = end;
    /* Without overlaps, full coverage is exactly have == total. */
    if (!q->has_last || !q->first || q->have != q->total)
        return NULL;
    if (q->family == HP_AF_INET4)
        return finish4(s, q);
    return finish6(s, q, proto);
}

struct hp_buf *hp__reasm4(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv4_repr *ip)
{
    struct fkey k = {
        .family = HP_AF_INET4,
        .proto = ip->proto,
        .src = ip->src,
        .dst = ip->dst,
        .id = ip->ident,
        .off = ip->frag_off,
        .len = ip->payload_len,
        .hdr = ip->hdr_len,
        .mf = ip->mf,
    };
    uint8_t proto;
    return reasm(ifc, b, &k, &proto);
}

struct hp_buf *hp__reasm6_ex(struct hp__iface *ifc, struct hp_buf *b, const struct hp_ipv6_repr *ip,
                             uint8_t *proto)
{
    uint32_t data = b->data_len > ip->l4_off ? b->data_len - ip->l4_off : 0;
    struct fkey k = {
        .family = HP_AF_INET6,
        .src = ip->src,
        .dst = ip->dst,
        .id = ip->frag_id,
        .off = ip->frag_off,
        .len = data,
        .hdr = ip->l4_off,
        .mf = ip->mf,
        .unfrag = ip->unfrag_len,
        .frag_next = ip->frag_next,
    };
    return reasm(ifc, b, &k, proto);
}
