/* SPDX-License-Identifier: BSD-3-Clause */
/* Pool tests: creation errors, caller memory, alien policies, stats, threads and bad frees. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hotpath/buf.h>
#include <hotpath/log.h>
#include <hotpath/pool.h>

#include "buf/internal.h"
#include "hp_test.h"
#include "track.h"

extern char **environ;

/* ---- pools made by these tests, and the teardown check ------------------------ */

/* (track.c keeps them and checks them after every test) */

static struct hp_pool *make_at(int line, const struct hp_pool_config *c)
{
    struct hp_pool *p = hp_pool_create(c);
    if (!p)
        hp_test_fail(__FILE__, line, "hp_pool_create(\"%s\"): %s", c->name ? c->name : "(null)",
                     strerror(errno));
    return track_pool(p);
}
#define MAKE(cfg) make_at(__LINE__, cfg)

/* The usual test pool: n buffers of 512 bytes, normal pages. */
static struct hp_pool_config cfg_of(const char *name, uint32_t n, int policy)
{
    return (struct hp_pool_config){
        .name = name,
        .n_bufs = n,
        .data_room = 512,
        .alien_policy = policy,
        .flags = HP_POOL_F_NO_HUGEPAGES,
    };
}

/* Destroy a pool, which must have every buffer back. */
static void done_at(int line, struct hp_pool *p)
{
    if (!p)
        return;
    long out = hp_pool_in_use(p);
    if (out)
        hp_test_fail(__FILE__, line, "pool \"%s\": %ld buffer(s) still in use", hp_pool_name(p),
                     out);
    int rc = hp_pool_destroy(p);
    if (rc != 0)
        hp_test_fail(__FILE__, line, "hp_pool_destroy(\"%s\") = %d", hp_pool_name(p), rc);
    else
        untrack_pool(p);
}
#define DONE(p) done_at(__LINE__, p)

static struct hp_pool_stats stats_of(const struct hp_pool *p)
{
    struct hp_pool_stats s;
    memset(&s, 0xFF, sizeof s);
    int rc = hp_pool_stats(p, &s);
    if (rc != 0)
        hp_test_fail(__FILE__, __LINE__, "hp_pool_stats = %d", rc);
    return s;
}

/* Allocate every buffer of p (n of them) and check that they are distinct
 * and that one more is refused; then give them all back. */
static void check_whole_at(int line, struct hp_pool *p, uint32_t n)
{
    struct hp_buf **a = calloc(n + 1, sizeof *a);
    if (!a)
        return;
    uint32_t got = 0;
    while (got < n && (a[got] = hp_buf_alloc(p)) != NULL)
        got++;
    if (got < n)
        hp_test_fail(__FILE__, line, "pool \"%s\": only %u of its %u buffers could be allocated",
                     hp_pool_name(p), got, n);
    errno = 0;
    struct hp_buf *extra = hp_buf_alloc(p);
    if (extra || errno != ENOMEM) {
        hp_test_fail(__FILE__, line,
                     "pool \"%s\": buffer %u of %u was handed out (%p, errno %d); "
                     "want NULL, ENOMEM",
                     hp_pool_name(p), n + 1, n, (void *)extra, errno);
        a[got++] = extra;
    }
    /* distinct: the same buffer twice means the free list is corrupt */
    for (uint32_t i = 0; i < got; i++)
        if (a[i])
            a[i]->tag = 0;
    uint32_t dups = 0;
    for (uint32_t i = 0; i < got; i++)
        if (a[i] && a[i]->tag++ != 0)
            dups++;
    if (dups)
        hp_test_fail(__FILE__, line, "pool \"%s\": %u buffer(s) handed out twice", hp_pool_name(p),
                     dups);
    for (uint32_t i = 0; i < got; i++)
        if (a[i] && (a[i]->flags & HP_BUF_F_FREE))
            hp_test_fail(__FILE__, line, "pool \"%s\": allocated buffer %p marked free",
                         hp_pool_name(p), (void *)a[i]);
    /* give each back once, even if it was handed out twice */
    for (uint32_t i = 0; i < got; i++)
        if (a[i] && a[i]->tag != 0) {
            a[i]->tag = 0;
            hp_buf_free(a[i]);
        }
    free(a);
}
#define CHECK_WHOLE(p, n) check_whole_at(__LINE__, p, n)

/* ---- stderr capture ---------------------------------------------------------- */

struct capture {
    int saved;
    FILE *tmp;
};

static bool capture_begin(struct capture *c)
{
    fflush(stderr);
    c->tmp = tmpfile();
    c->saved = dup(2);
    if (!c->tmp || c->saved < 0 || dup2(fileno(c->tmp), 2) < 0) {
        if (c->tmp)
            fclose(c->tmp);
        if (c->saved >= 0)
            close(c->saved);
        return false;
    }
    return true;
}

/* Restore stderr and return what was written meanwhile (free it). */
static char *capture_end(struct capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    long n = ftell(c->tmp);
    if (n < 0)
        n = 0;
    char *s = calloc((size_t)n + 1, 1);
    rewind(c->tmp);
    if (s && n)
        s[fread(s, 1, (size_t)n, c->tmp)] = 0;
    fclose(c->tmp);
    return s ? s : calloc(1, 1);
}

/* Whether text mentions address a in hex (any of %p, %#lx, %016lx...). */
static bool mentions_addr(const char *text, const void *a)
{
    char hex[32];
    snprintf(hex, sizeof hex, "%lx", (unsigned long)(uintptr_t)a);
    if (strcasestr(text, hex))
        return true;
    return false;
}

static void check_report_at(int line, const char *text, const char *what, const char *name,
                            const void *addr)
{
    bool ok = true;
    if (name && !strstr(text, name)) {
        hp_test_fail(__FILE__, line, "%s: stderr does not name the pool \"%s\"", what, name);
        ok = false;
    }
    if (addr && !mentions_addr(text, addr)) {
        hp_test_fail(__FILE__, line, "%s: stderr does not give the address %p", what, addr);
        ok = false;
    }
    if (!ok)
        fprintf(stderr, "      stderr was: \"%s\"\n", text);
}
#define CHECK_REPORT(text, what, name, addr) check_report_at(__LINE__, text, what, name, addr)

/* ---- threads ----------------------------------------------------------------- */

static void run_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0) {
        hp_test_fail(__FILE__, __LINE__, "pthread_create failed");
        return;
    }
    pthread_join(t, NULL);
}

/* Another thread frees bufs[0..n), optionally flushes, reads its own stats. */
struct freer {
    struct hp_pool *p;
    struct hp_buf **bufs;
    unsigned n;
    bool flush, exit;
    int tid, stats_rc;
    struct hp_pool_stats st;
};

static void *freer_main(void *arg)
{
    struct freer *f = arg;
    f->tid = hp_thread_id();
    for (unsigned i = 0; i < f->n; i++)
        hp_buf_free(f->bufs[i]);
    if (f->flush)
        hp_pool_thread_flush(f->p);
    f->stats_rc = hp_pool_thread_stats(f->p, f->tid, &f->st);
    if (f->exit)
        hp_thread_exit();
    return NULL;
}

/* Another thread allocates n buffers into bufs (n == 0: none). */
struct taker {
    struct hp_pool *p;
    struct hp_buf **bufs;
    unsigned n;
    int rc;
    bool bulk, exit;
};

static void *taker_main(void *arg)
{
    struct taker *t = arg;
    if (t->bulk) {
        t->rc = hp_buf_alloc_bulk(t->p, t->bufs, t->n);
    } else {
        t->rc = 0;
        for (unsigned i = 0; i < t->n; i++) {
            t->bufs[i] = hp_buf_alloc(t->p);
            if (t->bufs[i])
                t->rc++;
        }
    }
    if (t->exit)
        hp_thread_exit();
    return NULL;
}

/* ---- creation ---------------------------------------------------------------- */

/* One bad configuration: NULL with EINVAL, the field named by hp_last_error()
 * (any of the names in field, separated by '|'), nothing on stderr (a failed
 * call is the caller's to report: log.h), no pool left behind. */
