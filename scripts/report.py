# SPDX-License-Identifier: BSD-3-Clause
# Plots the JSON results that `hotpath demo` writes: one PNG per known experiment, next to its JSON.
"""Usage: python3 scripts/report.py REPORT_DIR

Reads REPORT_DIR/*.json and writes REPORT_DIR/NAME.png for every NAME.json
that has a plotter in PLOTTERS (keyed by file name without ".json"); other
JSON files are skipped with a note. Prints one line per PNG written.

Exit status: 0 on success, 1 if a plot failed, 2 on a usage error, and 3 when
matplotlib is not installed (`hotpath demo` relies on that exact code).

To plot a new experiment: write plot_NAME(data, png_path) and add it to
PLOTTERS.
"""
import glob
import json
import os
import sys
import textwrap
import traceback

PROG = "report.py"

# Filled by load_matplotlib(): the pyplot and ticker modules.
plt = None
ticker = None


def load_matplotlib():
    global plt, ticker
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as pyplot
        import matplotlib.ticker as mticker
    except ImportError:
        print(f"{PROG}: matplotlib is not installed; plots skipped", file=sys.stderr)
        sys.exit(3)
    plt, ticker = pyplot, mticker


# ---- helpers ---------------------------------------------------------------

DPI = 150
FIGSIZE = (1400 / DPI, 700 / DPI)  # about 1400 x 700 px


def size_label(n):
    """20 -> "20", 1500 -> "1500", 65536 -> "64K"."""
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)


def size_ticks(sizes):
    """Tick positions and labels for sizes on a log axis. Sizes within 10% of
    each other (20 and 21, 1500 and 1501) share one tick, "20/21", since
    their labels would overlap."""
    groups = []
    for s in sorted(sizes):
        if groups and s <= groups[-1][0] * 1.1:
            groups[-1].append(s)
        else:
            groups.append([s])
    return [g[0] for g in groups], ["/".join(size_label(s) for s in g) for g in groups]


def decimal_label(y, _pos=None):
    """Plain decimals on a log axis: 0.02, 0.1, 1, 3."""
    if y <= 0:
        return ""
    return f"{y:.4g}"


# ---- cksum -----------------------------------------------------------------

# Fixed colours so that an implementation looks the same in every report.
CKSUM_STYLE = {
    "hotpath": {"color": "#d62728", "lw": 3.2, "zorder": 10, "marker": "o", "ms": 5},
    "scalar": {"color": "#ff7f0e"},
    "avx2": {"color": "#9467bd"},
    "avx512": {"color": "#8c564b"},
    "neon": {"color": "#8c564b"},
    "dpdk": {"color": "#1f77b4"},
    "dpdk-native": {"color": "#17becf"},
    "unroll64": {"color": "#2ca02c"},
    "naive": {"color": "#7f7f7f"},
}
CKSUM_EXTRA_COLOURS = ["#e377c2", "#bcbd22", "#393b79", "#637939", "#843c39"]


def offset_title(off):
    if off == 0:
        return "buffer at offset 0 (aligned)"
    return f"buffer at offset +{off} (odd address)" if off % 2 else f"buffer at offset +{off}"


