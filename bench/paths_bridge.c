/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath impair` as a child of `hotpath bench paths`: started in the bridge's namespace, pinned, awaited until both interfaces are open, stopped with its final counters. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_paths.h"

#define MAX_ARGS 48

/* The first line of f (from its start), or "" (buf, len). */
static void first_line(FILE *f, char *buf, size_t len)
{
    ssize_t n = pread(fileno(f), buf, len - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
}

/* Whether f holds a whole line yet. */
static bool has_line(FILE *f)
{
    char buf[512];
    ssize_t n = pread(fileno(f), buf, sizeof buf, 0);
    return n > 0 && memchr(buf, '\n', (size_t)n) != NULL;
}

static void bridge_close(struct paths_bridge *b)
{
    if (b->out)
        fclose(b->out);
    if (b->err)
        fclose(b->err);
    b->out = b->err = NULL;
    b->pid = -1;
}

/* Wait up to timeout_s for the child; its status, or -1 (still running). */
static int reap(int pid, double timeout_s)
{
    int st = 0;
    for (double end = tool_now_s() + timeout_s;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return r == pid ? st : 0;
        if (tool_now_s() >= end)
            return -1;
        hb_sleep(0.005);
    }
}

/* fork, enter the namespace, exec this binary with argv, outputs to b's files. */
static int spawn(struct paths_bridge *b, int nsfd, char *const *argv)
{
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Only system calls until exec: the parent has threads. It is told
         * to go with us; if we went before it was told, it goes now. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(125);
        if (setns(nsfd, CLONE_NEWNET) < 0)
            _exit(126);
        dup2(fileno(b->out), STDOUT_FILENO);
        dup2(fileno(b->err), STDERR_FILENO);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    return pid;
}

int paths_bridge_start(struct paths_bridge *b, const char *ns, const char *ifa, const char *ifb,
                       int cpu, const char *const *args, char *why, size_t len)
{
    memset(b, 0, sizeof *b);
    b->pid = -1;
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d", cpu);
    const char *argv[MAX_ARGS] = {"hotpath", "impair",    "--link", "afpacket",    "--iface-a",
                                  ifa,       "--iface-b", ifb,      "--json-stats"};
    int n = 9;
    if (cpu >= 0) {
        argv[n++] = "--cpu";
        argv[n++] = cpus;
    }
    for (int i = 0; args[i] && n < MAX_ARGS - 1; i++)
        argv[n++] = args[i];
    int nsfd = tool_ns_open(ns);
    b->out = tmpfile();
    b->err = tmpfile();
    if (nsfd < 0 || !b->out || !b->err) {
        snprintf(why, len, "cannot start hotpath impair: %s", strerror(nsfd < 0 ? -nsfd : errno));
        if (nsfd >= 0)
            close(nsfd);
        bridge_close(b);
        return -1;
    }
    b->pid = spawn(b, nsfd, (char *const *)argv);
    close(nsfd);
    for (double end = tool_now_s() + 10; b->pid > 0 && tool_now_s() < end; hb_sleep(0.01)) {
        if (has_line(b->out))
            return 0;
        int st = reap(b->pid, 0);
        if (st >= 0) {
            char line[200];
            first_line(b->err, line, sizeof line);
            snprintf(why, len, "hotpath impair exited (status %d): %s",
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1, line[0] ? line : "no message");
            bridge_close(b);
            return -1;
        }
    }
    snprintf(why, len, "hotpath impair did not start within 10 s%s", b->pid < 0 ? " (fork)" : "");
    if (b->pid > 0) {
        kill(b->pid, SIGKILL);
        reap(b->pid, 5);
    }
    bridge_close(b);
    return -1;
}

/* The counters of direction a2b in the last line of f. */
static int last_stats(FILE *f, struct paths_bridge_stats *s)
{
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    if (size <= 0)
        return -1;
    long from = size > 4096 ? size - 4096 : 0;
    char buf[4097];
    ssize_t n = pread(fileno(f), buf, (size_t)(size - from), from);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
    char *line = strrchr(buf, '\n');
    json_t *j = tool_json_find(line ? line + 1 : buf);
    json_t *d = j ? json_object_get(j, "a2b") : NULL;
    double v[9] = {0};
    static const char *const keys[9] = {"in",        "out",          "queue_drops",
                                        "ce_marked", "tail_drops",   "lost",
                                        "reordered", "late_mean_us", "late_max_us"};
    for (int i = 0; d && i < 9; i++)
        tool_json_get_num(d, keys[i], &v[i]);
    *s = (struct paths_bridge_stats){(uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2],
                                     (uint64_t)v[3], (uint64_t)v[4], (uint64_t)v[5],
                                     (uint64_t)v[6], (uint64_t)v[7], (uint64_t)v[8]};
    json_decref(j);
    return d ? 0 : -1;
}

int paths_bridge_stop(struct paths_bridge *b, struct paths_bridge_stats *a2b, char *why, size_t len)
{
    memset(a2b, 0, sizeof *a2b);
    if (b->pid <= 0)
        return -1;
    kill(b->pid, SIGINT);
    int st = reap(b->pid, 5);
    if (st < 0) {
        kill(b->pid, SIGKILL);
        reap(b->pid, 5);
    }
    int rc = 0;
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char line[200];
        first_line(b->err, line, sizeof line);
        snprintf(why, len, "hotpath impair %s: %s", st < 0 ? "did not stop" : "failed",
                 line[0] ? line : "no message");
        rc = -1;
    }
    if (last_stats(b->out, a2b) < 0 && rc == 0) {
        snprintf(why, len, "hotpath impair left no final counters");
        rc = -1;
    }
    bridge_close(b);
    return rc;
}

int paths_child_run(const char *ns, char *const *argv, double timeout_s, char **out, char *why,
                    size_t len)
{
    struct paths_bridge b = {.pid = -1, .out = tmpfile(), .err = tmpfile()};
    *out = NULL;
    int nsfd = tool_ns_open(ns);
    if (nsfd < 0 || !b.out || !b.err) {
        snprintf(why, len, "cannot start %s: %s", argv[1], strerror(nsfd < 0 ? -nsfd : errno));
        if (nsfd >= 0)
            close(nsfd);
        bridge_close(&b);
        return -1;
    }
    b.pid = spawn(&b, nsfd, argv);
    close(nsfd);
    int st = b.pid > 0 ? reap(b.pid, timeout_s) : -1;
    if (st < 0 && b.pid > 0) {
        kill(b.pid, SIGKILL);
        reap(b.pid, 5);
    }
    int rc = -1;
    if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        fseek(b.out, 0, SEEK_END);
        long size = ftell(b.out);
        *out = size >= 0 ? malloc((size_t)size + 1) : NULL;
        ssize_t n = *out ? pread(fileno(b.out), *out, (size_t)size, 0) : -1;
        if (n >= 0) {
            (*out)[n] = 0;
            rc = 0;
        }
    }
    if (rc < 0) {
        char line[200];
        first_line(b.err, line, sizeof line);
        snprintf(why, len, "hotpath %s %s: %s", argv[1],
                 st < 0 ? tool_fmt("ran over %.0f s", timeout_s) : "failed",
                 line[0] ? line : "no message");
    }
    bridge_close(&b);
    return rc;
}

int paths_bridge_start_rt(struct paths_bridge *b, const char *ns, const char *ifa, const char *ifb,
                          int cpu, const char *const *args, bool *rt, char *why, size_t len)
{
    if (*rt) {
        char prio[8];
        snprintf(prio, sizeof prio, "%d", PATHS_RT_PRIO);
        const char *all[40] = {"--rt", prio};
        int n = 2;
        for (int i = 0; args[i] && n < 39; i++)
            all[n++] = args[i];
        all[n] = NULL;
        if (paths_bridge_start(b, ns, ifa, ifb, cpu, all, why, len) == 0)
            return 0;
        *rt = false; /* say, a cgroup without real-time time */
    }
    return paths_bridge_start(b, ns, ifa, ifb, cpu, args, why, len);
}
