# SPDX-License-Identifier: BSD-3-Clause
# What the tests/apps suites share: namespaces per link kind, running a program on hotpath (hotpath run) or on the kernel, waiting for ports, and checking that every hotpath run ended with no buffer in use.
# Sourced by tests/apps/*.sh (its name does not end in .sh, so check.sh does not run it).
#
# Topology (addresses from 198.18.0.0/15 and 2001:2::/48 only):
#   afxdp, afpacket: namespace HNS holds veth end IFA, hotpath's: no kernel
#     address there, the kernel's IPv6 off on it; namespace KNS holds IFB,
#     the kernel's 198.18.0.1/24 and 2001:2::1/64. hotpath is 198.18.0.2/24
#     and 2001:2::2/64. With BOTH=1 (both ends on hotpath) IFB is a second
#     hotpath stack's (198.18.0.1, 2001:2::1) and the kernel has no address
#     in either namespace.
#   tap: one namespace (HNS = KNS): a persistent tap device IFA holds the
#     kernel's 198.18.0.1 / 2001:2::1, hotpath attaches to it as .2 / ::2.
# The kernel's tx checksum offload is off on its end (ethtool): AF_XDP
# carries no checksum status (see tests/interop/harness.bash).

source tests/interop/harness.bash

HP=${HP_BIN:-build/hotpath}
FULL=${HP_APPS_FULL:-0}
PFX=hpx$$
HOT4=198.18.0.2 HOT6=2001:2::2 KERN4=198.18.0.1 KERN6=2001:2::1
KIND="" HNS="" KNS="" IFA="" IFB="" BOTH=0

# apps_require SUITE TOOL...: root, ip, python3, hotpath built (else skip or
# fail, as interop_require), libhotpath-posix.so beside it, and each tool.
apps_require() {
  local suite=$1; shift
  interop_require "$suite" "needs network namespaces"
  if [ ! -e "$(dirname "$HP")/libhotpath-posix.so" ]; then
    ko "$suite: $(dirname "$HP")/libhotpath-posix.so is not built (make build)"; summary; exit 1
  fi
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || { sk "$suite: $t is not installed (scripts/deps.sh check installs it)"; summary; exit 0; }
  done
}

# Namespaces of an earlier run of this suite that died without cleaning up.
apps_reap_stale() {
  local n p
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hpx-[0-9]+-'); do
    p=${n#hpx-}; p=${p%%-*}
    kill -0 "$p" 2>/dev/null || ip netns del "$n" 2>/dev/null
  done
}

# apps_ns_up KIND [both]: the namespaces of one link kind.
apps_ns_up() {
  KIND=$1; BOTH=0; [ "${2:-}" = both ] && BOTH=1
  local k; case "$KIND" in afxdp) k=x ;; afpacket) k=p ;; *) k=t ;; esac
  if [ "$KIND" = tap ] && [ $BOTH = 1 ]; then
    # Two taps on a bridge, one per stack; the kernel has no address.
    HNS=hpx-$$-t; KNS=$HNS; IFA=${PFX}ta; IFB=${PFX}tb
    ip netns add "$HNS" && NSS+=("$HNS") || return 1
    ip -n "$HNS" link set lo up
    ip -n "$HNS" link add "${PFX}br" type bridge || return 1
    ip netns exec "$HNS" sysctl -qw "net.ipv6.conf.${PFX}br.disable_ipv6=1"
    local t
    for t in "$IFA" "$IFB"; do
      ip -n "$HNS" tuntap add dev "$t" mode tap || return 1
      ip netns exec "$HNS" sysctl -qw "net.ipv6.conf.$t.disable_ipv6=1"
      ip -n "$HNS" link set "$t" master "${PFX}br" up
    done
    ip -n "$HNS" link set "${PFX}br" up
    return 0
  elif [ "$KIND" = tap ]; then
    HNS=hpx-$$-t; KNS=$HNS; IFA=${PFX}t; IFB=$IFA
    ip netns add "$HNS" && NSS+=("$HNS") || return 1
    ip -n "$HNS" link set lo up
    ip -n "$HNS" tuntap add dev "$IFA" mode tap || return 1
    ip -n "$HNS" link set "$IFA" up
    ip -n "$HNS" addr add $KERN4/24 dev "$IFA"
    ip -n "$HNS" addr add $KERN6/64 dev "$IFA" nodad
  else
    HNS=hpx-$$-$k-a; KNS=hpx-$$-$k-b; IFA=${PFX}${k}a; IFB=${PFX}${k}b
    ip netns add "$HNS" && NSS+=("$HNS") || return 1
    ip netns add "$KNS" && NSS+=("$KNS") || return 1
    ip link add "$IFA" netns "$HNS" type veth peer name "$IFB" netns "$KNS" || return 1
    ip -n "$HNS" link set lo up; ip -n "$KNS" link set lo up
    ip netns exec "$HNS" sysctl -qw "net.ipv6.conf.$IFA.disable_ipv6=1"
    [ $BOTH = 1 ] && ip netns exec "$KNS" sysctl -qw "net.ipv6.conf.$IFB.disable_ipv6=1"
    ip -n "$HNS" link set "$IFA" up; ip -n "$KNS" link set "$IFB" up
    if [ $BOTH = 0 ]; then
      ip -n "$KNS" addr add $KERN4/24 dev "$IFB"
      ip -n "$KNS" addr add $KERN6/64 dev "$IFB" nodad
    fi
  fi
  command -v ethtool >/dev/null 2>&1 && ip netns exec "$KNS" ethtool -K "$IFB" tx off >/dev/null 2>&1
  return 0
}

