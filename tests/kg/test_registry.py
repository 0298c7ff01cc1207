"""The registry of KG sources: one name -> one bundle (kg, corpus, splits, report), for every caller."""

from __future__ import annotations

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import save_kg
from jaket.kg.readers import read_split
from jaket.kg.sources.pykeen_datasets import read_splits
from jaket.kg.sources.registry import (SourceBundle, UnknownSourceError, build_source, get_source,
                                       register_source, source_names)
from jaket.kg.toy import toy_kg

from .test_sources_wn18rr import _folder


def test_every_source_is_registered_and_a_wrong_name_or_option_is_named():
    assert source_names() == ["toy", "wordnet", "synthetic", "wn18rr", "rdf", "owl", "obo", "triples", "pykeen", "wikidata5m",
                              "dir"]
    assert get_source("synthetic").options() == ["entities", "triples", "relations", "categories",
                                                 "exponent", "seed"]
    with pytest.raises(UnknownSourceError, match="unknown KG source 'wn18'; choose one of toy, wordnet"):
        build_source("wn18")
    with pytest.raises(TypeError, match="max_entity"):
        build_source("wordnet", max_entity=3)
    with pytest.raises(ValueError, match="registered already"):
        register_source("toy", "again")(lambda: None)


def test_toy_and_synthetic_bundles():
    toy = build_source("toy")
    kg, corpus = toy_kg()
    assert isinstance(toy, SourceBundle) and toy.kg == kg and toy.corpus.texts == corpus.texts
    assert toy.splits == {} and toy.report == {"source": "toy"}
    synthetic = build_source("synthetic", entities=50, triples=120, relations=3, seed=4)
    assert (synthetic.kg.num_entities, synthetic.kg.num_relations, synthetic.kg.num_triples) == (50, 3, 120)
    assert synthetic.corpus is None and synthetic.report["seed"] == 4


def test_a_kg_directory_brings_its_corpus_and_splits(tmp_path):
    kg, corpus = toy_kg()
    save_kg(kg, tmp_path, corpus=corpus)
    h, r, t = kg.triples[2]
    (tmp_path / "test.txt").write_text(f"{kg.entity_ids[h]}\t{kg.relation_ids[r]}\t{kg.entity_ids[t]}\n"
                                       "ghost\tr\tghost\n", encoding="utf-8")
    bundle = build_source("dir", path=tmp_path)
    assert bundle.kg == kg and bundle.corpus.texts == corpus.texts
    assert list(bundle.splits) == ["test"] and np.array_equal(bundle.splits["test"], kg.triples[[2]])
    assert bundle.report == {"source": "dir", "path": str(tmp_path), "split_triples_skipped": {"test": 1}}
    assert build_source("dir", path=tmp_path, with_splits=False).splits == {}


def test_wn18rr_splits_are_indices_of_its_kg_and_the_command_writes_them(tmp_path, capsys):
    folder = _folder(tmp_path, "02084071\t_hypernym\t02083346\n")
    bundle = build_source("wn18rr", folder=folder)
    valid = bundle.splits["valid"]
    assert valid.dtype == np.int64 and valid.tolist() == [[bundle.kg.entity_index("02084071"), 0,
                                                           bundle.kg.entity_index("01317541")]]
    assert bundle.report["splits"] == ["valid.txt"] and "split_triples_skipped" not in bundle.report
    out = tmp_path / "out"
    assert main(["kg", "import", "wn18rr", str(folder), "--out", str(out)]) == 0
    assert (out / "valid.txt").read_text() == (folder / "valid.txt").read_text()
    assert np.array_equal(read_split(out / "valid.txt", bundle.kg)[0], valid)


def test_pykeen_splits_match_the_bundled_files():
    pytest.importorskip("pykeen")
    bundle = build_source("pykeen", dataset="nations")
    rows = read_splits("nations")
    for name in ("valid", "test"):
        assert len(bundle.splits[name]) == len(rows[name])
        h, r, t = bundle.splits[name][0]
        assert (bundle.kg.entity_ids[h], bundle.kg.relation_ids[r], bundle.kg.entity_ids[t]) == rows[name][0]
