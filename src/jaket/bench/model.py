"""Cost of each model stage: LM1, knowledge module, fusion, LM2 (forward and forward+backward).

The paper's "Computation Analysis" counts the knowledge module (KM) at under 1/7 of the language
module for RoBERTa-base (r = 10 neighbours per hop, 2 layers) and about 1/30 with r = 5. This
benchmark times the four stages of one :class:`jaket.model.jaket.JaketModel` step on a batch of
``--batch`` sequences of ``--length`` tokens with about ``--mentions`` mentions each, whose
entities (drawn uniformly from a synthetic power-law KG) seed a ``--fanout`` x ``--fanout``
neighbourhood, and reports every stage's median milliseconds, the ratio KM / (LM1 + LM2)
measured within each repeat (median over repeats), and the same ratio from flop counts.

``--shape paper`` replaces the bundled MiniLM (6 layers, hidden 384) by a randomly initialised
encoder of RoBERTa-base's shape (12 layers, hidden 768: timing needs no trained weights), so the
paper's ratio can be checked at the paper's widths. ``--km-variant trimmed`` also times the
layer-trimmed knowledge module (layer ``l`` only updates the nodes that layer ``l + 1`` reads,
``KnowledgeModule.forward(..., hops=...)``, what the model uses); ``--km-only`` skips the language module (used by the
scaling suite: KM milliseconds per sampled entity against the KG size).
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch

from jaket.bench.common import apply_threads_and_seed
from jaket.flags import positive_int
from jaket.kg.corpus import TextBatch
from jaket.kg.sampling import Subgraph, sample_neighbors
from jaket.kg.toy import synthetic_kg
from jaket.model.fusion import MentionFusion
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="small sizes (8 sequences, 3 repeats) for a smoke run")
    parser.add_argument("--batch", type=int, default=None, help="sequences per batch (default 32)")
    parser.add_argument("--length", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--mentions", type=int, default=25, help="mentions per sequence (about N/5)")
    parser.add_argument("--fanout", type=int, default=10, help="neighbours per hop r (paper: 10; 5)")
    parser.add_argument("--km-layers", type=int, default=2)
    parser.add_argument("--km-heads", type=int, default=8)
    parser.add_argument("--entities", type=int, default=100_000,
                        help="entities of the synthetic KG the mentions point into")
    parser.add_argument("--triples-per-entity", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 7)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads")
    parser.add_argument("--shape", choices=["minilm", "paper"], default="minilm",
                        help="minilm: the bundled MiniLM; paper: random RoBERTa-base-shaped encoder")
    parser.add_argument("--encoder", default=None, help="model directory (default: bundled MiniLM)")
    parser.add_argument("--km-only", action="store_true",
                        help="time the knowledge module only (no language model is loaded)")
    parser.add_argument("--km-variant", choices=["full", "trimmed", "both"], default="both",
                        help="also time the layer-trimmed knowledge module")
    parser.add_argument("--no-backward", action="store_true", help="forward passes only")
    parser.add_argument("--random-seed", type=int, default=0)


# ---------------------------------------------------------------------------- flop counts
def encoder_flops_per_sequence(layers: int, hidden: int, intermediate: int, length: int) -> float:
    """Forward flops of ``layers`` transformer layers on one sequence (2 flops per multiply-add):
    Q, K, V, output projections (4H^2), the feed-forward (2HI) and the two attention products
    (2LH) per token and layer. RoBERTa-base at L = 128 gives 22.3e9, the paper's "over 22 billion"."""
    per_token = 2 * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * 2 * length * hidden
    return float(layers * length * per_token)


def paper_km_flops_per_sequence(length: int, hidden: int, fanout: int, layers: int) -> float:
    """The paper's estimate N/5 x r^L x 2H^2 (N = length)."""
    return length / 5 * fanout ** layers * 2 * hidden * hidden


