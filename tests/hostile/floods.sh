#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SYN floods (hping3, plain and spoofed from an address nobody owns) against `hotpath serve` while 50 real clients connect and echo: all succeed, memory stays flat, and a new connection right after the flood negotiates every option again.
#
# usage: tests/hostile/floods.sh [afpacket] [afxdp]     (default: both)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs,
#        HP_FLOOD_SECONDS (default 3; the soak and the issue's measurement
#        use 10): how long each flood lasts
#
# Root only; namespaces hph-PID-* (tests/hostile/lib.bash). For each link
# kind and each flood (hping3 -S --flood at TCP port 7, from 198.18.0.3, an
# address of the attacker's host, whose kernel answers every SYN-ACK with a
# RST; then spoofed from 198.18.0.77, which nobody owns: every SYN-ACK goes
# unanswered, the SYN queue fills with half-open entries). The real clients
# connect from 198.18.0.1: a flood from their own address would cycle
# through their 4-tuples too, and an ACK of theirs finding the flood's
# half-open entry for the same tuple is rightly answered with a RST.
#  - 50 kernel clients connect during the flood and echo 64 KiB each, every
#    byte checked: all 50 succeed;
#  - serve's RSS grows by at most 5 MB over its level before the floods;
#  - within 5 s of the flood's end a new connection negotiates window
#    scaling, timestamps and SACK (from a cookie, whose TSval carries them,
#    or from a queue entry a stale one made room for), as one did before
#    the flood (checked first).
# Then serve still answers, and exits with every buffer back.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/hostile/lib.bash

hostile_require "hostile floods" hping3
hostile_setup floods
hostile_kinds "$@"
FLOOD_S=${HP_FLOOD_SECONDS:-3}
RSS_MAX_KB=$((5 * 1024))

# synopts: the options a new connection negotiates now (JSON).
synopts() { inb timeout 10 python3 "$PY" synopts --to "$SERVE4" --port 7 2>&1; }
jfield() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null; }
# all_opts JSON: window scaling, timestamps and SACK all negotiated.
all_opts() { [ "$(jfield "$1" ws)" = True ] && [ "$(jfield "$1" ts)" = True ] && [ "$(jfield "$1" sack)" = True ]; }

flood() { # label hping3-args...
  local label=$1; shift
  serve_tick; serve_counters >"$tmp/before"
  local t0 t_end
  inb timeout -s INT "$FLOOD_S" hping3 -S -p 7 --flood "$@" "$SERVE4" >"$tmp/hping.out" 2>&1 &
  local hp=$!
  sleep 0.3
  inb timeout $((FLOOD_S + 60)) python3 "$PY" clients --to "$SERVE4" --port 7 --conns 50 --bytes 65536 \
    --spread "$(python3 -c "print(max(0.1, $FLOOD_S - 0.8))")" --deadline $((FLOOD_S + 50)) >"$tmp/clients.out" 2>&1 &
  local cl=$!
  wait "$hp"
  t_end=$(date +%s.%N)
  local o; o=$(synopts)
  local dt; dt=$(python3 -c "import time; print(round(time.time() - $t_end, 2))")
  local sent; sent=$(grep -Eo '[0-9]+ packets transmitted' "$tmp/hping.out" | grep -Eo '^[0-9]+')
  if all_opts "$o" && python3 -c "import sys; sys.exit(0 if $dt <= 5 else 1)"; then
    ok "$KIND: $label flood (${sent:-?} SYNs in $FLOOD_S s): a connection ${dt} s after it negotiates window scaling, timestamps and SACK"
  else
    ko "$KIND: $label flood: a connection within 5 s after it negotiates window scaling, timestamps and SACK" "after ${dt} s: $o"
  fi
  wait "$cl"
  local c; c=$(tail -1 "$tmp/clients.out")
  if [ "$(jfield "$c" ok)" = 50 ]; then ok "$KIND: $label flood: 50 of 50 clients connected and echoed 64 KiB ($(jfield "$c" seconds) s)"
  else ko "$KIND: $label flood: 50 of 50 clients connected and echoed 64 KiB" "$c"; fi
  local rss; rss=$(serve_rss)
  if [ $((rss - RSS0)) -le $RSS_MAX_KB ]; then ok "$KIND: $label flood: RSS grew by $(( (rss - RSS0) / 1024 )) MB (at most 5)"
  else ko "$KIND: $label flood: RSS grew by at most 5 MB" "$RSS0 KiB -> $rss KiB"; fi
  serve_tick; serve_counters >"$tmp/after"
  note "$KIND: $label flood moved: $(counters_moved "$tmp/before" "$tmp/after" | grep -E 'TCP_(SYN|LISTEN|PASSIVE|ATTEMPT|CONN_LIMIT|IN_SEGS|OUT_RSTS)|NEIGH|NO_BUFFERS' | tr '\n' ' ')"
}

for KIND in "${KINDS[@]}"; do
  interop_kind_skipped "$KIND" && continue
  ns_up "$KIND" || { ko "$KIND: namespaces"; continue; }
  if ! serve_start floods; then ns_down; continue; fi
  o=$(synopts)
  if all_opts "$o"; then ok "$KIND: before the floods a connection negotiates window scaling, timestamps and SACK"
  else ko "$KIND: before the floods a connection negotiates window scaling, timestamps and SACK" "$o"; fi
  # Warm up (blocks, buffers, tables) so that RSS0 is serve at work.
  inb timeout 60 python3 "$PY" clients --to "$SERVE4" --port 7 --conns 50 --bytes 65536 >/dev/null 2>&1
  RSS0=$(serve_rss)
  flood "plain (from $PEER4B)" -q -a "$PEER4B"
  flood "spoofed (from $NOBODY4)" -q -a "$NOBODY4"
  serve_alive "after the floods"
  serve_stop floods
  ns_down
done
summary
[ "$fail" -eq 0 ]
