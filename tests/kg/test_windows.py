"""Descriptions that identify their entity (issue 65, item 2): importers start each description with
the entity's name, and `jaket kg validate` (and pre-training) name the entities whose description
windows are still identical."""

from __future__ import annotations

import json
from pathlib import Path

from jaket.cli import main
from jaket.kg.io import load_kg
from jaket.kg.windows import description_windows

LONG = ("an independent continuant [snap:IndependentContinuant] that is spatially extended, whose identity is "
        "independent of that of other entities and which can be maintained through time")

UPPER = f"""@prefix : <http://example.org/upper#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
:continuant a owl:Class ; rdfs:label "continuant" ; skos:definition "An entity that persists." .
:object a owl:Class ; rdfs:subClassOf :continuant ; rdfs:label "object" ; skos:definition "{LONG}" .
:site a owl:Class ; rdfs:subClassOf :continuant ; rdfs:label "site" ; skos:definition "{LONG}" .
"""


def _entities(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "entities.jsonl").read_text(encoding="utf-8").splitlines()]


def test_an_imported_ontology_names_each_entity_first_and_validates_clean(tmp_path, capsys):
    source = tmp_path / "upper.ttl"
    source.write_text(UPPER, encoding="utf-8")
    kg = tmp_path / "kg"
    assert main(["kg", "import", "owl", str(source), "--out", str(kg)]) == 0
    descriptions = {row["name"]: row["description"] for row in _entities(kg)}
    assert descriptions["object"] == f"object: {LONG}" and descriptions["site"] == f"site: {LONG}"
    capsys.readouterr()
    assert main(["kg", "validate", str(kg), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["warnings"] == 0 and report["description_windows"]["indistinguishable_entities"] == 0
    assert report["description_windows"]["window"] == 16 and report["description_windows"]["descriptions_cut"] == 2


def test_validate_names_the_entities_whose_windows_are_the_same(tmp_path, capsys, bert_tokenizer):
    source = tmp_path / "upper.ttl"
    source.write_text(UPPER, encoding="utf-8")
    kg = tmp_path / "kg"
    assert main(["kg", "import", "owl", str(source), "--out", str(kg)]) == 0
    rows = _entities(kg)
    for row in rows:  # as the importer wrote them before: the definition alone, cut at 16 tokens
        if row["name"] in ("object", "site"):
            row["description"] = LONG
    (kg / "entities.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    capsys.readouterr()
    assert main(["kg", "validate", str(kg)]) == 0  # a warning, not an error
    out = capsys.readouterr().out
    assert "2 entities share their description window with another (16 tokens" in out
    assert "'object' (object) and 'site' (site)" in out
    loaded = load_kg(kg)
    measure = description_windows(loaded, bert_tokenizer, 64)  # the whole text read: still one description
    assert [[loaded.entity_names[i] for i in g] for g in measure.groups] == [["object", "site"]] and measure.cut == 0
    assert main(["kg", "validate", str(kg), "--window", "0"]) == 0  # the check skipped
    assert "share their description window" not in capsys.readouterr().out


def test_the_check_reads_a_table_already_made_and_refuses_another_window(tmp_path, bert_tokenizer):
    """Pre-training hands the check the memory's own table (the descriptions tokenised once a run):
    the same report as tokenising for the check; a table of another window or KG is refused."""
    import pytest

    from jaket.kg.corpus import DescriptionTokens

    source = tmp_path / "upper.ttl"
    source.write_text(UPPER.replace("object: ", ""), encoding="utf-8")
    kg = tmp_path / "kg"
    assert main(["kg", "import", "owl", str(source), "--out", str(kg)]) == 0
    rows = _entities(kg)
    for row in rows:
        if row["name"] in ("object", "site"):
            row["description"] = LONG
    (kg / "entities.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    loaded = load_kg(kg)
    table = DescriptionTokens(list(loaded.entity_descriptions), list(loaded.entity_names), bert_tokenizer, 16)
    shared = description_windows(loaded, bert_tokenizer, 16, table)
    alone = description_windows(loaded, bert_tokenizer, 16)
    assert shared == alone and shared.cut == 2 and len(shared.groups) == 1 and table.done.all()
    with pytest.raises(ValueError, match="16 tokens"):
        description_windows(loaded, bert_tokenizer, 32, table)
