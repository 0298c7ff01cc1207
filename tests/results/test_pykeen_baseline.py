"""results/pykeen_baseline.py: the same split, the same candidate entities, the same filtered
ranks as jaket's link prediction, offline."""

import json

import numpy as np
import pytest
import torch

from results import pykeen_baseline as pb


def _write(path, rows):
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in rows))
    return path


def test_baseline_on_a_given_split(tmp_path):
    train = [(f"e{i}", "r0", f"e{i + 1}") for i in range(19)] + [(f"e{i}", "r1", f"e{i + 2}") for i in range(0, 18, 2)]
    valid = [("e0", "r0", "e2"), ("e3", "r1", "e5"), ("e7", "r0", "e9"), ("e10", "r1", "e12"),
             ("e25", "r0", "e1"), ("e2", "r1", "e26")]  # the last two name entities absent from training
    (tmp_path / "entities.txt").write_text("".join(f"e{i}\n" for i in range(30)))
    out = tmp_path / "baseline.json"
    assert pb.main(["--train", str(_write(tmp_path / "train.txt", train)),
                    "--eval", str(_write(tmp_path / "valid.txt", valid)), "--entities", str(tmp_path / "entities.txt"),
                    "--seconds", "0.2", "--dim", "8", "--out", str(out),
                    "--save-embeddings", str(tmp_path / "emb.npz")]) == 0
    figures = json.loads(out.read_text())
    assert figures["candidate_entities"] == 30 and figures["eval_seen_triples"] == 4
    for name in ("transe", "rotate"):
        m = figures["models"][name]
        assert m["epochs"] >= 1 and m["train_cpu_seconds"] >= 0.2
        assert m["all"]["count"] == 12 and m["seen"]["count"] == 8 and m["unseen"]["count"] == 4  # head + tail
        assert m["all"]["mrr"] * 12 == pytest.approx(m["seen"]["mrr"] * 8 + m["unseen"]["mrr"] * 4)
        # e20-e29 are in no training triple (e25, e26 only in valid): 10 untrained entities, none diverged
        assert len(m["ranks"]["tail"]) == len(m["ranks"]["head"]) == 6
        assert np.mean(1 / np.asarray(m["ranks"]["tail"] + m["ranks"]["head"])) == pytest.approx(m["all"]["mrr"])
        saved = np.load(tmp_path / f"emb-{name}.npz", allow_pickle=False)
        assert saved["entities"].shape[0] == 30 and saved["untrained"].sum() == 10
        assert list(saved["entity_labels"][:2]) == ["e0", "e1"]
        assert m["non_finite_entities"] == {"trained": 0, "untrained": 0, "untrained_total": 10}
        assert 1 / 30 <= m["all"]["mrr"] <= 1


def test_filtered_ranks_match_brute_force():
    from pykeen.models import TransE
    from pykeen.triples import TriplesFactory

    labels = np.array([[f"e{i}", f"r{i % 2}", f"e{(i * 3 + 1) % 12}"] for i in range(12)], dtype=str)
    factory = TriplesFactory.from_labeled_triples(labels)
    model = TransE(triples_factory=factory, embedding_dim=4, random_seed=0)
    triples = factory.mapped_triples
    tails, heads = pb._filtered_ranks(model, triples[:5], triples, batch_size=2)
    n = factory.num_entities
    known = {tuple(x) for x in triples.tolist()}
    with torch.no_grad():
        for i, (h, r, t) in enumerate(triples[:5].tolist()):
            cand = torch.tensor([[h, r, e] for e in range(n)])
            s = model.score_hrt(cand).squeeze(-1)
            others = [e for e in range(n) if e != t and (h, r, e) not in known]
            assert tails[i] == 1 + int((s[others] > s[t]).sum())
            cand = torch.tensor([[e, r, t] for e in range(n)])
            s = model.score_hrt(cand).squeeze(-1)
            others = [e for e in range(n) if e != h and (e, r, t) not in known]
            assert heads[i] == 1 + int((s[others] > s[h]).sum())


