/* SPDX-License-Identifier: BSD-3-Clause */
/* Field profile runtime, linked only into HP_FIELD_PROFILE builds: counts reads and writes of each struct hp_tcp_sock offset per TCP path and writes them at exit for hotpath layout --profile. */
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hotpath/tcp.h>

#include "sock/tcp_internal.h"

/*
 * How the accesses are seen, without touching the TCP sources (CMakeLists.txt,
 * HP_FIELD_PROFILE):
 *
 * - clang's -fsanitize-coverage=func,trace-loads,trace-stores on src/sock and
 *   src/net calls __sanitizer_cov_load<N>(addr) / __sanitizer_cov_store<N>(addr)
 *   before each load and store of 1, 2, 4, 8 or 16 bytes (memcpy and memset,
 *   which run in libc, are not seen);
 * - -finstrument-functions on src/sock calls __cyg_profile_func_enter/exit
 *   for every function, inlined ones included: the path of an access is the
 *   outermost path function the thread is in (RX: hp__tcp_input,
 *   hp_tcp_recv, hp_tcp_recv_buf; TX: hp_tcp_send, hp_tcp_send_buf, and
 *   hp__tcp_output when nothing else is running, as from a timer), else
 *   "other" (setup, timers, teardown);
 * - -Wl,--wrap=aligned_alloc,--wrap=free: a connection block is an
 *   aligned_alloc(64, sizeof(struct hp_tcp_sock)) made while inside
 *   hp__tcp_conn_new, and stops being one when freed.
 *
 * The blocks' cache lines go into a lock-free hash (line address -> block
 * start); keys are never removed, only their block cleared, so readers on
 * other threads need no lock. Counts are per thread, merged at exit.
 *
 * With HP_FIELD_PROFILE unset in the environment every hook returns at
 * once: the build runs as usual, only slower.
 */

#define BLOCK    sizeof(struct hp_tcp_sock)
#define TBITS    21
#define TSIZE    ((size_t)1 << TBITS)
#define MAX_KEYS (TSIZE / 2)
#define NSIZES   5 /* 1, 2, 4, 8, 16 bytes */

enum { P_RX, P_TX, P_OTHER, P_N };
static const char *const path_name[P_N] = {"RX", "TX", "other"};

struct counts {
    uint64_t entries[P_N];
    uint64_t r[P_N][BLOCK][NSIZES];
    uint64_t w[P_N][BLOCK][NSIZES];
    struct counts *next;
};

struct tstate {
    uintptr_t path_fn; /* the outermost path function we are in, 0 if none */
    unsigned depth;    /* its recursion depth */
    int path;
    int in_conn_new;
    struct counts *c;
};

static bool on;
static pid_t owner;
static const char *out_path;
static uintptr_t fn_conn_new, fn_rx[3], fn_tx[3];
static _Atomic uintptr_t t_key[TSIZE]; /* line address >> 6; 0: free slot */
static _Atomic uintptr_t t_val[TSIZE]; /* block start, 0 when freed */
static _Atomic uintptr_t lo = UINTPTR_MAX, hi;
static _Atomic size_t nkeys;
static _Atomic uint64_t nblocks, nlost;
static _Atomic(struct counts *) all;
static _Thread_local struct tstate ts;

/* Hooks the compiler and the linker call (prototypes for -Wmissing-prototypes). */
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);
void __sanitizer_cov_load1(void *p);
void __sanitizer_cov_load2(void *p);
void __sanitizer_cov_load4(void *p);
void __sanitizer_cov_load8(void *p);
void __sanitizer_cov_load16(void *p);
void __sanitizer_cov_store1(void *p);
void __sanitizer_cov_store2(void *p);
void __sanitizer_cov_store4(void *p);
void __sanitizer_cov_store8(void *p);
void __sanitizer_cov_store16(void *p);
void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
void __real_free(void *p);
void __wrap_free(void *p);

static inline size_t slot_of(uintptr_t line)
{
    return (size_t)((line * 0x9E3779B97F4A7C15ull) >> (64 - TBITS));
}

