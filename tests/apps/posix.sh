#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The POSIX layer's entry points in a real process (LD_PRELOAD through hotpath run) against the kernel's TCP: blocking echo with select/poll and the fortified calls, epoll with a pipe beside the sockets, fork, threads, dup2; and misconfiguration: no such interface, an address the kernel owns, HOTPATH_FALLBACK=kernel, an unset environment.
#
# usage: tests/apps/posix.sh [afxdp] [afpacket] [tap]      (default: afpacket)
# env:   HP_BIN, HP_KEEP=1. The probe is build/tests/apps_probe (tests/apps/probe.c).
#
# Root only; namespaces hpx-PID-* made here, removed on exit (harness.bash).
# The kernel's echo server is tests/interop/tcp/tcp_peer.py. Every probe
# run ends with no buffer in use.
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/apps/harness.bash

PROBE=$(dirname "$HP")/tests/apps_probe
apps_require "apps posix"
if [ ! -x "$PROBE" ]; then ko "apps posix: $PROBE is not built (make build)"; summary; exit 1; fi
apps_begin posix
PEER=tests/interop/tcp/tcp_peer.py

probe_ok() { # tag what
  if grep -q "^ok: " "$tmp/$1.out"; then
    ok "$2: $(grep '^ok: ' "$tmp/$1.out" | head -1 | cut -c5-)"
  else
    ko "$2" "$(cat "$tmp/$1.out"; grep -v '^  ' "$tmp/$1.err" | head -3)"
  fi
  buffers_ok "$1" "$2"
}

calls() {
  local what="$KIND, POSIX calls in a process"
  k_bg echo python3 $PEER server --port 7 --mode echo
  local srv=$BG_PID
  if ! wait_port "$KNS" $KERN4 7; then ko "$what: the kernel's echo server"; stop_bg $srv; return; fi
  hp_fg e4 a "$PROBE" echo $KERN4 7 2000000; probe_ok e4 "$what: blocking echo, IPv4"
  hp_fg e6 a "$PROBE" echo $KERN6 7 500000; probe_ok e6 "$what: blocking echo, IPv6"
  hp_fg ep a "$PROBE" epoll $KERN4 7 16 300000; probe_ok ep "$what: epoll, edge-triggered, with a pipe"
  hp_fg fk a "$PROBE" fork $KERN4 7; probe_ok fk "$what: fork"
  hp_fg th a "$PROBE" threads $KERN4 7 4 300000; probe_ok th "$what: threads"
  hp_fg d2 a "$PROBE" dup2 $KERN4 7; probe_ok d2 "$what: dup2"
  stop_bg $srv
}

# One line on stderr and socket() failing with the errno, never a crash or
# a silent kernel socket.
misconfig() {
  local what="$KIND, misconfiguration"
  timeout 30 ip netns exec "$HNS" "$HP" run --link "$KIND" --iface hpxnosuch0 --ip $HOT4/24 -- "$PROBE" socket \
    >"$tmp/m1.out" 2>"$tmp/m1.err"
  if grep -qE "^errno $(errno_of ENODEV) " "$tmp/m1.out" && [ "$(grep -c '^hotpath: ' "$tmp/m1.err")" -ge 1 ]; then
    ok "$what: no such interface: socket() fails with ENODEV, said on stderr: $(head -1 "$tmp/m1.err" | cut -c1-90)"
  else
    ko "$what: no such interface" "$(cat "$tmp/m1.out" "$tmp/m1.err" | head -4)"
  fi
  timeout 30 ip netns exec "$HNS" "$HP" run --link "$KIND" --iface hpxnosuch0 --ip $HOT4/24 --fallback kernel -- \
    "$PROBE" socket >"$tmp/m2.out" 2>"$tmp/m2.err"
  if grep -q "^ok: socket" "$tmp/m2.out" && grep -q "FALLBACK=kernel" "$tmp/m2.err"; then
    ok "$what: --fallback kernel: the kernel's socket, and a line saying so"
  else
    ko "$what: --fallback kernel" "$(cat "$tmp/m2.out" "$tmp/m2.err" | head -4)"
  fi
  # The kernel owns the address hotpath is given.
  ip -n "$HNS" addr add 198.18.0.9/24 dev "$IFA"
  timeout 30 ip netns exec "$HNS" "$HP" run --link "$KIND" --iface "$IFA" --ip 198.18.0.9/24 -- "$PROBE" socket \
    >"$tmp/m3.out" 2>"$tmp/m3.err"
  ip -n "$HNS" addr del 198.18.0.9/24 dev "$IFA"
  if grep -qE "^errno $(errno_of EADDRINUSE) " "$tmp/m3.out" && grep -q "already the kernel's address" "$tmp/m3.err"; then
    ok "$what: an address the kernel owns: EADDRINUSE, said on stderr"
  else
    ko "$what: address taken" "$(cat "$tmp/m3.out" "$tmp/m3.err" | head -4)"
  fi
  LD_PRELOAD=$(dirname "$HP")/libhotpath-posix.so "$PROBE" socket >"$tmp/m4.out" 2>"$tmp/m4.err"
  if grep -qE "^errno $(errno_of EINVAL) " "$tmp/m4.out" && grep -q "HOTPATH_LINK is not set" "$tmp/m4.err"; then
    ok "$what: preloaded without HOTPATH_*: EINVAL, and what to set"
  else
    ko "$what: no configuration" "$(cat "$tmp/m4.out" "$tmp/m4.err" | head -4)"
  fi
}

