/* SPDX-License-Identifier: BSD-3-Clause */
/* The stack: interfaces, addresses, routes, neighbours, IPv4/IPv6, ICMP, timers and the poll loop. */
#ifndef HOTPATH_STACK_H
#define HOTPATH_STACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <hotpath/common.h>
#include <hotpath/link.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * An hp_stack runs on one thread: every call on a stack, its interfaces and
 * its sockets comes from that thread (run to completion: no locks inside).
 * hp_stack_poll() receives a burst from each interface, processes it, runs
 * the timers that are due and flushes what was queued for transmission.
 * What the application sends between polls goes to the link at once when
 * the link sends without a system call (mem: no HP_LINK_CAP_KERNEL), and
 * waits for the next poll's flush otherwise (one system call per burst).
 */
struct hp_stack;

/** IPv6 addresses are usable at once (no duplicate address detection) */
#define HP_STACK_F_NO_DAD 0x1
/**
 * ARP (like Linux's arp_accept for updates): an unsolicited reply, a
 * gratuitous ARP or a request may replace the MAC of a REACHABLE entry.
 * Without it, only an entry we are resolving or probing, or one no longer
 * REACHABLE, takes a new MAC (docs/knobs.md).
 */
#define HP_STACK_F_ARP_ACCEPT 0x2
/**
 * NDP: an advertisement we did not ask for with the override flag, or a
 * solicitation's source link-layer option, may replace the MAC of a
 * REACHABLE entry (RFC 4861 7.2.3, 7.2.5 as written). Without it, they
 * apply once the entry is no longer REACHABLE (docs/knobs.md).
 */
#define HP_STACK_F_NDP_OVERRIDE 0x4

/** neigh_locktime_ms: no lock time (a new MAC may follow the last at once). */
#define HP_NEIGH_LOCKTIME_NONE UINT32_MAX

/** Stack parameters; a zeroed structure asks for every default. */
struct hp_stack_config {
    const char *name;          /**< for messages; NULL: "stack" */
    uint32_t neigh_max;        /**< neighbour entries per family; 0: 1024 */
    uint32_t neigh_queue;      /**< packets held per unresolved neighbour; 0: 64 */
    uint32_t neigh_retries;    /**< ARP requests / neighbour solicitations before giving up; 0: 3 */
    uint32_t neigh_retrans_ms; /**< between them; 0: 1000 (RFC 4861 RETRANS_TIMER) */
    uint32_t neigh_reachable_ms; /**< an entry is trusted this long; 0: 30000 (REACHABLE_TIME) */
    uint32_t neigh_locktime_ms;  /**< an entry's MAC stays this long after it changed, whatever
                                     ARP or NDP says but an answer to our own request (Linux's
                                     locktime); 0: 1000; HP_NEIGH_LOCKTIME_NONE: none */
    uint32_t reasm_max_bytes;    /**< fragment bytes held for reassembly, both families; 0: 4 MiB */
    uint32_t
        reasm_timeout_ms; /**< both families; 0: 30000 for IPv4 (like Linux) and 60000 for IPv6 (RFC 8200 4.5) */
    uint32_t icmp_rate;  /**< ICMP errors per second, per family (token bucket); 0: 1000 */
    uint32_t icmp_burst; /**< bucket depth; 0: 50 */
    uint8_t default_ttl; /**< IPv4 TTL and IPv6 hop limit of our packets; 0: 64 */
    unsigned flags;      /**< HP_STACK_F_* */
};

/** The state of an address (IPv6 goes tentative -> preferred, or -> duplicate). */
enum hp_addr_state { HP_ADDR_NONE = 0, HP_ADDR_TENTATIVE, HP_ADDR_PREFERRED, HP_ADDR_DUPLICATE };

/*
 * Counters, like /proc/net/snmp and netstat -s: one per protocol event and
 * one per reason a packet is dropped. Read them with hp_stack_counter().
 */
