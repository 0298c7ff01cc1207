"""Sense linking: which of its lemma's senses does a word in context name? (WordNet WSD)

The intrinsic measure of what the language module learned from the KG: on linked texts that
pre-training never saw -- the held-out share of a pre-training run's corpus
(:func:`heldout_examples`, rebuilt from the run's ``config.yaml``: the same exclusion, the same
seeded split), so no WiC sentence either when the run excluded them; or the texts of the unseen
KG' (:func:`unseen_examples`), whose synsets pre-training never saw at all -- each mention's synset is
chosen among the candidate senses of the word as written (its lemma and part of speech in
WordNet, :class:`jaket.tasks.wic_data.SenseInventory`) by each scorer of
:mod:`jaket.tasks.sense_scoring` (first sense, random, ``jaket link``'s Lesk rule, ``lm``,
``lm+g+m`` over fresh KMs, the ``jaket`` masked-entity head and ``jaket (cosine)``).

Accuracy is over every mention whose synset is among its candidates, and over the ambiguous ones
(two or more candidates), where the first-sense baseline is not trivially right.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from jaket.kg.corpus import MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.sources.registry import build_source
from jaket.kg.sources.wordnet import lemma_forms, load_wordnet_data
from jaket.model.device import cpu_description
from jaket.tasks import report as rep
from jaket.tasks.sense_scoring import (PRETRAINED_SCORERS, SCORER_LABELS, SCORERS, SenseExample, correctness,
                                      score_senses)
from jaket.tasks.wic_data import POS_CODES, SenseInventory, lemma_key
from jaket.train.build import load_kg_and_corpus
from jaket.train.config import load_config

logger = logging.getLogger(__name__)


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


def unseen_examples(data_dir: str | Path, sense_kg: KnowledgeGraph, inventory: SenseInventory,
                    max_examples: int | None = None, unseen_candidates_only: bool = False
                    ) -> tuple[list[SenseExample], dict]:
    """The linked texts of the unseen KG' of ``jaket prepare wordnet-reference`` (``data_dir``): every
    WordNet usage example that mentions a synset of ``data_dir/kg-unseen`` -- exactly the texts the
    preparation dropped from pre-training (``texts_dropped_mentioning_heldout``), so the gold sense
    of each is an entity pre-training never saw, neither in a triple nor in a text. Candidates are
    the word's senses in ``sense_kg`` (seen and unseen alike); ``unseen_candidates_only`` keeps only
    those of KG' (the case of a KG the model never saw at all)."""
    unseen = set(load_kg(Path(data_dir) / "kg-unseen").entity_ids)
    bundle = build_source("wordnet", max_entities=None, seed=0)
    kg, corpus = bundle.kg, bundle.corpus
    keep = [i for i, mentions in enumerate(corpus.mentions) if any(kg.entity_ids[m.entity] in unseen for m in mentions)]
    texts = corpus.subset(np.asarray(keep, dtype=np.int64))
    examples, info = sense_examples(texts, kg, sense_kg, inventory)
    examples = [e for e in examples if sense_kg.entity_ids[next(iter(e.gold))] in unseen]
    if unseen_candidates_only:
        examples = [SenseExample(e.text, e.start, e.end, e.gold,
                                 tuple(c for c in e.candidates if sense_kg.entity_ids[c] in unseen), e.lemma)
                    for e in examples]
    info.update(examples=len(examples), ambiguous=int(sum(len(e.candidates) > 1 for e in examples)),
                run=f"the unseen KG' of {data_dir}", unseen_entities=len(unseen), texts_mentioning_unseen=len(keep),
                candidates="unseen (KG') senses only" if unseen_candidates_only else "every sense of the word")
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
            examples.append(SenseExample(text, m.start, m.end, frozenset({gold}), candidates, lemma))
    return examples, {"examples": len(examples), "skipped": skipped,
                      "ambiguous": int(sum(len(e.candidates) > 1 for e in examples))}


def _accuracy(examples: list[SenseExample], correct: np.ndarray) -> dict:
    ambiguous = np.asarray([len(e.candidates) > 1 for e in examples])
    return {"accuracy": float(correct.mean()) if len(correct) else float("nan"),
            "accuracy_ambiguous": float(correct[ambiguous].mean()) if ambiguous.any() else float("nan")}


def evaluate_sense_linking(examples: list[SenseExample], sense_kg: KnowledgeGraph, *,
                           pretrained: Path | None = None, encoder: Path | None = None,
                           seeds: tuple[int, ...] = (0, 1, 2), description_max_length: int = 32,
                           device="cpu", baselines: bool = True) -> dict:
    """Accuracy of every scorer on ``examples`` (``lm+g+m``: the mean over ``seeds``);
    ``baselines=False`` keeps the first-sense and random figures and the ``jaket`` scorers only (to
    compare pre-trained models)."""
    scorers = SCORERS if baselines else ("first sense", "random", *PRETRAINED_SCORERS)
    outputs = score_senses(examples, sense_kg, scorers=scorers, pretrained=pretrained, encoder=encoder,
                           seeds=seeds, description_max_length=description_max_length, device=device)
    results: dict = {"scorers": {}, "cpu": cpu_description()}
    for name, output in outputs.items():
        per_run = [_accuracy(examples, correctness(examples, output, run)[0]) for run in range(len(output.runs))]
        results["scorers"][name] = {k: float(np.mean([r[k] for r in per_run])) for k in per_run[0]}
        if output.seeds is not None:
            results["scorers"][name]["seeds"] = len(output.seeds)
    return results


def results_table(results: dict) -> str:
    rows = [[SCORER_LABELS.get(k, k), f"{100 * v['accuracy']:.1f}", f"{100 * v['accuracy_ambiguous']:.1f}"]
            for k, v in results["scorers"].items()]
    return rep.markdown_table(["Scorer", "accuracy %", "ambiguous only %"], rows)


def write_report(results: dict, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    rep.write_metrics(out_dir, results)
    info = results.get("data", {})
    text = ["# Sense linking", "", f"{info.get('examples', '?')} linked mentions ({info.get('ambiguous', '?')} "
            f"ambiguous) from {info.get('run', 'the given texts')}.", "", results_table(results), ""]
    rep.write_text_atomic(out_dir / "report.md", "\n".join(text))
