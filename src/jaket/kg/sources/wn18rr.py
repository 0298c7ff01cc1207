"""WN18RR (Dettmers et al., 2018) with names, descriptions and categories from WordNet 3.0.

A WN18RR folder holds ``entities.dict`` and ``relations.dict`` (``index<TAB>id`` a line),
``train.txt`` and usually ``valid.txt`` / ``test.txt`` (``head<TAB>relation<TAB>tail``). The
KG is every entity of ``entities.dict`` plus the **training** triples; the valid and test files
are evaluation splits, read with :func:`jaket.kg.readers.read_split` against this KG
(entity ids stay WN18RR's 8-digit offsets, relation ids its ``_hypernym``-style names). Without
a ``.dict`` file, its entities (or relations) are collected from the three triple files in order of
first appearance.

**Resolving offsets.** WN18RR entities are byte offsets into the WordNet 3.0 data files without
their part of speech. Each offset is looked up in all four files
(:func:`jaket.kg.sources.wordnet.synset_offsets_index`). When several files hold a synset at
that offset (232 of the 40,943 entities), the part of speech whose synset is linked in WordNet to
the most of the entity's training-triple neighbours wins. When several synsets are equally
supported, WN18RR has merged them into one entity (``ambiguous_conflated``, 25 in WN18RR: e.g.
``02515214`` is both ``crossopterygian.n.01`` and ``peccable.s.01``): the first of them in noun,
verb, adjective, adverb order names it, the others' lemmas become aliases and the descriptions
are joined with `` | ``. When no triple decides, that order alone chooses
(``ambiguous_undecided``). An offset found in no
file keeps the offset as its name and gets a placeholder description; it is counted
(``unresolved``) and listed in the report.

Entity name = the synset's first lemma, aliases = its other lemmas and description / category as
in :mod:`jaket.kg.sources.wordnet` (``"lemmas: definition"``, lexicographer file).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.errors import FirstLines, KGFormatError, Problem, not_a_file
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import read_field_lines, read_triples
from jaket.kg.sources.wordnet import load_wordnet_data

logger = logging.getLogger(__name__)

#: the 11 WN18RR relations: id -> (name, description), in WN18RR's direction
RELATIONS: dict[str, tuple[str, str]] = {
    "_hypernym": ("hypernym", "The head is a kind of the tail: the tail is the more general concept."),
    "_instance_hypernym": ("instance hypernym",
                           "The head is a particular individual, place or thing that is an instance of "
                           "the tail, a general class."),
    "_member_meronym": ("member meronym",
                        "The tail is one of the members that make up the head, a group such as a genus "
                        "or an organisation."),
    "_has_part": ("has part", "The tail is a component part of the head, the whole it belongs to."),
    "_synset_domain_topic_of": ("synset domain topic of",
                                "The head is used within the subject field or topic named by the tail."),
    "_member_of_domain_region": ("member of domain region",
                                 "The tail belongs to or is used in the geographical or cultural region "
                                 "named by the head."),
    "_member_of_domain_usage": ("member of domain usage",
                                "The tail is marked by the head as a particular kind of usage, such as "
                                "slang or an idiom."),
    "_derivationally_related_form": ("derivationally related form",
                                     "A word of the head and a word of the tail share a root, one being "
                                     "morphologically derived from the other."),
    "_also_see": ("also see", "The two words are closely related in meaning and each is worth consulting "
                              "when reading the other."),
    "_verb_group": ("verb group", "The two verb senses are so similar in meaning that lexicographers "
                                  "grouped them together."),
    "_similar_to": ("similar to", "The two adjectives have closely related meanings, one being a satellite "
                                  "of the other's cluster."),
}

_POS_PRIORITY = ("n", "v", "a", "r")


def _read_dict(path: Path, problems: list[Problem]) -> list[str]:
    """The ids of an ``index<TAB>id`` file, in index order."""
    rows: dict[int, str] = {}
    seen = FirstLines()
    for number, line in read_field_lines(path, problems):
        parts = line.split("\t")
        index = parts[0].strip()
        if len(parts) != 2 or not (index.isascii() and index.isdigit()) or not parts[1].strip():
            problems.append(Problem(str(path), number, f"expected index<TAB>id, got {quote(line)}"))
            continue
        index, value = int(parts[0]), parts[1].strip()
        if index in rows:
            problems.append(Problem(str(path), number, f"index {index} given twice"))
        elif not seen.repeated(value, number, path, f"id {quote(value)}", problems):
            rows[index] = value
    if rows and sorted(rows) != list(range(len(rows))):
        problems.append(Problem(str(path), None, "indices are not 0..n-1"))
    return [rows[i] for i in sorted(rows)]


def _read_ids(folder: Path, triple_files: list[list], problems: list[Problem]) -> tuple[list[str], list[str], str]:
    """Entity and relation ids in index order: from ``entities.dict`` / ``relations.dict``, or
    without one every id of its kind met in the ``triple_files`` (their rows) in order of first
    appearance; and which."""
    tables, how = [], []
    for name, fields in (("entities.dict", (1, 3)), ("relations.dict", (2,))):
        if (folder / name).is_file():
            tables.append(_read_dict(folder / name, problems))
            how.append(name)
        else:
            tables.append(list(dict.fromkeys(row[f] for rows in triple_files for row in rows for f in fields)))
            how.append(f"{name.split('.')[0]} collected from the triple files")
    return tables[0], tables[1], ", ".join(how)


def _index_triples(train_path: Path, train: list, entity_ids: list[str], relation_ids: list[str],
                   problems: list[Problem]) -> list[tuple[int, int, int]]:
    """The training triples as (head, relation, tail) indices; a line naming an id missing from
    the tables is a problem."""
    entity_index = {e: i for i, e in enumerate(entity_ids)}
    relation_index = {r: i for i, r in enumerate(relation_ids)}
    rows = []
    for number, h, r, t in train:
        missing = [f"{what} {quote(value)}" for what, value, table in
                   (("head", h, entity_index), ("relation", r, relation_index), ("tail", t, entity_index))
                   if value not in table]
        if missing:
            problems.append(Problem(str(train_path), number, f"unknown {', '.join(missing)}"))
            continue
        rows.append((entity_index[h], relation_index[r], entity_index[t]))
    return rows


@dataclass
class _Resolution:
    """Which WordNet synset each entity's offset stands for (see the module docstring)."""

    synset: np.ndarray  # (N,) synset index, -1 = unresolved
    ambiguous: int  # offsets present in several WordNet files
    conflated: dict[int, list[int]]  # entity -> every synset its triples support (tied)
    undecided: list[str]  # ambiguous ids no triple decides


