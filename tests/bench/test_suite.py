"""The benchmark suite's plumbing: every spec parses, the report renders from figures."""

from __future__ import annotations

import argparse
import importlib
import json

import pytest

from benchmarks.__main__ import Spec, suite
from benchmarks.figures import fit_exponent, ratio, summarise
from benchmarks.report import write_report
from jaket.bench.cli import BENCHMARKS


@pytest.mark.parametrize("quick", [True, False])
def test_every_spec_names_a_benchmark_and_parses(quick, tmp_path):
    specs = suite(quick, tmp_path)
    assert len({s.key for s in specs}) == len(specs)
    for spec in specs:
        module = importlib.import_module(BENCHMARKS[spec.benchmark])
        parser = argparse.ArgumentParser()
        parser.add_argument("--json", action="store_true")
        module.add_arguments(parser)
        parser.parse_args(["--json", *spec.argv])  # an unknown option exits here
    scales = {s.scale for s in specs if s.scale}
    assert len(scales) >= 2  # the scaling fits need several sizes


def test_fit_exponent_recovers_a_power_law():
    xs = [1e4, 1e5, 1e6]
    assert abs(fit_exponent(xs, [3 * x ** 0.5 for x in xs]) - 0.5) < 1e-9
    assert fit_exponent([1e4], [1.0]) is None
    assert ratio(0.25) == "1/4.0 (0.250)"


def test_summary_is_median_with_spread():
    s = summarise([{"a": 1.0, "b": "x"}, {"a": 3.0, "b": "y"}, {"a": 2.0, "b": "z"}])
    assert s["a"] == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert s["b"] == {"value": "x"}


def _fake_results(spec: Spec) -> dict:
    if spec.benchmark == "model":
        base = {"batch": 32, "length": 128, "mentions": 800, "mentions_per_sequence": 25.0,
                "unique_seeds": 790, "kg_entities": 10**5, "kg_triples": 10**6, "fanout": 10,
                "km_layers": 2, "km_heads": 8, "repeats": 3, "nodes_per_hop": [790, 7000, 20000],
                "edges_per_hop": [7900, 50000], "km_forward_ms_per_node": 0.02 * (spec.scale or 1) ** 0.1,
                "subgraph_nodes": 27790}
        for stage, ms in (("lm1", 500.0), ("km", 300.0), ("km_trimmed", 150.0), ("fusion", 5.0),
                          ("lm2", 500.0), ("gather", 10.0)):
            base[f"{stage}_forward_ms"] = base[f"{stage}_forward_cpu_ms"] = ms
            base[f"{stage}_forward_backward_ms"] = base[f"{stage}_forward_backward_cpu_ms"] = 3 * ms
        base.update(km_over_lm_forward=0.3, km_over_lm_forward_backward=0.3,
                    km_trimmed_over_lm_forward=0.15, paper_formula_km_over_lm=0.26,
                    lm_flops_per_sequence=2.87e9, flops_km_over_lm=0.2)
        return base
    if spec.benchmark == "memory":
        n = spec.scale or 1500
        out = {"source": "wordnet", "entities": n, "encoded_rows": min(n, 1024), "hidden": 384,
               "max_length": 64, "batch_size": 64, "lm1_layers": 3, "repeats": 2,
               "description_tokens_mean": 19.0, "tokenize_seconds": n / 1e4,
               "refresh_ms_per_description": 3.0, "full_refresh_seconds": n * 0.003,
               "refresh_over_baseline_time": 1.02, "refresh_over_baseline_cpu": 1.05,
               "sorted_speedup_over_unsorted": 1.8, "padding_fraction_sorted": 0.1,
               "padding_fraction_unsorted": 0.55}
        for name in ("refresh", "baseline", "unsorted"):
            for suffix in ("", "_min", "_max"):
                out[f"{name}_descriptions_per_second{suffix}"] = 100.0
        for dtype, size in (("float32", 4), ("float16", 2), ("bfloat16", 2)):
            out[f"memory_bytes_{dtype}"] = n * 384 * size
            out[f"memory_bytes_per_entity_{dtype}"] = 384 * size
        return out
    if spec.benchmark == "pretrain":
        return {"entities": 3000, "text_batch": 16, "fanout": 10, "timed_steps": 8,
                "memory_speedup": 2.5, "refresh_over_training": 0.01, "schedule_refreshes": 22,
                "schedule_steps": 3890, "paper_scale_refresh_over_training": 0.15,
                "paper_scale_descriptions_per_step": 7315.3, "paper_scale_seed_entities": 121_000,
                "paper_scale_unique_entities_for_15x_with_grad": 250_000,
                "paper_scale_unique_entities_for_15x_no_grad": 750_000,
                "description_ms_64_tokens": 20.0, "text_train_ms_512_tokens_scaled": 1400.0,
                "subgraph_nodes_per_step": 900, "steps_per_second_memory": 0.5}
    n = spec.scale or 10**6
    return {"kg": "synthetic", "entities": n, "triples": 10 * n, "seeds": 1024, "fanouts": "10x10",
            "edges_per_second": 5e6, "python_loop_edges_per_second": 1e6, "speedup": 5.0,
            "sampled_edges": 80000, "load_entities": n, "load_triples": 10 * n,
            "load_cached_seconds": 1e-6 * n, "load_peak_rss_mb": 200 + 5e-4 * n,
            "load_rss_after_import_mb": 150.0, "load_compile_seconds": 3e-5 * n}


