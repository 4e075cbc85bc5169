#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Lists C functions longer than a limit, counted from the line of the opening brace to that of
the closing brace, both included; exit 1 when any is.

usage: scripts/funclen.py [--max N] [--top N] PATH...   (files, or folders searched for *.c / *.h)
"""
import argparse
import os
import re
import sys

IDENT_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOT_NAMES = {"__attribute__", "__attribute", "if", "while", "for", "switch", "return", "sizeof"}


def strip(text):
    """The text with comments, string and character literals and preprocessor lines blanked
    (newlines kept, so that offsets still give line numbers)."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " ")
            i = j
        else:
            if c == "\n":
                at_line_start = True
            out.append(c)
            i += 1
    return "".join(out)


def function_name(signature):
    """The function's name: the last identifier called at parenthesis depth 0 of its
    signature that is not an attribute."""
    depth, name = 0, None
    for i, c in enumerate(signature):
        if c == "(":
            if depth == 0:
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", signature[:i])
                if m and m.group(1) not in NOT_NAMES:
                    name = m.group(1)
            depth += 1
        elif c == ")":
            depth -= 1
    return name


def functions(path):
    """(name, first line, last line) of each function body in a C file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip(f.read())
    found = []
    depth, start, sig_from = 0, None, 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            if depth == 0:
                before = code[sig_from:i].rstrip()
                if before.endswith(")"):
                    start = (function_name(before), line)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start:
                    found.append((start[0] or "?", start[1], line))
                    start = None
                sig_from = i + 1
        elif c == ";" and depth == 0:
            sig_from = i + 1
    return found


def sources(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith((".c", ".h")):
                        yield os.path.join(root, f)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=80, help="longest allowed, in lines (80)")
    ap.add_argument("--top", type=int, default=0, help="also list the N longest")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()
    rows = []
    nfiles = 0
    for path in sources(a.paths):
        nfiles += 1
        for name, first, last in functions(path):
            rows.append((last - first + 1, path, first, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    over = [r for r in rows if r[0] > a.max]
    for n, path, first, name in over:
        print(f"{path}:{first}: {name}: {n} lines (limit {a.max})")
    if a.top:
        for n, path, first, name in rows[: a.top]:
            print(f"  {n:4d} {name} ({path}:{first})")
    print(f"{len(over)} function(s) over {a.max} lines in {len(rows)} functions, {nfiles} files")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
