"""Train the ``(text + kg)`` sense scorer: align contexts with sense texts on the pre-training corpus (research).

The ``(text + kg)`` scorer of ``jaket evaluate word-sense-disambiguation`` compares the word in
context with each candidate's sense text read as a sentence, plus its KG neighbours'
(:func:`jaket.senses.linker.text_kg_rows`). Pre-training never trained that comparison:
its task 4 scores the masked-entity head against the memory (Eq. 7). This script trains it, as a
bi-encoder in the manner of BEM (Blevins and Zettlemoyer, ACL 2020) but on **the pre-training
corpus only** (no sense-annotated corpus such as SemCor): every ambiguous mention of the
reference data's ``kg-pretrain/corpus.jsonl`` (WordNet's usage examples of the pre-training KG's
synsets, without the texts of ``--exclude``) is a training example; its candidates are the
word's WordNet senses *inside the pre-training KG* (none of the unseen KG'), at most
``--candidates`` (the gold one and others drawn at random); a sense's text is the scorer's own
(:func:`jaket.senses.linker.sense_text`: names, gloss, usage examples) **without the
example being trained on** (leave one out). The loss is the cross-entropy of the context's cosine
with each candidate at the scorer's temperature (0.1), through the whole encoder (LM1 + LM2,
both sides shared), AdamW.

It then reads the evaluated set as the task does, before and after: the ``(text + kg)`` F1, for
nouns and verbs, the paired difference against the first sense (bootstrap over the targets), and
the product of the two (their cosines added)::

    python -m results.wsd_sense_alignment --data-dir runs/reference/data \\
        --model runs/reference-wic-sense-nomlm/model \\
        --exclude ../shared/data/wic/train.data.txt ../shared/data/wic/dev.data.txt \\
                  ../shared/data/wic/test.data.txt ../shared/data/wsd/semeval2007.data.xml \\
        --evaluate ../shared/data/wsd/semeval2007.data.xml --out runs/sense-alignment/jaket

Without ``--model`` it trains the base encoder (LM only's). The aligned encoder is saved in
``OUT/encoder`` (a Transformers folder), the figures in ``OUT/alignment.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from jaket.atomic import write_json
from jaket.kg.exclusion import exclude_texts
from jaket.kg.io import load_corpus, load_kg
from jaket.model.heads import span_mean
from jaket.model.jaket import JaketModel
from jaket.model.language import SplitLanguageModel
from jaket.paths import default_model_path
from jaket.senses.inventory import SenseInventory
from jaket.senses.graph import target_spans
from jaket.senses.scorers import SenseExample, _Candidates, context_vectors, first_sense_scores, similarity_scores
from jaket.senses.texts import COSINE_TEMPERATURE, SenseTexts, sense_text, text_kg_rows
from jaket.tasks.word_sense import sense_examples
from jaket.senses.texts import usage_examples

from results.wsd_levers import wsd_targets
from results.wsd_text_levers import Reading


def training_examples(data_dir: Path, sense_kg, exclude: list[Path]) -> tuple[list[SenseExample], dict]:
    """The ambiguous mentions of ``data_dir/kg-pretrain``'s corpus (without the texts of
    ``exclude``), their candidates restricted to the pre-training KG's senses."""
    kg = load_kg(data_dir / "kg-pretrain")
    corpus, report = exclude_texts(load_corpus(data_dir / "kg-pretrain", kg), exclude)
    examples, info = sense_examples(corpus, kg, sense_kg, SenseInventory.for_wordnet(sense_kg))
    seen = {e for e in kg.entity_ids}
    kept = []
    for e in examples:
        candidates = tuple(c for c in e.candidates if sense_kg.entity_ids[c] in seen)
        if len(candidates) > 1:
            kept.append(SenseExample(e.text, e.start, e.end, e.gold, candidates, e.lemma))
    return kept, {"mentions": info["examples"], "ambiguous_in_pretraining_kg": len(kept),
                  "texts_excluded": report.get("texts_dropped")}


def _contexts(language: SplitLanguageModel, batch: list[SenseExample], max_length: int) -> torch.Tensor:
    """``(Z_s + Z_o) / 2`` of each target, with gradients (the task's :func:`context_vectors` without ``no_grad``)."""
    ids, start, end = target_spans(language.tokenizer, [e.text for e in batch], [(e.start, e.end) for e in batch],
                                   max_length, [f"training example {i + 1}" for i in range(len(batch))])
    tokens = torch.full((len(batch), max(len(x) for x in ids)), int(language.tokenizer.pad_token_id))
    mask = torch.zeros_like(tokens)
    for i, x in enumerate(ids):
        tokens[i, :len(x)] = torch.from_numpy(x)
        mask[i, :len(x)] = 1
    hidden = language(tokens, mask).float()
    return span_mean(hidden, torch.arange(len(batch)), torch.from_numpy(start), torch.from_numpy(end))


