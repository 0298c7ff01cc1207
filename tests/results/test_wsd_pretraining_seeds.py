import json

import pytest

from results import wsd_pretraining_seeds


def _run(folder, jaket, lm, model, only=None, data="semeval2007"):
    scorers = {"first sense": 0.55, "lm": 0.36, "lm (text)": 0.46, "lm (text + kg)": lm, "jaket": 0.37,
               "jaket (cosine)": 0.38, "jaket (text)": 0.47, "jaket (text + kg)": jaket}
    scorers = {k: v for k, v in scorers.items() if only is None or k == "first sense" or k.startswith(only)}
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({
        "config": {"pretrained": model, "data": {"path": data}}, "machine": {"cpu": {"model": "test"}},
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


def test_runs_of_the_model_alone_take_the_base_encoders_scorers_from_base(tmp_path, capsys):
    """Runs made with --variants jaket lack the lm scorers (they do not depend on the model): --base
    gives them, from the base encoder's run on the same data; a base of other data, or one made with
    a model, is one clear line."""
    runs = [_run(tmp_path / f"seed{s}", jaket, None, f"m{s}", only="jaket") for s, jaket in ((0, 0.64), (1, 0.60))]
    base = _run(tmp_path / "base", None, 0.598, None, only="lm")
    with pytest.raises(SystemExit):
        wsd_pretraining_seeds.main([*map(str, runs)])
    err = capsys.readouterr().err
    assert "no lm (text + kg) scores" in err and "takes the lm scorers from --base" in err
    assert wsd_pretraining_seeds.main([*map(str, runs), "--base", str(base), "--out", str(tmp_path / "o.json")]) == 0
    found = json.loads((tmp_path / "o.json").read_text())
    paired = found["paired over runs"]["jaket (text + kg) - lm (text + kg)"]
    assert paired["values"] == [4.2, 0.2] and found["scorers"]["lm (text + kg)"]["values"] == [59.8, 59.8]
    capsys.readouterr()
    other = _run(tmp_path / "other", None, 0.5, None, only="lm", data="senseval2")
    with pytest.raises(SystemExit):
        wsd_pretraining_seeds.main([*map(str, runs), "--base", str(other)])
    assert "evaluated on {'path': 'semeval2007'}, --base on {'path': 'senseval2'}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        wsd_pretraining_seeds.main([*map(str, runs), "--base", str(runs[0])])
    assert "made with --model m0" in capsys.readouterr().err
