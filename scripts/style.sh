#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Check (or, with --fix, rewrite) C sources against .clang-format with clang-format 14.
#
# usage: scripts/style.sh [--fix] [FILE...]
#   FILE...  the files to look at (default: every C source and header git tracks)
#   --fix    rewrite them in place instead of checking
# env:   CLANG_FORMAT (default clang-format-14, else a clang-format that is version 14)
#
# Prints each file that differs with the number of lines that would change,
# then one line: "style: N of M files as .clang-format has them". Exit 0 when
# every file is, 1 when one is not, 2 when clang-format 14 is missing (a
# newer or older one formats some constructs differently: the result would
# not be stable between machines).
set -u
cd "$(dirname "$0")/.."
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi

cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  if command -v clang-format-14 >/dev/null 2>&1; then cf=clang-format-14
  elif command -v clang-format >/dev/null 2>&1 && clang-format --version | grep -q ' 14\.'; then cf=clang-format
  fi
fi
if [ -z "$cf" ] || ! command -v "$cf" >/dev/null 2>&1; then
  echo "style: clang-format 14 is not installed (apt-get install clang-format-14)" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cc')
fi

bad=0 n=0
for f in "${files[@]}"; do
  case "$f" in *.c|*.h|*.cc) ;; *) continue ;; esac
  [ -f "$f" ] || { echo "style: $f: no such file" >&2; bad=$((bad + 1)); continue; }
  n=$((n + 1))
  if [ $fix = 1 ]; then
    "$cf" -i --style=file "$f"
    continue
  fi
  changed=$("$cf" --style=file "$f" | diff "$f" - | grep -c '^>')
  if [ "$changed" -ne 0 ]; then
    echo "  $f: $changed line(s) differ (scripts/style.sh --fix $f)"
    bad=$((bad + 1))
  fi
done
if [ $fix = 1 ]; then
  echo "style: $n files formatted with $cf"
  exit 0
fi
echo "style: $((n - bad)) of $n files as .clang-format has them ($cf)"
[ $bad -eq 0 ]
