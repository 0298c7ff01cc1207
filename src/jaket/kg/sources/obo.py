"""OBO ontologies (``.obo``, the format most biomedical ontologies ship: GO, HPO, DO, MONDO) as a
JAKET KG, read with ``pronto`` (``pip install jaket[obo]``) and mapped as OWL ontologies are
(:mod:`jaket.kg.sources.owl`, docs/data.md "Ontologies"):

- every term that is not obsolete is an entity: id = the term id (``GO:0008150``), name = its
  ``name``, aliases = its synonyms, description = its ``def`` (generated from its edges when it has
  none, counted in the report); a name or synonym written with underscores (``material_entity``)
  is spoken with spaces, the written form an alias (:func:`jaket.kg.sources.owl.spoken`);
- ``is_a`` -> ``subclass of`` edges; each ``relationship: part_of GO:...`` line -> an edge of that
  relation (named by the typedef's name when the file has one);
- categories from the ``is_a`` hierarchy, as for OWL (``category_depth``, ``category_root``).

A file pronto cannot read, or a ``relationship`` whose relation has no ``[Typedef]``, is a
``ValueError`` naming ``path:line``. A term given by several ``[Term]`` stanzas is merged by pronto
(a second name or definition replaces the first): such terms are listed in the report and logged.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

from jaket.jsonio import quote
from jaket.kg.errors import Problem
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.readers import read_lines
from jaket.kg.sources.owl import BUILT_IN, SUBCLASS, assemble, words

logger = logging.getLogger(__name__)


def _where(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line else str(path)


def _read(path: Path):
    """``pronto.Ontology`` of the file; ValueError ``path:line: ...`` when pronto refuses it."""
    import warnings

    try:
        import pronto
    except ModuleNotFoundError:
        raise ValueError("reading .obo files needs pronto: pip install jaket[obo]") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pronto warns about every non-standard header line
        try:
            return pronto.Ontology(str(path))
        except Exception as error:  # fastobo's own SyntaxError and friends: name the file
            problems: list[Problem] = []
            read_lines(path, problems)  # invalid UTF-8: pronto does not say where
            match = re.search(r"line (\d+)", str(error))
            line = problems[0].line if problems else int(match.group(1)) if match else None
            raise ValueError(f"{_where(path, line)}: not a readable OBO file "
                             f"({type(error).__name__}: {' '.join(str(error).split())[:300]})") from None


def _undeclared(path: Path, relation: str) -> ValueError:
    """The error of a ``relationship: RELATION ...`` line whose relation has no ``[Typedef]``."""
    pattern = re.compile(rf"relationship:\s*{re.escape(relation)}(\s|$)")
    line = next((n for n, text in read_lines(path, []) if pattern.match(text.strip())), None)
    return ValueError(f"{_where(path, line)}: relationship {quote(relation)} has no [Typedef] stanza "
                      "(declare it, or leave its lines out)")


def _repeated_terms(path: Path) -> dict[str, list[int]]:
    """Term id -> the lines of its ``id:`` tags, for the terms given by several ``[Term]`` stanzas."""
    lines_of: dict[str, list[int]] = {}
    in_term = False
    for number, text in read_lines(path, []):
        text = text.strip()
        if text.startswith("["):
            in_term = text == "[Term]"
        elif in_term and text.startswith("id:"):
            lines_of.setdefault(text[3:].split("!")[0].strip(), []).append(number)
    return {term: lines for term, lines in lines_of.items() if len(lines) > 1}


def load_obo(path, category_depth: int | None = None, category_root: str | None = None
             ) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` of an OBO file (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    ontology = _read(path)
    terms = {t.id: t for t in ontology.terms() if not t.obsolete}
    obsolete = sum(1 for t in ontology.terms() if t.obsolete)
    edges, counts = [], Counter()
    relations = {SUBCLASS: BUILT_IN[SUBCLASS]}
    for term_id, term in sorted(terms.items()):
        for parent in term.superclasses(distance=1, with_self=False):
            if parent.id in terms:
                edges.append((term_id, SUBCLASS, parent.id))
                counts["is_a"] += 1
        try:
            relationships = dict(term.relationships.items())
        except KeyError as error:  # pronto: a relation without its [Typedef]
            raise _undeclared(path, str(error.args[0])) from None
        for relation, targets in relationships.items():
            name = relation.name or words(relation.id)
            relations.setdefault(relation.id, (name, relation.definition or name))
            for target in targets:
                if target.id in terms:
                    edges.append((term_id, relation.id, target.id))
                    counts[f"relationship {relation.id}"] += 1
                else:
                    counts["edges_to_obsolete_or_unknown_terms_skipped"] += 1
    if category_root is not None and category_root not in terms:
        raise ValueError(f"--category-root {category_root}: not a term of {path}")
    entity_ids = sorted(terms)
    name_of = {}
    for term_id in entity_ids:
        term = terms[term_id]
        name = term.name or term_id
        synonyms = [s.description for s in sorted(term.synonyms, key=lambda s: s.description)]
        name_of[term_id] = (name, [s for s in dict.fromkeys(synonyms) if s != name], term.name is not None)
    definitions = {t: (str(terms[t].definition) if terms[t].definition else None) for t in entity_ids}
    edges = list(dict.fromkeys(edges))
    kg, report = assemble(entity_ids, name_of, definitions, edges, relations, category_depth, category_root)
    repeated = _repeated_terms(path)
    if repeated:
        term, lines = next(iter(repeated.items()))
        logger.warning("%s: %d terms are given by several [Term] stanzas, merged (a second name or definition "
                       "replaces the first), e.g. %s at lines %s", path, len(repeated), term, lines)
    return kg, {"source": "obo", "file": str(path), "terms": len(terms), "obsolete_terms_skipped": obsolete,
                "terms_in_several_stanzas": dict(list(repeated.items())[:50]),
                **report, "patterns": dict(sorted(counts.items()))}
