"""The one error boundary of `jaket` (jaket.cli.main), command by command: a user error is a few
lines naming the file (and line) or flag and what to do, exit status 1 (2 for a wrong invocation),
never a traceback unless --debug asks for one."""

import json
import os
from pathlib import Path

import pytest

from jaket.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture(scope="module")
def kgs(tmp_path_factory):
    """A valid toy KG folder and broken variants of it."""
    import shutil

    from jaket.kg.io import save_kg
    from jaket.kg.toy import toy_kg

    root = tmp_path_factory.mktemp("kgs")
    kg, corpus = toy_kg()
    save_kg(kg, root / "good", corpus=corpus)
    for name in ("bad", "no-corpus", "no-triples", "no-entities", "no-mention", "bare"):
        shutil.copytree(root / "good", root / name)
    with open(root / "bad" / "entities.jsonl", "a", encoding="utf-8") as handle:
        handle.write("{bad json\n")
    os.remove(root / "no-corpus" / "corpus.jsonl")
    (root / "no-triples" / "triples.tsv").write_text("")
    (root / "bare" / "triples.tsv").write_text("")  # no triple and no corpus: nothing to learn
    os.remove(root / "bare" / "corpus.jsonl")
    for name in ("entities.jsonl", "relations.jsonl", "triples.tsv", "corpus.jsonl"):
        (root / "no-entities" / name).write_text("")
    rows = [json.loads(line) for line in (root / "good" / "corpus.jsonl").read_text().splitlines()]
    (root / "no-mention" / "corpus.jsonl").write_text(
        "".join(json.dumps({"text": r["text"], "mentions": []}) + "\n" for r in rows))
    return root


def _run(capsys, *argv):
    status = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, [line for line in err.splitlines() if not line.startswith(("INFO", "WARNING"))]


def test_kg_stats_and_validate(kgs, capsys):
    status, err = _run(capsys, "kg", "stats", str(kgs / "bad"))
    assert status == 1 and err == [f"{kgs / 'bad' / 'entities.jsonl'}:41: invalid JSON: Expecting "
                                   f"property name enclosed in double quotes (column 2)"]
    status, err = _run(capsys, "kg", "validate", str(kgs / "missing"))
    assert status == 1 and err == [f"{kgs / 'missing'}: invalid (1 error(s), 0 warning(s))"]


