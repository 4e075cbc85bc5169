/* SPDX-License-Identifier: BSD-3-Clause */
/* Text forms of socket addresses: "198.18.0.2:7", "[2001:2::2]:7", or an address alone. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <hotpath/sock.h>

/* A decimal port, 0..65535, digits only (no sign, no spaces). */
static int parse_port(const char *p, uint16_t *out)
{
    if (!*p || strlen(p) > 5)
        return -EINVAL;
    unsigned v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (unsigned)(*p - '0');
    }
    if (v > 65535)
        return -EINVAL;
    *out = (uint16_t)v;
    return 0;
}

HP_API int hp_sockaddr_parse(const char *text, struct hp_sockaddr *out)
{
    if (!text || !out)
        return -EINVAL;
    struct hp_sockaddr a;
    memset(&a, 0, sizeof a);
    char host[INET6_ADDRSTRLEN + 1];
    const char *port = NULL;
    size_t n = strlen(text);
    if (text[0] == '[') {
        /* "[v6]" or "[v6]:port" (RFC 3986 3.2.2's brackets). */
        const char *close = strchr(text, ']');
        if (!close || (size_t)(close - text - 1) >= sizeof host)
            return -EINVAL;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return -EINVAL;
        if (inet_pton(AF_INET6, host, a.addr) != 1)
            return -EINVAL;
        a.family = HP_AF_INET6;
    } else {
        const char *colon = strchr(text, ':');
        if (colon && strchr(colon + 1, ':')) {
            /* Two colons or more: a bare IPv6 address, no port. */
            if (n >= sizeof host || inet_pton(AF_INET6, text, a.addr) != 1)
                return -EINVAL;
            a.family = HP_AF_INET6;
        } else {
            size_t hl = colon ? (size_t)(colon - text) : n;
            if (hl >= sizeof host)
                return -EINVAL;
            memcpy(host, text, hl);
            host[hl] = '\0';
            if (inet_pton(AF_INET, host, a.addr) != 1)
                return -EINVAL;
            a.family = HP_AF_INET4;
            if (colon)
                port = colon + 1;
        }
    }
    if (port && parse_port(port, &a.port) < 0)
        return -EINVAL;
    *out = a;
    return 0;
}

HP_API char *hp_sockaddr_format(const struct hp_sockaddr *a, char *buf, size_t len)
{
    if (!buf || len == 0)
        return buf;
    char host[INET6_ADDRSTRLEN];
    if (!a || (a->family != HP_AF_INET4 && a->family != HP_AF_INET6) ||
        !inet_ntop(a->family == HP_AF_INET4 ? AF_INET : AF_INET6, a->addr, host, sizeof host)) {
        snprintf(buf, len, "(invalid)");
        return buf;
    }
    /* Port 0 means "no port" (what parse gives for an address alone). */
    if (a->port == 0)
        snprintf(buf, len, "%s", host);
    else if (a->family == HP_AF_INET4)
        snprintf(buf, len, "%s:%u", host, a->port);
    else
        snprintf(buf, len, "[%s]:%u", host, a->port);
    return buf;
}
