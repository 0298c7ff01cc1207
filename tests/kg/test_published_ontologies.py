"""Ontologies as they are published (issue 65, item 1): every form reads, leniently and with an
account, never over the network; a file given to the wrong command says what it is; the same
ontology in three formats gives the same KG, or differs only as docs/data.md says."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from jaket.cli import main
from jaket.kg.sources.formats import sniff, wrong_command
from jaket.kg.sources.ontologies import load_obo, load_owl
from jaket.kg.sources.ontology import SUBCLASS, obo_id

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ontologies"
READER = {"obo": "obo", "obographs": "obo", "owl-functional": "owl", "owl-xml": "owl", "rdf-xml": "owl"}


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to reach the network fails loudly (and is recorded)."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access attempted during an import")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def _ontology_files(shared_data: Path) -> list[Path]:
    return sorted(p for p in (shared_data / "ontologies").rglob("*") if p.is_file() and p.name != "LICENSE")


def test_every_published_file_imports_offline_through_its_command(shared_data, tmp_path, no_network, capsys):
    files = _ontology_files(shared_data)
    assert len(files) >= 8
    for k, path in enumerate(files):
        kind = sniff(path)
        assert kind in READER, (path, kind)
        out = tmp_path / f"kg{k}"
        assert main(["kg", "import", READER[kind], str(path), "--out", str(out)]) == 0, path
        printed = capsys.readouterr()
        assert "Traceback" not in printed.err + printed.out
        report = json.loads((out / "build-report.json").read_text(encoding="utf-8"))
        assert report["entities"] > 0 and "account" in report and "imports" in report
        for entry in report["account"].values():  # every kind counted has its examples (where there are any)
            assert entry["count"] >= len(entry["examples"])
    assert no_network == []


def test_imports_are_listed_not_fetched_and_read_from_local_files(shared_data, tmp_path, no_network, capsys):
    edit = shared_data / "ontologies" / "pato" / "src" / "ontology" / "pato-edit.obo"
    kg, report = load_obo(edit)
    assert report["imports"]["not_followed"] == ["http://purl.obolibrary.org/obo/pato/components/pato_ext.owl",
                                                 "http://purl.obolibrary.org/obo/pato/imports/merged_import.owl"]
    assert report["imports"]["read_from_local_files"] == {}
    merged, merged_report = load_obo(edit, imports=shared_data / "ontologies" / "pato")
    local = merged_report["imports"]["read_from_local_files"]
    assert list(local) == ["http://purl.obolibrary.org/obo/pato/components/pato_ext.owl"]
    assert local[list(local)[0]].endswith("components/pato_ext.owl")
    assert merged_report["imports"]["not_followed"] == [
        "http://purl.obolibrary.org/obo/pato/imports/merged_import.owl"]
    assert set(kg.entity_ids) <= set(merged.entity_ids)
    assert main(["kg", "import", "obo", str(edit), "--out", str(tmp_path / "kg")]) == 0
    assert "2 import(s) not followed (never fetched" in capsys.readouterr().out
    assert no_network == []
    with pytest.raises(ValueError, match="--imports .*: no such folder"):
        load_obo(edit, imports=tmp_path / "absent")


def _as_sets(kg):
    ids = list(kg.entity_ids)
    rows = {e: (name, description) for e, name, description in zip(ids, kg.entity_names, kg.entity_descriptions)}
    edges = {(ids[h], kg.relation_ids[r], ids[t]) for h, r, t in kg.triples.tolist()}
    return rows, edges, dict(zip(kg.relation_ids, kg.relation_names))


def test_pato_in_three_formats_gives_one_kg_but_for_the_documented_differences(shared_data):
    pato = shared_data / "ontologies" / "pato"
    (obo, obo_report), (owl, owl_report), (graphs, _) = (load_obo(pato / "pato.obo"), load_owl(pato / "pato-base.owl"),
                                                         load_obo(pato / "pato-base.json"))
    obo_rows, obo_edges, obo_relations = _as_sets(obo)
    owl_rows, owl_edges, owl_relations = _as_sets(owl)
    json_rows, json_edges, json_relations = _as_sets(graphs)
    # the same entities (obsolete terms dropped, external classes defined elsewhere) with the same names
    assert set(obo_rows) == set(owl_rows) == set(json_rows) and len(obo_rows) == 1887
    assert {e: r[0] for e, r in obo_rows.items()} == {e: r[0] for e, r in owl_rows.items()}
    assert obo_report["account"]["obsolete_terms_dropped"]["count"] == 898
    # the OWL forms also keep a deprecated placeholder class for each merged id (OBO: an alt_id line)
    assert owl_report["account"]["obsolete_terms_dropped"]["count"] == 982
    elsewhere = owl_report["account"]["terms_defined_elsewhere"]
    assert elsewhere["count"] == 8 and all(e.split(": ")[-1].split(":")[0] in ("UBERON", "GO", "BFO", "CL")
                                           for e in elsewhere["examples"])
    # OWL and OBO Graphs JSON: identical KGs
    assert owl_rows == json_rows and owl_edges == json_edges and owl_relations == json_relations
    # pato.obo omits the logical definitions (no intersection_of line): its edges are the others'
    # less the genus and differentia edges of the 318 logically defined classes
    assert "intersection_of:" not in (pato / "pato.obo").read_text(encoding="utf-8")
    axioms = json.loads((pato / "pato-base.json").read_text(encoding="utf-8"))["graphs"][0]["logicalDefinitionAxioms"]
    from_definitions = {(obo_id(a["definedClassId"]), SUBCLASS, obo_id(g)) for a in axioms for g in a.get("genusIds", [])}
    from_definitions |= {(obo_id(a["definedClassId"]), obo_id(r["propertyId"]), obo_id(r["fillerId"]))
                         for a in axioms for r in a.get("restrictions", [])}
    assert obo_edges <= json_edges and json_edges - obo_edges <= from_definitions
    # relation names: the OWL forms name none of the RO relations they use (they are imported); the
    # Relation Ontology's own names, which the OBO file's typedefs also give, fill them in
    assert obo_relations == json_relations and json_relations["RO:0002604"] == "is opposite of"
    named = owl_report["account"]["relations_named_from_the_relation_ontology"]
    assert named["count"] == 9 and "BFO:0000051: has part" in named["examples"]
    assert "relations_named_from_the_relation_ontology" not in obo_report["account"]
    assert obo_rows == json_rows  # and so the generated descriptions agree too


LENIENT_OBO = r"""format-version: 1.4
import: http://example.org/never/fetched.owl
ontology: lenient

