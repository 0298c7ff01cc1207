"""What every ontology format is read into, and the one rule that makes a KG of it.

An ontology is published in many forms (OBO 1.2/1.4 flat files, OBO Graphs JSON, OWL in RDF/XML,
Turtle, functional syntax or OWL/XML); each reader (:mod:`jaket.kg.sources.obo`,
:mod:`jaket.kg.sources.obographs`, :mod:`jaket.kg.sources.owl`) only says what the file holds, as
:class:`OntologyParts`, and :func:`build_ontology_kg` applies the same rule to all of them, so the
same ontology in two formats gives the same KG (docs/data.md, "Ontologies"):

- **Ids**: an OBO Library IRI ``http://purl.obolibrary.org/obo/PATO_0000001`` is the OBO id
  ``PATO:0000001`` (:func:`obo_id`), in every format; other IRIs are kept whole.
- **Entities** are the terms (classes, individuals) the file *defines*: an OBO ``[Term]`` or
  ``[Instance]`` stanza, an OBO Graphs node with a label or metadata, an OWL class or individual
  with an annotation or an axiom of its own; and the classes an OWL or OBO Graphs file only declares
  or refers to **in a namespace of its own** (that of a term it defines: ``PATO:``,
  ``http://x.org/o#``). A term of another namespace only declared or referred to (a filler
  ``UBERON:0000061``, an OBO ``is_a`` to a term without a stanza) is **defined elsewhere**: it is not
  an entity and the edges to it are dropped, both counted with their first examples, unless
  ``imports`` resolves it from a local file.
- **Obsolete** terms (``is_obsolete: true``, ``owl:deprecated true``, ``"deprecated": true``) are
  dropped with their edges, counted. Annotation-only terms (a name and nothing else) are entities.
- **Edges**: ``is_a`` / ``subClassOf`` -> ``subclass of``; an existential restriction or OBO
  ``relationship`` -> an edge of its relation; a logical definition (OBO ``intersection_of``, an OWL
  ``equivalentClass`` intersection, an OBO Graphs ``logicalDefinitionAxiom``) -> an edge to its genus
  and one per differentia; an annotation whose value is another entity (``is opposite of``) -> an
  edge of that annotation property.
- **Imports** (``import:``, ``owl:imports``) are listed in the report, never followed over the
  network; ``imports=DIR`` reads each from the file of the same name in ``DIR`` when it is there.
- **Relations** are named by the file (a typedef's ``name``, a property's label), else by the
  Relation Ontology's own name when it is one of RO's or BFO's (``RO:0002604`` "is opposite of";
  :func:`known_relation_names`), else by the words of their id.
- **Descriptions** start with the entity's own name (``"quality: A dependent entity ..."``): two
  entities with the same definition still differ in the first tokens the model reads.

:class:`Account` is what a reader kept, repaired or dropped, each kind counted with its first
examples (``file:line`` where the format has lines); the build report holds it, the command prints a
line of it.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.formats import OntologyError
from jaket.kg.sources.rdf import local_name

OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OBO_PURL = "http://purl.obolibrary.org/obo/"
#: the relations the mapping creates (id -> name, description)
SUBCLASS, EQUIVALENT, INSTANCE, DISJOINT = (RDFS + "subClassOf", OWL + "equivalentClass", RDF + "type",
                                            OWL + "disjointWith")
BUILT_IN = {SUBCLASS: ("subclass of", "the head is a kind of the tail"),
            EQUIVALENT: ("equivalent class", "the head and the tail have the same instances"),
            INSTANCE: ("instance of", "the head is an individual of the class of the tail"),
            DISJOINT: ("disjoint with", "no individual is an instance of both")}
EXAMPLES = 5  # examples kept of each kind the account counts
_OBO_LOCAL = re.compile(r"([A-Za-z][A-Za-z0-9.]*)_([A-Za-z0-9_.-]+)")


def obo_id(iri: str) -> str:
    """``http://purl.obolibrary.org/obo/PATO_0000001`` -> ``PATO:0000001`` (the OBO Library's own
    contraction); any other IRI or id as it is."""
    if iri.startswith(OBO_PURL):
        match = _OBO_LOCAL.fullmatch(iri[len(OBO_PURL):])
        if match:
            return f"{match.group(1)}:{match.group(2)}"
    return iri


@dataclass
class Account:
    """What a reader or the build kept, repaired or dropped: a count of each kind and its first
    :data:`EXAMPLES` examples (``file:line: what``, or an id where the format has no lines)."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, example: str | None = None, count: int = 1) -> None:
        self.counts[kind] += count
        if example is not None and len(self.examples.setdefault(kind, [])) < EXAMPLES:
            self.examples[kind].append(example)

    def merge(self, other: Account) -> None:
        for kind, count in other.counts.items():
            self.counts[kind] += count
            room = EXAMPLES - len(self.examples.setdefault(kind, []))
            self.examples[kind] += other.examples.get(kind, [])[:max(0, room)]

    def as_dict(self) -> dict:
        return {kind: {"count": count, "examples": self.examples.get(kind, [])}
                for kind, count in sorted(self.counts.items())}

    def summary(self) -> str:
        """One line: every kind with its count, largest first."""
        return "; ".join(f"{count:,} {kind.replace('_', ' ')}" for kind, count in self.counts.most_common())


