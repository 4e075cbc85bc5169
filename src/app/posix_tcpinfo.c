/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP_INFO for hotpath sockets, in the layout of Linux's struct tcp_info (the uapi header, not glibc's shorter copy), so that iperf3, ss-like tools and nginx's $tcpinfo_* read the fields they expect. */
#include <errno.h>
#include <linux/tcp.h>
#include <string.h>

#include "posix_internal.h"

/* Linux's numbering of the states (include/net/tcp_states.h). */
static uint8_t linux_state(enum hp_tcp_state s)
{
    static const uint8_t map[] = {
        [HP_TCP_CLOSED] = 7,       [HP_TCP_LISTEN] = 10,     [HP_TCP_SYN_SENT] = 2,
        [HP_TCP_SYN_RECEIVED] = 3, [HP_TCP_ESTABLISHED] = 1, [HP_TCP_FIN_WAIT_1] = 4,
        [HP_TCP_FIN_WAIT_2] = 5,   [HP_TCP_CLOSE_WAIT] = 8,  [HP_TCP_CLOSING] = 11,
        [HP_TCP_LAST_ACK] = 9,     [HP_TCP_TIME_WAIT] = 6,
    };
    return (unsigned)s < sizeof map ? map[s] : 7;
}

static void fill(struct tcp_info *ti, const struct hp_tcp_info *h, enum hp_tcp_state st)
{
    uint32_t mss = h->snd_mss ? h->snd_mss : 536;
    ti->tcpi_state = linux_state(st);
    ti->tcpi_options = (h->ts_ok ? TCPI_OPT_TIMESTAMPS : 0) | (h->ws_ok ? TCPI_OPT_WSCALE : 0);
    ti->tcpi_snd_wscale = h->snd_wscale & 0xf;
    ti->tcpi_rcv_wscale = h->rcv_wscale & 0xf;
    ti->tcpi_rto = h->rto_us;
    ti->tcpi_snd_mss = h->snd_mss;
    ti->tcpi_rcv_mss = h->rcv_mss;
    /* Linux counts these in segments. */
    ti->tcpi_unacked = (h->unacked + mss - 1) / mss;
    ti->tcpi_retrans = 0;
    ti->tcpi_pmtu = h->snd_mss + 40;
    ti->tcpi_rtt = h->srtt_us;
    ti->tcpi_rttvar = h->rttvar_us;
    ti->tcpi_snd_ssthresh = h->ssthresh / mss;
    ti->tcpi_snd_cwnd = h->cwnd / mss;
    ti->tcpi_advmss = h->rcv_mss;
    ti->tcpi_reordering = 3;
    ti->tcpi_rcv_space = h->rcv_wnd;
    ti->tcpi_total_retrans = (uint32_t)h->retrans_segs;
    ti->tcpi_bytes_acked = h->bytes_acked;
    ti->tcpi_bytes_received = h->bytes_received;
    ti->tcpi_segs_out = (uint32_t)h->segs_out;
    ti->tcpi_segs_in = (uint32_t)h->segs_in;
    ti->tcpi_notsent_bytes = h->sndq - h->unacked;
    ti->tcpi_min_rtt = h->srtt_us;
    ti->tcpi_bytes_sent = h->bytes_sent;
    ti->tcpi_snd_wnd = h->snd_wnd;
}

int hp__px_tcp_info(struct px_sock *ps, void *val, socklen_t *len)
{
    if ((int)*len < 0)
        return -EINVAL;
    struct tcp_info ti;
    memset(&ti, 0, sizeof ti);
    struct hp_tcp_info h;
    memset(&h, 0, sizeof h);
    if (ps->t)
        hp_tcp_get_info(ps->t, &h);
    fill(&ti, &h, ps->listening ? HP_TCP_LISTEN : hp_tcp_state(ps->t));
    size_t n = *len < sizeof ti ? *len : sizeof ti;
    memcpy(val, &ti, n);
    *len = (socklen_t)n;
    return 0;
}
