#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Where the time goes, per frame: instructions by function for each stack of `hotpath bench peers`.

Runs one workload of `hotpath bench peers` for each stack (hotpath and lwIP inside the
hotpath binary, smoltcp in its driver, build-peers/smoltcp/release/hotpath-peer-smoltcp)
under valgrind's callgrind, collecting only inside the measured window (the function
ph_measured_window of bench/peers/harness.c, peers_measured_window of the smoltcp
driver: --toggle-collect), and divides each function's own instruction count (Ir) by the
transactions (connections, echoes) and by the frames the window carried. Instruction
counts do not depend on how busy the host is; they say nothing of cache misses
(scripts/rr_cachesim.py simulates those for `hotpath rr`).

    scripts/peers_profile.py build/hotpath                       # tcp_rr_1, every stack
    scripts/peers_profile.py build/hotpath --workload tcp_rr_1000 --top 25
    scripts/peers_profile.py build/hotpath --stacks hotpath,smoltcp --json
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rr_cachesim import parse_dump  # noqa: E402  (the same callgrind dump reader)

STACKS = ["hotpath", "lwip", "smoltcp"]
WORKLOADS = ["tcp_rr_1", "tcp_rr_1000", "tcp_bulk", "tcp_crr", "udp_echo"]
UNIT = {"tcp_rr_1": "transaction", "tcp_rr_1000": "transaction", "tcp_bulk": "byte",
        "tcp_crr": "connection", "udp_echo": "echo"}

def default_smoltcp(hotpath):
    """The smoltcp driver where scripts/deps.sh builds it, beside the source tree."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(src, "build-peers", "smoltcp", "release", "hotpath-peer-smoltcp")


def command(stack, args):
    if stack == "smoltcp":
        return [args.smoltcp, "--workloads", args.workload, "--seconds", str(args.seconds),
                "--warm", "0.05"], os.environ.copy()
    env = dict(os.environ, HP_PEERS_STACKS=stack, HP_PEERS_WORKLOADS=args.workload,
               HP_PEERS_SECONDS=str(args.seconds))
    return [args.hotpath, "bench", "peers", "--quick", "--json", "--cpu", "-1"], env


def result_of(stack, out, workload):
    """The run's count and frames from its JSON (the bench's or the driver's)."""
    d = json.loads(out.strip().splitlines()[-1])
    for r in d.get("results", []):
        if r.get("workload") == workload and r.get("stack", stack) == stack:
            if r.get("value") is None or r.get("ok") is False:
                sys.exit(f"peers_profile: {stack} {workload} failed: {r.get('failed') or r.get('why')}")
            return r["count"], r.get("frames", 0)
    sys.exit(f"peers_profile: {stack} printed no {workload} result")