@dataclass
class Term:
    """A class or individual as the file gives it."""

    name: str | None = None
    synonyms: list[str] = field(default_factory=list)
    definition: str | None = None
    obsolete: bool = False
    where: str = ""  # file:line of its stanza (or its id)


@dataclass
class OntologyParts:
    """What an ontology file holds, in the terms every format shares (module docstring).

    ``edges``: ``(head, relation, tail, where)``; ``annotation_edges``: the same of annotations whose
    value is an IRI or id (an edge when it names an entity, else an annotation only); ``relations``: id -> ``(name, definition)``, either
    None when the file does not say; ``referenced``: ids the file mentions without defining them, with
    where first; ``imports``: the IRIs of its import declarations, in order.
    """

    source: str
    file: str
    terms: dict[str, Term] = field(default_factory=dict)
    edges: list[tuple[str, str, str, str]] = field(default_factory=list)
    annotation_edges: list[tuple[str, str, str, str]] = field(default_factory=list)
    relations: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)
    declared: dict[str, str] = field(default_factory=dict)  # id -> where, classes only declared or referred to
    account: Account = field(default_factory=Account)
    details: dict = field(default_factory=dict)

    def merge(self, other: OntologyParts) -> None:
        """Add an imported file's terms (the importing file's own win), edges and relations."""
        for term_id, term in other.terms.items():
            if term_id not in self.terms:
                self.terms[term_id] = term
                self.account.add("terms_from_imports", _at(term.where, term_id))
        self.edges += other.edges
        for term_id, where in other.declared.items():
            self.declared.setdefault(term_id, where)
        self.annotation_edges += other.annotation_edges
        for relation, (name, definition) in other.relations.items():
            known = self.relations.get(relation, (None, None))
            self.relations[relation] = (known[0] or name, known[1] or definition)
        self.account.merge(other.account)


def resolve_imports(parts: OntologyParts, imports: str | Path | None, read) -> dict:
    """Read each of ``parts.imports`` from the file of the same name under the folder ``imports`` (its
    last path segment, or that name with another ontology extension), with ``read(path) ->
    OntologyParts``, and merge it; never the network. The report's account of the imports."""
    found, missing = {}, []
    folder = Path(imports) if imports is not None else None
    if folder is not None and not folder.is_dir():
        raise OntologyError(f"--imports {folder}: no such folder")
    seen: set[str] = set()
    queue = list(parts.imports)
    while queue:
        iri = queue.pop(0)
        if iri in seen:
            continue
        seen.add(iri)
        local = _local_import(folder, iri) if folder is not None else None
        if local is None:
            missing.append(iri)
            continue
        imported = read(local)
        found[iri] = str(local)
        queue += imported.imports
        parts.merge(imported)
    return {"declared": list(parts.imports), "read_from_local_files": found,
            "not_followed": missing,
            "rule": "imports are never fetched; --imports DIR reads them from local files of the same name"}


