"""docs/contributing.md, "Adding a task": a task is one package and one spec. A toy task registered
from this file appears in ``jaket finetune|evaluate`` with the common flags and its own, runs its
handler, and gets its default settings from its spec."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from jaket.cli import build_parser, main
from jaket.tasks.cli_common import chosen_variants
from jaket.tasks.registry import TASKS, TaskSpec, register_task

RAN: list[argparse.Namespace] = []


@dataclass
class ToyJob:
    steps: int = 3


def add_arguments(parser: argparse.ArgumentParser, evaluate: bool) -> None:
    """The toy task's flags (its spec's ``add_arguments``, in its ``cli`` module: this file)."""
    parser.add_argument("--steps", type=int, default=ToyJob().steps)
    parser.set_defaults(func=RAN.append, evaluate=evaluate)


@pytest.fixture
def toy_task():
    spec = register_task(TaskSpec("toy-task", "tests.tasks", "a toy task of the tests", ToyJob,
                                  default_variants=("lm", "jaket"), finetune_variant="lm", cli=__name__))
    yield spec
    TASKS.pop(spec.name)
    RAN.clear()


def test_a_task_registered_from_a_test_file_appears_in_the_cli(toy_task, capsys):
    parser = build_parser()
    for command in ("finetune", "evaluate"):
        with pytest.raises(SystemExit):
            parser.parse_args([command, "--help"])
        assert "toy-task" in capsys.readouterr().out
    args = parser.parse_args(["evaluate", "toy-task", "--steps", "5", "--seeds", "2"])
    assert args.steps == 5 and args.seeds == 2 and args.evaluate  # its flags beside the common ones
    assert main(["finetune", "toy-task", "--steps", "7"]) == 0
    assert RAN[-1].steps == 7 and not RAN[-1].evaluate
    assert chosen_variants("toy-task", True, None) == ("lm",)  # the spec's, jaket only with --model
    assert chosen_variants("toy-task", False, None) == ("lm",)
    with pytest.raises(ValueError, match="registered already"):
        register_task(toy_task)


def test_an_unregistered_task_is_not_in_the_cli(capsys):
    assert "toy-task" not in TASKS
    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "toy-task"])
    assert "invalid choice: 'toy-task'" in capsys.readouterr().err


@dataclass
class ToyRunJob:
    steps: int = 3
    variants: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    pretrained: str | None = None


class ToyModel:
    """The toy task's fine-tuned model: predicts its job's steps for every input."""

    def __init__(self, steps: int):
        self.steps = steps

    def predict(self, inputs: list) -> list[int]:
        return [self.steps for _ in inputs]


def run_toy(job: ToyRunJob, out_dir=None, *, save_dir=None, device="cpu", log_with=(), keep_model=False):
    """The toy task's runner (its spec's ``runner``): one score per (setting, seed)."""
    from jaket.tasks.results import TaskResult

    runs = {v: [{"seed": s, "score": float(job.steps + s)} for s in job.seeds] for v in job.variants}
    result = TaskResult.from_metrics({"task": "toy-task", "runs": runs})
    result.model = ToyModel(job.steps) if keep_model else None
    return result


def test_a_task_registered_from_a_test_file_appears_in_the_pipeline():
    from jaket.pipeline import pipeline

    spec = register_task(TaskSpec("toy-task", "tests.tasks", "a toy task of the tests", ToyRunJob,
                                  default_variants=("lm", "jaket"), finetune_variant="lm", cli=__name__,
                                  runner="run_toy", run_module=__name__))
    try:
        result = pipeline("toy-task", seeds=2, steps=5)
        assert result.rows() == [{"variant": "lm", "budget": None, "seed": 0, "score": 5.0},
                                 {"variant": "lm", "budget": None, "seed": 1, "score": 6.0}]
        assert result.model.predict(["a", "b"]) == [5, 5]
        with pytest.raises(ValueError, match="jaket"):
            pipeline("toy-task", variants=["jaket"])
    finally:
        TASKS.pop(spec.name)
