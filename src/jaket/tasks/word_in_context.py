"""Word-in-context: does a target word mean the same in two texts? (WiC, a SuperGLUE task on WordNet)

The task where what the language module learned from the KG should show: JAKET's pre-training
corpus is WordNet's usage examples, each linked to its synset, and masked entity prediction
trains the language module to name the synset of a word from its context -- word-sense
disambiguation. Here the sense is exactly what is unknown, so the paper's fusion (a linked
entity's KM embedding added at the mention, Eq. 8-9) needs a design for the candidates:

1. **Candidates**: the target's senses in the KG (:class:`jaket.tasks.wic_data.SenseInventory`:
   its lemma and part of speech, WordNet's most frequent sense first), at most
   ``max_candidates``.
2. **Sense scores**: the pre-trained masked-entity head, restricted to the candidates: the text
   through LM1 and LM2 without fusion (the target is a removed mention, as in pre-training),
   ``q = g((Z_s + Z_o) / 2)`` at the target and ``p = softmax_k(q . E^context_k)`` over the
   candidates' memory rows. This is pre-training's own task, so JAKET starts with a sense scorer;
   LM+G+M's head starts fresh.
3. **Fusion**: the candidates' KM embeddings (Eq. 1-5 over their sampled neighbourhoods)
   averaged with ``p`` -- a soft linked entity, as KnowBert's entity attention -- added at the
   target (Eq. 8-9) before LM2 (Eq. 10). ``sense_fusion="first"`` fuses the most frequent sense
   instead (no scorer), ``"none"`` nothing.
4. **Head**: ``[t1, t2, |t1 - t2|, t1 * t2]`` of the two target representations (the usual WiC
   head, the same for every setting), plus, with a KM, the sense agreement ``p1 . p2``; an MLP gives
   the "same meaning" logit.

Why this design: a hard choice of one sense (argmax) would throw away the scorer's uncertainty and
give no gradient; fusing every candidate equally would add the same vector to both texts and
carry no information; the weighted average is differentiable, reduces to the linked entity when
the scorer is sure, and the agreement ``p1 . p2`` is the direct answer to WiC's question when the
scorer is good. ``lm`` (LM only) is the same encoder and head without the KG side.

The memory (E^context of the sense KG's descriptions by the setting's LM1) is computed once and
frozen, as in the paper's fine-tuning; the language module, KM, fusion, heads all train.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.sampling import sample_neighbors
from jaket.kg.sources.registry import build_source
from jaket.model.device import autocast, cpu_description
from jaket.model.heads import EntityHead, span_mean
from jaket.model.config import JaketConfig
from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.tasks import report as rep
from jaket.tasks.finetuned import FinetunedFormatError, read_finetuned, write_finetuned
from jaket.tasks.settings import VARIANT_LABELS, VariantError, WordInContextConfig
from jaket.tasks.tracking import task_progress
from jaket.tasks.training import step_done
from jaket.tasks.variants import Backbone, FrozenMemory, kg_memory, load_backbone
from jaket.tasks.wic_data import SenseInventory, WordPair, load_pairs
from jaket.train.optim import warmup_linear

logger = logging.getLogger(__name__)

TASK = "word-in-context"
SUPPORTED_VARIANTS = ("lm", "lm+g+m", "jaket")


# ----------------------------------------------------------------------------- inputs


@dataclass
class EncodedPairs:
    """The pairs tokenised: text ``i`` of pair ``j`` is row ``j`` (first texts) or ``n + j``
    (second texts) of ``input_ids``; ``start`` / ``end`` the target's inclusive token span;
    ``candidates`` (2n, K) the target's candidate entities (-1 pads); ``labels`` (n,) or None."""

    input_ids: list[np.ndarray]
    start: np.ndarray
    end: np.ndarray
    candidates: np.ndarray
    labels: np.ndarray | None

    def __len__(self) -> int:
        return len(self.start) // 2

    def batch(self, pairs: np.ndarray, pad_id: int) -> dict[str, torch.Tensor]:
        rows = np.concatenate([pairs, pairs + len(self)])
        width = max(len(self.input_ids[r]) for r in rows)
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            ids[i, :len(self.input_ids[r])] = self.input_ids[r]
            mask[i, :len(self.input_ids[r])] = 1
        out = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask),
               "start": torch.from_numpy(self.start[rows]), "end": torch.from_numpy(self.end[rows]),
               "candidates": torch.from_numpy(self.candidates[rows])}
        if self.labels is not None:
            out["labels"] = torch.from_numpy(self.labels[pairs].astype(np.float32))
        return out


