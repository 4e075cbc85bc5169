/* SPDX-License-Identifier: BSD-3-Clause */
/* The peers harness: one driver runs the same workloads on any C TCP/IP stack given as a table of operations (hotpath, lwIP): two instances joined in memory, one thread polling both. */
#ifndef HOTPATH_PEERS_HARNESS_H
#define HOTPATH_PEERS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The workloads, the same for every stack (the smoltcp driver in
 * bench/peers/smoltcp/ runs them too, under the same names):
 *   tcp_rr_1      1 byte each way on one connection: CPU ns per transaction
 *   tcp_rr_1000   the same on 1,000 connections, one request outstanding on each
 *   tcp_bulk      one connection, the client writing as fast as it can: Gbit/s
 *                 per CPU second (MTU 1500)
 *   tcp_crr       open, 64-byte request, 64-byte response, close (the client
 *                 first), 16 at a time: connections per CPU second
 *   udp_echo      64-byte datagrams echoed, 64 in flight: echoes per CPU second
 *   idle_rss      10,000 established idle connections: the process's RSS
 *                 growth per connection endpoint (both instances hold one)
 *   idle_accounted  the same, the bytes the stack itself accounts for them
 *   idle_held     the larger of the two (derived by the report): what the
 *                 stack holds for an idle connection, preallocated or not
 */
enum ph_workload { PH_RR1, PH_RR1K, PH_BULK, PH_CRR, PH_UDP, PH_IDLE, PH_NWORK };

#define PH_PORT       5201  /* TCP listener of the server side */
#define PH_UDP_PORT   7     /* UDP echo port of both sides */
#define PH_RR_FLOWS   1000  /* connections of tcp_rr_1000 */
#define PH_CRR_PAR    16    /* connections in flight in tcp_crr */
#define PH_CRR_MAX    12000 /* a round's connections: below the 16,384 ephemeral ports */
#define PH_CRR_WARM   1000  /* of them, unmeasured */
#define PH_CRR_MSG    64
#define PH_UDP_WINDOW 64
#define PH_UDP_MSG    64
#define PH_IDLE_CONNS 10000
#define PH_BULK_CHUNK (128 * 1024) /* bytes per send call (iperf3's default) */

/* Addresses: side 0 (the client) 198.18.0.1, side 1 (the server) 198.18.0.2. */
extern const uint8_t ph_addr[2][4];
extern const uint8_t ph_mac[2][6];

struct ph_conn; /* a connection of some stack, opaque to the workloads */
struct ph_pair; /* two instances of a stack and the wire between them */

/* What a stack calls back into the workload, from inside its poll. */
struct ph_app {
    /* Side 1 has a new connection; returns the user pointer it will carry. */
    void *(*accepted)(struct ph_app *a, struct ph_conn *c);
    /* A connection of side 0 is established. */
    void (*connected)(struct ph_app *a, struct ph_conn *c, void *user);
    /* Bytes received in order (n > 0), or the peer's FIN (n == 0). The
     * data is valid during the call only. */
    void (*recv)(struct ph_app *a, struct ph_conn *c, void *user, const void *p, size_t n);
    /* Room in the send buffer again after a send that took less than asked. */
    void (*sendable)(struct ph_app *a, struct ph_conn *c, void *user);
    /* The connection failed or was reset: its handle is gone. */
    void (*failed)(struct ph_app *a, void *user, int err);
    /* A datagram arrived on side's UDP socket. */
    void (*udp)(struct ph_app *a, int side, const void *p, size_t n);
};

/* What the stack's rows need from its configuration. */
struct ph_cfg {
    enum ph_workload w;
    uint32_t max_conns; /* connections each instance must hold at once */
};

/* A stack, as the driver uses it. Every call comes from the one thread. */
struct ph_ops {
    const char *name;
    /* Version and build, for the report. */
    const char *(*version)(void);
    /* Two instances joined by an in-memory wire. NULL with why filled. */
    struct ph_pair *(*open)(const struct ph_cfg *cfg, struct ph_app *app, char *why, size_t len);
    void (*close)(struct ph_pair *p);
    /* One round of side's instance: receive, process, run timers, transmit;
     * the callbacks run inside. */
    void (*poll)(struct ph_pair *p, int side);
    /* Side 1 listens on PH_PORT. 0 or -errno. */
    int (*listen)(struct ph_pair *p, int backlog);
    /* Side 0 opens a connection to side 1's PH_PORT carrying user;
     * connected() or failed() follows. 0 or -errno. */
    int (*connect)(struct ph_pair *p, void *user);
    /* Queue bytes (copied). @return bytes taken (0: full, sendable()
     * follows), or -errno. */
    long (*send)(struct ph_conn *c, const void *d, size_t n);
    /* Orderly close (FIN); the handle is gone, no callback for it follows. */
    void (*close_conn)(struct ph_conn *c);
    /* Both sides bind a UDP socket to PH_UDP_PORT. 0 or -errno. */
    int (*udp_open)(struct ph_pair *p);
    /* Side sends a datagram to the other side's PH_UDP_PORT. 0 or -errno. */
    int (*udp_send)(struct ph_pair *p, int side, const void *d, size_t n);
    /* Bytes the stack accounts to its TCP connections (both instances),
     * and how many connections it holds. */
    uint64_t (*conn_bytes)(struct ph_pair *p, uint64_t *conns);
    /* Frames that crossed the wire, both directions. */
    uint64_t (*frames)(struct ph_pair *p);
};

/* One measurement. */
struct ph_result {
    bool ok;
    double value; /* in unit */
    const char *unit;
    uint64_t count;  /* transactions, bytes, connections, echoes, endpoints */
    uint64_t frames; /* frames on the wire in the measured interval */
    double cpu_s;    /* thread CPU time of the interval */
    double seconds;  /* its wall time */
    char why[200];   /* when !ok */
};

struct ph_run_opts {
    double warm_s;  /* unmeasured, before the window */
    double seconds; /* the measured window */
    int cpu;        /* pin here (-1: leave) */
};

/* Names, units and whether a larger value is better, per result. The idle
 * workload gives two results, idle_rss and idle_accounted, and the report
 * derives a third, idle_held. */
#define PH_NRESULT (PH_NWORK + 2)
const char *ph_result_name(int r);
const char *ph_result_unit(int r);
bool ph_result_higher_better(int r);
int ph_result_find(const char *name);

/* Run workload w on a stack; for PH_IDLE res[0] is idle_rss and res[1]
 * idle_accounted, else res[0] alone. */
void ph_run(const struct ph_ops *ops, enum ph_workload w, const struct ph_run_opts *o,
            struct ph_result res[2]);

/* The stacks this binary has: hotpath always, lwIP when built (HP_HAVE_LWIP). */
extern const struct ph_ops ph_hotpath_ops;
#ifdef HP_HAVE_LWIP
extern const struct ph_ops ph_lwip_ops;
#endif

/* Resident set size of this process in bytes (/proc/self/statm). */
uint64_t ph_rss_bytes(void);

#endif