[Term]
id: LEN:0000001
name: organism
def: "A living thing." [http://neurolex.org/wiki/Category\:Organism]
synonym: "living being" EXACT systematic_synonym []
xref: http://neurolex.org/wiki/Category\:Embryonic_organism

[Term]
id: LEN:0000002
name: embryo
def: "An organism in its first stage.
is_a: LEN:0000001 ! organism
relationship: part_of GO:0005737 ! defined in another file
relationship: develops_from LEN:0000001

[Term]
name: a stanza without an id

[Instance]
id: fido
name: Fido
instance_of: LEN:0000001

[Typedef]
id: part_of
name: part of
xref: BFO:0000050
"""


def test_obo_is_read_leniently_with_file_and_line_for_every_repair(tmp_path, capsys):
    path = tmp_path / "lenient.obo"
    path.write_text(LENIENT_OBO, encoding="utf-8")
    kg, report = load_obo(path)
    rows = {e: n for e, n in zip(kg.entity_ids, kg.entity_names)}
    assert rows == {"LEN:0000001": "organism", "LEN:0000002": "embryo", "fido": "Fido"}
    account = report["account"]
    assert account["clauses_not_readable_dropped"]["examples"] == [
        f"{path}:15: def: the quoted string is not closed"]
    assert account["stanzas_without_an_id_dropped"]["examples"] == [f"{path}:20: [Term]"]
    assert account["relations_without_a_typedef_kept"]["examples"] == [f"{path}:18: develops_from"]
    assert account["edges_to_terms_defined_elsewhere_dropped"]["examples"] == [f"{path}:17: GO:0005737"]
    assert account["relations_named_by_their_xref"]["examples"] == [f"{path}:28: part_of -> BFO:0000050"]
    assert report["imports"]["not_followed"] == ["http://example.org/never/fetched.owl"]
    embryo = list(kg.entity_ids).index("LEN:0000002")
    assert kg.entity_descriptions[embryo].startswith("embryo: a organism")  # generated: its def was unreadable
    assert main(["kg", "import", "obo", str(path), "--out", str(tmp_path / "kg")]) == 0
    printed = capsys.readouterr().out
    assert "account: " in printed and "1 clauses not readable dropped" in printed


def test_obo_graphs_json_of_odd_shapes_is_accounted_for_and_non_json_refused(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"graphs": [{"nodes": [
        {"id": "http://purl.obolibrary.org/obo/X_1", "lbl": "one", "type": "CLASS",
         "meta": {"definition": {"val": "The first."}, "synonyms": [{"val": "uno"}, "not an object"]}},
        {"id": "http://purl.obolibrary.org/obo/X_2", "lbl": "two", "type": "CLASS", "meta": {"deprecated": True}},
        {"lbl": "no id"}, "a string", {"id": "http://purl.obolibrary.org/obo/X_3", "type": "CLASS", "lbl": "three"}],
        "edges": [{"sub": "http://purl.obolibrary.org/obo/X_3", "pred": "is_a",
                   "obj": "http://purl.obolibrary.org/obo/X_1"}, {"sub": "x"}],
        "logicalDefinitionAxioms": [{"definedClassId": None}]}]}), encoding="utf-8")
    kg, report = load_obo(path)
    assert list(kg.entity_ids) == ["X:1", "X:3"] and kg.num_triples == 1
    account = report["account"]
    assert account["nodes_without_an_id_dropped"]["examples"] == ["graphs[0].nodes[2]"]
    assert account["nodes_of_an_unexpected_shape_dropped"]["examples"] == ["graphs[0].nodes[3]"]
    assert account["edges_of_an_unexpected_shape_dropped"]["examples"] == ["graphs[0].edges[1]"]
    assert account["logical_definitions_of_an_unexpected_shape_dropped"]["count"] == 1
    assert kg.entity_descriptions[0] == "one: The first."
    (tmp_path / "broken.json").write_text('{"graphs": [', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json:1: not JSON"):
        load_obo(tmp_path / "broken.json")
    (tmp_path / "other.json").write_text('{"nodes": []}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"other\.json: this is JSON that is neither OBO Graphs nor JSON-LD"):
        load_obo(tmp_path / "other.json")


SHOP_OFN = """Prefix(:=<http://example.org/shop#>)
Prefix(rdfs:=<http://www.w3.org/2000/01/rdf-schema#>)
Ontology(<http://example.org/shop>
Declaration(Class(:Vehicle))
Declaration(Class(:Bicycle))
Declaration(Class(:Wheel))
Declaration(ObjectProperty(:hasPart))
AnnotationAssertion(rdfs:label :Vehicle "vehicle")
AnnotationAssertion(rdfs:label :Bicycle "bicycle")
AnnotationAssertion(rdfs:label :Wheel "wheel")
AnnotationAssertion(rdfs:label :hasPart "has part")
SubClassOf(:Bicycle :Vehicle)
SubClassOf(:Bicycle ObjectSomeValuesFrom(:hasPart :Wheel))
)
"""

SHOP_OWX = """<?xml version="1.0"?>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="http://example.org/shop">
  <Declaration><Class IRI="http://example.org/shop#Vehicle"/></Declaration>
  <Declaration><Class IRI="http://example.org/shop#Bicycle"/></Declaration>
  <Declaration><Class IRI="http://example.org/shop#Wheel"/></Declaration>
  <Declaration><ObjectProperty IRI="http://example.org/shop#hasPart"/></Declaration>
  <SubClassOf><Class IRI="http://example.org/shop#Bicycle"/><Class IRI="http://example.org/shop#Vehicle"/></SubClassOf>
  <SubClassOf><Class IRI="http://example.org/shop#Bicycle"/>
    <ObjectSomeValuesFrom><ObjectProperty IRI="http://example.org/shop#hasPart"/>
      <Class IRI="http://example.org/shop#Wheel"/></ObjectSomeValuesFrom></SubClassOf>
  <AnnotationAssertion><AnnotationProperty IRI="http://www.w3.org/2000/01/rdf-schema#label"/><IRI>http://example.org/shop#Vehicle</IRI>
    <Literal>vehicle</Literal></AnnotationAssertion>
  <AnnotationAssertion><AnnotationProperty IRI="http://www.w3.org/2000/01/rdf-schema#label"/><IRI>http://example.org/shop#Bicycle</IRI>
    <Literal>bicycle</Literal></AnnotationAssertion>
  <AnnotationAssertion><AnnotationProperty IRI="http://www.w3.org/2000/01/rdf-schema#label"/><IRI>http://example.org/shop#Wheel</IRI>
    <Literal>wheel</Literal></AnnotationAssertion>
  <AnnotationAssertion><AnnotationProperty IRI="http://www.w3.org/2000/01/rdf-schema#label"/><IRI>http://example.org/shop#hasPart</IRI>
    <Literal>has part</Literal></AnnotationAssertion>
</Ontology>
"""


@pytest.mark.parametrize("name, text, kind", [("shop.owl", SHOP_OFN, "owl-functional"),
                                              ("shop.owx", SHOP_OWX, "owl-xml")])
def test_owl_functional_syntax_and_owl_xml_read_as_rdf_xml_would(tmp_path, name, text, kind):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert sniff(path) == kind
    kg, report = load_owl(path)
    assert report["syntax"] == kind
    rows, edges, relations = _as_sets(kg)
    shop = "http://example.org/shop#"
    assert {e: r[0] for e, r in rows.items()} == {shop + "Vehicle": "vehicle", shop + "Bicycle": "bicycle",
                                                  shop + "Wheel": "wheel"}
    assert edges == {(shop + "Bicycle", SUBCLASS, shop + "Vehicle"), (shop + "Bicycle", shop + "hasPart", shop + "Wheel")}
    assert relations[shop + "hasPart"] == "has part"


def test_a_broken_functional_syntax_file_is_one_line_with_its_line(tmp_path, capsys):
    path = tmp_path / "broken.owl"
    path.write_text("Prefix(:=<http://x.org/o#>)\nOntology(<http://x.org/o>\nSubClassOf(:A\n", encoding="utf-8")
    assert main(["kg", "import", "owl", str(path), "--out", str(tmp_path / "kg")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}") and "OWL functional syntax" in err[0]
    assert "Traceback" not in err[0] and "--debug" not in err[0]


@pytest.mark.parametrize("fixture, command, said", [
    ("mini.obo", "owl", "this is an OBO flat file; read it with: jaket kg import obo"),
    ("mini.obo", "rdf", "this is an OBO flat file; read it with: jaket kg import obo"),
    ("upper.owl", "obo", "this is RDF/XML; read it with: jaket kg import owl"),
])
def test_a_file_given_to_the_wrong_command_says_what_it_is(tmp_path, capsys, fixture, command, said):
    path = FIXTURES / fixture
    assert said in wrong_command(path, command)
    assert main(["kg", "import", command, str(path), "--out", str(tmp_path / "kg")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: {said} {path} --out DIR"]


def test_an_ontology_file_given_as_a_kg_folder_names_the_import_command(capsys):
    """Issue 69, item 2: a KG path that is a file says what the file looks like and which import
    command makes a KG folder of it (from `kg validate`, and from load_kg for every other command)."""
    from jaket.kg.errors import KGFormatError
    from jaket.kg.io import load_kg

    path = FIXTURES / "upper.owl"
    assert main(["kg", "validate", str(path)]) == 1
    said = f"{path}: a file (RDF/XML), not a KG directory: `jaket kg import owl {path} --out DIR` makes a KG folder of it"
    assert said in capsys.readouterr().out
    with pytest.raises(KGFormatError, match="jaket kg import obo"):
        load_kg(FIXTURES / "mini.obo")
    assert main(["pretrain", "--kg", str(path), "--out", "never"]) == 1  # a data error (docs/cli.md "Exit status"), before any model loads
    assert capsys.readouterr().err.strip() == f"error: kg {path}: a file (RDF/XML), not a KG directory: " \
        f"`jaket kg import owl {path} --out DIR` makes a KG folder of it"
