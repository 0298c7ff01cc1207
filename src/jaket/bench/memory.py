"""Entity context memory refresh: descriptions per second against plain forward passes.

A refresh (:meth:`jaket.model.memory.EntityContextMemory.refresh`, Eq. 7 and 12) should cost no
more than the LM1 forward passes it needs. This benchmark encodes the same descriptions three
ways, interleaved within each repeat so that all see the same machine state:

- ``refresh``: the memory's own refresh (cached tokenisation, rows sorted by length, LM1 under
  ``no_grad``, Eq. 7 pooling, momentum blend, write into the storage);
- ``baseline``: a plain Transformers ``AutoModel`` holding only the first ``k`` layers (LM1's
  layers, same weights) over the same pre-tokenised, length-sorted batches of the same size;
- ``unsorted``: that baseline in the descriptions' natural order (every batch padded to its
  longest row), the "before" of the length-sorted batching.

It also reports the storage bytes of the memory in float32 / float16 / bfloat16 (and the rounding
error of the narrow types on real rows), the one-off tokenisation cost, and LM1's descriptions per
second at the paper's description length (64 tokens). Descriptions come from a WordNet subset
(``--source wordnet``, real glosses of varying length) or a synthetic KG. With
``--subset ROWS`` only that many rows are encoded and the full-refresh cost is projected from the
per-description cost (the scaling suite uses this for 10^4 .. 10^6 entities).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from jaket.bench.common import apply_threads_and_seed
from jaket.flags import positive_int
from jaket.kg.sources.wordnet import build_wordnet
from jaket.kg.toy import synthetic_kg
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import DTYPES, EntityContextMemory
from jaket.paths import default_model_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--source", choices=["wordnet", "synthetic"], default="wordnet")
    parser.add_argument("--entities", type=int, default=None,
                        help="KG entities (default: 4,000 WordNet synsets; quick: 600)")
    parser.add_argument("--subset", type=int, default=None, metavar="ROWS",
                        help="encode only this many rows and project the full refresh from them")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=64, help="description tokens (paper: 64)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 3)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads")
    parser.add_argument("--encoder", default=None, help="model directory (default: bundled MiniLM)")
    parser.add_argument("--random-seed", type=int, default=0)


def _load_kg(args, entities: int):
    if args.source == "wordnet":
        try:
            kg, _, _ = build_wordnet(max_entities=entities, seed=args.random_seed)
            return kg, "wordnet"
        except Exception as error:  # the WordNet builder is optional here: fall back, and say so
            print(f"WordNet unavailable ({error}); using a synthetic KG", file=sys.stderr, flush=True)
    return synthetic_kg(entities, entities * 10, seed=args.random_seed), "synthetic"


class _Clock:
    """Wall and process CPU time of a block, in seconds."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def _baseline_model(path, lm1_layers: int):
    """A Transformers ``AutoModel`` with only the first ``lm1_layers`` layers (LM1's weights)."""
    from transformers import AutoConfig, AutoModel
    from transformers.utils import logging as hf_logging

    config = AutoConfig.from_pretrained(path, local_files_only=True)
    config.num_hidden_layers = lm1_layers
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = AutoModel.from_pretrained(path, config=config, local_files_only=True,
                                          add_pooling_layer=False)
    except TypeError:
        model = AutoModel.from_pretrained(path, config=config, local_files_only=True)
    finally:
        hf_logging.set_verbosity(verbosity)
    return model.eval()


@torch.no_grad()
def _forward_passes(model, tokens, order: np.ndarray, batch_size: int) -> tuple[int, int]:
    """Plain forward passes over ``order`` in batches; returns (real tokens, padded tokens)."""
    real = padded = 0
    for begin in range(0, len(order), batch_size):
        rows = order[begin:begin + batch_size]
        ids, mask, _, _ = tokens.batch(rows)
        model(input_ids=ids, attention_mask=mask)
        real += int(mask.sum())
        padded += int(mask.numel())
    return real, padded


def _rows_to_encode(args: argparse.Namespace, num_entities: int) -> np.ndarray:
    """The entity rows the benchmark encodes: all of them, or ``--subset`` drawn at random."""
    if args.subset and args.subset < num_entities:
        rng = np.random.default_rng(args.random_seed)
        return np.sort(rng.choice(num_entities, args.subset, replace=False))
    return np.arange(num_entities)


def _timed_encodings(args: argparse.Namespace, repeats: int, memory: EntityContextMemory, language,
                     baseline, kg, entity_tokens, rows: np.ndarray, subset: np.ndarray | None):
    """The three ways of encoding ``rows``, interleaved in each repeat: (wall, CPU) seconds per
    repeat of each, and the (real, padded) tokens of the baseline's two batch orders."""
    lengths = entity_tokens.lengths_of(rows)
    sorted_order = rows[np.argsort(lengths, kind="stable")]
    # the first fill replaces (momentum 0); later ones blend (Eq. 12): time the blending kind
    memory.refresh(language, kg, batch_size=args.batch_size, max_length=args.max_length,
                   momentum=0.0, entity_subset=subset, relations=False)
    timings: dict[str, list[tuple[float, float]]] = {"refresh": [], "baseline": [], "unsorted": []}
    padding: dict[str, tuple[int, int]] = {}
    for _ in range(repeats):
        with _Clock() as clock:
            memory.refresh(language, kg, batch_size=args.batch_size, max_length=args.max_length,
                           momentum=0.8, entity_subset=subset, relations=False)
        timings["refresh"].append((clock.wall, clock.cpu))
        with _Clock() as clock:
            padding["sorted"] = _forward_passes(baseline, entity_tokens, sorted_order, args.batch_size)
        timings["baseline"].append((clock.wall, clock.cpu))
        with _Clock() as clock:
            padding["unsorted"] = _forward_passes(baseline, entity_tokens, rows, args.batch_size)
        timings["unsorted"].append((clock.wall, clock.cpu))
    return timings, padding


