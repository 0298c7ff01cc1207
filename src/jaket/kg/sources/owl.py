"""OWL ontologies as a JAKET KG: RDF/XML, Turtle and the other RDF syntaxes through ``rdflib``, OWL
functional syntax (``Prefix(...) Ontology(...)``) and OWL/XML through ``py-horned-owl`` (which
writes them as RDF/XML for the same mapping). What the ontology *says* about its classes becomes
edges, its schema axioms do not; which terms are entities (obsolete, defined elsewhere, imported)
is the rule every ontology format shares (:mod:`jaket.kg.sources.ontology`).

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

A named class is one declared ``owl:Class`` or at either end of a named ``subClassOf``; it is an
entity when the file *defines* it (an annotation or an axiom of its own), not only declares it or
refers to it; ``owl:deprecated true`` makes it obsolete. An annotation whose value is another
entity (``RO:0002604`` "is opposite of") is an edge of that annotation property.
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

from jaket.jsonio import quote
from jaket.kg.sources.formats import KINDS, sniff, wrong_command
from jaket.kg.sources.ontology import (BUILT_IN, DISJOINT, EQUIVALENT, INSTANCE, OWL, RDF, RDFS, SUBCLASS,
                                       OntologyParts, Term, known_relation_names, obo_id, spoken, words)
from jaket.kg.sources.rdf import RDFImportError, local_name, parse_rdf

SKOS = "http://www.w3.org/2004/02/skos/core#"
OBO_IN_OWL = "http://www.geneontology.org/formats/oboInOwl#"
IAO_DEFINITION = "http://purl.obolibrary.org/obo/IAO_0000115"

LABELS = (RDFS + "label", SKOS + "prefLabel")
SYNONYMS = (SKOS + "altLabel", OBO_IN_OWL + "hasExactSynonym", OBO_IN_OWL + "hasRelatedSynonym",
            OBO_IN_OWL + "hasBroadSynonym", OBO_IN_OWL + "hasNarrowSynonym")
DEFINITIONS = (SKOS + "definition", IAO_DEFINITION, RDFS + "comment")
SCHEMA_AXIOMS = (OWL + "disjointWith", RDFS + "domain", RDFS + "range", OWL + "inverseOf",
                 RDFS + "subPropertyOf", OWL + "propertyDisjointWith", OWL + "equivalentProperty")
ONLY = " (only)"
_HORNED = {"owl-functional": "ofn", "owl-xml": "owx", "owl-manchester": "omn"}  # syntax -> py-horned-owl's name
MAX_NESTING = 100  # class expressions nested deeper are refused (recursion; no real ontology nests so)


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
    counts["general_class_axioms_left_out"] = sum(
        1 for predicate in (SUBCLASS, EQUIVALENT) for s, _ in graph.subject_objects(onto.uri(predicate))
        if isinstance(s, onto.BNode))  # an anonymous class on the left: no entity to hang an edge on
    for axiom in SCHEMA_AXIOMS[1:]:
        counts[f"axioms_left_out_{local_name(axiom)}"] = sum(1 for _ in graph.triples((None, onto.uri(axiom), None)))
    known = onto.classes | onto.individuals
    kept = [(h, r, t) for h, r, t in edges if h in known and t in known and h != t]
    counts["edges_to_unknown_entities_skipped"] = len(edges) - len(kept)
    return list(dict.fromkeys(kept))


def read_owl_graph(path: Path, fmt: str | None = None):
    """``(rdflib.Graph, syntax)`` of an OWL file in any syntax: RDF ones through rdflib, functional
    syntax and OWL/XML through py-horned-owl written as RDF/XML. :class:`RDFImportError` (one line
    naming the file, and the line where the parser says) when it cannot be read."""
    kind = sniff(path) if fmt is None else None
    if kind in ("obo", "obographs"):
        raise RDFImportError(wrong_command(path, "owl"))
    if kind not in _HORNED:
        return parse_rdf(path, fmt), fmt or kind or "rdf"
    try:
        import pyhornedowl
    except ModuleNotFoundError:
        raise RDFImportError(f"{path}: {KINDS[kind][0]} needs py-horned-owl: pip install 'jaket[rdf]'") from None
    try:
        ontology = pyhornedowl.open_ontology(str(path), _HORNED[kind])
        rdf_xml = ontology.save_to_string("owl")
    except BaseException as error:  # noqa: BLE001 - a Rust parser's ValueError or panic: the file's fault
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        text = str(error)
        line = re.search(r"line_col: Pos\(\((\d+),", text)
        reason = re.search(r"(\w+Error)\b", text)
        where = f"{path}:{line.group(1)}" if line else str(path)
        raise RDFImportError(f"{where}: malformed {KINDS[kind][0]} "
                             f"({reason.group(1) if reason else ' '.join(text.split())[:200]})") from None
    import rdflib

    graph = rdflib.Graph()
    graph.parse(data=rdf_xml, format="xml", publicID=path.absolute().as_uri())
    return graph, kind


DECLARATIONS = {OWL + kind for kind in ("Class", "NamedIndividual", "Thing")}


def read_owl(path, fmt: str | None = None, lang: str = "en", keep_axioms: bool = False,
             definitions: tuple[str, ...] | None = None) -> OntologyParts:
    """:class:`OntologyParts` of an OWL ontology (mapping in the module docstring); ``definitions``:
    the annotation properties read as descriptions, in order (default :data:`DEFINITIONS`)."""
    path = Path(path)
    graph, syntax = read_owl_graph(path, fmt)
    onto = _Ontology(graph, lang.lower(), definitions or DEFINITIONS, path)
    counts: Counter = Counter()
    parts = OntologyParts("owl", str(path))
    full: dict[str, str] = {}  # relation id -> the property's IRI
    for head, relation, tail in _edges(onto, keep_axioms, counts):
        base = relation[:-len(ONLY)] if relation.endswith(ONLY) else relation
        full[obo_id(base) + relation[len(base):]] = relation
        parts.edges.append((obo_id(head), obo_id(base) + relation[len(base):], obo_id(tail), obo_id(head)))
    deprecated = {str(s) for s, o in graph.subject_objects(onto.uri(OWL + "deprecated")) if str(o).lower() == "true"}
    structural = {RDF + "type", SUBCLASS, EQUIVALENT, DISJOINT}
    for iri in sorted(onto.classes | onto.individuals):
        said = [(str(p), o) for p, o in graph.predicate_objects(onto.uri(iri))
                if not (str(p) == RDF + "type" and str(o) in DECLARATIONS)]
        if not said:
            parts.declared[obo_id(iri)] = ""  # declared or referred to only (an entity in an own namespace)
            continue
        name, aliases, labelled = onto.name(iri)
        parts.terms[obo_id(iri)] = Term(name=name if labelled else None, synonyms=aliases,
                                        definition=onto.definition(iri), obsolete=iri in deprecated)
        for p, o in said:
            if isinstance(o, onto.URIRef) and p not in structural and not (iri in onto.individuals
                                                                           and p in onto.properties):
                full[obo_id(p)] = p  # an annotation (an edge when its value is an entity)
                parts.annotation_edges.append((obo_id(iri), obo_id(p), obo_id(str(o)), obo_id(iri)))
    for relation, written in full.items():
        if written in BUILT_IN:
            continue
        base = written[:-len(ONLY)] if written.endswith(ONLY) else written
        label, _, labelled = onto.name(base)
        if base == written:
            name = label if labelled else None  # the rule names it (the Relation Ontology's name, else its words)
        else:
            name = (label if labelled else known_relation_names().get(obo_id(base), words(local_name(base)).lower())
                    ) + ONLY
        definition = onto.definition(base)
        if base != written:
            definition = (definition or name) + " (every value is of the tail class: a universal restriction)"
        parts.relations[relation] = (name, definition)
    parts.imports = sorted(str(o) for o in graph.objects(None, onto.uri(OWL + "imports")))
    parts.details = {"syntax": syntax, "rdf_triples": len(graph), "classes": len(onto.classes),
                     "individuals": len(onto.individuals), "properties": len(onto.properties),
                     "ontology_headers_left_out": len(onto.ontology_headers), "keep_axioms": keep_axioms,
                     "patterns": dict(sorted(counts.items()))}
    return parts