static void expect_einval_at(int line, const struct hp_pool_config *c, const char *what,
                             const char *field)
{
    struct capture cap;
    bool captured = capture_begin(&cap);
    long before = hp_pools_in_use();
    errno = 0;
    struct hp_pool *p = hp_pool_create(c);
    int err = errno;
    char *printed = captured ? capture_end(&cap) : NULL;
    if (printed && *printed)
        hp_test_fail(__FILE__, line, "%s: printed \"%s\" on stderr", what, printed);
    free(printed);
    char *text = strdup(hp_last_error());
    if (p) {
        hp_test_fail(__FILE__, line, "%s: hp_pool_create succeeded", what);
        hp_pool_destroy(p);
    } else if (err != EINVAL) {
        hp_test_fail(__FILE__, line, "%s: errno %d (%s), want EINVAL", what, err, strerror(err));
    }
    if (text && field) {
        bool named = false;
        char names[128];
        snprintf(names, sizeof names, "%s", field);
        for (char *save = NULL, *f = strtok_r(names, "|", &save); f; f = strtok_r(NULL, "|", &save))
            named |= strstr(text, f) != NULL;
        if (!named)
            hp_test_fail(__FILE__, line, "%s: hp_last_error() does not name the field %s: \"%s\"",
                         what, field, text);
    }
    free(text);
    if (hp_pools_in_use() != before)
        hp_test_fail(__FILE__, line, "%s: hp_pools_in_use changed", what);
}
#define EXPECT_EINVAL(c, what, field) expect_einval_at(__LINE__, c, what, field)

HP_TEST(pool_create_invalid)
{
    struct hp_pool_config c;

    EXPECT_EINVAL(NULL, "NULL config", NULL);

    c = cfg_of("bad", 0, -1);
    EXPECT_EINVAL(&c, "n_bufs 0", "n_bufs");

    c = cfg_of("bad", 8, -1);
    c.data_room = UINT32_MAX;
    EXPECT_EINVAL(&c, "data_room UINT32_MAX", "data_room");
    c.data_room = UINT32_MAX - 63;
    EXPECT_EINVAL(&c, "data_room UINT32_MAX - 63", "data_room");
    c.data_room = 0x80000000u;
    EXPECT_EINVAL(&c, "data_room 2 GiB", "data_room");

    c = cfg_of("bad", 8, -1);
    c.data_room = 64; /* smaller than the default headroom of 128 */
    EXPECT_EINVAL(&c, "data_room below the headroom", "data_room|headroom");
    c.data_room = 512;
    c.headroom = 513;
    EXPECT_EINVAL(&c, "headroom beyond data_room", "headroom");

    c = cfg_of("bad", 8, -1);
    c.cache_size = 4097;
    EXPECT_EINVAL(&c, "cache_size 4097", "cache_size");
    c.cache_size = UINT32_MAX;
    EXPECT_EINVAL(&c, "cache_size UINT32_MAX", "cache_size");

    c = cfg_of("bad", 8, HP_ALIEN_ADAPTIVE + 1);
    EXPECT_EINVAL(&c, "alien_policy past the enum", "alien_policy");
    c.alien_policy = -2;
    EXPECT_EINVAL(&c, "alien_policy -2", "alien_policy");

    /* Caller memory. */
    enum { CHUNK = 2304, MEMLEN = 8 * CHUNK };
    unsigned char *mem = aligned_alloc(64, MEMLEN + 64);
    HP_REQUIRE(mem);
    c = cfg_of("bad", 0, -1);
    c.mem = mem + 8;
    c.mem_len = MEMLEN;
    c.chunk = CHUNK;
    EXPECT_EINVAL(&c, "mem not 64-byte aligned", "mem");
    c.mem = mem + 32;
    EXPECT_EINVAL(&c, "mem 32-byte aligned", "mem");
    c.mem = mem;
    c.mem_len = CHUNK - 64;
    EXPECT_EINVAL(&c, "mem_len smaller than one chunk", "mem_len|chunk");
    c.mem_len = 0;
    EXPECT_EINVAL(&c, "mem_len 0", "mem_len|chunk");
    c.mem_len = MEMLEN;
    c.chunk = CHUNK + 1;
    EXPECT_EINVAL(&c, "chunk not a multiple of 64", "chunk");
    c.chunk = 2300;
    EXPECT_EINVAL(&c, "chunk 2300", "chunk");
    c.chunk = 192;
    EXPECT_EINVAL(&c, "chunk 192 (< 256)", "chunk");
    c.chunk = 0;
    EXPECT_EINVAL(&c, "chunk 0", "chunk");
    free(mem);
}

/* A size whose byte count overflows: refused (EINVAL or ENOMEM), never a
 * short region. */
HP_TEST(pool_create_huge)
{
    struct hp_pool_config c = cfg_of("huge", UINT32_MAX, -1);
    c.data_room = 65536;
    struct capture cap;
    bool captured = capture_begin(&cap);
    errno = 0;
    struct hp_pool *p = hp_pool_create(&c);
    int err = errno;
    if (captured)
        free(capture_end(&cap));
    if (p) {
        hp_test_fail(__FILE__, __LINE__, "a pool of 2^32 buffers of 64 KiB was created");
        hp_pool_destroy(p);
    }
    HP_CHECK(err == EINVAL || err == ENOMEM);
}

HP_TEST(pool_create_limits_ok)
{
    struct hp_pool_config c = cfg_of("limits", 8, -1);
    c.cache_size = 4096;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    CHECK_WHOLE(p, 8);
    DONE(p);
    /* headroom == data_room - 1: one byte of data. */
    c = cfg_of("limits2", 2, HP_ALIEN_LOCAL);
    c.data_room = 256;
    c.headroom = 255;
    p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_CHECK_EQ(hp_buf_headroom(b), 255);
    HP_CHECK_EQ(hp_buf_tailroom(b), 1);
    hp_buf_free(b);
    DONE(p);
}

/* Pages of [a, end) the kernel has faulted in (mincore(2)). */
static size_t resident_pages(const unsigned char *a, const unsigned char *end)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)a & ~(pg - 1);
    size_t n = ((uintptr_t)end - lo + pg - 1) / pg;
    unsigned char *v = calloc(n, 1);
    if (!v || mincore((void *)lo, n * pg, v) != 0) {
        free(v);
        return SIZE_MAX;
    }
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        r += v[i] & 1;
    free(v);
    return r;
}

/* A pool's buffers are touched when first taken, not at creation: no page of
 * the region is faulted in by hp_pool_create, a few allocations touch the
 * pages of a cache's refill, and every buffer is still there to take, once each. */
HP_TEST(pool_region_untouched_until_used)
{
    struct hp_pool_config c = cfg_of("lazy", 4096, HP_ALIEN_LOCAL);
    c.data_room = 2048;
    c.cache_size = 64;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t all = (size_t)(p->region_end - p->region) / pg;
#ifdef MADV_NOHUGEPAGE
    /* Where transparent huge pages are "always", a touch would fault in 2 MiB. */
    (void)madvise(p->region, p->region_len, MADV_NOHUGEPAGE);
#endif
    size_t r0 = resident_pages(p->region, p->region_end);
    HP_REQUIRE(r0 != SIZE_MAX);
    HP_CHECK_EQ(r0, 0);
    HP_CHECK_EQ(atomic_load(&p->fresh), 0);
    struct hp_buf *b[10];
    for (int i = 0; i < 10; i++)
        HP_REQUIRE((b[i] = hp_buf_alloc(p)) != NULL);
    uint32_t taken = atomic_load(&p->fresh);
    HP_CHECK(taken >= 10 && taken <= 2 * c.cache_size);
    size_t r1 = resident_pages(p->region, p->region_end);
    HP_CHECK(r1 <= (size_t)taken * p->elt_size / pg + 2);
    HP_CHECK(r1 < all / 8);
    for (int i = 0; i < 10; i++)
        hp_buf_free(b[i]);
    /* Every buffer, each once, then again (from the caches and the ring). */
    CHECK_WHOLE(p, 4096);
    HP_CHECK_EQ(atomic_load(&p->fresh), 4096);
    CHECK_WHOLE(p, 4096);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    DONE(p);
}