def plot_cksum(data, png):
    results = [
        r
        for r in data.get("results", [])
        if isinstance(r.get("cycles_per_byte"), (int, float)) and r["cycles_per_byte"] > 0
    ]
    if not results:
        raise ValueError("no results to plot")

    # Implementations in the order the benchmark reported them; hotpath drawn last (on top).
    impls = list(dict.fromkeys(r["impl"] for r in results))
    offsets = sorted({int(r.get("offset", 0)) for r in results})
    sizes = sorted({int(r["size"]) for r in results})
    code = data.get("code_bytes", {}) or {}
    unit = data.get("unit", "cycles")

    # series[(impl, offset)] = ([sizes], [cycles/byte])
    series = {}
    for r in sorted(results, key=lambda r: int(r["size"])):
        xs, ys = series.setdefault((r["impl"], int(r.get("offset", 0))), ([], []))
        xs.append(int(r["size"]))
        ys.append(float(r["cycles_per_byte"]))

    styles = {}
    extra = iter(CKSUM_EXTRA_COLOURS * 4)
    for impl in impls:
        st = {"lw": 1.6, "zorder": 3, "marker": "o", "ms": 3.5, "alpha": 0.95}
        st.update(CKSUM_STYLE.get(impl, {"color": next(extra, "#000000")}))
        styles[impl] = st

    fig, axes = plt.subplots(1, len(offsets), figsize=FIGSIZE, dpi=DPI, sharey=True, squeeze=False)
    axes = axes[0]
    handles = {}
    ymin = min(r["cycles_per_byte"] for r in results)
    ymax = max(r["cycles_per_byte"] for r in results)
    for ax, off in zip(axes, offsets):
        for impl in sorted(impls, key=lambda i: i == "hotpath"):
            if (impl, off) not in series:
                continue
            xs, ys = series[(impl, off)]
            st = styles[impl]
            label = f"{impl} ({code[impl]} B)" if impl in code else impl
            (line,) = ax.plot(xs, ys, label=label, color=st["color"], lw=st["lw"],
                              zorder=st["zorder"], marker=st["marker"], ms=st["ms"],
                              alpha=st.get("alpha", 1.0))
            handles.setdefault(impl, line)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks, labels = size_ticks(sizes)
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize=8)
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_xlim(sizes[0] / 1.25, sizes[-1] * 1.25)
        ax.set_ylim(ymin / 1.3, ymax * 1.3)
        ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
        ax.yaxis.set_minor_locator(ticker.LogLocator(base=10, subs=tuple(range(1, 10))))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(True, which="major", color="#d0d0d0", lw=0.7)
        ax.grid(True, which="minor", axis="y", color="#ececec", lw=0.5)
        ax.set_title(offset_title(off), fontsize=10)
        ax.set_xlabel("buffer size (bytes)", fontsize=9)
    axes[0].set_ylabel(f"{unit} per byte (lower is better)", fontsize=9)

    # One legend for both panels, hotpath first, with code sizes.
    order = sorted(handles, key=lambda i: (i != "hotpath", impls.index(i)))
    fig.legend([handles[i] for i in order], [handles[i].get_label() for i in order],
               loc="center right", fontsize=8, title="implementation (code size)",
               title_fontsize=8, frameon=True)

    head = "Internet checksum (RFC 1071): cycles per byte vs buffer size"
    if data.get("dispatched"):
        head += f"; hotpath dispatched to {data['dispatched']}"
    sub = "; ".join(str(x) for x in (data.get("cpu"), data.get("compiler")) if x)
    fig.suptitle(head, fontsize=11, fontweight="bold", y=0.985)
    fig.text(0.5, 0.915, sub, ha="center", fontsize=8.5, color="#333333")

    notes = []
    if data.get("flags"):
        notes.append(f"flags: {data['flags']}")
    if data.get("reps"):
        notes.append(f"median of {data['reps']} reps")
    if data.get("skipped"):
        notes.append("not run on this CPU: " + ", ".join(data["skipped"]))
    goals = data.get("goals") or []
    if goals:
        met = sum(1 for g in goals if g.get("met"))
        notes.append(f"goals met: {met}/{len(goals)} (see report.md)")
    if notes:
        fig.text(0.01, 0.012, " | ".join(notes), fontsize=7, color="#555555", ha="left")

    fig.subplots_adjust(left=0.065, right=0.80, top=0.84, bottom=0.14, wspace=0.06)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


# ---- pool ------------------------------------------------------------------

POOL_COLOURS = {
    "hotpath-local": "#fdae6b",
    "hotpath-defer": "#e6550d",
    "hotpath-adaptive": "#a50f15",
    "dpdk": "#1f77b4",
    "dpdk-mbuf": "#6baed6",
    "malloc": "#7f7f7f",
}


def plot_pool(data, png):
    """Grouped bars: for each scenario, one bar per implementation; rate on
    the left (log axis: malloc and raw DPDK differ by 100x), CPU ns per buffer
    on the right."""
    results = [r for r in data.get("results", []) if r.get("mops", 0) > 0]
    if not results:
        raise ValueError("no results to plot")
    scenarios = list(dict.fromkeys(r["scenario"] for r in results))
    impls = list(dict.fromkeys(r["impl"] for r in results))
    val = {(r["scenario"], r["impl"]): r for r in results}

    fig, axes = plt.subplots(1, 2, figsize=(14, 6.2))
    width = 0.8 / max(1, len(impls))
    for ax, key, label, log in ((axes[0], "mops", "million buffers per second (log)", True),
                                (axes[1], "ns_per_obj", "CPU ns per buffer (log)", True)):
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for i, sc in enumerate(scenarios):
                r = val.get((sc, impl))
                if r and r.get(key, 0) > 0:
                    xs.append(i - 0.4 + width * (k + 0.5))
                    ys.append(float(r[key]))
            ax.bar(xs, ys, width * 0.92, label=impl,
                   color=POOL_COLOURS.get(impl, "#000000"), zorder=3)
        ax.set_xticks(range(len(scenarios)))
        ax.set_xticklabels(scenarios)
        ax.set_ylabel(label)
        if log:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
        ax.grid(axis="y", which="both", alpha=0.3, zorder=0)
    axes[0].set_title("rate (higher is better)")
    axes[1].set_title("CPU per buffer (lower is better)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.suptitle("hotpath pool: where alien frees go (LOCAL, DEFER, ADAPTIVE) vs DPDK and malloc\n"
                 f"{data.get('cpu', '')} | {data.get('compiler', '')}", fontsize=11)
    goals = data.get("goals") or []
    if goals:
        met = sum(1 for g in goals if g.get("met"))
        fig.text(0.01, 0.012, f"goals met: {met}/{len(goals)} (see report.md); "
                 f"cache {data.get('cache_size')} per thread, {data.get('n_bufs')} buffers",
                 fontsize=8, color="#555555")
    fig.subplots_adjust(left=0.06, right=0.86, top=0.84, bottom=0.1, wspace=0.22)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


