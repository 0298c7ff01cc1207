"""The streamed RDF import (issue 65, item 3): the same KG as the rdflib path, on one process or two,
compressed or not; a malformed line named with its number, in either half of the file."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from jaket.kg.sources import rdf_stream
from jaket.kg.sources.rdf import RDFImportError, load_rdf
from jaket.kg.sources.rdf_stream import import_rdf, load_rdf_stream

pytest.importorskip("pyoxigraph")
ROOT = Path(__file__).resolve().parents[2]
EX = "http://example.org/"
LABEL, ALT, COMMENT = ("http://www.w3.org/2000/01/rdf-schema#label", "http://www.w3.org/2004/02/skos/core#altLabel",
                       "http://www.w3.org/2000/01/rdf-schema#comment")
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _dump(entities: int = 60) -> str:
    """N-Triples with every case the mapping sorts: labels in several languages, alternative labels,
    comments, several types, literal-valued and blank-node triples, escapes in literals and IRIs."""
    lines = []
    for i in range(entities):
        e = f"<{EX}e{i}>"
        lines.append(f'{e} <{LABEL}> "entity {i}"@en .')
        if i % 3 == 0:
            lines.append(f'{e} <{LABEL}> "Entität {i}"@de .')
            lines.append(f'{e} <{ALT}> "the \\"{i}th\\" one" .')
        if i % 4 == 0:
            lines.append(f'{e} <{COMMENT}> "A thing, number {i}.\\nSecond line \\u00e9." .')
        lines.append(f"{e} <{TYPE}> <{EX}C{i % 5}> .")
        if i % 7 == 0:
            lines.append(f"{e} <{TYPE}> <{EX}D{i % 2}> .")
        lines.append(f'{e} <{EX}population> "{i * 100}"^^<http://www.w3.org/2001/XMLSchema#integer> .')
        lines.append(f"{e} <{EX}near> <{EX}e{(i * 7 + 3) % entities}> .")
        lines.append(f"{e} <{EX}partOf> <{EX}e{(i * 11 + 5) % entities}> .")
        if i % 5 == 0:
            lines.append(f"{e} <{EX}near> _:b{i} .")
            lines.append(f"_:b{i} <{EX}near> {e} .")
    lines.append(f"<{EX}C1> <{LABEL}> \"class one\" .")
    lines.append(f"<{EX}near> <{LABEL}> \"is near\" .")
    lines.append(f"<{EX}caf\\u00E9> <{EX}near> <{EX}e1> .")  # an IRI written with an escape
    lines.append(f"<{EX}e2> <{EX}near> <{EX}e3> .")  # a triple given twice: one edge
    lines.append("# a comment line")
    return "\n".join(lines) + "\n"


def _same(a, b) -> None:
    assert list(a.entity_ids) == list(b.entity_ids)
    assert list(a.entity_names) == list(b.entity_names)
    assert [list(x) for x in a.entity_aliases] == [list(x) for x in b.entity_aliases]
    assert list(a.entity_descriptions) == list(b.entity_descriptions)
    assert list(a.category_names) == list(b.category_names) and np.array_equal(a.entity_category, b.entity_category)
    assert list(a.relation_ids) == list(b.relation_ids) and list(a.relation_names) == list(b.relation_names)
    assert np.array_equal(a.triples, b.triples)


@pytest.mark.parametrize("workers, lane", [(1, True), (2, True), (1, False), (2, False)])
def test_the_stream_gives_the_rdflib_kg(tmp_path, monkeypatch, workers, lane):
    """One reader or two (threads with the fast lane, processes without it), the lane or pyoxigraph
    alone: the KG of the rdflib path."""
    from jaket.kg.sources import ntriples

    path = tmp_path / "dump.nt"
    path.write_text(_dump(), encoding="utf-8")
    monkeypatch.setattr(rdf_stream, "PARALLEL_ABOVE", 0 if workers == 2 else 1 << 40)
    if not lane:
        monkeypatch.setattr(ntriples, "available", lambda: False)
    streamed, report = load_rdf_stream(path, "nt")
    expected, expected_report = load_rdf(path)
    _same(streamed, expected)
    assert report["reader"] == "pyoxigraph (streamed)" + (" with the N-Triples fast lane (pyarrow)" if lane else "")
    for key in ("entities_without_label", "entities_without_description", "extra_types_ignored",
                "blank_node_triples_ignored", "literal_triples_ignored"):
        assert report[key] == expected_report[key], key
    assert f"{EX}café" in streamed.entity_ids


def test_turtle_compressed_and_a_byte_order_mark_stream_too(tmp_path):
    film = ROOT / "examples" / "films" / "film.ttl"
    _same(import_rdf(film, reader="stream")[0], load_rdf(film)[0])
    packed = tmp_path / "dump.nt.gz"
    with gzip.open(packed, "wt", encoding="utf-8") as handle:
        handle.write("\ufeff" + _dump(10))
    plain = tmp_path / "dump.nt"
    plain.write_text(_dump(10), encoding="utf-8")
    _same(import_rdf(packed, reader="stream")[0], load_rdf(plain)[0])


@pytest.mark.parametrize("workers", [1, 2])
def test_a_malformed_line_is_named_in_either_half(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(rdf_stream, "PARALLEL_ABOVE", 0 if workers == 2 else 1 << 40)
    lines = _dump().splitlines()
    bad = len(lines) - 3  # in the second half of the file
    lines[bad - 1] = f"<{EX}e1> <{EX}near> <{EX}e2"
    path = tmp_path / "broken.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(RDFImportError, match=rf"^{path}:{bad}: malformed nt \("):
        load_rdf_stream(path, "nt")


def test_the_reader_flag(tmp_path, monkeypatch):
    path = tmp_path / "dump.nt"
    path.write_text(_dump(5), encoding="utf-8")
    assert "reader" not in import_rdf(path)[1]  # a small file: rdflib, as before
    assert import_rdf(path, reader="stream")[1]["reader"].startswith("pyoxigraph (streamed)")
    monkeypatch.setattr(rdf_stream, "STREAM_ABOVE", 0)
    assert import_rdf(path)[1]["reader"].startswith("pyoxigraph (streamed)")
    assert "reader" not in import_rdf(path, reader="rdflib")[1]
    xml = ROOT / "tests" / "fixtures" / "ontologies" / "upper.owl"
    with pytest.raises(RDFImportError, match="xml is not read as a stream"):
        import_rdf(xml, "xml", reader="stream")


def _odd_lines() -> str:
    """Lines at the edge of the fast lane's shapes (:mod:`jaket.kg.sources.ntriples`): each must be
    read as pyoxigraph reads it, by the lane or handed to pyoxigraph."""
    e = f"<{EX}e"
    return "".join([
        f'{e}1> <{LABEL}> "plain, with a # and a <bracket>"@EN-GB .\r\n',  # CRLF, a tag in capitals
        f'{e}2>\t<{LABEL}>\t"tabs between terms" .\n',
        f'{e}3> <{LABEL}> "" .\n',  # an empty label
        f'{e}4> <{LABEL}> "zh label"@zh-Hant .\n',
        f'{e}5> <{LABEL}> "private"@en-x-whatever .\n',
        f'{e}6> <{LABEL}> "typed"^^<http://www.w3.org/2001/XMLSchema#string> .\n',
        f"{e}7> <{EX}near> <{EX}e8> . # a comment after the dot\n",
        f"{e}8> <{EX}near> <{EX}caf%C3%A9> .\n",
        f"{e}9> <{EX}near> <{EX}café> .\n",  # non-ASCII: handed over
        f"{e}10> <{EX}near> <{EX}e1>.\n",  # no space before the dot
        f"   \n# only a comment\n\n",
        f'{e}11> <{COMMENT}> "Unicode text: Kraków, 東京" .\n',
        f"{e}12> <{TYPE}> <{EX}C1> .\n",
        f"{e}12> <{EX}partOf> <{EX}e1> .",  # no line end at the end of the file
    ])


@pytest.mark.parametrize("block", [64, 1 << 20])
def test_the_fast_lane_reads_as_pyoxigraph_does(tmp_path, monkeypatch, block):
    pytest.importorskip("pyarrow")
    from jaket.kg.sources import ntriples

    path = tmp_path / "odd.nt"
    path.write_text(_dump(30) + _odd_lines(), encoding="utf-8", newline="")
    monkeypatch.setattr(ntriples, "BLOCK", block)
    handed = []
    real = ntriples.read_lines

    def spy(*args, **kwargs):
        result = real(*args, **{**kwargs, "block": block})
        handed.append(result[1])
        return result

    monkeypatch.setattr(ntriples, "read_lines", spy)
    lane = rdf_stream._read(path, "nt", lane=True)
    plain = rdf_stream._read(path, "nt", lane=False)
    assert handed and 0 < handed[0] < 40  # the lane took most lines and handed the odd ones over
    found, ids, predicates, columns, read = lane
    found2, ids2, predicates2, columns2, read2 = plain
    assert read == read2
    assert {k: sorted(v) for k, v in found.labels.items()} == {k: sorted(v) for k, v in found2.labels.items()}
    assert found.types == found2.types and found.ignored_literals == found2.ignored_literals
    assert found.blank == found2.blank and found.subjects == found2.subjects and found.predicates == found2.predicates

    def triples(ids, predicates, columns):
        e, p = list(ids), list(predicates)
        return sorted((e[h], p[r], e[t]) for h, r, t in zip(*columns))

    assert triples(ids, predicates, columns) == triples(ids2, predicates2, columns2)
    assert set(ids) == set(ids2)


def test_a_block_that_is_not_utf8_is_read_again_for_the_message(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "latin1.nt"
    path.write_bytes(_dump(5).encode("utf-8") + f'<{EX}x> <{LABEL}> "caf\xe9" .\n'.encode("latin-1"))
    with pytest.raises(RDFImportError, match=rf"^{path}:\d+: malformed nt"):
        load_rdf_stream(path, "nt")
