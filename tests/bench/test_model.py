"""`jaket bench model`: the figures exist and are consistent (never how fast anything is)."""

from __future__ import annotations

import json


from jaket.bench.model import encoder_flops_per_sequence, paper_km_flops_per_sequence
from jaket.cli import main as jaket_main


def test_flop_counts_reproduce_the_papers_computation_analysis():
    roberta = encoder_flops_per_sequence(12, 768, 3072, 128)
    assert 22e9 < roberta < 23e9  # "over 22 billion"
    km = paper_km_flops_per_sequence(128, 768, 10, 2)
    assert 2.9e9 < km < 3.1e9  # "about 3 billion"
    assert km / roberta < 1 / 7
    assert 25 < roberta / paper_km_flops_per_sequence(128, 768, 5, 2) < 35  # "about 1/30"


def test_bench_model_cli(capsys, tiny_bert_dir):
    status = jaket_main(["bench", "model", "--json", "--encoder", str(tiny_bert_dir), "--batch", "2",
                         "--length", "32", "--mentions", "4", "--entities", "500", "--repeats", "1",
                         "--km-heads", "4", "--fanout", "3"])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["mentions"] == 8 and figures["hidden"] == 32
    for stage in ("lm1", "km", "km_trimmed", "fusion", "lm2"):
        assert figures[f"{stage}_forward_ms"] > 0
        assert figures[f"{stage}_forward_backward_ms"] > 0
    assert figures["km_over_lm_forward"] > 0 and figures["km_over_lm_forward_backward"] > 0
    assert figures["trimmed_max_abs_difference"] < 1e-4
    assert sum(figures["nodes_per_hop"]) == figures["subgraph_nodes"]
    assert sum(figures["edges_per_hop"]) == figures["subgraph_edges"]
    assert figures["km_trimmed_flops_per_sequence"] < figures["km_flops_per_sequence"]
    assert figures["lm_flops_per_sequence"] == encoder_flops_per_sequence(4, 32, 64, 32)


def test_bench_model_km_only(capsys):
    status = jaket_main(["bench", "model", "--json", "--km-only", "--entities", "300", "--batch", "2",
                         "--mentions", "5", "--repeats", "1", "--no-backward", "--km-variant", "full"])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["km_forward_ms_per_node"] > 0 and "lm1_forward_ms" not in figures
    assert "km_forward_backward_ms" not in figures
