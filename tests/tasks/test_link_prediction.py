import dataclasses
import json

import numpy as np
import pytest
import torch
import yaml

from jaket.tasks.link_prediction import run as lp
from jaket.tasks.link_prediction import model as lp_model
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
            assert tails[i] == expected, scorer  # random vectors: no ties
            scores = model.score(entities, rel[r], entities[t]).numpy()
            true = {hh for hh, rr, tt in triples if rr == r and tt == t and hh != h}
            expected = 1 + sum(scores[e] > scores[h] for e in range(n) if e not in true)
            assert heads[i] == expected, scorer


def test_ranks_are_realistic_a_tie_counts_half():
    """Two candidates exactly as far from the query as the true tail: the realistic rank (PyKEEN's,
    the mean of the optimistic and the pessimistic rank) puts the true tail after half of them."""
    backbone = Backbone("lm", 2, None, None, None)
    model = lp.LinkScorer(backbone, "transe", 1)
    # query h + r = e0 = (0, 0); the true tail e1 at distance 1; e0 (0) and e4 (0.5) are closer,
    # e2 and e3 are tied with e1 (distance 1), e5 is farther
    entities = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.5, 0.0], [3.0, 0.0]])
    relations = torch.zeros(1, 2)
    triple = np.array([[0, 0, 1]])
    tails, heads = lp.filtered_ranks(model, entities, relations, triple, triple)
    assert tails.tolist() == [1 + 2 + 2 / 2]  # optimistic 3, pessimistic 5
    assert heads.tolist() == [3.0]  # head query t - r = e1: e1 and e4 closer than e0, no tie
    # a filtered tie does not count: (0, 0, 2) is also true
    both = np.array([[0, 0, 1], [0, 0, 2]])
    tails, _ = lp.filtered_ranks(model, entities, relations, triple, both)
    assert tails.tolist() == [1 + 2 + 1 / 2]
    # the cosine metric ranks the same way (a tie stays a tie)
    cosine = lp.LinkScorer(backbone, "transe", 1, metric="cosine")
    same = torch.tensor([[1.0, 1.0], [1.0, 0.0], [2.0, 0.0], [-1.0, 0.0]])
    tails, _ = lp.filtered_ranks(cosine, same, torch.zeros(2, 2), np.array([[0, 0, 1]]), np.array([[0, 0, 1]]))
    assert tails.tolist() == [1 + 1 + 1 / 2]  # e0 itself closer (cos 1), e2 tied with e1, e3 farther


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
    for scorer in ("distmult", "rotate"):
        run = results["runs"]["lm+g+m"][scorer][0]
        assert 0 < run["valid"]["mrr"] <= 1 and run["valid"]["count"] == 16  # head + tail
        assert "unseen" in run["valid"]
        # seen + unseen partition the evaluation triples (head + tail ranks each)
        assert run["valid"]["seen"]["count"] + run["valid"]["unseen"]["count"] == 16
        assert run["train_cpu_seconds"] > 0
    seen_triples = results["data"]["eval_seen_triples"]["valid"]
    assert results["runs"]["lm+g+m"]["distmult"][0]["valid"]["seen"]["count"] == 2 * seen_triples
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert set(metrics["summary"]["lm+g+m"]) == {"distmult", "rotate"}
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
    assert results["runs"]["lm"]["transe"][0]["valid"]["count"] == 60


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

    monkeypatch.setattr(lp_model, "sample_neighbors", spy)  # the name train_scorer looks up
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


def _split(small_kg):
    triples = np.asarray(small_kg.triples, dtype=np.int64)
    order = np.random.default_rng(0).permutation(len(triples))
    return triples[order[:-8]], triples[order[-8:]]