/* HP_POOL_F_POPULATE: every page of the region is faulted in by
 * hp_pool_create, before any buffer is taken, and the pool works as any. */
HP_TEST(pool_populate_faults_region_in)
{
    struct hp_pool_config c = cfg_of("populate", 4096, HP_ALIEN_LOCAL);
    c.data_room = 2048;
    c.flags |= HP_POOL_F_POPULATE;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t all = ((size_t)(p->region_end - p->region) + pg - 1) / pg;
    size_t r0 = resident_pages(p->region, p->region_end);
    HP_REQUIRE(r0 != SIZE_MAX);
    HP_CHECK_EQ(r0, all);
    HP_CHECK_EQ(atomic_load(&p->fresh), 0);
    CHECK_WHOLE(p, 4096);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    DONE(p);
    /* Caller-provided memory is the caller's: not written. */
    size_t len = 64 * 2048;
    unsigned char *mem =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    HP_REQUIRE(mem != MAP_FAILED);
#ifdef MADV_NOHUGEPAGE
    (void)madvise(mem, len, MADV_NOHUGEPAGE);
#endif
    c = cfg_of("populate-mem", 0, HP_ALIEN_LOCAL);
    c.mem = mem;
    c.mem_len = len;
    c.chunk = 2048;
    c.flags |= HP_POOL_F_POPULATE;
    p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_EQ(resident_pages(mem, mem + len), 0);
    DONE(p);
    munmap(mem, len);
}

HP_TEST(pool_defaults)
{
    if (getenv("HP_ALIEN_POLICY"))
        HP_SKIP("HP_ALIEN_POLICY is set in the environment");
    struct hp_pool_config c = {.n_bufs = 4, .alien_policy = -1};
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_STREQ(hp_pool_name(p), "pool");
    HP_CHECK_EQ(hp_pool_size(p), 4);
    HP_CHECK_EQ(hp_pool_data_room(p), 2048);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_ADAPTIVE);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_CHECK_EQ(hp_buf_headroom(b), HP_BUF_HEADROOM);
    HP_CHECK_EQ(b->room, 2048);
    HP_CHECK_EQ(hp_buf_tailroom(b), 2048 - HP_BUF_HEADROOM);
    hp_buf_free(b);
    DONE(p);

    /* A zeroed configuration gets the default policy too. */
    struct hp_pool_config z = {.n_bufs = 4};
    p = MAKE(&z);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_ADAPTIVE);
    DONE(p);
}

HP_TEST(pool_accessors)
{
    char name[32];
    snprintf(name, sizeof name, "acc-pool");
    struct hp_pool_config c = cfg_of(name, 37, HP_ALIEN_DEFER);
    c.data_room = 1000;
    c.headroom = 100;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    memset(name, 'x', sizeof name - 1); /* the name was copied */
    HP_CHECK_STREQ(hp_pool_name(p), "acc-pool");
    HP_CHECK_EQ(hp_pool_size(p), 37);
    HP_CHECK_EQ(hp_pool_data_room(p), 1000);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_DEFER);
    HP_CHECK(!hp_pool_hugepages(p));
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    CHECK_WHOLE(p, 37);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_CHECK_EQ(hp_buf_headroom(b), 100);
    HP_CHECK_EQ(hp_buf_tailroom(b), 900);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    HP_CHECK_EQ(hp_pools_in_use(), 1);
    hp_buf_free(b);
    DONE(p);

    /* A pool that may use huge pages works either way. */
    c = cfg_of("acc-huge", 64, HP_ALIEN_LOCAL);
    c.flags = 0;
    p = MAKE(&c);
    HP_REQUIRE(p);
    CHECK_WHOLE(p, 64);
    DONE(p);
}

HP_TEST(pool_caller_memory)
{
    enum { CHUNK = 2304, N = 10, MEMLEN = N * CHUNK + 1000 };
    unsigned char *mem = aligned_alloc(64, (MEMLEN + 63) / 64 * 64);
    HP_REQUIRE(mem);
    struct hp_pool_config c = cfg_of("umem", 0, HP_ALIEN_LOCAL);
    c.data_room = 0;
    c.mem = mem;
    c.mem_len = MEMLEN;
    c.chunk = CHUNK;
    struct hp_pool *p = MAKE(&c);
    if (!p) {
        free(mem);
        return;
    }
    HP_CHECK_EQ(hp_pool_size(p), N);
    HP_CHECK_EQ(hp_pool_data_room(p), CHUNK - HP_BUF_META_SIZE);
    struct hp_buf *a[N + 1];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, N), N);
    errno = 0;
    HP_CHECK(hp_buf_alloc(p) == NULL);
    HP_CHECK_EQ(errno, ENOMEM);
    bool seen[N] = {false};
    for (int i = 0; i < N; i++) {
        unsigned char *m = (unsigned char *)a[i];
        HP_CHECK(m >= mem && m + CHUNK <= mem + MEMLEN);
        HP_CHECK_EQ((m - mem) % CHUNK, 0);
        HP_CHECK(a[i]->base == m + HP_BUF_META_SIZE);
        HP_CHECK(a[i]->base + a[i]->room <= mem + MEMLEN);
        HP_CHECK_EQ(a[i]->room, CHUNK - HP_BUF_META_SIZE);
        HP_CHECK(a[i]->flags & HP_BUF_F_EXTERNAL);
        HP_CHECK_EQ(hp_buf_headroom(a[i]), HP_BUF_HEADROOM);
        size_t k = (size_t)(m - mem) / CHUNK;
        if (k < N) {
            HP_CHECK(!seen[k]);
            seen[k] = true;
        }
        memset(a[i]->base, 0xA5, a[i]->room); /* ASan: the whole room is ours */
    }
    hp_buf_free_bulk(a, N);
    DONE(p);
    /* The memory is still the caller's: usable, and freed by the caller. */
    memset(mem, 0, MEMLEN);
    free(mem);
}

/* ---- policies ---------------------------------------------------------------- */

HP_TEST(pool_policy_names)
{
    static const struct {
        int policy;
        const char *name;
    } tab[] = {{HP_ALIEN_LOCAL, "local"},
               {HP_ALIEN_DEFER, "defer"},
               {HP_ALIEN_ADAPTIVE, "adaptive"}};
    for (size_t i = 0; i < 3; i++) {
        HP_CHECK_STREQ(hp_alien_policy_name(tab[i].policy), tab[i].name);
        HP_CHECK_EQ(hp_alien_policy_parse(tab[i].name), tab[i].policy);
        HP_CHECK_EQ(hp_alien_policy_parse(hp_alien_policy_name(tab[i].policy)), tab[i].policy);
    }
    static const char *bad[] = {"", "Local", "defer ", "loc", "adaptive2", "0", "1", "-1", "none"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (hp_alien_policy_parse(bad[i]) != -EINVAL)
            hp_test_fail(__FILE__, __LINE__, "hp_alien_policy_parse(\"%s\") = %d, want -EINVAL",
                         bad[i], hp_alien_policy_parse(bad[i]));
}

HP_TEST(pool_policy_set)
{
    struct hp_pool_config c = cfg_of("policy", 8, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_LOCAL);
    static const int seq[] = {HP_ALIEN_DEFER, HP_ALIEN_ADAPTIVE, HP_ALIEN_LOCAL, HP_ALIEN_ADAPTIVE,
                              HP_ALIEN_DEFER};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        HP_CHECK_EQ(hp_pool_set_alien_policy(p, seq[i]), 0);
        HP_CHECK_EQ(hp_pool_alien_policy(p), seq[i]);
    }
    static const int bad[] = {-1, 0, HP_ALIEN_ADAPTIVE + 1, 100, -EINVAL, 0x7FFFFFFF};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        HP_CHECK_EQ(hp_pool_set_alien_policy(p, bad[i]), -EINVAL);
        HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_DEFER);
    }
    DONE(p);
}

