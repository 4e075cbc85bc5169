/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer across fork and exit: a fork child's hotpath sockets die (EBADFD) and the parent's stack is untouched; at exit connections finish sending, counters are written and every buffer must be back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/pool.h>

#include "posix_internal.h"
/* The connections that outlive their handles (closed by the program, still
 * sending) are the stack's: walk its list to wait for them at exit. */
#include "../sock/tcp_internal.h"

/* ---- fork ------------------------------------------------------------------ */

static void at_prepare(void)
{
    pthread_mutex_lock(&hp__px.lock);
}

static void at_parent(void)
{
    pthread_mutex_unlock(&hp__px.lock);
}

/*
 * The child shares the parent's link (AF_XDP rings and UMEM, the AF_PACKET
 * ring, the tap fd): anything it did with the stack would corrupt the
 * parent's. So it never touches it again: its copies of the parent's
 * sockets fail with EBADFD (close works), and new inet sockets fail with
 * EAFNOSUPPORT (or go to the kernel with HOTPATH_FALLBACK=kernel).
 */
static void at_child(void)
{
    pthread_mutex_unlock(&hp__px.lock);
    /* Only the forking thread lives on: nobody sleeps in the loop here. */
    hp__px.loop_busy = false;
    pthread_cond_init(&hp__px.loop_cond, NULL);
    hp__px.app_threads = 1;
    hp__px_waiter_forget();
    if (hp__px.status != PX_ST_UP)
        return;
    hp__px.status = PX_ST_FORKED;
    for (struct px_sock *ps = hp__px.socks; ps; ps = ps->anext) {
        ps->t = ps->t4 = NULL;
        ps->u = ps->u4 = NULL;
        ps->peek = NULL;
        ps->dead = true;
    }
    if (hp__px.link_fd >= 0) {
        hp__px_fd_set(hp__px.link_fd, NULL);
        PX_REAL(close)(hp__px.link_fd);
        hp__px.link_fd = -1;
    }
    if (hp__px.keeper_fd >= 0) {
        hp__px_fd_set(hp__px.keeper_fd, NULL);
        PX_REAL(close)(hp__px.keeper_fd);
        hp__px.keeper_fd = -1;
    }
    /* The loop's epoll set and eventfds are this process's copies: closing
     * them leaves the parent's alone (its memory is not touched). */
    if (hp__px.loop)
        PX_REAL(close)(hp_loop_fd(hp__px.loop));
    hp__px.loop = NULL;
    hp__px.stack = NULL;
    hp__px.link = NULL;
    hp__px.pool = NULL;
    hp__px.sleepers = NULL;
    hp__px.keeper_on = false;
}

void hp__px_atfork_install(void)
{
    pthread_atfork(at_prepare, at_parent, at_child);
}

/* ---- exit ------------------------------------------------------------------ */

/* Connections still delivering what the program sent before it closed
 * them: our FIN not yet acknowledged; with fin_wait2, also those whose FIN
 * was acknowledged but whose peer's FIN has not come (yet to be ACKed). */
static int delivering_(struct hp_stack *s, bool fin_wait2)
{
    if (!s->sock || !s->sock->tcp)
        return 0;
    int n = 0;
    const struct hp__tcp_blocks *bl = &hp__tcp(s)->blocks;
    for (struct hp_tcp_sock *c = hp__tcp_block_next(bl, NULL); c; c = hp__tcp_block_next(bl, c))
        if (c->state == HP_TCP_FIN_WAIT_1 || c->state == HP_TCP_CLOSING ||
            c->state == HP_TCP_LAST_ACK || (fin_wait2 && c->state == HP_TCP_FIN_WAIT_2))
            n++;
    return n;
}

static int delivering(struct hp_stack *s)
{
    return delivering_(s, false);
}

/* A peer that closes when it reads our FIN (most servers) sends its own
 * FIN within a round trip: wait this long for it, so that our last ACK
 * leaves before the stack goes and the peer's connection does not sit in
 * LAST_ACK retransmitting (a hotpath peer: until its own exit). */
#define PX_EXIT_FIN_WAIT2_MS 200

/* Poll the stack until no connection is delivering (with fin_wait2:
 * as delivering_()) or end passes. */
static void drain_until(uint64_t end, bool fin_wait2)
{
    while (delivering_(hp__px.stack, fin_wait2) > 0 && hp__px_now_ns() < end) {
        if (hp__px_drive() > 0)
            continue;
        int64_t t = -1;
        if (hp_loop_prepare(hp__px.loop, &t) > 0)
            continue;
        struct pollfd p = {.fd = hp_loop_fd(hp__px.loop), .events = POLLIN};
        PX_REAL(poll)(&p, 1, t < 0 || t > 10000000 ? 10 : (int)((t + 999999) / 1000000));
    }
}

/* The kernel keeps a closed socket sending after its process exits; we
 * cannot, so exit waits (HOTPATH_EXIT_LINGER_MS at most) for what was
 * queued to be acknowledged, then briefly for the peers' FINs. */
static void drain(void)
{
    uint64_t now = hp__px_now_ns(), end = now + (uint64_t)hp__px.cfg.exit_linger_ms * 1000000u;
    drain_until(end, false);
    now = hp__px_now_ns();
    uint64_t end2 = now + PX_EXIT_FIN_WAIT2_MS * 1000000ull;
    drain_until(end2 < end ? end2 : end, true);
}

