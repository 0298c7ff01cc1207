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


def test_a_relation_too_small_for_an_episode_is_refused_before_the_run(fewrel_file):
    """A relation of no instance is a format error naming it; one with fewer instances than an
    episode draws (K supports and a query) is refused when the relations are split, not by numpy
    in the middle of the episodes."""
    from jaket.tasks.relation_classification.data import checked_relation_split
    from jaket.tasks.relation_classification.job import RelationClassificationJob

    raw = json.loads(fewrel_file.read_text())
    empty = fewrel_file.parent / "empty.json"
    empty.write_text(json.dumps({**raw, "P9": []}))
    with pytest.raises(FewRelFormatError, match=r"empty.json: relation 'P9' has no instance"):
        load_fewrel(empty)
    raw["P5"] = raw["P5"][:3]  # 3 instances: enough for 1-shot, not for 5-shot
    small = fewrel_file.parent / "small.json"
    small.write_text(json.dumps(raw))
    data = load_fewrel(small)
    job = RelationClassificationJob(settings=((2, 1),), num_train_relations=2)
    train, evaluation = checked_relation_split(data, job)
    assert train == ["P0", "P1"] and "P5" in evaluation
    with pytest.raises(ValueError, match=r"evaluation relation\(s\) P5 \(3\) have fewer than 6 instances"):
        checked_relation_split(data, RelationClassificationJob(settings=((2, 5),), num_train_relations=2))


def test_shared_fewrel(shared_data):
    data = load_fewrel(shared_data / "fewrel")
    assert len(data.relations) == 8 and all(len(v) == 700 for v in data.instances.values())
    assert data.relation_names["P26"] == "spouse"