def implementation_km_flops(nodes_per_layer: list[int], edges_per_layer: list[int], hidden: int,
                            edge_types: int, heads: int, projections_per_layer: int = 1) -> float:
    """Forward flops of our CompGATConv stack (``add`` composition): per layer, W over the layer's
    nodes (``projections_per_layer`` times) and the 2P edge-type rows, and per edge the message
    gather-add, the two attention dot products, the weighting and the scatter-add (~6F)."""
    total = 0.0
    for n, e in zip(nodes_per_layer, edges_per_layer):
        total += projections_per_layer * n * 2 * hidden * hidden + edge_types * 2 * hidden * hidden
        total += e * 6 * hidden + e * heads * 8  # messages + softmax
        total += n * 8 * hidden  # residual, activation, LayerNorm
    return total


# ---------------------------------------------------------------------------- inputs
def make_text_batch(batch: int, length: int, mentions: int, vocab_size: int, special: int,
                    num_entities: int, rng: np.random.Generator):
    """Random token ids with ``mentions`` non-overlapping 1-3 token mentions per sequence, one in
    each of ``mentions`` equal slots of the sequence; entities drawn uniformly."""
    ids = rng.integers(special, vocab_size, size=(batch, length))
    ids[:, 0], ids[:, -1] = 101, 102
    slot = max(1, (length - 2) // max(1, mentions))
    per = min(mentions, (length - 2) // slot)
    m_batch, m_start, m_end = [], [], []
    for b in range(batch):
        for k in range(per):
            width = int(rng.integers(1, min(3, slot) + 1))
            start = 1 + k * slot + int(rng.integers(0, slot - width + 1))
            m_batch.append(b)
            m_start.append(start)
            m_end.append(start + width - 1)
    entity = rng.integers(0, num_entities, size=len(m_batch))
    as_long = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.long)  # noqa: E731
    return TextBatch(torch.from_numpy(ids).long(), torch.ones(batch, length, dtype=torch.long),
                     as_long(m_batch), as_long(m_start), as_long(m_end), as_long(entity))


# ---------------------------------------------------------------------------- trimmed KM
# ---------------------------------------------------------------------------- timing
_CPU_MS: dict[int, float] = {}


def _timed(function) -> float:
    """Wall milliseconds of ``function()``; its process CPU milliseconds go to ``_CPU_MS[0]``."""
    began, cpu = time.perf_counter(), time.process_time()
    function()
    _CPU_MS[0] = (time.process_time() - cpu) * 1000.0
    return (time.perf_counter() - began) * 1000.0


def _t(cpu: dict, name: str, function) -> float:
    wall = _timed(function)
    cpu[name] = _CPU_MS[0]
    return wall


def _summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _paper_shape_language(tokenizer_path):
    """A random RoBERTa-base-shaped BERT (12 x 768, FFN 3072) with the MiniLM tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path, local_files_only=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=768, num_hidden_layers=12,
                        num_attention_heads=12, intermediate_size=3072, max_position_embeddings=514)
    torch.manual_seed(0)
    return SplitLanguageModel(BertForMaskedLM(config), tokenizer)


def _language(args: argparse.Namespace):
    """The language module timed (None with ``--km-only``), its hidden size, vocabulary size and
    Transformers config (for the flop count; None with ``--km-only``)."""
    if args.km_only:
        return None, (768 if args.shape == "paper" else 384), 30522, None
    if args.shape == "paper":
        language = _paper_shape_language(args.encoder or default_model_path())
    else:
        language = SplitLanguageModel.from_pretrained(args.encoder or default_model_path())
    return language, language.hidden_size, language.tokenizer.vocab_size, language.config


@dataclass
class _Step:
    """One model step's inputs and modules: the text batch, the sampled subgraph of its mentions'
    entities, the memory rows E^context (float16 storage, as a run may keep them) and the stages."""

    language: SplitLanguageModel | None
    knowledge: torch.nn.Module
    fusion: MentionFusion
    text: TextBatch
    subgraph: Subgraph
    memory_rows: torch.Tensor
    num_relations: int
    length: int

    def __post_init__(self) -> None:
        self.x = self.memory_rows[self.subgraph.node_ids].float()
        self.hops = (self.subgraph.nodes_per_hop, self.subgraph.edges_per_hop)

    def km(self, trimmed: bool = False) -> torch.Tensor:
        """The knowledge module over the subgraph (Eq. 1-5); ``trimmed``: only the nodes each
        next layer reads (exact at the seeds)."""
        return self.knowledge(self.x, self.subgraph.edge_index, self.subgraph.edge_type, None,
                              num_relations=self.num_relations, hops=self.hops if trimmed else None)


def _forward_times(step: _Step, want_trim: bool, cpu: dict) -> dict[str, float]:
    """Wall milliseconds of each stage's forward, under no_grad (CPU milliseconds into ``cpu``)."""
    times: dict[str, float] = {}
    text, language, subgraph = step.text, step.language, step.subgraph
    with torch.no_grad():
        if language is not None:
            language.eval()
            out: dict = {}
            times["lm1_forward"] = _t(cpu, "lm1_forward", lambda: out.__setitem__(
                "z", language.lm1(text.input_ids, text.attention_mask)))
        times["gather_forward"] = _t(cpu, "gather_forward", lambda: step.memory_rows[subgraph.node_ids].float())
        step.knowledge.eval()
        out_km: dict = {}
        times["km_forward"] = _t(cpu, "km_forward", lambda: out_km.__setitem__("e", step.km()))
        if want_trim:
            times["km_trimmed_forward"] = _t(cpu, "km_trimmed_forward", lambda: step.km(trimmed=True))
        if language is not None:
            emb = out_km["e"][subgraph.seed_local]
            times["fusion_forward"] = _t(cpu, "fusion_forward", lambda: out.__setitem__("z2", step.fusion(
                out["z"], text.mention_batch, text.mention_start, text.mention_end, emb)))
            times["lm2_forward"] = _t(cpu, "lm2_forward", lambda: language.lm2(out["z2"], text.attention_mask))
    return times


def _backward_times(step: _Step, want_trim: bool, cpu: dict) -> dict[str, float]:
    """Wall milliseconds of each stage's forward + backward (CPU milliseconds into ``cpu``); the
    gradients are dropped after."""
    times: dict[str, float] = {}
    text, language = step.text, step.language

    def backward(function):
        def forward_backward():
            out = function()
            out.backward(torch.ones_like(out))
        return forward_backward

    if language is not None:
        language.train()
        times["lm1_forward_backward"] = _t(cpu, "lm1_forward_backward", backward(
            lambda: language.lm1(text.input_ids, text.attention_mask)))
    step.knowledge.train()
    times["km_forward_backward"] = _t(cpu, "km_forward_backward", backward(step.km))
    if want_trim:
        times["km_trimmed_forward_backward"] = _t(cpu, "km_trimmed_forward_backward",
                                                  backward(lambda: step.km(trimmed=True)))
    if language is not None:
        hidden = step.x.shape[1]
        z0 = torch.randn(len(text.input_ids), step.length, hidden, requires_grad=True)
        emb0 = torch.randn(len(step.subgraph.seed_local), hidden, requires_grad=True)
        times["fusion_forward_backward"] = _t(cpu, "fusion_forward_backward", backward(
            lambda: step.fusion(z0, text.mention_batch, text.mention_start, text.mention_end, emb0)))
        times["lm2_forward_backward"] = _t(cpu, "lm2_forward_backward", backward(
            lambda: language.lm2(z0, text.attention_mask)))
    for module in (language, step.knowledge, step.fusion):
        if module is not None:
            module.zero_grad(set_to_none=True)
    return times


def _time_stages(step: _Step, repeats: int, want_trim: bool, backward: bool):
    """``repeats`` timed rounds after a warm-up: per stage the wall and CPU milliseconds of each
    round, and ``{km}_over_lm_{phase}[_cpu]``: each round's ratio of a KM stage to LM1 + LM2."""
    stages: dict[str, list[float]] = {}
    cpu_stages: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for repeat in range(repeats + 1):  # the first round is a warm-up
        cpu: dict[str, float] = {}
        times = _forward_times(step, want_trim, cpu)
        if backward:
            times.update(_backward_times(step, want_trim, cpu))
        if repeat == 0:
            continue
        for name, value in times.items():
            stages.setdefault(name, []).append(value)
            cpu_stages.setdefault(name, []).append(cpu[name])
        if step.language is not None:
            for phase in ("forward",) + (("forward_backward",) if backward else ()):
                for km in ("km",) + (("km_trimmed",) if want_trim else ()):
                    for clock, suffix in ((times, ""), (cpu, "_cpu")):
                        lm = clock[f"lm1_{phase}"] + clock[f"lm2_{phase}"]
                        ratios.setdefault(f"{km}_over_lm_{phase}{suffix}", []).append(clock[f"{km}_{phase}"] / lm)
    return stages, cpu_stages, ratios


def _stage_figures(stages: dict, cpu_stages: dict, ratios: dict, subgraph: Subgraph, want_trim: bool) -> dict:
    """Median (min, max) milliseconds of each stage, the KM's per node / edge / seed, and the
    median of each per-round ratio."""
    figures: dict = {}
    for name, values in stages.items():
        s = _summary(values)
        figures[f"{name}_ms"] = round(s["median"], 3)
        figures[f"{name}_ms_min"] = round(s["min"], 3)
        figures[f"{name}_ms_max"] = round(s["max"], 3)
        figures[f"{name}_cpu_ms"] = round(statistics.median(cpu_stages[name]), 3)
    n, e = subgraph.num_nodes, subgraph.num_edges
    figures["km_forward_ms_per_node"] = figures["km_forward_ms"] / max(1, n)
    figures["km_forward_ms_per_edge"] = figures["km_forward_ms"] / max(1, e)
    figures["km_forward_cpu_ms_per_node"] = figures["km_forward_cpu_ms"] / max(1, n)
    if want_trim:
        figures["km_trimmed_forward_ms_per_seed"] = figures["km_trimmed_forward_ms"] / max(1, subgraph.num_seeds)
    for name, values in ratios.items():
        figures[name] = statistics.median(values)
    return figures


def _flop_figures(args: argparse.Namespace, step: _Step, cfg, timed: dict) -> dict:
    """Flop counts per sequence: the paper's KM estimate, our KM (full and layer-trimmed), the
    language module's (Eq. 6, 10: every encoder layer) and what the timings make of them."""
    batch, hidden = len(step.text.input_ids), step.x.shape[1]
    subgraph, layers = step.subgraph, args.km_layers
    nodes_per_hop, edges_per_hop = step.hops
    edge_types = 2 * step.num_relations
    figures: dict = {"paper_km_flops_per_sequence": paper_km_flops_per_sequence(args.length, hidden,
                                                                                 args.fanout, layers)}
    trimmed_nodes = [sum(nodes_per_hop[:layers - d]) for d in range(layers)]
    trimmed_edges = [sum(edges_per_hop[:layers - d]) for d in range(layers)]
    figures["km_flops_per_sequence"] = implementation_km_flops(
        [subgraph.num_nodes] * layers, [subgraph.num_edges] * layers, hidden, edge_types, args.km_heads) / batch
    figures["km_trimmed_flops_per_sequence"] = implementation_km_flops(
        trimmed_nodes, trimmed_edges, hidden, edge_types, args.km_heads) / batch
    figures["mentions_per_sequence"] = len(step.text.mention_entity) / batch
    if cfg is not None:
        lm_flops = encoder_flops_per_sequence(cfg.num_hidden_layers, cfg.hidden_size,
                                              cfg.intermediate_size, args.length)
        figures["lm_layers"] = cfg.num_hidden_layers
        figures["lm_flops_per_sequence"] = lm_flops
        figures["paper_formula_km_over_lm"] = figures["paper_km_flops_per_sequence"] / lm_flops
        figures["flops_km_over_lm"] = figures["km_flops_per_sequence"] / lm_flops
        figures["flops_km_trimmed_over_lm"] = figures["km_trimmed_flops_per_sequence"] / lm_flops
        lm_ms = timed["lm1_forward_ms"] + timed["lm2_forward_ms"]
        figures["lm_gflops_per_second"] = lm_flops * batch / (lm_ms / 1000) / 1e9
        figures["km_gflops_per_second"] = figures["km_flops_per_sequence"] * batch / (
            timed["km_forward_ms"] / 1000) / 1e9
    return figures


def run(args: argparse.Namespace) -> dict:
    # --help: `jaket bench` registers this module; torch_geometric (seconds) loads when it runs
    from jaket.model.knowledge import KnowledgeModule

    apply_threads_and_seed(args)
    batch = args.batch or (8 if args.quick else 32)
    repeats = args.repeats or (3 if args.quick else 7)
    entities = args.entities if not args.quick or args.entities != 100_000 else 20_000
    rng = np.random.default_rng(args.random_seed)
    language, hidden, vocab, cfg = _language(args)

    began = time.perf_counter()
    kg = synthetic_kg(entities, entities * args.triples_per_entity, seed=args.random_seed)
    kg.adjacency
    kg_seconds = time.perf_counter() - began
    text = make_text_batch(batch, args.length, args.mentions, vocab, 1000, kg.num_entities, rng)
    sample_ms = []
    for _ in range(3):
        began = time.perf_counter()
        subgraph = sample_neighbors(kg, text.mention_entity.numpy(), (args.fanout,) * args.km_layers, rng)
        sample_ms.append((time.perf_counter() - began) * 1000)

    knowledge = KnowledgeModule(hidden, num_layers=args.km_layers, heads=args.km_heads)
    fusion = MentionFusion(hidden)
    memory_rows = torch.randn(kg.num_entities, hidden).to(torch.float16)  # E^context, fp16 storage
    step = _Step(language, knowledge, fusion, text, subgraph, memory_rows, kg.num_relations, args.length)
    with torch.no_grad():  # the trimmed variant is exact at the seeds
        trimmed_error = float((step.km()[: subgraph.num_seeds] - step.km(trimmed=True)).abs().max())
    want_trim = args.km_variant in ("trimmed", "both")
    stages, cpu_stages, ratios = _time_stages(step, repeats, want_trim, not args.no_backward)

    figures: dict = {
        "shape": args.shape,
        "hidden": hidden, "batch": batch, "length": args.length,
        "mentions": len(text.mention_entity), "fanout": args.fanout, "km_layers": args.km_layers,
        "km_heads": args.km_heads, "kg_entities": kg.num_entities, "kg_triples": kg.num_triples,
        "kg_build_seconds": round(kg_seconds, 3),
        "subgraph_nodes": subgraph.num_nodes, "subgraph_edges": subgraph.num_edges,
        "unique_seeds": subgraph.num_seeds,
        "nodes_per_hop": subgraph.nodes_per_hop, "edges_per_hop": subgraph.edges_per_hop,
        "sample_ms": round(statistics.median(sample_ms), 3),
        "threads": torch.get_num_threads(), "repeats": repeats,
        "trimmed_max_abs_difference": trimmed_error,
    }
    figures.update(_stage_figures(stages, cpu_stages, ratios, subgraph, want_trim))
    figures.update(_flop_figures(args, step, cfg, figures))
    return figures
