/* SPDX-License-Identifier: BSD-3-Clause */
/* memif's control messages decoded and encoded, the handshake's state machine, and the range checks of rings and descriptors: pure functions. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "memif_proto.h"

_Static_assert(sizeof(struct hp__memif_ring) == HP__MEMIF_RING_HDR,
               "memif ring header is 128 bytes");
_Static_assert(offsetof(struct hp__memif_ring, head) == HP__MEMIF_RING_HEAD_OFF, "head at 6");
_Static_assert(offsetof(struct hp__memif_ring, tail) == HP__MEMIF_RING_TAIL_OFF, "tail at 64");
_Static_assert(offsetof(struct hp__memif_ring, flags) == HP__MEMIF_RING_FLAGS_OFF, "flags at 4");
_Static_assert(sizeof(struct hp__memif_desc) == HP__MEMIF_DESC_SIZE,
               "memif descriptor is 16 bytes");
_Static_assert(offsetof(struct hp__memif_desc, length) == 4 &&
                   offsetof(struct hp__memif_desc, offset) == 8,
               "memif descriptor layout");

/* Field offsets inside a message: 2 (the type) plus the offset inside
 * DPDK's packed structure of that message. */
enum {
    HELLO_NAME = 2,
    HELLO_MIN = 34,
    HELLO_MAX = 36,
    HELLO_REGION = 38,
    HELLO_S2C = 40,
    HELLO_C2S = 42,
    HELLO_LOG2 = 44,
    INIT_VERSION = 2,
    INIT_ID = 4,
    INIT_MODE = 8,
    INIT_SECRET = 9,
    INIT_NAME = 33,
    REGION_INDEX = 2,
    REGION_SIZE = 4,
    RING_FLAGS = 2,
    RING_INDEX = 4,
    RING_REGION = 6,
    RING_OFFSET = 8,
    RING_LOG2 = 12,
    RING_PRIV = 13,
    CONNECT_NAME = 2,
    DISC_CODE = 2,
    DISC_REASON = 6,
};

static uint16_t get16(const uint8_t *p, size_t off)
{
    uint16_t v;
    memcpy(&v, p + off, 2);
    return v;
}

static uint32_t get32(const uint8_t *p, size_t off)
{
    uint32_t v;
    memcpy(&v, p + off, 4);
    return v;
}

static uint64_t get64(const uint8_t *p, size_t off)
{
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}

static void put16(uint8_t *p, size_t off, uint16_t v)
{
    memcpy(p + off, &v, 2);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
    memcpy(p + off, &v, 4);
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
    memcpy(p + off, &v, 8);
}

/* A peer's string field: up to max bytes, stopped at the first NUL, made
 * printable so that it can go into a log line as it is. */
