import json

import numpy as np
import pytest

from jaket.tasks import report as rep


def test_ranking_metrics_and_mean_std():
    m = rep.ranking_metrics([1, 2, 4, 20])
    assert m["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert m["hits@1"] == 0.25 and m["hits@3"] == 0.5 and m["hits@10"] == 0.75
    with pytest.raises(ValueError):
        rep.ranking_metrics([0, 1])
    mean, std = rep.mean_std([0.8, 0.9])
    assert mean == pytest.approx(0.85) and std == pytest.approx(np.std([0.8, 0.9], ddof=1))
    assert rep.format_mean_std([0.5]) == "50.0 ± 0.0"
    assert rep.accuracy([1, 2, 3], [1, 2, 0]) == pytest.approx(2 / 3)


def test_files_and_plots(tmp_path):
    rep.write_json_atomic(tmp_path / "m.json", {"a": np.float32(1.5), "b": np.arange(2)})
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": 1.5, "b": [0, 1]}
    table = rep.markdown_table(["x", "y"], [[1, 2]])
    assert table.splitlines()[2] == "| 1 | 2 |"
    with pytest.raises(ValueError):
        rep.markdown_table(["x"], [[1, 2]])
    rep.plot_curves({"a": [3, 2, 1]}, tmp_path / "c.png")
    rep.plot_grouped_bars(["100%"], {"lm": ([50.0], [1.0])}, tmp_path / "b.png")
    cm = rep.confusion_matrix(np.array([0, 1, 1]), np.array([0, 1, 0]), 2)
    assert cm.tolist() == [[1, 1], [0, 1]]
    rep.plot_confusion(cm, ["a", "b"], tmp_path / "cm.png")
    rep.plot_histogram({"r": [1, 2, 30]}, tmp_path / "h.png")
    for name in ("c.png", "b.png", "cm.png", "h.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob(".*tmp*"))
