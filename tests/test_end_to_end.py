"""A user's own data, end to end through the command line: a film KG in RDF Turtle and raw
sentences (tests/fixtures/film) -> kg import rdf -> link -> pretrain -> finetune
entity-classification (own split files) -> predict, and embed the sentences with the result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg

FILM = Path(__file__).resolve().parent / "fixtures" / "film"
REPO = Path(__file__).resolve().parents[1]
EX = "http://example.org/film/"


def _split_files(kg, folder: Path) -> dict[str, Path]:
    """Per category (in id order): half train, a quarter dev, the rest test."""
    rows = {"train": [], "dev": [], "test": []}
    for c in range(kg.num_categories):
        members = [kg.entity_ids[i] for i in np.flatnonzero(kg.entity_category == c)]
        half, quarter = len(members) // 2, max(1, len(members) // 4)
        rows["train"] += members[:half]
        rows["dev"] += members[half:half + quarter]
        rows["test"] += members[half + quarter:]
    files = {}
    for name, ids in rows.items():
        files[name] = folder / f"{name}.txt"
        files[name].write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return files


def test_film_kg_from_rdf_and_raw_text_to_predictions(tiny_bert_dir, tmp_path, capsys):
    kg_dir, pre, ft = tmp_path / "film_kg", tmp_path / "pretrain", tmp_path / "finetune"
    assert main(["kg", "import", "rdf", str(FILM / "film.ttl"), "--out", str(kg_dir)]) == 0
    assert main(["kg", "validate", str(kg_dir)]) == 0
    assert main(["link", "--kg", str(kg_dir), "--text", str(FILM / "sentences.txt"),
                 "--out", str(kg_dir / "corpus.jsonl")]) == 0
    kg = load_kg(kg_dir)
    corpus = [json.loads(line) for line in (kg_dir / "corpus.jsonl").read_text().splitlines()]
    assert len(corpus) == len((FILM / "sentences.txt").read_text().splitlines())
    assert all(record["mentions"] for record in corpus)  # every sentence names a film entity
    assert kg.category_names == ["country", "film", "genre", "person"]
    untyped = sorted(EX + name for name in ("Casablanca", "Rear_Window", "Michael_Curtiz", "Humphrey_Bogart"))
    assert sorted(kg.entity_ids[i] for i in np.flatnonzero(kg.entity_category < 0)) == untyped

    assert main(["pretrain", "--config", str(REPO / "configs" / "pretrain-tiny.yaml"), "--kg", str(kg_dir),
                 "--set", f"model.encoder={tiny_bert_dir}", "--set", "steps=4", "--set", "checkpoint_every=0",
                 "--no-progress", "--out", str(pre)]) == 0
    assert (pre / "model" / "config.json").is_file()

    files = _split_files(kg, tmp_path)
    assert main(["finetune", "entity-classification", "--model", str(pre / "model"), "--kg", str(kg_dir),
                 "--train", str(files["train"]), "--dev", str(files["dev"]), "--test", str(files["test"]),
                 "--epochs", "8", "--train-fractions", "1.0", "--out", str(ft)]) == 0
    metrics = json.loads((ft / "metrics.json").read_text())
    assert list(metrics["summary"]) == ["jaket"]
    test_accuracy = metrics["runs"]["jaket"]["1.0"][0]["test_accuracy"]

    capsys.readouterr()
    assert main(["predict", "entity-classification", "--model", str(ft / "model"), "--kg", str(kg_dir)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["entity"] for r in rows) == untyped  # every unlabelled entity, once
    assert all(r["label"] in kg.category_names and 0.25 <= r["probability"] <= 1.0 for r in rows)
    out = tmp_path / "test-predictions.jsonl"
    assert main(["predict", "entity-classification", "--model", str(ft / "model"), "--kg", str(kg_dir),
                 "--entities", str(files["test"]), "--out", str(out)]) == 0
    predicted = [json.loads(line) for line in out.read_text().splitlines()]
    truth = {kg.entity_ids[i]: kg.category_names[kg.entity_category[i]] for i in range(kg.num_entities)
             if kg.entity_category[i] >= 0}
    assert np.mean([r["label"] == truth[r["entity"]] for r in predicted]) == pytest.approx(test_accuracy)

    embeddings = tmp_path / "sentences.npy"
    assert main(["embed", "--model", str(pre / "model"), "--kg", str(kg_dir), "--texts",
                 str(FILM / "sentences.txt"), "--out", str(embeddings)]) == 0
    mentions = (tmp_path / "sentences.npy.mentions.jsonl").read_text().splitlines()
    vectors = np.load(tmp_path / "sentences.npy.mention-vectors.npy", allow_pickle=False)
    assert vectors.shape[0] == len(mentions) == sum(len(r["mentions"]) for r in corpus)
