import json

import numpy as np
import pytest
import torch

from jaket.tasks import link_prediction as lp
from jaket.tasks.variants import Backbone


def test_filtered_ranks_against_brute_force():
    torch.manual_seed(0)
    n, p, f = 12, 2, 8
    backbone = Backbone("lm", f, None, None, None)
    entities, relations = torch.randn(n, f), torch.randn(p, f)
    triples = np.array([[0, 0, 1], [0, 0, 2], [3, 1, 4], [5, 0, 1]])
    for scorer in lp.SCORERS:
        model = lp.LinkScorer(backbone, scorer, p)
        rel = relations if scorer != "rotate" else relations[:, : f // 2]
        tails, heads = lp.filtered_ranks(model, entities, rel, triples[:3], triples)
        for i, (h, r, t) in enumerate(triples[:3]):
            scores = model.score(entities[h], rel[r], entities).numpy()
            true = {tt for hh, rr, tt in triples if hh == h and rr == r and tt != t}
            expected = 1 + sum(scores[e] > scores[t] for e in range(n) if e not in true)
            assert tails[i] == expected, scorer
            scores = model.score(entities, rel[r], entities[t]).numpy()
            true = {hh for hh, rr, tt in triples if rr == r and tt == t and hh != h}
            expected = 1 + sum(scores[e] > scores[h] for e in range(n) if e not in true)
            assert heads[i] == expected, scorer


def test_read_split_counts_unknown(small_kg, tmp_path):
    path = tmp_path / "valid.txt"
    path.write_text("e0\thypernym\te1\ne0\thypernym\tunknown\n")
    triples, skipped = lp.read_split(path, small_kg)
    assert triples.tolist() == [[0, 0, 1]] and skipped == 1
    path.write_text("e0 hypernym e1\n")
    with pytest.raises(lp.SplitFormatError, match=r"valid.txt:1:"):
        lp.read_split(path, small_kg)


def test_train_and_evaluate_inductive(small_kg, tiny_bert_dir, tmp_path):
    triples = np.asarray(small_kg.triples, dtype=np.int64)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(triples))
    train, valid = triples[order[:-8]], triples[order[-8:]]
    config = lp.LinkPredictionConfig(variants=("lm+g+m",), scorers=("distmult", "rotate"), steps=6,
                                     batch_size=16, negatives=4, holdout_fraction=0.3,
                                     encoder=tiny_bert_dir, km_heads=4)
    results = lp.run_link_prediction(small_kg, train, {"valid": valid}, config, tmp_path)
    assert results["data"]["train_triples"] < len(train)  # the inductive hold-out removed triples
    for key in ("lm+g+m/distmult", "lm+g+m/rotate"):
        run = results["runs"][key][0]
        assert 0 < run["valid"]["mrr"] <= 1 and run["valid"]["count"] == 16  # head + tail
        assert "unseen" in run["valid"]
        # seen + unseen partition the evaluation triples (head + tail ranks each)
        assert run["valid"]["seen"]["count"] + run["valid"]["unseen"]["count"] == 16
        assert run["train_cpu_seconds"] > 0
    seen_triples = results["data"]["eval_seen_triples"]["valid"]
    assert results["runs"]["lm+g+m/distmult"][0]["valid"]["seen"]["count"] == 2 * seen_triples
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert set(metrics["summary"]) == {"lm+g+m/distmult", "lm+g+m/rotate"}
    assert (tmp_path / "rank_histogram.png").exists()
    # the exact split is written in the WN18RR format, readable back against the KG
    written, skipped = lp.read_split(tmp_path / "split" / "train.txt", small_kg)
    assert skipped == 0 and len(written) == results["data"]["train_triples"]
    assert set(map(tuple, written.tolist())) <= set(map(tuple, train.tolist()))
    back, _ = lp.read_split(tmp_path / "split" / "valid.txt", small_kg)
    assert np.array_equal(back, valid)


