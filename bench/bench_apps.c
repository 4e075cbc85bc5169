/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath bench apps`: redis-benchmark GET and SET, wrk on a 1 KiB page and one iperf3 stream over one veth pair, in one run: both ends on the kernel, the server on hotpath, both on hotpath (libhotpath-posix.so); and the layer's CPU per request against the same echo on hotpath's own API. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hotpath/link.h>

#include "apps_echo.h"
#include "bench_apps.h"
#include "tool.h"

#define IP_CLIENT  "198.18.0.1"
#define IP_SERVER  "198.18.0.2"
#define ECHO_PORT  7
#define ECHO_CONNS 16
#define ECHO_BYTES 64

static const char *const cfg_names[APPS_NCFG] = {
    "kernel", "server-hotpath", "both-hotpath", "kernel-loopback", "both-hp-memif",
};

const char *apps_cfg_name(int cfg)
{
    return cfg >= 0 && cfg < APPS_NCFG ? cfg_names[cfg] : "?";
}

/* What a run needs: the namespaces (0: client, 1: server), this binary,
 * a scratch directory. */
struct ctx {
    struct apps_report *r;
    const struct bench_opts *o;
    struct tool_netns ns;
    char self[PATH_MAX], dir[64];
    long redis_n;
    int step, nsteps;
};

/* ---- processes ----------------------------------------------------------------- */

static void progress(struct ctx *c, const char *what)
{
    if (c->o->progress)
        c->o->progress(c->o->progress_ctx, c->step, c->nsteps, what);
    c->step++;
}

/* argv of one program in side's namespace, pinned, on hotpath when hp. */
struct av {
    const char *v[64];
    int n;
    char ifa[32], cpu[8], sock[96];
};

static void av_add(struct av *a, ...)
{
    va_list ap;
    va_start(ap, a);
    const char *s;
    while ((s = va_arg(ap, const char *)) != NULL && a->n < 62)
        a->v[a->n++] = s;
    va_end(ap);
    a->v[a->n] = NULL;
}

static void av_start(struct ctx *c, struct av *a, int side, bool hp)
{
    a->n = 0;
    snprintf(a->cpu, sizeof a->cpu, "%d", side ? c->r->server_cpu : c->r->client_cpu);
    snprintf(a->ifa, sizeof a->ifa, "%s/24", side ? IP_SERVER : IP_CLIENT);
    av_add(a, "ip", "netns", "exec", c->ns.ns[side], "taskset", "-c", a->cpu, NULL);
    if (hp)
        av_add(a, c->self, "run", "--link", c->r->link, "--iface", c->ns.ifname[side], "--ip",
               a->ifa, "--", NULL);
}

/* The same for the one-host configurations: no namespace; on hotpath over
 * memif (side 1 the memif server) for APPS_BOTH_MEMIF. */
static void av_start_host(struct ctx *c, struct av *a, int side, int cfg)
{
    a->n = 0;
    snprintf(a->cpu, sizeof a->cpu, "%d", side ? c->r->server_cpu : c->r->client_cpu);
    snprintf(a->ifa, sizeof a->ifa, "%s/24", side ? IP_SERVER : IP_CLIENT);
    snprintf(a->sock, sizeof a->sock, "%s/hpm-redis.sock", c->dir);
    av_add(a, "taskset", "-c", a->cpu, NULL);
    if (cfg == APPS_BOTH_MEMIF)
        av_add(a, c->self, "run", "--link", "memif", "--memif-socket", a->sock, "--memif-role",
               side ? "server" : "client", "--ip", a->ifa, "--", NULL);
}

/* A program of configuration cfg on side (0: client, 1: server). */
static void av_for(struct ctx *c, struct av *a, int side, int cfg)
{
    if (cfg >= APPS_NVETH)
        av_start_host(c, a, side, cfg);
    else
        av_start(c, a, side, side ? cfg != APPS_KERNEL : cfg == APPS_BOTH_HP);
}

static pid_t spawn(const struct av *a, const char *log)
{
    pid_t p = fork();
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(a->v[0], (char *const *)a->v);
        _exit(127);
    }
    return p;
}

/* Wait for pid (at most timeout_s; then SIGKILL). Its CPU seconds in *cpu. */
static int reap(pid_t pid, double timeout_s, double *cpu)
{
    double end = tool_now_s() + timeout_s;
    int st = 0;
    struct rusage ru;
    pid_t w;
    while ((w = wait4(pid, &st, WNOHANG, &ru)) == 0) {
        if (tool_now_s() > end)
            kill(pid, SIGKILL);
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    if (cpu)
        *cpu = w > 0 ? (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6
                     : 0;
    return w > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    reap(pid, 10, NULL);
}

static bool wait_text(const char *path, const char *text, double timeout_s)
{
    double end = tool_now_s() + timeout_s;
    char buf[8192];
    while (tool_now_s() < end) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        if (strstr(buf, text))
            return true;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* CPU seconds a live process used (utime + stime). */
static double proc_cpu(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Busy CPU seconds of the whole machine (/proc/stat). */
static double machine_cpu(void)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7]) != 8) {
        if (f)
            fclose(f);
        return 0;
    }
    fclose(f);
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- the configurations ------------------------------------------------------------- */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* The kernel keeps an address only where its side runs on the kernel. */
static void set_config(struct ctx *c, int cfg)
{
    const char *ip[2] = {IP_CLIENT, IP_SERVER};
    for (int side = 0; side < 2; side++) {
        bool kernel = cfg == APPS_KERNEL || (cfg == APPS_SERVER_HP && side == 0);
        sh("ip -n %s addr %s %s/24 dev %s 2>/dev/null", c->ns.ns[side], kernel ? "replace" : "del",
           ip[side], c->ns.ifname[side]);
        sh("ip -n %s neigh flush dev %s 2>/dev/null", c->ns.ns[side], c->ns.ifname[side]);
    }
}

static struct apps_result *result(struct ctx *c, const char *workload, int cfg)
{
    struct apps_report *r = c->r;
    if (r->nres == APPS_MAX_RESULTS)
        return NULL;
    struct apps_result *x = &r->res[r->nres++];
    memset(x, 0, sizeof *x);
    x->workload = workload;
    x->cfg = cfg;
    x->rps = x->gbps = x->p50_us = x->p99_us = x->cpu_s_per_req = x->proc_cpu_s_per_req = -1;
    x->busy[0] = x->busy[1] = -1;
    return x;
}

/* A scratch result for one round of x. */
static void round_begin(struct apps_result *t, const struct apps_result *x)
{
    memset(t, 0, sizeof *t);
    t->workload = x->workload;
    t->cfg = x->cfg;
    t->rps = t->gbps = t->p50_us = t->p99_us = t->cpu_s_per_req = t->proc_cpu_s_per_req = -1;
    t->busy[0] = t->busy[1] = -1;
}

/* Round k's values into x (a failure's note too). */
static void round_end(struct apps_result *x, const struct apps_result *t, int k)
{
    if (k < 0 || k >= APPS_ROUNDS_MAX)
        return;
    struct apps_sample *v = &x->samp[k];
    v->ok = t->ok;
    v->rps = t->rps;
    v->p50_us = t->p50_us;
    v->p99_us = t->p99_us;
    v->cpu_s_per_req = t->cpu_s_per_req;
    v->proc_cpu_s_per_req = t->proc_cpu_s_per_req;
    v->busy[0] = t->busy[0];
    v->busy[1] = t->busy[1];
    if (k + 1 > x->nrounds)
        x->nrounds = k + 1;
    if (!t->ok && t->note[0] && !x->note[0])
        snprintf(x->note, sizeof x->note, "round %d: %.180s", k + 1, t->note);
}

/* The median of the rounds' values of one field (those >= 0). */
static double round_median(const struct apps_result *x, size_t off)
{
    double v[APPS_ROUNDS_MAX];
    int n = 0;
    for (int k = 0; k < x->nrounds; k++) {
        double d;
        memcpy(&d, (const char *)&x->samp[k] + off, sizeof d);
        if (x->samp[k].ok && d >= 0)
            v[n++] = d;
    }
    return n ? tool_median(v, n) : -1;
}

/* x's values: the medians of its rounds. */
static void rounds_fold(struct apps_result *x)
{
    int ok = 0;
    for (int k = 0; k < x->nrounds; k++)
        ok += x->samp[k].ok;
    x->ok = ok > 0;
    if (!x->ok)
        return;
    x->rps = round_median(x, offsetof(struct apps_sample, rps));
    x->p50_us = round_median(x, offsetof(struct apps_sample, p50_us));
    x->p99_us = round_median(x, offsetof(struct apps_sample, p99_us));
    x->cpu_s_per_req = round_median(x, offsetof(struct apps_sample, cpu_s_per_req));
    x->proc_cpu_s_per_req = round_median(x, offsetof(struct apps_sample, proc_cpu_s_per_req));
    x->busy[0] = round_median(x, offsetof(struct apps_sample, busy[0]));
    x->busy[1] = round_median(x, offsetof(struct apps_sample, busy[1]));
    char why[sizeof x->note];
    snprintf(why, sizeof why, "%s", x->note);
    if (x->nrounds > 1)
        snprintf(x->note, sizeof x->note, "median of %d alternated rounds%s%.150s", ok,
                 why[0] ? "; " : "", why);
}

/* ---- measuring one client run ---------------------------------------------------------- */

/* One CPU's busy and total clock ticks so far (/proc/stat's cpuN line);
 * false when it has none. */
static bool cpu_ticks(int cpu, unsigned long long *busy, unsigned long long *all)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[512], want[16];
    snprintf(want, sizeof want, "cpu%d ", cpu);
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        unsigned long long v[8];
        if (strncmp(line, want, strlen(want)) != 0 ||
            sscanf(line + strlen(want), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
            continue;
        /* user nice system idle iowait irq softirq steal: idle and iowait are not busy */
        *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        *all = *busy + v[3] + v[4];
        found = true;
    }
    if (f)
        fclose(f);
    return found;
}

struct meas {
    double t0, m0, s0;
    pid_t srv;
    int cpu[2];                      /* the client's, the server's */
    unsigned long long b0[2], a0[2]; /* their ticks at the start */
    bool ticks;
};

static void meas_begin(struct meas *m, const struct ctx *c, pid_t srv)
{
    m->srv = srv;
    m->s0 = srv > 0 ? proc_cpu(srv) : 0;
    m->cpu[0] = c->r->client_cpu;
    m->cpu[1] = c->r->server_cpu;
    m->ticks =
        cpu_ticks(m->cpu[0], &m->b0[0], &m->a0[0]) && cpu_ticks(m->cpu[1], &m->b0[1], &m->a0[1]);
    m->m0 = machine_cpu();
    m->t0 = tool_now_s();
}

/* CPU per request (reqs requests, or per GB for a bulk transfer), and how
 * busy the client's and the server's CPUs were: the one near 100% is what
 * bounds the rate (the kernel's work for a process, a veth peer's XDP
 * receive included, runs on the CPU of whoever sent). */
static void meas_end(const struct meas *m, double client_cpu, double reqs, struct apps_result *x)
{
    double mach = machine_cpu() - m->m0, srv = m->srv > 0 ? proc_cpu(m->srv) - m->s0 : 0;
    if (reqs > 0) {
        x->cpu_s_per_req = mach / reqs;
        x->proc_cpu_s_per_req = (srv + client_cpu) / reqs;
    }
    for (int i = 0; m->ticks && i < 2; i++) {
        unsigned long long b, a;
        if (cpu_ticks(m->cpu[i], &b, &a) && a > m->a0[i])
            x->busy[i] = (double)(b - m->b0[i]) / (double)(a - m->a0[i]);
    }
}

/* A server on side 1 (on hotpath unless cfg is the kernel's), ready when
 * text shows in file (its output when file is NULL). */
static pid_t server(struct ctx *c, int cfg, const char *tag, const char *file, const char *text,
                    struct av *a)
{
    char log[128], path[160];
    snprintf(log, sizeof log, "%s/%s-%s.log", c->dir, tag, cfg_names[cfg]);
    snprintf(path, sizeof path, "%s", file ? file : log);
    /* An earlier round's output must not pass for this one's. */
    unlink(path);
    pid_t p = spawn(a, log);
    if (p > 0 && !wait_text(path, text, 20)) {
        stop(p);
        return -1;
    }
    return p;
}

static void redis_parse(const char *log, const char *test, struct apps_result *x)
{
    FILE *f = fopen(log, "r");
    char line[512], want[16];
    snprintf(want, sizeof want, "\"%s\",", test);
    while (f && fgets(line, sizeof line, f)) {
        double rps, avg, min, p50, p95, p99;
        if (strncmp(line, want, strlen(want)) != 0)
            continue;
        if (sscanf(line + strlen(want), "\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\"", &rps,
                   &avg, &min, &p50, &p95, &p99) == 6) {
            x->rps = rps;
            x->p50_us = p50 * 1000;
            x->p99_us = p99 * 1000;
            x->ok = rps > 0;
        }
    }
    if (f)
        fclose(f);
}

/* The kernel's loopback is the host's: a port of its own, on 127.0.0.1 only. */
#define REDIS_LO_PORT "16390"

/* redis-benchmark SET and GET (on one host: GET only), round k of xs
 * (xs[0] SET, xs[1] GET; NULL for one not run). */
static void run_redis(struct ctx *c, int cfg, struct apps_result *const xs[2], int k)
{
    struct av a;
    bool lo = cfg == APPS_KERNEL_LO;
    const char *port = lo ? REDIS_LO_PORT : "6379", *host = lo ? "127.0.0.1" : IP_SERVER;
    av_for(c, &a, 1, cfg);
    av_add(&a, "redis-server", "--port", port, "--save", "", "--appendonly", "no",
           "--protected-mode", "no", NULL);
    if (lo)
        av_add(&a, "--bind", "127.0.0.1", NULL);
    pid_t srv = server(c, cfg, "redis-server", NULL, "Ready to accept connections", &a);
    static const char *const tests[2] = {"SET", "GET"};
    char n[24];
    snprintf(n, sizeof n, "%ld", c->redis_n);
    for (int t = 0; t < 2; t++) {
        if (!xs[t])
            continue;
        struct apps_result tr, *x = &tr;
        round_begin(x, xs[t]);
        progress(c, x->workload);
        if (srv < 0) {
            snprintf(x->note, sizeof x->note, "redis-server did not start (%s/redis-server-%s.log)",
                     c->dir, cfg_names[cfg]);
            round_end(xs[t], x, k);
            continue;
        }
        char log[128];
        snprintf(log, sizeof log, "%s/redis-benchmark-%s-%s-%d.log", c->dir, tests[t],
                 cfg_names[cfg], k + 1);
        av_for(c, &a, 0, cfg);
        av_add(&a, "redis-benchmark", "-h", host, "-p", port, "-t", t ? "get" : "set", "-c", "50",
               "-d", "3", "-n", n, "--csv", NULL);
        struct meas m;
        meas_begin(&m, c, srv);
        double ccpu = 0;
        reap(spawn(&a, log), 600, &ccpu);
        redis_parse(log, tests[t], x);
        meas_end(&m, ccpu, x->ok ? (double)c->redis_n : 0, x);
        if (!x->ok)
            snprintf(x->note, sizeof x->note, "no result: see %s", log);
        round_end(xs[t], x, k);
    }
    stop(srv);
}

/* "1.23ms" -> microseconds. */
static double wrk_time_us(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (strncmp(end, "us", 2) == 0)
        return v;
    if (strncmp(end, "ms", 2) == 0)
        return v * 1e3;
    if (*end == 's')
        return v * 1e6;
    return -1;
}

static void wrk_parse(const char *log, struct apps_result *x, double *reqs)
{
    FILE *f = fopen(log, "r");
    char line[256], v[32];
    bool bad = false;
    *reqs = 0;
    while (f && fgets(line, sizeof line, f)) {
        double d;
        if (sscanf(line, " 50%% %31s", v) == 1)
            x->p50_us = wrk_time_us(v);
        else if (sscanf(line, " 99%% %31s", v) == 1)
            x->p99_us = wrk_time_us(v);
        else if (sscanf(line, "Requests/sec: %lf", &d) == 1)
            x->rps = d;
        else if (sscanf(line, " %lf requests in", &d) == 1)
            *reqs = d;
        if (strstr(line, "Socket errors") || strstr(line, "Non-2xx"))
            bad = true;
    }
    if (f)
        fclose(f);
    x->ok = x->rps > 0 && !bad;
    if (bad)
        snprintf(x->note, sizeof x->note, "socket errors or non-2xx responses: see %s", log);
}

/* nginx serves the page as its tuning guides have it: with its cache of
 * open files, which spares it an open, fstat and close per request (a
 * third of its CPU with hotpath under it, docs/apps.md) and leaves its
 * network I/O to be measured. HP_BENCH_NGINX_FILE_CACHE=0: nginx's defaults. */
static bool nginx_file_cache_wanted(void)
{
    const char *v = getenv("HP_BENCH_NGINX_FILE_CACHE");
    return !v || strcmp(v, "0") != 0;
}

static void nginx_conf(struct ctx *c, int cfg, char *path, size_t len)
{
    snprintf(path, len, "%s/nginx-%s.conf", c->dir, cfg_names[cfg]);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(
        f,
        "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log %s/nginx-%s.err notice;\n"
        "pid %s/nginx.pid;\nevents { worker_connections 4096; }\nhttp {\n  access_log off;\n"
        "  keepalive_requests 1000000;\n%s  client_body_temp_path %s; proxy_temp_path %s;\n"
        "  fastcgi_temp_path %s; uwsgi_temp_path %s; scgi_temp_path %s;\n"
        "  server { listen 80; root %s; }\n}\n",
        c->dir, cfg_names[cfg], c->dir,
        c->r->nginx_file_cache ? "  open_file_cache max=64 inactive=60s;\n" : "", c->dir, c->dir,
        c->dir, c->dir, c->dir, c->dir);
    fclose(f);
}

/* wrk, round k of xr. */
static void run_wrk(struct ctx *c, int cfg, struct apps_result *xr, int k)
{
    struct apps_result tr, *x = &tr;
    round_begin(x, xr);
    progress(c, x->workload);
    char conf[160], err[160], log[160], d[16];
    nginx_conf(c, cfg, conf, sizeof conf);
    snprintf(err, sizeof err, "%s/nginx-%s.err", c->dir, cfg_names[cfg]);
    struct av a;
    av_start(c, &a, 1, cfg != APPS_KERNEL);
    av_add(&a, "nginx", "-c", conf, NULL);
    pid_t srv = server(c, cfg, "nginx", err, "getrlimit", &a);
    if (srv < 0) {
        snprintf(x->note, sizeof x->note, "nginx did not start (%s)", err);
        round_end(xr, x, k);
        return;
    }
    snprintf(log, sizeof log, "%s/wrk-%s-%d.log", c->dir, cfg_names[cfg], k + 1);
    snprintf(d, sizeof d, "%.0f", c->r->secs);
    av_start(c, &a, 0, cfg == APPS_BOTH_HP);
    av_add(&a, "wrk", "-t", "1", "-c", "100", "-d", d, "--latency", "http://" IP_SERVER "/1k",
           NULL);
    struct meas m;
    meas_begin(&m, c, srv);
    double ccpu = 0, reqs;
    reap(spawn(&a, log), 120 + c->r->secs, &ccpu);
    wrk_parse(log, x, &reqs);
    meas_end(&m, ccpu, reqs, x);
    round_end(xr, x, k);
    stop(srv);
}

static void run_iperf(struct ctx *c, int cfg, struct apps_result *x)
{
    progress(c, x->workload);
    char log[160], t[16];
    struct av a;
    av_start(c, &a, 1, cfg != APPS_KERNEL);
    av_add(&a, "iperf3", "-s", "--forceflush", NULL);
    pid_t srv = server(c, cfg, "iperf3-s", NULL, "Server listening", &a);
    if (srv < 0) {
        snprintf(x->note, sizeof x->note, "iperf3 -s did not start");
        return;
    }
    snprintf(log, sizeof log, "%s/iperf3-%s.json", c->dir, cfg_names[cfg]);
    snprintf(t, sizeof t, "%.0f", c->r->secs);
    av_start(c, &a, 0, cfg == APPS_BOTH_HP);
    av_add(&a, "iperf3", "-c", IP_SERVER, "-t", t, "-J", NULL);
    struct meas m;
    meas_begin(&m, c, srv);
    double ccpu = 0;
    reap(spawn(&a, log), 120 + c->r->secs, &ccpu);
    json_t *j = json_load_file(log, 0, NULL);
    json_t *sum = json_object_get(json_object_get(j, "end"), "sum_received");
    double bps = json_number_value(json_object_get(sum, "bits_per_second"));
    double bytes = json_number_value(json_object_get(sum, "bytes"));
    json_decref(j);
    x->ok = bps > 0;
    x->gbps = x->ok ? bps / 1e9 : -1;
    /* A bulk stream's "request": one gigabyte moved. */
    meas_end(&m, ccpu, bytes / 1e9, x);
    if (!x->ok)
        snprintf(x->note, sizeof x->note, "no result: see %s", log);
    stop(srv);
}

/* ---- the layer's cost: the same echo, native and through the layer -------------------- */

/* The native echo server: a child in the server's namespace. */
static pid_t echo_native(struct ctx *c, const char *log)
{
    pid_t p = fork();
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        if (tool_netns_enter(&c->ns, 1) < 0)
            _exit(1);
        tool_pin(c->r->server_cpu);
        /* _exit: the namespaces' atexit cleanup is the parent's. */
        _exit(apps_echo_native(c->r->link, c->ns.ifname[1], IP_SERVER, ECHO_PORT));
    }
    return p;
}

/* The kernel client in the client's namespace; round trips in *tx. */
static double echo_client(struct ctx *c, uint64_t *tx)
{
    int pp[2];
    if (pipe(pp) < 0)
        return 0;
    pid_t p = fork();
    if (p == 0) {
        uint64_t n = 0;
        if (tool_netns_enter(&c->ns, 0) == 0 && tool_pin(c->r->client_cpu) >= -EINVAL)
            apps_echo_client(IP_SERVER, ECHO_PORT, ECHO_CONNS, ECHO_BYTES, c->r->secs, &n);
        ssize_t w = write(pp[1], &n, sizeof n);
        _exit(w == sizeof n ? 0 : 1);
    }
    close(pp[1]);
    double cpu = 0;
    *tx = 0;
    if (p > 0 && read(pp[0], tx, sizeof *tx) != sizeof *tx)
        *tx = 0;
    close(pp[0]);
    if (p > 0)
        reap(p, 60 + c->r->secs, &cpu);
    return cpu;
}

/* One echo run: server (native or through the layer) and client; its
 * rate and the server's CPU seconds per request, or false. */
static bool echo_once(struct ctx *c, bool posix, double *rps, double *srv_cpu, double *mach_cpu)
{
    char log[160];
    snprintf(log, sizeof log, "%s/echo-%s.log", c->dir, posix ? "posix" : "native");
    unlink(log); /* the last round's "ready" is not this one's */
    struct av a;
    pid_t srv;
    if (posix) {
        /* Like the native echo: no busy-polling (apps_echo.c). */
        av_start(c, &a, 1, true);
        a.n--; /* before "--" */
        av_add(&a, "--busy-poll", "0", "--", "env", "HP_BENCH_APPS_ECHO=7", c->self, "bench",
               "apps", NULL);
        srv = spawn(&a, log);
    } else {
        srv = echo_native(c, log);
    }
    if (srv < 0 || !wait_text(log, "ready", 20)) {
        stop(srv);
        return false;
    }
    struct meas m;
    meas_begin(&m, c, srv);
    uint64_t tx;
    echo_client(c, &tx);
    double secs = tool_now_s() - m.t0;
    *srv_cpu = tx ? (proc_cpu(srv) - m.s0) / (double)tx : -1;
    *mach_cpu = tx ? (machine_cpu() - m.m0) / (double)tx : -1;
    *rps = (double)tx / secs;
    stop(srv);
    return tx > 0;
}

#define ECHO_ROUNDS 7 /* --quick: 3 */

/* The two echoes in alternation, ECHO_ROUNDS times each, in the time of
 * one run of each (a shared machine drifts: alternating keeps the drift
 * out of the ratio). The rows are the rounds' medians, the goal the
 * median of the rounds' own ratios (goal(), as for redis and wrk). */
static void run_echo(struct ctx *c)
{
    struct apps_result *x[2] = {result(c, "echo native", APPS_SERVER_HP),
                                result(c, "echo posix", APPS_SERVER_HP)};
    _Static_assert(ECHO_ROUNDS <= APPS_ROUNDS_MAX, "a round's samples");
    int rounds = c->o->quick ? 3 : ECHO_ROUNDS;
    double secs = c->r->secs;
    c->r->secs = secs * 2 / rounds;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            progress(c, x[k]->workload);
            struct apps_result t;
            round_begin(&t, x[k]);
            double rps, cpu, mach;
            t.ok = echo_once(c, k == 1, &rps, &cpu, &mach);
            if (t.ok) {
                t.rps = rps;
                t.proc_cpu_s_per_req = cpu;
                t.cpu_s_per_req = mach;
            } else {
                snprintf(t.note, sizeof t.note, "the echo did not run (%s/echo-%s.log)", c->dir,
                         k ? "posix" : "native");
            }
            round_end(x[k], &t, r);
        }
    c->r->secs = secs;
    for (int k = 0; k < 2; k++) {
        rounds_fold(x[k]);
        if (x[k]->ok)
            snprintf(x[k]->note + strlen(x[k]->note), sizeof x[k]->note - strlen(x[k]->note),
                     "; server CPU only");
    }
}

/* ---- goals ---------------------------------------------------------------------------- */

static const struct apps_result *find(const struct apps_report *r, const char *w, int cfg)
{
    for (int i = 0; i < r->nres; i++)
        if (strcmp(r->res[i].workload, w) == 0 && r->res[i].cfg == cfg && r->res[i].ok)
            return &r->res[i];
    return NULL;
}

/* A goal "num / den of the field >= want" (or <= want when at_most). */
static void goal(struct apps_report *r, const char *text, const struct apps_result *num,
                 const struct apps_result *den, double want, bool at_most, bool p99, bool cpu)
{
    if (r->ngoals == APPS_MAX_GOALS)
        return;
    struct apps_goal *g = &r->goals[r->ngoals++];
    snprintf(g->text, sizeof g->text, "%s", text);
    g->want = want;
    double a = !num ? -1 : p99 ? num->p99_us : cpu ? num->proc_cpu_s_per_req : num->rps;
    double b = !den ? -1 : p99 ? den->p99_us : cpu ? den->proc_cpu_s_per_req : den->rps;
    g->measured = a > 0 && b > 0;
    g->ratio = g->measured ? a / b : 0;
    /* Alternated results: the median of the rounds' own ratios. */
    double v[APPS_ROUNDS_MAX];
    int n = 0;
    for (int k = 0; g->measured && k < num->nrounds && k < den->nrounds; k++) {
        const struct apps_sample *x = &num->samp[k], *y = &den->samp[k];
        double xa = p99 ? x->p99_us : cpu ? x->proc_cpu_s_per_req : x->rps;
        double yb = p99 ? y->p99_us : cpu ? y->proc_cpu_s_per_req : y->rps;
        if (x->ok && y->ok && xa > 0 && yb > 0)
            v[n++] = xa / yb;
    }
    if (n)
        g->ratio = tool_median(v, n);
    g->met = g->measured && (at_most ? g->ratio <= want : g->ratio >= want);
}

static void goals(struct apps_report *r)
{
    static const char *const w[3] = {"redis GET", "redis SET", "wrk 1 KiB"};
    char t[160];
    for (int i = 0; i < 3; i++) {
        snprintf(t, sizeof t, "%s: both on hotpath >= 1.5x the kernel's requests/s", w[i]);
        goal(r, t, find(r, w[i], APPS_BOTH_HP), find(r, w[i], APPS_KERNEL), 1.5, false, false,
             false);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(t, sizeof t, "%s: server on hotpath >= 1.1x the kernel's requests/s", w[i]);
        goal(r, t, find(r, w[i], APPS_SERVER_HP), find(r, w[i], APPS_KERNEL), 1.1, false, false,
             false);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(t, sizeof t, "%s: p99 latency, both on hotpath <= 0.7x the kernel's", w[i]);
        goal(r, t, find(r, w[i], APPS_BOTH_HP), find(r, w[i], APPS_KERNEL), 0.7, true, true, false);
    }
    goal(r, "redis GET: both on hotpath over memif >= 2x both on the kernel over loopback",
         find(r, "redis GET", APPS_BOTH_MEMIF), find(r, "redis GET", APPS_KERNEL_LO), 2.0, false,
         false, false);
    goal(
        r, "the layer: the POSIX echo's server CPU per request <= 1.05x the same echo on hotpath's API",
        find(r, "echo posix", APPS_SERVER_HP), find(r, "echo native", APPS_SERVER_HP), 1.05, true,
        false, true);
}

/* ---- the report ------------------------------------------------------------------------- */

static void num(FILE *f, const char *fmt, double v, int width)
{
    if (v < 0)
        fprintf(f, "%*s", width, "-");
    else
        fprintf(f, fmt, width, v);
}

void apps_report_print(const struct apps_report *r, FILE *f)
{
    fprintf(f,
            "\n== apps: unmodified programs, one veth pair, %s (copy mode for afxdp), server on "
            "CPU %d, "
            "client on CPU %d, %.0f s per run ==\n",
            r->link, r->server_cpu, r->client_cpu, r->secs);
    fprintf(f, "%-12s %-15s %11s %7s %9s %9s %13s %13s %9s\n", "workload", "config", "req/s",
            "Gbit/s", "p50 us", "p99 us", "CPU s/req", "proc CPU/req", "busy c/s");
    for (int i = 0; i < r->nres; i++) {
        const struct apps_result *x = &r->res[i];
        fprintf(f, "%-12s %-15s ", x->workload, apps_cfg_name(x->cfg));
        num(f, "%*.0f", x->rps, 11);
        num(f, " %*.2f", x->gbps, 7);
        num(f, " %*.0f", x->p50_us, 9);
        num(f, " %*.0f", x->p99_us, 9);
        num(f, " %*.3g", x->cpu_s_per_req, 13);
        num(f, " %*.3g", x->proc_cpu_s_per_req, 13);
        if (x->busy[0] >= 0 && x->busy[1] >= 0)
            fprintf(f, "   %3.0f/%3.0f%%", 100 * x->busy[0], 100 * x->busy[1]);
        else
            fprintf(f, " %9s", "-");
        fprintf(f, "%s%s\n", x->note[0] ? "  " : "", x->note);
    }
    fprintf(
        f,
        "(iperf3: CPU seconds per gigabyte moved; CPU s/req: the whole machine's busy time from "
        "/proc/stat, shared with whatever else runs here; proc CPU/req: the server's and the "
        "client's "
        "processes, for echo the server's alone; busy c/s: how busy the client's and the "
        "server's CPUs were, the kernel's work included (a veth peer's XDP receive runs on the "
        "sender's CPU); kernel-loopback and both-hp-memif: one host, "
        "no namespace, both ends on the kernel over 127.0.0.1 / both on hotpath over memif; "
        "nginx %s)\n",
        r->nginx_file_cache
            ? "with its open_file_cache"
            : "with its defaults (HP_BENCH_NGINX_FILE_CACHE=0: no open_file_cache)");
    if (r->note[0])
        fprintf(f, "note: %s\n", r->note);
    fprintf(f, "goals (ratios in this run)\n");
    for (int i = 0; i < r->ngoals; i++) {
        const struct apps_goal *g = &r->goals[i];
        if (g->measured)
            fprintf(f, "  [%s] %s: %.2fx\n", g->met ? " met " : "MISSED", g->text, g->ratio);
        else
            fprintf(f, "  [ n/a ] %s: not measured\n", g->text);
    }
}

static void jnum(FILE *f, const char *key, double v, bool comma)
{
    if (v < 0)
        fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
    else
        fprintf(f, "\"%s\": %.6g%s", key, v, comma ? ", " : "");
}

void apps_report_json(const struct apps_report *r, FILE *f)
{
    fprintf(f,
            "{\"benchmark\": \"apps\", \"link\": \"%s\", \"seconds\": %.1f, \"server_cpu\": %d, "
            "\"client_cpu\": %d, \"nginx_open_file_cache\": %s,\n"
            " \"results\": [",
            r->link, r->secs, r->server_cpu, r->client_cpu, r->nginx_file_cache ? "true" : "false");
    for (int i = 0; i < r->nres; i++) {
        const struct apps_result *x = &r->res[i];
        fprintf(f, "%s\n  {\"workload\": \"%s\", \"config\": \"%s\", \"ok\": %s, ", i ? "," : "",
                x->workload, apps_cfg_name(x->cfg), x->ok ? "true" : "false");
        jnum(f, "rps", x->rps, true);
        jnum(f, "gbps", x->gbps, true);
        jnum(f, "p50_us", x->p50_us, true);
        jnum(f, "p99_us", x->p99_us, true);
        jnum(f, "cpu_s_per_req", x->cpu_s_per_req, true);
        jnum(f, "proc_cpu_s_per_req", x->proc_cpu_s_per_req, true);
        jnum(f, "client_cpu_busy", x->busy[0], true);
        jnum(f, "server_cpu_busy", x->busy[1], true);
        if (x->nrounds) { /* each round's requests/s and p99 (null: the round failed) */
            for (int q = 0; q < 2; q++) {
                fprintf(f, "\"%s\": [", q ? "rounds_p99_us" : "rounds_rps");
                for (int k = 0; k < x->nrounds; k++) {
                    double v = q ? x->samp[k].p99_us : x->samp[k].rps;
                    if (x->samp[k].ok && v >= 0)
                        fprintf(f, "%s%.6g", k ? ", " : "", v);
                    else
                        fprintf(f, "%snull", k ? ", " : "");
                }
                fprintf(f, "], ");
            }
        }
        fprintf(f, "\"note\": ");
        tool_json_str(f, x->note);
        fputc('}', f);
    }
    fprintf(f, "],\n \"goals\": [");
    for (int i = 0; i < r->ngoals; i++) {
        const struct apps_goal *g = &r->goals[i];
        fprintf(f, "%s\n  {\"goal\": ", i ? "," : "");
        tool_json_str(f, g->text);
        fprintf(f, ", \"want\": %.2f, \"measured\": %s, \"met\": %s, ", g->want,
                g->measured ? "true" : "false", g->met ? "true" : "false");
        jnum(f, "ratio", g->measured ? g->ratio : -1, false);
        fputc('}', f);
    }
    fprintf(f, "],\n \"note\": ");
    tool_json_str(f, r->note);
    fprintf(f, "}\n");
}

/* ---- the run ----------------------------------------------------------------------------- */

static bool have(const char *tool)
{
    return sh("command -v %s >/dev/null 2>&1", tool) == 0;
}

/* Whether this machine can run it; r->note says why not. */
static bool prerequisites(struct ctx *c)
{
    struct apps_report *r = c->r;
    static const char *const tools[] = {"redis-server", "redis-benchmark", "nginx", "wrk",
                                        "iperf3",       "taskset",         "ip"};
    if (geteuid() != 0) {
        snprintf(r->note, sizeof r->note, "needs root (network namespaces of its own)");
        return false;
    }
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        if (!have(tools[i])) {
            snprintf(r->note, sizeof r->note,
                     "%s is not installed (scripts/deps.sh demo installs it)", tools[i]);
            return false;
        }
    ssize_t n = readlink("/proc/self/exe", c->self, sizeof c->self - 1);
    c->self[n > 0 ? n : 0] = '\0';
    char lib[PATH_MAX + 32], *slash = strrchr(c->self, '/');
    snprintf(lib, sizeof lib, "%.*s/libhotpath-posix.so", slash ? (int)(slash - c->self) : 1,
             c->self);
    if (n <= 0 || access(lib, R_OK) != 0) {
        snprintf(r->note, sizeof r->note, "libhotpath-posix.so is not beside %.160s (make build)",
                 c->self);
        return false;
    }
#ifdef HP_HAVE_LIBXDP
    bool xdp = have("ethtool");
#else
    bool xdp = false;
#endif
    snprintf(r->link, sizeof r->link, "%s", xdp ? "afxdp" : "afpacket");
    if (!xdp)
        snprintf(r->note, sizeof r->note, "afpacket instead of afxdp (%s)",
#ifdef HP_HAVE_LIBXDP
                 "no ethtool to turn the kernel's tx checksum offload off"
#else
                 "hotpath was built without libxdp"
#endif
        );
    return true;
}

static int setup(struct ctx *c)
{
    snprintf(c->dir, sizeof c->dir, "/tmp/hpx-bench-apps.XXXXXX");
    if (!mkdtemp(c->dir))
        return -errno;
    char path[128];
    snprintf(path, sizeof path, "%s/1k", c->dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < 1024; i++)
        fputc('a' + i % 26, f);
    if (f)
        fclose(f);
    int rc = tool_netns_up(&c->ns, "hpxb");
    if (rc < 0)
        return rc;
    for (int s = 0; s < 2; s++)
        sh("ip netns exec %s ethtool -K %s tx off >/dev/null 2>&1", c->ns.ns[s], c->ns.ifname[s]);
    return 0;
}

int apps_report_run(struct apps_report *r, const struct bench_opts *o)
{
    memset(r, 0, sizeof *r);
    /* HP_BENCH_APPS_ONLY=redis,wrk,iperf3,memif,echo: a part of the run. */
    const char *only = getenv("HP_BENCH_APPS_ONLY");
    bool redis = !only || strstr(only, "redis"), wrk = !only || strstr(only, "wrk"),
         iperf = !only || strstr(only, "iperf3"), memif = redis || (only && strstr(only, "memif"));
    int rounds = o->quick ? 2 : 3;
    struct ctx c = {.r = r, .o = o};
    c.nsteps = rounds * (APPS_NVETH * (2 * redis + wrk) + 2 * memif) + APPS_NVETH * iperf +
               2 * (o->quick ? 3 : 5);
    if (!prerequisites(&c))
        return 2;
    r->secs = o->quick ? 2 : 5;
    r->nginx_file_cache = nginx_file_cache_wanted();
    c.redis_n = o->quick ? 20000 : 100000;
    r->client_cpu = 0;
    r->server_cpu = tool_ncpus() > 1 ? 1 : 0;
    int rc = setup(&c);
    if (rc < 0) {
        snprintf(r->note, sizeof r->note, "cannot make the namespaces: %s", strerror(-rc));
        return 2;
    }
    /* The results in the table's order: each veth configuration's, then
     * the one-host ones. */
    struct apps_result *xr[APPS_NCFG][2] = {{NULL}}, *xw[APPS_NVETH] = {NULL},
                       *xi[APPS_NVETH] = {NULL};
    for (int cfg = 0; cfg < APPS_NVETH; cfg++) {
        if (redis) {
            xr[cfg][0] = result(&c, "redis SET", cfg);
            xr[cfg][1] = result(&c, "redis GET", cfg);
        }
        if (wrk)
            xw[cfg] = result(&c, "wrk 1 KiB", cfg);
        if (iperf)
            xi[cfg] = result(&c, "iperf3", cfg);
    }
    if (memif) /* redis GET on one host: the kernel's loopback, and memif */
        for (int cfg = APPS_KERNEL_LO; cfg <= APPS_BOTH_MEMIF; cfg++)
            xr[cfg][1] = result(&c, "redis GET", cfg);
    /* redis and wrk: every configuration once per round, the same order
     * each round, so that each goal's pair is measured close together. */
    for (int k = 0; k < rounds; k++) {
        for (int cfg = 0; cfg < APPS_NVETH; cfg++) {
            set_config(&c, cfg);
            if (redis)
                run_redis(&c, cfg, xr[cfg], k);
            if (wrk)
                run_wrk(&c, cfg, xw[cfg], k);
        }
        if (memif)
            for (int cfg = APPS_KERNEL_LO; cfg <= APPS_BOTH_MEMIF; cfg++)
                run_redis(&c, cfg, xr[cfg], k);
    }
    for (int cfg = 0; cfg < APPS_NCFG; cfg++) {
        for (int t = 0; t < 2; t++)
            if (xr[cfg][t])
                rounds_fold(xr[cfg][t]);
        if (cfg < APPS_NVETH && xw[cfg])
            rounds_fold(xw[cfg]);
    }
    /* iperf3 (reported, no goal): one run per configuration. */
    for (int cfg = 0; iperf && cfg < APPS_NVETH; cfg++) {
        set_config(&c, cfg);
        run_iperf(&c, cfg, xi[cfg]);
    }
    set_config(&c, APPS_SERVER_HP);
    if (!only || strstr(only, "echo"))
        run_echo(&c);
    tool_netns_down(&c.ns);
    goals(r);
    bool all = true;
    for (int i = 0; i < r->nres; i++)
        all &= r->res[i].ok;
    if (all)
        sh("rm -rf %s", c.dir);
    else
        snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), "%slogs kept in %s",
                 r->note[0] ? "; " : "", c.dir);
    return all ? 0 : 1;
}

int bench_apps(const struct bench_opts *o, FILE *table)
{
    /* The POSIX echo server, re-executed under libhotpath-posix.so. */
    const char *echo = getenv("HP_BENCH_APPS_ECHO");
    if (echo)
        return apps_echo_posix((uint16_t)atoi(echo));
    /* The native one alone, for profiling: KIND,IFACE,ADDRESS,PORT. */
    const char *nat = getenv("HP_BENCH_APPS_ECHO_NATIVE");
    char kind[16], ifc[32], ip[48];
    unsigned port;
    if (nat && sscanf(nat, "%15[^,],%31[^,],%47[^,],%u", kind, ifc, ip, &port) == 4)
        return apps_echo_native(kind, ifc, ip, (uint16_t)port);
    struct apps_report *r = calloc(1, sizeof *r);
    if (!r)
        return 1;
    int rc = apps_report_run(r, o);
    if (rc == 2) {
        if (o->json)
            printf("{\"benchmark\": \"apps\", \"skipped\": \"%s\"}\n", r->note);
        else
            fprintf(table, "\n== apps: skipped: %s ==\n", r->note);
        free(r);
        return 0;
    }
    if (!o->json)
        apps_report_print(r, table);
    FILE *jf[2] = {o->json ? stdout : NULL, o->json_out};
    for (int i = 0; i < 2; i++)
        if (jf[i])
            apps_report_json(r, jf[i]);
    free(r);
    return rc;
}
