/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP connection lifecycle: the stack's TCP state and configuration, allocating, attaching and freeing connection blocks, and the transitions every TCP module calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../base/debug.h"
#include "tcp_cookie.h"
#include "tcp_internal.h"
#include "tcp_isn.h"

/* Bounds of the configuration and of the matching socket options. */
#define BUF_MIN        2048u
#define BUF_MAX        (1u << 30) /* RFC 7323 2.3: the largest window is 2^30 */
#define KEEPIDLE_MAX   32767u     /* Linux's bounds for the keepalive knobs */
#define KEEPINTVL_MAX  32767u
#define KEEPCNT_MAX    127u
#define MSS_MIN        88u
#define MSS_MAX        65495u   /* 65535 - 40 */
#define RTO_MAX_MS_MAX 4294967u /* the RTO is kept in us in 32 bits */
#define WSCALE_MAX     14u      /* RFC 7323 2.3 */

/* ---- configuration ----------------------------------------------------------- */

/* Zeroed fields get their defaults (include/hotpath/tcp.h, docs/knobs.md). */
static void fill_defaults(struct hp_tcp_config *c)
{
#define DEF(field, v)                                                                              \
    do {                                                                                           \
        if (!c->field)                                                                             \
            c->field = (v);                                                                        \
    } while (0)
    DEF(max_conns, 65536u);
    DEF(sndbuf, 262144u);
    DEF(rcvbuf, 262144u);
    DEF(ooo_max_segs, 256u);
    DEF(delack_ms, 40u);
    DEF(delack_segs, 2u);
    DEF(rto_min_ms, HP__TCP_RTO_MIN_US / 1000u);
    DEF(rto_max_ms, HP__TCP_RTO_MAX_US / 1000u);
    /* A larger minimum raises the default initial RTO with it, so that
     * setting rto_min_ms alone is a valid configuration. */
    DEF(rto_initial_ms, c->rto_min_ms > HP__TCP_RTO_INITIAL_US / 1000u
                            ? c->rto_min_ms
                            : HP__TCP_RTO_INITIAL_US / 1000u);
    DEF(syn_retries, 7u); /* gives up after 183 s: RFC 9293 3.8.3 MUST-23 asks >= 3 min for a SYN */
    DEF(synack_retries, 5u); /* Linux's: 1 + 2 + 4 + 8 + 16 + 32 = 63 s */
    DEF(data_retries, 15u);
    DEF(time_wait_ms, 60000u);
    DEF(fin_wait2_ms, 60000u);
    DEF(keepalive_idle_s, 7200u);
    DEF(keepalive_intvl_s, 75u);
    DEF(keepalive_probes, 9u);
    DEF(challenge_ack_limit, 1000u);
    DEF(challenge_ack_conn_ms, 500u);
    DEF(syn_backlog_max, 4096u);
    DEF(early_demux_conns, 16384u);
    DEF(cc, HP_TCP_CC_CUBIC);
    DEF(ecn, HP_TCP_ECN_PASSIVE);
#undef DEF
}

static int check_config(const struct hp_tcp_config *c)
{
    if (c->max_conns > (1u << 30))
        return -EINVAL; /* the table's limit */
    if (c->sndbuf < BUF_MIN || c->sndbuf > BUF_MAX || c->rcvbuf < BUF_MIN || c->rcvbuf > BUF_MAX)
        return -EINVAL;
    if (c->ooo_max_segs > (1u << 20) || c->delack_segs > 65535u)
        return -EINVAL;
    if (c->delack_ms >= 500) /* RFC 9293 3.8.6.3: MUST be less than 0.5 s */
        return -EINVAL;
    /* RFC 6298 2.5: the maximum may not be below 60 s (hp__tcp_rtt_init
     * enforces it); min <= initial <= max. */
    if (c->rto_min_ms > c->rto_initial_ms || c->rto_initial_ms > c->rto_max_ms ||
        c->rto_max_ms < HP__TCP_RTO_MAX_US / 1000u || c->rto_max_ms > RTO_MAX_MS_MAX)
        return -EINVAL;
    /* c->rtx_count is 8 bits */
    if (c->syn_retries > 255 || c->synack_retries > 255 || c->data_retries > 255)
        return -EINVAL;
    if (c->keepalive_idle_s > KEEPIDLE_MAX || c->keepalive_intvl_s > KEEPINTVL_MAX ||
        c->keepalive_probes > KEEPCNT_MAX)
        return -EINVAL;
    if (c->syn_backlog_max > (1u << 20))
        return -EINVAL;
    if (c->mss && (c->mss < MSS_MIN || c->mss > MSS_MAX))
        return -EINVAL;
    if (c->cc > HP_TCP_CC_CUBIC || c->ecn > HP_TCP_ECN_ON)
        return -EINVAL;
    return 0;
}

