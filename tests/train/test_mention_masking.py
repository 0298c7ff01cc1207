"""Entity-level masking of removed mentions (``tasks.mention_token_masking``, beyond the paper):
a hidden mention's every token is the mask token and a masked-token target; 0 is the paper's task
and draws nothing, so every batch of a run without it stays the same."""

from __future__ import annotations

import torch

from jaket.train.tasks import mask_mention_tokens


def _texts():
    ids = torch.tensor([[101, 11, 12, 13, 14, 102], [101, 21, 22, 23, 102, 0]])
    batch = torch.tensor([0, 0, 1])
    return ids, batch, torch.tensor([1, 3, 1]), torch.tensor([2, 4, 2])


def test_every_token_of_a_hidden_mention_is_masked_and_predicted():
    ids, batch, start, end = _texts()
    masked, labels = ids.clone(), torch.full_like(ids, -100)
    removed = torch.tensor([True, False, True])
    hidden = mask_mention_tokens(masked, labels, ids, batch, start, end, removed, 103, 1.0)
    assert hidden == 2
    assert masked[0, 1:3].tolist() == [103, 103] and labels[0, 1:3].tolist() == [11, 12]
    assert masked[1, 1:3].tolist() == [103, 103] and labels[1, 1:3].tolist() == [21, 22]
    # the kept (fused) mention and the other tokens are untouched
    assert masked[0, 3:5].tolist() == [13, 14] and (labels[0, 3:] == -100).all()
    assert masked[1, 3].item() == 23 and labels[1, 0].item() == -100


def test_probability_zero_changes_nothing_and_draws_nothing():
    ids, batch, start, end = _texts()
    masked, labels = ids.clone(), torch.full_like(ids, -100)
    generator = torch.Generator().manual_seed(5)
    state = generator.get_state().clone()
    assert mask_mention_tokens(masked, labels, ids, batch, start, end, torch.ones(3, dtype=torch.bool),
                               103, 0.0, generator) == 0
    assert torch.equal(masked, ids) and (labels == -100).all()
    assert torch.equal(generator.get_state(), state)


def test_the_batches_hide_removed_mentions_and_only_them(make_trainer, tmp_path):
    paper = make_trainer(tmp_path / "paper", "checkpoint_every=0")
    hiding = make_trainer(tmp_path / "hiding", "checkpoint_every=0", "tasks.mention_token_masking=1.0")
    mask_id = hiding.data.mask_id
    seen = 0
    for position in range(4):
        a, b = paper.builder.sample_batch(position), hiding.builder.sample_batch(position)
        # the same draws up to the hiding: the same texts, removed mentions and KM subgraph
        assert torch.equal(a.fuse_mask, b.fuse_mask)
        assert torch.equal(a.subgraph.node_ids, b.subgraph.node_ids)
        assert b.counts["mentions_hidden"] == int((~b.fuse_mask).sum()) and "mentions_hidden" not in a.counts
        for m in range(len(b.fuse_mask)):
            row, s, o = (int(t[m]) for t in (b.text.mention_batch, b.text.mention_start, b.text.mention_end))
            span = b.text.input_ids[row, s:o + 1]
            if b.fuse_mask[m]:
                continue
            seen += 1
            assert (span == mask_id).all()
            assert (b.mlm_labels[row, s:o + 1] != -100).all()
            assert not (b.mlm_labels[row, s:o + 1] == mask_id).any()
    assert seen > 0
