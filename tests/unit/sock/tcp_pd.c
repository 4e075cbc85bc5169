/* SPDX-License-Identifier: BSD-3-Clause */
/* The packetdrill-like TCP harness: the peer's side of a mem link, segment injection and capture with per-segment invariants, a virtual clock. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cksum.h>

#include "net/internal.h"
#include "tcp_pd.h"

static const uint8_t PEER_MAC[6] = {0x02, 0x00, 0x00, 0xAA, 0xBB, 0xCC};
static const uint8_t OUR4[4] = {198, 18, 0, 1};
static const uint8_t PEER4[4] = {198, 18, 0, 2};
static const uint8_t OUR6[16] = {0x20, 0x01, 0x00, 0x02, [15] = 1};
static const uint8_t PEER6[16] = {0x20, 0x01, 0x00, 0x02, [15] = 2};

#define PD_T0_NS          1000000000000ull /* the virtual clock starts at 1000 s */
#define PD_MAX_COMPLAINTS 8

/* ---- small helpers ------------------------------------------------------------- */

static bool seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

uint8_t pd_pattern(int dir, uint64_t off)
{
    /* Varies with every byte of the offset, so misplaced data shows. */
    uint64_t x = off * 0x9E3779B1u + (uint64_t)dir * 0x5bd1e995u;
    return (uint8_t)(x ^ (x >> 13) ^ (x >> 24) ^ (off >> 8));
}

uint64_t pd_now_ms(const struct pd *h)
{
    return (h->now_ns - h->t0_ns) / 1000000u;
}

uint32_t pd_peer_tsval(const struct pd *h)
{
    return h->c->peer_ts_base + (uint32_t)pd_now_ms(h);
}

bool pd_ts_ok(const struct pd_conn *c)
{
    return c->peer_syn_seen && c->stack_syn_seen && c->peer_syn.has_ts && c->stack_syn.has_ts;
}

bool pd_ws_ok(const struct pd_conn *c)
{
    return c->peer_syn_seen && c->stack_syn_seen && c->peer_syn.has_ws && c->stack_syn.has_ws;
}

uint32_t pd_full(const struct pd *h)
{
    return h->mss - (pd_ts_ok(h->c) ? 12u : 0u);
}

static uint64_t pd_clock(void *arg)
{
    return ((const struct pd *)arg)->now_ns;
}

static const char *fam_name(const struct pd *h)
{
    return h->family == 4 ? "IPv4" : "IPv6";
}

static void flags_str(uint8_t f, char *out)
{
    static const struct {
        uint8_t bit;
        char ch;
    } map[] = {{HP_TCP_F_SYN, 'S'}, {HP_TCP_F_FIN, 'F'}, {HP_TCP_F_RST, 'R'}, {HP_TCP_F_PSH, 'P'},
               {HP_TCP_F_URG, 'U'}, {HP_TCP_F_ECE, 'E'}, {HP_TCP_F_CWR, 'W'}, {HP_TCP_F_ACK, '.'}};
    int n = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (f & map[i].bit)
            out[n++] = map[i].ch;
    if (!n)
        out[n++] = '-';
    out[n] = 0;
}

static size_t opts_str(const struct hp_tcp_opts *o, uint32_t sack_base, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
#define PUT(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
    if (o->has_mss)
        PUT("%smss %u", n ? "," : "", o->mss);
    if (o->sack_perm)
        PUT("%ssackok", n ? "," : "");
    if (o->has_ts)
        PUT("%sts %u %u", n ? "," : "", o->ts_val, o->ts_ecr);
    if (o->has_ws)
        PUT("%sws %u", n ? "," : "", o->ws);
    if (o->n_sack) {
        PUT("%ssack", n ? "," : "");
        for (int i = 0; i < o->n_sack; i++)
            PUT(" %u:%u", o->sack[i][0] - sack_base, o->sack[i][1] - sack_base);
    }
#undef PUT
    return n;
}

static void seg_str(const struct pd *h, const struct pd_seg *g, char *out, size_t cap)
{
    char fl[12], op[160];
    flags_str(g->flags, fl);
    const struct pd_conn *c = &h->conn[g->conn];
    opts_str(&g->opt, c->peer_isn, op, sizeof op);
    snprintf(out, cap,
             "%s seq %u ack %u win %u <%s> len %u  (abs seq %u ack %u, port %u > %u, at %llu ms)",
             fl, g->rseq, g->rack, g->win, op, g->len, g->seq, g->ack, g->sport, g->dport,
             (unsigned long long)g->at_ms);
}

__attribute__((format(printf, 2, 3))) static void trace(struct pd *h, const char *fmt, ...)
{
    char *slot = h->trace[h->ntrace % PD_TRACE];
    int n = snprintf(slot, sizeof h->trace[0], "%6llu ms  ", (unsigned long long)pd_now_ms(h));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot + n, sizeof h->trace[0] - (size_t)n, fmt, ap);
    va_end(ap);
    h->ntrace++;
}

static void print_trace(const struct pd *h)
{
    unsigned first = h->ntrace > PD_TRACE ? h->ntrace - PD_TRACE : 0;
    fprintf(stderr, "      recent events:\n");
    for (unsigned i = first; i < h->ntrace; i++)
        fprintf(stderr, "        %s\n", h->trace[i % PD_TRACE]);
}

void pd__fail(struct pd *h, const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hp_test_fail(file, line, "[%s %s] %s", fam_name(h), h->script ? h->script : "", msg);
    print_trace(h);
    if (h->jb)
        longjmp(*h->jb, 1);
    abort();
}

/* A broken invariant of a segment the stack sent: reported, not fatal. */
__attribute__((format(printf, 4, 5))) static void complain(struct pd *h, struct pd_conn *c,
                                                           const struct pd_seg *g, const char *fmt,
                                                           ...)
{
    if (c && c->complaints++ >= PD_MAX_COMPLAINTS)
        return;
    char msg[512], s[400] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g)
        seg_str(h, g, s, sizeof s);
    hp_test_fail(h->file ? h->file : __FILE__, h->line,
                 "[%s %s] the stack sent a bad segment: %s\n      segment: %s", fam_name(h),
                 h->script ? h->script : "", msg, s);
}

/* ---- connections ------------------------------------------------------------------ */

struct pd_conn *pd_use(struct pd *h, uint16_t rport, uint32_t peer_isn)
{
    for (int i = 0; i < h->nconn; i++) {
        if (h->conn[i].rport == rport) {
            if (!h->conn[i].peer_syn_seen)
                h->conn[i].peer_isn = peer_isn;
            return h->c = &h->conn[i];
        }
    }
    if (h->nconn == PD_MAX_CONNS)
        pd__fail(h, __FILE__, __LINE__, "more than %d connections", PD_MAX_CONNS);
    struct pd_conn *c = &h->conn[h->nconn++];
    memset(c, 0, sizeof *c);
    c->rport = rport;
    c->peer_isn = peer_isn;
    c->peer_ts_base = 100;
    c->check_payload = true;
    return h->c = c;
}

static struct pd_conn *conn_by_rport(struct pd *h, uint16_t rport)
{
    for (int i = 0; i < h->nconn; i++)
        if (h->conn[i].rport == rport)
            return &h->conn[i];
    struct pd_conn *keep = h->c, *c = pd_use(h, rport, 0);
    h->c = keep;
    return c;
}

struct hp_sockaddr pd_peer_addr(const struct pd *h, uint16_t port)
{
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = (uint8_t)h->family;
    a.port = port;
    memcpy(a.addr, h->peer_ip, h->family == 4 ? 4 : 16);
    return a;
}

struct hp_sockaddr pd_our_addr(const struct pd *h, uint16_t port)
{
    struct hp_sockaddr a = pd_peer_addr(h, port);
    memcpy(a.addr, h->our_ip, h->family == 4 ? 4 : 16);
    return a;
}

