/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP sockets on an hp_stack (RFC 9293 and companions): non-blocking listen, accept, connect, send, recv, shutdown, close, options, IPv4 and IPv6. */
#ifndef HOTPATH_TCP_H
#define HOTPATH_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <hotpath/buf.h>
#include <hotpath/sock.h>
#include <hotpath/stack.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A TCP socket belongs to one stack and is used from the stack's thread,
 * like everything on a stack. Every call is non-blocking: -EAGAIN when
 * nothing can be done now; wait for readiness through hp_stack_events():
 *
 *   HP_EV_IN   a listener has a connection to accept; a connection has
 *              data to receive, or the peer's FIN (hp_tcp_recv returns 0)
 *   HP_EV_OUT  a connect() completed; room in the send buffer again (at
 *              least max(sndbuf / 4, MSS) bytes free, after a send that
 *              could not take everything)
 *   HP_EV_ERR  the connection failed (reset, timeout, refused): read the
 *              reason with hp_tcp_error()
 *   HP_EV_HUP  the connection is over in both directions (closed or reset)
 *
 * Events are edge-triggered: each is reported once per change. The state
 * behind them can be read at any time with hp_tcp_poll().
 *
 * A socket is a listener or a connection, never both. After hp_tcp_close()
 * the handle is gone; the connection may live on inside the stack to
 * deliver what was sent and close in order (FIN_WAIT, TIME_WAIT), as a
 * kernel's orphaned sockets do. hp_stack_destroy() frees everything.
 *
 * Loss recovery and congestion control: SACK (RFC 2018) and D-SACK (RFC
 * 2883) both ways, the RFC 6675 scoreboard with RACK-TLP (RFC 8985) and
 * PRR (RFC 6937), CUBIC (RFC 9438) with HyStart++ (RFC 9406) or NewReno;
 * ECN (RFC 3168); path MTU discovery with DF (RFC 1191, RFC 8201, checked
 * as RFC 5927 says) and black hole probing (RFC 4821). Knobs in struct
 * hp_tcp_config, docs/knobs.md.
 *
 * Not implemented, by choice or not yet: the urgent mechanism (RFC 9293
 * 3.8.5: URG and the urgent pointer are ignored, so urgent data arrives
 * inline, in order, as RFC 6093 recommends; we never send URG); pacing;
 * the rescue retransmission of RFC 6675 4 (NextSeg rules 3-4: RACK-TLP
 * covers tail losses); SACK with SYN cookies (a cookie connection offers
 * nothing but the MSS); F-RTO (RFC 5682; a D-SACK undoes a spurious
 * timeout instead); raising a path MTU that ICMP lowered (RFC 8201 4's
 * periodic increase); ICMP errors other than "too big" (soft errors,
 * RFC 5461) do not reach connections.
 */
struct hp_tcp_sock;

/** RFC 9293 section 3.3.2 states. */
enum hp_tcp_state {
    HP_TCP_CLOSED = 0,
    HP_TCP_LISTEN,
    HP_TCP_SYN_SENT,
    HP_TCP_SYN_RECEIVED,
    HP_TCP_ESTABLISHED,
    HP_TCP_FIN_WAIT_1,
    HP_TCP_FIN_WAIT_2,
    HP_TCP_CLOSE_WAIT,
    HP_TCP_CLOSING,
    HP_TCP_LAST_ACK,
    HP_TCP_TIME_WAIT,
};

/** Congestion control algorithms (hp_tcp_config.cc, HP_TCP_OPT_CC). */
enum hp_tcp_cc {
    HP_TCP_CC_DEFAULT = 0, /**< the stack's choice (in the config: CUBIC) */
    HP_TCP_CC_NEWRENO = 1, /**< RFC 5681, RFC 6582, RFC 3465 */
    HP_TCP_CC_CUBIC = 2,   /**< RFC 9438, with HyStart++ (RFC 9406) */
};

/** Explicit Congestion Notification (RFC 3168), hp_tcp_config.ecn. */
enum hp_tcp_ecn {
    HP_TCP_ECN_DEFAULT = 0, /**< HP_TCP_ECN_PASSIVE */
    HP_TCP_ECN_OFF = 1,     /**< never negotiated */
    HP_TCP_ECN_PASSIVE = 2, /**< accepted when a peer's SYN asks for it; our SYNs do not ask */
    HP_TCP_ECN_ON = 3,      /**< asked for in our SYNs and accepted */
};

/**
 * "newreno" or "cubic" (any case) as an enum hp_tcp_cc.
 * @return HP_TCP_CC_NEWRENO, HP_TCP_CC_CUBIC, or -EINVAL (NULL or another name).
 */
