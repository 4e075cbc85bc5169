/* SPDX-License-Identifier: BSD-3-Clause */
/* STUB (replaced by the real tcp_bufq.c): byte queues in buffers. */
#include <string.h>

#include "tcp_internal.h"

void hp__tcp_bufq_init(struct hp__tcp_bufq *q) { memset(q, 0, sizeof *q); }
void hp__tcp_bufq_purge(struct hp__tcp_bufq *q) { (void)q; }
void hp__tcp_bufq_push(struct hp__tcp_bufq *q, struct hp_buf *b) { (void)q; hp_buf_free(b); }
void hp__tcp_bufq_push_small(struct hp__tcp_bufq *q, struct hp_buf *b, uint32_t small) { (void)q; (void)small; hp_buf_free(b); }
uint32_t hp__tcp_bufq_append(struct hp__tcp_bufq *q, struct hp_pool *pool, const void *data, uint32_t len) { (void)q; (void)pool; (void)data; (void)len; return 0; }
void hp__tcp_bufq_drop(struct hp__tcp_bufq *q, uint32_t n) { (void)q; (void)n; }
void hp__tcp_bufq_copy(struct hp__tcp_bufq *q, uint64_t off, uint32_t len, void *dst) { (void)q; (void)off; (void)len; (void)dst; }
void hp__tcp_bufq_read(struct hp__tcp_bufq *q, void *dst, uint32_t len) { (void)q; (void)dst; (void)len; }
struct hp_buf *hp__tcp_bufq_pop(struct hp__tcp_bufq *q) { (void)q; return NULL; }
