"""OBO flat files (``.obo``, OBO 1.2 and 1.4: GO, HPO, PATO, MONDO and their import modules) read
leniently, line by line, into :class:`~jaket.kg.sources.ontology.OntologyParts`; the KG is made by
the rule every ontology format shares (:mod:`jaket.kg.sources.ontology`). A ``.json`` file given
here is OBO Graphs JSON and is read by :mod:`jaket.kg.sources.obographs`.

What is read: ``[Term]`` and ``[Instance]`` stanzas are the terms (``name``, ``def`` or else
``comment``, ``synonym``, ``is_obsolete``); ``is_a``, ``relationship``, ``intersection_of`` (genus and differentiae),
``equivalent_to`` and ``instance_of`` are edges; ``[Typedef]`` stanzas name the relations. A typedef
with a short id (``part_of``) and one cross-reference to an OBO id (``xref: BFO:0000050``) is that
id, as in the OWL form of the same ontology. The header's ``import:`` lines are listed, not followed.

**Lenient, with a full account** (the report's ``account``, each kind counted with its first
examples as ``file:line``): a clause that cannot be read (an unclosed quote, a missing value, a
relationship without its target) is dropped; a stanza without a readable ``id`` is dropped; a
synonym type, subset or relation the header does not declare is kept (OBO tools write such files);
a term given by several stanzas is merged (the first name and definition kept, the rest added);
a reference to a term the file does not define drops that edge (the term is defined elsewhere,
:func:`~jaket.kg.sources.ontology.resolve_imports` reads it from a local copy). Nothing is fetched.

Why not pronto or fastobo: both refuse the whole file at its first unexpected clause (6 of 9
import modules of one large ontology), pronto follows ``import:`` URLs over the network, and
fastobo panics (a Rust backtrace on standard error) on some stanzas, e.g. an ``[Instance]`` with a
short id (docs/design.md, "Ontologies as they are published").
"""

from __future__ import annotations

from pathlib import Path

from jaket.kg.errors import Problem
from jaket.kg.readers import read_lines
from jaket.kg.sources.formats import OntologyError
from jaket.kg.sources.ontology import EQUIVALENT, INSTANCE, SUBCLASS, OntologyParts, Term, obo_id

_UNESCAPE = {"n": "\n", "t": "\t", "W": " "}
_STANZAS = ("Term", "Typedef", "Instance")


class ClauseError(ValueError):
    """A clause whose value cannot be read (the message says why)."""


def _strip(value: str) -> str:
    """``value`` without its trailing ``! comment`` and ``{qualifiers}`` (outside quotes, escapes kept)."""
    quoted = escaped = False
    end = len(value)
    brace = None
    for i, char in enumerate(value):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char == "!" and (i == 0 or value[i - 1].isspace()):
            end = i
            break
        elif not quoted and char == "{" and brace is None and (i == 0 or value[i - 1].isspace()):
            brace = i
    text = value[:end].rstrip()
    if brace is not None and brace < end and text.endswith("}"):
        text = text[:brace].rstrip()
    return text


