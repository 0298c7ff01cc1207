"""jaket.atomic: whole files or nothing, with the permissions a plain open() would give."""

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from jaket import atomic


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_umask_is_read_without_changing_it(umask_027):
    assert atomic.current_umask() == 0o027
    assert atomic.current_umask() == 0o027


def test_new_files_and_folders_get_what_open_would_give(tmp_path, umask_027):
    with open(tmp_path / "plain", "w") as handle:
        handle.write("x")
    plain = _mode(tmp_path / "plain")
    assert plain == 0o640
    atomic.write_text(tmp_path / "a.txt", "text")
    atomic.write_json(tmp_path / "b.json", {"a": 1})
    atomic.write_bytes(tmp_path / "c.bin", b"\0\1")
    atomic.write_lines(tmp_path / "d.jsonl", ["1", "2"])
    atomic.copy_file(tmp_path / "a.txt", tmp_path / "e.txt")
    with atomic.atomic_path(tmp_path / "f.npy", suffix=".npy") as temporary:
        np.save(temporary, np.arange(3), allow_pickle=False)
    for name in ("a.txt", "b.json", "c.bin", "d.jsonl", "e.txt", "f.npy"):
        assert _mode(tmp_path / name) == plain, name
    with atomic.atomic_directory(tmp_path / "folder") as folder:
        (folder / "x").write_text("y")
    os.mkdir(tmp_path / "plain-folder")
    assert _mode(tmp_path / "folder") == _mode(tmp_path / "plain-folder") == 0o750
    assert (tmp_path / "d.jsonl").read_text() == "1\n2\n"
    assert (tmp_path / "b.json").read_text() == '{\n  "a": 1\n}\n'
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries left


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_027):
    target = tmp_path / "private.json"
    target.write_text("{}")
    os.chmod(target, 0o600)
    atomic.write_json(target, [1])
    assert _mode(target) == 0o600 and target.read_text() == "[\n  1\n]\n"


def test_a_failed_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_open(target) as handle:
            handle.write("new, half")
            raise RuntimeError("killed")
    with pytest.raises(RuntimeError):
        with atomic.atomic_directory(tmp_path / "d") as folder:
            (folder / "x").write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old" and not (tmp_path / "d").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def test_a_folder_as_the_target_file_is_named(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(IsADirectoryError) as caught:
        atomic.write_text(tmp_path / "out", "x")
    assert caught.value.filename == str(tmp_path / "out")


def test_every_writer_of_jaket_respects_the_umask(tmp_path, umask_027):
    """KG files, corpus, reports, plots, memory files: readable by the group, as open() makes them."""
    import torch

    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg
    from jaket.model.memory import EntityContextMemory
    from jaket.tasks import report
    from jaket.train.metrics import plot_losses, truncate_metrics

    kg, corpus = toy_kg()
    save_kg(kg, tmp_path / "kg", corpus=corpus)
    report.write_json_atomic(tmp_path / "metrics.json", {"a": np.int64(1)})
    report.write_text_atomic(tmp_path / "report.md", "# r\n")
    report.plot_curves({"loss": [1.0, 0.5]}, tmp_path / "curves.png")
    memory = EntityContextMemory(3, 2, 4)
    memory.entities[:] = torch.ones(3, 4)
    memory.save(tmp_path / "memory")
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    os.chmod(tmp_path / "metrics.jsonl", 0o640)
    assert truncate_metrics(tmp_path / "metrics.jsonl", 1) == 1
    plot_losses([{"step": 1, "loss_mlm": 1.0}], tmp_path / "loss.png")
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 10
    for path in written:
        assert _mode(path) == 0o640, path
    assert EntityContextMemory.load(tmp_path / "memory").entities.sum() == 12


def test_only_the_atomic_module_renames_files_into_place():
    src = Path(__file__).resolve().parents[1] / "src" / "jaket"
    users = sorted(str(p.relative_to(src)) for p in src.rglob("*.py")
                   if "os.replace" in p.read_text(encoding="utf-8"))
    assert users == ["atomic.py"]


def test_json_files_are_strict_json_and_uncomputed_figures_are_named(tmp_path, caplog):
    """NaN / infinity (a figure that could not be computed) become null in every JSON file the
    writer makes, numpy values become plain numbers, and a warning names the file and the keys."""
    import json
    import logging

    from jaket.tasks import report

    data = {"summary": {"lm": {"mean": float("nan"), "std": 0.5, "values": [np.float32("nan"), 1.0]}},
            "ci": (float("inf"), -float("inf")), "count": np.int64(3), "rows": np.array([1.5, np.nan]),
            "ok": True, "name": "NaN"}
    with caplog.at_level(logging.WARNING, logger="jaket.atomic"):
        report.write_json_atomic(tmp_path / "metrics.json", data)
    text = (tmp_path / "metrics.json").read_text()
    # the standard parser refuses NaN / Infinity tokens when asked to: they are not there
    strict = json.loads(text, parse_constant=lambda token: pytest.fail(f"non-standard token {token}"))
    assert strict == {"summary": {"lm": {"mean": None, "std": 0.5, "values": [None, 1.0]}},
                      "ci": [None, None], "count": 3, "rows": [1.5, None], "ok": True, "name": "NaN"}
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert str(tmp_path / "metrics.json") in warning and "5 figure(s) could not be computed" in warning
    assert "summary.lm.mean" in warning and "ci[0]" in warning
    caplog.clear()
    atomic.write_json(tmp_path / "clean.json", {"a": 1.0})
    assert not caplog.records  # nothing replaced: no warning
    assert atomic.json_text({"x": float("nan")}, indent=None) == '{"x": null}'


def test_a_text_that_begins_with_u_feff_keeps_it_through_a_bom_dropping_read(tmp_path):
    """write_lines puts a byte order mark before a first line that starts with U+FEFF (every reader
    here drops one leading mark, as utf-8-sig does): the text's own character is read back."""
    from jaket.kg.readers import read_field_lines

    atomic.write_lines(tmp_path / "a.tsv", ["\ufeffx\tr\ty", "z\tr\ty"])
    assert (tmp_path / "a.tsv").read_text(encoding="utf-8-sig") == "\ufeffx\tr\ty\nz\tr\ty\n"
    problems = []
    assert [text for _, text in read_field_lines(tmp_path / "a.tsv", problems)] == ["\ufeffx\tr\ty", "z\tr\ty"]
    atomic.write_lines(tmp_path / "b.tsv", ["x\t\ufeff", "\ufeff"])  # not at the start: written as it is
    assert (tmp_path / "b.tsv").read_bytes() == "x\t\ufeff\n\ufeff\n".encode()
    atomic.write_lines(tmp_path / "c.tsv", [])
    assert (tmp_path / "c.tsv").read_bytes() == b""
