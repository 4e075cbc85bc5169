/* SPDX-License-Identifier: BSD-3-Clause */
/* Path MTU for TCP: ICMP "too big" validated against the connection (RFC 1191, RFC 8201, RFC 5927), black hole detection and probing when ICMP is filtered (RFC 4821). */
#include <string.h>

#include <hotpath/wire/icmp.h>

#include "tcp_in.h"

#define PMTU_MIN4   552u  /* below this a "too big" is not believed (Linux's min_pmtu) */
#define PMTU_MIN6   1280u /* RFC 8200 5: every IPv6 link */
#define BASE4       1024u /* RFC 4821 7.2: the MTU to fall back to (base_mss's 1024 + headers) */
#define BASE6       1280u
#define SEARCH_DONE 16u /* RFC 4821 7.3: stop when the range is this small */
#define TS_LEN      12u

static uint32_t hdrs(const struct hp_tcp_sock *c)
{
    return c->key.family == 6 ? 60u : 40u;
}

void hp__tcp_pmtu_apply(struct hp_tcp_sock *c)
{
    uint32_t m = c->pmtu > hdrs(c) ? c->pmtu - hdrs(c) : 0;
    uint32_t peer = c->peer_mss ? c->peer_mss : c->smss;
    if (peer < m)
        m = peer;
    if (c->rmss && c->rmss < m)
        m = c->rmss;
    if (m < HP__TCP_MIN_SMSS)
        m = HP__TCP_MIN_SMSS;
    c->smss = (uint16_t)m;
    c->mss_eff = (uint16_t)(m - ((c->flags & HP__TCPF_TS_OK) ? TS_LEN : 0));
}

/* The segments in flight larger than the new MSS were dropped: they go
 * again, smaller; no congestion response (RFC 1191 6.5, RFC 8201 5.4). */
static void resend_smaller(struct hp_tcp_sock *c)
{
    if (c->snd_una == c->snd_max)
        return;
    if (!(c->flags & HP__TCPF_SACK_OK) || !hp__tcp_sb_mark_larger(c, c->mss_eff)) {
        c->snd_nxt = c->snd_una; /* go-back-N */
        c->flags &= ~HP__TCPF_RTT_TIMING;
    }
    (void)hp__tcp_output(c);
}

/* RFC 1191 5: an old router reports no MTU: the next plateau below the
 * datagram's length. */
static uint32_t plateau(uint32_t len)
{
    static const uint16_t p[] = {32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68};
    for (unsigned i = 0; i < sizeof p / sizeof p[0]; i++)
        if (p[i] < len)
            return p[i];
    return 68;
}

void hp__tcp_icmp_too_big(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst,
                          const uint8_t *tcp, size_t tlen, uint32_t mtu, uint32_t tot_len)
{
    struct hp__tcp_state *ts = s->sock ? s->sock->tcp : NULL;
    if (!ts || tlen < 8 || ts->cfg.no_pmtud)
        return;
    struct hp__tcp_key k;
    hp__tcp_key_init(&k, family, src, hp_get_be16(tcp), dst, hp_get_be16(tcp + 2));
    struct hp__tcp_key *e = hp__tcp_conn_lookup(ts->table, &k);
    struct hp_tcp_sock *c = e ? HP__TCP_ENTRY(e, struct hp_tcp_sock, key) : NULL;
    uint32_t seq = hp_get_be32(tcp + 4);
    /* RFC 5927 4.1: only about data in flight: SND.UNA <= seq < SND.MAX
     * (a blind attacker must guess a sequence number in the window). */
    if (!c || !hp__tcp_synchronized(c) || c->state == HP_TCP_TIME_WAIT ||
        !hp__seq_ge(seq, c->snd_una) || !hp__seq_lt(seq, c->snd_max)) {
        hp__ctr(s, HP_CTR_TCP_PMTU_ICMP_BAD);
        return;
    }
    if (family == 4 && mtu == 0)
        mtu = plateau(tot_len);
    uint32_t min = family == 6 ? PMTU_MIN6 : PMTU_MIN4;
    if (mtu < min)
        mtu = min;
    if (mtu >= c->pmtu)
        return; /* not smaller than what we use: nothing to learn */
    c->pmtu = (uint16_t)mtu;
    if (c->x) { /* without one, no search was on */
        struct hp__tcp_plpmtud *p = &c->x->plp;
        if (p->high > mtu + 1)
            p->high = (uint16_t)(mtu + 1);
        if (p->low > mtu)
            p->low = (uint16_t)mtu;
    }
    hp__ctr(s, HP_CTR_TCP_PMTU_UPDATES);
    hp__tcp_pmtu_apply(c);
    resend_smaller(c);
}