_ONTOLOGY_SUFFIXES = (".owl", ".obo", ".json", ".ofn", ".owx", ".ttl", ".rdf")


def _local_import(folder: Path, iri: str) -> Path | None:
    """The file under ``folder`` (at any depth, the shallowest first) named as the import's last
    segment, else with its stem and another ontology extension."""
    name = iri.rstrip("/").rsplit("/", 1)[-1]
    for candidate in [name] + [Path(name).stem + suffix for suffix in _ONTOLOGY_SUFFIXES]:
        found = sorted((p for p in folder.rglob(candidate) if p.is_file()), key=lambda p: (len(p.parts), str(p)))
        if found:
            return found[0]
    return None


def build_ontology_kg(parts: OntologyParts, category_depth: int | None = None,
                      category_root: str | None = None) -> tuple[KnowledgeGraph, dict]:
    """The KG of ``parts`` under the module docstring's rule, and its report (the reader's and the
    rule's account, the imports, the counts of :func:`assemble`)."""
    account = parts.account
    own = {namespace(t) for t in parts.terms}
    for term_id, where in sorted(parts.declared.items()):
        if term_id not in parts.terms and namespace(term_id) in own:
            parts.terms[term_id] = Term(where=where)
            account.add("terms_only_declared_in_an_own_namespace_kept", _at(where, term_id))
    live = {}
    for term_id, term in parts.terms.items():
        if term.obsolete:
            account.add("obsolete_terms_dropped", _at(term.where, term_id))
        else:
            live[term_id] = term
    obsolete = {t for t, term in parts.terms.items() if term.obsolete}
    edges: list[tuple[str, str, str]] = []
    for head, relation, tail, where in parts.annotation_edges:
        if head in live and tail in live and head != tail:
            edges.append((head, relation, tail))
            account.add("annotations_between_entities_kept_as_edges")
        else:
            account.add("annotations_with_a_value_that_is_not_an_entity_left_out")
    for head, relation, tail, where in parts.edges:
        if head == tail:
            account.add("edges_to_themselves_dropped", _at(where, head))
        elif head in obsolete or tail in obsolete:
            account.add("edges_of_obsolete_terms_dropped")
        elif head not in live or tail not in live:
            missing = tail if head in live else head
            account.add("edges_to_terms_defined_elsewhere_dropped", _at(where, missing))
        else:
            edges.append((head, relation, tail))
    first_seen: dict[str, str] = {}
    for head, _, tail, where in parts.edges:
        for term_id in (head, tail):
            if term_id not in parts.terms:
                first_seen.setdefault(term_id, where)
    for term_id, where in parts.declared.items():
        if term_id not in parts.terms:
            first_seen.setdefault(term_id, where)
    for term_id, where in sorted(first_seen.items()):
        account.add("terms_defined_elsewhere", _at(where, term_id))
    edges = list(dict.fromkeys(edges))
    if category_root is not None and category_root not in live:
        raise OntologyError(f"--category-root {category_root}: not a term of {parts.file}")
    relations = {}
    for relation in sorted({r for _, r, _ in edges}):
        if relation in BUILT_IN:
            relations[relation] = BUILT_IN[relation]
            continue
        name, definition = parts.relations.get(relation, (None, None))
        if name is None and relation in known_relation_names():
            name = known_relation_names()[relation]
            account.add("relations_named_from_the_relation_ontology", f"{relation}: {name}")
        name = name or words(local_id(relation)).lower()
        relations[relation] = (name, definition or name)
    entity_ids = sorted(live)
    name_of = {}
    for term_id in entity_ids:
        term = live[term_id]
        name = term.name or words(local_id(term_id))
        name_of[term_id] = (name, [s for s in dict.fromkeys(term.synonyms) if s != name], term.name is not None)
    kg, report = assemble(entity_ids, name_of, {t: live[t].definition for t in entity_ids}, edges, relations,
                          category_depth, category_root)
    return kg, {"source": parts.source, "file": parts.file, **parts.details, **report,
                "account": account.as_dict()}


