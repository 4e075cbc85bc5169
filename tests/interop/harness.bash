# SPDX-License-Identifier: BSD-3-Clause
# What the root interop suites share: PASS/FAIL/SKIP counting and the checks that decide whether a suite can run here.
# Sourced by tests/interop/*.sh (its name does not end in .sh, so check.sh does not run it).

pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "PASS  $1"; }
ko() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/      /'; return 0; }
sk() { skip=$((skip + 1)); echo "SKIP  $1"; }
note() { echo "      $*"; }
summary() { echo "$pass passed, $fail failed, $skip skipped"; }

# interop_require NAME WHY-ROOT: the suite NAME can run here: root (else a
# skip saying WHY-ROOT, exit 0), ip and python3 (else a skip, exit 0), and
# the binary $HP built (else a failure, exit 1).
interop_require() {
  if [ "$(id -u)" != 0 ]; then
    sk "$1: not root ($2)"; summary; exit 0
  fi
  local t
  for t in ip python3; do
    command -v "$t" >/dev/null 2>&1 || { sk "$1: $t is not installed"; summary; exit 0; }
  done
  if [ ! -x "$HP" ]; then
    ko "$1: $HP is not built (make build)"; summary; exit 1
  fi
}

# interop_kind_skipped KIND: 0 (after a skip line) when the link KIND cannot
# exchange with the kernel's TCP/UDP here. A veth leaves the kernel's
# checksums partial while its tx offload is on, and AF_XDP gives no checksum
# status to tell those from bad ones: without ethtool to turn the offload off
# every segment would be (rightly) dropped. afpacket reads the status from its
# ring, and a tap without offloads gets whole checksums.
interop_kind_skipped() {
  [ "$1" = afxdp ] && ! command -v ethtool >/dev/null 2>&1 || return 1
  sk "afxdp: ethtool is not installed (apt-get install ethtool): the kernel's tx checksum offload cannot be turned off, and AF_XDP cannot tell its partial checksums from bad ones"
}

# The EXIT trap of a suite that starts processes and namespaces: stop every
# process in PIDS (TERM, then KILL after 2 s), delete every namespace in
# NSS, and remove the directory tmp, or with keep=1 keep it (its pcaps only
# with HP_KEEP=1).
interop_cleanup() {
  local p n
  for p in "${PIDS[@]}"; do
    kill -0 "$p" 2>/dev/null || continue
    kill -TERM "$p" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$p" 2>/dev/null
  done
  for n in "${NSS[@]}"; do ip netns del "$n" 2>/dev/null; done
  if [ "$keep" = 1 ]; then
    [ "${HP_KEEP:-0}" = 1 ] || rm -f "$tmp"/*.pcap
  else
    rm -rf "$tmp"
  fi
}
