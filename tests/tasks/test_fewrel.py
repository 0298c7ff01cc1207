"""FewRel's JSON read: the relations, their names from pid2name.json, an instance's entity markers,
an instance that points outside its sentence named, and the shared data set."""

import json

import pytest

from jaket.tasks.relation_classification.data import FewRelFormatError, load_fewrel


def test_fewrel_loader(fewrel_file):
    data = load_fewrel(fewrel_file, fewrel_file.parent / "pid2name.json")
    assert data.relations == [f"P{i}" for i in range(6)]
    assert data.relation_names["P0"] == "zero" and data.relation_names["P3"] == "P3"
    inst = data.instances["P2"][0]
    text = inst.marked_text()
    assert f"[ {inst.tokens[inst.head[0]]} ]" in text and f"< {inst.tokens[inst.tail[0]]} >" in text


def test_fewrel_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"P1": [{"tokens": ["a"], "h": ["a", "Q1", [[0]]], "t": ["b", "Q2", [[3]]]}]}))
    with pytest.raises(FewRelFormatError, match="relation 'P1', instance 0"):
        load_fewrel(bad)


def test_shared_fewrel(shared_data):
    data = load_fewrel(shared_data / "fewrel")
    assert len(data.relations) == 8 and all(len(v) == 700 for v in data.instances.values())
    assert data.relation_names["P26"] == "spouse"
