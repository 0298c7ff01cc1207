import json

import numpy as np
import pytest

from jaket.tasks.kgqa import run as kgqa
from jaket.tasks.kgqa.model import QAGraph


def test_wordnet_questions_are_correct(small_kg):
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=200)
    assert {q.hops for q in questions} == {1, 2}
    triples = np.asarray(small_kg.triples)
    forward = {}
    for h, r, t in triples.tolist():
        forward.setdefault((h, r), set()).add(t)
    for q in questions:
        assert q.text[q.topic_start:q.topic_end] == small_kg.entity_names[q.topic]
        assert q.topic not in q.answers and q.answers
        if q.hops == 1 and "a kind of?" in q.text:
            assert set(q.answers) == forward[(q.topic, 0)]
        # every answer is within the question's hop count
        cands = QAGraph(small_kg).candidates(q.topic, q.hops, 10_000)
        assert set(q.answers) <= set(cands.tolist())


def test_kg_50_drops_half_and_is_seeded():
    a = kgqa.drop_triples_mask(10_000, 0.5, seed=1)
    assert abs(a.mean() - 0.5) < 0.03
    assert np.array_equal(a, kgqa.drop_triples_mask(10_000, 0.5, seed=1))


@pytest.mark.parametrize("variant", ["lm", "lm+g+m"])
def test_run_kgqa(small_kg, tiny_bert_dir, tmp_path, variant):
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=60)
    config = kgqa.KGQAConfig(variants=(variant,), seeds=(0,), steps=3, batch_size=4, encoder=tiny_bert_dir,
                             km_heads=4)
    results = kgqa.run_kgqa(small_kg, questions, config, tmp_path)
    for setting in ("full", "50%"):
        run = results["runs"][variant][setting][0]
        assert 0.0 <= run["test"]["all"] <= 1.0 and len(run["train_loss"]) == 3
    full = results["runs"][variant]["full"][0]["test_answer_reachable"]
    half = results["runs"][variant]["50%"][0]["test_answer_reachable"]
    assert full == 1.0 and half < 1.0
    assert "KG-Full 1-hop" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "metrics.json").read_text())["task"] == "kgqa"


def test_gnn_cannot_answer_questions(small_kg):
    from jaket.tasks.variants import VariantError

    with pytest.raises(VariantError):
        kgqa.run_kgqa(small_kg, kgqa.wordnet_questions(small_kg), kgqa.KGQAConfig(variants=("gnn",)))


@pytest.mark.parametrize("variant", ["lm", "lm+g+m"])
@pytest.mark.parametrize("half", [False, True])
def test_subgraph_pass_gives_the_whole_graph_scores_and_gradients(small_kg, tiny_bert_dir, variant, half):
    """One KM pass over the batch's computation subgraph = a pass over the whole KG (to 1e-5):
    the candidate scores and every gradient, KG-Full and KG-50%."""
    import torch

    from jaket.tasks.kgqa.model import drop_triples_mask
    from jaket.model.memory import FrozenMemory
    from jaket.tasks.variants import load_backbone

    config = kgqa.KGQAConfig(variants=(variant,), encoder=tiny_bert_dir, km_heads=4)
    backbone = load_backbone(config.variant_config(variant), seed=0)
    g = torch.Generator().manual_seed(0)
    memory = FrozenMemory(torch.randn(small_kg.num_entities, backbone.hidden_size, generator=g),
                          torch.randn(small_kg.num_relations, backbone.hidden_size, generator=g))
    graph = QAGraph(small_kg, drop_triples_mask(small_kg.num_triples, 0.5, 3) if half else None)
    # topics of the first category: its hypernym tree is one component of the three
    questions = [q for q in kgqa.wordnet_questions(small_kg, seed=0, max_questions=200) if q.topic < 12][:3]
    cands = [graph.candidates(q.topic, q.hops, 2) for q in questions]
    questions, cands = zip(*[(q, c) for q, c in zip(questions, cands) if len(c)])
    seeds = np.unique(np.concatenate([*cands, [q.topic for q in questions]]))
    sub = graph.computation_subgraph(seeds, 2)
    assert len(sub.nodes) < small_kg.num_entities  # the fast path really reads less than the KG
    assert min(sub.nodes_per_hop) > 0 and min(sub.edges_per_hop) > 0  # ... and needs both hops
    assert np.array_equal(sub.seeds, seeds)
    model = kgqa.QuestionAnswerer(backbone).eval()  # no dropout: the two passes see the same net
    results = []
    for whole in (True, False):
        model.zero_grad()
        logits = kgqa.batch_logits(model, memory, graph, list(questions), list(cands), config, whole_graph=whole)
        sum((x * torch.linspace(-1, 1, len(x))).sum() for x in logits).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append(([x.detach() for x in logits], grads))
    (slow, slow_grads), (fast, fast_grads) = results
    for a, b in zip(slow, fast):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-5)
    assert slow_grads.keys() == fast_grads.keys() and any(n.startswith("knowledge.") for n in slow_grads) == (variant != "lm")
    for name in slow_grads:
        assert torch.allclose(slow_grads[name], fast_grads[name], atol=1e-5, rtol=1e-4), name


