import json

import pytest

from results import finetune_pretraining_seeds


def _run(folder, **variants):
    """A grid task's metrics.json: ``variant=[accuracy per seed 0, 1, 2]``."""
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"runs": {
        name: [{"seed": s, "accuracy": a, "seconds": 1.0} for s, a in enumerate(values)]
        for name, values in variants.items()}}))
    return folder


def test_the_gain_per_pretraining_run_and_over_runs(tmp_path, capsys):
    first = _run(tmp_path / "r0", lm=[0.60, 0.62, 0.61], jaket=[0.66, 0.67, 0.65])
    runs = [first, _run(tmp_path / "r1", jaket=[0.62, 0.64, 0.63]), _run(tmp_path / "r2", jaket=[0.64, 0.66, 0.62])]
    out = tmp_path / "out.json"
    assert finetune_pretraining_seeds.main(["--baseline", str(first), "--runs", *map(str, runs),
                                            "--out", str(out)]) == 0
    found = json.loads(out.read_text())
    assert found["seeds"] == [0, 1, 2] and found["baseline"]["mean"] == pytest.approx(61.0)
    r1 = found["runs"][str(runs[1])]
    assert r1["values"] == [62.0, 64.0, 63.0] and r1["mean"] == pytest.approx(63.0)
    assert r1["minus baseline"]["values"] == [2.0, 2.0, 2.0] and r1["minus baseline"]["ci_low"] == pytest.approx(2.0)
    over = found["over runs"]
    assert over["mean"] == pytest.approx((66 + 63 + 64) / 3, abs=0.01)
    assert over["minus baseline"]["values"] == [5.0, 2.0, 3.0]  # each run's mean paired difference
    assert over["minus baseline"]["mean"] == pytest.approx(10 / 3, abs=0.01)
    assert over["minus baseline"]["ci_low"] < 2.0 < 5.0 < over["minus baseline"]["ci_high"]  # wider than any run's
    assert "over runs" in capsys.readouterr().out


def test_runs_with_other_seeds_or_without_the_setting_are_one_clear_line(tmp_path, capsys):
    base = _run(tmp_path / "base", lm=[0.6, 0.6, 0.6])
    other = tmp_path / "other"
    other.mkdir()
    (other / "metrics.json").write_text(json.dumps({"runs": {"jaket": [{"seed": 0, "accuracy": 0.6}]}}))
    for argv, message in ((["--baseline", str(base), "--runs", str(other)], "fine-tuning seeds [0]"),
                          (["--baseline", str(base), "--runs", str(base)], "no 'jaket' runs"),
                          (["--baseline", str(tmp_path / "none"), "--runs", str(base)], "none: no metrics.json")):
        with pytest.raises(SystemExit) as stop:
            finetune_pretraining_seeds.main(argv)
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert stop.value.code == 2 and message in error, error


def _cell(folder, variant, seed, accuracy):
    """One seed's cell of a grid task (``--seeds 1 --first-seed seed``)."""
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"runs": {variant: [{"seed": seed, "accuracy": accuracy}]}}))
    return str(folder)


def test_a_run_of_one_seed_per_folder_is_joined_by_commas(tmp_path, capsys):
    lm = ",".join(_cell(tmp_path / f"lm{s}", "lm", s, a) for s, a in enumerate([0.60, 0.62, 0.61]))
    cells = ",".join(_cell(tmp_path / f"j{s}", "jaket", s, a) for s, a in enumerate([0.66, 0.67, 0.65]))
    whole = _run(tmp_path / "r1", jaket=[0.62, 0.64, 0.63])
    out = tmp_path / "out.json"
    assert finetune_pretraining_seeds.main(["--baseline", lm, "--runs", cells, str(whole), "--out", str(out)]) == 0
    found = json.loads(out.read_text())
    assert found["baseline"]["mean"] == pytest.approx(61.0)
    assert found["runs"][cells]["values"] == [66.0, 67.0, 65.0]
    assert found["over runs"]["minus baseline"]["values"] == [5.0, 2.0]
    twice = lm + "," + str(tmp_path / "lm0")
    with pytest.raises(SystemExit):
        finetune_pretraining_seeds.main(["--baseline", twice, "--runs", cells])
    assert "'lm' seed 0 is also in an earlier folder" in capsys.readouterr().err
