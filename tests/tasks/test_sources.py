import json

import pytest

from jaket.tasks import metaqa
from jaket.tasks.fewrel import FewRelFormatError, load_fewrel


def test_metaqa_loader(metaqa_dir):
    kb, questions, skipped = metaqa.load_metaqa(metaqa_dir)
    assert kb.triples.shape == (5, 3)
    assert skipped == 1  # [Unknown Film] is not in kb.txt
    q = questions[0]
    assert q.text == "who directed Kismet" and q.text[q.topic_start:q.topic_end] == "Kismet"
    assert [kb.entity_names[a] for a in q.answers] == ["William Dieterle"]
    assert {q.hops for q in questions} == {1, 2}
    two = [q for q in questions if q.hops == 2][0]
    assert sorted(kb.entity_names[a] for a in two.answers) == ["1936", "1944"]
    descriptions = metaqa.entity_descriptions_from_questions(len(kb.entity_names), kb.entity_names, questions)
    assert "Kismet" in descriptions[kb.index["Kismet"]] and descriptions[kb.index["1944"]] == "1944"


def test_metaqa_bad_line(tmp_path):
    (tmp_path / "kb.txt").write_text("a|b|c\nbroken line\n")
    from jaket.kg.sources.metaqa import read_kb

    with pytest.raises(metaqa.MetaQAFormatError, match=r"kb.txt:2:"):
        read_kb(tmp_path / "kb.txt")


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
