"""The KGQA model: the graph it reads and the question answerer.

**The graph side**: the kept triples, each question's candidates, and the computation
subgraph of one training step.

**Candidates**: every entity within ``k`` hops of the topic (either direction, over the kept
triples; ``k`` = the question's hop count), the topic excluded, nearest hops first (each hop in
index order), at most ``limit``. Computed once per (topic, k) and cached.

**One KM pass per step over the step's computation subgraph.** A training step needs ``E^KM``
(Eq. 1-5) of the batch's topics and candidates only. After ``L`` KM layers an entity's output
depends on its ``L``-hop in-neighbourhood and nothing else, so :meth:`QAGraph.computation_subgraph`
collects, in hop order, the seeds (topics and candidates of the whole batch, shared), every
in-edge of the seeds (hop 1), every in-edge of the entities first reached at hop 1 (hop 2), ...,
and :class:`~jaket.model.knowledge.KnowledgeModule` runs over it with ``hops=`` (layer ``l`` updates
only the nodes within ``L - l`` hops). No edge is sampled: the seeds' rows equal those of a pass
over the whole KG (tested to 1e-5), at a cost that grows with the batch's neighbourhood instead of
with the KG (docs/performance.md, "KGQA training step"). Opt-in, ``fanout`` samples at most that
many in-edges per node and hop instead (seeded), as pre-training's subgraphs do: no longer exact,
cheaper where hubs (a genre, a year) sit next to the candidates.

The question-answering model of :mod:`jaket.tasks.kgqa` and how it ranks candidates.

A question is read by LM1, its topic entity's KM embedding fused at its mention (Eq. 8-9), LM2
reads the result (Eq. 10) and the [CLS] output, linearly mapped, is the question embedding; each
candidate is scored by the inner product with its KM embedding. Training and the comparison of
settings are there; the fine-tuned model (:mod:`jaket.tasks.kgqa.finetuned`)
uses only this module, so neither imports the other's caller.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from jaket.kg.graph import CSRAdjacency, KnowledgeGraph
from jaket.kg.sampling import _ragged_arange, sample_edges
from jaket.model.device import autocast
from jaket.model.fusion import MentionFusion
from jaket.tasks.kgqa.data import QAExample
from jaket.tasks.kgqa.job import SUPPORTED_VARIANTS, KGQAConfig  # noqa: F401 (re-exported)
from jaket.tasks.variants import Backbone, VariantError, full_graph
from jaket.model.memory import FrozenMemory

def drop_triples_mask(num_triples: int, probability: float, seed: int) -> np.ndarray:
    """KG-50%: keep each triple with probability ``1 - probability`` (seeded)."""
    return np.random.default_rng(seed).random(num_triples) >= probability


@dataclass
class ComputationSubgraph:
    """Nodes in hop order (``nodes[:num_seeds]`` = the seeds, sorted) and their edges in the
    design's convention (row 0 the neighbour, row 1 the node updated), local indices."""

    nodes: np.ndarray
    edge_index: torch.Tensor
    edge_type: torch.Tensor
    nodes_per_hop: tuple[int, ...]
    edges_per_hop: tuple[int, ...]

    @property
    def seeds(self) -> np.ndarray:
        return self.nodes[: self.nodes_per_hop[0]]