/* The RTO bounds every connection's estimator uses (tcp_rtt.h). */
static void rtt_cfg_set(struct hp__tcp_state *st)
{
    st->rtt_cfg = (struct hp__tcp_rtt_cfg){
        .min_rto_us = st->cfg.rto_min_ms * 1000u,
        .max_rto_us = st->cfg.rto_max_ms * 1000u,
        .initial_rto_us = st->cfg.rto_initial_ms * 1000u,
        .granularity_us = HP__TCP_RTO_G_US,
    };
}

HP_API int hp_tcp_configure(struct hp_stack *s, const struct hp_tcp_config *cfg)
{
    if (!s || !s->sock || !s->sock->tcp || !cfg)
        return -EINVAL;
    struct hp__tcp_state *st = hp__tcp(s);
    struct hp_tcp_config c = *cfg;
    fill_defaults(&c);
    int rc = check_config(&c);
    if (rc < 0)
        return rc;
    if (st->nconns > 0)
        return -EBUSY;
    if (c.max_conns != st->cfg.max_conns) {
        /* No socket exists, so the maps are empty: size them anew. */
        struct hp__tcp_table *t = hp__tcp_table_create(c.max_conns);
        if (!t)
            return errno ? -errno : -ENOMEM;
        hp__tcp_tw_move(s, t); /* TIME_WAIT records go along */
        hp__tcp_table_destroy(st->table);
        st->table = t;
    }
    st->cfg = c;
    rtt_cfg_set(st);
    st->chack_sec = UINT64_MAX; /* a new budget at the next challenge ACK */
    return 0;
}

HP_API void hp_tcp_get_config(const struct hp_stack *s, struct hp_tcp_config *out)
{
    if (!out)
        return;
    if (!s || !s->sock || !s->sock->tcp) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = s->sock->tcp->cfg;
}

/* ---- the stack's TCP state ----------------------------------------------------- */

int hp__tcp_init(struct hp_stack *s)
{
    struct hp__tcp_state *st = calloc(1, sizeof *st);
    if (!st)
        return -ENOMEM;
    fill_defaults(&st->cfg);
    rtt_cfg_set(st);
    hp__tcp_blocks_init(&st->blocks, sizeof(struct hp_tcp_sock));
    hp__tcp_tw_init(st);
    st->table = hp__tcp_table_create(st->cfg.max_conns);
    if (!st->table) {
        int err = errno ? -errno : -ENOMEM;
        free(st);
        return err;
    }
    int rc = hp__tcp_secret_init(&st->secret);
    if (rc < 0) {
        hp__tcp_table_destroy(st->table);
        free(st);
        return rc;
    }
    st->chack_sec = UINT64_MAX; /* RFC 5961 7: a budget drawn at the first challenge ACK */
    s->sock->tcp = st;
    return 0;
}

void hp__tcp_fini(struct hp_stack *s)
{
    if (!s->sock || !s->sock->tcp)
        return;
    struct hp__tcp_state *st = hp__tcp(s);
    /* Every connection goes: none needs taking off the delayed-ACK list
     * one by one. */
    st->ndack_pend = 0;
    /* A listener frees its children with it, wherever they are in the
     * walk: the walk skips blocks freed behind its back. */
    for (struct hp_tcp_sock *c = hp__tcp_block_next(&st->blocks, NULL); c;
         c = hp__tcp_block_next(&st->blocks, c))
        hp__tcp_conn_free(c);
    hp__tcp_tw_fini(s);
    hp__tcp_table_destroy(st->table);
    free(st->dack_pend);
    hp__tcp_blocks_fini(&st->blocks);
    free(st);
    s->sock->tcp = NULL;
}

/* ---- connection blocks ------------------------------------------------------------ */

