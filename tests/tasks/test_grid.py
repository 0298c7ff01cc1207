"""The one comparison runner (jaket.tasks.grid): loop order, the runs' layout, the first run saved,
summaries, paired differences, the report, the typed result; every task runs on it."""

import json

import numpy as np
import pytest

from jaket.tasks import report as rep
from jaket.tasks.grid import PAIRS, Cell, Grid, GridTask, RunOutcome, paired_differences, run_grid
from jaket.tasks.results import TaskResult


class _Counting(GridTask):
    """A task whose score is a known function of the cell: jaket = lm+g+m + 0.1 (+ noise per seed)."""

    name = "toy"
    title = "Toy task"
    progress_name = "toy"
    units_per_run = 2

    def __init__(self):
        self.order, self.after, self.saved = [], [], []
        self.trained = object()  # what one run trained: handed to save, never written

    def run(self, cell, progress, keep):
        self.order.append((cell.variant, cell.seed, cell.budget))
        progress.update(2)
        base = {"lm": 0.3, "lm+g+m": 0.5, "jaket": 0.6}[cell.variant] + 0.01 * cell.seed
        if cell.variant == "jaket":
            base += 0.001 * (cell.seed % 2)
        run = {"accuracy": base + (0.05 if cell.budget == "1.0" else 0.0), "train_loss": [1.0, 0.5]}
        return RunOutcome(run, self.trained if keep else None)  # held for save, never written

    def after_seed(self, variant, seed, results):
        self.after.append((variant, seed))

    def save(self, cell, run, trained, directory):
        assert trained is self.trained
        self.saved.append(cell)
        directory.mkdir(parents=True)
        return directory

    def scores(self, run):
        return {"accuracy": run["accuracy"]}


def test_grid_runs_every_cell_in_order_and_owns_summaries_pairs_and_report(tmp_path):
    task = _Counting()
    grid = Grid(("lm", "lm+g+m", "jaket"), (0, 1, 2), ("0.2", "1.0"))
    result = run_grid(task, grid, {"task": "toy", "config": {}}, out_dir=tmp_path / "out",
                      save_dir=tmp_path / "model")
    assert task.order == [(v, s, b) for v in grid.variants for s in grid.seeds for b in grid.budgets]
    assert task.after == [(v, s) for v in grid.variants for s in grid.seeds]
    assert task.saved == [Cell("lm", 0, "0.2")] and result["saved_model"] == str(tmp_path / "model")
    runs = result["runs"]["jaket"]["1.0"]
    assert [r["seed"] for r in runs] == [0, 1, 2] and all(set(r) == {"seed", "accuracy", "train_loss", "seconds"} and r["seconds"] >= 0 for r in runs)
    summary = result["summary"]["lm+g+m"]["0.2"]["accuracy"]
    assert summary["values"] == pytest.approx([0.5, 0.51, 0.52]) and summary["mean"] == pytest.approx(0.51)
    pair = result["paired"]["jaket - lm+g+m"]["0.2"]
    assert pair["values"] == pytest.approx([0.1, 0.101, 0.1]) and pair["seeds"] == [0, 1, 2]
    assert pair["ci_low"] < pair["mean"] < pair["ci_high"]
    assert set(result["paired"]) == {"jaket - lm+g+m", "jaket - lm", "lm+g+m - lm"}  # no gnn ran
    # the typed result: one row per run, and the mapping of metrics.json
    assert isinstance(result, TaskResult) and len(result.rows()) == 18
    written = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert written["paired"]["lm+g+m - lm"]["1.0"]["mean"] == pytest.approx(0.2)
    report = (tmp_path / "out" / "report.md").read_text()
    assert report.startswith("# Toy task")
    assert "| Model | 0.2 | 1.0 |" in report and "| JAKET | 61.0 ± 1.0 | 66.0 ± 1.0 |" in report
    assert "| JAKET − LM+G+M | +10.0 [+9.9, +10.2] | +10.0 [+9.9, +10.2] |" in report
    for image in ("learning_curves.png", "scores.png"):
        assert (tmp_path / "out" / image).is_file() and f"({image})" in report


def test_a_task_without_budget_keeps_one_list_per_setting(tmp_path):
    result = run_grid(_Counting(), Grid(("lm", "jaket"), (0, 1)), {"task": "toy"})
    assert [r["seed"] for r in result["runs"]["jaket"]] == [0, 1]
    assert result["summary"]["lm"]["accuracy"]["values"] == pytest.approx([0.3, 0.31])
    assert result["paired"]["jaket - lm"]["accuracy"]["values"] == pytest.approx([0.3, 0.301])
    assert [row["budget"] for row in result.rows()] == [None] * 4


def test_paired_differences_use_the_seeds_both_ran():
    values = {"jaket": {"c": {0: 0.7, 1: 0.8, 2: 0.9}}, "lm+g+m": {"c": {1: 0.5, 2: 0.6, 3: 0.1}}}
    found = paired_differences(values, PAIRS)
    assert list(found) == ["jaket - lm+g+m"]
    d = found["jaket - lm+g+m"]["c"]
    assert d["seeds"] == [1, 2] and d["values"] == pytest.approx([0.3, 0.3])
    expected = rep.paired_difference([0.8, 0.9], [0.5, 0.6])
    assert d["mean"] == pytest.approx(expected["mean"]) and np.isclose(d["ci_low"], expected["ci_low"])


def test_every_task_runs_on_the_grid():
    """Each task's comparison is a GridTask whose run function goes through run_grid."""
    import inspect

    from jaket.tasks.entity_classification import run as entity_classification
    from jaket.tasks.kgqa import run as kgqa
    from jaket.tasks.link_prediction import run as link_prediction
    from jaket.tasks.relation_classification import run as relation_classification
    from jaket.tasks.word_in_context import run as word_in_context

    pairs = [(entity_classification.EntityClassificationRuns, entity_classification.run_entity_classification),
             (link_prediction.LinkPredictionRuns, link_prediction.run_link_prediction),
             (kgqa.QuestionAnsweringRuns, kgqa.run_kgqa),
             (relation_classification.RelationClassificationRuns, relation_classification.run_relation_classification),
             (word_in_context.WordInContextRuns, word_in_context.run_word_in_context)]
    for cls, run in pairs:
        assert issubclass(cls, GridTask) and cls.name
        source = inspect.getsource(run)
        assert "run_grid(" in source and "for seed in" not in source


def test_one_seed_gives_a_difference_without_an_interval(tmp_path, caplog):
    """One pair has no interval: null in metrics.json (no NaN to warn about), the mean alone in the table."""
    task = _Counting()
    result = run_grid(task, Grid(("lm", "jaket"), (0,)), {"task": "toy"}, out_dir=tmp_path)
    d = result["paired"]["jaket - lm"]["accuracy"]
    assert d["mean"] == pytest.approx(0.3) and d["ci_low"] is None and d["ci_high"] is None
    assert "could not be computed" not in caplog.text
    assert json.loads((tmp_path / "metrics.json").read_text())["paired"]["jaket - lm"]["accuracy"]["ci_low"] is None
    assert "| JAKET − LM only | +30.0 |" in task.table(result)


def test_a_run_that_is_not_a_run_outcome_is_refused(tmp_path):
    class _Untyped(_Counting):
        def run(self, cell, progress, keep):
            return {"accuracy": 0.5}

    with pytest.raises(TypeError, match="must return a RunOutcome"):
        run_grid(_Untyped(), Grid(("lm",), (0,)), {"task": "toy"})
