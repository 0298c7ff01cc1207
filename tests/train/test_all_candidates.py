"""tasks.entity_all_candidates: masked entity prediction scored against every memory row (the ranking it
is evaluated by) instead of the sampled candidates."""

import numpy as np
import torch

from jaket.train.tasks import all_entities_loss, candidate_loss


def test_the_whole_softmax_is_the_candidate_loss_with_every_entity_a_candidate():
    generator = torch.Generator().manual_seed(0)
    query, rows = torch.randn(5, 8, generator=generator), torch.randn(30, 8, generator=generator)
    truth = torch.tensor([3, 0, 29, 3, 17])
    loss, accuracy = all_entities_loss(query, rows, truth)
    # the same scores as candidates: the truth in column 0, then every other entity
    order = torch.stack([torch.cat([t[None], torch.tensor([e for e in range(30) if e != t])]) for t in truth])
    expected, expected_accuracy = candidate_loss(query, rows[order], torch.ones(order.shape, dtype=torch.bool))
    assert torch.allclose(loss, expected, atol=1e-6) and accuracy == expected_accuracy
    best = (query @ rows.T).argmax(dim=1)
    assert torch.equal(all_entities_loss(query, rows, best)[1], torch.tensor(1.0))


def test_a_pretraining_step_scores_every_entity_and_draws_the_same_batches(make_trainer, tmp_path):
    sampled = make_trainer(tmp_path / "a")
    every = make_trainer(tmp_path / "b", "tasks.entity_all_candidates=true")
    sampled.refresh_memory()
    every.refresh_memory()
    batch, same = sampled.sample_batch(0), every.sample_batch(0)
    assert torch.equal(batch.entity_candidates, same.entity_candidates)  # the batches do not change
    removed = ~same.fuse_mask
    assert removed.any()
    model = every.model
    model.eval()
    with torch.no_grad():
        _, losses, extra = every.objective(same)
        out = model(same.text, same.subgraph, same.mention_node, same.fuse_mask)
        t = same.text
        q = model.entity_head.query(out.hidden.float(), t.mention_batch[removed], t.mention_start[removed],
                                    t.mention_end[removed])
        rows = model.memory.entity_rows(torch.arange(model.memory.num_entities))
        scores = q @ rows.T
        expected = torch.nn.functional.cross_entropy(scores, same.entity_candidates[:, 0])
    assert scores.shape[1] == every.data.kg.num_entities > same.entity_candidates.shape[1] - 1
    assert torch.allclose(losses["entity"], expected, atol=1e-5)
    assert np.isfinite(float(extra["entity_acc"]))
