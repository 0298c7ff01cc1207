import numpy as np
import pytest
import torch

from jaket.kg.toy import toy_kg
from jaket.train import tasks
from jaket.train.config import load_config
from jaket.train.optim import build_optimizer, build_scheduler
from jaket.model.memory import refresh_steps
from jaket.train.batching import text_batch_indices


def test_mask_tokens_rates_and_specials():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 2000, (200, 100), generator=g)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    ids[:, 0], ids[:, -1] = 101, 102
    masked, labels = tasks.mask_tokens(ids, special, 103, 30000, 0.15, g)
    chosen = labels != -100
    assert not chosen[special].any()
    assert abs(chosen.float().mean().item() - 0.15 * 98 / 100) < 0.01
    assert torch.equal(labels[chosen], ids[chosen])
    as_mask = (masked == 103) & chosen
    kept = (masked == ids) & chosen
    assert abs(as_mask.sum().item() / chosen.sum().item() - 0.8) < 0.03
    assert abs(kept.sum().item() / chosen.sum().item() - 0.1) < 0.03
    assert torch.equal(masked[~chosen], ids[~chosen])


def test_masked_mentions_always_at_least_one():
    g = torch.Generator().manual_seed(1)
    assert all((~tasks.choose_masked_mentions(3, 0.15, g)).sum() >= 1 for _ in range(20))
    many = tasks.choose_masked_mentions(10000, 0.15, g)
    assert abs((~many).float().mean().item() - 0.15) < 0.02


def test_entity_candidates_hold_neighbours_and_truth_first():
    kg, _ = toy_kg()
    rng = np.random.default_rng(0)
    entities = np.arange(kg.num_entities)
    cand, valid = tasks.entity_candidates(kg, entities, hard=3, random=5, rng=rng)
    assert (cand[:, 0] == entities).all() and valid[:, 0].all()
    adj = kg.adjacency
    for e in entities:
        neighbours = set(adj.neighbors[adj.indptr[e]:adj.indptr[e + 1]].tolist())
        for c, ok in zip(cand[e, 1:4], valid[e, 1:4]):
            if ok:
                assert c in neighbours and c != e
    assert not (valid[:, 1:] & (cand[:, 1:] == entities[:, None])).any()
    q = torch.randn(4, 8)
    rows = torch.randn(4, 5, 8)
    rows[:, 0] = q * 10
    loss, acc = tasks.candidate_loss(q, rows, torch.ones(4, 5, dtype=torch.bool))
    assert acc == 1.0 and loss < 0.1


def test_relation_pairs_are_hidden_from_the_sampler():
    from jaket.kg.sampling import sample_neighbors
    kg, _ = toy_kg()
    rng = np.random.default_rng(0)
    picked = tasks.sample_relation_pairs(kg, np.arange(10), 6, rng)
    assert len(picked) == 6
    seeds = np.concatenate([kg.triples[picked, 0], kg.triples[picked, 2]])
    sub = sample_neighbors(kg, seeds, (50, 50), rng, exclude_triples=picked)
    assert not np.isin(sub.triple_id.numpy(), picked).any()


def test_optimizer_groups_and_schedules():
    model = torch.nn.Module()
    model.language = torch.nn.Linear(4, 4)
    model.knowledge = torch.nn.Linear(4, 4)
    opt = build_optimizer(model, lm_lr=1e-5, km_lr=1e-4)
    assert [g["lr"] for g in opt.param_groups] == [1e-5, 1e-5, 1e-4, 1e-4]
    assert opt.param_groups[1]["weight_decay"] == 0.0 and opt.param_groups[0]["weight_decay"] == 0.01
    sched = build_scheduler(opt, total_steps=10, warmup_steps=4)
    lm, km = [], []
    for _ in range(10):
        lm.append(opt.param_groups[0]["lr"])
        km.append(opt.param_groups[2]["lr"])
        opt.step()
        sched.step()
    assert lm.index(max(lm)) == 3 and lm[0] < lm[3] and lm[-1] < lm[3]
    assert km[0] == pytest.approx(1e-4) and all(a > b for a, b in zip(km, km[1:]))


def test_refresh_schedule_grows_and_caps():
    steps = refresh_steps(1000, initial=10, growth=2, every=3, maximum=50)
    gaps = np.diff([0] + steps)
    assert list(gaps[:7]) == [10, 10, 10, 20, 20, 20, 40] and gaps.max() == 50


def test_pair_index_finds_every_triple_joining_a_pair():
    kg, _ = toy_kg()
    pairs = tasks.PairIndex(kg)
    for t in range(kg.num_triples):
        h, _, tail = kg.triples[t]
        expected = {i for i, (a, _, b) in enumerate(kg.triples) if {a, b} == {h, tail}}
        assert set(pairs.triples_of_pairs(np.array([t])).tolist()) == expected
    assert len(pairs.triples_of_pairs(np.zeros(0, dtype=np.int64))) == 0


def test_text_batches_cover_each_epoch_once_and_split_ranks():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 40, size=1000)
    for group in (False, True):
        # 32 positions x 4 texts x 2 ranks = 256 texts: no text twice within an epoch
        seen = []
        for position in range(32):
            a = text_batch_indices(lengths, position, 4, seed=3, group_by_length=group, rank=0, world_size=2)
            b = text_batch_indices(lengths, position, 4, seed=3, group_by_length=group, rank=1, world_size=2)
            assert len(a) == len(b) == 4 and set(a).isdisjoint(b)
            seen += [*a, *b]
        assert len(set(seen)) == len(seen) == 256
    # grouping by length makes batches far more uniform than random batches
    spread = {g: np.mean([np.ptp(lengths[text_batch_indices(lengths, p, 16, 0, g)]) for p in range(32)])
              for g in (False, True)}
    assert spread[True] < spread[False] / 4


def test_config_overrides_and_errors(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("steps: 7\ntasks:\n  weight_mlm: 0.5\n")
    c = load_config(path, ["tasks.weight_mlm=0", "optim.betas=[0.8, 0.9]"], {"data.path": "123"})
    assert c.steps == 7 and c.tasks.weight_mlm == 0 and c.optim.betas == (0.8, 0.9)
    assert c.data.path == "123"  # `values` are used as given (YAML would read an int)
    with pytest.raises(ValueError, match="nosuch"):
        load_config(None, ["nosuch=1"])
    with pytest.raises(ValueError, match=r"--set steps=-1: steps:"):
        load_config(path, ["steps=-1"])
    path.write_text("steps: 7\ntasks:\n  weight_mlm: lots\n")
    with pytest.raises(ValueError, match=r"c\.yaml:3: tasks\.weight_mlm:"):
        load_config(path)
    path.write_text("steps: [\n")
    with pytest.raises(ValueError, match=r"c\.yaml:\d+: invalid YAML"):
        load_config(path)
    with pytest.raises(ValueError, match="data.source=dir needs data.path"):
        load_config(None, ["data.source=dir"])
