"""`jaket kg` picks up the build/import commands of jaket.kg.sources.cli when that module exists."""

from __future__ import annotations

import sys
import types

from jaket.cli import build_parser


def test_sources_commands_are_registered(monkeypatch):
    fake = types.ModuleType("jaket.kg.sources.cli")

    def register(commands):
        build = commands.add_parser("build")
        build.add_argument("source")
        build.set_defaults(func=lambda args: 0)

    fake.register = register
    monkeypatch.setitem(sys.modules, "jaket.kg.sources.cli", fake)
    args = build_parser().parse_args(["kg", "build", "wordnet"])
    assert args.kg_command == "build" and args.source == "wordnet"
    assert build_parser().parse_args(["kg", "stats", "DIR", "--json"]).json is True


def test_validate_json_lists_every_problem(tmp_path, capsys):
    """`jaket kg validate --json`: stdout is JSON alone, each problem {path, line, severity, message}."""
    import json

    from jaket.cli import main
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, _ = toy_kg()
    save_kg(kg, tmp_path / "kg")
    assert main(["kg", "validate", str(tmp_path / "kg"), "--json"]) == 0
    clean = json.loads(capsys.readouterr().out)
    windows = clean.pop("description_windows")  # the description-window check (issue 65), no pair found
    assert windows["window"] == 16 and windows["indistinguishable_entities"] == 0
    assert clean == {"path": str(tmp_path / "kg"), "valid": True, "errors": 0, "warnings": 0, "problems": []}
    triples = tmp_path / "kg" / "triples.tsv"
    lines = triples.read_text(encoding="utf-8").count("\n")
    with triples.open("a", encoding="utf-8") as handle:
        handle.write("dog\tnot_a_relation\tcat\n")
    assert main(["kg", "validate", str(tmp_path / "kg"), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # the problems and the verdict for people are on stderr
    assert report["valid"] is False and report["errors"] == len(report["problems"]) >= 1
    problem = report["problems"][0]
    assert set(problem) == {"path", "line", "severity", "message"}
    assert problem["path"] == str(triples) and problem["line"] == lines + 1 and problem["severity"] == "error"
    assert "not_a_relation" in problem["message"] and "invalid" in captured.err


def test_an_import_never_mixes_with_an_earlier_kg(tmp_path, capsys):
    """Issue #27: a second import into a non-empty --out is refused before any work unless
    --overwrite, which replaces the folder as a whole (no file of the earlier KG survives); an
    empty source is an error, not a 0-entity KG."""
    from jaket.cli import main
    from jaket.kg.io import load_kg

    out = tmp_path / "kg"
    assert main(["kg", "build", "synthetic", "--entities", "30", "--triples", "60", "--out", str(out)]) == 0
    (out / "valid.txt").write_text("left from an earlier import\n")
    before = (out / "entities.jsonl").read_text()
    assert main(["kg", "build", "synthetic", "--entities", "20", "--triples", "40", "--out", str(out)]) == 2
    assert "the folder is not empty (an earlier KG?); pass --overwrite" in capsys.readouterr().err
    assert (out / "entities.jsonl").read_text() == before
    assert main(["kg", "build", "synthetic", "--entities", "20", "--triples", "40", "--out", str(out),
                 "--overwrite"]) == 0
    assert load_kg(out).num_entities == 20 and not (out / "valid.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left
    empty = tmp_path / "empty.ttl"
    empty.write_text("@prefix ex: <http://example.org/> .\n")
    assert main(["kg", "import", "rdf", str(empty), "--out", str(tmp_path / "e")]) == 1
    assert "no entity found, nothing to import" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()