@functools.lru_cache(maxsize=1)
def known_relation_names() -> dict[str, str]:
    """OBO id -> name of the Relation Ontology's and BFO's relations (``relation_names.json``): the
    name of a relation a file uses without naming it, as a 'base' release does with imported ones."""
    return json.loads((Path(__file__).parent / "relation_names.json").read_text(encoding="utf-8"))["names"]


def _at(where: str, what: str) -> str:
    """An account's example: ``file:line: what`` (``what`` alone where the format has no place to name)."""
    return f"{where}: {what}" if where and where != what else what


def namespace(term_id: str) -> str:
    """``PATO:0000001`` -> ``PATO``; an IRI -> itself up to its last ``#`` or ``/``."""
    if "://" not in term_id:
        return term_id.split(":", 1)[0] if ":" in term_id else ""
    cut = max(term_id.rfind("#"), term_id.rfind("/"))
    return term_id[:cut + 1]


def local_id(term_id: str) -> str:
    """The part of an id that names it: ``PATO:0000001`` -> ``PATO_0000001`` (``PATO 0000001``
    after :func:`words`), an IRI's last segment (:func:`jaket.kg.sources.rdf.local_name`)."""
    if "://" not in term_id and ":" in term_id:
        return term_id.replace(":", "_")
    return local_name(term_id)


