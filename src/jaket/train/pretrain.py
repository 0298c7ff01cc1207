"""JAKET pre-training: the four self-supervised tasks, the memory schedule, checkpoints, DDP.

One optimisation step (paper, "Pre-training"):

1. if the schedule says so, refresh the entity context memory (Eq. 7, 11-12) with momentum; the
   ranks split the entities and the changes are all-reduced;
2. sample root entities, random-walk from them (``random_walks``), pick triples among the walked
   entities for relation prediction, and draw a text batch; 15% of its mentions are removed
   (``fuse_mask`` False) for masked entity prediction, the others' entities join the seeds;
3. sample the subgraph around the seeds (``sample_neighbors``) with the predicted triples hidden;
4. run the model once: E^KM over the subgraph and Z^LM of the (token-masked) texts, and compute
   category (E^KM), relation (E^KM pairs), masked token (Z^LM) and masked entity
   (q = g((Z_s + Z_o)/2) against memory rows) losses, weighted and summed.

Every random draw of step ``t`` comes from generators seeded with ``(seed, t, rank)``, so a resumed
run repeats the uninterrupted one exactly; the global torch RNG (dropout) is checkpointed.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from jaket.kg.corpus import EncodedCorpus, TextBatch, collate_texts
from jaket.kg.sampling import random_walks, sample_neighbors
from jaket.train import tasks
from jaket.train.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from jaket.train.config import PretrainConfig
from jaket.train.distributed import (DistInfo, all_reduce_delta, all_reduce_mean,
                                     average_gradients)
from jaket.train.metrics import (LOSS_NAMES, TensorBoard, first_last_tenth, plot_losses,
                                 read_metrics, truncate_metrics)
from jaket.train.optim import build_optimizer, build_scheduler

log = logging.getLogger(__name__)


def refresh_steps(total: int, initial: int, growth: int, every: int, maximum: int) -> list[int]:
    """Steps (before which) the memory is refreshed, following ``memory.refresh_interval``:
    the gap starts at ``initial`` and is multiplied by ``growth`` every ``every`` refreshes, up to
    ``maximum`` (the initial fill happens before step 0 and is not listed)."""
    steps, step, i = [], 0, 0
    while True:
        gap = min(maximum, initial * growth ** (i // max(1, every)))
        step += gap
        i += 1
        if step >= total:
            return steps
        steps.append(step)


@dataclass
class PretrainData:
    kg: object
    train: EncodedCorpus
    heldout: EncodedCorpus
    pad_id: int
    special_ids: list[int]
    mask_id: int
    vocab_size: int


@dataclass
class StepOutput:
    losses: dict[str, float]
    extra: dict[str, float] = field(default_factory=dict)


def _head(model, *names):
    for name in names:
        head = getattr(model, name, None)
        if head is not None:
            return head
    raise AttributeError(f"model has none of {names}")


class Pretrainer:
    """Holds the model, optimiser, schedule and data order; ``run()`` trains and writes outputs."""

    def __init__(self, config: PretrainConfig, model, data: PretrainData, out_dir: str | Path,
                 dist_info: DistInfo = DistInfo(), device: str | torch.device = "cpu"):
        self.config = config
        self.model = model.to(device)
        self.data = data
        self.out = Path(out_dir)
        self.info = dist_info
        self.device = torch.device(device)
        o = config.optim
        self.optimizer = build_optimizer(self.model, o.lm_lr, o.km_lr, o.weight_decay, o.betas, o.eps)
        warmup = int(round(o.warmup_fraction * config.steps))
        self.scheduler = build_scheduler(self.optimizer, config.steps, warmup)
        m = config.memory
        self.refresh_at = set(refresh_steps(config.steps, m.initial, m.growth, m.every, m.maximum))
        self.step = 0
        self.refresh_count = 0
        self.refresh_seconds = 0.0
        self.train_seconds = 0.0
        self.memory_filled = False
        self.stop_at: int | None = None  # a hook for tests: stop (as if killed) after this step
        #: benchmark mode: encode every subgraph entity's description on the fly each step
        #: (what the memory avoids) instead of reading the memory rows
        self.on_the_fly_descriptions = False
        self.description_seconds = 0.0

    # ---------------------------------------------------------------- memory
    @property
    def memory(self):
        return self.model.memory

    def refresh_memory(self) -> dict:
        """Eq. 11-12 with momentum (the first fill replaces); ranks split the work."""
        start = time.perf_counter()
        memory = self.memory
        before_e = memory.entities.detach().clone()
        before_r = memory.relations.detach().clone()
        language = self.model.language
        was_training = language.training
        language.eval()
        stats = memory.refresh(language, self.data.kg, batch_size=self.config.memory.batch_size,
                               max_length=self.config.model.description_max_length,
                               rank=self.info.rank, world_size=self.info.world_size,
                               momentum=self.config.model.memory_momentum if self.memory_filled
                               else 0.0)
        language.train(was_training)
        all_reduce_delta(memory.entities, before_e, self.info)
        all_reduce_delta(memory.relations, before_r, self.info)
        self.refresh_count += 1
        self.memory_filled = True
        self.refresh_seconds += time.perf_counter() - start
        return stats if isinstance(stats, dict) else {}

    # ---------------------------------------------------------------- data
    def text_indices(self, step: int) -> np.ndarray:
        """This rank's texts for ``step``: an epoch-wise permutation seeded by (seed, epoch); the
        global batch is cut into ``world_size`` strided shares. The data position is ``step``."""
        n = len(self.data.train)
        global_batch = self.config.text_batch_size * self.info.world_size
        start = step * global_batch
        epoch, offset = divmod(start, n)
        picks = []
        while len(picks) < global_batch:
            order = np.random.default_rng([self.config.seed, epoch]).permutation(n)
            take = order[offset:offset + global_batch - len(picks)]
            picks.extend(take.tolist())
            epoch, offset = epoch + 1, 0
        return np.asarray(picks[self.info.rank::self.info.world_size], dtype=np.int64)

    def special_mask(self, input_ids: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros_like(input_ids, dtype=torch.bool)
        for token in self.data.special_ids:
            mask |= input_ids == token
        return mask

    # ---------------------------------------------------------------- one step
    def compute_losses(self, step: int) -> tuple[torch.Tensor, dict[str, float]]:
        cfg, kg, model = self.config, self.data.kg, self.model
        rng = np.random.default_rng([cfg.seed, step, self.info.rank])
        tgen = torch.Generator().manual_seed(int(rng.integers(2**62)))
        # knowledge-module batch: roots + random walks, triples to predict among them
        roots = rng.integers(0, kg.num_entities, size=cfg.tasks.root_entities)
        walks = random_walks(kg, roots, cfg.tasks.walk_length, rng)
        walked = np.unique(walks[walks >= 0])
        predicted = tasks.sample_relation_pairs(kg, walked, cfg.tasks.relation_pairs, rng) \
            if cfg.tasks.weight_relation > 0 else np.zeros(0, dtype=np.int64)
        triples = kg.triples[predicted].astype(np.int64)
        # text batch: remove ~15% of the mentions, the rest are fused
        batch = collate_texts(self.data.train, self.text_indices(step), self.data.pad_id)
        fuse_mask = tasks.choose_masked_mentions(len(batch.mention_entity),
                                                 cfg.tasks.entity_mask_probability, tgen)
        if cfg.tasks.weight_entity <= 0:
            fuse_mask[:] = True
        fused_entities = batch.mention_entity[fuse_mask].numpy()
        seeds = np.concatenate([walked, triples[:, 0], triples[:, 2], fused_entities]).astype(np.int64)
        subgraph = sample_neighbors(kg, seeds, tuple(cfg.model.fanouts), rng,
                                    exclude_triples=predicted if len(predicted) else None)
        if self.on_the_fly_descriptions:
            began = time.perf_counter()
            self.memory.refresh(self.model.language, kg, batch_size=self.config.memory.batch_size,
                                max_length=cfg.model.description_max_length, momentum=0.0,
                                entity_subset=subgraph.node_ids.numpy())
            self.description_seconds += time.perf_counter() - began
        local = subgraph.seed_local
        n_walk, n_pair = len(walked), len(triples)
        walk_local = local[:n_walk]
        head_local = local[n_walk:n_walk + n_pair]
        tail_local = local[n_walk + n_pair:n_walk + 2 * n_pair]
        mention_node = torch.zeros(len(fuse_mask), dtype=torch.long)
        mention_node[fuse_mask] = local[n_walk + 2 * n_pair:]
        # masked token prediction
        masked_ids, mlm_labels = tasks.mask_tokens(
            batch.input_ids, self.special_mask(batch.input_ids), self.data.mask_id,
            self.data.vocab_size, cfg.tasks.mlm_probability, tgen)
        text = TextBatch(masked_ids, batch.attention_mask, batch.mention_batch, batch.mention_start,
                         batch.mention_end, batch.mention_entity).to(self.device)
        subgraph = subgraph.to(self.device)
        autocast = torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=cfg.bf16)
        with autocast:
            out = model(text, subgraph, mention_node.to(self.device), fuse_mask.to(self.device))
        losses: dict[str, torch.Tensor] = {}
        extra: dict[str, float] = {}
        entity_km = out.entity_km.float()
        # entity category prediction from E^KM of the walked entities
        if cfg.tasks.weight_category > 0:
            category = torch.from_numpy(kg.entity_category[walked].astype(np.int64))
            keep = category >= 0
            if keep.any():
                logits = _head(model, "category_head")(entity_km[walk_local[keep].to(self.device)])
                losses["category"] = F.cross_entropy(logits.float(), category[keep].to(self.device))
        # relation prediction on entity pairs whose own edges were hidden
        if cfg.tasks.weight_relation > 0 and n_pair:
            head = _head(model, "relation_head")
            logits = head(entity_km[head_local.to(self.device)], entity_km[tail_local.to(self.device)])
            labels = torch.from_numpy(triples[:, 1]).to(self.device)
            losses["relation"] = F.cross_entropy(logits.float(), labels)
        # masked token prediction
        if cfg.tasks.weight_mlm > 0 and (mlm_labels != -100).any():
            chosen = (mlm_labels != -100).to(self.device)
            if getattr(out, "mlm_logits", None) is not None:
                logits = out.mlm_logits[chosen]
            else:  # decode only the masked positions (the vocabulary projection dominates a step)
                logits = model.language.mlm_logits(out.hidden[chosen])
            losses["mlm"] = F.cross_entropy(logits.float(), mlm_labels.to(self.device)[chosen])
        # masked entity prediction: q = g((Z_s + Z_o) / 2) against memory rows
        removed = ~fuse_mask
        if cfg.tasks.weight_entity > 0 and removed.any():
            z = out.hidden.float()
            b = batch.mention_batch[removed].to(self.device)
            s = batch.mention_start[removed].to(self.device)
            o = batch.mention_end[removed].to(self.device)
            q = _head(model, "entity_head")((z[b, s] + z[b, o]) / 2)
            truth = batch.mention_entity[removed].numpy()
            candidates, valid = tasks.entity_candidates(kg, truth, cfg.tasks.entity_hard_negatives,
                                                        cfg.tasks.entity_random_negatives, rng)
            rows = self.memory.entity_rows(torch.from_numpy(candidates.reshape(-1)))
            rows = rows.to(self.device).float().reshape(*candidates.shape, -1)
            loss, accuracy = tasks.candidate_loss(q, rows, torch.from_numpy(valid).to(self.device))
            losses["entity"] = loss
            extra["entity_acc"] = float(accuracy)
        weights = {"category": cfg.tasks.weight_category, "relation": cfg.tasks.weight_relation,
                   "mlm": cfg.tasks.weight_mlm, "entity": cfg.tasks.weight_entity}
        total = sum(weights[k] * v for k, v in losses.items())
        if not torch.is_tensor(total):
            total = torch.zeros((), requires_grad=True)
        values = {f"loss_{k}": float(v.detach()) for k, v in losses.items()}
        values.update(extra)
        return total, values

    def train_step(self) -> dict[str, float]:
        """One optimisation step (``accumulation_steps`` micro-batches) at ``self.step``."""
        cfg = self.config
        if not self.memory_filled or self.step in self.refresh_at:
            self.refresh_memory()
        start = time.perf_counter()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        accum = cfg.optim.accumulation_steps
        sums: dict[str, float] = {}
        for micro in range(accum):
            total, values = self.compute_losses(self.step * accum + micro)
            (total / accum).backward()
            for k, v in values.items():
                sums[k] = sums.get(k, 0.0) + v / accum
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        average_gradients(params, self.info)
        norm = torch.nn.utils.clip_grad_norm_(params, cfg.optim.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.train_seconds += time.perf_counter() - start
        keys = sorted(sums)
        if self.info.active:
            reduced = all_reduce_mean(torch.tensor([sums[k] for k in keys], dtype=torch.float64),
                                      self.info)
            sums = dict(zip(keys, reduced.tolist()))
        sums["grad_norm"] = float(norm)
        sums["lr_lm"] = self.optimizer.param_groups[0]["lr"]
        sums["lr_km"] = self.optimizer.param_groups[2]["lr"]
        return sums

    # ---------------------------------------------------------------- checkpoints
    def save(self) -> Path | None:
        if not self.info.is_main:
            return None
        memory = {"entities": self.memory.entities, "relations": self.memory.relations}
        state = {"refresh_count": self.refresh_count, "memory_filled": self.memory_filled,
                 "data_position": {"step": self.step,
                                   "texts_consumed": self.step * self.config.text_batch_size
                                   * self.info.world_size * self.config.optim.accumulation_steps},
                 "refresh_seconds": self.refresh_seconds, "train_seconds": self.train_seconds,
                 "config": self.config.model_dump(mode="json")}
        return save_checkpoint(self.out, self.step, self.model, self.optimizer, self.scheduler,
                               memory, state)

    def resume(self, path: str | Path | None = None) -> bool:
        path = Path(path) if path else latest_checkpoint(self.out)
        if path is None:
            return False
        meta, memory = load_checkpoint(path, self.model, self.optimizer, self.scheduler)
        with torch.no_grad():
            self.memory.entities.copy_(memory["entities"])
            self.memory.relations.copy_(memory["relations"])
        self.step = meta["step"]
        self.refresh_count = meta["refresh_count"]
        self.memory_filled = meta["memory_filled"]
        self.refresh_seconds = meta.get("refresh_seconds", 0.0)
        self.train_seconds = meta.get("train_seconds", 0.0)
        log.info("resumed from %s at step %d", path, self.step)
        return True

    # ---------------------------------------------------------------- evaluation
    @torch.no_grad()
    def evaluate_masked_entity(self, max_texts: int) -> dict:
        """Held-out masked entity prediction: every mention removed, its entity ranked against
        every memory row; baseline = always the most frequent entity of the training mentions."""
        kg, data = self.data.kg, self.data
        self.model.eval()
        train_entities = np.concatenate([m[:, 2] for m in data.train.mentions if len(m)] or
                                        [np.zeros(0, dtype=np.int64)])
        most_frequent = int(np.bincount(train_entities, minlength=kg.num_entities).argmax()) \
            if len(train_entities) else 0
        memory = self.memory.entity_rows(torch.arange(kg.num_entities)).float().to(self.device)
        correct = baseline = total = 0
        indices = np.arange(min(max_texts, len(data.heldout)))
        for start in range(0, len(indices), self.config.text_batch_size):
            batch = collate_texts(data.heldout, indices[start:start + self.config.text_batch_size],
                                  data.pad_id)
            m = len(batch.mention_entity)
            if m == 0:
                continue
            fuse_mask = torch.zeros(m, dtype=torch.bool)
            subgraph = sample_neighbors(kg, np.zeros(1, dtype=np.int64), (1,),
                                        np.random.default_rng(0))
            out = self.model(batch.to(self.device), subgraph.to(self.device),
                             torch.zeros(m, dtype=torch.long, device=self.device),
                             fuse_mask.to(self.device))
            z = out.hidden.float()
            q = _head(self.model, "entity_head")(
                (z[batch.mention_batch, batch.mention_start] + z[batch.mention_batch, batch.mention_end]) / 2)
            predicted = (q.float() @ memory.T).argmax(dim=1).cpu()
            truth = batch.mention_entity
            correct += int((predicted == truth).sum())
            baseline += int((truth == most_frequent).sum())
            total += m
        self.model.train()
        return {"heldout_mentions": total,
                "masked_entity_accuracy": correct / total if total else float("nan"),
                "most_frequent_baseline": baseline / total if total else float("nan"),
                "candidates": int(kg.num_entities)}

    # ---------------------------------------------------------------- the loop
    def run(self, resume: bool = False, progress: bool = True) -> dict:
        cfg = self.config
        main = self.info.is_main
        metrics_path = self.out / "metrics.jsonl"
        if main:
            self.out.mkdir(parents=True, exist_ok=True)
        if resume and self.resume():
            if main:
                truncate_metrics(metrics_path, self.step)
        elif main and metrics_path.exists():
            metrics_path.unlink()
        board = TensorBoard(self.out / "tensorboard", cfg.tensorboard and main)
        from tqdm.auto import tqdm
        bar = tqdm(total=cfg.steps, initial=self.step, disable=not (progress and main),
                   desc="pretrain", dynamic_ncols=True)
        running: dict[str, float] = {}
        start = time.perf_counter()
        handle = open(metrics_path, "a", encoding="utf-8") if main else None
        try:
            while self.step < cfg.steps:
                values = self.train_step()
                row = {"step": self.step, **values}
                for k in LOSS_NAMES:
                    if f"loss_{k}" in values:
                        old = running.get(k)
                        running[k] = values[f"loss_{k}"] if old is None else 0.9 * old + 0.1 * values[f"loss_{k}"]
                if handle is not None:
                    handle.write(json.dumps(row) + "\n")
                    handle.flush()
                    board.log(row)
                bar.set_postfix({k: f"{v:.3f}" for k, v in running.items()}, refresh=False)
                bar.update(1)
                if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0 and self.step < cfg.steps:
                    self.save()
                if self.stop_at is not None and self.step >= self.stop_at:
                    return {"stopped_at": self.step}
        finally:
            bar.close()
            if handle is not None:
                handle.close()
            board.close()
        elapsed = time.perf_counter() - start
        self.save()
        summary = {"steps": self.step, "wall_seconds_this_session": elapsed,
                   "train_seconds": self.train_seconds, "refresh_seconds": self.refresh_seconds,
                   "refresh_count": self.refresh_count}
        if main:
            rows = read_metrics(metrics_path)
            summary["losses"] = first_last_tenth(rows)
            summary["evaluation"] = self.evaluate_masked_entity(cfg.eval_texts)
            plot_losses(rows, self.out / "loss_curves.png")
            tmp = self.out / ".summary.json.tmp"
            tmp.write_text(json.dumps(summary, indent=2), encoding="utf-8")
            tmp.replace(self.out / "summary.json")
        return summary


# -------------------------------------------------------------------- building a run
def prepare_data(kg, corpus, tokenizer, config: PretrainConfig) -> PretrainData:
    """Split the corpus (held-out share for the final evaluation) and tokenise both parts."""
    heldout, train = corpus.split(config.data.heldout_fraction, seed=config.seed)
    encoded_train = train.encode(tokenizer, max_length=config.data.max_length)
    encoded_heldout = heldout.encode(tokenizer, max_length=config.data.max_length)
    dropped = encoded_train.dropped_mentions + encoded_heldout.dropped_mentions
    if dropped:
        log.info("%d mentions cut off by max_length=%d", dropped, config.data.max_length)
    if len(encoded_train) == 0:
        raise ValueError("the training corpus is empty")
    return PretrainData(kg=kg, train=encoded_train, heldout=encoded_heldout,
                        pad_id=int(tokenizer.pad_token_id), special_ids=list(tokenizer.all_special_ids),
                        mask_id=int(tokenizer.mask_token_id), vocab_size=int(len(tokenizer)))


def load_kg_and_corpus(config: PretrainConfig):
    """The KG and its mention corpus named by ``config.data``."""
    source = config.data.source
    if source == "toy":
        from jaket.kg.toy import toy_kg
        return toy_kg()
    if source == "wordnet":
        from jaket.kg.sources.wordnet import build_wordnet
        kg, corpus, report = build_wordnet(max_entities=config.data.max_entities,
                                           roots=config.data.wordnet_roots, seed=config.seed)
        log.info("WordNet subset: %s", report)
        return kg, corpus
    if source == "dir":
        from jaket.kg.io import load_corpus, load_kg
        if not config.data.path:
            raise ValueError("data.source=dir needs data.path")
        kg = load_kg(config.data.path)
        return kg, load_corpus(config.data.path, kg)
    raise ValueError(f"unknown data.source {source!r}")


def build_model(config: PretrainConfig, kg):
    """A JaketModel with its entity context memory attached (jaket.model public API)."""
    from jaket.model.jaket import JaketConfig, JaketModel
    from jaket.model.memory import EntityContextMemory
    from jaket.paths import default_model_path

    m = config.model
    jcfg = JaketConfig(encoder=str(m.encoder or default_model_path()), lm1_layers=m.lm1_layers,
                       km_layers=m.km_layers, km_heads=m.km_heads, composition=m.composition,
                       fanouts=tuple(m.fanouts), description_max_length=m.description_max_length,
                       memory_momentum=m.memory_momentum, num_categories=max(1, kg.num_categories),
                       num_relations=max(1, kg.num_relations))
    model = JaketModel(jcfg)
    memory = EntityContextMemory(kg.num_entities, kg.num_relations, model.language.hidden_size,
                                 momentum=m.memory_momentum)
    model.attach_memory(memory)
    if hasattr(model, "use_relation_memory"):
        model.use_relation_memory = config.tasks.use_relation_memory
    return model


def pretrain(config: PretrainConfig, out_dir: str | Path, resume: bool = False,
             progress: bool = True, model_factory: Callable | None = None) -> dict:
    """Run (or resume) pre-training as configured; rank 0 writes ``out_dir``."""
    from jaket.train.distributed import init_distributed

    info = init_distributed()
    torch.manual_seed(config.seed)
    np.random.seed(config.seed)
    kg, corpus = load_kg_and_corpus(config)
    model = (model_factory or build_model)(config, kg)
    data = prepare_data(kg, corpus, model.language.tokenizer, config)
    trainer = Pretrainer(config, model, data, out_dir, info)
    summary = trainer.run(resume=resume, progress=progress)
    if info.is_main:
        model_dir = Path(out_dir) / "model"
        if hasattr(model, "save_pretrained"):
            model.save_pretrained(model_dir)
    return summary
