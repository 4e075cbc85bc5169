#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Both ends of redis on hotpath over memif (libhotpath-posix.so, HOTPATH_LINK=memif): redis-server as the memif server, redis-benchmark and redis-cli as clients, each with its own stack and address, the peer's MAC found by ARP over the shared memory.
#
# usage: tests/apps/memif.sh
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs,
#        HP_APPS_FULL=1: redis-benchmark -n 100000 (default -n 20000).
#
# Root only (as every tests/apps suite), though memif itself needs no
# privilege and no network namespace: the control socket lives in a
# temporary directory removed on exit (harness.bash's trap).
#  1. redis-server on hotpath, memif server on $tmp/hpm.sock, 198.18.0.1;
#     redis-benchmark on hotpath, memif client, 198.18.0.2: -t set,get
#     -c 50, both tests report a rate, no error, exit 0, no buffer in use.
#  2. The same server takes a second client after the first went away:
#     redis-cli --pipe writes 50 keys (values up to 256 KiB), redis-cli
#     --raw reads them back byte for byte (a new memif connection each).
#     Then redis-cli over IPv6 (2001:2::2 to 2001:2::1) reads one back.
#  3. A client on a socket nobody listens on fails within
#     HOTPATH_MEMIF_WAIT_MS with a line that says so (no hang); so does a
#     second client while a first holds the link (one at a time); hotpath run
#     --link memif without --memif-socket is a usage error.
#  4. The server exits at SIGTERM with status 0 and no buffer in use, and
#     no exit (the server's or a client's) had a connection left to cut.
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/apps/harness.bash

interop_require "apps memif" "tests/apps run in make check's root step"
if [ ! -e "$(dirname "$HP")/libhotpath-posix.so" ]; then
  ko "apps memif: $(dirname "$HP")/libhotpath-posix.so is not built (make build)"; summary; exit 1
fi
for t in redis-server redis-benchmark redis-cli; do
  command -v "$t" >/dev/null 2>&1 || { sk "apps memif: $t is not installed (scripts/deps.sh check installs it)"; summary; exit 0; }
done
N=20000 KEYS=50
[ "$FULL" = 1 ] && N=100000
apps_begin memif
SOCK=$tmp/hpm.sock SRV=198.18.0.1 CLI=198.18.0.2 SRV6=2001:2::1 CLI6=2001:2::2

# mf_bg TAG CMD...: a program on hotpath as memif server, in the background.
mf_bg() {
  local tag=$1; shift
  : >"$tmp/$tag.out"; : >"$tmp/$tag.err"
  "$HP" run --link memif --memif-socket "$SOCK" --memif-role server --ip $SRV/24 --ip6 $SRV6/64 \
    --stats -- "$@" \
    >>"$tmp/$tag.out" 2>>"$tmp/$tag.err" &
  BG_PID=$!
  PIDS+=("$BG_PID")
}

# mf_fg TAG CMD...: a program on hotpath as memif client, waited for (60 s
# at most); its exit status.
mf_fg() {
  local tag=$1; shift
  timeout 60 "$HP" run --link memif --memif-socket "$SOCK" --ip $CLI/24 --ip6 $CLI6/64 --no-dad \
    --stats -- "$@" \
    >"$tmp/$tag.out" 2>"$tmp/$tag.err"
}

# mf_fg_bg TAG CMD...: a memif client in the background (a long one).
mf_fg_bg() {
  local tag=$1; shift
  : >"$tmp/$tag.out"; : >"$tmp/$tag.err"
  timeout 60 "$HP" run --link memif --memif-socket "$SOCK" --ip $CLI/24 --stats -- "$@" \
    >>"$tmp/$tag.out" 2>>"$tmp/$tag.err" &
  BG_PID=$!
  PIDS+=("$BG_PID")
}

python3 - "$tmp" "$KEYS" <<'EOF'
import os, random, sys
d, k = sys.argv[1], int(sys.argv[2])
rnd = random.Random(24)
sets, want = bytearray(), bytearray()
for i in range(k):
    v = os.urandom(int(2 ** rnd.uniform(0, 18)) - 1 if i else (1 << 18))
    key = b"hpmkey%d" % i
    sets += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(v), v)
    want += v + b"\n"
    if i == 1:
        open(d + "/six.want", "wb").write(v + b"\n")
open(d + "/sets.resp", "wb").write(sets)
open(d + "/gets.txt", "w").write("".join("GET hpmkey%d\n" % i for i in range(k)))
open(d + "/want.bin", "wb").write(want)
EOF

# 1. The server, then redis-benchmark.
mf_bg srv redis-server --port 6379 --save '' --appendonly no --protected-mode no
srv=$BG_PID
if ! wait_text "$tmp/srv.out" "Ready to accept connections" || [ ! -S "$SOCK" ]; then
  ko "redis-server on memif (server) did not start" "$(tail -5 "$tmp/srv.out" "$tmp/srv.err")"
  summary; exit 1
fi
mf_fg bench redis-benchmark -h $SRV -n $N -c 50 -t set,get -q
rc=$?
rates=$(tr '\r' '\n' <"$tmp/bench.out" | grep -cE '^(SET|GET): [0-9.]+ requests per second')
# (The statistics' lines, indented, name counters, not errors.)
if [ $rc = 0 ] && [ "$rates" = 2 ] && ! grep -qi error "$tmp/bench.out" &&
   ! grep -v '^  ' "$tmp/bench.err" | grep -qi error; then
  ok "redis-benchmark over memif: -n $N -t set,get answered ($(tr '\r' '\n' <"$tmp/bench.out" | grep -E '^(SET|GET): [0-9.]+ requests' | sed 's/, p50.*//' | tr '\n' ' '))"
