"""The one comparison runner of every task: settings × seeds × budgets (``jaket evaluate``).

A task declares what one run is (:class:`GridTask`: run one :class:`Cell`, save the first run,
the figures a run scores); :func:`run_grid` owns the rest, alike for every task, as PyKEEN's
``pipeline`` owns training loops and their evaluation:

- the loop, in the order settings → seeds → budgets, and its progress bar and trackers;
- each run's entry in ``metrics.json``: ``runs[setting][budget]`` is a list with one entry per
  seed (``runs[setting]`` when the task has no budget), with its ``seed`` and ``seconds``;
- the fine-tuned folder of the first run (``save_dir``);
- the summaries (mean ± std over seeds of every metric, :func:`jaket.tasks.report.summarize_seeds`);
- the paired differences of the settings that ran (:data:`PAIRS`, same seed, 95% Student-t
  interval; :func:`paired_differences`, also used by ``results/seed_tables.py`` to join
  invocations);
- the report (``report.md``: the table of scores, the paired differences, the task's own lines)
  and its plots (learning curves of each setting's first run, the scores as grouped bars);

and returns a typed :class:`~jaket.tasks.results.TaskResult`.

A *budget* is what a task varies besides the setting and the seed: the fraction of labelled
entities (entity classification), the KG setting (KGQA: full, 50%), the scoring function (link
prediction). Relation classification's N-way K-shot settings and word-in-context's accuracy are
*scores* of one run, not budgets: one trained model is evaluated on each.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaket.tasks import report as rep
from jaket.tasks.results import TaskResult
from jaket.tasks.tracking import task_progress
from jaket.tasks.variants import VARIANT_LABELS

#: the paired comparisons reported when both settings ran, (setting, reference setting): the
#: paper's question (JAKET against the same model without joint pre-training, and against the
#: language model alone) and what the KG adds without pre-training
PAIRS = (("jaket", "lm+g+m"), ("jaket", "lm"), ("lm+g+m", "lm"), ("lm+g+m", "gnn"))


@dataclass(frozen=True)
class Cell:
    """One run of a comparison: a setting (``lm``, ``lm+g+m``, ``jaket``, …), a seed and, for the
    tasks that have one, a budget (its string form, the key of ``metrics.json``)."""

    variant: str
    seed: int
    budget: str | None = None


@dataclass(frozen=True)
class Grid:
    """The runs of a comparison: every setting × seed × budget (no budget: ``budgets=()``)."""

    variants: tuple[str, ...]
    seeds: tuple[int, ...]
    budgets: tuple[str, ...] = ()

    def cells(self) -> Iterator[Cell]:
        for variant in self.variants:
            for seed in self.seeds:
                for budget in self.budgets or (None,):
                    yield Cell(variant, seed, budget)

    def __len__(self) -> int:
        return len(self.variants) * len(self.seeds) * max(1, len(self.budgets))


@dataclass
class RunOutcome:
    """What one run gives :func:`run_grid`: its ``metrics.json`` entry (plain numbers and lists) and,
    when the run is the one kept (``keep``), the trained parts :meth:`GridTask.finetuned` builds the
    fine-tuned model from (each task's own typed record: the model, its backbone, its split, ...).
    ``trained`` is never written anywhere."""

    entry: dict
    trained: Any = None


class GridTask:
    """What a task tells :func:`run_grid`. Subclasses implement :meth:`run`, :meth:`save` and
    :meth:`scores`; the rest has defaults."""

    #: ``metrics.json``'s ``task`` and the trackers' project (``finetune-<progress_name>``)
    name = ""
    #: the report's heading
    title = ""
    #: the progress bar: its label, its unit and the units of one run
    progress_name = ""
    progress_unit = "step"
    units_per_run = 1
    #: how the scores are shown: multiplied by ``scale``, with ``digits`` decimals
    scale = 100.0
    digits = 1
    #: the plots: the curve's axes (:meth:`curve`) and the file of the grouped bars
    curve_xlabel = "step"
    curve_ylabel = "loss"
    bars_file = "scores.png"
    bars_ylabel = "accuracy (%)"

    def run(self, cell: Cell, progress, keep: bool) -> RunOutcome:
        """Train and evaluate one cell: the run's ``metrics.json`` entry and, with ``keep`` (this
        run will be saved or kept in memory), what :meth:`finetuned` needs (:class:`RunOutcome`)."""
        raise NotImplementedError

    def describe(self, cell: Cell) -> str:
        """The progress bar's postfix while ``cell`` runs (trackers name the run's curve by it)."""
        return " ".join(str(p) for p in (cell.variant, cell.budget, f"seed {cell.seed}") if p is not None)

    def after_seed(self, variant: str, seed: int, results: dict) -> None:
        """Called after the last budget of ``(variant, seed)`` (per-seed figures that are not a run)."""

    def finetuned(self, cell: Cell, run: dict, trained):
        """The first run's fine-tuned model in memory (:class:`jaket.tasks.finetuned.FinetunedModel`:
        ``predict``, ``save_pretrained``) from its entry and ``trained`` (:attr:`RunOutcome.trained`).
        A task that defines it gets :meth:`save` from it and ``run_grid(keep_model=True)`` returns it
        (:func:`jaket.pipelines.pipeline`)."""
        raise NotImplementedError

    def save(self, cell: Cell, run: dict, trained, directory: Path) -> Path:
        """Write the first run's fine-tuned folder (:class:`jaket.tasks.finetuned.FinetunedModel`)."""
        return self.finetuned(cell, run, trained).save_pretrained(directory)

    def scores(self, run: dict) -> dict[str, float]:
        """The headline figures of one run (name -> value), the columns of the report's table and
        of the paired differences."""
        raise NotImplementedError

    def curve(self, run: dict) -> list[float]:
        """The learning curve one run recorded (plotted for each setting's first run)."""
        return run.get("train_loss") or []

    def metrics(self, run: dict) -> dict[str, float]:
        """What the summary averages over seeds (default: :meth:`scores`)."""
        return self.scores(run)

    def summarize(self, runs: list[dict]) -> dict:
        """The summary of one (setting, budget): mean, std and values of each metric."""
        return rep.summarize_seeds([self.metrics(r) for r in runs])

    def header(self, budget: str | None, score: str) -> str | None:
        """The table's column header of a score (under a budget); None: the column's key (the
        budget, the score, or both when a run has several scores)."""
        return None

    def after_grid(self, results: dict) -> None:
        """Called once every run is in ``results`` (baselines that are not a setting)."""

    def intro(self, results: dict) -> list[str]:
        """The report's lines between the heading and the table."""
        return []

    def extra_rows(self, results: dict, columns: list[str]) -> list[list[str]]:
        """Rows of the table under the settings' (baselines): a label, then one cell per column."""
        return []

    def scores_table(self, results: Mapping) -> str:
        """The table of scores: mean ± std over seeds, one row per setting, one column per score
        (under each budget), the task's :meth:`extra_rows` below."""
        values, headers = score_values(self, results)
        rows = [[VARIANT_LABELS.get(v, v)] + [rep.format_mean_std(by[c].values(), self.scale, self.digits)
                                               if c in by else "-" for c in headers]
                for v, by in values.items()]
        rows += self.extra_rows(results, list(headers))
        return rep.markdown_table(["Model"] + list(headers.values()), rows)

    def paired_table(self, results: Mapping) -> str:
        """The paired differences (mean [95% CI]), one row per pair; "" when none ran."""
        return paired_table(results.get("paired") or {}, score_values(self, results)[1], self.scale, self.digits)

    def table(self, results: Mapping) -> str:
        """:meth:`scores_table` and, below it, :meth:`paired_table`."""
        paired = self.paired_table(results)
        return self.scores_table(results) + ("\n\n" + paired if paired else "")

    def epilogue(self, results: dict) -> list[str]:
        """The report's lines after the table."""
        return []

    def plots(self, results: dict, out_dir: Path) -> list[str]:
        """Extra plots of the task (their file names, shown in the report)."""
        return []


