/* SPDX-License-Identifier: BSD-3-Clause */
/* Test frames for the kernel-facing link tests: numbered frames with a pattern, sent and checked on both sides. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "frames.h"
#include "hp_test.h"

/* Lengths vary over 60 .. 1514 (the smallest and largest untagged frames at
 * MTU 1500). */
uint32_t tf_frame_len(uint32_t seq)
{
    return 60 + (seq * 97u) % (1514 - 60 + 1);
}

void tf_make_frame(uint8_t *f, uint32_t len, const uint8_t dst[6], const uint8_t src[6],
                   uint32_t seq)
{
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = TEST_ETHERTYPE >> 8;
    f[13] = TEST_ETHERTYPE & 0xff;
    uint32_t be = htonl(seq);
    memcpy(f + 14, &be, 4);
    for (uint32_t i = 18; i < len; i++)
        f[i] = (uint8_t)(seq * 7 + i);
}

/* A frame of the test EtherType, tagged (802.1Q) or not. */
bool tf_is_test_frame(const uint8_t *f, size_t len)
{
    if (len >= 18 && f[12] == 0x81 && f[13] == 0x00)
        return f[16] == (TEST_ETHERTYPE >> 8) && f[17] == (TEST_ETHERTYPE & 0xff);
    return len >= 18 && f[12] == (TEST_ETHERTYPE >> 8) && f[13] == (TEST_ETHERTYPE & 0xff);
}

/* A buffer from pool holding frame seq; with segs > 1, a chain of that many
 * segments. NULL when the pool is empty. */
struct hp_buf *tf_frame_buf(struct hp_pool *pool, uint32_t len, const uint8_t dst[6],
                            const uint8_t src[6], uint32_t seq, unsigned segs)
{
    uint8_t f[2048];
    tf_make_frame(f, len, dst, src, seq);
    struct hp_buf *head = NULL;
    uint32_t off = 0;
    for (unsigned s = 0; s < segs; s++) {
        uint32_t part = s + 1 == segs ? len - off : len / segs;
        struct hp_buf *b = hp_buf_alloc(pool);
        uint8_t *p = b ? hp_buf_append(b, part) : NULL;
        if (!p) {
            hp_buf_free(b);
            hp_buf_free(head);
            return NULL;
        }
        memcpy(p, f + off, part);
        off += part;
        if (!head)
            head = b;
        else if (hp_buf_chain(head, b) < 0) {
            hp_buf_free(b);
            hp_buf_free(head);
            return NULL;
        }
    }
    return head;
}

long long tf_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A packet socket on ifname (in the calling thread's namespace) for the test
 * EtherType only, never seeing its own transmissions, with a receive buffer
 * large enough for a burst. */
int tf_raw_open(const char *ifname)
{
    unsigned idx = if_nametoindex(ifname);
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(TEST_ETHERTYPE));
    if (fd < 0 || idx == 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int sz = 16 << 20, one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz);
    (void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(TEST_ETHERTYPE);
    sll.sll_ifindex = (int)idx;
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * Receive test frames on the packet socket until `want` arrived or WAIT_MS
 * passed. They must come in order: the k-th is compared with frame
 * first + k; mismatches are counted in *bad. @return frames received.
 */
unsigned tf_raw_receive(int fd, uint32_t first, unsigned want, const uint8_t dst[6],
                        const uint8_t src[6], unsigned *bad)
{
    uint8_t got[2048], exp[2048];
    unsigned k = 0;
    long long end = tf_now_ms() + WAIT_MS;
    while (k < want) {
        ssize_t r = recv(fd, got, sizeof got, 0);
        if (r < 0) {
            long long left = end - tf_now_ms();
            if ((errno != EAGAIN && errno != EINTR) || left <= 0)
                break;
            struct pollfd p = {.fd = fd, .events = POLLIN};
            (void)poll(&p, 1, (int)left);
            continue;
        }
        if (!tf_is_test_frame(got, (size_t)r))
            continue;
        uint32_t seq = first + k, len = tf_frame_len(seq);
        tf_make_frame(exp, len, dst, src, seq);
        if ((uint32_t)r != len || memcmp(got, exp, len) != 0)
            (*bad)++;
        k++;
    }
    return k;
}

/*
 * Receive test frames from the link, bursts of `burst`, until `want` arrived
 * or WAIT_MS passed, comparing them as raw_receive does. Other frames are
 * freed and counted in *stray. @return frames received.
 */
unsigned tf_link_receive(struct hp_link *l, unsigned burst, uint32_t first, unsigned want,
                         const uint8_t dst[6], const uint8_t src[6], unsigned *bad, unsigned *stray)
{
    struct hp_buf *bufs[64];
    uint8_t exp[2048];
    unsigned k = 0;
    if (burst > 64)
        burst = 64;
    long long end = tf_now_ms() + WAIT_MS;
    while (k < want) {
        int r = hp_link_rx_burst(l, bufs, burst);
        if (r < 0)
            break;
        if (r == 0) {
            long long left = end - tf_now_ms();
            if (left <= 0)
                break;
            struct pollfd p = {.fd = hp_link_fd(l), .events = POLLIN};
            (void)poll(&p, 1, (int)(left < 50 ? left : 50));
            continue;
        }
        for (int i = 0; i < r; i++) {
            struct hp_buf *b = bufs[i];
            const uint8_t *f = hp_buf_data(b);
            if (b->next || !tf_is_test_frame(f, b->data_len)) {
                (*stray)++;
            } else {
                uint32_t seq = first + k, len = tf_frame_len(seq);
                tf_make_frame(exp, len, dst, src, seq);
                if (b->pkt_len != len || b->data_len != len || memcmp(f, exp, len) != 0)
                    (*bad)++;
                k++;
            }
            hp_buf_free(b);
        }
    }
    return k;
}

/* Transmit frames first .. first + count - 1 in bursts of up to 32, every
 * tenth as a chain of three segments; false when the link stops taking them
 * for WAIT_MS. */
bool tf_link_send(struct hp_link *l, uint32_t first, unsigned count, const uint8_t dst[6],
                  const uint8_t src[6])
{
    struct hp_buf *bufs[32];
    unsigned done = 0;
    long long end = tf_now_ms() + WAIT_MS;
    while (done < count) {
        unsigned k = count - done < 32 ? count - done : 32;
        for (unsigned i = 0; i < k; i++) {
            uint32_t seq = first + done + i;
            bufs[i] = tf_frame_buf(hp_link_pool(l), tf_frame_len(seq), dst, src, seq,
                                   seq % 10 == 0 ? 3 : 1);
            if (!bufs[i]) {
                hp_buf_free_bulk(bufs, i);
                return false;
            }
        }
        int r = hp_link_tx_burst(l, bufs, k);
        if (r < 0)
            r = 0;
        hp_buf_free_bulk(bufs + r, k - (unsigned)r);
        done += (unsigned)r;
        if (tf_now_ms() > end)
            return false;
        if ((unsigned)r < k) {
            struct pollfd p = {.fd = hp_link_fd(l), .events = POLLOUT};
            (void)poll(&p, 1, 5);
        }
    }
    return true;
}