def run_one(stack, args, wd):
    out = os.path.join(wd, f"cg.{stack}")
    cmd, env = command(stack, args)
    vg = ["valgrind", "--tool=callgrind", "--toggle-collect=*measured_window*",
          f"--callgrind-out-file={out}", "--dump-instr=no", "--collect-jumps=no"]
    if args.cache_sim:  # rr_cachesim.py's model: a Zen 3 core's L1 and L2 by default
        vg += ["--cache-sim=yes", f"--I1={args.l1},8,64", f"--D1={args.l1},8,64", f"--LL={args.ll},8,64"]
    if args.branch_sim:
        vg += ["--branch-sim=yes"]
    p = subprocess.run(vg + cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):  # the bench exits 1 when a goal row fails to measure
        sys.exit(f"peers_profile: {stack} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    count, frames = result_of(stack, p.stdout, args.workload)
    events, totals, funcs = parse_dump(out)
    files = parse_files(out)
    misses = {"d1": totals.get("D1mr", 0) + totals.get("D1mw", 0),
              "ll": totals.get("DLmr", 0) + totals.get("DLmw", 0)} if args.cache_sim else {}
    if args.branch_sim:  # callgrind's predictor: mispredicted conditional and indirect branches
        misses["bc"] = totals.get("Bcm", 0)
        misses["bi"] = totals.get("Bim", 0)
    return count, frames, totals.get("Ir", 0), {f: c.get("Ir", 0) for f, c in funcs.items()}, files, misses


def parse_files(path):
    """Own instructions (Ir) by source file of a callgrind dump, inlined code counted
    in the file it was inlined from (fi= / fe=): with LTO, smoltcp's code sits inside
    the driver's functions, but its lines are still its own."""
    names = {}
    by_file = collections.Counter()
    fl = cur = None
    skip = False

    def name(m):
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), m.group(1))

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if skip:
                skip = False
                continue
            m = re.match(r"^(fl|fi|fe|fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind = m.group(1)
                m2 = re.match(r"^\w+=\((\d+)\)(?: (.*))?$", line)
                if kind == "fn":
                    cur = fl
                else:
                    v = name(m2)
                    if kind == "fl":
                        fl = cur = v
                    elif "/lib/gcc/" in v or "/lib/llvm" in v:
                        cur = fl  # compiler intrinsics: the code of the file they sit in
                    else:
                        cur = v
                continue
            m = re.match(r"^c(fi|fl)=\((\d+)\)(?: (.*))?$", line)
            if m:
                name(re.match(r"^\w+=\((\d+)\)(?: (.*))?$", line))
                continue
            if line.startswith("calls="):
                skip = True
                continue
            if cur and line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                if len(parts) > 1:
                    by_file[cur] += int(parts[1])
    return by_file


def file_label(path):
    """A short name and a category (stack, harness, libc, rust) for a source file."""
    path = os.path.normpath(path)  # a header included as "../wire/x.h" is still ours
    m = re.search(r"/smoltcp-[\d.]+/src/(.*)$", path)
    if m:
        return "smoltcp " + m.group(1), "stack"
    m = re.search(r"/lwip/src/(.*)$", path)
    if m:
        return "lwip " + m.group(1), "stack"
    m = re.search(r"/bench/peers/(.*)$", path)
    if m:
        return "harness " + m.group(1), "harness"
    if "/rustc/" in path or "/.cargo/registry/" in path:
        return "rust " + re.sub(r"^.*?/library/", "", path), "rust std"
    m = re.search(r"/(src/(?:base|buf|link|wire|net|sock|app)/[^/]+|include/hotpath/.*)$", path)
    if m:
        return "hotpath " + m.group(1), "stack"
    return "libc/vdso " + os.path.basename(path), "libc/vdso"


def short(name):
    """Rust paths without their hashes and generics, for the table."""
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    name = re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", name))
    return name if len(name) <= 58 else name[:55] + "..."


def profile(stack, args):
    with tempfile.TemporaryDirectory(prefix="peers_profile.") as wd:
        count, frames, ir, funcs, files, misses = run_one(stack, args, wd)
    if count <= 0:
        sys.exit(f"peers_profile: {stack}: nothing completed in the window")
    per = 1448 if args.workload == "tcp_bulk" else 1  # bytes: per full segment instead
    units = count / per
    cats = collections.Counter()
    labelled = collections.Counter()
    for path, v in files.items():
        label, cat = file_label(path)
        cats[cat] += v
        labelled[label] += v
    top = sorted(funcs.items(), key=lambda kv: -kv[1])[: args.top]
    top_files = sorted(labelled.items(), key=lambda kv: -kv[1])[: args.top]
    row = {
        "stack": stack, "workload": args.workload,
        "unit": "segment (1448 B)" if per > 1 else UNIT[args.workload],
        "count": count, "frames": frames, "frames_per_unit": frames / units,
        "ir_per_unit": ir / units, "ir_per_frame": ir / frames if frames else None,
        "by_category": {c: v / units for c, v in sorted(cats.items(), key=lambda kv: -kv[1])},
        "top": [(short(f), v / units) for f, v in top],
        "top_files": [(f, v / units) for f, v in top_files],
    }
    if "d1" in misses:
        row["d1_miss_per_unit"] = misses["d1"] / units
        row["ll_miss_per_unit"] = misses["ll"] / units
    if "bc" in misses:
        row["cond_mispredict_per_unit"] = misses["bc"] / units
        row["ind_mispredict_per_unit"] = misses["bi"] / units
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("hotpath", help="the hotpath binary (build/hotpath)")
    ap.add_argument("--workload", default="tcp_rr_1", choices=WORKLOADS)
    ap.add_argument("--stacks", default=",".join(STACKS), help="comma-separated (default: all three)")
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="measured window in valgrind's slow time (default 2)")
    ap.add_argument("--smoltcp", help="the smoltcp driver (default: build-peers/ of the source tree)")
    ap.add_argument("--top", type=int, default=15, help="functions listed per stack")
    ap.add_argument("--json", action="store_true", help="one JSON object per stack")
    ap.add_argument("--cache-sim", action="store_true",
                    help="also simulated data cache misses (callgrind --cache-sim; slower)")
    ap.add_argument("--l1", type=int, default=32768, help="L1 bytes with --cache-sim (8-way)")
    ap.add_argument("--ll", type=int, default=524288,
                    help="last level bytes with --cache-sim (8-way; default a Zen 3 core's L2)")
    ap.add_argument("--branch-sim", action="store_true",
                    help="also simulated branch mispredictions (callgrind --branch-sim; a simple "
                         "predictor, a guide rather than a CPU's count)")
    args = ap.parse_args()
    args.smoltcp = args.smoltcp or default_smoltcp(args.hotpath)
    stacks = [s for s in args.stacks.split(",") if s]
    if any(s not in STACKS for s in stacks) or args.seconds <= 0 or args.top < 0:
        sys.exit("peers_profile: --stacks from hotpath,lwip,smoltcp; --seconds > 0; --top >= 0")
    if shutil.which("valgrind") is None:
        sys.exit("peers_profile: valgrind is not installed (apt-get install valgrind)")
    rows = []
    for s in stacks:
        if s == "smoltcp" and not os.access(args.smoltcp, os.X_OK):
            print(f"peers_profile: SKIP smoltcp: {args.smoltcp} not built (scripts/deps.sh)", file=sys.stderr)
            continue
        rows.append(profile(s, args))
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    print_tables(rows, args)


