/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP applications on a stack, shared by serve, connect and the benchmarks: echo / discard / source servers, a verifying client, the byte pattern. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/buf.h>
#include <hotpath/err.h>

#include "tcp_app.h"
#include "tool.h"

#define CHUNK     65536 /* bytes per client send / recv call */
#define SRC_CHUNK 16384 /* bytes per source-server send call */

enum { OBJ_LISTENER = 0x4c49u, OBJ_SCONN = 0x5343u, OBJ_CCONN = 0x4343u };

static const char *const mode_names[TCP_NMODES] = {"echo", "discard", "source"};

const char *tcp_mode_name(int mode)
{
    return mode >= 0 && mode < TCP_NMODES ? mode_names[mode] : "?";
}

int tcp_mode_parse(const char *s)
{
    for (int m = 0; m < TCP_NMODES; m++)
        if (strcmp(s, mode_names[m]) == 0)
            return m;
    return -1;
}

/* ---- the byte pattern ------------------------------------------------------- */

#define GOLDEN 0x9e3779b97f4a7c15ull

/* splitmix64's output function: a bijection that mixes every bit. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t tcp_pattern_seed(uint32_t conn_index)
{
    return mix64(0x68702d7463702d31ull + (uint64_t)conn_index * GOLDEN);
}

static inline void store_le64(uint8_t *d, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(d, &w, 8);
#else
    for (int b = 0; b < 8; b++)
        d[b] = (uint8_t)(w >> (8 * b));
#endif
}

void tcp_pattern_fill(uint64_t seed, uint64_t off, void *dst, size_t len)
{
    uint8_t *d = dst;
    uint64_t k = off >> 3;
    unsigned skip = (unsigned)(off & 7);
    if (skip && len) {
        uint64_t w = mix64(seed + k++ * GOLDEN);
        for (unsigned b = skip; b < 8 && len; b++, len--)
            *d++ = (uint8_t)(w >> (8 * b));
    }
    for (; len >= 8; len -= 8, d += 8)
        store_le64(d, mix64(seed + k++ * GOLDEN));
    if (len) {
        uint64_t w = mix64(seed + k * GOLDEN);
        for (unsigned b = 0; b < len; b++)
            d[b] = (uint8_t)(w >> (8 * b));
    }
}

long tcp_pattern_check(uint64_t seed, uint64_t off, const void *src, size_t len, void *scratch)
{
    tcp_pattern_fill(seed, off, scratch, len);
    if (memcmp(src, scratch, len) == 0)
        return -1;
    const uint8_t *a = src, *b = scratch;
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}

/* ---- servers ------------------------------------------------------------------ */

#define MAX_LISTEN 64

struct tcp_srv;

struct slisten {
    struct tcp_obj o;
    struct tcp_srv *v;
    struct hp_tcp_sock *t;
    int mode;
};

struct sconn {
    struct tcp_obj o;
    struct tcp_srv *v;
    struct hp_tcp_sock *t;
    struct sconn *prev, *next;
    struct hp_buf *pend; /* echo: received, not yet taken by the send queue */
    uint64_t off;        /* source: stream offset of the next byte to send */
    int mode;
    bool readable, writable, peer_fin;
};

struct tcp_srv {
    struct hp_stack *s;
    struct slisten *l[MAX_LISTEN];
    int nl;
    struct sconn *conns; /* open connections, for tcp_srv_free */
    struct sconn *spare; /* allocated for the next accept */
    struct tcp_srv_stats st;
    bool copy_send; /* hp_tcp_send_buf refused buffers: echo by copying */
    uint8_t scratch[SRC_CHUNK];
};

struct tcp_srv *tcp_srv_new(struct hp_stack *s)
{
    struct tcp_srv *v = calloc(1, sizeof *v);
    if (v)
        v->s = s;
    return v;
}

