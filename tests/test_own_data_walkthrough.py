"""docs/own-data.md as a user runs it: every `jaket` command of the page's shell blocks, in order,
read out of the page itself (and the README's own-data lines, which must be among them), then the
page's Python block; tiny settings only (a 4-layer random encoder as the default encoder, a few
steps and epochs), so the page cannot rot. Each step's output is checked as a user would look at it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "own-data.md"
EX = "http://example.org/film/"
#: the tiny settings added to a page command (the page's own flags stay as written)
TINY = {"pretrain": ["--steps", "4", "--set", "checkpoint_every=0", "--no-progress"],
        "finetune": ["--epochs", "3"], "finetune link-prediction": ["--steps", "3", "--seeds", "1"]}


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of one language, in page order."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def commands(text: str) -> list[list[str]]:
    """The `jaket ...` commands of a page's shell blocks (backslash continuations joined)."""
    found = []
    for block in blocks(text, "shell"):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("jaket "):
                found.append(shlex.split(line)[1:])
    return found


def readme_commands() -> list[list[str]]:
    return commands((REPO / "README.md").read_text(encoding="utf-8"))


def test_the_page_and_the_readme_agree():
    page = commands(PAGE.read_text(encoding="utf-8"))
    assert len(page) >= 9  # import, validate, stats, link, pretrain, finetune, predict, embed x2, link
    readme = readme_commands()
    assert readme, "the README has no own-data shell block"
    for command in readme:
        assert command in page, f"README's `jaket {' '.join(command)}` is not on docs/own-data.md"
    assert blocks((REPO / "README.md").read_text(encoding="utf-8"), "python")[0].strip() in \
        blocks(PAGE.read_text(encoding="utf-8"), "python")[0]


@pytest.fixture
def walked(tiny_bert_dir, tmp_path, monkeypatch):
    """The page's commands run in a fresh folder holding the repository's examples/."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.setenv("JAKET_MODEL", str(tiny_bert_dir))
    ran = []
    for argv in commands(PAGE.read_text(encoding="utf-8")):
        extra = TINY.get(" ".join(argv[:2]), TINY.get(argv[0], []))
        assert main(argv + extra) == 0, f"`jaket {' '.join(argv)}` failed"
        ran.append(argv[0] if argv[0] != "kg" else f"kg {argv[1]}")
    return tmp_path, ran


def test_every_command_of_the_page_runs_and_writes_what_it_says(walked, capsys):
    root, ran = walked
    assert ran[:5] == ["kg import", "kg validate", "kg stats", "link", "pretrain"]
    kg = load_kg(root / "my_kg")
    assert kg.category_names == ["country", "film", "genre", "person"]
    untyped = sorted(EX + name for name in ("Casablanca", "Rear_Window", "Michael_Curtiz", "Humphrey_Bogart"))
    assert sorted(kg.entity_ids[i] for i in np.flatnonzero(kg.entity_category < 0)) == untyped

    sentences = (REPO / "examples" / "films" / "sentences.txt").read_text(encoding="utf-8").splitlines()
    corpus = [json.loads(line) for line in (root / "my_kg" / "corpus.jsonl").read_text().splitlines()]
    assert [r["text"] for r in corpus] == sentences and all(r["mentions"] for r in corpus)

    runs = root / "runs" / "films"
    assert (runs / "pretrain" / "model" / "config.json").is_file()
    summary = json.loads((runs / "pretrain" / "summary.json").read_text())
    assert summary["steps"] == 4

    metrics = json.loads((runs / "classifier" / "metrics.json").read_text())
    assert list(metrics["summary"]) == ["jaket"]
    predictions = [json.loads(line) for line in (runs / "predictions.jsonl").read_text().splitlines()]
    assert sorted(r["entity"] for r in predictions) == untyped  # every unlabelled entity, once
    assert all(r["label"] in kg.category_names and 0.25 <= r["probability"] <= 1.0 for r in predictions)

    import faiss
    import pyarrow.parquet as pq

    entities = pq.read_table(runs / "entities.parquet")
    assert entities.num_rows == kg.num_entities
    index = faiss.read_index(str(runs / "entities.parquet.faiss"))
    assert index.ntotal == kg.num_entities
    texts = pq.read_table(runs / "sentences.parquet")
    assert texts.num_rows == len(sentences)

    linked = [json.loads(line) for line in (runs / "linked.jsonl").read_text().splitlines()]
    assert [r["text"] for r in linked] == sentences
    assert sum(len(r["mentions"]) for r in linked) == sum(len(r["mentions"]) for r in corpus)


def test_the_kg_without_text_gets_descriptions_a_corpus_and_answers(walked):
    """docs/own-data.md, "A KG without text" (issue 66): names and triples in, descriptions and a
    verbalised corpus made, pre-trained, link prediction fine-tuned, a query answered."""
    root, ran = walked
    assert ran[-6:] == ["kg import", "kg describe", "kg corpus", "pretrain", "finetune", "predict"]
    bare, described = load_kg(root / "kb_kg"), load_kg(root / "kb_described")
    assert list(bare.entity_descriptions) == list(bare.entity_names)  # nothing to read before
    vertigo = described.entity_ids.index("Vertigo")
    assert described.entity_descriptions[vertigo].startswith("Vertigo: ") and \
        "was directed by Alfred Hitchcock" in described.entity_descriptions[vertigo]
    corpus = [json.loads(line) for line in (root / "kb_described" / "corpus.jsonl").read_text().splitlines()]
    assert sum(len(r["mentions"]) - 1 for r in corpus) == bare.num_triples  # every triple said once
    for record in corpus:
        for mention in record["mentions"]:
            assert record["text"][mention["start"]:mention["end"]] == \
                described.entity_names[described.entity_ids.index(mention["entity"])]
    answers = [json.loads(line) for line in (root / "runs" / "kb" / "answers.jsonl").read_text().splitlines()]
    assert len(answers) == 2 and all(a["answers"] for a in answers)


def test_the_python_block_runs(walked, monkeypatch):
    root, _ = walked
    import jaket
    import jaket.api

    pretrain, pipeline = jaket.api.pretrain, jaket.pipeline
    monkeypatch.setattr(jaket, "pretrain", lambda *a, **k: pretrain(*a, steps=4, checkpoint_every=0,
                                                                    progress=False, **k), raising=False)
    monkeypatch.setattr(jaket, "pipeline", lambda *a, **k: pipeline(*a, epochs=3, **k), raising=False)
    scope: dict = {}
    exec(blocks(PAGE.read_text(encoding="utf-8"), "python")[0], scope)
    kg = scope["kg"]
    assert sorted(r["entity"] for r in scope["predictions"]) == sorted(
        kg.entity_ids[i] for i in np.flatnonzero(kg.entity_category < 0))
    assert scope["vectors"].tokens[0].shape[0] > 0
    assert (root / "runs" / "films" / "classifier-py" / "model").is_dir()
