"""Inputs first (issue 53, item 4): ``jaket finetune|evaluate`` of entity classification, link
prediction, KGQA and relation classification, and ``jaket embed``, read and check their data files before the model
code (torch_geometric, transformers, the task's model) is imported, so a malformed file is refused
in the time it takes to parse it; what was read is what the run uses, read once. And
:func:`jaket.load_finetuned` given something that is not a path says so."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: a fresh interpreter (this one has imported everything already): each command on its malformed
#: file, timed once the command line is built (torch and the parser's own imports come before the
#: clock, as every command pays them), then every module of the model code that was imported
_PROBE = textwrap.dedent("""
    import json, sys, time
    import torch  # noqa: F401
    import jaket.cli
    from jaket.cli import main

    jaket.cli.build_parser()
    runs = []
    for command in json.loads(sys.argv[1]):
        start = time.perf_counter()
        status = main(command)
        runs.append([status, time.perf_counter() - start])
    tasks = ("entity_classification", "link_prediction", "kgqa", "relation_classification")
    heavy = ["transformers", "torch_geometric", "jaket.model.jaket", "jaket.model.knowledge", "jaket.tasks.variants",
             "jaket.tasks.word_in_context.model", "jaket.tasks.word_in_context.finetuned",
             "jaket.tasks.finetuned", *(f"jaket.tasks.{t}.{part}" for t in tasks for part in ("run", "model"))]
    print(json.dumps({"runs": runs, "loaded": [m for m in heavy if m in sys.modules]}))
""")


def _malformed_inputs(folder: Path) -> list[tuple[list[str], str]]:
    """Each task's command on a data file with one bad line, and the one line it must print."""
    kg = folder / "kg"  # a KG folder whose triples.tsv has a line of two columns
    kg.mkdir()
    (kg / "entities.jsonl").write_text('{"id": "a", "name": "A", "description": "the a"}\n'
                                       '{"id": "b", "name": "B", "description": "the b"}\n', encoding="utf-8")
    (kg / "relations.jsonl").write_text('{"id": "r", "name": "R", "description": "related"}\n', encoding="utf-8")
    (kg / "triples.tsv").write_text("a\tr\tb\na\tr\n", encoding="utf-8")
    wn18rr = folder / "wn18rr"  # train.txt with a line of two columns
    wn18rr.mkdir()
    (wn18rr / "train.txt").write_text("a\tr\tb\nb\tr\n", encoding="utf-8")
    (wn18rr / "valid.txt").write_text("a\tr\tb\n", encoding="utf-8")
    metaqa = folder / "metaqa"  # kb.txt with a line of two fields
    (metaqa / "1-hop").mkdir(parents=True)
    (metaqa / "kb.txt").write_text("a|r|b\nb|r\n", encoding="utf-8")
    (metaqa / "1-hop" / "qa_dev.txt").write_text("what is [a] related to\tb\n", encoding="utf-8")
    fewrel = folder / "fewrel.json"  # JSON broken on its second line
    fewrel.write_text('{"P1": [{"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[1]]]}],\n'
                      ' "P2": [}\n', encoding="utf-8")
    good = folder / "good.json"  # well-formed, but as training data it trains on the relations it evaluates
    good.write_text(fewrel.read_text(encoding="utf-8").replace(',\n "P2": [}', "}"), encoding="utf-8")
    return [
        (["finetune", "entity-classification", "--kg", str(kg)],
         f"{kg / 'triples.tsv'}:2: expected 3 tab-separated columns (head, relation, tail), found 2"),
        (["evaluate", "link-prediction", "--data", str(wn18rr)],
         f"{wn18rr / 'train.txt'}:2: expected head<TAB>relation<TAB>tail, got 'b\\tr'"),
        (["finetune", "kgqa", "--data", str(metaqa)],
         f"error: {metaqa / 'kb.txt'}:2: expected head|relation|tail, got 'b|r'"),
        (["embed", "--model", str(folder), "--kg", str(kg)],  # the KG before the model folder is opened
         f"{kg / 'triples.tsv'}:2: expected 3 tab-separated columns (head, relation, tail), found 2"),
        (["evaluate", "relation-classification", "--data", str(fewrel)],
         f"error: {fewrel}:2: invalid JSON: Expecting value (column 9)"),
        (["evaluate", "relation-classification", "--data", str(good), "--train", str(good)],
         "error: relation(s) P1 are in both --train and --data: an episode must never evaluate a relation it "
         "trained on; add --drop-overlap to train without them, or remove them from one side"),
    ]