/* HP_ALIEN_POLICY is honoured for alien_policy -1 only; set here before
 * this process creates any pool. */
HP_TEST(pool_env_policy_setenv)
{
    setenv("HP_ALIEN_POLICY", "defer", 1);
    struct hp_pool_config c = cfg_of("env", 4, -1);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_DEFER);
    DONE(p);
    c.alien_policy = HP_ALIEN_LOCAL;
    p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_LOCAL);
    DONE(p);
    c.alien_policy = HP_ALIEN_ADAPTIVE;
    p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_ADAPTIVE);
    DONE(p);
    unsetenv("HP_ALIEN_POLICY");
}

/* The same with the variable in the environment from the start (read at
 * start-up, as docs/knobs.md describes environment knobs): this test runs
 * itself again as a new process with HP_ALIEN_POLICY=local. */
HP_TEST(pool_env_policy_startup)
{
    if (getenv("HP_BUFTEST_ENV_CHILD")) {
        struct hp_pool_config c = cfg_of("env-child", 4, -1);
        struct hp_pool *p = MAKE(&c);
        HP_REQUIRE(p);
        HP_CHECK_EQ(hp_pool_alien_policy(p), HP_ALIEN_LOCAL);
        DONE(p);
        return;
    }
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    HP_REQUIRE(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "HP_ALIEN_POLICY=", 16) != 0 &&
            strncmp(environ[i], "HP_TEST_NOFORK=", 15) != 0)
            env[k++] = environ[i];
    env[k++] = "HP_ALIEN_POLICY=local";
    env[k++] = "HP_BUFTEST_ENV_CHILD=1";
    env[k] = NULL;
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        free(env);
        HP_SKIP("cannot find this executable");
    }
    exe[len] = 0;
    char *argv[] = {exe, "pool_env_policy_startup", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, exe, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    HP_REQUIRE_EQ(rc, 0);
    int st = 0;
    HP_REQUIRE(waitpid(pid, &st, 0) == pid);
    HP_CHECK(WIFEXITED(st));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        HP_SKIP("cannot re-execute this binary here (an emulated cross-build without binfmt)");
    HP_CHECK_EQ(WEXITSTATUS(st), 0);
}

/* ---- stats ------------------------------------------------------------------- */

HP_TEST(pool_stats_alloc_free)
{
    struct hp_pool_config c = cfg_of("stats", 32, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.allocs, 0);
    HP_CHECK_EQ(s.frees, 0);
    HP_CHECK_EQ(s.alien_frees, 0);
    HP_CHECK_EQ(s.deferred, 0);
    HP_CHECK_EQ(s.defer_overflows, 0);
    HP_CHECK_EQ(s.defer_taken, 0);
    HP_CHECK_EQ(s.errors, 0);

    struct hp_buf *a[32];
    for (int i = 0; i < 10; i++)
        HP_REQUIRE((a[i] = hp_buf_alloc(p)) != NULL);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a + 10, 5), 5);
    s = stats_of(p);
    HP_CHECK_EQ(s.allocs, 15);
    HP_CHECK_EQ(s.frees, 0);
    /* failed requests take nothing and count nothing */
    struct hp_buf *x[40];
    HP_CHECK_EQ(hp_buf_alloc_bulk(p, x, 40), -ENOMEM);
    HP_CHECK_EQ(stats_of(p).allocs, 15);
    hp_buf_free_bulk(a, 15);
    s = stats_of(p);
    HP_CHECK_EQ(s.allocs, 15);
    HP_CHECK_EQ(s.frees, 15);
    HP_CHECK_EQ(s.alien_frees, 0);
    HP_CHECK_EQ(s.errors, 0);
    /* the thread's own counters say the same */
    struct hp_pool_stats t;
    HP_REQUIRE_EQ(hp_pool_thread_stats(p, hp_thread_id(), &t), 0);
    HP_CHECK_EQ(t.allocs, 15);
    HP_CHECK_EQ(t.frees, 15);
    DONE(p);
}

HP_TEST(pool_stats_bad_args)
{
    struct hp_pool_stats s;
    HP_CHECK_EQ(hp_pool_stats(NULL, &s), -EINVAL);
    struct hp_pool_config c = cfg_of("stats-args", 4, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    HP_CHECK_EQ(hp_pool_thread_stats(p, -1, &s), -EINVAL);
    HP_CHECK_EQ(hp_pool_thread_stats(p, HP_MAX_THREADS, &s), -EINVAL);
    HP_CHECK_EQ(hp_pool_thread_stats(p, 1 << 20, &s), -EINVAL);
    HP_CHECK_EQ(hp_pool_thread_stats(NULL, 0, &s), -EINVAL);
    HP_CHECK_EQ(hp_pool_thread_stats(p, 0, &s), 0);
    DONE(p);
}

/* Main allocates every buffer (one at a time); another thread frees them all. */
static void alien_round(struct hp_pool *p, struct hp_buf **a, unsigned n, struct freer *f)
{
    *f = (struct freer){.p = p};
    for (unsigned i = 0; i < n; i++)
        if ((a[i] = hp_buf_alloc(p)) == NULL) {
            hp_test_fail(__FILE__, __LINE__, "pool \"%s\": allocation %u of %u failed",
                         hp_pool_name(p), i + 1, n);
            hp_buf_free_bulk(a, i);
            return;
        }
    *f = (struct freer){.p = p, .bufs = a, .n = n, .flush = true, .exit = true};
    run_thread(freer_main, f);
}

HP_TEST(pool_alien_local)
{
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("alien-local", N, HP_ALIEN_LOCAL);
    c.cache_size = 32;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *a[N];
    struct freer f;
    alien_round(p, a, N, &f);
    HP_STOP_IF_FAILED();
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.allocs, N);
    HP_CHECK_EQ(s.frees, N);
    HP_CHECK_EQ(s.alien_frees, N);
    HP_CHECK_EQ(s.deferred, 0);
    HP_CHECK_EQ(s.defer_overflows, 0);
    HP_CHECK_EQ(s.defer_taken, 0);
    HP_CHECK_EQ(s.errors, 0);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    /* The freeing thread's own counters. */
    HP_CHECK_EQ(f.stats_rc, 0);
    HP_CHECK_GE(f.tid, 0);
    HP_CHECK_EQ(f.st.allocs, 0);
    HP_CHECK_EQ(f.st.frees, N);
    HP_CHECK_EQ(f.st.alien_frees, N);
    struct hp_pool_stats t;
    HP_REQUIRE_EQ(hp_pool_thread_stats(p, hp_thread_id(), &t), 0);
    HP_CHECK_EQ(t.allocs, N);
    HP_CHECK_EQ(t.alien_frees, 0);
    /* Everything is back where the owner can take it. */
    CHECK_WHOLE(p, N);
    HP_CHECK_EQ(stats_of(p).defer_taken, 0);
    DONE(p);
}

HP_TEST(pool_alien_defer)
{
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("alien-defer", N, HP_ALIEN_DEFER);
    c.cache_size = 32;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *a[N];
    struct freer f;
    alien_round(p, a, N, &f);
    HP_STOP_IF_FAILED();
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.frees, N);
    HP_CHECK_EQ(s.alien_frees, N);
    HP_CHECK_EQ(s.deferred, N); /* defer_max 128 by default */
    HP_CHECK_EQ(s.defer_overflows, 0);
    HP_CHECK_EQ(s.defer_taken, 0);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    /* The owner takes them back when it next refills. */
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_CHECK_EQ(b->owner, (uint16_t)hp_thread_id());
    HP_CHECK_GT(stats_of(p).defer_taken, 0);
    hp_buf_free(b);
    CHECK_WHOLE(p, N);
    s = stats_of(p);
    HP_CHECK_EQ(s.defer_taken, s.deferred);
    HP_CHECK_EQ(s.errors, 0);
    DONE(p);
}

