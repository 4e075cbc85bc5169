/* SPDX-License-Identifier: BSD-3-Clause */
/* hotpath layout: runs the developer tool hotpath-layout (devtools/layout) on this binary. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

/*
 * The layout analyser reads DWARF with libdw and the docs of the source
 * tree: a developer tool, built beside the command (build/hotpath-layout)
 * but not installed with it. `hotpath layout` runs it with this binary as
 * the one to read by default.
 */
int cmd_layout(int argc, char **argv)
{
    char self[PATH_MAX], tool[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "hotpath layout: cannot find this executable: %s\n", strerror(errno));
        return 2;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    snprintf(tool, sizeof tool, "%.*s/hotpath-layout", slash ? (int)(slash - self) : 1,
             slash ? self : ".");
    if (access(tool, X_OK) != 0) {
        fprintf(
            stderr,
            "hotpath layout: %s is not there: the layout analyser is a developer tool, built by\n"
            "`make build` in the source tree (devtools/layout) and not installed with the "
            "command\n",
            tool);
        return 2;
    }
    setenv("HOTPATH_BINARY", self, 1);
    argv[0] = tool;
    execv(tool, argv);
    fprintf(stderr, "hotpath layout: cannot run %s: %s\n", tool, strerror(errno));
    (void)argc;
    return 2;
}
