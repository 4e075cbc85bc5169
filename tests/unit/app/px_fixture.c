/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's unit-test fixture (px_fixture.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/link.h>

#include "hp_test.h"
#include "px_fixture.h"

struct px_fix fx;

static const uint8_t IP4[2][4] = {{198, 18, 0, 1}, {198, 18, 0, 2}};
static const uint8_t IP6[2][16] = {{0x20, 0x01, 0, 2, [15] = 1}, {0x20, 0x01, 0, 2, [15] = 2}};

static int poll_peer(void *arg)
{
    (void)arg;
    if (fx.peer_paused)
        return 0;
    int w = hp_stack_poll(fx.b);
    if (fx.peer_hook)
        fx.peer_hook();
    return w;
}

static struct hp_stack *make(int side)
{
    struct hp_stack_config c = {.name = side ? "peer" : "layer", .flags = HP_STACK_F_NO_DAD};
    struct hp_stack *s = hp_stack_create(&c);
    if (!s)
        return NULL;
    int ifx = hp_stack_add_iface(s, fx.e[side]);
    if (ifx < 0 || hp_stack_add_addr(s, ifx, 4, IP4[side], 24) < 0 ||
        hp_stack_add_addr(s, ifx, 6, IP6[side], 64) < 0) {
        hp_stack_destroy(s);
        return NULL;
    }
    return s;
}

int fx_up(void)
{
    /* What the library's constructor does (posix_entry.c is not linked in). */
    static bool once;
    if (!once) {
        once = true;
        hp__px_libc_init();
        hp__px_atfork_install();
    }
    memset(&fx, 0, sizeof fx);
    if (hp_link_mem_pair(NULL, fx.e) < 0)
        return -1;
    fx.a = make(0);
    fx.b = make(1);
    if (!fx.a || !fx.b)
        return -1;
    hp__px_test_attach(fx.a, fx.e[0], poll_peer, NULL);
    return hp__px.status == PX_ST_UP ? 0 : -1;
}

void fx_down(void)
{
    /* What exit does: every fd the test kept is closed. */
    hp__px_lock();
    for (int fd = 0; fd < 4096; fd++) {
        struct px_obj *o = hp__px_fd_get(fd);
        if (o && o->kind != PX_K_INTERNAL) {
            hp__px_unlock();
            hp__px_close(fd);
            hp__px_lock();
        }
    }
    hp__px_unlock();
    hp__px_teardown();
    hp__px_test_attach(NULL, NULL, NULL, NULL);
    hp_stack_destroy(fx.a);
    hp_stack_destroy(fx.b);
    hp_link_close(fx.e[0]);
    hp_link_close(fx.e[1]);
}

int fx_ret(long r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return (int)r;
}

struct sockaddr_in fx_sin(int side, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (side >= 0)
        memcpy(&a.sin_addr, IP4[side], 4);
    return a;
}

struct sockaddr_in6 fx_sin6(int side, uint16_t port)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    if (side >= 0)
        memcpy(&a.sin6_addr, IP6[side], 16);
    return a;
}

struct sockaddr_in6 fx_sin6_mapped(int side, uint16_t port)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    a.sin6_addr.s6_addr[10] = a.sin6_addr.s6_addr[11] = 0xff;
    memcpy(a.sin6_addr.s6_addr + 12, IP4[side], 4);
    return a;
}

struct hp_sockaddr fx_hp(int family, int side, uint16_t port)
{
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    a.family = (uint8_t)family;
    a.port = port;
    if (side >= 0)
        memcpy(a.addr, family == 4 ? IP4[side] : IP6[side], family == 4 ? 4 : 16);
    return a;
}

void fx_drive(int n)
{
    for (int i = 0; i < n; i++) {
        hp__px_lock();
        hp__px_drive();
        hp__px_unlock();
    }
}

struct hp_tcp_sock *fx_peer_listen(int family, uint16_t port)
{
    struct hp_tcp_sock *l = hp_tcp_open(fx.b, family, NULL);
    struct hp_sockaddr a = fx_hp(family, -1, port);
    if (!l || hp_tcp_bind(l, &a) < 0 || hp_tcp_listen(l, 16) < 0) {
        hp_tcp_close(l);
        return NULL;
    }
    return l;
}

struct hp_tcp_sock *fx_peer_accept(struct hp_tcp_sock *l)
{
    for (int i = 0; i < 1000; i++) {
        struct hp_tcp_sock *c = hp_tcp_accept(l, NULL, NULL);
        if (c)
            return c;
        fx_drive(1);
        usleep(1000);
    }
    return NULL;
}

int fx_connected(int family, int flags, uint16_t port, struct hp_tcp_sock **peer)
{
    struct hp_tcp_sock *l = fx_peer_listen(family, port);
    int fd = hp__px_socket(family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | flags, 0);
    if (!l || fd < 0)
        return -1;
    struct sockaddr_in a4 = fx_sin(1, port);
    struct sockaddr_in6 a6 = fx_sin6(1, port);
    int rc = family == 4 ? hp__px_connect(fd, (struct sockaddr *)&a4, sizeof a4)
                         : hp__px_connect(fd, (struct sockaddr *)&a6, sizeof a6);
    if (rc < 0 && rc != -EINPROGRESS)
        return -1;
    *peer = fx_peer_accept(l);
    hp_tcp_close(l);
    /* The tests look at one small write at a time: no Nagle on the peer. */
    if (*peer)
        hp_tcp_setopt(*peer, HP_TCP_OPT_NODELAY, 1);
    for (int i = 0; i < 100 && (flags & SOCK_NONBLOCK); i++)
        fx_drive(1);
    return *peer ? fd : -1;
}

long fx_peer_read(struct hp_tcp_sock *t, void *buf, size_t len)
{
    size_t got = 0;
    for (int i = 0; i < 1000 && got < len; i++) {
        long r = hp_tcp_recv(t, (char *)buf + got, len - got);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0)
            break;
        fx_drive(1);
        if (i > 10)
            usleep(1000);
    }
    return (long)got;
}

bool fx_peer_eof(struct hp_tcp_sock *t)
{
    char b[256];
    for (int i = 0; i < 1000; i++) {
        long r = hp_tcp_recv(t, b, sizeof b);
        if (r == 0)
            return true;
        if (r < 0 && r != -EAGAIN)
            return false;
        fx_drive(1);
        if (i > 10)
            usleep(1000);
    }
    return false;
}
