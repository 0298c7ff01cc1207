"""A step's loss bookkeeping (:class:`LossTally`), the metrics log (JSONL), the loss-curve plot
and the first/last-tenth summary."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from jaket.atomic import atomic_path, json_text, write_lines
from jaket.jsonio import JSONInputError, decode

LOSS_NAMES = ("category", "relation", "mlm", "entity")

log = logging.getLogger(__name__)


class LossTally:
    """The logged values of one optimisation step, summed over its micro-steps (and ranks).

    Each of the four losses (and the masked-entity accuracy) is a mean over its micro-batch's
    examples, and micro-batches hold different numbers of them; the tally keeps, per task,
    ``sum(value x examples)`` on the device and the examples on the host, so nothing is read back
    from the device until :meth:`values`, and a logged value is the mean over every example of
    the step."""

    NAMES = (*LOSS_NAMES, "entity_acc")

    def __init__(self, device: torch.device | str):
        self.sums = torch.zeros(len(self.NAMES), dtype=torch.float64, device=device)
        self.counts = np.zeros(len(self.NAMES) + 1)  # the last: walked entities without a category

    def add(self, losses: dict[str, torch.Tensor], extra: dict[str, torch.Tensor],
            counts: dict[str, int]) -> None:
        """One micro-step: the objective's ``losses`` and ``extra`` (``entity_acc``), weighted by
        the batch's example ``counts`` (``StepBatch.counts``)."""
        for i, name in enumerate(self.NAMES):
            key = "entity" if name == "entity_acc" else name
            value = extra.get(name) if name == "entity_acc" else losses.get(name)
            if value is not None:
                self.sums[i] += value.detach().double() * counts[key]
                self.counts[i] += counts[key]
        self.counts[-1] += counts["category_skipped"]

    def values(self, reduce_sum: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, float]:
        """``loss_NAME`` and ``n_NAME`` of each task that had examples, ``entity_acc`` and
        ``n_category_skipped``; ``reduce_sum`` adds the ranks' tallies (one all-reduce)."""
        names = self.NAMES
        packed = reduce_sum(torch.cat([self.sums, torch.as_tensor(
            self.counts, dtype=torch.float64, device=self.sums.device)])).cpu()
        values: dict[str, float] = {}
        for i, name in enumerate(names):
            n = float(packed[len(names) + i])
            if n > 0:
                key = name if name == "entity_acc" else f"loss_{name}"
                values[key] = float(packed[i]) / n
                if name != "entity_acc":
                    values[f"n_{name}"] = int(n)
        if packed[-1] > 0:  # walked entities without a category: no category example
            values["n_category_skipped"] = int(packed[-1])
        return values


def read_metrics(path: Path, max_step: int | None = None, torn_tail_ok: bool = False) -> list[dict]:
    """Rows of ``metrics.jsonl`` (up to ``max_step``). A bad line is an error naming file and
    line, except, with ``torn_tail_ok``, an unterminated last line (a run killed mid-write)."""
    rows = []
    if path.exists():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = decode(line)
            except JSONInputError as error:
                if torn_tail_ok and number == len(lines) and not text.endswith("\n"):
                    log.warning("%s:%d: incomplete last line (the run was killed while writing "
                                "it): discarded", path, number)
                    break
                raise ValueError(f"{path}:{number}: {error.reason}") from None
            if max_step is None or row["step"] <= max_step:
                rows.append(row)
    return rows


def truncate_metrics(path: Path, max_step: int) -> int:
    """Keep only rows up to ``max_step`` (a resumed run rewrites what followed its checkpoint);
    returns how many rows were removed."""
    if not path.exists():
        return 0
    before = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    rows = read_metrics(path, max_step, torn_tail_ok=True)
    write_lines(path, (json_text(r, indent=None) for r in rows))
    return before - len(rows)


def first_last_tenth(rows: list[dict]) -> dict:
    out = {}
    for name in LOSS_NAMES:
        values = np.array([r[f"loss_{name}"] for r in rows if f"loss_{name}" in r], dtype=float)
        if len(values) == 0:
            continue
        tenth = max(1, len(values) // 10)
        first, last = float(values[:tenth].mean()), float(values[-tenth:].mean())
        out[name] = {"first_tenth": first, "last_tenth": last, "fell": last < first}
    return out


def plot_losses(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(LOSS_NAMES), figsize=(4 * len(LOSS_NAMES), 3))
    for ax, name in zip(axes, LOSS_NAMES):
        pts = [(r["step"], r[f"loss_{name}"]) for r in rows if r.get(f"loss_{name}") is not None]
        if pts:
            steps, values = zip(*pts)
            ax.plot(steps, values, lw=0.6, alpha=0.5)
            window = max(1, len(values) // 20)
            smooth = np.convolve(values, np.ones(window) / window, mode="valid")
            ax.plot(steps[window - 1:], smooth, lw=1.5)
        ax.set_title(f"{name} loss")
        ax.set_xlabel("step")
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
