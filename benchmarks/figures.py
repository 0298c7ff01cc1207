"""The suite's figures: each benchmark's runs summarised (median, min, max), a lookup of the
medians across benchmarks (:class:`Figures`), their formatting for the documents, and the fitted
exponents of the figures that grow with the KG (:func:`scaling_fits`).

:mod:`benchmarks.report` writes the documents from these, :mod:`benchmarks.plots` the plots.
"""

from __future__ import annotations

import json
import math
import statistics


# ---------------------------------------------------------------------------- summaries
def summarise(results: list[dict]) -> dict[str, dict]:
    """Per figure: median, min, max over the runs (numbers); the first value otherwise."""
    summary: dict[str, dict] = {}
    keys = [k for r in results for k in r]
    for key in dict.fromkeys(keys):
        values = [r[key] for r in results if key in r]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers and len(numbers) == len(values):
            integral = all(isinstance(v, int) for v in numbers)  # counts stay counts
            middle = statistics.median_low(numbers) if integral else statistics.median(numbers)
            summary[key] = {"median": middle, "min": min(numbers),
                            "max": max(numbers), "n": len(numbers)}
        else:
            summary[key] = {"value": values[0]}
    return summary


def num(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.3g}"
    return f"{x:.3g}"


def fmt(entry: dict | None) -> str:
    if entry is None:
        return "–"
    if "value" in entry:
        value = entry["value"]
        return value if isinstance(value, str) else f"`{json.dumps(value)}`"
    med, lo, hi = entry["median"], entry["min"], entry["max"]
    if entry["n"] > 1 and hi != lo:
        return f"{num(med)} ({num(lo)}–{num(hi)})"
    return num(med)


def ratio(x: float | None) -> str:
    """``0.263`` -> ``1/3.8 (0.263)``."""
    if x is None:
        return "–"
    if x <= 0:
        return num(x)
    if x < 1:
        return f"1/{1 / x:.1f} ({x:.3f})"
    return f"{x:.2f}x"


def fit_exponent(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y against log x: figure ~ N^slope."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pairs) < 2:
        return None
    mx = sum(p[0] for p in pairs) / len(pairs)
    my = sum(p[1] for p in pairs) / len(pairs)
    sxx = sum((p[0] - mx) ** 2 for p in pairs)
    return sum((p[0] - mx) * (p[1] - my) for p in pairs) / sxx if sxx else None


class Figures:
    """Median lookup over the specs' summaries: ``f("model", "km_forward_ms")``."""

    def __init__(self, specs):
        self.specs = {s.key: s for s in specs}
        self.summaries = {s.key: summarise(s.results) for s in specs
                          if s.results and "error" not in s.results[0]}

    def ok(self, key: str) -> bool:
        return key in self.summaries

    def entry(self, key: str, name: str) -> dict | None:
        return self.summaries.get(key, {}).get(name)

    def __call__(self, key: str, name: str, default=None):
        entry = self.entry(key, name)
        if entry is None:
            return default
        return entry.get("median", entry.get("value", default))

    def cell(self, key: str, name: str) -> str:
        return fmt(self.entry(key, name))


#: the scaling plot's panels: (title, [(benchmark prefix, figure, label)]); each series is fitted
SCALING_PANELS = [
    ("compiled KG: load (cached) and compile", [("sampler", "load_cached_seconds", "load, cached (s)"),
                                                 ("sampler", "load_compile_seconds", "parse + compile (s)")]),
    ("memory (MB)", [("sampler", "load_peak_rss_mb", "peak RSS after load (MB)"),
                     ("refresh", "memory_bytes_float16", "memory fp16 (MB)")]),
    ("sampling and knowledge module", [("sampler", "edges_per_second", "sampled edges / s"),
                                       ("km", "km_forward_ms_per_node", "KM ms / sampled entity"),
                                       ("km", "subgraph_nodes", "nodes of a 800-mention subgraph")]),
    ("memory refresh", [("refresh", "tokenize_seconds", "tokenise all descriptions (s)"),
                        ("refresh", "refresh_ms_per_description", "refresh ms / description"),
                        ("refresh", "full_refresh_seconds", "full refresh, projected (s)")]),
]


def scaling_fits(f: Figures, specs) -> dict:
    """Each series of :data:`SCALING_PANELS` measured at two or more KG sizes: its sizes, values
    and the fitted exponent k of figure ~ N^k (the fp16 memory in MiB)."""
    sizes = sorted({s.scale for s in specs if s.scale})
    fits: dict[str, dict] = {}
    for _, series in SCALING_PANELS:
        for prefix, name, label in series:
            xs, ys = [], []
            for n in sizes:
                value = f(f"{prefix}-{n}", name)
                if isinstance(value, (int, float)):
                    if name == "memory_bytes_float16":
                        value = value / 2**20
                    xs.append(n)
                    ys.append(value)
            exponent = fit_exponent(xs, ys)
            if exponent is not None:
                fits[f"{prefix}.{name}"] = {"label": label, "sizes": xs, "values": ys,
                                            "exponent": exponent}
    return fits
