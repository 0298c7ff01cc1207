"""JAKET pre-training: the four self-supervised tasks, the memory schedule, checkpoints, DDP.

One optimisation step (paper, "Pre-training"; docs/pretraining.md walks through it):

1. if the schedule says so (Eq. 11), refresh the entity context memory with momentum (Eq. 12);
   the ranks split the entities and the changes are all-reduced;
2. :meth:`Pretrainer.sample_batch`: sample root entities, random-walk from them
   (``random_walks``), pick triples among the walked entities for relation prediction, draw a text
   batch, remove ~15% of its mentions (``fuse_mask`` False) for masked entity prediction, mask
   15% of its tokens, and sample the subgraph around walked entities, pair ends and fused mention
   entities with every triple joining a predicted pair hidden (``exclude_triples``);
3. :class:`PretrainingObjective` (wrapped in ``DistributedDataParallel`` under ``torchrun``) runs
   the model once, E^KM over the subgraph and Z^LM of the texts, and computes the category
   (E^KM), relation (E^KM pairs), masked token (Z^LM) and masked entity
   (q = g((Z_s + Z_o)/2) against memory rows) losses, weighted and summed;
4. AdamW step with gradient clipping; the language module's rate warms up then decays linearly,
   the rest decays linearly from its own rate.

Every random draw of step ``t`` (sampling, masking, dropout) comes from generators seeded with
``(seed, t, rank)``, so a resumed run repeats the uninterrupted one exactly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from jaket.atomic import write_json, write_text
from jaket.kg.corpus import EncodedCorpus, TextBatch, collate_texts
from jaket.kg.sampling import Subgraph, random_walks, sample_neighbors
from jaket.train import tasks
from jaket.train.checkpoint import (check_compatible, kg_signature, load_checkpoint, read_state,
                                   restore_newest, save_checkpoint)
from jaket.train.config import PretrainConfig, TaskConfig, dump_config
from jaket.train.distributed import DistInfo, all_reduce_delta, all_reduce_sum
from jaket.train.metrics import (LOSS_NAMES, TensorBoard, first_last_tenth, plot_losses,
                                 read_metrics, truncate_metrics)
from jaket.train.optim import build_optimizer, build_scheduler
from jaket.train.rundir import (StopSignals, TrainingInterrupted, output_lock, prepare_output,
                                resume_mode)

log = logging.getLogger(__name__)

#: how many batches a length-sorted window holds (``data.group_by_length``)
LENGTH_WINDOW = 32


def refresh_steps(total: int, initial: int, growth: int, every: int, maximum: int) -> list[int]:
    """Steps (before which) the memory is refreshed, following Eq. 11
    (``jaket.model.memory.refresh_interval``): the gap starts at ``initial`` and is multiplied by
    ``growth`` every ``every`` refreshes, up to ``maximum``. The initial fill happens before
    step 0 and is not listed."""
    steps, step, i = [], 0, 0
    while True:
        gap = min(maximum, initial * growth ** (i // max(1, every)))
        step += gap
        i += 1
        if step >= total:
            return steps
        steps.append(step)


def _text_stream(n: int, seed: int, start: int, count: int) -> np.ndarray:
    """Positions ``[start, start + count)`` of the endless text order: epoch after epoch, each a
    permutation of the ``n`` texts seeded by ``(seed, epoch)``."""
    out = []
    while count > 0:
        epoch, offset = divmod(start, n)
        take = min(count, n - offset)
        out.append(np.random.default_rng([seed, epoch]).permutation(n)[offset:offset + take])
        start, count = start + take, count - take
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def text_batch_indices(lengths: np.ndarray, position: int, batch_size: int, seed: int,
                       group_by_length: bool = True, rank: int = 0, world_size: int = 1) -> np.ndarray:
    """The texts of micro-step ``position`` for ``rank`` (the data position is the step itself).

    An epoch is a permutation of the ``n`` texts seeded by ``(seed, epoch)``, cut into
    ``n // (batch_size * world_size)`` global batches (the few texts left over wait for a later
    epoch's order, as with ``drop_last``). With ``group_by_length`` each run of ``LENGTH_WINDOW``
    batches of an epoch is sorted by text length and its batches are taken in a shuffled order,
    so a batch holds texts of similar length (far less padding) while every text is still drawn
    at most once per epoch. Ranks take strided shares of the global batch. A corpus smaller than
    one global batch is cycled through.
    """
    n = len(lengths)
    size = batch_size * world_size
    per_epoch = n // size
    if per_epoch == 0:
        chosen = _text_stream(n, seed, position * size, size)
    else:
        epoch, j = divmod(position, per_epoch)
        order = np.random.default_rng([seed, epoch]).permutation(n)[:per_epoch * size]
        if group_by_length:
            window, slot = divmod(j, LENGTH_WINDOW)
            first = window * LENGTH_WINDOW
            count = min(LENGTH_WINDOW, per_epoch - first)
            texts = order[first * size:(first + count) * size]
            texts = texts[np.argsort(lengths[texts], kind="stable")]
            k = int(np.random.default_rng([seed, epoch, window]).permutation(count)[slot])
            chosen = texts[k * size:(k + 1) * size]
        else:
            chosen = order[j * size:(j + 1) * size]
    return np.asarray(chosen[rank::world_size], dtype=np.int64)


@dataclass
class PretrainData:
    kg: object
    train: EncodedCorpus
    heldout: EncodedCorpus
    pad_id: int
    special_ids: list[int]
    mask_id: int
    vocab_size: int
    report: dict = field(default_factory=dict)


@dataclass
class StepBatch:
    """Everything one micro-step consumes (:meth:`Pretrainer.sample_batch`).

    Local indices point into ``subgraph.node_ids``; ``entity_candidates`` holds global entity
    indices (column 0 the truth) and ``entity_valid`` masks padding and negatives equal to it.
    """

    text: TextBatch  # token-masked texts
    mlm_labels: torch.Tensor  # (B, L) original ids at predicted positions, -100 elsewhere
    subgraph: Subgraph  # every triple joining a predicted pair hidden
    mention_node: torch.Tensor  # (M,) local node of each fused mention's entity, -1 if removed
    fuse_mask: torch.Tensor  # (M,) False = removed (masked entity prediction)
    category_node: torch.Tensor  # (c,) walked entities that have a category
    category_label: torch.Tensor  # (c,)
    relation_head: torch.Tensor  # (r,) local
    relation_tail: torch.Tensor  # (r,) local
    relation_label: torch.Tensor  # (r,)
    predicted_triples: np.ndarray  # (r,) triple indices whose relation is predicted
    hidden_triples: np.ndarray  # triples hidden from the sampler (all joining a predicted pair)
    entity_candidates: torch.Tensor  # (k, C)
    entity_valid: torch.Tensor  # (k, C) bool
    counts: dict[str, int] = field(default_factory=dict)
    #: ``tasks.description_rows``: local nodes whose E^(0) is LM1 over their description with
    #: gradients, and those descriptions tokenised (ids, mask, span start, span end); empty = off
    description_local: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    description_tokens: tuple[torch.Tensor, ...] = ()

    def to(self, device) -> "StepBatch":
        moved = {name: value.to(device) if hasattr(value, "to") and not isinstance(value, np.ndarray)
                 else value for name, value in self.__dict__.items()}
        moved["description_tokens"] = tuple(t.to(device) for t in self.description_tokens)
        return StepBatch(**moved)


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

    def forward(self, batch: StepBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor],
                                                 dict[str, torch.Tensor]]:
        model = self.model
        fresh = None
        if len(batch.description_local):  # E^(0) of some seeds with gradients (description_rows)
            fresh = (batch.description_local, model.describe(*batch.description_tokens))
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
        if w["mlm"] > 0 and bool(chosen.any()):
            logits = out.mlm_logits[chosen] if out.mlm_logits is not None else \
                model.language.mlm_logits(out.hidden[chosen])
            losses["mlm"] = F.cross_entropy(logits.float(), batch.mlm_labels[chosen])
        # masked entity prediction (L_e): q = g((Z_s + Z_o) / 2) against memory rows
        removed = ~batch.fuse_mask
        if w["entity"] > 0 and bool(removed.any()):
            text = batch.text
            z = out.hidden.float()
            b, s, o = text.mention_batch[removed], text.mention_start[removed], text.mention_end[removed]
            q = model.entity_head.query(z, b, s, o)
            rows = model.memory.entity_rows(batch.entity_candidates.reshape(-1), device=q.device)
            rows = rows.reshape(*batch.entity_candidates.shape, -1)
            loss, accuracy = tasks.candidate_loss(q, rows, batch.entity_valid)
            losses["entity"] = loss
            extra["entity_acc"] = accuracy
        # a head without examples in this batch still joins the graph with a zero term, so every
        # parameter gets a gradient on every rank (DDP without find_unused_parameters)
        total = out.hidden.sum() * 0.0
        idle = {"category": lambda: model.category_head(entity_km[:1]),
                "relation": lambda: model.relation_head(entity_km[:1], entity_km[:1]),
                "mlm": lambda: model.language.mlm_logits(out.hidden[:1, 0]),
                "entity": lambda: model.entity_head(out.hidden[:1, 0])}
        for name, head in idle.items():
            if name in losses:
                total = total + w[name] * losses[name]
            else:
                total = total + head().float().sum() * 0.0
        return total, losses, extra


def _autocast(device: torch.device, enabled: bool):
    if not enabled:
        return contextlib.nullcontext()
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ValueError("bf16=true: this GPU does not support bfloat16")
    return torch.autocast(device.type, dtype=torch.bfloat16)


class Pretrainer:
    """Holds the model, optimiser, schedule and data order; ``run()`` trains and writes outputs.

    Only rank 0 writes (``out_dir``); every rank trains on its own share of each step's data.
    """

    def __init__(self, config: PretrainConfig, model, data: PretrainData, out_dir: str | Path,
                 dist_info: DistInfo = DistInfo(), device: str | torch.device = "cpu"):
        self.config = config
        self.device = torch.device(device)
        self.model = model.to(self.device)
        model.memory.place(self.device)
        self.data = data
        self.out = Path(out_dir)
        self.info = dist_info
        self.objective = PretrainingObjective(self.model, config.tasks)
        if dist_info.active:
            from torch.nn.parallel import DistributedDataParallel

            self.engine: nn.Module = DistributedDataParallel(self.objective)
        else:
            self.engine = self.objective
        o = config.optim
        self.optimizer = build_optimizer(self.model, o.lm_lr, o.km_lr, o.weight_decay, o.betas, o.eps)
        warmup = int(round(o.warmup_fraction * config.steps))
        self.scheduler = build_scheduler(self.optimizer, config.steps, warmup)
        m = config.memory
        self.refresh_at = set(refresh_steps(config.steps, m.initial, m.growth, m.every, m.maximum))
        self.pairs = tasks.PairIndex(data.kg)
        self._lengths = np.array([len(ids) for ids in data.train.input_ids], dtype=np.int64)
        self.step = 0
        self.refresh_count = 0
        self.refresh_seconds = 0.0
        self.train_seconds = 0.0
        self.memory_filled = bool(model.memory.filled)  # True when a filled memory file was given
        self.evaluation_start: dict | None = None
        self.progress = False
        #: benchmark mode (``jaket bench pretrain``): encode every subgraph entity's description on
        #: the fly each step (what the memory avoids) instead of reading the memory rows
        self.on_the_fly_descriptions = False
        self.description_seconds = 0.0
        #: checkpoints of this run carry its id; pruning deletes no other run's (a resume adopts it)
        self.run_id = uuid.uuid4().hex
        self.saved_step: int | None = None
        self.resumed_from: Path | None = None
        self._kg_signature: dict | None = None

    # ---------------------------------------------------------------- memory
    @property
    def memory(self):
        return self.model.memory

    def refresh_memory(self) -> dict:
        """Eq. 7, 11-12 with momentum (the first fill replaces); ranks split the rows."""
        start = time.perf_counter()
        memory = self.memory
        before_e = memory.entities.detach().clone() if self.info.active else None
        before_r = memory.relations.detach().clone() if self.info.active else None
        momentum = self.config.model.memory_momentum if self.memory_filled else 0.0
        stats = memory.refresh(self.model.language, self.data.kg,
                               batch_size=self.config.memory.batch_size,
                               max_length=self.config.model.description_max_length,
                               rank=self.info.rank, world_size=self.info.world_size,
                               momentum=momentum, progress=self.progress and self.info.is_main)
        if self.info.active:
            all_reduce_delta(memory.entities, before_e, self.info)
            all_reduce_delta(memory.relations, before_r, self.info)
        memory.filled = True
        self.refresh_count += 1
        self.memory_filled = True
        seconds = time.perf_counter() - start
        self.refresh_seconds += seconds
        log.log(logging.INFO if self.info.is_main else logging.DEBUG,
                "memory refresh %d before step %d: %d entity rows%s, momentum %.2f, %.1f s",
                self.refresh_count, self.step, stats.get("entities", 0),
                f" on each of {self.info.world_size} ranks" if self.info.active else "", momentum,
                seconds)
        return stats

    # ---------------------------------------------------------------- data
    def text_indices(self, position: int) -> np.ndarray:
        """This rank's texts for micro-step ``position`` (:func:`text_batch_indices`)."""
        return text_batch_indices(self._lengths, position, self.config.text_batch_size,
                                  self.config.seed, self.config.data.group_by_length,
                                  self.info.rank, self.info.world_size)

    def special_mask(self, batch: TextBatch) -> torch.Tensor:
        """True at special tokens and padding: never masked."""
        mask = batch.attention_mask == 0
        for token in self.data.special_ids:
            mask |= batch.input_ids == token
        return mask

    def sample_batch(self, position: int) -> StepBatch:
        """All random choices of micro-step ``position`` on this rank (see the module docstring)."""
        cfg, kg = self.config, self.data.kg
        t = cfg.tasks
        rng = np.random.default_rng([cfg.seed, position, self.info.rank])
        tgen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        counts: dict[str, int] = {}
        # knowledge-module batch: roots + random walks; triples among them for relation prediction
        roots = rng.integers(0, kg.num_entities, size=t.root_entities)
        walks = random_walks(kg, roots, t.walk_length, rng)
        walked = np.unique(walks[walks >= 0])
        if t.weight_relation > 0:
            predicted = tasks.sample_relation_pairs(kg, walked, t.relation_pairs, rng)
        else:
            predicted = np.zeros(0, dtype=np.int64)
        hidden = self.pairs.triples_of_pairs(predicted)
        triples = kg.triples[predicted].astype(np.int64).reshape(-1, 3)
        # text batch: ~15% of the mentions removed (not fused), the others' entities are seeds
        text = collate_texts(self.data.train, self.text_indices(position), self.data.pad_id)
        num_mentions = len(text.mention_entity)
        if t.weight_entity > 0:
            fuse_mask = tasks.choose_masked_mentions(num_mentions, t.entity_mask_probability, tgen)
        else:
            fuse_mask = torch.ones(num_mentions, dtype=torch.bool)
        fused_entities = text.mention_entity[fuse_mask].numpy()
        seeds = np.concatenate([walked, triples[:, 0], triples[:, 2], fused_entities]).astype(np.int64)
        subgraph = sample_neighbors(kg, seeds, tuple(cfg.model.fanouts), rng,
                                    exclude_triples=hidden if len(hidden) else None)
        local = subgraph.seed_local
        n_walk, n_pair = len(walked), len(triples)
        mention_node = torch.full((num_mentions,), -1, dtype=torch.long)
        mention_node[fuse_mask] = local[n_walk + 2 * n_pair:]
        # entity category prediction targets (entities without a category are skipped, counted)
        category = torch.from_numpy(kg.entity_category[walked].astype(np.int64))
        has_category = category >= 0
        counts["category_skipped"] = int((~has_category).sum())
        if t.weight_category <= 0:
            has_category[:] = False
        # masked token prediction
        masked_ids, mlm_labels = tasks.mask_tokens(text.input_ids, self.special_mask(text),
                                                   self.data.mask_id, self.data.vocab_size,
                                                   t.mlm_probability, tgen)
        if t.weight_mlm <= 0:
            mlm_labels[:] = -100
        # masked entity prediction candidates: truth, KG neighbours, random entities
        removed = ~fuse_mask
        candidates, valid = tasks.entity_candidates(
            kg, text.mention_entity[removed].numpy(), t.entity_hard_negatives,
            t.entity_random_negatives, rng)
        description_local = torch.zeros(0, dtype=torch.long)
        description_tokens: tuple[torch.Tensor, ...] = ()
        if t.description_rows > 0:
            pool = np.unique(local[:n_walk + 2 * n_pair].numpy())
            chosen = np.sort(rng.permutation(pool)[:t.description_rows])
            tokens, _ = self.memory.description_tokens(self.model.language, kg,
                                                       cfg.model.description_max_length)
            description_tokens = tokens.batch(subgraph.node_ids[chosen].numpy())
            description_local = torch.from_numpy(chosen.astype(np.int64))
        counts.update(category=int(has_category.sum()), relation=n_pair,
                      mlm=int((mlm_labels != -100).sum()), entity=int(removed.sum()),
                      texts=len(text.input_ids), subgraph_nodes=subgraph.num_nodes,
                      subgraph_edges=subgraph.num_edges, hidden_triples=len(hidden))
        return StepBatch(
            text=TextBatch(masked_ids, text.attention_mask, text.mention_batch, text.mention_start,
                           text.mention_end, text.mention_entity),
            mlm_labels=mlm_labels, subgraph=subgraph, mention_node=mention_node, fuse_mask=fuse_mask,
            category_node=local[:n_walk][has_category], category_label=category[has_category],
            relation_head=local[n_walk:n_walk + n_pair],
            relation_tail=local[n_walk + n_pair:n_walk + 2 * n_pair],
            relation_label=torch.from_numpy(triples[:, 1].copy()),
            predicted_triples=predicted, hidden_triples=hidden,
            entity_candidates=torch.from_numpy(candidates), entity_valid=torch.from_numpy(valid),
            counts=counts, description_local=description_local, description_tokens=description_tokens)

    # ---------------------------------------------------------------- one step
    def train_step(self) -> dict[str, float]:
        """One optimisation step (``accumulation_steps`` micro-batches) at ``self.step``."""
        cfg = self.config
        if not self.memory_filled or self.step in self.refresh_at:
            self.refresh_memory()
        start = time.perf_counter()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        accum = cfg.optim.accumulation_steps
        # per task: sum of (loss x examples) and examples, so logged values are example means
        sums = {name: 0.0 for name in (*LOSS_NAMES, "entity_acc")}
        counts = {name: 0.0 for name in (*LOSS_NAMES, "entity_acc")}
        skipped = 0.0
        for micro in range(accum):
            position = self.step * accum + micro
            batch = self.sample_batch(position)
            if self.on_the_fly_descriptions:
                began = time.perf_counter()
                self.memory.refresh(self.model.language, self.data.kg,
                                    batch_size=cfg.memory.batch_size,
                                    max_length=cfg.model.description_max_length, momentum=0.0,
                                    entity_subset=batch.subgraph.node_ids.numpy())
                self.description_seconds += time.perf_counter() - began
            # dropout of this micro-step: its own seed, so resuming needs no RNG history
            torch.manual_seed(int(np.random.default_rng([cfg.seed, position, self.info.rank, 1])
                                  .integers(2**62)))
            sync = micro == accum - 1 or not self.info.active
            with contextlib.nullcontext() if sync else self.engine.no_sync():
                with _autocast(self.device, cfg.bf16):
                    total, losses, extra = self.engine(batch.to(self.device))
                (total / accum).backward()
            for name, value in losses.items():
                n = batch.counts[name]
                sums[name] += float(value.detach()) * n
                counts[name] += n
            skipped += batch.counts["category_skipped"]
            if "entity_acc" in extra:
                sums["entity_acc"] += float(extra["entity_acc"]) * batch.counts["entity"]
                counts["entity_acc"] += batch.counts["entity"]
        norm = torch.nn.utils.clip_grad_norm_(
            [p for g in self.optimizer.param_groups for p in g["params"]], cfg.optim.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.train_seconds += time.perf_counter() - start
        names = list(sums)
        packed = torch.tensor([sums[k] for k in names] + [counts[k] for k in names] + [skipped],
                              dtype=torch.float64)
        packed = all_reduce_sum(packed, self.info)
        values: dict[str, float] = {}
        for i, name in enumerate(names):
            n = float(packed[len(names) + i])
            if n > 0:
                key = name if name == "entity_acc" else f"loss_{name}"
                values[key] = float(packed[i]) / n
                if name != "entity_acc":
                    values[f"n_{name}"] = int(n)
        if packed[-1] > 0:  # walked entities without a category: no category example
            values["n_category_skipped"] = int(packed[-1])
        values["grad_norm"] = float(norm)
        values["lr_lm"] = self.optimizer.param_groups[0]["lr"]
        values["lr_km"] = self.optimizer.param_groups[2]["lr"]
        return values

    # ---------------------------------------------------------------- checkpoints
    @property
    def kg_signature(self) -> dict:
        if self._kg_signature is None:
            self._kg_signature = kg_signature(self.data.kg)
        return self._kg_signature

    def save(self) -> Path | None:
        """Checkpoint the current step (rank 0; once per step)."""
        if not self.info.is_main:
            return None
        root = self.out / "checkpoints"
        if self.saved_step == self.step:
            return root / f"step-{self.step:07d}"
        memory = {"entities": self.memory.entities, "relations": self.memory.relations}
        state = {"refresh_count": self.refresh_count, "memory_filled": self.memory_filled,
                 "data_position": {"step": self.step,
                                   "micro_steps": self.step * self.config.optim.accumulation_steps,
                                   "texts_consumed": self.step * self.config.text_batch_size
                                   * self.info.world_size * self.config.optim.accumulation_steps},
                 "refresh_seconds": self.refresh_seconds, "train_seconds": self.train_seconds,
                 "evaluation_start": self.evaluation_start,
                 "config": self.config.model_dump(mode="json"), "kg": self.kg_signature}
        path = save_checkpoint(self.out, self.step, self.model, self.optimizer, self.scheduler,
                               memory, state, keep=self.config.keep_checkpoints, run_id=self.run_id)
        self.saved_step = self.step
        log.debug("checkpoint %s", path)
        return path

    def _config_changes(self, meta: dict) -> list[str]:
        saved, now = _flatten(meta.get("config", {})), _flatten(self.config.model_dump(mode="json"))
        changed = sorted(k for k in saved.keys() | now.keys() if saved.get(k) != now.get(k))
        return [f"{k} ({saved.get(k)!r} -> {now.get(k)!r})" for k in changed]

    def _restore(self, path: Path, manifest: dict) -> None:
        """Check ``path`` against this run's KG and model, then load it (see :meth:`resume`)."""
        meta = read_state(path)
        memory_shapes = {"entities": self.memory.entities.shape,
                         "relations": self.memory.relations.shape}
        check_compatible(path, meta, self.model, self.kg_signature, memory_shapes,
                         [c for c in self._config_changes(meta) if c.startswith("model.")])
        meta, memory = load_checkpoint(path, self.model, self.optimizer, self.scheduler)
        with torch.no_grad():
            self.memory.entities.copy_(memory["entities"])
            self.memory.relations.copy_(memory["relations"])
        self.memory.filled = meta["memory_filled"]  # fields typed by read_state
        self.step = meta["step"]
        self.refresh_count = meta["refresh_count"]
        self.memory_filled = meta["memory_filled"]
        self.refresh_seconds = meta["refresh_seconds"]
        self.train_seconds = meta["train_seconds"]
        self.evaluation_start = meta["evaluation_start"]
        self.run_id = manifest["run_id"] if isinstance(manifest.get("run_id"), str) else self.run_id
        self.saved_step = self.step
        changes = self._config_changes(meta)
        if changes:
            log.warning("resuming %s with a config that differs from the checkpoint's in: %s",
                        path, ", ".join(changes))

    def resume(self) -> bool:
        """Restore the newest intact checkpoint of ``out_dir`` (a damaged newer one is skipped
        with a warning naming it); False when there is none. A checkpoint made for another KG or
        model shape raises :class:`~jaket.train.checkpoint.IncompatibleCheckpointError`."""
        found = restore_newest(self.out, self._restore)
        if found is None:
            return False
        self.resumed_from = found[0]
        log.info("resumed from %s at step %d", found[0], self.step)
        return True

    def _stop_signal(self, signals: StopSignals) -> int | None:
        """The signal that asks to stop (any rank's), else None."""
        received = signals.received or 0
        if self.info.active:
            flag = torch.tensor([received], dtype=torch.int64)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            received = int(flag)
        return received or None

    # ---------------------------------------------------------------- evaluation
    @torch.no_grad()
    def evaluate_masked_entity(self, max_texts: int) -> dict:
        """Held-out masked entity prediction: every mention removed, its entity ranked against
        every memory row (top-1 and top-10); baseline = always the most frequent entity of the
        training mentions."""
        kg, data = self.data.kg, self.data
        began = time.perf_counter()
        was_training = self.model.training
        self.model.eval()
        train_entities = np.concatenate([m[:, 2] for m in data.train.mentions if len(m)] or
                                        [np.zeros(0, dtype=np.int64)])
        most_frequent = int(np.bincount(train_entities, minlength=kg.num_entities).argmax()) \
            if len(train_entities) else 0
        memory = self.memory.entity_rows(torch.arange(kg.num_entities), device=self.device)
        correct = top10 = baseline = total = 0
        indices = np.arange(min(max_texts, len(data.heldout)))
        empty = sample_neighbors(kg, np.zeros(1, dtype=np.int64), (), np.random.default_rng(0))
        for start in range(0, len(indices), self.config.text_batch_size):
            batch = collate_texts(data.heldout, indices[start:start + self.config.text_batch_size],
                                  data.pad_id)
            m = len(batch.mention_entity)
            if m == 0:
                continue
            out = self.model(batch.to(self.device), empty.to(self.device),
                             torch.full((m,), -1, dtype=torch.long, device=self.device),
                             torch.zeros(m, dtype=torch.bool, device=self.device))
            z = out.hidden.float()
            b, s, o = batch.mention_batch, batch.mention_start, batch.mention_end
            q = self.model.entity_head.query(z, b, s, o)
            ranked = (q.float() @ memory.T).topk(min(10, kg.num_entities), dim=1).indices.cpu()
            truth = batch.mention_entity
            correct += int((ranked[:, 0] == truth).sum())
            top10 += int((ranked == truth[:, None]).any(dim=1).sum())
            baseline += int((truth == most_frequent).sum())
            total += m
        self.model.train(was_training)
        nan = float("nan")
        return {"heldout_texts": int(len(indices)), "heldout_mentions": total,
                "masked_entity_accuracy": correct / total if total else nan,
                "masked_entity_top10": top10 / total if total else nan,
                "most_frequent_baseline": baseline / total if total else nan,
                "candidates": int(kg.num_entities),
                "seconds": round(time.perf_counter() - began, 2)}

    # ---------------------------------------------------------------- the loop
    def run(self, resume: bool | str = False, progress: bool = True, overwrite: bool = False) -> dict:
        """Train to ``config.steps`` and write the outputs (rank 0 under the folder's lock).

        ``resume``: False (a fresh start; a folder holding an earlier run is refused unless
        ``overwrite``), True (continue from the newest intact checkpoint; an error when there is
        none) or ``"auto"`` (continue when there is a checkpoint, else start). SIGTERM / SIGINT end
        the run after the current step with a checkpoint (:class:`TrainingInterrupted`)."""
        with output_lock(self.out) if self.info.is_main else contextlib.nullcontext():
            return self._run(resume_mode(resume), progress, overwrite)

    def _run(self, mode: str, progress: bool, overwrite: bool) -> dict:
        cfg = self.config
        main = self.info.is_main
        self.progress = progress
        metrics_path = self.out / "metrics.jsonl"
        began_wall, began_cpu = time.perf_counter(), time.process_time()
        load_start = os.getloadavg()
        if main:
            self.out.mkdir(parents=True, exist_ok=True)
        has_checkpoint = prepare_output(self.out, mode, overwrite, write=main)
        if main:
            write_text(self.out / "config.yaml", dump_config(cfg))
            if self.data.report:
                write_json(self.out / "data_report.json", self.data.report)
        if has_checkpoint and self.resume():
            if main:
                removed = truncate_metrics(metrics_path, self.step)
                if removed:
                    log.info("metrics.jsonl: %d rows after step %d removed (they are redone)",
                             removed, self.step)
        stopped = None
        with StopSignals() as signals:
            if not self.memory_filled:
                self.refresh_memory()
            if main and self.step == 0 and cfg.eval_texts and self.evaluation_start is None:
                self.evaluation_start = self.evaluate_masked_entity(cfg.eval_texts)
                log.info("held-out masked entity prediction before training: %s", self.evaluation_start)
            board = TensorBoard(self.out / "tensorboard", cfg.tensorboard and main)
            from tqdm.auto import tqdm

            bar = tqdm(total=cfg.steps, initial=self.step, disable=not (progress and main),
                       desc="pretrain", dynamic_ncols=True)
            running: dict[str, float] = {}
            handle = open(metrics_path, "a", encoding="utf-8") if main else None
            try:
                while self.step < cfg.steps:
                    values = self.train_step()
                    row = {"step": self.step, **values}
                    for name in LOSS_NAMES:
                        if f"loss_{name}" in values:
                            old = running.get(name)
                            new = values[f"loss_{name}"]
                            running[name] = new if old is None else 0.9 * old + 0.1 * new
                    if handle is not None and (self.step % cfg.log_every == 0 or self.step == cfg.steps):
                        handle.write(json.dumps(row) + "\n")
                        handle.flush()
                        board.log(row)
                    bar.set_postfix({k: f"{v:.3f}" for k, v in running.items()}, refresh=False)
                    bar.update(1)
                    if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0 and self.step < cfg.steps:
                        self.save()
                    stopped = self._stop_signal(signals)
                    if stopped:
                        break
            finally:
                bar.close()
                if handle is not None:
                    handle.close()
                board.close()
            path = self.save()  # a signal during this save waits for it
            stopped = stopped or signals.received
        if stopped:
            raise TrainingInterrupted(stopped, self.step, path)
        summary = {"steps": self.step, "world_size": self.info.world_size,
                   "train_seconds": round(self.train_seconds, 1),
                   "refresh_seconds": round(self.refresh_seconds, 1),
                   "refresh_count": self.refresh_count}
        if main:
            rows = read_metrics(metrics_path)
            summary["losses"] = first_last_tenth(rows)
            summary["evaluation_start"] = self.evaluation_start
            summary["evaluation"] = self.evaluate_masked_entity(cfg.eval_texts) if cfg.eval_texts else None
            plot_losses(rows, self.out / "loss_curves.png")
        summary["session"] = {
            "wall_seconds": round(time.perf_counter() - began_wall, 1),
            "cpu_seconds": round(time.process_time() - began_cpu, 1),
            "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
            "load_average_start": [round(x, 2) for x in load_start],
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "resumed": self.resumed_from is not None,
            "resumed_from": self.resumed_from.name if self.resumed_from is not None else None}
        if main:
            write_json(self.out / "summary.json", summary)
        return summary


def _flatten(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# -------------------------------------------------------------------- building a run
def prepare_data(kg, corpus, tokenizer, config: PretrainConfig, report: dict | None = None) -> PretrainData:
    """Split the corpus (held-out share for the final evaluation) and tokenise both parts;
    mentions lost to truncation or alignment are counted in the report and logged."""
    heldout, train = corpus.split(config.data.heldout_fraction, seed=config.seed)
    encoded_train = train.encode(tokenizer, max_length=config.data.max_length)
    encoded_heldout = heldout.encode(tokenizer, max_length=config.data.max_length)
    _require_texts(_corpus_name(config), len(encoded_train), encoded_train.num_mentions, config,
                   f" in the training share (data.heldout_fraction={config.data.heldout_fraction}, "
                   f"texts cut at data.max_length={config.data.max_length})")
    dropped = encoded_train.dropped_mentions + encoded_heldout.dropped_mentions
    unaligned = encoded_train.unaligned_mentions + encoded_heldout.unaligned_mentions
    if dropped or unaligned:
        log.warning("%d mentions cut off by data.max_length=%d and %d covering no token are not "
                    "used", dropped, config.data.max_length, unaligned)
    report = dict(report or {})
    report["pretraining"] = {
        "train_texts": len(encoded_train), "heldout_texts": len(encoded_heldout),
        "train_mentions": encoded_train.num_mentions, "heldout_mentions": encoded_heldout.num_mentions,
        "texts_without_mentions": int(sum(1 for m in encoded_train.mentions if len(m) == 0)),
        "mentions_cut_by_max_length": int(dropped), "mentions_without_tokens": int(unaligned)}
    return PretrainData(kg=kg, train=encoded_train, heldout=encoded_heldout,
                        pad_id=int(tokenizer.pad_token_id), special_ids=list(tokenizer.all_special_ids),
                        mask_id=int(tokenizer.mask_token_id), vocab_size=int(len(tokenizer)),
                        report=report)


class PretrainDataError(ValueError):
    """The KG or corpus cannot be pre-trained on; the message names the file and what to do."""


def _corpus_name(config: PretrainConfig) -> str:
    data = config.data
    if data.corpus is not None:
        return str(data.corpus)
    return str(Path(data.path) / "corpus.jsonl") if data.source == "dir" else f"the {data.source} corpus"


def check_pretraining_data(kg, corpus, config: PretrainConfig) -> None:
    """Refuse, with the file and a remedy, a KG or corpus on which a task would silently vanish or
    the sampler fail: no entity, no triple, no text, no mention (masked entity prediction on)."""
    data = config.data
    folder = Path(data.path) if data.source == "dir" else None
    where = (lambda name: str(folder / name)) if folder else (lambda name: f"the {data.source} KG")
    if kg.num_entities == 0:
        raise PretrainDataError(f"{where('entities.jsonl')}: the KG has no entity; pre-training needs "
                                f"entities with descriptions")
    if kg.num_triples == 0:
        raise PretrainDataError(f"{where('triples.tsv')}: the KG has no triple; the knowledge module "
                                f"and relation prediction need some (head<TAB>relation<TAB>tail lines)")
    _require_texts(_corpus_name(config), len(corpus), corpus.num_mentions, config)


def _require_texts(name: str, texts: int, mentions: int, config: PretrainConfig, where: str = "") -> None:
    if texts == 0:
        raise PretrainDataError(f"{name}: no text{where}; pre-training needs texts with entity "
                                f"mentions (`jaket link` finds them in plain text)")
    if mentions == 0 and config.tasks.weight_entity > 0:
        raise PretrainDataError(
            f"{name}: no text mentions an entity{where}, so masked entity prediction has nothing to "
            f"predict; link the texts (`jaket link --kg DIR --text FILE --out CORPUS`) or switch the "
            f"task off with --set tasks.weight_entity=0")


def load_kg_and_corpus(config: PretrainConfig):
    """``(kg, corpus, report)`` named by ``config.data`` (checked by :func:`check_pretraining_data`)."""
    data = config.data
    if data.source == "toy":
        from jaket.kg.toy import toy_kg

        kg, corpus = toy_kg()
        report = {"source": "toy"}
    elif data.source == "wordnet":
        from jaket.kg.sources.wordnet import build_wordnet

        kg, corpus, report = build_wordnet(max_entities=data.max_entities, roots=data.wordnet_roots,
                                           seed=config.seed)
        log.info("WordNet subset: %d entities, %d relations, %d triples, %d categories, %d texts "
                 "(%d usage examples without a mention left out)", report["entities"],
                 report["relations"], report["triples"], report["categories"], report["texts"],
                 report["examples_without_mention"])
    else:
        from jaket.kg.io import CORPUS, load_corpus, load_kg

        kg = load_kg(data.path)
        if data.corpus is None and not (Path(data.path) / CORPUS).is_file():
            raise PretrainDataError(
                f"{Path(data.path) / CORPUS}: missing; pre-training needs a mention corpus: create it "
                f"with `jaket link --kg {data.path} --text FILE --out {Path(data.path) / CORPUS}` or "
                f"pass --corpus FILE")
        corpus = load_corpus(data.path, kg) if data.corpus is None else None
        report = {"source": "dir", "path": str(data.path)}
    if data.corpus is not None:
        from jaket.kg.io import load_corpus

        corpus = load_corpus(data.corpus, kg)
        report["corpus"] = str(data.corpus)
    check_pretraining_data(kg, corpus, config)
    report.setdefault("entities", kg.num_entities)
    report.setdefault("relations", kg.num_relations)
    report.setdefault("triples", kg.num_triples)
    report.setdefault("texts", len(corpus))
    return kg, corpus, report


def build_model(config: PretrainConfig, kg):
    """A JaketModel with its (empty) entity context memory attached."""
    from jaket.model.jaket import JaketConfig, JaketModel, check_fits_encoder, encoder_shape
    from jaket.model.memory import EntityContextMemory
    from jaket.paths import default_model_path

    m = config.model
    encoder = str(m.encoder or default_model_path())
    jcfg = JaketConfig(encoder=encoder, lm1_layers=m.lm1_layers,
                       km_layers=m.km_layers, km_heads=m.km_heads, composition=m.composition,
                       fanouts=tuple(m.fanouts), description_max_length=m.description_max_length,
                       memory_momentum=m.memory_momentum, memory_dtype=m.memory_dtype,
                       num_categories=max(1, kg.num_categories),
                       num_relations=max(1, kg.num_relations),
                       use_relation_memory=config.tasks.use_relation_memory,
                       category_names=list(kg.category_names), relation_names=list(kg.relation_names))
    check_fits_encoder(jcfg, *encoder_shape(encoder), where=f"model.encoder={encoder}", prefix="model.")
    model = JaketModel(jcfg)
    memory = EntityContextMemory(kg.num_entities, kg.num_relations, model.hidden_size,
                                 dtype=m.memory_dtype, path=m.memory_path, momentum=m.memory_momentum)
    model.attach_memory(memory, kg)
    model.use_relation_memory = config.tasks.use_relation_memory
    return model


def pretrain(config: PretrainConfig, out_dir: str | Path, resume: bool | str = False,
             progress: bool = True, model_factory: Callable | None = None,
             overwrite: bool = False, device=None) -> dict:
    """Run (or resume) pre-training as configured; rank 0 writes ``out_dir`` (the trained model
    in ``out_dir/model``, loadable with ``JaketModel.from_pretrained``) under the folder's lock.

    ``resume`` and ``overwrite`` as in :meth:`Pretrainer.run`; the folder is checked before the
    data is loaded, so a wrong flag fails at once."""
    from jaket.model.device import resolve_device
    from jaket.train.distributed import finish_distributed, init_distributed

    info, created = init_distributed()
    out_dir = Path(out_dir)
    try:
        with output_lock(out_dir) if info.is_main else contextlib.nullcontext():
            prepare_output(out_dir, resume_mode(resume), overwrite, write=False)
            torch.manual_seed(config.seed)
            np.random.seed(config.seed)
            kg, corpus, report = load_kg_and_corpus(config)
            model = (model_factory or build_model)(config, kg)
            data = prepare_data(kg, corpus, model.language.tokenizer, config, report)
            trainer = Pretrainer(config, model, data, out_dir, info, device=resolve_device(device))
            summary = trainer.run(resume=resume, progress=progress, overwrite=overwrite)
            if info.is_main:
                model.save_pretrained(out_dir / "model")
        return summary
    finally:
        finish_distributed(created)