TXCOMP_POLICIES = ("local", "defer", "adaptive")


def plot_txcomp(data, png):
    """Grouped bars: for each link (afxdp, mem), one bar per alien policy:
    Mpps on the left, CPU ns per packet on the right. Skipped links are
    named under the plot."""
    rows = [r for r in data.get("rows", []) if "skipped" not in r]
    skipped = [r for r in data.get("rows", []) if "skipped" in r]
    if not rows:
        raise ValueError("no measured link to plot")
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.6))
    width = 0.8 / len(TXCOMP_POLICIES)
    for ax, suffix, label in ((axes[0], "_mpps", "million packets per second"),
                              (axes[1], "_cpu_ns", "CPU ns per packet (both threads)")):
        for k, pol in enumerate(TXCOMP_POLICIES):
            xs = [i - 0.4 + width * (k + 0.5) for i in range(len(rows))]
            ys = [float(r.get(pol + suffix, 0)) for r in rows]
            ax.bar(xs, ys, width * 0.92, label=pol, color=POOL_COLOURS.get("hotpath-" + pol, "#000"),
                   zorder=3)
            for x, y in zip(xs, ys):
                ax.text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r["link"] for r in rows])
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3, zorder=0)
    axes[0].set_title("rate (higher is better)")
    axes[1].set_title("CPU per packet (lower is better)")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    fig.suptitle("txonly 64 B with transmit completions freed on a second thread, per alien policy\n"
                 f"{data.get('cpu', '')} | {data.get('compiler', '')}", fontsize=11)
    if skipped:
        fig.text(0.01, 0.012, "; ".join(f"{r['link']} skipped: {r['skipped']}" for r in skipped)[:160],
                 fontsize=8, color="#555555")
    fig.subplots_adjust(left=0.07, right=0.87, top=0.84, bottom=0.12, wspace=0.25)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


# ---- apps (issue 20: unmodified programs) ---------------------------------------

APPS_CONFIGS = ("kernel", "server-hotpath", "both-hotpath")
APPS_COLOURS = {"kernel": "#7f7f7f", "server-hotpath": "#ff7f0e", "both-hotpath": "#d62728"}


APPS_HOST_CONFIGS = (("kernel-loopback", "#7f7f7f", "kernel\nloopback"),
                     ("both-hp-memif", "#9467bd", "both on hotpath\nover memif"))


def plot_apps_host(ax, cell):
    """redis GET on one host: the kernel's loopback against memif."""
    ys = [(cell.get(("redis GET", c)) or {}).get("rps") or 0 for c, _, _ in APPS_HOST_CONFIGS]
    ys = [y * 1e-3 for y in ys]
    ax.bar([0, 1], ys, 0.6, color=[c for _, c, _ in APPS_HOST_CONFIGS], zorder=3)
    for x, y in zip([0, 1], ys):
        if y:
            ax.text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks([0, 1])
    ax.set_xticklabels([label for _, _, label in APPS_HOST_CONFIGS])
    ax.set_ylabel("redis GET requests per second (thousands)")
    ax.set_title("one host")
    ax.grid(axis="y", alpha=0.3, zorder=0)


def plot_apps(data, png):
    """Four panels: requests/s per workload (iperf3 in Gbit/s on its own
    axis would mislead: left out of the first panel), p99 latency, the
    layer's echo against the native one (server CPU per request), and redis
    GET on one host (the kernel's loopback, memif). One bar per
    configuration; unmeasured cells are left empty."""
    res = [r for r in data.get("results", []) if r.get("ok")]
    if not res:
        raise ValueError("nothing measured")
    cell = {(r["workload"], r["config"]): r for r in res}
    loads = [w for w in ("redis GET", "redis SET", "wrk 1 KiB") if any(k[0] == w for k in cell)]
    fig, axes = plt.subplots(1, 4, figsize=(18, 5.4),
                             gridspec_kw={"width_ratios": [3, 3, 1.6, 1.6]})
    width = 0.8 / len(APPS_CONFIGS)
    for ax, key, label, scale in ((axes[0], "rps", "requests per second (thousands)", 1e-3),
                                  (axes[1], "p99_us", "p99 latency (ms, client's own)", 1e-3)):
        for k, cfg in enumerate(APPS_CONFIGS):
            xs = [i - 0.4 + width * (k + 0.5) for i in range(len(loads))]
            ys = [(cell.get((w, cfg)) or {}).get(key) for w in loads]
            ys = [y * scale if y is not None else 0 for y in ys]
            ax.bar(xs, ys, width * 0.92, label=cfg, color=APPS_COLOURS[cfg], zorder=3)
            for x, y in zip(xs, ys):
                if y:
                    ax.text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(loads)))
        ax.set_xticklabels(loads)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3, zorder=0)
    axes[0].set_title("throughput (higher is better)")
    axes[1].set_title("p99 latency (lower is better)")
    axes[0].legend(fontsize=9, frameon=False)
    echo = [cell.get((w, "server-hotpath")) for w in ("echo native", "echo posix")]
    ys = [e["proc_cpu_s_per_req"] * 1e6 if e and e.get("proc_cpu_s_per_req") else 0 for e in echo]
    axes[2].bar([0, 1], ys, 0.6, color=["#2ca02c", "#d62728"], zorder=3)
    for x, y in zip([0, 1], ys):
        if y:
            axes[2].text(x, y, f"{y:.1f}", ha="center", va="bottom", fontsize=8)
    axes[2].set_xticks([0, 1])
    axes[2].set_xticklabels(["hotpath API\n(event loop)", "POSIX calls\n(the layer)"])
    axes[2].set_ylabel("server CPU us per request")
    axes[2].set_title("the same echo")
    axes[2].grid(axis="y", alpha=0.3, zorder=0)
    plot_apps_host(axes[3], cell)
    ip = {r["config"]: r.get("gbps") for r in res if r["workload"] == "iperf3"}
    note = "iperf3, one stream (Gbit/s, reported, not a goal): " + ", ".join(
        f"{c} {ip[c]:.2f}" for c in APPS_CONFIGS if ip.get(c) is not None)
    fig.text(0.01, 0.012, note[:170], fontsize=8, color="#555555")
    fig.suptitle(f"unmodified programs over one veth pair ({data.get('link', '?')}; "
                 "the last panel: one host), "
                 f"{data.get('seconds', 0):.0f} s per run", fontsize=11)
    fig.subplots_adjust(left=0.05, right=0.98, top=0.86, bottom=0.16, wspace=0.28)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


