/* SPDX-License-Identifier: BSD-3-Clause */
/* STUB (replaced by the real tcp_timer.c): TCP timers. */
#include "tcp_internal.h"

void hp__tcp_timer_rtx(struct hp_stack *s, void *arg) { (void)s; (void)arg; }
void hp__tcp_timer_dack(struct hp_stack *s, void *arg) { (void)s; (void)arg; }
void hp__tcp_timer_misc(struct hp_stack *s, void *arg) { (void)s; (void)arg; }
void hp__tcp_rtx_restart(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_rtx_ensure(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_rtx_stop(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_persist_start(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_dack_arm(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_time_wait(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_misc_rearm(struct hp_tcp_sock *c) { (void)c; }