HP_TEST(pool_alien_defer_overflow)
{
    /* Each owner's queue holds at most defer_max buffers; the rest of the
     * alien frees stay local (and are counted as overflows). */
    enum { N = 128 };
    static const uint32_t maxes[] = {8, 40, 100};
    bool reported = false;
    for (size_t k = 0; k < sizeof maxes / sizeof maxes[0]; k++) {
        struct hp_pool_config c = cfg_of("alien-defer-max", N, HP_ALIEN_DEFER);
        c.cache_size = 32;
        c.defer_max = maxes[k];
        struct hp_pool *p = MAKE(&c);
        HP_REQUIRE(p);
        struct hp_buf *a[N];
        struct freer f;
        alien_round(p, a, N, &f);
        if (f.n != N) {
            DONE(p);
            return;
        }
        struct hp_pool_stats s = stats_of(p);
        HP_CHECK_EQ(s.alien_frees, N);
        HP_CHECK_LE(s.deferred, maxes[k]);
        HP_CHECK_EQ(s.deferred + s.defer_overflows, N);
        HP_CHECK_GE(s.defer_overflows, N - maxes[k]);
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        CHECK_WHOLE(p, N);
        s = stats_of(p);
        HP_CHECK_EQ(s.defer_taken, s.deferred);
        if (hp_test_failed() && !reported) {
            hp_test_fail(__FILE__, __LINE__, "  (defer_max %u, %d alien frees)", maxes[k], N);
            reported = true;
        }
        DONE(p);
    }
}

/* Data rooms too small to hold a batch of deferred pointers: alien frees
 * under "defer" still all come back. */
HP_TEST(pool_alien_defer_small_room)
{
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("alien-defer-small", N, HP_ALIEN_DEFER);
    c.data_room = 192;
    c.headroom = 64;
    c.cache_size = 16;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *a[N];
    for (int round = 0; round < 2; round++) {
        struct freer f;
        alien_round(p, a, N, &f);
        HP_STOP_IF_FAILED();
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        CHECK_WHOLE(p, N);
    }
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.alien_frees, 2 * N);
    HP_CHECK_EQ(s.defer_taken, s.deferred);
    DONE(p);
}

/* Buffers already deferred are taken back after the policy changes. */
HP_TEST(pool_alien_policy_switch)
{
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("alien-switch", N, HP_ALIEN_DEFER);
    c.cache_size = 32;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *a[N];
    struct freer f;
    alien_round(p, a, N, &f);
    HP_STOP_IF_FAILED();
    HP_CHECK_EQ(stats_of(p).deferred, N);
    HP_REQUIRE_EQ(hp_pool_set_alien_policy(p, HP_ALIEN_LOCAL), 0);
    CHECK_WHOLE(p, N);
    HP_CHECK_EQ(stats_of(p).defer_taken, N);
    /* Now local: a second round defers nothing. */
    alien_round(p, a, N, &f);
    HP_STOP_IF_FAILED();
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.deferred, N);
    HP_CHECK_EQ(s.alien_frees, 2 * N);
    CHECK_WHOLE(p, N);
    DONE(p);
}

HP_TEST(pool_alien_adaptive)
{
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("alien-adaptive", N, HP_ALIEN_ADAPTIVE);
    c.cache_size = 32;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *a[N];
    for (int round = 0; round < 4; round++) {
        struct freer f;
        alien_round(p, a, N, &f);
        HP_STOP_IF_FAILED();
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        CHECK_WHOLE(p, N);
    }
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.alien_frees, 4 * N);
    HP_CHECK_EQ(s.deferred + s.defer_overflows <= 4 * N, 1);
    HP_CHECK_EQ(s.defer_taken, s.deferred);
    HP_CHECK_EQ(s.errors, 0);
    DONE(p);
}

/* ADAPTIVE's fallback in a pipeline (main allocates, one long-lived thread
 * frees), with epochs too long to ever end, so that nothing is measured:
 * the freer is a net freer, so it defers to main exactly when its own
 * shared-ring operations are contended, and otherwise keeps frees local. */
struct pipe_freer {
    struct hp_pool *p;
    struct hp_buf **bufs;
    unsigned n, rounds;
    bool contended;
    pthread_barrier_t *bar;
    struct hp_pool_stats st;
};

static void *pipe_freer_main(void *arg)
{
    struct pipe_freer *f = arg;
    for (unsigned r = 0; r < f->rounds; r++) {
        pthread_barrier_wait(f->bar); /* main has allocated */
        if (f->contended)
            hp__ring_retries_add(1000);
        for (unsigned i = 0; i < f->n; i++)
            hp_buf_free(f->bufs[i]);
        pthread_barrier_wait(f->bar); /* main may allocate again */
    }
    hp_pool_thread_flush(f->p);
    hp_pool_thread_stats(f->p, hp_thread_id(), &f->st);
    hp_thread_exit();
    return NULL;
}

static void adaptive_pipeline(bool contended, struct hp_pool_stats *out)
{
    enum { N = 1024, BATCH = 256, ROUNDS = 24 };
    struct hp_pool_config c =
        cfg_of(contended ? "adaptive-contended" : "adaptive-quiet", N, HP_ALIEN_ADAPTIVE);
    c.cache_size = 32;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    hp__pool_set_epoch(p, UINT32_MAX);
    struct hp_buf *a[BATCH];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    struct pipe_freer f =
        {.p = p, .bufs = a, .n = BATCH, .rounds = ROUNDS, .contended = contended, .bar = &bar};
    pthread_t th;
    HP_REQUIRE_EQ(pthread_create(&th, NULL, pipe_freer_main, &f), 0);
    for (unsigned r = 0; r < ROUNDS; r++) {
        for (unsigned i = 0; i < BATCH; i++)
            if ((a[i] = hp_buf_alloc(p)) == NULL) {
                hp_test_fail(__FILE__, __LINE__, "allocation %u failed in round %u", i, r);
                a[i] = hp_buf_alloc(p); /* keep the freer's count right; NULL is ignored */
            }
        pthread_barrier_wait(&bar);
        pthread_barrier_wait(&bar);
    }
    pthread_join(th, NULL);
    pthread_barrier_destroy(&bar);
    hp_pool_thread_flush(p);
    *out = f.st;
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    /* One pair, on the contention signal's choice. */
    struct hp_pool_pair_stats ps[2];
    HP_CHECK_EQ(hp_pool_pair_stats(p, ps, 2), 1);
    HP_CHECK_EQ(ps[0].owner, hp_thread_id());
    HP_CHECK_EQ(ps[0].measured, 0);
    HP_CHECK_EQ(ps[0].policy, contended ? HP_ALIEN_DEFER : HP_ALIEN_LOCAL);
    HP_CHECK_EQ(ps[0].switches, 0);
    DONE(p);
}

HP_TEST(pool_alien_adaptive_fallback_local_when_uncontended)
{
    struct hp_pool_stats st;
    adaptive_pipeline(false, &st);
    HP_CHECK_EQ(st.alien_frees, 24 * 256);
    HP_CHECK_EQ(st.deferred, 0);
}

HP_TEST(pool_alien_adaptive_fallback_defers_when_contended)
{
    struct hp_pool_stats st;
    adaptive_pipeline(true, &st);
    HP_CHECK_EQ(st.alien_frees, 24 * 256);
    /* The first window decides; from then on the frees go back to main (up to
     * the owner's bound, defer_max 128 per round here: the rest overflow
     * locally, as they should). */
    HP_CHECK_GT(st.deferred, 8 * 256);
    HP_CHECK_GT(st.deferred + st.defer_overflows, 20 * 256);
}

/* A buffer whose owner has exited is freed by another thread under "defer":
 * it must still come back to the pool. */