/* (one line per group of counters, as netstat -s reads) */
// clang-format off
#define HP_STACK_COUNTERS(X)                                                                        \
    X(ETH_IN_FRAMES) X(ETH_IN_MALFORMED) X(ETH_IN_OTHER_HOST) X(ETH_IN_UNKNOWN_TYPE)               \
    X(ETH_IN_VLAN) X(ETH_OUT_FRAMES) X(ETH_OUT_DROPS)                                              \
    X(ARP_IN) X(ARP_IN_MALFORMED) X(ARP_IN_REQUESTS) X(ARP_IN_REPLIES) X(ARP_IN_UNSOLICITED)      \
    X(ARP_IN_NOT_FOR_US) X(ARP_OUT_REQUESTS) X(ARP_OUT_REPLIES) X(ARP_OUT_GRATUITOUS)               \
    X(NEIGH_QUEUED) X(NEIGH_QUEUE_DROPS) X(NEIGH_UNRESOLVED_DROPS) X(NEIGH_TABLE_FULL)             \
    X(NEIGH_EXPIRED) X(NO_BUFFERS)                                                                  \
    X(IP_IN_RECEIVES) X(IP_IN_HDR_ERRORS) X(IP_IN_CSUM_ERRORS) X(IP_IN_TRUNCATED)                  \
    X(IP_IN_ADDR_ERRORS) X(IP_IN_UNKNOWN_PROTOS) X(IP_IN_DELIVERS) X(IP_OUT_REQUESTS)              \
    X(IP_OUT_NO_ROUTES) X(IP_OUT_DISCARDS) X(IP_REASM_REQDS) X(IP_REASM_OKS) X(IP_REASM_FAILS)    \
    X(IP_REASM_TIMEOUTS) X(IP_REASM_OVERLAPS) X(IP_REASM_OVERSIZE) X(IP_REASM_MEM_DROPS)          \
    X(IP_FRAG_OKS) X(IP_FRAG_CREATES) X(IP_FRAG_FAILS)                                              \
    X(IP6_IN_RECEIVES) X(IP6_IN_HDR_ERRORS) X(IP6_IN_TRUNCATED) X(IP6_IN_ADDR_ERRORS)              \
    X(IP6_IN_UNKNOWN_PROTOS) X(IP6_IN_DELIVERS) X(IP6_OUT_REQUESTS) X(IP6_OUT_NO_ROUTES)          \
    X(IP6_OUT_DISCARDS) X(IP6_REASM_REQDS) X(IP6_REASM_OKS) X(IP6_REASM_FAILS)                    \
    X(IP6_REASM_TIMEOUTS) X(IP6_REASM_OVERLAPS) X(IP6_REASM_OVERSIZE) X(IP6_REASM_MEM_DROPS)       \
    X(IP6_FRAG_OKS)                                                                                \
    X(IP6_FRAG_CREATES) X(IP6_FRAG_FAILS)                                                           \
    X(ICMP_IN_MSGS) X(ICMP_IN_ERRORS) X(ICMP_IN_CSUM_ERRORS) X(ICMP_IN_ECHOS)                      \
    X(ICMP_IN_ECHO_REPS) X(ICMP_IN_DEST_UNREACHS) X(ICMP_IN_UNSUPPORTED) X(ICMP_OUT_MSGS)         \
    X(ICMP_OUT_ECHOS) X(ICMP_OUT_ECHO_REPS) X(ICMP_OUT_DEST_UNREACHS) X(ICMP_OUT_TIME_EXCEEDS)    \
    X(ICMP_OUT_RATE_LIMITED)                                                                        \
    X(ICMP6_IN_MSGS) X(ICMP6_IN_ERRORS) X(ICMP6_IN_CSUM_ERRORS) X(ICMP6_IN_ECHOS)                  \
    X(ICMP6_IN_ECHO_REPS) X(ICMP6_IN_DEST_UNREACHS) X(ICMP6_IN_UNSUPPORTED) X(ICMP6_OUT_MSGS)     \
    X(ICMP6_OUT_ECHOS) X(ICMP6_OUT_ECHO_REPS) X(ICMP6_OUT_DEST_UNREACHS) X(ICMP6_OUT_TIME_EXCEEDS)\
    X(ICMP6_OUT_RATE_LIMITED)                                                                       \
    X(NDP_IN_NS) X(NDP_IN_NA) X(NDP_IN_RS) X(NDP_IN_RA) X(NDP_IN_REDIRECT) X(NDP_IN_BAD_HOPLIMIT) \
    X(NDP_IN_INVALID) X(NDP_IN_UNSOLICITED) X(NDP_OUT_NS) X(NDP_OUT_NA) X(NDP_DAD_DUPLICATES)      \
    X(NEIGH_UPDATES_LOCKED) X(NEIGH_UPDATES_REFUSED)                                               \
    X(UDP_IN_DATAGRAMS) X(UDP_NO_PORTS) X(UDP_IN_ERRORS) X(UDP_IN_CSUM_ERRORS)                     \
    X(UDP_RCVBUF_ERRORS) X(UDP_OUT_DATAGRAMS) X(UDP_OUT_ERRORS)                                     \
    X(TCP_ACTIVE_OPENS) X(TCP_PASSIVE_OPENS) X(TCP_ATTEMPT_FAILS) X(TCP_ESTAB_RESETS)             \
    X(TCP_IN_SEGS) X(TCP_OUT_SEGS) X(TCP_RETRANS_SEGS) X(TCP_IN_ERRS) X(TCP_IN_CSUM_ERRORS)       \
    X(TCP_IN_BAD_FLAGS) X(TCP_IN_BAD_OPTIONS) X(TCP_IN_RSTS) X(TCP_OUT_RSTS) X(TCP_NO_PORT)       \
    X(TCP_IN_OUT_OF_WINDOW) X(TCP_IN_BAD_ACK) X(TCP_PAWS_DROPS) X(TCP_CHALLENGE_ACKS)             \
    X(TCP_CHALLENGE_ACK_LIMITED) X(TCP_CHALLENGE_ACK_CONN_LIMITED) X(TCP_SYN_QUEUE_DROPS)          \
    X(TCP_SYN_QUEUE_STALE_DROPS) X(TCP_LISTEN_OVERFLOWS)                                           \
    X(TCP_SYNCOOKIES_SENT) X(TCP_SYNCOOKIES_OK) X(TCP_SYNCOOKIES_FAILED) X(TCP_OFO_QUEUED)        \
    X(TCP_OFO_DROPS) X(TCP_RCVQ_DROPS) X(TCP_FAST_RETRANS) X(TCP_TIMEOUTS) X(TCP_SYN_RETRANS)     \
    X(TCP_ZERO_WINDOW_PROBES) X(TCP_KEEPALIVE_PROBES) X(TCP_KEEPALIVE_DROPS) X(TCP_DELAYED_ACKS) \
    X(TCP_DUP_ACKS) X(TCP_TW_REUSED) X(TCP_TW_EXPIRED) X(TCP_CONN_LIMIT_DROPS) X(TCP_NO_BUFFERS) \
    X(TCP_ABORT_ON_CLOSE) X(TCP_ABORT_ON_TIMEOUT)                                                 \
    X(TCP_SACK_BLOCKS_IN) X(TCP_SACK_BAD_BLOCKS) X(TCP_SACK_RECOVERIES) X(TCP_SACK_RENEGING)      \
    X(TCP_DSACK_SENT) X(TCP_DSACK_IN) X(TCP_SPURIOUS_UNDO) X(TCP_RACK_LOSSES)                    \
    X(TCP_RACK_REO_TIMEOUTS) X(TCP_REORDER_SEEN) X(TCP_TLP_PROBES) X(TCP_TLP_RECOVERIES)         \
    X(TCP_ECN_NEGOTIATED) X(TCP_ECN_CE_IN) X(TCP_ECN_ECE_IN) X(TCP_ECN_REDUCTIONS)               \
    X(TCP_ECN_CWR_OUT) X(TCP_PMTU_UPDATES) X(TCP_PMTU_ICMP_BAD) X(TCP_PMTU_BLACKHOLES)           \
    X(TCP_PMTU_PROBES) X(TCP_PMTU_PROBE_OK) X(TCP_PMTU_PROBE_FAIL) X(TCP_EXT_NOMEM)               \
    X(TCP_TW_COMPACTED)
