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


@pytest.mark.parametrize("workers", [1, 2])
def test_the_stream_gives_the_rdflib_kg(tmp_path, monkeypatch, workers):
    path = tmp_path / "dump.nt"
    path.write_text(_dump(), encoding="utf-8")
    monkeypatch.setattr(rdf_stream, "PARALLEL_ABOVE", 0 if workers == 2 else 1 << 40)
    streamed, report = load_rdf_stream(path, "nt")
    expected, expected_report = load_rdf(path)
    _same(streamed, expected)
    assert report["reader"] == "pyoxigraph (streamed)"
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
    assert import_rdf(path, reader="stream")[1]["reader"] == "pyoxigraph (streamed)"
    monkeypatch.setattr(rdf_stream, "STREAM_ABOVE", 0)
    assert import_rdf(path)[1]["reader"] == "pyoxigraph (streamed)"
    assert "reader" not in import_rdf(path, reader="rdflib")[1]
    xml = ROOT / "tests" / "fixtures" / "ontologies" / "upper.owl"
    with pytest.raises(RDFImportError, match="xml is not read as a stream"):
        import_rdf(xml, "xml", reader="stream")