int tcp_srv_listen(struct tcp_srv *v, int mode, uint16_t port, int family, uint32_t sockbuf)
{
    if (v->nl == MAX_LISTEN || mode < 0 || mode >= TCP_NMODES)
        return -EINVAL;
    struct slisten *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    l->o.kind = OBJ_LISTENER;
    l->v = v;
    l->mode = mode;
    l->t = hp_tcp_open(v->s, family, l);
    if (!l->t) {
        int e = -errno;
        free(l);
        return e ? e : -ENOMEM;
    }
    int rc = 0;
    if (sockbuf) {
        hp_tcp_setopt(l->t, HP_TCP_OPT_SNDBUF, (long)sockbuf);
        hp_tcp_setopt(l->t, HP_TCP_OPT_RCVBUF, (long)sockbuf);
    }
    struct hp_sockaddr any = {.family = (uint8_t)family, .port = port};
    if ((rc = hp_tcp_bind(l->t, &any)) < 0 || (rc = hp_tcp_listen(l->t, 4096)) < 0) {
        hp_tcp_close(l->t);
        free(l);
        return rc;
    }
    v->l[v->nl++] = l;
    v->st.listeners++;
    return 0;
}

void tcp_srv_get_stats(const struct tcp_srv *v, struct tcp_srv_stats *out)
{
    if (v)
        *out = v->st;
    else
        memset(out, 0, sizeof *out);
}

static void sconn_unlink_free(struct sconn *c)
{
    struct tcp_srv *v = c->v;
    if (c->prev)
        c->prev->next = c->next;
    else
        v->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    hp_buf_free(c->pend);
    v->st.open--;
    free(c);
}

/* Our side is done too: FIN after whatever is queued (the peer's FIN came). */
static void sconn_close(struct sconn *c)
{
    hp_tcp_shutdown(c->t, HP_TCP_SHUT_WR);
    hp_tcp_close(c->t);
    c->v->st.closed++;
    sconn_unlink_free(c);
}

static void sconn_fail(struct sconn *c)
{
    hp_tcp_abort(c->t);
    c->v->st.failed++;
    sconn_unlink_free(c);
}

/* Hand the pending buffer to the send queue: zero-copy as a whole, or by
 * copying as much as fits when send_buf is not available.
 * @return 0 (all taken), -EAGAIN (some or all left: wait for HP_EV_OUT),
 *         or another -errno (the connection failed). */
static int echo_flush(struct sconn *c)
{
    struct hp_buf *b = c->pend;
    if (!c->v->copy_send) {
        uint32_t len = b->pkt_len;
        long r = hp_tcp_send_buf(c->t, b);
        if (r >= 0) {
            c->v->st.bytes_out += len;
            c->pend = NULL;
            return 0;
        }
        if (r == -EAGAIN || r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN)
            return (int)r;
        c->v->copy_send = true; /* refused for another reason: copy from now on */
    }
    while (b) {
        if (b->data_len) {
            long r = hp_tcp_send(c->t, hp_buf_data(b), b->data_len);
            if (r < 0)
                return (int)r;
            c->v->st.bytes_out += (uint64_t)r;
            if ((uint32_t)r < b->data_len) {
                hp_buf_adj(b, (uint32_t)r);
                b->pkt_len -= (uint32_t)r;
                c->pend = b;
                return -EAGAIN;
            }
        }
        /* This segment is sent: the next one (if any) becomes the packet. */
        struct hp_buf *n = b->next;
        if (n) {
            n->pkt_len = b->pkt_len - b->data_len;
            n->nb_segs = (uint16_t)(b->nb_segs - 1);
        }
        b->next = NULL;
        hp_buf_free(b);
        b = n;
    }
    c->pend = NULL;
    return 0;
}

/* Read what the peer sent into nowhere (discard, and source's input).
 * @return false when the connection failed (and c is freed). */
static bool sconn_drain(struct sconn *c)
{
    while (c->readable && !c->peer_fin) {
        struct hp_buf *b;
        long n = hp_tcp_recv_buf(c->t, &b);
        if (n > 0) {
            c->v->st.bytes_in += (uint64_t)n;
            hp_buf_free(b);
        } else if (n == 0) {
            c->peer_fin = true;
        } else if (n == -EAGAIN) {
            c->readable = false;
        } else {
            sconn_fail(c);
            return false;
        }
    }
    return true;
}

