"""The KG importers fuzzed: WN18RR folders and evaluation splits (:func:`jaket.kg.readers.read_split`),
RDF (N-Triples), OWL (Turtle; the pizza ontology of ../shared/data in RDF/XML) and OBO files.

Hypothesis writes a valid input, then breaks it: a line cut short, a tab too many or too few, an
empty or white-space line, a byte order mark, CRLF line ends, bytes that are not UTF-8, a duplicate
line, an unknown id, a 100 KB id, a stray character in Turtle or XML, a cycle in the subclass
hierarchy, an RDF list or class expression that contains itself, a class without a label. The only
outcomes allowed are a result consistent with the input (every triple kept, every skipped one
counted), or the importer's own error (``KGFormatError``, ``RDFImportError``, the OBO reader's
``ValueError``) whose every line names the file, and the line where the format has lines
(``path:line: message``): never another exception's traceback, never a megabyte message.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from jaket.kg.errors import KGFormatError
from jaket.kg.graph import KnowledgeGraph
from jaket.kg.io import load_kg, save_kg
from jaket.kg.readers import read_split
from jaket.kg.sources.registry import build_source

pytestmark = pytest.mark.filterwarnings("ignore")
needs_rdflib = pytest.mark.skipif(importlib.util.find_spec("rdflib") is None, reason="rdflib is not installed")

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ontologies"
LONGEST_MESSAGE = 1200  # a quoted value is cut to 80 characters, never the whole 100 KB id
LONG = "9" * 100_000


def fuzz(examples: int):
    scale = int(os.environ.get("JAKET_FUZZ_SCALE", "1"))
    return settings(max_examples=examples * scale, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def _names_the_file(message: str, path: Path, line_numbers: set[int] | None = None) -> None:
    """Every line of ``message`` starts with ``path`` (``path:N:`` with N in ``line_numbers`` when
    given) and is short."""
    assert message.strip(), "an empty error message"
    for said in message.split("\n"):
        assert said.startswith(str(path)), said[:300]
        assert len(said) <= len(str(path)) + LONGEST_MESSAGE, said[:300]
        if line_numbers is not None:
            match = re.match(re.escape(str(path)) + r":(\d+): ", said)
            assert match and int(match.group(1)) in line_numbers, (said[:300], sorted(line_numbers))


# ================================================================ triple files (WN18RR, read_split)
WN_ENTITIES = ["02084071", "02083346", "01317541", "00733632", "00670991", "99999999"]
WN_RELATIONS = ["_hypernym", "_also_see", "_verb_group"]
#: ids no KG of these tests has: white space inside, a byte order mark or NUL in front, digits
#: int() reads or refuses, 100 KB
UNKNOWN_IDS = ["0208 4071", "\ufeff02084071", "\x0002084071", "²", "０２", "-1", "_hyponym", LONG]
PAD = st.sampled_from(["", "", " ", "  "])  # white space around a field is not part of its id


@st.composite
def triple_line(draw, entities: list[str], relations: list[str], bad: bool = True):
    """``(bytes of one line, kind, triple)``: kind ``row`` (its ids stripped in ``triple``),
    ``unknown`` (a well-formed line, one id outside the pools), ``blank`` (skipped) or ``bad``
    (only when ``bad``)."""
    triple = [draw(st.sampled_from(entities)), draw(st.sampled_from(relations)), draw(st.sampled_from(entities))]
    fields = [draw(PAD) + field + draw(PAD) for field in triple]
    line = "\t".join(fields)
    kind = draw(st.sampled_from(["row", "row", "row", "unknown", "blank"]
                                + ["cut", "extra tab", "no tab", "tabs only", "bytes", "long"] * bad))
    if kind == "row":
        return line.encode(), "row", tuple(triple)
    if kind == "unknown":
        at = draw(st.integers(0, 2))
        fields[at] = triple[at] = draw(st.sampled_from(UNKNOWN_IDS))
        return "\t".join(fields).encode(), "unknown", tuple(triple)
    if kind == "blank":
        return draw(st.sampled_from([b"", b" ", b"   ", b" \x0c "])), "blank", None
    if kind == "cut":  # one or two fields, with or without the tab that followed
        line = "\t".join(fields[:draw(st.integers(1, 2))]) + draw(st.sampled_from(["", "\t"]))
    elif kind == "extra tab":
        at = draw(st.integers(0, len(line)))
        line = line[:at] + "\t" + line[at:] if draw(st.booleans()) else line + "\t" + draw(st.sampled_from(["", "x"]))
    elif kind == "no tab":
        line = line.replace("\t", draw(st.sampled_from(["", " "])), 1)
    elif kind == "tabs only":
        line = draw(st.sampled_from(["\t", "\t\t", " \t \t "]))
    elif kind == "long":
        line = "\t".join([*fields, LONG])  # a field too many, 100 KB
    if kind != "bytes":
        return line.encode(), "bad", None
    raw, at = line.encode(), draw(st.integers(0, len(line)))
    return raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"])) + raw[at:], "bad", None


@st.composite
def triple_lines(draw, entities: list[str], relations: list[str]) -> list[tuple[bytes, str, tuple | None]]:
    """Up to 8 :func:`triple_line` (about half the files without a bad one) and a duplicate or two."""
    lines = draw(st.lists(triple_line(entities, relations, draw(st.booleans())), max_size=8))
    for _ in range(draw(st.integers(0, 2))):
        if lines:
            lines.insert(draw(st.integers(0, len(lines))), lines[draw(st.integers(0, len(lines) - 1))])
    return lines


@st.composite
def assembled(draw, lines: list[bytes]) -> bytes:
    """``lines`` ended by LF or CRLF (mixed), maybe a byte order mark first and no last line end."""
    data = b"".join(raw + draw(st.sampled_from([b"\n", b"\r\n"])) for raw in lines)
    if lines and lines[-1].strip() and draw(st.booleans()):
        data = data.rstrip(b"\r\n")
    # a line starting with one is not the first: a byte order mark there is the file's, dropped
    first = data.startswith(b"\xef\xbb\xbf") or draw(st.integers(0, 3)) == 0
    return (b"\xef\xbb\xbf" if first else b"") + data


def _check_split(path: Path, lines: list, kg: KnowledgeGraph) -> None:
    """``read_split`` of a file of ``lines`` whose kinds are known: the rows in order and the
    unknown ones counted, or a KGFormatError naming exactly the bad lines."""
    bad = {number for number, (_, kind, _) in enumerate(lines, 1) if kind == "bad"}
    try:
        triples, skipped = read_split(path, kg)
    except KGFormatError as error:
        event("refused")
        assert bad, f"a file without a bad line was refused: {error}"
        assert {p.line for p in error.problems} == bad and {p.path for p in error.problems} == {str(path)}
        _names_the_file(str(error), path, bad)
        return
    assert not bad, f"lines {sorted(bad)} are bad, but the file was read"
    rows = [triple for _, kind, triple in lines if kind == "row"]
    assert [(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in triples.tolist()] == rows
    assert skipped == sum(kind == "unknown" for _, kind, _ in lines)


@fuzz(150)
@given(data=st.data())
def test_evaluation_split_files(make_kg, data, tmp_path):
    lines = data.draw(triple_lines(WN_ENTITIES, WN_RELATIONS))
    path = tmp_path / "valid.txt"
    path.write_bytes(data.draw(assembled([raw for raw, _, _ in lines])))
    _check_split(path, lines, make_kg(WN_ENTITIES, ids=WN_ENTITIES, relations=WN_RELATIONS))


@pytest.fixture(scope="module")
def shared_wn18rr_lines() -> list[tuple[str, str, str]]:
    """The first 500 triples of ../shared/data/wn18rr's train.txt and valid.txt."""
    rows = []
    for name in ("train.txt", "valid.txt"):
        path = SHARED / "wn18rr" / name
        if not path.is_file():
            pytest.skip(f"{path} is not present")
        with path.open(encoding="utf-8") as handle:
            rows += [tuple(next(handle).rstrip("\n").split("\t")) for _ in range(500)]
    return rows


