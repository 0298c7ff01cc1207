"""Metrics and reports shared by the downstream tasks.

Every task writes the same three things into its output folder: ``metrics.json`` (machine
readable, written atomically), ``report.md`` (a Markdown table in the shape of the paper's
Tables 1-3) and PNG plots (learning curves, and where it helps a confusion matrix or a rank
histogram).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from jaket.atomic import atomic_path, write_json, write_text
from jaket.model.device import machine_description

# ----------------------------------------------------------------------------- metrics


def accuracy(predictions: np.ndarray | Sequence[int], labels: np.ndarray | Sequence[int]) -> float:
    """Fraction of ``predictions`` equal to ``labels`` (0.0 for an empty set)."""
    predictions = np.asarray(predictions)
    labels = np.asarray(labels)
    if predictions.shape != labels.shape:
        raise ValueError(f"predictions {predictions.shape} and labels {labels.shape} differ in shape")
    if labels.size == 0:
        return 0.0
    return float((predictions == labels).mean())


def mean_std(values: Iterable[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0.0 for a single value)."""
    array = np.asarray(list(values), dtype=np.float64)
    if array.size == 0:
        return math.nan, math.nan
    std = float(array.std(ddof=1)) if array.size > 1 else 0.0
    return float(array.mean()), std


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> dict:
    """The paired difference ``a - b`` (same split and seed at each position): ``{"mean",
    "ci_low", "ci_high", "values"}`` with a Student-t interval over the pairs (``nan`` bounds
    for a single pair)."""
    from scipy import stats

    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if diff.size == 0:
        raise ValueError("paired_difference needs at least one pair")
    mean = float(diff.mean())
    if diff.size < 2:
        low = high = math.nan
    else:
        half = float(stats.t.ppf(0.5 + confidence / 2, diff.size - 1) * diff.std(ddof=1) / math.sqrt(diff.size))
        low, high = mean - half, mean + half
    return {"mean": mean, "ci_low": low, "ci_high": high, "values": diff.tolist()}