def test_shared_wn18rr_subset(shared_data, small_kg, tiny_bert_dir):
    """The evaluation reads the real WN18RR files; a small subset keeps it fast."""
    from jaket.kg.graph import KnowledgeGraph

    lines = (shared_data / "wn18rr" / "train.txt").read_text().splitlines()[:150]
    rows = [line.split("\t") for line in lines]
    ids = sorted({r[0] for r in rows} | {r[2] for r in rows})
    rels = sorted({r[1] for r in rows})
    kg = KnowledgeGraph(entity_ids=ids, entity_names=[f"synset {i}" for i in ids],
                        entity_descriptions=[f"synset {i} of wordnet" for i in ids],
                        entity_aliases=[[] for _ in ids], entity_category=np.full(len(ids), -1),
                        category_names=[], relation_ids=rels, relation_names=[r.strip("_") for r in rels],
                        relation_descriptions=[r.strip("_").replace("_", " ") for r in rels],
                        triples=np.zeros((0, 3)))
    triples, skipped = lp.read_split(shared_data / "wn18rr" / "train.txt", kg)
    assert len(triples) >= 150 and skipped > 0
    config = lp.LinkPredictionConfig(variants=("lm",), scorers=("transe",), steps=3, batch_size=32,
                                     negatives=4, encoder=tiny_bert_dir)
    results = lp.run_link_prediction(kg, triples[:120], {"valid": triples[120:150]}, config)
    assert results["runs"]["lm/transe"][0]["valid"]["count"] == 60


def test_training_never_shows_a_positive_as_an_edge(small_kg, tiny_bert_dir, monkeypatch):
    """Each step's KM input hides exactly the batch's own triples (nothing else)."""
    from jaket.kg import sampling
    from jaket.tasks.variants import VariantConfig, kg_memory, load_backbone

    triples = np.asarray(small_kg.triples, dtype=np.int64)
    graph = lp.train_view(small_kg, triples)
    seen = []
    real = sampling.sample_neighbors

    def spy(kg, seeds, fanouts, generator, exclude_triples=None):
        sub = real(kg, seeds, fanouts, generator, exclude_triples)
        seen.append((np.asarray(exclude_triples), sub.triple_id.numpy(), np.asarray(seeds)))
        return sub

    monkeypatch.setattr(sampling, "sample_neighbors", spy)
    backbone = load_backbone(VariantConfig("lm+g+m", encoder=tiny_bert_dir, km_heads=4))
    memory = kg_memory(backbone, small_kg, max_length=16)
    config = lp.LinkPredictionConfig(steps=4, batch_size=8, negatives=5, fanouts=(50, 50))
    losses = lp.train_scorer(lp.LinkScorer(backbone, "transe", small_kg.num_relations), memory, graph,
                             triples, config, seed=0)
    assert len(losses) == 4 and len(seen) == 4
    for hidden, used, seeds in seen:
        assert len(seeds) == 2 * 8 + 5
        assert not set(hidden.tolist()) & set(used.tolist())
        # with fan-outs above every degree, every other triple near the seeds is visible
        near = set(seeds.tolist())
        touching = {i for i, (h, _, t) in enumerate(triples.tolist()) if h in near or t in near}
        assert touching - set(hidden.tolist()) <= set(used.tolist())


def test_self_negatives_enter_the_loss_unless_true(small_kg, tiny_bert_dir):
    """(h, r, h) and (t, r, t) are extra negatives: one step's loss is higher with them (more
    negatives in the same softmax), and a self-loop that is a true triple is never a negative."""
    from jaket.tasks.variants import VariantConfig, kg_memory, load_backbone

    triples = np.asarray(small_kg.triples, dtype=np.int64)
    backbone = load_backbone(VariantConfig("lm+g+m", encoder=tiny_bert_dir, km_heads=4))
    memory = kg_memory(backbone, small_kg, max_length=16)

    def first_loss(train, self_negatives):
        config = lp.LinkPredictionConfig(steps=1, batch_size=len(train), negatives=4, self_negatives=self_negatives)
        torch.manual_seed(0)
        model = lp.LinkScorer(backbone, "distmult", small_kg.num_relations)
        return lp.train_scorer(model, memory, lp.train_view(small_kg, train), train, config, seed=0)[0]

    assert first_loss(triples, True) > first_loss(triples, False)
    loops = np.array([[h, r, h] for h, r, _ in triples[:6]])  # every training triple a self-loop
    assert first_loss(loops, True) == pytest.approx(first_loss(loops, False))