def target_spans(tokenizer, texts: list[str], spans: list[tuple[int, int]], max_length: int,
                 names: list[str] | None = None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Token ids (with special tokens, cut at ``max_length``) and the inclusive token span of each
    character span; a target cut off by ``max_length`` is an error naming the text (``names[i]``)."""
    encoded = tokenizer(texts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    starts, ends, ids = np.zeros(len(texts), np.int64), np.zeros(len(texts), np.int64), []
    for i, (offsets, (a, b)) in enumerate(zip(encoded["offset_mapping"], spans)):
        inside = [k for k, (s, e) in enumerate(offsets) if e > s and s < b and e > a]
        if not inside:
            name = names[i] if names is not None else f"text {i + 1}"
            raise ValueError(f"{name}: the target [{a}, {b}) is not within the first {max_length} tokens; "
                             f"raise max_length")
        starts[i], ends[i] = inside[0], inside[-1]
        ids.append(np.asarray(encoded["input_ids"][i], dtype=np.int64))
    return ids, starts, ends


def encode_pairs(pairs: list[WordPair], tokenizer, inventory: SenseInventory | None, max_length: int,
                 max_candidates: int, where: str = "pairs") -> EncodedPairs:
    """Tokenise the pairs and look up the candidates of their target words (none without an inventory)."""
    texts = [p.text1 for p in pairs] + [p.text2 for p in pairs]
    spans = [(p.start1, p.end1) for p in pairs] + [(p.start2, p.end2) for p in pairs]
    names = [f"{where}: pair {i % len(pairs) + 1}, text {i // len(pairs) + 1}" for i in range(len(texts))]
    ids, start, end = target_spans(tokenizer, texts, spans, max_length, names)
    lists = [inventory.candidates(p.lemma, p.pos)[:max_candidates] if inventory is not None else []
             for p in pairs]
    width = max([len(c) for c in lists] + [1])
    table = np.full((len(pairs), width), -1, dtype=np.int64)
    for i, c in enumerate(lists):
        table[i, :len(c)] = c
    labels = None
    if pairs and all(p.label is not None for p in pairs):
        labels = np.asarray([bool(p.label) for p in pairs])
    return EncodedPairs(ids, start, end, np.concatenate([table, table]), labels)


@dataclass
class SenseGraph:
    """The sense KG as a setting sees it: its frozen memory and the neighbourhood sampling of the KM."""

    kg: KnowledgeGraph
    memory: FrozenMemory
    fanouts: tuple[int, ...]


def km_embeddings(knowledge: nn.Module, graph: SenseGraph, entities, generator: np.random.Generator) -> torch.Tensor:
    """E^KM (Eq. 1-5) by ``knowledge`` of ``entities`` (unique indices of ``graph.kg``) over their
    neighbourhoods sampled with ``graph.fanouts``, from the frozen memory rows."""
    device = graph.memory.entities.device
    seeds = entities.cpu().numpy() if isinstance(entities, torch.Tensor) else np.asarray(entities)
    sub = sample_neighbors(graph.kg, seeds, graph.fanouts, generator)
    x = graph.memory.entities.index_select(0, sub.node_ids.to(device))
    out = knowledge(x, sub.edge_index.to(device), sub.edge_type.to(device), graph.memory.relations,
                    num_relations=graph.kg.num_relations, hops=(sub.nodes_per_hop, sub.edges_per_hop))
    return out[sub.seed_local.to(device)]


def neighbourhood(kg: KnowledgeGraph, entities, hops: int) -> np.ndarray:
    """The sorted entities within ``hops`` edges (either direction) of ``entities``."""
    adjacency = kg.adjacency
    reached = np.zeros(kg.num_entities, dtype=bool)
    frontier = np.unique(np.asarray(list(entities), dtype=np.int64))
    reached[frontier] = True
    for _ in range(hops):
        if not len(frontier):
            break
        starts, stops = adjacency.indptr[frontier], adjacency.indptr[frontier + 1]
        found = np.concatenate([adjacency.neighbors[a:b] for a, b in zip(starts, stops)] or [np.zeros(0, np.int64)])
        found = np.unique(found.astype(np.int64))
        frontier = found[~reached[found]]
        reached[frontier] = True
    return np.flatnonzero(reached)


def restrict_to_candidates(kg: KnowledgeGraph, datasets: list[EncodedPairs], hops: int) -> KnowledgeGraph:
    """The part of ``kg`` a ``hops``-layer KM reads for the candidates of ``datasets``: the
    induced graph on every entity within ``hops - 1`` edges of a candidate plus their neighbours,
    i.e. within ``hops`` edges. A candidate's E^KM over it is the same as over ``kg`` (every node
    the KM updates keeps all its edges), while the memory is computed for far fewer descriptions.
    The datasets' candidates are renumbered in place."""
    used = np.unique(np.concatenate([d.candidates[d.candidates >= 0] for d in datasets] + [np.zeros(0, np.int64)]))
    sub, old = kg.induced_subgraph(neighbourhood(kg, used, hops))
    new_of_old = np.full(kg.num_entities, -1, dtype=np.int64)
    new_of_old[old] = np.arange(len(old))
    for d in datasets:
        d.candidates = np.where(d.candidates >= 0, new_of_old[np.maximum(d.candidates, 0)], -1)
    return sub


