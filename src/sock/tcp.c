/* SPDX-License-Identifier: BSD-3-Clause */
/* STUB (replaced by the real tcp.c): the TCP API and connection lifecycle. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_internal.h"

int hp__tcp_init(struct hp_stack *s) { (void)s; return 0; }
void hp__tcp_fini(struct hp_stack *s) { (void)s; }
struct hp_tcp_sock *hp__tcp_conn_new(struct hp_stack *s, int family) { (void)s; (void)family; return NULL; }
void hp__tcp_conn_free(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_set_state(struct hp_tcp_sock *c, enum hp_tcp_state st) { c->state = (uint8_t)st; }
int hp__tcp_established(struct hp_tcp_sock *c) { (void)c; return 0; }
void hp__tcp_drop(struct hp_tcp_sock *c, int err) { (void)c; (void)err; }
void hp__tcp_closed(struct hp_tcp_sock *c) { (void)c; }
void hp__tcp_wake(struct hp_tcp_sock *c, uint32_t events) { (void)c; (void)events; }
HP_API int hp_tcp_configure(struct hp_stack *s, const struct hp_tcp_config *cfg) { (void)s; (void)cfg; return -ENOSYS; }
HP_API void hp_tcp_get_config(const struct hp_stack *s, struct hp_tcp_config *out) { (void)s; memset(out, 0, sizeof *out); }
HP_API struct hp_tcp_sock *hp_tcp_open(struct hp_stack *s, int family, void *user) { (void)s; (void)family; (void)user; errno = ENOSYS; return NULL; }
HP_API int hp_tcp_bind(struct hp_tcp_sock *t, const struct hp_sockaddr *l) { (void)t; (void)l; return -ENOSYS; }
HP_API int hp_tcp_listen(struct hp_tcp_sock *t, int backlog) { (void)t; (void)backlog; return -ENOSYS; }
HP_API struct hp_tcp_sock *hp_tcp_accept(struct hp_tcp_sock *l, void *user, struct hp_sockaddr *peer) { (void)l; (void)user; (void)peer; errno = ENOSYS; return NULL; }
HP_API int hp_tcp_connect(struct hp_tcp_sock *t, const struct hp_sockaddr *r) { (void)t; (void)r; return -ENOSYS; }
HP_API long hp_tcp_send(struct hp_tcp_sock *t, const void *d, size_t len) { (void)t; (void)d; (void)len; return -ENOSYS; }
HP_API long hp_tcp_send_buf(struct hp_tcp_sock *t, struct hp_buf *b) { (void)t; (void)b; return -ENOSYS; }
HP_API long hp_tcp_recv(struct hp_tcp_sock *t, void *d, size_t cap) { (void)t; (void)d; (void)cap; return -ENOSYS; }
HP_API long hp_tcp_recv_buf(struct hp_tcp_sock *t, struct hp_buf **b) { (void)t; *b = NULL; return -ENOSYS; }
HP_API int hp_tcp_shutdown(struct hp_tcp_sock *t, int how) { (void)t; (void)how; return -ENOSYS; }
HP_API int hp_tcp_close(struct hp_tcp_sock *t) { (void)t; return 0; }
HP_API int hp_tcp_abort(struct hp_tcp_sock *t) { (void)t; return 0; }
HP_API int hp_tcp_setopt(struct hp_tcp_sock *t, enum hp_tcp_opt o, long v) { (void)t; (void)o; (void)v; return -ENOSYS; }
HP_API int hp_tcp_getopt(const struct hp_tcp_sock *t, enum hp_tcp_opt o, long *v) { (void)t; (void)o; (void)v; return -ENOSYS; }
HP_API uint32_t hp_tcp_poll(const struct hp_tcp_sock *t) { (void)t; return 0; }
HP_API int hp_tcp_error(struct hp_tcp_sock *t) { (void)t; return 0; }
HP_API enum hp_tcp_state hp_tcp_state(const struct hp_tcp_sock *t) { (void)t; return HP_TCP_CLOSED; }
HP_API const char *hp_tcp_state_name(int state) { (void)state; return "?"; }
HP_API void hp_tcp_local(const struct hp_tcp_sock *t, struct hp_sockaddr *out) { (void)t; memset(out, 0, sizeof *out); }
HP_API void hp_tcp_peer(const struct hp_tcp_sock *t, struct hp_sockaddr *out) { (void)t; memset(out, 0, sizeof *out); }
HP_API int hp_tcp_get_info(const struct hp_tcp_sock *t, struct hp_tcp_info *out) { (void)t; (void)out; return -ENOSYS; }
int hp__tcp_conn_attach(struct hp_tcp_sock *c, int family, const uint8_t *laddr, uint16_t lport, const uint8_t *raddr, uint16_t rport) { (void)c; (void)family; (void)laddr; (void)lport; (void)raddr; (void)rport; return -ENOSYS; }
