"""A task whose job names no data says so in one line: it runs on the built-in WordNet, and which
flag gives one's own data (``jaket finetune TASK`` without ``--kg``/``--data`` is no silent demo)."""

from __future__ import annotations

import logging

import pytest


@pytest.mark.slow
def test_entity_classification_and_link_prediction_name_the_builtin_wordnet(caplog):
    from jaket.tasks.entity_classification.data import load_data as entity_data
    from jaket.tasks.entity_classification.job import EntityClassificationData
    from jaket.tasks.link_prediction.data import load_data as triple_data

    with caplog.at_level(logging.WARNING):
        entity_data(EntityClassificationData(max_entities=60))
        triple_data(None, None, max_entities=60)
    lines = [r.getMessage() for r in caplog.records if "built-in WordNet" in r.getMessage()]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert lines[0].startswith("entity-classification: no data given") and "--kg DIR" in lines[0]
    assert lines[1].startswith("link-prediction: no data given") and "--data DIR" in lines[1]


def test_a_kg_given_runs_without_the_notice(caplog, tmp_path):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg
    from jaket.tasks.entity_classification.data import load_data as entity_data
    from jaket.tasks.entity_classification.job import EntityClassificationData

    save_kg(toy_kg()[0], tmp_path / "kg")
    with caplog.at_level(logging.WARNING):
        entity_data(EntityClassificationData(kg=tmp_path / "kg"))
    assert not [r for r in caplog.records if "built-in WordNet" in r.getMessage()]