def print_tables(rows, args):
    unit = rows[0]["unit"] if rows else ""
    print(f"{args.workload} under callgrind, the measured window only: instructions per {unit}")
    print(f"  {'stack':8s} {'count':>9s} {'frames':>7s} {'instr':>8s} {'per frame':>10s}   by category")
    for r in rows:
        ipf = f"{r['ir_per_frame']:10.0f}" if r["ir_per_frame"] else f"{'-':>10s}"
        cats = ", ".join(f"{c} {v:.0f}" for c, v in r["by_category"].items())
        print(f"  {r['stack']:8s} {r['count']:9d} {r['frames_per_unit']:7.2f} {r['ir_per_unit']:8.0f} {ipf}   "
              f"{cats}")
    if args.cache_sim:
        print(f"  simulated data cache misses per {unit} (L1 {args.l1} B, last level {args.ll} B): "
              + ", ".join(f"{r['stack']} L1 {r['d1_miss_per_unit']:.1f} LL {r['ll_miss_per_unit']:.1f}"
                          for r in rows))
    if args.branch_sim:
        print(f"  simulated mispredicted branches per {unit}: "
              + ", ".join(f"{r['stack']} conditional {r['cond_mispredict_per_unit']:.1f} indirect "
                          f"{r['ind_mispredict_per_unit']:.1f}" for r in rows))
    for r in rows:
        print(f"\n  {r['stack']}: own instructions per {unit}, by source file (inlined code where it "
              f"came from) | by function")
        n = max(len(r["top_files"]), len(r["top"]))
        for i in range(n):
            fa = r["top_files"][i] if i < len(r["top_files"]) else ("", 0)
            fu = r["top"][i] if i < len(r["top"]) else ("", 0)
            left = f"{fa[0][-44:]:44s} {fa[1]:6.0f}" if fa[0] else " " * 51
            right = f"{fu[0][-44:]:44s} {fu[1]:6.0f}" if fu[0] else ""
            print(f"    {left} | {right}")


if __name__ == "__main__":
    main()