# ---- layout ----------------------------------------------------------------

LAYOUT_STYLE = {
    "grouped": {"color": "#d62728", "lw": 2.6, "zorder": 10, "marker": "o"},
    "chrono": {"color": "#1f77b4", "lw": 1.8, "zorder": 8, "marker": "s"},
    "kernel": {"color": "#7f7f7f", "lw": 1.8, "zorder": 6, "marker": "^"},
}
FAMILY_LINE = {"IPv4": "-", "IPv6": "--"}


def flows_label(n):
    """1000 -> "1k", 30000 -> "30k", 100 -> "100"."""
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def plot_layout(data, png):
    """Left: CPU microseconds per transaction against flows (log-log), one
    line per configuration (grouped, chrono, kernel) and family, bars from
    the fastest to the slowest repetition. Right: the two ratios the goals
    bound, grouped/chrono and grouped/kernel, with the goals drawn."""
    cells = [c for c in data.get("cells", []) if c.get("grouped_us")]
    if not cells:
        raise ValueError("no measured cell to plot")
    families = list(dict.fromkeys(c["family"] for c in cells))
    flows = sorted({int(c["flows"]) for c in cells})
    fig, axes = plt.subplots(1, 2, figsize=FIGSIZE, dpi=DPI)
    ax, rx = axes

    for cfg, st in LAYOUT_STYLE.items():
        for fam in families:
            pts = sorted((int(c["flows"]), c[cfg + "_us"], (c.get("reps_us") or {}).get(cfg) or [])
                         for c in cells if c["family"] == fam and c.get(cfg + "_us"))
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ys = [float(p[1]) for p in pts]
            lo = [y - min(p[2]) if p[2] else 0 for y, p in zip(ys, pts)]
            hi = [max(p[2]) - y if p[2] else 0 for y, p in zip(ys, pts)]
            ax.errorbar(xs, ys, yerr=[lo, hi], label=f"{cfg} {fam}", color=st["color"], lw=st["lw"],
                        ls=FAMILY_LINE.get(fam, ":"), marker=st["marker"], ms=4.5, capsize=3,
                        zorder=st["zorder"])
    ax.set_yscale("log")
    ax.set_ylabel("CPU µs per transaction (log; lower is better)", fontsize=9)
    ax.set_title("CPU per transaction (median; bars: the runs in it, fastest to slowest)", fontsize=10)
    ax.legend(fontsize=8, loc="best", frameon=True)

    ratios = (("grouped_over_chrono", "grouped / chrono", "#d62728", data.get("goal_layout_max_ratio", 0.70)),
              ("grouped_over_kernel", "grouped / kernel", "#7f7f7f", data.get("goal_kernel_max_ratio", 0.10)))
    for key, label, colour, goal in ratios:
        drawn = False
        for fam in families:
            pts = sorted((int(c["flows"]), float(c[key])) for c in cells if c["family"] == fam and c.get(key))
            if not pts:
                continue
            drawn = True
            rx.plot([p[0] for p in pts], [p[1] for p in pts], color=colour, ls=FAMILY_LINE.get(fam, ":"),
                    marker="o", ms=4.5, lw=2, label=f"{label} {fam}")
            below = fam != families[0]  # the second family's labels under its points
            for x, y in pts:
                rx.annotate(f"{y:.2f}" if y >= 0.5 else f"{y:.3f}", (x, y), textcoords="offset points",
                            xytext=(0, -11 if below else 6), ha="center", fontsize=7, color=colour)
        if drawn:
            rx.axhline(goal, color=colour, ls=":", lw=1.2)
            rx.text(flows[0], goal, f" goal {label} <= {goal:g}", color=colour, fontsize=7.5, va="bottom")
    rx.axvspan(10000, 30000, color="#fbe3e3", alpha=0.5, zorder=0)
    rx.set_yscale("log")
    seen = [float(c[k]) for c in cells for k, *_ in ratios if c.get(k)] + [g for *_, g in ratios]
    rx.set_ylim(min(seen) / 1.3, max(seen) * 1.3)  # room for the labels above the points
    rx.yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
    rx.yaxis.set_minor_formatter(ticker.FuncFormatter(decimal_label))
    rx.tick_params(axis="y", which="minor", labelsize=7)
    rx.set_ylabel("ratio of CPU per transaction (log)", fontsize=9)
    rx.set_title("ratios (shaded: 10k-30k flows, where the layout goal holds)", fontsize=10)
    if rx.get_legend_handles_labels()[0]:
        rx.legend(fontsize=8, loc="best", frameon=True)
    if data.get("chrono_skipped"):
        why = textwrap.fill(str(data["chrono_skipped"])[:240], 60)
        rx.text(0.5, 0.5, "chrono column skipped:\n" + why, transform=rx.transAxes, ha="center",
                va="center", fontsize=8, color="#555555")

    for a in axes:
        a.set_xscale("log")
        a.set_xticks(flows)
        a.set_xticklabels([flows_label(f) for f in flows], fontsize=8)
        a.xaxis.set_minor_locator(ticker.NullLocator())
        a.set_xlim(flows[0] / 1.5, flows[-1] * 1.5)
        a.set_xlabel("flows (log)", fontsize=9)
        a.grid(True, which="major", color="#d0d0d0", lw=0.7)
        a.grid(True, which="minor", axis="y", color="#ececec", lw=0.5)
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
    ax.yaxis.set_minor_formatter(ticker.FuncFormatter(decimal_label))
    ax.tick_params(axis="y", which="minor", labelsize=7)

    fig.suptitle("tcp_rr over many flows: hot structures grouped by cache line vs chrono order, vs the kernel",
                 fontsize=11, fontweight="bold", y=0.985)
    sub = "; ".join(str(x) for x in (data.get("cpu"), data.get("compiler"), data.get("flags")) if x)
    fig.text(0.5, 0.915, sub, ha="center", fontsize=8.5, color="#333333")
    notes = [f"{data.get('sweep', '')} sweep", f"{data.get('duration_s')} s per run",
             f"median of {data.get('reps')}", f"threads on CPUs {data.get('pinned_cpus') or 'not pinned'}"]
    goals = data.get("goals") or []
    applying = [g for g in goals if g.get("applies")]
    if applying:
        notes.append(f"goals met: {sum(1 for g in applying if g.get('met'))}/{len(applying)} (see report.md)")
    fig.text(0.01, 0.012, " | ".join(notes), fontsize=7, color="#555555", ha="left")
    fig.subplots_adjust(left=0.065, right=0.98, top=0.84, bottom=0.14, wspace=0.2)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


