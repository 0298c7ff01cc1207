"""OBO Graphs JSON (the JSON releases of the OBO Library: ``pato-base.json``, ``go.json``) read into
:class:`~jaket.kg.sources.ontology.OntologyParts`; the KG is made by the rule every ontology format
shares (:mod:`jaket.kg.sources.ontology`). ``jaket kg import obo FILE.json`` reads it.

What is read, graph by graph: nodes of type ``CLASS`` or ``INDIVIDUAL`` are terms (``lbl``,
``meta.definition.val`` (else the first of ``meta.comments``, as ``rdfs:comment`` for OWL),
``meta.synonyms[].val``, ``meta.deprecated``); a node with neither a label
nor metadata is only referred to (defined elsewhere); ``PROPERTY`` nodes name the relations.
``edges`` (``is_a``, ``type`` or a property IRI) and ``logicalDefinitionAxioms`` (genus and
restrictions) are edges; a ``basicPropertyValues`` entry whose value is another entity's IRI is an
annotation edge. Ids are OBO ids (:func:`~jaket.kg.sources.ontology.obo_id`).

Lenient, with an account: a node, edge or axiom of an unexpected shape (no id, a value of the wrong
type) is dropped and counted with its position (``graphs[0].nodes[12]``); the file as a whole is
refused only when it is not JSON or not an OBO Graphs document, with the reason in one line. The
format is plain JSON, read with :mod:`json`: fastobo's converter (``fastobo.load_graph``) refuses the
whole file at the first node it does not expect.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaket.kg.sources.formats import OntologyError
from jaket.kg.sources.ontology import INSTANCE, SUBCLASS, OntologyParts, Term, obo_id

_EDGE_KINDS = {"is_a": SUBCLASS, "type": INSTANCE, "rdf:type": INSTANCE}


class OboGraphsError(OntologyError):
    """A file that is not OBO Graphs JSON (the message names the file and why)."""


def _text(value) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def read_obographs(path) -> OntologyParts:
    """:class:`OntologyParts` of an OBO Graphs JSON file (module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise OboGraphsError(f"{path}: no such file")
    try:
        document = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        line = getattr(error, "lineno", None)
        raise OboGraphsError(f"{path}{f':{line}' if line else ''}: not JSON ({error})") from None
    graphs = document.get("graphs") if isinstance(document, dict) else None
    if not isinstance(graphs, list):
        raise OboGraphsError(f"{path}: not an OBO Graphs document (no \"graphs\" list at the top)")
    parts = OntologyParts("obographs", str(path))
    for g, graph in enumerate(graphs):
        if not isinstance(graph, dict):
            parts.account.add("graphs_not_an_object_dropped", f"graphs[{g}]")
            continue
        _read_graph(graph, f"graphs[{g}]", parts)
    parts.details = {"graphs": len(graphs)}
    return parts


def _entries(graph: dict, key: str, where: str, parts: OntologyParts):
    entries = graph.get(key) or []
    if not isinstance(entries, list):
        parts.account.add(f"{key}_not_a_list_dropped", f"{where}.{key}")
        return
    for k, entry in enumerate(entries):
        if isinstance(entry, dict):
            yield f"{where}.{key}[{k}]", entry
        else:
            parts.account.add(f"{key}_of_an_unexpected_shape_dropped", f"{where}.{key}[{k}]")


def _read_graph(graph: dict, where: str, parts: OntologyParts) -> None:
    for at, node in _entries(graph, "nodes", where, parts):
        _read_node(node, at, parts)
    for at, edge in _entries(graph, "edges", where, parts):
        sub, pred, obj = (_text(edge.get(k)) for k in ("sub", "pred", "obj"))
        if not (sub and pred and obj):
            parts.account.add("edges_of_an_unexpected_shape_dropped", at)
            continue
        parts.edges.append((obo_id(sub), _EDGE_KINDS.get(pred, obo_id(pred)), obo_id(obj), at))
    for at, axiom in _entries(graph, "logicalDefinitionAxioms", where, parts):
        defined = _text(axiom.get("definedClassId"))
        genera = axiom.get("genusIds") or []
        restrictions = axiom.get("restrictions") or []
        if not defined or not isinstance(genera, list) or not isinstance(restrictions, list):
            parts.account.add("logical_definitions_of_an_unexpected_shape_dropped", at)
            continue
        for genus in filter(None, map(_text, genera)):
            parts.edges.append((obo_id(defined), SUBCLASS, obo_id(genus), at))
        for restriction in restrictions:
            prop = _text(restriction.get("propertyId")) if isinstance(restriction, dict) else None
            filler = _text(restriction.get("fillerId")) if isinstance(restriction, dict) else None
            if prop and filler:
                parts.edges.append((obo_id(defined), obo_id(prop), obo_id(filler), at))
            else:
                parts.account.add("restrictions_of_an_unexpected_shape_dropped", at)
    meta = graph.get("meta") if isinstance(graph.get("meta"), dict) else {}
    for value in meta.get("basicPropertyValues") or []:
        if isinstance(value, dict) and value.get("pred") == "http://www.w3.org/2002/07/owl#imports":
            if _text(value.get("val")):
                parts.imports.append(value["val"])


def _read_node(node: dict, at: str, parts: OntologyParts) -> None:
    node_id = _text(node.get("id"))
    if node_id is None:
        parts.account.add("nodes_without_an_id_dropped", at)
        return
    term_id = obo_id(node_id)
    meta = node.get("meta") if isinstance(node.get("meta"), dict) else {}
    label = _text(node.get("lbl"))
    definition = meta.get("definition") if isinstance(meta.get("definition"), dict) else {}
    if node.get("type") == "PROPERTY":
        known = parts.relations.get(term_id, (None, None))
        parts.relations[term_id] = (known[0] or label, known[1] or _text(definition.get("val")))
        return
    if node.get("type") not in ("CLASS", "INDIVIDUAL"):
        parts.account.add("nodes_of_other_types_left_out", f"{at}: {term_id} ({node.get('type')})")
        return
    if label is None and not meta:
        parts.declared.setdefault(term_id, at)  # only declared (an entity in an own namespace)
        return
    synonyms = [_text(s.get("val")) for s in meta.get("synonyms") or [] if isinstance(s, dict)]
    if term_id in parts.terms:
        parts.account.add("nodes_given_twice_merged", f"{at}: {term_id}")
        return
    comments = [_text(c) for c in meta.get("comments") or []]
    parts.terms[term_id] = Term(name=label, synonyms=[s for s in synonyms if s],
                                definition=_text(definition.get("val")) or next(filter(None, comments), None),
                                obsolete=meta.get("deprecated") is True, where=at)
    for value in meta.get("basicPropertyValues") or []:
        if isinstance(value, dict) and _text(value.get("pred")) and _text(value.get("val")):
            if "://" in value["val"] or ":" in value["val"] and " " not in value["val"]:
                parts.annotation_edges.append((term_id, obo_id(value["pred"]), obo_id(value["val"]), at))


__all__ = ["OboGraphsError", "read_obographs"]