HP_API int hp_tcp_cc_by_name(const char *name);

/**
 * Stack-wide TCP parameters (the knobs of docs/knobs.md). A zeroed field
 * asks for its default. Set them with hp_tcp_configure() before the first
 * TCP socket of the stack is opened.
 */
struct hp_tcp_config {
    uint32_t max_conns;      /**< sockets, any state (an unheld TIME_WAIT: a record); 0: 65536 */
    uint32_t sndbuf;         /**< default send buffer in bytes; 0: 262144 */
    uint32_t rcvbuf;         /**< default receive buffer (the most we advertise); 0: 262144 */
    uint32_t ooo_max_segs;   /**< out-of-order segments held per connection; 0: 256 */
    uint32_t delack_ms;      /**< delayed ACK timeout (RFC 9293 3.8.6.3: < 500); 0: 40 */
    uint32_t delack_segs;    /**< ACK at once every this many full-sized segments; 0: 2 */
    uint32_t rto_min_ms;     /**< lower bound of the RTO; 0: 200 (Linux; RFC 6298 says 1000) */
    uint32_t rto_max_ms;     /**< upper bound of the RTO; 0: 60000 */
    uint32_t rto_initial_ms; /**< before the first RTT sample (RFC 6298 2.1); 0: 1000 */
    uint32_t syn_retries;    /**< SYN retransmissions before connect gives up; 0: 7 (183 s,
                                    RFC 9293 3.8.3: at least 3 min) */
    uint32_t synack_retries; /**< SYN-ACK retransmissions before a half-open passive
                                    connection is dropped (Linux's tcp_synack_retries);
                                    0: 5 (it goes 63 s after the SYN) */
    uint32_t
        data_retries; /**< retransmissions of one segment before the connection is dropped (RFC 9293 3.8.3 R2); 0: 15 */
    uint32_t time_wait_ms; /**< TIME_WAIT (2 MSL); 0: 60000 */
    uint32_t fin_wait2_ms; /**< an orphaned FIN_WAIT_2 waits this long for the peer's FIN; 0: 60000 */
    uint32_t
        keepalive_idle_s; /**< idle time before the first keepalive probe (RFC 9293 3.8.4: >= 2 h); 0: 7200 */
    uint32_t keepalive_intvl_s;     /**< between probes; 0: 75 */
    uint32_t keepalive_probes;      /**< unanswered probes before the connection is dropped; 0: 9 */
    uint32_t challenge_ack_limit;   /**< RFC 5961 challenge ACKs per second, stack-wide, on
                                       average: each second's budget is drawn at random from
                                       [limit/2, 3*limit/2) (CVE-2016-5696); 0: 1000;
                                       UINT32_MAX: no stack-wide limit */
    uint32_t challenge_ack_conn_ms; /**< at most one challenge ACK per connection in this many ms
                                         (Linux's tcp_invalid_ratelimit); 0: 500 */
    uint32_t syn_backlog_max;       /**< upper bound of every listen backlog; 0: 4096 */
    uint32_t
        early_demux_conns; /**< from this many connections on, each receive burst is demultiplexed
                                    ahead of its processing: its tuples hashed and the table buckets and
                                    the connections' hot cache lines prefetched (docs/knobs.md);
                                    0: 16384; UINT32_MAX: never */
    uint16_t mss; /**< our MSS when smaller than the interface's MTU allows; 0: from the MTU */
    uint8_t cc;   /**< congestion control, enum hp_tcp_cc; 0: HP_TCP_CC_CUBIC */
    uint8_t ecn; /**< enum hp_tcp_ecn; 0: HP_TCP_ECN_PASSIVE (accept when the peer asks, as Linux) */
    bool no_sack;    /**< neither offer nor accept SACK (RFC 2018): NewReno recovery, no RACK-TLP */
    bool no_pmtud;   /**< IPv4 segments without DF, ICMP "too big" ignored (no RFC 1191 / 8201) */
    bool no_plpmtud; /**< no black hole detection and MTU probing (RFC 4821) */
    bool no_syncookies; /**< never answer with SYN cookies when a SYN queue is full (drop instead) */
    bool no_timestamps;     /**< do not offer RFC 7323 timestamps */
    bool no_window_scaling; /**< do not offer RFC 7323 window scaling */
    bool tw_reuse;          /**< connect() may reuse a 4-tuple in TIME_WAIT (RFC 6191 rules) */
};