// clang-format on

enum hp_stack_ctr {
#define HP__CTR_ENUM(name) HP_CTR_##name,
    HP_STACK_COUNTERS(HP__CTR_ENUM)
#undef HP__CTR_ENUM
        HP_STACK_NCOUNTERS
};

/**
 * Create a stack. @return the stack, or NULL with errno EINVAL (a bad field)
 * or ENOMEM.
 */
HP_API struct hp_stack *hp_stack_create(const struct hp_stack_config *cfg);

/**
 * Destroy a stack: its sockets are closed and every buffer it holds (queues
 * waiting for a neighbour, fragments, transmit bursts, socket queues) goes
 * back to its pool. Its links are not closed: the caller opened them and
 * closes them after. NULL is a no-op. @return 0.
 */
HP_API int hp_stack_destroy(struct hp_stack *s);

/**
 * Attach a link as an interface. The stack uses the link's MAC and MTU and
 * allocates its own packets from the link's pool. IPv6 gets a link-local
 * address (EUI-64 from the MAC, RFC 4291 appendix A) at once, tentative
 * until duplicate address detection ends (unless HP_STACK_F_NO_DAD).
 * The link stays owned by the caller and must outlive the stack.
 * @return the interface index (>= 0), or -EINVAL, -ENOSPC (too many), -ENOMEM.
 */
