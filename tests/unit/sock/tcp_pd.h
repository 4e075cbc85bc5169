/* SPDX-License-Identifier: BSD-3-Clause */
/* A packetdrill-like harness for TCP: one stack under test on a mem link, the test plays the peer with injected and expected segments on a virtual clock. */
#ifndef HP_TEST_SOCK_TCP_PD_H
#define HP_TEST_SOCK_TCP_PD_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>
#include <hotpath/wire.h>

#include "hp_test.h"

/*
 * The model
 * ---------
 * One hotpath stack (the system under test) owns end[0] of a mem link pair,
 * with 198.18.0.1/24 and 2001:2::1/64. The test is the remote peer,
 * 198.18.0.2 / 2001:2::2, on end[1]: the harness answers the stack's ARP
 * requests and neighbour solicitations itself, injects the segments the
 * script asks for, and captures every TCP segment the stack sends into a
 * queue that pd_expect() consumes in order. Each captured segment is
 * checked on arrival (checksums, IP header, ports, options allowed only on
 * SYNs, timestamps in every segment once negotiated, data within the
 * peer's window and MSS, no shrinking of the advertised window...):
 * violations are test failures whether or not a script expects the segment.
 *
 * Time is virtual: the stack reads the harness clock, which moves only in
 * pd_advance_ms(), stopping at every timer deadline on the way so timers
 * fire at their exact time. Every captured segment records when it was sent
 * (pd_seg.at_ms, ms since pd_open).
 *
 * Sequence numbers are relative, as in packetdrill: in a segment the peer
 * sends, seq is relative to the peer's ISN and ack to the stack's ISN; in a
 * segment the stack sends, seq is relative to the stack's ISN and ack to
 * the peer's. The harness learns the stack's ISN from every SYN it sends,
 * and takes the peer's from every SYN the script injects (so a new SYN on
 * the same ports starts a new numbering). Before the stack's ISN is known
 * (a RST to a closed port, say), "relative" to it means absolute.
 *
 * A script stops at the first segment mismatch (longjmp back to pd_run),
 * printing the expected and the actual segment and the last events; the
 * ordinary HP_CHECK macros still work inside scripts.
 *
 * Flags are packetdrill's: S SYN, F FIN, R RST, P PSH, . ACK, U URG, E ECE,
 * W CWR. PSH is ignored when comparing (a sender's choice, RFC 9293 3.9.1);
 * in an expected segment, '?' after a flag makes it optional ("R.?": RST,
 * with or without ACK).
 *
 * Option strings, comma separated:
 *   mss N | ws N | sackok | ts VAL ECR | sack L:R [L:R...] | nop | eol | raw HEX
 * Injected: VAL "*" is the peer's clock now (100 + ms since pd_open), ECR
 * "*" the last TSval the stack sent; sack blocks are relative to the
 * stack's ISN; "raw" bytes (with nop/eol) make the harness lay the options
 * out by hand, in the order given, instead of hp_tcp_emit's layout.
 * NULL for an injected segment means: the timestamp option "ts * *" if
 * timestamps were negotiated on this connection, else nothing.
 * Expected: the set of options must match (order and padding ignored);
 * "*" matches any value; TSval "+N" is the previous TSval the stack sent
 * plus N; TSecr "=" is the last TSval the peer sent. NULL does not compare
 * options (the invariants still apply).
 */

#define PD_ANY       INT64_MIN /* a wildcard for seq, ack, win or len */
#define PD_MAX_CONNS 64
#define PD_TRACE     16

/* Options of a typical modern SYN from the peer (what Linux sends). */
#define PD_SYN_OPTS "mss 1460,sackok,ts * 0,nop,ws 7"

/* A TCP segment the stack sent. */
struct pd_seg {
    uint8_t flags;
    uint32_t seq, ack;   /* absolute */
    uint32_t rseq, rack; /* relative to the stack's ISN / the peer's ISN */
    uint16_t win, sport, dport, urg;
    struct hp_tcp_opts opt;
    uint32_t optlen;  /* bytes of options in the header */
    uint32_t len;     /* payload bytes */
    uint8_t *payload; /* malloc'd copy, freed by the harness */
    uint64_t at_ms;   /* when it was sent, ms since pd_open */
    int conn;         /* index in pd.conn */
    uint8_t ecn;      /* the IP header's ECN field (RFC 3168 5: 2 is ECT(0), 3 CE) */
    bool df;          /* IPv4 Don't Fragment */
};

