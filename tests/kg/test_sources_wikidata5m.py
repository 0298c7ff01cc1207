"""Wikidata5M's file layout imported as a KG: names, aliases, descriptions, categories from
*instance of*, evaluation splits, and every bad line named as path:line."""

from __future__ import annotations

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg, validate_kg_dir
from jaket.kg.sources import wikidata5m as w5m
from jaket.kg.sources.wikidata5m import Wikidata5MError, load_wikidata5m

ENTITIES = [
    "Q42\tDouglas Adams\tDouglas Noël Adams\tDNA\tDouglas Adams",
    "Q5\thuman\thumans\tpeople",
    "Q145\tUnited Kingdom\tUK\tBritain",
    "Q84\tLondon",
    "Q515\tcity",
    "Q350\tCambridge",
    "Q6581097\tmale",
]
RELATIONS = ["P31\tinstance of\tis a", "P27\tcountry of citizenship\tcitizenship", "P19\tplace of birth",
             "P17\tcountry"]
TEXTS = [
    "Q42\tDouglas Noël Adams was an English author, best known for The Hitchhiker's Guide to the Galaxy.",
    "Q5\tcommon name of Homo sapiens",
    "Q145\tThe United Kingdom is a country in north-western Europe.\tIt has a tab.",
    "Q84\tLondon is the capital of England and the " + "largest city " * 20,
    "Q515\tA city is a large human settlement.",
    "Q999\tAn entity the entity file does not list.",
]
TRAIN = ["Q42\tP31\tQ5", "Q42\tP27\tQ145", "Q84\tP31\tQ515", "Q84\tP17\tQ145", "Q350\tP31\tQ515",
         "Q350\tP17\tQ145", "Q42\tP19\tQ350"]
VALID = ["Q84\tP17\tQ145"]
TEST = ["Q350\tP17\tQ145", "Q42\tP27\tQ145"]


def _folder(path, **replace):
    files = {"wikidata5m_entity.txt": ENTITIES, "wikidata5m_relation.txt": RELATIONS,
             "wikidata5m_text.txt": TEXTS, "wikidata5m_transductive_train.txt": TRAIN,
             "wikidata5m_transductive_valid.txt": VALID, "wikidata5m_transductive_test.txt": TEST,
             "wikidata5m_inductive_train.txt": TRAIN[:3], "wikidata5m_inductive_valid.txt": VALID,
             "wikidata5m_inductive_test.txt": TEST[:1], **replace}
    path.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        data = lines if isinstance(lines, bytes) else "".join(f"{line}\n" for line in lines).encode()
        (path / name).write_bytes(data)
    return path


def test_import_maps_names_descriptions_categories_and_splits(tmp_path):
    kg, splits, report = load_wikidata5m(_folder(tmp_path / "w5m"), max_description_chars=100)
    assert kg.num_entities == 7 and kg.num_relations == 4
    adams = kg.entity_index("Q42")
    assert kg.entity_names[adams] == "Douglas Adams"
    assert list(kg.entity_aliases[adams]) == ["Douglas Noël Adams", "DNA"]  # the repeated name left out
    # a description without the name is prefixed with it; without any description: the name
    assert kg.entity_descriptions[kg.entity_index("Q5")] == "human: common name of Homo sapiens"
    assert kg.entity_descriptions[kg.entity_index("Q350")] == "Cambridge"
    assert kg.entity_descriptions[kg.entity_index("Q145")].endswith("It has a tab.")
    assert len(kg.entity_descriptions[kg.entity_index("Q84")]) == 100
    assert report["entities_without_description"] == 2  # Q350, Q6581097
    assert report["descriptions_of_unknown_entities_skipped"] == 1 and report["descriptions_truncated"] == 1
    # categories: the tail of the first instance-of triple; those triples leave the KG
    category = {kg.entity_ids[i]: kg.category_names[c] for i, c in enumerate(kg.entity_category) if c >= 0}
    assert category == {"Q42": "human", "Q84": "city", "Q350": "city"}
    assert report["category_triples_removed"] == 3 and kg.num_triples == len(TRAIN) - 3
    assert kg.relation_index("P31") not in kg.triples[:, 1]
    assert kg.relation_descriptions[kg.relation_index("P27")] == "country of citizenship (also: citizenship)"
    assert {k: len(v) for k, v in splits.items()} == {"valid": 1, "test": 2}
    assert splits["valid"].tolist() == [[kg.entity_index("Q84"), kg.relation_index("P17"), kg.entity_index("Q145")]]
    (tmp_path / "work").mkdir()  # descriptions in memory-mapped files instead of RAM: the same KG
    spilled, _, _ = load_wikidata5m(tmp_path / "w5m", max_description_chars=100, work_dir=tmp_path / "work")
    assert spilled == kg and sorted(p.name for p in (tmp_path / "work").iterdir()) == [
        "descriptions-read.bin", "descriptions.bin"]
    kept, _, _ = load_wikidata5m(tmp_path / "w5m", keep_category_triples=True, category_relation="P31")
    assert kept.num_triples == len(TRAIN)
    inductive, splits, _ = load_wikidata5m(tmp_path / "w5m", setting="inductive", category_relation=None)
    assert inductive.num_triples == 3 and inductive.num_categories == 0 and len(splits["test"]) == 1