/**
 * Set the stack's TCP parameters (copied). @return 0, -EINVAL (a value out
 * of range: rto_min above rto_max, delack_ms >= 500, a buffer below 2048 or
 * above 1 GiB...), -EBUSY (TCP sockets already exist).
 */
HP_API int hp_tcp_configure(struct hp_stack *s, const struct hp_tcp_config *cfg);

/** The parameters in force, defaults filled in. */
HP_API void hp_tcp_get_config(const struct hp_stack *s, struct hp_tcp_config *out);

/**
 * Open a socket of family 4 or 6 on s; `user` comes back in its events.
 * @return the socket (state CLOSED), or NULL with errno EINVAL, ENOMEM or
 *         ENFILE (max_conns reached).
 */
HP_API struct hp_tcp_sock *hp_tcp_open(struct hp_stack *s, int family, void *user);

/**
 * Bind to a local address (all zeros: any of ours) and port (0: an
 * ephemeral one). A port is in use when a listener or another bound,
 * not yet connected socket of the family has it on the same address or
 * either is bound to the any address. Connections do not hold their port
 * against a bind (as with SO_REUSEADDR): their 4-tuples are unique, which
 * connect() checks. IPv4 and IPv6 have separate ports.
 * @return 0, -EADDRINUSE, -EADDRNOTAVAIL (not our address), -EINVAL
 *         (already bound, wrong family, not CLOSED).
 */
HP_API int hp_tcp_bind(struct hp_tcp_sock *t, const struct hp_sockaddr *local);

/**
 * Listen (passive open). backlog bounds both the connections still in the
 * handshake (the SYN queue) and those waiting for hp_tcp_accept(); it is
 * clamped to [1, syn_backlog_max]. When the SYN queue is full, a new SYN
 * takes the place of a stale entry (its SYN-ACK unacknowledged for 3 or 7
 * s, docs/knobs.md),
 * else it is answered with a SYN cookie (RFC 4987 3.6) carrying the
 * options a queued entry would negotiate, unless no_syncookies.
 * Binds to an ephemeral port first if unbound.
 * @return 0, -EINVAL (not CLOSED), -EADDRINUSE.
 */
HP_API int hp_tcp_listen(struct hp_tcp_sock *t, int backlog);

/**
 * Take an established connection from a listener's queue. It gets `user`
 * for its events; peer may be NULL.
 * @return the connection, or NULL with errno EAGAIN (none waiting) or
 *         EINVAL (not a listener).
 */
HP_API struct hp_tcp_sock *hp_tcp_accept(struct hp_tcp_sock *listener, void *user,
                                         struct hp_sockaddr *peer);

/**
 * Active open: send a SYN to remote. Binds to an ephemeral port first if
 * unbound (RFC 6056 algorithm 4; a tuple in TIME_WAIT is reused only with
 * tw_reuse, when the old connection used timestamps and last heard from
 * the peer a second or more ago, as Linux's tcp_tw_reuse). Completion is HP_EV_OUT (state ESTABLISHED); failure is
 * HP_EV_ERR with hp_tcp_error() -ECONNREFUSED or -ETIMEDOUT.
 * A socket connects once: after a failed or finished connection, close it
 * and open another.
 * @return -EINPROGRESS (the normal case), -EHOSTUNREACH (no route),
 *         -EADDRNOTAVAIL (no free port), -EADDRINUSE (bound, and the
 *         4-tuple is in use), -EISCONN, -EALREADY, -EINVAL (also: connected
 *         before, a listener, a zero, multicast or broadcast remote),
 *         -ENETUNREACH (the directed broadcast of one of our IPv4
 *         prefixes, RFC 1122 4.2.3.10), -ENOBUFS (the connection table
 *         is full). A SYN that finds no
 *         buffer is sent by the retransmission timer: still -EINPROGRESS.
 */
HP_API int hp_tcp_connect(struct hp_tcp_sock *t, const struct hp_sockaddr *remote);

/**
 * Queue up to len bytes for sending (copied). Data may be queued before
 * the handshake ends (it goes once the connection is established).
 * @return the bytes taken (> 0, possibly fewer than len), -EAGAIN (the
 *         send buffer is full: wait for HP_EV_OUT), -ENOTCONN (not
 *         connected or connecting), -EPIPE (sending was shut down, or the
 *         peer reset: the error is reported once as -ECONNRESET first).
 *         -EAGAIN also when the interface's buffer pool is empty (counted
 *         in TCP_NO_BUFFERS). Whenever less than len was taken, HP_EV_OUT
 *         follows when room is back.
 */
HP_API long hp_tcp_send(struct hp_tcp_sock *t, const void *data, size_t len);