def test_report_renders_every_section(tmp_path):
    specs = suite(False, tmp_path)
    for spec in specs:
        spec.results = [_fake_results(spec), _fake_results(spec)]
        spec.seconds = [1.0, 1.0]
    specs[-1].results = [{"error": "boom"}]
    out = tmp_path / "docs"
    out.mkdir()
    write_report(specs, out, 60.0, quick=False, load_before=(3.0, 0, 0), load_after=(1.0, 0, 0))
    text = (out / "performance.md").read_text()
    for heading in ("## The paper's ratios beside ours", "## Model stages",
                    "## Entity context memory refresh", "## Pre-training steps", "## Data layer",
                    "## Scaling with the number of entities", "## Every figure"):
        assert heading in text
    figures = (out / "performance-figures.md").read_text()  # every run's figures: their own page
    assert "shared 2-core machine" in text and "FAILED: boom" in figures and "FAILED" not in text
    assert "[performance-figures.md](performance-figures.md)" in text
    assert "1/7" in text and "15x" in text and "1/5" in text
    raw = json.loads((out / "performance.json").read_text())
    assert set(raw["benchmarks"]) == {s.key for s in specs}
    fits = raw["scaling_fits"]
    assert abs(fits["sampler.load_compile_seconds"]["exponent"] - 1.0) < 1e-6
    pytest.importorskip("matplotlib")
    for name in ("model-stages.png", "memory-refresh.png", "scaling.png"):
        assert (out / "img" / name).stat().st_size > 1000


def test_render_only_rewrites_both_documents_from_the_json(tmp_path):
    from benchmarks.__main__ import main

    specs = suite(False, tmp_path / "work")
    for spec in specs:
        spec.results = [_fake_results(spec)]
        spec.seconds = [1.0]
    out = tmp_path / "docs"
    out.mkdir()
    write_report(specs, out, 1500.0, quick=False, load_before=(0.5, 0, 0), load_after=(0.5, 0, 0),
                 merge=False)
    (out / "performance.md").write_text("stale")
    assert main(["--render-only", "--out", str(out)]) == 0
    text = (out / "performance.md").read_text()
    assert "## Scaling with the number of entities" in text
    assert "$TMP" in (out / "performance-figures.md").read_text()  # the commands, on the figures page
    assert "shared 2-core machine" not in text  # the load stayed below half the cores
    # the suite's wall time stays its own, however often the documents are rendered again
    # a figure measured outside the suite (a benchmark run on its own) survives the rendering
    raw = json.loads((out / "performance.json").read_text())
    raw["rdf_import_10m_ntriples"] = {"command": "python -m benchmarks.rdf_import", "runs": [{"wall_seconds": 29.5}]}
    (out / "performance.json").write_text(json.dumps(raw))
    assert main(["--render-only", "--out", str(out)]) == 0
    kept = json.loads((out / "performance.json").read_text())
    assert kept["wall_seconds"] == 1500.0
    assert kept["rdf_import_10m_ntriples"]["runs"] == [{"wall_seconds": 29.5}]
    assert "Suite wall time: 25.0 min" in (out / "performance.md").read_text()
    scaling = (out / "scaling.md").read_text()
    assert "3,657,658" in scaling and "## Recommendations" in scaling


@pytest.mark.parametrize("argv, said", [
    (["bench", "link", "--threads", "-2"], "argument --threads: must be a positive integer, got -2"),
    (["bench", "sampler", "--seeds", "0"], "argument --seeds: must be a positive integer, got 0"),
    (["bench", "link", "--limit", "0"], "argument --limit: must be a positive integer, got 0"),
    (["bench", "link", "--limit", "-1"], "argument --limit: must be a positive integer, got -1"),
])
def test_bench_flags_are_validated_like_the_rest_of_the_tree(argv, said, capsys):
    """Issue 69, item 6: these were a RuntimeError traceback, a ZeroDivisionError, a silent 2,000 and
    a message naming the benchmark's temporary file."""
    from jaket.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
