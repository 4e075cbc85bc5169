#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nginx, curl and wrk unmodified on hotpath (libhotpath-posix.so) over afxdp, afpacket and tap, IPv4 and IPv6: files of 0 B to 32 MiB checked by SHA-256, wrk without socket errors or non-2xx, curl's keep-alive requests against the kernel's nginx.
#
# usage: tests/apps/nginx.sh [afxdp] [afpacket] [tap]      (default: all three)
# env:   HP_BIN, HP_KEEP=1, HP_APPS_FULL=1: the issue's full sizes (wrk -d 10,
#        1,000 keep-alive requests, 16 files); default (make check): wrk -d 2,
#        200 requests, 7 files (0 B, 1 B, 1 KiB, 64 KiB + 1, 1 MiB, 5 MB, 32 MiB).
#
# Root only; namespaces hpx-PID-* made here, removed on exit (harness.bash).
# Per link kind and family:
#  1. nginx (daemon off, master_process off, one worker, sendfile on) on
#     hotpath serving a directory of random files; the kernel's curl
#     fetches each and compares SHA-256; wrk -c 200 -t 2 on a 1 KiB page
#     sees no socket error and no non-2xx response. nginx exits at SIGTERM
#     with no buffer in use.
#  2. The reverse: nginx on the kernel; curl on hotpath makes R keep-alive
#     requests in one process (one connection, every answer 200) and
#     fetches the largest file (SHA-256), ending with no buffer in use.
# Ends with "N passed, N failed, N skipped"; exits 1 when anything failed.
set -u
cd "$(dirname "$0")/../.."
source tests/apps/harness.bash

apps_require "apps nginx" nginx curl wrk sha256sum
D=2 R=200
[ "$FULL" = 1 ] && D=10 R=1000
apps_begin nginx
WWW=$tmp/www
mkdir -p "$WWW" "$tmp/ng"

# The files: fixed edge sizes, plus random sizes up to 32 MiB in the full run.
python3 - "$WWW" "$FULL" <<'EOF'
import os, random, sys
d, full = sys.argv[1], sys.argv[2] == "1"
sizes = [0, 1, 1024, 65537, 1 << 20, 5000000, 32 << 20]
if full:
    rnd = random.Random(7)
    sizes += [int(2 ** rnd.uniform(0, 25)) for _ in range(9)]
for i, n in enumerate(sizes):
    with open("%s/f%d" % (d, i), "wb") as f:
        f.write(os.urandom(n))
with open(d + "/1k", "wb") as f:
    f.write(os.urandom(1024))
EOF
(cd "$WWW" && sha256sum f* >"$tmp/files.sha256")

# nginx.conf for a port; everything in $tmp.
ngconf() { # name port
  cat >"$tmp/ng/$1.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $tmp/ng/$1.error.log warn;
pid $tmp/ng/$1.pid;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  keepalive_requests 100000;
  client_body_temp_path $tmp/ng; proxy_temp_path $tmp/ng; fastcgi_temp_path $tmp/ng;
  uwsgi_temp_path $tmp/ng; scgi_temp_path $tmp/ng;
  server { listen $2; listen [::]:$2; root $WWW; }
}
EOF
  echo "$tmp/ng/$1.conf"
}

# fetch_all NS HOST PORT TAG: every file by curl in NS, checked by SHA-256.
fetch_all() {
  local ns=$1 host=$2 port=$3 tag=$4 bad=0 name want got
  while read -r want name; do
    got=$(ip netns exec "$ns" timeout 120 curl -sgf "http://$host:$port/$name" </dev/null | sha256sum | cut -d' ' -f1)
    [ "$got" = "$want" ] || { bad=$((bad + 1)); echo "$name: $got" >>"$tmp/$tag.bad"; }
  done <"$tmp/files.sha256"
  return $bad
}