/* ---- frames from the peer ------------------------------------------------------ */

static void send_frame(struct pd *h, const uint8_t *dst_mac, uint16_t type, const void *l3,
                       size_t len)
{
    struct hp_buf *b = hp_buf_alloc(h->pool);
    if (!b)
        pd__fail(h, __FILE__, __LINE__, "the peer's pool is empty");
    uint8_t *p = hp_buf_append(b, (uint32_t)(HP_ETH_HDR_LEN + len));
    if (!p) {
        hp_buf_free(b);
        pd__fail(h, __FILE__, __LINE__, "frame of %zu bytes too long", len);
    }
    struct hp_eth_repr eth = {.ethertype = type};
    memcpy(eth.dst, dst_mac, 6);
    memcpy(eth.src, PEER_MAC, 6);
    hp_eth_emit(&eth, p, HP_ETH_HDR_LEN);
    memcpy(p + HP_ETH_HDR_LEN, l3, len);
    if (hp_link_tx_burst(h->end[1], &b, 1) != 1) {
        hp_buf_free(b);
        pd__fail(h, __FILE__, __LINE__, "the link to the stack is full");
    }
}

static void answer_arp(struct pd *h, const uint8_t *p, size_t len)
{
    struct hp_arp_repr r;
    if (hp_arp_parse(p, len, &r) != 0 || r.op != HP_ARP_OP_REQUEST || memcmp(r.tpa, PEER4, 4) != 0)
        return;
    struct hp_arp_repr rep = {.op = HP_ARP_OP_REPLY};
    memcpy(rep.sha, PEER_MAC, 6);
    memcpy(rep.spa, PEER4, 4);
    memcpy(rep.tha, r.sha, 6);
    memcpy(rep.tpa, r.spa, 4);
    uint8_t out[HP_ARP_LEN];
    hp_arp_emit(&rep, out, sizeof out);
    send_frame(h, r.sha, HP_ETHERTYPE_ARP, out, sizeof out);
    h->arp_answered++;
}

static void answer_ns(struct pd *h, const struct hp_ipv6_repr *ip, const uint8_t *msg, size_t len)
{
    struct hp_l4_addrs a = {.family = 6, .src = ip->src, .dst = ip->dst};
    struct hp_ndp_repr r;
    if (hp_ndp_parse(msg, len, &a, ip->hop_limit, &r, HP_WIRE_VERIFY_CKSUM) != 0 ||
        r.type != HP_NDP_NEIGHBOR_SOLICIT || memcmp(r.target, PEER6, 16) != 0)
        return;
    struct hp_ndp_repr na;
    memset(&na, 0, sizeof na);
    na.type = HP_NDP_NEIGHBOR_ADVERT;
    memcpy(na.target, PEER6, 16);
    na.solicited = true;
    na.override = true;
    na.has_tll = true;
    memcpy(na.tll, PEER_MAC, 6);
    uint8_t out[HP_IPV6_HDR_LEN + 64];
    size_t mlen = hp_ndp_repr_len(&na);
    struct hp_ipv6_repr o = {.next_header = HP_IPPROTO_ICMPV6,
                             .hop_limit = 255,
                             .payload_len = (uint16_t)mlen};
    memcpy(o.src, PEER6, 16);
    memcpy(o.dst, ip->src, 16);
    struct hp_l4_addrs oa = {.family = 6, .src = o.src, .dst = o.dst};
    hp_ipv6_emit(&o, out, HP_IPV6_HDR_LEN);
    hp_ndp_emit(&na, &oa, out + HP_IPV6_HDR_LEN, mlen);
    send_frame(h, h->mac, HP_ETHERTYPE_IPV6, out, HP_IPV6_HDR_LEN + mlen);
    h->ns_answered++;
}

/* ---- option strings --------------------------------------------------------------- */

enum { TS_EXACT, TS_ANY, TS_REL, TS_LAST_PEER, TS_PEER_NOW, TS_LAST_STACK };

struct optspec {
    struct hp_tcp_opts o;
    bool mss_any, ws_any, sack_any;
    int val_mode, ecr_mode;
    int64_t val_rel;
    bool manual; /* lay out by hand (raw / eol present) */
    uint8_t bytes[64];
    size_t nbytes;
};

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static void put_bytes(struct pd *h, struct optspec *sp, const void *p, size_t n)
{
    if (sp->nbytes + n > sizeof sp->bytes)
        pd__fail(h, h->file, h->line, "options too long");
    memcpy(sp->bytes + sp->nbytes, p, n);
    sp->nbytes += n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Parse an option string. `inbound`: for a segment the script injects. */
static void parse_opts(struct pd *h, const char *str, bool inbound, struct optspec *sp)
{
    memset(sp, 0, sizeof *sp);
    if (strstr(str, "raw") || strstr(str, "eol"))
        sp->manual = true;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", str);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char name[16] = "", a1[32] = "", a2[32] = "";
        int n = sscanf(tok, " %15s %31s %31s", name, a1, a2);
        if (n < 1)
            continue;
        uint8_t b[12];
        if (!strcmp(name, "mss") && n >= 2) {
            sp->o.has_mss = true;
            sp->mss_any = !strcmp(a1, "*");
            sp->o.mss = (uint16_t)strtoul(a1, NULL, 0);
            b[0] = 2, b[1] = 4, b[2] = (uint8_t)(sp->o.mss >> 8), b[3] = (uint8_t)sp->o.mss;
            put_bytes(h, sp, b, 4);
        } else if (!strcmp(name, "ws") && n >= 2) {
            sp->o.has_ws = true;
            sp->ws_any = !strcmp(a1, "*");
            sp->o.ws = (uint8_t)strtoul(a1, NULL, 0);
            b[0] = 3, b[1] = 3, b[2] = sp->o.ws;
            put_bytes(h, sp, b, 3);
        } else if (!strcmp(name, "sackok")) {
            sp->o.sack_perm = true;
            b[0] = 4, b[1] = 2;
            put_bytes(h, sp, b, 2);
        } else if (!strcmp(name, "ts") && n >= 3) {
            sp->o.has_ts = true;
            if (!strcmp(a1, "*"))
                sp->val_mode = inbound ? TS_PEER_NOW : TS_ANY;
            else if (a1[0] == '+' || (a1[0] == '-' && !inbound)) {
                sp->val_mode = TS_REL;
                sp->val_rel = strtoll(a1, NULL, 0);
            } else
                sp->o.ts_val = (uint32_t)strtoul(a1, NULL, 0);
            if (!strcmp(a2, "*"))
                sp->ecr_mode = inbound ? TS_LAST_STACK : TS_ANY;
            else if (!strcmp(a2, "="))
                sp->ecr_mode = TS_LAST_PEER;
            else
                sp->o.ts_ecr = (uint32_t)strtoul(a2, NULL, 0);
            if (inbound) {
                if (sp->val_mode == TS_PEER_NOW)
                    sp->o.ts_val = pd_peer_tsval(h);
                if (sp->ecr_mode == TS_LAST_STACK)
                    sp->o.ts_ecr = h->c->last_tsval;
            }
            b[0] = 8, b[1] = 10;
            put_be32(b + 2, sp->o.ts_val);
            put_be32(b + 6, sp->o.ts_ecr);
            put_bytes(h, sp, b, 10);
        } else if (!strcmp(name, "sack")) {
            /* sack L:R L:R ... */
            const char *p = tok + strspn(tok, " ") + 4;
            uint8_t hdr[2] = {5, 2};
            size_t at = sp->nbytes;
            put_bytes(h, sp, hdr, 2);
            unsigned l, r;
            int used;
            if (!strcmp(a1, "*"))
                sp->sack_any = true;
            while (sp->o.n_sack < HP_TCP_MAX_SACK && sscanf(p, " %u:%u%n", &l, &r, &used) == 2) {
                /* Injected blocks acknowledge our data; expected ones, the peer's. */
                uint32_t base = inbound ? (h->c->isn_known ? h->c->our_isn : 0) : h->c->peer_isn;
                sp->o.sack[sp->o.n_sack][0] = base + l;
                sp->o.sack[sp->o.n_sack][1] = base + r;
                put_be32(b, base + l);
                put_be32(b + 4, base + r);
                put_bytes(h, sp, b, 8);
                sp->o.n_sack++;
                sp->bytes[at + 1] = (uint8_t)(sp->bytes[at + 1] + 8);
                p += used;
            }
        } else if (!strcmp(name, "nop")) {
            b[0] = 1;
            put_bytes(h, sp, b, 1);
        } else if (!strcmp(name, "eol")) {
            b[0] = 0;
            put_bytes(h, sp, b, 1);
        } else if (!strcmp(name, "raw")) {
            const char *p = tok + strspn(tok, " ") + 3;
            for (;;) {
                while (*p == ' ')
                    p++;
                int hi = hexval(p[0]), lo = hi < 0 ? -1 : hexval(p[1]);
                if (hi < 0 || lo < 0)
                    break;
                b[0] = (uint8_t)(hi << 4 | lo);
                put_bytes(h, sp, b, 1);
                p += 2;
            }
        } else {
            pd__fail(h, h->file, h->line, "unknown option \"%s\" in \"%s\"", tok, str);
        }
    }
}

