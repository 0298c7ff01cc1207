"""Inference-only levers on the ``(text + kg)`` sense scorer, read on a word-sense-disambiguation set (research).

The ``(text + kg)`` scorer of ``jaket evaluate word-sense-disambiguation`` compares the word in
context (``(Z_s + Z_o) / 2`` through LM1 + LM2) with each candidate's row ``v_e + β mean_{n ∈ N(e)} v_n``
(its text's vector plus the mean of its KG neighbours', :func:`jaket.senses.linker.text_kg_rows`).
Its diagnosed weakness is the verbs (65% of SemEval-2007's targets). This script measures, on the
same targets, with the base encoder and with a pre-trained model's, the levers of the
knowledge-based WSD literature that need no sense-annotated corpus and no WordNet sense order:

* **a second look by supersense** (SREF's "try-again", Wang and Wang, EMNLP 2020): the two best
  candidates each get ``g × cos(context, c_L)`` added, ``c_L`` the mean text vector of the senses of
  the candidate's lexicographer category (``verb.motion``, ``noun.artifact``, ...) among the senses
  read (the candidates and their KG neighbours);
* **the sentence and the document as context**: the target's vector (unit length) plus
  ``a ×`` its sentence's vector plus ``b ×`` the mean of its document's sentences' (the framework's
  instance ids name the document, ``d000.s000.t000``);
* **usage examples as target-token prototypes** (LMMS-like, Loureiro and Jorge, ACL 2019): the
  mean vector of the sense's word in its WordNet usage examples (read like a target), unit length,
  added to the row with weight ``w`` (a sense without a located example keeps its row); no usage
  example is a sentence of the evaluated file;
* **the last layers' mean** (as LMMS and SREF read BERT): every vector (context and sense texts)
  from the mean of the encoder's last ``k`` layers instead of its last one.

Every weight is read on the evaluated set itself (a development set), so the best cell of each grid
is an optimistic figure. For each: F1 overall and for nouns and verbs, and the paired difference
against WordNet's first sense (bootstrap over the targets, 10,000 resamples)::

    python -m results.wsd_text_levers --model runs/reference-wic-sense-nomlm/model \\
        --data ../shared/data/wsd/semeval2007.data.xml --out runs/wsd/text-levers.json
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.wordnet_db import load_wordnet_data
from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.tasks import report as rep
from jaket.tasks.word_sense import WsdInstance
from jaket.senses.scorers import (ScorerOutput, SenseExample, _Candidates, context_vectors, correctness,
                                  first_sense_scores, similarity_scores)
from jaket.senses.texts import SenseTexts, text_kg_rows, text_vectors
from jaket.tasks.word_sense import f1_statistic
from jaket.senses.texts import usage_examples

from results.wsd_levers import prototypes, report, wsd_parser, wsd_targets
from results.wsd_levers import usage_examples as located_usage_examples

SECOND_LOOK = (0.25, 0.5, 1.0)
CONTEXT = ((0.5, 0.0), (0.0, 0.25), (0.5, 0.25), (1.0, 0.5))
PROTOTYPE = (0.5, 1.0, 2.0)
LAST_LAYERS = (2, 4)
BOOTSTRAP = 10000


def lexicographer_categories(kg: KnowledgeGraph) -> list[str | None]:
    """Each entity's WordNet lexicographer category (None for an entity that is not a synset)."""
    wordnet = load_wordnet_data()
    category = {i: wordnet.category_names[int(c)] for i, c in zip(wordnet.ids, wordnet.category)}
    return [category.get(e) for e in kg.entity_ids]


def category_centroids(known: dict[int, torch.Tensor], categories: list[str | None]) -> dict[str, torch.Tensor]:
    """The mean of the text vectors ``known`` (entity -> vector) of each category, unit length."""
    members: dict[str, list[torch.Tensor]] = {}
    for entity, vector in known.items():
        if categories[entity] is not None:
            members.setdefault(categories[entity], []).append(vector)
    return {name: F.normalize(torch.stack(vectors).mean(0), dim=0) for name, vectors in members.items()}


def second_look(examples: list[SenseExample], scores: list[np.ndarray], context: torch.Tensor,
                centroids: dict[str, torch.Tensor], categories: list[str | None], weight: float,
                top: int = 2) -> list[np.ndarray]:
    """``scores`` with ``weight × cos(context, c_L)`` added to each example's ``top`` best candidates
    (``c_L``: their category's centroid; a candidate without one gets nothing)."""
    out = []
    for example, s, vector in zip(examples, scores, context):
        s = s.astype(np.float64).copy()
        for i in np.argsort(-s, kind="stable")[:top]:
            centroid = centroids.get(categories[example.candidates[i]])
            if centroid is not None:
                s[i] += weight * float(F.cosine_similarity(vector[None], centroid[None])[0])
        out.append(s)
    return out