/* What the harness knows about one connection (keyed by the peer's port). */
struct pd_conn {
    uint16_t rport; /* the peer's (the test's) port */
    uint16_t lport; /* the stack's port (learned from its SYN when it connects) */
    uint32_t peer_isn, our_isn;
    bool isn_known;
    bool peer_syn_seen, stack_syn_seen;
    struct hp_tcp_opts peer_syn, stack_syn; /* options of each side's SYN */
    uint32_t last_tsval;                    /* the last TSval the stack sent */
    bool tsval_seen;
    uint32_t ts_offset;       /* the stack's TSval minus ms since pd_open */
    bool ts_offset_syn;       /* the stack sent a SYN-ACK: its clock may lag 63 ms (tcp_cookie.h) */
    uint64_t last_ts_ms;      /* when last_tsval was sent */
    uint32_t last_peer_tsval; /* the last TSval the peer (the script) sent */
    uint32_t peer_ts_base;    /* the peer's clock: base + ms since pd_open */
    uint64_t tx_off;          /* the stack's outbound stream: next offset pd_send writes */
    uint64_t rx_off;          /* the peer's stream: next offset pd_read expects */
    bool check_payload;       /* captured payloads must follow the pattern (default) */
    /* invariants */
    uint32_t rwnd_edge; /* right edge of the window the stack advertised */
    bool rwnd_edge_known;
    uint32_t last_ack_out; /* the stack's last ACK */
    bool ack_out_known;
    uint32_t peer_edge; /* right edge of the window the peer advertised */
    bool peer_edge_known;
    unsigned complaints; /* invariant failures reported (capped) */
};

struct pd {
    int family; /* 4 or 6 */
    const char *script;
    struct hp_link *end[2]; /* end[0]: the stack's; end[1]: the peer's */
    struct hp_pool *pool;
    struct hp_stack *s;
    uint8_t mac[6]; /* the stack's */
    const uint8_t *our_ip, *peer_ip;
    uint64_t t0_ns, now_ns; /* the virtual clock */
    uint16_t mss;           /* the MSS the stack announces (MTU - 40 / - 60) */
    struct pd_conn conn[PD_MAX_CONNS];
    int nconn;
    struct pd_conn *c; /* the connection the script talks on */
    struct pd_seg *q;  /* captured, not yet consumed */
    unsigned qhead, qlen, qcap;
    struct pd_seg last; /* the segment the last pd_expect matched (payload freed) */
    uint16_t ip_ident;
    char trace[PD_TRACE][200];
    unsigned ntrace;
    struct {
        void *user;
        uint32_t ev;
    } evs[64];
    int nevs;
    uint64_t arp_answered, ns_answered, other_frames;
    uint8_t cur_ecn; /* of the frame being captured */
    bool cur_df;
    bool hold;        /* pd_in leaves its frame in the link: pd_pump then hands the
                * frames held over in one receive burst */
    const char *file; /* the script line being run, for messages */
    int line;
    jmp_buf *jb;
};

/* ---- running scripts ------------------------------------------------------- */

#define PD_V4   1
#define PD_V6   2
#define PD_BOTH (PD_V4 | PD_V6)

typedef void (*pd_script_fn)(struct pd *h);

/* Run fn once per family in `families`, each time on a fresh stack;
 * checks after each run that no buffer is in use. */
void pd_run(pd_script_fn fn, const char *name, int families);

