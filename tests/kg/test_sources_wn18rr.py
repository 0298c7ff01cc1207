"""WN18RR import: offsets resolved against the WordNet 3.0 files, training triples as the KG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaket.cli import main
from jaket.kg.io import KGFormatError, load_kg, validate_kg_dir
from jaket.kg.sources.wn18rr import RELATIONS, load_wn18rr


def _folder(tmp_path: Path, train: str) -> Path:
    folder = tmp_path / "wn18rr"
    folder.mkdir()
    entities = ["02084071", "02083346", "01317541", "00733632", "99999999"]
    (folder / "entities.dict").write_text("".join(f"{i}\t{e}\n" for i, e in enumerate(entities)))
    (folder / "relations.dict").write_text("0\t_hypernym\n1\t_also_see\n")
    (folder / "train.txt").write_text(train)
    (folder / "valid.txt").write_text("02084071\t_hypernym\t01317541\n")
    return folder


def test_small_folder(tmp_path):
    folder = _folder(tmp_path, "02084071\t_hypernym\t02083346\n02084071\t_hypernym\t01317541\n")
    kg, report = load_wn18rr(folder)
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == (5, 2, 2)
    dog = kg.entity_index("02084071")
    assert kg.entity_names[dog] == "dog" and "Canis familiaris" in list(kg.entity_aliases[dog])
    assert kg.entity_descriptions[dog].startswith("dog, domestic dog, Canis familiaris: a member of")
    assert kg.category_names[kg.entity_category[dog]] == "noun.animal"
    assert kg.relation_names == ["hypernym", "also see"]
    assert kg.relation_descriptions[0] == RELATIONS["_hypernym"][1]
    # 99999999 is no synset: kept, reported, no category
    missing = kg.entity_index("99999999")
    assert report["unresolved"] == 1 and report["unresolved_ids"] == ["99999999"]
    assert kg.entity_category[missing] == -1 and "99999999" in kg.entity_descriptions[missing]
    assert report["resolved"] == 4 and report["splits"] == ["valid.txt"]


def test_ambiguous_offset_is_resolved_by_its_triples(tmp_path):
    folder = _folder(tmp_path, "02084071\t_hypernym\t02083346\n")
    # 00670991 is the verb hypernym of align.v.03 (offset 00733632, shared with plummy.s.01)
    (folder / "entities.dict").write_text("0\t00733632\n1\t00670991\n")
    (folder / "train.txt").write_text("00733632\t_hypernym\t00670991\n")
    kg, report = load_wn18rr(folder)
    assert report["ambiguous_offsets"] == 1 and report["ambiguous_resolved_by_triples"] == 1
    assert kg.entity_names[kg.entity_index("00733632")] == "align"
    assert kg.category_names[kg.entity_category[0]].startswith("verb.")


def test_bad_lines_name_file_and_line(tmp_path):
    folder = _folder(tmp_path, "02084071\t_hypernym\t02083346\n02084071\t_hyponym\t02083346\nbroken line\n")
    with pytest.raises(KGFormatError) as info:
        load_wn18rr(folder)
    message = str(info.value)
    assert f"{folder / 'train.txt'}:2: unknown relation '_hyponym'" in message
    assert f"{folder / 'train.txt'}:3: expected head<TAB>relation<TAB>tail" in message


def test_import_command_errors_without_traceback(tmp_path, capsys):
    folder = _folder(tmp_path, "02084071\t_hypernym\tnope\n")
    assert main(["kg", "import", "wn18rr", str(folder), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "train.txt:1: unknown tail 'nope'" in err and "Traceback" not in err


def test_shared_wn18rr(shared_data, tmp_path, capsys):
    from jaket.kg.readers import read_split

    source = shared_data / "wn18rr"
    if not (source / "train.txt").is_file():
        pytest.skip("../shared/data/wn18rr is not present")
    out = tmp_path / "wn18rr"
    assert main(["kg", "import", "wn18rr", str(source), "--out", str(out)]) == 0
    kg = load_kg(out)
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == (40_943, 11, 86_835)
    assert sorted(kg.relation_ids) == sorted(RELATIONS)
    report = json.loads((out / "build-report.json").read_text())
    assert report["resolved"] == 40_943 and report["unresolved"] == 0
    assert report["ambiguous_undecided"] <= 5
    assert kg.entity_names[kg.entity_index("02084071")] == "dog"
    assert kg.num_categories == 45 and (kg.entity_category >= 0).all()
    assert [p for p in validate_kg_dir(out) if p.is_error] == []
    triples, skipped = read_split(out / "valid.txt", kg)
    assert skipped == 0 and len(triples) > 0
