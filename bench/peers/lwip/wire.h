/* SPDX-License-Identifier: BSD-3-Clause */
/* The in-memory wire between two lwIP instances: per direction, frame slots and a ring of the slots sent, as a NIC's descriptor ring (one thread, no atomics). */
#ifndef HOTPATH_PEERS_LWIP_WIRE_H
#define HOTPATH_PEERS_LWIP_WIRE_H

#include <stdint.h>
#include <string.h>

#define LW_RING  1024 /* frames in flight per direction, as hotpath's mem ring */
#define LW_SLOTS 4096 /* frame buffers per direction: in the ring or held by the receiver */
#define LW_FRAME 1536 /* bytes per slot: an Ethernet frame of MTU 1500 */

/* One direction: the sender copies a frame into a free slot and rings it;
 * the receiver reads it in place and frees the slot when its stack lets go. */
struct lw_wire {
    uint32_t head, tail;    /* ring positions: head is read next */
    uint16_t ring[LW_RING]; /* slot numbers */
    uint16_t len[LW_RING];
    uint16_t free[LW_SLOTS]; /* free slot numbers (a stack) */
    uint32_t nfree;
    uint64_t frames, drops; /* frames rung; frames dropped for want of room */
    uint8_t slot[LW_SLOTS][LW_FRAME];
};

static inline void lw_wire_init(struct lw_wire *w)
{
    w->head = w->tail = 0;
    w->frames = w->drops = 0;
    for (uint32_t i = 0; i < LW_SLOTS; i++)
        w->free[i] = (uint16_t)(LW_SLOTS - 1 - i);
    w->nfree = LW_SLOTS;
}

/* A free slot to fill, or -1 (counted as a drop) when none or the ring is full. */
static inline int lw_wire_get(struct lw_wire *w)
{
    if (!w->nfree || w->tail - w->head == LW_RING) {
        w->drops++;
        return -1;
    }
    return w->free[--w->nfree];
}

static inline void lw_wire_push(struct lw_wire *w, int slot, uint32_t len)
{
    w->ring[w->tail % LW_RING] = (uint16_t)slot;
    w->len[w->tail % LW_RING] = (uint16_t)len;
    w->tail++;
    w->frames++;
}

/* The next frame's slot (and *len), or -1 when the ring is empty. */
static inline int lw_wire_pop(struct lw_wire *w, uint32_t *len)
{
    if (w->head == w->tail)
        return -1;
    uint32_t i = w->head++ % LW_RING;
    *len = w->len[i];
    return w->ring[i];
}

static inline void lw_wire_put(struct lw_wire *w, int slot)
{
    w->free[w->nfree++] = (uint16_t)slot;
}

#endif
