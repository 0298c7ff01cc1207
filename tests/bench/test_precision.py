"""`jaket bench precision`: the figures exist, are consistent, and the reported choice is the
decision rule's (never how fast anything is)."""

from __future__ import annotations

import json

import pytest

from jaket.bench.precision import MATMUL_SHAPE
from jaket.cli import main as jaket_main
from jaket.model.device import BF16_SLOWDOWN_LIMIT, bf16_slowdown, choose_precision


def test_bench_precision_reports_both_sides_and_the_rules_choice(capsys, tiny_bert_dir):
    status = jaket_main(["bench", "precision", "--json", "--encoder", str(tiny_bert_dir), "--batch", "4",
                         "--length", "16", "--repeats", "1", "--matmul-repeats", "2", "--device", "cpu"])
    assert status == 0
    figures = json.loads(capsys.readouterr().out)
    m, k, n = MATMUL_SHAPE
    assert figures["matmul_shape"] == f"{m}x{k} @ {k}x{n}" and figures["matmul_flops"] == 2 * m * k * n
    for side in ("fp32", "bf16"):
        seconds = figures[f"matmul_{side}_ms"] / 1000
        assert figures[f"matmul_{side}_gflops"] == pytest.approx(figures["matmul_flops"] / seconds / 1e9)
        assert figures[f"step_{side}_tokens_per_s"] == pytest.approx(4 * 16 / figures[f"step_{side}_s"])
        assert figures[f"step_{side}_last_loss"] > 0
    assert figures["matmul_bf16_speedup"] == pytest.approx(figures["matmul_fp32_ms"] / figures["matmul_bf16_ms"])
    assert figures["step_bf16_speedup"] == pytest.approx(figures["step_fp32_s"] / figures["step_bf16_s"])
    assert figures["step_bf16_cpu_speedup"] == pytest.approx(figures["step_fp32_cpu_s"] / figures["step_bf16_cpu_s"])
    for side in ("fp32", "bf16"):
        cpu_seconds = figures[f"matmul_{side}_cpu_ms"] / 1000
        assert figures[f"matmul_{side}_cpu_gflops"] == pytest.approx(figures["matmul_flops"] / cpu_seconds / 1e9)
    assert figures["matmul_bf16_cpu_speedup"] == pytest.approx(
        figures["matmul_fp32_cpu_ms"] / figures["matmul_bf16_cpu_ms"])
    assert figures["step_encoder"] == str(tiny_bert_dir) and (figures["step_batch"], figures["step_length"]) == (4, 16)
    assert figures["step_parameters"] > 0
    # the choice is the rule's: bf16 exactly where the start-up measurement finds bf16 no slower
    slowdown = figures["auto_bf16_slowdown"]
    assert slowdown == bf16_slowdown() and figures["auto_device"] == "cpu"
    assert figures["auto_chooses"] == ("bf16" if slowdown <= 1.0 else "fp32") == choose_precision("auto", "cpu")
    assert f"takes {slowdown:.2f}x the float32 time here" in figures["auto_why"]
    assert f"so {figures['auto_chooses']}" in figures["auto_why"]
    assert figures["machine"]["cpu"]["cores"] and figures["machine"]["torch"]


def test_bench_precision_choice_follows_the_measurement(monkeypatch):
    """With the measurement replaced, the reported choice and its reason follow it both ways."""
    import torch

    from jaket.bench import precision

    for slowdown, expected in ((0.4, "bf16"), (1.0, "bf16"), (25.0, "fp32")):
        monkeypatch.setattr(precision, "bf16_slowdown", lambda value=slowdown: value)
        monkeypatch.setattr("jaket.model.device.bf16_slowdown", lambda value=slowdown: value)
        figures = precision.auto_figures(torch.device("cpu"))
        assert figures["auto_chooses"] == expected and figures["auto_bf16_slowdown"] == slowdown
        assert figures["auto_why"].startswith(
            f"a bf16 product (256x384 @ 384x384, one thread, its CPU time) takes {slowdown:.2f}x")
        assert ("emulated" in figures["auto_why"]) == (slowdown > BF16_SLOWDOWN_LIMIT)
