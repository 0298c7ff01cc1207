import json

import pytest

from results import wsd_compare_keys


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_f1_and_paired_difference_as_the_official_scorer_counts(tmp_path):
    gold = _write(tmp_path / "gold.key.txt", ["d1 a%1 a%2", "d2 b%1", "d3 c%1", "d4 e%1"])
    # A: right on d1 (either gold key), d2, d3; wrong on d4 -> 3 right of 4 answered: F1 = 6 / 8
    a = _write(tmp_path / "a.key.txt", ["d1 a%2", "d2 b%1", "d3 c%1", "d4 x%1"])
    # B: right on d1, d2; no answer for d3 and d4 -> F1 = 2 * 2 / (2 + 4)
    b = _write(tmp_path / "b.key.txt", ["d2 b%1", "", "d1 a%1"])
    out = tmp_path / "out.json"
    assert wsd_compare_keys.main(["--gold", str(gold), f"{a}:{b}", "--out", str(out)]) == 0
    found = json.loads(out.read_text())
    assert found["targets"] == 4
    assert found["f1"] == {str(a): 75.0, str(b): pytest.approx(66.7)}
    paired = found["paired"][f"{a} - {b}"]
    assert paired["mean"] == pytest.approx(8.3)
    assert paired["ci_low"] <= paired["mean"] <= paired["ci_high"] and paired["ci_low"] < paired["ci_high"]


@pytest.mark.parametrize("lines, problem", [
    (["d1 a%1", "d9 b%1"], "b.key.txt:2: instance d9 is not in the gold key file"),
    (["d1 a%1", "d1 a%2"], "b.key.txt:2: instance d1 given twice (first at line 1)"),
    (["d1"], "b.key.txt:1: expected 'instance-id sense-key [sense-key ...]', got 'd1'"),
])
def test_a_bad_key_file_is_one_line_naming_the_file_and_line(tmp_path, capsys, lines, problem):
    gold = _write(tmp_path / "gold.key.txt", ["d1 a%1", "d2 b%1"])
    a = _write(tmp_path / "a.key.txt", ["d1 a%1"])
    b = _write(tmp_path / "b.key.txt", lines)
    with pytest.raises(SystemExit) as stop:
        wsd_compare_keys.main(["--gold", str(gold), f"{a}:{b}"])
    err = capsys.readouterr().err
    assert stop.value.code == 1 and problem in err and len(err.strip().splitlines()) == 1
