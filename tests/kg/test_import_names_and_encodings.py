"""Ontology labels written as identifiers (``material_entity``) become the names a text holds, so
``jaket link`` finds them; an RDF file saved as UTF-16 is named as such (issue 53, items 5 and 6)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ontologies"
UPO = "http://example.org/upper/UPO_"


def test_spoken_names_keep_the_written_form_as_an_alias():
    from jaket.kg.sources.owl import spoken

    assert spoken("material_entity", ["physical_object", "thing"]) == (
        "material entity", ["material_entity", "physical object", "physical_object", "thing"])
    assert spoken("process", ["a_b"]) == ("process", ["a b", "a_b"])
    assert spoken("double  space", []) == ("double  space", [])  # no underscore: left as written
    assert spoken("_", []) == ("_", [])  # nothing but underscores: no empty name


def test_owl_labels_with_underscores_give_names_with_spaces():
    from jaket.kg.sources.ontologies import load_owl

    kg, report = load_owl(FIXTURES / "upper.owl")
    by_id = dict(zip(kg.entity_ids, zip(kg.entity_names, kg.entity_aliases, kg.entity_descriptions)))
    assert by_id[UPO + "0000040"][:2] == ("material entity", ["material_entity"])
    assert by_id[UPO + "0000005"][:2] == ("dependent continuant", ["dependent_continuant"])
    assert by_id[UPO + "0000015"][:2] == ("process", [])  # a plain label is as it was
    assert by_id[UPO + "0000024"][2].startswith("fiat object part: ")  # the description names it as spoken
    assert sorted(kg.relation_names) == ["part of", "subclass of"]  # a property labelled part_of
    assert report["entities_without_label"] == 0


def test_obo_names_and_synonyms_with_underscores_are_spoken():
    from jaket.kg.sources.ontologies import load_obo

    kg, _ = load_obo(FIXTURES / "upper.obo")
    by_id = dict(zip(kg.entity_ids, zip(kg.entity_names, kg.entity_aliases)))
    assert by_id["UPO:0000040"] == ("material entity", ["material_entity", "physical object", "physical_object"])
    assert by_id["UPO:0000004"] == ("independent continuant", ["independent_continuant"])
    # a generated description reads the spoken names of the tails and of the relation (typedef part_of)
    assert kg.entity_descriptions[kg.entity_ids.index("UPO:0000024")] == \
        "fiat object part: a material entity; part of material entity"


def _link_texts_flag() -> str:
    """``jaket link``'s flag for the texts file (``--texts``; ``--text`` before it was renamed)."""
    from jaket.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = {o for action in commands.choices["link"]._actions for o in action.option_strings}
    return "--texts" if "--texts" in options else "--text"


def test_jaket_link_finds_an_underscored_class_in_text(tmp_path, capsys):
    """End to end: ``jaket kg import owl`` on the upper-ontology fixture, then ``jaket link`` on text
    saying "material entity": the class labelled ``material_entity`` is linked (before, only
    *entity* was), and the written form still links as an alias."""
    from jaket.cli import main

    kg = tmp_path / "kg"
    assert main(["kg", "import", "owl", str(FIXTURES / "upper.owl"), "--out", str(kg)]) == 0
    texts = tmp_path / "texts.txt"
    texts.write_text("Each material entity is an independent continuant.\n"
                     "A fiat object part is part of a material_entity.\n", encoding="utf-8")
    out = tmp_path / "linked.jsonl"
    assert main(["link", "--kg", str(kg), _link_texts_flag(), str(texts), "--out", str(out)]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    linked = [[(row["text"][m["start"]:m["end"]], m["entity"]) for m in row["mentions"]] for row in rows]
    assert linked == [[("material entity", UPO + "0000040"), ("independent continuant", UPO + "0000004")],
                      [("fiat object part", UPO + "0000024"), ("material_entity", UPO + "0000040")]]


@pytest.mark.parametrize("suffix, fmt", [(".nt", "nt"), (".ttl", "turtle"), (".nt.gz", "nt")])
def test_an_rdf_file_in_utf16_is_named_once(tmp_path, suffix, fmt):
    import gzip

    from jaket.kg.sources.rdf import RDFImportError, parse_rdf

    text = '<http://e.org/a> <http://e.org/p> <http://e.org/b> .\n<http://e.org/b> <http://e.org/p> "x" .\n'
    data = text.encode("utf-16")  # with its byte order mark, as Windows' "Unicode" saves it
    path = tmp_path / f"graph{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    with pytest.raises(RDFImportError) as error:
        parse_rdf(path, fmt if suffix != ".ttl" else None)
    assert str(error.value) == f"{path}:1: UTF-16 text (it starts with the byte order mark FF FE); save it as UTF-8"
    utf8 = tmp_path / "graph-utf8.nt"
    utf8.write_text(text, encoding="utf-8")
    assert len(parse_rdf(utf8)) == 2  # the same triples in UTF-8 are read


def test_rdf_xml_may_declare_utf16_and_a_broken_gzip_is_named(tmp_path):
    """XML may be UTF-16 (it says so itself): such a file is read, and a malformed one gets its XML
    error, not the UTF-16 hint; a ``.gz`` that is no
    gzip stream is one line naming the file (it raised a bare gzip error)."""
    from jaket.kg.sources.rdf import RDFImportError, parse_rdf

    xml = ('<?xml version="1.0" encoding="UTF-16"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
           'xmlns:e="http://e.org/"><rdf:Description rdf:about="http://e.org/a"><e:p rdf:resource="http://e.org/b"/>'
           '</rdf:Description></rdf:RDF>\n')
    path = tmp_path / "graph.rdf"
    path.write_bytes(xml.encode("utf-16"))
    assert len(parse_rdf(path)) == 1
    path.write_bytes(xml.replace("</rdf:RDF>", "").encode("utf-16"))  # malformed: the XML error, not the hint
    with pytest.raises(RDFImportError, match=f"^{path}:[0-9]+: malformed xml"):
        parse_rdf(path)
    broken = tmp_path / "graph.nt.gz"
    broken.write_bytes(b"not gzip at all\n")
    with pytest.raises(RDFImportError) as error:
        parse_rdf(broken)
    assert str(error.value).startswith(f"{broken}: malformed nt (Not a gzipped file")