def test_train_encoder_changes_lm1_lowers_the_loss_and_evaluates_filtered(small_kg, tiny_bert_dir, monkeypatch):
    """--train-encoder --objective contrastive: LM1's weights move, the contrastive loss falls, the memory is refreshed on
    schedule and the evaluation is still filtered realistic ranking over every entity."""
    from jaket.tasks import variants
    from jaket.tasks.link_prediction import model as lp_model

    train, valid = _split(small_kg)
    loaded = []
    real_load = variants.load_backbone

    def keep(*args, **kwargs):
        loaded.append(real_load(*args, **kwargs))
        return loaded[-1]

    monkeypatch.setattr(variants, "load_backbone", keep)
    calls = []
    real_filtered = lp.filtered_ranks

    def spy(model, entities, relations, triples, all_true, batch_size=256):
        calls.append((model.metric, len(entities), len(all_true)))
        return real_filtered(model, entities, relations, triples, all_true, batch_size)

    monkeypatch.setattr(lp, "filtered_ranks", spy)
    described, candidates = [], []
    real_describe, real_loss = lp_model.describe, lp_model.contrastive_loss

    def describe(language, tokens, rows):
        if len(tokens.lengths) == small_kg.num_entities:  # a step's entities (not relations)
            described.append(len(rows))
        return real_describe(language, tokens, rows)

    def loss(model, queries, cands, target, masked, margin):
        candidates.append(len(cands))
        return real_loss(model, queries, cands, target, masked, margin)

    monkeypatch.setattr(lp_model, "describe", describe)
    monkeypatch.setattr(lp_model, "contrastive_loss", loss)
    config = lp.LinkPredictionConfig(variants=("lm+g+m",), scorers=("rotate",), steps=30, batch_size=12,
                                     encoder=tiny_bert_dir, km_heads=4, fanouts=(3, 3), train_encoder=True,
                                     encoder_lr=1e-3, lr=1e-2, km_lr=1e-3, queue_batches=2, refresh_initial=10,
                                     description_max_length=16, objective="contrastive")
    results = lp.run_link_prediction(small_kg, train, {"valid": valid}, config)
    run = results["runs"]["lm+g+m"]["rotate"][0]
    losses = run["train_loss"]
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    record = run["encoder_training"]
    # first fill, refreshes before steps 10 (I_init) and 30 (10 + 20: the interval doubles) -> only
    # step 10 falls inside 30 steps, then the final refresh for the evaluation
    assert record["refresh_at_step"] == [0, 10, 30]
    fresh = variants.load_backbone(config.variant_config("lm+g+m"))
    trained = dict(loaded[0].language.named_parameters())
    moved = [name for name, p in fresh.language.named_parameters() if not torch.equal(p, trained[name])]
    lm1 = {id(p) for p in loaded[0].language.lm1_parameters()}
    assert moved and all(id(trained[name]) in lm1 for name in moved)  # LM1 trained, LM2 untouched
    assert calls == [("cosine", small_kg.num_entities, len(train) + len(valid))]
    # candidates = the step's entities + those of the 2 queued steps, for the tail and the head side
    assert len(described) == 30 and candidates[::2] == candidates[1::2]
    assert candidates[::2] == [sum(described[max(0, s - 2):s + 1]) for s in range(30)]
    assert 0 < run["valid"]["mrr"] <= 1 and run["valid"]["count"] == 16
    with pytest.raises(ValueError, match="lm\\+g\\+m and jaket only, not gnn"):
        lp.LinkPredictionConfig(variants=("gnn",), train_encoder=True)