# ----------------------------------------------------------------------------- model


class WordInContextModel(nn.Module):
    """The language module (and, for ``lm+g+m`` / ``jaket``, the KM, the fusion and the
    masked-entity head) with the pair head; design in the module docstring."""

    def __init__(self, variant: str, language: SplitLanguageModel, knowledge: nn.Module | None = None,
                 fusion: nn.Module | None = None, entity_head: EntityHead | None = None,
                 dropout: float = 0.1, sense_fusion: str = "attention"):
        super().__init__()
        if variant not in SUPPORTED_VARIANTS:
            raise VariantError(f"word-in-context runs {', '.join(SUPPORTED_VARIANTS)}, not {variant!r}")
        f = int(language.hidden_size)
        self.variant = variant
        self.sense_fusion = sense_fusion
        self.language = language
        self.knowledge = knowledge
        self.fusion = fusion
        self.entity_head = entity_head
        if self.uses_kg and (knowledge is None or fusion is None or entity_head is None):
            raise VariantError(f"variant {variant!r} needs a KM, a fusion and a masked-entity head")
        extra = 2 if self.uses_kg else 0
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(4 * f + extra, f), nn.GELU(),
                                        nn.Dropout(dropout), nn.Linear(f, 1))

    @property
    def uses_kg(self) -> bool:
        return self.variant != "lm"

    def km_rows(self, graph: SenseGraph, entities: torch.Tensor, generator: np.random.Generator) -> torch.Tensor:
        """E^KM (Eq. 1-5) of ``entities`` (unique global indices) over their sampled neighbourhoods."""
        return km_embeddings(self.knowledge, graph, entities, generator)

    def sense_scores(self, hidden: torch.Tensor, rows: torch.Tensor, start: torch.Tensor, end: torch.Tensor,
                     candidates: torch.Tensor, graph: SenseGraph) -> torch.Tensor:
        """``p`` (n, K): the masked-entity head restricted to the candidates (0 where none)."""
        valid = candidates >= 0
        q = self.entity_head.query(hidden.float(), rows, start, end)
        memory_rows = graph.memory.entities[candidates.clamp(min=0)]
        scores = torch.einsum("nf,nkf->nk", q, memory_rows.float())
        scores = scores.masked_fill(~valid, float("-inf"))
        has = valid.any(dim=1, keepdim=True)
        p = torch.softmax(torch.where(has, scores, torch.zeros_like(scores)), dim=1)
        return p * valid

    def forward(self, batch: dict[str, torch.Tensor], graph: SenseGraph | None = None,
                generator: np.random.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(logits (B,), p (2B, K) or None)`` of a batch of :meth:`EncodedPairs.batch`."""
        device = self.classifier[1].weight.device
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        start, end = batch["start"].to(device), batch["end"].to(device)
        rows = torch.arange(ids.shape[0], device=device)
        z = self.language.lm1(ids, mask)
        p = None
        if not self.uses_kg:
            hidden = self.language.lm2(z, mask)
        else:
            if graph is None:
                raise ValueError(f"variant {self.variant!r} needs the sense KG")
            generator = generator if generator is not None else np.random.default_rng(0)
            candidates = batch["candidates"].to(device)
            valid = candidates >= 0
            p = self.sense_scores(self.language.lm2(z, mask), rows, start, end, candidates, graph)
            if self.sense_fusion != "none" and bool(valid.any()):
                weights = p if self.sense_fusion == "attention" else F.one_hot(
                    torch.zeros(len(candidates), dtype=torch.long, device=device), candidates.shape[1]) * valid
                unique, inverse = torch.unique(candidates[valid], return_inverse=True)
                km = self.km_rows(graph, unique, generator)
                gathered = torch.zeros(*candidates.shape, km.shape[1], dtype=km.dtype, device=device)
                gathered[valid] = km[inverse]
                entity = torch.einsum("nk,nkf->nf", weights.to(km.dtype), gathered)
                z = self.fusion(z, rows, start, end, entity, valid.any(dim=1))  # Eq. 8-9
            hidden = self.language.lm2(z, mask)  # Eq. 10
        t = span_mean(hidden.float(), rows, start, end)
        half = len(t) // 2
        t1, t2 = t[:half], t[half:]
        features = [t1, t2, (t1 - t2).abs(), t1 * t2]
        if p is not None:
            both = (batch["candidates"][:half, 0] >= 0).to(device).float()[:, None]
            features += [(p[:half] * p[half:]).sum(dim=1, keepdim=True), both]
        return self.classifier(torch.cat(features, dim=1)).squeeze(-1), p


def build_model(config: WordInContextConfig, variant: str, seed: int) -> WordInContextModel:
    """One setting's model, seeded (fresh parts drawn on the CPU)."""
    torch.manual_seed(seed)
    if variant == "jaket":
        if config.pretrained is None:
            raise VariantError("variant 'jaket' needs a pre-trained model folder (--model DIR)")
        pretrained = JaketModel.from_pretrained(config.pretrained, load_memory=False)
        torch.manual_seed(seed)
        return WordInContextModel("jaket", pretrained.language, pretrained.knowledge, pretrained.fusion,
                                  pretrained.entity_head, config.dropout, config.sense_fusion)
    backbone = load_backbone(config.variant_config(variant), seed)
    head = EntityHead(backbone.hidden_size) if variant == "lm+g+m" else None
    torch.manual_seed(seed)
    return WordInContextModel(variant, backbone.language, backbone.knowledge, backbone.fusion, head,
                              config.dropout, config.sense_fusion)


def sense_graph(model: WordInContextModel, kg: KnowledgeGraph, config: WordInContextConfig) -> SenseGraph:
    """The frozen memory of the sense KG by the model's LM1 (Eq. 7), for its KM settings."""
    backbone = Backbone(model.variant, int(model.language.hidden_size), model.language, model.knowledge)
    memory = kg_memory(backbone, kg, max_length=config.description_max_length,
                       relation_memory=config.relation_memory)
    return SenseGraph(kg, memory, tuple(config.fanouts))


# ----------------------------------------------------------------------------- training


def _optimizer(model: WordInContextModel, config: WordInContextConfig, steps: int):
    groups = [{"params": list(model.language.parameters()), "lr": config.lr},
              {"params": list(model.classifier.parameters()), "lr": config.head_lr}]
    kg_parts = [m for m in (model.knowledge, model.fusion, model.entity_head) if m is not None]
    if kg_parts:
        groups.append({"params": [p for m in kg_parts for p in m.parameters()], "lr": config.km_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=config.weight_decay)
    warmup = max(1, int(config.warmup_fraction * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_linear(warmup, steps))
    return optimizer, schedule


@torch.no_grad()
def predict_probabilities(model: WordInContextModel, data: EncodedPairs, graph: SenseGraph | None,
                          batch_size: int = 64, bf16: bool = False, seed: int = 0
                          ) -> tuple[np.ndarray, np.ndarray | None]:
    """P(same meaning) of every pair, and the sense distributions ``p`` (2n, K) of the KM settings."""
    model.eval()
    device = model.classifier[1].weight.device
    pad = int(model.language.tokenizer.pad_token_id)
    generator = np.random.default_rng(seed)
    probabilities, senses = [], []
    for begin in range(0, len(data), batch_size):
        pairs = np.arange(begin, min(begin + batch_size, len(data)))
        with autocast(device, bf16):
            logits, p = model(data.batch(pairs, pad), graph, generator)
        probabilities.append(torch.sigmoid(logits.float()).cpu().numpy())
        if p is not None:
            senses.append(p.float().cpu().numpy().reshape(2, len(pairs), -1))
    probability = np.concatenate(probabilities) if probabilities else np.zeros(0)
    if not senses:
        return probability, None
    width = max(s.shape[2] for s in senses)
    padded = [np.pad(s, ((0, 0), (0, 0), (0, width - s.shape[2]))) for s in senses]
    stacked = np.concatenate(padded, axis=1)
    return probability, np.concatenate([stacked[0], stacked[1]])


def accuracy_of(probability: np.ndarray, labels: np.ndarray) -> float:
    return rep.accuracy((probability >= 0.5).astype(int), labels.astype(int))


def fit(model: WordInContextModel, train: EncodedPairs, selection: EncodedPairs | None, graph: SenseGraph | None,
        config: WordInContextConfig, seed: int, progress=None) -> dict:
    """Fine-tune for ``config.epochs`` epochs; with ``selection`` the epoch of the best selection
    accuracy is kept (its weights restored). Returns the history."""
    device = model.classifier[1].weight.device
    pad = int(model.language.tokenizer.pad_token_id)
    rng = np.random.default_rng(seed)
    generator = np.random.default_rng(1_000 + seed)
    per_epoch = math.ceil(len(train) / config.batch_size)
    optimizer, schedule = _optimizer(model, config, per_epoch * config.epochs)
    history: dict = {"train_loss": [], "selection_accuracy": [], "best_epoch": config.epochs}
    best, best_state = -1.0, None
    for epoch in range(config.epochs):
        model.train()
        order = rng.permutation(len(train))
        losses = []
        for begin in range(0, len(order), config.batch_size):
            batch = train.batch(order[begin:begin + config.batch_size], pad)
            with autocast(device, config.bf16):
                logits, _ = model(batch, graph, generator)
            loss = F.binary_cross_entropy_with_logits(logits.float(), batch["labels"].to(device))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            step_done(progress, losses[-1])
        history["train_loss"].append(float(np.mean(losses)))
        if selection is not None and len(selection):
            probability, _ = predict_probabilities(model, selection, graph, bf16=config.bf16, seed=seed)
            score = accuracy_of(probability, selection.labels)
            history["selection_accuracy"].append(score)
            if score > best:
                best, history["best_epoch"] = score, epoch + 1
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


def selection_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train, selection)`` indices of ``n`` training pairs for ``seed``."""
    order = np.random.default_rng(seed).permutation(n)
    cut = int(round(fraction * n))
    return np.sort(order[cut:]), np.sort(order[:cut])


def _subset(data: EncodedPairs, pairs: np.ndarray) -> EncodedPairs:
    rows = np.concatenate([pairs, pairs + len(data)])
    return EncodedPairs([data.input_ids[r] for r in rows], data.start[rows], data.end[rows],
                        data.candidates[rows], None if data.labels is None else data.labels[pairs])


# ----------------------------------------------------------------------------- baselines


@torch.no_grad()
def target_features(language: SplitLanguageModel, data: EncodedPairs, batch_size: int = 64) -> np.ndarray:
    """``[t1, t2, |t1 - t2|, t1 * t2]`` of each pair from a frozen encoder (LM1 + LM2)."""
    language.eval()
    pad = int(language.tokenizer.pad_token_id)
    device = next(language.parameters()).device
    out = []
    for begin in range(0, len(data), batch_size):
        pairs = np.arange(begin, min(begin + batch_size, len(data)))
        b = data.batch(pairs, pad)
        hidden = language(b["input_ids"].to(device), b["attention_mask"].to(device))
        rows = torch.arange(hidden.shape[0], device=device)
        t = span_mean(hidden.float(), rows, b["start"].to(device), b["end"].to(device))
        t1, t2 = t[:len(pairs)], t[len(pairs):]
        out.append(torch.cat([t1, t2, (t1 - t2).abs(), t1 * t2], dim=1).cpu().numpy())
    return np.concatenate(out)


def frozen_feature_baseline(language: SplitLanguageModel, train: EncodedPairs, evaluation: EncodedPairs,
                            seed: int = 0) -> dict:
    """The issue's floor for LM only: a logistic regression on the frozen base encoder's target-word
    features, its regularisation chosen on a selection part of the training pairs."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_eval = target_features(language, train), target_features(language, evaluation)
    fit_rows, select_rows = selection_split(len(train), 0.1, seed)
    best = None
    for c in (0.001, 0.01, 0.1, 1.0):
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
        clf.fit(x_train[fit_rows], train.labels[fit_rows])
        score = float((clf.predict(x_train[select_rows]) == train.labels[select_rows]).mean())
        if best is None or score > best[0]:
            best = (score, c)
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=best[1], max_iter=2000))
    clf.fit(x_train, train.labels)
    return {"accuracy": float((clf.predict(x_eval) == evaluation.labels).mean()), "C": best[1],
            "selection_accuracy": best[0]}


