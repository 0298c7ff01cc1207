import json

import pytest

from results import wsd_pretraining_seeds


def _run(folder, jaket, lm, model):
    scorers = {"first sense": 0.55, "lm": 0.36, "lm (text)": 0.46, "lm (text + kg)": lm, "jaket": 0.37,
               "jaket (cosine)": 0.38, "jaket (text)": 0.47, "jaket (text + kg)": jaket}
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({
        "config": {"pretrained": model}, "machine": {"cpu": {"model": "test"}},
        "scorers": {name: {"f1": f1, "by_pos": {"NOUN": {"f1": f1 + 0.1}, "VERB": {"f1": f1 - 0.1}}}
                    for name, f1 in scorers.items()} | {"random": {"expected": True}}}))
    return folder


def test_scorers_over_pretraining_runs_and_differences_paired_by_run(tmp_path, capsys):
    runs = [_run(tmp_path / f"seed{s}", jaket, lm, f"m{s}")
            for s, jaket, lm in ((0, 0.56, 0.53), (1, 0.53, 0.53), (2, 0.55, 0.53))]
    assert wsd_pretraining_seeds.main([*map(str, runs), "--out", str(tmp_path / "out.json")]) == 0
    found = json.loads((tmp_path / "out.json").read_text())
    assert found["scorers"]["jaket (text + kg)"]["values"] == [56.0, 53.0, 55.0]
    assert found["scorers"]["jaket (text + kg)"]["mean"] == pytest.approx(54.67, abs=0.01)
    paired = found["paired over runs"]["jaket (text + kg) - lm (text + kg)"]
    assert paired["values"] == [3.0, 0.0, 2.0] and paired["mean"] == pytest.approx(1.7, abs=0.05)
    assert paired["ci_low"] < 0 < paired["ci_high"]  # three runs this far apart: no sign
    assert found["runs"][str(runs[1])]["f1"]["jaket (text + kg)"]["verb"] == pytest.approx(43.0)
    assert found["runs"][str(runs[0])]["model"] == "m0"
    assert "paired over runs" in capsys.readouterr().out


def test_a_folder_without_the_tasks_metrics_is_one_clear_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        wsd_pretraining_seeds.main([str(tmp_path / "missing")])
    assert stop.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "missing: no metrics.json" in error and "Traceback" not in error
