"""The sense-text pass of WSD and ``jaket link --scorer text+kg``: texts per second, before and after.

:func:`jaket.senses.texts.text_vectors` reads each sense's text (names, description,
usage examples) through LM1 + LM2. This benchmark times, on the same WordNet sense texts (a seeded
sample of every synset's text with its usage examples, as word-sense disambiguation reads them),
interleaved within each repeat so that every side sees the same machine state:

- ``before``: the pass as it was until 2026-12 (kept here only, to be measured against): batches of
  64 texts in the order given, each padded to its longest, no cache, always float32 (it ignored
  ``--precision``);
- ``after``: :func:`text_vectors` as it is (tokenised once, length-sorted batches of
  ``--batch-size``, results put back in order) under ``--precision``, without the cache;
- ``after_fp32`` (with ``--precision bf16`` only): the same in float32, which splits the speed-up
  into its two parts, the sorting and bf16;
- ``after, other batch sizes``: the same at each of ``--batch-sizes`` (the size the machine likes);
- ``cache, warm``: the texts found in the text-vector cache (:class:`jaket.model.memory_cache.TextVectorCache`)
  filled by a first pass: what a second run pays.

It reports the largest absolute difference between the ``before`` and ``after`` vectors (fp32: float
noise, the sorting changes nothing else) and the padding share of both batchings. ``--precision
bf16`` runs the new pass under bf16 autocast (only worth it where bf16 is native) and also reports how
far its vectors are from float32's. ``--wsd DATA``
also times word-sense disambiguation end to end (``--variants lm``, the bundled MiniLM unless
``--encoder``) on a WSD framework file, from an empty cache and again warm: targets per second.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from jaket.bench.common import apply_threads_and_seed, jaket_cache
from jaket.flags import positive_int
from jaket.model.language import SplitLanguageModel
from jaket.model.memory import length_sorted_batches
from jaket.model.memory_cache import TextVectorCache
from jaket.paths import default_model_path
from jaket.senses.texts import TEXT_BATCH, sense_text, text_vectors


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--texts", type=int, default=None, help="sense texts (default 2,000; quick: 256)")
    parser.add_argument("--batch-size", type=int, default=None, help="the pass's batch (default: its own)")
    parser.add_argument("--batch-sizes", default="32,128", help="other batch sizes of the new pass to time")
    parser.add_argument("--max-length", type=int, default=128, help="tokens read of a text (WSD: 128)")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 3; quick: 1)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads")
    parser.add_argument("--encoder", default=None, help="model directory (default: bundled MiniLM)")
    parser.add_argument("--wsd", default=None, metavar="DATA",
                        help="also time WSD end to end on this *.data.xml (its gold key beside it)")
    parser.add_argument("--random-seed", type=int, default=0)


@torch.no_grad()
def before_text_vectors(language, texts: list[str], *, max_length: int = 128, batch_size: int = 64) -> torch.Tensor:
    """The sense-text pass before length sorting (the measured "before"; not used by jaket)."""
    language.eval()
    device = next(language.parameters()).device
    out = []
    for begin in range(0, len(texts), batch_size):
        encoded = language.tokenizer(texts[begin:begin + batch_size], padding=True, truncation=True,
                                     max_length=max_length, return_tensors="pt")
        mask = encoded["attention_mask"].to(device)
        hidden = language(encoded["input_ids"].to(device), mask).float()
        weights = mask.float()[..., None]
        out.append(F.normalize((hidden * weights).sum(1) / weights.sum(1), dim=1))
    return torch.cat(out) if out else torch.zeros(0, int(language.hidden_size))


def sense_text_sample(count: int, seed: int) -> list[str]:
    """``count`` WordNet synsets' texts with their usage examples (a seeded sample), as WSD reads them."""
    # the sense KG and the WSD runner load the model modules (jaket --help registers this benchmark)
    from jaket.senses.inventory import load_sense_kg  # --help: the model modules
    from jaket.senses.texts import usage_examples  # --help: the model modules

    kg = load_sense_kg(None)
    usage, _ = usage_examples(kg, [])
    chosen = np.random.default_rng(seed).choice(kg.num_entities, size=min(count, kg.num_entities), replace=False)
    return [sense_text(kg, int(e), usage.get(int(e), ())) for e in chosen]


def padding_share(lengths: np.ndarray, batches: list[np.ndarray]) -> float:
    """The share of padding tokens when each batch is padded to its longest text."""
    padded = sum(int(lengths[b].max()) * len(b) for b in batches)
    return 1.0 - float(lengths.sum()) / padded if padded else 0.0


def _timed(fn) -> tuple[float, float, object]:
    began, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return time.perf_counter() - began, time.process_time() - cpu, value