struct hp_tcp_sock *hp__tcp_conn_new(struct hp_stack *s, int family)
{
    struct hp__tcp_state *st = hp__tcp(s);
    if (st->nconns >= st->cfg.max_conns) {
        hp__ctr(s, HP_CTR_TCP_CONN_LIMIT_DROPS);
        errno = ENFILE;
        return NULL;
    }
    /* 64-byte aligned: the block's fields are placed by cache line. */
    struct hp_tcp_sock *c = hp__tcp_block_alloc(&st->blocks);
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    memset(c, 0, st->blocks.size);
    const struct hp_tcp_config *cfg = &st->cfg;
    c->s = s;
    c->key.family = (uint8_t)family;
    c->state = HP_TCP_CLOSED;
    c->sndbuf = cfg->sndbuf;
    c->rcvbuf = cfg->rcvbuf;
    /* check_config bounds these to Linux's 32767 s and 127 probes. */
    c->ka_idle_s = (uint16_t)cfg->keepalive_idle_s;
    c->ka_intvl_s = (uint16_t)cfg->keepalive_intvl_s;
    c->ka_cnt = (uint8_t)cfg->keepalive_probes;
    c->cc_algo = (uint8_t)cfg->cc;
    if (hp__tcp_rtt_init(&c->rtt, &st->rtt_cfg) < 0)
        hp__tcp_rtt_init(&c->rtt, NULL); /* not reached: hp_tcp_configure checked the bounds */
    hp__tcp_sndq_init(&c->sndq);
    memset(&c->rcvq, 0, sizeof c->rcvq);
    hp__timer_init(&c->t_rtx, HP__TK_TCP_RTX);
    hp__timer_init(&c->t_dack, HP__TK_TCP_DACK);
    hp__timer_init(&c->t_misc, HP__TK_TCP_MISC);
    st->nconns++;
    return c;
}

struct hp__tcp_ext *hp__tcp_ext_get(struct hp_tcp_sock *c)
{
    if (c->x)
        return c->x;
    struct hp__tcp_ext *x = calloc(1, sizeof *x);
    if (!x) {
        hp__ctr(c->s, HP_CTR_TCP_EXT_NOMEM);
        return NULL;
    }
    hp__tcp_sb_init(&x->sb);
    /* As hp__tcp_cc_set_algo left it at the handshake: nothing measured
     * yet (tcp_cubic.c). */
    hp__tcp_cubic_init_ext(&x->cubic);
    x->plp.low = x->plp.high = c->pmtu; /* no search until a black hole */
    c->x = x;
    hp__tcp(c->s)->nexts++;
    return x;
}

/* Out of the connection map or the listen map, whichever holds the key. */
static void unhash(struct hp_tcp_sock *c)
{
    struct hp__tcp_state *st = hp__tcp(c->s);
    if (c->flags & HP__TCPF_IN_TABLE)
        hp__tcp_conn_remove(st->table, &c->key);
    if (c->flags & HP__TCPF_LISTEN_KEY)
        hp__tcp_listen_remove(st->table, &c->key);
    c->flags &= ~(HP__TCPF_IN_TABLE | HP__TCPF_LISTEN_KEY);
}

static bool on_syn_queue(const struct hp_tcp_sock *c)
{
    return c->parent && !(c->flags & HP__TCPF_ACCQ) && (c->qprev || c->parent->lq->syn_head == c);
}

static void syn_unlink(struct hp_tcp_sock *c)
{
    struct hp__tcp_listenq *lq = c->parent->lq;
    if (c->qprev)
        c->qprev->qnext = c->qnext;
    else
        lq->syn_head = c->qnext;
    if (c->qnext)
        c->qnext->qprev = c->qprev;
    else
        lq->syn_tail = c->qprev;
    c->qnext = c->qprev = NULL;
    lq->nsyn--;
}

static void acc_unlink(struct hp_tcp_sock *c)
{
    struct hp__tcp_listenq *lq = c->parent->lq;
    if (c->qprev)
        c->qprev->qnext = c->qnext;
    else
        lq->acc_head = c->qnext;
    if (c->qnext)
        c->qnext->qprev = c->qprev;
    else
        lq->acc_tail = c->qprev;
    c->qnext = c->qprev = NULL;
    c->flags &= ~HP__TCPF_ACCQ;
    lq->nacc--;
}

/* Off the parent's queue, whichever it is on (a block being set up by
 * tcp_input may have a parent and be on neither yet). */
static void queue_unlink(struct hp_tcp_sock *c)
{
    if (!c->parent)
        return;
    if (c->flags & HP__TCPF_ACCQ)
        acc_unlink(c);
    else if (on_syn_queue(c))
        syn_unlink(c);
    c->parent = NULL;
}

