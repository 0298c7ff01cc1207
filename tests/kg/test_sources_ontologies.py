"""Ontologies in: OWL class restrictions as edges, schema axioms left out, labels by language,
definitions or generated descriptions, categories from the class hierarchy; OBO read leniently;
and an imported ontology pre-trains and fine-tunes."""

import json
from pathlib import Path

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg
from jaket.kg.sources.ontologies import load_obo
from jaket.kg.sources.ontologies import load_owl
from jaket.kg.sources.ontology import words

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ontologies"
SHOP = "http://example.org/shop#"


def _edges(kg, entity):
    i = kg.entity_ids.index(entity) if isinstance(kg.entity_ids, list) else list(kg.entity_ids).index(entity)
    return sorted((kg.relation_names[r], kg.entity_names[t]) for h, r, t in kg.triples.tolist() if h == i)


def test_every_owl_pattern_becomes_the_documented_edge():
    kg, report = load_owl(FIXTURES / "shop.ttl")
    assert _edges(kg, SHOP + "Bicycle") == [("has part", "Wheel"), ("has part (only)", "Saddle"),
                                            ("has part (only)", "Wheel"), ("made in", "Italy"),
                                            ("subclass of", "Vehicle")]
    assert _edges(kg, SHOP + "MotorBike") == [("has part", "Engine"), ("subclass of", "Vehicle")]
    assert _edges(kg, SHOP + "Italy") == [("instance of", "Country")]
    assert "disjoint with" not in kg.relation_names  # schema axioms left out by default, counted
    assert report["patterns"]["disjoint_with"] == 1 and report["patterns"]["axioms_left_out_domain"] == 1
    ids = list(kg.entity_ids)
    assert "http://example.org/shop" not in ids and SHOP + "hasPart" not in ids and SHOP + "note" not in ids
    kept, _ = load_owl(FIXTURES / "shop.ttl", keep_axioms=True)
    assert ("disjoint with", "Wheel") in _edges(kept, SHOP + "Engine")


def test_names_descriptions_and_categories():
    kg, report = load_owl(FIXTURES / "shop.ttl", category_depth=1)
    row = {e: i for i, e in enumerate(kg.entity_ids)}
    vehicle, bicycle, wheel = row[SHOP + "Vehicle"], row[SHOP + "Bicycle"], row[SHOP + "Wheel"]
    assert kg.entity_names[vehicle] == "Vehicle" and set(kg.entity_aliases[vehicle]) == {"Fahrzeug", "conveyance"}
    assert kg.entity_names[bicycle] == "Bicycle" and kg.entity_aliases[bicycle] == ["Bicicletta"]  # Italian only
    assert kg.entity_names[row[SHOP + "MotorBike"]] == "Motor Bike" and words("hasTopping") == "has Topping"
    assert kg.entity_descriptions[wheel] == "Wheel: A round part that turns."  # IAO definition
    assert kg.entity_descriptions[row[SHOP + "Product"]] == "Product: Something a shop sells."
    assert kg.entity_descriptions[bicycle] == ("Bicycle: a vehicle; has part wheel; has part (only) wheel, saddle; "
                                               "made in italy")
    assert report["descriptions_generated"] == len(kg.entity_ids) - 2
    only_skos, _ = load_owl(FIXTURES / "shop.ttl", definitions=("http://www.w3.org/2004/02/skos/core#definition",))
    assert only_skos.entity_descriptions[wheel] == "Wheel: a part"  # IAO not read: generated from its edges
    category = {kg.entity_names[i]: kg.category_names[c] for i, c in enumerate(kg.entity_category) if c >= 0}
    assert category["Bicycle"] == category["Vehicle"] == "Vehicle" and category["Wheel"] == "Part"
    assert "Italy" not in category and "Product" not in category  # above depth 1: no category
    assert report["entities_per_category"]["Part"] == 4 and report["entities_without_category"] == 4
    top, _ = load_owl(FIXTURES / "shop.ttl", category_depth=0)  # an individual takes its class's
    assert {top.entity_names[i]: top.category_names[c] for i, c in enumerate(top.entity_category)}["Italy"] == "Country"


def test_pizza_owl_keeps_what_the_ontology_says(shared_data):
    kg, report = load_owl(shared_data / "ontologies" / "pizza.owl")
    american = next(e for e in kg.entity_ids if e.endswith("#American"))
    row = list(kg.entity_ids).index(american)
    assert kg.entity_names[row] == "American" and "Americana" in kg.entity_aliases[row]
    assert ("has topping", "Mozzarella Topping") in _edges(kg, american)
    assert "disjoint with" not in kg.relation_names and report["patterns"]["disjoint_with"] > 700
    categories = report["entities_per_category"]
    assert len([c for c, n in categories.items() if n >= 2]) > 1 and max(categories.values()) < kg.num_entities / 2


def test_obo_terms_definitions_synonyms_and_edges(tmp_path):
    kg, report = load_obo(FIXTURES / "mini.obo")
    assert list(kg.entity_ids) == ["MINI:0000001", "MINI:0000002", "MINI:0000003", "MINI:0000004"]
    assert report["account"]["obsolete_terms_dropped"] == {"count": 1, "examples": [
        f"{FIXTURES / 'mini.obo'}:29: MINI:0000005"]}
    assert kg.entity_aliases[1] == ["metabolism"] and kg.entity_descriptions[1].endswith("reactions in a cell.")
    assert _edges(kg, "MINI:0000003") == [("part of", "carbohydrate metabolism"), ("subclass of", "metabolic process")]
    assert kg.entity_descriptions[2] == "glycolysis: a metabolic process; part of carbohydrate metabolism"
    (tmp_path / "bad.obo").write_text("[Term]\nid: X:1\nname: x\nis_a: \n\x00\n")  # lenient: accounted for
    bad, report = load_obo(tmp_path / "bad.obo")
    assert list(bad.entity_ids) == ["X:1"] and report["account"]["clauses_not_readable_dropped"]["examples"] == [
        f"{tmp_path / 'bad.obo'}:4: is_a: 1 identifier expected, found 0"]
    assert report["account"]["lines_without_a_tag_dropped"]["count"] == 1


def test_an_imported_ontology_pretrains_and_fine_tunes(tiny_bert_dir, tmp_path):
    out = tmp_path / "kg"
    assert main(["kg", "import", "owl", str(FIXTURES / "shop.ttl"), "--out", str(out), "--category-depth", "1"]) == 0
    report = json.loads((out / "build-report.json").read_text())
    assert report["source"] == "owl" and load_kg(out).num_triples == report["triples"]
    assert main(["pretrain", "--kg", str(out), "--encoder", str(tiny_bert_dir), "--steps", "2", "--out",
                 str(tmp_path / "pre"), "--no-progress", "--set", "eval_texts=0", "--set", "model.km_heads=2",
                 "--set", "tasks.root_entities=4"]) == 0
    assert main(["finetune", "entity-classification", "--kg", str(out), "--model", str(tmp_path / "pre" / "model"),
                 "--out", str(tmp_path / "ec"), "--set", "epochs=3"]) == 0
    metrics = json.loads((tmp_path / "ec" / "metrics.json").read_text())
    assert np.isfinite(metrics["summary"]["jaket"]["1.0"]["test_accuracy"]["mean"])