/**
 * Gather send (writev): queue the pieces of iov in order, as much as the
 * send buffer takes, then transmit once, so that pieces written together
 * share segments (a header and a body in one segment, as Linux sends a
 * writev) instead of a segment each, as one hp_tcp_send() per piece would
 * give on a NODELAY connection.
 * @return the bytes taken (> 0; fewer than the total when the buffer
 *         filled: HP_EV_OUT follows), 0 for an empty iov, -EINVAL (t or
 *         iov NULL, iovcnt < 0, a piece with a length and no base, a total
 *         beyond SIZE_MAX), or the errors of hp_tcp_send()
 */
HP_API long hp_tcp_sendv(struct hp_tcp_sock *t, const struct iovec *iov, int iovcnt);

/**
 * Zero-copy send: the stack takes b (a chain, data offset at the payload)
 * as a whole into the send queue, or not at all. The bytes are copied into
 * the segments at transmission, so b needs no headroom.
 * A b larger than the whole send buffer is taken when the queue is empty
 * (else it could never go).
 * @return b's length (the stack owns b), or the errors of hp_tcp_send()
 *         (-EAGAIN when b does not fit the free room; the caller still owns b).
 */
HP_API long hp_tcp_send_buf(struct hp_tcp_sock *t, struct hp_buf *b);

/**
 * Receive up to cap bytes, in order. Data already received is returned
 * before an error. The error is reported once; after it (and after
 * HP_TCP_SHUT_RD, or once the connection closed) the result is 0.
 * @return bytes copied (> 0), 0 at end of stream (the peer's FIN, once
 *         everything before it was read; also for cap 0), -EAGAIN
 *         (nothing yet), -ENOTCONN (never connected, or a listener),
 *         -ECONNRESET / -ETIMEDOUT (the connection failed).
 */
HP_API long hp_tcp_recv(struct hp_tcp_sock *t, void *data, size_t cap);

/**
 * Zero-copy receive: *b gets the next received buffer (data offset at its
 * payload; one segment's worth or more); the caller owns it.
 * @return its length, 0 at end of stream (*b NULL), or the errors of
 *         hp_tcp_recv().
 */
HP_API long hp_tcp_recv_buf(struct hp_tcp_sock *t, struct hp_buf **b);

#define HP_TCP_SHUT_RD 0x1 /**< discard further data (the peer is not told) */
#define HP_TCP_SHUT_WR 0x2 /**< send a FIN after the queued data (half-close) */

/**
 * Shut down one or both directions. HP_TCP_SHUT_WR during the handshake:
 * in SYN_SENT the connection is abandoned with nothing sent (RFC 9293
 * 3.10.4: state CLOSED, HP_EV_HUP); in SYN_RECEIVED the FIN waits for
 * ESTABLISHED. @return 0, -ENOTCONN (CLOSED or a listener), -EINVAL.
 */
HP_API int hp_tcp_shutdown(struct hp_tcp_sock *t, int how);

/**
 * Close the handle. A connection sends what is queued and then a FIN, and
 * finishes closing inside the stack; with unread received data (RFC 9293
 * 3.10.4 leaves it open; like Linux) or HP_TCP_OPT_LINGER0, it is reset
 * at once instead. A listener resets the connections in its queues.
 * NULL is a no-op. @return 0.
 */
HP_API int hp_tcp_close(struct hp_tcp_sock *t);

/** Reset the connection at once (RFC 9293 3.10.5 ABORT) and close the handle. NULL is a no-op. @return 0. */
HP_API int hp_tcp_abort(struct hp_tcp_sock *t);

/**
 * Per-socket options. Their values start at 0x100, above every TCP option
 * kind of the wire layer (HP_TCP_KIND_*, one byte), so that a kind passed
 * here by mistake is refused with -EINVAL instead of setting another option.
 */
enum hp_tcp_opt {
    HP_TCP_OPT_NODELAY = 0x100, /**< 1: no Nagle (RFC 9293 3.7.4); default 0 */
    HP_TCP_OPT_SNDBUF,          /**< send buffer bytes (2048 .. 1 GiB) */
    HP_TCP_OPT_RCVBUF, /**< receive buffer bytes (2048 .. 1 GiB); set before connect/listen for the window scale */
    HP_TCP_OPT_KEEPALIVE, /**< 1: send keepalive probes (RFC 9293 3.8.4); default 0 */
    HP_TCP_OPT_KEEPIDLE,  /**< seconds idle before the first probe */
    HP_TCP_OPT_KEEPINTVL, /**< seconds between probes */
    HP_TCP_OPT_KEEPCNT,   /**< probes before giving up */
    HP_TCP_OPT_LINGER0,   /**< 1: hp_tcp_close() resets instead of closing in order */
    HP_TCP_OPT_QUICKACK,  /**< 1: acknowledge every segment at once (no delayed ACK) */
    HP_TCP_OPT_MAXSEG,    /**< our MSS (88 .. 65495), before connect/listen (a listener's
                              * connections take it); read once connected: the MSS we send with */
    HP_TCP_OPT_CC,        /**< congestion control, enum hp_tcp_cc (HP_TCP_CC_DEFAULT: the
                              * stack's); any time: an established connection keeps its cwnd and
                              * ssthresh; a listener's connections take it */
};

