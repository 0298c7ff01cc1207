"""Held-out masked entity prediction, the pre-training run's own measure (summary.json)."""

from __future__ import annotations

import logging
import time

import numpy as np
import torch

from jaket.kg.corpus import collate_texts
from jaket.kg.sampling import sample_neighbors
from jaket.model.jaket import JaketModel
from jaket.train.build import PretrainData

log = logging.getLogger(__name__)


@torch.no_grad()
def masked_entity_accuracy(model: JaketModel, data: PretrainData, max_texts: int, batch_size: int) -> dict:
    """Every mention of the first ``max_texts`` held-out texts removed, its entity ranked
    against every memory row (top-1 and top-10); baseline = always the most frequent entity of
    the training mentions. Without any held-out mention the three figures are ``None`` (they
    cannot be computed) and a warning says so."""
    kg = data.kg
    device = model.device
    began = time.perf_counter()
    was_training = model.training
    model.eval()
    train_entities = np.concatenate([m[:, 2] for m in data.train.mentions if len(m)] or
                                    [np.zeros(0, dtype=np.int64)])
    most_frequent = int(np.bincount(train_entities, minlength=kg.num_entities).argmax()) \
        if len(train_entities) else 0
    memory = model.memory.entity_rows(torch.arange(kg.num_entities), device=device)
    correct = top10 = baseline = total = 0
    indices = np.arange(min(max_texts, len(data.heldout)))
    empty = sample_neighbors(kg, np.zeros(1, dtype=np.int64), (), np.random.default_rng(0))
    for start in range(0, len(indices), batch_size):
        batch = collate_texts(data.heldout, indices[start:start + batch_size], data.pad_id)
        m = len(batch.mention_entity)
        if m == 0:
            continue
        out = model(batch.to(device), empty.to(device),
                    torch.full((m,), -1, dtype=torch.long, device=device),
                    torch.zeros(m, dtype=torch.bool, device=device))
        b, s, o = (t.to(device) for t in (batch.mention_batch, batch.mention_start, batch.mention_end))
        q = model.entity_head.query(out.hidden.float(), b, s, o)
        ranked = (q.float() @ memory.T).topk(min(10, kg.num_entities), dim=1).indices.cpu()
        truth = batch.mention_entity
        correct += int((ranked[:, 0] == truth).sum())
        top10 += int((ranked == truth[:, None]).any(dim=1).sum())
        baseline += int((truth == most_frequent).sum())
        total += m
    model.train(was_training)
    if not total:
        log.warning("held-out masked entity prediction: no mention in the %d held-out text(s), so its "
                    "accuracy, top-10 and most-frequent baseline could not be computed (null in "
                    "summary.json); give the run held-out linked texts (data.heldout_fraction, a corpus "
                    "with mentions) to measure it", len(indices))
    return {"heldout_texts": int(len(indices)), "heldout_mentions": total,
            "masked_entity_accuracy": correct / total if total else None,
            "masked_entity_top10": top10 / total if total else None,
            "most_frequent_baseline": baseline / total if total else None,
            "candidates": int(kg.num_entities),
            "seconds": round(time.perf_counter() - began, 2)}