def _median_range(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _wsd_instances(data: str):
    """The targets of ``--wsd DATA`` (gold from the key file beside it), read before anything else."""
    from jaket.tasks.word_sense import key_path_of, load_wsd  # --help: the task modules

    return load_wsd(Path(data), key_path_of(Path(data)))


def _wsd_end_to_end(instances, encoder, precision: str) -> dict:
    """WSD (``--variants lm``) on ``instances`` from an empty text-vector cache, then warm: seconds and targets/s."""
    # the WSD runner and the sense KG load the model modules (jaket --help registers this benchmark)
    from jaket.senses.inventory import load_sense_kg  # --help: the model modules
    from jaket.tasks.word_sense import WordSenseConfig  # --help: the model modules
    from jaket.tasks.word_sense import run_wsd  # --help: the model modules

    kg = load_sense_kg(None)
    job = WordSenseConfig(variants=("lm",), encoder=Path(encoder) if encoder else None, bf16=precision == "bf16")
    out: dict = {"wsd_targets": len(instances)}
    with tempfile.TemporaryDirectory(prefix="jaket-bench-cache-") as cache, jaket_cache(cache):
        for run in ("cold", "warm"):
            seconds, _, results = _timed(lambda: run_wsd(instances, kg, job, None))
            out[f"wsd_{run}_seconds"] = seconds
            out[f"wsd_{run}_targets_per_second"] = len(instances) / seconds
            out[f"wsd_{run}_stages"] = results["stages"]
            out[f"wsd_{run}_f1"] = {name: entry["f1"] for name, entry in results["scorers"].items()}
    return out


def run(args: argparse.Namespace) -> dict:
    apply_threads_and_seed(args)
    wsd = _wsd_instances(args.wsd) if args.wsd else None  # a malformed file refused before any model loads
    count = args.texts or (256 if args.quick else 2000)
    repeats = args.repeats or (1 if args.quick else 3)
    batch = args.batch_size or TEXT_BATCH
    others = [int(b) for b in args.batch_sizes.split(",") if b.strip() and int(b) != batch]
    texts = sense_text_sample(count, args.random_seed)
    language = SplitLanguageModel.from_pretrained(args.encoder or default_model_path()).eval()
    context = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if args.precision == "bf16" else nullcontext
    lengths = np.asarray([len(ids) for ids in language.tokenizer(texts, truncation=True, max_length=args.max_length)
                          ["input_ids"]])
    given = [np.arange(b, min(b + 64, len(texts))) for b in range(0, len(texts), 64)]

    def before():  # float32 whatever --precision says, as the pass was
        return before_text_vectors(language, texts, max_length=args.max_length)

    def after(size: int):
        with context():
            return text_vectors(language, texts, max_length=args.max_length, batch_size=size, progress=False)

    def after_fp32():
        return text_vectors(language, texts, max_length=args.max_length, batch_size=batch, progress=False)

    with tempfile.TemporaryDirectory(prefix="jaket-bench-cache-") as folder, jaket_cache(folder):
        with context():
            cache = TextVectorCache.for_encoder(language, args.max_length)
            text_vectors(language, texts, max_length=args.max_length, batch_size=batch, cache=cache,
                         progress=False)  # fills the cache (and warms oneDNN up)

        def warm():
            with context():
                fresh = TextVectorCache.for_encoder(language, args.max_length)  # reads the folder again
                return text_vectors(language, texts, max_length=args.max_length, cache=fresh, progress=False)

        sides = {"before": before, "after": lambda: after(batch), "cache_warm": warm,
                 **({"after_fp32": after_fp32} if args.precision == "bf16" else {}),
                 **{f"after_batch_{size}": (lambda size=size: after(size)) for size in others}}
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        vectors: dict[str, torch.Tensor] = {}
        for _ in range(repeats):
            for name, fn in sides.items():  # interleaved: every side sees the same machine state
                wall, spent, vectors[name] = _timed(fn)
                seconds[name].append(wall)
                cpu[name].append(spent)
    figures: dict = {"texts": len(texts), "mean_tokens": float(lengths.mean()), "max_length": args.max_length,
                     "batch_size": batch, "precision": args.precision, "repeats": repeats,
                     "threads": torch.get_num_threads(),
                     "padding_share_before": padding_share(lengths, given),
                     "padding_share_after": padding_share(lengths, length_sorted_batches(lengths, batch)),
                     "max_abs_diff_after_vs_before": float((vectors["after"] - vectors["before"]).abs().max()),
                     "max_abs_diff_cache_vs_after": float((vectors["cache_warm"] - vectors["after"]).abs().max())}
    for name in sides:
        figures[f"{name}_texts_per_second"] = _median_range([len(texts) / s for s in seconds[name]])
        figures[f"{name}_cpu_ms_per_text"] = _median_range([1000 * c / len(texts) for c in cpu[name]])
    figures["speedup_after_over_before"] = _median_range([b / a for b, a in zip(seconds["before"], seconds["after"])])
    if "after_fp32" in sides:
        figures["max_abs_diff_after_vs_after_fp32"] = float((vectors["after"] - vectors["after_fp32"]).abs().max())
        figures["max_abs_diff_after_fp32_vs_before"] = float((vectors["after_fp32"] - vectors["before"]).abs().max())
        figures["min_cosine_after_vs_after_fp32"] = float((vectors["after"] * vectors["after_fp32"]).sum(1).min())
        figures["speedup_after_fp32_over_before"] = _median_range([b / a for b, a in zip(seconds["before"],
                                                                                           seconds["after_fp32"])])
        figures["speedup_bf16_over_fp32"] = _median_range([a / b for a, b in zip(seconds["after_fp32"],
                                                                                   seconds["after"])])
    figures["speedup_cache_over_before"] = _median_range([b / a for b, a in zip(seconds["before"],
                                                                                  seconds["cache_warm"])])
    if args.wsd:
        figures.update(_wsd_end_to_end(wsd, args.encoder, args.precision))
    return figures
