/* SPDX-License-Identifier: BSD-3-Clause */
/* memif's wire format (control messages, rings, descriptors) and the pure checks of what a peer sends, fuzzable alone. */
#ifndef HOTPATH_LINK_MEMIF_PROTO_H
#define HOTPATH_LINK_MEMIF_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The shared-memory packet interface of VPP, libmemif and DPDK's net_memif
 * (doc/guides/nics/memif.rst, drivers/net/memif/memif.h), version 2.0.
 * Everything is in the host's byte order (both ends share the machine).
 *
 * Control channel: a SOCK_SEQPACKET Unix socket; every message is exactly
 * 128 bytes, a 16-bit type then the message's fields, packed. The client
 * connects; the server sends HELLO; the client answers INIT, then one
 * ADD_REGION per shared memory region (its memfd in SCM_RIGHTS), one
 * ADD_RING per ring (its interrupt eventfd in SCM_RIGHTS), then CONNECT,
 * each acknowledged by the server (ACK; CONNECTED for CONNECT). Either end
 * may send DISCONNECT with a reason at any time.
 *
 * Shared memory: the client makes every region. A ring is a 128-byte
 * header (cookie, flags and head on the first 64-byte line, tail on the
 * second) followed by 2^log2 descriptors of 16 bytes. Client to server
 * (C2S) rings: the client fills descriptors and moves head, the server
 * reads up to head and moves tail. Server to client (S2C) rings: the
 * client offers empty buffers by moving head, the server fills them and
 * moves tail. A descriptor names a buffer by region, offset and length;
 * the NEXT flag chains the next descriptor into the same frame.
 *
 * Offsets below are from the start of a message, ring or descriptor,
 * checked against DPDK 22.11's packed structures.
 */

#define HP__MEMIF_COOKIE          0x3E31F20u
#define HP__MEMIF_VERSION         0x0200u /* 2.0 */
#define HP__MEMIF_MSG_SIZE        128
#define HP__MEMIF_NAME_LEN        32
#define HP__MEMIF_SECRET_LEN      24
#define HP__MEMIF_REASON_LEN      96
#define HP__MEMIF_MAX_LOG2        14 /* DPDK's limit; head and tail are 16 bits */
#define HP__MEMIF_MAX_REGIONS     8  /* what we accept from a client */
#define HP__MEMIF_MAX_QUEUES      16 /* rings per direction we set up or accept */
#define HP__MEMIF_MAX_REGION_SIZE (1ull << 40)

enum {
    HP__MEMIF_MSG_NONE = 0,
    HP__MEMIF_MSG_ACK = 1,
    HP__MEMIF_MSG_HELLO = 2,
    HP__MEMIF_MSG_INIT = 3,
    HP__MEMIF_MSG_ADD_REGION = 4,
    HP__MEMIF_MSG_ADD_RING = 5,
    HP__MEMIF_MSG_CONNECT = 6,
    HP__MEMIF_MSG_CONNECTED = 7,
    HP__MEMIF_MSG_DISCONNECT = 8,
};

#define HP__MEMIF_RING_FLAG_C2S 1 /* ADD_RING: the ring carries client to server */
#define HP__MEMIF_RING_MASK_INT 1 /* ring flags: the receiver polls, no interrupt */
#define HP__MEMIF_DESC_NEXT     1 /* descriptor flags: the frame goes on in the next */
#define HP__MEMIF_MODE_ETHERNET 0

/* The ring header, as laid out in shared memory (64-byte lines). */
#define HP__MEMIF_RING_COOKIE_OFF 0
#define HP__MEMIF_RING_FLAGS_OFF  4
#define HP__MEMIF_RING_HEAD_OFF   6
#define HP__MEMIF_RING_TAIL_OFF   64
#define HP__MEMIF_RING_HDR        128
#define HP__MEMIF_DESC_SIZE       16

