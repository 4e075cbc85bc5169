#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The event loop on real links (root): an idle `hotpath serve` on afpacket, afxdp and tap sleeps (under 1% of a core over 5 s, from /proc/PID/stat), and each link kind wakes it: ping, UDP and TCP echo answered right after idling; request/response latency with and without busy-polling is reported.
#
# Usage: tests/interop/loop.sh [afpacket] [afxdp] [tap]   (default: all three)
#
# Topology, per kind, in namespaces made here and removed on exit (names
# hpl-PID-...): serve on veth end IFa in namespace A (the kernel has no
# address there), the kernel's ping, UDP and TCP in namespace B on IFb with
# 198.18.0.1/24 and 2001:2::1/64; serve is 198.18.0.2 and 2001:2::2. For tap,
# one namespace: serve makes the device and the kernel's side of it is .1.
#
# What is asserted is behaviour: the CPU time serve was given while idle
# (utime + stime of /proc/PID/stat, in clock ticks) stays under 1% of the
# idle time, its loop slept, and afterwards every probe is answered within
# its timeout. Latency numbers are printed as notes (ratios in one run), not
# asserted. Ends with "N passed, N failed, N skipped"; exits 1 on a failure.
set -u
cd "$(dirname "$0")/../.."
HP=${HP_BIN:-build/hotpath}
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(afpacket afxdp tap)
IDLE_S=${HPL_IDLE_S:-5}

source tests/interop/harness.bash

interop_require "loop interop" "needs network namespaces"
have_ethtool=1; command -v ethtool >/dev/null 2>&1 || have_ethtool=0
command -v ping >/dev/null 2>&1 || { sk "loop interop: ping is not installed"; summary; exit 0; }

tmp=$(mktemp -d /tmp/hpl-loop.XXXXXX)
PIDS=()
NSS=()
keep=0
trap interop_cleanup EXIT
trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM
for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hpl-[0-9]+(-[a-z]+)+$'); do
  p=${n#hpl-}; p=${p%%-*}
  kill -0 "$p" 2>/dev/null || ip netns del "$n" 2>/dev/null
done

CLK_TCK=$(getconf CLK_TCK)

# The CPU time of a process so far, in clock ticks (utime + stime). The
# command name may hold spaces: fields are counted after its ')'.
cpu_ticks() { # pid
  sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}

# A field of the "loop" object of serve's last --json-stats line.
loop_ctr() { # outfile name
  grep '^{' "$1" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["loop"][sys.argv[1]])' "$2"
}

