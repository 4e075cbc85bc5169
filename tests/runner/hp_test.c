/* SPDX-License-Identifier: BSD-3-Clause */
/* Test runner: runs each registered test in its own process, applies teardown checks, prints a summary. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hp_test.h"

/* Under AddressSanitizer, a forked test ends with _exit, which skips the
 * leak checker: run it explicitly, as part of the test's result. */
#if defined(__SANITIZE_ADDRESS__)
#define HP_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HP_TEST_LSAN 1
#endif
#endif
#ifdef HP_TEST_LSAN
int __lsan_do_recoverable_leak_check(void);
#endif

#define MAX_TESTS 1024
#define MAX_HOOKS 16
#define EXIT_SKIP 77

struct test {
    const char *name, *file;
    hp_test_fn fn;
};

static struct test tests[MAX_TESTS];
static int ntests;
static struct {
    const char *what;
    int (*hook)(void);
} hooks[MAX_HOOKS];
static int nhooks;
static int failures; /* failed checks in the current test */
static bool skipped;
static char skip_reason[256];
static uint64_t seed;

void hp_test_register(const char *name, const char *file, hp_test_fn fn)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "hp_test: too many tests (max %d)\n", MAX_TESTS);
        exit(2);
    }
    tests[ntests++] = (struct test){name, file, fn};
}

void hp_test_add_teardown(const char *what, int (*hook)(void))
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i].hook == hook)
            return;
    if (nhooks < MAX_HOOKS) {
        hooks[nhooks].what = what;
        hooks[nhooks].hook = hook;
        nhooks++;
    }
}

void hp_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    if (failures < 20) {
        fprintf(stderr, "    %s:%d: ", file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    } else if (failures == 20) {
        fprintf(stderr, "    (further failures of this test not shown)\n");
    }
    failures++;
}

void hp_test_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(skip_reason, sizeof skip_reason, fmt, ap);
    va_end(ap);
    skipped = true;
}

bool hp_test_failed(void)
{
    return failures > 0;
}

uint64_t hp_test_seed(void)
{
    return seed;
}

uint64_t hp_test_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Run one test in this process: 0 pass, 1 fail, EXIT_SKIP skipped. */
static int run_here(const struct test *t)
{
    failures = 0;
    skipped = false;
    t->fn();
    for (int i = 0; i < nhooks; i++) {
        int n = hooks[i].hook();
        if (n) {
            fprintf(stderr, "    teardown: %s: %d problem(s)\n", hooks[i].what, n);
            failures += n;
        }
    }
    if (failures)
        return 1;
    if (skipped) {
        printf("    skipped: %s\n", skip_reason);
        return EXIT_SKIP;
    }
    return 0;
}

static int run_forked(const struct test *t, unsigned timeout_s)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("hp_test: fork");
        return run_here(t);
    }
    if (pid == 0) {
        alarm(timeout_s);
        int rc = run_here(t);
#ifdef HP_TEST_LSAN
        if (__lsan_do_recoverable_leak_check() != 0) {
            fprintf(stderr, "    teardown: LeakSanitizer found leaks (above)\n");
            rc = 1;
        }
#endif
        fflush(stdout);
        fflush(stderr);
        _exit(rc);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return 1;
    if (WIFEXITED(st))
        return WEXITSTATUS(st) == EXIT_SKIP ? EXIT_SKIP : WEXITSTATUS(st) != 0;
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        fprintf(stderr, "    %s: killed by signal %d (%s)%s\n", t->file, sig, strsignal(sig),
                sig == SIGALRM ? ": timed out" : "");
    }
    return 1;
}

static bool selected(const struct test *t, int argc, char **argv)
{
    bool any = false;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        any = true;
        if (strstr(t->name, argv[i]))
            return true;
    }
    return !any;
}

int main(int argc, char **argv)
{
    bool fork_each = true, list = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-fork") == 0)
            fork_each = false;
        else if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: %s [--list] [--no-fork] [NAME-SUBSTRING...]\n"
                   "env: HP_TEST_SEED=N, HP_TEST_TIMEOUT=SECONDS (default 600), "
                   "HP_TEST_NOFORK=1\n",
                   argv[0]);
            return 0;
        }
    }
    const char *e = getenv("HP_TEST_NOFORK");
    if (e && *e == '1')
        fork_each = false;
    e = getenv("HP_TEST_SEED");
    seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL);
    unsigned timeout_s = 600;
    e = getenv("HP_TEST_TIMEOUT");
    if (e)
        timeout_s = (unsigned)strtoul(e, NULL, 10);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int pass = 0, fail = 0, skip = 0;
    for (int i = 0; i < ntests; i++) {
        const struct test *t = &tests[i];
        if (!selected(t, argc, argv))
            continue;
        if (list) {
            printf("%s\n", t->name);
            continue;
        }
        double t0 = now_ms();
        int rc = fork_each ? run_forked(t, timeout_s) : run_here(t);
        double ms = now_ms() - t0;
        if (rc == 0) {
            pass++;
            printf("PASS  %s (%.0f ms)\n", t->name, ms);
        } else if (rc == EXIT_SKIP) {
            skip++;
            printf("SKIP  %s\n", t->name);
        } else {
            fail++;
            printf("FAIL  %s (%.0f ms; HP_TEST_SEED=%llu)\n", t->name, ms,
                   (unsigned long long)seed);
        }
    }
    if (list)
        return 0;
    printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
    return fail ? 1 : 0;
}
