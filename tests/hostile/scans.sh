#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nmap against `hotpath serve` over afpacket and afxdp: SYN, connect, FIN, NULL, Xmas, ACK, UDP, IPv6, bad checksums and OS detection give the expected open, closed and filtered ports, and serve neither crashes nor leaks.
#
# usage: tests/hostile/scans.sh [afpacket] [afxdp]     (default: both)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs
#
# Root only; namespaces hph-PID-* (tests/hostile/lib.bash). serve listens on
# TCP 7, 9, 19 and UDP 7; TCP 22 and 80 and UDP 53 and 161 are closed. What
# RFC 9293 says each probe gets, and so what nmap must conclude:
#   -sS, -sT, -6   open 7, 9, 19 (SYN-ACK), closed 22, 80 (RST)
#   -sF, -sN, -sX  open|filtered 7, 9, 19 (a listener drops a segment without
#                  SYN or ACK, 3.10.7.2), closed 22, 80 (RST, 3.10.7.1)
#   -sA            unfiltered everywhere (an ACK gets a RST from a listener
#                  and from a closed port alike)
#   -sU            open 7 (echoed), closed 53, 161 (ICMP port unreachable)
#   --badsum       filtered everywhere: nothing with a bad checksum is answered
#   -O             runs to the end (its probes include an echo request with
#                  code 9, answered with code 0, RFC 792)
# After all of them serve answers ping, ping6 and TCP echo, and exits with
# every buffer back.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/hostile/lib.bash

hostile_require "hostile scans" nmap
hostile_setup scans
hostile_kinds "$@"

TCP_PORTS=7,9,19,22,80
# nmap quickly, and without touching DNS or the host's own interfaces.
nm() { inb nmap -n -Pn -T4 --max-retries 1 --host-timeout 60s -oG - "$@" 2>"$tmp/nmap.err"; }

# The state nmap gives each port, "7/open 9/open ...", from its grepable output.
states() {
  sed -n 's/.*Ports: //p' | tr ',' '\n' | awk -F/ 'NF > 2 {gsub(/ /, "", $1); printf "%s/%s ", $1, $2}' | sed 's/ $//'
}

expect_scan() { # label "expected states" nmap-args...
  local label=$1 want=$2; shift 2
  local got
  got=$(nm "$@" | states)
  if [ "$got" = "$want" ]; then ok "$KIND: nmap $label: $got"
  else ko "$KIND: nmap $label" "expected: $want"$'\n'"got:      ${got:-nothing} $(head -2 "$tmp/nmap.err")"; fi
}

OPEN="7/open 9/open 19/open 22/closed 80/closed"
OPENF="7/open|filtered 9/open|filtered 19/open|filtered 22/closed 80/closed"
UNF="7/unfiltered 9/unfiltered 19/unfiltered 22/unfiltered 80/unfiltered"
FILT="7/filtered 9/filtered 19/filtered 22/filtered 80/filtered"

for KIND in "${KINDS[@]}"; do
  interop_kind_skipped "$KIND" && continue
  ns_up "$KIND" || { ko "$KIND: namespaces"; continue; }
  if ! serve_start scans; then ns_down; continue; fi
  expect_scan "-sS (SYN)" "$OPEN" -sS -p "$TCP_PORTS" "$SERVE4"
  expect_scan "-sT (connect)" "$OPEN" -sT -p "$TCP_PORTS" "$SERVE4"
  expect_scan "-sF (FIN)" "$OPENF" -sF -p "$TCP_PORTS" "$SERVE4"
  expect_scan "-sN (NULL)" "$OPENF" -sN -p "$TCP_PORTS" "$SERVE4"
  expect_scan "-sX (Xmas)" "$OPENF" -sX -p "$TCP_PORTS" "$SERVE4"
  expect_scan "-sA (ACK)" "$UNF" -sA -p "$TCP_PORTS" "$SERVE4"
  expect_scan "-sU (UDP)" "7/open 53/closed 161/closed" -sU -p 7,53,161 "$SERVE4"
  expect_scan "-6 -sS" "$OPEN" -6 -sS -p "$TCP_PORTS" "$SERVE6"
  expect_scan "--badsum -sS" "$FILT" --badsum -sS -p "$TCP_PORTS" "$SERVE4"
  out=$(inb nmap -n -Pn -O --max-retries 1 -p "$TCP_PORTS" "$SERVE4" 2>&1); rc=$?
  if [ $rc = 0 ] && grep -q "7/tcp *open" <<<"$out"; then
    ok "$KIND: nmap -O (OS detection) runs to the end: $(grep -m1 -E '^(Running|Aggressive OS|No exact OS|OS details)' <<<"$out" | cut -c1-80)"
  else
    ko "$KIND: nmap -O (OS detection) runs to the end" "exit $rc: $(tail -3 <<<"$out")"
  fi
  serve_alive "after the scans"
  serve_stop scans
  note "$KIND: counters that moved: $(serve_counters | tr '\n' ' ' | cut -c1-400)"
  ns_down
done
summary
[ "$fail" -eq 0 ]
