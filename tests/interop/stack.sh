#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The stack against the Linux kernel: `hotpath serve` on afxdp, afpacket and tap
# answers ping and ping6, echoes 10,000 UDP datagrams (2,000 over IPv6) of
# sizes up to the protocol maximum byte for byte, counts malformed frames in
# the right counters, returns every buffer, and writes a pcap tshark finds no
# fault in.
#
# usage: tests/interop/stack.sh [afxdp] [afpacket] [tap]     (default: all three)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs and pcaps
#
# Root only. Everything happens in network namespaces made here (hpi-PID-*),
# joined by a veth pair (afxdp, afpacket) or holding the tap device, with
# addresses from 198.18.0.0/15 and 2001:2::/48; they and serve are removed on
# exit. Topology for afxdp and afpacket:
#   namespace A: serve on veth end IFa (the kernel has no address there and
#                IPv6 off) as 198.18.0.2/24, 2001:2::2/64
#   namespace B: the kernel on IFb as 198.18.0.1/24, 2001:2::1/64
# For tap, one namespace: serve makes the tap device and is 198.18.0.2; the
# kernel's side of the tap is 198.18.0.1.
#
# The kernel on the B end of a veth sends UDP with partial checksums
# (CHECKSUM_PARTIAL: tx checksum offload, which veth has on by default).
# AF_XDP carries no checksum status, so the main exchanges run with tx offload
# off on IFb (ethtool -K IFb tx off): the kernel computes every checksum in
# software. For afpacket a separate check then turns the offload back on: a
# packet socket is told (TP_STATUS_CSUMNOTREADY) and the link must cope.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
HP=${HP_BIN:-build/hotpath}
HERE=tests/interop
KINDS=("$@")
[ ${#KINDS[@]} -gt 0 ] || KINDS=(afxdp afpacket tap)

source tests/interop/harness.bash

interop_require "stack interop" "needs network namespaces"
have_ping=1; command -v ping >/dev/null 2>&1 || have_ping=0
have_tshark=1; command -v tshark >/dev/null 2>&1 || have_tshark=0
have_ethtool=1; command -v ethtool >/dev/null 2>&1 || have_ethtool=0
have_scapy=1; python3 -c 'import scapy.all' >/dev/null 2>&1 || have_scapy=0

tmp=$(mktemp -d /tmp/hpi-stack.XXXXXX)
PIDS=()   # serve processes started here
NSS=()    # namespaces made here
keep=0
trap interop_cleanup EXIT
trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM
# Namespaces of an earlier run that died without cleaning up (its PID gone).
for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hpi-[0-9]+(-[a-z]+)+$'); do
  p=${n#hpi-}; p=${p%%-*}
  kill -0 "$p" 2>/dev/null || ip netns del "$n" 2>/dev/null
done

V4_SIZES=0,1,2,3,4,5,8,64,512,1400,1472,1473,1480,3000,8972,9000,20000,32768,65507
V6_SIZES=0,1,4,5,64,1232,1452,1453,3000,8952,20000,32768,65527

# A counter of /proc/net/snmp, /proc/net/snmp6 or /proc/net/netstat in namespace $1.
snmp() { # ns proto field   (proto "" for snmp6)
  local ns=$1 proto=$2 field=$3
  if [ -z "$proto" ]; then
    ip netns exec "$ns" awk -v f="$field" '$1 == f {print $2; found=1} END {if (!found) print 0}' /proc/net/snmp6
  else
    local file=/proc/net/snmp; [ "$proto" = IpExt ] && file=/proc/net/netstat
    ip netns exec "$ns" awk -v p="$proto:" -v f="$field" '
      $1 == p && !hdr {for (i = 2; i <= NF; i++) col[$i] = i; hdr = 1; next}
      $1 == p && hdr {print (f in col) ? $col[f] : 0; exit}' "$file"
  fi
}
CSUM_COUNTERS="Udp:InCsumErrors Icmp:InCsumErrors IpExt:InCsumErrors :Udp6InCsumErrors :Icmp6InCsumErrors"
csum_snapshot() { # ns
  local c out=""
  for c in $CSUM_COUNTERS; do out="$out ${c}=$(snmp "$1" "${c%%:*}" "${c#*:}")"; done
  echo "$out"
}

# Wait (bounded) for serve's first counters line; 0 when it is running.
wait_serve() { # pid outfile errfile
  local i
  for i in $(seq 1 50); do
    kill -0 "$1" 2>/dev/null || return 1
    grep -q '"event": "tick"' "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

ping_check() { # label ns family addr
  local label=$1 ns=$2 fam=$3 addr=$4 out
  if [ $have_ping = 0 ]; then sk "$label: ping is not installed"; return; fi
  out=$(ip netns exec "$ns" ping "-$fam" -c 5 -i 0.2 -W 2 "$addr" 2>&1)
  if echo "$out" | grep -q "5 packets transmitted, 5 received"; then
    ok "$label: 5/5 replies ($(echo "$out" | grep -o 'rtt.*' | cut -d' ' -f4 | cut -d/ -f2) ms avg)"
  else
    ko "$label: 5/5 replies" "$(echo "$out" | tail -3)"
  fi
}

udp_check() { # label ns client-args...
  local label=$1 ns=$2; shift 2
  local out rc
  out=$(ip netns exec "$ns" timeout 150 python3 "$HERE/udp_client.py" "$@" 2>&1); rc=$?
  if [ $rc = 0 ]; then ok "$label: $(echo "$out" | head -1)"; else ko "$label" "$out"; fi
}

# One JSON counter of serve's last --json-stats line.
serve_ctr() { # outfile name
  grep '^{' "$1" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["counters"].get(sys.argv[1], 0))' "$2"
}

run_kind() {
  local kind=$1 k
  case "$kind" in afxdp) k=x ;; afpacket) k=p ;; *) k=t ;; esac
  local A=hpi-$$-$k-a B=hpi-$$-$k-b IFA=hpi$$${k}a IFB=hpi$$${k}b
  local out=$tmp/$kind.out err=$tmp/$kind.err pcap=$tmp/$kind.pcap
  local t0=$SECONDS
  echo "--- $kind"
  if [ "$kind" = tap ]; then
    A=hpi-$$-t; B=$A; IFA=hptap$$; IFB=$IFA
    ip netns add "$A" && NSS+=("$A") || { ko "$kind: make namespace $A"; return; }
    ip -n "$A" link set lo up
  else
    ip netns add "$A" && NSS+=("$A") || { ko "$kind: make namespace $A"; return; }
    ip netns add "$B" && NSS+=("$B") || { ko "$kind: make namespace $B"; return; }
    if ! ip link add "$IFA" netns "$A" type veth peer name "$IFB" netns "$B"; then
      ko "$kind: make the veth pair"; return
    fi
    ip -n "$A" link set lo up; ip -n "$B" link set lo up
    # Serve's end: no address for the kernel, and no IPv6 at all, so that
    # the kernel in A neither answers ARP/NDP nor sends anything.
    ip netns exec "$A" sysctl -qw "net.ipv6.conf.$IFA.disable_ipv6=1"
    ip -n "$A" link set "$IFA" up
    ip -n "$B" link set "$IFB" up
    ip -n "$B" addr add 198.18.0.1/24 dev "$IFB"
    ip -n "$B" addr add 2001:2::1/64 dev "$IFB" nodad
    if [ $have_ethtool = 1 ]; then
      ip netns exec "$B" ethtool -K "$IFB" tx off >/dev/null 2>&1 \
        || note "ethtool -K $IFB tx off failed: the kernel's partial checksums will reach serve"
    else
      note "ethtool is not installed: tx checksum offload stays on at $IFB (partial checksums)"
    fi
  fi
  local a_before=""
  [ "$kind" != tap ] && a_before="$(snmp "$A" Ip OutRequests) $(snmp "$A" Icmp OutMsgs) $(snmp "$A" "" Ip6OutRequests)"

  ip netns exec "$A" "$HP" serve --link "$kind" --iface "$IFA" --ip 198.18.0.2/24 --ip6 2001:2::2/64 \
    --udp-echo 7 --pcap "$pcap" --json-stats >"$out" 2>"$err" &
  local pid=$!
  PIDS+=("$pid")
  if ! wait_serve "$pid" "$out" "$err"; then
    if grep -q "not built in" "$err"; then
      sk "$kind: $(head -1 "$err")"
    else
      ko "$kind: serve starts" "$(head -5 "$err")"
    fi
    kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    return
  fi
  if [ "$kind" = tap ]; then
    # serve made the device (it is there: the first counters came after);
    # the kernel's side of it gets the neighbour addresses.
    local i
    for i in $(seq 1 50); do ip -n "$A" link show "$IFA" >/dev/null 2>&1 && break; sleep 0.1; done
    if ! ip -n "$A" link show "$IFA" >/dev/null 2>&1; then ko "$kind: serve makes $IFA"; return; fi
    ip -n "$A" link set "$IFA" up
    ip -n "$A" addr add 198.18.0.1/24 dev "$IFA"
    ip -n "$A" addr add 2001:2::1/64 dev "$IFA" nodad
  fi
  ok "$kind: serve runs on $IFA"
  local csum_before; csum_before=$(csum_snapshot "$B")

  # 1. Ping. IPv6: serve's address is tentative until its DAD ends (1 s).
  ping_check "$kind: ping 198.18.0.2" "$B" 4 198.18.0.2
  if [ $have_ping = 1 ]; then
    local t=0
    until ip netns exec "$B" ping -6 -c 1 -W 1 2001:2::2 >/dev/null 2>&1; do
      t=$((t + 1)); [ $t -ge 5 ] && break
    done
  fi
  ping_check "$kind: ping -6 2001:2::2" "$B" 6 2001:2::2

  # 2. UDP echo, every byte checked.
  udp_check "$kind: UDP echo IPv4" "$B" --dst 198.18.0.2 --count 10000 --window 32 --sizes "$V4_SIZES"
  udp_check "$kind: UDP echo IPv6" "$B" -6 --dst 2001:2::2 --count 2000 --window 32 --sizes "$V6_SIZES"

  # Serve's MAC, as the kernel learnt it.
  local mac
  mac=$(ip -n "$B" neigh show 198.18.0.2 dev "$IFB" | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2)
  [ -n "$mac" ] || mac=$(ip -n "$B" neigh show 2001:2::2 dev "$IFB" | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2)
  if [ -z "$mac" ]; then
    ko "$kind: serve's MAC in the kernel's neighbour table" "$(ip -n "$B" neigh)"
  else
    note "serve's MAC (the kernel's neighbour table): $mac"
  fi

  # 4. Malformed frames, and who answers ARP/NDP.
  if [ $have_scapy = 0 ]; then
    sk "$kind: malformed frames: python3 scapy is not installed"
  elif [ -z "$mac" ]; then
    ko "$kind: malformed frames: serve's MAC is unknown"
  else
    local line res
    res=$(ip netns exec "$B" timeout 60 python3 "$HERE/malformed.py" --iface "$IFB" --serve-mac "$mac" --probe 2>&1)
    echo "$res" | grep -q '^RESULT' || ko "$kind: ARP/NDP probe ran" "$res"
    while IFS= read -r line; do
      case "$line" in
        "RESULT ok "*) ok "$kind: ${line#RESULT ok }" ;;
        "RESULT fail "*) ko "$kind: ${line#RESULT fail }" ;;
      esac
    done <<<"$res"
    res=$(ip netns exec "$B" timeout 90 python3 "$HERE/malformed.py" --iface "$IFB" --serve-mac "$mac" --stats "$out" 2>&1)
    echo "$res" | grep -q '^RESULT' || ko "$kind: malformed frames sent" "$res"
    local bad=0
    while IFS= read -r line; do
      case "$line" in
        "RESULT ok "*) ok "$kind: ${line#RESULT ok }" ;;
        "RESULT fail "*) ko "$kind: ${line#RESULT fail }"; bad=1 ;;
      esac
    done <<<"$res"
    # The per-counter table when something differs.
    [ $bad = 1 ] && echo "$res" | grep -v '^RESULT' | sed 's/^/    /'
    ping_check "$kind: ping 198.18.0.2 still answers after them" "$B" 4 198.18.0.2
  fi

  # 3. The kernel's checksum error counters (its receive path verified
  #    everything serve sent it).
  local csum_after; csum_after=$(csum_snapshot "$B")
  if [ "$csum_before" = "$csum_after" ]; then
    ok "$kind: the kernel counts no checksum errors ($(echo $csum_after | tr ' ' ','))"
  else
    ko "$kind: the kernel counts no checksum errors" "before:$csum_before"$'\n'"after: $csum_after"
  fi
  if [ "$kind" != tap ]; then
    local a_after="$(snmp "$A" Ip OutRequests) $(snmp "$A" Icmp OutMsgs) $(snmp "$A" "" Ip6OutRequests)"
    if [ "$a_before" = "$a_after" ]; then
      ok "$kind: the kernel in A sent nothing (Ip OutRequests, Icmp OutMsgs, Ip6OutRequests unchanged)"
    else
      ko "$kind: the kernel in A sent nothing" "before: $a_before, after: $a_after"
    fi
  fi

  # 2b. The kernel's default checksum offload: partial checksums.
  if [ "$kind" = afpacket ] && [ $have_ethtool = 1 ]; then
    local c0 c1
    c0=$(serve_ctr "$out" UDP_IN_CSUM_ERRORS)
    ip netns exec "$B" ethtool -K "$IFB" tx on >/dev/null 2>&1
    udp_check "$kind: UDP echo IPv4 with the kernel's tx checksum offload on" "$B" --dst 198.18.0.2 \
      --count 300 --window 32 --sizes 0,1,64,512,1472,1473,3000 --timeout 0.5 --retries 0 --deadline 20
    udp_check "$kind: UDP echo IPv6 with the kernel's tx checksum offload on" "$B" -6 --dst 2001:2::2 \
      --count 300 --window 32 --sizes 0,1,64,512,1452,1453,3000 --timeout 0.5 --retries 0 --deadline 20
    ip netns exec "$B" ethtool -K "$IFB" tx off >/dev/null 2>&1
    sleep 1.1
    c1=$(serve_ctr "$out" UDP_IN_CSUM_ERRORS)
    [ "$c1" != "$c0" ] && note "meanwhile serve's UDP_IN_CSUM_ERRORS grew by $((c1 - c0)): the kernel's partial checksums (TP_STATUS_CSUMNOTREADY) taken for bad ones"
  elif [ "$kind" = afxdp ]; then
    sk "$kind: UDP with the kernel's tx checksum offload on: AF_XDP gets no checksum status, so a partial checksum cannot be told from a bad one (the exchanges above ran with tx offload off)"
  fi

  # 5. Stop: exit 0, every buffer back, a clean pcap.
  kill -INT "$pid"
  local rc=124 i
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    ko "$kind: serve stops at SIGINT within 10 s"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid"; rc=$?
  if [ $rc = 0 ] && grep -q '"event": "exit"' "$out" && ! grep -qi "still in use" "$err"; then
    ok "$kind: serve exits 0 at SIGINT with every buffer back (no 'buffers still in use')"
  else
    ko "$kind: serve exits 0 at SIGINT with every buffer back" "exit $rc; stderr: $(head -5 "$err")"
  fi
  [ -s "$err" ] && note "serve's stderr: $(head -3 "$err")"
  # Its final counters: nothing dropped for want of room, every datagram
  # received echoed.
  local final; final=$(grep '"event": "exit"' "$out" | tail -1)
  local verdict
  verdict=$(echo "$final" | python3 -c '
import json, sys
try:
    c = json.loads(sys.stdin.read())["counters"]
except Exception:
    print("no exit counters"); sys.exit(1)
zero = "ETH_OUT_DROPS NO_BUFFERS NEIGH_QUEUE_DROPS NEIGH_UNRESOLVED_DROPS IP_OUT_DISCARDS IP6_OUT_DISCARDS IP_FRAG_FAILS IP6_FRAG_FAILS UDP_RCVBUF_ERRORS UDP_OUT_ERRORS".split()
bad = ["%s=%d" % (k, c[k]) for k in zero if c.get(k, 0)]
i, o = c.get("UDP_IN_DATAGRAMS", 0), c.get("UDP_OUT_DATAGRAMS", 0)
if i != o:
    bad.append("UDP_IN_DATAGRAMS=%d but UDP_OUT_DATAGRAMS=%d" % (i, o))
print("; ".join(bad) if bad else "%d datagrams in, %d out; no drops" % (i, o))
sys.exit(1 if bad else 0)')
  if [ $? = 0 ]; then ok "$kind: serve's final counters: $verdict"
  else ko "$kind: serve's final counters: every datagram echoed, nothing dropped for want of room" "$verdict"; fi

  if [ $have_tshark = 0 ]; then
    sk "$kind: pcap check: tshark is not installed"
  elif [ -z "$mac" ]; then
    ko "$kind: pcap check: serve's MAC is unknown"
  else
    local topt=(-o ip.check_checksum:TRUE -o udp.check_checksum:TRUE -o tcp.check_checksum:TRUE)
    local flt='_ws.malformed || _ws.expert.severity >= warning'
    local n_serve n_bad n_ours terr
    n_serve=$(timeout 120 tshark -r "$pcap" -Y "eth.src == $mac" 2>"$tmp/tshark.err" | wc -l)
    terr=$(grep -v "^Running as user" "$tmp/tshark.err")
    n_bad=$(timeout 120 tshark -r "$pcap" "${topt[@]}" -Y "eth.src == $mac && ($flt)" 2>/dev/null | wc -l)
    # Our own malformed frames are in the pcap too: tshark flags them,
    # which shows the filter works.
    n_ours=$(timeout 120 tshark -r "$pcap" "${topt[@]}" -Y "eth.src != $mac && ($flt)" 2>/dev/null | wc -l)
    if [ -z "$terr" ] && [ "$n_serve" -gt 0 ] && [ "$n_bad" = 0 ]; then
      ok "$kind: tshark finds no malformed frame or warning among serve's $n_serve frames (it flags $n_ours of the frames sent to serve)"
    else
      ko "$kind: tshark finds no malformed frame or warning among serve's frames" \
        "$n_bad of $n_serve flagged; $terr"$'\n'"$(tshark -r "$pcap" "${topt[@]}" -Y "eth.src == $mac && ($flt)" \
          -T fields -e frame.number -e _ws.col.Info -e _ws.expert.message 2>/dev/null | head -10)"
    fi
  fi
  [ "${HP_KEEP:-0}" = 1 ] || rm -f "$pcap"
  for n in "$A" "$B"; do ip netns del "$n" 2>/dev/null; done
  note "$kind took $((SECONDS - t0)) s"
}

for kind in "${KINDS[@]}"; do
  interop_kind_skipped "$kind" && continue
  case "$kind" in
    afxdp|afpacket|tap) run_kind "$kind" ;;
    *) ko "unknown link kind '$kind' (afxdp, afpacket or tap)" ;;
  esac
done
if [ "${HP_KEEP:-0}" = 1 ] || [ "$fail" -gt 0 ]; then
  keep=1; echo "      logs kept in $tmp"
fi
summary
[ "$fail" -eq 0 ]
