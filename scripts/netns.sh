#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Make (up) or remove (down) two network namespaces joined by a veth pair, for tests and benchmarks.
#
# usage: scripts/netns.sh up|up3|down|status [NAME]
#   NAME (default "hp") gives namespaces NAME-a and NAME-b with interfaces
#   NAME-va and NAME-vb (veth), up, addressed from the benchmarking ranges:
#     NAME-a: 198.18.0.1/24  2001:2::1/64      NAME-b: 198.18.0.2/24  2001:2::2/64
#   up3 puts a bridge namespace between them, for `hotpath impair`:
#     NAME-a (NAME-va) <-> (NAME-ba) NAME-br (NAME-bb) <-> (NAME-vb) NAME-b
#   with the same addresses on NAME-va and NAME-vb (one Ethernet segment), and
#   NAME-ba, NAME-bb up in NAME-br without addresses, IPv6 off, so that the
#   kernel there neither answers nor forwards: the bridge is hotpath's.
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

br=$name-br; ba=$name-ba; bb=$name-bb

down() {
  ip netns del "$a" 2>/dev/null || true
  ip netns del "$b" 2>/dev/null || true
  ip netns del "$br" 2>/dev/null || true
}

# Address the two end namespaces' interfaces.
address_ends() {
  local i=1 side ns ifn
  for side in "$a:$va" "$b:$vb"; do
    ns=${side%%:*}; ifn=${side#*:}
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$ifn" up
    ip -n "$ns" addr add "198.18.0.$i/24" dev "$ifn"
    ip -n "$ns" addr add "2001:2::$i/64" dev "$ifn" nodad
    i=$((i + 1))
  done
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
  address_ends
  trap - ERR
  echo "netns.sh: $a ($va 198.18.0.1 2001:2::1) <-> $b ($vb 198.18.0.2 2001:2::2)"
  ;;
up3)
  [ "$(id -u)" = 0 ] || die "needs root (CAP_SYS_ADMIN to make namespaces)"
  command -v ip >/dev/null || die "needs iproute2 (apt-get install iproute2)"
  if ip netns list | grep -qw "$a"; then die "$a already exists ('$0 down $name' removes it)"; fi
  trap 'down; echo "netns.sh: setting up failed; removed $a, $br and $b" >&2' ERR
  ip netns add "$a"
  ip netns add "$br"
  ip netns add "$b"
  ip link add "$va" netns "$a" type veth peer name "$ba" netns "$br"
  ip link add "$vb" netns "$b" type veth peer name "$bb" netns "$br"
  for ifn in "$ba" "$bb"; do
    ip netns exec "$br" sysctl -qw "net.ipv6.conf.$ifn.disable_ipv6=1"
    ip -n "$br" link set "$ifn" up
  done
  ip -n "$br" link set lo up
  address_ends
  # Frames cross the bridge as they are: the ends must hand over whole
  # frames with whole checksums (no TSO/GSO super-frames, no partial
  # checksums left for a NIC that is not there), and the bridge's side must
  # not merge them (GRO).
  if command -v ethtool >/dev/null; then
    ip netns exec "$a" ethtool -K "$va" tx off tso off gso off gro off >/dev/null 2>&1 || true
    ip netns exec "$b" ethtool -K "$vb" tx off tso off gso off gro off >/dev/null 2>&1 || true
    for ifn in "$ba" "$bb"; do ip netns exec "$br" ethtool -K "$ifn" tx off tso off gso off gro off >/dev/null 2>&1 || true; done
  else
    echo "netns.sh: ethtool is missing: offloads stay on, and TCP across the bridge may fail (apt-get install ethtool)" >&2
  fi
  trap - ERR
  echo "netns.sh: $a ($va 198.18.0.1 2001:2::1) <-> $br ($ba | $bb) <-> $b ($vb 198.18.0.2 2001:2::2)"
  ;;
down)
  [ "$(id -u)" = 0 ] || die "needs root"
  down
  echo "netns.sh: removed $a, $b (and $br if it was there)"
  ;;
status)
  for ns in "$a" "$b" "$br"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then ip -n "$ns" -br addr; else echo "$ns: absent"; fi
  done
  ;;
*)
  echo "usage: $0 up|up3|down|status [NAME]" >&2
  exit 2
  ;;
esac
