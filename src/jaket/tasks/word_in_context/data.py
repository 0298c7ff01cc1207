"""The data of the word-in-context task: pairs of texts sharing a target word, and its senses.

A :class:`WordPair` is two texts, the character span of the target word in each, its lemma and
part of speech, and (for training and evaluation) whether the word means the same in both.
Two formats are read (:func:`load_pairs`):

* **WiC** (Pilehvar and Camacho-Collados, 2019): ``*.data.txt`` lines
  ``lemma<TAB>POS (N|V)<TAB>i-j<TAB>sentence1<TAB>sentence2`` (sentences tokenised with single
  spaces, ``i`` / ``j`` the target's token positions) and, beside it, ``*.gold.txt`` with ``T`` / ``F``
  per line (optional: without it the pairs are unlabelled);
* **JSONL**, one object a line: ``{"lemma": "bank", "pos": "n", "text1": "...", "start1": 4,
  "end1": 8, "text2": "...", "start2": 0, "end2": 4, "label": true}`` (``pos`` and ``label``
  optional; spans are character offsets, end exclusive).

Every problem is reported as ``path:line: message`` (:class:`jaket.kg.errors.KGFormatError`).

A target word's candidate senses come from the sense inventory
(:class:`jaket.senses.inventory.SenseInventory`).
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from jaket.jsonio import quote
from jaket.kg.errors import KGFormatError, Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg
from jaket.kg.readers import json_objects, read_text_file
from jaket.kg.sources.wordnet import load_wordnet_data
from jaket.kg.sources.wordnet_forms import POS_CODES, part_of_speech
from jaket.senses.inventory import lemma_key


@dataclass(frozen=True)
class WordPair:
    """Two texts with the same target word; spans are ``[start, end)`` character offsets."""

    lemma: str
    pos: str | None
    text1: str
    start1: int
    end1: int
    text2: str
    start2: int
    end2: int
    label: bool | None = None

    def as_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _token_span(sentence: str, index: int) -> tuple[int, int] | None:
    tokens = sentence.split(" ")
    if not 0 <= index < len(tokens) or not tokens[index]:
        return None
    start = sum(len(t) + 1 for t in tokens[:index])
    return start, start + len(tokens[index])


def gold_path_of(data_path: Path) -> Path:
    """WiC's label file beside a data file: ``dev.data.txt`` -> ``dev.gold.txt``."""
    return data_path.with_name(data_path.name.replace(".data.", ".gold."))


def load_wic(data_path: str | Path, gold_path: str | Path | None = None) -> list[WordPair]:
    """WiC pairs (module docstring); labels from ``gold_path`` (default: the ``*.gold.txt`` beside
    the data file, when it exists)."""
    data_path = Path(data_path)
    if gold_path is None and gold_path_of(data_path) != data_path and gold_path_of(data_path).is_file():
        gold_path = gold_path_of(data_path)
    problems: list[Problem] = []
    pairs = []
    for number, line in read_text_file(data_path):
        parts = line.split("\t")
        if len(parts) != 5:
            problems.append(Problem(str(data_path), number, f"expected 5 tab-separated fields "
                                    f"(lemma, POS, i-j, sentence1, sentence2), got {len(parts)}"))
            continue
        lemma, pos, indices, first, second = parts
        match = re.fullmatch(r"(\d{1,9})-(\d{1,9})", indices.strip())
        if match is None:
            problems.append(Problem(str(data_path), number, f"token positions {quote(indices)} are not i-j"))
            continue
        spans = [_token_span(s, int(i)) for s, i in ((first, match[1]), (second, match[2]))]
        if None in spans:
            problems.append(Problem(str(data_path), number, f"token position outside its sentence ({indices})"))
            continue
        if not lemma.strip():
            problems.append(Problem(str(data_path), number, "empty lemma"))
            continue
        code = part_of_speech(pos, data_path, number, problems)
        pairs.append(WordPair(lemma.strip(), code, first, spans[0][0], spans[0][1], second, spans[1][0],
                              spans[1][1]))
    if gold_path is not None:
        gold_path = Path(gold_path)
        labels = []
        for number, line in read_text_file(gold_path):
            if line.strip() not in ("T", "F"):
                problems.append(Problem(str(gold_path), number, f"expected T or F, got {quote(line.strip())}"))
            labels.append(line.strip() == "T")
        if not problems and len(labels) != len(pairs):
            problems.append(Problem(str(gold_path), None, f"{len(labels)} labels for the {len(pairs)} "
                                    f"pairs of {data_path}"))
        if not problems:
            pairs = [WordPair(**{**asdict(p), "label": y}) for p, y in zip(pairs, labels)]
    if problems:
        raise KGFormatError(problems)
    return pairs


