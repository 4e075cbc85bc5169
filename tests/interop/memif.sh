#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# memif between processes: hotpath to hotpath (gen, serve and connect over TCP and UDP, peers killed with SIGKILL and restarted) and against DPDK's own driver in dpdk-testpmd, in both roles.
#
# usage: tests/interop/memif.sh
# env:   HP_BIN (default build/hotpath), HP_MEMIF_PEER (build/tests/memif_peer),
#        HP_MEMIF_UDP (build/tests/memif_udp), HP_KEEP=1 keeps the logs
#
# No namespace is needed: a memif link is a Unix socket and shared memory.
# Sockets live in a directory made here (/tmp/hpm-memif.*), abstract names
# start with hpm-PID-. Everything but the testpmd part runs unprivileged;
# testpmd (DPDK 22.11 from the distribution, the dpdk-dev and
# librte-net-memif23 packages) runs as root with --no-huge, and is skipped
# with the reason when it is missing or we are not root.
#
#  1. gen txonly -> gen rxdrop, the client in copy and in zero-copy mode.
#  2. serve (memif server) <-> connect (client): TCP echo checked by
#     SHA-256, IPv4 and IPv6, one and four connections; then the roles
#     the other way round.
#  3. UDP: memif_udp's datagrams to serve --udp-echo, each echo byte for
#     byte, SHA-256 of both directions equal, IPv4 and IPv6.
#  4. A peer killed with SIGKILL mid-transfer and started again: the
#     survivor's link goes down and comes back, it carries the new peer's
#     traffic, and it exits with every buffer back (gen both ways round,
#     serve as server and as client under connect).
#  5. testpmd --forward-mode=macswap and io against memif_peer, both
#     roles, zero-copy, chains, a file and an abstract socket, and DPDK's
#     small buffers (bsize=1024: frames chained both ways): every frame
#     comes back swapped (or as it was), byte for byte. The secret, both
#     roles: the same one comes up, another is refused with the reason.
#
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
HP=${HP_BIN:-build/hotpath}
PEER=${HP_MEMIF_PEER:-build/tests/memif_peer}
UDP=${HP_MEMIF_UDP:-build/tests/memif_udp}

source tests/interop/harness.bash

for b in "$HP" "$PEER" "$UDP"; do
  if [ ! -x "$b" ]; then ko "memif: $b is not built (make build)"; summary; exit 1; fi
done
command -v python3 >/dev/null 2>&1 || { sk "memif: python3 is not installed"; summary; exit 0; }

tmp=$(mktemp -d /tmp/hpm-memif.XXXXXX)
PIDS=()
NSS=()
keep=0
# testpmd leaves its run directory (/var/run/dpdk/PREFIX) behind: ours go too.
trap 'keep=${HP_KEEP:-0}; interop_cleanup; rm -rf /var/run/dpdk/hpm-$$-*' EXIT
trap 'ko "interrupted (SIGINT)"; summary; exit 130' INT
trap 'ko "interrupted (SIGTERM)"; summary; exit 143' TERM

