"""OBO ontologies (``.obo``, the format most biomedical ontologies ship: GO, HPO, DO, MONDO) as a
JAKET KG, read with ``pronto`` (``pip install jaket[obo]``) and mapped as OWL ontologies are
(:mod:`jaket.kg.sources.owl`, docs/data.md "Ontologies"):

- every term that is not obsolete is an entity: id = the term id (``GO:0008150``), name = its
  ``name``, aliases = its synonyms, description = its ``def`` (generated from its edges when it has
  none, counted in the report);
- ``is_a`` -> ``subclass of`` edges; each ``relationship: part_of GO:...`` line -> an edge of that
  relation (named by the typedef's name when the file has one);
- categories from the ``is_a`` hierarchy, as for OWL (``category_depth``, ``category_root``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.owl import BUILT_IN, SUBCLASS, assemble, words


def load_obo(path, category_depth: int | None = None, category_root: str | None = None
             ) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` of an OBO file (module docstring)."""
    try:
        import pronto
    except ModuleNotFoundError:
        raise ValueError("reading .obo files needs pronto: pip install jaket[obo]") from None
    import warnings

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pronto warns about every non-standard header line
        try:
            ontology = pronto.Ontology(str(path))
        except Exception as error:  # fastobo's own SyntaxError and friends: name the file
            raise ValueError(f"{path}: not a readable OBO file ({type(error).__name__}: {error})") from None
    terms = {t.id: t for t in ontology.terms() if not t.obsolete}
    obsolete = sum(1 for t in ontology.terms() if t.obsolete)
    edges, counts = [], Counter()
    relations = {SUBCLASS: BUILT_IN[SUBCLASS]}
    for term_id, term in sorted(terms.items()):
        for parent in term.superclasses(distance=1, with_self=False):
            if parent.id in terms:
                edges.append((term_id, SUBCLASS, parent.id))
                counts["is_a"] += 1
        for relation, targets in term.relationships.items():
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
    return kg, {"source": "obo", "file": str(path), "terms": len(terms), "obsolete_terms_skipped": obsolete,
                **report, "patterns": dict(sorted(counts.items()))}
