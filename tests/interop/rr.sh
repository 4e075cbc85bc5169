#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `hotpath rr` over real links: short runs on afxdp, afpacket and tap (TCP and UDP, IPv4 and IPv6) in the namespace rr makes, on interfaces given with --iface, and the error cases; no namespace may be left behind.
#
# usage: tests/interop/rr.sh [afxdp] [afpacket] [tap]     (default: all three)
# env:   HP_BIN (default build/hotpath)
#
# Root only (rr makes a network namespace PREFIX-rr-PID, PREFIX from HP_NETNS_PREFIX, default hp; the --iface runs use one
# made here, hpi-rr-PID, with a veth pair and a bridge of two taps). A link
# kind rr reports as unavailable (exit 2: not built in, no kernel support) is
# skipped with rr's reason. Each run is --flows 50 --duration 0.5; the whole
# script takes about 20 s.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
HP=${HP_BIN:-build/hotpath}
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(afxdp afpacket tap)

source tests/interop/harness.bash

interop_require "rr over real links" "rr makes network namespaces"
HP=$(cd "$(dirname "$HP")" && pwd)/$(basename "$HP")

tmp=$(mktemp -d /tmp/hpi-rr.XXXXXX)
RRNS=${HP_NETNS_PREFIX:-hp}-rr # rr's namespaces: RRNS-PID (docs/knobs.md, HP_NETNS_PREFIX)
NS=hpi-rr-$$
cleanup() {
  ip netns del "$NS" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM
# Namespaces of earlier runs (ours or rr's own) whose process is gone.
for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^(hpi-rr|$RRNS)-[0-9]+\$"); do
  p=${n##*-}
  kill -0 "$p" 2>/dev/null || ip netns del "$n" 2>/dev/null
done

ns_left() { # namespace name from rr's JSON: is it still there?
  [ -n "$1" ] && ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"
}

# One short run: JSON with the link named, every flow up, tps > 0, and rr's
# namespace gone afterwards. Returns 2 when rr says the link is unavailable.
rr_run() { # LABEL KIND [NETNS-TO-RUN-IN] -- ARGS...
  local label=$1 kind=$2 in=$3; shift 4
  local pre=(); [ -n "$in" ] && pre=(ip netns exec "$in")
  timeout 60 "${pre[@]}" "$HP" rr --link "$kind" --flows 50 --duration 0.5 --json "$@" >"$tmp/rr.json" 2>"$tmp/rr.err"
  local rc=$?
  if [ $rc = 2 ]; then return 2; fi
  local verdict
  verdict=$(python3 - "$tmp/rr.json" "$kind" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["link"] == sys.argv[2], d["link"]
assert d["flows"] == 50 and d["flows_reached"] == 50, d
assert d["tps"] > 0 and d["cpu_s_per_txn"] > 0 and d["p99_us"] >= d["p50_us"] > 0, d
assert d["iface"] and d["peer_iface"], d
print("%.0f tps, %.1f us CPU per txn, %s <-> %s%s" % (d["tps"], d["cpu_s_per_txn"] * 1e6, d["iface"],
      d["peer_iface"], " in " + d["netns"] if d["netns"] else ""))
print(d["netns"])
PY
  )
  local vrc=$?
  local made; made=$(echo "$verdict" | tail -1)
  if [ $rc != 0 ] || [ $vrc != 0 ]; then
    ko "$label" "exit $rc; $(head -3 "$tmp/rr.err")"$'\n'"$(echo "$verdict" | tail -3)"
  elif ns_left "$made"; then
    ko "$label" "namespace $made is still there after rr ended"
  else
    ok "$label: $(echo "$verdict" | head -1)"
  fi
  return 0
}

declare -A avail
for kind in "${KINDS[@]}"; do
  case "$kind" in afxdp|afpacket|tap) ;; *) ko "unknown link kind '$kind' (afxdp, afpacket or tap)"; continue ;; esac
  t0=$SECONDS
  rr_run "rr $kind tcp IPv4" "$kind" "" --
  if [ $? = 2 ]; then
    sk "rr $kind: unavailable here: $(head -1 "$tmp/rr.err")"
    avail[$kind]=0
    continue
  fi
  avail[$kind]=1
  rr_run "rr $kind udp IPv4" "$kind" "" -- --proto udp
  rr_run "rr $kind tcp IPv6" "$kind" "" -- --ipv6
  rr_run "rr $kind udp IPv6" "$kind" "" -- --proto udp --ipv6
  echo "      $kind took $((SECONDS - t0)) s"
done

