/* SPDX-License-Identifier: BSD-3-Clause */
/* `hotpath demo`'s peers experiment: the table of `hotpath bench peers`, its goals, and the instructions per transaction of each stack under callgrind. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_peers.h"
#include "demo_peers.h"
#include "tool.h"

static const char *profile_script(void)
{
    static char path[4096];
    const char *dirs[] = {HP_SOURCE_DIR "/scripts", HP_DATA_DIR};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/peers_profile.py", dirs[i]);
        if (access(path, R_OK) == 0)
            return path;
    }
    return NULL;
}

/* One stack's line of the profile: instructions per transaction and per
 * frame, by category, and its three costliest source files. */
static void profile_line(json_t *o, FILE *out, FILE *md)
{
    char cats[256] = "", files[320] = "";
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(o, "by_category"), k, v)
        snprintf(cats + strlen(cats), sizeof cats - strlen(cats), "%s%s %.0f", cats[0] ? ", " : "",
                 k, json_number_value(v));
    json_t *top = json_object_get(o, "top_files");
    for (size_t i = 0; i < 3 && i < json_array_size(top); i++)
        snprintf(files + strlen(files), sizeof files - strlen(files), "%s%s %.0f", i ? ", " : "",
                 json_string_value(json_array_get(json_array_get(top, i), 0)),
                 json_number_value(json_array_get(json_array_get(top, i), 1)));
    const char *st = json_string_value(json_object_get(o, "stack"));
    double ir = json_number_value(json_object_get(o, "ir_per_unit"));
    double ipf = json_number_value(json_object_get(o, "ir_per_frame"));
    fprintf(out, "  %-8s %7.0f instructions per transaction, %5.0f per frame (%s)\n", st, ir, ipf,
            cats);
    fprintf(md, "| %s | %.0f | %.0f | %s | %s |\n", st, ir, ipf, cats, files);
}

/* scripts/peers_profile.py on this binary, tcp_rr_1; its lines into the report. */
static void profile(const char *dir, FILE *md)
{
    const char *script = profile_script();
    char self[4096], why[256], *out = NULL;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (!script || n <= 0 || access("/usr/bin/valgrind", X_OK) != 0) {
        printf("\n  instructions per transaction: skipped (%s)\n",
               !script ? "scripts/peers_profile.py not found" : "no valgrind");
        return;
    }
    self[n] = 0;
    char *argv[] = {"/usr/bin/env", "python3", (char *)script, self, "--json", "--top", "8", NULL};
    printf("\n  instructions per tcp_rr_1 transaction under callgrind (host-independent):\n");
    fflush(stdout);
    if (peers_child_output(argv, -1, &out, why, sizeof why) < 0) {
        printf("  skipped: %s\n", why);
        return;
    }
    fprintf(md,
            "Where the instructions go (`scripts/peers_profile.py`: callgrind, the measured window "
            "of tcp_rr_1 only, own instructions by source file, inlined code counted where it "
            "came from):\n\n| stack | instructions per transaction | per frame | by category "
            "| costliest files |\n|---|---:|---:|---|---|\n");
    char path[4096];
    snprintf(path, sizeof path, "%s/peers_profile.jsonl", dir);
    FILE *raw = fopen(path, "w");
    for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        json_t *o = json_loads(line, 0, NULL);
        if (o)
            profile_line(o, stdout, md);
        if (raw)
            fprintf(raw, "%s\n", line);
        json_decref(o);
    }
    if (raw)
        fclose(raw);
    fputc('\n', md);
    free(out);
}

int demo_peers(const char *dir, FILE *md, bool quick, int cpu, int *missed)
{
    struct progress pr;
    progress_init(&pr, "peers");
    struct bench_opts o = {.quick = quick,
                           .reps = quick ? 1 : 3,
                           .cpu = cpu,
                           .progress = progress_update,
                           .progress_ctx = &pr};
    struct peers_report *r = peers_report_run(&o);
    progress_done(&pr);
    if (!r)
        return -ENOMEM;
    printf("\n== 5. hotpath vs lwIP and smoltcp: the same workloads on the same harness ==\n");
    peers_print_header(r, stdout);
    putchar('\n');
    peers_print_table(r, stdout, false);
    fprintf(md, "## 5. Side by side with lwIP and smoltcp\n\n"
                "`hotpath bench peers`: each stack as two instances in one process joined by "
                "in-memory frame queues, one thread polling both; the same workloads through the "
                "same driver (bench/peers/harness.c for hotpath and lwIP, its Rust port for "
                "smoltcp); buffers and pools sized like hotpath's (docs/experiments.md).\n\n```\n");
    peers_print_header(r, md);
    fprintf(md, "```\n\n");
    peers_print_table(r, md, true);
    fprintf(md, "\n![peers: speed relative to hotpath, memory per idle connection](peers.png)\n\n");
    if (!quick)
        profile(dir, md);
    printf("\ngoals:\n");
    fprintf(md, "Goals:\n\n");
    peers_print_goals(r, stdout, false);
    *missed += peers_print_goals(r, md, true);
    fputc('\n', md);
    char path[4096];
    snprintf(path, sizeof path, "%s/peers.json", dir);
    FILE *j = fopen(path, "w");
    if (j) {
        peers_print_json(r, j);
        fclose(j);
    }
    int rc = peers_report_ok(r) ? 0 : -EIO;
    peers_report_free(r);
    return rc;
}
