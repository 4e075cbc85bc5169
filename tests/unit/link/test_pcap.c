/* SPDX-License-Identifier: BSD-3-Clause */
/* The pcap decorator: the file holds every frame received and taken for transmission, in order, and tshark reads it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"

#define MAX_FRAME 1514u
#define TAG_TX    'T'
#define TAG_RX    'R'

/* ---- frames ------------------------------------------------------------- */

/* The bytes of frame `seq` of direction `tag`: a broadcast Ethernet header
 * with the IEEE local experimental EtherType 0x88b5 (so that tshark shows
 * it as data, never as a malformed protocol), the tag, the sequence number
 * and a pattern. */
static void frame_bytes(unsigned char *d, uint32_t len, char tag, uint32_t seq)
{
    for (uint32_t i = 0; i < len; i++)
        d[i] = (unsigned char)(seq * 13 + i * 7);
    memset(d, 0xff, 6);
    static const unsigned char src[6] = {0x02, 0x68, 0x70, 0, 0, 0x99};
    memcpy(d + 6, src, 6);
    d[12] = 0x88;
    d[13] = 0xb5;
    if (len >= 19) {
        d[14] = (unsigned char)tag;
        memcpy(d + 15, &seq, 4);
    }
}

/* A frame of len bytes in nseg segments (each at least one byte). */
static struct hp_buf *frame_new(struct hp_pool *p, char tag, uint32_t seq, uint32_t len,
                                unsigned nseg)
{
    unsigned char d[MAX_FRAME];
    frame_bytes(d, len, tag, seq);
    if (nseg > len)
        nseg = len;
    struct hp_buf *head = NULL;
    uint32_t off = 0;
    for (unsigned s = 0; s < nseg; s++) {
        uint32_t k = s + 1 < nseg ? len / nseg : len - off;
        struct hp_buf *b = hp_buf_alloc(p);
        unsigned char *w = b ? hp_buf_append(b, k) : NULL;
        if (!w) {
            hp_buf_free(b);
            hp_buf_free(head);
            return NULL;
        }
        memcpy(w, d + off, k);
        off += k;
        if (!head)
            head = b;
        else
            hp_buf_chain(head, b);
    }
    return head;
}

/* What the file should hold, record by record. */
struct rec {
    uint32_t len;
    unsigned char bytes[MAX_FRAME];
};

static void rec_add(struct rec *recs, size_t *n, const struct hp_buf *b)
{
    recs[*n].len = b->pkt_len;
    hp_buf_copy_out(b, 0, b->pkt_len, recs[*n].bytes);
    (*n)++;
}

/* ---- the file ------------------------------------------------------------ */

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char path[128];
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/hp-pcap-XXXXXX");
        if (!mkdtemp(tmpdir))
            return NULL;
    }
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static void tmp_clean(const char *path)
{
    if (path)
        unlink(path);
    if (tmpdir[0])
        rmdir(tmpdir);
    tmpdir[0] = 0;
}

struct pcap_file {
    unsigned char *data;
    size_t len;
};

static bool file_read(const char *path, struct pcap_file *pf)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    pf->data = malloc(n > 0 ? (size_t)n : 1);
    pf->len = n > 0 ? fread(pf->data, 1, (size_t)n, f) : 0;
    fclose(f);
    return pf->data != NULL;
}

/* Check the file header and every record against recs; returns the number
 * of records found. Written by hand from pcap-savefile(5), so that the test
 * does not trust the writer's own constants. */
