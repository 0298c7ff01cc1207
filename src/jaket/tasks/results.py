"""A typed view of what ``jaket finetune|evaluate TASK`` measured, one row per run, for pandas.

Every task writes its runs to ``metrics.json`` under ``"runs"``: per setting (and, depending on
the task, per budget: a training fraction, a KG setting, a scorer), a list with one entry per
seed. :class:`TaskResult` reads any of them into the same shape, one :class:`SeedRun` per
(setting, budget, seed) with its numeric metrics flattened to dotted names (``test.mrr``,
``valid.unseen.hits@10``), as PyKEEN's ``metric_results.to_df()`` gives a flat table::

    result = TaskResult.from_metrics("runs/wic/metrics.json")
    result.to_dataframe().groupby("variant")["accuracy"].mean()

The summaries and the paired differences the task computed are kept as they are
(:attr:`TaskResult.summary`, :attr:`TaskResult.paired`). As Transformers' ``ModelOutput`` is
both a dataclass and a dict, a :class:`TaskResult` also reads as the ``metrics.json`` mapping it
came from (``result["summary"]``, ``result.get("saved_model")``), so code written against the
dicts the ``run_*`` functions used to return keeps working.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from jaket.jsonio import read_json

#: per-run entries that are curves or bookkeeping, not metrics (left out of the rows)
_NOT_METRICS = {"seed", "train_loss", "selection_curve", "selection_accuracy", "frozen_warmup_losses",
                "test_predictions", "ranks"}


@dataclass(frozen=True)
class SeedRun:
    """One fine-tuning run: the setting, its budget (None when the task has one), the seed, and
    every numeric metric of the run (dotted names for nested ones)."""

    variant: str
    budget: str | None
    seed: int
    metrics: dict[str, float]

    def row(self) -> dict:
        return {"variant": self.variant, "budget": self.budget, "seed": self.seed, **self.metrics}


@dataclass(eq=False)
class TaskResult(Mapping):
    """What one ``jaket finetune|evaluate`` run measured (:mod:`jaket.tasks.results`); a read-only
    mapping of its ``metrics.json``."""

    task: str
    runs: list[SeedRun]
    summary: dict = field(default_factory=dict)
    paired: dict = field(default_factory=dict)
    #: ``metrics.json`` as written (configs, data reports, baselines)
    raw: dict = field(default_factory=dict)
    #: the first run's fine-tuned model in memory (:func:`jaket.pipelines.pipeline`: ``predict``,
    #: ``save_pretrained``); None when the run kept none. Not ``model``: that is the jointly
    #: pre-trained input (``pipeline(task, model=DIR)``, ``--model DIR``)
    finetuned: Any = field(default=None, repr=False)

    #: whether the deprecated ``model`` attribute has warned (once per process)
    _model_warned: ClassVar[bool] = False

    @property
    def model(self):
        """Deprecated: :attr:`finetuned` (warns once; ``model`` is the pre-trained input everywhere else)."""
        self._warn_model()
        return self.finetuned

    @model.setter
    def model(self, value) -> None:
        self._warn_model()
        self.finetuned = value

    @classmethod
    def _warn_model(cls) -> None:
        if not cls._model_warned:
            cls._model_warned = True
            warnings.warn("TaskResult.model is deprecated; use TaskResult.finetuned (the fine-tuned model; "
                          "model= is the pre-trained input)", FutureWarning, stacklevel=3)

    @classmethod
    def from_metrics(cls, metrics: Mapping | str | Path) -> "TaskResult":
        """From a run's ``metrics.json`` (its path, its folder, or the dict a ``run_*`` returned)."""
        if isinstance(metrics, TaskResult):
            return metrics
        if isinstance(metrics, Mapping):
            metrics = dict(metrics)
        else:
            path = Path(metrics)
            metrics = read_json(path / "metrics.json" if path.is_dir() else path)
        if not isinstance(metrics, dict) or not isinstance(metrics.get("runs"), dict):
            raise ValueError("not a task's metrics (no 'runs' mapping)")
        runs = [run for variant, value in metrics["runs"].items() for run in _seed_runs(variant, None, value)]
        return cls(str(metrics.get("task", "")), runs, dict(metrics.get("summary") or {}),
                   dict(metrics.get("paired") or {}), metrics)

    def __getitem__(self, key: str):
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(run.variant for run in self.runs))

    def rows(self) -> list[dict]:
        """One plain dict per run: ``variant``, ``budget``, ``seed`` and the metrics."""
        return [run.row() for run in self.runs]

    def to_dataframe(self):
        """:meth:`rows` as a pandas ``DataFrame`` (pandas is imported here: an optional dependency)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_dataframe needs pandas: pip install pandas (or use .rows())") from None
        return pd.DataFrame(self.rows())


def _seed_runs(variant: str, budget: str | None, value) -> list[SeedRun]:
    """The runs under one setting: a list of per-seed dicts, or a mapping budget -> such a list
    (``"lm+g+m/transe"`` keys of link prediction name the setting and the scorer)."""
    if "/" in variant and budget is None:
        variant, budget = variant.split("/", 1)
    if isinstance(value, list):
        return [SeedRun(variant, budget, int(entry.get("seed", i)), _flat(entry))
                for i, entry in enumerate(value) if isinstance(entry, dict)]
    if isinstance(value, dict):
        return [run for key, inner in value.items()
                for run in _seed_runs(variant, str(key) if budget is None else f"{budget}/{key}", inner)]
    return []


def _flat(entry: dict, prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a run's entry, nested names joined by dots (curves left out)."""
    found: dict[str, float] = {}
    for key, value in entry.items():
        if key in _NOT_METRICS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            found[name] = float(value)
        elif isinstance(value, dict):
            found.update(_flat(value, f"{name}."))
    return found