@fuzz(40)
@given(data=st.data())
def test_evaluation_split_files_from_shared_wn18rr(make_kg, data, shared_wn18rr_lines, tmp_path):
    picked = data.draw(st.lists(st.sampled_from(shared_wn18rr_lines), min_size=1, max_size=12))
    entities = sorted({e for h, _, t in picked for e in (h, t)})
    relations = sorted({r for _, r, _ in picked})
    lines = data.draw(triple_lines(entities, relations))
    path = tmp_path / "test.txt"
    path.write_bytes(data.draw(assembled([raw for raw, _, _ in lines])))
    _check_split(path, lines, make_kg(entities, ids=entities, relations=relations))


def test_a_split_that_is_missing_or_a_folder_is_named(make_kg, tmp_path):
    for path in (tmp_path / "absent.txt", tmp_path):
        with pytest.raises(KGFormatError) as error:
            read_split(path, make_kg(WN_ENTITIES, ids=WN_ENTITIES, relations=WN_RELATIONS))
        _names_the_file(str(error.value), path)


# ---------------------------------------------------------------- WN18RR folders
#: a WordNet of six synsets: 00733632 is both a verb and an adjective (an ambiguous offset)
_SYNSETS = [(2084071, "n", "dog"), (2083346, "n", "canine"), (1317541, "n", "domestic animal"),
            (733632, "v", "align"), (733632, "a", "plummy"), (670991, "v", "adjust")]
STUB_WORDNET = SimpleNamespace(
    offset_index={(offset, pos): i for i, (offset, pos, _) in enumerate(_SYNSETS)},
    ids=[f"{name}.{pos}.01" for _, pos, name in _SYNSETS], names=[name for _, _, name in _SYNSETS],
    aliases=[[] for _ in _SYNSETS], descriptions=[f"{name}: a synset" for _, _, name in _SYNSETS],
    synset_type=[pos for _, pos, _ in _SYNSETS], category=np.array([1, 1, 1, 2, 0, 2]),
    category_names=["adj.all", "noun.animal", "verb.change"], triples=np.array([[3, 0, 5]]))
#: ids beside WN18RR's: digits ``int()`` refuses (``³``) or reads (full-width ``０１``), not digits
ODD_ENTITIES = ["³", "０１", "1e5"]
BROKEN_DICT_LINES = [b"x\tQ", "²\tQ".encode(), b"\tQ", b"3", b"1\t", b"1\ta\tb", b"\xff\tQ", b"\t", b"-1\tQ"]


