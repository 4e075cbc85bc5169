/* SPDX-License-Identifier: BSD-3-Clause */
/* The log hook: what reaches it, at which level, and the last error of a thread. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/log.h>
#include <hotpath/pool.h>

#include "hp_test.h"

struct seen {
    int n;
    enum hp_log_level level;
    char subsys[32];
    char msg[256];
};

static void hook(void *ctx, enum hp_log_level level, const char *subsys, const char *msg)
{
    struct seen *s = ctx;
    s->n++;
    s->level = level;
    snprintf(s->subsys, sizeof s->subsys, "%s", subsys);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
}

HP_TEST(log_level_names)
{
    HP_CHECK(strcmp(hp_log_level_name(HP_LOG_ERR), "err") == 0);
    HP_CHECK(strcmp(hp_log_level_name(HP_LOG_WARN), "warn") == 0);
    HP_CHECK(strcmp(hp_log_level_name(HP_LOG_INFO), "info") == 0);
    HP_CHECK(strcmp(hp_log_level_name(HP_LOG_DEBUG), "debug") == 0);
    HP_CHECK(strcmp(hp_log_level_name((enum hp_log_level)42), "?") == 0);
}

/* A failed call's reason is the thread's last error; it reaches the hook
 * at debug level only, so the default configuration prints nothing. */
HP_TEST(log_failed_call_reason)
{
    struct seen s = {0};
    hp_set_log_fn(hook, &s);
    enum hp_log_level before = hp_log_level();
    HP_CHECK_EQ(before, HP_LOG_WARN);

    struct hp_pool_config c = {.name = "logtest", .n_bufs = 8, .cache_size = 5000};
    errno = 0;
    HP_CHECK(hp_pool_create(&c) == NULL);
    HP_CHECK_EQ(errno, EINVAL);
    HP_CHECK(strstr(hp_last_error(), "cache_size") != NULL);
    HP_CHECK_EQ(s.n, 0);

    hp_set_log_level(HP_LOG_DEBUG);
    HP_CHECK(hp_pool_create(&c) == NULL);
    HP_CHECK_EQ(s.n, 1);
    HP_CHECK_EQ(s.level, HP_LOG_DEBUG);
    HP_CHECK(strcmp(s.subsys, "pool") == 0);
    HP_CHECK(strstr(s.msg, "cache_size") != NULL);
    HP_CHECK(strchr(s.msg, '\n') == NULL);

    hp_set_log_level(before);
    hp_set_log_fn(NULL, NULL);
}

/* An event no return value can carry (a double free) reaches the hook at
 * error level, naming the pool. */
HP_TEST(log_double_free_reaches_the_hook)
{
    struct seen s = {0};
    hp_set_log_fn(hook, &s);
    struct hp_pool_config c = {.name = "logdf", .n_bufs = 8};
    struct hp_pool *p = hp_pool_create(&c);
    HP_REQUIRE(p);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    hp_buf_free(b);
    hp_buf_free(b);
    HP_CHECK_EQ(s.n, 1);
    HP_CHECK_EQ(s.level, HP_LOG_ERR);
    HP_CHECK(strcmp(s.subsys, "pool") == 0);
    HP_CHECK(strstr(s.msg, "logdf") != NULL);
    hp_set_log_fn(NULL, NULL);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
}

static void *fail_in_thread(void *arg)
{
    (void)arg;
    struct hp_pool_config c = {.name = "logthr", .n_bufs = 8, .cache_size = 6000};
    hp_pool_create(&c);
    return strdup(hp_last_error());
}

/* The last error belongs to the thread that failed. */
HP_TEST(log_last_error_is_per_thread)
{
    struct hp_pool_config c = {.name = "logmain", .n_bufs = 8, .headroom = 4000, .data_room = 2048};
    HP_CHECK(hp_pool_create(&c) == NULL);
    char mine[256];
    snprintf(mine, sizeof mine, "%s", hp_last_error());
    HP_CHECK(strstr(mine, "headroom") != NULL);
    pthread_t t;
    HP_REQUIRE(pthread_create(&t, NULL, fail_in_thread, NULL) == 0);
    void *theirs = NULL;
    pthread_join(t, &theirs);
    HP_CHECK(theirs && strstr(theirs, "cache_size") != NULL);
    free(theirs);
    HP_CHECK(strcmp(hp_last_error(), mine) == 0);
}