def plot_layout_sim(data, png):
    """Bars: simulated misses per transaction (L1d and the last level) and
    instructions per transaction, one bar per layout, grouped/chrono written
    above chrono's bar. The counts come from valgrind's cache simulator and do
    not move with the host's load."""
    rows = [r for r in data.get("rows", []) if r.get("transactions")]
    if not rows:
        raise ValueError("no simulated run to plot")
    metrics = (("d1_miss_per_txn", "L1d misses"), ("ll_miss_per_txn", "last-level misses"),
               ("ir_per_txn", "instructions"))
    fig, axes = plt.subplots(1, 3, figsize=FIGSIZE, dpi=DPI)
    ref = rows[0]
    for ax, (key, label) in zip(axes, metrics):
        xs = range(len(rows))
        ys = [float(r[key]) for r in rows]
        colours = [LAYOUT_STYLE.get(r["layout"], {}).get("color", "#333333") for r in rows]
        ax.bar(xs, ys, 0.6, color=colours, zorder=3)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["layout"] for r in rows], fontsize=9)
        ax.set_title(f"{label} per transaction", fontsize=10)
        ax.grid(axis="y", alpha=0.3, zorder=0)
        top = max(ys) if ys else 1
        ax.set_ylim(0, top * 1.18 if top >= 0.1 else 1)
        for x, y, r in zip(xs, ys, rows):
            text = f"{y:.1f}" if key != "ir_per_txn" else f"{y:.0f}"
            ref_v = float(ref[key])
            if r is not ref and ref_v > 0 and y > 0 and (key != "ll_miss_per_txn" or min(y, ref_v) >= 0.1):
                text += f"\n{ref['layout']}/{r['layout']} {ref_v / y:.2f}x"
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 3), ha="center", va="bottom",
                        fontsize=8)
        if key == "ll_miss_per_txn" and top < 0.1:
            ax.text(0.5, 0.5, "all in the last level", transform=ax.transAxes, ha="center", fontsize=8,
                    color="#555555")
    ll = data.get("last_level") or {}
    l1 = data.get("l1d") or {}
    fig.suptitle(f"tcp_rr, {flows_label(int(data.get('flows', 0)))} flows {data.get('family', '')}: "
                 "simulated cache misses per transaction, by layout (callgrind; host-independent)",
                 fontsize=11, fontweight="bold", y=0.985)
    fig.text(0.5, 0.905, f"L1d {int(l1.get('bytes', 0)) // 1024} KiB {l1.get('assoc', '?')}-way, last level "
             f"{int(ll.get('bytes', 0)) >> 20} MiB {ll.get('assoc', '?')}-way, no prefetcher; rr's window "
             f"{data.get('window_s')} s of valgrind time", ha="center", fontsize=8.5, color="#333333")
    fig.subplots_adjust(left=0.05, right=0.98, top=0.8, bottom=0.1, wspace=0.25)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