struct hp__memif_ring {
    uint32_t cookie;
    uint16_t flags;
    uint16_t head;
    uint8_t pad0[56];
    uint16_t tail;
    uint8_t pad1[62];
};

/* A descriptor (16 bytes, naturally aligned in the ring). */
struct hp__memif_desc {
    uint16_t flags;
    uint16_t region;
    uint32_t length;
    uint32_t offset;
    uint32_t metadata;
};

/* A decoded control message: the names are NUL-terminated, with anything
 * unprintable replaced by '?', so that they can be logged as they are. */
struct hp__memif_msg {
    uint16_t type;
    union {
        struct {
            char name[HP__MEMIF_NAME_LEN + 1];
            uint16_t min_version, max_version, max_region, max_s2c_ring, max_c2s_ring;
            uint8_t max_log2_ring_size;
        } hello;
        struct {
            uint16_t version;
            uint32_t id;
            uint8_t mode;
            uint8_t secret[HP__MEMIF_SECRET_LEN];
            char name[HP__MEMIF_NAME_LEN + 1];
        } init;
        struct {
            uint16_t index;
            uint64_t size;
        } add_region;
        struct {
            uint16_t flags, index, region;
            uint32_t offset;
            uint8_t log2_ring_size;
            uint16_t private_hdr_size;
        } add_ring;
        struct {
            char if_name[HP__MEMIF_NAME_LEN + 1]; /* CONNECT and CONNECTED */
        } connect;
        struct {
            uint32_t code;
            char reason[HP__MEMIF_REASON_LEN + 1];
        } disconnect;
    } u;
};

/* Decode the len bytes of one received message.
 * @return 0, or -EBADMSG (not 128 bytes), -EPROTO (an unknown type). */
int hp__memif_msg_decode(const void *buf, size_t len, struct hp__memif_msg *m);

/* Encode m into out; strings are cut to their field and zero-padded; the
 * secret is taken as its 24 bytes. Unused bytes are zero. */
void hp__memif_msg_encode(const struct hp__memif_msg *m, uint8_t out[HP__MEMIF_MSG_SIZE]);

/* The type's name for log lines ("HELLO", ..., "type 42"); buf holds at least 16 bytes. */
const char *hp__memif_msg_name(uint16_t type, char *buf);

/* A region as a ring or descriptor check sees it. */
struct hp__memif_region {
    unsigned char *base; /* NULL: not mapped (the checks then only use size) */
    uint64_t size;
};

/* 0 when a ring of 2^log2 descriptors at offset lies wholly inside region
 * `region` of the n regions and is 8-byte aligned; -EINVAL otherwise. */
int hp__memif_check_ring(const struct hp__memif_region *regions, unsigned n, uint16_t region,
                         uint32_t offset, unsigned log2);

/* The bytes a ring of 2^log2 descriptors takes. */
static inline uint64_t hp__memif_ring_bytes(unsigned log2)
{
    return HP__MEMIF_RING_HDR + ((uint64_t)HP__MEMIF_DESC_SIZE << log2);
}

/* The address of length bytes at offset in region `region`, or NULL when
 * any of them lies outside the n regions (or the region is not mapped).
 * The only way the data path turns a descriptor into a pointer; inline,
 * since it runs for every descriptor. */
static inline void *hp__memif_desc_ptr(const struct hp__memif_region *regions, unsigned n,
                                       uint16_t region, uint32_t offset, uint32_t length)
{
    if (region >= n || !regions[region].base)
        return NULL;
    /* 64-bit sum: offset and length are 32 bits, no overflow. */
    if ((uint64_t)offset + length > regions[region].size)
        return NULL;
    return regions[region].base + offset;
}

/* How many entries lie between a consumer's cursor `from` and a producer's
 * index `to` (16-bit, wrapping) in a ring of `size`: 0 .. size, or -1 when
 * the distance is more than the ring holds (an index that jumped). */
