#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The examples as a user builds them: install a build into a temporary prefix (cmake --install), compile each example against it with pkg-config alone, run it.
#
# usage: examples/run.sh [BUILD_DIR]   (default build; make check passes build-gcc)
# Ends with "N passed, N failed, N skipped". The default mode of every
# example needs no privileges (mem links).
set -u
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CC=${CC:-cc}
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "PASS  $1"; }
ko() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/      /'; return 0; }
summary() { echo "$pass passed, $fail failed, $skip skipped"; }

if ! command -v pkg-config >/dev/null 2>&1; then
  skip=1; echo "SKIP  examples: pkg-config is not installed (apt-get install pkgconf)"; summary; exit 0
fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  ko "examples: $BUILD is not a configured build directory (make build)"; summary; exit 1
fi
prefix=$(mktemp -d /tmp/hpl-examples.XXXXXX)
trap 'rm -rf "$prefix"' EXIT

if out=$(cmake --install "$BUILD" --prefix "$prefix" 2>&1); then
  ok "examples: cmake --install into a temporary prefix"
else
  ko "examples: cmake --install into a temporary prefix" "$(echo "$out" | tail -5)"; summary; exit 1
fi
pcdir=$(dirname "$(find "$prefix" -name hotpath.pc | head -1)")
export PKG_CONFIG_PATH=$pcdir
if flags=$(pkg-config --cflags --libs hotpath) && echo "$flags" | grep -q -- "-I$prefix/"; then
  ok "examples: pkg-config finds the installed library ($flags)"
else
  ko "examples: pkg-config --cflags --libs hotpath points into the prefix" "$flags"; summary; exit 1
fi
libdir=$(pkg-config --variable=libdir hotpath)

for ex in tcp_hello udp_echo l2fwd; do
  # Only the installed headers and library: no -I into the source tree.
  # shellcheck disable=SC2086
  if out=$($CC -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -o "$prefix/$ex" "examples/$ex.c" \
             $flags -Wl,-rpath,"$libdir" -pthread 2>&1); then
    ok "$ex: builds with pkg-config --cflags --libs hotpath"
  else
    ko "$ex: builds with pkg-config --cflags --libs hotpath" "$out"; continue
  fi
  if out=$(timeout 60 "$prefix/$ex" 2>&1); then
    ok "$ex: runs: $(echo "$out" | tail -1)"
  else
    ko "$ex: runs (exit $?)" "$out"
  fi
done
summary
[ $fail = 0 ]
