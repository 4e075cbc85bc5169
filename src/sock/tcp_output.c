/* SPDX-License-Identifier: BSD-3-Clause */
/* STUB (replaced by the real tcp_output.c): building and sending segments. */
#include "tcp_internal.h"

int hp__tcp_output(struct hp_tcp_sock *c) { (void)c; return 0; }
int hp__tcp_send_syn(struct hp_tcp_sock *c) { (void)c; return 0; }
int hp__tcp_send_ack(struct hp_tcp_sock *c) { (void)c; return 0; }
void hp__tcp_challenge_ack(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_send_rst(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_send_rst_reply(struct hp_stack *s, int family, const uint8_t *src, const uint8_t *dst, const struct hp_tcp_repr *r) { (void)s; (void)family; (void)src; (void)dst; (void)r; }
void hp__tcp_send_cookie_synack(struct hp_tcp_sock *l, int family, const uint8_t *src, const uint8_t *dst, const struct hp_tcp_repr *r) { (void)l; (void)family; (void)src; (void)dst; (void)r; }
int hp__tcp_retransmit(struct hp_tcp_sock *c) { (void)c; return 0; }
void hp__tcp_ack_schedule(struct hp_tcp_sock *c, uint32_t len, bool in_order, bool fills_hole) { (void)c; (void)len; (void)in_order; (void)fills_hole; }
uint32_t hp__tcp_rcv_window(const struct hp_tcp_sock *c) { (void)c; return 0; }
void hp__tcp_window_update(struct hp_tcp_sock *c) { (void)c; }