/* Cancel the timers and free every buffer the connection holds but the
 * receive queue (which hp__tcp_closed keeps for the user to read). */
static void quiesce(struct hp_tcp_sock *c)
{
    hp__tcp_timers_cancel(c);
    c->flags &= ~(HP__TCPF_PERSIST | HP__TCPF_DACK | HP__TCPF_ACK_NOW);
    hp__tcp_sb_free(c);
    hp__tcp_sndq_purge(&c->sndq);
    hp__tcp_ooo_purge(c);
}

void hp__tcp_conn_free(struct hp_tcp_sock *c)
{
    if (!c)
        return;
    struct hp__tcp_state *st = hp__tcp(c->s);
    if (c->lq) {
        /* Each child unlinks itself from the list it is on. */
        while (c->lq->syn_head)
            hp__tcp_conn_free(c->lq->syn_head);
        while (c->lq->acc_head)
            hp__tcp_conn_free(c->lq->acc_head);
        free(c->lq);
        c->lq = NULL;
    }
    unhash(c);
    queue_unlink(c);
    st->nconns--;
    hp__sock_ev_remove(c->s->sock, &c->ev);
    quiesce(c);
    hp__tcp_rcvq_purge(&c->rcvq);
    if (c->x) {
        free(c->x);
        c->x = NULL;
        st->nexts--;
    }
    hp__tcp_block_free(&st->blocks, c);
}

/* ---- memory ---------------------------------------------------------------------------- */

uint64_t hp__tcp_mem_held(struct hp_stack *s, uint64_t *conns)
{
    struct hp__tcp_state *st = s && s->sock ? s->sock->tcp : NULL;
    if (!st)
        return 0;
    struct hp__tcp_table_stats tst;
    hp__tcp_table_stats(st->table, &tst);
    *conns += hp__tcp_conn_count(st->table);
    return (uint64_t)st->blocks.size * st->blocks.nlive + hp__tcp_tw_mem(st) +
           (uint64_t)st->nexts * sizeof(struct hp__tcp_ext) +
           (uint64_t)tst.buckets * HP_CACHELINE_SIZE +
           (uint64_t)s->heap_cap * sizeof(struct hp__heap_ent) +
           (uint64_t)st->dack_pend_cap * sizeof(struct hp_tcp_sock *);
}

/* ---- transitions ---------------------------------------------------------------------- */

void hp__tcp_set_state(struct hp_tcp_sock *c, enum hp_tcp_state st)
{
    enum hp_tcp_state old = (enum hp_tcp_state)c->state;
    if (old == st)
        return;
    /* RFC 4022 (the TCP MIB): tcpEstabResets counts direct transitions to
     * CLOSED from ESTABLISHED or CLOSE-WAIT, tcpAttemptFails those from
     * SYN-SENT or SYN-RECEIVED; counting them here catches every path
     * (reset, timeout, abort, close with unread data). */
    if (st == HP_TCP_CLOSED) {
        if (old == HP_TCP_ESTABLISHED || old == HP_TCP_CLOSE_WAIT)
            hp__ctr(c->s, HP_CTR_TCP_ESTAB_RESETS);
        else if (old == HP_TCP_SYN_SENT || old == HP_TCP_SYN_RECEIVED)
            hp__ctr(c->s, HP_CTR_TCP_ATTEMPT_FAILS);
    }
    c->state = (uint8_t)st;
    /* The per-connection state trace (issue 25): one line per change at
     * HP_LOG_DEBUG, read with hp_set_log_level / hp_set_log_fn. */
    if (hp__log_enabled(HP_LOG_DEBUG))
        hp__log(HP_LOG_DEBUG, "tcp", "%p port %u > %u: %s -> %s", (void *)c, c->key.lport,
                c->key.rport, hp_tcp_state_name(old), hp_tcp_state_name(st));
}

/* ---- debug checks (HP_DEBUG builds) ------------------------------------------------------ */

#ifdef HP_DEBUG
/* A byte queue's counts match its buffers (tcp_bufq.c's invariants). */
static void bufq_check(const struct hp_buf *head, const struct hp_buf *tail, uint32_t nbufs,
                       uint32_t qbytes)
{
    uint32_t bytes = 0, n = 0;
    const struct hp_buf *last = NULL;
    for (const struct hp_buf *b = head; b && n <= nbufs; b = b->next, n++) {
        HP_ASSERT(b->data_len > 0);
        bytes += b->data_len;
        last = b;
    }
    HP_ASSERT(n == nbufs && bytes == qbytes && last == tail);
}

