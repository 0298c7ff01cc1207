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

import numpy as np
import torch

from jaket.kg.corpus import TextBatch
from jaket.kg.sampling import sample_neighbors
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
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
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


def run(args: argparse.Namespace) -> dict:
    # --help: `jaket bench` registers this module; torch_geometric (seconds) loads when it runs
    from jaket.model.knowledge import KnowledgeModule

    if args.threads:
        torch.set_num_threads(args.threads)
    batch = args.batch or (8 if args.quick else 32)
    repeats = args.repeats or (3 if args.quick else 7)
    entities = args.entities if not args.quick or args.entities != 100_000 else 20_000
    rng = np.random.default_rng(args.random_seed)
    torch.manual_seed(args.random_seed)

    language = None
    if not args.km_only:
        if args.shape == "paper":
            language = _paper_shape_language(args.encoder or default_model_path())
        else:
            language = SplitLanguageModel.from_pretrained(args.encoder or default_model_path())
        hidden = language.hidden_size
        vocab = language.tokenizer.vocab_size
        cfg = language.config
    else:
        hidden = 768 if args.shape == "paper" else 384
        vocab = 30522
        cfg = None

    began = time.perf_counter()
    kg = synthetic_kg(entities, entities * args.triples_per_entity, seed=args.random_seed)
    kg.adjacency
    kg_seconds = time.perf_counter() - began
    text = make_text_batch(batch, args.length, args.mentions, vocab, 1000, kg.num_entities, rng)
    fanouts = (args.fanout,) * args.km_layers
    sample_ms = []
    for _ in range(3):
        began = time.perf_counter()
        subgraph = sample_neighbors(kg, text.mention_entity.numpy(), fanouts, rng)
        sample_ms.append((time.perf_counter() - began) * 1000)
    n, e = subgraph.num_nodes, subgraph.num_edges
    nodes_per_hop, edges_per_hop = subgraph.nodes_per_hop, subgraph.edges_per_hop

    knowledge = KnowledgeModule(hidden, num_layers=args.km_layers, heads=args.km_heads)
    fusion = MentionFusion(hidden)
    memory_rows = torch.randn(kg.num_entities, hidden).to(torch.float16)  # E^context, fp16 storage
    x = memory_rows[subgraph.node_ids].float()
    mention_node = subgraph.seed_local
    p = kg.num_relations

    def km_forward():
        return knowledge(x, subgraph.edge_index, subgraph.edge_type, None, num_relations=p)

    def km_trimmed():
        return knowledge(x, subgraph.edge_index, subgraph.edge_type, None, num_relations=p,
                         hops=(nodes_per_hop, edges_per_hop))

    with torch.no_grad():  # the trimmed variant is exact at the seeds
        full_out = km_forward()[: subgraph.num_seeds]
        trimmed_out = km_trimmed()
    trimmed_error = float((full_out - trimmed_out).abs().max())

    stages: dict[str, list[float]] = {}
    cpu_stages: dict[str, list[float]] = {}

    def record(name, value, cpu):
        stages.setdefault(name, []).append(value)
        cpu_stages.setdefault(name, []).append(cpu)

    #: ``{km}_over_lm_{phase}[_cpu]`` -> per-repeat ratio of a KM stage to LM1 + LM2
    ratios: dict[str, list[float]] = {}
    want_trim = args.km_variant in ("trimmed", "both")
    for repeat in range(repeats + 1):  # the first round is a warm-up
        times: dict[str, float] = {}
        cpu: dict[str, float] = {}
        with torch.no_grad():
            if language is not None:
                language.eval()
                out: dict = {}
                times["lm1_forward"] = _t(cpu, "lm1_forward", lambda: out.__setitem__(
                    "z", language.lm1(text.input_ids, text.attention_mask)))
            times["gather_forward"] = _t(cpu, "gather_forward", lambda: memory_rows[subgraph.node_ids].float())
            knowledge.eval()
            out_km: dict = {}
            times["km_forward"] = _t(cpu, "km_forward", lambda: out_km.__setitem__("e", km_forward()))
            if want_trim:
                times["km_trimmed_forward"] = _t(cpu, "km_trimmed_forward", km_trimmed)
            if language is not None:
                emb = out_km["e"][mention_node]
                times["fusion_forward"] = _t(cpu, "fusion_forward", lambda: out.__setitem__("z2", fusion(
                    out["z"], text.mention_batch, text.mention_start, text.mention_end, emb)))
                times["lm2_forward"] = _t(cpu, "lm2_forward", lambda: language.lm2(out["z2"], text.attention_mask))
        if not args.no_backward:
            if language is not None:
                language.train()

                def lm1_fb():
                    z = language.lm1(text.input_ids, text.attention_mask)
                    z.backward(torch.ones_like(z))

                times["lm1_forward_backward"] = _t(cpu, "lm1_forward_backward", lm1_fb)
            knowledge.train()

            def km_fb():
                out = km_forward()
                out.backward(torch.ones_like(out))

            times["km_forward_backward"] = _t(cpu, "km_forward_backward", km_fb)
            if want_trim:
                def km_trim_fb():
                    out = km_trimmed()
                    out.backward(torch.ones_like(out))

                times["km_trimmed_forward_backward"] = _t(cpu, "km_trimmed_forward_backward", km_trim_fb)
            if language is not None:
                z0 = torch.randn(batch, args.length, hidden, requires_grad=True)
                emb0 = torch.randn(len(mention_node), hidden, requires_grad=True)

                def fusion_fb():
                    out = fusion(z0, text.mention_batch, text.mention_start, text.mention_end, emb0)
                    out.backward(torch.ones_like(out))

                times["fusion_forward_backward"] = _t(cpu, "fusion_forward_backward", fusion_fb)

                def lm2_fb():
                    out = language.lm2(z0, text.attention_mask)
                    out.backward(torch.ones_like(out))

                times["lm2_forward_backward"] = _t(cpu, "lm2_forward_backward", lm2_fb)
            for module in (language, knowledge, fusion):
                if module is not None:
                    module.zero_grad(set_to_none=True)
        if repeat == 0:
            continue
        for name, value in times.items():
            record(name, value, cpu[name])
        if language is not None:
            for phase in ("forward",) + (() if args.no_backward else ("forward_backward",)):
                for km in ("km",) + (("km_trimmed",) if want_trim else ()):
                    for clock, suffix in ((times, ""), (cpu, "_cpu")):
                        lm = clock[f"lm1_{phase}"] + clock[f"lm2_{phase}"]
                        ratios.setdefault(f"{km}_over_lm_{phase}{suffix}", []).append(clock[f"{km}_{phase}"] / lm)

    figures: dict = {
        "shape": args.shape,
        "hidden": hidden, "batch": batch, "length": args.length,
        "mentions": len(text.mention_entity), "fanout": args.fanout, "km_layers": args.km_layers,
        "km_heads": args.km_heads, "kg_entities": kg.num_entities, "kg_triples": kg.num_triples,
        "kg_build_seconds": round(kg_seconds, 3),
        "subgraph_nodes": n, "subgraph_edges": e, "unique_seeds": subgraph.num_seeds,
        "nodes_per_hop": nodes_per_hop, "edges_per_hop": edges_per_hop,
        "sample_ms": round(statistics.median(sample_ms), 3),
        "threads": torch.get_num_threads(), "repeats": repeats,
        "trimmed_max_abs_difference": trimmed_error,
    }
    for name, values in stages.items():
        s = _summary(values)
        figures[f"{name}_ms"] = round(s["median"], 3)
        figures[f"{name}_ms_min"] = round(s["min"], 3)
        figures[f"{name}_ms_max"] = round(s["max"], 3)
        figures[f"{name}_cpu_ms"] = round(statistics.median(cpu_stages[name]), 3)
    figures["km_forward_ms_per_node"] = figures["km_forward_ms"] / max(1, n)
    figures["km_forward_ms_per_edge"] = figures["km_forward_ms"] / max(1, e)
    figures["km_forward_cpu_ms_per_node"] = figures["km_forward_cpu_ms"] / max(1, n)
    if want_trim:
        figures["km_trimmed_forward_ms_per_seed"] = figures["km_trimmed_forward_ms"] / max(1, subgraph.num_seeds)
    for name, values in ratios.items():
        figures[name] = statistics.median(values)
    # flop counts: the paper's estimate, ours, and the language module's
    per_seq_mentions = len(text.mention_entity) / batch
    figures["paper_km_flops_per_sequence"] = paper_km_flops_per_sequence(args.length, hidden,
                                                                         args.fanout, args.km_layers)
    layers_nodes_full = [n] * args.km_layers
    layers_edges_full = [e] * args.km_layers
    trimmed_nodes = [sum(nodes_per_hop[:args.km_layers - d]) for d in range(args.km_layers)]
    trimmed_edges = [sum(edges_per_hop[:args.km_layers - d]) for d in range(args.km_layers)]
    figures["km_flops_per_sequence"] = implementation_km_flops(
        layers_nodes_full, layers_edges_full, hidden, 2 * p, args.km_heads) / batch
    figures["km_trimmed_flops_per_sequence"] = implementation_km_flops(
        trimmed_nodes, trimmed_edges, hidden, 2 * p, args.km_heads) / batch
    figures["mentions_per_sequence"] = per_seq_mentions
    if cfg is not None:
        lm_flops = encoder_flops_per_sequence(cfg.num_hidden_layers, cfg.hidden_size,
                                              cfg.intermediate_size, args.length)
        figures["lm_layers"] = cfg.num_hidden_layers
        figures["lm_flops_per_sequence"] = lm_flops
        figures["paper_formula_km_over_lm"] = figures["paper_km_flops_per_sequence"] / lm_flops
        figures["flops_km_over_lm"] = figures["km_flops_per_sequence"] / lm_flops
        figures["flops_km_trimmed_over_lm"] = figures["km_trimmed_flops_per_sequence"] / lm_flops
        lm_ms = figures["lm1_forward_ms"] + figures["lm2_forward_ms"]
        figures["lm_gflops_per_second"] = lm_flops * batch / (lm_ms / 1000) / 1e9
        figures["km_gflops_per_second"] = figures["km_flops_per_sequence"] * batch / (
            figures["km_forward_ms"] / 1000) / 1e9
    return figures
