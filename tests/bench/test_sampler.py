"""`jaket bench sampler` runs end to end on a small synthetic KG (figures, not speed, are checked)."""

from __future__ import annotations

import json

import numpy as np

from jaket.bench.sampler import python_loop_sample
from jaket.cli import main as jaket_main
from jaket.kg.sampling import sample_neighbors
from jaket.kg.toy import synthetic_kg


def test_bench_sampler_cli(capsys, tmp_path):
    status = jaket_main(["bench", "sampler", "--json", "--entities", "3000", "--seeds", "64",
                         "--repeats", "2", "--loop-repeats", "1", "--load-entities", "500",
                         "--load-dir", str(tmp_path / "kg")])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["entities"] == 3000 and figures["triples"] == 30000
    assert figures["fanouts"] == "10x10" and figures["sampled_edges"] > 64
    assert figures["edges_per_second"] > 0 and figures["python_loop_edges_per_second"] > 0
    assert figures["load_entities"] == 500 and figures["load_triples"] == 2500
    assert 0 < figures["load_rss_after_import_mb"] <= figures["load_peak_rss_mb"]


def test_python_loop_baseline_samples_the_same_amount():
    kg = synthetic_kg(2000, 20000, seed=1)
    seeds = np.arange(0, 2000, 40)
    # hop 1 is fully determined by the degrees: both take min(degree, 10) edges of each seed
    edges, _ = python_loop_sample(kg, seeds, (10,), np.random.default_rng(0))
    assert edges == sample_neighbors(kg, seeds, (10,), np.random.default_rng(0)).num_edges
    assert edges == int(np.minimum(kg.degree()[seeds], 10).sum())


def test_bench_sampler_options_the_suite_uses():
    """benchmarks/__main__.py passes --cache-dir and --wordnet; --triples sets an exact size."""
    from jaket.cli import build_parser

    args = build_parser().parse_args(["bench", "sampler", "--json", "--entities", "10",
                                      "--load-entities", "10", "--cache-dir", "somewhere"])
    assert args.load_dir == "somewhere" and not args.wordnet
    assert build_parser().parse_args(["bench", "sampler", "--wordnet"]).wordnet


def test_bench_sampler_exact_triples(capsys):
    assert jaket_main(["bench", "sampler", "--json", "--entities", "1000", "--triples", "2500",
                       "--seeds", "32", "--repeats", "1", "--loop-repeats", "1"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["entities"] == 1000 and figures["triples"] == 2500
