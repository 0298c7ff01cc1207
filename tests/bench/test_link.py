"""`jaket bench link`: `jaket link --model --scorer text+kg` run cold and warm; the figures exist and
are consistent (the warm run reads every sense text from the cache the cold run filled, and writes the
same corpus), never how fast anything is."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaket.cli import main as jaket_main
from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import save_kg

#: a corpus of usage examples (entity index of each text's one mention); the benchmark links a sample
USAGE = [("she sat on the bank of the river", 0), ("he paid cash into the bank", 1),
         ("they will bank the money", 2), ("the river flooded the fields", 3), ("money talks", 4)]


@pytest.fixture()
def bench_inputs(tiny_bert_dir, tmp_path):
    """``(kg_dir, model_dir)``: a five-entity KG with three senses named "bank" and a corpus, and a
    jaket folder on the tiny BERT."""
    import torch

    from jaket.model.jaket import JaketConfig, JaketModel

    ids = ["bank.n.01", "bank.n.02", "bank.v.01", "river.n.01", "money.n.01"]
    kg = KnowledgeGraph(
        entity_ids=ids, entity_names=["bank", "bank", "bank", "river", "money"],
        entity_descriptions=["sloping land beside a river", "a place where money is kept",
                             "to put money into an account", "a large stream of water", "cash and coins"],
        entity_aliases=[[] for _ in ids], entity_category=np.full(len(ids), -1), category_names=[],
        relation_ids=["related"], relation_names=["related"], relation_descriptions=["related to"],
        triples=np.asarray([[0, 0, 3], [1, 0, 4], [2, 0, 4]]))
    mentions = [[Mention(text.index(kg.entity_names[e]), text.index(kg.entity_names[e]) + len(kg.entity_names[e]), e)]
                for text, e in USAGE]
    save_kg(kg, tmp_path / "kg", corpus=MentionCorpus([t for t, _ in USAGE], mentions))
    torch.manual_seed(0)
    JaketModel(JaketConfig(encoder=str(tiny_bert_dir), km_heads=4, fanouts=(3, 3), description_max_length=16)
               ).save_pretrained(tmp_path / "model", save_memory=False)
    return tmp_path / "kg", tmp_path / "model"


def _bench(capsys, *argv) -> dict:
    assert jaket_main(["bench", "link", "--json", *map(str, argv)]) == 0
    return json.loads(capsys.readouterr().out)


def test_bench_link_cold_then_warm(bench_inputs, capsys):
    kg_dir, model_dir = bench_inputs
    figures = _bench(capsys, "--kg", kg_dir, "--model", model_dir, "--limit", "3", "--threads", "1")
    assert figures["texts"] == 3 and figures["precision"] == "fp32" and figures["threads"] == 1
    assert figures["mentions"] > 0 and figures["ranked_mentions"] > 0  # "bank" has three senses
    read = figures["cold_sense_texts_read"]
    assert read > 0 and figures["cold_sense_texts_cached"] == 0
    assert (figures["warm_sense_texts_read"], figures["warm_sense_texts_cached"]) == (0, read)
    assert figures["same_corpus_cold_and_warm"] is True
    for run in ("cold", "warm"):
        stages = figures[f"{run}_stages"]
        assert {"candidates", "sense texts", "mentions"} <= set(stages)
        assert figures[f"{run}_linking_seconds"] == pytest.approx(
            stages["candidates"] + stages["sense texts"] + stages["mentions"])
        assert 0 < figures[f"{run}_linking_seconds"] <= figures[f"{run}_seconds"]
        assert figures[f"{run}_texts_per_second"] == pytest.approx(3 / figures[f"{run}_seconds"])
        assert set(figures[f"{run}_load_average"]) == {"before", "after"}
    assert figures["speedup_warm_over_cold"] == pytest.approx(figures["cold_seconds"] / figures["warm_seconds"])
    assert "model" in figures["machine"]["cpu"]


def test_bench_link_reads_the_first_texts_of_a_file(bench_inputs, capsys, tmp_path):
    kg_dir, model_dir = bench_inputs
    texts = tmp_path / "texts.txt"
    texts.write_text("a bank of the river\n\nthe bank lent money\nriver and bank again\n")
    figures = _bench(capsys, "--kg", kg_dir, "--model", model_dir, "--texts", texts, "--limit", "2")
    assert figures["texts"] == 2 and figures["mentions"] == 4  # bank, river; bank, money