def paired_bootstrap(a: np.ndarray, b: np.ndarray, statistic, rounds: int = 10000, seed: int = 0,
                     confidence: float = 0.95, chunk: int = 500) -> dict:
    """The paired difference ``statistic(a) - statistic(b)`` of two scorers on the same items (the
    rows of ``a`` and ``b``), with a percentile interval from ``rounds`` resamples of the items with
    replacement, the same resample for both (Efron and Tibshirani's paired bootstrap).
    ``statistic`` maps an array ``(k, n, ...)`` of ``k`` samples to ``(k,)``. Returns ``{"mean"``
    (the difference on the items as given), ``"ci_low", "ci_high", "rounds", "items"}``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or not len(a):
        raise ValueError(f"paired_bootstrap needs two non-empty arrays of one shape, got {a.shape} and {b.shape}")
    rng = np.random.default_rng(seed)
    differences = []
    for begin in range(0, rounds, chunk):
        index = rng.integers(0, len(a), size=(min(chunk, rounds - begin), len(a)))
        differences.append(statistic(a[index]) - statistic(b[index]))
    found = np.concatenate(differences)
    tail = 100 * (1 - confidence) / 2
    return {"mean": float(statistic(a[None])[0] - statistic(b[None])[0]),
            "ci_low": float(np.percentile(found, tail)), "ci_high": float(np.percentile(found, 100 - tail)),
            "rounds": int(rounds), "items": int(len(a))}


def format_mean_std(values: Iterable[float], scale: float = 100.0, digits: int = 1) -> str:
    """``"81.6 ± 0.4"``: mean ± std over seeds, in percent by default (the paper's tables)."""
    mean, std = mean_std(values)
    if math.isnan(mean):
        return "-"
    return f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


def ranking_metrics(ranks: np.ndarray | Sequence[float], hits_at: Sequence[int] = (1, 3, 10)) -> dict:
    """MRR and Hits@k of 1-based (filtered) ranks."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size == 0:
        return {"mrr": 0.0, **{f"hits@{k}": 0.0 for k in hits_at}, "count": 0}
    if (ranks < 1).any():
        raise ValueError("ranks are 1-based")
    out = {"mrr": float((1.0 / ranks).mean())}
    for k in hits_at:
        out[f"hits@{k}"] = float((ranks <= k).mean())
    out["mean_rank"] = float(ranks.mean())
    out["count"] = int(ranks.size)
    return out


def summarize_seeds(per_seed: Sequence[Mapping[str, float]]) -> dict:
    """``{metric: {"mean", "std", "values"}}`` over a list of per-seed metric dicts."""
    keys = [k for k, v in per_seed[0].items() if isinstance(v, (int, float))] if per_seed else []
    summary = {}
    for key in keys:
        values = [float(run[key]) for run in per_seed]
        mean, std = mean_std(values)
        summary[key] = {"mean": mean, "std": std, "values": values}
    return summary


# ----------------------------------------------------------------------------- files


def write_json_atomic(path: str | os.PathLike, data) -> Path:
    """Write ``data`` as indented JSON atomically (:func:`jaket.atomic.write_json`)."""
    return write_json(path, data, default=_json_default)


def write_metrics(out_dir: str | os.PathLike, results: dict) -> Path:
    """``OUT/metrics.json`` of a task run, with the machine it ran on
    (:func:`jaket.model.device.machine_description`) unless the results already name it."""
    results.setdefault("machine", machine_description())
    return write_json_atomic(Path(out_dir) / "metrics.json", results)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    return write_text(path, text)


def write_run_report(out_dir: str | os.PathLike, results: dict, lines: list[str]) -> Path:
    """The one writer of a run's report, for every task and the demo: ``OUT/metrics.json``
    (:func:`write_metrics`: the machine added unless the results name it) and ``OUT/report.md`` (the
    ``lines``), each written atomically, the folder created; returns the report's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_metrics(out_dir, results)
    return write_text_atomic(out_dir / "report.md", "\n".join(lines))


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(str(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells, the header {len(headers)}")
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- plots


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save_figure(fig, path: Path) -> Path:
    path = Path(path)
    with atomic_path(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
    return path


def plot_curves(curves: Mapping[str, Sequence[float]], path: str | os.PathLike, *, title: str = "",
                xlabel: str = "step", ylabel: str = "loss", logy: bool = False) -> Path:
    """One line per named curve (learning curves)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, values in curves.items():
        if len(values):
            ax.plot(np.arange(1, len(values) + 1), values, label=name, linewidth=1.2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    if curves:
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    out = _save_figure(fig, Path(path))
    plt.close(fig)
    return out


def plot_grouped_bars(groups: Sequence[str], series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                      path: str | os.PathLike, *, title: str = "", ylabel: str = "accuracy (%)") -> Path:
    """Grouped bars with error bars: ``series[name] = (means, stds)``, one value per group."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    for i, (name, (means, stds)) in enumerate(series.items()):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, means, width, yerr=stds, capsize=3, label=name)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    out = _save_figure(fig, Path(path))
    plt.close(fig)
    return out


def plot_confusion(matrix: np.ndarray, labels: Sequence[str], path: str | os.PathLike, *,
                   title: str = "confusion matrix (rows: true)") -> Path:
    plt = _pyplot()
    n = len(labels)
    fig, ax = plt.subplots(figsize=(max(4, 0.35 * n + 2), max(3.5, 0.35 * n + 1.5)))
    im = ax.imshow(matrix, cmap="Blues")
    ax.set_xticks(range(n), labels, rotation=90, fontsize=6)
    ax.set_yticks(range(n), labels, fontsize=6)
    ax.set_title(title)
    fig.colorbar(im, ax=ax)
    out = _save_figure(fig, Path(path))
    plt.close(fig)
    return out


def plot_histogram(values: Mapping[str, Sequence[float]], path: str | os.PathLike, *, bins: int = 30,
                   title: str = "", xlabel: str = "rank", logx: bool = True) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, vals in values.items():
        vals = np.asarray(vals, dtype=np.float64)
        if vals.size == 0:
            continue
        edges = np.logspace(0, np.log10(max(2.0, vals.max())), bins) if logx else bins
        ax.hist(vals, bins=edges, alpha=0.6, label=name)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    if title:
        ax.set_title(title)
    if values:
        ax.legend(fontsize=8)
    out = _save_figure(fig, Path(path))
    plt.close(fig)
    return out


def confusion_matrix(predictions: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(matrix, (np.asarray(labels), np.asarray(predictions)), 1)
    return matrix
