"""``jaket.pipelines.pipeline`` called directly (entity classification, word-in-context): it runs the
task's runner with no argv and nothing read back from disk, measures what the command writes for
the same settings, and returns the first run's fine-tuned model, which predicts in memory."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import save_kg
from jaket.pipelines import pipeline
from jaket.tasks.registry import load_finetuned
from jaket.tasks.results import TaskResult


def _measured(result) -> list[dict]:
    """The runs' rows without their timing (seconds differ between two runs of the same cell)."""
    frame = TaskResult.from_metrics(json.loads(json.dumps(dict(result), default=str))).rows()
    return [{k: v for k, v in row.items() if "seconds" not in k} for row in frame]


def _same_scores(result, metrics_path):
    written = json.loads(metrics_path.read_text())
    assert _measured(result) == _measured(TaskResult.from_metrics(written)) and _measured(result)
    assert json.dumps(result.paired, default=str) == json.dumps(written["paired"])


def test_entity_classification_pipeline_is_the_command(small_kg, tiny_bert_dir, tmp_path, capsys):
    kg_dir = save_kg(small_kg, tmp_path / "kg")
    assert main(["finetune", "entity-classification", "--kg", str(kg_dir), "--encoder", str(tiny_bert_dir),
                 "--variant", "lm+g+m", "--epochs", "3", "--train-fractions", "1.0", "--km-heads", "4",
                 "--out", str(tmp_path / "cli")]) == 0
    result = pipeline("entity-classification", evaluate=False, out=tmp_path / "lib", encoder=tiny_bert_dir,
                      variants="lm+g+m", epochs=3, train_fractions=[1.0], km_heads=4, data={"kg": kg_dir})
    _same_scores(result, tmp_path / "cli" / "metrics.json")
    assert (tmp_path / "lib" / "report.md").is_file() and (tmp_path / "lib" / "model").is_dir()
    saved = load_finetuned(tmp_path / "cli" / "model")
    assert result.finetuned.predict(small_kg, top_k=2) == saved.predict(small_kg, top_k=2)
    # nothing written without out; a nested key spelled with __ is the same key
    again = pipeline("entity-classification", evaluate=False, encoder=tiny_bert_dir, variants="lm+g+m",
                     epochs=3, train_fractions=[1.0], km_heads=4, data__kg=kg_dir)
    assert _measured(again) == _measured(result) and "saved_model" not in again
    assert again.finetuned.predict(small_kg) == result.finetuned.predict(small_kg)
    with pytest.raises(ValueError, match="epochs"):
        pipeline("entity-classification", encoder=tiny_bert_dir, epochs="many", data__kg=kg_dir)


def _pair_rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    texts = {"bank": [("they fished from the bank of the river", True), ("she put money in the bank", False)],
             "run": [("I run every morning", True), ("they run a small business", False)]}
    rows = []
    for i in range(n):
        lemma = ("bank", "run")[i % 2]
        a, b = (texts[lemma][rng.integers(2)] for _ in range(2))
        s1, s2 = a[0].index(lemma), b[0].index(lemma)
        rows.append({"lemma": lemma, "pos": "n" if lemma == "bank" else "v", "text1": a[0], "start1": s1,
                     "end1": s1 + len(lemma), "text2": b[0], "start2": s2, "end2": s2 + len(lemma),
                     "label": a[1] == b[1]})
    return rows


def test_word_in_context_pipeline_is_the_command(tiny_bert_dir, tmp_path, capsys):
    from jaket.tasks.word_in_context.data import load_pairs

    train, dev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    for path, n, seed in ((train, 16, 0), (dev, 8, 1)):
        path.write_text("".join(json.dumps(r) + "\n" for r in _pair_rows(n, seed)), encoding="utf-8")
    assert main(["evaluate", "word-in-context", "--encoder", str(tiny_bert_dir), "--variants", "lm", "--seeds", "2",
                 "--epochs", "1", "--batch-size", "8", "--train", str(train), "--test", str(dev),
                 "--out", str(tmp_path / "cli")]) == 0
    result = pipeline("word-in-context", out=tmp_path / "lib", encoder=tiny_bert_dir, variants=["lm"], seeds=2,
                      epochs=1, batch_size=8, data__train=train, data__eval=dev)
    _same_scores(result, tmp_path / "cli" / "metrics.json")
    frame = result.to_dataframe()
    assert sorted(frame["seed"]) == [0, 1] and set(frame["variant"]) == {"lm"}
    rows = result.finetuned.predict(load_pairs(dev))  # the first run's model (seed 0), in memory
    accuracy = np.mean([row["same"] == pair["label"] for row, pair in zip(rows, _pair_rows(8, 1))])
    assert accuracy == pytest.approx(result["runs"]["lm"][0]["accuracy"], abs=1e-9)


