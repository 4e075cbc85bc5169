/* SPDX-License-Identifier: BSD-3-Clause */
/* The POSIX layer's configuration: the HOTPATH_* environment variables that `hotpath run` sets (docs/apps.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "posix_internal.h"

void hp__px_say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    /* Straight to the kernel: stdio may be the program's, and busy. */
    char out[560];
    int m = snprintf(out, sizeof out, "hotpath: %.*s", n, line);
    if (m > 0) {
        ssize_t r = PX_REAL(write)(2, out, (size_t)(m < (int)sizeof out ? m : (int)sizeof out - 1));
        (void)r;
    }
}

/* A decimal variable in [lo, hi]; def when unset. */
static int env_u32(const char *name, uint32_t def, uint32_t lo, uint32_t hi, uint32_t *out)
{
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || *end || v[0] == '-' || x < lo || x > hi) {
        hp__px_say("%s='%s': wants a number from %u to %u", name, v, lo, hi);
        return -EINVAL;
    }
    *out = (uint32_t)x;
    return 0;
}

static int env_str(const char *name, char *out, size_t cap, bool required)
{
    const char *v = getenv(name);
    out[0] = '\0';
    if (!v || !*v) {
        if (!required)
            return 0;
        hp__px_say("%s is not set: run the program with `hotpath run` or set HOTPATH_LINK, "
                   "HOTPATH_IFACE and HOTPATH_IP (docs/apps.md)",
                   name);
        return -EINVAL;
    }
    if (strlen(v) >= cap) {
        hp__px_say("%s='%s': too long", name, v);
        return -EINVAL;
    }
    memcpy(out, v, strlen(v) + 1);
    return 0;
}

/* One "ADDRESS/LEN" of family f. */
static int parse_cidr(struct px_config *c, const char *name, const char *item, int f)
{
    char host[64];
    const char *slash = strchr(item, '/');
    size_t hl = slash ? (size_t)(slash - item) : strlen(item);
    if (hl == 0 || hl >= sizeof host || c->nip == (int)(sizeof c->ip / sizeof c->ip[0]))
        goto bad;
    memcpy(host, item, hl);
    host[hl] = '\0';
    long plen = f == 4 ? 24 : 64;
    if (slash) {
        char *end;
        plen = strtol(slash + 1, &end, 10);
        if (!slash[1] || *end || plen < 0 || plen > (f == 4 ? 32 : 128))
            goto bad;
    }
    memset(c->ip[c->nip].addr, 0, 16);
    if (inet_pton(f == 4 ? AF_INET : AF_INET6, host, c->ip[c->nip].addr) != 1)
        goto bad;
    c->ip[c->nip].family = f;
    c->ip[c->nip].plen = (uint8_t)plen;
    c->nip++;
    return 0;
bad:
    hp__px_say("%s: '%s' is not an IPv%d ADDRESS/PREFIX-LENGTH (at most 8 addresses)", name, item,
               f);
    return -EINVAL;
}

static int env_cidrs(struct px_config *c, const char *name, int f)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char buf[512];
    if (strlen(v) >= sizeof buf) {
        hp__px_say("%s: too long", name);
        return -EINVAL;
    }
    memcpy(buf, v, strlen(v) + 1);
    char *save = NULL;
    for (char *it = strtok_r(buf, ", ", &save); it; it = strtok_r(NULL, ", ", &save))
        if (parse_cidr(c, name, it, f) < 0)
            return -EINVAL;
    return 0;
}

static int env_gw(const char *name, int f, uint8_t *out, bool *has)
{
    const char *v = getenv(name);
    *has = false;
    if (!v || !*v)
        return 0;
    if (inet_pton(f == 4 ? AF_INET : AF_INET6, v, out) != 1) {
        hp__px_say("%s='%s': not an IPv%d address", name, v, f);
        return -EINVAL;
    }
    *has = true;
    return 0;
}

/* memif: no interface, a control socket instead (docs/memif.md). */
static int parse_memif(struct px_config *c)
{
    const char *v = getenv("HOTPATH_MEMIF_SOCKET");
    if (!v || !*v) {
        hp__px_say("HOTPATH_LINK=memif needs HOTPATH_MEMIF_SOCKET, the control socket's path "
                   "(`hotpath run --link memif --memif-socket PATH`)");
        return -EINVAL;
    }
    /* sun_path holds 108 bytes with the terminator; "@NAME" loses its '@'. */
    if (strlen(v) > 106) {
        hp__px_say("HOTPATH_MEMIF_SOCKET='%s': longer than 106 bytes", v);
        return -EINVAL;
    }
    memcpy(c->memif_socket, v, strlen(v) + 1);
    const char *r = getenv("HOTPATH_MEMIF_ROLE");
    if (!r || !*r || strcmp(r, "client") == 0) {
        c->memif_role = HP_MEMIF_CLIENT;
    } else if (strcmp(r, "server") == 0) {
        c->memif_role = HP_MEMIF_SERVER;
    } else {
        hp__px_say("HOTPATH_MEMIF_ROLE='%s': not client or server", r);
        return -EINVAL;
    }
    const char *sec = getenv("HOTPATH_MEMIF_SECRET");
    if (sec && strlen(sec) >= sizeof c->memif_secret) {
        hp__px_say("HOTPATH_MEMIF_SECRET: longer than 24 bytes");
        return -EINVAL;
    }
    if (sec)
        memcpy(c->memif_secret, sec, strlen(sec) + 1);
    if (env_u32("HOTPATH_MEMIF_ID", 0, 0, UINT32_MAX, &c->memif_id) < 0 ||
        env_u32("HOTPATH_MEMIF_WAIT_MS", 5000, 1, 600000, &c->memif_wait_ms) < 0)
        return -EINVAL;
    /* The link's name, for SO_BINDTODEVICE and the statistics. */
    snprintf(c->iface, sizeof c->iface, "memif%u", c->memif_id);
    return 0;
}

