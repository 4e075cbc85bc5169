#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `make check`: build every configuration and run every test suite, ending with one pass/fail summary line.
#
# usage: scripts/check.sh [all|fuzz]
# env:   FUZZ_SECONDS (default 10; CI uses 15), JOBS (ninja -j)
#
# Suites: gcc Release build + unit tests + the examples (installed, built with
# pkg-config, run); Debug ASan+UBSan build + unit tests;
# clang -Werror build + unit tests; command-line tests; function lengths and
# the C style (scripts/funclen.py, scripts/style.sh); libFuzzer smoke runs;
# aarch64 cross-build with its unit tests under qemu; root-only suites when
# root (tests/interop/*.sh, tests/hostile/*.sh, tests/apps/*.sh). A suite
# whose tools are missing is reported as skipped, with why.
set -u
cd "$(dirname "$0")/.."
what=${1:-all}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
NINJA="ninja ${JOBS:+-j $JOBS}"
LOGS=build-logs
mkdir -p "$LOGS"

pass=0 fail=0 skip=0
lines=()

note() { lines+=("$1"); echo "$1"; }

# Run a command as one step; its output goes to the terminal and a log.
# took: how long the last step ran, for the summary ("(12 s)").
took=""
step() { # name cmd...
  local name=$1 t0=$SECONDS; shift
  echo "=== $name"
  "$@" 2>&1 | tee "$LOGS/$name.log"
  local rc=${PIPESTATUS[0]}
  took="($((SECONDS - t0)) s)"
  return "$rc"
}

# Run a test binary (or script) that ends with "N passed, N failed, N skipped"
# and add its counts.
tests() { # name cmd...
  local name=$1; shift
  step "$name" "$@"
  local rc=$? summary
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$LOGS/$name.log" | tail -1)
  if [ -z "$summary" ]; then
    fail=$((fail + 1)); note "FAIL  $name: no summary line (exit $rc)"; return
  fi
  local p f s
  p=$(echo "$summary" | sed -E 's/^([0-9]+) passed.*/\1/')
  f=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  s=$(echo "$summary" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p'); s=${s:-0}
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then fail=$((fail + 1)); f=1; fi
  note "$([ "$f" -eq 0 ] && echo PASS || echo FAIL)  $name: $summary $took"
}

build() { # name builddir cmake-args...
  local name=$1 dir=$2; shift 2
  if step "$name" bash -c "cmake -S . -B $dir -G Ninja $* >/dev/null && $NINJA -C $dir"; then
    pass=$((pass + 1)); note "PASS  $name $took"; return 0
  fi
  fail=$((fail + 1)); note "FAIL  $name (log: $LOGS/$name.log)"; return 1
}

skipped() { skip=$((skip + 1)); note "SKIP  $1"; }

# A check whose last line sums it up: PASS or FAIL by its exit status (2:
# skipped, its tool is missing).
lint() { # name cmd...
  local name=$1; shift
  step "$name" "$@"
  local rc=$? last
  last=$(tail -1 "$LOGS/$name.log")
  case $rc in
    0) pass=$((pass + 1)); note "PASS  $name: $last $took" ;;
    2) skipped "$name: $last" ;;
    *) fail=$((fail + 1)); note "FAIL  $name: $last (log: $LOGS/$name.log)" ;;
  esac
}

unit_all() { # prefix builddir [runner...]
  local prefix=$1 dir=$2; shift 2
  local found=0
  for t in "$dir"/tests/unit_* "$dir"/tests/thread_tests; do
    [ -x "$t" ] || continue
    found=1
    tests "$prefix-$(basename "$t")" "$@" "$t"
  done
  [ $found = 1 ] || { fail=$((fail + 1)); note "FAIL  $prefix: no unit test binaries in $dir/tests"; }
}

have_clang=0; command -v clang >/dev/null 2>&1 && have_clang=1
have_fuzzer=0
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 && have_fuzzer=1

# One fuzz target for FUZZ_SECONDS; its output in $LOGS/fuzz-NAME.log, its exit status in
# $LOGS/fuzz-NAME.rc. New inputs go to a scratch directory; the committed corpus is read only.
fuzz_one() { # target
  local f=$1 name work rc
  name=$(basename "$f"); work=$(mktemp -d)
  "$f" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 -artifact_prefix="$LOGS/$name-" \
    "$work" "fuzz/corpus/${name%_fuzz}" >"$LOGS/fuzz-$name.log" 2>&1
  rc=$?
  rm -rf "$work"
  echo "$rc" >"$LOGS/fuzz-$name.rc"
}

