/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link's options (--memif-socket, -role, -id, -secret), shared by every command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memifopt.h"
#include "tool.h"

void memifopt_init(struct memif_opts *m)
{
    memset(m, 0, sizeof *m);
    m->role = HP_MEMIF_CLIENT;
}

int memifopt_parse(const char *cmd, struct memif_opts *m, int c, const char *arg)
{
    switch (c) {
    case MEMIFOPT_SOCKET:
        if (!*arg || strlen(arg) > 106)
            return tool_usage_error(cmd, "--memif-socket '%s': wants a path of 1 to 106 bytes",
                                    arg);
        m->socket = arg;
        break;
    case MEMIFOPT_ROLE:
        if (strcmp(arg, "client") == 0)
            m->role = HP_MEMIF_CLIENT;
        else if (strcmp(arg, "server") == 0)
            m->role = HP_MEMIF_SERVER;
        else
            return tool_usage_error(cmd, "--memif-role '%s': client or server", arg);
        break;
    case MEMIFOPT_ID: {
        char *end;
        errno = 0;
        unsigned long v = strtoul(arg, &end, 10);
        if (errno || *end || !*arg || arg[0] == '-' || v > UINT32_MAX)
            return tool_usage_error(cmd, "--memif-id '%s': wants 0 to 4294967295", arg);
        m->id = (uint32_t)v;
        break;
    }
    case MEMIFOPT_SECRET:
        /* The protocol's INIT message holds 24 bytes; the link refuses more. An
         * empty one would silently mean none (an unset shell variable). */
        if (!*arg || strlen(arg) > MEMIFOPT_SECRET_MAX)
            return tool_usage_error(cmd, "--memif-secret: wants 1 to %d bytes, not %zu",
                                    MEMIFOPT_SECRET_MAX, strlen(arg));
        m->secret = arg;
        break;
    case MEMIFOPT_WAIT: {
        char *end;
        errno = 0;
        double v = strtod(arg, &end);
        if (errno || *end || !*arg || !(v > 0 && v <= 86400))
            return tool_usage_error(
                cmd, "--memif-wait '%s': wants seconds, more than 0, at most 86400", arg);
        m->wait_s = v;
        break;
    }
    default:
        return 1;
    }
    m->given = true;
    return 0;
}

int memifopt_check(const char *cmd, const char *link, struct memif_opts *m)
{
    bool memif = link && strcmp(link, "memif") == 0;
    const char *env = getenv("HOTPATH_MEMIF_SECRET");
    if (memif && !m->secret && env && *env) {
        /* Kept out of the command line, where ps shows it to everyone. */
        if (strlen(env) > MEMIFOPT_SECRET_MAX)
            return tool_usage_error(cmd, "HOTPATH_MEMIF_SECRET: wants 1 to %d bytes, not %zu",
                                    MEMIFOPT_SECRET_MAX, strlen(env));
        m->secret = env;
    }
    if (memif && !m->socket)
        return tool_usage_error(
            cmd, "--link memif needs --memif-socket PATH (the peer's, or ours as server)");
    if (!memif && m->given)
        return tool_usage_error(
            cmd,
            "--memif-wait, --memif-socket, --memif-role, --memif-id and --memif-secret are for "
            "--link memif");
    return 0;
}

void memifopt_apply(const struct memif_opts *m, struct hp_link_config *lc)
{
    lc->memif.socket = m->socket;
    lc->memif.role = m->role;
    lc->memif.id = m->id;
    lc->memif.secret = m->secret;
}

bool memifopt_wait_up(const char *cmd, struct hp_link *l, double timeout_s,
                      volatile sig_atomic_t *stop)
{
    if (hp_link_up(l))
        return true;
    fprintf(stderr, "hotpath %s: waiting for the memif peer on %s\n", cmd, hp_link_name(l));
    double end = tool_now_s() + timeout_s;
    struct hp_buf *b[32];
    while (!hp_link_up(l) && tool_now_s() < end && !(stop && *stop)) {
        int k = hp_link_rx_burst(l, b, 32);
        if (k > 0)
            hp_buf_free_bulk(b, (unsigned)k);
        else
            nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    if (hp_link_up(l))
        return true;
    /* A peer that is there but refuses us (a wrong id or secret), or that we
     * refused, is not a missing peer: say so, and the last reason. */
    struct hp_memif_stats ms;
    if (hp_link_memif_stats(l, &ms) == 0 && ms.refused)
        fprintf(stderr, "hotpath %s: memif %s: %s %llu times, last: %s\n", cmd, hp_link_name(l),
                ms.server ? "refused a client" : "refused by the peer",
                (unsigned long long)ms.refused, ms.reason);
    return false;
}

int memifopt_pair(const struct memif_opts *m, unsigned k, const struct hp_link_config *base,
                  struct hp_link *e[2], char *why, size_t len)
{
    char path[108];
    if (m->socket)
        snprintf(path, sizeof path, "%.90s-%u", m->socket, k);
    else
        snprintf(path, sizeof path, "@hotpath-%d-%u", (int)getpid(), k);
    struct hp_link_config lc = *base;
    lc.memif.socket = path;
    lc.memif.id = m->id;
    lc.memif.secret = m->secret;
    for (int i = 1; i >= 0; i--) {
        lc.memif.role = i ? HP_MEMIF_SERVER : HP_MEMIF_CLIENT;
        e[i] = hp_link_open("memif", &lc);
        if (!e[i]) {
            snprintf(why, len, "memif %s: %s", path, hp_link_error());
            hp_link_close(e[1]);
            e[1] = NULL;
            return -1;
        }
    }
    /* Both ends are ours: poll both until the handshake is done. */
    double end = tool_now_s() + 5;
    struct hp_buf *b[32];
    while (!(hp_link_up(e[0]) && hp_link_up(e[1])) && tool_now_s() < end) {
        for (int i = 0; i < 2; i++) {
            int n = hp_link_rx_burst(e[i], b, 32);
            if (n > 0)
                hp_buf_free_bulk(b, (unsigned)n);
        }
    }
    if (hp_link_up(e[0]) && hp_link_up(e[1]))
        return 0;
    snprintf(why, len, "memif %s: the two ends did not connect in 5 s", path);
    return -1;
}