apps_ns_down() {
  local n
  for n in "$HNS" "$KNS"; do ip netns del "$n" 2>/dev/null; done
  HNS="" KNS=""
}

# The hotpath run options of side a (HNS, .2) or b (KNS with BOTH=1, .1).
hp_net() { # a|b
  if [ "$1" = b ]; then
    echo "--link $KIND --iface $IFB --ip $KERN4/24 --ip6 $KERN6/64"
  else
    echo "--link $KIND --iface $IFA --ip $HOT4/24 --ip6 $HOT6/64"
  fi
}

# hp_bg TAG SIDE CMD...: a program on hotpath in the background (a server);
# its pid in BG_PID, its output in $tmp/TAG.out and .err.
hp_bg() {
  local tag=$1 side=$2; shift 2
  local ns=$HNS; [ "$side" = b ] && ns=$KNS
  # Emptied here, not by the background shell's redirection: a wait_text
  # right after must not find the last run's lines.
  : >"$tmp/$tag.out"; : >"$tmp/$tag.err"
  # shellcheck disable=SC2046
  ip netns exec "$ns" "$HP" run $(hp_net "$side") --stats -- "$@" >>"$tmp/$tag.out" 2>>"$tmp/$tag.err" &
  BG_PID=$!
  PIDS+=("$BG_PID")
}

# hp_fg TAG SIDE CMD...: a program on hotpath (a client), waited for; its
# exit status. Clients skip duplicate address detection: the link is ours.
hp_fg() {
  local tag=$1 side=$2; shift 2
  local ns=$HNS; [ "$side" = b ] && ns=$KNS
  # shellcheck disable=SC2046
  timeout "${HP_APPS_TIMEOUT:-300}" ip netns exec "$ns" "$HP" run $(hp_net "$side") --no-dad --stats -- "$@" \
    >"$tmp/$tag.out" 2>"$tmp/$tag.err"
}

# k_bg TAG CMD...: a kernel program in KNS, in the background.
k_bg() {
  local tag=$1; shift
  : >"$tmp/$tag.out"; : >"$tmp/$tag.err"
  ip netns exec "$KNS" "$@" >>"$tmp/$tag.out" 2>>"$tmp/$tag.err" &
  BG_PID=$!
  PIDS+=("$BG_PID")
}

# k_fg TAG CMD...: a kernel program in KNS, waited for.
k_fg() {
  local tag=$1; shift
  timeout "${HP_APPS_TIMEOUT:-300}" ip netns exec "$KNS" "$@" >"$tmp/$tag.out" 2>"$tmp/$tag.err"
}

# wait_port NS HOST PORT: until a TCP connection to HOST:PORT from NS
# succeeds (15 s at most; a hotpath server's IPv6 address needs its
# duplicate address detection first).
wait_port() {
  local i
  for i in $(seq 1 75); do
    ip netns exec "$1" timeout 1 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# wait_text FILE REGEX: until FILE has a line matching REGEX (15 s at most):
# for servers that a stray probe connection would disturb (iperf3).
wait_text() {
  local i
  for i in $(seq 1 75); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  return 1
}

# stop_bg PID: SIGTERM, then SIGKILL after 10 s; waits for it.
stop_bg() {
  local p=$1 i
  kill -TERM "$p" 2>/dev/null
  for i in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$p" 2>/dev/null
  wait "$p" 2>/dev/null
}

# buffers_ok TAG WHAT: the hotpath run of TAG reported no buffer in use at
# its exit (hotpath run --stats prints the layer's count).
buffers_ok() {
  if grep -q "^hotpath run: .* 0 buffer(s) in use at exit" "$tmp/$1.err"; then
    ok "$2: no buffer in use at exit"
  else
    ko "$2: buffers at exit" "$(grep -E 'buffer|hotpath' "$tmp/$1.err" | head -3)"
  fi
}

# The address of a family for a side: addr 4|6 hot|kern; url_host wraps IPv6.
addr() { # family side
  case "$1$2" in 4hot) echo $HOT4 ;; 6hot) echo $HOT6 ;; 4kern) echo $KERN4 ;; *) echo $KERN6 ;; esac
}
url_host() { [ "$1" = 6 ] && echo "[$(addr 6 "$2")]" || addr 4 "$2"; }

# The kinds to run: the arguments, or all three.
apps_kinds() {
  if [ $# -gt 0 ]; then echo "$@"; else echo afxdp afpacket tap; fi
}

apps_begin() { # suite-name
  tmp=$(mktemp -d "/tmp/hpx-$1.XXXXXX")
  PIDS=(); NSS=(); keep=${HP_KEEP:-0}
  trap interop_cleanup EXIT
  trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
  trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM
  apps_reap_stale
}