@st.composite
def wn18rr_folders(draw) -> dict:
    """File name -> ``[(line bytes, kind, triple)]``; a dictionary's kinds: None (a good line),
    ``bad``, ``twice`` (a line given again) and ``blank``."""
    entities = draw(st.lists(st.sampled_from(WN_ENTITIES + ODD_ENTITIES), min_size=1, max_size=6, unique=True))
    relations = draw(st.lists(st.sampled_from(WN_RELATIONS + ["_odd_one"]), min_size=1, max_size=3, unique=True))
    files = {"train.txt": draw(triple_lines(entities, relations))}
    if draw(st.booleans()):
        files["valid.txt"] = draw(triple_lines(entities, relations))
    for name, ids in (("entities.dict", entities), ("relations.dict", relations)):
        if draw(st.integers(0, 3)) == 0:
            continue
        lines = [(f"{i}\t{x}".encode(), None, None) for i, x in enumerate(ids)]
        at = draw(st.integers(0, len(lines)))
        defect = draw(st.sampled_from(["none", "none", "bad", "twice", "drop", "blank", "long"]))
        if defect == "bad":
            lines.insert(at, (draw(st.sampled_from(BROKEN_DICT_LINES)), "bad", None))
        elif defect == "twice":
            lines.insert(at, (lines[draw(st.integers(0, len(lines) - 1))][0], "twice", None))
        elif defect == "drop":
            lines.pop(draw(st.integers(0, len(lines) - 1)))
        elif defect == "blank":
            lines.insert(at, (b"  ", "blank", None))
        elif defect == "long":
            lines.insert(at, (f"{len(lines)}\t{'8' * 100_000}".encode(), None, None))
        files[name] = lines
    return files


def _expectations(files: dict) -> tuple[set, list[str] | None, list[str] | None]:
    """``(problems, entity ids, relation ids)``: the problems the folder must give, as (file, line)
    or (file, None) for one somewhere in the file; the ids of each dictionary (None: none given)."""
    problems, tables = set(), []
    for name in ("entities.dict", "relations.dict"):
        if name not in files:
            tables.append(None)
            continue
        rows = {}
        for number, (raw, kind, _) in enumerate(files[name], 1):
            if kind == "bad":
                problems.add((name, number))
            elif kind == "twice":
                problems.add((name, None))
            elif kind is None:
                index, value = raw.decode().split("\t")
                rows[int(index)] = value
        if sorted(rows) != list(range(len(rows))):
            problems.add((name, None))
        tables.append([rows[i] for i in sorted(rows)])
    entities, relations = tables
    for name in ("train.txt", "valid.txt"):
        for number, (_, kind, triple) in enumerate(files.get(name, []), 1):
            unknown = triple is not None and (entities is not None and not {triple[0], triple[2]} <= set(entities)
                                              or relations is not None and triple[1] not in relations)
            if kind == "bad" or (name == "train.txt" and unknown):
                problems.add((name, number))
    return problems, entities, relations


def _write_folder(folder: Path, files: dict, draw) -> None:
    folder.mkdir()
    for name, lines in files.items():
        (folder / name).write_bytes(draw(assembled([raw for raw, _, _ in lines])))


@fuzz(120)
@given(data=st.data())
def test_wn18rr_folders(data, tmp_path_factory):
    files = data.draw(wn18rr_folders())
    folder = tmp_path_factory.mktemp("wn18rr") / "wn18rr"
    _write_folder(folder, files, data.draw)
    expected, entities, relations = _expectations(files)
    with mock.patch("jaket.kg.sources.wn18rr.load_wordnet_data", return_value=STUB_WORDNET):
        try:
            bundle = build_source("wn18rr", folder=folder)
        except KGFormatError as error:
            event("refused")
            said = {(Path(p.path).name, p.line) for p in error.problems}
            for problem in error.problems:
                _names_the_file(str(problem), folder / Path(problem.path).name)
            anywhere = {name for name, line in expected if line is None}
            assert {(n, line) for n, line in said if n not in anywhere} == {e for e in expected if e[0] not in anywhere}
            assert anywhere <= {name for name, _ in said}, (anywhere, said)
            return
    assert not expected, f"the folder loaded, though it has {sorted(expected, key=str)}"
    _check_wn18rr(bundle, files, entities, relations)