def _pieces(text: str, split: bool) -> list[str]:
    """``text`` with its escapes undone (``\\n`` a line break, ``\\:`` a colon), cut at unescaped
    white space when ``split``."""
    pieces, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(_UNESCAPE.get(char, char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif split and char.isspace():
            if current:
                pieces.append("".join(current))
                current = []
        else:
            current.append(char)
    if current or not split:
        pieces.append("".join(current))
    return pieces


def _unescape(text: str) -> str:
    return _pieces(text, split=False)[0]


def _quoted(value: str) -> tuple[str, str]:
    """The quoted string at the start of ``value`` (unescaped) and what follows it."""
    if not value.startswith('"'):
        raise ClauseError("a quoted string was expected")
    escaped = False
    for i in range(1, len(value)):
        if escaped:
            escaped = False
        elif value[i] == "\\":
            escaped = True
        elif value[i] == '"':
            return _unescape(value[1:i]), value[i + 1:].strip()
    raise ClauseError("the quoted string is not closed")


def _tokens(value: str, count: int) -> list[str]:
    """The first ``count`` identifiers of ``value`` (escapes undone); ClauseError when fewer."""
    tokens = _pieces(value, split=True)
    if len(tokens) < count:
        raise ClauseError(f"{count} identifier{'s' if count > 1 else ''} expected, found {len(tokens)}")
    if any(ord(char) < 32 or char == "\x7f" for token in tokens[:count] for char in token):
        raise ClauseError("an identifier holds a control character")
    return tokens[:count]


class _Stanza:
    """One stanza as written: its kind, first line and ``(line, tag, value)`` clauses."""

    def __init__(self, kind: str, line: int):
        self.kind, self.line, self.clauses = kind, line, []


def _split(path: Path, parts: OntologyParts) -> tuple[list[tuple[int, str, str]], list[_Stanza]]:
    """The header's clauses and the stanzas of the file; unreadable lines are accounted for."""
    problems: list[Problem] = []
    lines = read_lines(path, problems)
    for problem in problems:
        parts.account.add("lines_not_utf8_dropped", str(problem))
    header: list[tuple[int, str, str]] = []
    stanzas: list[_Stanza] = []
    current = None
    for number, raw in lines:
        text = raw.strip()
        if not text or text.startswith("!"):
            continue
        if text.startswith("["):  # a stanza begins (a broken header too: its clauses go with it)
            kind = text[1:-1].strip() if text.endswith("]") else text
            current = _Stanza(kind, number)
            if kind in _STANZAS:
                stanzas.append(current)
            else:
                parts.account.add("stanzas_of_unknown_kind_dropped", f"{path}:{number}: {text[:80]}")
            continue
        tag, colon, value = text.partition(":")
        if not colon or not tag.strip() or " " in tag.strip():
            parts.account.add("lines_without_a_tag_dropped", f"{path}:{number}: {text[:80]}")
            continue
        (header if current is None else current.clauses).append((number, tag.strip(), value.strip()))
    return header, stanzas


def read_obo(path) -> OntologyParts:
    """:class:`OntologyParts` of an OBO flat file (module docstring); ValueError when it is not a file."""
    path = Path(path)
    if not path.is_file():
        raise OntologyError(f"{path}: no such file")
    parts = OntologyParts("obo", str(path))
    header, stanzas = _split(path, parts)
    for _, tag, value in header:
        if tag == "import":
            parts.imports.append(_strip(value))
    typedef_id: dict[str, str] = {}
    metadata_tags: set[str] = set()
    for stanza in (s for s in stanzas if s.kind == "Typedef"):
        _read_typedef(path, stanza, parts, typedef_id, metadata_tags)
    for stanza in (s for s in stanzas if s.kind != "Typedef"):
        _read_term(path, stanza, parts, typedef_id, metadata_tags)
    parts.details = {"stanzas": {kind: sum(1 for s in stanzas if s.kind == kind) for kind in _STANZAS}}
    return parts


def _stanza_id(path: Path, stanza: _Stanza, parts: OntologyParts) -> str | None:
    ids = [(line, value) for line, tag, value in stanza.clauses if tag == "id"]
    if not ids:
        parts.account.add("stanzas_without_an_id_dropped", f"{path}:{stanza.line}: [{stanza.kind}]")
        return None
    line, value = ids[0]
    try:
        found = _tokens(_strip(value), 1)
        if len(_strip(value).split()) > 1:
            raise ClauseError("an id is one identifier, without spaces")
        return obo_id(found[0])
    except ClauseError as error:
        parts.account.add("stanzas_without_an_id_dropped", f"{path}:{line}: {error}")
        return None


def _read_typedef(path: Path, stanza: _Stanza, parts: OntologyParts, typedef_id: dict[str, str],
                  metadata_tags: set[str]) -> None:
    written = _stanza_id(path, stanza, parts)
    if written is None:
        return
    name = definition = None
    xrefs = []
    for line, tag, value in stanza.clauses:
        try:
            value = _strip(value)
            if tag == "name" and name is None:
                name = _unescape(value)
            elif tag == "def" and definition is None:
                definition = _quoted(value)[0]
            elif tag == "xref":
                xrefs.append(_tokens(value, 1)[0])
            elif tag == "is_metadata_tag" and value == "true":
                metadata_tags.add(written)
        except ClauseError as error:
            parts.account.add("clauses_not_readable_dropped", f"{path}:{line}: {tag}: {error}")
    prefixed = [x for x in xrefs if ":" in x and "://" not in x]
    canonical = obo_id(prefixed[0]) if ":" not in written and len(prefixed) == 1 else written
    if canonical != written:
        parts.account.add("relations_named_by_their_xref", f"{path}:{stanza.line}: {written} -> {canonical}")
    typedef_id[written] = canonical
    if written in metadata_tags:
        metadata_tags.add(canonical)
    parts.relations[canonical] = (name, definition)


def _read_term(path: Path, stanza: _Stanza, parts: OntologyParts, typedef_id: dict[str, str],
               metadata_tags: set[str]) -> None:
    term_id = _stanza_id(path, stanza, parts)
    if term_id is None:
        return
    where = f"{path}:{stanza.line}"
    term = parts.terms.get(term_id)
    if term is None:
        term = parts.terms[term_id] = Term(where=where)
    else:
        parts.account.add("terms_in_several_stanzas_merged", f"{where}: {term_id} (first at {term.where})")

    def relation(name: str, line: int) -> str:
        if name not in typedef_id and obo_id(name) not in parts.relations:
            parts.account.add("relations_without_a_typedef_kept", f"{path}:{line}: {name}")
            typedef_id[name] = obo_id(name)
        return typedef_id.get(name, obo_id(name))

    comment = None
    first_id = True
    for line, tag, value in stanza.clauses:
        try:
            value = _strip(value)
            if tag == "id":
                if not first_id:
                    parts.account.add("extra_id_clauses_dropped", f"{path}:{line}: {value[:80]}")
                first_id = False
            elif tag == "name":
                if term.name is None:
                    term.name = _unescape(value)
                elif _unescape(value) != term.name:
                    term.synonyms.append(_unescape(value))
            elif tag == "def":
                text = _quoted(value)[0]
                if term.definition is None:
                    term.definition = text
            elif tag == "comment" and term.definition is None:
                comment = _unescape(value)  # the definition's stand-in, as rdfs:comment is for OWL
            elif tag == "synonym":
                term.synonyms.append(_quoted(value)[0])
            elif tag == "is_obsolete":
                term.obsolete = term.obsolete or value.lower() == "true"
            elif tag in ("is_a", "instance_of", "equivalent_to"):
                kind = {"is_a": SUBCLASS, "instance_of": INSTANCE, "equivalent_to": EQUIVALENT}[tag]
                parts.edges.append((term_id, kind, obo_id(_tokens(value, 1)[0]), f"{path}:{line}"))
            elif tag == "relationship":
                name, target = _tokens(value, 2)
                edge = (term_id, relation(name, line), obo_id(target), f"{path}:{line}")
                (parts.annotation_edges if edge[1] in metadata_tags else parts.edges).append(edge)
            elif tag == "intersection_of":
                found = _tokens(value, 1)
                pair = _tokens(value, 2) if len(value.split()) >= 2 else None
                if pair is None:  # the genus: is_a
                    parts.edges.append((term_id, SUBCLASS, obo_id(found[0]), f"{path}:{line}"))
                else:  # a differentia: RELATION TARGET
                    parts.edges.append((term_id, relation(pair[0], line), obo_id(pair[1]), f"{path}:{line}"))
            elif tag == "property_value":
                name, target = _tokens(value, 2)
                if not target.startswith('"'):
                    parts.annotation_edges.append((term_id, obo_id(name), obo_id(target), f"{path}:{line}"))
            elif tag in ("union_of", "disjoint_from"):
                parts.account.add(f"{tag}_clauses_left_out", f"{path}:{line}: {term_id}")
        except ClauseError as error:
            parts.account.add("clauses_not_readable_dropped", f"{path}:{line}: {tag}: {error}")
    if term.definition is None and comment:
        term.definition = comment


__all__ = ["ClauseError", "read_obo"]