def words(name: str) -> str:
    """``MozzarellaTopping`` -> ``Mozzarella Topping``; ``has_topping`` -> ``has topping``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", name.replace("_", " "))
    return re.sub(r"\s+", " ", spaced).strip()


def spoken(name: str, aliases: list[str]) -> tuple[str, list[str]]:
    """A label in an identifier's style (``material_entity``, as some upper ontologies and OBO files
    write them) as the words a text holds (``material entity``), the written form kept as an alias:
    ``(name, aliases)``, each alias with underscores followed by its spoken form too. Text without
    an underscore is kept as it is."""
    def said(text: str) -> str:
        return (" ".join(text.replace("_", " ").split()) or text) if "_" in text else text

    forms = [form for written in (name, *aliases) for form in (said(written), written)]
    return said(name), [form for form in dict.fromkeys(forms) if form != said(name)]




def _categories(entities: list[str], parents: dict[str, str], instance_class: dict[str, str],
                depth: int | None, root: str | None) -> tuple[list[str | None], int, dict]:
    """Each entity's ancestor ``depth`` levels below ``root`` (module docstring), the depth used."""
    def chain(c: str) -> list[str]:  # top first
        path, seen = [c], {c}
        while path[-1] in parents and parents[path[-1]] not in seen:
            path.append(parents[path[-1]])
            seen.add(path[-1])
        path.reverse()
        if root is not None:
            return path[path.index(root):] if root in path else []
        return path

    chains = {e: chain(instance_class.get(e, e)) for e in entities}

    def at(d: int) -> list[str | None]:
        return [c[d] if len(c) > d else None for c in chains.values()]

    deepest = max((len(c) for c in chains.values()), default=1)
    if depth is None:
        floor = max(2, len(entities) // 100)

        def useful(d: int) -> int:
            return sum(1 for n in Counter(x for x in at(d) if x is not None).values() if n >= floor)

        top = 0 if root is None else 1  # (a root without subclasses: depth 1, no category)
        depth = max(range(top, max(top + 1, deepest)), key=lambda d: (useful(d), -d))
    labels = at(depth)
    return labels, depth, dict(Counter(x for x in labels if x is not None))




def assemble(entity_ids: list[str], name_of: dict, definition_of: dict, edges: list[tuple[str, str, str]],
             relations: dict[str, tuple[str, str]], category_depth: int | None = None,
             category_root: str | None = None) -> tuple[KnowledgeGraph, dict]:
    """The KG of an ontology's entities (``name_of[e] = (name, aliases, from a label)``,
    ``definition_of[e]``: text or None), ``edges`` (``SUBCLASS`` / ``INSTANCE`` ones give the
    hierarchy) and ``relations`` (id -> (name, description)); categories and generated
    descriptions as the module docstring says; names with underscores spoken (:func:`spoken`).
    Shared by every ontology format."""
    name_of = {e: (*spoken(name, aliases), labelled) for e, (name, aliases, labelled) in name_of.items()}
    relations = {r: (spoken(name, [])[0], description) for r, (name, description) in relations.items()}
    parents: dict[str, str] = {}
    for h, r, t in sorted(edges):
        if r == SUBCLASS and h not in parents:
            parents[h] = t
    several = Counter(h for h, r, _ in edges if r == SUBCLASS)
    instance_class = {h: t for h, r, t in sorted(edges, reverse=True) if r == INSTANCE}
    labels, depth, sizes = _categories(entity_ids, parents, instance_class, category_depth, category_root)
    out_edges: dict[str, list[tuple[str, str]]] = {}
    for h, r, t in edges:
        out_edges.setdefault(h, []).append((r, t))
    relation_name = {r: name for r, (name, _) in relations.items()}
    names, aliases, descriptions, generated = [], [], [], 0
    for e in entity_ids:
        name, alias_list, _ = name_of[e]
        definition = definition_of.get(e)
        if definition is None:
            generated += 1
            definition = _generated(name, out_edges.get(e, []), name_of, relation_name)
        else:
            definition = name_first(name, definition)
        names.append(name)
        aliases.append(alias_list)
        descriptions.append(definition)
    category_of = {c: name_of[c][0] if c in name_of else words(local_name(c)) for c in sizes}
    category_names = sorted(set(category_of.values()))
    index = {c: k for k, c in enumerate(category_names)}
    e_index = {e: k for k, e in enumerate(entity_ids)}
    relation_ids = sorted(relations)
    r_index = {r: k for k, r in enumerate(relation_ids)}
    kg = KnowledgeGraph(
        entity_ids=entity_ids, entity_names=names, entity_descriptions=descriptions, entity_aliases=aliases,
        entity_category=np.array([index[category_of[c]] if c is not None else -1 for c in labels], dtype=np.int32),
        category_names=category_names, relation_ids=relation_ids,
        relation_names=[relations[r][0] for r in relation_ids],
        relation_descriptions=[relations[r][1] for r in relation_ids],
        triples=np.array(sorted((e_index[h], r_index[r], e_index[t]) for h, r, t in edges),
                         dtype=np.int32).reshape(-1, 3))
    entities_per_category = Counter()
    for c, n in sizes.items():
        entities_per_category[category_of[c]] += n
    report = {"entities": kg.num_entities, "relations": kg.num_relations, "triples": kg.num_triples,
              "edges_by_relation": dict(Counter(relation_name[r] for _, r, _ in edges).most_common()),
              "category_depth": depth, "category_root": category_root,
              "entities_per_category": dict(entities_per_category.most_common()),
              "entities_without_category": sum(1 for c in labels if c is None),
              "entities_without_label": sum(1 for e in entity_ids if not name_of[e][2]),
              "descriptions_generated": generated,
              "classes_with_several_parents": sum(1 for n in several.values() if n > 1)}
    return kg, report


def _generated(name: str, edges: list[tuple[str, str]], name_of: dict, relation_name: dict) -> str:
    """"American: a named pizza; has topping mozzarella topping, tomato topping; ..." from the
    entity's own edges (kinds first, then each relation's tails)."""
    by_relation: dict[str, list[str]] = {}
    for r, t in edges:
        by_relation.setdefault(r, []).append(name_of[t][0].lower() if t in name_of else words(local_name(t)))
    parts = []
    kinds = by_relation.pop(SUBCLASS, []) + by_relation.pop(INSTANCE, [])
    if kinds:
        parts.append("a " + " and a ".join(kinds))
    parts += [f"{relation_name[r]} {', '.join(tails)}" for r, tails in sorted(by_relation.items())]
    return f"{name}: " + "; ".join(parts) if parts else name


def name_first(name: str, description: str) -> str:
    """``description`` starting with ``name`` (``"quality: A dependent entity ..."``), as it is when
    it already does: the first tokens of every description identify its entity, so a description
    window cut short still tells two entities with one definition apart."""
    if description.lower().startswith(name.lower()):
        return description
    return f"{name}: {description}"
