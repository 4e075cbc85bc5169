#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The IP identifications `hotpath serve` gives two destinations are not one sequence (RFC 7739, RFC 6864): one destination cannot count what serve sends the other (idle scans).
#
# usage: tests/hostile/ipid.sh [afpacket] [afxdp]     (default: both)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs
#
# Root only; namespaces hph-PID-* (tests/hostile/lib.bash). B's veth end
# holds 198.18.0.1 and 198.18.0.3; tests/hostile/hostile.py sends echo
# requests from each in turn (40 in all, back to back) and reads the
# replies' IP IDs. With one counter for all traffic (what serve had before)
# the replies, in the order serve handled the requests, count up by one
# whichever destination they go to; per destination only each
# destination's own replies count up by one, and the steps between the two
# are unrelated.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/hostile/lib.bash

hostile_require "hostile IP IDs"
hostile_setup ipid
hostile_kinds "$@"

for KIND in "${KINDS[@]}"; do
  interop_kind_skipped "$KIND" && continue
  ns_up "$KIND" || { ko "$KIND: namespaces"; continue; }
  if ! serve_start ipid; then ns_down; continue; fi
  out=$(inb timeout 30 python3 "$PY" ipid --iface "$IFB" --mac "$SERVE_MAC" --srcs "$PEER4,$PEER4B" \
    --dst "$SERVE4" --count 20 2>&1); rc=$?
  if [ $rc = 0 ]; then ok "$KIND: the IP IDs of two destinations are not one sequence"
  else ko "$KIND: the IP IDs of two destinations are not one sequence" "$out"; fi
  note "$KIND: $out"
  serve_stop ipid
  ns_down
done
summary
[ "$fail" -eq 0 ]