/* A test whose body is a script run over IPv4 and then IPv6. */
#define PD_TEST_F(name, families)                                                                  \
    static void pd_script_##name(struct pd *h);                                                    \
    HP_TEST(name)                                                                                  \
    {                                                                                              \
        pd_run(pd_script_##name, #name, families);                                                 \
    }                                                                                              \
    static void pd_script_##name(struct pd *h)
#define PD_TEST(name) PD_TEST_F(name, PD_BOTH)

/* Set up / tear down by hand (pd_run does both). 0 or -1. */
int pd_open(struct pd *h, int family);
void pd_close(struct pd *h);

/* ---- the script's steps (macros record the caller's line) -------------------- */

#define pd_in(h, fl, seq, ack, win, opts)                                                          \
    pd__in(h, __FILE__, __LINE__, fl, seq, ack, win, 0, opts, 0)
#define pd_in_data(h, fl, seq, ack, win, len, opts)                                                \
    pd__in(h, __FILE__, __LINE__, fl, seq, ack, win, len, opts, 0)
/* Mutations of an injected segment. */
#define PD_MUT_BAD_CKSUM 0x1u /* flip the TCP checksum */
#define PD_MUT_NO_REBASE 0x2u /* a SYN that does not start a new incarnation (an attack, a stray) */
#define PD_MUT_RESERVED  0x4u /* set the three reserved header bits */
#define PD_MUT_DOFF4     0x8u /* a data offset of 4 words (below the header) */
#define PD_MUT_CE        0x10u /* the IP header marked CE, Congestion Experienced (RFC 3168 5) */
#define pd_in_mut(h, fl, seq, ack, win, len, opts, mut)                                            \
    pd__in(h, __FILE__, __LINE__, fl, seq, ack, win, len, opts, mut)
#define pd_expect(h, fl, seq, ack, win, opts)                                                      \
    pd__expect(h, __FILE__, __LINE__, fl, seq, ack, win, 0, opts)
#define pd_expect_data(h, fl, seq, ack, win, len, opts)                                            \
    pd__expect(h, __FILE__, __LINE__, fl, seq, ack, win, len, opts)
#define pd_expect_none(h)    pd__expect_none(h, __FILE__, __LINE__)
#define pd_advance_ms(h, ms) pd__advance(h, __FILE__, __LINE__, ms)
/* Fail the script (stops it) with a message. */
#define pd_fail(h, ...) pd__fail(h, __FILE__, __LINE__, __VA_ARGS__)

void pd__in(struct pd *h, const char *file, int line, const char *flags, int64_t seq, int64_t ack,
            int64_t win, uint32_t len, const char *opts, unsigned mut);
/* Pops the next captured segment; returns it (also in h->last). */
const struct pd_seg *pd__expect(struct pd *h, const char *file, int line, const char *flags,
                                int64_t seq, int64_t ack, int64_t win, int64_t len,
                                const char *opts);
void pd__expect_none(struct pd *h, const char *file, int line);
void pd__advance(struct pd *h, const char *file, int line, uint64_t ms);
void pd__fail(struct pd *h, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

/* Poll the stack until nothing moves (no time passes). */
void pd_pump(struct pd *h);
/* The next captured segment, not consumed (after a pump), or NULL. */
const struct pd_seg *pd_peek(struct pd *h);
/* Ms since pd_open. */
uint64_t pd_now_ms(const struct pd *h);
/* Drop every captured segment not yet consumed; returns how many. */
unsigned pd_discard(struct pd *h);

/* ---- connections ------------------------------------------------------------- */

/* Switch the script to the connection with the peer's port rport (a new
 * context when there is none yet); its peer ISN becomes `peer_isn` unless
 * the script already sent a SYN on it. */
struct pd_conn *pd_use(struct pd *h, uint16_t rport, uint32_t peer_isn);
/* Timestamps / window scaling negotiated on h->c (both SYNs carried them). */
bool pd_ts_ok(const struct pd_conn *c);
bool pd_ws_ok(const struct pd_conn *c);
/* Payload bytes of a full-sized segment the peer sends (the stack's MSS
 * less 12 with timestamps, RFC 6691). */
uint32_t pd_full(const struct pd *h);
/* The peer's clock now. */
uint32_t pd_peer_tsval(const struct pd *h);

/* The peer's / our endpoint. */
struct hp_sockaddr pd_peer_addr(const struct pd *h, uint16_t port);
struct hp_sockaddr pd_our_addr(const struct pd *h, uint16_t port);

/* A listener on our any-address:port, with the TCP config already set. */
struct hp_tcp_sock *pd_listen(struct pd *h, uint16_t port, int backlog);
/* hp_tcp_configure, failing the script on error. */
void pd_configure(struct pd *h, const struct hp_tcp_config *cfg);
/* A socket connecting to the peer's h->c->rport (the SYN is not consumed). */
struct hp_tcp_sock *pd_connect(struct pd *h, void *user);

/* Handshakes to ESTABLISHED on h->c, every segment checked; NULL opts:
 * PD_SYN_OPTS. The returned socket belongs to the script. */
#define pd_passive_open(h, l, opts) pd__passive_open(h, __FILE__, __LINE__, l, opts)
#define pd_active_open(h, opts)     pd__active_open(h, __FILE__, __LINE__, opts)
#define pd_established(h, l)        pd__passive_open(h, __FILE__, __LINE__, l, NULL)
struct hp_tcp_sock *pd__passive_open(struct pd *h, const char *file, int line,
                                     struct hp_tcp_sock *listener, const char *opts);
struct hp_tcp_sock *pd__active_open(struct pd *h, const char *file, int line, const char *opts);

/* Data. The byte at offset i of a stream is pd_pattern(dir, i): dir 0 for
 * the stack's outbound stream, 1 for the peer's. */
uint8_t pd_pattern(int dir, uint64_t off);
/* hp_tcp_send of the next len bytes of the outbound stream; returns what
 * hp_tcp_send returned (the stream advances by what was taken). */
long pd_send(struct pd *h, struct hp_tcp_sock *t, uint32_t len);
/* hp_tcp_sendv of n (<= 8) pieces of lens[k] bytes, the pattern continuing
 * across them. @return hp_tcp_sendv's */
long pd_sendv(struct pd *h, struct hp_tcp_sock *t, const uint32_t *lens, int n);
/* hp_tcp_recv of up to len bytes, checked against the peer's stream;
 * returns what hp_tcp_recv returned. */
long pd_read(struct pd *h, struct hp_tcp_sock *t, uint32_t len);

/* The peer's side sends an ICMP "too big" (IPv4 fragmentation needed with
 * next-hop MTU mtu, or ICMPv6 Packet Too Big) quoting a segment of h->c
 * the stack sent: seq relative to the stack's ISN, len payload bytes. */
void pd_icmp_too_big(struct pd *h, uint32_t mtu, int64_t seq, uint32_t len);

/* Events raised for `user` since the last call (edge-triggered, ORed). */
uint32_t pd_events(struct pd *h, void *user);

/* A counter of the stack. */
static inline uint64_t pd_ctr(const struct pd *h, enum hp_stack_ctr c)
{
    return hp_stack_counter(h->s, c);
}

/* Stack info of a socket (fails the check if hp_tcp_get_info fails). */
struct hp_tcp_info pd_info(struct pd *h, const struct hp_tcp_sock *t);

#endif
