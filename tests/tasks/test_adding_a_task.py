"""docs/contributing.md, "Adding a task": a task is one package and one spec. A toy task registered
from this file (its job and its runner: its flags are made from the job) appears in ``jaket
finetune|evaluate``, runs through the one command handler (``jaket.tasks.cli.run_task``, a layer over
``pipeline()``) and in ``pipeline()``, both giving the same runs, and gets its default variants from
its spec."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from jaket.cli import build_parser, main
from jaket.tasks.cli_common import chosen_variants
from jaket.tasks.job_flags import flag
from jaket.tasks.registry import TASKS, register_task
from jaket.tasks.spec import TaskSpec


@dataclass
class ToyJob:
    #: steps of the toy
    steps: int = 3
    variants: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    pretrained: str | None = field(default=None, metadata=flag("model"))
    encoder: str | None = None
    km_layers: int | None = None
    km_heads: int | None = None
    bf16: bool = False


class ToyModel:
    """The toy task's fine-tuned model: predicts its job's steps for every input."""

    def __init__(self, steps: int):
        self.steps = steps

    def predict(self, inputs: list) -> list[int]:
        return [self.steps for _ in inputs]


def run_toy(job: ToyJob, out_dir=None, *, save_dir=None, device="cpu", log_with=(), keep_model=False):
    """The toy task's runner (its spec's ``runner``): one score per (setting, seed)."""
    from jaket.tasks.results import TaskResult

    runs = {v: [{"seed": s, "score": float(job.steps + s)} for s in job.seeds] for v in job.variants}
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "metrics.json").write_text(json.dumps({"task": "toy-task", "runs": runs}))
    result = TaskResult.from_metrics({"task": "toy-task", "runs": runs, "summary": {"runs": len(runs)}})
    result.finetuned = ToyModel(job.steps) if keep_model else None
    return result


def results_table(result) -> str:
    """The toy's table (its spec's ``table``)."""
    return "\n".join(f"{row['variant']} seed {row['seed']}: {row['score']:g}" for row in result.rows())


@pytest.fixture
def toy_task():
    spec = register_task(TaskSpec("toy-task", "a toy task of the tests", ToyJob, runner=lambda: run_toy,
                                  table=lambda: results_table, default_variants=("lm", "jaket"),
                                  finetune_variant="lm"))
    yield spec
    TASKS.pop(spec.name)


def test_a_task_registered_from_a_test_file_appears_in_the_cli(toy_task, tmp_path, capsys):
    parser = build_parser()
    for command in ("finetune", "evaluate"):
        with pytest.raises(SystemExit):
            parser.parse_args([command, "--help"])
        assert "toy-task" in capsys.readouterr().out
    args = parser.parse_args(["evaluate", "toy-task", "--steps", "5", "--seeds", "2"])
    assert args.steps == 5 and args.seeds == 2 and args.evaluate  # its flags beside the common ones
    assert main(["evaluate", "toy-task", "--steps", "5", "--seeds", "2", "--out", str(tmp_path / "a")]) == 0
    assert "lm seed 1: 6" in capsys.readouterr().out  # its runner ran, its table printed
    assert main(["finetune", "toy-task", "--set", "steps=7", "--print-config"]) == 0
    assert "steps: 7" in capsys.readouterr().out
    defaults = {"default_variants": toy_task.default_variants, "finetune_variant": toy_task.finetune_variant}
    assert chosen_variants(True, None, **defaults) == ("lm",)  # the spec's, jaket only with --model
    assert chosen_variants(False, None, **defaults) == ("lm",)
    assert main(["evaluate", "toy-task", "--model", "M", "--print-config"]) == 0  # its pretrained field is --model
    assert "pretrained: M" in capsys.readouterr().out
    with pytest.raises(ValueError, match="registered already"):
        register_task(toy_task)


def test_an_unregistered_task_is_not_in_the_cli(capsys):
    assert "toy-task" not in TASKS
    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "toy-task"])
    assert "invalid choice: 'toy-task'" in capsys.readouterr().err


def test_a_task_registered_from_a_test_file_appears_in_the_pipeline(toy_task, tmp_path, monkeypatch):
    import jaket.pipelines
    from jaket.pipelines import pipeline
    from jaket.tasks.results import TaskResult

    def no(*args, **kwargs):
        raise AssertionError("pipeline() parsed an argv or read a result back from disk")

    with monkeypatch.context() as patched:  # no command line, no metrics.json read back
        patched.setattr("jaket.cli.build_parser", no)
        patched.setattr("jaket.tasks.results.read_json", no)
        result = pipeline("toy-task", seeds=2, steps=5)
    assert not hasattr(jaket.pipelines, "build_parser")  # the module imports no command line
    assert result.rows() == [{"variant": "lm", "budget": None, "seed": 0, "score": 5.0},
                             {"variant": "lm", "budget": None, "seed": 1, "score": 6.0}]
    assert result.finetuned.predict(["a", "b"]) == [5, 5]
    assert main(["evaluate", "toy-task", "--steps", "5", "--seeds", "2", "--out", str(tmp_path / "cli")]) == 0
    assert TaskResult.from_metrics(tmp_path / "cli").rows() == result.rows()  # the command's runs are the pipeline's
    with pytest.raises(ValueError, match="jaket"):
        pipeline("toy-task", variants=["jaket"])
