/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP applications on a stack, shared by serve, connect and the benchmarks: echo / discard / source servers, a verifying client, the byte pattern. */
#ifndef HOTPATH_TOOL_TCP_APP_H
#define HOTPATH_TOOL_TCP_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hotpath/sock.h>
#include <hotpath/stack.h>
#include <hotpath/tcp.h>

/* ---- services --------------------------------------------------------------- */

enum tcp_mode { TCP_ECHO = 0, TCP_DISCARD, TCP_SOURCE, TCP_NMODES };
/* "echo", "discard", "source". */
const char *tcp_mode_name(int mode);
/* The mode named s, or -1. */
int tcp_mode_parse(const char *s);

/* ---- the byte pattern ------------------------------------------------------- */

/* Every connection's bytes are a deterministic pseudo-random stream: the
 * 64-bit word k of the stream with seed s is splitmix64(s + k * golden),
 * little-endian, so any offset can be made or checked on its own. Client
 * connection i sends the stream of tcp_pattern_seed(i); a source server
 * sends the stream of TCP_SOURCE_SEED on every connection. */
#define TCP_SOURCE_SEED 0x736f757263652121ull
uint64_t tcp_pattern_seed(uint32_t conn_index);
void tcp_pattern_fill(uint64_t seed, uint64_t off, void *dst, size_t len);
/* The index of the first byte of src[0 .. len) that is not the stream's
 * byte at off + index, or -1 when all are. scratch: len bytes. */
long tcp_pattern_check(uint64_t seed, uint64_t off, const void *src, size_t len, void *scratch);

/* ---- event dispatch ---------------------------------------------------------- */

/* The user pointer of every TCP socket these applications open points to a
 * structure that starts with this tag; other sockets of the same stack
 * (UDP) are their owner's, with a user pointer that is not one of these. */
struct tcp_obj {
    uint32_t kind;
};

/* Hand one socket event (an HP_LOOP_SOCK event of the stack's loop, or one
 * of hp_stack_events()) to its server or client.
 * @return false when user is not one of theirs (NULL or another owner's:
 *         nothing was done). */
bool tcp_app_event(void *user, uint32_t events);

/* ---- servers ---------------------------------------------------------------- */

struct tcp_srv_stats {
    uint64_t open;     /* connections with a handle now */
    uint64_t accepted; /* since the start */
    uint64_t closed;   /* closed in order (the peer's FIN seen, ours sent) */
    uint64_t failed;   /* reset, timed out, or any other error */
    uint64_t bytes_in, bytes_out;
    uint64_t listeners;
};

struct tcp_srv;

/* Servers on stack s (none listening yet). NULL on no memory. */
struct tcp_srv *tcp_srv_new(struct hp_stack *s);
/*
 * Listen on port for family 4 or 6 (any of the stack's addresses) and serve
 * mode on every connection:
 *   echo     send back everything, in order, keeping what hp_tcp_send does
 *            not take until HP_EV_OUT; after the peer's FIN, echo the rest
 *            and then send ours (half-close);
 *   discard  read and drop; close after the peer's FIN;
 *   source   send the TCP_SOURCE_SEED stream until the peer's FIN (what the
 *            peer sends is read and dropped).
 * sockbuf: SNDBUF/RCVBUF of the listener (inherited), 0 for the default.
 * @return 0, or -errno of hp_tcp_open / bind / listen.
 */
int tcp_srv_listen(struct tcp_srv *v, int mode, uint16_t port, int family, uint32_t sockbuf);
void tcp_srv_get_stats(const struct tcp_srv *v, struct tcp_srv_stats *out);
/* Close every socket and free v (NULL: no-op). */
void tcp_srv_free(struct tcp_srv *v);

/* ---- the verifying client ----------------------------------------------------- */

struct tcp_cli_opts {
    struct hp_sockaddr to;   /* the server */
    int mode;                /* what the server does: echo, discard, source */
    uint64_t bytes;          /* per connection: to send (echo, discard) or to read
                              * (source); 0: until `deadline` */
    double deadline;         /* tool_now_s() time at which sending (reading)
                              * stops in timed mode; with bytes: a time limit
                              * (0: none) */
    double stall_s;          /* a connection without progress this long fails; 0: 20 s
                              * (beyond a few RTO back-offs) */
    unsigned conns;          /* connections */
    unsigned max_connecting; /* handshakes in progress at once; 0: 32 */
    uint32_t sockbuf;        /* SNDBUF and RCVBUF of each socket; 0: the stack's */
    bool hash;               /* SHA-256 of what each connection sent and received */
    uint32_t first_index;    /* the first connection's number (its pattern seed) */
};

struct tcp_cli_conn {
    uint64_t sent, received;
    double seconds; /* from connect() to the end */
    uint16_t local_port;
    bool done, ok;
    char sha_sent[65], sha_received[65]; /* hex, "" without hashing */
    char why[120];                       /* on failure */
};

struct tcp_cli_totals {
    uint64_t sent, received;
    unsigned started, established, done, ok, failed;
};

struct tcp_cli;

/* A client on stack s; nothing is sent before tcp_cli_step. NULL with errno. */
struct tcp_cli *tcp_cli_new(struct hp_stack *s, const struct tcp_cli_opts *o);
/* Start connections (at most max_connecting in their handshake), end
 * timed sending at the deadline, fail stalled connections. Call after
 * each batch of events, and now and then (a timer) without any. */
void tcp_cli_step(struct tcp_cli *c, double now);
bool tcp_cli_done(const struct tcp_cli *c);
void tcp_cli_totals(const struct tcp_cli *c, struct tcp_cli_totals *out);
/* Fail every connection not done yet with `why` (time is up). */
void tcp_cli_finish(struct tcp_cli *c, double now, const char *why);
const struct tcp_cli_conn *tcp_cli_conn(const struct tcp_cli *c, unsigned i);
/* Abort what is still open and free c (NULL: no-op). */
void tcp_cli_free(struct tcp_cli *c);

#endif