/* Do what can be done now. @return false when c is gone (closed or failed). */
static bool sconn_run(struct sconn *c)
{
    struct tcp_srv *v = c->v;
    switch (c->mode) {
    case TCP_ECHO:
        /* Backpressure: at most one received buffer waits for the send
         * queue; reading stops until it is taken, so the receive window
         * closes and the peer slows down, and no byte is dropped or
         * reordered. */
        for (;;) {
            if (c->pend) {
                int r = echo_flush(c);
                if (r == -EAGAIN)
                    break;
                if (r < 0) {
                    sconn_fail(c);
                    return false;
                }
            }
            if (!c->readable || c->peer_fin)
                break;
            struct hp_buf *b;
            long n = hp_tcp_recv_buf(c->t, &b);
            if (n > 0) {
                v->st.bytes_in += (uint64_t)n;
                c->pend = b;
            } else if (n == 0) {
                c->peer_fin = true;
            } else if (n == -EAGAIN) {
                c->readable = false;
            } else {
                sconn_fail(c);
                return false;
            }
        }
        if (c->peer_fin && !c->pend) {
            sconn_close(c);
            return false;
        }
        return true;
    case TCP_DISCARD:
        if (!sconn_drain(c))
            return false;
        if (c->peer_fin) {
            sconn_close(c);
            return false;
        }
        return true;
    default: /* TCP_SOURCE */
        if (!sconn_drain(c))
            return false;
        if (c->peer_fin) {
            sconn_close(c);
            return false;
        }
        while (c->writable) {
            tcp_pattern_fill(TCP_SOURCE_SEED, c->off, v->scratch, SRC_CHUNK);
            long r = hp_tcp_send(c->t, v->scratch, SRC_CHUNK);
            if (r == -EAGAIN) {
                c->writable = false;
            } else if (r < 0) {
                sconn_fail(c);
                return false;
            } else {
                c->off += (uint64_t)r;
                v->st.bytes_out += (uint64_t)r;
            }
        }
        return true;
    }
}

static void sconn_event(struct sconn *c, uint32_t ev)
{
    if ((ev & HP_EV_ERR) && hp_tcp_error(c->t) != 0) {
        sconn_fail(c);
        return;
    }
    if (ev & HP_EV_IN)
        c->readable = true;
    if (ev & HP_EV_OUT)
        c->writable = true;
    if (!sconn_run(c))
        return;
    if (ev & HP_EV_HUP) {
        /* Over in both directions before we closed: a reset or a peer
         * that went away without its FIN reaching us. */
        if (c->peer_fin)
            sconn_close(c);
        else
            sconn_fail(c);
    }
}

static void listener_event(struct slisten *l, uint32_t ev)
{
    struct tcp_srv *v = l->v;
    if (!(ev & HP_EV_IN))
        return;
    for (;;) {
        if (!v->spare && !(v->spare = calloc(1, sizeof *v->spare)))
            return;
        struct sconn *c = v->spare;
        struct hp_tcp_sock *t = hp_tcp_accept(l->t, c, NULL);
        if (!t)
            return;
        v->spare = NULL;
        c->o.kind = OBJ_SCONN;
        c->v = v;
        c->t = t;
        c->mode = l->mode;
        c->next = v->conns;
        if (v->conns)
            v->conns->prev = c;
        v->conns = c;
        v->st.accepted++;
        v->st.open++;
        /* Events are edge-triggered and may have fired before the accept:
         * look at both directions once now. */
        c->readable = c->writable = true;
        sconn_run(c);
    }
}

void tcp_srv_free(struct tcp_srv *v)
{
    if (!v)
        return;
    while (v->conns) {
        struct sconn *c = v->conns;
        v->conns = c->next;
        hp_buf_free(c->pend);
        hp_tcp_abort(c->t);
        free(c);
    }
    for (int i = 0; i < v->nl; i++) {
        hp_tcp_close(v->l[i]->t);
        free(v->l[i]);
    }
    free(v->spare);
    free(v);
}

/* ---- the verifying client -------------------------------------------------------- */

enum { CC_IDLE = 0, CC_CONNECTING, CC_OPEN, CC_DONE };

struct cconn {
    struct tcp_obj o;
    struct tcp_cli *c;
    struct hp_tcp_sock *t;
    uint64_t seed;
    uint64_t target; /* to send (echo, discard) or read (source); UINT64_MAX: timed */
    double t0, last; /* connect time, last progress */
    struct tool_sha256 *hs, *hr;
    uint8_t st;
    bool readable, writable, wr_shut, eof;
    struct tcp_cli_conn r;
};

struct tcp_cli {
    struct hp_stack *s;
    struct tcp_cli_opts o;
    struct cconn *cc;
    unsigned next, connecting, established, done, ok, failed;
    uint64_t sent, received;
    double now, next_check;
    bool deadline_passed;
    uint8_t *buf, *scratch;
};