# ----------------------------------------------------------------------------- the runner


def run_grid(task: GridTask, grid: Grid, results: dict, *, out_dir: Path | None = None,
             save_dir: Path | None = None, log_with=(), keep_model: bool = False) -> TaskResult:
    """Run every cell of ``grid`` into ``results`` (the task's header: config, data, …), then
    the summaries, the paired differences and, with ``out_dir``, the report; see the module.
    ``keep_model``: the result's ``finetuned`` is the first run's fine-tuned model in memory (the one
    ``save_dir`` receives; :meth:`GridTask.finetuned`)."""
    kept: dict | None = {} if keep_model else None
    runs, summary = results.setdefault("runs", {}), results.setdefault("summary", {})
    if "config" in results:  # as metrics.json will hold it (lists, paths as text): the report reads it
        results["config"] = json.loads(json.dumps(results["config"], default=str))
    total = len(grid) * task.units_per_run
    with task_progress(total, task.progress_name, task.progress_unit, log_with, out_dir,
                       results.get("config")) as progress:
        for cell in grid.cells():
            _run_cell(task, cell, progress, results, save_dir, kept)
            if cell.budget == (grid.budgets or (None,))[-1]:
                task.after_seed(cell.variant, cell.seed, results)
    for variant in grid.variants:
        summary[variant] = (task.summarize(runs[variant]) if not grid.budgets else
                            {b: task.summarize(runs[variant][b]) for b in grid.budgets})
    results["paired"] = paired_differences(score_values(task, results)[0], PAIRS)
    task.after_grid(results)
    if out_dir is not None:
        write_report(task, results, Path(out_dir))
    result = TaskResult.from_metrics(results)
    result.finetuned = (kept or {}).get("model")
    return result