def test_cli_writes_a_valid_kg_directory_with_splits(tmp_path, capsys):
    out = tmp_path / "kg"
    assert main(["kg", "import", "wikidata5m", str(_folder(tmp_path / "w5m")), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "7 entities, 4 relations, 4 triples, 2 categories" in printed
    assert "3 category triples removed from the KG" in printed
    assert not [p for p in validate_kg_dir(out) if p.is_error]
    kg = load_kg(out)
    assert kg.entity_names[kg.entity_index("Q42")] == "Douglas Adams"
    assert (out / "valid.txt").read_text() == "Q84\tP17\tQ145\n"
    assert not list(out.glob(".import-*"))  # the description files are gone
    from jaket.kg.readers import read_split

    test, _ = read_split(out / "test.txt", kg)
    assert len(test) == 2


def test_every_bad_line_is_named(tmp_path, capsys):
    folder = _folder(tmp_path / "w5m",
                     **{"wikidata5m_entity.txt": ENTITIES + ["Q84\tLondon again", "\tno id", "Q7"],
                        "wikidata5m_text.txt": TEXTS + ["Q5 without a tab", "Q42\tsecond description"],
                        "wikidata5m_transductive_train.txt": TRAIN + ["Q42\tP27", "Q1\tP27\tQ145",
                                                                      "Q42\tP99\tQ2"]})
    with pytest.raises(Wikidata5MError) as caught:
        load_wikidata5m(folder)
    lines = str(caught.value).splitlines()
    entity, text, train = (str(folder / name) for name in (
        "wikidata5m_entity.txt", "wikidata5m_text.txt", "wikidata5m_transductive_train.txt"))
    assert lines == [
        f"{entity}:8: duplicate entity id 'Q84' (first at line 4)",
        f"{entity}:9: empty entity id",
        f"{entity}:10: entity 'Q7' has no name (expected id<TAB>name[<TAB>alias...])",
        f"{text}:7: expected id<TAB>description",
        f"{text}:8: second description of 'Q42' (first at line 1)",
        f"{train}:8: expected head<TAB>relation<TAB>tail, found 2 fields",
        f"{train}:9: unknown head entity id 'Q1' (not in wikidata5m_entity.txt)",
        f"{train}:10: unknown relation id 'P99' (not in wikidata5m_relation.txt); unknown tail entity id 'Q2' "
        "(not in wikidata5m_entity.txt)"]
    assert main(["kg", "import", "wikidata5m", str(folder), "--out", str(tmp_path / "kg")]) == 1
    assert capsys.readouterr().err.startswith(f"{entity}:8: duplicate entity id")  # as kg validate prints
    assert main(["kg", "import", "wikidata5m", str(tmp_path / "nowhere"), "--out", str(tmp_path / "kg")]) == 1
    assert "nowhere: not a directory" in capsys.readouterr().err


def test_line_numbers_hold_across_blocks_and_bad_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(w5m, "_BLOCK_BYTES", 40)  # a few lines per block
    train = "".join(f"{line}\n" for line in TRAIN * 5).encode() + b"Q42\tP27\tQ\xff\n" + b"Q42\tP27\tQ404\n"
    folder = _folder(tmp_path / "w5m", **{"wikidata5m_transductive_train.txt": train})
    with pytest.raises(Wikidata5MError) as caught:
        load_wikidata5m(folder)
    path = folder / "wikidata5m_transductive_train.txt"
    assert str(caught.value).splitlines() == [f"{path}:36: invalid UTF-8 (byte 9 of the line)",
                                              f"{path}:37: unknown tail entity id 'Q404' (not in wikidata5m_entity.txt)"]
    good = _folder(tmp_path / "ok", **{"wikidata5m_transductive_train.txt": TRAIN * 5})
    kg, _, _ = load_wikidata5m(good, category_relation=None)
    assert kg.num_triples == 5 * len(TRAIN)
    assert np.array_equal(kg.triples[:len(TRAIN)], kg.triples[len(TRAIN):2 * len(TRAIN)])


def test_many_problems_are_counted_beyond_the_listed_ones(tmp_path):
    bad = [f"Q42\tP27\tQ{9000 + i}" for i in range(w5m.MAX_LISTED_PROBLEMS + 5)]
    folder = _folder(tmp_path / "w5m", **{"wikidata5m_transductive_train.txt": TRAIN + bad})
    with pytest.raises(Wikidata5MError) as caught:
        load_wikidata5m(folder)
    lines = str(caught.value).splitlines()
    assert len(lines) == w5m.MAX_LISTED_PROBLEMS + 1 and lines[-1].endswith("... and 5 more problems")
