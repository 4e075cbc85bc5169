#!/usr/bin/env python3
"""Simulated cache misses per transaction of `hotpath rr`, for one or more builds.

Runs each hotpath binary's `rr` under valgrind's callgrind with its cache simulator
(L1 and one last level, LL), and divides the misses of the measured window by the
window's transactions: rr zeroes callgrind's counters as the window opens and dumps
them as it closes (tools/hotpath/rr.c), so set-up and warm-up are left out. The
figures do not depend on how busy the host is, which the CPU-time ratios of
`hotpath rr` on a shared machine do; they model no hardware prefetcher, and
valgrind runs the client and server threads in turn on one simulated cache.

Under valgrind a transaction takes about a hundred times longer than natively, and
TCP's retransmission timeout follows the measured round trip: its entries would fire
about once per transaction where a native run (RTO at its 200 ms floor, a
transaction every few milliseconds per flow) fires them once in tens. So rr runs
with --rto-min 60000 (--rto-min here; 0 leaves rr's default), which puts the
native proportion back; the "timers" column shows the misses still taken in timer
code.

    scripts/rr_cachesim.py build/hotpath build-chrono/hotpath --flows 30000
    scripts/rr_cachesim.py build/hotpath --flows 10000 --ll 33554432 --top 20 -- --ipv6
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TIMER_CODE = re.compile(r"^(sift_down|sift_up|hp__timer|hp__timers_|hp__tcp_timer_)")


def parse_dump(path):
    """Event names, program totals and per-function self costs of a callgrind dump."""
    events, totals = None, None
    names = {}
    self_cost = collections.defaultdict(lambda: None)
    cur = None
    skip_next = False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if skip_next:  # the inclusive cost of a call: not this function's own
                skip_next = False
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            if line.startswith("summary:") or line.startswith("totals:"):
                totals = [int(x) for x in line.split()[1:]]
                continue
            m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?$", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if not m.group(1):
                    cur = names.get(m.group(2), m.group(2))
                continue
            if line.startswith("calls="):
                skip_next = True
                continue
            if cur and line and (line[0].isdigit() or line[0] in "+-*"):
                costs = [int(x) for x in line.split()[1:]]
                acc = self_cost[cur]
                if acc is None:
                    acc = self_cost[cur] = [0] * len(events)
                for i, c in enumerate(costs):
                    acc[i] += c
    if events is None or totals is None:
        raise ValueError(f"{path}: not a callgrind dump")
    totals += [0] * (len(events) - len(totals))
    return events, dict(zip(events, totals)), {k: dict(zip(events, v)) for k, v in self_cost.items()}


def run_one(binary, args, workdir):
    out = os.path.join(workdir, "cg.out")
    cmd = [
        "valgrind", "--tool=callgrind", "--cache-sim=yes", "--fair-sched=yes",
        f"--I1={args.l1},{args.l1_assoc},64", f"--D1={args.l1},{args.l1_assoc},64",
        f"--LL={args.ll},{args.ll_assoc},64",
        f"--callgrind-out-file={out}", "--dump-instr=no", "--collect-jumps=no",
        binary, "rr", "--flows", str(args.flows), "--duration", str(args.duration),
        "--cpu", "0", "--json",
    ]
    if args.rto_min and "udp" not in args.rr_args:
        cmd += ["--rto-min", str(args.rto_min)]
    cmd += args.rr_args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"rr_cachesim: {binary} rr failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        sys.exit(f"rr_cachesim: {binary} rr printed no JSON:\n{p.stdout[-2000:]}")
    window = out + ".1"
    if not os.path.exists(window):
        sys.exit(f"rr_cachesim: {binary} left no dump of its measured window: was it built "
                 "with <valgrind/callgrind.h> (the valgrind package) installed?")
    txns = res.get("transactions", 0)
    if res.get("flows_reached") != args.flows or txns <= 0:
        sys.exit(f"rr_cachesim: {binary}: {res.get('flows_reached')} of {args.flows} flows, "
                 f"{txns} transactions ({res.get('note', '')})")
    events, totals, funcs = parse_dump(window)
    return res, events, totals, funcs


def misses(d):
    return {
        "d1": d.get("D1mr", 0) + d.get("D1mw", 0),
        "ll": d.get("DLmr", 0) + d.get("DLmw", 0),
        "ll_rd": d.get("DLmr", 0),
        "ll_wr": d.get("DLmw", 0),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="hotpath binaries (the first is the reference of the ratios)")
    ap.add_argument("--flows", type=int, default=10000)
    ap.add_argument("--duration", type=float, default=20,
                    help="rr's measured seconds, in valgrind's slow time (default 20)")
    ap.add_argument("--l1", type=int, default=32768, help="L1 I and D bytes (default 32768)")
    ap.add_argument("--l1-assoc", type=int, default=8)
    ap.add_argument("--ll", type=int, default=524288,
                    help="last-level bytes (default 524288: a Zen 3 core's L2; 33554432 for its L3)")
    ap.add_argument("--ll-assoc", type=int, default=8)
    ap.add_argument("--rto-min", type=int, default=60000,
                    help="rr --rto-min for TCP (default 60000, see above; 0: rr's default)")
    ap.add_argument("--top", type=int, default=12, help="functions listed per binary by LL misses")
    ap.add_argument("--json", action="store_true", help="one JSON object per binary instead of tables")
    argv = sys.argv[1:]
    rr_args = []
    if "--" in argv:  # what follows goes to rr as it is
        cut = argv.index("--")
        argv, rr_args = argv[:cut], argv[cut + 1:]
    ap.epilog = "Options after -- go to hotpath rr (e.g. -- --ipv6)."
    args = ap.parse_args(argv)
    args.rr_args = rr_args
    if args.flows <= 0 or args.duration <= 0 or args.ll <= 0 or args.l1 <= 0 or args.top < 0:
        sys.exit("rr_cachesim: --flows, --duration, --l1 and --ll must be positive, --top not negative")
    if not 0 <= args.rto_min <= 60000:
        sys.exit("rr_cachesim: --rto-min wants 0 to 60000 ms")
    if shutil.which("valgrind") is None:
        sys.exit("rr_cachesim: valgrind is not installed (apt-get install valgrind)")
    for b in args.binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"rr_cachesim: {b}: not an executable")

    rows = []
    for b in args.binaries:
        with tempfile.TemporaryDirectory(prefix="rr_cachesim.") as wd:
            res, events, totals, funcs = run_one(b, args, wd)
        txns = res["transactions"]
        m = misses(totals)
        timer_ll = sum(misses(c)["ll"] for f, c in funcs.items() if TIMER_CODE.match(f))
        top = sorted(funcs.items(), key=lambda kv: -misses(kv[1])["ll"])[: args.top]
        rows.append({
            "binary": b, "layout": res.get("layout", "?"), "flows": args.flows,
            "transactions": txns, "ir_per_txn": totals.get("Ir", 0) / txns,
            "d1_miss_per_txn": m["d1"] / txns, "ll_miss_per_txn": m["ll"] / txns,
            "ll_rd_per_txn": m["ll_rd"] / txns, "ll_wr_per_txn": m["ll_wr"] / txns,
            "ll_timer_per_txn": timer_ll / txns,
            "top": [(f, misses(c)["ll_rd"] / txns, misses(c)["ll_wr"] / txns) for f, c in top],
        })

    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    ref = rows[0]
    rto = f" --rto-min {args.rto_min}" if args.rto_min and "udp" not in args.rr_args else ""
    print(f"hotpath rr --flows {args.flows}{rto} {' '.join(args.rr_args)} under callgrind: "
          f"L1 {args.l1} B {args.l1_assoc}-way, LL {args.ll} B {args.ll_assoc}-way; per transaction")
    print(f"  {'binary':28s} {'layout':8s} {'txns':>8s} {'instr':>7s} {'D1 miss':>8s} "
          f"{'LL miss':>8s} {'(rd':>6s} {'wr)':>6s} {'timers':>7s} {'LL vs first':>11s}")
    for r in rows:
        print(f"  {r['binary'][-28:]:28s} {r['layout']:8s} {r['transactions']:8d} {r['ir_per_txn']:7.0f} "
              f"{r['d1_miss_per_txn']:8.1f} {r['ll_miss_per_txn']:8.2f} {r['ll_rd_per_txn']:6.2f} "
              f"{r['ll_wr_per_txn']:6.2f} {r['ll_timer_per_txn']:7.2f} "
              f"{r['ll_miss_per_txn'] / ref['ll_miss_per_txn']:10.3f}x")
    for r in rows:
        print(f"\n  {r['binary']} ({r['layout']}): LL misses per transaction by function (read, write)")
        for f, rd, wr in r["top"]:
            print(f"    {f:40s} {rd:6.2f} {wr:6.2f}")


if __name__ == "__main__":
    main()
