#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# 100,000 random frames and 10,000 fragment trains at `hotpath serve` over afpacket and afxdp: the stack still answers, its memory stays bounded, and every counter that moved is named in the log.
#
# usage: tests/hostile/garbage.sh [afpacket] [afxdp]     (default: both)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs,
#        HP_GARBAGE_FRAMES (default 100000), HP_FRAG_TRAINS (default 10000),
#        HP_SEED (default: the time; printed, so that a failure can be
#        replayed)
#
# Root only; namespaces hph-PID-* (tests/hostile/lib.bash). From B's veth
# end, tests/hostile/hostile.py sends with a raw socket:
#  - garbage: the first 256 made by scapy's fuzz() (IP and TCP options,
#    ICMP quoting IP, IPv6 extension headers, every field scapy's way); then
#    TCP with random flags, options (lengths 0 and 1, truncated,
#    unknown kinds) and data offsets (below the header, past the end), bad
#    and good checksums; IPv6 extension-header chains (hop-by-hop, routing,
#    fragment, destination options, AH, unknown, overrunning lengths);
#    ICMP and ICMPv6 errors quoting random IP headers (truncated too);
#    IPv4 headers with wrong versions, lengths and checksums; UDP with
#    wrong lengths; random ethertypes and bytes;
#  - fragment trains: IPv4 and IPv6, overlapping, with gaps, duplicated,
#    without a last fragment, at the 65535-byte limit, shuffled.
# tcpdump records what B sends while they go (pcap kept when the suite fails
# or with HP_KEEP=1, to replay a failure: tcpreplay, or scapy's
# sendp(rdpcap(FILE))). Then: serve answers ping, ping6 (also 3000-byte ones, reassembled) and TCP
# echo; its RSS grew by at most 12 MB (4 MiB of reassembly, the buffers the
# flood touched first, tables); the counters that moved are printed by name;
# and serve exits with every buffer back.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/hostile/lib.bash

hostile_require "hostile garbage" tcpdump
hostile_setup garbage
hostile_kinds "$@"
FRAMES=${HP_GARBAGE_FRAMES:-100000}
TRAINS=${HP_FRAG_TRAINS:-10000}
SEED=${HP_SEED:-$(date +%s)}
RSS_MAX_KB=$((12 * 1024))

for KIND in "${KINDS[@]}"; do
  interop_kind_skipped "$KIND" && continue
  ns_up "$KIND" || { ko "$KIND: namespaces"; continue; }
  if ! serve_start garbage; then ns_down; continue; fi
  inb timeout 60 python3 "$PY" clients --to "$SERVE4" --port 7 --conns 8 --bytes 65536 >/dev/null 2>&1
  rss0=$(serve_rss)
  serve_tick; serve_counters >"$tmp/before"
  pcap=$tmp/$KIND-garbage.pcap
  # Not through inb: $! must be tcpdump itself, for the SIGINT below.
  ip netns exec "$B" tcpdump -i "$IFB" -s 256 -B 65536 -Q out -w "$pcap" >/dev/null 2>&1 &
  tcpd=$!
  PIDS+=("$tcpd")
  sleep 0.5
  out=$(inb timeout 300 python3 "$PY" garbage --iface "$IFB" --mac "$SERVE_MAC" --src "$PEER4B" --dst "$SERVE4" \
    --count "$FRAMES" --seed "$SEED" 2>&1) || ko "$KIND: $FRAMES random frames sent" "$out"
  note "$KIND: random frames: $out"
  serve_alive "after $FRAMES random frames"
  out=$(inb timeout 300 python3 "$PY" frags --iface "$IFB" --mac "$SERVE_MAC" --src "$PEER4B" --dst "$SERVE4" \
    --count "$TRAINS" --seed "$SEED" 2>&1) || ko "$KIND: $TRAINS fragment trains sent" "$out"
  note "$KIND: fragment trains: $out"
  sleep 0.2
  kill -INT "$tcpd" 2>/dev/null; wait "$tcpd" 2>/dev/null
  serve_alive "after $TRAINS fragment trains"
  if inb ping -c 2 -i 0.2 -W 2 -s 3000 "$SERVE4" >/dev/null 2>&1 && inb ping -6 -c 2 -i 0.2 -W 2 -s 3000 "$SERVE6" >/dev/null 2>&1; then
    ok "$KIND: fragmented pings (3000 bytes, both families) are still reassembled and answered"
  else
    ko "$KIND: fragmented pings (3000 bytes, both families) are still reassembled and answered"
  fi
  rss=$(serve_rss)
  if [ $((rss - rss0)) -le $RSS_MAX_KB ]; then ok "$KIND: RSS grew by $(( (rss - rss0) / 1024 )) MB (at most 12)"
  else ko "$KIND: RSS grew by at most 12 MB" "$rss0 KiB -> $rss KiB"; fi
  serve_tick; serve_counters >"$tmp/after"
  counters_moved "$tmp/before" "$tmp/after" >"$tmp/moved"
  # Every counter that moved has a name (the stack counts drops by reason):
  # list them; the frames that reached the stack are the ones counted in.
  if [ "$(wc -l <"$tmp/moved")" -ge 10 ] && ! grep -qvE '^[A-Z0-9_]+ \+[0-9]+$' "$tmp/moved"; then
    ok "$KIND: $(wc -l <"$tmp/moved") counters moved, each by name (seed $SEED)"
  else
    ko "$KIND: the counters that moved are named" "$(head -5 "$tmp/moved")"
  fi
  note "$KIND: moved: $(tr '\n' ' ' <"$tmp/moved")"
  serve_stop garbage
  if [ "$fail" -gt 0 ] || [ "${HP_KEEP:-0}" = 1 ]; then
    keep=1; HP_KEEP=1; note "$KIND: the frames sent are in $pcap"
  fi
  ns_down
done
summary
[ "$fail" -eq 0 ]
