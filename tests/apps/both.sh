#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Both ends unmodified on hotpath, each with its own stack (libhotpath-posix.so): redis-benchmark against redis-server, wrk against nginx, iperf3 against iperf3, over afxdp, afpacket and tap.
#
# usage: tests/apps/both.sh [afxdp] [afpacket] [tap]      (default: all three)
# env:   HP_BIN, HP_KEEP=1, HP_APPS_FULL=1: the full sizes (redis-benchmark
#        -n 100000, wrk -d 10, iperf3 -t 10; default, make check: 10000, 2, 2).
#
# Root only. afxdp, afpacket: a veth pair between two namespaces, hotpath
# 198.18.0.2 / 2001:2::2 on one end (the clients) and 198.18.0.1 /
# 2001:2::1 on the other (the servers), no kernel address anywhere. tap: two
# taps on a bridge in one namespace. Every program ends with no buffer in use.
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/apps/harness.bash

apps_require "apps both" redis-server redis-benchmark nginx wrk iperf3
N=10000 D=2 T=2
[ "$FULL" = 1 ] && N=100000 D=10 T=10
apps_begin both
mkdir -p "$tmp/www" "$tmp/ng"
head -c 1024 /dev/urandom >"$tmp/www/1k"
cat >"$tmp/ng/nginx.conf" <<EOF2
daemon off;
master_process off;
worker_processes 1;
error_log $tmp/ng/error.log warn;
pid $tmp/ng/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path $tmp/ng; proxy_temp_path $tmp/ng; fastcgi_temp_path $tmp/ng;
  uwsgi_temp_path $tmp/ng; scgi_temp_path $tmp/ng;
  server { listen 80; listen [::]:80; root $tmp/www; }
}
EOF2

# A server on side b (198.18.0.1), ready when TEXT shows in its output or
# (without TEXT) when side a can connect to PORT.
serve_b() { # tag port text cmd...
  local tag=$1 port=$2 text=$3; shift 3
  hp_bg "$tag" b "$@"
  if [ -n "$text" ]; then wait_text "$tmp/$tag.out" "$text" && return 0; return 1; fi
  # A kernel probe cannot reach hotpath's addresses here: the client side
  # asks through a hotpath process of its own.
  local i
  for i in $(seq 1 50); do
    hp_fg "probe-$tag" a bash -c "exec 3<>/dev/tcp/$KERN4/$port" && return 0
    sleep 0.2
  done
  return 1
}

both_redis() {
  local what="$KIND, both on hotpath: redis-benchmark against redis-server" rates
  if ! serve_b rsrv 6379 "" redis-server --port 6379 --save '' --appendonly no --protected-mode no; then
    ko "$what: the server does not answer" "$(tail -3 "$tmp/rsrv.err")"; stop_bg "$BG_PID"; return
  fi
  local srv=$BG_PID
  hp_fg rb a redis-benchmark -h $KERN4 -t set,get,incr,lpush,lpop,mset -n $N -c 50 -q
  rates=$(tr '\r' '\n' <"$tmp/rb.out" | grep -cE "^[A-Z]+.*: [0-9.]+ requests per second")
  if [ "$rates" -ge 6 ] && ! grep -qi error "$tmp/rb.out"; then
    ok "$what ($(tr '\r' '\n' <"$tmp/rb.out" | grep -E '^GET: [0-9.]+ requests' | sed 's/, p50.*//'))"
  else
    ko "$what ($rates of 6)" "$(tr '\r' '\n' <"$tmp/rb.out" | grep -iE 'error|second' | head -5; tail -3 "$tmp/rb.err")"
  fi
  buffers_ok rb "$what (client)"
  stop_bg $srv
  buffers_ok rsrv "$what (server)"
}

both_nginx() {
  local what="$KIND, both on hotpath: wrk against nginx" reqs
  if ! serve_b nsrv 80 "" nginx -c "$tmp/ng/nginx.conf"; then
    ko "$what: nginx does not answer" "$(tail -3 "$tmp/nsrv.err")"; stop_bg "$BG_PID"; return
  fi
  local srv=$BG_PID
  hp_fg wrk a wrk -t 2 -c 200 -d $D "http://$KERN4/1k"
  reqs=$(awk '/requests in/ {print $1}' "$tmp/wrk.out")
  if [ -n "$reqs" ] && [ "$reqs" -gt 0 ] && ! grep -qE "Socket errors|Non-2xx" "$tmp/wrk.out"; then
    ok "$what: $reqs requests, no socket error, no non-2xx (wrk's two threads on one stack)"
  else
    ko "$what" "$(tail -5 "$tmp/wrk.out"; tail -3 "$tmp/wrk.err")"
  fi
  buffers_ok wrk "$what (client)"
  stop_bg $srv
  buffers_ok nsrv "$what (server)"
}

both_iperf3() {
  local what="$KIND, both on hotpath: iperf3 against iperf3" line
  if ! serve_b isrv 5201 "Server listening on 5201" iperf3 -s --forceflush; then
    ko "$what: the server does not start" "$(tail -3 "$tmp/isrv.err")"; stop_bg "$BG_PID"; return
  fi
  local srv=$BG_PID
  hp_fg ic a iperf3 -c $KERN4 -t $T -J
  line=$(python3 -c "
import json,sys
d=json.load(open(sys.argv[1])); r=d.get('end',{}).get('sum_received',{})
print('ok %.0f Mbit/s' % (r['bits_per_second']/1e6) if not d.get('error') and r.get('bytes',0) > 0 else 'bad %s' % d.get('error'))" "$tmp/ic.out" 2>&1)
  if [ "${line%% *}" = ok ]; then ok "$what: ${line#ok }"; else ko "$what" "$line"; fi
  buffers_ok ic "$what (client)"
  stop_bg $srv
  buffers_ok isrv "$what (server)"
}

for kind in $(apps_kinds "$@"); do
  if ! apps_ns_up "$kind" both; then ko "$kind: namespaces"; apps_ns_down; continue; fi
  both_redis
  both_nginx
  both_iperf3
  apps_ns_down
done
summary
[ "$fail" -eq 0 ]
