"""RDF graphs (N-Triples, Turtle, and whatever else ``rdflib`` parses) as a JAKET KG.

Mapping (``rdfs:`` = RDF Schema, ``skos:`` = SKOS, ``schema:`` = schema.org, http or https):

- **Entities** are the IRIs that are the subject or object of a relation triple (below), plus
  the subjects that only carry a label, a description or a type, unless they are used as a
  predicate or only as a class (the object of ``rdf:type``). Entity id = the IRI.
- **Name** = ``rdfs:label`` (else ``skos:prefLabel``, ``schema:name``): an English or untagged
  literal is preferred, then the smallest; without one, the IRI's local name (the part after the
  last ``#``, ``/`` or ``:``, percent-decoded, underscores as spaces). **Aliases** = the other
  labels and ``skos:altLabel``.
- **Description** = ``rdfs:comment`` (else ``schema:description``, ``skos:definition``,
  ``dcterms:description``), prefixed with ``"name: "`` when it does not start with the name, so the
  paper's description mention is always found and the first tokens the model reads name the
  entity; without one, the name alone.
- **Category** = the ``rdf:type`` object (its label, else its local name; classes whose names
  collide keep their full IRIs). An entity with several types gets the smallest class IRI;
  the others are counted in the report.
- **Relations**: every other triple whose object is an IRI is a triple; relation id = the
  predicate IRI, name = the predicate's ``rdfs:label`` when the graph has one, else its local
  name; description = its ``rdfs:comment``, else its name with the camelCase split into words.
- Other literal-valued triples are ignored and counted per predicate in the report; triples with
  a blank node are ignored and counted too (blank nodes have no stable id to give an entity).

Parse errors become :class:`RDFImportError` naming the file and, when known, the line; so does a
term no KG can hold (an IRI with a tab, a line break or a NUL; text with a lone surrogate, which
escapes such as ``"\uD800"`` can write). A UTF-8 byte order mark at the start is dropped; a file
that fails to parse and starts with a UTF-16 or UTF-32 one is named as such (save it as UTF-8).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from jaket.jsonio import quote, wide_encoding
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.formats import wrong_command
from jaket.paths import require_package

logger = logging.getLogger(__name__)

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
OWL = "http://www.w3.org/2002/07/owl#"
_SCHEMA = ("http://schema.org/", "https://schema.org/")

LABELS = [RDFS + "label", SKOS + "prefLabel"] + [s + "name" for s in _SCHEMA]
ALT_LABELS = [SKOS + "altLabel"]
DESCRIPTIONS = ([RDFS + "comment"] + [s + "description" for s in _SCHEMA]
                + [SKOS + "definition", "http://purl.org/dc/terms/description",
                   "http://purl.org/dc/elements/1.1/description"])
_ANNOTATIONS = set(LABELS) | set(ALT_LABELS) | set(DESCRIPTIONS)

_FORMATS = {".ttl": "turtle", ".turtle": "turtle", ".nt": "nt", ".ntriples": "nt", ".n3": "n3",
            ".rdf": "xml", ".xml": "xml", ".owl": "xml", ".jsonld": "json-ld", ".json": "json-ld",
            ".trig": "trig", ".nq": "nquads", ".trix": "trix"}
_NOT_IN_IDS = re.compile("[\t\n\r\x00]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF8_BOM = b"\xef\xbb\xbf"


class RDFImportError(ValueError):
    """An RDF file cannot be read; the message names the file (and the line when known)."""


def local_name(iri: str) -> str:
    """The last segment of an IRI (after ``#``, ``/`` or ``:``), percent-decoded."""
    stripped = iri.rstrip("/#")
    for separator in ("#", "/", ":"):
        if separator in stripped:
            candidate = stripped.rsplit(separator, 1)[1]
            if candidate:
                return unquote(candidate)
    return unquote(stripped) or iri


def _words(name: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name.replace("_", " "))
    return re.sub(r"\s+", " ", text).strip().lower() or name


def guess_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    fmt = _FORMATS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise RDFImportError(f"{path}: cannot tell the RDF format from the extension; give one of "
                             f"{', '.join(sorted(set(_FORMATS.values())))} explicitly")
    return fmt


def _source(path: Path):
    """A binary handle on the file (decompressed when ``.gz``), past a UTF-8 byte order mark."""
    import gzip

    handle = gzip.open(path, "rb") if path.suffix.lower() == ".gz" else path.open("rb")
    if handle.read(len(_UTF8_BOM)) != _UTF8_BOM:
        handle.seek(0)
    return handle


def _wide_start(path: Path) -> str | None:
    """:func:`jaket.jsonio.wide_encoding` of the file's first bytes (None when they cannot be read)."""
    try:
        with _source(path) as handle:
            return wide_encoding(handle.read(4))
    except OSError:  # a broken .gz: the parse error says it
        return None


def _first_line(path: Path, reject) -> int | None:
    """The number of the first line of the file that ``reject`` (given its bytes) is true of."""
    with _source(path) as handle:
        for number, raw in enumerate(handle, 1):
            if reject(raw):
                return number
    return None


def _line_graph(raw: bytes, fmt: str):
    """The graph of one line of a line-based file (N-Triples, N-Quads); None when rdflib rejects it."""
    import rdflib

    graph = rdflib.Graph() if fmt == "nt" else rdflib.Dataset()
    try:
        graph.parse(data=raw.decode("utf-8"), format=fmt)
    except Exception:  # noqa: BLE001 - any rejection pinpoints the line
        return None
    return graph


def _bad_term(triples) -> str | None:
    """Why a term of ``triples`` cannot go into a KG, or None: an IRI holding a tab, a line break
    or a NUL (no id can), text holding a lone surrogate (not Unicode: it cannot be written)."""
    from rdflib import URIRef

    for triple in triples:
        for term in triple:
            if isinstance(term, URIRef) and _NOT_IN_IDS.search(term):
                return f"the IRI {quote(str(term))} holds a tab, a line break or a NUL"
            if not term.isascii() and _SURROGATE.search(term):
                return f"{quote(str(term))} holds a lone surrogate, which is not Unicode text"
    return None


def _error_line(error: Exception, path: Path, fmt: str) -> int | None:
    line = getattr(error, "lines", None)  # rdflib's notation3 BadSyntax: 0-based line
    if isinstance(line, int):
        return line + 1
    if callable(getattr(error, "getLineNumber", None)) and isinstance(error.getLineNumber(), int):
        return error.getLineNumber()  # xml.sax's SAXParseException (RDF/XML)
    if isinstance(error, UnicodeDecodeError):
        return _first_line(path, lambda raw: not _decodes(raw))
    match = re.search(r"line (\d+)", str(error))
    if match:
        return int(match.group(1))
    if fmt in ("nt", "nquads"):  # line-based: find the first line rdflib rejects on its own
        return _first_line(path, lambda raw: raw.strip() and _line_graph(raw, fmt) is None)
    return None


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _message(error: Exception) -> str:
    why = getattr(error, "_why", None)
    text = why if isinstance(why, str) and why else str(error)
    return " ".join(text.split())[:300]


def parse_rdf(path, fmt: str | None = None):
    """An ``rdflib.Graph`` of the file (of N-Quads, TriG, TriX, JSON-LD: the triples of all its graphs);
    :class:`RDFImportError` (``path:line: message``) when the file is missing or malformed."""
    rdflib = require_package("rdflib", "rdf")  # one line naming jaket[rdf] when it is missing

    path = Path(path)
    if not path.is_file():
        raise RDFImportError(f"{path}: no such file")
    fmt = fmt or guess_format(path)
    quads = fmt in ("nquads", "trig", "trix", "json-ld")  # named graphs (a Graph would keep none of their triples)
    dataset = rdflib.Dataset() if quads else rdflib.Graph()
    try:
        with _source(path) as handle:
            dataset.parse(file=handle, format=fmt, publicID=path.absolute().as_uri())
    except OSError as error:
        if error.filename is not None:  # not read at all (permission denied, a folder): not a malformed file
            raise
        raise RDFImportError(f"{path}: malformed {fmt} ({_message(error)})") from None  # a broken .gz
    except Exception as error:  # noqa: BLE001 - rdflib raises many types; all are the file's fault
        if fmt not in ("xml", "trix") and (wide := _wide_start(path)):  # only XML may declare UTF-16 / UTF-32
            raise RDFImportError(f"{path}:1: {wide}") from None
        try:
            line = _error_line(error, path, fmt)
        except OSError:  # a broken .gz cannot be read again to find the line: the error says why
            line = None
        where = f"{path}:{line}" if line else str(path)
        raise RDFImportError(f"{where}: malformed {fmt} ({_message(error)})") from None
    graph = dataset
    if quads:  # the triples of every graph, as one graph
        graph = rdflib.Graph()
        for s, p, o, _ in dataset.quads((None, None, None, None)):
            graph.add((s, p, o))
    problem = _bad_term(graph)
    if problem:
        line = None
        if fmt in ("nt", "nquads"):
            line = _first_line(path, lambda raw: _bad_term(_line_graph(raw, fmt) or ()) is not None)
        raise RDFImportError(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")
    return graph


def _rank(language: str | None) -> int:
    """0 for an English or untagged literal (preferred), 1 for another language."""
    return 0 if (language or "en").lower().startswith("en") else 1


def _pick(literals: list) -> tuple[str | None, list[str]]:
    """The preferred literal of ``(rank, text)`` pairs (English or untagged first, then the
    smallest) and the others."""
    if len(literals) == 1:  # the common case, without the sort
        text = literals[0][1].strip()
        return (text, []) if text else (None, [])
    ranked = sorted({(rank, text) for rank, text in literals if text.strip()})
    if not ranked:
        return None, []
    values = list(dict.fromkeys(text.strip() for _, text in ranked))
    return values[0], values[1:]


_LABEL_SET, _NAME_SET, _DESCRIPTION_SET = frozenset(LABELS), frozenset(LABELS + ALT_LABELS), frozenset(DESCRIPTIONS)


@dataclass
class _Statements:
    """An RDF graph's triples sorted by what the mapping makes of them."""

    labels: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)  # subject -> (predicate, text, rank)
    types: dict[str, set[str]] = field(default_factory=dict)  # subject -> rdf:type objects
    relation_rows: list[tuple[str, str, str]] = field(default_factory=list)
    predicates: set[str] = field(default_factory=set)
    subjects: set[str] = field(default_factory=set)  # subjects of an annotation or a type
    ignored_literals: Counter = field(default_factory=Counter)
    blank: int = 0  # triples with a blank node

    def _by_predicate(self, iri: str) -> dict[str, list[tuple[int, str]]]:
        grouped: dict[str, list[tuple[int, str]]] = {}
        for predicate, text, rank in self.labels.get(iri, ()):
            grouped.setdefault(predicate, []).append((rank, text))
        return grouped

    def name_of(self, iri: str) -> tuple[str, list[str], bool]:
        """(name, aliases, whether the name comes from a label) of ``iri``."""
        entries = self.labels.get(iri)
        if entries:
            names = [e for e in entries if e[0] in _NAME_SET]
            if len(names) == 1 and names[0][0] in _LABEL_SET and names[0][1].strip():
                return names[0][1].strip(), [], True  # one label, no other name: the common case
        annotations = self._by_predicate(iri) if entries else {}
        values: list[str] = []
        has_label = False  # a label that is not blank
        for predicate in LABELS + ALT_LABELS:
            best, others = _pick(annotations.get(predicate, []))
            if best is not None:
                values += [best, *others]
                has_label = has_label or predicate in LABELS
        name = values[0] if has_label else local_name(iri).replace("_", " ")
        return name, [v for v in dict.fromkeys(values) if v != name], has_label

    def description_of(self, iri: str) -> str | None:
        """The preferred literal of the first description predicate ``iri`` has."""
        entries = self.labels.get(iri)
        if not entries:
            return None
        described = [e for e in entries if e[0] in _DESCRIPTION_SET]
        if len(described) <= 1:  # none, or one: no ranking to do
            return described[0][1].strip() or None if described else None
        annotations = self._by_predicate(iri)
        for predicate in DESCRIPTIONS:
            best, _ = _pick(annotations.get(predicate, []))
            if best is not None:
                return best
        return None


def _sort_statements(graph, rdflib) -> _Statements:
    """Annotations (labels, descriptions), types and relation triples of ``graph``; other
    literal-valued triples and those with a blank node are counted."""
    found = _Statements()
    for s, p, o in graph:
        if isinstance(s, rdflib.BNode) or isinstance(o, rdflib.BNode):
            found.blank += 1
            continue
        if not isinstance(s, rdflib.URIRef) or not isinstance(p, rdflib.URIRef):
            continue  # a literal subject or predicate: not RDF 1.1, rdflib's generalised graphs only
        s, p_iri = str(s), str(p)
        found.predicates.add(p_iri)
        if isinstance(o, rdflib.Literal):
            if p_iri in _ANNOTATIONS:
                found.labels.setdefault(s, []).append((p_iri, str(o), _rank(o.language)))
                found.subjects.add(s)
            else:
                found.ignored_literals[p_iri] += 1
            continue
        o_iri = str(o)
        if p_iri == RDF_TYPE:
            found.types.setdefault(s, set()).add(o_iri)
            found.subjects.add(s)
        else:
            found.relation_rows.append((s, p_iri, o_iri))
    return found


def _entity_tables(found: _Statements, entity_ids: list[str], classes: set[str]):
    """Names, aliases, descriptions (prefixed with the name when they lack it) and category
    names (None: untyped) of the entities, and the counts the report gives of them."""
    class_label = {c: found.name_of(c)[0] for c in classes}
    counts = Counter(class_label.values())
    category_of_class = {c: (label if counts[label] == 1 else c) for c, label in class_label.items()}
    names, aliases, descriptions, categories = [], [], [], []
    tally = {"entities_without_label": 0, "entities_without_description": 0, "extra_types_ignored": 0}
    labels_get = found.labels.get
    for iri in entity_ids:
        simple = _one_label(labels_get(iri))
        if simple is not None:  # one label and at most one description: name_of's and description_of's answer
            (name, description), alias_list, labelled = simple, [], True
        else:
            name, alias_list, labelled = found.name_of(iri)
            description = found.description_of(iri)
        tally["entities_without_label"] += not labelled
        if description is None:
            tally["entities_without_description"] += 1
            description = name
        elif not description.lower().startswith(name.lower()):
            description = f"{name}: {description}"  # its first tokens name it (docs/data.md)
        names.append(name)
        aliases.append(alias_list)
        descriptions.append(description)
        entity_types = found.types.get(iri)
        if entity_types:
            tally["extra_types_ignored"] += len(entity_types) - 1
            categories.append(category_of_class[min(entity_types) if len(entity_types) > 1
                                                else next(iter(entity_types))])
        else:
            categories.append(None)
    return names, aliases, descriptions, categories, tally


def _one_label(entries: list | None) -> tuple[str, str | None] | None:
    """``(name, description)`` of annotations holding exactly one non-blank label (no other name)
    and at most one description, as :meth:`_Statements.name_of` and
    :meth:`_Statements.description_of` give them; None for any other case (the common case of a
    large dump, read without their lists and sorts)."""
    if not entries or len(entries) > 2:
        return None
    label = description = None
    for predicate, text, _ in entries:
        if predicate in _LABEL_SET and label is None:
            label = text
        elif predicate in _DESCRIPTION_SET and description is None:
            description = text
        else:
            return None
    if label is None or not label.strip():
        return None
    return label.strip(), (description.strip() or None) if description is not None else None


def _relation_tables(found: _Statements, relation_ids: list[str]) -> tuple[list[str], list[str]]:
    """Relation names (label, else local name) and descriptions (comment, else the name's words)."""
    names, descriptions = [], []
    for iri in relation_ids:
        name, _, labelled = found.name_of(iri)
        if not labelled:
            name = local_name(iri)
        names.append(name)
        comment = found.description_of(iri)
        descriptions.append(comment if comment is not None else _words(name))
    return names, descriptions


def assemble_kg(found: _Statements, entity_ids: list[str], classes: set[str], relation_ids: list[str],
                triples: np.ndarray) -> tuple[KnowledgeGraph, dict]:
    """The KG of the sorted statements (names, descriptions, categories, relation tables) and the
    triples given as indices; the counts the report gives. Shared by the rdflib and streamed paths."""
    names, aliases, descriptions, entity_categories, tally = _entity_tables(found, entity_ids, classes)
    category_names = sorted({c for c in entity_categories if c is not None})
    category_index = {c: k for k, c in enumerate(category_names)}
    relation_names, relation_descriptions = _relation_tables(found, relation_ids)
    kg = KnowledgeGraph(
        entity_ids=entity_ids, entity_names=names, entity_descriptions=descriptions, entity_aliases=aliases,
        entity_category=np.array([category_index[c] if c is not None else -1 for c in entity_categories],
                                 dtype=np.int32),
        category_names=category_names, relation_ids=relation_ids, relation_names=relation_names,
        relation_descriptions=relation_descriptions, triples=triples)
    return kg, tally


def load_rdf(path, fmt: str | None = None) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` for an RDF file (mapping in the module docstring)."""
    rdflib = require_package("rdflib", "rdf")

    path = Path(path)
    refusal = wrong_command(path, "rdf") if fmt is None and path.is_file() else None
    if refusal:
        raise RDFImportError(refusal)
    graph = parse_rdf(path, fmt)
    found = _sort_statements(graph, rdflib)
    relation_rows = found.relation_rows
    in_relations = {x for s, _, o in relation_rows for x in (s, o)}
    classes = {c for cs in found.types.values() for c in cs}
    entity_set = in_relations | {s for s in found.subjects if s not in found.predicates and s not in classes}
    entity_ids = sorted(entity_set)
    relation_ids = sorted({p for _, p, _ in relation_rows})
    e_index = {e: i for i, e in enumerate(entity_ids)}
    r_index = {r: i for i, r in enumerate(relation_ids)}
    triples = np.array(sorted((e_index[s], r_index[p], e_index[o]) for s, p, o in relation_rows),
                       dtype=np.int32).reshape(-1, 3)
    kg, tally = assemble_kg(found, entity_ids, classes, relation_ids, triples)
    ignored_literals, blank = found.ignored_literals, found.blank
    report = {
        "source": "rdf",
        "file": str(path),
        "rdf_triples": len(graph),
        "entities": kg.num_entities,
        "relations": kg.num_relations,
        "triples": kg.num_triples,
        "categories": kg.num_categories,
        **tally,
        "literal_triples_ignored": sum(ignored_literals.values()),
        "literal_triples_ignored_by_predicate": dict(ignored_literals.most_common(50)),
        "blank_node_triples_ignored": blank,
    }
    if ignored_literals or blank:
        logger.info("%s: %d literal-valued and %d blank-node triples ignored (see the report)", path,
                    sum(ignored_literals.values()), blank)
    _hint_owl(graph, rdflib, path, report)
    return kg, report


def _hint_owl(graph, rdflib, path: Path, report: dict) -> None:
    """An ontology (``owl:Class``, ``owl:Restriction``) read as plain RDF loses its class axioms with
    their blank nodes: count the declarations in ``report`` and name the OWL import, which keeps them."""
    declared = {kind: sum(1 for _ in graph.subjects(rdflib.RDF.type, rdflib.URIRef(OWL + kind)))
                for kind in ("Class", "Restriction")}
    if not any(declared.values()):
        return
    report["owl_declarations"] = {f"owl:{kind}": count for kind, count in declared.items()}
    logger.warning("%s declares %d owl:Class and %d owl:Restriction: an OWL ontology, read here as plain RDF "
                   "(its class axioms are dropped with their blank nodes); `jaket kg import owl %s --out DIR` "
                   "keeps the restrictions and makes the class hierarchy the categories", path,
                   declared["Class"], declared["Restriction"], path)
