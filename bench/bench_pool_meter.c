/* SPDX-License-Identifier: BSD-3-Clause */
/* What the pool and txcomp benchmarks share: medians with their 95% intervals, the slice meter (timed groups), the pairs ADAPTIVE settled on. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/pool.h>

#include "bench_pool.h"
#include "tool.h"

/* ---- statistics: medians with their spread ------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* P(X <= j) for X ~ Binomial(n, 1/2). */
static double binom_half_cdf(int n, int j)
{
    double s = 0;
    for (int i = 0; i <= j; i++)
        s += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    return s;
}

/* The median, and the distribution-free 95% interval of the median: the
 * k-th smallest and k-th largest samples, k the largest with
 * P(Binomial(n, 1/2) < k) <= 2.5%. Below 6 samples no such k exists: min
 * and max instead. */
void pool_summarise(double *v, int n, struct pool_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    out->med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    int k = 0;
    while (k + 1 <= n / 2 && binom_half_cdf(n, k) <= 0.025)
        k++;
    out->ci = k >= 1;
    out->lo = out->ci ? v[k - 1] : v[0];
    out->hi = out->ci ? v[n - k] : v[n - 1];
}

const char *pool_summary_str(const struct pool_summary *s, char *buf, size_t len)
{
    if (s->n == 0)
        snprintf(buf, len, "-");
    else if (s->ci)
        snprintf(buf, len, "%.3f [%.3f, %.3f]", s->med, s->lo, s->hi);
    else
        snprintf(buf, len, "%.3f [min %.3f, max %.3f]", s->med, s->lo, s->hi);
    return buf;
}

json_t *pool_summary_json(const struct pool_summary *s)
{
    if (s->n == 0)
        return json_null();
    return json_pack("{s:f, s:f, s:f, s:i, s:s}", "median", s->med, "lo", s->lo, "hi", s->hi, "n",
                     s->n, "interval", s->ci ? "95% CI of the median" : "min-max");
}

/* ---- the pairs ADAPTIVE settled on ---------------------------------------- */

static const char *role_of(int tid, const int *tids, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (tids[i] == tid)
            return names[i];
    return "?";
}

int pool_pairs_of(struct hp_pool *pool, const int *tids, const char *const *names, int n,
                  struct pool_pair *out, int max)
{
    struct hp_pool_pair_stats ps[8];
    int k = hp_pool_pair_stats(pool, ps, 8), kept = 0;
    for (int i = 0; i < k && i < 8 && kept < max; i++) {
        struct pool_pair *p = &out[kept++];
        snprintf(p->freer, sizeof p->freer, "%s", role_of(ps[i].freer, tids, names, n));
        snprintf(p->owner, sizeof p->owner, "%s", role_of(ps[i].owner, tids, names, n));
        p->policy = ps[i].policy;
        p->measured = ps[i].measured;
        p->alien_frees = ps[i].alien_frees;
        p->switches = ps[i].switches;
        p->explorations = ps[i].explorations;
        p->defer_gain = ps[i].defer_gain;
    }
    return kept;
}

void pool_pairs_print(const struct pool_pair *p, int n, const char *indent, FILE *f)
{
    for (int i = 0; i < n; i++, p++)
        fprintf(f,
                "%s%s frees %s's buffers: settled on %s (%s), %llu switches in %llu "
                "explorations; last: defer %+.1f%% vs local\n",
                indent, p->freer, p->owner, hp_alien_policy_name(p->policy),
                p->measured ? "measured" : "contention signal: nothing measured",
                (unsigned long long)p->switches, (unsigned long long)p->explorations,
                100 * p->defer_gain);
}

json_t *pool_pairs_json(const struct pool_pair *p, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++, p++)
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:f}", "freer", p->freer, "owner",
                         p->owner, "policy", hp_alien_policy_name(p->policy), "measured",
                         p->measured, "alien_frees", (json_int_t)p->alien_frees, "switches",
                         (json_int_t)p->switches, "explorations", (json_int_t)p->explorations,
                         "defer_gain", p->defer_gain));
    return a;
}