def test_candidates_are_nearest_hops_first_and_cached(small_kg):
    graph = QAGraph(small_kg)
    one = graph.candidates(0, 1, 100)
    two = graph.candidates(0, 2, 100)
    assert np.array_equal(two[: len(one)], one) and 0 not in two and len(two) > len(one)
    assert np.array_equal(graph.candidates(0, 2, 3), two[:3])
    assert np.shares_memory(graph.candidates(0, 2, 100), graph._candidates[(0, 2)])  # computed once
    triples = np.asarray(small_kg.triples)
    neighbours = set(triples[triples[:, 0] == 0, 2]) | set(triples[triples[:, 2] == 0, 0])
    assert set(one.tolist()) == neighbours - {0}


def test_model_selection_keeps_the_best_checked_state(small_kg, tiny_bert_dir):
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=60)
    config = kgqa.KGQAConfig(variants=("lm+g+m",), seeds=(0,), kg_settings=("full",), steps=4, batch_size=4,
                             encoder=tiny_bert_dir, km_heads=4, select_every=2)
    results = kgqa.run_kgqa(small_kg, questions, config)
    run = results["runs"]["lm+g+m"]["full"][0]
    steps = [s for s, _ in run["selection_curve"]]
    assert steps == [2, 4]
    best = max(run["selection_curve"], key=lambda x: x[1])
    assert run["selected_step"] == best[0]
    assert run["selection"]["all"] == pytest.approx(best[1])  # the kept state is the one that scored it


def test_sampled_subgraph_caps_in_edges_and_is_exact_when_the_cap_is_not_reached(small_kg):
    graph = QAGraph(small_kg)
    seeds = np.array([0, 12])
    exact = graph.computation_subgraph(seeds, 2)
    degree = int(np.diff(graph.adjacency.indptr).max())
    wide = graph.computation_subgraph(seeds, 2, fanout=degree, generator=np.random.default_rng(0))
    assert np.array_equal(wide.nodes, exact.nodes) and torch_equal(wide.edge_index, exact.edge_index)
    capped = graph.computation_subgraph(seeds, 2, fanout=1, generator=np.random.default_rng(0))
    targets = capped.edge_index[1].numpy()
    assert np.bincount(targets).max() == 1  # at most one in-edge per updated node
    assert capped.edges_per_hop[0] == 2 and sum(capped.edges_per_hop) < sum(exact.edges_per_hop)
    # every sampled edge is a real edge of the KG with its type
    nodes = capped.nodes
    real = {(int(u), int(v), int(t)) for v in range(small_kg.num_entities)
            for u, t in zip(graph.adjacency.neighbors[graph.adjacency.indptr[v]:graph.adjacency.indptr[v + 1]],
                            graph.adjacency.edge_type[graph.adjacency.indptr[v]:graph.adjacency.indptr[v + 1]])}
    for (s, d), t in zip(capped.edge_index.T.tolist(), capped.edge_type.tolist()):
        assert (int(nodes[s]), int(nodes[d]), t) in real


def torch_equal(a, b):
    return a.shape == b.shape and bool((a == b).all())


def test_kgqa_trains_and_ranks_under_bf16(small_kg, tiny_bert_dir, tmp_path):
    """``bf16`` (``--precision bf16``): the passes under bf16 autocast, the loss and the scores read
    back in fp32; the run completes with finite losses and Hits@1 in [0, 1]."""
    questions = kgqa.wordnet_questions(small_kg, seed=0, max_questions=40)
    config = kgqa.KGQAConfig(variants=("lm+g+m",), kg_settings=("full",), seeds=(0,), steps=2, batch_size=4,
                             encoder=tiny_bert_dir, km_heads=4, select_every=1, bf16=True)
    run = kgqa.run_kgqa(small_kg, questions, config, tmp_path)["runs"]["lm+g+m"]["full"][0]
    assert np.isfinite(run["train_loss"]).all() and 0.0 <= run["test"]["all"] <= 1.0


def _measured(result) -> list[dict]:
    """The runs' rows without their timing (seconds differ between two runs of the same cell)."""
    from jaket.tasks.results import TaskResult

    rows = TaskResult.from_metrics(json.loads(json.dumps(dict(result), default=str))).rows()
    return [{k: v for k, v in row.items() if "seconds" not in k} for row in rows]