struct tcp_cli *tcp_cli_new(struct hp_stack *s, const struct tcp_cli_opts *o)
{
    if (!o->conns || (o->to.family != 4 && o->to.family != 6) || o->mode < 0 ||
        o->mode >= TCP_NMODES) {
        errno = EINVAL;
        return NULL;
    }
    struct tcp_cli *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->s = s;
    c->o = *o;
    if (!c->o.max_connecting)
        c->o.max_connecting = 32;
    if (!(c->o.stall_s > 0))
        c->o.stall_s = 20;
    c->cc = calloc(o->conns, sizeof *c->cc);
    c->buf = malloc(CHUNK);
    c->scratch = malloc(CHUNK);
    if (!c->cc || !c->buf || !c->scratch) {
        tcp_cli_free(c);
        errno = ENOMEM;
        return NULL;
    }
    for (unsigned i = 0; i < o->conns; i++) {
        struct cconn *k = &c->cc[i];
        k->o.kind = OBJ_CCONN;
        k->c = c;
        k->seed = tcp_pattern_seed(o->first_index + i);
        k->target = o->bytes ? o->bytes : UINT64_MAX;
    }
    return c;
}

static void cconn_end(struct cconn *k, bool ok, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cconn_end(struct cconn *k, bool ok, int err, const char *fmt, ...)
{
    struct tcp_cli *c = k->c;
    if (k->r.done)
        return;
    if (!ok && fmt) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(k->r.why, sizeof k->r.why, fmt, ap);
        va_end(ap);
        if (err && n >= 0 && (size_t)n < sizeof k->r.why)
            snprintf(k->r.why + n, sizeof k->r.why - (size_t)n, ": %s", hp_strerror(err));
    }
    if (k->st == CC_CONNECTING)
        c->connecting--;
    if (k->t) {
        if (ok)
            hp_tcp_close(k->t);
        else
            hp_tcp_abort(k->t);
        k->t = NULL;
    }
    k->st = CC_DONE;
    k->r.done = true;
    k->r.ok = ok;
    k->r.seconds = k->t0 > 0 ? c->now - k->t0 : 0;
    tool_sha256_final(k->hs, k->r.sha_sent);
    tool_sha256_final(k->hr, k->r.sha_received);
    k->hs = k->hr = NULL;
    c->done++;
    if (ok)
        c->ok++;
    else
        c->failed++;
}

static void cconn_start(struct tcp_cli *c, struct cconn *k)
{
    k->t0 = k->last = c->now;
    if (c->o.hash) {
        k->hs = tool_sha256_new();
        k->hr = tool_sha256_new();
    }
    k->t = hp_tcp_open(c->s, c->o.to.family, k);
    if (!k->t) {
        cconn_end(k, false, -errno, "cannot open a socket");
        return;
    }
    if (c->o.sockbuf) {
        hp_tcp_setopt(k->t, HP_TCP_OPT_SNDBUF, (long)c->o.sockbuf);
        hp_tcp_setopt(k->t, HP_TCP_OPT_RCVBUF, (long)c->o.sockbuf);
    }
    int rc = hp_tcp_connect(k->t, &c->o.to);
    if (rc != -EINPROGRESS && rc != 0) {
        cconn_end(k, false, rc, "connect");
        return;
    }
    struct hp_sockaddr local;
    hp_tcp_local(k->t, &local);
    k->r.local_port = local.port;
    k->st = CC_CONNECTING;
    c->connecting++;
}

static void cconn_shut(struct cconn *k)
{
    int rc = hp_tcp_shutdown(k->t, HP_TCP_SHUT_WR);
    if (rc < 0) {
        cconn_end(k, false, rc, "shutdown");
        return;
    }
    k->wr_shut = true;
}

/* Send what can be sent now (echo, discard), then our FIN once all is.
 * @return false when k ended. */