def _resolve_offsets(entity_ids: list[str], rows: list[tuple[int, int, int]], wordnet) -> _Resolution:
    """Look each offset up in the four WordNet files; an offset in several is decided by the
    training neighbours its candidate synsets are linked to in WordNet (ties: conflated when
    supported, else undecided, both named by the first in noun, verb, adjective, adverb order)."""
    candidates: list[list[int]] = []
    for entity in entity_ids:
        if not (entity.isascii() and entity.isdigit() and len(entity) <= 8):
            candidates.append([])
            continue
        offset = int(entity)
        candidates.append([wordnet.offset_index[(offset, pos)] for pos in _POS_PRIORITY
                           if (offset, pos) in wordnet.offset_index])
    linked = set()
    ambiguous = [i for i, c in enumerate(candidates) if len(c) > 1]
    if ambiguous:
        w = wordnet.triples
        linked = set(zip(w[:, 0].tolist(), w[:, 2].tolist()))
        linked |= {(b, a) for a, b in linked}
    neighbours: dict[int, list[int]] = {i: [] for i in ambiguous}
    for h, _, t in rows:
        if h in neighbours:
            neighbours[h].append(t)
        if t in neighbours:
            neighbours[t].append(h)
    resolution = _Resolution(np.full(len(entity_ids), -1, dtype=np.int64), len(ambiguous), {}, [])
    for i, options in enumerate(candidates):
        if len(options) == 1:
            resolution.synset[i] = options[0]
        elif options:
            scores = [sum(any((option, other) in linked for other in candidates[j]) for j in neighbours[i])
                      for option in options]
            best = max(scores)
            winners = [o for o, s in zip(options, scores) if s == best]
            resolution.synset[i] = winners[0]  # candidates are in noun, verb, adjective, adverb order
            if len(winners) > 1 and best > 0:
                resolution.conflated[i] = winners
            elif len(winners) > 1:
                resolution.undecided.append(entity_ids[i])
    return resolution


def _entity_tables(entity_ids: list[str], resolution: _Resolution, wordnet):
    """Names, descriptions, aliases and category names (None: no category) of the entities; a
    conflated entity joins its synsets' descriptions with `` | `` and takes their lemmas as aliases."""
    names, descriptions, aliases, categories = [], [], [], []
    for i, (entity, s) in enumerate(zip(entity_ids, resolution.synset.tolist())):
        if s < 0:
            names.append(entity)
            descriptions.append(f"{entity}: an entity of WN18RR not found in WordNet 3.0")
            aliases.append([])
            categories.append(None)
            continue
        names.append(wordnet.names[s])
        alias_list = list(wordnet.aliases[s])
        description = wordnet.descriptions[s]
        for other in resolution.conflated.get(i, [])[1:]:
            alias_list.extend(a for a in [wordnet.names[other], *wordnet.aliases[other]]
                              if a not in alias_list and a != wordnet.names[s])
            description += " | " + wordnet.descriptions[other]
        descriptions.append(description)
        aliases.append(alias_list)
        categories.append(wordnet.category_names[wordnet.category[s]])
    return names, descriptions, aliases, categories