def test_pipeline_is_the_command(metaqa_splits_dir, tiny_bert_dir, tmp_path):
    """``pipeline("kgqa", ...)`` runs the command's runner (:func:`jaket.tasks.kgqa.run.run_job`):
    the scores ``jaket finetune kgqa`` writes for the same settings, and the first run's model in
    memory answers as the folder the command saved."""
    from jaket.cli import main
    from jaket.pipelines import pipeline
    from jaket.tasks.registry import load_finetuned
    from jaket.tasks.kgqa.data import load_metaqa_task

    flags = ["--data", str(metaqa_splits_dir), "--test", "test", "--encoder", str(tiny_bert_dir),
             "--km-heads", "4", "--steps", "2", "--batch-size", "4", "--select-every", "1", "--kg-settings", "full"]
    assert main(["finetune", "kgqa", *flags, "--out", str(tmp_path / "cli")]) == 0
    result = pipeline("kgqa", evaluate=False, encoder=tiny_bert_dir, km_heads=4, steps=2, batch_size=4,
                      select_every=1, kg_settings=["full"], data={"metaqa": metaqa_splits_dir, "eval_split": "test"})
    written = json.loads((tmp_path / "cli" / "metrics.json").read_text())
    assert _measured(result) == _measured(written) and _measured(result)
    assert json.dumps(result.paired, default=str) == json.dumps(written["paired"])
    assert result.variants == ["lm+g+m"] and "saved_model" not in result  # out=None writes nothing
    data = load_metaqa_task(metaqa_splits_dir, eval_split="test")
    test = [data.questions[i] for i in data.test]
    saved = load_finetuned(tmp_path / "cli" / "model")
    rows = result.finetuned.predict(data.kg, test, hops=2, top_k=3)
    assert rows and rows == saved.predict(data.kg, test, hops=2, top_k=3)


@pytest.mark.parametrize("setting, message", [
    ("data.selection_fraction=1.5", "data.selection_fraction: must be in (0, 1), got 1.5"),
    ("data.test_fraction=0.95", "data.test_fraction: must be in (0, 1 - data.selection_fraction), got 0.95"),
    ("kg_settings=[half]", "kg_settings: unknown KG setting 'half'; choose from full, 50%"),
    ("variants=[gnn]", "variants: variant 'gnn' cannot read a question; KGQA supports lm, lm+g, lm+g+m, jaket"),
    ("data.hops=[0]", "data.hops: hop counts of at least 1, got [0]"),
])
def test_a_bad_setting_is_one_line_naming_its_key(setting, message, capsys):
    from jaket.cli import main

    assert main(["evaluate", "kgqa", "--set", setting, "--print-config"]) == 2
    assert f"error: --set {setting}: {message}" in capsys.readouterr().err


def test_the_shipped_config_lists_every_key_with_its_default():
    import dataclasses as dc
    from pathlib import Path

    from jaket.tasks.config import load_task_config, read_yaml_mapping
    from jaket.tasks.kgqa.job import KGQAJob

    path = Path(__file__).resolve().parents[2] / "configs" / "finetune-kgqa.yaml"
    assert load_task_config(KGQAJob, path) == KGQAJob()
    assert set(read_yaml_mapping(path)) == {f.name for f in dc.fields(KGQAJob)}
    assert set(read_yaml_mapping(path)["data"]) == {f.name for f in dc.fields(KGQAJob().data)}


def test_kg_made_descriptions_come_from_the_settings_own_kg(metaqa_splits_dir, tiny_bert_dir, tmp_path):
    """Issue 66: with descriptions made from the KG, KG-50%'s memory reads descriptions made from the
    50% KG (never a fact of a dropped triple), KG-Full's from the whole KB; and the runs go through."""
    from jaket.tasks.kgqa.data import load_data
    from jaket.tasks.kgqa.job import KGQAData

    kg, questions, splits, info = load_data(KGQAData(metaqa=metaqa_splits_dir))
    config = kgqa.KGQAConfig(variants=("lm+g+m",), seeds=(0,), steps=2, batch_size=4, encoder=tiny_bert_dir,
                             km_heads=4, descriptions="kg", select_every=0)
    task = kgqa.QuestionAnsweringRuns(kg, questions, config, splits=splits)
    full, half = task.described("full", 0), task.described("50%", 0)
    keep = task.graph("50%", 0).keep
    assert 0 < keep.sum() < kg.num_triples
    names = list(kg.entity_names)
    for (h, r, t), kept in zip(kg.triples.tolist(), keep):
        fact = f"{names[t]}"
        assert fact in full.entity_descriptions[h] or len(full.entity_descriptions[h].split()) >= 60
        if not kept:  # a dropped triple: its tail is said in the head's 50% description only if another kept
            others = {names[t2] for h2, _, t2 in kg.triples[keep].tolist() if h2 == h} | \
                {names[h2] for h2, _, t2 in kg.triples[keep].tolist() if t2 == h}
            if names[t] not in others:
                assert names[t] not in half.entity_descriptions[h].split(": ", 1)[-1]
    assert all(d.startswith(n + ":") or d == n for n, d in zip(names, half.entity_descriptions))
    results = kgqa.run_kgqa(kg, questions, config, tmp_path, splits=splits, data_info=info)
    assert set(results["runs"]["lm+g+m"]) == {"full", "50%"}