static bool cconn_send(struct cconn *k)
{
    struct tcp_cli *c = k->c;
    while (c->o.mode != TCP_SOURCE && k->writable && !k->wr_shut) {
        uint64_t left = k->target - k->r.sent;
        if (left == 0) {
            cconn_shut(k);
            return k->st != CC_DONE;
        }
        size_t len = left < CHUNK ? (size_t)left : CHUNK;
        tcp_pattern_fill(k->seed, k->r.sent, c->buf, len);
        long r = hp_tcp_send(k->t, c->buf, len);
        if (r == -EAGAIN) {
            k->writable = false;
            break;
        }
        if (r <= 0) {
            cconn_end(k, false, (int)r, "send after %" PRIu64 " bytes", k->r.sent);
            return false;
        }
        tool_sha256_update(k->hs, c->buf, (size_t)r);
        k->r.sent += (uint64_t)r;
        c->sent += (uint64_t)r;
        k->last = c->now;
    }
    return true;
}

/* Check r received bytes in c->buf against the pattern. false when k ended. */
static bool cconn_check(struct cconn *k, long r)
{
    struct tcp_cli *c = k->c;
    int mode = c->o.mode;
    if (mode == TCP_DISCARD) {
        cconn_end(k, false, 0, "the discard server sent %ld bytes", r);
        return false;
    }
    if (mode == TCP_ECHO && k->r.received + (uint64_t)r > k->r.sent) {
        cconn_end(k, false, 0, "%" PRIu64 " bytes came back, only %" PRIu64 " were sent",
                  k->r.received + (uint64_t)r, k->r.sent);
        return false;
    }
    uint64_t seed = mode == TCP_SOURCE ? TCP_SOURCE_SEED : k->seed;
    long bad = tcp_pattern_check(seed, k->r.received, c->buf, (size_t)r, c->scratch);
    if (bad >= 0) {
        cconn_end(k, false, 0, "byte %" PRIu64 " differs: 0x%02x came back, 0x%02x was sent",
                  k->r.received + (uint64_t)bad, c->buf[bad], c->scratch[bad]);
        return false;
    }
    tool_sha256_update(k->hr, c->buf, (size_t)r);
    k->r.received += (uint64_t)r;
    c->received += (uint64_t)r;
    k->last = c->now;
    return true;
}

/* Receive and check what has come. false when k ended. */
static bool cconn_recv(struct cconn *k)
{
    struct tcp_cli *c = k->c;
    while (k->readable) {
        long r = hp_tcp_recv(k->t, c->buf, CHUNK);
        if (r == -EAGAIN || r == 0) {
            if (r == 0)
                k->eof = true;
            k->readable = false;
            break;
        }
        if (r < 0) {
            cconn_end(k, false, (int)r, "receive after %" PRIu64 " bytes", k->r.received);
            return false;
        }
        if (!cconn_check(k, r))
            return false;
    }
    return true;
}

/* Send and receive what can be now; finish at the end of the stream. */
static void cconn_run(struct cconn *k)
{
    int mode = k->c->o.mode;
    if (k->st != CC_OPEN || !cconn_send(k) || !cconn_recv(k))
        return;
    if (mode == TCP_SOURCE && !k->wr_shut && k->r.received >= k->target) {
        cconn_shut(k);
        if (k->st == CC_DONE)
            return;
    }
    if (!k->eof)
        return;
    bool ok;
    if (mode == TCP_ECHO)
        ok = k->wr_shut && k->r.received == k->r.sent;
    else if (mode == TCP_DISCARD)
        ok = k->wr_shut;
    else
        ok = k->wr_shut && k->r.received >= k->target;
    cconn_end(k, ok, 0, "the server closed early: %" PRIu64 " bytes sent, %" PRIu64 " received",
              k->r.sent, k->r.received);
}

static void cconn_event(struct cconn *k, uint32_t ev)
{
    struct tcp_cli *c = k->c;
    if (k->st != CC_CONNECTING && k->st != CC_OPEN)
        return;
    if (ev & HP_EV_ERR) {
        int err = hp_tcp_error(k->t);
        if (err) {
            cconn_end(k, false, err, k->st == CC_CONNECTING ? "connect" : "connection");
            return;
        }
    }
    if (k->st == CC_CONNECTING) {
        if (!(ev & HP_EV_OUT) && hp_tcp_state(k->t) != HP_TCP_ESTABLISHED)
            return;
        k->st = CC_OPEN;
        c->connecting--;
        c->established++;
        k->last = c->now;
        k->readable = k->writable = true;
    }
    if (ev & HP_EV_IN)
        k->readable = true;
    if (ev & HP_EV_OUT)
        k->writable = true;
    cconn_run(k);
    if (k->st == CC_OPEN && (ev & HP_EV_HUP))
        cconn_end(k, false, hp_tcp_error(k->t),
                  "the connection ended without the server's FIN (%" PRIu64 " bytes sent, %" PRIu64
                  " received)",
                  k->r.sent, k->r.received);
}