# ----------------------------------------------------------------------------- the comparison


def run_word_in_context(train_pairs: list[WordPair], eval_pairs: list[WordPair], config: WordInContextConfig,
                        kg: KnowledgeGraph | None, out_dir: Path | None = None, *, save_dir: Path | None = None,
                        device="cpu", log_with=(), data_info: dict | None = None,
                        frozen_baseline: bool = True) -> dict:
    """Fine-tune each setting of ``config.variants`` for each seed on ``train_pairs`` and measure
    accuracy on ``eval_pairs``; paired differences between settings (same seed, same selection
    split), the frozen-feature baseline and the majority class beside them. ``save_dir``: the
    first run's model is saved there (:class:`FinetunedWordInContext`)."""
    if any(p.label is None for p in train_pairs):
        raise ValueError("the training pairs need labels (WiC: the *.gold.txt beside the data file)")
    if not eval_pairs or any(p.label is None for p in eval_pairs):
        raise ValueError("the evaluation pairs need labels")
    uses_kg = any(v != "lm" for v in config.variants)
    if uses_kg and kg is None:
        raise ValueError("the KM settings need a sense KG")
    inventory = SenseInventory.for_wordnet(kg) if kg is not None else None
    config_json = json.loads(json.dumps(asdict(config), default=str))
    results: dict = {"task": TASK, "device": str(torch.device(device)), "cpu": cpu_description(), "config": config_json,
                     "data": dict(data_info or {}), "senses": {}, "runs": {}, "summary": {}, "paired": {}}
    steps = math.ceil(len(train_pairs) * (1 - config.selection_fraction) / config.batch_size) * config.epochs
    total = len(config.variants) * len(config.seeds) * steps
    with task_progress(total, "word in context", "step", log_with, out_dir, config_json) as progress:
        for variant in config.variants:
            graph = None
            for seed in config.seeds:
                started = time.perf_counter()
                progress.set_postfix_str(f"{variant} seed {seed}")
                model = build_model(config, variant, seed).to(device)
                tokenizer = model.language.tokenizer
                train_all = encode_pairs(train_pairs, tokenizer, inventory, config.max_length,
                                         config.max_candidates, "training pairs")
                evaluation = encode_pairs(eval_pairs, tokenizer, inventory, config.max_length,
                                          config.max_candidates, "evaluation pairs")
                if model.uses_kg:  # the KM reads the candidates' neighbourhoods only
                    sense_kg = restrict_to_candidates(kg, [train_all, evaluation], len(model.knowledge.layers))
                if "candidates" not in results["senses"] and model.uses_kg:
                    counts = [len(inventory.candidates(p.lemma, p.pos)) for p in eval_pairs]
                    results["senses"]["candidates"] = {
                        "evaluation_pairs_without_candidates": int(sum(c == 0 for c in counts)),
                        "mean_candidates": float(np.mean(counts)), "max_candidates": int(max(counts))}
                if model.uses_kg and graph is None:  # the same LM1 every seed: one memory a setting
                    graph = sense_graph(model, sense_kg, config)
                    results["senses"]["sense_kg_entities"] = {"kg": kg.num_entities, "read": sense_kg.num_entities}
                fit_rows, select_rows = selection_split(len(train_all), config.selection_fraction, seed)
                train = _subset(train_all, fit_rows)
                selection = _subset(train_all, select_rows) if len(select_rows) else None
                history = fit(model, train, selection, graph if model.uses_kg else None, config, seed, progress)
                probability, _ = predict_probabilities(model, evaluation, graph if model.uses_kg else None,
                                                       bf16=config.bf16, seed=seed)
                run = {"seed": seed, "accuracy": accuracy_of(probability, evaluation.labels), **history,
                       "seconds": round(time.perf_counter() - started, 1)}
                logger.info("%s seed %d: accuracy %.4f (epoch %d)", variant, seed, run["accuracy"],
                            history["best_epoch"])
                results["runs"].setdefault(variant, []).append(run)
                if save_dir is not None and "saved_model" not in results:
                    settings = {"variant": variant, "max_length": config.max_length,
                                "max_candidates": config.max_candidates, "fanouts": list(config.fanouts),
                                "sense_fusion": config.sense_fusion,
                                "description_max_length": config.description_max_length,
                                "relation_memory": config.relation_memory, "dropout": config.dropout,
                                "km": config.variant_config(variant).km_structure() if model.uses_kg else None,
                                "training": {"seed": seed, "epochs": config.epochs, "pairs": len(train_pairs),
                                             "best_epoch": history["best_epoch"]}}
                    finetuned = FinetunedWordInContext(model, settings, kg)
                    results["saved_model"] = str(finetuned.save_pretrained(save_dir))
                del model
            results["summary"][variant] = rep.summarize_seeds(
                [{"accuracy": r["accuracy"]} for r in results["runs"][variant]])
    runs = results["runs"]
    for a, b in (("jaket", "lm"), ("jaket", "lm+g+m"), ("lm+g+m", "lm")):
        if a in runs and b in runs and len(runs[a]) == len(runs[b]):
            results["paired"][f"{a} - {b}"] = rep.paired_difference(
                [r["accuracy"] for r in runs[a]], [r["accuracy"] for r in runs[b]])
    labels = np.asarray([p.label for p in eval_pairs], dtype=bool)
    majority = bool(np.mean([p.label for p in train_pairs]) >= 0.5)
    results["majority_class"] = float((labels == majority).mean())
    if frozen_baseline:
        language = load_backbone(config.variant_config("lm"), 0, device=device).language
        tokenizer = language.tokenizer
        results["frozen_features"] = frozen_feature_baseline(
            language, encode_pairs(train_pairs, tokenizer, None, config.max_length, 1),
            encode_pairs(eval_pairs, tokenizer, None, config.max_length, 1))
    if out_dir is not None:
        write_report(results, Path(out_dir))
    return results