def test_realistic_ranks_equal_pykeen_evaluator_with_ties(tmp_path):
    """jaket's filtered ranks and PyKEEN's RankBasedEvaluator on the same TransE embeddings: the
    realistic MRRs agree, also when candidates tie with the true entity (entities 10-29 are two
    copies of 0-9), where the optimistic MRR (the old jaket rank) is higher."""
    (tmp_path / "entities.dict").write_text("".join(f"{i}\te{i}\n" for i in range(30)))
    train = [(f"e{i}", f"r{i % 2}", f"e{(i * 7 + 3) % 30}") for i in range(30)]
    valid = [(f"e{i}", f"r{i % 2}", f"e{(i * 11 + 5) % 30}") for i in range(0, 30, 3)]
    _write(tmp_path / "train.txt", train)
    _write(tmp_path / "valid.txt", valid)
    generator = torch.Generator().manual_seed(0)
    entities = torch.randn(30, 6, generator=generator)
    entities[10:20] = entities[20:30] = entities[:10]
    relations = torch.randn(2, 6, generator=generator) * 0.1
    figures = pb.time_evaluation(tmp_path, embeddings=(entities, relations))
    assert figures["eval_triples"] == 10 and figures["candidate_entities"] == 30
    pykeen, jaket = figures["pykeen"], figures["jaket"]
    assert jaket["mrr_realistic"] == pytest.approx(pykeen["mrr_realistic"], rel=1e-6)
    assert pykeen["mrr_optimistic"] > pykeen["mrr_realistic"] + 0.01


def test_evaluation_triples_keep_their_file_order():
    """Each rank must pair with its own triple's seen/unseen flag: PyKEEN's factory sorts the
    triples it maps, the baseline's ids keep the file's order (and its duplicates)."""
    rows = np.array([["e2", "r1", "e0"], ["e0", "r0", "e1"], ["e1", "r0", "e0"], ["e0", "r0", "e1"]], dtype=str)
    ids = pb._to_ids(rows, {"e0": 0, "e1": 1, "e2": 2}, {"r0": 0, "r1": 1})
    assert ids.tolist() == [[2, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 1]]


def test_unseen_rows_rank_the_untrained_entities(tmp_path):
    """Triples with an entity absent from training come first in the file (they would sort last):
    each reported rank is its own triple's, recomputed here by brute force from the saved TransE
    embeddings (L1 distance, PyKEEN's default), filtered, realistic."""
    train = [(f"e{i}", "r0", f"e{i + 1}") for i in range(19)]
    valid = [("z9", "r0", "e1"), ("e3", "r0", "z8"), ("e0", "r0", "e2"), ("e4", "r0", "e6")]
    (tmp_path / "entities.txt").write_text("".join(f"e{i}\n" for i in range(20)) + "z8\nz9\n")
    out = tmp_path / "baseline.json"
    assert pb.main(["--train", str(_write(tmp_path / "train.txt", train)),
                    "--eval", str(_write(tmp_path / "valid.txt", valid)), "--entities", str(tmp_path / "entities.txt"),
                    "--models", "transe", "--seconds", "0.2", "--dim", "8", "--out", str(out),
                    "--save-embeddings", str(tmp_path / "emb.npz")]) == 0
    m = json.loads(out.read_text())["models"]["transe"]
    saved = np.load(tmp_path / "emb-transe.npz", allow_pickle=False)
    index = {label: i for i, label in enumerate(saved["entity_labels"])}
    entities, relation = saved["entities"], saved["relations"][0]
    true = set(train) | set(valid)
    for row, (h, r, t) in enumerate(valid):
        for side, answer in (("tail", t), ("head", h)):
            def score(e):
                triple = (h, r, e) if side == "tail" else (e, r, t)
                return -np.abs(entities[index[triple[0]]] + relation - entities[index[triple[2]]]).sum()
            target = score(answer)
            others = np.asarray([score(e) for e in index if e != answer
                                 and ((h, r, e) if side == "tail" else (e, r, t)) not in true])
            expected = 1 + (others > target).sum() + (others == target).sum() / 2
            assert m["ranks"][side][row] == pytest.approx(expected, rel=1e-6)
    ranks = np.asarray([m["ranks"]["tail"], m["ranks"]["head"]]).T
    assert m["unseen"]["mrr"] == pytest.approx(np.mean(1 / ranks[:2]))


def test_rank_breakdown_by_reverse_training_triple():
    from results.rank_breakdown import breakdown

    train = [("a", "r", "b"), ("c", "s", "d")]
    evaluation = [("b", "r", "a"), ("d", "r", "c"), ("a", "s", "c")]  # only the first has its reverse in train
    out = breakdown({"tail": [1, 4, 10], "head": [1, 2, 20]}, train, evaluation)
    assert out["reverse_in_train"] == {"triples": 1, "mrr": 1.0, "hits@1": 1.0, "hits@10": 1.0}
    assert out["other"]["triples"] == 2
    assert out["other"]["mrr"] == pytest.approx((1 / 4 + 1 / 10 + 1 / 2 + 1 / 20) / 4)
    assert out["other"]["hits@10"] == pytest.approx(0.75)
