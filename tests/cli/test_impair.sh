#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# hotpath impair's command line: every bad argument refused with a message naming it, exit 2; --help.
#
# usage: tests/cli/test_impair.sh path/to/hotpath   (no privileges needed: nothing is opened)
set -u
HP=${1:?usage: $0 path/to/hotpath}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # NAME CODE PATTERN -- cmd...
  local name=$1 code=$2 pattern=$3; shift 4
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq "$code" ] && grep -qE -- "$pattern" "$tmp/err" "$tmp/out"; then
    pass=$((pass + 1)); echo "PASS  $name"
  else
    fail=$((fail + 1)); echo "FAIL  $name"; echo "      exit $rc (want $code): $(head -2 "$tmp/err" "$tmp/out")"
  fi
}

I=(--link afpacket --iface-a x0 --iface-b x1)
expect "impair --help"                   0 "usage: hotpath impair"            -- "$HP" impair --help
expect "impair lists in --help"          0 "impair +bridge two interfaces"    -- "$HP" --help
expect "impair without --link"           2 "--link wants afxdp, afpacket or memif"   -- "$HP" impair --iface-a x0 --iface-b x1
expect "impair --link tap refused"       2 "--link wants afxdp, afpacket or memif" -- "$HP" impair --link tap --iface-a x0 --iface-b x1
expect "impair --memif-socket refused"   2 "two sockets as --iface-a and --iface-b" -- "$HP" impair --link memif --iface-a a --iface-b b --memif-socket c
expect "impair --memif-role needs memif" 2 "are for --link memif"              -- "$HP" impair "${I[@]}" --memif-role server
expect "impair --memif-secret needs memif" 2 "--memif-secret are for --link memif" -- "$HP" impair "${I[@]}" --memif-secret s3
expect "impair --memif-secret of 25 bytes" 2 "--memif-secret: wants 1 to 24 bytes" -- "$HP" impair --link memif --iface-a a --iface-b b --memif-secret 1234567890123456789012345
expect "impair one interface"            2 "two different interfaces"         -- "$HP" impair --link afpacket --iface-a x0
expect "impair the same interface twice" 2 "two different interfaces"         -- "$HP" impair --link afpacket --iface-a x0 --iface-b x0
expect "impair --loss 1.5"               2 "--loss wants a probability.*'1.5'" -- "$HP" impair "${I[@]}" --loss 1.5
expect "impair --dup -0.1"               2 "--dup wants a probability"        -- "$HP" impair "${I[@]}" --dup -0.1
expect "impair --reorder abc"            2 "--reorder wants a probability"    -- "$HP" impair "${I[@]}" --reorder abc
expect "impair --delay jitter > delay"   2 "--delay wants MS\[,JITTER\]"      -- "$HP" impair "${I[@]}" --delay 5,6
expect "impair --delay negative"         2 "--delay wants"                    -- "$HP" impair "${I[@]}" --delay -1
expect "impair --rate 0"                 2 "--rate wants"                     -- "$HP" impair "${I[@]}" --rate 0
expect "impair --mtu 20"                 2 "--mtu wants a number in \[68"     -- "$HP" impair "${I[@]}" --mtu 20
expect "impair --queue without --rate"   2 "--queue needs --rate"             -- "$HP" impair "${I[@]}" --queue 100000
expect "impair --ecn without --rate"     2 "--ecn-mark-above needs --rate"    -- "$HP" impair "${I[@]}" --ecn-mark-above 3000
expect "impair --a2b with --b2a"         2 "exclude each other"               -- "$HP" impair "${I[@]}" --a2b --b2a
expect "impair --duration 0"             2 "--duration wants"                 -- "$HP" impair "${I[@]}" --duration 0
expect "impair --drop-tail 0"            2 "--drop-tail wants milliseconds"   -- "$HP" impair "${I[@]}" --drop-tail 0 --delay 10
expect "impair --drop-tail over --delay" 2 "--drop-tail needs --delay"        -- "$HP" impair "${I[@]}" --drop-tail 5 --delay 2
expect "impair --drop-tail lists in help" 0 "--drop-tail MS"                  -- "$HP" impair --help
expect "impair --rt 0"                   2 "--rt wants a number in \[1, 99\]" -- "$HP" impair "${I[@]}" --rt 0
expect "impair --rt lists in help"       0 "--rt PRIO"                        -- "$HP" impair --help
expect "impair stray argument"           2 "unexpected argument 'extra'"      -- "$HP" impair "${I[@]}" extra
# A missing interface is a clear error, not a crash (no privileges needed to find out).
expect "impair missing interface"        1 "nosuchif0"                        -- "$HP" impair --link afpacket --iface-a nosuchif0 --iface-b nosuchif1 --duration 0.1
# Over memif (no privileges needed): gen txonly -> impair --loss 0.5 --a2b -> gen rxdrop, three
# processes; about half the frames are lost, the rest arrive, every buffer comes back. Both gens
# hold a secret: impair's --memif-secret reaches both of its sides, or nothing would pass.
A=$tmp/a.sock B=$tmp/b.sock
"$HP" gen txonly --link memif --memif-socket "$A" --memif-role server --memif-secret s3 --duration 3 --json >"$tmp/tx.json" 2>"$tmp/tx.err" &
txp=$!
"$HP" gen rxdrop --link memif --memif-socket "$B" --memif-role server --memif-secret s3 --duration 4 --json >"$tmp/rx.json" 2>"$tmp/rx.err" &
rxp=$!
sleep 0.3
timeout 20 "$HP" impair --link memif --iface-a "$A" --iface-b "$B" --memif-secret s3 --loss 0.5 --a2b --seed 3 --duration 5 \
  --json-stats >"$tmp/imp.json" 2>"$tmp/imp.err"
irc=$?
wait $txp $rxp
if [ $irc = 0 ] && python3 - "$tmp/imp.json" "$tmp/rx.json" <<'PY'
import json, sys
last = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
rx = json.load(open(sys.argv[2]))
a = last["a2b"]
assert last["final"] and a["in"] > 1000, a
assert 0.45 < a["lost"] / a["in"] < 0.55, a
assert last["b2a"]["lost"] == 0, last
assert rx["packets"] > 0, rx
PY
then pass=$((pass + 1)); echo "PASS  impair over memif: gen -> impair --loss 0.5 -> gen, half lost, clean exit"
else fail=$((fail + 1)); echo "FAIL  impair over memif (exit $irc): $(tail -2 "$tmp/imp.err" "$tmp/imp.json" | cut -c1-300)"; fi
echo "$pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
