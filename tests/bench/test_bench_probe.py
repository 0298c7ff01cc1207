"""The bad-input probe on the ``jaket bench`` family (issue 69, items 6 and 10): every number a
benchmark takes refused below its least value (a usage line, exit 2), and the probe's file
categories (missing, empty, binary, UTF-16, a folder, a file where a folder is written) one line
naming the file as the user gave it, before any model or WordNet is loaded; never a traceback."""

from __future__ import annotations

import time

import pytest

from tests.test_cli_exit_codes import _run
from tests.test_cli_help import command_tree

_BENCHES = [(path, parser) for path, parser in command_tree() if len(path) == 2 and path[0] == "bench"]


@pytest.mark.parametrize("path", [p for p, _ in _BENCHES], ids=[p[1] for p, _ in _BENCHES])
def test_every_number_of_a_benchmark_is_checked(path):
    parser = dict(_BENCHES)[path]
    numbers = [a for a in parser._actions if a.option_strings and a.type is not None
               and getattr(a.type, "__name__", "") in ("positive_int", "non_negative_int", "int_list")]
    bare = [a.option_strings[0] for a in parser._actions if a.type in (int, float)]
    assert not bare, f"jaket {' '.join(path)}: unchecked number flag(s) {bare}"
    for action in numbers:
        least = 0 if action.type.__name__ == "non_negative_int" else getattr(action.type, "keywords", {}).get("least", 1)
        for value in (str(least - 1), "x"):
            status, lines = _run([*path, action.option_strings[0], value])
            err = "\n".join(lines)
            assert status == 2 and "Traceback" not in err and f"argument {action.option_strings[0]}" in err, \
                (action.option_strings, value, err)


def test_the_probe_categories_on_benchmark_files(tmp_path):
    empty, binary, utf16, folder = (tmp_path / n for n in ("empty.txt", "binary.txt", "utf16.txt", "folder"))
    empty.write_text("")
    binary.write_bytes(bytes(range(256)) * 8)
    utf16.write_bytes("\ufeffhello\n".encode("utf-16-le"))
    folder.mkdir()
    missing = tmp_path / "missing"
    cases = [(["link", "--quick", "--texts", str(f)], str(f)) for f in (missing, empty, binary, utf16, folder)]
    cases += [(["link", "--quick", "--kg", str(f)], str(f)) for f in (missing, empty)]
    cases += [(["link", "--quick", "--model", str(folder)], str(folder)),
              (["sampler", "--kg", str(binary)], str(binary)),
              (["sense-texts", "--quick", "--wsd", str(binary)], str(binary)),
              (["sampler", "--load-entities", "10", "--load-dir", str(empty)], str(empty))]
    began = time.perf_counter()
    for argv, named in cases:
        status, lines = _run(["bench", *argv])
        err = "\n".join(lines)
        assert status in (1, 2) and "Traceback" not in err, (argv, err)
        assert named in err and "jaket-bench" not in err, (argv, err)
    assert time.perf_counter() - began < 30  # each refused before WordNet or a model is built
