"""``jaket kg build synthetic``: power-law KGs for scale tests."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaket.cli import main
from jaket.kg.io import load_kg
from jaket.kg.sources.synthetic import build_synthetic
from jaket.kg.toy import synthetic_kg


def test_build_synthetic_sizes_and_skew():
    kg, report = build_synthetic(2000, 20_000, num_relations=7, num_categories=4, seed=3)
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == (2000, 7, 20_000)
    assert report["categories"] == 4 and kg.num_categories == 4
    assert not (kg.triples[:, 0] == kg.triples[:, 2]).any()
    degree = kg.degree()
    assert degree.max() > 5 * degree.mean()  # power law: hubs far above the mean
    assert report["degree"]["max"] == int(degree.max())
    again, _ = build_synthetic(2000, 20_000, num_relations=7, num_categories=4, seed=3)
    assert again == kg
    assert synthetic_kg(2000, 20_000, num_relations=7, num_categories=4, seed=3) == kg


def test_invalid_sizes():
    with pytest.raises(ValueError, match="at least 2 entities"):
        build_synthetic(1, 10)


def test_build_synthetic_command(tmp_path, capsys):
    out = tmp_path / "synthetic"
    assert main(["kg", "build", "synthetic", "--entities", "500", "--triples", "3000", "--relations", "5",
                 "--seed", "1", "--out", str(out)]) == 0
    assert "500 entities" in capsys.readouterr().out
    kg = load_kg(out)
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == (500, 5, 3000)
    report = json.loads((out / "build-report.json").read_text())
    assert report["seed"] == 1 and report["triples"] == 3000
    assert np.array_equal(kg.triples, build_synthetic(500, 3000, num_relations=5, seed=1)[0].triples)


def test_command_rejects_bad_sizes(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["kg", "build", "synthetic", "--entities", "0", "--triples", "5", "--out", str(tmp_path)])
    assert "must be a positive integer" in capsys.readouterr().err