else
  ko "redis-benchmark over memif (exit $rc, $rates of 2 rates)" "$(tr '\r' '\n' <"$tmp/bench.out" | grep -iE 'error|second' | head -4; tail -5 "$tmp/bench.err")"
fi
buffers_ok bench "redis-benchmark (memif client)"
if grep -q "ARP_IN_REPLIES" "$tmp/bench.err"; then
  ok "the client resolved the server's MAC by ARP over memif"
else
  ko "no ARP reply counted by the client" "$(head -12 "$tmp/bench.err")"
fi

# 2. A second and a third client on the same server.
mf_fg pipe redis-cli -h $SRV --pipe <"$tmp/sets.resp"
rc1=$?
mf_fg raw redis-cli -h $SRV --raw <"$tmp/gets.txt"
rc2=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && grep -q "errors: 0, replies: $KEYS" "$tmp/pipe.out" &&
   [ "$(sha256sum <"$tmp/raw.out")" = "$(sha256sum <"$tmp/want.bin")" ]; then
  ok "redis-cli over memif, new connections to the same server: $KEYS keys (up to 256 KiB) written and read back byte for byte"
else
  ko "redis-cli round trip over memif (exits $rc1 $rc2)" "$(tail -2 "$tmp/pipe.out" "$tmp/pipe.err" "$tmp/raw.err"; echo "read $(stat -c %s "$tmp/raw.out") bytes, want $(stat -c %s "$tmp/want.bin")")"
fi
buffers_ok pipe "redis-cli --pipe (memif client)"
buffers_ok raw "redis-cli --raw (memif client)"
mf_fg six redis-cli -h $SRV6 --raw get hpmkey1
rc=$?
if [ $rc = 0 ] && [ "$(sha256sum <"$tmp/six.out")" = "$(sha256sum <"$tmp/six.want")" ]; then
  ok "redis-cli over IPv6 on memif: a value read back (neighbour discovery over the link)"
else
  ko "redis-cli over IPv6 on memif (exit $rc)" "$(head -c 200 "$tmp/six.out"; tail -3 "$tmp/six.err")"
fi
buffers_ok six "redis-cli over IPv6 (memif client)"

# 3. Misconfiguration: a clear error, not a hang.
start=$(date +%s)
HOTPATH_MEMIF_WAIT_MS=500 timeout 20 "$HP" run --link memif --memif-socket "$tmp/none.sock" --ip $CLI/24 \
  -- redis-cli -h $SRV ping >"$tmp/none.out" 2>"$tmp/none.err"
rc=$?
took=$(( $(date +%s) - start ))
if [ $rc != 0 ] && [ $rc != 124 ] && [ "$took" -lt 15 ] &&
   grep -q "no server took the connection on $tmp/none.sock.*no such socket file" "$tmp/none.err"; then
  ok "a client on a socket nobody listens on fails (exit $rc, ${took} s) and says why"
else
  ko "client on a missing socket: exit $rc after ${took} s" "$(cat "$tmp/none.out" "$tmp/none.err" | head -5)"
fi
# One client at a time: a second one while the first holds the link is
# refused by the server's link, and says so, and the first goes on.
mf_fg_bg first redis-cli -h $SRV -r 15 -i 0.1 ping
first=$BG_PID
wait_text "$tmp/first.out" PONG
HOTPATH_MEMIF_WAIT_MS=300 timeout 20 "$HP" run --link memif --memif-socket "$SOCK" --ip 198.18.0.3/24 \
  -- redis-cli -h $SRV ping >"$tmp/second.out" 2>"$tmp/second.err"
rc=$?
wait "$first"
rc1=$?
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q "no server took the connection.*Already connected" "$tmp/second.err" &&
   [ $rc1 = 0 ] && [ "$(grep -c PONG "$tmp/first.out")" = 15 ]; then
  ok "a second client while the first holds the link: refused, and says why; the first gets its 15 PONGs"
else
  ko "a second client at once: exit $rc (first: $rc1, $(grep -c PONG "$tmp/first.out") PONGs)" "$(tail -3 "$tmp/second.err")"
fi
"$HP" run --link memif --ip $CLI/24 -- true >"$tmp/nosock.out" 2>"$tmp/nosock.err"
rc=$?
if [ $rc = 2 ] && grep -q -- "--memif-socket" "$tmp/nosock.err"; then
  ok "hotpath run --link memif without --memif-socket: usage error"
else
  ko "hotpath run --link memif without --memif-socket: exit $rc" "$(cat "$tmp/nosock.err")"
fi

# 4. The server's exit.
kill -TERM "$srv"
wait "$srv"
rc=$?
if [ $rc = 0 ]; then ok "redis-server on memif exits 0 at SIGTERM"; else ko "redis-server exit status $rc" "$(tail -5 "$tmp/srv.err")"; fi
buffers_ok srv "redis-server (memif server)"
# The clients waited for the server's FINs at their exit: the server's
# connections all closed in order, none left for its exit to cut.
if ! grep -q "had not delivered everything" "$tmp/srv.err" "$tmp/bench.err" "$tmp/pipe.err" "$tmp/raw.err" \
     "$tmp/six.err" "$tmp/first.err"; then
  ok "every connection closed in order (none cut at an exit)"
else
  ko "connections cut at exit" "$(grep -h "had not delivered" "$tmp"/*.err)"
fi
if [ ! -e "$SOCK" ]; then ok "the server removed its socket file"; else ko "$SOCK left behind"; fi

summary
[ "$fail" -eq 0 ]
