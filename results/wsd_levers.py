"""Inference-only levers of the JAKET sense scorer on a word-sense-disambiguation set (research).

The word-sense task (``jaket evaluate word-sense-disambiguation``) scores each target with the
pre-trained masked-entity head (pre-training's task 4, ``q = g((Z_s + Z_o) / 2)`` against the
candidates' E^context rows, Eq. 7) and with the encoder's cosine against the descriptions. This
script measures what can be had *without training anything more*, on the same targets:

* **usage examples as sense evidence**: a sense's vector is its description's plus the mean
  context vector of its WordNet usage examples (the linked texts pre-training read; none is a WiC
  or SemEval-2007 sentence: both are excluded by the normalised-text rule of ``data.exclude_texts``);
  a sense without an example keeps its description alone;
* the same in the head's space (the head's queries of the usage examples, averaged per sense);
* **products of experts**: the head's log-probabilities plus a cosine scorer's at temperature T.

Accuracy (= F1, every target answered) per lever, printed and written as JSON::

    python -m results.wsd_levers --model runs/reference-wic-sense-nomlm/model \\
        --data ../shared/data/wsd/semeval2007.data.xml --gold ../shared/data/wsd/semeval2007.gold.key.txt \\
        --exclude ../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt ../shared/data/wic/test.data.txt \\
        --out runs/wsd/levers.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from jaket.atomic import write_json
from jaket.kg.exclusion import normalise_text, read_exclusion_texts
from jaket.kg.sources.wordnet_db import load_wordnet_data
from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.senses.scorers import (ScorerOutput, SenseExample, _Candidates, context_vectors, correctness,
                                  similarity_scores)
from jaket.model.memory import description_features
from jaket.senses.inventory import SenseInventory
from jaket.senses.inventory import load_sense_kg
from jaket.tasks.word_sense import wsd_examples
from jaket.tasks.word_sense import load_wsd


def wsd_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every WSD research script takes: ``--model``, ``--data``, ``--gold``, ``--out``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="the pre-trained model folder")
    parser.add_argument("--data", type=Path, required=True, help="the framework's XML (or our JSONL)")
    parser.add_argument("--gold", type=Path, help="its key file (default: beside the XML)")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    return parser


def wsd_targets(data: Path, gold: Path | None) -> tuple:
    """``(sense KG, instances, examples)``: the whole of WordNet and the targets of ``data``."""
    kg = load_sense_kg(None)
    instances = load_wsd(data, gold)
    examples, _ = wsd_examples(instances, kg, SenseInventory.for_wordnet(kg))
    return kg, instances, examples


def report(found: dict, out: Path | None) -> int:
    """Print the figures and write them to ``out`` (JSON, atomically) when given; 0, the exit status."""
    print(json.dumps(found, indent=1))
    if out is not None:
        write_json(out, found, indent=1)
    return 0


def rounded(difference: dict, digits: int = 1) -> dict:
    """A paired difference (:func:`jaket.tasks.report.paired_difference`) rounded for a report."""
    return {k: [round(v, digits) for v in difference[k]] if k == "values" else round(difference[k], digits)
            for k in difference}


def usage_examples(kg, wanted: set[int], excluded: list[Path]) -> list[SenseExample]:
    """The WordNet usage examples of the senses ``wanted`` (indices of ``kg``), none of whose texts
    is one of the ``excluded`` files' sentences."""
    wordnet = load_wordnet_data()
    position = {e: i for i, e in enumerate(kg.entity_ids)}
    banned = {normalise_text(s) for path in excluded for s in read_exclusion_texts(path)}
    found = []
    for w, text, start, end in wordnet.examples:
        k = position.get(wordnet.ids[w])
        if k in wanted and start >= 0 and normalise_text(text) not in banned:
            found.append(SenseExample(text, start, end, frozenset([k]), (k,)))
    return found


def prototypes(usage: list[SenseExample], vectors: torch.Tensor, index: dict[int, int], rows: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean of ``vectors`` per sense (row ``index[sense]``) and whether a sense has any."""
    total = torch.zeros(rows, vectors.shape[1])
    count = torch.zeros(rows)
    for example, vector in zip(usage, vectors):
        total[index[example.candidates[0]]] += vector
        count[index[example.candidates[0]]] += 1
    has = count > 0
    total[has] /= count[has, None]
    return total, has


def _log_softmax(scores: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    z = scores / temperature
    return z - (z.max() + np.log(np.exp(z - z.max()).sum()))


@torch.no_grad()
def measure(examples: list[SenseExample], kg, usage: list[SenseExample], pretrained: Path | None) -> dict[str, float]:
    """Accuracy (%) of every lever of the module docstring; the base encoder's without ``pretrained``."""
    candidates = _Candidates.of(examples, kg)

    def accuracy(scores) -> float:
        return round(100 * float(correctness(examples, ScorerOutput([scores]))[0].mean()), 1)

    model = JaketModel.from_pretrained(pretrained, load_memory=False).eval() if pretrained else None
    language = model.language if model else SplitLanguageModel.from_pretrained(default_model_path())
    name = "jaket" if model else "lm"
    context = context_vectors(language, examples)
    described = description_features(language, candidates.texts, candidates.names, full=True, max_length=32)
    mean, has = prototypes(usage, context_vectors(language, usage), candidates.index, len(candidates.used))
    with_usage = torch.where(has[:, None], F.normalize(mean, dim=1) + F.normalize(described, dim=1),
                             F.normalize(described, dim=1))
    cosine = similarity_scores(examples, context, described, candidates.index, cosine=True)
    usage_cosine = similarity_scores(examples, context, with_usage, candidates.index, cosine=True)
    found = {f"{name} cosine": accuracy(cosine), f"{name} cosine, description + usage examples": accuracy(usage_cosine)}
    if model is None:
        return found
    queries = model.entity_head(context)
    rows = description_features(language, candidates.texts, candidates.names, full=False,
                                max_length=model.config.description_max_length)
    head = similarity_scores(examples, queries, rows, candidates.index, cosine=False)
    found["jaket head"] = accuracy(head)
    head_mean, _ = prototypes(usage, model.entity_head(context_vectors(language, usage)), candidates.index,
                              len(candidates.used))
    found["jaket head space, usage examples (cosine)"] = accuracy(similarity_scores(
        examples, queries, torch.where(has[:, None], head_mean, rows), candidates.index, cosine=True))
    for t in (0.05, 0.1, 0.2):
        found[f"jaket head x cosine, T={t}"] = accuracy([_log_softmax(h) + _log_softmax(c, t)
                                                         for h, c in zip(head, cosine)])
        found[f"jaket head x cosine with usage examples, T={t}"] = accuracy(
            [_log_softmax(h) + _log_softmax(c, t) for h, c in zip(head, usage_cosine)])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = wsd_parser(__doc__)
    parser.add_argument("--exclude", type=Path, nargs="*", default=[],
                        help="sentence files whose sentences no usage example may be (the data file is added)")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    kg, _, examples = wsd_targets(args.data, args.gold)
    usage = usage_examples(kg, set(_Candidates.of(examples, kg).used.tolist()), [*args.exclude, args.data])
    found = {"targets": len(examples), "usage_examples": len(usage),
             "senses_with_usage_examples": len({u.candidates[0] for u in usage}),
             **measure(examples, kg, usage, None), **measure(examples, kg, usage, args.model)}
    return report(found, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
