/* SPDX-License-Identifier: BSD-3-Clause */
/* The pcap decorator: a link that writes every frame it receives and transmits to a libpcap file. */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* The classic libpcap format (pcap-savefile(5)): a 24-byte file header, then
 * per frame a 16-byte record header and the frame's bytes. Fields are in the
 * writer's byte order; readers tell it from the magic number. */
#define PCAP_MAGIC_US      0xa1b2c3d4u /* microsecond timestamps */
#define PCAP_VERSION_MAJOR 2
#define PCAP_VERSION_MINOR 4
/* tcpdump's and Wireshark's default snapshot length: frames longer than this
 * (only possible with long chains) are cut, with their real length kept. */
#define PCAP_SNAPLEN           262144u
#define PCAP_LINKTYPE_ETHERNET 1
#define PCAP_REC_HDR           16
/* A large stdio buffer: one write(2) per MiB rather than per frame. */
#define PCAP_IOBUF (1u << 20)

struct pcap_link {
    struct hp_link l;
    FILE *f;
    char *iobuf;
    /* Transmitted frames are written here first: once the inner link has
     * taken a buffer we may no longer read it (a mem peer may already have
     * freed it), yet only the frames it took may be recorded. */
    unsigned char *stage;
    size_t stage_cap;
    /* After a failed write (disk full) the file may end in a torn record;
     * writing on, should space come back, would put records after it that
     * no reader could find. So the first failure ends the capture: what is
     * on disk stays readable up to the torn record. */
    bool failed;
    uint64_t records, lost;
    char path[128]; /* for messages only (truncated) */
};

static uint32_t rec_len(const struct hp_buf *b)
{
    uint32_t len = hp__frame_len(b);
    return len < PCAP_SNAPLEN ? len : PCAP_SNAPLEN;
}

static void rec_header(unsigned char *h, const struct timespec *ts, const struct hp_buf *b)
{
    uint32_t v[4] = {(uint32_t)ts->tv_sec, (uint32_t)(ts->tv_nsec / 1000), rec_len(b),
                     hp__frame_len(b)};
    memcpy(h, v, sizeof v);
}

static void note_failure(struct pcap_link *p, uint64_t frames)
{
    p->lost += frames;
    if (!p->failed) {
        int err = errno ? errno : EIO;
        p->failed = true;
        /* Drop what stdio still holds, so that fclose adds nothing. */
        __fpurge(p->f);
        /* Recorded for hp_link_error(): the traffic itself goes on. */
        hp__link_fail(err, "pcap %s: write failed (%s): no further frames are recorded", p->path,
                      hp_strerror(err));
    }
}

/* Write received frames straight into the stdio buffer. */
static void write_frames(struct pcap_link *p, struct hp_buf *const *bufs, unsigned n)
{
    if (p->failed) {
        p->lost += n;
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    for (unsigned i = 0; i < n; i++) {
        unsigned char h[PCAP_REC_HDR];
        rec_header(h, &ts, bufs[i]);
        size_t ok = fwrite(h, sizeof h, 1, p->f);
        uint32_t left = rec_len(bufs[i]);
        for (const struct hp_buf *s = bufs[i]; s && left && ok; s = s->next) {
            uint32_t k = s->data_len < left ? s->data_len : left;
            ok = fwrite(hp_buf_data(s), 1, k, p->f) == k;
            left -= k;
        }
        /* Segments shorter than pkt_len (a broken chain): pad, so that the
         * record has the length its header says and the file stays readable. */
        for (; left && ok; left--)
            ok = fputc(0, p->f) != EOF;
        if (!ok) {
            note_failure(p, n - i);
            return;
        }
        p->records++;
    }
}

static int pcap_rx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct pcap_link *p = (struct pcap_link *)l;
    int r = hp_link_rx_burst(l->inner, bufs, n);
    if (r > 0)
        write_frames(p, bufs, (unsigned)r);
    return r;
}