/* ---- RFC 4821: black holes and probing ---------------------------------------------------- */

static uint16_t base(const struct hp_tcp_sock *c)
{
    return c->key.family == 6 ? BASE6 : BASE4;
}

/* A probe was out: the connection has its extension. */
static void probe_done(struct hp_tcp_sock *c, bool ok)
{
    struct hp__tcp_plpmtud *p = &c->x->plp;
    p->probe_out = false;
    if (ok) {
        hp__ctr(c->s, HP_CTR_TCP_PMTU_PROBE_OK);
        p->low = p->probe;
        c->pmtu = p->probe;
        hp__tcp_pmtu_apply(c);
    } else {
        hp__ctr(c->s, HP_CTR_TCP_PMTU_PROBE_FAIL);
        p->high = p->probe;
    }
}

void hp__tcp_pmtu_on_rto(struct hp_tcp_sock *c)
{
    const struct hp_tcp_config *cfg = &hp__tcp(c->s)->cfg;
    if (cfg->no_plpmtud || cfg->no_pmtud)
        return;
    if (c->x && c->x->plp.probe_out) {
        probe_done(c, false);
        return;
    }
    /* Only full-sized segments tell: a short one fits any MTU we would
     * fall back to. */
    uint32_t queued = hp__tcp_sndq_seq(c) + c->sndq.bytes - c->snd_una;
    if (c->rtx_count < 2 || c->pmtu <= base(c) || queued < c->mss_eff)
        return;
    /* Two timeouts in a row, and no ICMP: full-sized segments may vanish
     * in a black hole. Fall back to the base and search upwards. */
    hp__ctr(c->s, HP_CTR_TCP_PMTU_BLACKHOLES);
    struct hp__tcp_ext *x = hp__tcp_ext_get(c); /* the search's state; without it, no search */
    if (x) {
        x->plp.high = c->pmtu;
        x->plp.low = base(c);
    }
    c->pmtu = base(c);
    hp__tcp_pmtu_apply(c);
    if (c->flags & HP__TCPF_SACK_OK)
        (void)hp__tcp_sb_mark_larger(c, c->mss_eff);
}

void hp__tcp_pmtu_probe_lost(struct hp_tcp_sock *c)
{
    if (c->x && c->x->plp.probe_out)
        probe_done(c, false);
}

void hp__tcp_pmtu_on_ack(struct hp_tcp_sock *c)
{
    if (!c->x)
        return; /* no search without the extension */
    struct hp__tcp_plpmtud *p = &c->x->plp;
    if (p->probe_out) {
        if (hp__seq_ge(c->snd_una, p->probe_end))
            probe_done(c, true);
        return;
    }
    if (p->high <= p->low + SEARCH_DONE || (c->flags & HP__TCPF_SB_LOSS) ||
        c->state != HP_TCP_ESTABLISHED)
        return;
    /* RFC 4821 7.5: a probe of the middle of the range, as new data, when
     * enough waits and the windows take it. */
    uint16_t size = (uint16_t)((p->low + p->high) / 2);
    uint32_t len = size - hdrs(c) - ((c->flags & HP__TCPF_TS_OK) ? TS_LEN : 0);
    uint32_t unsent = hp__tcp_sndq_seq(c) + c->sndq.bytes - c->snd_nxt;
    uint32_t flight = c->snd_max - c->snd_una;
    if (c->snd_nxt != c->snd_max || unsent < len || flight + len > c->cc.cwnd ||
        flight + len > c->snd_wnd)
        return;
    uint32_t seq = c->snd_nxt;
    p->probe = size;
    if (hp__tcp_send_probe(c, len) != (int)len)
        return;
    p->probe_out = true;
    p->probe_end = seq + len;
    hp__ctr(c->s, HP_CTR_TCP_PMTU_PROBES);
    c->x->st.pmtu_probes++;
}