def load_pairs_jsonl(path: str | Path) -> list[WordPair]:
    """Pairs in our JSONL format (module docstring)."""
    path = Path(path)
    problems: list[Problem] = []
    pairs = []
    for number, row in json_objects(path, read_text_file(path), problems):
        missing = [k for k in ("lemma", "text1", "start1", "end1", "text2", "start2", "end2") if k not in row]
        if missing:
            problems.append(Problem(str(path), number, f"missing field(s) {', '.join(missing)}"))
            continue
        bad = False
        for k in ("1", "2"):
            text, start, end = row["text" + k], row["start" + k], row["end" + k]
            if not isinstance(text, str) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                    for v in (start, end)):
                problems.append(Problem(str(path), number, f"text{k} must be a string and start{k} / "
                                                           f"end{k} integers"))
                bad = True
            elif not 0 <= start < end <= len(text):
                problems.append(Problem(str(path), number, f"span [{quote(start)}, {quote(end)}) of text{k} is "
                                                           f"empty or outside the text (length {len(text)})"))
                bad = True
        label = row.get("label")
        if label is not None and not isinstance(label, bool):
            problems.append(Problem(str(path), number, f"label must be true, false or absent, not {quote(label)}"))
            bad = True
        if not isinstance(row["lemma"], str) or not row["lemma"].strip():
            problems.append(Problem(str(path), number, "lemma must be a non-empty string"))
            bad = True
        code = part_of_speech(row.get("pos"), path, number, problems)
        if bad:
            continue
        pairs.append(WordPair(row["lemma"].strip(), code, row["text1"], row["start1"], row["end1"],
                              row["text2"], row["start2"], row["end2"], label))
    if problems:
        raise KGFormatError(problems)
    return pairs


def load_pairs(path: str | Path, gold: str | Path | None = None) -> list[WordPair]:
    """:func:`load_pairs_jsonl` for ``*.jsonl``, else :func:`load_wic`."""
    path = Path(path)
    if path.suffix == ".jsonl":
        if gold is not None:
            raise ValueError(f"{gold}: a gold file goes with WiC's format; JSONL pairs carry their own labels")
        return load_pairs_jsonl(path)
    return load_wic(path, gold)


def wordnet_pairs(kg: KnowledgeGraph, count: int = 2000, seed: int = 0, eval_fraction: float = 0.25,
                  max_texts: int = 200_000) -> tuple[list[WordPair], list[WordPair]]:
    """``(train, eval)`` word-in-context pairs from WordNet's own usage examples (the embedded
    default; a demonstration only: a model pre-trained on these examples has seen them).

    Every example whose linked word is written exactly as one of its synset's lemmas gives a text;
    two texts of the same lemma and part of speech make a pair, labelled True when they illustrate
    the same synset; half the pairs are True. Lemmas are divided between the two parts (no lemma
    in both), so the evaluation asks about words the training never showed."""
    data = load_wordnet_data()
    position = {entity_id: i for i, entity_id in enumerate(kg.entity_ids)}
    groups: dict[tuple[str, str], dict[int, list[tuple[str, int, int]]]] = {}
    for entity, text, start, end in data.examples[:max_texts]:
        if start < 0 or data.ids[entity] not in position:
            continue
        written = lemma_key(text[start:end])
        if written not in {lemma_key(w) for w in data.lemmas[entity]}:
            continue
        pos = POS_CODES[data.synset_type[entity]]
        groups.setdefault((written, pos), {}).setdefault(entity, []).append((text, start, end))
    rng = random.Random(seed)
    keys = sorted(k for k, senses in groups.items() if len(senses) >= 2)
    rng.shuffle(keys)
    held = set(keys[:int(round(eval_fraction * len(keys)))])
    same, different = [], []
    for key in keys:
        senses = groups[key]
        entities = sorted(senses)
        for e in entities:
            texts = senses[e]
            for i in range(len(texts) - 1):
                same.append((key, texts[i], texts[i + 1], True))
        for a, b in zip(entities, entities[1:]):
            same_or_not = (key, rng.choice(senses[a]), rng.choice(senses[b]), False)
            different.append(same_or_not)
    rng.shuffle(same)
    rng.shuffle(different)
    half = min(len(same), len(different), count // 2)
    chosen = same[:half] + different[:half]
    rng.shuffle(chosen)
    train, evaluation = [], []
    for (lemma, pos), (t1, s1, e1), (t2, s2, e2), label in chosen:
        pair = WordPair(lemma, pos, t1, s1, e1, t2, s2, e2, label)
        (evaluation if (lemma, pos) in held else train).append(pair)
    return train, evaluation


def read_prediction_inputs(pairs, gold=None, kg_path=None) -> tuple[list[WordPair], KnowledgeGraph | None]:
    """``jaket predict word-in-context``'s inputs, read and checked before the model is loaded: the
    pairs (and gold labels) and the sense KG folder when one is given (``None``: WordNet 3.0, built
    after the model is loaded and only if its setting reads a KG)."""
    return load_pairs(pairs, gold), (load_kg(kg_path) if kg_path is not None else None)