/* ---- injecting ---------------------------------------------------------------------- */

/* Flags; a '?' after a flag makes it optional (returned in *optional). */
static uint8_t parse_flags_opt(struct pd *h, const char *s, uint8_t *optional)
{
    uint8_t f = 0, last = 0;
    for (; *s; s++) {
        uint8_t before = f;
        if (*s == '?') {
            if (optional)
                *optional |= last;
            f &= (uint8_t)~last;
            continue;
        }
        switch (*s) {
        case 'S':
            f |= HP_TCP_F_SYN;
            break;
        case 'F':
            f |= HP_TCP_F_FIN;
            break;
        case 'R':
            f |= HP_TCP_F_RST;
            break;
        case 'P':
            f |= HP_TCP_F_PSH;
            break;
        case '.':
            f |= HP_TCP_F_ACK;
            break;
        case 'U':
            f |= HP_TCP_F_URG;
            break;
        case 'E':
            f |= HP_TCP_F_ECE;
            break;
        case 'W':
            f |= HP_TCP_F_CWR;
            break;
        case '-':
        case ' ':
            break;
        default:
            pd__fail(h, h->file, h->line, "bad flags \"%s\"", s);
        }
        last = (uint8_t)(f & ~before);
    }
    return f;
}

void pd__in(struct pd *h, const char *file, int line, const char *flags, int64_t seq, int64_t ack,
            int64_t win, uint32_t len, const char *opts, unsigned mut)
{
    h->file = file;
    h->line = line;
    struct pd_conn *c = h->c;
    if (!c->lport)
        pd__fail(h, file, line, "pd_in: the stack's port is not known (set h->c->lport)");
    uint8_t fl = parse_flags_opt(h, flags, NULL);
    uint32_t aseq = c->peer_isn + (uint32_t)seq;
    uint32_t aack = (uint32_t)ack + (c->isn_known ? c->our_isn : 0);
    struct optspec sp;
    if (opts)
        parse_opts(h, opts, true, &sp);
    else if (pd_ts_ok(c))
        parse_opts(h, "ts * *", true, &sp);
    else
        memset(&sp, 0, sizeof sp);
    /* A SYN with a new sequence number starts a new incarnation. */
    if ((fl & HP_TCP_F_SYN) && !(mut & PD_MUT_NO_REBASE)) {
        if (aseq != c->peer_isn) {
            c->peer_isn = aseq;
            c->rx_off = 0;
            c->peer_edge_known = c->rwnd_edge_known = c->ack_out_known = false;
        }
        c->peer_syn = sp.o;
        c->peer_syn_seen = true;
    }
    if (sp.o.has_ts)
        c->last_peer_tsval = sp.o.ts_val;
    if ((fl & HP_TCP_F_ACK) && !(fl & HP_TCP_F_RST)) {
        unsigned shift = (fl & HP_TCP_F_SYN) || !pd_ws_ok(c) ? 0 : c->peer_syn.ws;
        uint32_t edge = aack + ((uint32_t)win << shift);
        if (!c->peer_edge_known || seq_lt(c->peer_edge, edge))
            c->peer_edge = edge;
        c->peer_edge_known = true;
    }

    uint8_t *payload = len ? malloc(len) : NULL;
    uint32_t rel0 = aseq - c->peer_isn - ((fl & HP_TCP_F_SYN) ? 0 : 1);
    for (uint32_t i = 0; i < len; i++)
        payload[i] = pd_pattern(1, (uint64_t)(rel0 + i));
    struct hp_tcp_repr r = {
        .src_port = c->rport,
        .dst_port = c->lport,
        .seq = aseq,
        .ack = aack,
        .flags = fl,
        .window = (uint16_t)win,
        .payload = payload,
        .payload_len = len,
    };
    if (!sp.manual)
        r.opt = sp.o;
    struct hp_l4_addrs a = {.family = (uint8_t)h->family, .src = h->peer_ip, .dst = h->our_ip};
    size_t iph = h->family == 4 ? HP_IPV4_HDR_LEN : HP_IPV6_HDR_LEN;
    size_t cap = iph + HP_TCP_MAX_HDR_LEN + len;
    uint8_t *pkt = calloc(1, cap + 64);
    uint8_t *tcp = pkt + iph;
    int tl = hp_tcp_emit(&r, &a, tcp, cap - iph);
    if (tl < 0) {
        free(payload);
        free(pkt);
        pd__fail(h, file, line, "hp_tcp_emit: %s", hp_wire_reason(tl));
    }
    if (sp.manual) {
        /* Options by hand: header, the bytes padded to 4 with EOL, payload. */
        size_t ol = (sp.nbytes + 3) & ~(size_t)3;
        if (ol > HP_TCP_MAX_OPT_LEN)
            ol = HP_TCP_MAX_OPT_LEN;
        memmove(tcp + HP_TCP_HDR_LEN + ol, tcp + HP_TCP_HDR_LEN, len);
        memset(tcp + HP_TCP_HDR_LEN, 0, ol);
        memcpy(tcp + HP_TCP_HDR_LEN, sp.bytes, sp.nbytes < ol ? sp.nbytes : ol);
        tcp[12] = (uint8_t)(((HP_TCP_HDR_LEN + ol) / 4) << 4);
        tl = (int)(HP_TCP_HDR_LEN + ol + len);
        uint16_t ck = h->family == 4 ? hp_cksum_tcp4(h->peer_ip, h->our_ip, tcp, (size_t)tl)
                                     : hp_cksum_tcp6(h->peer_ip, h->our_ip, tcp, (size_t)tl);
        memcpy(tcp + 16, &ck, 2);
    }
    if (mut & (PD_MUT_RESERVED | PD_MUT_DOFF4)) {
        if (mut & PD_MUT_RESERVED)
            tcp[12] |= 0x0E;
        if (mut & PD_MUT_DOFF4)
            tcp[12] = (uint8_t)((tcp[12] & 0x0F) | 0x40);
        uint16_t ck = h->family == 4 ? hp_cksum_tcp4(h->peer_ip, h->our_ip, tcp, (size_t)tl)
                                     : hp_cksum_tcp6(h->peer_ip, h->our_ip, tcp, (size_t)tl);
        memcpy(tcp + 16, &ck, 2);
    }
    if (mut & PD_MUT_BAD_CKSUM)
        tcp[17] ^= 0x5A;
    if (h->family == 4) {
        struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_TCP,
                                  .ttl = 64,
                                  .ident = h->ip_ident++,
                                  .df = true,
                                  .payload_len = (uint16_t)tl,
                                  .dscp_ecn = (mut & PD_MUT_CE) ? 3 : 0};
        /* h's addresses, which a script may change (a forged source) */
        memcpy(ip.src, h->peer_ip, 4);
        memcpy(ip.dst, h->our_ip, 4);
        hp_ipv4_emit(&ip, pkt, HP_IPV4_HDR_LEN);
    } else {
        struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_TCP,
                                  .hop_limit = 64,
                                  .payload_len = (uint16_t)tl,
                                  .traffic_class = (mut & PD_MUT_CE) ? 3 : 0};
        memcpy(ip.src, h->peer_ip, 16);
        memcpy(ip.dst, h->our_ip, 16);
        hp_ipv6_emit(&ip, pkt, HP_IPV6_HDR_LEN);
    }
    char fs[12], os[160];
    flags_str(fl, fs);
    opts_str(&sp.o, c->isn_known ? c->our_isn : 0, os, sizeof os);
    trace(h, "in   %s seq %u ack %u win %u <%s%s> len %u%s  (port %u > %u)", fs, aseq - c->peer_isn,
          (uint32_t)ack, (unsigned)(uint16_t)win, os, sp.manual ? " by hand" : "", len,
          mut ? " MUTATED" : "", c->rport, c->lport);
    send_frame(h, h->mac, h->family == 4 ? HP_ETHERTYPE_IPV4 : HP_ETHERTYPE_IPV6, pkt,
               iph + (size_t)tl);
    free(payload);
    free(pkt);
    if (!h->hold)
        pd_pump(h);
}

