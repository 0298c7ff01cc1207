"""The weight ``β`` of the ``(text + kg)`` sense scorers, read on a word-sense-disambiguation set (research).

The ``(text + kg)`` scorers of ``jaket evaluate word-sense-disambiguation`` compare the word in
context with each candidate's row ``v_e + β mean_{n ∈ N(e)} v_n`` (its text's vector plus the mean
of its KG neighbours', :func:`jaket.senses.linker.text_kg_rows`). This script gives F1
(= accuracy: every target is answered) for each ``β`` on the same targets, with the base encoder
and with a pre-trained model's, and the first sense beside them; ``β = 0`` is the ``(text)``
scorer. It is how the default ``β = 1`` was read on SemEval-2007 (the development set)::

    python -m results.wsd_neighbour_weight --model runs/reference-wic-sense-nomlm/model \\
        --data ../shared/data/wsd/semeval2007.data.xml --out runs/wsd/neighbour-weight.json
"""

from __future__ import annotations

import torch

from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.senses.scorers import (ScorerOutput, _Candidates, context_vectors, correctness, first_sense_scores,
                                  similarity_scores)
from jaket.senses.texts import SenseTexts, text_kg_rows
from jaket.senses.texts import usage_examples

from results.wsd_levers import report, wsd_parser, wsd_targets

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)


@torch.no_grad()
def sweep(language: SplitLanguageModel, examples, kg, usage, max_length: int = 256) -> dict[str, float]:
    """F1 (%) of the ``(text + kg)`` scorer of ``language`` for every weight of :data:`WEIGHTS`."""
    candidates = _Candidates.of(examples, kg)
    context = context_vectors(language, examples, max_length=max_length)
    own, spread = text_kg_rows(language, kg, candidates.used, SenseTexts(usage, neighbour_weight=1.0))
    neighbours = spread - own
    out = {}
    for beta in WEIGHTS:
        scores = similarity_scores(examples, context, own + beta * neighbours, candidates.index, cosine=True)
        out[f"{beta:g}"] = round(100 * float(correctness(examples, ScorerOutput([scores]))[0].mean()), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    args = wsd_parser(__doc__).parse_args(argv)
    kg, instances, examples = wsd_targets(args.data, args.gold)
    usage, counts = usage_examples(kg, instances)
    first = correctness(examples, first_sense_scores(examples))[0].mean()
    found = {"targets": len(examples), **counts, "first sense": round(100 * float(first), 1),
             "lm (text + kg), by beta": sweep(SplitLanguageModel.from_pretrained(default_model_path()), examples, kg,
                                              usage),
             "jaket (text + kg), by beta": sweep(JaketModel.from_pretrained(args.model, load_memory=False).language,
                                                 examples, kg, usage)}
    return report(found, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
