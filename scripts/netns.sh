#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Make (up) or remove (down) two network namespaces joined by a veth pair, for tests and benchmarks.
#
# usage: scripts/netns.sh up|down|status [NAME]
#   NAME (default "hp") gives namespaces NAME-a and NAME-b with interfaces
#   NAME-va and NAME-vb (veth), up, addressed from the benchmarking ranges:
#     NAME-a: 198.18.0.1/24  2001:2::1/64      NAME-b: 198.18.0.2/24  2001:2::2/64
#   Then, for example:
#     ip netns exec hp-a hotpath gen --link afxdp --iface hp-va txonly
#     ip netns exec hp-b ping 198.18.0.1
# Needs root. Nothing touches the machine's own interfaces. `down` removes both
# namespaces (the veth pair goes with them). If `up` fails halfway, what it
# made is removed again.
set -eu
cmd=${1:-}
name=${2:-hp}
a=$name-a; b=$name-b; va=$name-va; vb=$name-vb

die() { echo "netns.sh: $*" >&2; exit 1; }
[ ${#va} -le 15 ] || die "name '$name' is too long (interface names have at most 15 characters)"

down() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
}

case "$cmd" in
up)
  [ "$(id -u)" = 0 ] || die "needs root (CAP_SYS_ADMIN to make namespaces)"
  command -v ip >/dev/null || die "needs iproute2 (apt-get install iproute2)"
  if ip netns list | grep -qw "$a"; then die "$a already exists ('$0 down $name' removes it)"; fi
  trap 'down; echo "netns.sh: setting up failed; removed $a and $b" >&2' ERR
  ip netns add "$a"
  ip netns add "$b"
  ip link add "$va" netns "$a" type veth peer name "$vb" netns "$b"
  i=1
  for side in "$a:$va" "$b:$vb"; do
    ns=${side%%:*}; ifn=${side#*:}
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$ifn" up
    ip -n "$ns" addr add "198.18.0.$i/24" dev "$ifn"
    ip -n "$ns" addr add "2001:2::$i/64" dev "$ifn" nodad
    i=$((i + 1))
  done
  trap - ERR
  echo "netns.sh: $a ($va 198.18.0.1 2001:2::1) <-> $b ($vb 198.18.0.2 2001:2::2)"
  ;;
down)
  [ "$(id -u)" = 0 ] || die "needs root"
  down
  echo "netns.sh: removed $a and $b"
  ;;
status)
  for ns in "$a" "$b"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then ip -n "$ns" -br addr; else echo "$ns: absent"; fi
  done
  ;;
*)
  echo "usage: $0 up|down|status [NAME]" >&2
  exit 2
  ;;
esac