def test_contrastive_loss_masks_true_answers_margin_and_temperature():
    """A candidate that is another true answer of the query is masked; the margin lowers the
    positive's logit; the learnable temperature scales the logits."""
    from jaket.tasks.link_prediction import model as lp_model

    known = lp_model.KnownTriples(np.array([[0, 0, 1], [0, 0, 2]]), 4, 1)
    assert known.contains(np.array([[0], [3]]), 0, np.array([[1, 2, 3]])).tolist() == [[True, True, False],
                                                                                       [False, False, False]]
    model = lp.LinkScorer(Backbone("lm", 2, None, None, None), "transe", 1, metric="cosine", temperature=0.5)
    query = torch.tensor([[1.0, 0.0]])
    candidates = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1]])
    target = torch.tensor([0])
    open_loss = lp_model.contrastive_loss(model, query, candidates, target, np.zeros((1, 3), bool), 0.0)
    masked = lp_model.contrastive_loss(model, query, candidates, target, np.array([[False, False, True]]), 0.0)
    margin = lp_model.contrastive_loss(model, query, candidates, target, np.zeros((1, 3), bool), 0.1)
    assert masked < open_loss < margin
    cos = torch.tensor([1.0, 0.0, 1.0 / np.sqrt(1.01)])
    expected = -torch.log_softmax(cos / 0.5, 0)[0]
    assert open_loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_in_batch_objective_trains_lm1_with_the_scorers_own_function(small_kg, tiny_bert_dir, monkeypatch):
    """--train-encoder's default objective: the native scorer in a softmax over the step's own
    entities (heads, tails, hard negatives; all described by LM1 in that step), true answers masked;
    the loss falls, LM1 moves, the evaluation ranks with the native metric; --frozen-warmup-steps
    runs the frozen mode first (LM1 untouched then) and counts in the run's record."""
    from jaket.tasks import variants
    from jaket.tasks.link_prediction import model as lp_model

    train, valid = _split(small_kg)
    seen = []
    real_loss = lp_model.in_batch_loss

    def spy(model, queries, candidates, target, masked):
        seen.append((len(queries), len(candidates), masked.copy()))
        return real_loss(model, queries, candidates, target, masked)

    monkeypatch.setattr(lp_model, "in_batch_loss", spy)
    described = []
    real_describe = lp_model.describe

    modes = set()

    def describe(language, tokens, rows):
        if len(tokens.lengths) == small_kg.num_entities:
            described.append(len(rows))
            modes.add(language.training)
        return real_describe(language, tokens, rows)

    monkeypatch.setattr(lp_model, "describe", describe)
    config = lp.LinkPredictionConfig(variants=("lm+g+m",), scorers=("rotate",), steps=40, batch_size=12,
                                     hard_negatives=2, encoder=tiny_bert_dir, km_heads=4, queue_batches=3,
                                     fanouts=(3, 3), train_encoder=True, encoder_lr=1e-3, lr=1e-2, km_lr=1e-3,
                                     refresh_initial=10, description_max_length=16)
    assert config.objective == "in-batch" and config.metric == "native"
    backbone = variants.load_backbone(config.variant_config("lm+g+m"))
    before = [p.detach().clone() for p in backbone.language.lm1_parameters()]
    model = lp.LinkScorer(backbone, "rotate", small_kg.num_relations, metric=config.metric)
    assert model.inverse_projection is None and model.log_inverse_temperature is None
    probed = []
    losses, record, memory = lp_model.train_with_encoder(
        model, backbone, lp.train_view(small_kg, train), train, config, seed=0,
        on_refresh=lambda step, rows: probed.append((step, rows.entities.shape)))
    assert np.mean(losses[-8:]) < np.mean(losses[:8])
    assert any(not torch.equal(a, b) for a, b in zip(before, backbone.language.lm1_parameters()))
    # the probe sees the memory before training and after each Eq. 11 refresh (steps 10 and 30)
    assert probed == [(s, (small_kg.num_entities, backbone.hidden_size)) for s in (0, 10, 30)]
    # tail and head side per step; the candidates are exactly the step's described entities (no queue)
    assert len(seen) == 80 and [c for _, c, _ in seen[::2]] == described
    assert all(q == 12 and m.shape == (12, c) for q, c, m in seen)
    assert any(m.any() for _, _, m in seen)  # graph neighbours are often true answers: masked
    assert record["final_temperature"] is None
    assert modes == {False}  # no dropout: the step's rows are computed as the memory's
    # the frozen warm-up: the frozen mode's steps first, LM1 unchanged by them
    calls = []
    real_scorer = lp.train_scorer

    def frozen(model, memory, graph, train, config, seed, progress=None):
        calls.append(config.steps)
        lm1 = [p.detach().clone() for p in backbone.language.lm1_parameters()]
        out = real_scorer(model, memory, graph, train, config, seed, progress)
        assert all(torch.equal(a, b) for a, b in zip(lm1, backbone.language.lm1_parameters()))
        return out

    monkeypatch.setattr(lp_model, "train_scorer", frozen)  # the warm-up's name for it
    warm = dataclasses.replace(config, steps=5, frozen_warmup_steps=7)
    results = lp.run_link_prediction(small_kg, train, {"valid": valid}, warm)
    run = results["runs"]["lm+g+m"]["rotate"][0]
    assert calls == [7] and len(run["encoder_training"]["frozen_warmup_losses"]) == 7
    assert len(run["train_loss"]) == 5 and 0 < run["valid"]["mrr"] <= 1
    with pytest.raises(ValueError, match="unknown objective"):
        lp.LinkPredictionConfig(train_encoder=True, objective="margin")
    with pytest.raises(ValueError, match="must be >= 0"):
        lp.LinkPredictionConfig(train_encoder=True, frozen_warmup_steps=-1)
    with pytest.raises(ValueError, match="frozen_warmup_steps: needs train_encoder"):
        lp.LinkPredictionConfig(train_encoder=True, objective="contrastive", frozen_warmup_steps=3)