def _check_wn18rr(bundle, files: dict, entities: list[str] | None, relations: list[str] | None) -> None:
    """Every id, training triple and split line of ``files`` is in the bundle (or counted)."""
    kg = bundle.kg
    rows = {name: [triple for _, kind, triple in files.get(name, []) if triple is not None]
            for name in ("train.txt", "valid.txt")}
    met = rows["train.txt"] + rows["valid.txt"]
    if entities is None:
        entities = list(dict.fromkeys(e for h, _, t in met for e in (h, t)))
    if relations is None:
        relations = list(dict.fromkeys(r for _, r, _ in met))
    assert list(kg.entity_ids) == entities and list(kg.relation_ids) == relations
    got = [(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in kg.triples.tolist()]
    assert sorted(got) == sorted(rows["train.txt"])
    if "valid.txt" in files:
        known = [t for t in rows["valid.txt"] if {t[0], t[2]} <= set(entities) and t[1] in relations]
        split = bundle.splits["valid"].tolist()
        assert [(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in split] == known
        assert bundle.report.get("split_triples_skipped", {}).get("valid", 0) == len(rows["valid.txt"]) - len(known)
    for i, entity in enumerate(kg.entity_ids):
        synsets = [s for (offset, _), s in STUB_WORDNET.offset_index.items()
                   if entity.isascii() and entity.isdigit() and len(entity) <= 8 and int(entity) == offset]
        assert kg.entity_names[i] == (STUB_WORDNET.names[min(synsets)] if synsets else entity)


# ================================================================ RDF (N-Triples)
X = "http://x.org/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL, COMMENT = "http://www.w3.org/2000/01/rdf-schema#label", "http://www.w3.org/2000/01/rdf-schema#comment"
NT_IRIS = [X + "a", X + "b", X + "c%20d", X + "π", "urn:x:e", X + "l" * 100_000]
#: (N-Triples source, the literal's text)
NT_LITERALS = [('"Paris"@en', "Paris"), ('"Zürich"', "Zürich"), ('"line\\nbreak"', "line\nbreak"),
               ('"tab\\there"', "tab\there"), ('""', ""), ('"5"^^<http://www.w3.org/2001/XMLSchema#int>', "5")]


@st.composite
def nt_line(draw):
    """``(text, statement or None, bad)``: a statement ``(s, p, ("iri" | "literal" | "blank", o))``."""
    s, o = draw(st.sampled_from(NT_IRIS)), draw(st.sampled_from(NT_IRIS))
    kind = draw(st.sampled_from(["relation", "relation", "type", "label", "literal", "blank", "comment", "blank line",
                                 "cut", "bytes", "tab in an IRI", "surrogate", "no object"]))
    if kind in ("comment", "blank line"):
        return ("# a comment" if kind == "comment" else draw(st.sampled_from(["", "   "]))), None, False
    if kind in ("label", "literal", "surrogate"):
        source, text = draw(st.sampled_from(NT_LITERALS))
        p = X + "age" if kind == "literal" else LABEL
        if kind == "surrogate":
            return f'<{s}> <{p}> "\\uD800{text[:0]}" .', None, True
        return f"<{s}> <{p}> {source} .", (s, p, ("literal", text)), False
    if kind == "blank":
        if draw(st.booleans()):
            return f"_:b1 <{X}knows> <{o}> .", ("_:b1", X + "knows", ("iri", o)), False
        return f"<{s}> <{X}knows> _:b2 .", (s, X + "knows", ("blank", "_:b2")), False
    p = RDF_TYPE if kind == "type" else draw(st.sampled_from([X + "knows", X + "partOf"]))
    o = draw(st.sampled_from([X + "City", X + "Person"])) if kind == "type" else o
    line = f"<{s}> <{p}> <{o}> ."
    if kind == "cut":
        return line[:draw(st.integers(1, len(line) - 1))], None, True
    if kind == "bytes":
        at = draw(st.integers(0, len(line)))
        return line[:at].encode() + b"\xff" + line[at:].encode(), None, True
    if kind == "tab in an IRI":
        return f"<{X}a\\u0009b> <{p}> <{o}> .", None, True
    if kind == "no object":
        return f"<{s}> <{p}> .", None, True
    return line, (s, p, ("iri", o)), False


def _check_rdf_kg(kg, report, statements: set) -> None:
    """Every statement accounted for: relation triples kept, the others counted, names from labels."""
    annotations, types = {LABEL, COMMENT}, {RDF_TYPE}
    relations = {(s, p, o) for s, p, (kind, o) in statements
                 if kind == "iri" and not s.startswith("_:") and p not in annotations | types}
    got = {(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in kg.triples.tolist()}
    assert got == relations and kg.num_triples == len(relations)
    assert report["rdf_triples"] == len(statements)
    assert report["blank_node_triples_ignored"] == sum(s.startswith("_:") or o[0] == "blank" for s, _, o in statements)
    literals = sum(o[0] == "literal" and p not in annotations for _, p, o in statements)
    assert report["literal_triples_ignored"] == literals
    for s in kg.entity_ids:
        labels = {o[1].strip() for s2, p, o in statements if s2 == s and p == LABEL and o[1].strip()}
        if len(labels) == 1:
            assert kg.entity_names[kg.entity_index(s)] == labels.pop()


def _saves_and_loads(kg) -> None:
    """What an import gives can be written and read back (the import command does)."""
    with tempfile.TemporaryDirectory(prefix="jaket-fuzz-") as holder:
        save_kg(kg, Path(holder) / "kg")
        again = load_kg(Path(holder) / "kg")
    assert list(again.entity_ids) == list(kg.entity_ids) and list(again.entity_names) == list(kg.entity_names)


@needs_rdflib
@fuzz(60)
@given(data=st.data())
def test_ntriples_files(data, tmp_path):
    from jaket.kg.sources.rdf import RDFImportError

    lines = data.draw(st.lists(nt_line(), max_size=8))
    for _ in range(data.draw(st.integers(0, 2))):  # a repeated statement is one statement
        if lines:
            lines.insert(data.draw(st.integers(0, len(lines))), lines[data.draw(st.integers(0, len(lines) - 1))])
    raws = [text if isinstance(text, bytes) else text.encode() for text, _, _ in lines]
    path = tmp_path / data.draw(st.sampled_from(["graph.nt", "graph.nq"]))  # N-Quads: the graph optional
    path.write_bytes(data.draw(assembled(raws)))
    bad = {number for number, (_, _, wrong) in enumerate(lines, 1) if wrong}
    try:
        bundle = build_source("rdf", file=path)
    except RDFImportError as error:
        event("refused")
        assert bad, f"a valid file was refused: {error}"
        _names_the_file(str(error), path, bad)
        return
    assert not bad, f"lines {sorted(bad)} are bad, but the file was read"
    _check_rdf_kg(bundle.kg, bundle.report, {statement for _, statement, _ in lines if statement})
    _saves_and_loads(bundle.kg)


# ================================================================ OWL (Turtle; the pizza ontology)
TURTLE_HEAD = """@prefix : <http://x.org/o#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
"""
#: statements of a small ontology, one a line: each kept or left out, repeated, in any order
TURTLE_STATEMENTS = [
    ':Food a owl:Class ; rdfs:label "food"@en .',
    ':Pizza a owl:Class ; rdfs:subClassOf :Food ; rdfs:label "pizza"@en, "Pizza"@it .',
    ':Topping a owl:Class ; rdfs:subClassOf :Food ; rdfs:comment "What goes on top." .',
    ':Cheese a owl:Class ; rdfs:subClassOf :Topping ; skos:definition "Made of milk."@en .',
    ':Margherita a owl:Class ; rdfs:subClassOf :Pizza, [ a owl:Restriction ; owl:onProperty :hasTopping ; '
    'owl:someValuesFrom [ owl:unionOf ( :Cheese :Tomato ) ] ] .',
    ':Tomato a owl:Class ; rdfs:subClassOf :Topping .',
    ':Spicy a owl:Class ; owl:equivalentClass [ owl:intersectionOf ( :Pizza [ a owl:Restriction ; '
    'owl:onProperty :hasTopping ; owl:allValuesFrom :Tomato ] ) ] .',
    ':hasTopping a owl:ObjectProperty ; rdfs:label "has topping" .',
    ':napoli a owl:NamedIndividual, :Pizza ; :hasTopping :mozzarella .',
    ':mozzarella a :Cheese .',
    ':NoLabel a owl:Class ; rdfs:subClassOf :Food .',  # a class with no label: named from its IRI
    ':Empty a owl:Class ; rdfs:label ""@en, "  " .',  # blank labels only
    ':A a owl:Class ; rdfs:subClassOf :B . :B a owl:Class ; rdfs:subClassOf :A .',  # a cycle
    ':Self a owl:Class ; rdfs:subClassOf :Self .',
    ':OnlyPortuguese a owl:Class ; rdfs:label "só português"@pt .',
]
#: statements no KG can take: the importer must refuse the file, naming it
TURTLE_REFUSED = [
    ':Loop a owl:Class ; rdfs:subClassOf [ owl:intersectionOf _:loop ] . _:loop rdf:first :Food ; rdf:rest _:loop .',
    ':Inside a owl:Class ; rdfs:subClassOf _:x . _:x owl:intersectionOf ( _:x :Food ) .',
    ':Union a owl:Class ; rdfs:subClassOf [ a owl:Restriction ; owl:onProperty :hasTopping ; '
    'owl:someValuesFrom _:u ] . _:u owl:unionOf ( :Cheese _:u ) .',
    ':Deep a owl:Class ; rdfs:subClassOf _:d0 . '  # 150 intersections, each of the next
    + " ".join(f"_:d{i} owl:intersectionOf ( _:d{i + 1} ) ." for i in range(150)),
    ':Odd a owl:Class ; rdfs:label "\\uD800 half a pair" .',
    '<http://x.org/o#tab\\u0009in> a owl:Class .',
]
#: what a stray edit may put in Turtle or XML
JUNK = ["<", ">", '"', ".", ";", ",", "(", ")", "[", "]", "@", "\\", "#", "\n", "\x00", "\ufeff", ":", "&", "]]>",
        "<!--", "\xff"]


@st.composite
def corrupted(draw, data: bytes) -> bytes:
    """``data`` cut short, with a stretch removed, or junk put in (one of them, or none)."""
    at = draw(st.integers(0, len(data)))
    how = draw(st.sampled_from(["none", "none", "cut", "remove", "insert"]))
    if how == "cut":
        return data[:at]
    if how == "remove":
        return data[:at] + data[at + draw(st.integers(1, 40)):]
    if how == "insert":
        junk = draw(st.sampled_from(JUNK))
        return data[:at] + (b"\xff" if junk == "\xff" else junk.encode()) + data[at:]
    return data


def _owl_expectations(path: Path, fmt: str) -> tuple[set[str], set[tuple[str, str]]]:
    """The named classes and named subClassOf pairs rdflib reads from ``path`` (a byte order mark
    dropped first), independently of the importer."""
    import rdflib

    graph = rdflib.Graph().parse(data=path.read_bytes().removeprefix(b"\xef\xbb\xbf"), format=fmt)
    owl, sub = "http://www.w3.org/2002/07/owl#", rdflib.RDFS.subClassOf
    classes = {str(c) for c in graph.subjects(rdflib.RDF.type, rdflib.URIRef(owl + "Class"))
               if isinstance(c, rdflib.URIRef)}
    classes |= {str(c) for pair in graph.subject_objects(sub) for c in pair if isinstance(c, rdflib.URIRef)}
    classes.discard(owl + "Thing")
    pairs = {(str(c), str(d)) for c, d in graph.subject_objects(sub) if isinstance(c, rdflib.URIRef)
             and isinstance(d, rdflib.URIRef) and c != d and str(d) in classes}
    return classes, pairs


def _check_owl(path: Path, fmt: str, refused: bool, options: dict) -> None:
    from jaket.kg.sources.owl import SUBCLASS
    from jaket.kg.sources.rdf import RDFImportError

    try:
        bundle = build_source("owl", file=path, **options)
    except RDFImportError as error:
        event("refused")
        _names_the_file(str(error), path)
        return
    except ValueError as error:  # --category-root naming no class of the file
        assert options.get("category_root") and "--category-root" in str(error) and str(path) in str(error)
        return
    assert not refused, "a file holding a statement no KG can take was imported"
    kg = bundle.kg
    classes, pairs = _owl_expectations(path, fmt)
    assert classes <= set(kg.entity_ids)
    got = {(kg.entity_ids[h], kg.entity_ids[t]) for h, r, t in kg.triples.tolist() if kg.relation_ids[r] == SUBCLASS}
    assert pairs <= got
    _saves_and_loads(kg)


@needs_rdflib
@fuzz(50)
@given(data=st.data())
def test_owl_turtle_files(data, tmp_path):
    kept = data.draw(st.lists(st.sampled_from(TURTLE_STATEMENTS), max_size=10))
    refused = data.draw(st.booleans())
    if refused:
        kept.insert(data.draw(st.integers(0, len(kept))), data.draw(st.sampled_from(TURTLE_REFUSED)))
    whole = data.draw(assembled([TURTLE_HEAD.rstrip("\n").encode(), *(line.encode() for line in kept)]))
    content = data.draw(corrupted(whole))
    path = tmp_path / "onto.ttl"
    path.write_bytes(content)
    options = {"category_root": data.draw(st.sampled_from([None, None, "http://x.org/o#Food", "http://x.org/o#Cheese",
                                                           "http://x.org/o#A"])),
               "category_depth": data.draw(st.sampled_from([None, 0, 1, 4]))}
    _check_owl(path, "turtle", refused and content == whole, options)


@pytest.fixture(scope="module")
def pizza() -> bytes:
    path = SHARED / "ontologies" / "pizza.owl"
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    return path.read_bytes()


@needs_rdflib
@fuzz(8)
@given(data=st.data())
def test_owl_xml_from_the_pizza_ontology(data, pizza, tmp_path):
    path = tmp_path / "pizza.owl"
    content = data.draw(corrupted(pizza))
    if data.draw(st.booleans()):
        content = content.replace(b"\n", b"\r\n")
    path.write_bytes(data.draw(st.sampled_from([b"", b"\xef\xbb\xbf"])) + content)
    _check_owl(path, "xml", False, {})


# ================================================================ OBO
#: stanzas added to tests/fixtures/ontologies/mini.obo; the refused ones are the last
OBO_STANZAS = ["[Term]\nid: MINI:0000010\nname: one\nis_a: MINI:0000011\n\n[Term]\nid: MINI:0000011\nname: two\n"
               "is_a: MINI:0000010",  # a cycle
               "[Term]\nid: MINI:0000012",  # no name, no edge
               "[Term]\nid: MINI:0000013\nname: orphan\nis_a: MINI:9999999",  # a parent not in the file
               "[Term]\nid: MINI:0000014\nname: loop\nis_a: MINI:0000014",
               "[Term]\nid: MINI:0000015\nname: part\nrelationship: part_of MINI:0000005",  # to an obsolete term
               "[Term]\nid: MINI:0000002\nname: metabolism again",  # a term given twice: merged, reported
               "[Term]\nid: MINI:0000016\nname: odd\nrelationship: undeclared_relation MINI:0000001"]
OBO_LINES = ["this is not a tag", "[Term", "id:", "is_a:", 'def: "unterminated []', "\t", "[Typedef]"]


def _obo_term_ids(text: str) -> tuple[set[str], set[str], set[str]]:
    """The ids of the ``[Term]`` stanzas of ``text``: all, the obsolete ones, those given twice."""
    ids, obsolete, twice = set(), set(), set()
    for stanza in re.split(r"\n(?=\[)", text):
        found = re.search(r"^id:[ \t]*([^\s\x00-\x1f\x7f]+)[ \t]*$", stanza, re.M)
        if stanza.startswith("[Term]") and found:
            twice |= {found.group(1)} & ids
            ids.add(found.group(1))
            if re.search(r"^is_obsolete:\s*true", stanza, re.M):
                obsolete.add(found.group(1))
    return ids, obsolete, twice


@fuzz(40)
@given(data=st.data())
def test_obo_files(data, tmp_path):
    lines = (FIXTURES / "mini.obo").read_text(encoding="utf-8").rstrip("\n").split("\n")
    added = data.draw(st.lists(st.sampled_from(OBO_STANZAS), max_size=3, unique=True))
    lines += [line for stanza in added for line in ["", *stanza.split("\n")]]
    if data.draw(st.booleans()):  # a line broken, or left out
        at = data.draw(st.integers(0, len(lines) - 1))
        if data.draw(st.booleans()):
            lines.pop(at)
        else:
            lines.insert(at, data.draw(st.sampled_from(OBO_LINES)))
    whole = data.draw(assembled([line.encode() for line in lines]))
    content = data.draw(corrupted(whole))
    path = tmp_path / "mini.obo"
    path.write_bytes(content)
    bundle = build_source("obo", file=path)  # lenient: never a refusal of the whole file, an account instead
    account = bundle.report["account"]
    for kind, entry in account.items():  # every example names the file (and the line) it comes from
        assert all(example.startswith(f"{path}:") for example in entry["examples"]), (kind, entry)
    try:
        text = content.decode("utf-8-sig").replace("\r\n", "\n")
    except UnicodeDecodeError:
        assert "lines_not_utf8_dropped" in account
        return
    ids, obsolete, twice = _obo_term_ids(text)
    assert set(bundle.kg.entity_ids) == ids - obsolete
    assert ("terms_in_several_stanzas_merged" in account) == bool(twice)
    _saves_and_loads(bundle.kg)


# ================================================================ what the fuzzing found, pinned
def _wn18rr(tmp_path: Path, **files: str | bytes):
    folder = tmp_path / "wn18rr"
    folder.mkdir(parents=True)
    for name, text in {"train_txt": "02084071\t_hypernym\t02083346\n", **files}.items():
        (folder / name.replace("_", ".")).write_bytes(text if isinstance(text, bytes) else text.encode())
    with mock.patch("jaket.kg.sources.wn18rr.load_wordnet_data", return_value=STUB_WORDNET):
        return build_source("wn18rr", folder=folder)


@pytest.mark.parametrize("files, said", [
    # int("²") raised ValueError; "³" as an offset too
    ({"entities_dict": "²\t02084071\n", "relations_dict": "0\t_hypernym\n"}, ["entities.dict:1: expected index"]),
    # a line of a tab alone was skipped as blank
    ({"entities_dict": "0\t02084071\n\t\n1\t02083346\n", "relations_dict": "0\t_hypernym\n"},
     ["entities.dict:2: expected index"]),
    # the bad lines of valid.txt were only said once those of train.txt were mended
    ({"train_txt": "02084071\t_hypernym\n", "valid_txt": "x\n", "entities_dict": "0\t02084071\n",
      "relations_dict": "0\t_hypernym\n"}, ["train.txt:1: expected", "valid.txt:1: expected"]),
    # a 100 KB unknown id was quoted whole
    ({"train_txt": f"{LONG}\t_hypernym\t02084071\n", "entities_dict": "0\t02084071\n",
      "relations_dict": "0\t_hypernym\n"}, ["train.txt:1: unknown head '9999"]),
])
def test_wn18rr_bad_folders_found_by_fuzzing(tmp_path, files, said):
    with pytest.raises(KGFormatError) as error:
        _wn18rr(tmp_path, **files)
    message = str(error.value)
    assert all(part in message for part in said), message[:2000]
    assert len(message) < 2000


def test_wn18rr_folders_found_by_fuzzing(tmp_path):
    # "³" is a digit to str.isdigit, not to int(): a ValueError
    bundle = _wn18rr(tmp_path, train_txt="02084071\t_hypernym\t³\n")
    assert bundle.kg.entity_names[bundle.kg.entity_index("³")] == "³"
    # entities.dict without relations.dict was ignored: its entities in no triple were lost
    bundle = _wn18rr(tmp_path / "one", entities_dict="0\t02084071\n1\t02083346\n2\t99999999\n")
    assert list(bundle.kg.entity_ids) == ["02084071", "02083346", "99999999"]
    assert bundle.report["dictionaries"] == "entities.dict, relations collected from the triple files"


@needs_rdflib
@pytest.mark.parametrize("name, content, said", ids=lambda value: value if isinstance(value, str) else "", argvalues=[
    # a byte order mark was a syntax error in N-Triples
    ("bom.nt", b"\xef\xbb\xbf<http://x.org/a> <http://x.org/p> <http://x.org/b> .\n", None),
    # a blank label raised IndexError
    ("blank.nt", b'<http://x.org/a> <http://x.org/p> <http://x.org/b> .\n<http://x.org/a> '
                 b'<http://www.w3.org/2000/01/rdf-schema#label> "" .\n', None),
    # bytes that are not UTF-8: the line was not said
    ("bytes.ttl", b"@prefix : <http://x.org/> .\n:a :p :b .\n:a :q \"\xff\" .\n", ":3: malformed turtle"),
    ("bytes.nt", b"<http://x.org/a> <http://x.org/p> <http://x.org/b> .\n"
                 b"<http://x.org/a> <http://x.org/p> \"\xff\" .\n", ":2: malformed nt"),
    ("broken.owl", b'<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\n'
                   b'<rdf:Description rdf:about="http://x.org/a">\n</rdf:RDF>\n', ":4: malformed xml"),
    # a tab in an IRI, a lone surrogate in a label: imported, then a ValueError when written
    ("tab.nt", b"<http://x.org/a\\u0009b> <http://x.org/p> <http://x.org/c> .\n", ":1: the IRI 'http://x.org/a\\tb'"),
    ("surrogate.nt", b"<http://x.org/a> <http://x.org/p> <http://x.org/c> .\n<http://x.org/c> "
                     b"<http://www.w3.org/2000/01/rdf-schema#label> \"\\uD800\" .\n", ":2: '\\ud800' holds a lone"),
])
def test_rdf_files_found_by_fuzzing(tmp_path, name, content, said):
    from jaket.kg.sources.rdf import RDFImportError

    path = tmp_path / name
    path.write_bytes(content)
    if said is None:
        _saves_and_loads(build_source("rdf", file=path).kg)
        return
    with pytest.raises(RDFImportError) as error:
        build_source("rdf", file=path)
    assert str(error.value).startswith(f"{path}{said}"), str(error.value)


@needs_rdflib
@pytest.mark.parametrize("name, content", [
    ("graph.nq", b"<http://x.org/a> <http://x.org/p> <http://x.org/b> <http://x.org/g> .\n"),
    ("graph.trig", b"<http://x.org/g> { <http://x.org/a> <http://x.org/p> <http://x.org/b> . }\n"),
    ("graph.jsonld", b'{"@graph": [{"@id": "http://x.org/g", "@graph": [{"@id": "http://x.org/a", '
                     b'"http://x.org/p": {"@id": "http://x.org/b"}}]}]}')])
def test_rdf_named_graphs_found_by_fuzzing(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    kg = build_source("rdf", file=path).kg  # parsed into a Graph, the triples of named graphs were lost
    assert list(kg.entity_ids) == ["http://x.org/a", "http://x.org/b"] and kg.num_triples == 1


@needs_rdflib
@pytest.mark.parametrize("statement, said", [
    (TURTLE_REFUSED[0], "runs back into itself"),  # rdflib's ValueError, naming no file
    (TURTLE_REFUSED[1], "contains itself"),  # RecursionError
    (TURTLE_REFUSED[2], "contains itself"),
    (TURTLE_REFUSED[3], "nests more than 100 deep"),
], ids=["list", "intersection", "union", "deep"])
def test_owl_class_expressions_found_by_fuzzing(tmp_path, statement, said):
    from jaket.kg.sources.rdf import RDFImportError

    path = tmp_path / "onto.ttl"
    path.write_text(TURTLE_HEAD + ":Food a owl:Class .\n" + statement + "\n", encoding="utf-8")
    with pytest.raises(RDFImportError) as error:
        build_source("owl", file=path)
    assert str(error.value).startswith(f"{path}: a class expression of 'http://x.org/o#") and said in str(error.value)


@needs_rdflib
def test_owl_hierarchy_found_by_fuzzing(tmp_path):
    path = tmp_path / "onto.ttl"
    path.write_text(TURTLE_HEAD + ":Food a owl:Class .\n:Pizza a owl:Class ; rdfs:subClassOf :Food .\n",
                    encoding="utf-8")
    # --category-root a class with no subclass: max() of an empty sequence
    kg = build_source("owl", file=path, category_root="http://x.org/o#Pizza").kg
    assert kg.num_entities == 2 and list(kg.entity_category) == [-1, -1]
    # a subclass not declared owl:Class was left out, and its subClassOf edge with it
    path.write_text(TURTLE_HEAD + ":Food a owl:Class .\n:Pizza rdfs:subClassOf :Food .\n", encoding="utf-8")
    kg = build_source("owl", file=path).kg
    assert list(kg.entity_ids) == ["http://x.org/o#Food", "http://x.org/o#Pizza"] and kg.num_triples == 1


def test_obo_files_found_by_fuzzing(tmp_path):
    path = tmp_path / "mini.obo"
    base = (FIXTURES / "mini.obo").read_bytes()
    # a relation without its [Typedef] (pronto's KeyError, the whole file refused): kept, named, accounted
    path.write_bytes(base + b"\n[Term]\nid: MINI:0000016\nname: odd\nrelationship: undeclared_relation MINI:0000001\n")
    bundle = build_source("obo", file=path)
    assert bundle.report["account"]["relations_without_a_typedef_kept"]["examples"] == [
        f"{path}:41: undeclared_relation"]
    assert "undeclared relation" in bundle.kg.relation_names
    # bytes that are not UTF-8: that line is dropped and said with its number
    path.write_bytes(base + b"\n[Term]\nid: MINI:0000017\nname: \xff\n")
    account = build_source("obo", file=path).report["account"]
    assert account["lines_not_utf8_dropped"]["examples"][0].startswith(f"{path}:40: invalid UTF-8")
    # a term given twice: merged, the first name kept, the second an alias, both stanzas named
    path.write_bytes(base + b"\n[Term]\nid: MINI:0000002\nname: metabolism again\n")
    bundle = build_source("obo", file=path)
    assert bundle.report["account"]["terms_in_several_stanzas_merged"]["examples"] == [
        f"{path}:38: MINI:0000002 (first at {path}:9)"]
    row = list(bundle.kg.entity_ids).index("MINI:0000002")
    assert bundle.kg.entity_names[row] == "metabolic process" and "metabolism again" in bundle.kg.entity_aliases[row]


def test_wn18rr_split_that_is_a_folder_is_named(tmp_path):
    """A folder where valid.txt should be was read as "no valid split", without a word."""
    folder = tmp_path / "wn18rr"
    (folder / "valid.txt").mkdir(parents=True)
    (folder / "train.txt").write_text("02084071\t_hypernym\t02083346\n", encoding="utf-8")
    with mock.patch("jaket.kg.sources.wn18rr.load_wordnet_data", return_value=STUB_WORDNET):
        with pytest.raises(KGFormatError, match=r"valid\.txt: not a file"):
            build_source("wn18rr", folder=folder)
