/* SPDX-License-Identifier: BSD-3-Clause */
/* TCP's debug aids: the per-connection state trace through the log hook at HP_LOG_DEBUG. */
#include <stdio.h>
#include <string.h>

#include <hotpath/log.h>

#include "tcp_pd.h"

#define PORT 8080

struct trace {
    char lines[16][160];
    int n;
};

static void hook(void *ctx, enum hp_log_level level, const char *subsys, const char *msg)
{
    struct trace *t = ctx;
    if (level == HP_LOG_DEBUG && strcmp(subsys, "tcp") == 0 && t->n < 16)
        snprintf(t->lines[t->n++], sizeof t->lines[0], "%s", msg);
}

static bool has(const struct trace *t, const char *what)
{
    for (int i = 0; i < t->n; i++)
        if (strstr(t->lines[i], what))
            return true;
    return false;
}

/* Every state change of a connection is one line: its block, the ports,
 * the old and the new state. */
PD_TEST(tcp_state_trace)
{
    struct trace tr;
    memset(&tr, 0, sizeof tr);
    enum hp_log_level old = hp_log_level();
    hp_set_log_fn(hook, &tr);
    hp_set_log_level(HP_LOG_DEBUG);
    struct hp_tcp_sock *l = pd_listen(h, PORT, 4);
    struct hp_tcp_sock *t = pd_established(h, l);
    HP_CHECK_EQ(hp_tcp_shutdown(t, HP_TCP_SHUT_WR), 0);
    pd_expect(h, "F.", 1, 1, PD_ANY, NULL);
    hp_set_log_fn(NULL, NULL);
    hp_set_log_level(old);
    HP_CHECK(has(&tr, "port 8080 > 40000: LISTEN -> SYN_RECEIVED") ||
             has(&tr, "CLOSED -> SYN_RECEIVED"));
    HP_CHECK(has(&tr, "SYN_RECEIVED -> ESTABLISHED"));
    HP_CHECK(has(&tr, "ESTABLISHED -> FIN_WAIT_1"));
    pd_in(h, ".", 1, 2, 1000, NULL);
    HP_CHECK_EQ(hp_tcp_state(t), HP_TCP_FIN_WAIT_2);
}
