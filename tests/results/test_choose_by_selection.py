import json

import pytest

from results import choose_by_selection


def _metrics(path, lr, **settings):
    """A word-in-context metrics.json: ``setting=[(selection accuracies by epoch, dev accuracy), ...]`` per seed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"config": {"lr": lr}, "runs": {
        name: [{"seed": s, "selection_accuracy": sel, "accuracy": dev} for s, (sel, dev) in enumerate(runs)]
        for name, runs in settings.items()}}))
    return path


def test_each_setting_keeps_the_value_of_its_best_selection_accuracy_never_the_dev_score(tmp_path, capsys):
    files = [_metrics(tmp_path / "a" / "metrics.json", 2e-5, lm=[([0.60, 0.64, 0.63], 0.70)],
                      jaket=[([0.66, 0.65, 0.61], 0.60)]),
             _metrics(tmp_path / "b" / "metrics.json", 5e-5, lm=[([0.62, 0.61, 0.60], 0.75)],
                      jaket=[([0.60, 0.62, 0.67], 0.55)])]
    out = tmp_path / "choice.json"
    chosen = choose_by_selection.main([*map(str, files), "--key", "lr", "--out", str(out)])
    # lm: 2e-5's best epoch reached 0.64 against 0.62 (5e-5 has the higher dev score: not read)
    assert chosen["lm"]["chosen"] == 2e-5 and chosen["jaket"]["chosen"] == 5e-5
    assert chosen["lm"]["tried"]["2e-05"]["selection_accuracy"] == pytest.approx(0.64)
    assert json.loads(out.read_text())["settings"]["jaket"]["chosen"] == 5e-5
    assert "lm: lr = 2e-05" in capsys.readouterr().out


def test_a_tie_goes_to_the_smaller_value_and_a_run_without_selection_is_one_line(tmp_path, capsys):
    files = [_metrics(tmp_path / "a" / "metrics.json", 5e-5, lm=[([0.6], 0.5)]),
             _metrics(tmp_path / "b" / "metrics.json", 2e-5, lm=[([0.6], 0.5)])]
    assert choose_by_selection.main(list(map(str, files)))["lm"]["chosen"] == 2e-5
    bad = _metrics(tmp_path / "c" / "metrics.json", 1e-5, lm=[([], 0.5)])
    with pytest.raises(SystemExit):
        choose_by_selection.main([str(bad)])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert str(bad) in error and "no selection accuracy" in error