HP_API int hp_stack_add_iface(struct hp_stack *s, struct hp_link *link);

/**
 * Add an address with its prefix length; the prefix becomes a connected
 * route. IPv4: a gratuitous ARP announces it. IPv6: duplicate address
 * detection first (RFC 4862 5.4), then an unsolicited neighbour
 * advertisement. family is 4 or 6; addr has 4 or 16 bytes.
 * @return 0, -EINVAL (bad family, prefix, or a multicast/unspecified
 *         address), -EEXIST, -ENOSPC, -ENODEV (no such interface).
 */
HP_API int hp_stack_add_addr(struct hp_stack *s, int ifindex, int family, const uint8_t *addr,
                             uint8_t prefix_len);

/** The state of one of our addresses (HP_ADDR_NONE if it is not ours). */
HP_API enum hp_addr_state hp_stack_addr_state(const struct hp_stack *s, int ifindex, int family,
                                              const uint8_t *addr);

/**
 * Set the default gateway of a family (it must be on a connected prefix
 * when packets are sent). @return 0 or -EINVAL.
 */
HP_API int hp_stack_set_gateway(struct hp_stack *s, int family, const uint8_t *gw);

/**
 * One round of work: receive and process a burst from each interface, run
 * the timers that are due, flush transmit bursts.
 * @return the number of frames and timers handled (0 when idle).
 */
HP_API int hp_stack_poll(struct hp_stack *s);

/**
 * The stack's clock as of its last hp_stack_poll() (CLOCK_MONOTONIC, in
 * nanoseconds): what an event loop compares its own timers with after a
 * poll, without reading the clock again.
 */
HP_API uint64_t hp_stack_now_ns(const struct hp_stack *s);

/** Nanoseconds until the next timer is due (0: overdue), or -1 when none is armed. */
HP_API int64_t hp_stack_next_timer_ns(const struct hp_stack *s);

/**
 * Prepare to sleep (an event loop's last step before blocking; see loop.h):
 * arm every interface's link (hp_link_prepare_sleep()) and look at the
 * stack's own work.
 * @param wake_ns out: the nanoseconds after which the stack must be polled
 *        again even if no fd becomes readable: the earliest of its next timer
 *        and its links' due times; -1 when none.
 * @return > 0: do not sleep, poll (a link has frames waiting, frames are
 *         queued for transmission, a timer is due); 0: every interface is
 *         armed: sleep on hp_stack_fds() (POLLIN) for at most *wake_ns;
 *         -EOPNOTSUPP: an interface's link cannot wake a sleeper (the others
 *         are armed: nap briefly, or poll); another -errno from a link.
 */
HP_API int hp_stack_prepare_sleep(struct hp_stack *s, int64_t *wake_ns);

/**
 * The fds to sleep on for receive readiness (POLLIN), one per interface
 * whose link has one (hp_link_fd()), in interface order; at most max are
 * written. @return how many there are (possibly more than max).
 */
HP_API int hp_stack_fds(const struct hp_stack *s, int *fds, int max);

/** Whether frames wait in the stack's transmit bursts (the next hp_stack_poll() flushes them;
 * between polls only a link into the kernel keeps them waiting). */
HP_API bool hp_stack_tx_pending(const struct hp_stack *s);

/**
 * Send an ICMP echo request (ICMPv6 for family 6) with `len` bytes of
 * payload to dst; replies are counted in HP_CTR_ICMP_IN_ECHO_REPS /
 * HP_CTR_ICMP6_IN_ECHO_REPS. @return 0, -EHOSTUNREACH (no route), -ENOBUFS,
 * -EMSGSIZE (more than 65507 / 65527 bytes), -EINVAL.
 */
HP_API int hp_stack_ping(struct hp_stack *s, int family, const uint8_t *dst, uint16_t ident,
                         uint16_t seq, size_t len);

/** A counter's value. */
HP_API uint64_t hp_stack_counter(const struct hp_stack *s, enum hp_stack_ctr c);
/** A counter's name, like "IP_IN_HDR_ERRORS"; NULL if c is out of range. */
HP_API const char *hp_stack_counter_name(enum hp_stack_ctr c);
/** Print the counters ("NAME value" lines; only the non-zero ones with nonzero_only). */
HP_API void hp_stack_counters_print(const struct hp_stack *s, FILE *f, bool nonzero_only);

#ifdef __cplusplus
}
#endif
#endif
