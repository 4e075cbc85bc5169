#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Compile tests: each *_ok.c must compile at -Wall -Wextra -Werror, every other
# .c here must fail to (the mistakes the API's names are meant to catch).
# usage: tests/compile/run.sh [CC...]   (default: gcc, and clang when present)
set -u
cd "$(dirname "$0")/../.."
ccs=("$@")
[ ${#ccs[@]} -gt 0 ] || { ccs=(gcc); command -v clang >/dev/null 2>&1 && ccs+=(clang); }
pass=0 fail=0
for cc in "${ccs[@]}"; do
  for f in tests/compile/*.c; do
    name=$(basename "$f" .c)
    if $cc -std=c11 -Wall -Wextra -Werror -Iinclude -c "$f" -o /dev/null 2>/tmp/hp-compile-$$.log; then ok=1; else ok=0; fi
    case $name in
      *_ok) want=1 ;;
      *) want=0 ;;
    esac
    if [ $ok = $want ]; then
      pass=$((pass + 1)); echo "ok   $cc $name ($([ $want = 1 ] && echo compiles || echo refused))"
    else
      fail=$((fail + 1)); echo "FAIL $cc $name: $([ $want = 1 ] && echo "does not compile" || echo "compiles but must not")"
      cat /tmp/hp-compile-$$.log
    fi
  done
done
rm -f /tmp/hp-compile-$$.log
echo "$pass passed, $fail failed, 0 skipped"
[ $fail = 0 ]
