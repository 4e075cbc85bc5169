/* SPDX-License-Identifier: BSD-3-Clause */
/* CUBIC's window function (RFC 9438) and HyStart++ (RFC 9406), for tcp_cc.c. */
#ifndef HOTPATH_SOCK_TCP_CUBIC_H
#define HOTPATH_SOCK_TCP_CUBIC_H

#include "tcp_cc.h"

/* Start CUBIC's state: no epoch, no W_max; HyStart++ on while the initial
 * slow start lasts (ssthresh UINT32_MAX), its first round ending at
 * round_end. */
void hp__tcp_cubic_init(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t round_end);

/* Congestion avoidance for `acked` bytes (RFC 9438 4.2-4.4): towards
 * W_cubic(t + RTT), clamped to [cwnd, 1.5 cwnd], or to W_est when that is
 * larger (the Reno-friendly region). */
void hp__tcp_cubic_ca(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t acked,
                      const struct hp__tcp_cc_ev *ev);

/* A congestion event (RFC 9438 4.6, 4.7): W_max (with fast convergence),
 * a new epoch at the next ACK in congestion avoidance. @return ssthresh:
 * max(cwnd * beta, 2 SMSS), beta = 0.7. */
uint32_t hp__tcp_cubic_reduce(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t smss);

/* HyStart++ on an ACK in slow start (RFC 9406 4.2): rounds, RTT samples,
 * the move to conservative slow start and back, and its end (ssthresh =
 * cwnd). inc is slow start's growth for the ACK; @return the growth to
 * apply (a quarter of it in conservative slow start). */
uint32_t hp__tcp_hystart_ack(struct hp__tcp_cc *cc, struct hp__tcp_cubic *x, uint32_t inc,
                             const struct hp__tcp_cc_ev *ev);

/* The cube root of v >= 0 (Newton's method: the library does not link libm). */
double hp__tcp_cbrt(double v);

#endif
