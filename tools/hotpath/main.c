/* SPDX-License-Identifier: BSD-3-Clause */
/* The hotpath command: dispatches to one subcommand per file. */
#include <stdlib.h>
#include <string.h>

#include <hotpath/common.h>
#include <hotpath/cpu.h>
#include <hotpath/pool.h>

#include "cmd.h"
#include "tool.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"demo", cmd_demo, "run the experiments with progress, print tables, write report/"},
    {"gen", cmd_gen, "generate, receive or forward traffic on a link, like xdpsock"},
    {"serve", cmd_serve,
     "run a stack on a link: ARP, NDP, ping, UDP echo, TCP echo/discard/source"},
    {"connect", cmd_connect,
     "TCP connections to an echo server: send a pattern, verify every byte"},
    {"run", cmd_run, "run an unmodified program on a hotpath stack (LD_PRELOAD; docs/apps.md)"},
    {"rr", cmd_rr, "request/response over many TCP or UDP flows, like neper tcp_rr / udp_rr"},
    {"impair", cmd_impair,
     "bridge two interfaces with delay, rate, queue, ECN marks and loss, like netem"},
    {"bench", cmd_bench, "run one benchmark against its peers (hotpath bench --help)"},
    {"layout", cmd_layout,
     "hot structures from DWARF: size, holes, groups, lines per fast path; --check-docs"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: hotpath COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-8s %s\n", "version", "print the version and the CPU features in use");
    fprintf(f, "\nEvery command also takes --alien-policy local|defer|adaptive: where buffers\n"
               "go when a thread other than their owner frees them (docs/knobs.md; the same\n"
               "as HP_ALIEN_POLICY in the environment).\n"
               "'hotpath COMMAND --help' describes a command's options.\n");
}

/* --alien-policy applies to every command: take it out of argv and export
 * it as HP_ALIEN_POLICY, which every pool created afterwards defaults to. */
static int take_alien_policy(int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--alien-policy") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr,
                        "hotpath: --alien-policy needs a value: local, defer or adaptive\n");
                return 2;
            }
            v = argv[++i];
        } else if (strncmp(argv[i], "--alien-policy=", 15) == 0) {
            v = argv[i] + 15;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (hp_alien_policy_parse(v) < 0) {
            fprintf(stderr, "hotpath: --alien-policy '%s': not local, defer or adaptive\n", v);
            return 2;
        }
        setenv("HP_ALIEN_POLICY", v, 1);
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    if (take_alien_policy(&argc, argv))
        return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        char cpu[256];
        hp_cpu_describe(cpu, sizeof cpu);
        printf("hotpath %s\ncpu: %s\ncompiler: %s\nlayout: %s\n", hp_version(), cpu,
               tool_compiler(), hp_layout_name());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "hotpath: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