# ---- soak ------------------------------------------------------------------

SOAK_PHASES = {
    "flood": ("#d62728", "SYN flood"),
    "spoofed": ("#ff7f0e", "spoofed SYN flood"),
    "rfc5961": ("#9467bd", "RFC 5961 injections"),
    "garbage": ("#8c564b", "random frames"),
    "frags": ("#e377c2", "fragment trains"),
    "scans": ("#17becf", "nmap scans"),
}


def plot_soak(data, png):
    """`make soak`: serve's RSS and buffers in use each second, the hostile
    phases shaded behind them (churn and bulk run throughout)."""
    samples = data.get("samples") or []
    if len(samples) < 2:
        raise ValueError("fewer than two samples")
    t = [s["t"] for s in samples]
    fig, axes = plt.subplots(2, 1, figsize=FIGSIZE, dpi=DPI, sharex=True)
    series = ((axes[0], [s["rss_kb"] / 1024 for s in samples], "serve RSS (MB)", "#1f77b4"),
              (axes[1], [s["bufs_in_use"] for s in samples], "buffers in use", "#2ca02c"))
    seen = set()
    for ax, ys, label, colour in series:
        ax.plot(t, ys, color=colour, lw=1.4, zorder=5)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0, top=max(ys) * 1.15 + 1)
        ax.grid(alpha=0.3, zorder=0)
        # Shade each run of one phase.
        start = 0
        for i in range(1, len(samples) + 1):
            if i == len(samples) or samples[i]["phase"] != samples[start]["phase"]:
                ph = samples[start]["phase"]
                if ph in SOAK_PHASES:
                    col, name = SOAK_PHASES[ph]
                    ax.axvspan(t[start], t[i - 1] + 1, color=col, alpha=0.15, lw=0, zorder=1,
                               label=name if (ax is axes[0] and ph not in seen) else None)
                    if ax is axes[0]:
                        seen.add(ph)
                start = i
    axes[1].set_xlabel("seconds")
    fig.legend(loc="lower center", bbox_to_anchor=(0.5, 0.035), ncol=len(SOAK_PHASES), fontsize=8,
               frameon=False)
    churn, bulk = data.get("churn", {}), data.get("bulk", {})
    fig.suptitle(f"hotpath serve soak: {data.get('minutes')} min over {data.get('link')}, "
                 f"{data.get('churn_per_s')} new connections/s, bulk both ways, {data.get('rounds')} rounds "
                 "of the hostile mixture", fontsize=11)
    fig.text(0.01, 0.012, f"churn: {churn.get('ok', '?')} ok, {churn.get('failed', '?')} failed; "
             f"bulk: {bulk.get('sent', 0) >> 20} MiB in, {bulk.get('received', 0) >> 20} MiB out; "
             f"RSS after 1 min {data.get('rss_kb_after_first_minute', 0) >> 10} MB, last minute "
             f"{data.get('rss_kb_last_minute', 0) >> 10} MB | {data.get('cpu', '')}", fontsize=7, color="#555555")
    fig.subplots_adjust(left=0.07, right=0.98, top=0.9, bottom=0.2, hspace=0.12)
# ---- paths -------------------------------------------------------------------

PATHS_STYLE = {
    "kernel-cubic-sack": "#7f7f7f",
    "kernel-reno-nosack": "#c7c7c7",
    "hotpath-cubic-sack": "#d62728",
    "hotpath-newreno-nosack": "#ff9896",
}


def paths_grouped(ax, conds, senders, value, fmt):
    """Bars per condition, one per sender, labelled with fmt(value)."""
    width = 0.8 / max(1, len(senders))
    for k, s in enumerate(senders):
        xs, ys = [], []
        for i, (_, rows) in enumerate(conds):
            v = value(rows.get(s))
            if v is not None:
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(v)
        ax.bar(xs, ys, width * 0.92, label=s, color=PATHS_STYLE.get(s, "#000"), zorder=3)
        for x, y in zip(xs, ys):
            ax.text(x, y, fmt(y), ha="center", va="bottom", fontsize=6.5, rotation=90)
    ax.set_xticks(range(len(conds)))
    ax.set_xticklabels([c for c, _ in conds], fontsize=8)
    ax.grid(axis="y", alpha=0.3, zorder=0)