/* ---- capturing ------------------------------------------------------------------------ */

static void check_invariants(struct pd *h, struct pd_conn *c, struct pd_seg *g)
{
    uint8_t f = g->flags;
    if (c->lport && g->sport != c->lport)
        complain(h, c, g, "source port %u, the connection's is %u", g->sport, c->lport);
    if (f & HP_TCP_F_URG)
        complain(h, c, g, "URG set: nothing urgent was sent");
    if (!(f & HP_TCP_F_SYN) && (g->opt.has_mss || g->opt.has_ws || g->opt.sack_perm))
        complain(h, c, g,
                 "MSS, window scale or SACK-permitted on a segment without SYN "
                 "(RFC 9293 3.2, RFC 7323 2.2, RFC 2018 2)");
    if ((f & HP_TCP_F_SYN) && (f & HP_TCP_F_ACK) && c->peer_syn_seen) {
        if (g->opt.has_ws && !c->peer_syn.has_ws)
            complain(h, c, g, "window scale in a SYN-ACK to a SYN without it (RFC 7323 2.2)");
        if (g->opt.has_ts && !c->peer_syn.has_ts)
            complain(h, c, g, "timestamps in a SYN-ACK to a SYN without them (RFC 7323 3.2)");
        if (g->opt.sack_perm && !c->peer_syn.sack_perm)
            complain(h, c, g, "SACK-permitted in a SYN-ACK to a SYN without it (RFC 2018 2)");
    }
    if ((f & HP_TCP_F_SYN) && (f & HP_TCP_F_FIN))
        complain(h, c, g, "SYN and FIN together");
    if (g->ecn && (!g->len || (f & (HP_TCP_F_SYN | HP_TCP_F_RST))))
        complain(h, c, g,
                 "ECN field %u on a segment without data, a SYN or a RST (RFC 3168 6.1.1, 6.1.4)",
                 g->ecn);
    if (g->ecn == 3)
        complain(h, c, g, "CE set by the sender (RFC 3168 5: only routers set it)");
    if (g->opt.n_sack && c->peer_syn_seen && c->stack_syn_seen &&
        !(c->peer_syn.sack_perm && c->stack_syn.sack_perm))
        complain(h, c, g, "SACK blocks on a connection that did not negotiate SACK (RFC 2018 2)");
    if (g->opt.n_sack && (f & HP_TCP_F_ACK)) {
        /* Every block but a D-SACK first block lies above the ACK (RFC 2018 3, RFC 2883 4). */
        for (int i = 0; i < g->opt.n_sack; i++) {
            bool dsack = i == 0 && !seq_lt(g->ack, g->opt.sack[0][1]);
            if (!dsack && (seq_lt(g->opt.sack[i][0], g->ack) ||
                           !seq_lt(g->opt.sack[i][0], g->opt.sack[i][1])))
                complain(h, c, g, "SACK block %d (%u:%u) is not above the ACK", i,
                         g->opt.sack[i][0] - c->peer_isn, g->opt.sack[i][1] - c->peer_isn);
        }
    }
    if (!(f & (HP_TCP_F_SYN | HP_TCP_F_RST)) && !(f & HP_TCP_F_ACK))
        complain(h, c, g, "no ACK on a segment of a synchronized connection (RFC 9293 3.10.7.4)");
    if (!(f & HP_TCP_F_RST) && !(f & HP_TCP_F_SYN) && pd_ts_ok(c) && !g->opt.has_ts)
        complain(h, c, g,
                 "no timestamp option after timestamps were negotiated (RFC 7323 3.2 MUST)");
    if (!(f & HP_TCP_F_SYN) && g->opt.has_ts && c->peer_syn_seen && c->stack_syn_seen &&
        !pd_ts_ok(c))
        complain(h, c, g,
                 "timestamp option on a connection that did not negotiate them (RFC 7323 3.2)");
    if (g->opt.has_ts && !(f & HP_TCP_F_RST)) {
        /* Our TS clock ticks once a ms from a per-connection offset. A
         * passive connection's clock reads up to 63 ms behind while in
         * SYN_RECEIVED (its low 6 bits carry the options, as a SYN
         * cookie's: tcp_cookie.h): for one, ts_offset is the largest
         * offset seen, and a TSval may lag it by up to 63 ms. */
        uint32_t off = g->opt.ts_val - (uint32_t)g->at_ms;
        if ((f & HP_TCP_F_SYN) && (f & HP_TCP_F_ACK))
            c->ts_offset_syn = true;
        int32_t d = (int32_t)(off - c->ts_offset);
        bool ok = !c->tsval_seen || d == 0 || (c->ts_offset_syn && d > -64 && d < 64);
        if (!ok)
            complain(h, c, g, "TSval %u is %d ms off the connection's clock (1 tick per ms)",
                     g->opt.ts_val, (int)d);
        if (!c->tsval_seen || (c->ts_offset_syn && d > 0 && d < 64))
            c->ts_offset = off;
        if (c->tsval_seen && g->at_ms - c->last_ts_ms < 0x80000000u &&
            seq_lt(g->opt.ts_val, c->last_tsval))
            complain(h, c, g, "TSval went back from %u to %u (RFC 7323 5.4: monotonic)",
                     c->last_tsval, g->opt.ts_val);
        c->last_tsval = g->opt.ts_val;
        c->last_ts_ms = g->at_ms;
        c->tsval_seen = true;
    }
    if (g->len && c->peer_syn_seen && !(f & HP_TCP_F_SYN)) {
        uint32_t mss = c->peer_syn.has_mss ? c->peer_syn.mss : (h->family == 4 ? 536u : 1220u);
        if (g->len + g->optlen > mss)
            complain(h, c, g,
                     "%u bytes of data and %u of options exceed the peer's MSS %u (RFC 9293 3.7.1, "
                     "RFC 6691)",
                     g->len, g->optlen, mss);
    }
    if (g->len > 1 && c->peer_edge_known && seq_lt(c->peer_edge, g->seq + g->len))
        complain(h, c, g,
                 "data up to %u beyond the peer's window, which ends at %u (RFC 9293 3.8.6)",
                 g->seq + g->len - c->our_isn, c->peer_edge - c->our_isn);
    if (g->len && c->check_payload && c->isn_known && !(f & HP_TCP_F_SYN) &&
        !seq_lt(g->seq, c->our_isn + 1) && !(f & HP_TCP_F_RST)) {
        /* (A keepalive's garbage octet at SND.NXT - 1 is below the stream.) */
        uint64_t off = (uint32_t)(g->seq - c->our_isn - 1);
        for (uint32_t i = 0; i < g->len; i++) {
            if (g->payload[i] != pd_pattern(0, off + i)) {
                complain(
                    h, c, g,
                    "payload byte %u (stream offset %llu) is 0x%02x, the application sent 0x%02x",
                    i, (unsigned long long)(off + i), g->payload[i], pd_pattern(0, off + i));
                break;
            }
        }
    }
    if ((f & HP_TCP_F_ACK) && !(f & (HP_TCP_F_SYN | HP_TCP_F_RST))) {
        if (c->ack_out_known && seq_lt(g->ack, c->last_ack_out))
            complain(h, c, g, "ACK went back from %u to %u", c->last_ack_out - c->peer_isn,
                     g->rack);
        c->last_ack_out = g->ack;
        c->ack_out_known = true;
        unsigned shift = pd_ws_ok(c) ? c->stack_syn.ws : 0;
        uint32_t edge = g->ack + ((uint32_t)g->win << shift);
        uint32_t slack = (1u << shift) - 1;
        if (c->rwnd_edge_known && seq_lt(edge + slack, c->rwnd_edge))
            complain(h, c, g,
                     "the window shrank: right edge moved left by %u bytes (RFC 9293 3.8.6.2.2)",
                     c->rwnd_edge - edge);
        if (!c->rwnd_edge_known || seq_lt(c->rwnd_edge, edge))
            c->rwnd_edge = edge;
        c->rwnd_edge_known = true;
    }
}