def test_a_malformed_file_is_refused_before_any_model_code_loads(tmp_path):
    """One bad line in each task's data: the error names the file and the line, it is all the
    command says, and it comes before the model code is imported (which took 6-10 s per command on
    a loaded 2-core machine, beside torch's own import; now well under a second each), with nothing
    written to ``--out``; so does a check of what the files hold (a relation both trained on and
    evaluated)."""
    cases = _malformed_inputs(tmp_path)
    commands = [command + ["--out", str(tmp_path / f"out{i}" / ("vectors.npy" if command[0] == "embed" else ""))]
                for i, (command, _) in enumerate(cases)]
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(commands)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    assert [status for status, _ in found["runs"]] == [1] * len(cases)
    assert done.stderr.splitlines() == [line for _, line in cases]
    assert sum(seconds for _, seconds in found["runs"]) < 8.0, found["runs"]
    assert not any((tmp_path / f"out{i}").exists() for i in range(len(cases)))


#: each task's data section on the small files of the fixtures (``folder``), and its settings
_DATA = {
    "entity-classification": (lambda folder: {"kg": folder / "kg"}, {}),
    "link-prediction": (lambda folder: {"kg": folder / "kg", "eval": (folder / "test.txt",)}, {}),
    "kgqa": (lambda folder: {"metaqa": folder, "train_split": "train"}, {}),
    "relation-classification": (lambda folder: {"data": folder / "fewrel.json"}, {"settings": ((2, 1),)}),
}


@pytest.mark.parametrize("task, module, loader, runner", [
    ("entity-classification", "entity_classification", "load_data", "run_entity_classification"),
    ("link-prediction", "link_prediction", "load_data", "run_link_prediction"),
    ("kgqa", "kgqa", "load_data", "run_kgqa"),
    ("relation-classification", "relation_classification", "load_relations", "run_relation_classification"),
])
def test_the_data_read_first_is_the_data_the_run_uses(task, module, loader, runner, small_kg, metaqa_dir,
                                                      fewrel_file, monkeypatch):
    """The command's runner (:func:`jaket.pipelines.pipeline`'s) reads the data once, with the task's
    own reader, and hands exactly what it read to the task's run (stopped there: no training)."""
    import importlib

    from jaket.kg.io import save_kg
    from jaket.tasks.cli_common import resolve_job
    from jaket.tasks.registry import task_spec

    folder = metaqa_dir  # the MetaQA files, fewrel.json, and here the KG and test triples of small_kg
    save_kg(small_kg, folder / "kg")
    (folder / "test.txt").write_text("e1\thypernym\te0\ne2\thypernym\te0\n", encoding="utf-8")
    data, run = (importlib.import_module(f"jaket.tasks.{module}.{part}") for part in ("data", "run"))
    reads, handed = [], []
    real = getattr(data, loader)

    def counted(*args, **kwargs):
        reads.append(real(*args, **kwargs))
        return reads[-1]

    monkeypatch.setattr(data, loader, counted)
    monkeypatch.setattr(run, runner, lambda *args, **kwargs: handed.append([*args, *kwargs.values()]) or "ran")
    spec = task_spec(task)
    section, settings = _DATA[task]
    job = spec.job(data=type(spec.job().data)(**section(folder)), **settings)
    job = resolve_job(job, True, default_variants=spec.default_variants, finetune_variant=spec.finetune_variant)
    assert spec.run_function()(job, None) == "ran"
    assert len(reads) == 1 and len(handed) == 1
    assert all(any(part is given for given in handed[0]) for part in reads[0] if part is not None)