wait_serve() { # pid outfile
  local i
  for i in $(seq 1 50); do
    kill -0 "$1" 2>/dev/null || return 1
    grep -q '"event": "tick"' "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# The probes: UDP and TCP echo, each with a deadline; and a UDP
# request/response run that prints p50 and p99 in microseconds.
cat >"$tmp/probe.py" <<'EOF'
import socket, sys, time
mode, fam, addr = sys.argv[1], sys.argv[2], sys.argv[3]
af = socket.AF_INET6 if fam == "6" else socket.AF_INET
if mode == "udp":
    s = socket.socket(af, socket.SOCK_DGRAM); s.settimeout(1.0)
    t0 = time.monotonic(); s.sendto(b"after idling", (addr, 7)); d, _ = s.recvfrom(100)
    assert d == b"after idling", d
    print("%.0f us" % ((time.monotonic() - t0) * 1e6))
elif mode == "tcp":
    t0 = time.monotonic()
    s = socket.create_connection((addr, 7), timeout=2.0)
    s.sendall(b"x" * 1000); got = b""
    while len(got) < 1000:
        d = s.recv(2000)
        if not d: break
        got += d
    assert got == b"x" * 1000, len(got)
    s.close()
    print("%.0f us" % ((time.monotonic() - t0) * 1e6))
else:  # rr N
    n = int(sys.argv[4]); s = socket.socket(af, socket.SOCK_DGRAM); s.settimeout(1.0)
    s.connect((addr, 7)); lat = []
    for i in range(n):
        t0 = time.perf_counter_ns(); s.send(b"r"); s.recv(16); lat.append(time.perf_counter_ns() - t0)
    lat.sort()
    print("%.1f %.1f" % (lat[n // 2] / 1e3, lat[n * 99 // 100] / 1e3))
EOF

setup_ns() { # kind A B IFA IFB
  local kind=$1 A=$2 B=$3 IFA=$4 IFB=$5
  ip netns add "$A" && NSS+=("$A") || return 1
  ip -n "$A" link set lo up
  [ "$kind" = tap ] && return 0
  ip netns add "$B" && NSS+=("$B") || return 1
  ip link add "$IFA" netns "$A" type veth peer name "$IFB" netns "$B" || return 1
  ip -n "$B" link set lo up
  ip netns exec "$A" sysctl -qw "net.ipv6.conf.$IFA.disable_ipv6=1"
  ip -n "$A" link set "$IFA" up
  ip -n "$B" link set "$IFB" up
  ip -n "$B" addr add 198.18.0.1/24 dev "$IFB"
  ip -n "$B" addr add 2001:2::1/64 dev "$IFB" nodad
  # AF_XDP gets no checksum status: the kernel computes every checksum.
  [ $have_ethtool = 1 ] && ip netns exec "$B" ethtool -K "$IFB" tx off >/dev/null 2>&1
  return 0
}

# Start serve (its pid in SERVE_PID); for tap, give the kernel's side of
# the new device its addresses. Non-zero when serve did not come up.
SERVE_PID=0
start_serve() { # kind A IFA out err spin
  local kind=$1 A=$2 IFA=$3 out=$4 err=$5 spin=$6
  ip netns exec "$A" "$HP" serve --link "$kind" --iface "$IFA" --ip 198.18.0.2/24 --ip6 2001:2::2/64 \
    --udp-echo 7 --tcp-echo 7 --spin-us "$spin" --json-stats >"$out" 2>"$err" &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  wait_serve "$SERVE_PID" "$out" || return 1
  if [ "$kind" = tap ] && ! ip -n "$A" addr show dev "$IFA" 2>/dev/null | grep -q 198.18.0.1; then
    ip -n "$A" link set "$IFA" up
    ip -n "$A" addr add 198.18.0.1/24 dev "$IFA"
    ip -n "$A" addr add 2001:2::1/64 dev "$IFA" nodad
  fi
  return 0
}

stop_serve() { # pid
  kill -INT "$1" 2>/dev/null
  local i
  for i in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

# Idle for IDLE_S seconds; the CPU serve got meanwhile, and its loop's sleeps.
idle_check() { # kind pid out
  local kind=$1 pid=$2 out=$3
  local s0 c0 c1 s1
  s0=$(loop_ctr "$out" sleeps)
  c0=$(cpu_ticks "$pid")
  sleep "$IDLE_S"
  c1=$(cpu_ticks "$pid")
  sleep 1.1 # the next counters line
  s1=$(loop_ctr "$out" sleeps)
  local ms=$(( (c1 - c0) * 1000 / CLK_TCK )) limit=$(( IDLE_S * 10 ))
  if [ $(( (c1 - c0) * 1000 )) -lt $(( IDLE_S * CLK_TCK * 10 )) ]; then
    ok "$kind: idle serve used ${ms} ms of CPU in ${IDLE_S} s (< 1% of a core: ${limit} ms)"
  else
    ko "$kind: idle serve used ${ms} ms of CPU in ${IDLE_S} s (< 1% of a core: ${limit} ms)"
  fi
  if [ "$s1" -gt "$s0" ]; then ok "$kind: its loop slept ($((s1 - s0)) sleeps)"
  else ko "$kind: its loop slept" "sleeps $s0 -> $s1"; fi
}

# After idling, each probe wakes serve through the link and is answered.
wake_checks() { # kind B
  local kind=$1 B=$2 out
  if out=$(ip netns exec "$B" ping -4 -c 3 -i 0.2 -W 1 198.18.0.2 2>&1) && echo "$out" | grep -q " 0% packet loss"; then
    ok "$kind: ping after idling: 3/3 replies (rtt $(echo "$out" | grep -o 'rtt.*' | cut -d' ' -f4) ms)"
  else
    ko "$kind: ping after idling" "$(echo "$out" | tail -2)"
  fi
  sleep 1
  if out=$(ip netns exec "$B" ping -6 -c 3 -i 0.2 -W 1 2001:2::2 2>&1) && echo "$out" | grep -q " 0% packet loss"; then
    ok "$kind: ping -6 after idling: 3/3 replies"
  else
    ko "$kind: ping -6 after idling" "$(echo "$out" | tail -2)"
  fi
  local fam addr
  for fam in 4 6; do
    addr=198.18.0.2; [ $fam = 6 ] && addr=2001:2::2
    sleep 1
    if out=$(ip netns exec "$B" timeout 10 python3 "$tmp/probe.py" udp $fam $addr 2>&1); then
      ok "$kind: UDP echo (IPv$fam) after idling: answered in $out"
    else
      ko "$kind: UDP echo (IPv$fam) after idling" "$out"
    fi
    sleep 1
    if out=$(ip netns exec "$B" timeout 10 python3 "$tmp/probe.py" tcp $fam $addr 2>&1); then
      ok "$kind: TCP echo (IPv$fam) after idling: connected and echoed in $out"
    else
      ko "$kind: TCP echo (IPv$fam) after idling" "$out"
    fi
  done
}

run_kind() {
  local kind=$1 k
  case "$kind" in afxdp) k=x ;; afpacket) k=p ;; *) k=t ;; esac
  local A=hpl-$$-$k-a B=hpl-$$-$k-b IFA=hpl$$${k}a IFB=hpl$$${k}b
  [ "$kind" = tap ] && { B=$A; IFA=hpltap$$; }
  local out=$tmp/$kind.out err=$tmp/$kind.err pid
  echo "--- $kind"
  setup_ns "$kind" "$A" "$B" "$IFA" "$IFB" || { ko "$kind: make the namespaces and veth pair"; return; }
  if ! start_serve "$kind" "$A" "$IFA" "$out" "$err" 50; then
    if grep -q "not built in" "$err"; then sk "$kind: $(head -1 "$err")"
    else ko "$kind: serve starts" "$(head -5 "$err")"; fi
    stop_serve "$SERVE_PID"
    return
  fi
  pid=$SERVE_PID
  ok "$kind: serve runs on $IFA (spin 50 us)"
  # Neighbours resolved, IPv6 DAD over; then nothing comes.
  ip netns exec "$B" ping -c 1 -W 2 198.18.0.2 >/dev/null 2>&1
  sleep 1.5
  ip netns exec "$B" ping -6 -c 1 -W 2 2001:2::2 >/dev/null 2>&1
  sleep 1
  idle_check "$kind" "$pid" "$out"
  local w0 w1
  w0=$(loop_ctr "$out" link_wakes)
  wake_checks "$kind" "$B"
  sleep 1.1
  w1=$(loop_ctr "$out" link_wakes)
  # Each probe came after a pause longer than the spin: the link's fd ended
  # a sleep for it (not the next counters tick).
  if [ $((w1 - w0)) -ge 6 ]; then ok "$kind: the link's fd woke the sleeping loop ($((w1 - w0)) times for 6 probes)"
  else ko "$kind: the link's fd woke the sleeping loop" "link_wakes $w0 -> $w1 for 6 probes"; fi
  latency "$kind" "$B" "$pid" "spin 50 us"
  stop_serve "$pid"
  if grep -qi "still in use" "$err"; then ko "$kind: every buffer back at exit" "$(head -3 "$err")"
  else ok "$kind: serve exits with every buffer back"; fi
  # The same serve busy-polling (the behaviour before the loop): a core.
  if start_serve "$kind" "$A" "$IFA" "$out.busy" "$err.busy" forever; then
    pid=$SERVE_PID
    sleep 1
    local c0 c1
    c0=$(cpu_ticks "$pid"); sleep 2; c1=$(cpu_ticks "$pid")
    note "$kind: busy-polling serve (--spin-us forever) used $(( (c1 - c0) * 1000 / CLK_TCK )) ms of CPU in 2 s"
    latency "$kind" "$B" "$pid" "busy-polling"
    stop_serve "$pid"
  fi
}

# UDP request/response from the kernel's side: 3000 transactions in a row
# (traffic without pauses: the loop never sleeps within them).
latency() { # kind B pid label
  local out
  if out=$(ip netns exec "$2" timeout 60 python3 "$tmp/probe.py" rr 4 198.18.0.2 3000 2>&1); then
    note "$1: UDP rr from the kernel, $4: p50 $(echo "$out" | cut -d' ' -f1) us, p99 $(echo "$out" | cut -d' ' -f2) us"
  else
    note "$1: UDP rr from the kernel, $4: failed: $out"
  fi
}

for kind in "${KINDS[@]}"; do
  case "$kind" in
  afpacket|afxdp|tap) run_kind "$kind" ;;
  *) ko "unknown link kind '$kind' (afpacket, afxdp, tap)" ;;
  esac
done
summary
[ $fail = 0 ]
