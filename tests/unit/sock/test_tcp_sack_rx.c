/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP SACK as the receiver: negotiation (RFC 2018 2), the blocks our ACKs carry (RFC 2018 3-4) and D-SACK (RFC 2883). */
#include <errno.h>
#include <string.h>

#include "tcp_pd.h"

#define PORT 8080
/* After prime(): the peer's next byte. */
#define B 101

/* Established; the peer sent 100 bytes, acknowledged. opts: the peer's SYN
 * options (NULL: PD_SYN_OPTS, with SACK-permitted and timestamps). */
static struct hp_tcp_sock *prime(struct pd *h, const char *opts)
{
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_passive_open(h, l, opts);
    pd_in_data(h, "P.", 1, 1, 1000, 100, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B, PD_ANY, NULL);
    HP_CHECK_EQ(pd_read(h, t, 1000), 100);
    pd_expect_none(h);
    return t;
}

/* RFC 2018 2: without SACK-permitted in the peer's SYN, no SYN-ACK
 * offers it and no ACK carries blocks (the harness's invariants check
 * every segment for blocks on a connection without SACK). */
PD_TEST(tcp_sack_not_offered_by_peer)
{
    prime(h, "mss 1460,ts * 0,nop,ws 7");
    pd_in_data(h, ".", B + 1000, 1, 1000, 1000, NULL);
    pd_expect(h, ".", 1, B, PD_ANY, "ts * *");
    HP_CHECK(!h->last.opt.n_sack);
}

/* The no_sack knob: neither offered nor used, even when the peer asks. */
PD_TEST(tcp_sack_knob_off)
{
    struct hp_tcp_config cfg = {.no_sack = true};
    pd_configure(h, &cfg);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    pd_in(h, "S", 0, 0, 65535, PD_SYN_OPTS);
    pd_expect(h, "S.", 0, 1, PD_ANY, "mss *,ws 3,ts * =");
    pd_in(h, ".", 1, 1, 1000, NULL);
    HP_REQUIRE(hp_tcp_accept(l, h->c, NULL) != NULL);
    pd_in_data(h, ".", 1001, 1, 1000, 1000, NULL);
    pd_expect(h, ".", 1, 1, PD_ANY, "ts * *");
}

/* RFC 2018 4: the first block holds the segment that arrived last; the
 * others follow; with timestamps at most three fit (3). Blocks merge where
 * the holes between them fill. */
PD_TEST(tcp_sack_blocks_most_recent_first)
{
    prime(h, NULL);
    char o[96];
    /* Four islands, arriving high, low, middle, top. */
    pd_in_data(h, ".", B + 5000, 1, 1000, 500, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u", B + 5000, B + 5500);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    pd_in_data(h, ".", B + 1000, 1, 1000, 500, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u", B + 1000, B + 1500, B + 5000, B + 5500);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    pd_in_data(h, ".", B + 2500, 1, 1000, 500, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u %u:%u", B + 2500, B + 3000, B + 1000, B + 1500,
             B + 5000, B + 5500);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    pd_in_data(h, ".", B + 7000, 1, 1000, 500, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u %u:%u", B + 7000, B + 7500, B + 2500, B + 3000,
             B + 1000, B + 1500);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    /* Filling the gap after 1000:1500 merges it with 2500:3000 ... */
    pd_in_data(h, ".", B + 1500, 1, 1000, 1000, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u %u:%u", B + 1000, B + 3000, B + 7000, B + 7500,
             B + 5000, B + 5500);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    /* ... and the first hole's filler leaves only what is above. */
    pd_in_data(h, ".", B, 1, 1000, 1000, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u", B + 7000, B + 7500, B + 5000, B + 5500);
    pd_expect(h, ".", 1, B + 3000, PD_ANY, o);
}

/* Without timestamps four blocks fit (RFC 2018 3). */
PD_TEST(tcp_sack_four_blocks_without_timestamps)
{
    prime(h, "mss 1460,sackok,nop,ws 7");
    for (uint32_t k = 1; k <= 5; k++)
        pd_in_data(h, ".", B + 2000 * k, 1, 1000, 100, "");
    pd_discard(h);
    pd_in_data(h, ".", B + 12000, 1, 1000, 100, "");
    char o[96];
    snprintf(o, sizeof o, "sack %u:%u %u:%u %u:%u %u:%u", B + 12000, B + 12100, B + 10000,
             B + 10100, B + 8000, B + 8100, B + 6000, B + 6100);
    pd_expect(h, ".", 1, B, PD_ANY, o);
}

/* RFC 2883 4.1.1: a retransmission of data already acknowledged is
 * answered at once with a D-SACK block for it, below the ACK. */
PD_TEST(tcp_dsack_duplicate_below_ack)
{
    prime(h, NULL);
    pd_in_data(h, ".", 1, 1, 1000, 100, NULL);
    char o[64];
    snprintf(o, sizeof o, "ts * *,sack 1:%u", B);
    pd_expect(h, ".", 1, B, PD_ANY, o);
    HP_CHECK_EQ(pd_ctr(h, HP_CTR_TCP_DSACK_SENT), 1);
    /* Reported once. */
    pd_in_data(h, "P.", B, 1, 1000, 10, NULL);
    pd_advance_ms(h, 40);
    pd_expect(h, ".", 1, B + 10, PD_ANY, "ts * *");
    /* Partly old, partly new: the old part is the D-SACK. */
    pd_in_data(h, ".", B, 1, 1000, 30, NULL);
    snprintf(o, sizeof o, "ts * *,sack %u:%u", B, B + 10);
    pd_expect(h, ".", 1, B + 30, PD_ANY, o);
}

/* RFC 2883 4.1.2-4.1.3: a duplicate of out-of-order data: the D-SACK
 * block first, then the block that holds it. */
PD_TEST(tcp_dsack_duplicate_out_of_order)
{
    prime(h, NULL);
    pd_in_data(h, ".", B + 1000, 1, 1000, 1000, NULL);
    pd_discard(h);
    pd_in_data(h, ".", B + 1000, 1, 1000, 500, NULL);
    char o[64];
    snprintf(o, sizeof o, "ts * *,sack %u:%u %u:%u", B + 1000, B + 1500, B + 1000, B + 2000);
    pd_expect(h, ".", 1, B, PD_ANY, o);
}

/* RFC 6691: a data segment that carries SACK blocks carries less data, so
 * that data and options stay within the peer's MSS (the harness checks). */
PD_TEST(tcp_sack_blocks_on_data_segments)
{
    struct hp_tcp_sock *t = prime(h, NULL);
    HP_CHECK_EQ(hp_tcp_setopt(t, HP_TCP_OPT_NODELAY, 1), 0);
    pd_in_data(h, ".", B + 1000, 1, 1000, 500, NULL);
    pd_discard(h);
    uint32_t f = pd_full(h);
    HP_CHECK_EQ(pd_send(h, t, 2 * f), 2 * f);
    char o[64];
    snprintf(o, sizeof o, "ts * *,sack %u:%u", B + 1000, B + 1500);
    pd_expect_data(h, ".", 1, B, PD_ANY, f - 12, o);
    HP_CHECK_LE(h->last.len + h->last.optlen, h->mss);
}
