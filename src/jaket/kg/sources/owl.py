"""OWL ontologies (any RDF syntax ``rdflib`` reads) as a JAKET KG: what the ontology *says* about its
classes becomes edges, its schema axioms do not.

Mapping (``jaket kg import owl FILE --out DIR``; docs/data.md, "Ontologies"):

========================================================  =====================================
ontology                                                  KG
========================================================  =====================================
named class ``C`` (``owl:Class``), named individual       an entity (``owl:Thing`` is not one)
``C subClassOf D`` (``D`` named)                          ``C --subclass of--> D``
``C subClassOf (P some D)``, ``(P value d)``              ``C --P--> D`` (``d``)
``C subClassOf (P only D)``                               ``C --P (only)--> D``: its own relation,
                                                          a universal claim is not an existential one
``(P some (D or E))``, ``(P only (D or E))``              one edge to each of ``D``, ``E``
``C equivalentClass (D and (P some E) ...)``              as ``subClassOf`` each member
``C equivalentClass D`` (named)                           ``C --equivalent class--> D``
``i rdf:type C`` (``i`` an individual)                    ``i --instance of--> C``
``i P j`` (object property between individuals)           ``i --P--> j``
``disjointWith``, ``domain``, ``range``, ``inverseOf``,   left out (counted in the report); with
property hierarchy, the ontology header, annotation       ``keep_axioms``: ``C --disjoint with--> D``
properties                                                (the others relate properties, not
                                                          entities)
========================================================  =====================================

A named class is one declared ``owl:Class`` or at either end of a named ``subClassOf``.
**Names**: the ``rdfs:label`` (or ``skos:prefLabel``) in ``lang`` (default English), else an
untagged one, else the IRI's local name split into words (``MozzarellaTopping`` -> ``Mozzarella
Topping``); every other label and synonym (``skos:altLabel``, ``oboInOwl:has*Synonym``) is an alias.
A label written with underscores (``material_entity``) gives the name with spaces a text holds
(``material entity``: the linker finds it), the written form an alias (:func:`spoken`; relations'
names too).
**Descriptions**: ``skos:definition``, ``IAO:0000115`` (OBO's definition), ``rdfs:comment`` (that
order; ``lang`` first); a class without one gets a description generated from its edges
("American: a named pizza; has topping mozzarella topping, tomato topping; has country of origin
America"), counted as generated in the report. **Categories**: a class's ancestor (through
named ``subClassOf``, the first parent by IRI where there are several) ``category_depth`` levels
below ``category_root`` (default: the hierarchy's tops); an individual takes its class's. By
default the depth is the one giving the most categories that hold at least max(2, 1%) of the
entities each (the shallower on a tie): a depth that puts nearly everything in one category
makes entity classification meaningless, one that gives every class its own makes it impossible.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np

from jaket.jsonio import quote
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.sources.rdf import RDFImportError, local_name, parse_rdf

OWL = "http://www.w3.org/2002/07/owl#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
OBO_IN_OWL = "http://www.geneontology.org/formats/oboInOwl#"
IAO_DEFINITION = "http://purl.obolibrary.org/obo/IAO_0000115"

LABELS = (RDFS + "label", SKOS + "prefLabel")
SYNONYMS = (SKOS + "altLabel", OBO_IN_OWL + "hasExactSynonym", OBO_IN_OWL + "hasRelatedSynonym",
            OBO_IN_OWL + "hasBroadSynonym", OBO_IN_OWL + "hasNarrowSynonym")
DEFINITIONS = (SKOS + "definition", IAO_DEFINITION, RDFS + "comment")
#: the relations the mapping creates (id -> name, description)
SUBCLASS, EQUIVALENT, INSTANCE, DISJOINT = (RDFS + "subClassOf", OWL + "equivalentClass", RDF + "type",
                                            OWL + "disjointWith")
BUILT_IN = {SUBCLASS: ("subclass of", "the head is a kind of the tail"),
            EQUIVALENT: ("equivalent class", "the head and the tail have the same instances"),
            INSTANCE: ("instance of", "the head is an individual of the class of the tail"),
            DISJOINT: ("disjoint with", "no individual is an instance of both")}
SCHEMA_AXIOMS = (OWL + "disjointWith", RDFS + "domain", RDFS + "range", OWL + "inverseOf",
                 RDFS + "subPropertyOf", OWL + "propertyDisjointWith", OWL + "equivalentProperty")
ONLY = " (only)"
MAX_NESTING = 100  # class expressions nested deeper are refused (recursion; no real ontology nests so)


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


def _lang_pick(literals, lang: str) -> tuple[str | None, list[str]]:
    """The literal in ``lang``, else an untagged one, else None; and all the others."""
    ranked = sorted(literals, key=lambda lit: (0 if (lit.language or "").lower().startswith(lang) else
                                               1 if not lit.language else 2, str(lit)))
    values = list(dict.fromkeys(str(lit).strip() for lit in ranked if str(lit).strip()))
    best = next((str(lit).strip() for lit in ranked if str(lit).strip() and
                 (not lit.language or lit.language.lower().startswith(lang))), None)
    return best, [v for v in values if v != best]


class _Ontology:
    """The parts of an rdflib graph the mapping reads."""

    def __init__(self, graph, lang: str, definitions: tuple[str, ...] = DEFINITIONS, path: Path | None = None):
        from rdflib import BNode, URIRef

        self.graph, self.lang, self.definitions, self.path = graph, lang, tuple(definitions), path
        self.BNode, self.URIRef = BNode, URIRef
        self.classes = {str(c) for c in graph.subjects(URIRef(RDF + "type"), URIRef(OWL + "Class"))
                        if isinstance(c, URIRef)} - {OWL + "Thing"}
        self.classes |= {str(c) for pair in graph.subject_objects(URIRef(SUBCLASS)) for c in pair
                         if isinstance(c, URIRef)} - {OWL + "Thing"}  # both ends of subClassOf are classes
        kinds = ("ObjectProperty", "DatatypeProperty", "AnnotationProperty", "TransitiveProperty",
                 "FunctionalProperty", "SymmetricProperty", "InverseFunctionalProperty")
        self.properties = {str(p) for kind in kinds
                           for p in graph.subjects(URIRef(RDF + "type"), URIRef(OWL + kind))}
        self.ontology_headers = {str(s) for s in graph.subjects(URIRef(RDF + "type"), URIRef(OWL + "Ontology"))}
        self.individuals = {str(s) for s, o in graph.subject_objects(URIRef(RDF + "type"))
                            if isinstance(s, URIRef) and str(o) in self.classes} - self.classes - self.properties
        self.individuals |= {str(s) for s in graph.subjects(URIRef(RDF + "type"), URIRef(OWL + "NamedIndividual"))
                             if isinstance(s, URIRef)} - self.classes - self.properties

    def uri(self, iri: str):
        return self.URIRef(iri)

    def literals(self, subject: str, predicates) -> list:
        return [o for p in predicates for o in self.graph.objects(self.uri(subject), self.uri(p))
                if not isinstance(o, (self.BNode, self.URIRef))]

    def name(self, iri: str) -> tuple[str, list[str], bool]:
        best, others = _lang_pick(self.literals(iri, LABELS), self.lang)
        synonyms = [str(s).strip() for s in self.literals(iri, SYNONYMS) if str(s).strip()]
        name = best if best is not None else words(local_name(iri))
        aliases = list(dict.fromkeys(a for a in [*others, *synonyms] if a != name))
        return name, aliases, best is not None

    def definition(self, iri: str) -> str | None:
        for predicate in self.definitions:
            best, others = _lang_pick(self.literals(iri, (predicate,)), self.lang)
            if best is not None:
                return best
        return None

    def members(self, node, subject: str) -> list:
        """The items of an RDF list (``owl:unionOf`` / ``intersectionOf`` in a class expression of
        ``subject``)."""
        try:
            return list(self.graph.items(node))
        except ValueError:  # rdflib: "List contains a recursive rdf:rest reference"
            raise RDFImportError(f"{self.path}: a class expression of {quote(subject)} has an RDF list that "
                                 "runs back into itself (through rdf:rest)") from None

    def enter(self, node, within: tuple, subject: str) -> tuple:
        """``within`` (the class expressions of ``subject`` being read, outermost first) and
        ``node``, refused when ``node`` is already one of them or they nest too deep."""
        if node in within or len(within) >= MAX_NESTING:
            problem = "contains itself" if node in within else f"nests more than {MAX_NESTING} deep"
            raise RDFImportError(f"{self.path}: a class expression of {quote(subject)} {problem}")
        return (*within, node)


def _targets(onto: _Ontology, subject: str, node, within: tuple = ()) -> list[str]:
    """The named classes or individuals a class expression ``node`` names: itself, or the members
    of a union (nested expressions of other shapes are not edges)."""
    if isinstance(node, onto.URIRef):
        return [str(node)] if str(node) != OWL + "Thing" else []
    union = onto.graph.value(node, onto.uri(OWL + "unionOf"))
    if union is not None:
        within = onto.enter(node, within, subject)
        return [t for member in onto.members(union, subject) for t in _targets(onto, subject, member, within)]
    return []


def _expression_edges(onto: _Ontology, subject: str, node, counts: Counter,
                      within: tuple = ()) -> list[tuple[str, str, str]]:
    """Edges of ``subject subClassOf node`` (``node`` named, a restriction or an intersection)."""
    if isinstance(node, onto.URIRef):
        counts["subclass_of_named"] += 1
        return [(subject, SUBCLASS, str(node))] if str(node) != OWL + "Thing" else []
    graph = onto.graph
    intersection = graph.value(node, onto.uri(OWL + "intersectionOf"))
    if intersection is not None:
        counts["intersections"] += 1
        within = onto.enter(node, within, subject)
        return [e for member in onto.members(intersection, subject)
                for e in _expression_edges(onto, subject, member, counts, within)]
    prop = graph.value(node, onto.uri(OWL + "onProperty"))
    if prop is None or not isinstance(prop, onto.URIRef):
        counts["other_class_expressions_skipped"] += 1
        return []
    for quantifier, suffix in (("someValuesFrom", ""), ("hasValue", ""), ("allValuesFrom", ONLY)):
        filler = graph.value(node, onto.uri(OWL + quantifier))
        if filler is not None:
            targets = _targets(onto, subject, filler)
            counts[f"restrictions_{quantifier}"] += 1
            if not targets:
                counts["restrictions_without_named_filler_skipped"] += 1
            return [(subject, str(prop) + suffix, t) for t in targets]
    counts["cardinality_restrictions_skipped"] += 1
    return []


def _edges(onto: _Ontology, keep_axioms: bool, counts: Counter) -> list[tuple[str, str, str]]:
    graph, edges = onto.graph, []
    for c in sorted(onto.classes):
        for parent in graph.objects(onto.uri(c), onto.uri(SUBCLASS)):
            edges += _expression_edges(onto, c, parent, counts)
        for other in graph.objects(onto.uri(c), onto.uri(EQUIVALENT)):
            if isinstance(other, onto.URIRef):
                edges.append((c, EQUIVALENT, str(other)))
            else:
                edges += _expression_edges(onto, c, other, counts)
        for other in graph.objects(onto.uri(c), onto.uri(DISJOINT)):
            counts["disjoint_with"] += 1
            if keep_axioms and isinstance(other, onto.URIRef) and str(other) in onto.classes:
                edges.append((c, DISJOINT, str(other)))
    for i in sorted(onto.individuals):
        for o in graph.objects(onto.uri(i), onto.uri(RDF + "type")):
            if str(o) in onto.classes:
                edges.append((i, INSTANCE, str(o)))
        for p, o in graph.predicate_objects(onto.uri(i)):
            if isinstance(o, onto.URIRef) and str(o) in onto.individuals and str(p) in onto.properties:
                edges.append((i, str(p), str(o)))
    for axiom in SCHEMA_AXIOMS[1:]:
        counts[f"axioms_left_out_{local_name(axiom)}"] = sum(1 for _ in graph.triples((None, onto.uri(axiom), None)))
    known = onto.classes | onto.individuals
    kept = [(h, r, t) for h, r, t in edges if h in known and t in known and h != t]
    counts["edges_to_unknown_entities_skipped"] = len(edges) - len(kept)
    return list(dict.fromkeys(kept))


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


def load_owl(path, fmt: str | None = None, lang: str = "en", category_depth: int | None = None,
             category_root: str | None = None, keep_axioms: bool = False,
             definitions: tuple[str, ...] | None = None) -> tuple[KnowledgeGraph, dict]:
    """``(KnowledgeGraph, report)`` of an OWL ontology (mapping in the module docstring);
    ``definitions``: the annotation properties read as descriptions, in order (default
    :data:`DEFINITIONS`)."""
    path = Path(path)
    onto = _Ontology(parse_rdf(path, fmt), lang.lower(), definitions or DEFINITIONS, path)
    counts: Counter = Counter()
    edges = _edges(onto, keep_axioms, counts)
    entity_ids = sorted(onto.classes | onto.individuals)
    if category_root is not None and category_root not in onto.classes:
        raise ValueError(f"--category-root {category_root}: not a class of {path}")
    relations = {}
    for r in sorted({r for _, r, _ in edges}):
        if r in BUILT_IN:
            relations[r] = BUILT_IN[r]
            continue
        base = r[:-len(ONLY)] if r.endswith(ONLY) else r
        label, _, labelled = onto.name(base)
        name = (label if labelled else words(local_name(base)).lower()) + (ONLY if base != r else "")
        definition = onto.definition(base)
        relations[r] = (name, (definition if definition is not None else name)
                        + (" (every value is of the tail class: a universal restriction)" if base != r else ""))
    kg, report = assemble(entity_ids, {e: onto.name(e) for e in entity_ids},
                          {e: onto.definition(e) for e in entity_ids}, edges, relations,
                          category_depth, category_root)
    report = {"source": "owl", "file": str(path), "rdf_triples": len(onto.graph), "classes": len(onto.classes),
              "individuals": len(onto.individuals), "properties": len(onto.properties), **report,
              "ontology_headers_left_out": len(onto.ontology_headers), "keep_axioms": keep_axioms,
              "patterns": dict(sorted(counts.items()))}
    return kg, report


def assemble(entity_ids: list[str], name_of: dict, definition_of: dict, edges: list[tuple[str, str, str]],
             relations: dict[str, tuple[str, str]], category_depth: int | None = None,
             category_root: str | None = None) -> tuple[KnowledgeGraph, dict]:
    """The KG of an ontology's entities (``name_of[e] = (name, aliases, from a label)``,
    ``definition_of[e]``: text or None), ``edges`` (``SUBCLASS`` / ``INSTANCE`` ones give the
    hierarchy) and ``relations`` (id -> (name, description)); categories and generated
    descriptions as the module docstring says; names with underscores spoken (:func:`spoken`).
    Shared by OWL and OBO."""
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
        elif name.lower() not in definition.lower():
            definition = f"{name}: {definition}"
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
