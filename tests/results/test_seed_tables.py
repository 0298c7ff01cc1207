import json

import pytest

from results import seed_tables


def _metrics(path, variant, seed, full, half, task="kgqa", steps=100):
    data = {"task": task, "config": {"seeds": [seed], "variants": [variant], "pretrained": None, "steps": steps},
            "data": {"questions": 10},
            "summary": {variant: {"full": {"1-hop": {"mean": full, "std": 0.0, "values": [full]}},
                                  "50%": {"1-hop": {"mean": half, "std": 0.0, "values": [half]}}}}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_joins_per_seed_runs_and_pairs_them_by_seed(tmp_path, capsys):
    files = [_metrics(tmp_path / f"{v}-{s}" / "metrics.json", v, s, full, half)
             for v, s, full, half in (("jaket", 0, 0.90, 0.60), ("jaket", 1, 0.92, 0.62), ("jaket", 2, 0.94, 0.61),
                                      ("lm+g+m", 0, 0.88, 0.60), ("lm+g+m", 1, 0.89, 0.59), ("lm+g+m", 2, 0.90, 0.60))]
    assert seed_tables.main([str(f) for f in files] + ["--against", "lm+g+m", "--out", str(tmp_path / "t")]) == 0
    table = json.loads((tmp_path / "t" / "table.json").read_text())
    paired = table["paired"]["jaket"]["full 1-hop"]
    assert paired["seeds"] == [0, 1, 2]
    assert paired["values"] == pytest.approx([2.0, 3.0, 4.0])
    assert paired["mean"] == pytest.approx(3.0) and paired["ci_low"] < 3.0 < paired["ci_high"]
    assert table["values"]["lm+g+m"]["50% 1-hop"]["mean"] == pytest.approx(59.6667, abs=1e-3)
    out = capsys.readouterr().out
    assert "JAKET − LM+G+M" in out and "| JAKET (3 seeds) |" in out
    # a setting with one run so far is counted in the singular
    one = _metrics(tmp_path / "lm-0" / "metrics.json", "lm", 0, 0.7, 0.5)
    assert seed_tables.main([str(f) for f in files] + [str(one), "--against", "lm+g+m"]) == 0
    assert "| LM only (1 seed) |" in capsys.readouterr().out


def test_refuses_runs_with_another_configuration_or_a_repeated_seed(tmp_path):
    a = _metrics(tmp_path / "a" / "metrics.json", "jaket", 0, 0.9, 0.6)
    b = _metrics(tmp_path / "b" / "metrics.json", "lm+g+m", 0, 0.9, 0.6, steps=300)
    with pytest.raises(SystemExit, match="steps"):
        seed_tables.main([str(a), str(b), "--against", "lm+g+m"])
    c = _metrics(tmp_path / "c" / "metrics.json", "jaket", 0, 0.8, 0.5)
    with pytest.raises(SystemExit, match="seed 0 appears twice"):
        seed_tables.main([str(a), str(c), "--against", "jaket"])
    # --ignore: a key allowed to differ (e.g. a setting added after the earlier run) joins them
    d = _metrics(tmp_path / "d" / "metrics.json", "lm+g+m", 0, 0.9, 0.6, steps=300)
    assert seed_tables.main([str(a), str(d), "--against", "lm+g+m", "--ignore", "steps"]) == 0


def test_ignore_also_covers_facts_of_one_settings_data(tmp_path):
    """Word-in-context's KM settings record their candidate senses in ``data``; LM only has none."""
    a = _metrics(tmp_path / "a" / "metrics.json", "jaket", 0, 0.9, 0.6)
    b = _metrics(tmp_path / "b" / "metrics.json", "lm", 0, 0.8, 0.6)
    extra = json.loads(a.read_text())
    extra["data"]["candidates"] = {"mean_candidates": 11.9}
    a.write_text(json.dumps(extra))
    with pytest.raises(SystemExit, match="not comparable"):
        seed_tables.main([str(a), str(b), "--against", "lm"])
    assert seed_tables.main([str(a), str(b), "--against", "lm", "--ignore", "candidates"]) == 0


def test_link_prediction_files_of_both_layouts_join_into_one_table(tmp_path):
    """Link prediction's summary was keyed "lm+g+m/rotate" before the grid runner and is
    [setting][scorer] since: files of both layouts join, and --against takes either spelling."""
    def lp(path, variant, seed, mrr, old):
        cell = {"valid": {"mrr": {"mean": mrr, "std": 0.0, "values": [mrr]}}}
        summary = {f"{variant}/rotate": cell} if old else {variant: {"rotate": cell}}
        data = {"task": "link-prediction", "config": {"seeds": [seed], "variants": [variant]}, "summary": summary}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data))
        return str(path)

    files = [lp(tmp_path / f"{v}{s}" / "metrics.json", v, s, mrr, old=s == 0)
             for v, s, mrr in (("jaket", 0, 0.37), ("jaket", 1, 0.38), ("lm+g+m", 0, 0.35), ("lm+g+m", 1, 0.35))]
    for against in ("lm+g+m", "lm+g+m/rotate"):
        assert seed_tables.main(files + ["--against", against, "--out", str(tmp_path / against.replace("/", "_"))]) == 0
        table = json.loads((tmp_path / against.replace("/", "_") / "table.json").read_text())
        assert table["paired"]["jaket"]["rotate valid mrr"]["values"] == pytest.approx([2.0, 3.0])


def test_a_label_names_a_row_of_the_same_variant_on_another_encoder(tmp_path, capsys):
    """Issue 66's text-only control is LM+G+M on an MLM-trained encoder: LABEL=PATH keeps it a row of
    its own, paired with LM+G+M by seed."""
    base = [_metrics(tmp_path / f"lmgm-{s}" / "metrics.json", "lm+g+m", s, 0.88 + s / 100, 0.6) for s in (0, 1)]
    other = [_metrics(tmp_path / f"mlm-{s}" / "metrics.json", "lm+g+m", s, 0.90 + s / 100, 0.6) for s in (0, 1)]
    argv = [str(f) for f in base] + [f"LM+G+M, MLM-only encoder={f}" for f in other]
    assert seed_tables.main(argv + ["--against", "lm+g+m", "--out", str(tmp_path / "t")]) == 0
    table = json.loads((tmp_path / "t" / "table.json").read_text())
    assert table["paired"]["LM+G+M, MLM-only encoder"]["full 1-hop"]["values"] == pytest.approx([2.0, 2.0])
    assert "| LM+G+M, MLM-only encoder (2 seeds) |" in capsys.readouterr().out