HP_TEST(pool_alien_owner_exited)
{
    enum { N = 32 };
    static const int policies[] = {HP_ALIEN_LOCAL, HP_ALIEN_DEFER, HP_ALIEN_ADAPTIVE};
    for (size_t k = 0; k < 3; k++) {
        struct hp_pool_config c = cfg_of("alien-orphan", N, policies[k]);
        c.cache_size = 16;
        struct hp_pool *p = MAKE(&c);
        HP_REQUIRE(p);
        struct hp_buf *a[N];
        struct taker t = {.p = p, .bufs = a, .n = N, .bulk = true, .exit = true};
        run_thread(taker_main, &t);
        HP_REQUIRE_EQ(t.rc, N);
        HP_CHECK_EQ(hp_pool_in_use(p), N);
        hp_buf_free_bulk(a, N);
        hp_pool_thread_flush(p);
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        CHECK_WHOLE(p, N);
        if (hp_test_failed()) {
            hp_test_fail(__FILE__, __LINE__, "  (policy %s)", hp_alien_policy_name(policies[k]));
            DONE(p);
            return;
        }
        DONE(p);
    }
}

/* ---- caches and threads ------------------------------------------------------ */

HP_TEST(pool_thread_flush)
{
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("flush", N, HP_ALIEN_LOCAL);
    c.cache_size = 128;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    /* Park buffers in this thread's cache. */
    struct hp_buf *a[N];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, N), N);
    hp_buf_free_bulk(a, N);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    uint64_t flushes = stats_of(p).flushes;
    hp_pool_thread_flush(p);
    HP_CHECK_GT(stats_of(p).flushes, flushes);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    hp_pool_thread_flush(p); /* nothing cached: harmless */
    /* Now another thread can take the whole pool at once. */
    struct taker t = {.p = p, .bufs = a, .n = N, .bulk = true, .exit = false};
    run_thread(taker_main, &t);
    HP_CHECK_EQ(t.rc, N);
    HP_CHECK_EQ(hp_pool_in_use(p), t.rc == N ? N : 0);
    if (t.rc == N) {
        hp_buf_free_bulk(a, N); /* alien frees, into this thread's cache */
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        hp_pool_thread_flush(p);
        t = (struct taker){.p = p, .bufs = a, .n = N, .bulk = true, .exit = true};
        run_thread(taker_main, &t);
        HP_CHECK_EQ(t.rc, N);
        if (t.rc == N)
            hp_buf_free_bulk(a, N);
    }
    struct hp_pool_stats s = stats_of(p);
    HP_CHECK_EQ(s.allocs, s.frees);
    HP_CHECK_EQ(s.errors, 0);
    hp_pool_thread_flush(p);
    DONE(p);
}

struct cycler {
    struct hp_pool *p;
    unsigned n;
    int rc;
    bool exit;
};

static void *cycler_main(void *arg)
{
    struct cycler *cy = arg;
    struct hp_buf *a[64];
    cy->rc = hp_buf_alloc_bulk(cy->p, a, cy->n);
    if (cy->rc == (int)cy->n)
        hp_buf_free_bulk(a, cy->n);
    if (cy->exit)
        hp_thread_exit();
    return NULL;
}

/* Exiting (with or without hp_thread_exit) returns the thread's cached buffers. */
HP_TEST(pool_thread_exit_flushes)
{
    enum { N = 32 };
    for (int explicit_exit = 0; explicit_exit < 2; explicit_exit++) {
        struct hp_pool_config c = cfg_of("thread-exit", N, HP_ALIEN_LOCAL);
        c.cache_size = 64;
        struct hp_pool *p = MAKE(&c);
        HP_REQUIRE(p);
        struct cycler cy = {.p = p, .n = N, .exit = explicit_exit};
        run_thread(cycler_main, &cy);
        HP_REQUIRE_EQ(cy.rc, N);
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        struct hp_buf *a[N];
        HP_CHECK_EQ(hp_buf_alloc_bulk(p, a, N), N);
        hp_buf_free_bulk(a, N);
        CHECK_WHOLE(p, N);
        DONE(p);
    }
}

HP_TEST(pool_in_use_across_threads)
{
    /* Small caches, so that this thread's cache cannot hold the whole pool
     * (a refill takes half a cache from the shared ring). */
    enum { N = 64 };
    struct hp_pool_config c = cfg_of("inuse", N, HP_ALIEN_ADAPTIVE);
    c.cache_size = 4;
    struct hp_pool *p = MAKE(&c);
    struct hp_pool_config c2 = cfg_of("inuse2", N, HP_ALIEN_DEFER);
    c2.cache_size = 4;
    struct hp_pool *q = MAKE(&c2);
    HP_REQUIRE(p && q);
    struct hp_buf *mine[5], *theirs[7], *other[3];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, mine, 5), 5);
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(q, other, 3), 3);
    struct taker t = {.p = p, .bufs = theirs, .n = 7, .bulk = false, .exit = false};
    run_thread(taker_main, &t);
    HP_REQUIRE_EQ(t.rc, 7);
    HP_CHECK_EQ(hp_pool_in_use(p), 12);
    HP_CHECK_EQ(hp_pool_in_use(q), 3);
    HP_CHECK_EQ(hp_pools_in_use(), 15);
    /* This thread frees the other's buffers. */
    hp_buf_free_bulk(theirs, 7);
    HP_CHECK_EQ(hp_pool_in_use(p), 5);
    HP_CHECK_EQ(hp_pools_in_use(), 8);
    /* A third thread frees this one's. */
    struct freer f = {.p = p, .bufs = mine, .n = 5, .flush = false, .exit = false};
    run_thread(freer_main, &f);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    f = (struct freer){.p = q, .bufs = other, .n = 3, .flush = false, .exit = true};
    run_thread(freer_main, &f);
    HP_CHECK_EQ(hp_pool_in_use(q), 0);
    HP_CHECK_EQ(hp_pools_in_use(), 0);
    CHECK_WHOLE(p, N);
    CHECK_WHOLE(q, N);
    DONE(q);
    DONE(p);
}

/* Thread numbers: distinct among live threads, reused after exit, -1 beyond
 * HP_MAX_THREADS; a thread without a number can still allocate and free. */
struct idler {
    pthread_barrier_t *ready, *go;
    struct hp_pool *p;
    int tid;
    int ok;
};

static void *idler_main(void *arg)
{
    struct idler *d = arg;
    d->tid = hp_thread_id();
    pthread_barrier_wait(d->ready);
    pthread_barrier_wait(d->go);
    struct hp_buf *b[4];
    d->ok = hp_buf_alloc_bulk(d->p, b, 4) == 4;
    if (d->ok) {
        for (int i = 0; i < 4; i++)
            hp_buf_free(b[i]);
        struct hp_buf *x = hp_buf_alloc(d->p);
        d->ok = x != NULL;
        hp_buf_free(x);
    }
    hp_thread_exit();
    return NULL;
}

static void *id_only(void *arg)
{
    *(int *)arg = hp_thread_id();
    return NULL;
}

HP_TEST(pool_thread_ids)
{
    int me = hp_thread_id();
    HP_CHECK_GE(me, 0);
    HP_CHECK_LT(me, HP_MAX_THREADS);
    HP_CHECK_EQ(hp_thread_id(), me);
    /* Sequential threads: each gets a number (freed ones are reused). */
    for (int i = 0; i < HP_MAX_THREADS + 6; i++) {
        int id = -2;
        run_thread(id_only, &id);
        if (id < 0 || id >= HP_MAX_THREADS || id == me) {
            hp_test_fail(__FILE__, __LINE__, "sequential thread %d got id %d", i, id);
            break;
        }
    }
    /* HP_MAX_THREADS + 2 at once. */
    enum { T = HP_MAX_THREADS + 2 };
    struct hp_pool_config c = cfg_of("ids", 8 * T, HP_ALIEN_ADAPTIVE);
    c.cache_size = 8;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    pthread_barrier_t ready, go;
    pthread_barrier_init(&ready, NULL, T + 1);
    pthread_barrier_init(&go, NULL, T + 1);
    static struct idler d[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        d[i] = (struct idler){.ready = &ready, .go = &go, .p = p, .tid = -2};
        HP_REQUIRE(pthread_create(&th[i], NULL, idler_main, &d[i]) == 0);
    }
    pthread_barrier_wait(&ready);
    int valid = 0, none = 0;
    bool seen[HP_MAX_THREADS] = {false};
    seen[me] = true;
    for (int i = 0; i < T; i++) {
        if (d[i].tid == -1) {
            none++;
        } else if (d[i].tid >= 0 && d[i].tid < HP_MAX_THREADS) {
            if (seen[d[i].tid])
                hp_test_fail(__FILE__, __LINE__, "thread id %d given twice", d[i].tid);
            seen[d[i].tid] = true;
            valid++;
        } else {
            hp_test_fail(__FILE__, __LINE__, "thread id %d out of range", d[i].tid);
        }
    }
    HP_CHECK_EQ(valid, HP_MAX_THREADS - 1);
    HP_CHECK_EQ(none, T - (HP_MAX_THREADS - 1));
    pthread_barrier_wait(&go);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
        if (!d[i].ok)
            hp_test_fail(__FILE__, __LINE__, "thread %d (id %d) could not allocate", i, d[i].tid);
    pthread_barrier_destroy(&ready);
    pthread_barrier_destroy(&go);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    CHECK_WHOLE(p, 8 * T);
    /* All numbers were given back. */
    int id = -2;
    run_thread(id_only, &id);
    HP_CHECK_GE(id, 0);
    DONE(p);
}