/* The send queue: its buffers, or at most HP__TCP_SNDQ_INLINE bytes inline. */
static void sndq_check(const struct hp__tcp_sndq *sq)
{
    if (sq->nbufs)
        bufq_check(sq->u.q.head, sq->u.q.tail, sq->nbufs, sq->bytes);
    else
        HP_ASSERT(sq->bytes <= HP__TCP_SNDQ_INLINE);
}

/* The out-of-order list: sorted, not overlapping, above rcv_nxt, counted. */
static void ooo_check(const struct hp_tcp_sock *c)
{
    uint32_t n = 0, bytes = 0;
    uint32_t prev_end = c->rcv_nxt;
    for (const struct hp_buf *q = c->ooo; q; q = q->next, n++) {
        uint32_t seq = (uint32_t)q->reserved;
        HP_ASSERT(hp__seq_ge(seq, prev_end) || (n == 0 && seq == c->rcv_nxt));
        prev_end = seq + q->data_len;
        bytes += q->data_len;
    }
    HP_ASSERT(n == c->ooo_n && bytes == c->ooo_bytes);
}

/* The scoreboard's counters match its entries, which cover what is in
 * flight in order. */
static void sb_check(const struct hp_tcp_sock *c)
{
    if (!c->x) {
        HP_ASSERT(!(c->flags & (HP__TCPF_SB | HP__TCPF_SB_LOSS | HP__TCPF_ECN_PEND)));
        return;
    }
    const struct hp__tcp_sb *sb = &c->x->sb;
    uint32_t sacked = 0, lost = 0, rtx = 0, nsacked = 0;
    uint32_t prev = c->snd_una;
    for (uint32_t i = 0; i < sb->n; i++) {
        const struct hp__tcp_txseg *e = &sb->seg[(sb->head + i) & (sb->cap - 1)];
        uint32_t len = e->end - e->seq;
        HP_ASSERT(hp__seq_lt(e->seq, e->end));
        HP_ASSERT(i == 0 ? hp__seq_ge(e->seq, c->snd_una) : e->seq == prev);
        HP_ASSERT(hp__seq_le(e->end, c->snd_max));
        prev = e->end;
        if (e->flags & HP__TXS_SACKED) {
            sacked += len;
            nsacked++;
            continue;
        }
        if (e->flags & HP__TXS_LOST)
            lost += len;
        if (e->flags & HP__TXS_RETRANS)
            rtx += len;
    }
    HP_ASSERT(sacked == sb->sacked && lost == sb->lost && rtx == sb->rtx_out &&
              nsacked == sb->nsacked);
    HP_ASSERT(!(c->flags & HP__TCPF_SB) == !sb->cap);
    HP_ASSERT(!(sacked || lost || rtx) || (c->flags & HP__TCPF_SB_LOSS));
}
#endif

void hp__tcp_check(const struct hp_tcp_sock *c)
{
#ifdef HP_DEBUG
    /* tcp_internal.h: always snd_una <= snd_nxt <= snd_max. */
    HP_ASSERT(hp__seq_le(c->snd_una, c->snd_nxt) && hp__seq_le(c->snd_nxt, c->snd_max));
    /* Large queues are walked now and then only: the checks stay cheap
     * enough for the sanitizer runs of bulk transfers. */
    if (c->sndq.nbufs < 256 || (c->segs_out & 63) == 0)
        sndq_check(&c->sndq);
    if (c->rcvq.nbufs < 256 || (c->segs_in & 63) == 0)
        bufq_check(c->rcvq.head, c->rcvq.tail, c->rcvq.nbufs, c->rcvq.bytes);
    if (hp__tcp_synchronized(c))
        ooo_check(c);
    if (!c->x || c->x->sb.n < 512 || (c->segs_in & 63) == 0)
        sb_check(c);
#else
    (void)c;
#endif
}

#define INHERITED_FLAGS                                                                            \
    (HP__TCPF_NODELAY | HP__TCPF_KEEPALIVE | HP__TCPF_QUICKACK | HP__TCPF_LINGER0)

/* A passive connection takes its listener's options, as with Linux's
 * accept(): set on the listener, they apply to every connection it makes. */