static void capture_tcp(struct pd *h, const uint8_t *tcp, size_t len, const uint8_t *src,
                        const uint8_t *dst)
{
    struct hp_l4_addrs a = {.family = (uint8_t)h->family, .src = src, .dst = dst};
    struct hp_tcp_repr r;
    int rc = hp_tcp_parse(tcp, len, &a, &r, HP_WIRE_VERIFY_CKSUM);
    if (rc != 0) {
        complain(h, NULL, NULL, "a TCP segment that does not parse: %s (%zu bytes)",
                 hp_wire_reason(rc), len);
        return;
    }
    struct pd_conn *c = conn_by_rport(h, r.dst_port);
    if (!c->lport)
        c->lport = r.src_port;
    struct pd_seg g;
    memset(&g, 0, sizeof g);
    g.ecn = h->cur_ecn;
    g.df = h->cur_df;
    g.flags = r.flags;
    g.seq = r.seq;
    g.ack = r.ack;
    g.win = r.window;
    g.sport = r.src_port;
    g.dport = r.dst_port;
    g.urg = r.urgent;
    g.opt = r.opt;
    g.optlen = r.data_off - HP_TCP_HDR_LEN;
    g.len = (uint32_t)r.payload_len;
    g.at_ms = pd_now_ms(h);
    g.conn = (int)(c - h->conn);
    if ((r.flags & HP_TCP_F_SYN) && !(r.flags & HP_TCP_F_RST)) {
        if (!c->isn_known || c->our_isn != r.seq) {
            c->tsval_seen = false;
            c->tx_off = 0;
            c->rwnd_edge_known = c->ack_out_known = false;
            if (!(r.flags & HP_TCP_F_ACK)) {
                c->peer_syn_seen = false; /* an active open: the peer's SYN is to come */
                c->peer_edge_known = false;
            }
        }
        c->our_isn = r.seq;
        c->isn_known = true;
        c->stack_syn = r.opt;
        c->stack_syn_seen = true;
    }
    g.rseq = g.seq - (c->isn_known ? c->our_isn : 0);
    g.rack = g.ack - c->peer_isn;
    if (g.len) {
        g.payload = malloc(g.len);
        memcpy(g.payload, r.payload, g.len);
    }
    check_invariants(h, c, &g);
    char s[400];
    seg_str(h, &g, s, sizeof s);
    trace(h, "out  %s", s);
    if (h->qlen == h->qcap) {
        unsigned ncap = h->qcap ? h->qcap * 2 : 64;
        struct pd_seg *nq = malloc(ncap * sizeof *nq);
        for (unsigned i = 0; i < h->qlen; i++)
            nq[i] = h->q[(h->qhead + i) % h->qcap];
        free(h->q);
        h->q = nq;
        h->qcap = ncap;
        h->qhead = 0;
    }
    h->q[(h->qhead + h->qlen++) % h->qcap] = g;
}

static void capture_frame(struct pd *h, const uint8_t *f, size_t len)
{
    struct hp_eth_repr eth;
    size_t hl;
    if (hp_eth_parse(f, len, &eth, &hl) != 0) {
        complain(h, NULL, NULL, "a frame that is not Ethernet (%zu bytes)", len);
        return;
    }
    const uint8_t *p = f + hl;
    size_t n = len - hl;
    if (eth.ethertype == HP_ETHERTYPE_ARP) {
        answer_arp(h, p, n);
        return;
    }
    if (eth.ethertype == HP_ETHERTYPE_IPV4) {
        struct hp_ipv4_repr ip;
        if (hp_ipv4_parse(p, n, &ip, HP_WIRE_VERIFY_CKSUM) != 0) {
            complain(h, NULL, NULL, "a bad IPv4 header");
            return;
        }
        if (ip.proto != HP_IPPROTO_TCP) {
            h->other_frames++;
            return;
        }
        if (h->family != 4 || memcmp(ip.src, OUR4, 4) || memcmp(ip.dst, PEER4, 4))
            complain(h, NULL, NULL, "TCP over IPv4 with unexpected addresses");
        if (ip.ttl != 64)
            complain(h, NULL, NULL, "IPv4 TTL %u, the stack's default is 64", ip.ttl);
        if (ip.mf || ip.frag_off)
            complain(h, NULL, NULL, "a fragmented TCP segment (off %u, MF %d)", ip.frag_off, ip.mf);
        if (memcmp(eth.dst, PEER_MAC, 6) || memcmp(eth.src, h->mac, 6))
            complain(h, NULL, NULL, "TCP frame with unexpected MAC addresses");
        h->cur_ecn = ip.dscp_ecn & 3u;
        h->cur_df = ip.df;
        capture_tcp(h, p + ip.hdr_len, ip.payload_len, ip.src, ip.dst);
        return;
    }
    if (eth.ethertype == HP_ETHERTYPE_IPV6) {
        struct hp_ipv6_repr ip;
        if (hp_ipv6_parse(p, n, &ip) != 0) {
            complain(h, NULL, NULL, "a bad IPv6 header");
            return;
        }
        size_t l4len = HP_IPV6_HDR_LEN + ip.payload_len - ip.l4_off;
        if (ip.next_header == HP_IPPROTO_ICMPV6 && !ip.has_frag) {
            if (n > ip.l4_off && p[ip.l4_off] == HP_NDP_NEIGHBOR_SOLICIT)
                answer_ns(h, &ip, p + ip.l4_off, l4len);
            else
                h->other_frames++;
            return;
        }
        if (ip.next_header != HP_IPPROTO_TCP) {
            h->other_frames++;
            return;
        }
        if (h->family != 6 || memcmp(ip.src, OUR6, 16) || memcmp(ip.dst, PEER6, 16))
            complain(h, NULL, NULL, "TCP over IPv6 with unexpected addresses");
        if (ip.hop_limit != 64)
            complain(h, NULL, NULL, "IPv6 hop limit %u, the stack's default is 64", ip.hop_limit);
        if (ip.has_frag || ip.l4_off != HP_IPV6_HDR_LEN)
            complain(h, NULL, NULL, "a TCP segment behind extension headers or fragmented");
        if (memcmp(eth.dst, PEER_MAC, 6) || memcmp(eth.src, h->mac, 6))
            complain(h, NULL, NULL, "TCP frame with unexpected MAC addresses");
        h->cur_ecn = ip.traffic_class & 3u;
        h->cur_df = false;
        capture_tcp(h, p + ip.l4_off, l4len, ip.src, ip.dst);
        return;
    }
    h->other_frames++;
}