fuzz_suite() {
  if [ $have_clang = 0 ] || [ $have_fuzzer = 0 ]; then
    skipped "fuzz: clang or its libFuzzer runtime is not installed (run as root to install)"; return
  fi
  build fuzz-build build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release \
    -DHP_BUILD_FUZZ=ON -DHP_BUILD_TESTS=OFF -DHP_SANITIZE=address,undefined || return
  # As many targets at once as there are CPUs (each is one process, one thread): twelve
  # targets of 15 s took three minutes one after the other on two CPUs, half that in pairs.
  local cpus names=() f name rc
  cpus=$(nproc 2>/dev/null || echo 1)
  for f in build-fuzz/fuzz/*_fuzz; do
    [ -x "$f" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$cpus" ]; do wait -n; done
    name=$(basename "$f"); names+=("$name")
    rm -f "$LOGS/fuzz-$name.rc"
    echo "=== fuzz-$name (${FUZZ_SECONDS} s)"
    fuzz_one "$f" &
  done
  wait
  for name in "${names[@]}"; do
    rc=$(cat "$LOGS/fuzz-$name.rc" 2>/dev/null || echo "no exit status")
    if [ "$rc" = 0 ]; then
      pass=$((pass + 1)); note "PASS  fuzz $name (${FUZZ_SECONDS}s, $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$LOGS/fuzz-$name.log" | grep -Eo '[0-9]+$') runs)"
    else
      tail -30 "$LOGS/fuzz-$name.log"
      fail=$((fail + 1)); note "FAIL  fuzz $name (exit $rc): crash input saved under $LOGS/$name-*, log $LOGS/fuzz-$name.log"
    fi
  done
}

if [ "$what" = fuzz ]; then
  fuzz_suite
else
  # 1. gcc, Release, -Werror: the binaries users get.
  build build-gcc build -DCMAKE_BUILD_TYPE=Release && unit_all unit-release build
  # 1b. The examples, built against that build installed in a temporary
  # prefix with pkg-config alone, and run.
  tests examples examples/run.sh build
  # 2. AddressSanitizer + UndefinedBehaviorSanitizer, debug checks on.
  build build-asan build-asan -DCMAKE_BUILD_TYPE=Debug -DHP_SANITIZE=address,undefined \
    && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
       HP_STRESS_OPS=1e6 unit_all unit-asan build-asan  # (the stress tests' full size under TSan)
  # 2b. ThreadSanitizer: the multi-threaded tests (pool stress).
  if ls tests/thread/*.c >/dev/null 2>&1; then
    build build-tsan build-tsan -DCMAKE_C_COMPILER=${TSAN_CC:-gcc} -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DHP_SANITIZE=thread \
      && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
         tests tsan-thread_tests build-tsan/tests/thread_tests
  fi
  # 3. clang, -Werror.
  if [ $have_clang = 1 ]; then
    build build-clang build-clang -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release \
      && HP_STRESS_OPS=1e6 unit_all unit-clang build-clang  # (the stress tests' full size in Release and TSan)
  else
    skipped "clang build: clang is not installed (run as root to install)"
  fi
  # 4. The command line; the public headers as C++.
  tests cli tests/cli/test_cli.sh build/hotpath
  for t in tests/cli/test_*.sh; do
    [ "$t" = tests/cli/test_cli.sh ] || tests "cli-$(basename "$t" .sh)" "$t" build/hotpath
  done
  for cxx in g++ clang++; do
    if ! command -v $cxx >/dev/null 2>&1; then skipped "headers as C++: $cxx is not installed"; continue; fi
    if step "headers-$cxx" $cxx -std=c++17 -Wall -Wextra -Werror -Iinclude -c tests/headers/all.cc -o /dev/null; then
      pass=$((pass + 1)); note "PASS  headers-$cxx: every public header compiles as C++17"
    else
      fail=$((fail + 1)); note "FAIL  headers-$cxx (log: $LOGS/headers-$cxx.log)"
    fi
  done
  # 4b. Compile tests: names that must not be confused (tests/compile).
  tests compile tests/compile/run.sh
  # 4c. The sources' shape: no function of the tool, the benchmarks or the
  # developer tools over 80 lines; every C file as .clang-format has it.
  lint funclen python3 scripts/funclen.py tools bench devtools
  lint style scripts/style.sh
  # 5. Fuzz smoke runs.
  fuzz_suite
  # 6. aarch64: portable and NEON code paths, run under qemu.
  if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && [ ! -e /usr/aarch64-linux-gnu/lib/crti.o ]; then
    skipped "aarch64 cross-build: libc6-dev-arm64-cross is not installed (run as root to install)"
  elif command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
    if build build-aarch64 build-aarch64 -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
         -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_BUILD_TYPE=Release \
         -DPKG_CONFIG_EXECUTABLE=/bin/false -DHP_BUILD_TOOLS=OFF; then
      if command -v qemu-aarch64 >/dev/null 2>&1; then
        # Emulation is ~10x slower: a tenth of the stress operations.
        HP_STRESS_OPS=1e7 unit_all unit-aarch64 build-aarch64 qemu-aarch64 -L /usr/aarch64-linux-gnu
      else
        skipped "aarch64 unit tests: qemu-user is not installed"
      fi
    fi
  else
    skipped "aarch64 cross-build: gcc-aarch64-linux-gnu is not installed (run as root to install)"
  fi
  # 7. Root-only suites (network namespaces, real interfaces).
  if [ "$(id -u)" != 0 ]; then
    skipped "root-only suites: not root"
  elif ls tests/interop/*.sh >/dev/null 2>&1; then
    # tcp.sh's 256 MiB transfers over one link kind here (afxdp, the one
    # with a ring of its own); HP_TCP_BIG_KINDS="afxdp afpacket tap" for all.
    for t in tests/interop/*.sh; do
      HP_TCP_BIG_KINDS=${HP_TCP_BIG_KINDS-afxdp} tests "interop-$(basename "$t" .sh)" "$t"
    done
    # Hostile traffic (nmap, hping3, scapy, floods, garbage): short floods
    # here (HP_FLOOD_SECONDS, default 3); `make soak` runs the long mixture.
    for t in tests/hostile/*.sh; do tests "hostile-$(basename "$t" .sh)" "$t"; done
    # Unmodified programs on hotpath (the reduced matrix; `make apps-full`
    # runs the issue's full sizes).
    for t in tests/apps/*.sh; do tests "apps-$(basename "$t" .sh)" "$t"; done
  else
    note "(no root-only suites in this tree yet)"
  fi
fi

echo
echo "=== summary"
printf '%s\n' "${lines[@]}"
echo
echo "$pass passed, $fail failed, $skip skipped ($((SECONDS / 60)) min $((SECONDS % 60)) s)"
[ "$fail" -eq 0 ]