def _log_resolution(folder: Path, resolution: _Resolution, unresolved: list[str]) -> None:
    if unresolved:
        logger.warning("%s: %d entities are not WordNet 3.0 synset offsets (kept with placeholder "
                       "descriptions), e.g. %s", folder, len(unresolved), quote(unresolved[0]))
    if resolution.conflated:
        logger.info("%s: %d entities stand for several synsets at the same offset (their triples "
                    "support each one); their descriptions combine them", folder, len(resolution.conflated))
    if resolution.undecided:
        logger.info("%s: %d offsets name synsets in several WordNet files and no triple decides; "
                    "the noun/verb/adjective/adverb order chose", folder, len(resolution.undecided))


def load_wn18rr(folder, wordnet_directory=None) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` for a WN18RR folder (see the module docstring).

    Raises :class:`jaket.kg.io.KGFormatError` listing every malformed line (``path:line:
    message``), including training triples that name an entity or relation missing from the
    ``.dict`` files.
    """
    folder = Path(folder)
    train_path = folder / "train.txt"
    if not folder.is_dir():
        raise KGFormatError([Problem(str(folder), None, "not a directory")])
    if not train_path.is_file():
        raise KGFormatError([not_a_file(train_path, "a WN18RR folder has train.txt")])
    problems: list[Problem] = []
    split_paths = [p for p in (folder / "valid.txt", folder / "test.txt") if p.is_file()]
    for other in (folder / "valid.txt", folder / "test.txt"):
        if other.exists() and not other.is_file():  # not silently read as "no such split"
            problems.append(Problem(str(other), None, "not a file (a WN18RR split is a triples file)"))
    train = read_triples(train_path, problems)
    splits = [read_triples(path, problems) for path in split_paths]  # every bad line at once
    entity_ids, relation_ids, dictionaries = _read_ids(folder, [train, *splits], problems)
    rows = _index_triples(train_path, train, entity_ids, relation_ids, problems)
    if problems:
        raise KGFormatError(problems)

    wordnet = load_wordnet_data(wordnet_directory)
    resolution = _resolve_offsets(entity_ids, rows, wordnet)
    synset = resolution.synset
    unresolved = [entity_ids[i] for i in range(len(entity_ids)) if synset[i] < 0]
    _log_resolution(folder, resolution, unresolved)

    names, descriptions, aliases, categories = _entity_tables(entity_ids, resolution, wordnet)
    category_names = sorted({c for c in categories if c is not None})
    category_of = {c: k for k, c in enumerate(category_names)}
    unknown_relations = [r for r in relation_ids if r not in RELATIONS]
    kg = KnowledgeGraph(
        entity_ids=list(entity_ids), entity_names=names, entity_descriptions=descriptions,
        entity_aliases=aliases,
        entity_category=np.array([category_of[c] if c is not None else -1 for c in categories], dtype=np.int32),
        category_names=category_names, relation_ids=list(relation_ids),
        relation_names=[RELATIONS[r][0] if r in RELATIONS else r.strip("_").replace("_", " ")
                        for r in relation_ids],
        relation_descriptions=[RELATIONS[r][1] if r in RELATIONS else r.strip("_").replace("_", " ")
                               for r in relation_ids],
        triples=np.asarray(rows, dtype=np.int32).reshape(-1, 3))
    pos_counts = Counter(wordnet.synset_type[s] for s in synset.tolist() if s >= 0)
    conflated, undecided = resolution.conflated, resolution.undecided
    report = {
        "source": "wn18rr",
        "folder": str(folder),
        "dictionaries": dictionaries,
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": kg.num_categories,
        "splits": [p.name for p in split_paths],
        "resolved": int((synset >= 0).sum()),
        "resolved_by_synset_type": dict(sorted(pos_counts.items())),
        "ambiguous_offsets": resolution.ambiguous,
        "ambiguous_resolved_by_triples": resolution.ambiguous - len(conflated) - len(undecided),
        "ambiguous_conflated": len(conflated),
        "ambiguous_conflated_synsets": {entity_ids[i]: [wordnet.ids[o] for o in options]
                                        for i, options in list(conflated.items())[:50]},
        "ambiguous_undecided": len(undecided),
        "ambiguous_undecided_ids": undecided[:50],
        "unresolved": len(unresolved),
        "unresolved_ids": unresolved[:50],
        "relations_without_description": unknown_relations,
    }
    return kg, report
