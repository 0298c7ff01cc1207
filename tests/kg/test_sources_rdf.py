"""RDF import through rdflib: labels, descriptions, types, relations; errors name the file."""

from __future__ import annotations

import json

import pytest

from jaket.cli import main
from jaket.kg.io import load_kg, save_kg, validate_kg_dir
from jaket.kg.sources.rdf import RDFImportError, load_rdf, local_name

TURTLE = """\
@prefix ex: <http://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix schema: <http://schema.org/> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .

ex:Paris a ex:City ;
    rdfs:label "Paris"@en, "Paname"@fr ;
    rdfs:comment "The capital and largest city of France." ;
    ex:locatedIn ex:France ;
    ex:population 2100000 .
ex:France a ex:Country ;
    rdfs:label "France" ;
    skos:altLabel "French Republic" ;
    schema:description "France is a country in Western Europe." .
ex:Lyon a ex:City ;
    ex:locatedIn ex:France ;
    ex:twinnedWith ex:Birmingham ;
    ex:mayor "Grégory Doucet" .
ex:Birmingham ex:near [ ex:name "somewhere" ] .
ex:locatedIn rdfs:label "located in" ; rdfs:comment "The head lies inside the tail." .
ex:City rdfs:label "city" .
"""


@pytest.fixture()
def turtle_file(tmp_path):
    path = tmp_path / "cities.ttl"
    path.write_text(TURTLE, encoding="utf-8")
    return path


def test_turtle_mapping(turtle_file):
    kg, report = load_rdf(turtle_file)
    ex = "http://example.org/"
    assert list(kg.entity_ids) == [ex + "Birmingham", ex + "France", ex + "Lyon", ex + "Paris"]
    paris, france, lyon, birmingham = (kg.entity_index(ex + n) for n in ("Paris", "France", "Lyon", "Birmingham"))
    # names: rdfs:label (English preferred), else the local name; other labels become aliases
    assert kg.entity_names[paris] == "Paris" and list(kg.entity_aliases[paris]) == ["Paname"]
    assert kg.entity_names[lyon] == "Lyon" and kg.entity_names[birmingham] == "Birmingham"
    assert list(kg.entity_aliases[france]) == ["French Republic"]
    # descriptions: comment or schema:description, always containing the name
    assert kg.entity_descriptions[paris] == "Paris: The capital and largest city of France."
    assert kg.entity_descriptions[france] == "France is a country in Western Europe."
    assert kg.entity_descriptions[lyon] == "Lyon"
    # categories: rdf:type objects (label when the class has one)
    assert kg.category_names == ["Country", "city"]
    assert kg.category_names[kg.entity_category[paris]] == "city"
    assert kg.category_names[kg.entity_category[france]] == "Country"
    assert kg.entity_category[birmingham] == -1
    # relations: predicate IRIs; name = rdfs:label or local name
    assert list(kg.relation_ids) == [ex + "locatedIn", ex + "twinnedWith"]
    assert list(kg.relation_names) == ["located in", "twinnedWith"]
    assert kg.relation_descriptions[0] == "The head lies inside the tail."
    assert kg.relation_descriptions[1] == "twinned with"
    triples = {(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in kg.triples.tolist()}
    assert triples == {(ex + "Paris", ex + "locatedIn", ex + "France"),
                       (ex + "Lyon", ex + "locatedIn", ex + "France"),
                       (ex + "Lyon", ex + "twinnedWith", ex + "Birmingham")}
    # what is not used is counted
    assert report["literal_triples_ignored"] == 2
    assert set(report["literal_triples_ignored_by_predicate"]) == {ex + "population", ex + "mayor"}
    assert report["blank_node_triples_ignored"] == 2
    assert (report["entities"], report["relations"], report["triples"], report["categories"]) == (4, 2, 3, 2)


def test_ntriples_and_round_trip(tmp_path):
    path = tmp_path / "g.nt"
    path.write_text('<http://x.org/a> <http://x.org/knows> <http://x.org/b> .\n'
                    '<http://x.org/b> <http://www.w3.org/2000/01/rdf-schema#label> "Bob" .\n'
                    '<http://x.org/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x.org/Person> .\n')
    kg, _ = load_rdf(path)
    assert list(kg.entity_names) == ["a", "Bob"] and kg.category_names == ["Person"]
    save_kg(kg, tmp_path / "kg")
    assert validate_kg_dir(tmp_path / "kg") == []
    assert load_kg(tmp_path / "kg") == kg


def test_malformed_turtle_names_file_and_line(tmp_path):
    path = tmp_path / "broken.ttl"
    path.write_text('@prefix ex: <http://example.org/> .\nex:a ex:b ex:c .\nex:d ex:e "unterminated .\n')
    with pytest.raises(RDFImportError, match=rf"^{path}:3: malformed turtle"):
        load_rdf(path)


def test_malformed_ntriples_names_the_line(tmp_path):
    path = tmp_path / "broken.nt"
    path.write_text("<http://a> <http://b> <http://c> .\n\n<http://a> <http://b> oops .\n")
    with pytest.raises(RDFImportError, match=rf"^{path}:3: malformed nt"):
        load_rdf(path)


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(RDFImportError, match="no such file"):
        load_rdf(tmp_path / "absent.ttl")
    odd = tmp_path / "graph.data"
    odd.write_text("")
    with pytest.raises(RDFImportError, match="cannot tell the RDF format"):
        load_rdf(odd)


def test_import_command(turtle_file, tmp_path, capsys):
    out = tmp_path / "kg"
    assert main(["kg", "import", "rdf", str(turtle_file), "--out", str(out)]) == 0
    assert "4 entities" in capsys.readouterr().out
    assert json.loads((out / "build-report.json").read_text())["literal_triples_ignored"] == 2
    assert load_kg(out).num_triples == 3


def test_import_command_reports_parse_errors(tmp_path, capsys):
    path = tmp_path / "broken.ttl"
    path.write_text("@prefix ex: <http://example.org/> .\nex:a ex:b .\n")
    assert main(["kg", "import", "rdf", str(path), "--out", str(tmp_path / "kg")]) == 1
    err = capsys.readouterr().err
    assert f"error: {path}:" in err and "Traceback" not in err


def test_local_name():
    assert local_name("http://example.org/ns#Thing") == "Thing"
    assert local_name("http://example.org/people/Ada_Lovelace") == "Ada_Lovelace"
    assert local_name("http://example.org/a%20b/") == "a b"
    assert local_name("urn:isbn:0451450523") == "0451450523"


def test_the_one_label_fast_path_answers_as_name_of_and_description_of():
    """The import's fast path for an entity with one label and at most one description (issue 65,
    throughput) gives exactly what the general rule gives, on every small mix of annotations."""
    import itertools

    from jaket.kg.sources.rdf import ALT_LABELS, DESCRIPTIONS, LABELS, _one_label, _Statements

    predicates = LABELS[:2] + ALT_LABELS + DESCRIPTIONS[:2]
    texts = ["a", " a ", "", "b"]
    taken = 0
    for n in range(4):
        for entries in itertools.product(itertools.product(predicates, texts, (0, 1)), repeat=n):
            statements = _Statements(labels={"e": list(entries)} if entries else {})
            fast = _one_label(list(entries) or None)
            if fast is None:
                continue
            taken += 1
            assert (statements.name_of("e"), statements.description_of("e")) == ((fast[0], [], True), fast[1])
    assert taken > 100