/* Several threads allocate, pass buffers to each other and free them while
 * the policy changes under them; afterwards everything is accounted for. */
#define STRESS_THREADS 4
#define STRESS_SLOTS   64

struct exchange {
    pthread_mutex_t lock;
    struct hp_buf *slot[STRESS_SLOTS];
};

struct stresser {
    struct hp_pool *p;
    struct exchange *x;
    _Atomic int *stop;
    uint64_t seed;
    int id;
    long iters;
    int bad;
};

static void *stress_main(void *arg)
{
    struct stresser *s = arg;
    uint64_t rs = s->seed;
    struct hp_buf *held[16];
    int nh = 0;
    for (long i = 0; i < 2000 || !atomic_load(s->stop); i++) {
        s->iters = i + 1;
        uint64_t r = hp_test_rand(&rs);
        switch (r % 4) {
        case 0:
        case 1: { /* allocate (alone or in bulk) */
            if (nh < 16) {
                struct hp_buf *b = hp_buf_alloc(s->p);
                if (b) {
                    if (b->flags & HP_BUF_F_FREE || hp_buf_refcnt(b) != 1 || b->data_len != 0 ||
                        b->next != NULL)
                        s->bad++;
                    b->tag = ((uint64_t)s->id << 32) | (uint32_t)i;
                    b->timestamp = ~b->tag;
                    held[nh++] = b;
                }
            }
            break;
        }
        case 2: { /* pass one to the exchange, or take one from it and free it */
            unsigned k = (unsigned)(r >> 8) % STRESS_SLOTS;
            pthread_mutex_lock(&s->x->lock);
            struct hp_buf *b = s->x->slot[k];
            s->x->slot[k] = NULL;
            if (!b && nh > 0)
                s->x->slot[k] = held[--nh];
            pthread_mutex_unlock(&s->x->lock);
            if (b) {
                if (b->timestamp != ~b->tag || (b->flags & HP_BUF_F_FREE))
                    s->bad++;
                hp_buf_free(b);
            }
            break;
        }
        default: /* free one of mine */
            if (nh > 0) {
                struct hp_buf *b = held[--nh];
                if (b->timestamp != ~b->tag || (b->tag >> 32) != (uint64_t)s->id)
                    s->bad++;
                hp_buf_free(b);
            }
            break;
        }
    }
    while (nh > 0)
        hp_buf_free(held[--nh]);
    if ((s->seed & 1) == 0)
        hp_pool_thread_flush(s->p);
    return NULL; /* the thread destructor gives its number and cache back */
}

HP_TEST(pool_stress_cross_thread)
{
    enum { N = 256 };
    struct hp_pool_config c = cfg_of("stress", N, HP_ALIEN_ADAPTIVE);
    c.cache_size = 16;
    c.defer_max = 16;
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    static struct exchange x;
    static _Atomic int stop;
    pthread_mutex_init(&x.lock, NULL);
    memset(x.slot, 0, sizeof x.slot);
    struct stresser s[STRESS_THREADS];
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        s[i] = (struct stresser){.p = p,
                                 .x = &x,
                                 .stop = &stop,
                                 .seed = hp_test_seed() * 31 + (uint64_t)i + 1,
                                 .id = i};
        HP_REQUIRE(pthread_create(&th[i], NULL, stress_main, &s[i]) == 0);
    }
    /* Switch the policy while they run, for about 300 ms. */
    for (int k = 0; k < 300; k++) {
        HP_CHECK_EQ(hp_pool_set_alien_policy(p, HP_ALIEN_LOCAL + k % 3), 0);
        usleep(1000);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < STRESS_SLOTS; i++)
        hp_buf_free(x.slot[i]);
    pthread_mutex_destroy(&x.lock);
    long ops = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        HP_CHECK_EQ(s[i].bad, 0);
        ops += s[i].iters;
    }
    HP_CHECK_GT(ops, 4 * 2000);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    struct hp_pool_stats st = stats_of(p);
    HP_CHECK_EQ(st.allocs, st.frees);
    HP_CHECK_EQ(st.errors, 0);
    HP_CHECK_EQ(st.defer_taken <= st.deferred, 1);
    CHECK_WHOLE(p, N);
    DONE(p);
}

/* ---- destroy ----------------------------------------------------------------- */