def _run_cell(task: GridTask, cell: Cell, progress, results: dict, save_dir: Path | None,
              kept: dict | None = None) -> None:
    """One run: its entry (seed first, the task's, then the seconds it took), the saved folder and
    (``kept``, the first run's) the fine-tuned model in memory."""
    progress.set_postfix_str(task.describe(cell))
    keep = (save_dir is not None and "saved_model" not in results) or (kept is not None and "model" not in kept)
    started = time.perf_counter()
    outcome = task.run(cell, progress, keep)
    if not isinstance(outcome, RunOutcome):
        raise TypeError(f"{type(task).__name__}.run must return a RunOutcome, got {type(outcome).__name__}")
    held = outcome.trained
    run = {"seed": cell.seed, **outcome.entry}
    run.setdefault("seconds", time.perf_counter() - started)
    if keep and kept is not None:
        kept["model"] = task.finetuned(cell, run, held)
        if save_dir is not None:
            results["saved_model"] = str(kept["model"].save_pretrained(Path(save_dir)))
    elif keep:
        results["saved_model"] = str(task.save(cell, run, held, Path(save_dir)))
    by_variant = results["runs"].setdefault(cell.variant, {} if cell.budget is not None else [])
    (by_variant.setdefault(cell.budget, []) if cell.budget is not None else by_variant).append(run)


# ----------------------------------------------------------------------------- scores and pairs


def score_values(task: GridTask, results: Mapping) -> tuple[dict, dict[str, str]]:
    """``(values, headers)``: ``values[setting][column][seed]`` = each run's score, and the table
    header of each column (columns are a score under a budget: ``0.05``, ``full 1-hop``, ``5-1``)."""
    values: dict = {}
    headers: dict[str, str] = {}
    for variant, entries in results.get("runs", {}).items():
        by_budget = entries.items() if isinstance(entries, dict) else [(None, entries)]
        for budget, runs in by_budget:
            for run in runs:
                scores = task.scores(run)
                for name, value in scores.items():
                    column = name if budget is None else budget if len(scores) == 1 else f"{budget} {name}"
                    headers.setdefault(column, task.header(budget, name) or column)
                    values.setdefault(variant, {}).setdefault(column, {})[run["seed"]] = float(value)
    return values, headers


