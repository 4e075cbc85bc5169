/* SPDX-License-Identifier: BSD-3-Clause */
/* The memif link's options (--memif-socket, -role, -id, -secret), shared by every command. */
#ifndef HOTPATH_TOOL_MEMIFOPT_H
#define HOTPATH_TOOL_MEMIFOPT_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <hotpath/link.h>

struct memif_opts {
    const char *socket; /* --memif-socket PATH ("@NAME": abstract) */
    int role;           /* HP_MEMIF_CLIENT (the default) or HP_MEMIF_SERVER */
    uint32_t id;        /* --memif-id N (default 0) */
    const char *secret; /* --memif-secret S (1 to 24 bytes; NULL: none), else
                         * HOTPATH_MEMIF_SECRET (memifopt_check) */
    double wait_s;      /* --memif-wait S (gen, connect; 0: the command's own) */
    bool given;         /* some --memif-* option was given */
};

/* The longest secret: what the protocol's INIT message holds. */
#define MEMIFOPT_SECRET_MAX 24

/* getopt_long codes of the options, out of the way of single letters. */
enum { MEMIFOPT_SOCKET = 0x300, MEMIFOPT_ROLE, MEMIFOPT_ID, MEMIFOPT_SECRET, MEMIFOPT_WAIT };

/* One entry of a getopt_long table, then the four of memif. */
#define MEMIFOPT_(name, code)                                                                      \
    {                                                                                              \
        name, required_argument, NULL, code                                                        \
    }
#define MEMIFOPT_LONGOPTS                                                                          \
    MEMIFOPT_("memif-socket", MEMIFOPT_SOCKET), MEMIFOPT_("memif-role", MEMIFOPT_ROLE),            \
        MEMIFOPT_("memif-id", MEMIFOPT_ID), MEMIFOPT_("memif-secret", MEMIFOPT_SECRET)

#define MEMIFOPT_HELP                                                                              \
    "  --memif-socket PATH  memif: the control socket (@NAME: abstract; required)\n"               \
    "  --memif-role R       memif: client (the default: connects, makes the shared\n"              \
    "                       memory) or server\n"                                                   \
    "  --memif-id N         memif: the interface id on the socket (default 0)\n"                   \
    "  --memif-secret S     memif: the shared secret, 1 to 24 bytes (a server with one\n"          \
    "                       refuses clients without it; other users see it in ps:\n"               \
    "                       HOTPATH_MEMIF_SECRET in the environment, used without\n"               \
    "                       the option, does not show)\n"

/* --memif-wait, for the commands that wait for a peer before their work
 * (gen, connect; their help says it with their default): its getopt_long
 * entry. */
#define MEMIFOPT_WAIT_LONGOPT MEMIFOPT_("memif-wait", MEMIFOPT_WAIT)
void memifopt_init(struct memif_opts *m);

/* Handle getopt's code c with argument arg for command cmd.
 * @return 0 (taken), 1 (not one of ours), 2 (a usage error, printed). */
int memifopt_parse(const char *cmd, struct memif_opts *m, int c, const char *arg);

/* After parsing: --link memif needs --memif-socket, and the --memif-*
 * options need --link memif; with memif and no --memif-secret, a non-empty
 * HOTPATH_MEMIF_SECRET is the secret (1 to 24 bytes). 0, or 2 after
 * printing the error. */
int memifopt_check(const char *cmd, const char *link, struct memif_opts *m);

/* How long to wait for the peer: --memif-wait, else dflt seconds. */
static inline double memifopt_wait_s(const struct memif_opts *m, double dflt)
{
    return m->wait_s > 0 ? m->wait_s : dflt;
}

/* Put the options into a link configuration (lc->memif). */
void memifopt_apply(const struct memif_opts *m, struct hp_link_config *lc);

/* Poll l (dropping what arrives) until it is up, timeout_s passes, or
 * *stop becomes non-zero (stop may be NULL); says on stderr that it waits,
 * and, when it gives up, how often the peer refused us and why (a wrong id
 * or secret). true when up; other links are always up. */
bool memifopt_wait_up(const char *cmd, struct hp_link *l, double timeout_s,
                      volatile sig_atomic_t *stop);

/* Both ends of a memif link in this process (rr): e[1] the server, e[0]
 * the client, on m's socket path with "-k" after it, or on the abstract
 * name "@hotpath-PID-k"; base gives the rest (pool, ring size). Returns
 * once both are up: 0, or -1 with why set (e[] closed). */
int memifopt_pair(const struct memif_opts *m, unsigned k, const struct hp_link_config *base,
                  struct hp_link *e[2], char *why, size_t len);

#endif