# --iface / --peer-iface: the user's interfaces, here in a namespace of ours
# (the kernel without IPv6 or addresses there): a veth pair va/vb, and taps
# ta/tb on bridge br0. IPv6 runs duplicate address detection on them.
if ip netns add "$NS" 2>/dev/null &&
   ip netns exec "$NS" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6' &&
   ip -n "$NS" link add va type veth peer name vb && ip -n "$NS" link set va up && ip -n "$NS" link set vb up &&
   ip -n "$NS" link add br0 type bridge forward_delay 0 && ip -n "$NS" link set br0 up &&
   ip -n "$NS" tuntap add dev ta mode tap && ip -n "$NS" tuntap add dev tb mode tap &&
   ip -n "$NS" link set ta master br0 up && ip -n "$NS" link set tb master br0 up; then
  for kind in "${KINDS[@]}"; do
    [ "${avail[$kind]:-0}" = 1 ] || continue
    a=va b=vb; [ "$kind" = tap ] && { a=ta; b=tb; }
    rr_run "rr $kind --iface $a --peer-iface $b tcp IPv6 (DAD)" "$kind" "$NS" -- --iface $a --peer-iface $b --ipv6
  done
  # A tap given by --iface must exist: rr never makes one there.
  out=$(ip netns exec "$NS" "$HP" rr --link tap --iface nosuch0 --peer-iface tb --duration 0.2 2>&1); rc=$?
  if [ $rc = 2 ] && echo "$out" | grep -q "nosuch0: no such interface"; then
    ok "rr --iface nosuch0: exit 2, named"
  else
    ko "rr --iface nosuch0: exit 2, named" "exit $rc: $out"
  fi
else
  ko "make namespace $NS with a veth pair and a bridge of two taps for the --iface runs"
fi

# Usage errors.
expect2() { # LABEL PATTERN ARGS...
  local label=$1 pat=$2; shift 2
  local out rc
  out=$("$HP" rr "$@" 2>&1); rc=$?
  if [ $rc = 2 ] && echo "$out" | grep -qE -- "$pat"; then ok "$label"; else ko "$label" "exit $rc: $out"; fi
}
expect2 "rr --iface without --peer-iface: exit 2" "needs --peer-iface" --link afpacket --iface lo
expect2 "rr --peer-iface without --iface: exit 2" "needs --iface" --link afpacket --peer-iface lo
expect2 "rr --iface with --link mem: exit 2"      "are for --link afxdp" --link mem --iface lo --peer-iface lo
expect2 "rr --iface twice the same: exit 2"       "both lo" --link afpacket --iface lo --peer-iface lo
expect2 "rr --iface with --threads 2: exit 2"     "one stack pair" --link tap --iface a --peer-iface b --threads 2 --flows 2

# Without root: exit 2, a reason, and no namespace made.
if command -v setpriv >/dev/null 2>&1 && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$HP" 2>/dev/null; then
  before=$(ip netns list | grep -c "^$RRNS-")
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$HP" rr --link afpacket --duration 0.2 2>&1); rc=$?
  after=$(ip netns list | grep -c "^$RRNS-")
  if [ $rc = 2 ] && echo "$out" | grep -q "needs root" && [ "$before" = "$after" ]; then
    ok "rr --link afpacket as nobody: exit 2, 'needs root', no namespace"
  else
    ko "rr --link afpacket as nobody: exit 2, 'needs root', no namespace" "exit $rc: $out"
  fi
else
  sk "rr as nobody: setpriv is missing or nobody cannot run $HP"
fi

# SIGTERM and SIGINT in the middle of a run: rr's namespace goes with it.
for sig in TERM INT; do
  kind=""
  for k in "${KINDS[@]}"; do [ "${avail[$k]:-0}" = 1 ] && { kind=$k; break; }; done
  [ -n "$kind" ] || { sk "rr SIG$sig: no link kind available"; break; }
  "$HP" rr --link "$kind" --flows 10 --duration 10 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do ns_left "$RRNS-$pid" && break; sleep 0.05; done
  had=0; ns_left "$RRNS-$pid" && had=1
  sleep 0.5
  kill -"$sig" "$pid"; wait "$pid"; rc=$?
  if [ $had = 1 ] && ! ns_left "$RRNS-$pid"; then
    ok "rr --link $kind, SIG$sig during the run: namespace $RRNS-$pid removed (exit $rc)"
  else
    ko "rr --link $kind, SIG$sig during the run: namespace removed" "seen before: $had; exit $rc"
    ip netns del "$RRNS-$pid" 2>/dev/null
  fi
done

summary
[ "$fail" -eq 0 ]
