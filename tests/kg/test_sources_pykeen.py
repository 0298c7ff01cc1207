"""PyKEEN's bundled UMLS / Nations / Kinships, read offline from the installed package."""

from __future__ import annotations

import socket

import pytest

from jaket.cli import main
from jaket.kg.io import load_kg, validate_kg_dir
from jaket.kg.sources.pykeen_datasets import PyKEENDataError, load_pykeen_dataset, read_splits, readable

pytest.importorskip("pykeen", reason="pykeen holds the dataset files")


@pytest.fixture()
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_umls_offline(no_network):
    kg, report = load_pykeen_dataset("umls")
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == (135, 46, 5216)
    assert report["split_triples"] == {"train": 5216, "valid": 652, "test": 661}
    i = kg.entity_index("cell_or_molecular_dysfunction")
    assert kg.entity_names[i] == "cell or molecular dysfunction"
    assert kg.entity_descriptions[i].startswith("cell or molecular dysfunction: ")
    assert kg.relation_names[kg.relation_index("location_of")] == "location of"
    assert kg.num_categories == 0


@pytest.mark.parametrize("name, sizes", [("nations", (14, 55, 1592)), ("kinships", (104, 25, 8544))])
def test_other_datasets(no_network, name, sizes):
    kg, _ = load_pykeen_dataset(name)
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == sizes


def test_import_command_writes_the_splits(no_network, tmp_path, capsys):
    from jaket.kg.readers import read_split

    out = tmp_path / "umls"
    assert main(["kg", "import", "pykeen", "umls", "--out", str(out)]) == 0
    assert "135 entities" in capsys.readouterr().out
    assert validate_kg_dir(out) == []
    kg = load_kg(out)
    for split, count in (("valid", 652), ("test", 661)):
        triples, skipped = read_split(out / f"{split}.txt", kg)
        assert (len(triples), skipped) == (count, 0)
    assert len(read_splits("umls")["train"]) == kg.num_triples


def test_readable_and_unknown_dataset():
    assert readable("cell_or_molecular_dysfunction") == "cell or molecular dysfunction"
    assert readable("person12") == "person 12"
    assert readable("militaryAlliance") == "military Alliance"
    with pytest.raises(PyKEENDataError, match="unknown PyKEEN dataset 'fb15k'"):
        load_pykeen_dataset("fb15k")


def test_triples_factory_round_trip_both_ways(no_network):
    """KnowledgeGraph <-> PyKEEN TriplesFactory: same labels, same triples, either direction."""
    from pykeen.datasets import UMLS
    from pykeen.triples import CoreTriplesFactory

    from jaket.kg.graph import KnowledgeGraph
    from jaket.kg.toy import toy_kg

    kg, _ = toy_kg()
    factory = kg.to_triples_factory()
    assert (factory.num_entities, factory.num_relations, factory.num_triples) == (
        kg.num_entities, kg.num_relations, kg.num_triples)
    labelled = {tuple(row) for row in factory.triples.tolist()}
    assert labelled == {(kg.entity_ids[h], kg.relation_ids[r], kg.entity_ids[t]) for h, r, t in kg.triples.tolist()}
    back = KnowledgeGraph.from_triples_factory(
        factory, descriptions=dict(zip(kg.entity_ids, kg.entity_descriptions)),
        categories={e: kg.category_names[c] for e, c in zip(kg.entity_ids, kg.entity_category) if c >= 0},
        relation_descriptions=dict(zip(kg.relation_ids, kg.relation_descriptions)))
    assert list(back.entity_ids) == list(kg.entity_ids) and (back.triples == kg.triples).all()
    assert list(back.entity_descriptions) == list(kg.entity_descriptions)
    assert list(back.category_names) == list(kg.category_names)
    assert (back.entity_category == kg.entity_category).all()
    assert back.fingerprint() == kg.fingerprint()
    # PyKEEN's own UMLS training factory: the same triples as the jaket importer reads
    training = UMLS().training
    umls = KnowledgeGraph.from_triples_factory(training)
    ours, _ = load_pykeen_dataset("umls")
    as_labels = lambda g: {(g.entity_ids[h], g.relation_ids[r], g.entity_ids[t])  # noqa: E731
                           for h, r, t in g.triples.tolist()}
    assert as_labels(umls) == as_labels(ours)
    i = umls.entity_index("cell_or_molecular_dysfunction")
    assert umls.entity_names[i] == umls.entity_descriptions[i] == "cell or molecular dysfunction"
    # a factory without labels: its ids become the entity ids
    core = CoreTriplesFactory(training.mapped_triples, training.num_entities, training.num_relations)
    plain = KnowledgeGraph.from_triples_factory(core)
    assert plain.entity_ids[0] == "0" and plain.num_triples == training.num_triples
