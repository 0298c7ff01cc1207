"""The plots of ``docs/performance.md`` (matplotlib, imported when a plot is drawn: without it the
document has its tables only). Each function returns whether it drew anything.
"""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.figures import SCALING_PANELS, Figures


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_model_stages(f: Figures, path: Path) -> bool:
    keys = [k for k in ("model", "model-r5", "model-paper-shape") if f.ok(k)]  # 1 thread each
    if not keys:
        return False
    plt = _plt()
    stages = [("lm1", "LM1"), ("km", "KM"), ("km_trimmed", "KM trimmed"), ("fusion", "fusion"),
              ("lm2", "LM2")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / len(keys)
    labels = {"model": "MiniLM, r=10", "model-r5": "MiniLM, r=5",
              "model-paper-shape": "RoBERTa-base shape, r=10 (per 32 seq.)"}
    for ax, kind, title in ((axes[0], "forward", "forward"),
                            (axes[1], "forward_backward", "forward + backward")):
        positive = False
        for i, key in enumerate(keys):
            scale = 32 / f(key, "batch", 32)  # the paper-shape run uses a smaller batch
            values = [(f(key, f"{s}_{kind}_cpu_ms") or math.nan) * scale for s, _ in stages]
            positive = positive or any(v > 0 for v in values if not math.isnan(v))
            ax.bar([j + i * width for j in range(len(stages))], values, width, label=labels[key])
        ax.set_xticks([j + width * (len(keys) - 1) / 2 for j in range(len(stages))])
        ax.set_xticklabels([name for _, name in stages])
        ax.set_ylabel("CPU ms per 32 sequences x 128 tokens")
        if positive:
            ax.set_yscale("log")
        ax.set_title(title)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(keys), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_memory(f: Figures, path: Path) -> bool:
    if not f.ok("memory"):
        return False
    plt = _plt()
    names = [("refresh", "memory refresh"), ("baseline", "plain forward\n(sorted batches)"),
             ("unsorted", "plain forward\n(unsorted batches)")]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for i, (key, label) in enumerate(names):
        med = f("memory", f"{key}_descriptions_per_second")
        lo = f("memory", f"{key}_descriptions_per_second_min", med)
        hi = f("memory", f"{key}_descriptions_per_second_max", med)
        ax.bar(i, med, yerr=[[med - lo], [hi - med]], capsize=4)
        ax.text(i, med, f"{med:.0f}", ha="center", va="bottom")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([label for _, label in names])
    ax.set_ylabel("descriptions per second")
    ax.set_title("LM1 over WordNet glosses, batch 64")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_scaling(fits: dict, path: Path) -> bool:
    if not fits:
        return False
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for ax, (title, series) in zip(axes.flat, SCALING_PANELS):
        for prefix, name, label in series:
            fit = fits.get(f"{prefix}.{name}")
            if fit is None:
                continue
            ax.plot(fit["sizes"], fit["values"], marker="o", label=f"{label}: k = {fit['exponent']:.2f}")
        if ax.get_lines():
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("entities N (10 triples per entity)")
        ax.set_title(title, fontsize=10)
        if ax.get_lines():
            ax.legend(fontsize=7)
    fig.suptitle("cost against KG size, log-log; k = fitted exponent of figure ~ N^k", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