# hotpath run --skb --copy: the program's sockets over AF_XDP attached in
# generic (SKB) mode and bound in copy mode (seen on the interface while the
# echo runs); --zero-copy where the driver has none (veth): socket() fails
# with EOPNOTSUPP and a line that says why.
afxdp_modes() {
  local what="afxdp, HOTPATH_AFXDP_MODE"
  k_bg em python3 $PEER server --port 7 --mode echo
  local srv=$BG_PID
  if ! wait_port "$KNS" $KERN4 7; then ko "$what: the kernel's echo server"; stop_bg $srv; return; fi
  # shellcheck disable=SC2046
  timeout "${HP_APPS_TIMEOUT:-300}" ip netns exec "$HNS" "$HP" run $(hp_net a) --no-dad --stats --skb --copy \
    -- "$PROBE" echo $KERN4 7 20000000 >"$tmp/sk.out" 2>"$tmp/sk.err" &
  local run=$! i seen=""
  for i in $(seq 1 100); do
    seen=$(ip -n "$HNS" -d link show "$IFA" 2>/dev/null | grep -o "xdpgeneric" | head -1)
    [ -n "$seen" ] && break
    kill -0 $run 2>/dev/null || break
    sleep 0.05
  done
  wait $run
  probe_ok sk "$what: --skb --copy: blocking echo"
  if [ "$seen" = xdpgeneric ]; then
    ok "$what: --skb: XDP attached in generic mode while it ran"
  else
    ko "$what: --skb" "$(ip -n "$HNS" -d link show "$IFA" | head -3)"
  fi
  stop_bg $srv
  # shellcheck disable=SC2046
  timeout 30 ip netns exec "$HNS" "$HP" run $(hp_net a) --no-dad --zero-copy -- "$PROBE" socket \
    >"$tmp/zc.out" 2>"$tmp/zc.err"
  if grep -qE "^errno $(errno_of EOPNOTSUPP) " "$tmp/zc.out" && grep -q "zero-copy" "$tmp/zc.err"; then
    ok "$what: --zero-copy on veth: EOPNOTSUPP, said on stderr: $(grep zero-copy "$tmp/zc.err" | head -1 | cut -c1-90)"
  else
    ko "$what: --zero-copy on veth" "$(cat "$tmp/zc.out" "$tmp/zc.err" | head -4)"
  fi
}

errno_of() { python3 -c "import errno, sys; print(getattr(errno, sys.argv[1]))" "$1"; }

KINDS=$(apps_kinds "$@")
[ $# -eq 0 ] && KINDS=afpacket
for kind in $KINDS; do
  interop_kind_skipped "$kind" && continue
  if ! apps_ns_up "$kind"; then ko "$kind: namespaces"; apps_ns_down; continue; fi
  calls
  misconfig
  [ "$kind" = afxdp ] && afxdp_modes
  apps_ns_down
done
# The AF_XDP modes once in the reduced run too (afpacket alone by default).
if [ $# -eq 0 ] && ! interop_kind_skipped afxdp; then
  if apps_ns_up afxdp; then afxdp_modes; else ko "afxdp: namespaces"; fi
  apps_ns_down
fi
summary
[ "$fail" -eq 0 ]