static int parse_link(struct px_config *c)
{
    if (env_str("HOTPATH_LINK", c->link, sizeof c->link, true) < 0)
        return -EINVAL;
    bool memif = strcmp(c->link, "memif") == 0;
    if (strcmp(c->link, "afxdp") && strcmp(c->link, "afpacket") && strcmp(c->link, "tap") &&
        !memif) {
        hp__px_say("HOTPATH_LINK='%s': not afxdp, afpacket, tap or memif", c->link);
        return -EINVAL;
    }
    if (memif ? parse_memif(c) < 0 : env_str("HOTPATH_IFACE", c->iface, sizeof c->iface, true) < 0)
        return -EINVAL;
    if (env_cidrs(c, "HOTPATH_IP", 4) < 0 || env_cidrs(c, "HOTPATH_IP6", 6) < 0)
        return -EINVAL;
    if (c->nip == 0) {
        hp__px_say("no address: set HOTPATH_IP (198.18.0.2/24) and/or HOTPATH_IP6 (2001:2::2/64)");
        return -EINVAL;
    }
    if (env_gw("HOTPATH_GW", 4, c->gw4, &c->has_gw4) < 0 ||
        env_gw("HOTPATH_GW6", 6, c->gw6, &c->has_gw6) < 0)
        return -EINVAL;
    return 0;
}

/* HOTPATH_AFXDP_MODE: comma-separated copy | zerocopy (the bind: unset, the
 * kernel's choice, zero-copy where the driver can) and skb (XDP attached in
 * generic mode; unset: native where the driver has it, else generic). */
static int env_afxdp_mode(struct px_config *c)
{
    const char *v = getenv("HOTPATH_AFXDP_MODE");
    c->afxdp_flags = 0;
    if (!v || !*v)
        return 0;
    char buf[sizeof c->afxdp_mode];
    if (strlen(v) >= sizeof buf) {
        hp__px_say("HOTPATH_AFXDP_MODE='%s': too long", v);
        return -EINVAL;
    }
    memcpy(buf, v, strlen(v) + 1);
    memcpy(c->afxdp_mode, v, strlen(v) + 1);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "copy") == 0) {
            c->afxdp_flags |= HP_LINK_F_COPY;
        } else if (strcmp(w, "zerocopy") == 0) {
            c->afxdp_flags |= HP_LINK_F_ZEROCOPY;
        } else if (strcmp(w, "skb") == 0) {
            c->afxdp_flags |= HP_LINK_F_XDP_SKB;
        } else {
            hp__px_say("HOTPATH_AFXDP_MODE='%s': '%s' is not copy, zerocopy or skb", v, w);
            return -EINVAL;
        }
    }
    unsigned both = HP_LINK_F_COPY | HP_LINK_F_ZEROCOPY;
    if ((c->afxdp_flags & both) == both) {
        hp__px_say("HOTPATH_AFXDP_MODE='%s': copy and zerocopy exclude each other", v);
        return -EINVAL;
    }
    if ((c->afxdp_flags & HP_LINK_F_ZEROCOPY) && (c->afxdp_flags & HP_LINK_F_XDP_SKB)) {
        hp__px_say("HOTPATH_AFXDP_MODE='%s': zero-copy needs the driver's own XDP, not skb", v);
        return -EINVAL;
    }
    return 0;
}

int hp__px_config_parse(struct px_config *c)
{
    memset(c, 0, sizeof *c);
    const char *fb = getenv("HOTPATH_FALLBACK");
    if (fb && *fb && strcmp(fb, "kernel") != 0 && strcmp(fb, "none") != 0) {
        hp__px_say("HOTPATH_FALLBACK='%s': not kernel or none", fb);
        return -EINVAL;
    }
    c->fallback_kernel = fb && strcmp(fb, "kernel") == 0;
    const char *nd = getenv("HOTPATH_NO_DAD");
    c->no_dad = nd && strcmp(nd, "1") == 0;
    if (env_str("HOTPATH_STATS", c->stats_path, sizeof c->stats_path, false) < 0 ||
        env_str("HOTPATH_PCAP", c->pcap, sizeof c->pcap, false) < 0)
        return -EINVAL;
    if (env_u32("HOTPATH_QUEUE", 0, 0, 4095, &c->queue) < 0 ||
        env_u32("HOTPATH_BUFS", 32768, 1024, 1u << 22, &c->pool_bufs) < 0 ||
        env_u32("HOTPATH_BUSY_POLL_US", 50, 0, 1000000, &c->busy_poll_us) < 0 ||
        env_u32("HOTPATH_EXIT_LINGER_MS", 2000, 0, 600000, &c->exit_linger_ms) < 0 ||
        env_u32("HOTPATH_KEEPER_MS", 10, 0, 60000, &c->keeper_ms) < 0 ||
        env_u32("HOTPATH_TX_BATCH", 1, 0, 1, &c->tx_batch) < 0 || env_afxdp_mode(c) < 0)
        return -EINVAL;
    return parse_link(c);
}