def test_train_encoder_stops_at_its_cpu_budget(small_kg, tiny_bert_dir):
    """--budget-cpu-seconds: training ends after the step that spends the budget (here the first),
    and the record says how many steps ran; the memory is still refreshed for the evaluation."""
    from jaket.tasks.link_prediction import model as lp_model
    from jaket.tasks.variants import load_backbone

    train, _ = _split(small_kg)
    config = lp.LinkPredictionConfig(steps=50, batch_size=8, encoder=tiny_bert_dir, km_heads=4, fanouts=(2, 2),
                                     train_encoder=True, description_max_length=16, budget_cpu_seconds=1e-9)
    backbone = load_backbone(config.variant_config("lm+g+m"))
    model = lp.LinkScorer(backbone, "transe", small_kg.num_relations, metric=config.metric)
    losses, record, memory = lp_model.train_with_encoder(model, backbone, lp.train_view(small_kg, train),
                                                              train, config, seed=0)
    assert len(losses) == 1 and record["steps"] == 1 and record["refresh_at_step"] == [0, 1]
    assert memory.entities.shape == (small_kg.num_entities, backbone.hidden_size)
    assert record["train_cpu_seconds"] > 0 and 0 < record["refresh_share"] < 1


def test_neighbourhood_samples_only_graph_neighbours(small_kg):
    from jaket.tasks.link_prediction.model import Neighbourhood

    train, _ = _split(small_kg)
    hood = Neighbourhood(train, small_kg.num_entities)
    adjacent = {(int(h), int(t)) for h, _, t in train} | {(int(t), int(h)) for h, _, t in train}
    entities = np.unique(train[:20, 0])
    picks = hood.sample(entities, 3, np.random.default_rng(0))
    assert len(picks) == 3 * len(entities)  # every head has a neighbour
    owners = np.repeat(entities, 3)
    assert all((int(o), int(p)) in adjacent for o, p in zip(owners, picks))
    isolated = np.setdiff1d(np.arange(small_kg.num_entities), train[:, [0, 2]].ravel())
    if len(isolated):
        assert len(hood.sample(isolated[:1], 4, np.random.default_rng(0))) == 0


def test_train_encoder_with_hard_negatives_and_bf16(small_kg, tiny_bert_dir, monkeypatch):
    """--hard-negatives adds neighbours of the batch's entities to the candidates (described with
    gradients); --bf16 runs LM1 in bf16 while the rows, loss and parameters stay fp32."""
    from jaket.tasks.link_prediction import model as lp_model
    from jaket.tasks.variants import load_backbone

    train, _ = _split(small_kg)
    sizes, dtypes = {}, {}
    real_describe = lp_model.describe
    for hard, bf16 in ((0, False), (4, True)):
        sizes[hard], dtypes[hard] = [], set()

        def describe(language, tokens, rows, _hard=hard):
            if len(tokens.lengths) == small_kg.num_entities:
                sizes[_hard].append(len(rows))
                first_linear = next(m for m in language.modules() if isinstance(m, torch.nn.Linear))
                hook = first_linear.register_forward_hook(lambda _m, _i, out, _h=_hard: dtypes[_h].add(out.dtype))
                try:
                    out = real_describe(language, tokens, rows)
                finally:
                    hook.remove()
                assert out.dtype == torch.float32
                return out
            return real_describe(language, tokens, rows)

        monkeypatch.setattr(lp_model, "describe", describe)
        config = lp.LinkPredictionConfig(steps=3, batch_size=8, encoder=tiny_bert_dir, km_heads=4, fanouts=(2, 2),
                                         train_encoder=True, description_max_length=16, hard_negatives=hard,
                                         bf16=bf16, refresh_initial=0)
        backbone = load_backbone(config.variant_config("lm+g+m"))
        model = lp.LinkScorer(backbone, "transe", small_kg.num_relations, metric=config.metric)
        losses, _, memory = lp_model.train_with_encoder(model, backbone, lp.train_view(small_kg, train),
                                                             train, config, seed=0)
        assert all(np.isfinite(losses)) and memory.entities.dtype == torch.float32
        assert all(p.dtype == torch.float32 for p in backbone.language.parameters())
    # the same seed draws the same triples: hard negatives only add entities
    assert all(b > a for a, b in zip(sizes[0], sizes[4]))
    assert dtypes[0] == {torch.float32} and dtypes[4] == {torch.bfloat16}


