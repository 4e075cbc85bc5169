/* SPDX-License-Identifier: BSD-3-Clause */
/* A UDP echo server on the event loop: over an in-memory link with a client stack checking the echoes (default), or on a real interface until Ctrl-C. */
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/hotpath.h>

/*
 * Build against the installed library:
 *   cc -o udp_echo udp_echo.c $(pkg-config --cflags --libs hotpath) -pthread
 * Run:
 *   ./udp_echo                           two stacks over a mem link, no privileges:
 *                                        the client sends 100 datagrams, checks each echo
 *   ./udp_echo KIND IFACE ADDR/LEN       echo on port 7 of a real interface (afpacket,
 *                                        afxdp or tap; root) until Ctrl-C, e.g.
 *                                        ./udp_echo afpacket veth0 198.18.0.2/24
 */

#define PORT  7
#define COUNT 100

struct echo {
    struct hp_stack *s;
    struct hp_loop *loop;
    struct hp_udp_sock *u;
    unsigned long echoed;
};

static struct hp_loop *volatile signal_loop;

static void on_signal(int sig)
{
    (void)sig;
    if (signal_loop)
        hp_loop_stop(signal_loop); /* async-signal-safe */
}

/* A stack on link with one address, and its loop. NULL on failure. */
static struct hp_stack *stack_on(struct hp_link *link, const uint8_t ip[4], uint8_t plen,
                                 unsigned flags)
{
    struct hp_stack_config sc = {.flags = flags};
    struct hp_stack *s = hp_stack_create(&sc);
    int ifx = s ? hp_stack_add_iface(s, link) : -1;
    if (ifx < 0 || hp_stack_add_addr(s, ifx, 4, ip, plen) < 0) {
        hp_stack_destroy(s);
        return NULL;
    }
    return s;
}

/* The server's events: whatever arrived goes back where it came from, in
 * the buffer it came in (zero-copy). */
static void echo_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct echo *e = arg;
    (void)l;
    if (ev->kind != HP_LOOP_SOCK || ev->user != e)
        return;
    struct hp_buf *b;
    struct hp_sockaddr from;
    while (hp_udp_recv_buf(e->u, &b, &from) >= 0) {
        if (hp_udp_send_buf(e->u, b, &from) < 0)
            hp_buf_free(b);
        else
            e->echoed++;
    }
}

static int echo_open(struct echo *e, struct hp_stack *s)
{
    e->s = s;
    e->loop = hp_loop_create(s, NULL);
    e->u = hp_udp_open(s, 4, e);
    struct hp_sockaddr any = {.family = 4, .port = PORT};
    return e->loop && e->u && hp_udp_bind(e->u, &any) == 0 ? 0 : -1;
}

static void echo_close(struct echo *e)
{
    hp_udp_close(e->u);
    hp_loop_destroy(e->loop);
    hp_stack_destroy(e->s);
}

static void *server_main(void *arg)
{
    struct echo *e = arg;
    hp_loop_run(e->loop, echo_event, e);
    hp_thread_exit();
    return NULL;
}

/* The client: one datagram at a time, each echo checked. */
static int client(struct hp_stack *s, const uint8_t server[4])
{
    struct hp_loop *loop = hp_loop_create(s, NULL);
    struct hp_udp_sock *u = hp_udp_open(s, 4, NULL);
    struct hp_sockaddr to = {.family = 4, .port = PORT};
    memcpy(to.addr, server, 4);
    int good = 0;
    for (int i = 0; loop && u && i < COUNT; i++) {
        char msg[32], back[32];
        int len = snprintf(msg, sizeof msg, "datagram %d", i);
        if (hp_udp_sendto(u, msg, (size_t)len, &to) != len)
            break;
        struct hp_loop_event ev[8];
        int n = -1;
        for (int tries = 0; tries < 100 && n < 0; tries++) { /* at most 1 s */
            hp_loop_wait(loop, ev, 8, 10);
            n = hp_udp_recvfrom(u, back, sizeof back, NULL);
        }
        good += n == len && memcmp(msg, back, (size_t)len) == 0;
    }
    printf("udp_echo: %d of %d datagrams came back intact\n", good, COUNT);
    hp_udp_close(u);
    hp_loop_destroy(loop);
    return good == COUNT ? 0 : 1;
}

static int run_mem(void)
{
    static const uint8_t client_ip[4] = {198, 18, 0, 1}, server_ip[4] = {198, 18, 0, 2};
    struct hp_link *ends[2];
    if (hp_link_mem_pair(NULL, ends) < 0)
        return 1;
    struct echo e = {0};
    struct hp_stack *cs = stack_on(ends[0], client_ip, 24, HP_STACK_F_NO_DAD);
    struct hp_stack *ss = stack_on(ends[1], server_ip, 24, HP_STACK_F_NO_DAD);
    pthread_t th;
    if (!cs || !ss || echo_open(&e, ss) < 0 || pthread_create(&th, NULL, server_main, &e) != 0) {
        fprintf(stderr, "udp_echo: %s\n", hp_last_error());
        return 1;
    }
    int rc = client(cs, server_ip);
    hp_loop_stop(e.loop); /* from this thread: the server's loop wakes and returns */
    pthread_join(th, NULL);
    printf("udp_echo: the server echoed %lu\n", e.echoed);
    echo_close(&e);
    hp_stack_destroy(cs);
    hp_pool_thread_flush(hp_link_pool(ends[0]));
    hp_link_close(ends[0]);
    hp_link_close(ends[1]);
    return rc || hp_pools_in_use() != 0;
}

static int run_iface(const char *kind, const char *iface, const char *cidr)
{
    char addr[32];
    const char *slash = strchr(cidr, '/');
    uint8_t ip[4];
    if (!slash || (size_t)(slash - cidr) >= sizeof addr)
        return 2;
    memcpy(addr, cidr, (size_t)(slash - cidr));
    addr[slash - cidr] = '\0';
    if (inet_pton(AF_INET, addr, ip) != 1)
        return 2;
    struct hp_link_config lc = {.iface = iface,
                                .flags = strcmp(kind, "afxdp") ? 0 : HP_LINK_F_COPY};
    struct hp_link *link = hp_link_open(kind, &lc);
    struct hp_stack *s = link ? stack_on(link, ip, (uint8_t)atoi(slash + 1), 0) : NULL;
    struct echo e = {0};
    if (!s || echo_open(&e, s) < 0) {
        fprintf(stderr, "udp_echo: %s\n", hp_last_error());
        return 1;
    }
    signal_loop = e.loop;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("udp_echo: echoing UDP port %d on %s %s, %s (Ctrl-C stops)\n", PORT, kind, iface, cidr);
    fflush(stdout);
    hp_loop_run(e.loop, echo_event, &e);
    signal_loop = NULL;
    printf("udp_echo: echoed %lu datagrams\n", e.echoed);
    echo_close(&e);
    hp_link_close(link);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 1)
        return run_mem();
    if (argc == 4)
        return run_iface(argv[1], argv[2], argv[3]);
    fprintf(stderr, "usage: udp_echo [afpacket|afxdp|tap IFACE ADDR/LEN]\n");
    return 2;
}