def results_table(results: dict) -> str:
    rows = [[VARIANT_LABELS.get(v, v), rep.format_mean_std(s["accuracy"]["values"])]
            for v, s in results["summary"].items()]
    if "frozen_features" in results:
        rows.append(["(frozen base encoder + logistic regression)", f"{100 * results['frozen_features']['accuracy']:.1f}"])
    rows.append(["(majority class)", f"{100 * results['majority_class']:.1f}"])
    table = rep.markdown_table(["Model", "accuracy %"], rows)
    if results["paired"]:
        diff_rows = [[name.replace("jaket", "JAKET").replace("lm+g+m", "LM+G+M").replace("lm", "LM only"),
                      f"{100 * d['mean']:+.1f}",
                      f"[{100 * d['ci_low']:+.1f}, {100 * d['ci_high']:+.1f}]" if not math.isnan(d["ci_low"]) else "-"]
                     for name, d in results["paired"].items()]
        table += "\n\n" + rep.markdown_table(["Paired difference", "points", "95% CI"], diff_rows)
    return table


def write_report(results: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_metrics(out_dir, results)
    text = ["# Word in context", "", f"Accuracy on {results['data'].get('eval', 'the evaluation pairs')}, "
            f"mean ± std over seeds {results['config']['seeds']}; the epoch of each run chosen on "
            f"{results['config']['selection_fraction']:.0%} of the training pairs.", "", results_table(results), ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))
    curves = {f"{VARIANT_LABELS.get(v, v)} seed {r['seed']}": r["train_loss"]
              for v, rs in results["runs"].items() for r in rs[:1]}
    if curves:
        rep.plot_curves(curves, out_dir / "train_loss.png", title="word in context: training loss per epoch",
                        xlabel="epoch", ylabel="loss")