void tcp_cli_step(struct tcp_cli *c, double now)
{
    c->now = now;
    while (c->next < c->o.conns && c->connecting < c->o.max_connecting)
        cconn_start(c, &c->cc[c->next++]);
    if (c->o.deadline > 0 && now >= c->o.deadline && !c->deadline_passed) {
        c->deadline_passed = true;
        if (c->o.bytes) {
            tcp_cli_finish(c, now, "the time limit passed");
            return;
        }
        /* Timed: stop sending (reading, for source) where each is now. */
        for (unsigned i = 0; i < c->next; i++) {
            struct cconn *k = &c->cc[i];
            if (k->st == CC_DONE)
                continue;
            k->target = c->o.mode == TCP_SOURCE ? k->r.received : k->r.sent;
            cconn_run(k);
        }
    }
    if (now < c->next_check)
        return;
    c->next_check = now + 0.25;
    for (unsigned i = 0; i < c->next; i++) {
        struct cconn *k = &c->cc[i];
        if ((k->st != CC_CONNECTING && k->st != CC_OPEN) || now - k->last <= c->o.stall_s)
            continue;
        struct hp_tcp_info ti;
        memset(&ti, 0, sizeof ti);
        hp_tcp_get_info(k->t, &ti);
        cconn_end(k, false, 0,
                  "no progress for %.0f s in %s (%" PRIu64 " bytes sent, %" PRIu64
                  " received; unacked %u, "
                  "send window %u, cwnd %u, RTO %u ms)",
                  c->o.stall_s, hp_tcp_state_name(ti.state), k->r.sent, k->r.received, ti.unacked,
                  ti.snd_wnd, ti.cwnd, ti.rto_us / 1000);
    }
}

bool tcp_cli_done(const struct tcp_cli *c)
{
    return c->done == c->o.conns;
}

void tcp_cli_totals(const struct tcp_cli *c, struct tcp_cli_totals *out)
{
    out->sent = c->sent;
    out->received = c->received;
    out->started = c->next;
    out->established = c->established;
    out->done = c->done;
    out->ok = c->ok;
    out->failed = c->failed;
}

void tcp_cli_finish(struct tcp_cli *c, double now, const char *why)
{
    c->now = now;
    for (unsigned i = 0; i < c->o.conns; i++) {
        struct cconn *k = &c->cc[i];
        if (k->r.done)
            continue;
        if (k->st == CC_IDLE)
            cconn_end(k, false, 0, "not started: %s", why);
        else
            cconn_end(k, false, 0, "%s in %s (%" PRIu64 " bytes sent, %" PRIu64 " received)", why,
                      k->t ? hp_tcp_state_name(hp_tcp_state(k->t)) : "?", k->r.sent, k->r.received);
    }
}

const struct tcp_cli_conn *tcp_cli_conn(const struct tcp_cli *c, unsigned i)
{
    return i < c->o.conns ? &c->cc[i].r : NULL;
}

void tcp_cli_free(struct tcp_cli *c)
{
    if (!c)
        return;
    for (unsigned i = 0; c->cc && i < c->o.conns; i++) {
        struct cconn *k = &c->cc[i];
        char dummy[65];
        if (k->t)
            hp_tcp_abort(k->t);
        tool_sha256_final(k->hs, dummy);
        tool_sha256_final(k->hr, dummy);
    }
    free(c->cc);
    free(c->buf);
    free(c->scratch);
    free(c);
}

/* ---- event dispatch ---------------------------------------------------------------- */

bool tcp_app_event(void *user, uint32_t events)
{
    struct tcp_obj *o = user;
    if (!o)
        return false;
    switch (o->kind) {
    case OBJ_LISTENER:
        listener_event((struct slisten *)o, events);
        return true;
    case OBJ_SCONN:
        sconn_event((struct sconn *)o, events);
        return true;
    case OBJ_CCONN:
        cconn_event((struct cconn *)o, events);
        return true;
    default:
        return false;
    }
}
