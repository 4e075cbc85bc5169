#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `hotpath impair` between two kernel namespaces: delay, loss, duplication, rate and queue, ECN marks, MTU, one direction, clean exit.
#
# usage: tests/interop/impair.sh [afpacket] [afxdp]     (default: both)
# env:   HP_BIN (default build/hotpath)
#
# Root only. scripts/netns.sh up3 makes client (198.18.0.1) <-> bridge <->
# server (198.18.0.2) namespaces named hpi-im-PID-*; the bridge runs hotpath
# impair over the link kind under test. Each case checks behaviour that
# cannot depend on the machine's speed: lower bounds of round-trip times,
# counts of lost, duplicated, marked and refused frames against the rates
# asked for (binomial bounds far from the mean), goodput never above the
# bottleneck. About 40 s per link kind.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
HP=${HP_BIN:-build/hotpath}
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(afpacket afxdp)

source tests/interop/harness.bash

interop_require "impair" "it makes network namespaces"
HP=$(cd "$(dirname "$HP")" && pwd)/$(basename "$HP")
if ! command -v ethtool >/dev/null 2>&1; then
  sk "impair: ethtool is not installed: the veths' offloads cannot be turned off for frames to cross a bridge whole"
  summary; exit 0
fi

NAME=hpi-im$$
NAME=${NAME:0:10}
C=$NAME-a; S=$NAME-b; BR=$NAME-br
tmp=$(mktemp -d /tmp/hpi-impair.XXXXXX)
IMP_PID=
cleanup() {
  [ -n "$IMP_PID" ] && kill -KILL "$IMP_PID" 2>/dev/null
  scripts/netns.sh down "$NAME" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM

if ! scripts/netns.sh up3 "$NAME" >"$tmp/netns.log" 2>&1; then
  ko "impair: scripts/netns.sh up3 failed" "$(cat "$tmp/netns.log")"; summary; exit 1
fi
# Both kernels negotiate ECN (the default only accepts it).
for ns in "$C" "$S"; do ip netns exec "$ns" sysctl -qw net.ipv4.tcp_ecn=1; done

# start KIND ARGS...: run impair in the bridge (JSON stats to $tmp/imp.json).
start() {
  local kind=$1; shift
  ip netns exec "$BR" "$HP" impair --link "$kind" --iface-a "$NAME-ba" --iface-b "$NAME-bb" --json-stats "$@" \
    >"$tmp/imp.json" 2>"$tmp/imp.err" &
  IMP_PID=$!
  sleep 0.5
}
# stop: SIGINT, wait; 0 when it exited 0 and said every buffer came back.
stop() {
  kill -INT "$IMP_PID" 2>/dev/null
  wait "$IMP_PID"; local rc=$?
  IMP_PID=
  [ $rc = 0 ] && ! grep -q "still in use" "$tmp/imp.err"
}
# final DIR FIELD: a counter of the last (final) stats line.
final() {
  python3 -c "import json,sys; l=[json.loads(x) for x in open(sys.argv[1]) if x.strip()]; print(l[-1][sys.argv[2]][sys.argv[3]])" \
    "$tmp/imp.json" "$1" "$2"
}
# ping_stats ARGS...: "received min_ms" of a ping from the client.
ping_stats() {
  ip netns exec "$C" ping -n -q "$@" 198.18.0.2 2>/dev/null |
    awk '/received/ {for (i=1;i<=NF;i++) if ($(i+1) ~ /^received/) r=$i} /^rtt|^round-trip/ {split($4,a,"/"); m=a[1]} END {print (r==""?0:r), (m==""?0:m)}'
}
# tcp_bulk SECONDS: Mbit/s the server received from the client over kernel TCP.
tcp_bulk() {
  ip netns exec "$S" timeout $(($1 + 5)) python3 tests/interop/tcp_bulk.py serve 198.18.0.2 5201 >"$tmp/srv.out" &
  local sp=$!
  sleep 0.3
  ip netns exec "$C" timeout $(($1 + 5)) python3 tests/interop/tcp_bulk.py send 198.18.0.2 5201 "$1" >/dev/null
  wait $sp
  cat "$tmp/srv.out"
}

case_delay() { # kind
  start "$1" --delay 10
  read -r got min < <(ping_stats -c 10 -i 0.05)
  if stop && [ "$got" = 10 ] && awk -v m="$min" 'BEGIN {exit !(m >= 20)}'; then
    ok "$1: --delay 10: 10/10 replies, min RTT $min ms >= 20 ms; clean exit"
  else ko "$1: --delay 10: $got/10 replies, min RTT $min ms (want >= 20)" "$(tail -3 "$tmp/imp.err")"; fi
}

case_wait() { # kind: sleeping in poll(2) at real-time priority instead of spinning
  start "$1" --delay 10 --rt 10
  read -r got min < <(ping_stats -c 10 -i 0.05)
  if stop && [ "$got" = 10 ] && awk -v m="$min" 'BEGIN {exit !(m >= 20)}' && [ "$(final a2b late_max_us)" -ge 0 ]; then
    ok "$1: --delay 10 --rt 10: 10/10 replies, min RTT $min ms >= 20 ms; clean exit"
  else ko "$1: --delay 10 --rt 10: $got/10 replies, min RTT $min ms (want >= 20)" "$(tail -3 "$tmp/imp.err")"; fi
}

case_loss() { # kind
  start "$1" --loss 0.2 --seed 42
  ping_stats -c 300 -i 0.002 >/dev/null
  stop; local n lost
  n=$(( $(final a2b in) + $(final b2a in) )); lost=$(( $(final a2b lost) + $(final b2a lost) ))
  # 20% of n frames: the bounds are more than five standard deviations away.
  if awk -v n="$n" -v l="$lost" 'BEGIN {p=l/n; exit !(n >= 300 && p > 0.12 && p < 0.28)}'; then
    ok "$1: --loss 0.2: $lost of $n frames lost"
  else ko "$1: --loss 0.2: $lost of $n frames lost (want 12-28%)"; fi
}

case_dup() { # kind
  start "$1" --dup 1 --b2a
  local dups
  dups=$(ip netns exec "$C" ping -n -c 5 -i 0.05 198.18.0.2 2>/dev/null | grep -c 'DUP!')
  stop
  if [ "$dups" -ge 4 ] && [ "$(final a2b duplicated)" = 0 ] && [ "$(final b2a duplicated)" -ge 5 ]; then
    ok "$1: --dup 1 --b2a: ping saw $dups duplicated replies; requests (a2b) never duplicated"
  else ko "$1: --dup 1 --b2a: $dups DUP! replies, a2b dup $(final a2b duplicated), b2a dup $(final b2a duplicated)"; fi
}

case_one_way() { # kind
  start "$1" --loss 1 --a2b
  read -r got _ < <(ping_stats -c 5 -i 0.05 -W 1)
  stop
  if [ "$got" = 0 ] && [ "$(final a2b lost)" -ge 5 ] && [ "$(final b2a lost)" = 0 ]; then
    ok "$1: --loss 1 --a2b: every request lost, the other direction untouched"
  else ko "$1: --loss 1 --a2b: $got replies, a2b lost $(final a2b lost), b2a lost $(final b2a lost)"; fi
}

case_mtu() { # kind
  start "$1" --mtu 1000
  read -r small _ < <(ping_stats -c 3 -i 0.05 -s 900 -M do)
  read -r big _ < <(ping_stats -c 3 -i 0.05 -W 1 -s 1200 -M do)
  stop
  if [ "$small" = 3 ] && [ "$big" = 0 ] && [ "$(final a2b mtu_drops)" -ge 3 ]; then
    ok "$1: --mtu 1000: 928-byte packets pass, 1228-byte ones vanish silently ($(final a2b mtu_drops) dropped)"
  else ko "$1: --mtu 1000: small $small/3, big $big/3, mtu_drops $(final a2b mtu_drops)"; fi
}

case_rate() { # kind
  start "$1" --rate 20 --queue 30000
  local mbps; mbps=$(tcp_bulk 3)
  stop
  local qmax drops; qmax=$(final a2b queue_max); drops=$(final a2b queue_drops)
  if awk -v m="$mbps" 'BEGIN {exit !(m > 1 && m <= 20.5)}' && [ "$qmax" -le 30000 ] && [ "$drops" -gt 0 ]; then
    ok "$1: --rate 20 --queue 30000: kernel TCP got $mbps Mbit/s (<= 20), queue peaked at $qmax B, $drops tail drops"
  else ko "$1: --rate 20 --queue 30000: $mbps Mbit/s, queue max $qmax, drops $drops"; fi
}

case_ecn() { # kind
  start "$1" --rate 20 --queue 400000 --ecn-mark-above 15000 --delay 2
  local mbps; mbps=$(tcp_bulk 3)
  stop
  local ce drops; ce=$(final a2b ce_marked); drops=$(final a2b queue_drops)
  if [ "$ce" -gt 0 ] && [ "$drops" = 0 ] && awk -v m="$mbps" 'BEGIN {exit !(m > 1)}'; then
    ok "$1: --ecn-mark-above 15000: $ce segments marked CE, no drops, the kernel's ECN sender kept the queue ($mbps Mbit/s)"
  else ko "$1: --ecn-mark-above 15000: $ce marked, $drops dropped, $mbps Mbit/s"; fi
}

case_tail() { # kind
  # Kernel TCP through --drop-tail: the last segment of each burst is lost
  # once and repaired (TLP or RTO); every byte still arrives.
  start "$1" --delay 10 --drop-tail 3 --a2b
  local mbps; mbps=$(tcp_bulk 1)
  stop
  local tails; tails=$(final a2b tail_drops)
  if [ "$tails" -ge 1 ] && [ "$(final b2a tail_drops)" = 0 ] && awk -v m="$mbps" 'BEGIN {exit !(m > 0)}'; then
    ok "$1: --drop-tail 3: $tails burst tails lost once each, the transfer went through ($mbps Mbit/s)"
  else ko "$1: --drop-tail 3: $tails tails lost a2b, $(final b2a tail_drops) b2a, $mbps Mbit/s"; fi
}

for kind in "${KINDS[@]}"; do
  echo "--- $kind"
  # A link kind this build or kernel lacks: skipped with impair's reason.
  if ! ip netns exec "$BR" "$HP" impair --link "$kind" --iface-a "$NAME-ba" --iface-b "$NAME-bb" \
       --duration 0.2 >/dev/null 2>"$tmp/probe.err"; then
    sk "$kind: impair cannot run here: $(head -1 "$tmp/probe.err")"; continue
  fi
  case_delay "$kind"
  case_wait "$kind"
  case_loss "$kind"
  case_dup "$kind"
  case_one_way "$kind"
  case_mtu "$kind"
  case_rate "$kind"
  case_ecn "$kind"
  case_tail "$kind"
done
summary
[ "$fail" = 0 ]