def plot_paths(data, png):
    """Left: bulk goodput per condition and sender. Middle: short flows'
    completion time, p99 bars with the p50 as a tick. Right: path MTU, 10 MB
    echoed, the kernel's client against hotpath connect per case. The tail
    loss trials and the goals below."""
    if data.get("skipped"):
        raise ValueError("not run: " + data["skipped"])
    conds, senders = [], []
    for r in data.get("results", []):
        if r["row"] not in senders:
            senders.append(r["row"])
        if not conds or conds[-1][0] != r["condition"]:
            conds.append((r["condition"], {}))
        conds[-1][1][r["row"]] = r
    if not conds:
        raise ValueError("no result to plot")
    fig, axes = plt.subplots(1, 3, figsize=(15, 6), gridspec_kw={"width_ratios": [3, 3, 2]})
    paths_grouped(axes[0], conds, senders,
                  lambda r: r.get("goodput_mbps") if r and "failed" not in r else None,
                  lambda y: f"{y:.0f}")
    axes[0].set_ylabel("goodput, Mbit/s (bottleneck 100)")
    axes[0].set_title("bulk (higher is better)")
    fct = [(c, rows) for c, rows in conds if any(r.get("fct_p99_ms") for r in rows.values())]
    if fct:
        paths_grouped(axes[1], fct, senders,
                      lambda r: r.get("fct_p99_ms") if r and r.get("fct_p99_ms") else None,
                      lambda y: f"{y:.0f}")
        width = 0.8 / max(1, len(senders))
        for k, s in enumerate(senders):
            for i, (_, rows) in enumerate(fct):
                r = rows.get(s)
                if r and r.get("fct_p50_ms"):
                    axes[1].plot(i - 0.4 + width * (k + 0.5), r["fct_p50_ms"], "_", color="black",
                                 ms=7, zorder=5)
        axes[1].set_yscale("log")
        axes[1].yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
    axes[1].set_ylabel("completion time, ms (bar p99, tick p50)")
    axes[1].set_title("short flows of 100 KB (lower is better)")
    pm = [r for r in data.get("pmtu", []) if "seconds" in r]
    cases = []
    for r in pm:
        if r["case"] not in cases:
            cases.append(r["case"])
    for k, client in enumerate(("kernel", "hotpath-connect")):
        xs, ys = [], []
        for i, c in enumerate(cases):
            for r in pm:
                if r["case"] == c and r["client"] == client:
                    xs.append(i - 0.2 + 0.4 * k)
                    ys.append(r["seconds"])
        axes[2].bar(xs, ys, 0.37, label=client,
                    color=PATHS_STYLE["kernel-cubic-sack" if k == 0 else "hotpath-cubic-sack"],
                    zorder=3)
        for x, y in zip(xs, ys):
            axes[2].text(x, y, f"{y:.2f}", ha="center", va="bottom", fontsize=7)
    axes[2].set_xticks(range(len(cases)))
    axes[2].set_xticklabels([textwrap.fill(c, 10) for c in cases], fontsize=7.5)
    axes[2].set_ylabel("seconds to echo it all")
    axes[2].set_title("path MTU, 1280-byte link\n(lower is better)")
    axes[2].grid(axis="y", alpha=0.3, zorder=0)
    axes[2].legend(fontsize=8, frameon=False)
    axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=2, fontsize=8, frameon=False)
    setup = data.get("setup", {})
    fig.suptitle(f"TCP through hotpath impair: {setup.get('rate_mbit')} Mbit/s, {setup.get('rtt_ms')} ms RTT, "
                 f"{setup.get('queue_bytes')}-byte queue, a kernel receiver\n"
                 f"{data.get('cpu', '')} | {data.get('compiler', '')}", fontsize=11)
    notes = []
    for t in data.get("tail_loss", []):
        if "trials" in t:
            notes.append(f"tail loss, {t['row']}: {t['within_3_rtt_no_rto']}/{t['trials']} repaired within "
                         f"3 RTTs without an RTO (p50 {t['repair_p50_ms']} ms)")
    goals = data.get("goals", [])
    notes.append(f"goals met: {sum(1 for g in goals if g.get('met'))} of {len(goals)}")
    fig.text(0.4, 0.015, "\n".join(notes), fontsize=8, color="#333333")
    fig.subplots_adjust(left=0.05, right=0.99, top=0.85, bottom=0.2, wspace=0.25)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


# ---- driver ----------------------------------------------------------------

# ---- peers ------------------------------------------------------------------

PEERS_COLOURS = {"hotpath": "#d62728", "lwip": "#1f77b4", "smoltcp": "#ff7f0e"}
PEERS_SPEED = ("tcp_rr_1", "tcp_rr_1000", "tcp_bulk", "tcp_crr", "udp_echo")
PEERS_MEM = ("idle_rss", "idle_accounted", "idle_held")


