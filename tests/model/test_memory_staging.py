"""The memory's host side for a GPU (#39): StagingRing, host-kept rows gathered straight into reused
buffers (the GPU path pins them; the gather and the reuse are the same on a CPU, tested here), and
descriptions tokenised only when a row is asked for (a rank tokenises its share)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jaket.model.memory import EntityContextMemory, StagingRing


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_a_gather_gives_the_rows_and_reuses_its_buffer(dtype):
    table = torch.randn(50, 8, generator=torch.Generator().manual_seed(0)).to(dtype)
    ring = StagingRing(slots=2)
    first = ring.gather(table, torch.tensor([3, 1, 4, 1, 5]))
    assert torch.equal(first, table[[3, 1, 4, 1, 5]]) and first.dtype == dtype
    ring.copied()
    second = ring.gather(table, torch.tensor([9, 2]))
    assert torch.equal(second, table[[9, 2]])
    assert second.data_ptr() != first.data_ptr()  # the other slot: the first rows are still intact
    assert torch.equal(first, table[[3, 1, 4, 1, 5]])
    ring.copied()
    third = ring.gather(table, torch.tensor([7, 7, 0]))  # back to slot 0, fewer rows: same buffer
    assert third.data_ptr() == first.data_ptr() and torch.equal(third, table[[7, 7, 0]])


def test_a_buffer_grows_when_a_step_asks_for_more_rows():
    table = torch.arange(600, dtype=torch.float32).reshape(200, 3)
    ring = StagingRing(slots=1)
    small = ring.gather(table, torch.arange(4))
    ring.copied()
    big = ring.gather(table, torch.arange(150, 0, -1))
    assert torch.equal(big, table[torch.arange(150, 0, -1)])
    assert ring.buffers[0].shape[0] >= 150 and small.shape == (4, 3)
    ring.copied()
    assert ring.gather(table, torch.tensor([], dtype=torch.long)).shape == (0, 3)


def test_the_ring_waits_for_a_slots_copy_before_reusing_it():
    class Event:
        waited = 0

        def synchronize(self):
            Event.waited += 1

    table = torch.randn(10, 4)
    ring = StagingRing(slots=2)
    ring.gather(table, torch.tensor([1]))
    ring.copied(Event())
    ring.gather(table, torch.tensor([2]))
    ring.copied(Event())
    assert Event.waited == 0
    ring.gather(table, torch.tensor([3]))  # slot 0 again: its copy must have ended
    assert Event.waited == 1
    with pytest.raises(ValueError, match="at least one slot"):
        StagingRing(slots=0)


def test_rows_of_a_memory_mapped_table_gather_the_same(tmp_path):
    memory = EntityContextMemory(30, 2, 6, path=tmp_path / "rows.npy")
    memory.entities[:] = torch.randn(30, 6)
    ring = StagingRing()
    index = torch.tensor([29, 0, 13])
    assert torch.equal(ring.gather(memory.entities, index), memory.entity_rows(index))


def test_descriptions_are_tokenised_when_asked_for_and_the_same_in_any_share(tiny_bert_dir):
    """#39: a distributed refresh tokenises its rank's rows only; a row's tokens must not depend
    on which rows it was tokenised with (rank shares, any order) nor on being asked twice."""
    from transformers import AutoTokenizer

    from jaket.model.memory import DescriptionTokens

    bert_tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir)
    rng = np.random.default_rng(1)
    words = ["sun", "star", "the", "centre", "of", "a", "solar", "system", "dog", "canis", "genus"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 12)))) for _ in range(97)]
    names = [str(rng.choice(words)) for _ in texts]
    whole = DescriptionTokens(texts, names, bert_tokenizer, max_length=10, chunk=16)
    whole.ensure()
    assert whole.done.all()
    for world in (2, 3):
        for rank in range(world):
            share = DescriptionTokens(texts, names, bert_tokenizer, max_length=10, chunk=7)
            rows = np.arange(len(texts))[rank::world]
            ids, mask, start, end = share.batch(rows[::-1])
            assert share.done.sum() == len(rows)  # nothing beyond the share
            expected = whole.batch(rows[::-1])
            for got, want in zip((ids, mask, start, end), expected):
                assert torch.equal(got, want)
            share.batch(rows)
            assert share.done.sum() == len(rows)  # asked again: not tokenised again