@pytest.mark.parametrize("given, shown", [(5, "5 (type int)"), (None, "None (type NoneType)"),
                                          (b"runs/model", "b'runs/model' (type bytes)")])
def test_load_finetuned_names_what_it_was_given_when_it_is_not_a_path(given, shown):
    """Not pathlib's "expected str, bytes or os.PathLike object": what was given and what is expected."""
    import jaket
    from jaket.tasks.kgqa.finetuned import FinetunedQuestionAnswerer

    expected = ("expected the path (a str or pathlib.Path) of a folder written by `jaket finetune` "
                "(its OUT/model)")
    with pytest.raises(TypeError) as error:
        jaket.load_finetuned(given)
    assert str(error.value) == f"load_finetuned: got {shown}; {expected}"
    with pytest.raises(TypeError) as error:
        FinetunedQuestionAnswerer.from_pretrained(given)
    assert str(error.value) == f"FinetunedQuestionAnswerer.from_pretrained: got {shown}; {expected}"


def _malformed_predict_inputs(folder: Path) -> list[tuple[list[str], str]]:
    """``jaket predict TASK`` on a fine-tuned folder of the task (its ``task.json``: the model is never
    reached) and an input file with one bad line; the file and line each error must name."""
    kg = folder / "kg-good"
    kg.mkdir()
    (kg / "entities.jsonl").write_text('{"id": "a", "name": "A", "description": "the a"}\n'
                                       '{"id": "b", "name": "B", "description": "the b"}\n', encoding="utf-8")
    (kg / "relations.jsonl").write_text('{"id": "r", "name": "R", "description": "related"}\n', encoding="utf-8")
    (kg / "triples.tsv").write_text("a\tr\tb\n", encoding="utf-8")
    files = {
        "entities.txt": "a\nnot-an-entity\n",
        "queries.tsv": "a\tr\t?\nb\tr\n",
        "questions.txt": "what is [A] related to\tB\nwho is [Nobody]\n",
        "support.json": '{"P1": [{"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[1]]]}],\n "P2": [}\n',
        "rc-queries.jsonl": '{"tokens": ["a", "b"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[1]]]}\n',
        "pairs.txt": "bank\tN\t0-1\tThe bank.\tA bank.\nbank\tN\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    cases = []
    for task, flags, bad in [
        ("entity-classification", ["--kg", str(kg), "--entities", str(folder / "entities.txt")], "entities.txt:2"),
        ("link-prediction", ["--kg", str(kg), "--queries", str(folder / "queries.tsv")], "queries.tsv:2"),
        ("kgqa", ["--kg", str(kg), "--questions", str(folder / "questions.txt")], "questions.txt:2"),
        ("relation-classification", ["--support", str(folder / "support.json"), "--queries",
                                     str(folder / "rc-queries.jsonl")], "support.json:2"),
        ("word-in-context", ["--pairs", str(folder / "pairs.txt")], "pairs.txt:2"),
    ]:
        model = folder / f"model-{task}"
        model.mkdir()
        (model / "task.json").write_text(json.dumps({"format": "jaket-finetuned", "format_version": 1, "task": task,
                                                     "hops": [1]}), encoding="utf-8")
        cases.append((["predict", task, "--finetuned", str(model), *flags], str(folder / bad)))
    return cases


def test_predict_reads_every_input_before_the_model(tmp_path):
    """Issue 69, item 4: each ``jaket predict`` task refuses a malformed input file (naming its file
    and line) before the model is loaded or its code imported, in the seconds its parse takes."""
    cases = _malformed_predict_inputs(tmp_path)
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([c for c, _ in cases])], capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    assert [status for status, _ in found["runs"]] == [1] * len(cases), done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:") or line.startswith(str(tmp_path))]
    assert len(errors) == len(cases), done.stderr
    for line, (_, where) in zip(errors, cases):
        assert where + ":" in line, (line, where)
    assert sum(seconds for _, seconds in found["runs"]) < 8.0, found["runs"]
