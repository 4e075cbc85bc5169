/* SPDX-License-Identifier: BSD-3-Clause */
/* The wire layer's reasons: outside the errno range, each named by hp_wire_reason() and hp_strerror(). */
#include <errno.h>
#include <string.h>

#include <hotpath/err.h>
#include <hotpath/wire/common.h>

#include "hp_test.h"

HP_TEST(wire_reasons_are_outside_the_errno_range)
{
    /* Linux's errno values end at MAX_ERRNO, 4095. */
    for (int r = HP_WIRE_TRUNCATED; r < HP_WIRE_END; r++) {
        HP_CHECK(r > 4095);
        HP_CHECK(hp_wire_is_reason(-r));
        HP_CHECK(hp_wire_is_reason(r));
    }
    HP_CHECK(!hp_wire_is_reason(0));
    HP_CHECK(!hp_wire_is_reason(-EINVAL));
    HP_CHECK(!hp_wire_is_reason(-EPERM));
    HP_CHECK(!hp_wire_is_reason(-HP_WIRE_END));
    HP_CHECK_EQ(HP_WIRE_NREASONS, 9);
}

HP_TEST(wire_reasons_have_names_and_texts)
{
    HP_CHECK(strcmp(hp_wire_reason(0), "ok") == 0);
    HP_CHECK(strcmp(hp_wire_reason(-HP_WIRE_TRUNCATED), "truncated") == 0);
    HP_CHECK(strcmp(hp_wire_reason(HP_WIRE_NO_SPACE), "no-space") == 0);
    HP_CHECK(strcmp(hp_wire_reason(-EPERM), "unknown") == 0);
    HP_CHECK(strcmp(hp_wire_reason(-HP_WIRE_END), "unknown") == 0);
    for (int r = HP_WIRE_TRUNCATED; r < HP_WIRE_END; r++) {
        const char *t = hp_strerror(-r);
        HP_CHECK(t != NULL);
        HP_CHECK(strcmp(t, "unknown error") != 0);
        /* Each text is its own, and none is an errno's. */
        for (int q = HP_WIRE_TRUNCATED; q < r; q++)
            HP_CHECK(strcmp(t, hp_strerror(-q)) != 0);
        for (int e = 1; e < 134; e++)
            HP_CHECK(strcmp(t, hp_strerror(-e)) != 0);
    }
    HP_CHECK(strcmp(hp_strerror(-HP_WIRE_BAD_CHECKSUM), "bad checksum") == 0);
    HP_CHECK(strcmp(hp_strerror(-HP_WIRE_END), "unknown error") == 0);
    HP_CHECK(strcmp(hp_strerror(-EINVAL), "Invalid argument") == 0);
}
