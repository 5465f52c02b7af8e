#!/usr/bin/python3
"""Plots a `bulkhead-bench --json` run: the warm-cell latency distribution
per tier (engine API and daemon, python and javascript) against their
targets (bench/RESULTS.md), and the pairwise ratios.

    bulkhead-bench --json > run.json
    /usr/bin/python3 bench/plot.py run.json bench/latency.png   # Debian python3-matplotlib
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402


def figures(doc):
    return {(f["key"], f["tier"]): f for f in doc["figures"]}


def ecdf(values):
    xs = sorted(values)
    n = len(xs)
    return xs, [(i + 1) / n for i in range(n)]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RUN.json OUT.png")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    fig_by = figures(doc)
    tiers = [t for t in ("container", "kernel") if ("warm_engine_python", t) in fig_by]
    series = [
        ("warm_engine_python", "engine API, python", "tab:blue", "-"),
        ("warm_engine_javascript", "engine API, javascript", "tab:orange", "-"),
        ("warm_daemon_python", "daemon (unix socket), python", "tab:blue", ":"),
        ("warm_daemon_javascript", "daemon (unix socket), javascript", "tab:orange", ":"),
        ("warm_engine_full_python", "engine API, store FULL, python", "tab:green", "--"),
    ]
    targets = {"container": (0.5, 1.5), "kernel": (2.0, 3.0)}
    title = {"container": "container tier (crun)", "kernel": "kernel tier (gVisor runsc, ptrace)"}

    fig, axes = plt.subplots(1, len(tiers), figsize=(6.5 * len(tiers), 4.6), squeeze=False)
    for ax, tier in zip(axes[0], tiers):
        for key, label, color, style in series:
            f = fig_by.get((key, tier))
            if not f or not f.get("samples"):
                continue
            xs, ys = ecdf(f["samples"])
            med = f["summary"]["median"]
            ax.plot(xs, ys, style, color=color, lw=1.6,
                    label="%s (median %.2f ms)" % (label, med))
        eng, dae = targets[tier]
        ax.axvline(eng, color="black", lw=1, ls="-", alpha=0.6)
        ax.text(eng, 0.02, " engine target %.1f ms" % eng, rotation=90, va="bottom", fontsize=8)
        ax.axvline(dae, color="black", lw=1, ls=":", alpha=0.6)
        ax.text(dae, 0.02, " daemon target %.1f ms" % dae, rotation=90, va="bottom", fontsize=8)
        ax.set_xscale("log")
        plain = FuncFormatter(lambda v, _pos: ("%g" % v))
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain)
        ax.tick_params(axis="x", which="minor", labelsize=7)
        ax.set_xlabel("warm cell round trip, ms (log scale)")
        ax.set_ylabel("fraction of cells at or below")
        ax.set_title(title[tier])
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7.5, loc="lower right")
    m = doc.get("machine", {})
    fig.suptitle("bulkhead warm cell `x = x + 1; x`: %s cores, kernel %s, %s, %s; %s"
                 % (m.get("cores", "?"), m.get("kernel", "?"), m.get("crun", "?"),
                    m.get("runsc", "?"), doc.get("started", "")), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