HP_TEST(pool_destroy_busy)
{
    struct hp_pool_config c = cfg_of("busy-pool", 8, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *a[3];
    HP_REQUIRE_EQ(hp_buf_alloc_bulk(p, a, 3), 3);
    for (int i = 0; i < 3; i++) {
        unsigned char *d = hp_buf_append(a[i], 100);
        HP_REQUIRE(d);
        memset(d, 0x30 + i, 100);
    }
    struct capture cap;
    HP_REQUIRE(capture_begin(&cap));
    int rc = hp_pool_destroy(p);
    char *text = capture_end(&cap);
    HP_CHECK_EQ(rc, -EBUSY);
    CHECK_REPORT(text, "destroy with buffers out", "busy-pool", NULL);
    for (int i = 0; i < 3; i++)
        CHECK_REPORT(text, "destroy with buffers out", NULL, a[i]);
    free(text);
    /* Nothing freed: the pool and its buffers still work. */
    HP_CHECK_EQ(hp_pool_in_use(p), 3);
    HP_CHECK_STREQ(hp_pool_name(p), "busy-pool");
    for (int i = 0; i < 3; i++) {
        unsigned char want[100];
        memset(want, 0x30 + i, 100);
        HP_CHECK_EQ(a[i]->data_len, 100);
        HP_CHECK_MEMEQ(hp_buf_data(a[i]), want, 100);
    }
    struct hp_buf *b = hp_buf_alloc(p);
    HP_CHECK(b != NULL);
    hp_buf_free(b);
    hp_buf_free_bulk(a, 3);
    CHECK_WHOLE(p, 8);
    HP_CHECK_EQ(hp_pool_destroy(p), 0);
    untrack_pool(p);
}

/* Pools are counted: creating past the limit is refused with ENOSPC, and
 * destroying one makes room. */
HP_TEST(pool_too_many)
{
    enum { CAP = 1024 };
    static struct hp_pool *ps[CAP];
    int n = 0, err = 0;
    struct hp_pool_config c = cfg_of("many", 1, HP_ALIEN_LOCAL);
    c.data_room = 256;
    c.cache_size = 16;
    while (n < CAP) {
        errno = 0;
        struct hp_pool *p = hp_pool_create(&c);
        if (!p) {
            err = errno;
            break;
        }
        ps[n++] = p;
    }
    track_mark();
    if (n < CAP) {
        HP_CHECK_EQ(err, ENOSPC);
        HP_CHECK_GT(n, 1);
        if (n > 0) {
            HP_CHECK_EQ(hp_pool_destroy(ps[--n]), 0);
            ps[n] = hp_pool_create(&c);
            HP_CHECK(ps[n] != NULL);
            if (ps[n])
                n++;
        }
    }
    for (int i = 0; i < n; i++)
        HP_CHECK_EQ(hp_pool_destroy(ps[i]), 0);
    if (n == CAP)
        HP_SKIP("no pool limit below %d pools", CAP);
}

/* ---- bad frees --------------------------------------------------------------- */

HP_TEST(pool_double_free)
{
    enum { N = 16 };
    /* 0: the buffer still in this thread's cache; 1: flushed to the shared
     * ring; 2: the second free from another thread; 3 and 4: both frees
     * from another thread, under "local" and under "defer" (where the first
     * one is only staged for the owner when the second comes). */
    static const char *const cases[] = {"in the cache", "after a flush", "from another thread",
                                        "twice from another thread, local",
                                        "twice from another thread, defer"};
    for (int where = 0; where < 5; where++) {
        struct hp_pool_config c =
            cfg_of("dfree-pool", N, where == 4 ? HP_ALIEN_DEFER : HP_ALIEN_LOCAL);
        struct hp_pool *p = MAKE(&c);
        HP_REQUIRE(p);
        struct hp_buf *b = hp_buf_alloc(p);
        HP_REQUIRE(b);
        struct hp_pool_stats s0 = stats_of(p);
        if (where < 3) {
            hp_buf_free(b);
            if (where == 1)
                hp_pool_thread_flush(p);
            s0 = stats_of(p);
        }
        struct capture cap;
        HP_REQUIRE(capture_begin(&cap));
        if (where >= 2) {
            struct hp_buf *twice[2] = {b, b};
            struct freer f = {.p = p,
                              .bufs = twice,
                              .n = where == 2 ? 1 : 2,
                              .flush = true,
                              .exit = true};
            run_thread(freer_main, &f);
        } else {
            hp_buf_free(b);
        }
        char *text = capture_end(&cap);
        CHECK_REPORT(text, "double free", "dfree-pool", b);
        free(text);
        struct hp_pool_stats s = stats_of(p);
        HP_CHECK_EQ(s.errors, s0.errors + 1);
        HP_CHECK_EQ(s.frees, s0.frees + (where >= 3));
        HP_CHECK_EQ(hp_pool_in_use(p), 0);
        CHECK_WHOLE(p, N);
        if (hp_test_failed()) {
            hp_test_fail(__FILE__, __LINE__, "  (case %d: %s)", where, cases[where]);
            DONE(p);
            return;
        }
        DONE(p);
    }
}

/* Freeing memory that is no pool's buffer: reported, no crash, pool intact. */
HP_TEST(pool_free_foreign)
{
    enum { N = 16 };
    struct hp_pool_config c = cfg_of("foreign-pool", N, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *live = hp_buf_alloc(p);
    HP_REQUIRE(live);
    struct hp_buf *fake = aligned_alloc(64, sizeof(struct hp_buf));
    HP_REQUIRE(fake);

    static const char *const kind[] = {"zeroed malloc block", "malloc block of 0xA5",
                                       "malloc copy of a live buffer's metadata"};
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            memset(fake, 0, sizeof *fake);
        else if (k == 1)
            memset(fake, 0xA5, sizeof *fake);
        else
            memcpy(fake, live, sizeof *fake);
        struct hp_pool_stats s0 = stats_of(p);
        struct capture cap;
        HP_REQUIRE(capture_begin(&cap));
        hp_buf_free(fake);
        char *text = capture_end(&cap);
        /* The block belongs to no pool: the report gives its address (the
         * pool name it carries is not to be trusted, nor is any pool's
         * counter bound to move). */
        CHECK_REPORT(text, kind[k], NULL, fake);
        free(text);
        struct hp_pool_stats s = stats_of(p);
        HP_CHECK_EQ(s.frees, s0.frees);
        HP_CHECK_EQ(s.allocs, s0.allocs);
        HP_CHECK_EQ(hp_pool_in_use(p), 1);
        HP_CHECK((live->flags & HP_BUF_F_FREE) == 0);
        HP_CHECK_EQ(hp_buf_refcnt(live), 1);
        if (hp_test_failed())
            hp_test_fail(__FILE__, __LINE__, "  (case: %s)", kind[k]);
        HP_STOP_IF_FAILED();
    }
    free(fake);
    hp_buf_free(live);
    CHECK_WHOLE(p, N);
    DONE(p);
}

/* Pointers into a pool's memory that are not the start of a buffer. */
HP_TEST(pool_free_interior)
{
    enum { N = 16 };
    struct hp_pool_config c = cfg_of("interior-pool", N, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    /* A convincing fake inside b's data room: a copy of b's own metadata. */
    HP_REQUIRE(hp_buf_append(b, 256));
    unsigned char *room = b->base + 128; /* 64-byte aligned, inside the data */
    struct hp_buf *inside[3] = {
        (struct hp_buf *)((unsigned char *)b + 64), /* the second line of b's metadata */
        (struct hp_buf *)room,                      /* b's data room, zeros */
        (struct hp_buf *)room,                      /* b's data room, a copy of b */
    };
    for (int k = 0; k < 3; k++) {
        if (k == 1)
            memset(room, 0, sizeof(struct hp_buf));
        if (k == 2)
            memcpy(room, b, sizeof(struct hp_buf));
        unsigned char before[HP_BUF_META_SIZE];
        memcpy(before, b, sizeof before);
        struct hp_pool_stats s0 = stats_of(p);
        struct capture cap;
        HP_REQUIRE(capture_begin(&cap));
        hp_buf_free(inside[k]);
        char *text = capture_end(&cap);
        CHECK_REPORT(text, "free of a pointer inside a buffer", "interior-pool", inside[k]);
        free(text);
        struct hp_pool_stats s = stats_of(p);
        HP_CHECK_EQ(s.errors, s0.errors + 1);
        HP_CHECK_EQ(s.frees, s0.frees);
        HP_CHECK_EQ(hp_pool_in_use(p), 1);
        HP_CHECK_MEMEQ(b, before, sizeof before);
        if (hp_test_failed()) {
            hp_test_fail(__FILE__, __LINE__, "  (case %d)", k);
            return;
        }
    }
    hp_buf_free(b);
    CHECK_WHOLE(p, N);
    DONE(p);
}

HP_TEST(pool_refcnt_underflow)
{
    enum { N = 16 };
    struct hp_pool_config c = cfg_of("underflow-pool", N, HP_ALIEN_LOCAL);
    struct hp_pool *p = MAKE(&c);
    HP_REQUIRE(p);

    /* Two references, three frees. */
    struct hp_buf *b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_REQUIRE_EQ(hp_buf_ref(b), 2);
    hp_buf_free(b);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    struct hp_pool_stats s0 = stats_of(p);
    struct capture cap;
    HP_REQUIRE(capture_begin(&cap));
    hp_buf_free(b);
    char *text = capture_end(&cap);
    CHECK_REPORT(text, "free after the count reached 0", "underflow-pool", b);
    free(text);
    HP_CHECK_EQ(stats_of(p).errors, s0.errors + 1);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    CHECK_WHOLE(p, N);

    /* A clone freed twice: reported, and the original keeps its reference. */
    b = hp_buf_alloc(p);
    HP_REQUIRE(b);
    HP_REQUIRE(hp_buf_append(b, 10));
    struct hp_buf *cl = hp_buf_clone(b, p);
    HP_REQUIRE(cl);
    hp_buf_free(cl);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);
    s0 = stats_of(p);
    HP_REQUIRE(capture_begin(&cap));
    hp_buf_free(cl);
    text = capture_end(&cap);
    CHECK_REPORT(text, "double free of a clone", "underflow-pool", cl);
    free(text);
    HP_CHECK_EQ(stats_of(p).errors, s0.errors + 1);
    HP_CHECK_EQ(hp_buf_refcnt(b), 1);
    HP_CHECK((b->flags & HP_BUF_F_FREE) == 0);
    HP_CHECK_EQ(hp_pool_in_use(p), 1);
    HP_CHECK(hp_buf_prepend(b, 1) != NULL);
    hp_buf_free(b);
    HP_CHECK_EQ(hp_pool_in_use(p), 0);
    CHECK_WHOLE(p, N);
    DONE(p);
}
