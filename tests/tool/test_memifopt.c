/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared memif options (tools/hotpath/memifopt.c): --memif-secret, and rr's pair taking it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>
#include <hotpath/pool.h>

#include "hp_test.h"
#include "memifopt.h"

HP_TEST(memifopt_secret_parse_and_check)
{
    struct memif_opts m;
    memifopt_init(&m);
    HP_CHECK(m.secret == NULL);
    /* 24 bytes: what INIT holds; one more, or none, is a usage error. */
    HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_SECRET, "abcdefghijklmnopqrstuvwx"), 0);
    HP_CHECK(m.secret && strcmp(m.secret, "abcdefghijklmnopqrstuvwx") == 0);
    HP_CHECK(m.given);
    HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_SECRET, "abcdefghijklmnopqrstuvwxy"), 2);
    HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_SECRET, ""), 2);
    HP_CHECK(strcmp(m.secret, "abcdefghijklmnopqrstuvwx") == 0); /* a refused one leaves it */
    /* Like the other --memif-* options: only with --link memif. */
    HP_CHECK_EQ(memifopt_check("t", "mem", &m), 2);
    HP_CHECK_EQ(memifopt_check("t", "memif", &m), 2); /* no --memif-socket */
    HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_SOCKET, "/tmp/x.sock"), 0);
    HP_CHECK_EQ(memifopt_check("t", "memif", &m), 0);
    struct hp_link_config lc = {0};
    memifopt_apply(&m, &lc);
    HP_CHECK(lc.memif.secret == m.secret);
    HP_CHECK(lc.memif.socket == m.socket);
}

/* Without --memif-secret, HOTPATH_MEMIF_SECRET is the secret (memif only);
 * the option wins; an empty one is none, a long one a usage error. */
HP_TEST(memifopt_secret_from_the_environment)
{
    struct memif_opts m;
    memifopt_init(&m);
    HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_SOCKET, "/tmp/x.sock"), 0);
    HP_REQUIRE_EQ(setenv("HOTPATH_MEMIF_SECRET", "from env", 1), 0);
    HP_CHECK_EQ(memifopt_check("t", "memif", &m), 0);
    HP_CHECK(m.secret && strcmp(m.secret, "from env") == 0);
    struct memif_opts o;
    memifopt_init(&o);
    HP_CHECK_EQ(memifopt_parse("t", &o, MEMIFOPT_SOCKET, "/tmp/x.sock"), 0);
    HP_CHECK_EQ(memifopt_parse("t", &o, MEMIFOPT_SECRET, "from option"), 0);
    HP_CHECK_EQ(memifopt_check("t", "memif", &o), 0);
    HP_CHECK(strcmp(o.secret, "from option") == 0);
    /* Another link: the variable is not ours to take. */
    struct memif_opts k;
    memifopt_init(&k);
    HP_CHECK_EQ(memifopt_check("t", "afpacket", &k), 0);
    HP_CHECK(k.secret == NULL);
    memifopt_init(&k);
    k.socket = "/tmp/x.sock";
    HP_REQUIRE_EQ(setenv("HOTPATH_MEMIF_SECRET", "", 1), 0);
    HP_CHECK_EQ(memifopt_check("t", "memif", &k), 0);
    HP_CHECK(k.secret == NULL);
    HP_REQUIRE_EQ(setenv("HOTPATH_MEMIF_SECRET", "abcdefghijklmnopqrstuvwxy", 1), 0);
    HP_CHECK_EQ(memifopt_check("t", "memif", &k), 2);
    HP_CHECK(k.secret == NULL);
    unsetenv("HOTPATH_MEMIF_SECRET");
}

/* --memif-wait: seconds, more than 0, at most a day; 0 keeps the command's. */
HP_TEST(memifopt_wait_parse)
{
    struct memif_opts m;
    memifopt_init(&m);
    HP_CHECK(memifopt_wait_s(&m, 60) == 60);
    HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_WAIT, "2.5"), 0);
    HP_CHECK(memifopt_wait_s(&m, 60) == 2.5);
    HP_CHECK(m.given);
    static const char *const bad[] = {"0", "-1", "abc", "", "1e9", "nan", "2s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        HP_CHECK_EQ(memifopt_parse("t", &m, MEMIFOPT_WAIT, bad[i]), 2);
        HP_CHECK(m.wait_s == 2.5); /* a refused one leaves it */
    }
}

/* rr's pair: with a secret, both ends up; the server end holds it (a client
 * without it is refused once the pair's client is gone). */
HP_TEST(memifopt_pair_passes_the_secret_to_both_ends)
{
    char base[64], path[80], why[200] = "";
    snprintf(base, sizeof base, "/tmp/hpm-%d-pair", (int)getpid());
    snprintf(path, sizeof path, "%s-3", base);
    struct memif_opts m;
    memifopt_init(&m);
    m.socket = base;
    m.secret = "pair secret";
    struct hp_link_config lc = {0};
    struct hp_link *e[2] = {NULL, NULL};
    HP_REQUIRE_EQ(memifopt_pair(&m, 3, &lc, e, why, sizeof why), 0);
    HP_CHECK(hp_link_up(e[0]) && hp_link_up(e[1]));
    HP_CHECK_EQ(hp_link_close(e[0]), 0);
    struct hp_link_config cc = {0};
    cc.memif.socket = path;
    struct hp_link *c = hp_link_open("memif", &cc);
    HP_REQUIRE(c != NULL);
    struct hp_memif_stats ms = {0};
    for (int k = 0; k < 10000 && !strstr(ms.reason, "secret required"); k++) {
        struct hp_buf *x[4];
        hp_link_rx_burst(e[1], x, 4);
        hp_link_rx_burst(c, x, 4);
        hp_link_memif_stats(c, &ms);
        nanosleep(&(struct timespec){0, 200000}, NULL);
    }
    if (!strstr(ms.reason, "secret required"))
        hp_test_fail(__FILE__, __LINE__, "a client without the secret: '%s'", ms.reason);
    HP_CHECK(!hp_link_up(c));
    HP_CHECK_EQ(hp_link_close(c), 0);
    HP_CHECK_EQ(hp_link_close(e[1]), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