static size_t check_file(const struct pcap_file *pf, const struct rec *recs, size_t nrecs)
{
    HP_CHECK_GE(pf->len, 24u);
    if (pf->len < 24)
        return 0;
    const unsigned char *h = pf->data;
    HP_CHECK_EQ(hp_test_load32(h), 0xa1b2c3d4u);
    HP_CHECK_EQ(hp_test_load16(h + 4), 2);
    HP_CHECK_EQ(hp_test_load16(h + 6), 4);
    HP_CHECK_EQ(hp_test_load32(h + 8), 0);
    uint32_t snaplen = hp_test_load32(h + 16);
    HP_CHECK(snaplen == 262144u || snaplen == 65535u);
    HP_CHECK_EQ(hp_test_load32(h + 20), 1); /* LINKTYPE_ETHERNET */
    size_t off = 24, i = 0;
    uint32_t prev_sec = 0;
    while (off + 16 <= pf->len) {
        uint32_t sec = hp_test_load32(pf->data + off), usec = hp_test_load32(pf->data + off + 4);
        uint32_t incl = hp_test_load32(pf->data + off + 8),
                 orig = hp_test_load32(pf->data + off + 12);
        HP_CHECK_LT(usec, 1000000u);
        HP_CHECK_GT(sec, 1500000000u); /* a wall-clock time, not a monotonic one */
        HP_CHECK_GE(sec + 1, prev_sec);
        prev_sec = sec;
        HP_CHECK_EQ(incl, orig);
        if (off + 16 + incl > pf->len) {
            hp_test_fail(__FILE__, __LINE__, "record %zu cut short", i);
            break;
        }
        if (i < nrecs) {
            HP_CHECK_EQ(orig, recs[i].len);
            if (incl == recs[i].len && memcmp(pf->data + off + 16, recs[i].bytes, incl) != 0)
                hp_test_fail(__FILE__, __LINE__, "record %zu: bytes differ from the frame", i);
        }
        off += 16 + incl;
        i++;
    }
    HP_CHECK_EQ(off, pf->len);
    HP_CHECK_EQ(i, nrecs);
    return i;
}

/* Records of direction `tag` in the file. */
static size_t count_tag(const struct pcap_file *pf, char tag)
{
    size_t n = 0;
    for (size_t off = 24; off + 16 <= pf->len;) {
        uint32_t incl = hp_test_load32(pf->data + off + 8);
        if (incl >= 19 && off + 16 + incl <= pf->len &&
            pf->data[off + 16 + 14] == (unsigned char)tag)
            n++;
        off += 16 + incl;
    }
    return n;
}

/* ---- traffic -------------------------------------------------------------- */

/* Run n frames each way through p (wrapping e[0]) and its peer e[1],
 * in bursts of 1..8 with lengths 19..1514 (room for the tag) and 1..3
 * segments, recording in
 * recs what the file should hold. */
static void traffic(struct hp_link *p, struct hp_link *peer, unsigned n, struct rec *recs,
                    size_t *nrecs)
{
    struct hp_pool *pool = hp_link_pool(p);
    uint64_t rs = hp_test_seed() | 1;
    uint32_t seq_tx = 0, seq_rx = 0, got_tx = 0;
    while (seq_tx < n || seq_rx < n) {
        struct hp_buf *b[8];
        unsigned k = 1 + (unsigned)(hp_test_rand(&rs) % 8);
        if (k > n - seq_tx)
            k = n - seq_tx;
        for (unsigned i = 0; i < k; i++) {
            uint32_t len = 19 + (uint32_t)(hp_test_rand(&rs) % (MAX_FRAME - 18));
            b[i] = frame_new(pool, TAG_TX, seq_tx + i, len, 1 + (unsigned)(hp_test_rand(&rs) % 3));
            HP_REQUIRE(b[i] != NULL);
        }
        size_t mark = *nrecs;
        for (unsigned i = 0; i < k; i++)
            rec_add(recs, nrecs, b[i]);
        HP_REQUIRE_EQ(hp_link_tx_burst(p, b, k), (int)k);
        seq_tx += k;
        /* The peer gets exactly what was recorded, in order. */
        unsigned have = 0;
        int got;
        while ((got = hp_link_rx_burst(peer, b, 8)) > 0) {
            for (int i = 0; i < got; i++, have++) {
                if (have >= k || b[i]->pkt_len != recs[mark + have].len) {
                    hp_test_fail(__FILE__, __LINE__, "the peer received an unexpected frame");
                    continue;
                }
                unsigned char d[MAX_FRAME];
                hp_buf_copy_out(b[i], 0, b[i]->pkt_len, d);
                HP_CHECK_MEMEQ(d, recs[mark + have].bytes, b[i]->pkt_len);
            }
            hp_buf_free_bulk(b, (unsigned)got);
        }
        HP_CHECK_EQ(have, k);
        got_tx += have;

        k = 1 + (unsigned)(hp_test_rand(&rs) % 8);
        if (k > n - seq_rx)
            k = n - seq_rx;
        unsigned char want[8][MAX_FRAME];
        uint32_t want_len[8];
        for (unsigned i = 0; i < k; i++) {
            want_len[i] = 19 + (uint32_t)(hp_test_rand(&rs) % (MAX_FRAME - 18));
            b[i] = frame_new(pool, TAG_RX, seq_rx + i, want_len[i],
                             1 + (unsigned)(hp_test_rand(&rs) % 3));
            HP_REQUIRE(b[i] != NULL);
            hp_buf_copy_out(b[i], 0, want_len[i], want[i]);
        }
        HP_REQUIRE_EQ(hp_link_tx_burst(peer, b, k), (int)k);
        have = 0;
        for (int tries = 0; have < k && tries < 1000; tries++) {
            got = hp_link_rx_burst(p, b, 8);
            HP_REQUIRE(got >= 0);
            for (int i = 0; i < got; i++, have++) {
                HP_CHECK_EQ(b[i]->pkt_len, want_len[have]);
                rec_add(recs, nrecs, b[i]);
                HP_CHECK_MEMEQ(recs[*nrecs - 1].bytes, want[have], want_len[have]);
            }
            hp_buf_free_bulk(b, (unsigned)got);
        }
        HP_REQUIRE_EQ(have, k);
        seq_rx += k;
    }
    HP_CHECK_EQ(got_tx, n);
}