static void inherit(struct hp_tcp_sock *c, const struct hp_tcp_sock *l)
{
    c->flags = (c->flags & ~INHERITED_FLAGS) | (l->flags & INHERITED_FLAGS);
    c->sndbuf = l->sndbuf;
    c->ka_idle_s = l->ka_idle_s;
    c->ka_intvl_s = l->ka_intvl_s;
    c->ka_cnt = l->ka_cnt;
    c->cc_algo = l->cc_algo;
}

int hp__tcp_established(struct hp_tcp_sock *c)
{
    struct hp_tcp_sock *l = (c->parent && !(c->flags & HP__TCPF_ACCEPTED)) ? c->parent : NULL;
    if (l && !(c->flags & HP__TCPF_ACCQ)) {
        struct hp__tcp_listenq *lq = l->lq;
        if (lq->nacc >= lq->backlog) {
            hp__ctr(c->s, HP_CTR_TCP_LISTEN_OVERFLOWS);
            return -ENOSPC;
        }
        if (on_syn_queue(c))
            syn_unlink(c);
        c->qnext = NULL;
        c->qprev = lq->acc_tail;
        if (lq->acc_tail)
            lq->acc_tail->qnext = c;
        else
            lq->acc_head = c;
        lq->acc_tail = c;
        lq->nacc++;
        c->flags |= HP__TCPF_ACCQ;
    }
    if (l)
        inherit(c, l);
    if (c->state < HP_TCP_ESTABLISHED) {
        /* RFC 9293 3.10.4: a CLOSE in SYN-RECEIVED queued our FIN "for
         * processing after entering ESTABLISHED state". */
        hp__tcp_set_state(c, (c->flags & HP__TCPF_FIN_QUEUED) ? HP_TCP_FIN_WAIT_1
                                                              : HP_TCP_ESTABLISHED);
    }
    bool syn_lost = (c->flags & HP__TCPF_SYN_LOST) != 0;
    hp__tcp_cc_init(&c->cc, c->mss_eff, c->iss, syn_lost);
    hp__tcp_cc_set_algo(&c->cc, hp__tcp_cubic_of(c, false), c->cc_algo, c->snd_max);
    hp__tcp_rtt_established(&c->rtt, hp__tcp_rtt_cfg_of(c), syn_lost);
    /* The SYN's timer is done: out of the heap now rather than when its
     * stale entry would fire (the same sift either way), so that an idle
     * connection holds no heap entry (the caller arms it again for data
     * in flight). */
    hp__timer_cancel(c->s, &c->t_rtx);
    c->rtx_tdue = 0;
    if (l) {
        hp__ctr(c->s, HP_CTR_TCP_PASSIVE_OPENS);
        hp__tcp_wake(l, HP_EV_IN);
    } else {
        hp__tcp_wake(c, HP_EV_OUT);
    }
    hp__tcp_misc_rearm(c);
    return 0;
}

/* The user holds no handle: orphaned by close, or a passive connection not
 * accepted yet. Nobody could read its error or its end of stream. */
static bool unowned(const struct hp_tcp_sock *c)
{
    return (c->flags & HP__TCPF_ORPHAN) || !(c->flags & HP__TCPF_ACCEPTED);
}

void hp__tcp_drop(struct hp_tcp_sock *c, int err)
{
    quiesce(c);
    hp__tcp_rcvq_purge(&c->rcvq);
    if (c->flags & HP__TCPF_IN_TABLE)
        unhash(c);
    hp__tcp_set_state(c, HP_TCP_CLOSED);
    c->err = err;
    if (unowned(c)) {
        hp__tcp_conn_free(c);
        return;
    }
    hp__tcp_wake(c, HP_EV_ERR | HP_EV_HUP | HP_EV_IN);
}

void hp__tcp_closed(struct hp_tcp_sock *c)
{
    quiesce(c);
    if (c->flags & HP__TCPF_IN_TABLE)
        unhash(c);
    hp__tcp_set_state(c, HP_TCP_CLOSED);
    if (unowned(c)) {
        hp__tcp_conn_free(c);
        return;
    }
    /* The receive queue stays: what the peer sent before its FIN is still
     * the user's to read. */
    hp__tcp_wake(c, HP_EV_HUP);
}