static bool line_set(uintptr_t line, uintptr_t blk)
{
    size_t i = slot_of(line);
    for (size_t n = 0; n < TSIZE; n++, i = (i + 1) & (TSIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&t_key[i], memory_order_acquire);
        if (k == 0) {
            if (blk == 0)
                return false; /* clearing a line never set */
            if (atomic_fetch_add_explicit(&nkeys, 1, memory_order_relaxed) >= MAX_KEYS) {
                atomic_fetch_sub_explicit(&nkeys, 1, memory_order_relaxed);
                return false;
            }
            uintptr_t z = 0;
            if (atomic_compare_exchange_strong(&t_key[i], &z, line))
                k = line;
            else {
                atomic_fetch_sub_explicit(&nkeys, 1, memory_order_relaxed);
                k = z;
            }
        }
        if (k == line) {
            atomic_store_explicit(&t_val[i], blk, memory_order_release);
            return true;
        }
    }
    return false;
}

static inline uintptr_t line_get(uintptr_t line)
{
    size_t i = slot_of(line);
    for (size_t n = 0; n < TSIZE; n++, i = (i + 1) & (TSIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&t_key[i], memory_order_acquire);
        if (k == line)
            return atomic_load_explicit(&t_val[i], memory_order_acquire);
        if (k == 0)
            return 0;
    }
    return 0;
}

static void block_add(uintptr_t b)
{
    for (size_t l = 0; l < (BLOCK + 63) / 64; l++)
        if (!line_set((b >> 6) + l, b)) {
            for (size_t k = 0; k < l; k++)
                line_set((b >> 6) + k, 0);
            atomic_fetch_add_explicit(&nlost, 1, memory_order_relaxed);
            return;
        }
    uintptr_t cur = atomic_load_explicit(&lo, memory_order_relaxed);
    while (b < cur && !atomic_compare_exchange_weak(&lo, &cur, b))
        ;
    cur = atomic_load_explicit(&hi, memory_order_relaxed);
    while (b + BLOCK > cur && !atomic_compare_exchange_weak(&hi, &cur, b + BLOCK))
        ;
    atomic_fetch_add_explicit(&nblocks, 1, memory_order_relaxed);
}

static void block_del(uintptr_t b)
{
    if (line_get(b >> 6) != b)
        return;
    for (size_t l = 0; l < (BLOCK + 63) / 64; l++)
        line_set((b >> 6) + l, 0);
}

static struct counts *counts_get(void)
{
    if (ts.c)
        return ts.c;
    struct counts *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->next = atomic_load(&all);
    while (!atomic_compare_exchange_weak(&all, &c->next, c))
        ;
    ts.c = c;
    return c;
}

static inline void count(void *p, unsigned size_idx, bool write)
{
    if (!on)
        return;
    uintptr_t a = (uintptr_t)p;
    if (a < atomic_load_explicit(&lo, memory_order_relaxed) ||
        a >= atomic_load_explicit(&hi, memory_order_relaxed))
        return;
    uintptr_t b = line_get(a >> 6);
    if (!b || a - b >= BLOCK)
        return;
    struct counts *c = counts_get();
    if (!c)
        return;
    int path = ts.path_fn ? ts.path : P_OTHER;
    if (write)
        c->w[path][a - b][size_idx]++;
    else
        c->r[path][a - b][size_idx]++;
}

void __sanitizer_cov_load1(void *p)
{
    count(p, 0, false);
}
void __sanitizer_cov_load2(void *p)
{
    count(p, 1, false);
}
void __sanitizer_cov_load4(void *p)
{
    count(p, 2, false);
}
void __sanitizer_cov_load8(void *p)
{
    count(p, 3, false);
}
void __sanitizer_cov_load16(void *p)
{
    count(p, 4, false);
}
void __sanitizer_cov_store1(void *p)
{
    count(p, 0, true);
}
void __sanitizer_cov_store2(void *p)
{
    count(p, 1, true);
}
void __sanitizer_cov_store4(void *p)
{
    count(p, 2, true);
}
void __sanitizer_cov_store8(void *p)
{
    count(p, 3, true);
}
void __sanitizer_cov_store16(void *p)
{
    count(p, 4, true);
}

static int path_of(uintptr_t f)
{
    for (int i = 0; i < 3; i++) {
        if (f == fn_rx[i])
            return P_RX;
        if (f == fn_tx[i])
            return P_TX;
    }
    return -1;
}

