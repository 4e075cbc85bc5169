# SPDX-License-Identifier: BSD-3-Clause
# What the hostile-traffic suites share: two namespaces per link kind, `hotpath serve` in one, the attacker (the kernel, nmap, hping3, scapy) in the other, serve's counters, RSS and exit line.
# Sourced by tests/hostile/*.sh and scripts/soak.sh (its name does not end in .sh).
#
# Topology per link kind (afpacket, afxdp), as tests/interop/tcp.sh:
#   namespace A (hph-PID-K-a): serve on veth end IFA, 198.18.0.2/24 and
#     2001:2::2/64 (the kernel in A has no address there and IPv6 off);
#   namespace B (hph-PID-K-b): the attacker and the real clients: the
#     kernel on IFB, 198.18.0.1/24 and 2001:2::1/64, plus 198.18.0.3/24 (a
#     second source for the IP ID check). 198.18.0.77 belongs to nobody.
# serve runs `--udp-echo 7 --tcp-echo 7 --tcp-discard 9 --tcp-source 19
# --json-stats`: open TCP ports 7, 9, 19; closed 22, 80; UDP 7 open.
# tx checksum offload is off on IFB (ethtool), since AF_XDP carries no
# checksum status (tests/interop/harness.bash, interop_kind_skipped).

source tests/interop/harness.bash

HP=${HP_BIN:-build/hotpath}
PY=tests/hostile/hostile.py
SERVE4=198.18.0.2 SERVE6=2001:2::2 PEER4=198.18.0.1 PEER4B=198.18.0.3 NOBODY4=198.18.0.77
have_ethtool=1; command -v ethtool >/dev/null 2>&1 || have_ethtool=0

# hostile_require NAME TOOL...: root, ip, python3 and scapy, the binary,
# and each TOOL (else one skip line, the summary, exit 0).
hostile_require() {
  local name=$1; shift
  interop_require "$name" "needs network namespaces and raw sockets"
  if ! python3 -c 'import scapy.all' >/dev/null 2>&1; then
    sk "$name: python3 has no scapy (scripts/deps.sh check installs it)"; summary; exit 0
  fi
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || { sk "$name: $t is not installed (scripts/deps.sh check installs it)"; summary; exit 0; }
  done
  if ! "$HP" serve --help 2>&1 | grep -q -- --tcp-echo; then
    sk "$name: $HP has no 'serve --tcp-echo'"; summary; exit 0
  fi
}

# hostile_setup TAG: the temporary directory, traps, and the removal of
# namespaces left by an earlier run of any hostile suite that died.
hostile_setup() {
  tmp=$(mktemp -d "/tmp/hph-$1.XXXXXX")
  PIDS=() NSS=() keep=0
  trap interop_cleanup EXIT
  trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
  trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM
  local n p
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hph-[0-9]+-[a-z]+-[ab]$'); do
    p=${n#hph-}; p=${p%%-*}
    kill -0 "$p" 2>/dev/null || ip netns del "$n" 2>/dev/null
  done
}

# The link kinds to run: the arguments, else afpacket and afxdp.
hostile_kinds() {
  if [ $# -gt 0 ]; then KINDS=("$@"); else KINDS=(afpacket afxdp); fi
}

KIND="" A="" B="" IFA="" IFB="" SERVE_MAC=""

# ns_up KIND: the two namespaces and the veth pair (0), or 1.
ns_up() {
  local k
  case "$1" in afxdp) k=x ;; afpacket) k=p ;; *) return 1 ;; esac
  KIND=$1 A=hph-$$-$k-a B=hph-$$-$k-b IFA=hph$$${k}a IFB=hph$$${k}b
  ip netns add "$A" && NSS+=("$A") || return 1
  ip netns add "$B" && NSS+=("$B") || return 1
  ip link add "$IFA" netns "$A" type veth peer name "$IFB" netns "$B" || return 1
  ip -n "$A" link set lo up; ip -n "$B" link set lo up
  ip netns exec "$A" sysctl -qw "net.ipv6.conf.$IFA.disable_ipv6=1"
  ip -n "$A" link set "$IFA" up
  ip -n "$B" link set "$IFB" up
  ip -n "$B" addr add "$PEER4/24" dev "$IFB"
  ip -n "$B" addr add "$PEER4B/24" dev "$IFB"
  ip -n "$B" addr add 2001:2::1/64 dev "$IFB" nodad
  # The attacker's raw frames and the kernel's segments alike must carry
  # whole checksums (AF_XDP cannot tell partial ones from bad ones).
  if [ $have_ethtool = 1 ]; then
    ip netns exec "$B" ethtool -K "$IFB" tx off >/dev/null 2>&1 || note "ethtool -K $IFB tx off failed"
  fi
  SERVE_MAC=$(ip -n "$A" link show "$IFA" | awk '/link\/ether/ {print $2}')
  return 0
}

ns_down() {
  local n
  for n in "$A" "$B"; do ip netns del "$n" 2>/dev/null; done
}

# In namespace B.
inb() { ip netns exec "$B" "$@"; }