def _texts(language: SplitLanguageModel, texts: list[str], max_length: int) -> torch.Tensor:
    """Each text's token mean through LM1 + LM2, unit length, with gradients (:func:`text_vectors`)."""
    encoded = language.tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    hidden = language(encoded["input_ids"], encoded["attention_mask"]).float()
    weights = encoded["attention_mask"].float()[..., None]
    return F.normalize((hidden * weights).sum(1) / weights.sum(1), dim=1)


def align(language: SplitLanguageModel, examples: list[SenseExample], sense_kg, usage: dict[int, tuple[str, ...]], *,
          steps: int, batch_size: int, candidates: int, lr: float, max_length: int, seed: int) -> list[float]:
    """Train ``language`` (module docstring); the loss of every step."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW([p for p in language.parameters() if p.requires_grad], lr=lr)
    language.train()
    losses = []
    for step in range(steps):
        batch = [examples[i] for i in rng.choice(len(examples), size=batch_size, replace=False)]
        texts, groups = [], []
        for e in batch:
            gold = next(iter(e.gold))
            others = [c for c in e.candidates if c != gold]
            chosen = [gold, *rng.permutation(others)[:candidates - 1].tolist()]
            groups.append(len(chosen))
            for c in chosen:  # leave one out: the example's own text is not in its sense's text
                texts.append(sense_text(sense_kg, c, tuple(u for u in usage.get(c, ()) if u != e.text)))
        context = F.normalize(_contexts(language, batch, max_length), dim=1)
        rows = _texts(language, texts, max_length)
        loss, begin = 0.0, 0
        for i, n in enumerate(groups):
            logits = rows[begin:begin + n] @ context[i] / COSINE_TEMPERATURE
            loss = loss + F.cross_entropy(logits[None], torch.zeros(1, dtype=torch.long))
            begin += n
        loss = loss / len(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % 50 == 0:
            print(f"step {step + 1}/{steps}: loss {np.mean(losses[-50:]):.3f}", flush=True)
    language.eval()
    return losses


@torch.no_grad()
def text_kg_scores(language: SplitLanguageModel, examples: list[SenseExample], kg, usage) -> list[np.ndarray]:
    """The task's ``(text + kg)`` cosines (β = 1) of ``language``."""
    candidates = _Candidates.of(examples, kg)
    _, rows = text_kg_rows(language, kg, candidates.used, SenseTexts(usage))
    return similarity_scores(examples, context_vectors(language, examples), rows, candidates.index, cosine=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="`jaket prepare wordnet-reference`'s folder")
    parser.add_argument("--model", type=Path, help="the pre-trained model folder (default: the base encoder)")
    parser.add_argument("--exclude", type=Path, nargs="*", default=[], help="sentence files kept out of training")
    parser.add_argument("--evaluate", type=Path, required=True, help="the framework's XML to read before and after")
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sense_kg, instances, evaluated = wsd_targets(args.evaluate, None)
    usage, counts = usage_examples(sense_kg, instances)
    examples, info = training_examples(args.data_dir, sense_kg, args.exclude)
    language = (JaketModel.from_pretrained(args.model, load_memory=False).language if args.model
                else SplitLanguageModel.from_pretrained(default_model_path()))
    read = Reading(instances, evaluated)
    before = text_kg_scores(language, evaluated, sense_kg, usage)
    began = time.time()
    losses = align(language, examples, sense_kg, usage, steps=args.steps, batch_size=args.batch_size,
                   candidates=args.candidates, lr=args.lr, max_length=args.max_length, seed=args.seed)
    seconds = time.time() - began
    after = text_kg_scores(language, evaluated, sense_kg, usage)
    language.save_pretrained(args.out / "encoder")
    settings = {k: [str(x) for x in v] if k == "exclude" else str(v) if isinstance(v, Path) else v
                for k, v in vars(args).items()}
    found = {"encoder": str(args.model or "the base encoder"),
             "training": {**info, **settings, "seconds": round(seconds), "loss first 50": float(np.mean(losses[:50])),
                          "loss last 50": float(np.mean(losses[-50:]))},
             "targets": len(evaluated), **counts,
             "first sense": read(first_sense_scores(evaluated).runs[0]),
             "(text + kg) before": read(before, paired=True), "(text + kg) aligned": read(after, paired=True),
             "(text + kg) before + aligned": read([a + b for a, b in zip(before, after)], paired=True)}
    print(json.dumps(found, indent=1))
    write_json(args.out / "alignment.json", found, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
