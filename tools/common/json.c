/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON in the tool through jansson: numbers as the reports print them, the build's description, writing and reading back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hotpath/cpu.h>

#include "tool.h"

json_t *tool_json_num(double v, int decimals)
{
    if (!isfinite(v))
        return json_null();
    double scale = pow(10, decimals);
    double r = round(v * scale) / scale;
    /* A rounding that overflows keeps the value as it was. */
    return json_real(isfinite(r) ? r : v);
}

json_t *tool_json_sig(double v, int digits)
{
    if (!isfinite(v))
        return json_null();
    char buf[64];
    snprintf(buf, sizeof buf, "%.*g", digits, v);
    return json_real(strtod(buf, NULL));
}

json_t *tool_json_str_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

void tool_json_build(json_t *obj)
{
    char cpu[256];
    hp_cpu_describe(cpu, sizeof cpu);
    json_object_set_new(obj, "cpu", json_string(cpu));
    json_object_set_new(obj, "compiler", json_string(tool_compiler()));
    json_object_set_new(obj, "flags", json_string(tool_build_flags()));
}

int tool_json_write(const json_t *v, FILE *f, bool pretty)
{
    /* 15 significant digits: what a double holds exactly, without the
     * binary noise of the 17 jansson writes by default. */
    size_t flags = JSON_REAL_PRECISION(15) | (pretty ? JSON_INDENT(2) : 0);
    if (!v || json_dumpf(v, f, flags) < 0)
        return -1;
    fputc('\n', f);
    return 0;
}

json_t *tool_json_find(const char *text)
{
    const char *p = text ? strchr(text, '{') : NULL;
    if (!p)
        return NULL;
    json_error_t e;
    json_t *v = json_loads(p, JSON_DISABLE_EOF_CHECK, &e);
    if (v && !json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

bool tool_json_get_num(const json_t *obj, const char *key, double *v)
{
    const json_t *x = json_object_get(obj, key);
    if (!json_is_number(x))
        return false;
    *v = json_number_value(x);
    return true;
}
