/* SPDX-License-Identifier: BSD-3-Clause */
/* The hotpath command's subcommands, one file each (main.c dispatches). */
#ifndef HOTPATH_CMD_H
#define HOTPATH_CMD_H

int cmd_bench(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_connect(int argc, char **argv);
int cmd_rr(int argc, char **argv);
int cmd_impair(int argc, char **argv);
int cmd_run(int argc, char **argv);
/* hotpath layout runs the developer tool hotpath-layout beside this binary (devtools/). */
int cmd_layout(int argc, char **argv);

#endif