@pytest.mark.parametrize("arguments, error, message", [
    ({"seeds": 0}, ValueError, r"seeds=0: give a number of seeds of at least 1"),  # was: the 5 default seeds
    ({"seeds": -2}, ValueError, r"seeds=-2: give a number of seeds of at least 1"),
    ({"seeds": []}, ValueError, r"seeds=\[\]: give at least one seed"),
    ({"seeds": True}, TypeError, r"seeds=True: give a number of seeds"),  # was: seed 0
    ({"seeds": 2.5}, TypeError, r"seeds=2.5: give a number of seeds"),  # was: 'float' object is not iterable
    ({"seeds": ["3"]}, TypeError, r"seeds: '3' is not an integer seed"),  # was: seed 3
    ({"seeds": [0, -1]}, ValueError, r"seeds: seed -1 is negative"),
    ({"variants": []}, ValueError, r"variants=\[\]: give at least one variant"),  # was: every default setting
    ({"variants": ["lm", "lm"]}, ValueError, r"variants: variant lm given twice"),  # was: lm run twice
    ({"data": {"kg": "a"}, "data__kg": "b"}, ValueError, r"data\.kg: given twice"),  # was: the last one
    ({"model": "a", "pretrained": "b"}, ValueError, r"pretrained: given twice, as model= and as the setting"),
    ({"data": {1: "a"}}, TypeError, r"setting data\.1: a setting's name must be a string"),  # was: AttributeError
    ({"epochs": True}, ValueError, r"epochs: expected a finite number, got true"),  # was: 1 epoch
    ({"head_lr": float("nan")}, ValueError, r"head_lr: expected a finite number, got nan"),
    ({"device": 0}, TypeError, r"device 0: give a device name"),  # was: the default device
    ({"log_with": "nope"}, ValueError, r"--log-with nope: unknown tracker\(s\) nope \("),  # was: n, o, p, e
])
def test_bad_arguments_are_refused_before_any_work(arguments, error, message, tmp_path, monkeypatch):
    """Each bad argument is one clear error at the call, before the task's runner is reached."""
    from jaket.tasks.registry import TaskSpec

    monkeypatch.setattr(TaskSpec, "run_function", lambda self: pytest.fail("the task ran"))
    with pytest.raises(error, match=message):
        pipeline("entity-classification", encoder=tmp_path, **{"data__kg": tmp_path, **arguments})


def test_a_fine_tuning_refuses_a_model_folder_that_holds_something_else(tmp_path, monkeypatch):
    """``out/model`` is replaced as a whole when the first run is saved: a folder there that is no
    fine-tuned model is refused before any work (it was emptied after the first run)."""
    from jaket.tasks.registry import TaskSpec

    monkeypatch.setattr(TaskSpec, "run_function", lambda self: pytest.fail("the task ran"))
    (tmp_path / "run" / "model").mkdir(parents=True)
    (tmp_path / "run" / "model" / "notes.txt").write_text("mine")
    refusal = r"model: is not a fine-tuned model folder \(no task.json; it holds notes.txt\)"
    with pytest.raises(ValueError, match=refusal):
        pipeline("entity-classification", evaluate=False, out=tmp_path / "run", encoder=tmp_path, data__kg=tmp_path)
    assert (tmp_path / "run" / "model" / "notes.txt").read_text() == "mine"


def test_the_command_builds_its_job_once_and_hands_it_to_pipeline(tmp_path, monkeypatch):
    """``jaket finetune`` reads its flags into one typed job, validated once (one read of the job's
    settings, one completion), and ``pipeline(job=...)`` runs that very job."""
    import jaket.tasks.cli_common as common
    import jaket.tasks.config as config
    from jaket.tasks.registry import TaskSpec

    reads, completions, ran = [], [], []
    load, resolve = config.load_task_config, common.resolve_job
    monkeypatch.setattr(config, "load_task_config", lambda *a, **k: reads.append(1) or load(*a, **k))
    monkeypatch.setattr(common, "resolve_job", lambda *a, **k: completions.append(1) or resolve(*a, **k))
    monkeypatch.setattr(TaskSpec, "run_function", lambda self: lambda job, out, **k: ran.append(job) or {})
    monkeypatch.setattr("jaket.tasks.cli.finish", lambda *a, **k: 0)
    assert main(["finetune", "entity-classification", "--kg", str(tmp_path), "--epochs", "2",
                 "--out", str(tmp_path / "run")]) == 0
    assert (len(reads), len(completions)) == (1, 1)
    assert ran[0].epochs == 2 and ran[0].variants == ("lm+g+m",) and ran[0].seeds == (0,)


def test_a_complete_job_comes_alone_and_precision_is_an_argument(tmp_path, monkeypatch):
    from jaket.tasks.registry import TaskSpec, task_spec

    ran = []
    monkeypatch.setattr(TaskSpec, "run_function", lambda self: lambda job, out, **k: ran.append(job) or {})
    pipeline("entity-classification", encoder=tmp_path, data__kg=tmp_path, bf16=True, precision="fp32")
    assert ran[-1].bf16 is False  # precision wins over the settings' bf16, as --precision over --set
    job = ran[-1]
    pipeline("entity-classification", job=job)
    assert ran[-1] is job
    with pytest.raises(ValueError, match=r"job= is a complete job: give seeds, epochs in it, not beside it"):
        pipeline("entity-classification", job=job, seeds=2, epochs=3)
    with pytest.raises(TypeError, match=r"takes a " + task_spec("entity-classification").job.__name__):
        pipeline("entity-classification", job=object())
