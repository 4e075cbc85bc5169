/* SPDX-License-Identifier: BSD-3-Clause */
/* The keyed hash behind TCP initial sequence numbers and SYN cookies: SipHash-2-4 over a connection's addresses and ports. */
#ifndef HOTPATH_SOCK_TCP_HASH_H
#define HOTPATH_SOCK_TCP_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * A per-stack secret (RFC 6528 section 3: "secretkey", at least 128 bits;
 * RFC 4987 section 3.6 for cookies). Made once by hp__tcp_secret_init and
 * kept for the life of the stack: changing it moves every ISN and voids
 * every cookie in flight.
 */
struct hp__tcp_secret {
    uint64_t k0, k1;
};

/*
 * A connection's identity as our side sees it. Ports in host order;
 * IPv4 addresses in the first 4 bytes of laddr / raddr (the other 12 are
 * not read). family is 4 or 6.
 */
struct hp__tcp_tuple {
    uint8_t family;
    uint16_t lport, rport;
    uint8_t laddr[16], raddr[16];
};

/* Domains: the same secret never gives the same value to two purposes. */
enum hp__tcp_hash_domain {
    HP__TCP_HASH_ISN = 1, /* the ISN's F (low half) and the timestamp offset (high half) */
    HP__TCP_HASH_COOKIE = 2,
    /* 3 was the timestamp offset's own domain: now the high half of HP__TCP_HASH_ISN's. */
    HP__TCP_HASH_CHALLENGE = 4, /* each second's challenge ACK budget (RFC 5961 7) */
};

/**
 * Fill s with 128 random bits from getrandom(2).
 *
 * Returns 0, or -errno from getrandom (-ENOSYS on kernels without it);
 * s is then zeroed. Blocks only before the kernel's pool is initialised.
 */
int hp__tcp_secret_init(struct hp__tcp_secret *s);

/**
 * SipHash-2-4 (Aumasson and Bernstein, 2012) of len bytes at data under the
 * 128-bit key (k0, k1), as the paper defines it: the key and the message
 * words read little-endian. 64-bit result.
 */
uint64_t hp__siphash24(const struct hp__tcp_secret *key, const void *data, size_t len);

/**
 * The keyed hash of a tuple with two extra 32-bit words, for one purpose.
 * The tuple's family selects how many address bytes are hashed; an unknown
 * family hashes 16. Pure: the same inputs give the same 64 bits.
 */
uint64_t hp__tcp_hash(const struct hp__tcp_secret *key, enum hp__tcp_hash_domain domain,
                      const struct hp__tcp_tuple *t, uint32_t w0, uint32_t w1);

#endif