/** Set an option. @return 0, -EINVAL (unknown option or value out of range). */
HP_API int hp_tcp_setopt(struct hp_tcp_sock *t, enum hp_tcp_opt opt, long value);
/** Read an option. @return 0 with *value set, or -EINVAL. */
HP_API int hp_tcp_getopt(const struct hp_tcp_sock *t, enum hp_tcp_opt opt, long *value);

/** HP_EV_* bits that hold now (level-triggered view). */
HP_API uint32_t hp_tcp_poll(const struct hp_tcp_sock *t);

/** The pending error (-ECONNRESET, -ECONNREFUSED, -ETIMEDOUT...), cleared by reading; 0 if none. */
HP_API int hp_tcp_error(struct hp_tcp_sock *t);

HP_API enum hp_tcp_state hp_tcp_state(const struct hp_tcp_sock *t);
/** "ESTABLISHED", ... ; "?" for a value out of range. */
HP_API const char *hp_tcp_state_name(int state);

/** Local and remote endpoints (address and port zeros when not bound /
 * not connected or connecting; family is the socket's). */
HP_API void hp_tcp_local(const struct hp_tcp_sock *t, struct hp_sockaddr *out);
HP_API void hp_tcp_peer(const struct hp_tcp_sock *t, struct hp_sockaddr *out);

/** A connection's counters and estimates, like Linux's struct tcp_info. */
struct hp_tcp_info {
    uint8_t state;     /**< enum hp_tcp_state */
    bool ts_ok, ws_ok; /**< timestamps / window scaling in use */
    uint8_t snd_wscale, rcv_wscale;
    uint32_t snd_mss, rcv_mss;
    uint32_t rto_us, srtt_us, rttvar_us;
    uint32_t cwnd, ssthresh;   /**< bytes */
    uint32_t snd_wnd, rcv_wnd; /**< bytes */
    uint32_t unacked;          /**< bytes sent, not yet acknowledged */
    uint32_t sndq, rcvq;       /**< bytes queued to send (sent or not) / to read */
    uint32_t ooo_segs;         /**< out-of-order segments held */
    uint64_t bytes_sent, bytes_acked, bytes_received;
    uint64_t segs_out, segs_in, retrans_segs;
    uint32_t fast_retrans, timeouts, dupacks_in;
    bool sack_ok, ecn_ok; /**< SACK (RFC 2018) / ECN (RFC 3168) negotiated */
    uint8_t cc;           /**< enum hp_tcp_cc in use */
    uint32_t pmtu;        /**< the path MTU our segments are sized for */
    uint32_t min_rtt_us;  /**< RACK's recent minimum RTT (0: none yet) */
    uint32_t sacked,
        lost; /**< bytes SACKed / deemed lost, not yet acknowledged (RFC 6675 scoreboard) */
    uint32_t reordering;     /**< the deepest reordering seen, in segments (3 until more is seen) */
    uint64_t delivery_rate;  /**< bytes/s delivered over the last round trip that had more than one
                                      segment in flight with SACK (0: none measured) */
    uint32_t recoveries;     /**< fast recoveries entered (SACK or NewReno) */
    uint32_t tlp_probes;     /**< tail loss probes sent (RFC 8985 7) */
    uint32_t dsacks_in;      /**< D-SACK blocks received (RFC 2883) */
    uint32_t spurious_undos; /**< reductions undone: every retransmission was a duplicate */
    uint32_t ecn_ce_in;      /**< segments received with CE (RFC 3168) */
    uint32_t ecn_reductions; /**< window reductions for ECN echoes */
    uint32_t pmtu_probes;    /**< path MTU probes sent (RFC 4821) */
};

/** Fill *out. @return 0, or -EINVAL. */
HP_API int hp_tcp_get_info(const struct hp_tcp_sock *t, struct hp_tcp_info *out);

#ifdef __cplusplus
}
#endif
#endif