def test_kg_build_and_import(kgs, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:  # argparse: a wrong flag value, exit status 2
        main(["kg", "build", "synthetic", "--out", str(tmp_path / "s"), "--entities", "0"])
    assert caught.value.code == 2 and "--entities" in capsys.readouterr().err
    status, err = _run(capsys, "kg", "import", "wn18rr", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"))
    assert status == 1 and err == [f"{tmp_path / 'nowhere'}: not a directory"]


def test_link(kgs, tmp_path, capsys):
    binary = tmp_path / "texts.txt"
    binary.write_bytes(b"a dog\n\0\0\0\0\n")
    status, err = _run(capsys, "link", "--kg", str(kgs / "good"), "--texts", str(binary),
                       "--out", str(tmp_path / "c.jsonl"))
    assert status == 1 and err == [f"{binary}:2: contains NUL bytes (a binary file, not text?)"]
    (tmp_path / "folder").mkdir()
    binary.write_text("a dog\n")
    status, err = _run(capsys, "link", "--kg", str(kgs / "good"), "--texts", str(binary),
                       "--out", str(tmp_path / "folder"))
    assert status == 2 and err[0].startswith(f"error: --out {tmp_path / 'folder'}: is a folder")
    status, err = _run(capsys, "link", "--kg", str(kgs / "bad"), "--texts", str(binary),
                       "--out", str(tmp_path / "c.jsonl"))
    assert status == 1 and err[0].startswith(f"{kgs / 'bad' / 'entities.jsonl'}:41:")


def test_many_problems_are_cut_short_with_a_pointer_to_validate(kgs, tmp_path, capsys):
    import shutil

    shutil.copytree(kgs / "good", tmp_path / "kg")
    with open(tmp_path / "kg" / "triples.tsv", "a", encoding="utf-8") as handle:
        handle.write("".join(f"nobody{i}\teats\tdog\n" for i in range(12)))
    status, err = _run(capsys, "kg", "stats", str(tmp_path / "kg"))
    assert status == 1 and len(err) == 6
    assert err[-1] == f"... and 7 more problems (`jaket kg validate {tmp_path / 'kg'}` lists them all)"


def test_embed_with_a_broken_model_folder(kgs, tiny_bert_dir, tmp_path, capsys):
    status, err = _run(capsys, "embed", "--model", str(tiny_bert_dir), "--kg", str(kgs / "good"),
                       "--out", str(tmp_path / "e.npy"))
    assert status == 1 and err[0].startswith(f"error: {tiny_bert_dir / 'config.json'}: model_type is 'bert'")
    status, err = _run(capsys, "embed", "--model", str(tmp_path), "--kg", str(kgs / "good"),
                       "--out", str(tmp_path / "e.npy"))
    assert status == 1 and err == [f"error: {tmp_path}: not a jaket model folder (no config.json)"]


def test_pretrain_data_errors_name_the_file_and_the_remedy(kgs, tiny_bert_dir, tmp_path, capsys):
    def pretrain(kg):
        return _run(capsys, "pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"),
                    "--encoder", str(tiny_bert_dir), "--kg", str(kgs / kg), "--out", str(tmp_path / kg),
                    "--no-progress")

    status, err = pretrain("bad")
    assert status == 1 and err[0].startswith(f"{kgs / 'bad' / 'entities.jsonl'}:41: invalid JSON")
    status, err = _run(capsys, "pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"),
                       "--kg", str(kgs / "no-corpus"), "--corpus", str(tmp_path / "nowhere.jsonl"),
                       "--out", str(tmp_path / "nowhere"), "--no-progress")
    assert status == 1 and err[-1] == (  # a missing input: a data error
        f"error: corpus {tmp_path / 'nowhere.jsonl'}: no such file (a mention "
        f"corpus: `jaket link --kg DIR --texts FILE --out {tmp_path / 'nowhere.jsonl'}`)")
    status, err = pretrain("no-triples")
    assert status == 1 and err[0].startswith(f"error: {kgs / 'no-triples' / 'triples.tsv'}: the KG has no triple")
    status, err = pretrain("bare")
    assert status == 1 and err[0].startswith(f"error: {kgs / 'bare' / 'triples.tsv'}: the KG has no triple")
    status, err = pretrain("no-entities")
    assert status == 1 and err[0].startswith(f"error: {kgs / 'no-entities' / 'entities.jsonl'}: the KG has "
                                             f"no entity")
    status, err = pretrain("no-mention")
    assert status == 1 and err[0].startswith(f"error: {kgs / 'no-mention' / 'corpus.jsonl'}: no text "
                                             f"mentions an entity")
    assert "tasks.weight_entity=0" in err[0]
    assert not any((tmp_path / kg / "metrics.jsonl").exists() for kg in ("bad", "no-mention", "bare"))


def test_pretrain_config_errors_are_usage_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: true\nmodel:\n  km_heads: 0\n  fanouts: [3, -1]\n  composition: concat\n"
                   "optim:\n  betas: [0.9, 1.0]\n  eps: -1.0e-8\nseed: -3\n")
    status, err = _run(capsys, "pretrain", "--config", str(bad), "--print-config")
    assert status == 2
    assert err == [f"error: {bad}:1: steps: Input should be a valid integer (got True)",
                   f"error: {bad}:3: model.km_heads: Input should be greater than or equal to 1 (got 0)",
                   f"error: {bad}:4: model.fanouts.1: Input should be greater than or equal to 1 (got -1)",
                   f"error: {bad}:5: model.composition: Input should be 'add', 'sub', 'mult' or 'mlp' "
                   f"(got 'concat')",
                   f"error: {bad}:7: optim.betas.1: Input should be less than 1 (got 1.0)",
                   f"error: {bad}:8: optim.eps: Input should be greater than 0 (got -1e-08)",
                   "error: ... and 1 more"]
    bad.write_bytes(b"steps: 5\n# caf\xe9\n")
    status, err = _run(capsys, "pretrain", "--config", str(bad), "--print-config")
    assert status == 2 and err == [f"error: {bad}:2: not UTF-8 text (byte 14 of the file)"]
    status, err = _run(capsys, "pretrain", "--set", f"memory.path={tmp_path}", "--print-config")
    assert status == 2 and err[0].startswith(f"error: --set memory.path={tmp_path}: "
                                             f"memory.path: {tmp_path} is a folder")
    status, err = _run(capsys, "pretrain", "--kg", str(tmp_path / "none"), "--out", str(tmp_path / "o"))
    assert status == 1 and err == [f"error: kg {tmp_path / 'none'}: no such directory"]  # data: exit 1


def test_pretrain_heads_must_divide_the_encoder_width(tiny_bert_dir, tmp_path, capsys):
    status, err = _run(capsys, "pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"),
                       "--encoder", str(tiny_bert_dir), "--set", "model.km_heads=3",
                       "--out", str(tmp_path / "o"), "--no-progress")
    assert status == 1 and err == [
        f"error: model.encoder={tiny_bert_dir}: model.km_heads=3 does not divide the encoder's width 32 "
        f"(choose one of [1, 2, 4, 8, 16, 32])"]