/* Frames at the peer's end: answered, captured, freed. Returns how many. */
static int collect(struct pd *h)
{
    struct hp_buf *b[32];
    int total = 0, n;
    static uint8_t flat[65536 + 64];
    while ((n = hp_link_rx_burst(h->end[1], b, 32)) > 0) {
        for (int i = 0; i < n; i++) {
            uint32_t len = b[i]->pkt_len;
            if (len > sizeof flat)
                len = sizeof flat;
            if (hp_buf_copy_out(b[i], 0, len, flat) == 0)
                capture_frame(h, flat, len);
            hp_buf_free(b[i]);
        }
        total += n;
    }
    return total;
}

static void drain_events(struct pd *h)
{
    struct hp_event ev[32];
    int n;
    while ((n = hp_stack_events(h->s, ev, 32)) > 0) {
        for (int i = 0; i < n; i++) {
            int k = 0;
            while (k < h->nevs && h->evs[k].user != ev[i].user)
                k++;
            if (k == h->nevs) {
                if (h->nevs == (int)(sizeof h->evs / sizeof h->evs[0]))
                    continue;
                h->evs[h->nevs].user = ev[i].user;
                h->evs[h->nevs++].ev = 0;
            }
            h->evs[k].ev |= ev[i].events;
        }
    }
}

void pd_pump(struct pd *h)
{
    for (int i = 0; i < 100000; i++) {
        int n = hp_stack_poll(h->s);
        int m = collect(h);
        if (n <= 0 && m == 0)
            break;
    }
    drain_events(h);
}

uint32_t pd_events(struct pd *h, void *user)
{
    pd_pump(h);
    for (int k = 0; k < h->nevs; k++) {
        if (h->evs[k].user == user) {
            uint32_t e = h->evs[k].ev;
            h->evs[k].ev = 0;
            return e;
        }
    }
    return 0;
}

const struct pd_seg *pd_peek(struct pd *h)
{
    pd_pump(h);
    return h->qlen ? &h->q[h->qhead] : NULL;
}

static void seg_free(struct pd_seg *g)
{
    free(g->payload);
    g->payload = NULL;
}

unsigned pd_discard(struct pd *h)
{
    pd_pump(h);
    unsigned n = h->qlen;
    while (h->qlen) {
        seg_free(&h->q[h->qhead]);
        h->qhead = (h->qhead + 1) % h->qcap;
        h->qlen--;
    }
    return n;
}

void pd__advance(struct pd *h, const char *file, int line, uint64_t ms)
{
    h->file = file;
    h->line = line;
    uint64_t target = h->now_ns + ms * 1000000u;
    trace(h, "advance %llu ms", (unsigned long long)ms);
    for (int guard = 0; guard < 1000000; guard++) {
        pd_pump(h);
        int64_t next = hp_stack_next_timer_ns(h->s);
        if (next < 0 || h->now_ns + (uint64_t)next > target)
            break;
        h->now_ns += (uint64_t)next;
        if (next == 0 && guard > 100000)
            pd__fail(h, file, line, "a timer keeps firing without the clock moving");
    }
    h->now_ns = target;
    pd_pump(h);
}

/* ---- expecting ------------------------------------------------------------------------ */

static bool opts_match(struct pd *h, const struct pd_conn *c, const struct optspec *sp,
                       const struct hp_tcp_opts *o, uint32_t prev_tsval, char *why, size_t cap)
{
    const struct hp_tcp_opts *e = &sp->o;
    if (e->has_mss != o->has_mss || (e->has_mss && !sp->mss_any && e->mss != o->mss))
        return snprintf(why, cap, "MSS option differs"), false;
    if (e->has_ws != o->has_ws || (e->has_ws && !sp->ws_any && e->ws != o->ws))
        return snprintf(why, cap, "window scale option differs"), false;
    if (e->sack_perm != o->sack_perm)
        return snprintf(why, cap, "SACK-permitted differs"), false;
    if (e->has_ts != o->has_ts)
        return snprintf(why, cap, "timestamp option %s", o->has_ts ? "present" : "missing"), false;
    if (e->has_ts) {
        if (sp->val_mode == TS_EXACT && o->ts_val != e->ts_val)
            return snprintf(why, cap, "TSval differs"), false;
        if (sp->val_mode == TS_REL && o->ts_val != prev_tsval + (uint32_t)sp->val_rel)
            return snprintf(why, cap, "TSval %u is not the previous %u %+lld", o->ts_val,
                            prev_tsval, (long long)sp->val_rel),
                   false;
        if (sp->ecr_mode == TS_EXACT && o->ts_ecr != e->ts_ecr)
            return snprintf(why, cap, "TSecr differs"), false;
        if (sp->ecr_mode == TS_LAST_PEER && o->ts_ecr != c->last_peer_tsval)
            return snprintf(why, cap, "TSecr %u is not the peer's last TSval %u", o->ts_ecr,
                            c->last_peer_tsval),
                   false;
    }
    if (!sp->sack_any) {
        if (e->n_sack != o->n_sack)
            return snprintf(why, cap, "SACK blocks differ"), false;
        /* In order: the first block says what arrived last (RFC 2018 4),
         * or the duplicate (RFC 2883 4). */
        for (int i = 0; i < e->n_sack; i++)
            if (e->sack[i][0] != o->sack[i][0] || e->sack[i][1] != o->sack[i][1])
                return snprintf(why, cap, "SACK block %d differs", i), false;
    }
    (void)h;
    return true;
}

static void num_str(int64_t v, char *out, size_t cap)
{
    if (v == PD_ANY)
        snprintf(out, cap, "*");
    else
        snprintf(out, cap, "%u", (uint32_t)v);
}