def test_train_encoder_without_km_trains_lm1_and_a_projection(small_kg, tiny_bert_dir):
    """--variants lm --train-encoder: the bi-encoder row (LM1 trained, no KM; entities are a
    projection of their description vectors)."""
    from jaket.tasks.link_prediction import model as lp_model
    from jaket.tasks.variants import load_backbone

    train, _ = _split(small_kg)
    config = lp.LinkPredictionConfig(variants=("lm",), steps=4, batch_size=8, encoder=tiny_bert_dir,
                                     train_encoder=True, description_max_length=16, refresh_initial=0)
    backbone = load_backbone(config.variant_config("lm"), need_language=True)
    model = lp.LinkScorer(backbone, "transe", small_kg.num_relations, metric=config.metric)
    assert model.knowledge is None and model.entity_projection is not None
    before = [p.detach().clone() for p in backbone.language.lm1_parameters()]
    projection = model.entity_projection.weight.detach().clone()
    losses, _, memory = lp_model.train_with_encoder(model, backbone, lp.train_view(small_kg, train),
                                                         train, config, seed=0)
    assert len(losses) == 4 and all(np.isfinite(losses))
    assert any(not torch.equal(a, b) for a, b in zip(before, backbone.language.lm1_parameters()))
    assert not torch.equal(projection, model.entity_projection.weight)
    assert memory.entities.shape[0] == small_kg.num_entities


def _resolved(*argv: str) -> dict:
    """The settings ``jaket evaluate link-prediction ARGV`` runs with (its ``--print-config``)."""
    import contextlib
    import io

    from jaket.cli import main

    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        assert main(["evaluate", "link-prediction", "--variants", "lm+g+m", *argv, "--print-config"]) == 0
    return yaml.safe_load(shown.getvalue())


def test_train_encoder_flags_default_to_the_documented_run(tmp_path):
    """`--train-encoder` alone gives the settings of the documented WN18RR run; the frozen mode keeps
    its own defaults; a value given (flag, --set or file) wins; --budget-cpu-seconds 0 means no
    budget; --print-config shows the resolved values, and reading them back changes nothing."""
    trained = _resolved("--train-encoder")
    for key, value in lp.TRAIN_ENCODER_DEFAULTS.items():
        assert trained[key] == (list(value) if isinstance(value, tuple) else value), key
    frozen = _resolved()
    d = lp.LinkPredictionConfig()
    assert (frozen["steps"], frozen["batch_size"], frozen["scorers"], frozen["budget_cpu_seconds"]) == \
        (d.steps, d.batch_size, list(d.scorers), None)
    given = _resolved("--train-encoder", "--steps", "7", "--budget-cpu-seconds", "0", "--set", "fanouts=[3]")
    assert given["steps"] == 7 and given["budget_cpu_seconds"] == 0 and given["fanouts"] == [3] \
        and given["batch_size"] == lp.TRAIN_ENCODER_DEFAULTS["batch_size"]
    config = tmp_path / "run.yaml"
    config.write_text("train_encoder: true\nbatch_size: 12\n")
    assert _resolved("--config", str(config))["batch_size"] == 12
    assert _resolved("--config", str(config))["steps"] == lp.TRAIN_ENCODER_DEFAULTS["steps"]
    (tmp_path / "shown.yaml").write_text(yaml.safe_dump(given))
    assert _resolved("--config", str(tmp_path / "shown.yaml")) == given
    # the frozen warm-up belongs to the in-batch objective: the contrastive one starts without it
    contrastive = _resolved("--train-encoder", "--objective", "contrastive")
    assert contrastive["frozen_warmup_steps"] == 0 and lp.TRAIN_ENCODER_DEFAULTS["frozen_warmup_steps"] > 0
    job = lp.LinkPredictionJob(train_encoder=True, objective="contrastive", variants=("lm+g+m",)).resolved()
    assert job.frozen_warmup_steps == 0 and job.steps == lp.TRAIN_ENCODER_DEFAULTS["steps"]


