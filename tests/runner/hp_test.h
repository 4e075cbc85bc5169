/* SPDX-License-Identifier: BSD-3-Clause */
/* A small test framework: registered tests, checks that print file, line and both values, isolated runs. */
#ifndef HP_TEST_H
#define HP_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*hp_test_fn)(void);

void hp_test_register(const char *name, const char *file, hp_test_fn fn);
/* A teardown hook runs after every test; it returns the number of problems
 * it found (a leaked buffer, say), reported as failures of that test. */
void hp_test_add_teardown(const char *what, int (*hook)(void));
void hp_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void hp_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool hp_test_failed(void);
/* A deterministic seed per run (HP_TEST_SEED overrides), printed on failure. */
uint64_t hp_test_seed(void);
/* xorshift64* generator for tests. */
uint64_t hp_test_rand(uint64_t *state);

/* Unaligned loads and stores of values as they sit in memory. */
static inline uint16_t hp_test_load16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline void hp_test_store16(void *p, uint16_t v)
{
    memcpy(p, &v, 2);
}
static inline uint32_t hp_test_load32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline void hp_test_store32(void *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

#define HP_TEST(name)                                                                              \
    static void hp_test_##name(void);                                                              \
    __attribute__((constructor)) static void hp_test_reg_##name(void)                              \
    {                                                                                              \
        hp_test_register(#name, __FILE__, hp_test_##name);                                         \
    }                                                                                              \
    static void hp_test_##name(void)

#define HP_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            hp_test_fail(__FILE__, __LINE__, "check failed: %s", #cond);                           \
    } while (0)

/* Integer comparisons: both sides are evaluated once and printed in
 * decimal and hex. */
#define HP_CHECK_OP_(a, op, b, ret)                                                                \
    do {                                                                                           \
        long long hp_a_ = (long long)(a), hp_b_ = (long long)(b);                                  \
        if (!(hp_a_ op hp_b_)) {                                                                   \
            hp_test_fail(__FILE__, __LINE__,                                                       \
                         "expected %s " #op " %s\n      left:  %lld (0x%llx)\n"                    \
                         "      right: %lld (0x%llx)",                                             \
                         #a, #b, hp_a_, (unsigned long long)hp_a_, hp_b_,                          \
                         (unsigned long long)hp_b_);                                               \
            ret;                                                                                   \
        }                                                                                          \
    } while (0)

#define HP_CHECK_EQ(a, b) HP_CHECK_OP_(a, ==, b, (void)0)
#define HP_CHECK_NE(a, b) HP_CHECK_OP_(a, !=, b, (void)0)
#define HP_CHECK_LT(a, b) HP_CHECK_OP_(a, <, b, (void)0)
#define HP_CHECK_LE(a, b) HP_CHECK_OP_(a, <=, b, (void)0)
#define HP_CHECK_GT(a, b) HP_CHECK_OP_(a, >, b, (void)0)
#define HP_CHECK_GE(a, b) HP_CHECK_OP_(a, >=, b, (void)0)
/* REQUIRE: as CHECK, then return from the test on failure. */
#define HP_REQUIRE(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            hp_test_fail(__FILE__, __LINE__, "requirement failed: %s", #cond);                     \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define HP_REQUIRE_EQ(a, b) HP_CHECK_OP_(a, ==, b, return )

#define HP_CHECK_STREQ(a, b)                                                                       \
    do {                                                                                           \
        const char *hp_sa_ = (a), *hp_sb_ = (b);                                                   \
        if (!hp_sa_ || !hp_sb_ || strcmp(hp_sa_, hp_sb_) != 0)                                     \
            hp_test_fail(__FILE__, __LINE__,                                                       \
                         "expected %s == %s\n      left:  \"%s\"\n"                                \
                         "      right: \"%s\"",                                                    \
                         #a, #b, hp_sa_ ? hp_sa_ : "(null)", hp_sb_ ? hp_sb_ : "(null)");          \
    } while (0)

#define HP_CHECK_MEMEQ(a, b, n)                                                                    \
    do {                                                                                           \
        if (memcmp((a), (b), (n)) != 0)                                                            \
            hp_test_fail(__FILE__, __LINE__, "expected %zu bytes of %s == %s", (size_t)(n), #a,    \
                         #b);                                                                      \
    } while (0)

/* Stop the test and mark it skipped, with the reason. */
#define HP_SKIP(...)                                                                               \
    do {                                                                                           \
        hp_test_skip(__VA_ARGS__);                                                                 \
        return;                                                                                    \
    } while (0)

/* Stop the test after the first failed check (for loops over many cases). */
#define HP_STOP_IF_FAILED()                                                                        \
    do {                                                                                           \
        if (hp_test_failed())                                                                      \
            return;                                                                                \
    } while (0)

#endif