def document_context(instances: list[WsdInstance], tokens: torch.Tensor, sentences: torch.Tensor,
                     a: float, b: float) -> torch.Tensor:
    """``unit(token) + a × sentence + b × mean of the document's sentences`` per target
    (``sentences``: each target's sentence vector; the document is the instance id's first part)."""
    documents = [i.id.split(".")[0] for i in instances]
    sentence_of = {}
    for instance, document, vector in zip(instances, documents, sentences):
        sentence_of.setdefault(document, {})[instance.text] = vector
    mean = {d: torch.stack(list(s.values())).mean(0) for d, s in sentence_of.items()}
    return torch.stack([F.normalize(t, dim=0) + a * s + b * mean[d] for t, s, d in zip(tokens, sentences, documents)])


class LastLayersMean(torch.nn.Module):
    """``language`` read as the mean of its last ``k`` layers' hidden states (LM1 + LM2 unfused),
    usable wherever the task reads a :class:`SplitLanguageModel` (its tokenizer and size kept)."""

    def __init__(self, language: SplitLanguageModel, k: int):
        super().__init__()
        self.language, self.k = language, k
        self.tokenizer, self.hidden_size = language.tokenizer, language.hidden_size

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.stack(self.language.hidden_states(input_ids, attention_mask)[-self.k:]).mean(0)


class Reading:
    """F1 of scores on the targets, per part of speech, and against the first sense (paired)."""

    def __init__(self, instances: list[WsdInstance], examples: list[SenseExample]):
        self.examples = examples
        self.pos = np.asarray([i.pos for i in instances])
        self.first = np.stack(correctness(examples, first_sense_scores(examples)), axis=-1)

    def __call__(self, scores: list[np.ndarray], paired: bool = False) -> dict:
        right = np.stack(correctness(self.examples, ScorerOutput([scores])), axis=-1)
        f1 = {"f1": float(f1_statistic(right[None])[0])}
        f1.update({name: float(f1_statistic(right[self.pos == code][None])[0]) for name, code in
                   (("nouns", "n"), ("verbs", "v")) if (self.pos == code).any()})
        out = {k: round(100 * v, 1) for k, v in f1.items()}
        if paired:
            found = rep.paired_bootstrap(right, self.first, f1_statistic, BOOTSTRAP, 0)
            out["minus first sense"] = [round(100 * found[k], 1) for k in ("mean", "ci_low", "ci_high")]
        return out


@torch.no_grad()
def measure(language: SplitLanguageModel, instances: list[WsdInstance], examples: list[SenseExample], kg,
            usage: dict[int, tuple[str, ...]], located: list[SenseExample], categories: list[str | None]) -> dict:
    """Every lever of the module docstring for one encoder (its baseline is the ``(text + kg)`` row, β = 1)."""
    read = Reading(instances, examples)
    candidates = _Candidates.of(examples, kg)
    known: dict[int, torch.Tensor] = {}
    _, rows = text_kg_rows(language, kg, candidates.used, SenseTexts(usage), known=known)
    tokens = context_vectors(language, examples)

    def scored(context: torch.Tensor, table: torch.Tensor = rows) -> list[np.ndarray]:
        return similarity_scores(examples, context, table, candidates.index, cosine=True)

    base = scored(tokens)
    out: dict = {"(text + kg)": read(base, paired=True), "senses read": len(known)}
    centroids = category_centroids(known, categories)
    out["second look by supersense"] = {
        f"g={g:g}": read(second_look(examples, base, tokens, centroids, categories, g), paired=True)
        for g in SECOND_LOOK}
    sentences = text_vectors(language, [e.text for e in examples])
    out["sentence and document"] = {
        f"a={a:g},b={b:g}": read(scored(document_context(instances, tokens, sentences, a, b)), paired=True)
        for a, b in CONTEXT}
    mean, has = prototypes(located, context_vectors(language, located), candidates.index, len(candidates.used))
    unit, prototype = F.normalize(rows, dim=1), F.normalize(mean, dim=1)
    out["usage-example prototypes"] = {
        f"w={w:g}": read(scored(tokens, torch.where(has[:, None], unit + w * prototype, unit)), paired=True)
        for w in PROTOTYPE}
    out["usage-example prototypes alone"] = read(scored(tokens, torch.where(has[:, None], mean, rows)))
    out["senses with a located usage example"] = int(has.sum())
    for k in LAST_LAYERS:
        mixed = LastLayersMean(language, k).eval()
        _, mixed_rows = text_kg_rows(mixed, kg, candidates.used, SenseTexts(usage))
        out[f"last {k} layers' mean"] = read(scored(context_vectors(mixed, examples), mixed_rows), paired=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args = wsd_parser(__doc__).parse_args(argv)
    kg, instances, examples = wsd_targets(args.data, args.gold)
    usage, counts = usage_examples(kg, instances)
    located = located_usage_examples(kg, set(_Candidates.of(examples, kg).used.tolist()), [args.data])
    categories = lexicographer_categories(kg)
    found = {"targets": len(examples), **counts, "located usage examples": len(located),
             "first sense": Reading(instances, examples)(first_sense_scores(examples).runs[0]),
             "lm": measure(SplitLanguageModel.from_pretrained(default_model_path()), instances, examples, kg, usage,
                           located, categories),
             "jaket": measure(JaketModel.from_pretrained(args.model, load_memory=False).language, instances, examples,
                              kg, usage, located, categories)}
    return report(found, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
