"""benchmarks.refresh_precision: the bf16 refresh's two passes, timed and compared with fp32 (#68)."""

from benchmarks import refresh_precision
from jaket.kg.io import save_kg
from jaket.kg.toy import toy_kg


def test_the_two_bf16_passes_are_timed_and_agree_with_fp32(tiny_mpnet_dir, tmp_path, capsys):
    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    figures = refresh_precision.main(["--encoder", str(tiny_mpnet_dir), "--kg", str(tmp_path / "kg"),
                                      "--descriptions", "12", "--window", "16", "--batch-size", "5",
                                      "--repeats", "2", "--threads", "1"])
    assert figures["descriptions"] == min(12, kg.num_entities)
    for name in ("autocast", "reading_copy"):
        assert len(figures[name]["seconds"]) == 2 and figures[name]["descriptions_per_second"] > 0
        assert 0.99 < figures[name]["cosine_to_fp32_min"] <= figures[name]["cosine_to_fp32_mean"] <= 1.0 + 1e-6
    assert '"reading_copy"' in capsys.readouterr().out