def _rate_figures(timings: dict[str, list[tuple[float, float]]], padding: dict[str, tuple[int, int]],
                  n: int) -> dict:
    """Descriptions per second of each way (median, min, max over repeats), CPU per description,
    the ratios per repeat (same machine state) then their median, and the padding fractions."""
    figures: dict = {}
    for name, values in timings.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        figures[f"{name}_descriptions_per_second"] = n / statistics.median(walls)
        figures[f"{name}_descriptions_per_second_min"] = n / max(walls)
        figures[f"{name}_descriptions_per_second_max"] = n / min(walls)
        figures[f"{name}_cpu_ms_per_description"] = 1000 * statistics.median(cpus) / n
    figures["refresh_over_baseline_time"] = statistics.median(
        r[0] / b[0] for r, b in zip(timings["refresh"], timings["baseline"]))
    figures["refresh_over_baseline_cpu"] = statistics.median(
        r[1] / b[1] for r, b in zip(timings["refresh"], timings["baseline"]))
    figures["sorted_speedup_over_unsorted"] = statistics.median(
        u[0] / b[0] for u, b in zip(timings["unsorted"], timings["baseline"]))
    figures["sorted_speedup_over_unsorted_cpu"] = statistics.median(
        u[1] / b[1] for u, b in zip(timings["unsorted"], timings["baseline"]))
    figures["padding_fraction_sorted"] = 1 - padding["sorted"][0] / padding["sorted"][1]
    figures["padding_fraction_unsorted"] = 1 - padding["unsorted"][0] / padding["unsorted"][1]
    return figures


def _lm1_figures(language: SplitLanguageModel, batch_size: int, repeats: int, length: int = 64) -> dict:
    """LM1 alone at the paper's description length: ``length``-token rows in batches of
    ``batch_size``, after one untimed pass."""
    ids = torch.randint(1000, language.tokenizer.vocab_size, (batch_size, length))
    mask = torch.ones_like(ids)
    with torch.no_grad():
        language.lm1(ids, mask)
        walls, cpus = [], []
        for _ in range(max(3, repeats)):
            with _Clock() as clock:
                language.lm1(ids, mask)
            walls.append(clock.wall)
            cpus.append(clock.cpu)
    return {"lm1_descriptions_per_second_at_64_tokens": batch_size / statistics.median(walls),
            "lm1_cpu_ms_per_description_at_64_tokens": 1000 * statistics.median(cpus) / batch_size}


def _storage_figures(memory: EntityContextMemory, kg, hidden: int, rows: np.ndarray) -> dict:
    """Bytes of the memory per dtype and the rounding error of the narrow types on real rows."""
    figures: dict = {}
    reference = memory.entities[torch.as_tensor(rows[: min(len(rows), 4096)])].float()
    scale = float(reference.abs().mean()) or 1.0
    for name, dtype in DTYPES.items():
        store = EntityContextMemory(kg.num_entities, kg.num_relations, hidden, dtype=name)
        figures[f"memory_bytes_{name}"] = store.nbytes
        figures[f"memory_bytes_per_entity_{name}"] = store.nbytes / max(1, kg.num_entities)
        if name != "float32":
            rounded = reference.to(dtype).float()
            figures[f"memory_{name}_mean_relative_error"] = float((rounded - reference).abs().mean()) / scale
    return figures


def run(args: argparse.Namespace) -> dict:
    apply_threads_and_seed(args)
    repeats = args.repeats or (2 if args.quick else 3)
    entities = args.entities or (600 if args.quick else 4000)
    path = args.encoder or default_model_path()
    language = SplitLanguageModel.from_pretrained(path).eval()
    baseline = _baseline_model(path, language.lm1_layers)
    kg, source = _load_kg(args, entities)
    figures: dict = {"source": source, "entities": kg.num_entities, "relations": kg.num_relations,
                     "hidden": language.hidden_size, "lm1_layers": language.lm1_layers,
                     "batch_size": args.batch_size, "max_length": args.max_length,
                     "threads": torch.get_num_threads(), "repeats": repeats}

    # one-off: tokenising every description (kept per KG by the memory; tokenised as rows are asked for)
    memory = EntityContextMemory(kg.num_entities, kg.num_relations, language.hidden_size)
    with _Clock() as clock:
        entity_tokens, relation_tokens = memory.description_tokens(language, kg, args.max_length)
        entity_tokens.ensure()
        relation_tokens.ensure()
    figures["tokenize_seconds"] = clock.wall
    figures["tokenize_descriptions_per_second"] = (kg.num_entities + kg.num_relations) / clock.wall
    rows = _rows_to_encode(args, kg.num_entities)
    subset = None if len(rows) == kg.num_entities else rows
    lengths = entity_tokens.lengths_of(rows)
    figures["encoded_rows"] = int(len(rows))
    figures["description_tokens_mean"] = float(lengths.mean())
    figures["description_tokens_max"] = int(lengths.max())

    timings, padding = _timed_encodings(args, repeats, memory, language, baseline, kg, entity_tokens,
                                        rows, subset)
    figures.update(_rate_figures(timings, padding, len(rows)))
    per_description = statistics.median(w for w, _ in timings["refresh"]) / len(rows)
    figures["refresh_ms_per_description"] = 1000 * per_description
    figures["full_refresh_seconds"] = per_description * kg.num_entities + (
        figures["tokenize_seconds"] if subset is not None else 0.0)
    figures["full_refresh_projected"] = subset is not None
    figures.update(_lm1_figures(language, args.batch_size, repeats))
    figures.update(_storage_figures(memory, kg, language.hidden_size, rows))
    return figures
