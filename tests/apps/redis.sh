#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# redis-server, redis-benchmark and redis-cli unmodified on hotpath (libhotpath-posix.so) over afxdp, afpacket and tap, IPv4 and IPv6, against the kernel's in the other namespace and the reverse: benchmark commands answered, values up to 1 MB read back byte for byte.
#
# usage: tests/apps/redis.sh [afxdp] [afpacket] [tap]      (default: all three)
# env:   HP_BIN (default build/hotpath), HP_KEEP=1 keeps the logs,
#        HP_APPS_FULL=1: the issue's full sizes (redis-benchmark -n 100000,
#        1,000 keys); default (make check): -n 10000, 200 keys.
#
# Root only; namespaces hpx-PID-* made here, removed on exit (harness.bash).
# Per link kind and family:
#  1. redis-server on hotpath (no persistence); from the kernel:
#     redis-benchmark -t set,get,incr,lpush,lpop,mset -n N -c 50 (every
#     test reports its rate, none an error); redis-cli --pipe writes K keys
#     with random values of 0 to 1 MiB bytes (sizes log-uniform), redis-cli
#     --raw GETs them back: the output, byte for byte, is the values each
#     followed by a newline. The server exits at SIGTERM with no buffer in use.
#  2. The reverse: redis-server on the kernel; redis-benchmark and both
#     redis-cli runs on hotpath, each ending with no buffer in use.
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/apps/harness.bash

apps_require "apps redis" redis-server redis-benchmark redis-cli
N=10000 KEYS=200
[ "$FULL" = 1 ] && N=100000 KEYS=1000
apps_begin redis

# The values, once: RESP SET commands, the GETs, and what --raw must print.
python3 - "$tmp" "$KEYS" <<'EOF'
import os, random, sys
d, k = sys.argv[1], int(sys.argv[2])
rnd = random.Random(20)
sets, want = bytearray(), bytearray()
for i in range(k):
    v = os.urandom(int(2 ** rnd.uniform(0, 20)) - 1 if i else (1 << 20))
    key = b"hpxkey%d" % i
    sets += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(v), v)
    want += v + b"\n"
open(d + "/sets.resp", "wb").write(sets)
open(d + "/gets.txt", "w").write("".join("GET hpxkey%d\n" % i for i in range(k)))
open(d + "/want.bin", "wb").write(want)
EOF
WANT_SHA=$(sha256sum "$tmp/want.bin" | cut -d' ' -f1)

# bench_ok TAG WHAT: six rates and no error in redis-benchmark's output.
bench_ok() {
  local rates
  rates=$(tr '\r' '\n' <"$tmp/$1.out" | grep -c "requests per second")
  if [ "$rates" -ge 6 ] && ! grep -qi "error" "$tmp/$1.out" "$tmp/$1.err"; then
    ok "$2: redis-benchmark ($(tr '\r' '\n' <"$tmp/$1.out" | grep -E '^GET: [0-9.]+ requests' | sed 's/, p50.*//'))"
  else
    ko "$2: redis-benchmark ($rates of 6 tests)" "$(tr '\r' '\n' <"$tmp/$1.out" | grep -iE 'error|second' | head -8; tail -3 "$tmp/$1.err")"
  fi
}

# roundtrip_ok WTAG RTAG WHAT: --pipe said errors 0 for every key, and the
# read back matches.
roundtrip_ok() {
  local got
  got=$(sha256sum "$tmp/$2.out" | cut -d' ' -f1)
  if grep -q "errors: 0, replies: $KEYS" "$tmp/$1.out" && [ "$got" = "$WANT_SHA" ]; then
    ok "$3: redis-cli $KEYS keys (up to 1 MiB) written and read back byte for byte"
  else
    ko "$3: redis-cli round trip" "$(tail -2 "$tmp/$1.out"; tail -2 "$tmp/$1.err"; echo "read $(stat -c %s "$tmp/$2.out") bytes, want $(stat -c %s "$tmp/want.bin")")"
  fi
}

server_on_hotpath() { # family
  local f=$1 h what="$KIND IPv$f, redis-server on hotpath"
  h=$(addr "$f" hot)
  hp_bg "srv$f" a redis-server --port 6379 --save '' --appendonly no --protected-mode no
  local srv=$BG_PID
  if ! wait_port "$KNS" "$h" 6379; then
    ko "$what: the server does not answer" "$(tail -5 "$tmp/srv$f.err")"; stop_bg $srv; return
  fi
  k_fg "kb$f" redis-benchmark -h "$h" -t set,get,incr,lpush,lpop,mset -n $N -c 50 -q
  bench_ok "kb$f" "$what"
  k_fg "kw$f" redis-cli -h "$h" --pipe <"$tmp/sets.resp"
  k_fg "kr$f" redis-cli -h "$h" --raw <"$tmp/gets.txt"
  roundtrip_ok "kw$f" "kr$f" "$what"
  stop_bg $srv
  buffers_ok "srv$f" "$what"
}

clients_on_hotpath() { # family
  local f=$1 h what="$KIND IPv$f, redis clients on hotpath"
  h=$(addr "$f" kern)
  k_bg "ksrv$f" redis-server --port 6380 --save '' --appendonly no --protected-mode no
  local srv=$BG_PID
  if ! wait_port "$KNS" "$h" 6380; then
    ko "$what: the kernel's server does not answer" "$(tail -3 "$tmp/ksrv$f.out")"; stop_bg $srv; return
  fi
  hp_fg "hb$f" a redis-benchmark -h "$h" -p 6380 -t set,get,incr,lpush,lpop,mset -n $N -c 50 -q
  bench_ok "hb$f" "$what"
  buffers_ok "hb$f" "$what (redis-benchmark)"
  hp_fg "hw$f" a redis-cli -h "$h" -p 6380 --pipe <"$tmp/sets.resp"
  hp_fg "hr$f" a redis-cli -h "$h" -p 6380 --raw <"$tmp/gets.txt"
  roundtrip_ok "hw$f" "hr$f" "$what"
  buffers_ok "hw$f" "$what (redis-cli --pipe)"
  buffers_ok "hr$f" "$what (redis-cli --raw)"
  stop_bg $srv
}

for kind in $(apps_kinds "$@"); do
  interop_kind_skipped "$kind" && continue
  if ! apps_ns_up "$kind"; then ko "$kind: namespaces"; apps_ns_down; continue; fi
  for f in 4 6; do
    server_on_hotpath $f
    clients_on_hotpath $f
  done
  apps_ns_down
done
summary
[ "$fail" -eq 0 ]
