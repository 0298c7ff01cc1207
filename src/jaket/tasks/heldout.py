"""The unseen-KG protocol of entity classification on WordNet: hold out breadth-first regions
as KG' and keep the rest (triples and texts that never touch KG') for pre-training."""

from __future__ import annotations

import re

import numpy as np

from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.registry import build_source


def choose_heldout(kg: KnowledgeGraph, fraction: float, seed: int, regions: int = 8) -> np.ndarray:
    """Held-out entities for the unseen KG': ``regions`` breadth-first regions grown from random
    seed entities (over both directions of every triple) until ``fraction`` of the entities is
    taken. Regions keep the triples among held-out entities (a random subset would leave KG'
    nearly edgeless) while several regions keep several categories. ``ValueError`` for a
    ``fraction`` outside (0, 1] (none held out, or more than the KG has) or ``regions`` below 1."""
    n = int(kg.num_entities)
    if not 0 < fraction <= 1:
        raise ValueError(f"the held-out fraction must be in (0, 1] (a share of the KG's {n} entities), "
                         f"got {fraction}")
    if regions < 1:
        raise ValueError(f"the held-out entities need at least 1 region, got {regions}")
    target = max(1, int(round(fraction * n)))
    rng = np.random.default_rng(seed)
    adjacency = kg.adjacency
    taken = np.zeros(n, dtype=bool)
    per_region = max(1, target // regions)
    order = rng.permutation(n)
    cursor = 0
    while taken.sum() < target and cursor < n:
        root = int(order[cursor])
        cursor += 1
        if taken[root]:
            continue
        queue, size = [root], 0
        taken[root] = True
        size += 1
        head = 0
        limit = min(per_region, target - int(taken.sum()) + 1)
        while head < len(queue) and size < limit:
            v = queue[head]
            head += 1
            neigh = adjacency.neighbors[adjacency.indptr[v]:adjacency.indptr[v + 1]]
            for u in rng.permutation(neigh).tolist():
                if not taken[u] and size < limit:
                    taken[u] = True
                    queue.append(u)
                    size += 1
    return np.flatnonzero(taken)


def split_pretraining(kg: KnowledgeGraph, corpus: MentionCorpus | None, heldout: np.ndarray):
    """``(kg_pretrain, corpus_pretrain, kg_prime, info)``: KG' = the held-out entities and the
    triples among them; the pre-training KG = the rest; the pre-training corpus keeps only texts
    that mention no held-out entity (their mentions re-indexed), so pre-training never sees a
    KG' entity, neither as a node nor as a linked mention."""
    heldout = np.unique(np.asarray(heldout, dtype=np.int64))
    rest = np.setdiff1d(np.arange(kg.num_entities), heldout)
    kg_prime, _ = kg.induced_subgraph(heldout)
    kg_pre, old_of_new = kg.induced_subgraph(rest)
    new_of_old = np.full(kg.num_entities, -1, dtype=np.int64)
    new_of_old[old_of_new] = np.arange(len(old_of_new))
    texts, mentions, dropped = [], [], 0
    corpus_pre = None
    if corpus is not None:
        for text, ms in zip(corpus.texts, corpus.mentions):
            if any(new_of_old[m.entity] < 0 for m in ms):
                dropped += 1
                continue
            texts.append(text)
            mentions.append([Mention(m.start, m.end, int(new_of_old[m.entity])) for m in ms])
        corpus_pre = MentionCorpus(texts, mentions)
    info = {"heldout_entities": int(len(heldout)), "pretrain_entities": int(len(rest)),
            "heldout_triples": int(kg_prime.num_triples), "pretrain_triples": int(kg_pre.num_triples),
            "triples_crossing_dropped": int(kg.num_triples - kg_prime.num_triples - kg_pre.num_triples),
            "texts_kept": len(texts), "texts_dropped_mentioning_heldout": dropped}
    return kg_pre, corpus_pre, kg_prime, info


def wordnet_protocol(max_entities: int = 3000, heldout_fraction: float = 0.3, seed: int = 0,
                     roots: list[str] | None = None):
    """The embedded default: a WordNet subset split into a pre-training part and an unseen KG'
    (:func:`choose_heldout`, :func:`split_pretraining`). The same arguments give the same split,
    so ``jaket finetune entity-classification`` evaluates on exactly what ``jaket demo``'s
    pre-training excluded."""
    bundle = build_source("wordnet", max_entities=max_entities, roots=roots, seed=seed)
    kg, corpus = bundle.kg, bundle.corpus
    heldout = choose_heldout(kg, heldout_fraction, seed)
    return split_pretraining(kg, corpus, heldout)


def spelled_categories(names, text: str) -> list[str]:
    """The category ``names`` that ``text`` spells as whole words, ignoring case: ``"language"``
    in ``"a programming language"``, not in ``"languages"``; ``"art"`` not in ``"artifact"`` or
    ``"part"``; ``"noun.animal"`` in ``"dog: noun.animal"``."""
    return _spelled(_whole_word_patterns(names), text)


def _whole_word_patterns(names) -> list[tuple[str, str, re.Pattern]]:
    """``(name, lower-case name, whole-word pattern)`` of each non-empty name."""
    return [(name, name.lower(), re.compile(rf"(?<!\w){re.escape(name.lower())}(?!\w)"))
            for name in map(str, names) if name]


def _spelled(patterns: list[tuple[str, str, re.Pattern]], text: str) -> list[str]:
    lowered = text.lower()
    # the substring test first: most texts hold no name at all
    return [name for name, lower, pattern in patterns if lower in lowered and pattern.search(lowered)]


def label_leakage(kg: KnowledgeGraph) -> dict:
    """Whether any entity description spells a category: counts entity descriptions containing a
    full category name as whole words (:func:`spelled_categories`, e.g. ``noun.animal``; relation
    descriptions are not inputs of an entity's label and are not read) and, for information, the
    labelled descriptions containing their category's own final word as a word (``animal``) --
    ordinary vocabulary in a gloss, reported but not an input of the label."""
    names = [str(c) for c in kg.category_names]
    patterns = _whole_word_patterns(names)
    last_words = [_whole_word_patterns([name.split(".")[-1]]) for name in names]
    full_hits = dict.fromkeys(names, 0)
    own_word = 0
    examples: list[str] = []
    labels = np.asarray(kg.entity_category)
    for i, text in enumerate(kg.entity_descriptions):
        text = str(text)
        for name in _spelled(patterns, text):
            full_hits[name] += 1
            if len(examples) < 5 and str(kg.entity_ids[i]) not in examples:
                examples.append(str(kg.entity_ids[i]))
        if labels[i] >= 0:
            own_word += bool(_spelled(last_words[labels[i]], text))
    return {"descriptions_checked": len(kg.entity_descriptions),
            "descriptions_with_full_category_name": int(sum(full_hits.values())),
            "categories_spelled": sorted(c for c, k in full_hits.items() if k),
            "entities_spelling_a_category": examples,
            "labelled_descriptions_containing_own_category_word": int(own_word),
            "labelled_entities": int((labels >= 0).sum())}
