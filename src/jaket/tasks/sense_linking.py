"""Sense linking: which of its lemma's senses does a word in context name? (WordNet WSD)

The intrinsic measure of what the language module learned from the KG: on linked texts that
pre-training never saw -- the held-out share of a pre-training run's corpus
(:func:`heldout_examples`, rebuilt from the run's ``config.yaml``: the same exclusion, the same
seeded split), so no WiC sentence either when the run excluded them -- each mention's synset is
chosen among the candidate senses of the word as written (its lemma and part of speech in
WordNet, :class:`jaket.tasks.wic_data.SenseInventory`). Scorers:

* ``first sense``: WordNet's first sense of the lemma (the most-frequent-sense baseline);
* ``lm``: the base encoder, cosine between the word in context ``(Z_s + Z_o) / 2`` and each
  candidate's description read the same way (LM1 + LM2, at the synset's name);
* ``lm+g+m``: the base encoder's context against the candidates' E^KM from the base memory through a
  KM without joint pre-training (fresh weights; mean over ``seeds``): what that setting knows
  before any fine-tuning;
* ``jaket``: the pre-trained masked-entity head restricted to the candidates (pre-training's
  task 4: ``q = g((Z_s + Z_o) / 2)`` against the candidates' E^context rows by JAKET's LM1);
* ``jaket (cosine)``: JAKET's encoder read as the base encoder is (the ``lm`` scorer).

Accuracy is over every mention whose synset is among its candidates, and over the ambiguous ones
(two or more candidates), where the first-sense baseline is not trivially right.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from jaket.kg.corpus import MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.wordnet import lemma_forms, load_wordnet_data
from jaket.model.device import cpu_description
from jaket.model.heads import span_mean
from jaket.model.jaket import JaketModel
from jaket.model.knowledge import KnowledgeModule
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.tasks import report as rep
from jaket.tasks.variants import FrozenMemory, description_features
from jaket.tasks.wic_data import POS_CODES, SenseInventory, lemma_key
from jaket.tasks.word_in_context_model import SenseGraph, km_embeddings, neighbourhood, target_spans
from jaket.train.build import load_kg_and_corpus
from jaket.train.config import load_config

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SenseExample:
    """A mention ``[start, end)`` of ``text`` whose gold synset is ``gold`` (an index into the
    sense KG), with the candidate senses of the word as written (the gold among them)."""

    text: str
    start: int
    end: int
    gold: int
    candidates: tuple[int, ...]


def heldout_examples(run_dir: str | Path, sense_kg: KnowledgeGraph, inventory: SenseInventory,
                     max_examples: int | None = None) -> tuple[list[SenseExample], dict]:
    """The held-out linked texts of a pre-training run (never trained on), as sense examples."""
    config = load_config(Path(run_dir) / "config.yaml")
    kg, corpus, report = load_kg_and_corpus(config)
    if corpus is None:
        raise ValueError(f"{run_dir}: the run had no corpus, so no held-out text")
    heldout, _ = corpus.split(config.data.heldout_fraction, seed=config.seed)
    examples, info = sense_examples(heldout, kg, sense_kg, inventory)
    info["run"] = str(run_dir)
    info["heldout_texts"] = len(heldout)
    info["excluded_texts"] = report.get("excluded_texts", {}).get("texts_dropped")
    if max_examples is not None:
        examples = examples[:max_examples]
    return examples, info


def sense_examples(corpus: MentionCorpus, kg: KnowledgeGraph, sense_kg: KnowledgeGraph,
                   inventory: SenseInventory) -> tuple[list[SenseExample], dict]:
    """Every mention of ``corpus`` (entities of ``kg``) whose written form is one of its synset's
    lemmas (inflections resolved by WordNet's rules) and whose synset is in ``sense_kg``."""
    wordnet = load_wordnet_data()
    by_id = {e: i for i, e in enumerate(wordnet.ids)}
    position = {e: i for i, e in enumerate(sense_kg.entity_ids)}
    examples, skipped = [], {"not_in_sense_kg": 0, "lemma_not_found": 0, "gold_not_a_candidate": 0}
    for text, mentions in zip(corpus.texts, corpus.mentions):
        for m in mentions:
            entity_id = kg.entity_ids[m.entity]
            if entity_id not in position or entity_id not in by_id:
                skipped["not_in_sense_kg"] += 1
                continue
            w = by_id[entity_id]
            kind = wordnet.synset_type[w]
            pos = POS_CODES[kind]
            written = lemma_key(text[m.start:m.end].replace("-", " "))
            table = wordnet.exceptions["a" if kind == "s" else kind]
            lemma = next((lemma for lemma in wordnet.lemmas[w]
                          if written in lemma_forms(lemma, kind, table)), None)
            if lemma is None:
                skipped["lemma_not_found"] += 1
                continue
            candidates = tuple(inventory.candidates(lemma, pos))
            gold = position[entity_id]
            if gold not in candidates:
                skipped["gold_not_a_candidate"] += 1
                continue
            examples.append(SenseExample(text, m.start, m.end, gold, candidates))
    return examples, {"examples": len(examples), "skipped": skipped,
                      "ambiguous": int(sum(len(e.candidates) > 1 for e in examples))}


@torch.no_grad()
def _contexts(language: SplitLanguageModel, examples: list[SenseExample], batch_size: int = 64,
              max_length: int = 96) -> torch.Tensor:
    """``(Z_s + Z_o) / 2`` of each mention through LM1 + LM2."""
    language.eval()
    device = next(language.parameters()).device
    out = []
    for begin in range(0, len(examples), batch_size):
        chunk = examples[begin:begin + batch_size]
        ids, start, end = target_spans(language.tokenizer, [e.text for e in chunk], [(e.start, e.end) for e in chunk],
                                       max_length, [f"sense example {begin + i + 1}" for i in range(len(chunk))])
        width = max(len(x) for x in ids)
        pad = int(language.tokenizer.pad_token_id)
        tokens = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, x in enumerate(ids):
            tokens[i, :len(x)] = torch.from_numpy(x)
            mask[i, :len(x)] = 1
        hidden = language(tokens.to(device), mask.to(device)).float()
        out.append(span_mean(hidden, torch.arange(len(chunk), device=device), torch.from_numpy(start).to(device),
                             torch.from_numpy(end).to(device)))
    return torch.cat(out) if out else torch.zeros(0, int(language.hidden_size))


def _candidate_table(examples: list[SenseExample]) -> tuple[np.ndarray, dict[int, int]]:
    used = sorted({c for e in examples for c in e.candidates})
    return np.asarray(used, dtype=np.int64), {c: i for i, c in enumerate(used)}


def _accuracy(examples: list[SenseExample], scores: list[np.ndarray]) -> dict:
    right = np.asarray([e.candidates[int(np.argmax(s))] == e.gold for e, s in zip(examples, scores)])
    ambiguous = np.asarray([len(e.candidates) > 1 for e in examples])
    return {"accuracy": float(right.mean()) if len(right) else float("nan"),
            "accuracy_ambiguous": float(right[ambiguous].mean()) if ambiguous.any() else float("nan")}


def _scores(examples, vectors: torch.Tensor, candidate_vectors: torch.Tensor, index: dict[int, int],
            cosine: bool) -> list[np.ndarray]:
    out = []
    for e, v in zip(examples, vectors):
        rows = candidate_vectors[[index[c] for c in e.candidates]]
        s = F.cosine_similarity(v[None], rows) if cosine else rows @ v
        out.append(s.float().cpu().numpy())
    return out


@torch.no_grad()
def evaluate_sense_linking(examples: list[SenseExample], sense_kg: KnowledgeGraph, *,
                           pretrained: Path | None = None, encoder: Path | None = None,
                           seeds: tuple[int, ...] = (0, 1, 2), description_max_length: int = 32,
                           device="cpu", baselines: bool = True) -> dict:
    """Accuracy of every scorer of the module docstring on ``examples``; ``baselines=False`` keeps
    the first-sense and random figures and the ``jaket`` scorers only (to compare pre-trained models)."""
    results: dict = {"scorers": {}, "cpu": cpu_description()}
    first = [np.asarray([1.0] + [0.0] * (len(e.candidates) - 1)) for e in examples]
    results["scorers"]["first sense"] = _accuracy(examples, first)
    results["scorers"]["random"] = {"accuracy": float(np.mean([1 / len(e.candidates) for e in examples])),
                                    "accuracy_ambiguous": float(np.mean([1 / len(e.candidates) for e in examples
                                                                         if len(e.candidates) > 1]))}
    used, index = _candidate_table(examples)
    texts = [sense_kg.entity_descriptions[c] for c in used]
    names = [sense_kg.entity_names[c] for c in used]
    if baselines:
        results["scorers"].update(_baseline_scores(examples, sense_kg, used, index, texts, names, encoder, seeds,
                                                   description_max_length, device))
    if pretrained is not None:
        model = JaketModel.from_pretrained(pretrained, load_memory=False).to(device).eval()
        language = model.language
        hidden = []
        for begin in range(0, len(examples), 64):  # q = g((Z_s + Z_o) / 2), no fusion (a removed mention)
            chunk = examples[begin:begin + 64]
            hidden.append(model.entity_head(_contexts(language, chunk)))
        queries = torch.cat(hidden)
        memory_rows = description_features(language, texts, names, full=False,
                                           max_length=model.config.description_max_length)
        results["scorers"]["jaket"] = _accuracy(examples, _scores(examples, queries, memory_rows, index, cosine=False))
        jaket_context = _contexts(language, examples)
        jaket_described = description_features(language, texts, names, full=True, max_length=description_max_length)
        results["scorers"]["jaket (cosine)"] = _accuracy(
            examples, _scores(examples, jaket_context, jaket_described, index, cosine=True))
    return results


def _baseline_scores(examples, sense_kg, used, index, texts, names, encoder, seeds, description_max_length,
                     device) -> dict:
    """The ``lm`` and ``lm+g+m`` scorers of the module docstring."""
    out = {}
    base = SplitLanguageModel.from_pretrained(encoder or default_model_path()).to(device)
    context = _contexts(base, examples)
    described = description_features(base, texts, names, full=True, max_length=description_max_length)
    out["lm"] = _accuracy(examples, _scores(examples, context, described, index, cosine=True))
    # LM+G+M before fine-tuning: E^KM of a fresh KM over the base memory (LM1 of the descriptions)
    old = neighbourhood(sense_kg, used, 2)
    ball, _ = sense_kg.induced_subgraph(old)
    local = np.searchsorted(old, used)
    memory = description_features(base, list(ball.entity_descriptions), list(ball.entity_names), full=False,
                                  max_length=description_max_length)
    # R = 0 as in pre-training (the KM adds its direction embeddings)
    graph = SenseGraph(ball, FrozenMemory(memory, memory.new_zeros(max(1, ball.num_relations), memory.shape[1])),
                       (5, 5))
    per_seed = []
    for seed in seeds:
        torch.manual_seed(seed)
        km = KnowledgeModule(int(base.hidden_size), num_layers=2, heads=4).to(device).eval()
        rows = km_embeddings(km, graph, local, np.random.default_rng(seed))
        per_seed.append(_accuracy(examples, _scores(examples, context, rows, index, cosine=True)))
    out["lm+g+m"] = {k: float(np.mean([r[k] for r in per_seed])) for k in per_seed[0]}
    out["lm+g+m"]["seeds"] = len(seeds)
    return out


def results_table(results: dict) -> str:
    labels = {"first sense": "WordNet first sense", "random": "(random candidate)", "lm": "LM only (cosine)",
              "lm+g+m": "LM+G+M (fresh KM, cosine)", "jaket": "JAKET (masked-entity head)",
              "jaket (cosine)": "JAKET encoder (cosine)"}
    rows = [[labels.get(k, k), f"{100 * v['accuracy']:.1f}", f"{100 * v['accuracy_ambiguous']:.1f}"]
            for k, v in results["scorers"].items()]
    return rep.markdown_table(["Scorer", "accuracy %", "ambiguous only %"], rows)


def write_report(results: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_metrics(out_dir, results)
    info = results.get("data", {})
    text = ["# Sense linking", "", f"{info.get('examples', '?')} linked mentions ({info.get('ambiguous', '?')} "
            f"ambiguous) from {info.get('run', 'the given texts')}.", "", results_table(results), ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))