HP_TEST(pcap_records_both_directions_in_order)
{
    const unsigned n = 300;
    const char *path = tmp_path("both.pcap");
    HP_REQUIRE(path != NULL);
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_link *p = hp_link_pcap(e[0], path);
    HP_REQUIRE(p != NULL);
    HP_CHECK_STREQ(hp_link_kind(p), "pcap");
    HP_CHECK_STREQ(hp_link_name(p), hp_link_name(e[0]));
    HP_CHECK(hp_link_pool(p) == hp_link_pool(e[0]));
    HP_CHECK_EQ(hp_link_mtu(p), hp_link_mtu(e[0]));
    HP_CHECK_EQ(hp_link_caps(p), hp_link_caps(e[0]));
    HP_CHECK_EQ(hp_link_fd(p), hp_link_fd(e[0]));
    uint8_t m0[6], m1[6];
    hp_link_mac(p, m0);
    hp_link_mac(e[0], m1);
    HP_CHECK_MEMEQ(m0, m1, 6);

    struct rec *recs = malloc(2 * n * sizeof *recs);
    HP_REQUIRE(recs != NULL);
    size_t nrecs = 0;
    traffic(p, e[1], n, recs, &nrecs);

    /* Counters are the inner link's. */
    struct hp_link_stats sp, si;
    hp_link_stats(p, &sp);
    hp_link_stats(e[0], &si);
    HP_CHECK_MEMEQ(&sp, &si, sizeof sp);
    HP_CHECK_EQ(sp.tx_packets, n);
    HP_CHECK_EQ(sp.rx_packets, n);

    HP_CHECK_EQ(hp_link_close(p), 0); /* closes e[0] too */
    HP_CHECK_EQ(hp_link_close(e[1]), 0);

    struct pcap_file pf = {0};
    HP_CHECK(file_read(path, &pf));
    HP_CHECK_EQ(check_file(&pf, recs, nrecs), 2 * n);
    HP_CHECK_EQ(count_tag(&pf, TAG_TX), n);
    HP_CHECK_EQ(count_tag(&pf, TAG_RX), n);
    free(pf.data);
    free(recs);
    tmp_clean(path);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(pcap_records_only_frames_the_inner_link_took)
{
    const char *path = tmp_path("taken.pcap");
    HP_REQUIRE(path != NULL);
    struct hp_link_config cfg = {.ring_size = 8};
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(&cfg, e), 0);
    struct hp_link *p = hp_link_pcap(e[0], path);
    HP_REQUIRE(p != NULL);
    struct rec *recs = malloc(40 * sizeof *recs);
    HP_REQUIRE(recs != NULL);
    size_t nrecs = 0;
    struct hp_buf *b[20];
    for (uint32_t i = 0; i < 20; i++) {
        b[i] = frame_new(hp_link_pool(p), TAG_TX, i, 14 + i * 61, 1 + i % 2); /* 14 bytes up */
        HP_REQUIRE(b[i] != NULL);
        rec_add(recs, &nrecs, b[i]);
    }
    /* The ring holds 8: the caller keeps 12, which must not be recorded. */
    int r = hp_link_tx_burst(p, b, 20);
    HP_CHECK_EQ(r, 8);
    if (r >= 0)
        hp_buf_free_bulk(b + r, 20 - (unsigned)r);
    nrecs = r > 0 ? (size_t)r : 0;
    /* Nothing taken at all: nothing recorded. */
    struct hp_buf *one = frame_new(hp_link_pool(p), TAG_TX, 99, 60, 1);
    HP_REQUIRE(one != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(p, &one, 1), 0);
    hp_buf_free(one);
    HP_CHECK_EQ(hp_link_tx_burst(p, NULL, 0), 0);

    HP_CHECK_EQ(hp_link_close(p), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0); /* the ring's 8 frames go back too */
    struct pcap_file pf = {0};
    HP_CHECK(file_read(path, &pf));
    HP_CHECK_EQ(check_file(&pf, recs, nrecs), 8);
    free(pf.data);
    free(recs);
    tmp_clean(path);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(pcap_file_cannot_be_created)
{
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    errno = 0;
    struct hp_link *p = hp_link_pcap(e[0], "/nonexistent-hotpath-dir/x/cap.pcap");
    HP_CHECK(p == NULL);
    HP_CHECK_EQ(errno, ENOENT);
    HP_CHECK(strstr(hp_link_error(), "cap.pcap") != NULL);
    errno = 0;
    HP_CHECK(hp_link_pcap(NULL, "/tmp/x.pcap") == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    errno = 0;
    HP_CHECK(hp_link_pcap(e[0], NULL) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    /* The caller still owns e[0]: it works, and closing it is the caller's. */
    struct hp_buf *b = frame_new(hp_link_pool(e[0]), TAG_TX, 1, 64, 1);
    HP_REQUIRE(b != NULL);
    HP_CHECK_EQ(hp_link_tx_burst(e[0], &b, 1), 1);
    HP_CHECK_EQ(hp_link_rx_burst(e[1], &b, 1), 1);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

HP_TEST(pcap_forwards_mtu_completions_and_close)
{
    const char *path = tmp_path("fwd.pcap");
    HP_REQUIRE(path != NULL);
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_link *p = hp_link_pcap(e[0], path);
    HP_REQUIRE(p != NULL);
    HP_CHECK_EQ(hp_link_set_mtu(p, 1000), 0);
    HP_CHECK_EQ(hp_link_mtu(p), 1000u);
    HP_CHECK_EQ(hp_link_mtu(e[0]), 1000u);
    /* The inner link's bound holds through the decorator. */
    HP_CHECK_EQ(hp_link_set_mtu(p, 100000), -EMSGSIZE);
    HP_CHECK_EQ(hp_link_mtu(p), 1000u);
    struct hp_buf *b[4];
    HP_CHECK_EQ(hp_link_completions(p, b, 4), 0);
    /* A frame is left in the peer's ring and one in flight the other way:
     * closing both ends returns them, and the file is complete. */
    b[0] = frame_new(hp_link_pool(p), TAG_TX, 0, 100, 2);
    b[1] = frame_new(hp_link_pool(p), TAG_RX, 0, 100, 1);
    HP_REQUIRE(b[0] && b[1]);
    HP_CHECK_EQ(hp_link_tx_burst(p, &b[0], 1), 1);
    HP_CHECK_EQ(hp_link_tx_burst(e[1], &b[1], 1), 1);
    HP_CHECK_EQ(hp_link_close(p), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    struct pcap_file pf = {0};
    HP_CHECK(file_read(path, &pf));
    HP_CHECK_EQ(pf.len, 24u + 16 + 100);
    free(pf.data);
    tmp_clean(path);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- tshark ---------------------------------------------------------------- */

HP_TEST(pcap_tshark_reads_file)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0)
        HP_SKIP("tshark is not on PATH (apt-get install tshark): the file is checked by our reader "
                "only");
    const unsigned n = 100;
    const char *p0 = tmp_path("tshark.pcap");
    HP_REQUIRE(p0 != NULL);
    char path[128], errpath[128];
    snprintf(path, sizeof path, "%s", p0);
    snprintf(errpath, sizeof errpath, "%s", tmp_path("tshark.err"));
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_link *p = hp_link_pcap(e[0], path);
    HP_REQUIRE(p != NULL);
    struct rec *recs = malloc(2 * n * sizeof *recs);
    HP_REQUIRE(recs != NULL);
    size_t nrecs = 0;
    traffic(p, e[1], n, recs, &nrecs);
    HP_CHECK_EQ(hp_link_close(p), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);

    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r '%s' -T fields -e frame.len -e frame.cap_len -e _ws.malformed 2>'%s'",
             path, errpath);
    FILE *out = popen(cmd, "r");
    HP_REQUIRE(out != NULL);
    char line[128];
    size_t i = 0;
    while (fgets(line, sizeof line, out)) {
        /* "len<TAB>cap_len<TAB>malformed": the last field empty when the
         * dissectors found nothing wrong. */
        unsigned len = 0, cap = 0;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (sscanf(line, "%u %u", &len, &cap) != 2 || !t2 || (t2[1] && t2[1] != '\n')) {
            hp_test_fail(__FILE__, __LINE__, "tshark printed \"%s\"", line);
            continue;
        }
        if (i < nrecs) {
            HP_CHECK_EQ(len, recs[i].len);
            HP_CHECK_EQ(cap, recs[i].len);
        }
        i++;
    }
    int st = pclose(out);
    HP_CHECK(WIFEXITED(st));
    HP_CHECK_EQ(WEXITSTATUS(st), 0);
    HP_CHECK_EQ(i, nrecs);
    HP_CHECK_EQ(i, 2 * n);

    /* tshark says what it disliked on stderr, with status 0 all the same. */
    FILE *ef = fopen(errpath, "r");
    HP_REQUIRE(ef != NULL);
    while (fgets(line, sizeof line, ef)) {
        for (char *c = line; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        if (strstr(line, "malformed") || strstr(line, "cut short"))
            hp_test_fail(__FILE__, __LINE__, "tshark: %s", line);
    }
    fclose(ef);
    unlink(errpath);
    free(recs);
    tmp_clean(path);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* ---- write failures ------------------------------------------------------- */

/* A full device at creation: no link, the reason in errno. */
HP_TEST(pcap_unwritable_file_is_refused)
{
    if (access("/dev/full", W_OK) != 0)
        HP_SKIP("no writable /dev/full");
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    errno = 0;
    HP_CHECK(hp_link_pcap(e[0], "/dev/full") == NULL);
    HP_CHECK_EQ(errno, ENOSPC);
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}

/* The disk fills up during the capture (a file size limit stands in for
 * it): traffic goes on, the failure is reported, and the file holds the
 * first frames, whole, up to at most one torn record. */
HP_TEST(pcap_write_failure_leaves_traffic_alone)
{
    const rlim_t limit = 300000;
    struct rlimit old;
    HP_REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < limit)
        HP_SKIP("file size limit already below %lu bytes", (unsigned long)limit);
    const char *path = tmp_path("full.pcap");
    HP_REQUIRE(path != NULL);
    struct hp_link *e[2];
    HP_REQUIRE_EQ(hp_link_mem_pair(NULL, e), 0);
    struct hp_link *p = hp_link_pcap(e[0], path);
    HP_REQUIRE(p != NULL);
    /* Past the limit write(2) fails with EFBIG instead of raising SIGXFSZ. */
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {limit, old.rlim_max};
    HP_REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);

    const unsigned n = 2000; /* 2000 x 1016 bytes: 2 MB, past a stdio flush */
    struct rec *recs = malloc(n * sizeof *recs);
    HP_REQUIRE(recs != NULL);
    size_t nrecs = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct hp_buf *b = frame_new(hp_link_pool(p), TAG_TX, i, 1000, 1 + i % 2);
        HP_REQUIRE(b != NULL);
        rec_add(recs, &nrecs, b);
        HP_REQUIRE_EQ(hp_link_tx_burst(p, &b, 1), 1);
        HP_REQUIRE_EQ(hp_link_rx_burst(e[1], &b, 1), 1);
        hp_buf_free(b);
    }
    HP_CHECK(strstr(hp_link_error(), "write failed") != NULL);
    HP_CHECK_EQ(hp_link_close(p), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);

    struct pcap_file pf = {0};
    HP_CHECK(file_read(path, &pf));
    HP_CHECK_LE(pf.len, limit);
    HP_CHECK_GE(pf.len, 24u);
    /* Whole records first, each the frame sent in its place. */
    size_t off = 24, i = 0;
    while (off + 16 <= pf.len) {
        uint32_t incl = hp_test_load32(pf.data + off + 8);
        if (off + 16 + incl > pf.len)
            break; /* the torn one */
        HP_REQUIRE(i < nrecs);
        HP_CHECK_EQ(incl, recs[i].len);
        HP_CHECK(memcmp(pf.data + off + 16, recs[i].bytes, incl) == 0);
        off += 16 + incl;
        i++;
    }
    HP_CHECK_GT(i, 0);
    HP_CHECK_LT(i, n);
    free(pf.data);
    free(recs);
    tmp_clean(path);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
