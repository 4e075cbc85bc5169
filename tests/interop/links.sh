#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Root-only link tests (tap, afpacket, afxdp, pcap read back by tshark) in
# network namespaces the tests create; any namespace left behind by a crashed
# test is removed on exit.
set -u
cd "$(dirname "$0")/../.."
bin=${HP_INTEROP_BIN:-}
if [ -z "$bin" ]; then
  for b in build-asan/tests/interop_tests build/tests/interop_tests; do
    [ -x "$b" ] && { bin=$b; break; }
  done
fi
if [ -z "$bin" ]; then
  echo "interop_tests is not built (run cmake with tests on)"; echo "0 passed, 1 failed, 0 skipped"; exit 1
fi
cleanup() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^hpt-[0-9]*-[ab]$"); do
    pid=${ns#hpt-}; pid=${pid%-*}
    kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null
  done
}
trap cleanup EXIT INT TERM
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} "$bin" "$@"
