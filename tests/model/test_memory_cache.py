"""The memory cache: the second memory of the same LM1, KG and description length is read, not
recomputed; other weights, another KG, other texts under the same ids or another length miss; a damaged
entry is recomputed."""

from __future__ import annotations

import logging

import pytest
import torch


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JAKET_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "memory"


@pytest.fixture(scope="module")
def language(tiny_bert_dir):
    from jaket.model.language import SplitLanguageModel

    return SplitLanguageModel.from_pretrained(tiny_bert_dir).eval()


def _count_refreshes(monkeypatch):
    from jaket.model.memory import EntityContextMemory

    calls = []
    original = EntityContextMemory.refresh

    def counting(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(EntityContextMemory, "refresh", counting)
    return calls


def test_the_second_fill_is_read_from_the_cache(cache, language, monkeypatch, caplog):
    from jaket.kg.toy import toy_kg
    from jaket.model.memory import EntityContextMemory

    kg, _ = toy_kg()
    calls = _count_refreshes(monkeypatch)
    first = EntityContextMemory.from_kg(language, kg, max_length=16)
    assert len(calls) == 1 and len(list(cache.glob("*.safetensors"))) == 1
    with caplog.at_level(logging.INFO):
        second = EntityContextMemory.from_kg(language, kg, max_length=16)
    assert len(calls) == 1, "the second fill recomputed the rows"
    assert torch.equal(first.entities, second.entities) and torch.equal(first.relations, second.relations)
    assert second.filled and "read from the memory cache" in caplog.text
    EntityContextMemory.from_kg(language, kg, max_length=12)  # another description length
    assert len(calls) == 2
    with torch.no_grad():
        next(language.lm1_parameters()).add_(0.01)  # other LM1 weights
    try:
        EntityContextMemory.from_kg(language, kg, max_length=16)
        assert len(calls) == 3
    finally:
        with torch.no_grad():
            next(language.lm1_parameters()).sub_(0.01)


def test_the_same_ids_with_other_descriptions_or_names_never_read_the_first_rows(cache, language, monkeypatch):
    """KG-50%'s descriptions are made from its own half: same ids, other texts (the bug this guards)."""
    from dataclasses import replace

    from jaket.kg.toy import toy_kg
    from jaket.model.memory import EntityContextMemory

    kg, _ = toy_kg()
    calls = _count_refreshes(monkeypatch)
    first = EntityContextMemory.from_kg(language, kg, max_length=16)
    half = replace(kg, entity_descriptions=[d + " and more" if i % 2 else d
                                            for i, d in enumerate(kg.entity_descriptions)])
    assert half.fingerprint() == kg.fingerprint()
    second = EntityContextMemory.from_kg(language, half, max_length=16)
    assert len(calls) == 2, "other descriptions were read from the first KG's cache entry"
    assert not torch.equal(first.entities, second.entities)
    renamed = replace(kg, entity_names=[n.upper() for n in kg.entity_names])
    EntityContextMemory.from_kg(language, renamed, max_length=16)
    relations = replace(kg, relation_descriptions=[d + "." for d in kg.relation_descriptions])
    EntityContextMemory.from_kg(language, relations, max_length=16)
    assert len(calls) == 4
    again = EntityContextMemory.from_kg(language, half, max_length=16)
    assert len(calls) == 4 and torch.equal(again.entities, second.entities)


def test_a_damaged_entry_is_recomputed_and_off_means_off(cache, language, monkeypatch, caplog):
    from jaket.kg.toy import toy_kg
    from jaket.model.memory import EntityContextMemory

    kg, _ = toy_kg()
    calls = _count_refreshes(monkeypatch)
    good = EntityContextMemory.from_kg(language, kg, max_length=16)
    entry = next(cache.glob("*.safetensors"))
    entry.write_bytes(b"not safetensors")
    with caplog.at_level(logging.WARNING):
        again = EntityContextMemory.from_kg(language, kg, max_length=16)
    assert len(calls) == 2 and "unreadable memory cache entry" in caplog.text
    assert torch.equal(good.entities, again.entities)
    monkeypatch.setenv("JAKET_CACHE", "off")
    EntityContextMemory.from_kg(language, kg, max_length=16)
    assert len(calls) == 3