void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    if (!on)
        return;
    uintptr_t f = (uintptr_t)fn;
    if (f == fn_conn_new) {
        ts.in_conn_new++;
        return;
    }
    if (ts.path_fn) {
        if (f == ts.path_fn)
            ts.depth++;
        return;
    }
    int p = path_of(f);
    if (p < 0)
        return;
    ts.path_fn = f;
    ts.path = p;
    ts.depth = 1;
    struct counts *c = counts_get();
    if (c)
        c->entries[p]++;
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    if (!on)
        return;
    uintptr_t f = (uintptr_t)fn;
    if (f == fn_conn_new) {
        if (ts.in_conn_new)
            ts.in_conn_new--;
        return;
    }
    if (ts.path_fn == f && --ts.depth == 0)
        ts.path_fn = 0;
}

void *__wrap_aligned_alloc(size_t align, size_t size)
{
    void *p = __real_aligned_alloc(align, size);
    if (p && on && ts.in_conn_new && align == 64 && size == BLOCK)
        block_add((uintptr_t)p);
    return p;
}

void __wrap_free(void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (p && on && a >= atomic_load_explicit(&lo, memory_order_relaxed) &&
        a < atomic_load_explicit(&hi, memory_order_relaxed))
        block_del(a);
    __real_free(p);
}

static void dump(void)
{
    if (!on || getpid() != owner) /* a forked child (rr --link kernel) writes nothing */
        return;
    on = false;
    struct counts *sum = calloc(1, sizeof *sum);
    if (!sum) {
        fprintf(stderr, "hotpath: HP_FIELD_PROFILE: out of memory, no profile written\n");
        return;
    }
    for (struct counts *c = atomic_load(&all); c; c = c->next) {
        for (int p = 0; p < P_N; p++) {
            sum->entries[p] += c->entries[p];
            for (size_t o = 0; o < BLOCK; o++)
                for (int s = 0; s < NSIZES; s++) {
                    sum->r[p][o][s] += c->r[p][o][s];
                    sum->w[p][o][s] += c->w[p][o][s];
                }
        }
    }
    FILE *f = fopen(out_path, "w");
    if (!f) {
        perror(out_path);
        free(sum);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    fprintf(f, "# hotpath field profile 1: reads and writes of struct hp_tcp_sock by offset, "
               "access size and path\n");
    fprintf(f, "binary %s\nstruct hp_tcp_sock %zu\nblocks %llu\nlost %llu\n", self, BLOCK,
            (unsigned long long)atomic_load(&nblocks), (unsigned long long)atomic_load(&nlost));
    for (int p = P_RX; p <= P_TX; p++)
        fprintf(f, "entries %s %llu\n", path_name[p], (unsigned long long)sum->entries[p]);
    fprintf(f, "# offset size path reads writes\n");
    for (size_t o = 0; o < BLOCK; o++)
        for (int s = 0; s < NSIZES; s++)
            for (int p = 0; p < P_N; p++)
                if (sum->r[p][o][s] || sum->w[p][o][s])
                    fprintf(f, "%zu %u %s %llu %llu\n", o, 1u << s, path_name[p],
                            (unsigned long long)sum->r[p][o][s],
                            (unsigned long long)sum->w[p][o][s]);
    if (fclose(f) != 0)
        perror(out_path);
    else
        fprintf(stderr, "hotpath: field profile of %llu connection blocks written to %s\n",
                (unsigned long long)atomic_load(&nblocks), out_path);
    free(sum);
}

__attribute__((constructor)) static void fieldprof_init(void)
{
    out_path = getenv("HP_FIELD_PROFILE");
    if (!out_path || !*out_path)
        return;
    fn_conn_new = (uintptr_t)&hp__tcp_conn_new;
    fn_rx[0] = (uintptr_t)&hp__tcp_input;
    fn_rx[1] = (uintptr_t)&hp_tcp_recv;
    fn_rx[2] = (uintptr_t)&hp_tcp_recv_buf;
    fn_tx[0] = (uintptr_t)&hp_tcp_send;
    fn_tx[1] = (uintptr_t)&hp_tcp_send_buf;
    fn_tx[2] = (uintptr_t)&hp__tcp_output;
    owner = getpid();
    atexit(dump);
    on = true;
}
