"""`jaket bench sense-texts`: the figures exist and are consistent (the old pass in float32 whatever
--precision says, the new one under it, the float32 new pass beside it under bf16, the warm cache equal
to the new pass), never how fast anything is."""

from __future__ import annotations

import json

from jaket.cli import main as jaket_main


def _bench(capsys, *argv) -> dict:
    assert jaket_main(["bench", "sense-texts", "--json", *map(str, argv)]) == 0
    return json.loads(capsys.readouterr().out)


def test_bench_sense_texts_splits_sorting_from_bf16(tiny_bert_dir, capsys):
    figures = _bench(capsys, "--encoder", tiny_bert_dir, "--texts", 40, "--repeats", 1, "--batch-size", 8, "--batch-sizes", 16,
                     "--precision", "bf16", "--threads", 1)
    assert (figures["texts"], figures["precision"], figures["threads"]) == (40, "bf16", 1)
    for side in ("before", "after", "after_fp32", "after_batch_16", "cache_warm"):
        assert figures[f"{side}_texts_per_second"]["median"] > 0
    assert figures["padding_share_after"] < figures["padding_share_before"]
    assert figures["max_abs_diff_cache_vs_after"] == 0.0  # the cache hands back the pass's own vectors
    # bf16 moves the unit vectors a little, never to another direction
    assert 0.0 < figures["max_abs_diff_after_vs_after_fp32"] < 0.1
    assert figures["min_cosine_after_vs_after_fp32"] > 0.99
    assert figures["max_abs_diff_after_fp32_vs_before"] < 1e-5  # the old pass ran in float32, bf16 asked or not
    assert {"speedup_after_fp32_over_before", "speedup_bf16_over_fp32"} <= figures.keys()


def test_bench_sense_texts_in_float32_has_no_second_float32_side(tiny_bert_dir, capsys):
    figures = _bench(capsys, "--encoder", tiny_bert_dir, "--texts", 16, "--repeats", 1, "--batch-sizes", "",
                     "--threads", 1)
    assert figures["precision"] == "fp32" and "after_fp32_texts_per_second" not in figures
    assert "speedup_bf16_over_fp32" not in figures
    # the old pass and the new one read the same texts in float32: the same vectors up to float noise
    assert figures["max_abs_diff_after_vs_before"] < 1e-5
