"""PATO, a real ontology, through the whole walkthrough (issue 65, item 5): imported from each of its
three published formats, validated, a few sentences linked, pre-trained, fine-tuned for entity
classification, predicted and embedded; tiny settings (the 4-layer random test encoder, a few
steps), with the network unreachable."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg

SENTENCES = ["The cells were round and small.", "An increased size of the nucleus was seen.",
             "Its colour was red, its texture rough.", "The mutant had decreased fertility.",
             "A spherical shape and an elongated one."]


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_pato_from_import_to_vectors(shared_data, tiny_bert_dir, tmp_path, no_network, capsys):
    pato = shared_data / "ontologies" / "pato"
    kgs = {}
    for name, command in (("pato.obo", "obo"), ("pato-base.owl", "owl"), ("pato-base.json", "obo")):
        out = tmp_path / f"kg-{name.replace('.', '-')}"
        assert main(["kg", "import", command, str(pato / name), "--out", str(out), "--category-depth", "2",
                     "--category-root", "PATO:0000001"]) == 0
        kgs[name] = out
    assert load_kg(kgs["pato-base.owl"]).entity_ids == load_kg(kgs["pato-base.json"]).entity_ids
    kg = kgs["pato.obo"]
    capsys.readouterr()
    assert main(["kg", "validate", str(kg), "--encoder", str(tiny_bert_dir)]) == 0
    assert "valid (0 error(s)" in capsys.readouterr().err
    texts = tmp_path / "sentences.txt"
    texts.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    assert main(["link", "--kg", str(kg), "--texts", str(texts), "--out", str(kg / "corpus.jsonl")]) == 0
    linked = [json.loads(line) for line in (kg / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    found = {row["text"][m["start"]:m["end"]].lower() for row in linked for m in row["mentions"]}
    assert {"round", "spherical", "red"} <= found
    assert main(["pretrain", "--kg", str(kg), "--encoder", str(tiny_bert_dir), "--steps", "3", "--out",
                 str(tmp_path / "pre"), "--no-progress", "--set", "eval_texts=0", "--set", "model.km_heads=2",
                 "--set", "checkpoint_every=0", "--set", "data.heldout_fraction=0"]) == 0
    model = tmp_path / "pre" / "model"
    assert main(["finetune", "entity-classification", "--kg", str(kg), "--model", str(model), "--out",
                 str(tmp_path / "ec"), "--epochs", "3", "--train-fractions", "1"]) == 0
    report = (tmp_path / "ec" / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Entity classification on the pre-training KG")  # not an unseen KG'
    assert main(["predict", "entity-classification", "--finetuned", str(tmp_path / "ec" / "model"), "--kg", str(kg),
                 "--out", str(tmp_path / "predictions.jsonl")]) == 0
    predicted = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert predicted and all(row["label"] and 0 < row["probability"] <= 1 for row in predicted)
    assert main(["embed", "--model", str(model), "--kg", str(kg), "--out", str(tmp_path / "vectors.npy")]) == 0
    vectors = np.load(tmp_path / "vectors.npy", allow_pickle=False)
    assert vectors.shape[0] == load_kg(kg).num_entities and np.isfinite(vectors).all()
