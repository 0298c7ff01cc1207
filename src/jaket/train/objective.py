"""The pre-training objective: the model once over a step's batch, then the four losses
(paper, "Pre-training"; docs/pretraining.md, step 3).

E^KM over the subgraph and Z^LM of the texts give the category (E^KM), relation (E^KM pairs),
masked token (Z^LM) and masked entity (q = g((Z_s + Z_o)/2) against memory rows) losses,
weighted and summed. One ``forward`` so that the engine's DistributedDataParallel sees one call.
A batch without text (a KG-only run) runs the knowledge module alone: the category and relation
losses (the text side is frozen then: :func:`freeze_text_side`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from jaket.train import tasks
from jaket.train.batching import StepBatch
from jaket.train.config import TaskConfig


class PretrainingObjective(nn.Module):
    """The model and the four pre-training losses, one ``forward`` (so DDP sees one call).

    ``forward(batch) -> (total, losses, extra)``: ``total`` the weighted sum, ``losses`` the
    unweighted task losses present in this batch (a task without examples is absent; a weight of
    0 switches a task off), ``extra`` the masked-entity candidate accuracy.
    """

    def __init__(self, model: nn.Module, tasks_config: TaskConfig):
        super().__init__()
        self.model = model
        self.weights = {"category": tasks_config.weight_category,
                        "relation": tasks_config.weight_relation,
                        "mlm": tasks_config.weight_mlm, "entity": tasks_config.weight_entity}
        self.all_candidates = tasks_config.entity_all_candidates

    def forward(self, batch: StepBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor],
                                                 dict[str, torch.Tensor]]:
        model = self.model
        fresh = None
        if len(batch.description_local):  # E^(0) of some seeds with gradients (description_rows)
            fresh = (batch.description_local, model.describe(*batch.description_tokens))
        if batch.text is None:  # the KG tasks only: E^KM (Eq. 1-5), no language pass
            out = None
            entity_km = model.knowledge_forward(batch.subgraph, fresh_rows=fresh).float()
        else:
            out = model(batch.text, batch.subgraph, batch.mention_node, batch.fuse_mask, fresh_rows=fresh)
            entity_km = out.entity_km.float()
        losses: dict[str, torch.Tensor] = {}
        extra: dict[str, torch.Tensor] = {}
        w = self.weights
        # entity category prediction (L_c) from E^KM of the walked entities
        if w["category"] > 0 and len(batch.category_node):
            logits = model.category_head(entity_km[batch.category_node])
            losses["category"] = F.cross_entropy(logits.float(), batch.category_label)
        # relation prediction (L_r) from the E^KM of both ends (their joining edges hidden)
        if w["relation"] > 0 and len(batch.relation_label):
            logits = model.relation_head(entity_km[batch.relation_head], entity_km[batch.relation_tail])
            losses["relation"] = F.cross_entropy(logits.float(), batch.relation_label)
        # masked token prediction (L_t): only the masked positions are decoded
        chosen = batch.mlm_labels != -100
        if out is not None and w["mlm"] > 0 and bool(chosen.any()):
            logits = out.mlm_logits[chosen] if out.mlm_logits is not None else \
                model.language.mlm_logits(out.hidden[chosen])
            losses["mlm"] = F.cross_entropy(logits.float(), batch.mlm_labels[chosen])
        # masked entity prediction (L_e): q = g((Z_s + Z_o) / 2) against memory rows
        removed = ~batch.fuse_mask
        if out is not None and w["entity"] > 0 and bool(removed.any()):
            text = batch.text
            z = out.hidden.float()
            b, s, o = text.mention_batch[removed], text.mention_start[removed], text.mention_end[removed]
            q = model.entity_head.query(z, b, s, o)
            if self.all_candidates:  # every memory row a candidate (tasks.entity_all_candidates)
                rows = model.memory.entity_rows(torch.arange(model.memory.num_entities), device=q.device)
                loss, accuracy = tasks.all_entities_loss(q, rows, batch.entity_candidates[:, 0].to(q.device))
            else:
                rows = model.memory.entity_rows(batch.entity_candidates.reshape(-1), device=q.device)
                rows = rows.reshape(*batch.entity_candidates.shape, -1)
                loss, accuracy = tasks.candidate_loss(q, rows, batch.entity_valid)
            losses["entity"] = loss
            extra["entity_acc"] = accuracy
        # a head without examples in this batch still joins the graph with a zero term, so every
        # parameter gets a gradient on every rank (DDP without find_unused_parameters)
        total = (out.hidden if out is not None else entity_km).sum() * 0.0
        idle = {"category": lambda: model.category_head(entity_km[:1]),
                "relation": lambda: model.relation_head(entity_km[:1], entity_km[:1])}
        if out is not None:  # without text the text side is frozen (freeze_text_side)
            idle.update(mlm=lambda: model.language.mlm_logits(out.hidden[:1, 0]),
                        entity=lambda: model.entity_head(out.hidden[:1, 0]))
        for name, head in idle.items():
            if name in losses:
                total = total + w[name] * losses[name]
            else:
                total = total + head().float().sum() * 0.0
        return total, losses, extra


def freeze_lm1(model: nn.Module) -> int:
    """Switch off LM1's gradients (``optim.freeze_lm1``, an ablation); returns how many tensors."""
    params = list(model.language.lm1_parameters())
    for param in params:
        param.requires_grad_(False)
    return len(params)


def freeze_text_side(model: nn.Module, keep_lm1: bool) -> list[str]:
    """Switch off the gradients of what a KG-only run (no corpus) never uses: the language module
    (LM2 and the masked-token head; LM1 too unless ``keep_lm1``, i.e. ``tasks.description_rows``
    feeds E^(0) of Eq. 7 with gradients), the mention fusion (Eq. 8-9) and the entity head. The
    optimiser then leaves them as they are (no weight decay on untrained weights) and
    DistributedDataParallel needs no gradient for them. Returns the frozen modules' names."""
    keep = {id(p) for p in model.language.lm1_parameters()} if keep_lm1 else set()
    frozen = []
    for name in ("language", "fusion", "entity_head"):
        for param in getattr(model, name).parameters():
            if id(param) not in keep:
                param.requires_grad_(False)
        frozen.append(f"{name} (but LM1)" if name == "language" and keep_lm1 else name)
    return frozen