# ----------------------------------------------------------------------------- the fine-tuned model


class FinetunedWordInContext:
    """A fine-tuned word-in-context model with its settings and sense KG (``jaket predict``)."""

    task = TASK

    def __init__(self, model: WordInContextModel, settings: dict, kg: KnowledgeGraph | None):
        self.model = model.eval()
        self.settings = dict(settings)
        self.kg = kg
        self._graph: SenseGraph | None = None

    def save_pretrained(self, directory) -> Path:
        """The fine-tuned folder (:mod:`jaket.tasks.finetuned`): the backbone as fine-tuned (the
        masked-entity head among its pre-training heads) and the pair head."""
        model = self.model
        language = model.language
        km = self.settings.get("km") or {}
        jconfig = JaketConfig(lm1_layers=language.lm1_layers, km_layers=int(km.get("layers", 2)),
                              km_heads=int(km.get("heads", 8)), composition=km.get("composition", "add"))
        if model.fusion is not None:
            jconfig.fusion_normalize = model.fusion.normalize
        jconfig.description_max_length = int(self.settings.get("description_max_length", 32))
        jconfig.use_relation_memory = bool(self.settings.get("relation_memory", True))
        backbone = JaketModel(jconfig, language=language)
        for name in ("knowledge", "fusion", "entity_head"):
            part = getattr(model, name)
            if part is not None:
                getattr(backbone, name).load_state_dict(part.state_dict())
        settings = {**self.settings, "hidden_size": int(language.hidden_size)}
        if self.kg is not None:
            settings["kg"] = {"fingerprint": self.kg.fingerprint(), "entities": self.kg.num_entities}
        return write_finetuned(directory, TASK, backbone, model.classifier.state_dict(), settings)

    @classmethod
    def from_pretrained(cls, directory) -> "FinetunedWordInContext":
        folder = read_finetuned(directory, TASK)
        settings = folder.task_config
        variant = settings.get("variant")
        if variant not in SUPPORTED_VARIANTS:
            raise FinetunedFormatError(f"{directory}/task.json: 'variant' must be one of {', '.join(SUPPORTED_VARIANTS)}")
        b = folder.backbone
        uses_kg = variant != "lm"
        model = WordInContextModel(variant, b.language, b.knowledge if uses_kg else None,
                                   b.fusion if uses_kg else None, b.entity_head if uses_kg else None,
                                   float(settings.get("dropout", 0.1)), settings.get("sense_fusion", "attention"))
        try:
            model.classifier.load_state_dict(folder.head)
        except RuntimeError as error:
            first = str(error).strip().splitlines()[0]
            raise FinetunedFormatError(f"{directory}/head.safetensors: not a word-in-context head: {first}") from None
        return cls(model, settings, None)

    def to(self, device) -> "FinetunedWordInContext":
        self.model.to(device)
        if self._graph is not None:
            self._graph = SenseGraph(self._graph.kg, self._graph.memory.to(device), self._graph.fanouts)
        return self

    def _sense_graph(self, kg: KnowledgeGraph) -> SenseGraph:
        if self._graph is None or self._graph.kg is not kg:
            config = WordInContextConfig(description_max_length=int(self.settings.get("description_max_length", 32)),
                                         relation_memory=bool(self.settings.get("relation_memory", True)),
                                         fanouts=tuple(self.settings.get("fanouts", (5, 5))))
            self._graph = sense_graph(self.model, kg, config)
        return self._graph

    def predict(self, pairs: list[WordPair], kg: KnowledgeGraph | None = None, batch_size: int = 64) -> list[dict]:
        """One row per pair: ``same`` (bool), ``probability``, and with a KM the most likely sense of
        the target in each text (entity id and its probability)."""
        inventory = None
        graph = None
        if self.model.uses_kg:
            if kg is None:
                raise ValueError(f"a {self.settings['variant']} model reads the target's senses: give the sense KG")
            inventory = SenseInventory.for_wordnet(kg)
        data = encode_pairs(pairs, self.model.language.tokenizer, inventory, int(self.settings.get("max_length", 96)),
                            int(self.settings.get("max_candidates", 64)))
        if self.model.uses_kg:
            kg = restrict_to_candidates(kg, [data], len(self.model.knowledge.layers))
            graph = self._sense_graph(kg)
        probability, senses = predict_probabilities(self.model, data, graph, batch_size)
        rows = []
        for i, (pair, prob) in enumerate(zip(pairs, probability)):
            row = {"lemma": pair.lemma, "same": bool(prob >= 0.5), "probability": round(float(prob), 6)}
            if pair.label is not None:
                row["label"] = pair.label
            if senses is not None:
                for k, r in (("sense1", i), ("sense2", len(pairs) + i)):
                    valid = data.candidates[r] >= 0
                    if valid.any():
                        best = int(np.argmax(np.where(valid, senses[r, :len(valid)], -1)))
                        row[k] = {"entity": kg.entity_ids[int(data.candidates[r, best])],
                                  "probability": round(float(senses[r, best]), 6)}
            rows.append(row)
        return rows