static inline int hp__memif_ring_count(uint16_t from, uint16_t to, uint32_t size)
{
    uint16_t d = (uint16_t)(to - from);
    return d <= size ? (int)d : -1;
}

/* ---- the handshake, as a pure state machine ---------------------------- */

enum hp__memif_hs_state {
    HP__MEMIF_HS_IDLE = 0,
    /* server */
    HP__MEMIF_HS_WAIT_INIT,
    HP__MEMIF_HS_WAIT_SETUP, /* ADD_REGION, ADD_RING, CONNECT */
    /* client */
    HP__MEMIF_HS_WAIT_HELLO,
    HP__MEMIF_HS_WAIT_ACK, /* an INIT, ADD_REGION or ADD_RING awaits its ACK */
    HP__MEMIF_HS_WAIT_CONNECTED,
    /* both */
    HP__MEMIF_HS_UP,
};

/* What the caller does after a step. */
enum hp__memif_verdict {
    HP__MEMIF_V_ACK = 1,   /* server: answer ACK */
    HP__MEMIF_V_CONNECT,   /* server: map the regions, check the rings, answer CONNECTED, up */
    HP__MEMIF_V_SETUP,     /* client: HELLO taken, run parameters set: send INIT */
    HP__MEMIF_V_NEXT,      /* client: ACK taken: send the next setup message */
    HP__MEMIF_V_UP,        /* client: CONNECTED: up */
    HP__MEMIF_V_PEER_GONE, /* the peer sent DISCONNECT (reason in the message) */
    HP__MEMIF_V_REFUSE,    /* the message is refused: DISCONNECT with *why, then close */
};

struct hp__memif_ring_def {
    bool set;
    uint16_t region;
    uint32_t offset;
    uint8_t log2;
};

/* Both ends' view of a handshake: what we offer, and what was agreed. */
struct hp__memif_hs {
    bool server;
    int state;
    /* ours */
    uint32_t id;
    uint8_t secret[HP__MEMIF_SECRET_LEN]; /* zeros after the text; all zero: none */
    uint16_t queues;  /* rings per direction we offer (server) or want (client) */
    uint8_t log2;     /* ring size we offer (server: the largest we take) or want */
    uint16_t regions; /* client: the regions we add (1, or 2 in zero-copy) */
    /* agreed (client: from HELLO; server: from the client's messages) */
    uint16_t n_c2s, n_s2c;
    uint8_t run_log2;
    uint16_t acks;      /* client: ACKs received since INIT */
    uint16_t n_regions; /* server: regions added so far */
    uint64_t region_size[HP__MEMIF_MAX_REGIONS];
    struct hp__memif_ring_def c2s[HP__MEMIF_MAX_QUEUES], s2c[HP__MEMIF_MAX_QUEUES];
    char peer_name[HP__MEMIF_NAME_LEN + 1];
    char peer_if[HP__MEMIF_NAME_LEN + 1];
};

/* Start a handshake: hs keeps its configuration fields (server, id,
 * secret, queues, log2) and forgets the rest. */
void hp__memif_hs_reset(struct hp__memif_hs *hs);

/*
 * One received message through the handshake. has_fd: the message came
 * with a file descriptor (a region's memfd, a ring's eventfd); the caller
 * keeps or closes it, the step only says whether one was needed.
 * Never reads outside m, never trusts an index: every region and ring
 * index, size, offset and count is checked against our limits and what
 * was agreed. A refusal sets *why to a sentence for the log line and the
 * DISCONNECT message.
 */
enum hp__memif_verdict hp__memif_hs_step(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                         bool has_fd, const char **why);

/* Client: the setup messages that precede CONNECT, each waiting for its
 * ACK: INIT, one ADD_REGION per region, one ADD_RING per ring. */
static inline unsigned hp__memif_hs_setup_msgs(const struct hp__memif_hs *hs)
{
    return 1u + hs->regions + hs->n_c2s + hs->n_s2c;
}

#endif