void hp__tcp_wake(struct hp_tcp_sock *c, uint32_t events)
{
    if (unowned(c) || !events)
        return;
    if (events & HP_EV_OUT)
        c->flags &= ~HP__TCPF_SEND_SPACE;
    hp__sock_ev_raise(c->s->sock, &c->ev, events);
}

int hp__tcp_conn_attach(struct hp_tcp_sock *c, int family, const uint8_t *laddr, uint16_t lport,
                        const uint8_t *raddr, uint16_t rport)
{
    struct hp_stack *s = c->s;
    struct hp__tcp_state *st = hp__tcp(s);
    const struct hp_tcp_config *cfg = &st->cfg;
    struct hp__route rt;
    int rc = family == HP_AF_INET4 ? hp__route4(s, raddr, &rt) : hp__route6(s, raddr, &rt);
    if (rc < 0) {
        hp__ctr(s, family == HP_AF_INET4 ? HP_CTR_IP_OUT_NO_ROUTES : HP_CTR_IP6_OUT_NO_ROUTES);
        return -EHOSTUNREACH;
    }
    hp__tcp_key_init(&c->key, family, laddr, lport, raddr, rport);
    c->ifx = (uint8_t)(rt.ifc->index + 1);
    /* The next hop: the peer, or the gateway the route chose (the
     * stack's, which hp__tcp_nexthop reads at each segment). */
    c->via_gw = memcmp(rt.nexthop, raddr, family == HP_AF_INET4 ? 4 : 16) != 0;
    c->pmtu = (uint16_t)(rt.ifc->mtu < 65535u ? rt.ifc->mtu : 65535u);
    if (c->x)
        c->x->plp.low = c->x->plp.high = c->pmtu; /* no search until a black hole */

    /* A passive connection takes the listener's buffers and MSS before
     * they are used below (window scale, MSS option of the SYN-ACK). */
    if (c->parent) {
        inherit(c, c->parent);
        c->rcvbuf = c->parent->rcvbuf;
        c->rmss = c->parent->rmss;
    }

    /* RFC 9293 3.7.1: the MSS we announce is what our MTU lets in, less
     * the fixed IP and TCP headers; capped by the knob and by a MAXSEG
     * the user set (kept in rmss until now). */
    uint32_t hdr = family == HP_AF_INET4 ? 40u : 60u;
    uint32_t mtu = rt.ifc->mtu;
    uint32_t mss = mtu > hdr + MSS_MIN ? mtu - hdr : MSS_MIN;
    if (mss > MSS_MAX)
        mss = MSS_MAX;
    if (cfg->mss && cfg->mss < mss)
        mss = cfg->mss;
    if (c->rmss && c->rmss < mss)
        mss = c->rmss;
    c->rmss = (uint16_t)mss;
    /* Until the peer's MSS option says otherwise: RFC 9293 3.7.1 (536),
     * RFC 8200 8.3 (1220). */
    uint32_t dflt = family == HP_AF_INET4 ? 536u : 1220u;
    c->smss = (uint16_t)(mss < dflt ? mss : dflt);
    c->mss_eff = c->smss;

    /* RFC 7323 2.2: the smallest shift that lets the whole buffer be
     * offered (the same as a cookie SYN-ACK announces). */
    uint8_t ws = hp__tcp_rcv_wscale(c->rcvbuf, cfg->no_window_scaling);
    c->rcv_wscale = ws;
    uint64_t maxwnd = (uint64_t)65535u << ws;
    c->rcv_wnd = c->rcvbuf < maxwnd ? c->rcvbuf : (uint32_t)maxwnd;

    struct hp__tcp_tuple tu = {.family = (uint8_t)family, .lport = lport, .rport = rport};
    memcpy(tu.laddr, c->key.laddr, sizeof tu.laddr);
    memcpy(tu.raddr, c->key.raddr, sizeof tu.raddr);
    c->iss = hp__tcp_isn_ts(&st->secret, &tu, s->now, &c->ts_offset);
    c->snd_una = c->snd_nxt = c->snd_max = c->iss;

    rc = hp__tcp_conn_insert(st->table, &c->key);
    if (rc < 0)
        return rc == -EEXIST ? -EEXIST : -ENOSPC;
    c->flags |= HP__TCPF_IN_TABLE | HP__TCPF_BOUND;
    c->flags &= ~HP__TCPF_WILDCARD;
    if (hp__tcp_table_rekey_wanted(st->table))
        st->table_rekey = true; /* at the next poll's start (hp__tcp_poll_begin) */
    return 0;
}
