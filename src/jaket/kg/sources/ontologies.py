"""An ontology file in any published format to a KG: the format told from the content
(:mod:`jaket.kg.sources.formats`), read by its reader (:mod:`~jaket.kg.sources.obo`,
:mod:`~jaket.kg.sources.obographs`, :mod:`~jaket.kg.sources.owl`), its imports resolved from local
files, and the KG made by the rule they share (:mod:`jaket.kg.sources.ontology`)."""

from __future__ import annotations

from pathlib import Path

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.formats import OntologyError, sniff, wrong_command
from jaket.kg.sources.obo import read_obo
from jaket.kg.sources.obographs import read_obographs
from jaket.kg.sources.ontology import OntologyParts, build_ontology_kg, obo_id, resolve_imports
from jaket.kg.sources.owl import read_owl


def read_ontology(path, fmt: str | None = None, lang: str = "en", keep_axioms: bool = False,
                  definitions: tuple[str, ...] | None = None) -> OntologyParts:
    """:class:`OntologyParts` of an ontology file in any format jaket reads, chosen by its content."""
    kind = sniff(path)
    if kind == "obographs":
        return read_obographs(path)
    if kind == "obo" or (kind is None and Path(path).suffix.lower() == ".obo"):
        return read_obo(path)
    return read_owl(path, fmt, lang=lang, keep_axioms=keep_axioms, definitions=definitions)


def _load(path, parts: OntologyParts, imports, category_depth, category_root, read) -> tuple[KnowledgeGraph, dict]:
    imported = resolve_imports(parts, imports, read)
    if category_root is not None:
        category_root = obo_id(category_root)
    kg, report = build_ontology_kg(parts, category_depth, category_root)
    return kg, {**report, "imports": imported}


def load_obo(path, category_depth: int | None = None, category_root: str | None = None,
             imports: str | Path | None = None) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` of an OBO flat file or OBO Graphs JSON (``jaket kg import obo``);
    ``imports``: a folder holding local copies of the files its ``import:`` lines name."""
    refusal = wrong_command(path, "obo")
    if refusal:
        raise OntologyError(refusal)
    parts = read_obographs(path) if sniff(path) == "obographs" else read_obo(path)
    return _load(path, parts, imports, category_depth, category_root, read_ontology)


def load_owl(path, fmt: str | None = None, lang: str = "en", category_depth: int | None = None,
             category_root: str | None = None, keep_axioms: bool = False,
             definitions: tuple[str, ...] | None = None,
             imports: str | Path | None = None) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` of an OWL ontology in any of its syntaxes (``jaket kg import owl``;
    mapping in :mod:`jaket.kg.sources.owl`); ``imports`` as for :func:`load_obo`."""
    parts = read_owl(path, fmt, lang=lang, keep_axioms=keep_axioms, definitions=definitions)

    def read(local):
        return read_ontology(local, lang=lang, keep_axioms=keep_axioms, definitions=definitions)

    return _load(path, parts, imports, category_depth, category_root, read)


__all__ = ["load_obo", "load_owl", "read_ontology"]
