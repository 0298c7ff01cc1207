"""Machine-readable everywhere: a command given ``--json`` prints one strict JSON document on stdout
and nothing else (tables, ``report:`` lines and hints go to stderr), and the files it writes are
strict JSON too; checked with Python's parser and, where installed, with Node's ``JSON.parse``."""

import json
import re
import shutil
import subprocess

import pytest

from jaket.cli import main
from jaket.kg.io import save_kg

#: the tokens Python's json writes for NaN / infinities, which strict parsers refuse
_NON_STANDARD = re.compile(r"\b(NaN|-?Infinity)\b")


def _strict(text: str, what: str):
    """``text`` parsed as one strict JSON document (Python, then Node when installed)."""
    assert text.strip(), f"{what}: nothing on stdout"
    assert not _NON_STANDARD.search(text), f"{what}: a NaN / Infinity token"
    value = json.loads(text, parse_constant=lambda token: pytest.fail(f"{what}: non-standard {token}"))
    node = shutil.which("node")
    if node is not None:
        checked = subprocess.run([node, "-e", "JSON.parse(require('fs').readFileSync(0, 'utf-8'))"],
                                 input=text, text=True, capture_output=True, timeout=60)
        assert checked.returncode == 0, f"{what}: node refused it: {checked.stderr}"
    return value


def test_json_commands_print_strict_json_alone(small_kg, metaqa_dir, tiny_bert_dir, tmp_path, capsys):
    kg_dir = save_kg(small_kg, tmp_path / "kg")

    def run(*argv, status=0):
        assert main([*argv, "--json"]) == status, argv
        captured = capsys.readouterr()
        return _strict(captured.out, " ".join(argv[:2])), captured.err

    stats, _ = run("kg", "stats", str(kg_dir))
    assert stats["entities"] == 36
    texts = tmp_path / "texts.txt"
    texts.write_text(f"A text about {small_kg.entity_names[0]} and nothing else.\n", encoding="utf-8")
    linked, err = run("link", "--kg", str(kg_dir), "--texts", str(texts), "--out", str(tmp_path / "corpus.jsonl"))
    assert linked["output"] == str(tmp_path / "corpus.jsonl") and "mentions in" in err  # the human line: stderr
    report, err = run("kg", "validate", str(kg_dir))
    assert report["valid"] is True and report["problems"] == [] and "valid" in err

    figures, _ = run("bench", "memory", "--encoder", str(tiny_bert_dir), "--source", "synthetic",
                     "--entities", "100", "--batch-size", "32", "--max-length", "16", "--repeats", "1")
    assert figures["entities"] == 100

    out = tmp_path / "ec"
    summary, err = run("finetune", "entity-classification", "--kg", str(kg_dir), "--encoder", str(tiny_bert_dir),
                       "--epochs", "1", "--km-heads", "4", "--train-fractions", "1.0", "--out", str(out))
    assert list(summary) == ["lm+g+m"]
    assert "LM+G+M" in err and f"report: {out / 'report.md'}" in err and "fine-tuned model:" in err
    _strict((out / "metrics.json").read_text(), "entity-classification metrics.json")
    _strict((out / "model" / "task.json").read_text(), "entity-classification task.json")

    # KGQA on MetaQA files, one gold answer not in kb.txt: reported in metrics.json, not dropped
    questions = metaqa_dir / "1-hop" / "qa_train.txt"
    questions.write_text(questions.read_text().replace("who directed [Kismet]\tWilliam Dieterle",
                                                       "who directed [Kismet]\tWilliam Dieterle|Nobody Known"))
    out = tmp_path / "qa"
    summary, err = run("finetune", "kgqa", "--data", str(metaqa_dir), "--train", "train", "--encoder",
                       str(tiny_bert_dir), "--variant", "lm", "--steps", "2", "--kg-settings", "full",
                       "--out", str(out))
    assert list(summary) == ["lm"] and "fine-tuned model:" in err  # the hint after the JSON: stderr
    metrics = _strict((out / "metrics.json").read_text(), "kgqa metrics.json")
    assert metrics["data"]["missing_answers"]["train"] == {  # line 3's topic is not in kb.txt either
        "answers": 2, "questions": 2, "examples": [f"{questions}:1: 'Nobody Known'", f"{questions}:3: '1999'"]}
    assert "Gold answers not in the KG" in (out / "report.md").read_text()