def test_budget_zero_runs_every_step(small_kg, tiny_bert_dir):
    """``budget_cpu_seconds: 0`` is no budget (the flag's 0), as None is."""
    triples = np.asarray(small_kg.triples, dtype=np.int64)
    config = lp.LinkPredictionConfig(variants=("lm+g+m",), scorers=("rotate",), steps=3, batch_size=8,
                                     encoder=tiny_bert_dir, km_heads=4, fanouts=(2, 2), train_encoder=True,
                                     description_max_length=16, refresh_initial=0, budget_cpu_seconds=0)
    results = lp.run_link_prediction(small_kg, triples[:-5], {"valid": triples[-5:]}, config)
    assert len(results["runs"]["lm+g+m"]["rotate"][0]["train_loss"]) == 3


def test_negative_hard_negatives_are_refused_in_one_line(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "jaket", "evaluate", "link-prediction", "--train-encoder",
                           "--variants", "lm+g+m", "--hard-negatives", "-2", "--max-entities", "50", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "--hard-negatives -2: hard_negatives: must be >= 0" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_nan_score_never_ranks_first():
    """Every comparison with NaN is false, so a NaN true score used to get rank 1; it now counts
    as -inf: behind every finite candidate, and a NaN candidate never beats the true answer."""
    scores = torch.tensor([[float("nan"), 0.5, 0.2, -torch.inf],
                           [0.1, float("nan"), 0.3, 0.1]])
    ranks = lp.realistic_ranks(scores, torch.tensor([0, 0]))
    # row 0: two finite candidates ahead, a tie with the filtered -inf counts half
    # row 1: 0.3 ahead, NaN behind, a tie with the other 0.1 counts half
    assert ranks.tolist() == [3.5, 2.5]


def test_sample_entities_keeps_only_triples_among_the_sample(small_kg):
    """--sample-entities: a trial-sized part of a --data set, every kept triple renumbered into it."""
    from jaket.tasks.link_prediction.data import sample_entities

    triples = np.asarray(small_kg.triples, dtype=np.int64)
    train, valid = triples[:-6], triples[-6:]
    sub, kept_train, kept = sample_entities(small_kg, train, {"valid": valid}, 10, np.random.default_rng(0))
    assert 10 <= sub.num_entities <= 11  # each drawn triple adds up to two entities
    names = {(small_kg.entity_ids[h], small_kg.relation_ids[r], small_kg.entity_ids[t]) for h, r, t in triples}
    assert len(kept_train) >= 5  # at least the drawn triples
    for rows in (kept_train, kept["valid"]):
        assert rows.shape[1] == 3 and (len(rows) == 0 or (rows.min() >= 0 and rows[:, [0, 2]].max() < sub.num_entities))
        assert {(sub.entity_ids[h], sub.relation_ids[r], sub.entity_ids[t]) for h, r, t in rows} <= names
    inside = set(sub.entity_ids)
    expected = sum(small_kg.entity_ids[h] in inside and small_kg.entity_ids[t] in inside for h, _, t in valid)
    assert len(kept["valid"]) == expected
    with pytest.raises(ValueError, match="at least 2"):
        sample_entities(small_kg, train, {}, 1, np.random.default_rng(0))