@pytest.mark.parametrize("command", ["finetune", "evaluate"])
def test_finetune_and_evaluate(kgs, command, tmp_path, capsys):
    status, err = _run(capsys, command, "entity-classification", "--kg", str(kgs / "bad"),
                       "--out", str(tmp_path / "o"))
    assert status == 1 and err[0].startswith(f"{kgs / 'bad' / 'entities.jsonl'}:41:")


def test_bench_and_demo(tmp_path, capsys):
    status, err = _run(capsys, "bench", "memory", "--quick", "--encoder", str(tmp_path / "none"))
    assert status == 1 and err == [f"error: {tmp_path / 'none'}: not a Hugging Face model folder (no config.json)"]
    (tmp_path / "file").write_text("")
    status, err = _run(capsys, "demo", "--quick", "--out", str(tmp_path / "file"))
    assert status == 1 and err == [f"error: {tmp_path / 'file'}: File exists"]


def test_debug_shows_the_traceback(kgs, capsys):
    assert main(["--debug", "kg", "stats", str(kgs / "bad")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "KGFormatError" in err
    assert main(["kg", "stats", str(kgs / "bad"), "--debug"]) == 1  # after the subcommand too
    assert "Traceback" in capsys.readouterr().err


def test_a_bug_keeps_its_traceback(monkeypatch):
    import jaket.kg.cli as kg_cli

    def broken(directory):
        raise KeyError("a bug, not a user error")

    monkeypatch.setattr(kg_cli, "kg_statistics", broken)
    with pytest.raises(KeyError):
        main(["kg", "stats", "anything"])


def test_no_command_overwrites_an_earlier_run_or_its_own_input(kgs, tiny_bert_dir, tmp_path, capsys):
    """Issue #27: finetune/evaluate refuse a folder holding an earlier run's results before any work
    (--overwrite replaces them); link, embed and predict refuse an --out that is one of their inputs."""
    out = tmp_path / "ec"
    out.mkdir()
    (out / "metrics.json").write_text('{"earlier": true}')
    status, err = _run(capsys, "evaluate", "entity-classification", "--kg", str(kgs / "good"), "--out", str(out),
                       "--encoder", str(tiny_bert_dir), "--variants", "lm")
    assert status == 2 and "holds an earlier run's results (metrics.json); pass --overwrite" in err[0]
    assert json.loads((out / "metrics.json").read_text()) == {"earlier": True}
    texts = tmp_path / "texts.txt"
    texts.write_text("a wolf in the forest\n")
    status, err = _run(capsys, "link", "--kg", str(kgs / "good"), "--texts", str(texts), "--out", str(texts))
    assert status == 2 and f"--out {texts}: is the input {texts}" in err[0]
    assert texts.read_text() == "a wolf in the forest\n"
    status, err = _run(capsys, "embed", "--model", str(tiny_bert_dir), "--kg", str(kgs / "good"),
                       "--texts", str(texts), "--out", str(texts))
    assert status == 2 and "writing it would destroy the input" in err[0]
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"head": "wolf", "relation": "r"}\n')
    status, err = _run(capsys, "predict", "link-prediction", "--finetuned", str(tmp_path), "--kg", str(kgs / "good"),
                       "--queries", str(queries), "--out", str(queries))
    assert status == 2 and "is the input" in err[0] and queries.read_text().startswith('{"head"')


def test_pretrain_refuses_a_model_folder_of_something_else_before_training(kgs, tiny_bert_dir, tmp_path, capsys):
    """``OUT/model`` is replaced as a whole when the run ends: a folder there that is no jaket model
    (no ``jaket.safetensors``) was emptied after training; it is refused before the KG is read (the
    broken KG given here is not reached)."""
    (tmp_path / "o" / "model").mkdir(parents=True)
    (tmp_path / "o" / "model" / "notes.txt").write_text("mine")
    status, err = _run(capsys, "pretrain", "--config", str(CONFIGS / "pretrain-tiny.yaml"), "--encoder",
                       str(tiny_bert_dir), "--kg", str(kgs / "bad"), "--out", str(tmp_path / "o"), "--no-progress")
    assert status == 1 and err == [f"error: {tmp_path / 'o' / 'model'}: is not a jaket model folder (no "
                                   "jaket.safetensors; it holds notes.txt); saving replaces the folder as a whole "
                                   "and would delete them: name a new or empty folder (--debug shows where)"]
    assert (tmp_path / "o" / "model" / "notes.txt").read_text() == "mine"