static void get_str(const uint8_t *p, size_t off, size_t max, char *out)
{
    size_t i;
    for (i = 0; i < max && p[off + i]; i++) {
        uint8_t c = p[off + i];
        out[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    out[i] = '\0';
}

static void put_str(uint8_t *p, size_t off, size_t max, const char *s)
{
    size_t n = strnlen(s, max);
    memcpy(p + off, s, n);
}

int hp__memif_msg_decode(const void *buf, size_t len, struct hp__memif_msg *m)
{
    const uint8_t *p = buf;
    memset(m, 0, sizeof *m);
    if (len != HP__MEMIF_MSG_SIZE)
        return -EBADMSG;
    m->type = get16(p, 0);
    switch (m->type) {
    case HP__MEMIF_MSG_ACK:
        return 0;
    case HP__MEMIF_MSG_HELLO:
        get_str(p, HELLO_NAME, HP__MEMIF_NAME_LEN, m->u.hello.name);
        m->u.hello.min_version = get16(p, HELLO_MIN);
        m->u.hello.max_version = get16(p, HELLO_MAX);
        m->u.hello.max_region = get16(p, HELLO_REGION);
        m->u.hello.max_s2c_ring = get16(p, HELLO_S2C);
        m->u.hello.max_c2s_ring = get16(p, HELLO_C2S);
        m->u.hello.max_log2_ring_size = p[HELLO_LOG2];
        return 0;
    case HP__MEMIF_MSG_INIT:
        m->u.init.version = get16(p, INIT_VERSION);
        m->u.init.id = get32(p, INIT_ID);
        m->u.init.mode = p[INIT_MODE];
        memcpy(m->u.init.secret, p + INIT_SECRET, HP__MEMIF_SECRET_LEN);
        get_str(p, INIT_NAME, HP__MEMIF_NAME_LEN, m->u.init.name);
        return 0;
    case HP__MEMIF_MSG_ADD_REGION:
        m->u.add_region.index = get16(p, REGION_INDEX);
        m->u.add_region.size = get64(p, REGION_SIZE);
        return 0;
    case HP__MEMIF_MSG_ADD_RING:
        m->u.add_ring.flags = get16(p, RING_FLAGS);
        m->u.add_ring.index = get16(p, RING_INDEX);
        m->u.add_ring.region = get16(p, RING_REGION);
        m->u.add_ring.offset = get32(p, RING_OFFSET);
        m->u.add_ring.log2_ring_size = p[RING_LOG2];
        m->u.add_ring.private_hdr_size = get16(p, RING_PRIV);
        return 0;
    case HP__MEMIF_MSG_CONNECT:
    case HP__MEMIF_MSG_CONNECTED:
        get_str(p, CONNECT_NAME, HP__MEMIF_NAME_LEN, m->u.connect.if_name);
        return 0;
    case HP__MEMIF_MSG_DISCONNECT:
        m->u.disconnect.code = get32(p, DISC_CODE);
        get_str(p, DISC_REASON, HP__MEMIF_REASON_LEN, m->u.disconnect.reason);
        return 0;
    default:
        return -EPROTO;
    }
}

void hp__memif_msg_encode(const struct hp__memif_msg *m, uint8_t out[HP__MEMIF_MSG_SIZE])
{
    memset(out, 0, HP__MEMIF_MSG_SIZE);
    put16(out, 0, m->type);
    switch (m->type) {
    case HP__MEMIF_MSG_HELLO:
        put_str(out, HELLO_NAME, HP__MEMIF_NAME_LEN, m->u.hello.name);
        put16(out, HELLO_MIN, m->u.hello.min_version);
        put16(out, HELLO_MAX, m->u.hello.max_version);
        put16(out, HELLO_REGION, m->u.hello.max_region);
        put16(out, HELLO_S2C, m->u.hello.max_s2c_ring);
        put16(out, HELLO_C2S, m->u.hello.max_c2s_ring);
        out[HELLO_LOG2] = m->u.hello.max_log2_ring_size;
        break;
    case HP__MEMIF_MSG_INIT:
        put16(out, INIT_VERSION, m->u.init.version);
        put32(out, INIT_ID, m->u.init.id);
        out[INIT_MODE] = m->u.init.mode;
        memcpy(out + INIT_SECRET, m->u.init.secret, HP__MEMIF_SECRET_LEN);
        put_str(out, INIT_NAME, HP__MEMIF_NAME_LEN, m->u.init.name);
        break;
    case HP__MEMIF_MSG_ADD_REGION:
        put16(out, REGION_INDEX, m->u.add_region.index);
        put64(out, REGION_SIZE, m->u.add_region.size);
        break;
    case HP__MEMIF_MSG_ADD_RING:
        put16(out, RING_FLAGS, m->u.add_ring.flags);
        put16(out, RING_INDEX, m->u.add_ring.index);
        put16(out, RING_REGION, m->u.add_ring.region);
        put32(out, RING_OFFSET, m->u.add_ring.offset);
        out[RING_LOG2] = m->u.add_ring.log2_ring_size;
        put16(out, RING_PRIV, m->u.add_ring.private_hdr_size);
        break;
    case HP__MEMIF_MSG_CONNECT:
    case HP__MEMIF_MSG_CONNECTED:
        put_str(out, CONNECT_NAME, HP__MEMIF_NAME_LEN, m->u.connect.if_name);
        break;
    case HP__MEMIF_MSG_DISCONNECT:
        put32(out, DISC_CODE, m->u.disconnect.code);
        put_str(out, DISC_REASON, HP__MEMIF_REASON_LEN, m->u.disconnect.reason);
        break;
    default:
        break;
    }
}

const char *hp__memif_msg_name(uint16_t type, char *buf)
{
    static const char *const names[] = {"NONE",    "ACK",        "HELLO",
                                        "INIT",    "ADD_REGION", "ADD_RING",
                                        "CONNECT", "CONNECTED",  "DISCONNECT"};
    if (type < sizeof names / sizeof names[0])
        return names[type];
    snprintf(buf, 16, "type %u", type);
    return buf;
}

/* ---- range checks ------------------------------------------------------ */

int hp__memif_check_ring(const struct hp__memif_region *regions, unsigned n, uint16_t region,
                         uint32_t offset, unsigned log2)
{
    if (region >= n || log2 < 1 || log2 > HP__MEMIF_MAX_LOG2 || offset % 8)
        return -EINVAL;
    /* 64-bit sums: offset < 2^32 and the ring < 2^19, no overflow. */
    if ((uint64_t)offset + hp__memif_ring_bytes(log2) > regions[region].size)
        return -EINVAL;
    return 0;
}

/* ---- the handshake ----------------------------------------------------- */

void hp__memif_hs_reset(struct hp__memif_hs *hs)
{
    struct hp__memif_hs keep = *hs;
    memset(hs, 0, sizeof *hs);
    hs->server = keep.server;
    hs->id = keep.id;
    memcpy(hs->secret, keep.secret, sizeof hs->secret);
    hs->queues = keep.queues;
    hs->log2 = keep.log2;
    hs->regions = keep.regions;
    hs->state = hs->server ? HP__MEMIF_HS_WAIT_INIT : HP__MEMIF_HS_WAIT_HELLO;
}

static enum hp__memif_verdict refuse(const char **why, const char *reason)
{
    *why = reason;
    return HP__MEMIF_V_REFUSE;
}

/* Whether the peer's secret is ours, compared as DPDK compares it
 * (strncmp over 24 bytes: up to the first NUL) but in a time that does not
 * say how many bytes matched: the peer's copy is cut at its NUL and padded
 * with zeros, as ours is, then all 24 bytes are compared. Only the peer's
 * own length (strnlen) shows in the time. */
static bool secret_matches(const uint8_t ours[HP__MEMIF_SECRET_LEN],
                           const uint8_t theirs[HP__MEMIF_SECRET_LEN])
{
    uint8_t t[HP__MEMIF_SECRET_LEN] = {0};
    memcpy(t, theirs, strnlen((const char *)theirs, HP__MEMIF_SECRET_LEN));
    uint8_t diff = 0;
    for (unsigned i = 0; i < HP__MEMIF_SECRET_LEN; i++)
        diff |= (uint8_t)(ours[i] ^ t[i]);
    return diff == 0;
}

/* Server: INIT names the interface (id), its mode, and the secret. */
static enum hp__memif_verdict srv_init(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                       const char **why)
{
    if (m->u.init.version != HP__MEMIF_VERSION)
        return refuse(why, "incompatible memif version");
    if (m->u.init.id != hs->id)
        return refuse(why, "ID not found");
    if (m->u.init.mode != HP__MEMIF_MODE_ETHERNET)
        return refuse(why, "only ethernet mode supported");
    static const uint8_t none[HP__MEMIF_SECRET_LEN];
    if (memcmp(hs->secret, none, sizeof none) != 0) {
        if (memcmp(m->u.init.secret, none, sizeof none) == 0)
            return refuse(why, "secret required");
        if (!secret_matches(hs->secret, m->u.init.secret))
            return refuse(why, "incorrect secret");
    }
    memcpy(hs->peer_name, m->u.init.name, sizeof hs->peer_name);
    hs->state = HP__MEMIF_HS_WAIT_SETUP;
    return HP__MEMIF_V_ACK;
}

static enum hp__memif_verdict srv_region(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                         bool has_fd, const char **why)
{
    if (!has_fd)
        return refuse(why, "missing region fd");
    if (m->u.add_region.index != hs->n_regions || hs->n_regions >= HP__MEMIF_MAX_REGIONS)
        return refuse(why, "invalid region index");
    if (m->u.add_region.size == 0 || m->u.add_region.size > HP__MEMIF_MAX_REGION_SIZE)
        return refuse(why, "invalid region size");
    hs->region_size[hs->n_regions++] = m->u.add_region.size;
    return HP__MEMIF_V_ACK;
}

static enum hp__memif_verdict srv_ring(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                       bool has_fd, const char **why)
{
    if (!has_fd)
        return refuse(why, "missing interrupt fd");
    if (m->u.add_ring.flags & ~(uint16_t)HP__MEMIF_RING_FLAG_C2S)
        return refuse(why, "unknown ring flags");
    bool c2s = m->u.add_ring.flags & HP__MEMIF_RING_FLAG_C2S;
    struct hp__memif_ring_def *set = c2s ? hs->c2s : hs->s2c;
    uint16_t i = m->u.add_ring.index;
    if (i >= hs->queues || i >= HP__MEMIF_MAX_QUEUES || set[i].set)
        return refuse(why, "invalid ring index");
    if (m->u.add_ring.log2_ring_size < 1 || m->u.add_ring.log2_ring_size > hs->log2)
        return refuse(why, "invalid ring size");
    if (m->u.add_ring.private_hdr_size != 0)
        return refuse(why, "private headers not supported");
    struct hp__memif_region r[HP__MEMIF_MAX_REGIONS];
    for (unsigned k = 0; k < hs->n_regions; k++)
        r[k] = (struct hp__memif_region){NULL, hs->region_size[k]};
    if (hp__memif_check_ring(r, hs->n_regions, m->u.add_ring.region, m->u.add_ring.offset,
                             m->u.add_ring.log2_ring_size) < 0)
        return refuse(why, "ring outside its region");
    set[i] = (struct hp__memif_ring_def){true, m->u.add_ring.region, m->u.add_ring.offset,
                                         m->u.add_ring.log2_ring_size};
    return HP__MEMIF_V_ACK;
}

/* The rings of one direction: 0 .. n-1 set, none after; n >= 1. */
static int count_rings(const struct hp__memif_ring_def *set)
{
    int n = 0;
    while (n < HP__MEMIF_MAX_QUEUES && set[n].set)
        n++;
    for (int k = n; k < HP__MEMIF_MAX_QUEUES; k++)
        if (set[k].set)
            return -1;
    return n;
}

static enum hp__memif_verdict srv_connect(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                          const char **why)
{
    int c = count_rings(hs->c2s), s = count_rings(hs->s2c);
    if (c <= 0 || s <= 0)
        return refuse(why, "rings missing");
    hs->n_c2s = (uint16_t)c;
    hs->n_s2c = (uint16_t)s;
    memcpy(hs->peer_if, m->u.connect.if_name, sizeof hs->peer_if);
    hs->state = HP__MEMIF_HS_UP;
    return HP__MEMIF_V_CONNECT;
}

static enum hp__memif_verdict server_step(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                          bool has_fd, const char **why)
{
    if (hs->state == HP__MEMIF_HS_WAIT_INIT)
        return m->type == HP__MEMIF_MSG_INIT ? srv_init(hs, m, why)
                                             : refuse(why, "unexpected message");
    if (hs->state != HP__MEMIF_HS_WAIT_SETUP)
        return refuse(why, "unexpected message");
    switch (m->type) {
    case HP__MEMIF_MSG_ADD_REGION:
        return srv_region(hs, m, has_fd, why);
    case HP__MEMIF_MSG_ADD_RING:
        return srv_ring(hs, m, has_fd, why);
    case HP__MEMIF_MSG_CONNECT:
        return srv_connect(hs, m, why);
    default:
        return refuse(why, "unexpected message");
    }
}

static unsigned min_u(unsigned a, unsigned b)
{
    return a < b ? a : b;
}

/* Client: HELLO bounds what the server takes; the run parameters are the
 * smaller of theirs and ours (max_*_ring and max_region are the largest
 * index, so one less than the count). */
static enum hp__memif_verdict cli_hello(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                        const char **why)
{
    if (m->u.hello.min_version > HP__MEMIF_VERSION || m->u.hello.max_version < HP__MEMIF_VERSION)
        return refuse(why, "incompatible memif version");
    if ((unsigned)m->u.hello.max_region + 1 < hs->regions)
        return refuse(why, "the server takes too few regions");
    if (m->u.hello.max_log2_ring_size < 1)
        return refuse(why, "invalid ring size");
    hs->n_c2s = (uint16_t)min_u(hs->queues, (unsigned)m->u.hello.max_c2s_ring + 1);
    hs->n_s2c = (uint16_t)min_u(hs->queues, (unsigned)m->u.hello.max_s2c_ring + 1);
    hs->run_log2 = (uint8_t)min_u(hs->log2, m->u.hello.max_log2_ring_size);
    memcpy(hs->peer_name, m->u.hello.name, sizeof hs->peer_name);
    hs->acks = 0;
    hs->state = HP__MEMIF_HS_WAIT_ACK;
    return HP__MEMIF_V_SETUP;
}

static enum hp__memif_verdict client_step(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                          const char **why)
{
    switch (hs->state) {
    case HP__MEMIF_HS_WAIT_HELLO:
        return m->type == HP__MEMIF_MSG_HELLO ? cli_hello(hs, m, why)
                                              : refuse(why, "unexpected message");
    case HP__MEMIF_HS_WAIT_ACK:
        if (m->type != HP__MEMIF_MSG_ACK)
            return refuse(why, "unexpected message");
        /* The ACK of the last setup message: CONNECT goes next. */
        if (++hs->acks >= hp__memif_hs_setup_msgs(hs))
            hs->state = HP__MEMIF_HS_WAIT_CONNECTED;
        return HP__MEMIF_V_NEXT;
    case HP__MEMIF_HS_WAIT_CONNECTED:
        if (m->type != HP__MEMIF_MSG_CONNECTED)
            return refuse(why, "unexpected message");
        memcpy(hs->peer_if, m->u.connect.if_name, sizeof hs->peer_if);
        hs->state = HP__MEMIF_HS_UP;
        return HP__MEMIF_V_UP;
    default:
        return refuse(why, "unexpected message");
    }
}

enum hp__memif_verdict hp__memif_hs_step(struct hp__memif_hs *hs, const struct hp__memif_msg *m,
                                         bool has_fd, const char **why)
{
    *why = NULL;
    if (m->type == HP__MEMIF_MSG_DISCONNECT)
        return HP__MEMIF_V_PEER_GONE;
    /* A file descriptor is only ever sent with ADD_REGION and ADD_RING. */
    if (has_fd && m->type != HP__MEMIF_MSG_ADD_REGION && m->type != HP__MEMIF_MSG_ADD_RING)
        return refuse(why, "unexpected file descriptor");
    return hs->server ? server_step(hs, m, has_fd, why) : client_step(hs, m, why);
}