const struct pd_seg *pd__expect(struct pd *h, const char *file, int line, const char *flags,
                                int64_t seq, int64_t ack, int64_t win, int64_t len,
                                const char *opts)
{
    h->file = file;
    h->line = line;
    uint8_t optional = 0;
    uint8_t fl = parse_flags_opt(h, flags, &optional);
    char es[400], ss[16], as[16], ws[16], ls[16], fs[12];
    snprintf(fs, sizeof fs, "%s", flags);
    num_str(seq, ss, sizeof ss);
    num_str(ack, as, sizeof as);
    num_str(win, ws, sizeof ws);
    num_str(len, ls, sizeof ls);
    snprintf(es, sizeof es, "%s seq %s ack %s win %s <%s> len %s", fs, ss, as, ws,
             opts ? opts : "(any)", ls);
    pd_pump(h);
    if (!h->qlen)
        pd__fail(h, file, line, "expected a segment, the stack sent nothing\n      expected: %s",
                 es);
    struct pd_seg g = h->q[h->qhead];
    h->qhead = (h->qhead + 1) % h->qcap;
    h->qlen--;
    /* The TSval of the stack's segment before this one on the connection. */
    struct pd_conn *c = &h->conn[g.conn];
    struct optspec sp;
    char why[160] = "";
    bool ok = true;
    const uint8_t ignore = (uint8_t)(HP_TCP_F_PSH | optional);
    if ((g.flags & ~ignore) != (fl & ~ignore))
        ok = false, snprintf(why, sizeof why, "flags differ");
    else if (seq != PD_ANY && g.rseq != (uint32_t)seq)
        ok = false, snprintf(why, sizeof why, "seq differs");
    else if (ack != PD_ANY && g.rack != (uint32_t)ack)
        ok = false, snprintf(why, sizeof why, "ack differs");
    else if (win != PD_ANY && g.win != (uint32_t)win)
        ok = false, snprintf(why, sizeof why, "window differs");
    else if (len != PD_ANY && g.len != (uint32_t)len)
        ok = false, snprintf(why, sizeof why, "length differs");
    else if (opts) {
        parse_opts(h, opts, false, &sp);
        ok = opts_match(h, c, &sp, &g.opt, h->last.opt.has_ts ? h->last.opt.ts_val : 0, why,
                        sizeof why);
    }
    if (g.conn != (int)(h->c - h->conn) && ok)
        ok = false,
        snprintf(why, sizeof why, "for another connection (peer port %u, the script is on %u)",
                 g.dport, h->c->rport);
    char as2[400];
    seg_str(h, &g, as2, sizeof as2);
    trace(h, "expect ok: %s", es);
    if (!ok) {
        seg_free(&g);
        pd__fail(h, file, line, "unexpected segment: %s\n      expected: %s\n      actual:   %s",
                 why, es, as2);
    }
    seg_free(&h->last);
    h->last = g;
    return &h->last;
}

void pd__expect_none(struct pd *h, const char *file, int line)
{
    h->file = file;
    h->line = line;
    pd_pump(h);
    if (h->qlen) {
        char s[400];
        seg_str(h, &h->q[h->qhead], s, sizeof s);
        pd__fail(h, file, line,
                 "expected no segment, the stack sent (%u in all):\n      actual:   %s", h->qlen,
                 s);
    }
}

/* ---- sockets -------------------------------------------------------------------------- */

void pd_configure(struct pd *h, const struct hp_tcp_config *cfg)
{
    int rc = hp_tcp_configure(h->s, cfg);
    if (rc != 0)
        pd__fail(h, __FILE__, __LINE__, "hp_tcp_configure: %d", rc);
}

struct hp_tcp_sock *pd_listen(struct pd *h, uint16_t port, int backlog)
{
    struct hp_tcp_sock *l = hp_tcp_open(h->s, h->family, h);
    if (!l)
        pd__fail(h, __FILE__, __LINE__, "hp_tcp_open: errno %d", errno);
    struct hp_sockaddr any;
    memset(&any, 0, sizeof any);
    any.family = (uint8_t)h->family;
    any.port = port;
    int rc = hp_tcp_bind(l, &any);
    if (rc == 0)
        rc = hp_tcp_listen(l, backlog);
    if (rc != 0)
        pd__fail(h, __FILE__, __LINE__, "bind/listen on port %u: %d", port, rc);
    h->c->lport = port;
    return l;
}

struct hp_tcp_sock *pd_connect(struct pd *h, void *user)
{
    struct hp_tcp_sock *t = hp_tcp_open(h->s, h->family, user ? user : (void *)h->c);
    if (!t)
        pd__fail(h, __FILE__, __LINE__, "hp_tcp_open: errno %d", errno);
    struct hp_sockaddr to = pd_peer_addr(h, h->c->rport);
    int rc = hp_tcp_connect(t, &to);
    if (rc != -EINPROGRESS)
        pd__fail(h, __FILE__, __LINE__, "hp_tcp_connect returned %d, not -EINPROGRESS", rc);
    struct hp_sockaddr me;
    hp_tcp_local(t, &me);
    h->c->lport = me.port;
    return t;
}

struct hp_tcp_sock *pd__passive_open(struct pd *h, const char *file, int line,
                                     struct hp_tcp_sock *listener, const char *opts)
{
    pd__in(h, file, line, "S", 0, 0, 65535, 0, opts ? opts : PD_SYN_OPTS, 0);
    pd__expect(h, file, line, "S.", 0, 1, PD_ANY, 0, NULL);
    pd__in(h, file, line, ".", 1, 1, pd_ws_ok(h->c) ? 1000 : 65535, 0, NULL, 0);
    struct hp_tcp_sock *t = hp_tcp_accept(listener, h->c, NULL);
    if (!t)
        pd__fail(h, file, line, "hp_tcp_accept: errno %d after the handshake", errno);
    if (hp_tcp_state(t) != HP_TCP_ESTABLISHED)
        pd__fail(h, file, line, "accepted in state %s", hp_tcp_state_name(hp_tcp_state(t)));
    return t;
}

struct hp_tcp_sock *pd__active_open(struct pd *h, const char *file, int line, const char *opts)
{
    h->file = file;
    h->line = line;
    struct hp_tcp_sock *t = pd_connect(h, NULL);
    pd__expect(h, file, line, "S", 0, PD_ANY, PD_ANY, 0, NULL);
    pd__in(h, file, line, "S.", 0, 1, 65535, 0, opts ? opts : "mss 1460,sackok,ts * *,nop,ws 7", 0);
    pd__expect(h, file, line, ".", 1, 1, PD_ANY, 0, NULL);
    if (hp_tcp_state(t) != HP_TCP_ESTABLISHED)
        pd__fail(h, file, line, "state %s after the handshake", hp_tcp_state_name(hp_tcp_state(t)));
    return t;
}

long pd_send(struct pd *h, struct hp_tcp_sock *t, uint32_t len)
{
    uint8_t *buf = malloc(len ? len : 1);
    for (uint32_t i = 0; i < len; i++)
        buf[i] = pd_pattern(0, h->c->tx_off + i);
    long r = hp_tcp_send(t, buf, len);
    free(buf);
    if (r > 0)
        h->c->tx_off += (uint64_t)r;
    return r;
}

long pd_sendv(struct pd *h, struct hp_tcp_sock *t, const uint32_t *lens, int n)
{
    struct iovec v[8] = {{0}};
    uint8_t *buf[8] = {0};
    uint64_t off = h->c->tx_off;
    if (n < 0 || n > 8)
        return -EINVAL;
    for (int k = 0; k < n; k++) {
        buf[k] = malloc(lens[k] ? lens[k] : 1);
        if (!buf[k])
            abort();
        for (uint32_t i = 0; i < lens[k]; i++)
            buf[k][i] = pd_pattern(0, off + i);
        off += lens[k];
        v[k] = (struct iovec){.iov_base = buf[k], .iov_len = lens[k]};
    }
    long r = hp_tcp_sendv(t, v, n);
    for (int k = 0; k < n; k++)
        free(buf[k]);
    if (r > 0)
        h->c->tx_off += (uint64_t)r;
    return r;
}

long pd_read(struct pd *h, struct hp_tcp_sock *t, uint32_t len)
{
    uint8_t *buf = malloc(len ? len : 1);
    long r = hp_tcp_recv(t, buf, len);
    for (long i = 0; i < r; i++) {
        if (buf[i] != pd_pattern(1, h->c->rx_off + (uint64_t)i)) {
            uint8_t got = buf[i];
            free(buf);
            pd__fail(h, h->file, h->line,
                     "received byte at stream offset %llu is 0x%02x, the peer sent 0x%02x",
                     (unsigned long long)(h->c->rx_off + (uint64_t)i), got,
                     pd_pattern(1, h->c->rx_off + (uint64_t)i));
        }
    }
    free(buf);
    if (r > 0)
        h->c->rx_off += (uint64_t)r;
    return r;
}