class QAGraph:
    """A KG restricted to the kept triples (KG-Full: all; KG-50%: a seeded half)."""

    def __init__(self, kg: KnowledgeGraph, keep: np.ndarray | None = None):
        self.kg = kg
        self.keep = np.ones(kg.num_triples, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
        triples = np.asarray(kg.triples)[self.keep]
        # row v: v's neighbours u with the edge type of u -> v (full_graph's convention)
        self.adjacency = CSRAdjacency.from_triples(triples, kg.num_entities, kg.num_relations)
        self._candidates: dict[tuple[int, int], np.ndarray] = {}
        self._full: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def num_entities(self) -> int:
        return int(self.kg.num_entities)

    def full_edges(self, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """Every kept edge (``edge_index``, ``edge_type``) for a pass over the whole KG, on
        ``device`` (built once per device)."""
        key = str(torch.device(device))
        if key not in self._full:
            on_cpu = self._full.get("cpu") or full_graph(self.kg, self.keep)
            self._full[key] = tuple(t.to(device) for t in on_cpu)
        return self._full[key]

    def _neighbours(self, frontier: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row in ``frontier``, CSR position) of every edge of the frontier's entities."""
        indptr = self.adjacency.indptr
        return _ragged_arange(indptr[frontier], indptr[frontier + 1] - indptr[frontier])

    def candidates(self, topic: int, hops: int, limit: int) -> np.ndarray:
        """The candidates of a question (module docstring), cached."""
        key = (int(topic), int(hops))
        found = self._candidates.get(key)
        if found is None:
            seen = np.zeros(self.num_entities, dtype=bool)
            seen[topic] = True
            frontier = np.asarray([topic], dtype=np.int64)
            ordered = []
            for _ in range(hops):
                _, positions = self._neighbours(frontier)
                reached = np.unique(self.adjacency.neighbors[positions])
                frontier = reached[~seen[reached]].astype(np.int64)
                seen[frontier] = True
                ordered.append(frontier)
            found = np.concatenate(ordered) if ordered else np.zeros(0, dtype=np.int64)
            self._candidates[key] = found
        return found[:limit]

    def computation_subgraph(self, seeds: np.ndarray, depth: int, fanout: int = 0,
                             generator: np.random.Generator | None = None) -> ComputationSubgraph:
        """The seeds' ``depth``-hop in-neighbourhood in hop order (module docstring); ``fanout`` > 0:
        at most that many in-edges per node and hop, sampled with ``generator``."""
        seeds = np.unique(np.asarray(seeds, dtype=np.int64))
        local = np.full(self.num_entities, -1, dtype=np.int64)
        local[seeds] = np.arange(len(seeds))
        nodes, nodes_per_hop = [seeds], [len(seeds)]
        sources, targets, types, edges_per_hop = [], [], [], []
        frontier, count = seeds, len(seeds)
        for _ in range(depth):
            if fanout > 0:
                rows, positions = sample_edges(self.adjacency, frontier, fanout,
                                               generator if generator is not None else np.random.default_rng(0))
            else:
                rows, positions = self._neighbours(frontier)
            source = self.adjacency.neighbors[positions].astype(np.int64)
            new = np.unique(source[local[source] < 0])
            local[new] = np.arange(count, count + len(new))
            count += len(new)
            sources.append(local[source])
            targets.append(local[frontier[rows]])
            types.append(self.adjacency.edge_type[positions].astype(np.int64))
            edges_per_hop.append(len(positions))
            nodes.append(new)
            nodes_per_hop.append(len(new))
            frontier = new
        edge_index = torch.from_numpy(np.stack([np.concatenate(sources or [np.zeros(0, np.int64)]),
                                                np.concatenate(targets or [np.zeros(0, np.int64)])]))
        edge_type = torch.from_numpy(np.concatenate(types or [np.zeros(0, np.int64)]))
        return ComputationSubgraph(np.concatenate(nodes), edge_index, edge_type, tuple(nodes_per_hop),
                                   tuple(edges_per_hop))


class QuestionAnswerer(nn.Module):
    """LM1 -> fusion of the topic's KM embedding at its mention (Eq. 8-9) -> LM2 (Eq. 10) -> a
    linear map of [CLS]; candidates are scored by the inner product with their KM embedding."""

    def __init__(self, backbone: Backbone):
        super().__init__()
        if backbone.variant not in SUPPORTED_VARIANTS or backbone.language is None:
            raise VariantError(f"variant {backbone.variant!r} cannot read a question; KGQA supports "
                               f"{', '.join(SUPPORTED_VARIANTS)}")
        f = backbone.hidden_size
        self.variant = backbone.variant
        self.language = copy.deepcopy(backbone.language)
        self.knowledge = copy.deepcopy(backbone.knowledge) if backbone.knowledge is not None else None
        self.fusion = copy.deepcopy(backbone.fusion) if self.knowledge is not None else None
        if self.knowledge is not None and self.fusion is None:
            self.fusion = MentionFusion(f)
        self.question_projection = nn.Linear(f, f)
        self.entity_projection = nn.Linear(f, f) if self.knowledge is None else None
        for p in self.language.lm1_parameters():  # LM1 made the frozen memory: keep them aligned
            p.requires_grad_(False)

    def entities(self, memory: FrozenMemory, edge_index, edge_type) -> torch.Tensor:
        """The candidate embedding of every entity: ``E^KM`` over the whole graph (or, for ``lm``,
        the projected description features)."""
        if self.knowledge is not None:
            return self.knowledge(memory.entities, edge_index, edge_type, memory.relations)
        return self.entity_projection(memory.entities)

    def entity_rows(self, memory: FrozenMemory, graph: QAGraph, seeds: np.ndarray, fanout: int = 0,
                    generator: np.random.Generator | None = None) -> torch.Tensor:
        """The rows of :meth:`entities` for ``seeds`` (sorted, unique), from one KM pass over their
        computation subgraph only (:mod:`jaket.tasks.kgqa.model`; ``fanout``: sampled)."""
        device = memory.entities.device
        if self.knowledge is None:
            return self.entity_projection(memory.entities[torch.from_numpy(seeds).to(device)])
        sub = graph.computation_subgraph(seeds, len(self.knowledge.layers), fanout, generator)
        x = memory.entities.index_select(0, torch.from_numpy(sub.nodes).to(device))
        return self.knowledge(x, sub.edge_index.to(device), sub.edge_type.to(device), memory.relations,
                              hops=(sub.nodes_per_hop, sub.edges_per_hop))

    def questions(self, ids, mask, span_start, span_end, topic_embedding) -> torch.Tensor:
        """The question embeddings (Eq. 8-10); the token tensors move to the model's device."""
        device = self.question_projection.weight.device
        ids, mask, span_start, span_end = (t.to(device) for t in (ids, mask, span_start, span_end))
        z = self.language.lm1(ids, mask)
        if self.knowledge is not None:
            batch = torch.arange(ids.shape[0], device=device)
            z = self.fusion(z, batch, span_start, span_end, topic_embedding,
                            torch.ones(ids.shape[0], dtype=torch.bool, device=device))
        z = self.language.lm2(z, mask)
        return self.question_projection(z[:, 0])

    def head_state(self) -> dict[str, torch.Tensor]:
        """What a fine-tuned folder stores beside the backbone: fusion and projections."""
        return {k: v for k, v in self.state_dict().items() if not k.startswith(("language.", "knowledge."))}

def encode_questions(tokenizer, questions: list[QAExample], max_length: int):
    """Token ids, mask, and the first / last token of each topic mention."""
    enc = tokenizer([q.text for q in questions], truncation=True, max_length=max_length, padding=True,
                    return_offsets_mapping=True, return_tensors="pt")
    starts, ends = [], []
    for row, q in enumerate(questions):
        offsets = enc["offset_mapping"][row].tolist()
        tokens = [i for i, (a, b) in enumerate(offsets) if b > a and a < q.topic_end and b > q.topic_start]
        starts.append(tokens[0] if tokens else 1)
        ends.append(tokens[-1] if tokens else 1)
    return enc["input_ids"], enc["attention_mask"], torch.tensor(starts), torch.tensor(ends)

def batch_logits(model: QuestionAnswerer, memory: FrozenMemory, graph: QAGraph, chunk: list[QAExample],
                 candidates: list[np.ndarray], config: KGQAConfig, *, whole_graph: bool = False,
                 generator: np.random.Generator | None = None) -> list[torch.Tensor]:
    """The candidate scores of each question of a batch (Eq. 10 then the inner products).

    The KM runs once for the batch: over the computation subgraph of all its topics and
    candidates, or with ``whole_graph`` over the whole KG (the reference the fast path is
    tested against, and the cost ``docs/performance.md`` compares it with). ``config.km_fanout`` > 0
    samples the subgraph's edges with ``generator``."""
    topics = np.asarray([q.topic for q in chunk], dtype=np.int64)
    seeds = np.unique(np.concatenate([topics] + [np.asarray(c, dtype=np.int64) for c in candidates]))
    device = memory.entities.device
    if whole_graph:
        rows = model.entities(memory, *graph.full_edges(device))
        rows = rows.index_select(0, torch.from_numpy(seeds).to(device))
    else:
        rows = model.entity_rows(memory, graph, seeds, config.km_fanout, generator)
    position = lambda ids: torch.from_numpy(np.searchsorted(seeds, ids)).to(device)  # noqa: E731
    ids, mask, s, o = encode_questions(model.language.tokenizer, chunk, config.max_length)
    qv = model.questions(ids, mask, s, o, rows.index_select(0, position(topics)))
    return [rows.index_select(0, position(np.asarray(c, dtype=np.int64))) @ qv[row]
            for row, c in enumerate(candidates)]

@torch.no_grad()
def rank_candidates(model: QuestionAnswerer, memory: FrozenMemory, graph: QAGraph, questions: list[QAExample],
                    candidates: list[np.ndarray], config: KGQAConfig, batch_size: int = 64):
    """For each question, its candidates' scores (one KM pass over the whole graph, shared by all),
    read back to the CPU as numpy."""
    model.eval()
    device = memory.entities.device
    with autocast(device, config.bf16):  # config.bf16: the passes in bf16, the scores read back in fp32
        entities = model.entities(memory, *graph.full_edges(device))
    for begin in range(0, len(questions), batch_size):
        chunk = questions[begin:begin + batch_size]
        ids, mask, s, o = encode_questions(model.language.tokenizer, chunk, config.max_length)
        cands = [np.asarray(candidates[begin + row], dtype=np.int64) for row in range(len(chunk))]
        with autocast(device, config.bf16):
            qv = model.questions(ids, mask, s, o, entities[torch.tensor([q.topic for q in chunk], device=device)])
            scores = [(entities[torch.from_numpy(cand).to(device)] @ qv[row]).float().cpu().numpy()
                      for row, cand in enumerate(cands)]
        yield from zip(cands, scores)
