"""`jaket bench memory`: the figures exist and are consistent (never how fast anything is)."""

from __future__ import annotations

import json

from jaket.cli import main as jaket_main


def test_bench_memory_cli(capsys, tiny_bert_dir):
    status = jaket_main(["bench", "memory", "--json", "--encoder", str(tiny_bert_dir), "--source",
                         "synthetic", "--entities", "200", "--batch-size", "32", "--max-length", "16",
                         "--repeats", "1"])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["entities"] == 200 and figures["encoded_rows"] == 200
    for name in ("refresh", "baseline", "unsorted"):
        assert figures[f"{name}_descriptions_per_second"] > 0
    assert figures["refresh_over_baseline_time"] > 0
    assert 0 <= figures["padding_fraction_sorted"] <= figures["padding_fraction_unsorted"] < 1
    f32, f16, bf16 = (figures[f"memory_bytes_{d}"] for d in ("float32", "float16", "bfloat16"))
    assert f32 == (200 + figures["relations"]) * 32 * 4 and f16 == bf16 == f32 // 2
    assert 0 < figures["memory_float16_mean_relative_error"] < figures["memory_bfloat16_mean_relative_error"] < 0.01
    assert figures["full_refresh_projected"] is False


def test_bench_memory_projects_from_a_subset(capsys, tiny_bert_dir):
    status = jaket_main(["bench", "memory", "--json", "--encoder", str(tiny_bert_dir), "--source",
                         "synthetic", "--entities", "500", "--subset", "64", "--batch-size", "32",
                         "--max-length", "16", "--repeats", "1"])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["encoded_rows"] == 64 and figures["full_refresh_projected"] is True
    per_row = figures["refresh_ms_per_description"] / 1000
    assert abs(figures["full_refresh_seconds"] - (500 * per_row + figures["tokenize_seconds"])) < 1e-6
