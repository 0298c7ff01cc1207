"""The word-in-context model (design in :mod:`jaket.tasks.word_in_context`): the pairs as token ids with
the target's span and candidate senses, the sense KG the KM reads, the model (LM1, the soft
linked sense fused at the target, Eq. 8-9, LM2, the pair head) and its probabilities.

Training and the comparison of settings (:mod:`jaket.tasks.word_in_context`) and the fine-tuned
model (:mod:`jaket.tasks.word_in_context.finetuned`) both import this module; it imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from jaket.kg.graph import KnowledgeGraph
from jaket.model.device import autocast
from jaket.model.heads import EntityHead, span_mean
from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.tasks.settings import VariantError
from jaket.tasks.word_in_context.job import (SENSE_FUSION, SUPPORTED_VARIANTS,  # noqa: F401 (re-exported)
                                            WordInContextConfig)
from jaket.tasks.variants import Backbone, kg_memory, load_backbone
from jaket.senses.graph import SenseGraph, km_embeddings, neighbourhood, target_spans
from jaket.senses.inventory import SenseInventory
from jaket.tasks.word_in_context.data import WordPair
from jaket.tasks.settings import variant as variant_spec


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

    def pair_lengths(self) -> np.ndarray:
        """(n,) the token count of each pair's longer text: the width the pair pads its batch to."""
        lengths = np.asarray([len(ids) for ids in self.input_ids], dtype=np.int64)
        return np.maximum(lengths[:len(self)], lengths[len(self):])

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

def restrict_to_candidates(kg: KnowledgeGraph, datasets: list[EncodedPairs],
                           hops: int) -> tuple[KnowledgeGraph, np.ndarray]:
    """The part of ``kg`` a ``hops``-layer KM reads for the candidates of ``datasets``: the
    induced graph on every entity within ``hops - 1`` edges of a candidate plus their neighbours,
    i.e. within ``hops`` edges. A candidate's E^KM over it is the same as over ``kg`` (every node
    the KM updates keeps all its edges), while the memory is computed for far fewer descriptions.
    Returns the subgraph and the index of each of ``kg``'s entities in it (-1 outside), the
    :attr:`SenseGraph.index_of` of the graph built on it; ``datasets`` are not changed."""
    used = np.unique(np.concatenate([d.candidates[d.candidates >= 0] for d in datasets] + [np.zeros(0, np.int64)]))
    sub, old = kg.induced_subgraph(neighbourhood(kg, used, hops))
    index_of = np.full(kg.num_entities, -1, dtype=np.int64)
    index_of[old] = np.arange(len(old))
    return sub, index_of

class WordInContextModel(nn.Module):
    """The language module (and, for ``lm+g+m`` / ``jaket``, the KM, the fusion and the
    masked-entity head) with the pair head; design in the module docstring."""

    def __init__(self, variant: str, language: SplitLanguageModel, knowledge: nn.Module | None = None,
                 fusion: nn.Module | None = None, entity_head: EntityHead | None = None,
                 dropout: float = 0.1, sense_fusion: str = "attention"):
        if variant not in SUPPORTED_VARIANTS:
            raise VariantError(f"word-in-context runs {', '.join(SUPPORTED_VARIANTS)}, not {variant!r}")
        uses_kg = variant_spec(variant).has_km
        if uses_kg and (knowledge is None or fusion is None or entity_head is None):
            raise VariantError(f"variant {variant!r} needs a KM, a fusion and a masked-entity head")
        if sense_fusion not in SENSE_FUSION:
            raise VariantError(f"sense_fusion must be one of {', '.join(SENSE_FUSION)}, got {sense_fusion!r}")
        super().__init__()  # every argument checked first: a refused model builds nothing
        self.variant, self.sense_fusion = variant, sense_fusion
        self.language = language
        #: the KM, the fusion and the masked-entity head (None for ``lm``)
        self.knowledge, self.fusion, self.entity_head = knowledge, fusion, entity_head
        f = int(language.hidden_size)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(4 * f + (2 if uses_kg else 0), f), nn.GELU(),
                                        nn.Dropout(dropout), nn.Linear(f, 1))

    @property
    def uses_kg(self) -> bool:
        return variant_spec(self.variant).has_km

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
    if variant_spec(variant).pretrained:
        if config.pretrained is None:
            raise VariantError("variant 'jaket' needs a pre-trained model folder (--model DIR)")
        pretrained = JaketModel.from_pretrained(config.pretrained, load_memory=False)
        torch.manual_seed(seed)
        return WordInContextModel("jaket", pretrained.language, pretrained.knowledge, pretrained.fusion,
                                  pretrained.entity_head, config.dropout, config.sense_fusion)
    backbone = load_backbone(config.variant_config(variant), seed)
    head = EntityHead(backbone.hidden_size) if variant_spec(variant).has_km else None
    torch.manual_seed(seed)
    return WordInContextModel(variant, backbone.language, backbone.knowledge, backbone.fusion, head,
                              config.dropout, config.sense_fusion)

def sense_graph(model: WordInContextModel, kg: KnowledgeGraph, config: WordInContextConfig,
                index_of: np.ndarray | None = None) -> SenseGraph:
    """The frozen memory of the sense KG by the model's LM1 (Eq. 7), for its KM settings;
    ``index_of`` as :func:`restrict_to_candidates` returns it when ``kg`` is a part of the whole KG."""
    backbone = Backbone(model.variant, int(model.language.hidden_size), model.language, model.knowledge)
    memory = kg_memory(backbone, kg, max_length=config.description_max_length,
                       relation_memory=config.relation_memory)
    return SenseGraph(kg, memory, tuple(config.fanouts), index_of)

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