/* ---- the meter ------------------------------------------------------------ */

/* Nanoseconds the calling thread has spent runnable but waiting for a CPU
 * (the kernel's schedstat run_delay); 0 when the kernel does not say. */
static uint64_t thread_run_delay_ns(void)
{
    char buf[96];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long long run, delay;
    return sscanf(buf, "%llu %llu", &run, &delay) == 2 ? delay : 0;
}

int pool_meter_init(struct pool_meter *m, _Atomic unsigned *mark, unsigned nmarks, double secs,
                    unsigned group)
{
    memset(m, 0, sizeof *m);
    m->mark = mark;
    m->nmarks = nmarks;
    m->group = group ? group : 1;
    m->max_groups = (unsigned)(secs * 2e6) + 16;
    m->marks = calloc(nmarks, sizeof m->marks[0]);
    m->groups = malloc((size_t)m->max_groups * sizeof m->groups[0]);
    if (!m->marks || !m->groups) {
        pool_meter_free(m);
        return -ENOMEM;
    }
    return 0;
}

void pool_meter_free(struct pool_meter *m)
{
    free(m->marks);
    free(m->groups);
    m->marks = NULL;
    m->groups = NULL;
}

/* Record the counters for every mark since the last one seen; groups start
 * with the first. */
void pool_meter_take(struct pool_meter *m, unsigned mark, uint64_t done)
{
    struct pool_mark k = {.done = done,
                          .delay = thread_run_delay_ns(),
                          .wall = tool_now_s(),
                          .cpu = tool_thread_cpu_s(),
                          .ticks = tool_ticks(),
                          .ngroups = m->ngroups};
    if (m->seen == 0) {
        m->group_t0 = k.ticks;
        m->in_group = 0;
    }
    while (m->seen != mark) {
        m->seen++;
        if (m->seen < m->nmarks)
            m->marks[m->seen] = k;
    }
}

void pool_meter_group(struct pool_meter *m)
{
    uint64_t t = tool_ticks();
    if (m->seen > 0 && m->ngroups < m->max_groups) {
        uint64_t per = ((t - m->group_t0) << 8) / m->in_group;
        m->groups[m->ngroups++] = per < UINT32_MAX ? (uint32_t)per : UINT32_MAX;
    }
    m->group_t0 = t;
    m->in_group = 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

double pool_meter_rate(const struct pool_meter *m, unsigned m0, unsigned m1, double hz,
                       uint32_t *scratch)
{
    unsigned g0 = m->marks[m0].ngroups, g1 = m->marks[m1].ngroups;
    if (g1 <= g0)
        return 0;
    memcpy(scratch, m->groups + g0, (g1 - g0) * sizeof scratch[0]);
    qsort(scratch, g1 - g0, sizeof scratch[0], cmp_u32);
    double med = scratch[(g1 - g0) / 2];
    return med > 0 ? 256 * hz / med : 0;
}

double pool_meter_hz(const struct pool_meter *m, unsigned m0, unsigned m1)
{
    const struct pool_mark *a = &m->marks[m0], *b = &m->marks[m1];
    return b->wall > a->wall ? (double)(b->ticks - a->ticks) / (b->wall - a->wall) : 1e9;
}

/* ---- warming up ADAPTIVE ---------------------------------------------------- */

static void nap(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
        ;
}

double pool_warm_adaptive(struct hp_pool *pool, double min_s, double max_s)
{
    double t0 = tool_now_s(), t;
    nap(min_s);
    while ((t = tool_now_s()) - t0 < max_s) {
        struct hp_pool_pair_stats ps[8];
        int n = hp_pool_pair_stats(pool, ps, 8), settled = 0;
        /* Two explorations that keep the choice, two more per switch (one
         * to vote, one to confirm): then the next is far away. */
        for (int i = 0; i < n && i < 8; i++)
            settled += ps[i].explorations >= 2 + 2 * ps[i].switches;
        if (n > 0 && settled == (n < 8 ? n : 8))
            break;
        nap(0.01);
    }
    return tool_now_s() - t0;
}
