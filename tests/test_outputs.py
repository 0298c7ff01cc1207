"""Issue #40, items 2-4: one rule for every command that writes (an existing output is refused before
any work unless --overwrite; an output that cannot be written is found up front, named as the user
gave it), and one behaviour for an empty input file (refused, before any work)."""

from __future__ import annotations

import errno
import os
import tempfile

import pytest

from jaket.cli import main


@pytest.fixture(scope="module")
def kg_dir(tmp_path_factory):
    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    kg, corpus = toy_kg()
    return save_kg(kg, tmp_path_factory.mktemp("outputs") / "kg", corpus=corpus)


def _run(capsys, argv: list[str]) -> tuple[int, list[str]]:
    status = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, [line for line in err.splitlines() if not line.startswith(("INFO", "WARNING"))]


def _inputs(folder):
    """A non-empty input file of each kind (their content is never read: the checks come first)."""
    files = {"queries": "wolf\thypernym\t?\n", "questions": "what is [wolf]\n", "support": '{"P1": []}\n',
             "sentences": '{"tokens": ["a"], "h": [0], "t": [0]}\n', "pairs": '{"text1": "a"}\n',
             "entities": "wolf\n", "texts": "a wolf in the forest\n"}
    for name, text in files.items():
        (folder / name).write_text(text)
    return {name: str(folder / name) for name in files}


#: every command that writes one file (and the files beside it): name -> its arguments but --out
WRITERS = {
    "predict entity-classification": lambda f, kg, i: ["predict", "entity-classification", "--finetuned", f, "--kg", kg,
                                                       "--entities", i["entities"]],
    "predict link-prediction": lambda f, kg, i: ["predict", "link-prediction", "--finetuned", f, "--kg", kg,
                                                 "--queries", i["queries"]],
    "predict kgqa": lambda f, kg, i: ["predict", "kgqa", "--finetuned", f, "--questions", i["questions"]],
    "predict relation-classification": lambda f, kg, i: ["predict", "relation-classification", "--finetuned", f,
                                                         "--support", i["support"], "--queries", i["sentences"]],
    "predict word-in-context": lambda f, kg, i: ["predict", "word-in-context", "--finetuned", f, "--pairs", i["pairs"]],
    "embed": lambda f, kg, i: ["embed", "--model", f, "--kg", kg],
    "embed --texts": lambda f, kg, i: ["embed", "--model", f, "--kg", kg, "--texts", i["texts"]],
    "link": lambda f, kg, i: ["link", "--kg", kg, "--texts", i["texts"]],
}


@pytest.mark.parametrize("command", WRITERS)
def test_an_existing_output_is_refused_before_any_work_unless_overwrite(command, kg_dir, tmp_path, capsys):
    """The model folder does not exist: a refusal naming --out shows the check came first."""
    argv = WRITERS[command](str(tmp_path / "no-model"), str(kg_dir), _inputs(tmp_path))
    out = tmp_path / "out.jsonl"
    out.write_text("an earlier output\n")
    status, err = _run(capsys, argv + ["--out", str(out)])
    assert status == 2 and err == [f"error: --out {out}: exists; pass --overwrite to replace it, or name another file"]
    assert out.read_text() == "an earlier output\n"
    status, err = _run(capsys, argv + ["--out", str(out), "--overwrite"])
    if command == "link":  # no model to load: the corpus replaces the earlier file
        assert status == 0 and '"entity": "wolf"' in out.read_text()
    else:  # past the check, on to the (missing) model
        assert status == 1 and err[0].startswith(f"error: {tmp_path / 'no-model'}: ")
        assert out.read_text() == "an earlier output\n"


@pytest.mark.parametrize("command", WRITERS)
def test_a_file_of_an_input_folder_is_never_overwritten(command, kg_dir, tmp_path, capsys):
    """The audit's data loss: `jaket link --out KG/entities.jsonl --overwrite` replaced the KG's
    entities with corpus lines. A file already in an input folder (--kg, --model) is an input; a
    new file there is not, and `jaket link` may replace the KG's corpus.jsonl (what it is for)."""
    import shutil

    kg = shutil.copytree(kg_dir, tmp_path / "kg")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    argv = WRITERS[command](str(model), str(kg), _inputs(tmp_path))
    victims = [model / "config.json"] if "--model" in argv else []
    victims += [kg / "entities.jsonl"] if str(kg) in argv else []
    for victim in victims:
        before = victim.read_bytes()
        status, err = _run(capsys, argv + ["--out", str(victim), "--overwrite"])
        folder = model if victim.parent == model else kg
        assert status == 2 and err == [f"error: --out {victim}: is a file of the input folder {folder}; writing it "
                                       "would destroy the input (name another output file)"], command
        assert victim.read_bytes() == before
    if command == "link":
        status, _ = _run(capsys, argv + ["--out", str(kg / "corpus.jsonl"), "--overwrite"])
        assert status == 0 and '"entity": "wolf"' in (kg / "corpus.jsonl").read_text()


