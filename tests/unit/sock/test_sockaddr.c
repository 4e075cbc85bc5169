/* SPDX-License-Identifier: BSD-3-Clause */
/* Socket address text: parse and format, good and bad strings, round trips. */
#include <errno.h>
#include <string.h>

#include <hotpath/pool.h>
#include <hotpath/sock.h>

#include "hp_test.h"

HP_TEST(sockaddr_parse_ipv4)
{
    struct hp_sockaddr a;
    HP_REQUIRE_EQ(hp_sockaddr_parse("198.18.0.2:7", &a), 0);
    HP_CHECK_EQ(a.family, 4);
    HP_CHECK_EQ(a.port, 7);
    static const uint8_t want[4] = {198, 18, 0, 2};
    HP_CHECK_MEMEQ(a.addr, want, 4);
    HP_REQUIRE_EQ(hp_sockaddr_parse("198.18.0.2", &a), 0);
    HP_CHECK_EQ(a.port, 0);
    HP_REQUIRE_EQ(hp_sockaddr_parse("0.0.0.0:65535", &a), 0);
    HP_CHECK_EQ(a.port, 65535);
}

HP_TEST(sockaddr_parse_ipv6)
{
    struct hp_sockaddr a;
    HP_REQUIRE_EQ(hp_sockaddr_parse("[2001:2::2]:7", &a), 0);
    HP_CHECK_EQ(a.family, 6);
    HP_CHECK_EQ(a.port, 7);
    static const uint8_t want[16] = {0x20, 0x01, 0, 2, [15] = 2};
    HP_CHECK_MEMEQ(a.addr, want, 16);
    HP_REQUIRE_EQ(hp_sockaddr_parse("2001:2::2", &a), 0);
    HP_CHECK_EQ(a.family, 6);
    HP_CHECK_EQ(a.port, 0);
    HP_REQUIRE_EQ(hp_sockaddr_parse("[::]", &a), 0);
    HP_CHECK_EQ(a.family, 6);
    HP_REQUIRE_EQ(hp_sockaddr_parse("::1", &a), 0);
    HP_CHECK_EQ(a.addr[15], 1);
}

HP_TEST(sockaddr_parse_bad)
{
    static const char *bad[] = {
        "",
        ":",
        "198.18.0.2:",
        "198.18.0.2:65536",
        "198.18.0.2:-1",
        "198.18.0.2:+7",
        "198.18.0.2:7x",
        "198.18.0.256",
        "198.18.0",
        "198.18.0.2:7:8",
        "[2001:2::2",
        "[2001:2::2]7",
        "[2001:2::2]:",
        "[198.18.0.2]:7",
        "2001:2::g",
        "[]:7",
        "host:80",
        " 198.18.0.2",
        "198.18.0.2:0007x",
        "[2001:2::2]:123456",
        "[::1]:99999",
        "1.2.3.4:100000",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct hp_sockaddr a = {.family = 9};
        int rc = hp_sockaddr_parse(bad[i], &a);
        if (rc != -EINVAL)
            hp_test_fail(__FILE__, __LINE__, "'%s' parsed (rc %d)", bad[i], rc);
        HP_CHECK_EQ(a.family, 9); /* untouched on failure */
    }
    struct hp_sockaddr a;
    HP_CHECK_EQ(hp_sockaddr_parse(NULL, &a), -EINVAL);
    HP_CHECK_EQ(hp_sockaddr_parse("1.2.3.4", NULL), -EINVAL);
}

HP_TEST(sockaddr_format_round_trip)
{
    static const char *good[] = {"198.18.0.2:7", "[2001:2::2]:7", "198.18.0.1",
                                 "2001:2::1",    "[::]:65535",    "255.255.255.255:1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct hp_sockaddr a, b;
        char buf[48];
        HP_REQUIRE_EQ(hp_sockaddr_parse(good[i], &a), 0);
        HP_CHECK_STREQ(hp_sockaddr_format(&a, buf, sizeof buf), good[i]);
        HP_REQUIRE_EQ(hp_sockaddr_parse(buf, &b), 0);
        HP_CHECK(a.family == b.family && a.port == b.port && memcmp(a.addr, b.addr, 16) == 0);
    }
    struct hp_sockaddr bad = {.family = 5};
    char buf[48];
    HP_CHECK_STREQ(hp_sockaddr_format(&bad, buf, sizeof buf), "(invalid)");
    /* Longest form fits 48 bytes. */
    struct hp_sockaddr big = {.family = 6, .port = 65535};
    memset(big.addr, 0xab, 16);
    HP_CHECK_STREQ(hp_sockaddr_format(&big, buf, sizeof buf),
                   "[abab:abab:abab:abab:abab:abab:abab:abab]:65535");
    HP_CHECK_EQ(hp_pools_in_use(), 0);
}