static int pcap_tx(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    struct pcap_link *p = (struct pcap_link *)l;
    if (p->failed || n == 0) {
        int r = hp_link_tx_burst(l->inner, bufs, n);
        if (r > 0)
            p->lost += (unsigned)r;
        return r;
    }
    size_t need = 0;
    for (unsigned i = 0; i < n; i++)
        need += PCAP_REC_HDR + rec_len(bufs[i]);
    if (need > p->stage_cap) {
        size_t cap = p->stage_cap ? p->stage_cap : 65536;
        while (cap < need)
            cap *= 2;
        unsigned char *s = realloc(p->stage, cap);
        if (!s) {
            /* Out of memory: the frames still go out, unrecorded. */
            int r = hp_link_tx_burst(l->inner, bufs, n);
            if (r > 0)
                p->lost += (unsigned)r;
            return r;
        }
        p->stage = s;
        p->stage_cap = cap;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned char *w = p->stage;
    for (unsigned i = 0; i < n; i++) {
        rec_header(w, &ts, bufs[i]);
        uint32_t len = rec_len(bufs[i]);
        if (hp_buf_copy_out(bufs[i], 0, len, w + PCAP_REC_HDR) < 0)
            memset(w + PCAP_REC_HDR, 0, len); /* a broken chain, as above */
        w += PCAP_REC_HDR + len;
    }
    int r = hp_link_tx_burst(l->inner, bufs, n);
    if (r <= 0)
        return r;
    /* Keep the records of the first r frames: those the inner link took. */
    size_t bytes = 0;
    for (int i = 0; i < r; i++) {
        uint32_t incl;
        memcpy(&incl, p->stage + bytes + 8, 4);
        bytes += PCAP_REC_HDR + incl;
    }
    if (fwrite(p->stage, 1, bytes, p->f) != bytes)
        note_failure(p, (unsigned)r);
    else
        p->records += (unsigned)r;
    return r;
}

static int pcap_completions(struct hp_link *l, struct hp_buf **bufs, unsigned n)
{
    return hp_link_completions(l->inner, bufs, n);
}

static int pcap_set_mtu(struct hp_link *l, uint32_t mtu)
{
    return hp_link_set_mtu(l->inner, mtu);
}

static void pcap_stats(const struct hp_link *l, struct hp_link_stats *out)
{
    hp_link_stats(l->inner, out);
}

static int pcap_close(struct hp_link *l)
{
    struct pcap_link *p = (struct pcap_link *)l;
    /* The last records; a failure here is only noted, like any other
     * write failure: the inner link's close decides rc. */
    if (!p->failed && fflush(p->f) != 0)
        note_failure(p, 0);
    fclose(p->f);
    free(p->iobuf);
    free(p->stage);
    return hp_link_close(l->inner);
}

/* Nothing is held here: the inner link decides (its fd is ours). */
static int pcap_prepare_sleep(struct hp_link *l, int64_t *due_ns)
{
    return hp_link_prepare_sleep(l->inner, due_ns);
}

static const struct hp__link_ops pcap_ops = {
    .kind = "pcap",
    .rx = pcap_rx,
    .tx = pcap_tx,
    .prepare_sleep = pcap_prepare_sleep,
    .completions = pcap_completions,
    .set_mtu = pcap_set_mtu,
    .stats = pcap_stats,
    .close = pcap_close,
};

HP_API struct hp_link *hp_link_pcap(struct hp_link *inner, const char *path)
{
    if (!inner || !path || !*path)
        return hp__link_fail_null(EINVAL, "pcap: %s",
                                  inner ? "no file name given" : "no link to wrap");
    struct pcap_link *p = calloc(1, sizeof *p);
    if (!p)
        return hp__link_fail_null(ENOMEM, "pcap %s: out of memory", path);
    snprintf(p->path, sizeof p->path, "%s", path);
    /* "e": O_CLOEXEC, so that a child the application starts does not keep
     * the capture open. */
    p->f = fopen(path, "wbe");
    if (!p->f) {
        int err = errno;
        free(p);
        return hp__link_fail_null(err, "pcap %s: cannot create the file: %s", path,
                                  hp_strerror(err));
    }
    p->iobuf = malloc(PCAP_IOBUF);
    /* Without our buffer stdio uses its own, smaller one: slower, not wrong. */
    if (p->iobuf)
        setvbuf(p->f, p->iobuf, _IOFBF, PCAP_IOBUF);

    unsigned char h[24];
    uint32_t magic = PCAP_MAGIC_US, snaplen = PCAP_SNAPLEN, linktype = PCAP_LINKTYPE_ETHERNET;
    uint16_t major = PCAP_VERSION_MAJOR, minor = PCAP_VERSION_MINOR;
    int32_t thiszone = 0;
    uint32_t sigfigs = 0;
    memcpy(h, &magic, 4);
    memcpy(h + 4, &major, 2);
    memcpy(h + 6, &minor, 2);
    memcpy(h + 8, &thiszone, 4);
    memcpy(h + 12, &sigfigs, 4);
    memcpy(h + 16, &snaplen, 4);
    memcpy(h + 20, &linktype, 4);
    /* Flushed now so that a file that cannot be written fails here, while
     * the caller can still choose what to do, and so that the file is a
     * valid (empty) capture from the start. */
    if (fwrite(h, sizeof h, 1, p->f) != 1 || fflush(p->f) != 0) {
        int err = errno ? errno : EIO;
        fclose(p->f);
        free(p->iobuf);
        free(p);
        return hp__link_fail_null(err, "pcap %s: cannot write the file header: %s", path,
                                  hp_strerror(err));
    }

    struct hp_link *l = &p->l;
    l->ops = &pcap_ops;
    l->pool = inner->pool;
    l->own_pool = false;
    l->flags = inner->flags;
    l->caps = inner->caps;
    l->mtu = inner->mtu;
    l->fd = inner->fd;
    memcpy(l->mac, inner->mac, sizeof l->mac);
    memcpy(l->name, inner->name, sizeof l->name);
    l->inner = inner;
    return l;
}
