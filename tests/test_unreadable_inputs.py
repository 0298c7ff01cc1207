"""An input the user may not read (``chmod 000``) is one line naming it, exit status 1, nothing
written: the last category of the bad-input probe (issue 53, item 7), for the commands that read a
user's file first (``kg validate``, ``kg import``, ``link``, word-sense disambiguation, ``embed``).

Root reads any file whatever its mode (the capabilities ``CAP_DAC_OVERRIDE`` and
``CAP_DAC_READ_SEARCH``), so as root each command runs without those two (util-linux's
``setpriv``); as another user it runs as that user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "films"


def _without_root_reads() -> list[str]:
    """The prefix that takes away root's reading of any file (empty for another user)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without util-linux's setpriv: a chmod 000 file stays readable")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


def _jaket(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "JAKET_CACHE": "off"}
    return subprocess.run([*_without_root_reads(), sys.executable, "-m", "jaket", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


def test_an_unreadable_input_is_one_line_naming_it(tmp_path):
    folder = tmp_path

    def locked(name: str, text: str) -> Path:
        path = folder / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o000)
        return path

    shutil.copy(EXAMPLES / "film.ttl", folder / "film.ttl")
    ttl = locked("locked.ttl", (EXAMPLES / "film.ttl").read_text(encoding="utf-8"))
    texts = locked("locked.txt", "Alien is a film.\n")
    xml = locked("locked.data.xml", "<corpus lang='en' source='x'></corpus>\n")
    gold = folder / "gold.key.txt"
    gold.write_text("d000.s000.t000 bank%1:14:00::\n", encoding="utf-8")
    kg = folder / "kg"
    made = _jaket(folder, "kg", "import", "rdf", str(folder / "film.ttl"), "--out", str(kg))
    assert made.returncode == 0, made.stderr
    commands = [
        (["kg", "import", "rdf", str(ttl), "--out", str(folder / "kg2")], ttl, folder / "kg2"),
        (["link", "--kg", str(kg), "--texts", str(texts), "--out", str(folder / "linked.jsonl")], texts,
         folder / "linked.jsonl"),
        (["evaluate", "word-sense-disambiguation", "--data", str(xml), "--gold", str(gold), "--variants",
          "lm", "--out", str(folder / "wsd")], xml, folder / "wsd"),
        (["embed", "--model", str(folder), "--kg", str(kg), "--texts", str(texts), "--out",
          str(folder / "vectors.npy")], texts, folder / "vectors.npy"),
    ]
    for command, path, out in commands:
        done = _jaket(folder, *command)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1, (command, done.stderr)
        named = [line for line in lines if str(path) in line]
        assert len(named) == 1 and named == lines[-1:], (command, done.stderr)  # one line, the last
        assert named[0].endswith("Permission denied") and "malformed" not in named[0], (command, done.stderr)
        assert "Traceback" not in done.stderr, command
        assert not out.exists(), command
