"""MetaQA: its files read (the KB, the questions with their topic and answers, a bad line named)
and its protocol (--train-split / --eval-split, the seeded division, descriptions from training
questions only, the errors of a bad folder)."""

import numpy as np
import pytest

from jaket.tasks.kgqa import data as metaqa
from jaket.tasks.kgqa.data import MetaQAFormatError, load_metaqa_task


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
    from jaket.tasks.kgqa.data import read_kb

    with pytest.raises(MetaQAFormatError, match=r"kb.txt:2:"):
        read_kb(tmp_path / "kb.txt")


def test_default_protocol_divides_the_train_split(metaqa_splits_dir):
    data = load_metaqa_task(metaqa_splits_dir, "dev", None, (1, 2), 0.1, 0.3, split_seed=0)
    n = len(data.questions)
    assert n == 18 + 4 + 3  # 1-hop dev: 9 films x 2 + 4 directors; 2-hop dev: 3
    parts = [set(data.train.tolist()), set(data.selection.tolist()), set(data.test.tolist())]
    assert sum(map(len, parts)) == n and set().union(*parts) == set(range(n))
    assert len(parts[1]) == round(0.1 * n) and len(parts[2]) == round(0.3 * n)
    again = load_metaqa_task(metaqa_splits_dir, "dev", split_seed=0)
    other = load_metaqa_task(metaqa_splits_dir, "dev", split_seed=1)
    assert np.array_equal(again.test, data.test) and not np.array_equal(other.test, data.test)
    # the memory reads training questions only: no selection or test question is a description
    held_out = {data.questions[i].text for i in (*data.selection, *data.test)}
    trained = {data.questions[i].text for i in data.train}
    descriptions = set(data.kg.entity_descriptions)
    assert not (descriptions & (held_out - trained)) and descriptions & trained
    assert data.info["train_split"] == "dev" and data.info["eval_split"] is None


def test_eval_split_is_only_evaluated(metaqa_splits_dir):
    data = load_metaqa_task(metaqa_splits_dir, "dev", "test", (1, 2), selection_fraction=0.2)
    assert len(data.train) + len(data.selection) == 25 and len(data.test) == 3 * 2 + 1
    test_texts = [data.questions[i].text for i in data.test]
    assert "who directed Film 9" in test_texts and all(i >= 25 for i in data.test)
    assert {data.questions[i].hops for i in data.test} == {1, 2}
    assert not set(data.kg.entity_descriptions) & set(test_texts)


def test_gold_answers_missing_from_the_kg_are_reported(metaqa_splits_dir, caplog):
    """An answer not in kb.txt cannot be scored: it is counted with examples (data info, a warning)
    and kept on the question, never silently dropped; a question left with no answer is skipped."""
    dev = metaqa_splits_dir / "1-hop" / "qa_dev.txt"
    lines = dev.read_text().splitlines()
    lines[0] += "|Director 99"  # one known and one unknown answer
    lines.append("who directed [Film 1]\tNobody")  # no known answer: skipped
    dev.write_text("\n".join(lines) + "\n")
    test = metaqa_splits_dir / "1-hop" / "qa_test.txt"
    test.write_text(test.read_text() + "who directed [Film 9]\tGhost Director\n")
    data = load_metaqa_task(metaqa_splits_dir, "dev", "test", (1, 2), selection_fraction=0.2)
    assert data.info["missing_answers"] == {
        "dev": {"answers": 2, "questions": 2,
                "examples": [f"{dev}:1: 'Director 99'", f"{dev}:{len(lines)}: 'Nobody'"]},
        "test": {"answers": 1, "questions": 1, "examples": [f"{test}:7: 'Ghost Director'"]}}
    assert data.info["skipped"] == {"dev": 1, "test": 1}
    first = next(q for q in data.questions if q.line == 1 and q.hops == 1 and q.text == "who directed Film 0")
    assert first.missing_answers == ["Director 99"] and len(first.answers) == 1
    assert "2 gold answer(s) of 2 dev question(s) are not entities of kb.txt" in caplog.text
    assert f"{dev}:1: 'Director 99'" in caplog.text and "1 gold answer(s) of 1 test question(s)" in caplog.text


def test_bad_protocol_and_files_are_named(metaqa_splits_dir):
    with pytest.raises(ValueError, match="--test dev is also --train"):
        load_metaqa_task(metaqa_splits_dir, "dev", "dev")
    with pytest.raises(MetaQAFormatError, match=r"no 1-hop/qa_train.txt \(splits present for 1-hop: dev, test\)"):
        load_metaqa_task(metaqa_splits_dir, "train")
    with pytest.raises(ValueError, match="--test-fraction"):
        load_metaqa_task(metaqa_splits_dir, "dev", test_fraction=0.95)
    (metaqa_splits_dir / "1-hop" / "qa_dev.txt").write_text("who directed [Film 1]\tDirector 1\nno topic here\tx\n")
    with pytest.raises(MetaQAFormatError, match=r"qa_dev.txt:2: no \[topic entity\]"):
        load_metaqa_task(metaqa_splits_dir, "dev")


def test_shared_metaqa_dev_protocol(shared_data):
    data = load_metaqa_task(shared_data / "metaqa", "dev", hops=(1,))
    assert data.kg.num_entities == 42777 and data.kg.num_relations == 9
    assert len(data.questions) == 9939 and len(data.test) == round(0.3 * 9939)