@pytest.mark.parametrize("companion", ["ids.json", "faiss"])
def test_a_file_written_beside_the_output_is_an_output_too(companion, kg_dir, tmp_path, capsys):
    argv = WRITERS["embed"](str(tmp_path / "no-model"), str(kg_dir), _inputs(tmp_path))
    out = tmp_path / "e.npy"
    (tmp_path / f"e.npy.{companion}").write_text("earlier")
    extra = ["--faiss-index"] if companion == "faiss" else []
    if extra:
        pytest.importorskip("faiss")
    status, err = _run(capsys, argv + ["--out", str(out)] + extra)
    assert status == 2 and err == [f"error: --out {out}: {tmp_path / f'e.npy.{companion}'} exists; pass --overwrite "
                                   "to replace it, or name another file"]


def test_a_command_that_writes_a_folder_refuses_a_used_one_before_any_work(tmp_path, capsys):
    """``prepare wordnet-reference`` (it reads the whole of WordNet first) follows the rule of
    ``kg build`` / ``kg import``."""
    out = tmp_path / "data"
    out.mkdir()
    (out / "report.json").write_text("{}")
    status, err = _run(capsys, ["prepare", "wordnet-reference", "--out", str(out)])
    assert status == 2 and err == [f"error: --out {out}: the folder is not empty (an earlier KG?); pass --overwrite "
                                   "to replace it as a whole, or name a new folder"]
    assert (out / "report.json").read_text() == "{}"


@pytest.mark.parametrize("command", WRITERS)
def test_an_output_under_a_file_is_refused_up_front_naming_the_given_path(command, kg_dir, tmp_path, capsys):
    argv = WRITERS[command](str(tmp_path / "no-model"), str(kg_dir), _inputs(tmp_path))
    (tmp_path / "plain").write_text("a file, not a folder")
    out = tmp_path / "plain" / "sub" / "out.jsonl"
    status, err = _run(capsys, argv + ["--out", str(out)])
    assert status == 2 and err == [f"error: --out {out}: {tmp_path / 'plain'} is not a folder"]


def test_an_unwritable_folder_is_named_before_any_work(kg_dir, tmp_path, capsys, monkeypatch):
    """(os.access is stubbed: the tests may run as root, who may write anywhere.)"""
    folder = tmp_path / "read-only"
    folder.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: os.fspath(path) != str(folder) and real(path, mode))
    for command in ("predict link-prediction", "embed --texts", "link"):
        argv = WRITERS[command](str(tmp_path / "no-model"), str(kg_dir), _inputs(tmp_path))
        out = folder / "new" / "out.jsonl"
        status, err = _run(capsys, argv + ["--out", str(out)])
        assert status == 2 and err == [f"error: --out {out}: {folder} is not writable"], command


def test_a_write_that_fails_names_the_file_asked_for_not_the_temporary_one(tmp_path, monkeypatch):
    from jaket.atomic import atomic_directory, write_text

    def refused(dir=None, prefix="", suffix=""):
        raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, f"{prefix}abc{suffix}"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    with pytest.raises(PermissionError) as caught:
        write_text(tmp_path / "e.npy", "x")
    assert caught.value.filename == str(tmp_path / "e.npy") and caught.value.strerror == "Permission denied"
    with pytest.raises(PermissionError) as caught:
        with atomic_directory(tmp_path / "kg"):
            pass
    assert caught.value.filename == str(tmp_path / "kg")


#: every command's input file: (command, the flag naming it, the word of the message)
INPUTS = [("predict entity-classification", "--entities", "predict"), ("predict link-prediction", "--queries", "predict"),
          ("predict kgqa", "--questions", "predict"), ("predict relation-classification", "--support", "predict"),
          ("predict relation-classification", "--queries", "predict"), ("predict word-in-context", "--pairs", "predict"),
          ("embed --texts", "--texts", "embed"), ("link", "--texts", "link")]


@pytest.mark.parametrize("content", [b"", b" \n\n\t\r\n", b"\xef\xbb\xbf\n"], ids=["empty", "blank", "bom"])
@pytest.mark.parametrize("command, flag, work", INPUTS)
def test_an_empty_input_file_is_refused_by_every_command_before_any_work(command, flag, work, content, kg_dir,
                                                                         tmp_path, capsys):
    """One behaviour (``predict kgqa`` refused an empty file after loading its model, the others
    wrote an empty output with exit status 0)."""
    inputs = _inputs(tmp_path)
    argv = WRITERS[command](str(tmp_path / "no-model"), str(kg_dir), inputs)
    empty = argv[argv.index(flag) + 1]
    with open(empty, "wb") as handle:
        handle.write(content)
    out = tmp_path / "out.jsonl"
    status, err = _run(capsys, argv + ["--out", str(out)])
    assert status == 1 and err == [f"error: {flag} {empty}: the file is empty (or only white space): nothing to {work}"]
    assert not out.exists()