def predict_rows(finetuned: FinetunedWordInContext, pairs_path: Path, gold: Path | None = None,
                 kg_path: Path | None = None) -> list[dict]:
    """``jaket predict word-in-context``: the rows of :meth:`FinetunedWordInContext.predict` for a
    pairs file (WiC or JSONL) over the sense KG (default: WordNet 3.0)."""
    pairs = load_pairs(pairs_path, gold)
    kg = None
    if finetuned.model.uses_kg:
        kg = load_sense_kg(kg_path)
        trained_on = finetuned.settings.get("kg", {}).get("fingerprint")
        if trained_on not in (None, kg.fingerprint()):
            logger.info("predicting over another sense KG than the fine-tuning one (its memory is recomputed)")
    return finetuned.predict(pairs, kg)


def load_sense_kg(path: Path | None = None) -> KnowledgeGraph:
    """The sense KG: a KG folder, or (None) the whole of WordNet 3.0 (117,659 synsets)."""
    if path is None:
        return build_source("wordnet", max_entities=None, seed=0).kg
    return load_kg(path)


__all__ = ["EncodedPairs", "FinetunedWordInContext", "WordInContextConfig", "WordInContextModel",
           "encode_pairs", "fit", "frozen_feature_baseline", "load_sense_kg", "predict_rows",
           "run_word_in_context", "results_table"]