n=0
# bg NAME cmd...: start cmd in the background, output in $tmp/NAME.log;
# its PID in $last.
bg() { local name=$1; shift; "$@" >"$tmp/$name.log" 2>&1 & last=$!; PIDS+=("$last"); }
# wait_for FILE PATTERN SECONDS: until FILE matches PATTERN.
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do grep -qE -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
# finish PID [SIGNAL]: stop (SIGINT by default) and return its exit status.
finish() { kill -"${2:-INT}" "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
json_packets() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packets"])' "$1" 2>/dev/null || echo 0; }
sock() { n=$((n + 1)); echo "$tmp/s$n.sock"; }
show() { tail -n "${2:-4}" "$1" 2>/dev/null; }

# ---- 1. gen txonly -> gen rxdrop ------------------------------------------
for zc in "" "--zero-copy"; do
  s=$(sock)
  bg rx$n "$HP" gen rxdrop --link memif --memif-socket "$s" --memif-role server --duration 2 --json
  rx=$last
  "$HP" gen txonly --link memif --memif-socket "$s" $zc --duration 2 --json >"$tmp/tx$n.json" 2>"$tmp/tx$n.err"
  txrc=$?
  rxrc=0; wait "$rx" || rxrc=$?
  grep -h '^{' "$tmp/rx$n.log" >"$tmp/rx$n.json"
  got=$(json_packets "$tmp/rx$n.json")
  sent=$(json_packets "$tmp/tx$n.json")
  if [ $txrc = 0 ] && [ $rxrc = 0 ] && [ "$got" -gt 1000 ] && [ "$sent" -gt 1000 ]; then
    ok "gen txonly -> rxdrop over memif${zc:+ ($zc client)}: $got frames received, $sent sent"
  else
    ko "gen txonly -> rxdrop over memif${zc:+ ($zc client)}" "$(show "$tmp/rx$n.log"; show "$tmp/tx$n.err")"
  fi
done

# ---- 2. serve <-> connect, TCP with SHA-256 ---------------------------------
# serve_up ROLE SOCKET NAME [extra]: start serve on memif and wait until it
# serves (its first line comes after the stack and the listeners are set).
serve_up() {
  bg "$3" "$HP" serve --link memif --memif-socket "$2" --memif-role "$1" --ip 198.18.0.2/24 --ip6 2001:2::2/64 \
    --tcp-echo 7 --udp-echo 7 --duration 120
  serve=$last
  wait_for "$tmp/$3.log" "^serve: memif" 20
}
# connect_ok ROLE SOCKET NAME ARGS...: a connect run that must verify.
connect_ok() {
  local role=$1 s=$2 name=$3; shift 3
  if timeout 120 "$HP" connect --link memif --memif-socket "$s" --memif-role "$role" "$@" >"$tmp/$name.log" 2>&1 \
     && grep -q "verified     yes" "$tmp/$name.log"; then
    ok "$name: $(grep -E 'sha256' "$tmp/$name.log" | sed 's/^ *//; s/  */ /g')"
  else
    ko "$name" "$(show "$tmp/$name.log" 6)"
  fi
}
s=$(sock)
if serve_up server "$s" serve1; then
  connect_ok client "$s" "TCP echo 64 MiB, IPv4, serve as memif server" --ip 198.18.0.1/24 --to 198.18.0.2:7 --bytes 64Mi
  connect_ok client "$s" "TCP echo 4 x 16 MiB, IPv6, serve as memif server" --ip6 2001:2::1/64 --to '[2001:2::2]:7' \
    --bytes 16Mi --conns 4
  # ---- 3. UDP ----
  for fam in 4 6; do
    if timeout 60 "$UDP" --socket "$s" --family $fam --count 5000 >"$tmp/udp$fam.log" 2>&1 \
       && [ "$(grep -c "sha256 sent $(grep -o 'sha256 echoed [0-9a-f]*' "$tmp/udp$fam.log" | cut -d' ' -f3)" "$tmp/udp$fam.log")" = 1 ]; then
      ok "UDP echo of 5000 datagrams, IPv$fam: $(head -1 "$tmp/udp$fam.log" | sed 's/^memif_udp: //'), SHA-256 equal"
    else
      ko "UDP echo over memif, IPv$fam" "$(show "$tmp/udp$fam.log")"
    fi
  done
  if finish "$serve"; then ok "serve (memif server) exits cleanly: every buffer back"; else ko "serve exit" "$(show "$tmp/serve1.log")"; fi
else
  ko "serve on memif did not start" "$(show "$tmp/serve1.log")"; finish "$serve"
fi
s=$(sock)
if serve_up client "$s" serve2; then
  connect_ok server "$s" "TCP echo 16 MiB, IPv4, serve as memif client (connect the server)" --ip 198.18.0.1/24 \
    --to 198.18.0.2:7 --bytes 16Mi
  if finish "$serve"; then ok "serve (memif client) exits cleanly"; else ko "serve (memif client) exit" "$(show "$tmp/serve2.log")"; fi
else
  ko "serve as memif client did not start" "$(show "$tmp/serve2.log")"; finish "$serve"
fi

# ---- 4. SIGKILL and restart ---------------------------------------------------
# memif_line LOG: gen's end-of-run memif counters.
memif_line() { grep -h "hotpath gen: memif" "$1" | tail -1; }
s=$(sock)
bg kr1 "$HP" gen rxdrop --link memif --memif-socket "$s" --memif-role server --duration 6
rx=$last
bg kt1 "$HP" gen txonly --link memif --memif-socket "$s" --duration 30
sleep 2; kill -KILL "$last"; wait "$last" 2>/dev/null
bg kt2 "$HP" gen txonly --link memif --memif-socket "$s" --duration 2
tx2=$last
wait "$tx2"; tx2rc=$?
if wait "$rx" && [ $tx2rc = 0 ] && memif_line "$tmp/kr1.log" | grep -q "up 2 times"; then
  ok "gen rxdrop (server) survives its client's SIGKILL and takes the next: $(memif_line "$tmp/kr1.log" | grep -o 'up [0-9]* times, down [0-9]*')"
else
  ko "gen rxdrop survives its client's SIGKILL" "$(show "$tmp/kr1.log"; show "$tmp/kt2.log")"
fi
s=$(sock)
bg ks1 "$HP" gen rxdrop --link memif --memif-socket "$s" --memif-role server --duration 30
srv=$last
bg kc1 "$HP" gen txonly --link memif --memif-socket "$s" --duration 6
cli=$last
sleep 2; kill -KILL "$srv"; wait "$srv" 2>/dev/null
sleep 0.5
"$HP" gen rxdrop --link memif --memif-socket "$s" --memif-role server --duration 2 --json >"$tmp/ks2.json" 2>"$tmp/ks2.err"
ks2=$?
got=$(json_packets "$tmp/ks2.json")
if wait "$cli" && [ $ks2 = 0 ] && [ "$got" -gt 1000 ] && memif_line "$tmp/kc1.log" | grep -q "up 2 times"; then
  ok "gen txonly (client) survives its server's SIGKILL, reconnects: the new server got $got frames; $(memif_line "$tmp/kc1.log" | grep -o 'dropped while down [0-9]*')"
else
  ko "gen txonly survives its server's SIGKILL" "$(show "$tmp/kc1.log"; show "$tmp/ks2.err")"
fi
for role in server client; do
  other=$([ $role = server ] && echo client || echo server)
  s=$(sock)
  if serve_up "$role" "$s" "kserve-$role"; then
    bg "kconn-$role" "$HP" connect --link memif --memif-socket "$s" --memif-role "$other" --ip 198.18.0.1/24 \
      --to 198.18.0.2:7 --bytes 1Gi
    sleep 2.5
    kill -KILL "$last"; wait "$last" 2>/dev/null
    connect_ok "$other" "$s" "serve (memif $role) survives a SIGKILLed connect mid-transfer: a new one verifies" \
      --ip 198.18.0.1/24 --to 198.18.0.2:7 --bytes 16Mi
    if finish "$serve"; then ok "serve (memif $role) exits cleanly after the crash: every buffer back"
    else ko "serve (memif $role) exit after the crash" "$(show "$tmp/kserve-$role.log")"; fi
  else
    ko "serve (memif $role) did not start" "$(show "$tmp/kserve-$role.log")"; finish "$serve"
  fi
done

# ---- 5. against DPDK's driver ------------------------------------------------------
TESTPMD=$(command -v dpdk-testpmd || true)
if [ -z "$TESTPMD" ]; then
  sk "testpmd: dpdk-testpmd is not installed (apt-get install dpdk-dev librte-net-memif23, or scripts/deps.sh check as root)"
elif [ "$(id -u)" != 0 ]; then
  sk "testpmd: not root (testpmd keeps its run files under /var/run/dpdk)"
elif ! ls /usr/lib/*/dpdk/pmds-*/librte_net_memif.so* >/dev/null 2>&1; then
  sk "testpmd: DPDK's memif driver is not installed (apt-get install librte-net-memif23)"
else
  last_cpu=$(( $(nproc) - 1 ))
  # testpmd ROLE MODE SOCKET EXTRA-VDEV-ARGS: in the background, $tp its PID.
  testpmd() {
    bg "testpmd$n" "$TESTPMD" --no-huge -m 512 --no-pci --file-prefix="hpm-$$-$n" --lcores "0@0,1@$last_cpu" \
      --vdev="net_memif,role=$1,socket=$3$4" -- --forward-mode="$2" --auto-start --stats-period 1 \
      --total-num-mbufs=8192 </dev/null
    tp=$last
  }
  # pmd_case NAME ROLE MODE EXTRA-VDEV PEER-SOCKET PEER-ARGS...: testpmd in
  # ROLE, memif_peer in the other (a DPDK client does not retry: our
  # server starts first; a DPDK server first, then our client).
  pmd_case() {
    local name=$1 role=$2 mode=$3 extra=$4 psock=$5; shift 5
    local s=${psock#@} prole peer rc
    prole=$([ "$role" = server ] && echo client || echo server)
    if [ "$role" = server ]; then
      testpmd "$role" "$mode" "$s" "$extra"
      wait_for "$tmp/testpmd$n.log" "Port statistics" 20
      timeout 60 "$PEER" --socket "$psock" --role "$prole" --expect "$mode" --count 20000 --timeout 40 "$@" \
        >"$tmp/peer$n.log" 2>&1
      rc=$?
    else
      bg "peer$n" timeout 60 "$PEER" --socket "$psock" --role "$prole" --expect "$mode" --count 20000 --timeout 40 "$@"
      peer=$last
      sleep 0.5
      testpmd "$role" "$mode" "$s" "$extra"
      wait "$peer"; rc=$?
    fi
    if [ $rc = 0 ]; then
      ok "testpmd $role $mode <-> hotpath $prole, $name: $(head -1 "$tmp/peer$n.log" | sed 's/^memif_peer: //')"
    else
      ko "testpmd $role $mode <-> hotpath $prole ($name)" "$(show "$tmp/peer$n.log"; grep -i "error\|memif" "$tmp/testpmd$n.log" | tail -3)"
    fi
    finish "$tp"
  }
  s=$(sock); pmd_case "copy" server macswap ",socket-abstract=no" "$s" --size 64
  s=$(sock); pmd_case "zero-copy, chains" server macswap ",socket-abstract=no" "$s" --size 1000 --zero-copy --chain
  s=$(sock); pmd_case "hotpath server" client macswap ",socket-abstract=no" "$s" --size 1514 --chain
  pmd_case "abstract socket" server io "" "@hpm-$$-abstract" --size 200
  s=$(sock); pmd_case "hotpath server, io" client io ",socket-abstract=no" "$s" --size 60
  s=$(sock); pmd_case "DPDK's 1024-byte buffers" client macswap ",socket-abstract=no,bsize=1024,rsize=8" "$s" --size 1514
  s=$(sock); pmd_case "DPDK's 1024-byte buffers, zero-copy" server macswap ",socket-abstract=no,bsize=1024" "$s" --size 1514 --zero-copy
  # The secret (DPDK's secret=), both ways: the same one is taken, another refused with the
  # reason. testpmd as server: hotpath's client retries until connect gives up (10 s). testpmd
  # as client: it does not retry, one refusal in serve's log; then the right one comes up.
  s=$(sock)
  testpmd server macswap "$s" ",socket-abstract=no,secret=hpm-s3cret"
  if wait_for "$tmp/testpmd$n.log" "Port statistics" 20 \
     && timeout 60 "$HP" gen txonly --link memif --memif-socket "$s" --memif-secret hpm-s3cret --duration 1 >"$tmp/sec$n.log" 2>&1 \
     && grep -q "up 1 times" "$tmp/sec$n.log"; then
    ok "secret: testpmd server secret=S, hotpath gen client --memif-secret S: up, $(grep -o '[0-9.]* Mpps' "$tmp/sec$n.log" | tail -1)"
  else
    ko "secret: testpmd server secret=S, hotpath gen client --memif-secret S" "$(show "$tmp/sec$n.log")"
  fi
  timeout 60 "$HP" connect --link memif --memif-socket "$s" --memif-secret hpm-s3cres --ip 198.18.0.1/24 \
    --to 198.18.0.2:7 --bytes 1k >"$tmp/secbad$n.log" 2>&1
  rc=$?
  if [ $rc = 1 ] && grep -qE "refused by the peer [1-9][0-9]* times, last: peer: Incorrect secret" "$tmp/secbad$n.log"; then
    ok "secret: testpmd server refuses a hotpath client with another secret (Incorrect secret), connect exits 1"
  else
    ko "secret: testpmd server refuses a hotpath client with another secret" "exit $rc: $(show "$tmp/secbad$n.log")"
  fi
  finish "$tp"
  s=$(sock)
  bg "secsrv$n" env HP_LOG_LEVEL=info "$HP" serve --link memif --memif-socket "$s" --memif-role server \
    --memif-secret hpm-s3cret --ip 198.18.0.2/24 --duration 60
  srv=$last
  wait_for "$tmp/secsrv$n.log" "^serve: memif" 20
  testpmd client macswap "$s" ",socket-abstract=no,secret=hpm-s3cres"
  if wait_for "$tmp/secsrv$n.log" "refused INIT from DPDK.*: incorrect secret" 20; then
    ok "secret: hotpath serve --memif-secret S refuses testpmd client secret=another: $(grep -o 'refused INIT from DPDK.*' "$tmp/secsrv$n.log" | head -1)"
  else
    ko "secret: hotpath serve --memif-secret S refuses testpmd client secret=another" "$(show "$tmp/secsrv$n.log")"
  fi
  finish "$tp"
  testpmd client macswap "$s" ",socket-abstract=no,secret=hpm-s3cret"
  if wait_for "$tmp/secsrv$n.log" "up with DPDK" 20; then
    ok "secret: hotpath serve --memif-secret S takes testpmd client secret=S: $(grep -o 'up with DPDK[^,]*' "$tmp/secsrv$n.log" | head -1)"
  else
    ko "secret: hotpath serve --memif-secret S takes testpmd client secret=S" "$(show "$tmp/secsrv$n.log"; grep -i memif "$tmp/testpmd$n.log" | tail -3)"
  fi
  finish "$tp"
  if finish "$srv" && grep -q "every buffer came back" "$tmp/secsrv$n.log"; then ok "secret: serve exits with every buffer back"
  else ko "secret: serve's exit" "$(show "$tmp/secsrv$n.log")"; fi
fi

summary
[ "$fail" -eq 0 ]