struct px_exit_stats {
    uint64_t ctr[HP_STACK_NCOUNTERS];
    struct hp_link_stats link;
    struct hp_memif_stats memif;
    bool is_memif;
    int sockets, delivering;
};

static void collect(struct px_exit_stats *st)
{
    memset(st, 0, sizeof *st);
    for (int c = 0; c < HP_STACK_NCOUNTERS; c++)
        st->ctr[c] = hp_stack_counter(hp__px.stack, (enum hp_stack_ctr)c);
    if (hp__px.link) {
        hp_link_stats(hp__px.link, &st->link);
        st->is_memif = hp_link_memif_stats(hp__px.link, &st->memif) == 0;
    }
    for (struct px_sock *ps = hp__px.socks; ps; ps = ps->anext)
        st->sockets++;
    st->delivering = delivering(hp__px.stack);
}

static void write_json(FILE *f, const struct px_exit_stats *st, long in_use)
{
    fprintf(
        f,
        "{\"pid\": %ld, \"link\": \"%s\", \"iface\": \"%s\", \"polls\": %llu, \"buffers_in_use\": "
        "%ld, "
        "\"sockets_open_at_exit\": %d, \"connections_cut_at_exit\": %d,\n \"link_stats\": {"
        "\"rx_packets\": %llu, \"tx_packets\": %llu, \"rx_dropped\": %llu, \"tx_dropped\": %llu},\n"
        " \"counters\": {",
        (long)getpid(), hp__px.cfg.link, hp__px.cfg.iface, (unsigned long long)hp__px.polls, in_use,
        st->sockets, st->delivering, (unsigned long long)st->link.rx_packets,
        (unsigned long long)st->link.tx_packets, (unsigned long long)st->link.rx_dropped,
        (unsigned long long)st->link.tx_dropped);
    bool first = true;
    for (int c = 0; c < HP_STACK_NCOUNTERS; c++) {
        if (!st->ctr[c])
            continue;
        fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", hp_stack_counter_name((enum hp_stack_ctr)c),
                (unsigned long long)st->ctr[c]);
        first = false;
    }
    fprintf(f, "}");
    /* memif: the link's life (docs/memif.md), for a program that lost its peer. */
    if (st->is_memif) {
        const struct hp_memif_stats *m = &st->memif;
        fprintf(
            f,
            ",\n \"memif\": {\"connects\": %llu, \"disconnects\": %llu, \"refused\": %llu, "
            "\"bad_msgs\": %llu, \"bad_descs\": %llu, \"ring_errors\": %llu, \"tx_down\": %llu, "
            "\"tx_unread\": %llu}",
            (unsigned long long)m->connects, (unsigned long long)m->disconnects,
            (unsigned long long)m->refused, (unsigned long long)m->bad_msgs,
            (unsigned long long)m->bad_descs, (unsigned long long)m->ring_errors,
            (unsigned long long)m->tx_down, (unsigned long long)m->tx_unread);
    }
    fprintf(f, "}\n");
}

static void write_stats(const struct px_exit_stats *st, long in_use)
{
    const char *path = hp__px.cfg.stats_path;
    if (!path[0])
        return;
    if (strcmp(path, "-") == 0) {
        write_json(stderr, st, in_use);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        hp__px_say("HOTPATH_STATS=%s: %s", path, strerror(errno));
        if (fd >= 0)
            PX_REAL(close)(fd);
        return;
    }
    write_json(f, st, in_use);
    fclose(f);
}

long hp__px_teardown(void)
{
    hp__px_keeper_stop();
    hp__px_lock();
    if (hp__px.status != PX_ST_UP || hp__px.pid != getpid()) {
        hp__px_unlock();
        return 0;
    }
    /* What exit does to every open socket: close it (in order, or with a
     * reset when unread data or SO_LINGER 0 ask for one). */
    hp__px_sock_kill_all();
    drain();
    struct px_exit_stats st;
    collect(&st);
    if (st.delivering)
        hp__px_say("%d connection(s) had not delivered everything after %u ms "
                   "(HOTPATH_EXIT_LINGER_MS): cut",
                   st.delivering, hp__px.cfg.exit_linger_ms);
    bool owned = hp__px.extra_poll == NULL;
    hp__px_unmake_loop();
    if (owned) {
        hp_stack_destroy(hp__px.stack);
        if (hp__px.link_fd >= 0)
            hp__px_fd_set(hp__px.link_fd, NULL);
        hp_link_close(hp__px.link);
        if (hp__px.pool)
            hp_pool_destroy(hp__px.pool);
        hp__px.pool = NULL;
    }
    hp__px.stack = NULL;
    hp__px.link = NULL;
    hp__px.link_fd = -1;
    hp__px.status = PX_ST_DOWN;
    /* The test hook's stack is the test's to destroy (and check). */
    long in_use = owned ? hp_pools_in_use() : 0;
    if (in_use)
        hp__px_say("%ld buffer(s) still in use at exit", in_use);
    write_stats(&st, in_use);
    hp__px_unlock();
    return in_use;
}
