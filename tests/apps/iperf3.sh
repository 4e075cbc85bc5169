#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# iperf3 unmodified on hotpath (libhotpath-posix.so) over afxdp, afpacket and tap: the server on hotpath against the kernel's client (TCP, -R, -P 4, -u at 200 Mbit/s, -6), and the client on hotpath against the kernel's server.
#
# usage: tests/apps/iperf3.sh [afxdp] [afpacket] [tap]     (default: all three)
# env:   HP_BIN, HP_KEEP=1, HP_APPS_FULL=1: 10 s runs (default, make check: 2 s).
#
# Root only; namespaces hpx-PID-* made here, removed on exit (harness.bash).
# Each run's JSON (iperf3 -J) must have no error and bytes received; UDP
# at 200 Mbit/s must lose under 20% (the receiving kernel, on a loaded
# machine, drops some in its socket buffer: counted, not hotpath's). The
# hotpath side ends with no buffer in use.
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/apps/harness.bash

apps_require "apps iperf3" iperf3
T=2
[ "$FULL" = 1 ] && T=10
apps_begin iperf3
MODES=("tcp" "-R" "-P 4" "-u -b 200M" "-6")

# check_json TAG WHAT MODE: iperf3's verdict.
check_json() {
  local line
  line=$(python3 - "$tmp/$1.out" "$3" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("bad no JSON (%s)" % e); sys.exit()
if d.get("error"):
    print("bad %s" % d["error"]); sys.exit()
e = d.get("end", {})
if "-u" in sys.argv[2]:
    s = e.get("sum", {})
    lost = s.get("lost_percent", 100.0)
    ok = s.get("packets", 0) > 0 and lost < 20
    print("%s %.0f Mbit/s, %.2f%% lost" % ("ok" if ok else "bad", s.get("bits_per_second", 0) / 1e6, lost))
else:
    r = e.get("sum_received", {})
    ok = r.get("bytes", 0) > 0
    print("%s %.0f Mbit/s received" % ("ok" if ok else "bad", r.get("bits_per_second", 0) / 1e6))
EOF
)
  if [ "${line%% *}" = ok ]; then ok "$2: ${line#ok }"; else ko "$2" "${line#bad }$(tail -2 "$tmp/$1.err")"; fi
}

# iperf3 client arguments for a mode, against host.
client_args() { # mode v4host v6host
  case "$1" in
    tcp) echo "-c $2" ;;
    -6) echo "-c $3 -6" ;;
    *) echo "-c $2 $1" ;;
  esac
}

server_on_hotpath() {
  local what="$KIND, iperf3 -s on hotpath" i=0 m
  hp_bg "srv" a iperf3 -s --forceflush
  local srv=$BG_PID
  # Not wait_port: iperf3 -s takes any connection for a test.
  if ! wait_text "$tmp/srv.out" "Server listening on 5201"; then
    ko "$what: the server does not answer" "$(tail -5 "$tmp/srv.err")"; stop_bg $srv; return
  fi
  for m in "${MODES[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2046
    k_fg "kc$i" iperf3 $(client_args "$m" $HOT4 $HOT6) -t $T -J
    check_json "kc$i" "$what, kernel client $m" "$m"
  done
  stop_bg $srv
  buffers_ok "srv" "$what"
}

client_on_hotpath() {
  local what="$KIND, iperf3 -c on hotpath" i=0 m
  k_bg "ksrv" iperf3 -s -p 5202 --forceflush
  local srv=$BG_PID
  if ! wait_text "$tmp/ksrv.out" "Server listening on 5202"; then
    ko "$what: the kernel's server does not answer"; stop_bg $srv; return
  fi
  for m in "${MODES[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2046
    hp_fg "hc$i" a iperf3 $(client_args "$m" $KERN4 $KERN6) -p 5202 -t $T -J
    check_json "hc$i" "$what $m" "$m"
    buffers_ok "hc$i" "$what $m"
  done
  stop_bg $srv
}

for kind in $(apps_kinds "$@"); do
  interop_kind_skipped "$kind" && continue
  if ! apps_ns_up "$kind"; then ko "$kind: namespaces"; apps_ns_down; continue; fi
  server_on_hotpath
  client_on_hotpath
  apps_ns_down
done
summary
[ "$fail" -eq 0 ]
