"""Mention fusion (Eq. 8-9) and the entity context memory (Eq. 7, 11, 12)."""

import numpy as np
import pytest
import torch

from jaket.kg.corpus import encode_descriptions
from jaket.kg.toy import toy_kg
from jaket.model.fusion import MentionFusion
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import EntityContextMemory, refresh_interval


# ---------------------------------------------------------------------------------- fusion
def _fusion_inputs():
    torch.manual_seed(0)
    z = torch.randn(2, 6, 4)
    batch = torch.tensor([0, 0, 1])
    start = torch.tensor([1, 4, 2])
    end = torch.tensor([2, 4, 4])
    emb = torch.randn(3, 4)
    return z, batch, start, end, emb


def test_fusion_adds_at_every_mention_token_then_normalises():
    z, batch, start, end, emb = _fusion_inputs()
    fusion = MentionFusion(4)
    with torch.no_grad():
        fusion.norm.weight.uniform_(0.5, 1.5)
        fusion.norm.bias.normal_()
        out = fusion(z, batch, start, end, emb)
    merged = z.clone()
    for m in range(3):
        merged[batch[m], start[m]:end[m] + 1] += emb[m]  # Eq. 8
    assert torch.allclose(out, fusion.norm(merged), atol=1e-6)  # Eq. 9 at all positions


def test_removed_mentions_receive_no_kg_embedding():
    z, batch, start, end, emb = _fusion_inputs()
    fusion = MentionFusion(4, normalize="mentions")
    keep = torch.tensor([True, False, True])
    out = fusion(z, batch, start, end, emb, keep)
    untouched = torch.ones(2, 6, dtype=torch.bool)
    untouched[0, 1:3] = False
    untouched[1, 2:5] = False
    assert torch.equal(out[untouched], z[untouched])  # incl. the removed mention at (0, 4)
    expected = fusion.norm(z[0, 1] + emb[0])
    assert torch.allclose(out[0, 1], expected, atol=1e-6)


# ---------------------------------------------------------------------------------- schedule
def test_refresh_schedule_reproduces_the_papers_sequence():
    got = [refresh_interval(i) for i in range(25)]
    assert got[:9] == [10, 10, 10, 20, 20, 20, 40, 40, 40]
    assert got[9:18] == [80, 80, 80, 160, 160, 160, 320, 320, 320]
    assert got[18:] == [500] * 7  # 640 is capped at I_max
    assert refresh_interval(3, initial=5, growth=3, every=1, maximum=1000) == 135


# ---------------------------------------------------------------------------------- memory
@pytest.fixture(scope="module")
def lm(tiny_bert_dir):
    return SplitLanguageModel.from_pretrained(tiny_bert_dir).eval()


def test_memory_rows_are_eq7_of_lm1_over_descriptions(lm):
    kg, _ = toy_kg()
    memory = EntityContextMemory.from_kg(lm, kg, batch_size=7, max_length=32)
    for i in (0, 5, 17):
        ids, mask, s, o = encode_descriptions([kg.entity_descriptions[i]], [kg.entity_names[i]],
                                              lm.tokenizer, max_length=32)
        with torch.no_grad():
            z = lm.lm1(ids, mask)[0]
        assert s[0] >= 1  # the name occurs in the toy descriptions
        assert torch.allclose(memory.entity_rows([i])[0], (z[s[0]] + z[o[0]]) / 2, atol=1e-5)
    ids, mask, s, o = encode_descriptions([kg.relation_descriptions[2]], [kg.relation_names[2]],
                                          lm.tokenizer, max_length=32)
    with torch.no_grad():
        z = lm.lm1(ids, mask)[0]
    assert torch.allclose(memory.relation_rows([2])[0], (z[s[0]] + z[o[0]]) / 2, atol=1e-5)


def test_momentum_update_blends_old_and_new(lm):
    kg, _ = toy_kg()
    memory = EntityContextMemory.from_kg(lm, kg, max_length=32)
    fresh = memory.entities.clone()
    memory.entities.mul_(0).add_(1.0)  # pretend the old memory was all ones
    memory.refresh(lm, kg, max_length=32, momentum=0.8)
    assert torch.allclose(memory.entities, 0.8 * 1.0 + 0.2 * fresh, atol=1e-5)
    stats = memory.refresh(lm, kg, max_length=32)  # momentum None -> the memory's m once filled
    assert stats["momentum"] == 0.8 and memory.refreshes == 3


def test_rank_slices_cover_the_memory_exactly_once(lm):
    kg, _ = toy_kg()
    whole = EntityContextMemory.from_kg(lm, kg, max_length=32)
    parts = []
    for rank in range(3):
        m = EntityContextMemory(kg.num_entities, kg.num_relations, lm.hidden_size)
        stats = m.refresh(lm, kg, max_length=32, rank=rank, world_size=3, momentum=0.0)
        parts.append(m.entities)
        assert stats["entities"] == len(range(rank, kg.num_entities, 3))
    assert torch.allclose(sum(parts), whole.entities, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_compact_and_memory_mapped_storage(lm, tmp_path, dtype):
    kg, _ = toy_kg()
    reference = EntityContextMemory.from_kg(lm, kg, max_length=32)
    path = tmp_path / f"entities-{dtype}.npy"
    mapped = EntityContextMemory.from_kg(lm, kg, dtype=dtype, path=path, max_length=32)
    assert mapped.entities.dtype == getattr(torch, dtype)
    tol = 2e-2 * reference.entities.abs().max()
    assert torch.allclose(mapped.entity_rows(torch.arange(kg.num_entities)), reference.entities, atol=tol)
    on_disk = np.load(path, allow_pickle=False)  # a valid .npy that outlives the process
    assert on_disk.shape == (kg.num_entities, lm.hidden_size)
    reopened = EntityContextMemory(kg.num_entities, kg.num_relations, lm.hidden_size, dtype=dtype, path=path)
    assert torch.equal(reopened.entities, mapped.entities)
    with pytest.raises(ValueError, match="holds"):
        EntityContextMemory(kg.num_entities + 1, kg.num_relations, lm.hidden_size, dtype=dtype, path=path)


def test_save_and_load_round_trip(lm, tmp_path):
    kg, _ = toy_kg()
    memory = EntityContextMemory.from_kg(lm, kg, dtype="float16", max_length=32)
    memory.save(tmp_path)
    loaded = EntityContextMemory.load(tmp_path)
    assert loaded.dtype == "float16" and loaded.filled
    assert torch.equal(loaded.entities, memory.entities)
    assert torch.equal(loaded.relations, memory.relations)


def test_memory_refuses_a_kg_of_another_size(lm):
    kg, _ = toy_kg()
    memory = EntityContextMemory(kg.num_entities + 1, kg.num_relations, lm.hidden_size)
    with pytest.raises(ValueError, match="sized for"):
        memory.refresh(lm, kg)