struct hp_tcp_info pd_info(struct pd *h, const struct hp_tcp_sock *t)
{
    struct hp_tcp_info i;
    memset(&i, 0, sizeof i);
    int rc = hp_tcp_get_info(t, &i);
    if (rc != 0)
        hp_test_fail(h->file ? h->file : __FILE__, h->line, "hp_tcp_get_info: %d", rc);
    return i;
}

/* ---- setup ------------------------------------------------------------------------------ */

int pd_open(struct pd *h, int family)
{
    memset(h, 0, sizeof *h);
    h->family = family;
    h->our_ip = family == 4 ? OUR4 : OUR6;
    h->peer_ip = family == 4 ? PEER4 : PEER6;
    struct hp_link_config lc = {.ring_size = 1024};
    if (hp_link_mem_pair(&lc, h->end) != 0)
        return -1;
    h->pool = hp_link_pool(h->end[1]);
    struct hp_stack_config sc = {.name = "pd", .flags = HP_STACK_F_NO_DAD};
    h->s = hp_stack_create(&sc);
    if (!h->s)
        return -1;
    h->t0_ns = h->now_ns = PD_T0_NS;
    hp__stack_set_clock(h->s, pd_clock, h);
    int ifx = hp_stack_add_iface(h->s, h->end[0]);
    if (ifx < 0 || hp_stack_add_addr(h->s, ifx, 4, OUR4, 24) != 0 ||
        hp_stack_add_addr(h->s, ifx, 6, OUR6, 64) != 0)
        return -1;
    hp_link_mac(h->end[0], h->mac);
    h->mss = (uint16_t)(hp_link_mtu(h->end[0]) - (family == 4 ? 40 : 60));
    pd_use(h, 40000, 1000000);
    pd_pump(h); /* announcements */
    h->other_frames = 0;
    return 0;
}

void pd_close(struct pd *h)
{
    while (h->qlen) {
        seg_free(&h->q[h->qhead]);
        h->qhead = (h->qhead + 1) % h->qcap;
        h->qlen--;
    }
    free(h->q);
    h->q = NULL;
    seg_free(&h->last);
    hp_stack_destroy(h->s);
    h->s = NULL;
    struct hp_buf *b[32];
    int n;
    while (h->end[1] && (n = hp_link_rx_burst(h->end[1], b, 32)) > 0)
        hp_buf_free_bulk(b, (unsigned)n);
    hp_link_close(h->end[0]);
    hp_link_close(h->end[1]);
    h->end[0] = h->end[1] = NULL;
}

/* One run; setjmp lives here, away from the caller's loop variables. */
static void run_one(pd_script_fn fn, const char *name, int family)
{
    struct pd *volatile h = calloc(1, sizeof *h);
    if (!h || pd_open(h, family) != 0) {
        hp_test_fail(__FILE__, __LINE__, "%s: cannot set up the stack for IPv%d", name, family);
        if (h && h->s)
            pd_close(h);
        free(h);
        return;
    }
    h->script = name;
    jmp_buf jb;
    h->jb = &jb;
    if (setjmp(jb) == 0)
        fn(h);
    h->jb = NULL;
    pd_close(h);
    long n = hp_pools_in_use();
    if (n != 0)
        hp_test_fail(__FILE__, __LINE__,
                     "[IPv%d %s] %ld buffers still in use after the stack and links are gone",
                     family, name, n);
    free(h);
}

void pd_run(pd_script_fn fn, const char *name, int families)
{
    if (families & PD_V4)
        run_one(fn, name, 4);
    if (families & PD_V6)
        run_one(fn, name, 6);
}

/* Every test of this binary ends with no buffer in use in any pool. */
static int pools_teardown(void)
{
    long n = hp_pools_in_use();
    if (n)
        fprintf(stderr, "    %ld buffers still in use\n", n);
    return n != 0;
}

__attribute__((constructor)) static void pd_register_teardown(void)
{
    hp_test_add_teardown("no buffer in use in any pool", pools_teardown);
}

/* ---- ICMP errors ------------------------------------------------------------------------- */

void pd_icmp_too_big(struct pd *h, uint32_t mtu, int64_t seq, uint32_t len)
{
    struct pd_conn *c = h->c;
    uint8_t quote[HP_IPV6_HDR_LEN + 20];
    size_t iph = h->family == 4 ? HP_IPV4_HDR_LEN : HP_IPV6_HDR_LEN;
    /* The datagram we (the stack) sent: its IP header and TCP header. */
    if (h->family == 4) {
        struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_TCP,
                                  .ttl = 63,
                                  .df = true,
                                  .payload_len = (uint16_t)(20 + len)};
        memcpy(ip.src, OUR4, 4);
        memcpy(ip.dst, PEER4, 4);
        hp_ipv4_emit(&ip, quote, HP_IPV4_HDR_LEN);
    } else {
        struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_TCP,
                                  .hop_limit = 63,
                                  .payload_len = (uint16_t)(20 + len)};
        memcpy(ip.src, OUR6, 16);
        memcpy(ip.dst, PEER6, 16);
        hp_ipv6_emit(&ip, quote, HP_IPV6_HDR_LEN);
    }
    uint8_t *t = quote + iph;
    memset(t, 0, 20);
    t[0] = (uint8_t)(c->lport >> 8), t[1] = (uint8_t)c->lport;
    t[2] = (uint8_t)(c->rport >> 8), t[3] = (uint8_t)c->rport;
    put_be32(t + 4, (uint32_t)seq + (c->isn_known ? c->our_isn : 0));
    t[12] = 0x50;
    t[13] = HP_TCP_F_ACK;
    uint8_t pkt[HP_IPV6_HDR_LEN + 8 + sizeof quote];
    size_t ml;
    if (h->family == 4) {
        struct hp_icmp_repr m = {.type = HP_ICMP_DEST_UNREACH,
                                 .code = HP_ICMP_UNREACH_FRAG_NEEDED,
                                 .next_hop_mtu = (uint16_t)mtu,
                                 .data = quote,
                                 .data_len = iph + 20};
        int n = hp_icmp_emit(&m, pkt + HP_IPV4_HDR_LEN, sizeof pkt - HP_IPV4_HDR_LEN);
        ml = n > 0 ? (size_t)n : 0;
        struct hp_ipv4_repr ip = {.proto = HP_IPPROTO_ICMP, .ttl = 64, .payload_len = (uint16_t)ml};
        memcpy(ip.src, PEER4, 4);
        memcpy(ip.dst, OUR4, 4);
        hp_ipv4_emit(&ip, pkt, HP_IPV4_HDR_LEN);
        send_frame(h, h->mac, HP_ETHERTYPE_IPV4, pkt, HP_IPV4_HDR_LEN + ml);
    } else {
        struct hp_icmp6_repr m = {.type = HP_ICMP6_PACKET_TOO_BIG,
                                  .mtu = mtu,
                                  .data = quote,
                                  .data_len = iph + 20};
        struct hp_l4_addrs a = {.family = 6, .src = PEER6, .dst = OUR6};
        int n = hp_icmp6_emit(&m, &a, pkt + HP_IPV6_HDR_LEN, sizeof pkt - HP_IPV6_HDR_LEN);
        ml = n > 0 ? (size_t)n : 0;
        struct hp_ipv6_repr ip = {.next_header = HP_IPPROTO_ICMPV6,
                                  .hop_limit = 64,
                                  .payload_len = (uint16_t)ml};
        memcpy(ip.src, PEER6, 16);
        memcpy(ip.dst, OUR6, 16);
        hp_ipv6_emit(&ip, pkt, HP_IPV6_HDR_LEN);
        send_frame(h, h->mac, HP_ETHERTYPE_IPV6, pkt, HP_IPV6_HDR_LEN + ml);
    }
    trace(h, "in   ICMP too big, MTU %u, quoting seq %lld len %u", mtu, (long long)seq, len);
    pd_pump(h);
}