# wrk_ok TAG WHAT: requests made, no socket error, no non-2xx.
wrk_ok() {
  local reqs
  reqs=$(awk '/requests in/ {print $1}' "$tmp/$1.out")
  if [ -n "$reqs" ] && [ "$reqs" -gt 0 ] && ! grep -qE "Socket errors|Non-2xx" "$tmp/$1.out"; then
    ok "$2: wrk -c 200 -d $D: $reqs requests ($(awk '/Requests\/sec/ {print $2}' "$tmp/$1.out")/s), no socket error, no non-2xx"
  else
    ko "$2: wrk" "$(tail -6 "$tmp/$1.out"; tail -3 "$tmp/$1.err")"
  fi
}

server_on_hotpath() { # family
  local f=$1 h what="$KIND IPv$f, nginx on hotpath" nfiles
  h=$(url_host "$f" hot)
  hp_bg "ng$f" a nginx -c "$(ngconf "hot$f" 80)"
  local srv=$BG_PID
  if ! wait_port "$KNS" "$(addr "$f" hot)" 80; then
    ko "$what: nginx does not answer" "$(tail -5 "$tmp/ng$f.err" "$tmp/ng/hot$f.error.log")"; stop_bg $srv; return
  fi
  nfiles=$(wc -l <"$tmp/files.sha256")
  if fetch_all "$KNS" "$h" 80 "get$f"; then
    ok "$what: $nfiles files of 0 B to 32 MiB fetched by curl, SHA-256 equal"
  else
    ko "$what: files fetched differ" "$(head -5 "$tmp/get$f.bad")"
  fi
  k_fg "wrk$f" wrk -t 2 -c 200 -d $D "http://$h/1k"
  wrk_ok "wrk$f" "$what"
  stop_bg $srv
  buffers_ok "ng$f" "$what"
}

client_on_hotpath() { # family
  local f=$1 h what="$KIND IPv$f, curl on hotpath" codes conns
  h=$(url_host "$f" kern)
  k_bg "kng$f" nginx -c "$(ngconf "kern$f" 8080)"
  local srv=$BG_PID
  if ! wait_port "$KNS" "$(addr "$f" kern)" 8080; then
    ko "$what: the kernel's nginx does not answer"; stop_bg $srv; return
  fi
  python3 -c "import sys; print(''.join('url = \"http://%s:8080/1k\"\noutput = \"/dev/null\"\n' % sys.argv[1] for _ in range($R)))" \
    "$h" >"$tmp/curl$f.cfg"
  hp_fg "cu$f" a curl -sg -K "$tmp/curl$f.cfg" -w '%{http_code} %{num_connects}\n'
  codes=$(grep -c '^200 ' "$tmp/cu$f.out")
  conns=$(awk '{n += $2} END {print n + 0}' "$tmp/cu$f.out")
  if [ "$codes" = "$R" ] && [ "$conns" = 1 ]; then
    ok "$what: $R keep-alive requests on one connection, all 200"
  else
    ko "$what: keep-alive requests ($codes of $R answered 200, $conns connections)" "$(tail -3 "$tmp/cu$f.err")"
  fi
  buffers_ok "cu$f" "$what (keep-alive)"
  local big want got
  big=$(awk '{print $2}' "$tmp/files.sha256" | while read -r n; do echo "$(stat -c %s "$WWW/$n") $n"; done | sort -n | tail -1 | cut -d' ' -f2)
  want=$(grep " $big\$" "$tmp/files.sha256" | cut -d' ' -f1)
  hp_fg "cb$f" a curl -sgf -o "$tmp/big$f" "http://$h:8080/$big"
  got=$(sha256sum "$tmp/big$f" 2>/dev/null | cut -d' ' -f1)
  if [ "$got" = "$want" ]; then ok "$what: $(stat -c %s "$WWW/$big") bytes fetched, SHA-256 equal"; else ko "$what: the largest file" "$(tail -3 "$tmp/cb$f.err")"; fi
  buffers_ok "cb$f" "$what (large file)"
  rm -f "$tmp/big$f"
  stop_bg $srv
}

for kind in $(apps_kinds "$@"); do
  interop_kind_skipped "$kind" && continue
  if ! apps_ns_up "$kind"; then ko "$kind: namespaces"; apps_ns_down; continue; fi
  for f in 4 6; do
    server_on_hotpath $f
    client_on_hotpath $f
  done
  apps_ns_down
done
summary
[ "$fail" -eq 0 ]
