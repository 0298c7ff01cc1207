"""StagingRing: host-kept memory rows gathered straight into reused buffers (the GPU path pins them;
the gather and the reuse are the same on a CPU, tested here)."""

from __future__ import annotations

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