def paired_differences(values: dict, pairs: Sequence[tuple[str, str]]) -> dict:
    """``{"a - b": {column: {"mean", "ci_low", "ci_high", "values", "seeds"}}}`` of the settings of
    ``pairs`` that both have a column, over the seeds both ran (``values[setting][column][seed]``);
    :func:`jaket.tasks.report.paired_difference` (the interval None for a single seed)."""
    out: dict = {}
    for a, b in pairs:
        for column, cell in values.get(a, {}).items():
            other = values.get(b, {}).get(column, {})
            seeds = [s for s in cell if s in other]
            if seeds:
                found = rep.paired_difference([cell[s] for s in seeds], [other[s] for s in seeds])
                if len(seeds) < 2:  # no interval from one pair: said as null, not as a NaN to warn about
                    found.update(ci_low=None, ci_high=None)
                out.setdefault(f"{a} - {b}", {})[column] = found | {"seeds": seeds}
    return out


def paired_table(paired: dict, headers: dict[str, str], scale: float = 100.0, digits: int = 1) -> str:
    """The paired differences in points (mean [95% CI]), one row per pair ("" without any)."""
    rows = []
    for name, by_column in paired.items():
        a, b = name.split(" - ", 1)
        rows.append([f"{VARIANT_LABELS.get(a, a)} − {VARIANT_LABELS.get(b, b)}"] + [
            _difference(by_column[c], scale, digits) if c in by_column else "-" for c in headers])
    if not rows:
        return ""
    unit = "points" if scale == 100.0 else "difference"
    return rep.markdown_table([f"Paired difference ({unit}, 95% CI)"] + list(headers.values()), rows)


def _difference(d: dict, scale: float, digits: int) -> str:
    mean = f"{scale * d['mean']:+.{digits}f}"
    if d["ci_low"] is None or math.isnan(d["ci_low"]):
        return mean
    return f"{mean} [{scale * d['ci_low']:+.{digits}f}, {scale * d['ci_high']:+.{digits}f}]"


# ----------------------------------------------------------------------------- the report


def write_report(task: GridTask, results: dict, out_dir: Path) -> None:
    """``metrics.json``, ``report.md`` and the plots of a comparison."""
    out_dir.mkdir(parents=True, exist_ok=True)
    images = [name for name in (_curves(task, results, out_dir), _bars(task, results, out_dir)) if name]
    images += task.plots(results, out_dir)
    text = [f"# {task.title}", "", *task.intro(results), task.table(results), "", *task.epilogue(results),
            *[f"![{Path(name).stem.replace('_', ' ')}]({name})\n" for name in images]]
    rep.write_run_report(out_dir, results, text)


def _first_runs(results: dict):
    """``(setting, budget, its first seed's run)`` of every setting and budget."""
    for variant, entries in results.get("runs", {}).items():
        for budget, runs in (entries.items() if isinstance(entries, dict) else [(None, entries)]):
            if runs:
                yield variant, budget, runs[0]


def _curves(task: GridTask, results: dict, out_dir: Path) -> str | None:
    curves = {" ".join(p for p in (VARIANT_LABELS.get(v, v), b, f"seed {run['seed']}") if p): task.curve(run)
              for v, b, run in _first_runs(results) if task.curve(run)}
    if not curves:
        return None
    rep.plot_curves(curves, out_dir / "learning_curves.png", title=f"{task.progress_name}: training loss",
                    xlabel=task.curve_xlabel, ylabel=task.curve_ylabel)
    return "learning_curves.png"


def _bars(task: GridTask, results: dict, out_dir: Path) -> str | None:
    values, headers = score_values(task, results)
    if not values:
        return None
    series = {VARIANT_LABELS.get(v, v): ([task.scale * rep.mean_std(by[c].values())[0] if c in by else 0.0
                                          for c in headers],
                                         [task.scale * rep.mean_std(by[c].values())[1] if c in by else 0.0
                                          for c in headers])
              for v, by in values.items()}
    rep.plot_grouped_bars(list(headers.values()), series, out_dir / task.bars_file,
                          title=f"{task.progress_name} (mean ± std over seeds)", ylabel=task.bars_ylabel)
    return task.bars_file
