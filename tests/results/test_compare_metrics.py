"""results.compare_metrics: the reproduction check finds every differing number, not the timings."""

import json

from results.compare_metrics import differences, main


def test_every_number_is_compared_bit_for_bit_and_timings_are_not():
    before = {"runs": {"lm": [{"accuracy": 0.6206896551724138, "train_seconds": 12.0}]}, "cpu": "EPYC",
              "summary": {"mrr": 0.3441, "hits": [0.28, 0.49]}}
    after = {"runs": {"lm": [{"accuracy": 0.6206896551724138, "train_seconds": 99.0}]}, "cpu": "Xeon",
             "summary": {"mrr": 0.34414, "hits": [0.28, 0.49]}}
    found, compared = differences(before, after)
    assert compared == 4 and found == ["/summary/mrr: 0.3441 before, 0.34414 after"]
    found, _ = differences({"a": [1, 2], "b": 1}, {"a": [1], "c": 1})
    assert found == ["/a: 2 items before, 1 after", "/b: only in the before run", "/c: only in the after run"]
    assert differences({"x": float("nan")}, {"x": float("nan")}) == ([], 1)


def test_the_command_exits_1_on_a_difference(tmp_path, capsys):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps({"accuracy": 0.5}))
    two.write_text(json.dumps({"accuracy": 0.5}))
    assert main([str(one), str(two)]) == 0 and "1 numbers compared, 0 differences" in capsys.readouterr().out
    two.write_text(json.dumps({"accuracy": 0.6}))
    assert main([str(one), str(two)]) == 1 and "0.5 before, 0.6 after" in capsys.readouterr().out


def test_a_run_folder_is_read_and_an_ignored_key_is_left_out(tmp_path, capsys):
    for name, config in (("before", {"steps": 3}), ("after", {"steps": 3, "data": {"kg": None, "max": 9}})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(json.dumps({"config": config, "accuracy": 0.5}))
    assert main([str(tmp_path / "before"), str(tmp_path / "after")]) == 1
    assert "/config/data: only in the after run" in capsys.readouterr().out
    assert main([str(tmp_path / "before"), str(tmp_path / "after"), "--ignore", "data"]) == 0
    assert "2 numbers compared, 0 differences" in capsys.readouterr().out