SERVE_PID="" SERVE_OUT="" SERVE_ERR=""

# serve_start TAG [serve options...]: serve in A; 0 once it answers ping
# and ping6, 1 (a failure reported) otherwise.
serve_start() {
  local tag=$1; shift
  SERVE_OUT=$tmp/$KIND-$tag.out SERVE_ERR=$tmp/$KIND-$tag.err
  ip netns exec "$A" "$HP" serve --link "$KIND" --iface "$IFA" --ip "$SERVE4/24" --ip6 "$SERVE6/64" \
    --udp-echo 7 --tcp-echo 7 --tcp-discard 9 --tcp-source 19 --json-stats "$@" \
    >"$SERVE_OUT" 2>"$SERVE_ERR" &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  local i
  for i in $(seq 1 50); do
    kill -0 "$SERVE_PID" 2>/dev/null || break
    grep -q '"event": "tick"' "$SERVE_OUT" 2>/dev/null && break
    sleep 0.1
  done
  if ! grep -q '"event": "tick"' "$SERVE_OUT" 2>/dev/null; then
    ko "$KIND ($tag): serve starts" "$(head -5 "$SERVE_ERR")"; return 1
  fi
  # IPv6 answers once DAD is over (1 s).
  for i in 1 2 3 4 5 6; do
    inb ping -6 -c 1 -W 1 "$SERVE6" >/dev/null 2>&1 && break
  done
  if ! inb ping -c 1 -W 1 "$SERVE4" >/dev/null 2>&1; then
    ko "$KIND ($tag): serve answers ping after starting"; return 1
  fi
  return 0
}

# serve_alive LABEL: serve still runs and answers ping, ping6 and a TCP
# echo (one check line).
serve_alive() {
  local why=""
  kill -0 "$SERVE_PID" 2>/dev/null || why="serve is gone: $(tail -3 "$SERVE_ERR")"
  [ -z "$why" ] && ! inb ping -c 2 -i 0.2 -W 1 "$SERVE4" >/dev/null 2>&1 && why="no ping reply"
  [ -z "$why" ] && ! inb ping -6 -c 2 -i 0.2 -W 1 "$SERVE6" >/dev/null 2>&1 && why="no ping6 reply"
  if [ -z "$why" ]; then
    local out
    out=$(inb timeout 20 python3 "$PY" clients --to "$SERVE4" --port 7 --conns 2 --bytes 4096 2>&1) ||
      why="TCP echo failed: $out"
  fi
  if [ -z "$why" ]; then ok "$KIND: $1: serve still answers ping, ping6 and TCP echo"
  else ko "$KIND: $1: serve still answers ping, ping6 and TCP echo" "$why"; fi
}

# serve's resident memory in KiB.
serve_rss() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVE_PID/status" 2>/dev/null || echo 0; }

# The counters of serve's last JSON line, as NAME=value lines.
serve_counters() {
  grep '^{' "$SERVE_OUT" | grep -v '"event": "buffers"' | tail -1 | python3 -c '
import json, sys
d = json.loads(sys.stdin.read() or "{}")
for k, v in sorted(d.get("counters", {}).items()):
    print(f"{k}={v}")'
}

# Wait for serve's next counters line (they come each second).
serve_tick() {
  local n i
  n=$(grep -c '"event": "tick"' "$SERVE_OUT")
  for i in $(seq 1 30); do
    sleep 0.1
    [ "$(grep -c '"event": "tick"' "$SERVE_OUT")" -gt "$n" ] && return 0
  done
  return 1
}

# counters_moved BEFORE-FILE AFTER-FILE: each counter that moved, "NAME +delta",
# for the log (every one of them has its name: the stack counts each drop
# by reason).
counters_moved() {
  python3 - "$1" "$2" <<'EOF'
import sys
def load(p):
    d = {}
    for line in open(p):
        k, _, v = line.strip().partition("=")
        if k:
            d[k] = int(v)
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in sorted(b):
    if b[k] != a.get(k, 0):
        print(f"{k} +{b[k] - a.get(k, 0)}")
EOF
}

# serve_stop TAG: SIGINT; one check that it exits 0 and its exit line says
# every buffer came back.
serve_stop() {
  local tag=$1 rc i
  kill -INT "$SERVE_PID" 2>/dev/null
  for i in $(seq 1 100); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$SERVE_PID" 2>/dev/null; then
    ko "$KIND ($tag): serve stops at SIGINT within 10 s"
    kill -KILL "$SERVE_PID" 2>/dev/null
  fi
  wait "$SERVE_PID"; rc=$?
  if [ $rc = 0 ] && grep -q '"all_back": true' "$SERVE_OUT" && ! grep -qi "still in use" "$SERVE_ERR"; then
    ok "$KIND ($tag): serve exits 0 and its exit line says every buffer came back"
  else
    ko "$KIND ($tag): serve exits 0 and its exit line says every buffer came back" \
      "exit $rc; last line: $(tail -1 "$SERVE_OUT"); stderr: $(head -3 "$SERVE_ERR")"
  fi
}
