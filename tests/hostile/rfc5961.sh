#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# RFC 5961 against `hotpath serve` over afpacket and afxdp, injected into live kernel connections: in-window RST and SYN get a challenge ACK, an exact RST resets, an out-of-window RST is dropped, and a burst on one connection leaves another's challenge ACK intact (CVE-2016-5696).
#
# usage: tests/hostile/rfc5961.sh [afpacket] [afxdp]     (default: both)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs,
#        HP_5961_TRIALS (default 20), HP_5961_BURST (default 1500)
#
# Root only; namespaces hph-PID-* (tests/hostile/lib.bash). The kernel in B
# opens TCP connections to serve's echo port; tests/hostile/hostile.py
# follows them on the wire (a raw socket on B's veth end) to know serve's
# RCV.NXT, window and timestamps, and injects as an off-path attacker who
# guessed them would:
#  - a RST inside the window but not at RCV.NXT: one challenge ACK (3.2);
#  - a SYN inside the window: one challenge ACK (4.2);
#  - RSTs outside the window: nothing (3.2); the connection still echoes;
#  - TRIALS times, BURST in-window RSTs on connection A, then one on a
#    fresh connection B_i: B_i's challenge ACK comes every time (the
#    budget is per connection, and the stack-wide one is randomised);
#  - a RST at RCV.NXT: the connection is gone (the kernel's next segment
#    is answered with a RST).
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/hostile/lib.bash

hostile_require "hostile RFC 5961"
hostile_setup rfc5961
hostile_kinds "$@"

for KIND in "${KINDS[@]}"; do
  interop_kind_skipped "$KIND" && continue
  ns_up "$KIND" || { ko "$KIND: namespaces"; continue; }
  if ! serve_start rfc5961; then ns_down; continue; fi
  serve_tick; serve_counters >"$tmp/before"
  inb timeout 120 python3 "$PY" rfc5961 --iface "$IFB" --mac "$SERVE_MAC" --src "$PEER4" --dst "$SERVE4" \
    --port 7 --trials "${HP_5961_TRIALS:-20}" --burst "${HP_5961_BURST:-1500}" >"$tmp/5961.out" 2>&1
  rc=$?
  n=0
  while IFS= read -r line; do
    case "$line" in
      "OK "*) ok "$KIND: ${line#OK }"; n=$((n + 1)) ;;
      "FAIL "*) ko "$KIND: ${line#FAIL }"; n=$((n + 1)) ;;
    esac
  done <"$tmp/5961.out"
  [ $n -ge 9 ] || ko "$KIND: hostile.py rfc5961 ran every check" "exit $rc; $(tail -5 "$tmp/5961.out")"
  serve_tick; serve_counters >"$tmp/after"
  note "$KIND: moved: $(counters_moved "$tmp/before" "$tmp/after" | grep -E 'TCP_(CHALLENGE|IN_RSTS|ESTAB_RESETS|IN_OUT_OF_WINDOW|OUT_RSTS)' | tr '\n' ' ')"
  serve_alive "after the injections"
  serve_stop rfc5961
  ns_down
done
summary
[ "$fail" -eq 0 ]
