/* SPDX-License-Identifier: BSD-3-Clause */
/* Two hotpath stacks over an in-memory link, each on its own thread and event loop: a client connects, says hello, the server answers, both close. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <hotpath/hotpath.h>

/*
 * Build against the installed library:
 *   cc -o tcp_hello tcp_hello.c $(pkg-config --cflags --libs hotpath) -pthread
 * Run: ./tcp_hello (no privileges needed: the link is a pair of rings in
 * this process). Exit status 0 when the exchange went through.
 */

static const uint8_t CLIENT_IP[4] = {198, 18, 0, 1};
static const uint8_t SERVER_IP[4] = {198, 18, 0, 2};
#define PORT 80

/* One side: a stack on one end of the link, and the loop that drives it. */
struct side {
    struct hp_stack *s;
    struct hp_loop *loop;
    int ok;
};

static int side_up(struct side *d, struct hp_link *link, const uint8_t ip[4])
{
    struct hp_stack_config sc = {.flags = HP_STACK_F_NO_DAD};
    d->s = hp_stack_create(&sc);
    if (!d->s)
        return -1;
    int ifx = hp_stack_add_iface(d->s, link);
    if (ifx < 0 || hp_stack_add_addr(d->s, ifx, 4, ip, 24) < 0)
        return -1;
    d->loop = hp_loop_create(d->s, NULL); /* the default spin, then sleep */
    return d->loop ? 0 : -1;
}

/* ---- the server: accept one connection, answer its hello, close ---------------- */

struct server {
    struct side d;
    struct hp_tcp_sock *listener, *conn;
    char lis_tag, conn_tag; /* the sockets' user pointers point here */
};

static void server_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct server *v = arg;
    if (ev->kind != HP_LOOP_SOCK)
        return;
    if (ev->user == &v->lis_tag && !v->conn) {
        struct hp_sockaddr peer;
        v->conn = hp_tcp_accept(v->listener, &v->conn_tag, &peer);
        if (v->conn) {
            char who[48];
            printf("server: accepted %s\n", hp_sockaddr_format(&peer, who, sizeof who));
        }
    }
    if (!v->conn)
        return;
    /* Events are edge-triggered: read until there is nothing left. */
    char buf[64];
    long n;
    while ((n = hp_tcp_recv(v->conn, buf, sizeof buf - 1)) > 0) {
        buf[n] = '\0';
        printf("server: got \"%s\"\n", buf);
        const char reply[] = "hello, client";
        hp_tcp_send(v->conn, reply, sizeof reply - 1);
    }
    if (n == 0) { /* the client's FIN: ours goes after the reply */
        hp_tcp_close(v->conn);
        v->conn = NULL;
        v->d.ok = 1;
        hp_loop_stop(l);
    }
}

static void *server_main(void *arg)
{
    struct server *v = arg;
    hp_loop_run(v->d.loop, server_event, v);
    /* The FIN and the last ACK cross within a few turns. */
    struct hp_loop_event ev[8];
    for (int i = 0; i < 20; i++)
        hp_loop_wait(v->d.loop, ev, 8, 10);
    hp_thread_exit();
    return NULL;
}

/* ---- the client: connect, send hello, read the answer, close ------------------- */

struct client {
    struct side d;
    struct hp_tcp_sock *t;
    char tag;
    int sent;
};

static void client_event(struct hp_loop *l, const struct hp_loop_event *ev, void *arg)
{
    struct client *c = arg;
    if (ev->kind != HP_LOOP_SOCK || ev->user != &c->tag)
        return;
    if ((ev->events & HP_EV_ERR) && hp_tcp_error(c->t)) {
        printf("client: connection failed\n");
        hp_loop_stop(l);
        return;
    }
    if ((ev->events & HP_EV_OUT) && !c->sent) { /* connected */
        const char hello[] = "hello, server";
        c->sent = hp_tcp_send(c->t, hello, sizeof hello - 1) > 0;
        printf("client: connected, sent \"%s\"\n", hello);
    }
    char buf[64];
    long n;
    while ((n = hp_tcp_recv(c->t, buf, sizeof buf - 1)) > 0) {
        buf[n] = '\0';
        printf("client: got \"%s\"\n", buf);
        c->d.ok = strcmp(buf, "hello, client") == 0;
        hp_tcp_shutdown(c->t, HP_TCP_SHUT_WR); /* done: our FIN */
    }
    if (n == 0) /* the server's FIN */
        hp_loop_stop(l);
}

int main(void)
{
    struct hp_link *ends[2];
    if (hp_link_mem_pair(NULL, ends) < 0) {
        fprintf(stderr, "tcp_hello: %s\n", hp_last_error());
        return 1;
    }
    struct server v = {0};
    struct client c = {0};
    if (side_up(&v.d, ends[1], SERVER_IP) < 0 || side_up(&c.d, ends[0], CLIENT_IP) < 0) {
        fprintf(stderr, "tcp_hello: %s\n", hp_last_error());
        return 1;
    }
    struct hp_sockaddr any = {.family = 4, .port = PORT}, to = {.family = 4, .port = PORT};
    memcpy(to.addr, SERVER_IP, 4);
    v.listener = hp_tcp_open(v.d.s, 4, &v.lis_tag);
    if (!v.listener || hp_tcp_bind(v.listener, &any) < 0 || hp_tcp_listen(v.listener, 8) < 0)
        return 1;
    pthread_t th;
    if (pthread_create(&th, NULL, server_main, &v) != 0)
        return 1;
    c.t = hp_tcp_open(c.d.s, 4, &c.tag);
    if (!c.t || hp_tcp_connect(c.t, &to) != -EINPROGRESS)
        return 1;
    hp_loop_run(c.d.loop, client_event, &c);
    hp_tcp_close(c.t);
    pthread_join(th, NULL);

    hp_tcp_close(v.listener);
    for (int i = 0; i < 2; i++) {
        struct side *d = i ? &v.d : &c.d;
        hp_loop_destroy(d->loop);
        hp_stack_destroy(d->s);
    }
    hp_pool_thread_flush(hp_link_pool(ends[0]));
    hp_link_close(ends[0]);
    hp_link_close(ends[1]);
    int ok = c.d.ok && v.d.ok && hp_pools_in_use() == 0;
    printf("tcp_hello: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
