"""Issue #40, items 4 and 5 on the KG side: what loads but means nothing is said (a KG without an
entity is an error of ``kg validate``; triples given twice are counted by ``validate`` and ``stats``),
and the hints a new user needs (a folder given for a file is "is a directory"; UTF-16 / UTF-32 input
is one line; an OWL file imported as RDF names ``kg import owl``; an empty import names its path)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from unittest import mock

import pytest

from jaket.cli import main
from jaket.kg.io import save_kg
from jaket.kg.toy import toy_kg

from .test_fuzz_importers import STUB_WORDNET

ONTOLOGY = Path(__file__).resolve().parents[1] / "fixtures" / "ontologies" / "shop.ttl"


@pytest.fixture()
def kg_dir(tmp_path):
    kg, corpus = toy_kg()
    return save_kg(kg, tmp_path / "kg", corpus=corpus)


def _run(capsys, *argv) -> tuple[int, list[str], str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, [line for line in captured.err.splitlines() if not line.startswith(("INFO", "WARNING"))], captured.out


def test_a_kg_without_an_entity_is_invalid(tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    for name in ("entities.jsonl", "relations.jsonl", "triples.tsv"):
        (folder / name).write_text("")
    status, err, out = _run(capsys, "kg", "validate", str(folder))
    assert status == 1 and out.splitlines() == [
        f"{folder / 'entities.jsonl'}: no entity: nothing to train on, embed or classify (pre-training and the "
        "tasks refuse it)",
        f"{folder / 'triples.tsv'}: warning: no triple: the knowledge module has no edge and relation prediction "
        "no example"]
    assert err == [f"{folder}: invalid (1 error(s), 1 warning(s))"]


def test_triples_given_twice_are_counted_by_validate_and_stats(kg_dir, capsys):
    kg, _ = toy_kg()
    lines = (kg_dir / "triples.tsv").read_text().splitlines()
    (kg_dir / "triples.tsv").write_text("\n".join(lines + [lines[5], lines[5], lines[0]]) + "\n")
    head, relation, tail = lines[5].split("\t")  # the first line given again
    status, err, out = _run(capsys, "kg", "validate", str(kg_dir))
    assert status == 0 and out.splitlines() == [
        f"{kg_dir / 'triples.tsv'}: warning: 3 triple(s) given again (the same head, relation and tail as an earlier "
        f"line, e.g. '{head}' '{relation}' '{tail}'); pre-training counts each once"]
    assert err == [f"{kg_dir}: valid (0 error(s), 1 warning(s))"]
    status, _, out = _run(capsys, "kg", "stats", str(kg_dir), "--json")
    stats = json.loads(out)
    assert status == 0 and stats["triples"] == kg.num_triples + 3 and stats["repeated_triples"] == 3
    status, _, out = _run(capsys, "kg", "stats", str(kg_dir))
    assert f"triples            {kg.num_triples + 3} (3 given again: pre-training counts each once)" in out


def test_a_folder_given_for_a_file_is_named_a_directory(kg_dir, tmp_path, capsys):
    (kg_dir / "entities.jsonl").unlink()
    (kg_dir / "entities.jsonl").mkdir()
    for command in ("validate", "stats"):
        status, err, out = _run(capsys, "kg", command, str(kg_dir))
        assert status == 1 and (out.splitlines() + err)[0] == f"{kg_dir / 'entities.jsonl'}: is a directory", command
    (tmp_path / "wn18rr" / "train.txt").mkdir(parents=True)
    status, err, _ = _run(capsys, "kg", "import", "wn18rr", str(tmp_path / "wn18rr"), "--out", str(tmp_path / "o"))
    assert status == 1 and err == [f"{tmp_path / 'wn18rr' / 'train.txt'}: is a directory (a WN18RR folder has "
                                   "train.txt)"]
    (tmp_path / "w5m" / "wikidata5m_entity.txt").mkdir(parents=True)
    status, err, _ = _run(capsys, "kg", "import", "wikidata5m", str(tmp_path / "w5m"), "--out", str(tmp_path / "o"))
    assert status == 1 and err[0] == f"{tmp_path / 'w5m' / 'wikidata5m_entity.txt'}: is a directory"


@pytest.mark.parametrize("bom, encoding, name", [(b"", "utf-16", "UTF-16"), (b"\xfe\xff", "utf-16-be", "UTF-16"),
                                                 (b"", "utf-32", "UTF-32"), (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32")])
def test_utf16_and_utf32_input_is_said_in_one_line(bom, encoding, name, kg_dir, tmp_path, capsys):
    data = bom + (kg_dir / "entities.jsonl").read_text().encode(encoding)
    mark = data[:4 if name == "UTF-32" else 2].hex(" ").upper()
    said = f"{name} text (it starts with the byte order mark {mark}); save it as UTF-8"
    texts = tmp_path / "texts.txt"
    texts.write_bytes(bom + "a wolf in the forest\n".encode(encoding))
    status, err, _ = _run(capsys, "link", "--kg", str(kg_dir), "--texts", str(texts), "--out", str(tmp_path / "c.jsonl"))
    assert status == 1 and err == [f"{texts}:1: {said}"]
    config = tmp_path / "c.yaml"
    config.write_bytes(bom + "steps: 3\n".encode(encoding))
    status, err, _ = _run(capsys, "pretrain", "--config", str(config), "--print-config")
    assert status == 2 and err == [f"error: {config}:1: {said}"]
    (kg_dir / "entities.jsonl").write_bytes(data)
    status, err, out = _run(capsys, "kg", "validate", str(kg_dir))  # not one error per triple naming an entity
    assert status == 1 and out.splitlines() == [f"{kg_dir / 'entities.jsonl'}:1: {said}"]
    assert err == [f"{kg_dir}: invalid (1 error(s), 0 warning(s))"]


def test_an_owl_ontology_imported_as_rdf_names_the_owl_import(tmp_path, caplog, capsys):
    with caplog.at_level(logging.WARNING):
        assert main(["kg", "import", "rdf", str(ONTOLOGY), "--out", str(tmp_path / "rdf")]) == 0
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"{ONTOLOGY} declares 11 owl:Class and 4 owl:Restriction: an OWL ontology, read here as plain RDF (its class "
        f"axioms are dropped with their blank nodes); `jaket kg import owl {ONTOLOGY} --out DIR` keeps the "
        "restrictions and makes the class hierarchy the categories"]
    report = json.loads((tmp_path / "rdf" / "build-report.json").read_text())
    assert report["owl_declarations"] == {"owl:Class": 11, "owl:Restriction": 4}


def test_an_empty_import_names_its_path(tmp_path, capsys):
    wn18rr = tmp_path / "wn18rr"
    wn18rr.mkdir()
    for name in ("entities.dict", "relations.dict", "train.txt"):
        (wn18rr / name).write_text("")
    with mock.patch("jaket.kg.sources.wn18rr.load_wordnet_data", return_value=STUB_WORDNET):
        status, err, _ = _run(capsys, "kg", "import", "wn18rr", str(wn18rr), "--out", str(tmp_path / "o"))
    assert status == 1 and err == [f"{wn18rr}: no entity found, nothing to import (an empty or unreadable wn18rr "
                                   "source?)"]
    w5m = tmp_path / "w5m"
    w5m.mkdir()
    for name in ("entity", "relation", "text", "transductive_train"):
        (w5m / f"wikidata5m_{name}.txt").write_text("")
    status, err, _ = _run(capsys, "kg", "import", "wikidata5m", str(w5m), "--out", str(tmp_path / "o"))
    assert status == 1 and err == [f"{w5m}: no entity found, nothing to import (an empty or unreadable wikidata5m "
                                   "source?)"]
    assert not (tmp_path / "o").exists()
