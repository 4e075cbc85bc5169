/* SPDX-License-Identifier: BSD-3-Clause */
/* Utilities of the hotpath command: cycle counter, CPU pinning, symbol sizes, SHA-256, progress display. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HP_HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif
#ifdef HP_HAVE_LIBELF
#include <gelf.h>
#include <libelf.h>
#endif

#include "harness.h"
#include "tool.h"

#if defined(__x86_64__)
#include <x86intrin.h>
uint64_t tool_ticks(void)
{
    return __rdtsc();
}
const char *tool_ticks_unit(void)
{
    return "TSC cycles";
}
#elif defined(__aarch64__)
uint64_t tool_ticks(void)
{
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
const char *tool_ticks_unit(void)
{
    return "timer ticks";
}
#else
uint64_t tool_ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
const char *tool_ticks_unit(void)
{
    return "ns";
}
#endif

int tool_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) ? -errno : 0;
}

int tool_ncpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

long tool_symbol_size(const char *name)
{
#ifdef HP_HAVE_LIBELF
    long found = -1;
    if (elf_version(EV_CURRENT) == EV_NONE)
        return -1;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    Elf_Scn *scn = NULL;
    while (e && found < 0 && (scn = elf_nextscn(e, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; d && i < n; i++) {
            GElf_Sym s;
            if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC)
                continue;
            const char *sn = elf_strptr(e, sh.sh_link, s.st_name);
            if (sn && strcmp(sn, name) == 0) {
                found = (long)s.st_size;
                break;
            }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return found;
#else
    (void)name;
    return -1;
#endif
}

const char *tool_build_flags(void)
{
#ifdef HP_BUILD_FLAGS
    return HP_BUILD_FLAGS;
#else
#ifdef HP_LIB_LTO
#define HP_LTO_FLAG " -flto"
#else
#define HP_LTO_FLAG ""
#endif
#if defined(__x86_64__)
    return "-O3 -march=x86-64-v2 -falign-functions=64" HP_LTO_FLAG
           " (variants: target(avx2), target(avx512f,avx512bw))";
#else
    return "-O3 -falign-functions=64" HP_LTO_FLAG;
#endif
#endif
}

const char *tool_compiler(void)
{
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown compiler";
#endif
}

int tool_grow(void *pv, size_t *cap, size_t n, size_t elt, size_t first)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    void **v = pv;
    void *nv = realloc(*v, c * elt);
    if (!nv)
        return -ENOMEM;
    *v = nv;
    *cap = c;
    return 0;
}

double tool_median(double *v, int n)
{
    return hb_median(v, n);
}

const char *tool_fmt(const char *fmt, double v)
{
    static _Thread_local char bufs[8][32];
    static _Thread_local int next;
    char *b = bufs[next++ & 7];
    snprintf(b, sizeof bufs[0], fmt, v);
    return b;
}

int tool_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "hotpath %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see 'hotpath %s --help')\n", cmd);
    return 2;
}

void progress_init(struct progress *p, const char *label)
{
    p->label = label;
    p->tty = isatty(STDERR_FILENO) && getenv("CI") == NULL;
    p->last_decile = -1;
    p->t0 = tool_now_s();
}

void progress_update(void *ctx, int done, int total, const char *what)
{
    struct progress *p = ctx;
    if (total <= 0)
        return;
    int pct = (int)(100.0 * done / total);
    double el = tool_now_s() - p->t0;
    if (p->tty) {
        char bar[31];
        int fill = pct * 30 / 100;
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = 0;
        fprintf(stderr, "\r\033[K  %-8s [%s] %3d%%  %5.1fs  %s", p->label, bar, pct, el,
                what ? what : "");
        fflush(stderr);
    } else if (pct / 10 > p->last_decile) {
        p->last_decile = pct / 10;
        fprintf(stderr, "  %-8s %3d%%  %5.1fs  %s\n", p->label, pct, el, what ? what : "");
    }
}

void progress_done(struct progress *p)
{
    if (p->tty)
        fprintf(stderr, "\r\033[K  %-8s done in %.1fs\n", p->label, tool_now_s() - p->t0);
    else
        fprintf(stderr, "  %-8s done in %.1fs\n", p->label, tool_now_s() - p->t0);
}

int tool_parse_cpu(const char *cmd, const char *arg, int *cpu)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == 0 || *end || v < -1 || v >= tool_ncpus())
        return tool_usage_error(cmd, "--cpu wants -1 or a CPU from 0 to %d, not '%s'",
                                tool_ncpus() - 1, arg);
    *cpu = (int)v;
    return 0;
}

/* "1000000", "64Ki", "1M", "2Gi" */
int tool_parse_bytes(const char *arg, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*arg || arg[0] == '-' || arg[0] == '+')
        return -1;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || end == arg)
        return -1;
    uint64_t mul = 1;
    if (*end) {
        bool bin = end[1] == 'i';
        uint64_t base = bin ? 1024 : 1000;
        switch (end[0]) {
        case 'k':
        case 'K':
            mul = base;
            break;
        case 'M':
            mul = base * base;
            break;
        case 'G':
            mul = base * base * base;
            break;
        default:
            return -1;
        }
        if (end[bin ? 2 : 1] != '\0')
            return -1;
    }
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

int tool_parse_cpu_list(const char *cmd, const char *arg, int *cpus, int max)
{
    int n = 0, ncpu = tool_ncpus();
    const char *p = arg;
    while (*p) {
        char *end;
        errno = 0;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || errno || a < 0)
            goto bad;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || errno || b < a)
                goto bad;
        }
        if (b >= ncpu)
            return -tool_usage_error(cmd, "--cpu: CPU %ld is not online (0 to %d)", b, ncpu - 1);
        for (long c = a; c <= b; c++) {
            if (n >= max)
                return -tool_usage_error(cmd, "--cpu: more than %d CPUs in '%s'", max, arg);
            cpus[n++] = (int)c;
        }
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            goto bad;
        p = end;
    }
    if (n == 0)
        goto bad;
    return n;
bad:
    return -tool_usage_error(cmd, "--cpu wants a list of CPUs like 0,2-3, not '%s'", arg);
}

void tool_json_str(FILE *f, const char *s)
{
    json_t *v = json_string(s);
    if (v)
        json_dumpf(v, f, JSON_ENCODE_ANY);
    else
        fputs("null", f);
    json_decref(v);
}

double tool_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double tool_thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#ifdef HP_HAVE_LIBCRYPTO
bool tool_sha256_available(void)
{
    return true;
}

struct tool_sha256 *tool_sha256_new(void)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(c);
        c = NULL;
    }
    return (struct tool_sha256 *)c;
}

void tool_sha256_update(struct tool_sha256 *h, const void *p, size_t n)
{
    if (h && n)
        EVP_DigestUpdate((EVP_MD_CTX *)h, p, n);
}

void tool_sha256_final(struct tool_sha256 *h, char hex[65])
{
    hex[0] = '\0';
    if (!h)
        return;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)h, md, &len) == 1 && len == 32)
        for (unsigned i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
}
#else
bool tool_sha256_available(void)
{
    return false;
}

struct tool_sha256 *tool_sha256_new(void)
{
    return NULL;
}

void tool_sha256_update(struct tool_sha256 *h, const void *p, size_t n)
{
    (void)h;
    (void)p;
    (void)n;
}

void tool_sha256_final(struct tool_sha256 *h, char hex[65])
{
    (void)h;
    hex[0] = '\0';
}
#endif