def plot_peers(data, png):
    """Left: each stack's speed relative to hotpath's in every row (higher is
    better: a rate over hotpath's, or hotpath's cost over the stack's), with
    the goal lines (hotpath >= 1x and 2x the better peer). Right: bytes per
    idle connection, log axis."""
    val = {(r["stack"], r["workload"]): r for r in data.get("results", [])
           if r.get("value") is not None}
    higher = {q["workload"]: q.get("higher_is_better") for q in data.get("ratios", [])}
    stacks = [s for s in PEERS_COLOURS if any(k[0] == s for k in val)]
    rows = [w for w in PEERS_SPEED if ("hotpath", w) in val]
    if not rows:
        raise ValueError("no hotpath row to plot")
    fig, axes = plt.subplots(1, 2, figsize=(14, 6.2), gridspec_kw={"width_ratios": [2.2, 1]})
    width = 0.8 / max(1, len(stacks))
    ax = axes[0]
    for k, st in enumerate(stacks):
        xs, ys = [], []
        for i, w in enumerate(rows):
            r, h = val.get((st, w)), val["hotpath", w]
            if not r or not r["value"] or not h["value"]:
                continue
            rel = r["value"] / h["value"] if higher.get(w) else h["value"] / r["value"]
            xs.append(i - 0.4 + width * (k + 0.5))
            ys.append(rel)
        ax.bar(xs, ys, width * 0.92, label=st, color=PEERS_COLOURS[st], zorder=3)
        for x, y in zip(xs, ys):
            ax.text(x, y, f"{y:.2f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="#333333", lw=1, zorder=4)
    ax.axhline(0.5, color="#333333", lw=1, ls="--", zorder=4)
    ax.text(-0.45, 0.5, "goal: every peer at or below 0.5x hotpath", fontsize=7, ha="left",
            va="top", color="#333333")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([w + "\n" + val["hotpath", w]["unit"] for w in rows])
    ax.set_ylabel("speed relative to hotpath (log; higher is better)")
    ax.set_title("speed rows, one thread polling both instances")
    ax.grid(axis="y", which="both", alpha=0.3, zorder=0)
    ax.legend(loc="upper right", fontsize=9)
    plot_peers_memory(axes[1], val, stacks)
    fig.suptitle("hotpath vs lwIP and smoltcp, the same workloads on the same harness\n"
                 f"{data.get('cpu', '')} | {data.get('compiler', '')}", fontsize=11)
    goals = data.get("goals") or []
    fig.text(0.01, 0.012, f"goals met: {sum(1 for g in goals if g.get('met'))}/{len(goals)} "
             f"(see report.md); medians of {data.get('reps')} rounds", fontsize=8, color="#555555")
    fig.subplots_adjust(left=0.06, right=0.98, top=0.86, bottom=0.14, wspace=0.22)
    fig.savefig(png, dpi=DPI)
    plt.close(fig)


def plot_peers_memory(ax, val, stacks):
    rows = [w for w in PEERS_MEM if any((s, w) in val for s in stacks)]
    width = 0.8 / max(1, len(stacks))
    for k, st in enumerate(stacks):
        xs, ys = [], []
        for i, w in enumerate(rows):
            r = val.get((st, w))
            if r and r["value"] and r["value"] > 0:
                xs.append(i - 0.4 + width * (k + 0.5))
                ys.append(r["value"])
        ax.bar(xs, ys, width * 0.92, label=st, color=PEERS_COLOURS[st], zorder=3)
        for x, y in zip(xs, ys):
            ax.text(x, y, f"{y:.0f}", ha="center", va="bottom", fontsize=7)
    ax.axhline(512, color="#333333", lw=1, ls="--", zorder=4)
    ax.text(-0.45, 512, "goal: 512 B", fontsize=7, va="bottom", color="#333333")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(decimal_label))
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([w.replace("idle_", "idle\n") for w in rows])
    ax.set_ylabel("bytes per idle connection endpoint (log)")
    ax.set_title("10,000 idle connections (lower is better)")
    ax.grid(axis="y", which="both", alpha=0.3, zorder=0)


PLOTTERS = {
    "cksum": plot_cksum,
    "pool": plot_pool,
    "txcomp": plot_txcomp,
    "layout": plot_layout,
    "layout_sim": plot_layout_sim,
    "paths": plot_paths,
    "peers": plot_peers,
    "soak": plot_soak,
    "apps": plot_apps,
}


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: python3 scripts/report.py REPORT_DIR", file=sys.stderr)
        return 2
    rdir = argv[1]
    if not os.path.isdir(rdir):
        print(f"{PROG}: {rdir}: not a directory", file=sys.stderr)
        return 2
    load_matplotlib()

    failed = 0
    for path in sorted(glob.glob(os.path.join(rdir, "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        plotter = PLOTTERS.get(name)
        if plotter is None:
            print(f"{PROG}: note: no plotter for {os.path.basename(path)}; ignored", file=sys.stderr)
            continue
        png = os.path.join(rdir, name + ".png")
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            plotter(data, png)
        except Exception as e:  # one bad experiment must not hide the others
            failed += 1
            print(f"{PROG}: {path}: {type(e).__name__}: {e}", file=sys.stderr)
            if os.environ.get("HP_REPORT_DEBUG"):
                traceback.print_exc()
            continue
        print(f"wrote {png}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
